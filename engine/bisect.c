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
 * The likelihood of a group sums its rate grid once per value of C(k).
 *
 * A round's further runs are scored jointly with its first: the
 * hypotheses fall in classes by which of the round's commits contain
 * them, and the outcomes of the round's commits are scored together
 * (round_information()).
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
/* The floor of a revert check: see revert_floor(). */
#define REVERT_MISS 0.05
#define REVERT_RATE_QUANTILE 0.001
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
#define SCORE_ROUNDS 5
/* The candidates for a round's further runs: the best single probes. */
#define ROUND_CANDIDATES 6
/*
 * A round's further run is booted only when it tells at least this share
 * of what the round's first run tells per boot.
 */
#define ROUND_WORTH 0.5
/* The leader's posterior from which its own runs are weighed against the search's: confirm(). */
#define CONFIRM_AT 0.5
/* A DAG larger than this scores a sample of its commits per step. */
#define FULL_SCORING_MAX 2048
#define SAMPLE 256
/*
 * An unknown rate is integrated over a grid of rates, evenly spaced in
 * logit(p) from about 1e-4 to 0.9991, plus p = 1 exactly (a failure that
 * shows every time is common, and no grid point would stand for it).
 */
#define RATE_POINTS 80
#define RATE_LOGIT_MIN (-9.0)
#define RATE_LOGIT_MAX 7.0
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
	guint *pos;        /* node -> its index in order, G_MAXUINT when not relevant */
	bool chain;        /* order[i]'s only parent is order[i - 1] */

	/*
	 * The rate: grid points, their logs, and the log of their prior
	 * weight times the evidence that bears on the rate alone (that the
	 * triggering runs showed the failure at least once).
	 */
	guint n_rates;
	double *rate;
	double *log_rate;
	double *log_miss;  /* log(1 - rate): -INFINITY at 1 */
	double *log_rate_weight;
	double *by_clean;  /* update(): the log-likelihood of C(k) clean runs, NAN until needed */
	unsigned n_by_clean;

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
	g_free(b->pos);
	g_free(b->w);
	g_free(b->c);
	g_free(b->viable);
	g_free(b->rate);
	g_free(b->log_rate);
	g_free(b->log_miss);
	g_free(b->log_rate_weight);
	g_free(b->by_clean);
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
	b->pos = g_new(guint, b->n);
	for (guint i = 0; i < b->n; i++)
		b->pos[i] = G_MAXUINT;
	for (guint r = 0; r < b->n_order; r++)
		b->pos[b->order[r]] = r;
	b->chain = b->n_order > 0 && b->nodes[b->order[0]].n_parents == 0;
	for (guint r = 1; b->chain && r < b->n_order; r++) {
		const struct node *n = &b->nodes[b->order[r]];

		b->chain = n->n_parents == 1 && n->parents[0] == b->order[r - 1];
	}
	}

/* The rate at point @g of the grid. */
static double grid_rate(guint g)
{
	double x = RATE_LOGIT_MIN + (RATE_LOGIT_MAX - RATE_LOGIT_MIN) * g / (RATE_POINTS - 1);

	return 1.0 / (1.0 + exp(-x));
}

/*
 * The rate's grid and prior: the known rate alone, or Beta(a, b) over
 * the grid (its density times the spacing, p(1 - p) in logit) beside
 * the share prior_always at p = 1.
 */
