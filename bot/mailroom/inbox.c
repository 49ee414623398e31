/*
 * The inbox: see inbox.h.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include "bot/bot.h"
#include "bot/config.h"
#include "bot/mailroom/commands.h"
#include "bot/mailroom/inbox.h"
#include "bot/mailroom/series.h"
#include "bot/store/db.h"
#include "mail/patchmail.h"

struct patchmail *inbox_mail(struct db *db, const struct config *config, gint64 id, bool keep,
			     GError **error)
{
	g_autoptr(GBytes) parse = NULL;
	g_autoptr(GError) local = NULL;
	g_autofree char *raw = NULL;
	struct patchmail *m;
	gsize len = 0;

	if (!db_mail_parse(db, id, &parse, error))
		return NULL;
	if (parse) {
		m = patchmail_unpack(parse, &local);
		if (m)
			return m;
		g_debug("mail %" G_GINT64_FORMAT ": parsed again: %s", id, local->message);
		g_clear_pointer(&parse, g_bytes_unref);
	}
	raw = db_mail_raw(db, id, &len, error);
	if (!raw)
		return NULL;
	m = patchmail_parse(raw, len, config->mail_max_size, error);
	if (m && keep) {
		parse = patchmail_pack(m);
		if (!db_mail_set_parse(db, id, parse, error)) {
			patchmail_free(m);
			return NULL;
		}
	}
	return m;
}

/* Hands mail @mail to those who take mail; in the caller's transaction. */
static bool dispatch_one(const struct bot *c, const struct mail_row *mail, gint64 now,
			 GError **error)
{
	g_autoptr(GError) local = NULL;
	zd_autoptr(patchmail) m = inbox_mail(c->db, c->config, mail->id, true, &local);
	bool command = false;

	if (!m && local->domain == BOT_ERROR) {
		g_propagate_error(error, g_steal_pointer(&local));
		return false;
	}
	if (!m) {
		/* Parsed when it was stored: a refusal now is a newer parser's. */
		g_message("mail %" G_GINT64_FORMAT ": left unused: %s", mail->id, local->message);
		return true;
	}
	return series_take(c, mail, m, now, error) &&
	       commands_take(c, mail, m, now, &command, error);
}

bool inbox_dispatch(const struct bot *c, gint64 now, GError **error)
{
	g_autoptr(GPtrArray) mails = db_mail_list(c->db, MAIL_NEW, INBOX_BATCH, error);

	if (!mails)
		return false;
	for (guint i = 0; i < mails->len; i++) {
		const struct mail_row *mail = mails->pdata[i];

		if (!db_tx_begin(c->db, error))
			return false;
		if (!dispatch_one(c, mail, now, error) ||
		    !db_mail_set_state(c->db, mail->id, MAIL_DONE, error) ||
		    !db_tx_commit(c->db, error)) {
			db_tx_rollback(c->db);
			return false;
		}
	}
	return true;
}
