/*
 * Reports: see report.h. A finding's fields become template values here;
 * the words are the templates'.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <errno.h>
#include <string.h>

#include <gio/gio.h>

#include "bot/bot.h"
#include "bot/mailroom/render.h"
#include "bot/mailroom/policy.h"
#include "bot/mailroom/report.h"
#include "bot/status.h"
#include "bot/mailroom/template.h"
#include "engine/bisect.h"
#include "engine/boot.h"
#include "engine/build.h"
#include "engine/diag.h"
#include "engine/initramfs.h"
#include "engine/maintainers.h"
#include "mail/address.h"

/* The largest source file read for a diagnostic's context. */
#define SOURCE_MAX (4 * 1024 * 1024)
/* A source line shown in a report is cut at this many bytes. */
#define SOURCE_LINE_MAX 200


/*
 * How often boot failure @f showed, as seen: in *@shown of *@boots boots
 * of the commits that carry its culprit (the head's routine boots and
 * the bisection's steps at or after the culprit; the revert check is not
 * one). Without steps, the head's boots.
 */
static void boots_seen(const struct bot *c, const struct finding_row *f, unsigned *shown,
		       unsigned *boots)
{
	*shown = *boots = 0;
	for (guint i = 0; f->steps && i < f->steps->len; i++) {
		const struct finding_step *st = f->steps->pdata[i];

		if (st->role == BISECT_ROLE_REVERT ||
		    repo_is_ancestor(c->repo, f->culprit, st->commit, NULL) != 1)
			continue;
		*shown += st->failures;
		*boots += st->runs;
	}
	if (*boots == 0) {
		*shown = f->failures;
		*boots = f->runs;
	}
}

/*
 * The template of @f's report. A boot failure is intermittent only when
 * a boot of a commit that carries it came out clean: a failure seen every
 * time is never called partial, whatever the search estimated.
 */
static const char *kind_of(const struct bot *c, const struct finding_row *f)
{
	unsigned shown, boots;

	if (f->state == FINDING_INCONCLUSIVE)
		return "inconclusive";
	switch (f->kind) {
	case FINDING_BUILD_ERROR:
		return "build-error";
	case FINDING_BUILD_WARNING:
		return "build-warning";
	case FINDING_BOOT:
		boots_seen(c, f, &shown, &boots);
		return f->intermittent || shown < boots ? "boot-intermittent" : "boot-failure";
	}
	g_assert_not_reached();
}


static char *short_id(const char *oid)
{
	return g_strndup(oid ? oid : "-", 12);
}

/* @text as a report may show it: valid UTF-8, tabs kept, other control characters gone. */
static char *printable(const char *text, gsize len)
{
	g_autofree char *valid = g_utf8_make_valid(text, (gssize)len);
	GString *s = g_string_new(NULL);

	for (const char *p = valid; *p; p++) {
		if ((unsigned char)*p >= 0x20 || *p == '\t' || *p == '\n')
			g_string_append_c(s, *p);
	}
	return g_string_free(s, FALSE);
}

/*
 * The lines of @file around @line in @commit, numbered, the line itself
 * marked with "> "; NULL when the file cannot be read there.
 */
static char *source_context(struct repo *repo, const char *commit, const char *file,
			    unsigned line)
{
	g_autoptr(GError) error = NULL;
	g_autofree char *text = NULL;
	g_auto(GStrv) lines = NULL;
	GString *s;
	gsize len;
	guint n;

	if (!file || !*file || line == 0 || file[0] == '/')
		return NULL;
	text = repo_file_at(repo, commit, file, SOURCE_MAX, &len, &error);
	if (!text) {
		g_debug("report: no source for %s:%u at %.12s: %s", file, line, commit,
			error->message);
		return NULL;
	}
	lines = g_strsplit(text, "\n", -1);
	n = g_strv_length(lines);
	if (line > n)
		return NULL;
	s = g_string_new(NULL);
	for (guint i = line > REPORT_CONTEXT_LINES ? line - REPORT_CONTEXT_LINES : 1;
	     i <= MIN(n, line + REPORT_CONTEXT_LINES); i++) {
		g_autofree char *shown = printable(lines[i - 1], MIN(strlen(lines[i - 1]),
								     SOURCE_LINE_MAX));

		g_string_append_printf(s, "%s%6u\t%s\n", i == line ? "> " : "  ", i, shown);
	}
	g_string_truncate(s, s->len ? s->len - 1 : 0);
	return g_string_free(s, FALSE);
}

/* "Tue, 14 Nov 2023 22:13:20 +0100", in the author's zone. */
static char *format_date(gint64 when, int offset_minutes)
{
	g_autoptr(GTimeZone) tz = g_time_zone_new_offset(offset_minutes * 60);
	g_autoptr(GDateTime) utc = g_date_time_new_from_unix_utc(when);
	g_autoptr(GDateTime) local = utc && tz ? g_date_time_to_timezone(utc, tz) : NULL;

	return local ? g_date_time_format(local, "%a, %d %b %Y %H:%M:%S %z")
		     : g_strdup_printf("@%" G_GINT64_FORMAT, when);
}

/* The recipients of one report: one address once, never the bot, at most @max. */
struct recipients {
	GPtrArray *to;
	GPtrArray *cc;
	GHashTable *seen; /* address_key() */
	unsigned max;
};

static void recipient_add(struct recipients *r, bool to, const char *normalized)
{
	g_autofree char *key = NULL;

	if (!normalized)
		return;
	key = address_key(normalized);
	if (r->to->len + r->cc->len >= r->max || g_hash_table_contains(r->seen, key))
		return;
	g_hash_table_add(r->seen, g_steal_pointer(&key));
	g_ptr_array_add(to ? r->to : r->cc, g_strdup(normalized));
}

