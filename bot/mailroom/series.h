/*
 * Posted patch series: assembled from the stored mails, applied to a
 * base, tested, and answered on the list.
 *
 * Assembly. A mail tagged [PATCH ... n/N] (or a single [PATCH]) with a
 * diff, or a cover letter [PATCH 0/N], joins the series of its sender,
 * version and N that shares its thread: a series whose mails it is, or
 * refers to (In-Reply-To, References). So parts may come in any order,
 * threaded to the cover letter or chained, and a v2 posted in reply to
 * v1 is a series of its own. A reply (Re:) is never a part, even when it
 * quotes or proposes a diff. A series is ready once it has patches 1 to
 * N and either its cover letter, or [mail] grace seconds have passed
 * since its last part (an unnumbered [PATCH] needs no cover letter; a
 * [PATCH 1/1] waits for one, which alone may carry the base-commit:). A
 * cover letter that comes after its series started joins it, and does
 * not start it again. A part past the count ([PATCH 3/2] in the thread)
 * is one more patch of a series still waiting, as b4 counts it; after
 * the series started it is a follow-up recorded as not tested (on the
 * series' base alone it could only fail to apply), never answered. A
 * newer version from the same sender, under the same title within 30
 * days or with as many patches in the same thread, supersedes an older
 * one that is not tested yet: it is never tested, nor answered.
 *
 * Base. The base-commit: trailer (of the cover letter, else of a patch)
 * when the store has that commit; then the branch heads of the trees
 * the series is for, the most recently updated first: the trees whose
 * --list addresses match the mail's List-Id, To or Cc, and those whose
 * --prefix matches a subject tag ([PATCH net-next ...]); for a series
 * mailed to zeroday itself that no tree matches, the public tree whose
 * tested branches hold its trailer's commit. The first base
 * the whole series applies to (engine/repo.h repo_apply_series(), as
 * `git am` does, refusing hostile paths) wins; each base tried is
 * recorded with why it was rejected. When none applies, one reply on the
 * cover letter (or the single patch) says which bases were tried and
 * asks for `git format-patch --base`; but a series that declares
 * prerequisites (prerequisite-patch-id:, b4's prerequisite-change-id: or
 * prerequisite-message-id:) did, and is only recorded as needing
 * prerequisite patches not found (they are not looked for).
 *
 * Test. One patch-test job per target of the base's tree builds each
 * patch against the one before it (the base for the first), so a patch
 * is blamed only for what it newly breaks; what already fails on the base
 * is said as such. The patch that broke something gets a reply in its
 * thread, and the cover letter a summary; a series with no new problem
 * gets a short reply only when its tree asks for it (--mail-clean).
 */
#ifndef ZERODAY_SERIES_H
#define ZERODAY_SERIES_H

#include <stdbool.h>
#include <glib.h>

#include "bot/config.h"
#include "bot/store/db.h"
#include "bot/mailroom/report.h"
#include "engine/repo.h"
#include "mail/patchmail.h"

/*
 * Takes stored mail @mail, parsed as @m, in the caller's transaction
 * (bot/mailroom/inbox.c hands every new mail here): a patch or a cover
 * letter joins its series, grouped by thread, and older versions are
 * superseded; anything else is left alone. False only when the store
 * fails.
 */
bool series_take(const struct bot *c, const struct mail_row *mail, const struct patchmail *m,
		 gint64 now, GError **error);

/*
 * Starts every ready series: chooses its base, applies it, and queues its
 * patch-test jobs (or records that it applies nowhere and queues that
 * reply). Sets *@waiting to the series still waiting for parts or for
 * their grace period (may be NULL), logging each with @log_waiting.
 */
bool series_start(const struct bot *c, gint64 now, bool log_waiting, unsigned *waiting,
		  GError **error);

/*
 * The series whose last patch applied as @commit and that are testing
 * (struct series_row, oldest first; a RESEND's and its original's apply
 * as the same commits); *@known is how many series end there at all.
 */
GPtrArray *series_testing_at(const struct bot *c, const char *commit, guint *known,
			      GError **error);

/*
 * Records one target's results of a patch test for each series of
 * @testing (as series_testing_at() gave them), in one transaction:
 * @results holds a struct series_result per patch, @note (may be NULL)
 * what the boots could not pin on one patch. A series whose every target
 * is in is tested, and its replies are queued in the same transaction.
 */
bool series_record(const struct bot *c, GPtrArray *testing, const char *tree,
		   const char *target, GPtrArray *results, const char *note, GError **error);

#endif
