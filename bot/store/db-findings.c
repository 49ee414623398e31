/*
 * The store's findings: see db.h.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <string.h>

#include "bot/bot.h"
#include "bot/store/db-private.h"
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
	[FINDING_DROPPED] = "dropped",
	[FINDING_INVALID] = "invalid",
	[FINDING_UNREPRODUCED] = "unreproduced",
	[FINDING_DUPLICATE] = "duplicate",
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

/* Parses a stored step role (bisect_role_name()); an unknown one is a search step. */
static enum bisect_role step_role_parse(const char *name)
{
	for (int r = BISECT_ROLE_ROUTINE; r <= BISECT_ROLE_REVERT; r++) {
		if (name && strcmp(name, bisect_role_name((enum bisect_role)r)) == 0)
			return (enum bisect_role)r;
	}
	g_warning("unknown bisection step role '%s' in the database", name ? name : "(null)");
	return BISECT_ROLE_SEARCH;
}

/* Parses a stored step result (bisect_result_name()); an unknown one is a skip. */
static enum bisect_result step_result_parse(const char *name)
{
	for (int r = BISECT_GOOD; r <= BISECT_SKIP; r++) {
		if (name && strcmp(name, bisect_result_name((enum bisect_result)r)) == 0)
			return (enum bisect_result)r;
	}
	g_warning("unknown bisection step result '%s' in the database", name ? name : "(null)");
	return BISECT_SKIP;
}

/* A stored diagnostic kind (diag_kind_name()); NULL (an older row, a boot finding): @kind's. */
static enum diag_kind finding_diag_kind_parse(const char *name, enum finding_kind kind)
{
	if (!name)
		return kind == FINDING_BUILD_ERROR ? DIAG_ERROR : DIAG_WARNING;
	if (strcmp(name, diag_kind_name(DIAG_ERROR)) == 0)
		return DIAG_ERROR;
	if (strcmp(name, diag_kind_name(DIAG_WARNING)) != 0)
		g_warning("unknown diagnostic kind '%s' in the database", name);
	return DIAG_WARNING;
}

void finding_step_free(struct finding_step *step)
{
	if (!step)
		return;
	g_free(step->commit);
	g_free(step->tested);
	g_free(step);
}

void finding_row_free(struct finding_row *row)
{
	if (!row)
		return;
	g_free(row->tree);
	g_free(row->branch);
	g_free(row->culprit);
	g_free(row->parent);
	g_free(row->head);
	g_free(row->target);
	g_free(row->fingerprint);
	g_free(row->title);
	g_free(row->file);
	g_free(row->message);
	g_free(row->excerpt);
	g_free(row->repro_commit);
	g_strfreev(row->suspects);
	g_free(row->reason);
	g_clear_pointer(&row->steps, g_ptr_array_unref);
	g_free(row->details);
	g_free(row->reproduce);
	g_free(row->fixed_by);
	g_free(row->fix_subject);
	g_free(row->also);
	g_free(row->bisect_log);
	g_free(row);
}

/* Stores the steps of finding @finding_id, numbered from 0. */
static bool finding_steps_add(struct db *db, gint64 finding_id, const GPtrArray *steps,
			      GError **error)
{
	for (guint i = 0; steps && i < steps->len; i++) {
		const struct finding_step *st = steps->pdata[i];

		if (!db_run(db, error,
			    "INSERT INTO finding_steps (finding_id, seq, role, commit_id, tested, "
			    "result, runs, failures) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
			    "iittttii", finding_id, (gint64)i, bisect_role_name(st->role),
			    st->commit, st->tested, bisect_result_name(st->result),
			    (gint64)st->runs, (gint64)st->failures))
			return false;
	}
	return true;
}

