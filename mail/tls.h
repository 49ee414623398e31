/*
 * TLS for the mail clients (private to mail/): our own TCP connect with
 * a timeout, implicit TLS or a STARTTLS upgrade on libetpan's streams,
 * and the check of the server's certificate chain and host name with
 * GnuTLS (libetpan checks neither). The only file that includes GnuTLS.
 * Used by smtp.c and imap.c.
 */
#ifndef ZERODAY_TLS_H
#define ZERODAY_TLS_H

#include <stdbool.h>
#include <glib.h>

struct _mailstream;

/* The server a client talks to; borrowed strings. */
struct tls_peer {
	const char *host;    /* a DNS name or an IP address literal */
	unsigned port;
	const char *ca_file; /* PEM certificates to trust; NULL: the system's */
	unsigned timeout;    /* seconds, for the connect and the handshake */
};

/*
 * A TCP connection to @peer within its timeout: the socket (blocking,
 * close-on-exec, the caller closes it), or -1 with MAIL_ERROR_TEMPORARY
 * "HOST:PORT: cannot ...".
 */
int tls_tcp_connect(const struct tls_peer *peer, GError **error);

/*
 * Implicit TLS on the connected socket @fd: the handshake (with SNI for a
 * host name), then the chain and the name checked. Returns the stream
 * (the caller closes it with mailstream_close(), which closes @fd), or
 * NULL with MAIL_ERROR_TEMPORARY, @fd closed.
 */
struct _mailstream *tls_open(const struct tls_peer *peer, int fd, GError **error);

/*
 * Upgrades the plain @stream after the server agreed to STARTTLS: refuses
 * when the server sent anything after its answer (bytes that came before
 * the handshake would be read as if they came after it: CVE-2020-15953),
 * then the handshake on the same socket, and the check as tls_open().
 * @stream stays the caller's. MAIL_ERROR_TEMPORARY on failure.
 */
bool tls_starttls(const struct tls_peer *peer, struct _mailstream *stream, GError **error);

/*
 * A server's words (@response may be NULL) as errors and logs show them:
 * one line of printable ASCII, at most TLS_WORDS_MAX bytes and "..."
 * (caller frees).
 */
#define TLS_WORDS_MAX 200
char *tls_server_words(const char *response);

#endif
