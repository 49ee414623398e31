/*
 * What `zeroday run` (bot/lab/sched.c) runs next, against a real store
 * on disk, a real object store and trees served by a real `git daemon`:
 * the commits a poll selects become build jobs through
 * sched_enqueue_pending(), one per commit and target, queued once
 * however often it runs or however many branches hold the commit; a
 * rebasable tree's new commits each get jobs (the head first, the
 * others as backlog), a non-rebasable tree's only its head; a
 * blacklisted branch and a branch with a Dont-Auto-Build commit get
 * none. Then sched_run() --once on a queue prepared in the store: a job
 * that zeroday died running 12 times (claims no failure followed) ends
 * in error saying so, without running; one cut short fewer times runs;
 * the temporary failures a job had are not counted as cuts. And the
 * retry rule, on a real poll and a build that fails for infrastructure:
 * the job is queued again with its backoff and its cause, left waiting
 * by --once, and its 8th failure ends it in error, saying it gave up.
 */
#include "autoconfig.h"

#include <string.h>

#include "bot/bot.h"
#include "bot/config.h"
#include "bot/lab/sched.h"
#include "bot/lab/watch.h"
#include "bot/store/db-private.h"
#include "engine/repo.h"
#include "tests/testlib.h"

static struct testlib_daemon *daemon_;
static char *served_base;

struct fixture {
	char *dir;
	struct config *config;
	struct db *db;
	struct repo *store;
};

/* Runs git in @dir, ignoring its output. */
#define git(dir, ...) g_free(testlib_git(dir, __VA_ARGS__, NULL))

static void fixture_set_up(struct fixture *f, gconstpointer data)
{
	g_autofree char *name = g_path_get_basename(g_test_get_path());
	g_autofree char *conf = NULL;
	g_autofree char *dbpath = NULL;
	g_autofree char *gitpath = NULL;
	g_autoptr(GError) error = NULL;

	(void)data;
	f->dir = testlib_mkdir(name);
	conf = g_strdup_printf("[zeroday]\nstate-dir = %s/state\nworkers = 1\n"
			       "[git]\nio-timeout = 10\nconnect-timeout = 5\n"
			       "[build]\nsandbox = false\ntargets = x86_64:defconfig\n",
			       f->dir);
	f->config = config_load_data(conf, "test", &error);
	g_assert_no_error(error);
	dbpath = config_db_path(f->config);
	gitpath = config_git_path(f->config);
	g_assert_cmpint(g_mkdir_with_parents(f->config->state_dir, 0755), ==, 0);
	f->db = db_open(dbpath, &error);
	g_assert_no_error(error);
	f->store = repo_open(gitpath, &error);
	g_assert_no_error(error);
}

static void fixture_tear_down(struct fixture *f, gconstpointer data)
{
	(void)data;
	repo_free(f->store);
	db_close(f->db);
	config_free(f->config);
	g_free(f->dir);
}

/* A new, empty repository served as @name; returns its path (caller frees). */
static char *served_repo(const char *name)
{
	char *dir = g_build_filename(served_base, name, NULL);

	testlib_repo_init(dir);
	return dir;
}

static gint64 add_tree(struct fixture *f, const char *name, enum tree_policy policy,
		       const char *blacklist, const char *targets)
{
	zd_autoptr(tree_row) t = g_new0(struct tree_row, 1);
	g_autoptr(GError) error = NULL;

	t->name = g_strdup(name);
	t->url = testlib_daemon_url(daemon_, name);
	t->policy = policy;
	t->branches = g_strsplit("*", ",", -1);
	t->blacklist = blacklist ? g_strsplit(blacklist, ",", -1) : g_new0(char *, 1);
	t->recipients = g_new0(char *, 1);
	t->targets = targets ? g_strsplit(targets, ";", -1) : g_new0(char *, 1);
	t->created = 1700000000;
	g_assert_true(db_tree_insert(f->db, t, &error));
	g_assert_no_error(error);
	return t->id;
}

