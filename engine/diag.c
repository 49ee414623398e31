/*
 * Diagnostics: see diag.h.
 */
#define G_LOG_DOMAIN "engine"

#include "autoconfig.h"

#include <string.h>

#include "engine/diag.h"

void diag_free(struct diag *d)
{
	if (!d)
		return;
	g_free(d->checker);
	g_free(d->file);
	g_free(d->function);
	g_free(d->message);
	g_free(d->fingerprint);
	g_free(d);
}

const char *diag_kind_name(enum diag_kind kind)
{
	return kind == DIAG_ERROR ? "error" : "warning";
}

/* The line formats, compiled once. */
static struct {
	GRegex *ansi;      /* colour escapes */
	GRegex *located;   /* file:line[:col]: warning|error|fatal error: message */
	GRegex *cocci;     /* file:line:col-col: WARNING|ERROR...: message */
	GRegex *function;  /* file: In function 'f': */
	GRegex *toplevel;  /* file: At top level: */
	GRegex *ld_ref;    /* file:(.text+0x1): undefined reference to `x' */
	GRegex *ld_warn;   /* ld: warning: message */
	GRegex *modpost;   /* WARNING: modpost: message */
	GRegex *make_err;  /* make[N]: *** [target] Error N */
	GRegex *step;      /*   CC      file.o  /  CHECK   file.c */
	GRegex *numbers;   /* free-standing numbers and hex */
} re;

static void compile_regexes(void)
{
	static gsize once;

	if (!g_once_init_enter(&once))
		return;
	re.ansi = g_regex_new("\x1b\\[[0-9;]*[mK]", G_REGEX_OPTIMIZE, 0, NULL);
	re.located = g_regex_new("^(\\S[^:]*):([0-9]+):(?:([0-9]+):)? (warning|error|fatal error): (.*)$",
				 G_REGEX_OPTIMIZE, 0, NULL);
	re.cocci = g_regex_new("^(\\S[^:]*):([0-9]+):([0-9]+)-[0-9]+: (?:(WARNING|ERROR|warning|error|"
			       "info|note)[: ] *)?(.*)$", G_REGEX_OPTIMIZE, 0, NULL);
	re.function = g_regex_new("^(\\S[^:]*): In (?:member )?function '(.+)':$",
				  G_REGEX_OPTIMIZE, 0, NULL);
	re.toplevel = g_regex_new("^(\\S[^:]*): At top level:$", G_REGEX_OPTIMIZE, 0, NULL);
	re.ld_ref = g_regex_new("^(\\S[^:]*):\\([^)]*\\): ((?:undefined reference to|"
				"multiple definition of) .*)$", G_REGEX_OPTIMIZE, 0, NULL);
	re.ld_warn = g_regex_new("^(?:\\S*/)?ld(?:\\.bfd|\\.lld)?: (?:(\\S[^:]*): )?warning: (.*)$",
				 G_REGEX_OPTIMIZE, 0, NULL);
	re.modpost = g_regex_new("^(WARNING|ERROR): modpost: (.*)$", G_REGEX_OPTIMIZE, 0, NULL);
	re.make_err = g_regex_new("^make(?:\\[[0-9]+\\])?: \\*\\*\\* (?:\\[(.*)\\] )?(.*)$",
				  G_REGEX_OPTIMIZE, 0, NULL);
	re.step = g_regex_new("^  ([A-Z0-9_]+) +(\\S+)$", G_REGEX_OPTIMIZE, 0, NULL);
	re.numbers = g_regex_new("0x[0-9a-fA-F]+|(?<![A-Za-z0-9_.])[0-9]+(?![A-Za-z_])",
				 G_REGEX_OPTIMIZE, 0, NULL);
	g_once_init_leave(&once, 1);
}

/* Replaces the UTF-8 curly quotes of non-C locales with ASCII ones. */
static char *ascii_quotes(const char *text)
{
	GString *out = g_string_sized_new(strlen(text));

	for (const char *p = text; *p; p++) {
		if (strncmp(p, "\xe2\x80\x98", 3) == 0 || strncmp(p, "\xe2\x80\x99", 3) == 0) {
			g_string_append_c(out, '\'');
			p += 2;
		} else if (strncmp(p, "\xe2\x80\x9c", 3) == 0 || strncmp(p, "\xe2\x80\x9d", 3) == 0) {
			g_string_append_c(out, '"');
			p += 2;
		} else {
			g_string_append_c(out, *p);
		}
	}
	return g_string_free(out, FALSE);
}

/*
 * Makes @path relative to the source tree. Kbuild with O= compiles from the
 * build directory, naming sources through a relative srctree ("../src/x.c")
 * or an absolute one; make without O= names them from the source tree.
 */
