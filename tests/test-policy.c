/*
 * The mail policy's decisions asked directly, against an in-memory store
 * and the real templates: a finding on a blacklisted branch not
 * reported (the blacklist read when asked); the muted left out of a
 * thread but a command's answer; the hourly and daily limits holding
 * mail back, a digest never, and each limit lifted when its window has
 * passed; which digests may be made in one round; a digest's content.
 * Nothing is queued or delivered here: tests/test-outbox.c does that.
 */
#include "autoconfig.h"

#include <string.h>

#include "bot/bot.h"
#include "bot/config.h"
#include "bot/mailroom/policy.h"
#include "bot/store/db.h"
#include "mail/address.h"
#include "tests/testbot.h"
#include "tests/testlib.h"

/* 2023-11-14 22:13:20 UTC: the tests' "now". */
#define T 1700000000

struct fixture {
	struct config *config;
	struct db *db;
	struct bot ctx;
	unsigned mails; /* add_mail()'s count, for unique Message-IDs */
};

/* @data: extra lines of [mail], or NULL. */
static void fixture_set_up(struct fixture *f, gconstpointer data)
{
	g_autofree char *base = g_path_get_basename(g_test_get_path());
	g_autofree char *dir = testlib_mkdir(base);
	zd_autoptr(tree_row) t = testbot_tree("kb", "master,for-*", NULL, T);

	f->config = testbot_config(dir, NULL, data);
	f->db = testbot_db();
	g_strfreev(t->blacklist);
	t->blacklist = g_strsplit("for-private", ",", -1);
	testbot_tree_add(f->db, t);
	f->ctx = (struct bot){ .config = f->config, .db = f->db };
	f->mails = 0;
}

static void fixture_tear_down(struct fixture *f, gconstpointer data)
{
	(void)data;
	db_close(f->db);
	config_free(f->config);
}

/*
 * Stores a mail of @kind to @to, queued at @when, whose recipient is in
 * @state since @when (as the outbox leaves it after a try); returns its
 * outbox id. Its Message-ID is "mN@example.org", N counting from 1.
 */
static gint64 add_mail(struct fixture *f, enum outbox_kind kind, const char *subject,
		       const char *to, enum rcpt_state state, gint64 when, const char *raw)
{
	static const enum outbox_state row_states[] = {
		[RCPT_PENDING] = OUTBOX_QUEUED, [RCPT_SENT] = OUTBOX_SENT,
		[RCPT_REFUSED] = OUTBOX_ERROR, [RCPT_HELD] = OUTBOX_HELD,
		[RCPT_DIGESTED] = OUTBOX_SENT,
	};
	g_autoptr(GError) error = NULL;
	g_autofree char *line = g_strdup_printf("to:%s", to);
	char *recipients[] = { line, NULL };
	char *no_refs[] = { NULL };
	g_autofree char *message_id = g_strdup_printf("m%u@example.org", ++f->mails);
	g_autofree char *text = raw ? NULL
		: g_strdup_printf("Subject: %s\nMessage-ID: <%s>\n\nbody\n", subject, message_id);
	struct outbox_row row = {
		.kind = kind, .message_id = message_id, .references = no_refs,
		.subject = (char *)subject, .recipients = recipients,
		.raw = raw ? (char *)raw : text, .state = row_states[state], .created = when,
	};
	bool added = false;

	g_assert_true(db_outbox_add(f->db, &row, &added, &error));
	g_assert_true(added);
	g_assert_true(db_rcpt_add(f->db, row.id, to, &error));
	if (state != RCPT_PENDING)
		g_assert_true(db_rcpt_set(f->db, row.id, to, state, when, NULL, 0, &error));
	g_assert_no_error(error);
	return row.id;
}

/* policy_may_send()'s answer for a mail of @kind to @to at @when. */
static bool may_send(struct fixture *f, enum outbox_kind kind, const char *to, gint64 when)
{
	g_autoptr(GError) error = NULL;
	bool ok = false;

	g_assert_true(policy_may_send(&f->ctx, kind, to, when, &ok, &error));
	g_assert_no_error(error);
	return ok;
}

