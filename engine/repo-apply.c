/*
 * The git am engine: a series of posted patches applied onto a base
 * commit in memory, without a work tree.
 */
#define G_LOG_DOMAIN "engine"

#include "autoconfig.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "engine/repo-private.h"

/*
 * Posted patches, applied as `git am` does, without a work tree.
 *
 * libgit2 1.5 parses the diff (git_diff_from_buffer), but its applier
 * (git_apply_to_tree, git_apply) tries each hunk only at the line its
 * header names (apply.c find_hunk_linenum): no offsets, where git am finds
 * a hunk a few lines away. So the hunks are applied here with git apply's
 * search (apply.c find_pos, match_fragment), onto an in-memory index
 * holding the tree so far. The patch is hostile: every delta is checked
 * before anything is applied.
 */

/* Hunk positions tried in one patch before it is refused (a CPU bound). */
#define APPLY_SEARCH_BUDGET 200000000

/* One line of a file or of a hunk, borrowed from a blob or a parsed diff. */
struct apply_line {
	const char *p;
	gsize n;
};

/* A series being applied. */
struct apply_state {
	git_repository *git;
	git_index *index;                 /* the tree so far */
	enum repo_apply_failure failure;  /* why the current patch did not apply */
	char *why;
	guint64 budget;                   /* hunk positions left to try */
};

/* Records why the current patch did not apply; returns 0. */
static int apply_fail(struct apply_state *st, enum repo_apply_failure kind, const char *fmt, ...)
	G_GNUC_PRINTF(3, 4);
static int apply_fail(struct apply_state *st, enum repo_apply_failure kind, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	st->failure = kind;
	g_free(st->why);
	st->why = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	return 0;
}

/* A hostile path as a reason shows it: quoted, escaped to printable ASCII, bounded. */
static char *path_shown(const char *path)
{
	g_autofree char *e = g_strescape(path ? path : "", NULL);

	if (strlen(e) > 200)
		return g_strdup_printf("'%.200s...'", e);
	return g_strdup_printf("'%s'", e);
}

/* The code points HFS+ ignores in names (git's utf8.c next_hfs_char). */
static bool hfs_ignorable(gunichar c)
{
	return (c >= 0x200c && c <= 0x200f) || (c >= 0x202a && c <= 0x202e) ||
	       (c >= 0x206a && c <= 0x206f) || c == 0xfeff;
}

/*
 * Whether the path component @c (@len bytes) means ".git" to some file
 * system: ".git" in any case; followed by dots or spaces, or by an NTFS
 * stream (":..."); its 8.3 short name "git~1"; with code points HFS+
 * ignores anywhere inside (git's is_ntfs_dotgit and is_hfs_dotgit).
 */
static bool component_is_dotgit(const char *c, gsize len)
{
	g_autoptr(GString) s = g_string_sized_new(len);
	const char *rest;

	for (gsize i = 0; i < len;) {
		gunichar u = g_utf8_get_char_validated(c + i, (gssize)(len - i));
		gsize n;

		if (u == (gunichar)-1 || u == (gunichar)-2) {
			g_string_append_c(s, c[i++]);
			continue;
		}
		n = (gsize)(g_utf8_next_char(c + i) - (c + i));
		if (!hfs_ignorable(u))
			g_string_append_len(s, c + i, (gssize)n);
		i += n;
	}
	for (gsize i = 0; i < s->len; i++)
		s->str[i] = g_ascii_tolower(s->str[i]);
	if (g_str_has_prefix(s->str, ".git"))
		rest = s->str + 4;
	else if (g_str_has_prefix(s->str, "git~1"))
		rest = s->str + 5;
	else
		return false;
	for (; *rest && *rest != ':'; rest++) {
		if (*rest != '.' && *rest != ' ')
			return false;
	}
	return true;
}

