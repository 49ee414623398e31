/*
 * The store: sqlite in WAL mode. Only bot/store/db*.c include <sqlite3.h>, through
 * their private bot/store/db-private.h. Every function returns plain
 * GLib-allocated data; nothing of sqlite's leaks out. States and kinds are
 * enums here; the store keeps each as the text its name function gives.
 */
#ifndef ZERODAY_DB_H
#define ZERODAY_DB_H

#include <stdbool.h>
#include <glib.h>

#include "engine/bisect.h"
#include "engine/build.h"
#include "engine/diag.h"
#include "engine/engine.h"

struct db;

/* The schema version this zeroday writes (PRAGMA user_version). */
#define DB_SCHEMA_VERSION 25

/*
 * Opens (creating if needed) the database at @path, or an in-memory one
 * for ":memory:", and migrates it to DB_SCHEMA_VERSION in place. A
 * database newer than this zeroday fails with BOT_ERROR_SCHEMA.
 */
struct db *db_open(const char *path, GError **error);
void db_close(struct db *db);
ZD_AUTOPTR_DEFINE(db, db_close)

/*
 * Another connection to @db's database, for another thread (a
 * connection is never shared between threads). NULL, with @error
 * unset, when there can be none beside @db's own: an in-memory
 * database, or one inside a transaction of @db's that the new
 * connection's writes would wait on.
 */
struct db *db_open_again(struct db *db, GError **error);

/* Returns PRAGMA user_version. */
int db_schema_version(struct db *db);

/*
 * Transactions. db_tx_begin() takes the write lock at once (BEGIN
 * IMMEDIATE), so a read-then-write sequence cannot be overtaken.
 * db_tx_rollback() may be called after a failed db_tx_commit().
 * Transactions nest: inside one, db_tx_begin() opens a savepoint, whose
 * rollback undoes only what was done since (a mail command's tree
 * operation refused inside the mail's transaction).
 */
bool db_tx_begin(struct db *db, GError **error);
bool db_tx_commit(struct db *db, GError **error);
void db_tx_rollback(struct db *db);

enum tree_policy {
	TREE_REBASABLE,     /* every new commit is tested */
	TREE_NON_REBASABLE, /* the head is tested, and bisected when it fails */
};

const char *db_policy_name(enum tree_policy policy);
bool db_policy_parse(const char *name, enum tree_policy *out);

struct tree_row {
	gint64 id;
	char *name;
	char *url;
	enum tree_policy policy;
	char **branches;   /* glob patterns, NULL-terminated */
	char **blacklist;  /* glob patterns, NULL-terminated */
	char *base;        /* "tree/branch" whose commits count as upstream, or NULL */
	/* The maintainers' addresses (--cc), normalized, NULL-terminated: Cc'd on reports. */
	char **recipients;
	gint64 created;    /* unix seconds */
	gint64 last_poll;  /* unix seconds, 0 = never */
	char *last_error;  /* of the last poll, or NULL */
	char **targets;    /* build targets (see build.h), NULL-terminated; empty: default */
	char **lists;      /* the tree's mailing lists, normalized, NULL-terminated */
	bool private;      /* reports go to @recipients only */
	bool mail_clean;   /* a clean build of a head (or a posted series) gets a mail */
	bool regzbot;      /* mainline-like: a verified regression's report carries regzbot's line */
	/* Subject prefixes that choose the tree as a posted series' base ("net-next"), lower case. */
	char **prefixes;
	/*
	 * Who subscribed the tree by mail (#zeroday subscribe), normalized;
	 * NULL for a tree the administrator added. Such a tree's URL came
	 * from a stranger: it is fetched from public addresses only.
	 */
	char *subscriber;
	/* The payloads its boots run, shipped names or paths, NULL-terminated; empty: [boot] payloads. */
	char **payloads;
};

void tree_row_free(struct tree_row *row);
ZD_AUTOPTR_DEFINE(tree_row, tree_row_free)

/* Inserts @row (its id is ignored and set); BOT_ERROR_EXISTS if the name is taken. */
bool db_tree_insert(struct db *db, struct tree_row *row, GError **error);
/* Returns the tree named @name, or NULL with BOT_ERROR_NOT_FOUND. */
struct tree_row *db_tree_get(struct db *db, const char *name, GError **error);
/* Returns all trees by name, as an array of struct tree_row. */
GPtrArray *db_tree_list(struct db *db, GError **error);
/*
 * Writes back url, policy, branches, blacklist, base, recipients, targets,
 * lists, private, mail_clean, prefixes, regzbot and payloads of @row.
 */
bool db_tree_update(struct db *db, const struct tree_row *row, GError **error);
/*
 * Deletes a tree and everything recorded for it, and records that it was
 * removed (db_trees_removed()) until a tree of that name is added again.
 */
bool db_tree_delete(struct db *db, const char *name, GError **error);
/* The names of the trees removed whose work elsewhere is still to drop. */
GPtrArray *db_trees_removed(struct db *db, GError **error);
/* Records that what tree @name left elsewhere is dropped. */
bool db_tree_forgotten(struct db *db, const char *name, GError **error);
/* Records the time and outcome (@message NULL on success) of a poll. */
bool db_tree_polled(struct db *db, gint64 tree_id, gint64 when, const char *message,
		    GError **error);

enum branch_state {
	BRANCH_TESTED,  /* its new commits were selected */
	BRANCH_SKIPPED, /* blacklisted or Dont-Auto-Build: see reason */
	BRANCH_DELETED, /* gone from the remote */
};

const char *db_branch_state_name(enum branch_state state);

struct branch_row {
	char *name;
	char *head; /* 40 hex digits */
	enum branch_state state;
	char *reason; /* why skipped, or NULL */
	gint64 updated;
};

void branch_row_free(struct branch_row *row);

/* Returns the branches recorded for a tree, as an array of struct branch_row. */
GPtrArray *db_branch_list(struct db *db, gint64 tree_id, GError **error);
bool db_branch_put(struct db *db, gint64 tree_id, const struct branch_row *row, GError **error);

enum head_change { HEAD_NEW, HEAD_FORWARD, HEAD_FORCED, HEAD_DELETED };

const char *db_head_change_name(enum head_change change);

/* What zeroday did about a head change. */
enum head_action {
	HEAD_ACTION_QUEUED,  /* commits were selected for testing */
	HEAD_ACTION_SKIPPED, /* blacklisted or Dont-Auto-Build: see reason */
	HEAD_ACTION_NONE,    /* nothing to test */
};

/* "queued", "skipped", "none". */
const char *db_head_action_name(enum head_action action);

