/*
 * The store: see db.h. The only file that includes <sqlite3.h>.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <string.h>

#include <sqlite3.h>

#include "bot/bot.h"
#include "bot/db.h"
#include "engine/diag.h"

struct db {
	sqlite3 *sql;
};

/*
 * Schema migrations: migrations[i] takes user_version i to i + 1. Never
 * edit a released step; append a new one and bump DB_SCHEMA_VERSION.
 */
static const char *const migrations[] = {
	/* 0 -> 1: trees, their branches, head changes and selected commits. */
	"CREATE TABLE trees ("
	"  id INTEGER PRIMARY KEY,"
	"  name TEXT NOT NULL UNIQUE,"
	"  url TEXT NOT NULL,"
	"  policy TEXT NOT NULL CHECK (policy IN ('rebasable', 'non-rebasable')),"
	"  branches TEXT NOT NULL DEFAULT '*',"
	"  blacklist TEXT NOT NULL DEFAULT '',"
	"  base TEXT,"
	"  created INTEGER NOT NULL,"
	"  last_poll INTEGER NOT NULL DEFAULT 0,"
	"  last_error TEXT);"
	"CREATE TABLE branches ("
	"  tree_id INTEGER NOT NULL REFERENCES trees(id) ON DELETE CASCADE,"
	"  name TEXT NOT NULL,"
	"  head TEXT NOT NULL,"
	"  state TEXT NOT NULL,"
	"  reason TEXT,"
	"  updated INTEGER NOT NULL,"
	"  PRIMARY KEY (tree_id, name));"
	"CREATE TABLE head_events ("
	"  id INTEGER PRIMARY KEY,"
	"  tree_id INTEGER NOT NULL REFERENCES trees(id) ON DELETE CASCADE,"
	"  branch TEXT NOT NULL,"
	"  old_head TEXT,"
	"  new_head TEXT,"
	"  change TEXT NOT NULL,"
	"  action TEXT NOT NULL,"
	"  reason TEXT,"
	"  selected INTEGER NOT NULL DEFAULT 0,"
	"  at INTEGER NOT NULL);"
	"CREATE TABLE tests ("
	"  tree_id INTEGER NOT NULL REFERENCES trees(id) ON DELETE CASCADE,"
	"  commit_id TEXT NOT NULL,"
	"  branch TEXT NOT NULL,"
	"  summary TEXT NOT NULL DEFAULT '',"
	"  event_id INTEGER REFERENCES head_events(id) ON DELETE SET NULL,"
	"  state TEXT NOT NULL DEFAULT 'pending',"
	"  queued INTEGER NOT NULL,"
	"  PRIMARY KEY (tree_id, commit_id));",

	/* 1 -> 2: tree mail recipients; indexes for status and the queue. */
	"ALTER TABLE trees ADD COLUMN recipients TEXT NOT NULL DEFAULT '';"
	"CREATE INDEX tests_by_state ON tests(state, queued);"
	"CREATE INDEX head_events_by_time ON head_events(at);",

	/* 2 -> 3: build targets per tree; builds, their diagnostics and verdicts. */
	"ALTER TABLE trees ADD COLUMN targets TEXT NOT NULL DEFAULT '';"
	"CREATE TABLE builds ("
	"  id INTEGER PRIMARY KEY,"
	"  source TEXT NOT NULL,"
	"  commit_id TEXT NOT NULL,"
	"  target TEXT NOT NULL,"
	"  status TEXT NOT NULL,"
	"  reason TEXT,"
	"  seconds REAL NOT NULL,"
	"  log_path TEXT,"
	"  config_path TEXT,"
	"  created INTEGER NOT NULL);"
	"CREATE INDEX builds_by_commit ON builds(source, commit_id, target);"
	"CREATE TABLE diagnostics ("
	"  build_id INTEGER NOT NULL REFERENCES builds(id) ON DELETE CASCADE,"
	"  seq INTEGER NOT NULL,"
	"  kind TEXT NOT NULL,"
	"  checker TEXT NOT NULL,"
	"  file TEXT NOT NULL,"
	"  line INTEGER NOT NULL,"
	"  col INTEGER NOT NULL,"
	"  function TEXT,"
	"  message TEXT NOT NULL,"
	"  fingerprint TEXT NOT NULL,"
	"  PRIMARY KEY (build_id, seq));"
	"CREATE TABLE verdicts ("
	"  build_id INTEGER PRIMARY KEY REFERENCES builds(id) ON DELETE CASCADE,"
	"  parent_build_id INTEGER REFERENCES builds(id) ON DELETE SET NULL,"
	"  verdict TEXT NOT NULL,"
	"  new_seqs TEXT NOT NULL DEFAULT '');",

	/* 3 -> 4: kernel images kept with their builds; boots. */
	"ALTER TABLE builds ADD COLUMN image_path TEXT;"
	"CREATE TABLE boots ("
	"  id INTEGER PRIMARY KEY,"
	"  build_id INTEGER REFERENCES builds(id) ON DELETE SET NULL,"
	"  image TEXT NOT NULL,"
	"  host TEXT NOT NULL,"
	"  seed INTEGER NOT NULL,"
	"  kind TEXT NOT NULL,"
	"  title TEXT NOT NULL,"
	"  fingerprint TEXT NOT NULL,"
	"  console_path TEXT,"
	"  seconds REAL NOT NULL,"
	"  attempts INTEGER NOT NULL,"
	"  created INTEGER NOT NULL);",

	/* 4 -> 5: the job queue. */
	"CREATE TABLE jobs ("
	"  id INTEGER PRIMARY KEY,"
	"  kind TEXT NOT NULL,"
	"  tree_id INTEGER NOT NULL REFERENCES trees(id) ON DELETE CASCADE,"
	"  commit_id TEXT NOT NULL,"
	"  target TEXT NOT NULL,"
	"  priority INTEGER NOT NULL,"
	"  state TEXT NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'running', 'done')),"
	"  lease_owner TEXT,"
	"  lease_until INTEGER,"
	"  claimed INTEGER,"
	"  attempts INTEGER NOT NULL DEFAULT 0,"
	"  result TEXT,"
	"  created INTEGER NOT NULL,"
	"  finished INTEGER,"
	"  UNIQUE (kind, tree_id, commit_id, target));"
	"CREATE INDEX jobs_by_state ON jobs(state, priority);",

	/* 5 -> 6: findings. */
	"CREATE TABLE findings ("
	"  id INTEGER PRIMARY KEY,"
	"  tree_id INTEGER REFERENCES trees(id) ON DELETE CASCADE,"
	"  branch TEXT,"
	"  culprit TEXT NOT NULL,"
	"  target TEXT NOT NULL,"
	"  kind TEXT NOT NULL,"
	"  fingerprint TEXT NOT NULL,"
	"  title TEXT NOT NULL,"
	"  details TEXT,"
	"  confidence REAL NOT NULL,"
	"  state TEXT NOT NULL DEFAULT 'open',"
	"  reproduce TEXT,"
	"  created INTEGER NOT NULL,"
	"  UNIQUE (culprit, fingerprint));",

	/* 6 -> 7: which head fixed a finding. */
	"ALTER TABLE findings ADD COLUMN fixed_by TEXT;",

	/*
	 * 7 -> 8: boots reusable per (build, boot set-up) and carrying their
	 * report's excerpt; findings keep the failure's rate and the
	 * bisection log apart from the diagnostic itself.
	 */
	"ALTER TABLE boots ADD COLUMN profile TEXT;"
	"ALTER TABLE boots ADD COLUMN excerpt TEXT;"
	"CREATE INDEX boots_by_build ON boots(build_id, profile);"
	"ALTER TABLE findings ADD COLUMN rate REAL NOT NULL DEFAULT 1.0;"
	"ALTER TABLE findings ADD COLUMN bisect_log TEXT;",

	/*
	 * 8 -> 9: jobs retried after temporary failures: how many, the last
	 * cause, and the time before which the job is not claimed again.
	 */
	"ALTER TABLE jobs ADD COLUMN failures INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE jobs ADD COLUMN last_error TEXT;"
	"ALTER TABLE jobs ADD COLUMN not_before INTEGER NOT NULL DEFAULT 0;",
};

