/*
 * Culprit bisection: see bisect.h for the model.
 *
 * The nodes are the commits of the range and the boundaries; a
 * hypothesis sits on each candidate (an ancestor of bad, or bad) and on
 * each boundary that needs verifying. "Commit c contains h" is "h is c or
 * an ancestor of c". Every step recomputes the posterior from the runs
 * (no state but the counts, so a probe's order does not matter), then
 * either names a hypothesis or scores every testable commit by the
 * mutual information between its outcome (how many of m runs fail) and
 * the hypothesis, per second of cost.
 *
 * Hypotheses are grouped by C(k): within a group the rate's posterior,
 * and so the law of a probe's outcome, is the same (scored with the
 * group's posterior mean rate, over SCORE_ROUNDS rounds). On a linear
 * range (the common case) containment is an order, and the per-commit
 * sums are prefix sums; a DAG takes a walk of ancestors per commit.
 */
#define G_LOG_DOMAIN "engine"

#include "autoconfig.h"

#include <math.h>
#include <string.h>

#include "engine/bisect.h"

/* Scores below this (bits) mean no commit can tell the suspects apart. */
#define MIN_INFORMATION 1e-5
/*
 * The revert check starts once the culprit's posterior reaches this: its
 * clean runs are evidence like any other (the head without k contains
 * every other hypothesis), so they finish the search as well as check it.
 */
#define REVERT_AT 0.99
/* The most runs of one revert check. */
#define REVERT_RUNS_MAX 64
/*
 * Its runs are as many as, all clean, would make the culprit this many
 * times surer than the confidence: the check stops right at the line,
 * where a search by itself overshoots it.
 */
#define REVERT_MARGIN 1.0
/*
 * A probe is scored as if it were run for this many rounds: one round of a
 * commit may say little while the rate is unsure, a few say much more;
 * this also weighs the cost of a build against the rounds it serves.
 */
#define SCORE_ROUNDS 3
/* A DAG larger than this scores a sample of its commits per step. */
#define FULL_SCORING_MAX 2048
#define SAMPLE 256
/* The share of the posterior the suspects of an inconclusive outcome cover. */
#define SUSPECTS_COVER 0.99
#define SUSPECTS_MAX 32

struct node {
	char *id;
	guint *parents;     /* node indices */
	guint n_parents;
	bool boundary;
	bool relevant;      /* bad contains it */
	bool hypothesis;
	bool built;
	bool untestable;
	bool revert_tried;  /* the head with it reverted was asked for */
	bool revert_failed; /* and still showed it */
	unsigned clean;
	unsigned fails;
	unsigned revert_clean; /* clean runs of the head with it reverted */
	double log_prior;
};

enum phase { PHASE_SEARCH, PHASE_REVERT, PHASE_DONE };

struct bisect {
	struct node *nodes;
	guint n;
	GHashTable *index; /* id -> node index + 1 */
	guint bad;
	struct bisect_params p;
	guint *order;      /* relevant nodes, parents first */
	guint n_order;
	bool chain;        /* order[i]'s only parent is order[i - 1] */

	/* The posterior, as update() leaves it. */
	double *w;
	unsigned *c;       /* clean runs at commits that contain it */
	guint8 *viable;
	unsigned fails;    /* failing runs, all commits */
	guint best;        /* the most likely hypothesis */
	double predates;   /* the posterior of all boundary hypotheses */
	bool explained;    /* some hypothesis is consistent with the runs */

	guint32 *stamp;    /* for ancestor walks */
	guint32 generation;
	GArray *stack;

	enum phase phase;
	enum bisect_verdict verdict;
	guint named;        /* the culprit (or boundary) named, or revert-checked */
	unsigned reverts;   /* all revert_clean */
	unsigned revert_fails; /* failing runs of reverts that still showed it */
	unsigned failed_reverts;
	double confidence;
	char *reason;
	bool reverted;
	unsigned runs, builds, rounds;
	GPtrArray *log;
};

