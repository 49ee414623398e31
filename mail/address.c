/*
 * Mail addresses: parsing and normalization through GMime.
 */
#define G_LOG_DOMAIN "mail"

#include "autoconfig.h"

#include <string.h>

#include <gmime/gmime.h>

#include "mail/address.h"
#include "mail/mail.h"

G_DEFINE_QUARK(zeroday-mail-error-quark, mail_error)

void mail_global_init(void)
{
	static gsize once;

	if (g_once_init_enter(&once)) {
		g_mime_init();
		g_once_init_leave(&once, 1);
	}
}

static char *refuse(GError **error, const char *text, const char *why)
{
	g_autofree char *shown = g_strescape(text, NULL);

	g_set_error(error, MAIL_ERROR, MAIL_ERROR_INVALID, "refused address '%s': %s",
		    shown, why);
	return NULL;
}

char *address_normalize(const char *text, GError **error)
{
	InternetAddressList *list;
	InternetAddress *ia;
	const char *addr;
	const char *at;
	char *out;

	mail_global_init();
	for (const char *p = text; *p; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return refuse(error, text, "control character");
	}
	if (strlen(text) > 512)
		return refuse(error, text, "longer than 512 bytes");

	list = internet_address_list_parse(NULL, text);
	if (!list || internet_address_list_length(list) != 1) {
		if (list)
			g_object_unref(list);
		return refuse(error, text, "not exactly one address");
	}
	ia = internet_address_list_get_address(list, 0);
	if (!INTERNET_ADDRESS_IS_MAILBOX(ia)) {
		g_object_unref(list);
		return refuse(error, text, "groups are not accepted");
	}
	addr = internet_address_mailbox_get_addr(INTERNET_ADDRESS_MAILBOX(ia));
	at = addr ? strrchr(addr, '@') : NULL;
	if (!at || at == addr || at[1] == '\0' || addr[0] == '-' || strchr(at + 1, '.') == NULL) {
		g_object_unref(list);
		return refuse(error, text, "not of the form user@domain.tld");
	}
	out = internet_address_to_string(ia, NULL, FALSE);
	g_object_unref(list);
	return out;
}

char *address_format(const char *name, const char *addr, GError **error)
{
	g_autofree char *bare = address_normalize(addr, error);
	InternetAddress *ia;
	char *out;

	if (!bare)
		return NULL;
	if (strchr(bare, '<'))
		return refuse(error, addr, "not a bare address");
	if (!name || !*name)
		return g_steal_pointer(&bare);
	for (const char *p = name; *p; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return refuse(error, name, "control character");
	}
	ia = internet_address_mailbox_new(name, bare);
	out = internet_address_to_string(ia, NULL, FALSE);
	g_object_unref(ia);
	return out;
}

char *address_key(const char *normalized)
{
	const char *open = strrchr(normalized, '<');
	const char *start = open ? open + 1 : normalized;
	const char *end = open ? strchr(start, '>') : NULL;

	return g_ascii_strdown(start, end ? end - start : -1);
}
