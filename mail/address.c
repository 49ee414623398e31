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

/* @text parsed as one mailbox, or NULL. */
static InternetAddressMailbox *one_mailbox(const char *text, InternetAddress **owner)
{
	mail_global_init();
	*owner = text ? mime_mailbox_parse(text, NULL) : NULL;
	return *owner ? INTERNET_ADDRESS_MAILBOX(*owner) : NULL;
}

char *address_key(const char *normalized)
{
	g_autoptr(InternetAddress) ia = NULL;
	InternetAddressMailbox *mb = one_mailbox(normalized, &ia);
	g_autofree char *text = NULL;

	if (mb && internet_address_mailbox_get_addr(mb))
		return g_ascii_strdown(internet_address_mailbox_get_addr(mb), -1);
	/* Not one mailbox: no part of it stands for the whole. */
	text = g_strstrip(g_strdup(normalized ? normalized : ""));
	return g_ascii_strdown(text, -1);
}

char *address_spec(const char *normalized)
{
	g_autoptr(InternetAddress) ia = NULL;
	InternetAddressMailbox *mb = one_mailbox(normalized, &ia);
	const char *addr = mb ? internet_address_mailbox_get_addr(mb) : NULL;

	return addr && *addr ? g_strdup(addr) : NULL;
}

bool address_is_plain(const char *spec)
{
	const char *at = spec ? strrchr(spec, '@') : NULL;

	if (!at || at == spec || !at[1])
		return false;
	for (const char *p = spec; p < at; p++) {
		if (strchr("\"\\<>@ \t", *p) || (unsigned char)*p < 0x20 || *p == 0x7f)
			return false;
	}
	return true;
}

void address_reply_fields_release(struct address_reply_fields *f)
{
	g_clear_pointer(&f->reply_to, g_strfreev);
	g_clear_pointer(&f->list_post, g_free);
	g_clear_pointer(&f->precedence, g_free);
}

/* The address of the first "<mailto:...>" of List-Post @value, address_key() form, or NULL. */
static char *list_post_address(const char *value)
{
	g_autofree char *lower = value ? g_ascii_strdown(value, -1) : NULL;
	const char *start = lower ? strstr(lower, "<mailto:") : NULL;
	g_autofree char *addr = NULL;
	g_autofree char *normal = NULL;

	if (!start)
		return NULL;
	start += strlen("<mailto:");
	addr = g_strndup(start, strcspn(start, ">?"));
	normal = address_normalize(addr, NULL);
	return normal ? address_key(normal) : NULL;
}

bool address_reply_fields_read(struct address_reply_fields *out, const char *raw, gsize len,
			       GError **error)
{
	g_autoptr(GByteArray) bytes = g_byte_array_new();
	g_autoptr(GMimeMessage) message = NULL;
	g_autoptr(GStrvBuilder) b = g_strv_builder_new();
	const char *end;
	InternetAddressList *reply_to;
	const char *precedence;
	int n;
	bool all = true;

	memset(out, 0, sizeof(*out));
	mail_global_init();
	/* The header only: the body may be megabytes, and nothing in it counts here. */
	for (end = raw; end && end < raw + len; end++) {
		end = memchr(end, '\n', len - (gsize)(end - raw));
		if (!end || end + 1 >= raw + len || end[1] == '\n' ||
		    (end[1] == '\r' && end + 2 < raw + len && end[2] == '\n'))
			break;
	}
	g_byte_array_append(bytes, (const guint8 *)raw, end ? (guint)(end - raw + 1) : (guint)len);
	g_byte_array_append(bytes, (const guint8 *)"\n", 1);
	message = mime_message_parse(g_steal_pointer(&bytes), NULL);
	if (!message) {
		out->reply_to = g_strv_builder_end(b);
		g_set_error(error, MAIL_ERROR, MAIL_ERROR_INVALID, "no header to read");
		return false;
	}
	reply_to = g_mime_message_get_reply_to(message);
	n = reply_to ? internet_address_list_length(reply_to) : 0;
	for (int i = 0; i < n; i++) {
		InternetAddress *ia = internet_address_list_get_address(reply_to, i);

		if (!INTERNET_ADDRESS_IS_MAILBOX(ia) ||
		    !mime_mailbox_addr_ok(INTERNET_ADDRESS_MAILBOX(ia))) {
			all = false;
			continue;
		}
		{
			g_autofree char *text = internet_address_to_string(ia, NULL, FALSE);
			g_autofree char *normal = address_normalize(text, NULL);

			if (normal)
				g_strv_builder_add(b, normal);
			else
				all = false;
		}
	}
	/* A Reply-To with a part that does not read names nobody for sure. */
	if (!all) {
		g_clear_pointer(&b, g_strv_builder_unref);
		b = g_strv_builder_new();
	}
	out->reply_to = g_strv_builder_end(b);
	out->list_post = list_post_address(g_mime_object_get_header(GMIME_OBJECT(message),
								     "List-Post"));
	precedence = g_mime_object_get_header(GMIME_OBJECT(message), "Precedence");
	if (precedence) {
		g_autofree char *v = g_strstrip(g_strdup(precedence));

		v[strcspn(v, " \t;(")] = '\0';
		if (*v)
			out->precedence = g_ascii_strdown(v, -1);
	}
	return true;
}