const char *bisect_role_name(enum bisect_role role)
{
	static const char *const names[] = {
		[BISECT_ROLE_ROUTINE] = "routine", [BISECT_ROLE_BOUNDARY] = "boundary",
		[BISECT_ROLE_SEARCH] = "search", [BISECT_ROLE_REVERT] = "revert",
	};

	g_return_val_if_fail((size_t)role < G_N_ELEMENTS(names), "?");
	return names[role];
}

const char *bisect_result_name(enum bisect_result result)
{
	static const char *const names[] = {
		[BISECT_GOOD] = "good", [BISECT_BAD] = "bad", [BISECT_SKIP] = "skip",
	};

	g_return_val_if_fail((size_t)result < G_N_ELEMENTS(names), "?");
	return names[result];
}

const char *bisect_verdict_name(enum bisect_verdict verdict)
{
	static const char *const names[] = {
		[BISECT_FOUND] = "found", [BISECT_PREDATES] = "predates",
		[BISECT_INCONCLUSIVE] = "inconclusive",
	};

	g_return_val_if_fail((size_t)verdict < G_N_ELEMENTS(names), "?");
	return names[verdict];
}

unsigned bisect_runs_to_show(double rate, double miss)
{
	if (rate >= 1.0 || rate <= 0.0)
		return 1;
	return (unsigned)ceil(log(miss) / log(1.0 - rate));
}

static void entry_free(struct bisect_entry *e)
{
	g_free(e->commit);
	g_free(e->tested);
	g_free(e);
}

void bisect_free(struct bisect *b)
{
	if (!b)
		return;
	for (guint i = 0; i < b->n; i++) {
		g_free(b->nodes[i].id);
		g_free(b->nodes[i].parents);
	}
	g_free(b->nodes);
	g_hash_table_unref(b->index);
	g_free(b->order);
	g_free(b->w);
	g_free(b->c);
	g_free(b->viable);
	g_free(b->stamp);
	g_array_unref(b->stack);
	g_free(b->reason);
	g_ptr_array_unref(b->log);
	g_free(b);
}

static gint find(const struct bisect *b, const char *id)
{
	return GPOINTER_TO_INT(g_hash_table_lookup(b->index, id)) - 1;
}

static guint add_node(struct bisect *b, const char *id)
{
	struct node *n = &b->nodes[b->n];

	n->id = g_strdup(id);
	g_hash_table_insert(b->index, n->id, GINT_TO_POINTER(b->n + 1));
	return b->n++;
}

/*
 * Starts a walk of @from and its ancestors among the relevant nodes;
 * walk_next() returns them one by one, -1 at the end. Iterative:
 * histories are deep.
 */
static void walk_start(struct bisect *b, guint from)
{
	if (++b->generation == 0) {
		memset(b->stamp, 0, b->n * sizeof(*b->stamp));
		b->generation = 1;
	}
	g_array_set_size(b->stack, 0);
	g_array_append_val(b->stack, from);
}

static gint walk_next(struct bisect *b)
{
	while (b->stack->len) {
		guint i = g_array_index(b->stack, guint, b->stack->len - 1);

		g_array_set_size(b->stack, b->stack->len - 1);
		if (b->stamp[i] == b->generation)
			continue;
		b->stamp[i] = b->generation;
		for (guint p = 0; p < b->nodes[i].n_parents; p++) {
			if (b->stamp[b->nodes[i].parents[p]] != b->generation)
				g_array_append_val(b->stack, b->nodes[i].parents[p]);
		}
		return (gint)i;
	}
	return -1;
}

