/*
 * Which lines of a mail are commands (bot/mailroom/commands.h
 * commands_lines(), commands_html_lines()): tables of bodies and the
 * lines taken from each. Then command mails taken end to end, stored
 * and dispatched against an in-memory store and the real templates:
 * who the sender is (a quoted local part, a list that rewrote From),
 * who may test a series or a tree, when a series' replies give way to a
 * test command's answer, "plain text, please" and loops, dup and
 * private trees, and a subscription confirmed by its pasted line.
 */
#include "autoconfig.h"

#include <string.h>

#include "bot/bot.h"
#include "bot/mailroom/commands.h"
#include "bot/mailroom/inbox.h"
#include "bot/mailroom/ingest.h"
#include "bot/mailroom/outbox.h"
#include "bot/store/db.h"
#include "engine/repo.h"
#include "tests/testbot.h"
#include "tests/testlib.h"

/* 2023-11-14 22:13:20 UTC: the tests' "now". */
#define T 1700000000

static const struct lines_case {
	const char *what;
	const char *body;
	const char *taken; /* the lines taken, joined by '|' */
} lines_cases[] = {
	{ "one command", "Hi,\n\n#zeroday help\n\nThanks\n", "#zeroday help" },
	{ "a tab after the word", "#zeroday\tstatus kb\n", "#zeroday\tstatus kb" },
	{ "the word alone", "#zeroday\n", "#zeroday" },
	{ "CRLF line ends", "#zeroday help\r\n#zeroday status\r\n", "#zeroday help|#zeroday status" },
	{ "quoted", "> #zeroday help\n>#zeroday help\n> > #zeroday rerun\n", "" },
	{ "later in a line", "please run #zeroday help\nsee: #zeroday status\n", "" },
	{ "indented, as zeroday's own examples", "    #zeroday help\n\t#zeroday rerun\n", "" },
	{ "glued to another word", "#zerodayhelp\n#zeroday-help\n", "" },
	{ "upper case is not the marker", "#ZERODAY help\n#Zeroday help\n", "" },
	{ "a lookalike o (U+043E)", "#zer\xd0\xbe" "day help\n", "" },
	{ "a fullwidth number sign", "\xef\xbc\x83zeroday help\n", "" },
	{ "after a signature", "#zeroday help\n-- \nA\n#zeroday rerun\n", "#zeroday help" },
	{ "after an original pasted unquoted",
	  "#zeroday mute\n\n-----Original Message-----\nFrom: bot\n#zeroday rerun\n",
	  "#zeroday mute" },
	{ "after Outlook's line and From:",
	  "Agreed.\n\n________________________________\nFrom: Alice <alice@example.net>\n"
	  "Sent: Monday\nSubject: Re: report\n\n#zeroday invalid\n", "" },
	{ "underscores alone are no original", "#zeroday help\n__________\n#zeroday status\n",
	  "#zeroday help|#zeroday status" },
	{ "after Thunderbird's forward", "FYI\n\n-------- Forwarded Message --------\n"
	  "Subject: x\n\n#zeroday unsubscribe kb\n", "" },
	{ "after Gmail's forward", "#zeroday help\n---------- Forwarded message ---------\n"
	  "#zeroday status\n", "#zeroday help" },
	{ "after Apple Mail's forward", "Begin forwarded message:\n\nFrom: Alice\n\n#zeroday mute\n",
	  "" },
	{ "after an attribution and unquoted text",
	  "Thanks\n\nOn Mon, Alice wrote:\n#zeroday invalid\n", "" },
	{ "after an attribution wrapped on two lines",
	  "Thanks\r\nOn Mon, 13 Nov 2023 at 10:00, Alice <\r\nalice@example.net> wrote:\r\n\r\n"
	  "#zeroday invalid\r\n", "" },
	{ "an interleaved reply: the attribution is followed by quotes",
	  "On Mon, Test Robot wrote:\n> a report\n\n#zeroday invalid\n", "#zeroday invalid" },
	{ "the subscribe reply's line pasted back indented",
	  "    #zeroday confirm 0123456789abcdef0123456789abcdef  \n",
	  "#zeroday confirm 0123456789abcdef0123456789abcdef  " },
	{ "the help's indented confirm example is none",
	  "    #zeroday confirm <token>\n\t#zeroday confirm 0123\n", "" },
	{ "none", "Thanks for the report.\n", "" },
	{ "empty", "", "" },
};

