/*
 * The mail command language: see commands.h.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <errno.h>
#include <fnmatch.h>
#include <string.h>
#include <sys/random.h>

#include "bot/bot.h"
#include "bot/mailroom/commands.h"
#include "bot/mailroom/inbox.h"
#include "bot/mailroom/outbox.h"
#include "bot/mailroom/policy.h"
#include "bot/mailroom/render.h"
#include "bot/mailroom/template.h"
#include "bot/trees.h"
#include "engine/names.h"
#include "engine/netaddr.h"
#include "engine/repo.h"
#include "mail/address.h"
#include "mail/dkim.h"


/* The MAINTAINERS file read to know a tree's maintainers, at most. */
#define MAINTAINERS_FILE_MAX (8 * 1024 * 1024)
/* Words in one command line, at most. */
#define COMMAND_WORDS_MAX 8

/* Who may give a command (a column of the table). */
enum command_who {
	WHO_ANYONE,
	WHO_THREAD,     /* on the report's thread, or a maintainer */
	WHO_MAINTAINER, /* a maintainer of the tree concerned, or an administrator */
};

static const char *const who_text[] = {
	[WHO_ANYONE] = "anyone",
	[WHO_THREAD] = "anyone on the report's thread",
	[WHO_MAINTAINER] = "the tree's maintainers",
};

/* One command mail being answered. */
struct cmd_ctx {
	const struct bot *c;
	gint64 mail_id;
	const struct patchmail *m;
	const char *sender;    /* address_key() of who it counts as from: see struct sender */
	gint64 now;
	bool admin;
	bool unverified;       /* the sender is Reply-To's: it may do what anyone may, no more */
	const char *list_post; /* the List-Post address the mail came through, or NULL */
	gint64 bot_mail;       /* the mail of zeroday's this one answers, or 0 */
	gint64 finding_id;     /* the finding of that mail's thread, or 0 */
	const char *thread_root; /* the first Message-ID of the thread */
	const char *const *parents; /* In-Reply-To, then References newest first */
};

struct command {
	const char *name;
	/*
	 * Runs the command with its @argc words after the name in @argv:
	 * sets @row's state and answer (and what it waits for). False only
	 * when the store fails.
	 */
	bool (*run)(struct cmd_ctx *x, char **argv, guint argc, struct command_row *row,
		    GError **error);
	enum command_who who;
	guint min_args, max_args;
	const char *usage;
	const char *summary;
	/* The one argument is the rest of the line, blanks and all ("fix: <subject>"). */
	bool rest;
	/*
	 * It gives the sender rights (confirm: a tree's maintainer), so it
	 * needs a sender known by From, as the commands that anyone may not
	 * give do: never one named only by Reply-To.
	 */
	bool identity;
};

static bool cmd_help(struct cmd_ctx *x, char **argv, guint argc, struct command_row *row,
		     GError **error);
static bool cmd_status(struct cmd_ctx *x, char **argv, guint argc, struct command_row *row,
		       GError **error);
static bool cmd_subscribe(struct cmd_ctx *x, char **argv, guint argc, struct command_row *row,
			  GError **error);
static bool cmd_confirm(struct cmd_ctx *x, char **argv, guint argc, struct command_row *row,
			GError **error);
static bool cmd_unsubscribe(struct cmd_ctx *x, char **argv, guint argc,
			    struct command_row *row, GError **error);
static bool cmd_blacklist(struct cmd_ctx *x, char **argv, guint argc, struct command_row *row,
			  GError **error);
static bool cmd_unblacklist(struct cmd_ctx *x, char **argv, guint argc,
			    struct command_row *row, GError **error);
static bool cmd_rerun(struct cmd_ctx *x, char **argv, guint argc, struct command_row *row,
		      GError **error);
static bool cmd_test(struct cmd_ctx *x, char **argv, guint argc, struct command_row *row,
		     GError **error);
static bool cmd_mute(struct cmd_ctx *x, char **argv, guint argc, struct command_row *row,
		     GError **error);
static bool cmd_invalid(struct cmd_ctx *x, char **argv, guint argc, struct command_row *row,
			GError **error);
static bool cmd_dup(struct cmd_ctx *x, char **argv, guint argc, struct command_row *row,
		    GError **error);
static bool cmd_undup(struct cmd_ctx *x, char **argv, guint argc, struct command_row *row,
		      GError **error);
static bool cmd_fix(struct cmd_ctx *x, char **argv, guint argc, struct command_row *row,
		    GError **error);

/* The commands: git.c's table, with who may give each. */
static const struct command commands[] = {
	{ "help", cmd_help, WHO_ANYONE, 0, 0, "#zeroday help",
	  "this list" },
	{ "status", cmd_status, WHO_ANYONE, 0, 1, "#zeroday status [<tree>]",
	  "the trees followed, or one tree's branches and open findings" },
	{ "subscribe", cmd_subscribe, WHO_ANYONE, 2, 5,
	  "#zeroday subscribe <url> <branch-pattern> [rebasable|non-rebasable] [list <address>]",
	  "follow a tree (a token comes back to confirm it)" },
	{ "confirm", cmd_confirm, WHO_ANYONE, 1, 1, "#zeroday confirm <token>",
	  "confirm a subscription, from the address that asked for it", .identity = true },
	{ "unsubscribe", cmd_unsubscribe, WHO_MAINTAINER, 1, 1, "#zeroday unsubscribe <tree>",
	  "stop following a tree" },
	{ "blacklist", cmd_blacklist, WHO_MAINTAINER, 2, 2,
	  "#zeroday blacklist <tree> <branch-pattern>",
	  "stop testing, and reporting on, the matching branches" },
	{ "unblacklist", cmd_unblacklist, WHO_MAINTAINER, 2, 2,
	  "#zeroday unblacklist <tree> <branch-pattern>", "undo a blacklist" },
	{ "rerun", cmd_rerun, WHO_THREAD, 0, 1, "#zeroday rerun [<finding-id>]",
	  "test a report's culprit again (in the report's thread, or by finding id)" },
	{ "test", cmd_test, WHO_THREAD, 0, 2, "#zeroday test [<tree> <branch|commit>]",
	  "test a branch or commit; alone: the patch in this mail, or the series replied to" },
	{ "mute", cmd_mute, WHO_THREAD, 0, 0, "#zeroday mute",
	  "no more mail to you in this thread" },
	{ "invalid", cmd_invalid, WHO_MAINTAINER, 0, 0, "#zeroday invalid",
	  "the report of this thread is wrong: recorded, and the finding closed" },
	{ "dup", cmd_dup, WHO_THREAD, 1, 1, "#zeroday dup <finding-id>",
	  "this thread's finding is the same bug as that one: its thread only, from now on" },
	{ "undup", cmd_undup, WHO_THREAD, 0, 0, "#zeroday undup",
	  "undo a dup: this thread's finding is open again" },
	{ "fix", cmd_fix, WHO_THREAD, 1, 1, "#zeroday fix: <commit subject>",
	  "close this thread's finding once a commit with that subject reaches its branch "
	  "and the failure is gone there", .rest = true },
};

/* ---- Reading commands ---- */

/* Whether @line starts a command: "#zeroday" and then a blank or the end. */
static bool is_command_line(const char *line)
{
	return g_str_has_prefix(line, "#zeroday") &&
	       (line[8] == '\0' || line[8] == ' ' || line[8] == '\t');
}

/*
 * Whether @line is the "#zeroday confirm <token>" line of a subscribe
 * reply pasted back with its indentation: blanks, then exactly that
 * line. Only this line is taken indented: the token in it is one
 * zeroday mailed, while an indented example ("#zeroday confirm
 * <token>" of the help) would only be refused.
 */
static bool is_pasted_confirm(const char *line)
{
	const char *p = line + strspn(line, " \t");
	gsize hex;

	if (p == line || !g_str_has_prefix(p, "#zeroday") || (p[8] != ' ' && p[8] != '\t'))
		return false;
	p += 8;
	p += strspn(p, " \t");
	if (!g_str_has_prefix(p, "confirm") || (p[7] != ' ' && p[7] != '\t'))
		return false;
	p += 7;
	p += strspn(p, " \t");
	hex = strspn(p, "0123456789abcdef");
	return hex == 32 && p[hex + strspn(p + hex, " \t")] == '\0';
}

/* @line without its trailing CR and blanks, compared with @text without case. */
static bool line_is(const char *line, const char *text)
{
	gsize len = strlen(line);

	while (len && (line[len - 1] == ' ' || line[len - 1] == '\t' || line[len - 1] == '\r'))
		len--;
	return len == strlen(text) && g_ascii_strncasecmp(line, text, len) == 0;
}

/*
 * Whether @line opens an original pasted below, unquoted, or a forward:
 * "-----Original Message-----" (Outlook), "-------- Original Message
 * --------" and "-------- Forwarded Message --------" (Thunderbird),
 * "---------- Forwarded message ---------" (Gmail): a word or two
 * between runs of dashes. "Begin forwarded message:" (Apple Mail).
 */
static bool is_original_marker(const char *line)
{
	g_autofree char *inner = NULL;
	gsize lead = strspn(line, "-");

	if (line_is(line, "Begin forwarded message:"))
		return true;
	if (lead < 2)
		return false;
	inner = g_strdup(line + lead);
	g_strchomp(inner);
	while (*inner && inner[strlen(inner) - 1] == '-')
		inner[strlen(inner) - 1] = '\0';
	g_strstrip(inner);
	return g_ascii_strcasecmp(inner, "Original Message") == 0 ||
	       g_ascii_strcasecmp(inner, "Forwarded Message") == 0;
}

/* The first line of @l that is not blank, or NULL. */
static const char *next_text_line(char **l)
{
	for (; *l; l++) {
		if ((*l)[strspn(*l, " \t\r")])
			return *l;
	}
	return NULL;
}

/* Whether @line ends with "wrote:", blanks after it aside. */
static bool ends_wrote(const char *line)
{
	gsize len = strlen(line);

	while (len && (line[len - 1] == ' ' || line[len - 1] == '\t'))
		len--;
	return len >= 6 && strncmp(line + len - 6, "wrote:", 6) == 0;
}

/*
 * Whether the lines from @l on are an original pasted below the
 * sender's text, unquoted: Outlook's line of underscores followed by
 * "From:", or an attribution ("On Mon, 13 Nov 2023, Alice wrote:",
 * wrapped on two lines or not) followed by text that is not quoted. An
 * attribution followed by quoted lines opens an interleaved reply: the
 * sender's commands may come below it.
 */
static bool opens_original(char **l)
{
	const char *next;

	if (strlen(*l) >= 10 && strspn(*l, "_") >= 10 && !(*l)[strspn(*l, "_\r \t")]) {
		next = next_text_line(l + 1);
		return next && (g_ascii_strncasecmp(next, "From:", 5) == 0 ||
				g_ascii_strncasecmp(next, "*From:*", 7) == 0);
	}
	if (!g_str_has_prefix(*l, "On "))
		return false;
	if (!ends_wrote(*l)) {
		/* A client that wraps the attribution: its end on the next line. */
		if (!l[1] || !ends_wrote(l[1]))
			return false;
		l++;
	}
	next = next_text_line(l + 1);
	return next && next[0] != '>';
}

