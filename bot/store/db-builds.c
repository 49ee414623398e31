/*
 * The store's builds, their diagnostics and verdicts, kernel images and
 * boots: see db.h.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <string.h>

#include "bot/bot.h"
#include "bot/store/db-private.h"
#include "engine/diag.h"

/* Builds. */

void build_row_free(struct build_row *row)
{
	if (!row)
		return;
	g_free(row->source);
	g_free(row->commit);
	g_free(row->target);
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
	g_autoptr(sqlite3_stmt) stmt = db_prepare(db,
		"INSERT INTO builds (source, commit_id, target, status, reason, seconds, log_path, "
		"config_path, created, image_path) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
		error);
	g_autoptr(sqlite3_stmt) diag = NULL;

	if (!stmt)
		return false;
	db_bind_text(stmt, 1, row->source);
	db_bind_text(stmt, 2, row->commit);
	db_bind_text(stmt, 3, row->target);
	db_bind_text(stmt, 4, build_status_name(row->status));
	db_bind_text(stmt, 5, row->reason);
	sqlite3_bind_double(stmt, 6, row->seconds);
	db_bind_text(stmt, 7, row->log_path);
	db_bind_text(stmt, 8, row->config_path);
	sqlite3_bind_int64(stmt, 9, row->created);
	db_bind_text(stmt, 10, row->image_path);
	if (!db_step_done(db, stmt, error))
		return false;
	row->id = sqlite3_last_insert_rowid(db->sql);
	diag = db_prepare(db, "INSERT INTO diagnostics (build_id, seq, kind, checker, file, line, "
		       "col, function, message, fingerprint) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, "
		       "?8, ?9, ?10)", error);
	if (!diag)
		return false;
	for (guint i = 0; row->diags && i < row->diags->len; i++) {
		const struct diag *d = row->diags->pdata[i];

		sqlite3_reset(diag);
		sqlite3_bind_int64(diag, 1, row->id);
		sqlite3_bind_int(diag, 2, (int)i);
		db_bind_text(diag, 3, diag_kind_name(d->kind));
		db_bind_text(diag, 4, d->checker);
		db_bind_text(diag, 5, d->file);
		sqlite3_bind_int(diag, 6, (int)d->line);
		sqlite3_bind_int(diag, 7, (int)d->column);
		db_bind_text(diag, 8, d->function);
		db_bind_text(diag, 9, d->message);
		db_bind_text(diag, 10, d->fingerprint);
		if (!db_step_done(db, diag, error))
			return false;
	}
	return true;
}

static void *diag_read(sqlite3_stmt *stmt)
{
	struct diag *d = g_new0(struct diag, 1);
	const char *kind = (const char *)sqlite3_column_text(stmt, 0);

	d->kind = kind && strcmp(kind, "error") == 0 ? DIAG_ERROR : DIAG_WARNING;
	d->checker = db_col_text(stmt, 1);
	d->file = db_col_text(stmt, 2);
	d->line = (unsigned)sqlite3_column_int(stmt, 3);
	d->column = (unsigned)sqlite3_column_int(stmt, 4);
	d->function = db_col_text(stmt, 5);
	d->message = db_col_text(stmt, 6);
	d->fingerprint = db_col_text(stmt, 7);
	return d;
}

static GPtrArray *build_diags(struct db *db, gint64 build_id, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)diag_free);

	if (!db_list(db, out, diag_read, error,
		     "SELECT kind, checker, file, line, col, function, message, fingerprint "
		     "FROM diagnostics WHERE build_id = ?1 ORDER BY seq", "i", build_id))
		return NULL;
	return g_steal_pointer(&out);
}

bool db_build_find(struct db *db, const char *source, const char *commit, const char *target,
		   struct build_row **out, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = db_prepare(db,
		"SELECT id, status, reason, seconds, log_path, config_path, created, image_path "
		"FROM builds WHERE source = ?1 AND commit_id = ?2 AND target = ?3 "
		"AND status IN ('ok', 'failed') ORDER BY id DESC LIMIT 1", error);
	struct build_row *row;
	int rc;

	*out = NULL;
	if (!stmt)
		return false;
	db_bind_text(stmt, 1, source);
	db_bind_text(stmt, 2, commit);
	db_bind_text(stmt, 3, target);
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_DONE)
		return true;
	if (rc != SQLITE_ROW)
		return db_sql_error(db, error, "looking up a build");
	row = g_new0(struct build_row, 1);
	row->id = sqlite3_column_int64(stmt, 0);
	row->source = g_strdup(source);
	row->commit = g_strdup(commit);
	row->target = g_strdup(target);
	/* The query picks ok and failed builds only. */
	if (!build_status_parse((const char *)sqlite3_column_text(stmt, 1), &row->status))
		g_assert_not_reached();
	row->reason = db_col_text(stmt, 2);
	row->seconds = sqlite3_column_double(stmt, 3);
	row->log_path = db_col_text(stmt, 4);
	row->config_path = db_col_text(stmt, 5);
	row->created = sqlite3_column_int64(stmt, 6);
	row->image_path = db_col_text(stmt, 7);
	row->diags = build_diags(db, row->id, error);
	if (!row->diags) {
		build_row_free(row);
		return false;
	}
	*out = row;
	return true;
}

