/*
 * Culprits: see culprit.h.
 *
 * A bisection here is a loop: engine/bisect.c hands out a step, a probe
 * runs it (a build, or boots of a built kernel), the result goes back.
 * The rules (how many runs, which commit, when to stop, what the outcome
 * is) are all the engine's.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <string.h>

#include "bot/bot.h"
#include "bot/lab/booter.h"
#include "bot/lab/culprit.h"
#include "bot/lab/probe.h"
#include "bot/mailroom/outbox.h"
#include "engine/bisect.h"
#include "engine/decode.h"
#include "engine/diag.h"

/* The walk of a bisection range stops here: past it, the range is inconclusive. */
#define RANGE_MAX 100000
/* A fixed boot finding needs clean boots enough that it would have shown with this chance. */
#define FIXED_SHOWN 0.95
/* The reproduce line's boots: enough that the failure shows with this chance. */
#define REPRODUCE_SHOWN 0.99

/* What a bisection step asks of a commit: does it show this failure? */
struct probe {
	bool boot;               /* a boot failure, else a build diagnostic */
	const char *fingerprint;
	bool invert;             /* bisecting a fix: showing it is the old state */
	const char *contains;    /* for a fix: commits without it cannot show it */
	/*
	 * A build diagnostic: how many times the good boundary has it. A
	 * commit shows it when it has it more often: a second instance of
	 * an old warning is what is new, and every commit of the range has
	 * the first.
	 */
	unsigned base_count;
};

/* What a bisection has seen of each commit, so that boots are not counted twice. */
struct seen {
	unsigned runs;
	unsigned failures;
};

static unsigned count_fingerprint(const struct build_row *row, const char *fingerprint)
{
	unsigned n = 0;

	for (guint i = 0; i < row->diags->len; i++)
		n += strcmp(((struct diag *)row->diags->pdata[i])->fingerprint, fingerprint) == 0;
	return n;
}

static bool has_fingerprint(const struct build_row *row, const char *fingerprint)
{
	return count_fingerprint(row, fingerprint) > 0;
}

/* The runs a tally counted (every entry counts them all), or @asked when it is empty. */
static unsigned tally_runs(GPtrArray *tally, unsigned asked)
{
	return tally && tally->len ? ((const struct console_tally *)tally->pdata[0])->runs : asked;
}

/*
 * A step's probe on one commit, from its build to its count: built in
 * the caller's thread; booted there too, or in a thread of its own while
 * the round's next step builds and its other steps boot (run_round()).
 */
struct step_run {
	const struct bot *bot;
	const struct probe *probe;
	const char *commit;         /* the commit tested: the step's, or its revert */
	struct seen *seen;          /* what the bisection has seen of it */
	unsigned want;              /* the boots to have stored: @seen's and the step's */
	struct probe_result built;
	bool boot;                  /* a boot is due: the build kept an image */
	struct db *db;              /* its own connection to the store, when booted apart */
	GThread *thread;            /* booting it, until joined */
	GPtrArray *tally;           /* the boots' tally, once booted */
	GError *error;              /* why it could not boot */
	enum bisect_result result;
	unsigned runs, failures;    /* new: those not in @seen, which is updated */
};

static void step_run_release(struct step_run *r)
{
	g_clear_pointer(&r->db, db_close);
	probe_result_release(&r->built);
	g_clear_pointer(&r->tally, g_ptr_array_unref);
	g_clear_error(&r->error);
}

/*
 * Builds @r's commit; for a build diagnostic, counts it. A commit that
 * fails to build is a skip; a different failure is not this one. Sets
 * @r->boot when a boot failure's boots are due. False when the build
 * cannot run at all, and, with BOT_ERROR_TEMPORARY, on infrastructure
 * errors: the job is retried rather than the step skipped.
 */
static bool step_build(struct step_run *r, const struct job_row *job, GError **error)
{
	const struct probe_request req = {
		.tree = job->tree, .commit = r->commit, .target = job->target, .flags = PROBE_ALONE,
	};
	const struct probe *probe = r->probe;
	const struct build_row *row;

	r->runs = r->failures = 0;
	r->result = BISECT_SKIP;
	if (probe->contains) {
		int contains = repo_is_ancestor(r->bot->repo, probe->contains, r->commit, error);

		if (contains < 0)
			return false;
		if (!contains) {
			/* Without the culprit it cannot show it: not fixed there. */
			r->result = BISECT_GOOD;
			r->runs = 1;
			return true;
		}
	}
	if (!probe_run(&r->built, r->bot, &req, error))
		return false;
	row = r->built.build->build;
	if (!probe->boot) {
		bool shows = count_fingerprint(row, probe->fingerprint) > probe->base_count;

		if (!shows && row->status != BUILD_OK)
			return true; /* it failed before it could show it */
		if (probe->invert)
			shows = !shows;
		r->result = shows ? BISECT_BAD : BISECT_GOOD;
		r->runs = 1;
		r->failures = shows;
		return true;
	}
	r->boot = row->status == BUILD_OK && row->image_path;
	return true;
}

/* Boots @r's build until @r->want boots are stored, through @bot's store. */
static void step_boot(struct step_run *r, const struct bot *bot)
{
	r->tally = probe_boot(bot, r->built.build->build, r->want, 0, NULL, &r->error);
}

/* step_boot() in a thread of its own, through @r->db. */
static gpointer step_boot_thread(gpointer data)
{
	struct step_run *r = data;
	struct bot own = *r->bot;

	own.db = r->db;
	step_boot(r, &own);
	return NULL;
}

/*
 * Counts @r's boots, once booted: the new runs and failures, those not in
 * @r->seen (which is updated). False with @r's error when a boot hit
 * infrastructure.
 */
