/*
 * Jobs: the kinds of job and what runs each, in one place (see jobs.h).
 * Every runner builds and boots through bot/lab/probe.h.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <string.h>

#include "bot/bot.h"
#include "bot/lab/culprit.h"
#include "bot/lab/jobs.h"
#include "bot/lab/probe.h"
#include "bot/lab/builder.h"
#include "bot/mailroom/commands.h"
#include "bot/mailroom/series.h"
#include "engine/engine.h"

/*
 * The causes a retry cannot fix: a job that fails for one ends in error
 * at once. Every other failure is taken for infrastructure, and retried
 * with backoff up to the limit of attempts.
 */
static const struct {
	GQuark (*domain)(void);
	int code;
} permanent_causes[] = {
	{ engine_error_quark, ENGINE_ERROR_INVALID }, /* a bad target spec, hostile input */
	{ engine_error_quark, ENGINE_ERROR_LIMIT },   /* the input is over a size limit */
	{ bot_error_quark, BOT_ERROR_NOT_FOUND },     /* the commit is no longer stored */
	{ bot_error_quark, BOT_ERROR_CONFIG },        /* zeroday.conf, not the machine */
	{ bot_error_quark, BOT_ERROR_SCHEMA },
	{ bot_error_quark, BOT_ERROR_USAGE },
};

bool jobs_permanent_cause(const GError *cause)
{
	for (size_t i = 0; i < G_N_ELEMENTS(permanent_causes); i++) {
		if (g_error_matches(cause, permanent_causes[i].domain(), permanent_causes[i].code))
			return true;
	}
	return false;
}

/* Whether the job's commit is still in the object store; a cause when not. */
static bool commit_in_store(const struct bot *bot, const struct job_row *job, GError **cause)
{
	if (repo_has_commit(bot->repo, job->commit))
		return true;
	g_set_error(cause, BOT_ERROR, BOT_ERROR_NOT_FOUND,
		    "commit %s is no longer in the object store", job->commit);
	return false;
}

/*
 * A build job: the commit against its parent (or, for a non-rebasable
 * tree, against its comparison base, with what is new bisected in
 * between); a head is booted as well, its new failures bisected from its
 * comparison base; then the findings it fixes. The comparison base of a
 * head is the head it replaced on its branch, when that was tested; of a
 * head first seen on its branch, where the branch left known ground
 * (culprit_fork_point()); else the parent. Sets *@result, and *@note to
 * what a result that is not a verdict's stands for; false with @cause
 * when it could not run: an infra-error build, boots that hit
 * infrastructure errors, a vanished commit.
 */
static bool run_build(const struct bot *bot, const struct job_row *job,
		      enum job_result *result, char **note, unsigned *booted, GError **cause)
{
	struct probe_request req = {
		.tree = job->tree, .commit = job->commit, .target = job->target,
	};
	zd_auto(probe_result) built = { 0 };
	g_autoptr(GPtrArray) boots = NULL;
	g_autofree char *previous = NULL;
	g_autofree char *fork = NULL;
	g_autoptr(GString) already = g_string_new(NULL);
	const struct builder_result *br;
	bool non_rebasable = false;
	const char *base;

	if (!commit_in_store(bot, job, cause))
		return false;
	if (!db_tree_non_rebasable(bot->db, job->tree_id, &non_rebasable, cause))
		return false;
	if (job->priority == JOB_HEAD) {
		previous = db_head_previous(bot->db, job->tree_id, job->commit, cause);
		if (*cause)
			return false;
		if (!previous) {
			fork = culprit_fork_point(bot, job, cause);
			if (*cause)
				return false;
			if (fork)
				g_message("job %" G_GINT64_FORMAT ": a new branch, from %.12s", job->id,
					  fork);
		}
	}
	base = previous ? previous : fork;
	if (non_rebasable)
		req.against = base;
	if (!probe_run(&built, bot, &req, cause))
		return false;
	br = built.build;
	if (!culprit_build_findings(bot, job, br, non_rebasable ? base : NULL, already, cause))
		return false;
	/* Heads are booted too, [boot] repeat times. */
	if (job->priority == JOB_HEAD &&
	    !culprit_boot_findings(bot, job, br, base, &boots, already, cause))
		return false;
	if (!culprit_mark_fixed(bot, job, br, boots, cause))
		return false;
	*result = db_job_result_of_verdict(br->verdict);
	*booted = boots ? bot->config->boot_repeat : 0;
	if (already->len) {
		/* Never a pass: the failure was there before, and the note says since where. */
		if (*result == JOB_RESULT_PASS)
			*result = JOB_RESULT_KNOWN_FAILURE;
		*note = g_string_free(g_steal_pointer(&already), FALSE);
	}
	return true;
}

