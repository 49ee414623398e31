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
 * The addr-spec is GMime's reading of the address, never the text after
 * the last '<': in "z<adm@example.net>"@evil.org the key is that whole
 * quoted address, at evil.org. Text that is not one mailbox is its own
 * key, stripped and in lower case.
 */
char *address_key(const char *normalized);

/*
 * Returns the addr-spec of @normalized as written, case kept (caller
 * frees): what an SMTP envelope takes. NULL when @normalized is not one
 * mailbox.
 */
char *address_spec(const char *normalized);

/*
 * Whether addr-spec @spec (address_key() or address_spec()) is a plain
 * user@domain: a local part without quotes, backslashes, angle
 * brackets, '@' or blanks. A sender with any of those is taken for no
 * one: such a local part exists to make an address read as another.
 */
bool address_is_plain(const char *spec);

/*
 * What a mail's header says about answering it, past what
 * mail/patchmail.h keeps: whom to answer (Reply-To), the list it came
 * through (List-Post, RFC 2369) and its Precedence (RFC 3834).
 */
struct address_reply_fields {
	char **reply_to;  /* Reply-To's mailboxes, normalized; NULL-terminated, empty when
			   * there is none or one of them does not read */
	char *list_post;  /* List-Post's first mailto: address, address_key() form, or NULL */
	char *precedence; /* Precedence's keyword, lower case ("bulk"), or NULL */
};

/*
 * Reads @out (which need not be initialized; release it with
 * address_reply_fields_release()) from the header of the RFC 5322
 * message @raw of @len bytes; the body is not read. Fails with
 * MAIL_ERROR_INVALID when GMime finds no header there; @out is empty
 * then.
 */
bool address_reply_fields_read(struct address_reply_fields *out, const char *raw, gsize len,
			       GError **error);
void address_reply_fields_release(struct address_reply_fields *f);

#endif
