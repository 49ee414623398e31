/*
 * The bot's unit tests' shared fixtures: see testbot.h.
 */
#include "autoconfig.h"

#include "bot/bot.h"
#include "tests/testbot.h"

struct config *testbot_config(const char *dir, const char *build, const char *mail)
{
	g_autofree char *text = g_strdup_printf(
		"[zeroday]\nstate-dir = %s/state\n"
		"[build]\nsandbox = false\n%s"
		"[mail]\naddress = bot@example.org\nname = Test Robot\n"
		"archive-url = https://lists.example.org/r/\n"
		"templates = %s/templates\n%s",
		dir, build ? build : "", ZERODAY_SRCDIR, mail ? mail : "");
	g_autoptr(GError) error = NULL;
	struct config *config = config_load_data(text, "test", &error);

	g_assert_no_error(error);
	return config;
}

struct db *testbot_db(void)
{
	g_autoptr(GError) error = NULL;
	struct db *db = db_open(":memory:", &error);

	g_assert_no_error(error);
	return db;
}

static char **split(const char *list)
{
	return list ? g_strsplit(list, ",", -1) : g_new0(char *, 1);
}

struct tree_row *testbot_tree(const char *name, const char *branches, const char *lists,
			      gint64 created)
{
	struct tree_row *t = g_new0(struct tree_row, 1);

	t->name = g_strdup(name);
	t->url = g_strdup_printf("git://example.org/%s.git", name);
	t->branches = split(branches);
	t->blacklist = split(NULL);
	t->recipients = split(NULL);
	t->lists = split(lists);
	t->created = created;
	return t;
}

gint64 testbot_tree_add(struct db *db, struct tree_row *t)
{
	g_autoptr(GError) error = NULL;

	g_assert_true(db_tree_insert(db, t, &error));
	g_assert_no_error(error);
	return t->id;
}
