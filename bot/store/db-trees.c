/*
 * The store's trees, their branches, head events and the commits selected
 * for testing: see db.h.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <string.h>

#include "bot/bot.h"
#include "bot/store/db-private.h"

/* Trees. */

static const char *const policy_names[] = {
	[TREE_REBASABLE] = "rebasable",
	[TREE_NON_REBASABLE] = "non-rebasable",
};

const char *db_policy_name(enum tree_policy policy)
{
	g_return_val_if_fail(policy < G_N_ELEMENTS(policy_names), NULL);
	return policy_names[policy];
}

bool db_policy_parse(const char *name, enum tree_policy *out)
{
	for (size_t i = 0; i < G_N_ELEMENTS(policy_names); i++) {
		if (strcmp(name, policy_names[i]) == 0) {
			*out = (enum tree_policy)i;
			return true;
		}
	}
	return false;
}

void tree_row_free(struct tree_row *row)
{
	if (!row)
		return;
	g_free(row->name);
	g_free(row->url);
	g_strfreev(row->branches);
	g_strfreev(row->blacklist);
	g_free(row->base);
	g_strfreev(row->recipients);
	g_free(row->last_error);
	g_strfreev(row->targets);
	g_strfreev(row->lists);
	g_strfreev(row->prefixes);
	g_free(row->subscriber);
	g_strfreev(row->payloads);
	g_free(row);
}

#define TREE_COLUMNS \
	"id, name, url, policy, branches, blacklist, base, recipients, created, " \
	"last_poll, last_error, targets, lists, private, mail_clean, prefixes, subscriber, regzbot, " \
	"payloads"

static void *tree_read(sqlite3_stmt *stmt)
{
	struct tree_row *row = g_new0(struct tree_row, 1);
	const char *policy = (const char *)sqlite3_column_text(stmt, 3);

	row->id = sqlite3_column_int64(stmt, 0);
	row->name = db_col_text(stmt, 1);
	row->url = db_col_text(stmt, 2);
	if (!db_policy_parse(policy ? policy : "", &row->policy))
		g_assert_not_reached(); /* the CHECK constraint guarantees it */
	row->branches = db_col_list(stmt, 4);
	row->blacklist = db_col_list(stmt, 5);
	row->base = db_col_text(stmt, 6);
	row->recipients = db_col_list(stmt, 7);
	row->created = sqlite3_column_int64(stmt, 8);
	row->last_poll = sqlite3_column_int64(stmt, 9);
	row->last_error = db_col_text(stmt, 10);
	row->targets = db_col_list(stmt, 11);
	row->lists = db_col_list(stmt, 12);
	row->private = sqlite3_column_int(stmt, 13) != 0;
	row->mail_clean = sqlite3_column_int(stmt, 14) != 0;
	row->prefixes = db_col_list(stmt, 15);
	row->subscriber = db_col_text(stmt, 16);
	row->regzbot = sqlite3_column_int(stmt, 17) != 0;
	row->payloads = db_col_list(stmt, 18);
	return row;
}

/*
 * Runs @sql, an INSERT or UPDATE of @row: name..recipients are parameters
 * 1..7, @eighth (created, or the id to update) 8, targets 9, lists,
 * private and mail_clean 10..12, prefixes 13, subscriber 14, regzbot 15,
 * payloads 16.
 */
static bool tree_write(struct db *db, const char *sql, const struct tree_row *row, gint64 eighth,
		       GError **error)
{
	g_autofree char *branches = db_join_list(row->branches);
	g_autofree char *blacklist = db_join_list(row->blacklist);
	g_autofree char *recipients = db_join_list(row->recipients);
	g_autofree char *targets = db_join_list(row->targets);
	g_autofree char *lists = db_join_list(row->lists);
	g_autofree char *prefixes = db_join_list(row->prefixes);
	g_autofree char *payloads = db_join_list(row->payloads);

	return db_run(db, error, sql, "tttttttittnnttnt", row->name, row->url,
		      db_policy_name(row->policy), branches, blacklist, row->base, recipients,
		      eighth, targets, lists, (int)row->private, (int)row->mail_clean, prefixes,
		      row->subscriber, (int)row->regzbot, payloads);
}

