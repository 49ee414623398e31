/*
 * How bot/lab/culprit.c decides a culprit, against an in-memory store,
 * the real templates and a scratch git tree with a linear history whose
 * build results are recorded in the store (db_build_add()), so that
 * every bisection step is answered from the store as a build reused:
 * a new build error at the head is bisected to the first commit that
 * has it, stored as an open finding with its parent, and reported once;
 * compared with its parent instead (a rebasable tree), the job's commit
 * itself is the culprit. A step whose build is an infrastructure error
 * is never taken for bad: the bisection stops with BOT_ERROR_TEMPORARY,
 * nothing is stored, and once the build succeeds on a retry the culprit
 * is named. A boot finding is marked fixed by clean boots only when they
 * are enough for its rate: a flaky one is not fixed by 3 clean boots,
 * nor by boots that still show it; a reliable one is. A build finding
 * is fixed by the first commit that builds without it. And the fork
 * point a new branch's head is compared with: the nearest merge base
 * with the tested heads, the tree's --base branch first.
 */
#include "autoconfig.h"

#include <string.h>

#include "bot/bot.h"
#include "bot/lab/culprit.h"
#include "bot/lab/probe.h"
#include "engine/diag.h"
#include "engine/engine.h"
#include "tests/testbot.h"
#include "tests/testlib.h"

/*
 * The target: its configuration a file that does not exist, so that a
 * build the store does not hold fails for infrastructure at once.
 */
static char *target_spec;
#define TARGET target_spec
#define FP "00112233445566aa"
#define BOOT_FP "99887766554433bb"
/* The history: c[0] the root, c[1] .. c[N - 1] one file each; c[BAD] brings the error. */
#define N 7
#define BAD 3

struct fixture {
	char *dir;
	char *work;
	char *gitdir;
	char *c[N];
	struct config *config;
	struct db *db;
	struct repo *repo;
	struct bot ctx;
	gint64 tree_id;
};

static void fixture_set_up(struct fixture *f, gconstpointer data)
{
	g_autofree char *name = g_path_get_basename(g_test_get_path());
	g_autofree char *build = NULL;
	g_autoptr(GError) error = NULL;
	zd_autoptr(tree_row) t = NULL;

	(void)data;
	f->dir = testlib_mkdir(name);
	f->work = g_build_filename(f->dir, "work", NULL);
	testlib_repo_init(f->work);
	for (guint i = 0; i < N; i++) {
		g_autofree char *file = g_strdup_printf("f%u.c", i);
		g_autofree char *text = g_strdup_printf("int f%u;\n", i);
		g_autofree char *msg = g_strdup_printf("f%u: add", i);

		f->c[i] = testlib_commit(f->work, file, text, msg);
	}
	f->gitdir = g_build_filename(f->work, ".git", NULL);
	f->repo = repo_open(f->gitdir, &error);
	g_assert_no_error(error);
	build = g_strdup_printf("ccache = false\ntargets = %s\n", TARGET);
	f->config = testbot_config(f->dir, build, NULL);
	f->db = testbot_db();
	t = testbot_tree("kb", "master", "list@example.org", 1700000000);
	f->tree_id = testbot_tree_add(f->db, t);
	f->ctx = (struct bot){ .config = f->config, .db = f->db, .repo = f->repo,
			       .git_path = f->gitdir };
}

static void fixture_tear_down(struct fixture *f, gconstpointer data)
{
	(void)data;
	db_close(f->db);
	config_free(f->config);
	repo_free(f->repo);
	for (guint i = 0; i < N; i++)
		g_free(f->c[i]);
	g_free(f->dir);
	g_free(f->work);
	g_free(f->gitdir);
}

