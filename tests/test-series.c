/*
 * Series assembly against an in-memory store, the real templates and a
 * scratch git tree: list mails written out in full, stored through
 * ingest_mail() and handed to series_take() by inbox_dispatch(), then
 * series_start(). Covered: a cover letter and two patches make one
 * series row, which once complete is applied on its tree's branch and
 * gets one patch-test job per target; without its cover letter it waits
 * [mail] grace seconds for it first; parts that come out of order wait
 * and then join the same row; parts whose From a list or an archive
 * rewrote join their thread's series; a series missing a part waits,
 * and [mail] series-timeout after its last part is closed with a note,
 * its parts kept and nothing answered; a v2 supersedes a v1 only when
 * the same sender posts it, and a v2 posted in v1's thread is a series
 * of its own, its unversioned patches v2 by its cover letter; a mail
 * that is no patch (a plain mail, a review quoting a diff, a reply
 * proposing one) makes no series. A [PATCH 1/1] waits for its cover
 * letter and takes its base-commit; a cover letter after the start joins
 * its series; [PATCH 3/2] is part 3 of a waiting series and an untested,
 * unanswered follow-up to a started one; an unversioned follow-up in a
 * v3's thread, or a title used again months later, is no older version;
 * an in-body Subject: loses its tags in the commit; a patch to a Latin-1
 * file applies whatever its mail's charset; a series declaring
 * prerequisites gets no "use --base" reply.
 */
#include "autoconfig.h"

#include <string.h>

#include "bot/bot.h"
#include "bot/mailroom/inbox.h"
#include "bot/mailroom/ingest.h"
#include "bot/mailroom/series.h"
#include "engine/engine.h"
#include "tests/testbot.h"
#include "tests/testlib.h"

#define T0 1700000000
#define GRACE 300
#define TIMEOUT 3600
#define ANN "Ann Author <ann@example.com>"

struct fixture {
	char *dir;
	char *work;
	char *gitdir;
	char *base;   /* the head of kb/master: where the series applies */
	char *diff1;  /* patch 1/2's diff, as git prints it */
	char *diff2;  /* patch 2/2's */
	struct config *config;
	struct db *db;
	struct repo *repo;
	struct bot ctx;
	gint64 tree_id;
};

static void fixture_set_up(struct fixture *f, gconstpointer data)
{
	g_autofree char *name = g_path_get_basename(g_test_get_path());
	g_autofree char *mail = NULL;
	g_autofree char *c1 = NULL;
	g_autofree char *c2 = NULL;
	g_autoptr(GError) error = NULL;
	zd_autoptr(tree_row) t = NULL;
	struct branch_row b = { 0 };
	char *d;

	(void)data;
	f->dir = testlib_mkdir(name);
	f->work = g_build_filename(f->dir, "work", NULL);
	testlib_repo_init(f->work);
	g_free(testlib_commit(f->work, "b.c", "int two;\n", "b: start"));
	f->base = testlib_commit(f->work, "a.c", "int one;\n", "a: start");
	/* The two patches, made as their author made them, then taken back out of the tree. */
	c1 = testlib_commit(f->work, "a.c", "int one;\nint three;\n", "a: add three");
	c2 = testlib_commit(f->work, "b.c", "int two;\nint four;\n", "b: add four");
	d = testlib_git(f->work, "diff", f->base, c1, NULL);
	f->diff1 = g_strconcat(d, "\n", NULL);
	g_free(d);
	d = testlib_git(f->work, "diff", c1, c2, NULL);
	f->diff2 = g_strconcat(d, "\n", NULL);
	g_free(d);
	g_free(testlib_git(f->work, "reset", "-q", "--hard", f->base, NULL));
	f->gitdir = g_build_filename(f->work, ".git", NULL);
	f->repo = repo_open(f->gitdir, &error);
	g_assert_no_error(error);

	mail = g_strdup_printf("grace = %u\nseries-timeout = %u\n", GRACE, TIMEOUT);
	f->config = testbot_config(f->dir, NULL, mail);
	f->db = testbot_db();
	t = testbot_tree("kb", "master", "list@example.org", T0 - 86400);
	t->targets = g_strsplit("x86_64:defconfig", ",", -1);
	f->tree_id = testbot_tree_add(f->db, t);
	b = (struct branch_row){ .name = (char *)"master", .head = f->base,
				 .state = BRANCH_TESTED, .updated = T0 - 3600 };
	g_assert_true(db_tx_begin(f->db, &error));
	g_assert_true(db_branch_put(f->db, f->tree_id, &b, &error));
	g_assert_true(db_tx_commit(f->db, &error));
	g_assert_no_error(error);
	f->ctx = (struct bot){ .config = f->config, .db = f->db, .repo = f->repo,
			       .git_path = f->gitdir };
}

static void fixture_tear_down(struct fixture *f, gconstpointer data)
{
	(void)data;
	db_close(f->db);
	config_free(f->config);
	repo_free(f->repo);
	g_free(f->dir);
	g_free(f->work);
	g_free(f->gitdir);
	g_free(f->base);
	g_free(f->diff1);
	g_free(f->diff2);
}

/*
 * A list mail as git send-email writes it: @from, @subject, Message-ID
 * <@mid>, in reply to <@parent> (NULL: a thread of its own), with @diff
 * after the "---" line when not NULL.
 */
static char *list_mail(const char *from, const char *subject, const char *mid,
		       const char *parent, const char *diff)
{
	g_autofree char *thread = parent
		? g_strdup_printf("In-Reply-To: <%s>\nReferences: <%s>\n", parent, parent)
		: g_strdup("");

	return g_strdup_printf("From: %s\n"
			       "To: list@example.org\n"
			       "Subject: %s\n"
			       "Date: Tue, 14 Nov 2023 22:13:20 +0100\n"
			       "Message-Id: <%s>\n"
			       "%s"
			       "X-Mailer: git-send-email 2.39.5\n"
			       "MIME-Version: 1.0\n"
			       "Content-Type: text/plain; charset=UTF-8\n"
			       "Content-Transfer-Encoding: 8bit\n"
			       "\n"
			       "%s"
			       "%s%s"
			       "-- \n2.39.5\n\n",
			       from, subject, mid, thread,
			       diff ? "The change says why.\n\n"
				      "Signed-off-by: Ann Author <ann@example.com>\n"
				    : "Two small parts, one series.\n\n",
			       diff ? "---\n" : "", diff ? diff : "");
}

