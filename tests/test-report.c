/*
 * Reports rendered from the real templates against an in-memory store
 * and a tiny git history: a build error's subject, key lines of its body
 * and its attachments; its recipients (the author To; the committer, the
 * Signed-off-by people, the tree's lists and maintainers Cc; one address
 * once whatever its case; never the bot; at most [mail] cc-max); a
 * private tree's and an inconclusive finding's recipients; a culprit
 * missing from the store refused; the templates checked.
 */
#include "autoconfig.h"

#include <string.h>

#include "bot/bot.h"
#include "bot/mailroom/render.h"
#include "bot/mailroom/report.h"
#include "engine/engine.h"
#include "tests/testbot.h"
#include "tests/testlib.h"

#define MID "zeroday-f1-0123@example.org"

struct fixture {
	char *dir;
	char *work;
	char *parent;
	char *culprit;
	char *suspect;
	struct config *config;
	struct db *db;
	struct repo *repo;
	struct bot ctx;
};

/* @data: extra lines of [mail], or NULL. */
static void fixture_set_up(struct fixture *f, gconstpointer data)
{
	g_autofree char *base = g_path_get_basename(g_test_get_path());
	g_autofree char *gitdir = NULL;
	g_autoptr(GError) error = NULL;

	f->dir = testlib_mkdir(base);
	f->work = g_build_filename(f->dir, "work", NULL);
	testlib_repo_init(f->work);
	f->parent = testlib_commit(f->work, "a.c", "int a;\n", "a: start");
	{
		g_autofree char *file = g_build_filename(f->work, "a.c", NULL);

		g_assert_true(g_file_set_contents(file, "int a;\nint b = c;\n", -1, NULL));
	}
	g_free(testlib_git(f->work, "commit", "-q", "-a", "--author=Ann Author <ann@example.com>",
			   "-m", "a: add b",
			   "-m", "Signed-off-by: Ann Author <ANN@EXAMPLE.COM>\n"
				 "Signed-off-by: Sam Sign <sam@example.com>\n"
				 "Signed-off-by: Test Robot <Bot@Example.org>",
			   NULL));
	f->culprit = testlib_git(f->work, "rev-parse", "HEAD", NULL);
	g_free(testlib_git(f->work, "commit", "-q", "--allow-empty",
			   "--author=Sue Spect <sue@example.net>", "-m", "b: other", NULL));
	f->suspect = testlib_git(f->work, "rev-parse", "HEAD", NULL);
	gitdir = g_build_filename(f->work, ".git", NULL);
	f->repo = repo_open(gitdir, &error);
	g_assert_no_error(error);
	f->config = testbot_config(f->dir, NULL, data);
	f->db = testbot_db();
	f->ctx = (struct bot){ .config = f->config, .db = f->db, .repo = f->repo };
}

static void fixture_tear_down(struct fixture *f, gconstpointer data)
{
	(void)data;
	db_close(f->db);
	config_free(f->config);
	repo_free(f->repo);
	g_free(f->dir);
	g_free(f->work);
	g_free(f->parent);
	g_free(f->culprit);
	g_free(f->suspect);
}

/* The tree "kb", @private or not, mainline-like (@regzbot) or not. */
static gint64 add_tree_as(struct fixture *f, bool private, bool regzbot)
{
	zd_autoptr(tree_row) t = testbot_tree("kb", "master", "Tree List <list@example.org>",
					      1700000000);

	g_strfreev(t->recipients);
	t->recipients = g_strsplit("maint@example.org,SAM@example.com", ",", -1);
	t->private = private;
	t->regzbot = regzbot;
	return testbot_tree_add(f->db, t);
}

static gint64 add_tree(struct fixture *f, bool private)
{
	return add_tree_as(f, private, false);
}

/* Stores a build-error finding of the culprit and returns it read back. */
static struct finding_row *add_finding(struct fixture *f, gint64 tree, bool inconclusive)
{
	g_autoptr(GError) error = NULL;
	char *suspects[] = { f->culprit, f->suspect, NULL };
	struct finding_row row = {
		.branch = (char *)"master", .culprit = f->culprit, .parent = f->parent,
		.head = f->suspect, .target = (char *)"x86_64:defconfig",
		.kind = FINDING_BUILD_ERROR, .fingerprint = (char *)"fp1",
		.title = (char *)"a.c: 'c' undeclared", .file = (char *)"a.c", .line = 2,
		.column = 9, .diag_kind = DIAG_ERROR, .message = (char *)"'c' undeclared",
		.repro_commit = f->culprit,
		.state = inconclusive ? FINDING_INCONCLUSIVE : FINDING_OPEN,
		.suspects = inconclusive ? suspects : NULL,
		.reason = inconclusive ? (char *)"the revert did not apply" : NULL,
	};
	bool added = false;