G_STATIC_ASSERT(G_N_ELEMENTS(migrations) == DB_SCHEMA_VERSION);

static bool sql_error(struct db *db, GError **error, const char *what)
{
	int code = sqlite3_extended_errcode(db->sql);
	int primary = code & 0xff;
	enum bot_error ours = BOT_ERROR_FAILED;

	/* What the machine causes, and a retry may get past. */
	if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED || primary == SQLITE_FULL ||
	    primary == SQLITE_IOERR || primary == SQLITE_NOMEM)
		ours = BOT_ERROR_TEMPORARY;
	else if (code == SQLITE_CONSTRAINT_UNIQUE || code == SQLITE_CONSTRAINT_PRIMARYKEY)
		ours = BOT_ERROR_EXISTS;
	g_set_error(error, BOT_ERROR, ours, "database: %s: %s", what, sqlite3_errmsg(db->sql));
	return false;
}

static bool exec(struct db *db, const char *sql, GError **error)
{
	if (sqlite3_exec(db->sql, sql, NULL, NULL, NULL) != SQLITE_OK)
		return sql_error(db, error, sql);
	return true;
}

static sqlite3_stmt *prepare(struct db *db, const char *sql, GError **error)
{
	sqlite3_stmt *stmt = NULL;

	if (sqlite3_prepare_v2(db->sql, sql, -1, &stmt, NULL) != SQLITE_OK) {
		sql_error(db, error, sql);
		return NULL;
	}
	return stmt;
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(sqlite3_stmt, sqlite3_finalize)

/* Binds NULL for a NULL @text. */
static void bind_text(sqlite3_stmt *stmt, int i, const char *text)
{
	if (text)
		sqlite3_bind_text(stmt, i, text, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(stmt, i);
}

/* Runs a statement that returns no rows. */
static bool step_done(struct db *db, sqlite3_stmt *stmt, GError **error)
{
	if (sqlite3_step(stmt) != SQLITE_DONE)
		return sql_error(db, error, sqlite3_sql(stmt));
	return true;
}

/* Copies a text column out of sqlite's buffer; NULL stays NULL. */
static char *col_text(sqlite3_stmt *stmt, int i)
{
	const unsigned char *t = sqlite3_column_text(stmt, i);

	return t ? g_strdup((const char *)t) : NULL;
}

/* Lists are stored one item a line; items never hold a newline. */
static char *join_list(char **list)
{
	return g_strjoinv("\n", list ? list : (char *[]){ NULL });
}

static char **col_list(sqlite3_stmt *stmt, int i)
{
	const char *t = (const char *)sqlite3_column_text(stmt, i);

	if (!t || !*t)
		return g_new0(char *, 1);
	return g_strsplit(t, "\n", -1);
}

int db_schema_version(struct db *db)
{
	sqlite3_stmt *stmt = NULL;
	int v = -1;

	if (sqlite3_prepare_v2(db->sql, "PRAGMA user_version", -1, &stmt, NULL) == SQLITE_OK &&
	    sqlite3_step(stmt) == SQLITE_ROW)
		v = sqlite3_column_int(stmt, 0);
	sqlite3_finalize(stmt);
	return v;
}

static bool migrate(struct db *db, GError **error)
{
	int version;

	if (!db_tx_begin(db, error))
		return false;
	version = db_schema_version(db);
	if (version > DB_SCHEMA_VERSION) {
		db_tx_rollback(db);
		g_set_error(error, BOT_ERROR, BOT_ERROR_SCHEMA,
			    "database schema %d is newer than this zeroday's (%d)", version,
			    DB_SCHEMA_VERSION);
		return false;
	}
	for (; version < DB_SCHEMA_VERSION; version++) {
		g_autofree char *bump = g_strdup_printf("PRAGMA user_version = %d", version + 1);

		g_info("migrating the database schema from %d to %d", version, version + 1);
		if (!exec(db, migrations[version], error) || !exec(db, bump, error)) {
			db_tx_rollback(db);
			g_prefix_error(error, "schema migration %d -> %d: ", version, version + 1);
			return false;
		}
	}
	return db_tx_commit(db, error);
}

struct db *db_open(const char *path, GError **error)
{
	zd_autoptr(db) db = g_new0(struct db, 1);
	bool memory = strcmp(path, ":memory:") == 0;

	if (sqlite3_open_v2(path, &db->sql, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
			    SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		sql_error(db, error, path);
		return NULL;
	}
	sqlite3_extended_result_codes(db->sql, 1);
	sqlite3_busy_timeout(db->sql, 10000);
	if (!exec(db, memory ? "PRAGMA journal_mode = MEMORY" : "PRAGMA journal_mode = WAL", error) ||
	    !exec(db, "PRAGMA synchronous = FULL", error) ||
	    !exec(db, "PRAGMA foreign_keys = ON", error) || !migrate(db, error)) {
		g_prefix_error(error, "%s: ", path);
		return NULL;
	}
	return g_steal_pointer(&db);
}

void db_close(struct db *db)
{
	if (!db)
		return;
	sqlite3_close(db->sql);
	g_free(db);
}

bool db_tx_begin(struct db *db, GError **error)
{
	return exec(db, "BEGIN IMMEDIATE", error);
}

bool db_tx_commit(struct db *db, GError **error)
{
	return exec(db, "COMMIT", error);
}

void db_tx_rollback(struct db *db)
{
	if (!sqlite3_get_autocommit(db->sql))
		sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
}

char *db_version_string(void)
{
	return g_strdup_printf("sqlite %s", sqlite3_libversion());
}

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
	g_free(row);
}

#define TREE_COLUMNS \
	"id, name, url, policy, branches, blacklist, base, recipients, created, " \
	"last_poll, last_error, targets"

static struct tree_row *tree_from_stmt(sqlite3_stmt *stmt)
{
	struct tree_row *row = g_new0(struct tree_row, 1);
	const char *policy = (const char *)sqlite3_column_text(stmt, 3);

	row->id = sqlite3_column_int64(stmt, 0);
	row->name = col_text(stmt, 1);
	row->url = col_text(stmt, 2);
	if (!db_policy_parse(policy ? policy : "", &row->policy))
		g_assert_not_reached(); /* the CHECK constraint guarantees it */
	row->branches = col_list(stmt, 4);
	row->blacklist = col_list(stmt, 5);
	row->base = col_text(stmt, 6);
	row->recipients = col_list(stmt, 7);
	row->created = sqlite3_column_int64(stmt, 8);
	row->last_poll = sqlite3_column_int64(stmt, 9);
	row->last_error = col_text(stmt, 10);
	row->targets = col_list(stmt, 11);
	return row;
}

/* Binds name..recipients to parameters 1..7 and targets to 9. */
static void bind_tree(sqlite3_stmt *stmt, const struct tree_row *row)
{
	g_autofree char *branches = join_list(row->branches);
	g_autofree char *blacklist = join_list(row->blacklist);
	g_autofree char *recipients = join_list(row->recipients);
	g_autofree char *targets = join_list(row->targets);

	bind_text(stmt, 1, row->name);
	bind_text(stmt, 2, row->url);
	bind_text(stmt, 3, db_policy_name(row->policy));
	bind_text(stmt, 4, branches);
	bind_text(stmt, 5, blacklist);
	bind_text(stmt, 6, row->base);
	bind_text(stmt, 7, recipients);
	bind_text(stmt, 9, targets);
}

bool db_tree_insert(struct db *db, struct tree_row *row, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = prepare(db,
		"INSERT INTO trees (name, url, policy, branches, blacklist, base, recipients, "
		"created, targets) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)", error);

	if (!stmt)
		return false;
	bind_tree(stmt, row);
	sqlite3_bind_int64(stmt, 8, row->created);
	if (sqlite3_step(stmt) != SQLITE_DONE) {
		if (sqlite3_extended_errcode(db->sql) == SQLITE_CONSTRAINT_UNIQUE) {
			g_set_error(error, BOT_ERROR, BOT_ERROR_EXISTS,
				    "a tree named '%s' already exists", row->name);
			return false;
		}
		return sql_error(db, error, "inserting a tree");
	}
	row->id = sqlite3_last_insert_rowid(db->sql);
	return true;
}

struct tree_row *db_tree_get(struct db *db, const char *name, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = prepare(db,
		"SELECT " TREE_COLUMNS " FROM trees WHERE name = ?1", error);
	int rc;

	if (!stmt)
		return NULL;
	bind_text(stmt, 1, name);
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW)
		return tree_from_stmt(stmt);
	if (rc == SQLITE_DONE)
		g_set_error(error, BOT_ERROR, BOT_ERROR_NOT_FOUND, "no tree named '%s'", name);
	else
		sql_error(db, error, "reading a tree");
	return NULL;
}

GPtrArray *db_tree_list(struct db *db, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)tree_row_free);
	g_autoptr(sqlite3_stmt) stmt = prepare(db,
		"SELECT " TREE_COLUMNS " FROM trees ORDER BY name", error);
	int rc;

	if (!stmt)
		return NULL;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
		g_ptr_array_add(out, tree_from_stmt(stmt));
	if (rc != SQLITE_DONE) {
		sql_error(db, error, "listing trees");
		return NULL;
	}
	return g_steal_pointer(&out);
}

