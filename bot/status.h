/*
 * What zeroday is doing, as one snapshot: the trees with their last poll
 * and skipped branches, the test queue, the jobs (counts, retries,
 * errors), the findings and the recent branch changes. It is loaded once
 * and rendered as text (`zeroday status`, a mail reply) or as JSON
 * (`zeroday status --json`, for scripts). Rendering prints nothing
 * itself and never touches the store.
 */
#ifndef ZERODAY_STATUS_H
#define ZERODAY_STATUS_H

#include <stdbool.h>
#include <glib.h>

#include "bot/store/db.h"

/* How many items of each list a snapshot holds, at most. */
#define STATUS_PENDING_MAX 20
#define STATUS_JOBS_MAX 20
#define STATUS_FINDINGS_MAX 50
#define STATUS_EVENTS_MAX 20
#define STATUS_QUARANTINE_MAX 100

/* The window response times are computed over, in days. */
#define STATUS_LATENCY_DAYS 30

/* A subscribed tree and its recorded branches. */
struct status_tree {
	struct tree_row *tree;
	GPtrArray *branches; /* struct branch_row, as db_branch_list() returns them */
};

/* Response times over the window, in seconds: nearest-rank percentiles. */
struct status_latency {
	guint count; /* the mails measured */
	gint64 p50;  /* -1 when count is 0 */
	gint64 p90;
};

/* A build of the cluster's queue (bot/lab/slurm.h), as Slurm tells it. */
struct status_cluster_job {
	char *id;     /* Slurm's job id */
	char *name;   /* zd-TREE-TARGET */
	char *state;  /* PENDING, RUNNING, ... */
	char *node;   /* where it runs; NULL while pending */
	char *reason; /* why it waits (Dependency, Resources, ...); NULL when running */
	gint64 since; /* submitted (pending) or started (running), unix seconds; 0: unknown */
};

void status_cluster_job_free(struct status_cluster_job *j);

struct status {
	gint64 now;          /* when it was taken, unix seconds */
	GPtrArray *trees;    /* struct status_tree, by name */
	gint64 queue_depth;  /* commits selected and not yet handed to the job queue */
	GPtrArray *pending;  /* struct test_row: the oldest of them */
	gint64 queued;       /* jobs queued, those waiting to retry included */
	gint64 waiting;      /* of those, the ones not to be tried before a retry time */
	gint64 running;
	gint64 done;
	GPtrArray *retrying; /* struct job_row: queued again after a failure, next first */
	GPtrArray *errors;   /* struct job_row: done in error, newest first */
	GPtrArray *findings; /* struct finding_row, newest first */
	GPtrArray *events;   /* struct head_event: the newest branch changes, newest first */
	GPtrArray *active;   /* struct job_row: running, then queued, oldest first */
	gint64 oldest_queued; /* when the oldest queued job was queued; 0: none */
	gint64 mails;        /* mails read and stored */
	GPtrArray *quarantined; /* struct mail_row: mails refused, oldest first */
	GPtrArray *sources;  /* struct source_row: each mail source's last read */
	struct outbox_counts outbox;
	struct status_latency push_report; /* a commit first polled -> its report sent */
	struct status_latency post_reply;  /* a series' first mail read -> its reply sent */
	/*
	 * NULL: no cluster executor. Else the cluster's builds of this zeroday
	 * (struct status_cluster_job), or, when Slurm did not answer, empty
	 * with @cluster_error saying why. Filled by the caller, not by
	 * status_load(); freed by status_release().
	 */
	GPtrArray *cluster;
	char *cluster_error;
};

/*
 * The @p-th percentile (0 < @p <= 100) of the @n @values by nearest rank:
 * the smallest value that at least @p percent of them do not exceed.
 * Sorts @values in place. Returns -1 when @n is 0.
 */
gint64 status_percentile(gint64 *values, guint n, unsigned p);

/* Returns @seconds as "3d 4h", "2h 5m", "5m 3s" or "12s" (caller frees). */
char *status_format_age(gint64 seconds);

