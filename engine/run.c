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
#include <ftw.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <linux/close_range.h>
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

/*
 * Adds "--ro-bind" or "--bind" SOURCE TARGET. bwrap would make the mount
 * point's missing parents mode 0700, out of the unprivileged child's
 * reach: they are made 0755 first (an existing directory keeps its mode).
 */
static void add_bind(GPtrArray *argv, bool writable, const char *source, const char *target)
{
	for (const char *slash = strchr(target + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		g_ptr_array_add(argv, g_strdup("--perms"));
		g_ptr_array_add(argv, g_strdup("0755"));
		g_ptr_array_add(argv, g_strdup("--dir"));
		g_ptr_array_add(argv, g_strndup(target, slash - target));
	}
	g_ptr_array_add(argv, g_strdup(writable ? "--bind" : "--ro-bind"));
	g_ptr_array_add(argv, g_strdup(source));
	g_ptr_array_add(argv, g_strdup(target));
}

/* Binds each of @paths that exists read-only, at the same path. */
static void bind_existing(GPtrArray *argv, const char *const *paths)
{
	for (const char *const *p = paths; p && *p; p++) {
		if (g_file_test(*p, G_FILE_TEST_EXISTS))
			add_bind(argv, false, *p, *p);
	}
}

/* The uid and gid a sandbox runs as when zeroday is root. */
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

/*
 * The bubblewrap command line: new namespaces, the system's programs
 * read-only, the caller's binds, a private /tmp, /proc and /dev.
 *
 * As root, bwrap sets the sandbox up with root's privileges (no user
 * namespace: one mapping root would leave the child owning root's files)
 * and setpriv then drops the child to nobody, with no capabilities and
 * no_new_privs. As another user, bwrap's user namespace does the same.
 * Either way, setpriv runs the program, so that a program that cannot be
 * executed is told apart from one that fails ("setpriv: ..." and 127).
 */
static bool sandbox_argv(GPtrArray *argv, const struct run_opts *opts, const char *bwrap,
			 GError **error)
{
	static const char *const system_ro[] = {
		"/usr", "/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf",
		"/etc/ld.so.conf.d", "/etc/passwd", "/etc/group", "/etc/localtime", NULL,
	};
	static const char *const merged_usr[] = { "bin", "lib", "lib64", "sbin", NULL };
	/* The sandbox's own /proc, /dev and a world-writable, sticky /tmp. */
	static const char *const own_mounts[] = {
		"--proc", "/proc", "--dev", "/dev", "--perms", "01777", "--tmpfs", "/tmp",
	};
	g_autofree char *setpriv = run_find_program("setpriv");

	if (!setpriv) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_NOT_FOUND,
			    "setpriv (Debian package util-linux) is not installed");
		return false;
	}
	g_ptr_array_add(argv, g_strdup(bwrap));
	if (geteuid() == 0) {
		g_ptr_array_add(argv, g_strdup("--unshare-ipc"));
		g_ptr_array_add(argv, g_strdup("--unshare-pid"));
		g_ptr_array_add(argv, g_strdup("--unshare-uts"));
		g_ptr_array_add(argv, g_strdup("--unshare-cgroup-try"));
		if (!opts->sandbox->allow_network)
			g_ptr_array_add(argv, g_strdup("--unshare-net"));
	} else {
		g_ptr_array_add(argv, g_strdup("--unshare-all"));
		if (opts->sandbox->allow_network)
			g_ptr_array_add(argv, g_strdup("--share-net"));
	}
	g_ptr_array_add(argv, g_strdup("--die-with-parent"));
	g_ptr_array_add(argv, g_strdup("--new-session"));
	g_ptr_array_add(argv, g_strdup("--hostname"));
	g_ptr_array_add(argv, g_strdup("zeroday-build"));
	bind_existing(argv, system_ro);
	for (const char *const *d = merged_usr; *d; d++) {
		g_autofree char *target = g_strconcat("/usr/", *d, NULL);

		if (!g_file_test(target, G_FILE_TEST_IS_DIR))
			continue;
		g_ptr_array_add(argv, g_strdup("--symlink"));
		g_ptr_array_add(argv, g_strconcat("usr/", *d, NULL));
		g_ptr_array_add(argv, g_strconcat("/", *d, NULL));
	}
	for (size_t i = 0; i < G_N_ELEMENTS(own_mounts); i++)
		g_ptr_array_add(argv, g_strdup(own_mounts[i]));
	for (const struct run_bind *b = opts->sandbox->binds; b && b->source; b++)
		add_bind(argv, b->writable, b->source, b->target ? b->target : b->source);
	if (opts->cwd) {
		g_ptr_array_add(argv, g_strdup("--chdir"));
		g_ptr_array_add(argv, g_strdup(opts->cwd));
	}
	g_ptr_array_add(argv, g_strdup("--"));
	g_ptr_array_add(argv, g_steal_pointer(&setpriv));
	if (geteuid() == 0) {
		uid_t uid;
		gid_t gid;

		if (!sandbox_user(&uid, &gid, error))
			return false;
		g_ptr_array_add(argv, g_strdup_printf("--reuid=%u", (unsigned)uid));
		g_ptr_array_add(argv, g_strdup_printf("--regid=%u", (unsigned)gid));
		g_ptr_array_add(argv, g_strdup("--clear-groups"));
		g_ptr_array_add(argv, g_strdup("--inh-caps=-all"));
		g_ptr_array_add(argv, g_strdup("--bounding-set=-all"));
	}
	g_ptr_array_add(argv, g_strdup("--no-new-privs"));
	g_ptr_array_add(argv, g_strdup("--"));
	return true;
}