static void test_lines(void)
{
	for (gsize i = 0; i < G_N_ELEMENTS(lines_cases); i++) {
		const struct lines_case *c = &lines_cases[i];
		g_auto(GStrv) lines = commands_lines(c->body, COMMANDS_MAX);
		g_autofree char *joined = g_strjoinv("|", lines);

		g_test_message("%s: [%s]", c->what, joined);
		g_assert_cmpstr(joined, ==, c->taken);
	}
}

static const struct lines_case html_cases[] = {
	{ "a paragraph", "<html><body><p>#zeroday help</p></body></html>", "#zeroday help" },
	{ "after a break, blanks before it",
	  "<div>Hi<br>\n   #zeroday status</div>", "#zeroday status" },
	{ "quoted in a blockquote", "<p>Thanks!</p><blockquote>#zeroday invalid</blockquote>", "" },
	{ "nested blockquotes",
	  "<BLOCKQUOTE type=cite><blockquote>x</blockquote>\n<p>#zeroday help</p></BLOCKQUOTE>", "" },
	{ "after a blockquote", "<blockquote>x</blockquote><div>#zeroday help</div>", "#zeroday help" },
	{ "later in a line", "<p>please run #zeroday help</p>", "" },
	{ "a quote mark as an entity", "<div>&gt; #zeroday help</div>", "" },
	{ "indented in pre, as zeroday's own signature", "<pre>-- \n    #zeroday help\n</pre>", "" },
	{ "inside a comment", "<!-- <p>#zeroday help</p> -->", "" },
	{ "an echo of zeroday's answer", "<p>Ticket received.</p><blockquote><pre>Hi,\n\n"
	  "&gt; #zeroday help\n\n-- \n    #zeroday help\n</pre></blockquote>", "" },
	{ "none", "<p>Thanks for the report.</p>", "" },
};

static void test_html_lines(void)
{
	for (gsize i = 0; i < G_N_ELEMENTS(html_cases); i++) {
		const struct lines_case *c = &html_cases[i];
		g_auto(GStrv) lines = commands_html_lines(c->body, COMMANDS_MAX);
		g_autofree char *joined = g_strjoinv("|", lines);

		g_test_message("%s: [%s]", c->what, joined);
		g_assert_cmpstr(joined, ==, c->taken);
	}
}

/* At most @max + 1 lines: enough to tell that there were too many. */
static void test_too_many(void)
{
	g_autoptr(GString) body = g_string_new(NULL);
	g_auto(GStrv) lines = NULL;

	for (int i = 0; i < 20; i++)
		g_string_append_printf(body, "#zeroday blacklist kb b%d\n", i);
	lines = commands_lines(body->str, COMMANDS_MAX);
	g_assert_cmpuint(g_strv_length(lines), ==, COMMANDS_MAX + 1);
	g_clear_pointer(&lines, g_strfreev);
	lines = commands_lines(body->str, 100);
	g_assert_cmpuint(g_strv_length(lines), ==, 20);
}

/* ---- Command mails, end to end ---- */

struct fixture {
	struct config *config;
	struct db *db;
	struct bot ctx;
	guint32 uid;
};

/*
 * The trees: "kb" (list list@example.org, maintainer maint@example.net)
 * and "secret", private, of nobody's but the administrator's.
 */
static void fixture_set_up(struct fixture *f, gconstpointer data)
{
	g_autofree char *base = g_path_get_basename(g_test_get_path());
	g_autofree char *dir = testlib_mkdir(base);
	zd_autoptr(tree_row) kb = testbot_tree("kb", "master", "list@example.org", T - 86400);
	zd_autoptr(tree_row) secret = testbot_tree("secret", "master", NULL, T - 86400);

	(void)data;
	/* testbot_config() writes these after [mail]: a section of their own. */
	f->config = testbot_config(dir, NULL, "[commands]\nadmins = adm@example.net\n"
				   "allowed-hosts = git.example.com\n");
	f->db = testbot_db();
	g_strfreev(kb->recipients);
	kb->recipients = g_strsplit("maint@example.net", ",", -1);
	testbot_tree_add(f->db, kb);
	secret->private = true;
	testbot_tree_add(f->db, secret);
	f->ctx = (struct bot){ .config = f->config, .db = f->db };
	f->uid = 0;
}

static void fixture_tear_down(struct fixture *f, gconstpointer data)
{
	(void)data;
	db_close(f->db);
	config_free(f->config);
}

/* Stores @raw as a mail that came at @now, and dispatches the inbox. */
static void deliver(struct fixture *f, const char *raw, gint64 now)
{
	g_autoptr(GError) error = NULL;
	bool added = false, quarantined = true;

	g_assert_true(db_tx_begin(f->db, &error));
	g_assert_true(ingest_mail(f->db, f->config, "maildir:/test", ++f->uid, raw, strlen(raw),
				  now, &added, &quarantined, &error));
	g_assert_true(db_tx_commit(f->db, &error));
	g_assert_no_error(error);
	g_assert_true(added);
	g_assert_false(quarantined);
	g_assert_true(inbox_dispatch(&f->ctx, now, &error));
	g_assert_no_error(error);
}

