/*
 * Mailing-list mail as data: see patchmail.h.
 *
 * Three stages. A line scan first bounds what GMime will build (see
 * prescan()); GMime then reads the headers, the MIME structure, the
 * transfer encodings and charsets; last, plain text scanning finds in
 * the body what `git am` would: in-body headers, the "---" line, the
 * diff, and the base-commit lines `git format-patch --base` writes.
 */
#define G_LOG_DOMAIN "mail"

#include "autoconfig.h"

#include <string.h>

#include "mail/address.h"
#include "mail/mail.h"
#include "mail/mime-private.h"
#include "mail/patchmail.h"

/* References kept: the thread's root and the nearest ancestors. */
#define REFERENCES_MAX 100
/* To or Cc addresses kept, each. */
#define RECIPIENTS_MAX 500
/* Subject tag words kept, and the longest one kept. */
#define PREFIXES_MAX 16
#define PREFIX_LEN_MAX 64
/* Digits of a version or of n and N ("[PATCH 6.6 0123/1234]"). */
#define TAG_DIGITS_MAX 4
/* The longest reply word ("Antw:"). */
#define REPLY_WORD_MAX 4
/* Digits of a hunk header's line numbers: git's are ints. */
#define HUNK_DIGITS_MAX 9
/* prerequisite-patch-id lines kept. */
#define PREREQUISITES_MAX 100
/* The longest List-Id (RFC 2919). */
#define LIST_ID_MAX 255
/* A header name quoted in a refusal, at most. */
#define REASON_NAME_MAX 40
/*
 * Boundary lines and Content-Type lines allowed before GMime parses:
 * every MIME part needs one or the other (or both), so this is the
 * part limit with room for mail whose parts have both.
 */
#define STRUCTURE_LINES_MAX (4 * PATCHMAIL_PARTS_MAX)

/* ---- Lines ---- */

/* One line of a text, without its newline; next is where the following one starts. */
struct line {
	const char *start;
	gsize len;
	const char *next;
};

/* Reads the line at @p into @l; false at @end. */
static bool line_at(const char *p, const char *end, struct line *l)
{
	const char *nl;

	if (p >= end)
		return false;
	nl = memchr(p, '\n', (gsize)(end - p));
	l->start = p;
	l->len = (gsize)((nl ? nl : end) - p);
	l->next = nl ? nl + 1 : end;
	/* A CR before the newline (CRLF text inside base64) says nothing; the bytes kept keep it. */
	if (l->len && l->start[l->len - 1] == '\r')
		l->len--;
	return true;
}

static bool line_starts(const struct line *l, const char *prefix)
{
	gsize n = strlen(prefix);

	return l->len >= n && memcmp(l->start, prefix, n) == 0;
}

static bool line_starts_nocase(const struct line *l, const char *prefix)
{
	gsize n = strlen(prefix);

	return l->len >= n && g_ascii_strncasecmp(l->start, prefix, n) == 0;
}

static bool line_equals(const struct line *l, const char *text)
{
	return l->len == strlen(text) && memcmp(l->start, text, l->len) == 0;
}

static bool line_blank(const struct line *l)
{
	for (gsize i = 0; i < l->len; i++) {
		if (l->start[i] != ' ' && l->start[i] != '\t')
			return false;
	}
	return true;
}

/* Returns @len bytes at @s as valid UTF-8, a NUL byte or a bad sequence made U+FFFD (caller frees). */
static char *valid_text(const char *s, gsize len)
{
	/* g_utf8_make_valid() takes a NUL for a bad byte when given a length. */
	return g_utf8_make_valid(s, (gssize)len);
}

/*
 * Returns @s with every run of spaces and control characters (CR, LF and
 * tab included) made one space, and trimmed: a header value as one line
 * (caller frees).
 */
static char *one_line(const char *s)
{
	g_autofree char *valid = valid_text(s, strlen(s));
	GString *out = g_string_sized_new(strlen(valid));
	bool space = false;

	for (const char *p = valid; *p; p++) {
		if ((unsigned char)*p <= ' ' || *p == 0x7f) {
			space = out->len > 0;
			continue;
		}
		if (space)
			g_string_append_c(out, ' ');
		space = false;
		g_string_append_c(out, *p);
	}
	return g_string_free(out, FALSE);
}

/* ---- Subject tags ---- */

/* Reply and forward prefixes, as the mail clients of kernel developers write them. */
static const char *const reply_words[] = {
	"re", "aw", "sv", "vs", "antw", "odp", "fw", "fwd", "wg", "tr",
};

enum keyword { KEYWORD_PATCH, KEYWORD_RFC, KEYWORD_RESEND };

/* Tag words with a meaning; longest first where one starts another. */
static const struct {
	const char *word;
	enum keyword keyword;
} keywords[] = {
	{ "PATCHSET", KEYWORD_PATCH },
	{ "PATCHES", KEYWORD_PATCH },
	{ "PATCH", KEYWORD_PATCH },
	{ "RESEND", KEYWORD_RESEND },
	{ "RFC", KEYWORD_RFC },
};

/* What the tags said so far, beyond the public fields. */
struct tag_state {
	bool keyword; /* a PATCH, RFC or RESEND word was seen */
	bool patch;   /* a PATCH word was seen */
	bool versioned;
};

/* If @p starts with a reply word and its colon ("Re:", "AW :"), returns what follows; else NULL. */
static const char *skip_reply_word(const char *p)
{
	gsize len = 0;
	const char *colon;

	while (len <= REPLY_WORD_MAX && g_ascii_isalpha(p[len]))
		len++;
	if (len == 0 || len > REPLY_WORD_MAX)
		return NULL;
	for (colon = p + len; *colon == ' ';)
		colon++;
	if (*colon != ':')
		return NULL;
	for (gsize i = 0; i < G_N_ELEMENTS(reply_words); i++) {
		if (strlen(reply_words[i]) == len && g_ascii_strncasecmp(p, reply_words[i], len) == 0)
			return colon + 1;
	}
	return NULL;
}

/* Parses 1 to TAG_DIGITS_MAX decimal digits. */
static bool tag_number(const char *s, gsize len, guint *out)
{
	guint value = 0;

	if (len == 0 || len > TAG_DIGITS_MAX)
		return false;
	for (gsize i = 0; i < len; i++) {
		if (!g_ascii_isdigit(s[i]))
			return false;
		value = value * 10 + (guint)(s[i] - '0');
	}
	*out = value;
	return true;
}

/* "v3" or "V3"; v0 is no version. */
static bool tag_version(const char *w, gsize len, guint *out)
{
	return len >= 2 && (w[0] == 'v' || w[0] == 'V') && tag_number(w + 1, len - 1, out) &&
	       *out > 0;
}

/*
 * "2/7" or "00/12": n of N, with N > 0. An n past N ("[PATCH 3/2]") is
 * kept as it is: a follow-up posted in a finished series' thread, which
 * b4 takes as raising the count (patchmail_subject_beyond()).
 */
static bool tag_counter(const char *w, gsize len, guint *n, guint *total)
{
	const char *slash = memchr(w, '/', len);

	return slash && tag_number(w, (gsize)(slash - w), n) &&
	       tag_number(slash + 1, len - (gsize)(slash - w) - 1, total) && *total > 0;
}

static void add_prefix(struct patchmail_subject *s, const char *w, gsize len)
{
	if (len == 0 || s->prefixes->len >= PREFIXES_MAX)
		return;
	g_ptr_array_add(s->prefixes, g_strndup(w, MIN(len, PREFIX_LEN_MAX)));
}

