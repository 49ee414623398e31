/*
 * The store: see db.h. Opening, migrations, transactions and the
 * statement helpers that bot/store/db-*.c share (db-private.h).
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <stdarg.h>
#include <string.h>

#include "bot/bot.h"
#include "bot/store/db-private.h"

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

	/*
	 * 9 -> 10: findings as fields, not text: the culprit's parent, the
	 * head that showed it, a build finding's diagnostic, a boot
	 * finding's runs and excerpt, how to reproduce it, an inconclusive
	 * bisection's suspects and reason, and the bisection's steps. Older
	 * rows keep their details, reproduce and bisect_log text.
	 */
	"ALTER TABLE findings ADD COLUMN parent TEXT;"
	"ALTER TABLE findings ADD COLUMN head TEXT;"
	"ALTER TABLE findings ADD COLUMN file TEXT;"
	"ALTER TABLE findings ADD COLUMN line INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE findings ADD COLUMN col INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE findings ADD COLUMN diag_kind TEXT;"
	"ALTER TABLE findings ADD COLUMN message TEXT;"
	"ALTER TABLE findings ADD COLUMN excerpt TEXT;"
	"ALTER TABLE findings ADD COLUMN failures INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE findings ADD COLUMN runs INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE findings ADD COLUMN intermittent INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE findings ADD COLUMN repro_commit TEXT;"
	"ALTER TABLE findings ADD COLUMN repro_boots INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE findings ADD COLUMN suspects TEXT;"
	"ALTER TABLE findings ADD COLUMN reason TEXT;"
	"CREATE TABLE finding_steps ("
	"  finding_id INTEGER NOT NULL REFERENCES findings(id) ON DELETE CASCADE,"
	"  seq INTEGER NOT NULL,"
	"  role TEXT NOT NULL,"
	"  commit_id TEXT NOT NULL,"
	"  tested TEXT,"
	"  result TEXT NOT NULL,"
	"  runs INTEGER NOT NULL,"
	"  failures INTEGER NOT NULL,"
	"  PRIMARY KEY (finding_id, seq));",

	/*
	 * 10 -> 11: the outbox: every mail zeroday sends, rendered with its
	 * final Message-ID in the transaction of the event that caused it,
	 * then sent; one of each kind per finding.
	 */
	"CREATE TABLE outbox ("
	"  id INTEGER PRIMARY KEY,"
	"  finding_id INTEGER REFERENCES findings(id) ON DELETE SET NULL,"
	"  kind TEXT NOT NULL,"
	"  message_id TEXT NOT NULL UNIQUE,"
	"  in_reply_to TEXT,"
	"  refs TEXT,"
	"  subject TEXT NOT NULL,"
	"  recipients TEXT NOT NULL,"
	"  raw TEXT,"
	"  state TEXT NOT NULL,"
	"  created INTEGER NOT NULL,"
	"  sent INTEGER NOT NULL DEFAULT 0,"
	"  attempts INTEGER NOT NULL DEFAULT 0,"
	"  last_error TEXT,"
	"  path TEXT);"
	"CREATE UNIQUE INDEX outbox_once ON outbox (finding_id, kind) WHERE finding_id IS NOT NULL;"
	"CREATE INDEX outbox_state ON outbox (state, id);",

	/*
	 * 11 -> 12: a tree's mail settings: its mailing lists (Cc'd on its
	 * reports), whether its reports go to its maintainers only (private;
	 * the recipients column holds the maintainers' --cc addresses), and
	 * whether a clean build of a head gets a mail.
	 */
	"ALTER TABLE trees ADD COLUMN lists TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE trees ADD COLUMN private INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE trees ADD COLUMN mail_clean INTEGER NOT NULL DEFAULT 0;",

	/*
	 * 12 -> 13: sending over SMTP. A mail's recipients one by one (what
	 * the server said to each, held back by a limit, or carried by a
	 * digest), and when a mail is tried next.
	 */
	"ALTER TABLE outbox ADD COLUMN next_try INTEGER NOT NULL DEFAULT 0;"
	"CREATE TABLE outbox_rcpt ("
	"  outbox_id INTEGER NOT NULL REFERENCES outbox(id) ON DELETE CASCADE,"
	"  address TEXT NOT NULL,"
	"  state TEXT NOT NULL,"
	"  updated INTEGER NOT NULL DEFAULT 0,"
	"  reply TEXT,"
	"  digest_id INTEGER,"
	"  PRIMARY KEY (outbox_id, address));"
	"CREATE INDEX outbox_rcpt_state ON outbox_rcpt (state, address, updated);",

	/*
	 * 13 -> 14: one report for the new diagnostics of one commit: the
	 * findings a report carries besides its own.
	 */
	"ALTER TABLE findings ADD COLUMN report_finding INTEGER "
	"REFERENCES findings(id) ON DELETE SET NULL;"
	"CREATE INDEX findings_report ON findings (report_finding);",

	/*
	 * 14 -> 15: reading mailing lists. Every mail read, with its raw
	 * text, once per (Message-ID, content hash); each source folder's
	 * cursor; the patch series assembled from the mails, the bases tried
	 * for each, and each patch's result. A tree's subject prefixes
	 * ("net-next") choose it as a base besides its lists.
	 */
	"ALTER TABLE trees ADD COLUMN prefixes TEXT NOT NULL DEFAULT '';"
	"CREATE TABLE mails ("
	"  id INTEGER PRIMARY KEY,"
	"  message_id TEXT NOT NULL,"
	"  hash TEXT NOT NULL,"
	"  source TEXT NOT NULL,"
	"  uid INTEGER NOT NULL DEFAULT 0,"
	"  received INTEGER NOT NULL,"
	"  state TEXT NOT NULL,"
	"  reason TEXT,"
	"  kind TEXT,"
	"  sender TEXT,"
	"  subject TEXT,"
	"  size INTEGER NOT NULL,"
	"  raw BLOB NOT NULL,"
	"  UNIQUE (message_id, hash));"
	"CREATE INDEX mails_state ON mails (state, id);"
	"CREATE TABLE mail_cursors ("
	"  source TEXT PRIMARY KEY,"
	"  uidvalidity INTEGER NOT NULL,"
	"  last_uid INTEGER NOT NULL,"
	"  updated INTEGER NOT NULL);"
	"CREATE TABLE series ("
	"  id INTEGER PRIMARY KEY,"
	"  sender TEXT NOT NULL,"
	"  title TEXT,"
	"  version INTEGER NOT NULL,"
	"  versioned INTEGER NOT NULL DEFAULT 0,"
	"  resend INTEGER NOT NULL DEFAULT 0,"
	"  total INTEGER NOT NULL,"
	"  state TEXT NOT NULL,"
	"  superseded_by INTEGER REFERENCES series(id) ON DELETE SET NULL,"
	"  created INTEGER NOT NULL,"
	"  last_part INTEGER NOT NULL,"
	"  tree_id INTEGER REFERENCES trees(id) ON DELETE SET NULL,"
	"  base TEXT,"
	"  base_how TEXT,"
	"  note TEXT);"
	"CREATE INDEX series_state ON series (state);"
	"CREATE TABLE series_parts ("
	"  series_id INTEGER NOT NULL REFERENCES series(id) ON DELETE CASCADE,"
	"  n INTEGER NOT NULL,"
	"  mail_id INTEGER NOT NULL REFERENCES mails(id),"
	"  message_id TEXT NOT NULL,"
	"  commit_id TEXT,"
	"  PRIMARY KEY (series_id, n));"
	"CREATE TABLE series_ids ("
	"  series_id INTEGER NOT NULL REFERENCES series(id) ON DELETE CASCADE,"
	"  message_id TEXT NOT NULL,"
	"  PRIMARY KEY (message_id, series_id));"
	"CREATE TABLE series_bases ("
	"  series_id INTEGER NOT NULL REFERENCES series(id) ON DELETE CASCADE,"
	"  seq INTEGER NOT NULL,"
	"  tree TEXT,"
	"  branch TEXT,"
	"  commit_id TEXT,"
	"  how TEXT NOT NULL,"
	"  applied INTEGER NOT NULL,"
	"  reason TEXT,"
	"  PRIMARY KEY (series_id, seq));"
	"CREATE TABLE series_results ("
	"  series_id INTEGER NOT NULL REFERENCES series(id) ON DELETE CASCADE,"
	"  n INTEGER NOT NULL,"
	"  target TEXT NOT NULL,"
	"  commit_id TEXT NOT NULL,"
	"  result TEXT NOT NULL,"
	"  detail TEXT,"
	"  boot TEXT,"
	"  boot_failed INTEGER NOT NULL DEFAULT 0,"
	"  PRIMARY KEY (series_id, n, target));",

	/*
	 * 15 -> 16: mail commands. A tree subscribed by mail keeps who
	 * subscribed it (its URL came from a stranger: fetched from public
	 * addresses only). A command mail, its commands and their answers;
	 * the pending subscriptions (a token's hash, never the token); who
	 * muted which thread; the job and series a command waits for.
	 */
	"ALTER TABLE trees ADD COLUMN subscriber TEXT;"
	"CREATE TABLE command_mails ("
	"  mail_id INTEGER PRIMARY KEY REFERENCES mails(id) ON DELETE CASCADE,"
	"  sender TEXT NOT NULL,"
	"  received INTEGER NOT NULL,"
	"  state TEXT NOT NULL CHECK (state IN ('running', 'answered', 'silent')),"
	"  reason TEXT,"
	"  reply_id INTEGER);"
	"CREATE INDEX command_mails_sender ON command_mails (sender, received);"
	"CREATE TABLE commands ("
	"  id INTEGER PRIMARY KEY,"
	"  mail_id INTEGER NOT NULL REFERENCES command_mails(mail_id) ON DELETE CASCADE,"
	"  n INTEGER NOT NULL,"
	"  line TEXT NOT NULL,"
	"  verb TEXT,"
	"  state TEXT NOT NULL CHECK (state IN ('running', 'done', 'refused')),"
	"  answer TEXT,"
	"  finding_id INTEGER,"
	"  job_id INTEGER,"
	"  series_id INTEGER,"
	"  UNIQUE (mail_id, n));"
	"CREATE INDEX commands_running ON commands (state, job_id, series_id);"
	"CREATE TABLE subscriptions ("
	"  token_hash TEXT PRIMARY KEY,"
	"  sender TEXT NOT NULL,"
	"  name TEXT NOT NULL,"
	"  url TEXT NOT NULL,"
	"  pattern TEXT NOT NULL,"
	"  policy TEXT NOT NULL,"
	"  list TEXT,"
	"  created INTEGER NOT NULL,"
	"  expires INTEGER NOT NULL,"
	"  used INTEGER NOT NULL DEFAULT 0);"
	"CREATE TABLE mutes ("
	"  address TEXT NOT NULL,"
	"  thread TEXT NOT NULL,"
	"  created INTEGER NOT NULL,"
	"  PRIMARY KEY (address, thread));",

	/*
	 * 16 -> 17: each mail source's last read, for status: a cursor moves
	 * only when mail comes, a read that finds none must show too.
	 */
	"CREATE TABLE mail_sources ("
	"  source TEXT PRIMARY KEY,"
	"  last_read INTEGER NOT NULL DEFAULT 0,"
	"  failed INTEGER NOT NULL DEFAULT 0,"
	"  last_error TEXT);",

	/*
	 * 17 -> 18: each mail's parse, stored with it when it comes
	 * (patchmail_pack()), so that dispatch and series assembly need not
	 * parse its raw text again. NULL for a mail stored before: parsed
	 * from its raw text when it is dispatched.
	 */
	"ALTER TABLE mails ADD COLUMN parse BLOB;",

	/*
	 * 18 -> 19: a claim looks at each tree's first claimable job and its
	 * last claim, not at every queued job: a farm's queue holds tens of
	 * thousands (bench/farm).
	 */
	"CREATE INDEX jobs_by_tree ON jobs(tree_id, state, priority);"
	"CREATE INDEX jobs_claimed ON jobs(tree_id, claimed);",

	/*
	 * 19 -> 20: the trees removed whose work outside the store (a
	 * cluster's jobs and spool) is still to be dropped, until it is.
	 */
	"CREATE TABLE trees_removed ("
	"  name TEXT PRIMARY KEY,"
	"  removed INTEGER NOT NULL);",

	/*
	 * 20 -> 21: trees whose verified regressions regzbot should track
	 * (tree add|set --regzbot).
	 */
	"ALTER TABLE trees ADD COLUMN regzbot INTEGER NOT NULL DEFAULT 0;",

	/*
	 * 21 -> 22: what maintainers said of a finding by mail: it is the
	 * same bug as another (#zeroday dup), or the subject of the commit
	 * that fixes it (#zeroday fix:).
	 */
	"ALTER TABLE findings ADD COLUMN dup_of INTEGER;"
	"ALTER TABLE findings ADD COLUMN fix_subject TEXT;",
	/*
	 * 22 -> 23: the other targets a finding showed on (one culprit, one
	 * fingerprint, one finding, one report).
	 */
	"ALTER TABLE findings ADD COLUMN also TEXT;",

	/*
	 * 23 -> 24: the tests a boot ran (KTAP results on its console): how
	 * many passed, failed and were skipped, and each failed one, whose
	 * fingerprint a bisection and a reused boot look for as they do a
	 * boot's verdict.
	 */
	"ALTER TABLE boots ADD COLUMN tests TEXT;"
	"CREATE TABLE boot_tests ("
	"  boot_id INTEGER NOT NULL REFERENCES boots(id) ON DELETE CASCADE,"
	"  title TEXT NOT NULL,"
	"  fingerprint TEXT NOT NULL,"
	"  excerpt TEXT);"
	"CREATE INDEX boot_tests_by_boot ON boot_tests(boot_id);"
	"CREATE INDEX boot_tests_by_fingerprint ON boot_tests(fingerprint);"
	/* The payloads a tree's boots run (tree add|set --payload); NULL: [boot] payloads. */
	"ALTER TABLE trees ADD COLUMN payloads TEXT;",

	/*
	 * 24 -> 25: the version of a build's diagnostics
	 * (BUILD_DIAG_VERSION): a build of another version is never the
	 * parent a new one is compared with, or an old warning parsed or
	 * collected otherwise would come out as new. The builds stored
	 * before are version 1.
	 */
	"ALTER TABLE builds ADD COLUMN diag_version INTEGER NOT NULL DEFAULT 1;",
};

