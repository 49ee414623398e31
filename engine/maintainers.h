/*
 * Who looks after a patch, as a kernel tree's own scripts/get_maintainer.pl
 * says from its own MAINTAINERS file: for the recipients of a report about
 * a culprit, and of a patch test's result.
 *
 * The script and MAINTAINERS are a stranger's code and data. They are
 * copied out of the store (the commit's own tree) with the patch into a
 * private directory, and the script runs there with perl inside the
 * sandbox (no network, everything but that directory invisible, the
 * directory itself read-only), with a timeout and a cap on its output. It
 * runs without git history (--nogit --nogit-fallback --nofixes) and
 * prints the maintainers and reviewers (--m --r) and the lists (--l) of
 * the files the patch touches, one a line, with their roles.
 *
 * What it prints is returned as text, not as addresses: the caller checks
 * each line (mail/address.c) and drops what is not one.
 */
#ifndef ZERODAY_MAINTAINERS_H
#define ZERODAY_MAINTAINERS_H

#include <stdbool.h>
#include <glib.h>

#include "engine/engine.h"
#include "engine/repo.h"

/* Where the script and its data live in a kernel tree. */
#define MAINTAINERS_SCRIPT "scripts/get_maintainer.pl"
#define MAINTAINERS_FILE "MAINTAINERS"

/* The defaults of struct maintainers_opts. */
#define MAINTAINERS_TIMEOUT_S 30
#define MAINTAINERS_OUTPUT_MAX (256 * 1024)
/* The largest script, MAINTAINERS file and patch copied out of the store. */
#define MAINTAINERS_INPUT_MAX (16 * 1024 * 1024)
/* At most this many lines of each kind are kept, each of at most 512 bytes. */
#define MAINTAINERS_MAX 64

struct maintainers_opts {
	/*
	 * Run inside the sandbox (run.h). Only the tests of this module run
	 * their own scripts without it; zeroday never runs a tree's script
	 * unsandboxed.
	 */
	bool sandbox;
	unsigned timeout_s;     /* 0: MAINTAINERS_TIMEOUT_S */
	guint64 output_max;     /* bytes of output read; 0: MAINTAINERS_OUTPUT_MAX */
	const char *tmp_parent; /* where the private directory is made; NULL: g_get_tmp_dir() */
};

/* What the script printed, one line an item, its role cut off. */
struct maintainers {
	char **people; /* maintainers, reviewers (any role not a list), NULL-terminated */
	char **lists;  /* mailing lists (a role naming a list), NULL-terminated */
};

/*
 * maintainers_init() gives @m two empty lists; maintainers_release() frees
 * them (both NULL after it).
 */
void maintainers_init(struct maintainers *m);
void maintainers_release(struct maintainers *m);

/*
 * Fills @out (maintainers_init() first) with the maintainers of @patch
 * (@patch_len bytes, a `git format-patch`-style patch), as the script and
 * MAINTAINERS of commit @tree_oid of @repo name them.
 *
 * Errors: ENGINE_ERROR_NOT_FOUND when @tree_oid has no script or no
 * MAINTAINERS; ENGINE_ERROR_TIMEOUT when the script ran out of time;
 * ENGINE_ERROR_LIMIT when an input is too large; ENGINE_ERROR_FAILED
 * when the script failed (its exit status and last line in the message)
 * or could not be run. On failure @out is left empty.
 */
bool maintainers_of_patch(struct maintainers *out, struct repo *repo, const char *tree_oid,
			  const char *patch, gsize patch_len, const struct maintainers_opts *opts,
			  GError **error);

/*
 * The same for commit @oid itself: its patch against its first parent
 * (repo_commit_patch()), read by its own tree's script.
 */
bool maintainers_of_commit(struct maintainers *out, struct repo *repo, const char *oid,
			   const struct maintainers_opts *opts, GError **error);

/*
 * The same, with the script and MAINTAINERS given as text: the lower
 * half of the above, for callers that have them from elsewhere.
 */
bool maintainers_run(struct maintainers *out, const char *script, gsize script_len,
		     const char *maintainers, gsize maintainers_len, const char *patch,
		     gsize patch_len, const struct maintainers_opts *opts, GError **error);

#endif
