/*
 * KTAP: KUnit's output at boot (as 6.1 prints it, with the kernel's other
 * messages in between), kselftest's runner with a program's own KTAP
 * nested under "# ", plans that promised more than came, and hostile
 * input. Then the console classifier's per-test results and failures.
 */
#include "autoconfig.h"

#include <string.h>

#include "engine/diag.h"
#include "engine/ktap.h"
#include "tests/testlib.h"

/* "name result" of each test, for compact comparison. */
static char *shape(GPtrArray *tests)
{
	GString *s = g_string_new(NULL);

	for (guint i = 0; i < tests->len; i++) {
		const struct ktap_test *t = tests->pdata[i];

		g_string_append_printf(s, "%s %s%s\n", t->name, ktap_result_name(t->result),
				       t->leaf ? "" : " (parent)");
	}
	return g_string_free(s, FALSE);
}

static const char kunit_61[] =
	"TAP version 14\n"
	"1..2\n"
	"random: crng init done\n"
	"    # Subtest: example\n"
	"    1..3\n"
	"    # example_simple_test: initializing\n"
	"    ok 1 - example_simple_test\n"
	"    # example_skip_test: some reason\n"
	"    ok 2 - example_skip_test # SKIP this test should be skipped\n"
	"    # example_fail: EXPECTATION FAILED at lib/kunit/kunit-example-test.c:30\n"
	"    Expected 1 == 2, but\n"
	"        1 == 1\n"
	"        2 == 2\n"
	"clocksource: Switched to clocksource tsc\n"
	"    not ok 3 - example_fail\n"
	"# example: pass:1 fail:1 skip:1 total:3\n"
	"not ok 1 - example\n"
	"    # Subtest: list-kunit-test\n"
	"    1..1\n"
	"        # Subtest: param_test\n"
	"        ok 1 - param-0\n"
	"        ok 2 - param-1\n"
	"    # param_test: pass:2 fail:0 skip:0 total:2\n"
	"    ok 1 - param_test\n"
	"ok 2 - list-kunit-test\n";

static void test_kunit(void)
{
	g_autoptr(GPtrArray) tests = ktap_parse(kunit_61);
	g_autoptr(GPtrArray) results = ktap_results(tests);
	g_autofree char *all = shape(tests);
	g_autofree char *mine = shape(results);
	const struct ktap_test *fail = NULL;

	g_assert_cmpstr(all, ==,
			"example/example_simple_test pass\n"
			"example/example_skip_test skip\n"
			"example/example_fail fail\n"
			"example fail (parent)\n"
			"list-kunit-test/param_test/param-0 pass\n"
			"list-kunit-test/param_test/param-1 pass\n"
			"list-kunit-test/param_test pass (parent)\n"
			"list-kunit-test pass (parent)\n");
	/* The suite failed because a test did: only the test is a result. */
	g_assert_cmpstr(mine, ==,
			"example/example_simple_test pass\n"
			"example/example_skip_test skip\n"
			"example/example_fail fail\n"
			"list-kunit-test/param_test/param-0 pass\n"
			"list-kunit-test/param_test/param-1 pass\n");
	g_assert_cmpstr(((struct ktap_test *)tests->pdata[1])->directive, ==,
			"SKIP this test should be skipped");
	fail = tests->pdata[2];
	g_assert_nonnull(fail->diagnostic);
	g_assert_nonnull(strstr(fail->diagnostic, "Expected 1 == 2, but"));
	g_assert_nonnull(strstr(fail->diagnostic, "EXPECTATION FAILED"));
	/* The kernel's own message at the margin is not the test's. */
	g_assert_null(strstr(fail->diagnostic, "clocksource"));
	g_assert_cmpuint(fail->depth, ==, 1);
}

/* KTAP version 1, as newer kernels print it: the version line nested too. */
static void test_ktap_v1(void)
{
	g_autoptr(GPtrArray) tests = ktap_parse(
		"KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: hash\n    1..2\n"
		"    ok 1 test_string_or\n    not ok 2 test_hash_or\n# Totals: pass:1 fail:1\n"
		"not ok 1 hash\n");
	g_autofree char *all = shape(tests);

	g_assert_cmpstr(all, ==, "hash/test_string_or pass\nhash/test_hash_or fail\nhash fail (parent)\n");
}

