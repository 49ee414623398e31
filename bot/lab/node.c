/*
 * A build on a cluster node, and the result it leaves: see node.h.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <errno.h>
#include <string.h>
#include <json-glib/json-glib.h>

#include "bot/bot.h"
#include "bot/config.h"
#include "bot/lab/builder.h"
#include "bot/lab/node.h"
#include "bot/status.h"
#include "engine/build.h"
#include "engine/decode.h"
#include "engine/diag.h"
#include "engine/hostile.h"
#include "engine/names.h"
#include "engine/repo.h"

/* The most bytes of a build's log zeroday takes back from a node. */
#define NODE_LOG_MAX (64 * 1024 * 1024)

/* The format of result.json; a node and zeroday of different versions refuse each other's. */
#define NODE_RESULT_VERSION 1

void node_job_clear(struct node_job *job)
{
	g_clear_pointer(&job->source, g_free);
	g_clear_pointer(&job->commit, g_free);
	g_clear_pointer(&job->target, g_free);
	g_clear_pointer(&job->objects, g_free);
	g_clear_pointer(&job->ccache_shared, g_free);
}

static bool is_commit_id(const char *s)
{
	if (!s || strlen(s) != 40)
		return false;
	for (const char *p = s; *p; p++) {
		if (!g_ascii_isxdigit(*p) || g_ascii_isupper(*p))
			return false;
	}
	return true;
}

/* A file name a node may give in its result: one component, no dot first. */
static bool is_plain_name(const char *s)
{
	return s && *s && *s != '.' && !strchr(s, '/') && strlen(s) < 256;
}

bool node_job_write(const struct node_job *job, const char *dir, GError **error)
{
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autofree char *path = g_build_filename(dir, "job.ini", NULL);

	g_key_file_set_string(kf, "job", "source", job->source);
	g_key_file_set_string(kf, "job", "commit", job->commit);
	g_key_file_set_string(kf, "job", "target", job->target);
	g_key_file_set_string(kf, "job", "objects", job->objects);
	if (job->ccache_shared)
		g_key_file_set_string(kf, "job", "ccache-shared", job->ccache_shared);
	return g_key_file_save_to_file(kf, path, error);
}

/* Reads @dir/job.ini into @job, each field checked. */
static bool job_read(struct node_job *job, const char *dir, GError **error)
{
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autofree char *path = g_build_filename(dir, "job.ini", NULL);
	g_autoptr(GError) local = NULL;

	if (!g_key_file_load_from_file(kf, path, G_KEY_FILE_NONE, &local)) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_FAILED, "%s: %s", path, local->message);
		return false;
	}
	job->source = g_key_file_get_string(kf, "job", "source", NULL);
	job->commit = g_key_file_get_string(kf, "job", "commit", NULL);
	job->target = g_key_file_get_string(kf, "job", "target", NULL);
	job->objects = g_key_file_get_string(kf, "job", "objects", NULL);
	job->ccache_shared = g_key_file_get_string(kf, "job", "ccache-shared", NULL);
	if (!job->source || !names_tree_check(job->source, NULL) || !is_commit_id(job->commit) ||
	    !job->target || !job->objects || !g_path_is_absolute(job->objects) ||
	    (job->ccache_shared && !g_path_is_absolute(job->ccache_shared))) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_FAILED,
			    "%s: needs source (a tree name), commit (a full id), target and "
			    "objects (an absolute path); ccache-shared is an absolute path", path);
		return false;
	}
	return true;
}

/* The name of @path in out/ when the build wrote it there, else NULL (caller frees). */
static char *kept_name(const char *path)
{
	if (!path || !g_file_test(path, G_FILE_TEST_IS_REGULAR))
		return NULL;
	return g_path_get_basename(path);
}

/* The result of @row as JSON text (caller frees); file names relative to out/. */
static char *result_text(const struct build_row *row)
{
	g_autoptr(JsonBuilder) b = json_builder_new();
	g_autoptr(JsonGenerator) gen = json_generator_new();
	g_autoptr(JsonNode) root = NULL;
	/* Only the files the build left: one that stopped early has no .config. */
	g_autofree char *log = kept_name(row->log_path);
	g_autofree char *config = kept_name(row->config_path);
	g_autofree char *image = kept_name(row->image_path);

	json_builder_begin_object(b);
	status_json_members(b, "ntttfttt", "version", NODE_RESULT_VERSION, "node", g_get_host_name(),
			    "status", build_status_name(row->status), "reason", row->reason,
			    "seconds", row->seconds, "log", log, "config", config, "image", image,
			    NULL);
	json_builder_set_member_name(b, "diags");
	json_builder_begin_array(b);
	for (guint i = 0; row->diags && i < row->diags->len; i++) {
		const struct diag *d = row->diags->pdata[i];

		json_builder_begin_object(b);
		status_json_members(b, "ttnnttt", "checker", d->checker, "file", d->file, "line",
				    (int)d->line, "column", (int)d->column, "function", d->function,
				    "message", d->message, "kind", diag_kind_name(d->kind), NULL);
		json_builder_end_object(b);
	}
	json_builder_end_array(b);
	json_builder_end_object(b);
	root = json_builder_get_root(b);
	json_generator_set_root(gen, root);
	return json_generator_to_data(gen, NULL);
}

