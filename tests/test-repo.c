/*
 * The shared object store against a real git daemon, plus a silent fake
 * server for the timeout (fault injection only).
 */
#include "autoconfig.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine/engine.h"
#include "engine/repo.h"
#include "tests/testlib.h"

static struct testlib_daemon *daemon_;
static char *served;  /* work repo served as "proj" */
static char *c1, *c2, *c3;

static void setup_served(void)
{
	g_autofree char *base = testlib_mkdir("served");
	g_autofree char *out = NULL;

	served = g_build_filename(base, "proj", NULL);
	testlib_repo_init(served);
	c1 = testlib_commit(served, "a.c", "int a;\n", "first");
	c2 = testlib_commit(served, "b.c", "int b;\n", "second\n\nDont-Auto-Build\n");
	c3 = testlib_commit(served, "c.c", "int c;\n", "third");
	/* Names a hostile server might advertise; git itself accepts them. */
	out = testlib_git(served, "update-ref", "refs/heads/-evil", c1, NULL);
	g_free(out);
	out = testlib_git(served, "update-ref", "refs/heads/$(id)", c1, NULL);
	g_free(out);
	out = testlib_git(served, "update-ref", "refs/heads/for-next", c2, NULL);
	daemon_ = testlib_daemon_start(base);
}

static const char *head_of(GPtrArray *heads, const char *branch)
{
	for (guint i = 0; heads && i < heads->len; i++) {
		const struct repo_head *h = heads->pdata[i];

		if (strcmp(h->branch, branch) == 0)
			return h->oid;
	}
	return NULL;
}

static void test_ls_remote(void)
{
	g_autofree char *url = testlib_daemon_url(daemon_, "proj");
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) heads = repo_ls_remote(url, NULL, &error);

	g_assert_no_error(error);
	g_assert_nonnull(heads);
	/* The hostile names are left out; the others are exact. */
	g_assert_cmpuint(heads ? heads->len : 0, ==, 2);
	g_assert_cmpstr(head_of(heads, "master"), ==, c3);
	g_assert_cmpstr(head_of(heads, "for-next"), ==, c2);
	g_assert_null(head_of(heads, "-evil"));
	g_assert_null(head_of(heads, "$(id)"));
}

