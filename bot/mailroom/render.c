/*
 * The renderer: every template zeroday writes mail with, in one table
 * with its schema, checked in one loop and rendered by one function. See
 * render.h; templates/README.md describes each template's fields.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <string.h>

#include "bot/bot.h"
#include "bot/mailroom/render.h"
#include "mail/address.h"

/* A finding's report, and its follow-ups (bot/mailroom/report.c). */
static const struct template_field diag_fields[] = {
	{ "location", TEMPLATE_TEXT, false, NULL }, /* FILE:LINE:COL, or FILE */
	{ "kind", TEMPLATE_TEXT, false, NULL },     /* error, warning */
	{ "message", TEMPLATE_TEXT, false, NULL },
	{ "source", TEMPLATE_TEXT, true, NULL },    /* numbered lines around it, "> " at it */
	{ "on", TEMPLATE_TEXT, true, NULL },        /* the targets it shows on, when not the report's */
	{ NULL },
};

static const struct template_field step_fields[] = {
	{ "commit", TEMPLATE_TEXT, false, NULL }, /* 12 digits */
	{ "result", TEMPLATE_TEXT, false, NULL }, /* good, bad, skip */
	{ "failures", TEMPLATE_TEXT, false, NULL },
	{ "runs", TEMPLATE_TEXT, false, NULL },
	{ "role", TEMPLATE_TEXT, false, NULL },   /* routine, boundary, search, revert */
	{ NULL },
};

static const struct template_field more_failure_fields[] = {
	{ "title", TEMPLATE_TEXT, false, NULL },
	{ "boots", TEMPLATE_TEXT, true, NULL }, /* "k/n" at the head */
	{ NULL },
};

static const struct template_field suspect_fields[] = {
	{ "commit", TEMPLATE_TEXT, false, NULL },
	{ "title", TEMPLATE_TEXT, false, NULL },
	{ NULL },
};

