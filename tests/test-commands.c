/*
 * Which lines of a mail are commands (bot/mailroom/commands.h commands_lines()):
 * a table of bodies and the lines taken from each.
 */
#include "autoconfig.h"

#include <string.h>

#include "bot/mailroom/commands.h"
#include "tests/testlib.h"

static const struct lines_case {
	const char *what;
	const char *body;
	const char *taken; /* the lines taken, joined by '|' */
} lines_cases[] = {
	{ "one command", "Hi,\n\n#zeroday help\n\nThanks\n", "#zeroday help" },
	{ "a tab after the word", "#zeroday\tstatus kb\n", "#zeroday\tstatus kb" },
	{ "the word alone", "#zeroday\n", "#zeroday" },
	{ "CRLF line ends", "#zeroday help\r\n#zeroday status\r\n", "#zeroday help|#zeroday status" },
	{ "quoted", "> #zeroday help\n>#zeroday help\n> > #zeroday rerun\n", "" },
	{ "later in a line", "please run #zeroday help\nsee: #zeroday status\n", "" },
	{ "indented, as zeroday's own examples", "    #zeroday help\n\t#zeroday rerun\n", "" },
	{ "glued to another word", "#zerodayhelp\n#zeroday-help\n", "" },
	{ "upper case is not the marker", "#ZERODAY help\n#Zeroday help\n", "" },
	{ "a lookalike o (U+043E)", "#zer\xd0\xbe" "day help\n", "" },
	{ "a fullwidth number sign", "\xef\xbc\x83zeroday help\n", "" },
	{ "after a signature", "#zeroday help\n-- \nA\n#zeroday rerun\n", "#zeroday help" },
	{ "after an original pasted unquoted",
	  "#zeroday mute\n\n-----Original Message-----\nFrom: bot\n#zeroday rerun\n",
	  "#zeroday mute" },
	{ "none", "Thanks for the report.\n", "" },
	{ "empty", "", "" },
};

static void test_lines(void)
{
	for (gsize i = 0; i < G_N_ELEMENTS(lines_cases); i++) {
		const struct lines_case *c = &lines_cases[i];
		g_auto(GStrv) lines = commands_lines(c->body, COMMANDS_MAX);
		g_autofree char *joined = g_strjoinv("|", lines);

		g_test_message("%s: [%s]", c->what, joined);
		g_assert_cmpstr(joined, ==, c->taken);
	}
}

/* At most @max + 1 lines: enough to tell that there were too many. */
static void test_too_many(void)
{
	g_autoptr(GString) body = g_string_new(NULL);
	g_auto(GStrv) lines = NULL;

	for (int i = 0; i < 20; i++)
		g_string_append_printf(body, "#zeroday blacklist kb b%d\n", i);
	lines = commands_lines(body->str, COMMANDS_MAX);
	g_assert_cmpuint(g_strv_length(lines), ==, COMMANDS_MAX + 1);
	g_clear_pointer(&lines, g_strfreev);
	lines = commands_lines(body->str, 100);
	g_assert_cmpuint(g_strv_length(lines), ==, 20);
}

int main(int argc, char **argv)
{
	testlib_init(&argc, &argv);
	g_test_add_func("/commands/lines", test_lines);
	g_test_add_func("/commands/too-many", test_too_many);
	return g_test_run();
}
