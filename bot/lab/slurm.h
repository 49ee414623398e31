/*
 * The Slurm executor ([build] executor = slurm): every build a job needs
 * that the store does not hold is a Slurm job running `zeroday
 * node-build` on a node (bot/lab/node.h), driven through Slurm's
 * commands (sbatch, squeue; argv, never a shell, never libslurm, whose
 * ABI changes each release).
 *
 * - The commit goes to the nodes through the spool's git repository
 *   (repo_export()); the job's description, its outputs and its result
 *   through its directory in the spool.
 * - Two builds of one tree and target never run at once anywhere: each
 *   is named zd-KEY-TARGET and submitted with --dependency=singleton,
 *   Slurm's lock per name. A build asks (--prefer) for the node that
 *   built its tree and target last, whose O= directory is warm, when that
 *   node declares a feature named like itself; it runs elsewhere rather
 *   than wait.
 * - Nothing that goes wrong on the cluster is a verdict: a job that ends
 *   in any state but COMPLETED (a node that died, a cancel, a timeout, a
 *   preemption), a job Slurm forgot, a result missing or unreadable, is
 *   BOT_ERROR_TEMPORARY, and the caller's job is retried. While Slurm
 *   does not answer, the build waits; the daemon's other threads go on.
 * - The job's directory is named by tree, target and commit, and holds
 *   its Slurm job id: a zeroday killed while its builds run finds them
 *   there after a restart and waits for them (or takes their results)
 *   instead of submitting them again. A result is stored once: the store
 *   is asked first, and the directory is removed only after the build is
 *   stored. A zeroday told to stop leaves its jobs running and fails the
 *   build with BOT_ERROR_STOPPED, no failure of the job: the caller hands
 *   the job back, and the next start takes it over at once.
 */
#ifndef ZERODAY_SLURM_H
#define ZERODAY_SLURM_H

#include <stdbool.h>
#include <glib.h>

#include "bot/bot.h"
#include "bot/lab/builder.h"
#include "bot/status.h"

/* As builder_run(), each missing build a Slurm job. */
GPtrArray *slurm_build(const struct bot *bot, const struct builder_request *req, GError **error);

/*
 * The cluster's builds of this user now (struct status_cluster_job,
 * bot/status.h): queued and running, with their nodes and since when, for
 * `zeroday status`. NULL with BOT_ERROR_TEMPORARY when Slurm does not
 * answer.
 */
GPtrArray *slurm_queue(GError **error);

/*
 * For @tree, removed (tree rm, or unsubscribed by mail): cancels its
 * queued and running jobs and empties its directories in the spool (its
 * jobs', and its share of the compiler cache). The nodes' warm
 * directories stay (they are the nodes'). False, BOT_ERROR_TEMPORARY,
 * when Slurm does not answer.
 */
bool slurm_forget(const struct bot *bot, const char *tree, GError **error);

#endif
