/*
 * The outbox against an in-memory store, the real templates and a
 * Maildir sink in the scratch directory: a finding's report queued
 * once, a blacklisted branch not reported, the fixed follow-up in the
 * report's thread (once, and only after a report), delivery to the
 * Maildir and the rows' state after it, the backoff of a sink that
 * fails, and the hourly limit that holds mail back for a digest. The
 * policy's decisions alone are asked in tests/test-policy.c; here the
 * outbox acts on them.
 */
#include "autoconfig.h"

#include <string.h>
#include <sys/stat.h>

#include <glib/gstdio.h>

#include "bot/bot.h"
#include "bot/mailroom/outbox.h"
#include "bot/store/db-private.h"
#include "engine/engine.h"
#include "tests/testbot.h"
#include "tests/testlib.h"

struct fixture {
	char *dir;       /* this test's own scratch directory */
	char *work;      /* a git work tree with the culprit */
	char *maildir;   /* the outbox sink */
	char *parent;
	char *culprit;
	char *fix;
	struct config *config;
	struct db *db;
	struct repo *repo;
	struct bot ctx;
	gint64 tree_id;
};

/* @data: extra lines of [mail], or NULL. */
static void fixture_set_up(struct fixture *f, gconstpointer data)
{
	g_autofree char *base = g_path_get_basename(g_test_get_path());
	g_autofree char *gitdir = NULL;
	g_autofree char *mail = NULL;
	g_autoptr(GError) error = NULL;
	zd_autoptr(tree_row) t = NULL;

	f->dir = testlib_mkdir(base);
	f->work = g_build_filename(f->dir, "work", NULL);
	f->maildir = g_build_filename(f->dir, "outbox", NULL);
	testlib_repo_init(f->work);
	f->parent = testlib_commit(f->work, "a.c", "int a;\n", "a: start");
	f->culprit = testlib_commit(f->work, "a.c", "int a;\nint b = c;\n", "a: add b");
	f->fix = testlib_commit(f->work, "a.c", "int a;\n", "a: drop b");
	gitdir = g_build_filename(f->work, ".git", NULL);
	f->repo = repo_open(gitdir, &error);
	g_assert_no_error(error);
	mail = g_strdup_printf("outbox = maildir:%s\n%s", f->maildir,
			       data ? (const char *)data : "");
	f->config = testbot_config(f->dir, NULL, mail);
	f->db = testbot_db();
	t = testbot_tree("kb", "master,for-*", "list@example.org", 1700000000);
	g_strfreev(t->blacklist);
	t->blacklist = g_strsplit("for-private", ",", -1);
	f->tree_id = testbot_tree_add(f->db, t);
	f->ctx = (struct bot){ .config = f->config, .db = f->db, .repo = f->repo };
}

static void fixture_tear_down(struct fixture *f, gconstpointer data)
{
	(void)data;
	db_close(f->db);
	config_free(f->config);
	repo_free(f->repo);
	g_free(f->dir);
	g_free(f->work);
	g_free(f->maildir);
	g_free(f->parent);
	g_free(f->culprit);
	g_free(f->fix);
}

/* Stores a build-error finding of the culprit on @branch (fingerprint @fp); returns its id. */
static gint64 add_finding(struct fixture *f, const char *branch, const char *fp)
{
	g_autoptr(GError) error = NULL;
	struct finding_row row = {
		.branch = (char *)branch, .culprit = f->culprit, .parent = f->parent,
		.head = f->culprit, .target = (char *)"x86_64:defconfig",
		.kind = FINDING_BUILD_ERROR, .fingerprint = (char *)fp,
		.title = (char *)"a.c: 'c' undeclared", .file = (char *)"a.c", .line = 2,
		.column = 9, .diag_kind = DIAG_ERROR, .message = (char *)"'c' undeclared",
		.repro_commit = f->culprit,
	};
	bool added = false;

	g_assert_true(db_tx_begin(f->db, &error));
	g_assert_true(db_finding_add(f->db, f->tree_id, &row, &added, &error));
	g_assert_true(db_tx_commit(f->db, &error));
	g_assert_no_error(error);
	g_assert_true(added);
	return row.id;
}

static guint count_rows(struct fixture *f, int state)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) rows = db_outbox_list(f->db, state, 100, &error);

	g_assert_no_error(error);
	return rows ? rows->len : 0;
}

/* The number of files in @maildir/new. */
static guint maildir_count(const char *maildir)
{
	g_autofree char *new = g_build_filename(maildir, "new", NULL);
	g_autoptr(GDir) d = g_dir_open(new, 0, NULL);
	guint n = 0;

	while (d && g_dir_read_name(d))
		n++;
	return n;
}

