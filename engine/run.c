/*
 * Child processes: see run.h.
 *
 * The child is forked directly rather than through g_spawn so that its
 * process group, resource limits, privileges and death signal are set
 * between fork and exec. Everything it needs is prepared before fork: a
 * forked child of a threaded program may only make async-signal-safe calls.
 */
#define G_LOG_DOMAIN "engine"

#include "autoconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/run.h"

/* The uid a sandbox runs as when zeroday is root: nobody. */
#define SANDBOX_USER "nobody"

static const char *const default_env[] = {
	"PATH=/usr/local/bin:/usr/bin:/bin",
	"LC_ALL=C",
	"LANG=C",
	"HOME=/tmp",
	"TERM=dumb",
	NULL,
};

char *run_find_program(const char *program)
{
	return g_find_program_in_path(program);
}

/* Adds "--ro-bind P P" for each of @paths that exists. */
static void bind_existing(GPtrArray *argv, const char *how, const char *const *paths)
{
	for (const char *const *p = paths; p && *p; p++) {
		if (!g_file_test(*p, G_FILE_TEST_EXISTS))
			continue;
		g_ptr_array_add(argv, g_strdup(how));
		g_ptr_array_add(argv, g_strdup(*p));
		g_ptr_array_add(argv, g_strdup(*p));
	}
}

/*
 * The bubblewrap command line: new namespaces of every kind, the system's
 * programs read-only, the caller's binds, a private /tmp, /proc and /dev.
 */
static GPtrArray *sandbox_argv(const struct run_opts *opts, const char *bwrap)
{
	static const char *const system_ro[] = {
		"/usr", "/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf",
		"/etc/ld.so.conf.d", "/etc/passwd", "/etc/group", "/etc/localtime", NULL,
	};
	static const char *const merged_usr[] = { "bin", "lib", "lib64", "sbin", NULL };
	GPtrArray *argv = g_ptr_array_new_with_free_func(g_free);

	g_ptr_array_add(argv, g_strdup(bwrap));
	g_ptr_array_add(argv, g_strdup("--unshare-all"));
	if (opts->sandbox->allow_network)
		g_ptr_array_add(argv, g_strdup("--share-net"));
	g_ptr_array_add(argv, g_strdup("--die-with-parent"));
	g_ptr_array_add(argv, g_strdup("--new-session"));
	g_ptr_array_add(argv, g_strdup("--hostname"));
	g_ptr_array_add(argv, g_strdup("zeroday-build"));
	bind_existing(argv, "--ro-bind", system_ro);
	for (const char *const *d = merged_usr; *d; d++) {
		g_autofree char *target = g_strconcat("/usr/", *d, NULL);
		g_autofree char *link = g_strconcat("/", *d, NULL);

		if (!g_file_test(target, G_FILE_TEST_IS_DIR))
			continue;
		g_ptr_array_add(argv, g_strdup("--symlink"));
		g_ptr_array_add(argv, g_strconcat("usr/", *d, NULL));
		g_ptr_array_add(argv, g_steal_pointer(&link));
	}
	g_ptr_array_add(argv, g_strdup("--proc"));
	g_ptr_array_add(argv, g_strdup("/proc"));
	g_ptr_array_add(argv, g_strdup("--dev"));
	g_ptr_array_add(argv, g_strdup("/dev"));
	g_ptr_array_add(argv, g_strdup("--tmpfs"));
	g_ptr_array_add(argv, g_strdup("/tmp"));
	bind_existing(argv, "--ro-bind", opts->sandbox->ro_binds);
	bind_existing(argv, "--bind", opts->sandbox->rw_binds);
	if (opts->cwd) {
		g_ptr_array_add(argv, g_strdup("--chdir"));
		g_ptr_array_add(argv, g_strdup(opts->cwd));
	}
	g_ptr_array_add(argv, g_strdup("--"));
	return argv;
}

/* What the child needs, prepared before fork. */
struct child_plan {
	const char *path;
	char *const *argv;
	char *const *env;
	const char *cwd; /* for chdir, NULL inside a sandbox (bwrap does it) */
	int log_fd;
	int null_fd;
	int report_fd; /* close-on-exec pipe: errno if exec fails */
	struct rlimit mem, procs;
	bool set_mem, set_procs;
	bool drop; /* become uid/gid before exec */
	uid_t uid;
	gid_t gid;
};

G_GNUC_NORETURN static void child_fail(const struct child_plan *p)
{
	int e = errno;

	(void)!write(p->report_fd, &e, sizeof(e));
	_exit(127);
}

G_GNUC_NORETURN static void child_exec(const struct child_plan *p)
{
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (dup2(p->null_fd, 0) < 0 || dup2(p->log_fd, 1) < 0 || dup2(p->log_fd, 2) < 0)
		child_fail(p);
	if (p->cwd && chdir(p->cwd) < 0)
		child_fail(p);
	if (p->set_mem && setrlimit(RLIMIT_AS, &p->mem) < 0)
		child_fail(p);
	if (p->set_procs && setrlimit(RLIMIT_NPROC, &p->procs) < 0)
		child_fail(p);
	if (p->drop && (setgroups(0, NULL) < 0 || setgid(p->gid) < 0 || setuid(p->uid) < 0))
		child_fail(p);
	execve(p->path, p->argv, p->env);
	child_fail(p);
}

static bool sandbox_user(uid_t *uid, gid_t *gid, GError **error)
{
	struct passwd *pw = getpwnam(SANDBOX_USER);

	if (!pw) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_NOT_FOUND,
			    "no user '%s' to run sandboxed children as", SANDBOX_USER);
		return false;
	}
	*uid = pw->pw_uid;
	*gid = pw->pw_gid;
	return true;
}

