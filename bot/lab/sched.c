/*
 * `zeroday run`: see sched.h.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "bot/bot.h"
#include "bot/lab/culprit.h"
#include "bot/lab/executor.h"
#include "bot/lab/jobs.h"
#include "bot/mailroom/commands.h"
#include "bot/mailroom/inbox.h"
#include "bot/mailroom/ingest.h"
#include "bot/mailroom/outbox.h"
#include "bot/lab/sched.h"
#include "bot/mailroom/series.h"
#include "bot/lab/watch.h"
#include "engine/build.h"

/* The longest wait, in seconds, before the store is tried again after a temporary failure. */
#define STORE_PAUSE_MAX 60

/* The daemon's shared state. */
struct sched {
	/*
	 * The configuration in force, with a reference of its own. Only the
	 * main thread replaces it (on a reload, under @lock), so the main
	 * thread reads it without the lock; a worker takes a reference of its
	 * own under @lock for each job (sched_config()), so a configuration
	 * replaced mid-job lives until that job ends.
	 */
	struct config *config;
	const struct sched_options *opts;
	volatile sig_atomic_t *stop;
	char *db_path;
	char *git_path;
	GMutex lock;
	GCond wake;   /* new jobs were queued */
	GError *error; /* the first store failure: every worker stops */
	struct job_backoff backoff; /* of jobs that failed for infrastructure */
	volatile sig_atomic_t readers_stop; /* the mail readers end when set */
	/*
	 * Set when a mail reader stored mail or a job ended (and may have
	 * queued mail): the main thread's mail round runs at once, not at its
	 * next tick (every second for the outbox, every other for the inbox).
	 */
	gint nudged;
};

/* Asks the main thread for a mail round now: a reader's wake, or a job's end. */
static void nudge(void *data)
{
	struct sched *s = data;

	g_atomic_int_set(&s->nudged, 1);
}

/* One worker of the pool: its own store and repository handles. */
struct worker {
	struct sched *s;
	char *owner; /* HOST:PID.N, for leases */
	struct db *db;
	struct repo *repo;
	struct config *config; /* the running job's: a reference, or NULL between jobs */
};

bool sched_enqueue_pending(struct db *db, const struct config *config, GError **error)
{
	g_autoptr(GPtrArray) pending = NULL;

	if (!db_tx_begin(db, error))
		return false;
	pending = db_test_pending(db, G_MAXINT, error);
	if (!pending)
		goto fail;
	for (guint i = 0; i < pending->len; i++) {
		const struct test_row *t = pending->pdata[i];
		zd_autoptr(tree_row) tree = db_tree_get(db, t->tree, error);
		char **targets;

		if (!tree)
			goto fail;
		targets = tree->targets && tree->targets[0] ? tree->targets : config->build_targets;
		for (char **target = targets; *target; target++) {
			bool added;

			/* A heads-only target skips the commits under a rebasable tree's head. */
			if (!t->head && build_spec_has_check(*target, "heads"))
				continue;
			if (!db_job_add(db, JOB_KIND_BUILD, t->tree_id, t->commit, *target,
					t->head ? JOB_HEAD : JOB_BACKLOG, &added, error))
				goto fail;
		}
		if (!db_test_scheduled(db, t->tree_id, t->commit, error))
			goto fail;
	}
	return db_tx_commit(db, error);
fail:
	db_tx_rollback(db);
	return false;
}

/* The lease renewal thread: its own store handle, a renewal every lease/3. */
struct renewal {
	char *db_path;
	gint64 job_id;
	const char *owner;
	unsigned lease;
	GMutex lock;
	GCond done_cond;
	bool done;
};

static gpointer renew_lease(gpointer data)
{
	struct renewal *r = data;
	g_autoptr(GError) error = NULL;
	zd_autoptr(db) db = db_open(r->db_path, &error);

	if (!db) {
		g_warning("lease renewal: %s", error->message);
		return NULL;
	}
	g_mutex_lock(&r->lock);
	while (!r->done) {
		gint64 wake = g_get_monotonic_time() + (gint64)r->lease * G_USEC_PER_SEC / 3;

		if (g_cond_wait_until(&r->done_cond, &r->lock, wake) || r->done)
			continue;
		if (!db_job_renew(db, r->job_id, r->owner,
				  g_get_real_time() / G_USEC_PER_SEC + r->lease, &error)) {
			g_warning("job %" G_GINT64_FORMAT ": %s", r->job_id, error->message);
			g_clear_error(&error);
		}
	}
	g_mutex_unlock(&r->lock);
	return NULL;
}

