/*
 * A tree's get_maintainer.pl, run on a commit's patch: the patch as
 * format-patch writes it; the fixture script (tests/data/maintainers)
 * taken from the commit's own tree, with the maintainers, reviewers and
 * lists of the touched files sorted apart; no script, a script that
 * fails, one that never answers, one that floods, one that tries to
 * leave the sandbox; and, when the test cache holds the Linux tree, the
 * real script on a patch to a network driver.
 */
#include "autoconfig.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/maintainers.h"
#include "engine/repo.h"
#include "engine/run.h"
#include "tests/testlib.h"

static bool sandbox;   /* whether the sandbox works here */
static char *work;     /* the fixture tree's work directory */
static char *culprit;  /* touches drivers/net/foo.c */
static char *evil;     /* touches drivers/net/evil.c */
static char *bare;     /* a tree without the script */

static char *data_file(const char *name)
{
	g_autofree char *path = g_build_filename(ZERODAY_SRCDIR, "tests", "data", "maintainers",
						 name, NULL);
	char *text = NULL;

	g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
	return text;
}

static struct repo *fixture_repo(void)
{
	g_autoptr(GError) error = NULL;
	g_autofree char *git = g_build_filename(work, ".git", NULL);
	struct repo *repo = repo_open(git, &error);

	g_assert_no_error(error);
	return repo;
}

static char *joined(char **list)
{
	return g_strjoinv("|", list);
}

static void test_patch(void)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(repo) repo = fixture_repo();
	g_autofree char *patch = NULL;
	g_autofree char *small = NULL;
	gsize len = 0;

	if (!repo)
		return;
	patch = repo_commit_patch(repo, culprit, 1024 * 1024, &len, &error);
	g_assert_no_error(error);
	if (!patch)
		return;
	g_assert_cmpuint(len, ==, strlen(patch));
	g_assert_true(g_str_has_prefix(patch, "From "));
	g_assert_nonnull(strstr(patch, "\nSubject: [PATCH] net: foo breaks\n"));
	g_assert_nonnull(strstr(patch, "\nThe body of the message.\n"));
	g_assert_nonnull(strstr(patch, "\ndiff --git a/drivers/net/foo.c b/drivers/net/foo.c\n"));
	g_assert_nonnull(strstr(patch, "\n--- a/drivers/net/foo.c\n+++ b/drivers/net/foo.c\n"));
	g_assert_nonnull(strstr(patch, "\n-int foo;\n+int foo = 1;\n"));
	small = repo_commit_patch(repo, culprit, 64, &len, &error);
	g_assert_null(small);
	g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_LIMIT);
}

static void test_commit(void)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(repo) repo = fixture_repo();
	const struct maintainers_opts opts = { .sandbox = sandbox };
	struct maintainers m;
	g_autofree char *people = NULL;
	g_autofree char *lists = NULL;

	if (!repo)
		return;
	maintainers_init(&m);
	g_assert_true(maintainers_of_commit(&m, repo, culprit, &opts, &error));
	g_assert_no_error(error);
	people = joined(m.people);
	lists = joined(m.lists);
	g_assert_cmpstr(people, ==, "Nina Net <nina@example.org>|\"Dave M. Iller\" "
			"<dave@example.org>|Rita Review <rita@example.org>");
	g_assert_cmpstr(lists, ==, "netdev@example.org");
	maintainers_release(&m);

	/* The hostile section's lines come back as text: the caller checks them. */
	g_assert_true(maintainers_of_commit(&m, repo, evil, &opts, &error));
	g_assert_no_error(error);
	g_clear_pointer(&people, g_free);
	g_clear_pointer(&lists, g_free);
	people = joined(m.people);
	lists = joined(m.lists);
	g_assert_cmpstr(people, ==, "Nina Net <nina@example.org>|\"Dave M. Iller\" "
			"<dave@example.org>|Rita Review <rita@example.org>|Eve <eve@example.net>, "
			"Mallory <mallory@example.net>|not an address");
	g_assert_cmpstr(lists, ==, "netdev@example.org|bot@example.org");
	maintainers_release(&m);
}

static void test_no_script(void)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(repo) repo = fixture_repo();
	const struct maintainers_opts opts = { .sandbox = sandbox };
	struct maintainers m;

	if (!repo)
		return;
	maintainers_init(&m);
	g_assert_false(maintainers_of_commit(&m, repo, bare, &opts, &error));
	g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_NOT_FOUND);
	g_assert_null(m.people[0]);
	g_assert_null(m.lists[0]);
	maintainers_release(&m);
}

