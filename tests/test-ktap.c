/*
 * KTAP: KUnit's boot output (KTAP 1 and the older TAP 14 form), the
 * kselftest runner's nested "# " documents, console noise, crashed and
 * truncated runs, hostile input, and the choice of results to report.
 */
#include "autoconfig.h"

#include <string.h>

#include "engine/ktap.h"
#include "tests/testlib.h"

/* KUnit at boot, as the brief of this parser quotes it. */
static const char kunit_log[] =
	"KTAP version 1\n"
	"1..2\n"
	"    KTAP version 1\n"
	"    # Subtest: example\n"
	"    1..3\n"
	"    # example_simple_test: initializing\n"
	"    ok 1 example_simple_test\n"
	"    # example_skip_test: some reason\n"
	"    ok 2 example_skip_test # SKIP this test should be skipped\n"
	"    # example_fail: EXPECTATION FAILED at lib/kunit/kunit-example-test.c:30\n"
	"    Expected 1 == 2, but\n"
	"        1 == 1\n"
	"        2 == 2\n"
	"    not ok 3 example_fail\n"
	"# example: pass:1 fail:1 skip:1 total:3\n"
	"# Totals: pass:1 fail:1 skip:1 total:3\n"
	"not ok 1 example\n"
	"    KTAP version 1\n"
	"    # Subtest: list-kunit-test\n"
	"    1..1\n"
	"        KTAP version 1\n"
	"        # Subtest: param_test\n"
	"        ok 1 - param-0\n"
	"        ok 2 - param-1\n"
	"    # param_test: pass:2 fail:0 skip:0 total:2\n"
	"    ok 1 - param_test\n"
	"ok 2 - list-kunit-test\n";

static const char *const kunit_want[] = {
	"example/example_simple_test pass 1 leaf",
	"example/example_skip_test skip 1 leaf [SKIP this test should be skipped]",
	"example/example_fail fail 1 leaf",
	"example fail 0 parent",
	"list-kunit-test/param_test/param-0 pass 2 leaf",
	"list-kunit-test/param_test/param-1 pass 2 leaf",
	"list-kunit-test/param_test pass 1 parent",
	"list-kunit-test pass 0 parent",
	NULL,
};

static const char kunit_fail_diag[] =
	"# example_fail: EXPECTATION FAILED at lib/kunit/kunit-example-test.c:30\n"
	"Expected 1 == 2, but\n"
	"    1 == 1\n"
	"    2 == 2\n";

/* "name result depth leaf|parent [directive]" for compact comparison. */
static char *show(const struct ktap_test *t)
{
	return g_strdup_printf("%s %s %u %s%s%s%s", t->name, ktap_result_name(t->result), t->depth,
			       t->leaf ? "leaf" : "parent", t->directive ? " [" : "",
			       t->directive ? t->directive : "", t->directive ? "]" : "");
}

static void assert_tests(GPtrArray *tests, const char *const *want)
{
	guint n = g_strv_length((char **)want);

	for (guint i = 0; i < tests->len; i++) {
		g_autofree char *s = show(tests->pdata[i]);

		g_test_message("got %u: %s", i, s);
		if (i < n)
			g_assert_cmpstr(s, ==, want[i]);
	}
	g_assert_cmpuint(tests->len, ==, n);
}

static const struct ktap_test *find(GPtrArray *tests, const char *name)
{
	for (guint i = 0; i < tests->len; i++) {
		const struct ktap_test *t = tests->pdata[i];

		if (strcmp(t->name, name) == 0)
			return t;
	}
	g_test_message("no test %s", name);
	g_test_fail();
	return NULL;
}

/* The diagnostic of @name, or "" when it has none or there is no such test. */
static const char *diag_of(GPtrArray *tests, const char *name)
{
	const struct ktap_test *t = find(tests, name);

	return t && t->diagnostic ? t->diagnostic : "";
}

