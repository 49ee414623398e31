/*
 * The store: schema migration from an older database, refusal of a newer
 * one, a second connection for another thread, the queries the poll
 * relies on, the job queue with its retries, the text every state and
 * kind is stored as, and what a full disk looks like to a caller.
 */
#include "autoconfig.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "bot/bot.h"
#include "bot/store/db.h"
#include "tests/testlib.h"

/* Creates a database file from SQL with the real sqlite3 shell. */
static char *make_db(const char *name, const char *sql)
{
	g_autofree char *dir = testlib_mkdir("db");
	char *path = g_build_filename(dir, name, NULL);
	/* A leading newline keeps sqlite3 from reading "-- comment" as an option. */
	g_autofree char *script = g_strconcat("\n", sql, NULL);
	const char *argv[] = { "sqlite3", "-bail", path, script, NULL };
	g_autoptr(GError) error = NULL;
	int status = 0;

	g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
				   NULL, NULL, &status, &error));
	g_assert_no_error(error);
	g_assert_true(g_spawn_check_wait_status(status, NULL));
	return path;
}

static void assert_shell(const char *path, const char *sql, const char *want);

static void test_migrate_v1(void)
{
	g_autofree char *fixture = g_build_filename(ZERODAY_SRCDIR, "tests", "data",
						    "schema-v1.sql", NULL);
	g_autofree char *sql = NULL;
	g_autofree char *path = NULL;
	g_autoptr(GError) error = NULL;
	zd_autoptr(db) db = NULL;
	zd_autoptr(tree_row) t = NULL;
	g_autoptr(GPtrArray) pending = NULL;
	g_autoptr(GPtrArray) branches = NULL;

	g_assert_true(g_file_get_contents(fixture, &sql, NULL, NULL));
	path = make_db("v1.db", sql);
	db = db_open(path, &error);
	g_assert_no_error(error);
	if (!db)
		return;
	g_assert_cmpint(db_schema_version(db), ==, DB_SCHEMA_VERSION);

	/* The old rows survive, and the new column has its default. */
	t = db_tree_get(db, "linux-next", &error);
	g_assert_no_error(error);
	if (!t)
		return;
	g_assert_cmpstr(t->url, ==, "git://example.org/linux-next.git");
	g_assert_cmpint(t->policy, ==, TREE_NON_REBASABLE);
	g_assert_cmpstr(t->branches[0], ==, "master");
	g_assert_cmpstr(t->blacklist[0], ==, "tmp-*");
	g_assert_cmpstr(t->base, ==, "mainline/master");
	g_assert_cmpuint(g_strv_length(t->recipients), ==, 0);
	branches = db_branch_list(db, t->id, &error);
	g_assert_cmpuint(branches ? branches->len : 0, ==, 1);
	pending = db_test_pending(db, 10, &error);
	g_assert_cmpuint(pending ? pending->len : 0, ==, 1);

	/* The new column is writable, and reopening migrates nothing. */
	g_strfreev(t->recipients);
	t->recipients = g_strsplit("a@example.org,b@example.org", ",", -1);
	g_assert_true(db_tree_update(db, t, &error));
	g_clear_pointer(&db, db_close);
	db = db_open(path, &error);
	g_assert_no_error(error);
	if (!db)
		return;
	g_clear_pointer(&t, tree_row_free);
	t = db_tree_get(db, "linux-next", &error);
	g_assert_cmpuint(t ? g_strv_length(t->recipients) : 0, ==, 2);
	if (!t)
		return;

	/* Schema 12: the mail settings, empty and off, then written and read back. */
	g_assert_cmpuint(g_strv_length(t->lists), ==, 0);
	g_assert_false(t->private);
	g_assert_false(t->mail_clean);
	assert_shell(path, "SELECT group_concat(name || ' ' || type || ' ' || \"notnull\" || ' ' || "
		     "dflt_value, ', ') FROM pragma_table_info('trees') WHERE name IN "
		     "('lists', 'private', 'mail_clean')",
		     "lists TEXT 1 '', private INTEGER 1 0, mail_clean INTEGER 1 0");
	/* Schema 18: a mail's parse, NULL for the mails stored before (parsed when dispatched). */
	assert_shell(path, "SELECT name || ' ' || type || ' ' || \"notnull\" FROM "
		     "pragma_table_info('mails') WHERE name = 'parse'", "parse BLOB 0");
	g_strfreev(t->lists);
	t->lists = g_strsplit("netdev@example.org,lkml@example.org", ",", -1);
	t->private = true;
	t->mail_clean = true;
	g_assert_true(db_tree_update(db, t, &error));
	g_assert_no_error(error);
	g_clear_pointer(&t, tree_row_free);
	t = db_tree_get(db, "linux-next", &error);
	g_assert_no_error(error);
	if (!t)
		return;
	g_assert_cmpuint(g_strv_length(t->lists), ==, 2);
	g_assert_cmpstr(t->lists[1], ==, "lkml@example.org");
	g_assert_true(t->private);
	g_assert_true(t->mail_clean);
	g_assert_cmpuint(g_strv_length(t->recipients), ==, 2);
}

/* The commits one head change selected, in order; none for an unknown commit. */
static void test_series(void)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(db) db = db_open(":memory:", &error);
	struct tree_row t = { .name = (char *)"t", .url = (char *)"git://example.org/t" };
	char branch[] = "topic";
	struct head_event first = { .branch = branch,
				    .new_head = (char *)"3333333333333333333333333333333333333333",
				    .change = HEAD_NEW, .action = HEAD_ACTION_QUEUED, .when = 1 };
	struct head_event second = first;
	const char *const one[] = { "1111111111111111111111111111111111111111",
				    "2222222222222222222222222222222222222222",
				    "3333333333333333333333333333333333333333", NULL };
	const char *later = "4444444444444444444444444444444444444444";
	g_auto(GStrv) got = NULL;
	g_auto(GStrv) other = NULL;
	g_auto(GStrv) none = NULL;
	bool added;

	g_assert_no_error(error);
	if (!db)
		return;
	g_assert_true(db_tree_insert(db, &t, &error));
	g_assert_true(db_event_add(db, t.id, &first, &error));
	for (size_t i = 0; one[i]; i++)
		g_assert_true(db_test_add(db, t.id, branch, one[i], "s", first.id, &added, &error));
	g_assert_true(db_event_add(db, t.id, &second, &error));
	g_assert_true(db_test_add(db, t.id, branch, later, "s", second.id, &added, &error));
	g_assert_no_error(error);
	got = db_test_series(db, t.id, one[1], &error);
	g_assert_no_error(error);
	g_assert_cmpstrv(got, one);
	other = db_test_series(db, t.id, later, &error);
	g_assert_cmpuint(other ? g_strv_length(other) : 99, ==, 1);
	none = db_test_series(db, t.id, "5555555555555555555555555555555555555555", &error);
	g_assert_no_error(error);
	g_assert_cmpuint(none ? g_strv_length(none) : 99, ==, 0);
}

static void test_newer_schema_refused(void)
{
	g_autofree char *path = make_db("v99.db", "PRAGMA user_version = 99;");
	g_autoptr(GError) error = NULL;
	zd_autoptr(db) db = db_open(path, &error);

	g_assert_null(db);
	g_assert_error(error, BOT_ERROR, BOT_ERROR_SCHEMA);
}

static void test_wal(void)
{
	g_autofree char *dir = testlib_mkdir("wal");
	g_autofree char *path = g_build_filename(dir, "z.db", NULL);
	g_autofree char *wal = g_strconcat(path, "-wal", NULL);
	g_autoptr(GError) error = NULL;
	zd_autoptr(db) db = db_open(path, &error);
	zd_autoptr(tree_row) t = g_new0(struct tree_row, 1);

	g_assert_no_error(error);
	if (!db)
		return;
	t->name = g_strdup("x");
	t->url = g_strdup("git://example.org/x");
	g_assert_true(db_tx_begin(db, &error));
	g_assert_true(db_tree_insert(db, t, &error));
	g_assert_true(db_tx_commit(db, &error));
	g_assert_true(g_file_test(wal, G_FILE_TEST_EXISTS));
}

/*
 * A second connection for another thread: to the same file, seeing what
 * the first committed; none for an in-memory store (it would be another
 * database) nor inside the first's transaction (its writes would wait).
 */
static void test_open_again(void)
{
	g_autofree char *dir = testlib_mkdir("again");
	g_autofree char *path = g_build_filename(dir, "z.db", NULL);
	g_autoptr(GError) error = NULL;
	zd_autoptr(db) db = db_open(path, &error);
	zd_autoptr(db) memory = db_open(":memory:", &error);
	zd_autoptr(tree_row) t = g_new0(struct tree_row, 1);
	zd_autoptr(tree_row) seen = NULL;
	zd_autoptr(db) again = NULL;

	g_assert_no_error(error);
	g_assert_null(db_open_again(memory, &error));
	g_assert_no_error(error);

	t->name = g_strdup("x");
	t->url = g_strdup("git://example.org/x");
	g_assert_true(db_tx_begin(db, &error));
	g_assert_null(db_open_again(db, &error));
	g_assert_no_error(error);
	g_assert_true(db_tree_insert(db, t, &error));
	g_assert_true(db_tx_commit(db, &error));

	again = db_open_again(db, &error);
	g_assert_no_error(error);
	g_assert_nonnull(again);
	seen = db_tree_get(again, "x", &error);
	g_assert_no_error(error);
	g_assert_cmpstr(seen ? seen->url : NULL, ==, "git://example.org/x");
}

static struct tree_row *new_tree(const char *name)
{
	struct tree_row *t = g_new0(struct tree_row, 1);

	t->name = g_strdup(name);
	t->url = g_strdup_printf("git://example.org/%s.git", name);
	t->branches = g_strsplit("master,for-*", ",", -1);
	t->created = 1700000000;
	return t;
}

static gint64 add_tree_named(struct db *db, const char *name)
{
	zd_autoptr(tree_row) t = new_tree(name);

	g_assert_true(db_tree_insert(db, t, NULL));
	return t->id;
}