/* Stores @raw as a list delivers it, then lets the inbox hand it on, at @now. */
static void deliver(struct fixture *f, const char *raw, gint64 now)
{
	g_autoptr(GError) error = NULL;
	bool added = false, quarantined = true;

	g_assert_true(db_tx_begin(f->db, &error));
	g_assert_true(ingest_mail(f->db, f->config, "maildir:/lists/kb", 0, raw, strlen(raw), now,
				  &added, &quarantined, &error));
	g_assert_true(db_tx_commit(f->db, &error));
	g_assert_no_error(error);
	g_assert_true(added);
	g_assert_false(quarantined);
	g_assert_true(inbox_dispatch(&f->ctx, now, &error));
	g_assert_no_error(error);
}

/* Part @n of series @tag (0: its cover letter, the thread's root), from @from. */
static void deliver_part(struct fixture *f, const char *tag, guint n, const char *from,
			 gint64 now)
{
	g_autofree char *cover = g_strdup_printf("%s-0@example.com", tag);
	g_autofree char *mid = g_strdup_printf("%s-%u@example.com", tag, n);
	g_autofree char *raw = NULL;

	if (n == 0)
		raw = list_mail(from, "[PATCH 0/2] ab: two small parts", mid, NULL, NULL);
	else
		raw = list_mail(from, n == 1 ? "[PATCH 1/2] a: add three" : "[PATCH 2/2] b: add four",
				mid, cover, n == 1 ? f->diff1 : f->diff2);
	deliver(f, raw, now);
}

/* Every series, newest first. */
static GPtrArray *all_series(struct fixture *f)
{
	g_autoptr(GError) error = NULL;
	GPtrArray *list = db_series_list(f->db, -1, 100, &error);

	g_assert_no_error(error);
	return list ? list : g_ptr_array_new();
}

/* The only series there is, read back whole (NULL, failing the test, when not one). */
static struct series_row *only_series(struct fixture *f)
{
	g_autoptr(GPtrArray) list = all_series(f);
	g_autoptr(GError) error = NULL;
	struct series_row *s;

	g_assert_cmpuint(list->len, ==, 1);
	if (list->len != 1)
		return NULL;
	s = db_series_get(f->db, ((struct series_row *)list->pdata[0])->id, &error);
	g_assert_no_error(error);
	return s;
}

/* Runs series_start() at @now; returns how many series it left waiting. */
static unsigned start(struct fixture *f, gint64 now)
{
	g_autoptr(GError) error = NULL;
	unsigned waiting = G_MAXUINT;

	g_assert_true(series_start(&f->ctx, now, false, &waiting, &error));
	g_assert_no_error(error);
	return waiting;
}

static guint active_jobs(struct fixture *f, GPtrArray **out)
{
	g_autoptr(GError) error = NULL;
	GPtrArray *jobs = db_job_list(f->db, JOB_LIST_ACTIVE, 100, &error);
	guint n;

	g_assert_no_error(error);
	if (!jobs)
		return 0;
	n = jobs->len;
	if (out)
		*out = jobs;
	else
		g_ptr_array_unref(jobs);
	return n;
}

static guint outbox_rows(struct fixture *f)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) rows = db_outbox_list(f->db, -1, 100, &error);

	g_assert_no_error(error);
	return rows ? rows->len : 0;
}

/* Checks that @s holds parts 0..2 of series @tag, each under its own Message-ID. */
static void check_parts(const struct series_row *s, const char *tag)
{
	g_assert_cmpuint(s->parts->len, ==, 3);
	for (guint n = 0; n <= 2; n++) {
		const struct series_part *p = series_row_part(s, n);
		g_autofree char *mid = g_strdup_printf("%s-%u@example.com", tag, n);

		g_assert_nonnull(p);
		if (p)
			g_assert_cmpstr(p->message_id, ==, mid);
	}
}

/*
 * The cover letter and both patches: one series row, titled by the cover
 * letter; once complete it is applied on kb/master, chosen by its list,
 * and one patch-test job is queued for its last patch on the tree's target.
 */
static void test_complete(struct fixture *f, gconstpointer data)
{
	zd_autoptr(series_row) s = NULL;
	zd_autoptr(series_row) started = NULL;
	g_autoptr(GPtrArray) jobs = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree char *subject = NULL;

	(void)data;
	for (guint n = 0; n <= 2; n++)
		deliver_part(f, "s1", n, ANN, T0 + n);
	s = only_series(f);
	g_assert_nonnull(s);
	if (!s)
		return;
	g_assert_cmpint(s->state, ==, SERIES_WAITING);
	g_assert_cmpstr(s->sender, ==, "ann@example.com");
	g_assert_cmpstr(s->title, ==, "ab: two small parts");
	g_assert_cmpuint(s->version, ==, 1);
	g_assert_false(s->versioned);
	g_assert_cmpuint(s->total, ==, 2);
	g_assert_cmpint(s->last_part, ==, T0 + 2);
	check_parts(s, "s1");

	/* Complete, with its cover letter: started at once, no grace period. */
	g_assert_cmpuint(start(f, T0 + 3), ==, 0);
	started = db_series_get(f->db, s->id, &error);
	g_assert_nonnull(started);
	if (!started)
		return;
	g_assert_cmpstr(db_series_state_name(started->state), ==, "testing");
	g_assert_cmpstr(started->tree, ==, "kb");
	g_assert_cmpstr(started->base, ==, f->base);
	g_assert_cmpstr(started->base_how, ==, "list list@example.org (kb/master)");
	g_assert_cmpuint(started->bases->len, ==, 1);
	for (guint n = 1; n <= 2; n++) {
		const struct series_part *p = series_row_part(started, n);

		g_assert_true(p && p->commit && strlen(p->commit) == 40);
	}
	/* The applied commits are the author's patches: patch 2's subject is its title. */
	if (series_row_part(started, 2) && series_row_part(started, 2)->commit) {
		subject = testlib_git(f->work, "log", "-1", "--format=%s",
				      series_row_part(started, 2)->commit, NULL);
		g_assert_cmpstr(subject, ==, "b: add four");
	}
	g_assert_cmpuint(active_jobs(f, &jobs), ==, 1);
	if (jobs && jobs->len == 1) {
		const struct job_row *j = jobs->pdata[0];

		g_assert_cmpstr(db_job_kind_name(j->kind), ==, "patch-test");
		g_assert_cmpstr(j->tree, ==, "kb");
		g_assert_cmpstr(j->target, ==, "x86_64:defconfig");
		g_assert_cmpstr(j->commit, ==, series_row_part(started, 2)
					       ? series_row_part(started, 2)->commit : NULL);
		g_assert_cmpint(j->priority, ==, JOB_PATCH);
	}
	/* Started once: a second round queues nothing more. */
	g_assert_cmpuint(start(f, T0 + 4), ==, 0);
	g_assert_cmpuint(active_jobs(f, NULL), ==, 1);
	g_assert_cmpuint(outbox_rows(f), ==, 0);
}