/* A word that is no keyword: n/N, a version, else a prefix. The first version and n/N count. */
static void tag_plain_word(struct patchmail_subject *s, struct tag_state *st, const char *w,
			   gsize len)
{
	guint a, b;

	if (tag_counter(w, len, &a, &b)) {
		if (!s->counted) {
			s->n = a;
			s->total = b;
			s->counted = true;
		}
	} else if (tag_version(w, len, &a)) {
		if (!st->versioned) {
			s->version = a;
			st->versioned = true;
		}
	} else {
		add_prefix(s, w, len);
	}
}

/*
 * A keyword alone ("PATCH"), glued to a version ("PATCHv3", "RFCv2"), or
 * to another word by a dash or an underscore ("PATCH-next", "PATCH_v2"):
 * that word is read as a word of its own, never as a keyword.
 */
static bool tag_keyword(struct patchmail_subject *s, struct tag_state *st, const char *w,
			gsize len)
{
	for (gsize i = 0; i < G_N_ELEMENTS(keywords); i++) {
		gsize n = strlen(keywords[i].word);
		const char *rest = w + n;
		gsize rest_len = len - n;
		guint version;

		if (len < n || g_ascii_strncasecmp(w, keywords[i].word, n) != 0)
			continue;
		if (rest_len > 1 && (rest[0] == '-' || rest[0] == '_'))
			rest++, rest_len--;
		else if (rest_len > 0 && !tag_version(rest, rest_len, &version))
			continue; /* "PATCHWORK" */
		st->keyword = true;
		st->patch |= keywords[i].keyword == KEYWORD_PATCH;
		s->rfc |= keywords[i].keyword == KEYWORD_RFC;
		s->resend |= keywords[i].keyword == KEYWORD_RESEND;
		if (rest_len > 0)
			tag_plain_word(s, st, rest, rest_len);
		return true;
	}
	return false;
}

static void tag_word(struct patchmail_subject *s, struct tag_state *st, const char *w, gsize len)
{
	if (!tag_keyword(s, st, w, len))
		tag_plain_word(s, st, w, len);
}

/*
 * If @p starts a bracketed tag, reads its words and returns what follows
 * it; else (no closing bracket) NULL. Brackets inside a tag separate
 * words, as spaces, commas and semicolons do.
 */
static const char *tag_group(struct patchmail_subject *s, struct tag_state *st, const char *p)
{
	const char *end = p;
	int depth = 0;

	do {
		if (*end == '[')
			depth++;
		else if (*end == ']')
			depth--;
		else if (*end == '\0')
			return NULL;
		end++;
	} while (depth > 0);
	for (const char *w = p + 1; w < end - 1;) {
		gsize len = strcspn(w, " ,;[]");

		len = MIN(len, (gsize)(end - 1 - w));
		tag_word(s, st, w, len);
		w += len + 1;
	}
	return end;
}

void patchmail_subject_parse(struct patchmail_subject *out, const char *subject)
{
	g_autofree char *text = one_line(subject ? subject : "");
	struct tag_state st = { 0 };
	const char *p = text;

	memset(out, 0, sizeof(*out));
	out->prefixes = g_ptr_array_new_with_free_func(g_free);
	out->version = out->n = out->total = 1;
	for (;;) {
		const char *next = NULL;

		while (*p == ' ')
			p++;
		if (*p == '[')
			next = tag_group(out, &st, p);
		/* "[PATCH] fw: load ..." is a patch to firmware code, not a forward. */
		else if (!st.keyword && (next = skip_reply_word(p)))
			out->reply = true;
		if (!next)
			break;
		p = next;
	}
	out->title = g_strdup(p);
	out->versioned = st.versioned;
	out->patch = !out->reply && (st.patch || (out->rfc && out->counted));
	out->cover = out->patch && out->counted && out->n == 0;
}

void patchmail_subject_release(struct patchmail_subject *s)
{
	g_free(s->title);
	if (s->prefixes)
		g_ptr_array_unref(s->prefixes);
	memset(s, 0, sizeof(*s));
}

char *patchmail_subject_title(const char *subject)
{
	struct patchmail_subject tags;
	char *title;

	patchmail_subject_parse(&tags, subject);
	title = g_steal_pointer(&tags.title);
	patchmail_subject_release(&tags);
	return title;
}

/* ---- Diffs ---- */

/* The extended header lines of a git diff section (git's apply.c). */
static const char *const git_extended_headers[] = {
	"old mode ", "new mode ", "deleted file mode ", "new file mode ", "copy from ", "copy to ",
	"rename from ", "rename to ", "similarity index ", "dissimilarity index ", "index ",
};

static bool git_extended_header(const struct line *l)
{
	for (gsize i = 0; i < G_N_ELEMENTS(git_extended_headers); i++) {
		if (line_starts(l, git_extended_headers[i]))
			return true;
	}
	return false;
}

/* Reads 1 to HUNK_DIGITS_MAX digits at @p into *value; NULL when there are none or more. */
static const char *hunk_number(const char *p, const char *end, guint64 *value)
{
	gsize digits = 0;

	*value = 0;
	for (; p < end && g_ascii_isdigit(*p); p++) {
		if (++digits > HUNK_DIGITS_MAX)
			return NULL;
		*value = *value * 10 + (guint64)(*p - '0');
	}
	return digits ? p : NULL;
}

/* Reads a hunk header's "N" or "N,M": M lines, 1 when absent. */
static const char *hunk_range(const char *p, const char *end, guint64 *lines)
{
	guint64 first;

	p = hunk_number(p, end, &first);
	*lines = 1;
	if (p && p < end && *p == ',')
		p = hunk_number(p + 1, end, lines);
	return p;
}

/* Parses "@@ -a[,b] +c[,d] @@": b old lines and d new lines follow. */
static bool hunk_header(const struct line *l, guint64 *old_lines, guint64 *new_lines)
{
	const char *end = l->start + l->len;
	const char *p;

	if (!line_starts(l, "@@ -"))
		return false;
	p = hunk_range(l->start + 4, end, old_lines);
	if (!p || end - p < 2 || p[0] != ' ' || p[1] != '+')
		return false;
	p = hunk_range(p + 2, end, new_lines);
	return p && end - p >= 3 && memcmp(p, " @@", 3) == 0;
}

/*
 * Consumes the hunks at @p, each as long as its header says; returns
 * where they end (@p when there is none). An empty line is an empty
 * context line, as for `git apply`: mailers strip the space. A hunk cut
 * short ends the diff where it stops making sense; `git apply` will say
 * the patch is corrupt.
 */
static const char *skip_hunks(const char *p, const char *end)
{
	struct line l;
	guint64 old_lines, new_lines;

	while (line_at(p, end, &l) && hunk_header(&l, &old_lines, &new_lines)) {
		p = l.next;
		while ((old_lines || new_lines) && line_at(p, end, &l)) {
			char c = l.len ? l.start[0] : ' ';

			if (c == ' ' && old_lines && new_lines)
				old_lines--, new_lines--;
			else if (c == '-' && old_lines)
				old_lines--;
			else if (c == '+' && new_lines)
				new_lines--;
			else if (c != '\\')
				return p;
			p = l.next;
		}
		/* "\ No newline at end of file" after the hunk's last line. */
		while (line_at(p, end, &l) && l.len && l.start[0] == '\\')
			p = l.next;
		if (old_lines || new_lines)
			return p;
	}
	return p;
}