static bool step_count(struct step_run *r, GError **error)
{
	const struct console_tally *t;
	unsigned total, failures;

	if (r->error) {
		g_propagate_error(error, g_steal_pointer(&r->error));
		return false;
	}
	if (!r->boot || !r->tally)
		return true;
	t = probe_tally_find(r->tally, r->probe->fingerprint);
	total = tally_runs(r->tally, r->want);
	failures = t ? t->failures : 0;
	if (total <= r->seen->runs)
		return true; /* no new boot: nothing to count */
	r->runs = total - r->seen->runs;
	r->failures = failures >= r->seen->failures ? failures - r->seen->failures : 0;
	r->result = r->failures ? BISECT_BAD : BISECT_GOOD;
	r->seen->runs = total;
	r->seen->failures = failures;
	return true;
}

/*
 * Runs a step's probe on @commit in the caller's thread: builds it; for a
 * boot failure, boots it until @seen's runs and @runs more are stored.
 * As step_build() and step_count().
 */
static bool probe_commit(const struct bot *c, const struct job_row *job,
			 const struct probe *probe, const char *commit, unsigned runs,
			 struct seen *seen, enum bisect_result *result, unsigned *new_runs,
			 unsigned *new_failures, GError **error)
{
	struct step_run r = {
		.bot = c, .probe = probe, .commit = commit, .seen = seen, .want = seen->runs + runs,
	};
	bool ok = step_build(&r, job, error);

	if (ok && r.boot)
		step_boot(&r, c);
	ok = ok && step_count(&r, error);
	*result = r.result;
	*new_runs = r.runs;
	*new_failures = r.failures;
	step_run_release(&r);
	return ok;
}

static struct seen *seen_of(GHashTable *seen, const char *commit)
{
	struct seen *s = g_hash_table_lookup(seen, commit);

	if (!s) {
		s = g_new0(struct seen, 1);
		g_hash_table_insert(seen, g_strdup(commit), s);
	}
	return s;
}

/*
 * The head with @step's culprit reverted, made once per culprit (in
 * @reverts: culprit -> commit), so that the revert check's later rounds
 * boot the same build. False when it does not revert cleanly.
 */
static bool revert_of(const struct bot *c, const struct probe *probe, GHashTable *reverts,
		      const struct bisect_step *step, const char **tested)
{
	g_autoptr(GError) why = NULL;
	char *reverted = g_hash_table_lookup(reverts, step->commit);
	int rc;

	if (!reverted) {
		rc = repo_revert_on(c->repo, step->head, step->commit, &reverted, &why);
		if (rc <= 0) {
			g_message("bisect %s: %.12s does not revert cleanly on the head%s%s",
				  probe->fingerprint, step->commit, why ? ": " : "",
				  why ? why->message : "");
			return false;
		}
		g_hash_table_insert(reverts, g_strdup(step->commit), reverted);
	}
	*tested = reverted;
	return true;
}

/*
 * Runs a round of @n steps of @b and records their results in the
 * engine's order. The steps build one after another in the caller's
 * thread. A boot failure's step, once built, boots in a thread of its
 * own with its own connection to the store, while the next step builds
 * and the round's other steps boot: the engine planned the round's boots
 * together (at most the slots), and the booter's slot locks hold them to
 * that. A commit the round names twice boots its second share after its
 * first. A round of one step, or where the store has no second
 * connection (in memory, or inside a transaction), runs in the caller's
 * thread. Every thread is joined before it returns, whatever failed.
 */
static bool run_round(const struct bot *c, const struct job_row *job, const struct probe *probe,
		      struct bisect *b, const struct bisect_step *steps, guint n,
		      GHashTable *seen, GHashTable *reverts, GError **error)
{
	struct step_run runs[BISECT_ROUND_MAX] = { 0 };
	bool apart = probe->boot && n > 1;
	bool ok = true;

	g_assert(n <= BISECT_ROUND_MAX);
	for (guint k = 0; ok && k < n; k++) {
		struct step_run *r = &runs[k];
		const struct bisect_step *step = &steps[k];
		const char *tested = step->commit;

		if (step->role == BISECT_ROLE_REVERT && !revert_of(c, probe, reverts, step, &tested))
			continue; /* no commit to test: a skip */
		r->bot = c;
		r->probe = probe;
		r->commit = tested;
		r->seen = seen_of(seen, tested);
		r->want = r->seen->runs + step->runs;
		/* The same commit earlier in the round: its boots go first, and count first. */
		for (guint i = 0; i < k; i++) {
			if (!runs[i].commit || strcmp(runs[i].commit, tested) != 0)
				continue;
			if (runs[i].thread)
				g_thread_join(g_steal_pointer(&runs[i].thread));
			r->want += steps[i].runs;
		}
		ok = step_build(r, job, error);
		if (!ok || !r->boot)
			continue;
		if (apart && k + 1 < n) {
			g_autoptr(GError) why = NULL;

			r->db = db_open_again(c->db, &why);
			if (why) {
				g_propagate_error(error, g_steal_pointer(&why));
				ok = false;
				continue;
			}
		}
		if (r->db) {
			r->thread = g_thread_try_new("boot", step_boot_thread, r, NULL);
			if (r->thread) {
				g_message("bisect %s (%s): %.12s boots beside the round's next step",
					  probe->fingerprint, bisect_role_name(step->role), tested);
				continue;
			}
		}
		step_boot(r, c);
	}
	for (guint k = 0; k < n; k++) {
		if (runs[k].thread)
			g_thread_join(g_steal_pointer(&runs[k].thread));
	}
	for (guint k = 0; ok && k < n; k++) {
		const struct bisect_step *step = &steps[k];
		struct step_run *r = &runs[k];

		if (!r->commit) {
			bisect_record(b, step, NULL, BISECT_SKIP, 0, 0);
			continue;
		}
		ok = step_count(r, error);
		if (!ok)
			break;
		g_message("bisect %s (%s): %.12s %s %u/%u", probe->fingerprint,
			  bisect_role_name(step->role), r->commit, bisect_result_name(r->result),
			  r->failures, r->runs);
		bisect_record(b, step, step->role == BISECT_ROLE_REVERT ? r->commit : NULL,
			      r->result, r->runs, r->failures);
	}
	for (guint k = 0; k < n; k++)
		step_run_release(&runs[k]);
	return ok;
}

