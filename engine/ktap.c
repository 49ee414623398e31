/*
 * KTAP: see ktap.h.
 *
 * The parser keeps a stack of levels: at the bottom the root, the console
 * outside any document, and above it each document being read, the
 * innermost last. A level's prefix is the text before its version line
 * ("", "    ", "# ", "# # "); a nested document's prefix extends its
 * parent's, so all of them are kept once, as the innermost one, each level
 * knowing only its length. A line's level is then found by comparing the
 * line with that one prefix and a binary search over the lengths: the
 * cost is the line's length, whatever the depth.
 *
 * A level's pending test is the one whose lines are being read: its
 * diagnostics, the documents nested under it, its announced name. Its
 * result line (at the level's own prefix) closes every deeper level and
 * turns it into a struct ktap_test. Names are known only at result lines,
 * after the subtests', so full names are made in one pass at the end.
 */
#define G_LOG_DOMAIN "engine"

#include "autoconfig.h"

#include <string.h>

#include "engine/ktap.h"

/* A diagnostic line is cut to this many bytes. */
#define DIAG_LINE_MAX 512
/* The diagnostics of all tests together, in bytes. */
#define DIAG_BUDGET ((size_t)32 << 20)
/* At most this many tests (kept or not) are read; a real run has thousands. */
#define MAX_TESTS 100000
/* At most this many error tests for the missing numbers of one plan. */
#define MAX_MISSING 1000
/* Result and plan numbers above this are read as this. */
#define MAX_NUMBER G_MAXUINT32

/* A test being read. */
struct node {
	struct node *parent;    /* the test it is a subtest of, or NULL */
	struct ktap_test *test; /* once its result is known; owned by the output */
	char *label;            /* its own name, set with its result */
	char *announced;        /* from "# Subtest: X" or "# selftests: T: N", or NULL */
	GString *diag;          /* its lines so far, or NULL */
	unsigned diag_lines;
	bool has_children;      /* a document was nested under it */
	const char *path;       /* naming pass: its name, or its parent's when it has none */
	unsigned depth;         /* naming pass: how many kept tests are above it */
};

struct level {
	size_t prefix_len;    /* its prefix: the first prefix_len bytes of parse.prefix */
	bool doc;             /* false for the root */
	bool fresh;           /* no result, announcement or nested document yet */
	bool has_plan;
	guint64 plan;
	guint64 last;         /* the highest result number read */
	struct node *parent;  /* the test whose subtests it lists, or NULL */
	struct node *pending; /* the test whose lines are being read, or NULL */
};

struct parse {
	GArray *levels;   /* struct level, the root first */
	GString *prefix;  /* the innermost level's prefix */
	GPtrArray *nodes; /* every struct node, each after its parent */
	GPtrArray *out;   /* struct ktap_test, in result-line order */
	size_t diag_bytes;
};

/* A result line: "ok|not ok NUMBER [- ]DESCRIPTION [# DIRECTIVE]". */
struct result_line {
	enum ktap_result result;
	guint64 number;
	const char *desc, *directive;
	size_t desc_len, directive_len;
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
		[KTAP_PASS] = "pass",
		[KTAP_FAIL] = "fail",
		[KTAP_SKIP] = "skip",
		[KTAP_ERROR] = "error",
	};

	g_return_val_if_fail((size_t)r < G_N_ELEMENTS(names), "error");
	return names[r];
}

/* Text helpers: lines are (pointer, length), never NUL-terminated. */

static bool starts(const char *s, size_t n, const char *prefix)
{
	size_t k = strlen(prefix);

	return n >= k && memcmp(s, prefix, k) == 0;
}

static bool starts_nocase(const char *s, size_t n, const char *prefix)
{
	size_t k = strlen(prefix);

	return n >= k && g_ascii_strncasecmp(s, prefix, k) == 0;
}

/* How many of @s's first bytes are in @accept. */
static size_t span(const char *s, size_t n, const char *accept)
{
	size_t i = 0;

	while (i < n && s[i] && strchr(accept, s[i]))
		i++;
	return i;
}

static void trim(const char **s, size_t *n)
{
	size_t lead = span(*s, *n, " \t");

	*s += lead;
	*n -= lead;
	while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
		(*n)--;
}

