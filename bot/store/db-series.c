/*
 * The store: the patch series assembled from mail (series, series_parts,
 * series_ids, series_bases, series_results). See db.h.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <string.h>

#include "bot/bot.h"
#include "bot/store/db-private.h"

static const char *const series_state_names[] = {
	[SERIES_WAITING] = "waiting", [SERIES_TESTING] = "testing", [SERIES_TESTED] = "tested",
	[SERIES_SUPERSEDED] = "superseded", [SERIES_NO_BASE] = "could-not-apply",
	[SERIES_IGNORED] = "ignored",
};

const char *db_series_state_name(enum series_state state)
{
	g_return_val_if_fail((size_t)state < G_N_ELEMENTS(series_state_names), "?");
	return series_state_names[state];
}

static void series_part_free(struct series_part *p)
{
	g_free(p->message_id);
	g_free(p->subject);
	g_free(p->commit);
	g_free(p);
}

static void series_base_free(struct series_base *b)
{
	g_free(b->tree);
	g_free(b->branch);
	g_free(b->commit);
	g_free(b->how);
	g_free(b->reason);
	g_free(b);
}

static void series_result_free(struct series_result *r)
{
	g_free(r->target);
	g_free(r->commit);
	g_free(r->result);
	g_free(r->detail);
	g_free(r->boot);
	g_free(r);
}

const struct series_part *series_row_part(const struct series_row *s, guint n)
{
	for (guint i = 0; i < s->parts->len; i++) {
		const struct series_part *p = s->parts->pdata[i];

		if (p->n == n)
			return p;
	}
	return NULL;
}

void series_row_free(struct series_row *row)
{
	if (!row)
		return;
	g_free(row->sender);
	g_free(row->title);
	g_free(row->tree);
	g_free(row->base);
	g_free(row->base_how);
	g_free(row->note);
	if (row->parts)
		g_ptr_array_unref(row->parts);
	if (row->bases)
		g_ptr_array_unref(row->bases);
	if (row->results)
		g_ptr_array_unref(row->results);
	g_free(row);
}

bool db_series_add(struct db *db, struct series_row *row, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = db_prepare(db,
		"INSERT INTO series (sender, title, version, total, state, created, last_part, "
		"note, versioned, resend) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)", error);

	if (!stmt)
		return false;
	db_bind_text(stmt, 1, row->sender);
	db_bind_text(stmt, 2, row->title);
	sqlite3_bind_int64(stmt, 3, row->version);
	sqlite3_bind_int64(stmt, 4, row->total);
	db_bind_text(stmt, 5, db_series_state_name(row->state));
	sqlite3_bind_int64(stmt, 6, row->created);
	sqlite3_bind_int64(stmt, 7, row->last_part);
	db_bind_text(stmt, 8, row->note);
	sqlite3_bind_int(stmt, 9, row->versioned);
	sqlite3_bind_int(stmt, 10, row->resend);
	if (!db_step_done(db, stmt, error))
		return false;
	row->id = sqlite3_last_insert_rowid(db->sql);
	return true;
}

bool db_series_find(struct db *db, const char *sender, guint version, guint total,
		    const char *const *ids, gint64 *id, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = db_prepare(db,
		"SELECT s.id FROM series_ids i JOIN series s ON s.id = i.series_id "
		"WHERE i.message_id = ?1 AND s.sender = ?2 AND (?3 = 0 OR s.version = ?3) "
		"AND s.total = ?4 "
		"ORDER BY s.id DESC LIMIT 1", error);

	*id = 0;
	if (!stmt)
		return false;
	for (const char *const *i = ids; i && *i && !*id; i++) {
		int rc;

		sqlite3_reset(stmt);
		db_bind_text(stmt, 1, *i);
		db_bind_text(stmt, 2, sender);
		sqlite3_bind_int64(stmt, 3, version);
		sqlite3_bind_int64(stmt, 4, total);
		rc = sqlite3_step(stmt);
		if (rc == SQLITE_ROW)
			*id = sqlite3_column_int64(stmt, 0);
		else if (rc != SQLITE_DONE)
			return db_sql_error(db, error, "finding a series");
	}
	return true;
}

bool db_series_add_ids(struct db *db, gint64 id, const char *const *ids, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = db_prepare(db,
		"INSERT OR IGNORE INTO series_ids (series_id, message_id) VALUES (?1, ?2)", error);

	if (!stmt)
		return false;
	for (const char *const *i = ids; i && *i; i++) {
		if (!**i)
			continue;
		sqlite3_reset(stmt);
		sqlite3_bind_int64(stmt, 1, id);
		db_bind_text(stmt, 2, *i);
		if (!db_step_done(db, stmt, error))
			return false;
	}
	return true;
}

bool db_series_add_part(struct db *db, gint64 id, guint n, gint64 mail_id,
			const char *message_id, gint64 now, bool *added, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = db_prepare(db,
		"INSERT OR IGNORE INTO series_parts (series_id, n, mail_id, message_id) "
		"VALUES (?1, ?2, ?3, ?4)", error);
	g_autoptr(sqlite3_stmt) touch = NULL;

	if (!stmt)
		return false;
	sqlite3_bind_int64(stmt, 1, id);
	sqlite3_bind_int64(stmt, 2, n);
	sqlite3_bind_int64(stmt, 3, mail_id);
	db_bind_text(stmt, 4, message_id);
	if (!db_step_done(db, stmt, error))
		return false;
	*added = sqlite3_changes(db->sql) == 1;
	if (!*added)
		return true;
	touch = db_prepare(db, "UPDATE series SET last_part = max(last_part, ?2) WHERE id = ?1",
			   error);
	if (!touch)
		return false;
	sqlite3_bind_int64(touch, 1, id);
	sqlite3_bind_int64(touch, 2, now);
	return db_step_done(db, touch, error);
}

bool db_series_part_commit(struct db *db, gint64 id, guint n, const char *commit,
			   GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = db_prepare(db,
		"UPDATE series_parts SET commit_id = ?3 WHERE series_id = ?1 AND n = ?2", error);

	if (!stmt)
		return false;
	sqlite3_bind_int64(stmt, 1, id);
	sqlite3_bind_int64(stmt, 2, n);
	db_bind_text(stmt, 3, commit);
	return db_step_done(db, stmt, error);
}

bool db_series_update(struct db *db, const struct series_row *row, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = db_prepare(db,
		"UPDATE series SET title = ?2, state = ?3, superseded_by = nullif(?4, 0), "
		"tree_id = nullif(?5, 0), base = ?6, base_how = ?7, note = ?8, version = ?9, "
		"versioned = ?10, resend = ?11 WHERE id = ?1", error);

	if (!stmt)
		return false;
	sqlite3_bind_int64(stmt, 1, row->id);
	db_bind_text(stmt, 2, row->title);
	db_bind_text(stmt, 3, db_series_state_name(row->state));
	sqlite3_bind_int64(stmt, 4, row->superseded_by);
	sqlite3_bind_int64(stmt, 5, row->tree_id);
	db_bind_text(stmt, 6, row->base);
	db_bind_text(stmt, 7, row->base_how);
	db_bind_text(stmt, 8, row->note);
	sqlite3_bind_int64(stmt, 9, row->version);
	sqlite3_bind_int(stmt, 10, row->versioned);
	sqlite3_bind_int(stmt, 11, row->resend);
	return db_step_done(db, stmt, error);
}

#define SERIES_COLUMNS \
	"s.id, s.sender, s.title, s.version, s.total, s.state, coalesce(s.superseded_by, 0), " \
	"s.created, s.last_part, coalesce(s.tree_id, 0), t.name, s.base, s.base_how, s.note, " \
	"s.versioned, s.resend " \
	"FROM series s LEFT JOIN trees t ON t.id = s.tree_id "

static struct series_row *series_read(sqlite3_stmt *stmt)
{
	struct series_row *r = g_new0(struct series_row, 1);

	r->id = sqlite3_column_int64(stmt, 0);
	r->sender = db_col_text(stmt, 1);
	r->title = db_col_text(stmt, 2);
	r->version = (guint)sqlite3_column_int64(stmt, 3);
	r->total = (guint)sqlite3_column_int64(stmt, 4);
	r->state = (enum series_state)db_name_index(series_state_names,
						 G_N_ELEMENTS(series_state_names),
						 (const char *)sqlite3_column_text(stmt, 5),
						 SERIES_WAITING);
	r->superseded_by = sqlite3_column_int64(stmt, 6);
	r->created = sqlite3_column_int64(stmt, 7);
	r->last_part = sqlite3_column_int64(stmt, 8);
	r->tree_id = sqlite3_column_int64(stmt, 9);
	r->tree = db_col_text(stmt, 10);
	r->base = db_col_text(stmt, 11);
	r->base_how = db_col_text(stmt, 12);
	r->note = db_col_text(stmt, 13);
	r->versioned = sqlite3_column_int(stmt, 14) != 0;
	r->resend = sqlite3_column_int(stmt, 15) != 0;
	return r;
}

/* Reads @r's parts, bases and results. */
static bool series_complete(struct db *db, struct series_row *r, GError **error)
{
	g_autoptr(sqlite3_stmt) parts = db_prepare(db,
		"SELECT p.n, p.mail_id, p.message_id, m.subject, p.commit_id FROM series_parts p "
		"JOIN mails m ON m.id = p.mail_id WHERE p.series_id = ?1 ORDER BY p.n", error);
	g_autoptr(sqlite3_stmt) bases = NULL;
	g_autoptr(sqlite3_stmt) results = NULL;
	int rc;

	if (!parts)
		return false;
	r->parts = g_ptr_array_new_with_free_func((GDestroyNotify)series_part_free);
	r->bases = g_ptr_array_new_with_free_func((GDestroyNotify)series_base_free);
	r->results = g_ptr_array_new_with_free_func((GDestroyNotify)series_result_free);
	sqlite3_bind_int64(parts, 1, r->id);
	while ((rc = sqlite3_step(parts)) == SQLITE_ROW) {
		struct series_part *p = g_new0(struct series_part, 1);

		p->n = (guint)sqlite3_column_int64(parts, 0);
		p->mail_id = sqlite3_column_int64(parts, 1);
		p->message_id = db_col_text(parts, 2);
		p->subject = db_col_text(parts, 3);
		p->commit = db_col_text(parts, 4);
		g_ptr_array_add(r->parts, p);
	}
	if (rc != SQLITE_DONE)
		return db_sql_error(db, error, "reading a series' parts");
	bases = db_prepare(db, "SELECT seq, tree, branch, commit_id, how, applied, reason "
			   "FROM series_bases WHERE series_id = ?1 ORDER BY seq", error);
	if (!bases)
		return false;
	sqlite3_bind_int64(bases, 1, r->id);
	while ((rc = sqlite3_step(bases)) == SQLITE_ROW) {
		struct series_base *b = g_new0(struct series_base, 1);

		b->seq = (guint)sqlite3_column_int64(bases, 0);
		b->tree = db_col_text(bases, 1);
		b->branch = db_col_text(bases, 2);
		b->commit = db_col_text(bases, 3);
		b->how = db_col_text(bases, 4);
		b->applied = sqlite3_column_int(bases, 5) != 0;
		b->reason = db_col_text(bases, 6);
		g_ptr_array_add(r->bases, b);
	}
	if (rc != SQLITE_DONE)
		return db_sql_error(db, error, "reading a series' bases");
	results = db_prepare(db, "SELECT n, target, commit_id, result, detail, boot, boot_failed "
			     "FROM series_results WHERE series_id = ?1 ORDER BY n, target", error);
	if (!results)
		return false;
	sqlite3_bind_int64(results, 1, r->id);
	while ((rc = sqlite3_step(results)) == SQLITE_ROW) {
		struct series_result *x = g_new0(struct series_result, 1);

		x->n = (guint)sqlite3_column_int64(results, 0);
		x->target = db_col_text(results, 1);
		x->commit = db_col_text(results, 2);
		x->result = db_col_text(results, 3);
		x->detail = db_col_text(results, 4);
		x->boot = db_col_text(results, 5);
		x->boot_failed = sqlite3_column_int(results, 6) != 0;
		g_ptr_array_add(r->results, x);
	}
	if (rc != SQLITE_DONE)
		return db_sql_error(db, error, "reading a series' results");
	return true;
}

