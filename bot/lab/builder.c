/*
 * Building a commit against its parent: see builder.h.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bot/bot.h"
#include "bot/lab/builder.h"
#include "engine/decode.h"
#include "engine/diag.h"
#include "engine/hostile.h"
#include "engine/repo.h"
#include "engine/run.h"

void builder_result_free(struct builder_result *r)
{
	if (!r)
		return;
	if (r->fresh)
		g_ptr_array_unref(r->fresh);
	build_row_free(r->build);
	build_row_free(r->parent_build);
	g_free(r->target);
	g_free(r->commit);
	g_free(r->parent);
	g_free(r);
}

#define IMAGE_SUFFIX ".image"
#define VMLINUX_SUFFIX ".vmlinux"
#define KSELFTEST_SUFFIX ".kselftest"

char *builder_vmlinux_path(const char *image_path)
{
	if (!image_path || !g_str_has_suffix(image_path, IMAGE_SUFFIX))
		return NULL;
	return g_strdup_printf("%.*s" VMLINUX_SUFFIX,
			       (int)(strlen(image_path) - strlen(IMAGE_SUFFIX)), image_path);
}

/*
 * Keeps the build's vmlinux beside its image @image, for decoding the
 * traces of its boots: taken out as the image is, under a size cap. Its
 * absence (an old tree, a cap exceeded) costs only the decoding: a log
 * line, no error.
 */
static void keep_vmlinux(const char *builddir, const char *image)
{
	g_autofree char *kept = builder_vmlinux_path(image);
	g_autoptr(GError) local = NULL;

	if (!kept || hostile_copy(builddir, "vmlinux", DECODE_VMLINUX_MAX, kept, 0644, &local))
		return;
	if (g_error_matches(local, ENGINE_ERROR, ENGINE_ERROR_NOT_FOUND))
		g_info("no vmlinux kept beside %s: %s", image, local->message);
	else
		g_message("no vmlinux kept beside %s: %s", image, local->message);
}

char *builder_kselftest_path(const char *image_path)
{
	if (!image_path || !g_str_has_suffix(image_path, IMAGE_SUFFIX))
		return NULL;
	return g_strconcat(image_path, KSELFTEST_SUFFIX, NULL);
}

/* What a selftest install tree taken out of a build may hold. */
static const struct hostile_tree_caps kselftest_caps = {
	.max_files = 20000, .max_depth = 16, .max_bytes = 512ULL * 1024 * 1024,
};

/*
 * Keeps the selftests the build installed beside its image @image, for its
 * boots to pack (engine/initramfs.h): copied out of the build directory
 * as hostile files (hostile_copy_tree()). When they did not build, or
 * cannot be taken out, the kept directory holds only the note
 * KSELFTEST_FAILED with why: the kselftest payload reports it as a failed
 * test, and the kernel's build stays good.
 */
static void keep_kselftests(const char *builddir, const char *image,
			    const struct build_output *out)
{
	g_autofree char *kept = builder_kselftest_path(image);
	g_autofree char *note = NULL;
	g_autofree char *why = NULL;
	g_autoptr(GError) local = NULL;

	if (!kept || out->kselftest == BUILD_KSELFTEST_NONE)
		return;
	if (out->kselftest == BUILD_KSELFTEST_OK &&
	    hostile_copy_tree(builddir, BUILD_KSELFTEST_INSTALL, kept, &kselftest_caps, &local))
		return;
	why = local ? g_strdup_printf("taking the selftests out: %s", local->message)
		    : g_strdup(out->kselftest_reason ? out->kselftest_reason : "unknown");
	g_message("%s: %s", image, why);
	note = g_build_filename(kept, BUILDER_KSELFTEST_FAILED, NULL);
	if (g_mkdir_with_parents(kept, 0755) < 0 ||
	    !g_file_set_contents(note, why, -1, NULL))
		g_warning("%s: %s", kept, g_strerror(errno));
}

struct progress {
	const char *target;
	const char *commit;
	gint64 start;
};

static void draw_progress(const char *line, void *data)
{
	const struct progress *p = data;
	gint64 s = (g_get_monotonic_time() - p->start) / G_USEC_PER_SEC;

	fprintf(stderr, "\r\033[K%s %.12s %3" G_GINT64_FORMAT "s  %.60s", p->target, p->commit,
		s, line);
	fflush(stderr);
}