bool db_finding_add(struct db *db, gint64 tree_id, struct finding_row *row, bool *added,
		    GError **error)
{
	/* Commit ids hold no space. */
	g_autofree char *suspects = row->suspects ? g_strjoinv(" ", row->suspects) : NULL;
	/* Stored for a build finding with a message only: see struct finding_row. */
	const char *diag_kind = row->kind != FINDING_BOOT && row->message ?
				diag_kind_name(row->diag_kind) : NULL;

	g_assert(!sqlite3_get_autocommit(db->sql));
	if (!db_run(db, error,
		    "INSERT OR IGNORE INTO findings (tree_id, branch, culprit, target, kind, "
		    "fingerprint, title, details, confidence, reproduce, created, state, rate, "
		    "bisect_log, parent, head, file, line, col, diag_kind, message, excerpt, "
		    "failures, runs, intermittent, repro_commit, repro_boots, suspects, reason) "
		    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, coalesce(?12, 'open'), "
		    "?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, "
		    "nullif(?28, ''), ?29)",
		    "itttttttftitfttttiitttiintitt", tree_id, row->branch, row->culprit,
		    row->target, db_finding_kind_name(row->kind, row->console), row->fingerprint,
		    row->title, row->details, row->confidence, row->reproduce,
		    g_get_real_time() / G_USEC_PER_SEC, db_finding_state_name(row->state),
		    row->rate > 0.0 ? row->rate : 1.0, row->bisect_log, row->parent, row->head,
		    row->file, (gint64)row->line, (gint64)row->column, diag_kind,
		    row->message, row->excerpt, (gint64)row->failures, (gint64)row->runs,
		    (int)row->intermittent, row->repro_commit, (gint64)row->repro_boots, suspects,
		    row->reason))
		return false;
	*added = db_changes(db) == 1;
	if (!*added) {
		/* The same bug on another target: one finding, which says where else. */
		return !row->target ||
		       db_run(db, error,
			      "UPDATE findings SET also = ltrim(coalesce(also, '') || ' ' || ?3) "
			      "WHERE culprit = ?1 AND fingerprint = ?2 AND target != ?3 "
			      "AND instr(' ' || coalesce(also, '') || ' ', ' ' || ?3 || ' ') = 0",
			      "ttt", row->culprit, row->fingerprint, row->target);
	}
	row->id = sqlite3_last_insert_rowid(db->sql);
	return finding_steps_add(db, row->id, row->steps, error);
}

/* The columns finding_read() reads, in its order; the findings table is f, trees t. */
#define FINDING_COLUMNS \
	"f.id, t.name, f.branch, f.culprit, f.target, f.kind, f.fingerprint, f.title, " \
	"f.details, f.confidence, f.state, f.reproduce, f.created, f.fixed_by, f.rate, " \
	"f.bisect_log, f.parent, f.head, f.file, f.line, f.col, f.diag_kind, f.message, " \
	"f.excerpt, f.failures, f.runs, f.intermittent, f.repro_commit, f.repro_boots, " \
	"f.suspects, f.reason, coalesce(f.report_finding, 0), coalesce(f.dup_of, 0), " \
	"f.fix_subject, f.also " \
	"FROM findings f LEFT JOIN trees t ON t.id = f.tree_id "

/* Reads a row of FINDING_COLUMNS; its steps are loaded apart (finding_steps_load()). */
static void *finding_read(sqlite3_stmt *stmt)
{
	struct finding_row *f = g_new0(struct finding_row, 1);
	const char *suspects;

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
	f->parent = db_col_text(stmt, 16);
	f->head = db_col_text(stmt, 17);
	f->file = db_col_text(stmt, 18);
	f->line = (unsigned)sqlite3_column_int64(stmt, 19);
	f->column = (unsigned)sqlite3_column_int64(stmt, 20);
	f->diag_kind = finding_diag_kind_parse((const char *)sqlite3_column_text(stmt, 21),
					       f->kind);
	f->message = db_col_text(stmt, 22);
	f->excerpt = db_col_text(stmt, 23);
	f->failures = (unsigned)sqlite3_column_int64(stmt, 24);
	f->runs = (unsigned)sqlite3_column_int64(stmt, 25);
	f->intermittent = sqlite3_column_int(stmt, 26) != 0;
	f->repro_commit = db_col_text(stmt, 27);
	f->repro_boots = (unsigned)sqlite3_column_int64(stmt, 28);
	suspects = (const char *)sqlite3_column_text(stmt, 29);
	f->suspects = suspects ? g_strsplit(suspects, " ", -1) : g_new0(char *, 1);
	f->reason = db_col_text(stmt, 30);
	f->report_finding = sqlite3_column_int64(stmt, 31);
	f->dup_of = sqlite3_column_int64(stmt, 32);
	f->fix_subject = db_col_text(stmt, 33);
	f->also = db_col_text(stmt, 34);
	f->steps = g_ptr_array_new_with_free_func((GDestroyNotify)finding_step_free);
	return f;
}

