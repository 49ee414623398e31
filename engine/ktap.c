/*
 * KTAP: see ktap.h. One pass over the lines with a level per depth of
 * nesting (at most KTAP_DEPTH_MAX): a line's depth is its indentation (4
 * spaces a level, as KUnit nests) plus each "# " that kselftest's runner
 * put before a program's own KTAP. A subtest's result comes before its
 * parent's, so a test is named by its parent only when the parent's result
 * line arrives.
 */
#define G_LOG_DOMAIN "engine"

#include "autoconfig.h"

#include <stdlib.h>
#include <string.h>

#include "engine/ktap.h"

/* At most this many KTAP_ERROR tests for one plan: a hostile "1..999999999" adds no more. */
#define MISSING_MAX 100

struct level {
	long plan;          /* "1..N" at this depth, or -1 */
	unsigned count;     /* results at this depth since the level opened */
	GPtrArray *members; /* the tests under the open parent, any depth: named when it ends */
	GQueue diag;        /* the last KTAP_DIAG_LINES lines since the last result here */
	char *announce;     /* "# Subtest: X" or "# selftests: ...": the next result's name */
};

struct parser {
	GPtrArray *out;
	struct level levels[KTAP_DEPTH_MAX + 1];
};

void ktap_test_free(struct ktap_test *t)
{
	if (!t)
		return;
	g_free(t->name);
	g_free(t->directive);
	g_free(t->diagnostic);
	g_free(t);
}

const char *ktap_result_name(enum ktap_result r)
{
	static const char *const names[] = {
		[KTAP_PASS] = "pass", [KTAP_FAIL] = "fail", [KTAP_SKIP] = "skip",
		[KTAP_ERROR] = "error",
	};

	return names[r];
}

/* @text made a test's name: printable, "selftests: T: N" as "T/N", at most KTAP_NAME_MAX. */
static char *test_name(const char *text, size_t len)
{
	g_autofree char *raw = g_strndup(text, MIN(len, 4 * KTAP_NAME_MAX));
	g_autofree char *valid = NULL;
	char *s = g_strstrip(raw);
	GString *name;

	if (g_str_has_prefix(s, "- "))
		s = g_strstrip(s + 2);
	if (g_str_has_prefix(s, "selftests: ")) {
		char *target = s + strlen("selftests: ");
		char *colon = strstr(target, ": ");

		if (colon && colon > target) {
			*colon = '/';
			memmove(colon + 1, colon + 2, strlen(colon + 2) + 1);
			s = target;
		}
	}
	valid = g_utf8_make_valid(s, -1);
	name = g_string_new(NULL);
	for (const char *p = valid; *p && name->len < KTAP_NAME_MAX; p = g_utf8_next_char(p)) {
		gunichar c = g_utf8_get_char(p);

		if (c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0))
			g_string_append_c(name, '?');
		else if (name->len + (size_t)(g_utf8_next_char(p) - p) <= KTAP_NAME_MAX)
			g_string_append_len(name, p, g_utf8_next_char(p) - p);
		else
			break;
	}
	if (!name->len)
		g_string_append(name, "?");
	return g_string_free(name, FALSE);
}

static void level_clear_diag(struct level *l)
{
	g_queue_clear_full(&l->diag, g_free);
}

static void level_reset(struct level *l)
{
	l->plan = -1;
	l->count = 0;
	g_ptr_array_set_size(l->members, 0);
	level_clear_diag(l);
	g_clear_pointer(&l->announce, g_free);
}

static char *diag_text(struct level *l)
{
	GString *s;

	if (g_queue_is_empty(&l->diag))
		return NULL;
	s = g_string_new(NULL);
	for (GList *i = l->diag.head; i; i = i->next)
		g_string_append_printf(s, "%s\n", (const char *)i->data);
	return g_string_free(s, FALSE);
}

/* Names the tests of level @d + 1 as subtests of @parent, and hands them to level @d. */
static void adopt(struct parser *p, unsigned d, struct ktap_test *parent)
{
	GPtrArray *kids = p->levels[d + 1].members;

	for (guint i = 0; i < kids->len; i++) {
		struct ktap_test *t = kids->pdata[i];
		g_autofree char *joined = g_strdup_printf("%s/%s", parent->name, t->name);

		g_free(t->name);
		t->name = test_name(joined, strlen(joined));
		if (t->depth == d + 1) {
			parent->leaf = false;
			if (t->result == KTAP_FAIL || t->result == KTAP_ERROR)
				parent->child_failed = true;
		}
		g_ptr_array_add(p->levels[d].members, t);
	}
}

