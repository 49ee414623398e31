/*
 * Ingest against an in-memory store: a real patch mail stored once under
 * its Message-ID with its raw text byte for byte; the same mail again, or
 * through a second list, ignored as a duplicate; the same Message-ID
 * with other content stored apart; a malformed mail quarantined with
 * why, once; and a Maildir source read through: each file stored or
 * counted a duplicate, moved to cur/, nothing read twice, and a source
 * that cannot be opened counted failed, not fatal. The parse is stored
 * with the mail, and dispatch assembles a series from it with the raw
 * text gone; a mail stored without one (an older zeroday's) or with one
 * of another layout is parsed from its raw text when dispatched, once.
 */
#include "autoconfig.h"

#include <string.h>

#include "bot/bot.h"
#include "bot/mailroom/inbox.h"
#include "bot/mailroom/ingest.h"
#include "bot/store/db-private.h"
#include "mail/patchmail.h"
#include "tests/testlib.h"

#define PATCH_MID "20231114211320.3188529-1-marta.kowalska@example.com"
#define PATCH2_MID "20231114211320.3188529-2-marta.kowalska@example.com"

struct fixture {
	struct config *config;
	struct db *db;
	char *raw;      /* a real patch mail */
	gsize len;
	char *relisted; /* the same mail as a second list delivers it */
};

static void fixture_set_up(struct fixture *f, gconstpointer data)
{
	g_autofree char *path = g_build_filename(ZERODAY_SRCDIR, "tests", "data", "patchmail",
						 "series-v2-1.eml", NULL);
	g_autoptr(GError) error = NULL;
	g_autofree char *conf = g_strdup_printf("[zeroday]\nstate-dir = %s/state\n"
						"[mail]\naddress = bot@example.org\n",
						testlib_scratch());

	(void)data;
	f->config = config_load_data(conf, "test", &error);
	g_assert_no_error(error);
	f->db = db_open(":memory:", &error);
	g_assert_no_error(error);
	g_assert_true(g_file_get_contents(path, &f->raw, &f->len, &error));
	g_assert_no_error(error);
	/* Another list's headers on top, and its own Received line. */
	f->relisted = g_strconcat("Received: from lists.example.net by mx.example.net\n"
				  "List-Id: <other.lists.example.net>\n"
				  "X-Mailing-List: other@lists.example.net\n", f->raw, NULL);
}

static void fixture_tear_down(struct fixture *f, gconstpointer data)
{
	(void)data;
	db_close(f->db);
	config_free(f->config);
	g_free(f->raw);
	g_free(f->relisted);
}

/* Ingests @raw from @source in a transaction of its own. */
static void ingest(struct fixture *f, const char *source, const char *raw, gsize len,
		   bool *added, bool *quarantined)
{
	g_autoptr(GError) error = NULL;

	g_assert_true(db_tx_begin(f->db, &error));
	g_assert_true(ingest_mail(f->db, f->config, source, 0, raw, len, 1700000000, added,
				  quarantined, &error));
	g_assert_true(db_tx_commit(f->db, &error));
	g_assert_no_error(error);
}

static guint mail_count(struct fixture *f)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) all = db_mail_list(f->db, -1, 100, &error);

	g_assert_no_error(error);
	return all ? all->len : 0;
}

