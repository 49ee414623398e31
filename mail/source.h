/*
 * Reading mail: one interface, a backend per URL scheme (isync's
 * driver.h). A source lists the messages that are new to the caller,
 * hands out their bytes, and is told when the caller has stored one.
 *
 *	maildir:/abs/path                   the files of new/, moved to cur/ when done
 *	imap://USER@HOST[:PORT]/FOLDER      port 143, STARTTLS required
 *	imaps://USER@HOST[:PORT]/FOLDER     port 993, TLS from the first byte
 *
 * IMAP is read-only (EXAMINE, BODY.PEEK): the caller keeps the cursor
 * (UIDVALIDITY and the last UID stored) under source_name(). Every server
 * certificate is checked (chain and host name) before LOGIN.
 *
 * Errors (MAIL_ERROR): TEMPORARY for connect, TLS, timeouts, a dropped
 * connection, a NO or BAD to a command that should work (reconnect, with
 * backoff); PERMANENT for a refused login or a missing folder; INVALID for
 * a hostile URL or oversize or malformed data.
 *
 * Memory: every returned char * and struct belongs to the caller unless
 * said borrowed; everything is GLib-allocated.
 */
#ifndef ZERODAY_SOURCE_H
#define ZERODAY_SOURCE_H

#include <stdbool.h>
#include <glib.h>

enum source_scheme {
	SOURCE_MAILDIR,
	SOURCE_IMAP,  /* STARTTLS required */
	SOURCE_IMAPS, /* implicit TLS */
};

/* A parsed source URL; the strings are owned (source_url_release()). */
struct source_url {
	enum source_scheme scheme;
	char *user;   /* IMAP: the login name, percent-decoded */
	char *host;   /* IMAP: a name or an IP literal (IPv6 without brackets) */
	unsigned port;
	char *folder; /* IMAP: the folder, percent-decoded */
	char *path;   /* Maildir: the absolute directory */
};

/*
 * Parses "maildir:/abs/path", "imap://USER@HOST[:PORT]/FOLDER" (port
 * 143) or "imaps://USER@HOST[:PORT]/FOLDER" (993) into @out (set only on
 * success; release it with source_url_release()). USER and FOLDER may be
 * percent-encoded; HOST may be an IPv6 literal in brackets. Refuses with
 * MAIL_ERROR_INVALID: an unknown scheme, a password in the URL, a
 * relative Maildir path, control characters, empty parts, a bad port, a
 * decoded NUL, CR or LF.
 */
bool source_url_parse(const char *url, struct source_url *out, GError **error);

/* Frees what @u holds and zeroes it; safe on a zeroed struct. */
void source_url_release(struct source_url *u);

/* How to open a source; borrowed by source_open() for the call only. */
struct source_options {
	const char *ca_file;  /* PEM certificates to trust; NULL: the system's */
	const char *password; /* IMAP LOGIN; NULL: "anonymous" (public-inbox-imapd) */
	unsigned timeout;     /* seconds, for the connect and every reply; 0: 60 */
	gsize size_max;       /* the largest message fetched, in bytes; 0: 64 MiB */
};

/* One message a source listed. */
struct source_entry {
	guint32 uid;      /* IMAP: its UID; Maildir: 0 */
	char *name;       /* Maildir: its file name in new/; IMAP: NULL */
	guint64 size;     /* bytes, as the server or the file system says */
	char *message_id; /* from its header, without <>, or NULL */
};

/* Frees @e and what it holds; NULL is fine. */
void source_entry_free(struct source_entry *e);

struct source;

/*
 * Opens the source @url (see source_url_parse()) with @opts: for IMAP,
 * connects, TLS (checked), LOGIN, EXAMINE of the folder. Returns the
 * source (source_close() frees it), or NULL with @error.
 */
struct source *source_open(const char *url, const struct source_options *opts, GError **error);

/*
 * Lists at most @limit (0: no limit) messages, oldest first, into
 * *@entries (a new array of struct source_entry, owned by the caller,
 * freeing its elements). IMAP: those with a UID above @after_uid, in UID
 * order, and *@uidvalidity the folder's UIDVALIDITY. Maildir: the regular
 * files of new/ with plain names, by name (@after_uid ignored; anything
 * else there is skipped and logged), and *@uidvalidity 0.
 */
bool source_list(struct source *s, guint32 after_uid, unsigned limit, guint32 *uidvalidity,
		 GPtrArray **entries, GError **error);

/*
 * Returns the bytes of the message @e (listed by @s), NUL-terminated,
 * with their length in *@len (caller frees). A message larger than the
 * size_max of the options is refused before it is fetched, with
 * MAIL_ERROR_INVALID "too large: N bytes", and so is one that turns out
 * larger than listed.
 */
char *source_fetch(struct source *s, const struct source_entry *e, gsize *len, GError **error);

/*
 * Tells @s which of the entries it listed the caller means to fetch
 * next, in that order (@entries: struct source_entry, borrowed for the
 * call only; the last plan counts). A backend that can fetch several
 * messages in one round trip then does: IMAP asks for up to
 * SOURCE_BATCH_MAX messages, or SOURCE_BATCH_BYTES of them as listed, in
 * one UID FETCH at the source_fetch() of the first, and hands out the
 * others from memory, one batch at a time. A message listed over the
 * size cap is never in a batch: source_fetch() refuses it unfetched, as
 * ever. Nothing is done in the source by fetching ahead (BODY.PEEK), so
 * a batch lost to a crash is fetched again. Without a plan, each
 * source_fetch() is one round trip; Maildir ignores it.
 */
void source_plan(struct source *s, GPtrArray *entries);
#define SOURCE_BATCH_MAX 100
#define SOURCE_BATCH_BYTES ((gsize)4 << 20)

/*
 * Tells the source that the caller has stored @e: Maildir moves
 * new/NAME to cur/NAME:2,S (and syncs cur/); IMAP does nothing (the
 * caller keeps the UID cursor).
 */
bool source_done(struct source *s, const struct source_entry *e, GError **error);

/*
 * Waits up to @seconds for new mail and sets *@changed when some came:
 * IMAP IDLE when the server has it (else a sleep, *@changed false);
 * Maildir inotify on new/.
 */
bool source_wait(struct source *s, unsigned seconds, bool *changed, GError **error);

/* The URL without secrets, for logs and as the cursor's key (borrowed from @s). */
const char *source_name(const struct source *s);

/* Logs out, closes and frees @s; NULL is fine. */
void source_close(struct source *s);

/*
 * The Message-ID of the header block @header (@len bytes, need not end
 * in NUL; what follows the header's end is not read): the first
 * Message-ID field, unfolded, without <> and blanks; NULL when missing or
 * malformed (controls, spaces or brackets inside, longer than 995
 * bytes). Caller frees. For what no parser reads: a source's listing, a
 * refused mail's quarantine key.
 */
char *source_message_id(const char *header, gsize len);

#endif
