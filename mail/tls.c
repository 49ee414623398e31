/*
 * TLS for the mail clients: see tls.h. Taken out of smtp.c so that the
 * IMAP source connects, upgrades and checks exactly as SMTP does.
 */
#define G_LOG_DOMAIN "mail"

#include "autoconfig.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <libetpan/mailstream.h>
#include <libetpan/mailstream_ssl.h>

#include "mail/mail.h"
#include "mail/tls.h"

/* Certificates of a chain looked at, at most. */
#define CHAIN_MAX 16

static bool fail_with(GError **error, const struct tls_peer *peer, const char *fmt, ...)
	G_GNUC_PRINTF(3, 4);

static bool fail_with(GError **error, const struct tls_peer *peer, const char *fmt, ...)
{
	va_list ap;
	g_autofree char *what = NULL;

	va_start(ap, fmt);
	what = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_set_error(error, MAIL_ERROR, MAIL_ERROR_TEMPORARY, "%s:%u: %s", peer->host, peer->port,
		    what);
	return false;
}

static bool is_ip_literal(const char *host)
{
	unsigned char buf[sizeof(struct in6_addr)];

	return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

int tls_tcp_connect(const struct tls_peer *peer, GError **error)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV };
	struct addrinfo *list = NULL;
	char port[16];
	int err = 0;
	int r;

	g_snprintf(port, sizeof(port), "%u", peer->port);
	r = getaddrinfo(peer->host, port, &hints, &list);
	if (r != 0) {
		fail_with(error, peer, "cannot resolve the host: %s", gai_strerror(r));
		return -1;
	}
	for (struct addrinfo *ai = list; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
				ai->ai_protocol);
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		socklen_t len = sizeof(err);

		if (fd < 0) {
			err = errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			err = 0;
		else if (errno != EINPROGRESS)
			err = errno;
		else if ((r = poll(&pfd, 1, (int)peer->timeout * 1000)) <= 0)
			err = r == 0 ? ETIMEDOUT : errno;
		else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
			err = errno;
		if (err == 0 && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) == 0) {
			freeaddrinfo(list);
			return fd;
		}
		close(fd);
	}
	freeaddrinfo(list);
	fail_with(error, peer, "cannot connect: %s", g_strerror(err ? err : ECONNREFUSED));
	return -1;
}

/* libetpan's hook into the TLS session before the handshake: SNI. */
static void tls_setup(struct mailstream_ssl_context *ctx, void *data)
{
	const char *host = data;

	if (!is_ip_literal(host))
		mailstream_ssl_set_server_name(ctx, (char *)host);
}

/*
 * Checks the chain the server showed on @stream: it leads to a trusted
 * certificate (the ca-file's, else the system's), and its first is
 * the server's, for the host we asked for (its name, or the IP address
 * literal), and for a TLS server.
 */
static bool verify_peer(const struct tls_peer *peer, mailstream *stream, GError **error)
{
	carray *chain = mailstream_get_certificate_chain(stream);
	gnutls_x509_crt_t certs[CHAIN_MAX];
	unsigned n = 0;
	gnutls_x509_trust_list_t trust = NULL;
	gnutls_typed_vdata_st check[] = {
		{ .type = GNUTLS_DT_DNS_HOSTNAME, .data = (unsigned char *)peer->host },
		{ .type = GNUTLS_DT_KEY_PURPOSE_OID, .data = (unsigned char *)GNUTLS_KP_TLS_WWW_SERVER },
	};
	unsigned status = 0;
	bool ok = false;
	int r;

	if (!chain || carray_count(chain) == 0) {
		fail_with(error, peer, "the server showed no certificate");
		goto out;
	}
	for (unsigned i = 0; i < carray_count(chain) && n < CHAIN_MAX; i++) {
		MMAPString *der = carray_get(chain, i);
		gnutls_datum_t datum = { .data = (unsigned char *)der->str, .size = (unsigned)der->len };

		if (gnutls_x509_crt_init(&certs[n]) < 0)
			goto out;
		n++;
		if (gnutls_x509_crt_import(certs[n - 1], &datum, GNUTLS_X509_FMT_DER) < 0) {
			fail_with(error, peer, "the server's certificate %u cannot be read", i + 1);
			goto out;
		}
	}
	if (gnutls_x509_trust_list_init(&trust, 0) < 0) {
		fail_with(error, peer, "cannot set up certificate checks");
		goto out;
	}
	if (peer->ca_file) {
		r = gnutls_x509_trust_list_add_trust_file(trust, peer->ca_file, NULL,
							  GNUTLS_X509_FMT_PEM, 0, 0);
		if (r <= 0) {
			fail_with(error, peer, "no CA certificate read from %s%s%s", peer->ca_file,
				  r < 0 ? ": " : "", r < 0 ? gnutls_strerror(r) : "");
			goto out;
		}
	} else if (gnutls_x509_trust_list_add_system_trust(trust, 0, 0) <= 0) {
		fail_with(error, peer, "no system CA certificates: install ca-certificates, "
			  "or name a ca-file");
		goto out;
	}
	r = gnutls_x509_trust_list_verify_crt2(trust, certs, n, check, G_N_ELEMENTS(check), 0,
					       &status, NULL);
	if (r < 0) {
		fail_with(error, peer, "cannot check the server's certificate: %s",
			  gnutls_strerror(r));
		goto out;
	}
	if (status != 0) {
		gnutls_datum_t why = { 0 };

		gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &why, 0);
		fail_with(error, peer, "the server's certificate is refused for host %s: %s",
			  peer->host, why.data ? (char *)why.data : "not trusted");
		gnutls_free(why.data);
		goto out;
	}
	ok = true;
out:
	if (trust)
		gnutls_x509_trust_list_deinit(trust, 1);
	for (unsigned i = 0; i < n; i++)
		gnutls_x509_crt_deinit(certs[i]);
	if (chain)
		mailstream_certificate_chain_free(chain);
	return ok;
}

mailstream *tls_open(const struct tls_peer *peer, int fd, GError **error)
{
	mailstream *stream = mailstream_ssl_open_with_callback_timeout(fd, peer->timeout, tls_setup,
								       (void *)peer->host);

	if (!stream) {
		close(fd);
		fail_with(error, peer, "the TLS handshake failed");
		return NULL;
	}
	if (!verify_peer(peer, stream, error)) {
		mailstream_close(stream);
		return NULL;
	}
	return stream;
}

bool tls_starttls(const struct tls_peer *peer, mailstream *stream, GError **error)
{
	mailstream_low *plain;
	mailstream_low *tls;

	if (stream->read_buffer_len != 0)
		return fail_with(error, peer, "the server sent more after its answer to STARTTLS "
				 "(a response injection?); refusing");
	plain = mailstream_get_low(stream);
	tls = mailstream_low_tls_open_with_callback_timeout(mailstream_low_get_fd(plain),
							    peer->timeout, tls_setup,
							    (void *)peer->host);
	if (!tls)
		return fail_with(error, peer, "the TLS handshake failed");
	mailstream_low_free(plain);
	mailstream_set_low(stream, tls);
	return verify_peer(peer, stream, error);
}

char *tls_server_words(const char *response)
{
	GString *out = g_string_new(NULL);

	for (const char *p = response ? response : ""; *p; p++) {
		if (out->len >= TLS_WORDS_MAX) {
			g_string_append(out, "...");
			break;
		}
		g_string_append_c(out, (*p >= 0x20 && *p < 0x7f) ? *p : ' ');
	}
	g_strstrip(out->str);
	out->len = strlen(out->str);
	return g_string_free(out, FALSE);
}
