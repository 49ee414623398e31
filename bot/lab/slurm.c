/*
 * The Slurm executor: see slurm.h.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bot/config.h"
#include "bot/lab/node.h"
#include "bot/lab/slurm.h"
#include "engine/build.h"
#include "engine/hostile.h"
#include "engine/names.h"
#include "engine/repo.h"
#include "engine/run.h"

/* One build on the cluster: the commit, its target, and where its job lives. */
struct cluster_build {
	const struct bot *bot;
	char *key;        /* builder_source_key() of the tree */
	char *target_dir; /* build_target_dirname() */
	char *name;       /* the Slurm job's name: the lock of the tree and target */
	char *jobdir;     /* spool/jobs/KEY/TARGET/COMMIT */
	struct node_job job;
};

static void cluster_build_clear(struct cluster_build *c)
{
	g_free(c->key);
	g_free(c->target_dir);
	g_free(c->name);
	g_free(c->jobdir);
	node_job_clear(&c->job);
}
ZD_AUTO_DEFINE(cluster_build, cluster_build_clear)

/*
 * Runs the Slurm command @argv (looked up in PATH; an argv, never a shell;
 * GLib spawns it with posix_spawn where it can) and waits: its exit status in *@status, its output in *@out and *@err
 * (caller frees). False, BOT_ERROR_TEMPORARY, when it could not start.
 */
static bool slurm_command(const char *const *argv, int *status, char **out, char **err,
			  GError **error)
{
	g_autoptr(GError) local = NULL;
	int wait_status = 0;

	if (!g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, out, err,
			  &wait_status, &local)) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_TEMPORARY, "%s: %s", argv[0], local->message);
		return false;
	}
	*status = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128;
	g_strstrip(*out);
	g_strstrip(*err);
	return true;
}

/* A Slurm job id as sbatch and squeue print it: digits, an optional ";cluster" after. */
static char *job_id_of(const char *text)
{
	size_t n = strspn(text, "0123456789");

	if (n == 0 || n > 12 || (text[n] && text[n] != ';' && text[n] != '\n'))
		return NULL;
	return g_strndup(text, n);
}

enum job_phase {
	JOB_ACTIVE,  /* pending, running, completing: wait */
	JOB_DONE,    /* completed: the node's zeroday ended well; take the result */
	JOB_FAILED,  /* any other end: no verdict, whatever the result says */
	JOB_GONE,    /* Slurm no longer knows it: take a result if one is there */
	JOB_UNKNOWN, /* Slurm did not answer */
};

/* The states a job may still leave; every other one but COMPLETED is a failure. */
static const char *const active_states[] = {
	"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED",
	"REQUEUE_FED", "REQUEUE_HOLD", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED",
	"RESV_DEL_HOLD", NULL,
};

/* Asks Slurm about job @id: its phase, *@state its state (caller frees) when known. */
static enum job_phase job_phase(const char *id, char **state)
{
	const char *argv[] = { "squeue", "-h", "-t", "all", "-j", id, "-o", "%T", NULL };
	g_autofree char *out = NULL;
	g_autofree char *err = NULL;
	g_autoptr(GError) local = NULL;
	int status;

	*state = NULL;
	if (!slurm_command(argv, &status, &out, &err, &local)) {
		*state = g_strdup(local->message);
		return JOB_UNKNOWN;
	}
	if (status != 0) {
		if (strstr(err, "Invalid job id"))
			return JOB_GONE;
		*state = g_strdup(*err ? err : "squeue failed");
		return JOB_UNKNOWN;
	}
	if (!*out)
		return JOB_GONE;
	*state = g_strdup(out);
	if (strcmp(out, "COMPLETED") == 0)
		return JOB_DONE;
	return g_strv_contains(active_states, out) ? JOB_ACTIVE : JOB_FAILED;
}

/* The file @name of the job's directory, read back (at most @max bytes), or NULL. */
static char *job_file(const struct cluster_build *c, const char *name, gsize max)
{
	char *text = NULL;

	if (!hostile_read(&text, NULL, c->jobdir, name, max, NULL))
		return NULL;
	return g_strstrip(text);
}

/* The node that built this tree and target last, or NULL. */
static char *warm_node(const struct cluster_build *c)
{
	g_autofree char *dir = g_build_filename(c->bot->config->slurm_spool, "warm", c->key, NULL);
	char *node = NULL;

	if (!hostile_read(&node, NULL, dir, c->target_dir, 256, NULL))
		return NULL;
	g_strstrip(node);
	if (!names_tree_check(node, NULL))
		g_clear_pointer(&node, g_free);
	return node;
}