/* build_env.changes_since: the paths between the configured commit and this one. */
static char **changes_since(const char *old_commit, const char *new_commit, void *data)
{
	g_autoptr(GError) error = NULL;

	/* A commit that is gone means "unknown": the caller configures again. */
	return repo_worktree_diff(data, old_commit, new_commit, &error);
}

char *builder_source_key(const char *source)
{
	g_autofree char *sum = NULL;

	if (!g_str_has_prefix(source, "path:"))
		return g_strdup(source);
	sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256, source, -1);
	return g_strdup_printf("path-%.16s", sum);
}

/* Builds one commit, which @wt has checked out: the build, not stored. */
static struct build_row *build_in(const struct config *config, const struct builder_site *site,
				  const char *source, struct worktree *wt,
				  const struct build_target *target, const char *commit,
				  const char *workdir, bool show_progress, GError **error)
{
	g_autofree char *key = builder_source_key(source);
	g_autofree char *target_dir = build_target_dirname(target);
	g_autofree char *builddir = g_build_filename(site->root, "build", key, target_dir, NULL);
	g_autofree char *tools = g_build_filename(site->root, "tools", NULL);
	/* Each tree's cache is its own: a build can plant anything in it. */
	g_autofree char *ccache = g_build_filename(site->root, "ccache", key, NULL);
	g_autofree char *shared = site->ccache_shared
		? g_build_filename(site->ccache_shared, key, NULL) : NULL;
	g_autofree char *logdir = site->logdir ? g_strdup(site->logdir)
					       : g_build_filename(site->root, "logs", "build", key, NULL);
	g_autofree char *stamp = NULL;
	g_autofree char *ccache_bin = run_find_program("ccache");
	g_auto(GStrv) changed = NULL;
	struct build_output out = { 0 };
	struct progress progress = { .target = target->spec, .commit = commit,
				     .start = g_get_monotonic_time() };
	struct build_env env = {
		.srcdir = workdir, .builddir = builddir, .tools_dir = tools,
		.ccache_dir = config->build_ccache && ccache_bin ? ccache : NULL,
		.ccache_shared = shared,
		.jobs = config->build_jobs, .timeout_s = config->build_timeout,
		.max_memory = config->build_max_memory, .max_procs = config->build_max_procs,
		.sandbox = config->build_sandbox,
		.progress = show_progress ? draw_progress : NULL, .progress_data = &progress,
	};
	struct build_row *row = NULL;

	if (g_mkdir_with_parents(logdir, 0755) < 0) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_FAILED, "%s: %s", logdir, g_strerror(errno));
		return NULL;
	}
	stamp = g_strdup_printf("%s/%.12s-%s-%" G_GINT64_FORMAT, logdir, commit, target_dir,
				g_get_real_time() / G_USEC_PER_SEC);
	env.log_path = g_strconcat(stamp, ".log", NULL);
	env.config_copy = g_strconcat(stamp, ".config", NULL);
	env.commit = commit;
	env.changes_since = changes_since;
	env.changes_data = wt;
	if (!build_install_tools(tools, error))
		goto out;
	if (target->checks & BUILD_COCCI) {
		changed = repo_worktree_changed_files(wt, commit, error);
		if (!changed)
			goto out;
		env.changed_files = (const char *const *)changed;
	}
	g_info("building %s for %s", commit, target->spec);
	if (!build_run(&out, target, &env, error))
		goto out;
	if (show_progress)
		fprintf(stderr, "\r\033[K");
	row = g_new0(struct build_row, 1);
	row->source = g_strdup(source);
	row->commit = g_strdup(commit);
	row->target = g_strdup(target->spec);
	row->status = out.status;
	row->reason = g_strdup(out.reason);
	row->seconds = out.seconds;
	row->log_path = g_strdup(env.log_path);
	row->config_path = g_strdup(env.config_copy);
	row->created = g_get_real_time() / G_USEC_PER_SEC;
	row->diags = g_steal_pointer(&out.diags);
	if (out.status == BUILD_OK && build_image_name(target)) {
		/*
		 * Keep the image: the build directory moves on to the next
		 * commit. It is the build's file: taken out without following
		 * links, a regular file under a size cap, or the build is an
		 * infrastructure error that says why.
		 */
		g_autofree char *images = site->imagedir
			? g_strdup(site->imagedir)
			: g_build_filename(site->root, "images", key, NULL);
		g_autofree char *base = g_path_get_basename(stamp);
		g_autofree char *kept = g_strdup_printf("%s/%s" IMAGE_SUFFIX, images, base);
		g_autoptr(GError) local = NULL;

		if (g_mkdir_with_parents(images, 0755) < 0) {
			g_set_error(error, BOT_ERROR, BOT_ERROR_FAILED, "%s: %s", images,
				    g_strerror(errno));
			g_clear_pointer(&row, build_row_free);
			goto out;
		}
		if (hostile_copy(builddir, build_image_name(target), BUILD_MAX_IMAGE, kept, 0644,
				 &local)) {
			row->image_path = g_steal_pointer(&kept);
			keep_vmlinux(builddir, row->image_path);
			keep_kselftests(builddir, row->image_path, &out);
		} else if (!g_error_matches(local, ENGINE_ERROR, ENGINE_ERROR_NOT_FOUND)) {
			g_free(row->reason);
			row->status = BUILD_INFRA;
			row->reason = g_strdup_printf("taking the image out: %s", local->message);
		}
	}