/* Records a build of @commit: ok, or failed with the error FP when @broken. */
static void store_build(struct fixture *f, const char *commit, bool broken)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(build_row) row = g_new0(struct build_row, 1);

	row->source = g_strdup("kb");
	row->commit = g_strdup(commit);
	row->target = g_strdup(TARGET);
	row->status = broken ? BUILD_FAILED : BUILD_OK;
	row->seconds = 1.0;
	row->created = 1700000000;
	row->diags = g_ptr_array_new_with_free_func((GDestroyNotify)diag_free);
	if (broken) {
		struct diag *d = g_new0(struct diag, 1);

		d->kind = DIAG_ERROR;
		d->checker = g_strdup("compiler");
		d->file = g_strdup("f3.c");
		d->line = 1;
		d->column = 5;
		d->message = g_strdup("'f3' redeclared as different kind of symbol");
		d->fingerprint = g_strdup(FP);
		g_ptr_array_add(row->diags, d);
	}
	g_assert_true(db_tx_begin(f->db, &error));
	g_assert_true(db_build_add(f->db, row, &error));
	g_assert_true(db_tx_commit(f->db, &error));
	g_assert_no_error(error);
}

/*
 * Records the builds of every commit but those in @skip (a mask of
 * indexes): broken from c[BAD] on. And of the head with each commit
 * reverted, as the bisection's revert check makes them: clean only with
 * c[BAD] reverted.
 */
static void store_history(struct fixture *f, guint skip)
{
	for (guint i = 0; i < N; i++) {
		g_autoptr(GError) error = NULL;
		g_autofree char *reverted = NULL;

		if (!(skip & (1u << i)))
			store_build(f, f->c[i], i >= BAD);
		if (i == 0)
			continue;
		g_assert_cmpint(repo_revert_on(f->repo, f->c[N - 1], f->c[i], &reverted, &error), ==,
				1);
		g_assert_no_error(error);
		if (reverted)
			store_build(f, reverted, i != BAD);
	}
}

/* The build job of the head, as the queue hands it out. */
static struct job_row head_job(struct fixture *f, const char *commit)
{
	return (struct job_row){
		.id = 1, .kind = JOB_KIND_BUILD, .tree_id = f->tree_id, .tree = (char *)"kb",
		.commit = (char *)commit, .target = TARGET, .priority = JOB_HEAD,
		.attempts = 1,
	};
}

/* Builds @commit against @against (NULL: its parent) through the probe, as a job does. */
static bool probe(struct fixture *f, const char *commit, const char *against,
		  struct probe_result *out, GError **error)
{
	const struct probe_request req = {
		.tree = "kb", .commit = commit, .target = TARGET, .against = against,
	};

	return probe_run(out, &f->ctx, &req, error);
}

static GPtrArray *open_findings(struct fixture *f)
{
	g_autoptr(GError) error = NULL;
	GPtrArray *rows = db_finding_open(f->db, f->tree_id, TARGET, &error);

	g_assert_no_error(error);
	return rows ? rows : g_ptr_array_new();
}

static guint outbox_count(struct fixture *f, enum outbox_kind kind)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) rows = db_outbox_list(f->db, -1, 100, &error);
	guint n = 0;

	g_assert_no_error(error);
	for (guint i = 0; rows && i < rows->len; i++)
		n += ((const struct outbox_row *)rows->pdata[i])->kind == kind;
	return n;
}

/*
 * The head against the last tested head c[0] (a non-rebasable tree):
 * the new error is bisected, from the store alone, to c[BAD], the first
 * commit that has it; an open finding names it and its parent, and one
 * report is queued. Bisected again (the job run twice), nothing more.
 */
