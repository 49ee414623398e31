/*
 * The template language: rendering byte for byte (fields, blocks, lists,
 * lines of block tags that vanish, prefixes repeated on continuation
 * lines, filling to 72 columns), and every mistake refused at load with
 * its line.
 */
#include "autoconfig.h"

#include <string.h>
#include <sys/stat.h>

#include "bot/bot.h"
#include "bot/mailroom/template.h"
#include "tests/testlib.h"

static const struct template_field diag_fields[] = {
	{ "file", TEMPLATE_TEXT, false, NULL },
	{ "line", TEMPLATE_TEXT, false, NULL },
	{ "message", TEMPLATE_TEXT, false, NULL },
	{ "source", TEMPLATE_TEXT, true, NULL },
	{ NULL },
};

static const struct template_field schema[] = {
	{ "tree", TEMPLATE_TEXT, false, NULL },
	{ "commit", TEMPLATE_TEXT, false, NULL },
	{ "title", TEMPLATE_TEXT, false, NULL },
	{ "base", TEMPLATE_TEXT, true, NULL },
	{ "excerpt", TEMPLATE_TEXT, true, NULL },
	{ "diags", TEMPLATE_LIST, false, diag_fields },
	{ "notes", TEMPLATE_LIST, true, diag_fields },
	{ NULL },
};

static char *render(const char *text, const struct template_values *v)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(template) t = template_parse(text, "test.txt", schema, &error);
	char *out;

	g_assert_no_error(error);
	if (!t)
		return g_strdup("");
	out = template_render(t, v, &error);
	g_assert_no_error(error);
	return out ? out : g_strdup("");
}

static struct template_values *values(void)
{
	struct template_values *v = template_values_new();
	struct template_values *d;

	template_values_set(v, "tree", "net-next");
	template_values_set(v, "commit", "0123456789ab");
	template_values_set(v, "title", "net: fix the thing");
	d = template_values_add(v, "diags");
	template_values_set(d, "file", "net/core/dev.c");
	template_values_set(d, "line", "42");
	template_values_set(d, "message", "error: 'x' undeclared");
	template_values_set(d, "source", "\tint y = x;\n\treturn y;");
	d = template_values_add(v, "diags");
	template_values_set(d, "file", "net/core/sock.c");
	template_values_set(d, "line", "7");
	template_values_set(d, "message", "warning: unused variable 'z'");
	return v;
}

static void test_render(void)
{
	zd_autoptr(template_values) v = values();
	g_autofree char *out = render(
		"{{! the subject line comes first }}\n"
		"[{{tree}}] {{commit}} {{title}}\n"
		"{{#if base}}\n"
		"base: {{base}}\n"
		"{{#else}}\n"
		"no base\n"
		"{{/if}}\n"
		"\n"
		"{{#each diags}}\n"
		">> {{file}}:{{line}}: {{message}} (in {{tree}})\n"
		"   {{#if source}}{{source}}{{#else}}-{{/if}}\n"
		"{{/each}}\n"
		"{{#if notes}}\n"
		"notes!\n"
		"{{/if}}\n"
		"end\n", v);

	g_assert_cmpstr(out, ==,
			"[net-next] 0123456789ab net: fix the thing\n"
			"no base\n"
			"\n"
			">> net/core/dev.c:42: error: 'x' undeclared (in net-next)\n"
			"   \tint y = x;\n"
			"   \treturn y;\n"
			">> net/core/sock.c:7: warning: unused variable 'z' (in net-next)\n"
			"   -\n"
			"end\n");
}

static void test_prefix(void)
{
	zd_autoptr(template_values) v = values();
	g_autofree char *out = NULL;

	template_values_set(v, "excerpt", "Kernel panic - not syncing: x\n\nCPU: 0 PID: 1\n");
	out = render("{{#if excerpt}}\n    {{excerpt}}\n{{/if}}\nend {{tree}}\n", v);
	/* An empty line of the value takes the prefix without its blanks. */
	g_assert_cmpstr(out, ==,
			"    Kernel panic - not syncing: x\n"
			"\n"
			"    CPU: 0 PID: 1\n"
			"\n"
			"end net-next\n");
}

