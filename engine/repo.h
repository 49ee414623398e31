/*
 * The shared git object store (libgit2). All trees fetch into one bare
 * repository: kernel trees share almost all their objects. Each tree's
 * branches live under refs/trees/<tree>/heads/<branch>, which keeps their
 * objects alive and gives the revision walks their starting points.
 */
#ifndef ZERODAY_REPO_H
#define ZERODAY_REPO_H

#include <stdbool.h>
#include <glib.h>

#include "engine/engine.h"

/* Limits applied to every network operation. Zero means "no limit". */
struct repo_limits {
	unsigned connect_timeout_s; /* TCP connect */
	unsigned io_timeout_s;      /* one read or write that makes no progress */
	unsigned fetch_timeout_s;   /* a whole ls-remote or fetch */
	guint64 max_pack_objects;   /* objects in one received pack */
	guint64 max_pack_bytes;     /* bytes received by one fetch */
};

/*
 * Initialises libgit2 once per process and applies @limits to all later
 * operations: timeouts, pack limits, no redirects. Thread-safe after it
 * returns. Must be called before any other repo_ function.
 */
bool repo_global_init(const struct repo_limits *limits, GError **error);

/*
 * Where a network operation may connect. NULL: anywhere (trees the
 * administrator added). A tree added by mail passes a policy with
 * @public_only: every address a host name resolves to is checked before
 * connect() (internal ones are skipped; when none is left the operation
 * fails with ENGINE_ERROR_INVALID), and the address actually connected to
 * is checked again with getpeername(), so a name that resolves to a
 * public address when the tree is added and to an internal one later (DNS
 * rebinding) is still refused. Redirects are never followed. The struct
 * and its strings are borrowed for the duration of the call.
 */
struct repo_net_policy {
	bool public_only;                  /* refuse internal addresses (netaddr_is_internal()) */
	const char *const *allowed_hosts;  /* hosts exempt from that, as typed in the URL */
};

/* A branch head as a remote advertised it. */
struct repo_head {
	char *branch; /* without "refs/heads/" */
	char *oid;    /* 40 hex digits */
};

void repo_head_free(struct repo_head *head);

/*
 * Lists the branches of the remote at @url (already checked by
 * names_url_check()), like `git ls-remote --heads`. Needs no repository,
 * so it may run in several threads at once. Branches whose names fail
 * repo_branch_check() are left out and logged.
 *
 * Connections follow @policy (NULL: anywhere).
 *
 * Returns a new array of struct repo_head, freed with g_ptr_array_unref(),
 * or NULL with ENGINE_ERROR_TIMEOUT, ENGINE_ERROR_INVALID (@policy refused
 * every address of the host) or ENGINE_ERROR_FAILED.
 */
GPtrArray *repo_ls_remote(const char *url, const struct repo_net_policy *policy,
			  GError **error);

/* The shared object store. */
struct repo;

/*
 * Opens the bare repository at @path, creating it when it does not exist.
 * Returns a handle freed with repo_free(), or NULL.
 */
struct repo *repo_open(const char *path, GError **error);
void repo_free(struct repo *repo);
ZD_AUTOPTR_DEFINE(repo, repo_free)

/*
 * Checks a branch name: names_branch_chars_check() plus git's own rules
 * (git_reference_name_is_valid on refs/heads/<name>).
 */
bool repo_branch_check(const char *name, GError **error);

/*
 * Fetches @branches (NULL-terminated, each checked) of the remote at @url
 * into refs/trees/<@tree>/heads/<branch>, force-updating them. Tags are not
 * fetched. On success, the refs name what the remote had at fetch time,
 * which may be newer than an earlier repo_ls_remote(). Connections follow
 * @policy (NULL: anywhere); a refusal is ENGINE_ERROR_INVALID.
 */
bool repo_fetch(struct repo *repo, const char *url, const char *tree,
		const char *const *branches, const struct repo_net_policy *policy,
		GError **error);

/* Returns whether @oid names a commit present in the store. */
bool repo_has_commit(struct repo *repo, const char *oid);

/*
 * Returns the commit that refs/trees/<@tree>/heads/<@branch> points at, as
 * 40 hex digits (caller frees), or NULL with ENGINE_ERROR_NOT_FOUND.
 */
char *repo_tree_branch_head(struct repo *repo, const char *tree, const char *branch,
			    GError **error);

/*
 * Points refs/trees/<@tree>/heads/<@branch> at @oid, which must be a commit
 * in the store; with @oid NULL, deletes the ref (a missing ref is fine).
 */
bool repo_set_tree_branch(struct repo *repo, const char *tree, const char *branch,
			  const char *oid, GError **error);

/* Deletes every ref under refs/trees/<@tree>/. */
bool repo_forget_tree(struct repo *repo, const char *tree, GError **error);

/*
 * Returns 1 if @ancestor is an ancestor of (or equal to) @descendant,
 * 0 if not, -1 with @error set when either is missing.
 */