static char *relative_path(const char *path, const char *srcdir, const char *builddir)
{
	g_autofree char *resolved = NULL;
	const char *p = path;
	const char *roots[] = { srcdir, builddir };

	if (g_str_has_prefix(path, "../") && builddir) {
		resolved = g_canonicalize_filename(path, builddir);
		p = resolved;
	}

	for (size_t i = 0; i < G_N_ELEMENTS(roots); i++) {
		size_t n = roots[i] ? strlen(roots[i]) : 0;

		if (n && strncmp(p, roots[i], n) == 0 && p[n] == '/') {
			p += n + 1;
			break;
		}
	}
	while (g_str_has_prefix(p, "./") || g_str_has_prefix(p, "../"))
		p += p[1] == '/' ? 2 : 3;
	return g_strdup(p);
}

char *diag_fingerprint(enum diag_kind kind, const char *checker, const char *file,
		       const char *function, const char *message)
{
	g_autofree char *shape = NULL;
	g_autoptr(GChecksum) sum = g_checksum_new(G_CHECKSUM_SHA256);

	compile_regexes();
	shape = g_regex_replace_literal(re.numbers, message, -1, 0, "N", 0, NULL);

	g_checksum_update(sum, (const guchar *)diag_kind_name(kind), -1);
	g_checksum_update(sum, (const guchar *)"\n", 1);
	g_checksum_update(sum, (const guchar *)checker, -1);
	g_checksum_update(sum, (const guchar *)"\n", 1);
	g_checksum_update(sum, (const guchar *)(file ? file : ""), -1);
	g_checksum_update(sum, (const guchar *)"\n", 1);
	g_checksum_update(sum, (const guchar *)(function ? function : ""), -1);
	g_checksum_update(sum, (const guchar *)"\n", 1);
	g_checksum_update(sum, (const guchar *)g_strstrip(shape), -1);
	return g_strndup(g_checksum_get_string(sum), 16);
}

/* The parser's running state. */
struct parse {
	const char *srcdir, *builddir;
	GPtrArray *out;
	GHashTable *seen;      /* "fingerprint:line" of records kept */
	GHashTable *function;  /* file -> current function */
	GHashTable *step;      /* file stem -> last kbuild step ("CC", "CHECK") */
	char *first_make_error;
};

static char *stem(const char *file)
{
	const char *dot = strrchr(file, '.');
	const char *slash = strrchr(file, '/');

	return dot && (!slash || dot > slash) ? g_strndup(file, dot - file) : g_strdup(file);
}

static void add(struct parse *p, enum diag_kind kind, const char *checker, const char *file,
		unsigned line, unsigned column, const char *message)
{
	struct diag *d = g_new0(struct diag, 1);
	char *key;

	d->kind = kind;
	d->checker = g_strdup(checker);
	d->file = g_strdup(file ? file : "");
	d->line = line;
	d->column = column;
	d->function = g_strdup(g_hash_table_lookup(p->function, d->file));
	d->message = g_strdup(message);
	d->fingerprint = diag_fingerprint(kind, d->checker, d->file, d->function, d->message);
	key = g_strdup_printf("%s:%u", d->fingerprint, line);
	if (g_hash_table_contains(p->seen, key)) {
		g_free(key);
		diag_free(d);
		return;
	}
	g_hash_table_add(p->seen, key);
	g_ptr_array_add(p->out, d);
}

static unsigned to_uint(const char *s)
{
	return s && *s ? (unsigned)g_ascii_strtoull(s, NULL, 10) : 0;
}

/* Sparse's findings look like gcc's: tell them apart by the kbuild step. */
static const char *compiler_or_sparse(struct parse *p, const char *file)
{
	g_autofree char *s = stem(file);
	const char *last = g_hash_table_lookup(p->step, s);

	return last && strcmp(last, "CHECK") == 0 ? "sparse" : "compiler";
}

