/*
 * mail/: mail as data. No database, no policy.
 */
#ifndef ZERODAY_MAIL_H
#define ZERODAY_MAIL_H

#include <glib.h>

#define MAIL_ERROR (mail_error_quark())

/* The failures a caller acts on; everything else is MAIL_ERROR_FAILED. */
enum mail_error {
	MAIL_ERROR_FAILED,
	MAIL_ERROR_INVALID,   /* malformed or hostile mail data, refused */
	MAIL_ERROR_TEMPORARY, /* a server or the network failed: try again later */
	MAIL_ERROR_PERMANENT, /* a server refused for good (a 5xx) */
};

GQuark mail_error_quark(void);

/* Initialises GMime once per process; safe to call more than once. */
void mail_global_init(void);

#endif
