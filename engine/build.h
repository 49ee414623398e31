/*
 * Kernel builds: a target's configuration resolved into .config, an
 * incremental make in a persistent O= directory, optional checkers, and
 * the verdict against the parent's build.
 */
#ifndef ZERODAY_BUILD_H
#define ZERODAY_BUILD_H

#include <stdbool.h>
#include <glib.h>

#include "engine/engine.h"

enum build_checks {
	BUILD_W1 = (1 << 0),         /* W=1 */
	BUILD_SPARSE = (1 << 1),     /* C=1: sparse on what is recompiled */
	BUILD_SPARSE_ALL = (1 << 2), /* C=2: sparse on every file */
	BUILD_COCCI = (1 << 3),      /* coccicheck, report mode, on the changed files */
};

/*
 * A build target, written ARCH:CONFIG[+FRAGMENT...][:CHECK[,CHECK...]]:
 *   ARCH      the kernel's ARCH= (x86_64, i386, arm64, arm, riscv,
 *             powerpc, s390, mips, loongarch), built with Debian's cross
 *             gcc of that arch unless LLVM=1
 *   CONFIG    tinyconfig, allnoconfig, allmodconfig, allyesconfig,
 *             defconfig, NAME_defconfig, randconfig@SEED, randconfig@daily,
 *             or file=PATH
 *   FRAGMENT  a fragment zeroday ships (e.g. "serial": the arch's own
 *             when it has one) or an absolute path, merged like
 *             scripts/kconfig/merge_config.sh
 *   CHECK     W=1, sparse (C=1), sparse-all (C=2), coccinelle;
 *             LLVM=1 (or "clang"): clang, lld and LLVM's tools instead
 *             of gcc and binutils, for any arch clang targets; and
 *             heads: built (and booted) on a tree's heads only, not on
 *             every commit of a rebasable tree; a failure there is
 *             still bisected on this target; kselftest=NAME (repeatable,
 *             NAME [a-z0-9_-]+, x86_64 only): the tree's own
 *             tools/testing/selftests/NAME built after the kernel and
 *             booted with it (vm and mm name the same, whichever the
 *             tree has), its config and kselftest.config merged in
 * e.g. "x86_64:tinyconfig+serial", "arm64:defconfig:W=1,sparse",
 * "x86_64:randconfig@4153629", "arm64:tinyconfig+serial:LLVM=1".
 */
struct build_target {
	char *spec;        /* canonical text, with a daily seed made explicit */
	char *dir_spec;    /* the text as written: names the build directory */
	char *arch;
	char *config;      /* the make target; "randconfig" or "file" for those */
	char *config_file; /* for file=PATH */
	guint64 seed;      /* for randconfig */
	bool daily;        /* randconfig@daily: the seed is today's, see build_target_daily() */
	char **fragments;  /* absolute paths, NULL-terminated */
	enum build_checks checks;
	bool llvm;         /* LLVM=1 */
	bool heads_only;   /* "heads" */
	char **kselftests; /* kselftest=NAME words, NULL-terminated, never NULL */
};

/*
 * Whether target @spec's CHECK list has @word ("heads", "LLVM=1"), for
 * a caller that needs no more of it; no validation.
 */
bool build_spec_has_check(const char *spec, const char *word);

/*
 * Parses @spec; fragment names are looked up as @fragment_dir/NAME.config.
 * Errors are ENGINE_ERROR_INVALID naming the bad part.
 */
bool build_target_parse(struct build_target *target, const char *spec,
			const char *fragment_dir, GError **error);
void build_target_clear(struct build_target *target);

/*
 * For a randconfig@daily target, sets the seed of @day for @salt (a tree
 * name): the same all day, new the next, and rewrites the spec with the
 * explicit seed, so that the recorded target reproduces the config with
 * KCONFIG_SEED. Does nothing to other targets.
 */
void build_target_daily(struct build_target *target, const char *salt, GDateTime *day);

/*
 * A directory name for the target's persistent build directory (caller
 * frees). A daily randconfig keeps its directory from day to day.
 */
char *build_target_dirname(const struct build_target *target);

