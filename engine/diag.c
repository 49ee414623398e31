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

/*
 * The diagnostic formats, a table: named groups file, line, col, kind and
 * msg (each optional but msg). A kind starting with "error" or "fatal"
 * (any case) is an error; without a kind group, @kind applies. A NULL
 * checker means the compiler, or sparse right after a kbuild CHECK step.
 *
 * LD is how binutils and lld name themselves: as invoked, so with the
 * cross prefix kbuild gives them (aarch64-linux-gnu-ld, riscv64-linux-gnu-ld.bfd)
 * or a path, and lld as ld.lld (ld.lld-16 from LLVM=-16). The groups are
 * atomic: logs are hostile, and a line of a megabyte must not cost its
 * square.
 */
#define LD "(?>\\S*/)?(?>[A-Za-z0-9_.+-]*-)?ld(?:\\.bfd|\\.gold|\\.lld)?(?:-[0-9][0-9.]*)?"

static const struct diag_format {
	const char *pattern;
	const char *checker;
	enum diag_kind kind;
} diag_formats[] = {
	/*
	 * objtool, on an object or on vmlinux.o: "OBJ: warning: objtool: MSG"
	 * (6.1: MSG "func+0x12: unreachable instruction", older ones
	 * "func()+0x12: ...", newer ones "error" with --Werror). Indented
	 * messages are the lines of a backtrace, context of the one before.
	 */
	{ "^(?:(?<file>\\S[^:]*): )?(?<kind>warning|error): objtool[^:]*: (?<msg>\\S.*)$",
	  "objtool", DIAG_WARNING },
	/*
	 * gcc and clang: file:line[:col]: warning|error|fatal error: message,
	 * clang's source ranges ({3:3-3:6}:) after the column when asked for;
	 * their notes are context, not diagnostics.
	 */
	{ "^(?<file>\\S[^:]*):(?<line>[0-9]+):(?:(?<col>[0-9]+):)?(?:\\{[0-9:-]+\\}:)* "
	  "(?<kind>warning|error|fatal error): (?<msg>.*)$", NULL, DIAG_WARNING },
	/* coccinelle report mode: file:line:col-col: WARNING|ERROR: message */
	{ "^(?<file>\\S[^:]*):(?<line>[0-9]+):(?<col>[0-9]+)-[0-9]+: "
	  "(?:(?<kind>WARNING|ERROR|warning|error|info|note)[: ] *)?(?<msg>.*)$",
	  "coccinelle", DIAG_WARNING },
	/*
	 * binutils ld: [LD: ]file:(.text+0x1): undefined reference to `x'
	 * ("ld: b.o:(.bss+0x0): multiple definition of `x'; a.o:(.bss+0x0):
	 * first defined here"), or with debug info file:line, or
	 * object:source:line, in place of the section and offset.
	 */
	{ "^(?:" LD ": )?(?<file>[^:\\s]+):(?:[^:\\s]+:)?(?:\\([^)]*\\)|(?<line>[0-9]+)): "
	  "(?<msg>(?:undefined reference to|multiple definition of) .*)$", "ld", DIAG_ERROR },
	/*
	 * LD: [file: ]warning|error: message. lld's errors say "error:"
	 * ("undefined symbol: x", its ">>> referenced by" lines follow); its
	 * "too many errors emitted" says no more than that.
	 */
	{ "^" LD ": (?:(?<file>\\S[^:]*): )?(?<kind>warning|error): "
	  "(?!too many errors emitted)(?<msg>.*)$", "ld", DIAG_WARNING },
	/* WARNING|ERROR: modpost: message */
	{ "^(?<kind>WARNING|ERROR): modpost: (?<msg>.*)$", "modpost", DIAG_WARNING },
};

#undef LD

/*
 * Names the kernel numbers with __COUNTER__ (and __LINE__), which an
 * unrelated BUILD_BUG_ON or initcall earlier in the file shifts: their
 * numbers are not part of a fingerprint. The message shown keeps them.
 */
static const struct diag_counter {
	const char *pattern;
	const char *replacement;
} diag_counters[] = {
	/* BUILD_BUG_ON and friends: '__compiletime_assert_411' */
	{ "\\b(__compiletime_assert_)[0-9]+\\b", "\\1N" },
	/*
	 * __UNIQUE_ID(prefix): __UNIQUE_ID___x412, __UNIQUE_ID_ddebug1234.
	 * Greedy, not lazy: linear in a hostile name's length.
	 */
	{ "\\b(__UNIQUE_ID_(?:[A-Za-z0-9_]*[A-Za-z_])?)[0-9]+\\b", "\\1N" },
	/*
	 * initcall ids: __initcall__kmod_foo__COUNTER_LINE_fn6, and their LTO
	 * stubs. Lazy but linear: each "__" tried only reads the digits after it.
	 */
	{ "\\b(__init(?:call|stub)__kmod_[A-Za-z0-9_]*?__)[0-9]+_[0-9]+_", "\\1N_N_" },
};

/* The line formats, compiled once. */
static struct {
	GRegex *ansi;      /* colour escapes */
	GRegex *formats[G_N_ELEMENTS(diag_formats)];
	GRegex *counters[G_N_ELEMENTS(diag_counters)];
	GRegex *function;  /* file: In function 'f': */
	GRegex *inline_fn; /* In function 'f',  (an inline chain follows) */
	GRegex *inlined;   /*     inlined from 'g' at file:line:col[,:] */
	GRegex *included;  /* In file included from file:line[,:], or <command-line>: */
	GRegex *from;      /*                  from file:line[,:] */
	GRegex *toplevel;  /* file: At top level: */
	GRegex *note;      /* file:line[:col]: note: */
	GRegex *end;       /* cc1: some warnings being treated as errors, 2 warnings generated. */
	GRegex *make;      /* make[N]: anything */
	GRegex *make_err;  /* make[N]: *** [target] Error N */
	GRegex *step;      /*   CC      file.o  /  CC [M]  file.o  /  CHECK   file.c */
	GRegex *numbers;   /* free-standing numbers and hex */
} re;