/* Adds @name <@addr>, or the written address @text, when it is one. */
static void recipient_person(struct recipients *r, bool to, const char *name, const char *addr,
			     const char *text)
{
	g_autoptr(GError) error = NULL;
	g_autofree char *normalized = text ? address_normalize(text, &error)
					   : address_format(name, addr, &error);

	if (!normalized) {
		g_message("report: a recipient is left out: %s", error->message);
		return;
	}
	recipient_add(r, to, normalized);
}

/* Adds the written address @text when it is one; garbage is dropped quietly. */
static void recipient_text(struct recipients *r, const char *text)
{
	g_autoptr(GError) error = NULL;
	g_autofree char *normalized = address_normalize(text, &error);

	if (!normalized) {
		g_debug("report: get_maintainer.pl printed a line that is no address: %s",
			error->message);
		return;
	}
	recipient_add(r, false, normalized);
}

/* Adds each address of @list, a tree's normalized ones. */
static void recipient_list(struct recipients *r, bool to, char **list)
{
	for (char **a = list; a && *a; a++)
		recipient_person(r, to, NULL, NULL, *a);
}

/*
 * Cc's the maintainers, reviewers and lists of the files @culprit touches,
 * as its own tree's scripts/get_maintainer.pl names them. It runs only
 * sandboxed; whatever fails is a log line, and the report goes out
 * without them.
 */
void report_prefetch(const struct bot *c, const char *culprit, struct maintainers *m)
{
	const struct maintainers_opts opts = { .sandbox = true };
	g_autoptr(GError) error = NULL;

	if (!c->config->build_sandbox) {
		g_info("report: %.12s: get_maintainer.pl is not run without the sandbox", culprit);
		return;
	}
	if (maintainers_of_commit(m, c->repo, culprit, &opts, &error))
		return;
	if (g_error_matches(error, ENGINE_ERROR, ENGINE_ERROR_NOT_FOUND))
		g_info("report: %.12s: no get_maintainer.pl: %s", culprit, error->message);
	else
		g_message("report: %.12s: no recipients from get_maintainer.pl: %s", culprit,
			  error->message);
}

static void recipient_maintainers(struct recipients *r, const struct bot *c,
				  const char *culprit)
{
	struct maintainers asked;
	const struct maintainers *m = &asked;

	maintainers_init(&asked);
	if (c->maintainers && c->maintainers_of && strcmp(c->maintainers_of, culprit) == 0)
		m = c->maintainers;
	else
		report_prefetch(c, culprit, &asked);
	for (char **p = m->people; *p; p++)
		recipient_text(r, *p);
	for (char **l = m->lists; *l; l++)
		recipient_text(r, *l);
	maintainers_release(&asked);
}

/*
 * The recipients of the report on @f (not a follow-up). A private tree's
 * reports go to its maintainers' addresses (--cc) only. Otherwise: To the
 * culprit's author; Cc the committer, the Signed-off-by people, the
 * archive's list ([mail] archive-list), the tree's lists and
 * maintainers, and those get_maintainer.pl names. An inconclusive
 * finding blames nobody: the tree's people, then the suspects' authors.
 */
static void fill_recipients(struct recipients *r, const struct bot *c,
			    const struct tree_row *tree, const struct finding_row *f,
			    const struct repo_people *people)
{
	const char *archive = policy_archive_list(c->config, tree);

	if (tree->private) {
		recipient_list(r, true, tree->recipients);
	} else if (f->state == FINDING_INCONCLUSIVE) {
		recipient_list(r, true, tree->lists);
		if (archive)
			recipient_person(r, false, NULL, NULL, archive);
		recipient_list(r, true, tree->recipients);
		for (size_t i = 0; f->suspects && f->suspects[i]; i++) {
			zd_autoptr(repo_people) p = repo_people_of(c->repo, f->suspects[i], NULL);

			if (p)
				recipient_person(r, r->to->len == 0, p->author_name,
						 p->author_email, NULL);
		}
	} else {
		recipient_person(r, true, people->author_name, people->author_email, NULL);
		if (archive)
			recipient_person(r, false, NULL, NULL, archive);
		recipient_person(r, false, people->committer_name, people->committer_email, NULL);
		for (char **s = people->signed_off_by; *s; s++)
			recipient_person(r, false, NULL, NULL, *s);
		recipient_list(r, false, tree->lists);
		recipient_list(r, false, tree->recipients);
		recipient_maintainers(r, c, f->culprit);
	}
}

/* The text of file @path, at most @max bytes: the last ones, with a note where cut. */
static char *read_tail(const char *path, gsize max)
{
	g_autoptr(GMappedFile) map = path ? g_mapped_file_new(path, FALSE, NULL) : NULL;
	gsize len;
	const char *data;

	if (!map)
		return NULL;
	len = g_mapped_file_get_length(map);
	data = g_mapped_file_get_contents(map);
	if (len <= max)
		return printable(data ? data : "", len);
	{
		g_autofree char *tail = printable(data + len - max, max);

		return g_strdup_printf("[zeroday: the first %" G_GSIZE_FORMAT " of %" G_GSIZE_FORMAT
				       " bytes are not shown]\n%s", len - max, len, tail);
	}
}

/* "new error", or with @numbered or more than one, "1 new error", "2 new errors". */
static char *count_of(unsigned n, const char *what, bool numbered)
{
	if (n == 1 && !numbered)
		return g_strdup_printf("new %s", what);
	return g_strdup_printf("%u new %s%s", n, what, n == 1 ? "" : "s");
}

/* The line over a report's diagnostics: "The new error:", "The 2 new errors and 1 new warning:". */
static char *diags_heading(unsigned errors, unsigned warnings)
{
	g_autofree char *e = count_of(errors, "error", warnings > 0);
	g_autofree char *w = count_of(warnings, "warning", errors > 0);

	if (errors && warnings)
		return g_strdup_printf("The %s and %s:", e, w);
	return g_strdup_printf("The %s:", errors ? e : w);
}

