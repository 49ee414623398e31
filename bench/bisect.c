/*
 * bench/bisect: the real bisection procedure (engine/bisect.c) on
 * simulated linear histories with a known culprit, against the
 * information limit.
 *
 * Build diagnostics (they show every time): builds per bisection against
 * ceil(log2 N), git bisect's count.
 *
 * Boot failures that show in a share p of the boots, N candidate
 * commits, 2 boot slots, the head's 3 routine boots counted (given that
 * one of them showed it: that is what starts a bisection), the last
 * tested head as the boundary with its 3 routine boots: mean and p90
 * boots, distinct commits built, boot rounds, wrong culprits and
 * inconclusive outcomes over fixed seeds, and the information limit:
 * log2(N) over the capacity of the channel "good never fails, bad fails
 * with probability p". The goal is twice the limit. Beside it, the same
 * bisections with the rate told to the engine (what knowing p saves: the
 * part of the cost that is the price of not knowing it). One line per
 * cell:
 *   flaky N=128 p=0.30: boots mean 131.2 p90 210 (goal <= 80: missed; rate told 68.8),
 *   builds 8.1, rounds 66.0 (0.75 of 88.0, a round's commits booted one
 *   by one), wrong 0/1000, inconclusive 0/1000, limit 39.6
 * A round's commits boot side by side (bot/lab/culprit.c, run_round());
 * the ratio is its rounds against the same steps booted one by one.
 * Arguments: [SEEDS [N P]] for one cell.
 */
#include "autoconfig.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/bisect-sim.h"

#define SLOTS 2
#define ROUTINE 3

/* The capacity (bits per run) of the channel: good never fails, bad fails with p. */
static double capacity(double p)
{
	if (p >= 1.0)
		return 1.0;
	return log2(1.0 + p * pow(1.0 - p, (1.0 - p) / p));
}

static int cmp_unsigned(const void *x, const void *y)
{
	unsigned a = *(const unsigned *)x, b = *(const unsigned *)y;

	return a < b ? -1 : a > b;
}

struct tally {
	double boots, builds, rounds, serial_rounds;
	unsigned p90, wrong, inconclusive;
};

static void run_cell(guint n, double p, unsigned seeds, bool told, struct tally *t)
{
	struct bisect_params params = BISECT_PARAMS_BOOT;
	g_autofree unsigned *boots = g_new0(unsigned, seeds);

	memset(t, 0, sizeof(*t));
	params.slots = SLOTS;
	if (told)
		params.rate = p;
	for (unsigned seed = 1; seed <= seeds; seed++) {
		GRand *r = g_rand_new_with_seed(seed * 7919 + n);
		guint culprit = 1 + g_rand_int_range(r, 0, (gint32)n);
		struct sim *s = sim_linear(n, culprit, p, seed);
		struct sim_run run = { .routine = ROUTINE, .verify = true, .base_runs = ROUTINE };
		struct bisect_outcome o;

		g_rand_free(r);
		sim_bisect(s, &params, &run, &o);
		boots[seed - 1] = run.boots;
		t->boots += run.boots;
		t->builds += o.builds;
		t->rounds += run.rounds;
		t->serial_rounds += run.serial_rounds;
		if (o.verdict == BISECT_INCONCLUSIVE)
			t->inconclusive++;
		else if (o.verdict != BISECT_FOUND || sim_index(o.culprit) != culprit)
			t->wrong++;
		bisect_outcome_clear(&o);
		sim_free(s);
	}
	qsort(boots, seeds, sizeof(*boots), cmp_unsigned);
	t->p90 = boots[seeds * 9 / 10];
	t->boots /= seeds;
	t->builds /= seeds;
	t->rounds /= seeds;
	t->serial_rounds /= seeds;
}

static unsigned cell(guint n, double p, unsigned seeds)
{
	struct tally t, told;
	double limit = log2((double)n) / capacity(p);

	run_cell(n, p, seeds, false, &t);
	run_cell(n, p, seeds, true, &told);
	printf("flaky N=%u p=%.2f: boots mean %.1f p90 %u (goal <= %.0f: %s; rate told %.1f), "
	       "builds %.1f, rounds %.1f (%.2f of %.1f, a round's commits booted one by one), "
	       "wrong %u/%u (goal <= %u%s), inconclusive %u/%u, "
	       "limit %.1f\n", n, p, t.boots, t.p90, 2.0 * limit,
	       t.boots <= 2.0 * limit ? "met" : "missed", told.boots, t.builds, t.rounds,
	       t.rounds / t.serial_rounds, t.serial_rounds, t.wrong,
	       seeds, MAX(seeds / 1000, 1), p >= 0.1 ? "" : ", not a goal below p = 0.1",
	       t.inconclusive, seeds, limit);
	fflush(stdout);
	return t.wrong;
}

int main(int argc, char **argv)
{
	static const guint sizes[] = { 16, 128, 1024 };
	static const double rates[] = { 1.0, 0.75, 0.5, 0.3, 0.1 };
	unsigned seeds = argc > 1 ? (unsigned)atoi(argv[1]) : 1000;

	if (argc > 3) {
		cell((guint)atoi(argv[2]), atof(argv[3]), seeds);
		return 0;
	}
	for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
		struct bisect_params params = BISECT_PARAMS_BUILD;
		guint n = sizes[i];
		unsigned worst = 0, total = 0, count = 0;

		for (guint culprit = 1; culprit <= n; culprit += (n > 64 ? n / 64 : 1)) {
			struct sim *s = sim_linear(n, culprit, 1.0, 1);
			struct sim_run run = { 0 };
			struct bisect_outcome o;

			sim_bisect(s, &params, &run, &o);
			if (o.verdict != BISECT_FOUND || sim_index(o.culprit) != culprit) {
				fprintf(stderr, "build N=%u: wrong culprit\n", n);
				return 1;
			}
			worst = MAX(worst, o.builds);
			total += o.builds;
			count++;
			bisect_outcome_clear(&o);
			sim_free(s);
		}
		printf("build N=%u: builds per bisection worst %u mean %.2f (revert check included), "
		       "ceil(log2 N) %.0f\n", n, worst, (double)total / count, ceil(log2((double)n)));
	}
	for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
		for (size_t j = 0; j < G_N_ELEMENTS(rates); j++)
			cell(sizes[i], rates[j], seeds);
	}
	/* The calibration of the cell the goals start from, over ten times the seeds. */
	cell(128, 0.3, 10 * seeds);
	return 0;
}
