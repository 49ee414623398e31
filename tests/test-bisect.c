/*
 * The bisection procedure (engine/bisect.c), with scripted probes over
 * synthetic histories with a known culprit: failures that always show
 * (builds) on linear histories and merge DAGs, skips, flaky boot failures
 * over many seeds (no wrong culprit at the stated confidence), a failure
 * that predates the range, boundaries that are not ancestors (force-push
 * bases), the revert check (its floor, and its stop at a failure), the
 * routine runs that triggered it, and rounds over several commits.
 */
#include "autoconfig.h"

#include <math.h>
#include <string.h>

#include "tests/bisect-sim.h"
#include "tests/testlib.h"

static void expect_culprit(struct sim *s, const struct bisect_params *params,
			   struct sim_run *run, unsigned max_builds)
{
	struct bisect_outcome o;

	sim_bisect(s, params, run, &o);
	g_assert_cmpstr(bisect_verdict_name(o.verdict), ==, "found");
	g_assert_cmpuint(sim_index(o.culprit), ==, s->culprit);
	g_assert_cmpfloat(o.confidence, >=, params->confidence);
	if (max_builds)
		g_assert_cmpuint(o.builds, <=, max_builds);
	bisect_outcome_clear(&o);
}

static void test_build_linear(void)
{
	static const guint sizes[] = { 1, 2, 3, 16, 128, 1024 };
	struct bisect_params params = BISECT_PARAMS_BUILD;

	for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
		guint n = sizes[i];
		/* git bisect's count, and the build of the revert check. */
		unsigned bound = (unsigned)ceil(log2((double)n)) + 1;
		guint culprits[] = { 1, n / 3 ? n / 3 : 1, n };

		for (size_t c = 0; c < G_N_ELEMENTS(culprits); c++) {
			struct sim *s = sim_linear(n, culprits[c], 1.0, 1);
			struct sim_run run = { 0 };

			g_test_message("linear %u, culprit c%u, at most %u builds", n, culprits[c], bound);
			expect_culprit(s, &params, &run, bound);
			sim_free(s);
		}
	}
}

static void test_build_merges(void)
{
	/* Every commit of a history with topic merges, as the culprit in turn. */
	struct bisect_params params = BISECT_PARAMS_BUILD;
	struct sim *probe = sim_merges(60, 1, 1.0, 1);
	guint n = probe->ids->len;

	sim_free(probe);
	for (guint c = 1; c < n; c++) {
		struct sim *s = sim_merges(60, c, 1.0, 1);
		struct sim_run run = { 0 };

		g_test_message("merges, culprit c%u", c);
		expect_culprit(s, &params, &run, 9);
		sim_free(s);
	}
}

static void test_skips(void)
{
	struct bisect_params params = BISECT_PARAMS_BUILD;
	struct sim_run run = { 0 };
	struct bisect_outcome o;
	struct sim *s = sim_linear(64, 40, 1.0, 1);

	/* The culprit's parent cannot be tested: the outcome names both. */
	g_hash_table_add(s->skip, g_strdup("c39"));
	sim_bisect(s, &params, &run, &o);
	g_assert_cmpint(o.verdict, ==, BISECT_INCONCLUSIVE);
	g_assert_nonnull(o.reason);
	g_assert_cmpuint(g_strv_length(o.suspects), ==, 2);
	g_assert_true(g_strv_contains((const char *const *)o.suspects, "c40"));
	g_assert_true(g_strv_contains((const char *const *)o.suspects, "c39"));
	bisect_outcome_clear(&o);
	sim_free(s);

	/* A skipped commit elsewhere costs a step, not the answer. */
	s = sim_linear(64, 40, 1.0, 1);
	g_hash_table_add(s->skip, g_strdup("c32"));
	g_hash_table_add(s->skip, g_strdup("c48"));
	expect_culprit(s, &params, &run, 0);
	sim_free(s);

	/* The same with a flaky failure: the two suspects, never one of them named. */
	params = BISECT_PARAMS_BOOT;
	params.slots = 2;
	for (guint32 seed = 1; seed <= 20; seed++) {
		struct sim_run flaky = { .routine = 3 };

		s = sim_linear(32, 20, 0.5, seed);
		g_hash_table_add(s->skip, g_strdup("c19"));
		sim_bisect(s, &params, &flaky, &o);
		g_assert_cmpint(o.verdict, ==, BISECT_INCONCLUSIVE);
		g_assert_true(g_strv_contains((const char *const *)o.suspects, "c20"));
		bisect_outcome_clear(&o);
		sim_free(s);
	}
}

