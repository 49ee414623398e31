/*
 * repo_apply_series() against the real git: patches made by
 * `git format-patch`, applied by us and by `git am` on the same base, must
 * give the same commits (tree, author, date, message). Hostile diffs are
 * refused before anything is applied.
 */
#include "autoconfig.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/engine.h"
#include "engine/repo.h"
#include "tests/testlib.h"

#define NOW 1700100000
#define COMMITTER "Test Committer"
#define COMMITTER_EMAIL "committer@example.org"

static char *work;   /* the work repository, where history is made */
static char *mails;  /* format-patch output */
static struct repo *store; /* a bare clone of work */
static char *store_dir;
static char *base;   /* P: the common base */
static char *topic[5];
static char *x1;     /* on P: a.c line 20 changed */
static char *down;   /* P with three lines inserted above line 20 */
static char *up;     /* P with three lines removed above line 20 */

static void drop(char *s)
{
	g_free(s);
}

static void put(const char *file, const char *content)
{
	g_autofree char *path = g_build_filename(work, file, NULL);
	g_autofree char *dir = g_path_get_dirname(path);

	g_mkdir_with_parents(dir, 0755);
	g_assert_true(g_file_set_contents(path, content, -1, NULL));
}

static char *numbered(const char *word, int from, int to)
{
	GString *s = g_string_new(NULL);

	for (int i = from; i <= to; i++)
		g_string_append_printf(s, "%s %d\n", word, i);
	return g_string_free(s, FALSE);
}

/* Commits everything in work as @author ("Name <addr>" or NULL) at @date. */
static char *commit_all(const char *msg, const char *author, const char *date)
{
	g_setenv("GIT_AUTHOR_DATE", date, TRUE);
	drop(testlib_git(work, "add", "-A", NULL));
	if (author) {
		g_autofree char *opt = g_strconcat("--author=", author, NULL);

		drop(testlib_git(work, "commit", "-q", opt, "-m", msg, NULL));
	} else {
		drop(testlib_git(work, "commit", "-q", "-m", msg, NULL));
	}
	return testlib_git(work, "rev-parse", "HEAD", NULL);
}

/* a.c on P with line @n replaced by @with (NULL: removed), or @with inserted before it. */
static char *a_c(int n, const char *with, bool insert)
{
	GString *s = g_string_new(NULL);

	for (int i = 1; i <= 40; i++) {
		if (i == n && insert)
			g_string_append(s, with);
		if (i == n && !insert) {
			if (with)
				g_string_append(s, with);
			continue;
		}
		g_string_append_printf(s, "line %d\n", i);
	}
	g_string_append(s, "-- x\n");
	return g_string_free(s, FALSE);
}