G_STATIC_ASSERT(G_N_ELEMENTS(migrations) == DB_SCHEMA_VERSION);

/* The statement helpers bot/store/db-*.c share: see db-private.h. */

bool db_sql_error(struct db *db, GError **error, const char *what)
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

bool db_exec(struct db *db, const char *sql, GError **error)
{
	if (sqlite3_exec(db->sql, sql, NULL, NULL, NULL) != SQLITE_OK)
		return db_sql_error(db, error, sql);
	return true;
}

/* Binds NULL for a NULL @text. */
void db_bind_text(sqlite3_stmt *stmt, int i, const char *text)
{
	if (text)
		sqlite3_bind_text(stmt, i, text, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(stmt, i);
}

/* Runs a statement that returns no rows. */

/* Copies a text column out of sqlite's buffer; NULL stays NULL. */
char *db_col_text(sqlite3_stmt *stmt, int i)
{
	const unsigned char *t = sqlite3_column_text(stmt, i);

	return t ? g_strdup((const char *)t) : NULL;
}

int db_name_index(const char *const *names, size_t n, const char *name, int fallback)
{
	for (size_t i = 0; name && i < n; i++) {
		if (names[i] && strcmp(names[i], name) == 0)
			return (int)i;
	}
	return fallback;
}

/* Lists are stored one item a line; items never hold a newline. */
char *db_join_list(char **list)
{
	return g_strjoinv("\n", list ? list : (char *[]){ NULL });
}

char **db_col_list(sqlite3_stmt *stmt, int i)
{
	const char *t = (const char *)sqlite3_column_text(stmt, i);

	if (!t || !*t)
		return g_new0(char *, 1);
	return g_strsplit(t, "\n", -1);
}

/*
 * The statement cache. An entry in use (a reader that runs the same SQL
 * from inside its own loop) is not handed out twice: the inner use gets a
 * statement of its own, finalized after it.
 */
struct db_cached {
	sqlite3_stmt *stmt;
	bool busy;
};

static void cached_free(gpointer data)
{
	struct db_cached *c = data;

	sqlite3_finalize(c->stmt);
	g_free(c);
}

/* Binds the arguments @ap per @args (see db-private.h). */
static void bind_args(sqlite3_stmt *stmt, const char *args, va_list ap)
{
	/* One letter a parameter: a list of the wrong length is the caller's bug. */
	g_assert_cmpint((int)(args ? strlen(args) : 0), ==, sqlite3_bind_parameter_count(stmt));
	for (int i = 1; args && args[i - 1]; i++) {
		switch (args[i - 1]) {
		case 'i':
			sqlite3_bind_int64(stmt, i, va_arg(ap, gint64));
			break;
		case 'n':
			sqlite3_bind_int(stmt, i, va_arg(ap, int));
			break;
		case 't':
			db_bind_text(stmt, i, va_arg(ap, const char *));
			break;
		case 'f':
			sqlite3_bind_double(stmt, i, va_arg(ap, double));
			break;
		case 'b': {
			GBytes *bytes = va_arg(ap, GBytes *);
			gsize size = 0;
			const void *data = bytes ? g_bytes_get_data(bytes, &size) : NULL;

			if (!bytes)
				sqlite3_bind_null(stmt, i);
			else if (!size)
				/* GBytes may hold no pointer for nothing: empty, not NULL. */
				sqlite3_bind_zeroblob(stmt, i, 0);
			else
				sqlite3_bind_blob64(stmt, i, data, size, SQLITE_STATIC);
			break;
		}
		default:
			g_assert_not_reached();
		}
	}
}

/*
 * The statement for @sql, bound; NULL with @error set. Give it back with
 * stmt_put(), which resets it (or finalizes a spare).
 */
static sqlite3_stmt *stmt_get(struct db *db, const char *sql, const char *args, va_list ap,
			      GError **error)
{
	struct db_cached *c = g_hash_table_lookup(db->stmts, sql);
	sqlite3_stmt *stmt = NULL;

	if (c && !c->busy) {
		c->busy = true;
		bind_args(c->stmt, args, ap);
		return c->stmt;
	}
	if (sqlite3_prepare_v3(db->sql, sql, -1, c ? 0 : SQLITE_PREPARE_PERSISTENT, &stmt,
			       NULL) != SQLITE_OK) {
		sqlite3_finalize(stmt);
		db_sql_error(db, error, sql);
		return NULL;
	}
	if (!c) {
		c = g_new0(struct db_cached, 1);
		c->stmt = stmt;
		c->busy = true;
		g_hash_table_insert(db->stmts, g_strdup(sql), c);
	}
	bind_args(stmt, args, ap);
	return stmt;
}

static void stmt_put(struct db *db, sqlite3_stmt *stmt)
{
	struct db_cached *c = g_hash_table_lookup(db->stmts, sqlite3_sql(stmt));

	if (!c || c->stmt != stmt) {
		sqlite3_finalize(stmt);
		return;
	}
	sqlite3_reset(stmt);
	sqlite3_clear_bindings(stmt);
	c->busy = false;
}

/*
 * The loop under every helper: calls @read (with @data) for each row, or
 * the first only if @first; the step's error is translated here once.
 */
static bool rows_run(struct db *db, bool first, void (*read)(sqlite3_stmt *, void *),
		     void *data, GError **error, const char *sql, const char *args, va_list ap)
{
	sqlite3_stmt *stmt = stmt_get(db, sql, args, ap, error);
	int rc;

	if (!stmt)
		return false;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		if (read)
			read(stmt, data);
		if (first) {
			rc = SQLITE_DONE;
			break;
		}
	}
	if (rc != SQLITE_DONE)
		db_sql_error(db, error, sql);
	stmt_put(db, stmt);
	return rc == SQLITE_DONE;
}

