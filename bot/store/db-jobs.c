/*
 * The store's job queue: jobs, leases, retries with backoff, counts and
 * lists: see db.h.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <string.h>

#include "bot/bot.h"
#include "bot/store/db-private.h"

/* Jobs. */

static const char *const job_kinds[] = {
	[JOB_KIND_BUILD] = "build",
	[JOB_KIND_PATCH_TEST] = "patch-test",
	[JOB_KIND_RERUN] = "rerun",
};

const char *db_job_kind_name(enum job_kind kind)
{
	g_return_val_if_fail(kind < G_N_ELEMENTS(job_kinds), NULL);
	return job_kinds[kind];
}

static enum job_kind job_kind_parse(const char *name)
{
	for (size_t i = 0; i < G_N_ELEMENTS(job_kinds); i++) {
		if (name && strcmp(name, job_kinds[i]) == 0)
			return (enum job_kind)i;
	}
	g_warning("unknown job kind '%s' in the database", name ? name : "(null)");
	return JOB_KIND_BUILD;
}

/* The verdict each result of a build stands for, stored under the verdict's name. */
static const struct {
	enum job_result result;
	enum build_verdict verdict;
} job_verdicts[] = {
	{ JOB_RESULT_PASS, VERDICT_PASS },
	{ JOB_RESULT_NEW_DIAGNOSTICS, VERDICT_NEW_DIAGNOSTICS },
	{ JOB_RESULT_FAIL_NEW_ERROR, VERDICT_FAIL_NEW_ERROR },
	{ JOB_RESULT_FAIL_PARENT_FAILING, VERDICT_FAIL_PARENT_FAILING },
	{ JOB_RESULT_INFRA, VERDICT_INFRA },
	{ JOB_RESULT_SKIPPED, VERDICT_SKIPPED },
};

const char *db_job_result_name(enum job_result result)
{
	if (result == JOB_RESULT_NONE)
		return NULL;
	if (result == JOB_RESULT_ERROR)
		return "error";
	if (result == JOB_RESULT_KNOWN_FAILURE)
		return "known-failure";
	for (size_t i = 0; i < G_N_ELEMENTS(job_verdicts); i++) {
		if (job_verdicts[i].result == result)
			return build_verdict_name(job_verdicts[i].verdict);
	}
	g_return_val_if_reached(NULL);
}

enum job_result db_job_result_of_verdict(enum build_verdict verdict)
{
	for (size_t i = 0; i < G_N_ELEMENTS(job_verdicts); i++) {
		if (job_verdicts[i].verdict == verdict)
			return job_verdicts[i].result;
	}
	g_return_val_if_reached(JOB_RESULT_ERROR);
}

/* NULL is JOB_RESULT_NONE. */
static enum job_result job_result_parse(const char *name)
{
	if (!name)
		return JOB_RESULT_NONE;
	for (int r = JOB_RESULT_NONE + 1; r <= JOB_RESULT_ERROR; r++) {
		if (strcmp(name, db_job_result_name((enum job_result)r)) == 0)
			return (enum job_result)r;
	}
	g_warning("unknown job result '%s' in the database", name);
	return JOB_RESULT_ERROR;
}

void job_row_free(struct job_row *job)
{
	if (!job)
		return;
	g_free(job->tree);
	g_free(job->commit);
	g_free(job->target);
	g_free(job->last_error);
	g_free(job);
}

#define JOB_COLUMNS \
	"j.id, j.kind, j.tree_id, t.name, j.commit_id, j.target, j.priority, j.attempts, " \
	"j.lease_until, j.failures, j.not_before, j.last_error, j.result, j.finished, j.created, " \
	"j.state = 'running'"

static void *job_read(sqlite3_stmt *stmt)
{
	struct job_row *job = g_new0(struct job_row, 1);

	job->id = sqlite3_column_int64(stmt, 0);
	job->kind = job_kind_parse((const char *)sqlite3_column_text(stmt, 1));
	job->tree_id = sqlite3_column_int64(stmt, 2);
	job->tree = db_col_text(stmt, 3);
	job->commit = db_col_text(stmt, 4);
	job->target = db_col_text(stmt, 5);
	job->priority = sqlite3_column_int(stmt, 6);
	job->attempts = (unsigned)sqlite3_column_int(stmt, 7);
	job->lease_until = sqlite3_column_int64(stmt, 8);
	job->failures = (unsigned)sqlite3_column_int(stmt, 9);
	job->not_before = sqlite3_column_int64(stmt, 10);
	job->last_error = db_col_text(stmt, 11);
	job->result = job_result_parse((const char *)sqlite3_column_text(stmt, 12));
	job->finished = sqlite3_column_int64(stmt, 13);
	job->created = sqlite3_column_int64(stmt, 14);
	job->running = sqlite3_column_int(stmt, 15) != 0;
	return job;
}

