/*
 * A console trace decoded with the kernel's vmlinux, as
 * scripts/decode_stacktrace.sh does: see decode.h.
 */
#define G_LOG_DOMAIN "engine"

#include "autoconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "engine/decode.h"
#include "engine/run.h"

/* Where the vmlinux is seen inside the sandbox. */
#define SANDBOX_VMLINUX "/zeroday-decode/vmlinux"
/* addr2line prints a few lines an address. */
#define LINES_MAX (1024 * 1024)
/* The longest location kept, in bytes, and the most locations a frame gets. */
#define LOCATION_MAX_BYTES 256
#define LOCATIONS_MAX 8
/* The function whose file tells the source tree's base, as decode_stacktrace.sh finds it. */
#define BASE_SYMBOL "kernel_init"
#define BASE_FILE "/init/main.c:"

/* One distinct SYMBOL+0xOFFSET/0xLENGTH of the excerpt. */
struct frame {
	char *name;
	guint64 offset, length;
	bool found;        /* nm knows the symbol */
	guint64 address;   /* its address plus the offset */
	GPtrArray *where;  /* "FILE:LINE", innermost first */
};

static void frame_free(struct frame *f)
{
	g_free(f->name);
	if (f->where)
		g_ptr_array_unref(f->where);
	g_free(f);
}

/* An address nm gave a symbol, with its size (0: none given). */
struct symbol {
	guint64 address, size;
};

/*
 * The frame the last word of @line names, as decode_stacktrace.sh finds
 * one: "SYMBOL+0xOFF/0xLEN", after an optional "SEGMENT:" (x86's RIP).
 * Fills @name (caller frees), @offset and @length; false when the line
 * names none. A line ending in a module's name ("[mod]") names none:
 * vmlinux does not have its symbols.
 */
static bool frame_of_line(const char *line, char **name, guint64 *offset, guint64 *length)
{
	static GRegex *re;
	g_autoptr(GMatchInfo) m = NULL;
	g_autofree char *off = NULL;
	g_autofree char *len = NULL;
	const char *word;

	if (g_once_init_enter(&re)) {
		GRegex *r = g_regex_new("^(?:[0-9a-f]+:)?([A-Za-z_.$][A-Za-z0-9_.$]*)"
					"\\+0x([0-9a-f]{1,16})/0x([0-9a-f]{1,16})$",
					G_REGEX_OPTIMIZE, 0, NULL);

		g_assert(r);
		g_once_init_leave(&re, r);
	}
	word = strrchr(line, ' ');
	word = word ? word + 1 : line;
	if (!g_regex_match(re, word, 0, &m))
		return false;
	*name = g_match_info_fetch(m, 1);
	off = g_match_info_fetch(m, 2);
	len = g_match_info_fetch(m, 3);
	*offset = g_ascii_strtoull(off, NULL, 16);
	*length = g_ascii_strtoull(len, NULL, 16);
	return true;
}

/* Whether @s is text a report may carry: valid UTF-8, no control characters. */
static bool printable(const char *s)
{
	if (!g_utf8_validate(s, -1, NULL))
		return false;
	for (const char *p = s; *p; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return false;
	}
	return true;
}

/*
 * Checks that @vmlinux is a regular file of at most @max bytes, without
 * following a link at its end and without blocking on a FIFO.
 */
static bool check_vmlinux(const char *vmlinux, guint64 max, GError **error)
{
	struct stat st;
	int fd = open(vmlinux, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0) {
		g_set_error(error, ENGINE_ERROR,
			    errno == ENOENT ? ENGINE_ERROR_NOT_FOUND : ENGINE_ERROR_INVALID, "%s: %s",
			    vmlinux, g_strerror(errno));
		return false;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID, "%s: not a regular file",
			    vmlinux);
		close(fd);
		return false;
	}
	close(fd);
	if ((guint64)st.st_size > max) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_LIMIT,
			    "%s: %" G_GUINT64_FORMAT " bytes, more than %" G_GUINT64_FORMAT, vmlinux,
			    (guint64)st.st_size, max);
		return false;
	}
	return true;
}

/*
 * Runs @argv (nm or addr2line on @vmlinux, seen as @argv's file) with its
 * output going to @log, at most @output_max bytes of it. Returns the
 * output (caller frees).
 */