/* Orders the relevant nodes parents first (Kahn), and tells a chain. */
static void sort_nodes(struct bisect *b)
{
	g_autofree guint *pending = g_new0(guint, b->n);
	g_autoptr(GArray) ready = g_array_new(FALSE, FALSE, sizeof(guint));
	g_autoptr(GPtrArray) kids = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);

	for (guint i = 0; i < b->n; i++)
		g_ptr_array_add(kids, g_array_new(FALSE, FALSE, sizeof(guint)));
	for (guint i = 0; i < b->n; i++) {
		if (!b->nodes[i].relevant)
			continue;
		for (guint p = 0; p < b->nodes[i].n_parents; p++) {
			g_array_append_val(kids->pdata[b->nodes[i].parents[p]], i);
			pending[i]++;
		}
		if (!pending[i])
			g_array_append_val(ready, i);
	}
	b->order = g_new0(guint, b->n);
	b->n_order = 0;
	for (guint r = 0; r < ready->len; r++) {
		guint i = g_array_index(ready, guint, r);
		GArray *k = kids->pdata[i];

		b->order[b->n_order++] = i;
		for (guint j = 0; j < k->len; j++) {
			guint child = g_array_index(k, guint, j);

			if (--pending[child] == 0)
				g_array_append_val(ready, child);
		}
	}
	b->chain = b->n_order > 0 && b->nodes[b->order[0]].n_parents == 0;
	for (guint r = 1; b->chain && r < b->n_order; r++) {
		const struct node *n = &b->nodes[b->order[r]];

		b->chain = n->n_parents == 1 && n->parents[0] == b->order[r - 1];
	}
	}

struct bisect *bisect_new(const struct bisect_commit *commits, size_t n_commits,
			  const struct bisect_boundary *good, size_t n_good, const char *bad,
			  const struct bisect_params *params, GError **error)
{
	zd_autoptr(bisect) b = g_new0(struct bisect, 1);
	guint n_candidates = 0, n_verify = 0;
	double predates;
	gint bad_i;

	g_return_val_if_fail(params->rate >= 0.0 && params->rate <= 1.0, NULL);
	g_return_val_if_fail(params->confidence > 0.5 && params->confidence < 1.0, NULL);
	g_return_val_if_fail(params->rate > 0.0 || (params->prior_a > 0.0 && params->prior_b > 0.0),
			     NULL);
	b->p = *params;
	if (b->p.slots == 0 || b->p.rate >= 1.0)
		b->p.slots = 1;
	b->nodes = g_new0(struct node, n_commits + n_good);
	b->index = g_hash_table_new(g_str_hash, g_str_equal);
	b->stack = g_array_new(FALSE, FALSE, sizeof(guint));
	b->log = g_ptr_array_new_with_free_func((GDestroyNotify)entry_free);
	for (size_t i = 0; i < n_good; i++) {
		gint j = find(b, good[i].id);

		if (j < 0)
			j = (gint)add_node(b, good[i].id);
		b->nodes[j].boundary = true;
		b->nodes[j].hypothesis = b->nodes[j].hypothesis || good[i].verify;
		b->nodes[j].built = true;
	}
	for (size_t i = 0; i < n_commits; i++) {
		if (find(b, commits[i].id) < 0)
			add_node(b, commits[i].id);
	}
	for (size_t i = 0; i < n_commits; i++) {
		struct node *n = &b->nodes[find(b, commits[i].id)];
		guint np = commits[i].parents ? g_strv_length((char **)commits[i].parents) : 0;

		if (n->boundary || n->parents)
			continue; /* a boundary's ancestors are not the range's */
		n->parents = g_new0(guint, MAX(np, 1));
		for (guint p = 0; p < np; p++) {
			gint j = find(b, commits[i].parents[p]);

			/* Parents outside the range and its boundaries are not needed. */
			if (j >= 0)
				n->parents[n->n_parents++] = (guint)j;
		}
	}
	bad_i = find(b, bad);
	if (bad_i < 0 || b->nodes[bad_i].boundary) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_NOT_FOUND,
			    "the failing commit %s is not in the range", bad);
		return NULL;
	}
	b->bad = (guint)bad_i;
	b->nodes[b->bad].built = true;
	b->stamp = g_new0(guint32, b->n);
	walk_start(b, b->bad);
	for (gint i; (i = walk_next(b)) >= 0;) {
		struct node *n = &b->nodes[i];

		n->relevant = true;
		if (!n->boundary)
			n->hypothesis = true;
		if (n->hypothesis)
			n->boundary ? n_verify++ : n_candidates++;
	}
	for (guint i = 0; i < b->n; i++) {
		if (!b->nodes[i].relevant)
			b->nodes[i].hypothesis = false;
	}
	predates = n_verify ? b->p.predates_prior : 0.0;
	for (guint i = 0; i < b->n; i++) {
		struct node *n = &b->nodes[i];

		n->log_prior = !n->hypothesis ? -INFINITY
			     : n->boundary ? log(predates / n_verify)
			     : log((1.0 - predates) / n_candidates);
	}
	sort_nodes(b);
	b->w = g_new0(double, b->n);
	b->c = g_new0(unsigned, b->n);
	b->viable = g_new0(guint8, b->n);
	b->phase = PHASE_SEARCH;
	return g_steal_pointer(&b);
}