	g_assert_true(db_tx_begin(f->db, &error));
	g_assert_true(db_finding_add(f->db, tree, &row, &added, &error));
	g_assert_true(db_tx_commit(f->db, &error));
	g_assert_no_error(error);
	g_assert_true(added);
	return db_finding_get(f->db, row.id, NULL);
}

/* Whether @text has @line as a whole line. */
static bool has_line(const char *text, const char *line)
{
	g_auto(GStrv) lines = g_strsplit(text ? text : "", "\n", -1);

	for (char **l = lines; *l; l++) {
		if (g_str_equal(*l, line))
			return true;
	}
	g_test_message("no line \"%s\" in:\n%s", line, text);
	return false;
}

/* @got, joined with ", ", is @want. */
static void check_list(GPtrArray *got, const char *want)
{
	g_autoptr(GString) s = g_string_new(NULL);

	for (guint i = 0; i < got->len; i++)
		g_string_append_printf(s, "%s%s", i ? ", " : "", (const char *)got->pdata[i]);
	g_assert_cmpstr(s->str, ==, want);
}

static bool has_attachment(const struct reply *r, const char *name)
{
	for (guint i = 0; i < r->attachments->len; i++) {
		const struct reply_attachment *a = r->attachments->pdata[i];

		if (g_str_equal(a->filename, name))
			return true;
	}
	return false;
}

/* A build error's report: subject, the body's key lines, recipients, headers. */
static void test_build_error(struct fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(finding_row) fr = add_finding(f, add_tree(f, false), false);
	g_autofree char *culprit_short = g_strndup(f->culprit, 12);
	g_autofree char *want = NULL;
	g_autofree char *raw = NULL;
	struct reply r;

	(void)data;
	g_assert_nonnull(fr);
	if (!fr)
		return;
	g_assert_true(report_finding(&r, &f->ctx, fr, MID, 1700000000, &error));
	g_assert_no_error(error);
	g_assert_cmpstr(r.subject, ==, "[kb:master] a.c:2:9: error: 'c' undeclared");
	g_assert_cmpstr(r.from, ==, "Test Robot <bot@example.org>");
	g_assert_cmpstr(r.message_id, ==, MID);
	g_assert_cmpint(r.date, ==, 1700000000);
	/* The author To; the committer, the other signer, the list, the maintainer Cc; once each. */
	check_list(r.to, "Ann Author <ann@example.com>");
	check_list(r.cc, "Test Committer <committer@example.org>, Sam Sign <sam@example.com>, "
			 "Tree List <list@example.org>, maint@example.org");
	g_assert_true(has_line(r.body, "Hi Ann Author,"));
	want = g_strdup_printf("commit %s (\"a: add b\") breaks the build of kb for", culprit_short);
	g_assert_true(g_str_has_prefix(r.body, "Hi Ann Author,\n\n") &&
		      strstr(r.body, want) != NULL);
	g_free(want);
	want = g_strdup_printf("head:     %s", f->suspect);
	g_assert_true(has_line(r.body, want));
	g_free(want);
	want = g_strdup_printf("commit:   %s", f->culprit);
	g_assert_true(has_line(r.body, want));
	g_free(want);
	want = g_strdup_printf("parent:   %s (builds without this error)", f->parent);
	g_assert_true(has_line(r.body, want));
	g_assert_true(has_line(r.body, "tree:     git://example.org/kb.git"));
	g_assert_true(has_line(r.body, "branch:   master"));
	g_assert_true(has_line(r.body, "target:   x86_64, defconfig (the config is attached)"));
	g_assert_true(has_line(r.body, "        make O=build ARCH=x86_64 defconfig && "
				       "make O=build ARCH=x86_64 -j$(nproc)"));
	g_assert_true(has_line(r.body, "The new error:"));
	g_assert_true(has_line(r.body, ">> a.c:2:9: error: 'c' undeclared"));
	/* The source line, from the culprit, marked. */
	g_assert_nonnull(strstr(r.body, "int b = c;"));
	/* The tags of a separate fix commit, in the words maintainers know. */
	g_assert_true(has_line(r.body, "If you fix the issue in a separate patch/commit (i.e. not "
				       "just a new"));
	g_assert_true(has_line(r.body, "version of the same patch/commit), kindly add following "
				       "tags:"));
	g_assert_true(has_line(r.body, "Reported-by: Test Robot <bot@example.org>"));
	g_assert_true(has_line(r.body, "Closes: https://lists.example.org/r/" MID));
	g_free(want);
	want = g_strdup_printf("Fixes: %s (\"a: add b\")", culprit_short);
	g_assert_true(has_line(r.body, want));
	/* Not a mainline-like tree: nothing for regzbot. */
	g_assert_null(strstr(r.body, "#regzbot"));
	/* No build stored: no config nor build log to attach. */
	g_assert_false(has_attachment(&r, "config"));
	g_assert_false(has_attachment(&r, "build.log"));
	raw = compose_message(&r, &error);
	g_assert_no_error(error);
	g_assert_nonnull(strstr(raw, "\nMessage-Id: <" MID ">\n"));
	g_assert_nonnull(strstr(raw, "\nAuto-Submitted: auto-generated\n"));
	reply_release(&r);
}

