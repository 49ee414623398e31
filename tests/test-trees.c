/*
 * The tree operations and the status snapshot: every check trees_add()
 * and trees_edit() make, with nothing stored when one fails; how lists
 * are edited; blacklisting; removal, refs included; and status_load()
 * with both renderings of a small stored state, byte for byte.
 */
#include "autoconfig.h"

#include <string.h>

#include "bot/bot.h"
#include "bot/store/db-private.h"
#include "bot/status.h"
#include "bot/trees.h"
#include "engine/engine.h"
#include "mail/mail.h"
#include "tests/testlib.h"

static struct config *load_config(const char *text)
{
	g_autoptr(GError) error = NULL;
	struct config *c = config_load_data(text, "test.conf", &error);

	g_assert_no_error(error);
	g_assert_nonnull(c);
	return c;
}

static guint tree_count(struct db *db)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) trees = db_tree_list(db, &error);

	g_assert_no_error(error);
	return trees ? trees->len : 0;
}

/* A tree's settings on one line, to compare before and after (caller frees). */
static char *settings(const struct tree_row *t)
{
	g_autofree char *branches = g_strjoinv(",", t->branches);
	g_autofree char *blacklist = g_strjoinv(",", t->blacklist);
	g_autofree char *to = g_strjoinv(",", t->recipients);
	g_autofree char *targets = g_strjoinv(",", t->targets);

	return g_strdup_printf("url=%s policy=%s branches=%s blacklist=%s base=%s to=%s "
			       "targets=%s", t->url, db_policy_name(t->policy), branches,
			       blacklist, t->base ? t->base : "-", to, targets);
}

/* The settings of the stored tree @name (caller frees). */
static char *stored(struct db *db, const char *name)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(tree_row) t = db_tree_get(db, name, &error);

	g_assert_no_error(error);
	return t ? settings(t) : g_strdup("");
}

#define LIST(...) ((const char *const[]){ __VA_ARGS__, NULL })

static const struct add_case {
	const char *desc;
	struct tree_spec spec;
	GQuark (*domain)(void);
	int code;
	const char *message; /* a part of the error's message */
} add_cases[] = {
	{ "name with a leading dash", { .name = "-x", .url = "git://example.org/x" },
	  engine_error_quark, ENGINE_ERROR_INVALID, "refused tree name '-x'" },
	{ "name with a slash", { .name = "a/b", .url = "git://example.org/x" },
	  engine_error_quark, ENGINE_ERROR_INVALID, "refused tree name" },
	{ "remote helper URL", { .name = "x", .url = "ext::sh -c touch% /tmp/pwned" },
	  engine_error_quark, ENGINE_ERROR_INVALID, "refused URL" },
	{ "ssh without allow-ssh", { .name = "x", .url = "ssh://example.org/x.git" },
	  engine_error_quark, ENGINE_ERROR_INVALID, "refused URL" },
	{ "local path without allow-local-trees", { .name = "x", .url = "/srv/git/x" },
	  engine_error_quark, ENGINE_ERROR_INVALID, "allow-local-trees" },
	{ "bad branch pattern",
	  { .name = "x", .url = "git://example.org/x", .branches = LIST("master", "-*") },
	  engine_error_quark, ENGINE_ERROR_INVALID, "refused branch pattern '-*'" },
	{ "bad blacklist pattern",
	  { .name = "x", .url = "git://example.org/x", .blacklist = LIST("a b") },
	  engine_error_quark, ENGINE_ERROR_INVALID, "refused branch pattern" },
	{ "base without a branch", { .name = "x", .url = "git://example.org/x", .base = "mainline" },
	  bot_error_quark, BOT_ERROR_USAGE,
	  "base 'mainline' must be TREE/BRANCH, e.g. mainline/master" },
	{ "base with a bad tree", { .name = "x", .url = "git://example.org/x", .base = "-up/master" },
	  engine_error_quark, ENGINE_ERROR_INVALID, "refused tree name" },
	{ "base with a bad branch", { .name = "x", .url = "git://example.org/x", .base = "up/a..b" },
	  engine_error_quark, ENGINE_ERROR_INVALID, "refused branch name" },
	{ "bad target",
	  { .name = "x", .url = "git://example.org/x", .targets = LIST("x86_64:defconfig;reboot") },
	  engine_error_quark, ENGINE_ERROR_INVALID, "bad build target 'x86_64:defconfig;reboot'" },
	{ "two addresses in one",
	  { .name = "x", .url = "git://example.org/x", .recipients = LIST("a@b.org, c@d.org") },
	  mail_error_quark, MAIL_ERROR_INVALID, "refused address" },
};

static void test_add_refused(gconstpointer data)
{
	const struct add_case *c = data;
	g_autoptr(GError) error = NULL;
	zd_autoptr(config) config = load_config("");
	zd_autoptr(db) db = db_open(":memory:", &error);
	zd_autoptr(tree_row) row = NULL;

	g_assert_no_error(error);
	if (!db || !config)
		return;
	row = trees_add(db, config, &c->spec, &error);
	g_assert_null(row);
	g_assert_error(error, c->domain(), c->code);
	if (error)
		g_assert_nonnull(strstr(error->message, c->message));
	g_assert_cmpuint(tree_count(db), ==, 0);
}

static void test_add(void)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(config) config = load_config("");
	zd_autoptr(config) ssh = load_config("[git]\nallow-ssh = true\n");
	zd_autoptr(db) db = db_open(":memory:", &error);
	zd_autoptr(tree_row) row = NULL;
	zd_autoptr(tree_row) again = NULL;
	zd_autoptr(tree_row) other = NULL;
	g_autofree char *shown = NULL;
	g_autofree char *kept = NULL;
	const struct tree_spec spec = {
		.name = "alpha",
		.url = "git://example.org/alpha.git",
		.non_rebasable = true,
		.blacklist = LIST("tmp-*"),
		.base = "mainline/master",
		.recipients = LIST("  jane@example.org  ", "Jane Doe <jane@example.org>"),
		.targets = LIST("x86_64:defconfig:W=1"),
	};
	const struct tree_spec minimal = {
		.name = "beta",
		.url = "ssh://example.org/beta.git",
		.branches = LIST("master", "for-*"),
	};

	g_assert_no_error(error);
	if (!db || !config || !ssh)
		return;
	row = trees_add(db, config, &spec, &error);
	g_assert_no_error(error);
	if (!row)
		return;
	g_assert_cmpint(row->id, >, 0);
	g_assert_cmpint(row->created, >, 1700000000);
	shown = settings(row);
	g_assert_cmpstr(shown, ==, "url=git://example.org/alpha.git policy=non-rebasable "
			"branches=* blacklist=tmp-* base=mainline/master "
			"to=jane@example.org "
			"targets=x86_64:defconfig:W=1");
	kept = stored(db, "alpha");
	g_assert_cmpstr(kept, ==, shown);

	/* The name is taken; the failed insert left no transaction open behind it. */
	again = trees_add(db, config, &spec, &error);
	g_assert_null(again);
	g_assert_error(error, BOT_ERROR, BOT_ERROR_EXISTS);
	if (error)
		g_assert_cmpstr(error->message, ==, "a tree named 'alpha' already exists");
	g_clear_error(&error);

	/* ssh:// only where the config allows it. */
	other = trees_add(db, config, &minimal, &error);
	g_assert_null(other);
	g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID);
	g_clear_error(&error);
	other = trees_add(db, ssh, &minimal, &error);
	g_assert_no_error(error);
	if (!other)
		return;
	g_clear_pointer(&shown, g_free);
	shown = stored(db, "beta");
	g_assert_cmpstr(shown, ==, "url=ssh://example.org/beta.git policy=rebasable "
			"branches=master,for-* blacklist= base=- to= targets=");
	g_assert_cmpuint(tree_count(db), ==, 2);
}