static void log_entry(struct bisect *b, enum bisect_role role, const char *commit,
		      const char *tested, enum bisect_result result, unsigned runs,
		      unsigned failures);

void bisect_observe(struct bisect *b, const char *id, unsigned runs, unsigned failures)
{
	gint i = find(b, id);

	g_return_if_fail(i >= 0 && failures <= runs);
	b->nodes[i].clean += runs - failures;
	b->nodes[i].fails += failures;
	b->nodes[i].built = true;
	log_entry(b, BISECT_ROLE_ROUTINE, id, NULL, failures ? BISECT_BAD : BISECT_GOOD, runs,
		  failures);
}

void bisect_observe_trigger(struct bisect *b, const char *id, const bool *shows, size_t n)
{
	size_t first = 0;
	unsigned failures = 0;

	while (first < n && !shows[first])
		first++;
	for (size_t i = first + 1; i < n; i++)
		failures += shows[i];
	if (first + 1 < n)
		bisect_observe(b, id, (unsigned)(n - first - 1), failures);
	else
		bisect_mark_built(b, id);
}

void bisect_mark_built(struct bisect *b, const char *id)
{
	gint i = find(b, id);

	if (i >= 0)
		b->nodes[i].built = true;
}

/* Per unit of C(k): the log-likelihood of the clean runs, for a known rate. */
static double known_log_clean(const struct bisect *b, unsigned clean)
{
	if (clean == 0)
		return 0.0;
	return b->p.rate >= 1.0 ? -INFINITY : clean * log1p(-b->p.rate);
}

