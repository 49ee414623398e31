/*
 * The command-line commands. Each takes its own argv (argv[0] is the
 * command's name) and returns an exit status: 0 success, 1 failure,
 * 2 misuse. Only main.c exits.
 */
#ifndef ZERODAY_CLI_H
#define ZERODAY_CLI_H

#include "bot/config.h"
#include "bot/store/db.h"
#include "engine/repo.h"

/* What every command may need, opened on first use by cli_open(). */
struct cli {
	const char *config_path; /* --config, or NULL */
	const char *state_dir;   /* --state-dir, or NULL */
	struct config *config;
	struct db *db;
	struct repo *repo;
};

void cli_release(struct cli *cli);

int cli_init(struct cli *cli, int argc, char **argv);
int cli_tree(struct cli *cli, int argc, char **argv);
int cli_poll(struct cli *cli, int argc, char **argv);
int cli_status(struct cli *cli, int argc, char **argv);
int cli_build(struct cli *cli, int argc, char **argv);
int cli_boot(struct cli *cli, int argc, char **argv);
int cli_run(struct cli *cli, int argc, char **argv);
int cli_report(struct cli *cli, int argc, char **argv);
int cli_series(struct cli *cli, int argc, char **argv);
int cli_commands(struct cli *cli, int argc, char **argv);
int cli_outbox(struct cli *cli, int argc, char **argv);
int cli_node_build(struct cli *cli, int argc, char **argv);
int cli_version(struct cli *cli, int argc, char **argv);

#endif
