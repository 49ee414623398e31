/*
 * The command-line commands: see cli.h and zeroday(1).
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <json-glib/json-glib.h>

#include "bot/bot.h"
#include "bot/cli.h"
#include "bot/lab/booter.h"
#include "bot/lab/builder.h"
#include "bot/lab/node.h"
#include "bot/mailroom/commands.h"
#include "bot/mailroom/outbox.h"
#include "bot/mailroom/render.h"
#include "bot/mailroom/report.h"
#include "bot/lab/sched.h"
#include "bot/lab/slurm.h"
#include "bot/mailroom/series.h"
#include "bot/status.h"
#include "bot/trees.h"
#include "bot/lab/watch.h"
#include "engine/build.h"
#include "engine/diag.h"
#include "mail/compose.h"

#define EXIT_USAGE 2

void cli_release(struct cli *cli)
{
	g_clear_pointer(&cli->repo, repo_free);
	g_clear_pointer(&cli->db, db_close);
	g_clear_pointer(&cli->config, config_free);
}

static int fail(GError *error)
{
	fprintf(stderr, "zeroday: %s\n", error->message);
	return error->domain == BOT_ERROR && error->code == BOT_ERROR_USAGE ? EXIT_USAGE : 1;
}

/*
 * Parses a command's options. --help prints the help and returns false
 * with *@status 0; misuse prints the error and the help and returns false
 * with *@status 2.
 */
static bool parse_options(int *argc, char ***argv, const char *params, const char *summary,
			  GOptionEntry *entries, int *status)
{
	g_autoptr(GOptionContext) ctx = g_option_context_new(params);
	g_autoptr(GError) error = NULL;
	gboolean help = FALSE;
	GOptionEntry help_entry[] = {
		{ "help", 'h', 0, G_OPTION_ARG_NONE, &help, "Show this help", NULL },
		G_OPTION_ENTRY_NULL,
	};
	g_autofree char *prgname = g_strdup_printf("zeroday %s", (*argv)[0]);

	g_option_context_set_help_enabled(ctx, FALSE);
	g_option_context_set_summary(ctx, summary);
	g_option_context_add_main_entries(ctx, help_entry, NULL);
	if (entries)
		g_option_context_add_main_entries(ctx, entries, NULL);
	g_set_prgname(prgname);
	if (!g_option_context_parse(ctx, argc, argv, &error)) {
		g_autofree char *text = g_option_context_get_help(ctx, TRUE, NULL);

		fprintf(stderr, "zeroday %s: %s\n\n%s", (*argv)[0], error->message, text);
		*status = EXIT_USAGE;
		return false;
	}
	if (help) {
		g_autofree char *text = g_option_context_get_help(ctx, TRUE, NULL);

		fputs(text, stdout);
		*status = 0;
		return false;
	}
	return true;
}

static int usage(const char *command, const char *message)
{
	fprintf(stderr, "zeroday %s: %s\nTry 'zeroday %s --help'.\n", command, message, command);
	return EXIT_USAGE;
}

/* Loads the configuration and applies its limits to libgit2. */
static bool load_config(struct cli *cli, GError **error)
{
	if (cli->config)
		return true;
	cli->config = config_load(cli->config_path, cli->state_dir, error);
	return cli->config && repo_global_init(&cli->config->limits, error);
}

/* Opens the configuration, the database and (if @want_repo) the store. */
static bool cli_open(struct cli *cli, bool want_repo, GError **error)
{
	if (!load_config(cli, error))
		return false;
	if (!cli->db) {
		g_autofree char *path = config_db_path(cli->config);

		if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
			g_set_error(error, BOT_ERROR, BOT_ERROR_NOT_FOUND,
				    "no zeroday state in %s; run 'zeroday init' first",
				    cli->config->state_dir);
			return false;
		}
		cli->db = db_open(path, error);
		if (!cli->db)
			return false;
	}
	if (want_repo && !cli->repo) {
		g_autofree char *path = config_git_path(cli->config);

		cli->repo = repo_open(path, error);
		if (!cli->repo)
			return false;
	}
	return true;
}

/* init */

int cli_init(struct cli *cli, int argc, char **argv)
{
	g_autoptr(GError) error = NULL;
	g_autofree char *logs = NULL;
	int status;

	if (!parse_options(&argc, &argv, "", "Create the state directory: the database, the "
			   "git object store and the logs. Running it again is harmless.",
			   NULL, &status))
		return status;
	if (argc != 1)
		return usage("init", "takes no arguments");
	if (!load_config(cli, &error))
		return fail(error);
	logs = config_log_dir(cli->config);
	if (g_mkdir_with_parents(cli->config->state_dir, 0711) < 0 ||
	    g_mkdir_with_parents(logs, 0700) < 0) {
		fprintf(stderr, "zeroday: cannot create %s: %s\n", cli->config->state_dir,
			g_strerror(errno));
		return 1;
	}
	if (!cli->db) {
		g_autofree char *path = config_db_path(cli->config);

		cli->db = db_open(path, &error);
		if (!cli->db)
			return fail(error);
	}
	if (!cli_open(cli, true, &error))
		return fail(error);
	printf("zeroday state ready in %s (schema %d)\n", cli->config->state_dir,
	       db_schema_version(cli->db));
	return 0;
}

/* tree */

/* @a followed by @b, either may be NULL (caller frees the list, not the items). */
static const char **strv_join(char **a, char **b, char **c)
{
	GPtrArray *out = g_ptr_array_new();
	char **lists[] = { a, b, c };

	for (gsize k = 0; k < G_N_ELEMENTS(lists); k++) {
		for (char **i = lists[k]; i && *i; i++)
			g_ptr_array_add(out, *i);
	}
	g_ptr_array_add(out, NULL);
	return (const char **)g_ptr_array_free(out, FALSE);
}