/* Adds "demo", the tree the edits start from. */
static struct db *demo_db(const struct config *config)
{
	g_autoptr(GError) error = NULL;
	struct db *db = db_open(":memory:", &error);
	const struct tree_spec spec = {
		.name = "demo",
		.url = "git://example.org/demo.git",
		.branches = LIST("master"),
		.blacklist = LIST("tmp-*"),
		.base = "mainline/master",
		.recipients = LIST("a@example.org"),
		.targets = LIST("x86_64:defconfig"),
	};
	zd_autoptr(tree_row) row = NULL;

	g_assert_no_error(error);
	if (!db)
		return NULL;
	row = trees_add(db, config, &spec, &error);
	g_assert_no_error(error);
	g_assert_nonnull(row);
	return db;
}

#define DEMO "url=git://example.org/demo.git policy=rebasable branches=master " \
	     "blacklist=tmp-* base=mainline/master to=a@example.org targets=x86_64:defconfig"

static const struct edit_case {
	const char *desc;
	struct tree_edit edit;
	const char *want; /* the settings after the edit */
} edit_cases[] = {
	{ "nothing", { 0 }, DEMO },
	{ "url and policy",
	  { .url = "git://example.org/moved.git", .policy = "non-rebasable" },
	  "url=git://example.org/moved.git policy=non-rebasable branches=master "
	  "blacklist=tmp-* base=mainline/master to=a@example.org targets=x86_64:defconfig" },
	{ "branches are replaced", { .branches = LIST("main", "next-*") },
	  "url=git://example.org/demo.git policy=rebasable branches=main,next-* "
	  "blacklist=tmp-* base=mainline/master to=a@example.org targets=x86_64:defconfig" },
	{ "a pattern held already is not added twice", { .blacklist_add = LIST("wip-*", "tmp-*") },
	  "url=git://example.org/demo.git policy=rebasable branches=master "
	  "blacklist=tmp-*,wip-* base=mainline/master to=a@example.org targets=x86_64:defconfig" },
	{ "dropping a pattern not held changes nothing",
	  { .blacklist_drop = LIST("tmp-*", "absent-*") },
	  "url=git://example.org/demo.git policy=rebasable branches=master "
	  "blacklist= base=mainline/master to=a@example.org targets=x86_64:defconfig" },
	{ "dropped and added: the list held it, so it is dropped",
	  { .blacklist_add = LIST("tmp-*"), .blacklist_drop = LIST("tmp-*") },
	  "url=git://example.org/demo.git policy=rebasable branches=master "
	  "blacklist= base=mainline/master to=a@example.org targets=x86_64:defconfig" },
	{ "base cleared", { .base = "" },
	  "url=git://example.org/demo.git policy=rebasable branches=master "
	  "blacklist=tmp-* base=- to=a@example.org targets=x86_64:defconfig" },
	{ "base set", { .base = "stable/linux-6.6.y" },
	  "url=git://example.org/demo.git policy=rebasable branches=master "
	  "blacklist=tmp-* base=stable/linux-6.6.y to=a@example.org targets=x86_64:defconfig" },
	{ "recipients normalized, then added and dropped",
	  { .recipients_add = LIST("Dev <dev@example.org>"),
	    .recipients_drop = LIST("  a@example.org ") },
	  "url=git://example.org/demo.git policy=rebasable branches=master "
	  "blacklist=tmp-* base=mainline/master to=Dev <dev@example.org> "
	  "targets=x86_64:defconfig" },
	{ "targets replaced", { .targets = LIST("arm64:defconfig", "x86_64:allnoconfig") },
	  "url=git://example.org/demo.git policy=rebasable branches=master "
	  "blacklist=tmp-* base=mainline/master to=a@example.org "
	  "targets=arm64:defconfig,x86_64:allnoconfig" },
	{ "default targets", { .default_targets = true },
	  "url=git://example.org/demo.git policy=rebasable branches=master "
	  "blacklist=tmp-* base=mainline/master to=a@example.org targets=" },
	{ "targets given win over default targets",
	  { .targets = LIST("arm64:defconfig"), .default_targets = true },
	  "url=git://example.org/demo.git policy=rebasable branches=master "
	  "blacklist=tmp-* base=mainline/master to=a@example.org targets=arm64:defconfig" },
};

static void test_edit(gconstpointer data)
{
	const struct edit_case *c = data;
	g_autoptr(GError) error = NULL;
	zd_autoptr(config) config = load_config("");
	zd_autoptr(db) db = demo_db(config);
	zd_autoptr(tree_row) row = NULL;
	g_autofree char *returned = NULL;
	g_autofree char *kept = NULL;

	if (!db || !config)
		return;
	row = trees_edit(db, config, "demo", &c->edit, &error);
	g_assert_no_error(error);
	if (!row)
		return;
	returned = settings(row);
	g_assert_cmpstr(returned, ==, c->want);
	kept = stored(db, "demo");
	g_assert_cmpstr(kept, ==, c->want);
}

/* Each refused edit also moves the URL: a refusal must not keep that either. */
#define MOVE .url = "git://example.org/moved.git"

static const struct edit_refused_case {
	const char *desc;
	const char *name;
	struct tree_edit edit;
	GQuark (*domain)(void);
	int code;
	const char *message;
} edit_refused_cases[] = {
	{ "unknown tree", "nope", { MOVE }, bot_error_quark, BOT_ERROR_NOT_FOUND,
	  "no tree named 'nope'" },
	{ "bad policy", "demo", { MOVE, .policy = "sometimes" }, bot_error_quark,
	  BOT_ERROR_USAGE, "policy must be rebasable or non-rebasable, not 'sometimes'" },
	{ "hostile URL", "demo", { .url = "ext::sh", .policy = "non-rebasable" },
	  engine_error_quark, ENGINE_ERROR_INVALID, "refused URL" },
	{ "bad branch pattern", "demo", { MOVE, .branches = LIST("-x") }, engine_error_quark,
	  ENGINE_ERROR_INVALID, "refused branch pattern '-x'" },
	{ "bad pattern added", "demo", { MOVE, .blacklist_add = LIST("a;b") },
	  engine_error_quark, ENGINE_ERROR_INVALID, "refused branch pattern" },
	{ "bad pattern dropped", "demo", { MOVE, .blacklist_drop = LIST("a b") },
	  engine_error_quark, ENGINE_ERROR_INVALID, "refused branch pattern" },
	{ "bad target", "demo", { MOVE, .targets = LIST("x86_64:nonsense") }, engine_error_quark,
	  ENGINE_ERROR_INVALID, "bad build target 'x86_64:nonsense'" },
	{ "base without a branch", "demo", { MOVE, .base = "nobranch" }, bot_error_quark,
	  BOT_ERROR_USAGE, "must be TREE/BRANCH" },
	{ "bad base branch", "demo", { MOVE, .base = "up/a..b" }, engine_error_quark,
	  ENGINE_ERROR_INVALID, "refused branch name" },
	{ "bad recipient added", "demo", { MOVE, .recipients_add = LIST("jane") },
	  mail_error_quark, MAIL_ERROR_INVALID, "refused address 'jane'" },
	{ "bad recipient dropped", "demo",
	  { MOVE, .recipients_drop = LIST("group: a@example.org;") }, mail_error_quark,
	  MAIL_ERROR_INVALID, "refused address" },
};

