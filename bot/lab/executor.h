/*
 * Executors: where a build and a boot run. A probe (bot/lab/probe.h)
 * asks its executor and never knows which one it was: the local one runs
 * the build in this process's sandbox and the boots on the configured
 * libvirt hosts; a cluster's would hand the build to its engine and
 * bring back the same results. An executor records what it ran in the
 * store, as builder_run() and booter_boot() do.
 */
#ifndef ZERODAY_EXECUTOR_H
#define ZERODAY_EXECUTOR_H

#include <stdbool.h>
#include <glib.h>

#include "bot/bot.h"
#include "bot/lab/booter.h"
#include "bot/lab/builder.h"
#include "bot/store/db.h"

struct executor {
	const char *name;
	/* What one of its running jobs keeps other workers from (db_job_claim()). */
	enum job_claim_scope claim;
	/* As builder_run(): an array of struct builder_result, one per target. */
	GPtrArray *(*build)(const struct bot *bot, const struct builder_request *req,
			    GError **error);
	/* As booter_boot(): the runs in seed order, *@tally their tally. */
	GPtrArray *(*boot)(const struct bot *bot, const struct booter_request *req,
			   GPtrArray **tally, GError **error);
	/*
	 * Drops what it holds for @tree, which was removed (its jobs on a
	 * cluster). NULL when it holds nothing outside the store.
	 */
	bool (*forget)(const struct bot *bot, const char *tree, GError **error);
};

/* The executor called @name ("local", "slurm"), or NULL. */
const struct executor *executor_find(const char *name);

/* The executor that runs @bot's builds and boots. */
const struct executor *executor_of(const struct bot *bot);

#endif
