/*
 * `zeroday run`: the daemon loop. The main thread polls the trees on a
 * schedule and turns the selected commits into build jobs (one per
 * target); a pool of worker threads runs them under leases kept alive by
 * a renewal thread, each with its kind's runner (bot/lab/jobs.h).
 */
#ifndef ZERODAY_SCHED_H
#define ZERODAY_SCHED_H

#include <signal.h>
#include <stdbool.h>
#include <glib.h>

#include "bot/config.h"
#include "bot/store/db.h"
#include "engine/repo.h"

struct sched_options {
	bool once;              /* poll once, run the queue dry, and return */
	unsigned poll_interval; /* seconds between polls */
	unsigned lease;         /* seconds a job's lease lasts between renewals */
	unsigned workers;       /* jobs run at once; 0: [zeroday] workers */
	unsigned retry_delay;   /* seconds before a failed job's first retry; 0: 60 */
	/*
	 * When *@reload is set (SIGHUP), the main thread clears it and, between
	 * two rounds of polling and mail, calls @reload_config for a new
	 * configuration (a reference the scheduler takes over), or NULL with
	 * the reason, logged as a warning: then the daemon keeps the old one.
	 * NULL: no reloads.
	 */
	volatile sig_atomic_t *reload;
	struct config *(*reload_config)(const struct config *old, void *data, GError **error);
	void *reload_data;
};

/*
 * Runs until *@stop is set (each worker finishes its job in progress),
 * or, with @opts->once, until no job can be claimed now: a job waiting
 * for its retry time is left queued and logged. Jobs that a crashed
 * zeroday of this host held are claimable at once.
 *
 * A job that fails for infrastructure (an infra-error verdict or boot, a
 * temporary error) is queued again with exponential backoff, and ends in
 * error after JOB_BACKOFF_INIT's limit of attempts; one whose cause a
 * retry cannot fix (a bad target, a commit no longer stored) ends in
 * error at once. The cause is kept with the job.
 *
 * A temporary store failure (BOT_ERROR_TEMPORARY: disk full, I/O error)
 * is logged and retried with backoff; with @opts->once it ends the run
 * instead, leaving the jobs in the store. Returns false when the store
 * fails for good (in any worker: all of them stop) or, with @opts->once,
 * at all.
 *
 * A configuration reloaded is swapped in by the main thread between two
 * rounds; the main thread's next poll and mail use it, and each worker's
 * next job. A job in flight keeps the configuration it started with (the
 * worker holds a reference, see config_ref()), and the mail readers are
 * restarted on the new one. The scheduler takes its own reference to
 * @config.
 */
bool sched_run(struct db *db, struct repo *repo, struct config *config,
	       const struct sched_options *opts, volatile sig_atomic_t *stop, GError **error);

/* Queues a build job per target for every selected commit not yet queued. */
bool sched_enqueue_pending(struct db *db, const struct config *config, GError **error);

#endif
