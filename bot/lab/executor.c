/*
 * The executors' table, and the local one: builds in this machine's
 * sandbox, boots on the configured libvirt hosts. The Slurm one's builds
 * are in bot/lab/slurm.c.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <string.h>

#include "bot/config.h"
#include "bot/lab/executor.h"
#include "bot/lab/slurm.h"

static GPtrArray *local_build(const struct bot *bot, const struct builder_request *req,
			      GError **error)
{
	return builder_run(bot->db, bot->config, req, error);
}

static GPtrArray *local_boot(const struct bot *bot, const struct booter_request *req,
			     GPtrArray **tally, GError **error)
{
	return booter_boot(bot->db, bot->config, req, tally, error);
}

static const struct executor executors[] = {
	/* A tree's builds share its one work tree in the state directory. */
	{ "local", JOB_CLAIM_TREE, local_build, local_boot, NULL },
	/*
	 * Builds on the cluster, each target of a tree in its own Slurm job
	 * (bot/lab/slurm.c); boots stay on libvirt ([boot] hosts).
	 */
	{ "slurm", JOB_CLAIM_TARGET, slurm_build, local_boot, slurm_forget },
};

const struct executor *executor_find(const char *name)
{
	for (size_t i = 0; i < G_N_ELEMENTS(executors); i++) {
		if (strcmp(executors[i].name, name) == 0)
			return &executors[i];
	}
	return NULL;
}

const struct executor *executor_of(const struct bot *bot)
{
	const struct executor *e = executor_find(bot->config->build_executor);

	/* The configuration allows no other name (bot/config.c). */
	g_assert(e != NULL);
	return e;
}
