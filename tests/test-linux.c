/*
 * The build engine on a real Linux tree (Debian's linux-source-6.1),
 * tinyconfig plus the serial fragment, with real regression commits on
 * top: a new -Wunused-variable warning, the same warning moved (must not
 * be reported), and an error in another file. The work tree and build
 * directory persist in a cache, so reruns build incrementally.
 */
#include "autoconfig.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/boot.h"
#include "engine/build.h"
#include "engine/decode.h"
#include "engine/initramfs.h"
#include "engine/diag.h"
#include "engine/repo.h"
#include "engine/run.h"
#include "tests/testlib.h"

#define TARGET "x86_64:tinyconfig+serial"

static char *cache;   /* the imported tree and the persistent work dirs */
static char *history; /* scratch repository: the cache's objects plus our commits */
static char *index_file;
static struct worktree *wt;
static bool sandbox;
static char *base, *c_warn, *c_move, *c_err, *c_boot_warn;

/* Commits @path with @text on top of @parent, without a work tree. */
static char *commit_file(const char *parent, const char *path, const char *text,
			 const char *message)
{
	g_autofree char *tmp = g_build_filename(testlib_scratch(), "blob", NULL);
	g_autofree char *blob = NULL;
	g_autofree char *info = NULL;
	g_autofree char *tree = NULL;
	char *commit;

	g_assert_true(g_file_set_contents(tmp, text, -1, NULL));
	g_setenv("GIT_INDEX_FILE", index_file, TRUE);
	g_free(testlib_git(history, "read-tree", parent, NULL));
	blob = testlib_git(history, "hash-object", "-w", tmp, NULL);
	info = g_strdup_printf("100644,%s,%s", blob, path);
	g_free(testlib_git(history, "update-index", "--cacheinfo", info, NULL));
	tree = testlib_git(history, "write-tree", NULL);
	g_unsetenv("GIT_INDEX_FILE");
	commit = testlib_git(history, "commit-tree", tree, "-p", parent, "-m", message, NULL);
	return commit;
}

static char *show_file(const char *rev, const char *path)
{
	g_autofree char *spec = g_strdup_printf("%s:%s", rev, path);

	return testlib_git(history, "show", spec, NULL);
}

static void setup_commits(void)
{
	g_autofree char *panic = show_file(base, "kernel/panic.c");
	g_autofree char *exit_c = show_file(base, "kernel/exit.c");
	g_autofree char *warned = g_strconcat(panic,
		"\n\nvoid zd_demo_unused(void);\nvoid zd_demo_unused(void)\n{\n\tint zd_unused;\n}\n", NULL);
	g_autofree char *moved = NULL;
	g_autofree char *broken = g_strconcat(exit_c,
		"\nint zd_broken(void);\nint zd_broken(void)\n{\n\treturn zd_undeclared;\n}\n", NULL);
	const char *nl = strchr(warned, '\n');

	/* The move: a comment after the first line shifts every line down. */
	moved = g_strdup_printf("%.*s\n/*\n * A comment that moves\n * the warning\n * down.\n */\n%s",
				(int)(nl - warned), warned, nl + 1);
	c_warn = commit_file(base, "kernel/panic.c", warned, "panic: add an unused variable");
	c_move = commit_file(c_warn, "kernel/panic.c", moved, "panic: move the old warning");
	c_err = commit_file(c_move, "kernel/exit.c", broken, "exit: use an undeclared name");
	{
		g_autofree char *main_c = show_file(base, "init/main.c");
		const char *anchor = "static int __ref kernel_init(void *unused)\n{\n\tint ret;\n";
		const char *at = strstr(main_c, anchor);
		g_autofree char *warned_boot = NULL;

		g_assert_nonnull(at);
		warned_boot = g_strdup_printf("%.*s%s\tWARN(1, \"zeroday: a warning for the boot test\\n\");\n%s",
					      (int)(at - main_c), main_c, anchor, at + strlen(anchor));
		c_boot_warn = commit_file(base, "init/main.c", warned_boot, "init: warn at boot");
	}
}

static char **changes_since(const char *old_commit, const char *new_commit, void *data);

