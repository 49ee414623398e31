/*
 * Templates: see template.h, and templates/README.md for the language.
 *
 * A template is parsed once, line by line (a tag never spans lines), into
 * a tree of text, field, if and each nodes; every field is resolved
 * against the schema then, to the scope it belongs to, so rendering only
 * looks values up and cannot meet a name it does not know.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <stdarg.h>
#include <string.h>

#include "bot/bot.h"
#include "bot/config.h"
#include "bot/mailroom/template.h"

/* Blocks nest at most this deep. */
#define DEPTH_MAX 16
/* Templates include others at most this deep (a loop ends here). */
#define INCLUDES_MAX 4
/* A field name's longest spelling. */
#define NAME_MAX_LEN 64

enum node_kind {
	NODE_TEXT,
	NODE_FIELD,
	NODE_IF,
	NODE_EACH,
	NODE_WRAP,
};

struct node {
	enum node_kind kind;
	char *text;     /* NODE_TEXT: the literal; else the field's name */
	bool wrap;      /* NODE_FIELD: fill it to the width */
	guint scope;    /* the depth of the scope the field belongs to (0: the top) */
	bool optional;  /* the field may be missing */
	GPtrArray *body;      /* NODE_IF: when present; NODE_EACH: per item */
	GPtrArray *otherwise; /* NODE_IF: when missing */
};

struct template {
	char *origin;
	GPtrArray *body;
};

struct value {
	char *text;
	GPtrArray *items; /* struct template_values; non-NULL for a list */
};

struct template_values {
	GHashTable *fields; /* name -> struct value */
};

static void node_free(struct node *n)
{
	if (!n)
		return;
	g_free(n->text);
	if (n->body)
		g_ptr_array_unref(n->body);
	if (n->otherwise)
		g_ptr_array_unref(n->otherwise);
	g_free(n);
}

static GPtrArray *node_list_new(void)
{
	return g_ptr_array_new_with_free_func((GDestroyNotify)node_free);
}

void template_free(struct template *t)
{
	if (!t)
		return;
	g_free(t->origin);
	if (t->body)
		g_ptr_array_unref(t->body);
	g_free(t);
}

/* One tag or literal of a line, as the lexer cuts it. */
enum token_kind {
	TOKEN_TEXT,
	TOKEN_FIELD,   /* {{name}} or {{name|filter}} */
	TOKEN_IF,      /* {{#if name}} */
	TOKEN_ELSE,    /* {{#else}} */
	TOKEN_END_IF,  /* {{/if}} */
	TOKEN_EACH,    /* {{#each name}} */
	TOKEN_END_EACH, /* {{/each}} */
	TOKEN_COMMENT, /* {{! ...}} */
	TOKEN_INCLUDE, /* {{> name}} */
	TOKEN_WRAP,    /* {{#wrap}} */
	TOKEN_END_WRAP, /* {{/wrap}} */
};

struct token {
	enum token_kind kind;
	char *text;   /* TOKEN_TEXT: the literal; TOKEN_FIELD, _IF, _EACH: the name */
	char *filter; /* TOKEN_FIELD: NULL or the filter's name */
	guint line;
};

static void token_free(struct token *t)
{
	if (!t)
		return;
	g_free(t->text);
	g_free(t->filter);
	g_free(t);
}

static bool block_token(enum token_kind kind)
{
	return kind != TOKEN_TEXT && kind != TOKEN_FIELD;
}

static bool valid_name(const char *s, gsize len)
{
	if (len == 0 || len > NAME_MAX_LEN)
		return false;
	for (gsize i = 0; i < len; i++) {
		if (!g_ascii_islower(s[i]) && !g_ascii_isdigit(s[i]) && s[i] != '_' && s[i] != '-')
			return false;
	}
	return true;
}

static bool fail(GError **error, const char *origin, guint line, const char *format, ...)
	G_GNUC_PRINTF(4, 5);