static void remember_node(const struct cluster_build *c, const char *node)
{
	g_autofree char *dir = g_build_filename(c->bot->config->slurm_spool, "warm", c->key, NULL);
	g_autofree char *path = g_build_filename(dir, c->target_dir, NULL);
	g_autoptr(GError) local = NULL;

	if (g_mkdir_with_parents(dir, 0755) < 0 || !g_file_set_contents(path, node, -1, &local))
		g_warning("%s: cannot remember the warm node: %s", path,
			  local ? local->message : g_strerror(errno));
}

/* The job.conf of a node: its root, and this zeroday's build limits. */
static char *node_config(const struct config *config)
{
	return g_strdup_printf("# written by zeroday for one build on a node\n"
			       "[zeroday]\nstate-dir = %s\n"
			       "[build]\njobs = %u\ntimeout = %u\nmax-memory = %" G_GUINT64_FORMAT
			       "\nmax-procs = %u\nsandbox = %s\nccache = %s\n",
			       config->slurm_node_root, config->build_jobs, config->build_timeout,
			       config->build_max_memory, config->build_max_procs,
			       config->build_sandbox ? "true" : "false",
			       config->build_ccache ? "true" : "false");
}

/* The batch script: exec zeroday on the node. Slurm wants a script, not a program. */
static char *batch_script(const struct config *config, const char *jobdir)
{
	g_autofree char *self = config->slurm_zeroday ? g_strdup(config->slurm_zeroday)
						      : g_file_read_link("/proc/self/exe", NULL);
	g_autofree char *exe = g_shell_quote(self ? self : "zeroday");
	g_autofree char *dir = g_shell_quote(jobdir);

	return g_strdup_printf("#!/bin/sh\n# written by zeroday: one build\nexec %s node-build %s\n",
			       exe, dir);
}

/*
 * The Slurm job of the submission @nonce (the comment it was submitted
 * with), in any state Slurm still remembers, or NULL: the job a zeroday
 * killed between sbatch and keeping its id left behind.
 */
static char *job_of_submission(const struct cluster_build *c, const char *nonce)
{
	const char *argv[] = { "squeue", "-h", "-t", "all", "-n", c->name, "-o", "%i %k", NULL };
	g_autofree char *out = NULL;
	g_autofree char *err = NULL;
	g_auto(GStrv) lines = NULL;
	int status;

	if (!slurm_command(argv, &status, &out, &err, NULL) || status != 0)
		return NULL;
	lines = g_strsplit(out, "\n", -1);
	for (char **l = lines; *l; l++) {
		const char *space = strchr(*l, ' ');

		if (space && strcmp(space + 1, nonce) == 0) {
			g_autofree char *id = g_strndup(*l, space - *l);

			return job_id_of(id);
		}
	}
	return NULL;
}

/*
 * Submits the job of @c, with @nonce as its comment; its id (caller
 * frees), or NULL with @error set.
 */
static char *submit(const struct cluster_build *c, const char *nonce, GError **error)
{
	const struct config *config = c->bot->config;
	g_autofree char *script = g_build_filename(c->jobdir, "job.sh", NULL);
	g_autofree char *output = g_build_filename(c->jobdir, "slurm.out", NULL);
	g_autofree char *minutes = g_strdup_printf("%u", config->build_timeout / 60 + 10);
	g_autofree char *cpus = g_strdup_printf("%u", config->build_jobs);
	g_autofree char *comment = g_strconcat("--comment=", nonce, NULL);
	g_autofree char *partition = config->slurm_partition
		? g_strconcat("--partition=", config->slurm_partition, NULL) : NULL;
	g_autofree char *warm = warm_node(c);
	g_autofree char *prefer = warm ? g_strconcat("--prefer=", warm, NULL) : NULL;

	for (int attempt = 0; attempt < 2; attempt++) {
		const char *argv[24];
		size_t n = 0;
		g_autofree char *out = NULL;
		g_autofree char *err = NULL;
		int status;
		char *id;

		argv[n++] = "sbatch";
		argv[n++] = "--parsable";
		argv[n++] = "--job-name";
		argv[n++] = c->name;
		/* One job of a name at a time: the lock of the tree's O= directory. */
		argv[n++] = "--dependency=singleton";
		argv[n++] = "--no-requeue";
		argv[n++] = "--chdir";
		argv[n++] = c->jobdir;
		argv[n++] = "--output";
		argv[n++] = output;
		argv[n++] = "--time";
		argv[n++] = minutes;
		argv[n++] = "--cpus-per-task";
		argv[n++] = cpus;
		argv[n++] = comment;
		if (partition)
			argv[n++] = partition;
		if (prefer && attempt == 0)
			argv[n++] = prefer;
		argv[n++] = script;
		argv[n] = NULL;
		g_assert(n < G_N_ELEMENTS(argv));
		if (!slurm_command(argv, &status, &out, &err, error))
			return NULL;
		if (status == 0 && (id = job_id_of(out)))
			return id;
		/* A node that declares no feature of its own name: ask for none. */
		if (prefer && attempt == 0 && strstr(err, "eature")) {
			g_info("sbatch refused --prefer=%s (%s): submitting without it", warm, err);
			continue;
		}
		g_set_error(error, BOT_ERROR, BOT_ERROR_TEMPORARY, "sbatch for %.12s (%s): %s",
			    c->job.commit, c->job.target, *err ? err : out);
		return NULL;
	}
	g_assert_not_reached();
}

