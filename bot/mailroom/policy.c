/*
 * The mail policy: see policy.h. Each decision reads the store and the
 * configuration and says yes or no; the outbox acts on it.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <string.h>

#include "bot/bot.h"
#include "bot/config.h"
#include "bot/mailroom/policy.h"
#include "bot/mailroom/render.h"
#include "engine/names.h"
#include "mail/address.h"

char *policy_closes(const struct config *cfg, const struct tree_row *tree,
		    const char *message_id)
{
	if ((tree && tree->private) || !cfg->mail_archive_url)
		return NULL;
	return g_strconcat(cfg->mail_archive_url, message_id, NULL);
}

const char *policy_archive_list(const struct config *cfg, const struct tree_row *tree)
{
	return tree && tree->private ? NULL : cfg->mail_archive_list;
}

bool policy_reports(const struct bot *c, const struct finding_row *f, bool *report,
		    GError **error)
{
	g_autoptr(GError) local = NULL;
	zd_autoptr(tree_row) t = NULL;

	*report = true;
	if (!f->tree || !f->branch)
		return true;
	/* Read now, not when the job started: a blacklist given while it ran counts. */
	t = db_tree_get(c->db, f->tree, &local);
	if (!t && !g_error_matches(local, BOT_ERROR, BOT_ERROR_NOT_FOUND)) {
		g_propagate_error(error, g_steal_pointer(&local));
		return false;
	}
	if (t && names_pattern_match_any((const char *const *)t->blacklist, f->branch)) {
		g_message("outbox: finding %" G_GINT64_FORMAT " is on %s/%s, blacklisted: "
			  "not reported", f->id, t->name, f->branch);
		*report = false;
	}
	return true;
}

bool policy_is_list(const struct bot *c, const char *key, bool *is_list, GError **error)
{
	g_autoptr(GPtrArray) trees = NULL;

	*is_list = false;
	if (c->config->mail_archive_list) {
		g_autofree char *archive = address_key(c->config->mail_archive_list);

		if (strcmp(archive, key) == 0) {
			*is_list = true;
			return true;
		}
	}
	trees = db_tree_list(c->db, error);
	if (!trees)
		return false;
	for (guint i = 0; i < trees->len && !*is_list; i++) {
		const struct tree_row *t = trees->pdata[i];

		for (char **l = t->lists; l && *l && !*is_list; l++) {
			g_autofree char *k = address_key(*l);

			*is_list = strcmp(k, key) == 0;
		}
	}
	return true;
}

/* Removes from @list the addresses that muted @thread. */
static bool drop_muted_from(const struct bot *c, GPtrArray *list, const char *thread,
			    GError **error)
{
	for (guint i = 0; i < list->len;) {
		g_autofree char *key = address_key(list->pdata[i]);
		bool muted = false;
		bool is_list = false;

		if (key && !db_muted(c->db, key, thread, &muted, error))
			return false;
		if (muted && !policy_is_list(c, key, &is_list, error))
			return false;
		if (is_list) {
			g_message("outbox: the list %s has a mute of <%s>: ignored", key, thread);
			muted = false;
		}
		if (muted) {
			g_message("outbox: %s muted the thread <%s>: left out", key, thread);
			g_ptr_array_remove_index(list, i);
		} else {
			i++;
		}
	}
	return true;
}

bool policy_without_muted(const struct bot *c, enum outbox_kind kind, struct reply *r,
			  GError **cause, GError **error)
{
	const char *thread = r->references->len ? r->references->pdata[0] : r->in_reply_to;

	if (kind == OUTBOX_COMMAND)
		return true;
	if (!thread)
		return true; /* a new thread: nobody can have muted it */
	if (!drop_muted_from(c, r->to, thread, error) ||
	    !drop_muted_from(c, r->cc, thread, error))
		return false;
	if (r->to->len == 0 && r->cc->len > 0)
		g_ptr_array_add(r->to, g_ptr_array_steal_index(r->cc, 0));
	if (r->to->len == 0)
		g_set_error(cause, BOT_ERROR, BOT_ERROR_USAGE,
			    "not sent: every recipient muted the thread");
	return true;
}