static void setup_history(void)
{
	g_autofree char *a = a_c(0, NULL, false);
	g_autofree char *old = numbered("old", 1, 20);
	g_autofree char *link = g_build_filename(work, "link", NULL);

	testlib_repo_init(work);
	put("a.c", a);
	put("old.txt", old);
	put("gone.txt", "bye\n");
	put("run.sh", "echo hi\n");
	put("nonl.txt", "first\nlast");
	g_assert_cmpint(symlink("a.c", link), ==, 0);
	base = commit_all("base", NULL, "@1700000000 +0000");

	drop(testlib_git(work, "checkout", "-q", "-b", "topic", base, NULL));
	{
		g_autofree char *t = a_c(5, "line five\n", false);

		memcpy(strstr(t, "line 35\n"), "line 53\n", 8);
		put("a.c", t);
		put("nonl.txt", "first\nfinal");
	}
	topic[0] = commit_all("a: change two lines\n\nThe body explains why.\n\n"
			      "Signed-off-by: \xc3\x84" "dam \xc3\x9c" "ser <adam@example.org>",
			      "\xc3\x84" "dam \xc3\x9c" "ser <adam@example.org>", "@1700000100 +0130");
	put("sub/new.c", "int new;\n");
	topic[1] = commit_all("sub: add new.c", NULL, "@1700000200 -0700");
	drop(testlib_git(work, "rm", "-q", "gone.txt", NULL));
	topic[2] = commit_all("remove gone.txt", NULL, "@1700000300 +0000");
	drop(testlib_git(work, "mv", "old.txt", "moved-old.txt", NULL));
	{
		g_autofree char *t = numbered("old", 1, 20);
		char *p = strstr(t, "old 10\n");

		memcpy(p, "OLD 10\n", 7);
		put("moved-old.txt", t);
	}
	topic[3] = commit_all("move old.txt", NULL, "@1700000400 +0000");
	{
		g_autofree char *sh = g_build_filename(work, "run.sh", NULL);

		g_assert_cmpint(chmod(sh, 0755), ==, 0);
	}
	topic[4] = commit_all("run.sh: make executable", NULL, "@1700000500 +0000");

	drop(testlib_git(work, "checkout", "-q", "-b", "x", base, NULL));
	{
		g_autofree char *t = a_c(20, "line twenty\n", false);

		put("a.c", t);
	}
	x1 = commit_all("a: line twenty", NULL, "@1700000600 +0000");

	drop(testlib_git(work, "checkout", "-q", "-b", "down", base, NULL));
	{
		g_autofree char *t = a_c(3, "top 1\ntop 2\ntop 3\n", true);

		put("a.c", t);
	}
	down = commit_all("offset down", NULL, "@1700000700 +0000");

	drop(testlib_git(work, "checkout", "-q", "-b", "up", base, NULL));
	{
		/* Lines 3 to 5 removed. */
		g_autofree char *t = a_c(3, NULL, false);
		char *p = strstr(t, "line 4\n");

		memmove(p, p + 14, strlen(p + 14) + 1);
		put("a.c", t);
	}
	up = commit_all("offset up", NULL, "@1700000800 +0000");

	drop(testlib_git(testlib_scratch(), "clone", "-q", "--bare", work, store_dir, NULL));
}

/* One commit as `git format-patch` mails it, and as patchmail would hand it over. */
struct mailed {
	char *file;
	char *mail;
	char *subject;
	char *message;
	char *name;
	char *email;
	gint64 time;
	int offset;
};

static struct mailed *mailed_new(const char *commit)
{
	struct mailed *m = g_new0(struct mailed, 1);
	g_autofree char *date = testlib_git(work, "log", "-1", "--date=raw", "--format=%ad", commit,
					    NULL);
	const char *sp = strchr(date, ' ');
	int tz;

	m->file = testlib_git(work, "format-patch", "-M", "-1", "-o", mails, commit, NULL);
	g_assert_true(g_file_get_contents(m->file, &m->mail, NULL, NULL));
	m->subject = testlib_git(work, "log", "-1", "--format=%s", commit, NULL);
	m->message = testlib_git(work, "log", "-1", "--format=%b", commit, NULL);
	m->name = testlib_git(work, "log", "-1", "--format=%an", commit, NULL);
	m->email = testlib_git(work, "log", "-1", "--format=%ae", commit, NULL);
	m->time = g_ascii_strtoll(date, NULL, 10);
	g_assert_nonnull(sp);
	tz = atoi(sp + 2);
	m->offset = (sp[1] == '-' ? -1 : 1) * (tz / 100 * 60 + tz % 100);
	return m;
}

static void mailed_free(struct mailed *m)
{
	g_free(m->file);
	g_free(m->mail);
	g_free(m->subject);
	g_free(m->message);
	g_free(m->name);
	g_free(m->email);
	g_free(m);
}
ZD_AUTOPTR_DEFINE(mailed, mailed_free)

/* The diff as mailed: from its first line to the end, "-- \n2.39.x" signature included. */
static struct repo_patch patch_of(const struct mailed *m)
{
	const char *diff = strstr(m->mail, "\ndiff --git ");

	g_assert_nonnull(diff);
	return (struct repo_patch){ .diff = diff ? diff + 1 : "", .subject = m->subject,
				    .message = m->message, .author_name = m->name,
				    .author_email = m->email, .author_time = m->time,
				    .author_offset = m->offset };
}

static int am_count;