/* Consumes a "GIT binary patch": one or two "literal N" or "delta N" blocks, each ended by an empty line. */
static const char *skip_binary(const char *p, const char *end)
{
	struct line l;

	for (int block = 0; block < 2; block++) {
		if (!line_at(p, end, &l) || !(line_starts(&l, "literal ") || line_starts(&l, "delta ")))
			break;
		for (p = l.next; line_at(p, end, &l) && l.len; p = l.next)
			;
		if (line_at(p, end, &l))
			p = l.next;
	}
	return p;
}

/* Consumes "--- ", "+++ " and at least one hunk; NULL when @p starts no such thing. */
static const char *skip_unified(const char *p, const char *end)
{
	struct line minus, plus;
	const char *hunks_end;

	if (!line_at(p, end, &minus) || !line_starts(&minus, "--- ") ||
	    !line_at(minus.next, end, &plus) || !line_starts(&plus, "+++ "))
		return NULL;
	hunks_end = skip_hunks(plus.next, end);
	return hunks_end == plus.next ? NULL : hunks_end;
}

/*
 * Consumes one "diff --git" section. Without extended headers or hunks
 * it is prose that mentions a diff, and NULL is returned.
 */
static const char *skip_git_section(const char *p, const char *end)
{
	struct line l;
	bool headers = false;
	const char *q;

	if (!line_at(p, end, &l) || !line_starts(&l, "diff --git ") ||
	    l.len == strlen("diff --git "))
		return NULL;
	for (p = l.next; line_at(p, end, &l) && git_extended_header(&l); p = l.next)
		headers = true;
	if (line_at(p, end, &l) && line_starts(&l, "Binary files "))
		return l.next;
	if (line_at(p, end, &l) && line_equals(&l, "GIT binary patch"))
		return skip_binary(l.next, end);
	if ((q = skip_unified(p, end)))
		return q;
	return headers ? p : NULL;
}

static const char *skip_section(const char *p, const char *end)
{
	const char *q = skip_git_section(p, end);

	return q ? q : skip_unified(p, end);
}

/* Where a diff lies in a text: [start, end); start is NULL when there is none. */
struct span {
	const char *start;
	const char *end;
};

/* Finds the first diff section starting in the first column, and the ones right after it. */
static struct span find_diff(const char *text, const char *end)
{
	struct span s = { NULL, NULL };
	struct line l;

	for (const char *p = text; line_at(p, end, &l); p = l.next) {
		const char *q = skip_section(p, end);

		if (!q)
			continue;
		s.start = p;
		do
			s.end = q;
		while ((q = skip_section(s.end, end)) && q > s.end);
		break;
	}
	return s;
}

/* ---- Commit messages, in-body headers, trailers ---- */

/* What a text holds around its diff (or without one). */
struct patch_text {
	char *from;      /* in-body, address_normalize()d */
	char *subject;   /* in-body */
	gint64 date;     /* in-body */
	char *message;
	char *base_commit;
	GPtrArray *prerequisites;
};

static void patch_text_release(struct patch_text *t)
{
	g_free(t->from);
	g_free(t->subject);
	g_free(t->message);
	g_free(t->base_commit);
	if (t->prerequisites)
		g_ptr_array_unref(t->prerequisites);
	memset(t, 0, sizeof(*t));
}

/* The in-body header fields `git am` takes from the top of a body. */
enum inbody_field { INBODY_FROM, INBODY_SUBJECT, INBODY_DATE, INBODY_FIELDS };
static const char *const inbody_names[INBODY_FIELDS] = { "From:", "Subject:", "Date:" };

static int inbody_field(const struct line *l)
{
	for (int i = 0; i < INBODY_FIELDS; i++) {
		if (line_starts_nocase(l, inbody_names[i]))
			return i;
	}
	return -1;
}

/* The "From <commit> Mon Sep 17 00:00:00 2001" line that opens a format-patch file. */
static bool mbox_from_line(const struct line *l)
{
	if (!line_starts(l, "From ") || l->len < 5 + 40)
		return false;
	for (gsize i = 5; i < 5 + 40; i++) {
		if (!g_ascii_isxdigit(l->start[i]))
			return false;
	}
	return true;
}

/*
 * Reads the in-body header block at the top of a body, as `git am`
 * does: From:, Subject: and Date: lines (folded ones too) up to an empty
 * line, after the line that opens a format-patch file when there is
 * one. Returns where the message starts.
 */
static const char *read_inbody_headers(const char *p, const char *end, struct patch_text *t)
{
	GString *values[INBODY_FIELDS] = { NULL };
	int current = -1;
	struct line l;

	while (line_at(p, end, &l) && line_blank(&l))
		p = l.next;
	if (line_at(p, end, &l) && mbox_from_line(&l))
		p = l.next;
	for (; line_at(p, end, &l); p = l.next) {
		int field;

		if (current >= 0 && l.len && (l.start[0] == ' ' || l.start[0] == '\t')) {
			g_string_append_len(values[current], l.start, (gssize)l.len);
			continue;
		}
		field = inbody_field(&l);
		if (field < 0 || values[field])
			break;
		current = field;
		values[field] = g_string_new_len(l.start + strlen(inbody_names[field]),
						 (gssize)(l.len - strlen(inbody_names[field])));
	}
	if (current >= 0 && line_at(p, end, &l) && line_blank(&l))
		p = l.next;
	if (values[INBODY_FROM]) {
		g_autofree char *v = one_line(values[INBODY_FROM]->str);

		t->from = address_normalize(v, NULL);
	}
	if (values[INBODY_SUBJECT])
		t->subject = one_line(values[INBODY_SUBJECT]->str);
	if (values[INBODY_DATE]) {
		GDateTime *date = g_mime_utils_header_decode_date(values[INBODY_DATE]->str);

		if (date) {
			t->date = g_date_time_to_unix(date);
			g_date_time_unref(date);
		}
	}
	for (int i = 0; i < INBODY_FIELDS; i++) {
		if (values[i])
			g_string_free(values[i], TRUE);
	}
	return p;
}

/*
 * Whether @l ends a commit message, as patchbreak() in git's mailinfo.c
 * decides: "---" alone or before spaces, "--- " before a file name,
 * "diff -", "Index: "; and, for bodies whose patch is attached, a "-- "
 * signature.
 */
static bool ends_message(const struct line *l)
{
	if (line_starts(l, "diff -") || line_starts(l, "Index: ") || line_equals(l, "-- "))
		return true;
	if (!line_starts(l, "---"))
		return false;
	if (l->len > 4 && l->start[3] == ' ' && l->start[4] != ' ' && l->start[4] != '\t')
		return true;
	for (gsize i = 3; i < l->len; i++) {
		if (l->start[i] != ' ' && l->start[i] != '\t')
			return false;
	}
	return true;
}

/* The lines from @p to @end, without leading and trailing blank lines, ending in a newline (caller frees). */
static char *trimmed_lines(const char *p, const char *end)
{
	struct line l;
	const char *last = p;

	while (line_at(p, end, &l) && line_blank(&l))
		p = l.next;
	for (const char *q = p; line_at(q, end, &l); q = l.next) {
		if (!line_blank(&l))
			last = l.start + l.len;
	}
	if (last <= p)
		return g_strdup("");
	return g_strdup_printf("%.*s\n", (int)(last - p), p);
}

/* Reads in-body headers and the commit message of @text, up to @stop at most. */
static void read_message(const char *text, const char *stop, struct patch_text *t)
{
	const char *p = read_inbody_headers(text, stop, t);
	const char *q = p;
	struct line l;

	while (line_at(q, stop, &l) && !ends_message(&l))
		q = l.next;
	t->message = trimmed_lines(p, q);
}