/* The lease renewal thread of a job, stopped when the job ends. */
static GThread *renewal_start(struct renewal *r)
{
	g_mutex_init(&r->lock);
	g_cond_init(&r->done_cond);
	return g_thread_new("lease", renew_lease, r);
}

static void renewal_stop(struct renewal *r, GThread *thread)
{
	g_mutex_lock(&r->lock);
	r->done = true;
	g_cond_signal(&r->done_cond);
	g_mutex_unlock(&r->lock);
	g_thread_join(thread);
	g_mutex_clear(&r->lock);
	g_cond_clear(&r->done_cond);
}

/* Claims of one job cut short (zeroday died running it) before it ends in error. */
#define JOB_CUT_SHORT_MAX 12

static bool stopping(struct sched *s);

/* Waits @seconds, or less when zeroday is told to stop. */
static void pause_for(struct sched *s, unsigned seconds)
{
	gint64 until = g_get_monotonic_time() + (gint64)seconds * G_USEC_PER_SEC;

	while (!stopping(s) && g_get_monotonic_time() < until)
		g_usleep(MIN(G_USEC_PER_SEC / 5, until - g_get_monotonic_time() + 1));
}

static unsigned next_pause(unsigned pause)
{
	return pause ? MIN(2 * pause, STORE_PAUSE_MAX) : 1;
}

static char *format_when(gint64 when)
{
	g_autoptr(GDateTime) t = g_date_time_new_from_unix_utc(when);

	return t ? g_date_time_format(t, "%Y-%m-%d %H:%M:%S UTC") : g_strdup("?");
}

/*
 * Records how a job ended under its lease: done with @result when @cause
 * is NULL (a head that passed, @boots times booted, gets its clean-build
 * mail in that transaction, when its tree asks for one); else done in
 * error with @cause when a retry cannot fix it; handed back to the queue
 * as it was when @cause is BOT_ERROR_STOPPED (zeroday stops while the
 * job's work goes on: db_job_hand_back());
 * else queued again for a later attempt (db_job_retry()). A lease lost to
 * another worker is logged, not an error. While the store fails
 * temporarily (disk full), the daemon logs it and tries again with
 * backoff; with --once, or for any other store failure, false.
 */