/* Runs the real `git am` with @m[0..n) on @at in a scratch clone; returns the commit ids. */
static char **git_am(const char *at, struct mailed **m, size_t n)
{
	g_autofree char *name = g_strdup_printf("am-%d", am_count++);
	g_autofree char *dir = testlib_mkdir(name);
	g_autofree char *range = g_strconcat(at, "..HEAD", NULL);
	g_autofree char *ids = NULL;

	drop(testlib_git(testlib_scratch(), "clone", "-q", work, dir, NULL));
	drop(testlib_git(dir, "checkout", "-q", "--detach", at, NULL));
	for (size_t i = 0; i < n; i++)
		drop(testlib_git(dir, "am", "-q", m[i]->file, NULL));
	ids = testlib_git(dir, "rev-list", "--reverse", range, NULL);
	return *ids ? g_strsplit(ids, "\n", -1) : g_new0(char *, 1);
}

/* Compares our commits with git am's, showing both when they differ. */
static void same_commits(char **ours, char **theirs)
{
	g_assert_cmpuint(g_strv_length(ours), ==, g_strv_length(theirs));
	for (size_t i = 0; ours[i] && theirs[i]; i++) {
		g_autofree char *a = testlib_git(store_dir, "cat-file", "-p", ours[i], NULL);

		if (strcmp(ours[i], theirs[i]) != 0)
			g_test_message("patch %zu: ours\n%s\ngit am's is %s", i + 1, a, theirs[i]);
		g_assert_cmpstr(ours[i], ==, theirs[i]);
	}
}

/* Applies @m on @at with repo_apply_series(). */
static int apply(const char *at, struct mailed **m, size_t n, char ***commits,
		 enum repo_apply_failure *failure, char **why)
{
	g_autofree struct repo_patch *p = g_new0(struct repo_patch, n + 1);
	g_autoptr(GError) error = NULL;
	int rc;

	for (size_t i = 0; i < n; i++)
		p[i] = patch_of(m[i]);
	rc = repo_apply_series(store, at, p, n, COMMITTER, COMMITTER_EMAIL, NOW, commits, failure,
			       why, &error);
	g_assert_no_error(error);
	if (*why)
		g_test_message("stopped: %s", *why);
	return rc;
}

/* Modify (two hunks, no newline at end), add, delete, rename with changes, chmod. */
static void test_series(void)
{
	struct mailed *m[5];
	g_auto(GStrv) ours = NULL;
	g_auto(GStrv) theirs = NULL;
	g_autofree char *why = NULL;
	enum repo_apply_failure failure = REPO_APPLY_CONFLICT;

	for (size_t i = 0; i < 5; i++)
		m[i] = mailed_new(topic[i]);
	g_assert_nonnull(strstr(m[3]->mail, "rename from old.txt"));
	g_assert_nonnull(strstr(m[4]->mail, "new mode 100755"));
	g_assert_nonnull(strstr(m[0]->mail, "\n-- \n2."));
	g_assert_cmpint(apply(base, m, 5, &ours, &failure, &why), ==, 5);
	g_assert_cmpint(failure, ==, REPO_APPLY_OK);
	g_assert_null(why);
	theirs = git_am(base, m, 5);
	same_commits(ours, theirs);
	/* Not only the ids: the tree is what the author committed. */
	{
		g_autofree char *t1 = g_strconcat(ours[4], "^{tree}", NULL);
		g_autofree char *t2 = g_strconcat(topic[4], "^{tree}", NULL);
		g_autofree char *a = testlib_git(store_dir, "rev-parse", t1, NULL);
		g_autofree char *b = testlib_git(store_dir, "rev-parse", t2, NULL);
		g_autofree char *who = testlib_git(store_dir, "log", "-1", "--format=%an <%ae> %ad|%cn <%ce> %cd",
						   "--date=raw", ours[0], NULL);

		g_assert_cmpstr(a, ==, b);
		g_assert_cmpstr(who, ==, "\xc3\x84" "dam \xc3\x9c" "ser <adam@example.org> 1700000100 +0130|"
				COMMITTER " <" COMMITTER_EMAIL "> 1700100000 +0000");
	}
	for (size_t i = 0; i < 5; i++)
		mailed_free(m[i]);
}

/*
 * git am applies a hunk whose context moved (lines added or removed above
 * it); libgit2 1.5's own applier does not, which is why repo.c has its own.
 */