/* New diagnostics quoted in a series' reply, at most. */
#define DIAGS_MAX 20

/* The new diagnostics of @br as one text, and their kind. */
static char *fresh_text(const struct builder_result *br)
{
	GString *out = g_string_new(NULL);

	for (guint i = 0; br->fresh && i < br->fresh->len && i < DIAGS_MAX; i++) {
		const struct diag *d = br->fresh->pdata[i];

		if (out->len)
			g_string_append_c(out, '\n');
		if (d->line)
			g_string_append_printf(out, "%s:%u:%u: %s: %s", d->file, d->line,
					       d->column, diag_kind_name(d->kind), d->message);
		else
			g_string_append_printf(out, "%s%s%s: %s", d->file, *d->file ? ": " : "",
					       diag_kind_name(d->kind), d->message);
	}
	return g_string_free(out, out->len == 0);
}

/* What @tally of @runs boots says, as one line: "3 boots clean", "boot-panic: T (2/3 boots)". */
static char *boots_text(GPtrArray *tally, unsigned runs)
{
	for (guint i = 0; tally && i < tally->len; i++) {
		const struct console_tally *t = tally->pdata[i];

		if (t->kind != CONSOLE_BOOT_OK)
			return g_strdup_printf("%s: %s (%u/%u boots)", diag_console_kind_name(t->kind),
					       t->title, t->failures, t->runs);
	}
	return g_strdup_printf("%u boot%s clean", runs, runs == 1 ? "" : "s");
}

/* What the boots of a series found. */
struct series_boots {
	char **text;       /* per patch (index n - 1): what its boots showed, or NULL */
	guint blamed;      /* the patch a new boot failure is pinned on; 0: none */
	char *failure;     /* that failure, with its console lines; or NULL */
	char *note;        /* a new failure not pinned on one patch, for the summary; or NULL */
};

static void series_boots_release(struct series_boots *b, guint n)
{
	for (guint i = 0; b->text && i < n; i++)
		g_free(b->text[i]);
	g_free(b->text);
	g_free(b->failure);
	g_free(b->note);
}

/* The patch of @outcomes (1-based) whose commit is @commit; 0: none. */
static guint patch_of(GPtrArray *outcomes, const char *commit)
{
	for (guint k = 1; k <= outcomes->len; k++) {
		const struct builder_result *br = outcomes->pdata[k - 1];

		if (strcmp(br->commit, commit) == 0)
			return k;
	}
	return 0;
}

/*
 * Boots the series where @outcomes' builds kept an image (the target
 * boots): the last patch and the base [boot] repeat times each. A failure
 * the last patch shows and the base does not is bisected over the
 * patches with the same bisection as a tree's (flaky-aware, patches that
 * build no kernel skipped, the culprit reverted on the last patch); it is
 * pinned on the patch the bisection names, and anything it cannot name
 * is said on the series, not blamed on a patch: a wrong culprit is worse
 * than none.
 */
static bool boot_series(const struct bot *c, const struct job_row *job, GPtrArray *outcomes,
			struct series_boots *out, GError **cause)
{
	guint n = outcomes->len;
	unsigned repeat = c->config->boot_repeat;
	const struct builder_result *first = outcomes->pdata[0];
	const struct builder_result *last = outcomes->pdata[n - 1];
	g_autoptr(GPtrArray) last_tally = NULL;
	g_autoptr(GPtrArray) base_tally = NULL;
	const struct console_tally *fresh = NULL;
	g_autofree unsigned *runs = NULL;
	g_autofree unsigned *failures = NULL;
	g_autoptr(GString) suspects = NULL;
	struct bisect_outcome o = { 0 };
	guint blamed;