/* Stored once under its Message-ID, byte for byte; the same mail again adds nothing. */
static void test_once(struct fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(mail_row) row = NULL;
	g_autofree char *raw = NULL;
	bool added = false, quarantined = true;
	gsize len = 0;

	(void)data;
	ingest(f, "maildir:/lists/netdev", f->raw, f->len, &added, &quarantined);
	g_assert_true(added);
	g_assert_false(quarantined);
	row = db_mail_by_message_id(f->db, PATCH_MID, &error);
	g_assert_no_error(error);
	g_assert_nonnull(row);
	if (!row)
		return;
	g_assert_cmpint(row->state, ==, MAIL_NEW);
	g_assert_cmpstr(row->kind, ==, "patch");
	g_assert_cmpstr(row->subject, ==,
			"[PATCH net-next v2 1/3] net: acme: fix NULL dereference in acme_probe()");
	g_assert_nonnull(row->sender);
	g_assert_true(row->sender && strstr(row->sender, "marta.kowalska@example.com"));
	g_assert_cmpstr(row->source, ==, "maildir:/lists/netdev");
	g_assert_cmpint(row->received, ==, 1700000000);
	g_assert_cmpint(row->size, ==, (gint64)f->len);
	g_assert_null(row->reason);
	raw = db_mail_raw(f->db, row->id, &len, &error);
	g_assert_no_error(error);
	g_assert_cmpmem(raw, len, f->raw, f->len);
	/* Parsed once, and the parse stored with it: what the parser makes of the text. */
	{
		g_autoptr(GBytes) parse = NULL;
		zd_autoptr(patchmail) stored = NULL;
		zd_autoptr(patchmail) now = patchmail_parse(raw, len, PATCHMAIL_SIZE_DEFAULT, NULL);
		g_autoptr(GBytes) again = now ? patchmail_pack(now) : NULL;

		g_assert_true(db_mail_parse(f->db, row->id, &parse, &error));
		g_assert_no_error(error);
		g_assert_nonnull(parse);
		stored = parse ? patchmail_unpack(parse, &error) : NULL;
		g_assert_no_error(error);
		g_assert_nonnull(stored);
		g_assert_cmpstr(stored ? stored->message_id : NULL, ==, PATCH_MID);
		g_assert_cmpint(stored ? (int)stored->kind : -1, ==, PATCHMAIL_PATCH);
		g_assert_true(stored && stored->diff && stored->commit_message);
		g_assert_true(parse && again && g_bytes_equal(parse, again));
	}

	ingest(f, "maildir:/lists/netdev", f->raw, f->len, &added, &quarantined);
	g_assert_false(added);
	g_assert_cmpuint(mail_count(f), ==, 1);
}

/*
 * The same mail through a second list is one mail; the same Message-ID
 * with other content (a resend with a changed patch) is stored apart.
 */
static void test_two_lists(struct fixture *f, gconstpointer data)
{
	g_autofree char *changed = NULL;
	bool added = false, quarantined = true;
	char *at;

	(void)data;
	ingest(f, "maildir:/lists/netdev", f->raw, f->len, &added, &quarantined);
	g_assert_true(added);
	ingest(f, "maildir:/lists/other", f->relisted, strlen(f->relisted), &added, &quarantined);
	g_assert_false(added);
	g_assert_false(quarantined);
	g_assert_cmpuint(mail_count(f), ==, 1);

	changed = g_strdup(f->raw);
	at = strstr(changed, "return -ENOMEM");
	g_assert_nonnull(at);
	if (!at)
		return;
	memcpy(at, "return -EINVAL", strlen("return -EINVAL"));
	ingest(f, "maildir:/lists/netdev", changed, strlen(changed), &added, &quarantined);
	g_assert_true(added);
	g_assert_cmpuint(mail_count(f), ==, 2);
}