static void test_kunit(void)
{
	g_autoptr(GPtrArray) tests = ktap_parse(kunit_log);

	assert_tests(tests, kunit_want);
	/* A test's own lines, its document's indentation removed, and no other test's. */
	g_assert_cmpstr(diag_of(tests, "example/example_fail"), ==, kunit_fail_diag);
	g_assert_cmpstr(diag_of(tests, "example/example_simple_test"), ==,
			"# example_simple_test: initializing\n");
	g_assert_cmpstr(diag_of(tests, "list-kunit-test/param_test/param-0"), ==, "");
	/* A parent has its subtests' lines and its own, in order. */
	g_assert_cmpstr(diag_of(tests, "example"), ==,
			"# example_simple_test: initializing\n"
			"# example_skip_test: some reason\n"
			"# example_fail: EXPECTATION FAILED at lib/kunit/kunit-example-test.c:30\n"
			"Expected 1 == 2, but\n"
			"    1 == 1\n"
			"    2 == 2\n"
			"# example: pass:1 fail:1 skip:1 total:3\n"
			"# Totals: pass:1 fail:1 skip:1 total:3\n");
	g_assert_cmpstr(diag_of(tests, "list-kunit-test"), ==,
			"# param_test: pass:2 fail:0 skip:0 total:2\n");
}

/*
 * Other kernel messages interleave with KUnit's on the console: before,
 * between and after documents, and at column 0 inside a nested one, even
 * in the middle of a failure's lines. None of them changes a result, and
 * inside a nested document they are no test's diagnostic.
 */
static void test_kunit_noise(void)
{
	g_autoptr(GString) log = g_string_new(NULL);
	g_autoptr(GPtrArray) tests = NULL;
	g_auto(GStrv) lines = g_strsplit(kunit_log, "\n", -1);

	g_string_append(log, "Linux version 6.1.0 (gcc 12.2.0)\n"
			     "# not a document yet\n"
			     "ok 1 not a test\n"
			     "1..7\n");
	for (guint i = 0; lines[i]; i++) {
		if (*lines[i])
			g_string_append_printf(log, "%s\n", lines[i]);
		if (i == 4)
			g_string_append(log, "random: crng init done\n");
		if (i == 10)
			g_string_append(log, "rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:\n");
		if (i == 20)
			g_string_append(log, "clocksource: Switched to clocksource tsc\n");
	}
	g_string_append(log, "Freeing unused kernel image (initmem) memory: 2000K\n"
			     "Run /init as init process\n");
	tests = ktap_parse(log->str);
	assert_tests(tests, kunit_want);
	g_assert_cmpstr(diag_of(tests, "example/example_fail"), ==, kunit_fail_diag);
	g_assert_null(strstr(diag_of(tests, "example"), "rcu:"));
	g_assert_null(strstr(diag_of(tests, "example"), "random:"));
	g_assert_null(strstr(diag_of(tests, "list-kunit-test"), "clocksource:"));
}

/*
 * Kernels before KTAP 1 printed "TAP version 14" and opened a suite's
 * document with an indented "# Subtest:" line, without a version line;
 * their parameterised tests printed each parameter as a "# " line.
 */
static void test_tap14(void)
{
	g_autoptr(GPtrArray) tests = ktap_parse(
		"TAP version 14\n"
		"1..3\n"
		"    # Subtest: example\n"
		"    1..2\n"
		"    # example_simple_test: initializing\n"
		"    ok 1 - example_simple_test\n"
		"    ok 2 - example_skip_test # SKIP this test should be skipped\n"
		"ok 1 - example\n"
		"    # Subtest: ext4_inode_test\n"
		"    1..1\n"
		"        # inode_test_xtimestamp_decoding: ok 1 - 1901-12-13 Lower bound\n"
		"    ok 1 - inode_test_xtimestamp_decoding\n"
		"ok 2 - ext4_inode_test\n"
		"    # Subtest: list\n"
		"    1..1\n"
		"        # Subtest: param_test\n"
		"        ok 1 - param-0\n"
		"        not ok 2 - param-1\n"
		"    not ok 1 - param_test\n"
		"not ok 3 - list\n");
	const char *want[] = {
		"example/example_simple_test pass 1 leaf",
		"example/example_skip_test skip 1 leaf [SKIP this test should be skipped]",
		"example pass 0 parent",
		"ext4_inode_test/inode_test_xtimestamp_decoding pass 1 leaf",
		"ext4_inode_test pass 0 parent",
		"list/param_test/param-0 pass 2 leaf",
		"list/param_test/param-1 fail 2 leaf",
		"list/param_test fail 1 parent",
		"list fail 0 parent",
		NULL,
	};

	assert_tests(tests, want);
	g_assert_cmpstr(diag_of(tests, "ext4_inode_test/inode_test_xtimestamp_decoding"), ==,
			"    # inode_test_xtimestamp_decoding: ok 1 - 1901-12-13 Lower bound\n");
}

