/*
 * Culprit bisection: see bisect.h.
 *
 * The candidates are the ancestors of bad that are not ancestors of a good
 * commit (git bisect's set). Each step tests the candidate whose candidate
 * ancestors are closest to half the candidates, as git bisect does, so that
 * either answer halves the set; merges need nothing special. A bad commit
 * becomes the new bad: the culprit is among its candidate ancestors. A good
 * one removes itself and its ancestors. A skipped one is set aside and the
 * next best candidate is tried.
 */
#define G_LOG_DOMAIN "engine"

#include "autoconfig.h"

#include <math.h>
#include <string.h>

#include "engine/bisect.h"

struct node {
	char *id;
	guint *parents;
	guint n_parents;
	bool candidate;      /* still possibly the culprit */
	bool first_candidate; /* was a candidate at the start */
	bool skipped;
	bool tested_bad;
	bool verified;       /* tested again as the culprit's parent */
};

enum phase { SEARCH, VERIFY };

struct bisect {
	struct node *nodes;
	guint n;
	GHashTable *index; /* id -> node index + 1 */
	guint bad;
	unsigned runs_per_step;
	double good_error; /* chance one good verdict is wrong */
	double confidence;
	double min_confidence;
	unsigned good_steps;
	unsigned total_runs;
	GPtrArray *log;
	const char *pending;
	enum phase phase;
	bool contradicted; /* a verification showed the failure in a "good" parent */
	double verify_error;
};

static void step_free(struct bisect_step *s)
{
	g_free(s->id);
	g_free(s);
}

unsigned bisect_runs_per_step(double p_show, double max_error)
{
	if (p_show >= 1.0)
		return 1;
	if (p_show <= 0.0)
		return 1;
	return (unsigned)ceil(log(max_error) / log(1.0 - p_show));
}

double bisect_rate_lower_bound(unsigned failures, unsigned runs)
{
	const double z = 1.6449; /* one-sided 95% */
	double n = runs, p, centre, margin;

	if (runs == 0 || failures == 0)
		return 0.0;
	p = (double)failures / n;
	centre = p + z * z / (2.0 * n);
	margin = z * sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n));
	return (centre - margin) / (1.0 + z * z / n);
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
	g_ptr_array_unref(b->log);
	g_free(b);
}

static gint find(struct bisect *b, const char *id)
{
	return GPOINTER_TO_INT(g_hash_table_lookup(b->index, id)) - 1;
}

/* Marks @from and its ancestors in @mark (iteratively: histories are deep). */
static void ancestors(struct bisect *b, guint from, guint8 *mark)
{
	g_autoptr(GArray) stack = g_array_new(FALSE, FALSE, sizeof(guint));

	g_array_append_val(stack, from);
	while (stack->len) {
		guint i = g_array_index(stack, guint, stack->len - 1);

		g_array_set_size(stack, stack->len - 1);
		if (mark[i])
			continue;
		mark[i] = 1;
		for (guint p = 0; p < b->nodes[i].n_parents; p++)
			g_array_append_val(stack, b->nodes[i].parents[p]);
	}
}

/* Candidates: ancestors of bad minus ancestors of the good commits. */
static void narrow(struct bisect *b, const guint *good, guint n_good)
{
	g_autofree guint8 *up = g_new0(guint8, b->n);
	g_autofree guint8 *down = g_new0(guint8, b->n);

	ancestors(b, b->bad, up);
	for (guint g = 0; g < n_good; g++)
		ancestors(b, good[g], down);
	for (guint i = 0; i < b->n; i++)
		b->nodes[i].candidate = b->nodes[i].candidate && up[i] && !down[i];
}

struct bisect *bisect_new(const struct bisect_commit *commits, size_t n_commits,
			  const char *const *good, const char *bad, double p_show,
			  double max_error, double min_confidence, GError **error)
{
	zd_autoptr(bisect) b = g_new0(struct bisect, 1);
	g_autoptr(GArray) goods = g_array_new(FALSE, FALSE, sizeof(guint));
	gint bad_i;

	g_return_val_if_fail(p_show > 0.0 && p_show <= 1.0, NULL);
	g_return_val_if_fail(max_error > 0.0 && max_error < 1.0, NULL);
	b->n = n_commits;
	b->nodes = g_new0(struct node, n_commits);
	b->index = g_hash_table_new(g_str_hash, g_str_equal);
	b->log = g_ptr_array_new_with_free_func((GDestroyNotify)step_free);
	for (guint i = 0; i < b->n; i++) {
		b->nodes[i].id = g_strdup(commits[i].id);
		b->nodes[i].candidate = true;
		g_hash_table_insert(b->index, b->nodes[i].id, GINT_TO_POINTER(i + 1));
	}
	for (guint i = 0; i < b->n; i++) {
		guint np = commits[i].parents ? g_strv_length((char **)commits[i].parents) : 0;

		b->nodes[i].parents = g_new0(guint, np);
		for (guint p = 0; p < np; p++) {
			gint j = find(b, commits[i].parents[p]);

			/* Parents outside the given history are boundaries. */
			if (j >= 0)
				b->nodes[i].parents[b->nodes[i].n_parents++] = (guint)j;
		}
	}
	bad_i = find(b, bad);
	if (bad_i < 0) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_NOT_FOUND,
			    "the bad commit %s is not in the history", bad);
		return NULL;
	}
	b->bad = (guint)bad_i;
	b->nodes[b->bad].tested_bad = true;
	for (const char *const *g = good; g && *g; g++) {
		gint j = find(b, *g);

		if (j >= 0)
			g_array_append_val(goods, j);
	}
	narrow(b, (guint *)goods->data, goods->len);
	for (guint i = 0; i < b->n; i++)
		b->nodes[i].first_candidate = b->nodes[i].candidate;
	b->runs_per_step = bisect_runs_per_step(p_show, max_error);
	b->verify_error = p_show >= 1.0 ? 0.0 : pow(1.0 - p_show, 2 * b->runs_per_step);
	b->good_error = p_show >= 1.0 ? 0.0 : pow(1.0 - p_show, b->runs_per_step);
	b->confidence = 1.0;
	b->min_confidence = min_confidence;
	return g_steal_pointer(&b);
}