/* Flaky failures over many seeds: no wrong culprit, and few inconclusive. */
static void flaky(struct sim *(*make)(guint, guint, double, guint32), guint n, double p,
		  unsigned seeds, unsigned max_mean_boots)
{
	struct bisect_params params = BISECT_PARAMS_BOOT;
	unsigned found = 0, inconclusive = 0, boots = 0;

	params.slots = 2;
	for (guint32 seed = 1; seed <= seeds; seed++) {
		GRand *r = g_rand_new_with_seed(seed * 7919);
		guint culprit = 1 + g_rand_int_range(r, 0, (gint32)n - 1);
		struct sim *s = make(n, culprit, p, seed);
		struct sim_run run = { .routine = 3, .verify = true, .base_runs = 3 };
		struct bisect_outcome o;

		g_rand_free(r);
		sim_bisect(s, &params, &run, &o);
		boots += run.boots;
		if (o.verdict == BISECT_FOUND) {
			found++;
			if (sim_index(o.culprit) != culprit)
				g_error("seed %u: wrong culprit %s (want c%u), confidence %.4f", seed,
					o.culprit, culprit, o.confidence);
			g_assert_cmpfloat(o.confidence, >=, 0.999);
			g_assert_true(o.reverted);
		} else {
			g_assert_cmpint(o.verdict, ==, BISECT_INCONCLUSIVE);
			inconclusive++;
		}
		bisect_outcome_clear(&o);
		sim_free(s);
	}
	g_test_message("flaky N=%u p=%.2f: %u found, %u inconclusive, %.1f boots per bisection",
		       n, p, found, inconclusive, (double)boots / seeds);
	g_assert_cmpuint(inconclusive, <=, seeds / 100);
	g_assert_cmpuint(boots / seeds, <=, max_mean_boots);
}

static void test_flaky(void)
{
	flaky(sim_linear, 128, 0.3, 200, 120);
	flaky(sim_linear, 64, 0.1, 40, 380);
}

static void test_flaky_merges(void)
{
	flaky(sim_merges, 60, 0.5, 100, 70);
}

static void test_always(void)
{
	/* A boot failure that shows every time needs no special case: a few boots a step. */
	flaky(sim_linear, 128, 1.0, 100, 22);
}

static void test_predates(void)
{
	struct bisect_params params = BISECT_PARAMS_BOOT;

	params.slots = 2;
	for (guint32 seed = 1; seed <= 30; seed++) {
		/* The boundary has it already: the culprit is c0. */
		struct sim *s = sim_linear(64, 0, 0.5, seed);
		struct sim_run run = { .routine = 3, .verify = true };
		struct bisect_outcome o;

		sim_bisect(s, &params, &run, &o);
		g_assert_cmpstr(bisect_verdict_name(o.verdict), ==, "predates");
		g_assert_cmpstr(o.since, ==, "c0");
		g_assert_null(o.culprit);
		bisect_outcome_clear(&o);
		sim_free(s);
	}
}

/*
 * A force-pushed branch: the last tested head c5 is not an ancestor of the
 * new head. The range is then what the new head has and its merge base
 * with the old head (c2) does not, from c2, which must be shown clean.
 * (The caller passes the merge bases; a boundary that the failing commit
 * does not contain is ignored.)
 */
