/*
 * The source drivers' side of source.h (private to mail/): each backend
 * fills a struct source_driver, and extends struct source by putting it
 * first in its own struct (isync's driver.h).
 */
#ifndef ZERODAY_SOURCE_PRIVATE_H
#define ZERODAY_SOURCE_PRIVATE_H

#include "mail/source.h"

/* Messages larger than this are never fetched unless the options say so. */
#define SOURCE_SIZE_MAX_DEFAULT ((gsize)64 << 20)
#define SOURCE_TIMEOUT_DEFAULT 60

struct source_driver {
	/* The size of the backend's struct, which begins with struct source. */
	gsize size;
	/* Opens @s, whose common fields are set; on failure, close() follows. */
	bool (*open)(struct source *s, GError **error);
	bool (*list)(struct source *s, guint32 after_uid, unsigned limit, guint32 *uidvalidity,
		     GPtrArray *entries, GError **error);
	/* Optional: what source_plan() says; NULL for a backend without batches. */
	void (*plan)(struct source *s, GPtrArray *entries);
	char *(*fetch)(struct source *s, const struct source_entry *e, gsize *len, GError **error);
	bool (*done)(struct source *s, const struct source_entry *e, GError **error);
	bool (*wait)(struct source *s, unsigned seconds, bool *changed, GError **error);
	/* Frees what the backend holds (not the common fields, nor @s). */
	void (*close)(struct source *s);
};

/* The common part of every source; set by source_open() before open(). */
struct source {
	const struct source_driver *driver;
	struct source_url url;
	char *name;     /* the URL without secrets */
	char *ca_file;  /* copies of the options */
	char *password; /* wiped when freed */
	unsigned timeout;
	gsize size_max;
};

extern const struct source_driver imap_source_driver;
extern const struct source_driver maildir_source_driver;

/* A new entry (caller frees with source_entry_free()); @name copied. */
struct source_entry *source_entry_new(guint32 uid, const char *name, guint64 size,
				      char *message_id);

/* Sets MAIL_ERROR_INVALID "too large: N bytes" and returns false. */
bool source_too_large(GError **error, const struct source *s, guint64 size);

#endif
