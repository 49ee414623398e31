/*
 * The whole culprit bisection procedure over a commit DAG: given the
 * boundaries (commits taken as good, and which of them still need to be
 * shown clean), it hands out every probe as a step (boundary checks and
 * the revert check of the culprit included) and ends with a final
 * outcome: a culprit with its confidence, "predates the range" since a
 * boundary, or the suspects. The caller only runs the probes.
 *
 * The model. One failure (one fingerprint) is bisected. Hypothesis k: k
 * is the commit that brought it; then a commit that contains k (k is k
 * or an ancestor of it) shows it in each run with an unknown rate p, and
 * one that does not never shows it. A boundary b that needs verifying
 * adds the hypothesis "it predates the range, at b already" with a small
 * prior. Per commit the clean runs and the failing runs are kept; with p
 * integrated out over a grid of rates, the posterior of k is
 *
 *   w(k) ~ prior(k) * sum over p of prior(p) E(p) p^f (1 - p)^C(k)
 *
 * where f is all failing runs and C(k) the clean runs at commits that
 * contain k; w(k) = 0 when some commit seen failing does not contain k.
 * The rate's prior is Beta(a, b) beside a share at p = 1 exactly (a
 * failure that shows every time is common, and is then named after few
 * runs). E(p) is what bears on the rate alone: the head's routine runs
 * all count, given that at least one of them showed it (that is what
 * started the bisection), which the higher rates explain better.
 *
 * A hypothesis whose posterior reaches the confidence is named. Until
 * then each round's first probe is the commit with the most expected
 * information about k per second of cost (a commit not built yet costs a
 * build; F, the lowest commit seen failing, and the head are probes too:
 * they teach p), run once; the round's other slots each take the run,
 * of a commit already in the round or of the next best probes, that adds
 * most to what the round's runs tell together, when that is worth at
 * least half of a run of the first (else the slot is left to other jobs).
 * With a known rate (a build diagnostic shows every time: rate 1) clean
 * runs rule hypotheses out, as in git bisect.
 *
 * The revert check: once a commit k of the range reaches a posterior of
 * 0.99, the head with k reverted is tested, a round of slots at a time,
 * until k reaches the confidence and the check has run at least its
 * floor: runs enough that a failure showing at the lowest rate the runs
 * leave plausible would have shown (a lucky streak of failures makes a
 * flaky failure look like one that always shows). Those runs are
 * evidence like any other (that commit contains every hypothesis but k).
 * One that shows the failure ends the check: k is ruled out and the
 * search goes on; a second such check means no single commit explains
 * it, and nobody is named. No commit of the range is named without a
 * clean revert, unless it does not revert cleanly (then it is named,
 * unchecked).
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

/* A commit taken as good: where the range starts. */
struct bisect_boundary {
	const char *id;
	/*
	 * Not known to be clean of this failure (a merge base, the last
	 * tested head, a fork point): "the failure predates the range" stays
	 * a hypothesis until runs of it say otherwise.
	 */
	bool verify;
};

struct bisect_params {
	unsigned slots;        /* runs of one step, at once; 1 when the rate is 1 */
	double rate;           /* > 0: the known rate (1: it always shows); 0: unknown */
	double prior_a;        /* an unknown rate: Beta(a, b) ... */
	double prior_b;
	double prior_always;   /* ... beside this share at rate 1 exactly */
	double predates_prior; /* the prior that it predates the range (verify boundaries) */
	double confidence;     /* a hypothesis is named at this posterior */
	double build_cost;     /* seconds: a build of a commit not built yet */
	double run_cost;       /* seconds: one round of runs of a built commit */
	unsigned max_runs;     /* past this many runs, the outcome is inconclusive */
	bool revert_check;     /* test the head with the culprit reverted (see above) */
};

/*
 * Boot failures: an unknown rate under a near-log-uniform prior, which
 * keeps the named culprit calibrated down to p = 0.05 (a uniform prior
 * does not).
 */
#define BISECT_PARAMS_BOOT                                                                   \
	((struct bisect_params){ .slots = 1, .rate = 0.0, .prior_a = 0.05, .prior_b = 1.0,   \
				 .prior_always = 0.1, .predates_prior = 0.02,                \
				 .confidence = 0.999, .build_cost = 120.0, .run_cost = 60.0, .max_runs = 1500,    \
				 .revert_check = true })
/* Build diagnostics: they show every time. */
#define BISECT_PARAMS_BUILD                                                                  \
	((struct bisect_params){ .slots = 1, .rate = 1.0, .prior_a = 0.05, .prior_b = 1.0,   \
				 .predates_prior = 0.02, .confidence = 0.999,                \
				 .build_cost = 1.0, .run_cost = 0.0, .max_runs = 400,        \
				 .revert_check = true })

