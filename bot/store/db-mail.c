/*
 * The store: mail read from the sources (mails), each source's cursor
 * (mail_cursors) and last read (mail_sources). See db.h.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <string.h>

#include "bot/bot.h"
#include "bot/store/db-private.h"

static const char *const mail_state_names[] = {
	[MAIL_NEW] = "new", [MAIL_DONE] = "done", [MAIL_QUARANTINED] = "quarantined",
};

const char *db_mail_state_name(enum mail_state state)
{
	g_return_val_if_fail((size_t)state < G_N_ELEMENTS(mail_state_names), "?");
	return mail_state_names[state];
}

void mail_row_free(struct mail_row *row)
{
	if (!row)
		return;
	g_free(row->message_id);
	g_free(row->hash);
	g_free(row->source);
	g_free(row->reason);
	g_free(row->kind);
	g_free(row->sender);
	g_free(row->subject);
	g_free(row);
}

bool db_mail_add(struct db *db, struct mail_row *row, const char *raw, gsize len,
		 GBytes *parse, bool *added, GError **error)
{
	g_autoptr(GBytes) text = g_bytes_new_static(raw, len);

	/* A mail refused unread keeps the size its source listed. */
	if (!db_run(db, error,
		    "INSERT OR IGNORE INTO mails (message_id, hash, source, uid, received, state, "
		    "reason, kind, sender, subject, size, raw, parse) "
		    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
		    "tttiitttttibb", row->message_id ? row->message_id : "", row->hash,
		    row->source, (gint64)row->uid, row->received, db_mail_state_name(row->state),
		    row->reason, row->kind, row->sender, row->subject,
		    len ? (gint64)len : row->size, text, parse))
		return false;
	*added = sqlite3_changes(db->sql) == 1;
	if (len)
		row->size = (gint64)len;
	if (*added)
		row->id = sqlite3_last_insert_rowid(db->sql);
	return true;
}

bool db_mail_known(struct db *db, const char *message_id, bool *known, GError **error)
{
	gint64 one = 0;

	if (!db_int(db, &one, 0, error,
		    "SELECT 1 FROM mails WHERE message_id = ?1 AND message_id != '' LIMIT 1", "t",
		    message_id))
		return false;
	*known = one == 1;
	return true;
}

#define MAIL_COLUMNS \
	"id, message_id, hash, source, uid, received, state, reason, kind, sender, subject, " \
	"size FROM mails "

static void *mail_read(sqlite3_stmt *stmt)
{
	struct mail_row *r = g_new0(struct mail_row, 1);

	r->id = sqlite3_column_int64(stmt, 0);
	r->message_id = db_col_text(stmt, 1);
	r->hash = db_col_text(stmt, 2);
	r->source = db_col_text(stmt, 3);
	r->uid = (guint32)sqlite3_column_int64(stmt, 4);
	r->received = sqlite3_column_int64(stmt, 5);
	r->state = (enum mail_state)db_name_index(mail_state_names,
					       G_N_ELEMENTS(mail_state_names),
					       (const char *)sqlite3_column_text(stmt, 6), MAIL_NEW);
	r->reason = db_col_text(stmt, 7);
	r->kind = db_col_text(stmt, 8);
	r->sender = db_col_text(stmt, 9);
	r->subject = db_col_text(stmt, 10);
	r->size = sqlite3_column_int64(stmt, 11);
	return r;
}

struct mail_row *db_mail_by_message_id(struct db *db, const char *message_id, GError **error)
{
	gpointer row = NULL;

	db_one(db, &row, mail_read, error,
	       "SELECT " MAIL_COLUMNS "WHERE message_id = ?1 AND message_id != '' "
	       "ORDER BY id LIMIT 1", "t", message_id);
	return row;
}

struct mail_row *db_mail_get(struct db *db, gint64 id, GError **error)
{
	gpointer row = NULL;

	if (!db_one(db, &row, mail_read, error, "SELECT " MAIL_COLUMNS "WHERE id = ?1", "i", id))
		return NULL;
	if (!row)
		g_set_error(error, BOT_ERROR, BOT_ERROR_NOT_FOUND, "no mail %" G_GINT64_FORMAT, id);
	return row;
}

GPtrArray *db_mail_list(struct db *db, int state, unsigned limit, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)mail_row_free);

	if (!db_list(db, out, mail_read, error,
		     "SELECT " MAIL_COLUMNS "WHERE ?1 IS NULL OR state = ?1 ORDER BY id LIMIT ?2",
		     "ti", state < 0 ? NULL : db_mail_state_name((enum mail_state)state),
		     (gint64)limit))
		return NULL;
	return g_steal_pointer(&out);
}

bool db_mail_count(struct db *db, enum mail_state state, gint64 *count, GError **error)
{
	return db_int(db, count, 0, error, "SELECT count(*) FROM mails WHERE state = ?1", "t",
		      db_mail_state_name(state));
}

/* A blob column's bytes (NULL for NULL), copied out of sqlite's buffer. */
struct blob_read {
	bool found;
	GBytes *bytes;
};

static void read_blob(sqlite3_stmt *row, void *data)
{
	struct blob_read *b = data;

	b->found = true;
	if (sqlite3_column_type(row, 0) != SQLITE_NULL)
		b->bytes = g_bytes_new(sqlite3_column_blob(row, 0),
				       (gsize)sqlite3_column_bytes(row, 0));
}

