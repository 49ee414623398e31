/*
 * `zeroday run`: see sched.h.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "bot/bot.h"
#include "bot/booter.h"
#include "bot/builder.h"
#include "bot/sched.h"
#include "bot/watch.h"
#include "engine/bisect.h"
#include "engine/diag.h"

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

			if (!db_job_add(db, "build", t->tree_id, t->commit, *target,
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

static const char *finding_kind(const struct diag *d)
{
	return d->kind == DIAG_ERROR ? "build-error" : "build-warning";
}

/* Records what a build verdict says a commit introduced. */
static bool record_findings(struct db *db, const struct job_row *job,
			    const struct builder_result *r, GError **error)
{
	if (r->verdict != VERDICT_NEW_DIAGNOSTICS && r->verdict != VERDICT_FAIL_NEW_ERROR)
		return true;
	/* A root commit has nothing to be compared with: blaming it would be a false alarm. */
	if (!r->parent)
		return true;
	for (guint i = 0; i < r->fresh->len; i++) {
		const struct diag *d = r->fresh->pdata[i];
		g_autofree char *title = g_strdup_printf("%s%s%s", d->file, *d->file ? ": " : "",
							 d->message);
		g_autofree char *details = d->line
			? g_strdup_printf("%s:%u:%u: %s: %s", d->file, d->line, d->column,
					  diag_kind_name(d->kind), d->message)
			: g_strdup_printf("%s: %s", diag_kind_name(d->kind), d->message);
		g_autofree char *reproduce = g_strdup_printf("zeroday build %s %s --target '%s'",
							     job->tree, job->commit, job->target);
		struct finding_row f = {
			.culprit = job->commit, .target = job->target, .kind = (char *)finding_kind(d),
			.fingerprint = d->fingerprint, .title = title, .details = details,
			.confidence = 1.0, .reproduce = reproduce,
		};
		bool added;

		if (!db_finding_add(db, job->tree_id, &f, &added, error))
			return false;
		if (added)
			g_message("finding: %.12s (%s) %s", job->commit, job->target, title);
	}
	return true;
}

static bool has_fingerprint(const struct build_row *row, const char *fingerprint)
{
	for (guint i = 0; i < row->diags->len; i++) {
		if (strcmp(((struct diag *)row->diags->pdata[i])->fingerprint, fingerprint) == 0)
			return true;
	}
	return false;
}

/*
 * A bisection between @good and @head over the commits in between (what
 * @head has and @good has not).
 */
static struct bisect *bisect_range(struct repo *repo, const char *good, const char *head,
				   double p_show, GError **error)
{
	const char *hide[] = { good, NULL };
	g_autofree struct bisect_commit *commits = NULL;
	g_autoptr(GPtrArray) walked = NULL;
	bool truncated;

	walked = repo_walk_new(repo, head, hide, 100000, &truncated, error);
	if (!walked)
		return NULL;
	commits = g_new0(struct bisect_commit, walked->len);
	for (guint i = 0; i < walked->len; i++) {
		const struct repo_commit *c = walked->pdata[i];

		commits[i].id = c->oid;
		commits[i].parents = (const char *const *)c->parent_ids;
	}
	/* bisect_new copies what it keeps. */
	return bisect_new(commits, walked->len, hide, head, p_show, 0.001, 0.95, error);
}

/* Builds @commit alone (no comparison) for the job's target; returns its stored build. */
static GPtrArray *build_alone(struct db *db, const struct config *config,
			      const struct job_row *job, const char *commit, GError **error)
{
	g_autofree char *git = config_git_path(config);
	const char *targets[] = { job->target, NULL };
	struct builder_request req = {
		.source = job->tree, .objects_from = git, .rev = commit, .targets = targets,
		.alone = true,
	};

	return builder_run(db, config, &req, error);
}

/*
 * Bisects @fingerprint between the last tested head @good and the job's
 * head, which shows it. A commit's build is bad when it shows the
 * fingerprint, good when it builds without it, skipped when it fails for
 * another reason. Builds are deterministic: one run per step.
 */