char **commands_lines(const char *body, guint max)
{
	g_autoptr(GStrvBuilder) b = g_strv_builder_new();
	g_auto(GStrv) lines = g_strsplit(body ? body : "", "\n", -1);
	guint n = 0;

	for (char **l = lines; *l; l++) {
		gsize len = strlen(*l);

		if (len && (*l)[len - 1] == '\r')
			(*l)[--len] = '\0';
	}
	for (char **l = lines; *l && n <= max; l++) {
		/* A signature, or an original pasted unquoted below: what follows is not the sender's. */
		if (strcmp(*l, "-- ") == 0 || strcmp(*l, "--") == 0 || is_original_marker(*l) ||
		    opens_original(l))
			break;
		if (is_pasted_confirm(*l)) {
			g_strv_builder_add(b, *l + strspn(*l, " \t"));
			n++;
			continue;
		}
		if (!is_command_line(*l))
			continue;
		g_strv_builder_add(b, *l);
		n++;
	}
	return g_strv_builder_end(b);
}

/*
 * Appends the text of HTML @html to @out as plain text lines: a line
 * break for each block element and <br>, the blanks that start a line
 * left out (a browser shows none) but inside <pre>, a few entities
 * decoded, comments skipped, and nothing of what is inside <blockquote>:
 * what the sender quoted is not what they wrote.
 */
static void html_text(GString *out, const char *html)
{
	static const char *const breaks[] = {
		"p", "div", "br", "li", "tr", "pre", "blockquote", "h1", "h2", "h3", "h4", "h5",
		"h6", "hr", "table", "ul", "ol", "dd", "dt", "body",
	};
	static const struct {
		const char *name;
		char c;
	} entities[] = {
		{ "&nbsp;", ' ' }, { "&gt;", '>' }, { "&lt;", '<' }, { "&amp;", '&' },
		{ "&quot;", '"' }, { "&#35;", '#' }, { "&#160;", ' ' },
	};
	guint quoted = 0;
	bool pre = false;
	bool bol = true;

	for (const char *p = html; *p;) {
		char c;

		if (g_str_has_prefix(p, "<!--")) {
			const char *end = strstr(p + 4, "-->");

			if (!end)
				break;
			p = end + 3;
			continue;
		}
		if (*p == '<') {
			const char *end = strchr(p, '>');
			const char *q = p + 1;
			bool closing;
			g_autofree char *name = NULL;

			if (!end)
				break;
			q += strspn(q, " \t\r\n");
			closing = *q == '/';
			q += closing;
			name = g_ascii_strdown(q, (gssize)strspn(q, "abcdefghijklmnopqrstuvwxyz"
							  "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"));
			if (strcmp(name, "blockquote") == 0) {
				if (closing && quoted)
					quoted--;
				else if (!closing)
					quoted++;
			} else if (strcmp(name, "pre") == 0) {
				pre = !closing;
			}
			for (gsize i = 0; i < G_N_ELEMENTS(breaks); i++) {
				if (strcmp(name, breaks[i]) == 0 && !quoted) {
					g_string_append_c(out, '\n');
					bol = true;
					break;
				}
			}
			p = end + 1;
			continue;
		}
		c = *p;
		for (gsize i = 0; c == '&' && i < G_N_ELEMENTS(entities); i++) {
			if (g_ascii_strncasecmp(p, entities[i].name, strlen(entities[i].name)) == 0) {
				c = entities[i].c;
				p += strlen(entities[i].name) - 1;
			}
		}
		p++;
		if (quoted)
			continue;
		if (c == '\r')
			continue;
		if (c == '\n' && pre) {
			g_string_append_c(out, '\n');
			bol = true;
			continue;
		}
		if (c == '\n' || c == '\t')
			c = ' ';
		if (bol && c == ' ' && !pre)
			continue;
		g_string_append_c(out, c);
		bol = false;
	}
}

char **commands_html_lines(const char *html, guint max)
{
	g_autoptr(GString) text = g_string_new(NULL);

	html_text(text, html ? html : "");
	return commands_lines(text->str, max);
}

/* The edit distance of @a and @b, for "did you mean". */
static guint distance(const char *a, const char *b)
{
	gsize la = strlen(a), lb = strlen(b);
	g_autofree guint *row = g_new(guint, lb + 1);

	for (gsize j = 0; j <= lb; j++)
		row[j] = (guint)j;
	for (gsize i = 1; i <= la; i++) {
		guint diag = row[0];

		row[0] = (guint)i;
		for (gsize j = 1; j <= lb; j++) {
			guint up = row[j];
			guint cost = a[i - 1] == b[j - 1] ? 0 : 1;

			row[j] = MIN(MIN(row[j] + 1, row[j - 1] + 1), diag + cost);
			diag = up;
		}
	}
	return row[lb];
}

static const struct command *nearest_command(const char *word)
{
	const struct command *best = &commands[0];
	guint best_d = G_MAXUINT;

	for (gsize i = 0; i < G_N_ELEMENTS(commands); i++) {
		guint d = distance(word, commands[i].name);

		if (d < best_d) {
			best_d = d;
			best = &commands[i];
		}
	}
	return best;
}

static const struct command *command_named(const char *word)
{
	for (gsize i = 0; i < G_N_ELEMENTS(commands); i++) {
		if (strcmp(commands[i].name, word) == 0)
			return &commands[i];
	}
	return NULL;
}

char *commands_printable_line(const char *line)
{
	char *out = g_utf8_make_valid(line, MIN(strlen(line), (gsize)COMMAND_LINE_MAX));

	for (char *p = out; *p; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	}
	return out;
}

/* Whether command line @line may be read at all; else *@why says why not. */
static bool line_readable(const char *line, const char **why)
{
	if (strlen(line) > COMMAND_LINE_MAX) {
		*why = "the line is too long";
		return false;
	}
	for (const char *q = line; *q; q++) {
		if (((unsigned char)*q < 0x20 && *q != '\t') || *q == 0x7f) {
			*why = "the line holds control characters";
			return false;
		}
	}
	return true;
}

char **commands_split_line(const char *line, const char **why)
{
	g_autoptr(GStrvBuilder) b = g_strv_builder_new();
	const char *p = line + strlen("#zeroday");
	guint n = 0;

	if (!line_readable(line, why))
		return NULL;
	while (*p) {
		gsize len;

		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		len = strcspn(p, " \t");
		if (len > COMMAND_ARG_MAX) {
			*why = "a word is too long";
			return NULL;
		}
		if (++n > COMMAND_WORDS_MAX) {
			*why = "too many words";
			return NULL;
		}
		{
			g_autofree char *word = g_strndup(p, len);

			g_strv_builder_add(b, word);
		}
		p += len;
	}
	return g_strv_builder_end(b);
}

/* ---- Who the sender is ---- */

static bool in_list(char *const *list, const char *key)
{
	for (char *const *a = list; a && *a; a++) {
		g_autofree char *k = address_key(*a);

		if (k && strcmp(k, key) == 0)
			return true;
	}
	return false;
}

/* Whether @key is in an "M:" line of @text (a MAINTAINERS file). */
static bool maintainers_file_names(const char *text, const char *key)
{
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);

	for (char **l = lines; *l; l++) {
		g_autofree char *lower = NULL;
		const char *lt, *gt;

		if (!g_str_has_prefix(*l, "M:"))
			continue;
		lower = g_ascii_strdown(*l, -1);
		lt = strrchr(lower, '<');
		gt = lt ? strchr(lt, '>') : NULL;
		if (lt && gt && (gsize)(gt - lt - 1) == strlen(key) &&
		    strncmp(lt + 1, key, strlen(key)) == 0)
			return true;
	}
	return false;
}

/*
 * Whether the sender maintains @t: an administrator, one of its --cc
 * addresses, who subscribed it, or an M: line of the MAINTAINERS file
 * at the head of one of its branches.
 */
static bool is_maintainer(struct cmd_ctx *x, const struct tree_row *t, GError **error)
{
	g_autoptr(GPtrArray) branches = NULL;

	/* Reply-To proves nothing: it names a maintainer without being one. */
	if (x->unverified)
		return false;
	if (x->admin || in_list(t->recipients, x->sender) ||
	    (t->subscriber && g_ascii_strcasecmp(t->subscriber, x->sender) == 0))
		return true;
	if (!x->c->repo)
		return false;
	branches = db_branch_list(x->c->db, t->id, error);
	if (!branches)
		return false;
	for (guint i = 0; i < branches->len; i++) {
		const struct branch_row *b = branches->pdata[i];
		g_autoptr(GError) local = NULL;
		gsize len = 0;
		g_autofree char *text = NULL;

		if (b->state == BRANCH_DELETED)
			continue;
		text = repo_file_at(x->c->repo, b->head, "MAINTAINERS", MAINTAINERS_FILE_MAX, &len,
				    &local);
		if (text)
			return maintainers_file_names(text, x->sender);
	}
	return false;
}

/* Whether the sender is a recipient of zeroday's mail @outbox_id. */
static bool rcpt_of(struct cmd_ctx *x, gint64 outbox_id, GError **error)
{
	g_autoptr(GPtrArray) rcpts = db_rcpt_list(x->c->db, outbox_id, error);

	if (!rcpts)
		return false;
	for (guint i = 0; i < rcpts->len; i++) {
		const struct rcpt_row *r = rcpts->pdata[i];
		g_autofree char *key = address_key(r->address);

		if (strcmp(key, x->sender) == 0)
			return true;
	}
	return false;
}

/*
 * Sets *@series_id to the series zeroday's series reply @o answers (the
 * series of its In-Reply-To, else of its References, newest first), 0
 * when none.
 */
static bool series_of_reply(struct cmd_ctx *x, const struct outbox_row *o, gint64 *series_id,
			    GError **error)
{
	g_autoptr(GPtrArray) ids = g_ptr_array_new();

	*series_id = 0;
	if (o->kind != OUTBOX_SERIES)
		return true;
	if (o->in_reply_to)
		g_ptr_array_add(ids, o->in_reply_to);
	for (guint i = o->references ? g_strv_length(o->references) : 0; i > 0; i--)
		g_ptr_array_add(ids, o->references[i - 1]);
	g_ptr_array_add(ids, NULL);
	return db_series_of_message_ids(x->c->db, (const char *const *)ids->pdata, series_id,
					error);
}

/*
 * Sets *@about: whether zeroday's mail @o is about series @s (a reply to
 * it) or, with @s NULL, about tree @t (a finding's mail, or a reply to a
 * series, of that tree).
 */
static bool mail_about(struct cmd_ctx *x, const struct outbox_row *o, const struct series_row *s,
		       const struct tree_row *t, bool *about, GError **error)
{
	gint64 series_id = 0;

	*about = false;
	if (!series_of_reply(x, o, &series_id, error))
		return false;
	if (s) {
		*about = series_id == s->id;
		return true;
	}
	if (series_id) {
		zd_autoptr(series_row) other = db_series_get(x->c->db, series_id, error);

		if (!other)
			return false;
		*about = g_strcmp0(other->tree, t->name) == 0;
	} else if (o->finding_id) {
		g_autoptr(GError) local = NULL;
		zd_autoptr(finding_row) f = db_finding_get(x->c->db, o->finding_id, &local);

		if (!f && !g_error_matches(local, BOT_ERROR, BOT_ERROR_NOT_FOUND)) {
			g_propagate_error(error, g_steal_pointer(&local));
			return false;
		}
		*about = f && g_strcmp0(f->tree, t->name) == 0;
	}
	return true;
}

/*
 * Whether the sender is on a thread of zeroday's about series @s, or,
 * with @s NULL, about tree @t: a recipient of one of zeroday's mails
 * that this mail replies to (In-Reply-To, References) and that is about
 * it. References are the sender's to write: one naming any mail of
 * zeroday's, the sender's own answer to "#zeroday help" say, is no
 * ticket to another thread. False with @error only when the store fails.
 */