bool db_tree_insert(struct db *db, struct tree_row *row, GError **error)
{
	g_autoptr(GError) local = NULL;

	if (!tree_write(db,
			"INSERT INTO trees (name, url, policy, branches, blacklist, base, "
			"recipients, created, targets, lists, private, mail_clean, prefixes, "
			"subscriber, regzbot, payloads) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, "
			"?10, ?11, ?12, ?13, ?14, ?15, ?16)", row, row->created, &local)) {
		/* The only unique column an insert can violate is the name. */
		if (g_error_matches(local, BOT_ERROR, BOT_ERROR_EXISTS))
			g_set_error(error, BOT_ERROR, BOT_ERROR_EXISTS,
				    "a tree named '%s' already exists", row->name);
		else
			g_propagate_error(error, g_steal_pointer(&local));
		return false;
	}
	row->id = sqlite3_last_insert_rowid(db->sql);
	/* A tree of that name again: what the old one left is this one's now. */
	return db_tree_forgotten(db, row->name, error);
}

struct tree_row *db_tree_get(struct db *db, const char *name, GError **error)
{
	gpointer row = NULL;

	if (!db_one(db, &row, tree_read, error,
		    "SELECT " TREE_COLUMNS " FROM trees WHERE name = ?1", "t", name))
		return NULL;
	if (!row)
		g_set_error(error, BOT_ERROR, BOT_ERROR_NOT_FOUND, "no tree named '%s'", name);
	return row;
}

GPtrArray *db_tree_list(struct db *db, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)tree_row_free);

	if (!db_list(db, out, tree_read, error, "SELECT " TREE_COLUMNS " FROM trees ORDER BY name",
		     ""))
		return NULL;
	return g_steal_pointer(&out);
}

bool db_tree_update(struct db *db, const struct tree_row *row, GError **error)
{
	return tree_write(db,
			  "UPDATE trees SET name = ?1, url = ?2, policy = ?3, branches = ?4, "
			  "blacklist = ?5, base = ?6, recipients = ?7, targets = ?9, lists = ?10, "
			  "private = ?11, mail_clean = ?12, prefixes = ?13, subscriber = ?14, "
			  "regzbot = ?15, payloads = ?16 "
			  "WHERE id = ?8", row, row->id, error);
}

bool db_tree_delete(struct db *db, const char *name, GError **error)
{
	if (!db_run(db, error, "DELETE FROM trees WHERE name = ?1", "t", name))
		return false;
	if (db_changes(db) == 0) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_NOT_FOUND, "no tree named '%s'", name);
		return false;
	}
	return db_run(db, error,
		      "INSERT OR REPLACE INTO trees_removed (name, removed) VALUES (?1, ?2)", "ti",
		      name, g_get_real_time() / G_USEC_PER_SEC);
}

static void *name_read(sqlite3_stmt *stmt)
{
	return g_strdup((const char *)sqlite3_column_text(stmt, 0));
}

GPtrArray *db_trees_removed(struct db *db, GError **error)
{
	g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);

	if (!db_list(db, names, name_read, error, "SELECT name FROM trees_removed ORDER BY name",
		     ""))
		return NULL;
	return g_steal_pointer(&names);
}

bool db_tree_forgotten(struct db *db, const char *name, GError **error)
{
	return db_run(db, error, "DELETE FROM trees_removed WHERE name = ?1", "t", name);
}

bool db_tree_polled(struct db *db, gint64 tree_id, gint64 when, const char *message,
		    GError **error)
{
	return db_run(db, error, "UPDATE trees SET last_poll = ?1, last_error = ?2 WHERE id = ?3",
		      "iti", when, message, tree_id);
}

/* Branches. */

static const char *const branch_states[] = {
	[BRANCH_TESTED] = "tested",
	[BRANCH_SKIPPED] = "skipped",
	[BRANCH_DELETED] = "deleted",
};

const char *db_branch_state_name(enum branch_state state)
{
	g_return_val_if_fail(state < G_N_ELEMENTS(branch_states), NULL);
	return branch_states[state];
}