static void test_wrap(void)
{
	zd_autoptr(template_values) v = values();
	g_autofree char *out = NULL;

	template_values_set(v, "title",
			    "The kernel built from this commit panics at boot in about one "
			    "boot of three, which a single boot would often miss; so each "
			    "commit was booted several times.\n\nA second paragraph, short.");
	out = render("  > {{title|wrap}}\n", v);
	g_assert_cmpstr(out, ==,
			"  > The kernel built from this commit panics at boot in about one boot\n"
			"  > of three, which a single boot would often miss; so each commit was\n"
			"  > booted several times.\n"
			"  >\n"
			"  > A second paragraph, short.\n");
	for (const char *p = out; *p;) {
		const char *nl = strchr(p, '\n');

		g_assert_cmpuint(g_utf8_strlen(p, nl - p), <=, TEMPLATE_WIDTH);
		p = nl + 1;
	}
}

static void test_fill(void)
{
	g_autoptr(GString) s = g_string_new("Subject: ");
	g_autofree char *word = g_strnfill(100, 'x');
	g_autofree char *text = g_strdup_printf("a b %s c", word);
	g_autofree char *want = g_strdup_printf("Subject: a b\n%s\nc", word);

	template_fill(s, text, 9, "", 20);
	g_assert_cmpstr(s->str, ==, want);
	g_string_assign(s, "");
	template_fill(s, "é é é é é é", 0, "", 6);
	/* Columns are characters, not bytes. */
	g_assert_cmpstr(s->str, ==, "é é é\né é é");
	/* Examples and quotes keep their lines; the prose around them is filled. */
	g_string_assign(s, "");
	template_fill(s, "run it\nas:\n    #zeroday rerun 12 now\n> quoted line here\nthen it goes", 0,
		      "", 12);
	g_assert_cmpstr(s->str, ==, "run it as:\n    #zeroday rerun 12 now\n> quoted line here\n"
				    "then it goes");
}

static void test_missing_value(void)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(template) t = template_parse("{{commit}}\n", "t.txt", schema, &error);
	zd_autoptr(template_values) v = template_values_new();
	g_autofree char *out = NULL;

	g_assert_no_error(error);
	out = template_render(t, v, &error);
	g_assert_null(out);
	g_assert_error(error, BOT_ERROR, BOT_ERROR_FAILED);
	g_assert_nonnull(error ? strstr(error->message, "\"commit\" has no value") : NULL);
}

static const struct {
	const char *name;
	const char *text;
	const char *error;
} refused[] = {
	{ "unknown field", "ok\n{{comit}}\n", "test.txt:2: unknown field \"comit\" (known here: tree," },
	{ "unknown in a list", "{{#each diags}}{{lines}}{{/each}}", "test.txt:1: unknown field \"lines\"" },
	{ "item field outside its list", "{{message}}", "unknown field \"message\"" },
	{ "list as text", "{{diags}}", "test.txt:1: \"diags\" is a list: use {{#each diags}}" },
	{ "text as a list", "{{#each tree}}{{/each}}", "\"tree\" is not a list" },
	{ "optional outside if", "{{base}}", "\"base\" may be missing: use it inside {{#if base}}" },
	{ "optional in the else", "{{#if base}}{{#else}}{{base}}{{/if}}", "\"base\" may be missing" },
	{ "optional item field", "{{#each diags}}{{source}}{{/each}}", "\"source\" may be missing" },
	{ "unknown filter", "{{title|upper}}", "unknown filter \"upper\" (known: wrap)" },
	{ "unclosed if", "{{#if base}}\nx\n", "{{#if base}} (line 1) is not closed by {{/if}}" },
	{ "unclosed each", "{{#each diags}}\n", "{{#each diags}} (line 1) is not closed by {{/each}}" },
	{ "crossed blocks", "{{#if base}}{{#each diags}}{{/if}}{{/each}}", "not closed by {{/each}}" },
	{ "stray end", "x\n{{/if}}\n", "test.txt:2: {{/if}} without its opening block" },
	{ "stray else", "{{#else}}", "{{#else}} without its opening block" },
	{ "unclosed tag", "a {{tree\n}}", "test.txt:1: \"{{\" without \"}}\" on its line" },
	{ "bad name", "{{Tree}}", "not a field name: \"Tree\"" },
	{ "empty tag", "{{}}", "not a field name" },
	{ "unknown block", "{{#unless base}}{{/unless}}", "unknown block \"{{#unless base}}\"" },
	{ "not UTF-8", "\xff\xfe", "test.txt: not UTF-8 text" },
};