static bool strv_has(char **v, const char *s)
{
	for (; v && *v; v++) {
		if (g_str_equal(*v, s))
			return true;
	}
	g_test_message("no \"%s\"", s);
	return false;
}

static void sql(struct fixture *f, const char *text)
{
	g_assert_cmpint(sqlite3_exec(f->db->sql, text, NULL, NULL, NULL), ==, SQLITE_OK);
}

/* A second queue of the same finding's report adds nothing; the first is rendered. */
static void test_once(struct fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	gint64 id = add_finding(f, "master", "fp1");
	zd_autoptr(outbox_row) row = NULL;

	(void)data;
	g_assert_true(outbox_queue_report(&f->ctx, id, 1700000100, &error));
	g_assert_no_error(error);
	g_assert_true(outbox_queue_report(&f->ctx, id, 1700000200, &error));
	g_assert_no_error(error);
	g_assert_cmpuint(count_rows(f, -1), ==, 1);
	row = db_outbox_of_finding(f->db, id, OUTBOX_REPORT, &error);
	g_assert_nonnull(row);
	if (!row)
		return;
	g_assert_cmpint(row->state, ==, OUTBOX_QUEUED);
	g_assert_cmpint(row->created, ==, 1700000100);
	g_assert_cmpstr(row->subject, ==, "[kb:master] a.c:2:9: error: 'c' undeclared");
	g_assert_true(g_str_has_prefix(row->message_id, "zeroday-f"));
	g_assert_true(g_str_has_suffix(row->message_id, "@example.org"));
	g_assert_true(strv_has(row->recipients, "to:Test Author <author@example.org>"));
	g_assert_true(strv_has(row->recipients, "cc:Test Committer <committer@example.org>"));
	g_assert_true(strv_has(row->recipients, "cc:list@example.org"));
	g_assert_cmpuint(g_strv_length(row->recipients), ==, 3);
	g_assert_nonnull(row->raw);
	g_assert_nonnull(strstr(row->raw, row->message_id));
	g_assert_null(row->in_reply_to);
	g_assert_cmpuint(g_strv_length(row->references), ==, 0);
}

/* A finding on a blacklisted branch is not reported; one on another branch is. */
static void test_blacklist(struct fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	gint64 hidden = add_finding(f, "for-private", "fp1");
	gint64 shown = add_finding(f, "for-next", "fp2");
	zd_autoptr(outbox_row) none = NULL;
	zd_autoptr(outbox_row) one = NULL;

	(void)data;
	g_assert_true(outbox_queue_report(&f->ctx, hidden, 1700000100, &error));
	g_assert_true(outbox_queue_report(&f->ctx, shown, 1700000100, &error));
	g_assert_no_error(error);
	none = db_outbox_of_finding(f->db, hidden, OUTBOX_REPORT, &error);
	one = db_outbox_of_finding(f->db, shown, OUTBOX_REPORT, &error);
	g_assert_no_error(error);
	g_assert_null(none);
	g_assert_nonnull(one);
	g_assert_cmpuint(count_rows(f, -1), ==, 1);
}

/* The fixed follow-up: In-Reply-To and References the report, "Re:", its recipients; once. */
static void test_fixed_thread(struct fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	gint64 id = add_finding(f, "master", "fp1");
	gint64 silent = add_finding(f, "master", "fp2");
	zd_autoptr(outbox_row) report = NULL;
	zd_autoptr(outbox_row) fixed = NULL;

	(void)data;
	/* No report, no thread: a fixed finding never reported gets no follow-up. */
	g_assert_true(db_finding_fixed(f->db, silent, f->fix, &error));
	g_assert_true(outbox_queue_fixed(&f->ctx, silent, 1700000300, &error));
	g_assert_no_error(error);
	g_assert_cmpuint(count_rows(f, -1), ==, 0);

	g_assert_true(outbox_queue_report(&f->ctx, id, 1700000100, &error));
	/* Still open: nothing to follow up yet. */
	g_assert_true(outbox_queue_fixed(&f->ctx, id, 1700000200, &error));
	g_assert_no_error(error);
	g_assert_cmpuint(count_rows(f, -1), ==, 1);

	g_assert_true(db_finding_fixed(f->db, id, f->fix, &error));
	g_assert_true(outbox_queue_fixed(&f->ctx, id, 1700000300, &error));
	g_assert_true(outbox_queue_fixed(&f->ctx, id, 1700000400, &error));
	g_assert_no_error(error);
	g_assert_cmpuint(count_rows(f, -1), ==, 2);
	report = db_outbox_of_finding(f->db, id, OUTBOX_REPORT, &error);
	fixed = db_outbox_of_finding(f->db, id, OUTBOX_FIXED, &error);
	g_assert_nonnull(report);
	g_assert_nonnull(fixed);
	if (!report || !fixed)
		return;
	g_assert_cmpint(fixed->state, ==, OUTBOX_QUEUED);
	g_assert_cmpstr(fixed->in_reply_to, ==, report->message_id);
	g_assert_cmpuint(g_strv_length(fixed->references), ==, 1);
	g_assert_cmpstr(fixed->references[0], ==, report->message_id);
	g_assert_cmpstr(fixed->subject, ==, "Re: [kb:master] a.c:2:9: error: 'c' undeclared");
	g_assert_cmpstr(fixed->message_id, !=, report->message_id);
	g_assert_cmpuint(g_strv_length(fixed->recipients), ==, g_strv_length(report->recipients));
	for (char **r = report->recipients; r && *r; r++)
		g_assert_true(strv_has(fixed->recipients, *r));
	g_assert_nonnull(fixed->raw);
	{
		g_autofree char *irt = g_strdup_printf("In-Reply-To: <%s>", report->message_id);
		g_autofree char *fix_short = g_strndup(f->fix, 12);

		g_assert_nonnull(strstr(fixed->raw, irt));
		/* The body names the fixing commit. */
		g_assert_nonnull(strstr(fixed->raw, fix_short));
	}
}

