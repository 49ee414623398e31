/*
 * Diagnostics: compiler, linker, modpost, sparse and coccinelle output
 * parsed into records, each with a fingerprint that survives unrelated
 * edits, and the comparison that finds what a commit introduced.
 */
#ifndef ZERODAY_DIAG_H
#define ZERODAY_DIAG_H

#include <stdbool.h>
#include <glib.h>

#include "engine/engine.h"
#include "engine/ktap.h"

enum diag_kind { DIAG_WARNING, DIAG_ERROR };

struct diag {
	enum diag_kind kind;
	char *checker;     /* "compiler", "ld", "modpost", "sparse", "coccinelle", "make" */
	char *file;        /* relative to the source tree, or "" */
	unsigned line;     /* 0 when unknown */
	unsigned column;   /* 0 when unknown */
	/*
	 * From gcc's "In function" context, or NULL: "f", or for an inlined
	 * instance "f, inlined from g (FILE)", g being the function the call
	 * is written in and FILE its file.
	 */
	char *function;
	char *message;     /* as printed, with quotes made ASCII */
	char *fingerprint; /* 16 hex digits: see diag_fingerprint() */
};

void diag_free(struct diag *d);

const char *diag_kind_name(enum diag_kind kind);

/*
 * Parses build output. Paths under @srcdir or @builddir (either may be
 * NULL) are made relative to the source tree. A warning printed several
 * times at the same place (a header included by many files) is kept once.
 * make's own "*** [...] Error" lines are not diagnostics; when there is no
 * other error, the first of them is kept, as checker "make".
 *
 * Returns a new array of struct diag, in output order.
 */
GPtrArray *diag_parse_build(const char *log, const char *srcdir, const char *builddir);

/*
 * The same for the @len bytes of @log, which may hold NUL bytes: each is
 * read as '?', as a byte that is not UTF-8 is read as U+FFFD, so that
 * the lines after it count.
 */
GPtrArray *diag_parse_build_len(const char *log, gsize len, const char *srcdir,
				const char *builddir);

/*
 * The fingerprint of a diagnostic: a hash of its kind, checker, file,
 * function and message with line and column numbers, addresses and other
 * free-standing numbers removed, and the numbers __COUNTER__ puts in
 * names (__compiletime_assert_411, __UNIQUE_ID_x12). A warning that only
 * moves keeps its fingerprint. Returns 16 hex digits (caller frees).
 */
char *diag_fingerprint(enum diag_kind kind, const char *checker, const char *file,
		       const char *function, const char *message);

/*
 * Returns the diagnostics of @child that @parent does not have: for each
 * fingerprint, the occurrences beyond the parent's count. The array
 * borrows @child's records; free it before @child.
 */
GPtrArray *diag_new_in(GPtrArray *child, GPtrArray *parent);

/* Returns whether any diagnostic of @diags is an error. */
bool diag_has_error(GPtrArray *diags);

/*
 * Console logs of boots. zeroday's init prints markers: ZERODAY-BOOT-START,
 * ZERODAY-PAYLOAD-START NAME, ZERODAY-PAYLOAD-END NAME rc=N and
 * ZERODAY-BOOT-END.
 */
enum console_kind {
	CONSOLE_BOOT_OK,
	CONSOLE_PANIC,
	CONSOLE_OOPS,
	CONSOLE_BUG,
	CONSOLE_KASAN,
	CONSOLE_UBSAN,
	CONSOLE_WARNING,
	CONSOLE_HUNG_TASK,
	CONSOLE_TIMEOUT,
	CONSOLE_NO_OUTPUT,
	CONSOLE_PAYLOAD_FAIL,
	CONSOLE_TEST_FAIL, /* a test's KTAP result: see struct console_result's tests */
	CONSOLE_INFRA,
};

const char *diag_console_kind_name(enum console_kind kind);

/* One thing the kernel or a payload reported. */
struct console_finding {
	enum console_kind kind;
	char *title;       /* e.g. "WARNING in foo_probe", "KASAN: use-after-free in bar" */
	char *fingerprint; /* 16 hex digits of the normalized title */
	char *excerpt;     /* the report's lines, timestamps removed, up to 40 */
};

void console_finding_free(struct console_finding *f);

struct console_result {
	enum console_kind kind; /* the verdict: the first kernel report, else ... */
	char *title;            /* the verdict's title */
	char *fingerprint;      /* the verdict's fingerprint */
	char *last_line;        /* the last line printed, for timeouts */
	bool ended;             /* the init printed its end marker */
	GPtrArray *findings;    /* struct console_finding, in log order */
	/*
	 * The tests' results the console printed in KTAP (struct ktap_test,
	 * ktap_results() of each document), named by where they ran:
	 * "kunit/SUITE/TEST" for the kernel's own KUnit suites at boot,
	 * "PAYLOAD/NAME" for a payload's. Each failed one (fail or error) is
	 * also a CONSOLE_TEST_FAIL finding titled "NAME: fail".
	 */
	GPtrArray *tests;
	unsigned passed, failed, skipped;
};

void console_result_clear(struct console_result *r);

/* The console lines of @r's verdict: its report's excerpt, else the last line. */
const char *diag_console_excerpt(const struct console_result *r);

/*
 * Whether a boot showed the failure of fingerprint @fingerprint: its
 * verdict, or one of its failed tests (a boot can fail several tests,
 * each its own failure).
 */
bool diag_console_shows(const struct console_result *r, const char *fingerprint);

/* The name of the test a CONSOLE_TEST_FAIL title names ("NAME: fail"), or NULL (caller frees). */
char *diag_console_test_of(const char *title);

/* The kind named @name (diag_console_kind_name()); false if none is. */
bool diag_console_kind_parse(const char *name, enum console_kind *out);

/*
 * Classifies a console log. @timed_out: the watchdog ended the boot;
 * @infra: QEMU or libvirt failed (then the log is not the kernel's fault).
 * A kernel report (panic, oops, BUG, KASAN, UBSAN, WARNING, hung task)
 * decides the verdict, the first one in the log; else a failed test (its
 * KTAP result); else a failed payload (one that printed no KTAP results:
 * a payload that did is judged by them, not by its exit status); else
 * boot-ok when the end marker was printed, timeout when the watchdog
 * fired, no-output when nothing was printed.
 */
void diag_console_classify(struct console_result *out, const char *log, bool timed_out,
			   bool infra);

/* How often one failure was seen over repeated boots. */
struct console_tally {
	enum console_kind kind;
	char *title;
	char *fingerprint;
	unsigned failures; /* runs that showed it */
	unsigned runs;     /* runs that counted: infrastructure errors do not */
	bool intermittent; /* seen, but not in every run */
	char *excerpt;     /* the first showing run's report lines, or NULL */
};

void console_tally_free(struct console_tally *t);

/*
 * Tallies the failures of @n boots of the same kernel, per fingerprint,
 * in order of first appearance: each boot's verdict and each test it
 * failed besides. boot-ok runs count as runs; infra-error runs do not
 * count at all.
 */
GPtrArray *diag_console_tally(struct console_result *const *results, unsigned n);

#endif
