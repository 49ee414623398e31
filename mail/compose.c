/*
 * Composing replies with GMime: see compose.h.
 */
#define G_LOG_DOMAIN "mail"

#include "autoconfig.h"

#include <string.h>
#include <sys/random.h>

#include "mail/compose.h"
#include "mail/mail.h"
#include "mail/mime-private.h"

/* RFC 5322's limit on a line, without its CRLF. */
#define LINE_MAX_OCTETS 998

static void attachment_free(struct reply_attachment *a)
{
	g_free(a->filename);
	g_free(a->text);
	if (a->data)
		g_bytes_unref(a->data);
	g_free(a->content_type);
	g_free(a);
}

void reply_init(struct reply *r)
{
	memset(r, 0, sizeof(*r));
	r->to = g_ptr_array_new_with_free_func(g_free);
	r->cc = g_ptr_array_new_with_free_func(g_free);
	r->references = g_ptr_array_new_with_free_func(g_free);
	r->attachments = g_ptr_array_new_with_free_func((GDestroyNotify)attachment_free);
}

void reply_release(struct reply *r)
{
	g_free(r->from);
	g_free(r->subject);
	g_free(r->message_id);
	g_free(r->in_reply_to);
	g_free(r->body);
	if (r->to)
		g_ptr_array_unref(r->to);
	if (r->cc)
		g_ptr_array_unref(r->cc);
	if (r->references)
		g_ptr_array_unref(r->references);
	if (r->attachments)
		g_ptr_array_unref(r->attachments);
	memset(r, 0, sizeof(*r));
}

void reply_thread(struct reply *r, const char *message_id, const char *in_reply_to,
		  char *const *references, gsize n)
{
	g_free(r->in_reply_to);
	r->in_reply_to = g_strdup(message_id);
	for (gsize i = 0; i < n; i++)
		g_ptr_array_add(r->references, g_strdup(references[i]));
	if (n == 0 && in_reply_to)
		g_ptr_array_add(r->references, g_strdup(in_reply_to));
	g_ptr_array_add(r->references, g_strdup(message_id));
}

void reply_attach(struct reply *r, const char *filename, const char *text)
{
	struct reply_attachment *a = g_new0(struct reply_attachment, 1);

	a->filename = g_strdup(filename);
	a->text = g_strdup(text);
	g_ptr_array_add(r->attachments, a);
}

void reply_attach_bytes(struct reply *r, const char *filename, const char *content_type,
			GBytes *data)
{
	struct reply_attachment *a = g_new0(struct reply_attachment, 1);

	a->filename = g_strdup(filename);
	a->content_type = g_strdup(content_type);
	a->data = g_bytes_ref(data);
	g_ptr_array_add(r->attachments, a);
}

bool reply_fit(struct reply *r, gsize max, GError **error)
{
	for (;;) {
		g_autofree char *raw = compose_message(r, error);
		const struct reply_attachment *largest = NULL;
		gsize largest_size = 0;
		guint at = 0;
		char *body;

		if (!raw)
			return false;
		if (strlen(raw) <= max || !r->attachments || !r->attachments->len)
			return true;
		for (guint i = 0; i < r->attachments->len; i++) {
			const struct reply_attachment *a = r->attachments->pdata[i];
			gsize size = a->data ? g_bytes_get_size(a->data) : strlen(a->text);

			if (!largest || size > largest_size) {
				largest = a;
				largest_size = size;
				at = i;
			}
		}
		body = g_strdup_printf("%s%s[left out of this mail to keep it under %" G_GSIZE_FORMAT
				       " bytes: %s, %" G_GSIZE_FORMAT " bytes]\n",
				       r->body ? r->body : "",
				       r->body && *r->body && !g_str_has_suffix(r->body, "\n") ? "\n"
												 : "",
				       max, largest->filename, largest_size);
		g_free(r->body);
		r->body = body;
		g_ptr_array_remove_index(r->attachments, at);
	}
}

/* A base64 part of @content_type holding @data. */
static GMimePart *bytes_part(const char *content_type, GBytes *data)
{
	g_auto(GStrv) type = g_strsplit(content_type, "/", 2);
	GMimePart *part = g_mime_part_new_with_type(type[0], type[1] ? type[1] : "octet-stream");
	gsize len;
	const void *bytes = g_bytes_get_data(data, &len);
	GMimeStream *stream = g_mime_stream_mem_new_with_buffer(bytes, len);
	GMimeDataWrapper *content = g_mime_data_wrapper_new_with_stream(stream,
									GMIME_CONTENT_ENCODING_DEFAULT);

	g_mime_part_set_content(part, content);
	g_mime_part_set_content_encoding(part, GMIME_CONTENT_ENCODING_BASE64);
	g_object_unref(content);
	g_object_unref(stream);
	return part;
}