static void test_offset(void)
{
	zd_autoptr(mailed) m = mailed_new(x1);
	const char *bases[] = { down, up };

	for (size_t i = 0; i < G_N_ELEMENTS(bases); i++) {
		g_auto(GStrv) ours = NULL;
		g_auto(GStrv) theirs = NULL;
		g_autofree char *why = NULL;
		enum repo_apply_failure failure;
		g_autofree char *spec = NULL;
		g_autofree char *a = NULL;

		g_assert_cmpint(apply(bases[i], &m, 1, &ours, &failure, &why), ==, 1);
		g_assert_cmpint(failure, ==, REPO_APPLY_OK);
		theirs = git_am(bases[i], &m, 1);
		same_commits(ours, theirs);
		spec = g_strconcat(ours[0], ":a.c", NULL);
		a = testlib_git(store_dir, "show", spec, NULL);
		g_assert_nonnull(strstr(a, "line twenty\n"));
	}
}

/* A patch that does not apply stops the series there; the earlier commits are kept. */
static void test_conflict(void)
{
	zd_autoptr(mailed) m = mailed_new(x1);
	zd_autoptr(mailed) t2 = mailed_new(topic[1]);
	struct mailed *series[] = { t2, m, m, t2 };
	g_auto(GStrv) ours = NULL;
	g_auto(GStrv) theirs = NULL;
	g_autofree char *why = NULL;
	enum repo_apply_failure failure;

	g_assert_cmpint(apply(base, series, 4, &ours, &failure, &why), ==, 2);
	g_assert_cmpint(failure, ==, REPO_APPLY_CONFLICT);
	g_assert_nonnull(why);
	g_assert_nonnull(why ? strstr(why, "'a.c'") : NULL);
	g_assert_cmpuint(g_strv_length(ours), ==, 2);
	theirs = git_am(base, series, 2);
	same_commits(ours, theirs);

	/* A new file that exists already, a deletion of one that does not. */
	g_clear_pointer(&ours, g_strfreev);
	g_clear_pointer(&why, g_free);
	series[1] = t2;
	g_assert_cmpint(apply(base, series, 2, &ours, &failure, &why), ==, 1);
	g_assert_cmpint(failure, ==, REPO_APPLY_CONFLICT);
	g_assert_cmpstr(why, ==, "'sub/new.c': already exists");
}

/* Runs one hand-made diff (after a good patch) on P: returns what stopped it. */
static enum repo_apply_failure one(const char *diff, char **why)
{
	zd_autoptr(mailed) good = mailed_new(topic[1]);
	struct repo_patch p[2] = { patch_of(good), {
		.diff = diff, .subject = "hostile", .message = "", .author_name = "Mallory",
		.author_email = "mallory@example.org", .author_time = 1700000000 } };
	g_autoptr(GError) error = NULL;
	g_auto(GStrv) commits = NULL;
	enum repo_apply_failure failure = REPO_APPLY_OK;
	int rc;

	rc = repo_apply_series(store, base, p, 2, COMMITTER, COMMITTER_EMAIL, NOW, &commits,
			       &failure, why, &error);
	g_assert_no_error(error);
	g_assert_cmpint(rc, ==, 1);
	g_assert_cmpuint(commits ? g_strv_length(commits) : 0, ==, 1);
	return failure;
}