/*
 * Both patches and no cover letter: complete, but it waits for the cover
 * letter [mail] grace seconds after its last part, then starts without
 * it, titled by patch 1.
 */
static void test_grace(struct fixture *f, gconstpointer data)
{
	zd_autoptr(series_row) s = NULL;
	g_autoptr(GError) error = NULL;
	gint64 id;

	(void)data;
	deliver_part(f, "g", 1, ANN, T0);
	deliver_part(f, "g", 2, ANN, T0 + 10);
	g_assert_cmpuint(start(f, T0 + 10 + GRACE - 1), ==, 1);
	s = only_series(f);
	g_assert_nonnull(s);
	if (!s)
		return;
	id = s->id;
	g_assert_cmpint(s->state, ==, SERIES_WAITING);
	g_assert_cmpstr(s->title, ==, "a: add three");
	g_assert_cmpuint(active_jobs(f, NULL), ==, 0);
	g_assert_cmpuint(start(f, T0 + 10 + GRACE), ==, 0);
	series_row_free(g_steal_pointer(&s));
	s = db_series_get(f->db, id, &error);
	g_assert_true(s && s->state == SERIES_TESTING && !series_row_part(s, 0));
	g_assert_cmpuint(active_jobs(f, NULL), ==, 1);
}

/* Patch 2 first, then the cover letter, then patch 1: one series, waiting until the last. */
static void test_out_of_order(struct fixture *f, gconstpointer data)
{
	zd_autoptr(series_row) s = NULL;
	zd_autoptr(series_row) waited = NULL;
	g_autoptr(GError) error = NULL;

	(void)data;
	deliver_part(f, "o", 2, ANN, T0);
	g_assert_cmpuint(start(f, T0 + GRACE + 1), ==, 1);
	deliver_part(f, "o", 0, ANN, T0 + GRACE + 2);
	g_assert_cmpuint(start(f, T0 + GRACE + 3), ==, 1);
	waited = only_series(f);
	g_assert_nonnull(waited);
	if (!waited)
		return;
	g_assert_cmpint(waited->state, ==, SERIES_WAITING);
	g_assert_cmpuint(waited->parts->len, ==, 2);
	g_assert_null(series_row_part(waited, 1));
	g_assert_cmpuint(active_jobs(f, NULL), ==, 0);

	deliver_part(f, "o", 1, ANN, T0 + GRACE + 4);
	s = only_series(f);
	g_assert_nonnull(s);
	if (!s)
		return;
	g_assert_cmpint(s->id, ==, waited->id);
	check_parts(s, "o");
	g_assert_cmpstr(s->title, ==, "ab: two small parts");
	g_assert_cmpuint(start(f, T0 + GRACE + 5), ==, 0);
	series_row_free(g_steal_pointer(&s));
	s = db_series_get(f->db, waited->id, &error);
	g_assert_true(s && s->state == SERIES_TESTING);
	g_assert_cmpuint(active_jobs(f, NULL), ==, 1);
}

/*
 * The patches' From rewritten, by a list (DMARC's "via") and by an
 * archive: each answers the cover letter, so all three are one series,
 * the cover letter's sender's.
 */
static void test_thread_senders(struct fixture *f, gconstpointer data)
{
	zd_autoptr(series_row) s = NULL;

	(void)data;
	deliver_part(f, "t", 0, ANN, T0);
	deliver_part(f, "t", 1, "\"Ann Author via Tree List\" <list@example.org>", T0 + 1);
	deliver_part(f, "t", 2, "Ann Author <ann-Xyz12@public.gmane.org>", T0 + 2);
	s = only_series(f);
	g_assert_nonnull(s);
	if (!s)
		return;
	g_assert_cmpstr(s->sender, ==, "ann@example.com");
	check_parts(s, "t");
	g_assert_cmpuint(start(f, T0 + 3), ==, 0);
	g_assert_cmpuint(active_jobs(f, NULL), ==, 1);
}

/*
 * Patch 2 never comes: the series waits past its grace period, and
 * [mail] series-timeout after its last part is closed as ignored, with
 * a note naming the patch that never came; its parts are kept, no job
 * is queued and nothing is answered.
 */
static void test_timeout(struct fixture *f, gconstpointer data)
{
	zd_autoptr(series_row) s = NULL;
	g_autoptr(GError) error = NULL;
	gint64 last = T0 + 1;
	gint64 id;

	(void)data;
	deliver_part(f, "lost", 0, ANN, T0);
	deliver_part(f, "lost", 1, ANN, last);
	g_assert_cmpuint(start(f, last + GRACE + 1), ==, 1);
	g_assert_cmpuint(start(f, last + TIMEOUT - 1), ==, 1);
	s = only_series(f);
	g_assert_nonnull(s);
	if (!s)
		return;
	g_assert_cmpint(s->state, ==, SERIES_WAITING);
	id = s->id;
	series_row_free(g_steal_pointer(&s));

	g_test_expect_message("bot", G_LOG_LEVEL_MESSAGE, "series *: \"ab: two small parts\" v1 "
			      "from ann@example.com closed, incomplete: *");
	g_assert_cmpuint(start(f, last + TIMEOUT), ==, 0);
	g_test_assert_expected_messages();
	s = db_series_get(f->db, id, &error);
	g_assert_nonnull(s);
	if (!s)
		return;
	g_assert_cmpstr(db_series_state_name(s->state), ==, "ignored");
	g_assert_cmpstr(s->note, ==, "incomplete: patch 2 of 2 never came, 3600 s after its "
				     "last part");
	g_assert_cmpuint(s->parts->len, ==, 2);
	g_assert_nonnull(series_row_part(s, 0));
	g_assert_nonnull(series_row_part(s, 1));
	g_assert_null(s->base);
	g_assert_cmpuint(active_jobs(f, NULL), ==, 0);
	g_assert_cmpuint(outbox_rows(f), ==, 0);
	/*
	 * Closed for good: the late patch 2 does not reopen it (nor start it);
	 * it waits in a series of its own, which lacks patch 1.
	 */
	deliver_part(f, "lost", 2, ANN, last + TIMEOUT + 1);
	g_assert_cmpuint(start(f, last + TIMEOUT + 2), ==, 1);
	series_row_free(g_steal_pointer(&s));
	s = db_series_get(f->db, id, &error);
	g_assert_true(s && s->state == SERIES_IGNORED && s->parts->len == 2);
	{
		g_autoptr(GPtrArray) both = all_series(f);

		g_assert_cmpuint(both->len, ==, 2);
	}
	g_assert_cmpuint(active_jobs(f, NULL), ==, 0);
}