/* Reads the digits at @s[*i], clamped at MAX_NUMBER; false if there are none. */
static bool number(guint64 *out, const char *s, size_t n, size_t *i)
{
	size_t start = *i;

	*out = 0;
	for (; *i < n && g_ascii_isdigit(s[*i]); (*i)++)
		*out = MIN(*out * 10 + (guint64)(s[*i] - '0'), (guint64)MAX_NUMBER);
	return *i > start;
}

/* @n, or less so that @s is cut at most @max bytes in and not inside a UTF-8 character. */
static size_t utf8_cut(const char *s, size_t n, size_t max)
{
	if (n <= max)
		return n;
	n = max;
	while (n > 0 && ((guchar)s[n] & 0xc0) == 0x80)
		n--;
	return n;
}

/* Appends @s with control characters (C0, DEL, C1) made '?', a tab a space. */
static void append_clean(GString *out, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		guchar c = (guchar)s[i];

		if (c == '\t') {
			g_string_append_c(out, ' ');
		} else if (c < 0x20 || c == 0x7f) {
			g_string_append_c(out, '?');
		} else if (c == 0xc2 && i + 1 < n && (guchar)s[i + 1] >= 0x80 &&
			   (guchar)s[i + 1] <= 0x9f) {
			g_string_append_c(out, '?');
			i++;
		} else {
			g_string_append_c(out, (char)c);
		}
	}
}

/*
 * Text for a name or a directive from @s: trimmed, cleaned, cut at
 * KTAP_NAME_MAX; with @runner, the kselftest runner's "selftests: T: N"
 * made "T/N". NULL when it is empty.
 */
static char *text_from(const char *s, size_t n, bool runner)
{
	GString *out = g_string_new(NULL);
	const char *sep;

	trim(&s, &n);
	if (runner && starts(s, n, "selftests: ") &&
	    (sep = memmem(s + 11, n - 11, ": ", 2)) != NULL) {
		append_clean(out, s + 11, (size_t)(sep - s) - 11);
		g_string_append_c(out, '/');
		append_clean(out, sep + 2, n - (size_t)(sep + 2 - s));
	} else {
		append_clean(out, s, n);
	}
	g_string_truncate(out, utf8_cut(out->str, out->len, KTAP_NAME_MAX));
	if (!out->len) {
		g_string_free(out, TRUE);
		return NULL;
	}
	return g_string_free(out, FALSE);
}

static bool is_version(const char *s, size_t n)
{
	size_t i = starts(s, n, "KTAP version ") ? 13 : starts(s, n, "TAP version ") ? 12 : 0;
	guint64 v;

	return i && number(&v, s, n, &i) && i == n;
}

/* "1..N", alone or followed by a blank ("1..0 # SKIP no tests"). */
static bool is_plan(guint64 *plan, const char *s, size_t n)
{
	size_t i = 3;

	return starts(s, n, "1..") && number(plan, s, n, &i) &&
	       (i == n || s[i] == ' ' || s[i] == '\t');
}

static bool is_result(struct result_line *r, const char *s, size_t n)
{
	size_t i = starts(s, n, "ok") ? 2 : starts(s, n, "not ok") ? 6 : 0;
	bool ok = i == 2;
	const char *rest;
	size_t rest_len, hash;

	if (!i || i == n || (s[i] != ' ' && s[i] != '\t'))
		return false;
	i += span(s + i, n - i, " \t");
	if (!number(&r->number, s, n, &i) || (i < n && s[i] != ' ' && s[i] != '\t'))
		return false;
	rest = s + i;
	rest_len = n - i;
	/* The directive starts at the first '#' that opens a word. */
	for (hash = 0; hash < rest_len; hash++) {
		if (rest[hash] == '#' && (hash == 0 || rest[hash - 1] == ' ' || rest[hash - 1] == '\t'))
			break;
	}
	r->desc = rest;
	r->desc_len = hash;
	trim(&r->desc, &r->desc_len);
	if (r->desc_len && r->desc[0] == '-' &&
	    (r->desc_len == 1 || r->desc[1] == ' ' || r->desc[1] == '\t')) {
		r->desc++;
		r->desc_len--;
		trim(&r->desc, &r->desc_len);
	}
	r->directive = hash < rest_len ? rest + hash + 1 : rest + rest_len;
	r->directive_len = hash < rest_len ? rest_len - hash - 1 : 0;
	trim(&r->directive, &r->directive_len);

	/* TAP reads its directives by their first letters, in any case. */
	if (starts_nocase(r->directive, r->directive_len, "skip"))
		r->result = KTAP_SKIP;
	else if (starts_nocase(r->directive, r->directive_len, "todo") ||
		 starts_nocase(r->directive, r->directive_len, "xfail"))
		r->result = KTAP_PASS;
	else
		r->result = ok ? KTAP_PASS : KTAP_FAIL;
	return true;
}

