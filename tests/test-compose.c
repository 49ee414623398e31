/*
 * Composing replies: the exact bytes of a threaded plain-text reply and
 * of one with attachments; header injection through names, subjects and
 * Message-IDs refused or neutralized; long lines quoted-printable; and
 * read back as a mail reader would (mail/mime.c's test accessor), every
 * part as it was given.
 */
#include "autoconfig.h"

#include <string.h>

#include "mail/compose.h"
#include "mail/mail.h"
#include "mail/mime-private.h"
#include "tests/testlib.h"

static void fill(struct reply *r)
{
	reply_init(r);
	r->from = g_strdup("zeroday <bot@example.org>");
	g_ptr_array_add(r->to, g_strdup("Ann Author <ann@example.com>"));
	g_ptr_array_add(r->cc, g_strdup("list@vger.example.org"));
	g_ptr_array_add(r->cc, g_strdup("Jörg Maintainer <joerg@example.de>"));
	r->subject = g_strdup("[net-next:main 3/5] net/core/dev.c:42: error: 'x' undeclared");
	r->message_id = g_strdup("zeroday-f1-00ff@example.org");
	r->in_reply_to = g_strdup("zeroday-f1-0001@example.org");
	g_ptr_array_add(r->references, g_strdup("patch-1@example.com"));
	g_ptr_array_add(r->references, g_strdup("zeroday-f1-0001@example.org"));
	r->date = 1700000000;
	r->body = g_strdup("Hi Ann,\n\nyour commit broke the build.\n");
}