/* A single patch, @version (0: none said) from @from, with Message-ID <@mid>. */
static void deliver_single(struct fixture *f, const char *from, guint version, const char *mid,
			   const char *parent, gint64 now)
{
	g_autofree char *subject = version
		? g_strdup_printf("[PATCH v%u] a: add three", version)
		: g_strdup("[PATCH] a: add three");
	g_autofree char *raw = list_mail(from, subject, mid, parent, f->diff1);

	deliver(f, raw, now);
}

static struct series_row *series_of(struct fixture *f, const char *mid)
{
	g_autoptr(GError) error = NULL;
	const char *ids[] = { mid, NULL };
	gint64 id = 0;

	g_assert_true(db_series_of_message_ids(f->db, ids, &id, &error));
	g_assert_no_error(error);
	g_assert_cmpint(id, >, 0);
	return id > 0 ? db_series_get(f->db, id, &error) : NULL;
}

/*
 * A v2 of the same title, or in v1's thread, supersedes v1 only when its
 * sender posted v1: another's v2 (a reviewer reposting it, in v1's
 * thread) is a series of its own and leaves v1 be; the author's v2 then
 * supersedes v1, and only v2 is started.
 */
static void test_v2_same_sender(struct fixture *f, gconstpointer data)
{
	zd_autoptr(series_row) v1 = NULL;
	zd_autoptr(series_row) other = NULL;
	zd_autoptr(series_row) v2 = NULL;

	(void)data;
	deliver_single(f, ANN, 0, "v1@example.com", NULL, T0);
	deliver_single(f, "Bob Reviewer <bob@example.net>", 2, "bob-v2@example.com",
		       "v1@example.com", T0 + 1);
	v1 = series_of(f, "v1@example.com");
	other = series_of(f, "bob-v2@example.com");
	g_assert_true(v1 && other);
	if (!v1 || !other)
		return;
	g_assert_cmpint(v1->id, !=, other->id);
	g_assert_cmpstr(other->sender, ==, "bob@example.net");
	g_assert_cmpuint(other->version, ==, 2);
	g_assert_cmpstr(db_series_state_name(v1->state), ==, "waiting");
	g_assert_cmpint(v1->superseded_by, ==, 0);

	deliver_single(f, ANN, 2, "v2@example.com", "v1@example.com", T0 + 2);
	series_row_free(g_steal_pointer(&v1));
	v1 = series_of(f, "v1@example.com");
	v2 = series_of(f, "v2@example.com");
	g_assert_true(v1 && v2);
	if (!v1 || !v2)
		return;
	g_assert_cmpuint(v2->version, ==, 2);
	g_assert_cmpstr(v2->sender, ==, "ann@example.com");
	g_assert_cmpstr(db_series_state_name(v1->state), ==, "superseded");
	g_assert_cmpint(v1->superseded_by, ==, v2->id);
	{
		g_autofree char *note = g_strdup_printf("superseded by v2 (series %" G_GINT64_FORMAT
							")", v2->id);

		g_assert_cmpstr(v1->note, ==, note);
	}
	/* Bob's is untouched by Ann's v2. */
	series_row_free(g_steal_pointer(&other));
	other = series_of(f, "bob-v2@example.com");
	g_assert_true(other && other->state == SERIES_WAITING);
	/* A single patch needs no cover letter: both v2s start, v1 never. */
	g_assert_cmpuint(start(f, T0 + 3), ==, 0);
	series_row_free(g_steal_pointer(&v1));
	v1 = series_of(f, "v1@example.com");
	g_assert_true(v1 && v1->state == SERIES_SUPERSEDED && !v1->base);
	series_row_free(g_steal_pointer(&v2));
	v2 = series_of(f, "v2@example.com");
	g_assert_true(v2 && v2->state == SERIES_TESTING);
}

/*
 * A v2 posted in reply to v1's cover letter, as b4 and git send-email
 * --in-reply-to do, its patches tagged "[PATCH 1/2]" without the version
 * in reply to "[PATCH v2 0/2]": a series of its own, v2 by its cover
 * letter, holding its three mails; v1, complete and waiting, superseded
 * and never started.
 */
static void test_v2_in_thread(struct fixture *f, gconstpointer data)
{
	g_autofree char *cover2 = list_mail(ANN, "[PATCH v2 0/2] ab: two small parts",
					    "w2-0@example.com", "w1-0@example.com", NULL);
	zd_autoptr(series_row) v1 = NULL;
	zd_autoptr(series_row) v2 = NULL;

	(void)data;
	for (guint n = 0; n <= 2; n++)
		deliver_part(f, "w1", n, ANN, T0 + n);
	deliver(f, cover2, T0 + 10);
	for (guint n = 1; n <= 2; n++) {
		g_autofree char *mid = g_strdup_printf("w2-%u@example.com", n);
		g_autofree char *raw = list_mail(ANN, n == 1 ? "[PATCH 1/2] a: add three"
							     : "[PATCH 2/2] b: add four",
						 mid, "w2-0@example.com", n == 1 ? f->diff1 : f->diff2);

		deliver(f, raw, T0 + 10 + n);
	}
	v1 = series_of(f, "w1-1@example.com");
	v2 = series_of(f, "w2-2@example.com");
	g_assert_true(v1 && v2);
	if (!v1 || !v2)
		return;
	g_assert_cmpint(v1->id, !=, v2->id);
	g_assert_cmpuint(v2->version, ==, 2);
	check_parts(v2, "w2");
	check_parts(v1, "w1");
	g_assert_cmpstr(db_series_state_name(v1->state), ==, "superseded");
	g_assert_cmpint(v1->superseded_by, ==, v2->id);
	g_assert_cmpuint(start(f, T0 + 20), ==, 0);
	series_row_free(g_steal_pointer(&v2));
	v2 = series_of(f, "w2-0@example.com");
	g_assert_true(v2 && v2->state == SERIES_TESTING);
	g_assert_cmpuint(active_jobs(f, NULL), ==, 1);
}