static char *run_tool(const char *const *argv, const char *vmlinux, const char *log,
		      guint64 output_max, const struct decode_opts *opts, GError **error)
{
	static const char *const env[] = {
		"PATH=/usr/bin:/bin", "LC_ALL=C", "HOME=/tmp", "TMPDIR=/tmp", NULL,
	};
	const struct run_bind binds[] = {
		{ vmlinux, SANDBOX_VMLINUX, false },
		{ NULL, NULL, false },
	};
	const struct run_sandbox sandbox = { .binds = binds, .allow_network = false };
	unsigned timeout_s = opts->timeout_s ? opts->timeout_s : DECODE_TIMEOUT_S;
	struct run_opts ro = {
		.argv = argv, .env = env, .log_path = log, .log_max = output_max,
		.max_file_size = 1024 * 1024, .timeout_s = timeout_s, .max_memory = DECODE_MEMORY,
		.sandbox = opts->sandbox ? &sandbox : NULL,
	};
	struct run_result result = { 0 };
	g_autofree char *text = NULL;
	gsize len = 0;

	if (!run_child(&result, &ro, error))
		return NULL;
	switch (result.outcome) {
	case RUN_TIMEOUT:
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_TIMEOUT, "%s: no answer in %u s",
			    argv[0], timeout_s);
		return NULL;
	case RUN_SETUP_FAILED:
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s: the sandbox failed: %s",
			    argv[0], result.detail);
		return NULL;
	case RUN_SIGNALED:
	case RUN_NO_SPACE:
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s: killed by signal %d",
			    argv[0], result.status);
		return NULL;
	case RUN_EXITED:
		break;
	}
	if (result.output > output_max) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_LIMIT,
			    "%s: more than %" G_GUINT64_FORMAT " bytes of output (%" G_GUINT64_FORMAT
			    ")", argv[0], output_max, result.output);
		return NULL;
	}
	if (!g_file_get_contents(log, &text, &len, NULL))
		text = g_strdup(""); /* nothing printed: the log was never written to */
	if (result.status != 0) {
		/* The last line it printed says why, mostly. */
		g_auto(GStrv) lines = g_strsplit(g_strstrip(text), "\n", -1);
		const char *last = "";

		for (char **l = lines; *l; l++)
			last = *l;
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s: exit status %d%s%.200s",
			    argv[0], result.status, *last && printable(last) ? ": " : "",
			    printable(last) ? last : "");
		return NULL;
	}
	if (memchr(text, '\0', len)) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID, "%s: binary output",
			    argv[0]);
		return NULL;
	}
	return g_steal_pointer(&text);
}

/*
 * Reads nm -S's lines ("ADDRESS [SIZE] TYPE NAME") into @symbols, for
 * the names it already holds as keys: each a GArray of struct symbol, in
 * nm's order. Only text symbols count, as decode_stacktrace.sh's.
 */
static void read_symbols(GHashTable *symbols, char *text)
{
	for (char *line = text, *next; line && *line; line = next) {
		char *f[5] = { NULL };
		int n = 0;
		const char *type, *name;
		struct symbol s = { 0 };
		GArray *at;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		for (char *p = line; *p && n < 5;) {
			while (*p == ' ')
				p++;
			if (!*p)
				break;
			f[n++] = p;
			p = strchr(p, ' ');
			if (!p)
				break;
			*p++ = '\0';
		}
		if (n != 3 && n != 4)
			continue;
		type = f[n - 2];
		name = f[n - 1];
		if (strlen(type) != 1 || !strchr("tTwW", type[0]))
			continue;
		at = g_hash_table_lookup(symbols, name);
		if (!at)
			continue;
		s.address = g_ascii_strtoull(f[0], NULL, 16);
		s.size = n == 4 ? g_ascii_strtoull(f[1], NULL, 16) : 0;
		g_array_append_val(at, s);
	}
}

/*
 * The address of @name: of the one symbol of that name whose size is
 * @length when there are several (static functions share names), else
 * of the first, as decode_stacktrace.sh takes it. False when nm has none.
 */
static bool symbol_address(GHashTable *symbols, const char *name, guint64 length,
			   guint64 *address)
{
	GArray *at = g_hash_table_lookup(symbols, name);

	if (!at || at->len == 0)
		return false;
	*address = g_array_index(at, struct symbol, 0).address;
	for (guint i = 0; i < at->len; i++) {
		const struct symbol *s = &g_array_index(at, struct symbol, i);

		if (s->size == length) {
			*address = s->address;
			break;
		}
	}
	return true;
}

/*
 * Whether @location ends in ":LINE", a line number that is not 0. A
 * kernel without debug information still gets "main.c:?" from the
 * symbol table's file names: a file without its line is no decoding.
 */