bool db_job_add(struct db *db, enum job_kind kind, gint64 tree_id, const char *commit,
		const char *target, int priority, bool *added, GError **error)
{
	if (!db_run(db, error,
		    "INSERT OR IGNORE INTO jobs (kind, tree_id, commit_id, target, priority, created) "
		    "VALUES (?1, ?2, ?3, ?4, ?5, ?6)", "tittni", db_job_kind_name(kind), tree_id,
		    commit, target, priority, g_get_real_time() / G_USEC_PER_SEC))
		return false;
	*added = db_changes(db) == 1;
	return true;
}

/*
 * SQL: job @j's target is not held by a live lease of its tree (always
 * true when the claim's scope, ?2, is the whole tree: held trees offer
 * nothing).
 */
#define NOT_HELD(j)                                                                         \
	"(?2 = 0 OR NOT EXISTS (SELECT 1 FROM jobs h WHERE h.tree_id = " j ".tree_id "      \
	"  AND h.state = 'running' AND h.lease_until >= ?1 AND h.target = " j ".target)) "

bool db_job_claim(struct db *db, const char *owner, enum job_claim_scope scope, gint64 now,
		  unsigned lease_s, struct job_row **out, GError **error)
{
	struct job_row *job = NULL;

	*out = NULL;
	if (!db_tx_begin(db, error))
		return false;
	/*
	 * Within a priority, the tree whose last claim is oldest goes first.
	 * Each tree offers its first job (a queued one whose time has come,
	 * or one whose lease ran out), found through jobs_by_tree, and its
	 * last claim through jobs_claimed: a claim costs a lookup a tree, not
	 * a look at every queued job (a farm's queue holds tens of
	 * thousands). A live lease holds its whole tree (JOB_CLAIM_TREE: the
	 * tree has one work tree here) or only its target (JOB_CLAIM_TARGET:
	 * each build runs where the cluster puts it), and the tree's offer is
	 * its first job not held; a tree has few running jobs, so few are
	 * passed over.
	 */
	if (!db_one(db, (gpointer *)&job, job_read, error,
		    "WITH held AS (SELECT DISTINCT tree_id FROM jobs WHERE state = 'running' "
		    "  AND lease_until >= ?1 AND ?2 = 0), "
		    "offer AS ("
		    "  SELECT (SELECT q.id FROM jobs q WHERE q.tree_id = t.id AND q.state = 'queued' "
		    "    AND q.not_before <= ?1 AND " NOT_HELD("q")
		    "    ORDER BY q.priority, q.id LIMIT 1) AS id "
		    "  FROM trees t WHERE t.id NOT IN held "
		    "  UNION ALL "
		    "  SELECT (SELECT r.id FROM jobs r WHERE r.tree_id = t.id AND r.state = 'running' "
		    "    AND r.lease_until < ?1 AND " NOT_HELD("r")
		    "    ORDER BY r.priority, r.id LIMIT 1) "
		    "  FROM trees t WHERE t.id NOT IN held) "
		    "SELECT " JOB_COLUMNS " FROM offer o JOIN jobs j ON j.id = o.id "
		    "JOIN trees t ON t.id = j.tree_id "
		    "ORDER BY j.priority, (SELECT coalesce(max(k.claimed), 0) FROM jobs k "
		    "WHERE k.tree_id = j.tree_id), j.id LIMIT 1", "ii", now,
		    (gint64)(scope == JOB_CLAIM_TARGET)))
		goto fail;
	if (!job) {
		db_tx_rollback(db);
		return true;
	}
	job->attempts++;
	job->lease_until = now + lease_s;
	if (!db_run(db, error,
		    "UPDATE jobs SET state = 'running', lease_owner = ?1, lease_until = ?2, "
		    "claimed = ?3, attempts = attempts + 1 WHERE id = ?4", "tiii", owner,
		    job->lease_until, now, job->id) ||
	    !db_tx_commit(db, error)) {
		job_row_free(job);
		goto fail;
	}
	*out = job;
	return true;
fail:
	db_tx_rollback(db);
	return false;
}

static bool lease_lost(gint64 job_id, GError **error)
{
	g_set_error(error, BOT_ERROR, BOT_ERROR_BUSY,
		    "job %" G_GINT64_FORMAT ": the lease was lost to another worker", job_id);
	return false;
}