/*
 * A plain-text mail From @from To @to, Message-ID <@mid>, replying to
 * <@irt> (or NULL) with References @refs (or NULL), more header lines
 * @extra (or NULL), and @body (caller frees).
 */
static char *mail(const char *from, const char *to, const char *mid, const char *irt,
		  const char *refs, const char *extra, const char *body)
{
	g_autoptr(GString) s = g_string_new(NULL);

	g_string_printf(s, "From: %s\nTo: %s\nSubject: %s\nDate: Tue, 14 Nov 2023 22:13:20 +0100\n"
			"Message-Id: <%s>\n", from, to, irt ? "Re: x" : "x", mid);
	if (irt)
		g_string_append_printf(s, "In-Reply-To: <%s>\n", irt);
	if (refs)
		g_string_append_printf(s, "References: %s\n", refs);
	g_string_append_printf(s, "%sMIME-Version: 1.0\nContent-Type: text/plain; charset=UTF-8\n"
			       "\n%s", extra ? extra : "", body);
	return g_string_free(g_steal_pointer(&s), FALSE);
}

/* The outbox, oldest first (struct outbox_row). */
static GPtrArray *outbox(struct fixture *f)
{
	g_autoptr(GError) error = NULL;
	GPtrArray *rows = db_outbox_list(f->db, -1, 1000, &error);

	g_assert_no_error(error);
	return rows;
}

/* The reply to mail <@mid> (caller frees), or NULL when it has none. */
static struct outbox_row *reply_to(struct fixture *f, const char *mid)
{
	g_autoptr(GPtrArray) rows = outbox(f);

	for (guint i = 0; i < rows->len; i++) {
		struct outbox_row *r = rows->pdata[i];

		if (g_strcmp0(r->in_reply_to, mid) == 0)
			return g_ptr_array_steal_index(rows, i);
	}
	return NULL;
}

/* The text of @r's body, its lines joined by blanks (caller frees): what is read, in one line. */
static char *flat(const struct outbox_row *r)
{
	const char *body = r && r->raw ? strstr(r->raw, "\n\n") : NULL;
	char *text = g_strdup(body ? body + 2 : "");

	for (char *p = text; *p; p++) {
		if (*p == '\n')
			*p = ' ';
	}
	return text;
}

/* flat() of the reply to mail <@mid>; "" when it has none. */
static char *reply_text(struct fixture *f, const char *mid)
{
	zd_autoptr(outbox_row) r = reply_to(f, mid);

	return flat(r);
}

/* Whether mail <@mid> has a reply. */
static bool replied(struct fixture *f, const char *mid)
{
	zd_autoptr(outbox_row) r = reply_to(f, mid);

	return r != NULL;
}

/* The recipients of outbox row @r, as the outbox keeps them, joined by ' '. */
static char *rcpts(struct fixture *f, const struct outbox_row *r)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) list = db_rcpt_list(f->db, r->id, &error);
	g_autoptr(GString) s = g_string_new(NULL);

	g_assert_no_error(error);
	for (guint i = 0; list && i < list->len; i++)
		g_string_append_printf(s, "%s%s", i ? " " : "",
				       ((struct rcpt_row *)list->pdata[i])->address);
	return g_string_free(g_steal_pointer(&s), FALSE);
}

/* Asserts that mail <@mid> is a command mail in @state. */
static void assert_command_mail(struct fixture *f, const char *mid,
				enum command_mail_state state)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(mail_row) m = db_mail_by_message_id(f->db, mid, &error);
	enum command_mail_state got = COMMAND_MAIL_RUNNING;
	bool found = false;

	g_assert_nonnull(m);
	g_assert_true(db_command_mail_state(f->db, m->id, &got, &found, &error));
	g_assert_no_error(error);
	g_assert_true(found);
	g_assert_cmpint(got, ==, state);
}

/*
 * Stores a mail of zeroday's, sent, of @kind about finding @finding_id
 * (0: none), To @to; returns its Message-ID (caller frees).
 */
