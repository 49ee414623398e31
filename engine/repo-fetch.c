/*
 * Refs and fetch: ls-remote, fetching a tree's branches into
 * refs/trees/<tree>/heads/<branch>, and the refs zeroday points itself.
 */
#define G_LOG_DOMAIN "engine"

#include "autoconfig.h"

#include <string.h>

#include "engine/repo-private.h"

/*
 * Creates an in-memory remote for @url, in @git or detached. The URL is
 * used as given: url.*.insteadOf must not rewrite a checked URL (and
 * libgit2 1.5 leaks on every config entry its insteadOf scan does not
 * match).
 */
static int remote_new(git_remote **out, git_repository *git, const char *url)
{
	git_remote_create_options opts = GIT_REMOTE_CREATE_OPTIONS_INIT;

	opts.repository = git;
	opts.flags = GIT_REMOTE_CREATE_SKIP_INSTEADOF | GIT_REMOTE_CREATE_SKIP_DEFAULT_FETCHSPEC;
	return git_remote_create_with_opts(out, url, &opts);
}

GPtrArray *repo_ls_remote(const char *url, const struct repo_net_policy *policy,
			  GError **error)
{
	g_autoptr(GPtrArray) heads = g_ptr_array_new_with_free_func((GDestroyNotify)repo_head_free);
	git_remote_connect_options opts = GIT_REMOTE_CONNECT_OPTIONS_INIT;
	const git_remote_head **refs = NULL;
	git_remote *remote = NULL;
	size_t n = 0;
	int rc;

	repo_net_start(policy);
	opts.follow_redirects = GIT_REMOTE_REDIRECT_NONE;
	opts.callbacks.sideband_progress = repo_net_sideband_cb;
	rc = remote_new(&remote, NULL, url);
	if (rc == 0)
		rc = git_remote_connect_ext(remote, GIT_DIRECTION_FETCH, &opts);
	if (rc == 0)
		rc = git_remote_ls(&refs, &n, remote);
	if (rc < 0) {
		repo_git_error(error, rc, url);
		git_remote_free(remote);
		repo_net_end();
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		const char *name = refs[i]->name;
		struct repo_head *head;
		g_autoptr(GError) bad = NULL;

		if (!g_str_has_prefix(name, "refs/heads/"))
			continue;
		name += strlen("refs/heads/");
		if (!repo_branch_check(name, &bad)) {
			g_message("%s: ignoring advertised branch: %s", url, bad->message);
			continue;
		}
		head = g_new0(struct repo_head, 1);
		head->branch = g_strdup(name);
		head->oid = g_strdup(git_oid_tostr_s(&refs[i]->oid));
		g_ptr_array_add(heads, head);
	}
	git_remote_disconnect(remote);
	git_remote_free(remote);
	repo_net_end();
	return g_steal_pointer(&heads);
}

static char *tree_ref(const char *tree, const char *branch)
{
	return g_strdup_printf("refs/trees/%s/heads/%s", tree, branch);
}

bool repo_fetch(struct repo *repo, const char *url, const char *tree,
		const char *const *branches, const struct repo_net_policy *policy,
		GError **error)
{
	git_fetch_options opts = GIT_FETCH_OPTIONS_INIT;
	g_autoptr(GPtrArray) specs = g_ptr_array_new_with_free_func(g_free);
	git_strarray refspecs;
	git_remote *remote = NULL;
	int rc;

	for (const char *const *b = branches; *b; b++) {
		g_autofree char *dst = tree_ref(tree, *b);

		if (!repo_branch_check(*b, error))
			return false;
		g_ptr_array_add(specs, g_strdup_printf("+refs/heads/%s:%s", *b, dst));
	}
	if (specs->len == 0)
		return true;
	refspecs.strings = (char **)specs->pdata;
	refspecs.count = specs->len;

	repo_net_start(policy);
	opts.follow_redirects = GIT_REMOTE_REDIRECT_NONE;
	opts.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_NONE;
	opts.prune = GIT_FETCH_NO_PRUNE;
	opts.update_fetchhead = 0;
	opts.callbacks.transfer_progress = repo_net_progress_cb;
	opts.callbacks.sideband_progress = repo_net_sideband_cb;
	rc = remote_new(&remote, repo->git, url);
	if (rc == 0)
		rc = git_remote_fetch(remote, &refspecs, &opts, "zeroday: fetch");
	if (rc < 0)
		repo_git_error(error, rc, url);
	git_remote_free(remote);
	repo_net_end();
	return rc >= 0;
}

bool repo_has_commit(struct repo *repo, const char *oid)
{
	git_oid id;
	git_commit *commit = NULL;

	if (!repo_oid_parse(&id, oid, NULL))
		return false;
	if (git_commit_lookup(&commit, repo->git, &id) < 0)
		return false;
	git_commit_free(commit);
	return true;
}

char *repo_tree_branch_head(struct repo *repo, const char *tree, const char *branch,
			    GError **error)
{
	g_autofree char *ref = tree_ref(tree, branch);
	git_oid id;
	int rc;

	rc = git_reference_name_to_id(&id, repo->git, ref);
	if (rc < 0) {
		repo_git_error(error, rc, ref);
		return NULL;
	}
	return g_strdup(git_oid_tostr_s(&id));
}

/* Points @ref at commit @oid (NULL: deletes it; a missing ref is fine). */
static bool ref_point(struct repo *repo, const char *ref, const char *oid, GError **error)
{
	git_reference *out = NULL;
	git_oid id;
	int rc;

	if (oid == NULL) {
		rc = git_reference_remove(repo->git, ref);
		if (rc < 0 && rc != GIT_ENOTFOUND) {
			repo_git_error(error, rc, ref);
			return false;
		}
		return true;
	}
	if (!repo_oid_parse(&id, oid, error))
		return false;
	if (!repo_has_commit(repo, oid)) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_NOT_FOUND,
			    "%s: commit %s is not in the store", ref, oid);
		return false;
	}
	rc = git_reference_create(&out, repo->git, ref, &id, 1, "zeroday: set head");
	if (rc < 0) {
		repo_git_error(error, rc, ref);
		return false;
	}
	git_reference_free(out);
	return true;
}

bool repo_set_tree_branch(struct repo *repo, const char *tree, const char *branch,
			  const char *oid, GError **error)
{
	g_autofree char *ref = tree_ref(tree, branch);

	if (!repo_branch_check(branch, error))
		return false;
	return ref_point(repo, ref, oid, error);
}

bool repo_keep(struct repo *repo, const char *name, const char *oid, GError **error)
{
	g_autofree char *ref = NULL;

	if (!repo_branch_check(name, error))
		return false;
	ref = g_strconcat("refs/zeroday/", name, NULL);
	return ref_point(repo, ref, oid, error);
}

bool repo_forget_tree(struct repo *repo, const char *tree, GError **error)
{
	g_autofree char *glob = g_strdup_printf("refs/trees/%s/*", tree);
	g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
	git_reference_iterator *it = NULL;
	const char *name;
	int rc;

	rc = git_reference_iterator_glob_new(&it, repo->git, glob);
	while (rc == 0 && (rc = git_reference_next_name(&name, it)) == 0)
		g_ptr_array_add(names, g_strdup(name));
	git_reference_iterator_free(it);
	if (rc != GIT_ITEROVER) {
		repo_git_error(error, rc, glob);
		return false;
	}
	for (guint i = 0; i < names->len; i++) {
		rc = git_reference_remove(repo->git, names->pdata[i]);
		if (rc < 0 && rc != GIT_ENOTFOUND) {
			repo_git_error(error, rc, names->pdata[i]);
			return false;
		}
	}
	return true;
}