/*
 * run_kselftest.sh: the runner's document at column 0, each program's
 * output behind "# ", so a program's own document is nested by "# ".
 */
static const char kselftest_log[] =
	"TAP version 13\n"
	"1..4\n"
	"# selftests: vm: hugepage-mmap\n"
	"# Returned address is 0x7f2d80000000\n"
	"ok 1 selftests: vm: hugepage-mmap\n"
	"# selftests: vm: map_fixed_noreplace\n"
	"# TAP version 13\n"
	"# 1..2\n"
	"# ok 1 first\n"
	"# # second: mmap at 0x1000 failed\n"
	"# not ok 2 second\n"
	"# # Totals: pass:1 fail:1 xfail:0 xpass:0 skip:0 error:0\n"
	"not ok 2 selftests: vm: map_fixed_noreplace # exit=1\n"
	"# selftests: timers: raw_skew\n"
	"# skipped: not run as root\n"
	"ok 3 selftests: timers: raw_skew # SKIP\n"
	"# selftests: vm: foo\n"
	"#\n"
	"not ok 4 selftests: vm: foo # TIMEOUT 45 seconds\n";

static void test_kselftest(void)
{
	g_autoptr(GPtrArray) tests = ktap_parse(kselftest_log);
	const char *want[] = {
		"vm/hugepage-mmap pass 0 leaf",
		"vm/map_fixed_noreplace/first pass 1 leaf",
		"vm/map_fixed_noreplace/second fail 1 leaf",
		"vm/map_fixed_noreplace fail 0 parent [exit=1]",
		"timers/raw_skew skip 0 leaf [SKIP]",
		"vm/foo fail 0 leaf [TIMEOUT 45 seconds]",
		NULL,
	};

	assert_tests(tests, want);
	g_assert_cmpstr(diag_of(tests, "vm/hugepage-mmap"), ==,
			"# selftests: vm: hugepage-mmap\n# Returned address is 0x7f2d80000000\n");
	g_assert_cmpstr(diag_of(tests, "vm/map_fixed_noreplace/second"), ==,
			"# second: mmap at 0x1000 failed\n");
	/* The parent has them too, as its own document reads them: behind one "# " less. */
	g_assert_cmpstr(diag_of(tests, "vm/map_fixed_noreplace"), ==,
			"# selftests: vm: map_fixed_noreplace\n"
			"# second: mmap at 0x1000 failed\n"
			"# Totals: pass:1 fail:1 xfail:0 xpass:0 skip:0 error:0\n");
}

/* Result lines and their directives, one document each. */
static void test_directives(void)
{
	static const struct {
		const char *line;
		const char *want;
	} cases[] = {
		{ "ok 1 a # SKIP no device", "a skip 0 leaf [SKIP no device]" },
		{ "not ok 1 a # SKIP no device", "a skip 0 leaf [SKIP no device]" },
		{ "ok 1 a # skipped: not root", "a skip 0 leaf [skipped: not root]" },
		{ "ok 1 a # TODO later", "a pass 0 leaf [TODO later]" },
		{ "not ok 1 a # TODO later", "a pass 0 leaf [TODO later]" },
		{ "not ok 1 a # XFAIL known bug", "a pass 0 leaf [XFAIL known bug]" },
		{ "not ok 1 a # TIMEOUT 45 seconds", "a fail 0 leaf [TIMEOUT 45 seconds]" },
		{ "not ok 1 a # ERROR no memory", "a fail 0 leaf [ERROR no memory]" },
		{ "ok 1 check return code # rcode=0", "check return code pass 0 leaf [rcode=0]" },
		{ "ok 1 - a", "a pass 0 leaf" },
		{ "ok 1\t-\ta  ", "a pass 0 leaf" },
		{ "ok 1 a#b", "a#b pass 0 leaf" },
		{ "ok 1", "#1 pass 0 leaf" },
		{ "ok 1 # SKIP", "#1 skip 0 leaf [SKIP]" },
		{ "ok 1 selftests: net: udpgso.sh", "net/udpgso.sh pass 0 leaf" },
		{ "ok 1 selftests: odd", "selftests: odd pass 0 leaf" },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *log = g_strdup_printf("KTAP version 1\n1..1\n%s\n", cases[i].line);
		g_autoptr(GPtrArray) tests = ktap_parse(log);
		const char *want[] = { cases[i].want, NULL };

		g_test_message("line: %s", cases[i].line);
		assert_tests(tests, want);
	}
}