char *compose_message_id(const char *tag, const char *domain)
{
	guint8 random[16];
	GString *id = g_string_new("zeroday-");
	gsize got = 0;

	while (got < sizeof(random)) {
		ssize_t n = getrandom(random + got, sizeof(random) - got, 0);

		/* getrandom() on a kernel that has it fails only when interrupted. */
		if (n > 0)
			got += (gsize)n;
	}
	g_string_append_printf(id, "%s-", tag);
	for (gsize i = 0; i < sizeof(random); i++)
		g_string_append_printf(id, "%02x", random[i]);
	g_string_append_printf(id, "@%s", domain);
	return g_string_free(id, FALSE);
}

static bool refuse(GError **error, const char *what, const char *value)
{
	g_autofree char *shown = g_strescape(value ? value : "(none)", NULL);

	g_set_error(error, MAIL_ERROR, MAIL_ERROR_INVALID, "refused %s '%s'", what, shown);
	return false;
}

/* A Message-ID as we write it: dot-atom-ish text on both sides of one '@'. */
static bool valid_message_id(const char *id)
{
	const char *at = id ? strchr(id, '@') : NULL;

	if (!at || at == id || !at[1] || strchr(at + 1, '@') || strlen(id) > MIME_MESSAGE_ID_MAX)
		return false;
	for (const char *p = id; *p; p++) {
		if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f || strchr("<>()[]\\,;:\"", *p))
			return false;
	}
	return true;
}

/* Adds @text, one address, to @list; false when it is not exactly one mailbox. */
static bool add_address(InternetAddressList *list, const char *text)
{
	g_autoptr(InternetAddress) ia = NULL;

	if (mime_has_control(text) || !(ia = mime_mailbox_parse(text, NULL)) ||
	    !strchr(internet_address_mailbox_get_addr(INTERNET_ADDRESS_MAILBOX(ia)), '@'))
		return false;
	internet_address_list_add(list, ia);
	return true;
}

static bool add_addresses(GMimeMessage *m, GMimeAddressType type, GPtrArray *addresses,
			  GError **error)
{
	InternetAddressList *list = g_mime_message_get_addresses(m, type);

	for (guint i = 0; addresses && i < addresses->len; i++) {
		if (!add_address(list, addresses->pdata[i]))
			return refuse(error, "recipient", addresses->pdata[i]);
	}
	return true;
}

/* @s with every control character (CR and LF included) made a space (caller frees). */
static char *one_line(const char *s)
{
	char *out = g_utf8_make_valid(s ? s : "", -1);

	for (char *p = out; *p; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	}
	return out;
}

/*
 * A text/plain part holding @text as UTF-8: 7bit or 8bit when every line
 * fits, quoted-printable when one does not (a long log line).
 */
static GMimePart *text_part(const char *text)
{
	g_autofree char *valid = g_utf8_make_valid(text, -1);
	GMimePart *part = g_mime_part_new_with_type("text", "plain");
	GMimeStream *stream = g_mime_stream_mem_new_with_buffer(valid, strlen(valid));
	GMimeDataWrapper *content = g_mime_data_wrapper_new_with_stream(stream,
									GMIME_CONTENT_ENCODING_DEFAULT);
	bool ascii = true;
	gsize longest = 0, run = 0;

	for (const char *p = valid; *p; p++) {
		ascii = ascii && (unsigned char)*p < 0x80;
		run = *p == '\n' ? 0 : run + 1;
		longest = MAX(longest, run);
	}
	g_mime_object_set_content_type_parameter(GMIME_OBJECT(part), "charset",
						 ascii ? "us-ascii" : "utf-8");
	g_mime_part_set_content(part, content);
	g_mime_part_set_content_encoding(part, longest > LINE_MAX_OCTETS
					 ? GMIME_CONTENT_ENCODING_QUOTEDPRINTABLE
					 : ascii ? GMIME_CONTENT_ENCODING_7BIT
					 : GMIME_CONTENT_ENCODING_8BIT);
	g_object_unref(content);
	g_object_unref(stream);
	return part;
}