static bool finish_job(struct worker *w, const struct job_row *job, enum job_result result,
		       const char *note, unsigned boots, const GError *cause, GError **error)
{
	struct sched *s = w->s;
	const struct bot rc = {
		.config = w->config, .db = w->db, .repo = w->repo, .git_path = w->s->git_path,
		.stop = w->s->stop,
	};
	bool permanent = cause && jobs_permanent_cause(cause);
	/* Its work goes on (a Slurm job): no failure, and no wait before it is taken over. */
	bool handed_back = cause && g_error_matches(cause, BOT_ERROR, BOT_ERROR_STOPPED);
	unsigned pause = 0;

	for (;;) {
		g_autoptr(GError) local = NULL;
		gint64 now = g_get_real_time() / G_USEC_PER_SEC;
		gint64 not_before = 0;
		bool gave_up = false;
		bool ok = db_tx_begin(w->db, &local);

		/* The mail commands waiting for the job get their answer in its transaction. */
		if (ok && !cause)
			ok = db_job_complete(w->db, job->id, w->owner, result, note, now, &local) &&
			     (result != JOB_RESULT_PASS || job->priority != JOB_HEAD ||
			      job->kind != JOB_KIND_BUILD ||
			      outbox_queue_clean(&rc, job->tree, job->commit, job->target, boots,
						 now, &local)) &&
			     commands_job_done(&rc, job, result, note, now, &local);
		else if (ok && handed_back)
			ok = db_job_hand_back(w->db, job->id, w->owner, &local);
		else if (ok && permanent)
			ok = db_job_complete(w->db, job->id, w->owner, JOB_RESULT_ERROR, cause->message,
					     now, &local) &&
			     commands_job_done(&rc, job, JOB_RESULT_ERROR, cause->message, now, &local);
		else if (ok)
			ok = db_job_retry(w->db, job->id, w->owner, now, cause->message, &s->backoff,
					  &gave_up, &not_before, &local) &&
			     (!gave_up || commands_job_done(&rc, job, JOB_RESULT_ERROR, cause->message,
							    now, &local));
		if (ok)
			ok = db_tx_commit(w->db, &local);
		if (ok) {
			g_autofree char *when = not_before ? format_when(not_before) : NULL;

			if (handed_back)
				g_message("job %" G_GINT64_FORMAT ": handed back for the next start: %s",
					  job->id, cause->message);
			else if (permanent)
				g_message("job %" G_GINT64_FORMAT ": error (no retry): %s", job->id,
					  cause->message);
			else if (gave_up)
				g_message("job %" G_GINT64_FORMAT ": error: gave up after %u attempts: %s",
					  job->id, s->backoff.limit, cause->message);
			else if (cause)
				g_message("job %" G_GINT64_FORMAT ": attempt %u failed, retry at %s: %s",
					  job->id, job->attempts, when, cause->message);
			else if (note)
				g_message("job %" G_GINT64_FORMAT ": %s: %s", job->id,
					  db_job_result_name(result), note);
			return true;
		}
		db_tx_rollback(w->db);
		if (g_error_matches(local, BOT_ERROR, BOT_ERROR_BUSY)) {
			/* The lease was lost: another worker runs the job; not ours to complete. */
			g_message("job %" G_GINT64_FORMAT ": %s", job->id, local->message);
			return true;
		}
		if (!g_error_matches(local, BOT_ERROR, BOT_ERROR_TEMPORARY) || s->opts->once) {
			g_propagate_prefixed_error(error, g_steal_pointer(&local),
						   "job %" G_GINT64_FORMAT ": ", job->id);
			return false;
		}
		if (stopping(s)) {
			/* Still leased to this process: the next start claims it again at once. */
			g_message("job %" G_GINT64_FORMAT ": left to the next run: %s", job->id,
				  local->message);
			return true;
		}
		pause = next_pause(pause);
		g_warning("job %" G_GINT64_FORMAT ": %s; trying again in %u s", job->id,
			  local->message, pause);
		pause_for(s, pause);
	}
}

/*
 * After a build job of @job's tree ended: the reports its head's last
 * target left due (culprit_report_due()). A failure waits for the next
 * job's end, or the next start.
 */
static void report_due(const struct bot *c, const struct job_row *job)
{
	g_autoptr(GError) local = NULL;

	if (job->kind == JOB_KIND_BUILD && !culprit_report_due(c, job->tree_id, &local))
		g_warning("job %" G_GINT64_FORMAT ": the reports due wait for the next job: %s",
			  job->id, local->message);
}

/* At start: the reports a crash left due between a job's end and its report. */
static void report_all_due(struct sched *s, struct db *db, struct repo *repo)
{
	const struct bot c = {
		.config = s->config, .db = db, .repo = repo, .git_path = s->git_path,
		.stop = s->stop,
	};
	g_autoptr(GError) local = NULL;
	g_autoptr(GPtrArray) trees = db_tree_list(db, &local);

	for (guint i = 0; trees && i < trees->len; i++) {
		if (!culprit_report_due(&c, ((const struct tree_row *)trees->pdata[i])->id, &local))
			break;
	}
	if (local)
		g_warning("the reports due wait for the next job: %s", local->message);
}

/*
 * Runs one job under its lease, with its kind's runner, and finishes it
 * (finish_job()): with its result, or with the cause it could not be run
 * for. Infrastructure is never a verdict: any failure that is not a
 * permanent cause puts the job back in the queue for a later attempt.
 * False only when the store fails (see finish_job()).
 */