/* What the child needs, prepared before fork. */
struct child_plan {
	const char *path;
	char *const *argv;
	char *const *env;
	const char *cwd; /* for chdir, NULL inside a sandbox (bwrap does it) */
	int out_fd;      /* the write end of the output pipe */
	int null_fd;
	int report_fd;   /* close-on-exec pipe: errno if exec fails */
	struct rlimit mem, procs, fsize;
	bool set_mem, set_procs, set_fsize;
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
	signal(SIGXFSZ, SIG_DFL);
	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (dup2(p->null_fd, 0) < 0 || dup2(p->out_fd, 1) < 0 || dup2(p->out_fd, 2) < 0)
		child_fail(p);
	/*
	 * No descriptor of zeroday's (the store, a libvirt socket) may reach
	 * the child, whether or not its opener asked for close-on-exec.
	 */
	syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
	if (p->cwd && chdir(p->cwd) < 0)
		child_fail(p);
	if (p->set_mem && setrlimit(RLIMIT_AS, &p->mem) < 0)
		child_fail(p);
	if (p->set_procs && setrlimit(RLIMIT_NPROC, &p->procs) < 0)
		child_fail(p);
	if (p->set_fsize && setrlimit(RLIMIT_FSIZE, &p->fsize) < 0)
		child_fail(p);
	execve(p->path, p->argv, p->env);
	child_fail(p);
}

/*
 * The child's output, as it is written to the log: the first half of
 * log_max as it comes, then a ring of the last half, written at the end
 * after a line saying how much was cut. A cut keeps whole lines only: the
 * line the first half ends in and the one the last half starts in go, so
 * that no fragment of one ("x.c:3:2: warning: 'strncpy' output may be
 * trunc") reads as a diagnostic of its own.
 */
struct capture {
	int log_fd;
	guint64 max;    /* 0: no cap */
	guint64 total;  /* bytes read */
	guint64 head;   /* bytes of the first half, written or pending */
	/*
	 * The first half's last line while it is not ended: written once it
	 * is, or at the end when nothing was cut; dropped when the cut falls
	 * in it.
	 */
	GByteArray *pending;
	GByteArray *tail;
	gsize tail_start; /* the ring's oldest byte once it is full */
	int before_tail;  /* the byte dropped last, just before the ring's oldest; -1: none */
	char line[256];   /* the line being read */
	size_t line_len;
	char last[256];   /* the last whole line */
};