/* Polls every tree, then queues the jobs of what it selected. */
static void poll_and_enqueue(struct fixture *f)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) polled = watch_poll(f->db, f->store, f->config, NULL, &error);

	g_assert_no_error(error);
	g_assert_nonnull(polled);
	for (guint i = 0; polled && i < polled->len; i++) {
		const struct watch_tree *t = polled->pdata[i];

		g_assert_null(t->error);
	}
	g_assert_true(sched_enqueue_pending(f->db, f->config, &error));
	g_assert_no_error(error);
}

/* The queued jobs, oldest first. */
static GPtrArray *queued(struct fixture *f)
{
	g_autoptr(GError) error = NULL;
	GPtrArray *jobs = db_job_list(f->db, JOB_LIST_ACTIVE, 1000, &error);

	g_assert_no_error(error);
	return jobs ? jobs : g_ptr_array_new();
}

/* The job of @commit on @target among @jobs, or NULL. */
static const struct job_row *job_of(GPtrArray *jobs, const char *commit, const char *target)
{
	for (guint i = 0; i < jobs->len; i++) {
		const struct job_row *j = jobs->pdata[i];

		if (strcmp(j->commit, commit) == 0 && strcmp(j->target, target) == 0)
			return j;
	}
	return NULL;
}

/* Checks that @jobs holds one build job of @commit on @target, at @priority. */
static void check_job(GPtrArray *jobs, const char *commit, const char *target, int priority)
{
	const struct job_row *j = job_of(jobs, commit, target);

	g_test_message("job of %.12s on %s", commit, target);
	g_assert_nonnull(j);
	if (!j)
		return;
	g_assert_cmpstr(db_job_kind_name(j->kind), ==, "build");
	g_assert_cmpint(j->priority, ==, priority);
	g_assert_cmpuint(j->attempts, ==, 0);
}

static gint64 pending(struct fixture *f)
{
	gint64 n = -1;

	g_assert_true(db_test_count_pending(f->db, &n, NULL));
	return n;
}

/*
 * A rebasable tree, commit by commit: each new commit a job per target of
 * the tree's own, the head at JOB_HEAD and the others as JOB_BACKLOG;
 * queued once, however often the queue is filled; the head claimed first.
 */
static void test_rebasable(struct fixture *f, gconstpointer data)
{
	g_autofree char *dir = served_repo("reb");
	g_autofree char *c1 = NULL, *c2 = NULL, *c3 = NULL, *c4 = NULL;
	const char *const targets[] = { "x86_64:defconfig", "i386:defconfig", NULL };
	g_autoptr(GPtrArray) jobs = NULL;
	g_autoptr(GError) error = NULL;
	zd_autoptr(job_row) first = NULL;

	(void)data;
	c1 = testlib_commit(dir, "a.c", "1\n", "one");
	c2 = testlib_commit(dir, "a.c", "2\n", "two");
	c3 = testlib_commit(dir, "a.c", "3\n", "three");
	add_tree(f, "reb", TREE_REBASABLE, NULL, "x86_64:defconfig;i386:defconfig");
	poll_and_enqueue(f);
	g_assert_cmpint(pending(f), ==, 0);
	jobs = queued(f);
	g_assert_cmpuint(jobs->len, ==, 6);
	for (const char *const *t = targets; *t; t++) {
		check_job(jobs, c1, *t, JOB_BACKLOG);
		check_job(jobs, c2, *t, JOB_BACKLOG);
		check_job(jobs, c3, *t, JOB_HEAD);
	}
	g_clear_pointer(&jobs, g_ptr_array_unref);

	/* Filled again, and polled again with nothing new: nothing more. */
	g_assert_true(sched_enqueue_pending(f->db, f->config, &error));
	poll_and_enqueue(f);
	jobs = queued(f);
	g_assert_cmpuint(jobs->len, ==, 6);
	g_clear_pointer(&jobs, g_ptr_array_unref);

	/* The head runs first. */
	g_assert_true(db_job_claim(f->db, "test:1.1", JOB_CLAIM_TREE, 1700000000, 60, &first, &error));
	g_assert_no_error(error);
	g_assert_nonnull(first);
	g_assert_cmpstr(first ? first->commit : NULL, ==, c3);

	/* A fast-forward: the new commit alone, as the new head. */
	c4 = testlib_commit(dir, "a.c", "4\n", "four");
	poll_and_enqueue(f);
	jobs = queued(f);
	g_assert_cmpuint(jobs->len, ==, 8);
	for (const char *const *t = targets; *t; t++)
		check_job(jobs, c4, *t, JOB_HEAD);
}

