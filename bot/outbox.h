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
 * [mail] outbox: maildir:PATH (the default: STATE/outbox). SMTP is not
 * implemented yet.
 */
#ifndef ZERODAY_OUTBOX_H
#define ZERODAY_OUTBOX_H

#include <stdbool.h>
#include <glib.h>

#include "bot/report.h"

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
bool outbox_queue_report(const struct report_ctx *c, gint64 finding_id, gint64 now,
			 GError **error);

/*
 * Queues the "fixed" follow-up of finding @finding_id in its report's
 * thread, likewise; nothing when it had no report.
 */
bool outbox_queue_fixed(const struct report_ctx *c, gint64 finding_id, gint64 now,
			GError **error);

/*
 * Sends every queued mail, oldest first; *@sent receives how many. A mail
 * the sink refuses stays queued with the cause (tried again next time);
 * false only when the store fails.
 */
bool outbox_send_due(const struct report_ctx *c, unsigned *sent, GError **error);

#endif
