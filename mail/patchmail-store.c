/*
 * A parsed mail as bytes for the store, and back: see patchmail.h.
 *
 * The bytes are a GVariant tuple: a version byte, then one member per
 * field of struct patchmail, in the order of fields[] below. The first
 * member of a tuple is its first byte whatever follows, so the version
 * is read before the layout is trusted. Strings
 * go as byte strings ("ay"), not as GVariant strings: a diff is kept
 * exactly as sent, which need not be UTF-8. A change to fields[] (or to
 * what a field means) bumps PACK_VERSION; bytes of another version are
 * refused, and the caller parses the raw text again.
 */
#define G_LOG_DOMAIN "mail"

#include "autoconfig.h"

#include <stddef.h>
#include <string.h>

#include "mail/mail.h"
#include "mail/patchmail.h"

#define PACK_VERSION 3

enum field_type {
	FIELD_STR,       /* char *, never NULL */
	FIELD_MSTR,      /* char *, or NULL */
	FIELD_STATIC,    /* const char *, a static string or NULL (interned when read back) */
	FIELD_STRV,      /* GPtrArray * of char *, never NULL when read back */
	FIELD_INT64,     /* gint64 */
	FIELD_UINT,      /* guint */
	FIELD_BOOL,      /* bool */
	FIELD_KIND,      /* enum patchmail_kind */
	/*
	 * char *, or NULL, most often a part of the body (a diff and its
	 * commit message in the body): then kept as where it is in the body,
	 * which comes before it in fields[], not as a second copy.
	 */
	FIELD_SLICE,
};

/* Every field of struct patchmail, in the order of the tuple. */
static const struct field {
	enum field_type type;
	size_t offset;
} fields[] = {
#define F(type, member) { FIELD_##type, offsetof(struct patchmail, member) }
	F(STR, message_id),
	F(MSTR, in_reply_to),
	F(STRV, references),
	F(MSTR, from),
	F(INT64, date),
	F(STR, subject),
	F(MSTR, list_id),
	F(STRV, to),
	F(STRV, cc),
	F(STR, tags.title),
	F(STRV, tags.prefixes),
	F(UINT, tags.version),
	F(BOOL, tags.versioned),
	F(UINT, tags.n),
	F(UINT, tags.total),
	F(BOOL, tags.counted),
	F(BOOL, tags.reply),
	F(BOOL, tags.patch),
	F(BOOL, tags.cover),
	F(BOOL, tags.rfc),
	F(BOOL, tags.resend),
	F(KIND, kind),
	F(STATIC, automatic),
	F(BOOL, html_only),
	F(MSTR, html),
	F(STR, body),
	F(SLICE, diff),
	F(BOOL, diff_attached),
	F(SLICE, commit_message),
	F(MSTR, author),
	F(MSTR, body_subject),
	F(INT64, body_date),
	F(MSTR, base_commit),
	F(STRV, prerequisite_patch_ids),
#undef F
};

static const char *const field_types[] = {
	[FIELD_STR] = "ay", [FIELD_MSTR] = "may", [FIELD_STATIC] = "may", [FIELD_STRV] = "aay",
	[FIELD_INT64] = "x", [FIELD_UINT] = "u", [FIELD_BOOL] = "b", [FIELD_KIND] = "y",
	/* Where it is in the body (offset, length), or else the string itself. */
	[FIELD_SLICE] = "(m(tt)may)",
};

/* The tuple's type, made from fields[] (caller frees). */
static GVariantType *pack_type(void)
{
	g_autoptr(GString) s = g_string_new("(y");

	for (gsize i = 0; i < G_N_ELEMENTS(fields); i++)
		g_string_append(s, field_types[fields[i].type]);
	g_string_append_c(s, ')');
	return g_variant_type_new(s->str);
}

static GVariant *maybe_string(const char *s)
{
	return g_variant_new_maybe(G_VARIANT_TYPE_BYTESTRING,
				   s ? g_variant_new_bytestring(s) : NULL);
}

static GVariant *pack_field(const struct patchmail *m, const struct field *f)
{
	const char *at = (const char *)m + f->offset;

	switch (f->type) {
	case FIELD_STR: {
		const char *s = *(char *const *)at;

		return g_variant_new_bytestring(s ? s : "");
	}
	case FIELD_MSTR:
		return maybe_string(*(char *const *)at);
	case FIELD_STATIC:
		return maybe_string(*(const char *const *)at);
	case FIELD_STRV: {
		const GPtrArray *a = *(GPtrArray *const *)at;

		return g_variant_new_bytestring_array(a ? (const char *const *)a->pdata : NULL,
						      a ? (gssize)a->len : 0);
	}
	case FIELD_INT64:
		return g_variant_new_int64(*(const gint64 *)at);
	case FIELD_UINT:
		return g_variant_new_uint32(*(const guint *)at);
	case FIELD_BOOL:
		return g_variant_new_boolean(*(const bool *)at);
	case FIELD_KIND:
		return g_variant_new_byte((guchar)*(const enum patchmail_kind *)at);
	case FIELD_SLICE: {
		const char *s = *(char *const *)at;
		const char *in = s && m->body ? memmem(m->body, strlen(m->body), s, strlen(s)) : NULL;
		GVariant *where = in ? g_variant_new("(tt)", (guint64)(in - m->body),
						     (guint64)strlen(s)) : NULL;
		GVariant *pair[] = {
			g_variant_new_maybe(G_VARIANT_TYPE("(tt)"), where),
			maybe_string(in ? NULL : s),
		};

		return g_variant_new_tuple(pair, G_N_ELEMENTS(pair));
	}
	}
	g_assert_not_reached();
}