/*
 * The one line a developer pastes to reproduce a build of @target in a
 * checkout of the commit (caller frees): make with O=build, ARCH, the
 * checks (W=1, C=1, C=2) and, for a randconfig, KCONFIG_SEED. A config
 * made with fragments or from a file is not reproducible from the tree
 * alone: the line then starts from the report's attached config, named
 * @config_name (gzipped when it ends in ".gz"). Any arch but x86 gets
 * CROSS_COMPILE= with Debian's cross prefix.
 */
char *build_reproduce_command(const struct build_target *target, const char *config_name);

/*
 * The first line of `--version` of the compiler that builds target
 * @spec here ("aarch64-linux-gnu-gcc (Debian 12.2.0-14) 12.2.0", "Debian
 * clang version 14.0.6"), or NULL when there is none (caller frees).
 * Asked of the compiler once per compiler and process.
 */
char *build_compiler_version(const char *spec);

/*
 * The directory below tools/testing/selftests of selftest @name in the
 * tree at @srcdir: @name itself, or for vm and mm the one of the two the
 * tree has (6.3 renamed vm to mm); NULL when the tree has neither
 * (caller frees). No link is followed.
 */
char *build_kselftest_dir(const char *srcdir, const char *name);

/* The default target of a tree that sets none. */
/*
 * What a build's diagnostics are: how its log is parsed (engine/diag.c's
 * fingerprints) and what is collected (the compiler's output and the
 * log's pieces kept beside the objects). A build of another version is
 * compared with none of this one: the store keeps the version with each
 * build, and a build directory beside itself (one of another version is
 * built afresh). Bump it on any change that makes one build give other
 * diagnostics, or an old warning comes out as new once.
 */
#define BUILD_DIAG_VERSION 2

#define BUILD_DEFAULT_TARGET "x86_64:tinyconfig+serial"

/* What a build may use, when its build_env leaves a limit at 0. */
#define BUILD_DEFAULT_LOG_MAX (16 * 1024 * 1024)                /* output kept per make */
#define BUILD_DEFAULT_MAX_FILE_SIZE (8ULL * 1024 * 1024 * 1024) /* one file it writes */
#define BUILD_DEFAULT_MAX_DISK (64ULL * 1024 * 1024 * 1024)     /* its build directory */
#define BUILD_DEFAULT_MAX_DIAGS 20000                           /* diagnostics kept */

/*
 * Where a sandboxed build sees its directories, whatever their paths on
 * the host: the build's output (paths in diagnostics, the reproduce
 * command) does not depend on where zeroday keeps its state.
 */
#define BUILD_SANDBOX_SRC "/zeroday/src"
#define BUILD_SANDBOX_OUT "/zeroday/out"
#define BUILD_SANDBOX_CCACHE "/zeroday/ccache"
#define BUILD_SANDBOX_CCACHE_SHARED "/zeroday/ccache-shared"
#define BUILD_SANDBOX_TOOLS "/zeroday/tools"

struct build_env {
	const char *srcdir;     /* the checked-out tree, read-only to the build */
	/*
	 * O=, reused from commit to commit; given to the sandbox's user. Its
	 * parent must be zeroday's own: the configuration stamp is kept
	 * there, beside it, out of the build's reach.
	 */
	const char *builddir;
	/*
	 * NULL: no ccache. One tree's cache must not be another's: whatever a
	 * build writes into its cache, later builds that share it read.
	 */
	const char *ccache_dir;
	/*
	 * NULL, or a directory that ccache uses as its remote storage (the
	 * file backend) beside @ccache_dir: the tree's cache that the nodes
	 * of a cluster share, on the spool. Only this tree's: the same rule
	 * as @ccache_dir.
	 */
	const char *ccache_shared;
	const char *log_path;   /* make's output, appended */
	const char *config_copy; /* where to keep the resolved .config */
	const char *tools_dir;   /* holds zeroday-cc (see build_install_tools()) */
	unsigned jobs;
	unsigned timeout_s;
	guint64 max_memory;
	unsigned max_procs;
	guint64 log_max;         /* 0: BUILD_DEFAULT_LOG_MAX */
	guint64 max_file_size;   /* 0: BUILD_DEFAULT_MAX_FILE_SIZE */
	guint64 max_disk;        /* 0: BUILD_DEFAULT_MAX_DISK; over it, the directory is wiped */
	unsigned max_diags;      /* 0: BUILD_DEFAULT_MAX_DIAGS */
	bool sandbox;
	const char *const *changed_files; /* for coccinelle; may be NULL */
	/*
	 * The commit being built, and a way to list the paths that differ
	 * between another commit and it (NULL-terminated, freed by the caller;
	 * NULL when unknown). With both, a build directory configured at an
	 * earlier commit skips the configuration step when no Kconfig file
	 * changed in between.
	 */
	const char *commit;
	char **(*changes_since)(const char *old_commit, const char *new_commit, void *data);
	void *changes_data;
	/* Called about every 200 ms with the latest kbuild line. */
	void (*progress)(const char *line, void *data);
	void *progress_data;
};