/* Moves kb/master to @head, as a poll would. */
static void move_master(struct fixture *f, const char *head)
{
	g_autoptr(GError) error = NULL;
	struct branch_row b = { .name = (char *)"master", .head = (char *)head,
				.state = BRANCH_TESTED, .updated = T0 - 60 };

	g_assert_true(db_tx_begin(f->db, &error));
	g_assert_true(db_branch_put(f->db, f->tree_id, &b, &error));
	g_assert_true(db_tx_commit(f->db, &error));
	g_assert_no_error(error);
}

/* Commits on kb/master that patch 1 no longer applies to; returns the new head. */
static char *master_moves_on(struct fixture *f)
{
	char *head = testlib_commit(f->work, "a.c", "int uno;\n", "a: rename");

	g_strstrip(head);
	move_master(f, head);
	return head;
}

/* @raw with @trailer before its "-- " signature, as git format-patch --base puts it. */
static char *with_trailer(const char *raw, const char *trailer)
{
	const char *sig = strstr(raw, "-- \n2.39.5");

	g_assert_nonnull(sig);
	return g_strdup_printf("%.*s%s\n%s", (int)(sig - raw), raw, trailer, sig);
}

/*
 * Patch @n on top of patch 2 (parts 1 and 2 as deliver_part() sends
 * them): its diff, made in a side branch and taken back out.
 */
static char *diff_after_two(struct fixture *f, guint n)
{
	g_autofree char *c2 = NULL;
	g_autofree char *c3 = NULL;
	g_autofree char *content = g_strdup_printf("int two;\nint four;\nint n%u;\n", n);
	g_autofree char *d = NULL;

	g_free(testlib_git(f->work, "checkout", "-q", "-b", "side", NULL));
	g_free(testlib_commit(f->work, "a.c", "int one;\nint three;\n", "a: add three"));
	c2 = testlib_commit(f->work, "b.c", "int two;\nint four;\n", "b: add four");
	c3 = testlib_commit(f->work, "b.c", content, "b: one more");
	d = testlib_git(f->work, "diff", c2, c3, NULL);
	g_free(testlib_git(f->work, "checkout", "-q", "master", NULL));
	return g_strconcat(d, "\n", NULL);
}

/*
 * "[PATCH 1/1]" first, then its cover letter "[PATCH 0/1]" with the only
 * base it applies to (git format-patch --cover-letter --base writes the
 * trailer in the cover letter alone): a numbered patch waits for its
 * cover letter as a longer series does, so both make one series, applied
 * on the trailer's commit, and nothing is answered.
 */
static void test_cover_late(struct fixture *f, gconstpointer data)
{
	g_autofree char *head = NULL;
	g_autofree char *p1 = list_mail(ANN, "[PATCH 1/1] a: add three", "c1-1@example.com",
					"c1-0@example.com", f->diff1);
	g_autofree char *c0 = list_mail(ANN, "[PATCH 0/1] a: one part", "c1-0@example.com",
					NULL, NULL);
	g_autofree char *trailer = g_strdup_printf("base-commit: %s", f->base);
	g_autofree char *cover = with_trailer(c0, trailer);
	zd_autoptr(series_row) s = NULL;

	(void)data;
	head = master_moves_on(f);
	deliver(f, p1, T0);
	g_assert_cmpuint(start(f, T0 + 1), ==, 1);
	deliver(f, cover, T0 + 2);
	g_assert_cmpuint(start(f, T0 + 3), ==, 0);
	s = only_series(f);
	g_assert_nonnull(s);
	if (!s)
		return;
	g_assert_cmpstr(db_series_state_name(s->state), ==, "testing");
	g_assert_nonnull(series_row_part(s, 0));
	g_assert_cmpstr(s->base, ==, f->base);
	g_assert_cmpstr(s->base_how, ==, "base-commit");
	g_assert_cmpstr(s->title, ==, "a: one part");
	g_assert_cmpuint(active_jobs(f, NULL), ==, 1);
	g_assert_cmpuint(outbox_rows(f), ==, 0);
}

/*
 * "[PATCH 1/1]" started without its cover letter once its grace period
 * was over; the cover letter that comes after is that series' part 0, not
 * a series of its own waiting for patches that came already: the test is
 * neither run again nor run twice.
 */
static void test_cover_after_start(struct fixture *f, gconstpointer data)
{
	g_autofree char *p1 = list_mail(ANN, "[PATCH 1/1] a: add three", "c2-1@example.com",
					"c2-0@example.com", f->diff1);
	g_autofree char *cover = list_mail(ANN, "[PATCH 0/1] a: one part", "c2-0@example.com",
					   NULL, NULL);
	zd_autoptr(series_row) s = NULL;

	(void)data;
	deliver(f, p1, T0);
	g_assert_cmpuint(start(f, T0 + GRACE), ==, 0);
	g_assert_cmpuint(active_jobs(f, NULL), ==, 1);
	deliver(f, cover, T0 + GRACE + 1);
	g_assert_cmpuint(start(f, T0 + GRACE + 2), ==, 0);
	g_assert_cmpuint(start(f, T0 + TIMEOUT * 2), ==, 0);
	s = only_series(f);
	g_assert_nonnull(s);
	if (!s)
		return;
	g_assert_cmpstr(db_series_state_name(s->state), ==, "testing");
	g_assert_nonnull(series_row_part(s, 0));
	g_assert_nonnull(series_row_part(s, 1));
	g_assert_cmpuint(s->bases->len, ==, 1);
	g_assert_cmpuint(active_jobs(f, NULL), ==, 1);
	g_assert_cmpuint(outbox_rows(f), ==, 0);
}

/*
 * "[PATCH 3/2]" in reply to the cover letter of a series still waiting
 * (patch 2 not in yet): part 3 of it, as b4 raises the count; the series
 * is applied as three patches and tested at the third.
 */
