/*
 * The bisection simulator: see bisect-sim.h.
 */
#include "autoconfig.h"

#include "tests/bisect-sim.h"

static struct sim *sim_new(double p, guint32 seed)
{
	struct sim *s = g_new0(struct sim, 1);

	s->ids = g_ptr_array_new_with_free_func(g_free);
	s->parents = g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
	s->skip = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	s->p = p;
	s->rand = g_rand_new_with_seed(seed);
	return s;
}

static guint add(struct sim *s, const char *p1, const char *p2)
{
	char **parents = g_new0(char *, 3);
	guint n = 0;

	if (p1)
		parents[n++] = g_strdup(p1);
	if (p2)
		parents[n++] = g_strdup(p2);
	g_ptr_array_add(s->ids, g_strdup_printf("c%u", s->ids->len));
	g_ptr_array_add(s->parents, parents);
	return s->ids->len - 1;
}

/* Marks every commit that has the culprit among its ancestors (or is it). */
static void mark_bad(struct sim *s)
{
	s->bad = g_new0(guint8, s->ids->len);
	s->bad[s->culprit] = 1;
	/* Commits are created parents first, so one pass in order suffices. */
	for (guint i = 0; i < s->ids->len; i++) {
		char **parents = s->parents->pdata[i];

		for (char **p = parents; *p; p++) {
			guint j = (guint)g_ascii_strtoull(*p + 1, NULL, 10);

			if (s->bad[j])
				s->bad[i] = 1;
		}
	}
}

struct sim *sim_linear(guint n, guint culprit, double p, guint32 seed)
{
	struct sim *s = sim_new(p, seed);

	for (guint i = 0; i < n; i++)
		add(s, i ? s->ids->pdata[i - 1] : NULL, NULL);
	s->culprit = culprit;
	mark_bad(s);
	return s;
}

struct sim *sim_merges(guint n, guint culprit, double p, guint32 seed)
{
	struct sim *s = sim_new(p, seed);
	guint main_tip = add(s, NULL, NULL);

	while (s->ids->len < n) {
		if (s->ids->len % 8 == 0 && s->ids->len + 4 < n) {
			/* A topic forked from mainline, merged back. */
			guint t = add(s, s->ids->pdata[main_tip], NULL);

			t = add(s, s->ids->pdata[t], NULL);
			t = add(s, s->ids->pdata[t], NULL);
			main_tip = add(s, s->ids->pdata[main_tip], s->ids->pdata[t]);
		} else {
			main_tip = add(s, s->ids->pdata[main_tip], NULL);
		}
	}
	/* The last created commit must be the mainline tip: make it so. */
	if (main_tip != s->ids->len - 1)
		main_tip = add(s, s->ids->pdata[main_tip], NULL);
	s->culprit = culprit;
	mark_bad(s);
	return s;
}

void sim_free(struct sim *s)
{
	g_ptr_array_unref(s->ids);
	g_ptr_array_unref(s->parents);
	g_hash_table_unref(s->skip);
	g_free(s->bad);
	g_rand_free(s->rand);
	g_free(s);
}

void sim_bisect(struct sim *s, double p_estimate, double max_error, double min_confidence,
		struct bisect_outcome *out)
{
	g_autofree struct bisect_commit *commits = g_new0(struct bisect_commit, s->ids->len);
	const char *good[] = { s->ids->pdata[0], NULL };
	struct bisect *b;
	const char *next;
	unsigned runs;

	for (guint i = 0; i < s->ids->len; i++) {
		commits[i].id = s->ids->pdata[i];
		commits[i].parents = (const char *const *)s->parents->pdata[i];
	}
	b = bisect_new(commits, s->ids->len, good, s->ids->pdata[s->ids->len - 1], p_estimate,
		       max_error, min_confidence, NULL);
	g_assert_nonnull(b);
	while ((next = bisect_next(b, &runs))) {
		guint i = (guint)g_ascii_strtoull(next + 1, NULL, 10);
		unsigned failures = 0;

		if (g_hash_table_contains(s->skip, next)) {
			bisect_record(b, next, BISECT_SKIP, 1, 0);
			continue;
		}
		for (unsigned r = 0; r < runs; r++)
			failures += s->bad[i] && g_rand_double(s->rand) < s->p;
		bisect_record(b, next, failures ? BISECT_BAD : BISECT_GOOD, runs, failures);
	}
	bisect_outcome(b, out);
	bisect_free(b);
}