/* If @l is "@key <hex id>" (key in any case), returns the id in lower case; else NULL. */
static char *hex_line(const struct line *l, const char *key)
{
	const char *end = l->start + l->len;
	const char *p;
	gsize digits = 0;

	if (!line_starts_nocase(l, key))
		return NULL;
	for (p = l->start + strlen(key); p < end && (*p == ' ' || *p == '\t');)
		p++;
	while (p + digits < end && g_ascii_isxdigit(p[digits]))
		digits++;
	/* SHA-1 or SHA-256 object names, and nothing glued after them. */
	if ((digits != 40 && digits != 64) || (p + digits < end && p[digits] != ' ' && p[digits] != '\t'))
		return NULL;
	return g_ascii_strdown(p, (gssize)digits);
}

/*
 * Reads the "base-commit:" and "prerequisite-patch-id:" lines of @text,
 * outside @diff; anywhere else, as b4 does: git writes them after the
 * diff of a patch and at the end of a cover letter.
 */
static void read_trailers(const char *text, const char *end, struct span diff, struct patch_text *t)
{
	struct line l;

	for (const char *p = text; line_at(p, end, &l); p = l.next) {
		char *id;

		/* The diff's lines are code, never trailers. */
		if (p == diff.start) {
			l.next = diff.end;
			continue;
		}
		if ((id = hex_line(&l, "base-commit:"))) {
			if (t->base_commit)
				g_free(id);
			else
				t->base_commit = id;
		} else if ((id = hex_line(&l, "prerequisite-patch-id:"))) {
			if (t->prerequisites->len < PREREQUISITES_MAX)
				g_ptr_array_add(t->prerequisites, id);
			else
				g_free(id);
		}
	}
}

/* ---- Before GMime: a bound on what it will build ---- */

/*
 * GMime builds objects for header fields, MIME parts, parameters and
 * addresses before we can count them, and not cheaply (GMime 3.2.13, 10
 * MiB of each): empty parts cost 12 s and 2.7 GB, one-letter header
 * fields 5 s and 1.6 GB, a Content-Type's parameters 7 s and 1 GB, a To:
 * of addresses 4 s and 370 MB. So a line scan bounds them first,
 * over-approximating what GMime will see: the blocks of header fields
 * (at the top, after a part's boundary line, and after a block that made
 * its part an attached message: message/rfc822, or a part without a
 * Content-Type, which a multipart/digest makes one); the boundaries
 * their Content-Type fields declare, whose values GMime itself parses;
 * and the lines "--X" for a declared X, each a part.
 */
struct prescan {
	GHashTable *boundaries; /* char *: declared boundaries */
	GString *content_type;  /* the Content-Type field being read, or NULL */
	guint structure_lines;  /* Content-Type fields and boundary lines that start a part */
	guint fields;
	gsize header_bytes;
	bool in_headers;        /* in a block of header fields */
	bool part_block;        /* that block began at a boundary line */
	bool block_typed;       /* it has a Content-Type */
	bool block_message;     /* one of them is message/...: sticky, as over-approximations are */
	bool block_encoded;     /* one Content-Transfer-Encoding is base64 or quoted-printable:
				 * GMime leaves an attached message so encoded whole */
};

/* Whether @l is a header field named @name (any case, blanks allowed before the colon); sets *value. */
static bool field_named(const struct line *l, const char *name, const char **value)
{
	gsize n = strlen(name);
	const char *end = l->start + l->len;
	const char *p;

	if (l->len < n || g_ascii_strncasecmp(l->start, name, n) != 0)
		return false;
	for (p = l->start + n; p < end && (*p == ' ' || *p == '\t');)
		p++;
	if (p == end || *p != ':')
		return false;
	*value = p + 1;
	return true;
}

/* Parses the Content-Type field read so far, if any, and declares its boundary. */
static void finish_content_type(struct prescan *ps)
{
	g_autoptr(GMimeContentType) type = NULL;
	const char *boundary;

	if (!ps->content_type)
		return;
	type = g_mime_content_type_parse(NULL, ps->content_type->str);
	g_string_free(g_steal_pointer(&ps->content_type), TRUE);
	boundary = g_mime_content_type_get_parameter(type, "boundary");
	if (boundary && *boundary && !g_hash_table_contains(ps->boundaries, boundary))
		g_hash_table_add(ps->boundaries, g_strdup(boundary));
	ps->block_typed = true;
	ps->block_message |= g_mime_content_type_is_type(type, "message", "*");
}

/* Whether @l is "--X" or "--X--" for a declared boundary X, and which. */
static bool boundary_line(struct prescan *ps, const struct line *l, GString *scratch, bool *close)
{
	gsize len = l->len;

	if (!line_starts(l, "--") || g_hash_table_size(ps->boundaries) == 0)
		return false;
	/* GMime allows blanks after a boundary. */
	while (len > 2 && (l->start[len - 1] == ' ' || l->start[len - 1] == '\t'))
		len--;
	g_string_assign(scratch, "");
	g_string_append_len(scratch, l->start + 2, (gssize)(len - 2));
	*close = false;
	if (g_hash_table_contains(ps->boundaries, scratch->str))
		return true;
	if (scratch->len < 2 || strcmp(scratch->str + scratch->len - 2, "--") != 0)
		return false;
	g_string_truncate(scratch, scratch->len - 2);
	*close = true;
	return g_hash_table_contains(ps->boundaries, scratch->str);
}

static void new_block(struct prescan *ps, bool in_headers, bool part_block)
{
	finish_content_type(ps);
	ps->in_headers = in_headers;
	ps->part_block = part_block;
	ps->block_typed = ps->block_message = ps->block_encoded = false;
}

/* At the empty line that ends a block of header fields: an attached message's come next. */
static void end_of_fields(struct prescan *ps)
{
	bool message;

	finish_content_type(ps);
	message = ps->block_typed ? ps->block_message : ps->part_block;
	new_block(ps, message && !ps->block_encoded, false);
}

static void header_line(struct prescan *ps, const struct line *l)
{
	const char *value;

	ps->header_bytes += (gsize)(l->next - l->start);
	if (l->start[0] == ' ' || l->start[0] == '\t') {
		if (ps->content_type)
			g_string_append_len(ps->content_type, l->start, (gssize)l->len);
		return;
	}
	finish_content_type(ps);
	ps->fields++;
	if (field_named(l, "Content-Type", &value)) {
		ps->structure_lines++;
		ps->content_type = g_string_new_len(value, (gssize)(l->start + l->len - value));
	} else if (field_named(l, "Content-Transfer-Encoding", &value)) {
		g_autofree char *v = g_strndup(value, (gsize)(l->start + l->len - value));

		g_strstrip(v);
		ps->block_encoded |= g_ascii_strcasecmp(v, "base64") == 0 ||
				     g_ascii_strcasecmp(v, "quoted-printable") == 0;
	}
}

/* Returns why @text must not reach GMime (caller frees), or NULL. */
static char *prescan(const char *text, gsize len)
{
	const char *end = text + len;
	g_autoptr(GString) scratch = g_string_new(NULL);
	struct prescan ps = { 0 };
	char *reason = NULL;
	struct line l;
	bool close;

	ps.boundaries = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	new_block(&ps, true, false);
	for (const char *p = text; !reason && line_at(p, end, &l); p = l.next) {
		if (boundary_line(&ps, &l, scratch, &close)) {
			ps.structure_lines += close ? 0 : 1;
			new_block(&ps, !close, !close);
		} else if (ps.in_headers && l.len == 0) {
			end_of_fields(&ps);
		} else if (ps.in_headers) {
			header_line(&ps, &l);
		}
		if (ps.fields > PATCHMAIL_FIELDS_MAX || ps.header_bytes > PATCHMAIL_HEADERS_MAX)
			reason = g_strdup("headers too large");
		else if (ps.structure_lines > STRUCTURE_LINES_MAX)
			reason = g_strdup("too many parts");
	}
	if (reason && ps.content_type)
		g_string_free(g_steal_pointer(&ps.content_type), TRUE);
	new_block(&ps, false, false);
	g_hash_table_unref(ps.boundaries);
	return reason;
}

