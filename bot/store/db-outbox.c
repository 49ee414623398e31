/*
 * The store: the outbox. See db.h.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <string.h>

#include "bot/bot.h"
#include "bot/store/db-private.h"

static const char *const kind_names[] = {
	[OUTBOX_REPORT] = "report", [OUTBOX_FIXED] = "fixed", [OUTBOX_DIGEST] = "digest",
	[OUTBOX_TEST] = "test", [OUTBOX_DROPPED] = "dropped", [OUTBOX_CLEAN] = "clean",
	[OUTBOX_SERIES] = "series", [OUTBOX_COMMAND] = "command",
};

static const char *const state_names[] = {
	[OUTBOX_QUEUED] = "queued", [OUTBOX_SENDING] = "sending", [OUTBOX_SENT] = "sent",
	[OUTBOX_HELD] = "held", [OUTBOX_ERROR] = "error",
};

static const char *const rcpt_names[] = {
	[RCPT_PENDING] = "pending", [RCPT_SENT] = "sent", [RCPT_REFUSED] = "refused",
	[RCPT_HELD] = "held", [RCPT_DIGESTED] = "digested",
};

const char *db_outbox_kind_name(enum outbox_kind kind)
{
	g_return_val_if_fail((size_t)kind < G_N_ELEMENTS(kind_names), "?");
	return kind_names[kind];
}

const char *db_outbox_state_name(enum outbox_state state)
{
	g_return_val_if_fail((size_t)state < G_N_ELEMENTS(state_names), "?");
	return state_names[state];
}

const char *db_rcpt_state_name(enum rcpt_state state)
{
	g_return_val_if_fail((size_t)state < G_N_ELEMENTS(rcpt_names), "?");
	return rcpt_names[state];
}

static enum outbox_kind kind_parse(const char *name)
{
	return (enum outbox_kind)db_name_index(kind_names, G_N_ELEMENTS(kind_names), name,
					    OUTBOX_REPORT);
}

static enum outbox_state state_parse(const char *name)
{
	return (enum outbox_state)db_name_index(state_names, G_N_ELEMENTS(state_names), name,
					     OUTBOX_QUEUED);
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
	g_autofree char *refs = db_join_list(row->references);
	g_autofree char *recipients = db_join_list(row->recipients);

	if (!db_run(db, error,
		    "INSERT OR IGNORE INTO outbox (finding_id, kind, message_id, in_reply_to, refs, "
		    "subject, recipients, raw, state, created, last_error) "
		    "VALUES (nullif(?1, 0), ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
		    "ittttttttit", row->finding_id, db_outbox_kind_name(row->kind), row->message_id,
		    row->in_reply_to, refs, row->subject, recipients, row->raw,
		    db_outbox_state_name(row->state), row->created, row->last_error))
		return false;
	*added = db_changes(db) == 1;
	if (*added)
		row->id = sqlite3_last_insert_rowid(db->sql);
	return true;
}

#define OUTBOX_COLUMNS \
	"id, coalesce(finding_id, 0), kind, message_id, in_reply_to, refs, subject, recipients, " \
	"raw, state, created, sent, attempts, last_error, path, next_try FROM outbox "

static void *outbox_read(sqlite3_stmt *stmt)
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
	r->next_try = sqlite3_column_int64(stmt, 15);
	return r;
}

GPtrArray *db_outbox_list(struct db *db, int state, unsigned limit, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)outbox_row_free);

	if (!db_list(db, out, outbox_read, error,
		     "SELECT " OUTBOX_COLUMNS "WHERE ?1 IS NULL OR state = ?1 ORDER BY id LIMIT ?2",
		     "ti", state < 0 ? NULL : db_outbox_state_name((enum outbox_state)state),
		     (gint64)limit))
		return NULL;
	return g_steal_pointer(&out);
}

struct outbox_row *db_outbox_of_finding(struct db *db, gint64 finding_id, enum outbox_kind kind,
					GError **error)
{
	gpointer row = NULL;

	db_one(db, &row, outbox_read, error,
	       "SELECT " OUTBOX_COLUMNS "WHERE finding_id = ?1 AND kind = ?2", "it", finding_id,
	       db_outbox_kind_name(kind));
	return row;
}

GPtrArray *db_outbox_due(struct db *db, gint64 now, unsigned limit, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)outbox_row_free);

	if (!db_list(db, out, outbox_read, error,
		     "SELECT " OUTBOX_COLUMNS "WHERE state IN ('queued', 'sending') AND next_try <= ?1 "
		     "ORDER BY id LIMIT ?2", "ii", now, (gint64)limit))
		return NULL;
	return g_steal_pointer(&out);
}

static void counts_read(sqlite3_stmt *row, void *data)
{
	struct outbox_counts *out = data;

	out->queued = sqlite3_column_int64(row, 0);
	out->held = sqlite3_column_int64(row, 1);
	out->sent = sqlite3_column_int64(row, 2);
	out->failed = sqlite3_column_int64(row, 3);
	out->oldest_queued = sqlite3_column_int64(row, 4);
}

bool db_outbox_counts(struct db *db, struct outbox_counts *out, GError **error)
{
	memset(out, 0, sizeof(*out));
	return db_rows(db, counts_read, out, error,
		       "SELECT coalesce(sum(state IN ('queued', 'sending')), 0), "
		       "coalesce(sum(state = 'held'), 0), coalesce(sum(state = 'sent'), 0), "
		       "coalesce(sum(state = 'error'), 0), "
		       "coalesce(min(CASE WHEN state IN ('queued', 'sending') THEN created END), 0) "
		       "FROM outbox", NULL);
}

/* The first column of each row of @sql (?1 bound to @since), as a GArray of gint64. */
static GArray *latencies(struct db *db, const char *sql, gint64 since, GError **error)
{
	g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(gint64));

	if (!db_ids(db, out, error, sql, "i", since))
		return NULL;
	return g_steal_pointer(&out);
}

