/*
 * Jobs: what runs each kind of job the queue holds (enum job_kind), in one
 * table. A build job builds a tree's commit against its comparison base
 * and, for a head, boots it; bot/lab/culprit.c turns what is new into
 * findings and marks fixed what no longer shows. A patch-test job builds
 * and boots a posted series' patches (bot/mailroom/series.h); a rerun
 * tests a finding's culprit afresh for a #zeroday rerun
 * (bot/mailroom/commands.h). The queue, leases and retries are
 * bot/lab/sched.c's.
 */
#ifndef ZERODAY_JOBS_H
#define ZERODAY_JOBS_H

#include <stdbool.h>
#include <glib.h>

#include "bot/bot.h"
#include "bot/store/db.h"

/*
 * Runs @job on @bot (a worker's own handles) with its kind's runner.
 * Sets *@result, *@note (caller frees; NULL when the result says it all)
 * and *@booted (the boots of a head that passed); false with @cause when
 * the job could not run: infrastructure (BOT_ERROR_TEMPORARY, retried),
 * or a cause no retry fixes (jobs_permanent_cause()).
 */
bool jobs_run(const struct bot *bot, const struct job_row *job, enum job_result *result,
	      char **note, unsigned *booted, GError **cause);

/*
 * Whether no retry can fix @cause (a bad target, a commit no longer
 * stored, the configuration): the job ends in error at once.
 */
bool jobs_permanent_cause(const GError *cause);

#endif