	out->text = g_new0(char *, n);
	if (!last->build || !last->build->image_path || last->build->status != BUILD_OK)
		return true;
	last_tally = probe_boot(c, last->build, repeat, 0, NULL, cause);
	if (!last_tally)
		return !*cause;
	out->text[n - 1] = boots_text(last_tally, repeat);
	if (!first->parent_build || !first->parent_build->image_path)
		return true;
	base_tally = probe_boot(c, first->parent_build, repeat, 0, NULL, cause);
	if (!base_tally)
		return !*cause;
	for (guint i = 0; !fresh && i < last_tally->len; i++) {
		const struct console_tally *t = last_tally->pdata[i];
		const struct console_tally *before = probe_tally_find(base_tally, t->fingerprint);

		if (t->kind != CONSOLE_BOOT_OK && (!before || before->failures == 0))
			fresh = t;
	}
	if (!fresh)
		return true;
	if (!culprit_bisect_series_boot(c, job, first->parent, fresh->fingerprint, &o, cause))
		return false;

	/* Each patch's boots, as the bisection counted them (stored boots included). */
	runs = g_new0(unsigned, n + 1);
	failures = g_new0(unsigned, n + 1);
	for (guint i = 0; i < o.log->len; i++) {
		const struct bisect_entry *e = o.log->pdata[i];
		guint k = e->role == BISECT_ROLE_REVERT ? 0 : patch_of(outcomes, e->commit);

		if (!k || e->result == BISECT_SKIP)
			continue;
		runs[k] += e->runs;
		failures[k] += e->failures;
	}
	for (guint k = 1; k <= n; k++) {
		if (!runs[k])
			continue;
		g_free(out->text[k - 1]);
		out->text[k - 1] = failures[k]
			? g_strdup_printf("%s: %s (%u/%u boots)", diag_console_kind_name(fresh->kind),
					  fresh->title, failures[k], runs[k])
			: g_strdup_printf("%u boot%s clean", runs[k], runs[k] == 1 ? "" : "s");
	}

	blamed = o.verdict == BISECT_FOUND ? patch_of(outcomes, o.culprit) : 0;
	if (blamed) {
		/* The excerpt is the last patch's boots': decoded with its vmlinux. */
		g_autofree char *excerpt = culprit_decoded_excerpt(c, last->build, fresh->excerpt);

		out->blamed = blamed;
		out->failure = g_strdup_printf("%s: %s (%u/%u boots)\n%s",
					       diag_console_kind_name(fresh->kind), fresh->title,
					       failures[blamed], runs[blamed], excerpt ? excerpt : "");
		g_message("series: %s pinned on patch %u of %u (%.12s), confidence %.3f",
			  fresh->fingerprint, blamed, n, o.culprit, o.confidence);
		bisect_outcome_clear(&o);
		return true;
	}
	suspects = g_string_new(NULL);
	for (char **sp = o.suspects; sp && *sp; sp++) {
		guint k = patch_of(outcomes, *sp);

		if (k)
			g_string_append_printf(suspects, "%s%u", suspects->len ? ", " : "", k);
	}
	if (o.verdict == BISECT_PREDATES)
		out->note = g_strdup_printf("%s: %s shows with the whole series, and, booted "
					    "more, on the base too: it is not the series'",
					    diag_console_kind_name(fresh->kind), fresh->title);
	else
		out->note = g_strdup_printf(
			"%s: %s shows in %u of %u boots with the whole series and in none of %u "
			"on the base, but could not be pinned on one patch (%s)%s%s",
			diag_console_kind_name(fresh->kind), fresh->title, fresh->failures,
			fresh->runs, repeat, o.reason ? o.reason : "no patch stood out",
			suspects->len ? "; it is one of patches " : "", suspects->str);
	bisect_outcome_clear(&o);
	return true;
}

/*
 * A patch-test job, whose commit is the last patch of a posted series as
 * applied: builds each patch of the series on the job's target against
 * the one before, boots the series (boot_series()), and hands the
 * results to the series (series_record()), which replies once every
 * target is in. *@result is the worst of the patches' results.
 */
