/*
 * Child processes: exit codes, captured output, timeouts that kill the
 * whole process group, resource limits, and the bubblewrap sandbox with
 * its escapes blocked.
 */
#include "autoconfig.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/engine.h"
#include "engine/run.h"
#include "tests/testlib.h"

static char *read_file(const char *path)
{
	char *text = NULL;

	if (!g_file_get_contents(path, &text, NULL, NULL))
		return g_strdup("");
	return text;
}

static void test_exit_and_log(void)
{
	g_autofree char *dir = testlib_mkdir("exit");
	g_autofree char *log = g_build_filename(dir, "log", NULL);
	g_autofree char *text = NULL;
	const char *argv[] = { "sh", "-c", "echo out; echo err >&2; echo $LC_ALL; pwd; exit 3", NULL };
	struct run_opts opts = { .argv = argv, .log_path = log, .cwd = dir };
	struct run_result r;
	g_autoptr(GError) error = NULL;
	g_autofree char *expect = NULL;

	g_assert_true(run_child(&r, &opts, &error));
	g_assert_no_error(error);
	g_assert_cmpint(r.outcome, ==, RUN_EXITED);
	g_assert_cmpint(r.status, ==, 3);
	text = read_file(log);
	expect = g_strdup_printf("out\nerr\nC\n%s\n", dir);
	g_assert_cmpstr(text, ==, expect);
}

static void test_not_found(void)
{
	const char *argv[] = { "zeroday-no-such-program", NULL };
	struct run_opts opts = { .argv = argv };
	struct run_result r;
	g_autoptr(GError) error = NULL;

	g_assert_false(run_child(&r, &opts, &error));
	g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_NOT_FOUND);
}

static void test_timeout_kills_group(void)
{
	g_autofree char *dir = testlib_mkdir("timeout");
	g_autofree char *pidfile = g_build_filename(dir, "pid", NULL);
	g_autofree char *script = g_strdup_printf("sleep 60 & echo $! > %s; wait", pidfile);
	const char *argv[] = { "sh", "-c", script, NULL };
	struct run_opts opts = { .argv = argv, .timeout_s = 1 };
	struct run_result r;
	g_autoptr(GError) error = NULL;
	g_autofree char *pid = NULL;

	g_assert_true(run_child(&r, &opts, &error));
	g_assert_cmpint(r.outcome, ==, RUN_TIMEOUT);
	pid = read_file(pidfile);
	g_assert_cmpstr(pid, !=, "");
	/* The grandchild died with its group: gone, or a zombie awaiting init. */
	g_usleep(100000);
	{
		g_autofree char *stat_path = g_strdup_printf("/proc/%s/stat", g_strstrip(pid));
		g_autofree char *stat = read_file(stat_path);
		const char *state = strrchr(stat, ')');

		g_assert_true(*stat == '\0' || (state && state[2] == 'Z'));
	}
}

static void test_limits(void)
{
	g_autofree char *dir = testlib_mkdir("limits");
	g_autofree char *log = g_build_filename(dir, "log", NULL);
	g_autofree char *text = NULL;
	const char *argv[] = { "bash", "-c", "ulimit -v; ulimit -u", NULL };
	struct run_opts opts = { .argv = argv, .log_path = log,
				 .max_memory = G_GUINT64_CONSTANT(512) << 20, .max_procs = 1000 };
	struct run_result r;

	g_assert_true(run_child(&r, &opts, NULL));
	text = read_file(log);
	g_assert_cmpstr(text, ==, "524288\n1000\n");
}