/* Adds build finding @f's diagnostic to the list "diags" of @v. */
/* The targets finding @f showed on: its own, then the others (f->also). */
static char **finding_targets(const struct finding_row *f)
{
	g_autofree char *all = g_strjoin(" ", f->target, f->also ? f->also : "", NULL);

	return g_strsplit_set(g_strstrip(all), " ", -1);
}

/* Adds to @also the targets @f showed on that are not @own and not in it yet. */
static void add_also(GPtrArray *also, const struct finding_row *f, const char *own)
{
	g_auto(GStrv) targets = finding_targets(f);

	for (char **t = targets; *t; t++) {
		if (**t && strcmp(*t, own) != 0 &&
		    !g_ptr_array_find_with_equal_func(also, *t, g_str_equal, NULL))
			g_ptr_array_add(also, g_strdup(*t));
	}
}

/*
 * Adds @f's diagnostic to @v's "diags"; @on (NULL: none; freed here) names
 * the targets it showed on when the report's own target is not one of them.
 */
static void add_diag(struct template_values *v, const struct bot *c,
		     const struct finding_row *f, char *on)
{
	g_autofree char *targets = on;
	struct template_values *d;
	g_autofree char *source = NULL;

	if (!f->message)
		return;
	d = template_values_add(v, "diags");
	source = source_context(c->repo, f->culprit, f->file, f->line);
	if (f->line)
		template_values_printf(d, "location", "%s:%u:%u", f->file, f->line, f->column);
	else
		template_values_set(d, "location", *f->file ? f->file : "(no file)");
	template_values_set(d, "kind", diag_kind_name(f->diag_kind));
	template_values_set(d, "message", f->message);
	template_values_set(d, "source", source);
	template_values_set(d, "on", targets);
}

/*
 * Whether @f's culprit is shown to be the culprit: a build's diagnostic
 * is new against the culprit's parent every time it is built; a boot
 * failure's culprit, when reverting it on the head made the failure go.
 */
static bool culprit_verified(const struct finding_row *f)
{
	if (f->state == FINDING_INCONCLUSIVE)
		return false;
	if (f->kind != FINDING_BOOT)
		return true;
	for (guint i = 0; f->steps && i < f->steps->len; i++) {
		const struct finding_step *st = f->steps->pdata[i];

		if (st->role == BISECT_ROLE_REVERT && st->result == BISECT_GOOD)
			return true;
	}
	return false;
}

/*
 * The revert check of the last commit reverted, all its rounds together:
 * they may alternate with boots of that commit itself.
 */
static void fill_revert(struct template_values *v, const struct finding_row *f)
{
	const struct finding_step *last = NULL;
	unsigned runs = 0, failures = 0;
	g_autofree char *culprit = NULL;

	for (guint i = 0; f->steps && i < f->steps->len; i++) {
		const struct finding_step *st = f->steps->pdata[i];

		if (st->role == BISECT_ROLE_REVERT)
			last = st;
	}
	if (!last)
		return;
	for (guint i = 0; i < f->steps->len; i++) {
		const struct finding_step *st = f->steps->pdata[i];

		if (st->role == BISECT_ROLE_REVERT && strcmp(st->commit, last->commit) == 0) {
			runs += st->runs;
			failures += st->failures;
		}
	}
	culprit = short_id(last->commit);
	template_values_printf(v, "revert", "the head with %s reverted: %s, %u of %u %s showed it",
			       culprit, bisect_result_name(failures ? BISECT_BAD : last->result),
			       failures, runs, f->kind == FINDING_BOOT ? "boots" : "builds");
}

static void fill_steps(struct template_values *v, const struct finding_row *f)
{
	unsigned total = 0, shown = 0;

	template_values_set_empty(v, "steps");
	for (guint i = 0; f->steps && i < f->steps->len; i++) {
		const struct finding_step *st = f->steps->pdata[i];
		struct template_values *item;
		g_autofree char *id = short_id(st->role == BISECT_ROLE_REVERT && st->tested
					       ? st->tested : st->commit);
		unsigned runs = st->runs, failures = st->failures;

		/*
		 * A commit booted again in the next round, with the same
		 * outcome, is one step of the search: "good 0/4", not two
		 * lines of "good 0/2" (bisect.log keeps each round).
		 */
		while (i + 1 < f->steps->len) {
			const struct finding_step *next = f->steps->pdata[i + 1];

			if (next->role != st->role || next->result != st->result ||
			    strcmp(next->commit, st->commit) != 0 ||
			    g_strcmp0(next->tested, st->tested) != 0)
				break;
			runs += next->runs;
			failures += next->failures;
			i++;
		}
		item = template_values_add(v, "steps");
		template_values_set(item, "commit", id);
		template_values_set(item, "result", bisect_result_name(st->result));
		template_values_printf(item, "failures", "%u", failures);
		template_values_printf(item, "runs", "%u", runs);
		template_values_set(item, "role", bisect_role_name(st->role));
		total += runs;
		shown++;
	}
	fill_revert(v, f);
	{
		const char *unit = f->kind == FINDING_BOOT ? "boot" : "build";

		template_values_printf(v, "bisect_size", "%u step%s, %u %s%s", shown,
				       shown == 1 ? "" : "s", total, unit, total == 1 ? "" : "s");
	}
}

/*
 * The branch a finding was seen on: its own, else the branch whose head
 * is the finding's head, else one whose head contains it, else the one
 * its culprit was selected from; NULL if none.
 */
static char *branch_of(const struct bot *c, const struct tree_row *tree,
		       const struct finding_row *f)
{
	g_autoptr(GPtrArray) branches = NULL;
	const char *head = f->head ? f->head : f->culprit;
	const char *containing = NULL;

	if (f->branch)
		return g_strdup(f->branch);
	branches = db_branch_list(c->db, tree->id, NULL);
	for (guint i = 0; branches && i < branches->len; i++) {
		const struct branch_row *b = branches->pdata[i];

		if (!b->head || b->state == BRANCH_SKIPPED)
			continue;
		if (strcmp(b->head, head) == 0)
			return g_strdup(b->name);
		if (!containing && repo_is_ancestor(c->repo, head, b->head, NULL) == 1)
			containing = b->name;
	}
	/* No branch holds it any more (a rebase dropped it): the one it came from. */
	return containing ? g_strdup(containing) : db_test_branch(c->db, tree->id, f->culprit, NULL);
}