static char *bracketed(const char *id)
{
	return g_strdup_printf("<%s>", id);
}

char *compose_message(const struct reply *r, GError **error)
{
	GMimeMessage *m = NULL;
	GMimeObject *body = NULL;
	GDateTime *date = NULL;
	GMimeFormatOptions *options = NULL;
	g_autofree char *subject = one_line(r->subject);
	char *out = NULL;

	mail_global_init();
	if (!valid_message_id(r->message_id)) {
		refuse(error, "Message-ID", r->message_id);
		goto out;
	}
	if (r->in_reply_to && !valid_message_id(r->in_reply_to)) {
		refuse(error, "In-Reply-To", r->in_reply_to);
		goto out;
	}
	for (guint i = 0; r->references && i < r->references->len; i++) {
		if (!valid_message_id(r->references->pdata[i])) {
			refuse(error, "References", r->references->pdata[i]);
			goto out;
		}
	}
	if ((!r->to || r->to->len == 0) && (!r->cc || r->cc->len == 0)) {
		refuse(error, "reply without recipients", r->subject);
		goto out;
	}
	m = g_mime_message_new(TRUE);
	if (!r->from || !add_address(g_mime_message_get_addresses(m, GMIME_ADDRESS_TYPE_FROM),
				      r->from)) {
		refuse(error, "sender", r->from);
		goto out;
	}
	if (!add_addresses(m, GMIME_ADDRESS_TYPE_TO, r->to, error) ||
	    !add_addresses(m, GMIME_ADDRESS_TYPE_CC, r->cc, error))
		goto out;
	g_mime_message_set_subject(m, subject, "utf-8");
	date = g_date_time_new_from_unix_utc(r->date);
	g_mime_message_set_date(m, date);
	g_mime_message_set_message_id(m, r->message_id);
	if (r->in_reply_to) {
		g_autofree char *v = bracketed(r->in_reply_to);

		g_mime_object_set_header(GMIME_OBJECT(m), "In-Reply-To", v, NULL);
	}
	if (r->references && r->references->len) {
		g_autoptr(GString) refs = g_string_new(NULL);

		for (guint i = 0; i < r->references->len; i++)
			g_string_append_printf(refs, "%s<%s>", i ? " " : "",
					       (const char *)r->references->pdata[i]);
		g_mime_object_set_header(GMIME_OBJECT(m), "References", refs->str, NULL);
	}
	g_mime_object_set_header(GMIME_OBJECT(m), "Auto-Submitted", "auto-generated", NULL);
	if (r->attachments && r->attachments->len) {
		GMimeMultipart *mixed = g_mime_multipart_new_with_subtype("mixed");
		GMimePart *text = text_part(r->body ? r->body : "");
		g_autofree char *sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256,
								      r->message_id, -1);
		g_autofree char *boundary = g_strdup_printf("zeroday-%.24s", sum);

		/* From the Message-ID: the same reply is the same bytes. */
		g_mime_multipart_set_boundary(mixed, boundary);

		g_mime_multipart_add(mixed, GMIME_OBJECT(text));
		g_object_unref(text);
		for (guint i = 0; i < r->attachments->len; i++) {
			const struct reply_attachment *a = r->attachments->pdata[i];
			g_autofree char *name = one_line(a->filename);
			GMimePart *part = a->data ? bytes_part(a->content_type, a->data)
						  : text_part(a->text ? a->text : "");

			g_strdelimit(name, "/\\", '_');
			g_mime_object_set_disposition(GMIME_OBJECT(part), "attachment");
			g_mime_part_set_filename(part, name);
			g_mime_multipart_add(mixed, GMIME_OBJECT(part));
			g_object_unref(part);
		}
		body = GMIME_OBJECT(mixed);
	} else {
		body = GMIME_OBJECT(text_part(r->body ? r->body : ""));
	}
	g_mime_message_set_mime_part(m, body);
	options = g_mime_format_options_new();
	g_mime_format_options_set_newline_format(options, GMIME_NEWLINE_FORMAT_UNIX);
	out = g_mime_object_to_string(GMIME_OBJECT(m), options);
out:
	if (options)
		g_mime_format_options_free(options);
	if (body)
		g_object_unref(body);
	if (date)
		g_date_time_unref(date);
	if (m)
		g_object_unref(m);
	return out;
}
