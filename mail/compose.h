/*
 * A reply as data, and its RFC 5322 bytes. The caller decides everything
 * (recipients, Message-ID, threading, date); composing only writes it
 * down safely: header values from strangers (display names, subjects,
 * Message-IDs) cannot add a header line, names and subjects outside
 * ASCII are RFC 2047 encoded, and the body is plain UTF-8 text.
 */
#ifndef ZERODAY_COMPOSE_H
#define ZERODAY_COMPOSE_H

#include <stdbool.h>
#include <glib.h>

#include "engine/engine.h"

/* A text attachment. */
struct reply_attachment {
	char *filename; /* plain name, no directory */
	char *text;     /* UTF-8 (invalid bytes are replaced when composed), or NULL: */
	GBytes *data;   /* bytes, sent base64 as @content_type */
	char *content_type;
};

struct reply {
	char *from;          /* "Name <addr>" or "addr" */
	GPtrArray *to;       /* char *, "Name <addr>" or "addr" */
	GPtrArray *cc;
	char *subject;
	char *message_id;    /* without the angle brackets */
	char *in_reply_to;   /* likewise, or NULL */
	GPtrArray *references; /* char *, Message-IDs without brackets, oldest first */
	gint64 date;         /* unix seconds */
	char *body;          /* UTF-8 text */
	GPtrArray *attachments; /* struct reply_attachment */
};

/* An empty reply (every array allocated and empty). */
void reply_init(struct reply *r);
/* Frees what @r holds. */
void reply_release(struct reply *r);

/*
 * Threads @r under the mail @message_id (RFC 5322 3.6.4): In-Reply-To
 * it; References @references (@n of them, oldest first; may be none),
 * else that mail's own @in_reply_to (may be NULL), then it. The one
 * place a reply's In-Reply-To and References are written. Copies all.
 */
void reply_thread(struct reply *r, const char *message_id, const char *in_reply_to,
		  char *const *references, gsize n);

/* Adds a text attachment (copies @filename and @text). */
void reply_attach(struct reply *r, const char *filename, const char *text);
/* Adds bytes @data as an attachment of @content_type ("application/gzip"); refs @data. */
void reply_attach_bytes(struct reply *r, const char *filename, const char *content_type,
			GBytes *data);

/*
 * Keeps @r's composed size under @max bytes: while it is over, its
 * largest attachment is left out, and a line at the end of the body says
 * so ("[left out of this mail to keep it under 100000 bytes: build.log,
 * 812345 bytes]"). False with MAIL_ERROR_INVALID when it cannot be
 * composed (compose_message()); true when it fits, or when nothing is
 * left to leave out.
 */
bool reply_fit(struct reply *r, gsize max, GError **error);

/*
 * Returns @r as RFC 5322 bytes, lines ending in "\n" (caller frees):
 * From, To, Cc, Subject, Date (UTC), Message-ID, In-Reply-To,
 * References, Auto-Submitted: auto-generated (RFC 3834, so that other
 * robots do not answer it), MIME-Version, and a text/plain body, or
 * multipart/mixed with the attachments after it. A recipient that is not
 * one valid address, a Message-ID that is not one, or no recipient at
 * all is refused with MAIL_ERROR_INVALID.
 */
char *compose_message(const struct reply *r, GError **error);

/*
 * Returns a new Message-ID, without brackets: "zeroday-@tag-RANDOM@@domain"
 * with 128 random bits (caller frees).
 */
char *compose_message_id(const char *tag, const char *domain);

#endif