static bool on_thread(struct cmd_ctx *x, const struct series_row *s, const struct tree_row *t,
		      GError **error)
{
	for (const char *const *id = x->parents; id && *id; id++) {
		const char *one[] = { *id, NULL };
		zd_autoptr(outbox_row) o = NULL;
		gint64 outbox_id = 0;
		bool about = false;

		if (!db_outbox_of_message_ids(x->c->db, one, &outbox_id, error))
			return false;
		if (!outbox_id)
			continue;
		o = db_outbox_get(x->c->db, outbox_id, error);
		if (!o || !mail_about(x, o, s, t, &about, error))
			return false;
		if (about && rcpt_of(x, outbox_id, error))
			return true;
		if (*error)
			return false;
	}
	return false;
}

/* ---- Answers ---- */

static void refuse(struct command_row *row, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static void refuse(struct command_row *row, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	g_free(row->answer);
	row->answer = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	row->state = COMMAND_REFUSED;
}

static void done(struct command_row *row, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static void done(struct command_row *row, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	g_free(row->answer);
	row->answer = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	row->state = COMMAND_DONE;
}

/* The tree named @word, or whose URL it is; NULL (no error) when none is. */
static struct tree_row *tree_of(struct cmd_ctx *x, const char *word, GError **error)
{
	g_autoptr(GPtrArray) trees = db_tree_list(x->c->db, error);

	if (!trees)
		return NULL;
	for (guint i = 0; i < trees->len; i++) {
		struct tree_row *t = trees->pdata[i];

		if (strcmp(t->name, word) == 0 || strcmp(t->url, word) == 0)
			return g_ptr_array_steal_index(trees, i);
	}
	return NULL;
}

/*
 * Resolves @word to a tree the sender maintains, into *@out; otherwise
 * refuses @row saying why (an unknown tree and a tree of someone else's
 * read alike to a stranger, so private trees stay private).
 */
static bool maintained_tree(struct cmd_ctx *x, const char *word, struct command_row *row,
			    struct tree_row **out, GError **error)
{
	zd_autoptr(tree_row) t = NULL;
	g_autoptr(GError) local = NULL;

	*out = NULL;
	if (strlen(word) > COMMAND_ARG_MAX || !g_utf8_validate(word, -1, NULL)) {
		refuse(row, "not a tree name or URL");
		return true;
	}
	t = tree_of(x, word, &local);
	if (local) {
		g_propagate_error(error, g_steal_pointer(&local));
		return false;
	}
	if (!t) {
		refuse(row, "no tree '%s' is followed", word);
		return true;
	}
	if (!is_maintainer(x, t, &local)) {
		if (local) {
			g_propagate_error(error, g_steal_pointer(&local));
			return false;
		}
		if (t->private)
			refuse(row, "no tree '%s' is followed", word);
		else
			refuse(row, "only the maintainers of %s may do that (its --cc addresses, the "
				    "M: lines of its MAINTAINERS file, who subscribed it)", t->name);
		return true;
	}
	*out = g_steal_pointer(&t);
	return true;
}

/* ---- The commands ---- */

static bool cmd_help(struct cmd_ctx *x, char **argv, guint argc, struct command_row *row,
		     GError **error)
{
	g_autoptr(GString) s = g_string_new("zeroday takes these commands, each on a line of "
					    "its own, at the start of the line:\n");

	(void)x, (void)argv, (void)argc, (void)error;
	for (gsize i = 0; i < G_N_ELEMENTS(commands); i++) {
		g_autofree char *summary = g_strdup_printf("%s (%s)", commands[i].summary,
							   who_text[commands[i].who]);

		/* Lines that start with blanks are not filled again: fill them here. */
		g_string_append_printf(s, "\n    %s\n        ", commands[i].usage);
		template_fill(s, summary, 8, "        ", TEMPLATE_WIDTH);
	}
	g_string_append_printf(s, "\n\nAt most %u commands in one mail.", COMMANDS_MAX);
	done(row, "%s", s->str);
	return true;
}

static const char *when_text(gint64 t, char buf[32])
{
	g_autoptr(GDateTime) d = t ? g_date_time_new_from_unix_utc(t) : NULL;
	g_autofree char *s = d ? g_date_time_format(d, "%Y-%m-%d %H:%M UTC") : NULL;

	g_strlcpy(buf, s ? s : "never", 32);
	return buf;
}

/* Open findings shown by "#zeroday status <tree>", at most. */
#define STATUS_OPEN_MAX 10

/* Appends @t's open findings, newest first, to @s ("none" when there are none). */
static bool open_findings(struct cmd_ctx *x, const struct tree_row *t, GString *s,
			  GError **error)
{
	g_autoptr(GPtrArray) all = db_finding_list(x->c->db, 1000, error);
	guint shown = 0, more = 0;

	if (!all)
		return false;
	g_string_append(s, "\nOpen findings:");
	for (guint i = 0; i < all->len; i++) {
		const struct finding_row *f = all->pdata[i];

		if (g_strcmp0(f->tree, t->name) != 0 ||
		    (f->state != FINDING_OPEN && f->state != FINDING_INCONCLUSIVE))
			continue;
		if (shown == STATUS_OPEN_MAX) {
			more++;
			continue;
		}
		shown++;
		g_string_append_printf(s, "\n    %" G_GINT64_FORMAT " %s %.12s %s%s", f->id,
				       db_finding_kind_name(f->kind, f->console), f->culprit,
				       f->title ? f->title : "",
				       f->state == FINDING_INCONCLUSIVE ? " (inconclusive)" : "");
	}
	if (!shown)
		g_string_append(s, " none");
	if (more)
		g_string_append_printf(s, "\n    and %u more", more);
	return true;
}

static bool cmd_status(struct cmd_ctx *x, char **argv, guint argc, struct command_row *row,
		       GError **error)
{
	g_autoptr(GString) s = g_string_new(NULL);
	char when[32];

	if (argc == 0) {
		g_autoptr(GPtrArray) trees = db_tree_list(x->c->db, error);
		gint64 queued = 0, waiting = 0, running = 0, done_jobs = 0;

		if (!trees || !db_job_counts(x->c->db, x->now, &queued, &waiting, &running,
					     &done_jobs, error))
			return false;
		g_string_append(s, "Trees followed:");
		for (guint i = 0; i < trees->len; i++) {
			const struct tree_row *t = trees->pdata[i];

			if (t->private && !x->admin)
				continue;
			g_string_append_printf(s, "\n    %s %s (%s), polled %s%s", t->name, t->url,
					       db_policy_name(t->policy),
					       when_text(t->last_poll, when),
					       t->last_error ? ", last poll failed" : "");
		}
		g_string_append_printf(s, "\nJobs: %" G_GINT64_FORMAT " queued, %" G_GINT64_FORMAT
				       " running.", queued, running);
		done(row, "%s", s->str);
		return true;
	}
	{
		zd_autoptr(tree_row) t = NULL;
		g_autoptr(GPtrArray) branches = NULL;
		g_autoptr(GError) local = NULL;

		t = tree_of(x, argv[0], &local);
		if (local) {
			g_propagate_error(error, g_steal_pointer(&local));
			return false;
		}
		if (t && t->private && !is_maintainer(x, t, error) && !*error)
			g_clear_pointer(&t, tree_row_free);
		if (*error)
			return false;
		if (!t) {
			refuse(row, "no tree '%s' is followed", argv[0]);
			return true;
		}
		branches = db_branch_list(x->c->db, t->id, error);
		if (!branches)
			return false;
		g_string_append_printf(s, "%s: %s, %s, polled %s", t->name, t->url,
				       db_policy_name(t->policy), when_text(t->last_poll, when));
		if (t->last_error)
			g_string_append(s, "; the last poll failed");
		g_string_append(s, "\nBranches:");
		for (guint i = 0; i < branches->len; i++) {
			const struct branch_row *b = branches->pdata[i];

			g_string_append_printf(s, "\n    %s %.12s %s%s%s", b->name, b->head,
					       db_branch_state_name(b->state),
					       b->reason ? ": " : "", b->reason ? b->reason : "");
		}
		if (t->blacklist && t->blacklist[0]) {
			g_autofree char *bl = g_strjoinv(" ", t->blacklist);

			g_string_append_printf(s, "\nBlacklisted: %s", bl);
		}
		if (!open_findings(x, t, s, error))
			return false;
		done(row, "%s", s->str);
		return true;
	}
}

/*
 * Checks a URL that came by mail, as a tree's: what `tree add` takes
 * (https:// and git:// only), no credentials, and a host that is no
 * internal address in any spelling, unless [commands] allowed-hosts
 * names it. Refuses @row saying why.
 */
static bool mailed_url_ok(struct cmd_ctx *x, const char *url, struct command_row *row)
{
	g_autoptr(GError) local = NULL;
	g_autofree char *port = NULL;
	g_autofree char *host = NULL;

	/* Whatever [git] allows the administrator, a stranger's URL is https:// or git://. */
	if (url[0] == '/' || g_ascii_strncasecmp(url, "file:", 5) == 0 ||
	    g_ascii_strncasecmp(url, "ssh:", 4) == 0 || g_ascii_strncasecmp(url, "git+ssh:", 8) == 0) {
		refuse(row, "refused URL: only https:// and git:// URLs are taken by mail");
		return false;
	}
	if (!names_url_check(url, 0, &local)) {
		refuse(row, "%s", local->message);
		return false;
	}
	if (netaddr_url_has_credentials(url)) {
		refuse(row, "a URL with credentials in it is refused");
		return false;
	}
	host = netaddr_url_host(url, &port);
	if (!host) {
		refuse(row, "the URL's host cannot be read");
		return false;
	}
	if (!netaddr_host_check(host, port,
				(const char *const *)x->c->config->commands_allowed_hosts, &local)) {
		refuse(row, "%s", local->message);
		return false;
	}
	return true;
}

/* A tree name made of @url's last path component ("net-next" of .../net-next.git). */
static char *name_from_url(struct cmd_ctx *x, const char *url, GError **error)
{
	g_autofree char *path = g_strdup(url);
	g_autoptr(GString) base = g_string_new(NULL);
	char *last;
	gsize len = strlen(path);

	while (len && path[len - 1] == '/')
		path[--len] = '\0';
	if (g_str_has_suffix(path, ".git"))
		path[len - 4] = '\0';
	last = strrchr(path, '/');
	for (const char *p = last ? last + 1 : path; *p && base->len < 48; p++) {
		if (g_ascii_isalnum(*p) || *p == '.' || *p == '_' || *p == '-')
			g_string_append_c(base, *p);
	}
	while (base->len && !g_ascii_isalnum(base->str[0]))
		g_string_erase(base, 0, 1);
	if (!base->len)
		g_string_assign(base, "tree");
	for (unsigned i = 1; i < 100; i++) {
		g_autofree char *name = i == 1 ? g_strdup(base->str)
					       : g_strdup_printf("%s-%u", base->str, i);
		g_autoptr(GError) local = NULL;
		zd_autoptr(tree_row) t = db_tree_get(x->c->db, name, &local);

		if (!t && !g_error_matches(local, BOT_ERROR, BOT_ERROR_NOT_FOUND)) {
			g_propagate_error(error, g_steal_pointer(&local));
			return NULL;
		}
		if (!t)
			return g_steal_pointer(&name);
	}
	g_set_error(error, BOT_ERROR, BOT_ERROR_EXISTS, "no free tree name for %s", url);
	return NULL;
}

/* The hex sha256 of @token: the store keeps this, never the token. */
static char *token_hash(const char *token)
{
	return g_compute_checksum_for_string(G_CHECKSUM_SHA256, token, -1);
}

static bool cmd_subscribe(struct cmd_ctx *x, char **argv, guint argc, struct command_row *row,
			  GError **error)
{
	zd_autoptr(subscription_row) sub = g_new0(struct subscription_row, 1);
	g_autoptr(GError) local = NULL;
	zd_autoptr(tree_row) known = NULL;
	guchar raw[16];
	g_autofree char *token = NULL;
	guint i = 2;

	if (!mailed_url_ok(x, argv[0], row))
		return true;
	if (!names_pattern_check(argv[1], &local)) {
		refuse(row, "%s", local->message);
		return true;
	}
	sub->policy = TREE_REBASABLE;
	if (i < argc && (strcmp(argv[i], "rebasable") == 0 ||
			 strcmp(argv[i], "non-rebasable") == 0)) {
		db_policy_parse(argv[i], &sub->policy);
		i++;
	}
	if (i < argc) {
		g_autofree char *list = NULL;

		if (strcmp(argv[i], "list") != 0 || i + 2 != argc) {
			refuse(row, "usage: %s", command_named("subscribe")->usage);
			return true;
		}
		list = address_normalize(argv[i + 1], &local);
		if (!list) {
			refuse(row, "list: %s", local->message);
			return true;
		}
		sub->list = address_key(list);
	}
	known = tree_of(x, argv[0], &local);
	if (local) {
		g_propagate_error(error, g_steal_pointer(&local));
		return false;
	}
	if (known && !known->private) {
		refuse(row, "%s is followed already, as %s", argv[0], known->name);
		return true;
	}
	if (known) {
		refuse(row, "%s cannot be subscribed by mail", argv[0]);
		return true;
	}
	sub->name = name_from_url(x, argv[0], error);
	if (!sub->name)
		return false;
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_TEMPORARY, "getrandom: %s",
			    g_strerror(errno));
		return false;
	}
	token = g_new0(char, 2 * sizeof(raw) + 1);
	for (gsize k = 0; k < sizeof(raw); k++)
		g_snprintf(token + 2 * k, 3, "%02x", raw[k]);
	sub->token_hash = token_hash(token);
	sub->sender = g_strdup(x->sender);
	sub->url = g_strdup(argv[0]);
	sub->pattern = g_strdup(argv[1]);
	sub->created = x->now;
	sub->expires = x->now + (gint64)SUBSCRIBE_TOKEN_DAYS * 86400;
	if (!db_subscription_add(x->c->db, sub, error))
		return false;
	explicit_bzero(raw, sizeof(raw));
	done(row, "To subscribe %s (branches %s, %s%s%s) as %s, reply with this line, from "
		  "this address, within %u days:\n\n    #zeroday confirm %s",
	     sub->url, sub->pattern, db_policy_name(sub->policy), sub->list ? ", list " : "",
	     sub->list ? sub->list : "", sub->name, SUBSCRIBE_TOKEN_DAYS, token);
	return true;
}

