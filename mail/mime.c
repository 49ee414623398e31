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

/*
 * The longest encoded-word read, in bytes. RFC 2047 says 75, mailers
 * write longer; a bound keeps a header full of "=?" from costing its
 * length squared.
 */
#define ENCODED_WORD_MAX 2048

/* One RFC 2047 encoded-word, "=?charset?B?text?=", in a raw header value. */
struct encoded_word {
	const char *end;     /* just after its "?=" */
	const char *charset; /* without its "*language" */
	gsize charset_len;
	char encoding;       /* 'B' or 'Q', upper case */
	const char *text;
	gsize text_len;
};

/* Whether an encoded-word starts at @p; fills @w. */
static bool encoded_word_at(const char *p, struct encoded_word *w)
{
	const char *q, *close, *star;

	if (p[0] != '=' || p[1] != '?')
		return false;
	for (q = p + 2; *q && *q != '?'; q++) {
		if ((unsigned char)*q <= ' ' || *q == 0x7f || (gsize)(q - p) >= ENCODED_WORD_MAX)
			return false;
	}
	if (*q != '?' || q == p + 2 || !q[1] || !strchr("BbQq", q[1]) || q[2] != '?')
		return false;
	w->charset = p + 2;
	star = memchr(w->charset, '*', (gsize)(q - w->charset));
	w->charset_len = (gsize)((star ? star : q) - w->charset);
	w->encoding = g_ascii_toupper(q[1]);
	w->text = q + 3;
	for (close = w->text; *close && !(close[0] == '?' && close[1] == '='); close++) {
		if ((unsigned char)*close <= ' ' || *close == 0x7f ||
		    (gsize)(close - p) >= ENCODED_WORD_MAX)
			return false;
	}
	if (!*close || w->charset_len == 0)
		return false;
	w->text_len = (gsize)(close - w->text);
	w->end = close + 2;
	return true;
}

/* Appends the bytes @w encodes to @out, decoding it alone (its own base64 padding). */
static void encoded_word_bytes(const struct encoded_word *w, GByteArray *out)
{
	if (w->encoding == 'B') {
		g_autofree guchar *buf = g_malloc(w->text_len * 3 / 4 + 3);
		gint state = 0;
		guint save = 0;
		gsize n = g_base64_decode_step(w->text, w->text_len, buf, &state, &save);

		g_byte_array_append(out, buf, (guint)n);
		return;
	}
	for (gsize i = 0; i < w->text_len; i++) {
		const char *c = w->text + i;
		guint8 byte = (guint8)*c;

		if (*c == '_') {
			byte = ' ';
		} else if (*c == '=' && i + 2 < w->text_len && g_ascii_isxdigit(c[1]) &&
			   g_ascii_isxdigit(c[2])) {
			byte = (guint8)(g_ascii_xdigit_value(c[1]) * 16 + g_ascii_xdigit_value(c[2]));
			i += 2;
		}
		g_byte_array_append(out, &byte, 1);
	}
}

static bool same_charset(const struct encoded_word *a, const struct encoded_word *b)
{
	return a->charset_len == b->charset_len &&
	       g_ascii_strncasecmp(a->charset, b->charset, a->charset_len) == 0;
}

char *mime_join_encoded_words(const char *raw)
{
	g_autoptr(GString) out = NULL;
	const char *copied = raw;
	const char *p = raw;

	while (*p) {
		g_autoptr(GByteArray) bytes = NULL;
		g_autofree char *base64 = NULL;
		struct encoded_word first, next;
		const char *run_end;
		guint words = 1;

		if (!encoded_word_at(p, &first)) {
			p++;
			continue;
		}
		bytes = g_byte_array_new();
		encoded_word_bytes(&first, bytes);
		for (run_end = first.end;; run_end = next.end, words++) {
			const char *q = run_end + strspn(run_end, " \t\r\n");

			if (!encoded_word_at(q, &next) || !same_charset(&first, &next))
				break;
			encoded_word_bytes(&next, bytes);
		}
		if (words > 1) {
			if (!out)
				out = g_string_new(NULL);
			g_string_append_len(out, copied, (gssize)(p - copied));
			base64 = g_base64_encode(bytes->data, bytes->len);
			g_string_append_printf(out, "=?%.*s?B?%s?=", (int)first.charset_len,
					       first.charset, base64);
			copied = run_end;
		}
		p = run_end;
	}
	if (!out)
		return NULL;
	g_string_append(out, copied);
	return g_string_free(g_steal_pointer(&out), FALSE);
}

/* The raw value of @object's field @name joined by mime_join_encoded_words(), or NULL. */
static char *joined_field(GMimeObject *object, const char *name)
{
	GMimeHeaderList *list = g_mime_object_get_header_list(object);
	GMimeHeader *header = list ? g_mime_header_list_get_header(list, name) : NULL;
	const char *raw = header ? g_mime_header_get_raw_value(header) : NULL;

	return raw ? mime_join_encoded_words(raw) : NULL;
}

char *mime_header_text(GMimeObject *object, const char *name)
{
	g_autofree char *joined = joined_field(object, name);
	g_autofree char *unfolded = NULL;

	if (!joined)
		return NULL;
	unfolded = g_mime_utils_header_unfold(joined);
	return g_mime_utils_header_decode_text(NULL, unfolded);
}

InternetAddressList *mime_header_addresses(GMimeObject *object, const char *name)
{
	g_autofree char *joined = joined_field(object, name);

	return joined ? internet_address_list_parse(NULL, joined) : NULL;
}

InternetAddress *mime_mailbox_parse(const char *text, const char **why)
{
	/* An in-body From: is read as the mail's own is. */
	g_autofree char *joined = mime_join_encoded_words(text);
	InternetAddressList *list = internet_address_list_parse(NULL, joined ? joined : text);
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