static void test_queries(void)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(db) db = db_open(":memory:", &error);
	zd_autoptr(tree_row) a = new_tree("alpha");
	zd_autoptr(tree_row) dup = new_tree("alpha");
	zd_autoptr(tree_row) b = new_tree("beta");
	g_autoptr(GPtrArray) list = NULL;
	g_autoptr(GPtrArray) events = NULL;
	g_autoptr(GPtrArray) branches = NULL;
	g_autoptr(GPtrArray) pending = NULL;
	char master[] = "master", why[] = "why";
	char head[] = "2222222222222222222222222222222222222222";
	struct head_event ev = { .branch = master, .new_head = head, .change = HEAD_NEW,
				 .action = HEAD_ACTION_QUEUED, .selected = 1, .when = 5 };
	struct branch_row br = { .name = master, .head = head, .state = BRANCH_SKIPPED,
				 .reason = why, .updated = 5 };
	bool added = false, known = false;
	gint64 depth = -1;

	g_assert_no_error(error);
	if (!db)
		return;
	g_assert_true(db_tree_insert(db, a, &error));
	g_assert_true(db_tree_insert(db, b, &error));
	g_assert_false(db_tree_insert(db, dup, &error));
	g_assert_error(error, BOT_ERROR, BOT_ERROR_EXISTS);
	g_clear_error(&error);
	list = db_tree_list(db, &error);
	g_assert_cmpuint(list->len, ==, 2);
	g_assert_cmpstr(((struct tree_row *)list->pdata[0])->name, ==, "alpha");
	g_assert_cmpstr(((struct tree_row *)list->pdata[0])->branches[1], ==, "for-*");
	g_assert_null(db_tree_get(db, "gamma", &error));
	g_assert_error(error, BOT_ERROR, BOT_ERROR_NOT_FOUND);
	g_clear_error(&error);

	g_assert_true(db_event_add(db, a->id, &ev, &error));
	g_assert_cmpint(ev.id, >, 0);
	g_assert_true(db_test_add(db, a->id, "master", ev.new_head, "subject", ev.id, &added, &error));
	g_assert_true(added);
	g_assert_true(db_test_add(db, a->id, "other", ev.new_head, "subject", ev.id, &added, &error));
	g_assert_false(added);
	g_assert_true(db_test_known(db, a->id, ev.new_head, &known, &error));
	g_assert_true(known);
	g_assert_true(db_test_known(db, b->id, ev.new_head, &known, &error));
	g_assert_false(known);
	g_assert_true(db_test_count_pending(db, &depth, &error));
	g_assert_cmpint(depth, ==, 1);
	pending = db_test_pending(db, 10, &error);
	g_assert_cmpuint(pending ? pending->len : 0, ==, 1);
	if (pending && pending->len == 1)
		g_assert_cmpint(((struct test_row *)pending->pdata[0])->state, ==, TEST_PENDING);
	g_assert_true(db_branch_put(db, a->id, &br, &error));
	br.state = BRANCH_TESTED;
	br.reason = NULL;
	g_assert_true(db_branch_put(db, a->id, &br, &error));
	branches = db_branch_list(db, a->id, &error);
	g_assert_cmpuint(branches->len, ==, 1);
	g_assert_cmpint(((struct branch_row *)branches->pdata[0])->state, ==, BRANCH_TESTED);
	g_assert_null(((struct branch_row *)branches->pdata[0])->reason);
	events = db_event_recent(db, 10, &error);
	g_assert_cmpuint(events->len, ==, 1);
	g_assert_cmpstr(((struct head_event *)events->pdata[0])->tree, ==, "alpha");
	g_assert_cmpint(((struct head_event *)events->pdata[0])->action, ==, HEAD_ACTION_QUEUED);

	/* Deleting a tree deletes what was recorded for it. */
	g_assert_true(db_tree_delete(db, "alpha", &error));
	g_assert_true(db_test_count_pending(db, &depth, &error));
	g_assert_cmpint(depth, ==, 0);
	g_assert_false(db_tree_delete(db, "alpha", &error));
	g_assert_error(error, BOT_ERROR, BOT_ERROR_NOT_FOUND);
	g_clear_error(&error);
	/* Its removal is kept until what it left elsewhere is dropped... */
	{
		g_autoptr(GPtrArray) removed = db_trees_removed(db, &error);

		g_assert_cmpuint(removed->len, ==, 1);
		g_assert_cmpstr(removed->pdata[0], ==, "alpha");
	}
	g_assert_true(db_tree_forgotten(db, "alpha", &error));
	{
		g_autoptr(GPtrArray) removed = db_trees_removed(db, &error);

		g_assert_cmpuint(removed->len, ==, 0);
	}
	/* ...or a tree of that name comes back, and what is left is its own. */
	g_assert_true(db_tree_delete(db, "beta", &error));
	add_tree_named(db, "beta");
	{
		g_autoptr(GPtrArray) removed = db_trees_removed(db, &error);

		g_assert_cmpuint(removed->len, ==, 0);
	}
}

/* Claims the next job in @scope and returns "tree:commit", or "" when none. */
static char *claim_in(struct db *db, const char *owner, enum job_claim_scope scope, gint64 now,
		      struct job_row **out)
{
	struct job_row *job = NULL;
	g_autoptr(GError) error = NULL;
	char *what;

	g_assert_true(db_job_claim(db, owner, scope, now, 60, &job, &error));
	g_assert_no_error(error);
	what = job ? g_strdup_printf("%s:%s", job->tree, job->commit) : g_strdup("");
	if (out)
		*out = job;
	else
		job_row_free(job);
	return what;
}

/* As claim_in(), a tree held whole (the local executor). */
static char *claim(struct db *db, const char *owner, gint64 now, struct job_row **out)
{
	return claim_in(db, owner, JOB_CLAIM_TREE, now, out);
}

static void test_jobs(void)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(db) db = db_open(":memory:", &error);
	gint64 busy = add_tree_named(db, "busy");
	gint64 quiet = add_tree_named(db, "quiet");
	gint64 other = add_tree_named(db, "other");
	struct job_row *a = NULL, *b = NULL;
	gint64 q, wt, r, d;
	bool added;

	/* A busy tree's backlog, a quiet tree's head, and a duplicate. */
	for (int i = 0; i < 3; i++) {
		g_autofree char *c = g_strdup_printf("b%d", i);

		g_assert_true(db_job_add(db, JOB_KIND_BUILD, busy, c, "x86_64:defconfig", JOB_BACKLOG,
					 &added, &error));
		g_assert_true(added);
	}
	g_assert_true(db_job_add(db, JOB_KIND_BUILD, busy, "b0", "x86_64:defconfig", JOB_BACKLOG, &added,
				 &error));
	g_assert_false(added);
	g_assert_true(db_job_add(db, JOB_KIND_BUILD, quiet, "q0", "x86_64:defconfig", JOB_BACKLOG, &added,
				 &error));
	g_assert_true(db_job_add(db, JOB_KIND_BUILD, quiet, "head", "x86_64:defconfig", JOB_HEAD, &added,
				 &error));

	/* Another tree with work: it may run beside the others. */
	g_assert_true(db_job_add(db, JOB_KIND_BUILD, other, "o0", "x86_64:allnoconfig", JOB_BACKLOG,
				 &added, &error));

	/* Heads first; then fairness alternates trees instead of draining "busy". */
	{
		g_autofree char *head = claim(db, "w1", 100, &a);

		g_assert_cmpstr(head, ==, "quiet:head");
	}
	g_assert_true(db_job_complete(db, a->id, "w1", JOB_RESULT_PASS, NULL, 101, &error));
	job_row_free(a);
	{
		g_autofree char *first = claim(db, "w1", 102, NULL);
		g_autofree char *second = claim(db, "w1", 103, NULL);
		g_autofree char *third = claim(db, "w1", 104, &a);
		g_autofree char *none = claim(db, "w1", 104, NULL);

		g_assert_cmpstr(first, ==, "busy:b0");
		g_assert_cmpstr(second, ==, "other:o0");
		g_assert_cmpstr(third, ==, "quiet:q0");
		/* b1 and b2 wait for b0: they would share its work tree. */
		g_assert_cmpstr(none, ==, "");
		job_row_free(a);
	}

	/* A dead worker's leases run out; its jobs are claimed again, once. */
	g_assert_true(db_job_counts(db, 105, &q, &wt, &r, &d, &error));
	g_assert_cmpint(q, ==, 2);
	g_assert_cmpint(wt, ==, 0);
	g_assert_cmpint(r, ==, 3);
	g_assert_cmpint(d, ==, 1);
	/*
	 * w1 died holding b0, o0 and q0 (claimed at 102..104 for 60 s). At 200
	 * all are free again; the tree served least recently goes first.
	 */
	{
		g_autofree char *b0 = claim(db, "w2", 200, &b);
		g_autofree char *o0 = claim(db, "w2", 200, NULL);
		g_autofree char *again = claim(db, "w3", 200, &a);
		g_autofree char *none = claim(db, "w2", 200, NULL);

		g_assert_cmpstr(b0, ==, "busy:b0");
		g_assert_cmpuint(b->attempts, ==, 2);
		g_assert_cmpstr(o0, ==, "other:o0");
		g_assert_cmpstr(again, ==, "quiet:q0");
		g_assert_cmpuint(a->attempts, ==, 2);
		g_assert_cmpstr(none, ==, "");
	}
	g_assert_true(db_job_complete(db, b->id, "w2", JOB_RESULT_PASS, NULL, 206, &error));
	{
		g_autofree char *b2 = claim(db, "w2", 207, NULL);

		g_assert_cmpstr(b2, ==, "busy:b1");
	}
	/* The first worker comes back: its completion is refused. */
	g_assert_false(db_job_complete(db, a->id, "w1", JOB_RESULT_PASS, NULL, 201, &error));
	g_assert_error(error, BOT_ERROR, BOT_ERROR_BUSY);
	g_clear_error(&error);
	g_assert_false(db_job_renew(db, a->id, "w1", 300, &error));
	g_assert_error(error, BOT_ERROR, BOT_ERROR_BUSY);
	g_clear_error(&error);
	g_assert_true(db_job_renew(db, a->id, "w3", 300, &error));
	g_assert_true(db_job_complete(db, a->id, "w3", JOB_RESULT_PASS, NULL, 202, &error));
	g_assert_false(db_job_complete(db, a->id, "w3", JOB_RESULT_PASS, NULL, 203, &error));
	g_clear_error(&error);
	job_row_free(a);
	job_row_free(b);
}

/*
 * A cluster's claims (JOB_CLAIM_TARGET): a running job holds its tree's
 * target, not its tree, so the targets of one head build at once, each
 * one build at a time; fairness between trees stays.
 */
static void test_jobs_by_target(void)
{
	static const struct {
		const char *commit, *target;
	} wide[] = {
		{ "x0", "x86_64:tinyconfig" },
		{ "x1", "x86_64:tinyconfig" },
		{ "a0", "arm64:tinyconfig" },
		{ "a1", "arm64:tinyconfig" },
	};
	g_autoptr(GError) error = NULL;
	zd_autoptr(db) db = db_open(":memory:", &error);
	gint64 head = add_tree_named(db, "wide");
	gint64 other = add_tree_named(db, "other");
	struct job_row *x0 = NULL;
	bool added;

	for (size_t i = 0; i < G_N_ELEMENTS(wide); i++)
		g_assert_true(db_job_add(db, JOB_KIND_BUILD, head, wide[i].commit, wide[i].target,
					 JOB_BACKLOG, &added, &error));
	g_assert_true(db_job_add(db, JOB_KIND_BUILD, other, "o0", "x86_64:tinyconfig", JOB_BACKLOG,
				 &added, &error));
	{
		g_autofree char *first = claim_in(db, "w1", JOB_CLAIM_TARGET, 100, &x0);
		g_autofree char *second = claim_in(db, "w2", JOB_CLAIM_TARGET, 101, NULL);
		g_autofree char *third = claim_in(db, "w3", JOB_CLAIM_TARGET, 102, NULL);
		g_autofree char *none = claim_in(db, "w4", JOB_CLAIM_TARGET, 103, NULL);
		g_autofree char *whole = claim_in(db, "w4", JOB_CLAIM_TREE, 103, NULL);

		g_assert_cmpstr(first, ==, "wide:x0");
		/* The tree served least recently goes next... */
		g_assert_cmpstr(second, ==, "other:o0");
		/* ...then the wide tree's other target, beside x0. */
		g_assert_cmpstr(third, ==, "wide:a0");
		/* x1 waits for x0 and a1 for a0: each target builds once at a time. */
		g_assert_cmpstr(none, ==, "");
		g_assert_cmpstr(whole, ==, "");
	}
	g_assert_true(db_job_complete(db, x0->id, "w1", JOB_RESULT_PASS, NULL, 104, &error));
	job_row_free(x0);
	{
		g_autofree char *x1 = claim_in(db, "w1", JOB_CLAIM_TARGET, 105, NULL);
		g_autofree char *o0 = claim_in(db, "w5", JOB_CLAIM_TARGET, 163, NULL);
		g_autofree char *a0 = claim_in(db, "w5", JOB_CLAIM_TARGET, 164, NULL);
		g_autofree char *none = claim_in(db, "w6", JOB_CLAIM_TARGET, 164, NULL);

		g_assert_cmpstr(x1, ==, "wide:x1");
		/*
		 * The leases of o0 (from 101) and a0 (from 102) ran out; the tree
		 * served least recently goes first, and a0 is taken over before
		 * a1 is started beside it.
		 */
		g_assert_cmpstr(o0, ==, "other:o0");
		g_assert_cmpstr(a0, ==, "wide:a0");
		g_assert_cmpstr(none, ==, "");
	}
}

static void test_backoff(void)
{
	static const struct {
		struct job_backoff backoff;
		unsigned failures;
		gint64 wait;
	} cases[] = {
		{ JOB_BACKOFF_INIT, 1, 60 },
		{ JOB_BACKOFF_INIT, 2, 120 },
		{ JOB_BACKOFF_INIT, 3, 240 },
		{ JOB_BACKOFF_INIT, 6, 1920 },
		{ JOB_BACKOFF_INIT, 7, 3600 }, /* capped at an hour */
		{ JOB_BACKOFF_INIT, 8, 3600 },
		{ JOB_BACKOFF_INIT, 1000, 3600 }, /* no overflow */
		{ { .first_s = 1, .max_s = 10, .limit = 3 }, 1, 1 },
		{ { .first_s = 1, .max_s = 10, .limit = 3 }, 4, 8 },
		{ { .first_s = 1, .max_s = 10, .limit = 3 }, 5, 10 },
		{ { .first_s = 7, .max_s = 7, .limit = 3 }, 3, 7 },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_test_message("case %zu: %u failures", i, cases[i].failures);
		g_assert_cmpint(db_job_backoff(&cases[i].backoff, cases[i].failures), ==,
				cases[i].wait);
	}
	/* The defaults the man page promises. */
	{
		const struct job_backoff def = JOB_BACKOFF_INIT;

		g_assert_cmpuint(def.limit, ==, 8);
	}
}

