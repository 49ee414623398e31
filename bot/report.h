/*
 * Reports: a finding rendered as the mail zeroday sends about it, from
 * the templates in [mail] templates (templates/README.md lists each
 * kind's fields). The anatomy, in order: a one-line verdict; where it was
 * found (tree, branch, head, the culprit and its parent, target, config,
 * compiler); a one-line command that reproduces it; the new diagnostic
 * with the source around it, or the console excerpt and k/n boots; the
 * bisection; the culprit's author and date; Reported-by and Closes tags;
 * how to reach the bot. The config, the build log and the bisection log
 * go as attachments, each capped with a note where cut.
 *
 * Recipients: To the culprit's author; Cc its committer, its
 * Signed-off-by people and the tree's recipients; one address once
 * (compared without case), never the bot itself, at most [mail] cc-max
 * in all (the author first).
 */
#ifndef ZERODAY_REPORT_H
#define ZERODAY_REPORT_H

#include <stdbool.h>
#include <glib.h>

#include "bot/config.h"
#include "bot/db.h"
#include "engine/repo.h"
#include "mail/compose.h"

/* The attachments' caps, and the source lines shown around a diagnostic. */
#define REPORT_CONFIG_MAX (1024 * 1024)
#define REPORT_LOG_MAX (256 * 1024)
#define REPORT_CONTEXT_LINES 2

struct report_ctx {
	const struct config *config;
	struct db *db;
	struct repo *repo; /* holds the finding's commits */
};

/*
 * Checks that every report template in @dir loads against its schema;
 * BOT_ERROR_CONFIG naming the file and line of the first that does not.
 */
bool report_check_templates(const char *dir, GError **error);

/*
 * Fills @out (initialised here; reply_release() it) with the report of
 * finding @f, with Message-ID @message_id, dated @now. Fails when a
 * template does not load or render, or the culprit is not in the store.
 */
bool report_finding(struct reply *out, const struct report_ctx *c, const struct finding_row *f,
		    const char *message_id, gint64 now, GError **error);

/*
 * Fills @out with the follow-up saying finding @f was fixed (by
 * @f->fixed_by), in the thread of its report @report: "Re:" its subject,
 * In-Reply-To its Message-ID, References its References and its
 * Message-ID, to its recipients.
 */
bool report_fixed(struct reply *out, const struct report_ctx *c, const struct finding_row *f,
		  const struct outbox_row *report, const char *message_id, gint64 now,
		  GError **error);

#endif
