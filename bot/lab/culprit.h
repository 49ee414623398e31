/*
 * Culprits: the findings a build job's results bring, each new failure
 * bisected to the commit that brought it (engine/bisect.c decides every
 * step; this file only runs the probes it hands out: builds, boots, the
 * head with the culprit reverted), and the fixing of open findings.
 */
#ifndef ZERODAY_CULPRIT_H
#define ZERODAY_CULPRIT_H

#include <stdbool.h>
#include <glib.h>

#include "bot/bot.h"
#include "bot/lab/builder.h"
#include "bot/config.h"
#include "bot/store/db.h"
#include "engine/bisect.h"
#include "engine/repo.h"

/*
 * The comparison base of a head first seen on its branch: where it left
 * known ground. The merge base with the tree's base branch (--base), else
 * with the tree's already tested branches, else with the tested heads of
 * the other trees; the nearest to the head when there are several. NULL
 * (and no error) when none is known: the head's parent is the base then.
 */
char *culprit_fork_point(const struct bot *c, const struct job_row *job,
			 GError **error);

/*
 * Records the new build diagnostics of @r: blamed on the job's commit
 * when it was compared with its parent (@base NULL), else bisected
 * between @base and the job's commit. One that predates the range (a
 * boundary has it) is no finding: @already says what, and since where.
 */
bool culprit_build_findings(const struct bot *c, const struct job_row *job,
			    const struct builder_result *r, const char *base, GString *already,
			    GError **error);

/*
 * Boots the head that @r built, [boot] repeat times, and compares its
 * failures with those of @base (the last tested head or the fork point;
 * NULL: the parent). Each new failure is bisected from the base, which
 * must itself be shown clean of it; a failure the base shows too is not
 * the range's: @already says what it is and since where, and the job's
 * result says so. *@tally receives the head's tally (NULL when it
 * has no image). Boots that hit infrastructure errors fail it
 * (BOT_ERROR_TEMPORARY): they are no verdict.
 */
bool culprit_boot_findings(const struct bot *c, const struct job_row *job,
			   const struct builder_result *r, const char *base, GPtrArray **tally,
			   GString *already, GError **error);

/*
 * @excerpt, a boot's console from @build's kernel, with its trace decoded
 * into file:line with the vmlinux kept beside the build's image (caller
 * frees; NULL for NULL). Only sandboxed, as every tool run on a build's
 * files; whatever fails (no vmlinux, no sandbox, a tool that fails) leaves
 * it as it is, with a log line: a report goes out with its trace
 * undecoded rather than not at all. Seconds: never in a transaction.
 */
char *culprit_decoded_excerpt(const struct bot *c, const struct build_row *build,
			      const char *excerpt);

/*
 * Reports the build findings of tree @tree_id that wait for a report and
 * whose heads no build job waits on any longer (db_finding_report_due()):
 * the last target of a head to end, or a crash between a job's end and
 * its report, leaves them to this; run after each build job of the tree
 * and when zeroday starts.
 */
bool culprit_report_due(const struct bot *c, gint64 tree_id, GError **error);

/*
 * Bisects new boot failure @fingerprint over a posted series as applied:
 * the job's commit is its last patch, @base the commit it applies on
 * (booted clean of it). The same bisection as a tree's: flaky-aware,
 * patches that build no kernel skipped, the culprit checked by reverting
 * it on the last patch; boots already stored count. Fills @out (zeroed
 * here). False when the bisection could not run (BOT_ERROR_TEMPORARY on
 * infrastructure errors).
 */
bool culprit_bisect_series_boot(const struct bot *c, const struct job_row *job,
				const char *base, const char *fingerprint,
				struct bisect_outcome *out, GError **error);

/*
 * Marks fixed the open findings of the job's tree and target whose
 * culprit the job's commit contains and that it no longer shows (@boots:
 * the head's tally, or NULL); marks dropped those whose culprit the job's
 * commit lacks and no branch of the tree holds any more (a rebase took it
 * out). Each with its follow-up in the report's thread.
 */
bool culprit_mark_fixed(const struct bot *c, const struct job_row *job,
			const struct builder_result *r, GPtrArray *boots, GError **error);

#endif
