/*
 * The bisection simulator: see bisect-sim.h.
 */
#include "autoconfig.h"

#include <string.h>

#include "tests/bisect-sim.h"

static struct sim *sim_new(double p, guint32 seed)
{
	struct sim *s = g_new0(struct sim, 1);

	s->ids = g_ptr_array_new_with_free_func(g_free);
	s->parents = g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
	s->skip = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	s->boundaries = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
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

guint sim_index(const char *id)
{
	return (guint)g_ascii_strtoull(id + 1, NULL, 10);
}

/* Marks the commits that contain the culprit (parents come first). */
static void mark_bad(struct sim *s)
{
	s->bad = g_new0(guint8, s->ids->len);
	s->bad[s->culprit] = 1;
	for (guint i = 0; i < s->ids->len; i++) {
		for (char **p = s->parents->pdata[i]; *p; p++) {
			if (s->bad[sim_index(*p)])
				s->bad[i] = 1;
		}
	}
	g_hash_table_add(s->boundaries, g_strdup("c0"));
}

struct sim *sim_linear(guint n, guint culprit, double p, guint32 seed)
{
	struct sim *s = sim_new(p, seed);

	for (guint i = 0; i <= n; i++)
		add(s, i ? s->ids->pdata[i - 1] : NULL, NULL);
	s->culprit = culprit;
	mark_bad(s);
	return s;
}

struct sim *sim_merges(guint n, guint culprit, double p, guint32 seed)
{
	struct sim *s = sim_new(p, seed);
	guint main_tip = add(s, NULL, NULL);

	while (s->ids->len <= n) {
		if (s->ids->len % 8 == 0 && s->ids->len + 4 <= n) {
			/* A topic forked from mainline, merged back. */
			guint t = add(s, s->ids->pdata[main_tip], NULL);

			t = add(s, s->ids->pdata[t], NULL);
			t = add(s, s->ids->pdata[t], NULL);
			main_tip = add(s, s->ids->pdata[main_tip], s->ids->pdata[t]);
		} else {
			main_tip = add(s, s->ids->pdata[main_tip], NULL);
		}
	}
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
	g_hash_table_unref(s->boundaries);
	g_free(s->bad);
	g_rand_free(s->rand);
	g_free(s);
}

static unsigned runs_of(struct sim *s, bool bad, unsigned runs)
{
	unsigned failures = 0;

	for (unsigned r = 0; r < runs; r++)
		failures += bad && g_rand_double(s->rand) < s->p;
	return failures;
}

void sim_bisect(struct sim *s, const struct bisect_params *params, struct sim_run *run,
		struct bisect_outcome *out)
{
	guint head = s->ids->len - 1;
	g_autofree struct bisect_commit *commits = g_new0(struct bisect_commit, s->ids->len);
	g_autoptr(GArray) good = g_array_new(FALSE, FALSE, sizeof(struct bisect_boundary));
	g_autofree bool *shows = NULL;
	unsigned slots = params->slots ? params->slots : 1;
	unsigned n_commits = 0, routine = run->routine;
	struct bisect_step steps[BISECT_ROUND_MAX];
	struct bisect *b;

	for (guint i = 0; i < s->ids->len; i++) {
		if (g_hash_table_contains(s->boundaries, s->ids->pdata[i])) {
			struct bisect_boundary boundary = { s->ids->pdata[i], run->verify };

			g_array_append_val(good, boundary);
			continue;
		}
		commits[n_commits].id = s->ids->pdata[i];
		commits[n_commits++].parents = (const char *const *)s->parents->pdata[i];
	}
	b = bisect_new(commits, n_commits, (struct bisect_boundary *)good->data, good->len,
		       s->ids->pdata[head], params, NULL);
	g_assert_nonnull(b);
	/* The routine runs of the head, given that one showed it (what triggers a bisection). */
	run->boots = run->rounds = run->serial_rounds = 0;
	if (routine) {
		shows = g_new0(bool, routine);
		for (bool any = false; !any;) {
			for (unsigned r = 0; r < routine; r++)
				any |= shows[r] = g_rand_double(s->rand) < s->p;
		}
		bisect_observe_trigger(b, s->ids->pdata[head], shows, routine);
		run->boots += routine;
		run->rounds += (routine + slots - 1) / slots;
		run->serial_rounds += (routine + slots - 1) / slots;
	}
	for (guint g = 0; g < good->len && run->base_runs; g++) {
		const char *id = g_array_index(good, struct bisect_boundary, g).id;

		bisect_observe(b, id, run->base_runs,
			       runs_of(s, s->bad[sim_index(id)], run->base_runs));
	}
	for (guint n; (n = bisect_next(b, steps, BISECT_ROUND_MAX));) {
		unsigned round = 0;

		for (guint k = 0; k < n; k++) {
			const struct bisect_step *step = &steps[k];
			guint i = sim_index(step->commit);
			unsigned failures;

			if (step->role == BISECT_ROLE_REVERT) {
				if (run->no_revert) {
					bisect_record(b, step, NULL, BISECT_SKIP, 0, 0);
					continue;
				}
				/* The head without the named commit still has the real culprit unless it is it. */
				failures = runs_of(s, i != s->culprit && s->bad[head], step->runs);
				bisect_record(b, step, "revert", failures ? BISECT_BAD : BISECT_GOOD,
					      step->runs, failures);
			} else if (g_hash_table_contains(s->skip, step->commit)) {
				bisect_record(b, step, NULL, BISECT_SKIP, 0, 0);
				continue;
			} else {
				failures = runs_of(s, s->bad[i], step->runs);
				bisect_record(b, step, NULL, failures ? BISECT_BAD : BISECT_GOOD,
					      step->runs, failures);
			}
			run->boots += step->runs;
			run->serial_rounds += (step->runs + slots - 1) / slots;
			round += step->runs;
		}
		run->rounds += (round + slots - 1) / slots;
	}
	bisect_outcome(b, out);
	bisect_free(b);
}