bool node_build(const char *jobdir, GError **error)
{
	g_autofree char *conf = g_build_filename(jobdir, "job.conf", NULL);
	g_autofree char *outdir = g_build_filename(jobdir, "out", NULL);
	g_autofree char *fragments = config_fragment_dir();
	g_autofree char *result = g_build_filename(jobdir, "result.json", NULL);
	g_autofree char *text = NULL;
	zd_auto(node_job) job = { 0 };
	zd_autoptr(config) config = NULL;
	zd_autoptr(build_row) row = NULL;
	struct build_target target = { 0 };
	struct builder_site site = { 0 };

	config = config_load(conf, NULL, error);
	if (!config || !repo_global_init(&config->limits, error) || !job_read(&job, jobdir, error))
		return false;
	if (!build_target_parse(&target, job.target, fragments, error))
		return false;
	if (g_mkdir_with_parents(outdir, 0755) < 0) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_FAILED, "%s: %s", outdir, g_strerror(errno));
		build_target_clear(&target);
		return false;
	}
	/* One spool, many nodes: a root written with %h is each node's own. */
	if (strstr(config->state_dir, "%h")) {
		g_auto(GStrv) parts = g_strsplit(config->state_dir, "%h", -1);

		g_free(config->state_dir);
		config->state_dir = g_strjoinv(g_get_host_name(), parts);
	}
	site.root = config->state_dir;
	site.logdir = outdir;
	site.imagedir = outdir;
	site.ccache_shared = job.ccache_shared;
	row = builder_build_commit(config, &site, job.source, job.objects, job.commit, &target,
				   error);
	build_target_clear(&target);
	if (!row)
		return false;
	text = result_text(row);
	g_message("%.12s for %s on %s: %s", job.commit, job.target, g_get_host_name(),
		  build_status_name(row->status));
	/* Written last, through a rename: a result zeroday sees is whole. */
	return g_file_set_contents(result, text, -1, error);
}

/* Reads member @name of @o as a string: NULL when absent or null, *@ok false when not a string. */
static const char *member_text(JsonObject *o, const char *name, bool *ok)
{
	JsonNode *n = json_object_get_member(o, name);

	if (!n || JSON_NODE_HOLDS_NULL(n))
		return NULL;
	if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_STRING) {
		*ok = false;
		return NULL;
	}
	return json_node_get_string(n);
}

/* Reads member @name of @o as a count (0 when absent); *@ok false when not one. */
static unsigned member_count(JsonObject *o, const char *name, bool *ok)
{
	JsonNode *n = json_object_get_member(o, name);
	gint64 v;

	if (!n)
		return 0;
	if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_INT64) {
		*ok = false;
		return 0;
	}
	v = json_node_get_int(n);
	if (v < 0 || v > G_MAXINT) {
		*ok = false;
		return 0;
	}
	return (unsigned)v;
}

/* The diagnostics of a result, fingerprinted here; NULL when one does not hold together. */
static GPtrArray *diags_read(JsonArray *a)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)diag_free);

	for (guint i = 0; i < json_array_get_length(a); i++) {
		JsonNode *n = json_array_get_element(a, i);
		JsonObject *o = JSON_NODE_HOLDS_OBJECT(n) ? json_node_get_object(n) : NULL;
		const char *kind, *checker, *file, *function, *message;
		struct diag *d;
		bool ok = true;

		if (!o)
			return NULL;
		kind = member_text(o, "kind", &ok);
		checker = member_text(o, "checker", &ok);
		file = member_text(o, "file", &ok);
		function = member_text(o, "function", &ok);
		message = member_text(o, "message", &ok);
		if (!ok || !kind || !checker || !file || !message ||
		    (strcmp(kind, "error") != 0 && strcmp(kind, "warning") != 0))
			return NULL;
		d = g_new0(struct diag, 1);
		g_ptr_array_add(out, d);
		d->kind = strcmp(kind, "error") == 0 ? DIAG_ERROR : DIAG_WARNING;
		d->checker = g_strdup(checker);
		d->file = g_strdup(file);
		d->function = g_strdup(function);
		d->message = g_strdup(message);
		d->line = member_count(o, "line", &ok);
		d->column = member_count(o, "column", &ok);
		if (!ok)
			return NULL;
		/* Not the node's word: the fingerprint is computed here. */
		d->fingerprint = diag_fingerprint(d->kind, d->checker, d->file, d->function,
						  d->message);
	}
	return g_steal_pointer(&out);
}

/* Copies out/@name of @jobdir to @dest; false with @error when it is missing or refused. */
static bool take_file(const char *jobdir, const char *name, guint64 max, const char *dest,
		      GError **error)
{
	g_autofree char *outdir = g_build_filename(jobdir, "out", NULL);

	return hostile_copy(outdir, name, max, dest, 0644, error);
}

/*
 * Copies the vmlinux the node kept beside out/@image_name, if it did, to
 * beside @image: only for decoding traces, so that a missing or refused
 * one is a log line, not a fault of the result. The result does not name
 * it: its name is the image's (builder_vmlinux_path()).
 */