static bool cmd_confirm(struct cmd_ctx *x, char **argv, guint argc, struct command_row *row,
			GError **error)
{
	g_autofree char *hash = NULL;
	zd_autoptr(subscription_row) sub = NULL;
	zd_autoptr(tree_row) t = NULL;
	g_autoptr(GError) local = NULL;
	const char *const branches[] = { NULL, NULL };
	const char *const recipients[] = { x->sender, NULL };
	const char *const lists[] = { NULL, NULL };
	struct tree_spec spec = { 0 };

	(void)argc;
	if (strlen(argv[0]) != 32 || strspn(argv[0], "0123456789abcdef") != 32) {
		refuse(row, "not a token zeroday gave");
		return true;
	}
	hash = token_hash(argv[0]);
	sub = db_subscription_get(x->c->db, hash, error);
	if (!sub && *error)
		return false;
	if (!sub) {
		refuse(row, "not a token zeroday gave");
		return true;
	}
	if (strcmp(sub->sender, x->sender) != 0) {
		refuse(row, "this token was given to another address: only it may confirm");
		return true;
	}
	if (sub->used) {
		refuse(row, "this token was used already: a token is good once");
		return true;
	}
	if (x->now > sub->expires) {
		refuse(row, "this token expired: subscribe again");
		return true;
	}
	((const char **)branches)[0] = sub->pattern;
	((const char **)lists)[0] = sub->list;
	spec.name = sub->name;
	spec.url = sub->url;
	spec.non_rebasable = sub->policy == TREE_NON_REBASABLE;
	spec.branches = branches;
	spec.recipients = recipients;
	spec.lists = sub->list ? lists : NULL;
	spec.subscriber = x->sender;
	t = trees_add(x->c->db, x->c->config, &spec, &local);
	if (!t) {
		if (local->domain == BOT_ERROR && local->code != BOT_ERROR_EXISTS &&
		    local->code != BOT_ERROR_USAGE) {
			g_propagate_error(error, g_steal_pointer(&local));
			return false;
		}
		refuse(row, "%s", local->message);
		return true;
	}
	if (!db_subscription_use(x->c->db, hash, error))
		return false;
	g_message("commands: %s subscribed %s as %s", x->sender, t->url, t->name);
	done(row, "Subscribed: %s (branches %s, %s) is followed as %s from the next poll on, "
		  "with you as its maintainer.", t->url, sub->pattern, db_policy_name(t->policy),
	     t->name);
	return true;
}

static bool cmd_unsubscribe(struct cmd_ctx *x, char **argv, guint argc,
			    struct command_row *row, GError **error)
{
	zd_autoptr(tree_row) t = NULL;
	g_autoptr(GError) local = NULL;

	(void)argc;
	if (!maintained_tree(x, argv[0], row, &t, error))
		return false;
	if (!t)
		return true;
	if (!trees_remove(x->c->db, x->c->repo, t->name, &local)) {
		g_propagate_error(error, g_steal_pointer(&local));
		return false;
	}
	g_message("commands: %s unsubscribed %s", x->sender, t->name);
	done(row, "Unsubscribed: %s is no longer followed, and what it had queued is dropped.",
	     t->name);
	return true;
}

static bool blacklist(struct cmd_ctx *x, char **argv, struct command_row *row, bool add,
		      GError **error)
{
	zd_autoptr(tree_row) t = NULL;
	g_autoptr(GError) local = NULL;
	unsigned jobs = 0, reports = 0;

	if (!maintained_tree(x, argv[0], row, &t, error))
		return false;
	if (!t)
		return true;
	if (!names_pattern_check(argv[1], &local)) {
		refuse(row, "%s", local->message);
		return true;
	}
	if (!add && !g_strv_contains((const char *const *)t->blacklist, argv[1])) {
		refuse(row, "%s does not blacklist %s", t->name, argv[1]);
		return true;
	}
	if (!trees_blacklist(x->c->db, t->name, argv[1], add, &local)) {
		g_propagate_error(error, g_steal_pointer(&local));
		return false;
	}
	if (!add) {
		g_message("commands: %s unblacklisted %s in %s", x->sender, argv[1], t->name);
		done(row, "%s: branches matching %s are tested again from the next poll on.",
		     t->name, argv[1]);
		return true;
	}
	if (!db_branch_cancel(x->c->db, t->id, argv[1], &jobs, &reports, error))
		return false;
	g_message("commands: %s blacklisted %s in %s (%u jobs, %u reports cancelled)", x->sender,
		  argv[1], t->name, jobs, reports);
	done(row, "%s: branches matching %s are no longer tested nor reported on; %u queued "
		  "job%s and %u unsent report%s dropped.", t->name, argv[1], jobs,
	     jobs == 1 ? "" : "s", reports, reports == 1 ? "" : "s");
	return true;
}

static bool cmd_blacklist(struct cmd_ctx *x, char **argv, guint argc, struct command_row *row,
			  GError **error)
{
	(void)argc;
	return blacklist(x, argv, row, true, error);
}

static bool cmd_unblacklist(struct cmd_ctx *x, char **argv, guint argc,
			    struct command_row *row, GError **error)
{
	(void)argc;
	return blacklist(x, argv, row, false, error);
}

static bool may_touch_finding(struct cmd_ctx *x, const struct finding_row *f, bool maintainers,
			      GError **error);

/*
 * Sets *@visible: whether the sender may see finding @f at all. A
 * finding of a private tree is seen by those on its report's thread and
 * its tree's maintainers only; to anyone else it reads as one that does
 * not exist.
 */
static bool finding_visible(struct cmd_ctx *x, const struct finding_row *f, bool *visible,
			    GError **error)
{
	g_autoptr(GError) local = NULL;
	zd_autoptr(tree_row) t = f->tree ? db_tree_get(x->c->db, f->tree, &local) : NULL;

	*visible = true;
	if (!t && local && !g_error_matches(local, BOT_ERROR, BOT_ERROR_NOT_FOUND)) {
		g_propagate_error(error, g_steal_pointer(&local));
		return false;
	}
	if (!t || !t->private)
		return true;
	*visible = may_touch_finding(x, f, false, error);
	return !*error;
}

/*
 * The finding a command is about: @word's ("123"), else the thread's.
 * Refuses @row when there is none, or when @word names one the sender
 * may not see (finding_visible()), with the same words; *@out NULL then.
 */
static bool finding_of(struct cmd_ctx *x, const char *word, struct command_row *row,
		       struct finding_row **out, GError **error)
{
	gint64 id = x->finding_id;
	g_autoptr(GError) local = NULL;

	*out = NULL;
	if (word) {
		guint64 v = 0;

		if (!g_ascii_string_to_unsigned(word, 10, 1, G_MAXINT64, &v, NULL)) {
			refuse(row, "'%s' is not a finding id", word);
			return true;
		}
		id = (gint64)v;
	}
	if (!id) {
		refuse(row, "no report in this thread: reply to zeroday's report, or name the "
			    "finding");
		return true;
	}
	*out = db_finding_get(x->c->db, id, &local);
	if (!*out && !g_error_matches(local, BOT_ERROR, BOT_ERROR_NOT_FOUND)) {
		g_propagate_error(error, g_steal_pointer(&local));
		return false;
	}
	if (*out && word) {
		bool visible = true;

		if (!finding_visible(x, *out, &visible, error)) {
			g_clear_pointer(out, finding_row_free);
			return false;
		}
		if (!visible)
			g_clear_pointer(out, finding_row_free);
	}
	if (!*out)
		refuse(row, "no finding %" G_GINT64_FORMAT, id);
	return true;
}

/*
 * Whether the sender may act on finding @f's thread: on the thread of
 * its report (the mail answered, or its report's recipients), or a
 * maintainer of its tree.
 */
static bool may_touch_finding(struct cmd_ctx *x, const struct finding_row *f, bool maintainers,
			      GError **error)
{
	zd_autoptr(tree_row) t = NULL;
	g_autoptr(GError) local = NULL;

	if (x->admin)
		return true;
	if (!maintainers) {
		zd_autoptr(outbox_row) report = db_outbox_of_finding(x->c->db,
			f->report_finding ? f->report_finding : f->id, OUTBOX_REPORT, error);
		bool on;

		if (!report && *error)
			return false;
		if (report) {
			on = rcpt_of(x, report->id, error);
			if (on || *error)
				return on;
		}
	}
	t = f->tree ? db_tree_get(x->c->db, f->tree, &local) : NULL;
	if (!t) {
		if (local && !g_error_matches(local, BOT_ERROR, BOT_ERROR_NOT_FOUND))
			g_propagate_error(error, g_steal_pointer(&local));
		return false;
	}
	return is_maintainer(x, t, error);
}