static void *step_read(sqlite3_stmt *stmt)
{
	struct finding_step *st = g_new0(struct finding_step, 1);

	st->role = step_role_parse((const char *)sqlite3_column_text(stmt, 0));
	st->commit = db_col_text(stmt, 1);
	st->tested = db_col_text(stmt, 2);
	st->result = step_result_parse((const char *)sqlite3_column_text(stmt, 3));
	st->runs = (unsigned)sqlite3_column_int64(stmt, 4);
	st->failures = (unsigned)sqlite3_column_int64(stmt, 5);
	return st;
}

/* Loads the steps of each finding of @findings, in order. */
static bool finding_steps_load(struct db *db, GPtrArray *findings, GError **error)
{
	for (guint i = 0; i < findings->len; i++) {
		struct finding_row *f = findings->pdata[i];

		if (!db_list(db, f->steps, step_read, error,
			     "SELECT role, commit_id, tested, result, runs, failures "
			     "FROM finding_steps WHERE finding_id = ?1 ORDER BY seq", "i", f->id))
			return false;
	}
	return true;
}

GPtrArray *db_finding_list(struct db *db, unsigned limit, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)finding_row_free);

	if (!db_list(db, out, finding_read, error,
		     "SELECT " FINDING_COLUMNS "ORDER BY f.id DESC LIMIT ?1", "i",
		     (gint64)limit) ||
	    !finding_steps_load(db, out, error))
		return NULL;
	return g_steal_pointer(&out);
}

struct finding_row *db_finding_get(struct db *db, gint64 id, GError **error)
{
	g_autoptr(GPtrArray) found = NULL;

	found = g_ptr_array_new_with_free_func((GDestroyNotify)finding_row_free);
	if (!db_list(db, found, finding_read, error, "SELECT " FINDING_COLUMNS "WHERE f.id = ?1",
		     "i", id) ||
	    !finding_steps_load(db, found, error))
		return NULL;
	if (found->len == 0) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_NOT_FOUND, "no finding %" G_GINT64_FORMAT, id);
		return NULL;
	}
	return g_ptr_array_steal_index(found, 0);
}

GPtrArray *db_finding_open(struct db *db, gint64 tree_id, const char *target, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)finding_row_free);

	if (!db_list(db, out, finding_read, error,
		     "SELECT " FINDING_COLUMNS "WHERE f.tree_id = ?1 AND f.target = ?2 AND "
		     "f.state = 'open' ORDER BY f.id", "it", tree_id, target) ||
	    !finding_steps_load(db, out, error))
		return NULL;
	return g_steal_pointer(&out);
}

/* Moves open finding @id to @state, seen so at @head. */
static bool finding_close(struct db *db, gint64 id, enum finding_state state, const char *head,
			  GError **error)
{
	return db_run(db, error,
		      "UPDATE findings SET state = ?3, fixed_by = ?1 WHERE id = ?2 "
		      "AND state = 'open'", "tit", head, id, db_finding_state_name(state));
}

GPtrArray *db_finding_unreported(struct db *db, gint64 tree_id, const char *culprit,
				 const char *target, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)finding_row_free);

	if (!db_list(db, out, finding_read, error,
		     "SELECT " FINDING_COLUMNS "WHERE f.tree_id = ?1 AND f.culprit = ?2 "
		     "AND (?3 IS NULL OR f.target = ?3) AND f.report_finding IS NULL "
		     "AND f.state IN ('open', 'inconclusive') "
		     "AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.finding_id = f.id "
		     "AND o.kind = 'report') ORDER BY f.id", "itt", tree_id, culprit, target) ||
	    !finding_steps_load(db, out, error))
		return NULL;
	return g_steal_pointer(&out);
}

/* A row's first column as a new string, for db_list(). */
static void *text_read(sqlite3_stmt *stmt)
{
	return db_col_text(stmt, 0);
}

