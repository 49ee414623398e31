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

/* The accepted chance that one "good" bisection step is wrong. */
#define MAX_ERROR 0.001
/* Below this, a culprit is not named: the outcome is a range. */
#define MIN_CONFIDENCE 0.95
/* Boots of a head that shows a new boot failure, to measure its rate. */
#define RATE_SAMPLE 10
/* The longest wait, in seconds, before the store is tried again after a temporary failure. */
#define STORE_PAUSE_MAX 60

/* The daemon's shared state. */
struct sched {
	const struct config *config;
	const struct sched_options *opts;
	volatile sig_atomic_t *stop;
	char *db_path;
	char *git_path;
	GMutex lock;
	GCond wake;   /* new jobs were queued */
	GError *error; /* the first store failure: every worker stops */
	struct job_backoff backoff; /* of jobs that failed for infrastructure */
};

/* One worker of the pool: its own store and repository handles. */
struct worker {
	struct sched *s;
	char *owner; /* HOST:PID.N, for leases */
	struct db *db;
	struct repo *repo;
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

static enum finding_kind finding_kind(const struct diag *d)
{
	return d->kind == DIAG_ERROR ? FINDING_BUILD_ERROR : FINDING_BUILD_WARNING;
}

static char *diag_title(const struct diag *d)
{
	return g_strdup_printf("%s%s%s", d->file, *d->file ? ": " : "", d->message);
}

static char *diag_details(const struct diag *d)
{
	return d->line ? g_strdup_printf("%s:%u:%u: %s: %s", d->file, d->line, d->column,
					 diag_kind_name(d->kind), d->message)
		       : g_strdup_printf("%s: %s", diag_kind_name(d->kind), d->message);
}

static bool store_finding(struct worker *w, const struct job_row *job, const struct finding_row *f,
			  GError **error)
{
	bool added;

	if (!db_tx_begin(w->db, error))
		return false;
	if (!db_finding_add(w->db, job->tree_id, f, &added, error)) {
		db_tx_rollback(w->db);
		return false;
	}
	if (!db_tx_commit(w->db, error))
		return false;
	if (added)
		g_message("finding: %.12s (%s) %s%s", f->culprit, job->target, f->title,
			  f->state == FINDING_INCONCLUSIVE ? ": inconclusive" : "");
	return true;
}

/* Records what a build verdict says a commit introduced, against its parent. */
static bool record_findings(struct worker *w, const struct job_row *job,
			    const struct builder_result *r, GError **error)
{
	if (r->verdict != VERDICT_NEW_DIAGNOSTICS && r->verdict != VERDICT_FAIL_NEW_ERROR)
		return true;
	/* A root commit has nothing to be compared with: blaming it would be a false alarm. */
	if (!r->parent)
		return true;
	for (guint i = 0; i < r->fresh->len; i++) {
		const struct diag *d = r->fresh->pdata[i];
		g_autofree char *title = diag_title(d);
		g_autofree char *details = diag_details(d);
		g_autofree char *reproduce = g_strdup_printf("zeroday build %s %s --target '%s'",
							     job->tree, job->commit, job->target);
		g_autofree char *log = g_strdup_printf("%s good (parent)\n%s bad\n", r->parent,
						       job->commit);
		struct finding_row f = {
			.culprit = job->commit, .target = job->target, .kind = finding_kind(d),
			.fingerprint = d->fingerprint, .title = title, .details = details,
			.confidence = 1.0, .reproduce = reproduce, .bisect_log = log,
		};

		if (!store_finding(w, job, &f, error))
			return false;
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
 * A bisection of what @bad has and none of @good has (NULL-terminated),
 * over that part of the DAG.
 */
static struct bisect *bisect_range(struct repo *repo, const char *const *good, const char *bad,
				   double p_show, GError **error)
{
	g_autofree struct bisect_commit *commits = NULL;
	g_autoptr(GPtrArray) walked = NULL;
	bool truncated;

	walked = repo_walk_new(repo, bad, good, 100000, &truncated, error);
	if (!walked)
		return NULL;
	commits = g_new0(struct bisect_commit, walked->len);
	for (guint i = 0; i < walked->len; i++) {
		const struct repo_commit *c = walked->pdata[i];

		commits[i].id = c->oid;
		commits[i].parents = (const char *const *)c->parent_ids;
	}
	/* bisect_new copies what it keeps. */
	return bisect_new(commits, walked->len, good, bad, p_show, MAX_ERROR, MIN_CONFIDENCE,
			  error);
}

/* Builds @commit alone (no comparison) for the job's target; returns its stored build. */
static GPtrArray *build_alone(struct worker *w, const struct job_row *job, const char *commit,
			      GError **error)
{
	const char *targets[] = { job->target, NULL };
	struct builder_request req = {
		.source = job->tree, .objects_from = w->s->git_path, .rev = commit,
		.targets = targets, .alone = true,
	};

	return builder_run(w->db, w->s->config, &req, error);
}

/*
 * Boots a stored build's image @repeat times, counting the boots already
 * stored for it; NULL tally (and no error) when it has no image.
 */
static GPtrArray *boot_build(struct worker *w, const struct build_row *build, unsigned repeat,
			     GError **error)
{
	struct booter_request req = {
		.image = build->image_path, .build_id = build->id, .repeat = repeat, .reuse = true,
	};
	g_autoptr(GPtrArray) runs = NULL;
	GPtrArray *tally = NULL;

	if (!build->image_path || build->status != BUILD_OK)
		return NULL;
	runs = booter_boot(w->db, w->s->config, &req, &tally, error);
	if (!runs)
		return NULL;
	for (guint i = 0; i < runs->len; i++) {
		const struct booter_run *r = runs->pdata[i];

		if (r->result.kind == CONSOLE_INFRA) {
			/* Nothing conclusive about this kernel: no tally to judge. */
			g_clear_pointer(&tally, g_ptr_array_unref);
			g_set_error(error, BOT_ERROR, BOT_ERROR_TEMPORARY,
				    "infra-error: boot of %.12s on %s: %s", build->commit,
				    r->host ? r->host : "?",
				    r->result.title ? r->result.title : "infrastructure error");
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

/* What a bisection step asks of a commit: does it show this failure? */
struct probe {
	bool boot;               /* a boot failure, else a build diagnostic */
	const char *fingerprint;
	double rate;             /* the share of runs that show it where it was found */
};

static const char *result_name(enum bisect_result r)
{
	return r == BISECT_BAD ? "bad" : r == BISECT_GOOD ? "good" : "skip";
}

/*
 * Whether a stored build is an infra-error: then it says nothing of its
 * commit, and @error says why (BOT_ERROR_TEMPORARY).
 */
static bool infra_build(const struct build_row *row, GError **error)
{
	if (row->status != BUILD_INFRA)
		return false;
	g_set_error(error, BOT_ERROR, BOT_ERROR_TEMPORARY, "infra-error: build of %.12s: %s",
		    row->commit, row->reason ? row->reason : "infrastructure error");
	return true;
}

/*
 * Tests @commit for @probe, @runs times for a boot failure: bad when a run
 * shows the fingerprint, good when it builds (and boots) clean of it, skip
 * when that cannot be told (it fails to build, or has no image to boot).
 * A different failure does not count as bad. False when the build cannot
 * be run at all (bad target, store failure), and, with
 * BOT_ERROR_TEMPORARY, when its build or boots hit infrastructure errors:
 * those say nothing of the commit, and the job is retried rather than
 * the step skipped.
 */
static bool probe_commit(struct worker *w, const struct job_row *job, const struct probe *probe,
			 const char *commit, unsigned runs, enum bisect_result *result,
			 unsigned *failures, GError **error)
{
	g_autoptr(GPtrArray) built = build_alone(w, job, commit, error);
	g_autoptr(GPtrArray) tally = NULL;
	g_autoptr(GError) boot_error = NULL;
	const struct build_row *row;
	const struct console_tally *t;

	*failures = 0;
	if (!built)
		return false;
	row = ((struct builder_result *)built->pdata[0])->build;
	if (infra_build(row, error))
		return false;
	if (!probe->boot) {
		bool shows = has_fingerprint(row, probe->fingerprint);

		*result = shows ? BISECT_BAD
				: row->status == BUILD_OK ? BISECT_GOOD : BISECT_SKIP;
		*failures = shows;
		return true;
	}
	tally = boot_build(w, row, runs, &boot_error);
	if (!tally && boot_error) {
		g_propagate_error(error, g_steal_pointer(&boot_error));
		return false;
	}
	if (!tally) {
		*result = BISECT_SKIP;
		return true;
	}
	t = tally_find(tally, probe->fingerprint);
	*result = t ? BISECT_BAD : BISECT_GOOD;
	*failures = t ? t->failures : 0;
	return true;
}

/*
 * Where the culprit reverts cleanly on the head, the head with that
 * revert must be clean of the failure; if it is not, the culprit is not
 * named.
 */
static bool verify_revert(struct worker *w, const struct job_row *job, const struct probe *probe,
			  struct bisect_outcome *out, GString *log, GError **error)
{
	unsigned runs = probe->boot ? bisect_runs_per_step(probe->rate, MAX_ERROR) : 1;
	g_autofree char *reverted = NULL;
	g_autoptr(GError) why = NULL;
	enum bisect_result result;
	unsigned failures;
	int rc;

	if (strcmp(out->culprit, job->commit) == 0)
		return true; /* the head itself: its parent was tested */
	rc = repo_revert_on(w->repo, job->commit, out->culprit, &reverted, &why);
	if (rc < 0) {
		g_string_append_printf(log, "revert on the head: %s; not checked\n", why->message);
		return true;
	}
	if (rc == 0) {
		g_string_append(log, "revert on the head: does not apply cleanly; not checked\n");
		return true;
	}
	if (!probe_commit(w, job, probe, reverted, runs, &result, &failures, error))
		return false;
	g_string_append_printf(log, "%s %s %u/%u (the head with the culprit reverted)\n", reverted,
			       result_name(result), failures, runs);
	g_message("verify %.12s: the head with it reverted is %s", out->culprit,
		  result_name(result));
	if (result == BISECT_BAD) {
		g_string_append(log, "the head still shows it without the culprit: not named\n");
		out->found = false;
		out->confidence = 0.0;
		out->suspects = g_new0(char *, 2);
		out->suspects[0] = g_strdup(out->culprit);
	}
	return true;
}

/*
 * Bisects @probe's failure between @good and the job's commit, which shows
 * it, appending each step to @log. As git bisect does, a good commit that
 * is not an ancestor of the bad one says nothing of their common history:
 * the merge bases are tested first, and a bad one ends the bisection (the
 * failure predates the range). A culprit found is then checked by
 * reverting it on the head.
 */
static bool bisect_culprit(struct worker *w, const struct job_row *job, const struct probe *probe,
			   const char *good, struct bisect_outcome *out, GString *log,
			   GError **error)
{
	unsigned runs = probe->boot ? bisect_runs_per_step(probe->rate, MAX_ERROR) : 1;
	/* A merge base taken as good is as sure as a verified step. */
	unsigned base_runs = probe->boot ? 2 * runs : 1;
	g_autoptr(GPtrArray) goods = g_ptr_array_new_with_free_func(g_free);
	zd_autoptr(bisect) b = NULL;
	const char *next;
	int related;

	g_ptr_array_add(goods, g_strdup(good));
	related = repo_is_ancestor(w->repo, good, job->commit, error);
	if (related < 0)
		return false;
	if (!related) {
		g_auto(GStrv) bases = repo_merge_bases(w->repo, good, job->commit, error);

		if (!bases)
			return false;
		for (char **base = bases; *base; base++) {
			enum bisect_result result;
			unsigned failures;

			if (!probe_commit(w, job, probe, *base, base_runs, &result, &failures, error))
				return false;
			g_string_append_printf(log, "%s %s %u/%u (merge base)\n", *base,
					       result_name(result), failures, base_runs);
			if (result != BISECT_GOOD) {
				g_string_append(log, result == BISECT_BAD
					? "the merge base shows it too: it predates this range\n"
					: "the merge base could not be tested\n");
				out->suspects = g_new0(char *, 1);
				return true;
			}
			g_ptr_array_add(goods, g_strdup(*base));
		}
	}
	g_ptr_array_add(goods, NULL);
	b = bisect_range(w->repo, (const char *const *)goods->pdata, job->commit, probe->rate,
			 error);
	if (!b)
		return false;
	while ((next = bisect_next(b, &runs))) {
		enum bisect_result result;
		unsigned failures;

		if (!probe_commit(w, job, probe, next, runs, &result, &failures, error))
			return false;
		g_message("bisect %s: %.12s %s (%u/%u)", probe->fingerprint, next,
			  result_name(result), failures, runs);
		bisect_record(b, next, result, runs, failures);
	}
	bisect_outcome(b, out);
	for (guint s = 0; s < out->log->len; s++) {
		const struct bisect_step *st = out->log->pdata[s];

		g_string_append_printf(log, "%s %s %u/%u\n", st->id, result_name(st->result),
				       st->failures, st->runs);
	}
	if (!out->found)
		return true;
	return verify_revert(w, job, probe, out, log, error);
}

/*
 * Stores the finding a bisection leads to: its culprit, or the head when
 * inconclusive. Clears @o.
 */
static bool store_bisected(struct worker *w, const struct job_row *job, struct finding_row *f,
			   struct bisect_outcome *o, GString *log, GError **error)
{
	bool ok;

	if (!o->found) {
		g_autofree char *suspects = o->suspects ? g_strjoinv(" ", o->suspects) : NULL;

		g_string_append_printf(log, "inconclusive%s%s\n", suspects && *suspects ?
				       ": one of " : "", suspects ? suspects : "");
	}
	f->culprit = o->found ? o->culprit : job->commit;
	f->confidence = o->found ? o->confidence : 0.0;
	f->state = o->found ? FINDING_OPEN : FINDING_INCONCLUSIVE;
	f->bisect_log = log->str;
	ok = store_finding(w, job, f, error);
	bisect_outcome_clear(o);
	return ok;
}

/* Records the new build diagnostics of a head, each bisected from @good. */
static bool record_bisected(struct worker *w, const struct job_row *job,
			    const struct builder_result *r, const char *good, GError **error)
{
	g_autoptr(GHashTable) done = g_hash_table_new(g_str_hash, g_str_equal);

	if (r->verdict != VERDICT_NEW_DIAGNOSTICS && r->verdict != VERDICT_FAIL_NEW_ERROR)
		return true;
	for (guint i = 0; i < r->fresh->len; i++) {
		const struct diag *d = r->fresh->pdata[i];
		struct probe probe = { .fingerprint = d->fingerprint, .rate = 1.0 };
		struct bisect_outcome o = { 0 };
		g_autoptr(GString) log = g_string_new(NULL);
		g_autofree char *title = diag_title(d);
		g_autofree char *details = diag_details(d);
		g_autofree char *reproduce = NULL;
		struct finding_row f = {
			.target = job->target, .kind = finding_kind(d),
			.fingerprint = d->fingerprint, .title = title, .details = details,
		};

		if (!g_hash_table_add(done, d->fingerprint))
			continue;
		if (!bisect_culprit(w, job, &probe, good, &o, log, error)) {
			bisect_outcome_clear(&o);
			return false;
		}
		reproduce = g_strdup_printf("zeroday build %s %s --target '%s'", job->tree,
					    o.found ? o.culprit : job->commit, job->target);
		f.reproduce = reproduce;
		if (!store_bisected(w, job, &f, &o, log, error))
			return false;
	}
	return true;
}

/* Does a tally hold a failure that @base does not? */
static bool has_new_failure(GPtrArray *head, GPtrArray *base)
{
	for (guint i = 0; head && i < head->len; i++) {
		if (!tally_find(base, ((const struct console_tally *)head->pdata[i])->fingerprint))
			return true;
	}
	return false;
}

/*
 * Boots a head that built, [boot] repeat times, compares its failures
 * with those of the comparison base (the last tested head, else the
 * parent), and records each new one. A new failure's rate is measured
 * over RATE_SAMPLE boots of the head and taken at its lower bound, so
 * that a failure seen twice in two boots is not bisected as if it always
 * showed. With a last tested head, the range is bisected; without one,
 * the head is blamed when enough clean boots of its parent give the
 * confidence. *@tally_out receives the head's tally (NULL when it has no
 * image). Boots that hit infrastructure errors fail it (BOT_ERROR_TEMPORARY),
 * so that the job is retried: they are no verdict.
 */
static bool record_boots(struct worker *w, const struct job_row *job,
			 const struct builder_result *r, const char *previous,
			 GPtrArray **tally_out, GError **error)
{
	const struct config *config = w->s->config;
	const char *base_commit = previous ? previous : r->parent;
	g_autoptr(GError) boot_error = NULL;
	g_autoptr(GPtrArray) head = NULL;
	g_autoptr(GPtrArray) base_built = NULL;
	g_autoptr(GPtrArray) base = NULL;
	const struct build_row *base_build = NULL;

	*tally_out = NULL;
	head = boot_build(w, r->build, config->boot_repeat, error);
	if (!head)
		return !error || !*error;
	*tally_out = g_ptr_array_ref(head);
	if (head->len == 0 || !base_commit)
		return true;
	base_built = build_alone(w, job, base_commit, error);
	if (!base_built)
		return false;
	base_build = ((struct builder_result *)base_built->pdata[0])->build;
	if (infra_build(base_build, error))
		return false;
	base = boot_build(w, base_build, config->boot_repeat, &boot_error);
	if (!base && boot_error) {
		g_propagate_error(error, g_steal_pointer(&boot_error));
		return false;
	}
	if (!has_new_failure(head, base))
		return true;
	if (config->boot_repeat < RATE_SAMPLE) {
		g_autoptr(GPtrArray) more = boot_build(w, r->build, RATE_SAMPLE, error);

		if (!more)
			return false; /* it booted before: infrastructure now */
		g_clear_pointer(&head, g_ptr_array_unref);
		head = g_steal_pointer(&more);
		g_ptr_array_unref(*tally_out);
		*tally_out = g_ptr_array_ref(head);
	}
	for (guint i = 0; i < head->len; i++) {
		const struct console_tally *t = head->pdata[i];
		struct probe probe = {
			.boot = true, .fingerprint = t->fingerprint,
			.rate = bisect_rate_lower_bound(t->failures, t->runs),
		};
		struct bisect_outcome o = { 0 };
		g_autoptr(GString) log = g_string_new(NULL);
		g_autofree char *reproduce = NULL;
		g_autofree char *details = NULL;
		struct finding_row f = {
			.target = job->target, .kind = FINDING_BOOT, .console = t->kind,
			.fingerprint = t->fingerprint, .title = t->title, .rate = probe.rate,
		};

		/* Also there before: not this push's doing. */
		if (tally_find(base, t->fingerprint))
			continue;
		g_string_append_printf(log, "%s bad %u/%u (head)\n", job->commit, t->failures,
				       t->runs);
		if (previous) {
			/*
			 * The bisection takes the last tested head as good: make
			 * that as sure as a verified step (twice a step's boots).
			 */
			unsigned need = 2 * bisect_runs_per_step(probe.rate, MAX_ERROR);
			g_autoptr(GPtrArray) before = base ? boot_build(w, base_build, need, &boot_error)
							   : NULL;

			if (boot_error) {
				g_propagate_error(error, g_steal_pointer(&boot_error));
				return false;
			}

			if (tally_find(before, t->fingerprint))
				continue; /* more boots of the last head show it too */
			g_string_append_printf(log, before ? "%s good 0/%u (last tested head)\n"
						: "%s skip 0/0 (last tested head: taken as good)\n",
					       previous, need);
			if (!bisect_culprit(w, job, &probe, previous, &o, log, error)) {
				bisect_outcome_clear(&o);
				return false;
			}
			/*
			 * An error left in that "good" weighs like any step's. (A
			 * last head that did not build or boot is taken as good,
			 * as git bisect takes a good mark; the culprit's parents
			 * inside the range are still verified.)
			 */
			if (o.found && before)
				o.confidence *= 1.0 - pow(1.0 - probe.rate, need);
			if (o.found && o.confidence < MIN_CONFIDENCE) {
				o.found = false;
				o.suspects = g_new0(char *, 2);
				o.suspects[0] = g_steal_pointer(&o.culprit);
			}
		} else {
			/*
			 * The head against its parent: clean boots of the parent, as
			 * many as this failure's rate needs, make the head the
			 * culprit; a parent that did not boot says nothing.
			 */
			unsigned need = bisect_runs_per_step(probe.rate, 1.0 - MIN_CONFIDENCE);
			g_autoptr(GPtrArray) parent = base ? boot_build(w, base_build,
									MAX(need, config->boot_repeat),
									&boot_error) : NULL;
			const struct console_tally *seen = tally_find(parent, t->fingerprint);
			unsigned runs = !parent ? 0 : parent->len == 0 ? MAX(need, config->boot_repeat)
				: ((const struct console_tally *)parent->pdata[0])->runs;

			if (boot_error) {
				g_propagate_error(error, g_steal_pointer(&boot_error));
				return false;
			}
			if (seen)
				continue; /* more boots of the parent show it too */
			o.confidence = parent ? 1.0 - pow(1.0 - probe.rate, runs) : 0.0;
			o.found = o.confidence >= MIN_CONFIDENCE;
			g_string_append_printf(log, "%s %s 0/%u (parent)\n", r->parent,
					       parent ? "good" : "skip", runs);
			if (o.found) {
				o.culprit = g_strdup(job->commit);
			} else {
				o.suspects = g_new0(char *, 3);
				o.suspects[0] = g_strdup(job->commit);
				o.suspects[1] = g_strdup(r->parent);
			}
		}
		reproduce = g_strdup_printf("zeroday build %s %s --target '%s' && zeroday boot BUILD-ID "
					    "--repeat %u", job->tree, o.found ? o.culprit : job->commit,
					    job->target, bisect_runs_per_step(probe.rate, MAX_ERROR));
		details = g_strdup_printf("%u/%u boots at the head%s\n%s", t->failures, t->runs,
					  t->intermittent ? " (intermittent)" : "",
					  t->excerpt ? t->excerpt : "");
		f.details = details;
		f.reproduce = reproduce;
		if (!store_bisected(w, job, &f, &o, log, error))
			return false;
	}
	return true;
}

/*
 * Finds the commit that fixed build finding @f between its culprit and
 * the job's commit, which no longer shows it: a bisection in reverse,
 * where "bad" means fixed. A commit that does not contain the culprit
 * cannot show it and counts as not fixed. Returns the fixing commit, or
 * NULL (inconclusive, or a store failure with @error set).
 */
static char *bisect_fix(struct worker *w, const struct job_row *job, const struct finding_row *f,
			GError **error)
{
	const char *good[] = { f->culprit, NULL };
	struct probe probe = { .fingerprint = f->fingerprint, .rate = 1.0 };
	zd_autoptr(bisect) b = bisect_range(w->repo, good, job->commit, 1.0, error);
	struct bisect_outcome o = { 0 };
	const char *next;
	unsigned runs;
	char *fix;

	if (!b)
		return NULL;
	while ((next = bisect_next(b, &runs))) {
		enum bisect_result result = BISECT_GOOD;
		unsigned failures = 0;
		int contains = repo_is_ancestor(w->repo, f->culprit, next, error);

		if (contains < 0)
			return NULL;
		if (contains && !probe_commit(w, job, &probe, next, 1, &result, &failures, error))
			return NULL;
		/* Inverted: still showing it is the old state, clean of it the new one. */
		if (contains)
			result = result == BISECT_BAD ? BISECT_GOOD
			       : result == BISECT_GOOD ? BISECT_BAD : BISECT_SKIP;
		g_message("bisect fix of %s: %.12s %s", f->fingerprint, next,
			  result == BISECT_BAD ? "fixed" : result == BISECT_GOOD ? "not fixed" : "skip");
		bisect_record(b, next, result, 1, result == BISECT_BAD);
	}
	bisect_outcome(b, &o);
	fix = o.found ? g_steal_pointer(&o.culprit) : NULL;
	bisect_outcome_clear(&o);
	return fix;
}

/*
 * A commit that contains an open finding's culprit and no longer shows
 * its fingerprint fixes it. Build findings need a clean build (a failed
 * one may simply not have got that far), and their fixing commit is
 * bisected; boot findings need clean boots enough to have shown the
 * failure at its rate (95%), and are fixed by the head seen without them.
 */
static bool mark_fixed(struct worker *w, const struct job_row *job, const struct builder_result *r,
		       GPtrArray *boots, GError **error)
{
	g_autoptr(GPtrArray) open = db_finding_open(w->db, job->tree_id, job->target, error);

	if (!open)
		return false;
	for (guint i = 0; i < open->len; i++) {
		const struct finding_row *f = open->pdata[i];
		bool boot = f->kind == FINDING_BOOT;
		g_autoptr(GError) unknown = NULL;
		g_autofree char *fix = NULL;

		if (strcmp(f->culprit, job->commit) == 0 ||
		    repo_is_ancestor(w->repo, f->culprit, job->commit, &unknown) != 1)
			continue;
		if (boot) {
			/* Clean boots enough that the failure, at its rate, would have shown. */
			unsigned need = bisect_runs_per_step(f->rate, 1.0 - MIN_CONFIDENCE);
			g_autoptr(GPtrArray) more = NULL;

			if (!boots || tally_find(boots, f->fingerprint))
				continue;
			if (need > w->s->config->boot_repeat) {
				more = boot_build(w, r->build, need, NULL);
				if (!more || tally_find(more, f->fingerprint))
					continue;
			}
			fix = g_strdup(job->commit);
		} else {
			if (r->build->status != BUILD_OK ||
			    has_fingerprint(r->build, f->fingerprint))
				continue;
			fix = bisect_fix(w, job, f, error);
			if (!fix && error && *error)
				return false;
			if (!fix)
				fix = g_strdup(job->commit);
		}
		if (!db_tx_begin(w->db, error))
			return false;
		if (!db_finding_fixed(w->db, f->id, fix, error)) {
			db_tx_rollback(w->db);
			return false;
		}
		if (!db_tx_commit(w->db, error))
			return false;
		g_message("fixed: %.12s %s, by %.12s", f->culprit, f->fingerprint, fix);
	}
	return true;
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

/*
 * The causes a retry cannot fix: a job that fails for one ends in error
 * at once. Every other failure is taken for infrastructure, and retried
 * with backoff up to the limit of attempts.
 */
static const struct {
	GQuark (*domain)(void);
	int code;
} permanent_causes[] = {
	{ engine_error_quark, ENGINE_ERROR_INVALID }, /* a bad target spec, hostile input */
	{ engine_error_quark, ENGINE_ERROR_LIMIT },   /* the input is over a size limit */
	{ bot_error_quark, BOT_ERROR_NOT_FOUND },     /* the commit is no longer stored */
	{ bot_error_quark, BOT_ERROR_CONFIG },        /* zeroday.conf, not the machine */
	{ bot_error_quark, BOT_ERROR_SCHEMA },
	{ bot_error_quark, BOT_ERROR_USAGE },
};

static bool permanent_cause(const GError *cause)
{
	for (size_t i = 0; i < G_N_ELEMENTS(permanent_causes); i++) {
		if (g_error_matches(cause, permanent_causes[i].domain(), permanent_causes[i].code))
			return true;
	}
	return false;
}

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
 * is NULL; else done in error with @cause when a retry cannot fix it;
 * else queued again for a later attempt (db_job_retry()). A lease lost to
 * another worker is logged, not an error. While the store fails
 * temporarily (disk full), the daemon logs it and tries again with
 * backoff; with --once, or for any other store failure, false.
 */
static bool finish_job(struct worker *w, const struct job_row *job, enum job_result result,
		       const GError *cause, GError **error)
{
	struct sched *s = w->s;
	bool permanent = cause && permanent_cause(cause);
	unsigned pause = 0;

	for (;;) {
		g_autoptr(GError) local = NULL;
		gint64 now = g_get_real_time() / G_USEC_PER_SEC;
		gint64 not_before = 0;
		bool gave_up = false;
		bool ok = db_tx_begin(w->db, &local);

		if (ok && !cause)
			ok = db_job_complete(w->db, job->id, w->owner, result, NULL, now, &local);
		else if (ok && permanent)
			ok = db_job_complete(w->db, job->id, w->owner, JOB_RESULT_ERROR, cause->message,
					     now, &local);
		else if (ok)
			ok = db_job_retry(w->db, job->id, w->owner, now, cause->message, &s->backoff,
					  &gave_up, &not_before, &local);
		if (ok)
			ok = db_tx_commit(w->db, &local);
		if (ok) {
			g_autofree char *when = not_before ? format_when(not_before) : NULL;

			if (permanent)
				g_message("job %" G_GINT64_FORMAT ": error (no retry): %s", job->id,
					  cause->message);
			else if (gave_up)
				g_message("job %" G_GINT64_FORMAT ": error: gave up after %u attempts: %s",
					  job->id, s->backoff.limit, cause->message);
			else if (cause)
				g_message("job %" G_GINT64_FORMAT ": attempt %u failed, retry at %s: %s",
					  job->id, job->attempts, when, cause->message);
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

/* Sets @cause from an infra-error verdict: which build, and why. */
static void infra_cause(GError **cause, const struct builder_result *r)
{
	const struct build_row *b = r->build->status == BUILD_INFRA || !r->parent_build
		? r->build : r->parent_build;

	g_set_error(cause, BOT_ERROR, BOT_ERROR_TEMPORARY, "infra-error: build of %.12s%s: %s",
		    b->commit, b == r->parent_build ? " (the parent)" : "",
		    b->reason ? b->reason : "infrastructure error");
}

/*
 * Runs one build job: the commit against its parent (or, for a
 * non-rebasable tree, against the last tested head, with what is new
 * bisected in between); a head is booted as well. Then the findings it
 * fixes, and the job finished under its lease (finish_job()): with its
 * verdict, or with the cause it could not be run for. Infrastructure is
 * never a verdict: an infra-error build, boots that hit infrastructure
 * errors and any other failure that is not a permanent cause put the job
 * back in the queue for a later attempt. False only when the store fails
 * (see finish_job()).
 */
static bool run_job(struct worker *w, const struct job_row *job, GError **error)
{
	const char *targets[] = { job->target, NULL };
	struct builder_request req = {
		.source = job->tree, .objects_from = w->s->git_path, .rev = job->commit,
		.targets = targets,
	};
	struct renewal r = {
		.db_path = w->s->db_path, .job_id = job->id, .owner = w->owner,
		.lease = w->s->opts->lease,
	};
	g_autoptr(GPtrArray) results = NULL;
	g_autoptr(GPtrArray) boots = NULL;
	g_autoptr(GError) cause = NULL;
	g_autofree char *previous = NULL;
	enum job_result result = JOB_RESULT_NONE;
	bool non_rebasable = false;
	GThread *renewer;

	g_message("job %" G_GINT64_FORMAT ": build %s %.12s for %s (attempt %u, %s)", job->id,
		  job->tree, job->commit, job->target, job->attempts, w->owner);
	if (!repo_has_commit(w->repo, job->commit)) {
		g_set_error(&cause, BOT_ERROR, BOT_ERROR_NOT_FOUND,
			    "commit %s is no longer in the object store", job->commit);
		goto finish;
	}
	if (!db_tree_non_rebasable(w->db, job->tree_id, &non_rebasable, &cause))
		goto finish;
	/* The head this one replaced, when it was tested: a push's range starts there. */
	if (job->priority == JOB_HEAD) {
		previous = db_head_previous(w->db, job->tree_id, job->commit, &cause);
		if (cause)
			goto finish;
	}
	if (non_rebasable)
		req.against = previous;
	renewer = renewal_start(&r);
	results = builder_run(w->db, w->s->config, &req, &cause);
	if (results) {
		const struct builder_result *br = results->pdata[0];
		bool ok;

		if (br->verdict == VERDICT_INFRA) {
			infra_cause(&cause, br);
		} else {
			ok = non_rebasable && previous ? record_bisected(w, job, br, previous, &cause)
						       : record_findings(w, job, br, &cause);
			/* Heads are booted too, [boot] repeat times. */
			if (ok && job->priority == JOB_HEAD)
				ok = record_boots(w, job, br, previous, &boots, &cause);
			if (ok)
				ok = mark_fixed(w, job, br, boots, &cause);
			if (ok)
				result = db_job_result_of_verdict(br->verdict);
		}
	}
	renewal_stop(&r, renewer);
finish:
	g_assert(result != JOB_RESULT_NONE || cause);
	return finish_job(w, job, result, cause, error);
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
		bool ok = true;

		if (!w->db)
			w->db = db_open(s->db_path, &error);
		if (w->db && !w->repo)
			w->repo = repo_open(s->git_path, &error);
		ok = w->repo && db_job_claim(w->db, w->owner, now, s->opts->lease, &job, &error);
		if (ok && job) {
			ok = run_job(w, job, &error);
			job_row_free(job);
		} else if (ok && s->opts->once) {
			ok = db_job_counts(w->db, now, &queued, &waiting, &running, &done, &error);
			if (ok && queued == 0)
				break;
		}
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
		if (job)
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

static bool poll_and_enqueue(struct sched *s, struct db *db, struct repo *repo, GError **error)
{
	g_autoptr(GError) poll_error = NULL;
	g_autoptr(GPtrArray) polled = watch_poll(db, repo, s->config, NULL, &poll_error);

	if (!polled)
		g_message("poll: %s", poll_error->message);
	if (!sched_enqueue_pending(db, s->config, error))
		return false;
	g_mutex_lock(&s->lock);
	g_cond_broadcast(&s->wake);
	g_mutex_unlock(&s->lock);
	return true;
}

/* With --once: what is left waiting for its retry time, logged. */
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
	return true;
}

bool sched_run(struct db *db, struct repo *repo, const struct config *config,
	       const struct sched_options *opts, volatile sig_atomic_t *stop, GError **error)
{
	g_autofree char *prefix = owner_prefix();
	unsigned n = opts->workers ? opts->workers : config->workers;
	g_autofree struct worker *workers = g_new0(struct worker, n);
	g_autofree GThread **threads = g_new0(GThread *, n);
	struct sched s = {
		.config = config, .opts = opts, .stop = stop,
		.db_path = config_db_path(config), .git_path = config_git_path(config),
		.backoff = JOB_BACKOFF_INIT,
	};
	GError *local = NULL;
	unsigned poll_pause = 0;
	gint64 next_poll;
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
	g_message("running %u worker%s", n, n == 1 ? "" : "s");
	for (unsigned i = 0; i < n; i++) {
		workers[i].s = &s;
		workers[i].owner = g_strdup_printf("%s%d.%u", prefix, (int)getpid(), i + 1);
		threads[i] = g_thread_new("worker", worker_main, &workers[i]);
	}
	/* The main thread polls; the workers run the jobs. */
	while (!opts->once && !stopping(&s)) {
		gint64 now = g_get_real_time() / G_USEC_PER_SEC;

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
	if (s.error) {
		g_propagate_error(error, s.error);
		ok = false;
	} else if (opts->once && !report_waiting(db, error)) {
		ok = false;
	}
out:
	g_free(s.db_path);
	g_free(s.git_path);
	g_mutex_clear(&s.lock);
	g_cond_clear(&s.wake);
	return ok;
}
