/*
 * bench/bisect: test runs per bisection against ceil(log2 N) on linear
 * histories (deterministic failures), and accuracy and runs with a
 * failure that shows in 30% of runs, over many seeds: with the rate known,
 * and as zeroday run does it, with the rate measured over 10 runs at the
 * head and taken at its lower bound (against the same with the point
 * estimate, which is what that bound is for).
 */
#include "autoconfig.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tests/bisect-sim.h"

/* Counts an outcome against the known culprit, and clears it. */
static void score(struct bisect_outcome *o, const char *culprit, unsigned *right,
		  unsigned *wrong, unsigned *inconclusive)
{
	if (!o->found)
		(*inconclusive)++;
	else if (strcmp(o->culprit, culprit) != 0)
		(*wrong)++;
	else
		(*right)++;
	bisect_outcome_clear(o);
}

int main(void)
{
	static const guint sizes[] = { 16, 128, 1024 };
	const unsigned seeds = 500;

	for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
		guint n = sizes[i];
		unsigned worst = 0, total = 0, count = 0;
		double bound = ceil(log2((double)n));

		for (guint culprit = 1; culprit < n; culprit += (n > 64 ? n / 64 : 1)) {
			struct sim *s = sim_linear(n, culprit, 1.0, 1);
			struct bisect_outcome o;

			sim_bisect(s, 1.0, 0.001, 0.95, &o);
			if (!o.found || strcmp(o.culprit, s->ids->pdata[culprit]) != 0) {
				fprintf(stderr, "wrong culprit for n=%u\n", n);
				return 1;
			}
			worst = MAX(worst, o.total_runs);
			total += o.total_runs;
			count++;
			bisect_outcome_clear(&o);
			sim_free(s);
		}
		printf("linear N=%u: runs per bisection: worst %u, mean %.2f; ceil(log2 N) = %.0f; "
		       "ratio worst/log2: %.2f\n", n, worst, (double)total / count, bound,
		       worst / bound);
	}

	for (int variant = 0; variant < 2; variant++) {
		double max_error = variant == 0 ? 0.001 : 0.03;
		unsigned found = 0, wrong = 0, inconclusive = 0, runs = 0, steps = 0;

		for (guint32 seed = 1; seed <= seeds; seed++) {
			GRand *r = g_rand_new_with_seed(seed * 7919);
			guint culprit = 1 + g_rand_int_range(r, 0, 127);
			struct sim *s = sim_linear(128, culprit, 0.3, seed);
			struct bisect_outcome o;

			g_rand_free(r);
			sim_bisect(s, 0.3, max_error, 0.95, &o);
			runs += o.total_runs;
			steps += o.log->len;
			score(&o, s->ids->pdata[culprit], &found, &wrong, &inconclusive);
			sim_free(s);
		}
		printf("30%%-flaky, N=128, %u seeds, max-error %.3f (%u runs per step; syzbot: 10): "
		       "right %u, wrong %u, inconclusive %u; accuracy %.3f; %.1f runs per bisection, "
		       "%.1f per step\n", seeds, max_error, bisect_runs_per_step(0.3, max_error),
		       found, wrong, inconclusive, (double)found / seeds, (double)runs / seeds,
		       (double)runs / steps);
	}
	for (int variant = 0; variant < 2; variant++) {
		bool bound = variant == 0;
		unsigned found = 0, wrong = 0, inconclusive = 0, unseen = 0, runs = 0, tried = 0;

		for (guint32 seed = 1; seed <= seeds; seed++) {
			GRand *r = g_rand_new_with_seed(seed * 7919);
			guint culprit = 1 + g_rand_int_range(r, 0, 127);
			struct sim *s = sim_linear(128, culprit, 0.3, seed);
			struct bisect_outcome o;
			unsigned shown = 0;
			double p;

			for (int i = 0; i < 10; i++)
				shown += g_rand_double(r) < 0.3;
			g_rand_free(r);
			if (shown == 0) {
				/* Ten clean boots of the head: nothing to bisect. */
				unseen++;
				sim_free(s);
				continue;
			}
			p = bound ? bisect_rate_lower_bound(shown, 10) : shown / 10.0;
			sim_bisect(s, p, 0.001, 0.95, &o);
			tried++;
			runs += 10 + o.total_runs;
			score(&o, s->ids->pdata[culprit], &found, &wrong, &inconclusive);
			sim_free(s);
		}
		printf("30%%-flaky, N=128, rate measured over 10 head runs, %s: %u bisected "
		       "(%u never showed): right %u, wrong %u, inconclusive %u; %.1f runs per "
		       "bisection with the 10\n", bound ? "lower bound (zeroday run)"
						      : "point estimate (for comparison)",
		       tried, unseen, found, wrong, inconclusive, (double)runs / MAX(tried, 1));
	}
	return 0;
}