static void test_fetch_and_walk(void)
{
	g_autofree char *url = testlib_daemon_url(daemon_, "proj");
	g_autofree char *store = g_build_filename(testlib_scratch(), "store.git", NULL);
	g_autoptr(GError) error = NULL;
	zd_autoptr(repo) repo = repo_open(store, &error);
	const char *branches[] = { "master", "for-next", NULL };
	const char *hide[] = { NULL, NULL };
	g_autoptr(GPtrArray) walked = NULL;
	g_autofree char *head = NULL;
	bool truncated = true;

	g_assert_no_error(error);
	if (!repo)
		return;
	g_assert_false(repo_has_commit(repo, c3));
	g_assert_true(repo_fetch(repo, url, "proj", branches, NULL, &error));
	g_assert_no_error(error);
	g_assert_true(repo_has_commit(repo, c3));
	head = repo_tree_branch_head(repo, "proj", "for-next", &error);
	g_assert_cmpstr(head, ==, c2);

	/* All, oldest first, with the marker seen. */
	walked = repo_walk_new(repo, c3, hide, 100, &truncated, &error);
	g_assert_no_error(error);
	g_assert_false(truncated);
	g_assert_cmpuint(walked->len, ==, 3);
	g_assert_cmpstr(((struct repo_commit *)walked->pdata[0])->oid, ==, c1);
	g_assert_cmpstr(((struct repo_commit *)walked->pdata[0])->summary, ==, "first");
	g_assert_false(((struct repo_commit *)walked->pdata[0])->dont_auto_build);
	g_assert_true(((struct repo_commit *)walked->pdata[1])->dont_auto_build);
	g_assert_cmpstr(((struct repo_commit *)walked->pdata[2])->oid, ==, c3);
	g_clear_pointer(&walked, g_ptr_array_unref);

	/* Hidden ancestors and unknown hidden ids. */
	hide[0] = c1;
	walked = repo_walk_new(repo, c3, (const char *[]){ c1, "0123456789012345678901234567890123456789", NULL },
			       100, &truncated, &error);
	g_assert_cmpuint(walked->len, ==, 2);
	g_assert_cmpstr(((struct repo_commit *)walked->pdata[0])->oid, ==, c2);
	g_clear_pointer(&walked, g_ptr_array_unref);

	/* The limit keeps the newest. */
	walked = repo_walk_new(repo, c3, NULL, 2, &truncated, &error);
	g_assert_true(truncated);
	g_assert_cmpuint(walked->len, ==, 2);
	g_assert_cmpstr(((struct repo_commit *)walked->pdata[1])->oid, ==, c3);
	g_clear_pointer(&walked, g_ptr_array_unref);

	g_assert_cmpint(repo_is_ancestor(repo, c1, c3, &error), ==, 1);
	g_assert_cmpint(repo_is_ancestor(repo, c3, c1, &error), ==, 0);
	g_assert_cmpint(repo_is_ancestor(repo, c3, c3, &error), ==, 1);
	g_assert_no_error(error);

	/* Refs: set, delete, forget. */
	g_assert_true(repo_set_tree_branch(repo, "other", "x", c1, &error));
	g_assert_false(repo_set_tree_branch(repo, "other", "y",
					    "0123456789012345678901234567890123456789", &error));
	g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_NOT_FOUND);
	g_clear_error(&error);
	g_assert_true(repo_forget_tree(repo, "proj", &error));
	g_assert_null(repo_tree_branch_head(repo, "proj", "master", &error));
	g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_NOT_FOUND);
	g_clear_error(&error);
	g_free(head);
	head = repo_tree_branch_head(repo, "other", "x", &error);
	g_assert_cmpstr(head, ==, c1);
	g_assert_true(repo_set_tree_branch(repo, "other", "x", NULL, &error));
	g_assert_true(repo_set_tree_branch(repo, "other", "x", NULL, &error));
	g_assert_false(repo_set_tree_branch(repo, "other", "-x", c1, &error));
	g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID);
}

/*
 * A commit's subject is the author's: a 1 MB one with terminal escapes is
 * cut to REPO_SUMMARY_MAX bytes at a character boundary, without control
 * characters, as it enters from git.
 */
static void test_hostile_summary(void)
{
	g_autofree char *dir = testlib_mkdir("hostile-summary");
	g_autofree char *msg = g_build_filename(testlib_scratch(), "hostile-summary.msg", NULL);
	g_autofree char *gitdir = g_build_filename(dir, ".git", NULL);
	g_autoptr(GString) text = g_string_new("\x1b[31mred\ttab\r\x7f\xc2\x85\xe2\x80\xae ");
	g_autoptr(GString) expect = g_string_new("[31mred tab ");
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) walked = NULL;
	zd_autoptr(repo) repo = NULL;
	g_autofree char *a = NULL;
	g_autofree char *b = NULL;
	g_autofree char *head = NULL;
	bool truncated;

	/* "é" is two bytes: the cut must not split one. */
	while (text->len < 1000000)
		g_string_append(text, "\xc3\xa9");
	while (expect->len + 2 + 3 <= REPO_SUMMARY_MAX)
		g_string_append(expect, "\xc3\xa9");
	g_string_append(expect, "...");
	g_string_append(text, "\n\nThe body.\n");
	g_assert_true(g_file_set_contents(msg, text->str, -1, NULL));
	testlib_repo_init(dir);
	a = testlib_git(dir, "commit", "-q", "--allow-empty", "--cleanup=verbatim", "-F", msg,
			NULL);
	head = testlib_git(dir, "rev-parse", "HEAD", NULL);
	g_strstrip(head);
	b = testlib_commit(dir, "a.c", "int a;\n", "a\ttab and a \x01 control");

	repo = repo_open(gitdir, &error);
	g_assert_no_error(error);
	if (!repo)
		return;
	walked = repo_walk_new(repo, g_strstrip(b), NULL, 10, &truncated, &error);
	g_assert_no_error(error);
	g_assert_cmpuint(walked ? walked->len : 0, ==, 2);
	if (!walked || walked->len != 2)
		return;
	{
		const char *s = ((struct repo_commit *)walked->pdata[0])->summary;

		g_assert_cmpstr(((struct repo_commit *)walked->pdata[0])->oid, ==, head);
		g_assert_cmpuint(strlen(s), <=, REPO_SUMMARY_MAX);
		g_assert_true(g_utf8_validate(s, -1, NULL));
		g_assert_cmpstr(s, ==, expect->str);
	}
	g_assert_cmpstr(((struct repo_commit *)walked->pdata[1])->summary, ==,
			"a tab and a  control");
}