static void add_test(struct parser *p, unsigned d, struct ktap_test *t)
{
	if (d < KTAP_DEPTH_MAX)
		adopt(p, d, t);
	g_ptr_array_add(p->out, t);
	g_ptr_array_add(p->levels[d].members, t);
	p->levels[d].count++;
	for (unsigned e = d + 1; e <= KTAP_DEPTH_MAX; e++)
		level_reset(&p->levels[e]);
	level_clear_diag(&p->levels[d]);
	g_clear_pointer(&p->levels[d].announce, g_free);
}

/* A KTAP_ERROR test for each result level @d's plan promised and did not get. */
static void add_missing(struct parser *p, unsigned d)
{
	struct level *l = &p->levels[d];
	unsigned missing = l->plan > (long)l->count ? (unsigned)(l->plan - l->count) : 0;

	for (unsigned k = 0; k < MIN(missing, MISSING_MAX); k++) {
		struct ktap_test *t = g_new0(struct ktap_test, 1);
		g_autofree char *number = g_strdup_printf("#%u", l->count + 1);
		const char *name = k == 0 && l->announce ? l->announce : number;

		t->name = test_name(name, strlen(name));
		t->result = KTAP_ERROR;
		t->diagnostic = diag_text(l);
		t->depth = d;
		t->leaf = true;
		add_test(p, d, t);
	}
	l->plan = -1;
}

/* Ends every open level from the deepest: missing results, and subtests without a parent. */
static void finish(struct parser *p)
{
	for (unsigned d = KTAP_DEPTH_MAX; d > 0; d--) {
		struct level *up = &p->levels[d - 1];

		add_missing(p, d);
		if (p->levels[d].members->len && up->plan <= (long)up->count) {
			/* Subtests whose parent neither reported nor was promised: named for it. */
			struct ktap_test *t = g_new0(struct ktap_test, 1);
			g_autofree char *number = g_strdup_printf("#%u", up->count + 1);
			const char *name = up->announce ? up->announce : number;

			t->name = test_name(name, strlen(name));
			t->result = KTAP_ERROR;
			t->depth = d - 1;
			t->leaf = true;
			add_test(p, d - 1, t);
		}
	}
	add_missing(p, 0);
	for (unsigned d = 0; d <= KTAP_DEPTH_MAX; d++)
		level_reset(&p->levels[d]);
}

static bool is_version(const char *s)
{
	return g_str_has_prefix(s, "KTAP version ") || g_str_has_prefix(s, "TAP version ");
}

/* "1..N": N, or -1. */
static long plan_of(const char *s)
{
	char *end;
	long n;

	if (strncmp(s, "1..", 3) != 0 || !g_ascii_isdigit(s[3]))
		return -1;
	n = strtol(s + 3, &end, 10);
	return *end == '\0' || *end == ' ' ? n : -1;
}

/* The text after "ok N" or "not ok N", or NULL when @s is no result line; *@ok set. */
static const char *result_of(const char *s, bool *ok)
{
	const char *p;

	*ok = g_str_has_prefix(s, "ok ");
	if (*ok)
		p = s + 3;
	else if (g_str_has_prefix(s, "not ok "))
		p = s + 7;
	else
		return NULL;
	if (!g_ascii_isdigit(*p))
		return NULL;
	while (g_ascii_isdigit(*p))
		p++;
	if (*p && *p != ' ')
		return NULL;
	return p;
}

static bool structural(const char *s)
{
	bool ok;

	return is_version(s) || plan_of(s) >= 0 || result_of(s, &ok);
}