struct series_row *db_series_get(struct db *db, gint64 id, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = db_prepare(db, "SELECT " SERIES_COLUMNS "WHERE s.id = ?1",
						  error);
	zd_autoptr(series_row) r = NULL;
	int rc;

	if (!stmt)
		return NULL;
	sqlite3_bind_int64(stmt, 1, id);
	rc = sqlite3_step(stmt);
	if (rc != SQLITE_ROW) {
		if (rc == SQLITE_DONE)
			g_set_error(error, BOT_ERROR, BOT_ERROR_NOT_FOUND,
				    "no series %" G_GINT64_FORMAT, id);
		else
			db_sql_error(db, error, "reading a series");
		return NULL;
	}
	r = series_read(stmt);
	if (!series_complete(db, r, error))
		return NULL;
	return g_steal_pointer(&r);
}

GArray *db_series_by_commit(struct db *db, const char *commit, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = db_prepare(db,
		"SELECT s.id FROM series s JOIN series_parts p ON p.series_id = s.id "
		"AND p.n = s.total WHERE p.commit_id = ?1 ORDER BY s.id", error);
	g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(gint64));
	int rc;

	if (!stmt)
		return NULL;
	db_bind_text(stmt, 1, commit);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		gint64 id = sqlite3_column_int64(stmt, 0);

		g_array_append_val(out, id);
	}
	if (rc != SQLITE_DONE) {
		db_sql_error(db, error, "finding the series of a commit");
		return NULL;
	}
	return g_steal_pointer(&out);
}