bool db_tree_update(struct db *db, const struct tree_row *row, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = prepare(db,
		"UPDATE trees SET name = ?1, url = ?2, policy = ?3, branches = ?4, "
		"blacklist = ?5, base = ?6, recipients = ?7, targets = ?9 WHERE id = ?8", error);

	if (!stmt)
		return false;
	bind_tree(stmt, row);
	sqlite3_bind_int64(stmt, 8, row->id);
	return step_done(db, stmt, error);
}

bool db_tree_delete(struct db *db, const char *name, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = prepare(db, "DELETE FROM trees WHERE name = ?1", error);

	if (!stmt)
		return false;
	bind_text(stmt, 1, name);
	if (!step_done(db, stmt, error))
		return false;
	if (sqlite3_changes(db->sql) == 0) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_NOT_FOUND, "no tree named '%s'", name);
		return false;
	}
	return true;
}

bool db_tree_polled(struct db *db, gint64 tree_id, gint64 when, const char *message,
		    GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = prepare(db,
		"UPDATE trees SET last_poll = ?1, last_error = ?2 WHERE id = ?3", error);

	if (!stmt)
		return false;
	sqlite3_bind_int64(stmt, 1, when);
	bind_text(stmt, 2, message);
	sqlite3_bind_int64(stmt, 3, tree_id);
	return step_done(db, stmt, error);
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

GPtrArray *db_branch_list(struct db *db, gint64 tree_id, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)branch_row_free);
	g_autoptr(sqlite3_stmt) stmt = prepare(db,
		"SELECT name, head, state, reason, updated FROM branches WHERE tree_id = ?1 "
		"ORDER BY name", error);
	int rc;

	if (!stmt)
		return NULL;
	sqlite3_bind_int64(stmt, 1, tree_id);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct branch_row *row = g_new0(struct branch_row, 1);

		row->name = col_text(stmt, 0);
		row->head = col_text(stmt, 1);
		row->state = branch_state_parse((const char *)sqlite3_column_text(stmt, 2));
		row->reason = col_text(stmt, 3);
		row->updated = sqlite3_column_int64(stmt, 4);
		g_ptr_array_add(out, row);
	}
	if (rc != SQLITE_DONE) {
		sql_error(db, error, "listing branches");
		return NULL;
	}
	return g_steal_pointer(&out);
}