static GRegex *regex(const char *pattern)
{
	GRegex *r = g_regex_new(pattern, G_REGEX_OPTIMIZE, 0, NULL);

	g_assert(r);
	return r;
}

static void compile_regexes(void)
{
	static gsize once;

	if (!g_once_init_enter(&once))
		return;
	re.ansi = regex("\x1b\\[[0-9;]*[mK]");
	for (size_t i = 0; i < G_N_ELEMENTS(diag_formats); i++)
		re.formats[i] = regex(diag_formats[i].pattern);
	for (size_t i = 0; i < G_N_ELEMENTS(diag_counters); i++)
		re.counters[i] = regex(diag_counters[i].pattern);
	re.function = regex("^(\\S[^:]*): In (?:member )?function '(.+)':$");
	re.inline_fn = regex("^In (?:member )?function '(.+)',$");
	re.inlined = regex("^\\s+inlined from '([^']+)' at (\\S[^:]*):[0-9]+(?::[0-9]+)?([,:])$");
	/* "<command-line>", of -include, has no line. */
	re.included = regex("^In file included from (\\S[^:]*)(?::[0-9]+(?::[0-9]+)?)?([,:])$");
	re.from = regex("^\\s+from (\\S[^:]*)(?::[0-9]+(?::[0-9]+)?)?([,:])$");
	re.toplevel = regex("^(\\S[^:]*): At top level:$");
	re.end = regex("^(?:\\S*/)?(?:cc1|cc1plus|lto1): (?:all|some) warnings being treated as errors$|"
		       "^[0-9]+ (?:warnings?|errors?)(?: and [0-9]+ errors?)? generated\\.$");
	re.note = regex("^(\\S[^:]*):[0-9]+:(?:[0-9]+:)? note: (.*)$");
	re.make = regex("^make(?:\\[[0-9]+\\])?: ");
	re.make_err = regex("^make(?:\\[[0-9]+\\])?: \\*\\*\\* (?:\\[(.*)\\] )?(.*)$");
	re.step = regex("^  ([A-Z0-9_]+)(?: \\[M\\])? +(\\S+)$");
	re.numbers = regex("0x[0-9a-fA-F]+|(?<![A-Za-z0-9_.])[0-9]+(?![A-Za-z_])");
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

/*
 * @text with the numbers __COUNTER__ gave names replaced (diag_counters).
 * Where PCRE gives up (its limits, on a hostile line), the text stays.
 */
static char *without_counters(const char *text)
{
	char *out = g_strdup(text);

	for (size_t i = 0; i < G_N_ELEMENTS(diag_counters); i++) {
		char *next = g_regex_replace(re.counters[i], out, -1, 0,
					     diag_counters[i].replacement, 0, NULL);

		if (next) {
			g_free(out);
			out = next;
		}
	}
	return out;
}

char *diag_fingerprint(enum diag_kind kind, const char *checker, const char *file,
		       const char *function, const char *message)
{
	g_autofree char *uncounted = NULL, *shape = NULL, *fn = NULL;
	g_autoptr(GChecksum) sum = g_checksum_new(G_CHECKSUM_SHA256);

	compile_regexes();
	uncounted = without_counters(message);
	shape = g_regex_replace_literal(re.numbers, uncounted, -1, 0, "N", 0, NULL);
	if (!shape)
		shape = g_strdup(uncounted);
	fn = function ? without_counters(function) : NULL;

	g_checksum_update(sum, (const guchar *)diag_kind_name(kind), -1);
	g_checksum_update(sum, (const guchar *)"\n", 1);
	g_checksum_update(sum, (const guchar *)checker, -1);
	g_checksum_update(sum, (const guchar *)"\n", 1);
	g_checksum_update(sum, (const guchar *)(file ? file : ""), -1);
	g_checksum_update(sum, (const guchar *)"\n", 1);
	g_checksum_update(sum, (const guchar *)(fn ? fn : ""), -1);
	g_checksum_update(sum, (const guchar *)"\n", 1);
	g_checksum_update(sum, (const guchar *)g_strstrip(shape), -1);
	return g_strndup(g_checksum_get_string(sum), 16);
}

/*
 * gcc's context of a diagnostic: the function it is in. gcc prints
 * "FILE: In function 'f':" before a diagnostic whose function differs from
 * the previous diagnostic's ("In function 'f'," and "    inlined from 'g'
 * at FILE:L:C" lines for an inlined instance), "FILE: At top level:" when
 * it is in none, and "In file included from" lines when its file differs
 * from the previous one's and is not the file compiled. So the function
 * holds for the diagnostics that follow in the same compilation, in the
 * file gcc named with it, until gcc says otherwise.
 *
 * It holds for nothing else: in a log the output of many compilations
 * follows each other (make -j), and a header's warning that took a
 * function of the compilation before it would have a fingerprint that
 * depends on the order the jobs ended in. A compilation's output ends at
 * a kbuild step line, a line of another tool (sparse, kernel-doc, the
 * linker...), make's lines, or gcc's "warnings being treated as errors";
 * it also ends where an include chain starts from another file than the
 * one compiled when the function was printed, or where a chain (one from
 * -include's "<command-line>" names no file compiled) leads to the file of
 * the diagnostic before it: gcc prints one only when the file changes,
 * so this is a new compilation's first. The diagnostics of another
 * file than the function's keep the function for those after them (a
 * macro's warning in a header, between two in the function's own file),
 * but do not take it: whether the line is still in that function cannot
 * be told from the log when a new compilation starts without a chain.
 */
struct gcc_context {
	char *fn;          /* the function of the diagnostics that follow, or NULL */
	char *fn_file;     /* the file it is in; NULL: the next diagnostic's (an inlined instance) */
	char *fn_main;     /* the file compiled when it was printed, or NULL when not known */
	bool fn_after_chain; /* it was printed after a chain, for the diagnostic after both */
	GString *inlining; /* reading an inlined instance's lines: the function so far */
	bool inlined_from; /* its first "inlined from" line was read */
	bool chain_open;   /* reading an include chain: "from" lines follow */
	bool chain_led;    /* a chain ended: the next diagnostic is in the file it led to */
	char *chain_main;  /* the chain's last file, the one compiled; NULL for <command-line> */
	char *main;        /* the file compiled, from the last chain that named it, or NULL */
	char *included;    /* the file the last chain led to, or NULL */
	char *last_file;   /* the file of the last diagnostic, or note gcc printed a chain for */
};

/* Forgets the function: the diagnostics that follow are in none. */
static void gcc_forget(struct gcc_context *c)
{
	g_clear_pointer(&c->fn, g_free);
	g_clear_pointer(&c->fn_file, g_free);
	g_clear_pointer(&c->fn_main, g_free);
	c->fn_after_chain = false;
	if (c->inlining)
		g_string_free(g_steal_pointer(&c->inlining), TRUE);
	c->inlined_from = false;
}

/* A compilation's output ended, or this is not gcc's: forgets all. */
static void gcc_end(struct gcc_context *c)
{
	gcc_forget(c);
	c->chain_open = c->chain_led = false;
	g_clear_pointer(&c->chain_main, g_free);
	g_clear_pointer(&c->main, g_free);
	g_clear_pointer(&c->included, g_free);
	g_clear_pointer(&c->last_file, g_free);
}

/* An include chain ended: its last file is the one compiled. */
static void gcc_chain_end(struct gcc_context *c)
{
	c->chain_open = false;
	c->chain_led = true;
	if (!c->chain_main)
		return; /* -include's "<command-line>": which file is compiled is not said */
	if (c->fn) {
		const char *compiled = c->fn_main ? c->fn_main : c->fn_file;

		/* Another compilation's output. */
		if (!compiled || strcmp(compiled, c->chain_main) != 0)
			gcc_forget(c);
	}
	g_free(c->main);
	c->main = g_strdup(c->chain_main);
}

/* A diagnostic or note in @file: where a chain led, if one was printed. */
static void gcc_at(struct gcc_context *c, const char *file)
{
	g_free(c->last_file);
	c->last_file = g_strdup(file);
	if (!c->chain_led)
		return;
	c->chain_led = false;
	g_free(c->included);
	c->included = g_strdup(file);
}

/* The function of a compiler diagnostic in @file, or NULL (borrowed). */
static const char *gcc_function(struct gcc_context *c, const char *file)
{
	/* A chain to the file gcc was in already: another compilation's first diagnostic. */
	if (c->chain_led && c->fn && !c->fn_after_chain && c->last_file &&
	    strcmp(c->last_file, file) == 0)
		gcc_forget(c);
	gcc_at(c, file);
	if (!c->fn)
		return NULL;
	if (!c->fn_file)
		c->fn_file = g_strdup(file);
	return strcmp(c->fn_file, file) == 0 ? c->fn : NULL;
}

/* The file compiled when gcc prints a function in @file, or NULL (caller frees). */
static char *gcc_compiled(const struct gcc_context *c, const char *file)
{
	if (c->chain_led)
		return g_strdup(c->chain_main);
	if (c->included && strcmp(file, c->included) == 0)
		return g_strdup(c->main);
	/* No chain led there: the file compiled itself. */
	return g_strdup(file);
}

/* The parser's running state. */
struct parse {
	const char *srcdir, *builddir;
	GPtrArray *out;
	GHashTable *seen;      /* "fingerprint:line" of records kept */
	GHashTable *step;      /* file stem -> last kbuild step ("CC", "CHECK") */
	struct gcc_context gcc;
	char *first_make_error;
};

static char *stem(const char *file)
{
	const char *dot = strrchr(file, '.');
	const char *slash = strrchr(file, '/');

	return dot && (!slash || dot > slash) ? g_strndup(file, dot - file) : g_strdup(file);
}

static void add(struct parse *p, enum diag_kind kind, const char *checker, const char *file,
		unsigned line, unsigned column, const char *function, const char *message)
{
	struct diag *d = g_new0(struct diag, 1);
	char *key;

	d->kind = kind;
	d->checker = g_strdup(checker);
	d->file = g_strdup(file ? file : "");
	d->line = line;
	d->column = column;
	d->function = g_strdup(function);
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

/* @path made relative to the source tree (caller frees). */
static char *rel(struct parse *p, const char *path)
{
	return relative_path(path, p->srcdir, p->builddir);
}

/*
 * gcc's lines around its diagnostics: include chains, "In function" and
 * "At top level". Returns whether @line was one.
 */
static bool parse_gcc_context(struct parse *p, const char *line)
{
	struct gcc_context *c = &p->gcc;
	g_autoptr(GMatchInfo) m = NULL;

	if (c->inlining) {
		if (g_regex_match(re.inlined, line, 0, &m)) {
			g_autofree char *caller = g_match_info_fetch(m, 1);
			g_autofree char *file = g_match_info_fetch(m, 2);
			g_autofree char *end = g_match_info_fetch(m, 3);

			/*
			 * The first caller is the function the call is written in:
			 * the callers past it depend on the optimiser's inlining.
			 */
			if (!c->inlined_from) {
				g_autofree char *caller_file = rel(p, file);

				g_string_append_printf(c->inlining, ", inlined from %s (%s)", caller,
						       caller_file);
				c->inlined_from = true;
			}
			if (strcmp(end, ":") == 0) {
				c->fn = g_string_free(g_steal_pointer(&c->inlining), FALSE);
				c->fn_main = c->chain_led ? g_strdup(c->chain_main) : g_strdup(c->main);
			}
			return true;
		}
		gcc_forget(c); /* not the chain it began */
	}
	g_clear_pointer(&m, g_match_info_free);
	if (c->chain_open) {
		if (g_regex_match(re.from, line, 0, &m)) {
			g_autofree char *file = g_match_info_fetch(m, 1);
			g_autofree char *end = g_match_info_fetch(m, 2);

			g_free(c->chain_main);
			c->chain_main = file[0] == '<' ? NULL : rel(p, file);
			if (strcmp(end, ":") == 0)
				gcc_chain_end(c);
			return true;
		}
		c->chain_open = false;
	}
	g_clear_pointer(&m, g_match_info_free);
	if (g_regex_match(re.included, line, 0, &m)) {
		g_autofree char *file = g_match_info_fetch(m, 1);
		g_autofree char *end = g_match_info_fetch(m, 2);

		g_free(c->chain_main);
		c->chain_main = file[0] == '<' ? NULL : rel(p, file);
		c->chain_open = true;
		if (strcmp(end, ":") == 0)
			gcc_chain_end(c);
		return true;
	}
	g_clear_pointer(&m, g_match_info_free);
	if (g_regex_match(re.function, line, 0, &m)) {
		g_autofree char *file = g_match_info_fetch(m, 1);
		char *fn_file = rel(p, file);
		char *fn_main = gcc_compiled(c, fn_file);

		gcc_forget(c);
		c->fn = g_match_info_fetch(m, 2);
		c->fn_file = fn_file;
		c->fn_main = fn_main;
		c->fn_after_chain = c->chain_led;
		return true;
	}
	g_clear_pointer(&m, g_match_info_free);
	if (g_regex_match(re.inline_fn, line, 0, &m)) {
		g_autofree char *fn = g_match_info_fetch(m, 1);

		gcc_forget(c);
		c->inlining = g_string_new(fn);
		c->fn_after_chain = c->chain_led;
		return true;
	}
	g_clear_pointer(&m, g_match_info_free);
	if (g_regex_match(re.toplevel, line, 0, NULL)) {
		gcc_forget(c);
		return true;
	}
	if (g_regex_match(re.note, line, 0, &m)) {
		g_autofree char *file = g_match_info_fetch(m, 1);
		g_autofree char *relative = rel(p, file);
		g_autofree char *what = g_match_info_fetch(m, 2);

		/* A macro's notes are part of its diagnostic: gcc prints no chain for them. */
		if (!g_str_has_prefix(what, "in expansion of macro") &&
		    !g_str_has_prefix(what, "in definition of macro"))
			gcc_at(c, relative);
		return true;
	}
	return false;
}

static void parse_line(struct parse *p, const char *raw)
{
	g_autofree char *line = ascii_quotes(raw);
	g_autoptr(GMatchInfo) m = NULL;

	if (g_regex_match(re.step, line, 0, &m)) {
		g_autofree char *file = g_match_info_fetch(m, 2);
		g_autofree char *relative = rel(p, file);

		gcc_end(&p->gcc);
		g_hash_table_replace(p->step, stem(relative), g_match_info_fetch(m, 1));
		return;
	}
	if (parse_gcc_context(p, line))
		return;
	for (size_t i = 0; i < G_N_ELEMENTS(diag_formats); i++) {
		const struct diag_format *f = &diag_formats[i];
		g_autofree char *file = NULL, *relative = NULL, *ln = NULL, *col = NULL;
		g_autofree char *kind = NULL, *msg = NULL;
		const char *checker = f->checker;
		const char *function = NULL;
		enum diag_kind k = f->kind;

		g_clear_pointer(&m, g_match_info_free);
		if (!g_regex_match(re.formats[i], line, 0, &m))
			continue;
		file = g_match_info_fetch_named(m, "file");
		ln = g_match_info_fetch_named(m, "line");
		col = g_match_info_fetch_named(m, "col");
		kind = g_match_info_fetch_named(m, "kind");
		msg = g_match_info_fetch_named(m, "msg");
		relative = file && *file ? rel(p, file) : NULL;
		if (kind && *kind)
			k = g_ascii_strncasecmp(kind, "error", 5) == 0 ||
			    g_ascii_strncasecmp(kind, "fatal", 5) == 0 ? DIAG_ERROR : DIAG_WARNING;
		if (!checker)
			checker = compiler_or_sparse(p, relative ? relative : "");
		/*
		 * gcc always prints a column; kernel-doc, which runs after it
		 * on the same file and prints no "In function", never does.
		 */
		if (strcmp(checker, "compiler") == 0 && col && *col)
			function = gcc_function(&p->gcc, relative ? relative : "");
		else
			gcc_end(&p->gcc);
		add(p, k, checker, relative, to_uint(ln), to_uint(col), function, msg);
		return;
	}
	g_clear_pointer(&m, g_match_info_free);
	if (g_regex_match(re.make, line, 0, NULL)) {
		gcc_end(&p->gcc);
		if (!p->first_make_error && g_regex_match(re.make_err, line, 0, NULL))
			p->first_make_error = g_strdup(line);
	} else if (g_regex_match(re.end, line, 0, NULL)) {
		gcc_end(&p->gcc);
	}
}

GPtrArray *diag_parse_build_len(const char *log, gsize len, const char *srcdir,
				const char *builddir)
{
	struct parse p = {
		.srcdir = srcdir,
		.builddir = builddir,
		.out = g_ptr_array_new_with_free_func((GDestroyNotify)diag_free),
		.seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL),
		.step = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free),
	};
	/*
	 * A NUL is a byte like any other non-printable one: '?'. Read as the
	 * end, it would hide the lines after it (a linker's, modpost's) in a
	 * parent's log, and they would come out new in the child's.
	 */
	g_autofree char *bytes = NULL;
	g_autofree char *valid = NULL;
	g_autofree char *clean = NULL;
	char *line, *end;

	if (len && memchr(log, '\0', len)) {
		bytes = g_malloc(len);
		for (gsize i = 0; i < len; i++)
			bytes[i] = log[i] ? log[i] : '?';
		log = bytes;
	}
	/* GRegex reads UTF-8 only: a stray byte (a garbled log) is undefined behaviour to PCRE. */
	valid = g_utf8_make_valid(len ? log : "", (gssize)len);
	g_clear_pointer(&bytes, g_free);

	compile_regexes();
	clean = g_regex_replace_literal(re.ansi, valid, -1, 0, "", 0, NULL);
	/* Line by line in place: linear in the log's size, whatever its shape. */
	end = clean + strlen(clean);
	for (line = clean; line && *line;) {
		char *nl = memchr(line, '\n', (size_t)(end - line));

		if (nl)
			*nl = '\0';
		g_strchomp(line);
		if (*line)
			parse_line(&p, line);
		line = nl ? nl + 1 : NULL;
	}
	if (p.first_make_error && !diag_has_error(p.out))
		add(&p, DIAG_ERROR, "make", NULL, 0, 0, NULL, p.first_make_error);
	g_free(p.first_make_error);
	gcc_end(&p.gcc);
	g_hash_table_unref(p.seen);
	g_hash_table_unref(p.step);
	return p.out;
}