static void test_first_bad(struct fixture *f, gconstpointer data)
{
	zd_auto(probe_result) built = { 0 };
	g_autoptr(GError) error = NULL;
	g_autoptr(GString) already = g_string_new(NULL);
	g_autoptr(GPtrArray) open = NULL;
	struct job_row job = head_job(f, f->c[N - 1]);
	const struct finding_row *fd;

	(void)data;
	store_history(f, 0);
	g_assert_true(probe(f, f->c[N - 1], f->c[0], &built, &error));
	g_assert_no_error(error);
	if (!built.build)
		return;
	g_assert_cmpint(built.build->verdict, ==, VERDICT_FAIL_NEW_ERROR);
	g_assert_cmpuint(built.build->fresh->len, ==, 1);
	g_assert_true(culprit_build_findings(&f->ctx, &job, built.build, f->c[0], already, &error));
	g_assert_no_error(error);
	g_assert_cmpstr(already->str, ==, "");
	open = open_findings(f);
	g_assert_cmpuint(open->len, ==, 1);
	if (open->len != 1)
		return;
	fd = open->pdata[0];
	g_assert_cmpstr(fd->culprit, ==, f->c[BAD]);
	g_assert_cmpstr(fd->parent, ==, f->c[BAD - 1]);
	g_assert_cmpstr(fd->head, ==, f->c[N - 1]);
	g_assert_cmpstr(fd->fingerprint, ==, FP);
	g_assert_cmpstr(db_finding_kind_name(fd->kind, fd->console), ==, "build-error");
	g_assert_cmpstr(db_finding_state_name(fd->state), ==, "open");
	g_assert_cmpfloat(fd->confidence, >=, 0.999);
	g_assert_cmpuint(outbox_count(f, OUTBOX_REPORT), ==, 1);

	g_assert_true(culprit_build_findings(&f->ctx, &job, built.build, f->c[0], already, &error));
	g_assert_no_error(error);
	g_clear_pointer(&open, g_ptr_array_unref);
	open = open_findings(f);
	g_assert_cmpuint(open->len, ==, 1);
	g_assert_cmpuint(outbox_count(f, OUTBOX_REPORT), ==, 1);
}

/* Records a build of @commit that has the warning WARN_FP @instances times. */
#define WARN_FP "0a1b2c3d4e5f6071"
static void store_warnings(struct fixture *f, const char *commit, unsigned instances)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(build_row) row = g_new0(struct build_row, 1);

	row->source = g_strdup("kb");
	row->commit = g_strdup(commit);
	row->target = g_strdup(TARGET);
	row->status = BUILD_OK;
	row->seconds = 1.0;
	row->created = 1700000000;
	row->diags = g_ptr_array_new_with_free_func((GDestroyNotify)diag_free);
	for (unsigned i = 0; i < instances; i++) {
		struct diag *d = g_new0(struct diag, 1);

		d->kind = DIAG_WARNING;
		d->checker = g_strdup("compiler");
		d->file = g_strdup("f0.c");
		d->line = 10 + 10 * i;
		d->column = 6;
		d->function = g_strdup("setup");
		d->message = g_strdup("unused variable 'tmp' [-Wunused-variable]");
		d->fingerprint = g_strdup(WARN_FP);
		g_ptr_array_add(row->diags, d);
	}
	g_assert_true(db_tx_begin(f->db, &error));
	g_assert_true(db_build_add(f->db, row, &error));
	g_assert_true(db_tx_commit(f->db, &error));
	g_assert_no_error(error);
}

/*
 * A second instance of a warning the base already has (same file,
 * function and message): what is new is the count, so a step shows it
 * when it has it more often than the base, and c[BAD], which brought
 * the second, is the culprit (by presence alone every commit would
 * show it).
 */
static void test_second_instance(struct fixture *f, gconstpointer data)
{
	zd_auto(probe_result) built = { 0 };
	g_autoptr(GError) error = NULL;
	g_autoptr(GString) already = g_string_new(NULL);
	g_autoptr(GPtrArray) open = NULL;
	struct job_row job = head_job(f, f->c[N - 1]);

	(void)data;
	for (guint i = 0; i < N; i++) {
		g_autofree char *reverted = NULL;

		store_warnings(f, f->c[i], i >= BAD ? 2 : 1);
		if (i == 0)
			continue;
		g_assert_cmpint(repo_revert_on(f->repo, f->c[N - 1], f->c[i], &reverted, &error), ==,
				1);
		g_assert_no_error(error);
		if (reverted)
			store_warnings(f, reverted, i == BAD ? 1 : 2);
	}
	g_assert_true(probe(f, f->c[N - 1], f->c[0], &built, &error));
	g_assert_no_error(error);
	if (!built.build)
		return;
	g_assert_cmpint(built.build->verdict, ==, VERDICT_NEW_DIAGNOSTICS);
	g_assert_cmpuint(built.build->fresh->len, ==, 1);
	g_assert_true(culprit_build_findings(&f->ctx, &job, built.build, f->c[0], already, &error));
	g_assert_no_error(error);
	open = open_findings(f);
	g_assert_cmpuint(open->len, ==, 1);
	if (open->len != 1)
		return;
	g_assert_cmpstr(((const struct finding_row *)open->pdata[0])->culprit, ==, f->c[BAD]);
}