static int tree_add(struct cli *cli, int argc, char **argv)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(tree_row) row = NULL;
	gboolean non_rebasable = FALSE;
	g_auto(GStrv) blacklist = NULL;
	g_auto(GStrv) to = NULL;
	g_auto(GStrv) cc = NULL;
	g_auto(GStrv) maintainers = NULL;
	g_auto(GStrv) lists = NULL;
	g_autofree const char **all_cc = NULL;
	gboolean private = FALSE;
	gboolean mail_clean = FALSE;
	gboolean regzbot = FALSE;
	g_auto(GStrv) targets = NULL;
	g_auto(GStrv) prefixes = NULL;
	g_auto(GStrv) payloads = NULL;
	g_autofree char *base = NULL;
	GOptionEntry entries[] = {
		{ "target", 0, 0, G_OPTION_ARG_STRING_ARRAY, &targets,
		  "Build for TARGET, e.g. x86_64:defconfig:W=1 (repeatable)", "TARGET" },
		{ "payload", 0, 0, G_OPTION_ARG_STRING_ARRAY, &payloads,
		  "Boot with PAYLOAD, a shipped name or an absolute path, run in the guest only "
		  "(repeatable; default: [boot] payloads)", "PAYLOAD" },
		{ "non-rebasable", 0, 0, G_OPTION_ARG_NONE, &non_rebasable,
		  "Test the head only, and bisect when it fails", NULL },
		{ "base", 0, 0, G_OPTION_ARG_STRING, &base,
		  "Commits of TREE/BRANCH count as upstream, not new", "TREE/BRANCH" },
		{ "blacklist", 0, 0, G_OPTION_ARG_STRING_ARRAY, &blacklist,
		  "Skip branches matching PATTERN (repeatable)", "PATTERN" },
		{ "list", 0, 0, G_OPTION_ARG_STRING_ARRAY, &lists,
		  "The tree's mailing list, Cc'd on its reports (repeatable)", "ADDRESS" },
		{ "cc", 0, 0, G_OPTION_ARG_STRING_ARRAY, &cc,
		  "A maintainer's address: Cc'd on the tree's reports, and may steer it by mail "
		  "(repeatable)", "ADDRESS" },
		{ "maintainer", 0, 0, G_OPTION_ARG_STRING_ARRAY, &maintainers,
		  "The same as --cc", "ADDRESS" },
		{ "to", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_STRING_ARRAY, &to,
		  "The same as --cc", "ADDRESS" },
		{ "private", 0, 0, G_OPTION_ARG_NONE, &private,
		  "Mail reports to the --cc addresses only", NULL },
		{ "mail-clean", 0, 0, G_OPTION_ARG_NONE, &mail_clean,
		  "Mail when a head or a posted series builds clean too", NULL },
		{ "regzbot", 0, 0, G_OPTION_ARG_NONE, &regzbot,
		  "A mainline-like tree: verified regressions carry '#regzbot introduced:'", NULL },
		{ "prefix", 0, 0, G_OPTION_ARG_STRING_ARRAY, &prefixes,
		  "Posted series tagged [PATCH PREFIX ...] apply to this tree (repeatable)",
		  "PREFIX" },
		G_OPTION_ENTRY_NULL,
	};
	struct tree_spec spec = { 0 };
	int status;

	if (!parse_options(&argc, &argv, "NAME URL [BRANCH-PATTERN...]",
			   "Subscribe a git tree. Nothing is fetched until the next poll. "
			   "Branch patterns are globs ('*' and '?'); the default is '*'.",
			   entries, &status))
		return status;
	if (argc < 3)
		return usage("tree add", "needs a NAME and a URL");
	if (!cli_open(cli, false, &error))
		return fail(error);
	spec.name = argv[1];
	spec.url = argv[2];
	spec.non_rebasable = non_rebasable;
	spec.branches = (const char *const *)argv + 3;
	spec.blacklist = (const char *const *)blacklist;
	spec.base = base;
	all_cc = strv_join(cc, to, maintainers);
	spec.recipients = all_cc;
	spec.lists = (const char *const *)lists;
	spec.private = private;
	spec.mail_clean = mail_clean;
	spec.regzbot = regzbot;
	spec.prefixes = (const char *const *)prefixes;
	spec.targets = (const char *const *)targets;
	spec.payloads = (const char *const *)payloads;
	row = trees_add(cli->db, cli->config, &spec, &error);
	if (!row)
		return fail(error);
	printf("added tree %s (%s): %s\n", row->name, db_policy_name(row->policy), row->url);
	return 0;
}

static int tree_list(struct cli *cli, int argc, char **argv)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) trees = NULL;
	int status;

	if (!parse_options(&argc, &argv, "", "List the subscribed trees.", NULL, &status))
		return status;
	if (argc != 1)
		return usage("tree list", "takes no arguments");
	if (!cli_open(cli, false, &error))
		return fail(error);
	trees = db_tree_list(cli->db, &error);
	if (!trees)
		return fail(error);
	for (guint i = 0; i < trees->len; i++) {
		const struct tree_row *t = trees->pdata[i];
		g_autofree char *branches = g_strjoinv(",", t->branches);

		printf("%-20s %-13s %s %s%s%s\n", t->name, db_policy_name(t->policy), t->url,
		       branches, t->private ? "  [private]" : "",
		       t->last_error ? "  [last poll failed]" : "");
	}
	return 0;
}

static void print_list(const char *label, char **list)
{
	g_autofree char *text = g_strjoinv(" ", list);

	printf("%-12s %s\n", label, *text ? text : "-");
}

static int tree_show(struct cli *cli, int argc, char **argv)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(tree_row) t = NULL;
	g_autoptr(GPtrArray) branches = NULL;
	g_autofree char *polled = NULL;
	int status;

	if (!parse_options(&argc, &argv, "NAME", "Show a tree and its branches.", NULL, &status))
		return status;
	if (argc != 2)
		return usage("tree show", "needs exactly one NAME");
	if (!cli_open(cli, false, &error))
		return fail(error);
	t = db_tree_get(cli->db, argv[1], &error);
	if (!t)
		return fail(error);
	branches = db_branch_list(cli->db, t->id, &error);
	if (!branches)
		return fail(error);
	polled = status_format_time(t->last_poll);
	printf("%-12s %s\n%-12s %s\n%-12s %s\n", "name", t->name, "url", t->url, "policy",
	       db_policy_name(t->policy));
	print_list("branches", t->branches);
	print_list("blacklist", t->blacklist);
	printf("%-12s %s\n", "base", t->base ? t->base : "-");
	print_list("lists", t->lists);
	print_list("cc", t->recipients);
	printf("%-12s %s\n%-12s %s\n%-12s %s\n", "private", t->private ? "yes" : "no",
	       "mail-clean", t->mail_clean ? "yes" : "no", "regzbot", t->regzbot ? "yes" : "no");
	print_list("prefixes", t->prefixes);
	print_list("targets", t->targets);
	print_list("payloads", t->payloads);
	printf("%-12s %s%s%s\n", "last poll", polled, t->last_error ? ": failed: " : "",
	       t->last_error ? t->last_error : "");
	for (guint i = 0; i < branches->len; i++) {
		const struct branch_row *b = branches->pdata[i];
		g_autofree char *id = status_short_id(b->head);

		printf("  %-30s %s %-8s%s%s\n", b->name, id, db_branch_state_name(b->state),
		       b->reason ? " " : "", b->reason ? b->reason : "");
	}
	return 0;
}

static int tree_rm(struct cli *cli, int argc, char **argv)
{
	g_autoptr(GError) error = NULL;
	int status;

	if (!parse_options(&argc, &argv, "NAME",
			   "Unsubscribe a tree and forget everything recorded for it.", NULL,
			   &status))
		return status;
	if (argc != 2)
		return usage("tree rm", "needs exactly one NAME");
	if (!cli_open(cli, true, &error))
		return fail(error);
	if (!trees_remove(cli->db, cli->repo, argv[1], &error))
		return fail(error);
	printf("removed tree %s\n", argv[1]);
	return 0;
}