/* ---- GMime ---- */

/* GMime's critical warnings: parts of the mail may be skipped or misread. */
static const struct {
	GMimeParserWarning code;
	const char *reason;
} critical_warnings[] = {
	{ GMIME_CRIT_INVALID_HEADER_NAME, "malformed: invalid header name" },
	{ GMIME_CRIT_CONFLICTING_HEADER, "malformed: conflicting headers" },
	{ GMIME_CRIT_CONFLICTING_PARAMETER, "malformed: conflicting header parameters" },
	{ GMIME_CRIT_MULTIPART_WITHOUT_BOUNDARY, "malformed: multipart without boundary" },
	{ GMIME_CRIT_NESTING_OVERFLOW, "nested too deep" },
	{ GMIME_CRIT_PART_WITHOUT_HEADERS_OR_CONTENT, "malformed: part without headers or content" },
};

/* The first critical warning's reason, from the parser's callback. */
static void on_warning(gint64 offset, GMimeParserWarning code, const char *item, gpointer data)
{
	char **reason = data;

	if (*reason)
		return;
	for (gsize i = 0; i < G_N_ELEMENTS(critical_warnings); i++) {
		if (critical_warnings[i].code != code)
			continue;
		if (code == GMIME_CRIT_CONFLICTING_HEADER && item) {
			/* Say which: a second Message-ID or From is an attack, a second Cc a sloppy list. */
			g_autofree char *name = g_ascii_strdown(item, -1);

			g_strcanon(name, "abcdefghijklmnopqrstuvwxyz0123456789-", '_');
			*reason = g_strdup_printf("malformed: conflicting %.*s headers",
						  REASON_NAME_MAX, name);
		} else {
			*reason = g_strdup(critical_warnings[i].reason);
		}
		return;
	}
}

/* The MIME structure of a mail, as far as the limits let us look. */
struct mime_shape {
	GPtrArray *leaves; /* GMimePart *, borrowed: the mail's own, not those of attached messages */
	guint parts;
	guint depth;       /* the deepest part's */
	bool truncated;    /* a multipart without its closing boundary */
};

static void walk(GMimeObject *object, guint depth, bool own, struct mime_shape *shape)
{
	shape->parts++;
	shape->depth = MAX(shape->depth, depth);
	if (shape->parts > PATCHMAIL_PARTS_MAX || depth > PATCHMAIL_DEPTH_MAX)
		return;
	if (GMIME_IS_MULTIPART(object)) {
		GMimeMultipart *multipart = GMIME_MULTIPART(object);

		/* GMime's own mark of the closing boundary, the only one it exports. */
		shape->truncated |= !multipart->write_end_boundary;
		for (int i = 0; i < g_mime_multipart_get_count(multipart); i++)
			walk(g_mime_multipart_get_part(multipart, i), depth + 1, own, shape);
	} else if (GMIME_IS_MESSAGE_PART(object)) {
		GMimeMessage *inner = g_mime_message_part_get_message(GMIME_MESSAGE_PART(object));
		GMimeObject *body = inner ? g_mime_message_get_mime_part(inner) : NULL;

		if (body)
			walk(body, depth + 1, false, shape);
	} else if (GMIME_IS_PART(object) && own) {
		g_ptr_array_add(shape->leaves, object);
	}
}

/*
 * Parses @bytes (taken) with GMime and checks the result's structure.
 * Returns the message, or NULL and the reason it is refused.
 */
static GMimeMessage *parse_mime(GByteArray *bytes, struct mime_shape *shape, char **reason)
{
	g_autoptr(GMimeParserOptions) options = g_mime_parser_options_new();
	g_autofree char *warning = NULL;
	g_autoptr(GMimeMessage) message = NULL;
	GMimeObject *body;

	g_mime_parser_options_set_warning_callback(options, on_warning, &warning);
	message = mime_message_parse(bytes, options);
	body = message ? g_mime_message_get_mime_part(message) : NULL;
	if (!body) {
		*reason = g_strdup("malformed: not a message");
		return NULL;
	}
	walk(body, 0, true, shape);
	if (shape->parts > PATCHMAIL_PARTS_MAX)
		*reason = g_strdup("too many parts");
	else if (shape->depth > PATCHMAIL_DEPTH_MAX)
		*reason = g_strdup("nested too deep");
	else if (shape->truncated)
		*reason = g_strdup("truncated multipart");
	else if (warning)
		*reason = g_steal_pointer(&warning);
	return *reason ? NULL : g_steal_pointer(&message);
}

/* A Message-ID as we keep it: printable ASCII without blanks or angle brackets. */
static bool message_id_ok(const char *id)
{
	if (!id || !*id || strlen(id) > MIME_MESSAGE_ID_MAX)
		return false;
	for (const char *p = id; *p; p++) {
		if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f || *p == '<' || *p == '>')
			return false;
	}
	return true;
}

/*
 * The Message-IDs in angle brackets of header @name, oldest first, at
 * most REFERENCES_MAX: the first and the last ones. Ours, not GMime's
 * g_mime_references_parse(), which stops at the first it cannot read
 * ("<a@b> <c d@e> <f@g>" gives a@b only) and loses the parent.
 */
static GPtrArray *header_message_ids(GMimeMessage *message, const char *name)
{
	const char *value = g_mime_object_get_header(GMIME_OBJECT(message), name);
	GPtrArray *ids = g_ptr_array_new_with_free_func(g_free);
	const char *open;

	for (const char *p = value; p && (open = strchr(p, '<')); p = open + 1) {
		const char *close = strchr(open + 1, '>');
		g_autofree char *id = NULL;

		if (!close)
			break;
		id = g_strndup(open + 1, (gsize)(close - open - 1));
		if (message_id_ok(id))
			g_ptr_array_add(ids, g_steal_pointer(&id));
		open = close;
	}
	/* The root names the thread, the last ones the nearest ancestors. */
	if (ids->len > REFERENCES_MAX)
		g_ptr_array_remove_range(ids, 1, ids->len - REFERENCES_MAX);
	return ids;
}

/*
 * @ia in address_normalize()'s form; NULL when it is not a mailbox with a
 * readable address. The parser's own mailbox is written out, once: parsing
 * its text again (address_format()) cost a quarter of a mail's parse.
 */
static char *mailbox_text(InternetAddress *ia)
{
	g_autoptr(InternetAddress) bare = NULL;
	const char *name;

	if (!INTERNET_ADDRESS_IS_MAILBOX(ia) || !mime_mailbox_addr_ok(INTERNET_ADDRESS_MAILBOX(ia)))
		return NULL;
	name = internet_address_get_name(ia);
	if (name && *name && !mime_has_control(name))
		return internet_address_to_string(ia, NULL, FALSE);
	/* A display name with control characters costs the name, not the address. */
	bare = internet_address_mailbox_new(NULL,
					    internet_address_mailbox_get_addr(INTERNET_ADDRESS_MAILBOX(ia)));
	return internet_address_to_string(bare, NULL, FALSE);
}