static void test_edit_refused(gconstpointer data)
{
	const struct edit_refused_case *c = data;
	g_autoptr(GError) error = NULL;
	zd_autoptr(config) config = load_config("");
	zd_autoptr(db) db = demo_db(config);
	zd_autoptr(tree_row) row = NULL;
	g_autofree char *kept = NULL;
	const struct tree_edit ok = { .policy = "non-rebasable" };

	if (!db || !config)
		return;
	row = trees_edit(db, config, c->name, &c->edit, &error);
	g_assert_null(row);
	g_assert_error(error, c->domain(), c->code);
	if (error)
		g_assert_nonnull(strstr(error->message, c->message));
	g_clear_error(&error);
	kept = stored(db, "demo");
	g_assert_cmpstr(kept, ==, DEMO);

	/* The transaction was rolled back: the next edit runs. */
	row = trees_edit(db, NULL, "demo", &ok, &error);
	g_assert_no_error(error);
	g_assert_nonnull(row);
}

/* The mail settings of the stored tree @name on one line (caller frees). */
static char *mail_settings(struct db *db, const char *name)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(tree_row) t = db_tree_get(db, name, &error);
	g_autofree char *lists = NULL;
	g_autofree char *cc = NULL;

	g_assert_no_error(error);
	if (!t)
		return g_strdup("");
	lists = g_strjoinv(",", t->lists);
	cc = g_strjoinv(",", t->recipients);
	return g_strdup_printf("lists=%s cc=%s private=%d mail-clean=%d", lists, cc, t->private,
			       t->mail_clean);
}

/*
 * Lists and maintainers' addresses: normalized, one mailbox once whatever
 * its case or display name, dropped by any spelling; private and
 * mail-clean switched on, kept, and off. Each step starts from the last.
 */
static void test_mail_settings(void)
{
	const struct {
		const char *desc;
		struct tree_edit edit;
		const char *want;
	} steps[] = {
		{ "nothing changes", { 0 },
		  "lists=netdev@example.org,LKML <lkml@example.org> cc=a@example.org,"
		  "Bo Boss <bo@example.org> private=0 mail-clean=0" },
		{ "a list and a maintainer added, again in another spelling",
		  { .lists_add = LIST("Net Dev <NetDev@Example.org>", "fs@example.org"),
		    .recipients_add = LIST(" Cee <cee@example.org> ", "CEE@example.org") },
		  "lists=netdev@example.org,LKML <lkml@example.org>,fs@example.org "
		  "cc=a@example.org,Bo Boss <bo@example.org>,Cee <cee@example.org> "
		  "private=0 mail-clean=0" },
		{ "dropped by another spelling", { .lists_drop = LIST("lkml@EXAMPLE.org"),
						   .recipients_drop = LIST("Whoever <BO@example.org>") },
		  "lists=netdev@example.org,fs@example.org cc=a@example.org,Cee <cee@example.org> "
		  "private=0 mail-clean=0" },
		{ "private and mail-clean on", { .private = TREE_ON, .mail_clean = TREE_ON },
		  "lists=netdev@example.org,fs@example.org cc=a@example.org,Cee <cee@example.org> "
		  "private=1 mail-clean=1" },
		{ "kept when not named", { .url = "git://example.org/moved.git" },
		  "lists=netdev@example.org,fs@example.org cc=a@example.org,Cee <cee@example.org> "
		  "private=1 mail-clean=1" },
		{ "public again, mail-clean off", { .private = TREE_OFF, .mail_clean = TREE_OFF },
		  "lists=netdev@example.org,fs@example.org cc=a@example.org,Cee <cee@example.org> "
		  "private=0 mail-clean=0" },
	};
	g_autoptr(GError) error = NULL;
	zd_autoptr(config) config = load_config("");
	zd_autoptr(db) db = db_open(":memory:", &error);
	const struct tree_spec spec = {
		.name = "mail",
		.url = "git://example.org/mail.git",
		.lists = LIST("netdev@example.org", "LKML <lkml@example.org>", "NETDEV@example.org"),
		.recipients = LIST("a@example.org", "Bo Boss <bo@example.org>"),
	};
	const struct tree_spec bad_list = {
		.name = "bad", .url = "git://example.org/bad.git", .lists = LIST("netdev"),
	};
	const struct tree_edit bad_drop = { .private = TREE_ON, .lists_drop = LIST("a@b, c@d") };
	zd_autoptr(tree_row) row = NULL;
	zd_autoptr(tree_row) refused = NULL;

	g_assert_no_error(error);
	if (!db || !config)
		return;
	row = trees_add(db, config, &spec, &error);
	g_assert_no_error(error);
	if (!row)
		return;
	g_assert_false(row->private);
	for (size_t i = 0; i < G_N_ELEMENTS(steps); i++) {
		zd_autoptr(tree_row) t = trees_edit(db, config, "mail", &steps[i].edit, &error);
		g_autofree char *got = mail_settings(db, "mail");

		g_test_message("%s", steps[i].desc);
		g_assert_no_error(error);
		g_assert_nonnull(t);
		g_assert_cmpstr(got, ==, steps[i].want);
	}

	/* A bad list address is refused, and a refused edit changes nothing. */
	refused = trees_add(db, config, &bad_list, &error);
	g_assert_null(refused);
	g_assert_error(error, MAIL_ERROR, MAIL_ERROR_INVALID);
	g_clear_error(&error);
	refused = trees_edit(db, config, "mail", &bad_drop, &error);
	g_assert_null(refused);
	g_assert_error(error, MAIL_ERROR, MAIL_ERROR_INVALID);
	{
		g_autofree char *got = mail_settings(db, "mail");

		g_assert_cmpstr(got, ==, steps[G_N_ELEMENTS(steps) - 1].want);
	}
}

static void test_blacklist(void)
{
	static const struct {
		const char *pattern;
		bool add;
		const char *want;
	} steps[] = {
		{ "wip-*", true, "tmp-*,wip-*" },
		{ "wip-*", true, "tmp-*,wip-*" },
		{ "tmp-*", false, "wip-*" },
		{ "absent-*", false, "wip-*" },
		{ "tmp-*", true, "wip-*,tmp-*" },
	};
	g_autoptr(GError) error = NULL;
	zd_autoptr(config) config = load_config("");
	zd_autoptr(db) db = demo_db(config);

	if (!db || !config)
		return;
	for (size_t i = 0; i < G_N_ELEMENTS(steps); i++) {
		zd_autoptr(tree_row) t = NULL;
		g_autofree char *list = NULL;

		g_assert_true(trees_blacklist(db, "demo", steps[i].pattern, steps[i].add, &error));
		g_assert_no_error(error);
		t = db_tree_get(db, "demo", &error);
		g_assert_no_error(error);
		if (!t)
			return;
		list = g_strjoinv(",", t->blacklist);
		g_assert_cmpstr(list, ==, steps[i].want);
	}
	g_assert_false(trees_blacklist(db, "demo", "-x", true, &error));
	g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID);
	g_clear_error(&error);
	g_assert_false(trees_blacklist(db, "nope", "tmp-*", false, &error));
	g_assert_error(error, BOT_ERROR, BOT_ERROR_NOT_FOUND);
}

