/*
 * What mail/'s MIME files share (address.c, compose.c, patchmail.c,
 * mime.c), and the only place that includes GMime's headers. Private to
 * those files: one place pins the GMime version zeroday is written
 * against, declares the autoptr cleanups GMime 3.2 does not ship, and
 * owns GMime's once-per-process initialisation (mail_global_init(), in
 * mime.c), so that no other file of mail/, and nothing outside it,
 * depends on GMime's API. Everyone else uses address.h, compose.h and
 * patchmail.h; a test may include this header for its test-only part.
 */
#ifndef ZERODAY_MIME_PRIVATE_H
#define ZERODAY_MIME_PRIVATE_H

#include <stdbool.h>
#include <glib.h>

#include <gmime/gmime.h>

#include "mail/mail.h"

/* configure.ac asks for gmime-3.0 >= 3.2; so does the code, at compile time. */
#if !GMIME_CHECK_VERSION(3, 2, 0)
#error "zeroday needs GMime 3.2 or later"
#endif

G_DEFINE_AUTOPTR_CLEANUP_FUNC(GMimeStream, g_object_unref)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(GMimeParser, g_object_unref)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(GMimeMessage, g_object_unref)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(GMimeContentType, g_object_unref)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(GMimeParserOptions, g_mime_parser_options_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(InternetAddress, g_object_unref)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(InternetAddressList, g_object_unref)

/* The longest Message-ID written or kept; longer ones are refused or dropped. */
#define MIME_MESSAGE_ID_MAX 250

/* True when @s holds a control character (below 0x20, CR and LF included, or DEL). */
bool mime_has_control(const char *s);

/*
 * Whether @mailbox's address reads user@domain.tld: no control character,
 * no leading '-', at most 512 bytes.
 */
bool mime_mailbox_addr_ok(InternetAddressMailbox *mailbox);

/*
 * Parses @text as one mailbox and returns it (caller unrefs), or NULL
 * with @why (may be NULL) set to a static reason: "not exactly one
 * address" or "groups are not accepted". Control characters and the
 * form of the address are the caller's to check.
 */
InternetAddress *mime_mailbox_parse(const char *text, const char **why);

/*
 * Works around GMime before 3.2.14 (Debian 12 has 3.2.13; GMime issue
 * #133), which decodes adjacent base64 encoded-words of one charset as one
 * run, so that the first one's padding ends it: "=?UTF-8?B?ZHJtOiBmaXg=?=
 * =?UTF-8?B?IHRoZSBtw7xsbGVy?=" reads "drm: fix". Returns a copy of the
 * raw header value @raw in which each run of two or more encoded-words of
 * one charset, separated only by whitespace, is one base64 encoded-word
 * of their bytes, each word decoded on its own and the whitespace between
 * them dropped (RFC 2047 section 6.2); the bytes are joined before their
 * charset is read, so a character split over two words stays whole. NULL
 * when @raw has no such run: GMime's own reading is right (caller frees).
 */
char *mime_join_encoded_words(const char *raw);

/*
 * The unstructured header field @name of @object (Subject) decoded to
 * UTF-8 through mime_join_encoded_words() (caller frees); NULL when the
 * field is absent or has no run to join: g_mime_object_get_header()'s
 * reading is right then.
 */
char *mime_header_text(GMimeObject *object, const char *name);

/*
 * The address field @name of @object (From, To, Cc) parsed again through
 * mime_join_encoded_words(), so that display names are whole (caller
 * unrefs); NULL when the field is absent or has no run to join: GMime's
 * own list is right then.
 */
InternetAddressList *mime_header_addresses(GMimeObject *object, const char *name);

/*
 * Parses the message in @bytes (taken) with @options (borrowed; NULL for
 * GMime's defaults). Returns it (caller unrefs), or NULL when GMime finds
 * no message there.
 */
GMimeMessage *mime_message_parse(GByteArray *bytes, GMimeParserOptions *options);

/*
 * The content of @part with its transfer encoding undone, its charset
 * untouched (caller unrefs), or NULL when the part has no content.
 */
GByteArray *mime_part_decoded(GMimePart *part);

/*
 * For tests, which see no GMime type: reads back the message in @data
 * (@len bytes) as a mail reader would. Returns the decoded content of
 * each of its leaf parts in order, as GBytes (caller unrefs the array),
 * and its Message-ID in @message_id (caller frees; NULL when it has
 * none); NULL when GMime finds no message there.
 */
GPtrArray *mime_read_back(const char *data, gsize len, char **message_id);

#endif