static char *bot_mail(struct fixture *f, enum outbox_kind kind, gint64 finding_id,
		      const char *to)
{
	g_autoptr(GError) error = NULL;
	g_autofree char *line = g_strdup_printf("to:%s", to);
	g_autofree char *mid = g_strdup_printf("zeroday-f%" G_GINT64_FORMAT "-%d@example.org",
					       finding_id, (int)kind);
	char *recipients[] = { line, NULL };
	char *no_refs[] = { NULL };
	struct outbox_row row = {
		.finding_id = finding_id, .kind = kind, .message_id = mid, .references = no_refs,
		.subject = (char *)"[kb] report", .recipients = recipients, .raw = (char *)"x",
		.state = OUTBOX_SENT, .created = T,
	};
	bool added = false;

	g_assert_true(db_tx_begin(f->db, &error));
	g_assert_true(db_outbox_add(f->db, &row, &added, &error));
	g_assert_true(db_rcpt_add(f->db, row.id, to, &error));
	g_assert_true(db_tx_commit(f->db, &error));
	g_assert_no_error(error);
	g_assert_true(added);
	return g_steal_pointer(&mid);
}

/* Adds an open finding of tree @tree titled @title; returns its id. */
static gint64 finding(struct fixture *f, const char *tree, const char *culprit,
		      const char *title)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(tree_row) t = db_tree_get(f->db, tree, &error);
	struct finding_row row = {
		.branch = (char *)"master", .culprit = (char *)culprit,
		.target = (char *)"x86_64:defconfig",
		.kind = FINDING_BUILD_WARNING, .fingerprint = (char *)culprit,
		.title = (char *)title, .state = FINDING_OPEN,
	};
	bool added = false;

	g_assert_nonnull(t);
	g_assert_true(db_tx_begin(f->db, &error));
	g_assert_true(db_finding_add(f->db, t->id, &row, &added, &error));
	g_assert_true(db_tx_commit(f->db, &error));
	g_assert_no_error(error);
	return row.id;
}

/*
 * "z<adm@example.net>"@evil.org is an address at evil.org whose local
 * part holds an administrator's address: it was once keyed as the
 * administrator, with the answer going to evil.org. Such a sender is
 * nobody's: no reply, no command run, the reason kept.
 */
static void test_quoted_local_part(struct fixture *f, gconstpointer data)
{
	g_autofree char *m1 = mail("Eve <\"z<adm@example.net>\"@evil.org>", "bot@example.org",
				   "s1@evil.org", NULL, NULL, NULL, "#zeroday status\n");
	g_autofree char *m2 = mail("\"z<victim@example.net>\"@evil.org", "bot@example.org",
				   "s2@evil.org", NULL, NULL, NULL,
				   "#zeroday subscribe https://git.example.com/evil/junk.git master\n");
	g_autoptr(GPtrArray) rows = NULL;

	(void)data;
	deliver(f, m1, T);
	deliver(f, m2, T + 1);
	rows = outbox(f);
	g_assert_cmpuint(rows->len, ==, 0);
	assert_command_mail(f, "s1@evil.org", COMMAND_MAIL_SILENT);
	assert_command_mail(f, "s2@evil.org", COMMAND_MAIL_SILENT);
}

static const char patch_body[] =
	"The change says why.\n\nSigned-off-by: Ann <ann@example.com>\n---\n"
	"diff --git a/a.c b/a.c\nindex 1111111..2222222 100644\n--- a/a.c\n+++ b/a.c\n"
	"@@ -1 +1,2 @@\n int one;\n+int three;\n-- \n2.39\n";

/* Ann's one-patch series, <p1@example.com>, posted to the list; returns its id. */
static gint64 ann_series(struct fixture *f)
{
	g_autoptr(GError) error = NULL;
	g_autofree char *raw = g_strdup_printf(
		"From: Ann <ann@example.com>\nTo: list@example.org\nSubject: [PATCH] a: add three\n"
		"Date: Tue, 14 Nov 2023 22:13:20 +0100\nMessage-Id: <p1@example.com>\n"
		"MIME-Version: 1.0\nContent-Type: text/plain; charset=UTF-8\n\n%s", patch_body);
	const char *const ids[] = { "p1@example.com", NULL };
	gint64 id = 0;

	deliver(f, raw, T);
	g_assert_true(db_series_of_message_ids(f->db, ids, &id, &error));
	g_assert_no_error(error);
	g_assert_cmpint(id, !=, 0);
	return id;
}

/* Sets *@claimed as the series' replies ask: commands_series_claimed() in a transaction. */
static bool claimed_by(struct fixture *f, gint64 series_id)
{
	g_autoptr(GError) error = NULL;
	bool claimed = true;

	g_assert_true(db_tx_begin(f->db, &error));
	g_assert_true(commands_series_claimed(&f->ctx, series_id, T + 100, &claimed, &error));
	g_assert_true(db_tx_commit(f->db, &error));
	g_assert_no_error(error);
	return claimed;
}

