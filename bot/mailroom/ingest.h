/*
 * Ingest: mail from the sources ([mail] sources) into the store. Each
 * mail is fetched (its size checked against [mail] max-size first),
 * parsed (mail/patchmail.h) and committed with its raw text and its
 * source's cursor in one transaction; only then is it marked done in the
 * source (a Maildir's file moves to cur/). A mail is stored once per
 * Message-ID and content (ingest_content_hash()): the same patch through
 * two lists, or read again after a crash or a changed UIDVALIDITY, is
 * not stored, nor processed, twice. A mail the parser refuses is stored
 * quarantined with the reason, and never answered.
 *
 * A crash at any step loses nothing: before the commit the mail is read
 * again from the source; after it, the store knows it.
 */
#ifndef ZERODAY_INGEST_H
#define ZERODAY_INGEST_H

#include <signal.h>
#include <stdbool.h>
#include <glib.h>

#include "bot/config.h"
#include "bot/store/db.h"

struct ingest_stats {
	unsigned stored;      /* new mails stored (quarantined ones included) */
	unsigned quarantined; /* of those, refused */
	unsigned duplicates;  /* already stored: not stored again */
	unsigned failed;      /* sources that could not be read this time */
};

/*
 * Stores the @len bytes of @raw read from @source (UID @uid, 0 when the
 * source has none) as ingest's header says, at @now, without a
 * transaction of its own: the caller holds one. *@added is false for a
 * duplicate. False only when the store fails.
 */
bool ingest_mail(struct db *db, const struct config *config, const char *source, guint32 uid,
		 const char *raw, gsize len, gint64 now, bool *added, bool *quarantined,
		 GError **error);

/*
 * Reads everything new from the source at @url, a mail at a time, as
 * the header says. A source that cannot be read (down, refused, a
 * timeout) is logged and counted in @stats->failed, and what was stored
 * before stays stored; false only when the store fails. With @stop
 * non-NULL, returns early once it is set.
 */
bool ingest_source(struct db *db, const struct config *config, const char *url,
		   struct ingest_stats *stats, volatile sig_atomic_t *stop, GError **error);

/* Runs ingest_source() on every [mail] sources, in order. */
bool ingest_all(struct db *db, const struct config *config, struct ingest_stats *stats,
		volatile sig_atomic_t *stop, GError **error);

/*
 * The daemon's readers: one thread per source, each with its own store
 * handle (@db_path), reading what is new, then waiting for more (IMAP
 * IDLE where the server has it, else a poll every @poll_s seconds) until
 * *@stop is set. A source that fails is tried again after a backoff
 * that doubles from 10 s to 10 min. @wake, when not NULL, is called
 * after new mail was stored.
 */
struct ingest_readers;

struct ingest_readers *ingest_readers_start(const struct config *config, const char *db_path,
					    unsigned poll_s, volatile sig_atomic_t *stop,
					    void (*wake)(void *data), void *data);
/* Waits for the readers to end (set *@stop first) and frees them. */
void ingest_readers_join(struct ingest_readers *r);

#endif