static bool fail(GError **error, const char *origin, guint line, const char *format, ...)
{
	g_autofree char *what = NULL;
	va_list ap;

	va_start(ap, format);
	what = g_strdup_vprintf(format, ap);
	va_end(ap);
	g_set_error(error, BOT_ERROR, BOT_ERROR_CONFIG, "%s:%u: %s", origin, line, what);
	return false;
}

/* Parses the inside of one tag, @s of @len bytes, into @t. */
static bool parse_tag(struct token *t, const char *s, gsize len, const char *origin,
		      GError **error)
{
	g_autofree char *tag = g_strstrip(g_strndup(s, len));
	const char *name;

	if (tag[0] == '!') {
		t->kind = TOKEN_COMMENT;
		return true;
	}
	if (tag[0] == '>') {
		name = tag + 1;
		while (*name == ' ')
			name++;
		if (!valid_name(name, strlen(name)))
			return fail(error, origin, t->line, "not a template name: \"%s\"", name);
		t->kind = TOKEN_INCLUDE;
		t->text = g_strdup(name);
		return true;
	}
	{
		static const struct {
			const char *tag;
			enum token_kind kind;
		} plain[] = {
			{ "#else", TOKEN_ELSE }, { "/if", TOKEN_END_IF }, { "/each", TOKEN_END_EACH },
			{ "#wrap", TOKEN_WRAP }, { "/wrap", TOKEN_END_WRAP },
		};

		for (size_t i = 0; i < G_N_ELEMENTS(plain); i++) {
			if (strcmp(tag, plain[i].tag) == 0) {
				t->kind = plain[i].kind;
				return true;
			}
		}
	}
	if (g_str_has_prefix(tag, "#if ") || g_str_has_prefix(tag, "#each ")) {
		t->kind = tag[1] == 'i' ? TOKEN_IF : TOKEN_EACH;
		name = tag + (t->kind == TOKEN_IF ? 4 : 6);
		while (*name == ' ')
			name++;
		if (!valid_name(name, strlen(name)))
			return fail(error, origin, t->line, "not a field name: \"%s\"", name);
		t->text = g_strdup(name);
		return true;
	}
	if (tag[0] == '#' || tag[0] == '/')
		return fail(error, origin, t->line, "unknown block \"{{%s}}\"", tag);
	t->kind = TOKEN_FIELD;
	{
		const char *bar = strchr(tag, '|');
		gsize n = bar ? (gsize)(bar - tag) : strlen(tag);

		while (n > 0 && tag[n - 1] == ' ')
			n--;
		if (!valid_name(tag, n))
			return fail(error, origin, t->line, "not a field name: \"%.*s\"", (int)n, tag);
		t->text = g_strndup(tag, n);
		if (bar) {
			t->filter = g_strstrip(g_strdup(bar + 1));
			if (strcmp(t->filter, "wrap") != 0)
				return fail(error, origin, t->line, "unknown filter \"%s\" (known: wrap)",
					    t->filter);
		}
	}
	return true;
}

/*
 * Cuts @text into tokens, a line at a time. A line that holds block tags
 * and comments and nothing else but blanks gives only those tags: it
 * leaves no line in the output.
 */
static GPtrArray *lex(const char *text, const char *origin, GError **error)
{
	g_autoptr(GPtrArray) tokens = g_ptr_array_new_with_free_func((GDestroyNotify)token_free);
	const char *line = text;
	guint number = 0;

	while (*line) {
		const char *eol = strchr(line, '\n');
		const char *end = eol ? eol + 1 : line + strlen(line);
		g_autoptr(GPtrArray) here = g_ptr_array_new_with_free_func((GDestroyNotify)token_free);
		bool blocks = false, plain = false;
		const char *p = line;

		number++;
		while (p < end) {
			const char *open = g_strstr_len(p, end - p, "{{");
			const char *lit_end = open ? open : end;

			if (lit_end > p) {
				struct token *t = g_new0(struct token, 1);

				t->kind = TOKEN_TEXT;
				t->text = g_strndup(p, lit_end - p);
				t->line = number;
				for (const char *c = p; c < lit_end; c++)
					plain = plain || !g_ascii_isspace(*c);
				g_ptr_array_add(here, t);
			}
			if (!open)
				break;
			{
				const char *close = g_strstr_len(open + 2, end - open - 2, "}}");
				struct token *t = g_new0(struct token, 1);

				t->line = number;
				g_ptr_array_add(here, t);
				if (!close) {
					fail(error, origin, number, "\"{{\" without \"}}\" on its line");
					return NULL;
				}
				if (!parse_tag(t, open + 2, close - open - 2, origin, error))
					return NULL;
				if (block_token(t->kind))
					blocks = true;
				else
					plain = true;
				p = close + 2;
			}
		}
		for (guint i = 0; i < here->len; i++) {
			struct token *t = here->pdata[i];

			/* A line of block tags only: its blanks and its newline go. */
			if (blocks && !plain && t->kind == TOKEN_TEXT)
				continue;
			here->pdata[i] = NULL;
			g_ptr_array_add(tokens, t);
		}
		line = end;
	}
	return g_steal_pointer(&tokens);
}