/* A listener that records whether anyone connected. */
static int listener(int *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	g_assert_cmpint(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
	g_assert_cmpint(listen(fd, 8), ==, 0);
	g_assert_cmpint(getsockname(fd, (struct sockaddr *)&sa, &len), ==, 0);
	*port = ntohs(sa.sin_port);
	return fd;
}

static void test_sandbox(void)
{
	g_autofree char *src = testlib_mkdir("sb/src");
	g_autofree char *build = g_build_filename(testlib_scratch(), "sb", "build", NULL);
	g_autofree char *outside = testlib_mkdir("sb/outside");
	g_autofree char *log = g_build_filename(testlib_scratch(), "sb", "log", NULL);
	g_autofree char *srcfile = g_build_filename(src, "file.c", NULL);
	g_autofree char *script = NULL;
	g_autofree char *text = NULL;
	g_autoptr(GError) error = NULL;
	int port, fd, conn;

	/*
	 * The sandbox is set up with zeroday's privileges: directories inside
	 * a mode-0700 one (a root's home) are bound all the same.
	 */
	g_assert_cmpint(chmod(testlib_scratch(), 0700), ==, 0);
	if (!run_sandbox_available(&error)) {
		g_test_skip_printf("no sandbox on this machine: %s", error->message);
		return;
	}
	g_assert_true(run_sandbox_prepare_dir(build, &error));
	g_assert_true(g_file_set_contents(srcfile, "int x;\n", -1, NULL));
	fd = listener(&port);
	script = g_strdup_printf(
		"echo uid=$(id -u)\n"
		"cat %s/file.c\n"
		"touch %s/built && echo build-writable\n"
		"touch %s/pwned 2>/dev/null || echo src-readonly\n"
		"touch %s/pwned 2>/dev/null || echo outside-invisible\n"
		"cat /etc/shadow >/dev/null 2>&1 || echo no-shadow\n"
		"(echo hello > /dev/tcp/127.0.0.1/%d) 2>/dev/null || echo no-network\n"
		"echo tmp > /tmp/x && echo tmp-private\n",
		src, build, src, outside, port);
	{
		const struct run_bind binds[] = {
			{ src, NULL, false }, { build, NULL, true }, { NULL, NULL, false },
		};
		const char *argv[] = { "bash", "-c", script, NULL };
		struct run_sandbox sandbox = { .binds = binds };
		struct run_opts opts = { .argv = argv, .log_path = log, .sandbox = &sandbox,
					 .cwd = build, .timeout_s = 60 };
		struct run_result r;
		g_autofree char *built = g_build_filename(build, "built", NULL);
		g_autofree char *pwned_src = g_build_filename(src, "pwned", NULL);
		g_autofree char *pwned_out = g_build_filename(outside, "pwned", NULL);

		g_assert_true(run_child(&r, &opts, &error));
		g_assert_no_error(error);
		g_assert_cmpint(r.outcome, ==, RUN_EXITED);
		g_assert_cmpint(r.status, ==, 0);
		text = read_file(log);
		g_test_message("sandbox said:\n%s", text);
		g_assert_null(strstr(text, "uid=0\n"));
		g_assert_nonnull(strstr(text, "int x;\nbuild-writable\nsrc-readonly\n"
					      "outside-invisible\nno-shadow\nno-network\n"
					      "tmp-private\n"));
		g_assert_true(g_file_test(built, G_FILE_TEST_EXISTS));
		g_assert_false(g_file_test(pwned_src, G_FILE_TEST_EXISTS));
		g_assert_false(g_file_test(pwned_out, G_FILE_TEST_EXISTS));
		{
			g_autofree char *host_tmp = read_file("/tmp/x");

			g_assert_cmpstr(host_tmp, !=, "tmp\n");
		}
	}
	conn = accept(fd, NULL, NULL);
	g_assert_cmpint(conn, ==, -1);
	close(fd);
}

/* A sandbox whose bind source is missing is a setup failure, not an exit. */
static void test_sandbox_setup_failed(void)
{
	g_autofree char *dir = testlib_mkdir("sbfail");
	g_autofree char *missing = g_build_filename(dir, "missing", NULL);
	const struct run_bind binds[] = { { missing, "/x", false }, { NULL, NULL, false } };
	const char *argv[] = { "true", NULL };
	const char *argv_missing[] = { "zeroday-no-such-program", NULL };
	struct run_sandbox sandbox = { .binds = binds };
	struct run_opts opts = { .argv = argv, .sandbox = &sandbox, .timeout_s = 60 };
	struct run_result r;
	g_autoptr(GError) error = NULL;

	if (!run_sandbox_available(&error)) {
		g_test_skip_printf("no sandbox on this machine: %s", error->message);
		return;
	}
	g_assert_true(run_child(&r, &opts, &error));
	g_assert_cmpint(r.outcome, ==, RUN_SETUP_FAILED);
	g_test_message("detail: %s", r.detail);
	g_assert_true(g_str_has_prefix(r.detail, "bwrap: "));
	/* A program that is not there, inside the sandbox. */
	sandbox.binds = NULL;
	opts.argv = argv_missing;
	g_assert_true(run_child(&r, &opts, &error));
	g_assert_cmpint(r.outcome, ==, RUN_SETUP_FAILED);
	g_test_message("detail: %s", r.detail);
}

/* The log keeps the head and the tail of a flood, and says what it cut. */
static void test_log_cap(void)
{
	g_autofree char *dir = testlib_mkdir("logcap");
	g_autofree char *log = g_build_filename(dir, "log", NULL);
	g_autofree char *text = NULL;
	gsize len;
	const char *argv[] = { "sh", "-c",
			       "echo FIRST; yes 'a line of output, over and over' | head -c 20000000;"
			       " echo; echo LAST", NULL };
	struct run_opts opts = { .argv = argv, .log_path = log, .log_max = 65536 };
	struct run_result r;

	g_assert_true(run_child(&r, &opts, NULL));
	g_assert_cmpint(r.outcome, ==, RUN_EXITED);
	g_assert_cmpuint(r.output, >, 20000000);
	g_assert_true(g_file_get_contents(log, &text, &len, NULL));
	g_assert_cmpuint(len, <, 65536 + 200);
	g_assert_true(g_str_has_prefix(text, "FIRST\n"));
	g_assert_true(g_str_has_suffix(text, "\nLAST\n"));
	g_assert_nonnull(strstr(text, "bytes of output cut here"));
}

/*
 * A cut keeps whole lines: a fragment on either side of it ("x.c:3:2:
 * warning: 'strncpy' output may be trunc", "rc/x.c:8:1: ...") would read
 * as a diagnostic of its own. Caps whose halves are longer and shorter
 * than what the pipe gives at once, and than a line.
 */
static void test_log_cap_lines(void)
{
	g_autofree char *dir = testlib_mkdir("logcaplines");
	const char *argv[] = { "sh", "-c",
			       "seq 0 4999 | sed 's/.*/x.c:&:2: warning: number & of the output, whole/'",
			       NULL };
	static const guint64 caps[] = { 10001, 2001, 64 };
	g_autoptr(GRegex) whole = g_regex_new("^x\\.c:([0-9]+):2: warning: number \\1 of the output, "
					      "whole$", 0, 0, NULL);
	g_autoptr(GRegex) note = g_regex_new("^\\[zeroday: ([0-9]+) bytes of output cut here; ",
					     0, 0, NULL);

	for (size_t i = 0; i < G_N_ELEMENTS(caps); i++) {
		g_autofree char *name = g_strdup_printf("log-%zu", i);
		g_autofree char *log = g_build_filename(dir, name, NULL);
		g_autofree char *text = NULL;
		g_auto(GStrv) lines = NULL;
		struct run_opts opts = { .argv = argv, .log_path = log, .log_max = caps[i] };
		struct run_result r;
		guint64 cut = 0, kept = 0;
		gint64 next = 0;
		gsize len;
		bool noted = false;

		g_test_message("log_max %" G_GUINT64_FORMAT, caps[i]);
		g_assert_true(run_child(&r, &opts, NULL));
		g_assert_cmpint(r.outcome, ==, RUN_EXITED);
		g_assert_true(g_file_get_contents(log, &text, &len, NULL));
		g_assert_true(len == 0 || text[len - 1] == '\n');
		lines = g_strsplit(text, "\n", -1);
		for (guint k = 0; lines[k] && lines[k + 1]; k++) {
			g_autoptr(GMatchInfo) m = NULL;
			bool matched;

			if (g_regex_match(note, lines[k], 0, &m)) {
				g_autofree char *n = g_match_info_fetch(m, 1);

				g_assert_false(noted);
				noted = true;
				cut = g_ascii_strtoull(n, NULL, 10);
				next = -1;
				continue;
			}
			g_clear_pointer(&m, g_match_info_free);
			g_test_message("line %u: %s", k, lines[k]);
			matched = g_regex_match(whole, lines[k], 0, &m);
			g_assert_true(matched);
			if (matched) {
				g_autofree char *n = g_match_info_fetch(m, 1);
				gint64 number = (gint64)g_ascii_strtoull(n, NULL, 10);

				/* The lines of each side follow each other. */
				g_assert_true(next < 0 || number == next);
				next = number + 1;
			}
			kept += strlen(lines[k]) + 1;
		}
		g_assert_true(noted);
		g_assert_cmpuint(kept, <=, caps[i]);
		g_assert_cmpuint(cut + kept, ==, r.output);
		/* The last line is whole and kept, when the last half can hold it. */
		if (caps[i] > 200)
			g_assert_true(g_str_has_suffix(text, "x.c:4999:2: warning: number 4999 of the "
							     "output, whole\n"));
	}
}

/* Output the cap can hold is kept as it came, a line across the halves and an unended one too. */
static void test_log_cap_uncut(void)
{
	g_autofree char *dir = testlib_mkdir("logcapuncut");
	g_autofree char *log = g_build_filename(dir, "log", NULL);
	g_autofree char *text = NULL;
	const char *argv[] = { "printf", "first line\nsecond, not ended", NULL };
	struct run_opts opts = { .argv = argv, .log_path = log, .log_max = 40 };
	struct run_result r;

	g_assert_true(run_child(&r, &opts, NULL));
	g_assert_true(g_file_get_contents(log, &text, NULL, NULL));
	g_assert_cmpstr(text, ==, "first line\nsecond, not ended");
}

/* A child that takes the disk below the reserve is stopped. */
static void test_space_reserve(void)
{
	g_autofree char *dir = testlib_mkdir("space");
	const char *argv[] = { "sleep", "30", NULL };
	struct run_opts opts = { .argv = argv, .space_path = dir,
				 .space_reserve = G_MAXUINT64, .timeout_s = 60 };
	struct run_result r;

	g_assert_true(run_child(&r, &opts, NULL));
	g_assert_cmpint(r.outcome, ==, RUN_NO_SPACE);
	g_assert_cmpfloat(r.seconds, <, 30);
}

/*
 * What an interrupted build may have half-written goes, links and FIFOs
 * included and never followed; what is older stays.
 */
static void test_remove_changed_since(void)
{
	g_autofree char *dir = testlib_mkdir("changed");
	g_autofree char *outside = testlib_mkdir("changed-outside");
	g_autofree char *sub = g_build_filename(dir, "sub", NULL);
	g_autofree char *old = g_build_filename(dir, "old.o", NULL);
	g_autofree char *half = g_build_filename(sub, "half.o", NULL);
	g_autofree char *link = g_build_filename(dir, "link", NULL);
	g_autofree char *fifo = g_build_filename(sub, "fifo", NULL);
	g_autofree char *target = g_build_filename(outside, "target", NULL);
	g_autoptr(GError) error = NULL;
	struct stat st;
	gint64 since;
	guint removed = 99;

	g_assert_cmpint(g_mkdir_with_parents(sub, 0755), ==, 0);
	g_assert_true(g_file_set_contents(old, "whole", -1, NULL));
	g_assert_true(g_file_set_contents(target, "not ours", -1, NULL));
	/*
	 * The interrupted build starts in the next second. File times come
	 * from the kernel's coarse clock, a tick behind the real time at
	 * most: the files come 100 ms into that second.
	 */
	since = g_get_real_time() / G_USEC_PER_SEC + 1;
	while (g_get_real_time() < since * G_USEC_PER_SEC + G_USEC_PER_SEC / 10)
		g_usleep(20000);
	g_assert_true(g_file_set_contents(half, "hal", -1, NULL));
	g_assert_cmpint(symlink(target, link), ==, 0);
	g_assert_cmpint(mkfifo(fifo, 0644), ==, 0);

	g_assert_true(run_remove_changed_since(dir, since, &removed, &error));
	g_assert_no_error(error);
	g_assert_cmpuint(removed, ==, 3);
	g_assert_true(g_file_test(old, G_FILE_TEST_EXISTS));
	g_assert_true(g_file_test(sub, G_FILE_TEST_IS_DIR));
	g_assert_false(g_file_test(half, G_FILE_TEST_EXISTS));
	g_assert_false(g_file_test(fifo, G_FILE_TEST_EXISTS));
	g_assert_cmpint(lstat(link, &st), <, 0);
	g_assert_true(g_file_test(target, G_FILE_TEST_EXISTS));
	/* A missing directory is nothing to clean. */
	g_assert_true(run_remove_changed_since(half, since, &removed, NULL));
	g_assert_cmpuint(removed, ==, 0);
}

/* No descriptor of zeroday's reaches a child, close-on-exec or not. */
static void test_no_fd_leak(void)
{
	g_autofree char *dir = testlib_mkdir("fds");
	g_autofree char *log = g_build_filename(dir, "log", NULL);
	g_autofree char *secret = g_build_filename(dir, "secret", NULL);
	g_autofree char *text = NULL;
	const char *argv[] = { "sh", "-c", "ls /proc/self/fd | sort -n | tr '\\n' ' '", NULL };
	struct run_opts opts = { .argv = argv, .log_path = log };
	struct run_result r;
	int fd;

	g_assert_true(g_file_set_contents(secret, "x", -1, NULL));
	fd = open(secret, O_RDONLY); /* deliberately without O_CLOEXEC */
	g_assert_cmpint(fd, >=, 3);
	g_assert_true(run_child(&r, &opts, NULL));
	close(fd);
	text = read_file(log);
	/* 0, 1, 2, and the descriptor ls reads /proc/self/fd with. */
	g_assert_cmpstr(text, ==, "0 1 2 3 ");
}

int main(int argc, char **argv)
{
	testlib_init(&argc, &argv);
	g_test_add_func("/run/exit-and-log", test_exit_and_log);
	g_test_add_func("/run/not-found", test_not_found);
	g_test_add_func("/run/timeout-kills-group", test_timeout_kills_group);
	g_test_add_func("/run/limits", test_limits);
	g_test_add_func("/run/sandbox", test_sandbox);
	g_test_add_func("/run/sandbox-setup-failed", test_sandbox_setup_failed);
	g_test_add_func("/run/log-cap", test_log_cap);
	g_test_add_func("/run/log-cap-lines", test_log_cap_lines);
	g_test_add_func("/run/log-cap-uncut", test_log_cap_uncut);
	g_test_add_func("/run/space-reserve", test_space_reserve);
	g_test_add_func("/run/no-fd-leak", test_no_fd_leak);
	g_test_add_func("/run/remove-changed-since", test_remove_changed_since);
	return g_test_run();
}