static bool bisect_fingerprint(struct db *db, struct repo *repo, const struct config *config,
			       const struct job_row *job, const char *good,
			       const char *fingerprint, struct bisect_outcome *out, GError **error)
{
	zd_autoptr(bisect) b = bisect_range(repo, good, job->commit, 1.0, error);
	const char *next;
	unsigned runs;

	if (!b)
		return false;
	while ((next = bisect_next(b, &runs))) {
		g_autoptr(GPtrArray) results = build_alone(db, config, job, next, error);
		const struct build_row *row;
		bool shows;

		if (!results)
			return false;
		row = ((struct builder_result *)results->pdata[0])->build;
		shows = has_fingerprint(row, fingerprint);
		g_message("bisect %s: %.12s %s", fingerprint, next,
			  shows ? "bad" : strcmp(row->status, "failed") == 0 ? "skip" : "good");
		bisect_record(b, next, shows ? BISECT_BAD
				       : strcmp(row->status, "failed") == 0 ? BISECT_SKIP : BISECT_GOOD,
			      1, shows);
	}
	bisect_outcome(b, out);
	return true;
}

/* Records the findings of a non-rebasable head, each bisected from the last tested head. */
static bool record_bisected(struct db *db, struct repo *repo, const struct config *config,
			    const struct job_row *job, const struct builder_result *r,
			    const char *good, GError **error)
{
	g_autoptr(GHashTable) done = g_hash_table_new(g_str_hash, g_str_equal);

	if (r->verdict != VERDICT_NEW_DIAGNOSTICS && r->verdict != VERDICT_FAIL_NEW_ERROR)
		return true;
	for (guint i = 0; i < r->fresh->len; i++) {
		const struct diag *d = r->fresh->pdata[i];
		struct bisect_outcome o = { 0 };
		g_autoptr(GString) log = g_string_new(NULL);
		g_autofree char *title = NULL;
		g_autofree char *reproduce = NULL;
		g_autofree char *suspects = NULL;
		struct finding_row f = { 0 };
		bool added;

		if (!g_hash_table_add(done, d->fingerprint))
			continue;
		if (!bisect_fingerprint(db, repo, config, job, good, d->fingerprint, &o, error))
			return false;
		for (guint s = 0; s < o.log->len; s++) {
			const struct bisect_step *st = o.log->pdata[s];

			g_string_append_printf(log, "%s %s\n", st->id,
					       st->result == BISECT_BAD ? "bad" :
					       st->result == BISECT_GOOD ? "good" : "skip");
		}
		title = g_strdup_printf("%s%s%s", d->file, *d->file ? ": " : "", d->message);
		suspects = o.suspects ? g_strjoinv(" ", o.suspects) : NULL;
		f.culprit = o.found ? o.culprit : job->commit;
		reproduce = g_strdup_printf("zeroday build %s %s --target '%s'", job->tree,
					    f.culprit, job->target);
		f.target = job->target;
		f.kind = (char *)finding_kind(d);
		f.fingerprint = d->fingerprint;
		f.title = title;
		f.details = o.found ? log->str : suspects;
		f.confidence = o.found ? o.confidence : 0.0;
		f.state = o.found ? NULL : (char *)"inconclusive";
		f.reproduce = reproduce;
		if (!db_tx_begin(db, error) || !db_finding_add(db, job->tree_id, &f, &added, error) ||
		    !db_tx_commit(db, error)) {
			db_tx_rollback(db);
			bisect_outcome_clear(&o);
			return false;
		}
		if (added)
			g_message("finding: %.12s (%s) %s%s", f.culprit, job->target, title,
				  o.found ? ", bisected" : ", bisection inconclusive");
		bisect_outcome_clear(&o);
	}
	return true;
}

/* Boots a stored build's image [boot] repeat times; NULL tally when it has none. */
static GPtrArray *boot_build(struct db *db, const struct config *config,
			     const struct build_row *build, unsigned repeat, GError **error)
{
	struct booter_request req = {
		.image = build->image_path, .build_id = build->id, .repeat = repeat,
	};
	g_autoptr(GPtrArray) runs = NULL;
	GPtrArray *tally = NULL;

	if (!build->image_path || strcmp(build->status, "ok") != 0)
		return NULL;
	runs = booter_boot(db, config, &req, &tally, error);
	if (!runs)
		return NULL;
	for (guint i = 0; i < runs->len; i++) {
		const struct booter_run *r = runs->pdata[i];

		if (r->result.kind == CONSOLE_INFRA) {
			/* Nothing conclusive about this kernel: no tally to judge. */
			g_clear_pointer(&tally, g_ptr_array_unref);
			g_set_error(error, BOT_ERROR, BOT_ERROR_FAILED,
				    "boot of %.12s: infrastructure errors", build->commit);
			return NULL;
		}
	}
	return tally;
}