/* What the parser knows at one depth of blocks. */
struct scope {
	const struct template_field *fields;
	const char *guard; /* the field an enclosing {{#if}} (at this depth) tests, or NULL */
};

struct parser {
	const char *origin;
	GPtrArray *tokens;
	guint at;
	struct scope scopes[DEPTH_MAX + 1];
	guint depth; /* scopes[0..depth] are open */
	guint nesting; /* blocks open */
	GPtrArray *guards; /* names tested by the enclosing {{#if}}s */
	const char *dir;   /* where {{> name}} finds name.txt; NULL: no includes */
	guint includes;    /* includes open */
};

static const struct template_field *resolve(const struct parser *p, const char *name,
					    guint *scope)
{
	for (guint d = p->depth + 1; d-- > 0;) {
		for (const struct template_field *f = p->scopes[d].fields; f && f->name; f++) {
			if (strcmp(f->name, name) == 0) {
				*scope = d;
				return f;
			}
		}
	}
	return NULL;
}

static bool guarded(const struct parser *p, const char *name)
{
	for (guint i = 0; i < p->guards->len; i++) {
		if (strcmp(p->guards->pdata[i], name) == 0)
			return true;
	}
	return false;
}

static char *known_names(const struct parser *p)
{
	g_autoptr(GString) s = g_string_new(NULL);

	for (guint d = p->depth + 1; d-- > 0;) {
		for (const struct template_field *f = p->scopes[d].fields; f && f->name; f++)
			g_string_append_printf(s, "%s%s", s->len ? ", " : "", f->name);
	}
	return g_string_free(g_steal_pointer(&s), FALSE);
}

static bool parse_nodes(struct parser *p, GPtrArray *into, const struct token **closer,
			GError **error);

/* Parses DIR/NAME.txt, named by include token @t, into @into, in the scope of @p. */
static bool include(struct parser *p, const struct token *t, GPtrArray *into, GError **error)
{
	g_autofree char *file = g_strdup_printf("%s.txt", t->text);
	g_autofree char *path = NULL;
	g_autofree char *text = NULL;
	g_autoptr(GPtrArray) tokens = NULL;
	const struct token *closer = NULL;
	struct parser sub;
	gsize len;

	if (!p->dir)
		return fail(error, p->origin, t->line, "{{> %s}}: includes need a template directory",
			    t->text);
	if (p->includes >= INCLUDES_MAX)
		return fail(error, p->origin, t->line, "{{> %s}}: included more than %u deep",
			    t->text, INCLUDES_MAX);
	path = g_build_filename(p->dir, file, NULL);
	text = config_read_file(path, TEMPLATE_SIZE_MAX, &len, error);
	if (!text)
		return false;
	if (strlen(text) != len || !g_utf8_validate(text, -1, NULL))
		return fail(error, path, 1, "not UTF-8 text without NUL bytes");
	tokens = lex(text, path, error);
	if (!tokens)
		return false;
	sub = *p;
	sub.origin = path;
	sub.tokens = tokens;
	sub.at = 0;
	sub.includes = p->includes + 1;
	if (!parse_nodes(&sub, into, &closer, error))
		return false;
	if (closer)
		return fail(error, path, closer->line, "a block closed that the file did not open");
	return true;
}

