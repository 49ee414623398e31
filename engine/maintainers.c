/*
 * A kernel tree's get_maintainer.pl, run sandboxed on a patch: see
 * maintainers.h.
 */
#define G_LOG_DOMAIN "engine"

#include "autoconfig.h"

#include <errno.h>
#include <string.h>

#include <glib/gstdio.h>

#include "engine/maintainers.h"
#include "engine/run.h"

/* Where the inputs are seen inside the sandbox. */
#define SANDBOX_DIR "/zeroday-maintainers"
/* The longest line kept, in bytes. */
#define LINE_MAX_BYTES 512
/* Memory for perl: MAINTAINERS is parsed into hashes. */
#define PERL_MEMORY (1024ULL * 1024 * 1024)

void maintainers_init(struct maintainers *m)
{
	m->people = g_new0(char *, 1);
	m->lists = g_new0(char *, 1);
}

void maintainers_release(struct maintainers *m)
{
	g_clear_pointer(&m->people, g_strfreev);
	g_clear_pointer(&m->lists, g_strfreev);
}

/* Whether @line is text a report may carry: valid UTF-8, no control characters. */
static bool printable(const char *line)
{
	if (!g_utf8_validate(line, -1, NULL))
		return false;
	for (const char *p = line; *p; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return false;
	}
	return true;
}

/* Adds @item to @list unless it holds it, or MAINTAINERS_MAX items already. */
static void add_once(GPtrArray *list, const char *item)
{
	if (list->len >= MAINTAINERS_MAX)
		return;
	for (guint i = 0; i < list->len; i++) {
		if (strcmp(list->pdata[i], item) == 0)
			return;
	}
	g_ptr_array_add(list, g_strdup(item));
}

/*
 * Sorts the lines of @text: "Name <addr> (role:subsystem)" or "addr
 * (role)". A role naming a list makes it a list, any other (or none) a
 * person. Lines that cannot be text of a mail are dropped.
 */
static void parse_output(GPtrArray *people, GPtrArray *lists, const char *text)
{
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);

	for (char **l = lines; *l; l++) {
		char *line = g_strstrip(*l);
		char *role = NULL;
		size_t len = strlen(line);

		if (len == 0 || len > LINE_MAX_BYTES || !printable(line))
			continue;
		if (line[len - 1] == ')') {
			char *open = g_strrstr(line, " (");

			if (open) {
				*open = '\0';
				role = open + 2;
				role[strlen(role) - 1] = '\0';
				g_strchomp(line);
			}
		}
		if (!*line)
			continue;
		add_once(role && strstr(role, "list") ? lists : people, line);
	}
}

/* Writes @len bytes of @data to @name in @dir, readable by the sandbox's user. */
static bool write_input(const char *dir, const char *name, const char *data, gsize len,
			GError **error)
{
	g_autofree char *path = g_build_filename(dir, name, NULL);
	g_autoptr(GError) local = NULL;

	if (!g_file_set_contents_full(path, data, (gssize)len, G_FILE_SET_CONTENTS_NONE, 0644,
				      &local)) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s", local->message);
		return false;
	}
	return true;
}

/* Runs the script on the inputs in @in; its output goes to @log. */
static bool run_script(const char *in, const char *log, const struct maintainers_opts *opts,
		       GError **error)
{
	static const char *const env[] = {
		"PATH=/usr/bin:/bin", "LC_ALL=C", "HOME=/tmp", "TMPDIR=/tmp", NULL,
	};
	static const char *const argv[] = {
		"perl", "./get_maintainer.pl", "--no-tree", "--mpath", "./MAINTAINERS",
		"--nogit", "--nogit-fallback", "--nofixes", "--nogit-blame", "--m", "--r", "--l",
		"--n", "--roles", "--norolestats", "--multiline", "--nomailmap", "./patch", NULL,
	};
	const struct run_bind binds[] = {
		{ in, SANDBOX_DIR, false },
		{ NULL, NULL, false },
	};
	const struct run_sandbox sandbox = { .binds = binds, .allow_network = false };
	guint64 output_max = opts->output_max ? opts->output_max : MAINTAINERS_OUTPUT_MAX;
	unsigned timeout_s = opts->timeout_s ? opts->timeout_s : MAINTAINERS_TIMEOUT_S;
	struct run_opts ro = {
		.argv = argv, .env = env, .cwd = opts->sandbox ? SANDBOX_DIR : in,
		.log_path = log, .log_max = output_max, .max_file_size = 1024 * 1024,
		.timeout_s = timeout_s, .max_memory = PERL_MEMORY,
		.sandbox = opts->sandbox ? &sandbox : NULL,
	};
	struct run_result result = { 0 };
	g_autofree char *text = NULL;
	g_auto(GStrv) lines = NULL;
	const char *last = "";

	if (!run_child(&result, &ro, error))
		return false;
	switch (result.outcome) {
	case RUN_TIMEOUT:
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_TIMEOUT,
			    "get_maintainer.pl: no answer in %u s", timeout_s);
		return false;
	case RUN_SETUP_FAILED:
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED,
			    "get_maintainer.pl: the sandbox failed: %s", result.detail);
		return false;
	case RUN_SIGNALED:
	case RUN_NO_SPACE:
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED,
			    "get_maintainer.pl: killed by signal %d", result.status);
		return false;
	case RUN_EXITED:
		break;
	}
	if (result.output > output_max) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_LIMIT,
			    "get_maintainer.pl: more than %" G_GUINT64_FORMAT " bytes of output "
			    "(%" G_GUINT64_FORMAT ")", output_max, result.output);
		return false;
	}
	if (result.status != 0) {
		/* The last line it printed says why, mostly. */
		if (g_file_get_contents(log, &text, NULL, NULL)) {
			lines = g_strsplit(g_strstrip(text), "\n", -1);
			for (char **l = lines; *l; l++)
				last = *l;
		}
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED,
			    "get_maintainer.pl: exit status %d%s%.200s", result.status,
			    *last && printable(last) ? ": " : "", printable(last) ? last : "");
		return false;
	}
	return true;
}