static bool has_line(const char *location)
{
	const char *colon = strrchr(location, ':');

	if (!colon || colon == location || !colon[1])
		return false;
	for (const char *p = colon + 1; *p; p++) {
		if (!g_ascii_isdigit(*p))
			return false;
	}
	return g_ascii_strtoull(colon + 1, NULL, 10) > 0;
}

/*
 * Reads addr2line -a -f -i's output: for each address of @addresses in
 * turn, its "0x..." line, then a function line and a "FILE:LINE" line
 * per frame, innermost first. Fills @where[i] with the locations of
 * @addresses[i], without "??" and without "(discriminator N)".
 */
static void read_lines(GPtrArray **where, const guint64 *addresses, guint n, char *text)
{
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	gint current = -1;
	guint next = 0;
	bool function = true; /* the next line of a block is a function's */

	for (char **l = lines; *l; l++) {
		char *line = *l;

		if (function && next < n && g_str_has_prefix(line, "0x") &&
		    g_ascii_strtoull(line + 2, NULL, 16) == addresses[next]) {
			current = (gint)next++;
			continue;
		}
		if (function) {
			function = false;
			continue;
		}
		function = true;
		if (current < 0 || g_str_has_prefix(line, "??") || !*line)
			continue;
		{
			char *disc = strstr(line, " (discriminator ");

			if (disc)
				*disc = '\0';
		}
		if (strlen(line) > LOCATION_MAX_BYTES || !printable(line) || !has_line(line) ||
		    where[current]->len >= LOCATIONS_MAX)
			continue;
		g_ptr_array_add(where[current], g_strdup(line));
	}
}

/*
 * The source tree's base in @where, the locations of kernel_init: the
 * path before its "/init/main.c:" (caller frees), or NULL.
 */
static char *base_path(const GPtrArray *where)
{
	const char *outer, *at;

	if (!where || where->len == 0)
		return NULL;
	outer = where->pdata[where->len - 1];
	at = g_strrstr(outer, BASE_FILE);
	return at && at > outer ? g_strndup(outer, at - outer) : NULL;
}

/* @location without the leading @base and "/" (borrowed from @location). */
static const char *relative(const char *location, const char *base)
{
	size_t n = base ? strlen(base) : 0;

	if (n && strncmp(location, base, n) == 0 && location[n] == '/')
		return location + n + 1;
	return location;
}