/* One observed change of a branch head, and what zeroday did about it. */
struct head_event {
	gint64 id;
	char *tree; /* filled by db_event_recent() */
	char *branch;
	char *old_head; /* NULL for a new branch */
	char *new_head; /* NULL for a deleted branch */
	enum head_change change;
	enum head_action action;
	char *reason; /* why skipped, or a note; may be NULL */
	unsigned selected; /* commits selected for testing */
	gint64 when;
};

void head_event_free(struct head_event *event);

/* Records @event for @tree_id and sets event->id. */
bool db_event_add(struct db *db, gint64 tree_id, struct head_event *event, GError **error);
/* Returns the @limit newest events of all trees, newest first. */
GPtrArray *db_event_recent(struct db *db, unsigned limit, GError **error);

enum test_state {
	TEST_PENDING,   /* until the test loop runs it */
	TEST_SCHEDULED, /* handed to the job queue (db_test_scheduled()) */
	TEST_CANCELLED, /* its branch was blacklisted before it ran (db_branch_cancel()) */
};

/* "pending", "scheduled", "cancelled". */
const char *db_test_state_name(enum test_state state);

/* A commit selected for testing. */
struct test_row {
	gint64 tree_id;
	bool head; /* the commit is its branch's head */
	char *tree;
	char *branch;
	char *commit;
	char *summary;
	enum test_state state;
	gint64 queued;
};

void test_row_free(struct test_row *row);

/*
 * Queues @commit of @tree_id for testing, once: returns true and sets
 * *@added to whether it was new to the tree.
 */
bool db_test_add(struct db *db, gint64 tree_id, const char *branch, const char *commit,
		 const char *summary, gint64 event_id, bool *added, GError **error);
/*
 * Returns the commits selected for @tree_id by the head change that
 * selected @commit, in the order they were selected (oldest first), as a
 * NULL-terminated list (caller frees); empty when @commit was not
 * selected by a recorded head change.
 */
char **db_test_series(struct db *db, gint64 tree_id, const char *commit, GError **error);
/*
 * Returns the branch @commit was selected from for @tree_id (caller
 * frees), or NULL (no error) when it was not selected.
 */
char *db_test_branch(struct db *db, gint64 tree_id, const char *commit, GError **error);
/* Returns whether @commit was already selected for @tree_id. */
bool db_test_known(struct db *db, gint64 tree_id, const char *commit, bool *known,
		   GError **error);
/* Returns the pending tests, oldest first, at most @limit of them. */
GPtrArray *db_test_pending(struct db *db, unsigned limit, GError **error);
/*
 * For a non-rebasable tree: the head that @head replaced on its branch,
 * the last one tested (caller frees), or NULL when @head started the branch.
 */
char *db_head_previous(struct db *db, gint64 tree_id, const char *head, GError **error);

/* Returns whether @tree_id is non-rebasable. */
bool db_tree_non_rebasable(struct db *db, gint64 tree_id, bool *non_rebasable, GError **error);

/* Marks a selected commit as handed to the job queue. */
bool db_test_scheduled(struct db *db, gint64 tree_id, const char *commit, GError **error);
/* Returns the number of pending tests of all trees. */
bool db_test_count_pending(struct db *db, gint64 *count, GError **error);

/* One build of one commit for one target. */
struct build_row {
	gint64 id;
	char *source; /* tree name, or "path:" and a repository path */
	char *commit;
	char *target;
	enum build_status status; /* stored as build_status_name() */
	char *reason;
	double seconds;
	char *log_path;
	char *config_path;
	char *image_path; /* the kernel image kept from a successful build, or NULL */
	gint64 created;
	GPtrArray *diags; /* struct diag, in output order */
};

void build_row_free(struct build_row *row);
ZD_AUTOPTR_DEFINE(build_row, build_row_free)

/* Records a build and its diagnostics, of BUILD_DIAG_VERSION; sets row->id. */
bool db_build_add(struct db *db, struct build_row *row, GError **error);

/*
 * Finds the newest conclusive build (ok or failed: infrastructure errors
 * are retried, not reused) of @commit for @target, of BUILD_DIAG_VERSION
 * (one of another is built again). *@out is NULL when there is none.
 */
bool db_build_find(struct db *db, const char *source, const char *commit, const char *target,
		   struct build_row **out, GError **error);

/*
 * Records the verdict of a build against its parent's build (0 for a root
 * commit), with the sequence numbers of its new diagnostics ("0,3"). The
 * verdict is stored as build_verdict_name().
 */
bool db_verdict_put(struct db *db, gint64 build_id, gint64 parent_build_id,
		    enum build_verdict verdict, const char *new_seqs, GError **error);

/*
 * Returns the kernel image kept with build @build_id, and its target in
 * *@target (caller frees both).
 */
char *db_build_image(struct db *db, gint64 build_id, char **target, GError **error);

/* One boot of a kernel image. */
struct boot_row {
	gint64 build_id; /* 0: an image given by path */
	const char *image;
	const char *host;
	unsigned seed;
	enum console_kind kind; /* stored as diag_console_kind_name() */
	const char *title;
	const char *fingerprint;
	const char *console_path;
	double seconds;
	unsigned attempts; /* 1 + infrastructure retries */
	const char *profile; /* what else the result depends on: initramfs, command line */
	const char *excerpt; /* the report's console lines, or NULL */
	/* The tests it ran ("12 passed, 1 failed, 2 skipped"), or NULL: none printed KTAP. */
	const char *tests;
	/* Its CONSOLE_TEST_FAIL findings (struct console_finding), or NULL. */
	GPtrArray *failed_tests;
};

bool db_boot_add(struct db *db, const struct boot_row *row, GError **error);

/* A stored boot, as db_boot_list() returns it. */
struct boot_record {
	gint64 id;
	unsigned seed;
	char *host;
	enum console_kind kind; /* CONSOLE_INFRA for a name this zeroday does not know */
	char *title;
	char *fingerprint;
	char *excerpt;
	char *console_path;
	double seconds;
	unsigned attempts;
	char *tests;            /* as boot_row's, or NULL */
	GPtrArray *failed_tests; /* struct console_finding, CONSOLE_TEST_FAIL: never NULL */
};

void boot_record_free(struct boot_record *r);

/*
 * Returns the conclusive boots (not infrastructure errors) recorded for
 * build @build_id under @profile, oldest first (struct boot_record).
 */
GPtrArray *db_boot_list(struct db *db, gint64 build_id, const char *profile, GError **error);

/*
 * The console log of the first boot of build @build_id that failed with
 * @fingerprint, as its verdict or as a failed test (*@path NULL when none
 * is stored; caller frees).
 */
bool db_boot_console(struct db *db, gint64 build_id, const char *fingerprint, char **path,
		     GError **error);