/* Writes the job's directory anew and submits it: the job's id, or NULL. */
static char *start(struct cluster_build *c, GError **error)
{
	const struct config *config = c->bot->config;
	g_autofree char *objects = g_build_filename(config->slurm_spool, "git", NULL);
	g_autofree char *conf = node_config(config);
	g_autofree char *script = batch_script(config, c->jobdir);
	g_autofree char *conf_path = g_build_filename(c->jobdir, "job.conf", NULL);
	g_autofree char *script_path = g_build_filename(c->jobdir, "job.sh", NULL);
	g_autofree char *id_path = g_build_filename(c->jobdir, "slurm-id", NULL);
	g_autofree char *nonce_path = g_build_filename(c->jobdir, "submission", NULL);
	g_autofree char *nonce = g_uuid_string_random();
	char *id;

	/* What an earlier, unfinished attempt left is no part of this one. */
	if (!run_remove_tree(c->jobdir, error))
		return NULL;
	if (g_mkdir_with_parents(c->jobdir, 0755) < 0) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_TEMPORARY, "%s: %s", c->jobdir,
			    g_strerror(errno));
		return NULL;
	}
	if (!repo_export(c->bot->repo, c->job.commit, objects, error)) {
		g_prefix_error(error, "exporting %.12s to the spool: ", c->job.commit);
		return NULL;
	}
	if (!g_file_set_contents(conf_path, conf, -1, error) ||
	    !node_job_write(&c->job, c->jobdir, error) ||
	    !g_file_set_contents(script_path, script, -1, error) ||
	    !g_file_set_contents(nonce_path, nonce, -1, error))
		return NULL;
	id = submit(c, nonce, error);
	if (!id)
		return NULL;
	bot_crash_point("slurm", "slurm-submitted");
	if (!g_file_set_contents(id_path, id, -1, error)) {
		g_free(id);
		return NULL;
	}
	bot_crash_point("slurm", "slurm-recorded");
	g_message("%.12s for %s: Slurm job %s", c->job.commit, c->job.target, id);
	return id;
}

/* Takes the result of the finished job @id: the build, or NULL with @error set. */
static struct build_row *take(const struct cluster_build *c, const char *id, const char *state,
			      GError **error)
{
	const struct config *config = c->bot->config;
	g_autofree char *logdir = g_build_filename(config->state_dir, "logs", "build", c->key, NULL);
	g_autofree char *imagedir = g_build_filename(config->state_dir, "images", c->key, NULL);
	g_autofree char *stamp = g_strdup_printf("%.12s-%s-%" G_GINT64_FORMAT, c->job.commit,
						 c->target_dir, g_get_real_time() / G_USEC_PER_SEC);
	g_autofree char *node = NULL;
	g_autoptr(GError) local = NULL;
	struct build_row *row;

	row = node_result_read(c->jobdir, &c->job, logdir, imagedir, stamp, &node, &local);
	if (!row) {
		if (g_error_matches(local, BOT_ERROR, BOT_ERROR_NOT_FOUND))
			g_set_error(error, BOT_ERROR, BOT_ERROR_TEMPORARY,
				    "infra-error: Slurm job %s (%s) left no result in %s", id,
				    state ? state : "forgotten by Slurm", c->jobdir);
		else
			g_propagate_error(error, g_steal_pointer(&local));
		return NULL;
	}
	remember_node(c, node);
	g_message("%.12s for %s: Slurm job %s on %s: %s", c->job.commit, c->job.target, id, node,
		  build_status_name(row->status));
	return row;
}

static bool stopping(const struct bot *bot)
{
	return bot->stop && *bot->stop;
}