/* After an UPDATE guarded by the lease: false with BOT_ERROR_BUSY if it matched nothing. */
static bool leased(struct db *db, bool ran, gint64 job_id, GError **error)
{
	if (!ran)
		return false;
	return db_changes(db) == 1 || lease_lost(job_id, error);
}

bool db_job_renew(struct db *db, gint64 job_id, const char *owner, gint64 until, GError **error)
{
	return leased(db,
		      db_run(db, error,
			     "UPDATE jobs SET lease_until = ?1 WHERE id = ?2 AND state = 'running' "
			     "AND lease_owner = ?3", "iit", until, job_id, owner),
		      job_id, error);
}

bool db_job_complete(struct db *db, gint64 job_id, const char *owner, enum job_result result,
		     const char *reason, gint64 now, GError **error)
{
	g_return_val_if_fail(result != JOB_RESULT_NONE, false);
	return leased(db,
		      db_run(db, error,
			     "UPDATE jobs SET state = 'done', result = ?1, finished = ?2, "
			     "lease_until = NULL, last_error = coalesce(?5, last_error) "
			     "WHERE id = ?3 AND state = 'running' AND lease_owner = ?4",
			     "tiitt", db_job_result_name(result), now, job_id, owner, reason),
		      job_id, error);
}

gint64 db_job_backoff(const struct job_backoff *backoff, unsigned failures)
{
	gint64 wait = backoff->first_s;

	for (unsigned i = 1; i < failures && wait < backoff->max_s; i++)
		wait *= 2;
	return MIN(wait, (gint64)backoff->max_s);
}

bool db_job_head_busy(struct db *db, gint64 tree_id, const char *commit, gint64 job_id,
		      bool *waiting, GError **error)
{
	gint64 n = 0;

	if (!db_int(db, &n, 0, error,
		    "SELECT count(*) FROM jobs WHERE tree_id = ?1 AND commit_id = ?2 AND id != ?3 "
		    "AND kind = 'build' AND state IN ('queued', 'running')", "iti", tree_id, commit,
		    job_id))
		return false;
	*waiting = n > 0;
	return true;
}

bool db_job_retry(struct db *db, gint64 job_id, const char *owner, gint64 now,
		  const char *reason, const struct job_backoff *backoff, bool *gave_up,
		  gint64 *not_before, GError **error)
{
	g_autofree char *why = NULL;
	gint64 before = -1;
	unsigned failures;
	gint64 when = 0;
	bool ran;

	g_return_val_if_fail(backoff->limit > 0, false);
	if (!db_int(db, &before, -1, error,
		    "SELECT failures FROM jobs WHERE id = ?1 AND state = 'running' "
		    "AND lease_owner = ?2", "it", job_id, owner))
		return false;
	if (before < 0)
		return lease_lost(job_id, error);
	failures = (unsigned)before + 1;
	*gave_up = failures >= backoff->limit;
	if (*gave_up) {
		why = g_strdup_printf("gave up after %u attempts: %s", failures, reason);
		ran = db_run(db, error,
			     "UPDATE jobs SET state = 'done', result = 'error', finished = ?1, "
			     "lease_until = NULL, failures = ?2, last_error = ?3 "
			     "WHERE id = ?4 AND state = 'running' AND lease_owner = ?5",
			     "intit", now, (int)failures, why, job_id, owner);
	} else {
		when = now + db_job_backoff(backoff, failures);
		ran = db_run(db, error,
			     "UPDATE jobs SET state = 'queued', not_before = ?1, lease_owner = NULL, "
			     "lease_until = NULL, failures = ?2, last_error = ?3 "
			     "WHERE id = ?4 AND state = 'running' AND lease_owner = ?5",
			     "intit", when, (int)failures, reason, job_id, owner);
	}
	if (!leased(db, ran, job_id, error))
		return false;
	if (not_before)
		*not_before = when;
	return true;
}

bool db_job_hand_back(struct db *db, gint64 job_id, const char *owner, GError **error)
{
	return leased(db,
		      db_run(db, error,
			     "UPDATE jobs SET state = 'queued', lease_owner = NULL, lease_until = NULL, "
			     "attempts = max(attempts - 1, 0) WHERE id = ?1 AND state = 'running' "
			     "AND lease_owner = ?2", "it", job_id, owner),
		      job_id, error);
}

struct job_counts {
	gint64 *queued, *waiting, *running, *done;
};

static void counts_read(sqlite3_stmt *row, void *data)
{
	struct job_counts *c = data;

	*c->queued = sqlite3_column_int64(row, 0);
	*c->waiting = sqlite3_column_int64(row, 1);
	*c->running = sqlite3_column_int64(row, 2);
	*c->done = sqlite3_column_int64(row, 3);
}