/* The fields of every finding report (templates/README.md describes each). */
static const struct template_field report_fields[] = {
	{ "bot_name", TEMPLATE_TEXT, false, NULL },
	{ "bot_address", TEMPLATE_TEXT, false, NULL },
	{ "headline", TEMPLATE_TEXT, false, NULL },
	{ "tree", TEMPLATE_TEXT, false, NULL },
	{ "url", TEMPLATE_TEXT, false, NULL },
	{ "branch", TEMPLATE_TEXT, true, NULL },
	{ "base", TEMPLATE_TEXT, true, NULL },         /* TREE/BRANCH: upstream of the tree */
	{ "series", TEMPLATE_TEXT, true, NULL },       /* "i/N" */
	{ "series_index", TEMPLATE_TEXT, true, NULL }, /* i */
	{ "series_total", TEMPLATE_TEXT, true, NULL }, /* N */
	{ "head", TEMPLATE_TEXT, false, NULL },
	{ "culprit", TEMPLATE_TEXT, false, NULL },
	{ "culprit_short", TEMPLATE_TEXT, false, NULL },
	{ "culprit_title", TEMPLATE_TEXT, false, NULL },
	{ "parent", TEMPLATE_TEXT, true, NULL },
	{ "author", TEMPLATE_TEXT, false, NULL },
	{ "author_name", TEMPLATE_TEXT, false, NULL },
	{ "author_date", TEMPLATE_TEXT, false, NULL },
	{ "committer", TEMPLATE_TEXT, true, NULL },
	{ "target", TEMPLATE_TEXT, false, NULL },
	{ "arch", TEMPLATE_TEXT, false, NULL },
	{ "config", TEMPLATE_TEXT, false, NULL },
	{ "compiler", TEMPLATE_TEXT, true, NULL },
	/* The other targets where the report's diagnostics show: "x86_64:allnoconfig, ..." */
	{ "also", TEMPLATE_TEXT, true, NULL },
	{ "reproduce", TEMPLATE_TEXT, false, NULL },
	{ "initramfs_command", TEMPLATE_TEXT, true, NULL }, /* with initramfs.sh attached */
	{ "boot_command", TEMPLATE_TEXT, true, NULL },
	{ "repro_boots", TEMPLATE_TEXT, true, NULL },
	{ "test", TEMPLATE_TEXT, true, NULL },       /* a failed test's name: "kunit/SUITE/TEST" */
	{ "test_alone", TEMPLATE_TEXT, true, NULL }, /* "kunit.filter_glob=SUITE.TEST" */
	/* A boot report's other failures of the same culprit (failed tests, say). */
	{ "more_failures", TEMPLATE_LIST, true, more_failure_fields },
	/* A command line that runs it alone: "make ... && ./kselftest/run_kselftest.sh -t vm:foo" */
	{ "test_alone_command", TEMPLATE_TEXT, true, NULL },
	{ "title", TEMPLATE_TEXT, false, NULL },
	{ "diags", TEMPLATE_LIST, true, diag_fields },
	{ "several", TEMPLATE_TEXT, true, NULL }, /* how many diagnostics, when more than one */
	{ "diags_heading", TEMPLATE_TEXT, true, NULL }, /* "The 2 new errors and 1 new warning:" */
	{ "excerpt", TEMPLATE_TEXT, true, NULL },
	{ "boots", TEMPLATE_TEXT, true, NULL },
	{ "rate", TEMPLATE_TEXT, true, NULL },       /* the search's estimate, not what was seen */
	{ "seen", TEMPLATE_TEXT, true, NULL },       /* "4 of 5": boots that showed it, as seen */
	{ "seen_boots", TEMPLATE_TEXT, true, NULL }, /* "5": the boots of the commits that carry it */
	{ "steps", TEMPLATE_LIST, false, step_fields },
	{ "bisect_size", TEMPLATE_TEXT, false, NULL }, /* "3 steps, 12 boots" */
	{ "confidence", TEMPLATE_TEXT, true, NULL },
	{ "revert", TEMPLATE_TEXT, true, NULL },
	{ "suspects", TEMPLATE_LIST, true, suspect_fields },
	{ "reason", TEMPLATE_TEXT, true, NULL },
	{ "reported_by", TEMPLATE_TEXT, false, NULL },
	{ "closes", TEMPLATE_TEXT, true, NULL },  /* without [mail] archive-url, or private: none */
	{ "fixes", TEMPLATE_TEXT, true, NULL },   /* "0123456789ab (\"subject\")" of a verified culprit */
	{ "regzbot", TEMPLATE_TEXT, true, NULL }, /* that culprit's 12 hex, on a --regzbot tree */
	/* [report] artifacts-url's directory of this report's full files; none when private */
	{ "artifacts", TEMPLATE_TEXT, true, NULL },
	/* The fixed follow-up only. */
	{ "fixed_by", TEMPLATE_TEXT, true, NULL },
	{ "fixed_by_short", TEMPLATE_TEXT, true, NULL },
	{ "fixed_by_title", TEMPLATE_TEXT, true, NULL },
	{ NULL },
};

/* The outbox's own mails: digests, the test mail, clean builds (bot/mailroom/outbox.c). */
/* The digest template's fields; see templates/README.md. */
static const struct template_field digest_item_fields[] = {
	{ "subject", TEMPLATE_TEXT, false, NULL },
	{ "message_id", TEMPLATE_TEXT, false, NULL },
	{ "kind", TEMPLATE_TEXT, false, NULL },
	{ "queued", TEMPLATE_TEXT, false, NULL },
	{ "attachment", TEMPLATE_TEXT, false, NULL },
	{ NULL },
};

static const struct template_field digest_fields[] = {
	{ "bot_name", TEMPLATE_TEXT, false, NULL },
	{ "bot_address", TEMPLATE_TEXT, false, NULL },
	{ "recipient", TEMPLATE_TEXT, false, NULL },
	{ "count", TEMPLATE_TEXT, false, NULL },
	{ "several", TEMPLATE_TEXT, true, NULL }, /* set when more than one: "mails" */
	{ "max_per_recipient_day", TEMPLATE_TEXT, false, NULL },
	{ "max_per_hour", TEMPLATE_TEXT, false, NULL },
	{ "mails", TEMPLATE_LIST, false, digest_item_fields },
	{ NULL },
};