static void test_kselftest(void)
{
	g_autoptr(GPtrArray) tests = ktap_parse(
		"TAP version 13\n"
		"1..4\n"
		"# selftests: vm: hugepage-mmap\n"
		"# Returned address is 0x7f0000000000\n"
		"ok 1 selftests: vm: hugepage-mmap\n"
		"# selftests: vm: map_fixed_noreplace\n"
		"# TAP version 13\n"
		"# 1..2\n"
		"# ok 1 first\n"
		"# not ok 2 second\n"
		"# # Totals: pass:1 fail:1 xfail:0 xpass:0 skip:0 error:0\n"
		"not ok 2 selftests: vm: map_fixed_noreplace # exit=1\n"
		"ok 3 selftests: timers: raw_skew # SKIP\n"
		"# selftests: vm: gup_test\n"
		"not ok 4 selftests: vm: gup_test # TIMEOUT 45 seconds\n");
	g_autoptr(GPtrArray) results = ktap_results(tests);
	g_autofree char *mine = shape(results);
	const struct ktap_test *mmap = tests->pdata[0];
	const struct ktap_test *timeout = results->pdata[results->len - 1];

	g_assert_cmpstr(mine, ==,
			"vm/hugepage-mmap pass\n"
			"vm/map_fixed_noreplace/first pass\n"
			"vm/map_fixed_noreplace/second fail\n"
			"timers/raw_skew skip\n"
			"vm/gup_test fail\n");
	g_assert_nonnull(mmap->diagnostic);
	g_assert_nonnull(strstr(mmap->diagnostic, "Returned address"));
	g_assert_cmpstr(timeout->directive, ==, "TIMEOUT 45 seconds");
}

/* A program that died after two of three results; a suite that never ended. */
static void test_truncated(void)
{
	g_autoptr(GPtrArray) tests = ktap_parse(
		"TAP version 13\n1..3\nok 1 a\nnot ok 2 b\n# selftests: mm: c\nsome output\n");
	g_autoptr(GPtrArray) suite = ktap_parse(
		"TAP version 14\n1..1\n    # Subtest: cmdline\n    1..4\n    ok 1 - x\n"
		"    ok 2 - y\nKernel panic - not syncing: oops\n");
	g_autofree char *all = shape(tests);
	g_autofree char *s = shape(suite);

	g_assert_cmpstr(all, ==, "a pass\nb fail\nmm/c error\n");
	g_assert_cmpstr(s, ==, "cmdline/x pass\ncmdline/y pass\ncmdline/#3 error\ncmdline/#4 error\n"
			       "cmdline error (parent)\n");
}

static void test_two_documents(void)
{
	g_autoptr(GPtrArray) tests = ktap_parse(
		"TAP version 13\n1..1\nok 1 first\nZERODAY-PAYLOAD-END x rc=0\n"
		"TAP version 13\n1..2\nok 1 second\n");
	g_autofree char *all = shape(tests);

	g_assert_cmpstr(all, ==, "first pass\nsecond pass\n#2 error\n");
}

static void test_hostile(void)
{
	GString *bomb = g_string_new("TAP version 13\n1..1\n");
	g_autoptr(GPtrArray) empty = ktap_parse("");
	g_autoptr(GPtrArray) garbage = ktap_parse("ok\nnot ok x\n1..\nok 1 \x01\x7f\xff bad\n\n");
	g_autoptr(GPtrArray) huge_plan = ktap_parse("TAP version 13\n1..999999999\n");
	g_autoptr(GPtrArray) deep = NULL;
	const struct ktap_test *bad;

	g_assert_cmpuint(empty->len, ==, 0);
	/* Only "ok 1 ..." is a result, its name made printable. */
	g_assert_cmpuint(garbage->len, ==, 1);
	bad = garbage->pdata[0];
	g_assert_true(g_utf8_validate(bad->name, -1, NULL));
	g_assert_null(strchr(bad->name, '\x01'));
	g_assert_cmpuint(huge_plan->len, <=, 100);
	for (unsigned d = 0; d < 10000; d++) {
		for (unsigned i = 0; i < d; i++)
			g_string_append(bomb, "    ");
		g_string_append(bomb, "ok 1 x\n");
	}
	deep = ktap_parse(bomb->str);
	g_string_free(bomb, TRUE);
	for (guint i = 0; i < deep->len; i++) {
		const struct ktap_test *t = deep->pdata[i];

		g_assert_cmpuint(t->depth, <=, KTAP_DEPTH_MAX);
		g_assert_cmpuint(strlen(t->name), <=, KTAP_NAME_MAX);
	}
}