bool maintainers_run(struct maintainers *out, const char *script, gsize script_len,
		     const char *maintainers, gsize maintainers_len, const char *patch,
		     gsize patch_len, const struct maintainers_opts *opts, GError **error)
{
	g_autofree char *dir = run_private_dir(opts->tmp_parent, "zeroday-maintainers", error);
	g_autofree char *in = dir ? g_build_filename(dir, "in", NULL) : NULL;
	g_autofree char *log = dir ? g_build_filename(dir, "output", NULL) : NULL;
	g_autofree char *text = NULL;
	g_autoptr(GPtrArray) people = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GPtrArray) lists = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GError) cleanup = NULL;
	gsize len = 0;
	bool ok = false;

	if (!dir)
		return false;
	/* Only in/ is the sandbox's to see; the output stays beside it. */
	if (opts->sandbox) {
		if (!run_sandbox_prepare_dir(in, error))
			goto out;
	} else if (g_mkdir(in, 0755) < 0) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s: %s", in,
			    g_strerror(errno));
		goto out;
	}
	if (!write_input(in, "get_maintainer.pl", script, script_len, error) ||
	    !write_input(in, "MAINTAINERS", maintainers, maintainers_len, error) ||
	    !write_input(in, "patch", patch, patch_len, error) ||
	    !run_script(in, log, opts, error))
		goto out;
	if (!g_file_get_contents(log, &text, &len, NULL)) {
		/* Nothing printed: the log was never written to. */
		text = g_strdup("");
	}
	parse_output(people, lists, text);
	g_ptr_array_add(people, NULL);
	g_ptr_array_add(lists, NULL);
	g_strfreev(out->people);
	g_strfreev(out->lists);
	out->people = (char **)g_ptr_array_steal(people, NULL);
	out->lists = (char **)g_ptr_array_steal(lists, NULL);
	ok = true;
out:
	if (!run_remove_tree(dir, &cleanup))
		g_warning("get_maintainer.pl: cannot remove %s: %s", dir, cleanup->message);
	return ok;
}

/* Reads the script and MAINTAINERS of commit @oid (caller frees both). */
static bool read_inputs(struct repo *repo, const char *oid, char **script, gsize *script_len,
			char **file, gsize *file_len, GError **error)
{
	*script = repo_file_at(repo, oid, MAINTAINERS_SCRIPT, MAINTAINERS_INPUT_MAX, script_len,
			       error);
	if (!*script)
		return false;
	*file = repo_file_at(repo, oid, MAINTAINERS_FILE, MAINTAINERS_INPUT_MAX, file_len, error);
	return *file != NULL;
}

bool maintainers_of_patch(struct maintainers *out, struct repo *repo, const char *tree_oid,
			  const char *patch, gsize patch_len, const struct maintainers_opts *opts,
			  GError **error)
{
	g_autofree char *script = NULL;
	g_autofree char *file = NULL;
	gsize script_len = 0, file_len = 0;

	if (patch_len > MAINTAINERS_INPUT_MAX) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_LIMIT,
			    "the patch is larger than %d bytes", MAINTAINERS_INPUT_MAX);
		return false;
	}
	if (!read_inputs(repo, tree_oid, &script, &script_len, &file, &file_len, error))
		return false;
	return maintainers_run(out, script, script_len, file, file_len, patch, patch_len, opts,
			       error);
}

bool maintainers_of_commit(struct maintainers *out, struct repo *repo, const char *oid,
			   const struct maintainers_opts *opts, GError **error)
{
	g_autofree char *script = NULL;
	g_autofree char *file = NULL;
	g_autofree char *patch = NULL;
	gsize script_len = 0, file_len = 0, patch_len = 0;

	/* The script first: most trees that are not the kernel's have none. */
	if (!read_inputs(repo, oid, &script, &script_len, &file, &file_len, error))
		return false;
	patch = repo_commit_patch(repo, oid, MAINTAINERS_INPUT_MAX, &patch_len, error);
	if (!patch)
		return false;
	return maintainers_run(out, script, script_len, file, file_len, patch, patch_len, opts,
			       error);
}
