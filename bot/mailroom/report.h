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
 * Signed-off-by people, the tree's lists (--list) and maintainers (--cc),
 * then the maintainers, reviewers and lists of the files the culprit
 * touches as its own tree's scripts/get_maintainer.pl names them (run
 * sandboxed, engine/maintainers.h; skipped, with a log line, when it
 * fails or the sandbox is off). An inconclusive finding goes to the
 * tree's lists and maintainers, then the suspects' authors. A private
 * tree's reports go To its maintainers (--cc) only. One address once
 * (compared without case), never the bot itself, at most [mail] cc-max
 * in all (in that order: the author first).
 *
 * Note: the script runs while the report is rendered, for up to
 * MAINTAINERS_TIMEOUT_S seconds.
 */
#ifndef ZERODAY_REPORT_H
#define ZERODAY_REPORT_H

#include <stdbool.h>
#include <glib.h>

#include "bot/bot.h"
#include "bot/config.h"
#include "bot/store/db.h"
#include "engine/maintainers.h"
#include "engine/repo.h"
#include "bot/mailroom/template.h"
#include "mail/compose.h"

/* The attachments' caps, and the source lines shown around a diagnostic. */
#define REPORT_CONFIG_MAX (1024 * 1024)
#define REPORT_LOG_MAX (64 * 1024)
/* A build log read for the lines around its diagnostics, at most its last bytes. */
#define REPORT_LOG_READ_MAX (16 * 1024 * 1024)
/* Lines of the build log kept before and after each line naming a new diagnostic. */
#define REPORT_LOG_BEFORE 10
#define REPORT_LOG_AFTER 5
#define REPORT_CONTEXT_LINES 2

/*
 * Asks @culprit's own get_maintainer.pl (sandboxed, up to 30 s) into @m
 * (maintainers_init() first), so that a report rendered later in the
 * store's write transaction does not run it there: set c->maintainers_of
 * and c->maintainers to them. A failure is logged; @m stays empty.
 */
void report_prefetch(const struct bot *c, const char *culprit, struct maintainers *m);

/*
 * Attaches the config at @config_path, gzipped, as config.gz (the name
 * reproduce lines give it); false when it cannot be read.
 */
bool report_attach_config(struct reply *out, const char *config_path);

/*
 * Sets @v's boot reproduce lines for target @t, as zeroday boots it: the
 * command that makes the initramfs with initramfs.sh (attached to @out:
 * the init and payloads of [boot] payloads, packed by the build's own
 * usr/gen_init_cpio), "initramfs_command", and the QEMU line that boots
 * the kernel with it, "boot_command". Without the script (a payload
 * gone: logged), the QEMU line boots the kernel alone. Nothing for a
 * target that boots no image. The initramfs holds @payloads, the tree's
 * (NULL or empty: [boot] payloads).
 */
struct template_values;
struct build_target;
void report_boot_reproduce(struct reply *out, struct template_values *v, const struct bot *c,
			   const struct build_target *t, char **payloads);

/* The most of a file a report's artifacts directory takes: a build log past it keeps its tail. */
#define REPORT_ARTIFACT_MAX (64 * 1024 * 1024)

/*
 * Writes the full files behind the report of finding @f, Message-ID
 * @message_id, into [report] artifacts-dir, in a directory named after
 * the Message-ID's random part: the config, the whole build log, the
 * bisection log, and for a boot failure the console of a failing boot
 * and initramfs.sh. The report rendered afterwards links it (its
 * "artifacts" field). Nothing without artifacts-dir, or for a private
 * tree. False with @error set when the directory cannot be written: the
 * report then goes without the link.
 */
bool report_publish(const struct bot *c, const struct finding_row *f, const char *message_id,
		    GError **error);

/*
 * Fills @out (initialised here; reply_release() it) with the report of
 * finding @f, with Message-ID @message_id, dated @now. Fails when a
 * template does not load or render, or the culprit is not in the store.
 */
bool report_finding(struct reply *out, const struct bot *c, const struct finding_row *f,
		    const char *message_id, gint64 now, GError **error);

/*
 * Fills @out with the follow-up saying finding @f was fixed (by
 * @f->fixed_by), in the thread of its report @report: "Re:" its subject,
 * In-Reply-To its Message-ID, References its References and its
 * Message-ID, to its recipients.
 */
bool report_fixed(struct reply *out, const struct bot *c, const struct finding_row *f,
		  const struct outbox_row *report, const char *message_id, gint64 now,
		  GError **error);

/*
 * The same for a dropped finding: its culprit left every branch
 * (@f->fixed_by is a head seen without it).
 */
bool report_dropped(struct reply *out, const struct bot *c, const struct finding_row *f,
		    const struct outbox_row *report, const char *message_id, gint64 now,
		    GError **error);

#endif