static const struct console_tally *tally_find(GPtrArray *tally, const char *fingerprint)
{
	for (guint i = 0; tally && i < tally->len; i++) {
		const struct console_tally *t = tally->pdata[i];

		if (strcmp(t->fingerprint, fingerprint) == 0)
			return t;
	}
	return NULL;
}

/*
 * Bisects a boot failure between @good and the job's head: each step is
 * built alone (skipped when it does not build) and booted as often as the
 * failure's rate at the head requires.
 */
static bool bisect_boot(struct db *db, struct repo *repo, const struct config *config,
			const struct job_row *job, const char *good,
			const struct console_tally *failure, struct bisect_outcome *out,
			GError **error)
{
	zd_autoptr(bisect) b = bisect_range(repo, good, job->commit,
					    (double)failure->failures / failure->runs, error);
	const char *next;
	unsigned runs;

	if (!b)
		return false;
	while ((next = bisect_next(b, &runs))) {
		g_autoptr(GPtrArray) built = build_alone(db, config, job, next, error);
		g_autoptr(GPtrArray) tally = NULL;
		g_autoptr(GError) boot_error = NULL;
		const struct console_tally *t;

		if (!built)
			return false;
		tally = boot_build(db, config, ((struct builder_result *)built->pdata[0])->build,
				   runs, &boot_error);
		if (!tally) {
			g_message("bisect %s: %.12s skip%s%s", failure->fingerprint, next,
				  boot_error ? ": " : "", boot_error ? boot_error->message : "");
			bisect_record(b, next, BISECT_SKIP, runs, 0);
			continue;
		}
		t = tally_find(tally, failure->fingerprint);
		g_message("bisect %s: %.12s %s (%u/%u)", failure->fingerprint, next,
			  t ? "bad" : "good", t ? t->failures : 0, runs);
		bisect_record(b, next, t ? BISECT_BAD : BISECT_GOOD, runs, t ? t->failures : 0);
	}
	bisect_outcome(b, out);
	return true;
}

/*
 * Boots a head that built, compares its failures with the comparison
 * base's (the last tested head, or the parent), and records each new one:
 * bisected when there is a range, else blamed on the head.
 */
static bool record_boots(struct db *db, struct repo *repo, const struct config *config,
			 const struct job_row *job, const struct builder_result *r,
			 const char *previous, GError **error)
{
	g_autoptr(GError) boot_error = NULL;
	g_autoptr(GPtrArray) head = NULL;
	g_autoptr(GPtrArray) base = NULL;

	head = boot_build(db, config, r->build, config->boot_repeat, &boot_error);
	if (!head) {
		if (boot_error)
			g_message("job %" G_GINT64_FORMAT ": %s", job->id, boot_error->message);
		return true;
	}
	if (head->len == 0)
		return true;
	if (r->parent_build)
		base = boot_build(db, config, r->parent_build, config->boot_repeat, NULL);
	for (guint i = 0; i < head->len; i++) {
		const struct console_tally *t = head->pdata[i];
		struct bisect_outcome o = { 0 };
		g_autoptr(GString) log = g_string_new(NULL);
		g_autofree char *kind = g_strdup_printf("boot-%s", diag_console_kind_name(t->kind));
		g_autofree char *reproduce = NULL;
		g_autofree char *details = NULL;
		struct finding_row f = { 0 };
		bool added;

		/* Also there before: not this push's doing. */
		if (tally_find(base, t->fingerprint))
			continue;
		if (previous) {
			if (!bisect_boot(db, repo, config, job, previous, t, &o, error))
				return false;
			if (!o.found)
				o.confidence = 0.0;
			for (guint s = 0; s < o.log->len; s++) {
				const struct bisect_step *st = o.log->pdata[s];

				g_string_append_printf(log, "%s %s %u/%u\n", st->id,
						       st->result == BISECT_BAD ? "bad" :
						       st->result == BISECT_GOOD ? "good" : "skip",
						       st->failures, st->runs);
			}
		} else {
			/*
			 * The head against its parent: the parent's clean boots make
			 * the head the culprit with the confidence they give for this
			 * failure's rate; without them (a root, or a parent that did
			 * not boot) nothing can be said.
			 */
			double p = (double)t->failures / t->runs;

			if (!r->parent_build)
				continue;
			o.confidence = base ? 1.0 - pow(1.0 - p, config->boot_repeat) : 0.0;
			o.found = o.confidence >= 0.95;
			if (o.found) {
				o.culprit = g_strdup(job->commit);
			} else {
				o.suspects = g_new0(char *, 3);
				o.suspects[0] = g_strdup(job->commit);
				o.suspects[1] = g_strdup(r->parent);
			}
		}
		f.culprit = o.found ? o.culprit : job->commit;
		reproduce = g_strdup_printf("zeroday build %s %s --target '%s' && zeroday boot BUILD-ID "
					    "--repeat %u", job->tree, f.culprit, job->target,
					    t->runs);
		details = g_strdup_printf("%u/%u boots at the head%s\n%s", t->failures, t->runs,
					  t->intermittent ? " (intermittent)" : "", log->str);
		f.target = job->target;
		f.kind = kind;
		f.fingerprint = t->fingerprint;
		f.title = t->title;
		f.details = o.found ? details : (o.suspects ? g_strjoinv(" ", o.suspects) : NULL);
		f.confidence = o.confidence;
		f.state = o.found ? NULL : (char *)"inconclusive";
		f.reproduce = reproduce;
		if (!db_tx_begin(db, error) || !db_finding_add(db, job->tree_id, &f, &added, error) ||
		    !db_tx_commit(db, error)) {
			db_tx_rollback(db);
			if (!o.found)
				g_free(f.details);
			bisect_outcome_clear(&o);
			return false;
		}
		if (added)
			g_message("finding: %.12s (%s) %s", f.culprit, job->target, t->title);
		if (!o.found)
			g_free(f.details);
		bisect_outcome_clear(&o);
	}
	return true;
}