/* policy_digests_due() at @when, joined with spaces (caller frees). */
static char *digests_due(struct fixture *f, gint64 when)
{
	g_autoptr(GError) error = NULL;
	g_auto(GStrv) due = policy_digests_due(&f->ctx, when, &error);

	g_assert_no_error(error);
	g_assert_nonnull(due);
	return due ? g_strjoinv(" ", due) : NULL;
}

/* policy_reports() for a finding of tree @tree on @branch. */
static bool reports(struct fixture *f, const char *tree, const char *branch)
{
	g_autoptr(GError) error = NULL;
	struct finding_row row = {
		.id = 7, .tree = (char *)tree, .branch = (char *)branch,
		.kind = FINDING_BUILD_ERROR,
	};
	bool report = false;

	g_assert_true(policy_reports(&f->ctx, &row, &report, &error));
	g_assert_no_error(error);
	return report;
}

/* A blacklisted branch is reported on to nobody; the blacklist is the store's as it is now. */
static void test_blacklist(struct fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(tree_row) t = NULL;

	(void)data;
	g_assert_false(reports(f, "kb", "for-private"));
	g_assert_true(reports(f, "kb", "for-next"));
	g_assert_true(reports(f, "kb", "master"));
	/* A tree removed since blacklists nothing, and a finding of no branch is reported. */
	g_assert_true(reports(f, "gone", "for-private"));
	g_assert_true(reports(f, "kb", NULL));

	/* Blacklisted while its job ran (#zeroday blacklist): not reported either. */
	t = db_tree_get(f->db, "kb", &error);
	g_assert_nonnull(t);
	if (!t)
		return;
	g_strfreev(t->blacklist);
	t->blacklist = g_strsplit("for-*", ",", -1);
	g_assert_true(db_tree_update(f->db, t, &error));
	g_assert_no_error(error);
	g_assert_false(reports(f, "kb", "for-next"));
	g_assert_true(reports(f, "kb", "master"));
}

/* A reply in thread @root to @to and @cc (NULL-terminated); reply_release() it. */
static void thread_reply(struct reply *r, const char *root, const char *const *to,
			 const char *const *cc)
{
	reply_init(r);
	if (root) {
		r->in_reply_to = g_strdup(root);
		g_ptr_array_add(r->references, g_strdup(root));
	}
	for (; to && *to; to++)
		g_ptr_array_add(r->to, g_strdup(*to));
	for (; cc && *cc; cc++)
		g_ptr_array_add(r->cc, g_strdup(*cc));
}

/*
 * A list is never muted: a mute recorded for a list's address (a tree's
 * list, or [mail] archive-list), as a list that rewrote a reader's From
 * once made zeroday record, leaves the list in; a person's mute still
 * counts.
 */
static void test_muted_list(struct fixture *f, gconstpointer data)
{
	static const char *const to[] = { "KB <List@Example.org>", NULL };
	static const char *const cc[] = { "joe@example.com", "arch@example.org", NULL };
	zd_autoptr(tree_row) t = testbot_tree("lk", "master", "list@example.org", T);
	g_autoptr(GError) error = NULL;
	g_autoptr(GError) cause = NULL;
	bool is_list = true;
	struct reply r;

	(void)data;
	testbot_tree_add(f->db, t);
	g_assert_true(policy_is_list(&f->ctx, "list@example.org", &is_list, &error));
	g_assert_true(is_list);
	g_assert_true(policy_is_list(&f->ctx, "arch@example.org", &is_list, &error));
	g_assert_true(is_list);
	g_assert_true(policy_is_list(&f->ctx, "joe@example.com", &is_list, &error));
	g_assert_false(is_list);
	g_assert_no_error(error);
	for (const char *const *a = (const char *const[]){ "list@example.org", "joe@example.com",
							  "arch@example.org", NULL }; *a; a++)
		g_assert_true(db_mute_add(f->db, *a, "root@example.org", T, &error));
	g_assert_no_error(error);

	thread_reply(&r, "root@example.org", to, cc);
	g_assert_true(policy_without_muted(&f->ctx, OUTBOX_FIXED, &r, &cause, &error));
	g_assert_no_error(error);
	g_assert_no_error(cause);
	g_assert_cmpuint(r.to->len, ==, 1);
	g_assert_cmpstr(r.to->len ? r.to->pdata[0] : NULL, ==, "KB <List@Example.org>");
	g_assert_cmpuint(r.cc->len, ==, 1);
	g_assert_cmpstr(r.cc->len ? r.cc->pdata[0] : NULL, ==, "arch@example.org");
	reply_release(&r);
}