static void test_remove(void)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(config) config = load_config("");
	zd_autoptr(db) db = db_open(":memory:", &error);
	zd_autoptr(repo) repo = NULL;
	g_autofree char *work = testlib_mkdir("remove-work");
	g_autofree char *store = NULL;
	g_autofree char *commit = NULL;
	g_autofree char *kept = NULL;
	g_autofree char *gone = NULL;
	const char *names[] = { "gone", "kept" };
	gint64 depth = -1;

	g_assert_no_error(error);
	if (!db || !config)
		return;
	testlib_repo_init(work);
	commit = testlib_commit(work, "a.c", "int a;\n", "first commit");
	store = g_build_filename(testlib_scratch(), "remove-store.git", NULL);
	repo = repo_open(store, &error);
	g_assert_no_error(error);
	if (!repo)
		return;
	g_free(testlib_git(store, "fetch", "-q", work, "master:refs/trees/gone/heads/master",
			   "master:refs/trees/kept/heads/master", NULL));
	for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
		g_autofree char *url = g_strdup_printf("git://example.org/%s.git", names[i]);
		const struct tree_spec spec = { .name = names[i], .url = url };
		zd_autoptr(tree_row) t = trees_add(db, config, &spec, &error);
		char master[] = "master";
		struct head_event ev = { .branch = master, .new_head = commit, .change = HEAD_NEW,
					 .action = HEAD_ACTION_QUEUED, .selected = 1, .when = 1 };
		bool added = false;

		g_assert_no_error(error);
		if (!t)
			return;
		g_assert_true(db_event_add(db, t->id, &ev, &error));
		g_assert_true(db_test_add(db, t->id, "master", commit, "first commit", ev.id, &added,
					  &error));
		g_assert_no_error(error);
	}

	g_assert_true(trees_remove(db, repo, "gone", &error));
	g_assert_no_error(error);
	g_assert_cmpuint(tree_count(db), ==, 1);
	g_assert_true(db_test_count_pending(db, &depth, &error));
	g_assert_cmpint(depth, ==, 1);
	gone = repo_tree_branch_head(repo, "gone", "master", &error);
	g_assert_null(gone);
	g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_NOT_FOUND);
	g_clear_error(&error);
	kept = repo_tree_branch_head(repo, "kept", "master", &error);
	g_assert_no_error(error);
	g_assert_cmpstr(kept, ==, commit);

	g_assert_false(trees_remove(db, repo, "gone", &error));
	g_assert_error(error, BOT_ERROR, BOT_ERROR_NOT_FOUND);
	if (error)
		g_assert_cmpstr(error->message, ==, "no tree named 'gone'");
	g_clear_error(&error);
	/* Without a store, only the records go. */
	g_assert_true(trees_remove(db, NULL, "kept", &error));
	g_assert_no_error(error);
	g_assert_cmpuint(tree_count(db), ==, 0);
}

#define C_HEAD "4444444444444444444444444444444444444444"
#define C_SKIP "5555555555555555555555555555555555555555"
#define C_JOB0 "1111111111111111111111111111111111111111"
#define C_JOB1 "2222222222222222222222222222222222222222"
#define C_JOB2 "3333333333333333333333333333333333333333"
#define C_WARN "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define C_PANIC "dddddddddddddddddddddddddddddddddddddddd"
#define C_FIX "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"
#define C_HEADLESS "cccccccccccccccccccccccccccccccccccccccc"

/*
 * Two trees, one polled and one failing; a skipped branch and two branch
 * changes; a commit to test; three jobs (waiting to retry, in error,
 * queued); three findings (open, fixed, inconclusive).
 */