/* A malformed mail: quarantined with why, its text kept, once; an empty one too. */
static void test_malformed(struct fixture *f, gconstpointer data)
{
	static const char bad[] =
		"From: Eve <eve@example.net>\n"
		"To: netdev@vger.kernel.org\n"
		"Subject: [PATCH] sneaky\n"
		"Message-ID: <first@example.net>\n"
		"Message-ID: <second@example.net>\n"
		"\n"
		"body\n";
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) quarantine = NULL;
	const struct mail_row *row;
	g_autofree char *raw = NULL;
	bool added = false, quarantined = false;
	gint64 n = -1;
	gsize len = 0;

	(void)data;
	g_test_expect_message("bot", G_LOG_LEVEL_MESSAGE, "ingest: quarantined mail *");
	ingest(f, "maildir:/in", bad, strlen(bad), &added, &quarantined);
	g_test_assert_expected_messages();
	g_assert_true(added);
	g_assert_true(quarantined);
	quarantine = db_mail_list(f->db, MAIL_QUARANTINED, 10, &error);
	g_assert_nonnull(quarantine);
	g_assert_cmpuint(quarantine ? quarantine->len : 0, ==, 1);
	if (!quarantine || quarantine->len != 1)
		return;
	row = quarantine->pdata[0];
	g_assert_cmpint(row->state, ==, MAIL_QUARANTINED);
	g_assert_cmpstr(row->reason, ==, "malformed: conflicting message-id headers");
	g_assert_null(row->kind);
	raw = db_mail_raw(f->db, row->id, &len, &error);
	g_assert_cmpmem(raw, len, bad, strlen(bad));
	{
		/* Refused by the parser: no parse to keep. */
		g_autoptr(GBytes) parse = NULL;

		g_assert_true(db_mail_parse(f->db, row->id, &parse, &error));
		g_assert_null(parse);
	}
	/* Read again: not stored twice. */
	ingest(f, "maildir:/in", bad, strlen(bad), &added, &quarantined);
	g_assert_false(added);
	g_assert_true(db_mail_count(f->db, MAIL_QUARANTINED, &n, &error));
	g_assert_cmpint(n, ==, 1);
	/* Nothing at all: refused too, and never new. */
	g_test_expect_message("bot", G_LOG_LEVEL_MESSAGE, "ingest: quarantined mail *");
	ingest(f, "maildir:/in", "", 0, &added, &quarantined);
	g_test_assert_expected_messages();
	g_assert_true(added);
	g_assert_true(quarantined);
	g_assert_true(db_mail_count(f->db, MAIL_NEW, &n, &error));
	g_assert_cmpint(n, ==, 0);
}

static guint dir_count(const char *maildir, const char *sub)
{
	g_autofree char *path = g_build_filename(maildir, sub, NULL);
	g_autoptr(GDir) d = g_dir_open(path, 0, NULL);
	guint n = 0;

	while (d && g_dir_read_name(d))
		n++;
	return n;
}

static void put(const char *maildir, const char *name, const char *text)
{
	g_autofree char *path = g_build_filename(maildir, "new", name, NULL);

	g_assert_true(g_file_set_contents(path, text, -1, NULL));
}

/* A Maildir read through: stored, duplicate, quarantined; all moved to cur/; read once. */
static void test_maildir(struct fixture *f, gconstpointer data)
{
	g_autofree char *maildir = testlib_mkdir("inbox");
	g_autofree char *url = g_strdup_printf("maildir:%s", maildir);
	g_autofree char *missing = g_strdup_printf("maildir:%s/nonesuch", testlib_scratch());
	g_autoptr(GError) error = NULL;
	struct ingest_stats stats = { 0 };

	(void)data;
	for (const char *const *s = (const char *const[]){ "new", "cur", "tmp", NULL }; *s; s++) {
		g_autofree char *sub = g_build_filename(maildir, *s, NULL);

		g_assert_cmpint(g_mkdir_with_parents(sub, 0755), ==, 0);
	}
	put(maildir, "1.a", f->raw);
	put(maildir, "2.b", f->relisted);
	put(maildir, "3.c", "From: x@example.net\nMessage-ID: <a@x>\nMessage-ID: <b@x>\n\nx\n");
	g_test_expect_message("bot", G_LOG_LEVEL_MESSAGE, "ingest: quarantined mail *");
	g_assert_true(ingest_source(f->db, f->config, url, &stats, NULL, &error));
	g_test_assert_expected_messages();
	g_assert_no_error(error);
	g_assert_cmpuint(stats.stored, ==, 2);
	g_assert_cmpuint(stats.quarantined, ==, 1);
	g_assert_cmpuint(stats.duplicates, ==, 1);
	g_assert_cmpuint(stats.failed, ==, 0);
	g_assert_cmpuint(dir_count(maildir, "new"), ==, 0);
	g_assert_cmpuint(dir_count(maildir, "cur"), ==, 3);
	g_assert_cmpuint(mail_count(f), ==, 2);

	/* Nothing new: nothing read. */
	memset(&stats, 0, sizeof(stats));
	g_assert_true(ingest_source(f->db, f->config, url, &stats, NULL, &error));
	g_assert_cmpuint(stats.stored + stats.duplicates + stats.failed, ==, 0);

	/* A source that cannot be read: counted, logged, not fatal. */
	memset(&stats, 0, sizeof(stats));
	g_test_expect_message("bot", G_LOG_LEVEL_WARNING, "ingest: *nonesuch*");
	g_assert_true(ingest_source(f->db, f->config, missing, &stats, NULL, &error));
	g_test_assert_expected_messages();
	g_assert_no_error(error);
	g_assert_cmpuint(stats.failed, ==, 1);
	g_assert_cmpuint(mail_count(f), ==, 2);
}