/* One step of a job's life, and what the store must say to it. */
enum op {
	CLAIM,    /* claim at @now as @owner: expect @expect ("" for nothing) */
	RETRY,    /* a temporary failure: expect @gave_up and @not_before */
	COMPLETE, /* done with @result (and @reason) */
	COUNTS,   /* expect @q queued, @w waiting, @r running, @d done */
	LOST,     /* @owner's retry is refused: the lease is not theirs */
	HAND_BACK, /* zeroday stops mid-job, its work going on: back as it was */
};

struct step {
	enum op op;
	gint64 now;
	const char *owner;
	const char *expect;    /* CLAIM: "tree:commit" */
	unsigned attempts;     /* CLAIM: the job's attempts, this claim included */
	unsigned failures;     /* CLAIM: its failures so far */
	const char *reason;    /* RETRY, COMPLETE */
	bool gave_up;          /* RETRY */
	gint64 not_before;     /* RETRY */
	enum job_result result; /* COMPLETE */
	gint64 q, w, r, d;     /* COUNTS */
};

static const struct backoff_case {
	const char *name;
	struct job_backoff backoff;
	struct step steps[16];
} retry_cases[] = {
	{ "retried after the backoff, then done", { 10, 100, 3 }, {
		{ CLAIM, 100, "w1", "t:c1", .attempts = 1 },
		{ RETRY, 100, "w1", .reason = "infra-error: build of c1: timed out",
		  .not_before = 110 },
		{ COUNTS, 105, .q = 1, .w = 1 },          /* c2 is claimable; c1 waits */
		{ CLAIM, 105, "w1", "t:c2", .attempts = 1 }, /* the waiting job blocks nothing */
		{ COMPLETE, 106, "w1", .result = JOB_RESULT_PASS },
		{ CLAIM, 109, "w1", "" },                 /* not before its time */
		{ COUNTS, 109, .w = 1, .d = 1 },
		{ CLAIM, 110, "w2", "t:c1", .attempts = 2, .failures = 1 },
		{ COUNTS, 110, .r = 1, .d = 1 },
		{ COMPLETE, 200, "w2", .result = JOB_RESULT_NEW_DIAGNOSTICS },
		{ COUNTS, 200, .d = 2 },
	} },
	{ "the backoff doubles, and the limit ends the job in error", { 10, 25, 3 }, {
		{ CLAIM, 100, "w1", "t:c1", .attempts = 1 },
		{ RETRY, 100, "w1", .reason = "disk full", .not_before = 110 },
		{ CLAIM, 110, "w1", "t:c1", .attempts = 2, .failures = 1 },
		{ RETRY, 111, "w1", .reason = "disk full", .not_before = 131 },
		{ CLAIM, 130, "w1", "t:c2", .attempts = 1 },
		{ COMPLETE, 130, "w1", .result = JOB_RESULT_PASS },
		{ CLAIM, 131, "w1", "t:c1", .attempts = 3, .failures = 2 },
		{ RETRY, 140, "w1", .reason = "disk still full", .gave_up = true },
		{ COUNTS, 10000, .d = 2 },
		{ CLAIM, 10000, "w1", "" },
	} },
	{ "a permanent cause ends the job at once", JOB_BACKOFF_INIT, {
		{ CLAIM, 100, "w1", "t:c1", .attempts = 1 },
		{ COMPLETE, 101, "w1", .result = JOB_RESULT_ERROR, .reason = "bad build target 'x'" },
		{ COUNTS, 101, .q = 1, .d = 1 },
	} },
	{ "only the lease holder hands a job back", { 10, 100, 3 }, {
		{ CLAIM, 100, "w1", "t:c1", .attempts = 1 },
		{ LOST, 101, "w2" },
		{ CLAIM, 200, "w2", "t:c1", .attempts = 2 }, /* w1's lease ran out */
		{ LOST, 201, "w1" },
		{ RETRY, 202, "w2", .reason = "boot infra-error", .not_before = 212 },
		{ COUNTS, 202, .q = 1, .w = 1 },
		{ LOST, 203, "w2" },                        /* queued again: nobody's */
	} },
	{ "a job handed back is no failure, and its claim is no attempt", { 10, 100, 2 }, {
		{ CLAIM, 100, "w1", "t:c1", .attempts = 1 },
		{ HAND_BACK, 101, "w1" },
		{ COUNTS, 101, .q = 2 },                    /* claimable at once, no wait */
		{ CLAIM, 101, "w2", "t:c1", .attempts = 1 },
		{ HAND_BACK, 102, "w2" },
		{ CLAIM, 102, "w1", "t:c1", .attempts = 1 }, /* stopped twice, over the limit of 2 */
		{ RETRY, 103, "w1", .reason = "node lost", .not_before = 113 },
		{ CLAIM, 113, "w1", "t:c1", .attempts = 2, .failures = 1 },
		{ HAND_BACK, 114, "w1" },
		{ CLAIM, 114, "w2", "t:c1", .attempts = 2, .failures = 1 },
		{ COMPLETE, 200, "w2", .result = JOB_RESULT_PASS },
		{ COUNTS, 200, .q = 1, .d = 1 },
	} },
};

static void test_job_retry(gconstpointer data)
{
	const struct backoff_case *c = data;
	g_autoptr(GError) error = NULL;
	zd_autoptr(db) db = db_open(":memory:", &error);
	gint64 tree;
	struct job_row *held = NULL; /* the job of the last claim */
	bool added;

	g_assert_no_error(error);
	if (!db)
		return;
	tree = add_tree_named(db, "t");
	g_assert_true(db_job_add(db, JOB_KIND_BUILD, tree, "c1", "x86_64:defconfig", JOB_HEAD, &added,
				 &error));
	g_assert_true(db_job_add(db, JOB_KIND_BUILD, tree, "c2", "x86_64:defconfig", JOB_BACKLOG, &added,
				 &error));
	for (size_t i = 0; i < G_N_ELEMENTS(c->steps) && c->steps[i].now; i++) {
		const struct step *st = &c->steps[i];
		gint64 q = -1, w = -1, r = -1, d = -1, not_before = -1;
		bool gave_up = !st->gave_up;

		g_test_message("step %zu at %" G_GINT64_FORMAT, i, st->now);
		switch (st->op) {
		case CLAIM: {
			struct job_row *job = NULL;
			g_autofree char *what = claim(db, st->owner, st->now, &job);

			g_assert_cmpstr(what, ==, st->expect);
			if (job) {
				g_assert_cmpuint(job->attempts, ==, st->attempts);
				g_assert_cmpuint(job->failures, ==, st->failures);
				g_assert_cmpint(job->lease_until, ==, st->now + 60);
				job_row_free(held);
				held = job;
			}
			break;
		}
		case RETRY:
			g_assert_nonnull(held);
			if (!held)
				break;
			g_assert_true(db_job_retry(db, held->id, st->owner, st->now, st->reason,
						   &c->backoff, &gave_up, &not_before, &error));
			g_assert_no_error(error);
			g_assert_cmpint(gave_up, ==, st->gave_up);
			g_assert_cmpint(not_before, ==, st->gave_up ? 0 : st->not_before);
			break;
		case COMPLETE:
			g_assert_nonnull(held);
			if (!held)
				break;
			g_assert_true(db_job_complete(db, held->id, st->owner, st->result, st->reason,
						      st->now, &error));
			g_assert_no_error(error);
			break;
		case HAND_BACK:
			g_assert_nonnull(held);
			if (!held)
				break;
			g_assert_true(db_job_hand_back(db, held->id, st->owner, &error));
			g_assert_no_error(error);
			g_assert_false(db_job_hand_back(db, held->id, st->owner, &error));
			g_assert_error(error, BOT_ERROR, BOT_ERROR_BUSY); /* nobody's now */
			g_clear_error(&error);
			break;
		case LOST:
			g_assert_nonnull(held);
			if (!held)
				break;
			g_assert_false(db_job_retry(db, held->id, st->owner, st->now, "x",
						    &c->backoff, &gave_up, &not_before, &error));
			g_assert_error(error, BOT_ERROR, BOT_ERROR_BUSY);
			g_clear_error(&error);
			break;
		case COUNTS:
			g_assert_true(db_job_counts(db, st->now, &q, &w, &r, &d, &error));
			g_assert_cmpint(q, ==, st->q);
			g_assert_cmpint(w, ==, st->w);
			g_assert_cmpint(r, ==, st->r);
			g_assert_cmpint(d, ==, st->d);
			break;
		}
	}
	job_row_free(held);
}

/* What status lists: jobs waiting to retry, with their cause, and jobs in error. */
static void test_job_lists(void)
{
	static const struct job_backoff backoff = { 60, 3600, 2 };
	static const struct job_backoff slow = { 1000, 3600, 2 };
	g_autoptr(GError) error = NULL;
	zd_autoptr(db) db = db_open(":memory:", &error);
	g_autoptr(GPtrArray) retrying = NULL;
	g_autoptr(GPtrArray) errors = NULL;
	struct job_row *job = NULL;
	gint64 tree = add_tree_named(db, "t");
	gint64 not_before;
	bool added, gave_up;

	for (int i = 0; i < 3; i++) {
		g_autofree char *c = g_strdup_printf("c%d", i);

		g_assert_true(db_job_add(db, JOB_KIND_BUILD, tree, c, "x86_64:defconfig", JOB_BACKLOG,
					 &added, &error));
	}
	/* c0: one failure, waiting. */
	g_free(claim(db, "w", 100, &job));
	g_assert_true(db_job_retry(db, job->id, "w", 100, "infra-error: bwrap is not installed",
				   &slow, &gave_up, &not_before, &error));
	g_clear_pointer(&job, job_row_free);
	/* c1: a permanent cause. */
	g_free(claim(db, "w", 101, &job));
	g_assert_cmpstr(job->commit, ==, "c1");
	g_assert_true(db_job_complete(db, job->id, "w", JOB_RESULT_ERROR, "commit c1 is gone", 101, &error));
	g_clear_pointer(&job, job_row_free);
	/* c2: two failures, the limit. */
	g_free(claim(db, "w", 102, &job));
	g_assert_true(db_job_retry(db, job->id, "w", 102, "disk full", &backoff, &gave_up, NULL,
				   &error));
	g_clear_pointer(&job, job_row_free);
	g_free(claim(db, "w", 300, &job));
	g_assert_cmpstr(job->commit, ==, "c2");
	g_assert_true(db_job_retry(db, job->id, "w", 300, "disk full", &backoff, &gave_up, NULL,
				   &error));
	g_assert_true(gave_up);
	g_clear_pointer(&job, job_row_free);

	retrying = db_job_list(db, JOB_LIST_RETRYING, 10, &error);
	g_assert_no_error(error);
	g_assert_cmpuint(retrying ? retrying->len : 0, ==, 1);
	if (retrying && retrying->len == 1) {
		job = retrying->pdata[0];
		g_assert_cmpstr(job->tree, ==, "t");
		g_assert_cmpstr(job->commit, ==, "c0");
		g_assert_cmpuint(job->attempts, ==, 1);
		g_assert_cmpuint(job->failures, ==, 1);
		g_assert_cmpint(job->not_before, ==, 1100);
		g_assert_cmpstr(job->last_error, ==, "infra-error: bwrap is not installed");
		g_assert_cmpint(job->result, ==, JOB_RESULT_NONE);
		job = NULL;
	}
	errors = db_job_list(db, JOB_LIST_ERROR, 10, &error);
	g_assert_cmpuint(errors ? errors->len : 0, ==, 2);
	if (errors && errors->len == 2) {
		const struct job_row *newest = errors->pdata[0], *older = errors->pdata[1];

		g_assert_cmpstr(newest->commit, ==, "c2");
		g_assert_cmpint(newest->result, ==, JOB_RESULT_ERROR);
		g_assert_cmpstr(newest->last_error, ==, "gave up after 2 attempts: disk full");
		g_assert_cmpstr(older->commit, ==, "c1");
		g_assert_cmpstr(older->last_error, ==, "commit c1 is gone");
	}
}

