/*
 * A build on a cluster node: the job's directory in the spool that
 * zeroday and the nodes share, what the node runs (`zeroday node-build
 * JOBDIR`), and the result it leaves there for zeroday to take.
 *
 * The spool holds:
 *   git/                          a bare repository: the commits exported
 *                                 for the nodes (repo_export())
 *   jobs/KEY/TARGET/COMMIT/       one build: KEY the tree, TARGET its
 *                                 build directory's name, COMMIT the id
 *     job.conf                    the node's zeroday.conf: its root as
 *                                 state-dir, the [build] limits
 *     job.ini                     [job] source, commit, target, objects,
 *                                 ccache-shared
 *     out/                        the log, .config and image, by the node
 *     result.json                 the build, written last (a rename)
 *   warm/KEY/TARGET               the node that built it last
 *   ccache/KEY/                   the tree's compiler cache, shared by the
 *                                 nodes (ccache's remote storage, file:)
 *
 * A node never sees zeroday's state directory: it builds in its own root
 * (src/KEY, build/KEY/TARGET, ccache/KEY, as zeroday does), with the same
 * sandbox, limits and hostile-output rules (builder_build_commit()).
 * zeroday reads what the node left as hostile too: every file through
 * hostile_read()/hostile_copy(), the result checked field by field.
 */
#ifndef ZERODAY_NODE_H
#define ZERODAY_NODE_H

#include <stdbool.h>
#include <glib.h>

#include "bot/store/db.h"
#include "engine/engine.h"

/* The most bytes of a result.json zeroday reads. */
#define NODE_RESULT_MAX (64 * 1024 * 1024)

/* What a node is asked to build, as job.ini says it. */
struct node_job {
	char *source; /* the tree's name */
	char *commit; /* 40 hex digits */
	char *target; /* one target spec, explicit (no @daily) */
	/*
	 * The spool's git directory, which holds the commit: an absolute
	 * path, the same on zeroday's machine and every node.
	 */
	char *objects;
	/* NULL, or the spool's shared compiler caches (engine/build.h ccache_shared). */
	char *ccache_shared;
};

void node_job_clear(struct node_job *job);
ZD_AUTO_DEFINE(node_job, node_job_clear)

/* Writes @job as @dir/job.ini. */
bool node_job_write(const struct node_job *job, const char *dir, GError **error);

/*
 * `zeroday node-build JOBDIR`: builds the job of @jobdir with the
 * configuration of @jobdir/job.conf, and writes out/ and result.json. A build that failed, or hit an infrastructure error of its
 * own (BUILD_INFRA), is a result; false only when it could not run.
 */
bool node_build(const char *jobdir, GError **error);

/*
 * Reads the result a node left in @jobdir: a build of @job (not stored,
 * id 0), its log, .config and image copied into @logdir and @imagedir
 * under names starting with @stamp, and *@node the node's name (caller
 * frees). NULL with BOT_ERROR_NOT_FOUND when there is no result, or
 * BOT_ERROR_TEMPORARY when it is unreadable or does not hold together:
 * then it says nothing of the commit.
 */
struct build_row *node_result_read(const char *jobdir, const struct node_job *job,
				   const char *logdir, const char *imagedir, const char *stamp,
				   char **node, GError **error);

#endif