static bool cmd_rerun(struct cmd_ctx *x, char **argv, guint argc, struct command_row *row,
		      GError **error)
{
	zd_autoptr(finding_row) f = NULL;
	zd_autoptr(tree_row) t = NULL;
	g_autoptr(GError) local = NULL;
	gint64 job_id = 0;

	if (!finding_of(x, argc ? argv[0] : NULL, row, &f, error))
		return false;
	if (!f)
		return true;
	if (!may_touch_finding(x, f, false, error)) {
		if (*error)
			return false;
		refuse(row, "only those on the report's thread, and the tree's maintainers, may "
			    "ask for a rerun of finding %" G_GINT64_FORMAT, f->id);
		return true;
	}
	if (f->state != FINDING_OPEN && f->state != FINDING_INCONCLUSIVE) {
		done(row, "finding %" G_GINT64_FORMAT " is closed already (%s)", f->id,
		     db_finding_state_name(f->state));
		return true;
	}
	t = f->tree ? db_tree_get(x->c->db, f->tree, &local) : NULL;
	if (!t) {
		if (local && !g_error_matches(local, BOT_ERROR, BOT_ERROR_NOT_FOUND)) {
			g_propagate_error(error, g_steal_pointer(&local));
			return false;
		}
		refuse(row, "finding %" G_GINT64_FORMAT "'s tree is no longer followed", f->id);
		return true;
	}
	if (!db_job_requeue(x->c->db, JOB_KIND_RERUN, t->id, f->culprit, f->target, JOB_PATCH,
			    &job_id, error))
		return false;
	row->finding_id = f->id;
	row->job_id = job_id;
	row->state = COMMAND_RUNNING;
	g_message("commands: %s asked for a rerun of finding %" G_GINT64_FORMAT " (job %"
		  G_GINT64_FORMAT ")", x->sender, f->id, job_id);
	return true;
}

/* Whether @word is 7 to 40 lower-case hex digits. */
static bool is_hex_commit(const char *word)
{
	gsize len = strlen(word);

	return len >= 7 && len <= 40 && strspn(word, "0123456789abcdef") == len;
}

/*
 * The results of tested series @s as text: its base, then each patch's
 * result with what it newly broke (caller frees). A test command's answer.
 */
static char *series_result_text(const struct series_row *s)
{
	g_autoptr(GString) out = g_string_new(NULL);

	g_string_printf(out, "Series %" G_GINT64_FORMAT " (v%u, %u patch%s) was tested on %s at "
			"%.12s (%s):", s->id, s->version, s->total, s->total == 1 ? "" : "es",
			s->tree ? s->tree : "?", s->base ? s->base : "?",
			s->base_how ? s->base_how : "?");
	for (guint i = 0; i < s->results->len; i++) {
		const struct series_result *r = s->results->pdata[i];
		const struct series_part *p = series_row_part(s, r->n);
		g_autofree char *title = NULL;

		if (r->n == 0 || !p)
			continue;
		title = patchmail_subject_title(p->subject);
		g_string_append_printf(out, "\n  [%u/%u] %s: %s on %s", r->n, s->total, title,
				       r->result, r->target);
		if (r->boot)
			g_string_append_printf(out, "; %s", r->boot);
		for (int pass = 0; pass < 2; pass++) {
			const char *text = pass ? (r->boot_failed ? r->boot : NULL) : r->detail;
			g_auto(GStrv) lines = g_strsplit(text ? text : "", "\n", -1);

			for (char **l = lines; *l; l++) {
				if (**l)
					g_string_append_printf(out, "\n      %s", *l);
			}
		}
	}
	if (s->note)
		g_string_append_printf(out, "\n%s", s->note);
	return g_string_free(g_steal_pointer(&out), FALSE);
}

/* The series text a test command is answered with, for a series that will not run. */
static void series_settled_text(struct command_row *row, const struct series_row *s)
{
	done(row, "series %" G_GINT64_FORMAT " (v%u, %u patch%s) is %s%s%s",
	     s->id, s->version, s->total, s->total == 1 ? "" : "es",
	     db_series_state_name(s->state), s->note ? ": " : "", s->note ? s->note : "");
}

/* #zeroday test alone: the series this mail is part of, or replies to. */
static bool test_series(struct cmd_ctx *x, struct command_row *row, GError **error)
{
	const char *const self[] = { x->m->message_id, NULL };
	zd_autoptr(series_row) s = NULL;
	gint64 id = 0;
	bool own;

	/* This mail's series, else the nearest one up its thread. */
	if (!db_series_of_message_ids(x->c->db, self, &id, error) ||
	    (!id && !db_series_of_message_ids(x->c->db, x->parents, &id, error)))
		return false;
	if (!id) {
		refuse(row, "there is no patch in this mail, nor a series in its thread");
		return true;
	}
	s = db_series_get(x->c->db, id, error);
	if (!s)
		return false;
	own = g_ascii_strcasecmp(s->sender, x->sender) == 0;
	if (!own && !x->admin && !on_thread(x, s, NULL, error)) {
		zd_autoptr(tree_row) t = NULL;

		if (*error)
			return false;
		if (s->tree && !(t = db_tree_get(x->c->db, s->tree, error)))
			return false;
		if (!t || !is_maintainer(x, t, error)) {
			if (*error)
				return false;
			refuse(row, "only the series' sender, the recipients of zeroday's replies "
				    "to it and the tree's maintainers may ask for its test");
			return true;
		}
	}
	row->series_id = s->id;
	switch (s->state) {
	case SERIES_WAITING:
	case SERIES_TESTING:
		row->state = COMMAND_RUNNING;
		return true;
	case SERIES_TESTED: {
		g_autofree char *text = series_result_text(s);

		done(row, "%s", text);
		return true;
	}
	default:
		series_settled_text(row, s);
		return true;
	}
}

static bool cmd_test(struct cmd_ctx *x, char **argv, guint argc, struct command_row *row,
		     GError **error)
{
	zd_autoptr(tree_row) t = NULL;
	g_autoptr(GError) local = NULL;
	g_autofree char *commit = NULL;
	g_autofree char *branch = NULL;
	const char *target;
	gint64 job_id = 0;
	bool may;

	if (argc == 0)
		return test_series(x, row, error);
	if (argc != 2) {
		refuse(row, "usage: %s", command_named("test")->usage);
		return true;
	}
	if (strstr(argv[0], "://") && !mailed_url_ok(x, argv[0], row))
		return true;
	t = tree_of(x, argv[0], &local);
	if (local) {
		g_propagate_error(error, g_steal_pointer(&local));
		return false;
	}
	if (!t || (t->private && !is_maintainer(x, t, error))) {
		if (*error)
			return false;
		refuse(row, "%s is not a followed tree: subscribe it first (#zeroday subscribe)",
		       argv[0]);
		return true;
	}
	may = x->admin || on_thread(x, NULL, t, error);
	if (!may && !*error)
		may = is_maintainer(x, t, error);
	if (*error)
		return false;
	if (!may) {
		refuse(row, "only those on a report's thread and the maintainers of %s may ask "
			    "for a test of it (a report on %s, or a reply to a series on it, that "
			    "this mail answers)", t->name, t->name);
		return true;
	}
	if (is_hex_commit(argv[1]) && x->c->repo && repo_has_commit(x->c->repo, argv[1]) &&
	    strlen(argv[1]) == 40) {
		bool ours = false;

		if (!trees_holds_commit(x->c->db, x->c->repo, t, argv[1], &ours, error))
			return false;
		if (!ours) {
			refuse(row, "%s is on no tested branch of %s", argv[1], t->name);
			return true;
		}
		commit = g_strdup(argv[1]);
	} else if (!repo_branch_check(argv[1], &local)) {
		refuse(row, "%s", local->message);
		return true;
	} else {
		commit = x->c->repo ? repo_tree_branch_head(x->c->repo, t->name, argv[1], &local)
				    : NULL;
		if (!commit) {
			refuse(row, "%s has no branch %s fetched (a commit must be given in full, "
				    "40 hex digits)", t->name, argv[1]);
			return true;
		}
		branch = g_strdup(argv[1]);
	}
	target = t->targets && t->targets[0] ? t->targets[0] : x->c->config->build_targets[0];
	if (!db_job_requeue(x->c->db, JOB_KIND_BUILD, t->id, commit, target, JOB_PATCH, &job_id,
			    error))
		return false;
	row->job_id = job_id;
	row->state = COMMAND_RUNNING;
	g_message("commands: %s asked for a test of %s %.12s on %s (job %" G_GINT64_FORMAT ")",
		  x->sender, t->name, commit, target, job_id);
	return true;
}

static bool cmd_mute(struct cmd_ctx *x, char **argv, guint argc, struct command_row *row,
		     GError **error)
{
	bool is_list = false;

	(void)argv, (void)argc;
	if (!x->bot_mail) {
		refuse(row, "there is no mail of zeroday's in this thread to mute");
		return true;
	}
	/* A list speaks for all its readers: one of them does not silence it. */
	if (!policy_is_list(x->c, x->sender, &is_list, error))
		return false;
	if (is_list || g_strcmp0(x->sender, x->list_post) == 0) {
		refuse(row, "%s is a mailing list's address: a list is not muted", x->sender);
		return true;
	}
	if (!db_mute_add(x->c->db, x->sender, x->thread_root, x->now, error))
		return false;
	done(row, "Muted: zeroday mails you no more in this thread.");
	return true;
}

static bool cmd_invalid(struct cmd_ctx *x, char **argv, guint argc, struct command_row *row,
			GError **error)
{
	zd_autoptr(finding_row) f = NULL;
	g_autofree char *why = NULL;

	(void)argv, (void)argc;
	if (!finding_of(x, NULL, row, &f, error))
		return false;
	if (!f)
		return true;
	if (!may_touch_finding(x, f, true, error)) {
		if (*error)
			return false;
		refuse(row, "only the maintainers of %s may say a report is invalid",
		       f->tree ? f->tree : "its tree");
		return true;
	}
	if (f->state != FINDING_OPEN && f->state != FINDING_INCONCLUSIVE) {
		done(row, "finding %" G_GINT64_FORMAT " is closed already (%s)", f->id,
		     db_finding_state_name(f->state));
		return true;
	}
	why = g_strdup_printf("said invalid by %s", x->sender);
	if (!db_finding_close(x->c->db, f->id, FINDING_INVALID, why, error))
		return false;
	g_message("commands: finding %" G_GINT64_FORMAT " %s", f->id, why);
	done(row, "Recorded: finding %" G_GINT64_FORMAT " (%s) is closed as invalid; it will not "
		  "be reported again.", f->id, f->title ? f->title : "");
	return true;
}

/*
 * The finding @lead stands for: the one it is a duplicate of, and so on,
 * a few steps at most (caller frees). NULL with @error only when the
 * store fails.
 */
