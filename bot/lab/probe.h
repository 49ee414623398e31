/*
 * Probes: build and/or boot one commit on one target, the one call that
 * every job makes (a head, a bisection step, a posted series' patch, a
 * rerun, a mailed test) through its executor (bot/lab/executor.h).
 * Infrastructure failures are translated here, once: an infra-error
 * build (of the commit, or of the parent it is compared with) and a boot
 * that hit an infrastructure error fail the probe with
 * BOT_ERROR_TEMPORARY, naming the commit and why. They are never a
 * result: the caller's job is retried.
 */
#ifndef ZERODAY_PROBE_H
#define ZERODAY_PROBE_H

#include <stdbool.h>
#include <glib.h>

#include "bot/bot.h"
#include "bot/lab/builder.h"
#include "engine/diag.h"
#include "engine/engine.h"

enum probe_flags {
	PROBE_ALONE = (1 << 0),       /* build the commit only, compare with nothing */
	PROBE_REBUILD = (1 << 1),     /* build even when a stored build exists */
	PROBE_FRESH_BOOTS = (1 << 2), /* boot @boots times now; stored boots do not count */
};

struct probe_request {
	const char *tree;    /* tree name, or "path:" and a repository path */
	const char *commit;
	const char *target;  /* one target spec */
	const char *against; /* compare with this commit's build; NULL: the first parent's */
	unsigned boots;      /* 0: build only; else boot until this many boots are stored */
	enum probe_flags flags;
};

struct probe_result {
	struct builder_result *build; /* the build, its verdict and what is new in it */
	/*
	 * The boots' tally (struct console_tally; empty: every boot clean)
	 * and the runs (struct booter_run, seed order); both NULL when no
	 * boot was asked or the build kept no image to boot (its target does
	 * not boot, or it failed).
	 */
	GPtrArray *tally;
	GPtrArray *runs;
};

/* Frees what @r holds and zeroes it. */
void probe_result_release(struct probe_result *r);
ZD_AUTO_DEFINE(probe_result, probe_result_release)

/*
 * Builds @req->commit for @req->target, then boots it when asked and
 * bootable. Fills @out (zeroed here). False with @cause set when it could
 * not run (a bad target, an unknown commit, the store) or hit
 * infrastructure (BOT_ERROR_TEMPORARY).
 */
bool probe_run(struct probe_result *out, const struct bot *bot,
	       const struct probe_request *req, GError **cause);

/*
 * Boots the kernel of stored build @build until @boots boots are stored
 * for it (or @boots more, with PROBE_FRESH_BOOTS in @flags). Returns the
 * tally, *@runs (when not NULL) receiving the runs; NULL without @cause
 * set when @build kept no image; NULL with BOT_ERROR_TEMPORARY when a
 * boot hit an infrastructure error. The boots run the payloads of the
 * build's tree (tree add|set --payload), else [boot] payloads.
 */
GPtrArray *probe_boot(const struct bot *bot, const struct build_row *build, unsigned boots,
		      enum probe_flags flags, GPtrArray **runs, GError **cause);

/* The failure of @tally (may be NULL) with @fingerprint, or NULL. Borrowed. */
const struct console_tally *probe_tally_find(GPtrArray *tally, const char *fingerprint);

#endif
