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

/*
 * One mailbox's key and addr-spec, as GMime reads them: never the text
 * after the last '<', which a quoted local part can hold.
 */
static const struct key_case {
	const char *in;
	const char *key;
	const char *spec;  /* NULL: none */
	bool plain;
} key_cases[] = {
	{ "jane@example.org", "jane@example.org", "jane@example.org", true },
	{ "Jane Doe <Jane@Example.ORG>", "jane@example.org", "Jane@Example.ORG", true },
	{ "\"Doe, Jane <x@y.org>\" <jane@example.org>", "jane@example.org", "jane@example.org",
	  true },
	/* The reviewer's From: an administrator's address inside a local part at evil.org. */
	{ "\"z<adm@example.net>\"@evil.org", "\"z<adm@example.net>\"@evil.org",
	  "\"z<adm@example.net>\"@evil.org", false },
	{ "Eve <\"z<adm@example.net>\"@evil.org>", "\"z<adm@example.net>\"@evil.org",
	  "\"z<adm@example.net>\"@evil.org", false },
	{ "\"a b\"@example.org", "\"a b\"@example.org", "\"a b\"@example.org", false },
	{ "a@example.org, b@example.org", "a@example.org, b@example.org", NULL, false },
};

static void test_key(void)
{
	for (size_t i = 0; i < G_N_ELEMENTS(key_cases); i++) {
		const struct key_case *c = &key_cases[i];
		g_autofree char *key = address_key(c->in);
		g_autofree char *spec = address_spec(c->in);

		g_test_message("address %zu: %s", i, c->in);
		g_assert_cmpstr(key, ==, c->key);
		g_assert_cmpstr(spec, ==, c->spec);
		g_assert_cmpint(address_is_plain(key), ==, c->plain);
	}
	g_assert_false(address_is_plain("a@b@example.org"));
	g_assert_false(address_is_plain("a>b@example.org"));
	g_assert_false(address_is_plain("a\\b@example.org"));
	g_assert_false(address_is_plain("@example.org"));
	g_assert_false(address_is_plain("jane"));
	g_assert_true(address_is_plain("jane.doe+kb@example.org"));
}

/* Reply-To, List-Post and Precedence of a header; the body is not read. */
static void test_reply_fields(void)
{
	static const char munged[] =
		"From: Joe via KB <list@example.org>\r\n"
		"Reply-To: Joe <joe@example.com>\r\n"
		"List-Id: KB <kb.example.org>\r\n"
		"List-Post: <mailto:List@Example.org?subject=x>, <https://example.org/post>\r\n"
		"Precedence: Bulk (a list)\r\n"
		"Subject: x\r\n\r\n"
		"Reply-To: not@read.example\r\n";
	static const char two[] =
		"From: a@example.org\nReply-To: a@example.org, b@example.org\nList-Post: NO\n\nx\n";
	static const char odd[] = "From: a@example.org\nReply-To: \"x\"@\n\n";
	struct address_reply_fields f;
	g_autoptr(GError) error = NULL;

	g_assert_true(address_reply_fields_read(&f, munged, sizeof(munged) - 1, &error));
	g_assert_no_error(error);
	g_assert_cmpuint(g_strv_length(f.reply_to), ==, 1);
	g_assert_cmpstr(f.reply_to[0], ==, "Joe <joe@example.com>");
	g_assert_cmpstr(f.list_post, ==, "list@example.org");
	g_assert_cmpstr(f.precedence, ==, "bulk");
	address_reply_fields_release(&f);

	g_assert_true(address_reply_fields_read(&f, two, sizeof(two) - 1, &error));
	g_assert_cmpuint(g_strv_length(f.reply_to), ==, 2);
	g_assert_null(f.list_post);
	g_assert_null(f.precedence);
	address_reply_fields_release(&f);

	/* A Reply-To that does not read names nobody. */
	g_assert_true(address_reply_fields_read(&f, odd, sizeof(odd) - 1, &error));
	g_assert_cmpuint(g_strv_length(f.reply_to), ==, 0);
	address_reply_fields_release(&f);
}

int main(int argc, char **argv)
{
	testlib_init(&argc, &argv);
	g_test_add_func("/address/normalize", test_normalize);
	g_test_add_func("/address/key", test_key);
	g_test_add_func("/address/reply-fields", test_reply_fields);
	return g_test_run();
}