/*
 * The matrix of a rebasable tree kept affordable: every commit on its
 * plain targets, the heads alone on its heads-only ones (":heads").
 */
static void test_heads_only(struct fixture *f, gconstpointer data)
{
	g_autofree char *dir = served_repo("grouped");
	g_autofree char *c1 = NULL, *c2 = NULL, *c3 = NULL;
	g_autoptr(GPtrArray) jobs = NULL;

	(void)data;
	c1 = testlib_commit(dir, "a.c", "1\n", "one");
	c2 = testlib_commit(dir, "a.c", "2\n", "two");
	add_tree(f, "grouped", TREE_REBASABLE, NULL,
		 "x86_64:defconfig;riscv:tinyconfig+serial:heads;arm64:defconfig:W=1,heads");
	poll_and_enqueue(f);
	jobs = queued(f);
	g_assert_cmpuint(jobs->len, ==, 4);
	check_job(jobs, c1, "x86_64:defconfig", JOB_BACKLOG);
	check_job(jobs, c2, "x86_64:defconfig", JOB_HEAD);
	check_job(jobs, c2, "riscv:tinyconfig+serial:heads", JOB_HEAD);
	check_job(jobs, c2, "arm64:defconfig:W=1,heads", JOB_HEAD);
	g_assert_null(job_of(jobs, c1, "riscv:tinyconfig+serial:heads"));
	g_clear_pointer(&jobs, g_ptr_array_unref);

	/* The next head gets them all; the commit under it the plain ones. */
	git(dir, "commit", "-q", "--allow-empty", "-m", "three");
	c3 = testlib_commit(dir, "a.c", "3\n", "four");
	poll_and_enqueue(f);
	jobs = queued(f);
	g_assert_cmpuint(jobs->len, ==, 8);
	check_job(jobs, c3, "riscv:tinyconfig+serial:heads", JOB_HEAD);
	check_job(jobs, c3, "arm64:defconfig:W=1,heads", JOB_HEAD);
	check_job(jobs, c3, "x86_64:defconfig", JOB_HEAD);
}

/* A non-rebasable tree: its head alone, on the configured targets; then the new head alone. */
static void test_non_rebasable(struct fixture *f, gconstpointer data)
{
	g_autofree char *dir = served_repo("nr");
	g_autofree char *c1 = NULL, *c2 = NULL, *c3 = NULL, *c4 = NULL, *c5 = NULL;
	g_autoptr(GPtrArray) jobs = NULL;

	(void)data;
	c1 = testlib_commit(dir, "a.c", "1\n", "one");
	c2 = testlib_commit(dir, "a.c", "2\n", "two");
	c3 = testlib_commit(dir, "a.c", "3\n", "three");
	add_tree(f, "nr", TREE_NON_REBASABLE, NULL, NULL);
	poll_and_enqueue(f);
	jobs = queued(f);
	g_assert_cmpuint(jobs->len, ==, 1);
	check_job(jobs, c3, "x86_64:defconfig", JOB_HEAD);
	g_assert_null(job_of(jobs, c1, "x86_64:defconfig"));
	g_assert_null(job_of(jobs, c2, "x86_64:defconfig"));
	g_clear_pointer(&jobs, g_ptr_array_unref);

	c4 = testlib_commit(dir, "a.c", "4\n", "four");
	c5 = testlib_commit(dir, "a.c", "5\n", "five");
	poll_and_enqueue(f);
	jobs = queued(f);
	g_assert_cmpuint(jobs->len, ==, 2);
	check_job(jobs, c5, "x86_64:defconfig", JOB_HEAD);
	g_assert_null(job_of(jobs, c4, "x86_64:defconfig"));
}