/* The console: KUnit at boot and a payload's KTAP, each test a result, failures findings. */
static void test_console(void)
{
	g_autofree char *log = g_strconcat(
		"[    0.500000] Linux version 6.1.0\n",
		"[    1.000000] ", "TAP version 14\n[    1.000000] 1..2\n",
		"[    1.000001]     # Subtest: example\n[    1.000002]     1..3\n"
		"[    1.000003]     ok 1 - example_simple_test\n"
		"[    1.000004]     ok 2 - example_skip_test # SKIP skipped\n"
		"[    1.000005]     # example_fail: EXPECTATION FAILED at x.c:30\n"
		"[    1.000006]     Expected 1 == 2, but\n"
		"[    1.000007]     not ok 3 - example_fail\n"
		"[    1.000008] not ok 1 - example\n"
		"[    1.000009]     # Subtest: cmdline\n[    1.000010]     1..1\n"
		"[    1.000011]     ok 1 - cmdline_test_range\n[    1.000012] ok 2 - cmdline\n",
		"ZERODAY-BOOT-START\n",
		"ZERODAY-PAYLOAD-START fs-stress\n",
		"TAP version 13\n1..2\nok 1 ext4\n# xfs_repair: found corruption\nnot ok 2 xfs\n",
		"ZERODAY-PAYLOAD-END fs-stress rc=0\n",
		"ZERODAY-PAYLOAD-START smoke\nZERODAY-PAYLOAD-END smoke rc=0\n",
		"ZERODAY-BOOT-END\n", NULL);
	struct console_result r;
	const struct console_finding *xfs;
	struct console_result *runs[] = { &r, &r };
	g_autoptr(GPtrArray) tally = NULL;

	diag_console_classify(&r, log, false, false);
	g_assert_cmpuint(r.tests->len, ==, 6);
	g_assert_cmpuint(r.passed, ==, 3);
	g_assert_cmpuint(r.failed, ==, 2);
	g_assert_cmpuint(r.skipped, ==, 1);
	g_assert_true(r.ended);
	g_assert_cmpstr(((struct ktap_test *)r.tests->pdata[2])->name, ==, "kunit/example/example_fail");
	g_assert_cmpstr(((struct ktap_test *)r.tests->pdata[5])->name, ==, "fs-stress/xfs");
	/* The first failed test is the verdict; the other is a finding too. */
	g_assert_cmpint(r.kind, ==, CONSOLE_TEST_FAIL);
	g_assert_cmpstr(r.title, ==, "kunit/example/example_fail: fail");
	g_assert_cmpuint(r.findings->len, ==, 2);
	xfs = r.findings->pdata[1];
	g_assert_cmpstr(xfs->title, ==, "fs-stress/xfs: fail");
	g_assert_nonnull(strstr(xfs->excerpt, "found corruption"));
	g_assert_true(diag_console_shows(&r, xfs->fingerprint));
	g_assert_false(diag_console_shows(&r, "0123456789abcdef"));
	g_assert_nonnull(strstr(diag_console_excerpt(&r), "Expected 1 == 2"));
	{
		g_autofree char *test = diag_console_test_of(xfs->title);

		g_assert_cmpstr(test, ==, "fs-stress/xfs");
	}
	/* Each failed test counts in the tally, once per boot. */
	tally = diag_console_tally(runs, 2);
	g_assert_cmpuint(tally->len, ==, 2);
	g_assert_cmpuint(((struct console_tally *)tally->pdata[1])->failures, ==, 2);
	g_assert_cmpstr(((struct console_tally *)tally->pdata[1])->title, ==, "fs-stress/xfs: fail");
	console_result_clear(&r);
}

/* A payload judged by its KTAP results is not a failed payload; one without them is. */
static void test_payload_status(void)
{
	struct console_result r;

	diag_console_classify(&r,
			      "ZERODAY-BOOT-START\nZERODAY-PAYLOAD-START t\nTAP version 13\n1..1\n"
			      "ok 1 a\nZERODAY-PAYLOAD-END t rc=1\nZERODAY-BOOT-END\n", false, false);
	g_assert_cmpint(r.kind, ==, CONSOLE_BOOT_OK);
	console_result_clear(&r);
	diag_console_classify(&r,
			      "ZERODAY-BOOT-START\nZERODAY-PAYLOAD-START t\nno ktap\n"
			      "ZERODAY-PAYLOAD-END t rc=1\nZERODAY-BOOT-END\n", false, false);
	g_assert_cmpint(r.kind, ==, CONSOLE_PAYLOAD_FAIL);
	g_assert_cmpstr(r.title, ==, "payload-fail (t)");
	console_result_clear(&r);
	/* A kernel report comes first, whatever the tests said. */
	diag_console_classify(&r,
			      "ZERODAY-BOOT-START\nZERODAY-PAYLOAD-START t\nTAP version 13\n1..1\n"
			      "[ 3.0] WARNING: possible circular locking dependency detected\n"
			      "not ok 1 a\nZERODAY-PAYLOAD-END t rc=0\nZERODAY-BOOT-END\n", false, false);
	g_assert_cmpint(r.kind, ==, CONSOLE_WARNING);
	g_assert_cmpstr(r.title, ==, "WARNING: possible circular locking dependency");
	g_assert_cmpuint(r.failed, ==, 1);
	console_result_clear(&r);
}

int main(int argc, char **argv)
{
	testlib_init(&argc, &argv);
	g_test_add_func("/ktap/kunit", test_kunit);
	g_test_add_func("/ktap/ktap-v1", test_ktap_v1);
	g_test_add_func("/ktap/kselftest", test_kselftest);
	g_test_add_func("/ktap/truncated", test_truncated);
	g_test_add_func("/ktap/two-documents", test_two_documents);
	g_test_add_func("/ktap/hostile", test_hostile);
	g_test_add_func("/ktap/console", test_console);
	g_test_add_func("/ktap/payload-status", test_payload_status);
	return g_test_run();
}