static const struct template_field *lookup(struct parser *p, const struct token *t,
					   guint *scope, GError **error)
{
	const struct template_field *f = resolve(p, t->text, scope);

	if (!f) {
		g_autofree char *known = known_names(p);

		fail(error, p->origin, t->line, "unknown field \"%s\" (known here: %s)", t->text,
		     known);
	}
	return f;
}

/*
 * Parses nodes into @into until the token that closes the enclosing
 * block (left for the caller), or the end; *@closer receives it.
 */
static bool parse_nodes(struct parser *p, GPtrArray *into, const struct token **closer,
			GError **error)
{
	*closer = NULL;
	while (p->at < p->tokens->len) {
		const struct token *t = p->tokens->pdata[p->at];
		const struct template_field *f;
		struct node *n;
		guint scope;

		if (t->kind == TOKEN_ELSE || t->kind == TOKEN_END_IF || t->kind == TOKEN_END_EACH ||
		    t->kind == TOKEN_END_WRAP) {
			*closer = t;
			return true;
		}
		p->at++;
		if (t->kind == TOKEN_COMMENT)
			continue;
		if (t->kind == TOKEN_INCLUDE) {
			if (!include(p, t, into, error))
				return false;
			continue;
		}
		if (t->kind == TOKEN_WRAP) {
			if (p->nesting >= DEPTH_MAX)
				return fail(error, p->origin, t->line, "blocks nested deeper than %u",
					    DEPTH_MAX);
			n = g_new0(struct node, 1);
			n->kind = NODE_WRAP;
			n->body = node_list_new();
			g_ptr_array_add(into, n);
			p->nesting++;
			if (!parse_nodes(p, n->body, closer, error))
				return false;
			p->nesting--;
			if (!*closer || (*closer)->kind != TOKEN_END_WRAP)
				return fail(error, p->origin, *closer ? (*closer)->line : t->line,
					    "{{#wrap}} (line %u) is not closed by {{/wrap}}", t->line);
			p->at++;
			*closer = NULL;
			continue;
		}
		if (t->kind == TOKEN_TEXT) {
			n = g_new0(struct node, 1);
			n->kind = NODE_TEXT;
			n->text = g_strdup(t->text);
			g_ptr_array_add(into, n);
			continue;
		}
		f = lookup(p, t, &scope, error);
		if (!f)
			return false;
		n = g_new0(struct node, 1);
		n->text = g_strdup(t->text);
		n->scope = scope;
		n->optional = f->optional;
		g_ptr_array_add(into, n);
		if (t->kind == TOKEN_FIELD) {
			n->kind = NODE_FIELD;
			n->wrap = t->filter != NULL;
			if (f->type != TEMPLATE_TEXT)
				return fail(error, p->origin, t->line,
					    "\"%s\" is a list: use {{#each %s}}", t->text, t->text);
			if (f->optional && !guarded(p, t->text))
				return fail(error, p->origin, t->line,
					    "\"%s\" may be missing: use it inside {{#if %s}}",
					    t->text, t->text);
			continue;
		}
		if (p->nesting >= DEPTH_MAX)
			return fail(error, p->origin, t->line, "blocks nested deeper than %u",
				    DEPTH_MAX);
		p->nesting++;
		n->body = node_list_new();
		if (t->kind == TOKEN_IF) {
			n->kind = NODE_IF;
			g_ptr_array_add(p->guards, t->text);
			if (!parse_nodes(p, n->body, closer, error))
				return false;
			g_ptr_array_remove_index(p->guards, p->guards->len - 1);
			if (*closer && (*closer)->kind == TOKEN_ELSE) {
				p->at++;
				n->otherwise = node_list_new();
				if (!parse_nodes(p, n->otherwise, closer, error))
					return false;
			}
			if (!*closer || (*closer)->kind != TOKEN_END_IF)
				return fail(error, p->origin, *closer ? (*closer)->line : t->line,
					    "{{#if %s}} (line %u) is not closed by {{/if}}", t->text,
					    t->line);
		} else {
			n->kind = NODE_EACH;
			if (f->type != TEMPLATE_LIST)
				return fail(error, p->origin, t->line,
					    "\"%s\" is not a list: use {{%s}}", t->text, t->text);
			p->depth++;
			p->scopes[p->depth] = (struct scope){ .fields = f->items };
			if (!parse_nodes(p, n->body, closer, error))
				return false;
			p->depth--;
			if (!*closer || (*closer)->kind != TOKEN_END_EACH)
				return fail(error, p->origin, *closer ? (*closer)->line : t->line,
					    "{{#each %s}} (line %u) is not closed by {{/each}}", t->text,
					    t->line);
		}
		p->nesting--;
		p->at++;
		*closer = NULL;
	}
	return true;
}