/*
 * A blacklisted branch and a branch holding a Dont-Auto-Build commit
 * get no job; master's commits do. A commit two branches hold (a topic
 * branch made at master's head) is one job.
 */
static void test_skipped(struct fixture *f, gconstpointer data)
{
	g_autofree char *dir = served_repo("sk");
	g_autofree char *c1 = NULL, *b1 = NULL, *w1 = NULL, *w2 = NULL;
	g_autoptr(GPtrArray) jobs = NULL;

	(void)data;
	c1 = testlib_commit(dir, "a.c", "1\n", "one");
	git(dir, "branch", "topic");
	git(dir, "checkout", "-q", "-b", "tmp-experiment");
	b1 = testlib_commit(dir, "a.c", "b1\n", "experiment");
	git(dir, "checkout", "-q", "master");
	git(dir, "checkout", "-q", "-b", "wip");
	w1 = testlib_commit(dir, "w.c", "w1\n", "wip: half done\n\nDont-Auto-Build\n");
	w2 = testlib_commit(dir, "w.c", "w2\n", "wip: more");
	git(dir, "checkout", "-q", "master");
	add_tree(f, "sk", TREE_REBASABLE, "tmp-*", NULL);
	poll_and_enqueue(f);
	jobs = queued(f);
	g_assert_cmpuint(jobs->len, ==, 1);
	check_job(jobs, c1, "x86_64:defconfig", JOB_HEAD);
	g_assert_null(job_of(jobs, b1, "x86_64:defconfig"));
	g_assert_null(job_of(jobs, w1, "x86_64:defconfig"));
	g_assert_null(job_of(jobs, w2, "x86_64:defconfig"));
	g_assert_cmpint(pending(f), ==, 0);
}

/* Messages of domain "bot" logged while sched_run() ran, from any of its threads. */
static GMutex log_lock;
static GPtrArray *logged;

static void capture(const char *domain, GLogLevelFlags level, const char *message, gpointer data)
{
	(void)data;
	g_mutex_lock(&log_lock);
	if (logged)
		g_ptr_array_add(logged, g_strdup(message));
	g_mutex_unlock(&log_lock);
	g_log_default_handler(domain, level, message, NULL);
}

static bool was_logged(const char *pattern)
{
	bool found = false;

	g_mutex_lock(&log_lock);
	for (guint i = 0; logged && i < logged->len && !found; i++)
		found = g_pattern_match_simple(pattern, logged->pdata[i]);
	g_mutex_unlock(&log_lock);
	if (!found)
		g_test_message("not logged: %s", pattern);
	return found;
}

static void sql(struct fixture *f, const char *text)
{
	g_assert_cmpint(sqlite3_exec(f->db->sql, text, NULL, NULL, NULL), ==, SQLITE_OK);
}

/*
 * Queues a build job of @commit on tree @tree_id as a crashed zeroday
 * left it: claimed @attempts times, @failures of them failed, its lease
 * held by a process of another host and run out. Returns its id.
 */
static gint64 add_cut_job(struct fixture *f, gint64 tree_id, const char *commit,
			  unsigned attempts, unsigned failures)
{
	g_autoptr(GError) error = NULL;
	g_autofree char *update = NULL;
	g_autoptr(GPtrArray) jobs = NULL;
	const struct job_row *job;
	bool added = false;
	gint64 id;

	g_assert_true(db_tx_begin(f->db, &error));
	g_assert_true(db_job_add(f->db, JOB_KIND_BUILD, tree_id, commit, "x86_64:defconfig",
				 JOB_BACKLOG, &added, &error));
	g_assert_true(db_tx_commit(f->db, &error));
	g_assert_no_error(error);
	g_assert_true(added);
	jobs = queued(f);
	job = job_of(jobs, commit, "x86_64:defconfig");
	g_assert_nonnull(job);
	id = job ? job->id : 0;
	update = g_strdup_printf("UPDATE jobs SET state = 'running', lease_owner = 'gone:1.1', "
				 "lease_until = 1, attempts = %u, failures = %u WHERE id = %"
				 G_GINT64_FORMAT, attempts, failures, id);
	sql(f, update);
	return id;
}