/*
 * Waits for job @id and takes its result: the build, or NULL with @error
 * set. *@keep is set when the job is left running (zeroday stops): its
 * directory stays, for the next start to adopt it.
 */
static struct build_row *wait_for(const struct cluster_build *c, const char *id, bool *keep,
				  GError **error)
{
	bool silent = false;

	*keep = false;
	for (;;) {
		g_autofree char *state = NULL;
		g_autofree char *tail = NULL;

		switch (job_phase(id, &state)) {
		case JOB_ACTIVE:
			if (silent)
				g_message("Slurm answers again about job %s: %s", id, state);
			silent = false;
			break;
		case JOB_UNKNOWN:
			/* slurmctld down: the build waits; mail and polls go on in other threads. */
			if (!silent)
				g_warning("Slurm does not answer about job %s (%s): waiting", id,
					  state);
			silent = true;
			break;
		case JOB_DONE:
		case JOB_GONE:
			return take(c, id, state, error);
		case JOB_FAILED:
			tail = job_file(c, "slurm.out", 4096);
			g_set_error(error, BOT_ERROR, BOT_ERROR_TEMPORARY,
				    "infra-error: Slurm job %s of %.12s for %s ended %s%s%s", id,
				    c->job.commit, c->job.target, state, tail && *tail ? ": " : "",
				    tail ? tail : "");
			return NULL;
		}
		for (unsigned s = 0; s < c->bot->config->slurm_poll; s++) {
			if (stopping(c->bot)) {
				*keep = true;
				g_set_error(error, BOT_ERROR, BOT_ERROR_STOPPED,
					    "zeroday stops: Slurm job %s of %.12s for %s goes on, "
					    "and the next start takes it over", id, c->job.commit,
					    c->job.target);
				return NULL;
			}
			g_usleep(G_USEC_PER_SEC);
		}
	}
}

/* What every build of one slurm_build() call shares. */
struct cluster {
	const struct bot *bot;
	const struct builder_request *req;
};

/* builder_build_fn: one build as one Slurm job, adopted when one runs already. */
static struct build_row *cluster_build_one(void *data, const struct build_target *target,
					   const char *commit, GError **error)
{
	const struct cluster *cl = data;
	const char *spool = cl->bot->config->slurm_spool;
	zd_auto(cluster_build) c = { .bot = cl->bot };
	g_autofree char *id = NULL;
	g_autofree char *nonce = NULL;
	g_autoptr(GError) gone = NULL;
	struct build_row *row;
	bool keep;

	c.key = builder_source_key(cl->req->source);
	c.target_dir = build_target_dirname(target);
	c.name = g_strdup_printf("zd-%s-%s", c.key, c.target_dir);
	c.jobdir = g_build_filename(spool, "jobs", c.key, c.target_dir, commit, NULL);
	c.job.source = g_strdup(cl->req->source);
	c.job.commit = g_strdup(commit);
	c.job.target = g_strdup(target->spec);
	c.job.objects = g_build_filename(spool, "git", NULL);
	if (cl->bot->config->slurm_shared_ccache)
		c.job.ccache_shared = g_build_filename(spool, "ccache", NULL);

	/* A job a killed zeroday left running is waited for, not submitted again. */
	id = job_file(&c, "slurm-id", 64);
	if (id && !job_id_of(id))
		g_clear_pointer(&id, g_free);
	nonce = id ? NULL : job_file(&c, "submission", 64);
	if (id) {
		g_message("%.12s for %s: Slurm job %s adopted", commit, target->spec, id);
	} else if (nonce && (id = job_of_submission(&c, nonce))) {
		g_autofree char *id_path = g_build_filename(c.jobdir, "slurm-id", NULL);

		g_message("%.12s for %s: Slurm job %s found in the queue, adopted", commit,
			  target->spec, id);
		if (!g_file_set_contents(id_path, id, -1, error))
			return NULL;
	} else if (!(id = start(&c, error))) {
		return NULL;
	}
	row = wait_for(&c, id, &keep, error);
	/* Taken or failed, the job is over: its directory goes (the build is copied out). */
	if (!keep && !run_remove_tree(c.jobdir, &gone))
		g_warning("%s", gone->message);
	return row;
}