/* Who muted a thread hears no more in it, but the answers to their own commands. */
static void test_muted(struct fixture *f, gconstpointer data)
{
	static const char *const to[] = { "Author <Author@example.org>", NULL };
	static const char *const cc[] = { "b@example.org", "c@example.org", NULL };
	g_autoptr(GError) error = NULL;
	g_autoptr(GError) cause = NULL;
	g_autofree char *key = address_key(to[0]);
	struct reply r;

	(void)data;
	g_assert_true(db_mute_add(f->db, key, "root@example.org", T, &error));
	g_assert_no_error(error);

	/* The muted To is left out; the first Cc takes its place. */
	thread_reply(&r, "root@example.org", to, cc);
	g_assert_true(policy_without_muted(&f->ctx, OUTBOX_FIXED, &r, &cause, &error));
	g_assert_no_error(error);
	g_assert_no_error(cause);
	g_assert_cmpuint(r.to->len, ==, 1);
	g_assert_cmpstr(r.to->len ? r.to->pdata[0] : NULL, ==, "b@example.org");
	g_assert_cmpuint(r.cc->len, ==, 1);
	g_assert_cmpstr(r.cc->len ? r.cc->pdata[0] : NULL, ==, "c@example.org");
	reply_release(&r);

	/* A command's answer goes to who asked, muted or not. */
	thread_reply(&r, "root@example.org", to, NULL);
	g_assert_true(policy_without_muted(&f->ctx, OUTBOX_COMMAND, &r, &cause, &error));
	g_assert_no_error(cause);
	g_assert_cmpuint(r.to->len, ==, 1);
	reply_release(&r);

	/* Another thread: nobody muted it. */
	thread_reply(&r, "other@example.org", to, NULL);
	g_assert_true(policy_without_muted(&f->ctx, OUTBOX_SERIES, &r, &cause, &error));
	g_assert_no_error(cause);
	g_assert_cmpuint(r.to->len, ==, 1);
	reply_release(&r);

	/* Nobody left: kept, with why it is not sent. */
	thread_reply(&r, "root@example.org", to, NULL);
	g_assert_true(policy_without_muted(&f->ctx, OUTBOX_SERIES, &r, &cause, &error));
	g_assert_no_error(error);
	g_assert_error(cause, BOT_ERROR, BOT_ERROR_USAGE);
	g_assert_cmpstr(cause ? cause->message : NULL, ==,
			"not sent: every recipient muted the thread");
	g_assert_cmpuint(r.to->len, ==, 0);
	reply_release(&r);
}

/*
 * [mail] max-per-hour = 1: after one mail sent, the next one to anybody
 * is held back, a digest is not; a mail sent exactly an hour ago no
 * longer counts.
 */
static void test_hour_limit(struct fixture *f, gconstpointer data)
{
	(void)data;
	g_assert_true(may_send(f, OUTBOX_REPORT, "a@example.org", T));
	add_mail(f, OUTBOX_REPORT, "first", "b@example.org", RCPT_SENT, T, NULL);
	g_assert_false(may_send(f, OUTBOX_REPORT, "a@example.org", T + 10));
	g_assert_false(may_send(f, OUTBOX_FIXED, "b@example.org", T + 10));
	g_assert_true(may_send(f, OUTBOX_DIGEST, "a@example.org", T + 10));
	/* Held or queued mail is not sent mail: it counts for nothing. */
	add_mail(f, OUTBOX_REPORT, "held", "a@example.org", RCPT_HELD, T + 20, NULL);
	add_mail(f, OUTBOX_REPORT, "queued", "a@example.org", RCPT_PENDING, T + 20, NULL);
	/* The hour passes. */
	g_assert_false(may_send(f, OUTBOX_REPORT, "a@example.org", T + 3599));
	g_assert_true(may_send(f, OUTBOX_REPORT, "a@example.org", T + 3600));
}

/*
 * [mail] max-per-recipient-day = 2: the third mail in 24 hours to one
 * address (compared without case) is held back, others' mail is not;
 * the day passes for each mail in turn.
 */