GPtrArray *diag_parse_build(const char *log, const char *srcdir, const char *builddir)
{
	return diag_parse_build_len(log ? log : "", log ? strlen(log) : 0, srcdir, builddir);
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

/* Console logs. */

static const char *const console_names[] = {
	[CONSOLE_BOOT_OK] = "boot-ok",
	[CONSOLE_PANIC] = "panic",
	[CONSOLE_OOPS] = "oops",
	[CONSOLE_BUG] = "BUG",
	[CONSOLE_KASAN] = "KASAN",
	[CONSOLE_UBSAN] = "UBSAN",
	[CONSOLE_WARNING] = "WARNING",
	[CONSOLE_HUNG_TASK] = "hung-task",
	[CONSOLE_TIMEOUT] = "timeout",
	[CONSOLE_NO_OUTPUT] = "no-output",
	[CONSOLE_PAYLOAD_FAIL] = "payload-fail",
	[CONSOLE_TEST_FAIL] = "test-fail",
	[CONSOLE_INFRA] = "infra-error",
};

const char *diag_console_kind_name(enum console_kind kind)
{
	return console_names[kind];
}

bool diag_console_kind_parse(const char *name, enum console_kind *out)
{
	for (guint i = 0; i < G_N_ELEMENTS(console_names); i++) {
		if (console_names[i] && strcmp(console_names[i], name) == 0) {
			*out = (enum console_kind)i;
			return true;
		}
	}
	return false;
}

void console_finding_free(struct console_finding *f)
{
	if (!f)
		return;
	g_free(f->title);
	g_free(f->fingerprint);
	g_free(f->excerpt);
	g_free(f);
}

void console_result_clear(struct console_result *r)
{
	g_free(r->title);
	g_free(r->fingerprint);
	g_free(r->last_line);
	if (r->findings)
		g_ptr_array_unref(r->findings);
	if (r->tests)
		g_ptr_array_unref(r->tests);
	memset(r, 0, sizeof(*r));
}

/* How a report's first line looks, and how its title is made. */
static const struct console_rule {
	enum console_kind kind;
	const char *pattern; /* on the line, timestamps removed */
	const char *title;   /* \\1.. from the pattern */
} console_rules[] = {
	{ CONSOLE_KASAN, "^BUG: KASAN: ([a-z0-9-]+) in ([A-Za-z0-9_.]+)", "KASAN: \\1 in \\2" },
	{ CONSOLE_UBSAN, "^UBSAN: ([a-z0-9-]+) in ([^:]+)", "UBSAN: \\1 in \\2" },
	{ CONSOLE_BUG, "^kernel BUG at ([^:]+)", "kernel BUG at \\1" },
	/* arm64's and riscv's words for it. */
	{ CONSOLE_BUG, "^Unable to handle kernel (NULL pointer dereference|paging request)",
	  "Unable to handle kernel \\1" },
	{ CONSOLE_BUG, "^BUG: (kernel NULL pointer dereference|unable to handle page fault|"
		       "unable to handle kernel paging request)", "BUG: \\1" },
	{ CONSOLE_BUG, "^BUG: ([^,]+?)( in ([A-Za-z0-9_.]+))?(, .*)?$", "BUG: \\1\\2" },
	/* lockdep's (+debug), which names no place on its WARNING line. */
	{ CONSOLE_WARNING, "^WARNING: (possible circular locking dependency|possible recursive "
			   "locking|inconsistent lock state|suspicious RCU usage|bad unlock balance|"
			   "held lock freed|lock held when returning to user space)",
	  "WARNING: \\1" },
	{ CONSOLE_WARNING, "^WARNING: CPU: [0-9]+ PID: [0-9]+ at ([^:]+):[0-9]+ (0x[0-9a-f]+)",
	  "WARNING in \\1" }, /* no kallsyms: the file names it */
	{ CONSOLE_WARNING, "^WARNING: CPU: [0-9]+ PID: [0-9]+ at ([^:]+):[0-9]+ ([A-Za-z0-9_.]+)",
	  "WARNING in \\2" },
	{ CONSOLE_WARNING, "^WARNING: (.+?) at ([^:]+):[0-9]+ ([A-Za-z0-9_.]+)", "WARNING in \\3" },
	{ CONSOLE_HUNG_TASK, "^INFO: task (.+):[0-9]+ blocked for more than", "INFO: task hung in \\1" },
	{ CONSOLE_OOPS, "^(Internal error: )?Oops: ", "Oops" },
	{ CONSOLE_PANIC, "^Kernel panic - not syncing: (.*)$", "Kernel panic - not syncing: \\1" },
};

static struct {
	GRegex *timestamp;
	GRegex *rules[G_N_ELEMENTS(console_rules)];
	GRegex *rip;
	GRegex *frame;
	GRegex *noise;
} cre;

static void compile_console(void)
{
	static gsize once;

	if (!g_once_init_enter(&once))
		return;
	cre.timestamp = g_regex_new("^(\\[ *[0-9]+\\.[0-9]+\\]|<[0-9]>)+ ?", G_REGEX_OPTIMIZE, 0, NULL);
	for (size_t i = 0; i < G_N_ELEMENTS(console_rules); i++)
		cre.rules[i] = g_regex_new(console_rules[i].pattern, G_REGEX_OPTIMIZE, 0, NULL);
	/* Where it stopped: x86's RIP, arm64's pc, riscv's epc. */
	cre.rip = g_regex_new("^(?:RIP: [0-9a-f]+:|\\s*e?pc : )([A-Za-z0-9_.]+)\\+0x",
			      G_REGEX_OPTIMIZE, 0, NULL);
	/* A frame of a call trace, not a '?' guess: " foo_bar+0x12/0x40". */
	cre.frame = g_regex_new("^\\s+([A-Za-z_][A-Za-z0-9_.]*)\\+0x[0-9a-f]+/0x[0-9a-f]+",
				G_REGEX_OPTIMIZE, 0, NULL);
	/* Addresses, offsets, PIDs and other numbers that change between runs. */
	cre.noise = g_regex_new("0x[0-9a-fA-F]+|\\b[0-9a-f]{8,16}\\b|(?<![A-Za-z_])[0-9]+(?![A-Za-z_])",
				G_REGEX_OPTIMIZE, 0, NULL);
	g_once_init_leave(&once, 1);
}

static char *console_fingerprint(const char *title)
{
	g_autofree char *shape = g_regex_replace_literal(cre.noise, title, -1, 0, "N", 0, NULL);
	g_autofree char *sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256, shape, -1);

	return g_strndup(sum, 16);
}