/*
 * A run cut short: the plan's missing numbers are errors, named after
 * their announcement when there was one; a test that had begun subtests
 * and never ended is an error too.
 */
static void test_truncated(void)
{
	g_autoptr(GPtrArray) flat = ktap_parse("KTAP version 1\n1..3\nok 1 a\nok 2 b\n");
	g_autoptr(GPtrArray) kunit = ktap_parse(
		"KTAP version 1\n"
		"1..2\n"
		"    KTAP version 1\n"
		"    # Subtest: suite\n"
		"    1..3\n"
		"    ok 1 a\n"
		"    # b: starting\n"
		"BUG: kernel NULL pointer dereference, address: 0000000000000000\n");
	g_autoptr(GPtrArray) kselftest = ktap_parse(
		"TAP version 13\n"
		"1..3\n"
		"# selftests: vm: x\n"
		"ok 1 selftests: vm: x\n"
		"# selftests: vm: y\n"
		"# TAP version 13\n"
		"# 1..2\n"
		"# ok 1 first\n");
	const char *flat_want[] = {
		"a pass 0 leaf",
		"b pass 0 leaf",
		"#3 error 0 leaf",
		NULL,
	};
	const char *kunit_want_[] = {
		"suite/a pass 1 leaf",
		"suite/#2 error 1 leaf",
		"suite/#3 error 1 leaf",
		"suite error 0 parent",
		"#2 error 0 leaf",
		NULL,
	};
	const char *kselftest_want[] = {
		"vm/x pass 0 leaf",
		"vm/y/first pass 1 leaf",
		"vm/y/#2 error 1 leaf",
		"vm/y error 0 parent",
		"#3 error 0 leaf",
		NULL,
	};

	assert_tests(flat, flat_want);
	assert_tests(kunit, kunit_want_);
	assert_tests(kselftest, kselftest_want);
	/* The crashed test keeps its lines; the oops at column 0 is not one of them. */
	g_assert_cmpstr(diag_of(kunit, "suite/#2"), ==, "# b: starting\n");
}

/*
 * One console, several documents: KUnit at boot, then two kselftest
 * collections, each numbered from 1. A document ends where the next
 * begins, its missing numbers then errors.
 */
static void test_two_documents(void)
{
	g_autoptr(GString) log = g_string_new(kunit_log);
	g_autoptr(GPtrArray) tests = NULL;

	g_string_append(log, "Run /init as init process\n");
	g_string_append(log, kselftest_log);
	g_string_append(log, "TAP version 13\n"
			     "1..2\n"
			     "# selftests: timers: posix_timers\n"
			     "ok 1 selftests: timers: posix_timers\n"
			     "TAP version 13\n"
			     "1..1\n"
			     "ok 1 selftests: size: get_size\n");
	tests = ktap_parse(log->str);
	g_assert_cmpuint(tests->len, ==, 8 + 6 + 3);
	g_assert_cmpstr(((struct ktap_test *)tests->pdata[7])->name, ==, "list-kunit-test");
	g_assert_cmpstr(((struct ktap_test *)tests->pdata[8])->name, ==, "vm/hugepage-mmap");
	g_assert_cmpstr(((struct ktap_test *)tests->pdata[14])->name, ==, "timers/posix_timers");
	g_assert_cmpstr(((struct ktap_test *)tests->pdata[15])->name, ==, "#2");
	g_assert_cmpint(((struct ktap_test *)tests->pdata[15])->result, ==, KTAP_ERROR);
	g_assert_cmpstr(((struct ktap_test *)tests->pdata[16])->name, ==, "size/get_size");
	g_assert_cmpint(((struct ktap_test *)tests->pdata[16])->depth, ==, 0);
}