/* The report of a new build-error finding on a tree (@private or not), in *@r. */
static bool report_of(struct fixture *f, bool private, struct reply *r)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(finding_row) fr = add_finding(f, add_tree(f, private), false);

	g_assert_nonnull(fr);
	if (!fr)
		return false;
	g_assert_true(report_finding(r, &f->ctx, fr, MID, 1700000000, &error));
	g_assert_no_error(error);
	return error == NULL;
}

/* [mail] cc-max = 3: the author first, then the Cc in their order, cut at three in all. */
static void test_cc_max(struct fixture *f, gconstpointer data)
{
	struct reply r;

	(void)data;
	if (!report_of(f, false, &r))
		return;
	check_list(r.to, "Ann Author <ann@example.com>");
	check_list(r.cc, "Test Committer <committer@example.org>, Sam Sign <sam@example.com>");
	reply_release(&r);
}

/* A private tree's report goes To its maintainers only. */
static void test_private(struct fixture *f, gconstpointer data)
{
	struct reply r;

	(void)data;
	if (!report_of(f, true, &r))
		return;
	check_list(r.to, "maint@example.org, SAM@example.com");
	g_assert_cmpuint(r.cc->len, ==, 0);
	/* Its mail is not archived: no link that would never resolve. */
	g_assert_null(strstr(r.body, "\nCloses:"));
	reply_release(&r);
}

/* A --regzbot tree's verified regression carries regzbot's line. */
static void test_regzbot(struct fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(finding_row) fr = add_finding(f, add_tree_as(f, false, true), false);
	g_autofree char *culprit_short = g_strndup(f->culprit, 12);
	g_autofree char *want = g_strdup_printf("#regzbot introduced: %s", culprit_short);
	struct reply r;

	(void)data;
	g_assert_nonnull(fr);
	if (!fr)
		return;
	g_assert_true(report_finding(&r, &f->ctx, fr, MID, 1700000000, &error));
	g_assert_no_error(error);
	g_assert_true(has_line(r.body, want));
	reply_release(&r);
}

/* [mail] archive-list: copied on a report, right after the author. */
static void test_archive_list(struct fixture *f, gconstpointer data)
{
	struct reply r;

	(void)data;
	if (!report_of(f, false, &r))
		return;
	check_list(r.to, "Ann Author <ann@example.com>");
	check_list(r.cc, "archive@lists.example.org, Test Committer <committer@example.org>, "
			 "Sam Sign <sam@example.com>, Tree List <list@example.org>, "
			 "maint@example.org");
	reply_release(&r);
}

/*
 * A boot failure's report says how often it showed as seen, over the
 * boots of the commits that carry the culprit (the revert check aside),
 * and is called intermittent only when one of them came out clean.
 */
