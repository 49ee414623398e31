/*
 * Mail sources: the URL parser against a table of good and hostile URLs,
 * the Message-ID taken from a header, and the Maildir source: listing
 * (oldest first, a limit, Message-IDs), a symbolic link, a FIFO, a
 * directory and odd names in new/ skipped and refused, the size cap,
 * done moving to cur/ with the seen flag, and wait seeing a delivery.
 * The IMAP source runs against the real Dovecot: tests/imap-real.sh.
 */
#include "autoconfig.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "mail/mail.h"
#include "mail/source-private.h"
#include "tests/testlib.h"

static const struct {
	const char *url;
	enum source_scheme scheme;
	const char *user, *host;
	unsigned port;
	const char *folder, *path;
} good[] = {
	{ "maildir:/var/mail/bot", SOURCE_MAILDIR, NULL, NULL, 0, NULL, "/var/mail/bot" },
	{ "imap://bot@mail.example.org/INBOX", SOURCE_IMAP, "bot", "mail.example.org", 143,
	  "INBOX", NULL },
	{ "imaps://bot@mail.example.org/INBOX", SOURCE_IMAPS, "bot", "mail.example.org", 993,
	  "INBOX", NULL },
	{ "imaps://bot%40example.org@127.0.0.1:10993/lists/linux-kernel", SOURCE_IMAPS,
	  "bot@example.org", "127.0.0.1", 10993, "lists/linux-kernel", NULL },
	{ "imap://u@[::1]:1143/a%20b%2Fc", SOURCE_IMAP, "u", "::1", 1143, "a b/c", NULL },
	{ "IMAPS://anonymous@nntp.lore.kernel.org/inbox.comp.version-control.git.0", SOURCE_IMAPS,
	  "anonymous", "nntp.lore.kernel.org", 993, "inbox.comp.version-control.git.0", NULL },
};

static const char *const hostile[] = {
	"",
	"maildir:",
	"maildir:relative/path",
	"maildir:/",
	"maildir:/tmp/a\nb",
	"pop3://u@h/INBOX",
	"imap://user:secret@host/INBOX",
	"imap://user:@host/INBOX",
	"imap://host/INBOX",
	"imap://@host/INBOX",
	"imap://u@/INBOX",
	"imap://u@host",
	"imap://u@host/",
	"imap://u@host:/INBOX",
	"imap://u@host:0/INBOX",
	"imap://u@host:65536/INBOX",
	"imap://u@host:99999999999/INBOX",
	"imap://u@host:14x/INBOX",
	"imap://u@host:-1/INBOX",
	"imap://u@ho st/INBOX",
	"imap://u@host\r/INBOX",
	"imap://u@host/IN\tBOX",
	"imap://u@host/INBOX%00",
	"imap://u@host/INBOX%0d%0aA1 LOGOUT",
	"imap://u@host/INBOX%0a",
	"imap://u@host/INBOX%",
	"imap://u@host/INBOX%zz",
	"imap://u%0a@host/INBOX",
	"imap://u@[::1/INBOX",
	"imap://u@[not:v6]/INBOX",
	"imap://u@[::1]x/INBOX",
	"imap://u@-host/INBOX",
	"imap://u@host/INBOX?x=1",
	"imap://u@host/INBOX#frag",
	"imap://u@h@host/INBOX",
	"imap://u@host/%C3%A4",
	/* Refused since GUri parses them. */
	"imap://u@host/a/../INBOX",
	"imap://u@host/./INBOX",
	"imap://u@ho%zzst/INBOX",
	"imap://u@[::1]:99999/INBOX",
	"imap://user:secret@host:99999/INBOX",
	"imap://user:secret@[::1/INBOX",
	"imaps://u@host:1143:1/INBOX",
};

static void test_url_good(void)
{
	for (size_t i = 0; i < G_N_ELEMENTS(good); i++) {
		struct source_url u = { 0 };
		g_autoptr(GError) error = NULL;

		g_test_message("%s", good[i].url);
		g_assert_true(source_url_parse(good[i].url, &u, &error));
		g_assert_no_error(error);
		g_assert_cmpint(u.scheme, ==, good[i].scheme);
		g_assert_cmpstr(u.user, ==, good[i].user);
		g_assert_cmpstr(u.host, ==, good[i].host);
		g_assert_cmpuint(u.port, ==, good[i].port);
		g_assert_cmpstr(u.folder, ==, good[i].folder);
		g_assert_cmpstr(u.path, ==, good[i].path);
		source_url_release(&u);
		g_assert_null(u.host);
	}
}

