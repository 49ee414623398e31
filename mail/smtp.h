/*
 * Sending mail over SMTP (libetpan), never in plain text: implicit TLS
 * (smtps) or STARTTLS that is required, the server's certificate chain
 * verified and its host name checked (GnuTLS; libetpan checks neither)
 * before anything but EHLO is said, AUTH only over that TLS, a response
 * injected before the TLS handshake refused, and a timeout on every step.
 *
 * One message per smtp_send(): a reply code per recipient, so that a 5xx
 * for one does not keep the others from their copy.
 */
#ifndef ZERODAY_SMTP_H
#define ZERODAY_SMTP_H

#include <stdbool.h>
#include <stddef.h>
#include <glib.h>

enum smtp_tls {
	SMTP_STARTTLS,     /* smtp://: plain connect, then STARTTLS, required */
	SMTP_IMPLICIT_TLS, /* smtps://: TLS from the first byte */
};

struct smtp_server {
	const char *host;     /* a DNS name or an IP address literal */
	unsigned port;
	enum smtp_tls tls;
	const char *ca_file;  /* PEM certificates to trust; NULL: the system's */
	const char *user;     /* AUTH PLAIN as @user with @password; NULL: no AUTH */
	const char *password;
	unsigned timeout;     /* seconds, for the connect and for each reply */
};

/* What the server said to one recipient. */
enum smtp_rcpt_state {
	SMTP_RCPT_ACCEPTED,
	SMTP_RCPT_DEFERRED, /* 4xx, or the message was not accepted: try again */
	SMTP_RCPT_REFUSED,  /* 5xx: for good */
};

struct smtp_rcpt {
	const char *address;        /* addr-spec, set by the caller */
	enum smtp_rcpt_state state; /* set by smtp_send() */
	int code;                   /* the reply code; 0 when none came */
	char *reply;                /* the server's words (caller frees), or NULL */
};

/* The steps a caller may want to see, e.g. to test a crash at each. */
enum smtp_step {
	SMTP_STEP_CONNECT,  /* about to connect */
	SMTP_STEP_MAIL,     /* MAIL FROM accepted */
	SMTP_STEP_ACCEPTED, /* the message accepted after DATA */
};

typedef void (*smtp_step_fn)(enum smtp_step step, void *data);

/*
 * Sends @message (RFC 5322, lines ending in "\n" or "\r\n") from @from to
 * the @n recipients of @rcpts, over one connection to @server, and sets
 * each recipient's state. Returns true when the transaction ran to its
 * end: the message accepted for some recipients, or refused (a 5xx to
 * RCPT, or to DATA for all), or deferred (a 4xx to RCPT). Returns false
 * with @error when the connection, TLS, AUTH, MAIL or DATA failed
 * otherwise, and then every recipient not refused is SMTP_RCPT_DEFERRED:
 * MAIL_ERROR_PERMANENT for a 5xx (to MAIL FROM), else
 * MAIL_ERROR_TEMPORARY (a 4xx, a dropped or silent connection, TLS or
 * certificate trouble). @step, when not NULL, is called at each step
 * with @data.
 */
bool smtp_send(const struct smtp_server *server, const char *from, struct smtp_rcpt *rcpts,
	       size_t n, const char *message, size_t length, smtp_step_fn step, void *data,
	       GError **error);

/* Frees what smtp_send() set in @rcpts. */
void smtp_rcpts_clear(struct smtp_rcpt *rcpts, size_t n);

#endif