/*
 * The job queue: builds (later boots, bisection steps, patch tests) with
 * priorities, fairness across trees, and leases. A worker claims a job for
 * a lease; if it dies, the lease runs out and the job is claimed again;
 * only the holder of the current lease can complete it, so a job is never
 * completed twice.
 */
enum job_priority {          /* lower runs first */
	JOB_PATCH = 0,       /* posted patches */
	JOB_HEAD = 10,       /* branch heads */
	JOB_BACKLOG = 20,    /* commit-by-commit history */
	JOB_COVERAGE = 30,   /* randconfig coverage */
};

enum job_kind {
	JOB_KIND_BUILD,      /* a commit built against its parent; a head booted too */
	JOB_KIND_PATCH_TEST, /* a posted series: its patches built one after the other */
	JOB_KIND_RERUN,      /* a finding's culprit built (and booted) afresh: #zeroday rerun */
};

/* "build", "patch-test", "rerun". */
const char *db_job_kind_name(enum job_kind kind);

/* How a job ended. */
enum job_result {
	JOB_RESULT_NONE, /* not done */
	/* Done with a builder verdict (enum build_verdict), one value each: */
	JOB_RESULT_PASS,
	JOB_RESULT_NEW_DIAGNOSTICS,
	JOB_RESULT_FAIL_NEW_ERROR,
	JOB_RESULT_FAIL_PARENT_FAILING,
	JOB_RESULT_INFRA,
	JOB_RESULT_SKIPPED,
	/*
	 * Built, but its boots show a failure its comparison base shows too:
	 * never a pass; the job's last error says what, and since where.
	 */
	JOB_RESULT_KNOWN_FAILURE,
	JOB_RESULT_ERROR, /* could not be run: see the job's last error */
};

/*
 * A verdict's result is stored and printed as build_verdict_name() ("pass",
 * "new-diagnostics", ...), JOB_RESULT_KNOWN_FAILURE as "known-failure",
 * JOB_RESULT_ERROR as "error"; JOB_RESULT_NONE is
 * NULL.
 */
const char *db_job_result_name(enum job_result result);
/* The result of a job that ended with @verdict. */
enum job_result db_job_result_of_verdict(enum build_verdict verdict);

struct job_row {
	gint64 id;
	enum job_kind kind;
	gint64 tree_id;
	char *tree;
	char *commit;
	char *target;
	int priority;
	unsigned attempts;   /* claims so far, this one included */
	gint64 lease_until;
	unsigned failures;   /* temporary failures so far (db_job_retry()) */
	gint64 not_before;   /* not claimed before this time (unix seconds); 0: at once */
	char *last_error;    /* the cause of the last failure, or NULL */
	enum job_result result; /* of a done job; JOB_RESULT_NONE until then */
	gint64 finished;     /* of a done job */
	gint64 created;      /* when it was queued (unix seconds) */
	bool running;        /* leased to a worker */
};

void job_row_free(struct job_row *job);
ZD_AUTOPTR_DEFINE(job_row, job_row_free)

/*
 * Queues a job once: a (kind, tree, commit, target) already queued,
 * running or done is left alone. Sets *@added.
 */
bool db_job_add(struct db *db, enum job_kind kind, gint64 tree_id, const char *commit,
		const char *target, int priority, bool *added, GError **error);

/* What one running job keeps other workers from. */
enum job_claim_scope {
	JOB_CLAIM_TREE,   /* its tree: the tree's builds share one work tree here */
	JOB_CLAIM_TARGET, /* its tree's target: each build runs where a cluster puts it */
};

/*
 * Claims the next job for @owner until @now + @lease_s: the lowest
 * priority first; within it, the tree served least recently, so that a
 * busy tree cannot starve the others; a running job whose lease ran out
 * counts as queued. A job whose tree (or, with JOB_CLAIM_TARGET, whose
 * tree and target) another worker holds a job of waits. *@out is NULL
 * when there is nothing to do now.
 */
bool db_job_claim(struct db *db, const char *owner, enum job_claim_scope scope, gint64 now,
		  unsigned lease_s, struct job_row **out, GError **error);

/* Extends @owner's lease on @job_id; false with BOT_ERROR_BUSY if it was lost. */
bool db_job_renew(struct db *db, gint64 job_id, const char *owner, gint64 until, GError **error);

/*
 * Completes @job_id with @result (not JOB_RESULT_NONE), only while @owner
 * holds its lease; otherwise false with BOT_ERROR_BUSY (the lease ran out
 * and another worker took the job over). @reason (NULL for none) is kept
 * as the job's last error: the cause of JOB_RESULT_ERROR.
 */
bool db_job_complete(struct db *db, gint64 job_id, const char *owner, enum job_result result,
		     const char *reason, gint64 now, GError **error);

/*
 * How a job that failed for a temporary cause (infrastructure) is
 * retried: after its first failure it waits @first_s, each further
 * failure doubles the wait up to @max_s, and its @limit-th failure ends it
 * in error.
 */
struct job_backoff {
	unsigned first_s;
	unsigned max_s;
	unsigned limit;
};

#define JOB_BACKOFF_INIT { .first_s = 60, .max_s = 3600, .limit = 8 }

/* The wait after a job's @failures-th failure (1 or more), in seconds. */
gint64 db_job_backoff(const struct job_backoff *backoff, unsigned failures);

/*
 * Hands @job_id back to the queue after a temporary failure, only while
 * @owner holds its lease (else false with BOT_ERROR_BUSY): its failures
 * count goes up, @reason becomes its last error, and it is not claimed
 * before @now + db_job_backoff(). Its @backoff->limit-th failure instead
 * completes it with JOB_RESULT_ERROR and the reason "gave up after N
 * attempts: REASON". *@gave_up says which; *@not_before (may be NULL)
 * receives the retry time, or 0.
 */
bool db_job_retry(struct db *db, gint64 job_id, const char *owner, gint64 now,
		  const char *reason, const struct job_backoff *backoff, bool *gave_up,
		  gint64 *not_before, GError **error);

/*
 * Hands @job_id back to the queue as it was before @owner claimed it,
 * only while @owner holds its lease (else false with BOT_ERROR_BUSY):
 * claimable at once, no failure counted, and the claim not counted as an
 * attempt. For a job zeroday stops in the middle of while its work goes
 * on elsewhere (a Slurm job): the next start takes it over, however often
 * zeroday is restarted meanwhile.
 */
bool db_job_hand_back(struct db *db, gint64 job_id, const char *owner, GError **error);

/*
 * Counts jobs: queued (claimable now, including expired leases), waiting
 * (queued, but not before a retry time after @now), running, done.
 */