static bool run_job(struct worker *w, const struct job_row *job, GError **error)
{
	struct renewal r = {
		.db_path = w->s->db_path, .job_id = job->id, .owner = w->owner,
		.lease = w->s->opts->lease,
	};
	g_autoptr(GError) cause = NULL;
	g_autofree char *note = NULL;
	enum job_result result = JOB_RESULT_NONE;
	unsigned booted = 0;
	const struct bot bot = {
		.config = w->config, .db = w->db, .repo = w->repo, .git_path = w->s->git_path,
		.stop = w->s->stop,
	};
	GThread *renewer;

	g_message("job %" G_GINT64_FORMAT ": %s %s %.12s for %s (attempt %u, %s)", job->id,
		  db_job_kind_name(job->kind), job->tree, job->commit, job->target, job->attempts,
		  w->owner);
	/*
	 * A claim that no failure followed was cut short: zeroday died while
	 * running the job (killed, the machine down, or a crash). A job that
	 * keeps doing so would take the daemon down forever: it ends in
	 * error, which is no verdict, and the rest of the queue goes on.
	 */
	if (job->attempts > job->failures + JOB_CUT_SHORT_MAX) {
		g_set_error(&cause, BOT_ERROR, BOT_ERROR_USAGE,
			    "cut short %u times: zeroday died each time it ran this job "
			    "(see the log for a crash)", job->attempts - 1 - job->failures);
		g_warning("job %" G_GINT64_FORMAT ": %s", job->id, cause->message);
		if (!finish_job(w, job, JOB_RESULT_NONE, NULL, 0, cause, error))
			return false;
		report_due(&bot, job);
		return true;
	}
	renewer = renewal_start(&r);
	if (!jobs_run(&bot, job, &result, &note, &booted, &cause))
		g_assert(cause);
	renewal_stop(&r, renewer);
	g_assert(result != JOB_RESULT_NONE || cause);
	if (!finish_job(w, job, result, note, booted, cause, error))
		return false;
	report_due(&bot, job);
	nudge(w->s);
	return true;
}

static char *owner_prefix(void)
{
	return g_strdup_printf("%s:", g_get_host_name());
}

/* Owners are HOST:PID.N; the job of a dead process can be claimed at once. */
static bool owner_dead(const char *owner)
{
	const char *colon = owner ? strrchr(owner, ':') : NULL;
	gint64 pid = colon ? g_ascii_strtoll(colon + 1, NULL, 10) : 0;

	return pid > 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

static bool stopping(struct sched *s)
{
	bool failed;

	g_mutex_lock(&s->lock);
	failed = s->error != NULL;
	g_mutex_unlock(&s->lock);
	return failed || *s->stop;
}

static void fail(struct sched *s, GError *error)
{
	g_mutex_lock(&s->lock);
	if (!s->error)
		s->error = error;
	else
		g_error_free(error);
	g_cond_broadcast(&s->wake);
	g_mutex_unlock(&s->lock);
}

/* What a running job holds under @config's executor (db_job_claim()). */
static enum job_claim_scope claim_scope(const struct config *config)
{
	const struct executor *e = executor_find(config->build_executor);

	return e ? e->claim : JOB_CLAIM_TREE;
}

/* The configuration in force: a new reference (config_free() it). */
static struct config *sched_config(struct sched *s)
{
	struct config *config;

	g_mutex_lock(&s->lock);
	config = config_ref(s->config);
	g_mutex_unlock(&s->lock);
	return config;
}

/*
 * A worker: claims jobs until told to stop; with --once, until no job is
 * claimable (a queued job that waits for another worker's build directory
 * is waited for; one that waits for its retry time is not). A temporary
 * store failure (disk full) pauses it, with backoff; with --once, or any
 * other store failure, stops every worker.
 */
static gpointer worker_main(gpointer data)
{
	struct worker *w = data;
	struct sched *s = w->s;
	GError *error = NULL;
	unsigned pause = 0;

	while (!stopping(s)) {
		gint64 now = g_get_real_time() / G_USEC_PER_SEC;
		gint64 queued = 0, waiting, running, done;
		struct job_row *job = NULL;
		bool ran = false;
		bool ok = true;

		if (!w->db)
			w->db = db_open(s->db_path, &error);
		if (w->db && !w->repo)
			w->repo = repo_open(s->git_path, &error);
		/* A job runs under the configuration in force when it was claimed. */
		w->config = sched_config(s);
		ok = w->repo && db_job_claim(w->db, w->owner, claim_scope(w->config), now,
					     s->opts->lease, &job, &error);
		if (ok && job) {
			ok = run_job(w, job, &error);
			g_clear_pointer(&job, job_row_free);
			ran = true;
		} else if (ok && s->opts->once) {
			ok = db_job_counts(w->db, now, &queued, &waiting, &running, &done, &error);
		}
		g_clear_pointer(&w->config, config_free);
		if (ok && s->opts->once && !ran && queued == 0)
			break;
		if (!ok) {
			if (s->opts->once || !g_error_matches(error, BOT_ERROR, BOT_ERROR_TEMPORARY))
				break;
			pause = next_pause(pause);
			g_warning("worker %s: %s; trying again in %u s", w->owner, error->message,
				  pause);
			g_clear_error(&error);
			pause_for(s, pause);
			continue;
		}
		pause = 0;
		if (ran)
			continue;
		g_mutex_lock(&s->lock);
		g_cond_wait_until(&s->wake, &s->lock, g_get_monotonic_time() + G_USEC_PER_SEC / 2);
		g_mutex_unlock(&s->lock);
	}
	if (error)
		fail(s, error);
	repo_free(w->repo);
	db_close(w->db);
	return NULL;
}

/*
 * The trees removed since: what the executor holds of them goes (their
 * jobs on a cluster), then the record of their removal. A failure is a
 * log line, and the next poll tries again.
 */
static void forget_removed(struct sched *s, struct db *db, struct repo *repo)
{
	const struct executor *e = executor_find(s->config->build_executor);
	const struct bot rc = { .config = s->config, .db = db, .repo = repo };
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) names = db_trees_removed(db, &error);

	for (guint i = 0; names && i < names->len; i++) {
		const char *name = names->pdata[i];

		if ((e && e->forget && !e->forget(&rc, name, &error)) ||
		    !db_tree_forgotten(db, name, &error))
			break;
	}
	if (error)
		g_message("removed trees: %s", error->message);
}

