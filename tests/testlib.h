/*
 * Helpers for the test binaries: scratch directories, git fixture
 * histories built with the real git, and a real `git daemon`.
 */
#ifndef ZERODAY_TESTLIB_H
#define ZERODAY_TESTLIB_H

#include <stdbool.h>
#include <glib.h>

/*
 * g_test_init() plus non-fatal assertions, a private HOME and git
 * identity, and a scratch directory removed at exit unless a test failed.
 */
void testlib_init(int *argc, char ***argv);

/* The scratch directory of this test binary. */
const char *testlib_scratch(void);

/* Returns a new, empty directory under the scratch directory (caller frees). */
char *testlib_mkdir(const char *name);

/*
 * Runs git with the NULL-terminated arguments in @dir and returns its
 * stdout with the trailing newline removed. A failing git fails the test.
 */
char *testlib_git(const char *dir, ...) G_GNUC_NULL_TERMINATED;

/* Creates a work repository at @dir with branch master and no commits. */
void testlib_repo_init(const char *dir);

/*
 * Writes @content to @file in @dir, commits it with @message and returns
 * the new commit id (caller frees).
 */
char *testlib_commit(const char *dir, const char *file, const char *content,
		     const char *message);

/* A git daemon serving every repository under a base directory. */
struct testlib_daemon {
	GPid pid;
	int port;
	char *base;
};

/* Starts `git daemon` on 127.0.0.1 and an ephemeral port, serving @base. */
struct testlib_daemon *testlib_daemon_start(const char *base);
void testlib_daemon_stop(struct testlib_daemon *daemon);

/* Returns "git://127.0.0.1:PORT/@name" (caller frees). */
char *testlib_daemon_url(const struct testlib_daemon *daemon, const char *name);

/*
 * Returns the first /boot/vmlinuz-* (Debian's kernel, which quickstart
 * installs) and makes the scratch directory reachable by libvirt's QEMU
 * user; fails the test when there is none.
 */
char *testlib_boot_kernel(void);

struct diag;

/*
 * Checks that the new diagnostics @got (struct diag) are exactly @want,
 * in order, each printed by @show (NULL @want: none); logs each one.
 */
void testlib_check_diags(GPtrArray *got, const char *const *want,
			 char *(*show)(const struct diag *d));

/* Returns a TCP port on 127.0.0.1 that was free a moment ago. */
int testlib_free_port(void);

#endif