bool run_child(struct run_result *result, const struct run_opts *opts, GError **error)
{
	g_autoptr(GPtrArray) argv = NULL;
	g_autofree char *path = NULL;
	struct child_plan plan = { .log_fd = -1, .null_fd = -1, .report_fd = -1 };
	gint64 start = g_get_monotonic_time();
	int pipefd[2] = { -1, -1 };
	bool ok = false;
	bool timed_out = false;
	int status = 0;
	pid_t pid;
	int e = 0;

	g_return_val_if_fail(opts->argv && opts->argv[0], false);
	memset(result, 0, sizeof(*result));
	if (opts->sandbox) {
		path = run_find_program("bwrap");
		if (!path) {
			g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_NOT_FOUND,
				    "bwrap (Debian package bubblewrap) is not installed");
			return false;
		}
		argv = sandbox_argv(opts, path);
		if (geteuid() == 0) {
			if (!sandbox_user(&plan.uid, &plan.gid, error))
				return false;
			plan.drop = true;
		}
	} else {
		path = strchr(opts->argv[0], '/') ? g_strdup(opts->argv[0])
						  : run_find_program(opts->argv[0]);
		if (!path) {
			g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_NOT_FOUND,
				    "%s: program not found", opts->argv[0]);
			return false;
		}
		argv = g_ptr_array_new_with_free_func(g_free);
		plan.cwd = opts->cwd;
	}
	for (const char *const *a = opts->sandbox ? opts->argv : opts->argv + 1; *a; a++)
		g_ptr_array_add(argv, g_strdup(*a));
	if (!opts->sandbox)
		g_ptr_array_insert(argv, 0, g_strdup(path));
	g_ptr_array_add(argv, NULL);

	plan.path = path;
	plan.argv = (char *const *)argv->pdata;
	plan.env = (char *const *)(opts->env ? opts->env : default_env);
	plan.set_mem = opts->max_memory > 0;
	plan.mem.rlim_cur = plan.mem.rlim_max = opts->max_memory;
	plan.set_procs = opts->max_procs > 0;
	plan.procs.rlim_cur = plan.procs.rlim_max = opts->max_procs;
	plan.null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	plan.log_fd = opts->log_path
		? open(opts->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)
		: dup(plan.null_fd);
	if (plan.null_fd < 0 || plan.log_fd < 0 || pipe2(pipefd, O_CLOEXEC) < 0) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s: %s",
			    opts->log_path ? opts->log_path : "/dev/null", g_strerror(errno));
		goto out;
	}
	plan.report_fd = pipefd[1];

	pid = fork();
	if (pid < 0) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "fork: %s", g_strerror(errno));
		goto out;
	}
	if (pid == 0)
		child_exec(&plan);
	setpgid(pid, pid);
	close(pipefd[1]);
	pipefd[1] = -1;
	if (read(pipefd[0], &e, sizeof(e)) == sizeof(e)) {
		waitpid(pid, NULL, 0);
		g_set_error(error, ENGINE_ERROR,
			    e == ENOENT ? ENGINE_ERROR_NOT_FOUND : ENGINE_ERROR_FAILED,
			    "cannot run %s: %s", opts->argv[0], g_strerror(e));
		goto out;
	}

	for (;;) {
		pid_t got = waitpid(pid, &status, WNOHANG);

		if (got == pid)
			break;
		if (got < 0 && errno != EINTR) {
			g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "waitpid: %s",
				    g_strerror(errno));
			kill(-pid, SIGKILL);
			waitpid(pid, NULL, 0);
			goto out;
		}
		if (!timed_out && opts->timeout_s &&
		    g_get_monotonic_time() - start > (gint64)opts->timeout_s * G_USEC_PER_SEC) {
			timed_out = true;
			kill(-pid, SIGKILL);
		}
		if (opts->progress)
			opts->progress(opts->progress_data);
		g_usleep(timed_out ? 10000 : 200000);
	}
	/* Whatever the child left behind in its group goes too. */
	kill(-pid, SIGKILL);
	result->seconds = (double)(g_get_monotonic_time() - start) / G_USEC_PER_SEC;
	if (timed_out) {
		result->outcome = RUN_TIMEOUT;
	} else if (WIFSIGNALED(status)) {
		result->outcome = RUN_SIGNALED;
		result->status = WTERMSIG(status);
	} else {
		result->outcome = RUN_EXITED;
		result->status = WEXITSTATUS(status);
	}
	ok = true;
out:
	if (plan.null_fd >= 0)
		close(plan.null_fd);
	if (plan.log_fd >= 0)
		close(plan.log_fd);
	if (pipefd[0] >= 0)
		close(pipefd[0]);
	if (pipefd[1] >= 0)
		close(pipefd[1]);
	return ok;
}

bool run_sandbox_prepare_dir(const char *dir, GError **error)
{
	uid_t uid;
	gid_t gid;

	if (g_mkdir_with_parents(dir, 0755) < 0) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s: %s", dir,
			    g_strerror(errno));
		return false;
	}
	if (geteuid() != 0)
		return true;
	if (!sandbox_user(&uid, &gid, error))
		return false;
	if (chown(dir, uid, gid) < 0) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "chown %s: %s", dir,
			    g_strerror(errno));
		return false;
	}
	return true;
}

bool run_sandbox_available(GError **error)
{
	static const char *const argv[] = { "true", NULL };
	struct run_sandbox sandbox = { 0 };
	struct run_opts opts = { .argv = argv, .sandbox = &sandbox, .timeout_s = 60 };
	struct run_result result;

	if (!run_child(&result, &opts, error))
		return false;
	if (result.outcome != RUN_EXITED || result.status != 0) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED,
			    "bwrap cannot create its namespaces here (exit %d)", result.status);
		return false;
	}
	return true;
}
