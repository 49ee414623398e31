/*
 * The mail policy: who hears what, and how often. Decisions only, over
 * the store and the configuration; the outbox (outbox.h) asks them and
 * acts, and nothing here queues or delivers a mail.
 *
 * Who: a finding on a branch its tree blacklists (tree --blacklist,
 * #zeroday blacklist) is reported to nobody, even when the blacklist
 * came while its job ran; a recipient who muted a thread (#zeroday mute)
 * hears no more in it, except the answers to their own commands.
 *
 * How often: at most [mail] max-per-recipient-day mails to one address
 * in 24 hours, and max-per-hour mails in any hour in all (a mail to
 * several people counts once). What a limit holds back is held, never
 * dropped: each held recipient gets it later, with the rest of their
 * held mail, as one digest, made only when the limits let it through
 * and counted against the hour like any mail. A digest itself is never
 * held again.
 */
#ifndef ZERODAY_POLICY_H
#define ZERODAY_POLICY_H

#include <stdbool.h>
#include <glib.h>

#include "bot/bot.h"
#include "bot/store/db.h"
#include "mail/compose.h"

/* The text of one held mail that a digest carries, at most. */
#define POLICY_DIGEST_ITEM_MAX (256 * 1024)

/*
 * The archive, for mail @message_id about @tree (NULL: a series on no
 * tree zeroday knows). A private tree's mail is not archived: no link
 * and no archive list. Otherwise the Closes: link is [mail] archive-url
 * and the Message-ID (NULL without archive-url), and the archive's list
 * to copy is [mail] archive-list (NULL without it).
 */
char *policy_closes(const struct config *cfg, const struct tree_row *tree,
		    const char *message_id);
const char *policy_archive_list(const struct config *cfg, const struct tree_row *tree);

/*
 * Sets *@report: whether finding @f is reported, false when its branch
 * is on its tree's blacklist (a tree gone since blacklists nothing).
 * False only when the store fails.
 */
bool policy_reports(const struct bot *c, const struct finding_row *f, bool *report,
		    GError **error);

/*
 * Sets *@is_list: whether @key (address_key() form) is the address of a
 * mailing list zeroday knows: a tree's list (tree --list, a
 * subscription's list) or [mail] archive-list. A list speaks for many:
 * it is never muted, and a mail whose From it is was rewritten by it.
 * False only when the store fails.
 */
bool policy_is_list(const struct bot *c, const char *key, bool *is_list, GError **error);

/*
 * Leaves out of @r, a mail of @kind, the recipients who muted its
 * thread: the thread is named by its first Message-ID, as the mute
 * recorded it. A list's mute (policy_is_list(), one recorded before
 * lists were refused) counts for nothing: one reader does not silence
 * a list. A command's answer (OUTBOX_COMMAND) goes to who gave the
 * command, muted or not: they asked. When nobody is left, sets @cause
 * (the mail is kept, unsent, saying so). False only when the store
 * fails.
 */
bool policy_without_muted(const struct bot *c, enum outbox_kind kind, struct reply *r,
			  GError **cause, GError **error);

/*
 * Sets *@ok: whether a mail of @kind may go to @address at @now, or is
 * held back for a digest: under [mail] max-per-recipient-day (to
 * @address, in the last 24 hours) and max-per-hour (in all, in the last
 * hour); a digest always may (it was made only when under the limits).
 */
bool policy_may_send(const struct bot *c, enum outbox_kind kind, const char *address,
		     gint64 now, bool *ok, GError **error);

/*
 * The addresses with held mail whose digest may be made at @now, as a
 * NULL-terminated array (caller frees): those under their limits, as
 * many as the hour's limit lets through, the digests made counting
 * against it too.
 */
char **policy_digests_due(const struct bot *c, gint64 now, GError **error);

/*
 * The mails held back for @address, oldest first (struct outbox_row;
 * caller frees): what its digest carries.
 */
GPtrArray *policy_held_for(const struct bot *c, const char *address, GError **error);

/*
 * Fills @out (initialised here; reply_release() it) with the digest of
 * the mails @held (policy_held_for()) to @address: their list in the
 * body and each mail attached (its first POLICY_DIGEST_ITEM_MAX bytes),
 * with Message-ID @message_id, dated @now. Fails when the template does
 * not load or render; @out then has the attachments but no recipient.
 */
bool policy_digest(struct reply *out, const struct bot *c, const char *address,
		   const GPtrArray *held, const char *message_id, gint64 now, GError **error);

#endif
