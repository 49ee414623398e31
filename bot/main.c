/*
 * zeroday: the kernel test robot that lives in email.
 * Option parsing, the commands[] table and startup; the only place that exits.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <glib.h>

#include "bot/cli.h"

static const struct command {
	const char *name;
	int (*run)(struct cli *cli, int argc, char **argv);
	const char *summary;
} commands[] = {
	{ "init", cli_init, "create the state directory, database and object store" },
	{ "tree", cli_tree, "add, list, show, remove or change subscribed trees" },
	{ "poll", cli_poll, "fetch trees and select the new commits to test" },
	{ "build", cli_build, "build a commit and report what it broke against its parent" },
	{ "boot", cli_boot, "boot a kernel image (or a build's) and classify the console" },
	{ "run", cli_run, "the daemon: poll, build, record findings" },
	{ "status", cli_status, "show trees, the test queue and recent changes" },
	{ "report", cli_report, "print the mail zeroday would send about a finding" },
	{ "outbox", cli_outbox, "list the mails queued and sent" },
	{ "series", cli_series, "list the patch series read from the lists, and their results" },
	{ "commands", cli_commands, "list the mail commands taken, and their answers" },
	{ "node-build", cli_node_build, "build one job on a Slurm node (run by the cluster)" },
	{ "version", cli_version, "print the version" },
};

static void usage(FILE *out)
{
	fprintf(out, "Usage: zeroday [--config FILE] [--state-dir DIR] [--verbose] "
		     "[--log-level LEVEL] COMMAND [ARG...]\n\nCommands:\n");
	for (size_t i = 0; i < G_N_ELEMENTS(commands); i++)
		fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\nRun 'zeroday COMMAND --help' for a command's options. "
		     "See zeroday(1) and zeroday.conf(5).\n");
}

static bool journald; /* stderr is a stream to systemd's journal */
/* The least severe level logged; messages and worse until the options are read. */
static GLogLevelFlags max_level = G_LOG_LEVEL_MESSAGE;

/* The names of --log-level, most severe first (GLib's flags grow as severity falls). */
static const struct {
	const char *name;
	GLogLevelFlags level;
} log_levels[] = {
	{ "error", G_LOG_LEVEL_CRITICAL },
	{ "warning", G_LOG_LEVEL_WARNING },
	{ "message", G_LOG_LEVEL_MESSAGE },
	{ "info", G_LOG_LEVEL_INFO },
	{ "debug", G_LOG_LEVEL_DEBUG },
};

/* Sets max_level from --log-level's @name; false for an unknown name. */
static bool set_log_level(const char *name)
{
	for (size_t i = 0; i < G_N_ELEMENTS(log_levels); i++) {
		if (strcmp(name, log_levels[i].name) == 0) {
			max_level = log_levels[i].level;
			return true;
		}
	}
	return false;
}

/*
 * Whether stderr goes to the journal: a socket the journal holds, or the
 * stream that $JOURNAL_STREAM ("DEVICE:INODE", set by systemd for a
 * service's stdout and stderr) names.
 */
