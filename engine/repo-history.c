/*
 * History: ancestry, merge bases, reverts, who a commit names, files and
 * patches at a commit, and the revision walks.
 */
#define G_LOG_DOMAIN "engine"

#include "autoconfig.h"

#include <string.h>

#include "engine/repo-private.h"

int repo_is_ancestor(struct repo *repo, const char *ancestor, const char *descendant,
		     GError **error)
{
	git_oid a, d;
	int rc;

	if (!repo_oid_parse(&a, ancestor, error) || !repo_oid_parse(&d, descendant, error))
		return -1;
	if (git_oid_equal(&a, &d))
		return 1;
	rc = git_graph_descendant_of(repo->git, &d, &a);
	if (rc < 0) {
		repo_git_error(error, rc, descendant);
		return -1;
	}
	return rc;
}

char **repo_merge_bases(struct repo *repo, const char *a, const char *b, GError **error)
{
	git_oid x, y;
	git_oidarray bases = { 0 };
	char **out;
	int rc;

	if (!repo_oid_parse(&x, a, error) || !repo_oid_parse(&y, b, error))
		return NULL;
	rc = git_merge_bases(&bases, repo->git, &x, &y);
	if (rc == GIT_ENOTFOUND)
		return g_new0(char *, 1);
	if (rc < 0) {
		repo_git_error(error, rc, b);
		return NULL;
	}
	out = g_new0(char *, bases.count + 1);
	for (size_t i = 0; i < bases.count; i++)
		out[i] = g_strdup(git_oid_tostr_s(&bases.ids[i]));
	git_oidarray_dispose(&bases);
	return out;
}

/* What a summary must not carry to a terminal, a database or a mail. */
static bool summary_refused(gunichar c)
{
	return g_unichar_iscntrl(c) || c == 0x2028 || c == 0x2029 || /* line breaks */
	       (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069); /* bidi */
}

/*
 * A commit's summary as it enters zeroday (caller frees): valid UTF-8,
 * without control characters (a tab becomes a space), at most
 * REPO_SUMMARY_MAX bytes, cut at a character boundary and ended with "..."
 * when longer. A commit's message is the author's, and may be hostile.
 */
static char *summary_clean(const char *summary)
{
	g_autofree char *valid = g_utf8_make_valid(summary ? summary : "", -1);
	GString *s = g_string_sized_new(REPO_SUMMARY_MAX + 1);
	gsize keep = 0; /* the length at which "..." still fits */

	for (const char *p = valid; *p; p = g_utf8_next_char(p)) {
		gunichar c = g_utf8_get_char(p);
		const char *bytes = c == '\t' ? " " : p;
		gsize n = c == '\t' ? 1 : (gsize)(g_utf8_next_char(p) - p);

		if (c != '\t' && summary_refused(c))
			continue;
		if (s->len + n > REPO_SUMMARY_MAX) {
			g_string_truncate(s, keep);
			g_string_append(s, "...");
			break;
		}
		g_string_append_len(s, bytes, n);
		if (s->len + 3 <= REPO_SUMMARY_MAX)
			keep = s->len;
	}
	return g_string_free(s, FALSE);
}