static struct finding_row *finding_lead(struct cmd_ctx *x, struct finding_row *lead,
					GError **error)
{
	for (guint hops = 0; hops < 8 && lead->state == FINDING_DUPLICATE && lead->dup_of;
	     hops++) {
		g_autoptr(GError) local = NULL;
		struct finding_row *next = db_finding_get(x->c->db, lead->dup_of, &local);

		if (!next) {
			if (g_error_matches(local, BOT_ERROR, BOT_ERROR_NOT_FOUND))
				break;
			finding_row_free(lead);
			g_propagate_error(error, g_steal_pointer(&local));
			return NULL;
		}
		finding_row_free(lead);
		lead = next;
	}
	return lead;
}

/* Refuses @row unless the sender may act on @f, for @verb; false only when the store fails. */
static bool thread_may(struct cmd_ctx *x, const struct finding_row *f, const char *verb,
		       struct command_row *row, bool *may, GError **error)
{
	*may = may_touch_finding(x, f, false, error);
	if (*error)
		return false;
	if (!*may)
		refuse(row, "only those on the report's thread, and the tree's maintainers, may %s "
			    "finding %" G_GINT64_FORMAT, verb, f->id);
	return true;
}

static bool cmd_dup(struct cmd_ctx *x, char **argv, guint argc, struct command_row *row,
		    GError **error)
{
	zd_autoptr(finding_row) f = NULL;
	zd_autoptr(finding_row) lead = NULL;
	g_autofree char *why = NULL;
	gint64 named;
	bool may, visible = true;

	(void)argc;
	if (!finding_of(x, NULL, row, &f, error))
		return false;
	if (!f)
		return true;
	if (!thread_may(x, f, "mark as a duplicate", row, &may, error))
		return false;
	if (!may)
		return true;
	if (f->state == FINDING_DUPLICATE) {
		done(row, "finding %" G_GINT64_FORMAT " is a duplicate of finding %" G_GINT64_FORMAT
			  " already; #zeroday undup undoes it", f->id, f->dup_of);
		return true;
	}
	if (f->state != FINDING_OPEN && f->state != FINDING_INCONCLUSIVE) {
		done(row, "finding %" G_GINT64_FORMAT " is closed already (%s)", f->id,
		     db_finding_state_name(f->state));
		return true;
	}
	if (!finding_of(x, argv[0], row, &lead, error))
		return false;
	if (!lead)
		return true;
	named = lead->id;
	/* One tree's finding never stands for another's: their threads go to other people. */
	if (g_strcmp0(lead->tree, f->tree) != 0) {
		refuse(row, "finding %" G_GINT64_FORMAT " is on %s, finding %" G_GINT64_FORMAT
			    " on %s: a finding is a duplicate only of a finding of the same tree",
		       f->id, f->tree ? f->tree : "no tree", lead->id,
		       lead->tree ? lead->tree : "no tree");
		return true;
	}
	lead = finding_lead(x, g_steal_pointer(&lead), error);
	if (!lead)
		return false;
	if (g_strcmp0(lead->tree, f->tree) != 0 ||
	    !finding_visible(x, lead, &visible, error) || !visible) {
		if (*error)
			return false;
		refuse(row, "finding %" G_GINT64_FORMAT " is a duplicate of a finding that is not "
			    "of this tree's, or not yours to see", named);
		return true;
	}
	if (lead->id == f->id) {
		refuse(row, "finding %" G_GINT64_FORMAT " cannot be a duplicate of itself", f->id);
		return true;
	}
	why = g_strdup_printf("said a duplicate of finding %" G_GINT64_FORMAT " by %s", lead->id,
			      x->sender);
	if (!db_finding_dup(x->c->db, f->id, lead->id, why, error))
		return false;
	row->finding_id = f->id;
	g_message("commands: finding %" G_GINT64_FORMAT " %s", f->id, why);
	done(row, "Recorded: finding %" G_GINT64_FORMAT " (%s) is the same bug as finding %"
		  G_GINT64_FORMAT " (%s, %s). zeroday mails no more about it in this thread; "
		  "finding %" G_GINT64_FORMAT "'s thread carries it from now on.",
	     f->id, f->title ? f->title : "", lead->id, lead->title ? lead->title : "",
	     db_finding_state_name(lead->state), lead->id);
	return true;
}

static bool cmd_undup(struct cmd_ctx *x, char **argv, guint argc, struct command_row *row,
		      GError **error)
{
	zd_autoptr(finding_row) f = NULL;
	bool may;

	(void)argv, (void)argc;
	if (!finding_of(x, NULL, row, &f, error))
		return false;
	if (!f)
		return true;
	if (!thread_may(x, f, "undo a dup of", row, &may, error))
		return false;
	if (!may)
		return true;
	if (f->state != FINDING_DUPLICATE) {
		done(row, "finding %" G_GINT64_FORMAT " is no duplicate (%s)", f->id,
		     db_finding_state_name(f->state));
		return true;
	}
	if (!db_finding_undup(x->c->db, f->id, error))
		return false;
	row->finding_id = f->id;
	g_message("commands: finding %" G_GINT64_FORMAT " is no duplicate, said %s", f->id,
		  x->sender);
	done(row, "Recorded: finding %" G_GINT64_FORMAT " (%s) is no duplicate of finding %"
		  G_GINT64_FORMAT "; it is open again, in this thread.",
	     f->id, f->title ? f->title : "", f->dup_of);
	return true;
}

static bool cmd_fix(struct cmd_ctx *x, char **argv, guint argc, struct command_row *row,
		    GError **error)
{
	zd_autoptr(finding_row) f = NULL;
	const char *subject = argv[0];
	bool may;

	(void)argc;
	if (strlen(subject) > REPO_SUMMARY_MAX - 3) {
		refuse(row, "a commit subject is at most %u bytes", REPO_SUMMARY_MAX - 3);
		return true;
	}
	if (!finding_of(x, NULL, row, &f, error))
		return false;
	if (!f)
		return true;
	if (!thread_may(x, f, "name the fix of", row, &may, error))
		return false;
	if (!may)
		return true;
	if (f->state == FINDING_INCONCLUSIVE) {
		refuse(row, "finding %" G_GINT64_FORMAT " names no culprit, so zeroday cannot tell "
			    "when a fix reaches it; #zeroday invalid closes it", f->id);
		return true;
	}
	if (f->state != FINDING_OPEN) {
		done(row, "finding %" G_GINT64_FORMAT " is closed already (%s)", f->id,
		     db_finding_state_name(f->state));
		return true;
	}
	if (!db_finding_set_fix(x->c->db, f->id, subject, error))
		return false;
	row->finding_id = f->id;
	g_message("commands: finding %" G_GINT64_FORMAT " is fixed by \"%s\", said %s", f->id,
		  subject, x->sender);
	done(row, "Recorded: finding %" G_GINT64_FORMAT " (%s) closes once a commit \"%s\" is on "
		  "%s and the failure is gone there; a follow-up in this thread will name it.",
	     f->id, f->title ? f->title : "", subject, f->tree ? f->tree : "its tree");
	return true;
}

/* ---- One command mail ---- */

/*
 * The words of @line when its command takes the rest of its line as one
 * argument ("#zeroday fix: net: fix the count": "fix:", then the subject
 * with its blanks trimmed and each run of them one space); NULL
 * otherwise, with *@why set when the line cannot be read at all.
 */
static char **rest_of_line(const char *line, const char **why)
{
	const char *p = line + strlen("#zeroday");
	g_autofree char *word = NULL;
	const struct command *cmd;
	g_autoptr(GStrvBuilder) b = NULL;
	g_autoptr(GString) rest = g_string_new(NULL);
	gsize len;

	if (!line_readable(line, why))
		return NULL;
	p += strspn(p, " \t");
	len = strcspn(p, " \t");
	word = g_strndup(p, len);
	if (len > 1 && word[len - 1] == ':')
		word[len - 1] = '\0';
	cmd = command_named(word);
	if (!cmd || !cmd->rest)
		return NULL;
	for (p += len; *p;) {
		gsize blanks = strspn(p, " \t");

		p += blanks;
		if (!*p)
			break;
		if (blanks && rest->len)
			g_string_append_c(rest, ' ');
		len = strcspn(p, " \t");
		g_string_append_len(rest, p, (gssize)len);
		p += len;
	}
	b = g_strv_builder_new();
	g_strv_builder_add(b, word);
	if (rest->len)
		g_strv_builder_add(b, rest->str);
	return g_strv_builder_end(b);
}

/* Runs command line @n of the mail into @row, in a savepoint: a refusal changes nothing. */
static bool run_line(struct cmd_ctx *x, const char *line, struct command_row *row,
		     GError **error)
{
	const char *why = NULL;
	g_auto(GStrv) words = rest_of_line(line, &why);
	const struct command *cmd;
	guint argc;

	if (!words && !why)
		words = commands_split_line(line, &why);
	if (!words) {
		refuse(row, "not taken: %s", why);
		return true;
	}
	if (!words[0]) {
		refuse(row, "a command word must follow #zeroday; try #zeroday help");
		return true;
	}
	for (const char *p = words[0]; *p; p++) {
		if ((unsigned char)*p >= 0x80) {
			refuse(row, "not a command: the command word must be plain ASCII "
				    "(lookalike letters are not taken)");
			return true;
		}
	}
	cmd = command_named(words[0]);
	if (!cmd && g_str_has_suffix(words[0], ":")) {
		words[0][strlen(words[0]) - 1] = '\0';
		cmd = command_named(words[0]);
	}
	if (!cmd) {
		const struct command *near = nearest_command(words[0]);

		refuse(row, "unknown command '%s'; did you mean:\n    %s", words[0], near->usage);
		return true;
	}
	row->verb = g_strdup(cmd->name);
	argc = g_strv_length(words) - 1;
	if (argc < cmd->min_args || argc > cmd->max_args) {
		refuse(row, "usage:\n    %s", cmd->usage);
		return true;
	}
	if (x->unverified && (cmd->who != WHO_ANYONE || cmd->identity)) {
		refuse(row, "not taken from this copy: the list rewrote its From to its own "
			    "address, so zeroday cannot tell who sent it (a Reply-To proves "
			    "nothing). Send the command again to zeroday's address alone.");
		return true;
	}
	if (cmd->who == WHO_THREAD && !x->bot_mail && !x->admin && strcmp(cmd->name, "test") &&
	    argc == 0) {
		refuse(row, "%s works in the thread of one of zeroday's mails", cmd->name);
		return true;
	}
	if (!db_tx_begin(x->c->db, error))
		return false;
	if (!cmd->run(x, words + 1, argc, row, error)) {
		db_tx_rollback(x->c->db);
		return false;
	}
	if (row->state == COMMAND_REFUSED) {
		db_tx_rollback(x->c->db);
		return true;
	}
	return db_tx_commit(x->c->db, error);
}



/* @subject without the reply prefixes ("Re: ", "AW: ") it starts with: the template adds one. */
static const char *without_re(const char *subject)
{
	static const char *const prefixes[] = { "re:", "aw:", "sv:", "antw:" };
	bool again = true;

	while (again) {
		again = false;
		while (*subject == ' ')
			subject++;
		for (gsize i = 0; i < G_N_ELEMENTS(prefixes); i++) {
			if (g_ascii_strncasecmp(subject, prefixes[i], strlen(prefixes[i])) == 0) {
				subject += strlen(prefixes[i]);
				again = true;
			}
		}
	}
	return subject;
}

/*
 * @answer as the reply's text: each line that does not start with a
 * blank its own paragraph, as the answer was written line by line
 * ("Branches:", "Blacklisted: ..."), so that filling the reply to 72
 * columns does not run them together; indented lines stay with the line
 * above them (caller frees).
 */