/* Compared with its parent (a rebasable tree's commit): the commit itself, without a bisection. */
static void test_against_parent(struct fixture *f, gconstpointer data)
{
	zd_auto(probe_result) built = { 0 };
	g_autoptr(GError) error = NULL;
	g_autoptr(GString) already = g_string_new(NULL);
	g_autoptr(GPtrArray) open = NULL;
	struct job_row job = head_job(f, f->c[BAD]);
	zd_autoptr(finding_row) fd = NULL;

	(void)data;
	store_history(f, 0);
	g_assert_true(probe(f, f->c[BAD], NULL, &built, &error));
	g_assert_no_error(error);
	if (!built.build)
		return;
	g_assert_cmpstr(built.build->parent, ==, f->c[BAD - 1]);
	g_assert_true(culprit_build_findings(&f->ctx, &job, built.build, NULL, already, &error));
	g_assert_no_error(error);
	open = open_findings(f);
	g_assert_cmpuint(open->len, ==, 1);
	if (open->len != 1)
		return;
	fd = db_finding_get(f->db, ((const struct finding_row *)open->pdata[0])->id, &error);
	g_assert_true(fd && strcmp(fd->culprit, f->c[BAD]) == 0);
	g_assert_cmpfloat(fd ? fd->confidence : 0, ==, 1.0);
	/* The proof: the parent good, the commit bad. */
	g_assert_cmpuint(fd ? fd->steps->len : 0, ==, 2);
	g_assert_cmpuint(outbox_count(f, OUTBOX_REPORT), ==, 1);
}

/*
 * The builds of c[1] .. c[N - 2] are not stored, and building them
 * fails for infrastructure (this tree cannot even be configured): the
 * bisection is no verdict. It fails with BOT_ERROR_TEMPORARY naming the
 * build, no finding and no report are stored, and the infra-error build
 * is never reused as a result. Once the builds succeed (the job's retry),
 * the culprit is c[BAD].
 */
static void test_infra_not_bad(struct fixture *f, gconstpointer data)
{
	zd_auto(probe_result) built = { 0 };
	g_autoptr(GError) error = NULL;
	g_autoptr(GString) already = g_string_new(NULL);
	g_autoptr(GPtrArray) open = NULL;
	struct job_row job = head_job(f, f->c[N - 1]);
	guint middle = 0;
	bool ok;

	(void)data;
	for (guint i = 1; i < N - 1; i++)
		middle |= 1u << i;
	store_history(f, middle);
	g_assert_true(probe(f, f->c[N - 1], f->c[0], &built, &error));
	g_assert_no_error(error);
	if (!built.build)
		return;
	ok = culprit_build_findings(&f->ctx, &job, built.build, f->c[0], already, &error);
	g_assert_false(ok);
	g_assert_error(error, BOT_ERROR, BOT_ERROR_TEMPORARY);
	g_assert_true(error && g_str_has_prefix(error->message, "infra-error: build of "));
	g_test_message("%s", error ? error->message : "");
	g_clear_error(&error);
	open = open_findings(f);
	g_assert_cmpuint(open->len, ==, 0);
	g_assert_cmpuint(outbox_count(f, OUTBOX_REPORT), ==, 0);
	/* What it built is an infra-error: never found as a result to reuse. */
	for (guint i = 1; i < N - 1; i++) {
		zd_autoptr(build_row) found = NULL;

		g_assert_true(db_build_find(f->db, "kb", f->c[i], TARGET, &found, &error));
		g_assert_null(found);
	}

	/* The retry: the builds come out right. */
	for (guint i = 1; i < N - 1; i++)
		store_build(f, f->c[i], i >= BAD);
	g_assert_true(culprit_build_findings(&f->ctx, &job, built.build, f->c[0], already, &error));
	g_assert_no_error(error);
	g_clear_pointer(&open, g_ptr_array_unref);
	open = open_findings(f);
	g_assert_cmpuint(open->len, ==, 1);
	if (open->len == 1)
		g_assert_cmpstr(((const struct finding_row *)open->pdata[0])->culprit, ==,
				f->c[BAD]);
}