static void test_day_limit(struct fixture *f, gconstpointer data)
{
	(void)data;
	add_mail(f, OUTBOX_REPORT, "one", "a@example.org", RCPT_SENT, T, NULL);
	g_assert_true(may_send(f, OUTBOX_REPORT, "a@example.org", T + 4000));
	add_mail(f, OUTBOX_REPORT, "two", "a@example.org", RCPT_SENT, T + 4000, NULL);
	g_assert_false(may_send(f, OUTBOX_REPORT, "a@example.org", T + 8000));
	g_assert_false(may_send(f, OUTBOX_REPORT, "A@Example.ORG", T + 8000));
	g_assert_true(may_send(f, OUTBOX_REPORT, "b@example.org", T + 8000));
	g_assert_true(may_send(f, OUTBOX_DIGEST, "a@example.org", T + 8000));
	/* The first mail's day is over, the second's not. */
	g_assert_false(may_send(f, OUTBOX_REPORT, "a@example.org", T + 86399));
	g_assert_true(may_send(f, OUTBOX_REPORT, "a@example.org", T + 86400));
}

/*
 * [mail] max-per-hour = 1: of two addresses with held mail, one digest a
 * round (the digest counts against the hour); none while the hour's
 * mail is spent; one again when the hour has passed.
 */
static void test_digests_due(struct fixture *f, gconstpointer data)
{
	g_autofree char *none = NULL;
	g_autofree char *first = NULL;
	g_autofree char *spent = NULL;
	g_autofree char *later = NULL;

	(void)data;
	none = digests_due(f, T);
	g_assert_cmpstr(none, ==, "");
	add_mail(f, OUTBOX_REPORT, "held 1", "b@example.org", RCPT_HELD, T, NULL);
	add_mail(f, OUTBOX_REPORT, "held 2", "A@example.org", RCPT_HELD, T, NULL);
	first = digests_due(f, T);
	g_assert_cmpstr(first, ==, "a@example.org");
	add_mail(f, OUTBOX_DIGEST, "digest", "a@example.org", RCPT_SENT, T + 60, NULL);
	spent = digests_due(f, T + 120);
	g_assert_cmpstr(spent, ==, "");
	later = digests_due(f, T + 60 + 3600);
	g_assert_cmpstr(later, ==, "a@example.org");
}

/*
 * [mail] max-per-recipient-day = 1: an address that had its day's mail
 * waits for its digest; the others get theirs in the same round.
 */
static void test_digests_due_day(struct fixture *f, gconstpointer data)
{
	g_autofree char *due = NULL;
	g_autofree char *next_day = NULL;

	(void)data;
	add_mail(f, OUTBOX_REPORT, "sent", "a@example.org", RCPT_SENT, T, NULL);
	add_mail(f, OUTBOX_REPORT, "held 1", "a@example.org", RCPT_HELD, T, NULL);
	add_mail(f, OUTBOX_REPORT, "held 2", "b@example.org", RCPT_HELD, T, NULL);
	add_mail(f, OUTBOX_REPORT, "held 3", "c@example.org", RCPT_HELD, T, NULL);
	due = digests_due(f, T + 7200);
	g_assert_cmpstr(due, ==, "b@example.org c@example.org");
	next_day = digests_due(f, T + 86400);
	g_assert_cmpstr(next_day, ==, "a@example.org b@example.org c@example.org");
}

/*
 * A digest carries the mails held for its address, and no other: listed
 * in the body, each attached whole up to POLICY_DIGEST_ITEM_MAX bytes,
 * to that address only, under the Message-ID and date it is given.
 */