bool db_job_counts(struct db *db, gint64 now, gint64 *queued, gint64 *waiting, gint64 *running,
		   gint64 *done, GError **error)
{
	struct job_counts c = { queued, waiting, running, done };

	*queued = *waiting = *running = *done = 0;
	return db_rows(db, counts_read, &c, error,
		       "SELECT "
		       "coalesce(sum((state = 'queued' AND not_before <= ?1) "
		       "OR (state = 'running' AND lease_until < ?1)), 0), "
		       "coalesce(sum(state = 'queued' AND not_before > ?1), 0), "
		       "coalesce(sum(state = 'running' AND lease_until >= ?1), 0), "
		       "coalesce(sum(state = 'done'), 0) FROM jobs", "i", now);
}

GPtrArray *db_job_list(struct db *db, enum job_list which, unsigned limit, GError **error)
{
	static const char *const sql[] = {
		[JOB_LIST_RETRYING] = "SELECT " JOB_COLUMNS " FROM jobs j JOIN trees t "
				      "ON t.id = j.tree_id WHERE j.state = 'queued' "
				      "AND j.failures > 0 ORDER BY j.not_before, j.id LIMIT ?1",
		[JOB_LIST_ERROR] = "SELECT " JOB_COLUMNS " FROM jobs j JOIN trees t "
				   "ON t.id = j.tree_id WHERE j.state = 'done' "
				   "AND j.result = 'error' ORDER BY j.finished DESC, j.id DESC "
				   "LIMIT ?1",
		[JOB_LIST_ACTIVE] = "SELECT " JOB_COLUMNS " FROM jobs j JOIN trees t "
				    "ON t.id = j.tree_id WHERE j.state IN ('running', 'queued') "
				    "ORDER BY j.state = 'queued', j.created, j.id LIMIT ?1",
	};
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)job_row_free);

	g_return_val_if_fail(which < G_N_ELEMENTS(sql), NULL);
	if (!db_list(db, out, job_read, error, sql[which], "i", (gint64)limit))
		return NULL;
	return g_steal_pointer(&out);
}

bool db_job_oldest_queued(struct db *db, gint64 *created, GError **error)
{
	return db_int(db, created, 0, error,
		      "SELECT min(created) FROM jobs WHERE state = 'queued'", NULL);
}

struct dead_leases {
	bool (*dead)(const char *owner);
	GArray *ids;
};

static void lease_read(sqlite3_stmt *row, void *data)
{
	struct dead_leases *d = data;
	gint64 id = sqlite3_column_int64(row, 0);

	if (d->dead((const char *)sqlite3_column_text(row, 1)))
		g_array_append_val(d->ids, id);
}

bool db_job_release_dead(struct db *db, const char *owner_prefix,
			 bool (*dead)(const char *owner), GError **error)
{
	g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(gint64));
	struct dead_leases d = { dead, ids };

	if (!db_rows(db, lease_read, &d, error,
		     "SELECT id, lease_owner FROM jobs WHERE state = 'running' AND "
		     "substr(lease_owner, 1, length(?1)) = ?1", "t", owner_prefix))
		return false;
	for (guint i = 0; i < ids->len; i++) {
		if (!db_run(db, error,
			    "UPDATE jobs SET lease_until = 0 WHERE id = ?1 AND state = 'running'",
			    "i", g_array_index(ids, gint64, i)))
			return false;
	}
	return true;
}

bool db_job_requeue(struct db *db, enum job_kind kind, gint64 tree_id, const char *commit,
		    const char *target, int priority, gint64 *job_id, GError **error)
{
	const char *name = db_job_kind_name(kind);
	bool added = false;

	*job_id = 0;
	if (!db_job_add(db, kind, tree_id, commit, target, priority, &added, error))
		return false;
	/* A running one finishes first; a done one runs again, as what it was (its priority kept). */
	if (!db_run(db, error,
		    "UPDATE jobs SET state = 'queued', result = NULL, finished = NULL, attempts = 0, "
		    "failures = 0, last_error = NULL, not_before = 0, lease_owner = NULL, "
		    "lease_until = NULL "
		    "WHERE kind = ?1 AND tree_id = ?2 AND commit_id = ?3 AND target = ?4 "
		    "AND state = 'done'", "titt", name, tree_id, commit, target) ||
	    !db_int(db, job_id, 0, error,
		    "SELECT id FROM jobs WHERE kind = ?1 AND tree_id = ?2 AND commit_id = ?3 "
		    "AND target = ?4", "titt", name, tree_id, commit, target))
		return false;
	if (!*job_id) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_NOT_FOUND, "the requeued job is gone");
		return false;
	}
	return true;
}