static int tree_set(struct cli *cli, int argc, char **argv)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(tree_row) t = NULL;
	g_autofree char *url = NULL;
	g_autofree char *policy = NULL;
	g_autofree char *base = NULL;
	g_auto(GStrv) branches = NULL;
	g_auto(GStrv) blacklist = NULL;
	g_auto(GStrv) unblacklist = NULL;
	g_auto(GStrv) to = NULL;
	g_auto(GStrv) no_to = NULL;
	g_auto(GStrv) cc = NULL;
	g_auto(GStrv) no_cc = NULL;
	g_auto(GStrv) maintainers = NULL;
	g_auto(GStrv) no_maintainers = NULL;
	g_auto(GStrv) lists = NULL;
	g_auto(GStrv) no_lists = NULL;
	g_autofree const char **all_cc = NULL;
	g_autofree const char **all_no_cc = NULL;
	gboolean private = FALSE;
	gboolean public = FALSE;
	gboolean mail_clean = FALSE;
	gboolean no_mail_clean = FALSE;
	gboolean regzbot = FALSE;
	gboolean no_regzbot = FALSE;
	g_auto(GStrv) prefixes = NULL;
	g_auto(GStrv) no_prefixes = NULL;
	g_auto(GStrv) targets = NULL;
	gboolean default_targets = FALSE;
	g_auto(GStrv) payloads = NULL;
	gboolean default_payloads = FALSE;
	GOptionEntry entries[] = {
		{ "target", 0, 0, G_OPTION_ARG_STRING_ARRAY, &targets,
		  "Build for TARGET; replaces the list (repeatable)", "TARGET" },
		{ "default-targets", 0, 0, G_OPTION_ARG_NONE, &default_targets,
		  "Build for the configured default targets", NULL },
		{ "payload", 0, 0, G_OPTION_ARG_STRING_ARRAY, &payloads,
		  "Boot with PAYLOAD; replaces the list (repeatable)", "PAYLOAD" },
		{ "default-payloads", 0, 0, G_OPTION_ARG_NONE, &default_payloads,
		  "Boot with the configured [boot] payloads", NULL },
		{ "url", 0, 0, G_OPTION_ARG_STRING, &url, "Fetch from URL", "URL" },
		{ "policy", 0, 0, G_OPTION_ARG_STRING, &policy,
		  "rebasable (every commit) or non-rebasable (head only)", "POLICY" },
		{ "branch", 0, 0, G_OPTION_ARG_STRING_ARRAY, &branches,
		  "Follow branches matching PATTERN; replaces the list (repeatable)", "PATTERN" },
		{ "blacklist", 0, 0, G_OPTION_ARG_STRING_ARRAY, &blacklist,
		  "Add a blacklist PATTERN (repeatable)", "PATTERN" },
		{ "unblacklist", 0, 0, G_OPTION_ARG_STRING_ARRAY, &unblacklist,
		  "Remove a blacklist PATTERN (repeatable)", "PATTERN" },
		{ "base", 0, 0, G_OPTION_ARG_STRING, &base,
		  "Commits of TREE/BRANCH count as upstream; '' clears", "TREE/BRANCH" },
		{ "list", 0, 0, G_OPTION_ARG_STRING_ARRAY, &lists,
		  "Add a mailing list (repeatable)", "ADDRESS" },
		{ "no-list", 0, 0, G_OPTION_ARG_STRING_ARRAY, &no_lists,
		  "Remove a mailing list (repeatable)", "ADDRESS" },
		{ "cc", 0, 0, G_OPTION_ARG_STRING_ARRAY, &cc,
		  "Add a maintainer's address (repeatable)", "ADDRESS" },
		{ "no-cc", 0, 0, G_OPTION_ARG_STRING_ARRAY, &no_cc,
		  "Remove a maintainer's address (repeatable)", "ADDRESS" },
		{ "maintainer", 0, 0, G_OPTION_ARG_STRING_ARRAY, &maintainers,
		  "The same as --cc", "ADDRESS" },
		{ "no-maintainer", 0, 0, G_OPTION_ARG_STRING_ARRAY, &no_maintainers,
		  "The same as --no-cc", "ADDRESS" },
		{ "to", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_STRING_ARRAY, &to,
		  "The same as --cc", "ADDRESS" },
		{ "no-to", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_STRING_ARRAY, &no_to,
		  "The same as --no-cc", "ADDRESS" },
		{ "private", 0, 0, G_OPTION_ARG_NONE, &private,
		  "Mail reports to the --cc addresses only", NULL },
		{ "public", 0, 0, G_OPTION_ARG_NONE, &public,
		  "Mail reports to the culprit's people and the lists again", NULL },
		{ "mail-clean", 0, 0, G_OPTION_ARG_NONE, &mail_clean,
		  "Mail when a head builds clean too", NULL },
		{ "no-mail-clean", 0, 0, G_OPTION_ARG_NONE, &no_mail_clean,
		  "Mail about failures only", NULL },
		{ "regzbot", 0, 0, G_OPTION_ARG_NONE, &regzbot,
		  "Verified regressions carry '#regzbot introduced:'", NULL },
		{ "no-regzbot", 0, 0, G_OPTION_ARG_NONE, &no_regzbot,
		  "Leave regzbot out of the reports", NULL },
		{ "prefix", 0, 0, G_OPTION_ARG_STRING_ARRAY, &prefixes,
		  "Add a subject prefix choosing this tree for posted series (repeatable)",
		  "PREFIX" },
		{ "no-prefix", 0, 0, G_OPTION_ARG_STRING_ARRAY, &no_prefixes,
		  "Remove a subject prefix (repeatable)", "PREFIX" },
		G_OPTION_ENTRY_NULL,
	};
	struct tree_edit edit = { 0 };
	int status;

	if (!parse_options(&argc, &argv, "NAME", "Change a tree's settings.", entries, &status))
		return status;
	if (argc != 2)
		return usage("tree set", "needs exactly one NAME");
	if (private && public)
		return usage("tree set", "--private and --public contradict each other");
	if (mail_clean && no_mail_clean)
		return usage("tree set", "--mail-clean and --no-mail-clean contradict each other");
	if (regzbot && no_regzbot)
		return usage("tree set", "--regzbot and --no-regzbot contradict each other");
	if (!cli_open(cli, false, &error))
		return fail(error);
	edit.url = url;
	edit.policy = policy;
	edit.branches = (const char *const *)branches;
	edit.blacklist_add = (const char *const *)blacklist;
	edit.blacklist_drop = (const char *const *)unblacklist;
	edit.base = base;
	all_cc = strv_join(cc, to, maintainers);
	all_no_cc = strv_join(no_cc, no_to, no_maintainers);
	edit.recipients_add = all_cc;
	edit.recipients_drop = all_no_cc;
	edit.lists_add = (const char *const *)lists;
	edit.lists_drop = (const char *const *)no_lists;
	edit.private = private ? TREE_ON : public ? TREE_OFF : TREE_KEEP;
	edit.mail_clean = mail_clean ? TREE_ON : no_mail_clean ? TREE_OFF : TREE_KEEP;
	edit.regzbot = regzbot ? TREE_ON : no_regzbot ? TREE_OFF : TREE_KEEP;
	edit.prefixes_add = (const char *const *)prefixes;
	edit.prefixes_drop = (const char *const *)no_prefixes;
	edit.targets = (const char *const *)targets;
	edit.default_targets = default_targets;
	edit.payloads = (const char *const *)payloads;
	edit.default_payloads = default_payloads;
	t = trees_edit(cli->db, cli->config, argv[1], &edit, &error);
	if (!t)
		return fail(error);
	printf("updated tree %s\n", t->name);
	return 0;
}

/* A command's sub-commands ("tree add", "report show"): a table each. */
struct subcommand {
	const char *name;
	int (*run)(struct cli *cli, int argc, char **argv);
	const char *summary;
};

static void subcommand_usage(FILE *out, const char *group, const struct subcommand *table,
			     size_t n)
{
	fprintf(out, "Usage: zeroday %s COMMAND [OPTION...]\n\nCommands:\n", group);
	for (size_t i = 0; i < n; i++)
		fprintf(out, "  %-6s %s\n", table[i].name, table[i].summary);
	fprintf(out, "\nRun 'zeroday %s COMMAND --help' for a command's options.\n", group);
}

/*
 * Runs the sub-command argv[1] of @group from @table; it sees its name as
 * "GROUP NAME" in argv[0], for its usage messages.
 */