/* Builds @oid for @target in the cache's build directory @dir (kept from run to run). */
static struct build_output build_in(const char *oid, const char *target, const char *dir,
				    GPtrArray **logs)
{
	struct build_target t;
	struct build_output out;
	g_autoptr(GError) error = NULL;
	g_autofree char *fragments = g_build_filename(ZERODAY_SRCDIR, "engine", "kconfig", NULL);
	g_autofree char *builddir = g_build_filename(cache, "work", dir, NULL);
	g_autofree char *srcdir = g_build_filename(cache, "work", "src", NULL);
	g_autofree char *tools = g_build_filename(cache, "work", "tools", NULL);
	g_autofree char *ccache = g_build_filename(cache, "work", "ccache", NULL);
	g_autofree char *log = g_strdup_printf("%s/%.12s.log", testlib_scratch(), oid);
	g_autofree char *ccache_bin = run_find_program("ccache");
	struct build_env env = {
		.srcdir = srcdir, .builddir = builddir, .tools_dir = tools, .log_path = log,
		.ccache_dir = ccache_bin ? ccache : NULL, .jobs = g_get_num_processors(),
		.timeout_s = 3600, .sandbox = sandbox, .commit = oid, .changes_since = changes_since,
	};

	g_assert_true(build_target_parse(&t, target, fragments, &error));
	g_assert_true(build_install_tools(tools, &error));
	g_assert_true(repo_worktree_checkout(wt, oid, 0, NULL, &error));
	g_assert_no_error(error);
	g_assert_true(build_run(&out, &t, &env, &error));
	g_assert_no_error(error);
	g_test_message("%.12s: %s in %.1f s%s%s", oid, build_status_name(out.status), out.seconds,
		       out.reason ? ": " : "", out.reason ? out.reason : "");
	if (logs)
		g_ptr_array_add(*logs, g_steal_pointer(&log));
	build_target_clear(&t);
	return out;
}

static struct build_output build(const char *oid, GPtrArray **logs)
{
	return build_in(oid, TARGET, "build", logs);
}

static char **changes_since(const char *old_commit, const char *new_commit, void *data)
{
	return repo_worktree_diff(wt, old_commit, new_commit, NULL);
}

static char *show(const struct diag *d)
{
	return g_strdup_printf("%s %s [%s] %s", diag_kind_name(d->kind), d->file,
			       d->function ? d->function : "", d->message);
}

static void expect(const char *oid, const char *parent, enum build_verdict verdict,
		   const char *const *fresh)
{
	struct build_output p = build(parent, NULL);
	struct build_output c = build(oid, NULL);
	g_autoptr(GPtrArray) got = NULL;
	enum build_verdict v = build_compare(&c, &p, &got);

	g_assert_cmpstr(build_verdict_name(v), ==, build_verdict_name(verdict));
	testlib_check_diags(got, fresh, show);
	g_clear_pointer(&got, g_ptr_array_unref);
	build_output_clear(&p);
	build_output_clear(&c);
}

/*
 * Boots the image in the cache's build directory @dir with initramfs
 * @made (NULL: zeroday's own, with the smoke payload); returns the
 * console verdict.
 */
static void boot_in(struct console_result *r, const char *name, const char *dir,
		    const char *made)
{
	g_autofree char *image = g_build_filename(cache, "work", dir, "arch", "x86", "boot",
						  "bzImage", NULL);
	g_autofree char *kept = g_strdup_printf("%s/%s.bzImage", testlib_scratch(), name);
	g_autofree char *initrd = g_strdup_printf("%s/%s.initrd", testlib_scratch(), name);
	g_autofree char *log = g_strdup_printf("%s/%s.console", testlib_scratch(), name);
	g_autofree char *smoke = g_build_filename(ZERODAY_SRCDIR, "engine", "payloads", "smoke", NULL);
	g_autofree char *data = NULL;
	g_autofree char *text = NULL;
	struct initramfs_payload payloads[] = { { "smoke", smoke, 60 } };
	struct boot_request req = { .kernel = kept, .initrd = initrd, .console_log = log,
				    .timeout_s = 120, .memory_mb = 256 };
	struct boot_outcome out;
	g_autoptr(GError) error = NULL;
	gsize len;

	g_assert_true(g_file_get_contents(image, &data, &len, &error));
	g_assert_true(g_file_set_contents(kept, data, len, &error));
	if (made)
		req.initrd = made;
	else
		g_assert_true(initramfs_build(initrd, "/bin/busybox", payloads, 1, NULL, &error));
	g_assert_true(boot_run(&out, "qemu:///system", &req, &error));
	g_assert_no_error(error);
	g_file_get_contents(log, &text, NULL, NULL);
	diag_console_classify(r, text ? text : "", out.timed_out, out.infra);
	g_test_message("boot of %s: %s (%s) in %.1f s", name, diag_console_kind_name(r->kind),
		       r->title, out.seconds);
	boot_outcome_clear(&out);
}