/* What a bisection starts from, besides its boundaries. */
struct start {
	GPtrArray *head_runs;    /* the head's routine boots (struct booter_run), or NULL */
	const char *base;        /* a boundary whose routine boots are known */
	GPtrArray *base_tally;   /* its tally, or NULL */
};

/*
 * Bisects @probe's failure over what the job's commit has and none of
 * @good has. A good commit that is not an ancestor of the job's commit
 * says nothing of their common history (a force-push): its merge bases
 * are boundaries too, to be shown clean. Every step is the engine's.
 */
static bool bisect_failure(const struct bot *c, const struct job_row *job,
			   const struct probe *probe, const struct bisect_boundary *good,
			   size_t n_good, const struct start *start, struct bisect_outcome *out,
			   GError **error)
{
	struct bisect_params params = probe->boot ? BISECT_PARAMS_BOOT : BISECT_PARAMS_BUILD;
	g_autoptr(GArray) bounds = g_array_new(FALSE, FALSE, sizeof(struct bisect_boundary));
	g_autoptr(GPtrArray) hide = g_ptr_array_new();
	g_autoptr(GPtrArray) keep = g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
	g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	g_autofree struct bisect_commit *commits = NULL;
	g_autoptr(GPtrArray) walked = NULL;
	g_autoptr(GHashTable) reverts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	zd_autoptr(bisect) b = NULL;
	struct bisect_step steps[BISECT_ROUND_MAX];
	bool truncated;

	for (size_t i = 0; i < n_good; i++) {
		int related = repo_is_ancestor(c->repo, good[i].id, job->commit, error);
		char **bases;

		if (related < 0)
			return false;
		g_array_append_val(bounds, good[i]);
		g_ptr_array_add(hide, (gpointer)good[i].id);
		if (related)
			continue;
		bases = repo_merge_bases(c->repo, good[i].id, job->commit, error);
		if (!bases)
			return false;
		g_ptr_array_add(keep, bases);
		for (char **base = bases; *base; base++) {
			struct bisect_boundary mb = { *base, true };

			g_array_append_val(bounds, mb);
			g_ptr_array_add(hide, *base);
		}
	}
	g_ptr_array_add(hide, NULL);
	walked = repo_walk_new(c->repo, job->commit, (const char *const *)hide->pdata, RANGE_MAX,
			       &truncated, error);
	if (!walked)
		return false;
	commits = g_new0(struct bisect_commit, MAX(walked->len, 1));
	for (guint i = 0; i < walked->len; i++) {
		const struct repo_commit *rc = walked->pdata[i];

		commits[i].id = rc->oid;
		commits[i].parents = (const char *const *)rc->parent_ids;
	}
	if (probe->boot)
		params.slots = booter_slots(c->config);
	if (probe->invert)
		params.revert_check = false;
	b = bisect_new(commits, walked->len, (struct bisect_boundary *)bounds->data, bounds->len,
		       job->commit, &params, error);
	if (!b)
		return false;
	if (start && start->head_runs) {
		g_autofree bool *shows = g_new0(bool, MAX(start->head_runs->len, 1));
		struct seen *s = seen_of(seen, job->commit);

		for (guint i = 0; i < start->head_runs->len; i++) {
			const struct booter_run *r = start->head_runs->pdata[i];

			shows[i] = diag_console_shows(&r->result, probe->fingerprint);
			s->failures += shows[i];
		}
		s->runs = start->head_runs->len;
		bisect_observe_trigger(b, job->commit, shows, start->head_runs->len);
	}
	if (start && start->base && start->base_tally) {
		const struct console_tally *t = probe_tally_find(start->base_tally, probe->fingerprint);
		struct seen *s = seen_of(seen, start->base);

		s->runs = tally_runs(start->base_tally, 0);
		s->failures = t ? t->failures : 0;
		if (s->runs)
			bisect_observe(b, start->base, s->runs, s->failures);
	}
	for (guint n; (n = bisect_next(b, steps, BISECT_ROUND_MAX));) {
		if (!run_round(c, job, probe, b, steps, n, seen, reverts, error))
			return false;
	}
	bisect_outcome(b, out);
	if (truncated && out->verdict == BISECT_FOUND) {
		/* Past the walk's limit: the culprit may lie beyond it. */
		out->verdict = BISECT_INCONCLUSIVE;
		g_free(out->reason);
		out->reason = g_strdup_printf("the range has more than %u commits", RANGE_MAX);
		out->suspects = g_new0(char *, 2);
		out->suspects[0] = g_steal_pointer(&out->culprit);
	}
	return true;
}

bool culprit_bisect_series_boot(const struct bot *c, const struct job_row *job,
				const char *base, const char *fingerprint,
				struct bisect_outcome *out, GError **error)
{
	const struct bisect_boundary good[] = { { base, true } };
	const struct probe probe = { .boot = true, .fingerprint = fingerprint };