static void test_beyond_waiting(struct fixture *f, gconstpointer data)
{
	g_autofree char *diff3 = diff_after_two(f, 3);
	g_autofree char *p3 = list_mail(ANN, "[PATCH 3/2] b: one more", "s3-3@example.com",
					"s3-0@example.com", diff3);
	g_autoptr(GPtrArray) jobs = NULL;
	zd_autoptr(series_row) s = NULL;

	(void)data;
	deliver_part(f, "s3", 0, ANN, T0);
	deliver_part(f, "s3", 1, ANN, T0 + 1);
	deliver(f, p3, T0 + 2);
	g_assert_cmpuint(start(f, T0 + 3), ==, 1);
	deliver_part(f, "s3", 2, ANN, T0 + 4);
	g_assert_cmpuint(start(f, T0 + 5), ==, 0);
	s = only_series(f);
	g_assert_nonnull(s);
	if (!s)
		return;
	g_assert_cmpstr(db_series_state_name(s->state), ==, "testing");
	g_assert_cmpuint(s->total, ==, 3);
	g_assert_cmpuint(s->parts->len, ==, 4);
	g_assert_true(series_row_part(s, 3) && series_row_part(s, 3)->commit);
	g_assert_cmpuint(active_jobs(f, &jobs), ==, 1);
	if (jobs && jobs->len == 1 && series_row_part(s, 3))
		g_assert_cmpstr(((const struct job_row *)jobs->pdata[0])->commit, ==,
				series_row_part(s, 3)->commit);
	g_assert_cmpuint(outbox_rows(f), ==, 0);
}

/*
 * "[PATCH 3/2]" in reply to the cover letter of a series started
 * already: a follow-up, which on the series' base alone could only fail
 * to apply. It is recorded as not tested, with why; it is not answered
 * (no "use --base" reply), and the series is left as it was.
 */
static void test_beyond_started(struct fixture *f, gconstpointer data)
{
	g_autofree char *diff3 = diff_after_two(f, 3);
	g_autofree char *p3 = list_mail(ANN, "[PATCH 3/2] b: one more", "s4-3@example.com",
					"s4-0@example.com", diff3);
	zd_autoptr(series_row) first = NULL;
	zd_autoptr(series_row) follow = NULL;
	g_autoptr(GPtrArray) list = NULL;

	(void)data;
	for (guint n = 0; n <= 2; n++)
		deliver_part(f, "s4", n, ANN, T0 + n);
	g_assert_cmpuint(start(f, T0 + 3), ==, 0);
	deliver(f, p3, T0 + 4);
	g_assert_cmpuint(start(f, T0 + 5), ==, 0);
	g_assert_cmpuint(start(f, T0 + TIMEOUT * 2), ==, 0);
	list = all_series(f);
	g_assert_cmpuint(list->len, ==, 2);
	first = series_of(f, "s4-1@example.com");
	follow = series_of(f, "s4-3@example.com");
	g_assert_true(first && follow);
	if (!first || !follow)
		return;
	g_assert_cmpint(first->id, !=, follow->id);
	g_assert_cmpstr(db_series_state_name(first->state), ==, "testing");
	g_assert_cmpuint(first->total, ==, 2);
	g_assert_null(series_row_part(first, 3));
	g_assert_cmpstr(db_series_state_name(follow->state), ==, "ignored");
	{
		g_autofree char *note = g_strdup_printf("a follow-up to series %" G_GINT64_FORMAT
							" (patch 3 of 2), which had started before "
							"it came: not tested", first->id);

		g_assert_cmpstr(follow->note, ==, note);
	}
	g_assert_cmpuint(active_jobs(f, NULL), ==, 1);
	g_assert_cmpuint(outbox_rows(f), ==, 0);
}

/*
 * An unversioned "[PATCH] c: add c.c" from the same author, in reply to
 * the cover letter of her v3: a new change, not an older version of v3
 * (of another size, another title): tested, as v3 is.
 */
static void test_followup_not_older(struct fixture *f, gconstpointer data)
{
	static const char *const diff_c =
		"diff --git a/c.c b/c.c\nnew file mode 100644\nindex 0000000..1111111\n"
		"--- /dev/null\n+++ b/c.c\n@@ -0,0 +1 @@\n+int c;\n\n";
	g_autofree char *c0 = list_mail(ANN, "[PATCH v3 0/2] ab: two small parts",
					"k-0@example.com", NULL, NULL);
	g_autofree char *p1 = list_mail(ANN, "[PATCH v3 1/2] a: add three", "k-1@example.com",
					"k-0@example.com", f->diff1);
	g_autofree char *p2 = list_mail(ANN, "[PATCH v3 2/2] b: add four", "k-2@example.com",
					"k-0@example.com", f->diff2);
	g_autofree char *fu = list_mail(ANN, "[PATCH] c: add c.c", "k-fu@example.com",
					"k-0@example.com", diff_c);
	zd_autoptr(series_row) v3 = NULL;
	zd_autoptr(series_row) c = NULL;

	(void)data;
	deliver(f, c0, T0);
	deliver(f, p1, T0 + 1);
	deliver(f, p2, T0 + 2);
	g_assert_cmpuint(start(f, T0 + 3), ==, 0);
	deliver(f, fu, T0 + 100);
	g_assert_cmpuint(start(f, T0 + 101), ==, 0);
	v3 = series_of(f, "k-1@example.com");
	c = series_of(f, "k-fu@example.com");
	g_assert_true(v3 && c);
	if (!v3 || !c)
		return;
	g_assert_cmpint(v3->id, !=, c->id);
	g_assert_cmpstr(db_series_state_name(v3->state), ==, "testing");
	g_assert_cmpstr(db_series_state_name(c->state), ==, "testing");
	g_assert_cmpint(c->superseded_by, ==, 0);
	g_assert_cmpuint(active_jobs(f, NULL), ==, 2);
}

/*
 * One title from one sender: a version of the same change within
 * TITLE_WINDOW (v1 superseded by the v2 that came first), a change of
 * its own months later (tested).
 */
static void test_title_reused(struct fixture *f, gconstpointer data)
{
	const gint64 later = T0 + 90 * 86400;
	zd_autoptr(series_row) soon = NULL;
	zd_autoptr(series_row) months = NULL;

	(void)data;
	deliver_single(f, ANN, 2, "t-v2@example.com", NULL, T0);
	g_assert_cmpuint(start(f, T0 + 1), ==, 0);
	deliver_single(f, ANN, 0, "t-soon@example.com", NULL, T0 + 86400);
	soon = series_of(f, "t-soon@example.com");
	g_assert_true(soon && soon->state == SERIES_SUPERSEDED);
	deliver_single(f, ANN, 0, "t-months@example.com", NULL, later);
	months = series_of(f, "t-months@example.com");
	g_assert_true(months && months->state == SERIES_WAITING && !months->superseded_by);
	g_assert_cmpuint(start(f, later + 1), ==, 0);
	series_row_free(g_steal_pointer(&months));
	months = series_of(f, "t-months@example.com");
	g_assert_true(months && months->state == SERIES_TESTING);
}