static struct db *status_db(void)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(config) config = load_config("");
	struct db *db = db_open(":memory:", &error);
	const struct job_backoff backoff = JOB_BACKOFF_INIT;
	const struct tree_spec alpha_spec = { .name = "alpha", .url = "git://example.org/a.git" };
	const struct tree_spec beta_spec = { .name = "beta", .url = "https://example.org/b.git",
					     .non_rebasable = true,
					     .lists = LIST("beta-list@example.org"),
					     .recipients = LIST("Bea <bea@example.org>"),
					     .private = true, .mail_clean = true };
	zd_autoptr(tree_row) alpha = NULL;
	zd_autoptr(tree_row) beta = NULL;
	char master[] = "master", tmp[] = "tmp-x", head[] = C_HEAD, skip[] = C_SKIP;
	char why[] = "blacklisted by pattern 'tmp-*'";
	struct branch_row tested = { .name = master, .head = head, .state = BRANCH_TESTED,
				     .updated = 1700000000 };
	struct branch_row skipped = { .name = tmp, .head = skip, .state = BRANCH_SKIPPED,
				      .reason = why, .updated = 1700000001 };
	struct head_event queued = { .branch = master, .new_head = head, .change = HEAD_NEW,
				     .action = HEAD_ACTION_QUEUED, .selected = 1,
				     .when = 1700000000 };
	struct head_event skip_event = { .branch = tmp, .new_head = skip, .change = HEAD_NEW,
					 .action = HEAD_ACTION_SKIPPED, .reason = why,
					 .when = 1700000001 };
	char warn[] = C_WARN, panic[] = C_PANIC, headless[] = C_HEADLESS;
	char defconfig[] = "x86_64:defconfig", tiny[] = "x86_64:tinyconfig+serial";
	char warn_fp[] = "0123456789abcdef", panic_fp[] = "fedcba9876543210";
	char err_fp[] = "00000000deadbeef";
	char warn_title[] = "unused variable 'x'";
	char panic_title[] = "Kernel panic - not syncing: VFS";
	char err_title[] = "implicit declaration of function 'f'";
	char details[] = "line \"one\"\\\n\tline two";
	char reproduce[] = "zeroday build alpha " C_WARN;
	char bisect_log[] = C_PANIC " bad 2/4\n";
	struct finding_row findings[] = {
		{ .branch = master, .culprit = warn, .target = defconfig,
		  .kind = FINDING_BUILD_WARNING, .fingerprint = warn_fp, .title = warn_title,
		  .confidence = 1.0, .reproduce = reproduce },
		{ .branch = master, .culprit = panic, .target = tiny, .kind = FINDING_BOOT,
		  .console = CONSOLE_PANIC, .fingerprint = panic_fp, .title = panic_title,
		  .details = details, .confidence = 0.9, .rate = 0.5, .bisect_log = bisect_log },
		{ .branch = master, .culprit = headless, .target = defconfig,
		  .kind = FINDING_BUILD_ERROR, .fingerprint = err_fp, .title = err_title,
		  .confidence = 0.5, .state = FINDING_INCONCLUSIVE },
	};
	g_autoptr(GPtrArray) stored_findings = NULL;
	struct job_row *job = NULL;
	bool added = false, gave_up = false;

	g_assert_no_error(error);
	if (!db || !config)
		return db;
	alpha = trees_add(db, config, &alpha_spec, &error);
	g_assert_no_error(error);
	beta = trees_add(db, config, &beta_spec, &error);
	g_assert_no_error(error);
	if (!alpha || !beta)
		return db;
	g_assert_true(db_tree_polled(db, alpha->id, 1700000000, NULL, &error));
	g_assert_true(db_tree_polled(db, beta->id, 1700000060, "fetch failed: connection refused",
				     &error));
	g_assert_true(db_branch_put(db, alpha->id, &tested, &error));
	g_assert_true(db_branch_put(db, alpha->id, &skipped, &error));
	g_assert_true(db_event_add(db, alpha->id, &queued, &error));
	g_assert_true(db_event_add(db, alpha->id, &skip_event, &error));
	g_assert_true(db_test_add(db, alpha->id, "master", C_HEAD, "first commit", queued.id,
				  &added, &error));
	g_assert_no_error(error);

	g_assert_true(db_job_add(db, JOB_KIND_BUILD, alpha->id, C_JOB0, "x86_64:defconfig",
				 JOB_HEAD, &added, &error));
	g_assert_true(db_job_add(db, JOB_KIND_BUILD, alpha->id, C_JOB1, "x86_64:defconfig",
				 JOB_BACKLOG, &added, &error));
	g_assert_true(db_job_add(db, JOB_KIND_BUILD, alpha->id, C_JOB2, "x86_64:defconfig",
				 JOB_BACKLOG, &added, &error));
	/* Queued at a known time, for the ages status shows. */
	g_assert_true(db_exec(db, "UPDATE jobs SET created = 990", &error));
	/* The head's build fails for infrastructure and waits until 1060. */
	g_assert_true(db_job_claim(db, "w", JOB_CLAIM_TREE, 1000, 60, &job, &error));
	g_assert_cmpstr(job ? job->commit : NULL, ==, C_JOB0);
	if (!job)
		return db;
	g_assert_true(db_job_retry(db, job->id, "w", 1000, "infra-error: bwrap is not installed",
				   &backoff, &gave_up, NULL, &error));
	g_clear_pointer(&job, job_row_free);
	/* The next one cannot run at all. */
	g_assert_true(db_job_claim(db, "w", JOB_CLAIM_TREE, 1001, 60, &job, &error));
	g_assert_cmpstr(job ? job->commit : NULL, ==, C_JOB1);
	if (!job)
		return db;
	g_assert_true(db_job_complete(db, job->id, "w", JOB_RESULT_ERROR, "commit is gone", 1001,
				      &error));
	g_clear_pointer(&job, job_row_free);

	g_assert_true(db_tx_begin(db, &error));
	for (size_t i = 0; i < G_N_ELEMENTS(findings); i++) {
		g_assert_true(db_finding_add(db, i == 1 ? beta->id : alpha->id, &findings[i], &added,
					     &error));
		g_assert_true(added);
	}
	g_assert_true(db_tx_commit(db, &error));
	stored_findings = db_finding_list(db, 10, &error);
	g_assert_cmpuint(stored_findings ? stored_findings->len : 0, ==, 3);
	if (stored_findings && stored_findings->len == 3)
		g_assert_true(db_finding_fixed(db, ((struct finding_row *)
						    stored_findings->pdata[1])->id, C_FIX, &error));
	g_assert_no_error(error);
	return db;
}

#define STATUS_TAIL_TEXT \
	"Outbox: 0 queued, 0 held, 0 sent, 0 failed\n" \
	"Response times, last 30 days (p50 / p90):\n" \
	"  push to report: - / - (0 measured; from the poll that first saw the commit to the " \
	"report sent)\n" \
	"  post to reply: - / - (0 measured; from the ingest of a series' first mail to its first " \
	"reply sent)\n"
#define STATUS_TAIL_JSON \
	"\"mail_sources\": [], \"outbox\": {\"queued\": 0, \"held\": 0, \"sent\": 0, \"failed\": 0, " \
	"\"oldest_queued_age\": null}, \"response_times\": {\"days\": 30, \"push_to_report\": " \
	"{\"from\": \"first_poll\", \"count\": 0, \"p50\": null, \"p90\": null}, \"post_to_reply\": " \
	"{\"from\": \"ingest\", \"count\": 0, \"p50\": null, \"p90\": null}}}\n"

static const char status_text[] =
	"Trees: 2\n"
	"  alpha                rebasable     polled 2023-11-14 22:13:20 UTC (0s ago)\n"
	"    skipped tmp-x: blacklisted by pattern 'tmp-*'\n"
	"  beta                 non-rebasable polled 2023-11-14 22:14:20 UTC (0s ago): FAILED: "
	"fetch failed: connection refused\n"
	"Queue: 1 commit to test\n"
	"  alpha/master 444444444444 first commit\n"
	"Jobs: 2 queued (1 waiting to retry), 0 running, 1 done\n"
	"  oldest queued 40s ago\n"
	"  queued alpha 111111111111 x86_64:defconfig: job 1, build, queued 40s ago\n"
	"  queued alpha 333333333333 x86_64:defconfig: job 3, build, queued 40s ago\n"
	"  retry alpha 111111111111 x86_64:defconfig: 1 of 8 attempts failed, next try at "
	"1970-01-01 00:17:40 UTC: infra-error: bwrap is not installed\n"
	"  error alpha 222222222222 x86_64:defconfig: commit is gone\n"
	"Findings: 3\n"
	"  alpha cccccccccccc x86_64:defconfig build-error: implicit declaration of function "
	"'f' [00000000deadbeef] (inconclusive)\n"
	"  beta dddddddddddd x86_64:tinyconfig+serial boot-panic: Kernel panic - not syncing: "
	"VFS [fedcba9876543210] (shows in >= 50% of boots) (confidence 0.900) "
	"(fixed by eeeeeeeeeeee)\n"
	"  alpha aaaaaaaaaaaa x86_64:defconfig build-warning: unused variable 'x' "
	"[0123456789abcdef]\n"
	"Mail: 0 read, 0 quarantined\n"
	STATUS_TAIL_TEXT
	"Recent branch changes:\n"
	"  2023-11-14 22:13:21 UTC alpha/tmp-x new 555555555555: skipped "
	"(blacklisted by pattern 'tmp-*')\n"
	"  2023-11-14 22:13:20 UTC alpha/master new 444444444444: queued 1\n";