	memset(out, 0, sizeof(*out));
	return bisect_failure(c, job, &probe, good, G_N_ELEMENTS(good), NULL, out, error);
}

/* The outcome's steps, as a finding keeps them (struct finding_step). */
static GPtrArray *outcome_steps(const struct bisect_outcome *o)
{
	GPtrArray *steps = g_ptr_array_new_with_free_func((GDestroyNotify)finding_step_free);

	for (guint i = 0; i < o->log->len; i++) {
		const struct bisect_entry *e = o->log->pdata[i];
		struct finding_step *step = g_new0(struct finding_step, 1);

		step->role = e->role;
		step->commit = g_strdup(e->commit);
		step->tested = g_strdup(e->tested);
		step->result = e->result;
		step->runs = e->runs;
		step->failures = e->failures;
		g_ptr_array_add(steps, step);
	}
	return steps;
}

/* The first parent of @commit, or NULL (a root, or not stored). */
static char *first_parent(const struct bot *c, const char *commit)
{
	g_autoptr(GPtrArray) walked = NULL;
	const struct repo_commit *rc;
	bool truncated;

	walked = repo_walk_new(c->repo, commit, NULL, 1, &truncated, NULL);
	if (!walked || walked->len == 0)
		return NULL;
	rc = walked->pdata[0];
	return rc->parent_ids && rc->parent_ids[0] ? g_strdup(rc->parent_ids[0]) : NULL;
}

/*
 * Stores @f and, when it is new and @report, its report in the outbox:
 * one transaction. Without @report, report_culprit() reports it later.
 */
static bool store_finding(const struct bot *c, const struct job_row *job,
			  struct finding_row *f, bool report, GError **error)
{
	struct bot rc = *c;
	struct maintainers m;
	bool added;
	bool ok;

	/* The tree's own script, run before the write lock is taken, not under it. */
	maintainers_init(&m);
	if (report && f->state != FINDING_INCONCLUSIVE) {
		report_prefetch(&rc, f->culprit, &m);
		rc.maintainers_of = f->culprit;
		rc.maintainers = &m;
	}
	ok = db_tx_begin(c->db, error);
	if (ok && (!db_finding_add(c->db, job->tree_id, f, &added, error) ||
		   (report && added &&
		    !outbox_queue_report(&rc, f->id, g_get_real_time() / G_USEC_PER_SEC, error)))) {
		db_tx_rollback(c->db);
		ok = false;
	}
	ok = ok && db_tx_commit(c->db, error);
	maintainers_release(&m);
	if (!ok)
		return false;
	if (added)
		g_message("finding: %.12s (%s) %s%s", f->culprit, job->target, f->title,
			  f->state == FINDING_INCONCLUSIVE ? ": inconclusive" : "");
	return true;
}