bool db_job_counts(struct db *db, gint64 now, gint64 *queued, gint64 *waiting, gint64 *running,
		   gint64 *done, GError **error);

enum job_list {
	JOB_LIST_RETRYING, /* queued again after a failure, next retry first */
	JOB_LIST_ERROR,    /* done with JOB_RESULT_ERROR, newest first */
	JOB_LIST_ACTIVE,   /* running, then queued (waiting ones included); oldest first */
};

/* Returns at most @limit jobs of a kind, as an array of struct job_row. */
GPtrArray *db_job_list(struct db *db, enum job_list which, unsigned limit, GError **error);

/* Sets *@created to when the oldest queued job was queued (unix seconds), 0 when none is. */
bool db_job_oldest_queued(struct db *db, gint64 *created, GError **error);

/*
 * Makes the jobs leased by @owner_prefix (this host) whose owner @dead
 * says is gone claimable at once, instead of at the end of their lease.
 */
bool db_job_release_dead(struct db *db, const char *owner_prefix,
			 bool (*dead)(const char *owner), GError **error);

enum finding_kind {
	FINDING_BUILD_ERROR,   /* a new compiler or checker error */
	FINDING_BUILD_WARNING, /* a new compiler or checker warning */
	FINDING_BOOT,          /* a new boot failure: see finding_row.console */
};

/*
 * The name a finding's kind is stored and printed as: "build-error",
 * "build-warning", or for FINDING_BOOT "boot-" and the console kind's
 * name ("boot-panic", "boot-WARNING"); @console is read only then.
 * Borrowed, and valid as long as the process.
 */
const char *db_finding_kind_name(enum finding_kind kind, enum console_kind console);

enum finding_state {
	FINDING_OPEN,
	FINDING_FIXED,        /* see finding_row.fixed_by */
	FINDING_INCONCLUSIVE, /* the bisection named no culprit: the head is blamed */
	FINDING_DROPPED,      /* the culprit left every branch: see finding_row.fixed_by */
	FINDING_INVALID,      /* a maintainer said the report is wrong (#zeroday invalid) */
	FINDING_UNREPRODUCED, /* a rerun (#zeroday rerun) no longer showed it */
	FINDING_DUPLICATE,    /* another finding is the same bug (#zeroday dup): see dup_of */
};

/* "open", "fixed", "inconclusive", "dropped", "invalid", "unreproduced". */
const char *db_finding_state_name(enum finding_state state);

/* One step of the bisection that named a finding's culprit. */
struct finding_step {
	enum bisect_role role;     /* stored as bisect_role_name() */
	char *commit;              /* the commit tested; a revert: the culprit reverted */
	char *tested;              /* a revert: the commit made for it, or NULL */
	enum bisect_result result; /* stored as bisect_result_name() */
	unsigned runs;
	unsigned failures;         /* of the runs, those that showed it */
};

void finding_step_free(struct finding_step *step);

/*
 * A regression found, with its culprit. A finding is kept as fields;
 * status_finding_details(), status_finding_reproduce() and
 * status_finding_log() (bot/status.h) render them. Rows stored before
 * schema 10 have only the text of details, reproduce and bisect_log, and
 * no head; an older caller may still set that text, which the renderers
 * then print as it is.
 */
struct finding_row {
	gint64 id;
	char *tree;
	char *branch;
	char *culprit;
	char *parent;      /* the culprit's first parent, or NULL */
	char *head;        /* the commit the job tested, where it showed; NULL in older rows */
	char *target;
	enum finding_kind kind;
	enum console_kind console; /* of a FINDING_BOOT */
	char *fingerprint;
	char *title;
	/*
	 * A build finding's diagnostic: where (@line 0 when unknown), what
	 * kind, and its text. @diag_kind is stored for a build finding with a
	 * @message; read back without one, it follows @kind.
	 */
	char *file;
	unsigned line;
	unsigned column;
	enum diag_kind diag_kind;
	char *message;
	/* A boot finding: @failures of @runs boots at the head showed it, and its console lines. */
	char *excerpt;
	unsigned failures;
	unsigned runs;
	bool intermittent; /* it did not show in every boot at the head */
	/* To reproduce it: build @repro_commit and, for a boot finding, boot it @repro_boots times. */
	char *repro_commit;
	unsigned repro_boots; /* 0: no boot */
	/* An inconclusive finding: the commits one of which is the culprit, and why no one is named. */
	char **suspects;   /* NULL-terminated; read back, empty when none (never NULL) */
	char *reason;
	GPtrArray *steps;  /* struct finding_step, in order; read back, empty when none (never NULL) */
	char *details;     /* older rows: the diagnostic as printed, or a console excerpt */
	double confidence;
	enum finding_state state; /* on insert: FINDING_OPEN, or FINDING_INCONCLUSIVE */
	char *reproduce;   /* older rows: the command line */
	char *fixed_by;    /* the fixing commit, or the first head seen without it */
	double rate;       /* the share of runs that showed it (boots); 0 on insert: 1.0 */
	char *bisect_log;  /* older rows: one line per step: commit, result, failures/runs */
	gint64 created;
	gint64 report_finding; /* the finding whose report carries this one; 0: its own */
	gint64 dup_of;     /* a FINDING_DUPLICATE: the finding it is the same bug as */
	char *fix_subject; /* the fix's subject, as #zeroday fix: gave it; NULL: none */
	char *also;        /* the other targets it showed on, space-separated; NULL: none */
};

/* Frees @row, its suspects and its steps. */
void finding_row_free(struct finding_row *row);
ZD_AUTOPTR_DEFINE(finding_row, finding_row_free)

/*
 * Records a finding once: the same fingerprint caused by the same culprit
 * is one finding, however many heads, targets or trees show it. Its
 * steps (@row->steps, may be NULL) are stored with it, only when it is
 * new (*@added, and then @row->id is set). The caller holds a
 * transaction (db_tx_begin()), so that a finding is never stored without
 * its steps (nor its report: see db_outbox_add()).
 */
bool db_finding_add(struct db *db, gint64 tree_id, struct finding_row *row, bool *added,
		    GError **error);
/* Returns the open findings of @tree_id for @target, oldest first (struct finding_row). */
GPtrArray *db_finding_open(struct db *db, gint64 tree_id, const char *target, GError **error);
/* Marks a finding fixed: @head no longer shows it. */
bool db_finding_fixed(struct db *db, gint64 id, const char *head, GError **error);
/*
 * Returns the findings of @tree_id and @culprit (on @target; NULL: on
 * any) that no report mentions yet (no report of their own, carried by
 * none), oldest first.
 */
GPtrArray *db_finding_unreported(struct db *db, gint64 tree_id, const char *culprit,
				 const char *target, GError **error);
