/*
 * A bisection simulator for tests and bench/bisect: synthetic histories
 * with a known culprit, and a test oracle that fails with probability p on
 * commits that contain the culprit.
 */
#ifndef ZERODAY_BISECT_SIM_H
#define ZERODAY_BISECT_SIM_H

#include <glib.h>

#include "engine/bisect.h"

struct sim {
	GPtrArray *ids;      /* char * */
	GPtrArray *parents;  /* char ** (NULL-terminated) per commit */
	guint culprit;
	guint8 *bad;         /* contains the culprit */
	GHashTable *skip;    /* ids that cannot be tested */
	double p;            /* chance a bad commit shows the failure per run */
	GRand *rand;
};

/* c0 .. c(n-1), each the parent of the next. */
struct sim *sim_linear(guint n, guint culprit, double p, guint32 seed);

/*
 * A mainline with a topic branch of 3 commits merged every 8 commits, n
 * commits in all; the culprit is the n-th created (mainline or topic).
 */
struct sim *sim_merges(guint n, guint culprit, double p, guint32 seed);

void sim_free(struct sim *s);

/* Runs a whole bisection; fills @out. Good is c0, bad the last commit. */
void sim_bisect(struct sim *s, double p_estimate, double max_error, double min_confidence,
		struct bisect_outcome *out);

#endif