/*
 * A module loaded after boot prints its suites without a top document
 * (KUnit's suite numbers go on from the boot's); a crash in one leaves its
 * cases' errors and the suite's own.
 */
static void test_module_suite(void)
{
	g_autoptr(GPtrArray) done = ktap_parse(
		"Run /init as init process\n"
		"    KTAP version 1\n"
		"    # Subtest: mod_suite\n"
		"    1..1\n"
		"    ok 1 a\n"
		"ok 3 mod_suite\n"
		"    # Subtest: old_form\n"
		"    1..1\n"
		"    not ok 1 b\n"
		"not ok 4 old_form\n");
	g_autoptr(GPtrArray) crashed = ktap_parse(
		"    KTAP version 1\n"
		"    # Subtest: mod_suite\n"
		"    1..2\n"
		"    ok 1 a\n"
		"BUG: unable to handle page fault for address: ffffffffc0000000\n");
	const char *done_want[] = {
		"mod_suite/a pass 1 leaf",
		"mod_suite pass 0 parent",
		"old_form/b fail 1 leaf",
		"old_form fail 0 parent",
		NULL,
	};
	const char *crashed_want[] = {
		"mod_suite/a pass 1 leaf",
		"mod_suite/#2 error 1 leaf",
		"mod_suite error 0 parent",
		NULL,
	};

	assert_tests(done, done_want);
	assert_tests(crashed, crashed_want);
}

/* Nothing, or nothing that is KTAP: no test, no crash. */
static void test_garbage(void)
{
	static const char *const logs[] = {
		"",
		"\n\n\n",
		"ok 1 not in a document\nnot ok 2 neither\n1..3\n# Subtest: x\n",
		"\xff\xfe\x80 KTAP \xc3\n\x01\x02\r\n",
		"KTAP version\nTAP version x\nKTAP version 1x\n",
		"KTAP version 1\n",
		"KTAP version 1\n1..0 # SKIP nothing to run\n",
		"KTAP version 1\nok\nok x\nok -1 a\nokay 1 a\nnot ok\n",
	};

	for (size_t i = 0; i < G_N_ELEMENTS(logs); i++) {
		g_autoptr(GPtrArray) tests = ktap_parse(logs[i]);

		g_test_message("log %zu", i);
		g_assert_cmpuint(tests->len, ==, 0);
	}
	{
		g_autoptr(GPtrArray) tests = ktap_parse(NULL);

		g_assert_cmpuint(tests->len, ==, 0);
	}
}

/* A guest names its tests: the names must be safe to print in a mail header. */
static void test_hostile_names(void)
{
	g_autofree char *longname = g_strnfill(1000, 'a');
	g_autofree char *almost = g_strnfill(KTAP_NAME_MAX - 1, 'b');
	g_autofree char *log = g_strdup_printf(
		"KTAP version 1\n"
		"1..4\n"
		"ok 1 evil\x1b[31m\rname\x07 # SKIP \x01x\n"
		"ok 2 %s\n"
		"ok 3 %s\xc3\xa9\n"
		"ok 4 next\xc2\x85line\n",
		longname, almost);
	g_autoptr(GPtrArray) tests = ktap_parse(log);
	const struct ktap_test *t;

	g_assert_cmpuint(tests->len, ==, 4);
	if (tests->len != 4)
		return;
	t = tests->pdata[0];
	g_assert_cmpstr(t->name, ==, "evil?[31m?name?");
	g_assert_cmpstr(t->directive, ==, "SKIP ?x");
	t = tests->pdata[1];
	g_assert_cmpuint(strlen(t->name), ==, KTAP_NAME_MAX);
	/* Cut on a character's boundary: the 'é' would end at byte 201. */
	t = tests->pdata[2];
	g_assert_cmpstr(t->name, ==, almost);
	/* C1 controls too: U+0085 is a line break to some mail readers. */
	t = tests->pdata[3];
	g_assert_cmpstr(t->name, ==, "next?line");
	/* Deep names are cut as well. */
	{
		g_autoptr(GString) deep = g_string_new("KTAP version 1\n1..1\n");
		g_autoptr(GPtrArray) nested = NULL;

		g_string_append_printf(deep, "    KTAP version 1\n    1..1\n    ok 1 %s\n",
				       longname);
		g_string_append_printf(deep, "ok 1 %s\n", longname);
		nested = ktap_parse(deep->str);
		g_assert_cmpuint(nested->len, ==, 2);
		for (guint i = 0; i < nested->len; i++)
			g_assert_cmpuint(strlen(((struct ktap_test *)nested->pdata[i])->name), <=,
					 KTAP_NAME_MAX);
	}
}