static void test_force_push(void)
{
	static const char *const p0[] = { NULL }, *const p1[] = { "c0", NULL },
		*const p2[] = { "c1", NULL }, *const p3[] = { "c2", NULL },
		*const p4[] = { "c3", NULL }, *const p5[] = { "c4", NULL },
		*const n1[] = { "c2", NULL }, *const n2[] = { "n1", NULL },
		*const n3[] = { "n2", NULL };
	const struct bisect_commit commits[] = {
		{ "n1", n1 }, { "n2", n2 }, { "n3", n3 },
	};
	const struct bisect_boundary good[] = { { "c5", false }, { "c2", true } };
	struct bisect_params params = BISECT_PARAMS_BUILD;
	struct bisect_outcome o;
	struct bisect_step step;
	g_autoptr(GPtrArray) asked = g_ptr_array_new();
	struct bisect *b;

	(void)p0, (void)p1, (void)p2, (void)p3, (void)p4, (void)p5;
	b = bisect_new(commits, G_N_ELEMENTS(commits), good, G_N_ELEMENTS(good), "n3", &params,
		       NULL);
	g_assert_nonnull(b);
	/* n2 brought it. */
	while (bisect_next(b, &step, 1)) {
		bool bad;

		g_ptr_array_add(asked, (gpointer)step.commit);
		g_assert_cmpstr(step.commit, !=, "c5");
		if (step.role == BISECT_ROLE_REVERT) {
			g_assert_cmpstr(step.commit, ==, "n2");
			g_assert_cmpstr(step.head, ==, "n3");
			bisect_record(b, &step, "n3-revert", BISECT_GOOD, 1, 0);
			continue;
		}
		bad = strcmp(step.commit, "n2") == 0 || strcmp(step.commit, "n3") == 0;
		g_assert_cmpint(step.role, ==, strcmp(step.commit, "c2") == 0 ? BISECT_ROLE_BOUNDARY
									    : BISECT_ROLE_SEARCH);
		bisect_record(b, &step, NULL, bad ? BISECT_BAD : BISECT_GOOD, 1, bad);
	}
	bisect_outcome(b, &o);
	g_assert_cmpint(o.verdict, ==, BISECT_FOUND);
	g_assert_cmpstr(o.culprit, ==, "n2");
	g_assert_true(o.reverted);
	/* The merge base was verified: the only way past the "predates" prior. */
	g_assert_true(g_ptr_array_find_with_equal_func(asked, "c2", g_str_equal, NULL));
	bisect_outcome_clear(&o);
	bisect_free(b);
}

/* A culprit whose revert does not make the head clean is not named. */
static void test_revert(void)
{
	struct bisect_params params = BISECT_PARAMS_BUILD;

	for (int variant = 0; variant < 2; variant++) {
		struct sim *s = sim_linear(16, 9, 1.0, 1);
		g_autofree struct bisect_commit *commits = g_new0(struct bisect_commit, 16);
		const struct bisect_boundary good[] = { { "c0", false } };
		struct bisect_outcome o;
		struct bisect_step step;
		struct bisect *b;

		for (guint i = 1; i <= 16; i++) {
			commits[i - 1].id = s->ids->pdata[i];
			commits[i - 1].parents = (const char *const *)s->parents->pdata[i];
		}
		b = bisect_new(commits, 16, good, 1, "c16", &params, NULL);
		while (bisect_next(b, &step, 1)) {
			bool bad = step.role != BISECT_ROLE_REVERT && s->bad[sim_index(step.commit)];

			if (step.role == BISECT_ROLE_REVERT && variant == 0)
				bisect_record(b, &step, "reverted", BISECT_BAD, 1, 1);
			else if (step.role == BISECT_ROLE_REVERT)
				bisect_record(b, &step, NULL, BISECT_SKIP, 0, 0);
			else
				bisect_record(b, &step, NULL, bad ? BISECT_BAD : BISECT_GOOD, 1, bad);
		}
		bisect_outcome(b, &o);
		if (variant == 0) {
			/* The head still fails without it: it is not (alone) the culprit. */
			g_assert_cmpint(o.verdict, ==, BISECT_INCONCLUSIVE);
			g_assert_cmpstr(o.suspects[0], ==, "c9");
			g_assert_null(o.suspects[1]);
			g_assert_nonnull(strstr(o.reason, "reverted"));
		} else {
			/* It does not revert cleanly: named, unchecked. */
			g_assert_cmpint(o.verdict, ==, BISECT_FOUND);
			g_assert_cmpstr(o.culprit, ==, "c9");
			g_assert_false(o.reverted);
		}
		g_assert_cmpint(((struct bisect_entry *)o.log->pdata[o.log->len - 1])->role, ==,
				BISECT_ROLE_REVERT);
		bisect_outcome_clear(&o);
		bisect_free(b);
		sim_free(s);
	}
}

static void test_trigger(void)
{
	static const char *const p1[] = { "c0", NULL };
	const struct bisect_commit commits[] = { { "c1", p1 } };
	const struct bisect_boundary good[] = { { "c0", true } };
	struct bisect_params params = BISECT_PARAMS_BOOT;
	const bool routine[] = { false, true, false, true, false };
	const struct bisect_entry *e;
	struct bisect_outcome o;
	struct bisect_step step;
	struct bisect *b = bisect_new(commits, 1, good, 1, "c1", &params, NULL);

	/* Every routine boot counts, given that one of them showed it. */
	bisect_observe_trigger(b, "c1", routine, G_N_ELEMENTS(routine));
	while (bisect_next(b, &step, 1)) {
		bool head = strcmp(step.commit, "c1") == 0;

		/* Only the boundary is in question; the head teaches the rate. */
		g_assert_true(head || strcmp(step.commit, "c0") == 0);
		bisect_record(b, &step, NULL, head ? BISECT_BAD : BISECT_GOOD, step.runs,
			      head ? step.runs : 0);
	}
	bisect_outcome(b, &o);
	e = o.log->pdata[0];
	g_assert_cmpint(e->role, ==, BISECT_ROLE_ROUTINE);
	g_assert_cmpuint(e->runs, ==, 5);
	g_assert_cmpuint(e->failures, ==, 2);
	g_assert_cmpint(o.verdict, ==, BISECT_FOUND);
	g_assert_cmpstr(o.culprit, ==, "c1");
	g_assert_cmpfloat(o.rate, >, 0.0);
	bisect_outcome_clear(&o);
	bisect_free(b);
}