/* Appends the readable mailboxes of @list, those of groups too, up to RECIPIENTS_MAX. */
static void add_mailboxes(GPtrArray *out, InternetAddressList *list, bool in_group)
{
	int n = list ? internet_address_list_length(list) : 0;

	for (int i = 0; i < n && out->len < RECIPIENTS_MAX; i++) {
		InternetAddress *ia = internet_address_list_get_address(list, i);
		char *text;

		if (INTERNET_ADDRESS_IS_GROUP(ia) && !in_group) {
			add_mailboxes(out, internet_address_group_get_members(INTERNET_ADDRESS_GROUP(ia)),
				      true);
		} else if ((text = mailbox_text(ia))) {
			g_ptr_array_add(out, text);
		}
	}
}

/* The id of a List-Id field ("Netdev <netdev.vger.kernel.org>"), lower case; NULL when unreadable. */
static char *list_id(const char *value)
{
	const char *open = value ? strrchr(value, '<') : NULL;
	const char *close = open ? strchr(open, '>') : NULL;
	g_autofree char *id = NULL;

	if (!value)
		return NULL;
	id = close ? g_strndup(open + 1, (gsize)(close - open - 1)) : g_strdup(value);
	g_strstrip(id);
	if (!*id || strlen(id) > LIST_ID_MAX)
		return NULL;
	for (const char *p = id; *p; p++) {
		if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f || *p == '<' || *p == '>')
			return NULL;
	}
	return g_ascii_strdown(id, -1);
}

/* Header fields whose presence marks a machine's mail, and why. */
static const struct {
	const char *field;
	const char *why;
} automatic_fields[] = {
	{ "X-Autoreply", "an auto-reply (X-Autoreply)" },
	{ "X-Autorespond", "an auto-reply (X-Autorespond)" },
	{ "X-Autogenerated", "an auto-reply (X-Autogenerated)" },
	{ "X-Auto-Response-Suppress", "an automatic mail (X-Auto-Response-Suppress)" },
	{ "X-MS-Exchange-Inbox-Rules-Loop", "an Exchange rule's mail (loop field)" },
	{ "X-MS-Exchange-Generated-Message-Source", "an Exchange-generated mail" },
	{ "X-Loop", "a forwarded or answered mail (X-Loop)" },
	{ "X-Vacation", "a vacation reply (X-Vacation)" },
};

/* Subjects that only machines write, compared without case at the start. */
static const char *const automatic_subjects[] = {
	"Automatic reply:", "Auto-Reply:", "Autoreply:", "Out of Office", "Out of the office",
	"Undeliverable:", "Undelivered Mail Returned", "Delivery Status Notification",
	"Mail delivery failed", "Returned mail:", "Delivery Failure",
};

/* Why @message looks written by a machine, or NULL: see patchmail.h. */
static const char *automatic_reason(GMimeMessage *message, const char *subject)
{
	GMimeObject *object = GMIME_OBJECT(message);
	const char *auto_submitted = g_mime_object_get_header(object, "Auto-Submitted");
	const char *return_path = g_mime_object_get_header(object, "Return-Path");
	const char *precedence = g_mime_object_get_header(object, "Precedence");
	const char *x_precedence = g_mime_object_get_header(object, "X-Precedence");
	GMimeObject *body = g_mime_message_get_mime_part(message);

	if (auto_submitted) {
		/* Its keyword, before parameters (';') and comments ('('): RFC 3834. */
		g_autofree char *v = g_strstrip(g_strdup(auto_submitted));

		v[strcspn(v, " \t;(")] = '\0';
		if (g_ascii_strcasecmp(v, "no") != 0)
			return "Auto-Submitted";
	}
	if (return_path) {
		g_autofree char *v = g_strstrip(g_strdup(return_path));

		if (strcmp(v, "<>") == 0 || !*v)
			return "a bounce (empty Return-Path)";
	}
	if (body && g_mime_content_type_is_type(g_mime_object_get_content_type(body), "multipart",
						 "report"))
		return "a delivery or disposition report";
	for (const char *p = precedence; p; p = p == precedence ? x_precedence : NULL) {
		g_autofree char *v = g_strstrip(g_strdup(p));

		if (g_ascii_strcasecmp(v, "auto_reply") == 0)
			return "an auto-reply (Precedence: auto_reply)";
	}
	for (gsize i = 0; i < G_N_ELEMENTS(automatic_fields); i++) {
		if (g_mime_object_get_header(object, automatic_fields[i].field))
			return automatic_fields[i].why;
	}
	for (gsize i = 0; subject && i < G_N_ELEMENTS(automatic_subjects); i++) {
		if (g_ascii_strncasecmp(subject, automatic_subjects[i],
					strlen(automatic_subjects[i])) == 0)
			return "an automatic reply (its subject)";
	}
	return NULL;
}

/*
 * The addresses of field @name (@type), read past GMime 3.2.13's
 * encoded-word bug (mime_join_encoded_words()) when it matters: a display
 * name in two encoded-words is cut at the first otherwise.
 */
static InternetAddressList *addresses_of(GMimeMessage *message, const char *name,
					 GMimeAddressType type, InternetAddressList **fixed)
{
	*fixed = mime_header_addresses(GMIME_OBJECT(message), name);
	return *fixed ? *fixed : g_mime_message_get_addresses(message, type);
}

static void read_headers(struct patchmail *m, GMimeMessage *message)
{
	GMimeObject *object = GMIME_OBJECT(message);
	g_autoptr(InternetAddressList) fixed_from = NULL;
	g_autoptr(InternetAddressList) fixed_to = NULL;
	g_autoptr(InternetAddressList) fixed_cc = NULL;
	InternetAddressList *from = addresses_of(message, "From", GMIME_ADDRESS_TYPE_FROM,
						 &fixed_from);
	GDateTime *date = g_mime_message_get_date(message);
	/* Past GMime 3.2.13's encoded-word bug too: see mime_join_encoded_words(). */
	g_autofree char *fixed_subject = mime_header_text(object, "Subject");
	const char *subject = fixed_subject ? fixed_subject : g_mime_message_get_subject(message);
	g_autoptr(GPtrArray) in_reply_to = header_message_ids(message, "In-Reply-To");

	m->message_id = g_strdup(g_mime_message_get_message_id(message));
	if (in_reply_to->len)
		m->in_reply_to = g_strdup(in_reply_to->pdata[0]);
	m->references = header_message_ids(message, "References");
	if (from && internet_address_list_length(from) > 0)
		m->from = mailbox_text(internet_address_list_get_address(from, 0));
	m->date = date ? g_date_time_to_unix(date) : 0;
	m->subject = one_line(subject ? subject : "");
	m->list_id = list_id(g_mime_object_get_header(object, "List-Id"));
	add_mailboxes(m->to, addresses_of(message, "To", GMIME_ADDRESS_TYPE_TO, &fixed_to), false);
	add_mailboxes(m->cc, addresses_of(message, "Cc", GMIME_ADDRESS_TYPE_CC, &fixed_cc), false);
	patchmail_subject_parse(&m->tags, m->subject);
	m->automatic = automatic_reason(message, m->subject);
}

/* ---- Bodies ---- */

/* What a patch may be attached as. */
static const struct {
	const char *type;
	const char *subtype;
} patch_types[] = {
	{ "text", "plain" },
	{ "text", "x-patch" },
	{ "text", "x-diff" },
};