int repo_revert_on(struct repo *repo, const char *head, const char *culprit, char **out,
		   GError **error)
{
	git_oid h, c, tree_id, made;
	git_commit *head_commit = NULL, *culprit_commit = NULL;
	git_index *index = NULL;
	git_tree *tree = NULL;
	git_signature *sig = NULL;
	git_revert_options opts = GIT_REVERT_OPTIONS_INIT;
	g_autofree char *message = NULL;
	g_autofree char *summary = NULL;
	int rc, result = -1;

	*out = NULL;
	if (!repo_oid_parse(&h, head, error) || !repo_oid_parse(&c, culprit, error))
		return -1;
	if ((rc = git_commit_lookup(&head_commit, repo->git, &h)) < 0 ||
	    (rc = git_commit_lookup(&culprit_commit, repo->git, &c)) < 0) {
		repo_git_error(error, rc, head_commit ? culprit : head);
		goto out;
	}
	/* A merge is reverted against its first parent, as `git revert -m 1` does. */
	opts.mainline = git_commit_parentcount(culprit_commit) > 1 ? 1 : 0;
	rc = git_revert_commit(&index, repo->git, culprit_commit, head_commit, opts.mainline,
			       &opts.merge_opts);
	if (rc < 0) {
		repo_git_error(error, rc, culprit);
		goto out;
	}
	if (git_index_has_conflicts(index)) {
		result = 0;
		goto out;
	}
	if ((rc = git_index_write_tree_to(&tree_id, index, repo->git)) < 0 ||
	    (rc = git_tree_lookup(&tree, repo->git, &tree_id)) < 0 ||
	    (rc = git_signature_new(&sig, "zeroday", "zeroday@localhost",
				    git_commit_time(head_commit), 0)) < 0) {
		repo_git_error(error, rc, culprit);
		goto out;
	}
	summary = summary_clean(git_commit_summary(culprit_commit));
	message = g_strdup_printf("Revert \"%s\"\n\nThis reverts commit %s on %s, to verify "
				  "it as a culprit.\n", summary, culprit, head);
	{
		const git_commit *parents[] = { head_commit };

		rc = git_commit_create(&made, repo->git, NULL, sig, sig, NULL, message, tree, 1,
				       parents);
	}
	if (rc < 0) {
		repo_git_error(error, rc, culprit);
		goto out;
	}
	*out = g_strdup(git_oid_tostr_s(&made));
	result = 1;
out:
	git_signature_free(sig);
	git_tree_free(tree);
	git_index_free(index);
	git_commit_free(culprit_commit);
	git_commit_free(head_commit);
	return result;
}

void repo_people_free(struct repo_people *p)
{
	if (!p)
		return;
	g_free(p->oid);
	g_free(p->summary);
	g_free(p->author_name);
	g_free(p->author_email);
	g_free(p->committer_name);
	g_free(p->committer_email);
	g_strfreev(p->signed_off_by);
	g_free(p);
}

/* The most Signed-off-by: trailers read from one commit. */
#define SIGNOFFS_MAX 64

struct repo_people *repo_people_of(struct repo *repo, const char *oid, GError **error)
{
	g_autoptr(GStrvBuilder) signoffs = g_strv_builder_new();
	git_message_trailer_array trailers = { 0 };
	const git_signature *author, *committer;
	struct repo_people *p;
	git_commit *commit;
	git_oid id;

	commit = repo_commit_get(repo->git, oid, &id, error);
	if (!commit)
		return NULL;
	author = git_commit_author(commit);
	committer = git_commit_committer(commit);
	p = g_new0(struct repo_people, 1);
	p->oid = g_strdup(git_oid_tostr_s(&id));
	p->summary = summary_clean(git_commit_summary(commit));
	p->author_name = summary_clean(author->name);
	p->author_email = summary_clean(author->email);
	p->author_time = (gint64)author->when.time;
	p->author_offset = author->when.offset;
	p->committer_name = summary_clean(committer->name);
	p->committer_email = summary_clean(committer->email);
	if (git_message_trailers(&trailers, git_commit_message(commit)) == 0) {
		for (size_t i = 0, n = 0; i < trailers.count && n < SIGNOFFS_MAX; i++) {
			g_autofree char *value = NULL;

			if (g_ascii_strcasecmp(trailers.trailers[i].key, "Signed-off-by") != 0)
				continue;
			value = summary_clean(trailers.trailers[i].value);
			g_strv_builder_add(signoffs, value);
			n++;
		}
		git_message_trailer_array_free(&trailers);
	}
	p->signed_off_by = g_strv_builder_end(signoffs);
	git_commit_free(commit);
	return p;
}