/*
 * A head that built shows which open build findings of its tree and target
 * are gone: those whose culprit it contains and whose fingerprint its
 * build no longer has are fixed, by this head.
 */
static bool mark_fixed(struct db *db, struct repo *repo, const struct job_row *job,
		       const struct builder_result *r, GError **error)
{
	g_autoptr(GPtrArray) open = NULL;

	if (strcmp(r->build->status, "ok") != 0 && strcmp(r->build->status, "failed") != 0)
		return true;
	if (!db_tx_begin(db, error))
		return false;
	open = db_finding_open(db, job->tree_id, job->target, error);
	if (!open)
		goto fail;
	for (guint i = 0; i < open->len; i++) {
		const struct finding_row *f = open->pdata[i];
		g_autoptr(GError) unknown = NULL;
		bool present = false;

		if (!g_str_has_prefix(f->kind, "build-") || strcmp(f->culprit, job->commit) == 0 ||
		    repo_is_ancestor(repo, f->culprit, job->commit, &unknown) != 1)
			continue;
		for (guint j = 0; j < r->build->diags->len && !present; j++)
			present = strcmp(((struct diag *)r->build->diags->pdata[j])->fingerprint,
					 f->fingerprint) == 0;
		if (present)
			continue;
		if (!db_finding_fixed(db, f->id, job->commit, error))
			goto fail;
		g_message("fixed: %.12s %s, gone at %.12s", f->culprit, f->fingerprint, job->commit);
	}
	return db_tx_commit(db, error);
fail:
	db_tx_rollback(db);
	return false;
}