/* GCompareFunc over struct finding_row **: build errors, then the rest, each by id. */
static gint errors_first(gconstpointer a, gconstpointer b)
{
	const struct finding_row *x = *(struct finding_row *const *)a;
	const struct finding_row *y = *(struct finding_row *const *)b;
	bool xe = x->kind == FINDING_BUILD_ERROR, ye = y->kind == FINDING_BUILD_ERROR;

	if (xe != ye)
		return xe ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * Whether findings @a and @b go in one report: a commit's build
 * diagnostics all do, and its boot failures (a panic, failed tests) too.
 */
static bool one_report(const struct finding_row *a, const struct finding_row *b)
{
	return a->state == b->state &&
	       (a->kind == b->kind || (a->kind != FINDING_BOOT && b->kind != FINDING_BOOT));
}

/*
 * Reports the findings of tree @tree_id that @culprit caused and no
 * report mentions yet, on every target, its build findings or (@boots)
 * its boot findings: one report for all of its new errors and warnings
 * (an error's, when there is one, carrying the others and naming the
 * other targets), one for its boot failures, in one transaction. Run once every new diagnostic of a build is bisected and
 * no other target of the head is still building, so that one commit's
 * diagnostics make one mail, not one each or one a target; run again
 * after a crash, it reports what the crash left unreported.
 */
static bool report_culprit(const struct bot *c, gint64 tree_id, const char *culprit, bool boots,
			   GError **error)
{
	struct bot rc = *c;
	g_autoptr(GPtrArray) rows = NULL;
	g_autoptr(GPtrArray) leads = g_ptr_array_new();
	struct maintainers m;
	bool ok;

	maintainers_init(&m);
	report_prefetch(&rc, culprit, &m);
	rc.maintainers_of = culprit;
	rc.maintainers = &m;
	ok = db_tx_begin(c->db, error);
	rows = ok ? db_finding_unreported(c->db, tree_id, culprit, NULL, error) : NULL;
	ok = rows != NULL;
	/* Errors first: a report that carries an error is an error's. */
	if (ok)
		g_ptr_array_sort(rows, errors_first);
	for (guint i = 0; ok && i < rows->len; i++) {
		const struct finding_row *f = rows->pdata[i];
		const struct finding_row *lead = NULL;

		if ((f->kind == FINDING_BOOT) != boots)
			continue;
		for (guint k = 0; !lead && k < leads->len; k++) {
			if (one_report(leads->pdata[k], f))
				lead = leads->pdata[k];
		}
		if (lead)
			ok = db_finding_set_report(c->db, f->id, lead->id, error);
		else
			g_ptr_array_add(leads, (gpointer)f);
	}
	for (guint k = 0; ok && k < leads->len; k++)
		ok = outbox_queue_report(&rc, ((const struct finding_row *)leads->pdata[k])->id,
					 g_get_real_time() / G_USEC_PER_SEC, error);
	if (ok)
		ok = db_tx_commit(c->db, error);
	if (!ok)
		db_tx_rollback(c->db);
	maintainers_release(&m);
	return ok;
}

bool culprit_report_due(const struct bot *c, gint64 tree_id, GError **error)
{
	g_autoptr(GPtrArray) due = db_finding_report_due(c->db, tree_id, error);
	g_autoptr(GPtrArray) boots = NULL;

	if (!due)
		return false;
	for (guint i = 0; i < due->len; i++) {
		if (!report_culprit(c, tree_id, due->pdata[i], false, error))
			return false;
	}
	boots = db_finding_boot_report_due(c->db, tree_id, error);
	if (!boots)
		return false;
	for (guint i = 0; i < boots->len; i++) {
		if (!report_culprit(c, tree_id, boots->pdata[i], true, error))
			return false;
	}
	return true;
}

/*
 * Stores the finding a bisection leads to: its culprit, or the head when
 * inconclusive, with the steps, the suspects and why. A failure that
 * predates the range is no finding of it.
 */
static bool store_bisected(const struct bot *c, const struct job_row *job,
			   struct finding_row *f, const struct bisect_outcome *o, bool report,
			   GError **error)
{
	g_autoptr(GPtrArray) steps = NULL;
	g_autofree char *parent = NULL;

	if (o->verdict == BISECT_PREDATES) {
		g_message("%.12s: %s predates the range: %.12s has it", job->commit, f->title,
			  o->since);
		return true;
	}
	steps = outcome_steps(o);
	f->culprit = o->verdict == BISECT_FOUND ? o->culprit : job->commit;
	parent = first_parent(c, f->culprit);
	f->parent = parent;
	f->confidence = o->verdict == BISECT_FOUND ? o->confidence : 0.0;
	f->state = o->verdict == BISECT_FOUND ? FINDING_OPEN : FINDING_INCONCLUSIVE;
	f->suspects = o->verdict == BISECT_FOUND ? NULL : o->suspects;
	f->reason = o->verdict == BISECT_FOUND ? NULL : o->reason;
	f->steps = steps;
	f->repro_commit = f->culprit;
	return store_finding(c, job, f, report, error);
}

static enum finding_kind diag_finding_kind(const struct diag *d)
{
	return d->kind == DIAG_ERROR ? FINDING_BUILD_ERROR : FINDING_BUILD_WARNING;
}

static char *diag_title(const struct diag *d)
{
	return g_strdup_printf("%s%s%s", d->file, *d->file ? ": " : "", d->message);
}

/* Adds @culprit to @culprits unless it is there. */
static void add_culprit(GPtrArray *culprits, const char *culprit)
{
	if (!g_ptr_array_find_with_equal_func(culprits, culprit, g_str_equal, NULL))
		g_ptr_array_add(culprits, g_strdup(culprit));
}

bool culprit_build_findings(const struct bot *c, const struct job_row *job,
			    const struct builder_result *r, const char *base, GString *already,
			    GError **error)
{
	g_autoptr(GHashTable) done = g_hash_table_new(g_str_hash, g_str_equal);
	/* The culprits named, in the order of their first diagnostic. */
	g_autoptr(GPtrArray) culprits = g_ptr_array_new_with_free_func(g_free);
	bool ok;

	if (r->verdict != VERDICT_NEW_DIAGNOSTICS && r->verdict != VERDICT_FAIL_NEW_ERROR)
		return true;
	/* A root commit has nothing to be compared with: blaming it would be a false alarm. */
	if (!base && !r->parent)
		return true;
	for (guint i = 0; i < r->fresh->len; i++) {
		const struct diag *d = r->fresh->pdata[i];
		struct probe probe = {
			.fingerprint = d->fingerprint,
			.base_count = r->parent_build ? count_fingerprint(r->parent_build,
									  d->fingerprint) : 0,
		};
		const struct bisect_boundary good[] = { { base, false } };
		struct bisect_outcome o = { 0 };
		g_autofree char *title = diag_title(d);
		struct finding_row f = {
			.target = job->target, .kind = diag_finding_kind(d),
			.fingerprint = d->fingerprint, .title = title, .head = job->commit,
			.file = d->file, .line = d->line, .column = d->column, .diag_kind = d->kind,
			.message = d->message,
		};

		if (!g_hash_table_add(done, d->fingerprint))
			continue;
		if (!base) {
			/* Against its parent, which built without it: that is the whole proof. */
			g_autoptr(GPtrArray) steps =
				g_ptr_array_new_with_free_func((GDestroyNotify)finding_step_free);
			struct finding_step *parent = g_new0(struct finding_step, 1);
			struct finding_step *self = g_new0(struct finding_step, 1);

			*parent = (struct finding_step){ .role = BISECT_ROLE_BOUNDARY,
							 .commit = g_strdup(r->parent),
							 .result = BISECT_GOOD, .runs = 1 };
			*self = (struct finding_step){ .role = BISECT_ROLE_SEARCH,
						       .commit = g_strdup(job->commit),
						       .result = BISECT_BAD, .runs = 1, .failures = 1 };
			g_ptr_array_add(steps, parent);
			g_ptr_array_add(steps, self);
			f.culprit = job->commit;
			f.parent = r->parent;
			f.confidence = 1.0;
			f.repro_commit = job->commit;
			f.steps = steps;
			if (!store_finding(c, job, &f, false, error))
				return false;
			add_culprit(culprits, job->commit);
			continue;
		}
		if (bisect_failure(c, job, &probe, good, 1, NULL, &o, error)) {
			if (o.verdict == BISECT_PREDATES)
				g_string_append_printf(already, "%s%s: there since %.12s",
						       already->len ? "; " : "", title, o.since);
			ok = store_bisected(c, job, &f, &o, false, error);
			if (o.verdict != BISECT_PREDATES)
				add_culprit(culprits, o.verdict == BISECT_FOUND ? o.culprit
										: job->commit);
		} else {
			ok = false;
		}
		bisect_outcome_clear(&o);
		if (!ok)
			return false;
	}
	/*
	 * Every new diagnostic bisected: one report a culprit, once the
	 * head's other targets are built too (the last to end reports, and
	 * culprit_report_due() after each job catches what a crash left).
	 */
	if (culprits->len) {
		bool waiting;

		if (!db_job_head_busy(c->db, job->tree_id, job->commit, job->id, &waiting, error))
			return false;
		if (waiting) {
			g_message("report of %.12s waits for the other targets of %.12s",
				  (const char *)culprits->pdata[0], job->commit);
			return true;
		}
	}
	for (guint i = 0; i < culprits->len; i++) {
		if (!report_culprit(c, job->tree_id, culprits->pdata[i], false, error))
			return false;
	}
	return true;
}

char *culprit_decoded_excerpt(const struct bot *c, const struct build_row *build,
			      const char *excerpt)
{
	const struct decode_opts opts = { .sandbox = true };
	g_autofree char *vmlinux = builder_vmlinux_path(build ? build->image_path : NULL);
	g_autoptr(GError) error = NULL;
	char *decoded;

	if (!excerpt)
		return NULL;
	if (!vmlinux || !g_file_test(vmlinux, G_FILE_TEST_EXISTS)) {
		g_info("boot finding: no vmlinux to decode its trace with");
		return g_strdup(excerpt);
	}
	if (!c->config->build_sandbox) {
		g_info("boot finding: %s: not decoded without the sandbox", vmlinux);
		return g_strdup(excerpt);
	}
	decoded = decode_trace(excerpt, vmlinux, &opts, &error);
	if (decoded)
		return decoded;
	g_message("boot finding: its trace is not decoded: %s", error->message);
	return g_strdup(excerpt);
}

bool culprit_boot_findings(const struct bot *c, const struct job_row *job,
			   const struct builder_result *r, const char *base, GPtrArray **tally_out,
			   GString *old, GError **error)
{
	const char *base_commit = base ? base : r->parent;
	g_autoptr(GPtrArray) head_runs = NULL;
	g_autoptr(GPtrArray) head = NULL;
	zd_auto(probe_result) based = { 0 };
	GPtrArray *base_tally;

	*tally_out = NULL;
	head = probe_boot(c, r->build, c->config->boot_repeat, 0, &head_runs, error);
	if (!head)
		return !error || !*error;
	*tally_out = g_ptr_array_ref(head);
	if (head->len == 0 || !base_commit)
		return true;
	/* The base, built alone and booted as often as the head. */
	if (!probe_run(&based, c,
		       &(struct probe_request){ .tree = job->tree, .commit = base_commit,
						.target = job->target,
						.boots = c->config->boot_repeat,
						.flags = PROBE_ALONE },
		       error))
		return false;
	base_tally = based.tally;
	for (guint i = 0; i < head->len; i++) {
		const struct console_tally *t = head->pdata[i];
		const struct console_tally *before = probe_tally_find(base_tally, t->fingerprint);
		struct probe probe = { .boot = true, .fingerprint = t->fingerprint };
		const struct bisect_boundary good[] = { { base_commit, true } };
		const struct start start = {
			.head_runs = head_runs, .base = base_commit, .base_tally = base_tally,
		};
		struct bisect_outcome o = { 0 };
		char *excerpt;
		struct finding_row f = {
			.target = job->target, .kind = FINDING_BOOT, .console = t->kind,
			.fingerprint = t->fingerprint, .title = t->title, .head = job->commit,
			.excerpt = t->excerpt, .failures = t->failures, .runs = t->runs,
			.intermittent = t->intermittent,
		};
		bool ok;

		if (before) {
			/* The base shows it too: not this range's doing. */
			g_string_append_printf(old, "%s%s: %u/%u boots, and %u/%u at %.12s", old->len ?
					       "; " : "", t->title, t->failures, t->runs,
					       before->failures, before->runs, base_commit);
			continue;
		}
		if (!bisect_failure(c, job, &probe, good, G_N_ELEMENTS(good), &start, &o, error)) {
			bisect_outcome_clear(&o);
			return false;
		}
		if (o.verdict == BISECT_PREDATES) {
			g_string_append_printf(old, "%s%s: %u/%u boots, there since %.12s", old->len ?
					       "; " : "", t->title, t->failures, t->runs, o.since);
			bisect_outcome_clear(&o);
			continue;
		}
		f.repro_boots = bisect_runs_to_show(o.rate, 1.0 - REPRODUCE_SHOWN);
		f.rate = o.rate;
		/* Decoded here, before the finding's transaction: nm and addr2line take seconds. */
		excerpt = culprit_decoded_excerpt(c, r->build, t->excerpt);
		f.excerpt = excerpt;
		/*
		 * Reported after the job with the culprit's other boot failures
		 * (culprit_report_due()): a commit that breaks three tests gets
		 * one mail, not three.
		 */
		ok = store_bisected(c, job, &f, &o, false, error);
		g_free(excerpt);
		bisect_outcome_clear(&o);
		if (!ok)
			return false;
	}
	return true;
}

/*
 * Finds the commit that fixed build finding @f between its culprit and
 * the job's commit, which no longer shows it: a bisection in reverse,
 * where "bad" means fixed. A commit that does not contain the culprit
 * cannot show it and counts as not fixed. Returns the fixing commit, or
 * NULL (inconclusive, or with @error set).
 */
static char *bisect_fix(const struct bot *c, const struct job_row *job,
			const struct finding_row *f, GError **error)
{
	const struct bisect_boundary good[] = { { f->culprit, false } };
	struct probe probe = { .fingerprint = f->fingerprint, .invert = true, .contains = f->culprit };
	struct bisect_outcome o = { 0 };
	char *fix = NULL;

	if (bisect_failure(c, job, &probe, good, 1, NULL, &o, error) && o.verdict == BISECT_FOUND)
		fix = g_steal_pointer(&o.culprit);
	bisect_outcome_clear(&o);
	return fix;
}

/*
 * Whether @culprit left tree @tree_id: no head of its branches (deleted
 * ones aside) holds it. When that cannot be told, it is held.
 */
static bool culprit_left(const struct bot *c, gint64 tree_id, const char *culprit)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) branches = db_branch_list(c->db, tree_id, &error);

	if (!branches)
		return false;
	for (guint i = 0; i < branches->len; i++) {
		const struct branch_row *b = branches->pdata[i];

		if (b->state == BRANCH_DELETED)
			continue;
		if (strcmp(b->head, culprit) == 0 ||
		    repo_is_ancestor(c->repo, culprit, b->head, &error) != 0)
			return false;
	}
	return true;
}