/* Runs @sql on the fixture's store, as an older zeroday or a damaged disk would leave it. */
static void exec_sql(struct fixture *f, const char *sql)
{
	g_assert_cmpint(sqlite3_exec(f->db->sql, sql, NULL, NULL, NULL), ==, SQLITE_OK);
}

/* The series part @n of the series that mail @message_id belongs to: its mail's id, or 0. */
static gint64 series_part_mail(struct fixture *f, const char *message_id, guint n)
{
	const char *const ids[] = { message_id, NULL };
	g_autoptr(GError) error = NULL;
	zd_autoptr(series_row) s = NULL;
	const struct series_part *p;
	gint64 id = 0;

	g_assert_true(db_series_of_message_ids(f->db, ids, &id, &error));
	g_assert_no_error(error);
	if (!id)
		return 0;
	s = db_series_get(f->db, id, &error);
	g_assert_no_error(error);
	g_assert_cmpuint(s ? s->total : 0, ==, 3);
	g_assert_cmpuint(s ? s->version : 0, ==, 2);
	p = s ? series_row_part(s, n) : NULL;
	return p ? p->mail_id : 0;
}

/*
 * Dispatch reads the parse stored at ingest, not the raw text: with the
 * raw text gone, a patch still joins its series. A mail stored without
 * a parse (by a zeroday before schema 18) is parsed from its raw text
 * when dispatched, once: its parse is stored then.
 */
static void test_dispatch_parsed(struct fixture *f, gconstpointer data)
{
	g_autofree char *path = g_build_filename(ZERODAY_SRCDIR, "tests", "data", "patchmail",
						 "series-v2-2.eml", NULL);
	struct bot c = { .config = f->config, .db = f->db };
	g_autoptr(GError) error = NULL;
	zd_autoptr(mail_row) one = NULL;
	zd_autoptr(mail_row) two = NULL;
	zd_autoptr(mail_row) done = NULL;
	g_autoptr(GBytes) parse = NULL;
	g_autofree char *second = NULL;
	g_autofree char *raw = NULL;
	bool added = false, quarantined = true;
	gsize len = 0;

	(void)data;
	g_assert_true(g_file_get_contents(path, &second, &len, &error));
	ingest(f, "maildir:/lists/netdev", f->raw, f->len, &added, &quarantined);
	g_assert_true(added);
	ingest(f, "maildir:/lists/netdev", second, len, &added, &quarantined);
	g_assert_true(added);
	one = db_mail_by_message_id(f->db, PATCH_MID, &error);
	two = db_mail_by_message_id(f->db, PATCH2_MID, &error);
	g_assert_nonnull(one);
	g_assert_nonnull(two);
	if (!one || !two)
		return;

	/* Patch 1 without its raw text; patch 2 as an older zeroday stored it. */
	exec_sql(f, "UPDATE mails SET raw = zeroblob(0) WHERE message_id = '" PATCH_MID "'");
	exec_sql(f, "UPDATE mails SET parse = NULL WHERE message_id = '" PATCH2_MID "'");
	raw = db_mail_raw(f->db, one->id, &len, &error);
	g_assert_cmpuint(len, ==, 0);
	g_assert_true(db_mail_parse(f->db, two->id, &parse, &error));
	g_assert_null(parse);

	g_assert_true(db_tx_begin(f->db, &error));
	g_assert_true(inbox_dispatch(&c, 1700000060, &error));
	g_assert_true(db_tx_commit(f->db, &error));
	g_assert_no_error(error);
	done = db_mail_get(f->db, one->id, &error);
	g_assert_cmpint(done ? (int)done->state : -1, ==, MAIL_DONE);
	g_assert_cmpint(series_part_mail(f, PATCH_MID, 1), ==, one->id);
	g_assert_cmpint(series_part_mail(f, PATCH_MID, 2), ==, two->id);
	/* Parsed from the raw text once, and that parse kept. */
	g_assert_true(db_mail_parse(f->db, two->id, &parse, &error));
	g_assert_nonnull(parse);
	if (parse) {
		zd_autoptr(patchmail) m = patchmail_unpack(parse, &error);

		g_assert_no_error(error);
		g_assert_cmpstr(m ? m->message_id : NULL, ==, PATCH2_MID);
		g_assert_cmpuint(m ? m->tags.n : 0, ==, 2);
	}
}

