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
	if (!db_run(db, error,
		    "INSERT INTO series (sender, title, version, total, state, created, last_part, "
		    "note, versioned, resend) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
		    "ttiitiitnn", row->sender, row->title, (gint64)row->version, (gint64)row->total,
		    db_series_state_name(row->state), row->created, row->last_part, row->note,
		    (int)row->versioned, (int)row->resend))
		return false;
	row->id = sqlite3_last_insert_rowid(db->sql);
	return true;
}

/*
 * The newest series of @version (0: any) and @total that one of @ids is
 * in the thread of, sent by @sender (NULL: by anyone); 0 when none.
 */
static bool series_find(struct db *db, const char *sender, guint version, guint total,
			const char *const *ids, gint64 *id, GError **error)
{
	*id = 0;
	for (const char *const *i = ids; i && *i && !*id; i++) {
		if (!db_int(db, id, 0, error,
			    "SELECT s.id FROM series_ids i JOIN series s ON s.id = i.series_id "
			    "WHERE i.message_id = ?1 AND (?2 IS NULL OR s.sender = ?2) "
			    "AND (?3 = 0 OR s.version = ?3) AND s.total = ?4 "
			    "ORDER BY s.id DESC LIMIT 1",
			    "ttii", *i, sender, (gint64)version, (gint64)total))
			return false;
	}
	return true;
}

bool db_series_find(struct db *db, const char *sender, guint version, guint total,
		    const char *const *ids, gint64 *id, GError **error)
{
	g_return_val_if_fail(sender != NULL, false);
	return series_find(db, sender, version, total, ids, id, error);
}

bool db_series_find_thread(struct db *db, guint version, guint total, const char *const *ids,
			   gint64 *id, GError **error)
{
	return series_find(db, NULL, version, total, ids, id, error);
}

bool db_series_add_ids(struct db *db, gint64 id, const char *const *ids, GError **error)
{
	for (const char *const *i = ids; i && *i; i++) {
		if (**i && !db_run(db, error,
				   "INSERT OR IGNORE INTO series_ids (series_id, message_id) "
				   "VALUES (?1, ?2)", "it", id, *i))
			return false;
	}
	return true;
}

bool db_series_add_part(struct db *db, gint64 id, guint n, gint64 mail_id,
			const char *message_id, gint64 now, bool *added, GError **error)
{
	if (!db_run(db, error,
		    "INSERT OR IGNORE INTO series_parts (series_id, n, mail_id, message_id) "
		    "VALUES (?1, ?2, ?3, ?4)", "iiit", id, (gint64)n, mail_id, message_id))
		return false;
	*added = db_changes(db) == 1;
	return !*added ||
	       db_run(db, error, "UPDATE series SET last_part = max(last_part, ?2) WHERE id = ?1",
		      "ii", id, now);
}

bool db_series_part_commit(struct db *db, gint64 id, guint n, const char *commit,
			   GError **error)
{
	return db_run(db, error,
		      "UPDATE series_parts SET commit_id = ?3 WHERE series_id = ?1 AND n = ?2",
		      "iit", id, (gint64)n, commit);
}

bool db_series_update(struct db *db, const struct series_row *row, GError **error)
{
	return db_run(db, error,
		      "UPDATE series SET title = ?2, state = ?3, superseded_by = nullif(?4, 0), "
		      "tree_id = nullif(?5, 0), base = ?6, base_how = ?7, note = ?8, version = ?9, "
		      "versioned = ?10, resend = ?11, total = ?12 WHERE id = ?1",
		      "ittiitttinni", row->id, row->title, db_series_state_name(row->state),
		      row->superseded_by, row->tree_id, row->base, row->base_how, row->note,
		      (gint64)row->version, (int)row->versioned, (int)row->resend,
		      (gint64)row->total);
}

#define SERIES_COLUMNS \
	"s.id, s.sender, s.title, s.version, s.total, s.state, coalesce(s.superseded_by, 0), " \
	"s.created, s.last_part, coalesce(s.tree_id, 0), t.name, s.base, s.base_how, s.note, " \
	"s.versioned, s.resend " \
	"FROM series s LEFT JOIN trees t ON t.id = s.tree_id "

