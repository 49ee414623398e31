/*
 * What the files of the object store share (repo.c, repo-transport.c,
 * repo-fetch.c, repo-apply.c, repo-history.c, repo-worktree.c), and the
 * only place that includes libgit2's headers. Nothing outside engine/repo*.c
 * includes this file; everyone else uses engine/repo.h.
 */
#ifndef ZERODAY_REPO_PRIVATE_H
#define ZERODAY_REPO_PRIVATE_H

#include <stdbool.h>
#include <glib.h>

#include <git2.h>
#include <git2/sys/stream.h>

#include "engine/engine.h"
#include "engine/repo.h"

/* The store: a bare repository, owned; @path is owned too. */
struct repo {
	git_repository *git;
	char *path;
};

/*
 * repo.c. Sets @error from libgit2's last error, with @context (a URL, a
 * commit) in front: the one translation of libgit2's codes. Our own
 * timeouts, limits and refusals (repo_net_failed()) keep their codes.
 */
void repo_git_error(GError **error, int code, const char *context);

/*
 * repo.c. Parses the full hexadecimal commit id @hex into @oid; false with
 * ENGINE_ERROR_INVALID when it is not one.
 */
bool repo_oid_parse(git_oid *oid, const char *hex, GError **error);

/*
 * repo.c. The commit @hex names in @git (the caller frees it with
 * git_commit_free()); NULL with @error set when @hex is no full commit id
 * or no commit of @git. *@id, when not NULL, is set to its id.
 */
git_commit *repo_commit_get(git_repository *git, const char *hex, git_oid *id, GError **error);

/*
 * repo.c. The first parent of commit @hex in @git (caller frees), or
 * NULL: without @error set for a root commit, with it when @hex is no
 * commit of @git.
 */
char *repo_commit_first_parent(git_repository *git, const char *hex, GError **error);

/*
 * repo.c. Sets *@diff (the caller frees it) to what @commit changed
 * against its first parent, or against nothing for a root; libgit2's code.
 */
int repo_commit_diff(git_diff **diff, git_repository *git, git_commit *commit);

/*
 * repo-transport.c. Keeps @lim for the stream and the transfer callbacks,
 * and registers the socket stream with libgit2. Called once, from
 * repo_global_init(); returns libgit2's code.
 */
int repo_transport_init(const struct repo_limits *lim);

/*
 * repo-transport.c. Starts this thread's network operation: its deadline
 * (fetch-timeout from now) and its @policy, borrowed until repo_net_end()
 * (NULL: anywhere).
 */
void repo_net_start(const struct repo_net_policy *policy);

/* repo-transport.c. Ends the operation: forgets the borrowed policy. */
void repo_net_end(void);

/*
 * repo-transport.c. True when this thread's network operation failed on
 * our own timeout, limit or refusal, with its code in @code; else false
 * and @code untouched.
 */
bool repo_net_failed(enum engine_error *code);

/*
 * repo-transport.c. libgit2's transfer_progress callback: aborts a
 * transfer that passes the pack limits or the deadline.
 */
int repo_net_progress_cb(const git_indexer_progress *stats, void *payload);

/*
 * repo-transport.c. libgit2's sideband_progress callback: aborts an
 * operation past its deadline.
 */
int repo_net_sideband_cb(const char *str, int len, void *payload);

#endif