static bool run_job(struct db *db, struct repo *repo, const struct config *config,
		    const struct job_row *job, const char *owner, unsigned lease, GError **error)
{
	g_autofree char *git = config_git_path(config);
	g_autofree char *db_path = config_db_path(config);
	const char *targets[] = { job->target, NULL };
	struct builder_request req = {
		.source = job->tree, .objects_from = git, .rev = job->commit, .targets = targets,
	};
	struct renewal r = { .db_path = db_path, .job_id = job->id, .owner = owner, .lease = lease };
	g_autoptr(GPtrArray) results = NULL;
	g_autoptr(GError) build_error = NULL;
	g_autoptr(GError) lost = NULL;
	g_autofree char *previous = NULL;
	const char *result = "error";
	bool non_rebasable = false;
	GThread *renewer;

	g_mutex_init(&r.lock);
	g_cond_init(&r.done_cond);
	/*
	 * A non-rebasable tree is tested at its heads only: a head is compared
	 * with the last tested head, and what it adds is bisected in between.
	 */
	if (!db_tree_non_rebasable(db, job->tree_id, &non_rebasable, error))
		return false;
	if (non_rebasable) {
		previous = db_head_previous(db, job->tree_id, job->commit, error);
		if (!previous && error && *error)
			return false;
		req.against = previous;
	}
	renewer = g_thread_new("lease", renew_lease, &r);
	g_message("job %" G_GINT64_FORMAT ": build %s %.12s for %s (attempt %u)", job->id, job->tree,
		  job->commit, job->target, job->attempts);
	results = builder_run(db, config, &req, &build_error);
	if (results && previous &&
	    !record_bisected(db, repo, config, job, results->pdata[0], previous, &build_error))
		g_clear_pointer(&results, g_ptr_array_unref);
	/* Heads are booted too, [boot] repeat times. */
	if (results && job->priority == JOB_HEAD &&
	    !record_boots(db, repo, config, job, results->pdata[0], previous, &build_error))
		g_clear_pointer(&results, g_ptr_array_unref);
	g_mutex_lock(&r.lock);
	r.done = true;
	g_cond_signal(&r.done_cond);
	g_mutex_unlock(&r.lock);
	g_thread_join(renewer);
	g_mutex_clear(&r.lock);
	g_cond_clear(&r.done_cond);

	if (results) {
		const struct builder_result *br = results->pdata[0];

		result = build_verdict_name(br->verdict);
		if (job->priority == JOB_HEAD && !mark_fixed(db, repo, job, br, error))
			return false;
		if (!previous) {
			if (!db_tx_begin(db, error))
				return false;
			if (!record_findings(db, job, br, error)) {
				db_tx_rollback(db);
				return false;
			}
			if (!db_tx_commit(db, error))
				return false;
		}
	} else {
		/* A job that cannot run (bad target, no sandbox) is done, with why. */
		g_message("job %" G_GINT64_FORMAT ": %s", job->id, build_error->message);
	}
	if (!db_tx_begin(db, error))
		return false;
	if (!db_job_complete(db, job->id, owner, result, g_get_real_time() / G_USEC_PER_SEC,
			     &lost)) {
		db_tx_rollback(db);
		if (!g_error_matches(lost, BOT_ERROR, BOT_ERROR_BUSY)) {
			g_propagate_error(error, g_steal_pointer(&lost));
			return false;
		}
		/* The lease was lost: another worker runs the job; not ours to complete. */
		g_message("job %" G_GINT64_FORMAT ": %s", job->id, lost->message);
		return true;
	}
	return db_tx_commit(db, error);
}

static char *owner_prefix(void)
{
	return g_strdup_printf("%s:", g_get_host_name());
}

static bool owner_dead(const char *owner)
{
	const char *colon = owner ? strrchr(owner, ':') : NULL;
	gint64 pid = colon ? g_ascii_strtoll(colon + 1, NULL, 10) : 0;

	return pid > 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

bool sched_run(struct db *db, struct repo *repo, const struct config *config,
	       const struct sched_options *opts, volatile sig_atomic_t *stop, GError **error)
{
	g_autofree char *prefix = owner_prefix();
	g_autofree char *owner = g_strdup_printf("%s%d", prefix, (int)getpid());
	gint64 next_poll = 0;

	if (!db_tx_begin(db, error) || !db_job_release_dead(db, prefix, owner_dead, error) ||
	    !db_tx_commit(db, error)) {
		db_tx_rollback(db);
		return false;
	}
	while (!*stop) {
		gint64 now = g_get_real_time() / G_USEC_PER_SEC;
		struct job_row *job = NULL;

		if (now >= next_poll) {
			g_autoptr(GError) poll_error = NULL;
			g_autoptr(GPtrArray) polled = watch_poll(db, repo, config, NULL, &poll_error);

			if (!polled)
				g_message("poll: %s", poll_error->message);
			if (!sched_enqueue_pending(db, config, error))
				return false;
			next_poll = now + opts->poll_interval;
		}
		if (!db_job_claim(db, owner, now, opts->lease, &job, error))
			return false;
		if (job) {
			bool ok = run_job(db, repo, config, job, owner, opts->lease, error);

			job_row_free(job);
			if (!ok)
				return false;
			continue;
		}
		if (opts->once)
			break;
		g_usleep(G_USEC_PER_SEC);
	}
	return true;
}