static bool is_type(GMimeObject *object, const char *type, const char *subtype)
{
	GMimeContentType *ct = g_mime_object_get_content_type(object);

	return ct && g_mime_content_type_is_type(ct, type, subtype);
}

static bool is_attachment(GMimeObject *object)
{
	GMimeContentDisposition *d = g_mime_object_get_content_disposition(object);

	return d && g_mime_content_disposition_is_attachment(d);
}

static bool may_hold_patch(GMimeObject *object)
{
	for (gsize i = 0; i < G_N_ELEMENTS(patch_types); i++) {
		if (is_type(object, patch_types[i].type, patch_types[i].subtype))
			return true;
	}
	return false;
}

/* Charsets whose text is taken as UTF-8 (ASCII is; mislabelled 8-bit text mostly is). */
static bool utf8_compatible(const char *charset)
{
	return !charset || g_ascii_strcasecmp(charset, "utf-8") == 0 ||
	       g_ascii_strcasecmp(charset, "utf8") == 0 ||
	       g_ascii_strcasecmp(charset, "us-ascii") == 0 ||
	       g_ascii_strcasecmp(charset, "ascii") == 0;
}

/* @part's charset, when its text is not taken as UTF-8 and iconv knows it; else NULL. */
static const char *part_charset(GMimePart *part)
{
	const char *charset = g_mime_object_get_content_type_parameter(GMIME_OBJECT(part), "charset");

	return utf8_compatible(charset) ? NULL : g_mime_charset_iconv_name(charset);
}

/*
 * @len bytes at @text converted to UTF-8 from @charset (NULL: taken as
 * UTF-8) (caller frees). Text that does not convert is taken as UTF-8,
 * bad bytes made U+FFFD.
 */
static char *text_to_utf8(const char *text, gsize len, const char *charset)
{
	g_autofree char *converted = NULL;
	gsize out = 0;

	if (len && charset)
		converted = g_convert(text, (gssize)len, "UTF-8", charset, NULL, &out, NULL);
	if (converted)
		return valid_text(converted, out);
	return valid_text(text, len);
}

/*
 * The text of @part with its transfer encoding undone, its bytes as sent
 * (caller frees): a string, for leaves_reason() refused the parts that
 * may hold a patch and hold a NUL.
 */
static char *part_raw(GMimePart *part)
{
	g_autoptr(GByteArray) bytes = mime_part_decoded(part);

	if (!bytes || bytes->len == 0)
		return g_strdup("");
	return g_strndup((const char *)bytes->data, bytes->len);
}

/*
 * The text of @part: its transfer encoding undone, converted to UTF-8
 * (caller frees); a NUL byte too is made U+FFFD (an HTML part is not
 * refused for one).
 */
static char *part_text(GMimePart *part)
{
	g_autoptr(GByteArray) bytes = mime_part_decoded(part);

	if (!bytes || bytes->len == 0)
		return g_strdup("");
	return text_to_utf8((const char *)bytes->data, bytes->len, part_charset(part));
}

/*
 * Fills the patch fields of @m from @raw, the bytes of a part in
 * @charset (NULL: UTF-8), which holds @diff. As `git mailinfo` does, the
 * message is converted to UTF-8 and the diff kept byte for byte: its
 * context lines must match the tree's bytes, whatever the mail's charset.
 */
static void take_patch(struct patchmail *m, const char *raw, const char *charset,
		       struct span diff, const char *body)
{
	g_autofree char *head = text_to_utf8(raw, (gsize)(diff.start - raw), charset);
	struct patch_text t = { 0 };

	m->diff = g_strndup(diff.start, (gsize)(diff.end - diff.start));
	read_message(head, head + strlen(head), &t);
	/* A bare diff attached: the message is the body's. */
	if (m->diff_attached && !*t.message && !t.from) {
		patch_text_release(&t);
		read_message(body, body + strlen(body), &t);
	}
	m->commit_message = g_steal_pointer(&t.message);
	m->author = t.from ? g_steal_pointer(&t.from) : g_strdup(m->from);
	m->body_subject = g_steal_pointer(&t.subject);
	m->body_date = t.date;
	patch_text_release(&t);
}

/* Reads the base and the prerequisites of @text outside @diff into @m, where not known yet. */
static void take_trailers(struct patchmail *m, const char *text, struct span diff)
{
	struct patch_text t = { 0 };

	t.prerequisites = g_ptr_array_new_with_free_func(g_free);
	read_trailers(text, text + strlen(text), diff, &t);
	if (!m->base_commit)
		m->base_commit = g_steal_pointer(&t.base_commit);
	if (m->prerequisite_patch_ids->len == 0)
		g_ptr_array_extend_and_steal(m->prerequisite_patch_ids,
					     g_steal_pointer(&t.prerequisites));
	patch_text_release(&t);
}

/*
 * The body is the first text/plain part that is not an attachment. The
 * diff is the body's, else the first one of a part that may hold a
 * patch (attached patches come after the text that introduces them).
 */
static void read_body(struct patchmail *m, GPtrArray *leaves)
{
	GMimePart *body_part = NULL;
	struct span diff = { NULL, NULL };
	g_autofree char *raw = NULL;
	g_autofree char *attached = NULL;
	GMimePart *attached_part = NULL;

	for (guint i = 0; i < leaves->len && !body_part; i++) {
		GMimeObject *leaf = leaves->pdata[i];

		if (is_type(leaf, "text", "plain") && !is_attachment(leaf))
			body_part = leaves->pdata[i];
	}
	/* The diff is looked for in the bytes as sent: see take_patch(). */
	raw = body_part ? part_raw(body_part) : g_strdup("");
	m->body = text_to_utf8(raw, strlen(raw), body_part ? part_charset(body_part) : NULL);
	for (guint i = 0; i < leaves->len && !body_part && !m->html_only; i++) {
		m->html_only = is_type(leaves->pdata[i], "text", "html");
		if (m->html_only)
			m->html = part_text(leaves->pdata[i]);
	}
	diff = find_diff(raw, raw + strlen(raw));
	take_trailers(m, raw, diff);
	if (diff.start) {
		take_patch(m, raw, part_charset(body_part), diff, m->body);
		return;
	}
	for (guint i = 0; i < leaves->len; i++) {
		if (leaves->pdata[i] == body_part || !may_hold_patch(leaves->pdata[i]))
			continue;
		attached = part_raw(leaves->pdata[i]);
		diff = find_diff(attached, attached + strlen(attached));
		if (diff.start) {
			attached_part = leaves->pdata[i];
			break;
		}
		g_clear_pointer(&attached, g_free);
	}
	if (!diff.start)
		return;
	m->diff_attached = true;
	take_trailers(m, attached, diff);
	take_patch(m, attached, part_charset(attached_part), diff, m->body);
}

/* b4's lines naming what a series needs applied first (its "prerequisite-patch-id:" too). */
static const char *const b4_prerequisites[] = {
	"prerequisite-change-id:", "prerequisite-message-id:",
};

bool patchmail_has_prerequisites(const struct patchmail *m)
{
	const char *end = m->body + strlen(m->body);
	struct span diff = find_diff(m->body, end);
	struct line l;

	if (m->prerequisite_patch_ids->len)
		return true;
	for (const char *p = m->body; line_at(p, end, &l); p = l.next) {
		/* The diff's lines are code, never trailers. */
		if (p == diff.start) {
			l.next = diff.end;
			continue;
		}
		for (gsize i = 0; i < G_N_ELEMENTS(b4_prerequisites); i++) {
			if (line_starts_nocase(&l, b4_prerequisites[i]))
				return true;
		}
	}
	return false;
}