static void parse_line(struct parse *p, const char *raw)
{
	g_autofree char *line = ascii_quotes(raw);
	g_autoptr(GMatchInfo) m = NULL;

	if (g_regex_match(re.step, line, 0, &m)) {
		g_autofree char *file = g_match_info_fetch(m, 2);
		g_autofree char *rel = relative_path(file, p->srcdir, p->builddir);

		g_hash_table_replace(p->step, stem(rel), g_match_info_fetch(m, 1));
		return;
	}
	g_clear_pointer(&m, g_match_info_free);
	if (g_regex_match(re.function, line, 0, &m)) {
		g_autofree char *file = g_match_info_fetch(m, 1);

		g_hash_table_replace(p->function, relative_path(file, p->srcdir, p->builddir),
				     g_match_info_fetch(m, 2));
		return;
	}
	g_clear_pointer(&m, g_match_info_free);
	if (g_regex_match(re.toplevel, line, 0, &m)) {
		g_autofree char *file = g_match_info_fetch(m, 1);
		g_autofree char *rel = relative_path(file, p->srcdir, p->builddir);

		g_hash_table_remove(p->function, rel);
		return;
	}
	g_clear_pointer(&m, g_match_info_free);
	if (g_regex_match(re.located, line, 0, &m)) {
		g_autofree char *file = g_match_info_fetch(m, 1);
		g_autofree char *rel = relative_path(file, p->srcdir, p->builddir);
		g_autofree char *ln = g_match_info_fetch(m, 2);
		g_autofree char *col = g_match_info_fetch(m, 3);
		g_autofree char *kind = g_match_info_fetch(m, 4);
		g_autofree char *msg = g_match_info_fetch(m, 5);

		add(p, strcmp(kind, "warning") == 0 ? DIAG_WARNING : DIAG_ERROR,
		    compiler_or_sparse(p, rel), rel, to_uint(ln), to_uint(col), msg);
		return;
	}
	g_clear_pointer(&m, g_match_info_free);
	if (g_regex_match(re.cocci, line, 0, &m)) {
		g_autofree char *file = g_match_info_fetch(m, 1);
		g_autofree char *rel = relative_path(file, p->srcdir, p->builddir);
		g_autofree char *ln = g_match_info_fetch(m, 2);
		g_autofree char *col = g_match_info_fetch(m, 3);
		g_autofree char *kind = g_match_info_fetch(m, 4);
		g_autofree char *msg = g_match_info_fetch(m, 5);

		add(p, g_ascii_strcasecmp(kind, "error") == 0 ? DIAG_ERROR : DIAG_WARNING,
		    "coccinelle", rel, to_uint(ln), to_uint(col), msg);
		return;
	}
	g_clear_pointer(&m, g_match_info_free);
	if (g_regex_match(re.ld_ref, line, 0, &m)) {
		g_autofree char *file = g_match_info_fetch(m, 1);
		g_autofree char *rel = relative_path(file, p->srcdir, p->builddir);
		g_autofree char *msg = g_match_info_fetch(m, 2);

		add(p, DIAG_ERROR, "ld", rel, 0, 0, msg);
		return;
	}
	g_clear_pointer(&m, g_match_info_free);
	if (g_regex_match(re.ld_warn, line, 0, &m)) {
		g_autofree char *file = g_match_info_fetch(m, 1);
		g_autofree char *rel = file && *file ? relative_path(file, p->srcdir, p->builddir)
						     : NULL;
		g_autofree char *msg = g_match_info_fetch(m, 2);

		add(p, DIAG_WARNING, "ld", rel, 0, 0, msg);
		return;
	}
	g_clear_pointer(&m, g_match_info_free);
	if (g_regex_match(re.modpost, line, 0, &m)) {
		g_autofree char *kind = g_match_info_fetch(m, 1);
		g_autofree char *msg = g_match_info_fetch(m, 2);

		add(p, strcmp(kind, "ERROR") == 0 ? DIAG_ERROR : DIAG_WARNING, "modpost", NULL, 0,
		    0, msg);
		return;
	}
	g_clear_pointer(&m, g_match_info_free);
	if (!p->first_make_error && g_regex_match(re.make_err, line, 0, &m))
		p->first_make_error = g_strdup(line);
}

GPtrArray *diag_parse_build(const char *log, const char *srcdir, const char *builddir)
{
	struct parse p = {
		.srcdir = srcdir,
		.builddir = builddir,
		.out = g_ptr_array_new_with_free_func((GDestroyNotify)diag_free),
		.seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL),
		.function = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free),
		.step = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free),
	};
	g_autofree char *clean = NULL;
	g_auto(GStrv) lines = NULL;

	compile_regexes();
	clean = g_regex_replace_literal(re.ansi, log, -1, 0, "", 0, NULL);
	lines = g_strsplit(clean, "\n", -1);
	for (char **l = lines; *l; l++) {
		g_strchomp(*l);
		if (**l)
			parse_line(&p, *l);
	}
	if (p.first_make_error && !diag_has_error(p.out))
		add(&p, DIAG_ERROR, "make", NULL, 0, 0, p.first_make_error);
	g_free(p.first_make_error);
	g_hash_table_unref(p.seen);
	g_hash_table_unref(p.function);
	g_hash_table_unref(p.step);
	return p.out;
}

bool diag_has_error(GPtrArray *diags)
{
	for (guint i = 0; diags && i < diags->len; i++) {
		if (((struct diag *)diags->pdata[i])->kind == DIAG_ERROR)
			return true;
	}
	return false;
}

GPtrArray *diag_new_in(GPtrArray *child, GPtrArray *parent)
{
	g_autoptr(GHashTable) count = g_hash_table_new(g_str_hash, g_str_equal);
	GPtrArray *out = g_ptr_array_new();

	for (guint i = 0; parent && i < parent->len; i++) {
		const struct diag *d = parent->pdata[i];
		guint n = GPOINTER_TO_UINT(g_hash_table_lookup(count, d->fingerprint));

		g_hash_table_insert(count, d->fingerprint, GUINT_TO_POINTER(n + 1));
	}
	for (guint i = 0; i < child->len; i++) {
		struct diag *d = child->pdata[i];
		guint n = GPOINTER_TO_UINT(g_hash_table_lookup(count, d->fingerprint));

		if (n > 0)
			g_hash_table_insert(count, d->fingerprint, GUINT_TO_POINTER(n - 1));
		else
			g_ptr_array_add(out, d);
	}
	return out;
}