static enum branch_state branch_state_parse(const char *name)
{
	for (size_t i = 0; i < G_N_ELEMENTS(branch_states); i++) {
		if (name && strcmp(name, branch_states[i]) == 0)
			return (enum branch_state)i;
	}
	g_warning("unknown branch state '%s' in the database", name ? name : "(null)");
	return BRANCH_SKIPPED;
}

void branch_row_free(struct branch_row *row)
{
	if (!row)
		return;
	g_free(row->name);
	g_free(row->head);
	g_free(row->reason);
	g_free(row);
}

static void *branch_read(sqlite3_stmt *stmt)
{
	struct branch_row *row = g_new0(struct branch_row, 1);

	row->name = db_col_text(stmt, 0);
	row->head = db_col_text(stmt, 1);
	row->state = branch_state_parse((const char *)sqlite3_column_text(stmt, 2));
	row->reason = db_col_text(stmt, 3);
	row->updated = sqlite3_column_int64(stmt, 4);
	return row;
}

GPtrArray *db_branch_list(struct db *db, gint64 tree_id, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)branch_row_free);

	if (!db_list(db, out, branch_read, error,
		     "SELECT name, head, state, reason, updated FROM branches WHERE tree_id = ?1 "
		     "ORDER BY name", "i", tree_id))
		return NULL;
	return g_steal_pointer(&out);
}

bool db_branch_put(struct db *db, gint64 tree_id, const struct branch_row *row, GError **error)
{
	return db_run(db, error,
		      "INSERT INTO branches (tree_id, name, head, state, reason, updated) "
		      "VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (tree_id, name) DO UPDATE SET "
		      "head = excluded.head, state = excluded.state, reason = excluded.reason, "
		      "updated = excluded.updated",
		      "itttti", tree_id, row->name, row->head, db_branch_state_name(row->state),
		      row->reason, row->updated);
}

/* Head events. */

static const char *const head_changes[] = {
	[HEAD_NEW] = "new",
	[HEAD_FORWARD] = "forward",
	[HEAD_FORCED] = "forced",
	[HEAD_DELETED] = "deleted",
};

const char *db_head_change_name(enum head_change change)
{
	g_return_val_if_fail(change < G_N_ELEMENTS(head_changes), NULL);
	return head_changes[change];
}

static const char *const head_actions[] = {
	[HEAD_ACTION_QUEUED] = "queued",
	[HEAD_ACTION_SKIPPED] = "skipped",
	[HEAD_ACTION_NONE] = "none",
};

const char *db_head_action_name(enum head_action action)
{
	g_return_val_if_fail(action < G_N_ELEMENTS(head_actions), NULL);
	return head_actions[action];
}

static enum head_action head_action_parse(const char *name)
{
	for (size_t i = 0; i < G_N_ELEMENTS(head_actions); i++) {
		if (name && strcmp(name, head_actions[i]) == 0)
			return (enum head_action)i;
	}
	g_warning("unknown head event action '%s' in the database", name ? name : "(null)");
	return HEAD_ACTION_NONE;
}

void head_event_free(struct head_event *event)
{
	if (!event)
		return;
	g_free(event->tree);
	g_free(event->branch);
	g_free(event->old_head);
	g_free(event->new_head);
	g_free(event->reason);
	g_free(event);
}

bool db_event_add(struct db *db, gint64 tree_id, struct head_event *event, GError **error)
{
	if (!db_run(db, error,
		    "INSERT INTO head_events (tree_id, branch, old_head, new_head, change, action, "
		    "reason, selected, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
		    "ittttttii", tree_id, event->branch, event->old_head, event->new_head,
		    db_head_change_name(event->change), db_head_action_name(event->action),
		    event->reason, (gint64)event->selected, event->when))
		return false;
	event->id = sqlite3_last_insert_rowid(db->sql);
	return true;
}