enum build_status {
	BUILD_OK,      /* make succeeded */
	BUILD_FAILED,  /* make failed: the code's fault */
	/*
	 * Not the code's fault: a timeout, a kill, the sandbox, the disk, an
	 * output file that could not be taken out safely. Retried, never a
	 * verdict.
	 */
	BUILD_INFRA,
	BUILD_SKIPPED, /* no compiler or checker for this target here */
};

const char *build_status_name(enum build_status status);
/* The status named @name (build_status_name()); false if none is. */
bool build_status_parse(const char *name, enum build_status *out);

/* The selftests of a target with kselftest= words, built after its kernel. */
enum build_kselftest {
	BUILD_KSELFTEST_NONE,   /* none asked, or the kernel did not build */
	BUILD_KSELFTEST_OK,     /* installed in BUILD_KSELFTEST_INSTALL */
	BUILD_KSELFTEST_FAILED, /* see kselftest_reason and BUILD_KSELFTEST_LOG */
};

/* Where the selftests are installed, relative to the build directory. */
#define BUILD_KSELFTEST_INSTALL "kselftest-install"

/*
 * The selftests' make output goes to the build log's name with this
 * suffix, never to the build log: their compiler warnings are not the
 * kernel's diagnostics.
 */
#define BUILD_KSELFTEST_LOG ".kselftest.log"

/* The most bytes a selftest's own config file may have. */
#define BUILD_MAX_KSELFTEST_CONFIG (64 * 1024)

struct build_output {
	enum build_status status;
	/*
	 * A selftest build failure is not the kernel's: the status stays
	 * BUILD_OK, and the boot says the selftests are missing.
	 */
	enum build_kselftest kselftest;
	char *kselftest_reason; /* why, for BUILD_KSELFTEST_FAILED */
	char *reason;     /* why, for FAILED, INFRA and SKIPPED */
	GPtrArray *diags; /* struct diag, at most max_diags */
	unsigned diags_cut; /* diagnostics past max_diags, not kept */
	double seconds;
};

void build_output_clear(struct build_output *out);

/*
 * Writes the compiler wrapper into @dir, read-only to builds. zeroday-cc
 * runs the compiler and keeps what it printed beside the object it wrote
 * (OBJECT.zd-diag): an incremental build recompiles only what changed, so
 * the diagnostics of the objects it did not rebuild come from there.
 */
bool build_install_tools(const char *dir, GError **error);

/*
 * Configures and builds the tree in @env for @target. Returns false only
 * for a programming or setup error; everything about the build itself is
 * in @out.
 */
bool build_run(struct build_output *out, const struct build_target *target,
	       const struct build_env *env, GError **error);

/*
 * The bootable image a build of @target leaves, relative to its build
 * directory, or NULL for an architecture zeroday does not boot. Read it
 * with hostile_copy().
 */
const char *build_image_name(const struct build_target *target);

/* The most bytes a kernel image taken out of a build may have. */
#define BUILD_MAX_IMAGE (512 * 1024 * 1024)

/* The most bytes a .config taken out of a build may have. */
#define BUILD_MAX_CONFIG (16 * 1024 * 1024)

enum build_verdict {
	VERDICT_PASS,
	VERDICT_NEW_DIAGNOSTICS,
	VERDICT_FAIL_NEW_ERROR,
	VERDICT_FAIL_PARENT_FAILING,
	VERDICT_INFRA,
	VERDICT_SKIPPED,
};

const char *build_verdict_name(enum build_verdict verdict);

/*
 * Compares a commit's build with its parent's (NULL for a root commit) on
 * the same target. *@fresh receives the diagnostics the commit introduced
 * (borrowed from @child; free the array before @child).
 */
enum build_verdict build_compare(const struct build_output *child,
				 const struct build_output *parent, GPtrArray **fresh);

#endif