/* Recomputes the posterior from the counts. */
static void update(struct bisect *b)
{
	double a = b->p.prior_a, beta = b->p.prior_b, top = -INFINITY, sum = 0.0;
	unsigned n_failing = 0;
	g_autofree unsigned *reach = NULL;

	b->fails = b->revert_fails;
	for (guint i = 0; i < b->n; i++)
		b->fails += b->nodes[i].relevant ? b->nodes[i].fails : 0;
	memset(b->c, 0, b->n * sizeof(*b->c));
	/* The head with k reverted contains every other hypothesis. */
	for (guint i = 0; i < b->n; i++)
		b->c[i] = b->reverts - b->nodes[i].revert_clean;
	if (b->chain) {
		guint low = b->n_order; /* the lowest failing position */
		unsigned suffix = 0;

		for (guint r = b->n_order; r-- > 0;) {
			const struct node *n = &b->nodes[b->order[r]];

			suffix += n->clean;
			b->c[b->order[r]] += suffix;
			if (n->fails || b->order[r] == b->bad)
				low = r;
		}
		for (guint r = 0; r < b->n_order; r++)
			b->viable[b->order[r]] = r <= low;
	} else {
		reach = g_new0(unsigned, b->n);
		for (guint r = 0; r < b->n_order; r++) {
			guint i = b->order[r];
			const struct node *n = &b->nodes[i];
			bool failing = n->fails || i == b->bad;

			if (!failing && !n->clean)
				continue;
			n_failing += failing;
			walk_start(b, i);
			for (gint j; (j = walk_next(b)) >= 0;) {
				b->c[j] += n->clean;
				reach[j] += failing;
			}
		}
		for (guint i = 0; i < b->n; i++)
			b->viable[i] = reach[i] == n_failing;
	}
	for (guint i = 0; i < b->n; i++) {
		const struct node *n = &b->nodes[i];
		double lw = -INFINITY;

		/* A revert that still shows it: the head without it contains the culprit. */
		if (n->hypothesis && b->viable[i] && !n->revert_failed) {
			lw = n->log_prior + (b->p.rate > 0.0
				? known_log_clean(b, b->c[i])
				: lgamma(beta + b->c[i]) - lgamma(a + beta + b->fails + b->c[i]));
		}
		b->w[i] = lw;
		top = MAX(top, lw);
	}
	for (guint i = 0; i < b->n; i++) {
		b->w[i] = isfinite(b->w[i]) ? exp(b->w[i] - top) : 0.0;
		sum += b->w[i];
	}
	b->explained = sum > 0.0;
	b->predates = 0.0;
	b->best = b->bad;
	for (guint i = 0; i < b->n; i++) {
		b->w[i] = sum > 0.0 ? b->w[i] / sum : 0.0;
		if (b->nodes[i].boundary)
			b->predates += b->w[i];
		if (b->w[i] > b->w[b->best])
			b->best = i;
	}
}

static void log_entry(struct bisect *b, enum bisect_role role, const char *commit,
		      const char *tested, enum bisect_result result, unsigned runs,
		      unsigned failures)
{
	struct bisect_entry *e = g_new0(struct bisect_entry, 1);

	e->role = role;
	e->commit = g_strdup(commit);
	e->tested = g_strdup(tested);
	e->result = result;
	e->runs = runs;
	e->failures = failures;
	update(b);
	e->belief = b->w[b->best];
	g_ptr_array_add(b->log, e);
}

/* The rate's posterior, given hypothesis @h: its mean. */
static double rate_given(const struct bisect *b, guint h)
{
	if (b->p.rate > 0.0)
		return b->p.rate;
	return (b->p.prior_a + b->fails) / (b->p.prior_a + b->p.prior_b + b->fails + b->c[h]);
}

/*
 * The runs of the revert check of @k: as many as, all clean, would bring
 * it to the confidence (one for a failure that always shows).
 */
static unsigned revert_runs(struct bisect *b, guint k)
{
	struct node *n = &b->nodes[k];
	unsigned r = b->p.slots;

	if (b->p.rate >= 1.0)
		return 1;
	for (; r < REVERT_RUNS_MAX; r += b->p.slots) {
		bool enough;

		n->revert_clean += r;
		b->reverts += r;
		update(b);
		enough = b->w[k] >= 1.0 - (1.0 - b->p.confidence) / REVERT_MARGIN;
		n->revert_clean -= r;
		b->reverts -= r;
		if (enough)
			break;
	}
	update(b);
	return r;
}

static double entropy(const double *p, unsigned n)
{
	double h = 0.0;

	for (unsigned j = 0; j < n; j++) {
		if (p[j] > 0.0)
			h -= p[j] * log2(p[j]);
	}
	return h;
}

/* The law of a probe's outcome (failures of m runs) under each group of hypotheses. */
struct groups {
	guint n;
	unsigned m;
	unsigned *c;     /* the group's C(k) */
	double *law;     /* n x (m + 1) */
	double *entropy; /* n */
	guint *of;       /* node -> group */
};

static void groups_clear(struct groups *g)
{
	g_free(g->c);
	g_free(g->law);
	g_free(g->entropy);
	g_free(g->of);
}