/* Every state and kind has the name the store keeps it under, as before they were enums. */
static void test_names(void)
{
	const struct {
		const char *got, *want;
	} names[] = {
		{ db_head_action_name(HEAD_ACTION_QUEUED), "queued" },
		{ db_head_action_name(HEAD_ACTION_SKIPPED), "skipped" },
		{ db_head_action_name(HEAD_ACTION_NONE), "none" },
		{ db_test_state_name(TEST_PENDING), "pending" },
		{ db_test_state_name(TEST_SCHEDULED), "scheduled" },
		{ db_job_kind_name(JOB_KIND_BUILD), "build" },
		{ db_job_kind_name(JOB_KIND_PATCH_TEST), "patch-test" },
		{ db_job_result_name(JOB_RESULT_PASS), "pass" },
		{ db_job_result_name(JOB_RESULT_NEW_DIAGNOSTICS), "new-diagnostics" },
		{ db_job_result_name(JOB_RESULT_FAIL_NEW_ERROR), "fail (new error)" },
		{ db_job_result_name(JOB_RESULT_FAIL_PARENT_FAILING), "fail (already failing in parent)" },
		{ db_job_result_name(JOB_RESULT_INFRA), "infra-error" },
		{ db_job_result_name(JOB_RESULT_SKIPPED), "skipped" },
		{ db_job_result_name(JOB_RESULT_ERROR), "error" },
		{ db_finding_kind_name(FINDING_BUILD_ERROR, CONSOLE_INFRA), "build-error" },
		{ db_finding_kind_name(FINDING_BUILD_WARNING, CONSOLE_INFRA), "build-warning" },
		{ db_finding_kind_name(FINDING_BOOT, CONSOLE_PANIC), "boot-panic" },
		{ db_finding_kind_name(FINDING_BOOT, CONSOLE_WARNING), "boot-WARNING" },
		{ db_finding_state_name(FINDING_OPEN), "open" },
		{ db_finding_state_name(FINDING_FIXED), "fixed" },
		{ db_finding_state_name(FINDING_INCONCLUSIVE), "inconclusive" },
		{ build_status_name(BUILD_OK), "ok" },
		{ build_status_name(BUILD_FAILED), "failed" },
		{ build_status_name(BUILD_INFRA), "infra-error" },
		{ build_status_name(BUILD_SKIPPED), "skipped" },
	};
	enum build_status status;

	for (size_t i = 0; i < G_N_ELEMENTS(names); i++)
		g_assert_cmpstr(names[i].got, ==, names[i].want);
	g_assert_null(db_job_result_name(JOB_RESULT_NONE));
	for (int v = VERDICT_PASS; v <= VERDICT_SKIPPED; v++)
		g_assert_cmpstr(db_job_result_name(db_job_result_of_verdict((enum build_verdict)v)), ==,
				build_verdict_name((enum build_verdict)v));
	for (int k = CONSOLE_BOOT_OK; k <= CONSOLE_INFRA; k++) {
		g_autofree char *want = g_strconcat("boot-", diag_console_kind_name(k), NULL);
		const char *name = db_finding_kind_name(FINDING_BOOT, (enum console_kind)k);

		g_assert_cmpstr(name, ==, want);
		/* Borrowed for good: the same string each time. */
		g_assert_true(name == db_finding_kind_name(FINDING_BOOT, (enum console_kind)k));
	}
	for (int st = BUILD_OK; st <= BUILD_SKIPPED; st++) {
		g_assert_true(build_status_parse(build_status_name((enum build_status)st), &status));
		g_assert_cmpint(status, ==, st);
	}
	g_assert_false(build_status_parse("OK", &status));
}

/* Runs @sql with the sqlite3 shell on @path; returns what it printed, without the final newline. */
static char *shell(const char *path, const char *sql)
{
	const char *argv[] = { "sqlite3", "-bail", path, sql, NULL };
	g_autoptr(GError) error = NULL;
	char *out = NULL;
	int status = 0;

	g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
				   &out, NULL, &status, &error));
	g_assert_no_error(error);
	g_assert_true(g_spawn_check_wait_status(status, NULL));
	return out ? g_strchomp(out) : g_strdup("");
}

static void assert_shell(const char *path, const char *sql, const char *want)
{
	g_autofree char *got = shell(path, sql);

	g_assert_cmpstr(got, ==, want);
}

/*
 * The enums are kept as the text zeroday stored before they were enums:
 * what zeroday writes reads so in the sqlite3 shell, and rows written in
 * that text read back as the enums.
 */
static void test_stored_text(void)
{
	g_autofree char *dir = testlib_mkdir("stored");
	g_autofree char *path = g_build_filename(dir, "z.db", NULL);
	g_autoptr(GError) error = NULL;
	zd_autoptr(db) db = db_open(path, &error);
	char master[] = "master", head[] = "1111111111111111111111111111111111111111";
	char source[] = "t", commit[] = "c1", target[] = "x86_64:defconfig";
	char e1[] = "e1", w1[] = "w1", b1[] = "b1";
	char error_title[] = "error", warning_title[] = "warning", boot_title[] = "WARNING in f";
	struct head_event ev = { .branch = master, .new_head = head, .change = HEAD_NEW,
				 .action = HEAD_ACTION_SKIPPED, .when = 5 };
	struct build_row failed = { .source = source, .commit = commit, .target = target,
				    .status = BUILD_FAILED, .created = 5 };
	struct build_row infra = failed;
	struct boot_row boot = { .image = "bzImage", .host = "h", .kind = CONSOLE_PANIC,
				 .title = "Kernel panic", .fingerprint = "f", .profile = "p" };
	struct boot_row boot_infra = boot;
	struct finding_row findings[] = {
		{ .culprit = commit, .target = target, .kind = FINDING_BUILD_ERROR,
		  .fingerprint = e1, .title = error_title, .confidence = 1.0 },
		{ .culprit = commit, .target = target, .kind = FINDING_BUILD_WARNING,
		  .fingerprint = w1, .title = warning_title, .confidence = 1.0 },
		{ .culprit = commit, .target = target, .kind = FINDING_BOOT,
		  .console = CONSOLE_WARNING, .fingerprint = b1, .title = boot_title,
		  .state = FINDING_INCONCLUSIVE },
	};
	g_autoptr(GPtrArray) open = NULL;
	g_autoptr(GPtrArray) list = NULL;
	g_autoptr(GPtrArray) boots = NULL;
	g_autoptr(GPtrArray) jobs = NULL;
	struct build_row *found = NULL;
	struct job_row *job = NULL;
	gint64 tree;
	bool added;

	g_assert_no_error(error);
	if (!db)
		return;
	tree = add_tree_named(db, "t");
	g_assert_true(db_event_add(db, tree, &ev, &error));
	g_assert_true(db_test_add(db, tree, "master", head, "subject", ev.id, &added, &error));
	g_assert_true(db_test_scheduled(db, tree, head, &error));
	g_assert_true(db_build_add(db, &failed, &error));
	infra.status = BUILD_INFRA;
	g_assert_true(db_build_add(db, &infra, &error));
	g_assert_true(db_verdict_put(db, failed.id, 0, VERDICT_FAIL_NEW_ERROR, "0", &error));
	boot.build_id = boot_infra.build_id = failed.id;
	boot_infra.kind = CONSOLE_INFRA;
	g_assert_true(db_boot_add(db, &boot, &error));
	g_assert_true(db_boot_add(db, &boot_infra, &error));
	g_assert_true(db_job_add(db, JOB_KIND_BUILD, tree, "c1", target, JOB_HEAD, &added, &error));
	g_assert_true(db_job_add(db, JOB_KIND_PATCH_TEST, tree, "c1", target, JOB_PATCH + 1,
				 &added, &error));
	g_free(claim(db, "w", 100, &job));
	g_assert_cmpint(job ? (int)job->kind : -1, ==, JOB_KIND_PATCH_TEST);
	if (job)
		g_assert_true(db_job_complete(db, job->id, "w", JOB_RESULT_FAIL_PARENT_FAILING, NULL,
					      101, &error));
	g_clear_pointer(&job, job_row_free);
	g_assert_true(db_tx_begin(db, &error));
	for (size_t i = 0; i < G_N_ELEMENTS(findings); i++) {
		g_assert_true(db_finding_add(db, tree, &findings[i], &added, &error));
		g_assert_true(added);
	}
	g_assert_true(db_tx_commit(db, &error));
	open = db_finding_open(db, tree, target, &error);
	g_assert_cmpuint(open ? open->len : 0, ==, 2);
	if (open && open->len == 2) {
		const struct finding_row *e = open->pdata[0], *w = open->pdata[1];

		g_assert_cmpint(e->kind, ==, FINDING_BUILD_ERROR);
		g_assert_cmpint(w->kind, ==, FINDING_BUILD_WARNING);
		g_assert_true(db_finding_fixed(db, e->id, "c2", &error));
	}
	g_assert_no_error(error);
	g_clear_pointer(&db, db_close);

	assert_shell(path, "SELECT action FROM head_events", "skipped");
	assert_shell(path, "SELECT state FROM tests", "scheduled");
	assert_shell(path, "SELECT group_concat(status, ',') FROM "
		     "(SELECT status FROM builds ORDER BY id)", "failed,infra-error");
	assert_shell(path, "SELECT verdict FROM verdicts", "fail (new error)");
	assert_shell(path, "SELECT group_concat(kind, ',') FROM "
		     "(SELECT kind FROM boots ORDER BY id)", "panic,infra-error");
	assert_shell(path, "SELECT group_concat(kind || ' ' || coalesce(result, '-'), ',') "
		     "FROM (SELECT * FROM jobs ORDER BY id)",
		     "build -,patch-test fail (already failing in parent)");
	assert_shell(path, "SELECT group_concat(kind || ' ' || state, ',') FROM "
		     "(SELECT * FROM findings ORDER BY id)",
		     "build-error fixed,build-warning open,boot-WARNING inconclusive");

	/* Rows in that text, as an older zeroday wrote them, read back as the enums. */
	g_free(shell(path, "INSERT INTO findings (tree_id, culprit, target, kind, fingerprint, "
		     "title, confidence, state, created) VALUES (1, 'c3', 'x86_64:defconfig', "
		     "'boot-panic', 'p1', 'Kernel panic', 1.0, 'open', 6);"
		     "INSERT INTO boots (build_id, image, host, seed, kind, title, fingerprint, "
		     "seconds, attempts, created, profile) VALUES (1, 'bzImage', 'h', 0, 'bogus', "
		     "'?', 'g', 1.0, 1, 6, 'p');"
		     "UPDATE jobs SET result = 'error', state = 'done' WHERE kind = 'build'"));
	db = db_open(path, &error);
	g_assert_no_error(error);
	if (!db)
		return;
	list = db_finding_list(db, 10, &error);
	g_assert_cmpuint(list ? list->len : 0, ==, 4);
	if (list && list->len == 4) {
		const struct finding_row *panic = list->pdata[0], *boot_warning = list->pdata[1];
		const struct finding_row *warning = list->pdata[2], *fixed = list->pdata[3];

		g_assert_cmpint(panic->kind, ==, FINDING_BOOT);
		g_assert_cmpint(panic->console, ==, CONSOLE_PANIC);
		g_assert_cmpint(panic->state, ==, FINDING_OPEN);
		g_assert_cmpint(boot_warning->kind, ==, FINDING_BOOT);
		g_assert_cmpint(boot_warning->console, ==, CONSOLE_WARNING);
		g_assert_cmpint(boot_warning->state, ==, FINDING_INCONCLUSIVE);
		g_assert_cmpint(warning->kind, ==, FINDING_BUILD_WARNING);
		g_assert_cmpint(warning->state, ==, FINDING_OPEN);
		g_assert_cmpint(fixed->kind, ==, FINDING_BUILD_ERROR);
		g_assert_cmpint(fixed->state, ==, FINDING_FIXED);
		g_assert_cmpstr(fixed->fixed_by, ==, "c2");
	}
	/* Infrastructure errors are not listed; a kind this zeroday does not know is one. */
	boots = db_boot_list(db, failed.id, "p", &error);
	g_assert_cmpuint(boots ? boots->len : 0, ==, 2);
	if (boots && boots->len == 2) {
		g_assert_cmpint(((struct boot_record *)boots->pdata[0])->kind, ==, CONSOLE_PANIC);
		g_assert_cmpint(((struct boot_record *)boots->pdata[1])->kind, ==, CONSOLE_INFRA);
	}
	g_assert_true(db_build_find(db, "t", "c1", target, &found, &error));
	g_assert_cmpint(found ? (int)found->status : -1, ==, BUILD_FAILED);
	build_row_free(found);
	jobs = db_job_list(db, JOB_LIST_ERROR, 10, &error);
	g_assert_cmpuint(jobs ? jobs->len : 0, ==, 1);
	if (jobs && jobs->len == 1) {
		g_assert_cmpint(((struct job_row *)jobs->pdata[0])->kind, ==, JOB_KIND_BUILD);
		g_assert_cmpint(((struct job_row *)jobs->pdata[0])->result, ==, JOB_RESULT_ERROR);
	}
	g_assert_no_error(error);
}