static void *event_read(sqlite3_stmt *stmt)
{
	struct head_event *e = g_new0(struct head_event, 1);

	e->id = sqlite3_column_int64(stmt, 0);
	e->tree = db_col_text(stmt, 1);
	e->branch = db_col_text(stmt, 2);
	e->old_head = db_col_text(stmt, 3);
	e->new_head = db_col_text(stmt, 4);
	e->change = (enum head_change)db_name_index(head_changes, G_N_ELEMENTS(head_changes),
						    (const char *)sqlite3_column_text(stmt, 5),
						    HEAD_NEW);
	e->action = head_action_parse((const char *)sqlite3_column_text(stmt, 6));
	e->reason = db_col_text(stmt, 7);
	e->selected = sqlite3_column_int(stmt, 8);
	e->when = sqlite3_column_int64(stmt, 9);
	return e;
}

GPtrArray *db_event_recent(struct db *db, unsigned limit, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)head_event_free);

	if (!db_list(db, out, event_read, error,
		     "SELECT e.id, t.name, e.branch, e.old_head, e.new_head, e.change, e.action, "
		     "e.reason, e.selected, e.at FROM head_events e "
		     "JOIN trees t ON t.id = e.tree_id ORDER BY e.id DESC LIMIT ?1", "i",
		     (gint64)limit))
		return NULL;
	return g_steal_pointer(&out);
}

/* Selected commits. */

static const char *const test_states[] = {
	[TEST_PENDING] = "pending",
	[TEST_SCHEDULED] = "scheduled",
	[TEST_CANCELLED] = "cancelled",
};

const char *db_test_state_name(enum test_state state)
{
	g_return_val_if_fail(state < G_N_ELEMENTS(test_states), NULL);
	return test_states[state];
}

static enum test_state test_state_parse(const char *name)
{
	for (size_t i = 0; i < G_N_ELEMENTS(test_states); i++) {
		if (name && strcmp(name, test_states[i]) == 0)
			return (enum test_state)i;
	}
	g_warning("unknown test state '%s' in the database", name ? name : "(null)");
	return TEST_PENDING;
}

void test_row_free(struct test_row *row)
{
	if (!row)
		return;
	g_free(row->tree);
	g_free(row->branch);
	g_free(row->commit);
	g_free(row->summary);
	g_free(row);
}

bool db_test_add(struct db *db, gint64 tree_id, const char *branch, const char *commit,
		 const char *summary, gint64 event_id, bool *added, GError **error)
{
	if (!db_run(db, error,
		    "INSERT OR IGNORE INTO tests (tree_id, commit_id, branch, summary, event_id, "
		    "queued) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
		    "itttii", tree_id, commit, branch, summary, event_id,
		    g_get_real_time() / G_USEC_PER_SEC))
		return false;
	*added = db_changes(db) == 1;
	return true;
}

static void commit_read(sqlite3_stmt *row, void *data)
{
	g_strv_builder_add(data, (const char *)sqlite3_column_text(row, 0));
}

char **db_test_series(struct db *db, gint64 tree_id, const char *commit, GError **error)
{
	g_autoptr(GStrvBuilder) out = g_strv_builder_new();

	if (!db_rows(db, commit_read, out, error,
		     "SELECT s.commit_id FROM tests c JOIN tests s ON s.tree_id = c.tree_id "
		     "AND s.event_id = c.event_id WHERE c.tree_id = ?1 AND c.commit_id = ?2 "
		     "ORDER BY s.rowid", "it", tree_id, commit))
		return NULL;
	return g_strv_builder_end(out);
}

char *db_test_branch(struct db *db, gint64 tree_id, const char *commit, GError **error)
{
	char *branch = NULL;

	db_text(db, &branch, NULL, error,
		"SELECT branch FROM tests WHERE tree_id = ?1 AND commit_id = ?2", "it", tree_id,
		commit);
	return branch;
}

bool db_test_known(struct db *db, gint64 tree_id, const char *commit, bool *known,
		   GError **error)
{
	gint64 one = 0;

	if (!db_int(db, &one, 0, error,
		    "SELECT 1 FROM tests WHERE tree_id = ?1 AND commit_id = ?2", "it", tree_id,
		    commit))
		return false;
	*known = one == 1;
	return true;
}