static int run_subcommand(struct cli *cli, int argc, char **argv, const char *group,
			  const struct subcommand *table, size_t n)
{
	if (argc < 2) {
		subcommand_usage(stderr, group, table, n);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		subcommand_usage(stdout, group, table, n);
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		if (strcmp(argv[1], table[i].name) == 0) {
			g_autofree char *name = g_strdup_printf("%s %s", group, argv[1]);
			char *saved = argv[1];
			int rc;

			argv[1] = name;
			rc = table[i].run(cli, argc - 1, argv + 1);
			argv[1] = saved;
			return rc;
		}
	}
	fprintf(stderr, "zeroday %s: unknown command '%s'\n", group, argv[1]);
	subcommand_usage(stderr, group, table, n);
	return EXIT_USAGE;
}

static const struct subcommand tree_commands[] = {
	{ "add", tree_add, "subscribe a tree" },
	{ "list", tree_list, "list the subscribed trees" },
	{ "show", tree_show, "show a tree and its branches" },
	{ "rm", tree_rm, "unsubscribe a tree" },
	{ "set", tree_set, "change a tree's settings" },
};

int cli_tree(struct cli *cli, int argc, char **argv)
{
	return run_subcommand(cli, argc, argv, "tree", tree_commands, G_N_ELEMENTS(tree_commands));
}

/* poll */

static void print_change(const struct watch_change *c)
{
	const struct head_event *e = c->event;
	g_autofree char *from = status_short_id(e->old_head);
	g_autofree char *to = status_short_id(e->new_head);

	if (e->change == HEAD_DELETED)
		printf("  %s: deleted (was %s): %s\n", e->branch, from, e->reason);
	else if (e->change == HEAD_NEW)
		printf("  %s: new at %s: %s", e->branch, to, db_head_action_name(e->action));
	else
		printf("  %s: %s %s..%s: %s", e->branch, db_head_change_name(e->change), from,
		       to, db_head_action_name(e->action));
	if (e->change == HEAD_DELETED)
		return;
	if (e->selected)
		printf(" %u commit%s", e->selected, e->selected == 1 ? "" : "s");
	if (e->reason)
		printf(" (%s)", e->reason);
	printf("\n");
	for (guint i = 0; i < c->commits->len; i++) {
		const struct repo_commit *commit = c->commits->pdata[i];

		printf("    test %.12s %s\n", commit->oid, commit->summary);
	}
}

int cli_poll(struct cli *cli, int argc, char **argv)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) results = NULL;
	int status;
	int rc = 0;

	if (!parse_options(&argc, &argv, "[TREE...]",
			   "Fetch the trees (all, or those named), record new and moved "
			   "branch heads, and select the commits to test.", NULL, &status))
		return status;
	if (!cli_open(cli, true, &error))
		return fail(error);
	results = watch_poll(cli->db, cli->repo, cli->config, (const char *const *)argv + 1,
			     &error);
	if (!results)
		return fail(error);
	for (guint i = 0; i < results->len; i++) {
		const struct watch_tree *t = results->pdata[i];

		if (t->error) {
			printf("%s: poll failed: %s\n", t->tree, t->error);
			rc = 1;
			continue;
		}
		if (t->changes->len == 0) {
			printf("%s: unchanged (%u branch%s)\n", t->tree, t->branches,
			       t->branches == 1 ? "" : "es");
			continue;
		}
		printf("%s:\n", t->tree);
		for (guint j = 0; j < t->changes->len; j++)
			print_change(t->changes->pdata[j]);
	}
	return rc;
}

/* status */

int cli_status(struct cli *cli, int argc, char **argv)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GString) out = NULL;
	struct status snapshot;
	gboolean json = FALSE;
	GOptionEntry entries[] = {
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json, "Print JSON for scripts", NULL },
		G_OPTION_ENTRY_NULL,
	};
	gint64 now = g_get_real_time() / G_USEC_PER_SEC;
	int status;

	if (!parse_options(&argc, &argv, "",
			   "Show the trees, skipped branches, the test queue, jobs, findings "
			   "and recent branch changes.", entries, &status))
		return status;
	if (argc != 1)
		return usage("status", "takes no arguments");
	if (!cli_open(cli, false, &error))
		return fail(error);
	if (!status_load(&snapshot, cli->db, now, &error))
		return fail(error);
	if (strcmp(cli->config->build_executor, "slurm") == 0) {
		g_autoptr(GError) local = NULL;

		snapshot.cluster = slurm_queue(&local);
		if (!snapshot.cluster) {
			snapshot.cluster = g_ptr_array_new();
			snapshot.cluster_error = g_strdup(local->message);
		}
	}
	out = g_string_new(NULL);
	if (json)
		status_format_json(out, &snapshot);
	else
		status_format_text(out, &snapshot);
	status_release(&snapshot);
	fputs(out->str, stdout);
	return 0;
}

/* build */

static void print_diag(const struct diag *d)
{
	if (d->line)
		printf("    %s %s:%u: %s", diag_kind_name(d->kind), d->file, d->line, d->message);
	else
		printf("    %s %s%s%s", diag_kind_name(d->kind), d->file, *d->file ? ": " : "",
		       d->message);
	if (d->function)
		printf("  (in %s)", d->function);
	if (strcmp(d->checker, "compiler") != 0)
		printf("  [%s]", d->checker);
	printf("\n");
}

int cli_build(struct cli *cli, int argc, char **argv)
{
	g_autoptr(GError) error = NULL;
	g_auto(GStrv) targets = NULL;
	gboolean rebuild = FALSE;
	GOptionEntry entries[] = {
		{ "target", 't', 0, G_OPTION_ARG_STRING_ARRAY, &targets,
		  "Build for TARGET (repeatable); default: the tree's targets", "TARGET" },
		{ "rebuild", 0, 0, G_OPTION_ARG_NONE, &rebuild,
		  "Build again even when a stored build exists", NULL },
		G_OPTION_ENTRY_NULL,
	};
	struct builder_request req = { 0 };
	g_autoptr(GPtrArray) results = NULL;
	g_autofree char *objects = NULL;
	g_autofree char *source = NULL;
	g_autofree char *rev = NULL;
	zd_autoptr(tree_row) tree = NULL;
	int status;

	if (!parse_options(&argc, &argv, "TREE|REPOSITORY COMMIT",
			   "Build COMMIT and its parent for each target, and show what the "
			   "commit introduced: new warnings, new errors. Stored builds are "
			   "reused. TREE is a subscribed tree (COMMIT may be one of its "
			   "branches); REPOSITORY is a local git repository's path.",
			   entries, &status))
		return status;
	if (argc != 3)
		return usage("build", "needs a TREE or REPOSITORY and a COMMIT");
	if (!cli_open(cli, false, &error))
		return fail(error);
	tree = db_tree_get(cli->db, argv[1], NULL);
	if (tree) {
		g_autoptr(GPtrArray) branches = db_branch_list(cli->db, tree->id, &error);

		if (!branches)
			return fail(error);
		source = g_strdup(tree->name);
		objects = config_git_path(cli->config);
		rev = g_strdup(argv[2]);
		for (guint i = 0; i < branches->len; i++) {
			const struct branch_row *b = branches->pdata[i];

			if (strcmp(b->name, argv[2]) == 0) {
				g_free(rev);
				rev = g_strdup(b->head);
			}
		}
	} else if (g_file_test(argv[1], G_FILE_TEST_IS_DIR)) {
		g_autofree char *abs = g_canonicalize_filename(argv[1], NULL);

		source = g_strconcat("path:", abs, NULL);
		objects = g_steal_pointer(&abs);
		rev = g_strdup(argv[2]);
	} else {
		fprintf(stderr, "zeroday build: '%s' is neither a tree nor a repository\n", argv[1]);
		return 1;
	}
	req.source = source;
	req.objects_from = objects;
	req.rev = rev;
	req.rebuild = rebuild;
	req.progress = isatty(STDERR_FILENO);
	if (targets)
		req.targets = (const char *const *)targets;
	else if (tree && tree->targets && tree->targets[0])
		req.targets = (const char *const *)tree->targets;
	else
		req.targets = (const char *const *)cli->config->build_targets;
	results = builder_run(cli->db, cli->config, &req, &error);
	if (!results)
		return fail(error);
	for (guint i = 0; i < results->len; i++) {
		const struct builder_result *r = results->pdata[i];

		printf("%s %.12s: %s", r->target, r->commit, build_verdict_name(r->verdict));
		if (r->build->reason && r->verdict != VERDICT_PASS &&
		    r->verdict != VERDICT_NEW_DIAGNOSTICS)
			printf(" (%s)", r->build->reason);
		printf("  [%.1f s", r->build->seconds);
		if (r->parent_build)
			printf("; parent %.12s: %s, %.1f s", r->parent,
			       build_status_name(r->parent_build->status),
			       r->parent_build->seconds);
		printf("]\n");
		for (guint j = 0; j < r->fresh->len; j++)
			print_diag(r->fresh->pdata[j]);
		printf("    log: %s\n    config: %s\n", r->build->log_path, r->build->config_path);
	}
	return 0;
}