/* A server that accepts connections and never says a word. */
static int silent_server(int *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	g_assert_cmpint(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
	g_assert_cmpint(listen(fd, 8), ==, 0);
	g_assert_cmpint(getsockname(fd, (struct sockaddr *)&sa, &len), ==, 0);
	*port = ntohs(sa.sin_port);
	return fd;
}

static void test_timeout(void)
{
	int port;
	int fd = silent_server(&port);
	g_autofree char *url = g_strdup_printf("git://127.0.0.1:%d/proj", port);
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) heads = repo_ls_remote(url, NULL, &error);

	g_assert_null(heads);
	g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_TIMEOUT);
	if (error)
		g_assert_nonnull(strstr(error->message, url));
	close(fd);
}

static void test_refused(void)
{
	g_autofree char *url = g_strdup_printf("git://127.0.0.1:%d/proj", testlib_free_port());
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) heads = repo_ls_remote(url, NULL, &error);

	g_assert_null(heads);
	g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED);
}

/* Accepts what waits in @fd's backlog (@fd non-blocking); returns how many. */
static int accept_all(int fd)
{
	int n = 0;
	int c;

	while ((c = accept(fd, NULL, NULL)) >= 0) {
		close(c);
		n++;
	}
	g_assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
	return n;
}

/*
 * A URL from a stranger must not reach this machine in any spelling: the
 * refusal comes before connect(), so a real listener on 127.0.0.1 sees
 * nothing. An allowed host does connect (the listener never answers, so
 * the operation times out).
 */
static void test_policy(void)
{
	static const char *const spellings[] = {
		"127.0.0.1", "localhost", "127.1", "2130706433", "0x7f000001", "0177.0.0.1",
		"[::ffff:127.0.0.1]", "[::1]",
	};
	const char *const allowed[] = { "127.0.0.1", NULL };
	const struct repo_net_policy public_only = { .public_only = true };
	const struct repo_net_policy exempt = { .public_only = true, .allowed_hosts = allowed };
	g_autofree char *store = g_build_filename(testlib_scratch(), "policy.git", NULL);
	g_autofree char *daemon_url = testlib_daemon_url(daemon_, "proj");
	const char *branches[] = { "master", NULL };
	g_autoptr(GError) error = NULL;
	zd_autoptr(repo) repo = NULL;
	int port;
	int fd = silent_server(&port);

	g_assert_cmpint(fcntl(fd, F_SETFL, O_NONBLOCK), ==, 0);
	for (size_t i = 0; i < G_N_ELEMENTS(spellings); i++) {
		g_autofree char *url = g_strdup_printf("git://%s:%d/x", spellings[i], port);
		g_autoptr(GPtrArray) heads = repo_ls_remote(url, &public_only, &error);

		g_test_message("%s: %s", url, error ? error->message : "(no error)");
		g_assert_null(heads);
		g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID);
		if (error)
			g_assert_nonnull(strstr(error->message, "internal address"));
		g_clear_error(&error);
	}
	g_assert_cmpint(accept_all(fd), ==, 0);

	/* A fetch obeys the same policy; the git daemon on 127.0.0.1 is not reached. */
	repo = repo_open(store, &error);
	g_assert_no_error(error);
	if (repo) {
		g_assert_false(repo_fetch(repo, daemon_url, "proj", branches, &public_only,
					  &error));
		g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID);
		g_clear_error(&error);
		g_assert_false(repo_has_commit(repo, c3));
	}

	/* An allowed host connects: the listener sees exactly one connection. */
	{
		g_autofree char *url = g_strdup_printf("git://127.0.0.1:%d/x", port);
		g_autoptr(GPtrArray) heads = repo_ls_remote(url, &exempt, &error);

		g_assert_null(heads);
		g_assert_nonnull(error);
		if (error)
			g_assert_cmpint(error->code, !=, ENGINE_ERROR_INVALID);
		g_clear_error(&error);
	}
	g_assert_cmpint(accept_all(fd), ==, 1);
	/* The exemption is for the host as typed: another spelling is still refused. */
	{
		g_autofree char *url = g_strdup_printf("git://127.1:%d/x", port);
		g_autoptr(GPtrArray) heads = repo_ls_remote(url, &exempt, &error);

		g_assert_null(heads);
		g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID);
		g_clear_error(&error);
	}
	g_assert_cmpint(accept_all(fd), ==, 0);
	close(fd);
}