/* The report's lines: from @start while they belong to it, at most 40. */
static char *excerpt(char **lines, guint start)
{
	GString *s = g_string_new(NULL);

	for (guint i = start; lines[i] && i < start + 40; i++) {
		if (i > start && (g_str_has_prefix(lines[i], "ZERODAY-") ||
				  g_str_has_prefix(lines[i], "---[ end trace")))
			break;
		g_string_append_printf(s, "%s\n", lines[i]);
	}
	return g_string_free(s, FALSE);
}

static void add_finding(struct console_result *r, enum console_kind kind, const char *title,
			char **lines, guint at)
{
	struct console_finding *f = g_new0(struct console_finding, 1);

	f->kind = kind;
	f->title = g_strstrip(g_strdup(title));
	f->fingerprint = console_fingerprint(f->title);
	f->excerpt = excerpt(lines, at);
	g_ptr_array_add(r->findings, f);
}

/*
 * The function a report from line @at names, as syzbot titles them: the
 * one its RIP (pc, epc) line says, a few lines on, else the first frame
 * of its call trace; NULL when neither is there.
 */
static char *function_after(char **lines, guint at)
{
	bool trace = false;

	for (guint i = at; lines[i] && i < at + 40; i++) {
		g_autoptr(GMatchInfo) m = NULL;

		if (i > at && (g_str_has_prefix(lines[i], "ZERODAY-") ||
			       g_str_has_prefix(lines[i], "---[ end trace")))
			break;
		if (g_regex_match(cre.rip, lines[i], 0, &m))
			return g_match_info_fetch(m, 1);
		g_clear_pointer(&m, g_match_info_free);
		/* x86's "Call Trace:", arm64's "Call trace:" */
		if (strstr(lines[i], "Call Trace:") || strstr(lines[i], "Call trace:"))
			trace = true;
		else if (trace && g_regex_match(cre.frame, lines[i], 0, &m))
			return g_match_info_fetch(m, 1);
	}
	return NULL;
}

