/*
 * DKIM verification of received mail (RFC 6376), done by zeroday itself
 * with libopendkim: an Authentication-Results header that came with the
 * mail is never trusted.
 *
 * libopendkim exports dkim_verify() and many other dkim_* names, so this
 * module's functions are named dkim_verify_mail() and dkim_from_matches(),
 * names the library does not use.
 */
#ifndef ZERODAY_DKIM_H
#define ZERODAY_DKIM_H

#include <stdbool.h>
#include <glib.h>

/*
 * Verifies every DKIM-Signature header of the RFC 5322 message @raw of
 * @len bytes (LF or CRLF line ends; a bare LF is taken as CRLF, the form
 * the mail was signed in) and sets *@domains to the d= domains whose
 * signatures passed: lower-cased, without duplicates, in the order the
 * signatures appear, NULL-terminated (caller frees with g_strfreev()).
 *
 * A signature passes only when its header hash and its body hash both
 * verify with an rsa-sha256 or ed25519-sha256 key that is not in test mode
 * (t=y), and it has no l= body length limit. rsa-sha1 signatures never pass
 * (RFC 8301 forbids verifying them), nor does any signature of a message
 * with more than one From, Date, Subject, To, Cc, Message-ID, In-Reply-To,
 * References, Sender or Reply-To header, or without a Date header: which
 * From a reader sees would be ambiguous. A message with more than 8
 * signatures, with a NUL byte, or with a header line that is no header
 * field (no colon, a control character in the name) is not verified at
 * all (its list is empty): it is hostile, each signature may cost a DNS
 * query, and a parser may take such a line for the start of the body.
 *
 * Keys come from DNS (TXT records at selector._domainkey.domain, asked
 * once of each name server of /etc/resolv.conf, waiting about 5 seconds
 * for each) when @key_file is NULL, else from @key_file: one key per
 * line of at most 1024 bytes, "selector._domainkey.domain", white space,
 * then the TXT record's content as one unquoted string, for example
 * "sel._domainkey.example.org v=DKIM1; k=rsa; p=MIIB...". Lines starting
 * with '#' are comments. The name is matched case-insensitively.
 *
 * An unsigned message, or one whose signatures all fail (bad signature,
 * altered body or headers, no key), gives an empty list and true: each
 * failure is logged at debug level with its reason.
 *
 * Returns false, leaving *@domains unset, only when the answer cannot be
 * known: libopendkim could not start or failed internally, @key_file is
 * unreadable (MAIL_ERROR_FAILED), or the DNS query for the key of a
 * signature failed or timed out (not "no such name") and no other
 * signature of the same domain passed (MAIL_ERROR_TEMPORARY: try again
 * later).
 */
bool dkim_verify_mail(const char *raw, gsize len, const char *key_file, char ***domains,
		      GError **error);

/*
 * Returns whether the domain of @from_address, an addr-spec
 * ("user@example.org", as address_key() gives it) taken from the one From
 * header of the message that dkim_verify_mail() checked, equals one of
 * the NULL-terminated @domains, ignoring ASCII case. The match is exact: a
 * signature by a parent domain (d=example.org for From: user@sub.example.org)
 * does not match. An address without a domain matches nothing.
 */
bool dkim_from_matches(const char *const *domains, const char *from_address);

#endif