GPtrArray *db_series_list(struct db *db, int state, unsigned limit, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = db_prepare(db,
		"SELECT " SERIES_COLUMNS "WHERE ?1 IS NULL OR s.state = ?1 ORDER BY s.id DESC "
		"LIMIT ?2", error);
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)series_row_free);
	int rc;

	if (!stmt)
		return NULL;
	db_bind_text(stmt, 1, state < 0 ? NULL : db_series_state_name((enum series_state)state));
	sqlite3_bind_int64(stmt, 2, limit);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
		g_ptr_array_add(out, series_read(stmt));
	if (rc != SQLITE_DONE) {
		db_sql_error(db, error, "listing series");
		return NULL;
	}
	for (guint i = 0; i < out->len; i++) {
		if (!series_complete(db, out->pdata[i], error))
			return NULL;
	}
	return g_steal_pointer(&out);
}

GArray *db_series_older(struct db *db, gint64 id, const char *sender, const char *title,
			guint version, bool newer, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = db_prepare(db, newer ?
		"SELECT DISTINCT s.id FROM series s WHERE s.sender = ?2 AND s.version > ?3 "
		"AND s.id != ?1 AND ((?4 IS NOT NULL AND s.title = ?4) OR EXISTS ("
		"  SELECT 1 FROM series_ids a JOIN series_ids b ON a.message_id = b.message_id "
		"  WHERE a.series_id = s.id AND b.series_id = ?1)) ORDER BY s.id" :
		"SELECT DISTINCT s.id FROM series s WHERE s.sender = ?2 AND s.version < ?3 "
		"AND s.id != ?1 AND ((?4 IS NOT NULL AND s.title = ?4) OR EXISTS ("
		"  SELECT 1 FROM series_ids a JOIN series_ids b ON a.message_id = b.message_id "
		"  WHERE a.series_id = s.id AND b.series_id = ?1)) ORDER BY s.id", error);
	g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(gint64));
	int rc;

	if (!stmt)
		return NULL;
	sqlite3_bind_int64(stmt, 1, id);
	db_bind_text(stmt, 2, sender);
	sqlite3_bind_int64(stmt, 3, version);
	db_bind_text(stmt, 4, title);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		gint64 older = sqlite3_column_int64(stmt, 0);

		g_array_append_val(out, older);
	}
	if (rc != SQLITE_DONE) {
		db_sql_error(db, error, "finding older versions of a series");
		return NULL;
	}
	return g_steal_pointer(&out);
}