static void boot_with(struct console_result *r, const char *name, const char *made)
{
	boot_in(r, name, "build", made);
}

static void boot_image(struct console_result *r, const char *name)
{
	boot_with(r, name, NULL);
}

/* One entry of a newc cpio archive, as both makers must write it. */
struct cpio_entry {
	char *name;
	unsigned mode, rdev_major, rdev_minor;
	GBytes *data;
};

static void cpio_entry_free(struct cpio_entry *e)
{
	g_free(e->name);
	g_bytes_unref(e->data);
	g_free(e);
}

static unsigned hex8(const char *p)
{
	char field[9] = { 0 };

	memcpy(field, p, 8);
	return (unsigned)g_ascii_strtoull(field, NULL, 16);
}

/* The entries of gzipped newc archive @path, the trailer left out. */
static GPtrArray *cpio_entries(const char *path)
{
	g_autofree char *plain = g_strconcat(path, ".cpio", NULL);
	g_autofree char *cmd = g_strdup_printf("gzip -dc '%s' > '%s'", path, plain);
	g_autofree char *raw = NULL;
	GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify)cpio_entry_free);
	gsize len, at = 0;

	/* The archive holds NULs: read back from a file, not a spawned string. */
	g_assert_cmpint(system(cmd), ==, 0);
	g_assert_true(g_file_get_contents(plain, &raw, &len, NULL));
	while (at + 110 <= len) {
		const char *h = raw + at;
		struct cpio_entry *e;
		unsigned size = hex8(h + 54), namesize = hex8(h + 94);

		g_assert_cmpmem(h, 6, "070701", 6);
		g_assert_cmpuint(at + 110 + namesize, <=, len);
		if (strcmp(h + 110, "TRAILER!!!") == 0)
			break;
		e = g_new0(struct cpio_entry, 1);
		e->name = g_strndup(h + 110, namesize - 1);
		e->mode = hex8(h + 14);
		e->rdev_major = hex8(h + 78);
		e->rdev_minor = hex8(h + 86);
		at = (at + 110 + namesize + 3) & ~(gsize)3;
		g_assert_cmpuint(at + size, <=, len);
		e->data = g_bytes_new(raw + at, size);
		at = (at + size + 3) & ~(gsize)3;
		g_ptr_array_add(out, e);
	}
	return out;
}

/*
 * The reports' initramfs.sh, run as a developer runs it on the build
 * directory, makes the initramfs zeroday boots with (the same files,
 * modes and console node), and the base boots with it to the end.
 */
