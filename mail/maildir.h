/*
 * The Maildir sink: a mail is written to tmp/, synced, linked into new/
 * under its name, and the directory synced; only then is it delivered.
 * Delivering a name that new/ or cur/ holds already leaves that copy
 * alone, so a delivery repeated after a crash makes no second copy.
 */
#ifndef ZERODAY_MAILDIR_H
#define ZERODAY_MAILDIR_H

#include <stdbool.h>
#include <glib.h>

/* A name's longest spelling, and its characters: [A-Za-z0-9._-]. */
#define MAILDIR_NAME_MAX 128

/*
 * Creates the Maildir @dir (and cur/, new/, tmp/ in it) when missing,
 * mode 0700. MAIL_ERROR_FAILED naming the path on failure.
 */
bool maildir_create(const char *dir, GError **error);

/*
 * Delivers @len bytes of @data into the Maildir @dir (created when
 * missing) as new/@name, once; returns the path of the delivered file
 * (caller frees), NULL with @error set on failure. A @name that is not a
 * plain file name is refused with MAIL_ERROR_INVALID.
 */
char *maildir_deliver(const char *dir, const char *name, const char *data, gsize len,
		      GError **error);

#endif