out:
	build_output_clear(&out);
	g_free((char *)env.log_path);
	g_free((char *)env.config_copy);
	return row;
}

/* A build_output view of a stored build, for build_compare(). */
static struct build_output as_output(const struct build_row *row)
{
	struct build_output out = {
		.status = row->status,
		.reason = row->reason,
		.diags = row->diags,
		.seconds = row->seconds,
	};

	return out;
}

/* Returns the build of @commit for @t: the stored one, or a new one, then stored. */
static struct build_row *stored_or_built(struct db *db, const struct builder_request *req,
					 const struct build_target *t, const char *commit,
					 builder_build_fn build, void *data, GError **error)
{
	struct build_row *row = NULL;

	if (!req->rebuild) {
		if (!db_build_find(db, req->source, commit, t->spec, &row, error))
			return NULL;
		if (row)
			return row;
	}
	row = build(data, t, commit, error);
	if (!row)
		return NULL;
	if (!db_tx_begin(db, error) || !db_build_add(db, row, error) || !db_tx_commit(db, error)) {
		db_tx_rollback(db);
		g_clear_pointer(&row, build_row_free);
	}
	return row;
}

/* The verdict of @r against its parent's build, and its record in the store. */
static bool judge(struct db *db, struct builder_result *r, GError **error)
{
	struct build_output child = as_output(r->build), base = { 0 };
	g_autoptr(GString) seqs = g_string_new(NULL);
	g_autoptr(GHashTable) fresh = g_hash_table_new(NULL, NULL);

	if (r->parent_build)
		base = as_output(r->parent_build);
	r->verdict = build_compare(&child, r->parent_build ? &base : NULL, &r->fresh);
	/* The new diagnostics' sequence numbers, in one pass. */
	for (guint j = 0; j < r->fresh->len; j++)
		g_hash_table_add(fresh, r->fresh->pdata[j]);
	for (guint k = 0; k < r->build->diags->len; k++) {
		if (g_hash_table_contains(fresh, r->build->diags->pdata[k]))
			g_string_append_printf(seqs, "%s%u", seqs->len ? "," : "", k);
	}
	if (!db_tx_begin(db, error) ||
	    !db_verdict_put(db, r->build->id, r->parent_build ? r->parent_build->id : 0,
			    r->verdict, seqs->str, error) ||
	    !db_tx_commit(db, error)) {
		db_tx_rollback(db);
		return false;
	}
	return true;
}

bool builder_parse_targets(GArray *out, const struct builder_request *req, GError **error)
{
	g_autofree char *fragments = config_fragment_dir();
	g_autoptr(GDateTime) today = g_date_time_new_now_utc();

	g_array_set_clear_func(out, (GDestroyNotify)build_target_clear);
	for (const char *const *spec = req->targets; *spec; spec++) {
		struct build_target t;

		if (!build_target_parse(&t, *spec, fragments, error))
			return false;
		build_target_daily(&t, req->source, today);
		g_array_append_val(out, t);
	}
	return true;
}