/* Why @path must not be written to a tree, or NULL (git's verify_path, stricter). */
static const char *path_refusal(const char *path)
{
	const char *c, *end;

	if (!path || !*path)
		return "empty path";
	if (path[0] == '/')
		return "absolute path";
	for (const char *p = path; *p; p++) {
		if ((guchar)*p < 0x20 || *p == 0x7f)
			return "control character in path";
		if (*p == '\\')
			return "backslash in path";
	}
	for (c = path;; c = end + 1) {
		gsize n;

		end = strchrnul(c, '/');
		n = (gsize)(end - c);
		if (n == 0)
			return "empty path component";
		if (n == 1 && c[0] == '.')
			return "'.' component";
		if (n == 2 && c[0] == '.' && c[1] == '.')
			return "'..' component";
		if (component_is_dotgit(c, n))
			return "'.git' component";
		if (!*end)
			return NULL;
	}
}

/* Refuses a mode other than a regular file's (0: the patch does not say). */
static bool mode_refused(struct apply_state *st, const char *shown, unsigned mode)
{
	switch (mode) {
	case 0:
	case GIT_FILEMODE_BLOB:
	case GIT_FILEMODE_BLOB_EXECUTABLE:
		return false;
	case GIT_FILEMODE_LINK:
		apply_fail(st, REPO_APPLY_REFUSED, "%s: symbolic link", shown);
		return true;
	case GIT_FILEMODE_COMMIT:
		apply_fail(st, REPO_APPLY_REFUSED, "%s: submodule", shown);
		return true;
	default:
		apply_fail(st, REPO_APPLY_REFUSED, "%s: file mode %06o", shown, mode);
		return true;
	}
}

/* Returns 1 when the delta of @patch may be applied, else 0 with the reason. */
static int delta_check(struct apply_state *st, git_patch *patch)
{
	const git_diff_delta *d = git_patch_get_delta(patch);
	const char *paths[] = { d->old_file.path, d->new_file.path };
	const unsigned modes[] = { d->old_file.mode, d->new_file.mode };
	g_autofree char *shown = path_shown(d->new_file.path ? d->new_file.path : d->old_file.path);

	switch (d->status) {
	case GIT_DELTA_ADDED:
	case GIT_DELTA_DELETED:
	case GIT_DELTA_MODIFIED:
	case GIT_DELTA_RENAMED:
	case GIT_DELTA_COPIED:
		break;
	default:
		return apply_fail(st, REPO_APPLY_INVALID, "%s: unexpected change", shown);
	}
	for (size_t i = 0; i < G_N_ELEMENTS(paths); i++) {
		const char *why = path_refusal(paths[i]);

		if (why) {
			g_autofree char *p = path_shown(paths[i]);

			return apply_fail(st, REPO_APPLY_REFUSED, "%s: %s", p, why);
		}
	}
	for (size_t i = 0; i < G_N_ELEMENTS(modes); i++) {
		g_autofree char *p = path_shown(paths[i]);

		if (mode_refused(st, p, modes[i]))
			return 0;
	}
	if (d->flags & GIT_DIFF_FLAG_BINARY)
		return apply_fail(st, REPO_APPLY_REFUSED, "%s: binary patch", shown);
	return 1;
}

/* Drops the newline ending the last line of @lines ("\ No newline at end of file"). */
static void drop_newline(GArray *lines)
{
	struct apply_line *l;

	if (lines->len == 0)
		return;
	l = &g_array_index(lines, struct apply_line, lines->len - 1);
	if (l->n && l->p[l->n - 1] == '\n')
		l->n--;
}

static bool fragment_matches(GArray *img, GArray *pre, gsize at)
{
	if (at + pre->len > img->len)
		return false;
	for (gsize i = 0; i < pre->len; i++) {
		const struct apply_line *a = &g_array_index(img, struct apply_line, at + i);
		const struct apply_line *b = &g_array_index(pre, struct apply_line, i);

		if (a->n != b->n || memcmp(a->p, b->p, a->n) != 0)
			return false;
	}
	return true;
}

/*
 * Where @pre occurs in @img: at @line, else the nearest position after,
 * then before, and so on (git apply's find_pos). Anchored hunks match only
 * at the start or the end. Returns the position, -1 when nowhere, -2 when
 * the search budget ran out.
 */