static void result_line(struct parser *p, unsigned d, const char *s)
{
	bool ok;
	const char *desc = result_of(s, &ok);
	const char *hash = strstr(desc, " # ");
	struct ktap_test *t = g_new0(struct ktap_test, 1);

	t->name = test_name(desc, hash ? (size_t)(hash - desc) : strlen(desc));
	t->result = ok ? KTAP_PASS : KTAP_FAIL;
	if (hash) {
		const char *dir = hash + 3;

		t->directive = g_strstrip(g_strdup(dir));
		if (g_ascii_strncasecmp(t->directive, "SKIP", 4) == 0)
			t->result = KTAP_SKIP;
		else if (g_ascii_strncasecmp(t->directive, "TODO", 4) == 0 ||
			 g_ascii_strncasecmp(t->directive, "XFAIL", 5) == 0)
			t->result = KTAP_PASS;
	}
	t->diagnostic = diag_text(&p->levels[d]);
	t->depth = d;
	t->leaf = true;
	if (d < KTAP_DEPTH_MAX)
		add_missing(p, d + 1);
	add_test(p, d, t);
}

/* A line that is no KTAP line at depth @d (by its indentation): a diagnostic, or noise. */
static void other_line(struct parser *p, unsigned d, const char *line, const char *s)
{
	if (g_str_has_prefix(s, "# Subtest: ") && d > 0) {
		g_free(p->levels[d - 1].announce);
		p->levels[d - 1].announce = g_strdup(s + strlen("# Subtest: "));
	} else if (g_str_has_prefix(s, "# selftests: ")) {
		g_free(p->levels[d].announce);
		p->levels[d].announce = g_strdup(s + 2);
	}
	/* At the left margin, only a comment is the tests': the rest is the kernel's. */
	if (d == 0 && *s != '#')
		return;
	for (unsigned e = 0; e <= d; e++) {
		GQueue *q = &p->levels[e].diag;

		g_queue_push_tail(q, g_strndup(line, 512));
		if (q->length > KTAP_DIAG_LINES)
			g_free(g_queue_pop_head(q));
	}
}

static void parse_line(struct parser *p, const char *line)
{
	const char *r = line;
	unsigned hashes = 0;

	for (;;) {
		size_t spaces = strspn(r, " ");
		const char *s = r + spaces;
		unsigned d = hashes + (unsigned)(spaces / 4);
		long plan;

		if (structural(s)) {
			if (d > KTAP_DEPTH_MAX)
				break;
			if (is_version(s)) {
				if (d == 0)
					finish(p);
				for (unsigned e = d; e <= KTAP_DEPTH_MAX; e++) {
					p->levels[e].plan = -1;
					p->levels[e].count = 0;
				}
			} else if ((plan = plan_of(s)) >= 0) {
				p->levels[d].plan = plan;
				p->levels[d].count = 0;
			} else {
				result_line(p, d, s);
			}
			return;
		}
		if (r[0] != '#' || r[1] != ' ' || hashes >= KTAP_DEPTH_MAX)
			break;
		r += 2;
		hashes++;
	}
	{
		size_t spaces = strspn(line, " ");

		other_line(p, MIN((unsigned)(spaces / 4), KTAP_DEPTH_MAX), line, line + spaces);
	}
}

GPtrArray *ktap_parse(const char *text)
{
	struct parser p = { .out = g_ptr_array_new_with_free_func((GDestroyNotify)ktap_test_free) };
	const char *line = text ? text : "";

	for (unsigned d = 0; d <= KTAP_DEPTH_MAX; d++) {
		p.levels[d].plan = -1;
		p.levels[d].members = g_ptr_array_new();
		g_queue_init(&p.levels[d].diag);
	}
	while (*line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		g_autofree char *copy = g_strndup(line, MIN(len, 4096));

		g_strchomp(copy);
		parse_line(&p, copy);
		line += len + (nl ? 1 : 0);
	}
	finish(&p);
	for (unsigned d = 0; d <= KTAP_DEPTH_MAX; d++) {
		g_ptr_array_unref(p.levels[d].members);
		level_clear_diag(&p.levels[d]);
	}
	return p.out;
}

GPtrArray *ktap_results(GPtrArray *tests)
{
	GPtrArray *out = g_ptr_array_new();

	for (guint i = 0; i < tests->len; i++) {
		struct ktap_test *t = tests->pdata[i];

		if (t->leaf || ((t->result == KTAP_FAIL || t->result == KTAP_ERROR) &&
				!t->child_failed))
			g_ptr_array_add(out, t);
	}
	return out;
}
