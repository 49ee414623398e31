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

/* A directory of the host made visible inside a sandbox. */
struct run_bind {
	const char *source; /* the host's path */
	const char *target; /* where the child sees it; NULL: at @source */
	bool writable;      /* else a read-only bind */
};

/*
 * Where a sandboxed child may read and write: the system's programs
 * (/usr) read-only, the binds, and a private /tmp, /proc and /dev.
 * Everything else of the host is invisible.
 *
 * The namespaces and binds are set up with zeroday's own privileges, so
 * that a source inside a mode-0700 directory can be bound; only the
 * child itself runs unprivileged (when zeroday is root: as "nobody", with
 * no capabilities and no_new_privs).
 */
struct run_sandbox {
	const struct run_bind *binds; /* ended by an entry whose source is NULL; may be NULL */
	bool allow_network;           /* false: a network namespace with no interfaces */
};

struct run_opts {
	const char *const *argv; /* argv[0] is looked up in PATH */
	const char *const *env;  /* NULL-terminated "KEY=VALUE"; NULL: a minimal default */
	const char *cwd;         /* NULL: inherit */
	const char *log_path;    /* stdout and stderr go here (appended); NULL: /dev/null */
	/*
	 * At most this many bytes of output are kept in the log: the first
	 * half and the last half, with a line between saying how much was
	 * cut. 0: all of it.
	 */
	guint64 log_max;
	guint64 max_file_size;   /* RLIMIT_FSIZE in bytes; 0: none */
	/*
	 * With @space_path: the child is killed (RUN_NO_SPACE) once the file
	 * system holding it has fewer than @space_reserve bytes free, so a
	 * build cannot fill the disk the store lives on.
	 */
	const char *space_path;
	guint64 space_reserve;
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
	RUN_NO_SPACE, /* killed: the disk went below space_reserve */
	/*
	 * The sandbox could not be set up, or the program could not be
	 * executed inside it (a missing bind source, no namespaces, no such
	 * program): not the program's doing. See detail.
	 */
	RUN_SETUP_FAILED,
};

struct run_result {
	enum run_outcome outcome;
	int status;        /* exit status or signal number */
	double seconds;    /* wall clock */
	guint64 output;    /* bytes the child wrote, kept or not */
	char detail[256];  /* for RUN_SETUP_FAILED: the sandbox's last word */
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
 * directory is given to that user. Its parents stay zeroday's.
 */
bool run_sandbox_prepare_dir(const char *dir, GError **error);

/*
 * Removes @dir and everything below it without following links (what a
 * sandboxed child left there is hostile). A missing @dir is fine.
 */
bool run_remove_tree(const char *dir, GError **error);

/*
 * Removes, below @dir and without following links, every file that is
 * not a directory and whose status changed at or after @since (the
 * ctime, which no program can set back): what an interrupted build may
 * have left half-written. Sets *@removed to how many went.
 */
bool run_remove_changed_since(const char *dir, gint64 since, guint *removed, GError **error);

/*
 * Takes an exclusive lock on @path (created when missing, mode 0600),
 * waiting while another thread or process holds it. Returns the
 * descriptor, whose close() releases it, or -1 with ENGINE_ERROR_FAILED.
 */
int run_lock(const char *path, GError **error);

/*
 * Returns whether the sandbox works on this machine; if not, why in @error.
 * Once it worked, the process takes it as working without asking again.
 */
bool run_sandbox_available(GError **error);

/* Returns the full path of @program found in PATH, or NULL (caller frees). */
char *run_find_program(const char *program);

/*
 * Makes a new directory PREFIX-XXXXXX, mode 0700, below @parent (NULL:
 * the system's temporary directory), for a sandboxed tool's output;
 * returns its path (caller frees), or NULL with @error set.
 */
char *run_private_dir(const char *parent, const char *prefix, GError **error);

#endif
