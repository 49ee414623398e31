/*
 * The inbox: every mail ingest stored (bot/mailroom/ingest.h) is handed,
 * once and in a transaction of its own, to the parts of the mail loop
 * that take mail: series assembly first (bot/mailroom/series.h), then
 * the command language (bot/mailroom/commands.h), so that "#zeroday
 * test" in a patch finds its series. Neither calls the other to see mail.
 */
#ifndef ZERODAY_INBOX_H
#define ZERODAY_INBOX_H

#include <stdbool.h>
#include <glib.h>

#include "bot/bot.h"
#include "mail/patchmail.h"

/*
 * Mail @id as it was parsed when it was stored (caller frees with
 * patchmail_free()). A mail stored without its parse (by a zeroday before
 * schema 18), or with a parse of another layout, is parsed from its raw
 * text, and with @keep that parse is stored, so that this happens once.
 * NULL with BOT_ERROR when the store fails, with MAIL_ERROR_INVALID when
 * the parser now refuses the raw text.
 */
struct patchmail *inbox_mail(struct db *db, const struct config *config, gint64 id, bool keep,
			     GError **error);

/*
 * Dispatches up to INBOX_BATCH new mails, oldest first, each marked done
 * in its transaction. A mail the parser now refuses (a stricter parser
 * than the one that stored it) is marked done and left unused. False
 * only when the store fails.
 */
bool inbox_dispatch(const struct bot *c, gint64 now, GError **error);

/* The most mails one inbox_dispatch() takes. */
#define INBOX_BATCH 1000

#endif