static void write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return; /* a log that cannot be written loses output, not the child */
		buf += n;
		len -= (size_t)n;
	}
}

/* Keeps the last non-empty line, for RUN_SETUP_FAILED. */
static void remember_last_line(struct capture *c, const char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (buf[i] == '\n') {
			if (c->line_len) {
				memcpy(c->last, c->line, c->line_len);
				c->last[c->line_len] = '\0';
				c->line_len = 0;
			}
		} else if (c->line_len < sizeof(c->line) - 1) {
			c->line[c->line_len++] = buf[i];
		}
	}
}

/* Adds @len bytes to the first half: its whole lines written, the rest pending. */
static void head_add(struct capture *c, const char *buf, size_t len)
{
	const char *nl = memrchr(buf, '\n', len);

	c->head += len;
	if (!nl) {
		g_byte_array_append(c->pending, (const guint8 *)buf, (guint)len);
		return;
	}
	write_all(c->log_fd, (const char *)c->pending->data, c->pending->len);
	g_byte_array_set_size(c->pending, 0);
	write_all(c->log_fd, buf, (size_t)(nl + 1 - buf));
	g_byte_array_append(c->pending, (const guint8 *)nl + 1, (guint)(buf + len - nl - 1));
}

static void capture_add(struct capture *c, const char *buf, size_t len)
{
	guint64 half = c->max / 2;
	gsize ring = (gsize)(c->max - half);

	c->total += len;
	remember_last_line(c, buf, len);
	if (c->max == 0) {
		write_all(c->log_fd, buf, len);
		return;
	}
	if (c->head < half) {
		size_t n = (size_t)MIN((guint64)len, half - c->head);

		head_add(c, buf, n);
		buf += n;
		len -= n;
	}
	if (len == 0)
		return;
	if (c->tail->len < ring) {
		size_t n = MIN(len, ring - c->tail->len);

		g_byte_array_append(c->tail, (const guint8 *)buf, (guint)n);
		buf += n;
		len -= n;
	}
	if (len == 0)
		return;
	if (len >= ring) {
		/* The ring is full and the chunk is longer: keep its end. */
		c->before_tail = (unsigned char)(len > ring ? buf[len - ring - 1]
					    : c->tail->data[(c->tail_start + ring - 1) % ring]);
		memcpy(c->tail->data, buf + len - ring, ring);
		c->tail_start = 0;
		return;
	}
	while (len > 0) {
		size_t n = MIN(len, ring - c->tail_start);

		c->before_tail = c->tail->data[c->tail_start + n - 1];
		memcpy(c->tail->data + c->tail_start, buf, n);
		c->tail_start = (c->tail_start + n) % ring;
		buf += n;
		len -= n;
	}
}

/* Writes the ring's bytes in order, from the @skip-th oldest on. */
static void tail_write(struct capture *c, gsize skip)
{
	const char *data = (const char *)c->tail->data;
	gsize older = c->tail->len - c->tail_start; /* from tail_start to the end */

	if (skip < older) {
		write_all(c->log_fd, data + c->tail_start + skip, older - skip);
		write_all(c->log_fd, data, c->tail_start);
	} else {
		write_all(c->log_fd, data + (skip - older), c->tail->len - skip);
	}
}

/* How many of the ring's oldest bytes belong to a line begun before it. */
static gsize tail_partial(const struct capture *c)
{
	gsize len = c->tail->len;

	if (c->before_tail == '\n')
		return 0;
	for (gsize i = 0; i < len; i++) {
		if (c->tail->data[(c->tail_start + i) % len] == '\n')
			return i + 1;
	}
	return len;
}