/*
 * The culprits of @tree_id's build findings that no report mentions yet
 * and that no queued or running build job of the head that showed them
 * waits on (a char * array): their reports are due.
 */
GPtrArray *db_finding_report_due(struct db *db, gint64 tree_id, GError **error);
/*
 * The culprits of @tree_id's boot findings that no report mentions yet (a
 * char * array): stored at the end of a head's job, their reports are due
 * at once.
 */
GPtrArray *db_finding_boot_report_due(struct db *db, gint64 tree_id, GError **error);
/*
 * Whether a build job of @tree_id for @commit other than @job_id is queued
 * or running (*@waiting): a head's targets end one by one.
 */
bool db_job_head_busy(struct db *db, gint64 tree_id, const char *commit, gint64 job_id,
		      bool *waiting, GError **error);
/* Finding @id is carried by finding @lead's report. */
bool db_finding_set_report(struct db *db, gint64 id, gint64 lead, GError **error);
/* Returns the findings finding @lead's report carries besides it, oldest first. */
GPtrArray *db_finding_carried(struct db *db, gint64 lead, GError **error);
/* Marks an open finding dropped: its culprit is on no branch; @head is one seen without it. */
bool db_finding_dropped(struct db *db, gint64 id, const char *head, GError **error);
/* Returns the @limit newest findings, newest first. */
GPtrArray *db_finding_list(struct db *db, unsigned limit, GError **error);
/* Returns finding @id with its steps, or NULL with BOT_ERROR_NOT_FOUND. */
struct finding_row *db_finding_get(struct db *db, gint64 id, GError **error);
/*
 * Closes finding @id, open or inconclusive, as FINDING_INVALID or
 * FINDING_UNREPRODUCED, with @why (who said so, or the rerun's commit)
 * kept in fixed_by. A closed finding is never reported again.
 */
bool db_finding_close(struct db *db, gint64 id, enum finding_state state, const char *why,
		      GError **error);
/*
 * Closes finding @id, open or inconclusive, as a FINDING_DUPLICATE of
 * finding @lead, with @why (who said so) kept in fixed_by.
 */
bool db_finding_dup(struct db *db, gint64 id, gint64 lead, const char *why, GError **error);
/*
 * Opens duplicate finding @id again (#zeroday undup): inconclusive when
 * it names no culprit (it has a reason), else open.
 */
bool db_finding_undup(struct db *db, gint64 id, GError **error);
/* Finding @id is fixed by the commit whose subject is @subject (#zeroday fix:). */
bool db_finding_set_fix(struct db *db, gint64 id, const char *subject, GError **error);

/* The outbox (bot/store/db-outbox.c). */

enum outbox_kind {
	OUTBOX_REPORT, /* a finding's report: starts its thread */
	OUTBOX_FIXED,  /* the finding was fixed: a reply in the report's thread */
	OUTBOX_DIGEST, /* mails held back by a limit, sent to one address as one */
	OUTBOX_TEST,   /* `zeroday outbox test`: checks the way out */
	OUTBOX_DROPPED, /* the culprit left the branch: a reply in the report's thread */
	OUTBOX_CLEAN,   /* a head built (and booted) clean, for a tree that asks for it */
	OUTBOX_SERIES,  /* a posted series' result: a reply on one of its mails */
	OUTBOX_COMMAND, /* the one reply to a command mail */
};

/* "report", "fixed", "digest", "test", "dropped", "clean", "series", "command". */
const char *db_outbox_kind_name(enum outbox_kind kind);

enum outbox_state {
	OUTBOX_QUEUED,  /* committed, not sent yet, or to be tried again at next_try */
	OUTBOX_SENDING, /* a try began and did not end: sent again, same Message-ID */
	OUTBOX_SENT,    /* every recipient's copy accepted, refused, or in a digest */
	OUTBOX_HELD,    /* recipients held back by a limit wait for their digest */
	OUTBOX_ERROR,   /* could not be rendered, or refused for good: see last_error */
};

/* "queued", "sending", "sent", "held", "error". */
const char *db_outbox_state_name(enum outbox_state state);

struct outbox_row {
	gint64 id;
	gint64 finding_id;  /* 0: none */
	enum outbox_kind kind;
	char *message_id;   /* without brackets */
	char *in_reply_to;  /* or NULL */
	char **references;  /* NULL-terminated, oldest first; empty when none */
	char *subject;
	char **recipients;  /* "to:" or "cc:" and a normalized address; NULL-terminated */
	char *raw;          /* the RFC 5322 text; NULL for OUTBOX_ERROR */
	enum outbox_state state;
	gint64 created;
	gint64 sent;
	unsigned attempts;
	gint64 next_try;    /* unix seconds; 0: at once */
	char *last_error;
	char *path;         /* where the sink, or the copy of what SMTP sent, is */
};

void outbox_row_free(struct outbox_row *row);
ZD_AUTOPTR_DEFINE(outbox_row, outbox_row_free)

/*
 * Queues @row (its id is set); one row per (finding, kind): a second
 * one is left out and *@added is false. Run it in the transaction of
 * the event that caused the mail.
 */
bool db_outbox_add(struct db *db, struct outbox_row *row, bool *added, GError **error);

/* Returns the rows in @state (all when @state < 0), oldest first, at most @limit. */
GPtrArray *db_outbox_list(struct db *db, int state, unsigned limit, GError **error);

/* Returns finding @finding_id's mail of @kind, or NULL (no error) when there is none. */
struct outbox_row *db_outbox_of_finding(struct db *db, gint64 finding_id, enum outbox_kind kind,
					GError **error);

/* Returns the rows due at @now (queued or sending, next_try reached), oldest first. */
GPtrArray *db_outbox_due(struct db *db, gint64 now, unsigned limit, GError **error);

/* The outbox in numbers, as `zeroday status` shows it. */
struct outbox_counts {
	gint64 queued;        /* queued or being sent */
	gint64 held;          /* held back by a limit, for a digest */
	gint64 sent;
	gint64 failed;        /* OUTBOX_ERROR */
	gint64 oldest_queued; /* when the oldest queued one was created; 0: none */
};

bool db_outbox_counts(struct db *db, struct outbox_counts *out, GError **error);

/*
 * Response times in seconds, one for each mail sent at @since or later
 * (unix seconds), in no particular order (caller frees the GArray of
 * gint64).
 *
 * db_latency_push_report(): for each finding's report sent, from when a
 * poll selected the commit where it showed (the test row of the
 * finding's head: when zeroday first saw the commit) to when the report
 * was sent. Findings without a head (older rows) or whose commit no poll
 * selected (a rerun asked by mail) are left out.
 *
 * db_latency_post_reply(): for each posted series that got a reply, from
 * when zeroday read the first of its mails (ingest time, not the
 * sender's Date:) to when its first reply was sent.
 */