/*
 * Runs a bisection of @s with @params, the head's three routine boots all
 * showing it, every probe answered by the simulation; @revert_bad: the
 * first revert round still shows it. Returns the outcome; *@multi counts
 * the rounds with two or more commits, *@revert_runs the runs of reverts.
 */
static void scripted(struct sim *s, const struct bisect_params *params, bool revert_bad,
		     struct bisect_outcome *o, unsigned *multi, unsigned *revert_runs)
{
	guint n = s->ids->len - 1;
	const char *head = s->ids->pdata[n];
	g_autofree struct bisect_commit *commits = g_new0(struct bisect_commit, n);
	const struct bisect_boundary good = { "c0", true };
	const bool shows[] = { true, true, true };
	struct bisect_step steps[BISECT_ROUND_MAX];
	struct bisect *b;

	for (guint i = 1; i <= n; i++) {
		commits[i - 1].id = s->ids->pdata[i];
		commits[i - 1].parents = (const char *const *)s->parents->pdata[i];
	}
	b = bisect_new(commits, n, &good, 1, head, params, NULL);
	bisect_observe_trigger(b, head, shows, G_N_ELEMENTS(shows));
	*multi = *revert_runs = 0;
	for (guint k; (k = bisect_next(b, steps, BISECT_ROUND_MAX));) {
		unsigned runs = 0;

		*multi += k > 1;
		for (guint i = 0; i < k; i++) {
			bool revert = steps[i].role == BISECT_ROLE_REVERT;
			bool bad = revert ? revert_bad : s->bad[sim_index(steps[i].commit)];

			/* One round: its commits differ, its runs fit the slots. */
			for (guint j = 0; j < i; j++)
				g_assert_cmpstr(steps[j].commit, !=, steps[i].commit);
			runs += steps[i].runs;
			*revert_runs += revert ? steps[i].runs : 0;
			bisect_record(b, &steps[i], revert ? "reverted" : NULL,
				      bad ? BISECT_BAD : BISECT_GOOD, steps[i].runs,
				      bad ? steps[i].runs : 0);
		}
		g_assert_cmpuint(runs, <=, params->slots);
	}
	bisect_outcome(b, o);
	bisect_free(b);
}

/* A round spends its slots on different commits when that tells more. */
static void test_rounds(void)
{
	struct bisect_params params = BISECT_PARAMS_BOOT;
	unsigned multi = 0;

	params.slots = 2;
	for (guint culprit = 1; culprit <= 128; culprit += 9) {
		struct sim *s = sim_linear(128, culprit, 1.0, culprit);
		struct bisect_outcome o;
		unsigned m, reverts;

		scripted(s, &params, false, &o, &m, &reverts);
		g_assert_cmpint(o.verdict, ==, BISECT_FOUND);
		g_assert_cmpuint(sim_index(o.culprit), ==, culprit);
		multi += m;
		bisect_outcome_clear(&o);
		sim_free(s);
	}
	g_assert_cmpuint(multi, >, 0);
}

/*
 * A failure that showed in every run so far may still be flaky, lucky: its
 * culprit is named only after a revert check long enough that a failure
 * showing in half the boots would have shown there (with 95%).
 */
static void test_revert_floor(void)
{
	struct bisect_params params = BISECT_PARAMS_BOOT;
	struct sim *s = sim_linear(128, 53, 1.0, 1);
	struct bisect_outcome o;
	unsigned multi, reverts;

	params.slots = 2;
	scripted(s, &params, false, &o, &multi, &reverts);
	g_assert_cmpint(o.verdict, ==, BISECT_FOUND);
	g_assert_cmpstr(o.culprit, ==, "c53");
	g_assert_cmpuint(reverts, >=, bisect_runs_to_show(0.5, 0.05));
	bisect_outcome_clear(&o);
	sim_free(s);
}