/*
 * An in-body "Subject: [PATCH] ..." names the commit without its tags,
 * as `git am` takes it.
 */
static void test_in_body_subject(struct fixture *f, gconstpointer data)
{
	g_autofree char *raw = list_mail(ANN, "[PATCH] a: the mail's title", "ib@example.com",
					 NULL, f->diff1);
	g_autofree char *with = NULL;
	g_autofree char *subject = NULL;
	zd_autoptr(series_row) s = NULL;
	char *body;

	(void)data;
	body = strstr(raw, "\n\n");
	g_assert_nonnull(body);
	with = g_strdup_printf("%.*s\n\nSubject: [PATCH v2] a: the commit's title\n\n%s",
			       (int)(body - raw), raw, body + 2);
	deliver(f, with, T0);
	g_assert_cmpuint(start(f, T0 + 1), ==, 0);
	s = only_series(f);
	g_assert_true(s && series_row_part(s, 1) && series_row_part(s, 1)->commit);
	if (!s || !series_row_part(s, 1) || !series_row_part(s, 1)->commit)
		return;
	subject = testlib_git(f->work, "log", "-1", "--format=%s", series_row_part(s, 1)->commit,
			      NULL);
	g_assert_cmpstr(g_strstrip(subject), ==, "a: the commit's title");
}

/*
 * A patch to a file in ISO-8859-1, mailed as ISO-8859-1 and as UTF-8
 * (git send-email says UTF-8 whatever the patch holds): its diff keeps
 * the file's bytes, so it applies; its message is UTF-8.
 */
static void test_latin1_file(struct fixture *f, gconstpointer data)
{
	static const struct {
		const char *charset;
		const char *thanks; /* in that charset */
	} mails[] = {
		{ "ISO-8859-1", "Thanks, J\xf6rg." },
		{ "UTF-8", "Thanks, J\xc3\xb6rg." },
	};
	g_autofree char *head = NULL;
	g_autofree char *fixed = NULL;
	g_autofree char *d = NULL;

	(void)data;
	head = testlib_commit(f->work, "old.c", "/* (C) J\xf6rg M\xfcller */\nint teh;\n",
			      "old: add");
	g_strstrip(head);
	fixed = testlib_commit(f->work, "old.c", "/* (C) J\xf6rg M\xfcller */\nint the;\n",
			       "old: fix typo");
	d = testlib_git(f->work, "diff", head, fixed, NULL);
	g_free(testlib_git(f->work, "reset", "-q", "--hard", head, NULL));
	move_master(f, head);
	g_assert_nonnull(strstr(d, "J\xf6rg"));
	for (gsize i = 0; i < G_N_ELEMENTS(mails); i++) {
		g_autofree char *mid = g_strdup_printf("latin1-%zu@example.com", i);
		g_autofree char *raw = g_strdup_printf(
			"From: %s\nTo: list@example.org\nSubject: [PATCH] old: fix typo\n"
			"Date: Tue, 14 Nov 2023 22:13:20 +0100\nMessage-Id: <%s>\n"
			"MIME-Version: 1.0\nContent-Type: text/plain; charset=%s\n"
			"Content-Transfer-Encoding: 8bit\n\n"
			"Fix the typo. %s\n\nSigned-off-by: %s\n---\n%s\n-- \n2.39.5\n\n", ANN,
			mid, mails[i].charset, mails[i].thanks, ANN, d);
		zd_autoptr(series_row) s = NULL;
		g_autofree char *message = NULL;

		deliver(f, raw, T0 + 10 * (gint64)i);
		g_assert_cmpuint(start(f, T0 + 10 * (gint64)i + 1), ==, 0);
		s = series_of(f, mid);
		g_assert_nonnull(s);
		if (!s)
			continue;
		g_test_message("%s: %s", mails[i].charset, s->note ? s->note : "applied");
		g_assert_cmpstr(db_series_state_name(s->state), ==, "testing");
		if (!series_row_part(s, 1) || !series_row_part(s, 1)->commit)
			continue;
		message = testlib_git(f->work, "log", "-1", "--format=%B",
				      series_row_part(s, 1)->commit, NULL);
		/* The message in UTF-8 either way. */
		g_assert_nonnull(strstr(message, "\n\nFix the typo. Thanks, J\xc3\xb6rg.\n"));
	}
	g_assert_cmpuint(outbox_rows(f), ==, 0);
}

/*
 * A patch that says it needs others first (prerequisite-patch-id, as git
 * format-patch --base writes it; b4's prerequisite-change-id in a cover
 * letter) and applies to no base: recorded as needing prerequisites not
 * found, and not answered "use --base", which it did. Without the line,
 * the same patch gets that reply.
 */
