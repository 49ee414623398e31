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

enum diag_kind { DIAG_WARNING, DIAG_ERROR };

struct diag {
	enum diag_kind kind;
	char *checker;     /* "compiler", "ld", "modpost", "sparse", "coccinelle", "make" */
	char *file;        /* relative to the source tree, or "" */
	unsigned line;     /* 0 when unknown */
	unsigned column;   /* 0 when unknown */
	char *function;    /* from gcc's "In function" context, or NULL */
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
 * The fingerprint of a diagnostic: a hash of its kind, checker, file,
 * function and message with line and column numbers, addresses and other
 * free-standing numbers removed. A warning that only moves keeps its
 * fingerprint. Returns 16 hex digits (caller frees).
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

#endif
