/*
 * Building a commit against its parent: checkout, build (or reuse a
 * stored build), verdict, and the record in the store. `zeroday build`,
 * and the local executor. The cluster's executor (bot/lab/slurm.h) runs
 * the same verdict with its own way of building one commit, and its
 * nodes (bot/lab/node.h) build one commit as this machine does.
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

/*
 * Where a build keeps its files. Under @root: src/KEY (the tree's work
 * tree, locked while in use), build/KEY/TARGET (the warm O= directory),
 * ccache/KEY (the tree's own cache) and tools. The log and .config go to
 * @logdir, the image and its vmlinux to @imagedir; NULL: root/logs/build/KEY and
 * root/images/KEY. zeroday's own builds use its state directory as root.
 * A cluster's nodes share each tree's compiler cache besides their own
 * (ccache's remote storage, engine/build.h): @ccache_shared/KEY.
 */
struct builder_site {
	const char *root;
	const char *logdir;
	const char *imagedir;
	const char *ccache_shared; /* NULL, or the shared caches' root: KEY under it is the tree's */
};

/*
 * The vmlinux kept beside the image @image_path (STAMP.image ->
 * STAMP.vmlinux), for decoding a console's trace (engine/decode.h), or
 * NULL when @image_path is NULL or not an image's name (caller frees).
 * The file may be missing: a build without one, or kept before there was.
 */
char *builder_vmlinux_path(const char *image_path);

/*
 * The selftest tree kept beside the image @image_path (STAMP.image ->
 * STAMP.image.kselftest, a directory: the install tree of a target with
 * kselftest= words), or NULL when @image_path is NULL or not an image's
 * name (caller frees). It may be missing: a target without selftests.
 */
char *builder_kselftest_path(const char *image_path);

/*
 * The file that stands alone in a kept selftest directory when the
 * selftests did not build: its text says why.
 */
#define BUILDER_KSELFTEST_FAILED "zeroday-build-failed"

/* A name for @source (a tree, or "path:" and a repository) safe as a directory name. */
char *builder_source_key(const char *source);

/* Parses @req's targets into @out (struct build_target), daily seeds made explicit. */
bool builder_parse_targets(GArray *out, const struct builder_request *req, GError **error);

/*
 * Builds @commit for @target, not yet stored (id 0): a finished build,
 * BUILD_INFRA with its reason included; NULL with @error set when it could
 * not run at all.
 */
typedef struct build_row *(*builder_build_fn)(void *data, const struct build_target *target,
					      const char *commit, GError **error);

/*
 * As builder_run(), for @commit (a full id) against @parent (NULL: alone),
 * with @build making each build the store does not hold; it stores them.
 */
GPtrArray *builder_run_with(struct db *db, const struct builder_request *req, const char *commit,
			    const char *parent, builder_build_fn build, void *data, GError **error);

/*
 * Checks out @commit of @source (objects from the git directory
 * @objects_from) in @site's work tree for @source and builds it for
 * @target, with @config's limits and sandbox: what a cluster node runs.
 * Returns the build, not stored, as builder_build_fn.
 */
struct build_row *builder_build_commit(const struct config *config,
				       const struct builder_site *site, const char *source,
				       const char *objects_from, const char *commit,
				       const struct build_target *target, GError **error);

#endif
