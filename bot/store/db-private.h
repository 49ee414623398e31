/*
 * What the files of the store share (notmuch's lib/database-private.h):
 * the handle and the statement helpers. Private to bot/store/db*.c, the only
 * files that include it and, through it, <sqlite3.h>; everything else
 * uses db.h, where nothing of sqlite's shows.
 *
 * bot/store/db.c: opening, migrations, transactions, these helpers;
 * bot/store/db-trees.c: trees, branches, head events, selected commits;
 * bot/store/db-builds.c: builds, diagnostics, verdicts, images, boots;
 * bot/store/db-jobs.c: the job queue; bot/store/db-findings.c: findings;
 * bot/store/db-outbox.c: the outbox and its recipients (outbox, outbox_rcpt);
 * bot/store/db-mail.c: mail read, cursors and sources (mails, mail_cursors,
 * mail_sources); bot/store/db-series.c: patch series (series, series_*);
 * bot/store/db-commands.c: mail commands, subscriptions, mutes.
 */
#ifndef ZERODAY_DB_PRIVATE_H
#define ZERODAY_DB_PRIVATE_H

#include <stdbool.h>
#include <glib.h>
#include <sqlite3.h>

#include "bot/store/db.h"

struct db {
	sqlite3 *sql;
	GHashTable *stmts; /* SQL text -> struct db_cached: statements prepared once */
	unsigned depth; /* transactions open: 0 none, 1 BEGIN, more: savepoints inside it */
};

G_DEFINE_AUTOPTR_CLEANUP_FUNC(sqlite3_stmt, sqlite3_finalize)

/*
 * Sets @error from the handle's last sqlite error, prefixed with @what (a
 * statement or what was being done), and returns false. Busy, locked,
 * full, I/O and out-of-memory errors are BOT_ERROR_TEMPORARY, unique and
 * primary key violations BOT_ERROR_EXISTS, the rest BOT_ERROR_FAILED.
 */
bool db_sql_error(struct db *db, GError **error, const char *what);

/* Runs @sql, which returns no rows (one statement or several). */
bool db_exec(struct db *db, const char *sql, GError **error);

/* Binds @text (copied) to parameter @i; NULL for a NULL @text. */
void db_bind_text(sqlite3_stmt *stmt, int i, const char *text);

/* Copies text column @i out of sqlite's buffer (caller frees); NULL stays NULL. */
char *db_col_text(sqlite3_stmt *stmt, int i);

/*
 * Statements run by SQL text, fossil's db_int()/db_text() and a row loop.
 * @sql is prepared once per handle (a handle is used by one thread at a
 * time: every thread opens its own) and kept until db_close(); it is
 * reset and its bindings cleared after each use. @args names, one letter
 * a parameter in order from ?1, the types of the arguments after it:
 *   i gint64 (cast smaller integers), n int (bool, enums, guint),
 *   t const char * (NULL binds NULL, text copied), f double,
 *   b GBytes * (NULL binds NULL; the bytes are not copied: they must
 *     outlive the call, which they do, as bindings are cleared after it).
 * Errors are translated once, through db_sql_error() with @sql as what.
 */

/* Runs @sql, which returns no rows. */
bool db_run(struct db *db, GError **error, const char *sql, const char *args, ...);

/* The first column of the first row as an integer into *@out; @dflt when no row or NULL. */
bool db_int(struct db *db, gint64 *out, gint64 dflt, GError **error, const char *sql,
	    const char *args, ...);

/*
 * The first column of the first row as text into *@out (the caller frees);
 * a copy of @dflt (which may be NULL) when no row or NULL.
 */
bool db_text(struct db *db, char **out, const char *dflt, GError **error, const char *sql,
	     const char *args, ...);

/* Calls @read for each row of @sql, with @data; the row is sqlite's, read it there. */
typedef void (*db_read_fn)(sqlite3_stmt *row, void *data);
bool db_rows(struct db *db, db_read_fn read, void *data, GError **error, const char *sql,
	     const char *args, ...);

/*
 * What a row becomes: @read returns a new object for the row. db_list()
 * appends one per row to @out (which owns them if it has a free function);
 * db_one() stores the first row's into *@out (the caller frees), NULL if
 * there is no row.
 */
typedef void *(*db_new_fn)(sqlite3_stmt *row);
bool db_list(struct db *db, GPtrArray *out, db_new_fn read, GError **error, const char *sql,
	     const char *args, ...);
bool db_one(struct db *db, gpointer *out, db_new_fn read, GError **error, const char *sql,
	    const char *args, ...);

/* Appends the first column of each row of @sql, a gint64, to @out. */
bool db_ids(struct db *db, GArray *out, GError **error, const char *sql, const char *args, ...);

/* The rows the last INSERT, UPDATE or DELETE on this handle changed. */
int db_changes(struct db *db);

/*
 * The index of @name in @names (@n of them, NULL entries skipped): how an
 * enum stored by its name is read back; @fallback for NULL or an
 * unknown name.
 */
int db_name_index(const char *const *names, size_t n, const char *name, int fallback);

/*
 * Lists are stored one item a line; items never hold a newline.
 * db_join_list() returns @list (NULL: empty) so joined, db_col_list()
 * column @i split back (empty for NULL or ""); the caller frees both.
 */
char *db_join_list(char **list);
char **db_col_list(sqlite3_stmt *stmt, int i);

#endif