/* Stores an open boot finding @fp of c[BAD] that showed at @rate; returns its id. */
static gint64 add_boot_finding(struct fixture *f, const char *fp, double rate)
{
	g_autoptr(GError) error = NULL;
	struct finding_row row = {
		.branch = (char *)"master", .culprit = f->c[BAD], .parent = f->c[BAD - 1],
		.head = f->c[BAD], .target = TARGET, .kind = FINDING_BOOT,
		.console = CONSOLE_PANIC, .fingerprint = (char *)fp,
		.title = (char *)"Kernel panic - not syncing: f3", .failures = rate < 1.0 ? 1 : 3,
		.runs = 3, .intermittent = rate < 1.0, .rate = rate, .repro_commit = f->c[BAD],
		.repro_boots = 3, .confidence = 0.999,
	};
	bool added = false;

	g_assert_true(db_tx_begin(f->db, &error));
	g_assert_true(db_finding_add(f->db, f->tree_id, &row, &added, &error));
	g_assert_true(db_tx_commit(f->db, &error));
	g_assert_no_error(error);
	g_assert_true(added);
	return row.id;
}

static struct console_tally *tally_entry(const char *fingerprint, unsigned failures, unsigned runs)
{
	struct console_tally *t = g_new0(struct console_tally, 1);

	t->kind = CONSOLE_PANIC;
	t->title = g_strdup("Kernel panic - not syncing: f3");
	t->fingerprint = g_strdup(fingerprint);
	t->failures = failures;
	t->runs = runs;
	t->intermittent = failures < runs;
	return t;
}

static enum finding_state state_of(struct fixture *f, gint64 id)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(finding_row) row = db_finding_get(f->db, id, &error);

	g_assert_no_error(error);
	return row ? row->state : (enum finding_state)-1;
}

/*
 * A later head's clean boots fix a boot finding only when they would
 * have shown it: [boot] repeat (3) clean boots do not fix one that
 * showed once in 3 (it would take 9 to miss it with 5% odds, and the
 * head kept no image to boot more), boots that still show it never do;
 * a failure that showed every time is fixed by them.
 */
static void test_flaky_boot(struct fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) clean = g_ptr_array_new_with_free_func((GDestroyNotify)console_tally_free);
	g_autoptr(GPtrArray) shows = g_ptr_array_new_with_free_func((GDestroyNotify)console_tally_free);
	struct job_row job = head_job(f, f->c[N - 1]);
	struct build_row head_build = { .source = (char *)"kb", .commit = f->c[N - 1],
					.target = TARGET, .status = BUILD_OK };
	struct builder_result r = { .target = TARGET, .commit = f->c[N - 1],
				    .parent = f->c[N - 2], .build = &head_build,
				    .verdict = VERDICT_PASS };
	gint64 flaky, solid;

	(void)data;
	head_build.diags = g_ptr_array_new();
	/* Clean boots: another failure's tally only. */
	g_ptr_array_add(clean, tally_entry("0000000000000000", 1, 3));
	g_ptr_array_add(shows, tally_entry(BOOT_FP, 1, 3));
	flaky = add_boot_finding(f, BOOT_FP, 1.0 / 3.0);

	g_assert_true(culprit_mark_fixed(&f->ctx, &job, &r, shows, &error));
	g_assert_no_error(error);
	g_assert_cmpint(state_of(f, flaky), ==, FINDING_OPEN);
	g_assert_true(culprit_mark_fixed(&f->ctx, &job, &r, clean, &error));
	g_assert_no_error(error);
	g_assert_cmpint(state_of(f, flaky), ==, FINDING_OPEN);
	/* No boots at all (the head kept no image): nothing is fixed. */
	g_assert_true(culprit_mark_fixed(&f->ctx, &job, &r, NULL, &error));
	g_assert_cmpint(state_of(f, flaky), ==, FINDING_OPEN);

	/* Not flaky: 3 clean boots are proof enough; the flaky one stays open. */
	solid = add_boot_finding(f, "aabbccddeeff0011", 1.0);
	g_assert_cmpint(solid, !=, flaky);
	g_assert_true(culprit_mark_fixed(&f->ctx, &job, &r, clean, &error));
	g_assert_no_error(error);
	g_assert_cmpint(state_of(f, solid), ==, FINDING_FIXED);
	g_assert_cmpint(state_of(f, flaky), ==, FINDING_OPEN);
	{
		zd_autoptr(finding_row) row = db_finding_get(f->db, solid, &error);

		g_assert_cmpstr(row ? row->fixed_by : NULL, ==, f->c[N - 1]);
	}
	g_ptr_array_unref(head_build.diags);
}

