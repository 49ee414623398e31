/*
 * The IMAP source (libetpan): see source.h. The only file that includes
 * libetpan's IMAP headers; their codes are translated here, once
 * (translate()), onto MAIL_ERROR's few classes (isync's
 * transform_box_response).
 *
 * TLS is mail/tls.c's, as for SMTP: our own TCP connect, implicit TLS or
 * STARTTLS that is required (a server that does not offer it is left
 * before anything is said, and bytes it sent after its answer to
 * STARTTLS are refused), the certificate chain and host name checked
 * before LOGIN. The folder is opened with EXAMINE and messages are read
 * with BODY.PEEK: no flag on the server changes. What the caller plans
 * to fetch (source_plan()) is fetched in batches, a UID FETCH of many
 * messages for one round trip, and handed out from memory.
 */
#define G_LOG_DOMAIN "mail"

#include "autoconfig.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include <libetpan/libetpan.h>

#include "mail/mail.h"
#include "mail/source-private.h"
#include "mail/tls.h"

/* Server words kept in an error, at most. */
/* Traced bytes of one chunk of protocol, at most. */
#define TRACE_MAX 300
/* One IDLE lasts at most this long (RFC 2177: re-issue within 29 minutes). */
#define IDLE_MAX_SECONDS (25 * 60)

/* A message the caller means to fetch (source_plan()), as listed. */
struct planned {
	guint32 uid;
	guint64 size;
};

/* A message fetched ahead, in a batch, not yet handed out. */
struct ready {
	char *data;  /* NUL-terminated; NULL when it came larger than the cap */
	gsize len;   /* its bytes, as they came */
};

static void ready_free(gpointer data)
{
	struct ready *r = data;

	g_free(r->data);
	g_free(r);
}

struct imap_source {
	struct source base;
	struct tls_peer peer;
	mailimap *imap;
	guint32 uidvalidity;
	bool has_idle;
	bool broken; /* the connection failed: every call fails until reopened */
	GArray *plan;       /* struct planned, in the caller's order */
	GHashTable *at;     /* UID -> its index in plan, plus one */
	GHashTable *ready;  /* UID -> struct ready: the last batch, what is left of it */
};

/* The server's last words, for errors and logs (caller frees). */
static char *reply_text(const mailimap *imap)
{
	return tls_server_words(imap ? imap->imap_response : NULL);
}

static bool fail_with(GError **error, struct imap_source *s, int code, const char *fmt, ...)
	G_GNUC_PRINTF(4, 5);

static bool fail_with(GError **error, struct imap_source *s, int code, const char *fmt, ...)
{
	va_list ap;
	g_autofree char *what = NULL;

	va_start(ap, fmt);
	what = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_set_error(error, MAIL_ERROR, code, "%s: %s", s->base.name, what);
	return false;
}

/*
 * libetpan's result @r of @what, translated: true for success (1 and 2
 * are successes too, from mailimap_connect()). Else sets @error:
 * PERMANENT for a refused LOGIN or EXAMINE (a wrong password, a missing
 * folder), TEMPORARY for everything the network, the server's state or
 * a retry may mend, with the server's words when it said any. A broken
 * connection marks @s broken.
 */
static bool translate(GError **error, struct imap_source *s, const char *what, int r)
{
	g_autofree char *words = NULL;
	int code = MAIL_ERROR_TEMPORARY;
	bool said = false;

	switch (r) {
	case MAILIMAP_NO_ERROR:
	case MAILIMAP_NO_ERROR_AUTHENTICATED:
	case MAILIMAP_NO_ERROR_NON_AUTHENTICATED:
		return true;
	case MAILIMAP_ERROR_LOGIN:
	case MAILIMAP_ERROR_EXAMINE:
		code = MAIL_ERROR_PERMANENT;
		said = true;
		break;
	case MAILIMAP_ERROR_STREAM:
	case MAILIMAP_ERROR_CONNECTION_REFUSED:
	case MAILIMAP_ERROR_SSL:
	case MAILIMAP_ERROR_FATAL:
	case MAILIMAP_ERROR_PARSE:
	case MAILIMAP_ERROR_BAD_STATE:
		/* Nothing more can be said on this connection. */
		s->broken = true;
		break;
	case MAILIMAP_ERROR_MEMORY:
		code = MAIL_ERROR_FAILED;
		break;
	default:
		/* A NO or BAD to a command that should work: try again later. */
		said = true;
		break;
	}
	words = said ? reply_text(s->imap) : NULL;
	if (words && *words)
		return fail_with(error, s, code, "%s: the server said \"%s\"", what, words);
	return fail_with(error, s, code, "%s failed (%s)", what,
			 r == MAILIMAP_ERROR_STREAM ? "the connection was lost or timed out" :
			 r == MAILIMAP_ERROR_PARSE ? "an unreadable answer" :
			 r == MAILIMAP_ERROR_FATAL ? "the server closed the session" :
			 r == MAILIMAP_ERROR_MEMORY ? "out of memory" : "refused");
}