bool db_branch_put(struct db *db, gint64 tree_id, const struct branch_row *row, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = prepare(db,
		"INSERT INTO branches (tree_id, name, head, state, reason, updated) "
		"VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (tree_id, name) DO UPDATE SET "
		"head = excluded.head, state = excluded.state, reason = excluded.reason, "
		"updated = excluded.updated", error);

	if (!stmt)
		return false;
	sqlite3_bind_int64(stmt, 1, tree_id);
	bind_text(stmt, 2, row->name);
	bind_text(stmt, 3, row->head);
	bind_text(stmt, 4, db_branch_state_name(row->state));
	bind_text(stmt, 5, row->reason);
	sqlite3_bind_int64(stmt, 6, row->updated);
	return step_done(db, stmt, error);
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

void head_event_free(struct head_event *event)
{
	if (!event)
		return;
	g_free(event->tree);
	g_free(event->branch);
	g_free(event->old_head);
	g_free(event->new_head);
	g_free(event->action);
	g_free(event->reason);
	g_free(event);
}

bool db_event_add(struct db *db, gint64 tree_id, struct head_event *event, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = prepare(db,
		"INSERT INTO head_events (tree_id, branch, old_head, new_head, change, action, "
		"reason, selected, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)", error);

	if (!stmt)
		return false;
	sqlite3_bind_int64(stmt, 1, tree_id);
	bind_text(stmt, 2, event->branch);
	bind_text(stmt, 3, event->old_head);
	bind_text(stmt, 4, event->new_head);
	bind_text(stmt, 5, db_head_change_name(event->change));
	bind_text(stmt, 6, event->action);
	bind_text(stmt, 7, event->reason);
	sqlite3_bind_int64(stmt, 8, event->selected);
	sqlite3_bind_int64(stmt, 9, event->when);
	if (!step_done(db, stmt, error))
		return false;
	event->id = sqlite3_last_insert_rowid(db->sql);
	return true;
}

GPtrArray *db_event_recent(struct db *db, unsigned limit, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)head_event_free);
	g_autoptr(sqlite3_stmt) stmt = prepare(db,
		"SELECT e.id, t.name, e.branch, e.old_head, e.new_head, e.change, e.action, "
		"e.reason, e.selected, e.at FROM head_events e JOIN trees t ON t.id = e.tree_id "
		"ORDER BY e.id DESC LIMIT ?1", error);
	int rc;

	if (!stmt)
		return NULL;
	sqlite3_bind_int64(stmt, 1, limit);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct head_event *e = g_new0(struct head_event, 1);
		const char *change = (const char *)sqlite3_column_text(stmt, 5);

		e->id = sqlite3_column_int64(stmt, 0);
		e->tree = col_text(stmt, 1);
		e->branch = col_text(stmt, 2);
		e->old_head = col_text(stmt, 3);
		e->new_head = col_text(stmt, 4);
		for (size_t i = 0; i < G_N_ELEMENTS(head_changes); i++) {
			if (change && strcmp(change, head_changes[i]) == 0)
				e->change = (enum head_change)i;
		}
		e->action = col_text(stmt, 6);
		e->reason = col_text(stmt, 7);
		e->selected = sqlite3_column_int(stmt, 8);
		e->when = sqlite3_column_int64(stmt, 9);
		g_ptr_array_add(out, e);
	}
	if (rc != SQLITE_DONE) {
		sql_error(db, error, "listing head events");
		return NULL;
	}
	return g_steal_pointer(&out);
}

/* Selected commits. */

void test_row_free(struct test_row *row)
{
	if (!row)
		return;
	g_free(row->tree);
	g_free(row->branch);
	g_free(row->commit);
	g_free(row->summary);
	g_free(row->state);
	g_free(row);
}

bool db_test_add(struct db *db, gint64 tree_id, const char *branch, const char *commit,
		 const char *summary, gint64 event_id, bool *added, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = prepare(db,
		"INSERT OR IGNORE INTO tests (tree_id, commit_id, branch, summary, event_id, "
		"queued) VALUES (?1, ?2, ?3, ?4, ?5, ?6)", error);

	if (!stmt)
		return false;
	sqlite3_bind_int64(stmt, 1, tree_id);
	bind_text(stmt, 2, commit);
	bind_text(stmt, 3, branch);
	bind_text(stmt, 4, summary);
	sqlite3_bind_int64(stmt, 5, event_id);
	sqlite3_bind_int64(stmt, 6, g_get_real_time() / G_USEC_PER_SEC);
	if (!step_done(db, stmt, error))
		return false;
	*added = sqlite3_changes(db->sql) == 1;
	return true;
}

bool db_test_known(struct db *db, gint64 tree_id, const char *commit, bool *known,
		   GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = prepare(db,
		"SELECT 1 FROM tests WHERE tree_id = ?1 AND commit_id = ?2", error);
	int rc;

	if (!stmt)
		return false;
	sqlite3_bind_int64(stmt, 1, tree_id);
	bind_text(stmt, 2, commit);
	rc = sqlite3_step(stmt);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return sql_error(db, error, "looking up a test");
	*known = rc == SQLITE_ROW;
	return true;
}

GPtrArray *db_test_pending(struct db *db, unsigned limit, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)test_row_free);
	g_autoptr(sqlite3_stmt) stmt = prepare(db,
		"SELECT t.name, s.branch, s.commit_id, s.summary, s.state, s.queued, t.id, "
		"b.head = s.commit_id FROM tests s JOIN trees t ON t.id = s.tree_id "
		"LEFT JOIN branches b ON b.tree_id = s.tree_id AND b.name = s.branch "
		"WHERE s.state = 'pending' ORDER BY s.queued, s.rowid LIMIT ?1", error);
	int rc;

	if (!stmt)
		return NULL;
	sqlite3_bind_int64(stmt, 1, limit);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct test_row *row = g_new0(struct test_row, 1);

		row->tree = col_text(stmt, 0);
		row->branch = col_text(stmt, 1);
		row->commit = col_text(stmt, 2);
		row->summary = col_text(stmt, 3);
		row->state = col_text(stmt, 4);
		row->queued = sqlite3_column_int64(stmt, 5);
		row->tree_id = sqlite3_column_int64(stmt, 6);
		row->head = sqlite3_column_int(stmt, 7) == 1;
		g_ptr_array_add(out, row);
	}
	if (rc != SQLITE_DONE) {
		sql_error(db, error, "listing pending tests");
		return NULL;
	}
	return g_steal_pointer(&out);
}

bool db_test_count_pending(struct db *db, gint64 *count, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = prepare(db,
		"SELECT count(*) FROM tests WHERE state = 'pending'", error);

	if (!stmt)
		return false;
	if (sqlite3_step(stmt) != SQLITE_ROW)
		return sql_error(db, error, "counting pending tests");
	*count = sqlite3_column_int64(stmt, 0);
	return true;
}

/* Builds. */

void build_row_free(struct build_row *row)
{
	if (!row)
		return;
	g_free(row->source);
	g_free(row->commit);
	g_free(row->target);
	g_free(row->status);
	g_free(row->reason);
	g_free(row->log_path);
	g_free(row->config_path);
	g_free(row->image_path);
	if (row->diags)
		g_ptr_array_unref(row->diags);
	g_free(row);
}