static bool poll_and_enqueue(struct sched *s, struct db *db, struct repo *repo, GError **error)
{
	g_autoptr(GError) poll_error = NULL;
	g_autoptr(GPtrArray) polled = watch_poll(db, repo, s->config, NULL, &poll_error);

	if (!polled)
		g_message("poll: %s", poll_error->message);
	if (!sched_enqueue_pending(db, s->config, error))
		return false;
	forget_removed(s, db, repo);
	g_mutex_lock(&s->lock);
	g_cond_broadcast(&s->wake);
	g_mutex_unlock(&s->lock);
	return true;
}

/*
 * Mail in: with @drain, reads every source first (--once; the daemon's
 * readers do it otherwise); then assembles the series from the mails
 * stored and starts those ready, whose jobs the workers then run.
 */
static bool read_mail(struct sched *s, struct db *db, struct repo *repo, bool drain,
		      GError **error)
{
	const struct bot rc = {
		.config = s->config, .db = db, .repo = repo, .git_path = s->git_path,
	};
	struct ingest_stats st = { 0 };
	unsigned waiting = 0;
	gint64 now;

	if (drain && s->config->mail_sources) {
		if (!ingest_all(db, s->config, &st, s->stop, error))
			return false;
		g_message("mail: %u new (%u quarantined), %u already stored, %u source%s failed",
			  st.stored, st.quarantined, st.duplicates, st.failed,
			  st.failed == 1 ? "" : "s");
	}
	now = g_get_real_time() / G_USEC_PER_SEC;
	if (!inbox_dispatch(&rc, now, error) ||
	    !series_start(&rc, now, s->opts->once, &waiting, error) ||
	    !commands_sweep(&rc, now, error))
		return false;
	if (s->opts->once && waiting)
		g_message("mail: %u series left waiting", waiting);
	g_mutex_lock(&s->lock);
	g_cond_broadcast(&s->wake);
	g_mutex_unlock(&s->lock);
	return true;
}

/*
 * Sends what the outbox holds. A sink that refuses a mail leaves it
 * queued; a store failure that is temporary waits for the next round.
 */
static bool send_mail(struct db *db, struct repo *repo, const struct config *config,
		      GError **error)
{
	const struct bot rc = { .config = config, .db = db, .repo = repo };
	GError *local = NULL;
	unsigned sent;

	if (outbox_send_due(&rc, &sent, &local))
		return true;
	if (g_error_matches(local, BOT_ERROR, BOT_ERROR_TEMPORARY)) {
		g_warning("outbox: %s; trying again later", local->message);
		g_error_free(local);
		return true;
	}
	g_propagate_error(error, local);
	return false;
}