static const struct {
	const char *name;
	const char *diff;
	enum repo_apply_failure failure;
	const char *why;
} hostile[] = {
	{ "git-config", "diff --git a/.git/config b/.git/config\n--- a/.git/config\n"
	  "+++ b/.git/config\n@@ -1 +1 @@\n-x\n+y\n", REPO_APPLY_REFUSED,
	  "'.git/config': '.git' component" },
	{ "dotdot", "diff --git a/../evil b/../evil\nnew file mode 100644\n--- /dev/null\n"
	  "+++ b/../evil\n@@ -0,0 +1 @@\n+x\n", REPO_APPLY_REFUSED, "'../evil': '..' component" },
	{ "dotdot-inside", "diff --git a/sub/../../evil b/sub/../../evil\nnew file mode 100644\n"
	  "--- /dev/null\n+++ b/sub/../../evil\n@@ -0,0 +1 @@\n+x\n", REPO_APPLY_REFUSED,
	  "'..' component" },
	{ "absolute", "diff --git a/a.c b//etc/passwd\nsimilarity index 100%\nrename from a.c\n"
	  "rename to /etc/passwd\n", REPO_APPLY_REFUSED, "'/etc/passwd': absolute path" },
	/* git -p1 and libgit2 read "b//etc/passwd" as "etc/passwd": not absolute. */
	{ "double-slash", "diff --git a//etc/passwd b//etc/passwd\n--- a//etc/passwd\n"
	  "+++ b//etc/passwd\n@@ -1 +1 @@\n-x\n+y\n", REPO_APPLY_CONFLICT,
	  "'etc/passwd': does not exist" },
	{ "git-case", "diff --git a/sub/.GiT/hooks/x b/sub/.GiT/hooks/x\nnew file mode 100644\n"
	  "--- /dev/null\n+++ b/sub/.GiT/hooks/x\n@@ -0,0 +1 @@\n+x\n", REPO_APPLY_REFUSED,
	  "'.git' component" },
	{ "git-dots", "diff --git a/.git../config b/.git../config\nnew file mode 100644\n"
	  "--- /dev/null\n+++ b/.git../config\n@@ -0,0 +1 @@\n+x\n", REPO_APPLY_REFUSED,
	  "'.git' component" },
	/* libgit2 reads unquoted names up to a space: quoted, as git quotes unusual names. */
	{ "git-space", "diff --git a/a.c \"b/.git . /config\"\nsimilarity index 100%\n"
	  "rename from a.c\nrename to \".git . /config\"\n", REPO_APPLY_REFUSED,
	  "'.git . /config': '.git' component" },
	{ "git-8.3", "diff --git a/GIT~1/config b/GIT~1/config\nnew file mode 100644\n"
	  "--- /dev/null\n+++ b/GIT~1/config\n@@ -0,0 +1 @@\n+x\n", REPO_APPLY_REFUSED,
	  "'.git' component" },
	{ "git-ntfs-stream", "diff --git a/.git::$INDEX_ALLOCATION/config b/.git::$INDEX_ALLOCATION/config\n"
	  "new file mode 100644\n--- /dev/null\n+++ b/.git::$INDEX_ALLOCATION/config\n"
	  "@@ -0,0 +1 @@\n+x\n", REPO_APPLY_REFUSED, "'.git' component" },
	{ "git-hfs", "diff --git a/.g\xe2\x80\x8cit/config b/.g\xe2\x80\x8cit/config\n"
	  "new file mode 100644\n--- /dev/null\n+++ b/.g\xe2\x80\x8cit/config\n@@ -0,0 +1 @@\n+x\n",
	  REPO_APPLY_REFUSED, "'.git' component" },
	{ "rename-to-git", "diff --git a/a.c b/.git/hooks/post-checkout\nsimilarity index 100%\n"
	  "rename from a.c\nrename to .git/hooks/post-checkout\n", REPO_APPLY_REFUSED,
	  "'.git/hooks/post-checkout': '.git' component" },
	{ "rename-from-git", "diff --git a/.git/config b/x\nsimilarity index 100%\n"
	  "rename from .git/config\nrename to x\n", REPO_APPLY_REFUSED,
	  "'.git/config': '.git' component" },
	{ "symlink-new", "diff --git a/evil b/evil\nnew file mode 120000\nindex 0000000..e5b6cb4\n"
	  "--- /dev/null\n+++ b/evil\n@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n",
	  REPO_APPLY_REFUSED, "'evil': symbolic link" },
	{ "symlink-old", "diff --git a/link b/link\nindex 3f52ab6..e5b6cb4 120000\n--- a/link\n"
	  "+++ b/link\n@@ -1 +1 @@\n-a.c\n\\ No newline at end of file\n+/etc/passwd\n"
	  "\\ No newline at end of file\n", REPO_APPLY_REFUSED, "'link': symbolic link" },
	{ "symlink-in-tree", "--- a/link\n+++ b/link\n@@ -1 +1 @@\n-a.c\n"
	  "\\ No newline at end of file\n+/etc/passwd\n\\ No newline at end of file\n",
	  REPO_APPLY_REFUSED, "'link': not a regular file in the tree" },
	{ "symlink-to-file", "diff --git a/a.c b/a.c\nold mode 100644\nnew mode 120000\n",
	  REPO_APPLY_REFUSED, "'a.c': symbolic link" },
	{ "submodule", "diff --git a/sm b/sm\nnew file mode 160000\nindex 0000000..1234567\n"
	  "--- /dev/null\n+++ b/sm\n@@ -0,0 +1 @@\n"
	  "+Subproject commit 1234567890123456789012345678901234567890\n", REPO_APPLY_REFUSED,
	  "'sm': submodule" },
	{ "mode-600", "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100600\n",
	  REPO_APPLY_REFUSED, "'run.sh': file mode 100600" },
	{ "mode-dir", "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 040000\n",
	  REPO_APPLY_REFUSED, "'run.sh': file mode 040000" },
	{ "control-char", "diff --git \"a/x\\ty\" \"b/x\\ty\"\nnew file mode 100644\n--- /dev/null\n"
	  "+++ \"b/x\\ty\"\n@@ -0,0 +1 @@\n+x\n", REPO_APPLY_REFUSED,
	  "'x\\ty': control character in path" },
	{ "backslash", "diff --git a/x\\y b/x\\y\nnew file mode 100644\n--- /dev/null\n"
	  "+++ b/x\\y\n@@ -0,0 +1 @@\n+x\n", REPO_APPLY_REFUSED, "backslash in path" },
	{ "binary", "diff --git a/bin b/bin\nnew file mode 100644\nindex 0000000..e69de29\n"
	  "GIT binary patch\nliteral 2\nJcmZSh00031000\n\nliteral 0\nHcmV?d00001\n\n",
	  REPO_APPLY_REFUSED, "binary patch" },
	{ "binary-nodata", "diff --git a/bin b/bin\nindex 1234567..89abcde 100644\n"
	  "Binary files a/bin and b/bin differ\n", REPO_APPLY_REFUSED, "binary patch" },
	{ "garbage", "Hello,\n\nthis is not a diff at all.\n-- \nMallory\n", REPO_APPLY_INVALID,
	  "not a readable diff" },
	{ "truncated", "diff --git a/a.c b/a.c\n--- a/a.c\n+++ b/a.c\n@@ -1,3 +1,3 @@\n line 1\n",
	  REPO_APPLY_INVALID, "not a readable diff" },
	{ "empty", "", REPO_APPLY_INVALID, "not a readable diff" },
	{ "hunk-mismatch", "diff --git a/a.c b/a.c\n--- a/a.c\n+++ b/a.c\n@@ -20,2 +20,2 @@\n"
	  " nothing\n-like\n+this\n", REPO_APPLY_CONFLICT, "'a.c': hunk 1 (@@ -20,2) does not apply" },
	{ "delete-missing", "diff --git a/nope b/nope\ndeleted file mode 100644\n--- a/nope\n"
	  "+++ /dev/null\n@@ -1 +0,0 @@\n-x\n", REPO_APPLY_CONFLICT, "'nope': does not exist" },
	{ "delete-partly", "diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n"
	  "--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-by\n", REPO_APPLY_CONFLICT,
	  "does not apply" },
	{ "file-over-dir", "diff --git a/sub b/sub\nnew file mode 100644\n--- /dev/null\n"
	  "+++ b/sub\n@@ -0,0 +1 @@\n+x\n", REPO_APPLY_CONFLICT, "'sub': is a directory" },
	{ "dir-over-file", "diff --git a/a.c/x b/a.c/x\nnew file mode 100644\n--- /dev/null\n"
	  "+++ b/a.c/x\n@@ -0,0 +1 @@\n+x\n", REPO_APPLY_CONFLICT,
	  "'a.c/x': a leading directory is a file" },
};

