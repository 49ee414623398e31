/*
 * The mail command language (bot/mailroom/commands.h): the "#zeroday" lines of a
 * body, each split into its words and made printable, as
 * commands_take() does before it runs them.
 */
#include "autoconfig.h"

#include <string.h>

#include "bot/mailroom/commands.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_quiet_logs();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A body is a C string: a patchmail's is. */
	g_autofree char *body = g_strndup((const char *)data, size);
	g_auto(GStrv) lines = commands_lines(body, COMMANDS_MAX);
	g_auto(GStrv) all = commands_lines(body, G_MAXUINT - 1);

	g_assert(g_strv_length(lines) <= COMMANDS_MAX + 1);
	g_assert(g_strv_length(all) >= g_strv_length(lines));
	for (char **l = all; *l; l++) {
		const char *why = NULL;
		g_auto(GStrv) words = commands_split_line(*l, &why);
		g_autofree char *printable = commands_printable_line(*l);

		g_assert(g_str_has_prefix(*l, "#zeroday"));
		g_assert(words || why);
		for (char **w = words; w && *w; w++)
			g_assert(**w && strlen(*w) <= COMMAND_ARG_MAX);
		g_assert(strlen(printable) <= 3 * COMMAND_LINE_MAX);
		g_assert(g_utf8_validate(printable, -1, NULL));
	}
	return 0;
}
