/*
 * Building a commit against its parent: checkout, build (or reuse a
 * stored build), verdict, and the record in the store. `zeroday build`.
 */
#ifndef ZERODAY_BUILDER_H
#define ZERODAY_BUILDER_H

#include <stdbool.h>
#include <glib.h>

#include "bot/config.h"
#include "bot/store/db.h"
#include "engine/build.h"

struct builder_request {
	const char *source;       /* tree name, or "path:" and a repository path */
	const char *objects_from; /* the git directory holding the commits */
	const char *rev;          /* what to build */
	const char *const *targets; /* target specs, NULL-terminated */
	const char *against;      /* compare with this commit's build, not the first parent's */
	bool alone;               /* build only the commit, compare with nothing */
	bool rebuild;             /* build even when a stored build exists */
	bool progress;            /* draw progress on stderr */
};

struct builder_result {
	char *target;
	char *commit;
	char *parent;               /* NULL for a root commit */
	enum build_verdict verdict;
	struct build_row *build;    /* the commit's build */
	struct build_row *parent_build; /* NULL for a root commit */
	GPtrArray *fresh;           /* struct diag borrowed from build->diags */
};

void builder_result_free(struct builder_result *r);

/*
 * Builds @req->rev and its first parent for every target, reusing stored
 * builds, and records builds and verdicts. Returns an array of struct
 * builder_result, one per target, or NULL with @error set (bad target,
 * unknown revision, no sandbox, store failure).
 */
GPtrArray *builder_run(struct db *db, const struct config *config,
		       const struct builder_request *req, GError **error);

#endif
