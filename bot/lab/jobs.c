/*
 * Jobs: the kinds of job and what runs each, in one place (see jobs.h).
 * Every runner builds and boots through bot/lab/probe.h.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include "bot/bot.h"
#include "bot/lab/culprit.h"
#include "bot/lab/jobs.h"
#include "bot/lab/probe.h"
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

/* A posted series' patches built one after the other: see bot/mailroom/series.h. */
static bool run_patch_test(const struct bot *bot, const struct job_row *job,
			   enum job_result *result, char **note, unsigned *booted, GError **cause)
{
	*booted = 0;
	if (!commit_in_store(bot, job, cause))
		return false;
	return series_run_job(bot, job->tree, job->commit, job->target, result,
			      note, cause);
}

/* A finding's culprit tested afresh, for a #zeroday rerun: see bot/mailroom/commands.h. */
static bool run_rerun(const struct bot *bot, const struct job_row *job,
		      enum job_result *result, char **note, unsigned *booted, GError **cause)
{
	*booted = 0;
	if (!commit_in_store(bot, job, cause))
		return false;
	return commands_run_rerun(bot, job->id, job->tree, job->commit,
				  job->target, result, note, cause);
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