static void test_url_hostile(void)
{
	for (size_t i = 0; i < G_N_ELEMENTS(hostile); i++) {
		struct source_url u = { 0 };
		g_autoptr(GError) error = NULL;
		g_autofree char *shown = g_strescape(hostile[i], NULL);

		g_test_message("refused: %s", shown);
		g_assert_false(source_url_parse(hostile[i], &u, &error));
		g_assert_error(error, MAIL_ERROR, MAIL_ERROR_INVALID);
		g_assert_null(u.host);
		g_assert_null(u.path);
		/* Nothing secret in the message either. */
		if (error)
			g_assert_null(strstr(error->message, "secret"));
	}
}

static void test_message_id(void)
{
	static const struct {
		const char *header;
		const char *want;
	} cases[] = {
		{ "From: a@b\r\nMessage-ID: <x.1@example.org>\r\n\r\n", "x.1@example.org" },
		{ "message-id:<y@e>\n", "y@e" },
		{ "Message-Id:\r\n <folded@e>\r\n\r\n", "folded@e" },
		{ "Subject: hi\n\nMessage-ID: <in-body@e>\n", NULL },
		{ "Message-ID: <a b@e>\n", NULL },
		{ "Message-ID: <unclosed@e\n", NULL },
		{ "Message-ID: <>\n", NULL },
		{ "Message-ID: <ctl\x01@e>\n", NULL },
		{ "Message-ID: bare@e\n", "bare@e" },
		{ "X-Message-ID: <no@e>\n", NULL },
		{ "", NULL },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *got = source_message_id(cases[i].header, strlen(cases[i].header));

		g_assert_cmpstr(got, ==, cases[i].want);
	}
}

static char *maildir;

static void deliver(const char *name, const char *mid, gsize body)
{
	g_autofree char *path = g_build_filename(maildir, "new", name, NULL);
	g_autoptr(GString) text = g_string_new(NULL);

	g_string_append_printf(text, "From: a@example.org\nMessage-ID: <%s>\nSubject: %s\n\n",
			       mid, name);
	for (gsize i = 0; i < body; i++)
		g_string_append_c(text, 'x');
	g_assert_true(g_file_set_contents(path, text->str, (gssize)text->len, NULL));
}

static struct source *open_maildir(gsize size_max)
{
	g_autofree char *url = g_strconcat("maildir:", maildir, NULL);
	struct source_options opts = { .size_max = size_max };
	g_autoptr(GError) error = NULL;
	struct source *s = source_open(url, &opts, &error);

	g_assert_no_error(error);
	g_assert_nonnull(s);
	return s;
}

static void setup_maildir(void)
{
	g_autofree char *outside = NULL;
	g_autofree char *link = NULL;
	g_autofree char *fifo = NULL;
	g_autofree char *dir = NULL;

	maildir = testlib_mkdir("Maildir");
	for (const char *const *d = (const char *const[]){ "new", "cur", "tmp", NULL }; *d; d++) {
		g_autofree char *sub = g_build_filename(maildir, *d, NULL);

		g_assert_cmpint(g_mkdir(sub, 0700), ==, 0);
	}
	deliver("1700000002.M2P1.host", "two@example.org", 10);
	deliver("1700000001.M1P1.host", "one@example.org", 10);
	deliver("1700000003.M3P1.host", "three@example.org", 5000);
	/* Not messages: a link to a file outside, a FIFO, a directory, odd names. */
	outside = g_build_filename(testlib_scratch(), "secret.txt", NULL);
	g_assert_true(g_file_set_contents(outside, "Message-ID: <secret@e>\n\nsecret\n", -1, NULL));
	link = g_build_filename(maildir, "new", "1700000000.link", NULL);
	g_assert_cmpint(symlink(outside, link), ==, 0);
	fifo = g_build_filename(maildir, "new", "1700000000.fifo", NULL);
	g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
	dir = g_build_filename(maildir, "new", "1700000000.dir", NULL);
	g_assert_cmpint(g_mkdir(dir, 0700), ==, 0);
	deliver(".hidden", "hidden@example.org", 1);
	deliver("odd name", "odd@example.org", 1);
}

