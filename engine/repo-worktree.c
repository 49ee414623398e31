/*
 * Work trees: a checkout of one commit in its own directory, with objects
 * and revisions read from another repository.
 */
#define G_LOG_DOMAIN "engine"

#include "autoconfig.h"

#include <string.h>
#include <unistd.h>

#include "engine/repo-private.h"

struct worktree {
	git_repository *git;    /* the work tree's own repository */
	git_repository *source; /* where objects and revisions come from */
	char *dir;
};

void repo_worktree_free(struct worktree *wt)
{
	if (!wt)
		return;
	git_repository_free(wt->git);
	git_repository_free(wt->source);
	g_free(wt->dir);
	g_free(wt);
}

struct worktree *repo_worktree_open(const char *dir, const char *objects_from, GError **error)
{
	zd_autoptr(worktree) wt = g_new0(struct worktree, 1);
	g_autofree char *source = NULL;
	g_autofree char *alternates = NULL;
	g_autofree char *objects = NULL;
	int rc;

	/* The object source may be a bare store or a work repository. */
	rc = git_repository_open_ext(&wt->source, objects_from, GIT_REPOSITORY_OPEN_NO_SEARCH,
				     NULL);
	if (rc < 0) {
		repo_git_error(error, rc, objects_from);
		return NULL;
	}
	objects = g_build_filename(git_repository_path(wt->source), "objects", NULL);

	rc = git_repository_open_ext(&wt->git, dir, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL);
	if (rc == GIT_ENOTFOUND) {
		git_repository_init_options opts = GIT_REPOSITORY_INIT_OPTIONS_INIT;

		opts.flags = GIT_REPOSITORY_INIT_MKPATH | GIT_REPOSITORY_INIT_NO_REINIT;
		rc = git_repository_init_ext(&wt->git, dir, &opts);
	}
	if (rc < 0) {
		repo_git_error(error, rc, dir);
		return NULL;
	}
	alternates = g_build_filename(git_repository_path(wt->git), "objects", "info",
				      "alternates", NULL);
	source = g_strconcat(objects, "\n", NULL);
	{
		g_autofree char *current = NULL;

		if (!g_file_get_contents(alternates, &current, NULL, NULL) ||
		    strcmp(current, source) != 0) {
			g_autoptr(GError) local = NULL;
			g_autofree char *info = g_path_get_dirname(alternates);

			g_mkdir_with_parents(info, 0755);
			if (!g_file_set_contents(alternates, source, -1, &local)) {
				g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s",
					    local->message);
				return NULL;
			}
			/* The odb read the old alternates at open: reopen. */
			git_repository_free(wt->git);
			wt->git = NULL;
			rc = git_repository_open_ext(&wt->git, dir, GIT_REPOSITORY_OPEN_NO_SEARCH,
						     NULL);
			if (rc < 0) {
				repo_git_error(error, rc, dir);
				return NULL;
			}
		}
	}
	wt->dir = g_strdup(dir);
	return g_steal_pointer(&wt);
}

char *repo_worktree_resolve(struct worktree *wt, const char *rev, GError **error)
{
	git_object *obj = NULL;
	git_oid id;
	int rc;

	if (strlen(rev) == GIT_OID_HEXSZ && git_oid_fromstr(&id, rev) == 0)
		rc = git_object_lookup(&obj, wt->source, &id, GIT_OBJECT_COMMIT);
	else if (rev[0] == '-' || strstr(rev, "..") || strchr(rev, ':'))
		rc = GIT_EINVALIDSPEC;
	else
		rc = git_revparse_single(&obj, wt->source, rev);
	if (rc == 0) {
		git_object *commit = NULL;

		rc = git_object_peel(&commit, obj, GIT_OBJECT_COMMIT);
		git_object_free(obj);
		obj = commit;
	}
	if (rc < 0) {
		g_autofree char *shown = g_strescape(rev, NULL);

		if (rc == GIT_EINVALIDSPEC && !git_error_last())
			git_error_set_str(GIT_ERROR_INVALID, "not a revision");
		repo_git_error(error, rc, shown);
		return NULL;
	}
	{
		char *out = g_strdup(git_oid_tostr_s(git_object_id(obj)));

		git_object_free(obj);
		return out;
	}
}

static git_commit *worktree_commit(struct worktree *wt, const char *oid, GError **error)
{
	return repo_commit_get(wt->git, oid, NULL, error);
}

char *repo_worktree_parent(struct worktree *wt, const char *oid, GError **error)
{
	return repo_commit_first_parent(wt->git, oid, error);
}

/* The paths where @index and @commit's tree differ, or NULL for an empty index. */
static char **index_changes(git_repository *git, git_index *index, git_commit *commit, int *rc)
{
	g_autoptr(GStrvBuilder) paths = NULL;
	git_tree *tree = NULL;
	git_diff *diff = NULL;

	if (git_index_entrycount(index) == 0)
		return NULL;
	*rc = git_commit_tree(&tree, commit);
	if (*rc == 0)
		*rc = git_diff_tree_to_index(&diff, git, tree, index, NULL);
	if (*rc == 0) {
		paths = g_strv_builder_new();
		for (size_t i = 0; i < git_diff_num_deltas(diff); i++) {
			const git_diff_delta *d = git_diff_get_delta(diff, i);

			g_strv_builder_add(paths, d->old_file.path);
			if (strcmp(d->old_file.path, d->new_file.path) != 0)
				g_strv_builder_add(paths, d->new_file.path);
		}
	}
	git_diff_free(diff);
	git_tree_free(tree);
	return paths ? g_strv_builder_end(paths) : NULL;
}