static int cmp_unsigned(const void *x, const void *y)
{
	unsigned a = *(const unsigned *)x, b = *(const unsigned *)y;

	return a < b ? -1 : a > b;
}

static void groups_init(struct groups *g, const struct bisect *b)
{
	double a = b->p.prior_a + b->fails;
	guint k = 0;

	memset(g, 0, sizeof(*g));
	g->m = b->p.slots * (b->p.rate > 0.0 ? 1 : SCORE_ROUNDS);
	g->c = g_new0(unsigned, b->n);
	g->of = g_new0(guint, b->n);
	for (guint i = 0; i < b->n; i++) {
		if (b->w[i] > 0.0)
			g->c[k++] = b->c[i];
	}
	qsort(g->c, k, sizeof(*g->c), cmp_unsigned);
	for (guint i = 0; i < k; i++) {
		if (g->n == 0 || g->c[g->n - 1] != g->c[i])
			g->c[g->n++] = g->c[i];
	}
	for (guint i = 0; i < b->n; i++) {
		if (b->w[i] > 0.0) {
			unsigned *at = bsearch(&b->c[i], g->c, g->n, sizeof(*g->c), cmp_unsigned);

			g->of[i] = (guint)(at - g->c);
		}
	}
	g->law = g_new0(double, (gsize)MAX(g->n, 1) * (g->m + 1));
	g->entropy = g_new0(double, MAX(g->n, 1));
	for (guint q = 0; q < g->n; q++) {
		double *law = &g->law[q * (g->m + 1)];
		/* The group's rate: its posterior mean (the scoring's only shortcut). */
		double r = b->p.rate > 0.0 ? b->p.rate : a / (a + b->p.prior_b + g->c[q]);

		for (unsigned j = 0; j <= g->m; j++) {
			double choose = lgamma(g->m + 1.0) - lgamma(j + 1.0) - lgamma(g->m - j + 1.0);

			law[j] = r >= 1.0 ? (j == g->m)
					  : exp(choose + j * log(r) + (g->m - j) * log1p(-r));
		}
		g->entropy[q] = entropy(law, g->m + 1);
	}
}

/* The information (bits) about the hypothesis in a step's outcome, given @within: the
 * posterior of each group among the hypotheses the probed commit contains. */
static double information(const struct groups *g, const double *within)
{
	double law[g->m + 1];
	double inside = 0.0, conditional = 0.0;

	memset(law, 0, sizeof(law));
	for (guint q = 0; q < g->n; q++) {
		if (within[q] <= 0.0)
			continue;
		inside += within[q];
		conditional += within[q] * g->entropy[q];
		for (unsigned j = 0; j <= g->m; j++)
			law[j] += within[q] * g->law[q * (g->m + 1) + j];
	}
	law[0] += MAX(0.0, 1.0 - inside);
	return entropy(law, g->m + 1) - conditional;
}

static double cost(const struct bisect *b, const struct node *n)
{
	unsigned rounds = b->p.rate > 0.0 ? 1 : SCORE_ROUNDS;

	return MAX((n->built ? 0.0 : b->p.build_cost) + rounds * b->p.run_cost, 1e-3);
}

static bool probe_candidate(const struct bisect *b, guint i)
{
	const struct node *n = &b->nodes[i];

	/* A boundary is worth a probe only while it is a hypothesis. */
	return n->relevant && !n->untestable && (!n->boundary || n->hypothesis);
}