/* Runs the hostile script @name on a small patch; returns its error. */
static GError *run_hostile(const char *name, const char *patch, unsigned timeout_s,
			   struct maintainers *m, double *seconds)
{
	g_autofree char *script = data_file(name);
	g_autofree char *file = data_file("MAINTAINERS");
	const struct maintainers_opts opts = { .sandbox = sandbox, .timeout_s = timeout_s };
	GError *error = NULL;
	gint64 start = g_get_monotonic_time();

	maintainers_init(m);
	if (maintainers_run(m, script, strlen(script), file, strlen(file), patch, strlen(patch),
			    &opts, &error))
		g_assert_no_error(error);
	*seconds = (double)(g_get_monotonic_time() - start) / G_USEC_PER_SEC;
	return error;
}

static void test_hostile_sleep(void)
{
	struct maintainers m;
	double seconds;
	g_autoptr(GError) error = run_hostile("sleep.pl", "+++ b/x.c\n", 2, &m, &seconds);

	g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_TIMEOUT);
	g_assert_cmpfloat(seconds, <, 10.0);
	g_assert_null(m.people[0]);
	maintainers_release(&m);
}

static void test_hostile_flood(void)
{
	struct maintainers m;
	double seconds;
	g_autoptr(GError) error = run_hostile("flood.pl", "+++ b/x.c\n", 0, &m, &seconds);

	g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_LIMIT);
	if (error)
		g_assert_nonnull(strstr(error->message, "more than 262144 bytes of output"));
	g_assert_null(m.people[0]);
	maintainers_release(&m);
}

static void test_hostile_fail(void)
{
	struct maintainers m;
	double seconds;
	g_autoptr(GError) error = run_hostile("fail.pl", "+++ b/x.c\n", 0, &m, &seconds);

	g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED);
	if (error)
		g_assert_cmpstr(error->message, ==, "get_maintainer.pl: exit status 3: "
				"get_maintainer.pl: MAINTAINERS is broken");
	/* What it printed before failing is not used. */
	g_assert_null(m.people[0]);
	maintainers_release(&m);
}

static void test_hostile_escape(void)
{
	g_autofree char *dir = g_build_filename(testlib_scratch(), "open", NULL);
	g_autofree char *secret = g_build_filename(dir, "secret", NULL);
	g_autofree char *patch = g_strdup_printf("SECRET-PATH %s\n+++ b/x.c\n", secret);
	g_autofree char *people = NULL;
	struct maintainers m;
	double seconds;
	g_autoptr(GError) error = NULL;

	if (!sandbox) {
		g_test_skip("no sandbox on this machine");
		return;
	}
	g_assert_cmpint(chmod(testlib_scratch(), 0711), ==, 0);
	g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
	g_assert_true(g_file_set_contents(secret, "leaked\n", -1, NULL));
	g_assert_cmpint(chmod(secret, 0644), ==, 0);
	error = run_hostile("escape.pl", patch, 0, &m, &seconds);
	g_assert_no_error(error);
	people = joined(m.people);
	/* Nothing written, nothing read outside its directory, no network. */
	g_assert_cmpstr(people, ==, "Boxed <boxed@example.org>");
	maintainers_release(&m);
}

/* The cached Linux tree's git directory, or NULL when it was never imported. */
static char *linux_git(void)
{
	const char *root = g_getenv("ZERODAY_TEST_CACHE");
	g_autofree char *fallback = NULL;
	g_autofree char *git = NULL;

	if (!root) {
		fallback = geteuid() == 0 ? g_strdup("/var/cache/zeroday-test")
					  : g_build_filename(g_get_user_cache_dir(), "zeroday-test",
							     NULL);
		root = fallback;
	}
	git = g_build_filename(root, "linux-6.1", ".git", NULL);
	return g_file_test(git, G_FILE_TEST_IS_DIR) ? g_steal_pointer(&git) : NULL;
}