/* @title, with " in FUNCTION" when the report names one (function_after()). */
static char *title_in(const char *title, char **lines, guint at)
{
	g_autofree char *fn = function_after(lines, at);

	return fn ? g_strdup_printf("%s in %s", title, fn) : g_strdup(title);
}

/*
 * A run of console lines: those of one payload (between its markers), or
 * the kernel's own (every line outside a payload: KUnit runs at boot).
 */
struct segment {
	char *name;     /* the payload's ("smoke"), NULL for the kernel's */
	GString *text;
	bool failed;    /* the payload's exit status was not 0 */
	unsigned tests; /* the KTAP results it printed */
};

static struct segment *segment_new(const char *marker_rest)
{
	struct segment *s = g_new0(struct segment, 1);

	s->text = g_string_new(NULL);
	if (marker_rest) {
		/* The marker's name ends at a space: "NAME" or "NAME rc=N". */
		s->name = g_strndup(marker_rest, strcspn(marker_rest, " "));
	}
	return s;
}

static void segment_free(gpointer p)
{
	struct segment *s = p;

	g_free(s->name);
	g_string_free(s->text, TRUE);
	g_free(s);
}

static void segment_add(struct segment *s, const char *line)
{
	/* The console is capped (BOOT_CONSOLE_MAX): so is what a segment keeps. */
	if (s->text->len < (64u << 20)) {
		g_string_append(s->text, line);
		g_string_append_c(s->text, '\n');
	}
}