GArray *db_latency_push_report(struct db *db, gint64 since, GError **error);
GArray *db_latency_post_reply(struct db *db, gint64 since, GError **error);

/* Returns row @id, or NULL with BOT_ERROR_NOT_FOUND. */
struct outbox_row *db_outbox_get(struct db *db, gint64 id, GError **error);

/*
 * Finds the finding a mail refers to: the first of @message_ids (with or
 * without angle brackets; a reply's In-Reply-To and References, newest
 * first) that is the Message-ID of a mail zeroday sent about a finding.
 * Sets *@finding_id, 0 when none is.
 */
bool db_outbox_finding_of(struct db *db, const char *const *message_ids, gint64 *finding_id,
			  GError **error);

/*
 * Finds the mail zeroday sent that a mail refers to, likewise: sets
 * *@outbox_id to the first of @message_ids that zeroday sent (any kind),
 * 0 when none is.
 */
bool db_outbox_of_message_ids(struct db *db, const char *const *message_ids, gint64 *outbox_id,
			      GError **error);

/* A try of row @id begins: it is OUTBOX_SENDING until db_outbox_settle(). */
bool db_outbox_attempt(struct db *db, gint64 id, GError **error);

/*
 * A try of row @id ended: its new @state, when it was @sent (0: keep),
 * when to try again, where its copy is (NULL: keep) and why it failed
 * (NULL: clears).
 */
bool db_outbox_settle(struct db *db, gint64 id, enum outbox_state state, gint64 sent,
		      gint64 next_try, const char *path, const char *why, GError **error);

/* One recipient of one mail, as the outbox tracks it. */
enum rcpt_state {
	RCPT_PENDING,  /* to be sent */
	RCPT_SENT,     /* accepted by the server, or delivered to the Maildir */
	RCPT_REFUSED,  /* refused for good (5xx): see reply */
	RCPT_HELD,     /* held back by a limit: goes out in a digest */
	RCPT_DIGESTED, /* went out in digest digest_id */
};

const char *db_rcpt_state_name(enum rcpt_state state);

struct rcpt_row {
	gint64 outbox_id;
	char *address;   /* the addr-spec, lower case (address_key()) */
	enum rcpt_state state;
	gint64 updated;
	char *reply;     /* the server's words, or NULL */
	gint64 digest_id;
};

void rcpt_row_free(struct rcpt_row *row);

/* Adds recipient @address of row @outbox_id as RCPT_PENDING, unless it is there. */
bool db_rcpt_add(struct db *db, gint64 outbox_id, const char *address, GError **error);

/* Returns row @outbox_id's recipients (struct rcpt_row), by address. */
GPtrArray *db_rcpt_list(struct db *db, gint64 outbox_id, GError **error);

/* Sets a recipient's state, at @when, with the server's @reply (may be NULL). */
bool db_rcpt_set(struct db *db, gint64 outbox_id, const char *address, enum rcpt_state state,
		 gint64 when, const char *reply, gint64 digest_id, GError **error);

/*
 * Counts the mails sent since @since: to @address, or, when it is NULL,
 * in all (a mail sent to several people counts once).
 */
bool db_rcpt_count_sent(struct db *db, const char *address, gint64 since, gint64 *count,
			GError **error);

/* Returns the addresses that have held mail, as a NULL-terminated array (caller frees). */
char **db_rcpt_held_addresses(struct db *db, GError **error);

/* Returns the ids of the rows holding mail for @address, oldest first (gint64 *). */
GArray *db_rcpt_held_for(struct db *db, const char *address, GError **error);

/* Counts row @outbox_id's recipients in @state. */
bool db_rcpt_count(struct db *db, gint64 outbox_id, enum rcpt_state state, gint64 *count,
		   GError **error);

/* Mail read from the sources (bot/store/db-mail.c), and the series made of it (db-series.c). */

enum mail_state {
	MAIL_NEW,         /* stored, not yet looked at by series assembly */
	MAIL_DONE,        /* looked at */
	MAIL_QUARANTINED, /* refused: see reason; never looked at, never answered */
};

/* "new", "done", "quarantined". */
const char *db_mail_state_name(enum mail_state state);

/* A stored mail, without its raw text (db_mail_raw()). */
struct mail_row {
	gint64 id;
	char *message_id; /* without brackets; "" when the mail had none readable */
	char *hash;       /* sha256 of what identifies the content (bot/mailroom/ingest.c) */
	char *source;     /* the source's name (source_name()) */
	guint32 uid;      /* an IMAP source's UID; 0 for others */
	gint64 received;
	enum mail_state state;
	char *reason;     /* why quarantined, or NULL */
	char *kind;       /* patchmail_kind_name(), or NULL when quarantined */
	char *sender;     /* normalized address, or NULL */
	char *subject;    /* or NULL */
	gint64 size;      /* bytes of the raw text; of a mail refused unread, as listed */
};

void mail_row_free(struct mail_row *row);
ZD_AUTOPTR_DEFINE(mail_row, mail_row_free)

/*
 * Stores @row with its @len bytes of @raw and @parse (what
 * patchmail_pack() made of it; NULL for a mail quarantined), once per
 * (message_id, hash): *@added is false, and nothing changes, when that
 * pair is stored already. Sets row->id when added. With @len 0 (a mail
 * refused unread), row->size is kept as its size.
 */
bool db_mail_add(struct db *db, struct mail_row *row, const char *raw, gsize len,
		 GBytes *parse, bool *added, GError **error);
/* Whether a mail with Message-ID @message_id is stored (any content). */
bool db_mail_known(struct db *db, const char *message_id, bool *known, GError **error);
/* The stored mail with Message-ID @message_id (the first stored), or NULL (no error) when none. */
struct mail_row *db_mail_by_message_id(struct db *db, const char *message_id, GError **error);
/* Returns mail @id, or NULL with BOT_ERROR_NOT_FOUND. */
struct mail_row *db_mail_get(struct db *db, gint64 id, GError **error);
/* Returns the mails in @state (all when < 0), oldest first, at most @limit (struct mail_row). */
GPtrArray *db_mail_list(struct db *db, int state, unsigned limit, GError **error);
/* Counts the mails in @state. */
bool db_mail_count(struct db *db, enum mail_state state, gint64 *count, GError **error);
/* Returns mail @id's raw text, NUL-terminated, *@len its length (caller frees). */
char *db_mail_raw(struct db *db, gint64 id, gsize *len, GError **error);
bool db_mail_set_state(struct db *db, gint64 id, enum mail_state state, GError **error);
/*
 * Mail @id's parse as stored with it (patchmail_pack()'s bytes) into
 * *@parse (caller unrefs); NULL when it has none (quarantined, or stored
 * by a zeroday before schema 18), and NULL with BOT_ERROR_NOT_FOUND when
 * there is no mail @id.
 */