static void test_linux(void)
{
	static const char patch[] =
		"From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
		"From: A <a@example.org>\nSubject: [PATCH] e1000: a change\n\n---\n"
		"diff --git a/drivers/net/ethernet/intel/e1000/e1000_main.c "
		"b/drivers/net/ethernet/intel/e1000/e1000_main.c\n"
		"--- a/drivers/net/ethernet/intel/e1000/e1000_main.c\n"
		"+++ b/drivers/net/ethernet/intel/e1000/e1000_main.c\n"
		"@@ -1,1 +1,1 @@\n-a\n+b\n";
	g_autoptr(GError) error = NULL;
	g_autofree char *git = linux_git();
	g_autofree char *head = NULL;
	g_autofree char *people = NULL;
	g_autofree char *lists = NULL;
	const struct maintainers_opts opts = { .sandbox = sandbox };
	zd_autoptr(repo) repo = NULL;
	struct maintainers m;

	if (!git) {
		g_test_skip("the Linux tree is not in the test cache (tests/linux-import.sh)");
		return;
	}
	if (!sandbox) {
		g_test_skip("no sandbox on this machine: a tree's script is never run without");
		return;
	}
	repo = repo_open(git, &error);
	g_assert_no_error(error);
	head = testlib_git(git, "rev-parse", "HEAD", NULL);
	if (!repo)
		return;
	maintainers_init(&m);
	g_assert_true(maintainers_of_patch(&m, repo, head, patch, strlen(patch), &opts, &error));
	g_assert_no_error(error);
	people = joined(m.people);
	lists = joined(m.lists);
	g_test_message("people: %s; lists: %s", people, lists);
	/* Linux 6.1's MAINTAINERS: INTEL ETHERNET DRIVERS, NETWORKING DRIVERS. */
	g_assert_nonnull(strstr(people, "Jakub Kicinski <kuba@kernel.org>"));
	g_assert_nonnull(strstr(people, "Tony Nguyen <anthony.l.nguyen@intel.com>"));
	g_assert_cmpstr(lists, ==, "intel-wired-lan@lists.osuosl.org|netdev@vger.kernel.org|"
			"linux-kernel@vger.kernel.org");
	maintainers_release(&m);
}

static void setup_fixture(void)
{
	g_autofree char *script = data_file("get_maintainer.pl");
	g_autofree char *file = data_file("MAINTAINERS");
	g_autofree char *c1 = NULL;
	g_autofree char *c2 = NULL;
	g_autofree char *c3 = NULL;
	g_autofree char *out = NULL;

	work = testlib_mkdir("tree");
	testlib_repo_init(work);
	bare = testlib_commit(work, "drivers/net/foo.c", "int foo;\n", "no script yet");
	c1 = testlib_commit(work, "MAINTAINERS", file, "MAINTAINERS");
	c2 = testlib_commit(work, "scripts/get_maintainer.pl", script, "get_maintainer.pl");
	c3 = testlib_commit(work, "fs/file.c", "int file;\n", "fs: a file");
	{
		g_autofree char *path = g_build_filename(work, "drivers/net/foo.c", NULL);

		g_assert_true(g_file_set_contents(path, "int foo = 1;\n", -1, NULL));
		out = testlib_git(work, "commit", "-q", "-a", "-m",
				  "net: foo breaks\n\nThe body of the message.", NULL);
		culprit = testlib_git(work, "rev-parse", "HEAD", NULL);
	}
	evil = testlib_commit(work, "drivers/net/evil.c", "int evil;\n", "net: evil");
}

int main(int argc, char **argv)
{
	struct repo_limits limits = { 0 };
	g_autoptr(GError) error = NULL;
	int rc;

	testlib_init(&argc, &argv);
	if (!repo_global_init(&limits, &error))
		g_error("%s", error->message);
	sandbox = run_sandbox_available(&error);
	if (!sandbox)
		g_test_message("running the scripts without a sandbox: %s", error->message);
	g_clear_error(&error);
	setup_fixture();
	g_test_add_func("/maintainers/patch", test_patch);
	g_test_add_func("/maintainers/commit", test_commit);
	g_test_add_func("/maintainers/no-script", test_no_script);
	g_test_add_func("/maintainers/hostile/sleep", test_hostile_sleep);
	g_test_add_func("/maintainers/hostile/flood", test_hostile_flood);
	g_test_add_func("/maintainers/hostile/fail", test_hostile_fail);
	g_test_add_func("/maintainers/hostile/escape", test_hostile_escape);
	g_test_add_func("/maintainers/linux", test_linux);
	rc = g_test_run();
	g_free(work);
	g_free(culprit);
	g_free(evil);
	g_free(bare);
	return rc;
}