static void capture_finish(struct capture *c)
{
	g_autofree char *note = NULL;
	gsize skip;

	if (c->line_len) {
		memcpy(c->last, c->line, c->line_len);
		c->last[c->line_len] = '\0';
	}
	if (c->max == 0)
		return;
	if (c->total <= c->head + c->tail->len) {
		/* Nothing was cut: the first half's last line goes on in the ring, or ends the output. */
		write_all(c->log_fd, (const char *)c->pending->data, c->pending->len);
		tail_write(c, 0);
		return;
	}
	skip = tail_partial(c);
	note = g_strdup_printf(
		"[zeroday: %" G_GUINT64_FORMAT " bytes of output cut here; the log keeps "
		"the whole lines of the first and the last %" G_GUINT64_FORMAT " bytes]\n",
		c->total - (c->head - c->pending->len) - (c->tail->len - skip), c->max / 2);
	write_all(c->log_fd, note, strlen(note));
	tail_write(c, skip);
}

/* Reads what is there on @fd into @c; false at end of file. */
static bool capture_read(struct capture *c, int fd)
{
	char buf[65536];
	ssize_t n = read(fd, buf, sizeof(buf));

	if (n < 0)
		return errno == EINTR || errno == EAGAIN;
	if (n == 0)
		return false;
	capture_add(c, buf, (size_t)n);
	return true;
}

/* Whether the file system holding @path has fewer than @reserve bytes free. */
static bool space_low(const char *path, guint64 reserve)
{
	struct statvfs st;

	if (!path || !reserve || statvfs(path, &st) < 0)
		return false;
	return (guint64)st.f_bavail * st.f_frsize < reserve;
}