/* Marks @f dropped, seen so at @head, and queues its follow-up: one transaction. */
static bool mark_dropped(const struct bot *c, const struct finding_row *f,
			 const char *head, GError **error)
{
	const struct bot rc = *c;

	if (!db_tx_begin(c->db, error))
		return false;
	if (!db_finding_dropped(c->db, f->id, head, error) ||
	    !outbox_queue_dropped(&rc, f->id, g_get_real_time() / G_USEC_PER_SEC, error)) {
		db_tx_rollback(c->db);
		return false;
	}
	if (!db_tx_commit(c->db, error))
		return false;
	g_message("dropped: %.12s %s is on no branch any more (seen at %.12s)", f->culprit,
		  f->fingerprint, head);
	return true;
}

/* The commits walked from a head for the fix a maintainer named, at most. */
#define FIX_WALK_MAX 20000

/*
 * The commit of @head, after @f's culprit, whose subject is the one
 * named for @f's fix (#zeroday fix:), or NULL. The newest such commit
 * when there are several (a revert of a revert): caller frees.
 */
static char *fix_named(const struct bot *c, const struct finding_row *f, const char *head)
{
	const char *hide[] = { f->culprit, NULL };
	g_autoptr(GPtrArray) walked = NULL;
	g_autoptr(GError) error = NULL;
	bool truncated = false;

	if (!f->fix_subject)
		return NULL;
	walked = repo_walk_new(c->repo, head, hide, FIX_WALK_MAX, &truncated, &error);
	if (!walked) {
		g_warning("fixed: finding %" G_GINT64_FORMAT ": %s", f->id, error->message);
		return NULL;
	}
	for (guint i = walked->len; i-- > 0;) {
		const struct repo_commit *commit = walked->pdata[i];

		if (strcmp(commit->summary, f->fix_subject) == 0)
			return g_strdup(commit->oid);
	}
	return NULL;
}