/*
 * The commits of a rebasable tree's @branch that are new to it, oldest
 * first (caller frees): those not in the tree's base when it has one
 * (walked from the branch's head), else those the head change that
 * selected @f's culprit brought. NULL when unknown.
 */
static char **branch_series(const struct bot *c, const struct tree_row *tree,
			    const struct finding_row *f, const char *branch)
{
	g_autoptr(GPtrArray) branches = NULL;
	g_autoptr(GPtrArray) walked = NULL;
	g_autoptr(GStrvBuilder) out = NULL;
	g_autoptr(GError) error = NULL;
	g_auto(GStrv) base = NULL;
	g_autofree char *base_head = NULL;
	const char *head = f->head ? f->head : f->culprit;
	bool truncated = false;

	if (tree->policy != TREE_REBASABLE || f->state == FINDING_INCONCLUSIVE)
		return NULL;
	if (!tree->base)
		return db_test_series(c->db, tree->id, f->culprit, NULL);
	base = g_strsplit(tree->base, "/", 2);
	if (!base[0] || !base[1])
		return NULL;
	base_head = repo_tree_branch_head(c->repo, base[0], base[1], NULL);
	if (!base_head)
		return NULL;
	/* The branch as it stands, if it still holds the culprit. */
	branches = branch ? db_branch_list(c->db, tree->id, NULL) : NULL;
	for (guint i = 0; branches && i < branches->len; i++) {
		const struct branch_row *b = branches->pdata[i];

		if (strcmp(b->name, branch) == 0 && b->state != BRANCH_DELETED &&
		    repo_is_ancestor(c->repo, f->culprit, b->head, NULL) == 1)
			head = b->head;
	}
	walked = repo_walk_new(c->repo, head, (const char *const[]){ base_head, NULL },
			       c->config->max_new_commits, &truncated, &error);
	if (!walked) {
		g_message("report: the new commits of %s/%s are unknown: %s", tree->name,
			  branch ? branch : "-", error->message);
		return NULL;
	}
	if (truncated)
		return NULL;
	out = g_strv_builder_new();
	for (guint i = 0; i < walked->len; i++)
		g_strv_builder_add(out, ((const struct repo_commit *)walked->pdata[i])->oid);
	return g_strv_builder_end(out);
}

/* Sets series, series_index and series_total: the culprit is i of the branch's N new commits. */
static void fill_series(struct template_values *v, const struct bot *c,
			const struct tree_row *tree, const struct finding_row *f,
			const char *branch)
{
	g_auto(GStrv) series = branch_series(c, tree, f, branch);
	guint n = series ? g_strv_length(series) : 0;

	for (guint i = 0; i < n; i++) {
		if (strcmp(series[i], f->culprit) == 0) {
			template_values_printf(v, "series", "%u/%u", i + 1, n);
			template_values_printf(v, "series_index", "%u", i + 1);
			template_values_printf(v, "series_total", "%u", n);
			return;
		}
	}
}

/*
 * The values of a failed test's report: its name and, for the kernel's
 * own KUnit suites, how to run it alone (KUnit's kunit.filter_glob takes
 * SUITE.TEST from the kernel command line).
 */
/* A selftest collection's or program's name, safe in a command line. */
static bool kselftest_word_ok(const char *w)
{
	if (!*w || *w == '-')
		return false;
	for (; *w; w++) {
		if (!g_ascii_isalnum(*w) && !strchr("._-", *w))
			return false;
	}
	return true;
}

static void fill_test(struct template_values *v, const char *title)
{
	g_autofree char *test = diag_console_test_of(title);
	g_auto(GStrv) parts = NULL;

	if (!test)
		return;
	template_values_set(v, "test", test);
	parts = g_strsplit(test, "/", 4);
	if (g_strv_length(parts) >= 3 && strcmp(parts[0], "kunit") == 0)
		template_values_printf(v, "test_alone", "kunit.filter_glob=%s.%s", parts[1],
				       parts[2]);
	/*
	 * A selftest (payload kselftest, "kselftest/COLLECTION/PROGRAM"):
	 * built from the checkout as the target built it, where initramfs.sh
	 * packs it from, then run by its runner alone, on the booted kernel.
	 */
	if (g_strv_length(parts) >= 3 && strcmp(parts[0], "kselftest") == 0 &&
	    kselftest_word_ok(parts[1]) && kselftest_word_ok(parts[2]))
		template_values_printf(v, "test_alone_command",
				       "make O=build headers && make -C tools/testing/selftests "
				       "O=$PWD/build TARGETS=%s "
				       "INSTALL_PATH=$PWD/build/kselftest-install install && "
				       "./build/kselftest-install/run_kselftest.sh -t %s:%s",
				       parts[1], parts[1], parts[2]);
}

static char *headline(const struct finding_row *f)
{
	if (f->kind != FINDING_BOOT && f->message) {
		if (f->line)
			return g_strdup_printf("%s:%u:%u: %s: %s", f->file, f->line, f->column,
					       diag_kind_name(f->diag_kind), f->message);
		return g_strdup_printf("%s%s%s: %s", f->file ? f->file : "",
				       f->file && *f->file ? ": " : "", diag_kind_name(f->diag_kind),
				       f->message);
	}
	return g_strdup(f->title);
}

/*
 * Fills @v with finding @f's fields and, unless @keep_recipients, @out's
 * recipients.
 */
/*
 * The directory of the report with Message-ID @message_id under [report]
 * artifacts-dir, named after the Message-ID's local part (zeroday's own
 * random name, nothing a stranger chose); NULL when there is none for
 * @tree (not configured, or private).
 */