/*
 * A stranger cannot make a series' test theirs: References naming the
 * series and a mail of zeroday's (their own answer to "#zeroday help",
 * even one whose thread they forged into the series') put nobody on the
 * series' thread. The series' own sender's test takes the place of its
 * replies; an administrator's is answered apart and claims nothing.
 */
static void test_series_stranger(struct fixture *f, gconstpointer data)
{
	gint64 sid = ann_series(f);
	g_autofree char *help = mail("mallory@evil.org", "bot@example.org", "m1@evil.org",
				     "p1@example.com", "<p1@example.com>", NULL, "#zeroday help\n");
	zd_autoptr(outbox_row) answer = NULL;
	g_autofree char *refs = NULL;
	g_autofree char *test = NULL;
	g_autofree char *text = NULL;
	g_autofree char *admin = mail("adm@example.net", "bot@example.org", "a1@example.net",
				      "p1@example.com", "<p1@example.com>", NULL, "#zeroday test\n");
	g_autofree char *own = mail("Ann <ann@example.com>", "bot@example.org", "o1@example.com",
				    "p1@example.com", "<p1@example.com>", NULL, "#zeroday test\n");
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) waiting = NULL;

	(void)data;
	deliver(f, help, T + 1);
	answer = reply_to(f, "m1@evil.org");
	g_assert_nonnull(answer);
	refs = g_strdup_printf("<p1@example.com> <m1@evil.org> <%s>", answer->message_id);
	test = mail("mallory@evil.org", "bot@example.org", "m2@evil.org", answer->message_id, refs,
		    NULL, "#zeroday test\n");
	deliver(f, test, T + 2);
	text = reply_text(f, "m2@evil.org");
	g_assert_nonnull(strstr(text, "only the series' sender"));
	waiting = db_command_waiting(f->db, 0, sid, &error);
	g_assert_cmpuint(waiting->len, ==, 0);
	g_assert_false(claimed_by(f, sid));

	/* An administrator may ask; the series' replies still go out. */
	deliver(f, admin, T + 3);
	g_clear_pointer(&waiting, g_ptr_array_unref);
	waiting = db_command_waiting(f->db, 0, sid, &error);
	g_assert_cmpuint(waiting->len, ==, 1);
	g_assert_false(claimed_by(f, sid));
	g_assert_true(replied(f, "a1@example.net"));

	/* The sender's own test: one reply, the command's. */
	deliver(f, own, T + 4);
	g_assert_true(claimed_by(f, sid));
	g_assert_true(replied(f, "o1@example.com"));
}

/*
 * "#zeroday test <tree> <branch>" wants a maintainer, or a recipient of
 * a mail of zeroday's about that tree that the command replies to: a
 * stranger's own answer from zeroday is none.
 */
static void test_tree_stranger(struct fixture *f, gconstpointer data)
{
	g_autofree char *help = mail("mallory@evil.org", "bot@example.org", "m1@evil.org", NULL,
				     NULL, NULL, "#zeroday help\n");
	zd_autoptr(outbox_row) answer = NULL;
	g_autofree char *test = NULL;
	g_autofree char *text = NULL;
	g_autofree char *report = NULL;
	g_autofree char *ursula = NULL;
	g_autofree char *refs = NULL;
	gint64 fid = finding(f, "kb", "1111111111111111111111111111111111111111", "kb: a warning");

	(void)data;
	deliver(f, help, T);
	answer = reply_to(f, "m1@evil.org");
	g_assert_nonnull(answer);
	refs = g_strdup_printf("<%s>", answer->message_id);
	test = mail("mallory@evil.org", "bot@example.org", "m2@evil.org", answer->message_id, refs,
		    NULL, "#zeroday test kb master\n");
	deliver(f, test, T + 1);
	text = reply_text(f, "m2@evil.org");
	g_assert_nonnull(strstr(text, "only those on a report's thread and the maintainers of kb"));

	/* A recipient of kb's report may: refused only for the branch, not fetched here. */
	report = bot_mail(f, OUTBOX_REPORT, fid, "ursula@example.com");
	g_clear_pointer(&refs, g_free);
	refs = g_strdup_printf("<%s>", report);
	ursula = mail("ursula@example.com", "list@example.org", "u1@example.com", report, refs,
		      NULL, "#zeroday test kb master\n");
	deliver(f, ursula, T + 2);
	g_clear_pointer(&text, g_free);
	text = reply_text(f, "u1@example.com");
	g_assert_nonnull(strstr(text, "kb has no branch master fetched"));
}