/* boot */

/* Each test a boot ran, as its console printed it in KTAP, then their count. */
static void print_tests(const struct console_result *r)
{
	for (guint i = 0; r->tests && i < r->tests->len; i++) {
		const struct ktap_test *t = r->tests->pdata[i];

		printf("    %s: %s%s%s\n", t->name, ktap_result_name(t->result),
		       t->directive ? " # " : "", t->directive ? t->directive : "");
	}
	if (r->tests && r->tests->len)
		printf("    tests: %u passed, %u failed, %u skipped\n", r->passed, r->failed,
		       r->skipped);
}

int cli_boot(struct cli *cli, int argc, char **argv)
{
	g_autoptr(GError) error = NULL;
	g_auto(GStrv) payloads = NULL;
	g_autofree char *cmdline = NULL;
	g_autofree char *image = NULL;
	g_autofree char *arch = NULL;
	g_autofree char *build_target = NULL;
	g_autoptr(GPtrArray) runs = NULL;
	g_autoptr(GPtrArray) tally = NULL;
	gint repeat = 0;
	GOptionEntry entries[] = {
		{ "arch", 0, 0, G_OPTION_ARG_STRING, &arch,
		  "The kernel's ARCH (x86_64, i386, arm64, riscv; default: the build's target, "
		  "else read from the image)", "ARCH" },
		{ "repeat", 'n', 0, G_OPTION_ARG_INT, &repeat,
		  "Boot N times, with seeds 1..N (default: [boot] repeat)", "N" },
		{ "payload", 'p', 0, G_OPTION_ARG_STRING_ARRAY, &payloads,
		  "Run PAYLOAD (a shipped name or an absolute path; repeatable)", "PAYLOAD" },
		{ "cmdline", 0, 0, G_OPTION_ARG_STRING, &cmdline,
		  "Append TEXT to the kernel command line", "TEXT" },
		G_OPTION_ENTRY_NULL,
	};
	struct booter_request req = { 0 };
	char *end = NULL;
	gint64 build_id;
	int status;

	if (!parse_options(&argc, &argv, "BUILD-ID|IMAGE",
			   "Boot a kernel under QEMU through libvirt, N times, and classify "
			   "each console: boot-ok, panic, oops, BUG, KASAN, UBSAN, WARNING, "
			   "hung-task, timeout, no-output, payload-fail or infra-error.",
			   entries, &status))
		return status;
	if (argc != 2)
		return usage("boot", "needs a BUILD-ID or an IMAGE");
	if (repeat < 0 || repeat > 100)
		return usage("boot", "--repeat takes 1 to 100");
	if (cmdline && (strchr(cmdline, '<') || strchr(cmdline, '\n')))
		return usage("boot", "--cmdline may not hold '<' or a newline");
	if (!cli_open(cli, false, &error))
		return fail(error);
	build_id = g_ascii_strtoll(argv[1], &end, 10);
	if (*argv[1] && end && *end == '\0' && build_id > 0) {
		image = db_build_image(cli->db, build_id, &build_target, &error);
		if (!image)
			return fail(error);
		req.build_id = build_id;
		if (!arch)
			arch = g_strndup(build_target, strcspn(build_target, ":"));
	} else {
		image = g_canonicalize_filename(argv[1], NULL);
	}
	req.image = image;
	req.arch = arch;
	req.repeat = repeat ? (unsigned)repeat : cli->config->boot_repeat;
	req.payloads = (const char *const *)payloads;
	req.cmdline = cmdline;
	req.progress = isatty(STDERR_FILENO);
	runs = booter_boot(cli->db, cli->config, &req, &tally, &error);
	if (!runs)
		return fail(error);
	for (guint i = 0; i < runs->len; i++) {
		const struct booter_run *r = runs->pdata[i];

		printf("seed %u: %s: %s [%s] (%.1f s on %s%s)\n    console: %s\n", r->seed,
		       diag_console_kind_name(r->result.kind), r->result.title,
		       r->result.fingerprint, r->seconds, r->host,
		       r->attempts > 1 ? ", after infrastructure retries" : "", r->console_path);
		print_tests(&r->result);
	}
	{
		guint conclusive = 0;

		for (guint i = 0; i < runs->len; i++)
			conclusive += ((struct booter_run *)runs->pdata[i])->result.kind != CONSOLE_INFRA;
		if (conclusive == 0) {
			printf("no conclusive boot: all %u failed for infrastructure reasons\n",
			       runs->len);
			return 1;
		}
		if (tally->len == 0)
			printf("all %u conclusive boots ok\n", conclusive);
	}
	for (guint i = 0; i < tally->len; i++) {
		const struct console_tally *t = tally->pdata[i];

		printf("%s: %u/%u%s [%s]\n", t->title, t->failures, t->runs,
		       t->intermittent ? " (intermittent)" : "", t->fingerprint);
	}
	return 0;
}

/* run */

static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t reload_requested;

static void request_stop(int sig)
{
	stop_requested = 1;
}

static void request_reload(int sig)
{
	reload_requested = 1;
}

/* The templates the daemon fills: a mistake in one stops it here, not a report later. */
static bool check_templates(const struct config *config, GError **error)
{
	return render_check_templates(config->mail_templates, error);
}

/*
 * On SIGHUP: the configuration read again as at the start, from the file
 * the daemon started with (with --state-dir applied again), and its
 * templates checked likewise.
 */
static struct config *reload_config(const struct config *old, void *data, GError **error)
{
	const struct cli *cli = data;
	zd_autoptr(config) fresh = config_load(old->path ? old->path : cli->config_path,
					       cli->state_dir, error);

	if (!fresh || !check_templates(fresh, error))
		return NULL;
	return g_steal_pointer(&fresh);
}

