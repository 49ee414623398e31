/*
 * Culprit bisection over a commit DAG: good/bad/skip results in, the next
 * commit to test out. Flaky-aware: a run that shows the failure proves a
 * commit bad; clean runs only make "good" likely, so each step repeats the
 * test until the chance that a bad commit stayed clean is small, and the
 * outcome carries the confidence that follows. No guessing: when that
 * confidence is too low, or skips hide the culprit, the outcome is a range.
 */
#ifndef ZERODAY_BISECT_H
#define ZERODAY_BISECT_H

#include <stdbool.h>
#include <glib.h>

#include "engine/engine.h"

struct bisect;

/* One commit of the DAG: its id and its parents' ids (NULL-terminated). */
struct bisect_commit {
	const char *id;
	const char *const *parents;
};

/*
 * Starts a bisection of the failure over @commits (every commit reachable
 * from @bad; others are ignored), between the known-good @good commits
 * (NULL-terminated) and @bad.
 *
 * @p_show: the chance that one run of a bad commit shows the failure, as
 * measured where it was found (1.0 for a failure that always shows).
 * @max_error: the accepted chance that one "good" step is wrong; each step
 * repeats its test ceil(log(max_error) / log(1 - p_show)) times.
 * @min_confidence: below this, the outcome is inconclusive.
 */
struct bisect *bisect_new(const struct bisect_commit *commits, size_t n_commits,
			  const char *const *good, const char *bad, double p_show,
			  double max_error, double min_confidence, GError **error);
void bisect_free(struct bisect *b);
ZD_AUTOPTR_DEFINE(bisect, bisect_free)

/*
 * Returns the next commit to test (borrowed) and in *@runs how many times,
 * or NULL when the bisection is over.
 */
const char *bisect_next(struct bisect *b, unsigned *runs);

enum bisect_result {
	BISECT_GOOD, /* every run clean of this failure */
	BISECT_BAD,  /* at least one run showed this failure's fingerprint */
	BISECT_SKIP, /* it could not be tested: another failure, or infra */
};

/* Records the result of testing @id: @runs runs, @failures of them showed it. */
void bisect_record(struct bisect *b, const char *id, enum bisect_result result,
		   unsigned runs, unsigned failures);

struct bisect_step {
	char *id;
	enum bisect_result result;
	unsigned runs;
	unsigned failures;
};

struct bisect_outcome {
	bool found;          /* a culprit; else inconclusive */
	char *culprit;       /* when found */
	double confidence;   /* that no "good" step was wrong */
	char **suspects;     /* when inconclusive: every commit that may be it */
	unsigned total_runs;
	GPtrArray *log;      /* struct bisect_step, in order */
};

void bisect_outcome_clear(struct bisect_outcome *out);

/* The outcome, once bisect_next() returned NULL. */
void bisect_outcome(struct bisect *b, struct bisect_outcome *out);

/*
 * A rate to bisect with, from @failures of @runs: the lower bound of its
 * one-sided 95% Wilson score interval, so that a failure seen in 2 of 2
 * runs is not taken to show every time (10/10 gives 0.79, 5/10 0.27).
 */
double bisect_rate_lower_bound(unsigned failures, unsigned runs);

/* The runs per step for @p_show and @max_error. */
unsigned bisect_runs_per_step(double p_show, double max_error);

#endif