/* The raw text, NUL-terminated, copied once out of sqlite's buffer. */
struct raw_read {
	bool found;
	char *text;
	gsize len;
};

static void read_raw(sqlite3_stmt *row, void *data)
{
	struct raw_read *r = data;
	const void *blob = sqlite3_column_blob(row, 0);

	r->found = true;
	r->len = blob ? (gsize)sqlite3_column_bytes(row, 0) : 0;
	r->text = g_malloc(r->len + 1);
	if (r->len)
		memcpy(r->text, blob, r->len);
	r->text[r->len] = '\0';
}

char *db_mail_raw(struct db *db, gint64 id, gsize *len, GError **error)
{
	struct raw_read r = { 0 };

	if (!db_rows(db, read_raw, &r, error, "SELECT raw FROM mails WHERE id = ?1", "i", id)) {
		g_free(r.text);
		return NULL;
	}
	if (!r.found) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_NOT_FOUND, "no mail %" G_GINT64_FORMAT, id);
		return NULL;
	}
	*len = r.len;
	return r.text;
}

bool db_mail_parse(struct db *db, gint64 id, GBytes **parse, GError **error)
{
	struct blob_read b = { 0 };

	*parse = NULL;
	if (!db_rows(db, read_blob, &b, error, "SELECT parse FROM mails WHERE id = ?1", "i", id)) {
		g_clear_pointer(&b.bytes, g_bytes_unref);
		return false;
	}
	if (!b.found) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_NOT_FOUND, "no mail %" G_GINT64_FORMAT, id);
		return false;
	}
	*parse = b.bytes;
	return true;
}

bool db_mail_set_parse(struct db *db, gint64 id, GBytes *parse, GError **error)
{
	return db_run(db, error, "UPDATE mails SET parse = ?2 WHERE id = ?1", "ib", id, parse);
}

bool db_mail_set_state(struct db *db, gint64 id, enum mail_state state, GError **error)
{
	return db_run(db, error, "UPDATE mails SET state = ?2 WHERE id = ?1", "it", id,
		      db_mail_state_name(state));
}

struct cursor_read {
	guint32 uidvalidity, last_uid;
	bool found;
};

static void read_cursor(sqlite3_stmt *row, void *data)
{
	struct cursor_read *c = data;

	c->uidvalidity = (guint32)sqlite3_column_int64(row, 0);
	c->last_uid = (guint32)sqlite3_column_int64(row, 1);
	c->found = true;
}

bool db_cursor_get(struct db *db, const char *source, guint32 *uidvalidity, guint32 *last_uid,
		   bool *found, GError **error)
{
	struct cursor_read c = { 0 };
	bool ok = db_rows(db, read_cursor, &c, error,
			  "SELECT uidvalidity, last_uid FROM mail_cursors WHERE source = ?1", "t",
			  source);

	*uidvalidity = ok ? c.uidvalidity : 0;
	*last_uid = ok ? c.last_uid : 0;
	*found = ok && c.found;
	return ok;
}

bool db_cursor_put(struct db *db, const char *source, guint32 uidvalidity, guint32 last_uid,
		   gint64 now, GError **error)
{
	return db_run(db, error,
		      "INSERT INTO mail_cursors (source, uidvalidity, last_uid, updated) "
		      "VALUES (?1, ?2, ?3, ?4) ON CONFLICT (source) DO UPDATE SET "
		      "uidvalidity = excluded.uidvalidity, last_uid = excluded.last_uid, "
		      "updated = excluded.updated",
		      "tiii", source, (gint64)uidvalidity, (gint64)last_uid, now);
}

void source_row_free(struct source_row *row)
{
	if (!row)
		return;
	g_free(row->source);
	g_free(row->last_error);
	g_free(row);
}

bool db_source_read(struct db *db, const char *source, gint64 now, const char *failure,
		    GError **error)
{
	return db_run(db, error,
		      "INSERT INTO mail_sources (source, last_read, failed, last_error) "
		      "VALUES (?1, CASE WHEN ?3 IS NULL THEN ?2 ELSE 0 END, "
		      "CASE WHEN ?3 IS NULL THEN 0 ELSE ?2 END, ?3) "
		      "ON CONFLICT (source) DO UPDATE SET "
		      "last_read = CASE WHEN ?3 IS NULL THEN ?2 ELSE last_read END, "
		      "failed = excluded.failed, last_error = ?3",
		      "tit", source, now, failure);
}

static void *source_read(sqlite3_stmt *stmt)
{
	struct source_row *r = g_new0(struct source_row, 1);

	r->source = db_col_text(stmt, 0);
	r->last_read = sqlite3_column_int64(stmt, 1);
	r->failed = sqlite3_column_int64(stmt, 2);
	r->last_error = db_col_text(stmt, 3);
	return r;
}

GPtrArray *db_source_list(struct db *db, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)source_row_free);

	if (!db_list(db, out, source_read, error,
		     "SELECT source, last_read, failed, last_error FROM mail_sources ORDER BY source",
		     ""))
		return NULL;
	return g_steal_pointer(&out);
}