static void test_boot_seen(struct fixture *f, gconstpointer data)
{
	static const struct {
		unsigned culprit_shown; /* of 2 boots of the culprit */
		const char *kind, *words;
	} cases[] = {
		{ 2, "boot-failure", "fail at boot, in every one of 6 boots of the commits that carry it:" },
		{ 1, "boot-intermittent",
		  "fail at boot, now and then: in 5 of 6 boots of the commits that carry it:" },
	};
	gint64 tree = add_tree(f, false);

	(void)data;
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(GError) error = NULL;
		g_autoptr(GPtrArray) steps = g_ptr_array_new();
		struct finding_step head = { BISECT_ROLE_ROUTINE, f->suspect, NULL, BISECT_BAD, 3, 3 };
		struct finding_step parent = { BISECT_ROLE_SEARCH, f->parent, NULL, BISECT_GOOD, 2, 0 };
		/* The parent booted again in the next round: one step, "good 0/4". */
		struct finding_step again = { BISECT_ROLE_SEARCH, f->parent, NULL, BISECT_GOOD, 2, 0 };
		struct finding_step culprit = { BISECT_ROLE_SEARCH, f->culprit, NULL, BISECT_BAD, 2,
						cases[i].culprit_shown };
		/* The revert check's rounds, and a boot of the culprit between them. */
		struct finding_step revert = { BISECT_ROLE_REVERT, f->culprit, NULL, BISECT_GOOD, 2, 0 };
		struct finding_step own = { BISECT_ROLE_SEARCH, f->culprit, NULL, BISECT_BAD, 1, 1 };
		g_autofree char *fingerprint = g_strdup_printf("boot%zu", i);
		struct finding_row row = {
			.branch = (char *)"master", .culprit = f->culprit, .parent = f->parent,
			.head = f->suspect, .target = (char *)"x86_64:defconfig",
			.kind = FINDING_BOOT, .fingerprint = fingerprint,
			.title = (char *)"Kernel panic - not syncing: test", .failures = 3, .runs = 3,
			.excerpt = (char *)"Kernel panic - not syncing: test", .steps = steps,
			.repro_commit = f->culprit, .state = FINDING_OPEN, .rate = 0.86,
		};
		zd_autoptr(finding_row) fr = NULL;
		g_autofree char *body = NULL;
		bool added = false;
		struct reply r;

		g_ptr_array_add(steps, &head);
		g_ptr_array_add(steps, &parent);
		g_ptr_array_add(steps, &again);
		g_ptr_array_add(steps, &culprit);
		g_ptr_array_add(steps, &revert);
		g_ptr_array_add(steps, &own);
		g_ptr_array_add(steps, &revert);
		g_assert_true(db_tx_begin(f->db, &error));
		g_assert_true(db_finding_add(f->db, tree, &row, &added, &error));
		g_assert_true(db_tx_commit(f->db, &error));
		fr = db_finding_get(f->db, row.id, &error);
		g_assert_nonnull(fr);
		if (!fr)
			return;
		g_assert_true(report_finding(&r, &f->ctx, fr, MID, 1700000000, &error));
		g_assert_no_error(error);
		/* The words, whatever the wrapping; never the search's 86%. */
		body = g_strdelimit(g_strdup(r.body), "\n", ' ');
		g_test_message("case %zu: %s", i, cases[i].kind);
		g_assert_nonnull(strstr(body, cases[i].words));
		g_assert_null(strstr(body, "86%"));
		{
			g_autofree char *once = g_strdup_printf("%.12s good 0/4 (search)", f->parent);
			g_autofree char *twice = g_strdup_printf("%.12s good 0/2 (search)", f->parent);

			g_assert_nonnull(strstr(body, once));
			g_assert_null(strstr(body, twice));
			g_assert_nonnull(strstr(body, "in 6 steps, 14 boots"));
		}
		{
			/* The revert check is told whole: 4 boots, not its last round's 2. */
			g_autofree char *checked = g_strdup_printf(
				"Checked: the head with %.12s reverted: good, 0 of 4 boots showed it",
				f->culprit);

			g_assert_nonnull(strstr(body, checked));
		}
		/* Its revert check came out good: the culprit is shown to be one. */
		g_assert_nonnull(strstr(r.body, "\nFixes: "));
		reply_release(&r);
	}
}