static void test_hostile(gconstpointer data)
{
	size_t i = GPOINTER_TO_SIZE(data);
	g_autofree char *why = NULL;
	enum repo_apply_failure failure = one(hostile[i].diff, &why);

	g_test_message("why: %s", why);
	g_assert_cmpint(failure, ==, hostile[i].failure);
	g_assert_nonnull(why);
	if (why && !strstr(why, hostile[i].why)) {
		g_test_message("why: %s; expected to contain %s", why, hostile[i].why);
		g_test_fail();
	}
	g_assert_null(why ? strchr(why, '\n') : NULL);
}

static void test_limits(void)
{
	g_autoptr(GString) big = g_string_new("diff --git a/x b/x\nnew file mode 100644\n"
					      "--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+x\n");
	g_autoptr(GString) many = g_string_new(NULL);
	g_autofree char *why = NULL;

	while (big->len <= REPO_APPLY_MAX_BYTES)
		g_string_append(big, "padding padding padding padding padding padding padding\n");
	g_assert_cmpint(one(big->str, &why), ==, REPO_APPLY_REFUSED);
	g_assert_cmpstr(why, ==, "diff larger than 10 MiB");
	g_clear_pointer(&why, g_free);
	for (int i = 0; i <= REPO_APPLY_MAX_FILES; i++)
		g_string_append_printf(many, "diff --git a/f%d b/f%d\nnew file mode 100644\n"
				       "--- /dev/null\n+++ b/f%d\n@@ -0,0 +1 @@\n+x\n", i, i, i);
	g_assert_cmpint(one(many->str, &why), ==, REPO_APPLY_REFUSED);
	g_assert_cmpstr(why, ==, "diff changes more than 10000 files");
}