static struct template *parse(const char *text, const char *origin, const char *dir,
			      const struct template_field *schema, GError **error)
{
	g_autoptr(GPtrArray) tokens = NULL;
	g_autoptr(GPtrArray) guards = g_ptr_array_new();
	zd_autoptr(template) t = NULL;
	const struct token *closer = NULL;
	struct parser p = { 0 };

	if (!g_utf8_validate(text, -1, NULL)) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_CONFIG, "%s: not UTF-8 text", origin);
		return NULL;
	}
	tokens = lex(text, origin, error);
	if (!tokens)
		return NULL;
	t = g_new0(struct template, 1);
	t->origin = g_strdup(origin);
	t->body = node_list_new();
	p.origin = origin;
	p.tokens = tokens;
	p.scopes[0].fields = schema;
	p.guards = guards;
	p.dir = dir;
	if (!parse_nodes(&p, t->body, &closer, error))
		return NULL;
	if (closer) {
		fail(error, origin, closer->line, "%s without its opening block",
		     closer->kind == TOKEN_ELSE ? "{{#else}}"
		     : closer->kind == TOKEN_END_IF ? "{{/if}}"
		     : closer->kind == TOKEN_END_WRAP ? "{{/wrap}}" : "{{/each}}");
		return NULL;
	}
	return g_steal_pointer(&t);
}

struct template *template_parse(const char *text, const char *origin,
				const struct template_field *schema, GError **error)
{
	return parse(text, origin, NULL, schema, error);
}

struct template *template_load(const char *dir, const char *name,
			       const struct template_field *schema, GError **error)
{
	g_autofree char *file = g_strdup_printf("%s.txt", name);
	g_autofree char *path = g_build_filename(dir, file, NULL);
	g_autofree char *text = NULL;
	gsize len;

	text = config_read_file(path, TEMPLATE_SIZE_MAX, &len, error);
	if (!text)
		return NULL;
	if (strlen(text) != len) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_CONFIG, "%s: holds a NUL byte", path);
		return NULL;
	}
	return parse(text, path, dir, schema, error);
}

/* Values. */

static void value_free(struct value *v)
{
	g_free(v->text);
	if (v->items)
		g_ptr_array_unref(v->items);
	g_free(v);
}

struct template_values *template_values_new(void)
{
	struct template_values *v = g_new0(struct template_values, 1);

	v->fields = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
					  (GDestroyNotify)value_free);
	return v;
}

void template_values_free(struct template_values *v)
{
	if (!v)
		return;
	g_hash_table_unref(v->fields);
	g_free(v);
}

void template_values_set(struct template_values *v, const char *name, const char *text)
{
	struct value *value;

	if (!text) {
		g_hash_table_remove(v->fields, name);
		return;
	}
	value = g_new0(struct value, 1);
	value->text = g_strdup(text);
	g_hash_table_replace(v->fields, g_strdup(name), value);
}

void template_values_printf(struct template_values *v, const char *name, const char *format,
			    ...)
{
	g_autofree char *text = NULL;
	va_list ap;

	va_start(ap, format);
	text = g_strdup_vprintf(format, ap);
	va_end(ap);
	template_values_set(v, name, text);
}

static struct value *list_of(struct template_values *v, const char *name)
{
	struct value *value = g_hash_table_lookup(v->fields, name);