static const char status_json[] =
	"{\"trees\": ["
	"{\"name\": \"alpha\", \"policy\": \"rebasable\", \"lists\": [], \"cc\": [], \"prefixes\": [], "
	"\"private\": false, \"mail_clean\": false, \"last_poll\": 1700000000, "
	"\"error\": null}, "
	"{\"name\": \"beta\", \"policy\": \"non-rebasable\", "
	"\"lists\": [\"beta-list@example.org\"], \"cc\": [\"Bea <bea@example.org>\"], \"prefixes\": [], "
	"\"private\": true, \"mail_clean\": true, \"last_poll\": 1700000060, "
	"\"error\": \"fetch failed: connection refused\"}], "
	"\"jobs\": {\"queued\": 2, \"running\": 0, \"done\": 1}, "
	"\"retrying\": [{\"id\": 1, \"tree\": \"alpha\", \"commit\": \"" C_JOB0 "\", "
	"\"target\": \"x86_64:defconfig\", \"attempts\": 1, \"failures\": 1, \"next_try\": 1060, "
	"\"result\": null, \"last_error\": \"infra-error: bwrap is not installed\"}], "
	"\"errors\": [{\"id\": 2, \"tree\": \"alpha\", \"commit\": \"" C_JOB1 "\", "
	"\"target\": \"x86_64:defconfig\", \"attempts\": 1, \"failures\": 0, \"next_try\": 0, "
	"\"result\": \"error\", \"last_error\": \"commit is gone\"}], "
	"\"findings\": ["
	"{\"id\": 3, \"tree\": \"alpha\", \"culprit\": \"" C_HEADLESS "\", \"target\": \"x86_64:defconfig\", "
	"\"kind\": \"build-error\", \"fingerprint\": \"00000000deadbeef\", "
	"\"title\": \"implicit declaration of function 'f'\", \"state\": \"inconclusive\", "
	"\"reproduce\": null, \"fixed_by\": null, \"details\": null, \"bisect_log\": null, "
	"\"parent\": null, \"head\": null, \"confidence\": 0.5000, \"rate\": 1.0000, "
	"\"failures\": 0, \"runs\": 0, \"suspects\": [], \"dup_of\": null, \"fix_subject\": null, \"also_on\": [], \"steps\": []}, "
	"{\"id\": 2, \"tree\": \"beta\", \"culprit\": \"" C_PANIC "\", "
	"\"target\": \"x86_64:tinyconfig+serial\", \"kind\": \"boot-panic\", "
	"\"fingerprint\": \"fedcba9876543210\", \"title\": \"Kernel panic - not syncing: VFS\", "
	"\"state\": \"fixed\", \"reproduce\": null, \"fixed_by\": \"" C_FIX "\", "
	"\"details\": \"line \\\"one\\\"\\\\\\n\\tline two\", "
	"\"bisect_log\": \"" C_PANIC " bad 2/4\\n\", \"parent\": null, \"head\": null, "
	"\"confidence\": 0.9000, \"rate\": 0.5000, \"failures\": 0, \"runs\": 0, "
	"\"suspects\": [], \"dup_of\": null, \"fix_subject\": null, \"also_on\": [], \"steps\": []}, "
	"{\"id\": 1, \"tree\": \"alpha\", \"culprit\": \"" C_WARN "\", \"target\": \"x86_64:defconfig\", "
	"\"kind\": \"build-warning\", \"fingerprint\": \"0123456789abcdef\", "
	"\"title\": \"unused variable 'x'\", \"state\": \"open\", "
	"\"reproduce\": \"zeroday build alpha " C_WARN "\", \"fixed_by\": null, "
	"\"details\": null, \"bisect_log\": null, \"parent\": null, \"head\": null, "
	"\"confidence\": 1.0000, \"rate\": 1.0000, \"failures\": 0, \"runs\": 0, "
	"\"suspects\": [], \"dup_of\": null, \"fix_subject\": null, \"also_on\": [], \"steps\": []}"
	"], \"mails\": 0, \"quarantined\": [], \"now\": 1030, \"oldest_queued_age\": 40, "
	"\"active_jobs\": [{\"id\": 1, \"state\": \"queued\", \"kind\": \"build\", \"tree\": \"alpha\", "
	"\"commit\": \"" C_JOB0 "\", \"target\": \"x86_64:defconfig\", \"created\": 990, \"age\": 40}, "
	"{\"id\": 3, \"state\": \"queued\", \"kind\": \"build\", \"tree\": \"alpha\", "
	"\"commit\": \"" C_JOB2 "\", \"target\": \"x86_64:defconfig\", \"created\": 990, \"age\": 40}], "
	STATUS_TAIL_JSON;

static void test_status(void)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(db) db = status_db();
	g_autoptr(GString) text = g_string_new("");
	g_autoptr(GString) json = g_string_new("");
	g_autoptr(GString) later = g_string_new("");
	struct status s;

	if (!db)
		return;
	g_assert_true(status_load(&s, db, 1030, &error));
	g_assert_no_error(error);
	if (error)
		return;
	g_assert_cmpint(s.now, ==, 1030);
	g_assert_cmpuint(s.trees->len, ==, 2);
	g_assert_cmpint(s.queue_depth, ==, 1);
	g_assert_cmpint(s.queued, ==, 2);
	g_assert_cmpint(s.waiting, ==, 1);
	g_assert_cmpint(s.running, ==, 0);
	g_assert_cmpint(s.done, ==, 1);
	g_assert_cmpuint(s.retrying->len, ==, 1);
	g_assert_cmpuint(s.errors->len, ==, 1);
	g_assert_cmpuint(s.findings->len, ==, 3);
	g_assert_cmpuint(s.events->len, ==, 2);
	status_format_text(text, &s);
	g_assert_cmpstr(text->str, ==, status_text);
	status_format_json(json, &s);
	g_assert_cmpstr(json->str, ==, status_json);
	status_release(&s);
	g_assert_null(s.trees);
	status_release(&s);

	/* Past its retry time, the waiting job is simply queued, to be tried now. */
	g_assert_true(status_load(&s, db, 2000, &error));
	g_assert_no_error(error);
	if (error)
		return;
	status_format_text(later, &s);
	status_release(&s);
	g_assert_nonnull(strstr(later->str, "\nJobs: 2 queued, 0 running, 1 done\n"));
	g_assert_nonnull(strstr(later->str, "attempts failed, next try now: infra-error"));
}

static void test_status_empty(void)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(db) db = db_open(":memory:", &error);
	g_autoptr(GString) text = g_string_new("");
	g_autoptr(GString) json = g_string_new("");
	struct status s;

	g_assert_no_error(error);
	if (!db)
		return;
	g_assert_true(status_load(&s, db, 1, &error));
	g_assert_no_error(error);
	if (error)
		return;
	status_format_text(text, &s);
	status_format_json(json, &s);
	status_release(&s);
	g_assert_cmpstr(text->str, ==,
			"Trees: 0\nQueue: 0 commits to test\nJobs: 0 queued, 0 running, 0 done\n"
			"Findings: 0\nMail: 0 read, 0 quarantined\n" STATUS_TAIL_TEXT
			"Recent branch changes:\n");
	g_assert_cmpstr(json->str, ==,
			"{\"trees\": [], \"jobs\": {\"queued\": 0, \"running\": 0, \"done\": 0}, "
			"\"retrying\": [], \"errors\": [], \"findings\": [], \"mails\": 0, \"quarantined\": [], "
			"\"now\": 1, \"oldest_queued_age\": null, \"active_jobs\": [], " STATUS_TAIL_JSON);
}

#define C_PARENT "1010101010101010101010101010101010101010"
#define C_REVERT "2020202020202020202020202020202020202020"
#define C_SUSPECT "3030303030303030303030303030303030303030"

/*
 * Findings stored as fields: a boot failure bisected to its culprit with
 * the revert check, and a build error whose bisection was inconclusive.
 */