/*
 * A plain unified diff (quilt, diff -u) with a -p1 prefix and timestamps,
 * where a removed "-- x" and an added "++ y" look like file headers: the
 * same tree as `git apply --index`.
 */
static void test_plain(void)
{
	static const char plain[] =
		"Index: linux/a.c\n"
		"===================================================================\n"
		"--- linux.orig/a.c\t2024-01-01 00:00:00.000000000 +0000\n"
		"+++ linux/a.c\t2024-01-01 00:00:00.000000000 +0000\n"
		"@@ -9,7 +9,7 @@\n line 9\n line 10\n line 11\n-line 12\n+line twelve\n"
		" line 13\n line 14\n line 15\n"
		"@@ -39,3 +39,3 @@\n line 39\n line 40\n--- x\n+++ y\n"
		"--- /dev/null\t1970-01-01 00:00:00.000000000 +0000\n"
		"+++ linux/plain-new.txt\t2024-01-01 00:00:00.000000000 +0000\n"
		"@@ -0,0 +1,2 @@\n+hello\n+world\n"
		"--- linux.orig/gone.txt\t2024-01-01 00:00:00.000000000 +0000\n"
		"+++ /dev/null\t1970-01-01 00:00:00.000000000 +0000\n"
		"@@ -1 +0,0 @@\n-bye\n";
	struct repo_patch p = { .diff = plain, .subject = "plain", .message = "",
				.author_name = "", .author_email = "quilt@example.org",
				.author_time = 0 };
	g_autofree char *dir = testlib_mkdir("plain");
	g_autofree char *file = g_build_filename(testlib_scratch(), "plain.diff", NULL);
	g_autoptr(GError) error = NULL;
	g_auto(GStrv) commits = NULL;
	g_autofree char *why = NULL;
	g_autofree char *tree = NULL;
	g_autofree char *spec = NULL;
	g_autofree char *ours = NULL;
	g_autofree char *who = NULL;
	enum repo_apply_failure failure;

	g_assert_cmpint(repo_apply_series(store, base, &p, 1, COMMITTER, COMMITTER_EMAIL, NOW,
					  &commits, &failure, &why, &error), ==, 1);
	g_assert_no_error(error);
	g_assert_null(why);
	g_assert_true(g_file_set_contents(file, plain, -1, NULL));
	drop(testlib_git(testlib_scratch(), "clone", "-q", work, dir, NULL));
	drop(testlib_git(dir, "checkout", "-q", "--detach", base, NULL));
	drop(testlib_git(dir, "apply", "--index", file, NULL));
	tree = testlib_git(dir, "write-tree", NULL);
	spec = g_strconcat(commits && commits[0] ? commits[0] : "", "^{tree}", NULL);
	ours = testlib_git(store_dir, "rev-parse", spec, NULL);
	g_assert_cmpstr(ours, ==, tree);
	/* No name: the address stands in; no date: now. */
	who = testlib_git(store_dir, "log", "-1", "--format=%an <%ae> %at", commits[0], NULL);
	g_assert_cmpstr(who, ==, "quilt@example.org <quilt@example.org> 1700100000");
}