/*
 * In the work tree's git directory while it may differ from its index: a
 * checkout under way (or cut short), or one whose caller lets others
 * write in the tree.
 */
#define CHECKOUT_MARKER "zeroday-checkout"

bool repo_worktree_checkout(struct worktree *wt, const char *oid, enum repo_checkout_flags flags,
			    char ***changed, GError **error)
{
	git_checkout_options opts = GIT_CHECKOUT_OPTIONS_INIT;
	git_commit *commit = worktree_commit(wt, oid, error);
	g_autofree char *marker = g_build_filename(git_repository_path(wt->git), CHECKOUT_MARKER,
						   NULL);
	git_index *index = NULL;
	char **paths = NULL;
	bool only_changes = false;
	int rc;

	if (changed)
		*changed = NULL;
	if (!commit)
		return false;
	opts.checkout_strategy = GIT_CHECKOUT_FORCE | GIT_CHECKOUT_REMOVE_UNTRACKED |
				 GIT_CHECKOUT_REMOVE_IGNORED;
	/*
	 * Compare with the index, not with HEAD: the index knows what is on
	 * disk, and HEAD's commit may be gone (force-pushed away, or from an
	 * object source that changed).
	 */
	rc = git_repository_index(&index, wt->git);
	if (rc == 0 && (flags & REPO_CHECKOUT_ONLY_CHANGES) &&
	    !g_file_test(marker, G_FILE_TEST_EXISTS) && git_index_entrycount(index) > 0)
		only_changes = true;
	if (rc == 0 && (changed || only_changes))
		paths = index_changes(wt->git, index, commit, &rc);
	if (rc == 0 && !g_file_set_contents(marker, oid, -1, NULL)) {
		git_error_set_str(GIT_ERROR_OS, "cannot mark the checkout as under way");
		rc = -1;
	}
	if (rc == 0 && only_changes) {
		/* Exact paths, so that only they are looked at on disk; none: nothing to do. */
		opts.paths.strings = paths;
		opts.paths.count = paths ? g_strv_length(paths) : 0;
		opts.checkout_strategy |= GIT_CHECKOUT_DISABLE_PATHSPEC_MATCH;
	}
	if (rc == 0 && (!only_changes || opts.paths.count > 0)) {
		opts.baseline_index = index;
		rc = git_checkout_tree(wt->git, (git_object *)commit, &opts);
	}
	git_index_free(index);
	if (rc == 0)
		rc = git_repository_set_head_detached(wt->git, git_commit_id(commit));
	git_commit_free(commit);
	if (rc < 0) {
		g_strfreev(paths);
		repo_git_error(error, rc, oid);
		return false;
	}
	/*
	 * Complete: the next may look at the changes only, unless this caller
	 * lets others write in the work tree (the marker stays).
	 */
	if (flags & REPO_CHECKOUT_ONLY_CHANGES)
		unlink(marker);
	if (changed)
		*changed = paths;
	else
		g_strfreev(paths);
	return true;
}

char **repo_worktree_diff(struct worktree *wt, const char *a, const char *b, GError **error)
{
	g_autoptr(GStrvBuilder) files = g_strv_builder_new();
	git_commit *ca = worktree_commit(wt, a, error);
	git_commit *cb = ca ? worktree_commit(wt, b, error) : NULL;
	git_tree *ta = NULL, *tb = NULL;
	git_diff *diff = NULL;
	int rc;

	if (!ca || !cb) {
		git_commit_free(ca);
		return NULL;
	}
	rc = git_commit_tree(&ta, ca);
	if (rc == 0)
		rc = git_commit_tree(&tb, cb);
	if (rc == 0)
		rc = git_diff_tree_to_tree(&diff, wt->git, ta, tb, NULL);
	for (size_t i = 0; rc == 0 && i < git_diff_num_deltas(diff); i++) {
		const git_diff_delta *d = git_diff_get_delta(diff, i);

		g_strv_builder_add(files, d->old_file.path);
		if (strcmp(d->old_file.path, d->new_file.path) != 0)
			g_strv_builder_add(files, d->new_file.path);
	}
	git_diff_free(diff);
	git_tree_free(ta);
	git_tree_free(tb);
	git_commit_free(ca);
	git_commit_free(cb);
	if (rc < 0) {
		repo_git_error(error, rc, b);
		return NULL;
	}
	return g_strv_builder_end(files);
}

char **repo_worktree_changed_files(struct worktree *wt, const char *oid, GError **error)
{
	g_autoptr(GStrvBuilder) files = g_strv_builder_new();
	git_commit *commit = worktree_commit(wt, oid, error);
	git_diff *diff = NULL;
	int rc;

	if (!commit)
		return NULL;
	rc = repo_commit_diff(&diff, wt->git, commit);
	for (size_t i = 0; rc == 0 && i < git_diff_num_deltas(diff); i++) {
		const git_diff_delta *d = git_diff_get_delta(diff, i);

		if (d->status != GIT_DELTA_DELETED)
			g_strv_builder_add(files, d->new_file.path);
	}
	git_diff_free(diff);
	git_commit_free(commit);
	if (rc < 0) {
		repo_git_error(error, rc, oid);
		return NULL;
	}
	return g_strv_builder_end(files);
}