/* The test mail's fields. */
static const struct template_field test_mail_fields[] = {
	{ "bot_name", TEMPLATE_TEXT, false, NULL },
	{ "bot_address", TEMPLATE_TEXT, false, NULL },
	{ "outbox", TEMPLATE_TEXT, false, NULL },
	{ NULL },
};

/* The clean-build mail's fields; see templates/README.md. */
static const struct template_field clean_fields[] = {
	{ "bot_name", TEMPLATE_TEXT, false, NULL },
	{ "bot_address", TEMPLATE_TEXT, false, NULL },
	{ "tree", TEMPLATE_TEXT, false, NULL },
	{ "url", TEMPLATE_TEXT, false, NULL },
	{ "branch", TEMPLATE_TEXT, true, NULL },
	{ "head", TEMPLATE_TEXT, false, NULL },
	{ "head_short", TEMPLATE_TEXT, false, NULL },
	{ "head_title", TEMPLATE_TEXT, false, NULL },
	{ "target", TEMPLATE_TEXT, false, NULL },
	{ "compiler", TEMPLATE_TEXT, true, NULL },
	{ "boots", TEMPLATE_TEXT, true, NULL },
	{ NULL },
};

/* The replies on a posted series (bot/mailroom/series.c). */
static const struct template_field series_base_fields[] = {
	{ "base", TEMPLATE_TEXT, false, NULL },
	{ "reason", TEMPLATE_TEXT, false, NULL },
	{ NULL },
};

static const struct template_field series_diag_fields[] = {
	{ "text", TEMPLATE_TEXT, false, NULL },
	{ NULL },
};

static const struct template_field series_patch_fields[] = {
	{ "n", TEMPLATE_TEXT, false, NULL },
	{ "title", TEMPLATE_TEXT, false, NULL },
	{ "result", TEMPLATE_TEXT, false, NULL },
	{ NULL },
};

/* The fields every series template has. */
#define SERIES_COMMON_FIELDS \
	{ "bot_name", TEMPLATE_TEXT, false, NULL }, \
	{ "bot_address", TEMPLATE_TEXT, false, NULL }, \
	{ "subject", TEMPLATE_TEXT, false, NULL },    /* of the mail answered */ \
	{ "title", TEMPLATE_TEXT, false, NULL },      /* the series' */ \
	{ "version", TEMPLATE_TEXT, false, NULL }, \
	{ "total", TEMPLATE_TEXT, false, NULL }, \
	{ "patch_count", TEMPLATE_TEXT, false, NULL }, /* "1 patch", "3 patches" */ \
	{ "sender", TEMPLATE_TEXT, false, NULL }, \
	{ "message_id", TEMPLATE_TEXT, false, NULL }, /* of the mail answered */ \
	{ "reported_by", TEMPLATE_TEXT, false, NULL }, \
	{ "closes", TEMPLATE_TEXT, true, NULL }

/* The reply on the patch that broke the build. */
static const struct template_field series_failure_fields[] = {
	SERIES_COMMON_FIELDS,
	{ "tree", TEMPLATE_TEXT, false, NULL },
	{ "base", TEMPLATE_TEXT, false, NULL },
	{ "base_how", TEMPLATE_TEXT, false, NULL },
	{ "target", TEMPLATE_TEXT, false, NULL },
	{ "compiler", TEMPLATE_TEXT, true, NULL },
	{ "n", TEMPLATE_TEXT, false, NULL },
	{ "patch_title", TEMPLATE_TEXT, false, NULL },
	{ "kind", TEMPLATE_TEXT, false, NULL },       /* "build error", "build warning", "boot failure" */
	{ "also", TEMPLATE_TEXT, true, NULL },        /* "arm64:defconfig (build error), ..." */
	{ "boot", TEMPLATE_TEXT, true, NULL },        /* set for a boot failure */
	/* A boot failure whose patch before booted no clean kernel: the revert is the evidence. */
	{ "reverted", TEMPLATE_TEXT, true, NULL },
	{ "reproduce", TEMPLATE_TEXT, true, NULL },
	{ "initramfs_command", TEMPLATE_TEXT, true, NULL }, /* boot failures, with initramfs.sh */
	{ "boot_command", TEMPLATE_TEXT, true, NULL },      /* boot failures */
	{ "diags", TEMPLATE_LIST, true, series_diag_fields },
	{ NULL },
};

