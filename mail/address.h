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

#endif