static gssize find_pos(struct apply_state *st, GArray *img, GArray *pre, gsize line,
		       bool match_beginning, bool match_end)
{
	if (pre->len > img->len)
		return -1;
	if (match_beginning || match_end) {
		gsize at = match_beginning ? 0 : img->len - pre->len;

		if (match_end && at + pre->len != img->len)
			return -1;
		return fragment_matches(img, pre, at) ? (gssize)at : -1;
	}
	if (line > img->len)
		line = img->len;
	for (gsize d = 0;; d++) {
		bool tried = false;

		if (line + d <= img->len) {
			tried = true;
			if (st->budget-- == 0)
				return -2;
			if (fragment_matches(img, pre, line + d))
				return (gssize)(line + d);
		}
		if (d > 0 && d <= line) {
			tried = true;
			if (st->budget-- == 0)
				return -2;
			if (fragment_matches(img, pre, line - d))
				return (gssize)(line - d);
		}
		if (!tried)
			return -1;
	}
}

/*
 * Applies the hunks of @patch to @src (@len bytes) into @out. Returns 1,
 * or 0 with the reason.
 */
static int hunks_apply(struct apply_state *st, git_patch *patch, const char *shown,
		       const char *src, gsize len, GString *out)
{
	g_autoptr(GArray) img = g_array_new(FALSE, FALSE, sizeof(struct apply_line));
	size_t nhunks = git_patch_num_hunks(patch);

	for (gsize i = 0; i < len;) {
		const char *nl = memchr(src + i, '\n', len - i);
		struct apply_line l = { src + i, nl ? (gsize)(nl - (src + i)) + 1 : len - i };

		g_array_append_val(img, l);
		i += l.n;
	}
	for (size_t h = 0; h < nhunks; h++) {
		g_autoptr(GArray) pre = g_array_new(FALSE, FALSE, sizeof(struct apply_line));
		g_autoptr(GArray) post = g_array_new(FALSE, FALSE, sizeof(struct apply_line));
		const git_diff_hunk *hunk = NULL;
		size_t nlines = 0, trailing = 0;
		bool match_beginning, match_end;
		gssize at;

		if (git_patch_get_hunk(&hunk, &nlines, patch, h) < 0)
			return apply_fail(st, REPO_APPLY_INVALID, "%s: unreadable hunk", shown);
		for (size_t i = 0; i < nlines; i++) {
			const git_diff_line *line = NULL;
			struct apply_line l;

			if (git_patch_get_line_in_hunk(&line, patch, h, i) < 0)
				return apply_fail(st, REPO_APPLY_INVALID, "%s: unreadable hunk",
						  shown);
			l.p = line->content;
			l.n = line->content_len;
			switch (line->origin) {
			case GIT_DIFF_LINE_CONTEXT:
				g_array_append_val(pre, l);
				g_array_append_val(post, l);
				trailing++;
				break;
			case GIT_DIFF_LINE_DELETION:
				g_array_append_val(pre, l);
				trailing = 0;
				break;
			case GIT_DIFF_LINE_ADDITION:
				g_array_append_val(post, l);
				trailing = 0;
				break;
			case GIT_DIFF_LINE_CONTEXT_EOFNL:
				drop_newline(pre);
				drop_newline(post);
				break;
			case GIT_DIFF_LINE_DEL_EOFNL:
				drop_newline(pre);
				break;
			case GIT_DIFF_LINE_ADD_EOFNL:
				drop_newline(post);
				break;
			default:
				break;
			}
		}
		/* As git apply without --unidiff-zero. */
		match_beginning = hunk->old_start <= 1;
		match_end = trailing == 0;
		at = find_pos(st, img, pre, hunk->new_start > 0 ? (gsize)hunk->new_start - 1 : 0,
			      match_beginning, match_end);
		if (at == -2)
			return apply_fail(st, REPO_APPLY_REFUSED,
					  "%s: hunks too far from their stated lines", shown);
		if (at < 0)
			return apply_fail(st, REPO_APPLY_CONFLICT,
					  "%s: hunk %zu (@@ -%d,%d) does not apply", shown, h + 1,
					  hunk->old_start, hunk->old_lines);
		g_array_remove_range(img, (guint)at, pre->len);
		g_array_insert_vals(img, (guint)at, post->data, post->len);
	}
	for (guint i = 0; i < img->len; i++) {
		const struct apply_line *l = &g_array_index(img, struct apply_line, i);

		g_string_append_len(out, l->p, (gssize)l->n);
	}
	return 1;
}