	if (!value || !value->items) {
		value = g_new0(struct value, 1);
		value->items = g_ptr_array_new_with_free_func((GDestroyNotify)template_values_free);
		g_hash_table_replace(v->fields, g_strdup(name), value);
	}
	return value;
}

struct template_values *template_values_add(struct template_values *v, const char *name)
{
	struct template_values *item = template_values_new();

	g_ptr_array_add(list_of(v, name)->items, item);
	return item;
}

void template_values_set_empty(struct template_values *v, const char *name)
{
	list_of(v, name);
}

/* Rendering. */

/* Appends @prefix without its trailing blanks: the start of an empty line. */
static void append_blank_line_prefix(GString *out, const char *prefix)
{
	gsize n = strlen(prefix);

	while (n > 0 && g_ascii_isspace(prefix[n - 1]))
		n--;
	g_string_append_len(out, prefix, (gssize)n);
}

void template_fill(GString *out, const char *text, guint column, const char *indent,
		   guint width)
{
	g_auto(GStrv) paragraphs = NULL;
	guint indent_width = (guint)g_utf8_strlen(indent, -1);
	bool first = true;

	/* Paragraphs are separated by blank lines. */
	paragraphs = g_regex_split_simple("\n[ \t]*\n", text, 0, 0);
	for (char **para = paragraphs; *para; para++) {
		g_auto(GStrv) lines = g_strsplit(*para, "\n", -1);
		guint col = column;
		bool line_empty = true;

		if (!first) {
			g_string_append_c(out, '\n');
			append_blank_line_prefix(out, indent);
			g_string_append_printf(out, "\n%s", indent);
			col = indent_width;
		}
		for (char **l = lines; *l; l++) {
			g_auto(GStrv) words = NULL;

			/* An example, a quote or a command: as it is, on its own line. */
			if (**l == ' ' || **l == '\t' || **l == '>' || **l == '#') {
				if (!line_empty)
					g_string_append_printf(out, "\n%s", indent);
				g_string_append(out, *l);
				/* The next words start a line of their own. */
				col = width;
				line_empty = false;
				continue;
			}
			words = g_strsplit_set(*l, " \t", -1);
			for (char **w = words; *w; w++) {
				guint len;

				if (!**w)
					continue;
				len = (guint)g_utf8_strlen(*w, -1);
				if (!line_empty && col + 1 + len > width) {
					g_string_append_printf(out, "\n%s", indent);
					col = indent_width;
					line_empty = true;
				}
				if (!line_empty) {
					g_string_append_c(out, ' ');
					col++;
				}
				g_string_append(out, *w);
				col += len;
				line_empty = false;
			}
		}
		first = false;
	}
}

struct render {
	const struct template *t;
	const struct template_values *scopes[DEPTH_MAX + 1];
	guint depth;
	GString *out;
	gsize line_start;  /* where the current output line starts */
	bool line_literal; /* only literal text stands on it so far */
};

static const struct value *value_of(const struct render *r, const struct node *n)
{
	g_assert(n->scope <= r->depth);
	return g_hash_table_lookup(r->scopes[n->scope]->fields, n->text);
}

static bool present(const struct value *v)
{
	return v && (v->items ? v->items->len > 0 : v->text && *v->text);
}

static void emit_literal(struct render *r, const char *text)
{
	const char *nl = strrchr(text, '\n');

	g_string_append(r->out, text);
	if (nl) {
		r->line_start = r->out->len - strlen(nl + 1);
		r->line_literal = true;
	}
}

/* Appends a field's text: continuation lines repeat the literal prefix of its line. */
static void emit_field(struct render *r, const struct node *n, const char *text)
{
	g_autofree char *prefix = r->line_literal
		? g_strndup(r->out->str + r->line_start, r->out->len - r->line_start)
		: g_strdup("");
	gsize before = r->out->len;

	if (n->wrap) {
		template_fill(r->out, text, (guint)g_utf8_strlen(prefix, -1), prefix,
			      TEMPLATE_WIDTH);
	} else {
		for (const char *p = text; *p;) {
			const char *nl = strchr(p, '\n');

			if (!nl) {
				g_string_append(r->out, p);
				break;
			}
			g_string_append_len(r->out, p, nl - p + 1);
			p = nl + 1;
			if (*p == '\n')
				append_blank_line_prefix(r->out, prefix);
			else if (*p)
				g_string_append(r->out, prefix);
		}
	}
	if (memchr(r->out->str + before, '\n', r->out->len - before)) {
		const char *last = strrchr(r->out->str + before, '\n');

		r->line_start = (gsize)(last + 1 - r->out->str);
	}
	r->line_literal = false;
}