static void test_local(void)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) heads = repo_ls_remote(served, NULL, &error);

	g_assert_no_error(error);
	g_assert_cmpstr(head_of(heads, "master"), ==, c3);
}

/*
 * Exports to a spool: a commit with its history into an empty repository
 * (its pack holds deltas between the versions of a file), then an older
 * commit already there, then one after a gap; each lands whole, with the
 * first parent answered from the store.
 */
static void test_export(void)
{
	g_autofree char *dir = testlib_mkdir("export");
	g_autofree char *work = g_build_filename(dir, "work", NULL);
	g_autofree char *gitdir = g_build_filename(work, ".git", NULL);
	g_autofree char *spool = g_build_filename(dir, "spool.git", NULL);
	g_autoptr(GError) error = NULL;
	g_autoptr(GString) text = g_string_new(NULL);
	char *commits[5];
	zd_autoptr(repo) store = NULL;
	zd_autoptr(repo) dst = NULL;
	g_autofree char *parent = NULL;

	testlib_repo_init(work);
	for (int i = 0; i < 5; i++) {
		g_autofree char *msg = g_strdup_printf("version %d", i);

		for (int line = 0; line < 400; line++)
			g_string_append_printf(text, "line %d of version %d\n", line, i);
		commits[i] = testlib_commit(work, "f.txt", text->str, msg);
	}
	store = repo_open(gitdir, &error);
	g_assert_no_error(error);
	g_assert_true(repo_export(store, commits[2], spool, &error));
	g_assert_no_error(error);
	g_assert_true(repo_export(store, commits[0], spool, &error));
	g_assert_true(repo_export(store, commits[4], spool, &error));
	g_assert_no_error(error);
	dst = repo_open(spool, &error);
	g_assert_no_error(error);
	for (int i = 0; i < 5; i++)
		g_assert_true(repo_has_commit(dst, commits[i]));
	parent = repo_first_parent(store, commits[4], &error);
	g_assert_cmpstr(parent, ==, commits[3]);
	g_assert_null(repo_first_parent(store, commits[0], &error));
	g_assert_no_error(error);
	g_assert_null(repo_first_parent(store, "0123456789012345678901234567890123456789", &error));
	g_assert_nonnull(error);
	for (int i = 0; i < 5; i++)
		g_free(commits[i]);
}

int main(int argc, char **argv)
{
	struct repo_limits limits = { .connect_timeout_s = 5, .io_timeout_s = 1,
				      .fetch_timeout_s = 60, .max_pack_objects = 100000,
				      .max_pack_bytes = 1 << 30 };
	g_autoptr(GError) error = NULL;
	int rc;

	testlib_init(&argc, &argv);
	if (!repo_global_init(&limits, &error))
		g_error("%s", error->message);
	setup_served();
	g_test_add_func("/repo/ls-remote", test_ls_remote);
	g_test_add_func("/repo/fetch-and-walk", test_fetch_and_walk);
	g_test_add_func("/repo/timeout", test_timeout);
	g_test_add_func("/repo/refused", test_refused);
	g_test_add_func("/repo/local", test_local);
	g_test_add_func("/repo/export", test_export);
	g_test_add_func("/repo/policy", test_policy);
	g_test_add_func("/repo/hostile-summary", test_hostile_summary);
	rc = g_test_run();
	testlib_daemon_stop(daemon_);
	return rc;
}