static char *artifacts_dir(const struct config *cfg, const struct tree_row *tree,
			   const char *message_id)
{
	g_autofree char *token = g_strndup(message_id, strcspn(message_id, "@"));

	if (!cfg->report_artifacts_dir || (tree && tree->private) || !*token)
		return NULL;
	for (char *p = token; *p; p++) {
		if (!g_ascii_isalnum(*p) && *p != '-' && *p != '_' && *p != '.')
			*p = '_';
	}
	if (token[0] == '.')
		token[0] = '_';
	return g_build_filename(cfg->report_artifacts_dir, token, NULL);
}

static bool fill_values(struct template_values *v, struct reply *out, const struct bot *c,
			const struct finding_row *f, const char *message_id, bool keep_recipients,
			GError **error)
{
	const struct config *cfg = c->config;
	zd_autoptr(tree_row) tree = db_tree_get(c->db, f->tree, error);
	zd_autoptr(repo_people) people = NULL;
	struct build_target target = { 0 };
	g_autofree char *fragment_dir = config_fragment_dir();
	g_autofree char *culprit_short = short_id(f->culprit);
	g_autofree char *author = NULL;
	g_autofree char *date = NULL;
	g_autofree char *compiler = NULL;
	g_autofree char *reproduce = NULL;
	g_autofree char *title = headline(f);
	g_autofree char *branch = NULL;
	g_autofree char *closes = NULL;
	g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	struct recipients r = { out->to, out->cc, seen, cfg->mail_cc_max };
	g_autofree char *bot_key = address_key(cfg->mail_address);

	if (!tree)
		return false;
	people = repo_people_of(c->repo, f->culprit, error);
	if (!people)
		return false;
	if (!build_target_parse(&target, f->target, fragment_dir, error))
		return false;
	/* Never mail the bot itself. */
	g_hash_table_add(seen, g_steal_pointer(&bot_key));
	/* A follow-up goes to whoever the report went to. */
	if (!keep_recipients)
		fill_recipients(&r, c, tree, f, people);

	template_values_set(v, "bot_name", cfg->mail_name);
	template_values_set(v, "bot_address", cfg->mail_address);
	template_values_set(v, "headline", title);
	template_values_set(v, "title", f->title);
	template_values_set(v, "tree", tree->name);
	template_values_set(v, "base", tree->base);
	template_values_set(v, "url", tree->url);
	branch = branch_of(c, tree, f);
	template_values_set(v, "branch", branch);
	fill_series(v, c, tree, f, branch);
	template_values_set(v, "head", f->head ? f->head : f->culprit);
	template_values_set(v, "culprit", f->culprit);
	template_values_set(v, "culprit_short", culprit_short);
	template_values_set(v, "culprit_title", people->summary);
	template_values_set(v, "parent", f->parent);
	author = address_format(people->author_name, people->author_email, NULL);
	template_values_set(v, "author", author ? author : people->author_email);
	template_values_set(v, "author_name", *people->author_name ? people->author_name
								  : people->author_email);
	date = format_date(people->author_time, people->author_offset);
	template_values_set(v, "author_date", date);
	if (g_ascii_strcasecmp(people->committer_email, people->author_email) != 0) {
		g_autofree char *committer = address_format(people->committer_name,
							    people->committer_email, NULL);

		template_values_set(v, "committer", committer ? committer
							       : people->committer_email);
	}
	template_values_set(v, "target", f->target);
	template_values_set(v, "arch", target.arch);
	template_values_set(v, "config", strchr(f->target, ':') + 1);
	compiler = build_compiler_version(f->target);
	template_values_set(v, "compiler", compiler);
	reproduce = build_reproduce_command(&target, "config.gz");
	template_values_set(v, "reproduce", reproduce);
	if (f->kind == FINDING_BOOT)
		report_boot_reproduce(keep_recipients ? NULL : out, v, c, &target, tree->payloads);
	build_target_clear(&target);
	if (f->kind == FINDING_BOOT && f->console == CONSOLE_TEST_FAIL)
		fill_test(v, f->title);
	if (f->kind == FINDING_BOOT) {
		/* The culprit's other boot failures, each bisected to it: one mail for all. */
		g_autoptr(GPtrArray) carried = db_finding_carried(c->db, f->id, error);

		if (!carried)
			return false;
		for (guint i = 0; i < carried->len; i++) {
			const struct finding_row *d = carried->pdata[i];
			struct template_values *m = template_values_add(v, "more_failures");

			template_values_set(m, "title", d->title);
			if (d->runs)
				template_values_printf(m, "boots", "%u/%u", d->failures, d->runs);
		}
		if (f->repro_boots)
			template_values_printf(v, "repro_boots", "%u", f->repro_boots);
		template_values_set(v, "excerpt", f->excerpt);
		unsigned shown, boots;

		if (f->runs)
			template_values_printf(v, "boots", "%u/%u", f->failures, f->runs);
		if (f->rate > 0.0 && f->rate < 1.0)
			template_values_printf(v, "rate", "%.0f%%", 100.0 * f->rate);
		boots_seen(c, f, &shown, &boots);
		if (boots) {
			template_values_printf(v, "seen", "%u of %u", shown, boots);
			template_values_printf(v, "seen_boots", "%u", boots);
		}
	} else if (f->message) {
		/* Its own diagnostic, then those of the findings its report carries. */
		g_autoptr(GPtrArray) carried = db_finding_carried(c->db, f->id, error);

		if (!carried)
			return false;
		unsigned errors = f->kind == FINDING_BUILD_ERROR;
		g_autofree char *heading = NULL;

		unsigned shown = 1;
		g_autoptr(GPtrArray) also = g_ptr_array_new_with_free_func(g_free);

		/*
		 * Each diagnostic once (a finding is one culprit's one
		 * diagnostic, on every target it showed on); the other
		 * targets are named ("also on"), and a diagnostic that did not
		 * show on the report's own target says where it did.
		 */
		add_also(also, f, f->target);
		add_diag(v, c, f, NULL);
		for (guint i = 0; i < carried->len; i++) {
			const struct finding_row *d = carried->pdata[i];
			g_auto(GStrv) on = finding_targets(d);

			add_also(also, d, f->target);
			add_diag(v, c, d, g_strv_contains((const char *const *)on, f->target)
						  ? NULL : g_strjoinv(", ", on));
			errors += d->kind == FINDING_BUILD_ERROR;
			shown++;
		}
		if (shown > 1)
			template_values_printf(v, "several", "%u", shown);
		heading = diags_heading(errors, shown - errors);
		template_values_set(v, "diags_heading", heading);
		if (also->len) {
			g_autofree char *targets = NULL;

			g_ptr_array_add(also, NULL);
			targets = g_strjoinv(", ", (char **)also->pdata);
			template_values_set(v, "also", targets);
		}
	}
	fill_steps(v, f);
	if (f->state != FINDING_INCONCLUSIVE && f->confidence > 0.0)
		template_values_printf(v, "confidence", "%.4f", f->confidence);
	for (size_t i = 0; f->suspects && f->suspects[i]; i++) {
		struct template_values *s = template_values_add(v, "suspects");
		g_autofree char *id = short_id(f->suspects[i]);
		zd_autoptr(repo_people) p = repo_people_of(c->repo, f->suspects[i], NULL);

		template_values_set(s, "commit", id);
		template_values_set(s, "title", p ? p->summary : "?");
	}
	template_values_set(v, "reason", f->reason);
	template_values_printf(v, "reported_by", "%s <%s>", cfg->mail_name, cfg->mail_address);
	closes = policy_closes(cfg, tree, message_id);
	template_values_set(v, "closes", closes);
	if (!keep_recipients) {
		g_autofree char *dir = artifacts_dir(cfg, tree, message_id);

		if (dir && g_file_test(dir, G_FILE_TEST_IS_DIR)) {
			g_autofree char *token = g_path_get_basename(dir);

			template_values_printf(v, "artifacts", "%s%s%s/", cfg->report_artifacts_url,
					       g_str_has_suffix(cfg->report_artifacts_url, "/") ? ""
											 : "/",
					       token);
		}
	}
	/*
	 * The line a fix's commit message carries, for a culprit shown to be
	 * one; and, for a mainline-like tree, regzbot's, so that the
	 * regression is tracked without anyone pasting it.
	 */
	if (culprit_verified(f)) {
		template_values_printf(v, "fixes", "%s (\"%s\")", culprit_short, people->summary);
		if (tree->regzbot)
			template_values_set(v, "regzbot", culprit_short);
	}
	return true;
}