GPtrArray *slurm_build(const struct bot *bot, const struct builder_request *req, GError **error)
{
	struct cluster ctx = { .bot = bot, .req = req };
	g_autofree char *parent = NULL;
	g_autoptr(GError) local = NULL;

	/* A repository only this machine has (`zeroday build path:...`) builds here. */
	if (g_str_has_prefix(req->source, "path:"))
		return builder_run(bot->db, bot->config, req, error);
	if (!repo_has_commit(bot->repo, req->rev)) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_NOT_FOUND,
			    "%s: no commit of the store (the cluster builds commits by full id)",
			    req->rev);
		return NULL;
	}
	if (req->against)
		parent = g_strdup(req->against);
	else if (!req->alone && !(parent = repo_first_parent(bot->repo, req->rev, &local)) && local) {
		g_propagate_error(error, g_steal_pointer(&local));
		return NULL;
	}
	return builder_run_with(bot->db, req, req->rev, parent, cluster_build_one, &ctx, error);
}

/* A time as squeue prints it (local time, "2026-12-06T01:40:16"), or 0. */
static gint64 squeue_time(const char *text)
{
	g_autoptr(GTimeZone) local = g_time_zone_new_local();
	g_autoptr(GDateTime) t = g_date_time_new_from_iso8601(text, local);

	return t ? g_date_time_to_unix(t) : 0;
}

GPtrArray *slurm_queue(GError **error)
{
	const char *argv[] = { "squeue", "--me", "-h", "-t", "PENDING,CONFIGURING,RUNNING,"
			       "COMPLETING,SUSPENDED,REQUEUED", "-o", "%i|%j|%T|%N|%r|%V|%S", NULL };
	g_autoptr(GPtrArray) jobs = g_ptr_array_new_with_free_func(
		(GDestroyNotify)status_cluster_job_free);
	g_autofree char *out = NULL;
	g_autofree char *err = NULL;
	g_auto(GStrv) lines = NULL;
	int status;

	if (!slurm_command(argv, &status, &out, &err, error))
		return NULL;
	if (status != 0) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_TEMPORARY, "squeue: %s",
			    *err ? err : "failed");
		return NULL;
	}
	lines = g_strsplit(out, "\n", -1);
	for (char **l = lines; *l; l++) {
		g_auto(GStrv) f = g_strsplit(*l, "|", 7);
		struct status_cluster_job *j;
		bool running;

		if (g_strv_length(f) != 7 || !g_str_has_prefix(f[1], "zd-"))
			continue;
		running = strcmp(f[2], "PENDING") != 0;
		j = g_new0(struct status_cluster_job, 1);
		j->id = g_strdup(f[0]);
		j->name = g_strdup(f[1]);
		j->state = g_strdup(f[2]);
		j->node = *f[3] && running ? g_strdup(f[3]) : NULL;
		j->reason = running || !*f[4] || strcmp(f[4], "None") == 0 ? NULL : g_strdup(f[4]);
		j->since = squeue_time(running ? f[6] : f[5]);
		g_ptr_array_add(jobs, j);
	}
	return g_steal_pointer(&jobs);
}

/* Cancels the cluster's jobs named zd-@key-*: those of a tree removed. */
static bool cancel_source(const char *key, GPtrArray *queue, GError **error)
{
	g_autofree char *prefix = g_strdup_printf("zd-%s-", key);
	g_autoptr(GPtrArray) argv = g_ptr_array_new();
	g_autofree char *out = NULL;
	g_autofree char *err = NULL;
	int status;

	g_ptr_array_add(argv, (char *)"scancel");
	for (guint i = 0; i < queue->len; i++) {
		const struct status_cluster_job *j = queue->pdata[i];

		if (g_str_has_prefix(j->name, prefix))
			g_ptr_array_add(argv, j->id);
	}
	if (argv->len == 1)
		return true;
	g_ptr_array_add(argv, NULL);
	if (!slurm_command((const char *const *)argv->pdata, &status, &out, &err, error))
		return false;
	if (status != 0) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_TEMPORARY, "scancel: %s",
			    *err ? err : "failed");
		return false;
	}
	g_message("slurm: the jobs of %s cancelled (%u): the tree was removed", key,
		  argv->len - 2);
	return true;
}

bool slurm_forget(const struct bot *bot, const char *tree, GError **error)
{
	g_autofree char *key = builder_source_key(tree);
	g_autofree char *jobs = g_build_filename(bot->config->slurm_spool, "jobs", key, NULL);
	g_autofree char *cache = g_build_filename(bot->config->slurm_spool, "ccache", key, NULL);
	g_autoptr(GPtrArray) queue = slurm_queue(error);

	/* Its jobs first, then their directories and its share of the compiler cache. */
	return queue && cancel_source(key, queue, error) && run_remove_tree(jobs, error) &&
	       run_remove_tree(cache, error);
}