/* A stored parse of another layout version (a newer zeroday's, say) is parsed again, not trusted. */
static void test_dispatch_other_version(struct fixture *f, gconstpointer data)
{
	struct bot c = { .config = f->config, .db = f->db };
	g_autoptr(GError) error = NULL;
	zd_autoptr(mail_row) one = NULL;
	zd_autoptr(patchmail) m = NULL;
	g_autoptr(GBytes) parse = NULL;
	bool added = false, quarantined = true;

	(void)data;
	ingest(f, "maildir:/lists/netdev", f->raw, f->len, &added, &quarantined);
	exec_sql(f, "UPDATE mails SET parse = x'ff00'");
	one = db_mail_by_message_id(f->db, PATCH_MID, &error);
	g_assert_nonnull(one);
	if (!one)
		return;
	m = inbox_mail(f->db, f->config, one->id, false, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(m ? m->message_id : NULL, ==, PATCH_MID);
	g_assert_true(db_tx_begin(f->db, &error));
	g_assert_true(inbox_dispatch(&c, 1700000060, &error));
	g_assert_true(db_tx_commit(f->db, &error));
	g_assert_no_error(error);
	g_assert_cmpint(series_part_mail(f, PATCH_MID, 1), ==, one->id);
	/* Dispatch stored this zeroday's parse in its place. */
	g_assert_true(db_mail_parse(f->db, one->id, &parse, &error));
	g_clear_pointer(&m, patchmail_free);
	m = parse ? patchmail_unpack(parse, &error) : NULL;
	g_assert_no_error(error);
	g_assert_nonnull(m);
}

int main(int argc, char **argv)
{
	testlib_init(&argc, &argv);
	g_test_add("/ingest/once", struct fixture, NULL, fixture_set_up, test_once,
		   fixture_tear_down);
	g_test_add("/ingest/two-lists", struct fixture, NULL, fixture_set_up, test_two_lists,
		   fixture_tear_down);
	g_test_add("/ingest/malformed", struct fixture, NULL, fixture_set_up, test_malformed,
		   fixture_tear_down);
	g_test_add("/ingest/maildir", struct fixture, NULL, fixture_set_up, test_maildir,
		   fixture_tear_down);
	g_test_add("/ingest/dispatch-parsed", struct fixture, NULL, fixture_set_up,
		   test_dispatch_parsed, fixture_tear_down);
	g_test_add("/ingest/dispatch-other-version", struct fixture, NULL, fixture_set_up,
		   test_dispatch_other_version, fixture_tear_down);
	return g_test_run();
}