/* @text gzipped, or NULL when zlib fails. */
static GBytes *gzipped(const char *text)
{
	g_autoptr(GZlibCompressor) gz = g_zlib_compressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP, 9);
	g_autoptr(GMemoryOutputStream) mem =
		G_MEMORY_OUTPUT_STREAM(g_memory_output_stream_new_resizable());
	g_autoptr(GOutputStream) out = g_converter_output_stream_new(G_OUTPUT_STREAM(mem),
								     G_CONVERTER(gz));

	if (!g_output_stream_write_all(out, text, strlen(text), NULL, NULL, NULL) ||
	    !g_output_stream_close(out, NULL, NULL))
		return NULL;
	return g_memory_output_stream_steal_as_bytes(mem);
}

bool report_attach_config(struct reply *out, const char *config_path)
{
	g_autofree char *config = config_path ? read_tail(config_path, REPORT_CONFIG_MAX) : NULL;
	g_autoptr(GBytes) config_gz = config ? gzipped(config) : NULL;

	if (!config_gz)
		return false;
	reply_attach_bytes(out, "config.gz", "application/gzip", config_gz);
	return true;
}

/*
 * The line that makes the initramfs, written for the developer's machine,
 * most likely an x86_64 Debian: another arch's static busybox is Debian's
 * busybox-static of that arch (with the arch added to dpkg), unpacked,
 * not installed; riscv64, which Debian 12 does not carry, is built from
 * Debian's busybox source with its busybox-static configuration.
 */
static char *initramfs_command(const struct boot_arch *a)
{
	const char *u = a ? a->userland : "amd64";

	if (strcmp(u, "amd64") == 0)
		return g_strdup("sh initramfs.sh build > initramfs.cpio.gz");
	if (strcmp(u, "riscv64") == 0)
		return g_strdup("apt-get source busybox && (cd busybox-[0-9]* && "
				"cp debian/config/pkg/static .config && yes '' | make "
				"CROSS_COMPILE=riscv64-linux-gnu- oldconfig && make "
				"CROSS_COMPILE=riscv64-linux-gnu-) && BUSYBOX=$(echo "
				"busybox-[0-9]*/busybox) sh initramfs.sh build > initramfs.cpio.gz");
	return g_strdup_printf("apt-get download busybox-static:%s && dpkg-deb -x "
			       "busybox-static_*_%s.deb busybox-%s && BUSYBOX=busybox-%s/bin/busybox "
			       "sh initramfs.sh build > initramfs.cpio.gz", u, u, u, u);
}