/* With --once: the jobs and the mail left waiting for their retry time, logged. */
static bool report_waiting(struct db *db, GError **error)
{
	gint64 now = g_get_real_time() / G_USEC_PER_SEC;
	g_autoptr(GPtrArray) jobs = db_job_list(db, JOB_LIST_RETRYING, G_MAXINT, error);

	if (!jobs)
		return false;
	for (guint i = 0; i < jobs->len; i++) {
		const struct job_row *j = jobs->pdata[i];
		g_autofree char *when = format_when(j->not_before);

		if (j->not_before <= now)
			continue;
		g_message("job %" G_GINT64_FORMAT ": %s %.12s for %s left queued: retry %u at %s "
			  "(in %" G_GINT64_FORMAT " s) after: %s", j->id, j->tree, j->commit,
			  j->target, j->failures, when, j->not_before - now,
			  j->last_error ? j->last_error : "?");
	}
	/* Mail that waits: for its next try, or held back by a limit. */
	{
		g_autoptr(GPtrArray) queued = db_outbox_list(db, OUTBOX_QUEUED, G_MAXINT, error);
		g_autoptr(GPtrArray) held = queued ? db_outbox_list(db, OUTBOX_HELD, G_MAXINT, error)
						   : NULL;

		if (!held)
			return false;
		for (guint i = 0; i < queued->len; i++) {
			const struct outbox_row *m = queued->pdata[i];
			g_autofree char *when = format_when(m->next_try);

			if (m->next_try > now)
				g_message("outbox: <%s> left queued: try %u at %s after: %s",
					  m->message_id, m->attempts + 1, when,
					  m->last_error ? m->last_error : "?");
		}
		if (held->len)
			g_message("outbox: %u mails held back by a limit, for their digests",
				  held->len);
	}
	return true;
}

/*
 * A reload asked for (SIGHUP), between two rounds of the main thread: a
 * new configuration from the caller's loader, its fixed settings kept
 * (config_keep_fixed()), swapped in under the lock. The mail readers hold
 * the old one, so they are stopped before it is released and started
 * again on the new one. A configuration that does not load is logged
 * with the reason, and the old one stays in force.
 */
static void reload(struct sched *s, struct ingest_readers **readers)
{
	g_autoptr(GError) local = NULL;
	struct config *fresh;
	struct config *old;

	*s->opts->reload = 0;
	fresh = s->opts->reload_config(s->config, s->opts->reload_data, &local);
	if (!fresh) {
		g_warning("config not reloaded, the old one stays in force: %s", local->message);
		return;
	}
	config_keep_fixed(fresh, s->config);
	if (*readers) {
		s->readers_stop = 1;
		ingest_readers_join(*readers);
		*readers = NULL;
		s->readers_stop = 0;
	}
	g_mutex_lock(&s->lock);
	old = s->config;
	s->config = fresh;
	g_mutex_unlock(&s->lock);
	/* A worker in the middle of a job still holds a reference to the old one. */
	config_free(old);
	if (fresh->mail_sources)
		*readers = ingest_readers_start(fresh, s->db_path, s->opts->poll_interval,
						&s->readers_stop, nudge, s);
	g_message("config reloaded from %s", fresh->path ? fresh->path : "the built-in defaults");
}