/*
 * Adds the KTAP results of @s to @out's tests, named by where they ran,
 * and a CONSOLE_TEST_FAIL finding for each that failed.
 */
static void segment_tests(struct console_result *out, struct segment *s)
{
	g_autoptr(GPtrArray) all = ktap_parse(s->text->str);
	g_autoptr(GPtrArray) results = ktap_results(all);

	for (guint i = 0; i < results->len; i++) {
		const struct ktap_test *t = results->pdata[i];
		struct ktap_test *mine = g_new0(struct ktap_test, 1);

		*mine = *t;
		mine->name = g_strdup_printf("%s/%s", s->name ? s->name : "kunit", t->name);
		mine->directive = g_strdup(t->directive);
		mine->diagnostic = g_strdup(t->diagnostic);
		g_ptr_array_add(out->tests, mine);
		s->tests++;
		if (mine->result == KTAP_PASS) {
			out->passed++;
		} else if (mine->result == KTAP_SKIP) {
			out->skipped++;
		} else {
			struct console_finding *f = g_new0(struct console_finding, 1);

			out->failed++;
			f->kind = CONSOLE_TEST_FAIL;
			f->title = g_strdup_printf("%s: fail", mine->name);
			f->fingerprint = console_fingerprint(f->title);
			f->excerpt = g_strdup_printf("%snot ok %s%s%s\n",
						     mine->diagnostic ? mine->diagnostic : "",
						     mine->name, mine->directive ? " # " : "",
						     mine->directive ? mine->directive : "");
			g_ptr_array_add(out->findings, f);
		}
	}
}