/* A revert check stops at its first round that still shows the failure. */
static void test_revert_stops(void)
{
	struct bisect_params params = BISECT_PARAMS_BOOT;
	struct sim *s = sim_linear(16, 9, 1.0, 1);
	struct bisect_outcome o;
	unsigned multi, reverts, c9 = 0;

	params.slots = 2;
	scripted(s, &params, true, &o, &multi, &reverts);
	/* Every revert still shows it: nobody is named. */
	g_assert_cmpint(o.verdict, ==, BISECT_INCONCLUSIVE);
	g_assert_nonnull(strstr(o.reason, "reverted"));
	/* c9's check was one round. */
	for (guint i = 0; i < o.log->len; i++) {
		const struct bisect_entry *e = o.log->pdata[i];

		if (e->role == BISECT_ROLE_REVERT && strcmp(e->commit, "c9") == 0)
			c9 += e->runs;
	}
	g_assert_cmpuint(c9, >, 0);
	g_assert_cmpuint(c9, <=, params.slots);
	bisect_outcome_clear(&o);
	sim_free(s);
}

/*
 * A flaky failure's leader is confirmed with its own runs too: the clean
 * runs against its parent and on the reverted head count for more the
 * more failing runs pin the rate, and only commits that contain the
 * culprit fail. (Left to the search's information, the confirmation ran
 * 16 clean runs there for each failing run in these seeds; now 5, and the
 * culprit runs within its revert check about 7 times a bisection.)
 */
static void test_confirm(void)
{
	struct bisect_params params = BISECT_PARAMS_BOOT;
	unsigned failing = 0, against = 0, mixed = 0;

	params.slots = 2;
	for (guint32 seed = 1; seed <= 40; seed++) {
		guint culprit = 1 + seed * 3;
		struct sim *s = sim_linear(128, culprit, 0.3, seed);
		struct sim_run run = { .routine = 3, .verify = true, .base_runs = 3 };
		struct bisect_outcome o;
		bool revert_seen = false;

		sim_bisect(s, &params, &run, &o);
		g_assert_cmpint(o.verdict, ==, BISECT_FOUND);
		g_assert_cmpuint(sim_index(o.culprit), ==, culprit);
		for (guint i = 0; i < o.log->len; i++) {
			const struct bisect_entry *e = o.log->pdata[i];
			guint k = sim_index(e->commit);

			if (e->role == BISECT_ROLE_REVERT) {
				against += e->runs - e->failures;
				revert_seen = true;
			} else if (e->role != BISECT_ROLE_ROUTINE) {
				failing += k >= culprit ? e->failures : 0;
				against += k == culprit - 1 ? e->runs : 0;
				/* The culprit's own runs between the revert check's. */
				mixed += revert_seen && k == culprit;
			}
		}
		bisect_outcome_clear(&o);
		sim_free(s);
	}
	g_test_message("confirm: %u clean runs against the parent and reverted, %u failing, "
		       "%u runs of the culprit within its revert check", against, failing, mixed);
	g_assert_cmpuint(against, <, 8 * failing);
	g_assert_cmpuint(mixed, >=, 40);
}

static void test_runs_to_show(void)
{
	g_assert_cmpuint(bisect_runs_to_show(1.0, 0.05), ==, 1);
	g_assert_cmpuint(bisect_runs_to_show(0.3, 0.05), ==, 9);
	g_assert_cmpuint(bisect_runs_to_show(0.5, 0.001), ==, 10);
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/bisect/build-linear", test_build_linear);
	g_test_add_func("/bisect/build-merges", test_build_merges);
	g_test_add_func("/bisect/skips", test_skips);
	g_test_add_func("/bisect/flaky", test_flaky);
	g_test_add_func("/bisect/flaky-merges", test_flaky_merges);
	g_test_add_func("/bisect/always", test_always);
	g_test_add_func("/bisect/predates", test_predates);
	g_test_add_func("/bisect/force-push", test_force_push);
	g_test_add_func("/bisect/revert", test_revert);
	g_test_add_func("/bisect/trigger", test_trigger);
	g_test_add_func("/bisect/rounds", test_rounds);
	g_test_add_func("/bisect/revert-floor", test_revert_floor);
	g_test_add_func("/bisect/revert-stops", test_revert_stops);
	g_test_add_func("/bisect/confirm", test_confirm);
	g_test_add_func("/bisect/runs-to-show", test_runs_to_show);
	return g_test_run();
}