static guint n_candidates(struct bisect *b)
{
	guint n = 0;

	for (guint i = 0; i < b->n; i++)
		n += b->nodes[i].candidate;
	return n;
}

/*
 * Verification: the culprit's parents, tested again with twice the runs.
 * A "good" step that was wrong leaves a culprit whose parent is bad too;
 * this is where that shows. (Parents outside the history are boundaries:
 * the known-good commits.)
 */
static const char *next_verification(struct bisect *b, unsigned *runs)
{
	const struct node *c = &b->nodes[b->bad];

	if (b->contradicted || b->verify_error <= 0.0)
		return NULL;
	for (guint p = 0; p < c->n_parents; p++) {
		struct node *parent = &b->nodes[c->parents[p]];

		if (!parent->verified && parent->first_candidate) {
			*runs = 2 * b->runs_per_step;
			b->pending = parent->id;
			return parent->id;
		}
	}
	return NULL;
}

const char *bisect_next(struct bisect *b, unsigned *runs)
{
	g_autofree guint8 *mark = g_new0(guint8, b->n);
	guint total = n_candidates(b);
	gint best = -1;
	guint best_score = 0;

	b->pending = NULL;
	if (b->phase == VERIFY)
		return next_verification(b, runs);
	/* Done when bad's only candidate ancestor is bad itself. */
	if (total <= 1) {
		b->phase = VERIFY;
		return next_verification(b, runs);
	}
	for (guint i = 0; i < b->n; i++) {
		guint below = 0, score;

		if (!b->nodes[i].candidate || b->nodes[i].skipped || i == b->bad)
			continue;
		memset(mark, 0, b->n);
		ancestors(b, i, mark);
		for (guint j = 0; j < b->n; j++)
			below += mark[j] && b->nodes[j].candidate;
		/* git bisect's weight: the smaller side of the split. */
		score = MIN(below, total - below);
		if (best < 0 || score > best_score) {
			best = (gint)i;
			best_score = score;
		}
	}
	if (best < 0)
		return NULL; /* every other candidate was skipped */
	*runs = b->runs_per_step;
	b->pending = b->nodes[best].id;
	return b->pending;
}

void bisect_record(struct bisect *b, const char *id, enum bisect_result result,
		   unsigned runs, unsigned failures)
{
	struct bisect_step *step = g_new0(struct bisect_step, 1);
	gint i = find(b, id);

	g_return_if_fail(i >= 0);
	step->id = g_strdup(id);
	step->result = result;
	step->runs = runs;
	step->failures = failures;
	g_ptr_array_add(b->log, step);
	b->total_runs += runs;
	if (b->phase == VERIFY) {
		b->nodes[i].verified = true;
		if (result == BISECT_BAD)
			b->contradicted = true;
		else if (result == BISECT_GOOD)
			b->confidence = 1.0 - (1.0 - b->confidence) * b->verify_error;
		return;
	}
	switch (result) {
	case BISECT_BAD:
		b->bad = (guint)i;
		b->nodes[i].tested_bad = true;
		narrow(b, NULL, 0);
		break;
	case BISECT_GOOD: {
		guint g = (guint)i;

		narrow(b, &g, 1);
		b->good_steps++;
		b->confidence *= 1.0 - b->good_error;
		break;
	}
	case BISECT_SKIP:
		b->nodes[i].skipped = true;
		break;
	}
}

void bisect_outcome_clear(struct bisect_outcome *out)
{
	g_free(out->culprit);
	g_strfreev(out->suspects);
	if (out->log)
		g_ptr_array_unref(out->log);
	memset(out, 0, sizeof(*out));
}

void bisect_outcome(struct bisect *b, struct bisect_outcome *out)
{
	g_autoptr(GStrvBuilder) suspects = g_strv_builder_new();

	memset(out, 0, sizeof(*out));
	out->confidence = b->confidence;
	out->total_runs = b->total_runs;
	out->log = g_ptr_array_ref(b->log);
	if (n_candidates(b) == 1 && !b->contradicted && b->confidence >= b->min_confidence) {
		out->found = true;
		out->culprit = g_strdup(b->nodes[b->bad].id);
		return;
	}
	if (b->contradicted || b->confidence < b->min_confidence) {
		/*
		 * A "good" step may have been wrong: the culprit can be any
		 * first candidate below the lowest commit proven bad.
		 */
		g_autofree guint8 *mark = g_new0(guint8, b->n);

		ancestors(b, b->bad, mark);
		for (guint i = 0; i < b->n; i++) {
			if (mark[i] && b->nodes[i].first_candidate)
				g_strv_builder_add(suspects, b->nodes[i].id);
		}
		out->confidence = b->contradicted ? 0.0 : b->confidence;
	} else {
		/* Skips hid the culprit among the remaining candidates. */
		for (guint i = 0; i < b->n; i++) {
			if (b->nodes[i].candidate)
				g_strv_builder_add(suspects, b->nodes[i].id);
		}
	}
	out->suspects = g_strv_builder_end(suspects);
}
