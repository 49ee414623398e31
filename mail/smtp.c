/*
 * SMTP over TLS with libetpan: see smtp.h.
 *
 * libetpan does the protocol and the TLS record layer; the rest is ours
 * (mail/tls.c, shared with the IMAP source): the TCP connect (with its
 * timeout), the upgrade after STARTTLS (so that bytes the server sent
 * before the handshake are seen and refused), and the check of the
 * server's certificate chain and name with GnuTLS, done before the first
 * word after the handshake.
 */
#define G_LOG_DOMAIN "mail"

#include "autoconfig.h"

#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include <libetpan/mailsmtp.h>
#include <libetpan/mailstream.h>

#include "mail/mail.h"
#include "mail/smtp.h"
#include "mail/tls.h"

/* Server words kept in an error or a recipient's state, at most. */

struct session {
	const struct smtp_server *server;
	struct tls_peer peer;
	mailsmtp *smtp;
};

/* The server's last words, for errors and logs (caller frees). */
static char *reply_text(const mailsmtp *smtp)
{
	return tls_server_words(smtp ? smtp->response : NULL);
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

/*
 * STARTTLS, required: offered, answered 220 and nothing after it, then
 * the handshake on the same socket, checked (tls_starttls()).
 */
static bool starttls(struct session *s, GError **error)
{
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
	return tls_starttls(&s->peer, s->smtp->stream, error);
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
	fd = tls_tcp_connect(&s->peer, error);
	if (fd < 0)
		return false;
	if (srv->tls == SMTP_IMPLICIT_TLS) {
		stream = tls_open(&s->peer, fd, error);
		if (!stream)
			return false;
	} else {
		stream = mailstream_socket_open_timeout(fd, srv->timeout);
		if (!stream) {
			close(fd);
			return fail_with(error, s, "out of memory");
		}
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
	struct session s = {
		.server = server,
		.peer = { .host = server->host, .port = server->port, .ca_file = server->ca_file,
			  .timeout = server->timeout },
	};
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
