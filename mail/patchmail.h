/*
 * One mail from a mailing list, as data: its threading headers, what
 * the [PATCH ...] tags of its subject say, and the patch it carries.
 * Parsing is all this does: no database, no network, no policy (which
 * mails make a series, which tree a patch goes to, is bot/'s business).
 * It reads a mail as `git am` and b4 do, where they agree.
 *
 * Mail is hostile input. Parsing is bounded in bytes, MIME parts,
 * nesting and header fields; a mail past a bound, or one GMime calls
 * critically malformed, is refused with a short reason that stays the
 * same from one release to the next, for the caller's quarantine.
 */
#ifndef ZERODAY_PATCHMAIL_H
#define ZERODAY_PATCHMAIL_H

#include <stdbool.h>
#include <glib.h>

#include "engine/engine.h"

/* The size cap a caller passes when it has no better one. */
#define PATCHMAIL_SIZE_DEFAULT (10 * 1024 * 1024)
/* MIME parts in one mail, multiparts and attached messages included. */
#define PATCHMAIL_PARTS_MAX 100
/* Multiparts and attached messages around a part. */
#define PATCHMAIL_DEPTH_MAX 8
/* Header fields in one mail, its parts' included, and their bytes. */
#define PATCHMAIL_FIELDS_MAX 5000
#define PATCHMAIL_HEADERS_MAX (256 * 1024)

/*
 * What a subject's leading bracketed tags say, as in
 * "Re: [RFC PATCH net-next v2 3/5] net: fix foo".
 */
struct patchmail_subject {
	char *title;         /* the rest, whitespace runs made one space: "net: fix foo" */
	GPtrArray *prefixes; /* char *, the other tag words, in order: "net-next" */
	guint version;       /* vN; 1 when absent */
	bool versioned;      /* vN was given */
	guint n;             /* n of n/N; 1 when absent; may exceed N: see below */
	guint total;         /* N of n/N; 1 when absent */
	bool counted;        /* n/N was given */
	bool reply;          /* Re:, Aw:, Fwd:, ... came before the tags */
	bool patch;          /* tagged PATCH (or RFC with n/N), and not a reply */
	bool cover;          /* a patch numbered 0 of N */
	bool rfc;
	bool resend;
};

/*
 * Parses @subject (decoded UTF-8, may be NULL) into @out, which need not
 * be initialized. It never fails: a subject without tags is all title.
 * Release @out with patchmail_subject_release().
 */
void patchmail_subject_parse(struct patchmail_subject *out, const char *subject);
void patchmail_subject_release(struct patchmail_subject *s);

/* @subject's title: without Re: and its [PATCH ...] tags (caller frees). */
char *patchmail_subject_title(const char *subject);

/*
 * Whether @s numbers a part past its count, "[PATCH 3/2]": a follow-up
 * posted in the thread of a series, which b4 takes as raising the count.
 * Derived from n and total, so that the store needs no field of its own.
 */
static inline bool patchmail_subject_beyond(const struct patchmail_subject *s)
{
	return s->counted && s->n > s->total;
}

enum patchmail_kind {
	PATCHMAIL_OTHER, /* discussion: none of the below */
	PATCHMAIL_PATCH, /* a series member: a tagged patch with a diff */
	PATCHMAIL_COVER, /* a cover letter: a tagged patch numbered 0 of N */
	PATCHMAIL_REPLY, /* a reply: never a patch, even with a diff (a fixup proposed in review) */
};

/* Returns "other", "patch", "cover" or "reply". */
const char *patchmail_kind_name(enum patchmail_kind kind);

/*
 * A parsed mail. Strings are UTF-8 (but for the diff) and belong to the struct; Message-IDs
 * are without their angle brackets; addresses are in
 * address_normalize()'s form; dates are unix seconds, 0 when absent or
 * unreadable. A new field goes into fields[] of mail/patchmail-store.c
 * too, with its PACK_VERSION bumped, or it is lost in the store.
 */
struct patchmail {
	char *message_id;
	char *in_reply_to;     /* or NULL */
	GPtrArray *references; /* char *, oldest first */
	char *from;            /* or NULL when it is not one readable address */
	gint64 date;
	char *subject;         /* decoded and unfolded; "" when absent */
	char *list_id;         /* the id of List-Id, lower case: "netdev.vger.kernel.org", or NULL */
	GPtrArray *to;         /* char *; addresses that do not read are left out */
	GPtrArray *cc;
	struct patchmail_subject tags;
	enum patchmail_kind kind;
	/*
	 * Why the mail was written by a machine, not a person, or NULL: an
	 * Auto-Submitted other than "no", a bounce (an empty Return-Path, a
	 * delivery status report), a vacation or out-of-office reply
	 * (X-Autoreply, X-Autorespond, Precedence: auto_reply, Exchange's
	 * loop and suppression fields, their subjects), X-Loop. A static
	 * string. Precedence: bulk and List-Id are not reasons: a person's
	 * mail through a list carries them.
	 */
	const char *automatic;
	bool html_only; /* no text/plain body, and a text/html part */
	char *html;     /* with html_only: that part's text, else NULL */