bool db_build_add(struct db *db, struct build_row *row, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = prepare(db,
		"INSERT INTO builds (source, commit_id, target, status, reason, seconds, log_path, "
		"config_path, created, image_path) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
		error);
	g_autoptr(sqlite3_stmt) diag = NULL;

	if (!stmt)
		return false;
	bind_text(stmt, 1, row->source);
	bind_text(stmt, 2, row->commit);
	bind_text(stmt, 3, row->target);
	bind_text(stmt, 4, row->status);
	bind_text(stmt, 5, row->reason);
	sqlite3_bind_double(stmt, 6, row->seconds);
	bind_text(stmt, 7, row->log_path);
	bind_text(stmt, 8, row->config_path);
	sqlite3_bind_int64(stmt, 9, row->created);
	bind_text(stmt, 10, row->image_path);
	if (!step_done(db, stmt, error))
		return false;
	row->id = sqlite3_last_insert_rowid(db->sql);
	diag = prepare(db, "INSERT INTO diagnostics (build_id, seq, kind, checker, file, line, "
		       "col, function, message, fingerprint) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, "
		       "?8, ?9, ?10)", error);
	if (!diag)
		return false;
	for (guint i = 0; row->diags && i < row->diags->len; i++) {
		const struct diag *d = row->diags->pdata[i];

		sqlite3_reset(diag);
		sqlite3_bind_int64(diag, 1, row->id);
		sqlite3_bind_int(diag, 2, (int)i);
		bind_text(diag, 3, diag_kind_name(d->kind));
		bind_text(diag, 4, d->checker);
		bind_text(diag, 5, d->file);
		sqlite3_bind_int(diag, 6, (int)d->line);
		sqlite3_bind_int(diag, 7, (int)d->column);
		bind_text(diag, 8, d->function);
		bind_text(diag, 9, d->message);
		bind_text(diag, 10, d->fingerprint);
		if (!step_done(db, diag, error))
			return false;
	}
	return true;
}

static GPtrArray *build_diags(struct db *db, gint64 build_id, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)diag_free);
	g_autoptr(sqlite3_stmt) stmt = prepare(db,
		"SELECT kind, checker, file, line, col, function, message, fingerprint "
		"FROM diagnostics WHERE build_id = ?1 ORDER BY seq", error);
	int rc;

	if (!stmt)
		return NULL;
	sqlite3_bind_int64(stmt, 1, build_id);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct diag *d = g_new0(struct diag, 1);
		const char *kind = (const char *)sqlite3_column_text(stmt, 0);

		d->kind = kind && strcmp(kind, "error") == 0 ? DIAG_ERROR : DIAG_WARNING;
		d->checker = col_text(stmt, 1);
		d->file = col_text(stmt, 2);
		d->line = (unsigned)sqlite3_column_int(stmt, 3);
		d->column = (unsigned)sqlite3_column_int(stmt, 4);
		d->function = col_text(stmt, 5);
		d->message = col_text(stmt, 6);
		d->fingerprint = col_text(stmt, 7);
		g_ptr_array_add(out, d);
	}
	if (rc != SQLITE_DONE) {
		sql_error(db, error, "reading diagnostics");
		return NULL;
	}
	return g_steal_pointer(&out);
}

bool db_build_find(struct db *db, const char *source, const char *commit, const char *target,
		   struct build_row **out, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = prepare(db,
		"SELECT id, status, reason, seconds, log_path, config_path, created, image_path "
		"FROM builds WHERE source = ?1 AND commit_id = ?2 AND target = ?3 "
		"AND status IN ('ok', 'failed') ORDER BY id DESC LIMIT 1", error);
	struct build_row *row;
	int rc;

	*out = NULL;
	if (!stmt)
		return false;
	bind_text(stmt, 1, source);
	bind_text(stmt, 2, commit);
	bind_text(stmt, 3, target);
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_DONE)
		return true;
	if (rc != SQLITE_ROW)
		return sql_error(db, error, "looking up a build");
	row = g_new0(struct build_row, 1);
	row->id = sqlite3_column_int64(stmt, 0);
	row->source = g_strdup(source);
	row->commit = g_strdup(commit);
	row->target = g_strdup(target);
	row->status = col_text(stmt, 1);
	row->reason = col_text(stmt, 2);
	row->seconds = sqlite3_column_double(stmt, 3);
	row->log_path = col_text(stmt, 4);
	row->config_path = col_text(stmt, 5);
	row->created = sqlite3_column_int64(stmt, 6);
	row->image_path = col_text(stmt, 7);
	row->diags = build_diags(db, row->id, error);
	if (!row->diags) {
		build_row_free(row);
		return false;
	}
	*out = row;
	return true;
}

bool db_verdict_put(struct db *db, gint64 build_id, gint64 parent_build_id,
		    const char *verdict, const char *new_seqs, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = prepare(db,
		"INSERT OR REPLACE INTO verdicts (build_id, parent_build_id, verdict, new_seqs) "
		"VALUES (?1, ?2, ?3, ?4)", error);

	if (!stmt)
		return false;
	sqlite3_bind_int64(stmt, 1, build_id);
	if (parent_build_id > 0)
		sqlite3_bind_int64(stmt, 2, parent_build_id);
	else
		sqlite3_bind_null(stmt, 2);
	bind_text(stmt, 3, verdict);
	bind_text(stmt, 4, new_seqs);
	return step_done(db, stmt, error);
}

char *db_build_image(struct db *db, gint64 build_id, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = prepare(db,
		"SELECT image_path FROM builds WHERE id = ?1", error);
	int rc;

	if (!stmt)
		return NULL;
	sqlite3_bind_int64(stmt, 1, build_id);
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW && sqlite3_column_type(stmt, 0) != SQLITE_NULL)
		return col_text(stmt, 0);
	if (rc == SQLITE_ROW || rc == SQLITE_DONE)
		g_set_error(error, BOT_ERROR, BOT_ERROR_NOT_FOUND,
			    "build %" G_GINT64_FORMAT " has no kernel image", build_id);
	else
		sql_error(db, error, "looking up a build's image");
	return NULL;
}

bool db_boot_add(struct db *db, const struct boot_row *row, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = prepare(db,
		"INSERT INTO boots (build_id, image, host, seed, kind, title, fingerprint, "
		"console_path, seconds, attempts, created, profile, excerpt) VALUES (?1, ?2, ?3, ?4, "
		"?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)", error);

	if (!stmt)
		return false;
	if (row->build_id > 0)
		sqlite3_bind_int64(stmt, 1, row->build_id);
	else
		sqlite3_bind_null(stmt, 1);
	bind_text(stmt, 2, row->image);
	bind_text(stmt, 3, row->host);
	sqlite3_bind_int64(stmt, 4, row->seed);
	bind_text(stmt, 5, row->kind);
	bind_text(stmt, 6, row->title);
	bind_text(stmt, 7, row->fingerprint);
	bind_text(stmt, 8, row->console_path);
	sqlite3_bind_double(stmt, 9, row->seconds);
	sqlite3_bind_int(stmt, 10, (int)row->attempts);
	sqlite3_bind_int64(stmt, 11, g_get_real_time() / G_USEC_PER_SEC);
	bind_text(stmt, 12, row->profile);
	bind_text(stmt, 13, row->excerpt);
	return step_done(db, stmt, error);
}

void boot_record_free(struct boot_record *r)
{
	if (!r)
		return;
	g_free(r->host);
	g_free(r->kind);
	g_free(r->title);
	g_free(r->fingerprint);
	g_free(r->excerpt);
	g_free(r->console_path);
	g_free(r);
}