GBytes *patchmail_pack(const struct patchmail *m)
{
	GVariant *members[1 + G_N_ELEMENTS(fields)];
	g_autoptr(GVariant) tuple = NULL;

	members[0] = g_variant_new_byte(PACK_VERSION);
	for (gsize i = 0; i < G_N_ELEMENTS(fields); i++)
		members[1 + i] = pack_field(m, &fields[i]);
	tuple = g_variant_ref_sink(g_variant_new_tuple(members, G_N_ELEMENTS(members)));
	return g_variant_get_data_as_bytes(tuple);
}

/* A byte string's copy; "" when it holds none (not NUL-terminated). */
static char *string_of(GVariant *v)
{
	return g_strdup(g_variant_get_bytestring(v));
}

static void unpack_field(struct patchmail *m, const struct field *f, GVariant *v)
{
	char *at = (char *)m + f->offset;

	switch (f->type) {
	case FIELD_STR:
		*(char **)at = string_of(v);
		break;
	case FIELD_MSTR:
	case FIELD_STATIC: {
		g_autoptr(GVariant) s = g_variant_get_maybe(v);

		if (!s)
			break;
		if (f->type == FIELD_MSTR)
			*(char **)at = string_of(s);
		else
			/* A few fixed reasons: interned, they are static as the parser's. */
			*(const char **)at = g_intern_string(g_variant_get_bytestring(s));
		break;
	}
	case FIELD_STRV: {
		gsize n = g_variant_n_children(v);
		GPtrArray *a = g_ptr_array_new_full((guint)n, g_free);

		for (gsize i = 0; i < n; i++) {
			g_autoptr(GVariant) s = g_variant_get_child_value(v, i);

			g_ptr_array_add(a, string_of(s));
		}
		*(GPtrArray **)at = a;
		break;
	}
	case FIELD_INT64:
		*(gint64 *)at = g_variant_get_int64(v);
		break;
	case FIELD_UINT:
		*(guint *)at = g_variant_get_uint32(v);
		break;
	case FIELD_BOOL:
		*(bool *)at = g_variant_get_boolean(v);
		break;
	case FIELD_KIND:
		*(enum patchmail_kind *)at = (enum patchmail_kind)g_variant_get_byte(v);
		break;
	case FIELD_SLICE: {
		g_autoptr(GVariant) where = g_variant_get_child_value(v, 0);
		g_autoptr(GVariant) inner = g_variant_get_maybe(where);
		g_autoptr(GVariant) own = g_variant_get_child_value(v, 1);
		g_autoptr(GVariant) s = g_variant_get_maybe(own);
		guint64 offset = 0, len = 0;
		gsize body = m->body ? strlen(m->body) : 0; /* read already: it comes first */

		if (inner) {
			g_variant_get(inner, "(tt)", &offset, &len);
			/* Bytes that do not read leave it out, never reading past the body. */
			if (offset <= body && len <= body - offset)
				*(char **)at = g_strndup(m->body + offset, len);
		} else if (s) {
			*(char **)at = string_of(s);
		}
		break;
	}
	}
}

struct patchmail *patchmail_unpack(GBytes *bytes, GError **error)
{
	g_autoptr(GVariantType) type = pack_type();
	g_autoptr(GVariant) tuple = NULL;
	gsize len = 0;
	const guint8 *data = bytes ? g_bytes_get_data(bytes, &len) : NULL;
	struct patchmail *m;

	if (len < 1 || data[0] != PACK_VERSION) {
		g_set_error(error, MAIL_ERROR, MAIL_ERROR_INVALID,
			    "a stored parse of another version (%d, not %d)", len ? data[0] : -1,
			    PACK_VERSION);
		return NULL;
	}
	/*
	 * Untrusted: GVariant reads bytes of the wrong shape as defaults,
	 * never past their end (and copies them when they are not aligned).
	 */
	tuple = g_variant_ref_sink(g_variant_new_from_bytes(type, bytes, FALSE));
	m = g_new0(struct patchmail, 1);
	for (gsize i = 0; i < G_N_ELEMENTS(fields); i++) {
		g_autoptr(GVariant) v = g_variant_get_child_value(tuple, 1 + i);

		unpack_field(m, &fields[i], v);
	}
	if ((gsize)m->kind > PATCHMAIL_REPLY || !*m->message_id) {
		patchmail_free(m);
		g_set_error_literal(error, MAIL_ERROR, MAIL_ERROR_INVALID,
				    "a stored parse that does not read");
		return NULL;
	}
	return m;
}