static void test_initramfs_recipe(void)
{
	g_autofree char *smoke = g_build_filename(ZERODAY_SRCDIR, "engine", "payloads", "smoke", NULL);
	g_autofree char *builddir = g_build_filename(cache, "work", "build", NULL);
	g_autofree char *script = g_build_filename(testlib_scratch(), "initramfs.sh", NULL);
	g_autofree char *made = g_build_filename(testlib_scratch(), "made.cpio.gz", NULL);
	g_autofree char *ours = g_build_filename(testlib_scratch(), "ours.cpio.gz", NULL);
	g_autofree char *cmd = NULL;
	g_autofree char *recipe = NULL;
	g_autoptr(GPtrArray) a = NULL;
	g_autoptr(GPtrArray) b = NULL;
	struct initramfs_payload payloads[] = { { "smoke", smoke, 60 } };
	g_autoptr(GError) error = NULL;
	struct console_result r;

	recipe = initramfs_recipe(payloads, 1, NULL, &error);
	g_assert_no_error(error);
	g_assert_true(g_file_set_contents(script, recipe, -1, &error));
	g_assert_true(initramfs_build(ours, "/bin/busybox", payloads, 1, NULL, &error));
	cmd = g_strdup_printf("cd '%s' && BUSYBOX=/bin/busybox sh initramfs.sh '%s' > '%s'",
			      testlib_scratch(), builddir, made);
	g_assert_cmpint(system(cmd), ==, 0);

	a = cpio_entries(ours);
	b = cpio_entries(made);
	g_assert_cmpuint(a->len, ==, b->len);
	for (guint i = 0; i < a->len; i++) {
		const struct cpio_entry *x = a->pdata[i], *y = b->pdata[i];

		g_test_message("%s %o", x->name, x->mode);
		g_assert_cmpstr(x->name, ==, y->name);
		g_assert_cmpuint(x->mode, ==, y->mode);
		g_assert_cmpuint(x->rdev_major, ==, y->rdev_major);
		g_assert_cmpuint(x->rdev_minor, ==, y->rdev_minor);
		g_assert_true(g_bytes_equal(x->data, y->data));
	}
	boot_with(&r, "recipe", made);
	g_assert_cmpstr(diag_console_kind_name(r.kind), ==, "boot-ok");
	console_result_clear(&r);
}

static void test_base_boots(void)
{
	struct console_result r;

	boot_image(&r, "base");
	g_assert_cmpstr(diag_console_kind_name(r.kind), ==, "boot-ok");
	console_result_clear(&r);
}

/* A commit that warns at boot: it builds cleanly, and the boot says WARNING. */
static void test_boot_warning(void)
{
	struct build_output out = build(c_boot_warn, NULL);
	struct console_result r;

	g_assert_cmpstr(build_status_name(out.status), ==, "ok");
	build_output_clear(&out);
	boot_image(&r, "boot-warn");
	g_assert_cmpstr(diag_console_kind_name(r.kind), ==, "WARNING");
	g_assert_cmpstr(r.title, ==, "WARNING in kernel_init");
	console_result_clear(&r);
}

/*
 * The commit that warns at boot, built with debug information
 * (+debuginfo, its own build directory): the WARNING's trace decoded with
 * its vmlinux names kernel_init's file and line, as a report shows it.
 */
static void test_decoded_trace(void)
{
	struct build_output out = build_in(c_boot_warn, TARGET "+debuginfo", "build-debuginfo",
					   NULL);
	g_autofree char *vmlinux = g_build_filename(cache, "work", "build-debuginfo", "vmlinux",
						    NULL);
	const struct decode_opts opts = { .sandbox = sandbox };
	g_autoptr(GError) error = NULL;
	g_autofree char *decoded = NULL;
	g_autofree char *frame = NULL;
	g_autofree char *again = NULL;
	struct console_result r;

	g_assert_cmpstr(build_status_name(out.status), ==, "ok");
	build_output_clear(&out);
	boot_in(&r, "boot-warn-debuginfo", "build-debuginfo", NULL);
	g_assert_cmpstr(r.title, ==, "WARNING in kernel_init");
	decoded = decode_trace(diag_console_excerpt(&r), vmlinux, &opts, &error);
	g_assert_no_error(error);
	g_test_message("decoded:\n%s", decoded);
	/* The RIP line: kernel_init+0x.../0x... init/main.c:LINE, at the WARN. */
	{
		g_auto(GStrv) lines = g_strsplit(decoded, "\n", -1);

		for (char **l = lines; *l && !frame; l++) {
			if (strstr(*l, "RIP: ") && strstr(*l, "kernel_init+0x"))
				frame = g_strdup(*l);
		}
	}
	g_assert_nonnull(frame);
	g_assert_true(g_regex_match_simple("kernel_init\\+0x[0-9a-f]+/0x[0-9a-f]+ init/main\\.c:[0-9]+",
					   frame, 0, 0));
	/* Decoded twice, the same: a report re-rendered says it once. */
	again = decode_trace(decoded, vmlinux, &opts, NULL);
	g_assert_cmpstr(again, ==, decoded);
	console_result_clear(&r);
}

