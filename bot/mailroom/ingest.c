/*
 * Ingest: sources -> parse -> store. See ingest.h.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <signal.h>
#include <string.h>

#include "bot/bot.h"
#include "bot/mailroom/ingest.h"
#include "mail/address.h"
#include "mail/mail.h"
#include "mail/patchmail.h"
#include "mail/source.h"

/*
 * Mails listed at a time (UID and size, then the Message-IDs of these):
 * the cursor moves on after each. A listing reads every UID above the
 * cursor, so a large batch keeps a backlog from being read again and again.
 */
#define INGEST_BATCH 10000
/* A reader's longest wait before it looks whether it is told to stop. */
#define WAIT_STEP_S 10u

/*
 * Test hook, for the crash tests: ZERODAY_TEST_CRASH=STEP kills zeroday
 * with SIGKILL at that step of storing a mail: "ingest-fetched" (read
 * from the source, nothing stored), "ingest-stored" (written, not
 * committed), "ingest-committed" (committed, not yet done in the source).
 */
static void crash_point(const char *step)
{
	bot_crash_point("ingest", step);
}

/*
 * What identifies a mail's content, for a Message-ID used twice: its
 * sender, subject and patch (or body), not the headers lists add, so the
 * same mail through two lists is one.
 */
static char *content_hash(const struct patchmail *m)
{
	g_autoptr(GChecksum) sum = g_checksum_new(G_CHECKSUM_SHA256);
	const char *text = m->diff ? m->diff : m->body;

	g_checksum_update(sum, (const guchar *)(m->from ? m->from : ""), -1);
	g_checksum_update(sum, (const guchar *)"", 1);
	g_checksum_update(sum, (const guchar *)m->subject, -1);
	g_checksum_update(sum, (const guchar *)"", 1);
	if (m->commit_message)
		g_checksum_update(sum, (const guchar *)m->commit_message, -1);
	g_checksum_update(sum, (const guchar *)"", 1);
	g_checksum_update(sum, (const guchar *)(text ? text : ""), -1);
	return g_strdup(g_checksum_get_string(sum));
}

static char *raw_hash(const char *raw, gsize len)
{
	return g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)raw, len);
}

/* A subject or sender as the store keeps it: valid UTF-8, at most 998 bytes. */
static char *clean_text(const char *text)
{
	g_autofree char *valid = g_utf8_make_valid(text, -1);
	const char *end;

	if (strlen(valid) <= 998)
		return g_steal_pointer(&valid);
	end = g_utf8_find_prev_char(valid, valid + 998);
	return g_strndup(valid, end ? (gsize)(end - valid) : 0);
}

bool ingest_mail(struct db *db, const struct config *config, const char *source, guint32 uid,
		 const char *raw, gsize len, gint64 now, bool *added, bool *quarantined,
		 GError **error)
{
	g_autoptr(GError) refused = NULL;
	struct patchmail *m = patchmail_parse(raw, len, config->mail_max_size, &refused);
	struct mail_row row = {
		.source = (char *)source, .uid = uid, .received = now,
	};
	g_autofree char *message_id = NULL;
	g_autofree char *hash = NULL;
	g_autofree char *subject = NULL;
	g_autofree char *sender = NULL;
	g_autoptr(GBytes) parse = NULL;
	bool ok;

	*quarantined = m == NULL;
	if (m) {
		row.state = MAIL_NEW;
		message_id = g_strdup(m->message_id);
		hash = content_hash(m);
		subject = clean_text(m->subject);
		sender = m->from ? clean_text(m->from) : NULL;
		row.kind = (char *)patchmail_kind_name(m->kind);
		/* Parsed once: the inbox and series assembly read this, not the raw text. */
		parse = patchmail_pack(m);
		patchmail_free(m);
	} else {
		row.state = MAIL_QUARANTINED;
		row.reason = refused->message;
		/* The header, read as the sources read it, keys the quarantine. */
		message_id = source_message_id(raw, MIN(len, (gsize)256 * 1024));
		if (!message_id)
			message_id = g_strdup("");
		hash = raw_hash(raw, len);
	}
	row.message_id = message_id;
	row.hash = hash;
	row.subject = subject;
	row.sender = sender;
	ok = db_mail_add(db, &row, raw, len, parse, added, error);
	if (ok && *added && *quarantined)
		g_message("ingest: quarantined mail %" G_GINT64_FORMAT " <%s> from %s: %s", row.id,
			  message_id, source, refused->message);
	return ok;
}