/*
 * Sets @ok to rows_run() over the arguments after @args, in a function
 * whose parameters are named db, error, sql and args, as each helper's are.
 */
#define ROWS_RUN(ok, first, read, data)                                               \
	do {                                                                          \
		va_list ap_;                                                          \
									      \
		va_start(ap_, args);                                                  \
		(ok) = rows_run(db, (first), (read), (data), error, sql, args, ap_);  \
		va_end(ap_);                                                          \
	} while (0)

bool db_run(struct db *db, GError **error, const char *sql, const char *args, ...)
{
	bool ok;

	ROWS_RUN(ok, false, NULL, NULL);
	return ok;
}

static void read_int(sqlite3_stmt *row, void *data)
{
	if (sqlite3_column_type(row, 0) != SQLITE_NULL)
		*(gint64 *)data = sqlite3_column_int64(row, 0);
}

bool db_int(struct db *db, gint64 *out, gint64 dflt, GError **error, const char *sql,
	    const char *args, ...)
{
	bool ok;

	*out = dflt;
	ROWS_RUN(ok, true, read_int, out);
	return ok;
}

static void read_text(sqlite3_stmt *row, void *data)
{
	char **out = data;

	if (sqlite3_column_type(row, 0) != SQLITE_NULL) {
		g_free(*out);
		*out = db_col_text(row, 0);
	}
}