/*
 * A list that rewrites From for DMARC ("Joe via KB <list@example.org>",
 * Reply-To Joe): Joe is the sender, unverified. The answer goes to Joe,
 * not the list; a mute (or any right) is refused, and nobody is muted;
 * Reply-To never makes an administrator; a list's From without one
 * Reply-To gets no answer; the list's copy of a mail sent to zeroday too
 * is left for the direct copy.
 */
static void test_list_from(struct fixture *f, gconstpointer data)
{
	g_autofree char *report = bot_mail(f, OUTBOX_REPORT, 0, "list@example.org");
	g_autofree char *refs = g_strdup_printf("<%s>", report);
	static const char list_fields[] = "Reply-To: Joe <joe@example.com>\nList-Id: <kb.example.org>\n"
					  "List-Post: <mailto:list@example.org>\n"
					  "Precedence: bulk\n";
	g_autofree char *mute = mail("Joe via KB <list@example.org>", "list@example.org",
				     "j1@example.com", report, refs, list_fields, "#zeroday mute\n");
	g_autofree char *status = mail("Adm via Other <other@lists.example>", "other@lists.example",
				       "j2@example.net", report, refs,
				       "Reply-To: adm@example.net\nList-Id: <other.lists.example>\n"
				       "List-Post: <mailto:other@lists.example>\n",
				       "#zeroday status\n");
	g_autofree char *bare = mail("KB <list@example.org>", "bot@example.org", "j3@example.com",
				     NULL, NULL, "List-Id: <kb.example.org>\n", "#zeroday help\n");
	zd_autoptr(outbox_row) r1 = NULL;
	zd_autoptr(outbox_row) r2 = NULL;
	g_autofree char *to1 = NULL;
	g_autofree char *to2 = NULL;
	g_autofree char *text1 = NULL;
	g_autofree char *text2 = NULL;
	g_autoptr(GError) error = NULL;
	bool muted = true;

	(void)data;
	deliver(f, mute, T + 5);
	r1 = reply_to(f, "j1@example.com");
	g_assert_nonnull(r1);
	to1 = rcpts(f, r1);
	g_assert_cmpstr(to1, ==, "joe@example.com");
	text1 = flat(r1);
	g_assert_nonnull(strstr(text1, "not taken from this copy"));
	g_assert_true(db_muted(f->db, "list@example.org", report, &muted, &error));
	g_assert_false(muted);
	g_assert_true(db_muted(f->db, "joe@example.com", report, &muted, &error));
	g_assert_false(muted);

	/*
	 * The List-Post address is the list's, though zeroday follows no tree
	 * of it (a reply in a report's thread that reached zeroday through
	 * the list alone).
	 */
	deliver(f, status, T + 6);
	r2 = reply_to(f, "j2@example.net");
	g_assert_nonnull(r2);
	to2 = rcpts(f, r2);
	g_assert_cmpstr(to2, ==, "adm@example.net");
	text2 = flat(r2);
	g_assert_nonnull(strstr(text2, "kb "));
	g_assert_null(strstr(text2, "secret"));

	deliver(f, bare, T + 7);
	g_assert_false(replied(f, "j3@example.com"));
	assert_command_mail(f, "j3@example.com", COMMAND_MAIL_SILENT);
	g_assert_no_error(error);

	/*
	 * Sent to zeroday and the list: the list's copy, first, is left for
	 * the direct one, which is Joe's own and mutes him.
	 */
	{
		g_autofree char *via = mail("Joe via KB <list@example.org>", "bot@example.org",
					    "j4@example.com", report, refs, list_fields,
					    "#zeroday mute\n");
		g_autofree char *direct = mail("Joe <joe@example.com>", "bot@example.org",
					       "j4@example.com", report, refs,
					       "Cc: list@example.org\n", "#zeroday mute\n");
		zd_autoptr(outbox_row) r4 = NULL;
		g_autofree char *to4 = NULL;
		g_autofree char *text4 = NULL;

		deliver(f, via, T + 8);
		g_assert_false(replied(f, "j4@example.com"));
		deliver(f, direct, T + 9);
		r4 = reply_to(f, "j4@example.com");
		g_assert_nonnull(r4);
		to4 = r4 ? rcpts(f, r4) : NULL;
		g_assert_cmpstr(to4, ==, "joe@example.com");
		text4 = r4 ? flat(r4) : NULL;
		g_assert_null(text4 ? strstr(text4, "not taken from this copy") : "x");
		g_assert_true(db_muted(f->db, "joe@example.com", report, &muted, &error));
		g_assert_true(muted);
		g_assert_no_error(error);
	}
}

/*
 * "Plain text, please" is for an HTML mail with a command its sender
 * wrote: not one quoting a command in a blockquote, not a reply to
 * zeroday's own answer (an HTML auto-responder's echo), not bulk mail.
 */