/* The parse. */

static struct level *level(struct parse *p, guint i)
{
	return &g_array_index(p->levels, struct level, i);
}

static guint innermost(struct parse *p)
{
	return p->levels->len - 1;
}

/* The deepest level whose prefix @s starts with. */
static guint find_level(struct parse *p, const char *s, size_t n)
{
	size_t common = 0, max = MIN(n, p->prefix->len);
	guint lo = 0, hi = innermost(p);

	while (common < max && s[common] == p->prefix->str[common])
		common++;
	/* The prefixes' lengths never decrease up the stack; the root's is 0. */
	while (lo < hi) {
		guint mid = lo + (hi - lo + 1) / 2;

		if (level(p, mid)->prefix_len <= common)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/* A new test under @parent; NULL once MAX_TESTS have been read. */
static struct node *node_new(struct parse *p, struct node *parent)
{
	struct node *n;

	if (p->nodes->len >= MAX_TESTS)
		return NULL;
	n = g_new0(struct node, 1);
	n->parent = parent;
	g_ptr_array_add(p->nodes, n);
	return n;
}

static void node_free(struct node *n)
{
	g_free(n->label);
	g_free(n->announced);
	if (n->diag)
		g_string_free(n->diag, TRUE);
	g_free(n);
}

static struct node *pending(struct parse *p, struct level *lv)
{
	if (!lv->pending)
		lv->pending = node_new(p, lv->parent);
	return lv->pending;
}

/* Names @n (NULL: nobody) @name; takes @name. */
static void announce(struct node *n, char *name)
{
	if (n && name) {
		g_free(n->announced);
		n->announced = name;
	} else {
		g_free(name);
	}
}

/*
 * Adds a line to @n's diagnostic and its parents'. A parent has every
 * line of its subtests, so once one is full, so are those above it: the
 * walk stops there, and costs no more than the lines it adds.
 */
static void add_diag(struct parse *p, struct node *n, const char *s, size_t len)
{
	len = utf8_cut(s, len, DIAG_LINE_MAX);
	for (; n && !n->test && n->diag_lines < KTAP_DIAG_LINES; n = n->parent) {
		if (p->diag_bytes + len + 1 > DIAG_BUDGET)
			return;
		if (!n->diag)
			n->diag = g_string_new(NULL);
		append_clean(n->diag, s, len);
		g_string_append_c(n->diag, '\n');
		n->diag_lines++;
		p->diag_bytes += len + 1;
	}
}

/* Makes @n a test with @result, named @label (taken), or its announced name, or "#NUMBER". */
static void emit(struct parse *p, struct node *n, enum ktap_result result, guint64 num,
		 char *label, char *directive)
{
	struct ktap_test *t = g_new0(struct ktap_test, 1);

	if (!label)
		label = n->announced ? g_strdup(n->announced)
				     : g_strdup_printf("#%" G_GUINT64_FORMAT, num);
	n->label = label;
	t->result = result;
	t->directive = directive;
	t->diagnostic = n->diag ? g_string_free(n->diag, FALSE) : NULL;
	n->diag = NULL;
	t->leaf = true;
	n->test = t;
	g_ptr_array_add(p->out, t);
}

/*
 * Ends @lv: its pending test is an error when it was announced or had
 * begun subtests, or when the plan promised it; so is each further number
 * the plan promised.
 */
static void settle(struct parse *p, struct level *lv)
{
	struct node *n = lv->pending;
	guint64 next = lv->last + 1;

	lv->pending = NULL;
	if (n && (n->announced ||
		  (lv->doc && (n->has_children || (lv->has_plan && next <= lv->plan))))) {
		emit(p, n, KTAP_ERROR, next, NULL, NULL);
		next++;
	}
	for (unsigned i = 0; lv->has_plan && next <= lv->plan && i < MAX_MISSING; i++, next++) {
		n = node_new(p, lv->parent);
		if (!n)
			break;
		emit(p, n, KTAP_ERROR, next, NULL, NULL);
	}
}

/* Ends the levels above @keep, the innermost first. */
static void close_to(struct parse *p, guint keep)
{
	while (innermost(p) > keep) {
		settle(p, level(p, innermost(p)));
		g_array_set_size(p->levels, p->levels->len - 1);
	}
	g_string_truncate(p->prefix, level(p, keep)->prefix_len);
}

/* Opens a document whose prefix is the first @prefix_len bytes of @line. */
static struct level *push(struct parse *p, const char *line, size_t prefix_len,
			  struct node *parent)
{
	struct level lv = { .prefix_len = prefix_len, .doc = true, .fresh = true,
			    .parent = parent };
	size_t top = level(p, innermost(p))->prefix_len;

	g_assert(prefix_len >= top);
	g_string_truncate(p->prefix, top);
	g_string_append_len(p->prefix, line + top, (gssize)(prefix_len - top));
	g_array_append_val(p->levels, lv);
	return level(p, innermost(p));
}

/*
 * Ends the levels above @k for a document nested in it, and returns the
 * test of level @k that document belongs to (NULL past MAX_TESTS).
 */
static struct node *nest_under(struct parse *p, guint k)
{
	struct level *lv;
	struct node *parent;

	close_to(p, k);
	lv = level(p, k);
	parent = pending(p, lv);
	if (parent)
		parent->has_children = true;
	lv->fresh = false;
	return parent;
}

/* A version line in level @k at column @col of @line. */
static void read_version(struct parse *p, guint k, const char *line, size_t col)
{
	struct level *lv = level(p, k);

	if (col > lv->prefix_len) {
		push(p, line, col, nest_under(p, k));
	} else if (!lv->doc) {
		/* A document at the console's first column: any earlier one has ended. */
		close_to(p, 0);
		settle(p, level(p, 0));
		push(p, line, col, NULL);
	} else {
		/* Another document after this one, at its column. */
		struct node *parent = lv->parent;

		close_to(p, k - 1);
		push(p, line, col, parent);
	}
}

/*
 * "# Subtest: X" in level @k, @indent blanks in: at the level's own column,
 * it names the test whose document this is (KTAP 1, after the version
 * line), or the pending one; indented, it opens that test's document (the
 * older TAP 14 form, without a version line).
 */
static void read_subtest(struct parse *p, guint k, const char *line, const char *r, size_t rn,
			 size_t indent)
{
	const size_t skip = indent + strlen("# Subtest:");
	char *name = text_from(r + skip, rn - skip, false);
	struct level *lv = level(p, k);
	struct node *parent;

	if (!indent) {
		if (!lv->doc) {
			g_free(name);
		} else if (lv->fresh) {
			announce(lv->parent, name);
			lv->fresh = false;
		} else {
			announce(pending(p, lv), name);
		}
		return;
	}
	parent = nest_under(p, k);
	announce(parent, name);
	lv = push(p, line, level(p, k)->prefix_len + indent, parent);
	lv->fresh = false;
}

static void read_result(struct parse *p, guint k, const struct result_line *res)
{
	struct level *lv;
	struct node *n;

	close_to(p, k);
	lv = level(p, k);
	n = pending(p, lv);
	lv->pending = NULL;
	lv->fresh = false;
	lv->last = MAX(lv->last, res->number);
	if (!n)
		return;
	emit(p, n, res->result, res->number, text_from(res->desc, res->desc_len, true),
	     text_from(res->directive, res->directive_len, false));
}

static void read_line(struct parse *p, const char *line, size_t n)
{
	guint k = find_level(p, line, n);
	struct level *lv = level(p, k);
	const char *r = line + lv->prefix_len;
	size_t rn = n - lv->prefix_len;
	size_t lead = span(r, rn, " \t#"), indent = span(r, rn, " \t");
	struct result_line res;
	guint64 plan;

	if (!rn)
		return;
	if (is_version(r + lead, rn - lead)) {
		read_version(p, k, line, lv->prefix_len + lead);
	} else if (starts(r + indent, rn - indent, "# Subtest:")) {
		read_subtest(p, k, line, r, rn, indent);
	} else if (lv->doc && !lv->has_plan && is_plan(&plan, r, rn)) {
		close_to(p, k);
		lv = level(p, k);
		lv->has_plan = true;
		lv->plan = plan;
	} else if (is_result(&res, r, rn) &&
		   (lv->doc || (lv->pending && lv->pending->has_children))) {
		/* At the root, only the result of a test whose document was read. */
		read_result(p, k, &res);
	} else if (!lv->doc) {
		/* Console noise outside any document. */
	} else if (r[0] == '#') {
		struct node *t = pending(p, lv);

		if (starts(r, rn, "# selftests: "))
			announce(t, text_from(r + 2, rn - 2, true));
		add_diag(p, t, r, rn);
	} else if (k == innermost(p)) {
		add_diag(p, pending(p, lv), r, rn);
	}
}

/* Full names and depths, parents first: the order the nodes were made in. */
static void name_tests(struct parse *p)
{
	for (guint i = 0; i < p->nodes->len; i++) {
		struct node *n = p->nodes->pdata[i], *up = n->parent;
		const char *base = up ? up->path : NULL;
		GString *name;

		n->depth = up ? up->depth + (up->test ? 1 : 0) : 0;
		if (!n->test) {
			/* Never reported: its subtests hang from its parent. */
			n->path = base;
			continue;
		}
		name = g_string_new(base);
		if (base)
			g_string_append_c(name, '/');
		g_string_append(name, n->label);
		g_string_truncate(name, utf8_cut(name->str, name->len, KTAP_NAME_MAX));
		n->test->name = g_string_free(name, FALSE);
		n->test->depth = n->depth;
		n->path = n->test->name;
		if (up && up->test)
			up->test->leaf = false;
	}
}

GPtrArray *ktap_parse(const char *text)
{
	struct parse p = {
		.levels = g_array_new(FALSE, TRUE, sizeof(struct level)),
		.prefix = g_string_new(NULL),
		.nodes = g_ptr_array_new_with_free_func((GDestroyNotify)node_free),
		.out = g_ptr_array_new_with_free_func((GDestroyNotify)ktap_test_free),
	};
	const struct level root = { 0 };

	g_array_append_val(p.levels, root);
	/* Line by line in place: linear in the text's size, whatever its shape. */
	for (const char *line = text ? text : ""; *line;) {
		const char *nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line) : strlen(line);

		while (n && (line[n - 1] == ' ' || line[n - 1] == '\t' || line[n - 1] == '\r'))
			n--;
		if (n)
			read_line(&p, line, n);
		if (!nl)
			break;
		line = nl + 1;
	}
	close_to(&p, 0);
	settle(&p, level(&p, 0));
	name_tests(&p);
	g_ptr_array_unref(p.nodes);
	g_array_unref(p.levels);
	g_string_free(p.prefix, TRUE);
	return p.out;
}

GPtrArray *ktap_results(GPtrArray *tests)
{
	/* The subtrees read and not yet claimed by a parent: depth, and whether any failed. */
	struct subtree {
		unsigned depth;
		bool failed;
	};
	g_autoptr(GArray) open = g_array_new(FALSE, FALSE, sizeof(struct subtree));
	GPtrArray *out = g_ptr_array_new();

	/* A parent follows its subtests, which are the deeper tests right before it. */
	for (guint i = 0; tests && i < tests->len; i++) {
		struct ktap_test *t = tests->pdata[i];
		bool failed = t->result == KTAP_FAIL || t->result == KTAP_ERROR;
		struct subtree s = { .depth = t->depth };
		bool below = false;

		while (open->len &&
		       g_array_index(open, struct subtree, open->len - 1).depth > t->depth) {
			below |= g_array_index(open, struct subtree, open->len - 1).failed;
			g_array_set_size(open, open->len - 1);
		}
		if (t->leaf || (failed && !below))
			g_ptr_array_add(out, t);
		s.failed = failed || below;
		g_array_append_val(open, s);
	}
	return out;
}