static void test_maildir_list(void)
{
	struct source *s = open_maildir(0);
	g_autoptr(GPtrArray) entries = NULL;
	g_autoptr(GError) error = NULL;
	guint32 uidvalidity = 1;
	const struct source_entry *e;

	g_assert_true(g_str_has_prefix(source_name(s), "maildir:/"));
	g_assert_true(source_list(s, 0, 0, &uidvalidity, &entries, &error));
	g_assert_no_error(error);
	g_assert_cmpuint(uidvalidity, ==, 0);
	g_assert_cmpuint(entries->len, ==, 3);
	e = entries->pdata[0];
	g_assert_cmpstr(e->name, ==, "1700000001.M1P1.host");
	g_assert_cmpstr(e->message_id, ==, "one@example.org");
	g_assert_cmpuint(e->uid, ==, 0);
	g_assert_cmpuint(e->size, ==, strlen("From: a@example.org\nMessage-ID: <one@example.org>\n"
					     "Subject: 1700000001.M1P1.host\n\n") + 10);
	g_assert_cmpstr(((struct source_entry *)entries->pdata[1])->message_id, ==,
			"two@example.org");
	g_assert_cmpstr(((struct source_entry *)entries->pdata[2])->message_id, ==,
			"three@example.org");
	g_clear_pointer(&entries, g_ptr_array_unref);

	/* A limit: the oldest. */
	g_assert_true(source_list(s, 0, 2, &uidvalidity, &entries, &error));
	g_assert_cmpuint(entries->len, ==, 2);
	g_assert_cmpstr(((struct source_entry *)entries->pdata[1])->name, ==,
			"1700000002.M2P1.host");
	source_close(s);
}

static void test_maildir_refused(void)
{
	struct source *s = open_maildir(0);
	static const char *const names[] = { "1700000000.link", "1700000000.fifo",
					     "1700000000.dir", "../cur", "odd name", ".hidden" };

	for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
		struct source_entry e = { .name = (char *)names[i] };
		g_autoptr(GError) error = NULL;
		gsize len = 7;
		g_autofree char *data = NULL;

		g_test_message("fetch %s", names[i]);
		/* The FIFO has no writer: a blocking open would hang here. */
		data = source_fetch(s, &e, &len, &error);
		g_assert_null(data);
		g_assert_error(error, MAIL_ERROR, MAIL_ERROR_INVALID);
		g_assert_cmpuint(len, ==, 0);
	}
	source_close(s);
}

static void test_maildir_fetch_done(void)
{
	struct source *s = open_maildir(1000);
	g_autoptr(GPtrArray) entries = NULL;
	g_autoptr(GError) error = NULL;
	guint32 uidvalidity;
	gsize len = 0;
	g_autofree char *data = NULL;
	g_autofree char *cur = NULL;
	g_autofree char *new_path = NULL;
	struct source_entry *big;

	g_assert_true(source_list(s, 0, 0, &uidvalidity, &entries, &error));
	g_assert_cmpuint(entries->len, ==, 3);
	data = source_fetch(s, entries->pdata[0], &len, &error);
	g_assert_no_error(error);
	g_assert_nonnull(data);
	g_assert_cmpuint(len, ==, ((struct source_entry *)entries->pdata[0])->size);
	g_assert_cmpuint(strlen(data), ==, len);
	g_assert_true(g_str_has_suffix(data, "\n\nxxxxxxxxxx"));

	/* The size cap: refused as listed, and when the file grew since the listing. */
	big = entries->pdata[2];
	g_clear_pointer(&data, g_free);
	data = source_fetch(s, big, &len, &error);
	g_assert_null(data);
	g_assert_error(error, MAIL_ERROR, MAIL_ERROR_INVALID);
	g_assert_nonnull(error ? strstr(error->message, "too large: 5") : NULL);
	g_clear_error(&error);
	big->size = 10;
	data = source_fetch(s, big, &len, &error);
	g_assert_null(data);
	g_assert_error(error, MAIL_ERROR, MAIL_ERROR_INVALID);
	g_clear_error(&error);

	/* Done: to cur/ with the seen flag, and no longer listed. */
	g_assert_true(source_done(s, entries->pdata[0], &error));
	g_assert_no_error(error);
	cur = g_build_filename(maildir, "cur", "1700000001.M1P1.host:2,S", NULL);
	new_path = g_build_filename(maildir, "new", "1700000001.M1P1.host", NULL);
	g_assert_true(g_file_test(cur, G_FILE_TEST_IS_REGULAR));
	g_assert_false(g_file_test(new_path, G_FILE_TEST_EXISTS));
	g_clear_pointer(&entries, g_ptr_array_unref);
	g_assert_true(source_list(s, 0, 0, &uidvalidity, &entries, &error));
	g_assert_cmpuint(entries->len, ==, 2);
	/* Done twice: the file is gone from new/. */
	{
		struct source_entry again = { .name = (char *)"1700000001.M1P1.host" };

		g_assert_false(source_done(s, &again, &error));
		g_assert_nonnull(error);
	}
	source_close(s);
}

