/*
 * Mail addresses given by people (tree recipients, command senders).
 */
#ifndef ZERODAY_ADDRESS_H
#define ZERODAY_ADDRESS_H

#include <stdbool.h>
#include <glib.h>

/*
 * Parses @text, one RFC 5322 address ("Name <user@host>" or
 * "user@host"), and returns its normalized form: the display name, quoted
 * as needed, and the addr-spec (caller frees). Groups, lists of several
 * addresses, addresses without a domain and control characters are
 * refused with MAIL_ERROR_INVALID.
 */
char *address_normalize(const char *text, GError **error);

/*
 * Returns the normalized address of mailbox @addr with display name
 * @name (may be NULL or empty), checked as address_normalize() checks
 * (caller frees). The name is taken as it is: commas, quotes and angle
 * brackets in it are quoted, never parsed.
 */
char *address_format(const char *name, const char *addr, GError **error);

/*
 * Returns the addr-spec of @normalized (an address_normalize() result),
 * in lower case: one mailbox's key, however it is written (caller frees).
 */
char *address_key(const char *normalized);

#endif
