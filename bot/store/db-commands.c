/*
 * The store's mail commands: command mails and their commands, pending
 * subscriptions, muted threads. See db.h.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <string.h>

#include "bot/store/db-private.h"

static const char *const mail_states[] = {
	[COMMAND_MAIL_RUNNING] = "running",
	[COMMAND_MAIL_ANSWERED] = "answered",
	[COMMAND_MAIL_SILENT] = "silent",
};

static const char *const command_states[] = {
	[COMMAND_RUNNING] = "running",
	[COMMAND_DONE] = "done",
	[COMMAND_REFUSED] = "refused",
};

const char *db_command_state_name(enum command_state state)
{
	g_return_val_if_fail(state < G_N_ELEMENTS(command_states), NULL);
	return command_states[state];
}

bool db_command_mail_add(struct db *db, gint64 mail_id, const char *sender, gint64 received,
			 enum command_mail_state state, const char *reason, GError **error)
{
	return db_run(db, error,
		      "INSERT INTO command_mails (mail_id, sender, received, state, reason) "
		      "VALUES (?1, ?2, ?3, ?4, ?5)",
		      "ititt", mail_id, sender, received, mail_states[state], reason);
}

bool db_command_mail_set(struct db *db, gint64 mail_id, enum command_mail_state state,
			 const char *reason, gint64 reply_id, GError **error)
{
	return db_run(db, error,
		      "UPDATE command_mails SET state = ?2, reason = ?3, reply_id = nullif(?4, 0) "
		      "WHERE mail_id = ?1",
		      "itti", mail_id, mail_states[state], reason, reply_id);
}

bool db_command_mail_count(struct db *db, const char *sender, gint64 since, gint64 *count,
			   GError **error)
{
	return db_int(db, count, 0, error,
		      "SELECT count(*) FROM command_mails WHERE received >= ?1 "
		      "AND state != 'silent' AND (?2 IS NULL OR sender = ?2)",
		      "it", since, sender);
}

bool db_command_mail_state(struct db *db, gint64 mail_id, enum command_mail_state *state,
			   bool *found, GError **error)
{
	g_autofree char *name = NULL;

	if (!db_text(db, &name, NULL, error, "SELECT state FROM command_mails WHERE mail_id = ?1",
		     "i", mail_id))
		return false;
	*found = name != NULL;
	if (*found)
		*state = (enum command_mail_state)db_name_index(mail_states, G_N_ELEMENTS(mail_states),
								name, COMMAND_MAIL_SILENT);
	return true;
}

void command_row_free(struct command_row *row)
{
	if (!row)
		return;
	g_free(row->line);
	g_free(row->verb);
	g_free(row->answer);
	g_free(row);
}

#define COMMAND_COLUMNS \
	"id, mail_id, n, line, verb, state, answer, coalesce(finding_id, 0), " \
	"coalesce(job_id, 0), coalesce(series_id, 0) "

static void *command_read(sqlite3_stmt *stmt)
{
	struct command_row *row = g_new0(struct command_row, 1);

	row->id = sqlite3_column_int64(stmt, 0);
	row->mail_id = sqlite3_column_int64(stmt, 1);
	row->n = (guint)sqlite3_column_int(stmt, 2);
	row->line = db_col_text(stmt, 3);
	row->verb = db_col_text(stmt, 4);
	row->state = (enum command_state)db_name_index(command_states,
						       G_N_ELEMENTS(command_states),
						       (const char *)sqlite3_column_text(stmt, 5),
						       COMMAND_REFUSED);
	row->answer = db_col_text(stmt, 6);
	row->finding_id = sqlite3_column_int64(stmt, 7);
	row->job_id = sqlite3_column_int64(stmt, 8);
	row->series_id = sqlite3_column_int64(stmt, 9);
	return row;
}

/*
 * The commands @sql selects (with COMMAND_COLUMNS); its parameters are
 * integers, @a then @b, as many of them as @args names ("", "i" or "ii").
 */
static GPtrArray *command_query(struct db *db, GError **error, const char *sql,
				const char *args, gint64 a, gint64 b)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)command_row_free);

	if (!db_list(db, out, command_read, error, sql, args, a, b))
		return NULL;
	return g_steal_pointer(&out);
}

bool db_command_add(struct db *db, struct command_row *row, GError **error)
{
	if (!db_run(db, error,
		    "INSERT INTO commands (mail_id, n, line, verb, state, answer, finding_id, job_id, "
		    "series_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, nullif(?7, 0), nullif(?8, 0), "
		    "nullif(?9, 0))", "inttttiii", row->mail_id, (int)row->n, row->line, row->verb,
		    command_states[row->state], row->answer, row->finding_id, row->job_id,
		    row->series_id))
		return false;
	row->id = sqlite3_last_insert_rowid(db->sql);
	return true;
}