/*
 * A reply is a reply, whatever it carries: an unquoted diff in a reply
 * is a fixup proposed in review, not a member of the series, so bot/
 * must never apply it as one. A cover letter needs no diff; a patch
 * does, and needs its PATCH tag: a mail with a diff and no tag is
 * discussion (a merge resolution from linux-next, say).
 */
static enum patchmail_kind classify(const struct patchmail *m)
{
	if (m->tags.reply)
		return PATCHMAIL_REPLY;
	if (m->tags.cover)
		return PATCHMAIL_COVER;
	if (m->tags.patch && m->diff)
		return PATCHMAIL_PATCH;
	return PATCHMAIL_OTHER;
}

const char *patchmail_kind_name(enum patchmail_kind kind)
{
	static const char *const names[] = {
		[PATCHMAIL_OTHER] = "other",
		[PATCHMAIL_PATCH] = "patch",
		[PATCHMAIL_COVER] = "cover",
		[PATCHMAIL_REPLY] = "reply",
	};

	g_assert((gsize)kind < G_N_ELEMENTS(names));
	return names[kind];
}

/*
 * Whether the base64 text @s of @len bytes decodes as written: only the
 * alphabet and line breaks, padding at the end only, whole quanta. GMime
 * skips what it cannot read, and a diff with holes is no patch.
 */
static bool base64_ok(const guint8 *s, gsize len)
{
	gsize chars = 0, pad = 0;

	for (gsize i = 0; i < len; i++) {
		if (s[i] == '=')
			pad++;
		else if (g_ascii_isspace(s[i]))
			continue;
		else if (pad || !(g_ascii_isalnum(s[i]) || s[i] == '+' || s[i] == '/'))
			return false;
		else
			chars++;
	}
	return pad <= 2 && (chars + pad) % 4 == 0;
}

/*
 * Why the text parts of a mail (the body and what may hold a patch) must
 * not be read (caller frees), or NULL: base64 that does not decode, or a
 * NUL byte in the decoded text, which C strings would cut short.
 */
static char *leaves_reason(GPtrArray *leaves)
{
	for (guint i = 0; i < leaves->len; i++) {
		GMimeDataWrapper *content = g_mime_part_get_content(leaves->pdata[i]);
		g_autoptr(GMimeStream) encoded = NULL;
		g_autoptr(GByteArray) decoded = NULL;
		GByteArray *bytes;

		if (!content || !may_hold_patch(leaves->pdata[i]))
			continue;
		if (g_mime_data_wrapper_get_encoding(content) == GMIME_CONTENT_ENCODING_BASE64) {
			GMimeStream *raw = g_mime_data_wrapper_get_stream(content);

			encoded = g_mime_stream_mem_new();
			g_mime_stream_reset(raw);
			g_mime_stream_write_to_stream(raw, encoded);
			g_mime_stream_reset(raw);
			bytes = g_mime_stream_mem_get_byte_array(GMIME_STREAM_MEM(encoded));
			if (!base64_ok(bytes->data, bytes->len))
				return g_strdup("malformed: a text part's base64 does not decode");
		}
		decoded = mime_part_decoded(leaves->pdata[i]);
		if (decoded->len && memchr(decoded->data, '\0', decoded->len))
			return g_strdup("malformed: NUL byte in a text part");
	}
	return NULL;
}

/* ---- The whole ---- */

/*
 * A copy of @data with CRLF line ends made LF, as `git mailsplit` does
 * by default: the transport's line ends, not the text's. A CR inside
 * base64 or quoted-printable content stays (git am's default too).
 */
static GByteArray *without_crlf(const char *data, gsize len)
{
	/* A byte more, so that even an empty mail's data is not NULL (prescan() counts on it). */
	GByteArray *out = g_byte_array_sized_new((guint)len + 1);

	for (gsize i = 0; i < len;) {
		const char *cr = memchr(data + i, '\r', len - i);
		gsize run = cr ? (gsize)(cr - data) - i : len - i;

		g_byte_array_append(out, (const guint8 *)data + i, (guint)run);
		i += run;
		if (i < len) {
			if (i + 1 >= len || data[i + 1] != '\n')
				g_byte_array_append(out, (const guint8 *)"\r", 1);
			i++;
		}
	}
	return out;
}

static struct patchmail *refuse(GError **error, char *reason)
{
	g_debug("refused a mail: %s", reason);
	g_set_error_literal(error, MAIL_ERROR, MAIL_ERROR_INVALID, reason);
	g_free(reason);
	return NULL;
}

static struct patchmail *patchmail_new(void)
{
	struct patchmail *m = g_new0(struct patchmail, 1);

	m->to = g_ptr_array_new_with_free_func(g_free);
	m->cc = g_ptr_array_new_with_free_func(g_free);
	m->prerequisite_patch_ids = g_ptr_array_new_with_free_func(g_free);
	return m;
}

struct patchmail *patchmail_parse(const char *data, gsize len, gsize size_max, GError **error)
{
	struct mime_shape shape = { 0 };
	g_autoptr(GPtrArray) leaves = g_ptr_array_new();
	g_autoptr(GMimeMessage) message = NULL;
	GByteArray *bytes;
	char *reason;
	struct patchmail *m;

	mail_global_init();
	/* GByteArray and GMime count in (g)ints. */
	if (len > MIN(size_max, (gsize)G_MAXINT))
		return refuse(error, g_strdup_printf("too large: %" G_GSIZE_FORMAT " bytes", len));
	/* A NUL cuts a C string short: a header, or the text before a command line. */
	if (len && memchr(data, '\0', len))
		return refuse(error, g_strdup("malformed: NUL byte"));
	bytes = without_crlf(data, len);
	reason = prescan((const char *)bytes->data, bytes->len);
	if (reason) {
		g_byte_array_unref(bytes);
		return refuse(error, reason);
	}
	shape.leaves = leaves;
	message = parse_mime(bytes, &shape, &reason);
	if (!message)
		return refuse(error, reason);
	if ((reason = leaves_reason(leaves)))
		return refuse(error, reason);
	if (!g_mime_message_get_message_id(message) || !*g_mime_message_get_message_id(message))
		return refuse(error, g_strdup("no Message-ID"));
	if (!message_id_ok(g_mime_message_get_message_id(message)))
		return refuse(error, g_strdup("bad Message-ID"));
	m = patchmail_new();
	read_headers(m, message);
	read_body(m, leaves);
	m->kind = classify(m);
	return m;
}

bool patchmail_addressed_to(const struct patchmail *m, const char *address)
{
	g_autofree char *want = address_key(address);

	for (GPtrArray *list = m->to; want && list; list = list == m->to ? m->cc : NULL) {
		for (guint i = 0; i < list->len; i++) {
			g_autofree char *k = address_key(list->pdata[i]);

			if (k && strcmp(k, want) == 0)
				return true;
		}
	}
	return false;
}

void patchmail_free(struct patchmail *m)
{
	if (!m)
		return;
	g_free(m->html);
	g_free(m->message_id);
	g_free(m->in_reply_to);
	if (m->references)
		g_ptr_array_unref(m->references);
	g_free(m->from);
	g_free(m->subject);
	g_free(m->list_id);
	g_ptr_array_unref(m->to);
	g_ptr_array_unref(m->cc);
	patchmail_subject_release(&m->tags);
	g_free(m->body);
	g_free(m->diff);
	g_free(m->commit_message);
	g_free(m->author);
	g_free(m->body_subject);
	g_free(m->base_commit);
	g_ptr_array_unref(m->prerequisite_patch_ids);
	g_free(m);
}
