/*
 * Test helpers: see testlib.h.
 */
#include "autoconfig.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "tests/testlib.h"

static char *scratch;

static void remove_scratch(void)
{
	g_autofree char *quoted = NULL;
	const char *argv[] = { "rm", "-rf", scratch, NULL };

	if (!scratch || g_test_failed() || g_getenv("ZERODAY_KEEP_SCRATCH"))
		return;
	g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, NULL,
		     NULL, NULL);
}

void testlib_init(int *argc, char ***argv)
{
	g_autofree char *home = NULL;

	g_test_init(argc, argv, NULL);
	g_test_set_nonfatal_assertions();
	scratch = g_dir_make_tmp("zeroday-test-XXXXXX", NULL);
	g_assert_nonnull(scratch);
	atexit(remove_scratch);
	home = g_build_filename(scratch, "home", NULL);
	g_mkdir(home, 0700);
	g_setenv("HOME", home, TRUE);
	g_setenv("XDG_CONFIG_HOME", home, TRUE);
	g_setenv("XDG_STATE_HOME", home, TRUE);
	g_setenv("GIT_CONFIG_NOSYSTEM", "1", TRUE);
	g_setenv("GIT_AUTHOR_NAME", "Test Author", TRUE);
	g_setenv("GIT_AUTHOR_EMAIL", "author@example.org", TRUE);
	g_setenv("GIT_COMMITTER_NAME", "Test Committer", TRUE);
	g_setenv("GIT_COMMITTER_EMAIL", "committer@example.org", TRUE);
	g_unsetenv("ZERODAY_CONFIG");
	signal(SIGPIPE, SIG_IGN);
}

const char *testlib_scratch(void)
{
	return scratch;
}

char *testlib_mkdir(const char *name)
{
	char *dir = g_build_filename(scratch, name, NULL);

	g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
	return dir;
}

char *testlib_git(const char *dir, ...)
{
	g_autoptr(GPtrArray) argv = g_ptr_array_new();
	g_autoptr(GError) error = NULL;
	g_autofree char *err = NULL;
	char *out = NULL;
	int status = 0;
	va_list ap;

	g_ptr_array_add(argv, (char *)"git");
	va_start(ap, dir);
	for (const char *a = va_arg(ap, const char *); a; a = va_arg(ap, const char *))
		g_ptr_array_add(argv, (char *)a);
	va_end(ap);
	g_ptr_array_add(argv, NULL);
	if (!g_spawn_sync(dir, (char **)argv->pdata, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
			  &out, &err, &status, &error) ||
	    !g_spawn_check_wait_status(status, &error)) {
		g_autofree char *cmd = g_strjoinv(" ", (char **)argv->pdata);

		g_test_message("git failed in %s: %s: %s\n%s", dir, cmd,
			       error ? error->message : "", err ? err : "");
		g_test_fail();
		g_free(out);
		return g_strdup("");
	}
	g_strchomp(out);
	return out;
}

void testlib_repo_init(const char *dir)
{
	g_autofree char *a = NULL;
	g_autofree char *b = NULL;

	g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
	a = testlib_git(dir, "init", "-q", "-b", "master", NULL);
	b = testlib_git(dir, "config", "gc.auto", "0", NULL);
}

char *testlib_commit(const char *dir, const char *file, const char *content,
		     const char *message)
{
	g_autofree char *path = g_build_filename(dir, file, NULL);
	g_autofree char *parent = g_path_get_dirname(path);
	g_autofree char *a = NULL;
	g_autofree char *b = NULL;

	g_mkdir_with_parents(parent, 0755);
	g_assert_true(g_file_set_contents(path, content, -1, NULL));
	a = testlib_git(dir, "add", file, NULL);
	b = testlib_git(dir, "commit", "-q", "-m", message, NULL);
	return testlib_git(dir, "rev-parse", "HEAD", NULL);
}

int testlib_free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	int port;

	g_assert_cmpint(fd, >=, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	g_assert_cmpint(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
	g_assert_cmpint(getsockname(fd, (struct sockaddr *)&sa, &len), ==, 0);
	port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

static bool port_open(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	bool ok;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return ok;
}

/* The daemon dies with the test, even when the test crashes. */
static void die_with_parent(gpointer data)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
}

struct testlib_daemon *testlib_daemon_start(const char *base)
{
	g_autofree char *exec_path = testlib_git(NULL, "--exec-path", NULL);
	g_autofree char *program = g_build_filename(exec_path, "git-daemon", NULL);

	for (int attempt = 0; attempt < 5; attempt++) {
		struct testlib_daemon *d = g_new0(struct testlib_daemon, 1);
		g_autofree char *port_arg = NULL;
		g_autofree char *base_arg = g_strdup_printf("--base-path=%s", base);
		g_autoptr(GError) error = NULL;

		d->port = testlib_free_port();
		d->base = g_strdup(base);
		port_arg = g_strdup_printf("--port=%d", d->port);
		const char *argv[] = { program, "--reuseaddr", "--export-all",
				       "--listen=127.0.0.1", port_arg, base_arg, base, NULL };
		if (!g_spawn_async(NULL, (char **)argv, NULL,
				   G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDOUT_TO_DEV_NULL |
				   G_SPAWN_STDERR_TO_DEV_NULL, die_with_parent, NULL,
				   &d->pid, &error))
			g_error("cannot start git daemon: %s", error->message);
		/* Wait for it to listen, or to die because the port was taken. */
		for (int i = 0; i < 200; i++) {
			int status;

			if (port_open(d->port))
				return d;
			if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
				d->pid = 0;
				break;
			}
			g_usleep(50 * 1000);
		}
		testlib_daemon_stop(d);
	}
	g_error("git daemon did not start");
}

void testlib_daemon_stop(struct testlib_daemon *d)
{
	if (!d)
		return;
	if (d->pid > 0) {
		kill(d->pid, SIGTERM);
		waitpid(d->pid, NULL, 0);
		g_spawn_close_pid(d->pid);
	}
	g_free(d->base);
	g_free(d);
}

char *testlib_daemon_url(const struct testlib_daemon *d, const char *name)
{
	return g_strdup_printf("git://127.0.0.1:%d/%s", d->port, name);
}

char *testlib_boot_kernel(void)
{
	g_autoptr(GDir) dir = g_dir_open("/boot", 0, NULL);
	const char *name;
	char *kernel = NULL;

	g_assert_cmpint(g_chmod(testlib_scratch(), 0755), ==, 0);
	while (dir && (name = g_dir_read_name(dir)) && !kernel) {
		if (g_str_has_prefix(name, "vmlinuz-"))
			kernel = g_build_filename("/boot", name, NULL);
	}
	g_assert_nonnull(kernel);
	return kernel;
}

void testlib_check_diags(GPtrArray *got, const char *const *want,
			 char *(*show)(const struct diag *d))
{
	guint n = want ? g_strv_length((char **)want) : 0;

	for (guint i = 0; i < got->len; i++) {
		g_autofree char *s = show(got->pdata[i]);

		g_test_message("new: %s", s);
		if (i < n)
			g_assert_cmpstr(s, ==, want[i]);
	}
	g_assert_cmpuint(got->len, ==, n);
}