static void rates_init(struct bisect *b)
{
	const struct bisect_params *p = &b->p;
	guint n = p->rate > 0.0 ? 1 : RATE_POINTS + (p->prior_always > 0.0);
	double flaky = 0.0;

	b->n_rates = n;
	b->rate = g_new0(double, n);
	b->log_rate = g_new0(double, n);
	b->log_miss = g_new0(double, n);
	b->log_rate_weight = g_new0(double, n);
	if (p->rate > 0.0) {
		b->rate[0] = p->rate;
	} else {
		for (guint g = 0; g < RATE_POINTS; g++) {
			double r = grid_rate(g);

			b->rate[g] = r;
			b->log_rate_weight[g] = p->prior_a * log(r) + p->prior_b * log1p(-r);
			flaky += exp(b->log_rate_weight[g]);
		}
		for (guint g = 0; g < RATE_POINTS; g++)
			b->log_rate_weight[g] += log1p(-p->prior_always) - log(flaky);
		if (n > RATE_POINTS) {
			b->rate[RATE_POINTS] = 1.0;
			b->log_rate_weight[RATE_POINTS] = log(p->prior_always);
		}
	}
	for (guint g = 0; g < n; g++) {
		b->log_rate[g] = log(b->rate[g]);
		b->log_miss[g] = b->rate[g] >= 1.0 ? -INFINITY : log1p(-b->rate[g]);
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
	g_return_val_if_fail(params->rate > 0.0 ||
			     (params->prior_a >= 0.0 && params->prior_b >= 0.0 &&
			      params->prior_always >= 0.0 && params->prior_always < 1.0),
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
	rates_init(b);
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
	unsigned failures = 0;

	for (size_t i = 0; i < n; i++)
		failures += shows[i];
	if (!failures) {
		/* Started by something else: these runs do not bear on it. */
		bisect_mark_built(b, id);
		return;
	}
	/*
	 * All of them count, given what made them a trigger: that at least
	 * one of the n showed it, which is likelier the higher the rate.
	 */
	for (guint g = 0; g < b->n_rates; g++)
		b->log_rate_weight[g] -= b->rate[g] >= 1.0 ? 0.0 : log(-expm1(n * b->log_miss[g]));
	bisect_observe(b, id, (unsigned)n, failures);
}

void bisect_mark_built(struct bisect *b, const char *id)
{
	gint i = find(b, id);

	if (i >= 0)
		b->nodes[i].built = true;
}

/* The log of the rate's weight at grid point @g, given F failing runs and @clean clean ones. */
static double rate_log_weight(const struct bisect *b, guint g, unsigned clean)
{
	double lw = b->log_rate_weight[g] + b->fails * b->log_rate[g];

	return clean ? lw + clean * b->log_miss[g] : lw;
}

/*
 * The log-likelihood of the runs under a hypothesis whose commits saw
 * @clean clean runs (and all the failing ones): the rate integrated out.
 */
static double log_likelihood(struct bisect *b, unsigned clean)
{
	double top = -INFINITY, sum = 0.0;

	if (clean < b->n_by_clean && !isnan(b->by_clean[clean]))
		return b->by_clean[clean];
	for (guint g = 0; g < b->n_rates; g++)
		top = MAX(top, rate_log_weight(b, g, clean));
	for (guint g = 0; isfinite(top) && g < b->n_rates; g++)
		sum += exp(rate_log_weight(b, g, clean) - top);
	sum = isfinite(top) ? top + log(sum) : -INFINITY;
	if (clean < b->n_by_clean)
		b->by_clean[clean] = sum;
	return sum;
}

/* Recomputes the posterior from the counts. */
static void update(struct bisect *b)
{
	double top = -INFINITY, sum = 0.0;
	unsigned n_failing = 0, most = 0;
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
	/* The likelihood depends on C(k) alone: computed once per value. */
	for (guint i = 0; i < b->n; i++)
		most = MAX(most, b->c[i]);
	if (most + 1 > b->n_by_clean) {
		b->n_by_clean = MAX(most + 1, 2 * b->n_by_clean);
		b->by_clean = g_renew(double, b->by_clean, b->n_by_clean);
	}
	for (guint i = 0; i < b->n_by_clean; i++)
		b->by_clean[i] = NAN;
	for (guint i = 0; i < b->n; i++) {
		const struct node *n = &b->nodes[i];
		double lw = -INFINITY;

		/* A revert that still shows it: the head without it contains the culprit. */
		if (n->hypothesis && b->viable[i] && !n->revert_failed)
			lw = n->log_prior + log_likelihood(b, b->c[i]);
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

/* The log-probability of @j failures in @m runs at grid point @t of the rate. */
static double log_binomial(const struct bisect *b, guint t, unsigned m, unsigned j)
{
	double choose = lgamma(m + 1.0) - lgamma(j + 1.0) - lgamma(m - j + 1.0);

	return choose + (j ? j * b->log_rate[t] : 0.0) + (m - j ? (m - j) * b->log_miss[t] : 0.0);
}

/* The rate's posterior over the grid (@post), given @clean clean runs and all failing ones. */
static void rate_posterior(const struct bisect *b, unsigned clean, double *post)
{
	double top = -INFINITY, sum = 0.0;

	for (guint g = 0; g < b->n_rates; g++)
		top = MAX(top, rate_log_weight(b, g, clean));
	for (guint g = 0; g < b->n_rates; g++) {
		post[g] = isfinite(top) ? exp(rate_log_weight(b, g, clean) - top) : 0.0;
		sum += post[g];
	}
	for (guint g = 0; g < b->n_rates; g++)
		post[g] = sum > 0.0 ? post[g] / sum : 1.0 / b->n_rates;
}

/* The rate's posterior, given hypothesis @h: its mean. */
static double rate_given(const struct bisect *b, guint h)
{
	g_autofree double *post = g_new0(double, b->n_rates);
	double mean = 0.0;

	rate_posterior(b, b->c[h], post);
	for (guint g = 0; g < b->n_rates; g++)
		mean += post[g] * b->rate[g];
	return mean;
}

/*
 * The runs of the revert check of @k: as many as, all clean, would bring
 * it to the confidence (one for a failure that always shows).
 */
static unsigned revert_runs(struct bisect *b, guint k)
{
	struct node *n = &b->nodes[k];
	unsigned r = 1;

	if (b->p.rate >= 1.0)
		return 1;
	for (; r < REVERT_RUNS_MAX; r++) {
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

/*
 * The revert check's floor, while the runs still allow a failure that
 * always shows (no commit that contains @k ran clean): runs enough that,
 * were @k not the culprit, the reverted head would have shown the failure
 * with probability 1 - REVERT_MISS at a rate as low as the runs leave
 * plausible (the REVERT_RATE_QUANTILE quantile of the rate given @k,
 * under a uniform prior without the point at rate 1). Else a lucky
 * streak of a flaky failure, taken for one that always shows, would
 * settle for a revert check too short to catch a wrong culprit at its
 * true rate. Once a clean run says the failure is flaky, the posterior
 * weighs that by itself.
 */
static unsigned revert_floor(const struct bisect *b, guint k)
{
	double lw[RATE_POINTS], top = -INFINITY, sum = 0.0, below = 0.0;
	double low = 1.0;

	if (b->p.rate > 0.0 || b->c[k] > 0)
		return 1; /* a known rate, or one below 1: the posterior is all there is to it */
	for (guint g = 0; g < RATE_POINTS; g++) {
		double r = grid_rate(g);

		lw[g] = (b->fails + 1.0) * log(r) + (b->c[k] + 1.0) * log1p(-r);
		top = MAX(top, lw[g]);
	}
	for (guint g = 0; g < RATE_POINTS; g++)
		sum += lw[g] = exp(lw[g] - top);
	for (guint g = 0; g < RATE_POINTS; g++) {
		below += lw[g] / sum;
		if (below >= REVERT_RATE_QUANTILE) {
			low = grid_rate(g);
			break;
		}
	}
	return MIN(bisect_runs_to_show(low, REVERT_MISS), REVERT_RUNS_MAX);
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
	double *post;    /* n x n_rates: the rate's posterior in each group */
};

static void groups_clear(struct groups *g)
{
	g_free(g->c);
	g_free(g->law);
	g_free(g->entropy);
	g_free(g->of);
	g_free(g->post);
}

static int cmp_unsigned(const void *x, const void *y)
{
	unsigned a = *(const unsigned *)x, b = *(const unsigned *)y;

	return a < b ? -1 : a > b;
}

static void groups_init(struct groups *g, const struct bisect *b)
{
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
	g->post = g_new0(double, (gsize)MAX(g->n, 1) * b->n_rates);
	for (guint q = 0; q < g->n; q++) {
		double *law = &g->law[q * (g->m + 1)];
		double *post = &g->post[q * b->n_rates];
		double mean = 0.0;

		rate_posterior(b, g->c[q], post);
		/*
		 * The group's rate: its posterior mean. (The law mixed over the
		 * rate's posterior is the exact one; scored with it, the search
		 * took 3% more boots in bench/bisect.)
		 */
		for (guint r = 0; r < b->n_rates; r++)
			mean += post[r] * b->rate[r];
		for (unsigned j = 0; j <= g->m; j++) {
			double choose = lgamma(g->m + 1.0) - lgamma(j + 1.0) - lgamma(g->m - j + 1.0);

			law[j] = mean >= 1.0 ? (j == g->m)
					     : exp(choose + j * log(mean) + (g->m - j) * log1p(-mean));
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

/*
 * The best probes by information per cost, best first, into @top (room
 * for @n_top); returns how many tell anything at all.
 */
static guint choose(struct bisect *b, gint *top, double *scores, guint n_top)
{
	g_autofree double *within = NULL;
	struct groups g;
	guint stride = 1, found = 0;

	groups_init(&g, b);
	within = g_new0(double, MAX(g.n, 1));
	if (!b->chain && b->n_order > FULL_SCORING_MAX)
		stride = b->n_order / SAMPLE;
	for (guint r = 0; r < b->n_order; r++) {
		guint i = b->order[r];
		const struct node *n = &b->nodes[i];
		double info, score;
		guint at;

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
		if (info <= MIN_INFORMATION)
			continue;
		/* Into the short list, best first; the last drops out when it is full. */
		if (found < n_top)
			found++;
		else if (score <= scores[n_top - 1])
			continue;
		for (at = found - 1; at > 0 && scores[at - 1] < score; at--) {
			top[at] = top[at - 1];
			scores[at] = scores[at - 1];
		}
		top[at] = (gint)i;
		scores[at] = score;
	}
	groups_clear(&g);
	return found;
}

/* Ends the bisection inconclusive, for @reason. */
static void give_up(struct bisect *b, char *reason)
{
	b->verdict = BISECT_INCONCLUSIVE;
	b->reason = reason;
	b->confidence = b->w[b->best];
	b->phase = PHASE_DONE;
}

/* A round: commits to run at once, and the runs of each. */
struct round {
	guint n;
	guint node[BISECT_ROUND_MAX];
	unsigned runs[BISECT_ROUND_MAX];
};

/*
 * The information (bits) about the hypothesis in the outcomes of @r's
 * runs together: the hypotheses fall in classes by which of the round's
 * commits contain them (and by their group's rate posterior); under each
 * class the failures of each commit that contains it are binomial with
 * one rate, mixed over that rate's posterior, and the others show none.
 */
static double round_information(struct bisect *b, const struct groups *g, const struct round *r)
{
	guint masks = 1u << r->n, outcomes = 1;
	g_autofree double *weight = g_new0(double, (gsize)masks * MAX(g->n, 1));
	g_autofree guint8 *mask = g_new0(guint8, b->n);
	double *bin[BISECT_ROUND_MAX] = { NULL };
	g_autofree double *total = NULL, *law = NULL;
	double conditional = 0.0;

	for (guint i = 0; i < r->n; i++) {
		if (b->chain) {
			for (guint h = 0; h < b->n; h++)
				mask[h] |= (guint8)((b->pos[h] <= b->pos[r->node[i]]) << i);
		} else {
			walk_start(b, r->node[i]);
			for (gint h; (h = walk_next(b)) >= 0;)
				mask[h] |= (guint8)(1u << i);
		}
		outcomes *= r->runs[i] + 1;
		/* bin[i][j * n_rates + t]: j failures of its runs at rate t. */
		bin[i] = g_new0(double, (gsize)(r->runs[i] + 1) * b->n_rates);
		for (unsigned j = 0; j <= r->runs[i]; j++) {
			for (guint t = 0; t < b->n_rates; t++)
				bin[i][j * b->n_rates + t] = exp(log_binomial(b, t, r->runs[i], j));
		}
	}
	for (guint h = 0; h < b->n; h++) {
		if (b->w[h] > 0.0)
			weight[mask[h] * g->n + g->of[h]] += b->w[h];
	}
	total = g_new0(double, outcomes);
	law = g_new0(double, outcomes);
	for (guint m = 0; m < masks; m++) {
		for (guint q = 0; q < g->n; q++) {
			const double *post = &g->post[q * b->n_rates];
			double wq = weight[m * g->n + q];

			if (wq <= 0.0)
				continue;
			for (guint o = 0; o < outcomes; o++) {
				unsigned j[BISECT_ROUND_MAX];
				guint rest = o;
				bool possible = true;

				for (guint i = 0; i < r->n; i++) {
					j[i] = rest % (r->runs[i] + 1);
					rest /= r->runs[i] + 1;
					possible = possible && (j[i] == 0 || (m >> i & 1));
				}
				law[o] = 0.0;
				for (guint t = 0; possible && t < b->n_rates; t++) {
					double pr = post[t];

					for (guint i = 0; i < r->n && pr > 1e-15; i++) {
						if (m >> i & 1)
							pr *= bin[i][j[i] * b->n_rates + t];
					}
					law[o] += pr;
				}
				total[o] += wq * law[o];
			}
			conditional += wq * entropy(law, outcomes);
		}
	}
	for (guint i = 0; i < r->n; i++)
		g_free(bin[i]);
	return entropy(total, outcomes) - conditional;
}

/*
 * The round: one run of the best probe; then, while slots are free, the
 * run (of a commit of the round, or of the next best probes) that adds
 * most to what the round's runs tell together, per cost, as long as that
 * is at least ROUND_WORTH of what the first run tells per boot: a slot
 * left idle serves another job.
 */
static void fill_round(struct bisect *b, struct round *r, const gint *top, guint n_top, guint max)
{
	struct groups g;
	double told, first;

	r->n = 1;
	r->node[0] = (guint)top[0];
	r->runs[0] = 1;
	if (b->p.slots == 1)
		return;
	if (b->p.rate > 0.0) {
		/* A known rate: no rate to learn, the same commit on every slot. */
		r->runs[0] = b->p.slots;
		return;
	}
	groups_init(&g, b);
	told = first = round_information(b, &g, r);
	for (unsigned used = 1; used < b->p.slots; used++) {
		double best = 0.0, best_gain = 0.0;
		struct round pick = *r;

		for (guint c = 0; c < r->n + n_top; c++) {
			guint x = c < r->n ? r->node[c] : (guint)top[c - r->n];
			struct round trial = *r;
			double extra = 1.0, gain;
			guint at = 0;

			while (at < trial.n && trial.node[at] != x)
				at++;
			if (c >= r->n && at < r->n)
				continue; /* a commit of the round: tried already */
			if (at == trial.n) {
				if (trial.n == MIN(max, BISECT_ROUND_MAX))
					continue;
				trial.node[trial.n] = x;
				trial.runs[trial.n++] = 0;
				if (!b->nodes[x].built)
					extra += b->p.build_cost / MAX(b->p.run_cost, 1e-3);
			}
			trial.runs[at]++;
			gain = round_information(b, &g, &trial) - told;
			if (gain / extra > best) {
				best = gain / extra;
				best_gain = gain;
				pick = trial;
			}
		}
		if (best < ROUND_WORTH * first)
			break;
		*r = pick;
		told += best_gain;
	}
	groups_clear(&g);
}

/* Whether commit @i contains hypothesis @h. */
static bool contains(struct bisect *b, guint i, guint h)
{
	if (b->chain)
		return b->pos[h] != G_MAXUINT && b->pos[i] != G_MAXUINT && b->pos[h] <= b->pos[i];
	walk_start(b, i);
	for (gint j; (j = walk_next(b)) >= 0;) {
		if ((guint)j == h)
			return true;
	}
	return false;
}

/* The log-odds of hypothesis @k against all the others, as update() left them. */
static double log_odds(const struct bisect *b, guint k)
{
	double rest = 0.0;

	for (guint i = 0; i < b->n; i++)
		rest += i == k ? 0.0 : b->w[i];
	return log(b->w[k]) - log(MAX(rest, 1e-300));
}

/*
 * Adds (@sign 1) or takes back (-1) an outcome of round @r, @j[i]
 * failures of commit i's runs, and @reverts clean runs of the head with
 * @k reverted.
 */
static void count_outcome(struct bisect *b, guint k, const struct round *r, const unsigned *j,
			  unsigned reverts, int sign)
{
	for (guint i = 0; i < r->n; i++) {
		b->nodes[r->node[i]].fails += sign * (int)j[i];
		b->nodes[r->node[i]].clean += sign * (int)(r->runs[i] - j[i]);
	}
	b->nodes[k].revert_clean += sign * (int)reverts;
	b->reverts += sign * (int)reverts;
}

/*
 * The gain in the log-odds of @k that round @r and @reverts runs of the
 * head with @k reverted are expected to bring, were @k the culprit: its
 * rate as the runs have it given @k, the round's commits that contain @k
 * failing at that rate and the others (and the reverted head) clean.
 */
static double confirm_gain(struct bisect *b, guint k, const struct round *r, unsigned reverts)
{
	g_autofree double *post = g_new0(double, b->n_rates);
	double base = log_odds(b, k), gain = 0.0;
	bool in[BISECT_ROUND_MAX];
	guint outcomes = 1;

	rate_posterior(b, b->c[k], post);
	for (guint i = 0; i < r->n; i++) {
		in[i] = contains(b, r->node[i], k);
		outcomes *= in[i] ? r->runs[i] + 1 : 1;
	}
	for (guint o = 0; o < outcomes; o++) {
		unsigned j[BISECT_ROUND_MAX] = { 0 };
		double pr = 0.0;
		guint rest = o;

		for (guint i = 0; i < r->n; i++) {
			if (in[i]) {
				j[i] = rest % (r->runs[i] + 1);
				rest /= r->runs[i] + 1;
			}
		}
		for (guint t = 0; t < b->n_rates; t++) {
			double lp = log(post[t]);

			for (guint i = 0; i < r->n; i++)
				lp += in[i] ? log_binomial(b, t, r->runs[i], j[i]) : 0.0;
			pr += exp(lp);
		}
		if (pr < 1e-12)
			continue;
		count_outcome(b, k, r, j, reverts, 1);
		update(b);
		gain += pr * (log_odds(b, k) - base);
		count_outcome(b, k, r, j, reverts, -1);
	}
	update(b);
	return gain;
}

/* The cost of round @r and @reverts runs of the revert check of @k. */
static double round_cost(const struct bisect *b, guint k, const struct round *r, unsigned reverts)
{
	double c = reverts * b->p.run_cost / b->p.slots;

	for (guint i = 0; i < r->n; i++) {
		c += r->runs[i] * b->p.run_cost / b->p.slots;
		c += b->nodes[r->node[i]].built ? 0.0 : b->p.build_cost;
	}
	c += reverts && !b->nodes[k].revert_tried ? b->p.build_cost : 0.0;
	return MAX(c, 1e-3);
}

/*
 * Confirmation. Once a hypothesis @k leads, its rivals fall to clean runs
 * of what does not contain @k (its parent, the head with @k reverted);
 * but with the rate unknown, the clean runs count for less the fewer
 * failing runs say what the rate is, and those come only from runs of
 * what contains @k. The search's information, which takes the rate as
 * its posterior has it, does not see that: left to it, the confirmation
 * of a p = 0.3 failure ran ten clean runs for every failing one. So the
 * leader's own runs are weighed against the round by the gain each is
 * expected to bring to the leader's log-odds, per cost: @r becomes the
 * round of the most (of @k, of @k beside @r's first commit, or @r), of
 * at most @max commits.
 */
static void confirm(struct bisect *b, struct round *r, guint max)
{
	guint k = b->best, n = 0, pick = 0;
	unsigned total = 0;
	struct round candidates[3];
	double best = -INFINITY;

	if (b->p.rate > 0.0 || b->w[k] < CONFIRM_AT || b->nodes[k].boundary)
		return;
	for (guint i = 0; i < r->n; i++) {
		if (r->node[i] == k)
			return; /* it is in the round already */
		total += r->runs[i];
	}
	candidates[n++] = *r;
	candidates[n++] = (struct round){ .n = 1, .node = { k }, .runs = { total } };
	if (total >= 2 && max >= 2)
		candidates[n++] = (struct round){ .n = 2, .node = { k, r->node[0] },
						  .runs = { 1, total - 1 } };
	for (guint c = 0; c < n; c++) {
		double score = confirm_gain(b, k, &candidates[c], 0) /
			       round_cost(b, k, &candidates[c], 0);

		if (score > best) {
			best = score;
			pick = c;
		}
	}
	*r = candidates[pick];
}

/* Names the culprit (or the boundary that has it) and ends. */
static void conclude(struct bisect *b, enum bisect_verdict verdict, guint named, double confidence)
{
	b->verdict = verdict;
	b->named = named;
	b->confidence = confidence;
	b->reverted = verdict == BISECT_FOUND && b->nodes[named].revert_clean > 0;
	b->phase = PHASE_DONE;
}

/* The next round of the revert check of the named commit; 0 when it is over. */
static guint next_revert(struct bisect *b, struct bisect_step *steps, guint max)
{
	struct node *n = &b->nodes[b->named];
	unsigned floor = revert_floor(b, b->named), need, runs, own = 0;
	guint k = 0;

	if (b->w[b->named] >= b->p.confidence && n->revert_clean >= floor) {
		conclude(b, BISECT_FOUND, b->named, b->w[b->named]);
		return 0;
	}
	if (n->revert_clean >= REVERT_RUNS_MAX) {
		/* It will not get there by reverts: the search goes on. */
		b->phase = PHASE_SEARCH;
		return 0;
	}
	need = MAX(revert_runs(b, b->named), floor > n->revert_clean ? floor - n->revert_clean : 0);
	runs = MAX(1, MIN(need, b->p.slots));
	/* Past the floor, a round may run the culprit itself instead: see confirm(). */
	if (b->p.rate <= 0.0 && runs >= 2 && max >= 2 && n->revert_clean >= floor) {
		double best = -INFINITY;

		for (unsigned a = 0; a <= runs; a++) {
			struct round r = { .n = a > 0, .node = { b->named }, .runs = { a } };
			double score = confirm_gain(b, b->named, &r, runs - a) /
				       round_cost(b, b->named, &r, runs - a);

			if (score > best) {
				best = score;
				own = a;
			}
		}
	}
	if (own) {
		steps[k].role = BISECT_ROLE_SEARCH;
		steps[k].commit = n->id;
		steps[k].runs = own;
		steps[k++].build = !n->built;
	}
	if (runs > own) {
		/* Last: a revert that still shows it ends the phase. */
		steps[k].role = BISECT_ROLE_REVERT;
		steps[k].commit = n->id;
		steps[k].head = b->nodes[b->bad].id;
		steps[k].runs = runs - own;
		steps[k++].build = !n->revert_tried;
		n->revert_tried = true;
	}
	return k;
}

guint bisect_next(struct bisect *b, struct bisect_step *steps, guint max)
{
	gint top[ROUND_CANDIDATES];
	double scores[ROUND_CANDIDATES];
	struct round r = { 0 };
	guint n_top;

	g_return_val_if_fail(max >= 1, 0);
	memset(steps, 0, max * sizeof(*steps));
	if (b->phase == PHASE_DONE)
		return 0;
	update(b);
	if (b->phase == PHASE_REVERT) {
		guint n = next_revert(b, steps, max);

		if (n || b->phase == PHASE_DONE) {
			b->rounds += n > 0;
			return n;
		}
	}
	if (!b->explained) {
		/* Only after reverts that still show it, or runs no single culprit explains. */
		give_up(b, b->failed_reverts
			? g_strdup_printf("the head with %s reverted still shows it",
					  b->nodes[b->named].id)
			: g_strdup("no single commit explains the runs"));
		b->confidence = 0.0;
		return 0;
	}
	if (b->p.revert_check && b->w[b->best] >= MIN(REVERT_AT, b->p.confidence) &&
	    !b->nodes[b->best].boundary && b->best != b->bad && !b->nodes[b->best].revert_tried) {
		b->named = b->best;
		b->phase = PHASE_REVERT;
		return bisect_next(b, steps, max);
	}
	if (b->predates >= b->p.confidence) {
		conclude(b, BISECT_PREDATES, b->best, b->predates);
		return 0;
	}
	if (b->w[b->best] >= b->p.confidence) {
		conclude(b, BISECT_FOUND, b->best, b->w[b->best]);
		return 0;
	}
	if (b->runs >= b->p.max_runs) {
		give_up(b, g_strdup_printf("no culprit at %.1f%% after %u runs", 100.0 * b->p.confidence,
					   b->runs));
		return 0;
	}
	n_top = choose(b, top, scores, G_N_ELEMENTS(top));
	if (!n_top) {
		give_up(b, g_strdup("no commit left to test can tell the suspects apart"));
		return 0;
	}
	fill_round(b, &r, top, n_top, max);
	confirm(b, &r, max);
	for (guint i = 0; i < r.n; i++) {
		const struct node *n = &b->nodes[r.node[i]];

		steps[i].role = n->boundary ? BISECT_ROLE_BOUNDARY : BISECT_ROLE_SEARCH;
		steps[i].commit = n->id;
		steps[i].runs = r.runs[i];
		steps[i].build = !n->built;
	}
	b->rounds++;
	return r.n;
}

void bisect_record(struct bisect *b, const struct bisect_step *step, const char *tested,
		   enum bisect_result result, unsigned runs, unsigned failures)
{
	g_return_if_fail(failures <= runs);
	b->runs += runs;
	b->builds += step->build;
	if (step->role == BISECT_ROLE_REVERT) {
		struct node *n = &b->nodes[b->named];

		g_return_if_fail(b->phase == PHASE_REVERT);
		/* Its clean runs count against every other hypothesis: that commit contains them. */
		if (result != BISECT_SKIP) {
			n->revert_clean += runs - failures;
			b->reverts += runs - failures;
		}
		/*
		 * Does not revert cleanly: the search goes on, and it is named
		 * unchecked if it gets there. Still showing it: it is not the
		 * culprit. A second such revert means no single commit explains
		 * the failure: nobody is named.
		 */
		if (result != BISECT_GOOD)
			b->phase = PHASE_SEARCH;
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

	/* The revert check's rounds may run the culprit itself beside it. */
	g_return_if_fail(i >= 0 && (b->phase == PHASE_SEARCH || b->phase == PHASE_REVERT));
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