/*
 * Starts a bisection of a failure that @bad shows, over @commits (the
 * commits reachable from @bad and from none of the boundaries, as
 * repo_walk_new() lists them; others are ignored), from the @n_good
 * boundaries. @bad is seen failing.
 */
struct bisect *bisect_new(const struct bisect_commit *commits, size_t n_commits,
			  const struct bisect_boundary *good, size_t n_good, const char *bad,
			  const struct bisect_params *params, GError **error);
void bisect_free(struct bisect *b);
ZD_AUTOPTR_DEFINE(bisect, bisect_free)

/*
 * Runs known before the bisection: @runs of @id, @failures of them
 * showing the failure (the comparison base's routine boots, boots stored
 * earlier). Logged as routine.
 */
void bisect_observe(struct bisect *b, const char *id, unsigned runs, unsigned failures);

/*
 * The routine runs of the commit that triggered the bisection (the
 * head), in the order they ran (@shows[i]: run i showed it). Those up to
 * and including the first failure are discarded: they were the trigger,
 * and counting them would overstate the rate.
 */
void bisect_observe_trigger(struct bisect *b, const char *id, const bool *shows, size_t n);

/* @id is built already: a probe of it costs no build. */
void bisect_mark_built(struct bisect *b, const char *id);

enum bisect_role {
	BISECT_ROLE_ROUTINE,  /* known before the bisection */
	BISECT_ROLE_BOUNDARY, /* a boundary: does the failure predate the range? */
	BISECT_ROLE_SEARCH,   /* a commit of the range */
	BISECT_ROLE_REVERT,   /* the head with the culprit reverted */
};

const char *bisect_role_name(enum bisect_role role);

/* A probe to run. */
struct bisect_step {
	enum bisect_role role;
	const char *commit; /* borrowed; for BISECT_ROLE_REVERT, the culprit to revert on the head */
	const char *head;   /* for BISECT_ROLE_REVERT: where to revert it */
	unsigned runs;
	bool build;         /* @commit is not built yet */
};

/* The most commits one round probes at once. */
#define BISECT_ROUND_MAX 3

/*
 * Fills @steps (room for @max, at least 1) with the next round: probes to
 * run at once, their runs together at most the slots. Returns how many; 0
 * when the bisection is over. Record every step of a round (in any order)
 * before asking for the next.
 */
guint bisect_next(struct bisect *b, struct bisect_step *steps, guint max);

enum bisect_result {
	BISECT_GOOD, /* every run clean of this failure */
	BISECT_BAD,  /* at least one run showed this failure's fingerprint */
	BISECT_SKIP, /* it could not be tested: another failure, no image, no revert */
};

const char *bisect_result_name(enum bisect_result result);

/*
 * Records the result of @step: @runs runs (more than asked when earlier
 * runs were stored), @failures of them showing the failure. For a revert,
 * @tested is the commit made for it (NULL, with BISECT_SKIP, when the
 * culprit does not revert cleanly).
 */
void bisect_record(struct bisect *b, const struct bisect_step *step, const char *tested,
		   enum bisect_result result, unsigned runs, unsigned failures);

/* One line of the bisection log. */
struct bisect_entry {
	enum bisect_role role;
	char *commit;      /* the commit tested; a revert: the culprit reverted */
	char *tested;      /* a revert: the commit made for it, or NULL */
	enum bisect_result result;
	unsigned runs;
	unsigned failures;
	double belief;     /* after it: the posterior of the most likely hypothesis */
};

enum bisect_verdict {
	BISECT_FOUND,        /* the culprit is named */
	BISECT_PREDATES,     /* it predates the range: a boundary has it */
	BISECT_INCONCLUSIVE, /* see the suspects and the reason */
};

const char *bisect_verdict_name(enum bisect_verdict verdict);

struct bisect_outcome {
	enum bisect_verdict verdict;
	char *culprit;     /* BISECT_FOUND */
	char *since;       /* BISECT_PREDATES: the boundary that has it */
	double confidence; /* the posterior of the culprit, or of "predates" */
	double rate;       /* the rate's posterior mean, given the culprit (or the head) */
	char **suspects;   /* BISECT_INCONCLUSIVE: the most likely first, 99% of the posterior */
	char *reason;      /* BISECT_INCONCLUSIVE: why */
	bool reverted;     /* the culprit's revert check ran clean */
	unsigned runs;     /* runs of the bisection's own steps */
	unsigned builds;   /* commits it built */
	unsigned rounds;   /* rounds */
	GPtrArray *log;    /* struct bisect_entry, in order */
};

void bisect_outcome_clear(struct bisect_outcome *out);

/* The outcome, once bisect_next() returned false. */
void bisect_outcome(struct bisect *b, struct bisect_outcome *out);

/*
 * The runs after which a failure of @rate has shown at least once with
 * probability 1 - @miss.
 */
unsigned bisect_runs_to_show(double rate, double miss);

#endif