char *repo_file_at(struct repo *repo, const char *oid, const char *path, gsize max, gsize *len,
		   GError **error)
{
	git_commit *commit = NULL;
	git_tree *tree = NULL;
	git_tree_entry *entry = NULL;
	git_blob *blob = NULL;
	char *out = NULL;
	git_oid id;
	int rc;

	if (!repo_oid_parse(&id, oid, error))
		return NULL;
	if ((rc = git_commit_lookup(&commit, repo->git, &id)) < 0 ||
	    (rc = git_commit_tree(&tree, commit)) < 0) {
		repo_git_error(error, rc, oid);
		goto out;
	}
	rc = git_tree_entry_bypath(&entry, tree, path);
	if (rc == GIT_ENOTFOUND || (rc == 0 && git_tree_entry_filemode(entry) != GIT_FILEMODE_BLOB &&
				    git_tree_entry_filemode(entry) != GIT_FILEMODE_BLOB_EXECUTABLE)) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_NOT_FOUND,
			    "%s: no regular file %s", oid, path);
		goto out;
	}
	if (rc < 0 || (rc = git_blob_lookup(&blob, repo->git, git_tree_entry_id(entry))) < 0) {
		repo_git_error(error, rc, path);
		goto out;
	}
	if ((guint64)git_blob_rawsize(blob) > max) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED,
			    "%s:%s: larger than %" G_GSIZE_FORMAT " bytes", oid, path, max);
		goto out;
	}
	*len = (gsize)git_blob_rawsize(blob);
	out = g_malloc(*len + 1);
	memcpy(out, git_blob_rawcontent(blob), *len);
	out[*len] = '\0';
out:
	git_blob_free(blob);
	git_tree_entry_free(entry);
	git_tree_free(tree);
	git_commit_free(commit);
	return out;
}

/* A patch being printed, and where it stops. */
struct patch_buf {
	GString *text;
	gsize max;
	bool full;
};

static int patch_line_cb(const git_diff_delta *delta, const git_diff_hunk *hunk,
			 const git_diff_line *line, void *payload)
{
	struct patch_buf *p = payload;

	if (p->text->len + line->content_len + 1 > p->max) {
		p->full = true;
		return 1; /* stops git_diff_print() */
	}
	if (line->origin == GIT_DIFF_LINE_CONTEXT || line->origin == GIT_DIFF_LINE_ADDITION ||
	    line->origin == GIT_DIFF_LINE_DELETION)
		g_string_append_c(p->text, line->origin);
	g_string_append_len(p->text, line->content, (gssize)line->content_len);
	return 0;
}

char *repo_commit_patch(struct repo *repo, const char *oid, gsize max, gsize *len,
			GError **error)
{
	struct patch_buf p = { .text = g_string_new(NULL), .max = max };
	git_commit *commit = NULL;
	git_diff *diff = NULL;
	const git_signature *author;
	const char *message;
	char *out = NULL;
	int rc;

	commit = repo_commit_get(repo->git, oid, NULL, error);
	if (!commit)
		goto out;
	rc = repo_commit_diff(&diff, repo->git, commit);
	if (rc < 0) {
		repo_git_error(error, rc, oid);
		goto out;
	}
	author = git_commit_author(commit);
	message = git_commit_message(commit);
	g_string_append_printf(p.text, "From %s Mon Sep 17 00:00:00 2001\nFrom: %s <%s>\n"
			       "Subject: [PATCH] %s\n\n", oid, author->name, author->email,
			       git_commit_summary(commit) ? git_commit_summary(commit) : "");
	/* The message's body: what follows its first paragraph. */
	message = message ? strstr(message, "\n\n") : NULL;
	if (message)
		g_string_append(p.text, message + 2);
	g_string_append(p.text, "---\n");
	if (p.text->len > max) {
		p.full = true;
	} else {
		rc = git_diff_print(diff, GIT_DIFF_FORMAT_PATCH, patch_line_cb, &p);
		if (rc < 0 && !p.full) {
			repo_git_error(error, rc, oid);
			goto out;
		}
	}
	if (p.full) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_LIMIT,
			    "%s: the patch is larger than %" G_GSIZE_FORMAT " bytes", oid, max);
		goto out;
	}
	*len = p.text->len;
	out = g_string_free(g_steal_pointer(&p.text), FALSE);
out:
	if (p.text)
		g_string_free(p.text, TRUE);
	git_diff_free(diff);
	git_commit_free(commit);
	return out;
}

static struct repo_commit *commit_info(git_repository *git, const git_oid *id, GError **error)
{
	struct repo_commit *info;
	git_commit *commit = NULL;
	const char *message;
	const char *summary;
	int rc;