/* The protocol trace (G_MESSAGES_DEBUG=mail), the password never in it. */
static void trace(mailimap *imap, int type, const char *str, size_t size, void *data)
{
	struct imap_source *s = data;
	const char *dir;
	g_autofree char *text = NULL;

	switch (type) {
	case MAILSTREAM_LOG_TYPE_DATA_RECEIVED:
		dir = "S:";
		break;
	case MAILSTREAM_LOG_TYPE_DATA_SENT:
		dir = "C:";
		break;
	case MAILSTREAM_LOG_TYPE_DATA_SENT_PRIVATE:
		g_debug("%s C: [private: %zu bytes masked]", s->base.name, size);
		return;
	default:
		return;
	}
	if (g_log_writer_default_would_drop(G_LOG_LEVEL_DEBUG, G_LOG_DOMAIN))
		return;
	text = g_strndup(str, MIN(size, TRACE_MAX));
	/* In case a password goes out other than marked private. */
	if (s->base.password && *s->base.password && strstr(text, s->base.password)) {
		g_debug("%s %s [a line with the password, masked]", s->base.name, dir);
		return;
	}
	for (char *p = text; *p; p++) {
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
			*p = (*p == '\n' || *p == '\r') ? ' ' : '.';
	}
	g_debug("%s %s %s%s", s->base.name, dir, text, size > TRACE_MAX ? "..." : "");
}

static bool has_capability(struct imap_source *s, const char *name)
{
	return mailimap_has_extension(s->imap, name) != 0;
}

/* The server's capabilities asked for again (after TLS: what came before is forgotten). */
static bool capability(struct imap_source *s, GError **error)
{
	struct mailimap_capability_data *cap = NULL;
	int r = mailimap_capability(s->imap, &cap);

	if (cap)
		mailimap_capability_data_free(cap);
	return translate(error, s, "CAPABILITY", r);
}

/* Connected, greeted, in TLS (checked), logged in, the folder examined. */
static bool imap_open(struct source *base, GError **error)
{
	struct imap_source *s = (struct imap_source *)base;
	const struct source_url *u = &base->url;
	mailstream *stream;
	int fd;
	int r;

	s->plan = g_array_new(FALSE, FALSE, sizeof(struct planned));
	s->at = g_hash_table_new(NULL, NULL);
	s->ready = g_hash_table_new_full(NULL, NULL, NULL, ready_free);
	s->peer = (struct tls_peer){ .host = u->host, .port = u->port, .ca_file = base->ca_file,
				     .timeout = base->timeout };
	s->imap = mailimap_new(0, NULL);
	if (!s->imap)
		return fail_with(error, s, MAIL_ERROR_FAILED, "out of memory");
	mailimap_set_timeout(s->imap, base->timeout);
	mailimap_set_logger(s->imap, trace, s);
	fd = tls_tcp_connect(&s->peer, error);
	if (fd < 0)
		return false;
	if (u->scheme == SOURCE_IMAPS) {
		stream = tls_open(&s->peer, fd, error);
		if (!stream)
			return false;
	} else {
		stream = mailstream_socket_open_timeout(fd, base->timeout);
		if (!stream) {
			close(fd);
			return fail_with(error, s, MAIL_ERROR_FAILED, "out of memory");
		}
	}
	/* From here the session owns the stream (mailimap_free() closes it). */
	r = mailimap_connect(s->imap, stream);
	if (!translate(error, s, "the greeting", r))
		return false;
	if (u->scheme == SOURCE_IMAP) {
		/* Refused below: not a word more in plain text, not even LOGOUT. */
		s->broken = true;
		if (r == MAILIMAP_NO_ERROR_AUTHENTICATED)
			return fail_with(error, s, MAIL_ERROR_TEMPORARY, "the server says PREAUTH "
					 "before TLS; refusing to read mail in plain text");
		/* The greeting's capabilities, else asked for (nothing secret in that). */
		if (!s->imap->imap_connection_info->imap_capability && !capability(s, error))
			return false;
		if (!has_capability(s, "STARTTLS"))
			return fail_with(error, s, MAIL_ERROR_TEMPORARY, "the server does not offer "
					 "STARTTLS; refusing to log in in plain text");
		r = mailimap_starttls(s->imap);
		if (s->imap->imap_stream->read_buffer_len != 0)
			return fail_with(error, s, MAIL_ERROR_TEMPORARY, "the server sent more after "
					 "its answer to STARTTLS (a response injection?); refusing");
		if (!translate(error, s, "STARTTLS", r))
			return false;
		if (!tls_starttls(&s->peer, s->imap->imap_stream, error))
			return false;
		s->broken = false;
	}
	if (!capability(s, error))
		return false;
	s->has_idle = mailimap_has_idle(s->imap) != 0;
	if (s->imap->imap_state == MAILIMAP_STATE_NON_AUTHENTICATED) {
		/* public-inbox-imapd takes any password: "anonymous" when none is given. */
		r = mailimap_login(s->imap, u->user, base->password ? base->password : "anonymous");
		if (!translate(error, s, "LOGIN", r))
			return false;
	}
	r = mailimap_examine(s->imap, u->folder);
	if (!translate(error, s, "EXAMINE", r))
		return false;
	s->uidvalidity = s->imap->imap_selection_info
				 ? s->imap->imap_selection_info->sel_uidvalidity : 0;
	if (s->uidvalidity == 0)
		return fail_with(error, s, MAIL_ERROR_INVALID, "the server gave no UIDVALIDITY");
	g_debug("%s: open, UIDVALIDITY %u%s", base->name, s->uidvalidity,
		s->has_idle ? ", IDLE" : "");
	return true;
}