bool db_verdict_put(struct db *db, gint64 build_id, gint64 parent_build_id,
		    enum build_verdict verdict, const char *new_seqs, GError **error)
{
	return db_run(db, error,
		      "INSERT OR REPLACE INTO verdicts (build_id, parent_build_id, verdict, new_seqs) "
		      "VALUES (?1, nullif(?2, 0), ?3, ?4)",
		      "iitt", build_id, parent_build_id > 0 ? parent_build_id : (gint64)0,
		      build_verdict_name(verdict), new_seqs);
}

char *db_build_image(struct db *db, gint64 build_id, GError **error)
{
	char *path = NULL;

	if (!db_text(db, &path, NULL, error, "SELECT image_path FROM builds WHERE id = ?1", "i",
		     build_id))
		return NULL;
	if (!path)
		g_set_error(error, BOT_ERROR, BOT_ERROR_NOT_FOUND,
			    "build %" G_GINT64_FORMAT " has no kernel image", build_id);
	return path;
}

bool db_boot_add(struct db *db, const struct boot_row *row, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = db_prepare(db,
		"INSERT INTO boots (build_id, image, host, seed, kind, title, fingerprint, "
		"console_path, seconds, attempts, created, profile, excerpt) VALUES (?1, ?2, ?3, ?4, "
		"?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)", error);

	if (!stmt)
		return false;
	if (row->build_id > 0)
		sqlite3_bind_int64(stmt, 1, row->build_id);
	else
		sqlite3_bind_null(stmt, 1);
	db_bind_text(stmt, 2, row->image);
	db_bind_text(stmt, 3, row->host);
	sqlite3_bind_int64(stmt, 4, row->seed);
	db_bind_text(stmt, 5, diag_console_kind_name(row->kind));
	db_bind_text(stmt, 6, row->title);
	db_bind_text(stmt, 7, row->fingerprint);
	db_bind_text(stmt, 8, row->console_path);
	sqlite3_bind_double(stmt, 9, row->seconds);
	sqlite3_bind_int(stmt, 10, (int)row->attempts);
	sqlite3_bind_int64(stmt, 11, g_get_real_time() / G_USEC_PER_SEC);
	db_bind_text(stmt, 12, row->profile);
	db_bind_text(stmt, 13, row->excerpt);
	return db_step_done(db, stmt, error);
}

void boot_record_free(struct boot_record *r)
{
	if (!r)
		return;
	g_free(r->host);
	g_free(r->title);
	g_free(r->fingerprint);
	g_free(r->excerpt);
	g_free(r->console_path);
	g_free(r);
}

GPtrArray *db_boot_list(struct db *db, gint64 build_id, const char *profile, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)boot_record_free);
	g_autoptr(sqlite3_stmt) stmt = db_prepare(db,
		"SELECT seed, host, kind, title, fingerprint, excerpt, console_path, seconds, "
		"attempts FROM boots WHERE build_id = ?1 AND profile = ?2 AND kind != 'infra-error' "
		"ORDER BY id", error);
	int rc;

	if (!stmt)
		return NULL;
	sqlite3_bind_int64(stmt, 1, build_id);
	db_bind_text(stmt, 2, profile);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct boot_record *r = g_new0(struct boot_record, 1);

		r->seed = (unsigned)sqlite3_column_int(stmt, 0);
		r->host = db_col_text(stmt, 1);
		if (!diag_console_kind_parse((const char *)sqlite3_column_text(stmt, 2), &r->kind))
			r->kind = CONSOLE_INFRA;
		r->title = db_col_text(stmt, 3);
		r->fingerprint = db_col_text(stmt, 4);
		r->excerpt = db_col_text(stmt, 5);
		r->console_path = db_col_text(stmt, 6);
		r->seconds = sqlite3_column_double(stmt, 7);
		r->attempts = (unsigned)sqlite3_column_int(stmt, 8);
		g_ptr_array_add(out, r);
	}
	if (rc != SQLITE_DONE) {
		db_sql_error(db, error, "listing boots");
		return NULL;
	}
	return g_steal_pointer(&out);
}
