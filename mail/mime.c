/*
 * GMime's owner in mail/: its initialisation, and the helpers the MIME
 * files share. See mime-private.h.
 */
#define G_LOG_DOMAIN "mail"

#include "autoconfig.h"

#include <string.h>

#include "mail/mime-private.h"

void mail_global_init(void)
{
	static gsize once;

	if (g_once_init_enter(&once)) {
		g_mime_init();
		g_once_init_leave(&once, 1);
	}
}

bool mime_has_control(const char *s)
{
	for (const char *p = s; *p; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return true;
	}
	return false;
}

bool mime_mailbox_addr_ok(InternetAddressMailbox *mailbox)
{
	const char *addr = internet_address_mailbox_get_addr(mailbox);
	const char *at = addr ? strrchr(addr, '@') : NULL;

	return at && at != addr && at[1] != '\0' && addr[0] != '-' && strchr(at + 1, '.') &&
	       !mime_has_control(addr) && strlen(addr) <= 512;
}

InternetAddress *mime_mailbox_parse(const char *text, const char **why)
{
	InternetAddressList *list = internet_address_list_parse(NULL, text);
	InternetAddress *ia = NULL;
	const char *reason = NULL;

	if (!list || internet_address_list_length(list) != 1)
		reason = "not exactly one address";
	else if (!INTERNET_ADDRESS_IS_MAILBOX(ia = internet_address_list_get_address(list, 0)))
		reason = "groups are not accepted";
	else
		g_object_ref(ia);
	if (list)
		g_object_unref(list);
	if (why)
		*why = reason;
	return reason ? NULL : ia;
}

GMimeMessage *mime_message_parse(GByteArray *bytes, GMimeParserOptions *options)
{
	g_autoptr(GMimeStream) stream = g_mime_stream_mem_new_with_byte_array(bytes);
	g_autoptr(GMimeParser) parser = g_mime_parser_new_with_stream(stream);

	return g_mime_parser_construct_message(parser, options);
}

GByteArray *mime_part_decoded(GMimePart *part)
{
	GMimeDataWrapper *content = g_mime_part_get_content(part);
	g_autoptr(GMimeStream) stream = NULL;

	if (!content)
		return NULL;
	stream = g_mime_stream_mem_new();
	g_mime_data_wrapper_write_to_stream(content, stream);
	/* The array outlives the stream: it is the caller's now. */
	g_mime_stream_mem_set_owner(GMIME_STREAM_MEM(stream), FALSE);
	return g_mime_stream_mem_get_byte_array(GMIME_STREAM_MEM(stream));
}

static void add_leaf(GMimeObject *parent, GMimeObject *object, gpointer data)
{
	GPtrArray *leaves = data;
	GByteArray *bytes;

	(void)parent;
	if (!GMIME_IS_PART(object))
		return;
	bytes = mime_part_decoded(GMIME_PART(object));
	g_ptr_array_add(leaves, bytes ? g_byte_array_free_to_bytes(bytes) : g_bytes_new(NULL, 0));
}

GPtrArray *mime_read_back(const char *data, gsize len, char **message_id)
{
	GByteArray *bytes = g_byte_array_new();
	g_autoptr(GMimeMessage) message = NULL;
	GPtrArray *leaves;

	mail_global_init();
	g_byte_array_append(bytes, (const guint8 *)data, (guint)len);
	message = mime_message_parse(bytes, NULL);
	*message_id = NULL;
	if (!message)
		return NULL;
	*message_id = g_strdup(g_mime_message_get_message_id(message));
	leaves = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
	g_mime_message_foreach(message, add_leaf, leaves);
	return leaves;
}