/* Returns 1 when nothing in the index is at @path, under it or above it, else 0. */
static int path_free(struct apply_state *st, const char *path, const char *shown)
{
	g_autofree char *dir = g_strconcat(path, "/", NULL);
	size_t pos;

	if (git_index_get_bypath(st->index, path, 0))
		return apply_fail(st, REPO_APPLY_CONFLICT, "%s: already exists", shown);
	if (git_index_find_prefix(&pos, st->index, dir) == 0)
		return apply_fail(st, REPO_APPLY_CONFLICT, "%s: is a directory", shown);
	for (char *slash = strchr(dir, '/'); slash && slash[1]; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		if (git_index_get_bypath(st->index, dir, 0))
			return apply_fail(st, REPO_APPLY_CONFLICT, "%s: a leading directory is a file",
					  shown);
		*slash = '/';
	}
	return 1;
}

/* Applies the (checked) delta of @patch to the index: 1, 0 with the reason, -1 with @error. */
static int delta_apply(struct apply_state *st, git_patch *patch, GError **error)
{
	const git_diff_delta *d = git_patch_get_delta(patch);
	g_autofree char *old_shown = path_shown(d->old_file.path);
	g_autofree char *new_shown = path_shown(d->new_file.path);
	g_autoptr(GString) out = g_string_new(NULL);
	git_index_entry entry;
	git_blob *blob = NULL;
	unsigned mode = GIT_FILEMODE_BLOB;
	int rc, r;

	if (d->status != GIT_DELTA_ADDED) {
		const git_index_entry *e = git_index_get_bypath(st->index, d->old_file.path, 0);

		if (!e)
			return apply_fail(st, REPO_APPLY_CONFLICT, "%s: does not exist", old_shown);
		if (e->mode != GIT_FILEMODE_BLOB && e->mode != GIT_FILEMODE_BLOB_EXECUTABLE)
			return apply_fail(st, REPO_APPLY_REFUSED, "%s: not a regular file in the tree",
					  old_shown);
		mode = e->mode;
		rc = git_blob_lookup(&blob, st->git, &e->id);
		if (rc < 0) {
			repo_git_error(error, rc, d->old_file.path);
			return -1;
		}
	}
	if (d->status == GIT_DELTA_ADDED || d->status == GIT_DELTA_RENAMED ||
	    d->status == GIT_DELTA_COPIED) {
		if (!path_free(st, d->new_file.path, new_shown)) {
			git_blob_free(blob);
			return 0;
		}
	}
	r = hunks_apply(st, patch, old_shown, blob ? git_blob_rawcontent(blob) : "",
			blob ? (gsize)git_blob_rawsize(blob) : 0, out);
	git_blob_free(blob);
	if (r <= 0)
		return r;
	if (d->status == GIT_DELTA_DELETED) {
		if (out->len)
			return apply_fail(st, REPO_APPLY_CONFLICT,
					  "%s: removal patch leaves file contents", old_shown);
		rc = git_index_remove_bypath(st->index, d->old_file.path);
		goto done;
	}
	/*
	 * The mode only changes when the patch says so ("new file mode",
	 * "old mode"/"new mode"), as with git apply; the "index" line's mode
	 * describes the author's tree, not ours.
	 */
	if (d->status == GIT_DELTA_ADDED || d->old_file.mode != d->new_file.mode)
		mode = d->new_file.mode ? d->new_file.mode : mode;
	memset(&entry, 0, sizeof(entry));
	entry.mode = mode;
	entry.path = d->new_file.path;
	rc = git_blob_create_from_buffer(&entry.id, st->git, out->str, out->len);
	if (rc < 0) {
		repo_git_error(error, rc, d->new_file.path);
		return -1;
	}
	if (d->status == GIT_DELTA_RENAMED &&
	    (rc = git_index_remove_bypath(st->index, d->old_file.path)) < 0)
		goto done;
	if (git_index_add(st->index, &entry) < 0) {
		const git_error *e = git_error_last();
		g_autofree char *m = g_strescape(e && e->message ? e->message : "", NULL);

		return apply_fail(st, REPO_APPLY_REFUSED, "%s: refused by libgit2: %s", new_shown, m);
	}
done:
	if (rc < 0) {
		repo_git_error(error, rc, d->old_file.path);
		return -1;
	}
	return 1;
}