#define C_CULPRIT "1111111111111111111111111111111111111111"
#define C_PARENT "2222222222222222222222222222222222222222"
#define C_HEAD "3333333333333333333333333333333333333333"
#define C_BOUNDARY "4444444444444444444444444444444444444444"
#define C_REVERT "5555555555555555555555555555555555555555"
#define C_SUSPECT "6666666666666666666666666666666666666666"

/*
 * A finding with every field set (the finding fields are stored whatever
 * its kind) and three steps: a boundary, a search step and the revert
 * check. The caller frees the steps (@row->steps) and the suspects.
 */
static void structured_finding(struct finding_row *row)
{
	static const struct finding_step steps[] = {
		{ .role = BISECT_ROLE_BOUNDARY, .commit = (char *)C_PARENT, .result = BISECT_GOOD,
		  .runs = 4, .failures = 0 },
		{ .role = BISECT_ROLE_SEARCH, .commit = (char *)C_CULPRIT, .result = BISECT_BAD,
		  .runs = 2, .failures = 1 },
		{ .role = BISECT_ROLE_REVERT, .commit = (char *)C_CULPRIT, .tested = (char *)C_REVERT,
		  .result = BISECT_SKIP, .runs = 0, .failures = 0 },
	};

	*row = (struct finding_row){
		.branch = (char *)"master", .culprit = (char *)C_CULPRIT,
		.parent = (char *)C_PARENT, .head = (char *)C_HEAD,
		.target = (char *)"x86_64:defconfig", .kind = FINDING_BUILD_ERROR,
		.fingerprint = (char *)"00000000deadbeef",
		.title = (char *)"fs/a.c: implicit declaration of function 'f'",
		.file = (char *)"fs/a.c", .line = 12, .column = 5, .diag_kind = DIAG_ERROR,
		.message = (char *)"implicit declaration of function 'f'",
		.excerpt = (char *)"line one\nline two", .failures = 3, .runs = 8,
		.intermittent = true, .repro_commit = (char *)C_CULPRIT, .repro_boots = 7,
		.suspects = g_strsplit(C_CULPRIT " " C_SUSPECT, " ", -1),
		.reason = (char *)"the revert did not apply", .confidence = 0.75,
		.state = FINDING_INCONCLUSIVE, .rate = 0.375,
		.steps = g_ptr_array_new(),
	};
	for (size_t i = 0; i < G_N_ELEMENTS(steps); i++)
		g_ptr_array_add(row->steps, (struct finding_step *)&steps[i]);
}

/* Checks that @got, read back, holds what structured_finding() sets. */
static void assert_structured(const struct finding_row *got, const struct finding_row *want)
{
	g_assert_cmpstr(got->tree, ==, "t");
	g_assert_cmpstr(got->branch, ==, want->branch);
	g_assert_cmpstr(got->culprit, ==, want->culprit);
	g_assert_cmpstr(got->parent, ==, want->parent);
	g_assert_cmpstr(got->head, ==, want->head);
	g_assert_cmpstr(got->target, ==, want->target);
	g_assert_cmpint(got->kind, ==, want->kind);
	g_assert_cmpstr(got->fingerprint, ==, want->fingerprint);
	g_assert_cmpstr(got->title, ==, want->title);
	g_assert_cmpstr(got->file, ==, want->file);
	g_assert_cmpuint(got->line, ==, want->line);
	g_assert_cmpuint(got->column, ==, want->column);
	g_assert_cmpint(got->diag_kind, ==, want->diag_kind);
	g_assert_cmpstr(got->message, ==, want->message);
	g_assert_cmpstr(got->excerpt, ==, want->excerpt);
	g_assert_cmpuint(got->failures, ==, want->failures);
	g_assert_cmpuint(got->runs, ==, want->runs);
	g_assert_true(got->intermittent == want->intermittent);
	g_assert_cmpstr(got->repro_commit, ==, want->repro_commit);
	g_assert_cmpuint(got->repro_boots, ==, want->repro_boots);
	g_assert_nonnull(got->suspects);
	if (got->suspects)
		g_assert_true(g_strv_equal((const char *const *)got->suspects,
					   (const char *const *)want->suspects));
	g_assert_cmpstr(got->reason, ==, want->reason);
	g_assert_null(got->details);
	g_assert_null(got->reproduce);
	g_assert_null(got->bisect_log);
	g_assert_null(got->fixed_by);
	g_assert_cmpfloat(got->confidence, ==, want->confidence);
	g_assert_cmpint(got->state, ==, want->state);
	g_assert_cmpfloat(got->rate, ==, want->rate);
	g_assert_cmpint(got->created, >, 0);
	g_assert_cmpuint(got->steps ? got->steps->len : 0, ==, want->steps->len);
	for (guint i = 0; got->steps && i < MIN(got->steps->len, want->steps->len); i++) {
		const struct finding_step *g = got->steps->pdata[i], *w = want->steps->pdata[i];

		g_assert_cmpint(g->role, ==, w->role);
		g_assert_cmpstr(g->commit, ==, w->commit);
		g_assert_cmpstr(g->tested, ==, w->tested);
		g_assert_cmpint(g->result, ==, w->result);
		g_assert_cmpuint(g->runs, ==, w->runs);
		g_assert_cmpuint(g->failures, ==, w->failures);
	}
}

/*
 * Schema 10: a database schema 9 wrote keeps its findings' text, gains
 * the finding fields (empty) and the steps, and takes new findings.
 */
static void test_migrate_v9(void)
{
	g_autofree char *fixture = g_build_filename(ZERODAY_SRCDIR, "tests", "data",
						    "schema-v9.sql", NULL);
	g_autofree char *sql = NULL;
	g_autofree char *path = NULL;
	g_autoptr(GError) error = NULL;
	zd_autoptr(db) db = NULL;
	g_autoptr(GPtrArray) list = NULL;
	struct finding_row row;
	bool added = false;

	g_assert_true(g_file_get_contents(fixture, &sql, NULL, NULL));
	path = make_db("v9.db", sql);
	db = db_open(path, &error);
	g_assert_no_error(error);
	if (!db)
		return;
	g_assert_cmpint(db_schema_version(db), ==, DB_SCHEMA_VERSION);
	list = db_finding_list(db, 10, &error);
	g_assert_no_error(error);
	g_assert_cmpuint(list ? list->len : 0, ==, 2);
	if (list && list->len == 2) {
		const struct finding_row *boot = list->pdata[0], *warning = list->pdata[1];

		g_assert_cmpstr(warning->tree, ==, "mainline");
		g_assert_cmpint(warning->kind, ==, FINDING_BUILD_WARNING);
		g_assert_cmpstr(warning->details, ==, "fs/a.c:3:7: warning: unused variable 'x'");
		g_assert_cmpstr(warning->reproduce, ==, "zeroday build mainline " C_CULPRIT
				" --target 'x86_64:defconfig'");
		g_assert_cmpstr(warning->bisect_log, ==, "0000000000000000000000000000000000000000"
				" good (parent)\n" C_CULPRIT " bad\n");
		/* The new fields are empty; the diagnostic's kind follows the finding's. */
		g_assert_null(warning->parent);
		g_assert_null(warning->head);
		g_assert_null(warning->file);
		g_assert_cmpuint(warning->line, ==, 0);
		g_assert_cmpuint(warning->column, ==, 0);
		g_assert_cmpint(warning->diag_kind, ==, DIAG_WARNING);
		g_assert_null(warning->message);
		g_assert_null(warning->excerpt);
		g_assert_cmpuint(warning->failures, ==, 0);
		g_assert_cmpuint(warning->runs, ==, 0);
		g_assert_false(warning->intermittent);
		g_assert_null(warning->repro_commit);
		g_assert_cmpuint(warning->repro_boots, ==, 0);
		g_assert_cmpuint(warning->suspects ? g_strv_length(warning->suspects) : 99, ==, 0);
		g_assert_null(warning->reason);
		g_assert_cmpuint(warning->steps ? warning->steps->len : 99, ==, 0);
		g_assert_cmpint(boot->kind, ==, FINDING_BOOT);
		g_assert_cmpint(boot->console, ==, CONSOLE_PANIC);
		g_assert_cmpint(boot->state, ==, FINDING_FIXED);
		g_assert_cmpstr(boot->fixed_by, ==, C_HEAD);
		g_assert_cmpfloat(boot->rate, ==, 0.5);
		g_assert_cmpstr(boot->details, ==, "2/4 boots at the head (intermittent)\n"
				"Kernel panic - not syncing: VFS");
		g_assert_null(boot->reproduce);
		g_assert_null(boot->bisect_log);
	}
	assert_shell(path, "SELECT group_concat(name, ' ') FROM pragma_table_info('findings') "
		     "WHERE cid >= 16",
		     "parent head file line col diag_kind message excerpt failures runs "
		     "intermittent repro_commit repro_boots suspects reason report_finding dup_of "
		     "fix_subject also");
	assert_shell(path, "SELECT group_concat(name || ' ' || type || ' ' || \"notnull\", ', ') "
		     "FROM pragma_table_info('finding_steps')",
		     "finding_id INTEGER 1, seq INTEGER 1, role TEXT 1, commit_id TEXT 1, "
		     "tested TEXT 0, result TEXT 1, runs INTEGER 1, failures INTEGER 1");
	assert_shell(path, "SELECT \"table\" || ' ' || \"from\" || ' ' || on_delete "
		     "FROM pragma_foreign_key_list('finding_steps')", "findings finding_id CASCADE");

	/* A migrated store takes a structured finding; reopening migrates nothing. */
	structured_finding(&row);
	g_assert_true(db_tx_begin(db, &error));
	g_assert_true(db_finding_add(db, 1, &row, &added, &error));
	g_assert_true(db_tx_commit(db, &error));
	g_assert_true(added);
	g_clear_pointer(&db, db_close);
	db = db_open(path, &error);
	g_assert_no_error(error);
	g_clear_pointer(&list, g_ptr_array_unref);
	list = db ? db_finding_list(db, 10, &error) : NULL;
	g_assert_cmpuint(list ? list->len : 0, ==, 3);
	if (list && list->len == 3)
		g_assert_cmpuint(((struct finding_row *)list->pdata[0])->steps->len, ==, 3);
	g_strfreev(row.suspects);
	g_ptr_array_unref(row.steps);
}

/*
 * A finding's fields and steps go in and come out as they were, by both
 * queries; its steps are stored once, and go with its tree.
 */
