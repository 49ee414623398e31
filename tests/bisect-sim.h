/*
 * A bisection simulator for tests and bench/bisect: synthetic histories
 * with a known culprit, and an oracle that shows the failure with
 * probability p in each run of a commit that contains the culprit. It
 * drives the real procedure (engine/bisect.c) as zeroday run does: the
 * head's routine runs first, then every step the procedure hands out,
 * the revert check included.
 */
#ifndef ZERODAY_BISECT_SIM_H
#define ZERODAY_BISECT_SIM_H

#include <glib.h>

#include "engine/bisect.h"

struct sim {
	GPtrArray *ids;      /* char *: c0, c1, ... */
	GPtrArray *parents;  /* char ** (NULL-terminated) per commit */
	guint culprit;       /* an index; 0 is the boundary: the failure predates the range */
	guint8 *bad;         /* contains the culprit */
	GHashTable *skip;    /* ids that cannot be tested */
	GHashTable *boundaries; /* ids of the boundaries (c0 unless told) */
	double p;            /* chance a bad commit shows the failure per run */
	GRand *rand;
};

/* c0 (the boundary) .. cn, each the parent of the next: n commits in the range. */
struct sim *sim_linear(guint n, guint culprit, double p, guint32 seed);

/*
 * A mainline with a topic branch of 3 commits merged every 8 commits, n
 * commits after c0 in all; the culprit is the culprit-th created.
 */
struct sim *sim_merges(guint n, guint culprit, double p, guint32 seed);

void sim_free(struct sim *s);

struct sim_run {
	unsigned routine;     /* routine runs of the head before the bisection */
	bool verify;          /* the boundaries need verifying */
	unsigned base_runs;   /* clean routine runs known of each boundary */
	bool no_revert;       /* the culprit does not revert cleanly */
	unsigned boots;       /* out: all runs, the routine ones included */
	unsigned rounds;      /* out: rounds of runs, the routine ones included */
	/*
	 * out: the rounds had each round's commits booted one after the
	 * other, each on the slots alone (as zeroday did before run_round())
	 */
	unsigned serial_rounds;
};

/*
 * Runs a whole bisection from the boundaries to the last commit with
 * @params; fills @out.
 */
void sim_bisect(struct sim *s, const struct bisect_params *params, struct sim_run *run,
		struct bisect_outcome *out);

/* The index of a simulated commit id. */
guint sim_index(const char *id);

#endif