static bool usable(struct imap_source *s, GError **error)
{
	if (s->broken)
		return fail_with(error, s, MAIL_ERROR_TEMPORARY, "the connection is gone; reopen");
	return true;
}

/* What one FETCH response holds of what we ask for. */
struct fetched {
	guint32 uid;
	bool has_size;
	guint64 size;
	const char *body; /* libetpan's, valid until the list is freed */
	size_t body_len;
	bool has_body;
};

static void fetched_read(const struct mailimap_msg_att *att, struct fetched *out)
{
	memset(out, 0, sizeof(*out));
	for (clistiter *i = clist_begin(att->att_list); i; i = clist_next(i)) {
		const struct mailimap_msg_att_item *item = clist_content(i);
		const struct mailimap_msg_att_static *st;

		if (item->att_type != MAILIMAP_MSG_ATT_ITEM_STATIC)
			continue;
		st = item->att_data.att_static;
		switch (st->att_type) {
		case MAILIMAP_MSG_ATT_UID:
			out->uid = st->att_data.att_uid;
			break;
		case MAILIMAP_MSG_ATT_RFC822_SIZE:
			out->size = st->att_data.att_rfc822_size;
			out->has_size = true;
			break;
		case MAILIMAP_MSG_ATT_BODY_SECTION:
			out->body = st->att_data.att_body_section->sec_body_part;
			out->body_len = st->att_data.att_body_section->sec_length;
			out->has_body = true;
			break;
		default:
			break;
		}
	}
}

/* UID FETCH @set of @type (it frees both; NULL @set: out of memory) into *@result. */
static bool uid_fetch_set(struct imap_source *s, struct mailimap_set *set,
			  struct mailimap_fetch_type *type, clist **result, GError **error)
{
	int r;

	*result = NULL;
	if (!set) {
		mailimap_fetch_type_free(type);
		return fail_with(error, s, MAIL_ERROR_FAILED, "out of memory");
	}
	r = mailimap_uid_fetch(s->imap, set, type, result);
	mailimap_set_free(set);
	mailimap_fetch_type_free(type);
	if (r != MAILIMAP_NO_ERROR && *result) {
		mailimap_fetch_list_free(*result);
		*result = NULL;
	}
	return translate(error, s, "UID FETCH", r);
}

/* UID FETCH @first:@last (0: *) of @type (which it frees) into *@result. */
static bool uid_fetch(struct imap_source *s, guint32 first, guint32 last,
		      struct mailimap_fetch_type *type, clist **result, GError **error)
{
	return uid_fetch_set(s, mailimap_set_new_interval(first, last), type, result, error);
}

static gint by_uid(gconstpointer a, gconstpointer b)
{
	const struct source_entry *x = *(struct source_entry *const *)a;
	const struct source_entry *y = *(struct source_entry *const *)b;

	return x->uid < y->uid ? -1 : x->uid > y->uid;
}