static void test_html(struct fixture *f, gconstpointer data)
{
	static const char html_head[] =
		"From: %s\nTo: bot@example.org\nSubject: Re: help\n"
		"Date: Tue, 14 Nov 2023 22:13:20 +0100\nMessage-Id: <%s>\n%s%s%s"
		"MIME-Version: 1.0\nContent-Type: text/html; charset=UTF-8\n\n%s\n";
	g_autofree char *quoted = g_strdup_printf(html_head, "bob@corp.example", "h1@corp.example",
						  "", "", "",
						  "<p>Thanks!</p><blockquote>#zeroday invalid"
						  "</blockquote>");
	g_autofree char *first = g_strdup_printf(html_head, "desk@helpdesk.example",
						 "d0@helpdesk.example", "", "", "",
						 "<p>#zeroday help</p>");
	zd_autoptr(outbox_row) please = NULL;
	g_autofree char *echo = NULL;
	g_autofree char *irt = NULL;
	g_autofree char *text = NULL;
	g_autofree char *bulk = mail("robot@corp.example", "bot@example.org", "b1@corp.example",
				     NULL, NULL, "Precedence: bulk\n", "#zeroday help\n");
	g_autofree char *junk = mail("robot@corp.example", "bot@example.org", "b2@corp.example",
				     NULL, NULL, "Precedence: junk\nList-Id: <l.example>\n",
				     "#zeroday help\n");
	g_autofree char *listed = mail("ann@example.com", "bot@example.org", "b3@example.com",
				       NULL, NULL, "Precedence: bulk\nList-Id: <l.example>\n",
				       "#zeroday help\n");
	g_autoptr(GPtrArray) rows = NULL;

	(void)data;
	deliver(f, quoted, T);
	rows = outbox(f);
	g_assert_cmpuint(rows->len, ==, 0);

	deliver(f, first, T + 1);
	please = reply_to(f, "d0@helpdesk.example");
	g_assert_nonnull(please);
	text = flat(please);
	g_assert_nonnull(strstr(text, "plain text, please"));
	irt = g_strdup_printf("In-Reply-To: <%s>\nReferences: <%s>\n", please->message_id,
			      please->message_id);
	echo = g_strdup_printf(html_head, "desk@helpdesk.example", "d1@helpdesk.example", irt, "",
			       "", "<p>#zeroday help</p>");
	deliver(f, echo, T + 60);
	g_assert_false(replied(f, "d1@helpdesk.example"));
	assert_command_mail(f, "d1@helpdesk.example", COMMAND_MAIL_SILENT);

	/* RFC 3834: bulk mail is a machine's, but for a list's copy of a person's. */
	deliver(f, bulk, T + 120);
	deliver(f, junk, T + 121);
	deliver(f, listed, T + 122);
	assert_command_mail(f, "b1@corp.example", COMMAND_MAIL_SILENT);
	assert_command_mail(f, "b2@corp.example", COMMAND_MAIL_SILENT);
	g_assert_false(replied(f, "b1@corp.example"));
	g_assert_true(replied(f, "b3@example.com"));
}

/*
 * A private tree's finding reads as none to who may not see it, for dup
 * (which once showed its title and merged into it) and for rerun; and a
 * finding is a duplicate only of one of its own tree.
 */