/* The first payload that failed without a KTAP result to judge it by, or NULL. */
static struct segment *failed_payload(GPtrArray *segments)
{
	for (guint i = 1; i < segments->len; i++) {
		struct segment *s = segments->pdata[i];

		if (s->failed && !s->tests)
			return s;
	}
	return NULL;
}

void diag_console_classify(struct console_result *out, const char *log, bool timed_out,
			   bool infra)
{
	/* GRegex reads UTF-8 only: a serial console garbles bytes, and PCRE must not see them. */
	g_autofree char *valid = g_utf8_make_valid(log ? log : "", -1);
	g_autofree char *ascii = NULL;
	g_auto(GStrv) lines = NULL;
	bool started = false;
	/* The lines outside the payloads (the kernel's: KUnit at boot), then each payload's. */
	g_autoptr(GPtrArray) segments = g_ptr_array_new_with_free_func(segment_free);
	struct segment *payload = NULL;
	guint n = 0;

	compile_console();
	memset(out, 0, sizeof(*out));
	out->findings = g_ptr_array_new_with_free_func((GDestroyNotify)console_finding_free);
	ascii = ascii_quotes(valid);
	lines = g_strsplit(ascii, "\n", -1);
	g_ptr_array_add(segments, segment_new(NULL));
	for (char **l = lines; *l; l++) {
		g_autofree char *clean = NULL;

		g_strchomp(*l);
		g_strdelimit(*l, "\r", ' ');
		clean = g_regex_replace_literal(cre.timestamp, *l, -1, 0, "", 0, NULL);
		g_free(*l);
		*l = g_steal_pointer(&clean);
		if (**l)
			n++;
	}
	for (guint i = 0; lines[i]; i++) {
		const char *line = lines[i];
		bool matched = false;

		if (*line) {
			g_free(out->last_line);
			out->last_line = g_strdup(line);
		}
		if (g_str_has_prefix(line, "ZERODAY-BOOT-START")) {
			started = true;
		} else if (g_str_has_prefix(line, "ZERODAY-BOOT-END")) {
			out->ended = true;
		} else if (g_str_has_prefix(line, "ZERODAY-PAYLOAD-START ")) {
			payload = segment_new(line + strlen("ZERODAY-PAYLOAD-START "));
			g_ptr_array_add(segments, payload);
			continue;
		} else if (g_str_has_prefix(line, "ZERODAY-PAYLOAD-END ")) {
			if (payload)
				payload->failed = !strstr(line, " rc=0");
			payload = NULL;
			continue;
		}
		segment_add(payload ? payload : segments->pdata[0], line);
		for (size_t r = 0; r < G_N_ELEMENTS(console_rules) && !matched; r++) {
			g_autoptr(GMatchInfo) m = NULL;
			g_autofree char *title = NULL;

			if (!g_regex_match(cre.rules[r], line, 0, &m))
				continue;
			matched = true;
			/* A panic that only follows an earlier report adds nothing. */
			if (console_rules[r].kind == CONSOLE_PANIC && out->findings->len &&
			    (strstr(line, "Fatal exception") || strstr(line, "Attempted to kill init")))
				break;
			if (console_rules[r].kind == CONSOLE_OOPS) {
				/* An oops right after a BUG line is the same report. */
				if (out->findings->len && i > 0 &&
				    ((struct console_finding *)g_ptr_array_index(out->findings,
						out->findings->len - 1))->kind == CONSOLE_BUG)
					break;
				title = title_in("Oops", lines, i);
			} else {
				title = g_match_info_expand_references(m, console_rules[r].title, NULL);
			}
			/* A bare class ("BUG: kernel NULL pointer dereference") gets its function. */
			if (console_rules[r].kind == CONSOLE_BUG && !strstr(title, " in ") &&
			    !g_str_has_prefix(title, "kernel BUG at ")) {
				g_autofree char *named = title_in(title, lines, i);

				g_free(title);
				title = g_steal_pointer(&named);
			}
			add_finding(out, console_rules[r].kind, title, lines, i);
		}
	}

	out->tests = g_ptr_array_new_with_free_func((GDestroyNotify)ktap_test_free);
	for (guint i = 0; i < segments->len; i++)
		segment_tests(out, segments->pdata[i]);

	if (infra) {
		out->kind = CONSOLE_INFRA;
		out->title = g_strdup("infrastructure error");
	} else if (out->findings->len) {
		/* A kernel report before any test's, as segment_tests() appended those. */
		const struct console_finding *f = out->findings->pdata[0];

		out->kind = f->kind;
		out->title = g_strdup(f->title);
	} else if ((payload = failed_payload(segments))) {
		out->kind = CONSOLE_PAYLOAD_FAIL;
		out->title = g_strdup_printf("payload-fail (%s)", payload->name);
	} else if (out->ended) {
		out->kind = CONSOLE_BOOT_OK;
		out->title = g_strdup("boot-ok");
	} else if (n == 0) {
		out->kind = CONSOLE_NO_OUTPUT;
		out->title = g_strdup("no output");
	} else if (timed_out || !out->ended) {
		out->kind = CONSOLE_TIMEOUT;
		out->title = g_strdup_printf("timeout%s", started ? " after the init started"
								  : " before the init started");
	}
	out->fingerprint = console_fingerprint(out->title);
}