/* Author fields cannot add header lines to the commit. */
static void test_author(void)
{
	zd_autoptr(mailed) m = mailed_new(x1);
	struct repo_patch p = patch_of(m);
	g_autoptr(GError) error = NULL;
	g_auto(GStrv) commits = NULL;
	g_autofree char *why = NULL;
	g_autofree char *raw = NULL;
	enum repo_apply_failure failure;

	p.author_name = "Eve\nparent 0123456789012345678901234567890123456789 <x>";
	p.author_email = "eve@example.org>\ncommitter x";
	g_assert_cmpint(repo_apply_series(store, base, &p, 1, COMMITTER, COMMITTER_EMAIL, NOW,
					  &commits, &failure, &why, &error), ==, 1);
	g_assert_no_error(error);
	raw = testlib_git(store_dir, "cat-file", "commit", commits ? commits[0] : "", NULL);
	g_assert_nonnull(strstr(raw, "\nauthor Eveparent 0123456789012345678901234567890123456789 x "
				"<eve@example.orgcommitter x> "));
	g_assert_null(strstr(raw, "\nparent 0123"));
	g_assert_null(strstr(raw, "\ncommitter x"));
}

static void test_keep(void)
{
	g_autoptr(GError) error = NULL;
	g_autofree char *got = NULL;
	g_autofree char *refs = NULL;

	g_assert_true(repo_keep(store, "series/12/3", x1, &error));
	g_assert_no_error(error);
	got = testlib_git(store_dir, "rev-parse", "refs/zeroday/series/12/3", NULL);
	g_assert_cmpstr(got, ==, x1);
	g_assert_false(repo_keep(store, "../x", x1, &error));
	g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID);
	g_clear_error(&error);
	g_assert_false(repo_keep(store, "a..b", x1, &error));
	g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID);
	g_clear_error(&error);
	g_assert_false(repo_keep(store, "s/1", "0123456789012345678901234567890123456789", &error));
	g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_NOT_FOUND);
	g_clear_error(&error);
	g_assert_true(repo_keep(store, "series/12/3", NULL, &error));
	g_assert_true(repo_keep(store, "series/12/3", NULL, &error));
	g_assert_no_error(error);
	refs = testlib_git(store_dir, "for-each-ref", "refs/zeroday/", NULL);
	g_assert_cmpstr(refs, ==, "");
}

static void test_missing_base(void)
{
	zd_autoptr(mailed) m = mailed_new(x1);
	struct repo_patch p = patch_of(m);
	g_autoptr(GError) error = NULL;
	char **commits = (char **)&error;
	char *why = (char *)"x";
	enum repo_apply_failure failure;

	g_assert_cmpint(repo_apply_series(store, "0123456789012345678901234567890123456789", &p, 1,
					  COMMITTER, COMMITTER_EMAIL, NOW, &commits, &failure, &why,
					  &error), ==, -1);
	g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_NOT_FOUND);
	g_assert_null(commits);
	g_assert_null(why);
	g_clear_error(&error);
	g_assert_cmpint(repo_apply_series(store, "HEAD", &p, 1, COMMITTER, COMMITTER_EMAIL, NOW,
					  &commits, &failure, &why, &error), ==, -1);
	g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID);
}

int main(int argc, char **argv)
{
	struct repo_limits limits = { 0 };
	g_autoptr(GError) error = NULL;
	int rc;

	testlib_init(&argc, &argv);
	g_setenv("GIT_COMMITTER_DATE", "@1700100000 +0000", TRUE);
	if (!repo_global_init(&limits, &error))
		g_error("%s", error->message);
	work = g_build_filename(testlib_scratch(), "work", NULL);
	mails = testlib_mkdir("mails");
	store_dir = g_build_filename(testlib_scratch(), "store.git", NULL);
	setup_history();
	store = repo_open(store_dir, &error);
	g_assert_no_error(error);

	g_test_add_func("/apply/series", test_series);
	g_test_add_func("/apply/offset", test_offset);
	g_test_add_func("/apply/conflict", test_conflict);
	for (size_t i = 0; i < G_N_ELEMENTS(hostile); i++) {
		g_autofree char *name = g_strdup_printf("/apply/hostile/%s", hostile[i].name);

		g_test_add_data_func(name, GSIZE_TO_POINTER(i), test_hostile);
	}
	g_test_add_func("/apply/limits", test_limits);
	g_test_add_func("/apply/plain", test_plain);
	g_test_add_func("/apply/author", test_author);
	g_test_add_func("/apply/keep", test_keep);
	g_test_add_func("/apply/missing-base", test_missing_base);
	rc = g_test_run();
	repo_free(store);
	return rc;
}