static void test_digest(struct fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) held = NULL;
	g_autoptr(GPtrArray) none = NULL;
	g_autofree char *big = g_strnfill(POLICY_DIGEST_ITEM_MAX + 100, 'x');
	gint64 report, fixed;
	struct reply out;

	(void)data;
	report = add_mail(f, OUTBOX_REPORT, "[kb:master] a.c:2:9: error: 'c' undeclared",
			  "a@example.org", RCPT_HELD, T, NULL);
	add_mail(f, OUTBOX_REPORT, "sent already", "a@example.org", RCPT_SENT, T + 10, NULL);
	add_mail(f, OUTBOX_REPORT, "someone else's", "b@example.org", RCPT_HELD, T + 20, NULL);
	fixed = add_mail(f, OUTBOX_FIXED, "Re: [kb:master] a.c:2:9: error: 'c' undeclared",
			 "a@example.org", RCPT_HELD, T + 60, big);

	none = policy_held_for(&f->ctx, "c@example.org", &error);
	g_assert_no_error(error);
	g_assert_cmpuint(none ? none->len : 99, ==, 0);
	held = policy_held_for(&f->ctx, "a@example.org", &error);
	g_assert_no_error(error);
	g_assert_nonnull(held);
	if (!held)
		return;
	g_assert_cmpuint(held->len, ==, 2);
	if (held->len != 2)
		return;
	g_assert_cmpint(((struct outbox_row *)held->pdata[0])->id, ==, report);
	g_assert_cmpint(((struct outbox_row *)held->pdata[1])->id, ==, fixed);

	g_assert_true(policy_digest(&out, &f->ctx, "a@example.org", held, "digest-1@example.org",
				    T + 7200, &error));
	g_assert_no_error(error);
	g_assert_cmpstr(out.subject, ==, "[Test Robot] 2 mails held back for a@example.org");
	g_assert_cmpstr(out.from, ==, "Test Robot <bot@example.org>");
	g_assert_cmpuint(out.to->len, ==, 1);
	g_assert_cmpstr(out.to->len ? out.to->pdata[0] : NULL, ==, "a@example.org");
	g_assert_cmpuint(out.cc->len, ==, 0);
	g_assert_cmpstr(out.message_id, ==, "digest-1@example.org");
	g_assert_cmpint(out.date, ==, T + 7200);
	g_assert_null(out.in_reply_to);
	g_assert_nonnull(strstr(out.body,
		"  mail-1.eml: [kb:master] a.c:2:9: error: 'c' undeclared\n"
		"      Message-ID <m1@example.org>, a report queued 2023-11-14 22:13 UTC\n"
		"  mail-2.eml: Re: [kb:master] a.c:2:9: error: 'c' undeclared\n"
		"      Message-ID <m4@example.org>, a fixed queued 2023-11-14 22:14 UTC\n"));
	g_assert_null(strstr(out.body, "sent already"));
	g_assert_null(strstr(out.body, "someone else's"));
	g_assert_cmpuint(out.attachments->len, ==, 2);
	if (out.attachments->len == 2) {
		const struct reply_attachment *a = out.attachments->pdata[0];
		const struct reply_attachment *b = out.attachments->pdata[1];

		g_assert_cmpstr(a->filename, ==, "mail-1.eml");
		g_assert_cmpstr(a->text, ==, ((struct outbox_row *)held->pdata[0])->raw);
		g_assert_cmpstr(b->filename, ==, "mail-2.eml");
		/* The big one is cut at the cap, not dropped. */
		g_assert_cmpuint(strlen(b->text), ==, POLICY_DIGEST_ITEM_MAX);
		g_assert_true(strncmp(b->text, big, POLICY_DIGEST_ITEM_MAX) == 0);
	}
	reply_release(&out);
}

int main(int argc, char **argv)
{
	testlib_init(&argc, &argv);
	g_test_add("/policy/blacklist", struct fixture, NULL, fixture_set_up, test_blacklist,
		   fixture_tear_down);
	g_test_add("/policy/muted-list", struct fixture, "archive-list = arch@example.org\n",
		   fixture_set_up, test_muted_list, fixture_tear_down);
	g_test_add("/policy/muted", struct fixture, NULL, fixture_set_up, test_muted,
		   fixture_tear_down);
	g_test_add("/policy/hour-limit", struct fixture, "max-per-hour = 1\n", fixture_set_up,
		   test_hour_limit, fixture_tear_down);
	g_test_add("/policy/day-limit", struct fixture, "max-per-recipient-day = 2\n",
		   fixture_set_up, test_day_limit, fixture_tear_down);
	g_test_add("/policy/digests-due", struct fixture, "max-per-hour = 1\n", fixture_set_up,
		   test_digests_due, fixture_tear_down);
	g_test_add("/policy/digests-due-day", struct fixture, "max-per-recipient-day = 1\n",
		   fixture_set_up, test_digests_due_day, fixture_tear_down);
	g_test_add("/policy/digest", struct fixture, NULL, fixture_set_up, test_digest,
		   fixture_tear_down);
	return g_test_run();
}