/*
 * Whether one more mail may go to @address (NULL: to anybody) at @now:
 * [mail] max-per-recipient-day and max-per-hour.
 */
static bool under_limits(const struct bot *c, const char *address, gint64 now, bool *ok,
			 GError **error)
{
	gint64 hour;
	gint64 day = 0;

	if (!db_rcpt_count_sent(c->db, NULL, now - 3600, &hour, error))
		return false;
	if (address && !db_rcpt_count_sent(c->db, address, now - 86400, &day, error))
		return false;
	*ok = hour < c->config->mail_max_hour && day < c->config->mail_max_recipient_day;
	return true;
}

bool policy_may_send(const struct bot *c, enum outbox_kind kind, const char *address,
		     gint64 now, bool *ok, GError **error)
{
	*ok = true;
	if (kind == OUTBOX_DIGEST)
		return true;
	return under_limits(c, address, now, ok, error);
}

char **policy_digests_due(const struct bot *c, gint64 now, GError **error)
{
	g_auto(GStrv) addresses = db_rcpt_held_addresses(c->db, error);
	g_autoptr(GStrvBuilder) due = g_strv_builder_new();
	gint64 hour;
	guint made = 0;

	if (!addresses || !db_rcpt_count_sent(c->db, NULL, now - 3600, &hour, error))
		return NULL;
	for (char **a = addresses; *a; a++) {
		bool ok;

		/* The digests made count against the hour's limit too. */
		if (hour + made >= c->config->mail_max_hour)
			break;
		if (!under_limits(c, *a, now, &ok, error))
			return NULL;
		if (ok)
			g_strv_builder_add(due, *a);
		made += ok;
	}
	return g_strv_builder_end(due);
}

GPtrArray *policy_held_for(const struct bot *c, const char *address, GError **error)
{
	g_autoptr(GArray) ids = db_rcpt_held_for(c->db, address, error);
	g_autoptr(GPtrArray) held = g_ptr_array_new_with_free_func((GDestroyNotify)outbox_row_free);

	if (!ids)
		return NULL;
	for (guint i = 0; i < ids->len; i++) {
		struct outbox_row *h = db_outbox_get(c->db, g_array_index(ids, gint64, i), error);

		if (!h)
			return NULL;
		g_ptr_array_add(held, h);
	}
	return g_steal_pointer(&held);
}

static char *iso_date(gint64 when)
{
	g_autoptr(GDateTime) t = g_date_time_new_from_unix_utc(when);

	return t ? g_date_time_format(t, "%Y-%m-%d %H:%M UTC") : g_strdup("?");
}

bool policy_digest(struct reply *out, const struct bot *c, const char *address,
		   const GPtrArray *held, const char *message_id, gint64 now, GError **error)
{
	zd_autoptr(template_values) v = template_values_new();

	reply_init(out);
	for (guint i = 0; i < held->len; i++) {
		const struct outbox_row *h = held->pdata[i];
		g_autofree char *file = g_strdup_printf("mail-%u.eml", i + 1);
		g_autofree char *queued = iso_date(h->created);
		struct template_values *item = template_values_add(v, "mails");

		template_values_set(item, "subject", h->subject);
		template_values_set(item, "message_id", h->message_id);
		template_values_set(item, "kind", db_outbox_kind_name(h->kind));
		template_values_set(item, "queued", queued);
		template_values_set(item, "attachment", file);
		if (h->raw) {
			g_autofree char *text = g_strndup(h->raw, POLICY_DIGEST_ITEM_MAX);

			reply_attach(out, file, text);
		}
	}
	template_values_set(v, "bot_name", c->config->mail_name);
	template_values_set(v, "bot_address", c->config->mail_address);
	template_values_set(v, "recipient", address);
	template_values_printf(v, "count", "%u", held->len);
	if (held->len > 1)
		template_values_set(v, "several", "yes");
	template_values_printf(v, "max_per_recipient_day", "%u", c->config->mail_max_recipient_day);
	template_values_printf(v, "max_per_hour", "%u", c->config->mail_max_hour);
	if (!render_mail(out, c->config, "digest", v, error))
		return false;
	g_ptr_array_add(out->to, g_strdup(address));
	out->message_id = g_strdup(message_id);
	out->date = now;
	return true;
}