void report_boot_reproduce(struct reply *out, struct template_values *v, const struct bot *c,
			   const struct build_target *t, char **payloads)
{
	const char *image = build_image_name(t);
	g_autoptr(GError) error = NULL;
	GArray *chosen;
	g_autofree char *recipe = NULL;
	g_autofree char *boot = NULL;
	g_autofree char *words = c->config->boot_cmdline ? g_strjoinv(" ", c->config->boot_cmdline)
							 : NULL;
	struct boot_reproduce_extra extra = {
		.memory_mb = c->config->boot_memory, .seed = 1,
		.cmdline = words && *words ? words : NULL,
	};

	if (!image)
		return;
	chosen = config_boot_payloads(c->config, payloads && payloads[0]
					       ? (const char *const *)payloads : NULL, &error);
	/* zeroday's kernels have what the payloads need built in (+fs): no modules. */
	if (chosen)
		recipe = initramfs_recipe((const struct initramfs_payload *)chosen->data,
					  chosen->len,
					  &(struct initramfs_kernel){
						  .arch = t->arch,
						  /* initramfs.sh packs the developer's own install. */
						  .kselftest_dir = t->kselftests && t->kselftests[0]
								   ? "build/kselftest-install" : NULL,
					  }, &error);
	/* The scratch disk the payloads declare, as their boots had it. */
	for (guint i = 0; recipe && i < chosen->len; i++) {
		struct initramfs_needs n;

		if (initramfs_needs_read(&n, g_array_index(chosen, struct initramfs_payload,
							   i).path, NULL)) {
			extra.scratch_mb = MAX(extra.scratch_mb, n.scratch_mb);
			initramfs_needs_release(&n);
		}
	}
	config_boot_payloads_free(chosen);
	if (!recipe)
		g_message("report: no initramfs.sh for the reproduce lines: %s", error->message);
	boot = boot_reproduce_command(t->arch, "build", image, recipe ? "initramfs.cpio.gz" : NULL,
				      &extra);
	if (recipe) {
		g_autofree char *command = initramfs_command(boot_arch_find(t->arch));

		template_values_set(v, "initramfs_command", command);
		if (out)
			reply_attach(out, "initramfs.sh", recipe);
	}
	template_values_set(v, "boot_command", boot);
}

/*
 * The lines of build log @log around each line that names one of the
 * diagnostics' locations (@locations, "file:line:"), REPORT_LOG_BEFORE
 * before and REPORT_LOG_AFTER after, runs apart marked "..."; NULL when
 * no line names one (a linker's error, say): then the log's tail serves.
 */
static char *log_around(const char *log, GPtrArray *locations)
{
	g_auto(GStrv) lines = g_strsplit(log, "\n", -1);
	guint n = g_strv_length(lines);
	g_autofree bool *keep = g_new0(bool, n + 1);
	GString *out = g_string_new(NULL);
	bool any = false, gap = false;

	for (guint i = 0; i < n; i++) {
		for (guint k = 0; k < locations->len; k++) {
			if (!strstr(lines[i], locations->pdata[k]))
				continue;
			for (guint j = i > REPORT_LOG_BEFORE ? i - REPORT_LOG_BEFORE : 0;
			     j < n && j <= i + REPORT_LOG_AFTER; j++)
				keep[j] = true;
			any = true;
		}
	}
	for (guint i = 0; any && i < n; i++) {
		if (!keep[i]) {
			gap = true;
			continue;
		}
		if (gap || (i > 0 && out->len == 0))
			g_string_append(out, "...\n");
		gap = false;
		g_string_append_printf(out, "%s\n", lines[i]);
	}
	if (!any) {
		g_string_free(out, true);
		return NULL;
	}
	if (gap)
		g_string_append(out, "...\n");
	return g_string_free(out, false);
}

/* The "file:line:" of @f's diagnostic and of those its report carries, for log_around(). */
static GPtrArray *diag_locations(const struct bot *c, const struct finding_row *f)
{
	g_autoptr(GPtrArray) carried = db_finding_carried(c->db, f->id, NULL);
	GPtrArray *out = g_ptr_array_new_with_free_func(g_free);

	if (f->file && *f->file && f->line)
		g_ptr_array_add(out, g_strdup_printf("%s:%u:", f->file, f->line));
	for (guint i = 0; carried && i < carried->len; i++) {
		const struct finding_row *d = carried->pdata[i];

		if (d->file && *d->file && d->line)
			g_ptr_array_add(out, g_strdup_printf("%s:%u:", d->file, d->line));
	}
	return out;
}

/*
 * Adds what a reader needs to @out, small enough for a list: the config
 * gzipped (config.gz), the build log's lines around each new diagnostic
 * (or its tail), the bisection log. The whole files stay in the state
 * directory.
 */
static void attach_logs(struct reply *out, const struct bot *c, const struct finding_row *f)
{
	zd_autoptr(build_row) build = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree char *log = status_finding_log(f);

	if (db_build_find(c->db, f->tree, f->culprit, f->target, &build, &error) && build) {
		g_autofree char *whole = read_tail(build->log_path, REPORT_LOG_READ_MAX);
		g_autoptr(GPtrArray) locations = diag_locations(c, f);
		g_autofree char *around = whole && locations->len ? log_around(whole, locations)
								  : NULL;
		g_autofree char *tail = around ? NULL : read_tail(build->log_path, REPORT_LOG_MAX);

		report_attach_config(out, build->config_path);
		if (around) {
			g_autofree char *text = g_strdup_printf(
				"[zeroday: the lines around each new diagnostic]\n%s", around);

			reply_attach(out, "build.log", text);
		} else if (tail) {
			reply_attach(out, "build.log", tail);
		}
	} else if (error) {
		g_message("report: no build of %.12s for %s: %s", f->culprit, f->target,
			  error->message);
	}
	if (log)
		reply_attach(out, "bisect.log", log);
}


/* Writes @text (@len bytes) as @dir/@name, readable by the web server. */
static bool publish_file(const char *dir, const char *name, const char *text, gsize len,
			 GError **error)
{
	g_autofree char *path = g_build_filename(dir, name, NULL);

	return g_file_set_contents_full(path, text, (gssize)len, G_FILE_SET_CONTENTS_CONSISTENT,
					0644, error);
}

/* Copies the file at @from (its last REPORT_ARTIFACT_MAX bytes) as @dir/@name; absent: nothing. */
static bool publish_copy(const char *dir, const char *name, const char *from, GError **error)
{
	g_autofree char *text = from ? read_tail(from, REPORT_ARTIFACT_MAX) : NULL;

	return !text || publish_file(dir, name, text, strlen(text), error);
}