/* Whether a line of @text starts with @prefix. */
static bool has_line_prefix(const char *text, const char *prefix)
{
	for (const char *l = text; l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		if (g_str_has_prefix(l, prefix))
			return true;
	}
	return false;
}

/*
 * The name on a plain unified diff's "---"/"+++" line (@p up to @end), as
 * git apply -p1 takes it: up to a tab, without its first directory;
 * "/dev/null" as is. NULL when there is no directory to strip.
 */
static char *plain_name(const char *p, const char *end)
{
	const char *tab = memchr(p, '\t', (gsize)(end - p));
	g_autofree char *name = g_strndup(p, (gsize)((tab ? tab : end) - p));
	const char *slash;

	g_strchomp(name);
	if (strcmp(name, "/dev/null") == 0)
		return g_steal_pointer(&name);
	slash = strchr(name, '/');
	if (!slash || !slash[1])
		return NULL;
	return g_strdup(slash + 1);
}

/* The line counts of a hunk header "@@ -a[,b] +c[,d] @@" (0 when unreadable). */
static void hunk_counts(const char *line, gint64 *old_lines, gint64 *new_lines)
{
	char *p = (char *)line + 4;

	*old_lines = *new_lines = 0;
	g_ascii_strtoll(p, &p, 10);
	*old_lines = *p == ',' ? g_ascii_strtoll(p + 1, &p, 10) : 1;
	if (!g_str_has_prefix(p, " +")) {
		*old_lines = 0;
		return;
	}
	g_ascii_strtoll(p + 2, &p, 10);
	*new_lines = *p == ',' ? g_ascii_strtoll(p + 1, &p, 10) : 1;
}

/*
 * A plain unified diff (diff -u, quilt) with the "diff --git" headers
 * libgit2's parser needs (it reads no other kind), or NULL when @text
 * has git headers already or no file header to convert. Hunk lines are
 * counted, so a removed line "-- x" is never taken for a file header.
 */
static char *diff_gitify(const char *text)
{
	g_autoptr(GString) out = NULL;
	gint64 old_left = 0, new_left = 0;
	bool changed = false;

	if (has_line_prefix(text, "diff --git "))
		return NULL;
	out = g_string_new(NULL);
	for (const char *line = text; *line;) {
		const char *eol = strchrnul(line, '\n');
		const char *next = *eol ? eol + 1 : eol;

		if (old_left > 0 || new_left > 0) {
			bool in_hunk = true;

			switch (*line) {
			case ' ':
			case '\n':
				old_left--;
				new_left--;
				break;
			case '-':
				old_left--;
				break;
			case '+':
				new_left--;
				break;
			case '\\':
				break;
			default:
				old_left = new_left = 0;
				in_hunk = false;
			}
			if (in_hunk) {
				g_string_append_len(out, line, next - line);
				line = next;
				continue;
			}
		}
		if (g_str_has_prefix(line, "--- ") && g_str_has_prefix(next, "+++ ")) {
			const char *eol2 = strchrnul(next, '\n');
			g_autofree char *a = plain_name(line + 4, eol);
			g_autofree char *b = plain_name(next + 4, eol2);
			bool added = a && strcmp(a, "/dev/null") == 0;
			bool deleted = b && strcmp(b, "/dev/null") == 0;

			if (a && b && !(added && deleted)) {
				const char *name = deleted ? a : b;

				g_string_append_printf(out, "diff --git a/%s b/%s\n%s", name, name,
						       added ? "new file mode 100644\n" :
						       deleted ? "deleted file mode 100644\n" : "");
				g_string_append_printf(out, "--- %s%s\n+++ %s%s\n",
						       added ? "" : "a/", added ? "/dev/null" : name,
						       deleted ? "" : "b/", deleted ? "/dev/null" : name);
				changed = true;
				line = *eol2 ? eol2 + 1 : eol2;
				continue;
			}
		}
		if (g_str_has_prefix(line, "@@ -"))
			hunk_counts(line, &old_left, &new_left);
		g_string_append_len(out, line, next - line);
		line = next;
	}
	return changed ? g_string_free(g_steal_pointer(&out), FALSE) : NULL;
}

