/*
 * The outbox: see outbox.h.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <string.h>

#include "bot/bot.h"
#include "bot/outbox.h"
#include "mail/compose.h"
#include "mail/maildir.h"

/* Mails sent in one call of outbox_send_due(), at most. */
#define SEND_BATCH 1000

char *outbox_message_id(const struct config *config, const char *tag)
{
	const char *at = strrchr(config->mail_address, '@');

	return compose_message_id(tag, at ? at + 1 : "localhost");
}

/* "to:ADDR" and "cc:ADDR" lines, as the outbox keeps them (caller frees). */
static char **recipient_lines(const struct reply *r)
{
	g_autoptr(GStrvBuilder) b = g_strv_builder_new();

	for (guint i = 0; i < r->to->len + r->cc->len; i++) {
		bool to = i < r->to->len;
		const char *addr = to ? r->to->pdata[i] : r->cc->pdata[i - r->to->len];
		g_autofree char *line = g_strdup_printf("%s:%s", to ? "to" : "cc", addr);

		g_strv_builder_add(b, line);
	}
	return g_strv_builder_end(b);
}

/*
 * Fills @row from @reply composed, or, when rendering failed (@cause),
 * as an OUTBOX_ERROR row that says why.
 */
static void fill_row(struct outbox_row *row, struct reply *reply, GError *cause)
{
	g_autoptr(GError) error = NULL;

	if (!cause) {
		row->raw = compose_message(reply, &error);
		cause = error;
	}
	row->subject = g_strdup(reply->subject ? reply->subject : "(not rendered)");
	row->recipients = recipient_lines(reply);
	row->in_reply_to = g_strdup(reply->in_reply_to);
	{
		g_autoptr(GStrvBuilder) b = g_strv_builder_new();

		for (guint i = 0; i < reply->references->len; i++)
			g_strv_builder_add(b, reply->references->pdata[i]);
		row->references = g_strv_builder_end(b);
	}
	if (cause) {
		g_clear_pointer(&row->raw, g_free);
		row->state = OUTBOX_ERROR;
		row->last_error = g_strdup(cause->message);
	}
}

static bool queue(const struct report_ctx *c, struct outbox_row *row, GError **error)
{
	bool added;

	if (!db_outbox_add(c->db, row, &added, error))
		return false;
	if (!added)
		return true;
	if (row->state == OUTBOX_ERROR)
		g_warning("outbox: the %s of finding %" G_GINT64_FORMAT " cannot be mailed: %s",
			  db_outbox_kind_name(row->kind), row->finding_id, row->last_error);
	else
		g_message("outbox: queued the %s of finding %" G_GINT64_FORMAT " <%s>",
			  db_outbox_kind_name(row->kind), row->finding_id, row->message_id);
	return true;
}

bool outbox_queue_report(const struct report_ctx *c, gint64 finding_id, gint64 now,
			 GError **error)
{
	zd_autoptr(finding_row) f = db_finding_get(c->db, finding_id, error);
	zd_autoptr(outbox_row) row = g_new0(struct outbox_row, 1);
	g_autofree char *tag = g_strdup_printf("f%" G_GINT64_FORMAT, finding_id);
	g_autoptr(GError) cause = NULL;
	struct reply reply;

	if (!f)
		return false;
	row->finding_id = finding_id;
	row->kind = OUTBOX_REPORT;
	row->created = now;
	row->message_id = outbox_message_id(c->config, tag);
	report_finding(&reply, c, f, row->message_id, now, &cause);
	fill_row(row, &reply, cause);
	reply_release(&reply);
	return queue(c, row, error);
}

bool outbox_queue_fixed(const struct report_ctx *c, gint64 finding_id, gint64 now,
			GError **error)
{
	g_autoptr(GError) local = NULL;
	zd_autoptr(outbox_row) report = db_outbox_of_finding(c->db, finding_id, OUTBOX_REPORT,
							     &local);
	zd_autoptr(finding_row) f = NULL;
	zd_autoptr(outbox_row) row = NULL;
	g_autofree char *tag = g_strdup_printf("f%" G_GINT64_FORMAT "-fixed", finding_id);
	g_autoptr(GError) cause = NULL;
	struct reply reply;

	if (local) {
		g_propagate_error(error, g_steal_pointer(&local));
		return false;
	}
	/* Nothing was mailed about it: there is no thread to follow up in. */
	if (!report || report->state == OUTBOX_ERROR)
		return true;
	f = db_finding_get(c->db, finding_id, error);
	if (!f)
		return false;
	row = g_new0(struct outbox_row, 1);
	row->finding_id = finding_id;
	row->kind = OUTBOX_FIXED;
	row->created = now;
	row->message_id = outbox_message_id(c->config, tag);
	report_fixed(&reply, c, f, report, row->message_id, now, &cause);
	fill_row(row, &reply, cause);
	reply_release(&reply);
	return queue(c, row, error);
}

bool outbox_send_due(const struct report_ctx *c, unsigned *sent, GError **error)
{
	g_autoptr(GPtrArray) due = db_outbox_list(c->db, OUTBOX_QUEUED, SEND_BATCH, error);
	g_autofree char *maildir = config_outbox_path(c->config);

	*sent = 0;
	if (!due)
		return false;
	for (guint i = 0; i < due->len; i++) {
		const struct outbox_row *row = due->pdata[i];
		g_autoptr(GError) why = NULL;
		g_autofree char *sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256,
								      row->message_id, -1);
		/* One name per row: a second delivery of it is no second copy. */
		g_autofree char *name = g_strdup_printf("zeroday-%08" G_GINT64_FORMAT ".%.16s",
						       row->id, sum);
		g_autofree char *path = maildir_deliver(maildir, name, row->raw,
							row->raw ? strlen(row->raw) : 0, &why);

		if (!path) {
			g_warning("outbox: <%s> not sent: %s", row->message_id, why->message);
			if (!db_outbox_failed(c->db, row->id, why->message, error))
				return false;
			continue;
		}
		if (!db_outbox_sent(c->db, row->id, g_get_real_time() / G_USEC_PER_SEC, path, error))
			return false;
		g_message("outbox: sent <%s> to %s", row->message_id, path);
		(*sent)++;
	}
	return true;
}