	rc = git_commit_lookup(&commit, git, id);
	if (rc < 0) {
		repo_git_error(error, rc, git_oid_tostr_s(id));
		return NULL;
	}
	message = git_commit_message(commit);
	summary = git_commit_summary(commit);
	info = g_new0(struct repo_commit, 1);
	info->oid = g_strdup(git_oid_tostr_s(id));
	info->summary = summary_clean(summary);
	info->dont_auto_build = message && strstr(message, "Dont-Auto-Build") != NULL;
	info->parents = git_commit_parentcount(commit);
	info->parent_ids = g_new0(char *, info->parents + 1);
	for (unsigned i = 0; i < info->parents; i++)
		info->parent_ids[i] = g_strdup(git_oid_tostr_s(git_commit_parent_id(commit, i)));
	git_commit_free(commit);
	return info;
}

/*
 * Pushes @head, hides @hide; hidden ids missing from the store are
 * skipped, since a forgotten or force-pushed-away head hides nothing.
 */
static git_revwalk *walk_new(git_repository *git, const git_oid *head,
			     const char *const *hide, unsigned sort, GError **error)
{
	git_revwalk *walk = NULL;
	int rc;

	rc = git_revwalk_new(&walk, git);
	if (rc == 0)
		rc = git_revwalk_sorting(walk, sort);
	if (rc == 0)
		rc = git_revwalk_push(walk, head);
	for (const char *const *h = hide; rc == 0 && h && *h; h++) {
		git_oid id;
		git_commit *c = NULL;

		if (!repo_oid_parse(&id, *h, NULL) || git_commit_lookup(&c, git, &id) < 0)
			continue;
		git_commit_free(c);
		rc = git_revwalk_hide(walk, &id);
	}
	if (rc < 0) {
		repo_git_error(error, rc, git_oid_tostr_s(head));
		git_revwalk_free(walk);
		return NULL;
	}
	return walk;
}

GPtrArray *repo_walk_new(struct repo *repo, const char *head, const char *const *hide,
			 unsigned limit, bool *truncated, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)repo_commit_free);
	g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(git_oid));
	git_revwalk *walk;
	git_oid head_id, id;
	int rc;

	*truncated = false;
	if (!repo_oid_parse(&head_id, head, error))
		return NULL;
	if (!repo_has_commit(repo, head)) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_NOT_FOUND,
			    "commit %s is not in the store", head);
		return NULL;
	}

	/*
	 * First a cheap walk in time order that stops past @limit: a branch
	 * with no known base would otherwise sort the whole history.
	 */
	walk = walk_new(repo->git, &head_id, hide, GIT_SORT_TIME, error);
	if (!walk)
		return NULL;
	while ((rc = git_revwalk_next(&id, walk)) == 0) {
		if (ids->len == limit) {
			*truncated = true;
			break;
		}
		g_array_append_val(ids, id);
	}
	git_revwalk_free(walk);
	if (rc < 0 && rc != GIT_ITEROVER) {
		repo_git_error(error, rc, head);
		return NULL;
	}

	if (!*truncated) {
		g_array_set_size(ids, 0);
		walk = walk_new(repo->git, &head_id, hide,
				GIT_SORT_TOPOLOGICAL | GIT_SORT_REVERSE, error);
		if (!walk)
			return NULL;
		while ((rc = git_revwalk_next(&id, walk)) == 0)
			g_array_append_val(ids, id);
		git_revwalk_free(walk);
		if (rc != GIT_ITEROVER) {
			repo_git_error(error, rc, head);
			return NULL;
		}
		for (guint i = 0; i < ids->len; i++) {
			struct repo_commit *c = commit_info(repo->git, &g_array_index(ids, git_oid, i), error);

			if (!c)
				return NULL;
			g_ptr_array_add(out, c);
		}
	} else {
		for (guint i = ids->len; i-- > 0;) {
			struct repo_commit *c = commit_info(repo->git, &g_array_index(ids, git_oid, i), error);

			if (!c)
				return NULL;
			g_ptr_array_add(out, c);
		}
	}
	return g_steal_pointer(&out);
}