static void test_dup(struct fixture *f, gconstpointer data)
{
	gint64 f1 = finding(f, "kb", "1111111111111111111111111111111111111111", "kb: a warning");
	gint64 f2 = finding(f, "secret", "2222222222222222222222222222222222222222",
			    "secret: embargoed use-after-free in foo_ioctl()");
	gint64 f3 = finding(f, "kb", "3333333333333333333333333333333333333333", "kb: the same");
	g_autofree char *report = bot_mail(f, OUTBOX_REPORT, f1, "ursula@example.com");
	g_autofree char *refs = g_strdup_printf("<%s>", report);
	g_autofree char *b1 = g_strdup_printf("#zeroday dup %" G_GINT64_FORMAT "\n", f2);
	g_autofree char *b2 = g_strdup_printf("#zeroday rerun %" G_GINT64_FORMAT "\n", f2);
	g_autofree char *b3 = g_strdup_printf("#zeroday dup %" G_GINT64_FORMAT "\n", f3);
	g_autofree char *m1 = mail("ursula@example.com", "list@example.org", "u1@example.com",
				   report, refs, NULL, b1);
	g_autofree char *m2 = mail("ursula@example.com", "bot@example.org", "u2@example.com",
				   NULL, NULL, NULL, b2);
	g_autofree char *m4 = mail("adm@example.net", "bot@example.org", "u4@example.net",
				   report, refs, NULL, b1);
	g_autofree char *m3 = mail("ursula@example.com", "list@example.org", "u3@example.com",
				   report, refs, NULL, b3);
	g_autofree char *t1 = NULL, *t2 = NULL, *t3 = NULL, *t4 = NULL;
	g_autofree char *none = g_strdup_printf("no finding %" G_GINT64_FORMAT " ", f2);
	g_autoptr(GError) error = NULL;
	zd_autoptr(finding_row) after = NULL;

	(void)data;
	deliver(f, m1, T + 1);
	deliver(f, m2, T + 2);
	t1 = reply_text(f, "u1@example.com");
	t2 = reply_text(f, "u2@example.com");
	g_test_message("dup: %s", t1);
	g_assert_nonnull(strstr(t1, none));
	g_assert_nonnull(strstr(t2, none));
	g_assert_null(strstr(t1, "embargoed"));
	after = db_finding_get(f->db, f1, &error);
	g_assert_cmpint(after->state, ==, FINDING_OPEN);

	/* The administrator sees it, but a kb finding is no duplicate of a secret one. */
	deliver(f, m4, T + 3);
	t4 = reply_text(f, "u4@example.net");
	g_assert_nonnull(strstr(t4, "a duplicate only of a finding of the same tree"));

	deliver(f, m3, T + 4);
	t3 = reply_text(f, "u3@example.com");
	g_assert_nonnull(strstr(t3, "Recorded"));
	g_clear_pointer(&after, finding_row_free);
	after = db_finding_get(f->db, f1, &error);
	g_assert_cmpint(after->state, ==, FINDING_DUPLICATE);
	g_assert_no_error(error);
}

/*
 * The subscribe reply's "#zeroday confirm TOKEN" line is indented, as
 * zeroday's examples are, and pasted back as it is (indent and all) it
 * confirms.
 */
static void test_confirm_indented(struct fixture *f, gconstpointer data)
{
	g_autofree char *sub = mail("vic@example.net", "bot@example.org", "v1@example.net", NULL,
				    NULL, NULL, "#zeroday subscribe "
				    "https://git.example.com/vic/junk.git master\n");
	zd_autoptr(outbox_row) reply = NULL;
	zd_autoptr(tree_row) t = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree char *confirm = NULL;
	g_autofree char *body = NULL;
	g_autofree char *refs = NULL;
	const char *line;
	char token[33] = { 0 };

	(void)data;
	deliver(f, sub, T);
	reply = reply_to(f, "v1@example.net");
	g_assert_nonnull(reply);
	line = strstr(reply->raw, "\n    #zeroday confirm ");
	g_assert_nonnull(line);
	if (!line)
		return;
	memcpy(token, line + strlen("\n    #zeroday confirm "), 32);
	g_assert_cmpuint(strspn(token, "0123456789abcdef"), ==, 32);
	body = g_strdup_printf("    #zeroday confirm %s\n\n> To subscribe ...\n>     #zeroday "
			       "confirm %s\n", token, token);
	refs = g_strdup_printf("<%s>", reply->message_id);
	confirm = mail("vic@example.net", "bot@example.org", "v2@example.net", reply->message_id,
		       refs, NULL, body);
	deliver(f, confirm, T + 10);
	t = db_tree_get(f->db, "junk", &error);
	g_assert_no_error(error);
	g_assert_nonnull(t);
	g_assert_cmpstr(t ? t->subscriber : NULL, ==, "vic@example.net");
}

int main(int argc, char **argv)
{
	struct repo_limits limits = { 0 };
	g_autoptr(GError) error = NULL;

	testlib_init(&argc, &argv);
	/* "#zeroday test <tree> <branch>" checks the branch's name with libgit2. */
	if (!repo_global_init(&limits, &error))
		g_error("%s", error->message);
	g_test_add_func("/commands/lines", test_lines);
	g_test_add_func("/commands/too-many", test_too_many);
	g_test_add_func("/commands/html-lines", test_html_lines);
#define ADD(path, fn) \
	g_test_add(path, struct fixture, NULL, fixture_set_up, fn, fixture_tear_down)
	ADD("/commands/quoted-local-part", test_quoted_local_part);
	ADD("/commands/series-stranger", test_series_stranger);
	ADD("/commands/tree-stranger", test_tree_stranger);
	ADD("/commands/list-from", test_list_from);
	ADD("/commands/html", test_html);
	ADD("/commands/dup-private", test_dup);
	ADD("/commands/confirm-indented", test_confirm_indented);
#undef ADD
	return g_test_run();
}
