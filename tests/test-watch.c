/*
 * Tree watching end to end: real git daemon, real object store, real
 * database. Each scenario builds its history with git and checks the exact
 * commits that a poll selects.
 */
#include "autoconfig.h"

#include <string.h>

#include "bot/bot.h"
#include "bot/config.h"
#include "bot/store/db.h"
#include "bot/lab/watch.h"
#include "engine/repo.h"
#include "tests/testlib.h"

static struct testlib_daemon *daemon_;
static char *served_base;
static struct config *config;
static struct db *db;
static struct repo *store;

static char *served(const char *name)
{
	return g_build_filename(served_base, name, NULL);
}

static void add_tree(const char *name, const char *repo_name, enum tree_policy policy,
		     const char *branches, const char *blacklist, const char *base)
{
	zd_autoptr(tree_row) t = g_new0(struct tree_row, 1);
	g_autoptr(GError) error = NULL;

	t->name = g_strdup(name);
	t->url = testlib_daemon_url(daemon_, repo_name);
	t->policy = policy;
	t->branches = g_strsplit(branches, ",", -1);
	t->blacklist = blacklist ? g_strsplit(blacklist, ",", -1) : g_new0(char *, 1);
	t->base = g_strdup(base);
	t->recipients = g_new0(char *, 1);
	g_assert_true(db_tree_insert(db, t, &error));
	g_assert_no_error(error);
}

/* Polls @trees (comma-separated) and returns the results. */
static GPtrArray *poll(const char *trees)
{
	g_auto(GStrv) names = trees ? g_strsplit(trees, ",", -1) : NULL;
	g_autoptr(GError) error = NULL;
	GPtrArray *results = watch_poll(db, store, config, (const char *const *)names, &error);

	g_assert_no_error(error);
	g_assert_nonnull(results);
	return results ? results : g_ptr_array_new();
}

static const struct watch_tree *result_of(GPtrArray *results, const char *tree)
{
	for (guint i = 0; i < results->len; i++) {
		const struct watch_tree *t = results->pdata[i];

		if (strcmp(t->tree, tree) == 0)
			return t;
	}
	g_test_message("no result for tree %s", tree);
	g_test_fail();
	return NULL;
}

static const struct watch_change *change_of(GPtrArray *results, const char *tree,
					    const char *branch)
{
	const struct watch_tree *t = result_of(results, tree);

	for (guint i = 0; t && i < t->changes->len; i++) {
		const struct watch_change *c = t->changes->pdata[i];

		if (strcmp(c->event->branch, branch) == 0)
			return c;
	}
	return NULL;
}

/*
 * Checks the change of @branch: its kind, action, and the selected commits
 * (NULL-terminated, oldest first).
 */
static void assert_change(GPtrArray *results, const char *tree, const char *branch,
			  enum head_change kind, enum head_action action, const char *const *commits)
{
	const struct watch_change *c = change_of(results, tree, branch);
	guint n = commits ? g_strv_length((char **)commits) : 0;

	g_test_message("checking %s/%s", tree, branch);
	g_assert_nonnull(c);
	if (!c)
		return;
	g_assert_cmpstr(db_head_change_name(c->event->change), ==, db_head_change_name(kind));
	g_assert_cmpstr(db_head_action_name(c->event->action), ==, db_head_action_name(action));
	g_assert_cmpuint(c->commits->len, ==, n);
	g_assert_cmpuint(c->event->selected, ==, n);
	for (guint i = 0; i < MIN(n, c->commits->len); i++)
		g_assert_cmpstr(((struct repo_commit *)c->commits->pdata[i])->oid, ==, commits[i]);
}

static guint changes(GPtrArray *results, const char *tree)
{
	const struct watch_tree *t = result_of(results, tree);

	return t ? t->changes->len : G_MAXUINT;
}

static gint64 pending(void)
{
	gint64 n = -1;

	g_assert_true(db_test_count_pending(db, &n, NULL));
	return n;
}

/* Counts the pack files in the store: a fetch that transfers adds one. */
static guint packs(void)
{
	g_autofree char *dir = g_build_filename(config->state_dir, "git", "objects", "pack", NULL);
	g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
	const char *name;
	guint n = 0;

	while (d && (name = g_dir_read_name(d)))
		n += g_str_has_suffix(name, ".pack");
	return n;
}

static const struct branch_row *branch_of(GPtrArray *rows, const char *name)
{
	for (guint i = 0; rows && i < rows->len; i++) {
		const struct branch_row *b = rows->pdata[i];

		if (strcmp(b->name, name) == 0)
			return b;
	}
	return NULL;
}