bool db_command_update(struct db *db, const struct command_row *row, GError **error)
{
	return db_run(db, error,
		      "UPDATE commands SET state = ?2, answer = ?3, finding_id = nullif(?4, 0), "
		      "job_id = nullif(?5, 0), series_id = nullif(?6, 0) WHERE id = ?1", "ittiii",
		      row->id, command_states[row->state], row->answer, row->finding_id,
		      row->job_id, row->series_id);
}

GPtrArray *db_command_list(struct db *db, gint64 mail_id, GError **error)
{
	return command_query(db, error,
			     "SELECT " COMMAND_COLUMNS "FROM commands WHERE mail_id = ?1 ORDER BY n",
			     "i", mail_id, 0);
}

GPtrArray *db_command_waiting(struct db *db, gint64 job_id, gint64 series_id, GError **error)
{
	return command_query(db, error,
			     "SELECT " COMMAND_COLUMNS "FROM commands WHERE state = 'running' "
			     "AND ((?1 != 0 AND job_id = ?1) OR (?2 != 0 AND series_id = ?2)) "
			     "ORDER BY id", "ii", job_id, series_id);
}

GPtrArray *db_command_recent(struct db *db, unsigned limit, GError **error)
{
	return command_query(db, error,
			     "SELECT " COMMAND_COLUMNS "FROM commands ORDER BY id DESC LIMIT ?1",
			     "i", (gint64)limit, 0);
}

void subscription_row_free(struct subscription_row *row)
{
	if (!row)
		return;
	g_free(row->token_hash);
	g_free(row->sender);
	g_free(row->name);
	g_free(row->url);
	g_free(row->pattern);
	g_free(row->list);
	g_free(row);
}

bool db_subscription_add(struct db *db, const struct subscription_row *row, GError **error)
{
	return db_run(db, error,
		      "INSERT INTO subscriptions (token_hash, sender, name, url, pattern, policy, "
		      "list, created, expires) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
		      "tttttttii", row->token_hash, row->sender, row->name, row->url, row->pattern,
		      db_policy_name(row->policy), row->list, row->created, row->expires);
}

static void *subscription_read(sqlite3_stmt *stmt)
{
	struct subscription_row *row = g_new0(struct subscription_row, 1);

	row->token_hash = db_col_text(stmt, 0);
	row->sender = db_col_text(stmt, 1);
	row->name = db_col_text(stmt, 2);
	row->url = db_col_text(stmt, 3);
	row->pattern = db_col_text(stmt, 4);
	if (!db_policy_parse((const char *)sqlite3_column_text(stmt, 5), &row->policy))
		row->policy = TREE_REBASABLE;
	row->list = db_col_text(stmt, 6);
	row->created = sqlite3_column_int64(stmt, 7);
	row->expires = sqlite3_column_int64(stmt, 8);
	row->used = sqlite3_column_int(stmt, 9) != 0;
	return row;
}

struct subscription_row *db_subscription_get(struct db *db, const char *token_hash,
					     GError **error)
{
	gpointer row = NULL;

	db_one(db, &row, subscription_read, error,
	       "SELECT token_hash, sender, name, url, pattern, policy, list, created, expires, "
	       "used FROM subscriptions WHERE token_hash = ?1", "t", token_hash);
	return row;
}

bool db_subscription_use(struct db *db, const char *token_hash, GError **error)
{
	return db_run(db, error, "UPDATE subscriptions SET used = 1 WHERE token_hash = ?1", "t",
		      token_hash);
}

bool db_mute_add(struct db *db, const char *address, const char *thread, gint64 now,
		 GError **error)
{
	return db_run(db, error,
		      "INSERT OR IGNORE INTO mutes (address, thread, created) VALUES (?1, ?2, ?3)",
		      "tti", address, thread, now);
}

bool db_muted(struct db *db, const char *address, const char *thread, bool *muted,
	      GError **error)
{
	gint64 one = 0;

	if (!db_int(db, &one, 0, error, "SELECT 1 FROM mutes WHERE address = ?1 AND thread = ?2",
		    "tt", address, thread))
		return false;
	*muted = one == 1;
	return true;
}

GPtrArray *db_command_stale(struct db *db, GError **error)
{
	return command_query(db, error,
			     "SELECT " COMMAND_COLUMNS "FROM commands c WHERE c.state = 'running' "
			     "AND ((c.series_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM series s "
			     "WHERE s.id = c.series_id AND s.state IN ('waiting', 'testing'))) OR "
			     "(c.job_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM jobs j "
			     "WHERE j.id = c.job_id))) ORDER BY c.id LIMIT 1000", NULL, 0, 0);
}