/*
 * A source's error without the source's name in front, which the log
 * line and the store name already (borrowed from @message).
 */
static const char *without_name(const char *name, const char *message)
{
	size_t n = strlen(name);

	if (strncmp(message, name, n) == 0 && strncmp(message + n, ": ", 2) == 0)
		return message + n + 2;
	return message;
}

/*
 * Stores a mail the source would not hand over (too large): its row, no
 * text. It is known by its source, Message-ID and size, not by its UID,
 * which a changed UIDVALIDITY renumbers: two mails without a Message-ID
 * of exactly one size in one folder are quarantined as one.
 */
static bool ingest_refused(struct db *db, const char *source, const struct source_entry *e,
			   const char *reason, gint64 now, bool *added, GError **error)
{
	g_autofree char *key = g_strdup_printf("%s\n%s\n%" G_GUINT64_FORMAT, source,
					       e->message_id ? e->message_id : "", e->size);
	g_autofree char *hash = raw_hash(key, strlen(key));
	struct mail_row row = {
		.message_id = e->message_id ? e->message_id : (char *)"", .hash = hash,
		.source = (char *)source, .uid = e->uid, .received = now,
		.state = MAIL_QUARANTINED, .reason = (char *)without_name(source, reason),
		.size = (gint64)MIN(e->size, (guint64)G_MAXINT64),
	};

	if (!db_mail_add(db, &row, "", 0, NULL, added, error))
		return false;
	if (*added)
		g_message("ingest: quarantined mail %" G_GINT64_FORMAT " <%s> from %s: %s", row.id,
			  row.message_id, source, reason);
	return true;
}

/* The password of @url's user: [mail] credentials' when it names that user; else NULL. */
static char *source_password(const struct config *config, const char *url)
{
	g_autoptr(GError) local = NULL;
	struct source_url u;
	char *user = NULL, *password = NULL;
	char *out = NULL;

	if (!config->mail_credentials || !source_url_parse(url, &u, NULL))
		return NULL;
	if (u.user && config_read_credentials(config->mail_credentials, &user, &password,
					      &local)) {
		if (strcmp(user, u.user) == 0)
			out = g_strdup(password);
		config_credentials_free(user, password);
	} else if (local) {
		g_warning("ingest: %s", local->message);
	}
	source_url_release(&u);
	return out;
}

static void wipe_free(char *secret)
{
	if (secret) {
		memset(secret, 0, strlen(secret));
		g_free(secret);
	}
}

static struct source *open_source(const struct config *config, const char *url, GError **error)
{
	char *password = source_password(config, url);
	struct source_options opts = {
		.ca_file = config->mail_ca_file, .password = password,
		.timeout = config->mail_timeout, .size_max = config->mail_max_size,
	};
	struct source *s = source_open(url, &opts, error);

	wipe_free(password);
	return s;
}

/*
 * One mail of a listing: fetched, stored with the cursor, then done in
 * the source. When the source fails, *@source_failed is set to why
 * (caller frees) and true returned; false only when the store fails.
 */
static bool ingest_entry(struct db *db, const struct config *config, struct source *s,
			 const struct source_entry *e, guint32 uidvalidity, bool resync,
			 struct ingest_stats *stats, char **source_failed, GError **error)
{
	const char *name = source_name(s);
	gint64 now = g_get_real_time() / G_USEC_PER_SEC;
	g_autoptr(GError) local = NULL;
	g_autofree char *raw = NULL;
	bool known = false, added = false, quarantined = false;
	gsize len = 0;