/*
 * Fills @out (its old contents are ignored) from @db as of @now (unix
 * seconds: a job whose retry time is later is waiting). On failure @out
 * is left empty, and status_release() on it is harmless.
 */
bool status_load(struct status *out, struct db *db, gint64 now, GError **error);

/* Frees what @status holds and empties it. */
void status_release(struct status *status);

/* Appends @status as `zeroday status` prints it, lines ending in '\n'. */
void status_format_text(GString *out, const struct status *status);

/* Appends @status as one JSON object and a newline, as `zeroday status --json` prints it. */
void status_format_json(GString *out, const struct status *status);

/*
 * A finding's texts, rendered from its fields, for `zeroday status` and
 * the mail templates. Each returns a newly allocated string (caller
 * frees). A text an older row stored (details, reproduce, bisect_log) is
 * returned as it is; an older row without it (no head recorded) gives
 * NULL.
 *
 * status_finding_details(): a build finding's diagnostic as the compiler
 * printed it, "FILE:LINE:COL: KIND: MESSAGE" ("KIND: MESSAGE" without a
 * line); a boot finding's "K/N boots at the head", " (intermittent)" when
 * it did not show in every one, a newline and the console excerpt.
 */
char *status_finding_details(const struct finding_row *f);

/*
 * status_finding_reproduce(): "zeroday build TREE REPRO_COMMIT --target
 * 'TARGET'" and, when it is booted, " && zeroday boot BUILD-ID --repeat
 * REPRO_BOOTS".
 */
char *status_finding_reproduce(const struct finding_row *f);

/*
 * status_finding_log(): one line per bisection step, "ID RESULT
 * FAILURES/RUNS (ROLE)" (a revert: the commit made for it, and the role
 * "revert of CULPRIT"), then "culprit CULPRIT, confidence C" or, when
 * inconclusive, "inconclusive: REASON; one of SUSPECTS"; each line ends
 * in '\n'.
 */
char *status_finding_log(const struct finding_row *f);

/*
 * JSON for scripts, built with json-glib's JsonBuilder (struct
 * _JsonBuilder, so that this header needs no json-glib).
 *
 * status_json_members() sets members of the object being built: @types
 * names, one letter a member, the type of each value; the arguments after
 * it are pairs of a key (const char *) and its value, in the same manner
 * as the store's db_run() arguments:
 *   i gint64 (cast smaller integers), n int (bool, enums, guint), b bool
 *   (promoted, as int), t const char * (NULL: null), v char *const *
 *   (NULL-terminated, NULL: empty) as an array of strings, f double,
 *   a gint64 pair (the time now, then a time of an event; 0 for no
 *   event): the age in seconds, null for no event, o gint64 a row's id,
 *   null for 0 (no row).
 * The pairs end with a NULL, so that a list of letters that does not
 * match them fails at once.
 */
struct _JsonBuilder;
void status_json_members(struct _JsonBuilder *b, const char *types, ...) G_GNUC_NULL_TERMINATED;

/* Writes one row of an array as an object's members (with @data). */
typedef void (*status_json_row_fn)(struct _JsonBuilder *b, const void *row, const void *data);

/* Sets member @key (NULL: adds a value) to @rows (NULL: empty), each an object by @fn. */
void status_json_array(struct _JsonBuilder *b, const char *key, const GPtrArray *rows,
		       status_json_row_fn fn, const void *data);

/*
 * Appends the value @b built, on one line and then a newline, in the
 * layout every --json output shares: ", " between items, ": " after a key.
 */
void status_json_finish(GString *out, struct _JsonBuilder *b);

/* Returns @when (unix seconds) as "YYYY-MM-DD HH:MM:SS UTC", or "never" for 0 (caller frees). */
char *status_format_time(gint64 when);

/* Returns the first 12 digits of @oid, or "-" for NULL (caller frees). */
char *status_short_id(const char *oid);

#endif