bool report_publish(const struct bot *c, const struct finding_row *f, const char *message_id,
		    GError **error)
{
	zd_autoptr(tree_row) tree = db_tree_get(c->db, f->tree, error);
	zd_autoptr(build_row) build = NULL;
	g_autofree char *dir = NULL;
	g_autofree char *log = status_finding_log(f);

	if (!tree)
		return false;
	dir = artifacts_dir(c->config, tree, message_id);
	if (!dir)
		return true;
	if (g_mkdir_with_parents(dir, 0755) < 0) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_FAILED, "%s: %s", dir, g_strerror(errno));
		return false;
	}
	if (!db_build_find(c->db, f->tree, f->culprit, f->target, &build, error))
		goto fail;
	if (build && (!publish_copy(dir, "config", build->config_path, error) ||
		      !publish_copy(dir, "build.log", build->log_path, error)))
		goto fail;
	if (log && !publish_file(dir, "bisect.log", log, strlen(log), error))
		goto fail;
	if (build && f->kind == FINDING_BOOT) {
		g_autofree char *console = NULL;
		GArray *payloads = NULL;
		g_autofree char *recipe = NULL;
		/* The target's arch: "x86_64:tinyconfig+serial". */
		g_autofree char *arch = g_strndup(f->target, strcspn(f->target, ":"));

		if (!db_boot_console(c->db, build->id, f->fingerprint, &console, error) ||
		    !publish_copy(dir, "console.log", console, error))
			goto fail;
		payloads = config_boot_payloads(c->config, NULL, NULL);
		if (payloads)
			recipe = initramfs_recipe((const struct initramfs_payload *)payloads->data,
						  payloads->len,
						  &(struct initramfs_kernel){ .arch = arch }, NULL);
		config_boot_payloads_free(payloads);
		if (recipe && !publish_file(dir, "initramfs.sh", recipe, strlen(recipe), error))
			goto fail;
	}
	return true;
fail:
	/* No half a directory linked: the report goes without the link. */
	{
		g_autoptr(GFile) gone = g_file_new_for_path(dir);
		g_autoptr(GFileEnumerator) files =
			g_file_enumerate_children(gone, G_FILE_ATTRIBUTE_STANDARD_NAME,
						  G_FILE_QUERY_INFO_NOFOLLOW_SYMLINKS, NULL, NULL);
		GFileInfo *info;

		while (files && (info = g_file_enumerator_next_file(files, NULL, NULL))) {
			g_autoptr(GFile) child = g_file_get_child(gone, g_file_info_get_name(info));

			g_file_delete(child, NULL, NULL);
			g_object_unref(info);
		}
		g_file_delete(gone, NULL, NULL);
	}
	return false;
}

static bool render_into(struct reply *out, const struct bot *c, const char *kind,
			const struct template_values *v, GError **error)
{
	return render_mail(out, c->config, kind, v, error);
}

bool report_finding(struct reply *out, const struct bot *c, const struct finding_row *f,
		    const char *message_id, gint64 now, GError **error)
{
	zd_autoptr(template_values) v = template_values_new();

	reply_init(out);
	if (!fill_values(v, out, c, f, message_id, false, error) ||
	    !render_into(out, c, kind_of(c, f), v, error))
		return false;
	out->message_id = g_strdup(message_id);
	out->date = now;
	attach_logs(out, c, f);
	/* Under [mail] max-bytes, saying what was left out; a mail that cannot be made is the outbox's to say. */
	{
		g_autoptr(GError) unfit = NULL;

		if (!reply_fit(out, c->config->mail_max_bytes, &unfit))
			g_message("report: %s", unfit->message);
	}
	return true;
}

/*
 * Fills @out with the follow-up @kind ("fixed", "dropped") on finding @f,
 * in the thread of its report @report, to the report's recipients.
 */
static bool report_followup(struct reply *out, const struct bot *c,
			    const struct finding_row *f, const struct outbox_row *report,
			    const char *kind, const char *message_id, gint64 now, GError **error)
{
	zd_autoptr(template_values) v = template_values_new();
	g_autofree char *later_short = short_id(f->fixed_by);
	zd_autoptr(repo_people) later = NULL;

	reply_init(out);
	if (!f->fixed_by) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_FAILED, "finding %" G_GINT64_FORMAT
			    " is neither fixed nor dropped", f->id);
		return false;
	}
	if (!fill_values(v, out, c, f, report->message_id, true, error))
		return false;
	later = repo_people_of(c->repo, f->fixed_by, NULL);
	template_values_set(v, "fixed_by", f->fixed_by);
	template_values_set(v, "fixed_by_short", later_short);
	template_values_set(v, "fixed_by_title", later ? later->summary : NULL);
	if (!render_into(out, c, kind, v, error))
		return false;
	/* In the report's thread, to the report's recipients. */
	g_free(out->subject);
	out->subject = g_str_has_prefix(report->subject, "Re: ") ? g_strdup(report->subject)
		     : g_strdup_printf("Re: %s", report->subject);
	for (char **r = report->recipients; r && *r; r++) {
		if (g_str_has_prefix(*r, "to:"))
			g_ptr_array_add(out->to, g_strdup(*r + 3));
		else if (g_str_has_prefix(*r, "cc:"))
			g_ptr_array_add(out->cc, g_strdup(*r + 3));
	}
	reply_thread(out, report->message_id, NULL, report->references,
		     report->references ? g_strv_length(report->references) : 0);
	out->message_id = g_strdup(message_id);
	out->date = now;
	return true;
}

bool report_fixed(struct reply *out, const struct bot *c, const struct finding_row *f,
		  const struct outbox_row *report, const char *message_id, gint64 now,
		  GError **error)
{
	return report_followup(out, c, f, report, "fixed", message_id, now, error);
}

bool report_dropped(struct reply *out, const struct bot *c, const struct finding_row *f,
		    const struct outbox_row *report, const char *message_id, gint64 now,
		    GError **error)
{
	return report_followup(out, c, f, report, "dropped", message_id, now, error);
}