static void test_plain(void)
{
	struct reply r;
	g_autoptr(GError) error = NULL;
	g_autofree char *out = NULL;

	fill(&r);
	out = compose_message(&r, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(out, ==,
			"Date: Tue, 14 Nov 2023 22:13:20 +0000\n"
			"From: zeroday <bot@example.org>\n"
			"Subject: [net-next:main 3/5] net/core/dev.c:42: error: 'x' undeclared\n"
			"To: Ann Author <ann@example.com>\n"
			"Cc: list@vger.example.org, =?iso-8859-1?b?SvZyZw==?= Maintainer\n"
			"\t<joerg@example.de>\n"
			"Message-Id: <zeroday-f1-00ff@example.org>\n"
			"In-Reply-To: <zeroday-f1-0001@example.org>\n"
			"References: <patch-1@example.com> <zeroday-f1-0001@example.org>\n"
			"Auto-Submitted: auto-generated\n"
			"MIME-Version: 1.0\n"
			"Content-Type: text/plain; charset=us-ascii\n"
			"Content-Transfer-Encoding: 7bit\n"
			"\n"
			"Hi Ann,\n\nyour commit broke the build.\n");
	reply_release(&r);
}

/*
 * Bytes go base64 with their type; reply_fit() leaves out the largest
 * attachments until the mail is under the size, and says which.
 */
static void test_fit(void)
{
	struct reply r;
	g_autoptr(GError) error = NULL;
	g_autofree char *big = g_strnfill(200 * 1024, 'x');
	g_autoptr(GBytes) gz = g_bytes_new_static("\x1f\x8b\x08\x00zz", 6);
	g_autofree char *out = NULL;

	fill(&r);
	reply_attach_bytes(&r, "config.gz", "application/gzip", gz);
	reply_attach(&r, "build.log", big);
	reply_attach(&r, "bisect.log", "a good 0/1\n");
	g_assert_true(reply_fit(&r, 50000, &error));
	g_assert_no_error(error);
	out = compose_message(&r, &error);
	g_assert_nonnull(out);
	if (!out)
		return;
	g_assert_cmpuint(strlen(out), <, 50000);
	g_assert_nonnull(strstr(out, "Content-Type: application/gzip; name=config.gz\n"));
	g_assert_nonnull(strstr(out, "Content-Transfer-Encoding: base64\n"));
	g_assert_nonnull(strstr(out, "filename=config.gz\n"));
	g_assert_nonnull(strstr(out, "H4sIAHp6\n"));
	g_assert_nonnull(strstr(out, "filename=bisect.log\n"));
	g_assert_null(strstr(out, "filename=build.log\n"));
	g_assert_nonnull(strstr(r.body, "[left out of this mail to keep it under 50000 bytes: "
					"build.log, 204800 bytes]\n"));
	reply_release(&r);
}

static void test_attachments(void)
{
	struct reply r;
	g_autoptr(GError) error = NULL;
	g_autofree char *out = NULL;
	g_autofree char *long_line = g_strnfill(1200, 'w');
	g_autofree char *log = g_strdup_printf("make: ok\n%s\nend\n", long_line);
	g_autoptr(GPtrArray) parts = NULL;
	g_autofree char *message_id = NULL;

	fill(&r);
	g_free(r.body);
	r.body = g_strdup("Grüße: the config is attached.\n");
	reply_attach(&r, "config", "CONFIG_X=y\n");
	reply_attach(&r, "../build.log", log);
	out = compose_message(&r, &error);
	g_assert_no_error(error);
	g_assert_nonnull(out);
	if (!out)
		return;
	g_assert_nonnull(strstr(out, "Content-Type: multipart/mixed; boundary=zeroday-"));
	g_assert_nonnull(strstr(out, "Content-Type: text/plain; charset=utf-8\n"
				     "Content-Transfer-Encoding: 8bit\n\nGrüße"));
	g_assert_nonnull(strstr(out, "Content-Disposition: attachment; filename=config\n"));
	/* No directory in a file name; a line over 998 octets is quoted-printable. */
	g_assert_nonnull(strstr(out, "filename=.._build.log\n"));
	g_assert_nonnull(strstr(out, "Content-Transfer-Encoding: quoted-printable\n"));
	for (const char *p = out; *p;) {
		const char *nl = strchr(p, '\n');

		g_assert_cmpuint(nl ? (gsize)(nl - p) : strlen(p), <=, 998);
		if (!nl)
			break;
		p = nl + 1;
	}
	/* The same reply is the same bytes. */
	{
		g_autofree char *again = compose_message(&r, NULL);

		g_assert_cmpstr(again, ==, out);
	}
	/* A mail reader reads back what was written: the text, then the attachments. */
	parts = mime_read_back(out, strlen(out), &message_id);
	g_assert_nonnull(parts);
	if (parts) {
		gsize len;
		const char *text;

		g_assert_cmpstr(message_id, ==, "zeroday-f1-00ff@example.org");
		g_assert_cmpuint(parts->len, ==, 3);
		if (parts->len == 3) {
			text = g_bytes_get_data(parts->pdata[0], &len);
			g_assert_cmpmem(text, len, r.body, strlen(r.body));
			text = g_bytes_get_data(parts->pdata[1], &len);
			g_assert_cmpmem(text, len, "CONFIG_X=y\n", strlen("CONFIG_X=y\n"));
			text = g_bytes_get_data(parts->pdata[2], &len);
			g_assert_cmpmem(text, len, log, strlen(log));
		}
	}
	reply_release(&r);
}

static void test_injection(void)
{
	struct reply r;
	g_autoptr(GError) error = NULL;
	g_autofree char *out = NULL;

	fill(&r);
	g_free(r.subject);
	r.subject = g_strdup("broken\r\nBcc: victim@example.net\nX-Evil: 1");
	out = compose_message(&r, &error);
	g_assert_no_error(error);
	g_assert_null(out ? strstr(out, "\nBcc:") : NULL);
	g_assert_null(out ? strstr(out, "\nX-Evil:") : NULL);
	g_assert_nonnull(out ? strstr(out, "Subject: broken  Bcc: victim@example.net X-Evil: 1\n")
			     : NULL);
	reply_release(&r);

	static const struct {
		const char *field;
		const char *value;
	} bad[] = {
		{ "to", "Eve <eve@example.net>\r\nBcc: victim@example.net" },
		{ "to", "a@example.net, b@example.net" },
		{ "to", "group: a@example.net;" },
		{ "to", "no-domain" },
		{ "cc", "Eve\n <eve@example.net>" },
		{ "from", "" },
		{ "message_id", "a@b>\nBcc: <c@d" },
		{ "message_id", "no-at-sign" },
		{ "in_reply_to", "two@at@signs" },
		{ "references", "sp ace@example.org" },
	};
	for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autofree char *got = NULL;

		fill(&r);
		if (strcmp(bad[i].field, "to") == 0)
			g_ptr_array_add(r.to, g_strdup(bad[i].value));
		else if (strcmp(bad[i].field, "cc") == 0)
			g_ptr_array_add(r.cc, g_strdup(bad[i].value));
		else if (strcmp(bad[i].field, "from") == 0)
			g_free(r.from), r.from = g_strdup(bad[i].value);
		else if (strcmp(bad[i].field, "message_id") == 0)
			g_free(r.message_id), r.message_id = g_strdup(bad[i].value);
		else if (strcmp(bad[i].field, "in_reply_to") == 0)
			g_free(r.in_reply_to), r.in_reply_to = g_strdup(bad[i].value);
		else
			g_ptr_array_add(r.references, g_strdup(bad[i].value));
		got = compose_message(&r, &error);
		g_test_message("%s %s: %s", bad[i].field, bad[i].value,
			       error ? error->message : "accepted");
		g_assert_null(got);
		g_assert_error(error, MAIL_ERROR, MAIL_ERROR_INVALID);
		g_clear_error(&error);
		reply_release(&r);
	}
	/* No recipient at all. */
	fill(&r);
	g_ptr_array_set_size(r.to, 0);
	g_ptr_array_set_size(r.cc, 0);
	g_assert_null(compose_message(&r, &error));
	g_assert_error(error, MAIL_ERROR, MAIL_ERROR_INVALID);
	reply_release(&r);
}