static gboolean deliver_later(gpointer data)
{
	deliver("1700000009.M9P1.host", "late@example.org", 1);
	return G_SOURCE_REMOVE;
}

static gpointer deliver_thread(gpointer data)
{
	g_usleep(300 * 1000);
	deliver_later(NULL);
	return NULL;
}

static void test_maildir_wait(void)
{
	struct source *s = open_maildir(0);
	g_autoptr(GError) error = NULL;
	bool changed = true;
	gint64 t0 = g_get_monotonic_time();
	GThread *thread;

	g_assert_true(source_wait(s, 1, &changed, &error));
	g_assert_false(changed);
	g_assert_cmpint(g_get_monotonic_time() - t0, >=, 900 * 1000);

	thread = g_thread_new("deliver", deliver_thread, NULL);
	t0 = g_get_monotonic_time();
	g_assert_true(source_wait(s, 10, &changed, &error));
	g_assert_no_error(error);
	g_assert_true(changed);
	g_assert_cmpint(g_get_monotonic_time() - t0, <, 5 * G_USEC_PER_SEC);
	g_thread_join(thread);
	source_close(s);
}

static void test_maildir_missing(void)
{
	struct source_options opts = { 0 };
	g_autoptr(GError) error = NULL;
	g_autofree char *url = g_strconcat("maildir:", testlib_scratch(), "/nothing", NULL);

	g_assert_null(source_open(url, &opts, &error));
	g_assert_error(error, MAIL_ERROR, MAIL_ERROR_PERMANENT);
	g_clear_error(&error);
	g_assert_null(source_open("maildir:relative", &opts, &error));
	g_assert_error(error, MAIL_ERROR, MAIL_ERROR_INVALID);
}

static void test_imap_refused_early(void)
{
	struct source_options opts = { .timeout = 5 };
	g_autoptr(GError) error = NULL;
	g_autofree char *url = g_strdup_printf("imaps://u@127.0.0.1:%d/INBOX",
					       testlib_free_port());

	/* Nobody listening: TEMPORARY, for the caller to retry. */
	g_assert_null(source_open(url, &opts, &error));
	g_assert_error(error, MAIL_ERROR, MAIL_ERROR_TEMPORARY);
	g_clear_error(&error);
	g_assert_null(source_open("imap://u:pw@127.0.0.1/INBOX", &opts, &error));
	g_assert_error(error, MAIL_ERROR, MAIL_ERROR_INVALID);
}

int main(int argc, char **argv)
{
	int r;

	testlib_init(&argc, &argv);
	setup_maildir();
	g_test_add_func("/source/url/good", test_url_good);
	g_test_add_func("/source/url/hostile", test_url_hostile);
	g_test_add_func("/source/message-id", test_message_id);
	g_test_add_func("/source/maildir/list", test_maildir_list);
	g_test_add_func("/source/maildir/refused", test_maildir_refused);
	g_test_add_func("/source/maildir/fetch-done", test_maildir_fetch_done);
	g_test_add_func("/source/maildir/wait", test_maildir_wait);
	g_test_add_func("/source/maildir/missing", test_maildir_missing);
	g_test_add_func("/source/imap/refused-early", test_imap_refused_early);
	r = g_test_run();
	g_free(maildir);
	return r;
}