bool sched_run(struct db *db, struct repo *repo, struct config *config,
	       const struct sched_options *opts, volatile sig_atomic_t *stop, GError **error)
{
	g_autofree char *prefix = owner_prefix();
	unsigned n = opts->workers ? opts->workers : config->workers;
	g_autofree struct worker *workers = g_new0(struct worker, n);
	g_autofree GThread **threads = g_new0(GThread *, n);
	struct sched s = {
		.config = config_ref(config), .opts = opts, .stop = stop,
		.db_path = config_db_path(config), .git_path = config_git_path(config),
		.backoff = JOB_BACKOFF_INIT,
	};
	GError *local = NULL;
	unsigned poll_pause = 0;
	gint64 next_poll, last_send = 0;
	struct ingest_readers *readers = NULL;
	bool ok = true;

	if (opts->retry_delay)
		s.backoff.first_s = opts->retry_delay;
	g_mutex_init(&s.lock);
	g_cond_init(&s.wake);
	if (!db_tx_begin(db, &local) || !db_job_release_dead(db, prefix, owner_dead, &local) ||
	    !db_tx_commit(db, &local)) {
		db_tx_rollback(db);
		if (opts->once || !g_error_matches(local, BOT_ERROR, BOT_ERROR_TEMPORARY)) {
			g_propagate_error(error, local);
			ok = false;
			goto out;
		}
		/* Their leases run out instead. */
		g_warning("releasing the jobs of dead workers: %s", local->message);
		g_clear_error(&local);
	}
	report_all_due(&s, db, repo);
	next_poll = g_get_real_time() / G_USEC_PER_SEC;
	if (!poll_and_enqueue(&s, db, repo, &local)) {
		if (opts->once || !g_error_matches(local, BOT_ERROR, BOT_ERROR_TEMPORARY)) {
			g_propagate_error(error, local);
			ok = false;
			goto out;
		}
		poll_pause = next_pause(poll_pause);
		g_warning("poll: %s; trying again in %u s", local->message, poll_pause);
		g_clear_error(&local);
		next_poll += poll_pause;
	} else {
		next_poll += opts->poll_interval;
	}
	if (!read_mail(&s, db, repo, opts->once, &local)) {
		if (opts->once || !g_error_matches(local, BOT_ERROR, BOT_ERROR_TEMPORARY)) {
			g_propagate_error(error, local);
			ok = false;
			goto out;
		}
		g_warning("mail: %s; trying again later", local->message);
		g_clear_error(&local);
	}
	if (!opts->once && s.config->mail_sources)
		readers = ingest_readers_start(s.config, s.db_path, opts->poll_interval,
					       &s.readers_stop, nudge, &s);
	g_message("running %u worker%s", n, n == 1 ? "" : "s");
	for (unsigned i = 0; i < n; i++) {
		workers[i].s = &s;
		workers[i].owner = g_strdup_printf("%s%d.%u", prefix, (int)getpid(), i + 1);
		threads[i] = g_thread_new("worker", worker_main, &workers[i]);
	}
	/* The main thread polls and sends the mail; the workers run the jobs. */
	while (!opts->once && !stopping(&s)) {
		gint64 now;
		bool nudged;

		if (opts->reload && *opts->reload && opts->reload_config)
			reload(&s, &readers);
		now = g_get_real_time() / G_USEC_PER_SEC;
		nudged = g_atomic_int_compare_and_exchange(&s.nudged, 1, 0);

		if (now != last_send || nudged) {
			bool tick = now != last_send;

			last_send = now;
			if ((nudged || (tick && now % 2 == 0)) &&
			    !read_mail(&s, db, repo, false, &local)) {
				if (g_error_matches(local, BOT_ERROR, BOT_ERROR_TEMPORARY)) {
					g_warning("mail: %s; trying again later", local->message);
					g_clear_error(&local);
				} else {
					fail(&s, local);
					local = NULL;
				}
			}
			if (!send_mail(db, repo, s.config, &local)) {
				fail(&s, local);
				local = NULL;
			}
		}
		if (now >= next_poll) {
			if (poll_and_enqueue(&s, db, repo, &local)) {
				poll_pause = 0;
				next_poll = now + opts->poll_interval;
			} else if (g_error_matches(local, BOT_ERROR, BOT_ERROR_TEMPORARY)) {
				/* Disk full, say: not the end of the daemon. */
				poll_pause = MIN(next_pause(poll_pause), opts->poll_interval);
				g_warning("poll: %s; trying again in %u s", local->message, poll_pause);
				g_clear_error(&local);
				next_poll = now + poll_pause;
			} else {
				fail(&s, local);
				local = NULL;
			}
		}
		g_usleep(G_USEC_PER_SEC / 5);
	}
	for (unsigned i = 0; i < n; i++) {
		g_thread_join(threads[i]);
		g_free(workers[i].owner);
	}
	s.readers_stop = 1;
	ingest_readers_join(readers);
	if (s.error) {
		g_propagate_error(error, s.error);
		ok = false;
	} else if (!send_mail(db, repo, s.config, error)) {
		/* Whatever the jobs queued goes out before the daemon stops. */
		ok = false;
	} else if (opts->once && !report_waiting(db, error)) {
		ok = false;
	}
out:
	config_free(s.config);
	g_free(s.db_path);
	g_free(s.git_path);
	g_mutex_clear(&s.lock);
	g_cond_clear(&s.wake);
	return ok;
}