static bool run_patch_test(const struct bot *c, const struct job_row *job,
			   enum job_result *result, char **note, unsigned *booted, GError **cause)
{
	g_autoptr(GPtrArray) testing = NULL;
	g_autoptr(GPtrArray) outcomes = g_ptr_array_new_with_free_func(
		(GDestroyNotify)builder_result_free);
	g_autoptr(GPtrArray) results = g_ptr_array_new_with_free_func(g_free);
	g_autofree char **details = NULL;
	enum job_result worst = JOB_RESULT_PASS;
	struct series_boots boots = { 0 };
	const struct series_row *s;
	guint known = 0;
	bool ok = false;

	*booted = 0;
	if (!commit_in_store(c, job, cause))
		return false;
	testing = series_testing_at(c, job->commit, &known, cause);
	if (!testing)
		return false;
	if (testing->len == 0) {
		*result = JOB_RESULT_SKIPPED;
		*note = g_strdup(known ? "its series is no longer testing (superseded)"
				       : "no series has its last patch here");
		return true;
	}
	/* A RESEND applies as the very commits of its original: one run serves both. */
	s = testing->pdata[0];
	for (guint n = 1; n <= s->total; n++) {
		const struct series_part *p = series_row_part(s, n);
		struct probe_request req = {
			.tree = job->tree, .commit = p ? p->commit : NULL, .target = job->target,
		};
		zd_auto(probe_result) built = { 0 };
		enum job_result jr;

		if (!p || !p->commit) {
			g_set_error(cause, BOT_ERROR, BOT_ERROR_NOT_FOUND,
				    "series %" G_GINT64_FORMAT ": patch %u was not applied", s->id, n);
			return false;
		}
		if (!probe_run(&built, c, &req, cause)) {
			g_prefix_error(cause, "series %" G_GINT64_FORMAT ": patch %u: ", s->id, n);
			return false;
		}
		jr = db_job_result_of_verdict(built.build->verdict);
		g_ptr_array_add(outcomes, g_steal_pointer(&built.build));
		if (jr == JOB_RESULT_FAIL_NEW_ERROR ||
		    (jr == JOB_RESULT_NEW_DIAGNOSTICS && worst != JOB_RESULT_FAIL_NEW_ERROR) ||
		    (jr == JOB_RESULT_FAIL_PARENT_FAILING && worst == JOB_RESULT_PASS))
			worst = jr;
	}
	if (!boot_series(c, job, outcomes, &boots, cause))
		goto out;
	details = g_new0(char *, outcomes->len + 1);
	for (guint i = 0; i < outcomes->len; i++) {
		const struct builder_result *br = outcomes->pdata[i];
		struct series_result *r = g_new0(struct series_result, 1);

		details[i] = fresh_text(br);
		r->n = i + 1;
		r->target = job->target;
		r->commit = br->commit;
		r->result = (char *)db_job_result_name(db_job_result_of_verdict(br->verdict));
		r->detail = details[i];
		r->boot_failed = boots.blamed == i + 1;
		r->boot = r->boot_failed ? boots.failure : boots.text[i];
		g_ptr_array_add(results, r);
	}
	if (!series_record(c, testing, job->tree, job->target, results, boots.note, cause))
		goto out;
	if (boots.blamed && worst == JOB_RESULT_PASS)
		worst = JOB_RESULT_NEW_DIAGNOSTICS;
	*result = worst;
	ok = true;
out:
	for (guint i = 0; details && i < outcomes->len; i++)
		g_free(details[i]);
	series_boots_release(&boots, outcomes->len);
	return ok;
}

/* Whether @r's build shows finding @f again. */
static bool build_shows(const struct builder_result *r, const struct finding_row *f)
{
	for (guint i = 0; r->fresh && i < r->fresh->len; i++) {
		const struct diag *d = r->fresh->pdata[i];

		if (d->fingerprint && strcmp(d->fingerprint, f->fingerprint) == 0)
			return true;
	}
	return false;
}