/* Removes control characters and angle brackets, which would break a commit header. */
static char *ident_clean(const char *s)
{
	GString *out = g_string_new(NULL);

	for (const char *p = s ? s : ""; *p; p++) {
		if ((guchar)*p >= 0x20 && *p != 0x7f && *p != '<' && *p != '>')
			g_string_append_c(out, *p);
	}
	return g_strstrip(g_string_free(out, FALSE));
}

/*
 * Applies @p on the index and commits it on @parent as *@made. Returns 1,
 * 0 with the reason in @st, or -1 with @error.
 */
static int patch_apply(struct apply_state *st, git_commit *parent, const struct repo_patch *p,
		       const git_signature *committer, gint64 now, git_oid *made, GError **error)
{
	g_autofree char *gitified = NULL;
	g_autofree char *name = ident_clean(p->author_name);
	g_autofree char *email = ident_clean(p->author_email);
	g_autofree char *message = NULL;
	g_autoptr(GPtrArray) patches = g_ptr_array_new_with_free_func((GDestroyNotify)git_patch_free);
	const char *text = p->diff ? p->diff : "";
	gsize len = strlen(text);
	git_diff *diff = NULL;
	git_signature *author = NULL;
	git_tree *tree = NULL;
	git_oid tree_id;
	size_t ndeltas;
	int rc, r = -1;

	if (len > REPO_APPLY_MAX_BYTES)
		return apply_fail(st, REPO_APPLY_REFUSED, "diff larger than %d MiB",
				  REPO_APPLY_MAX_BYTES >> 20);
	if (has_line_prefix(text, "GIT binary patch") || has_line_prefix(text, "Binary files "))
		return apply_fail(st, REPO_APPLY_REFUSED, "binary patch");
	gitified = diff_gitify(text);
	if (gitified)
		text = gitified;
	rc = git_diff_from_buffer(&diff, text, strlen(text));
	if (rc < 0) {
		const git_error *e = git_error_last();
		g_autofree char *m = g_strescape(e && e->message ? e->message : "", NULL);

		return apply_fail(st, REPO_APPLY_INVALID, "not a readable diff: %.200s", m);
	}
	ndeltas = git_diff_num_deltas(diff);
	if (ndeltas == 0) {
		r = apply_fail(st, REPO_APPLY_INVALID, "not a readable diff: no file changed");
		goto out;
	}
	if (ndeltas > REPO_APPLY_MAX_FILES) {
		r = apply_fail(st, REPO_APPLY_REFUSED, "diff changes more than %d files",
			       REPO_APPLY_MAX_FILES);
		goto out;
	}
	for (size_t i = 0; i < ndeltas; i++) {
		git_patch *patch = NULL;

		if ((rc = git_patch_from_diff(&patch, diff, i)) < 0) {
			repo_git_error(error, rc, "diff");
			goto out;
		}
		g_ptr_array_add(patches, patch);
		if (!delta_check(st, patch)) {
			r = 0;
			goto out;
		}
	}
	for (guint i = 0; i < patches->len; i++) {
		r = delta_apply(st, patches->pdata[i], error);
		if (r <= 0)
			goto out;
	}
	r = -1;
	if (!*email) {
		r = apply_fail(st, REPO_APPLY_INVALID, "no author address");
		goto out;
	}
	if (!*name) {
		g_free(name);
		name = g_strdup(email);
	}
	rc = git_signature_new(&author, name, email, p->author_time ? p->author_time : now,
			       ABS(p->author_offset) < 24 * 60 ? p->author_offset : 0);
	if (rc < 0) {
		const git_error *e = git_error_last();
		g_autofree char *m = g_strescape(e && e->message ? e->message : "", NULL);

		r = apply_fail(st, REPO_APPLY_INVALID, "author: %s", m);
		goto out;
	}
	/* As git am: the body follows a blank line, and the message ends with a newline. */
	if (p->message && *p->message)
		message = g_strdup_printf("%s\n\n%s%s", p->subject ? p->subject : "", p->message,
					  g_str_has_suffix(p->message, "\n") ? "" : "\n");
	else
		message = g_strdup_printf("%s\n", p->subject ? p->subject : "");
	if ((rc = git_index_write_tree_to(&tree_id, st->index, st->git)) < 0 ||
	    (rc = git_tree_lookup(&tree, st->git, &tree_id)) < 0) {
		repo_git_error(error, rc, "writing the patched tree");
		goto out;
	}
	{
		const git_commit *parents[] = { parent };

		rc = git_commit_create(made, st->git, NULL, author, committer, NULL, message, tree,
				       1, parents);
	}
	if (rc < 0) {
		repo_git_error(error, rc, "committing a patch");
		goto out;
	}
	r = 1;
out:
	git_tree_free(tree);
	git_signature_free(author);
	g_clear_pointer(&patches, g_ptr_array_unref);
	git_diff_free(diff);
	return r;
}

