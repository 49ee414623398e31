/*
 * SMTP over TLS with libetpan: see smtp.h.
 *
 * libetpan does the protocol and the TLS record layer; the rest is ours:
 * the TCP connect (with its timeout), the upgrade after STARTTLS (so that
 * bytes the server sent before the handshake are seen and refused), and
 * the check of the server's certificate chain and name with GnuTLS, done
 * before the first word after the handshake.
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
#include <libetpan/libetpan.h>

#include "mail/mail.h"
#include "mail/smtp.h"

/* Server words kept in an error or a recipient's state, at most. */
#define REPLY_MAX 200
/* Certificates of a chain looked at, at most. */
#define CHAIN_MAX 16

struct session {
	const struct smtp_server *server;
	mailsmtp *smtp;
};

/* The server's last reply, one printable line of at most REPLY_MAX bytes (caller frees). */
static char *reply_text(const mailsmtp *smtp)
{
	GString *out = g_string_new(NULL);

	for (const char *p = smtp && smtp->response ? smtp->response : ""; *p; p++) {
		if (out->len >= REPLY_MAX) {
			g_string_append(out, "...");
			break;
		}
		g_string_append_c(out, (*p >= 0x20 && *p < 0x7f) ? *p : ' ');
	}
	g_strstrip(out->str);
	out->len = strlen(out->str);
	return g_string_free(out, FALSE);
}

/*
 * Sets @error for a failed @what: MAIL_ERROR_PERMANENT for a 5xx reply,
 * else MAIL_ERROR_TEMPORARY, with the server's words when it said any.
 */
static bool fail(GError **error, const struct session *s, const char *what, int r)
{
	int code = s->smtp ? s->smtp->response_code : 0;
	bool said = r != MAILSMTP_ERROR_STREAM && code >= 200 && code < 600;
	g_autofree char *words = said ? reply_text(s->smtp) : NULL;

	if (said)
		g_set_error(error, MAIL_ERROR, code >= 500 ? MAIL_ERROR_PERMANENT : MAIL_ERROR_TEMPORARY,
			    "%s:%u: %s: the server said %d%s%s%s", s->server->host, s->server->port,
			    what, code, *words ? " \"" : "", words, *words ? "\"" : "");
	else
		g_set_error(error, MAIL_ERROR, MAIL_ERROR_TEMPORARY, "%s:%u: %s: %s",
			    s->server->host, s->server->port, what, mailsmtp_strerror(r));
	return false;
}

static bool fail_with(GError **error, const struct session *s, const char *fmt, ...)
	G_GNUC_PRINTF(3, 4);

static bool fail_with(GError **error, const struct session *s, const char *fmt, ...)
{
	va_list ap;
	g_autofree char *what = NULL;

	va_start(ap, fmt);
	what = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_set_error(error, MAIL_ERROR, MAIL_ERROR_TEMPORARY, "%s:%u: %s", s->server->host,
		    s->server->port, what);
	return false;
}