static void test_base_builds(void)
{
	struct build_output out = build(base, NULL);
	g_autofree char *image = g_build_filename(cache, "work", "build", "arch", "x86", "boot",
						  "bzImage", NULL);

	g_assert_cmpstr(build_status_name(out.status), ==, "ok");
	g_assert_true(g_file_test(image, G_FILE_TEST_IS_REGULAR));
	build_output_clear(&out);
}

static void test_new_warning(void)
{
	const char *fresh[] = {
		"warning kernel/panic.c [zd_demo_unused] unused variable 'zd_unused' [-Wunused-variable]",
		NULL,
	};

	expect(c_warn, base, VERDICT_NEW_DIAGNOSTICS, fresh);
}

static void test_moved_warning(void)
{
	expect(c_move, c_warn, VERDICT_PASS, NULL);
}

static void test_new_error(void)
{
	const char *fresh[] = {
		"error kernel/exit.c [zd_broken] 'zd_undeclared' undeclared (first use in this function)",
		"error kernel/exit.c [zd_broken] control reaches end of non-void function [-Werror=return-type]",
		NULL,
	};

	expect(c_err, c_move, VERDICT_FAIL_NEW_ERROR, fresh);
}

int main(int argc, char **argv)
{
	struct repo_limits limits = { 0 };
	g_autoptr(GError) error = NULL;
	g_autofree char *out = NULL;
	g_autofree char *err = NULL;
	g_autofree char *script = g_build_filename(ZERODAY_SRCDIR, "tests", "linux-import.sh", NULL);
	g_autofree char *workdir = NULL;
	g_autofree char *gitdir = NULL;
	const char *cache_root = g_getenv("ZERODAY_TEST_CACHE");
	int status = 0;
	int rc;

	testlib_init(&argc, &argv);
	g_assert_cmpint(chmod(testlib_scratch(), 0711), ==, 0);
	if (!cache_root)
		cache_root = geteuid() == 0 ? "/var/cache/zeroday-test"
					    : g_build_filename(g_get_user_cache_dir(), "zeroday-test", NULL);
	cache = g_build_filename(cache_root, "linux-6.1", NULL);
	{
		const char *import[] = { "sh", script, cache, NULL };

		g_assert_true(g_spawn_sync(NULL, (char **)import, NULL, G_SPAWN_SEARCH_PATH, NULL,
					   NULL, &out, &err, &status, &error));
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
		/* quickstart installs linux-source-6.1; only a manual run can miss it. */
		g_test_skip_printf("linux-source-6.1 is not installed: %s", err);
		g_test_add_func("/linux/base-builds", test_base_builds);
		return g_test_run();
	}
	g_assert_true(g_spawn_check_wait_status(status, NULL));
	if (!repo_global_init(&limits, &error))
		g_error("%s", error->message);
	sandbox = run_sandbox_available(&error);
	g_clear_error(&error);

	history = g_build_filename(testlib_scratch(), "history.git", NULL);
	index_file = g_build_filename(testlib_scratch(), "index", NULL);
	g_free(testlib_git(NULL, "clone", "-q", "--bare", "--shared", cache, history, NULL));
	base = testlib_git(history, "rev-parse", "master", NULL);
	setup_commits();
	workdir = g_build_filename(cache, "work", "src", NULL);
	wt = repo_worktree_open(workdir, history, &error);
	g_assert_no_error(error);

	g_test_add_func("/linux/base-builds", test_base_builds);
	g_test_add_func("/linux/base-boots", test_base_boots);
	g_test_add_func("/linux/initramfs-recipe", test_initramfs_recipe);
	g_test_add_func("/linux/boot-warning", test_boot_warning);
	g_test_add_func("/linux/decoded-trace", test_decoded_trace);
	g_test_add_func("/linux/new-warning", test_new_warning);
	g_test_add_func("/linux/moved-warning", test_moved_warning);
	g_test_add_func("/linux/new-error", test_new_error);
	rc = g_test_run();
	repo_worktree_free(wt);
	return rc;
}