int cli_run(struct cli *cli, int argc, char **argv)
{
	g_autoptr(GError) error = NULL;
	gboolean once = FALSE;
	gint interval = 600, lease = 120, workers = 0, retry_delay = 60;
	GOptionEntry entries[] = {
		{ "once", 0, 0, G_OPTION_ARG_NONE, &once,
		  "Poll once, run the queue dry, and exit (a job waiting to retry stays queued)", NULL },
		{ "poll-interval", 0, 0, G_OPTION_ARG_INT, &interval,
		  "Seconds between polls (default 600)", "S" },
		{ "lease", 0, 0, G_OPTION_ARG_INT, &lease,
		  "Seconds a job's lease lasts between renewals (default 120)", "S" },
		{ "workers", 'j', 0, G_OPTION_ARG_INT, &workers,
		  "Run N jobs at once (default: [zeroday] workers)", "N" },
		{ "retry-delay", 0, 0, G_OPTION_ARG_INT, &retry_delay,
		  "Seconds before a job that failed for infrastructure is tried again, doubled "
		  "after each failure up to an hour (default 60)", "S" },
		G_OPTION_ENTRY_NULL,
	};
	struct sigaction sa = { .sa_handler = request_stop };
	struct sigaction hup = { .sa_handler = request_reload };
	struct sched_options opts = { 0 };
	int status;

	if (!parse_options(&argc, &argv, "",
			   "Run zeroday: poll the trees on a schedule, build every selected "
			   "commit for its tree's targets, and record what each commit "
			   "introduced as findings. SIGTERM or SIGINT stops it after the job "
			   "in progress; after a crash, it resumes where it was. SIGHUP reads "
			   "the configuration again.",
			   entries, &status))
		return status;
	if (argc != 1)
		return usage("run", "takes no arguments");
	if (interval < 1 || lease < 5)
		return usage("run", "--poll-interval must be at least 1 and --lease at least 5");
	if (workers < 0 || workers > 256)
		return usage("run", "--workers must be between 1 and 256");
	if (retry_delay < 1 || retry_delay > 3600)
		return usage("run", "--retry-delay must be between 1 and 3600");
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	/*
	 * The daemon's SIGHUP reloads, taken from the start so that an early one
	 * does not kill it; --once keeps the default (a hangup ends it).
	 */
	sigemptyset(&hup.sa_mask);
	if (!once)
		sigaction(SIGHUP, &hup, NULL);
	if (!load_config(cli, &error) || !check_templates(cli->config, &error))
		return fail(error);
	/* A server that hangs up on a write is an error to handle, not death. */
	signal(SIGPIPE, SIG_IGN);
	/* The daemon outlasts a store that fails for a while (a full disk); --once does not. */
	for (unsigned pause = 0; !cli_open(cli, true, &error);) {
		if (once || !g_error_matches(error, BOT_ERROR, BOT_ERROR_TEMPORARY))
			return fail(error);
		if (stop_requested)
			return 0;
		pause = pause ? MIN(2 * pause, 60) : 1;
		g_warning("%s; trying again in %u s", error->message, pause);
		g_clear_error(&error);
		for (unsigned i = 0; i < 5 * pause && !stop_requested; i++)
			g_usleep(G_USEC_PER_SEC / 5);
	}
	if (stop_requested)
		return 0;
	opts.once = once;
	opts.poll_interval = (unsigned)interval;
	opts.lease = (unsigned)lease;
	opts.workers = (unsigned)workers;
	opts.retry_delay = (unsigned)retry_delay;
	opts.reload = once ? NULL : &reload_requested;
	opts.reload_config = reload_config;
	opts.reload_data = cli;
	if (!sched_run(cli->db, cli->repo, cli->config, &opts, &stop_requested, &error))
		return fail(error);
	return 0;
}

/* report */

static int report_show(struct cli *cli, int argc, char **argv)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(finding_row) f = NULL;
	g_autofree char *message_id = NULL;
	g_autofree char *text = NULL;
	struct bot ctx;
	struct reply reply;
	gint64 id;
	char *end;
	int status;

	if (!parse_options(&argc, &argv, "FINDING-ID",
			   "Print the mail zeroday would send about a finding (zeroday status "
			   "--json lists their ids).", NULL, &status))
		return status;
	if (argc != 2)
		return usage(argv[0], "expects one finding id");
	errno = 0;
	id = g_ascii_strtoll(argv[1], &end, 10);
	if (errno || *end || end == argv[1] || id <= 0)
		return usage(argv[0], "a finding id is a positive number");
	if (!cli_open(cli, true, &error))
		return fail(error);
	f = db_finding_get(cli->db, id, &error);
	if (!f)
		return fail(error);
	ctx = (struct bot){ .config = cli->config, .db = cli->db, .repo = cli->repo };
	message_id = outbox_message_id(cli->config, "preview");
	if (!report_finding(&reply, &ctx, f, message_id, g_get_real_time() / G_USEC_PER_SEC,
			    &error)) {
		reply_release(&reply);
		return fail(error);
	}
	text = compose_message(&reply, &error);
	reply_release(&reply);
	if (!text)
		return fail(error);
	fputs(text, stdout);
	return 0;
}

static int report_find(struct cli *cli, int argc, char **argv)
{
	g_autoptr(GError) error = NULL;
	gint64 id = 0;
	int status;

	if (!parse_options(&argc, &argv, "MESSAGE-ID...",
			   "Print the finding a mail is about: the first MESSAGE-ID (a reply's "
			   "In-Reply-To, then its References, newest first) of a mail zeroday "
			   "sent about a finding.", NULL, &status))
		return status;
	if (argc < 2)
		return usage("report find", "needs a MESSAGE-ID");
	if (!cli_open(cli, false, &error))
		return fail(error);
	if (!db_outbox_finding_of(cli->db, (const char *const *)argv + 1, &id, &error))
		return fail(error);
	if (!id) {
		fprintf(stderr, "zeroday report find: no finding has a mail with that Message-ID\n");
		return 1;
	}
	printf("%" G_GINT64_FORMAT "\n", id);
	return 0;
}

static const struct subcommand report_commands[] = {
	{ "show", report_show, "print the mail about a finding" },
	{ "find", report_find, "the finding a mail (by its Message-ID) is about" },
};

int cli_report(struct cli *cli, int argc, char **argv)
{
	return run_subcommand(cli, argc, argv, "report", report_commands,
			      G_N_ELEMENTS(report_commands));
}

/* outbox */

/* The recipients of @r, with what became of each: "addr (sent)" (caller frees). */
static char *rcpt_summary(struct cli *cli, const struct outbox_row *r)
{
	g_autoptr(GPtrArray) rcpts = db_rcpt_list(cli->db, r->id, NULL);
	GString *s = g_string_new(NULL);

	for (guint i = 0; rcpts && i < rcpts->len; i++) {
		const struct rcpt_row *p = rcpts->pdata[i];

		g_string_append_printf(s, "%s%s %s%s%s%s", s->len ? ", " : "", p->address,
				       db_rcpt_state_name(p->state), p->reply ? " (" : "",
				       p->reply ? p->reply : "", p->reply ? ")" : "");
	}
	return g_string_free(s, FALSE);
}

static void outbox_text(struct cli *cli, GString *out, const struct outbox_row *r)
{
	g_autofree char *to = g_strjoinv(", ", r->recipients);
	g_autofree char *outcome = rcpt_summary(cli, r);

	g_string_append_printf(out, "%" G_GINT64_FORMAT " %s %s", r->id,
			       db_outbox_state_name(r->state), db_outbox_kind_name(r->kind));
	if (r->finding_id)
		g_string_append_printf(out, " finding %" G_GINT64_FORMAT, r->finding_id);
	g_string_append_printf(out, " <%s>", r->message_id);
	if (r->in_reply_to)
		g_string_append_printf(out, " in reply to <%s>", r->in_reply_to);
	g_string_append_printf(out, "\n  %s\n  %s\n", r->subject, to);
	if (*outcome)
		g_string_append_printf(out, "  each: %s\n", outcome);
	if (r->path)
		g_string_append_printf(out, "  in %s\n", r->path);
	if (r->state == OUTBOX_QUEUED && r->attempts)
		g_string_append_printf(out, "  tried %u times, next at %" G_GINT64_FORMAT "\n",
				       r->attempts, r->next_try);
	if (r->last_error)
		g_string_append_printf(out, "  %s: %s\n",
				       r->state == OUTBOX_ERROR ? "not sent" : "last try", r->last_error);
}