static void test_finding_fields(void)
{
	g_autofree char *dir = testlib_mkdir("fields");
	g_autofree char *path = g_build_filename(dir, "z.db", NULL);
	g_autoptr(GError) error = NULL;
	zd_autoptr(db) db = db_open(path, &error);
	g_autoptr(GPtrArray) list = NULL;
	g_autoptr(GPtrArray) open = NULL;
	struct finding_row row, bare = { 0 };
	bool added = false;
	gint64 tree;

	g_assert_no_error(error);
	if (!db)
		return;
	tree = add_tree_named(db, "t");
	structured_finding(&row);
	g_assert_true(db_tx_begin(db, &error));
	g_assert_true(db_finding_add(db, tree, &row, &added, &error));
	g_assert_true(added);
	/* Seen again (another head, say): the same finding, and its steps are not doubled. */
	g_assert_true(db_finding_add(db, tree, &row, &added, &error));
	g_assert_false(added);
	/* The least a caller sets: no steps, no suspects. */
	bare.culprit = (char *)C_HEAD;
	bare.target = (char *)"x86_64:defconfig";
	bare.kind = FINDING_BOOT;
	bare.console = CONSOLE_OOPS;
	bare.fingerprint = (char *)"ffff";
	bare.title = (char *)"Oops";
	g_assert_true(db_finding_add(db, tree, &bare, &added, &error));
	g_assert_true(added);
	g_assert_true(db_tx_commit(db, &error));
	g_assert_no_error(error);

	list = db_finding_list(db, 10, &error);
	g_assert_no_error(error);
	g_assert_cmpuint(list ? list->len : 0, ==, 2);
	if (list && list->len == 2) {
		const struct finding_row *b = list->pdata[0];

		assert_structured(list->pdata[1], &row);
		g_assert_cmpuint(b->steps->len, ==, 0);
		g_assert_cmpuint(g_strv_length(b->suspects), ==, 0);
		g_assert_null(b->message);
		g_assert_cmpint(b->diag_kind, ==, DIAG_WARNING);
		g_assert_cmpfloat(b->rate, ==, 1.0);
	}
	/* Open, it is loaded the same by db_finding_open(), the tree's name included. */
	g_free(shell(path, "UPDATE findings SET state = 'open' WHERE id = 1"));
	row.state = FINDING_OPEN;
	open = db_finding_open(db, tree, "x86_64:defconfig", &error);
	g_assert_no_error(error);
	g_assert_cmpuint(open ? open->len : 0, ==, 2);
	if (open && open->len == 2)
		assert_structured(open->pdata[0], &row);

	/* Stored as the engine's names; the suspects space-separated. */
	assert_shell(path, "SELECT group_concat(seq || ' ' || role || ' ' || commit_id || ' ' || "
		     "coalesce(tested, '-') || ' ' || result || ' ' || failures || '/' || runs, ',') "
		     "FROM (SELECT * FROM finding_steps ORDER BY seq)",
		     "0 boundary " C_PARENT " - good 0/4,"
		     "1 search " C_CULPRIT " - bad 1/2,"
		     "2 revert " C_CULPRIT " " C_REVERT " skip 0/0");
	assert_shell(path, "SELECT diag_kind || ' ' || suspects || ' ' || intermittent FROM findings "
		     "WHERE id = 1", "error " C_CULPRIT " " C_SUSPECT " 1");
	assert_shell(path, "SELECT coalesce(diag_kind, '-') || ' ' || coalesce(suspects, '-') "
		     "FROM findings WHERE id = 2", "- -");

	/* A tree's removal takes its findings and their steps. */
	g_assert_true(db_tree_delete(db, "t", &error));
	g_assert_no_error(error);
	assert_shell(path, "SELECT count(*) FROM findings", "0");
	assert_shell(path, "SELECT count(*) FROM finding_steps", "0");
	g_strfreev(row.suspects);
	g_ptr_array_unref(row.steps);
}

/*
 * A store that cannot grow (a full disk; here a file size limit, which
 * sqlite sees as a failed write) fails with BOT_ERROR_TEMPORARY, and
 * works again once it can.
 */
static void test_full(void)
{
	g_autofree char *dir = testlib_mkdir("full");
	g_autofree char *path = g_build_filename(dir, "z.db", NULL);
	g_autofree char *wal = g_strconcat(path, "-wal", NULL);
	g_autoptr(GError) error = NULL;
	zd_autoptr(db) db = db_open(path, &error);
	zd_autoptr(tree_row) big = new_tree("big");
	struct rlimit saved, limit;
	struct stat st_db, st_wal;
	bool refused;

	g_assert_no_error(error);
	if (!db)
		return;
	add_tree_named(db, "small");
	g_free(big->url);
	big->url = g_strnfill(512 * 1024, 'x');
	g_assert_cmpint(stat(path, &st_db), ==, 0);
	g_assert_cmpint(stat(wal, &st_wal), ==, 0);
	g_assert_cmpint(getrlimit(RLIMIT_FSIZE, &saved), ==, 0);
	signal(SIGXFSZ, SIG_IGN);
	limit = saved;
	limit.rlim_cur = (rlim_t)MAX(st_db.st_size, st_wal.st_size) + 4096;
	g_assert_cmpint(setrlimit(RLIMIT_FSIZE, &limit), ==, 0);
	refused = !db_tree_insert(db, big, &error);
	g_assert_cmpint(setrlimit(RLIMIT_FSIZE, &saved), ==, 0);
	signal(SIGXFSZ, SIG_DFL);
	g_assert_true(refused);
	g_assert_error(error, BOT_ERROR, BOT_ERROR_TEMPORARY);
	g_clear_error(&error);
	g_assert_true(db_tree_insert(db, big, &error));
	g_assert_no_error(error);
}

/*
 * The outbox: one mail of a kind per finding, its lists kept in order,
 * states and failures recorded, a sent row not sent again.
 */
static void test_outbox(void)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(db) db = db_open(":memory:", &error);
	g_autoptr(GPtrArray) queued = NULL;
	g_autoptr(GPtrArray) all = NULL;
	zd_autoptr(outbox_row) got = NULL;
	struct finding_row f = { 0 };
	char *refs[] = { (char *)"a@x.org", (char *)"b@x.org", NULL };
	char *rcpt[] = { (char *)"to:Ann <ann@x.org>", (char *)"cc:bob@x.org", NULL };
	struct outbox_row report = {
		.kind = OUTBOX_REPORT, .message_id = (char *)"zeroday-f1-1@x.org",
		.subject = (char *)"[t] boom", .recipients = rcpt, .raw = (char *)"raw text",
		.state = OUTBOX_QUEUED, .created = 1700000000,
	};
	struct outbox_row again = report;
	struct outbox_row fixed = report;
	struct outbox_row broken = { .kind = OUTBOX_REPORT, .message_id = (char *)"zeroday-x@x.org",
				     .subject = (char *)"(not rendered)", .state = OUTBOX_ERROR,
				     .last_error = (char *)"a template", .created = 1700000001 };
	bool added = false;
	gint64 tree;

	g_assert_no_error(error);
	if (!db)
		return;
	tree = add_tree_named(db, "t");
	f.culprit = (char *)C_HEAD;
	f.target = (char *)"x86_64:defconfig";
	f.fingerprint = (char *)"0001";
	f.title = (char *)"boom";
	g_assert_true(db_tx_begin(db, &error));
	g_assert_true(db_finding_add(db, tree, &f, &added, &error));
	g_assert_true(added);
	g_assert_cmpint(f.id, >, 0);
	report.finding_id = f.id;
	g_assert_true(db_outbox_add(db, &report, &added, &error));
	g_assert_true(added);
	g_assert_cmpint(report.id, >, 0);
	/* A second report of the same finding is left out, whatever its Message-ID. */
	again.finding_id = f.id;
	again.message_id = (char *)"zeroday-f1-2@x.org";
	g_assert_true(db_outbox_add(db, &again, &added, &error));
	g_assert_false(added);
	fixed.finding_id = f.id;
	fixed.kind = OUTBOX_FIXED;
	fixed.message_id = (char *)"zeroday-f1-fixed@x.org";
	fixed.in_reply_to = (char *)"zeroday-f1-1@x.org";
	fixed.references = refs;
	g_assert_true(db_outbox_add(db, &fixed, &added, &error));
	g_assert_true(added);
	g_assert_true(db_outbox_add(db, &broken, &added, &error));
	g_assert_true(added);
	g_assert_true(db_tx_commit(db, &error));

	queued = db_outbox_list(db, OUTBOX_QUEUED, 100, &error);
	g_assert_no_error(error);
	g_assert_cmpuint(queued ? queued->len : 0, ==, 2);
	got = db_outbox_of_finding(db, f.id, OUTBOX_FIXED, &error);
	g_assert_no_error(error);
	g_assert_nonnull(got);
	if (got) {
		g_assert_cmpstr(got->in_reply_to, ==, "zeroday-f1-1@x.org");
		g_assert_cmpstrv(got->references, refs);
		g_assert_cmpstrv(got->recipients, rcpt);
		g_assert_cmpstr(got->raw, ==, "raw text");
		g_assert_cmpint(got->state, ==, OUTBOX_QUEUED);
	}
	/* A try, cut short: "sending", and due again at once. */
	g_assert_true(db_outbox_attempt(db, report.id, &error));
	g_clear_pointer(&queued, g_ptr_array_unref);
	queued = db_outbox_due(db, 1700000050, 100, &error);
	g_assert_cmpuint(queued ? queued->len : 0, ==, 2);
	if (queued && queued->len)
		g_assert_cmpint(((struct outbox_row *)queued->pdata[0])->state, ==, OUTBOX_SENDING);
	/* A failed try waits for its next time. */
	g_assert_true(db_outbox_settle(db, report.id, OUTBOX_QUEUED, 0, 1700000090, NULL,
				       "connection refused", &error));
	g_clear_pointer(&queued, g_ptr_array_unref);
	queued = db_outbox_due(db, 1700000050, 100, &error);
	g_assert_cmpuint(queued ? queued->len : 0, ==, 1);
	g_assert_true(db_outbox_attempt(db, report.id, &error));
	g_assert_true(db_outbox_settle(db, report.id, OUTBOX_SENT, 1700000100, 0, "/o/new/1", NULL,
				       &error));
	all = db_outbox_list(db, -1, 100, &error);
	g_assert_no_error(error);
	g_assert_cmpuint(all ? all->len : 0, ==, 3);
	if (all && all->len == 3) {
		const struct outbox_row *r = all->pdata[0], *e = all->pdata[2];

		g_assert_cmpint(r->state, ==, OUTBOX_SENT);
		g_assert_cmpstr(r->path, ==, "/o/new/1");
		g_assert_cmpint(r->sent, ==, 1700000100);
		g_assert_cmpuint(r->attempts, ==, 2);
		g_assert_null(r->last_error);
		g_assert_cmpint(e->state, ==, OUTBOX_ERROR);
		g_assert_null(e->raw);
		g_assert_cmpstr(e->last_error, ==, "a template");
		g_assert_cmpint(e->finding_id, ==, 0);
	}

	/* A reply's In-Reply-To and References find the finding. */
	{
		const char *const refs_none[] = { "<nobody@x.org>", NULL };
		const char *const refs_fixed[] = { "<unknown@x.org>", " <zeroday-f1-fixed@x.org> ",
						   "zeroday-f1-1@x.org", NULL };
		const char *const refs_broken[] = { "zeroday-x@x.org", NULL };
		gint64 found = -1;

		g_assert_true(db_outbox_finding_of(db, refs_none, &found, &error));
		g_assert_cmpint(found, ==, 0);
		g_assert_true(db_outbox_finding_of(db, refs_fixed, &found, &error));
		g_assert_cmpint(found, ==, f.id);
		/* A mail about no finding finds none. */
		g_assert_true(db_outbox_finding_of(db, refs_broken, &found, &error));
		g_assert_cmpint(found, ==, 0);
	}

	/*
	 * Recipients one by one: added once whatever the case, counted
	 * per address and per mail, held ones listed by address.
	 */
	{
		g_autoptr(GPtrArray) rcpts = NULL;
		g_auto(GStrv) held = NULL;
		g_autoptr(GArray) held_ids = NULL;
		gint64 n = -1;

		g_assert_true(db_rcpt_add(db, report.id, "Ann@X.org", &error));
		g_assert_true(db_rcpt_add(db, report.id, "bob@x.org", &error));
		g_assert_true(db_rcpt_add(db, report.id, "bob@x.org", &error));
		g_assert_true(db_rcpt_add(db, fixed.id, "ann@x.org", &error));
		rcpts = db_rcpt_list(db, report.id, &error);
		g_assert_no_error(error);
		g_assert_cmpuint(rcpts ? rcpts->len : 0, ==, 2);
		g_assert_true(db_rcpt_set(db, report.id, "ann@x.org", RCPT_SENT, 1700000100, "250 ok",
					  0, &error));
		g_assert_true(db_rcpt_set(db, report.id, "bob@x.org", RCPT_REFUSED, 1700000100,
					  "550 no such user", 0, &error));
		g_assert_true(db_rcpt_set(db, fixed.id, "ann@x.org", RCPT_HELD, 1700000100, NULL, 0,
					  &error));
		g_assert_true(db_rcpt_count_sent(db, "ANN@x.org", 1700000000, &n, &error));
		g_assert_cmpint(n, ==, 1);
		g_assert_true(db_rcpt_count_sent(db, "ann@x.org", 1700000100, &n, &error));
		g_assert_cmpint(n, ==, 0);
		g_assert_true(db_rcpt_count_sent(db, NULL, 1700000000, &n, &error));
		g_assert_cmpint(n, ==, 1);
		g_assert_true(db_rcpt_count(db, report.id, RCPT_REFUSED, &n, &error));
		g_assert_cmpint(n, ==, 1);
		held = db_rcpt_held_addresses(db, &error);
		g_assert_no_error(error);
		g_assert_cmpstr(held ? held[0] : NULL, ==, "ann@x.org");
		g_assert_cmpstr(held && held[0] ? held[1] : "", ==, NULL);
		held_ids = db_rcpt_held_for(db, "Ann@x.org", &error);
		g_assert_cmpuint(held_ids ? held_ids->len : 0, ==, 1);
		if (held_ids && held_ids->len)
			g_assert_cmpint(g_array_index(held_ids, gint64, 0), ==, fixed.id);
	}
	g_assert_null(db_outbox_of_finding(db, f.id + 1, OUTBOX_REPORT, &error));
	g_assert_no_error(error);
}