bool db_series_base_add(struct db *db, gint64 id, const struct series_base *base,
			GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = db_prepare(db,
		"INSERT INTO series_bases (series_id, seq, tree, branch, commit_id, how, applied, "
		"reason) VALUES (?1, (SELECT coalesce(max(seq), 0) + 1 FROM series_bases "
		"WHERE series_id = ?1), ?2, ?3, ?4, ?5, ?6, ?7)", error);

	if (!stmt)
		return false;
	sqlite3_bind_int64(stmt, 1, id);
	db_bind_text(stmt, 2, base->tree);
	db_bind_text(stmt, 3, base->branch);
	db_bind_text(stmt, 4, base->commit);
	db_bind_text(stmt, 5, base->how);
	sqlite3_bind_int(stmt, 6, base->applied);
	db_bind_text(stmt, 7, base->reason);
	return db_step_done(db, stmt, error);
}

bool db_series_copy_results(struct db *db, gint64 id, const char *commit, const char *target,
			    bool *copied, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = db_prepare(db,
		"INSERT OR REPLACE INTO series_results (series_id, n, target, commit_id, result, "
		"detail, boot, boot_failed) "
		"SELECT ?1, r.n, r.target, r.commit_id, r.result, r.detail, r.boot, r.boot_failed "
		"FROM series_results r WHERE r.target = ?3 AND r.series_id = ("
		"  SELECT s.id FROM series s JOIN series_parts p ON p.series_id = s.id "
		"  AND p.n = s.total WHERE p.commit_id = ?2 AND s.id != ?1 AND EXISTS ("
		"    SELECT 1 FROM series_results x WHERE x.series_id = s.id AND x.target = ?3) "
		"  ORDER BY s.id DESC LIMIT 1)", error);

	if (!stmt)
		return false;
	sqlite3_bind_int64(stmt, 1, id);
	db_bind_text(stmt, 2, commit);
	db_bind_text(stmt, 3, target);
	if (!db_step_done(db, stmt, error))
		return false;
	*copied = sqlite3_changes(db->sql) > 0;
	return true;
}