char *decode_trace(const char *excerpt, const char *vmlinux, const struct decode_opts *opts,
		   GError **error)
{
	g_auto(GStrv) lines = g_strsplit(excerpt, "\n", -1);
	guint nlines = g_strv_length(lines);
	/* "NAME+0xOFF/0xLEN" -> struct frame */
	g_autoptr(GHashTable) frames = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
							     (GDestroyNotify)frame_free);
	g_autofree struct frame **of_line = g_new0(struct frame *, nlines + 1);
	g_autoptr(GHashTable) symbols = NULL;
	g_autoptr(GPtrArray) argv = NULL;
	g_autoptr(GArray) addresses = NULL;
	g_autoptr(GPtrArray) where = NULL;
	g_autoptr(GError) cleanup = NULL;
	g_autofree char *dir = NULL;
	g_autofree char *log = NULL;
	g_autofree char *text = NULL;
	g_autofree char *base = NULL;
	guint64 max = opts->vmlinux_max ? opts->vmlinux_max : DECODE_VMLINUX_MAX;
	const char *target = opts->sandbox ? SANDBOX_VMLINUX : vmlinux;
	GString *out;
	GHashTableIter iter;
	struct frame *f;
	gint base_index = -1;
	char *result = NULL;

	for (guint i = 0; lines[i]; i++) {
		g_autofree char *name = NULL;
		g_autofree char *key = NULL;
		guint64 offset, length;

		if (!frame_of_line(lines[i], &name, &offset, &length))
			continue;
		key = g_strdup_printf("%s+0x%" G_GINT64_MODIFIER "x/0x%" G_GINT64_MODIFIER "x",
				      name, offset, length);
		f = g_hash_table_lookup(frames, key);
		if (!f) {
			if (g_hash_table_size(frames) >= DECODE_FRAMES_MAX)
				continue;
			f = g_new0(struct frame, 1);
			f->name = g_steal_pointer(&name);
			f->offset = offset;
			f->length = length;
			g_hash_table_insert(frames, g_steal_pointer(&key), f);
		}
		of_line[i] = f;
	}
	if (g_hash_table_size(frames) == 0)
		return g_strdup(excerpt);
	if (!check_vmlinux(vmlinux, max, error) || !(dir = run_private_dir(opts->tmp_parent, "zeroday-decode", error)))
		return NULL;

	/* The symbols' addresses. */
	symbols = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
					(GDestroyNotify)g_array_unref);
	g_hash_table_insert(symbols, g_strdup(BASE_SYMBOL),
			    g_array_new(FALSE, FALSE, sizeof(struct symbol)));
	g_hash_table_iter_init(&iter, frames);
	while (g_hash_table_iter_next(&iter, NULL, (gpointer *)&f)) {
		if (!g_hash_table_contains(symbols, f->name))
			g_hash_table_insert(symbols, g_strdup(f->name),
					    g_array_new(FALSE, FALSE, sizeof(struct symbol)));
	}
	log = g_build_filename(dir, "nm", NULL);
	{
		const char *const nm[] = { "nm", "-S", "--defined-only", target, NULL };

		text = run_tool(nm, vmlinux, log, DECODE_SYMBOLS_MAX, opts, error);
	}
	if (!text)
		goto out;
	read_symbols(symbols, text);
	g_clear_pointer(&text, g_free);

	/* Their lines: one addr2line for every distinct address. */
	addresses = g_array_new(FALSE, FALSE, sizeof(guint64));
	argv = g_ptr_array_new_with_free_func(g_free);
	g_ptr_array_add(argv, g_strdup("addr2line"));
	g_ptr_array_add(argv, g_strdup("-a"));
	g_ptr_array_add(argv, g_strdup("-f"));
	g_ptr_array_add(argv, g_strdup("-i"));
	g_ptr_array_add(argv, g_strdup("-e"));
	g_ptr_array_add(argv, g_strdup(target));
	{
		guint64 address;

		if (symbol_address(symbols, BASE_SYMBOL, 0, &address)) {
			base_index = (gint)addresses->len;
			g_array_append_val(addresses, address);
		}
	}
	g_hash_table_iter_init(&iter, frames);
	while (g_hash_table_iter_next(&iter, NULL, (gpointer *)&f)) {
		guint64 start;

		if (!symbol_address(symbols, f->name, f->length, &start))
			continue;
		f->found = true;
		f->address = start + f->offset;
		g_array_append_val(addresses, f->address);
	}
	if (addresses->len == (base_index < 0 ? 0u : 1u)) {
		/* vmlinux has none of the symbols. */
		result = g_strdup(excerpt);
		goto out;
	}
	for (guint i = 0; i < addresses->len; i++)
		g_ptr_array_add(argv, g_strdup_printf("0x%" G_GINT64_MODIFIER "x",
						      g_array_index(addresses, guint64, i)));
	g_ptr_array_add(argv, NULL);
	g_free(log);
	log = g_build_filename(dir, "addr2line", NULL);
	text = run_tool((const char *const *)argv->pdata, vmlinux, log, LINES_MAX, opts, error);
	if (!text)
		goto out;
	where = g_ptr_array_new_with_free_func((GDestroyNotify)g_ptr_array_unref);
	for (guint i = 0; i < addresses->len; i++)
		g_ptr_array_add(where, g_ptr_array_new_with_free_func(g_free));
	read_lines((GPtrArray **)where->pdata, (const guint64 *)addresses->data, addresses->len,
		   text);
	if (base_index >= 0)
		base = base_path(where->pdata[base_index]);
	/* Frames in the order their addresses were added, after kernel_init's. */
	{
		guint k = base_index < 0 ? 0 : 1;

		g_hash_table_iter_init(&iter, frames);
		while (g_hash_table_iter_next(&iter, NULL, (gpointer *)&f)) {
			if (f->found)
				f->where = g_ptr_array_ref(where->pdata[k++]);
		}
	}

	out = g_string_new(NULL);
	for (guint i = 0; lines[i]; i++) {
		if (i > 0)
			g_string_append_c(out, '\n');
		g_string_append(out, lines[i]);
		f = of_line[i];
		if (!f || !f->where)
			continue;
		for (guint k = 0; k < f->where->len; k++)
			g_string_append_printf(out, " %s", relative(f->where->pdata[k], base));
	}
	result = g_string_free(out, FALSE);
out:
	if (!run_remove_tree(dir, &cleanup))
		g_warning("decode: cannot remove %s: %s", dir, cleanup->message);
	return result;
}