/* The state, result and last error of job @id, as "done|error|why". */
static char *job_end(struct fixture *f, gint64 id)
{
	g_autoptr(sqlite3_stmt) stmt = NULL;
	char *out = NULL;

	g_assert_cmpint(sqlite3_prepare_v2(f->db->sql, "SELECT state || '|' || "
					   "coalesce(result, '') || '|' || coalesce(last_error, '') "
					   "FROM jobs WHERE id = ?", -1, &stmt, NULL), ==, SQLITE_OK);
	sqlite3_bind_int64(stmt, 1, id);
	if (sqlite3_step(stmt) == SQLITE_ROW)
		out = g_strdup((const char *)sqlite3_column_text(stmt, 0));
	return out;
}

/* Runs sched_run() --once, its warnings logged and captured instead of fatal. */
static void run_once(struct fixture *f, unsigned retry_delay)
{
	struct sched_options opts = { .once = true, .poll_interval = 3600, .lease = 60,
				      .workers = 1, .retry_delay = retry_delay };
	volatile sig_atomic_t stop = 0;
	g_autoptr(GError) error = NULL;
	guint handler;
	bool ok;

	g_mutex_lock(&log_lock);
	g_clear_pointer(&logged, g_ptr_array_unref);
	logged = g_ptr_array_new_with_free_func(g_free);
	g_mutex_unlock(&log_lock);
	g_log_set_always_fatal(G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL);
	handler = g_log_set_handler("bot", G_LOG_LEVEL_MASK, capture, NULL);
	ok = sched_run(f->db, f->store, f->config, &opts, &stop, &error);
	g_log_remove_handler("bot", handler);
	g_log_set_always_fatal(G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING);
	g_assert_no_error(error);
	g_assert_true(ok);
}

/*
 * sched_run() --once on jobs a crashed zeroday left: cut short 12 times
 * (its 13th claim) it ends in error at once, saying why; cut short 11
 * times it still runs (and ends for its own cause: its commit is not in
 * the object store); 14 claims of which 2 failed are 12 cuts, not 14.
 */
static void test_cut_short(struct fixture *f, gconstpointer data)
{
	static const char cut12[] = "cut short 12 times: zeroday died each time it ran this job "
				    "(see the log for a crash)";
	const char *x1 = "1111111111111111111111111111111111111111";
	const char *x2 = "2222222222222222222222222222222222222222";
	const char *x3 = "3333333333333333333333333333333333333333";
	g_autofree char *end1 = NULL, *end2 = NULL, *end3 = NULL;
	g_autofree char *missing = NULL;
	g_autofree char *cut = g_strconcat("done|error|", cut12, NULL);
	gint64 tree_id, j1, j2, j3;

	(void)data;
	/* Its URL serves nothing: its poll fails, which ends no run. */
	tree_id = add_tree(f, "gone", TREE_REBASABLE, NULL, NULL);
	j1 = add_cut_job(f, tree_id, x1, 12, 0);
	j2 = add_cut_job(f, tree_id, x2, 11, 0);
	j3 = add_cut_job(f, tree_id, x3, 14, 2);

	/* The run warns of each cut job: logged and checked here, not fatal. */
	run_once(f, 0);

	end1 = job_end(f, j1);
	end2 = job_end(f, j2);
	end3 = job_end(f, j3);
	g_assert_cmpstr(end1, ==, cut);
	missing = g_strdup_printf("done|error|commit %s is no longer in the object store", x2);
	g_assert_cmpstr(end2, ==, missing);
	g_assert_cmpstr(end3, ==, cut);
	g_assert_true(was_logged("job *: cut short 12 times: *"));
	g_assert_true(was_logged("job *: error (no retry): commit 2222* is no longer in the "
				 "object store"));
}