static GPtrArray *branches_of(const char *tree)
{
	zd_autoptr(tree_row) t = db_tree_get(db, tree, NULL);

	g_assert_nonnull(t);
	return t ? db_branch_list(db, t->id, NULL) : NULL;
}

/* Runs git in @dir, ignoring its output. */
#define git(dir, ...) g_free(testlib_git(dir, __VA_ARGS__, NULL))

/* Rebasable tree: first poll, no-op poll, fast-forward, force-push, merges, deletion. */
static void test_rebasable(void)
{
	g_autofree char *dir = served("reb");
	g_autoptr(GPtrArray) r = NULL;
	g_autofree char *c1 = NULL, *c2 = NULL, *c3 = NULL, *c4 = NULL, *c5 = NULL, *c6 = NULL, *c7 = NULL, *t1 = NULL, *t2 = NULL, *m = NULL;
	guint npacks;
	gint64 npending;

	testlib_repo_init(dir);
	c1 = testlib_commit(dir, "a.c", "1\n", "one");
	c2 = testlib_commit(dir, "a.c", "2\n", "two");
	c3 = testlib_commit(dir, "a.c", "3\n", "three");
	add_tree("reb", "reb", TREE_REBASABLE, "*", NULL, NULL);

	r = poll("reb");
	assert_change(r, "reb", "master", HEAD_NEW, HEAD_ACTION_QUEUED, (const char *[]){ c1, c2, c3, NULL });
	g_clear_pointer(&r, g_ptr_array_unref);

	/* Unchanged: nothing fetched, nothing queued. */
	npacks = packs();
	npending = pending();
	r = poll("reb");
	g_assert_cmpuint(changes(r, "reb"), ==, 0);
	g_assert_cmpuint(result_of(r, "reb")->branches, ==, 1);
	g_assert_cmpuint(packs(), ==, npacks);
	g_assert_cmpint(pending(), ==, npending);
	g_clear_pointer(&r, g_ptr_array_unref);

	/* Fast-forward: the two new commits. */
	c4 = testlib_commit(dir, "b.c", "4\n", "four");
	c5 = testlib_commit(dir, "b.c", "5\n", "five");
	r = poll("reb");
	assert_change(r, "reb", "master", HEAD_FORWARD, HEAD_ACTION_QUEUED, (const char *[]){ c4, c5, NULL });
	g_clear_pointer(&r, g_ptr_array_unref);

	/* Force-push: rewind to c3, two new commits; c1..c3 were tested. */
	git(dir, "reset", "-q", "--hard", c3);
	c6 = testlib_commit(dir, "c.c", "6\n", "six");
	c7 = testlib_commit(dir, "c.c", "7\n", "seven");
	r = poll("reb");
	assert_change(r, "reb", "master", HEAD_FORCED, HEAD_ACTION_QUEUED, (const char *[]){ c6, c7, NULL });
	g_clear_pointer(&r, g_ptr_array_unref);

	/* A topic branch, then its merge: only the merge commit is new. */
	git(dir, "checkout", "-q", "-b", "topic");
	t1 = testlib_commit(dir, "t.c", "t1\n", "topic one");
	t2 = testlib_commit(dir, "t.c", "t2\n", "topic two");
	git(dir, "checkout", "-q", "master");
	r = poll("reb");
	assert_change(r, "reb", "topic", HEAD_NEW, HEAD_ACTION_QUEUED, (const char *[]){ t1, t2, NULL });
	g_assert_null(change_of(r, "reb", "master"));
	g_clear_pointer(&r, g_ptr_array_unref);
	g_free(testlib_git(dir, "merge", "-q", "--no-ff", "-m", "Merge topic", "topic", NULL));
	m = testlib_git(dir, "rev-parse", "HEAD", NULL);
	r = poll("reb");
	assert_change(r, "reb", "master", HEAD_FORWARD, HEAD_ACTION_QUEUED, (const char *[]){ m, NULL });
	g_clear_pointer(&r, g_ptr_array_unref);

	/* Rewound to a tested commit: recorded, nothing to test. */
	npending = pending();
	git(dir, "reset", "-q", "--hard", c6);
	r = poll("reb");
	assert_change(r, "reb", "master", HEAD_FORCED, HEAD_ACTION_NONE, NULL);
	g_assert_cmpint(pending(), ==, npending);
	g_clear_pointer(&r, g_ptr_array_unref);

	/* A deleted branch. */
	git(dir, "branch", "-q", "-D", "topic");
	r = poll("reb");
	assert_change(r, "reb", "topic", HEAD_DELETED, HEAD_ACTION_NONE, NULL);
	g_clear_pointer(&r, g_ptr_array_unref);
	{
		g_autoptr(GPtrArray) rows = branches_of("reb");
		const struct branch_row *b = branch_of(rows, "topic");

		g_assert_nonnull(b);
		g_assert_cmpint(b ? (int)b->state : -1, ==, BRANCH_DELETED);
	}
}