/*
 * A build finding of c[BAD] at a later head that builds without it:
 * fixed, by the first commit that no longer shows it (bisected in
 * reverse from the store), not merely by the head.
 */
static void test_build_fixed(struct fixture *f, gconstpointer data)
{
	zd_auto(probe_result) built = { 0 };
	zd_auto(probe_result) later = { 0 };
	g_autoptr(GError) error = NULL;
	g_autoptr(GString) already = g_string_new(NULL);
	g_autoptr(GPtrArray) open = NULL;
	g_autofree char *fix = NULL;
	g_autofree char *after = NULL;
	struct job_row job = head_job(f, f->c[N - 1]);
	gint64 id = 0;

	(void)data;
	store_history(f, 0);
	g_assert_true(probe(f, f->c[N - 1], f->c[0], &built, &error));
	g_assert_true(built.build &&
		      culprit_build_findings(&f->ctx, &job, built.build, f->c[0], already, &error));
	g_assert_no_error(error);
	open = open_findings(f);
	g_assert_cmpuint(open->len, ==, 1);
	if (open->len != 1)
		return;
	id = ((const struct finding_row *)open->pdata[0])->id;

	fix = testlib_commit(f->work, "f3.c", "int f3_fixed;\n", "f3: fix");
	after = testlib_commit(f->work, "g.c", "int g;\n", "g: add");
	store_build(f, fix, false);
	store_build(f, after, false);
	g_assert_true(probe(f, after, NULL, &later, &error));
	g_assert_no_error(error);
	if (!later.build)
		return;
	job = head_job(f, after);
	g_assert_true(culprit_mark_fixed(&f->ctx, &job, later.build, NULL, &error));
	g_assert_no_error(error);
	g_assert_cmpint(state_of(f, id), ==, FINDING_FIXED);
	{
		zd_autoptr(finding_row) row = db_finding_get(f->db, id, &error);

		g_assert_cmpstr(row ? row->fixed_by : NULL, ==, fix);
	}
}

/* Records branch @name of tree @tree_id at @head, in @state. */
static void put_branch(struct fixture *f, gint64 tree_id, const char *name, const char *head,
		       enum branch_state state)
{
	g_autoptr(GError) error = NULL;
	const struct branch_row b = { .name = (char *)name, .head = (char *)head, .state = state,
				      .updated = 1700000000 };

	g_assert_true(db_tx_begin(f->db, &error));
	g_assert_true(db_branch_put(f->db, tree_id, &b, &error));
	g_assert_true(db_tx_commit(f->db, &error));
	g_assert_no_error(error);
}

/* culprit_fork_point() of a job of @commit, checked against @want (NULL: none known). */
static void check_fork(struct fixture *f, const char *commit, const char *want)
{
	g_autoptr(GError) error = NULL;
	struct job_row job = head_job(f, commit);
	g_autofree char *fork = culprit_fork_point(&f->ctx, &job, &error);

	g_assert_no_error(error);
	g_assert_cmpstr(fork, ==, want);
}