static char *answer_paragraphs(const char *answer)
{
	GString *out = g_string_sized_new(strlen(answer) + 16);

	for (const char *p = answer; *p; p++) {
		g_string_append_c(out, *p);
		if (*p == '\n' && p > answer && p[-1] != '\n' && p[1] && !strchr(" \t\n", p[1]))
			g_string_append_c(out, '\n');
	}
	return g_string_free(out, FALSE);
}

/*
 * Queues the one reply to command mail @mail_id (parsed: @m), To @to,
 * saying @intro (or NULL) and each command's answer; marks the mail
 * answered.
 */
static bool queue_answer(const struct bot *c, gint64 mail_id, const struct patchmail *m,
			 const char *to, const char *intro, gint64 now, GError **error)
{
	g_autoptr(GPtrArray) rows = db_command_list(c->db, mail_id, error);
	zd_autoptr(template_values) v = template_values_new();
	g_autoptr(GError) cause = NULL;
	g_autofree char *tag = g_strdup_printf("c%" G_GINT64_FORMAT, mail_id);
	struct reply r;
	gint64 reply_id = 0;
	bool ok;

	if (!rows)
		return false;
	reply_init(&r);
	g_ptr_array_add(r.to, g_strdup(to));
	reply_thread(&r, m->message_id, m->in_reply_to,
		     m->references ? (char **)m->references->pdata : NULL,
		     m->references ? m->references->len : 0);
	template_values_set(v, "bot_name", c->config->mail_name);
	template_values_set(v, "bot_address", c->config->mail_address);
	template_values_set(v, "subject", without_re(m->subject));
	template_values_set(v, "intro", intro);
	for (guint i = 0; i < rows->len; i++) {
		const struct command_row *cr = rows->pdata[i];
		struct template_values *item = template_values_add(v, "results");

		g_autofree char *answer = answer_paragraphs(cr->answer ? cr->answer : "(no answer)");

		template_values_set(item, "line", cr->line);
		template_values_set(item, "answer", answer);
	}
	render_mail(&r, c->config, "command-reply", v, &cause);
	ok = outbox_queue_reply(c, OUTBOX_COMMAND, &r, cause, tag, now, &reply_id, error) &&
	     db_command_mail_set(c->db, mail_id, COMMAND_MAIL_ANSWERED, NULL, reply_id, error);
	reply_release(&r);
	return ok;
}

/* Records command mail @mail_id as getting no reply, and why, in the log too. */
static bool silent(const struct bot *c, const struct mail_row *mail, const char *sender,
		   const char *why, gint64 now, GError **error)
{
	g_message("commands: mail %" G_GINT64_FORMAT " <%s> from %s is not answered: %s",
		  mail->id, mail->message_id, sender ? sender : "?", why);
	return db_command_mail_add(c->db, mail->id, sender ? sender : "", now,
				   COMMAND_MAIL_SILENT, why, error);
}

/*
 * The mail's In-Reply-To, then its References newest first, borrowed
 * (NULL-terminated; the caller frees the array only).
 */
static const char **parent_ids(const struct patchmail *m)
{
	GPtrArray *ids = g_ptr_array_new();

	if (m->in_reply_to)
		g_ptr_array_add(ids, m->in_reply_to);
	for (guint i = m->references ? m->references->len : 0; i > 0; i--)
		g_ptr_array_add(ids, m->references->pdata[i - 1]);
	g_ptr_array_add(ids, NULL);
	return (const char **)g_ptr_array_free(ids, FALSE);
}

/* Whether @sender matches a pattern of [commands] ignore. */
static bool ignored_sender(const struct config *config, const char *sender)
{
	for (char **p = config->commands_ignore; p && *p; p++) {
		if (fnmatch(*p, sender, FNM_CASEFOLD) == 0)
			return true;
	}
	return false;
}

/*
 * The "@domain" of @sender when [commands] dkim-required names that
 * domain (borrowed from @sender), else NULL: whether identity_ok() reads
 * the mail's raw text.
 */
static const char *dkim_domain(const struct config *config, const char *sender)
{
	const char *domain = strrchr(sender, '@');

	if (!domain || !config->commands_dkim_required ||
	    !g_strv_contains((const char *const *)config->commands_dkim_required, domain + 1))
		return NULL;
	return domain;
}

/*
 * Whether the sender's identity holds: for a From domain in [commands]
 * dkim-required, a valid DKIM signature of that domain. *@why says why
 * not (caller frees).
 */
static bool identity_ok(const struct config *config, const char *sender, const char *raw,
			gsize len, char **why)
{
	const char *domain = dkim_domain(config, sender);
	g_autoptr(GError) local = NULL;
	g_auto(GStrv) signers = NULL;

	if (!domain)
		return true;
	if (!dkim_verify_mail(raw, len, config->commands_dkim_keys, &signers, &local)) {
		*why = g_strdup_printf("the DKIM signature required of %s could not be checked "
				       "now (%s): send it again later", domain + 1, local->message);
		return false;
	}
	if (dkim_from_matches((const char *const *)signers, sender))
		return true;
	if (signers && signers[0]) {
		g_autofree char *by = g_strjoinv(", ", signers);

		*why = g_strdup_printf("mail from %s must carry a valid DKIM signature of %s; "
				       "this one is signed by %s only", domain + 1, domain + 1, by);
	} else {
		*why = g_strdup_printf("mail from %s must carry a valid DKIM signature of %s; "
				       "this one has none that verifies", domain + 1, domain + 1);
	}
	return false;
}

/*
 * Who a command mail is from: its From, unless a list rewrote that to
 * its own address (DMARC), as "Joe via KB <list@example.org>": From is
 * then the address of List-Post, or of a list zeroday knows
 * (policy_is_list()), and the one Reply-To names the writer, taken for
 * the reply's address and the per-sender limit, never for a right
 * (unverified). Release with sender_release().
 */
struct sender {
	char *key;          /* address_key() of who it counts as from, or NULL */
	char *reply;        /* the address its reply goes To (normalized), or NULL */
	char *list_post;    /* List-Post's address, or NULL */
	bool unverified;    /* key and reply are Reply-To's */
	const char *silent; /* why it gets no reply at all (static), or NULL */
	char *raw;          /* its raw text, as stored (for DKIM) */
	gsize len;
};

static void sender_release(struct sender *s)
{
	g_free(s->key);
	g_free(s->reply);
	g_free(s->list_post);
	g_free(s->raw);
}

/* Sets *@is_list: whether @key is the address of the list @s came through, or of one known. */
static bool list_address(const struct bot *c, const struct sender *s, const char *key,
			 bool *is_list, GError **error)
{
	*is_list = g_strcmp0(key, s->list_post) == 0;
	return *is_list || policy_is_list(c, key, is_list, error);
}

/* Fills @out (zeroed first) for stored mail @mail_id, parsed: @m. False only when the store fails. */
static bool sender_of(const struct bot *c, gint64 mail_id, const struct patchmail *m,
		      struct sender *out, GError **error)
{
	struct address_reply_fields f;
	g_autoptr(GError) local = NULL;
	g_autofree char *key = NULL;
	g_autofree char *reply_key = NULL;
	bool is_list = false;

	memset(out, 0, sizeof(*out));
	if (!m->from) {
		out->silent = "no readable From";
		return true;
	}
	key = address_key(m->from);
	if (!address_is_plain(key)) {
		/* "z<adm@example.net>"@evil.org reads as an administrator to a careless eye. */
		out->key = g_steal_pointer(&key);
		out->silent = "its From is no plain user@domain (quotes, brackets or '@' in its "
			      "local part)";
		return true;
	}
	out->raw = db_mail_raw(c->db, mail_id, &out->len, error);
	if (!out->raw)
		return false;
	if (!address_reply_fields_read(&f, out->raw, out->len, &local))
		g_debug("commands: mail %" G_GINT64_FORMAT ": %s", mail_id, local->message);
	out->list_post = g_steal_pointer(&f.list_post);
	/* RFC 3834: no answer to bulk mail; but a list's copy of a person's mail is bulk too. */
	if (g_strcmp0(f.precedence, "junk") == 0)
		out->silent = "a junk mail (Precedence: junk)";
	else if (g_strcmp0(f.precedence, "bulk") == 0 && !m->list_id)
		out->silent = "a bulk mail (Precedence: bulk), not through a list";
	if (!list_address(c, out, key, &is_list, error))
		goto fail;
	if (!is_list) {
		out->key = g_steal_pointer(&key);
		out->reply = g_strdup(m->from);
		address_reply_fields_release(&f);
		return true;
	}
	if (f.reply_to && f.reply_to[0] && !f.reply_to[1])
		reply_key = address_key(f.reply_to[0]);
	if (reply_key && address_is_plain(reply_key) &&
	    !list_address(c, out, reply_key, &is_list, error))
		goto fail;
	if (!reply_key || !address_is_plain(reply_key) || is_list) {
		out->key = g_steal_pointer(&key);
		if (!out->silent)
			out->silent = "its From is a mailing list's address, and no single Reply-To "
				      "names who wrote it";
		address_reply_fields_release(&f);
		return true;
	}
	out->key = g_steal_pointer(&reply_key);
	out->reply = g_strdup(f.reply_to[0]);
	out->unverified = true;
	address_reply_fields_release(&f);
	return true;
fail:
	address_reply_fields_release(&f);
	return false;
}

/*
 * Whether the mail replies, first of zeroday's mails, to one of its
 * command answers: an HTML auto-responder's echo, quoting the answer's
 * "#zeroday help" back.
 */
static bool replies_to_answer(const struct bot *c, gint64 bot_mail, bool *answer,
			      GError **error)
{
	zd_autoptr(outbox_row) o = NULL;

	*answer = false;
	if (!bot_mail)
		return true;
	o = db_outbox_get(c->db, bot_mail, error);
	if (!o)
		return false;
	*answer = o->kind == OUTBOX_COMMAND;
	return true;
}