bool db_mail_parse(struct db *db, gint64 id, GBytes **parse, GError **error);
/* Stores @parse as mail @id's (a mail stored before parses were kept, parsed now). */
bool db_mail_set_parse(struct db *db, gint64 id, GBytes *parse, GError **error);

/*
 * A source folder's cursor: its UIDVALIDITY and the highest UID stored.
 * *@found is false (and the others 0) for a source never read.
 */
bool db_cursor_get(struct db *db, const char *source, guint32 *uidvalidity, guint32 *last_uid,
		   bool *found, GError **error);
bool db_cursor_put(struct db *db, const char *source, guint32 uidvalidity, guint32 last_uid,
		   gint64 now, GError **error);

/* A mail source's last read, as `zeroday status` shows it. */
struct source_row {
	char *source;     /* its name: the URL without credentials */
	gint64 last_read; /* the end of its last read that listed the source whole; 0: none */
	gint64 failed;    /* when its last read failed, 0 when it succeeded */
	char *last_error; /* why, or NULL */
};

void source_row_free(struct source_row *row);

/*
 * Records a read of mail source @source that ended at @now: a success
 * when @failure is NULL (last_read is @now, the error is cleared), else
 * the failure (last_read is kept).
 */
bool db_source_read(struct db *db, const char *source, gint64 now, const char *failure,
		    GError **error);

/* Returns every source read so far, by name (struct source_row). */
GPtrArray *db_source_list(struct db *db, GError **error);

enum series_state {
	SERIES_WAITING,     /* parts missing, or inside the grace period */
	SERIES_TESTING,     /* a base found, the patches applied, jobs queued */
	SERIES_TESTED,      /* every patch has its result */
	SERIES_SUPERSEDED,  /* a newer version came before it was tested */
	SERIES_NO_BASE,     /* applies to no base tried ("could-not-apply") */
	SERIES_IGNORED,     /* for no subscribed tree: see note */
};

/* "waiting", "testing", "tested", "superseded", "could-not-apply", "ignored". */
const char *db_series_state_name(enum series_state state);

struct series_part {
	guint n;          /* 0: the cover letter */
	gint64 mail_id;
	char *message_id;
	char *subject;    /* the mail's */
	char *commit;     /* the commit it was applied as, or NULL */
};

struct series_base {
	guint seq;
	char *tree;       /* or NULL for a base-commit: trailer's commit in no known tree */
	char *branch;     /* or NULL */
	char *commit;     /* or NULL when unknown */
	char *how;        /* "base-commit", "list ADDRESS", "prefix P" */
	bool applied;
	char *reason;     /* why rejected, or NULL */
};

struct series_result {
	guint n;          /* the patch; 0: the base */
	char *target;
	char *commit;
	char *result;     /* db_job_result_name() of its build */
	char *detail;     /* what is new, or NULL */
	char *boot;       /* what its boots showed ("3 boots clean"), or NULL: not booted */
	bool boot_failed; /* a new boot failure is blamed on it: see boot */
};

struct series_row {
	gint64 id;
	char *sender;     /* normalized address */
	char *title;      /* the cover letter's title, else patch 1's; NULL until one arrived */
	guint version;
	bool versioned;   /* a part said vN; else the version is 1 until one does */
	bool resend;      /* a part was tagged RESEND */
	guint total;
	enum series_state state;
	gint64 superseded_by;
	gint64 created;
	gint64 last_part; /* when the last part arrived */
	gint64 tree_id;   /* the base's tree; 0: none yet */
	char *tree;       /* its name, or NULL */
	char *base;       /* the base commit, or NULL */
	char *base_how;   /* how it was chosen, or NULL */
	char *note;       /* why waiting, ignored or not applied; or NULL */
	GPtrArray *parts;   /* struct series_part, by n (read back by db_series_get()) */
	GPtrArray *bases;   /* struct series_base, in order tried */
	GPtrArray *results; /* struct series_result, by n then target */
};

void series_row_free(struct series_row *row);
ZD_AUTOPTR_DEFINE(series_row, series_row_free)

/* Part @n of @s (0: its cover letter), or NULL when it has none. Borrowed. */
const struct series_part *series_row_part(const struct series_row *s, guint n);

/*
 * Inserts @row (sender, title, version, versioned, resend, total, state,
 * created, last_part); sets row->id.
 */
bool db_series_add(struct db *db, struct series_row *row, GError **error);
/*
 * Finds the series of @sender, @version (0: any, the newest) and @total
 * that shares a thread with a mail: one whose parts are, or refer to, one
 * of @ids. *@id is 0 when none does.
 */
bool db_series_find(struct db *db, const char *sender, guint version, guint total,
		    const char *const *ids, gint64 *id, GError **error);
/*
 * Sets *@id to the series that the first of @message_ids (without
 * brackets) that is a series' part belongs to; 0 when none is.
 */
bool db_series_of_message_ids(struct db *db, const char *const *message_ids, gint64 *id,
			      GError **error);
/* Records @ids (NULL-terminated) as the thread of series @id. */
bool db_series_add_ids(struct db *db, gint64 id, const char *const *ids, GError **error);
/* Adds part @n of series @id, once: *@added is false when it has part @n. */
bool db_series_add_part(struct db *db, gint64 id, guint n, gint64 mail_id,
			const char *message_id, gint64 now, bool *added, GError **error);
/* Records the commit part @n was applied as. */
bool db_series_part_commit(struct db *db, gint64 id, guint n, const char *commit,
			   GError **error);
/*
 * Writes back title, version, versioned, resend, total, state,
 * superseded_by, tree_id, base, base_how and note.
 */
bool db_series_update(struct db *db, const struct series_row *row, GError **error);
/* Returns series @id with its parts, bases and results, or NULL with BOT_ERROR_NOT_FOUND. */
struct series_row *db_series_get(struct db *db, gint64 id, GError **error);
/*
 * Returns the ids (gint64) of the series whose last patch was applied as
 * @commit (a RESEND applies as the same commits as its original), oldest
 * first; empty when none.
 */
GArray *db_series_by_commit(struct db *db, const char *commit, GError **error);
/* Returns the series in @state (all when < 0), newest first, at most @limit, each complete. */
GPtrArray *db_series_list(struct db *db, int state, unsigned limit, GError **error);
/*
 * Returns the ids (gint64) of @sender's series of a lower version than
 * @version (with @newer, of a higher one), oldest first: titled @title
 * and made within @title_window seconds of series @id, or of @id's
 * number of patches and sharing a thread mail with it.
 */