/* Transactions nest as savepoints: an inner rollback undoes only its own work. */
static void test_nested_tx(void)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(db) db = db_open(":memory:", &error);
	g_autoptr(GPtrArray) trees = NULL;

	g_assert_true(db_tx_begin(db, &error));
	add_tree_named(db, "outer");
	g_assert_true(db_tx_begin(db, &error));
	add_tree_named(db, "refused");
	db_tx_rollback(db);
	g_assert_true(db_tx_begin(db, &error));
	add_tree_named(db, "kept");
	g_assert_true(db_tx_commit(db, &error));
	g_assert_true(db_tx_commit(db, &error));
	trees = db_tree_list(db, &error);
	g_assert_nonnull(trees);
	g_assert_cmpuint(trees->len, ==, 2);
	g_clear_pointer(&trees, g_ptr_array_unref);
	/* An outer rollback takes the committed inner work with it. */
	g_assert_true(db_tx_begin(db, &error));
	g_assert_true(db_tx_begin(db, &error));
	add_tree_named(db, "gone");
	g_assert_true(db_tx_commit(db, &error));
	db_tx_rollback(db);
	trees = db_tree_list(db, &error);
	g_assert_cmpuint(trees->len, ==, 2);
	/* And a plain transaction works after all that. */
	g_assert_true(db_tx_begin(db, &error));
	g_assert_true(db_tx_commit(db, &error));
	g_assert_no_error(error);
}

/* A rerun: a done job queued again, a running one left alone, a new one added. */
static void test_job_requeue(void)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(db) db = db_open(":memory:", &error);
	gint64 tree = add_tree_named(db, "t");
	gint64 id = 0, again = 0;
	struct job_row *job = NULL;
	gint64 q, wt, r, d;

	g_assert_true(db_job_requeue(db, JOB_KIND_RERUN, tree, "c1", "x86_64:defconfig", JOB_PATCH,
				     &id, &error));
	g_assert_cmpint(id, >, 0);
	g_free(claim(db, "w1", 100, &job));
	g_assert_nonnull(job);
	/* Running: asked again, it stays the same running job. */
	g_assert_true(db_job_requeue(db, JOB_KIND_RERUN, tree, "c1", "x86_64:defconfig", JOB_PATCH,
				     &again, &error));
	g_assert_cmpint(again, ==, id);
	g_assert_true(db_job_counts(db, 101, &q, &wt, &r, &d, &error));
	g_assert_cmpint(r, ==, 1);
	g_assert_true(db_job_complete(db, job->id, "w1", JOB_RESULT_PASS, NULL, 102, &error));
	job_row_free(job);
	/* Done: it runs again, from a clean slate. */
	g_assert_true(db_job_requeue(db, JOB_KIND_RERUN, tree, "c1", "x86_64:defconfig", JOB_PATCH,
				     &again, &error));
	g_assert_cmpint(again, ==, id);
	g_assert_true(db_job_counts(db, 103, &q, &wt, &r, &d, &error));
	g_assert_cmpint(q, ==, 1);
	g_assert_cmpint(d, ==, 0);
	g_assert_no_error(error);
}

/* A blacklisted branch: its pending tests cancelled and queued jobs dropped, others kept. */
static void test_branch_cancel(void)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(db) db = db_open(":memory:", &error);
	gint64 tree = add_tree_named(db, "t");
	unsigned jobs = 9, reports = 9;
	gint64 q, wt, r, d, pending;
	bool added;

	char scratch[] = "scratch/x", master[] = "master";
	struct head_event ev1 = { .branch = scratch, .new_head = (char *)"c1", .change = HEAD_NEW,
				  .action = HEAD_ACTION_QUEUED, .when = 1 };
	struct head_event ev2 = { .branch = master, .new_head = (char *)"c2", .change = HEAD_NEW,
				  .action = HEAD_ACTION_QUEUED, .when = 1 };

	g_assert_true(db_event_add(db, tree, &ev1, &error));
	g_assert_true(db_event_add(db, tree, &ev2, &error));
	g_assert_true(db_test_add(db, tree, scratch, "c1", "s", ev1.id, &added, &error));
	g_assert_true(db_test_add(db, tree, master, "c2", "s", ev2.id, &added, &error));
	g_assert_true(db_job_add(db, JOB_KIND_BUILD, tree, "c1", "x86_64:defconfig", JOB_HEAD, &added,
				 &error));
	g_assert_true(db_job_add(db, JOB_KIND_BUILD, tree, "c2", "x86_64:defconfig", JOB_HEAD, &added,
				 &error));
	g_assert_true(db_branch_cancel(db, tree, "scratch/*", &jobs, &reports, &error));
	g_assert_cmpuint(jobs, ==, 1);
	g_assert_cmpuint(reports, ==, 0);
	g_assert_true(db_job_counts(db, 100, &q, &wt, &r, &d, &error));
	g_assert_cmpint(q, ==, 1);
	g_assert_true(db_test_count_pending(db, &pending, &error));
	g_assert_cmpint(pending, ==, 1);
	g_assert_no_error(error);
}

/* Command mails, their commands, subscriptions and mutes. */
static void test_commands(void)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(db) db = db_open(":memory:", &error);
	zd_autoptr(subscription_row) sub = g_new0(struct subscription_row, 1);
	zd_autoptr(command_row) row = g_new0(struct command_row, 1);
	zd_autoptr(mail_row) mail = g_new0(struct mail_row, 1);
	zd_autoptr(subscription_row) got = NULL;
	g_autoptr(GPtrArray) waiting = NULL;
	enum command_mail_state st;
	bool added, found, muted;
	gint64 count;

	mail->message_id = g_strdup("m1");
	mail->hash = g_strdup("x");
	mail->source = g_strdup("s");
	mail->received = 1;
	mail->state = MAIL_DONE;
	mail->size = 1;
	g_assert_true(db_mail_add(db, mail, "x", 1, NULL, &added, &error));
	g_assert_true(db_command_mail_add(db, mail->id, "a@example.org", 100, COMMAND_MAIL_RUNNING,
					  NULL, &error));
	row->mail_id = mail->id;
	row->n = 1;
	row->line = g_strdup("#zeroday rerun");
	row->verb = g_strdup("rerun");
	row->state = COMMAND_RUNNING;
	row->job_id = 7;
	g_assert_true(db_command_add(db, row, &error));
	waiting = db_command_waiting(db, 7, 0, &error);
	g_assert_cmpuint(waiting->len, ==, 1);
	g_clear_pointer(&waiting, g_ptr_array_unref);
	/* Its job is gone (no such job): stale. */
	waiting = db_command_stale(db, &error);
	g_assert_cmpuint(waiting->len, ==, 1);
	g_assert_true(db_command_mail_count(db, "a@example.org", 50, &count, &error));
	g_assert_cmpint(count, ==, 1);
	g_assert_true(db_command_mail_set(db, mail->id, COMMAND_MAIL_SILENT, "a loop", 0, &error));
	g_assert_true(db_command_mail_count(db, NULL, 50, &count, &error));
	g_assert_cmpint(count, ==, 0);
	g_assert_true(db_command_mail_state(db, mail->id, &st, &found, &error));
	g_assert_true(found);
	g_assert_cmpint(st, ==, COMMAND_MAIL_SILENT);

	sub->token_hash = g_strdup("h1");
	sub->sender = g_strdup("a@example.org");
	sub->name = g_strdup("net");
	sub->url = g_strdup("https://x/net");
	sub->pattern = g_strdup("*");
	sub->policy = TREE_NON_REBASABLE;
	sub->created = 10;
	sub->expires = 20;
	g_assert_true(db_subscription_add(db, sub, &error));
	got = db_subscription_get(db, "h1", &error);
	g_assert_nonnull(got);
	g_assert_cmpstr(got->url, ==, "https://x/net");
	g_assert_cmpint(got->policy, ==, TREE_NON_REBASABLE);
	g_assert_false(got->used);
	g_assert_true(db_subscription_use(db, "h1", &error));
	g_clear_pointer(&got, subscription_row_free);
	got = db_subscription_get(db, "h1", &error);
	g_assert_true(got->used);
	g_assert_null(db_subscription_get(db, "nope", &error));

	g_assert_true(db_mute_add(db, "a@example.org", "root@x", 5, &error));
	g_assert_true(db_mute_add(db, "a@example.org", "root@x", 6, &error));
	g_assert_true(db_muted(db, "a@example.org", "root@x", &muted, &error));
	g_assert_true(muted);
	g_assert_true(db_muted(db, "b@example.org", "root@x", &muted, &error));
	g_assert_false(muted);
	g_assert_no_error(error);
}

/*
 * What `zeroday status` reads for operations: the jobs running and
 * queued with their ages, each mail source's last read, the outbox in
 * numbers, and the response times, from rows written as zeroday writes
 * them (the sqlite3 shell here, for the timestamps).
 */