/* commands_take() for a command mail from @who, holding command @lines (none: HTML only). */
static bool take(const struct bot *c, const struct mail_row *mail, const struct patchmail *m,
		 const struct sender *who, struct cmd_ctx *x, char **lines, gint64 now,
		 GError **error)
{
	g_autofree char *bot = address_key(c->config->mail_address);
	g_autofree char *why = NULL;
	const char *sender = who->key;
	gint64 count = 0;
	bool running = false;

	/* Never answered: ourselves, machines, robots. */
	if (who->silent)
		return silent(c, mail, sender, who->silent, now, error);
	if (strcmp(sender, bot) == 0)
		return silent(c, mail, sender, "from zeroday itself", now, error);
	if (m->automatic)
		return silent(c, mail, sender, m->automatic, now, error);
	if (ignored_sender(c->config, sender))
		return silent(c, mail, sender, "a robot's address ([commands] ignore)", now, error);
	/* One answer per Message-ID, whatever copies came. */
	{
		zd_autoptr(mail_row) first = db_mail_by_message_id(c->db, m->message_id, error);
		enum command_mail_state st;
		bool found = false;

		if (!first && *error)
			return false;
		if (first && first->id != mail->id &&
		    !db_command_mail_state(c->db, first->id, &st, &found, error))
			return false;
		if (found)
			return silent(c, mail, sender, "a copy of a command mail taken already", now,
				      error);
	}
	if (!lines[0]) {
		bool answer = false;

		if (!replies_to_answer(c, x->bot_mail, &answer, error))
			return false;
		if (answer)
			return silent(c, mail, sender, "HTML only, in reply to zeroday's answer: "
				      "\"plain text, please\" is said once", now, error);
	}
	if (!db_command_mail_count(c->db, sender, now - 3600, &count, error))
		return false;
	if (count >= c->config->commands_max_sender_hour)
		return silent(c, mail, sender, "over [commands] max-per-sender-hour", now, error);
	if (!db_command_mail_count(c->db, NULL, now - 3600, &count, error))
		return false;
	if (count >= c->config->commands_max_hour)
		return silent(c, mail, sender, "over [commands] max-per-hour", now, error);
	if (!db_command_mail_add(c->db, mail->id, sender, now, COMMAND_MAIL_RUNNING, NULL, error))
		return false;
	if (!lines[0])
		return queue_answer(c, mail->id, m, who->reply, "zeroday reads commands in plain "
				    "text only: plain text, please.", now, error);
	if (g_strv_length(lines) > COMMANDS_MAX) {
		g_autofree char *intro = g_strdup_printf(
			"This mail holds more than %u commands: none of them was taken. Send at "
			"most %u in one mail.", COMMANDS_MAX, COMMANDS_MAX);

		return queue_answer(c, mail->id, m, who->reply, intro, now, error);
	}
	x->sender = sender;
	x->unverified = who->unverified;
	x->list_post = who->list_post;
	/* Reply-To proves nothing: an administrator's address there is anyone's. */
	x->admin = !who->unverified && c->config->commands_admins &&
		   g_strv_contains((const char *const *)c->config->commands_admins, sender);
	x->thread_root = m->references && m->references->len ? m->references->pdata[0]
			 : m->in_reply_to ? m->in_reply_to : m->message_id;
	if (x->bot_mail && !db_outbox_finding_of(c->db, x->parents, &x->finding_id, error))
		return false;
	if (!identity_ok(c->config, sender, who->raw, who->len, &why)) {
		g_message("commands: mail %" G_GINT64_FORMAT " from %s refused: %s", mail->id,
			  sender, why);
		return queue_answer(c, mail->id, m, who->reply, why, now, error);
	}
	for (guint i = 0; lines[i]; i++) {
		zd_autoptr(command_row) row = g_new0(struct command_row, 1);

		row->mail_id = mail->id;
		row->n = i + 1;
		row->line = commands_printable_line(lines[i]);
		if (!run_line(x, lines[i], row, error) || !db_command_add(c->db, row, error))
			return false;
		running |= row->state == COMMAND_RUNNING;
	}
	if (running)
		return true;
	return queue_answer(c, mail->id, m, who->reply, NULL, now, error);
}

bool commands_take(const struct bot *c, const struct mail_row *mail,
		   const struct patchmail *m, gint64 now, bool *taken, GError **error)
{
	g_autofree const char **parents = parent_ids(m);
	g_auto(GStrv) lines = NULL;
	struct cmd_ctx x = { .c = c, .mail_id = mail->id, .m = m, .now = now };
	struct sender who;
	bool ok;

	*taken = false;
	x.parents = parents;
	if (!db_outbox_of_message_ids(c->db, parents, &x.bot_mail, error))
		return false;
	if (!x.bot_mail && !patchmail_addressed_to(m, c->config->mail_address))
		return true;
	lines = commands_lines(m->body, COMMANDS_MAX);
	if (!lines[0] && m->html_only && m->html) {
		/* Only a command the sender wrote asks for "plain text, please": not one quoted. */
		g_auto(GStrv) html = commands_html_lines(m->html, COMMANDS_MAX);

		if (!html[0])
			return true;
	} else if (!lines[0]) {
		return true;
	}
	if (!sender_of(c, mail->id, m, &who, error))
		return false;
	/*
	 * A list's copy, its From rewritten to the list's, of a mail sent to
	 * zeroday's own address too: the direct copy, whose From is the
	 * sender's and may be verified, is the one taken, whichever comes
	 * first (taken here, the list's would silence it as a copy).
	 */
	if (who.unverified && patchmail_addressed_to(m, c->config->mail_address)) {
		g_message("commands: mail %" G_GINT64_FORMAT " <%s> is a list's copy of a mail to "
			  "zeroday: its direct copy is taken", mail->id, m->message_id);
		sender_release(&who);
		return true;
	}
	*taken = true;
	ok = take(c, mail, m, &who, &x, lines, now, error);
	sender_release(&who);
	return ok;
}

/* ---- Answers that come later ---- */

/* Answers command mail @mail_id when none of its commands runs any more. */
static bool answer_if_done(const struct bot *c, gint64 mail_id, gint64 now,
			   GError **error)
{
	g_autoptr(GPtrArray) rows = db_command_list(c->db, mail_id, error);
	zd_autoptr(patchmail) m = NULL;
	g_autoptr(GError) local = NULL;
	struct sender who;
	bool ok;

	if (!rows)
		return false;
	for (guint i = 0; i < rows->len; i++) {
		if (((struct command_row *)rows->pdata[i])->state == COMMAND_RUNNING)
			return true;
	}
	m = inbox_mail(c->db, c->config, mail_id, false, &local);
	if (!m && local->domain == BOT_ERROR) {
		g_propagate_error(error, g_steal_pointer(&local));
		return false;
	}
	if (!m) {
		/* A newer parser refuses the stored mail: there is nobody to answer. */
		g_warning("commands: mail %" G_GINT64_FORMAT " cannot be answered: %s", mail_id,
			  local->message);
		return db_command_mail_set(c->db, mail_id, COMMAND_MAIL_SILENT, local->message, 0,
					   error);
	}
	if (!sender_of(c, mail_id, m, &who, error))
		return false;
	/* Read again as when it was taken: a list rewrote its From, its Reply-To is answered. */
	ok = who.silent ? db_command_mail_set(c->db, mail_id, COMMAND_MAIL_SILENT, who.silent, 0,
					      error)
			: queue_answer(c, mail_id, m, who.reply, NULL, now, error);
	sender_release(&who);
	return ok;
}

/* What a test's build job said, in words. */
static const char *result_words(enum job_result result)
{
	switch (result) {
	case JOB_RESULT_PASS:
		return "builds with nothing new against its parent";
	case JOB_RESULT_NEW_DIAGNOSTICS:
		return "builds, with new warnings";
	case JOB_RESULT_FAIL_NEW_ERROR:
		return "fails to build: a new error";
	case JOB_RESULT_FAIL_PARENT_FAILING:
		return "fails to build, as its parent does";
	default:
		return db_job_result_name(result);
	}
}

bool commands_job_done(const struct bot *c, const struct job_row *job,
		       enum job_result result, const char *note, gint64 now, GError **error)
{
	g_autoptr(GPtrArray) waiting = db_command_waiting(c->db, job->id, 0, error);

	if (!waiting)
		return false;
	for (guint i = 0; i < waiting->len; i++) {
		struct command_row *row = waiting->pdata[i];

		if (result == JOB_RESULT_ERROR) {
			done(row, "zeroday could not run it (an infrastructure error, not a verdict on "
				  "the kernel): %s", note ? note : "unknown");
		} else if (row->finding_id && result == JOB_RESULT_PASS) {
			g_autofree char *why = g_strdup_printf("not reproduced by a rerun (job %"
							       G_GINT64_FORMAT ")", job->id);

			if (!db_finding_close(c->db, row->finding_id, FINDING_UNREPRODUCED, why,
					      error))
				return false;
			done(row, "Finding %" G_GINT64_FORMAT " no longer reproduces (%s): it is "
				  "closed.", row->finding_id, note ? note : job->commit);
		} else if (row->finding_id) {
			done(row, "Finding %" G_GINT64_FORMAT " still reproduces at %.12s on %s: %s",
			     row->finding_id, job->commit, job->target, note ? note : "");
		} else {
			done(row, "%s %.12s on %s: %s%s%s. Any new problem it has is reported in a "
				  "thread of its own.", job->tree, job->commit, job->target,
			     result_words(result), note ? "; " : "", note ? note : "");
		}
		if (!db_command_update(c->db, row, error) ||
		    !answer_if_done(c, row->mail_id, now, error))
			return false;
	}
	return true;
}

/*
 * Answers command @row, whose series is settled (tested, or never to be)
 * or whose job is gone, in the caller's transaction.
 */
static bool answer_stale(const struct bot *c, struct command_row *row, gint64 now,
			 GError **error)
{
	if (row->series_id) {
		g_autoptr(GError) local = NULL;
		zd_autoptr(series_row) s = db_series_get(c->db, row->series_id, &local);

		if (!s && !g_error_matches(local, BOT_ERROR, BOT_ERROR_NOT_FOUND)) {
			g_propagate_error(error, g_steal_pointer(&local));
			return false;
		}
		if (!s) {
			done(row, "the series is no longer known");
		} else if (s->state == SERIES_TESTED) {
			g_autofree char *text = series_result_text(s);

			done(row, "%s", text);
		} else {
			series_settled_text(row, s);
		}
	} else {
		done(row, "not run: its tree is no longer followed");
	}
	return db_command_update(c->db, row, error) &&
	       answer_if_done(c, row->mail_id, now, error);
}

/*
 * Sets *@own: whether command mail @mail_id comes from series @s's own
 * sender, by its From (Reply-To proves nothing).
 */
static bool from_series_sender(const struct bot *c, gint64 mail_id, const struct series_row *s,
			       bool *own, GError **error)
{
	g_autoptr(GError) local = NULL;
	zd_autoptr(patchmail) m = inbox_mail(c->db, c->config, mail_id, false, &local);
	struct sender who;

	*own = false;
	if (!m && local->domain == BOT_ERROR) {
		g_propagate_error(error, g_steal_pointer(&local));
		return false;
	}
	if (!m)
		return true;
	if (!sender_of(c, mail_id, m, &who, error))
		return false;
	*own = !who.silent && !who.unverified && g_strcmp0(who.key, s->sender) == 0;
	sender_release(&who);
	return true;
}

bool commands_series_claimed(const struct bot *c, gint64 series_id, gint64 now,
			     bool *claimed, GError **error)
{
	g_autoptr(GPtrArray) waiting = db_command_waiting(c->db, 0, series_id, error);
	g_autoptr(GError) local = NULL;
	zd_autoptr(series_row) s = NULL;

	*claimed = false;
	if (!waiting)
		return false;
	if (waiting->len) {
		s = db_series_get(c->db, series_id, &local);
		if (!s && !g_error_matches(local, BOT_ERROR, BOT_ERROR_NOT_FOUND)) {
			g_propagate_error(error, g_steal_pointer(&local));
			return false;
		}
	}
	for (guint i = 0; i < waiting->len; i++) {
		const struct command_row *row = waiting->pdata[i];
		bool own = false;

		/*
		 * Only the series' sender's own test takes the place of the
		 * series' replies: anyone else's leaves them to go, to the
		 * sender and the lists, and gets an answer of its own.
		 */
		if (s && !from_series_sender(c, row->mail_id, s, &own, error))
			return false;
		*claimed |= own;
		if (!answer_stale(c, waiting->pdata[i], now, error))
			return false;
	}
	return true;
}

bool commands_sweep(const struct bot *c, gint64 now, GError **error)
{
	g_autoptr(GPtrArray) stale = db_command_stale(c->db, error);

	if (!stale)
		return false;
	for (guint i = 0; i < stale->len; i++) {
		if (!db_tx_begin(c->db, error))
			return false;
		if (!answer_stale(c, stale->pdata[i], now, error) || !db_tx_commit(c->db, error)) {
			db_tx_rollback(c->db);
			return false;
		}
	}
	return true;
}