static void test_prerequisites(struct fixture *f, gconstpointer data)
{
	g_autofree char *pre = NULL;
	g_autofree char *top = NULL;
	g_autofree char *d = NULL;
	g_autofree char *diff = NULL;
	static const char *const trailers[] = {
		"prerequisite-patch-id: 0123456789abcdef0123456789abcdef01234567\n",
		NULL, /* in the cover letter: b4's */
		"",
	};

	(void)data;
	g_free(testlib_git(f->work, "checkout", "-q", "-b", "side", NULL));
	pre = testlib_commit(f->work, "a.c", "int one;\nint pre;\n", "a: prerequisite");
	top = testlib_commit(f->work, "a.c", "int one;\nint pre;\nint top;\n", "a: top");
	d = testlib_git(f->work, "diff", pre, top, NULL);
	diff = g_strconcat(d, "\n", NULL);
	g_free(testlib_git(f->work, "checkout", "-q", "master", NULL));
	for (gsize i = 0; i < G_N_ELEMENTS(trailers); i++) {
		g_autofree char *mid = g_strdup_printf("pre%zu-1@example.com", i);
		g_autofree char *cover_mid = g_strdup_printf("pre%zu-0@example.com", i);
		g_autofree char *raw = list_mail(ANN, trailers[i] ? "[PATCH] a: top"
								  : "[PATCH 1/1] a: top",
						 mid, trailers[i] ? NULL : cover_mid, diff);
		g_autofree char *base = g_strdup_printf("base-commit: %s\n%s", f->base,
							trailers[i] ? trailers[i] : "");
		g_autofree char *mail = with_trailer(raw, base);
		zd_autoptr(series_row) s = NULL;
		gint64 now = T0 + 1000 * (gint64)i;

		if (!trailers[i]) {
			g_autofree char *c0 = list_mail(ANN, "[PATCH 0/1] a: top", cover_mid, NULL,
							NULL);
			g_autofree char *b4 = g_strdup_printf(
				"base-commit: %s\nchange-id: 20231114-top-0123456789ab\n"
				"prerequisite-change-id: 20231101-pre-ba9876543210:v3\n", f->base);
			g_autofree char *cover = with_trailer(c0, b4);

			deliver(f, cover, now);
		}
		deliver(f, mail, now + 1);
		g_assert_cmpuint(start(f, now + 2), ==, 0);
		s = series_of(f, mid);
		g_assert_nonnull(s);
		if (!s)
			continue;
		g_assert_cmpstr(db_series_state_name(s->state), ==, "could-not-apply");
		if (i < 2)
			g_assert_true(g_str_has_prefix(s->note, "needs prerequisite patches not found"));
		else
			g_assert_cmpstr(s->note, ==, "applies to none of the 1 bases tried");
		g_assert_cmpuint(outbox_rows(f), ==, i < 2 ? 0 : 1);
	}
}

/*
 * Mail that is no patch: a plain question, a review that quotes a diff
 * in reply to a patch, and a reply that proposes a diff of its own. Each
 * is taken by the inbox (marked done) and makes no series.
 */
static void test_not_a_patch(struct fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) series = NULL;
	g_autofree char *plain = list_mail("Carl <carl@example.net>", "a question about a.c",
					   "q@example.net", NULL, NULL);
	g_autofree char *quoted = NULL;
	g_autofree char *review = NULL;
	g_autofree char *proposal = NULL;
	gint64 n = -1;

	(void)data;
	{
		g_auto(GStrv) lines = g_strsplit(f->diff1, "\n", -1);
		g_autoptr(GString) q = g_string_new(NULL);

		for (char **l = lines; *l && **l; l++)
			g_string_append_printf(q, "> %s\n", *l);
		quoted = g_string_free(g_steal_pointer(&q), FALSE);
	}
	review = list_mail("Rev Iewer <rev@example.org>", "Re: [PATCH 1/2] a: add three",
			   "review@example.org", "s9-1@example.com", NULL);
	{
		/* The quote where a review puts it: in the body. */
		char *body = strstr(review, "\n\n");
		g_autofree char *head = g_strndup(review, (gsize)(body - review));

		g_free(review);
		review = g_strdup_printf("%s\n\n%s\n\nThis breaks the build.\n", head, quoted);
	}
	/* A reply that proposes a diff of its own, unquoted: a reply still. */
	proposal = list_mail("Rev Iewer <rev@example.org>", "Re: [PATCH 1/2] a: add three",
			     "proposal@example.org", "s9-1@example.com", f->diff2);
	deliver(f, plain, T0);
	deliver(f, review, T0 + 1);
	deliver(f, proposal, T0 + 2);
	series = all_series(f);
	g_assert_cmpuint(series->len, ==, 0);
	g_assert_true(db_mail_count(f->db, MAIL_DONE, &n, &error));
	g_assert_cmpint(n, ==, 3);
	g_assert_cmpuint(start(f, T0 + TIMEOUT * 2), ==, 0);
	g_assert_cmpuint(active_jobs(f, NULL), ==, 0);
}

int main(int argc, char **argv)
{
	struct repo_limits limits = { 0 };
	g_autoptr(GError) error = NULL;

	testlib_init(&argc, &argv);
	if (!repo_global_init(&limits, &error))
		g_error("%s", error->message);
	g_test_add("/series/complete", struct fixture, NULL, fixture_set_up, test_complete,
		   fixture_tear_down);
	g_test_add("/series/grace", struct fixture, NULL, fixture_set_up, test_grace,
		   fixture_tear_down);
	g_test_add("/series/out-of-order", struct fixture, NULL, fixture_set_up,
		   test_out_of_order, fixture_tear_down);
	g_test_add("/series/thread-senders", struct fixture, NULL, fixture_set_up,
		   test_thread_senders, fixture_tear_down);
	g_test_add("/series/timeout", struct fixture, NULL, fixture_set_up, test_timeout,
		   fixture_tear_down);
	g_test_add("/series/v2-same-sender", struct fixture, NULL, fixture_set_up,
		   test_v2_same_sender, fixture_tear_down);
	g_test_add("/series/v2-in-thread", struct fixture, NULL, fixture_set_up,
		   test_v2_in_thread, fixture_tear_down);
	g_test_add("/series/not-a-patch", struct fixture, NULL, fixture_set_up, test_not_a_patch,
		   fixture_tear_down);
	g_test_add("/series/cover-late", struct fixture, NULL, fixture_set_up, test_cover_late,
		   fixture_tear_down);
	g_test_add("/series/cover-after-start", struct fixture, NULL, fixture_set_up,
		   test_cover_after_start, fixture_tear_down);
	g_test_add("/series/beyond-waiting", struct fixture, NULL, fixture_set_up,
		   test_beyond_waiting, fixture_tear_down);
	g_test_add("/series/beyond-started", struct fixture, NULL, fixture_set_up,
		   test_beyond_started, fixture_tear_down);
	g_test_add("/series/followup-not-older", struct fixture, NULL, fixture_set_up,
		   test_followup_not_older, fixture_tear_down);
	g_test_add("/series/title-reused", struct fixture, NULL, fixture_set_up,
		   test_title_reused, fixture_tear_down);
	g_test_add("/series/in-body-subject", struct fixture, NULL, fixture_set_up,
		   test_in_body_subject, fixture_tear_down);
	g_test_add("/series/latin1-file", struct fixture, NULL, fixture_set_up, test_latin1_file,
		   fixture_tear_down);
	g_test_add("/series/prerequisites", struct fixture, NULL, fixture_set_up,
		   test_prerequisites, fixture_tear_down);
	return g_test_run();
}
