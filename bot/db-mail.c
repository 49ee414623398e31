/*
 * The store: the outbox. See db.h.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <string.h>

#include "bot/bot.h"
#include "bot/db-private.h"

const char *db_outbox_kind_name(enum outbox_kind kind)
{
	static const char *const names[] = { [OUTBOX_REPORT] = "report", [OUTBOX_FIXED] = "fixed" };

	g_return_val_if_fail((size_t)kind < G_N_ELEMENTS(names), "?");
	return names[kind];
}

const char *db_outbox_state_name(enum outbox_state state)
{
	static const char *const names[] = {
		[OUTBOX_QUEUED] = "queued", [OUTBOX_SENT] = "sent", [OUTBOX_ERROR] = "error",
	};

	g_return_val_if_fail((size_t)state < G_N_ELEMENTS(names), "?");
	return names[state];
}

static enum outbox_kind kind_parse(const char *name)
{
	return name && strcmp(name, "fixed") == 0 ? OUTBOX_FIXED : OUTBOX_REPORT;
}

static enum outbox_state state_parse(const char *name)
{
	if (name && strcmp(name, "sent") == 0)
		return OUTBOX_SENT;
	if (name && strcmp(name, "error") == 0)
		return OUTBOX_ERROR;
	return OUTBOX_QUEUED;
}

void outbox_row_free(struct outbox_row *row)
{
	if (!row)
		return;
	g_free(row->message_id);
	g_free(row->in_reply_to);
	g_strfreev(row->references);
	g_free(row->subject);
	g_strfreev(row->recipients);
	g_free(row->raw);
	g_free(row->last_error);
	g_free(row->path);
	g_free(row);
}

bool db_outbox_add(struct db *db, struct outbox_row *row, bool *added, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = db_prepare(db,
		"INSERT OR IGNORE INTO outbox (finding_id, kind, message_id, in_reply_to, refs, "
		"subject, recipients, raw, state, created, last_error) "
		"VALUES (nullif(?1, 0), ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)", error);
	g_autofree char *refs = NULL;
	g_autofree char *recipients = NULL;

	if (!stmt)
		return false;
	refs = db_join_list(row->references);
	recipients = db_join_list(row->recipients);
	sqlite3_bind_int64(stmt, 1, row->finding_id);
	db_bind_text(stmt, 2, db_outbox_kind_name(row->kind));
	db_bind_text(stmt, 3, row->message_id);
	db_bind_text(stmt, 4, row->in_reply_to);
	db_bind_text(stmt, 5, refs);
	db_bind_text(stmt, 6, row->subject);
	db_bind_text(stmt, 7, recipients);
	db_bind_text(stmt, 8, row->raw);
	db_bind_text(stmt, 9, db_outbox_state_name(row->state));
	sqlite3_bind_int64(stmt, 10, row->created);
	db_bind_text(stmt, 11, row->last_error);
	if (!db_step_done(db, stmt, error))
		return false;
	*added = sqlite3_changes(db->sql) == 1;
	if (*added)
		row->id = sqlite3_last_insert_rowid(db->sql);
	return true;
}

#define OUTBOX_COLUMNS \
	"id, coalesce(finding_id, 0), kind, message_id, in_reply_to, refs, subject, recipients, " \
	"raw, state, created, sent, attempts, last_error, path FROM outbox "

static struct outbox_row *outbox_read(sqlite3_stmt *stmt)
{
	struct outbox_row *r = g_new0(struct outbox_row, 1);

	r->id = sqlite3_column_int64(stmt, 0);
	r->finding_id = sqlite3_column_int64(stmt, 1);
	r->kind = kind_parse((const char *)sqlite3_column_text(stmt, 2));
	r->message_id = db_col_text(stmt, 3);
	r->in_reply_to = db_col_text(stmt, 4);
	r->references = db_col_list(stmt, 5);
	r->subject = db_col_text(stmt, 6);
	r->recipients = db_col_list(stmt, 7);
	r->raw = db_col_text(stmt, 8);
	r->state = state_parse((const char *)sqlite3_column_text(stmt, 9));
	r->created = sqlite3_column_int64(stmt, 10);
	r->sent = sqlite3_column_int64(stmt, 11);
	r->attempts = (unsigned)sqlite3_column_int64(stmt, 12);
	r->last_error = db_col_text(stmt, 13);
	r->path = db_col_text(stmt, 14);
	return r;
}

GPtrArray *db_outbox_list(struct db *db, int state, unsigned limit, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = db_prepare(db,
		"SELECT " OUTBOX_COLUMNS "WHERE ?1 IS NULL OR state = ?1 ORDER BY id LIMIT ?2", error);
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)outbox_row_free);
	int rc;

	if (!stmt)
		return NULL;
	db_bind_text(stmt, 1, state < 0 ? NULL : db_outbox_state_name((enum outbox_state)state));
	sqlite3_bind_int64(stmt, 2, limit);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
		g_ptr_array_add(out, outbox_read(stmt));
	if (rc != SQLITE_DONE) {
		db_sql_error(db, error, "listing the outbox");
		return NULL;
	}
	return g_steal_pointer(&out);
}

struct outbox_row *db_outbox_of_finding(struct db *db, gint64 finding_id, enum outbox_kind kind,
					GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = db_prepare(db,
		"SELECT " OUTBOX_COLUMNS "WHERE finding_id = ?1 AND kind = ?2", error);
	int rc;

	if (!stmt)
		return NULL;
	sqlite3_bind_int64(stmt, 1, finding_id);
	db_bind_text(stmt, 2, db_outbox_kind_name(kind));
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW)
		return outbox_read(stmt);
	if (rc != SQLITE_DONE)
		db_sql_error(db, error, "reading a finding's mail");
	return NULL;
}

bool db_outbox_sent(struct db *db, gint64 id, gint64 when, const char *path, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = db_prepare(db,
		"UPDATE outbox SET state = 'sent', sent = ?1, path = ?2, attempts = attempts + 1, "
		"last_error = NULL WHERE id = ?3 AND state = 'queued'", error);

	if (!stmt)
		return false;
	sqlite3_bind_int64(stmt, 1, when);
	db_bind_text(stmt, 2, path);
	sqlite3_bind_int64(stmt, 3, id);
	return db_step_done(db, stmt, error);
}

bool db_outbox_failed(struct db *db, gint64 id, const char *why, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = db_prepare(db,
		"UPDATE outbox SET attempts = attempts + 1, last_error = ?1 WHERE id = ?2", error);

	if (!stmt)
		return false;
	db_bind_text(stmt, 1, why);
	sqlite3_bind_int64(stmt, 2, id);
	return db_step_done(db, stmt, error);
}