/*
 * A rerun job: builds the job's commit afresh on its target and, for the
 * boot findings waiting for it, boots it afresh; *@result is
 * JOB_RESULT_PASS when none of the findings waiting showed again,
 * JOB_RESULT_FAIL_NEW_ERROR when one did, with *@note saying which.
 */
static bool run_rerun(const struct bot *c, const struct job_row *job, enum job_result *result,
		      char **note, unsigned *booted, GError **cause)
{
	struct probe_request req = {
		.tree = job->tree, .commit = job->commit, .target = job->target,
		.flags = PROBE_REBUILD,
	};
	g_autoptr(GPtrArray) waiting = NULL;
	zd_auto(probe_result) built = { 0 };
	g_autoptr(GPtrArray) tally = NULL;
	g_autoptr(GString) said = g_string_new(NULL);
	const struct builder_result *br;
	bool boot = false;
	bool shown = false;

	*booted = 0;
	if (!commit_in_store(c, job, cause))
		return false;
	waiting = db_command_waiting(c->db, job->id, 0, cause);
	if (!waiting)
		return false;
	if (!probe_run(&built, c, &req, cause))
		return false;
	br = built.build;
	for (guint i = 0; i < waiting->len; i++) {
		const struct command_row *row = waiting->pdata[i];
		zd_autoptr(finding_row) f = row->finding_id ? db_finding_get(c->db, row->finding_id,
									    cause) : NULL;

		if (row->finding_id && !f)
			return false;
		if (f && f->kind == FINDING_BOOT)
			boot = true;
		else if (f && build_shows(br, f)) {
			shown = true;
			g_string_append_printf(said, "%s%s", said->len ? "; " : "", f->title);
		}
	}
	if (boot && br->build && br->build->image_path && br->build->status == BUILD_OK) {
		/* Booted afresh: a rerun asks whether it still shows now. */
		tally = probe_boot(c, br->build, c->config->boot_repeat, PROBE_FRESH_BOOTS,
				   NULL, cause);
		if (!tally)
			return false;
		for (guint i = 0; i < waiting->len; i++) {
			const struct command_row *row = waiting->pdata[i];
			zd_autoptr(finding_row) f = row->finding_id
				? db_finding_get(c->db, row->finding_id, cause) : NULL;

			if (row->finding_id && !f)
				return false;
			for (guint k = 0; f && f->kind == FINDING_BOOT && k < tally->len; k++) {
				const struct console_tally *t = tally->pdata[k];

				if (t->failures && strcmp(t->fingerprint, f->fingerprint) == 0) {
					shown = true;
					g_string_append_printf(said, "%s%s (%u of %u boots)",
							       said->len ? "; " : "", f->title,
							       t->failures, t->runs);
				}
			}
		}
	} else if (boot) {
		g_string_append_printf(said, "%s%.12s did not build a kernel to boot (%s)",
				       said->len ? "; " : "", job->commit, build_verdict_name(br->verdict));
	}
	*result = shown ? JOB_RESULT_FAIL_NEW_ERROR : JOB_RESULT_PASS;
	if (!said->len)
		g_string_printf(said, "%.12s built%s afresh on %s without it", job->commit,
				boot ? " and booted" : "", job->target);
	*note = g_string_free(g_steal_pointer(&said), FALSE);
	return true;
}

/* What runs each kind of job. */
static const struct {
	enum job_kind kind;
	bool (*run)(const struct bot *bot, const struct job_row *job, enum job_result *result,
		    char **note, unsigned *booted, GError **cause);
} job_kinds[] = {
	{ JOB_KIND_BUILD, run_build },
	{ JOB_KIND_PATCH_TEST, run_patch_test },
	{ JOB_KIND_RERUN, run_rerun },
};

bool jobs_run(const struct bot *bot, const struct job_row *job, enum job_result *result,
	      char **note, unsigned *booted, GError **cause)
{
	for (size_t i = 0; i < G_N_ELEMENTS(job_kinds); i++) {
		if (job_kinds[i].kind == job->kind)
			return job_kinds[i].run(bot, job, result, note, booted, cause);
	}
	g_set_error(cause, BOT_ERROR, BOT_ERROR_USAGE, "no runner for %s jobs",
		    db_job_kind_name(job->kind));
	return false;
}
