/*
 * KTAP, the kernel's test output (Documentation/dev-tools/ktap.rst), read
 * as real kernels print it: KUnit on the serial console at boot (nested
 * documents indented by four spaces, "KTAP version 1" or the older "TAP
 * version 14" with "# Subtest:" headers), and kselftest's runner
 * (run_kselftest.sh, "TAP version 13"), which prefixes each program's
 * output with "# ", so that a program's own document is nested by "# ".
 *
 * The console is hostile: kernel messages are interleaved anywhere, a
 * test may crash mid-document, and a guest can print anything. The parser
 * reads line by line without recursion, in time linear in the text, and
 * bounds what it keeps (see the limits below).
 */
#ifndef ZERODAY_KTAP_H
#define ZERODAY_KTAP_H

#include <stdbool.h>
#include <glib.h>

/* A test's name is at most this many bytes (cut on a UTF-8 boundary). */
#define KTAP_NAME_MAX 200

/* A test's diagnostic is at most this many lines. */
#define KTAP_DIAG_LINES 40

enum ktap_result {
	KTAP_PASS, /* "ok", and "not ok" with TODO or XFAIL: an expected failure */
	KTAP_FAIL,
	KTAP_SKIP, /* "ok" or "not ok" with a SKIP directive */
	KTAP_ERROR, /* no result line, although the plan promised one or it had begun */
};

struct ktap_test {
	/*
	 * Its path from the top, the names joined with '/':
	 * "example/example_fail", "list-kunit-test/param_test/param-0". A
	 * name is the result line's description with a leading "- " removed,
	 * the kselftest runner's "selftests: T: N" made "T/N"; without one,
	 * the announced "# Subtest: X" or "# selftests: T: N", else "#N" for
	 * its number. Control characters are replaced with '?' (a tab with a
	 * space), so it is safe in a mail header and a report.
	 */
	char *name;
	enum ktap_result result;
	/*
	 * The result line's text after its '#' ("SKIP reason", "TIMEOUT 45
	 * seconds", "exit=1"), cleaned and cut as a name is; NULL if none.
	 */
	char *directive;
	/*
	 * Its lines: the "# " lines and the lines indented at least as deep
	 * as it, before its result line, its own document's prefix removed;
	 * for a parent, its subtests' lines too. At most KTAP_DIAG_LINES
	 * lines, each "\n"-terminated and at most 512 bytes; NULL when none.
	 */
	char *diagnostic;
	unsigned depth; /* 0 at the top */
	bool leaf;      /* it has no subtests */
};

void ktap_test_free(struct ktap_test *t);

/* "pass", "fail", "skip", "error". */
const char *ktap_result_name(enum ktap_result r);

/*
 * Parses every KTAP/TAP document in @text (several may follow each other;
 * NULL reads as empty). Returns a new array of struct ktap_test that owns
 * them, in result-line order, so each subtest comes before its parent.
 *
 * A line belongs to the deepest open document whose prefix (the text
 * before its version line) it starts with. Of the other lines, a "# "
 * line is a diagnostic of the document it is in, and any other line is a
 * diagnostic of the innermost document's current test if it starts with
 * that document's prefix, else console noise, ignored.
 *
 * When a document ends (its parent's result line, a new document at its
 * column, or the end of @text) short of its plan "1..N", each missing
 * number becomes a KTAP_ERROR test, at most 1000 of them a document; so
 * does a test whose result never came but that had been announced or had
 * begun subtests. Only the first 100000 tests read are kept, and at most
 * 32 MiB of diagnostics in all.
 */
GPtrArray *ktap_parse(const char *text);

/*
 * The tests a caller should report as results: the leaves, and each
 * failed or error parent none of whose subtests failed or erred (its
 * failure is its own, e.g. a suite's init). Returns a new array that
 * borrows @tests' records, in their order; free it before @tests.
 */
GPtrArray *ktap_results(GPtrArray *tests);

#endif
