/*
 * Reading mail: see source.h. The URL parser, the drivers[] table and
 * the calls into it; the backends are imap.c and maildir-source.c.
 */
#define G_LOG_DOMAIN "mail"

#include "autoconfig.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <string.h>

#include "mail/mail.h"
#include "mail/source-private.h"

/* The longest Message-ID kept (RFC 5322's line limit, less "<>" and CRLF). */
#define MESSAGE_ID_MAX 995

static const struct {
	const char *prefix;
	enum source_scheme scheme;
	unsigned port;
	const struct source_driver *driver;
} drivers[] = {
	{ "maildir:", SOURCE_MAILDIR, 0, &maildir_source_driver },
	{ "imap://", SOURCE_IMAP, 143, &imap_source_driver },
	{ "imaps://", SOURCE_IMAPS, 993, &imap_source_driver },
};

static bool invalid(GError **error, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static bool invalid(GError **error, const char *fmt, ...)
{
	va_list ap;
	g_autofree char *what = NULL;

	va_start(ap, fmt);
	what = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_set_error(error, MAIL_ERROR, MAIL_ERROR_INVALID, "source URL: %s", what);
	return false;
}

static bool is_control(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

/*
 * @len bytes at @text, percent-decoded (caller frees), or NULL with
 * @error for a bad escape, an empty result, a control character or a
 * byte beyond ASCII (IMAP names are modified UTF-7, so ASCII).
 */
static char *decode(const char *text, gsize len, const char *what, GError **error)
{
	GString *out = g_string_new(NULL);

	for (gsize i = 0; i < len; i++) {
		unsigned char c = (unsigned char)text[i];

		if (c == '%') {
			if (i + 2 >= len || !g_ascii_isxdigit(text[i + 1]) ||
			    !g_ascii_isxdigit(text[i + 2])) {
				invalid(error, "a bad %%-escape in the %s", what);
				goto fail;
			}
			c = (unsigned char)(g_ascii_xdigit_value(text[i + 1]) * 16 +
					    g_ascii_xdigit_value(text[i + 2]));
			i += 2;
		}
		if (c == 0 || c == '\r' || c == '\n' || is_control(c) || c >= 0x80) {
			invalid(error, "the %s holds a control or non-ASCII byte (0x%02x)", what, c);
			goto fail;
		}
		g_string_append_c(out, (char)c);
	}
	if (out->len == 0) {
		invalid(error, "the %s is empty", what);
		goto fail;
	}
	return g_string_free(out, FALSE);
fail:
	g_string_free(out, TRUE);
	return NULL;
}

/* Checks the host GUri parsed (an IPv6 literal without its brackets) and copies it to @out. */
static bool check_host(const char *host, struct source_url *out, GError **error)
{
	unsigned char buf[sizeof(struct in6_addr)];

	if (!host || !*host)
		return invalid(error, "the host is empty");
	out->host = g_strdup(host);
	if (strchr(host, ':')) {
		if (inet_pton(AF_INET6, host, buf) != 1)
			return invalid(error, "not an IPv6 address: [%s]", host);
		return true;
	}
	for (const char *p = host; *p; p++) {
		if (!g_ascii_isalnum(*p) && *p != '.' && *p != '-')
			return invalid(error, "a bad character in the host name");
	}
	if (host[0] == '-' || host[0] == '.' || strlen(host) > 253)
		return invalid(error, "not a host name: %s", host);
	return true;
}

/*
 * Parses the IMAP URL @url, whose part after "scheme://" is @rest, with
 * GUri (strictly, escapes kept: decode() takes them out), then checks
 * each part as IMAP needs it.
 */
static bool parse_imap(const char *url, const char *rest, struct source_url *out,
		       GError **error)
{
	const char *slash = strchr(rest, '/');
	g_autoptr(GUri) uri = NULL;
	const char *user;
	const char *path;

	if (!slash)
		return invalid(error, "no /FOLDER after the host");
	if (strpbrk(rest, "?#"))
		return invalid(error, "a query or fragment (%%-encode ? and # in the folder)");
	/* GLib's message may quote the user and password: it is not passed on. */
	uri = g_uri_parse(url, G_URI_FLAGS_ENCODED | G_URI_FLAGS_HAS_PASSWORD, NULL);
	if (!uri)
		return invalid(error, "not a valid URL (a bad host, port or %%-escape)");
	user = g_uri_get_user(uri);
	if (!user)
		return invalid(error, "no USER@ before the host");
	if (g_uri_get_password(uri))
		return invalid(error, "a password in the URL (give it in the options instead)");
	if (strchr(user, '@'))
		return invalid(error, "a raw @ in the user (%%-encode it)");
	out->user = decode(user, strlen(user), "user", error);
	if (!out->user || !check_host(g_uri_get_host(uri), out, error))
		return false;
	if (slash[-1] == ':')
		return invalid(error, "the port is empty");
	if (g_uri_get_port(uri) == 0)
		return invalid(error, "a bad port: 0");
	if (g_uri_get_port(uri) > 0)
		out->port = (unsigned)g_uri_get_port(uri);
	/* GUri drops "." and ".." segments: a folder it changed is refused. */
	path = g_uri_get_path(uri);
	if (strcmp(path, slash) != 0)
		return invalid(error, "a . or .. segment in the folder");
	out->folder = decode(path + 1, strlen(path + 1), "folder", error);
	return out->folder != NULL;
}

bool source_url_parse(const char *url, struct source_url *out, GError **error)
{
	struct source_url u = { 0 };
	const char *rest = NULL;

	for (const char *p = url; *p; p++) {
		if (is_control((unsigned char)*p))
			return invalid(error, "a control character in the URL");
	}
	for (size_t i = 0; i < G_N_ELEMENTS(drivers); i++) {
		if (g_ascii_strncasecmp(url, drivers[i].prefix, strlen(drivers[i].prefix)) == 0) {
			rest = url + strlen(drivers[i].prefix);
			u.scheme = drivers[i].scheme;
			u.port = drivers[i].port;
			break;
		}
	}
	if (!rest)
		return invalid(error, "not maildir:/PATH, imap://USER@HOST/FOLDER or "
			       "imaps://USER@HOST/FOLDER");
	if (u.scheme == SOURCE_MAILDIR) {
		if (rest[0] != '/')
			return invalid(error, "the Maildir path is not absolute");
		if (rest[1] == '\0')
			return invalid(error, "the Maildir path is /");
		u.path = g_strdup(rest);
	} else if (!parse_imap(url, rest, &u, error)) {
		source_url_release(&u);
		return false;
	}
	*out = u;
	return true;
}

void source_url_release(struct source_url *u)
{
	g_free(u->user);
	g_free(u->host);
	g_free(u->folder);
	g_free(u->path);
	memset(u, 0, sizeof(*u));
}

/* The URL as source_name() shows it: canonical, with the port, nothing secret. */
static char *url_name(const struct source_url *u)
{
	g_autofree char *user = NULL;
	g_autofree char *folder = NULL;
	bool v6 = u->host && strchr(u->host, ':');

	if (u->scheme == SOURCE_MAILDIR)
		return g_strconcat("maildir:", u->path, NULL);
	user = g_uri_escape_string(u->user, NULL, FALSE);
	folder = g_uri_escape_string(u->folder, "/", FALSE);
	return g_strdup_printf("%s://%s@%s%s%s:%u/%s", u->scheme == SOURCE_IMAP ? "imap" : "imaps",
			       user, v6 ? "[" : "", u->host, v6 ? "]" : "", u->port, folder);
}

void source_entry_free(struct source_entry *e)
{
	if (!e)
		return;
	g_free(e->name);
	g_free(e->message_id);
	g_free(e);
}

struct source_entry *source_entry_new(guint32 uid, const char *name, guint64 size,
				      char *message_id)
{
	struct source_entry *e = g_new0(struct source_entry, 1);

	e->uid = uid;
	e->name = g_strdup(name);
	e->size = size;
	e->message_id = message_id;
	return e;
}

bool source_too_large(GError **error, const struct source *s, guint64 size)
{
	g_set_error(error, MAIL_ERROR, MAIL_ERROR_INVALID, "%s: too large: %" G_GUINT64_FORMAT
		    " bytes (at most %" G_GSIZE_FORMAT ")", s->name, size, s->size_max);
	return false;
}

char *source_message_id(const char *header, gsize len)
{
	static const char field[] = "message-id:";
	const char *end = header + len;
	const char *p = header;
	g_autoptr(GString) value = NULL;
	const char *lt;
	const char *gt;

	while (p < end && !value) {
		const char *eol = memchr(p, '\n', (gsize)(end - p));
		const char *next = eol ? eol + 1 : end;

		if (p == eol || (*p == '\r' && p + 1 == eol))
			break; /* the end of the header */
		if ((gsize)(end - p) >= sizeof(field) - 1 &&
		    g_ascii_strncasecmp(p, field, sizeof(field) - 1) == 0) {
			value = g_string_new_len(p + sizeof(field) - 1, (next - p) - (gssize)(sizeof(field) - 1));
			/* Unfolded: the continuation lines appended. */
			while (next < end && (*next == ' ' || *next == '\t')) {
				const char *e2 = memchr(next, '\n', (gsize)(end - next));
				const char *n2 = e2 ? e2 + 1 : end;

				g_string_append_len(value, next, n2 - next);
				next = n2;
			}
		}
		p = next;
	}
	if (!value)
		return NULL;
	for (gsize i = 0; i < value->len; i++) {
		if (value->str[i] == '\r' || value->str[i] == '\n' || value->str[i] == '\t')
			value->str[i] = ' ';
	}
	g_strstrip(value->str);
	lt = strchr(value->str, '<');
	if (lt) {
		gt = strchr(lt, '>');
		if (!gt)
			return NULL;
		lt++;
	} else {
		lt = value->str;
		gt = lt + strlen(lt);
	}
	if (gt == lt || gt - lt > MESSAGE_ID_MAX)
		return NULL;
	for (const char *q = lt; q < gt; q++) {
		if (*q <= ' ' || *q >= 0x7f || *q == '<' || *q == '>')
			return NULL;
	}
	return g_strndup(lt, (gsize)(gt - lt));
}

struct source *source_open(const char *url, const struct source_options *opts, GError **error)
{
	struct source_url u = { 0 };
	const struct source_driver *driver = NULL;
	struct source *s;

	if (!source_url_parse(url, &u, error))
		return NULL;
	for (size_t i = 0; i < G_N_ELEMENTS(drivers); i++) {
		if (drivers[i].scheme == u.scheme)
			driver = drivers[i].driver;
	}
	g_assert(driver && driver->size >= sizeof(struct source));
	s = g_malloc0(driver->size);
	s->driver = driver;
	s->url = u;
	s->name = url_name(&u);
	s->ca_file = g_strdup(opts->ca_file);
	s->password = g_strdup(opts->password);
	s->timeout = opts->timeout ? opts->timeout : SOURCE_TIMEOUT_DEFAULT;
	s->size_max = opts->size_max ? opts->size_max : SOURCE_SIZE_MAX_DEFAULT;
	if (!driver->open(s, error)) {
		source_close(s);
		return NULL;
	}
	return s;
}

bool source_list(struct source *s, guint32 after_uid, unsigned limit, guint32 *uidvalidity,
		 GPtrArray **entries, GError **error)
{
	g_autoptr(GPtrArray) list = g_ptr_array_new_with_free_func((GDestroyNotify)source_entry_free);

	*uidvalidity = 0;
	if (!s->driver->list(s, after_uid, limit, uidvalidity, list, error))
		return false;
	*entries = g_steal_pointer(&list);
	return true;
}

char *source_fetch(struct source *s, const struct source_entry *e, gsize *len, GError **error)
{
	*len = 0;
	if (e->size > s->size_max) {
		source_too_large(error, s, e->size);
		return NULL;
	}
	return s->driver->fetch(s, e, len, error);
}

void source_plan(struct source *s, GPtrArray *entries)
{
	if (s->driver->plan)
		s->driver->plan(s, entries);
}

bool source_done(struct source *s, const struct source_entry *e, GError **error)
{
	return s->driver->done(s, e, error);
}

bool source_wait(struct source *s, unsigned seconds, bool *changed, GError **error)
{
	*changed = false;
	return s->driver->wait(s, seconds, changed, error);
}

const char *source_name(const struct source *s)
{
	return s->name;
}

void source_close(struct source *s)
{
	if (!s)
		return;
	s->driver->close(s);
	source_url_release(&s->url);
	g_free(s->name);
	g_free(s->ca_file);
	if (s->password) {
		explicit_bzero(s->password, strlen(s->password));
		g_free(s->password);
	}
	g_free(s);
}
