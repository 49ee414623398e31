/*
 * Child processes: an argv vector (never a shell), an environment, a
 * working directory, a wall-clock timeout, resource limits, an optional
 * bubblewrap sandbox, and the output captured in a log file.
 */
#ifndef ZERODAY_RUN_H
#define ZERODAY_RUN_H

#include <stdbool.h>
#include <glib.h>

#include "engine/engine.h"

/* Where a sandboxed child may read and write. Paths outside are invisible. */
struct run_sandbox {
	const char *const *ro_binds; /* NULL-terminated: visible read-only, same path */
	const char *const *rw_binds; /* NULL-terminated: visible writable, same path */
	bool allow_network;          /* false: a network namespace with no interfaces */
};

struct run_opts {
	const char *const *argv; /* argv[0] is looked up in PATH */
	const char *const *env;  /* NULL-terminated "KEY=VALUE"; NULL: a minimal default */
	const char *cwd;         /* NULL: inherit */
	const char *log_path;    /* stdout and stderr go here (appended); NULL: /dev/null */
	unsigned timeout_s;      /* 0: none */
	guint64 max_memory;      /* RLIMIT_AS in bytes per process; 0: none */
	unsigned max_procs;      /* RLIMIT_NPROC; 0: none */
	const struct run_sandbox *sandbox; /* NULL: run unsandboxed */
	/* Called about every 200 ms while the child runs, with @progress_data. */
	void (*progress)(void *progress_data);
	void *progress_data;
};

enum run_outcome {
	RUN_EXITED,   /* see status */
	RUN_SIGNALED, /* see status: the signal */
	RUN_TIMEOUT,  /* killed after timeout_s */
};

struct run_result {
	enum run_outcome outcome;
	int status;        /* exit status or signal number */
	double seconds;    /* wall clock */
};

/*
 * Runs a child in its own process group and waits for it. On timeout the
 * whole group is killed. Returns false only when the child could not be
 * started (ENGINE_ERROR_FAILED, or ENGINE_ERROR_NOT_FOUND for a missing
 * program or sandbox); how it ended is in @result.
 */
bool run_child(struct run_result *result, const struct run_opts *opts, GError **error);

/*
 * Makes @dir (created if missing) writable inside a sandbox: when zeroday
 * runs as root, sandboxed children run as an unprivileged user, so the
 * directory is given to that user.
 */
bool run_sandbox_prepare_dir(const char *dir, GError **error);

/* Returns whether the sandbox works on this machine; if not, why in @error. */
bool run_sandbox_available(GError **error);

/* Returns the full path of @program found in PATH, or NULL (caller frees). */
char *run_find_program(const char *program);

#endif