bool db_text(struct db *db, char **out, const char *dflt, GError **error, const char *sql,
	     const char *args, ...)
{
	bool ok;

	*out = g_strdup(dflt);
	ROWS_RUN(ok, true, read_text, out);
	if (!ok)
		g_clear_pointer(out, g_free);
	return ok;
}

bool db_rows(struct db *db, db_read_fn read, void *data, GError **error, const char *sql,
	     const char *args, ...)
{
	bool ok;

	ROWS_RUN(ok, false, read, data);
	return ok;
}

struct new_rows {
	db_new_fn read;
	GPtrArray *out;
	gpointer first;
};

static void read_new(sqlite3_stmt *row, void *data)
{
	struct new_rows *n = data;

	if (n->out)
		g_ptr_array_add(n->out, n->read(row));
	else
		n->first = n->read(row);
}

bool db_list(struct db *db, GPtrArray *out, db_new_fn read, GError **error, const char *sql,
	     const char *args, ...)
{
	struct new_rows n = { .read = read, .out = out };
	bool ok;

	ROWS_RUN(ok, false, read_new, &n);
	return ok;
}

bool db_one(struct db *db, gpointer *out, db_new_fn read, GError **error, const char *sql,
	    const char *args, ...)
{
	struct new_rows n = { .read = read };
	bool ok;

	ROWS_RUN(ok, true, read_new, &n);
	*out = n.first;
	return ok;
}