static void *series_read(sqlite3_stmt *stmt)
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

static void *part_read(sqlite3_stmt *row)
{
	struct series_part *p = g_new0(struct series_part, 1);

	p->n = (guint)sqlite3_column_int64(row, 0);
	p->mail_id = sqlite3_column_int64(row, 1);
	p->message_id = db_col_text(row, 2);
	p->subject = db_col_text(row, 3);
	p->commit = db_col_text(row, 4);
	return p;
}

static void *base_read(sqlite3_stmt *row)
{
	struct series_base *b = g_new0(struct series_base, 1);

	b->seq = (guint)sqlite3_column_int64(row, 0);
	b->tree = db_col_text(row, 1);
	b->branch = db_col_text(row, 2);
	b->commit = db_col_text(row, 3);
	b->how = db_col_text(row, 4);
	b->applied = sqlite3_column_int(row, 5) != 0;
	b->reason = db_col_text(row, 6);
	return b;
}

static void *result_read(sqlite3_stmt *row)
{
	struct series_result *x = g_new0(struct series_result, 1);

	x->n = (guint)sqlite3_column_int64(row, 0);
	x->target = db_col_text(row, 1);
	x->commit = db_col_text(row, 2);
	x->result = db_col_text(row, 3);
	x->detail = db_col_text(row, 4);
	x->boot = db_col_text(row, 5);
	x->boot_failed = sqlite3_column_int(row, 6) != 0;
	return x;
}

/* Reads @r's parts, bases and results. */
static bool series_complete(struct db *db, struct series_row *r, GError **error)
{
	r->parts = g_ptr_array_new_with_free_func((GDestroyNotify)series_part_free);
	r->bases = g_ptr_array_new_with_free_func((GDestroyNotify)series_base_free);
	r->results = g_ptr_array_new_with_free_func((GDestroyNotify)series_result_free);
	return db_list(db, r->parts, part_read, error,
		       "SELECT p.n, p.mail_id, p.message_id, m.subject, p.commit_id "
		       "FROM series_parts p JOIN mails m ON m.id = p.mail_id "
		       "WHERE p.series_id = ?1 ORDER BY p.n", "i", r->id) &&
	       db_list(db, r->bases, base_read, error,
		       "SELECT seq, tree, branch, commit_id, how, applied, reason "
		       "FROM series_bases WHERE series_id = ?1 ORDER BY seq", "i", r->id) &&
	       db_list(db, r->results, result_read, error,
		       "SELECT n, target, commit_id, result, detail, boot, boot_failed "
		       "FROM series_results WHERE series_id = ?1 ORDER BY n, target", "i", r->id);
}

struct series_row *db_series_get(struct db *db, gint64 id, GError **error)
{
	zd_autoptr(series_row) r = NULL;

	if (!db_one(db, (gpointer *)&r, series_read, error, "SELECT " SERIES_COLUMNS "WHERE s.id = ?1",
		    "i", id))
		return NULL;
	if (!r) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_NOT_FOUND, "no series %" G_GINT64_FORMAT, id);
		return NULL;
	}
	if (!series_complete(db, r, error))
		return NULL;
	return g_steal_pointer(&r);
}

GArray *db_series_by_commit(struct db *db, const char *commit, GError **error)
{
	g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(gint64));

	if (!db_ids(db, out, error,
		    "SELECT s.id FROM series s JOIN series_parts p ON p.series_id = s.id "
		    "AND p.n = s.total WHERE p.commit_id = ?1 ORDER BY s.id", "t", commit))
		return NULL;
	return g_steal_pointer(&out);
}