/* The best probe by information per cost; -1 when none tells anything. */
static gint choose(struct bisect *b)
{
	g_autofree double *within = NULL;
	struct groups g;
	double best_score = 0.0;
	gint best = -1;
	guint stride = 1;

	groups_init(&g, b);
	within = g_new0(double, MAX(g.n, 1));
	if (!b->chain && b->n_order > FULL_SCORING_MAX)
		stride = b->n_order / SAMPLE;
	for (guint r = 0; r < b->n_order; r++) {
		guint i = b->order[r];
		const struct node *n = &b->nodes[i];
		double info, score;

		if (b->chain) {
			/* Containment is the order: accumulate. */
			if (b->w[i] > 0.0)
				within[g.of[i]] += b->w[i];
		} else {
			if (stride > 1 && r % stride && !n->built && !n->clean && !n->fails)
				continue;
			memset(within, 0, MAX(g.n, 1) * sizeof(*within));
			walk_start(b, i);
			for (gint j; (j = walk_next(b)) >= 0;) {
				if (b->w[j] > 0.0)
					within[g.of[j]] += b->w[j];
			}
		}
		if (!probe_candidate(b, i))
			continue;
		info = information(&g, within);
		score = info / cost(b, n);
		if (info > MIN_INFORMATION && score > best_score) {
			best = (gint)i;
			best_score = score;
		}
	}
	groups_clear(&g);
	return best;
}

/* Ends the bisection inconclusive, for @reason. */
static void give_up(struct bisect *b, char *reason)
{
	b->verdict = BISECT_INCONCLUSIVE;
	b->reason = reason;
	b->confidence = b->w[b->best];
	b->phase = PHASE_DONE;
}

bool bisect_next(struct bisect *b, struct bisect_step *step)
{
	gint next;

	memset(step, 0, sizeof(*step));
	if (b->phase == PHASE_DONE)
		return false;
	if (b->phase == PHASE_REVERT) {
		step->role = BISECT_ROLE_REVERT;
		step->commit = b->nodes[b->named].id;
		step->head = b->nodes[b->bad].id;
		step->runs = revert_runs(b, b->named);
		step->build = true;
		return true;
	}
	update(b);
	if (!b->explained) {
		/* Only after reverts that still show it, or runs no single culprit explains. */
		give_up(b, b->failed_reverts
			? g_strdup_printf("the head with %s reverted still shows it",
					  b->nodes[b->named].id)
			: g_strdup("no single commit explains the runs"));
		b->confidence = 0.0;
		return false;
	}
	if (b->p.revert_check && b->w[b->best] >= MIN(REVERT_AT, b->p.confidence) &&
	    !b->nodes[b->best].boundary && b->best != b->bad && !b->nodes[b->best].revert_tried) {
		b->named = b->best;
		b->phase = PHASE_REVERT;
		return bisect_next(b, step);
	}
	if (b->predates >= b->p.confidence) {
		b->verdict = BISECT_PREDATES;
		b->named = b->best;
		b->confidence = b->predates;
		b->phase = PHASE_DONE;
		return false;
	}
	if (b->w[b->best] >= b->p.confidence) {
		b->verdict = BISECT_FOUND;
		b->named = b->best;
		b->confidence = b->w[b->best];
		b->reverted = b->nodes[b->named].revert_clean > 0;
		b->phase = PHASE_DONE;
		return false;
	}
	if (b->runs >= b->p.max_runs) {
		give_up(b, g_strdup_printf("no culprit at %.1f%% after %u runs", 100.0 * b->p.confidence,
					   b->runs));
		return false;
	}
	next = choose(b);
	if (next < 0) {
		give_up(b, g_strdup("no commit left to test can tell the suspects apart"));
		return false;
	}
	step->role = b->nodes[next].boundary ? BISECT_ROLE_BOUNDARY : BISECT_ROLE_SEARCH;
	step->commit = b->nodes[next].id;
	step->runs = b->p.slots;
	step->build = !b->nodes[next].built;
	return true;
}

