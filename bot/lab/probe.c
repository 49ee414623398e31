/*
 * Probes: one commit built and booted through the executor, with
 * infrastructure failures translated once. See probe.h.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <string.h>

#include "bot/bot.h"
#include "bot/lab/executor.h"
#include "bot/lab/probe.h"

void probe_result_release(struct probe_result *r)
{
	g_clear_pointer(&r->build, builder_result_free);
	g_clear_pointer(&r->tally, g_ptr_array_unref);
	g_clear_pointer(&r->runs, g_ptr_array_unref);
}

/*
 * Whether @r is an infra-error: then it says nothing of its commit, and
 * @cause says which build it was (the commit's or its parent's) and why.
 */
static bool infra_build(const struct builder_result *r, GError **cause)
{
	const struct build_row *b;

	if (r->verdict != VERDICT_INFRA && (!r->build || r->build->status != BUILD_INFRA))
		return false;
	b = !r->build || r->build->status == BUILD_INFRA || !r->parent_build ? r->build
									    : r->parent_build;
	g_set_error(cause, BOT_ERROR, BOT_ERROR_TEMPORARY, "infra-error: build of %.12s%s: %s",
		    b ? b->commit : r->commit, b && b == r->parent_build ? " (the parent)" : "",
		    b && b->reason ? b->reason : "infrastructure error");
	return true;
}

GPtrArray *probe_boot(const struct bot *bot, const struct build_row *build, unsigned boots,
		      enum probe_flags flags, GPtrArray **runs_out, GError **cause)
{
	/* The target's ARCH, before its first ':'. */
	g_autofree char *arch = g_strndup(build->target, strcspn(build->target, ":"));
	struct booter_request req = {
		.image = build->image_path, .arch = arch, .build_id = build->id, .repeat = boots,
		.reuse = !(flags & PROBE_FRESH_BOOTS),
	};
	g_autoptr(GPtrArray) runs = NULL;
	GPtrArray *tally = NULL;
	zd_autoptr(tree_row) tree = NULL;

	if (!build->image_path || build->status != BUILD_OK)
		return NULL;
	/* A tree's own payloads, when it names them. */
	if (!g_str_has_prefix(build->source, "path:")) {
		g_autoptr(GError) missing = NULL;

		tree = db_tree_get(bot->db, build->source, &missing);
		if (!tree && !g_error_matches(missing, BOT_ERROR, BOT_ERROR_NOT_FOUND)) {
			g_propagate_error(cause, g_steal_pointer(&missing));
			return NULL;
		}
		if (tree && tree->payloads && tree->payloads[0])
			req.payloads = (const char *const *)tree->payloads;
	}
	runs = executor_of(bot)->boot(bot, &req, &tally, cause);
	if (!runs)
		return NULL;
	for (guint i = 0; i < runs->len; i++) {
		const struct booter_run *r = runs->pdata[i];

		if (r->result.kind == CONSOLE_INFRA) {
			g_clear_pointer(&tally, g_ptr_array_unref);
			g_set_error(cause, BOT_ERROR, BOT_ERROR_TEMPORARY,
				    "infra-error: boot of %.12s on %s: %s", build->commit,
				    r->host ? r->host : "?",
				    r->result.title ? r->result.title : "infrastructure error");
			return NULL;
		}
	}
	if (runs_out)
		*runs_out = g_steal_pointer(&runs);
	return tally;
}

bool probe_run(struct probe_result *out, const struct bot *bot,
	       const struct probe_request *req, GError **cause)
{
	const char *targets[] = { req->target, NULL };
	struct builder_request breq = {
		.source = req->tree, .objects_from = bot->git_path, .rev = req->commit,
		.targets = targets, .against = req->against, .alone = req->flags & PROBE_ALONE,
		.rebuild = req->flags & PROBE_REBUILD,
	};
	g_autoptr(GPtrArray) results = NULL;
	g_autoptr(GError) boot_error = NULL;

	memset(out, 0, sizeof(*out));
	results = executor_of(bot)->build(bot, &breq, cause);
	if (!results)
		return false;
	g_assert(results->len == 1);
	out->build = g_ptr_array_steal_index(results, 0);
	if (infra_build(out->build, cause)) {
		probe_result_release(out);
		return false;
	}
	if (!req->boots || !out->build->build)
		return true;
	out->tally = probe_boot(bot, out->build->build, req->boots, req->flags, &out->runs,
				&boot_error);
	if (boot_error) {
		g_propagate_error(cause, g_steal_pointer(&boot_error));
		probe_result_release(out);
		return false;
	}
	return true;
}

const struct console_tally *probe_tally_find(GPtrArray *tally, const char *fingerprint)
{
	for (guint i = 0; tally && i < tally->len; i++) {
		const struct console_tally *t = tally->pdata[i];

		if (strcmp(t->fingerprint, fingerprint) == 0)
			return t;
	}
	return NULL;
}