GPtrArray *builder_run_with(struct db *db, const struct builder_request *req, const char *commit,
			    const char *parent, builder_build_fn build, void *data, GError **error)
{
	g_autoptr(GPtrArray) results = g_ptr_array_new_with_free_func((GDestroyNotify)builder_result_free);
	g_autoptr(GArray) targets = g_array_new(FALSE, TRUE, sizeof(struct build_target));

	if (!builder_parse_targets(targets, req, error))
		return NULL;
	for (guint i = 0; i < targets->len; i++) {
		const struct build_target *t = &g_array_index(targets, struct build_target, i);
		struct builder_result *r = g_new0(struct builder_result, 1);

		g_ptr_array_add(results, r);
		r->target = g_strdup(t->spec);
		r->commit = g_strdup(commit);
		r->parent = g_strdup(parent);
		if (parent) {
			r->parent_build = stored_or_built(db, req, t, parent, build, data, error);
			if (!r->parent_build)
				return NULL;
		}
		r->build = stored_or_built(db, req, t, commit, build, data, error);
		if (!r->build || !judge(db, r, error))
			return NULL;
	}
	return g_steal_pointer(&results);
}

/* This machine's builds: in the state directory's work tree for the source. */
struct local_build {
	const struct config *config;
	const struct builder_request *req;
	struct builder_site site;
	struct worktree *wt;
	const char *workdir;
};

/*
 * Checks @commit out in @wt, saying how long it took. A @sandboxed build
 * sees its work tree read-only: only what differs from the last checkout
 * is written.
 */
static bool checkout(struct worktree *wt, const char *commit, bool sandboxed, GError **error)
{
	gint64 start = g_get_monotonic_time();

	if (!repo_worktree_checkout(wt, commit, sandboxed ? REPO_CHECKOUT_ONLY_CHANGES : 0, NULL,
				    error))
		return false;
	g_info("checked out %.12s after %.1f s", commit,
	       (double)(g_get_monotonic_time() - start) / G_USEC_PER_SEC);
	return true;
}

static struct build_row *local_build(void *data, const struct build_target *t, const char *commit,
				     GError **error)
{
	struct local_build *l = data;

	if (!checkout(l->wt, commit, l->config->build_sandbox, error))
		return NULL;
	return build_in(l->config, &l->site, l->req->source, l->wt, t, commit, l->workdir,
			l->req->progress, error);
}

/*
 * Opens the work tree of @key under @root (created when missing) with its
 * lock, borrowing objects from @objects_from: *@lock is the lock's
 * descriptor, -1 on failure.
 */
static struct worktree *open_locked(const char *root, const char *key, const char *objects_from,
				    int *lock, GError **error)
{
	g_autofree char *srcroot = g_build_filename(root, "src", NULL);
	g_autofree char *workdir = g_build_filename(srcroot, key, NULL);
	g_autofree char *lock_path = NULL;
	struct worktree *wt;

	*lock = -1;
	if (g_mkdir_with_parents(srcroot, 0755) < 0) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_FAILED, "%s: %s", srcroot, g_strerror(errno));
		return NULL;
	}
	lock_path = g_strconcat(workdir, ".lock", NULL);
	*lock = run_lock(lock_path, error);
	if (*lock < 0)
		return NULL;
	wt = repo_worktree_open(workdir, objects_from, error);
	if (!wt) {
		close(*lock);
		*lock = -1;
	}
	return wt;
}

GPtrArray *builder_run(struct db *db, const struct config *config,
		       const struct builder_request *req, GError **error)
{
	g_autofree char *key = builder_source_key(req->source);
	g_autofree char *workdir = g_build_filename(config->state_dir, "src", key, NULL);
	g_autofree char *commit = NULL;
	g_autofree char *parent = NULL;
	zd_autoptr(worktree) wt = NULL;
	struct local_build l = { .config = config, .req = req, .workdir = workdir,
				 .site = { .root = config->state_dir } };
	GPtrArray *results = NULL;
	int lock = -1;

	if (config->build_sandbox && !run_sandbox_available(error)) {
		g_prefix_error(error, "builds are sandboxed ([build] sandbox), but: ");
		return NULL;
	}
	wt = open_locked(config->state_dir, key, req->objects_from, &lock, error);
	if (!wt)
		return NULL;
	commit = repo_worktree_resolve(wt, req->rev, error);
	if (!commit)
		goto out;
	if (req->against) {
		parent = repo_worktree_resolve(wt, req->against, error);
		if (!parent)
			goto out;
	} else if (!req->alone) {
		GError *local = NULL;

		parent = repo_worktree_parent(wt, commit, &local);
		if (local) {
			g_propagate_error(error, local);
			goto out;
		}
	}
	l.wt = wt;
	results = builder_run_with(db, req, commit, parent, local_build, &l, error);
out:
	close(lock);
	return results;
}