bool run_child(struct run_result *result, const struct run_opts *opts, GError **error)
{
	g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
	g_autofree char *path = NULL;
	struct child_plan plan = { .out_fd = -1, .null_fd = -1, .report_fd = -1 };
	struct capture cap = { .log_fd = -1, .max = opts->log_max, .before_tail = -1 };
	gint64 start = g_get_monotonic_time();
	int report[2] = { -1, -1 };
	int out[2] = { -1, -1 };
	int pidfd = -1;
	bool ok = false;
	bool timed_out = false, no_space = false, eof = false;
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
		if (!sandbox_argv(argv, opts, path, error))
			return false;
	} else {
		path = strchr(opts->argv[0], '/') ? g_strdup(opts->argv[0])
						  : run_find_program(opts->argv[0]);
		if (!path) {
			g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_NOT_FOUND,
				    "%s: program not found", opts->argv[0]);
			return false;
		}
		g_ptr_array_add(argv, g_strdup(path));
		plan.cwd = opts->cwd;
	}
	for (const char *const *a = opts->sandbox ? opts->argv : opts->argv + 1; *a; a++)
		g_ptr_array_add(argv, g_strdup(*a));
	g_ptr_array_add(argv, NULL);

	plan.path = path;
	plan.argv = (char *const *)argv->pdata;
	plan.env = (char *const *)(opts->env ? opts->env : default_env);
	plan.set_mem = opts->max_memory > 0;
	plan.mem.rlim_cur = plan.mem.rlim_max = opts->max_memory;
	plan.set_procs = opts->max_procs > 0;
	plan.procs.rlim_cur = plan.procs.rlim_max = opts->max_procs;
	plan.set_fsize = opts->max_file_size > 0;
	plan.fsize.rlim_cur = plan.fsize.rlim_max = opts->max_file_size;
	plan.null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	cap.log_fd = opts->log_path
		? open(opts->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644)
		: dup(plan.null_fd);
	cap.tail = g_byte_array_new();
	cap.pending = g_byte_array_new();
	if (plan.null_fd < 0 || cap.log_fd < 0 || pipe2(report, O_CLOEXEC) < 0 ||
	    pipe2(out, O_CLOEXEC) < 0) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s: %s",
			    opts->log_path ? opts->log_path : "/dev/null", g_strerror(errno));
		goto out;
	}
	plan.report_fd = report[1];
	plan.out_fd = out[1];

	pid = fork();
	if (pid < 0) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "fork: %s", g_strerror(errno));
		goto out;
	}
	if (pid == 0)
		child_exec(&plan);
	setpgid(pid, pid);
	/*
	 * Readable when the child ends: its end is seen at once, not at the
	 * next tick after its output closed (-1 before Linux 5.3: the tick).
	 */
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	close(report[1]);
	report[1] = -1;
	close(out[1]);
	out[1] = -1;
	if (read(report[0], &e, sizeof(e)) == sizeof(e)) {
		waitpid(pid, NULL, 0);
		g_set_error(error, ENGINE_ERROR,
			    e == ENOENT ? ENGINE_ERROR_NOT_FOUND : ENGINE_ERROR_FAILED,
			    "cannot run %s: %s", opts->argv[0], g_strerror(e));
		goto out;
	}

	for (gint64 last_tick = start;;) {
		/* poll() passes over a negative descriptor: the output once at its end. */
		struct pollfd pfd[2] = { { .fd = eof ? -1 : out[0], .events = POLLIN },
					 { .fd = pidfd, .events = POLLIN } };
		int wait_ms = timed_out || no_space ? 10 : 200;
		gint64 now;
		pid_t got;

		/* The output first: a child blocked on a full pipe never exits. */
		if (poll(pfd, 2, wait_ms) > 0 && pfd[0].revents)
			eof = !capture_read(&cap, out[0]);
		got = waitpid(pid, &status, WNOHANG);
		if (got == pid)
			break;
		if (got < 0 && errno != EINTR) {
			g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "waitpid: %s",
				    g_strerror(errno));
			kill(-pid, SIGKILL);
			waitpid(pid, NULL, 0);
			goto out;
		}
		now = g_get_monotonic_time();
		if (!timed_out && opts->timeout_s &&
		    now - start > (gint64)opts->timeout_s * G_USEC_PER_SEC) {
			timed_out = true;
			kill(-pid, SIGKILL);
		}
		/* The rest about every 200 ms, however fast the output comes. */
		if (now - last_tick < G_USEC_PER_SEC / 5)
			continue;
		last_tick = now;
		if (!timed_out && !no_space && space_low(opts->space_path, opts->space_reserve)) {
			no_space = true;
			kill(-pid, SIGKILL);
		}
		if (opts->progress)
			opts->progress(opts->progress_data);
	}
	/* Whatever the child left behind in its group goes too. */
	kill(-pid, SIGKILL);
	/*
	 * What is left in the pipe, for at most a second: a stray process
	 * outside the group may hold it open and write forever.
	 */
	for (gint64 until = g_get_monotonic_time() + G_USEC_PER_SEC;
	     !eof && g_get_monotonic_time() < until;) {
		struct pollfd pfd = { .fd = out[0], .events = POLLIN };

		if (poll(&pfd, 1, 100) <= 0)
			break;
		eof = !capture_read(&cap, out[0]);
	}
	capture_finish(&cap);
	result->seconds = (double)(g_get_monotonic_time() - start) / G_USEC_PER_SEC;
	result->output = cap.total;
	if (timed_out) {
		result->outcome = RUN_TIMEOUT;
	} else if (no_space) {
		result->outcome = RUN_NO_SPACE;
	} else if (WIFSIGNALED(status)) {
		result->outcome = RUN_SIGNALED;
		result->status = WTERMSIG(status);
	} else {
		result->outcome = RUN_EXITED;
		result->status = WEXITSTATUS(status);
		/*
		 * bwrap says "bwrap: ..." when it cannot set the sandbox up, and
		 * setpriv "setpriv: ..." with 127 when the program cannot be run.
		 */
		if (opts->sandbox && result->status != 0 &&
		    (g_str_has_prefix(cap.last, "bwrap: ") ||
		     (g_str_has_prefix(cap.last, "setpriv: ") && result->status >= 126))) {
			result->outcome = RUN_SETUP_FAILED;
			g_strlcpy(result->detail, cap.last, sizeof(result->detail));
		}
	}
	ok = true;