static bool imap_list(struct source *base, guint32 after_uid, unsigned limit,
		      guint32 *uidvalidity, GPtrArray *entries, GError **error)
{
	struct imap_source *s = (struct imap_source *)base;
	struct mailimap_fetch_type *type;
	clist *result = NULL;
	g_autoptr(GHashTable) by = NULL;
	guint32 last;
	guint kept = 0;

	if (!usable(s, error))
		return false;
	*uidvalidity = s->uidvalidity;
	if (after_uid == G_MAXUINT32)
		return true;
	/*
	 * First the UIDs and sizes above the cursor (N:* names the last
	 * message even when its UID is below N: filtered), then the
	 * Message-IDs of the first @limit of them only.
	 */
	type = mailimap_fetch_type_new_fetch_att_list_empty();
	mailimap_fetch_type_new_fetch_att_list_add(type, mailimap_fetch_att_new_uid());
	mailimap_fetch_type_new_fetch_att_list_add(type, mailimap_fetch_att_new_rfc822_size());
	if (!uid_fetch(s, after_uid + 1, 0, type, &result, error))
		return false;
	by = g_hash_table_new(NULL, NULL);
	for (clistiter *i = clist_begin(result); i; i = clist_next(i)) {
		struct fetched f;

		fetched_read(clist_content(i), &f);
		if (f.uid <= after_uid || !f.has_size ||
		    g_hash_table_contains(by, GUINT_TO_POINTER(f.uid)))
			continue;
		g_ptr_array_add(entries, source_entry_new(f.uid, NULL, f.size, NULL));
		g_hash_table_add(by, GUINT_TO_POINTER(f.uid));
	}
	mailimap_fetch_list_free(result);
	g_ptr_array_sort(entries, by_uid);
	if (limit && entries->len > limit)
		g_ptr_array_remove_range(entries, limit, entries->len - limit);
	if (entries->len == 0)
		return true;
	g_hash_table_remove_all(by);
	for (guint i = 0; i < entries->len; i++) {
		struct source_entry *e = entries->pdata[i];

		g_hash_table_insert(by, GUINT_TO_POINTER(e->uid), e);
	}
	last = ((struct source_entry *)entries->pdata[entries->len - 1])->uid;
	{
		clist *fields = clist_new();
		struct mailimap_header_list *hl;
		struct mailimap_section *section;

		clist_append(fields, strdup("MESSAGE-ID"));
		hl = mailimap_header_list_new(fields);
		section = mailimap_section_new_header_fields(hl);
		type = mailimap_fetch_type_new_fetch_att_list_empty();
		mailimap_fetch_type_new_fetch_att_list_add(type, mailimap_fetch_att_new_uid());
		mailimap_fetch_type_new_fetch_att_list_add(
			type, mailimap_fetch_att_new_body_peek_section(section));
	}
	if (!uid_fetch(s, ((struct source_entry *)entries->pdata[0])->uid, last, type, &result,
		       error))
		return false;
	for (clistiter *i = clist_begin(result); i; i = clist_next(i)) {
		struct fetched f;
		struct source_entry *e;

		fetched_read(clist_content(i), &f);
		e = g_hash_table_lookup(by, GUINT_TO_POINTER(f.uid));
		if (!e || !f.has_body || !f.body || e->message_id)
			continue;
		e->message_id = source_message_id(f.body, f.body_len);
		kept++;
	}
	mailimap_fetch_list_free(result);
	g_debug("%s: %u new above UID %u, %u with a Message-ID", base->name, entries->len,
		after_uid, kept);
	return true;
}

static void imap_plan(struct source *base, GPtrArray *entries)
{
	struct imap_source *s = (struct imap_source *)base;

	g_array_set_size(s->plan, 0);
	g_hash_table_remove_all(s->at);
	g_hash_table_remove_all(s->ready);
	for (guint i = 0; i < entries->len; i++) {
		const struct source_entry *e = entries->pdata[i];
		struct planned p = { .uid = e->uid, .size = e->size };

		if (!e->uid || g_hash_table_contains(s->at, GUINT_TO_POINTER(e->uid)))
			continue;
		g_array_append_val(s->plan, p);
		g_hash_table_insert(s->at, GUINT_TO_POINTER(e->uid), GUINT_TO_POINTER(s->plan->len));
	}
}

