/*
 * The store's findings: see db.h.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <string.h>

#include "bot/bot.h"
#include "bot/db-private.h"
#include "engine/diag.h"

/* Findings. */

static const char *const finding_kinds[] = {
	[FINDING_BUILD_ERROR] = "build-error",
	[FINDING_BUILD_WARNING] = "build-warning",
	[FINDING_BOOT] = "boot-",
};

const char *db_finding_kind_name(enum finding_kind kind, enum console_kind console)
{
	g_autofree char *name = NULL;

	g_return_val_if_fail(kind < G_N_ELEMENTS(finding_kinds), NULL);
	if (kind != FINDING_BOOT)
		return finding_kinds[kind];
	/* Interned: one copy per console kind, for the life of the process. */
	name = g_strconcat(finding_kinds[kind], diag_console_kind_name(console), NULL);
	return g_intern_string(name);
}

/*
 * Sets *@kind and, for a boot failure, *@console from a stored kind
 * (db_finding_kind_name()). A console kind this zeroday does not know is
 * CONSOLE_INFRA.
 */
static void finding_kind_parse(const char *name, enum finding_kind *kind,
			       enum console_kind *console)
{
	const char *boot = finding_kinds[FINDING_BOOT];

	*console = CONSOLE_INFRA;
	for (size_t i = 0; name && i < G_N_ELEMENTS(finding_kinds); i++) {
		if (i != FINDING_BOOT && strcmp(name, finding_kinds[i]) == 0) {
			*kind = (enum finding_kind)i;
			return;
		}
	}
	if (name && g_str_has_prefix(name, boot)) {
		*kind = FINDING_BOOT;
		if (!diag_console_kind_parse(name + strlen(boot), console))
			g_warning("unknown console kind in finding kind '%s' in the database", name);
		return;
	}
	g_warning("unknown finding kind '%s' in the database", name ? name : "(null)");
	*kind = FINDING_BUILD_ERROR;
}

static const char *const finding_states[] = {
	[FINDING_OPEN] = "open",
	[FINDING_FIXED] = "fixed",
	[FINDING_INCONCLUSIVE] = "inconclusive",
};

const char *db_finding_state_name(enum finding_state state)
{
	g_return_val_if_fail(state < G_N_ELEMENTS(finding_states), NULL);
	return finding_states[state];
}

static enum finding_state finding_state_parse(const char *name)
{
	for (size_t i = 0; i < G_N_ELEMENTS(finding_states); i++) {
		if (name && strcmp(name, finding_states[i]) == 0)
			return (enum finding_state)i;
	}
	g_warning("unknown finding state '%s' in the database", name ? name : "(null)");
	return FINDING_OPEN;
}

void finding_row_free(struct finding_row *row)
{
	if (!row)
		return;
	g_free(row->tree);
	g_free(row->branch);
	g_free(row->culprit);
	g_free(row->target);
	g_free(row->fingerprint);
	g_free(row->title);
	g_free(row->details);
	g_free(row->reproduce);
	g_free(row->fixed_by);
	g_free(row->bisect_log);
	g_free(row);
}

bool db_finding_add(struct db *db, gint64 tree_id, const struct finding_row *row, bool *added,
		    GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = db_prepare(db,
		"INSERT OR IGNORE INTO findings (tree_id, branch, culprit, target, kind, fingerprint, "
		"title, details, confidence, reproduce, created, state, rate, bisect_log) VALUES (?1, "
		"?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, coalesce(?12, 'open'), ?13, ?14)", error);

	if (!stmt)
		return false;
	sqlite3_bind_int64(stmt, 1, tree_id);
	db_bind_text(stmt, 2, row->branch);
	db_bind_text(stmt, 3, row->culprit);
	db_bind_text(stmt, 4, row->target);
	db_bind_text(stmt, 5, db_finding_kind_name(row->kind, row->console));
	db_bind_text(stmt, 6, row->fingerprint);
	db_bind_text(stmt, 7, row->title);
	db_bind_text(stmt, 8, row->details);
	sqlite3_bind_double(stmt, 9, row->confidence);
	db_bind_text(stmt, 10, row->reproduce);
	sqlite3_bind_int64(stmt, 11, g_get_real_time() / G_USEC_PER_SEC);
	db_bind_text(stmt, 12, db_finding_state_name(row->state));
	sqlite3_bind_double(stmt, 13, row->rate > 0.0 ? row->rate : 1.0);
	db_bind_text(stmt, 14, row->bisect_log);
	if (!db_step_done(db, stmt, error))
		return false;
	*added = sqlite3_changes(db->sql) == 1;
	return true;
}

GPtrArray *db_finding_list(struct db *db, unsigned limit, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)finding_row_free);
	g_autoptr(sqlite3_stmt) stmt = db_prepare(db,
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
		f->tree = db_col_text(stmt, 1);
		f->branch = db_col_text(stmt, 2);
		f->culprit = db_col_text(stmt, 3);
		f->target = db_col_text(stmt, 4);
		finding_kind_parse((const char *)sqlite3_column_text(stmt, 5), &f->kind, &f->console);
		f->fingerprint = db_col_text(stmt, 6);
		f->title = db_col_text(stmt, 7);
		f->details = db_col_text(stmt, 8);
		f->confidence = sqlite3_column_double(stmt, 9);
		f->state = finding_state_parse((const char *)sqlite3_column_text(stmt, 10));
		f->reproduce = db_col_text(stmt, 11);
		f->created = sqlite3_column_int64(stmt, 12);
		f->fixed_by = db_col_text(stmt, 13);
		f->rate = sqlite3_column_double(stmt, 14);
		f->bisect_log = db_col_text(stmt, 15);
		g_ptr_array_add(out, f);
	}
	if (rc != SQLITE_DONE) {
		db_sql_error(db, error, "listing findings");
		return NULL;
	}
	return g_steal_pointer(&out);
}

GPtrArray *db_finding_open(struct db *db, gint64 tree_id, const char *target, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)finding_row_free);
	g_autoptr(sqlite3_stmt) stmt = db_prepare(db,
		"SELECT id, culprit, kind, fingerprint, rate FROM findings WHERE tree_id = ?1 "
		"AND target = ?2 AND state = 'open' ORDER BY id", error);
	int rc;

	if (!stmt)
		return NULL;
	sqlite3_bind_int64(stmt, 1, tree_id);
	db_bind_text(stmt, 2, target);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct finding_row *f = g_new0(struct finding_row, 1);

		f->id = sqlite3_column_int64(stmt, 0);
		f->culprit = db_col_text(stmt, 1);
		finding_kind_parse((const char *)sqlite3_column_text(stmt, 2), &f->kind, &f->console);
		f->fingerprint = db_col_text(stmt, 3);
		f->rate = sqlite3_column_double(stmt, 4);
		g_ptr_array_add(out, f);
	}
	if (rc != SQLITE_DONE) {
		db_sql_error(db, error, "listing open findings");
		return NULL;
	}
	return g_steal_pointer(&out);
}

bool db_finding_fixed(struct db *db, gint64 id, const char *head, GError **error)
{
	g_autoptr(sqlite3_stmt) stmt = db_prepare(db,
		"UPDATE findings SET state = 'fixed', fixed_by = ?1 WHERE id = ?2 AND state = 'open'",
		error);

	if (!stmt)
		return false;
	db_bind_text(stmt, 1, head);
	sqlite3_bind_int64(stmt, 2, id);
	return db_step_done(db, stmt, error);
}