/* An inconclusive finding blames nobody: the tree's people To, the suspects' authors Cc. */
static void test_inconclusive(struct fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(finding_row) fr = add_finding(f, add_tree(f, false), true);
	g_autofree char *suspect_short = NULL;
	struct reply r;

	(void)data;
	if (!fr)
		return;
	g_assert_true(report_finding(&r, &f->ctx, fr, MID, 1700000000, &error));
	g_assert_no_error(error);
	check_list(r.to, "Tree List <list@example.org>, maint@example.org, SAM@example.com");
	check_list(r.cc, "Ann Author <ann@example.com>, Sue Spect <sue@example.net>");
	suspect_short = g_strndup(f->suspect, 12);
	g_assert_nonnull(strstr(r.body, suspect_short));
	/* The reason, in a wrapped paragraph. */
	g_strdelimit(r.body, "\n", ' ');
	g_assert_nonnull(strstr(r.body, "the revert did not apply"));
	reply_release(&r);
}

/* A culprit the store does not hold: no report. */
static void test_missing_culprit(struct fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(finding_row) fr = add_finding(f, add_tree(f, false), false);
	struct reply r;

	(void)data;
	if (!fr)
		return;
	g_free(fr->culprit);
	fr->culprit = g_strdup("0123456789abcdef0123456789abcdef01234567");
	g_assert_false(report_finding(&r, &f->ctx, fr, MID, 1700000000, &error));
	g_assert_nonnull(error);
	reply_release(&r);
}

/* The shipped templates load; one with an unknown field is refused, naming its file. */
static void test_templates(struct fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	g_autofree char *src = g_build_filename(ZERODAY_SRCDIR, "templates", NULL);
	g_autofree char *bad = g_build_filename(f->dir, "templates", NULL);
	g_autoptr(GDir) d = g_dir_open(src, 0, NULL);
	const char *name;

	(void)data;
	g_assert_true(render_check_templates(src, &error));
	g_assert_no_error(error);
	g_assert_cmpint(g_mkdir_with_parents(bad, 0755), ==, 0);
	while (d && (name = g_dir_read_name(d))) {
		g_autofree char *from = g_build_filename(src, name, NULL);
		g_autofree char *to = g_build_filename(bad, name, NULL);
		g_autofree char *text = NULL;

		g_assert_true(g_file_get_contents(from, &text, NULL, NULL));
		if (g_str_equal(name, "build-error.txt")) {
			char *t = g_strconcat(text, "{{no_such_field}}\n", NULL);

			g_free(text);
			text = t;
		}
		g_assert_true(g_file_set_contents(to, text, -1, NULL));
	}
	g_assert_false(render_check_templates(bad, &error));
	g_assert_error(error, BOT_ERROR, BOT_ERROR_CONFIG);
	g_assert_true(error && strstr(error->message, "build-error") != NULL);
}

int main(int argc, char **argv)
{
	struct repo_limits limits = { 0 };
	g_autoptr(GError) error = NULL;

	testlib_init(&argc, &argv);
	if (!repo_global_init(&limits, &error))
		g_error("%s", error->message);
	g_test_add("/report/build-error", struct fixture, NULL, fixture_set_up, test_build_error,
		   fixture_tear_down);
	g_test_add("/report/cc-max", struct fixture, "cc-max = 3\n", fixture_set_up, test_cc_max,
		   fixture_tear_down);
	g_test_add("/report/boot-seen", struct fixture, NULL, fixture_set_up, test_boot_seen,
		   fixture_tear_down);
	g_test_add("/report/regzbot", struct fixture, NULL, fixture_set_up, test_regzbot,
		   fixture_tear_down);
	g_test_add("/report/archive-list", struct fixture, "archive-list = archive@lists.example.org\n",
		   fixture_set_up, test_archive_list, fixture_tear_down);
	g_test_add("/report/private", struct fixture, "archive-list = archive@lists.example.org\n",
		   fixture_set_up, test_private,
		   fixture_tear_down);
	g_test_add("/report/inconclusive", struct fixture, NULL, fixture_set_up,
		   test_inconclusive, fixture_tear_down);
	g_test_add("/report/missing-culprit", struct fixture, NULL, fixture_set_up,
		   test_missing_culprit, fixture_tear_down);
	g_test_add("/report/templates", struct fixture, NULL, fixture_set_up, test_templates,
		   fixture_tear_down);
	return g_test_run();
}