void bisect_record(struct bisect *b, const struct bisect_step *step, const char *tested,
		   enum bisect_result result, unsigned runs, unsigned failures)
{
	g_return_if_fail(failures <= runs);
	b->rounds++;
	b->runs += runs;
	b->builds += step->build;
	if (step->role == BISECT_ROLE_REVERT) {
		struct node *n = &b->nodes[b->named];

		g_return_if_fail(b->phase == PHASE_REVERT);
		n->revert_tried = true;
		b->phase = PHASE_SEARCH;
		if (result == BISECT_GOOD) {
			n->revert_clean += runs;
			b->reverts += runs;
		}
		/*
		 * Still showing it: it is not the culprit, and the search goes on.
		 * A second such revert means no single commit explains the
		 * failure: nobody is named.
		 */
		if (result == BISECT_BAD) {
			n->revert_failed = true;
			b->revert_fails += failures;
			b->failed_reverts++;
		}
		log_entry(b, BISECT_ROLE_REVERT, step->commit, tested, result, runs, failures);
		if (b->failed_reverts >= 2) {
			b->phase = PHASE_DONE;
			b->verdict = BISECT_INCONCLUSIVE;
			b->reason = g_strdup_printf("the head with %s reverted still shows it", n->id);
			b->confidence = 0.0;
		}
		return;
	}
	gint i = find(b, step->commit);

	g_return_if_fail(i >= 0 && b->phase == PHASE_SEARCH);
	b->nodes[i].built = true;
	if (result == BISECT_SKIP) {
		b->nodes[i].untestable = true;
	} else {
		b->nodes[i].clean += runs - failures;
		b->nodes[i].fails += failures;
	}
	log_entry(b, step->role, step->commit, NULL, result, runs, failures);
}

void bisect_outcome_clear(struct bisect_outcome *out)
{
	g_free(out->culprit);
	g_free(out->since);
	g_strfreev(out->suspects);
	g_free(out->reason);
	if (out->log)
		g_ptr_array_unref(out->log);
	memset(out, 0, sizeof(*out));
}

static int cmp_weight(gconstpointer x, gconstpointer y, gpointer data)
{
	const double *w = data;
	double a = w[*(const guint *)x], c = w[*(const guint *)y];

	return a > c ? -1 : a < c;
}

void bisect_outcome(struct bisect *b, struct bisect_outcome *out)
{
	memset(out, 0, sizeof(*out));
	g_return_if_fail(b->phase == PHASE_DONE);
	out->verdict = b->verdict;
	out->confidence = b->confidence;
	out->reverted = b->reverted;
	out->runs = b->runs;
	out->builds = b->builds;
	out->rounds = b->rounds;
	out->log = g_ptr_array_ref(b->log);
	out->reason = g_strdup(b->reason);
	out->rate = rate_given(b, b->verdict == BISECT_INCONCLUSIVE ? b->best : b->named);
	if (b->verdict == BISECT_FOUND) {
		out->culprit = g_strdup(b->nodes[b->named].id);
	} else if (b->verdict == BISECT_PREDATES) {
		out->since = g_strdup(b->nodes[b->named].id);
	} else {
		g_autoptr(GArray) order = g_array_new(FALSE, FALSE, sizeof(guint));
		g_autoptr(GStrvBuilder) suspects = g_strv_builder_new();
		double covered = 0.0;

		if (!b->explained || b->failed_reverts >= 2) {
			/* Reverts that still show it: their culprits are all there is to say. */
			for (guint i = 0; i < b->n; i++) {
				if (b->nodes[i].revert_failed)
					g_strv_builder_add(suspects, b->nodes[i].id);
			}
		} else {
			for (guint i = 0; i < b->n; i++) {
				if (b->w[i] > 0.0)
					g_array_append_val(order, i);
			}
			g_array_sort_with_data(order, cmp_weight, b->w);
			for (guint k = 0; k < order->len && covered < SUSPECTS_COVER &&
			     k < SUSPECTS_MAX; k++) {
				guint i = g_array_index(order, guint, k);

				g_strv_builder_add(suspects, b->nodes[i].id);
				covered += b->w[i];
			}
		}
		out->suspects = g_strv_builder_end(suspects);
	}
}