static void read_id(sqlite3_stmt *row, void *data)
{
	gint64 id = sqlite3_column_int64(row, 0);

	g_array_append_val((GArray *)data, id);
}

bool db_ids(struct db *db, GArray *out, GError **error, const char *sql, const char *args, ...)
{
	bool ok;

	ROWS_RUN(ok, false, read_id, out);
	return ok;
}

int db_changes(struct db *db)
{
	return sqlite3_changes(db->sql);
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
		if (!db_exec(db, migrations[version], error) || !db_exec(db, bump, error)) {
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

	db->stmts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, cached_free);
	if (sqlite3_open_v2(path, &db->sql, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
			    SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		db_sql_error(db, error, path);
		return NULL;
	}
	sqlite3_extended_result_codes(db->sql, 1);
	sqlite3_busy_timeout(db->sql, 10000);
	if (!db_exec(db, memory ? "PRAGMA journal_mode = MEMORY" : "PRAGMA journal_mode = WAL", error) ||
	    !db_exec(db, "PRAGMA synchronous = FULL", error) ||
	    !db_exec(db, "PRAGMA foreign_keys = ON", error) || !migrate(db, error)) {
		g_prefix_error(error, "%s: ", path);
		return NULL;
	}
	return g_steal_pointer(&db);
}

struct db *db_open_again(struct db *db, GError **error)
{
	const char *path = sqlite3_db_filename(db->sql, "main");

	if (!path || !path[0] || db->depth > 0 || !sqlite3_get_autocommit(db->sql))
		return NULL;
	return db_open(path, error);
}

void db_close(struct db *db)
{
	if (!db)
		return;
	g_clear_pointer(&db->stmts, g_hash_table_destroy); /* finalized before the close */
	sqlite3_close(db->sql);
	g_free(db);
}

/*
 * Transactions nest: the outermost is BEGIN IMMEDIATE ... COMMIT, an
 * inner one a savepoint, so that an operation with a transaction of its
 * own (trees_add()) can run inside a caller's, and its rollback undoes
 * only its own work.
 */
bool db_tx_begin(struct db *db, GError **error)
{
	g_autofree char *sql = NULL;

	if (db->depth == 0 || sqlite3_get_autocommit(db->sql)) {
		if (!db_exec(db, "BEGIN IMMEDIATE", error))
			return false;
		db->depth = 1;
		return true;
	}
	sql = g_strdup_printf("SAVEPOINT zd%u", db->depth);
	if (!db_exec(db, sql, error))
		return false;
	db->depth++;
	return true;
}

bool db_tx_commit(struct db *db, GError **error)
{
	g_autofree char *sql = NULL;

	if (db->depth <= 1) {
		if (!db_exec(db, "COMMIT", error))
			return false;
		db->depth = 0;
		return true;
	}
	sql = g_strdup_printf("RELEASE zd%u", db->depth - 1);
	if (!db_exec(db, sql, error))
		return false;
	db->depth--;
	return true;
}

void db_tx_rollback(struct db *db)
{
	g_autofree char *sql = NULL;

	if (sqlite3_get_autocommit(db->sql)) {
		db->depth = 0; /* sqlite ended it already (an I/O error, a full disk) */
		return;
	}
	if (db->depth <= 1) {
		sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
		db->depth = 0;
		return;
	}
	sql = g_strdup_printf("ROLLBACK TO zd%u; RELEASE zd%u", db->depth - 1, db->depth - 1);
	sqlite3_exec(db->sql, sql, NULL, NULL, NULL);
	db->depth--;
}

char *db_version_string(void)
{
	return g_strdup_printf("sqlite %s", sqlite3_libversion());
}
