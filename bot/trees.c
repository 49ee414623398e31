/*
 * Tree operations shared by the command line and mail commands: see trees.h.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <string.h>

#include "bot/bot.h"
#include "bot/trees.h"
#include "engine/build.h"
#include "engine/names.h"
#include "mail/address.h"

static enum names_url_flags url_flags(const struct config *config)
{
	return (config->allow_ssh ? NAMES_URL_ALLOW_SSH : 0) |
	       (config->allow_local ? NAMES_URL_ALLOW_LOCAL : 0);
}

static bool check_patterns(const char *const *patterns, GError **error)
{
	for (const char *const *p = patterns; p && *p; p++) {
		if (!names_pattern_check(*p, error))
			return false;
	}
	return true;
}

static bool check_base(const char *base, GError **error)
{
	g_auto(GStrv) parts = g_strsplit(base, "/", 2);

	if (!parts[0] || !parts[1]) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_USAGE,
			    "base '%s' must be TREE/BRANCH, e.g. mainline/master", base);
		return false;
	}
	return names_tree_check(parts[0], error) && repo_branch_check(parts[1], error);
}

static bool check_targets(const char *const *targets, GError **error)
{
	g_autofree char *fragments = config_fragment_dir();

	for (const char *const *t = targets; t && *t; t++) {
		struct build_target parsed;

		if (!build_target_parse(&parsed, *t, fragments, error))
			return false;
		build_target_clear(&parsed);
	}
	return true;
}

/* Normalizes each address of @in into a new NULL-terminated list (caller frees). */
static char **normalize_addresses(const char *const *in, GError **error)
{
	g_autoptr(GStrvBuilder) b = g_strv_builder_new();

	for (const char *const *a = in; a && *a; a++) {
		char *n = address_normalize(*a, error);

		if (!n)
			return NULL;
		g_strv_builder_add(b, n);
		g_free(n);
	}
	return g_strv_builder_end(b);
}

/* Adds the address_key() of each address of @list to the set @keys. */
static void add_keys(GHashTable *keys, char **list)
{
	for (char **i = list; i && *i; i++)
		g_hash_table_add(keys, address_key(*i));
}

/*
 * Returns the normalized addresses of @list without those in @drop, plus
 * those of @add it does not hold (caller frees): one mailbox once,
 * compared without case (address_key()), the first spelling kept.
 * Every address added or dropped is checked first.
 */
static char **edit_addresses(char **list, const char *const *add, const char *const *drop,
			     GError **error)
{
	g_auto(GStrv) added = normalize_addresses(add, error);
	g_auto(GStrv) dropped = added ? normalize_addresses(drop, error) : NULL;
	g_autoptr(GHashTable) gone = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	g_autoptr(GStrvBuilder) b = g_strv_builder_new();

	if (!added || !dropped)
		return NULL;
	add_keys(gone, dropped);
	for (char **i = list; i && *i; i++) {
		char *key = address_key(*i);

		if (g_hash_table_contains(gone, key))
			g_free(key);
		else if (g_hash_table_add(seen, key))
			g_strv_builder_add(b, *i);
	}
	/* An address both added and dropped is dropped, when the list held it. */
	add_keys(seen, list);
	for (char **i = added; *i; i++) {
		if (g_hash_table_add(seen, address_key(*i)))
			g_strv_builder_add(b, *i);
	}
	return g_strv_builder_end(b);
}

/* Returns a copy of @list, an empty list for NULL (caller frees). */
static char **strv_copy(const char *const *list)
{
	return list ? g_strdupv((char **)list) : g_new0(char *, 1);
}

/* Returns a copy of @list without the items in @drop, plus @add (caller frees). */
static char **edit_list(char **list, const char *const *add, const char *const *drop)
{
	g_autoptr(GStrvBuilder) b = g_strv_builder_new();

	for (char **i = list; i && *i; i++) {
		if (!drop || !g_strv_contains(drop, *i))
			g_strv_builder_add(b, *i);
	}
	for (const char *const *i = add; i && *i; i++) {
		if (!list || !g_strv_contains((const char *const *)list, *i))
			g_strv_builder_add(b, *i);
	}
	return g_strv_builder_end(b);
}

