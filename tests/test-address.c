/*
 * Recipient addresses through GMime.
 */
#include "autoconfig.h"

#include "mail/address.h"
#include "mail/mail.h"
#include "tests/testlib.h"

static const struct address_case {
	const char *in;
	const char *out; /* NULL: refused */
} cases[] = {
	{ "linux-kernel@vger.kernel.org", "linux-kernel@vger.kernel.org" },
	{ "Jane Doe <jane@example.org>", "Jane Doe <jane@example.org>" },
	{ "\"Doe, Jane\" <jane@example.org>", "\"Doe, Jane\" <jane@example.org>" },
	{ "  jane@example.org  ", "jane@example.org" },
	{ "a@example.org, b@example.org", NULL },
	{ "group: a@example.org;", NULL },
	{ "jane", NULL },
	{ "jane@", NULL },
	{ "@example.org", NULL },
	{ "jane@localhost", NULL },
	{ "-oX@example.org", NULL },
	{ "jane@example.org\nBcc: evil@example.org", NULL },
	{ "", NULL },
};

static void test_normalize(void)
{
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(GError) error = NULL;
		g_autofree char *out = address_normalize(cases[i].in, &error);

		g_test_message("address %zu: %s", i, cases[i].in);
		g_assert_cmpstr(out, ==, cases[i].out);
		if (!cases[i].out)
			g_assert_error(error, MAIL_ERROR, MAIL_ERROR_INVALID);
	}
}

int main(int argc, char **argv)
{
	testlib_init(&argc, &argv);
	g_test_add_func("/address/normalize", test_normalize);
	return g_test_run();
}