int repo_is_ancestor(struct repo *repo, const char *ancestor, const char *descendant,
		     GError **error);

/*
 * Returns the merge bases of @a and @b (NULL-terminated, empty when the
 * histories are unrelated), or NULL with @error set.
 */
char **repo_merge_bases(struct repo *repo, const char *a, const char *b, GError **error);

/*
 * Reverts @culprit on top of @head (a merge against its first parent) and
 * stores the result as an unreferenced commit whose parent is @head.
 * Returns 1 and its id in *@out; 0 when the revert does not apply
 * cleanly; -1 with @error set.
 */
int repo_revert_on(struct repo *repo, const char *head, const char *culprit, char **out,
		   GError **error);

/* A mailed diff larger than this is refused unread. */
#define REPO_APPLY_MAX_BYTES (10 * 1024 * 1024)
/* A mailed diff touching more files than this is refused. */
#define REPO_APPLY_MAX_FILES 10000

/* One mailed patch, as mail/patchmail.c parsed it. All strings are borrowed. */
struct repo_patch {
	const char *diff;        /* the diff text exactly as mailed (git or plain unified) */
	const char *subject;     /* the commit's first line (the subject without [PATCH..] tags) */
	const char *message;     /* the rest of the commit message (may be "") */
	const char *author_name; /* may be "": the address stands in, as with git am */
	const char *author_email;
	gint64 author_time;      /* unix seconds; 0: @now */
	int author_offset;       /* minutes east of UTC */
};

/* Why one patch did not apply. */
enum repo_apply_failure {
	REPO_APPLY_OK,
	REPO_APPLY_CONFLICT, /* does not apply */
	REPO_APPLY_REFUSED,  /* hostile: see why */
	REPO_APPLY_INVALID,  /* not a readable diff */
};

/*
 * Applies @patches in order on commit @base, one commit per patch (author
 * from the patch, committer @committer_name <@committer_email> at @now,
 * message "subject\n\nmessage"), like `git am` does: hunks must match
 * their context exactly, at an offset if need be (git apply's search,
 * nearest position first; hunks at line 1 or without trailing context are
 * anchored to the start or end of the file; no fuzz). Stops at the first
 * patch that does not apply.
 *
 * Every delta is checked before anything is applied: absolute paths, "..",
 * ".git" in any spelling git's verify_path refuses (NTFS and HFS included),
 * control characters or backslashes in paths, symbolic links, submodules,
 * modes other than 100644 and 100755, binary patches, and diffs over
 * REPO_APPLY_MAX_BYTES or REPO_APPLY_MAX_FILES are REPO_APPLY_REFUSED.
 *
 * Returns the number applied, with their commit ids in *@commits
 * (NULL-terminated, caller frees with g_strfreev()), and the first
 * failure's kind and one-line reason in *@failure / *@why (caller frees;
 * REPO_APPLY_OK and NULL when all applied). The commits are not referenced:
 * see repo_keep(). Returns -1 with @error set (and *@commits, *@why NULL)
 * when @base is missing or the store fails.
 */
int repo_apply_series(struct repo *repo, const char *base, const struct repo_patch *patches,
		      size_t n, const char *committer_name, const char *committer_email,
		      gint64 now, char ***commits, enum repo_apply_failure *failure, char **why,
		      GError **error);

/*
 * Points refs/zeroday/@name at @oid (a commit in the store), to keep it
 * from gc; @name is checked like a branch name ("series/12/3"). @oid NULL
 * deletes the ref (a missing ref is fine).
 */
bool repo_keep(struct repo *repo, const char *name, const char *oid, GError **error);

/* The longest summary of a struct repo_commit, in bytes, "..." included. */
#define REPO_SUMMARY_MAX 200

/* A commit found by repo_walk_new(). */
struct repo_commit {
	char *oid;            /* 40 hex digits */
	/*
	 * The first line of the message: valid UTF-8 without control
	 * characters (a tab becomes a space), cut at a character boundary
	 * and ended with "..." when longer than REPO_SUMMARY_MAX bytes.
	 */
	char *summary;
	bool dont_auto_build; /* the message contains "Dont-Auto-Build" */
	unsigned parents;
	char **parent_ids;    /* NULL-terminated, 40 hex digits each */
};

void repo_commit_free(struct repo_commit *commit);

/* Who wrote, committed and signed off a commit: for a report's recipients. */
struct repo_people {
	char *oid;
	char *summary;         /* cleaned as struct repo_commit's */
	char *author_name;     /* names: cleaned likewise; may be empty */
	char *author_email;    /* as git has it; the caller checks it is an address */
	gint64 author_time;    /* unix seconds */
	int author_offset;     /* minutes east of UTC */
	char *committer_name;
	char *committer_email;
	/* The Signed-off-by: trailers' values ("Name <addr>"), cleaned, in order. */
	char **signed_off_by;  /* NULL-terminated */
};

void repo_people_free(struct repo_people *p);
ZD_AUTOPTR_DEFINE(repo_people, repo_people_free)