static bool stderr_is_journal(void)
{
	const char *stream = g_getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (g_log_writer_is_journald(fileno(stderr)))
		return true;
	if (!stream || sscanf(stream, "%llu:%llu", &dev, &ino) != 2 ||
	    fstat(fileno(stderr), &st) < 0)
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

/*
 * Log lines go to the journal when stderr does, as structured entries
 * (PRIORITY, GLIB_DOMAIN, MESSAGE, SYSLOG_IDENTIFIER=zeroday); else, or
 * when the journal refuses them, to stderr as "zeroday: domain: message".
 * Levels less severe than max_level are dropped.
 */
static GLogWriterOutput log_writer(GLogLevelFlags level, const GLogField *fields,
				   gsize n_fields, gpointer user_data)
{
	const char *domain = NULL;
	const char *message = NULL;

	if ((level & G_LOG_LEVEL_MASK) > max_level)
		return G_LOG_WRITER_HANDLED;
	if (journald) {
		g_autofree GLogField *all = g_new(GLogField, n_fields + 1);

		memcpy(all, fields, n_fields * sizeof(*fields));
		all[n_fields] = (GLogField){ "SYSLOG_IDENTIFIER", "zeroday", -1 };
		if (g_log_writer_journald(level, all, n_fields + 1, user_data) ==
		    G_LOG_WRITER_HANDLED)
			return G_LOG_WRITER_HANDLED;
	}
	for (gsize i = 0; i < n_fields; i++) {
		if (strcmp(fields[i].key, "GLIB_DOMAIN") == 0)
			domain = fields[i].value;
		else if (strcmp(fields[i].key, "MESSAGE") == 0)
			message = fields[i].value;
	}
	fprintf(stderr, "zeroday: %s%s%s%s\n", domain ? domain : "", domain ? ": " : "",
		(level & (G_LOG_LEVEL_WARNING | G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_ERROR))
			? "warning: " : "",
		message ? message : "");
	return G_LOG_WRITER_HANDLED;
}

int main(int argc, char **argv)
{
	struct cli cli = { 0 };
	g_autofree char *config_path = NULL;
	g_autofree char *state_dir = NULL;
	g_autofree char *log_level = NULL;
	gboolean verbose = FALSE; /* G_OPTION_ARG_NONE writes a gboolean, not a bool */
	g_autoptr(GOptionContext) ctx = NULL;
	g_autoptr(GError) error = NULL;
	gboolean help = FALSE;
	gboolean version = FALSE;
	GOptionEntry entries[] = {
		{ "config", 'c', 0, G_OPTION_ARG_FILENAME, &config_path,
		  "Read FILE instead of the default zeroday.conf", "FILE" },
		{ "state-dir", 'C', 0, G_OPTION_ARG_FILENAME, &state_dir,
		  "Keep the database, git store and logs in DIR", "DIR" },
		{ "verbose", 'v', 0, G_OPTION_ARG_NONE, &verbose,
		  "Log progress details (--log-level=debug)", NULL },
		{ "log-level", 0, 0, G_OPTION_ARG_STRING, &log_level,
		  "Log LEVEL and the more severe ones: error, warning, message (the default), info "
		  "or debug", "LEVEL" },
		{ "help", 'h', 0, G_OPTION_ARG_NONE, &help, "Show this help", NULL },
		{ "version", 0, 0, G_OPTION_ARG_NONE, &version, "Print the version", NULL },
		G_OPTION_ENTRY_NULL,
	};
	int rc = 2;

	setlocale(LC_ALL, "");
	journald = stderr_is_journal();
	g_log_set_writer_func(log_writer, NULL, NULL);

	ctx = g_option_context_new("COMMAND [ARG...]");
	g_option_context_set_help_enabled(ctx, FALSE);
	g_option_context_set_strict_posix(ctx, TRUE);
	g_option_context_add_main_entries(ctx, entries, NULL);
	if (!g_option_context_parse(ctx, &argc, &argv, &error)) {
		fprintf(stderr, "zeroday: %s\n", error->message);
		usage(stderr);
		return 2;
	}
	if (help) {
		usage(stdout);
		return 0;
	}
	/* --log-level, else -v or G_MESSAGES_DEBUG for everything, else messages and worse. */
	if (log_level && !set_log_level(log_level)) {
		fprintf(stderr, "zeroday: unknown --log-level '%s' (error, warning, message, info, "
			"debug)\n", log_level);
		return 2;
	}
	if (!log_level)
		max_level = verbose || g_getenv("G_MESSAGES_DEBUG") ? G_LOG_LEVEL_DEBUG
								    : G_LOG_LEVEL_MESSAGE;
	cli.config_path = config_path;
	cli.state_dir = state_dir;
	if (version)
		{
		char name[] = "version";

		return cli_version(&cli, 1, (char *[]){ name, NULL });
	}
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	for (size_t i = 0; i < G_N_ELEMENTS(commands); i++) {
		if (strcmp(argv[1], commands[i].name) == 0) {
			rc = commands[i].run(&cli, argc - 1, argv + 1);
			cli_release(&cli);
			return rc;
		}
	}
	fprintf(stderr, "zeroday: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return rc;
}