static const struct finding_step panic_steps[] = {
	{ .role = BISECT_ROLE_ROUTINE, .commit = (char *)C_HEAD, .result = BISECT_BAD, .runs = 8,
	  .failures = 3 },
	{ .role = BISECT_ROLE_BOUNDARY, .commit = (char *)C_PARENT, .result = BISECT_GOOD,
	  .runs = 8 },
	{ .role = BISECT_ROLE_SEARCH, .commit = (char *)C_PANIC, .result = BISECT_BAD, .runs = 2,
	  .failures = 1 },
	{ .role = BISECT_ROLE_REVERT, .commit = (char *)C_PANIC, .tested = (char *)C_REVERT,
	  .result = BISECT_GOOD, .runs = 8 },
};

static const struct finding_step error_steps[] = {
	{ .role = BISECT_ROLE_SEARCH, .commit = (char *)C_SUSPECT, .result = BISECT_SKIP,
	  .runs = 0 },
};

static char *suspects[] = { (char *)C_HEADLESS, (char *)C_SUSPECT, NULL };

static const struct finding_row structured[] = {
	{ .branch = (char *)"master", .culprit = (char *)C_PANIC, .parent = (char *)C_PARENT,
	  .head = (char *)C_HEAD, .target = (char *)"x86_64:tinyconfig+serial",
	  .kind = FINDING_BOOT, .console = CONSOLE_PANIC, .fingerprint = (char *)"fedcba9876543210",
	  .title = (char *)"Kernel panic - not syncing: VFS",
	  .excerpt = (char *)"Kernel panic - not syncing: VFS\nCPU: 0 PID: 1 Comm: init",
	  .failures = 3, .runs = 8, .intermittent = true, .repro_commit = (char *)C_PANIC,
	  .repro_boots = 7, .confidence = 0.9987, .rate = 0.375 },
	{ .branch = (char *)"master", .culprit = (char *)C_HEADLESS, .parent = (char *)C_SUSPECT,
	  .head = (char *)C_HEADLESS, .target = (char *)"x86_64:defconfig",
	  .kind = FINDING_BUILD_ERROR, .fingerprint = (char *)"00000000deadbeef",
	  .title = (char *)"fs/a.c: implicit declaration of function 'f'",
	  .file = (char *)"fs/a.c", .line = 12, .column = 5, .diag_kind = DIAG_ERROR,
	  .message = (char *)"implicit declaration of function 'f'",
	  .repro_commit = (char *)C_HEADLESS, .suspects = suspects,
	  .reason = (char *)"no step could be built", .state = FINDING_INCONCLUSIVE },
};

static const char structured_text[] =
	"Findings: 2\n"
	"  alpha cccccccccccc x86_64:defconfig build-error: fs/a.c: implicit declaration of "
	"function 'f' [00000000deadbeef] (inconclusive)\n"
	"  alpha dddddddddddd x86_64:tinyconfig+serial boot-panic: Kernel panic - not syncing: "
	"VFS [fedcba9876543210] (shows in about 38% of boots) (confidence 0.999)\n"
	"Mail: 0 read, 0 quarantined\n"
	STATUS_TAIL_TEXT
	"Recent branch changes:\n";

static const char structured_json[] =
	"\"findings\": ["
	"{\"id\": 2, \"tree\": \"alpha\", \"culprit\": \"" C_HEADLESS "\", \"target\": \"x86_64:defconfig\", "
	"\"kind\": \"build-error\", \"fingerprint\": \"00000000deadbeef\", "
	"\"title\": \"fs/a.c: implicit declaration of function 'f'\", \"state\": \"inconclusive\", "
	"\"reproduce\": \"zeroday build alpha " C_HEADLESS " --target 'x86_64:defconfig'\", "
	"\"fixed_by\": null, "
	"\"details\": \"fs/a.c:12:5: error: implicit declaration of function 'f'\", "
	"\"bisect_log\": \"" C_SUSPECT " skip 0/0 (search)\\n"
	"inconclusive: no step could be built; one of " C_HEADLESS " " C_SUSPECT "\\n\", "
	"\"parent\": \"" C_SUSPECT "\", \"head\": \"" C_HEADLESS "\", "
	"\"confidence\": 0.0000, \"rate\": 1.0000, \"failures\": 0, \"runs\": 0, "
	"\"suspects\": [\"" C_HEADLESS "\", \"" C_SUSPECT "\"], "
	"\"dup_of\": null, \"fix_subject\": null, \"also_on\": [], "
	"\"steps\": [{\"role\": \"search\", \"commit\": \"" C_SUSPECT "\", \"tested\": null, "
	"\"result\": \"skip\", \"runs\": 0, \"failures\": 0}]}, "
	"{\"id\": 1, \"tree\": \"alpha\", \"culprit\": \"" C_PANIC "\", "
	"\"target\": \"x86_64:tinyconfig+serial\", \"kind\": \"boot-panic\", "
	"\"fingerprint\": \"fedcba9876543210\", \"title\": \"Kernel panic - not syncing: VFS\", "
	"\"state\": \"open\", "
	"\"reproduce\": \"zeroday build alpha " C_PANIC " --target 'x86_64:tinyconfig+serial' "
	"&& zeroday boot BUILD-ID --repeat 7\", \"fixed_by\": null, "
	"\"details\": \"3/8 boots at the head (intermittent)\\n"
	"Kernel panic - not syncing: VFS\\nCPU: 0 PID: 1 Comm: init\", "
	"\"bisect_log\": \"" C_HEAD " bad 3/8 (routine)\\n"
	C_PARENT " good 0/8 (boundary)\\n"
	C_PANIC " bad 1/2 (search)\\n"
	C_REVERT " good 0/8 (revert of " C_PANIC ")\\n"
	"culprit " C_PANIC ", confidence 0.9987\\n\", "
	"\"parent\": \"" C_PARENT "\", \"head\": \"" C_HEAD "\", "
	"\"confidence\": 0.9987, \"rate\": 0.3750, \"failures\": 3, \"runs\": 8, \"suspects\": [], "
	"\"dup_of\": null, \"fix_subject\": null, \"also_on\": [], \"steps\": ["
	"{\"role\": \"routine\", \"commit\": \"" C_HEAD "\", \"tested\": null, "
	"\"result\": \"bad\", \"runs\": 8, \"failures\": 3}, "
	"{\"role\": \"boundary\", \"commit\": \"" C_PARENT "\", \"tested\": null, "
	"\"result\": \"good\", \"runs\": 8, \"failures\": 0}, "
	"{\"role\": \"search\", \"commit\": \"" C_PANIC "\", \"tested\": null, "
	"\"result\": \"bad\", \"runs\": 2, \"failures\": 1}, "
	"{\"role\": \"revert\", \"commit\": \"" C_PANIC "\", \"tested\": \"" C_REVERT "\", "
	"\"result\": \"good\", \"runs\": 8, \"failures\": 0}]}"
	"], \"mails\": 0, \"quarantined\": [], \"now\": 1, \"oldest_queued_age\": null, "
	"\"active_jobs\": [], " STATUS_TAIL_JSON;

/* Returns the part of @text from @start on, or "" (borrowed). */
static const char *from(const char *text, const char *start)
{
	const char *p = strstr(text, start);

	return p ? p : "";
}

/*
 * Structured findings, stored and loaded, render in the shape the text
 * findings had: the same keys and lines, and the new fields in JSON.
 */