/*
 * The UIDs to fetch with @e's: @e's own, then those planned after it, up
 * to SOURCE_BATCH_MAX messages or SOURCE_BATCH_BYTES as listed. A message
 * listed over the cap is left out: it is refused unfetched. Returns the
 * set (caller frees; NULL when out of memory), and the UIDs in @wanted.
 */
static struct mailimap_set *batch_of(struct imap_source *s, const struct source_entry *e,
				     GHashTable *wanted)
{
	guint next = GPOINTER_TO_UINT(g_hash_table_lookup(s->at, GUINT_TO_POINTER(e->uid)));
	struct mailimap_set *set = mailimap_set_new_empty();
	guint64 bytes = e->size;
	guint32 first = e->uid, last = e->uid;

	if (!set)
		return NULL;
	g_hash_table_add(wanted, GUINT_TO_POINTER(e->uid));
	/* @next, @e's index plus one, is 0 when @e is not planned: alone, then. */
	for (guint i = next; next && i < s->plan->len; i++) {
		const struct planned *p = &g_array_index(s->plan, struct planned, i);

		if (g_hash_table_size(wanted) >= SOURCE_BATCH_MAX)
			break;
		if (p->size > s->base.size_max)
			continue;
		if (bytes + p->size > SOURCE_BATCH_BYTES)
			break;
		bytes += p->size;
		g_hash_table_add(wanted, GUINT_TO_POINTER(p->uid));
		/* A run of UIDs one after another goes as FIRST:LAST. */
		if (p->uid == last + 1) {
			last = p->uid;
			continue;
		}
		if (mailimap_set_add_interval(set, first, last) != MAILIMAP_NO_ERROR)
			goto oom;
		first = last = p->uid;
	}
	if (mailimap_set_add_interval(set, first, last) == MAILIMAP_NO_ERROR)
		return set;
oom:
	mailimap_set_free(set);
	return NULL;
}

/*
 * UID FETCH of @e and the planned messages after it, as batch_of() picks
 * them, each put in s->ready: copied out of libetpan's buffer, or
 * recorded as too large when it came over the cap. What the last batch
 * left is dropped first: one batch at a time in memory.
 */
static bool fetch_batch(struct imap_source *s, const struct source_entry *e, GError **error)
{
	g_autoptr(GHashTable) wanted = g_hash_table_new(NULL, NULL);
	struct mailimap_fetch_type *type;
	struct mailimap_set *set;
	clist *result = NULL;
	guint asked;

	g_hash_table_remove_all(s->ready);
	set = batch_of(s, e, wanted);
	asked = g_hash_table_size(wanted);
	/*
	 * The whole message, its listed RFC822.SIZE checked against the cap
	 * already (source_fetch(), batch_of()) and what came checked again
	 * below. Not a partial fetch (BODY.PEEK[]<0.N>): public-inbox-imapd
	 * 1.9, which serves lore's lists, announces the literal as N bytes
	 * long whatever the message's length, and the reply never ends.
	 */
	type = mailimap_fetch_type_new_fetch_att_list_empty();
	mailimap_fetch_type_new_fetch_att_list_add(type, mailimap_fetch_att_new_uid());
	mailimap_fetch_type_new_fetch_att_list_add(
		type, mailimap_fetch_att_new_body_peek_section(mailimap_section_new(NULL)));
	if (!uid_fetch_set(s, set, type, &result, error))
		return false;
	for (clistiter *i = clist_begin(result); i; i = clist_next(i)) {
		struct ready *ready;
		struct fetched f;

		fetched_read(clist_content(i), &f);
		/* Not asked for (an unsolicited FETCH of flags), or a second answer. */
		if (!f.has_body || !g_hash_table_remove(wanted, GUINT_TO_POINTER(f.uid)))
			continue;
		ready = g_new0(struct ready, 1);
		ready->len = f.body_len;
		if (f.body_len <= s->base.size_max) {
			/* Out of libetpan's buffer, NUL-terminated. */
			ready->data = g_malloc(f.body_len + 1);
			memcpy(ready->data, f.body ? f.body : "", f.body_len);
			ready->data[f.body_len] = '\0';
		}
		g_hash_table_insert(s->ready, GUINT_TO_POINTER(f.uid), ready);
	}
	mailimap_fetch_list_free(result);
	g_debug("%s: UID %u and %u more asked for, %u came", s->base.name, e->uid, asked - 1,
		g_hash_table_size(s->ready));
	return true;
}