/* A branch with a Dont-Auto-Build commit is skipped, and the skip recorded. */
static void test_dont_auto_build(void)
{
	g_autofree char *dir = served("dab");
	g_autoptr(GPtrArray) r = NULL;
	g_autoptr(GPtrArray) rows = NULL;
	g_autofree char *c1 = NULL, *c2 = NULL, *w1 = NULL, *w2 = NULL, *w3 = NULL;
	const struct branch_row *b;
	g_autofree char *short_w1 = NULL;
	const struct watch_change *c;
	gint64 npending;

	testlib_repo_init(dir);
	c1 = testlib_commit(dir, "a.c", "1\n", "one");
	add_tree("dab", "dab", TREE_REBASABLE, "*", NULL, NULL);
	r = poll("dab");
	assert_change(r, "dab", "master", HEAD_NEW, HEAD_ACTION_QUEUED, (const char *[]){ c1, NULL });
	g_clear_pointer(&r, g_ptr_array_unref);

	git(dir, "checkout", "-q", "-b", "wip");
	w1 = testlib_commit(dir, "w.c", "w1\n", "wip: half done\n\nDont-Auto-Build\n");
	w2 = testlib_commit(dir, "w.c", "w2\n", "wip: more");
	git(dir, "checkout", "-q", "master");
	c2 = testlib_commit(dir, "a.c", "2\n", "two");
	npending = pending();
	r = poll("dab");
	assert_change(r, "dab", "wip", HEAD_NEW, HEAD_ACTION_SKIPPED, NULL);
	assert_change(r, "dab", "master", HEAD_FORWARD, HEAD_ACTION_QUEUED, (const char *[]){ c2, NULL });
	c = change_of(r, "dab", "wip");
	short_w1 = g_strndup(w1, 12);
	g_assert_true(c && strstr(c->event->reason, "Dont-Auto-Build"));
	g_assert_true(c && strstr(c->event->reason, short_w1));
	g_assert_cmpint(pending(), ==, npending + 1);
	rows = branches_of("dab");
	b = branch_of(rows, "wip");
	g_assert_cmpint(b ? (int)b->state : -1, ==, BRANCH_SKIPPED);
	g_assert_true(b && b->reason && strstr(b->reason, "Dont-Auto-Build"));
	g_clear_pointer(&r, g_ptr_array_unref);

	/* Rebuilt without the marker: its commits are new and selected. */
	git(dir, "checkout", "-q", "wip");
	git(dir, "reset", "-q", "--hard", c2);
	w3 = testlib_commit(dir, "w.c", "w3\n", "wip: done");
	git(dir, "checkout", "-q", "master");
	r = poll("dab");
	assert_change(r, "dab", "wip", HEAD_FORCED, HEAD_ACTION_QUEUED, (const char *[]){ w3, NULL });
	(void)w2;
}

static void test_blacklist(void)
{
	g_autofree char *dir = served("bl");
	g_autoptr(GPtrArray) r = NULL;
	g_autoptr(GPtrArray) rows = NULL;
	g_autofree char *c1 = NULL, *b1 = NULL;
	const struct watch_change *c;

	testlib_repo_init(dir);
	c1 = testlib_commit(dir, "a.c", "1\n", "one");
	git(dir, "checkout", "-q", "-b", "tmp-experiment");
	b1 = testlib_commit(dir, "a.c", "b1\n", "experiment");
	git(dir, "checkout", "-q", "master");
	add_tree("bl", "bl", TREE_REBASABLE, "*", "tmp-*", NULL);
	r = poll("bl");
	assert_change(r, "bl", "master", HEAD_NEW, HEAD_ACTION_QUEUED, (const char *[]){ c1, NULL });
	assert_change(r, "bl", "tmp-experiment", HEAD_NEW, HEAD_ACTION_SKIPPED, NULL);
	c = change_of(r, "bl", "tmp-experiment");
	g_assert_cmpstr(c ? c->event->reason : NULL, ==, "blacklisted by pattern 'tmp-*'");
	rows = branches_of("bl");
	g_assert_cmpint(branch_of(rows, "tmp-experiment") ?
				(int)branch_of(rows, "tmp-experiment")->state : -1, ==, BRANCH_SKIPPED);
}