/*
 * Sets *@gone when @f's failure no longer shows at @named, the fix a
 * maintainer named for it: one build, or for a boot failure @boots
 * boots. A subject is a claim, not a proof: the follow-up names only a
 * commit seen without the failure. False on infrastructure errors.
 */
static bool fix_verified(const struct bot *c, const struct job_row *job,
			 const struct finding_row *f, const char *named, unsigned boots,
			 bool *gone, GError **error)
{
	const struct probe probe = {
		.boot = f->kind == FINDING_BOOT, .fingerprint = f->fingerprint, .invert = true,
		.contains = f->culprit,
	};
	struct seen seen = { 0 };
	enum bisect_result result;
	unsigned runs, failures;

	*gone = false;
	if (!probe_commit(c, job, &probe, named, boots, &seen, &result, &runs, &failures, error))
		return false;
	*gone = result == BISECT_BAD;
	if (!*gone)
		g_message("fixed: finding %" G_GINT64_FORMAT ": %.12s (\"%s\") does not fix it; "
			  "looking for the commit that does", f->id, named, f->fix_subject);
	return true;
}

/* Logs that the fix named for @f (#zeroday fix:), commit @named, is at @head without fixing it. */
static void still_there(const struct finding_row *f, const char *named, const char *head)
{
	if (named)
		g_message("fixed: not finding %" G_GINT64_FORMAT ": %.12s (\"%s\") is at %.12s, "
			  "and the failure still shows there", f->id, named, f->fix_subject, head);
}

