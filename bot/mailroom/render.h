/*
 * The renderer: one table of the templates zeroday writes mail with
 * ([mail] templates, templates/README.md), each with its schema (the
 * fields it may use). The templates are checked in one loop at start-up
 * and on a reload; a mail is rendered by name. What fills the fields is
 * the sender's: report.c (findings), series.c (series replies),
 * commands.c (command answers), policy.c (digests), outbox.c (test and
 * clean mails).
 */
#ifndef ZERODAY_RENDER_H
#define ZERODAY_RENDER_H

#include <stdbool.h>
#include <glib.h>

#include "bot/config.h"
#include "bot/mailroom/template.h"
#include "mail/compose.h"

struct render_template {
	const char *name;                    /* DIR/NAME.txt */
	const struct template_field *schema;
};

/* The template called @name, or NULL. */
const struct render_template *render_find(const char *name);

/*
 * Checks that every template of the table loads from @dir against its
 * schema; BOT_ERROR_CONFIG naming the file and line of the first that
 * does not.
 */
bool render_check_templates(const char *dir, GError **error);

/*
 * Renders template @name (one of the table's) of [mail] templates with
 * @v into @out: its Subject: line, its body, and the bot as From.
 */
bool render_mail(struct reply *out, const struct config *config, const char *name,
		 const struct template_values *v, GError **error);

#endif
