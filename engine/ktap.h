/*
 * KTAP, the kernel's test output format (Documentation/dev-tools/ktap.rst):
 * what KUnit prints at boot and kselftest's runner prints for each test
 * program (TAP version 13, each program's own output prefixed "# "). The
 * parser reads a console, where other kernel messages come in between.
 */
#ifndef ZERODAY_KTAP_H
#define ZERODAY_KTAP_H

#include <stdbool.h>
#include <glib.h>

enum ktap_result {
	KTAP_PASS,  /* "ok", and an expected failure ("not ok ... # TODO", "# XFAIL") */
	KTAP_FAIL,  /* "not ok", a "# TIMEOUT" included */
	KTAP_SKIP,  /* "# SKIP", whether "ok" or "not ok" */
	KTAP_ERROR, /* no result line, although the plan promised one (it crashed, or hung) */
};

struct ktap_test {
	/*
	 * Its path from the top, names joined by '/': "example/example_fail",
	 * "list-kunit-test/param_test/param-0"; kselftest's "selftests: vm:
	 * hugepage-mmap" is "vm/hugepage-mmap". Printable, at most
	 * KTAP_NAME_MAX bytes.
	 */
	char *name;
	enum ktap_result result;
	char *directive;  /* what follows " # " on its result line ("SKIP reason"), or NULL */
	/* Its "# " and indented lines before its result line, at most KTAP_DIAG_LINES, or NULL. */
	char *diagnostic;
	unsigned depth;   /* 0 at the top */
	bool leaf;        /* it has no subtests */
	bool child_failed; /* one of its subtests failed or has no result */
};

#define KTAP_NAME_MAX 200
#define KTAP_DIAG_LINES 40
/* Deeper lines are read as diagnostics: no real suite nests this far. */
#define KTAP_DEPTH_MAX 16

void ktap_test_free(struct ktap_test *t);

/*
 * Parses every KTAP and TAP document in @text (several may follow each
 * other, and lines that are neither come in between); returns struct
 * ktap_test in result-line order, a test's subtests before it. A plan
 * ("1..N") that promised more results than came adds a KTAP_ERROR test for
 * each one missing, named after its announcement ("# Subtest: X",
 * "# selftests: T: X") when there was one, else "#K". Linear in @text.
 */
GPtrArray *ktap_parse(const char *text);

/* "pass", "fail", "skip", "error". */
const char *ktap_result_name(enum ktap_result r);

/*
 * The tests of @tests (ktap_parse()'s) that are results of their own: the
 * leaves, and each parent that failed (or has no result) while none of
 * its subtests did, whose failure is its own (a suite's init, a program's
 * exit status). Borrows @tests' entries.
 */
GPtrArray *ktap_results(GPtrArray *tests);

#endif