static void test_non_rebasable(void)
{
	g_autofree char *dir = served("nr");
	g_autoptr(GPtrArray) r = NULL;
	g_autofree char *c1 = NULL, *c2 = NULL, *c3 = NULL, *c4 = NULL, *c5 = NULL;

	testlib_repo_init(dir);
	c1 = testlib_commit(dir, "a.c", "1\n", "one");
	c2 = testlib_commit(dir, "a.c", "2\n", "two");
	c3 = testlib_commit(dir, "a.c", "3\n", "three");
	add_tree("nr", "nr", TREE_NON_REBASABLE, "master", NULL, NULL);
	r = poll("nr");
	assert_change(r, "nr", "master", HEAD_NEW, HEAD_ACTION_QUEUED, (const char *[]){ c3, NULL });
	g_clear_pointer(&r, g_ptr_array_unref);
	c4 = testlib_commit(dir, "a.c", "4\n", "four");
	c5 = testlib_commit(dir, "a.c", "5\n", "five");
	r = poll("nr");
	assert_change(r, "nr", "master", HEAD_FORWARD, HEAD_ACTION_QUEUED, (const char *[]){ c5, NULL });
	(void)c1, (void)c2, (void)c4;
}

/* Commits already upstream (in the base tree) are not new. */
static void test_base(void)
{
	g_autofree char *up = served("up");
	g_autofree char *down = served("down");
	g_autoptr(GPtrArray) r = NULL;
	g_autofree char *u1, *u2, *d1, *d2, *u3, *d3 = NULL;

	testlib_repo_init(up);
	u1 = testlib_commit(up, "a.c", "1\n", "up one");
	u2 = testlib_commit(up, "a.c", "2\n", "up two");
	git(served_base, "clone", "-q", up, down);
	d1 = testlib_commit(down, "d.c", "1\n", "down one");
	d2 = testlib_commit(down, "d.c", "2\n", "down two");
	/* "down" sorts first, but its base must be fetched before it. */
	add_tree("down", "down", TREE_REBASABLE, "master", NULL, "up/master");
	add_tree("up", "up", TREE_NON_REBASABLE, "master", NULL, NULL);
	r = poll("down,up");
	assert_change(r, "up", "master", HEAD_NEW, HEAD_ACTION_QUEUED, (const char *[]){ u2, NULL });
	assert_change(r, "down", "master", HEAD_NEW, HEAD_ACTION_QUEUED, (const char *[]){ d1, d2, NULL });
	g_clear_pointer(&r, g_ptr_array_unref);

	/* Upstream moves and down rebases onto it: only down's commit is new. */
	u3 = testlib_commit(up, "a.c", "3\n", "up three");
	git(down, "fetch", "-q", "origin");
	git(down, "reset", "-q", "--hard", "origin/master");
	d3 = testlib_commit(down, "d.c", "3\n", "down three");
	r = poll(NULL);
	assert_change(r, "up", "master", HEAD_FORWARD, HEAD_ACTION_QUEUED, (const char *[]){ u3, NULL });
	assert_change(r, "down", "master", HEAD_FORCED, HEAD_ACTION_QUEUED, (const char *[]){ d3, NULL });
	(void)u1;
}

static void test_patterns(void)
{
	g_autofree char *dir = served("pat");
	g_autoptr(GPtrArray) r = NULL;
	g_autofree char *c1 = NULL, *f1 = NULL;

	testlib_repo_init(dir);
	c1 = testlib_commit(dir, "a.c", "1\n", "one");
	git(dir, "checkout", "-q", "-b", "for-next");
	f1 = testlib_commit(dir, "a.c", "f\n", "for next");
	add_tree("pat", "pat", TREE_REBASABLE, "for-*", NULL, NULL);
	r = poll("pat");
	g_assert_cmpuint(changes(r, "pat"), ==, 1);
	assert_change(r, "pat", "for-next", HEAD_NEW, HEAD_ACTION_QUEUED, (const char *[]){ c1, f1, NULL });
	g_assert_null(change_of(r, "pat", "master"));
}