/*
 * 10000 documents, each nested one column deeper than the last, never
 * ended: no recursion, no quadratic work, one error a level that had
 * begun a subtest, every name within bounds.
 */
static void test_nesting_bomb(void)
{
	const guint depth = 10000;
	g_autoptr(GString) log = g_string_sized_new((gsize)depth * depth / 2 + depth * 16);
	g_autoptr(GPtrArray) tests = NULL;
	g_autoptr(GTimer) timer = g_timer_new();
	unsigned deepest = 0;

	for (guint i = 0; i < depth; i++) {
		for (guint j = 0; j < i; j++)
			g_string_append_c(log, ' ');
		g_string_append(log, "KTAP version 1\n");
	}
	g_string_append(log, "    # a diagnostic for many levels\n");
	g_timer_start(timer);
	tests = ktap_parse(log->str);
	g_test_message("%u levels (%zu MiB) in %.2f s", depth, log->len >> 20,
		       g_timer_elapsed(timer, NULL));
	g_assert_cmpuint(tests->len, ==, depth - 1);
	for (guint i = 0; i < tests->len; i++) {
		const struct ktap_test *t = tests->pdata[i];

		g_assert_cmpint(t->result, ==, KTAP_ERROR);
		g_assert_cmpuint(strlen(t->name), <=, KTAP_NAME_MAX);
		deepest = MAX(deepest, t->depth);
	}
	g_assert_cmpuint(deepest, ==, depth - 2);
	if (tests->len) {
		const struct ktap_test *top = tests->pdata[tests->len - 1];

		g_assert_cmpstr(top->name, ==, "#1");
		g_assert_cmpuint(top->depth, ==, 0);
		g_assert_false(top->leaf);
	}
}

/* A plan of four billion, and more results than are kept: both bounded. */
static void test_bounds(void)
{
	g_autoptr(GPtrArray) plan = ktap_parse("KTAP version 1\n1..4294967295\nok 1 a\n");
	g_autoptr(GPtrArray) many = NULL;
	g_autoptr(GString) log = g_string_new("KTAP version 1\n");
	const struct ktap_test *last;

	/* One result, then one error a missing number, up to 1000. */
	g_assert_cmpuint(plan->len, ==, 1 + 1000);
	last = plan->pdata[plan->len - 1];
	g_assert_cmpstr(last->name, ==, "#1001");

	for (guint i = 1; i <= 200000; i++)
		g_string_append_printf(log, "# line %u\n    more\nok %u t%u\n", i, i, i);
	many = ktap_parse(log->str);
	g_assert_cmpuint(many->len, ==, 100000);
	g_assert_cmpstr(((struct ktap_test *)many->pdata[99999])->name, ==, "t100000");
	g_assert_cmpstr(((struct ktap_test *)many->pdata[99999])->diagnostic, ==,
			"# line 100000\n    more\n");
}