/* The lock file's record of the commit whose checkout completed, or "". */
static char *checked_out(int lock)
{
	char text[72] = ""; /* an object id: 40 hex digits, 64 with SHA-256 */
	ssize_t n = pread(lock, text, sizeof(text) - 1, 0);

	text[n > 0 ? n : 0] = '\0';
	return g_strdup(g_strstrip(text));
}

/* Records @commit (NULL: none, before a checkout starts) in the lock file. */
static bool record_checkout(int lock, const char *commit, GError **error)
{
	size_t len = commit ? strlen(commit) : 0;

	if (ftruncate(lock, 0) < 0 || (commit && pwrite(lock, commit, len, 0) != (ssize_t)len) ||
	    fsync(lock) < 0) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_FAILED, "recording a checkout: %s",
			    g_strerror(errno));
		return false;
	}
	return true;
}

static bool lock_as(int lock, int how, GError **error)
{
	if (flock(lock, how) == 0)
		return true;
	g_set_error(error, BOT_ERROR, BOT_ERROR_FAILED, "locking a work tree: %s",
		    g_strerror(errno));
	return false;
}

/*
 * Opens the work tree of @key under @root at @commit, its lock (*@lock)
 * held shared: the builds of one commit (a head's other targets) run
 * beside each other on this machine, while a checkout of another commit
 * waits for them to end, and a build of another commit waits for it. The
 * lock file records the commit whose checkout completed, emptied before
 * a checkout starts, so that one cut short is never taken for complete.
 * Only for sandboxed builds, which cannot write into the work tree.
 */
static struct worktree *open_shared_at(const char *root, const char *key,
				       const char *objects_from, const char *commit, int *lock,
				       GError **error)
{
	g_autofree char *srcroot = g_build_filename(root, "src", NULL);
	g_autofree char *workdir = g_build_filename(srcroot, key, NULL);
	g_autofree char *lock_path = g_strconcat(workdir, ".lock", NULL);
	int fd;

	*lock = -1;
	if (g_mkdir_with_parents(srcroot, 0755) < 0) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_FAILED, "%s: %s", srcroot, g_strerror(errno));
		return NULL;
	}
	fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_FAILED, "%s: %s", lock_path,
			    g_strerror(errno));
		return NULL;
	}
	for (;;) {
		g_autofree char *at = NULL;
		struct worktree *wt;
		bool ok;

		/* Shared: is it at @commit already? Then build beside the others. */
		if (!lock_as(fd, LOCK_SH, error))
			break;
		at = checked_out(fd);
		if (strcmp(at, commit) == 0) {
			wt = repo_worktree_open(workdir, objects_from, error);
			if (!wt)
				break;
			*lock = fd;
			return wt;
		}
		/* Exclusive (the shared lock is let go first): check it out, then look again. */
		if (!lock_as(fd, LOCK_EX, error))
			break;
		g_free(at);
		at = checked_out(fd);
		if (strcmp(at, commit) == 0)
			continue;
		wt = repo_worktree_open(workdir, objects_from, error);
		ok = wt && record_checkout(fd, NULL, error) && checkout(wt, commit, true, error) &&
		     record_checkout(fd, commit, error);
		repo_worktree_free(wt);
		if (!ok)
			break;
	}
	close(fd);
	return NULL;
}

struct build_row *builder_build_commit(const struct config *config,
				       const struct builder_site *site, const char *source,
				       const char *objects_from, const char *commit,
				       const struct build_target *target, GError **error)
{
	g_autofree char *key = builder_source_key(source);
	g_autofree char *workdir = g_build_filename(site->root, "src", key, NULL);
	zd_autoptr(worktree) wt = NULL;
	struct build_row *row = NULL;
	int lock = -1;

	if (config->build_sandbox && !run_sandbox_available(error)) {
		g_prefix_error(error, "builds are sandboxed ([build] sandbox), but: ");
		return NULL;
	}
	/* An unsandboxed build could write into the work tree: it keeps it to itself. */
	if (config->build_sandbox)
		wt = open_shared_at(site->root, key, objects_from, commit, &lock, error);
	else if ((wt = open_locked(site->root, key, objects_from, &lock, error)) &&
		 (!record_checkout(lock, NULL, error) || !checkout(wt, commit, false, error)))
		g_clear_pointer(&wt, repo_worktree_free);
	if (wt)
		row = build_in(config, site, source, wt, target, commit, workdir, false, error);
	if (lock >= 0)
		close(lock);
	return row;
}