static void test_message_id(void)
{
	g_autofree char *a = compose_message_id("f7", "example.org");
	g_autofree char *b = compose_message_id("f7", "example.org");

	g_assert_true(g_str_has_prefix(a, "zeroday-f7-"));
	g_assert_true(g_str_has_suffix(a, "@example.org"));
	g_assert_cmpuint(strlen(a), ==, strlen("zeroday-f7-") + 32 + strlen("@example.org"));
	g_assert_cmpstr(a, !=, b);
}

/* A reply's thread: References then the mail, or its In-Reply-To when it had none. */
static void test_thread(void)
{
	char root[] = "root@x", mid[] = "mid@x";
	char *refs[] = { root, mid };
	struct reply r;

	reply_init(&r);
	reply_thread(&r, "leaf@x", "mid@x", refs, G_N_ELEMENTS(refs));
	g_assert_cmpstr(r.in_reply_to, ==, "leaf@x");
	g_assert_cmpuint(r.references->len, ==, 3);
	g_assert_cmpstr(r.references->pdata[0], ==, "root@x");
	g_assert_cmpstr(r.references->pdata[2], ==, "leaf@x");
	reply_release(&r);

	/* No References: the In-Reply-To stands for the thread above it. */
	reply_init(&r);
	reply_thread(&r, "leaf@x", "parent@x", NULL, 0);
	g_assert_cmpuint(r.references->len, ==, 2);
	g_assert_cmpstr(r.references->pdata[0], ==, "parent@x");
	g_assert_cmpstr(r.references->pdata[1], ==, "leaf@x");
	reply_release(&r);

	/* A thread's first mail: only itself. */
	reply_init(&r);
	reply_thread(&r, "first@x", NULL, NULL, 0);
	g_assert_cmpuint(r.references->len, ==, 1);
	g_assert_cmpstr(r.in_reply_to, ==, "first@x");
	reply_release(&r);
}

int main(int argc, char **argv)
{
	testlib_init(&argc, &argv);
	mail_global_init();
	g_test_add_func("/compose/plain", test_plain);
	g_test_add_func("/compose/attachments", test_attachments);
	g_test_add_func("/compose/fit", test_fit);
	g_test_add_func("/compose/injection", test_injection);
	g_test_add_func("/compose/message-id", test_message_id);
	g_test_add_func("/compose/thread", test_thread);
	return g_test_run();
}