static void take_vmlinux(const char *jobdir, const char *image_name, const char *image)
{
	g_autofree char *name = builder_vmlinux_path(image_name);
	g_autofree char *dest = builder_vmlinux_path(image);
	g_autoptr(GError) local = NULL;

	if (!name || !dest || take_file(jobdir, name, DECODE_VMLINUX_MAX, dest, &local))
		return;
	if (!g_error_matches(local, ENGINE_ERROR, ENGINE_ERROR_NOT_FOUND))
		g_message("the node's vmlinux in %s is not kept: %s", jobdir, local->message);
}

static struct build_row *unreadable(GError **error, const char *jobdir, const char *why)
{
	g_set_error(error, BOT_ERROR, BOT_ERROR_TEMPORARY, "the node's result in %s: %s", jobdir,
		    why);
	return NULL;
}

struct build_row *node_result_read(const char *jobdir, const struct node_job *job,
				   const char *logdir, const char *imagedir, const char *stamp,
				   char **node_out, GError **error)
{
	g_autofree char *text = NULL;
	g_autoptr(GError) local = NULL;
	g_autoptr(JsonParser) parser = json_parser_new();
	zd_autoptr(build_row) row = g_new0(struct build_row, 1);
	g_autofree char *log = g_strconcat(logdir, "/", stamp, ".log", NULL);
	g_autofree char *config = g_strconcat(logdir, "/", stamp, ".config", NULL);
	g_autofree char *image = g_strconcat(imagedir, "/", stamp, ".image", NULL);
	const char *status, *node, *reason, *log_name, *config_name, *image_name;
	JsonObject *o;
	JsonNode *n;
	gsize len;
	bool ok = true;

	if (!hostile_read(&text, &len, jobdir, "result.json", NODE_RESULT_MAX, &local)) {
		if (g_error_matches(local, ENGINE_ERROR, ENGINE_ERROR_NOT_FOUND)) {
			g_set_error(error, BOT_ERROR, BOT_ERROR_NOT_FOUND, "no result in %s", jobdir);
			return NULL;
		}
		return unreadable(error, jobdir, local->message);
	}
	if (!json_parser_load_from_data(parser, text, (gssize)len, &local))
		return unreadable(error, jobdir, local->message);
	n = json_parser_get_root(parser);
	o = n && JSON_NODE_HOLDS_OBJECT(n) ? json_node_get_object(n) : NULL;
	if (!o || member_count(o, "version", &ok) != NODE_RESULT_VERSION || !ok)
		return unreadable(error, jobdir, "not a result of this version of zeroday");
	status = member_text(o, "status", &ok);
	node = member_text(o, "node", &ok);
	reason = member_text(o, "reason", &ok);
	log_name = member_text(o, "log", &ok);
	config_name = member_text(o, "config", &ok);
	image_name = member_text(o, "image", &ok);
	n = json_object_get_member(o, "seconds");
	if (!ok || !status || !build_status_parse(status, &row->status) || !node ||
	    !names_tree_check(node, NULL) || (log_name && !is_plain_name(log_name)) ||
	    (config_name && !is_plain_name(config_name)) ||
	    (image_name && !is_plain_name(image_name)) || !n || !JSON_NODE_HOLDS_VALUE(n) ||
	    (json_node_get_value_type(n) != G_TYPE_DOUBLE &&
	     json_node_get_value_type(n) != G_TYPE_INT64))
		return unreadable(error, jobdir, "a field is missing or malformed");
	row->seconds = json_node_get_double(n);
	n = json_object_get_member(o, "diags");
	if (!n || !JSON_NODE_HOLDS_ARRAY(n) || !(row->diags = diags_read(json_node_get_array(n))))
		return unreadable(error, jobdir, "a diagnostic is missing or malformed");
	if (g_mkdir_with_parents(logdir, 0755) < 0 || g_mkdir_with_parents(imagedir, 0755) < 0) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_FAILED, "%s: %s", logdir, g_strerror(errno));
		return NULL;
	}
	/* What the result names must be there: outputs deleted are no build. */
	if ((log_name && !take_file(jobdir, log_name, NODE_LOG_MAX, log, &local)) ||
	    (config_name && !take_file(jobdir, config_name, BUILD_MAX_CONFIG, config, &local)) ||
	    (image_name && !take_file(jobdir, image_name, BUILD_MAX_IMAGE, image, &local)))
		return unreadable(error, jobdir, local->message);
	if (image_name)
		take_vmlinux(jobdir, image_name, image);
	row->source = g_strdup(job->source);
	row->commit = g_strdup(job->commit);
	row->target = g_strdup(job->target);
	row->reason = g_strdup(reason);
	row->log_path = log_name ? g_steal_pointer(&log) : NULL;
	row->config_path = config_name ? g_steal_pointer(&config) : NULL;
	row->image_path = image_name ? g_steal_pointer(&image) : NULL;
	row->created = g_get_real_time() / G_USEC_PER_SEC;
	if (node_out)
		*node_out = g_strdup(node);
	return g_steal_pointer(&row);
}