static void rcpt_json(JsonBuilder *b, const void *row, const void *data)
{
	const struct rcpt_row *p = row;

	(void)data;
	status_json_members(b, "ttti", "address", p->address, "state", db_rcpt_state_name(p->state),
			    "reply", p->reply, "digest", p->digest_id, NULL);
}

static void outbox_json(struct cli *cli, JsonBuilder *b, const struct outbox_row *r)
{
	g_autoptr(GPtrArray) rcpts = db_rcpt_list(cli->db, r->id, NULL);

	json_builder_begin_object(b);
	status_json_members(b, "iittttvvtiiiitt", "id", r->id, "finding", r->finding_id,
			    "kind", db_outbox_kind_name(r->kind),
			    "state", db_outbox_state_name(r->state), "message_id", r->message_id,
			    "in_reply_to", r->in_reply_to, "references", r->references,
			    "recipients", r->recipients, "subject", r->subject, "created", r->created,
			    "sent", r->sent, "attempts", (gint64)r->attempts, "next_try", r->next_try,
			    "last_error", r->last_error, "path", r->path, NULL);
	status_json_array(b, "each", rcpts, rcpt_json, NULL);
	json_builder_end_object(b);
}

static int outbox_list(struct cli *cli, int argc, char **argv)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) rows = NULL;
	g_autoptr(GString) out = g_string_new(NULL);
	gboolean json = FALSE;
	GOptionEntry entries[] = {
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json, "Print JSON for scripts", NULL },
		G_OPTION_ENTRY_NULL,
	};
	int status;

	if (!parse_options(&argc, &argv, "",
			   "List the mails zeroday queued, sent and held: Message-ID, In-Reply-To, "
			   "recipients and what became of each, subject, state and where the raw "
			   "text went.", entries, &status))
		return status;
	if (argc != 1)
		return usage("outbox", "takes no arguments");
	if (!cli_open(cli, false, &error))
		return fail(error);
	rows = db_outbox_list(cli->db, -1, G_MAXINT, &error);
	if (!rows)
		return fail(error);
	if (json) {
		g_autoptr(JsonBuilder) b = json_builder_new();

		json_builder_begin_array(b);
		for (guint i = 0; i < rows->len; i++)
			outbox_json(cli, b, rows->pdata[i]);
		json_builder_end_array(b);
		status_json_finish(out, b);
	} else {
		for (guint i = 0; i < rows->len; i++)
			outbox_text(cli, out, rows->pdata[i]);
	}
	fputs(out->str, stdout);
	return 0;
}

static int outbox_show(struct cli *cli, int argc, char **argv)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(outbox_row) row = NULL;
	guint64 id;
	int status;

	if (!parse_options(&argc, &argv, "ID", "Print the raw text of outbox mail ID.", NULL,
			   &status))
		return status;
	if (argc != 2 || !g_ascii_string_to_unsigned(argv[1], 10, 1, G_MAXINT64, &id, NULL))
		return usage("outbox show", "needs one mail ID (see zeroday outbox)");
	if (!cli_open(cli, false, &error))
		return fail(error);
	row = db_outbox_get(cli->db, (gint64)id, &error);
	if (!row)
		return fail(error);
	if (!row->raw) {
		fprintf(stderr, "zeroday: mail %" G_GUINT64_FORMAT " was never rendered: %s\n", id,
			row->last_error ? row->last_error : "no text");
		return 1;
	}
	fputs(row->raw, stdout);
	return 0;
}

static int outbox_test(struct cli *cli, int argc, char **argv)
{
	g_autoptr(GError) error = NULL;
	struct bot rc = { 0 };
	gint64 id;
	int status;

	if (!parse_options(&argc, &argv, "ADDRESS...",
			   "Queue a test mail to ADDRESS, to check how mail goes out; "
			   "zeroday run sends it.", NULL, &status))
		return status;
	if (argc < 2)
		return usage("outbox test", "needs an ADDRESS");
	if (!cli_open(cli, false, &error))
		return fail(error);
	rc.config = cli->config;
	rc.db = cli->db;
	id = outbox_queue_test(&rc, (const char *const *)argv + 1,
			       g_get_real_time() / G_USEC_PER_SEC, &error);
	if (!id)
		return fail(error);
	printf("queued test mail %" G_GINT64_FORMAT "\n", id);
	return 0;
}

static int outbox_send(struct cli *cli, int argc, char **argv)
{
	g_autoptr(GError) error = NULL;
	struct bot rc = { 0 };
	unsigned sent = 0;
	int status;

	if (!parse_options(&argc, &argv, "",
			   "Send the mails that are due now, and exit (zeroday run does it too).",
			   NULL, &status))
		return status;
	if (argc != 1)
		return usage("outbox send", "takes no arguments");
	if (!load_config(cli, &error) ||
	    !render_check_templates(cli->config->mail_templates, &error) ||
	    !cli_open(cli, false, &error))
		return fail(error);
	signal(SIGPIPE, SIG_IGN);
	rc.config = cli->config;
	rc.db = cli->db;
	if (!outbox_send_due(&rc, &sent, &error))
		return fail(error);
	printf("sent %u\n", sent);
	return 0;
}

static void series_text(GString *out, const void *row)
{
	const struct series_row *s = row;
	g_string_append_printf(out, "series %" G_GINT64_FORMAT ": \"%s\" v%u, %u patch%s, from %s: "
			       "%s\n", s->id, s->title ? s->title : "?", s->version, s->total,
			       s->total == 1 ? "" : "es", s->sender, db_series_state_name(s->state));
	if (s->note)
		g_string_append_printf(out, "  note: %s\n", s->note);
	if (s->base)
		g_string_append_printf(out, "  base: %s (%s)\n", s->base, s->base_how);
	for (guint i = 0; i < s->parts->len; i++) {
		const struct series_part *p = s->parts->pdata[i];

		g_string_append_printf(out, "  %u/%u <%s>%s%.12s\n", p->n, s->total, p->message_id,
				       p->commit ? " applied as " : "", p->commit ? p->commit : "");
	}
	for (guint i = 0; i < s->bases->len; i++) {
		const struct series_base *b = s->bases->pdata[i];

		g_string_append_printf(out, "  tried %s%s%s %.12s (%s): %s\n", b->tree ? b->tree : "-",
				       b->branch ? "/" : "", b->branch ? b->branch : "",
				       b->commit ? b->commit : "?", b->how,
				       b->applied ? "applies" : b->reason);
	}
	for (guint i = 0; i < s->results->len; i++) {
		const struct series_result *r = s->results->pdata[i];

		g_string_append_printf(out, "  result %u/%u %s: %s%s%s%s\n", r->n, s->total,
				       r->target, r->result, r->boot ? "; " : "",
				       r->boot_failed ? "new boot failure: " : "",
				       r->boot ? r->boot : "");
		if (r->detail) {
			g_auto(GStrv) lines = g_strsplit(r->detail, "\n", -1);

			for (char **l = lines; *l; l++)
				g_string_append_printf(out, "    %s\n", *l);
		}
	}
}