GPtrArray *db_boot_list(struct db *db, gint64 build_id, const char *profile, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)boot_record_free);
	g_autoptr(sqlite3_stmt) stmt = prepare(db,
		"SELECT seed, host, kind, title, fingerprint, excerpt, console_path, seconds, "
		"attempts FROM boots WHERE build_id = ?1 AND profile = ?2 AND kind != 'infra-error' "
		"ORDER BY id", error);
	int rc;

	if (!stmt)
		return NULL;
	sqlite3_bind_int64(stmt, 1, build_id);
	bind_text(stmt, 2, profile);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct boot_record *r = g_new0(struct boot_record, 1);

		r->seed = (unsigned)sqlite3_column_int(stmt, 0);
		r->host = col_text(stmt, 1);
		r->kind = col_text(stmt, 2);
		r->title = col_text(stmt, 3);
		r->fingerprint = col_text(stmt, 4);
		r->excerpt = col_text(stmt, 5);
		r->console_path = col_text(stmt, 6);
		r->seconds = sqlite3_column_double(stmt, 7);
		r->attempts = (unsigned)sqlite3_column_int(stmt, 8);
		g_ptr_array_add(out, r);
	}
	if (rc != SQLITE_DONE) {
		sql_error(db, error, "listing boots");
		return NULL;
	}
	return g_steal_pointer(&out);
}

/* Jobs. */

void job_row_free(struct job_row *job)
{
	if (!job)
		return;
	g_free(job->kind);
	g_free(job->tree);
	g_free(job->commit);
	g_free(job->target);
	g_free(job->last_error);
	g_free(job->result);
	g_free(job);
}

#define JOB_COLUMNS \
	"j.id, j.kind, j.tree_id, t.name, j.commit_id, j.target, j.priority, j.attempts, " \
	"j.lease_until, j.failures, j.not_before, j.last_error, j.result, j.finished"

static struct job_row *job_from_stmt(sqlite3_stmt *stmt)
{
	struct job_row *job = g_new0(struct job_row, 1);

	job->id = sqlite3_column_int64(stmt, 0);
	job->kind = col_text(stmt, 1);
	job->tree_id = sqlite3_column_int64(stmt, 2);
	job->tree = col_text(stmt, 3);
	job->commit = col_text(stmt, 4);
	job->target = col_text(stmt, 5);
	job->priority = sqlite3_column_int(stmt, 6);
	job->attempts = (unsigned)sqlite3_column_int(stmt, 7);
	job->lease_until = sqlite3_column_int64(stmt, 8);
	job->failures = (unsigned)sqlite3_column_int(stmt, 9);
	job->not_before = sqlite3_column_int64(stmt, 10);
	job->last_error = col_text(stmt, 11);
	job->result = col_text(stmt, 12);
	job->finished = sqlite3_column_int64(stmt, 13);
	return job;
}

bool db_job_add(struct db *db, const char *kind, gint64 tree_id, const char *commit,
		const char *target, int priority, bool *added, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = prepare(db,
		"INSERT OR IGNORE INTO jobs (kind, tree_id, commit_id, target, priority, created) "
		"VALUES (?1, ?2, ?3, ?4, ?5, ?6)", error);

	if (!stmt)
		return false;
	bind_text(stmt, 1, kind);
	sqlite3_bind_int64(stmt, 2, tree_id);
	bind_text(stmt, 3, commit);
	bind_text(stmt, 4, target);
	sqlite3_bind_int(stmt, 5, priority);
	sqlite3_bind_int64(stmt, 6, g_get_real_time() / G_USEC_PER_SEC);
	if (!step_done(db, stmt, error))
		return false;
	*added = sqlite3_changes(db->sql) == 1;
	return true;
}

bool db_job_claim(struct db *db, const char *owner, gint64 now, unsigned lease_s,
		  struct job_row **out, GError **error)
{
	g_autoptr(sqlite3_stmt) pick = NULL;
	g_autoptr(sqlite3_stmt) take = NULL;
	struct job_row *job;
	int rc;

	*out = NULL;
	if (!db_tx_begin(db, error))
		return false;
	/* Within a priority, the tree whose last claim is oldest goes first. */
	pick = prepare(db,
		"SELECT " JOB_COLUMNS " FROM jobs j JOIN trees t ON t.id = j.tree_id "
		"WHERE ((j.state = 'queued' AND j.not_before <= ?1) "
		"OR (j.state = 'running' AND j.lease_until < ?1)) "
		"AND NOT EXISTS (SELECT 1 FROM jobs r WHERE r.state = 'running' "
		"AND r.lease_until >= ?1 AND r.tree_id = j.tree_id) "
		"ORDER BY j.priority, (SELECT coalesce(max(k.claimed), 0) FROM jobs k "
		"WHERE k.tree_id = j.tree_id), j.id LIMIT 1", error);
	if (!pick)
		goto fail;
	sqlite3_bind_int64(pick, 1, now);
	rc = sqlite3_step(pick);
	if (rc == SQLITE_DONE) {
		db_tx_rollback(db);
		return true;
	}
	if (rc != SQLITE_ROW) {
		sql_error(db, error, "claiming a job");
		goto fail;
	}
	job = job_from_stmt(pick);
	job->attempts++;
	job->lease_until = now + lease_s;
	take = prepare(db, "UPDATE jobs SET state = 'running', lease_owner = ?1, lease_until = ?2, "
		       "claimed = ?3, attempts = attempts + 1 WHERE id = ?4", error);
	if (!take) {
		job_row_free(job);
		goto fail;
	}
	bind_text(take, 1, owner);
	sqlite3_bind_int64(take, 2, job->lease_until);
	sqlite3_bind_int64(take, 3, now);
	sqlite3_bind_int64(take, 4, job->id);
	if (!step_done(db, take, error) || !db_tx_commit(db, error)) {
		job_row_free(job);
		goto fail;
	}
	*out = job;
	return true;
fail:
	db_tx_rollback(db);
	return false;
}

/* Runs an UPDATE guarded by the lease; false with BOT_ERROR_BUSY if it matched nothing. */
static bool leased_update(struct db *db, sqlite3_stmt *stmt, gint64 job_id, GError **error)
{
	if (!step_done(db, stmt, error))
		return false;
	if (sqlite3_changes(db->sql) != 1) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_BUSY,
			    "job %" G_GINT64_FORMAT ": the lease was lost to another worker", job_id);
		return false;
	}
	return true;
}

bool db_job_renew(struct db *db, gint64 job_id, const char *owner, gint64 until, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = prepare(db,
		"UPDATE jobs SET lease_until = ?1 WHERE id = ?2 AND state = 'running' "
		"AND lease_owner = ?3", error);

	if (!stmt)
		return false;
	sqlite3_bind_int64(stmt, 1, until);
	sqlite3_bind_int64(stmt, 2, job_id);
	bind_text(stmt, 3, owner);
	return leased_update(db, stmt, job_id, error);
}