GArray *db_series_older(struct db *db, gint64 id, const char *sender, const char *title,
			guint version, bool newer, gint64 title_window, GError **error);
/* Appends a base tried to series @id. */
bool db_series_base_add(struct db *db, gint64 id, const struct series_base *base,
			GError **error);
/*
 * Copies to series @id the results on @target of another series whose
 * last patch was applied as @commit too (a RESEND: the same commits);
 * *@copied says whether there were any.
 */
bool db_series_copy_results(struct db *db, gint64 id, const char *commit, const char *target,
			    bool *copied, GError **error);
/* Records (or replaces) the result of part @r->n of series @id on @r->target. */
bool db_series_result_put(struct db *db, gint64 id, const struct series_result *r,
			  GError **error);
/*
 * As db_series_find(), whoever sent it: the series of @version (0: any,
 * the newest) and @total that shares a thread with a mail, for parts whose
 * From a list or an archive rewrote. *@id is 0 when none does.
 */
bool db_series_find_thread(struct db *db, guint version, guint total, const char *const *ids,
			   gint64 *id, GError **error);

/* Returns "sqlite 3.x.y" (caller frees). */
char *db_version_string(void);

/*
 * Stops what is waiting for the branches of tree @tree_id matching
 * @pattern (a names_pattern_check() glob), once it is blacklisted: their
 * pending tests are cancelled, their queued build jobs deleted, and the
 * queued reports of their findings moved to OUTBOX_ERROR, unsent. Sets
 * *@jobs and *@reports to how many (each may be NULL).
 */
bool db_branch_cancel(struct db *db, gint64 tree_id, const char *pattern, unsigned *jobs,
		      unsigned *reports, GError **error);

/* Mail commands (bot/store/db-commands.c). */

enum command_mail_state {
	COMMAND_MAIL_RUNNING,  /* a command still runs (rerun, test): the reply waits for it */
	COMMAND_MAIL_ANSWERED, /* the one reply is queued: reply_id */
	COMMAND_MAIL_SILENT,   /* no reply, on purpose: see reason (a loop, a limit) */
};

enum command_state {
	COMMAND_RUNNING, /* waits for job_id or series_id */
	COMMAND_DONE,
	COMMAND_REFUSED, /* see answer; nothing was changed */
};

const char *db_command_state_name(enum command_state state);

/* One command line of a command mail. */
struct command_row {
	gint64 id;
	gint64 mail_id;
	guint n;            /* 1.. in the mail */
	char *line;         /* as written, control characters made '?' */
	char *verb;         /* the command word when it is a known one, else NULL */
	enum command_state state;
	char *answer;       /* what the reply says of it */
	gint64 finding_id;  /* the finding it is about, or 0 */
	gint64 job_id;      /* a rerun: the job it waits for, or 0 */
	gint64 series_id;   /* a test: the series it waits for, or 0 */
};

void command_row_free(struct command_row *row);
ZD_AUTOPTR_DEFINE(command_row, command_row_free)

/* Records mail @mail_id from @sender as a command mail, in @state (and why, or NULL). */
bool db_command_mail_add(struct db *db, gint64 mail_id, const char *sender, gint64 received,
			 enum command_mail_state state, const char *reason, GError **error);
/* Sets command mail @mail_id's state, why (may be NULL) and reply (0: none). */
bool db_command_mail_set(struct db *db, gint64 mail_id, enum command_mail_state state,
			 const char *reason, gint64 reply_id, GError **error);
/*
 * Counts the command mails answered since @since: from @sender, or from
 * anyone when it is NULL.
 */
bool db_command_mail_count(struct db *db, const char *sender, gint64 since, gint64 *count,
			   GError **error);
/* Sets *@state of command mail @mail_id; *@found is false when it is none. */
bool db_command_mail_state(struct db *db, gint64 mail_id, enum command_mail_state *state,
			   bool *found, GError **error);

/* Inserts @row (its id is set). */
bool db_command_add(struct db *db, struct command_row *row, GError **error);
/* Stores @row's state, answer, finding_id, job_id and series_id. */
bool db_command_update(struct db *db, const struct command_row *row, GError **error);
/* Returns the commands of mail @mail_id, by n (struct command_row). */
GPtrArray *db_command_list(struct db *db, gint64 mail_id, GError **error);
/*
 * Returns the running commands waiting for job @job_id (when not 0) or
 * for series @series_id (when not 0), oldest first.
 */
GPtrArray *db_command_waiting(struct db *db, gint64 job_id, gint64 series_id, GError **error);
/*
 * Returns the running commands whose wait is over without a job ending:
 * their series is no longer waiting or testing (or is gone), or their
 * job is gone (its tree was unsubscribed).
 */
GPtrArray *db_command_stale(struct db *db, GError **error);
/* Returns every command, newest first, at most @limit (struct command_row). */
GPtrArray *db_command_recent(struct db *db, unsigned limit, GError **error);

/* A subscription asked for by mail, waiting for its confirmation. */
struct subscription_row {
	char *token_hash;   /* sha256 of the token, hex */
	char *sender;       /* who asked: only they may confirm; normalized */
	char *name;         /* the tree name it will have */
	char *url;
	char *pattern;
	enum tree_policy policy;
	char *list;         /* or NULL */
	gint64 created;
	gint64 expires;
	bool used;
};

void subscription_row_free(struct subscription_row *row);
ZD_AUTOPTR_DEFINE(subscription_row, subscription_row_free)

bool db_subscription_add(struct db *db, const struct subscription_row *row, GError **error);
/* Returns the subscription whose token hashes to @token_hash, or NULL (no error) when none. */
struct subscription_row *db_subscription_get(struct db *db, const char *token_hash,
					     GError **error);
/* Marks it used: a token is good once. */
bool db_subscription_use(struct db *db, const char *token_hash, GError **error);

/* @address (address_key()) wants no more mail in the thread whose root is @thread. */
bool db_mute_add(struct db *db, const char *address, const char *thread, gint64 now,
		 GError **error);
/* Sets *@muted: whether @address muted the thread rooted at @thread. */
bool db_muted(struct db *db, const char *address, const char *thread, bool *muted,
	      GError **error);

/*
 * Moves job @id (done) back to the queue, for a rerun: its attempts,
 * failures, result and lease cleared. Queues it when there is no such
 * job (db_job_add()); sets *@job_id either way.
 */
bool db_job_requeue(struct db *db, enum job_kind kind, gint64 tree_id, const char *commit,
		    const char *target, int priority, gint64 *job_id, GError **error);

#endif