/* The summary on the cover letter, and the clean reply. */
static const struct template_field series_summary_fields[] = {
	SERIES_COMMON_FIELDS,
	{ "tree", TEMPLATE_TEXT, false, NULL },
	{ "base", TEMPLATE_TEXT, false, NULL },
	{ "base_how", TEMPLATE_TEXT, false, NULL },
	{ "base_failing", TEMPLATE_TEXT, true, NULL }, /* targets failing on the base already */
	{ "note", TEMPLATE_TEXT, true, NULL },        /* a boot failure not pinned on a patch */
	{ "patches", TEMPLATE_LIST, false, series_patch_fields },
	{ NULL },
};

/* The series applies to no base tried. */
static const struct template_field series_no_base_fields[] = {
	SERIES_COMMON_FIELDS,
	{ "bases", TEMPLATE_LIST, false, series_base_fields },
	{ NULL },
};

/* The answer to a mail of #zeroday commands (bot/mailroom/commands.c). */
static const struct template_field command_result_fields[] = {
	{ "line", TEMPLATE_TEXT, false, NULL },
	{ "answer", TEMPLATE_TEXT, false, NULL },
	{ NULL },
};

static const struct template_field command_reply_fields[] = {
	{ "bot_name", TEMPLATE_TEXT, false, NULL },
	{ "bot_address", TEMPLATE_TEXT, false, NULL },
	{ "subject", TEMPLATE_TEXT, false, NULL },
	{ "intro", TEMPLATE_TEXT, true, NULL },
	{ "results", TEMPLATE_LIST, true, command_result_fields },
	{ NULL },
};

static const struct render_template templates[] = {
	{ "build-error", report_fields },
	{ "build-warning", report_fields },
	{ "boot-failure", report_fields },
	{ "boot-intermittent", report_fields },
	{ "inconclusive", report_fields },
	{ "fixed", report_fields },
	{ "dropped", report_fields },
	{ "digest", digest_fields },
	{ "test", test_mail_fields },
	{ "clean", clean_fields },
	{ "series-failure", series_failure_fields },
	{ "series-summary", series_summary_fields },
	{ "series-clean", series_summary_fields },
	{ "series-no-base", series_no_base_fields },
	{ "command-reply", command_reply_fields },
};

const struct render_template *render_find(const char *name)
{
	for (size_t i = 0; i < G_N_ELEMENTS(templates); i++) {
		if (strcmp(templates[i].name, name) == 0)
			return &templates[i];
	}
	return NULL;
}

bool render_check_templates(const char *dir, GError **error)
{
	for (size_t i = 0; i < G_N_ELEMENTS(templates); i++) {
		zd_autoptr(template) t = template_load(dir, templates[i].name, templates[i].schema,
						       error);

		if (!t)
			return false;
	}
	return true;
}

bool render_mail(struct reply *out, const struct config *config, const char *name,
		 const struct template_values *v, GError **error)
{
	const struct render_template *r = render_find(name);
	zd_autoptr(template) t = NULL;
	g_autofree char *text = NULL;
	g_autofree char *from = NULL;
	char *body;

	g_assert(r); /* a name not in the table is a programming error */
	t = template_load(config->mail_templates, name, r->schema, error);
	if (!t)
		return false;
	text = template_render(t, v, error);
	if (!text)
		return false;
	/* A template starts with its Subject: line and a blank line. */
	body = strstr(text, "\n\n");
	if (!g_str_has_prefix(text, "Subject: ") || !body || memchr(text, '\n', body - text)) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_CONFIG,
			    "%s/%s.txt: does not start with one Subject: line and a blank line",
			    config->mail_templates, name);
		return false;
	}
	out->subject = g_strndup(text + strlen("Subject: "), body - text - strlen("Subject: "));
	out->body = g_strdup(body + 2);
	from = address_format(config->mail_name, config->mail_address, error);
	if (!from)
		return false;
	out->from = g_steal_pointer(&from);
	return true;
}
