/*
 * Bisection, table-driven over synthetic histories with a known culprit:
 * exact culprits, merges, skips, and a 30%-flaky failure over many seeds
 * with no wrong culprit at the stated confidence.
 */
#include "autoconfig.h"

#include <math.h>
#include <string.h>

#include "tests/bisect-sim.h"
#include "tests/testlib.h"

static void expect_culprit(struct sim *s, unsigned max_runs)
{
	struct bisect_outcome o;
	g_autofree char *want = g_strdup_printf("c%u", s->culprit);

	sim_bisect(s, s->p, 0.001, 0.95, &o);
	g_assert_true(o.found);
	g_assert_cmpstr(o.culprit, ==, want);
	if (max_runs)
		g_assert_cmpuint(o.total_runs, <=, max_runs);
	bisect_outcome_clear(&o);
}

static void test_linear(void)
{
	static const guint sizes[] = { 2, 3, 16, 128, 1024 };

	for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
		guint n = sizes[i];
		unsigned bound = (unsigned)ceil(log2((double)n));
		guint culprits[] = { 1, n / 3 ? n / 3 : 1, n - 1 };

		for (size_t c = 0; c < G_N_ELEMENTS(culprits); c++) {
			struct sim *s = sim_linear(n, culprits[c], 1.0, 1);

			g_test_message("linear %u, culprit c%u, at most %u runs", n, culprits[c], bound);
			expect_culprit(s, bound ? bound : 1);
			sim_free(s);
		}
	}
}

static void test_merges(void)
{
	/* Every commit of a history with topic merges, as the culprit in turn. */
	struct sim *probe = sim_merges(60, 1, 1.0, 1);
	guint n = probe->ids->len;

	sim_free(probe);
	for (guint c = 1; c < n; c++) {
		struct sim *s = sim_merges(60, c, 1.0, 1);

		g_test_message("merges, culprit c%u", c);
		expect_culprit(s, 0);
		sim_free(s);
	}
}

static void test_skips(void)
{
	/* The culprit's parent cannot be tested: the outcome names both. */
	struct sim *s = sim_linear(64, 40, 1.0, 1);
	struct bisect_outcome o;

	g_hash_table_add(s->skip, g_strdup("c39"));
	sim_bisect(s, 1.0, 0.001, 0.95, &o);
	g_assert_false(o.found);
	g_assert_true(g_strv_contains((const char *const *)o.suspects, "c40"));
	g_assert_true(g_strv_contains((const char *const *)o.suspects, "c39"));
	g_assert_cmpuint(g_strv_length(o.suspects), ==, 2);
	bisect_outcome_clear(&o);
	sim_free(s);

	/* A skipped commit elsewhere costs a step, not the answer. */
	s = sim_linear(64, 40, 1.0, 1);
	g_hash_table_add(s->skip, g_strdup("c32"));
	g_hash_table_add(s->skip, g_strdup("c48"));
	expect_culprit(s, 0);
	sim_free(s);
}

static void test_flaky(void)
{
	unsigned found = 0, inconclusive = 0, wrong = 0, runs = 0;
	const unsigned seeds = 300;

	for (guint32 seed = 1; seed <= seeds; seed++) {
		GRand *r = g_rand_new_with_seed(seed * 7919);
		guint culprit = 1 + g_rand_int_range(r, 0, 127);
		struct sim *s = sim_linear(128, culprit, 0.3, seed);
		struct bisect_outcome o;
		g_autofree char *want = g_strdup_printf("c%u", culprit);

		g_rand_free(r);
		sim_bisect(s, 0.3, 0.001, 0.95, &o);
		runs += o.total_runs;
		if (o.found) {
			found++;
			if (strcmp(o.culprit, want) != 0) {
				wrong++;
				g_test_message("seed %u: wrong culprit %s (want %s), confidence %.4f",
					       seed, o.culprit, want, o.confidence);
			}
			g_assert_cmpfloat(o.confidence, >=, 0.95);
		} else {
			inconclusive++;
			g_assert_true(g_strv_contains((const char *const *)o.suspects, want));
		}
		bisect_outcome_clear(&o);
		sim_free(s);
	}
	g_test_message("flaky p=0.3: %u found, %u inconclusive, %u wrong, %.1f runs per bisection",
		       found, inconclusive, wrong, (double)runs / seeds);
	g_assert_cmpuint(wrong, ==, 0);
	g_assert_cmpuint(found, >, seeds * 9 / 10);
	g_assert_cmpuint(bisect_runs_per_step(0.3, 0.001), ==, 20);
}

static void test_log(void)
{
	struct sim *s = sim_linear(16, 5, 1.0, 1);
	struct bisect_outcome o;
	const struct bisect_step *last;

	sim_bisect(s, 1.0, 0.001, 0.95, &o);
	g_assert_cmpuint(o.log->len, ==, 4);
	last = o.log->pdata[o.log->len - 1];
	g_assert_true(strcmp(last->id, "c5") == 0 || strcmp(last->id, "c4") == 0);
	bisect_outcome_clear(&o);
	sim_free(s);
}

static void test_rate_bound(void)
{
	/* Wilson's lower bound at one-sided 95%, against values computed by hand. */
	g_assert_cmpfloat_with_epsilon(bisect_rate_lower_bound(10, 10), 0.7870, 0.001);
	g_assert_cmpfloat_with_epsilon(bisect_rate_lower_bound(5, 10), 0.2693, 0.001);
	g_assert_cmpfloat_with_epsilon(bisect_rate_lower_bound(2, 2), 0.4250, 0.001);
	g_assert_cmpfloat(bisect_rate_lower_bound(0, 10), ==, 0.0);
	/* More evidence, a tighter bound. */
	g_assert_cmpfloat(bisect_rate_lower_bound(100, 100), >, bisect_rate_lower_bound(10, 10));
	/* What a step costs at those rates, for a 0.1% chance of a wrong "good". */
	g_assert_cmpuint(bisect_runs_per_step(bisect_rate_lower_bound(10, 10), 0.001), ==, 5);
	g_assert_cmpuint(bisect_runs_per_step(bisect_rate_lower_bound(5, 10), 0.001), ==, 23);
}

int main(int argc, char **argv)
{
	testlib_init(&argc, &argv);
	g_test_add_func("/bisect/linear", test_linear);
	g_test_add_func("/bisect/merges", test_merges);
	g_test_add_func("/bisect/skips", test_skips);
	g_test_add_func("/bisect/flaky", test_flaky);
	g_test_add_func("/bisect/log", test_log);
	g_test_add_func("/bisect/rate-bound", test_rate_bound);
	return g_test_run();
}