bool culprit_mark_fixed(const struct bot *c, const struct job_row *job,
			const struct builder_result *r, GPtrArray *boots, GError **error)
{
	const struct bot rc = *c;
	g_autoptr(GPtrArray) open = db_finding_open(c->db, job->tree_id, job->target, error);

	if (!open)
		return false;
	for (guint i = 0; i < open->len; i++) {
		const struct finding_row *f = open->pdata[i];
		g_autoptr(GError) unknown = NULL;
		g_autofree char *fix = NULL;
		g_autofree char *named = NULL;
		bool gone = false;
		int holds;

		if (strcmp(f->culprit, job->commit) == 0)
			continue;
		holds = repo_is_ancestor(c->repo, f->culprit, job->commit, &unknown);
		/* A rebase took the culprit out of every branch: nothing left to fix. */
		if (holds == 0 && culprit_left(c, job->tree_id, f->culprit)) {
			if (!mark_dropped(c, f, job->commit, error))
				return false;
			continue;
		}
		if (holds != 1)
			continue;
		named = fix_named(c, f, job->commit);
		if (f->kind == FINDING_BOOT) {
			/* Clean boots enough that the failure, at its rate, would have shown. */
			unsigned need = bisect_runs_to_show(f->rate, 1.0 - FIXED_SHOWN);
			g_autoptr(GPtrArray) more = NULL;

			if (!boots)
				continue;
			if (probe_tally_find(boots, f->fingerprint)) {
				still_there(f, named, job->commit);
				continue;
			}
			if (need > c->config->boot_repeat) {
				more = probe_boot(c, r->build, need, 0, NULL, NULL);
				if (!more || probe_tally_find(more, f->fingerprint)) {
					still_there(f, named, job->commit);
					continue;
				}
			}
			if (named && !fix_verified(c, job, f, named, need, &gone, error))
				return false;
			fix = g_strdup(named && gone ? named : job->commit);
		} else {
			if (r->build->status != BUILD_OK || has_fingerprint(r->build, f->fingerprint)) {
				still_there(f, named, job->commit);
				continue;
			}
			/* The fix a maintainer named, once built without it, needs no bisection. */
			if (named && !fix_verified(c, job, f, named, 1, &gone, error))
				return false;
			fix = named && gone ? g_strdup(named) : bisect_fix(c, job, f, error);
			if (!fix && error && *error)
				return false;
			if (!fix)
				fix = g_strdup(job->commit);
		}
		if (!db_tx_begin(c->db, error))
			return false;
		if (!db_finding_fixed(c->db, f->id, fix, error) ||
		    !outbox_queue_fixed(&rc, f->id, g_get_real_time() / G_USEC_PER_SEC, error)) {
			db_tx_rollback(c->db);
			return false;
		}
		if (!db_tx_commit(c->db, error))
			return false;
		g_message("fixed: %.12s %s, by %.12s", f->culprit, f->fingerprint, fix);
	}
	return true;
}

/* The number of commits @head has that @base has not, up to @limit. */
static guint distance(const struct bot *c, const char *head, const char *base,
		      guint limit)
{
	const char *hide[] = { base, NULL };
	g_autoptr(GPtrArray) walked = NULL;
	g_autoptr(GError) error = NULL;
	bool truncated;

	walked = repo_walk_new(c->repo, head, hide, limit, &truncated, &error);
	return walked ? walked->len : limit;
}

/* Adds the tested heads of @tree_id's branches (but the job's commit) to @heads. */
static bool tested_heads(const struct bot *c, gint64 tree_id, const char *branch,
			 const char *except, GPtrArray *heads, GError **error)
{
	g_autoptr(GPtrArray) branches = db_branch_list(c->db, tree_id, error);

	if (!branches)
		return false;
	for (guint i = 0; i < branches->len; i++) {
		const struct branch_row *b = branches->pdata[i];

		if (b->state != BRANCH_TESTED || !b->head || strcmp(b->head, except) == 0 ||
		    (branch && strcmp(b->name, branch) != 0))
			continue;
		g_ptr_array_add(heads, g_strdup(b->head));
	}
	return true;
}

/*
 * The merge base of the job's commit with one of @heads nearest to it;
 * NULL if none. A head whose merge base cannot be computed is passed
 * over: it is only a candidate.
 */
static char *nearest_base(const struct bot *c, const struct job_row *job,
			  GPtrArray *heads)
{
	g_autofree char *best = NULL;
	guint best_distance = G_MAXUINT;

	for (guint i = 0; i < heads->len; i++) {
		g_auto(GStrv) bases = repo_merge_bases(c->repo, heads->pdata[i], job->commit, NULL);

		for (char **base = bases; base && *base; base++) {
			guint d;

			/* The head itself is on known ground: nothing of it is new. */
			if (strcmp(*base, job->commit) == 0)
				continue;
			d = distance(c, job->commit, *base, MIN(best_distance, RANGE_MAX));
			if (d < best_distance) {
				g_free(best);
				best = g_strdup(*base);
				best_distance = d;
			}
		}
	}
	return g_steal_pointer(&best);
}

char *culprit_fork_point(const struct bot *c, const struct job_row *job, GError **error)
{
	zd_autoptr(tree_row) tree = db_tree_get(c->db, job->tree, error);
	g_autoptr(GPtrArray) heads = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GPtrArray) trees = NULL;
	char *fork;

	if (!tree)
		return NULL;
	if (tree->base) {
		/* "tree/branch": the branch this tree's work is based on. */
		const char *slash = strchr(tree->base, '/');
		g_autofree char *name = g_strndup(tree->base, slash ? (gsize)(slash - tree->base)
							       : strlen(tree->base));
		zd_autoptr(tree_row) upstream = db_tree_get(c->db, name, NULL);

		if (upstream && !tested_heads(c, upstream->id, slash ? slash + 1 : NULL, job->commit,
					      heads, error))
			return NULL;
		if ((fork = nearest_base(c, job, heads)))
			return fork;
		g_ptr_array_set_size(heads, 0);
	}
	if (!tested_heads(c, job->tree_id, NULL, job->commit, heads, error))
		return NULL;
	if ((fork = nearest_base(c, job, heads)))
		return fork;
	g_ptr_array_set_size(heads, 0);
	trees = db_tree_list(c->db, error);
	if (!trees)
		return NULL;
	for (guint i = 0; i < trees->len; i++) {
		const struct tree_row *t = trees->pdata[i];

		if (t->id != job->tree_id && !tested_heads(c, t->id, NULL, job->commit, heads, error))
			return NULL;
	}
	return nearest_base(c, job, heads);
}