static bool render_nodes(struct render *r, GPtrArray *nodes, GError **error);

/* Renders a {{#wrap}} block's body, then fills it at the current column. */
static bool render_wrap(struct render *r, const struct node *n, GError **error)
{
	g_autoptr(GString) inner = g_string_new(NULL);
	GString *outer = r->out;
	gsize line_start = r->line_start;
	bool line_literal = r->line_literal;
	g_autofree char *prefix = r->line_literal
		? g_strndup(outer->str + r->line_start, outer->len - r->line_start)
		: g_strdup("");
	bool ok;

	r->out = inner;
	r->line_start = 0;
	r->line_literal = true;
	ok = render_nodes(r, n->body, error);
	r->out = outer;
	r->line_start = line_start;
	r->line_literal = line_literal;
	if (!ok)
		return false;
	/* A trailing newline of the block stays after the filled text. */
	{
		bool newline = inner->len && inner->str[inner->len - 1] == '\n';
		gsize before = outer->len;

		if (newline)
			g_string_truncate(inner, inner->len - 1);
		template_fill(outer, inner->str, (guint)g_utf8_strlen(prefix, -1), prefix,
			      TEMPLATE_WIDTH);
		if (newline)
			g_string_append_c(outer, '\n');
		if (memchr(outer->str + before, '\n', outer->len - before)) {
			r->line_start = (gsize)(strrchr(outer->str + before, '\n') + 1 - outer->str);
			r->line_literal = true;
		}
		if (!newline)
			r->line_literal = false;
	}
	return true;
}

static bool render_nodes(struct render *r, GPtrArray *nodes, GError **error)
{
	for (guint i = 0; i < nodes->len; i++) {
		const struct node *n = nodes->pdata[i];
		const struct value *v;

		if (n->kind == NODE_TEXT) {
			emit_literal(r, n->text);
			continue;
		}
		v = n->kind == NODE_WRAP ? NULL : value_of(r, n);
		switch (n->kind) {
		case NODE_FIELD:
			if (!v || !v->text) {
				/* The parser let it through only where it is never missing. */
				g_set_error(error, BOT_ERROR, BOT_ERROR_FAILED,
					    "%s: the field \"%s\" has no value", r->t->origin, n->text);
				return false;
			}
			emit_field(r, n, v->text);
			break;
		case NODE_IF: {
			GPtrArray *branch = present(v) ? n->body : n->otherwise;

			if (branch && !render_nodes(r, branch, error))
				return false;
			break;
		}
		case NODE_EACH:
			if (!v && !n->optional) {
				g_set_error(error, BOT_ERROR, BOT_ERROR_FAILED,
					    "%s: the list \"%s\" has no value", r->t->origin, n->text);
				return false;
			}
			for (guint k = 0; v && v->items && k < v->items->len; k++) {
				r->scopes[++r->depth] = v->items->pdata[k];
				if (!render_nodes(r, n->body, error))
					return false;
				r->depth--;
			}
			break;
		case NODE_WRAP:
			if (!render_wrap(r, n, error))
				return false;
			break;
		case NODE_TEXT:
			break;
		}
	}
	return true;
}

char *template_render(const struct template *t, const struct template_values *v,
		      GError **error)
{
	g_autoptr(GString) out = g_string_new(NULL);
	struct render r = { .t = t, .out = out, .line_literal = true };

	r.scopes[0] = v;
	if (!render_nodes(&r, t->body, error))
		return NULL;
	return g_string_free(g_steal_pointer(&out), FALSE);
}