bool db_series_result_put(struct db *db, gint64 id, const struct series_result *r,
			  GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = db_prepare(db,
		"INSERT OR REPLACE INTO series_results (series_id, n, target, commit_id, result, "
		"detail, boot, boot_failed) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)", error);

	if (!stmt)
		return false;
	sqlite3_bind_int64(stmt, 1, id);
	sqlite3_bind_int64(stmt, 2, r->n);
	db_bind_text(stmt, 3, r->target);
	db_bind_text(stmt, 4, r->commit);
	db_bind_text(stmt, 5, r->result);
	db_bind_text(stmt, 6, r->detail);
	db_bind_text(stmt, 7, r->boot);
	sqlite3_bind_int(stmt, 8, r->boot_failed);
	return db_step_done(db, stmt, error);
}

bool db_series_of_message_ids(struct db *db, const char *const *message_ids, gint64 *id,
			      GError **error)
{
	/* The newest series a mail is part of: a RESEND's, not its original's. */
	g_autoptr(sqlite3_stmt) stmt = db_prepare(db,
		"SELECT max(series_id) FROM series_parts WHERE message_id = ?1", error);

	*id = 0;
	if (!stmt)
		return false;
	for (const char *const *m = message_ids; m && *m && !*id; m++) {
		sqlite3_reset(stmt);
		db_bind_text(stmt, 1, *m);
		if (sqlite3_step(stmt) != SQLITE_ROW)
			return db_sql_error(db, error, "finding a mail's series");
		*id = sqlite3_column_int64(stmt, 0);
	}
	return true;
}

bool db_series_find_thread(struct db *db, guint version, guint total, const char *const *ids,
			   gint64 *id, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = db_prepare(db,
		"SELECT s.id FROM series_ids i JOIN series s ON s.id = i.series_id "
		"WHERE i.message_id = ?1 AND (?2 = 0 OR s.version = ?2) AND s.total = ?3 "
		"ORDER BY s.id DESC LIMIT 1", error);

	*id = 0;
	if (!stmt)
		return false;
	for (const char *const *i = ids; i && *i && !*id; i++) {
		int rc;

		sqlite3_reset(stmt);
		db_bind_text(stmt, 1, *i);
		sqlite3_bind_int64(stmt, 2, version);
		sqlite3_bind_int64(stmt, 3, total);
		rc = sqlite3_step(stmt);
		if (rc == SQLITE_ROW)
			*id = sqlite3_column_int64(stmt, 0);
		else if (rc != SQLITE_DONE)
			return db_sql_error(db, error, "finding a series by its thread");
	}
	return true;
}