int repo_apply_series(struct repo *repo, const char *base, const struct repo_patch *patches,
		      size_t n, const char *committer_name, const char *committer_email,
		      gint64 now, char ***commits, enum repo_apply_failure *failure, char **why,
		      GError **error)
{
	struct apply_state st = { .git = repo->git, .failure = REPO_APPLY_OK };
	g_autoptr(GPtrArray) made = g_ptr_array_new_with_free_func(g_free);
	git_commit *parent = NULL;
	git_signature *committer = NULL;
	git_tree *tree = NULL;
	git_oid id;
	int rc, result = -1;

	*commits = NULL;
	*failure = REPO_APPLY_OK;
	*why = NULL;
	if (!repo_oid_parse(&id, base, error))
		return -1;
	if ((rc = git_commit_lookup(&parent, repo->git, &id)) < 0 ||
	    (rc = git_commit_tree(&tree, parent)) < 0 ||
	    (rc = git_index_new(&st.index)) < 0 ||
	    (rc = git_index_read_tree(st.index, tree)) < 0) {
		repo_git_error(error, rc, base);
		goto out;
	}
	if ((rc = git_signature_new(&committer, committer_name, committer_email, now, 0)) < 0) {
		repo_git_error(error, rc, "committer");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		git_oid next;

		st.budget = APPLY_SEARCH_BUDGET;
		rc = patch_apply(&st, parent, &patches[i], committer, now, &next, error);
		if (rc < 0)
			goto out;
		if (rc == 0)
			break;
		git_commit_free(parent);
		parent = NULL;
		if ((rc = git_commit_lookup(&parent, repo->git, &next)) < 0) {
			repo_git_error(error, rc, git_oid_tostr_s(&next));
			goto out;
		}
		g_ptr_array_add(made, g_strdup(git_oid_tostr_s(&next)));
	}
	result = (int)made->len;
	*failure = st.failure;
	*why = g_steal_pointer(&st.why);
	g_ptr_array_add(made, NULL);
	*commits = (char **)g_ptr_array_free(g_steal_pointer(&made), FALSE);
out:
	g_free(st.why);
	git_index_free(st.index);
	git_signature_free(committer);
	git_tree_free(tree);
	git_commit_free(parent);
	return result;
}