/*
 * A subject prefix is one tag word of "[PATCH net-next v2 1/3]": 1 to 64
 * of [A-Za-z0-9._-], compared without case.
 */
static bool check_prefixes(const char *const *prefixes, GError **error)
{
	for (const char *const *p = prefixes; p && *p; p++) {
		size_t len = strlen(*p);

		if (len == 0 || len > 64 || strspn(*p, "abcdefghijklmnopqrstuvwxyz"
					    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != len) {
			g_set_error(error, BOT_ERROR, BOT_ERROR_USAGE,
				    "a subject prefix is 1 to 64 of A-Z a-z 0-9 . _ -, not '%s'",
				    *p);
			return false;
		}
	}
	return true;
}

/* @list without @drop, plus @add, all lower case (caller frees). */
static char **edit_prefixes(char **list, const char *const *add, const char *const *drop)
{
	g_auto(GStrv) lower_add = NULL;
	g_auto(GStrv) lower_drop = NULL;
	g_autoptr(GStrvBuilder) a = g_strv_builder_new();
	g_autoptr(GStrvBuilder) d = g_strv_builder_new();

	for (const char *const *p = add; p && *p; p++) {
		g_autofree char *lower = g_ascii_strdown(*p, -1);

		g_strv_builder_add(a, lower);
	}
	for (const char *const *p = drop; p && *p; p++) {
		g_autofree char *lower = g_ascii_strdown(*p, -1);

		g_strv_builder_add(d, lower);
	}
	lower_add = g_strv_builder_end(a);
	lower_drop = g_strv_builder_end(d);
	return edit_list(list, (const char *const *)lower_add, (const char *const *)lower_drop);
}

struct tree_row *trees_add(struct db *db, const struct config *config,
			   const struct tree_spec *spec, GError **error)
{
	zd_autoptr(tree_row) row = NULL;

	if (!names_tree_check(spec->name, error) ||
	    !names_url_check(spec->url, url_flags(config), error) ||
	    !check_patterns(spec->branches, error) || !check_patterns(spec->blacklist, error) ||
	    (spec->base && !check_base(spec->base, error)) || !check_targets(spec->targets, error) ||
	    !config_payloads_check(spec->payloads, error))
		return NULL;
	row = g_new0(struct tree_row, 1);
	row->name = g_strdup(spec->name);
	row->targets = strv_copy(spec->targets);
	row->payloads = strv_copy(spec->payloads);
	row->url = g_strdup(spec->url);
	row->policy = spec->non_rebasable ? TREE_NON_REBASABLE : TREE_REBASABLE;
	row->branches = spec->branches && spec->branches[0] ? strv_copy(spec->branches)
							    : g_strsplit("*", ",", -1);
	row->blacklist = strv_copy(spec->blacklist);
	row->base = g_strdup(spec->base);
	row->recipients = edit_addresses(NULL, spec->recipients, NULL, error);
	if (!row->recipients)
		return NULL;
	row->lists = edit_addresses(NULL, spec->lists, NULL, error);
	if (!row->lists)
		return NULL;
	row->private = spec->private;
	row->mail_clean = spec->mail_clean;
	row->regzbot = spec->regzbot;
	if (!check_prefixes(spec->prefixes, error))
		return NULL;
	row->prefixes = edit_prefixes(NULL, spec->prefixes, NULL);
	row->subscriber = g_strdup(spec->subscriber);
	row->created = g_get_real_time() / G_USEC_PER_SEC;
	if (!db_tx_begin(db, error) || !db_tree_insert(db, row, error) ||
	    !db_tx_commit(db, error)) {
		db_tx_rollback(db);
		return NULL;
	}
	return g_steal_pointer(&row);
}

struct tree_row *trees_edit(struct db *db, const struct config *config, const char *name,
			    const struct tree_edit *edit, GError **error)
{
	zd_autoptr(tree_row) t = NULL;
	char **tmp;

	g_return_val_if_fail(!edit->url || config, NULL);
	if (!db_tx_begin(db, error))
		return NULL;
	t = db_tree_get(db, name, error);
	if (!t)
		goto fail;
	if (edit->url) {
		if (!names_url_check(edit->url, url_flags(config), error))
			goto fail;
		g_free(t->url);
		t->url = g_strdup(edit->url);
	}
	if (edit->policy && !db_policy_parse(edit->policy, &t->policy)) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_USAGE,
			    "policy must be rebasable or non-rebasable, not '%s'", edit->policy);
		goto fail;
	}
	if (edit->branches) {
		if (!check_patterns(edit->branches, error))
			goto fail;
		g_strfreev(t->branches);
		t->branches = strv_copy(edit->branches);
	}
	if (!check_patterns(edit->blacklist_add, error) ||
	    !check_patterns(edit->blacklist_drop, error))
		goto fail;
	if (edit->targets) {
		if (!check_targets(edit->targets, error))
			goto fail;
		g_strfreev(t->targets);
		t->targets = strv_copy(edit->targets);
	} else if (edit->default_targets) {
		g_strfreev(t->targets);
		t->targets = g_new0(char *, 1);
	}
	if (edit->payloads) {
		if (!config_payloads_check(edit->payloads, error))
			goto fail;
		g_strfreev(t->payloads);
		t->payloads = strv_copy(edit->payloads);
	} else if (edit->default_payloads) {
		g_strfreev(t->payloads);
		t->payloads = g_new0(char *, 1);
	}
	tmp = edit_list(t->blacklist, edit->blacklist_add, edit->blacklist_drop);
	g_strfreev(t->blacklist);
	t->blacklist = tmp;
	if (edit->base) {
		if (*edit->base && !check_base(edit->base, error))
			goto fail;
		g_free(t->base);
		t->base = *edit->base ? g_strdup(edit->base) : NULL;
	}
	tmp = edit_addresses(t->recipients, edit->recipients_add, edit->recipients_drop, error);
	if (!tmp)
		goto fail;
	g_strfreev(t->recipients);
	t->recipients = tmp;
	tmp = edit_addresses(t->lists, edit->lists_add, edit->lists_drop, error);
	if (!tmp)
		goto fail;
	g_strfreev(t->lists);
	t->lists = tmp;
	if (edit->private != TREE_KEEP)
		t->private = edit->private == TREE_ON;
	if (edit->mail_clean != TREE_KEEP)
		t->mail_clean = edit->mail_clean == TREE_ON;
	if (edit->regzbot != TREE_KEEP)
		t->regzbot = edit->regzbot == TREE_ON;
	if (!check_prefixes(edit->prefixes_add, error))
		goto fail;
	tmp = edit_prefixes(t->prefixes, edit->prefixes_add, edit->prefixes_drop);
	g_strfreev(t->prefixes);
	t->prefixes = tmp;
	if (!db_tree_update(db, t, error) || !db_tx_commit(db, error))
		goto fail;
	return g_steal_pointer(&t);