	/* After a changed UIDVALIDITY, what the store holds is not read again. */
	if (resync && e->message_id && !db_mail_known(db, e->message_id, &known, error))
		return false;
	if (!known) {
		raw = source_fetch(s, e, &len, &local);
		if (!raw && !g_error_matches(local, MAIL_ERROR, MAIL_ERROR_INVALID)) {
			g_warning("ingest: %s: %s", name, without_name(name, local->message));
			*source_failed = g_strdup(without_name(name, local->message));
			return true;
		}
		crash_point("ingest-fetched");
	}
	if (!db_tx_begin(db, error))
		return false;
	if (known)
		added = false;
	else if (raw && !ingest_mail(db, config, name, e->uid, raw, len, now, &added, &quarantined,
				     error))
		goto fail;
	else if (!raw && !ingest_refused(db, name, e, local->message, now, &added, error))
		goto fail;
	if (!raw)
		quarantined = true;
	if (e->uid && !db_cursor_put(db, name, uidvalidity, e->uid, now, error))
		goto fail;
	crash_point("ingest-stored");
	if (!db_tx_commit(db, error))
		goto fail;
	crash_point("ingest-committed");
	if (added) {
		stats->stored++;
		stats->quarantined += quarantined;
	} else {
		stats->duplicates++;
	}
	if (!source_done(s, e, &local)) {
		/* Stored: the next listing shows it again, and it is a duplicate then. */
		g_warning("ingest: %s: %s", name, without_name(name, local->message));
		*source_failed = g_strdup(without_name(name, local->message));
	}
	return true;
fail:
	db_tx_rollback(db);
	return false;
}

/*
 * Tells @s which of @entries ingest_entry() will fetch, so that the
 * source fetches them in batches: all, but after a changed UIDVALIDITY
 * those whose Message-ID the store holds already.
 */
static bool plan_fetches(struct db *db, struct source *s, GPtrArray *entries, bool resync,
			 GError **error)
{
	g_autoptr(GPtrArray) plan = g_ptr_array_sized_new(entries->len);

	for (guint i = 0; i < entries->len; i++) {
		const struct source_entry *e = entries->pdata[i];
		bool known = false;

		if (resync && e->message_id && !db_mail_known(db, e->message_id, &known, error))
			return false;
		if (!known)
			g_ptr_array_add(plan, entries->pdata[i]);
	}
	source_plan(s, plan);
	return true;
}

bool ingest_source(struct db *db, const struct config *config, const char *url,
		   struct ingest_stats *stats, volatile sig_atomic_t *stop, GError **error)
{
	g_autoptr(GError) local = NULL;
	struct source *s = open_source(config, url, &local);
	guint32 stored_validity = 0, last_uid = 0, uidvalidity = 0;
	g_autofree char *failed = NULL; /* why the source failed */
	bool found = false, resync = false, ok = true;

	if (!s) {
		g_warning("ingest: %s: %s", url, without_name(url, local->message));
		stats->failed++;
		return true;
	}
	if (!db_cursor_get(db, source_name(s), &stored_validity, &last_uid, &found, error)) {
		source_close(s);
		return false;
	}
	while (ok && !failed && !(stop && *stop)) {
		g_autoptr(GPtrArray) entries = NULL;

		if (!source_list(s, resync ? 0 : last_uid, INGEST_BATCH, &uidvalidity, &entries,
				 &local)) {
			g_warning("ingest: %s: %s", source_name(s),
				  without_name(source_name(s), local->message));
			failed = g_strdup(without_name(source_name(s), local->message));
			break;
		}
		if (uidvalidity && found && uidvalidity != stored_validity && !resync) {
			/* The folder was rebuilt: its UIDs mean nothing now; Message-IDs do. */
			g_message("ingest: %s: UIDVALIDITY changed from %u to %u: "
				  "reading it again by Message-ID", source_name(s), stored_validity,
				  uidvalidity);
			resync = true;
			last_uid = 0;
			continue;
		}
		if (!plan_fetches(db, s, entries, resync, error)) {
			ok = false;
			break;
		}
		for (guint i = 0; ok && !failed && i < entries->len && !(stop && *stop); i++) {
			const struct source_entry *e = entries->pdata[i];

			ok = ingest_entry(db, config, s, e, uidvalidity, resync, stats, &failed,
					  error);
			if (ok && !failed && e->uid)
				last_uid = MAX(last_uid, e->uid);
		}
		/* A resync reads from the start once; then on from the new cursor. */
		if (resync && ok && !failed) {
			resync = false;
			stored_validity = uidvalidity;
			found = true;
		}
		if (entries->len < INGEST_BATCH)
			break;
	}
	if (failed)
		stats->failed++;
	/* For status: a read that went through the listing, or why it did not. */
	if (ok && (failed || !(stop && *stop)))
		ok = db_source_read(db, source_name(s), g_get_real_time() / G_USEC_PER_SEC, failed,
				    error);
	source_close(s);
	return ok;
}