/* More new commits than max-new-commits: the head only, and a note why. */
static void test_truncated(void)
{
	g_autofree char *dir = served("big");
	g_autoptr(GPtrArray) r = NULL;
	g_autofree char *head = NULL;
	const struct watch_change *c;
	unsigned saved = config->max_new_commits;

	testlib_repo_init(dir);
	for (int i = 0; i < 8; i++) {
		g_autofree char *text = g_strdup_printf("%d\n", i);

		g_free(head);
		head = testlib_commit(dir, "a.c", text, text);
	}
	add_tree("big", "big", TREE_REBASABLE, "*", NULL, NULL);
	config->max_new_commits = 5;
	r = poll("big");
	config->max_new_commits = saved;
	assert_change(r, "big", "master", HEAD_NEW, HEAD_ACTION_QUEUED, (const char *[]){ head, NULL });
	c = change_of(r, "big", "master");
	g_assert_true(c && c->event->reason && strstr(c->event->reason, "max-new-commits"));
}

/* Two trees on the same objects: the second poll transfers nothing. */
static void test_shared_store(void)
{
	g_autofree char *dir = served("shared");
	g_autoptr(GPtrArray) r = NULL;
	g_autofree char *c1 = NULL;
	guint npacks;

	testlib_repo_init(dir);
	c1 = testlib_commit(dir, "a.c", "shared\n", "shared one");
	add_tree("shared-a", "shared", TREE_REBASABLE, "*", NULL, NULL);
	add_tree("shared-b", "shared", TREE_REBASABLE, "*", NULL, NULL);
	r = poll("shared-a");
	g_clear_pointer(&r, g_ptr_array_unref);
	npacks = packs();
	r = poll("shared-b");
	assert_change(r, "shared-b", "master", HEAD_NEW, HEAD_ACTION_QUEUED, (const char *[]){ c1, NULL });
	g_assert_cmpuint(packs(), ==, npacks);
	{
		g_autofree char *ref = repo_tree_branch_head(store, "shared-b", "master", NULL);

		g_assert_cmpstr(ref, ==, c1);
	}
}

/* A failing tree is recorded and does not stop the others. */
static void test_failure_isolated(void)
{
	g_autofree char *dir = served("ok");
	g_autoptr(GPtrArray) r = NULL;
	g_autofree char *c1 = NULL;
	zd_autoptr(tree_row) bad = g_new0(struct tree_row, 1);
	zd_autoptr(tree_row) got = NULL;
	g_autoptr(GError) error = NULL;

	testlib_repo_init(dir);
	c1 = testlib_commit(dir, "a.c", "1\n", "one");
	add_tree("ok", "ok", TREE_REBASABLE, "*", NULL, NULL);
	bad->name = g_strdup("bad");
	bad->url = g_strdup_printf("git://127.0.0.1:%d/nothing", testlib_free_port());
	bad->branches = g_strsplit("*", ",", -1);
	g_assert_true(db_tree_insert(db, bad, &error));
	r = poll("bad,ok");
	g_assert_nonnull(result_of(r, "bad")->error);
	assert_change(r, "ok", "master", HEAD_NEW, HEAD_ACTION_QUEUED, (const char *[]){ c1, NULL });
	got = db_tree_get(db, "bad", &error);
	g_assert_true(got && got->last_error);
	g_assert_cmpint(got ? got->last_poll : 0, >, 0);
}

int main(int argc, char **argv)
{
	g_autoptr(GError) error = NULL;
	g_autofree char *state = NULL;
	g_autofree char *conf = NULL;
	g_autofree char *dbpath = NULL;
	g_autofree char *gitpath = NULL;
	int rc;

	testlib_init(&argc, &argv);
	served_base = testlib_mkdir("served");
	state = testlib_mkdir("state");
	conf = g_strdup_printf("[zeroday]\nstate-dir=%s\n[git]\nio-timeout=10\n", state);
	config = config_load_data(conf, "test", &error);
	g_assert_no_error(error);
	if (!repo_global_init(&config->limits, &error))
		g_error("%s", error->message);
	dbpath = config_db_path(config);
	gitpath = config_git_path(config);
	db = db_open(dbpath, &error);
	store = repo_open(gitpath, &error);
	g_assert_no_error(error);
	daemon_ = testlib_daemon_start(served_base);

	g_test_add_func("/watch/rebasable", test_rebasable);
	g_test_add_func("/watch/dont-auto-build", test_dont_auto_build);
	g_test_add_func("/watch/blacklist", test_blacklist);
	g_test_add_func("/watch/non-rebasable", test_non_rebasable);
	g_test_add_func("/watch/base", test_base);
	g_test_add_func("/watch/patterns", test_patterns);
	g_test_add_func("/watch/truncated", test_truncated);
	g_test_add_func("/watch/shared-store", test_shared_store);
	g_test_add_func("/watch/failure-isolated", test_failure_isolated);
	rc = g_test_run();

	testlib_daemon_stop(daemon_);
	repo_free(store);
	db_close(db);
	config_free(config);
	return rc;
}