bool db_job_complete(struct db *db, gint64 job_id, const char *owner, const char *result,
		     const char *reason, gint64 now, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = prepare(db,
		"UPDATE jobs SET state = 'done', result = ?1, finished = ?2, lease_until = NULL, "
		"last_error = coalesce(?5, last_error) "
		"WHERE id = ?3 AND state = 'running' AND lease_owner = ?4", error);

	if (!stmt)
		return false;
	bind_text(stmt, 1, result);
	sqlite3_bind_int64(stmt, 2, now);
	sqlite3_bind_int64(stmt, 3, job_id);
	bind_text(stmt, 4, owner);
	bind_text(stmt, 5, reason);
	return leased_update(db, stmt, job_id, error);
}

gint64 db_job_backoff(const struct job_backoff *backoff, unsigned failures)
{
	gint64 wait = backoff->first_s;

	for (unsigned i = 1; i < failures && wait < backoff->max_s; i++)
		wait *= 2;
	return MIN(wait, (gint64)backoff->max_s);
}

bool db_job_retry(struct db *db, gint64 job_id, const char *owner, gint64 now,
		  const char *reason, const struct job_backoff *backoff, bool *gave_up,
		  gint64 *not_before, GError **error)
{
	g_autoptr(sqlite3_stmt) get = prepare(db,
		"SELECT failures FROM jobs WHERE id = ?1 AND state = 'running' AND lease_owner = ?2",
		error);
	g_autoptr(sqlite3_stmt) put = NULL;
	g_autofree char *why = NULL;
	unsigned failures;
	gint64 when = 0;
	int rc;

	g_return_val_if_fail(backoff->limit > 0, false);
	if (!get)
		return false;
	sqlite3_bind_int64(get, 1, job_id);
	bind_text(get, 2, owner);
	rc = sqlite3_step(get);
	if (rc == SQLITE_DONE) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_BUSY,
			    "job %" G_GINT64_FORMAT ": the lease was lost to another worker", job_id);
		return false;
	}
	if (rc != SQLITE_ROW)
		return sql_error(db, error, "reading a job's failures");
	failures = (unsigned)sqlite3_column_int(get, 0) + 1;
	*gave_up = failures >= backoff->limit;
	if (*gave_up) {
		why = g_strdup_printf("gave up after %u attempts: %s", failures, reason);
		put = prepare(db,
			"UPDATE jobs SET state = 'done', result = 'error', finished = ?1, "
			"lease_until = NULL, failures = ?2, last_error = ?3 "
			"WHERE id = ?4 AND state = 'running' AND lease_owner = ?5", error);
	} else {
		when = now + db_job_backoff(backoff, failures);
		why = g_strdup(reason);
		put = prepare(db,
			"UPDATE jobs SET state = 'queued', not_before = ?1, lease_owner = NULL, "
			"lease_until = NULL, failures = ?2, last_error = ?3 "
			"WHERE id = ?4 AND state = 'running' AND lease_owner = ?5", error);
	}
	if (!put)
		return false;
	sqlite3_bind_int64(put, 1, *gave_up ? now : when);
	sqlite3_bind_int(put, 2, (int)failures);
	bind_text(put, 3, why);
	sqlite3_bind_int64(put, 4, job_id);
	bind_text(put, 5, owner);
	if (!leased_update(db, put, job_id, error))
		return false;
	if (not_before)
		*not_before = when;
	return true;
}

bool db_job_counts(struct db *db, gint64 now, gint64 *queued, gint64 *waiting, gint64 *running,
		   gint64 *done, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = prepare(db,
		"SELECT "
		"coalesce(sum((state = 'queued' AND not_before <= ?1) "
		"OR (state = 'running' AND lease_until < ?1)), 0), "
		"coalesce(sum(state = 'queued' AND not_before > ?1), 0), "
		"coalesce(sum(state = 'running' AND lease_until >= ?1), 0), "
		"coalesce(sum(state = 'done'), 0) FROM jobs", error);

	if (!stmt)
		return false;
	sqlite3_bind_int64(stmt, 1, now);
	if (sqlite3_step(stmt) != SQLITE_ROW)
		return sql_error(db, error, "counting jobs");
	*queued = sqlite3_column_int64(stmt, 0);
	*waiting = sqlite3_column_int64(stmt, 1);
	*running = sqlite3_column_int64(stmt, 2);
	*done = sqlite3_column_int64(stmt, 3);
	return true;
}

GPtrArray *db_job_list(struct db *db, enum job_list which, unsigned limit, GError **error)
{
	static const char *const where[] = {
		[JOB_LIST_RETRYING] = "j.state = 'queued' AND j.failures > 0 "
				      "ORDER BY j.not_before, j.id",
		[JOB_LIST_ERROR] = "j.state = 'done' AND j.result = 'error' "
				   "ORDER BY j.finished DESC, j.id DESC",
	};
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)job_row_free);
	g_autofree char *sql = NULL;
	g_autoptr(sqlite3_stmt) stmt = NULL;
	int rc;

	g_return_val_if_fail(which < G_N_ELEMENTS(where), NULL);
	sql = g_strdup_printf("SELECT " JOB_COLUMNS " FROM jobs j JOIN trees t ON t.id = j.tree_id "
			      "WHERE %s LIMIT ?1", where[which]);
	stmt = prepare(db, sql, error);
	if (!stmt)
		return NULL;
	sqlite3_bind_int64(stmt, 1, limit);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
		g_ptr_array_add(out, job_from_stmt(stmt));
	if (rc != SQLITE_DONE) {
		sql_error(db, error, "listing jobs");
		return NULL;
	}
	return g_steal_pointer(&out);
}

bool db_test_scheduled(struct db *db, gint64 tree_id, const char *commit, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = prepare(db,
		"UPDATE tests SET state = 'scheduled' WHERE tree_id = ?1 AND commit_id = ?2", error);

	if (!stmt)
		return false;
	sqlite3_bind_int64(stmt, 1, tree_id);
	bind_text(stmt, 2, commit);
	return step_done(db, stmt, error);
}

bool db_job_release_dead(struct db *db, const char *owner_prefix,
			 bool (*dead)(const char *owner), GError **error)
{
	g_autoptr(sqlite3_stmt) list = prepare(db,
		"SELECT id, lease_owner FROM jobs WHERE state = 'running' AND "
		"substr(lease_owner, 1, length(?1)) = ?1", error);
	g_autoptr(sqlite3_stmt) release = NULL;
	g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(gint64));
	int rc;

	if (!list)
		return false;
	bind_text(list, 1, owner_prefix);
	while ((rc = sqlite3_step(list)) == SQLITE_ROW) {
		gint64 id = sqlite3_column_int64(list, 0);

		if (dead((const char *)sqlite3_column_text(list, 1)))
			g_array_append_val(ids, id);
	}
	if (rc != SQLITE_DONE)
		return sql_error(db, error, "listing leased jobs");
	release = prepare(db, "UPDATE jobs SET lease_until = 0 WHERE id = ?1 AND state = 'running'",
			  error);
	if (!release)
		return false;
	for (guint i = 0; i < ids->len; i++) {
		sqlite3_reset(release);
		sqlite3_bind_int64(release, 1, g_array_index(ids, gint64, i));
		if (!step_done(db, release, error))
			return false;
	}
	return true;
}