static void test_status_structured(void)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(config) config = load_config("");
	zd_autoptr(db) db = db_open(":memory:", &error);
	const struct tree_spec spec = { .name = "alpha", .url = "git://example.org/a.git" };
	zd_autoptr(tree_row) alpha = NULL;
	g_autoptr(GString) text = g_string_new("");
	g_autoptr(GString) json = g_string_new("");
	g_autoptr(GPtrArray) panic = g_ptr_array_new();
	g_autoptr(GPtrArray) build = g_ptr_array_new();
	struct finding_row rows[G_N_ELEMENTS(structured)];
	struct status s;
	bool added = false;

	g_assert_no_error(error);
	if (!db || !config)
		return;
	alpha = trees_add(db, config, &spec, &error);
	g_assert_no_error(error);
	if (!alpha)
		return;
	for (size_t i = 0; i < G_N_ELEMENTS(panic_steps); i++)
		g_ptr_array_add(panic, (struct finding_step *)&panic_steps[i]);
	for (size_t i = 0; i < G_N_ELEMENTS(error_steps); i++)
		g_ptr_array_add(build, (struct finding_step *)&error_steps[i]);
	memcpy(rows, structured, sizeof(rows));
	rows[0].steps = panic;
	rows[1].steps = build;
	g_assert_true(db_tx_begin(db, &error));
	for (size_t i = 0; i < G_N_ELEMENTS(rows); i++) {
		g_assert_true(db_finding_add(db, alpha->id, &rows[i], &added, &error));
		g_assert_true(added);
	}
	g_assert_true(db_tx_commit(db, &error));
	g_assert_true(status_load(&s, db, 1, &error));
	g_assert_no_error(error);
	if (error)
		return;
	status_format_text(text, &s);
	status_format_json(json, &s);
	status_release(&s);
	g_assert_cmpstr(from(text->str, "Findings:"), ==, structured_text);
	g_assert_cmpstr(from(json->str, "\"findings\":"), ==, structured_json);
}

/* The renderers' edge cases, on rows as db_finding_list() returns them. */
static void test_finding_render(void)
{
	char *no_suspects[] = { NULL };
	char *one[] = { (char *)C_SUSPECT, NULL };
	const struct finding_row warning = {
		.culprit = (char *)C_WARN, .head = (char *)C_WARN, .target = (char *)"x86_64:defconfig",
		.kind = FINDING_BUILD_WARNING, .diag_kind = DIAG_WARNING,
		.message = (char *)"modpost: section mismatch", .suspects = one,
		.state = FINDING_INCONCLUSIVE,
	};
	const struct finding_row boot = {
		.tree = (char *)"beta", .culprit = (char *)C_PANIC, .head = (char *)C_HEAD,
		.target = (char *)"x86_64:tinyconfig", .kind = FINDING_BOOT, .failures = 2,
		.runs = 2, .suspects = no_suspects, .reason = (char *)"", .confidence = 1.0,
		.state = FINDING_INCONCLUSIVE,
	};
	const struct finding_row fixed = {
		.tree = (char *)"beta", .culprit = (char *)C_PANIC, .head = (char *)C_HEAD,
		.target = (char *)"x86_64:tinyconfig", .kind = FINDING_BOOT,
		.repro_commit = (char *)C_FIX, .repro_boots = 1, .confidence = 0.5,
		.state = FINDING_FIXED,
	};
	/* Older rows: their text as stored, or none. */
	const struct finding_row old = {
		.culprit = (char *)C_WARN, .kind = FINDING_BUILD_WARNING, .message = (char *)"m",
		.details = (char *)"a.c:1:2: warning: m", .reproduce = (char *)"zeroday build x y",
		.bisect_log = (char *)"y bad\n",
	};
	const struct finding_row old_bare = { .culprit = (char *)C_WARN, .kind = FINDING_BOOT };
	const struct { const struct finding_row *f; const char *details, *reproduce, *log; } cases[] = {
		{ &warning, "warning: modpost: section mismatch",
		  "zeroday build - " C_WARN " --target 'x86_64:defconfig'",
		  "inconclusive; one of " C_SUSPECT "\n" },
		{ &boot, "2/2 boots at the head\n",
		  "zeroday build beta " C_PANIC " --target 'x86_64:tinyconfig'", "inconclusive\n" },
		{ &fixed, "0/0 boots at the head\n", "zeroday build beta " C_FIX " --target "
		  "'x86_64:tinyconfig' && zeroday boot BUILD-ID --repeat 1",
		  "culprit " C_PANIC ", confidence 0.5000\n" },
		{ &old, "a.c:1:2: warning: m", "zeroday build x y", "y bad\n" },
		{ &old_bare, NULL, NULL, NULL },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *details = status_finding_details(cases[i].f);
		g_autofree char *reproduce = status_finding_reproduce(cases[i].f);
		g_autofree char *log = status_finding_log(cases[i].f);

		g_test_message("case %zu", i);
		g_assert_cmpstr(details, ==, cases[i].details);
		g_assert_cmpstr(reproduce, ==, cases[i].reproduce);
		g_assert_cmpstr(log, ==, cases[i].log);
	}
}

static void test_format_time(void)
{
	g_autofree char *never = status_format_time(0);
	g_autofree char *when = status_format_time(1700000000);
	g_autofree char *none = status_short_id(NULL);
	g_autofree char *id = status_short_id(C_WARN);

	g_assert_cmpstr(never, ==, "never");
	g_assert_cmpstr(when, ==, "2023-11-14 22:13:20 UTC");
	g_assert_cmpstr(none, ==, "-");
	g_assert_cmpstr(id, ==, "aaaaaaaaaaaa");
}

int main(int argc, char **argv)
{
	struct repo_limits limits = { 0 };

	testlib_init(&argc, &argv);
	if (!repo_global_init(&limits, NULL))
		g_error("libgit2 did not initialise");
	g_test_add_func("/trees/add", test_add);
	for (size_t i = 0; i < G_N_ELEMENTS(add_cases); i++) {
		g_autofree char *name = g_strdup_printf("/trees/add-refused/%s", add_cases[i].desc);

		g_test_add_data_func(name, &add_cases[i], test_add_refused);
	}
	for (size_t i = 0; i < G_N_ELEMENTS(edit_cases); i++) {
		g_autofree char *name = g_strdup_printf("/trees/edit/%s", edit_cases[i].desc);

		g_test_add_data_func(name, &edit_cases[i], test_edit);
	}
	for (size_t i = 0; i < G_N_ELEMENTS(edit_refused_cases); i++) {
		g_autofree char *name = g_strdup_printf("/trees/edit-refused/%s",
							edit_refused_cases[i].desc);

		g_test_add_data_func(name, &edit_refused_cases[i], test_edit_refused);
	}
	g_test_add_func("/trees/mail-settings", test_mail_settings);
	g_test_add_func("/trees/blacklist", test_blacklist);
	g_test_add_func("/trees/remove", test_remove);
	g_test_add_func("/status/stored-state", test_status);
	g_test_add_func("/status/empty", test_status_empty);
	g_test_add_func("/status/structured", test_status_structured);
	g_test_add_func("/status/finding-render", test_finding_render);
	g_test_add_func("/status/format-time", test_format_time);
	return g_test_run();
}