/*
 * A head whose build fails for infrastructure (its target's config file
 * is gone): queued again, not before its retry delay, with the cause and
 * one failure counted; --once leaves it waiting and says so. At its 8th
 * failure it ends in error: it gave up, with the cause.
 */
static void test_retry(struct fixture *f, gconstpointer data)
{
	g_autofree char *dir = served_repo("retry");
	g_autofree char *target = g_strdup_printf("x86_64:file=%s/absent.config", f->dir);
	g_autofree char *c1 = NULL;
	g_autofree char *end = NULL;
	g_autofree char *update = NULL;
	g_autofree char *cause = NULL;
	g_autofree char *gave_up = NULL;
	g_autoptr(GPtrArray) jobs = NULL;
	const struct job_row *j;
	gint64 before, id;

	(void)data;
	c1 = testlib_commit(dir, "a.c", "1\n", "one");
	add_tree(f, "retry", TREE_REBASABLE, NULL, target);
	before = g_get_real_time() / G_USEC_PER_SEC;
	run_once(f, 3600);
	jobs = queued(f);
	g_assert_cmpuint(jobs->len, ==, 1);
	j = job_of(jobs, c1, target);
	g_assert_nonnull(j);
	if (!j)
		return;
	id = j->id;
	g_assert_false(j->running);
	g_assert_cmpuint(j->attempts, ==, 1);
	g_assert_cmpuint(j->failures, ==, 1);
	g_assert_cmpint(j->not_before, >=, before + 3600);
	g_assert_cmpint(j->not_before, <=, g_get_real_time() / G_USEC_PER_SEC + 3600);
	cause = g_strdup_printf("infra-error: build of %.12s: *absent.config*", c1);
	g_assert_true(j->last_error && g_pattern_match_simple(cause, j->last_error));
	g_assert_true(was_logged("job *: attempt 1 failed, retry at *: infra-error: *"));
	g_assert_true(was_logged("job *: * left queued: retry 1 at * after: infra-error: *"));

	/* Its 8th failure: the end. */
	update = g_strdup_printf("UPDATE jobs SET failures = 7, not_before = 0 WHERE id = %"
				 G_GINT64_FORMAT, id);
	sql(f, update);
	run_once(f, 3600);
	end = job_end(f, id);
	gave_up = g_strdup_printf("done|error|gave up after 8 attempts: %s", cause);
	g_assert_true(end && g_pattern_match_simple(gave_up, end));
	g_test_message("%s", end ? end : "");
	g_assert_true(was_logged("job *: error: gave up after 8 attempts: infra-error: *"));
}

int main(int argc, char **argv)
{
	g_autoptr(GError) error = NULL;
	struct config *config;
	int rc;

	testlib_init(&argc, &argv);
	config = config_load_data("[git]\nio-timeout = 10\n", "test", &error);
	g_assert_no_error(error);
	if (!repo_global_init(&config->limits, &error))
		g_error("%s", error->message);
	served_base = testlib_mkdir("served");
	daemon_ = testlib_daemon_start(served_base);

	g_test_add("/sched/heads-only", struct fixture, NULL, fixture_set_up, test_heads_only,
		   fixture_tear_down);
	g_test_add("/sched/rebasable", struct fixture, NULL, fixture_set_up, test_rebasable,
		   fixture_tear_down);
	g_test_add("/sched/non-rebasable", struct fixture, NULL, fixture_set_up,
		   test_non_rebasable, fixture_tear_down);
	g_test_add("/sched/skipped", struct fixture, NULL, fixture_set_up, test_skipped,
		   fixture_tear_down);
	g_test_add("/sched/cut-short", struct fixture, NULL, fixture_set_up, test_cut_short,
		   fixture_tear_down);
	g_test_add("/sched/retry", struct fixture, NULL, fixture_set_up, test_retry,
		   fixture_tear_down);
	rc = g_test_run();

	g_clear_pointer(&logged, g_ptr_array_unref);
	testlib_daemon_stop(daemon_);
	config_free(config);
	return rc;
}