static bool is_ip_literal(const char *host)
{
	unsigned char buf[sizeof(struct in6_addr)];

	return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

/* A TCP connection to the server, within the timeout; -1 with @error. */
static int tcp_connect(const struct session *s, GError **error)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV };
	struct addrinfo *list = NULL;
	char port[16];
	int err = 0;
	int r;

	g_snprintf(port, sizeof(port), "%u", s->server->port);
	r = getaddrinfo(s->server->host, port, &hints, &list);
	if (r != 0) {
		fail_with(error, s, "cannot resolve the host: %s", gai_strerror(r));
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
		else if ((r = poll(&pfd, 1, (int)s->server->timeout * 1000)) <= 0)
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
	fail_with(error, s, "cannot connect: %s", g_strerror(err ? err : ECONNREFUSED));
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
static bool verify_peer(const struct session *s, mailstream *stream, GError **error)
{
	carray *chain = mailstream_get_certificate_chain(stream);
	gnutls_x509_crt_t certs[CHAIN_MAX];
	unsigned n = 0;
	gnutls_x509_trust_list_t trust = NULL;
	gnutls_typed_vdata_st check[] = {
		{ .type = GNUTLS_DT_DNS_HOSTNAME, .data = (unsigned char *)s->server->host },
		{ .type = GNUTLS_DT_KEY_PURPOSE_OID, .data = (unsigned char *)GNUTLS_KP_TLS_WWW_SERVER },
	};
	unsigned status = 0;
	bool ok = false;
	int r;

	if (!chain || carray_count(chain) == 0) {
		fail_with(error, s, "the server showed no certificate");
		goto out;
	}
	for (unsigned i = 0; i < carray_count(chain) && n < CHAIN_MAX; i++) {
		MMAPString *der = carray_get(chain, i);
		gnutls_datum_t datum = { .data = (unsigned char *)der->str, .size = (unsigned)der->len };

		if (gnutls_x509_crt_init(&certs[n]) < 0)
			goto out;
		n++;
		if (gnutls_x509_crt_import(certs[n - 1], &datum, GNUTLS_X509_FMT_DER) < 0) {
			fail_with(error, s, "the server's certificate %u cannot be read", i + 1);
			goto out;
		}
	}
	if (gnutls_x509_trust_list_init(&trust, 0) < 0) {
		fail_with(error, s, "cannot set up certificate checks");
		goto out;
	}
	if (s->server->ca_file) {
		r = gnutls_x509_trust_list_add_trust_file(trust, s->server->ca_file, NULL,
							  GNUTLS_X509_FMT_PEM, 0, 0);
		if (r <= 0) {
			fail_with(error, s, "no CA certificate read from %s%s%s", s->server->ca_file,
				  r < 0 ? ": " : "", r < 0 ? gnutls_strerror(r) : "");
			goto out;
		}
	} else if (gnutls_x509_trust_list_add_system_trust(trust, 0, 0) <= 0) {
		fail_with(error, s, "no system CA certificates: install ca-certificates, "
			  "or name a ca-file");
		goto out;
	}
	r = gnutls_x509_trust_list_verify_crt2(trust, certs, n, check, G_N_ELEMENTS(check), 0,
					       &status, NULL);
	if (r < 0) {
		fail_with(error, s, "cannot check the server's certificate: %s", gnutls_strerror(r));
		goto out;
	}
	if (status != 0) {
		gnutls_datum_t why = { 0 };

		gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &why, 0);
		fail_with(error, s, "the server's certificate is refused for host %s: %s",
			  s->server->host, why.data ? (char *)why.data : "not trusted");
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

/*
 * STARTTLS, required: offered, answered 220 and nothing after it (bytes
 * that came before the handshake would be read as if they came after
 * it: CVE-2020-15953), then the handshake on the same socket, checked.
 */
static bool starttls(struct session *s, GError **error)
{
	mailstream_low *plain;
	mailstream_low *tls;
	int r;

	if (!(s->smtp->esmtp & MAILSMTP_ESMTP_STARTTLS))
		return fail_with(error, s, "the server does not offer STARTTLS; "
				 "refusing to send in plain text");
	r = mailesmtp_starttls(s->smtp);
	if (s->smtp->stream->read_buffer_len != 0)
		return fail_with(error, s, "the server sent more after its answer to STARTTLS "
				 "(a response injection?); refusing");
	if (r != MAILSMTP_NO_ERROR)
		return fail(error, s, "STARTTLS", r);
	plain = mailstream_get_low(s->smtp->stream);
	tls = mailstream_low_tls_open_with_callback_timeout(mailstream_low_get_fd(plain),
							    s->server->timeout, tls_setup,
							    (void *)s->server->host);
	if (!tls)
		return fail_with(error, s, "the TLS handshake failed");
	mailstream_low_free(plain);
	mailstream_set_low(s->smtp->stream, tls);
	return verify_peer(s, s->smtp->stream, error);
}

/* Connected, greeted, in TLS, introduced and, when asked, authenticated. */
static bool session_open(struct session *s, GError **error)
{
	const struct smtp_server *srv = s->server;
	mailstream *stream;
	int fd;
	int r;

	s->smtp = mailsmtp_new(0, NULL);
	if (!s->smtp)
		return fail_with(error, s, "out of memory");
	mailsmtp_set_timeout(s->smtp, srv->timeout);
	fd = tcp_connect(s, error);
	if (fd < 0)
		return false;
	if (srv->tls == SMTP_IMPLICIT_TLS)
		stream = mailstream_ssl_open_with_callback_timeout(fd, srv->timeout, tls_setup,
								   (void *)srv->host);
	else
		stream = mailstream_socket_open_timeout(fd, srv->timeout);
	if (!stream) {
		close(fd);
		return fail_with(error, s, srv->tls == SMTP_IMPLICIT_TLS ? "the TLS handshake failed"
							     : "out of memory");
	}
	if (srv->tls == SMTP_IMPLICIT_TLS && !verify_peer(s, stream, error)) {
		mailstream_close(stream);
		return false;
	}
	/* From here the session owns the stream. */
	r = mailsmtp_connect(s->smtp, stream);
	if (r != MAILSMTP_NO_ERROR)
		return fail(error, s, "the greeting", r);
	r = mailesmtp_ehlo(s->smtp);
	if (r != MAILSMTP_NO_ERROR)
		return fail(error, s, "EHLO", r);
	if (srv->tls == SMTP_STARTTLS) {
		if (!starttls(s, error))
			return false;
		/* What the server said before TLS is forgotten (RFC 3207). */
		r = mailesmtp_ehlo(s->smtp);
		if (r != MAILSMTP_NO_ERROR)
			return fail(error, s, "EHLO after STARTTLS", r);
	}
	if (srv->user) {
		r = mailesmtp_auth_sasl(s->smtp, "PLAIN", srv->host, NULL, NULL, srv->user,
					srv->user, srv->password, NULL);
		if (r != MAILSMTP_NO_ERROR)
			return fail(error, s, "AUTH PLAIN", r);
	}
	return true;
}

static void rcpt_set(struct smtp_rcpt *rcpt, enum smtp_rcpt_state state, const mailsmtp *smtp)
{
	rcpt->state = state;
	rcpt->code = smtp ? smtp->response_code : 0;
	g_free(rcpt->reply);
	rcpt->reply = smtp ? reply_text(smtp) : NULL;
}

bool smtp_send(const struct smtp_server *server, const char *from, struct smtp_rcpt *rcpts,
	       size_t n, const char *message, size_t length, smtp_step_fn step, void *data,
	       GError **error)
{
	struct session s = { .server = server };
	size_t accepted = 0;
	bool ok = false;
	int r;

	for (size_t i = 0; i < n; i++)
		rcpt_set(&rcpts[i], SMTP_RCPT_DEFERRED, NULL);
	if (step)
		step(SMTP_STEP_CONNECT, data);
	if (!session_open(&s, error))
		goto out;
	r = mailsmtp_mail(s.smtp, from);
	if (r != MAILSMTP_NO_ERROR) {
		fail(error, &s, "MAIL FROM", r);
		goto out;
	}
	if (step)
		step(SMTP_STEP_MAIL, data);
	for (size_t i = 0; i < n; i++) {
		r = mailsmtp_rcpt(s.smtp, rcpts[i].address);
		if (r == MAILSMTP_NO_ERROR) {
			rcpt_set(&rcpts[i], SMTP_RCPT_ACCEPTED, s.smtp);
			accepted++;
		} else if (r == MAILSMTP_ERROR_STREAM) {
			fail(error, &s, "RCPT TO", r);
			goto out;
		} else {
			rcpt_set(&rcpts[i], s.smtp->response_code >= 500 ? SMTP_RCPT_REFUSED
									 : SMTP_RCPT_DEFERRED, s.smtp);
		}
	}
	if (accepted == 0) {
		/* Nobody to send it to in this session: say goodbye. */
		mailsmtp_quit(s.smtp);
		ok = true;
		goto out;
	}
	/*
	 * libetpan ends the data with CRLF "." CRLF whatever the message
	 * ends with: its last line end is left to that, or the mail would
	 * arrive with an empty line more than it has.
	 */
	if (length && message[length - 1] == '\n')
		length--;
	if (length && message[length - 1] == '\r')
		length--;
	r = mailsmtp_data(s.smtp);
	if (r == MAILSMTP_NO_ERROR)
		r = mailsmtp_data_message(s.smtp, message, length);
	if (r != MAILSMTP_NO_ERROR && r != MAILSMTP_ERROR_STREAM &&
	    s.smtp->response_code >= 500 && s.smtp->response_code < 600) {
		/* The message itself is refused, for good, for everyone accepted. */
		for (size_t i = 0; i < n; i++) {
			if (rcpts[i].state == SMTP_RCPT_ACCEPTED)
				rcpt_set(&rcpts[i], SMTP_RCPT_REFUSED, s.smtp);
		}
		mailsmtp_quit(s.smtp);
		ok = true;
		goto out;
	}
	if (r != MAILSMTP_NO_ERROR) {
		fail(error, &s, "DATA", r);
		goto out;
	}
	if (step)
		step(SMTP_STEP_ACCEPTED, data);
	mailsmtp_quit(s.smtp);
	ok = true;
out:
	if (!ok) {
		/* Not sent: what was accepted is to be tried again. */
		for (size_t i = 0; i < n; i++) {
			if (rcpts[i].state == SMTP_RCPT_ACCEPTED)
				rcpts[i].state = SMTP_RCPT_DEFERRED;
		}
	}
	if (s.smtp)
		mailsmtp_free(s.smtp);
	return ok;
}

void smtp_rcpts_clear(struct smtp_rcpt *rcpts, size_t n)
{
	for (size_t i = 0; i < n; i++)
		g_clear_pointer(&rcpts[i].reply, g_free);
}