void finding_row_free(struct finding_row *row)
{
	if (!row)
		return;
	g_free(row->tree);
	g_free(row->branch);
	g_free(row->culprit);
	g_free(row->target);
	g_free(row->kind);
	g_free(row->fingerprint);
	g_free(row->title);
	g_free(row->details);
	g_free(row->state);
	g_free(row->reproduce);
	g_free(row->fixed_by);
	g_free(row->bisect_log);
	g_free(row);
}

bool db_finding_add(struct db *db, gint64 tree_id, const struct finding_row *row, bool *added,
		    GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = prepare(db,
		"INSERT OR IGNORE INTO findings (tree_id, branch, culprit, target, kind, fingerprint, "
		"title, details, confidence, reproduce, created, state, rate, bisect_log) VALUES (?1, "
		"?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, coalesce(?12, 'open'), ?13, ?14)", error);

	if (!stmt)
		return false;
	sqlite3_bind_int64(stmt, 1, tree_id);
	bind_text(stmt, 2, row->branch);
	bind_text(stmt, 3, row->culprit);
	bind_text(stmt, 4, row->target);
	bind_text(stmt, 5, row->kind);
	bind_text(stmt, 6, row->fingerprint);
	bind_text(stmt, 7, row->title);
	bind_text(stmt, 8, row->details);
	sqlite3_bind_double(stmt, 9, row->confidence);
	bind_text(stmt, 10, row->reproduce);
	sqlite3_bind_int64(stmt, 11, g_get_real_time() / G_USEC_PER_SEC);
	bind_text(stmt, 12, row->state);
	sqlite3_bind_double(stmt, 13, row->rate > 0.0 ? row->rate : 1.0);
	bind_text(stmt, 14, row->bisect_log);
	if (!step_done(db, stmt, error))
		return false;
	*added = sqlite3_changes(db->sql) == 1;
	return true;
}

GPtrArray *db_finding_list(struct db *db, unsigned limit, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)finding_row_free);
	g_autoptr(sqlite3_stmt) stmt = prepare(db,
		"SELECT f.id, t.name, f.branch, f.culprit, f.target, f.kind, f.fingerprint, f.title, "
		"f.details, f.confidence, f.state, f.reproduce, f.created, f.fixed_by, f.rate, "
		"f.bisect_log FROM findings f "
		"LEFT JOIN trees t ON t.id = f.tree_id ORDER BY f.id DESC LIMIT ?1", error);
	int rc;

	if (!stmt)
		return NULL;
	sqlite3_bind_int64(stmt, 1, limit);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct finding_row *f = g_new0(struct finding_row, 1);

		f->id = sqlite3_column_int64(stmt, 0);
		f->tree = col_text(stmt, 1);
		f->branch = col_text(stmt, 2);
		f->culprit = col_text(stmt, 3);
		f->target = col_text(stmt, 4);
		f->kind = col_text(stmt, 5);
		f->fingerprint = col_text(stmt, 6);
		f->title = col_text(stmt, 7);
		f->details = col_text(stmt, 8);
		f->confidence = sqlite3_column_double(stmt, 9);
		f->state = col_text(stmt, 10);
		f->reproduce = col_text(stmt, 11);
		f->created = sqlite3_column_int64(stmt, 12);
		f->fixed_by = col_text(stmt, 13);
		f->rate = sqlite3_column_double(stmt, 14);
		f->bisect_log = col_text(stmt, 15);
		g_ptr_array_add(out, f);
	}
	if (rc != SQLITE_DONE) {
		sql_error(db, error, "listing findings");
		return NULL;
	}
	return g_steal_pointer(&out);
}

char *db_head_previous(struct db *db, gint64 tree_id, const char *head, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = prepare(db,
		"SELECT e.old_head FROM head_events e WHERE e.tree_id = ?1 AND e.new_head = ?2 "
		"AND e.old_head IS NOT NULL AND e.change IN ('forward', 'forced') "
		"AND EXISTS (SELECT 1 FROM tests t WHERE t.tree_id = e.tree_id "
		"AND t.commit_id = e.old_head) ORDER BY e.id DESC LIMIT 1", error);
	int rc;

	if (!stmt)
		return NULL;
	sqlite3_bind_int64(stmt, 1, tree_id);
	bind_text(stmt, 2, head);
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW)
		return col_text(stmt, 0);
	if (rc != SQLITE_DONE)
		sql_error(db, error, "looking up the previous head");
	return NULL;
}

bool db_tree_non_rebasable(struct db *db, gint64 tree_id, bool *non_rebasable, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = prepare(db, "SELECT policy FROM trees WHERE id = ?1", error);

	if (!stmt)
		return false;
	sqlite3_bind_int64(stmt, 1, tree_id);
	if (sqlite3_step(stmt) != SQLITE_ROW)
		return sql_error(db, error, "reading a tree's policy");
	*non_rebasable = g_strcmp0((const char *)sqlite3_column_text(stmt, 0), "non-rebasable") == 0;
	return true;
}

GPtrArray *db_finding_open(struct db *db, gint64 tree_id, const char *target, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)finding_row_free);
	g_autoptr(sqlite3_stmt) stmt = prepare(db,
		"SELECT id, culprit, kind, fingerprint, rate FROM findings WHERE tree_id = ?1 "
		"AND target = ?2 AND state = 'open' ORDER BY id", error);
	int rc;

	if (!stmt)
		return NULL;
	sqlite3_bind_int64(stmt, 1, tree_id);
	bind_text(stmt, 2, target);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct finding_row *f = g_new0(struct finding_row, 1);

		f->id = sqlite3_column_int64(stmt, 0);
		f->culprit = col_text(stmt, 1);
		f->kind = col_text(stmt, 2);
		f->fingerprint = col_text(stmt, 3);
		f->rate = sqlite3_column_double(stmt, 4);
		g_ptr_array_add(out, f);
	}
	if (rc != SQLITE_DONE) {
		sql_error(db, error, "listing open findings");
		return NULL;
	}
	return g_steal_pointer(&out);
}

bool db_finding_fixed(struct db *db, gint64 id, const char *head, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = prepare(db,
		"UPDATE findings SET state = 'fixed', fixed_by = ?1 WHERE id = ?2 AND state = 'open'",
		error);

	if (!stmt)
		return false;
	bind_text(stmt, 1, head);
	sqlite3_bind_int64(stmt, 2, id);
	return step_done(db, stmt, error);
}