static void test_refused(gconstpointer data)
{
	guint i = GPOINTER_TO_UINT(data);
	g_autoptr(GError) error = NULL;
	zd_autoptr(template) t = template_parse(refused[i].text, "test.txt", schema, &error);

	g_assert_null(t);
	g_assert_error(error, BOT_ERROR, BOT_ERROR_CONFIG);
	if (error && !strstr(error->message, refused[i].error))
		g_test_message("got: %s", error->message);
	g_assert_nonnull(error ? strstr(error->message, refused[i].error) : NULL);
}

static void test_depth(void)
{
	g_autoptr(GString) text = g_string_new(NULL);
	g_autoptr(GError) error = NULL;
	zd_autoptr(template) t = NULL;

	for (int i = 0; i < 40; i++)
		g_string_append(text, "{{#if tree}}");
	t = template_parse(text->str, "deep.txt", schema, &error);
	g_assert_null(t);
	g_assert_nonnull(error ? strstr(error->message, "nested deeper than") : NULL);
}

static void test_load(void)
{
	g_autofree char *dir = testlib_mkdir("templates");
	g_autofree char *path = g_build_filename(dir, "ok.txt", NULL);
	g_autofree char *fifo = g_build_filename(dir, "fifo.txt", NULL);
	g_autofree char *big = g_build_filename(dir, "big.txt", NULL);
	g_autofree char *nul = g_build_filename(dir, "nul.txt", NULL);
	g_autofree char *huge = g_strnfill(TEMPLATE_SIZE_MAX + 1, 'x');
	g_autoptr(GError) error = NULL;
	zd_autoptr(template) t = NULL;
	zd_autoptr(template_values) v = values();
	g_autofree char *out = NULL;

	g_assert_true(g_file_set_contents(path, "{{tree}}\n", -1, NULL));
	g_assert_true(g_file_set_contents(big, huge, -1, NULL));
	g_assert_true(g_file_set_contents(nul, "a\0{{tree}}", 10, NULL));
	g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
	t = template_load(dir, "ok", schema, &error);
	g_assert_no_error(error);
	g_assert_nonnull(t);
	out = t ? template_render(t, v, &error) : NULL;
	g_assert_cmpstr(out, ==, "net-next\n");
	for (guint i = 0; i < 4; i++) {
		static const char *const names[] = { "missing", "fifo", "big", "nul" };
		static const char *const why[] = { "No such file", "not a regular file",
						   "larger than 256 KiB", "holds a NUL byte" };
		zd_autoptr(template) bad = template_load(dir, names[i], schema, &error);

		g_assert_null(bad);
		g_assert_error(error, BOT_ERROR, BOT_ERROR_CONFIG);
		g_assert_nonnull(error ? strstr(error->message, why[i]) : NULL);
		g_clear_error(&error);
	}
}

int main(int argc, char **argv)
{
	testlib_init(&argc, &argv);
	g_test_add_func("/template/render", test_render);
	g_test_add_func("/template/prefix", test_prefix);
	g_test_add_func("/template/wrap", test_wrap);
	g_test_add_func("/template/fill", test_fill);
	g_test_add_func("/template/missing-value", test_missing_value);
	for (guint i = 0; i < G_N_ELEMENTS(refused); i++) {
		g_autofree char *name = g_strdup_printf("/template/refused/%s", refused[i].name);

		g_test_add_data_func(name, GUINT_TO_POINTER(i), test_refused);
	}
	g_test_add_func("/template/depth", test_depth);
	g_test_add_func("/template/load", test_load);
	return g_test_run();
}