static void test_ops_status(void)
{
	g_autofree char *dir = testlib_mkdir("ops");
	g_autofree char *path = g_build_filename(dir, "z.db", NULL);
	g_autoptr(GError) error = NULL;
	zd_autoptr(db) db = db_open(path, &error);
	g_autoptr(GPtrArray) active = NULL;
	g_autoptr(GPtrArray) sources = NULL;
	g_autoptr(GArray) push = NULL;
	g_autoptr(GArray) post = NULL;
	struct outbox_counts counts;
	const struct source_row *src;
	const struct job_row *j;
	gint64 oldest = -1;

	g_assert_no_error(error);
	if (!db)
		return;
	g_free(shell(path,
		"INSERT INTO trees (id, name, url, policy, created) VALUES (1, 't', 'u', 'rebasable', 0);"
		/* Jobs: one running, two queued (one waiting to retry), one done. */
		"INSERT INTO jobs (id, kind, tree_id, commit_id, target, priority, state, created) VALUES "
		"(1, 'build', 1, 'c1', 'x', 0, 'done', 100), (2, 'build', 1, 'c2', 'x', 0, 'queued', 300), "
		"(3, 'build', 1, 'c3', 'x', 0, 'running', 400), (4, 'build', 1, 'c4', 'x', 0, 'queued', 200);"
		"UPDATE jobs SET failures = 1, not_before = 9999 WHERE id = 4;"
		/* Three commits a poll selected, at 1000, 2000 and 3000. */
		"INSERT INTO tests (tree_id, commit_id, branch, state, queued) VALUES "
		"(1, 'h1', 'm', 'scheduled', 1000), (1, 'h2', 'm', 'scheduled', 2000), "
		"(1, 'h3', 'm', 'scheduled', 3000);"
		/* Findings at h1 and h2, and one without a head (an older row). */
		"INSERT INTO findings (id, tree_id, culprit, target, kind, fingerprint, title, "
		"confidence, created, head) VALUES "
		"(1, 1, 'k1', 'x', 'build-error', 'f1', 'a', 1, 0, 'h1'), "
		"(2, 1, 'k2', 'x', 'build-error', 'f2', 'b', 1, 0, 'h2'), "
		"(3, 1, 'k3', 'x', 'build-error', 'f3', 'c', 1, 0, NULL), "
		"(4, 1, 'k4', 'x', 'build-error', 'f4', 'd', 1, 0, 'h3');"
		/*
		 * Their reports: h1's sent 600 s after the poll, h2's 60 s after;
		 * the headless one sent, h3's still queued; one report sent before
		 * the window.
		 */
		"INSERT INTO outbox (finding_id, kind, message_id, subject, recipients, state, "
		"created, sent) VALUES "
		"(1, 'report', 'r1', 's', '', 'sent', 1500, 1600), "
		"(2, 'report', 'r2', 's', '', 'sent', 2050, 2060), "
		"(3, 'report', 'r3', 's', '', 'sent', 2050, 2070), "
		"(4, 'report', 'r4', 's', '', 'queued', 3100, 0), "
		"(NULL, 'test', 'x1', 's', '', 'error', 3200, 0), "
		"(NULL, 'digest', 'x2', 's', '', 'held', 3300, 0);"
		/*
		 * A series of two mails read at 5000 and 5030 whose reply, on
		 * patch 2, was sent at 5300 (and a second reply later); a series
		 * with no reply; a command reply, which is not a series reply.
		 */
		"INSERT INTO mails (id, message_id, hash, source, received, state, size, raw) VALUES "
		"(1, 'p1@x', 'h', 's', 5030, 'done', 1, ''), (2, 'p2@x', 'h', 's', 5000, 'done', 1, ''), "
		"(3, 'q1@x', 'h', 's', 5000, 'done', 1, ''), (4, 'cmd@x', 'h', 's', 5000, 'done', 1, '');"
		"INSERT INTO series (id, sender, version, total, state, created, last_part) VALUES "
		"(1, 'a', 1, 2, 'tested', 5000, 5030), (2, 'b', 1, 1, 'testing', 5000, 5000);"
		"INSERT INTO series_parts (series_id, n, mail_id, message_id) VALUES "
		"(1, 1, 1, 'p1@x'), (1, 2, 2, 'p2@x'), (2, 1, 3, 'q1@x');"
		"INSERT INTO outbox (kind, message_id, in_reply_to, subject, recipients, state, "
		"created, sent) VALUES "
		"('series', 's1', 'p2@x', 's', '', 'sent', 5300, 5300), "
		"('series', 's2', 'p1@x', 's', '', 'sent', 5900, 5900), "
		"('command', 'c1', 'cmd@x', 's', '', 'sent', 5010, 5010);"));

	active = db_job_list(db, JOB_LIST_ACTIVE, 10, &error);
	g_assert_no_error(error);
	g_assert_nonnull(active);
	if (!active)
		return;
	/* Running first, then queued by age; the done job is not there. */
	g_assert_cmpuint(active->len, ==, 3);
	j = active->pdata[0];
	g_assert_cmpint(j->id, ==, 3);
	g_assert_true(j->running);
	g_assert_cmpint(j->created, ==, 400);
	j = active->pdata[1];
	g_assert_cmpint(j->id, ==, 4);
	g_assert_false(j->running);
	g_assert_cmpint(j->created, ==, 200);
	g_assert_cmpint(((const struct job_row *)active->pdata[2])->id, ==, 2);
	g_assert_true(db_job_oldest_queued(db, &oldest, &error));
	g_assert_cmpint(oldest, ==, 200);

	/* A source read: the time kept through a failure, the failure cleared by a success. */
	g_assert_true(db_source_read(db, "imap://u@h/INBOX", 7000, NULL, &error));
	g_assert_true(db_source_read(db, "imap://u@h/INBOX", 7100, "connection refused", &error));
	g_assert_true(db_source_read(db, "maildir:/m", 7050, NULL, &error));
	g_assert_true(db_source_read(db, "maildir:/never", 7060, "no such folder", &error));
	g_assert_no_error(error);
	sources = db_source_list(db, &error);
	g_assert_no_error(error);
	g_assert_nonnull(sources);
	if (!sources)
		return;
	g_assert_cmpuint(sources->len, ==, 3);
	src = sources->pdata[0];
	g_assert_cmpstr(src->source, ==, "imap://u@h/INBOX");
	g_assert_cmpint(src->last_read, ==, 7000);
	g_assert_cmpint(src->failed, ==, 7100);
	g_assert_cmpstr(src->last_error, ==, "connection refused");
	src = sources->pdata[2];
	g_assert_cmpstr(src->source, ==, "maildir:/never");
	g_assert_cmpint(src->last_read, ==, 0);
	g_assert_cmpint(src->failed, ==, 7060);
	g_assert_true(db_source_read(db, "imap://u@h/INBOX", 7200, NULL, &error));
	assert_shell(path, "SELECT last_read, failed, quote(last_error) FROM mail_sources "
		     "WHERE source = 'imap://u@h/INBOX'", "7200|0|NULL");

	g_assert_true(db_outbox_counts(db, &counts, &error));
	g_assert_no_error(error);
	g_assert_cmpint(counts.queued, ==, 1);
	g_assert_cmpint(counts.held, ==, 1);
	g_assert_cmpint(counts.sent, ==, 6);
	g_assert_cmpint(counts.failed, ==, 1);
	g_assert_cmpint(counts.oldest_queued, ==, 3100);

	/* Only the reports with a polled head, sent in the window. */
	push = db_latency_push_report(db, 0, &error);
	g_assert_no_error(error);
	g_assert_nonnull(push);
	if (!push)
		return;
	g_assert_cmpuint(push->len, ==, 2);
	g_assert_cmpint(MIN(g_array_index(push, gint64, 0), g_array_index(push, gint64, 1)), ==, 60);
	g_assert_cmpint(MAX(g_array_index(push, gint64, 0), g_array_index(push, gint64, 1)), ==, 600);
	g_clear_pointer(&push, g_array_unref);
	push = db_latency_push_report(db, 2000, &error);
	g_assert_no_error(error);
	g_assert_cmpuint(push ? push->len : 0, ==, 1);

	/* One series replied: from its first mail read (5000) to its first reply (5300). */
	post = db_latency_post_reply(db, 0, &error);
	g_assert_no_error(error);
	g_assert_nonnull(post);
	if (!post)
		return;
	g_assert_cmpuint(post->len, ==, 1);
	g_assert_cmpint(g_array_index(post, gint64, 0), ==, 300);
	g_clear_pointer(&post, g_array_unref);
	post = db_latency_post_reply(db, 5301, &error);
	g_assert_no_error(error);
	g_assert_cmpuint(post ? post->len : 1, ==, 0);
}

/*
 * A mail's raw text and its parse, blobs both, read back byte for byte;
 * a mail without a parse reads as none, and can be given one later; an
 * empty text (a mail refused unread) is empty, not missing.
 */
static void test_mail_blobs(void)
{
	static const char raw[] = "Message-ID: <a@example.org>\n\nbody\0with a NUL\n";
	static const guint8 packed[] = { 1, 0, 2, 0xff, 0 };
	g_autoptr(GError) error = NULL;
	zd_autoptr(db) db = db_open(":memory:", &error);
	g_autoptr(GBytes) parse = g_bytes_new(packed, sizeof(packed));
	g_autoptr(GBytes) got = NULL;
	struct mail_row a = { .message_id = (char *)"a@example.org", .hash = (char *)"h1",
			      .source = (char *)"s", .received = 1, .state = MAIL_NEW };
	struct mail_row b = a, e = a;
	g_autofree char *text = NULL;
	gsize len = 99;
	bool added = false;

	g_assert_no_error(error);
	if (!db)
		return;
	g_assert_true(db_mail_add(db, &a, raw, sizeof(raw) - 1, parse, &added, &error));
	g_assert_true(added);
	b.hash = (char *)"h2";
	g_assert_true(db_mail_add(db, &b, raw, sizeof(raw) - 1, NULL, &added, &error));
	g_assert_true(added);
	e.hash = (char *)"h3";
	e.size = 12345;
	e.state = MAIL_QUARANTINED;
	g_assert_true(db_mail_add(db, &e, "", 0, NULL, &added, &error));
	g_assert_true(added);
	g_assert_cmpint(e.size, ==, 12345);
	/* The same pair again: nothing added, nothing changed. */
	g_assert_true(db_mail_add(db, &b, "other", 5, parse, &added, &error));
	g_assert_false(added);
	g_assert_no_error(error);

	text = db_mail_raw(db, a.id, &len, &error);
	g_assert_cmpmem(text, len, raw, sizeof(raw) - 1);
	g_clear_pointer(&text, g_free);
	text = db_mail_raw(db, e.id, &len, &error);
	g_assert_no_error(error);
	g_assert_cmpuint(len, ==, 0);
	g_assert_cmpstr(text, ==, "");
	g_assert_true(db_mail_parse(db, a.id, &got, &error));
	g_assert_true(got && g_bytes_equal(got, parse));
	g_clear_pointer(&got, g_bytes_unref);
	g_assert_true(db_mail_parse(db, b.id, &got, &error));
	g_assert_null(got);
	g_assert_true(db_mail_set_parse(db, b.id, parse, &error));
	g_assert_true(db_mail_parse(db, b.id, &got, &error));
	g_assert_true(got && g_bytes_equal(got, parse));
	g_clear_pointer(&got, g_bytes_unref);
	g_assert_no_error(error);
	g_assert_false(db_mail_parse(db, 999, &got, &error));
	g_assert_error(error, BOT_ERROR, BOT_ERROR_NOT_FOUND);
	g_assert_null(got);
	g_clear_error(&error);
	g_assert_null(db_mail_raw(db, 999, &len, &error));
	g_assert_error(error, BOT_ERROR, BOT_ERROR_NOT_FOUND);
}

/*
 * A build stored by a zeroday whose diagnostics were parsed or collected
 * otherwise (another BUILD_DIAG_VERSION) is never the one a new build is
 * compared with: it is built again.
 */
static void test_build_diag_version(void)
{
	g_autofree char *dir = testlib_mkdir("diag-version");
	g_autofree char *path = g_build_filename(dir, "z.db", NULL);
	g_autoptr(GError) error = NULL;
	zd_autoptr(db) db = db_open(path, &error);
	char source[] = "t", commit[] = "c1", target[] = "x86_64:defconfig";
	struct build_row row = { .source = source, .commit = commit, .target = target,
				 .status = BUILD_OK, .created = 5 };
	struct build_row *found = NULL;

	g_assert_no_error(error);
	g_assert_true(db_tx_begin(db, &error));
	g_assert_true(db_build_add(db, &row, &error));
	g_assert_true(db_tx_commit(db, &error));
	g_assert_true(db_build_find(db, source, commit, target, &found, &error));
	g_assert_nonnull(found);
	g_clear_pointer(&found, build_row_free);
	g_clear_pointer(&db, db_close);
	assert_shell(path, "SELECT diag_version FROM builds", G_STRINGIFY(BUILD_DIAG_VERSION));
	g_free(shell(path, "UPDATE builds SET diag_version = 1"));
	db = db_open(path, &error);
	g_assert_no_error(error);
	g_assert_true(db_build_find(db, source, commit, target, &found, &error));
	g_assert_no_error(error);
	g_assert_null(found);
}

int main(int argc, char **argv)
{
	testlib_init(&argc, &argv);
	g_test_add_func("/db/migrate-v1", test_migrate_v1);
	g_test_add_func("/db/test-series", test_series);
	g_test_add_func("/db/migrate-v9", test_migrate_v9);
	g_test_add_func("/db/build-diag-version", test_build_diag_version);
	g_test_add_func("/db/newer-schema-refused", test_newer_schema_refused);
	g_test_add_func("/db/mail-blobs", test_mail_blobs);
	g_test_add_func("/db/wal", test_wal);
	g_test_add_func("/db/open-again", test_open_again);
	g_test_add_func("/db/queries", test_queries);
	g_test_add_func("/db/jobs", test_jobs);
	g_test_add_func("/db/jobs/by-target", test_jobs_by_target);
	g_test_add_func("/db/backoff", test_backoff);
	for (size_t i = 0; i < G_N_ELEMENTS(retry_cases); i++) {
		g_autofree char *name = g_strdup_printf("/db/job-retry/%zu", i);

		g_test_add_data_func(name, &retry_cases[i], test_job_retry);
	}
	g_test_add_func("/db/job-lists", test_job_lists);
	g_test_add_func("/db/names", test_names);
	g_test_add_func("/db/stored-text", test_stored_text);
	g_test_add_func("/db/finding-fields", test_finding_fields);
	g_test_add_func("/db/full", test_full);
	g_test_add_func("/db/outbox", test_outbox);
	g_test_add_func("/db/nested-tx", test_nested_tx);
	g_test_add_func("/db/job-requeue", test_job_requeue);
	g_test_add_func("/db/branch-cancel", test_branch_cancel);
	g_test_add_func("/db/commands", test_commands);
	g_test_add_func("/db/ops-status", test_ops_status);
	return g_test_run();
}