GArray *db_latency_push_report(struct db *db, gint64 since, GError **error)
{
	return latencies(db,
		"SELECT o.sent - t.queued FROM outbox o "
		"JOIN findings f ON f.id = o.finding_id "
		"JOIN tests t ON t.tree_id = f.tree_id AND t.commit_id = f.head "
		"WHERE o.kind = 'report' AND o.state = 'sent' AND o.sent >= ?1",
		since, error);
}

GArray *db_latency_post_reply(struct db *db, gint64 since, GError **error)
{
	/* A series reply is In-Reply-To one of the series' mails. */
	return latencies(db,
		"SELECT min(o.sent) - (SELECT min(m2.received) FROM series_parts p2 "
		"  JOIN mails m2 ON m2.id = p2.mail_id WHERE p2.series_id = p.series_id) "
		"FROM outbox o JOIN mails m ON m.message_id = o.in_reply_to "
		"JOIN series_parts p ON p.mail_id = m.id "
		"WHERE o.kind = 'series' AND o.state = 'sent' "
		"GROUP BY p.series_id HAVING min(o.sent) >= ?1",
		since, error);
}

struct outbox_row *db_outbox_get(struct db *db, gint64 id, GError **error)
{
	gpointer row = NULL;

	if (!db_one(db, &row, outbox_read, error, "SELECT " OUTBOX_COLUMNS "WHERE id = ?1", "i",
		    id))
		return NULL;
	if (!row)
		g_set_error(error, BOT_ERROR, BOT_ERROR_NOT_FOUND, "no mail %" G_GINT64_FORMAT, id);
	return row;
}

/*
 * Sets *@out to column 0 of @sql (which takes a Message-ID as ?1) for the
 * first of @message_ids (with or without angle brackets) it has a row
 * for; 0 when none has.
 */
static bool first_message_id(struct db *db, const char *sql, const char *const *message_ids,
			     gint64 *out, GError **error)
{
	*out = 0;
	for (const char *const *m = message_ids; m && *m && !*out; m++) {
		g_autofree char *bare = g_strdup(*m);
		size_t len;

		g_strstrip(bare);
		len = strlen(bare);
		if (len >= 2 && bare[0] == '<' && bare[len - 1] == '>') {
			bare[len - 1] = '\0';
			memmove(bare, bare + 1, len - 1);
		}
		if (!db_int(db, out, 0, error, sql, "t", bare))
			return false;
	}
	return true;
}

bool db_outbox_finding_of(struct db *db, const char *const *message_ids, gint64 *finding_id,
			  GError **error)
{
	return first_message_id(db,
				"SELECT finding_id FROM outbox WHERE message_id = ?1 "
				"AND finding_id IS NOT NULL", message_ids, finding_id, error);
}

bool db_outbox_of_message_ids(struct db *db, const char *const *message_ids, gint64 *outbox_id,
			      GError **error)
{
	return first_message_id(db, "SELECT id FROM outbox WHERE message_id = ?1", message_ids,
				outbox_id, error);
}

bool db_outbox_attempt(struct db *db, gint64 id, GError **error)
{
	return db_run(db, error,
		      "UPDATE outbox SET state = 'sending', attempts = attempts + 1 WHERE id = ?1",
		      "i", id);
}