/* Diagnostics are capped: KTAP_DIAG_LINES lines, each cut at 512 bytes. */
static void test_diag_bounds(void)
{
	g_autoptr(GString) log = g_string_new("KTAP version 1\n1..1\n");
	g_autofree char *wide = g_strnfill(5000, 'x');
	g_autoptr(GPtrArray) tests = NULL;
	const struct ktap_test *t;

	g_string_append_printf(log, "%s\n", wide);
	for (guint i = 0; i < 100; i++)
		g_string_append_printf(log, "# line %u\n", i);
	g_string_append(log, "not ok 1 chatty\n");
	tests = ktap_parse(log->str);
	g_assert_cmpuint(tests->len, ==, 1);
	if (!tests->len)
		return;
	t = tests->pdata[0];
	{
		g_auto(GStrv) lines = g_strsplit(t->diagnostic, "\n", -1);

		/* KTAP_DIAG_LINES lines, each "\n"-terminated: one empty string after. */
		g_assert_cmpuint(g_strv_length(lines), ==, KTAP_DIAG_LINES + 1);
		g_assert_cmpuint(strlen(lines[0]), ==, 512);
		g_assert_cmpstr(lines[KTAP_DIAG_LINES - 1], ==, "# line 38");
	}
}

/*
 * What to report: the leaves, and a failed parent only when none of its
 * subtests failed, i.e. its failure is its own (a suite's init or exit).
 */
static void test_results(void)
{
	g_autoptr(GPtrArray) kunit = ktap_parse(kunit_log);
	g_autoptr(GPtrArray) kunit_results = ktap_results(kunit);
	g_autoptr(GPtrArray) own = ktap_parse(
		"KTAP version 1\n"
		"1..4\n"
		"    # failed to initialize (-12)\n"
		"not ok 1 broken_suite\n"
		"    KTAP version 1\n"
		"    # Subtest: exit_fails\n"
		"    1..1\n"
		"    ok 1 a\n"
		"not ok 2 exit_fails\n"
		"    KTAP version 1\n"
		"    # Subtest: crashed\n"
		"    1..2\n"
		"    ok 1 a\n");
	g_autoptr(GPtrArray) own_results = ktap_results(own);
	g_autoptr(GPtrArray) empty = g_ptr_array_new();
	g_autoptr(GPtrArray) none = ktap_results(empty);
	const char *kunit_reported[] = {
		"example/example_simple_test pass 1 leaf",
		"example/example_skip_test skip 1 leaf [SKIP this test should be skipped]",
		"example/example_fail fail 1 leaf",
		"list-kunit-test/param_test/param-0 pass 2 leaf",
		"list-kunit-test/param_test/param-1 pass 2 leaf",
		NULL,
	};
	const char *own_reported[] = {
		"broken_suite fail 0 leaf",
		"exit_fails/a pass 1 leaf",
		"exit_fails fail 0 parent",
		"crashed/a pass 1 leaf",
		"crashed/#2 error 1 leaf",
		"#4 error 0 leaf",
		NULL,
	};

	assert_tests(kunit_results, kunit_reported);
	/* "crashed" itself is an error, but one of its subtests says why. */
	assert_tests(own_results, own_reported);
	g_assert_cmpstr(diag_of(own, "broken_suite"), ==, "    # failed to initialize (-12)\n");
	g_assert_cmpuint(none->len, ==, 0);
}

int main(int argc, char **argv)
{
	testlib_init(&argc, &argv);
	g_test_add_func("/ktap/kunit", test_kunit);
	g_test_add_func("/ktap/kunit-noise", test_kunit_noise);
	g_test_add_func("/ktap/tap14", test_tap14);
	g_test_add_func("/ktap/kselftest", test_kselftest);
	g_test_add_func("/ktap/directives", test_directives);
	g_test_add_func("/ktap/truncated", test_truncated);
	g_test_add_func("/ktap/two-documents", test_two_documents);
	g_test_add_func("/ktap/module-suite", test_module_suite);
	g_test_add_func("/ktap/garbage", test_garbage);
	g_test_add_func("/ktap/hostile-names", test_hostile_names);
	g_test_add_func("/ktap/nesting-bomb", test_nesting_bomb);
	g_test_add_func("/ktap/bounds", test_bounds);
	g_test_add_func("/ktap/diag-bounds", test_diag_bounds);
	g_test_add_func("/ktap/results", test_results);
	return g_test_run();
}
