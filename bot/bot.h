/*
 * bot/: the daemon and CLI. It orchestrates, persists and decides.
 */
#ifndef ZERODAY_BOT_H
#define ZERODAY_BOT_H

#include <signal.h>
#include <glib.h>

#define BOT_ERROR (bot_error_quark())

/* The failures a caller acts on; everything else is BOT_ERROR_FAILED. */
enum bot_error {
	BOT_ERROR_FAILED,
	BOT_ERROR_CONFIG,    /* a bad config file, group or key */
	BOT_ERROR_NOT_FOUND, /* no such tree, branch, ... */
	BOT_ERROR_EXISTS,    /* the name is taken */
	BOT_ERROR_BUSY,      /* another zeroday holds the lock, or took over a job's lease */
	BOT_ERROR_SCHEMA,    /* the database is newer than this zeroday */
	BOT_ERROR_USAGE,     /* wrong command-line use */
	BOT_ERROR_TEMPORARY, /* the machine, not the request: disk full, I/O error, a locked
			      * database; the same request may succeed later */
	BOT_ERROR_STOPPED,   /* zeroday stops while the job's work goes on elsewhere (a
			      * cluster job): no failure; the next start takes it over */
};

GQuark bot_error_quark(void);

struct config;
struct db;
struct repo;
struct maintainers;

/*
 * The bot: what every part of it works with, passed everywhere as git
 * passes struct repository *. Each thread has its own (a worker's store
 * and repository handles are its own); nothing here is owned by it.
 */
struct bot {
	const struct config *config;
	struct db *db;
	struct repo *repo;       /* the object store, holding every tree's commits */
	const char *git_path;    /* its git directory: where builds take commits from */
	/*
	 * get_maintainer.pl's answer for commit maintainers_of, asked before
	 * the store's write transaction (report_prefetch()); NULL: asked when
	 * a report needs it.
	 */
	const char *maintainers_of;
	const struct maintainers *maintainers;
	/*
	 * Set when zeroday is told to stop (NULL: never): a long wait, such
	 * as for a cluster's build, gives up and leaves its job to the next
	 * start.
	 */
	volatile sig_atomic_t *stop;
};

/*
 * Test hook, for the crash tests: when $ZERODAY_TEST_CRASH is @step,
 * logs it (as @who's) and kills zeroday with SIGKILL, so that a test can
 * stop it between any two steps of a journal (isync's run-tests.pl).
 * The steps are named where they are: bot/mailroom/ingest.c, bot/mailroom/outbox.c.
 */
void bot_crash_point(const char *who, const char *step);

#endif