bool db_outbox_settle(struct db *db, gint64 id, enum outbox_state state, gint64 sent,
		      gint64 next_try, const char *path, const char *why, GError **error)
{
	return db_run(db, error,
		      "UPDATE outbox SET state = ?1, sent = CASE WHEN ?2 = 0 THEN sent ELSE ?2 END, "
		      "next_try = ?3, path = coalesce(?4, path), last_error = ?5 WHERE id = ?6",
		      "tiitti", db_outbox_state_name(state), sent, next_try, path, why, id);
}

void rcpt_row_free(struct rcpt_row *row)
{
	if (!row)
		return;
	g_free(row->address);
	g_free(row->reply);
	g_free(row);
}

bool db_rcpt_add(struct db *db, gint64 outbox_id, const char *address, GError **error)
{
	return db_run(db, error,
		      "INSERT OR IGNORE INTO outbox_rcpt (outbox_id, address, state) "
		      "VALUES (?1, ?2, 'pending')", "it", outbox_id, address);
}

static void *rcpt_read(sqlite3_stmt *stmt)
{
	struct rcpt_row *r = g_new0(struct rcpt_row, 1);

	r->outbox_id = sqlite3_column_int64(stmt, 0);
	r->address = db_col_text(stmt, 1);
	r->state = (enum rcpt_state)db_name_index(rcpt_names, G_N_ELEMENTS(rcpt_names),
					       (const char *)sqlite3_column_text(stmt, 2),
					       RCPT_PENDING);
	r->updated = sqlite3_column_int64(stmt, 3);
	r->reply = db_col_text(stmt, 4);
	r->digest_id = sqlite3_column_int64(stmt, 5);
	return r;
}

GPtrArray *db_rcpt_list(struct db *db, gint64 outbox_id, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)rcpt_row_free);

	if (!db_list(db, out, rcpt_read, error,
		     "SELECT outbox_id, address, state, updated, reply, coalesce(digest_id, 0) "
		     "FROM outbox_rcpt WHERE outbox_id = ?1 ORDER BY address", "i", outbox_id))
		return NULL;
	return g_steal_pointer(&out);
}

bool db_rcpt_set(struct db *db, gint64 outbox_id, const char *address, enum rcpt_state state,
		 gint64 when, const char *reply, gint64 digest_id, GError **error)
{
	return db_run(db, error,
		      "UPDATE outbox_rcpt SET state = ?1, updated = ?2, reply = ?3, "
		      "digest_id = nullif(?4, 0) WHERE outbox_id = ?5 AND lower(address) = lower(?6)",
		      "titiit", db_rcpt_state_name(state), when, reply, digest_id, outbox_id, address);
}

bool db_rcpt_count_sent(struct db *db, const char *address, gint64 since, gint64 *count,
			GError **error)
{
	if (address)
		return db_int(db, count, 0, error,
			      "SELECT count(*) FROM outbox_rcpt WHERE state = 'sent' "
			      "AND lower(address) = lower(?1) AND updated > ?2", "ti", address, since);
	return db_int(db, count, 0, error,
		      "SELECT count(DISTINCT outbox_id) FROM outbox_rcpt WHERE state = 'sent' "
		      "AND updated > ?1", "i", since);
}

bool db_rcpt_count(struct db *db, gint64 outbox_id, enum rcpt_state state, gint64 *count,
		   GError **error)
{
	return db_int(db, count, 0, error,
		      "SELECT count(*) FROM outbox_rcpt WHERE outbox_id = ?1 AND state = ?2", "it",
		      outbox_id, db_rcpt_state_name(state));
}

static void address_read(sqlite3_stmt *row, void *data)
{
	g_strv_builder_add(data, (const char *)sqlite3_column_text(row, 0));
}

char **db_rcpt_held_addresses(struct db *db, GError **error)
{
	g_autoptr(GStrvBuilder) b = g_strv_builder_new();

	if (!db_rows(db, address_read, b, error,
		     "SELECT DISTINCT lower(address) FROM outbox_rcpt WHERE state = 'held' "
		     "ORDER BY 1", NULL))
		return NULL;
	return g_strv_builder_end(b);
}

GArray *db_rcpt_held_for(struct db *db, const char *address, GError **error)
{
	g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(gint64));

	if (!db_ids(db, out, error,
		    "SELECT outbox_id FROM outbox_rcpt WHERE state = 'held' "
		    "AND lower(address) = lower(?1) ORDER BY outbox_id", "t", address))
		return NULL;
	return g_steal_pointer(&out);
}