/* Returns the people of commit @oid, or NULL with @error set. */
struct repo_people *repo_people_of(struct repo *repo, const char *oid, GError **error);

/*
 * Returns the file at @path in commit @oid's tree, of at most @max bytes,
 * with a NUL after it, and *@len its length (caller frees). Not a regular
 * file there (missing, a link, a submodule) or larger: NULL with
 * ENGINE_ERROR_NOT_FOUND or ENGINE_ERROR_FAILED.
 */
char *repo_file_at(struct repo *repo, const char *oid, const char *path, gsize max, gsize *len,
		   GError **error);

/*
 * Returns commit @oid as `git format-patch` would mail it, for tools that
 * read patches (get_maintainer.pl): From, Subject and the message, then
 * the diff against its first parent (against nothing for a root commit),
 * NUL-terminated, *@len its length (caller frees). Larger than @max
 * bytes: NULL with ENGINE_ERROR_LIMIT.
 */
char *repo_commit_patch(struct repo *repo, const char *oid, gsize max, gsize *len,
			GError **error);

/*
 * Lists the commits reachable from @head and from none of @hide (a
 * NULL-terminated list of commit ids; ids missing from the store are
 * ignored), oldest first in topological order, like
 * `git rev-list --topo-order --reverse head ^hide...`.
 *
 * At most @limit commits are listed; when more exist, *@truncated is set
 * and the array holds the @limit newest of them.
 *
 * Returns a new array of struct repo_commit, or NULL with @error set.
 */
GPtrArray *repo_walk_new(struct repo *repo, const char *head, const char *const *hide,
			 unsigned limit, bool *truncated, GError **error);

/*
 * A build worktree: a non-bare repository whose objects come from another
 * repository (through objects/info/alternates), checked out by the index so
 * that files a checkout does not change keep their mtimes and make rebuilds
 * only what changed.
 */
struct worktree;

/*
 * Opens the worktree at @dir, creating it when missing, borrowing objects
 * from the git directory @objects_from (the shared store, or any local
 * repository's .git). Returns NULL with @error set on failure.
 */
struct worktree *repo_worktree_open(const char *dir, const char *objects_from, GError **error);
void repo_worktree_free(struct worktree *wt);
ZD_AUTOPTR_DEFINE(worktree, repo_worktree_free)

/*
 * Resolves @rev in the object source (a commit id, a ref such as
 * "refs/trees/net/heads/master", or a revision such as "HEAD~2"; no ranges)
 * to a full commit id (caller frees).
 */
char *repo_worktree_resolve(struct worktree *wt, const char *rev, GError **error);

/* Returns the first parent of @oid, or NULL (no error) for a root commit. */
char *repo_worktree_parent(struct worktree *wt, const char *oid, GError **error);

enum repo_checkout_flags {
	/*
	 * Nothing but checkouts writes in the work tree (its builds see it
	 * read-only): only the paths where its index and @oid differ are
	 * looked at and written, not the whole tree's files. After a
	 * checkout cut short, or one without this flag (a marker in the work
	 * tree's git directory says so), the whole tree is all the same.
	 */
	REPO_CHECKOUT_ONLY_CHANGES = (1 << 0),
};

/*
 * Makes the work tree exactly @oid: changed files rewritten, removed ones
 * deleted, untracked ones removed, unchanged ones untouched (with
 * REPO_CHECKOUT_ONLY_CHANGES, untracked ones only among the changed
 * paths). With @changed non-NULL, *@changed receives the paths that
 * differed (NULL-terminated, caller frees), or NULL when the work tree
 * was empty.
 */
bool repo_worktree_checkout(struct worktree *wt, const char *oid, enum repo_checkout_flags flags,
			    char ***changed, GError **error);

/*
 * Returns the paths that differ between commits @a and @b (NULL-terminated,
 * caller frees), or NULL with @error set (for example, @a is gone).
 */
char **repo_worktree_diff(struct worktree *wt, const char *a, const char *b, GError **error);

/* Returns the paths @oid changes against its first parent (NULL-terminated, caller frees). */
char **repo_worktree_changed_files(struct worktree *wt, const char *oid, GError **error);

/*
 * Returns the first parent of commit @oid in the store (caller frees), or
 * NULL: without @error set for a root commit, with it when @oid is no
 * commit of the store.
 */
char *repo_first_parent(struct repo *repo, const char *oid, GError **error);

/*
 * Copies commit @oid, and what it reaches that @dest lacks, into the bare
 * repository @dest (created when missing), and points refs/spool/<oid>
 * there at it: how a cluster node, which never sees the store, gets a
 * commit to build. One pack a call; what earlier exports put in @dest is
 * not sent again. Exports to one @dest take turns (a lock beside it,
 * @dest.lock), across threads and processes.
 */
bool repo_export(struct repo *repo, const char *oid, const char *dest, GError **error);

/* Returns the library versions, e.g. "libgit2 1.5.1" (caller frees). */
char *repo_version_string(void);

#endif