/* Delivery to the Maildir: one file a row, the row sent with its path; nothing sent twice. */
static void test_deliver(struct fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	gint64 id = add_finding(f, "master", "fp1");
	zd_autoptr(outbox_row) row = NULL;
	g_autofree char *text = NULL;
	unsigned sent = 99;

	(void)data;
	g_assert_true(outbox_queue_report(&f->ctx, id, 1700000100, &error));
	g_assert_true(outbox_send_due(&f->ctx, &sent, &error));
	g_assert_no_error(error);
	g_assert_cmpuint(sent, ==, 1);
	g_assert_cmpuint(maildir_count(f->maildir), ==, 1);
	row = db_outbox_of_finding(f->db, id, OUTBOX_REPORT, &error);
	g_assert_nonnull(row);
	if (!row)
		return;
	g_assert_cmpint(row->state, ==, OUTBOX_SENT);
	g_assert_cmpuint(row->attempts, ==, 1);
	g_assert_cmpint(row->sent, >, 0);
	g_assert_nonnull(row->path);
	g_assert_true(row->path && g_str_has_prefix(row->path, f->maildir));
	g_assert_true(g_file_get_contents(row->path, &text, NULL, &error));
	g_assert_cmpstr(text, ==, row->raw);
	{
		struct outbox_counts n;

		g_assert_true(db_outbox_counts(f->db, &n, &error));
		g_assert_cmpint(n.sent, ==, 1);
		g_assert_cmpint(n.queued, ==, 0);
	}
	/* Again: nothing is due. */
	g_assert_true(outbox_send_due(&f->ctx, &sent, &error));
	g_assert_cmpuint(sent, ==, 0);
	g_assert_cmpuint(maildir_count(f->maildir), ==, 1);
}

/* A sink that fails: the mail stays queued with the cause, tried again only after the retry. */
static void test_backoff(struct fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	gint64 id = add_finding(f, "master", "fp1");
	zd_autoptr(outbox_row) row = NULL;
	gint64 before = g_get_real_time() / G_USEC_PER_SEC;
	unsigned sent = 99;

	(void)data;
	/* A file where the Maildir should be. */
	g_assert_true(g_file_set_contents(f->maildir, "not a directory", -1, &error));
	g_assert_true(outbox_queue_report(&f->ctx, id, 1700000100, &error));
	g_test_expect_message("bot", G_LOG_LEVEL_WARNING, "outbox: <*> not sent: *");
	g_assert_true(outbox_send_due(&f->ctx, &sent, &error));
	g_test_assert_expected_messages();
	g_assert_no_error(error);
	g_assert_cmpuint(sent, ==, 0);
	row = db_outbox_of_finding(f->db, id, OUTBOX_REPORT, &error);
	g_assert_nonnull(row);
	if (!row)
		return;
	g_assert_cmpuint(row->attempts, ==, 1);
	g_assert_null(row->path);
	g_assert_cmpuint(maildir_count(f->maildir), ==, 0);
	/* Delivered nowhere: queued again, never taken for sent. */
	g_assert_cmpint(row->state, ==, OUTBOX_QUEUED);
	g_assert_nonnull(row->last_error);
	/* [mail] retry = 600, doubled per attempt made before this one: 600 << 1. */
	g_assert_cmpint(row->next_try, >=, before + 600);
	g_assert_cmpint(row->next_try, <=, before + 1200 + 5);
	/* The sink mended: not tried before its time. */
	g_assert_cmpint(g_unlink(f->maildir), ==, 0);
	g_assert_true(outbox_send_due(&f->ctx, &sent, &error));
	g_assert_cmpuint(sent, ==, 0);
	/* Its time come: sent. */
	sql(f, "UPDATE outbox SET next_try = 1");
	g_assert_true(outbox_send_due(&f->ctx, &sent, &error));
	g_assert_no_error(error);
	g_assert_cmpuint(sent, ==, 1);
	g_assert_cmpuint(maildir_count(f->maildir), ==, 1);
}

