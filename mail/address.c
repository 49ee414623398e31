/*
 * Mail addresses: parsing and normalization through GMime.
 */
#define G_LOG_DOMAIN "mail"

#include "autoconfig.h"

#include <string.h>

#include "mail/address.h"
#include "mail/mail.h"
#include "mail/mime-private.h"

G_DEFINE_QUARK(zeroday-mail-error-quark, mail_error)

static char *refuse(GError **error, const char *text, const char *why)
{
	g_autofree char *shown = g_strescape(text, NULL);

	g_set_error(error, MAIL_ERROR, MAIL_ERROR_INVALID, "refused address '%s': %s",
		    shown, why);
	return NULL;
}

char *address_normalize(const char *text, GError **error)
{
	g_autoptr(InternetAddress) ia = NULL;
	const char *why;

	mail_global_init();
	if (mime_has_control(text))
		return refuse(error, text, "control character");
	if (strlen(text) > 512)
		return refuse(error, text, "longer than 512 bytes");

	ia = mime_mailbox_parse(text, &why);
	if (!ia)
		return refuse(error, text, why);
	if (!mime_mailbox_addr_ok(INTERNET_ADDRESS_MAILBOX(ia)))
		return refuse(error, text, "not of the form user@domain.tld");
	return internet_address_to_string(ia, NULL, FALSE);
}

char *address_format(const char *name, const char *addr, GError **error)
{
	g_autofree char *bare = address_normalize(addr, error);
	g_autoptr(InternetAddress) ia = NULL;

	if (!bare)
		return NULL;
	if (strchr(bare, '<'))
		return refuse(error, addr, "not a bare address");
	if (!name || !*name)
		return g_steal_pointer(&bare);
	if (mime_has_control(name))
		return refuse(error, name, "control character");
	ia = internet_address_mailbox_new(name, bare);
	return internet_address_to_string(ia, NULL, FALSE);
}

char *address_key(const char *normalized)
{
	const char *open = strrchr(normalized, '<');
	const char *start = open ? open + 1 : normalized;
	const char *end = open ? strchr(start, '>') : NULL;

	return g_ascii_strdown(start, end ? end - start : -1);
}