/*
 * The culprits of tree ?1's findings, open or inconclusive, that no report
 * mentions: none of their own queued, carried by none. The callers add
 * which kinds, and GROUP BY f.culprit.
 */
#define UNREPORTED_CULPRITS \
	"SELECT f.culprit FROM findings f WHERE f.tree_id = ?1 " \
	"AND f.report_finding IS NULL AND f.state IN ('open', 'inconclusive') " \
	"AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.finding_id = f.id " \
	"AND o.kind = 'report') "

GPtrArray *db_finding_report_due(struct db *db, gint64 tree_id, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(g_free);

	if (!db_list(db, out, text_read, error,
		     UNREPORTED_CULPRITS "AND f.kind IN ('build-error', 'build-warning') "
		     "AND NOT EXISTS (SELECT 1 FROM findings g JOIN jobs j ON j.tree_id = g.tree_id "
		     "AND j.commit_id = g.head AND j.kind = 'build' "
		     "AND j.state IN ('queued', 'running') WHERE g.tree_id = f.tree_id "
		     "AND g.culprit = f.culprit AND g.report_finding IS NULL "
		     "AND g.kind IN ('build-error', 'build-warning')) "
		     "GROUP BY f.culprit ORDER BY min(f.id)", "i", tree_id))
		return NULL;
	return g_steal_pointer(&out);
}

GPtrArray *db_finding_boot_report_due(struct db *db, gint64 tree_id, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(g_free);

	if (!db_list(db, out, text_read, error,
		     UNREPORTED_CULPRITS "AND f.kind LIKE 'boot-%' "
		     "GROUP BY f.culprit ORDER BY min(f.id)", "i", tree_id))
		return NULL;
	return g_steal_pointer(&out);
}

bool db_finding_set_report(struct db *db, gint64 id, gint64 lead, GError **error)
{
	return db_run(db, error, "UPDATE findings SET report_finding = ?1 WHERE id = ?2", "ii",
		      lead, id);
}

GPtrArray *db_finding_carried(struct db *db, gint64 lead, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)finding_row_free);

	if (!db_list(db, out, finding_read, error,
		     "SELECT " FINDING_COLUMNS "WHERE f.report_finding = ?1 ORDER BY f.id", "i",
		     lead) ||
	    !finding_steps_load(db, out, error))
		return NULL;
	return g_steal_pointer(&out);
}

bool db_finding_dropped(struct db *db, gint64 id, const char *head, GError **error)
{
	return finding_close(db, id, FINDING_DROPPED, head, error);
}

bool db_finding_close(struct db *db, gint64 id, enum finding_state state, const char *why,
		      GError **error)
{
	g_assert(state == FINDING_INVALID || state == FINDING_UNREPRODUCED);
	return db_run(db, error,
		      "UPDATE findings SET state = ?3, fixed_by = ?1 WHERE id = ?2 "
		      "AND state IN ('open', 'inconclusive')",
		      "tit", why, id, db_finding_state_name(state));
}

bool db_finding_dup(struct db *db, gint64 id, gint64 lead, const char *why, GError **error)
{
	return db_run(db, error,
		      "UPDATE findings SET state = 'duplicate', dup_of = ?1, fixed_by = ?2 "
		      "WHERE id = ?3 AND state IN ('open', 'inconclusive')",
		      "iti", lead, why, id);
}

bool db_finding_undup(struct db *db, gint64 id, GError **error)
{
	return db_run(db, error,
		      "UPDATE findings SET state = CASE WHEN reason IS NULL THEN 'open' "
		      "ELSE 'inconclusive' END, dup_of = NULL, fixed_by = NULL "
		      "WHERE id = ?1 AND state = 'duplicate'",
		      "i", id);
}

bool db_finding_set_fix(struct db *db, gint64 id, const char *subject, GError **error)
{
	return db_run(db, error, "UPDATE findings SET fix_subject = ?1 WHERE id = ?2", "ti",
		      subject, id);
}

bool db_finding_fixed(struct db *db, gint64 id, const char *head, GError **error)
{
	return finding_close(db, id, FINDING_FIXED, head, error);
}

