/*
 * The exactly-once outbox. A mail is rendered, with its final
 * Message-ID, and committed to the outbox in the transaction of the event
 * that caused it (a finding stored, a finding fixed); it is sent after
 * the commit. A crash before the commit loses the event and its mail
 * together (the job runs again); a crash after it finds the mail queued.
 * The Maildir sink names each file after the outbox row, so a delivery
 * repeated after a crash between the sink and the store makes no second
 * copy.
 *
 * Sending: to the Maildir ([mail] outbox = maildir:PATH, the default
 * STATE/outbox), or over SMTP (smtp://, smtps://; see mail/smtp.h), each
 * recipient's outcome kept. A try is recorded before it starts; a crash
 * during it leaves the mail "sending", and it is sent again with the same
 * Message-ID: a crash between the server's acceptance and the store's
 * commit may deliver it twice, never with two Message-IDs. A 4xx or a
 * dropped connection is tried again after [mail] retry seconds, doubled
 * each time; a 5xx refuses one recipient, not the others.
 *
 * Who hears what, and how often, is the policy's (policy.h): the outbox
 * asks it whether a finding is reported, who is left out of a thread,
 * whether a recipient is held back by a limit, and which digests to make
 * and what they say; it queues and sends what the policy lets through.
 */
#ifndef ZERODAY_OUTBOX_H
#define ZERODAY_OUTBOX_H

#include <stdbool.h>
#include <glib.h>

#include "bot/mailroom/report.h"

/*
 * A new Message-ID made by zeroday, "zeroday-TAG-RANDOM@DOMAIN" with the
 * domain of [mail] address (caller frees).
 */
char *outbox_message_id(const struct config *config, const char *tag);

/*
 * Queues the report of finding @finding_id. Runs in the caller's
 * transaction. A report that cannot be rendered (a template, the culprit
 * gone) is queued in OUTBOX_ERROR with why, never sent, and says so in
 * the log; only a store failure fails.
 */
bool outbox_queue_report(const struct bot *c, gint64 finding_id, gint64 now,
			 GError **error);

/*
 * Queues the "fixed" follow-up of finding @finding_id in its report's
 * thread, likewise; nothing when it had no report.
 */
bool outbox_queue_fixed(const struct bot *c, gint64 finding_id, gint64 now,
			GError **error);

/* Queues the "dropped" follow-up of finding @finding_id likewise. */
bool outbox_queue_dropped(const struct bot *c, gint64 finding_id, gint64 now,
			  GError **error);

/*
 * Queues the clean-build mail of @head of tree @tree_name on @target
 * (@boots clean boots, 0: not booted), to its lists and maintainers,
 * when the tree asks for one (tree --mail-clean); nothing otherwise.
 * Run it in the transaction that records the job's result.
 */
bool outbox_queue_clean(const struct bot *c, const char *tree_name, const char *head,
			const char *target, unsigned boots, gint64 now, GError **error);

/*
 * Queues @reply (rendered by the caller, with its recipients and
 * threading; its date is set here, and its Message-ID unless it has one) as a mail of @kind,
 * in the caller's transaction; with @cause set (the rendering failed),
 * queues it in OUTBOX_ERROR with the cause, never sent. Sets *@id to
 * the outbox row (may be NULL).
 */
bool outbox_queue_reply(const struct bot *c, enum outbox_kind kind, struct reply *reply,
			const GError *cause, const char *tag, gint64 now, gint64 *id,
			GError **error);

/*
 * Queues a test mail to the addresses @to (NULL-terminated), to check
 * the way out; returns its outbox id, or 0 with @error.
 */
gint64 outbox_queue_test(const struct bot *c, const char *const *to, gint64 now,
			 GError **error);

/*
 * Sends every mail due, oldest first, after making the digests that
 * the limits let through; *@sent receives how many went out. A mail the
 * sink refuses stays queued with the cause (tried again after its
 * backoff); false only when the store fails, or with BOT_ERROR_TEMPORARY
 * when the credentials cannot be read.
 */
bool outbox_send_due(const struct bot *c, unsigned *sent, GError **error);

#endif