static char *imap_fetch(struct source *base, const struct source_entry *e, gsize *len,
			GError **error)
{
	struct imap_source *s = (struct imap_source *)base;
	struct ready *r;
	char *out;

	if (!usable(s, error))
		return NULL;
	if (e->uid == 0) {
		fail_with(error, s, MAIL_ERROR_INVALID, "an entry without a UID");
		return NULL;
	}
	if (!g_hash_table_contains(s->ready, GUINT_TO_POINTER(e->uid)) &&
	    !fetch_batch(s, e, error))
		return NULL;
	if (!g_hash_table_steal_extended(s->ready, GUINT_TO_POINTER(e->uid), NULL,
					 (gpointer *)&r)) {
		fail_with(error, s, MAIL_ERROR_FAILED, "UID %u: no such message (expunged?)", e->uid);
		return NULL;
	}
	if (!r->data) {
		source_too_large(error, base, r->len);
		ready_free(r);
		return NULL;
	}
	out = g_steal_pointer(&r->data);
	*len = r->len;
	ready_free(r);
	return out;
}

static bool imap_done(struct source *base, const struct source_entry *e, GError **error)
{
	return true;
}

/*
 * One IDLE of at most @seconds: left with DONE when the server reports
 * EXISTS, or at the end. *@changed: EXISTS was reported.
 */
static bool idle_once(struct imap_source *s, unsigned seconds, bool *changed, GError **error)
{
	gint64 end = g_get_monotonic_time() + (gint64)seconds * G_USEC_PER_SEC;
	int fd;
	int r;

	r = mailimap_idle(s->imap);
	if (!translate(error, s, "IDLE", r))
		return false;
	fd = mailimap_idle_get_fd(s->imap);
	for (;;) {
		gint64 left = end - g_get_monotonic_time();
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		/* Bytes already read (a line after "+ idling") count as news. */
		if (s->imap->imap_stream->read_buffer_len > 0 || left <= 0)
			break;
		r = poll(&pfd, 1, (int)MIN(left / 1000 + 1, G_MAXINT));
		if (r < 0 && errno == EINTR)
			continue;
		if (r != 0)
			break;
	}
	/* DONE, and whatever the server said meanwhile read with its answer. */
	r = mailimap_idle_done(s->imap);
	if (!translate(error, s, "IDLE DONE", r))
		return false;
	*changed = s->imap->imap_selection_info && s->imap->imap_selection_info->sel_has_exists;
	return true;
}

static bool imap_wait(struct source *base, unsigned seconds, bool *changed, GError **error)
{
	struct imap_source *s = (struct imap_source *)base;
	gint64 end = g_get_monotonic_time() + (gint64)seconds * G_USEC_PER_SEC;

	if (!usable(s, error))
		return false;
	if (!s->has_idle) {
		struct mailimap_selection_info *sel = s->imap->imap_selection_info;
		guint32 before = sel ? sel->sel_exists : 0;
		int r;

		g_usleep((gulong)seconds * G_USEC_PER_SEC);
		if (sel)
			sel->sel_has_exists = 0;
		r = mailimap_noop(s->imap);
		if (!translate(error, s, "NOOP", r))
			return false;
		*changed = sel && sel->sel_has_exists && sel->sel_exists != before;
		return true;
	}
	while (!*changed) {
		gint64 left = (end - g_get_monotonic_time()) / G_USEC_PER_SEC;

		if (left <= 0)
			break;
		/* A keep-alive ("* OK Still here") ends one IDLE: idle again. */
		if (!idle_once(s, (unsigned)MIN(left, IDLE_MAX_SECONDS), changed, error))
			return false;
	}
	return true;
}

static void imap_close(struct source *base)
{
	struct imap_source *s = (struct imap_source *)base;

	g_clear_pointer(&s->plan, g_array_unref);
	g_clear_pointer(&s->at, g_hash_table_unref);
	g_clear_pointer(&s->ready, g_hash_table_unref);
	if (!s->imap)
		return;
	if (!s->broken && s->imap->imap_state != MAILIMAP_STATE_DISCONNECTED)
		mailimap_logout(s->imap);
	/* mailimap_free() would say LOGOUT on a stream still open: not on a broken one. */
	if (s->imap->imap_stream) {
		mailstream_close(s->imap->imap_stream);
		s->imap->imap_stream = NULL;
	}
	mailimap_free(s->imap);
	s->imap = NULL;
}

const struct source_driver imap_source_driver = {
	.size = sizeof(struct imap_source),
	.open = imap_open,
	.list = imap_list,
	.plan = imap_plan,
	.fetch = imap_fetch,
	.done = imap_done,
	.wait = imap_wait,
	.close = imap_close,
};