GPtrArray *db_series_list(struct db *db, int state, unsigned limit, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)series_row_free);

	if (!db_list(db, out, series_read, error,
		     "SELECT " SERIES_COLUMNS "WHERE ?1 IS NULL OR s.state = ?1 ORDER BY s.id DESC "
		     "LIMIT ?2", "ti",
		     state < 0 ? NULL : db_series_state_name((enum series_state)state),
		     (gint64)limit))
		return NULL;
	for (guint i = 0; i < out->len; i++) {
		if (!series_complete(db, out->pdata[i], error))
			return NULL;
	}
	return g_steal_pointer(&out);
}

GArray *db_series_older(struct db *db, gint64 id, const char *sender, const char *title,
			guint version, bool newer, gint64 title_window, GError **error)
{
	g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(gint64));

	/*
	 * ?5: 1 for the newer versions, -1 for the older. A title alone
	 * relates series made within ?6 seconds of each other; a thread,
	 * series of one size (a follow-up patch in a series' thread is none).
	 */
	if (!db_ids(db, out, error,
		    "SELECT DISTINCT s.id FROM series s JOIN series me ON me.id = ?1 "
		    "WHERE s.sender = ?2 AND (s.version - ?3) * ?5 > 0 AND s.id != ?1 "
		    "AND ((?4 IS NOT NULL AND s.title = ?4 AND abs(s.created - me.created) <= ?6) "
		    "  OR (s.total = me.total AND EXISTS ("
		    "  SELECT 1 FROM series_ids a JOIN series_ids b ON a.message_id = b.message_id "
		    "  WHERE a.series_id = s.id AND b.series_id = ?1))) ORDER BY s.id",
		    "ititni", id, sender, (gint64)version, title, newer ? 1 : -1, title_window))
		return NULL;
	return g_steal_pointer(&out);
}

bool db_series_base_add(struct db *db, gint64 id, const struct series_base *base,
			GError **error)
{
	return db_run(db, error,
		      "INSERT INTO series_bases (series_id, seq, tree, branch, commit_id, how, "
		      "applied, reason) VALUES (?1, (SELECT coalesce(max(seq), 0) + 1 "
		      "FROM series_bases WHERE series_id = ?1), ?2, ?3, ?4, ?5, ?6, ?7)",
		      "ittttnt", id, base->tree, base->branch, base->commit, base->how,
		      (int)base->applied, base->reason);
}

bool db_series_copy_results(struct db *db, gint64 id, const char *commit, const char *target,
			    bool *copied, GError **error)
{
	if (!db_run(db, error,
		    "INSERT OR REPLACE INTO series_results (series_id, n, target, commit_id, "
		    "result, detail, boot, boot_failed) "
		    "SELECT ?1, r.n, r.target, r.commit_id, r.result, r.detail, r.boot, "
		    "r.boot_failed FROM series_results r WHERE r.target = ?3 AND r.series_id = ("
		    "  SELECT s.id FROM series s JOIN series_parts p ON p.series_id = s.id "
		    "  AND p.n = s.total WHERE p.commit_id = ?2 AND s.id != ?1 AND EXISTS ("
		    "    SELECT 1 FROM series_results x WHERE x.series_id = s.id AND x.target = ?3) "
		    "  ORDER BY s.id DESC LIMIT 1)", "itt", id, commit, target))
		return false;
	*copied = db_changes(db) > 0;
	return true;
}

bool db_series_result_put(struct db *db, gint64 id, const struct series_result *r,
			  GError **error)
{
	return db_run(db, error,
		      "INSERT OR REPLACE INTO series_results (series_id, n, target, commit_id, "
		      "result, detail, boot, boot_failed) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
		      "iitttttn", id, (gint64)r->n, r->target, r->commit, r->result, r->detail,
		      r->boot, (int)r->boot_failed);
}

bool db_series_of_message_ids(struct db *db, const char *const *message_ids, gint64 *id,
			      GError **error)
{
	*id = 0;
	/* The newest series a mail is part of: a RESEND's, not its original's. */
	for (const char *const *m = message_ids; m && *m && !*id; m++) {
		if (!db_int(db, id, 0, error,
			    "SELECT max(series_id) FROM series_parts WHERE message_id = ?1", "t", *m))
			return false;
	}
	return true;
}