fail:
	db_tx_rollback(db);
	return NULL;
}

bool trees_blacklist(struct db *db, const char *name, const char *pattern, bool add,
		     GError **error)
{
	const char *const one[] = { pattern, NULL };
	struct tree_edit edit = {
		.blacklist_add = add ? one : NULL,
		.blacklist_drop = add ? NULL : one,
	};
	zd_autoptr(tree_row) t = trees_edit(db, NULL, name, &edit, error);

	return t != NULL;
}

bool trees_remove(struct db *db, struct repo *repo, const char *name, GError **error)
{
	g_autoptr(GError) refs_error = NULL;

	if (!db_tx_begin(db, error) || !db_tree_delete(db, name, error) ||
	    !db_tx_commit(db, error)) {
		db_tx_rollback(db);
		return false;
	}
	/* The refs only keep objects alive; stale ones are harmless. */
	if (repo && !repo_forget_tree(repo, name, &refs_error))
		g_warning("removed tree %s, but not its refs: %s", name, refs_error->message);
	return true;
}

bool trees_holds_commit(struct db *db, struct repo *repo, const struct tree_row *t,
			const char *commit, bool *holds, GError **error)
{
	g_autoptr(GPtrArray) branches = db_branch_list(db, t->id, error);

	*holds = false;
	if (!branches)
		return false;
	for (guint i = 0; i < branches->len && !*holds; i++) {
		const struct branch_row *b = branches->pdata[i];
		g_autoptr(GError) unknown = NULL;

		if (b->state == BRANCH_TESTED)
			*holds = repo_is_ancestor(repo, commit, b->head, &unknown) == 1;
	}
	return true;
}