static void part_json(JsonBuilder *b, const void *row, const void *data)
{
	const struct series_part *p = row;
	const struct series_row *s = data;

	status_json_members(b, "iittt", "n", (gint64)p->n, "total", (gint64)s->total,
			    "message_id", p->message_id, "subject", p->subject, "commit", p->commit, NULL);
}

static void base_json(JsonBuilder *b, const void *row, const void *data)
{
	const struct series_base *base = row;

	(void)data;
	status_json_members(b, "ttttbt", "tree", base->tree, "branch", base->branch,
			    "commit", base->commit, "how", base->how, "applied", (int)base->applied,
			    "reason", base->reason, NULL);
}

static void result_json(JsonBuilder *b, const void *row, const void *data)
{
	const struct series_result *r = row;

	(void)data;
	status_json_members(b, "itttttb", "n", (gint64)r->n, "target", r->target,
			    "commit", r->commit, "result", r->result, "new", r->detail,
			    "boot", r->boot, "boot_failed", (int)r->boot_failed, NULL);
}

static void series_json(JsonBuilder *b, const void *row)
{
	const struct series_row *s = row;

	json_builder_begin_object(b);
	status_json_members(b, "itiittitttt", "id", s->id, "subject", s->title,
			    "version", (gint64)s->version, "total", (gint64)s->total,
			    "sender", s->sender, "state", db_series_state_name(s->state),
			    "superseded_by", s->superseded_by, "note", s->note, "tree", s->tree,
			    "base", s->base, "base_how", s->base_how, NULL);
	status_json_array(b, "parts", s->parts, part_json, s);
	status_json_array(b, "bases_tried", s->bases, base_json, NULL);
	status_json_array(b, "results", s->results, result_json, NULL);
	json_builder_end_object(b);
}

/* How one row of a list is printed: as text, or as one JSON object. */
typedef void (*row_format)(GString *out, const void *row);
typedef void (*row_json)(JsonBuilder *b, const void *row);

/* Prints @rows with @text, or with @json_fmt as one JSON array. */
static void print_rows(GPtrArray *rows, bool json, row_format text, row_json json_fmt)
{
	g_autoptr(GString) out = g_string_new(NULL);

	if (json) {
		g_autoptr(JsonBuilder) b = json_builder_new();

		json_builder_begin_array(b);
		for (guint i = 0; i < rows->len; i++)
			json_fmt(b, rows->pdata[i]);
		json_builder_end_array(b);
		status_json_finish(out, b);
	} else {
		for (guint i = 0; i < rows->len; i++)
			text(out, rows->pdata[i]);
	}
	fputs(out->str, stdout);
}

/*
 * A listing command: no arguments, --json; prints what @load returns
 * with @text or @json_fmt.
 */
static int list_command(struct cli *cli, int argc, char **argv, const char *name,
			const char *summary, GPtrArray *(*load)(struct db *db, GError **error),
			row_format text, row_json json_fmt)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) rows = NULL;
	gboolean json = FALSE;
	GOptionEntry entries[] = {
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json, "Print JSON for scripts", NULL },
		G_OPTION_ENTRY_NULL,
	};
	int status;

	if (!parse_options(&argc, &argv, "", summary, entries, &status))
		return status;
	if (argc != 1)
		return usage(name, "takes no arguments");
	if (!cli_open(cli, false, &error))
		return fail(error);
	rows = load(cli->db, &error);
	if (!rows)
		return fail(error);
	print_rows(rows, json, text, json_fmt);
	return 0;
}

static GPtrArray *all_series(struct db *db, GError **error)
{
	return db_series_list(db, -1, G_MAXINT, error);
}

int cli_series(struct cli *cli, int argc, char **argv)
{
	return list_command(cli, argc, argv, "series",
			    "List the patch series read from the lists, newest first: subject, "
			    "version, sender, parts, state, the base and how it was chosen, the "
			    "bases tried and why each was rejected, and each patch's result.",
			    all_series, series_text, series_json);
}

static void command_text(GString *out, const void *row)
{
	const struct command_row *r = row;
	g_string_append_printf(out, "command %" G_GINT64_FORMAT " (mail %" G_GINT64_FORMAT
			       ", line %u): %s\n  %s", r->id, r->mail_id, r->n,
			       db_command_state_name(r->state), r->line);
	if (r->answer) {
		g_auto(GStrv) lines = g_strsplit(r->answer, "\n", -1);

		for (char **l = lines; *l; l++)
			g_string_append_printf(out, "\n    %s", *l);
	}
	g_string_append_c(out, '\n');
}

static void command_json(JsonBuilder *b, const void *row)
{
	const struct command_row *r = row;

	json_builder_begin_object(b);
	status_json_members(b, "iiittttiii", "id", r->id, "mail", r->mail_id, "n", (gint64)r->n,
			    "line", r->line, "verb", r->verb,
			    "state", db_command_state_name(r->state), "answer", r->answer,
			    "finding", r->finding_id, "job", r->job_id, "series", r->series_id, NULL);
	json_builder_end_object(b);
}

static GPtrArray *recent_commands(struct db *db, GError **error)
{
	return db_command_recent(db, 1000, error);
}

int cli_commands(struct cli *cli, int argc, char **argv)
{
	return list_command(cli, argc, argv, "commands",
			    "List the mail commands taken (#zeroday lines), newest first: the "
			    "line, its state (running, done, refused) and the answer mailed.",
			    recent_commands, command_text, command_json);
}

static const struct subcommand outbox_commands[] = {
	{ "list", outbox_list, "list the mails, their states and recipients (the default)" },
	{ "show", outbox_show, "print one mail's raw text" },
	{ "test", outbox_test, "queue a test mail" },
	{ "send", outbox_send, "send what is due, and exit" },
};

int cli_outbox(struct cli *cli, int argc, char **argv)
{
	/* Bare "zeroday outbox [--json]" lists. */
	if (argc < 2 || (argv[1][0] == '-' && strcmp(argv[1], "--help") != 0 &&
			 strcmp(argv[1], "-h") != 0))
		return outbox_list(cli, argc, argv);
	return run_subcommand(cli, argc, argv, "outbox", outbox_commands,
			      G_N_ELEMENTS(outbox_commands));
}

/* version */

/* node-build */

int cli_node_build(struct cli *cli, int argc, char **argv)
{
	g_autoptr(GError) error = NULL;
	int status;

	(void)cli; /* a node has no state directory: the job's directory says everything */
	if (!parse_options(&argc, &argv, "JOBDIR",
			   "Build one commit for one target on a cluster node, as described in "
			   "JOBDIR (a job's directory in the Slurm spool, see zeroday.conf(5) "
			   "[slurm]), and leave the build there for zeroday. Run by the Slurm "
			   "executor's jobs, not by hand.", NULL, &status))
		return status;
	if (argc != 2)
		return usage("node-build", "needs the job's directory");
	if (!node_build(argv[1], &error)) {
		fprintf(stderr, "zeroday node-build: %s\n", error->message);
		return EXIT_FAILURE;
	}
	return 0;
}

int cli_version(struct cli *cli, int argc, char **argv)
{
	g_autofree char *git = repo_version_string();
	g_autofree char *sql = db_version_string();
	int status;

	if (!parse_options(&argc, &argv, "", "Print the version.", NULL, &status))
		return status;
	if (argc != 1)
		return usage("version", "takes no arguments");
	printf("zeroday %s (%s, %s, glib %u.%u.%u)\n", PACKAGE_VERSION, git, sql,
	       glib_major_version, glib_minor_version, glib_micro_version);
	return 0;
}
