/*
 * Report and reply texts: a small substitution language over named
 * fields, checked when a template is loaded, so that a mistake in an
 * edited template stops zeroday at start-up instead of leaving a blank in
 * a mail. templates/README.md is the language's reference; in short:
 *
 *   {{name}}                    the field's text
 *   {{name|wrap}}               its paragraphs filled to 72 columns
 *   {{#if name}}..{{#else}}..{{/if}}   a field that is present (a list: not empty)
 *   {{#each name}}..{{/each}}   once per item of a list; inside, the item's
 *                               fields (and the enclosing ones)
 *   {{! a comment}}
 *   {{> name}}                  the template DIR/name.txt, in place (template_load() only)
 *
 * A line that holds nothing but block tags and blanks leaves no line in
 * the output. When a value of several lines replaces a tag, each of its
 * lines after the first starts with the text that stands before the tag
 * on its line, if that text is all literal ("  >> " before an excerpt).
 *
 * Each template is checked against a schema: the fields it may use,
 * their type, and whether they may be missing. An unknown field, a list
 * used as text (or text as a list), a field that may be missing used
 * outside an {{#if}} on it, an unknown filter or an unbalanced block is
 * an error naming the file and line.
 */
#ifndef ZERODAY_TEMPLATE_H
#define ZERODAY_TEMPLATE_H

#include <stdbool.h>
#include <glib.h>

#include "engine/engine.h"

/* The column at which the wrap filter fills text. */
#define TEMPLATE_WIDTH 72
/* The largest template file read. */
#define TEMPLATE_SIZE_MAX (256 * 1024)

enum template_type {
	TEMPLATE_TEXT,
	TEMPLATE_LIST,
};

/* One field a template may use. Arrays of them end with a NULL name. */
struct template_field {
	const char *name;
	enum template_type type;
	bool optional;                       /* may be missing: use it under {{#if}} */
	const struct template_field *items;  /* TEMPLATE_LIST: each item's fields */
};

struct template;

/*
 * Parses @text against @schema; @origin names it in errors ("FILE:LINE:
 * ..."). Returns NULL with BOT_ERROR_CONFIG when the template is not
 * valid. The schema is borrowed and must outlive the template.
 */
struct template *template_parse(const char *text, const char *origin,
				const struct template_field *schema, GError **error);

/*
 * Reads DIR/NAME.txt (a regular file, at most TEMPLATE_SIZE_MAX bytes)
 * and parses it as template_parse() does; {{> other}} includes
 * DIR/other.txt, checked against the same schema.
 */
struct template *template_load(const char *dir, const char *name,
			       const struct template_field *schema, GError **error);

void template_free(struct template *t);
ZD_AUTOPTR_DEFINE(template, template_free)

/* The values of one rendering: texts and lists of items, by field name. */
struct template_values;

struct template_values *template_values_new(void);
void template_values_free(struct template_values *v);
ZD_AUTOPTR_DEFINE(template_values, template_values_free)

/* Sets field @name to a copy of @text; NULL leaves it missing. */
void template_values_set(struct template_values *v, const char *name, const char *text);

/* Sets field @name to printf-formatted text. */
void template_values_printf(struct template_values *v, const char *name, const char *format,
			    ...) G_GNUC_PRINTF(3, 4);

/*
 * Appends an item to list @name (made empty first if it was not set) and
 * returns it, to be filled; it belongs to @v.
 */
struct template_values *template_values_add(struct template_values *v, const char *name);

/* Marks list @name present and empty (an {{#if}} on it is false). */
void template_values_set_empty(struct template_values *v, const char *name);

/*
 * Renders @t with @v (caller frees). A field the schema says is always
 * there but @v lacks is an error: a report is never sent with a hole.
 */
char *template_render(const struct template *t, const struct template_values *v,
		      GError **error);

/*
 * Appends @text to @out with its paragraphs (separated by blank lines)
 * filled to @width columns, the first line starting at column @column;
 * later lines start with @indent. A word longer than the width stands on
 * a line of its own. A line that starts with a blank, '>' or '#' (an
 * example, a quote, a command) is kept as it is, on a line of its own.
 */
void template_fill(GString *out, const char *text, guint column, const char *indent,
		   guint width);

#endif