out:
	if (pidfd >= 0)
		close(pidfd);
	if (plan.null_fd >= 0)
		close(plan.null_fd);
	if (cap.log_fd >= 0)
		close(cap.log_fd);
	g_byte_array_unref(cap.tail);
	g_byte_array_unref(cap.pending);
	for (int i = 0; i < 2; i++) {
		if (report[i] >= 0)
			close(report[i]);
		if (out[i] >= 0)
			close(out[i]);
	}
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
	/* A sandbox that worked once works for the process's life: asked until then. */
	static gint works;
	struct run_sandbox sandbox = { 0 };
	struct run_opts opts = { .argv = argv, .sandbox = &sandbox, .timeout_s = 60 };
	struct run_result result;

	if (g_atomic_int_get(&works))
		return true;
	if (!run_child(&result, &opts, error))
		return false;
	if (result.outcome != RUN_EXITED || result.status != 0) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED,
			    "bwrap cannot create its namespaces here (exit %d)", result.status);
		return false;
	}
	g_atomic_int_set(&works, 1);
	return true;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		return rmdir(path) < 0 && errno != ENOENT ? -1 : 0;
	return unlink(path) < 0 && errno != ENOENT ? -1 : 0;
}

/* nftw() takes no closure: run_remove_changed_since()'s, one walk at a time. */
static G_LOCK_DEFINE(changed_walk);
static gint64 changed_since;
static guint changed_removed;

static int remove_changed(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)ftw;
	if (flag == FTW_D || flag == FTW_DP || flag == FTW_DNR)
		return 0;
	if (flag == FTW_NS || st->st_ctime < changed_since)
		return 0;
	if (unlink(path) < 0 && errno != ENOENT)
		return -1;
	changed_removed++;
	return 0;
}

bool run_remove_changed_since(const char *dir, gint64 since, guint *removed, GError **error)
{
	struct stat st;
	int rc;
	int saved;

	*removed = 0;
	if (lstat(dir, &st) < 0 && errno == ENOENT)
		return true;
	G_LOCK(changed_walk);
	changed_since = since;
	changed_removed = 0;
	rc = nftw(dir, remove_changed, 64, FTW_PHYS | FTW_MOUNT);
	saved = errno;
	*removed = changed_removed;
	G_UNLOCK(changed_walk);
	if (rc < 0) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "cleaning %s: %s", dir,
			    g_strerror(saved));
		return false;
	}
	return true;
}

bool run_remove_tree(const char *dir, GError **error)
{
	struct stat st;

	if (lstat(dir, &st) < 0 && errno == ENOENT)
		return true;
	/* FTW_PHYS: links are removed, never followed; FTW_MOUNT: one file system. */
	if (nftw(dir, remove_one, 64, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) < 0) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "removing %s: %s", dir,
			    g_strerror(errno));
		return false;
	}
	return true;
}

int run_lock(const char *path, GError **error)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);

	if (fd < 0 || flock(fd, LOCK_EX) < 0) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s: %s", path,
			    g_strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

char *run_private_dir(const char *parent, const char *prefix, GError **error)
{
	g_autofree char *name = g_strconcat(prefix, "-XXXXXX", NULL);
	g_autofree char *template = g_build_filename(parent ? parent : g_get_tmp_dir(), name, NULL);

	if (!g_mkdtemp_full(template, 0700)) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s: %s", template,
			    g_strerror(errno));
		return NULL;
	}
	return g_steal_pointer(&template);
}