	/*
	 * The first text/plain part that is no attachment: CRLF line ends
	 * made LF (as `git mailsplit` does), transfer encoding undone,
	 * converted to UTF-8 (what does not convert becomes U+FFFD); or "".
	 */
	char *body;
	/*
	 * The diff, from the body or else from the first text/plain,
	 * text/x-patch or text/x-diff attachment that holds one: git diff
	 * sections ("diff --git", extended headers, "---"/"+++", hunks) or
	 * plain unified ones ("---"/"+++", hunks), starting in the first
	 * column, so that a quoted diff ("> diff --git") is none. Exactly as
	 * sent, from its first line to the end of its last hunk: what
	 * `git apply` reads. NULL when there is none. Its bytes are the
	 * part's, transfer encoding undone but never converted from its
	 * charset, as `git mailinfo` keeps a patch: a patch to a Latin-1
	 * file applies only so. The one field that need not be UTF-8 (it
	 * holds no NUL).
	 */
	char *diff;
	bool diff_attached;    /* the diff came from an attachment */
	/*
	 * For a mail with a diff, what `git am` would make of the text that
	 * holds it (for a bare diff attached, of the body): the commit
	 * message, from after the in-body header fields to the "---" line
	 * (or the diff, or a "-- " signature), leading and trailing blank
	 * lines left out, converted to UTF-8 from the part's charset; and the
	 * in-body From:, Subject: and Date:. NULL and 0 for a mail without a
	 * diff.
	 */
	char *commit_message;
	char *author;          /* the in-body From: when it reads, else from */
	/*
	 * The in-body Subject: as written, its [PATCH] tags too, or NULL; the
	 * commit's title is patchmail_subject_title() of it, as for `git am`.
	 */
	char *body_subject;
	gint64 body_date;      /* the in-body Date:, or 0 */
	/*
	 * What `git format-patch --base` writes after the diff (or at the
	 * end of a cover letter), read from any line outside the diff of the
	 * body or of the patch's attachment: the first "base-commit:" (40 or
	 * 64 hex digits, lower case; or NULL) and the "prerequisite-patch-id:"
	 * lines (char *, in order).
	 */
	char *base_commit;
	GPtrArray *prerequisite_patch_ids;
};

/*
 * Parses the RFC 5322 message of @len bytes at @data. A message over
 * @size_max bytes, past another bound above, that GMime finds critically
 * malformed, with a multipart cut short or without a Message-ID is
 * refused: NULL and MAIL_ERROR_INVALID, whose message is the reason:
 * "too large: N bytes", "headers too large", "too many parts",
 * "nested too deep", "truncated multipart", "malformed: WHAT",
 * "no Message-ID" or "bad Message-ID". Otherwise returns the mail
 * (caller frees with patchmail_free()).
 */
struct patchmail *patchmail_parse(const char *data, gsize len, gsize size_max, GError **error);
void patchmail_free(struct patchmail *m);
ZD_AUTOPTR_DEFINE(patchmail, patchmail_free)

/*
 * @m as bytes for the store (mail/patchmail-store.c), so that a mail is
 * parsed once, when it comes: every field, in a layout with a version
 * of its own. Returns the bytes (caller unrefs).
 */
GBytes *patchmail_pack(const struct patchmail *m);

/*
 * The mail patchmail_pack() made @bytes of (caller frees with
 * patchmail_free()), equal to it field for field. Bytes of another
 * layout version, an older or newer zeroday's, or that do not read are
 * refused with MAIL_ERROR_INVALID: parse the raw text again.
 */
struct patchmail *patchmail_unpack(GBytes *bytes, GError **error);

/*
 * Whether @m says its patches need others applied first: a
 * "prerequisite-patch-id:" line (git format-patch --base), or b4's
 * "prerequisite-change-id:" or "prerequisite-message-id:", read from the
 * body outside its diff.
 */
bool patchmail_has_prerequisites(const struct patchmail *m);

/* Whether @m is addressed (To or Cc) to @address, compared as address_key() does. */
bool patchmail_addressed_to(const struct patchmail *m, const char *address);

#endif