bool ingest_all(struct db *db, const struct config *config, struct ingest_stats *stats,
		volatile sig_atomic_t *stop, GError **error)
{
	for (char **u = config->mail_sources; u && *u && !(stop && *stop); u++) {
		if (!ingest_source(db, config, *u, stats, stop, error))
			return false;
	}
	return true;
}

/* The daemon's readers. */

struct reader {
	struct ingest_readers *all;
	const char *url;
	GThread *thread;
};

struct ingest_readers {
	const struct config *config;
	const char *db_path;
	unsigned poll_s;
	volatile sig_atomic_t *stop;
	void (*wake)(void *data);
	void *data;
	GPtrArray *readers; /* struct reader */
};

/* Sleeps @seconds, in steps, unless told to stop. */
static void nap(volatile sig_atomic_t *stop, unsigned seconds)
{
	for (unsigned i = 0; i < seconds * 5 && !*stop; i++)
		g_usleep(G_USEC_PER_SEC / 5);
}

static gpointer reader_main(gpointer data)
{
	struct reader *r = data;
	struct ingest_readers *all = r->all;
	unsigned backoff = 0;

	while (!*all->stop) {
		g_autoptr(GError) local = NULL;
		zd_autoptr(db) db = db_open(all->db_path, &local);
		struct ingest_stats stats = { 0 };
		struct source *s = NULL;
		bool changed = false;

		if (db && ingest_source(db, all->config, r->url, &stats, all->stop, &local) &&
		    stats.failed == 0) {
			backoff = 0;
			if (stats.stored && all->wake)
				all->wake(all->data);
			/*
			 * Wait for more: IDLE on a connection of its own, or a poll;
			 * in steps of WAIT_STEP_S, so that a stop is seen soon.
			 */
			s = open_source(all->config, r->url, &local);
			for (unsigned waited = 0; s && !*all->stop && !changed &&
			     waited < all->poll_s; waited += WAIT_STEP_S) {
				if (!source_wait(s, MIN(WAIT_STEP_S, all->poll_s - waited),
						 &changed, &local))
					break;
			}
			if (s)
				source_close(s);
			if (local) {
				g_warning("ingest: %s: %s", r->url, local->message);
				nap(all->stop, 10);
			}
			continue;
		}
		if (local)
			g_warning("ingest: %s: %s", r->url, local->message);
		backoff = backoff ? MIN(backoff * 2, 600u) : 10;
		g_message("ingest: %s: trying again in %u s", r->url, backoff);
		nap(all->stop, backoff);
	}
	return NULL;
}

struct ingest_readers *ingest_readers_start(const struct config *config, const char *db_path,
					    unsigned poll_s, volatile sig_atomic_t *stop,
					    void (*wake)(void *data), void *data)
{
	struct ingest_readers *all = g_new0(struct ingest_readers, 1);

	all->config = config;
	all->db_path = db_path;
	all->poll_s = MAX(poll_s, 1u);
	all->stop = stop;
	all->wake = wake;
	all->data = data;
	all->readers = g_ptr_array_new_with_free_func(g_free);
	for (char **u = config->mail_sources; u && *u; u++) {
		struct reader *r = g_new0(struct reader, 1);

		r->all = all;
		r->url = *u;
		r->thread = g_thread_new("reader", reader_main, r);
		g_ptr_array_add(all->readers, r);
	}
	return all;
}

void ingest_readers_join(struct ingest_readers *all)
{
	if (!all)
		return;
	for (guint i = 0; i < all->readers->len; i++) {
		struct reader *r = all->readers->pdata[i];

		g_thread_join(r->thread);
	}
	g_ptr_array_unref(all->readers);
	g_free(all);
}