/*
 * [mail] max-per-hour = 1: the second report is held, never dropped; an
 * hour later its recipients get it as a digest, one digest a round as
 * the digests count against the hour too.
 */
static void test_digest(struct fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	gint64 first = add_finding(f, "master", "fp1");
	gint64 second = add_finding(f, "master", "fp2");
	zd_autoptr(outbox_row) held = NULL;
	g_autoptr(GPtrArray) all = NULL;
	const struct outbox_row *digest = NULL;
	unsigned sent = 99;

	(void)data;
	g_assert_true(outbox_queue_report(&f->ctx, first, 1700000100, &error));
	g_assert_true(outbox_queue_report(&f->ctx, second, 1700000101, &error));
	g_assert_true(outbox_send_due(&f->ctx, &sent, &error));
	g_assert_no_error(error);
	g_assert_cmpuint(sent, ==, 1);
	g_assert_cmpuint(count_rows(f, OUTBOX_SENT), ==, 1);
	g_assert_cmpuint(count_rows(f, OUTBOX_HELD), ==, 1);
	held = db_outbox_of_finding(f->db, second, OUTBOX_REPORT, &error);
	g_assert_nonnull(held);
	g_assert_cmpint(held ? (int)held->state : -1, ==, OUTBOX_HELD);
	/* Within the hour: still held. */
	g_assert_true(outbox_send_due(&f->ctx, &sent, &error));
	g_assert_cmpuint(sent, ==, 0);
	g_assert_cmpuint(count_rows(f, OUTBOX_HELD), ==, 1);

	/* Two hours later. */
	sql(f, "UPDATE outbox_rcpt SET updated = updated - 7200 WHERE state = 'sent'");
	g_assert_true(outbox_send_due(&f->ctx, &sent, &error));
	g_assert_no_error(error);
	g_assert_cmpuint(sent, ==, 1);
	all = db_outbox_list(f->db, -1, 100, &error);
	g_assert_nonnull(all);
	for (guint i = 0; all && i < all->len; i++) {
		const struct outbox_row *r = all->pdata[i];

		if (r->kind == OUTBOX_DIGEST) {
			g_assert_null(digest);
			digest = r;
		}
	}
	g_assert_nonnull(digest);
	if (!digest || !held)
		return;
	g_assert_cmpint(digest->state, ==, OUTBOX_SENT);
	g_assert_cmpuint(g_strv_length(digest->recipients), ==, 1);
	g_assert_nonnull(strstr(digest->raw, held->subject));
	g_assert_nonnull(strstr(digest->raw, held->message_id));
	g_assert_nonnull(strstr(digest->raw, "mail-1.eml"));
	/* One recipient's digest went; the others wait for the next hour, still held. */
	g_assert_cmpuint(count_rows(f, OUTBOX_HELD), ==, 1);
	g_assert_cmpuint(maildir_count(f->maildir), ==, 2);
}

int main(int argc, char **argv)
{
	struct repo_limits limits = { 0 };
	g_autoptr(GError) error = NULL;

	testlib_init(&argc, &argv);
	if (!repo_global_init(&limits, &error))
		g_error("%s", error->message);
	g_test_add("/outbox/once", struct fixture, NULL, fixture_set_up, test_once,
		   fixture_tear_down);
	g_test_add("/outbox/blacklist", struct fixture, NULL, fixture_set_up, test_blacklist,
		   fixture_tear_down);
	g_test_add("/outbox/fixed-thread", struct fixture, NULL, fixture_set_up,
		   test_fixed_thread, fixture_tear_down);
	g_test_add("/outbox/deliver", struct fixture, NULL, fixture_set_up, test_deliver,
		   fixture_tear_down);
	g_test_add("/outbox/backoff", struct fixture, "retry = 600\n", fixture_set_up,
		   test_backoff, fixture_tear_down);
	g_test_add("/outbox/digest", struct fixture, "max-per-hour = 1\n", fixture_set_up,
		   test_digest, fixture_tear_down);
	return g_test_run();
}
