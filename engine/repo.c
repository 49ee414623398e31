/*
 * The shared git object store: opening it, libgit2's initialisation, and
 * the translation of libgit2's errors into GErrors, done here only. The
 * jobs on the store live beside this file behind engine/repo-private.h:
 * repo-transport.c (the socket stream), repo-fetch.c (refs and fetch),
 * repo-apply.c (git am), repo-history.c (walks and commits) and
 * repo-worktree.c (work trees).
 */
#define G_LOG_DOMAIN "engine"

#include "autoconfig.h"

#include <string.h>

#include "engine/repo-private.h"
#include "engine/names.h"

static bool initialised;

/*
 * Sets @error from libgit2's last error, with @context (a URL, a commit)
 * in front. Our own timeouts and limits keep their codes.
 */
void repo_git_error(GError **error, int code, const char *context)
{
	const git_error *e = git_error_last();
	enum engine_error ours = ENGINE_ERROR_FAILED;

	if (!repo_net_failed(&ours)) {
		if (code == GIT_ENOTFOUND)
			ours = ENGINE_ERROR_NOT_FOUND;
		else if (code == GIT_EINVALIDSPEC)
			ours = ENGINE_ERROR_INVALID;
	}
	g_set_error(error, ENGINE_ERROR, ours, "%s: %s", context,
		    e && e->message ? e->message : "unknown libgit2 error");
}

bool repo_oid_parse(git_oid *oid, const char *hex, GError **error)
{
	if (strlen(hex) != GIT_OID_HEXSZ || git_oid_fromstr(oid, hex) < 0) {
		g_autofree char *shown = g_strescape(hex, NULL);

		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID,
			    "'%s' is not a full commit id", shown);
		return false;
	}
	return true;
}

git_commit *repo_commit_get(git_repository *git, const char *hex, git_oid *id, GError **error)
{
	git_commit *commit = NULL;
	git_oid own;
	int rc;

	if (!id)
		id = &own;
	if (!repo_oid_parse(id, hex, error))
		return NULL;
	rc = git_commit_lookup(&commit, git, id);
	if (rc < 0) {
		repo_git_error(error, rc, hex);
		return NULL;
	}
	return commit;
}

char *repo_commit_first_parent(git_repository *git, const char *hex, GError **error)
{
	git_commit *commit = repo_commit_get(git, hex, NULL, error);
	char *out = NULL;

	if (!commit)
		return NULL;
	if (git_commit_parentcount(commit) > 0)
		out = g_strdup(git_oid_tostr_s(git_commit_parent_id(commit, 0)));
	git_commit_free(commit);
	return out;
}

int repo_commit_diff(git_diff **diff, git_repository *git, git_commit *commit)
{
	git_commit *parent = NULL;
	git_tree *a = NULL, *b = NULL;
	int rc = git_commit_tree(&b, commit);

	if (rc == 0 && git_commit_parentcount(commit) > 0) {
		rc = git_commit_parent(&parent, commit, 0);
		if (rc == 0)
			rc = git_commit_tree(&a, parent);
	}
	if (rc == 0)
		rc = git_diff_tree_to_tree(diff, git, a, b, NULL);
	git_tree_free(a);
	git_tree_free(b);
	git_commit_free(parent);
	return rc;
}

bool repo_global_init(const struct repo_limits *lim, GError **error)
{
	static const int levels[] = {
		GIT_CONFIG_LEVEL_SYSTEM, GIT_CONFIG_LEVEL_XDG,
		GIT_CONFIG_LEVEL_GLOBAL, GIT_CONFIG_LEVEL_PROGRAMDATA,
	};

	g_return_val_if_fail(!initialised, false);
	if (git_libgit2_init() < 0)
		goto fail;
	/*
	 * The user's and the system's git configuration must not change what
	 * zeroday fetches (url.*.insteadOf, http.proxy, ...).
	 */
	for (size_t i = 0; i < G_N_ELEMENTS(levels); i++) {
		if (git_libgit2_opts(GIT_OPT_SET_SEARCH_PATH, levels[i], "") < 0)
			goto fail;
	}
	if (repo_transport_init(lim) < 0)
		goto fail;
	if (lim->max_pack_objects &&
	    git_libgit2_opts(GIT_OPT_SET_PACK_MAX_OBJECTS, (size_t)lim->max_pack_objects) < 0)
		goto fail;
	if (git_libgit2_opts(GIT_OPT_SET_USER_AGENT, "zeroday/" PACKAGE_VERSION) < 0)
		goto fail;
	initialised = true;
	return true;
fail:
	repo_git_error(error, -1, "libgit2 initialisation");
	return false;
}

char *repo_version_string(void)
{
	int major, minor, rev;

	git_libgit2_version(&major, &minor, &rev);
	return g_strdup_printf("libgit2 %d.%d.%d", major, minor, rev);
}

void repo_head_free(struct repo_head *head)
{
	if (!head)
		return;
	g_free(head->branch);
	g_free(head->oid);
	g_free(head);
}

void repo_commit_free(struct repo_commit *commit)
{
	if (!commit)
		return;
	g_free(commit->oid);
	g_free(commit->summary);
	g_strfreev(commit->parent_ids);
	g_free(commit);
}

bool repo_branch_check(const char *name, GError **error)
{
	g_autofree char *ref = NULL;
	int valid = 0;

	g_assert(initialised);
	if (!names_branch_chars_check(name, error))
		return false;
	ref = g_strconcat("refs/heads/", name, NULL);
	if (git_reference_name_is_valid(&valid, ref) < 0 || !valid) {
		g_autofree char *shown = g_strescape(name, NULL);

		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID,
			    "refused branch name '%s': not a valid git ref name", shown);
		return false;
	}
	return true;
}

struct repo *repo_open(const char *path, GError **error)
{
	struct repo *repo = g_new0(struct repo, 1);
	int rc;

	rc = git_repository_open_ext(&repo->git, path, GIT_REPOSITORY_OPEN_NO_SEARCH |
				     GIT_REPOSITORY_OPEN_BARE, NULL);
	if (rc == GIT_ENOTFOUND)
		rc = git_repository_init(&repo->git, path, 1);
	if (rc < 0) {
		repo_git_error(error, rc, path);
		g_free(repo);
		return NULL;
	}
	repo->path = g_strdup(path);
	return repo;
}

void repo_free(struct repo *repo)
{
	if (!repo)
		return;
	git_repository_free(repo->git);
	g_free(repo->path);
	g_free(repo);
}