/*
 * Where a head first seen on its branch left known ground: none while
 * nothing is tested (its parent is the base then); the merge base with
 * the tree's tested heads, the nearest of several, a skipped branch not
 * counted; and the tree's --base branch before its own heads.
 */
static void test_fork_point(struct fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	g_autofree char *t1 = NULL, *t2 = NULL;
	zd_autoptr(tree_row) up = g_new0(struct tree_row, 1);
	zd_autoptr(tree_row) kb = NULL;

	(void)data;
	g_free(testlib_git(f->work, "checkout", "-q", "-b", "topic", f->c[2], NULL));
	t1 = testlib_commit(f->work, "t.c", "int t1;\n", "t: one");
	t2 = testlib_commit(f->work, "t.c", "int t2;\n", "t: two");
	g_free(testlib_git(f->work, "checkout", "-q", "master", NULL));

	check_fork(f, t2, NULL);
	put_branch(f, f->tree_id, "master", f->c[N - 1], BRANCH_TESTED);
	check_fork(f, t2, f->c[2]);
	/* A tested branch at t1 is nearer; a skipped one at t2's parent does not count. */
	put_branch(f, f->tree_id, "wip", t1, BRANCH_SKIPPED);
	check_fork(f, t2, f->c[2]);
	put_branch(f, f->tree_id, "near", t1, BRANCH_TESTED);
	check_fork(f, t2, t1);
	/* The job's commit itself tested on a branch: not a base of itself. */
	put_branch(f, f->tree_id, "topic", t2, BRANCH_TESTED);
	check_fork(f, t2, t1);

	/* Based on up/master (--base): its heads come first, however near kb's own. */
	up->name = g_strdup("up");
	up->url = g_strdup("git://example.org/up.git");
	up->branches = g_strsplit("master", ",", -1);
	up->blacklist = g_new0(char *, 1);
	up->recipients = g_new0(char *, 1);
	up->created = 1700000000;
	g_assert_true(db_tree_insert(f->db, up, &error));
	g_assert_no_error(error);
	put_branch(f, up->id, "master", f->c[1], BRANCH_TESTED);
	kb = db_tree_get(f->db, "kb", &error);
	g_assert_nonnull(kb);
	if (!kb)
		return;
	kb->base = g_strdup("up/master");
	g_assert_true(db_tree_update(f->db, kb, &error));
	g_assert_no_error(error);
	check_fork(f, t2, f->c[1]);
}

int main(int argc, char **argv)
{
	struct repo_limits limits = { 0 };
	g_autoptr(GError) error = NULL;
	int rc;

	testlib_init(&argc, &argv);
	if (!repo_global_init(&limits, &error))
		g_error("%s", error->message);
	target_spec = g_strdup_printf("x86_64:file=%s/absent.config", testlib_scratch());
	g_test_add("/culprit/first-bad", struct fixture, NULL, fixture_set_up, test_first_bad,
		   fixture_tear_down);
	g_test_add("/culprit/second-instance", struct fixture, NULL, fixture_set_up,
		   test_second_instance, fixture_tear_down);
	g_test_add("/culprit/against-parent", struct fixture, NULL, fixture_set_up,
		   test_against_parent, fixture_tear_down);
	g_test_add("/culprit/infra-not-bad", struct fixture, NULL, fixture_set_up,
		   test_infra_not_bad, fixture_tear_down);
	g_test_add("/culprit/flaky-boot", struct fixture, NULL, fixture_set_up, test_flaky_boot,
		   fixture_tear_down);
	g_test_add("/culprit/build-fixed", struct fixture, NULL, fixture_set_up, test_build_fixed,
		   fixture_tear_down);
	g_test_add("/culprit/fork-point", struct fixture, NULL, fixture_set_up, test_fork_point,
		   fixture_tear_down);
	rc = g_test_run();
	g_free(target_spec);
	return rc;
}
