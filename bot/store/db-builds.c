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
	if (!db_run(db, error,
		    "INSERT INTO builds (source, commit_id, target, status, reason, seconds, log_path, "
		    "config_path, created, image_path, diag_version) "
		    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
		    "tttttfttiti", row->source, row->commit, row->target,
		    build_status_name(row->status), row->reason, row->seconds, row->log_path,
		    row->config_path, row->created, row->image_path, (gint64)BUILD_DIAG_VERSION))
		return false;
	row->id = sqlite3_last_insert_rowid(db->sql);
	for (guint i = 0; row->diags && i < row->diags->len; i++) {
		const struct diag *d = row->diags->pdata[i];

		if (!db_run(db, error,
			    "INSERT INTO diagnostics (build_id, seq, kind, checker, file, line, col, "
			    "function, message, fingerprint) "
			    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
			    "intttnnttt", row->id, (int)i, diag_kind_name(d->kind), d->checker,
			    d->file, (int)d->line, (int)d->column, d->function, d->message,
			    d->fingerprint))
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

static void *build_read(sqlite3_stmt *stmt)
{
	struct build_row *row = g_new0(struct build_row, 1);

	row->id = sqlite3_column_int64(stmt, 0);
	row->source = db_col_text(stmt, 1);
	row->commit = db_col_text(stmt, 2);
	row->target = db_col_text(stmt, 3);
	/* The query picks ok and failed builds only. */
	if (!build_status_parse((const char *)sqlite3_column_text(stmt, 4), &row->status))
		g_assert_not_reached();
	row->reason = db_col_text(stmt, 5);
	row->seconds = sqlite3_column_double(stmt, 6);
	row->log_path = db_col_text(stmt, 7);
	row->config_path = db_col_text(stmt, 8);
	row->created = sqlite3_column_int64(stmt, 9);
	row->image_path = db_col_text(stmt, 10);
	return row;
}

bool db_build_find(struct db *db, const char *source, const char *commit, const char *target,
		   struct build_row **out, GError **error)
{
	struct build_row *row = NULL;

	*out = NULL;
	if (!db_one(db, (gpointer *)&row, build_read, error,
		    "SELECT id, source, commit_id, target, status, reason, seconds, log_path, "
		    "config_path, created, image_path FROM builds WHERE source = ?1 "
		    "AND commit_id = ?2 AND target = ?3 AND status IN ('ok', 'failed') "
		    "AND diag_version = ?4 ORDER BY id DESC LIMIT 1", "ttti", source, commit, target,
		    (gint64)BUILD_DIAG_VERSION))
		return false;
	if (!row)
		return true;
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

char *db_build_image(struct db *db, gint64 build_id, char **target, GError **error)
{
	char *path = NULL;

	*target = NULL;
	if (!db_text(db, &path, NULL, error, "SELECT image_path FROM builds WHERE id = ?1", "i",
		     build_id))
		return NULL;
	if (!path) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_NOT_FOUND,
			    "build %" G_GINT64_FORMAT " has no kernel image", build_id);
		return NULL;
	}
	if (!db_text(db, target, "", error, "SELECT target FROM builds WHERE id = ?1", "i",
		     build_id))
		g_clear_pointer(&path, g_free);
	return path;
}

bool db_boot_add(struct db *db, const struct boot_row *row, GError **error)
{
	gint64 id;

	if (!db_run(db, error,
		    "INSERT INTO boots (build_id, image, host, seed, kind, title, fingerprint, "
		    "console_path, seconds, attempts, created, profile, excerpt, tests) VALUES "
		    "(nullif(?1, 0), ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
		    "ittittttfnittt", row->build_id > 0 ? row->build_id : (gint64)0, row->image,
		    row->host, (gint64)row->seed, diag_console_kind_name(row->kind), row->title,
		    row->fingerprint, row->console_path, row->seconds, (int)row->attempts,
		    g_get_real_time() / G_USEC_PER_SEC, row->profile, row->excerpt, row->tests))
		return false;
	id = sqlite3_last_insert_rowid(db->sql);
	for (guint i = 0; row->failed_tests && i < row->failed_tests->len; i++) {
		const struct console_finding *f = row->failed_tests->pdata[i];

		if (!db_run(db, error,
			    "INSERT INTO boot_tests (boot_id, title, fingerprint, excerpt) "
			    "VALUES (?1, ?2, ?3, ?4)", "ittt", id, f->title, f->fingerprint,
			    f->excerpt))
			return false;
	}
	return true;
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
	g_free(r->tests);
	if (r->failed_tests)
		g_ptr_array_unref(r->failed_tests);
	g_free(r);
}

static void *boot_read(sqlite3_stmt *stmt)
{
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
	r->tests = db_col_text(stmt, 9);
	r->id = sqlite3_column_int64(stmt, 10);
	r->failed_tests = g_ptr_array_new_with_free_func((GDestroyNotify)console_finding_free);
	return r;
}

static void *boot_test_read(sqlite3_stmt *stmt)
{
	struct console_finding *f = g_new0(struct console_finding, 1);

	f->kind = CONSOLE_TEST_FAIL;
	f->title = db_col_text(stmt, 0);
	f->fingerprint = db_col_text(stmt, 1);
	f->excerpt = db_col_text(stmt, 2);
	return f;
}

GPtrArray *db_boot_list(struct db *db, gint64 build_id, const char *profile, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)boot_record_free);

	if (!db_list(db, out, boot_read, error,
		     "SELECT seed, host, kind, title, fingerprint, excerpt, console_path, seconds, "
		     "attempts, tests, id FROM boots WHERE build_id = ?1 AND profile = ?2 "
		     "AND kind != 'infra-error' ORDER BY id", "it", build_id, profile))
		return NULL;
	for (guint i = 0; i < out->len; i++) {
		struct boot_record *r = out->pdata[i];

		if (r->tests && !db_list(db, r->failed_tests, boot_test_read, error,
					 "SELECT title, fingerprint, excerpt FROM boot_tests "
					 "WHERE boot_id = ?1 ORDER BY rowid", "i", r->id))
			return NULL;
	}
	return g_steal_pointer(&out);
}

bool db_boot_console(struct db *db, gint64 build_id, const char *fingerprint, char **path,
		     GError **error)
{
	return db_text(db, path, NULL, error,
		       "SELECT console_path FROM boots WHERE build_id = ?1 AND (fingerprint = ?2 "
		       "OR id IN (SELECT boot_id FROM boot_tests WHERE fingerprint = ?2)) "
		       "AND console_path IS NOT NULL ORDER BY id LIMIT 1", "it", build_id,
		       fingerprint);
}