static void *test_read(sqlite3_stmt *stmt)
{
	struct test_row *row = g_new0(struct test_row, 1);

	row->tree = db_col_text(stmt, 0);
	row->branch = db_col_text(stmt, 1);
	row->commit = db_col_text(stmt, 2);
	row->summary = db_col_text(stmt, 3);
	row->state = test_state_parse((const char *)sqlite3_column_text(stmt, 4));
	row->queued = sqlite3_column_int64(stmt, 5);
	row->tree_id = sqlite3_column_int64(stmt, 6);
	row->head = sqlite3_column_int(stmt, 7) == 1;
	return row;
}

GPtrArray *db_test_pending(struct db *db, unsigned limit, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)test_row_free);

	if (!db_list(db, out, test_read, error,
		     "SELECT t.name, s.branch, s.commit_id, s.summary, s.state, s.queued, t.id, "
		     "b.head = s.commit_id FROM tests s JOIN trees t ON t.id = s.tree_id "
		     "LEFT JOIN branches b ON b.tree_id = s.tree_id AND b.name = s.branch "
		     "WHERE s.state = 'pending' ORDER BY s.queued, s.rowid LIMIT ?1", "i",
		     (gint64)limit))
		return NULL;
	return g_steal_pointer(&out);
}

bool db_test_count_pending(struct db *db, gint64 *count, GError **error)
{
	return db_int(db, count, 0, error, "SELECT count(*) FROM tests WHERE state = 'pending'",
		      "");
}

bool db_test_scheduled(struct db *db, gint64 tree_id, const char *commit, GError **error)
{
	return db_run(db, error,
		      "UPDATE tests SET state = 'scheduled' WHERE tree_id = ?1 AND commit_id = ?2",
		      "it", tree_id, commit);
}

char *db_head_previous(struct db *db, gint64 tree_id, const char *head, GError **error)
{
	char *previous = NULL;

	db_text(db, &previous, NULL, error,
		"SELECT e.old_head FROM head_events e WHERE e.tree_id = ?1 AND e.new_head = ?2 "
		"AND e.old_head IS NOT NULL AND e.change IN ('forward', 'forced') "
		"AND EXISTS (SELECT 1 FROM tests t WHERE t.tree_id = e.tree_id "
		"AND t.commit_id = e.old_head) ORDER BY e.id DESC LIMIT 1", "it", tree_id, head);
	return previous;
}

bool db_tree_non_rebasable(struct db *db, gint64 tree_id, bool *non_rebasable, GError **error)
{
	g_autofree char *policy = NULL;

	if (!db_text(db, &policy, NULL, error, "SELECT policy FROM trees WHERE id = ?1", "i",
		     tree_id))
		return false;
	/*
	 * policy is NOT NULL, so none means no tree: a job's tree is deleted
	 * with its jobs, so this is the store failing, not a NOT_FOUND to act on.
	 */
	if (!policy) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_FAILED,
			    "database: reading a tree's policy: no tree %" G_GINT64_FORMAT,
			    tree_id);
		return false;
	}
	*non_rebasable = strcmp(policy, "non-rebasable") == 0;
	return true;
}

bool db_branch_cancel(struct db *db, gint64 tree_id, const char *pattern, unsigned *jobs,
		      unsigned *reports, GError **error)
{
	/* A names_pattern_check() pattern holds no '[': GLOB matches as fnmatch(3) without flags. */
	static const char *const sql[] = {
		"DELETE FROM jobs WHERE tree_id = ?1 AND state = 'queued' AND kind = 'build' "
		"AND commit_id IN (SELECT commit_id FROM tests WHERE tree_id = ?1 "
		"AND branch GLOB ?2)",
		"UPDATE outbox SET state = 'error', last_error = 'not sent: its branch was "
		"blacklisted' WHERE state = 'queued' AND finding_id IN (SELECT id FROM findings "
		"WHERE tree_id = ?1 AND branch GLOB ?2)",
		"UPDATE tests SET state = 'cancelled' WHERE tree_id = ?1 AND state = 'pending' "
		"AND branch GLOB ?2",
	};
	unsigned *counts[] = { jobs, reports, NULL };

	g_assert(!strchr(pattern, '['));
	for (size_t i = 0; i < G_N_ELEMENTS(sql); i++) {
		if (!db_run(db, error, sql[i], "it", tree_id, pattern))
			return false;
		if (counts[i])
			*counts[i] = (unsigned)db_changes(db);
	}
	return true;
}