void console_tally_free(struct console_tally *t)
{
	if (!t)
		return;
	g_free(t->title);
	g_free(t->fingerprint);
	g_free(t->excerpt);
	g_free(t);
}

const char *diag_console_excerpt(const struct console_result *r)
{
	for (guint i = 0; r->findings && i < r->findings->len; i++) {
		const struct console_finding *f = r->findings->pdata[i];

		if (r->fingerprint && f->fingerprint && strcmp(f->fingerprint, r->fingerprint) == 0)
			return f->excerpt;
	}
	return r->last_line;
}

bool diag_console_shows(const struct console_result *r, const char *fingerprint)
{
	if (!fingerprint)
		return false;
	if (r->kind != CONSOLE_BOOT_OK && r->fingerprint && strcmp(r->fingerprint, fingerprint) == 0)
		return true;
	for (guint i = 0; r->findings && i < r->findings->len; i++) {
		const struct console_finding *f = r->findings->pdata[i];

		if (f->kind == CONSOLE_TEST_FAIL && strcmp(f->fingerprint, fingerprint) == 0)
			return true;
	}
	return false;
}

char *diag_console_test_of(const char *title)
{
	return title && g_str_has_suffix(title, ": fail")
		? g_strndup(title, strlen(title) - strlen(": fail")) : NULL;
}

/* @out's entry for fingerprint @fingerprint, made from @kind, @title and @excerpt when new. */
static struct console_tally *tally_entry(GPtrArray *out, enum console_kind kind, const char *title,
					 const char *fingerprint, const char *excerpt)
{
	struct console_tally *t;

	for (guint j = 0; j < out->len; j++) {
		t = out->pdata[j];
		if (strcmp(t->fingerprint, fingerprint) == 0)
			return t;
	}
	t = g_new0(struct console_tally, 1);
	t->kind = kind;
	t->title = g_strdup(title);
	t->fingerprint = g_strdup(fingerprint);
	t->excerpt = g_strdup(excerpt);
	g_ptr_array_add(out, t);
	return t;
}

GPtrArray *diag_console_tally(struct console_result *const *results, unsigned n)
{
	GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify)console_tally_free);
	unsigned runs = 0;

	for (unsigned i = 0; i < n; i++) {
		const struct console_result *r = results[i];
		struct console_tally *t = NULL;

		if (r->kind == CONSOLE_INFRA)
			continue;
		runs++;
		if (r->kind != CONSOLE_BOOT_OK) {
			t = tally_entry(out, r->kind, r->title, r->fingerprint,
					diag_console_excerpt(r));
			t->failures++;
		}
		/* Each test it failed besides its verdict, once per run. */
		for (guint k = 0; r->findings && k < r->findings->len; k++) {
			const struct console_finding *f = r->findings->pdata[k];
			bool again = strcmp(f->fingerprint, r->fingerprint ? r->fingerprint : "") == 0;

			for (guint e = 0; e < k && !again; e++)
				again = strcmp(((const struct console_finding *)
						r->findings->pdata[e])->fingerprint, f->fingerprint) == 0;
			if (f->kind != CONSOLE_TEST_FAIL || again)
				continue;
			t = tally_entry(out, f->kind, f->title, f->fingerprint, f->excerpt);
			t->failures++;
		}
	}
	for (guint j = 0; j < out->len; j++) {
		struct console_tally *t = out->pdata[j];

		t->runs = runs;
		t->intermittent = t->failures < runs;
	}
	return out;
}
