/*
 * Kernel builds: see build.h. Every child goes through run.c.
 */
#define G_LOG_DOMAIN "engine"

#include "autoconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <signal.h>
#include <string.h>
#include <ftw.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "engine/build.h"
#include "engine/diag.h"
#include "engine/hostile.h"
#include "engine/run.h"

static const char *const status_names[] = {
	[BUILD_OK] = "ok", [BUILD_FAILED] = "failed", [BUILD_INFRA] = "infra-error",
	[BUILD_SKIPPED] = "skipped",
};

const char *build_status_name(enum build_status status)
{
	return status_names[status];
}

bool build_status_parse(const char *name, enum build_status *out)
{
	for (guint i = 0; i < G_N_ELEMENTS(status_names); i++) {
		if (strcmp(status_names[i], name) == 0) {
			*out = (enum build_status)i;
			return true;
		}
	}
	return false;
}

static const char *const verdict_names[] = {
	[VERDICT_PASS] = "pass",
	[VERDICT_NEW_DIAGNOSTICS] = "new-diagnostics",
	[VERDICT_FAIL_NEW_ERROR] = "fail (new error)",
	[VERDICT_FAIL_PARENT_FAILING] = "fail (already failing in parent)",
	[VERDICT_INFRA] = "infra-error",
	[VERDICT_SKIPPED] = "skipped",
};

const char *build_verdict_name(enum build_verdict verdict)
{
	return verdict_names[verdict];
}

static const char cc_wrapper[] =
	"#!/bin/sh\n"
	"# zeroday-cc COMPILER ARGS...: runs the compiler and keeps what it printed\n"
	"# beside the object it wrote, so that an incremental build still knows the\n"
	"# diagnostics of the objects it did not rebuild. Written by zeroday.\n"
	"out=\n"
	"prev=\n"
	"for a in \"$@\"; do\n"
	"\t[ \"$prev\" = -o ] && out=$a\n"
	"\tprev=$a\n"
	"done\n"
	"case $out in\n"
	"*.o) ;;\n"
	"*) exec \"$@\" ;;\n"
	"esac\n"
	"\"$@\" 2>\"$out.zd-diag.tmp\"\n"
	"rc=$?\n"
	"cat \"$out.zd-diag.tmp\" >&2\n"
	"mv -f \"$out.zd-diag.tmp\" \"$out.zd-diag\"\n"
	"exit $rc\n";

/*
 * ccache's configuration is zeroday's, read-only to builds
 * (CCACHE_CONFIGPATH): a build must not be able to set prefix_command or
 * the like for the builds after it. The settings that matter come from
 * the environment anyway.
 */
static const char ccache_conf[] =
	"# Written by zeroday: the configuration of every build's ccache.\n"
	"max_size = 5G\n";

static bool install_file(const char *dir, const char *name, const char *text, mode_t mode,
			 GError **error)
{
	g_autofree char *path = g_build_filename(dir, name, NULL);
	g_autofree char *current = NULL;
	GError *local = NULL;

	if (g_file_get_contents(path, &current, NULL, NULL) && strcmp(current, text) == 0)
		return true;
	/* Renamed into place with its mode: a build beside never runs it half-made. */
	if (g_mkdir_with_parents(dir, 0755) < 0 ||
	    !g_file_set_contents_full(path, text, -1, G_FILE_SET_CONTENTS_CONSISTENT, (int)mode,
				      &local)) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s: %s", path,
			    local ? local->message : g_strerror(errno));
		g_clear_error(&local);
		return false;
	}
	return true;
}

bool build_install_tools(const char *dir, GError **error)
{
	return install_file(dir, "zeroday-cc", cc_wrapper, 0755, error) &&
	       install_file(dir, "ccache.conf", ccache_conf, 0644, error);
}

/* Kernel ARCH -> the cross-compiler prefix Debian's gcc-* packages install. */
static const struct {
	const char *arch;
	const char *host; /* uname -m that builds it natively */
	const char *cross;
} arches[] = {
	{ "x86_64", "x86_64", "x86_64-linux-gnu-" },
	{ "i386", "x86_64", NULL }, /* the x86_64 compiler builds it with -m32 */
	{ "x86", "x86_64", NULL },
	{ "arm64", "aarch64", "aarch64-linux-gnu-" },
	{ "arm", "armv7l", "arm-linux-gnueabihf-" },
	{ "riscv", "riscv64", "riscv64-linux-gnu-" },
	{ "powerpc", "ppc64le", "powerpc64le-linux-gnu-" },
	{ "s390", "s390x", "s390x-linux-gnu-" },
	/* Debian 12's mips compiler is the 64-bit little-endian one; it builds 32-bit kernels too. */
	{ "mips", "mips64", "mips64el-linux-gnuabi64-" },
	{ "loongarch", "loongarch64", "loongarch64-linux-gnu-" },
};

static bool refuse(GError **error, const char *spec, const char *why)
{
	g_autofree char *shown = g_strescape(spec, NULL);

	g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID, "bad build target '%s': %s",
		    shown, why);
	return false;
}

static bool word_ok(const char *s)
{
	if (!*s || s[0] == '-')
		return false;
	for (; *s; s++) {
		if (!g_ascii_isalnum(*s) && *s != '_' && *s != '-' && *s != '.')
			return false;
	}
	return true;
}

/* Whether a word of a target's CHECK list asks for LLVM=1. */
static bool llvm_word(const char *word)
{
	return strcmp(word, "LLVM=1") == 0 || strcmp(word, "clang") == 0;
}

bool build_spec_has_check(const char *spec, const char *word)
{
	g_auto(GStrv) parts = g_strsplit(spec, ":", 3);
	g_auto(GStrv) checks = NULL;
	bool llvm = llvm_word(word);

	if (!parts[0] || !parts[1] || !parts[2])
		return false;
	checks = g_strsplit(parts[2], ",", -1);
	for (char **c = checks; *c; c++) {
		if (strcmp(*c, word) == 0 || (llvm && llvm_word(*c)))
			return true;
	}
	return false;
}

/* A kselftest=NAME word's NAME: a directory of tools/testing/selftests. */
static bool kselftest_name_ok(const char *name)
{
	if (!*name || strlen(name) > 64)
		return false;
	for (const char *p = name; *p; p++) {
		if (!g_ascii_islower(*p) && !g_ascii_isdigit(*p) && *p != '_' && *p != '-')
			return false;
	}
	return true;
}

static const char *const named_configs[] = {
	"tinyconfig", "allnoconfig", "allmodconfig", "allyesconfig", "defconfig", NULL,
};

static bool target_parse(struct build_target *t, const char *spec, const char *fragment_dir,
			 GError **error)
{
	g_auto(GStrv) parts = g_strsplit(spec, ":", 3);
	g_auto(GStrv) config = NULL;
	g_autoptr(GStrvBuilder) frags = g_strv_builder_new();
	g_autoptr(GPtrArray) kselftests = g_ptr_array_new_with_free_func(g_free);
	bool arch_known = false;

	memset(t, 0, sizeof(*t));
	if (!parts[0] || !parts[1])
		return refuse(error, spec, "expected ARCH:CONFIG[+FRAGMENT...][:CHECKS]");
	for (size_t i = 0; i < G_N_ELEMENTS(arches); i++)
		arch_known |= strcmp(parts[0], arches[i].arch) == 0;
	if (!arch_known)
		return refuse(error, spec, "unknown architecture");
	t->arch = g_strdup(parts[0]);

	config = g_strsplit(parts[1], "+", -1);
	if (strcmp(config[0], "randconfig@daily") == 0) {
		t->config = g_strdup("randconfig");
		t->daily = true;
	} else if (g_str_has_prefix(config[0], "randconfig@")) {
		const char *seed = config[0] + strlen("randconfig@");
		char *end;

		t->seed = g_ascii_strtoull(seed, &end, 10);
		if (!*seed || *end || !g_ascii_isdigit(*seed))
			return refuse(error, spec, "randconfig needs a decimal seed: randconfig@SEED");
		t->config = g_strdup("randconfig");
	} else if (g_str_has_prefix(config[0], "file=")) {
		t->config_file = g_strdup(config[0] + strlen("file="));
		if (!g_path_is_absolute(t->config_file))
			return refuse(error, spec, "file= takes an absolute path");
		t->config = g_strdup("file");
	} else if (g_strv_contains(named_configs, config[0]) ||
		   (g_str_has_suffix(config[0], "_defconfig") && word_ok(config[0]))) {
		t->config = g_strdup(config[0]);
	} else {
		return refuse(error, spec, "unknown config (tinyconfig, allnoconfig, allmodconfig, "
				    "allyesconfig, defconfig, NAME_defconfig, randconfig@SEED, "
				    "file=PATH)");
	}
	for (char **f = config + 1; *f; f++) {
		if (g_path_is_absolute(*f)) {
			g_strv_builder_add(frags, *f);
		} else if (word_ok(*f)) {
			/* The arch's own fragment of that name first: +serial differs by arch. */
			g_autofree char *name = g_strconcat(*f, ".config", NULL);
			g_autofree char *own = g_build_filename(fragment_dir, t->arch, name, NULL);
			g_autofree char *path = g_build_filename(fragment_dir, name, NULL);

			if (g_file_test(own, G_FILE_TEST_IS_REGULAR))
				g_strv_builder_add(frags, own);
			else if (g_file_test(path, G_FILE_TEST_IS_REGULAR))
				g_strv_builder_add(frags, path);
			else
				return refuse(error, spec, "no such config fragment");
		} else {
			return refuse(error, spec, "bad fragment name");
		}
	}
	t->fragments = g_strv_builder_end(frags);
	/* Again below, with kselftest.config: the builder keeps what it was given. */
	for (char **f = t->fragments; *f; f++)
		g_strv_builder_add(frags, *f);

	if (parts[2]) {
		g_auto(GStrv) checks = g_strsplit(parts[2], ",", -1);

		for (char **c = checks; *c; c++) {
			if (g_str_has_prefix(*c, "kselftest=")) {
				const char *name = *c + strlen("kselftest=");

				if (!kselftest_name_ok(name))
					return refuse(error, spec, "kselftest=NAME takes a selftest "
							    "directory's name ([a-z0-9_-]+)");
				if (strcmp(t->arch, "x86_64") != 0)
					return refuse(error, spec, "kselftest= is for x86_64 targets "
							    "only (the selftests run as this "
							    "machine's programs)");
				if (!g_ptr_array_find_with_equal_func(kselftests, name, g_str_equal,
								       NULL))
					g_ptr_array_add(kselftests, g_strdup(name));
			} else if (strcmp(*c, "W=1") == 0)
				t->checks |= BUILD_W1;
			else if (strcmp(*c, "sparse") == 0 || strcmp(*c, "C=1") == 0)
				t->checks |= BUILD_SPARSE;
			else if (strcmp(*c, "sparse-all") == 0 || strcmp(*c, "C=2") == 0)
				t->checks |= BUILD_SPARSE_ALL;
			else if (strcmp(*c, "coccinelle") == 0)
				t->checks |= BUILD_COCCI;
			else if (llvm_word(*c))
				t->llvm = true;
			else if (strcmp(*c, "heads") == 0)
				t->heads_only = true;
			else
				return refuse(error, spec, "unknown check (W=1, sparse, sparse-all, "
						    "coccinelle, LLVM=1, heads, kselftest=NAME)");
		}
	}
	g_ptr_array_add(kselftests, NULL);
	t->kselftests = (char **)g_ptr_array_free(g_steal_pointer(&kselftests), FALSE);
	if (t->kselftests[0]) {
		/* What the selftests' programs need of a kernel, beyond tinyconfig. */
		g_autofree char *path = g_build_filename(fragment_dir, "kselftest.config", NULL);

		if (!g_file_test(path, G_FILE_TEST_IS_REGULAR))
			return refuse(error, spec, "no kselftest.config fragment");
		g_strv_builder_add(frags, path);
		g_strfreev(t->fragments);
		t->fragments = g_strv_builder_end(frags);
	}
	t->spec = g_strdup(spec);
	t->dir_spec = g_strdup(spec);
	return true;
}

bool build_target_parse(struct build_target *t, const char *spec, const char *fragment_dir,
			GError **error)
{
	if (target_parse(t, spec, fragment_dir, error))
		return true;
	build_target_clear(t);
	return false;
}

void build_target_clear(struct build_target *t)
{
	g_free(t->spec);
	g_free(t->dir_spec);
	g_free(t->arch);
	g_free(t->config);
	g_free(t->config_file);
	g_strfreev(t->fragments);
	g_strfreev(t->kselftests);
	memset(t, 0, sizeof(*t));
}

static char *cross_prefix(const char *arch);

/*
 * The CROSS_COMPILE= of a reproduce line for @arch: Debian's prefix for
 * any arch but x86, whose compiler most developers' machines run
 * natively (as the Intel robot's make.cross does); NULL for x86.
 */
static const char *reproduce_cross(const char *arch)
{
	for (size_t i = 0; i < G_N_ELEMENTS(arches); i++) {
		if (strcmp(arches[i].arch, arch) == 0)
			return strcmp(arches[i].host, "x86_64") == 0 ? NULL : arches[i].cross;
	}
	return NULL;
}

char *build_reproduce_command(const struct build_target *t, const char *config_name)
{
	GString *s = g_string_new(NULL);
	g_autoptr(GString) make = g_string_new(NULL);
	bool from_file = (t->fragments && t->fragments[0]) || strcmp(t->config, "file") == 0;
	/* clang is a cross compiler of its own: LLVM=1 needs no prefix. */
	const char *cross = t->llvm ? NULL : reproduce_cross(t->arch);

	g_string_append_printf(make, "make O=build%s ARCH=%s", t->llvm ? " LLVM=1" : "", t->arch);
	if (cross)
		g_string_append_printf(make, " CROSS_COMPILE=%s", cross);
	if (from_file && g_str_has_suffix(config_name, ".gz")) {
		g_string_append_printf(s, "mkdir -p build && zcat %s > build/.config && %s olddefconfig",
				       config_name, make->str);
	} else if (from_file) {
		g_string_append_printf(s, "mkdir -p build && cp %s build/.config && %s olddefconfig",
				       config_name, make->str);
	} else if (strcmp(t->config, "randconfig") == 0) {
		g_string_append_printf(s, "%s KCONFIG_SEED=%" G_GUINT64_FORMAT " randconfig",
				       make->str, t->seed);
	} else {
		g_string_append_printf(s, "%s %s", make->str, t->config);
	}
	g_string_append_printf(s, " && %s", make->str);
	if (t->checks & BUILD_W1)
		g_string_append(s, " W=1");
	if (t->checks & BUILD_SPARSE_ALL)
		g_string_append(s, " C=2");
	else if (t->checks & BUILD_SPARSE)
		g_string_append(s, " C=1");
	g_string_append(s, " -j$(nproc)");
	return g_string_free(s, FALSE);
}

/* The compiler's `--version` first line (caller frees); NULL if there is none. */
static char *compiler_version_uncached(const char *compiler)
{
	g_autofree char *path = run_find_program(compiler);
	g_autofree char *out = NULL;
	const char *argv[] = { path, "--version", NULL };
	int status = 0;
	char *nl;

	if (!path || !g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_STDERR_TO_DEV_NULL, NULL,
				   NULL, &out, NULL, &status, NULL) ||
	    !g_spawn_check_wait_status(status, NULL) || !out)
		return NULL;
	if ((nl = strchr(out, '\n')))
		*nl = '\0';
	return g_utf8_make_valid(out, -1);
}

char *build_compiler_version(const char *spec)
{
	/* Asked once per compiler and process: reports render it inside a store transaction. */
	static GMutex lock;
	static GHashTable *known; /* compiler -> version, "" for none */
	g_autofree char *arch = g_strndup(spec, strcspn(spec, ":"));
	g_autofree char *prefix = NULL;
	g_autofree char *compiler = NULL;
	const char *version;
	char *fresh = NULL;

	if (build_spec_has_check(spec, "LLVM=1")) {
		compiler = g_strdup("clang");
	} else {
		prefix = cross_prefix(arch);
		if (!prefix)
			return NULL;
		compiler = g_strconcat(prefix, "gcc", NULL);
	}
	g_mutex_lock(&lock);
	if (!known)
		known = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	version = g_hash_table_lookup(known, compiler);
	if (!version) {
		fresh = compiler_version_uncached(compiler);
		version = fresh ? fresh : g_strdup("");
		g_hash_table_insert(known, g_strdup(compiler), (char *)version);
	}
	version = *version ? g_strdup(version) : NULL;
	g_mutex_unlock(&lock);
	return (char *)version;
}

void build_target_daily(struct build_target *t, const char *salt, GDateTime *day)
{
	g_autofree char *date = NULL;
	g_autofree char *key = NULL;
	g_autofree char *sum = NULL;
	g_autofree char *old = NULL;
	const char *at;

	if (!t->daily || !t->dir_spec)
		return;
	date = g_date_time_format(day, "%Y-%m-%d");
	key = g_strdup_printf("%s\n%s\n%s", salt, date, t->dir_spec);
	sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256, key, -1);
	{
		char hex[9];

		/* 32 bits: KCONFIG_SEED is read as an unsigned int. */
		memcpy(hex, sum, 8);
		hex[8] = '\0';
		t->seed = g_ascii_strtoull(hex, NULL, 16);
	}
	at = strstr(t->spec, "randconfig@daily");
	old = t->spec;
	t->spec = g_strdup_printf("%.*srandconfig@%" G_GUINT64_FORMAT "%s", (int)(at - old), old,
				  t->seed, at + strlen("randconfig@daily"));
	t->daily = false;
}

char *build_target_dirname(const struct build_target *t)
{
	GString *s = g_string_new(NULL);

	for (const char *p = t->dir_spec; *p; p++)
		g_string_append_c(s, g_ascii_isalnum(*p) || strchr("._-", *p) ? *p : '_');
	/* Fragment paths may be long; a hash keeps the name short and unique. */
	if (s->len > 80) {
		g_autofree char *sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256, t->dir_spec, -1);

		g_string_truncate(s, 60);
		g_string_append_printf(s, "-%.16s", sum);
	}
	return g_string_free(s, FALSE);
}

void build_output_clear(struct build_output *out)
{
	g_free(out->reason);
	g_free(out->kselftest_reason);
	if (out->diags)
		g_ptr_array_unref(out->diags);
	memset(out, 0, sizeof(*out));
}

/* The cross-compiler prefix for @arch here: "" native, NULL if none installed. */
static char *cross_prefix(const char *arch)
{
	struct utsname u;

	uname(&u);
	for (size_t i = 0; i < G_N_ELEMENTS(arches); i++) {
		g_autofree char *gcc = NULL;

		if (strcmp(arches[i].arch, arch) != 0)
			continue;
		if (strcmp(arches[i].host, u.machine) == 0)
			return g_strdup("");
		if (!arches[i].cross)
			return NULL;
		gcc = g_strconcat(arches[i].cross, "gcc", NULL);
		{
			g_autofree char *path = run_find_program(gcc);

			return path ? g_strdup(arches[i].cross) : NULL;
		}
	}
	return NULL;
}

/*
 * What one make invocation needs. The directories are named as the build
 * sees them: inside the sandbox at fixed paths, else the host's.
 */
struct make_call {
	const struct build_target *target;
	const struct build_env *env;
	const char *cross;
	const char *src, *out, *tools, *ccache;
	guint64 space_reserve;
	const char *log_path; /* NULL: the build log */
	/*
	 * The selftests' make: no ARCH=, CC= or CROSS_COMPILE= of the
	 * kernel's (their Makefiles pick the host's compiler and arch), and
	 * no compiler wrapper, so that no diagnostics of theirs are kept
	 * beside their objects as the kernel's.
	 */
	bool bare;
	struct run_result result;
};

/* Reads the last kbuild step ("  CC      kernel/fork.o") from the log. */
static void progress_tick(void *data)
{
	const struct build_env *env = data;
	char buf[4096];
	ssize_t n;
	off_t size;
	int fd;

	if (!env->progress)
		return;
	fd = open(env->log_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	size = lseek(fd, 0, SEEK_END);
	n = pread(fd, buf, sizeof(buf) - 1, size > (off_t)sizeof(buf) - 1
					      ? size - (off_t)sizeof(buf) + 1 : 0);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	{
		g_auto(GStrv) lines = g_strsplit(buf, "\n", -1);
		guint len = g_strv_length(lines);

		for (guint i = len; i-- > 0;) {
			if (g_str_has_prefix(lines[i], "  ") && g_ascii_isupper(lines[i][2])) {
				env->progress(g_strstrip(lines[i]), env->progress_data);
				return;
			}
		}
	}
}

/* The deepest directory containing both @a and @b (caller frees). */
static char *common_dir(const char *a, const char *b)
{
	size_t n = 0, slash = 0;

	while (a[n] && a[n] == b[n]) {
		if (a[n] == '/')
			slash = n;
		n++;
	}
	if ((a[n] == '\0' || a[n] == '/') && (b[n] == '\0' || b[n] == '/'))
		slash = n;
	return slash ? g_strndup(a, slash) : g_strdup("/");
}

/*
 * What every make runs in, whoever started zeroday: a fixed PATH and
 * locale, and a build user, host and time that keep the kernel's version
 * string the same from build to build (ccache hits, comparable images).
 */
static const char *const make_env[] = {
	"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C", "HOME=/tmp",
	"KBUILD_BUILD_USER=zeroday", "KBUILD_BUILD_HOST=zeroday", "KBUILD_BUILD_TIMESTAMP=@0",
};

/*
 * Runs make in the source tree with O=, ARCH= and the given extra
 * arguments (NULL-terminated), sandboxed as the env says.
 */
static bool make(struct make_call *m, const char *const *extra, const char *const *extra_env,
		 GError **error)
{
	const struct build_env *env = m->env;
	g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GPtrArray) envv = g_ptr_array_new_with_free_func(g_free);
	struct run_bind binds[] = {
		{ env->srcdir, BUILD_SANDBOX_SRC, false },
		{ env->tools_dir, BUILD_SANDBOX_TOOLS, false },
		{ env->builddir, BUILD_SANDBOX_OUT, true },
		{ env->ccache_dir, BUILD_SANDBOX_CCACHE, true },
		/* Last: without a shared cache, the list ends here. */
		{ env->ccache_dir ? env->ccache_shared : NULL, BUILD_SANDBOX_CCACHE_SHARED, true },
		{ NULL, NULL, false },
	};
	struct run_sandbox sandbox = { .binds = binds };
	const char *log_path = m->log_path ? m->log_path : env->log_path;
	struct run_opts opts = {
		.cwd = m->src, .log_path = log_path, .timeout_s = env->timeout_s,
		.max_memory = env->max_memory, .max_procs = env->max_procs,
		.log_max = env->log_max ? env->log_max : BUILD_DEFAULT_LOG_MAX,
		.max_file_size = env->max_file_size ? env->max_file_size
						    : BUILD_DEFAULT_MAX_FILE_SIZE,
		.space_path = env->builddir, .space_reserve = m->space_reserve,
		.sandbox = env->sandbox ? &sandbox : NULL,
		.progress = progress_tick, .progress_data = (void *)env,
	};

	g_ptr_array_add(argv, g_strdup("make"));
	/* Each target's output in one piece, for the log by object (struct log_split). */
	g_ptr_array_add(argv, g_strdup("--output-sync=target"));
	g_ptr_array_add(argv, g_strdup_printf("O=%s", m->out));
	if (!m->bare)
		g_ptr_array_add(argv, g_strdup_printf("ARCH=%s", m->target->arch));
	if (m->bare) {
		/* Nothing of the kernel's compiler. */
	} else if (m->target->llvm) {
		/* clang targets ARCH itself (scripts/Makefile.clang): no CROSS_COMPILE. */
		g_ptr_array_add(argv, g_strdup("LLVM=1"));
		g_ptr_array_add(argv, g_strdup_printf("CC=%s/zeroday-cc %sclang", m->tools,
						      m->ccache ? "ccache " : ""));
	} else {
		if (m->cross && *m->cross)
			g_ptr_array_add(argv, g_strdup_printf("CROSS_COMPILE=%s", m->cross));
		g_ptr_array_add(argv, g_strdup_printf("CC=%s/zeroday-cc %s%sgcc", m->tools,
						      m->ccache ? "ccache " : "", m->cross));
	}
	for (const char *const *a = extra; a && *a; a++)
		g_ptr_array_add(argv, g_strdup(*a));
	g_ptr_array_add(argv, NULL);

	for (size_t i = 0; i < G_N_ELEMENTS(make_env); i++)
		g_ptr_array_add(envv, g_strdup(make_env[i]));
	if (m->ccache && !m->bare) {
		g_autofree char *base = common_dir(m->src, m->out);

		g_ptr_array_add(envv, g_strdup_printf("CCACHE_DIR=%s", m->ccache));
		g_ptr_array_add(envv, g_strdup_printf("CCACHE_CONFIGPATH=%s/ccache.conf", m->tools));
		/*
		 * Paths below the common root are hashed relative to the build
		 * directory, so that moving the directories keeps the cache.
		 */
		if (strcmp(base, "/") != 0)
			g_ptr_array_add(envv, g_strdup_printf("CCACHE_BASEDIR=%s", base));
		g_ptr_array_add(envv, g_strdup("CCACHE_NOHASHDIR=true"));
		if (env->ccache_shared)
			g_ptr_array_add(envv, g_strdup_printf(
				"CCACHE_REMOTE_STORAGE=file://%s",
				env->sandbox ? BUILD_SANDBOX_CCACHE_SHARED : env->ccache_shared));
	}
	for (const char *const *e = extra_env; e && *e; e++)
		g_ptr_array_add(envv, g_strdup(*e));
	g_ptr_array_add(envv, NULL);

	opts.argv = (const char *const *)argv->pdata;
	opts.env = (const char *const *)envv->pdata;
	{
		FILE *log = fopen(log_path, "ae");

		if (log) {
			g_autofree char *cmd = g_strjoinv(" ", (char **)argv->pdata);

			fprintf(log, "zeroday: %s\n", cmd);
			fclose(log);
		}
	}
	return run_child(&m->result, &opts, error);
}

/* One "CONFIG_X=..." or "# CONFIG_X is not set" line: its symbol, or NULL. */
static char *config_symbol(const char *line)
{
	const char *start = NULL;
	const char *end;

	if (g_str_has_prefix(line, "CONFIG_"))
		start = line;
	else if (g_str_has_prefix(line, "# CONFIG_") && g_str_has_suffix(line, " is not set"))
		start = line + 2;
	if (!start)
		return NULL;
	for (end = start; g_ascii_isalnum(*end) || *end == '_'; end++)
		;
	return g_strndup(start, end - start);
}

/*
 * Merges the fragments into .config the way merge_config.sh -m does: each
 * fragment line replaces the base's line for the same symbol.
 */
static bool merge_fragments(const char *builddir, char *const *fragments, const char *extra,
			    GError **error)
{
	g_autofree char *dotconfig = g_build_filename(builddir, ".config", NULL);
	g_autofree char *base = NULL;
	g_autoptr(GPtrArray) order = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GHashTable) value = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	g_autoptr(GString) out = g_string_new(NULL);
	g_auto(GStrv) lines = NULL;
	GError *local = NULL;

	if (!hostile_read(&base, NULL, builddir, ".config", BUILD_MAX_CONFIG, &local))
		goto fail;
	lines = g_strsplit(base, "\n", -1);
	for (char **l = lines; *l; l++) {
		char *sym = config_symbol(*l);

		if (sym) {
			g_ptr_array_add(order, g_strdup(sym));
			g_hash_table_replace(value, sym, g_strdup(*l));
		}
	}
	/* The shipped fragments, then @extra (the selftests' own, already CONFIG_ lines only). */
	for (guint k = 0; k <= (fragments ? g_strv_length((char **)fragments) : 0); k++) {
		const char *path = fragments ? fragments[k] : NULL;
		g_autofree char *text = NULL;
		g_auto(GStrv) flines = NULL;

		if (!path && !extra)
			break;
		if (!path)
			text = g_strdup(extra);
		else if (!g_file_get_contents(path, &text, NULL, &local))
			goto fail;
		flines = g_strsplit(text, "\n", -1);
		for (char **l = flines; *l; l++) {
			char *sym = config_symbol(g_strstrip(*l));

			if (!sym)
				continue;
			if (!g_hash_table_contains(value, sym))
				g_ptr_array_add(order, g_strdup(sym));
			g_hash_table_replace(value, sym, g_strdup(*l));
		}
	}
	for (guint i = 0; i < order->len; i++) {
		const char *line = g_hash_table_lookup(value, order->pdata[i]);

		if (line) {
			g_string_append_printf(out, "%s\n", line);
			g_hash_table_remove(value, order->pdata[i]);
		}
	}
	if (!g_file_set_contents(dotconfig, out->str, out->len, &local))
		goto fail;
	return true;
fail:
	g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "merging config fragments: %s",
		    local->message);
	g_error_free(local);
	return false;
}

/* Sets the output from a make that did not succeed. Returns false to stop. */
static bool make_done(struct build_output *out, const struct make_call *m, const char *what)
{
	const struct run_result *r = &m->result;

	if (r->outcome == RUN_EXITED && r->status == 0)
		return true;
	out->status = BUILD_INFRA;
	switch (r->outcome) {
	case RUN_TIMEOUT:
		out->reason = g_strdup_printf("%s timed out after %u s", what, m->env->timeout_s);
		break;
	case RUN_SIGNALED:
		out->reason = g_strdup_printf("%s was killed by signal %d", what, r->status);
		break;
	case RUN_NO_SPACE:
		out->reason = g_strdup_printf("%s was stopped: the disk holding the build directory "
					      "has less than %" G_GUINT64_FORMAT " MiB free",
					      what, m->space_reserve >> 20);
		break;
	case RUN_SETUP_FAILED:
		out->reason = g_strdup_printf("%s: the sandbox could not run it: %s", what,
					      r->detail);
		break;
	case RUN_EXITED:
		out->status = BUILD_FAILED;
		out->reason = g_strdup_printf("%s failed (exit %d)", what, r->status);
		break;
	}
	return false;
}

static gint sort_names(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The log by object. make runs with --output-sync=target, so each
 * target's output is one piece, headed by kbuild's quiet line for it
 * ("  CC      kernel/fork.o", "  CC [M]  drivers/x.o", "  AS      x.o").
 * What follows an object's line up to the next quiet line is that
 * object's: the compiler's (kept beside the object by zeroday-cc
 * anyway), sparse's (C=1: its "  CHECK   x.c" line stays in the piece),
 * kernel-doc's (W=1), objtool's. Those run only when the object is
 * built again, so an incremental build's log lacks them for every
 * object it did not rebuild; kept beside the object in a .zd-log file,
 * they count in every build, as the compiler's do, and a parent and its
 * child compare like for like. The lines of no object (the linker,
 * modpost, make, sparse's C=2 checks of objects not rebuilt) are the
 * rest, the log's own.
 */
struct log_split {
	GHashTable *objects; /* object path below the build directory -> GString */
	GString *rest;
};

static void log_split_clear(struct log_split *l)
{
	g_clear_pointer(&l->objects, g_hash_table_unref);
	if (l->rest)
		g_string_free(l->rest, TRUE);
	l->rest = NULL;
}

/*
 * A kbuild quiet line: two blanks, a command word in capitals, an
 * optional "[M]", blanks, one path. Returns the word's length and sets
 * *@path to the path (both within @line), or 0.
 */
static size_t quiet_line(const char *line, size_t len, const char **path, size_t *path_len)
{
	size_t i = 2, word;

	if (len < 4 || line[0] != ' ' || line[1] != ' ' || !g_ascii_isupper(line[2]))
		return 0;
	while (i < len && (g_ascii_isupper(line[i]) || g_ascii_isdigit(line[i]) || line[i] == '_'))
		i++;
	word = i - 2;
	if (i + 4 <= len && line[i] == ' ' && line[i + 1] == '[' && g_ascii_isupper(line[i + 2]) &&
	    line[i + 3] == ']')
		i += 4;
	if (i >= len || line[i] != ' ')
		return 0;
	while (i < len && line[i] == ' ')
		i++;
	if (i >= len || memchr(line + i, ' ', len - i))
		return 0;
	*path = line + i;
	*path_len = len - i;
	return word;
}

static void string_free(gpointer s)
{
	g_string_free(s, TRUE);
}

/* Whether the line @line of @n bytes starts with @prefix. */
static bool line_starts(const char *line, size_t n, const char *prefix)
{
	size_t k = strlen(prefix);

	return n >= k && memcmp(line, prefix, k) == 0;
}

/*
 * Whether @path (@n bytes) names the source of @object: "lib/x.c" of
 * "lib/x.o", as it is or below a directory (kbuild's CHECK line names the
 * source by its path in the source tree, "/zeroday/src/lib/x.c").
 */
static bool source_of(const char *path, size_t n, const char *object)
{
	size_t stem = strlen(object) - 2;

	if (n < stem + 2 || path[n - 2] != '.' || strncmp(path + n - 2 - stem, object, stem) != 0)
		return false;
	return n == stem + 2 || path[n - 3 - stem] == '/';
}

static void log_split_run(struct log_split *l, const char *log, gsize len)
{
	GString *current = NULL;
	const char *object = NULL;
	const char *end = log + len;

	l->objects = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, string_free);
	l->rest = g_string_new(NULL);
	for (const char *line = log; line < end;) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		size_t n = nl ? (size_t)(nl - line) : (size_t)(end - line);
		const char *path;
		size_t path_len, word = quiet_line(line, n, &path, &path_len);

		if (word) {
			bool cc = (word == 2 && (strncmp(line + 2, "CC", 2) == 0 ||
						 strncmp(line + 2, "AS", 2) == 0)) &&
				  path_len > 2 && strncmp(path + path_len - 2, ".o", 2) == 0;

			if (cc) {
				char *key = g_strndup(path, path_len);

				/* A second build of one object in a log: the last one counts. */
				current = g_string_new(NULL);
				g_hash_table_replace(l->objects, key, current);
				object = key;
			} else if (!(object && word == 5 && strncmp(line + 2, "CHECK", 5) == 0 &&
				     source_of(path, path_len, object))) {
				current = NULL;
				object = NULL;
			}
		} else if (line_starts(line, n, "make[") || line_starts(line, n, "make:") ||
			   line_starts(line, n, "zeroday: ")) {
			current = NULL;
			object = NULL;
		}
		g_string_append_len(current ? current : l->rest, line, (gssize)n);
		g_string_append_c(current ? current : l->rest, '\n');
		line = nl ? nl + 1 : end;
	}
}

/* Collecting diagnostics: bounded in depth, files and count. */
struct collect {
	const char *src, *out; /* the paths the compiler saw */
	const char *srcdir;    /* the source tree, as zeroday sees it */
	struct log_split *split; /* the pieces not taken by an object are the log's */
	GPtrArray *diags;
	GHashTable *seen;
	unsigned max;
	unsigned cut;
	gint64 since_us; /* files changed from then on were written by this run */
};

/*
 * A file's times come from the kernel's coarse clock, a tick behind
 * g_get_real_time(): a file this run wrote may look this much older than
 * its start. The build before it ended longer ago than that.
 */
#define COARSE_CLOCK_US 20000

#define COLLECT_MAX_DEPTH 48
#define COLLECT_MAX_DIAG_FILE (1024 * 1024)

static void collect_add(struct collect *c, GPtrArray *found)
{
	for (guint j = 0; j < found->len; j++) {
		struct diag *one = found->pdata[j];
		char *key = g_strdup_printf("%s:%u", one->fingerprint, one->line);

		if (g_hash_table_contains(c->seen, key)) {
			g_free(key);
			continue;
		}
		if (c->diags->len >= c->max) {
			g_free(key);
			c->cut++;
			continue;
		}
		g_hash_table_add(c->seen, key);
		g_ptr_array_add(c->diags, g_steal_pointer(&found->pdata[j]));
	}
}

/* Whether @path exists, as a link or anything else (nothing is opened). */
static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/*
 * Whether the object @object (below the build directory @root) is a
 * leftover: built at another commit from a source this one no longer
 * has. kbuild never deletes such an object, and the diagnostics kept
 * beside it would count at every commit after (a bisection step at the
 * base, in the head's directory, would show the head's new file's
 * warnings). Its source is x.c, x.S or x.rs beside it in the source tree
 * or the build directory (generated), or the one its .x.o.cmd names
 * (kbuild's "source_x.o := ..."). When none of that can be read, the
 * object counts, as before.
 */
static bool object_stale(const struct collect *c, const char *root, const char *object)
{
	static const char *const exts[] = { ".c", ".S", ".rs" };
	g_autofree char *stem = g_strndup(object, strlen(object) - 2);
	g_autofree char *dir = g_path_get_dirname(object);
	g_autofree char *base = g_path_get_basename(object);
	g_autofree char *cmd_rel = g_strdup_printf("%s/.%s.cmd", dir, base);
	g_autofree char *key = g_strdup_printf("source_%s := ", object);
	g_autofree char *cmd = NULL;
	const char *line;
	g_autofree char *source = NULL;
	size_t n;

	for (size_t i = 0; i < G_N_ELEMENTS(exts); i++) {
		g_autofree char *in_src = g_strconcat(c->srcdir, "/", stem, exts[i], NULL);
		g_autofree char *in_out = g_strconcat(root, "/", stem, exts[i], NULL);

		if (exists(in_src) || exists(in_out))
			return false;
	}
	if (!hostile_read(&cmd, NULL, root, cmd_rel, COLLECT_MAX_DIAG_FILE, NULL))
		return true; /* no source of its name, and no kbuild record: another tree's */
	line = strstr(cmd, key);
	if (!line || (line != cmd && line[-1] != '\n'))
		return false;
	line += strlen(key);
	n = strcspn(line, "\n");
	source = g_strndup(line, n);
	/* The path as the compiler saw it: below the source tree, the build directory, or relative to it. */
	if (g_str_has_prefix(source, c->src) && source[strlen(c->src)] == '/') {
		g_autofree char *host = g_strconcat(c->srcdir, source + strlen(c->src), NULL);

		return !exists(host);
	}
	if (g_str_has_prefix(source, c->out) && source[strlen(c->out)] == '/') {
		g_autofree char *host = g_strconcat(root, source + strlen(c->out), NULL);

		return !exists(host);
	}
	if (!g_path_is_absolute(source)) {
		g_autofree char *host = g_build_filename(root, source, NULL);

		return !exists(host);
	}
	return false;
}

/* Parses @text (@len bytes), kept for an object, into @c. */
static void collect_text(struct collect *c, const char *text, gsize len)
{
	g_autoptr(GPtrArray) found = diag_parse_build_len(text, len, c->src, c->out);

	collect_add(c, found);
}

/*
 * Adds the diagnostics kept beside the objects: those of objects that exist,
 * and those written by this build (a failed compile leaves no object).
 * An object built in this run gets its piece of this log kept beside it
 * (.zd-log, see struct log_split), or none; one built earlier brings its
 * own. @root is the build directory, @rel the directory below it.
 */
static void collect_kept(struct collect *c, const char *root, const char *rel, unsigned depth)
{
	g_autofree char *dir = rel ? g_build_filename(root, rel, NULL) : g_strdup(root);
	g_autoptr(GDir) d = NULL;
	g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
	const char *name;

	if (depth > COLLECT_MAX_DEPTH)
		return;
	d = g_dir_open(dir, 0, NULL);
	while (d && (name = g_dir_read_name(d)))
		g_ptr_array_add(names, g_strdup(name));
	g_ptr_array_sort(names, sort_names);
	for (guint i = 0; i < names->len; i++) {
		g_autofree char *path = g_build_filename(dir, names->pdata[i], NULL);
		g_autofree char *sub = rel ? g_build_filename(rel, names->pdata[i], NULL)
					   : g_strdup(names->pdata[i]);
		struct stat st;

		if (lstat(path, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			collect_kept(c, root, sub, depth + 1);
		} else if (S_ISREG(st.st_mode) && g_str_has_suffix(path, ".zd-diag")) {
			g_autofree char *object = g_strndup(sub, strlen(sub) - strlen(".zd-diag"));
			g_autofree char *log_rel = g_strconcat(object, ".zd-log", NULL);
			g_autofree char *text = NULL;
			g_autofree char *kept = NULL;
			gsize len = 0;
			bool built_now = (gint64)st.st_mtim.tv_sec * G_USEC_PER_SEC +
						 st.st_mtim.tv_nsec / 1000 >= c->since_us;
			GString *piece = NULL;
			g_autoptr(GError) local = NULL;

			if (!built_now && (!hostile_is_file(root, object) ||
					   object_stale(c, root, object)))
				continue;
			if (hostile_read(&text, &len, root, sub, COLLECT_MAX_DIAG_FILE, NULL))
				collect_text(c, text, len);
			if (!built_now) {
				if (hostile_read(&kept, &len, root, log_rel, COLLECT_MAX_DIAG_FILE, NULL))
					collect_text(c, kept, len);
				continue;
			}
			/* Built in this run: its piece of the log replaces what was kept. */
			if (c->split && c->split->objects)
				piece = g_hash_table_lookup(c->split->objects, object);
			if (piece && piece->len > COLLECT_MAX_DIAG_FILE)
				g_string_truncate(piece, COLLECT_MAX_DIAG_FILE);
			if (!hostile_write(root, log_rel, piece && piece->len ? piece->str : NULL,
					   piece ? piece->len : 0, &local))
				g_message("%s", local->message);
			if (piece && piece->len)
				collect_text(c, piece->str, piece->len);
			if (piece)
				g_hash_table_remove(c->split->objects, object);
		}
	}
}

/*
 * make's own "*** [target] Error 1" stands for a failure only when
 * nothing else says what failed: the compiler's error is in the object's
 * piece of the log, make's line in the rest (diag_parse_build() drops it
 * only beside an error of the same text).
 */
static void drop_make_errors(GPtrArray *diags)
{
	bool other = false;

	for (guint i = 0; i < diags->len; i++) {
		const struct diag *d = diags->pdata[i];

		other = other || (d->kind == DIAG_ERROR && strcmp(d->checker, "make") != 0);
	}
	for (guint i = diags->len; other && i-- > 0;) {
		const struct diag *d = diags->pdata[i];

		if (d->kind == DIAG_ERROR && strcmp(d->checker, "make") == 0)
			g_ptr_array_remove_index(diags, i);
	}
}

/*
 * All diagnostics of a build: those kept beside the objects (in path
 * order) and those of this run's log that belong to no object (linker,
 * modpost, make). @srcdir is the source tree as zeroday sees it.
 */
static GPtrArray *collect_diags(const struct make_call *m, const char *srcdir, const char *log,
				gsize len, gint64 since_us, unsigned *cut)
{
	g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	struct log_split split = { 0 };
	struct collect c = {
		.src = m->src, .out = m->out, .srcdir = srcdir, .split = &split,
		.seen = seen, .since_us = since_us - COARSE_CLOCK_US,
		.diags = g_ptr_array_new_with_free_func((GDestroyNotify)diag_free),
		.max = m->env->max_diags ? m->env->max_diags : BUILD_DEFAULT_MAX_DIAGS,
	};
	g_autoptr(GPtrArray) logged = NULL;

	log_split_run(&split, log, len);
	collect_kept(&c, m->env->builddir, NULL, 0);
	/*
	 * A piece no object took (its object has no kept compiler output:
	 * made without zeroday-cc) is the log's, parsed with the rest.
	 */
	{
		GHashTableIter it;
		gpointer piece;

		g_hash_table_iter_init(&it, split.objects);
		while (g_hash_table_iter_next(&it, NULL, &piece))
			g_string_append_len(split.rest, ((GString *)piece)->str,
					    (gssize)((GString *)piece)->len);
	}
	logged = diag_parse_build_len(split.rest->str, split.rest->len, m->src, m->out);
	collect_add(&c, logged);
	log_split_clear(&split);
	drop_make_errors(c.diags);
	*cut = c.cut;
	return c.diags;
}

/* Whether a changed path can change what a config target produces. */
static bool kconfig_path(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return g_str_has_prefix(base, "Kconfig") || strstr(path, "/configs/") ||
	       g_str_has_prefix(path, "scripts/kconfig/") || strcmp(path, "Makefile") == 0 ||
	       g_str_has_prefix(path, "scripts/Kconfig");
}

/*
 * What the configuration depends on besides the tree's Kconfig files: the
 * target, its files, and the selftests' configs from the tree.
 */
static char *config_stamp(const struct build_target *t, const char *kselftest_config)
{
	g_autoptr(GChecksum) sum = g_checksum_new(G_CHECKSUM_SHA256);
	g_autofree char *cfg = NULL;

	g_checksum_update(sum, (const guchar *)t->spec, -1);
	/* The selftests' configs are the tree's: a commit may change them. */
	if (kselftest_config && *kselftest_config) {
		g_checksum_update(sum, (const guchar *)"\nkselftest\n", -1);
		g_checksum_update(sum, (const guchar *)kselftest_config, -1);
	}
	if (t->config_file && g_file_get_contents(t->config_file, &cfg, NULL, NULL))
		g_checksum_update(sum, (const guchar *)cfg, -1);
	for (char **f = t->fragments; f && *f; f++) {
		g_autofree char *text = NULL;

		if (g_file_get_contents(*f, &text, NULL, NULL))
			g_checksum_update(sum, (const guchar *)text, -1);
	}
	return g_strdup(g_checksum_get_string(sum));
}

/*
 * Whether the .config in the build directory is still what the target
 * would produce: the stamp ("target hash\ncommit\n", written after the
 * last configuration) names the same target and fragments, and no Kconfig
 * file differs between the commit it was configured at and this one.
 */
static bool config_current(const struct build_env *env, const char *stamp_path,
			   const char *hash)
{
	g_autofree char *old = NULL;
	g_auto(GStrv) lines = NULL;
	g_auto(GStrv) changes = NULL;

	if (!env->commit || !env->changes_since || !hostile_is_file(env->builddir, ".config") ||
	    !g_file_get_contents(stamp_path, &old, NULL, NULL))
		return false;
	lines = g_strsplit(old, "\n", 3);
	if (!lines[0] || !lines[1] || strcmp(lines[0], hash) != 0)
		return false;
	changes = env->changes_since(lines[1], env->commit, env->changes_data);
	if (!changes)
		return false;
	for (char **p = changes; *p; p++) {
		if (kconfig_path(*p))
			return false;
	}
	return true;
}

/* Signs in the log that a compiler was killed (memory), not that the code is wrong. */
static bool killed_by_resources(const char *log)
{
	return strstr(log, "Killed signal terminated program") ||
	       strstr(log, "internal compiler error: Killed") ||
	       strstr(log, "virtual memory exhausted") ||
	       strstr(log, "Cannot allocate memory");
}

/* Signs in the log that the disk or the file size limit ran out. */
static bool out_of_space(const char *log)
{
	return strstr(log, "No space left on device") || strstr(log, "File size limit exceeded") ||
	       strstr(log, "Disk quota exceeded");
}

/*
 * Stops a build from filling the disk: it is killed once the file system
 * has less than this free, 5% of its size up to 1 GiB.
 */
static guint64 space_reserve(const char *dir)
{
	struct statvfs st;

	if (statvfs(dir, &st) < 0)
		return 0;
	return MIN((guint64)st.f_blocks * st.f_frsize / 20, (guint64)1 << 30);
}

/* nftw() passes no data: the sum is per thread (workers build at once). */
static __thread guint64 disk_total;

static int add_size(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)path;
	(void)ftw;
	if (flag == FTW_F || flag == FTW_SL || flag == FTW_D)
		disk_total += (guint64)st->st_blocks * 512;
	return 0;
}

/* The disk space used below @dir, links not followed. */
static guint64 disk_use(const char *dir)
{
	disk_total = 0;
	nftw(dir, add_size, 32, FTW_PHYS | FTW_MOUNT);
	return disk_total;
}

/*
 * A build directory that ran out of space or grew past its cap is wiped:
 * it is only a cache, and what is left in it would fail every later build.
 */
/* Whether the build directory's marker @path says BUILD_DIAG_VERSION. */
static bool kept_current(const char *path)
{
	g_autofree char *text = NULL;

	return g_file_get_contents(path, &text, NULL, NULL) &&
	       strcmp(text, G_STRINGIFY(BUILD_DIAG_VERSION) "\n") == 0;
}

static void wipe_builddir(const struct build_env *env, const char *stamp_path, const char *why)
{
	g_autoptr(GError) error = NULL;

	g_message("%s: %s: wiping the build directory", env->builddir, why);
	unlink(stamp_path);
	if (!run_remove_tree(env->builddir, &error))
		g_warning("%s", error->message);
}

/*
 * After an interrupted build: every file it may have written, those
 * whose status changed since it started (the marker @running says when),
 * is removed, and make builds them again (from ccache, mostly); what is
 * older is whole. A configuration that went with them is made afresh. A
 * marker without a time (or a failure to clean) wipes the directory.
 */
static void clean_interrupted(const struct build_env *env, const char *running,
			      const char *stamp_path)
{
	g_autofree char *text = NULL;
	g_autofree char *dotconfig = g_build_filename(env->builddir, ".config", NULL);
	g_autoptr(GError) error = NULL;
	gint64 since = 0;
	guint removed = 0;
	char *end = NULL;

	if (g_file_get_contents(running, &text, NULL, NULL))
		since = g_ascii_strtoll(text, &end, 10);
	if (since <= 0 || !end || *end != '\n') {
		wipe_builddir(env, stamp_path, "the last build in it was interrupted");
		return;
	}
	if (!run_remove_changed_since(env->builddir, since, &removed, &error)) {
		g_warning("%s", error->message);
		wipe_builddir(env, stamp_path, "the last build in it was interrupted");
		return;
	}
	if (!g_file_test(dotconfig, G_FILE_TEST_EXISTS))
		unlink(stamp_path);
	g_message("%s: the last build in it was interrupted: %u files it may have left "
		  "half-written removed", env->builddir, removed);
}

#define KSELFTEST_ROOT "tools/testing/selftests"

char *build_kselftest_dir(const char *srcdir, const char *name)
{
	/* 6.3 renamed vm to mm: either name means whichever the tree has. */
	bool mm = strcmp(name, "vm") == 0 || strcmp(name, "mm") == 0;
	const char *const both[] = { name, mm ? (strcmp(name, "vm") == 0 ? "mm" : "vm") : NULL };

	for (size_t i = 0; i < G_N_ELEMENTS(both) && both[i]; i++) {
		g_autofree char *rel = g_build_filename(KSELFTEST_ROOT, both[i], NULL);

		if (hostile_is_dir(srcdir, rel))
			return g_strdup(both[i]);
	}
	return NULL;
}

/*
 * The CONFIG_ lines of the target's selftests' own config files in the
 * tree (tools/testing/selftests/DIR/config), in order (caller frees; ""
 * for none). They are the tree's, a stranger's: read without following a
 * link, under a size cap, and nothing but CONFIG_ lines kept.
 */
static char *kselftest_configs(const struct build_target *t, const char *srcdir)
{
	GString *s = g_string_new(NULL);

	for (char **k = t->kselftests; k && *k; k++) {
		g_autofree char *dir = build_kselftest_dir(srcdir, *k);
		g_autofree char *rel = NULL;
		g_autofree char *text = NULL;
		g_autoptr(GError) local = NULL;
		g_auto(GStrv) lines = NULL;

		if (!dir)
			continue;
		rel = g_build_filename(KSELFTEST_ROOT, dir, "config", NULL);
		if (!hostile_read(&text, NULL, srcdir, rel, BUILD_MAX_KSELFTEST_CONFIG, &local)) {
			if (!g_error_matches(local, ENGINE_ERROR, ENGINE_ERROR_NOT_FOUND))
				g_message("%s: %s: not merged", t->spec, local->message);
			continue;
		}
		lines = g_strsplit(text, "\n", -1);
		for (char **l = lines; *l; l++) {
			g_autofree char *sym = NULL;

			g_strstrip(*l);
			sym = config_symbol(*l);
			if (sym && g_str_is_ascii(*l) && !strpbrk(*l, "\r"))
				g_string_append_printf(s, "%s\n", *l);
		}
	}
	return g_string_free(s, FALSE);
}

/*
 * After the kernel: its uapi headers into the build directory, then the
 * target's selftests installed into BUILD_KSELFTEST_INSTALL, by the same
 * make() (sandbox, limits) with its output in the selftests' own log.
 * Sets out->kselftest; a make that ran and failed leaves out->status
 * alone: it is the selftests', not the kernel's, and the boot says so (the
 * builder keeps no tree but a note, and the kselftest payload reports it
 * as a failed test). A make the machine stopped (killed, out of time or
 * disk, the sandbox) sets out->status to BUILD_INFRA, retried like the
 * kernel's. Returns false only for a setup error, with @error set.
 */
static bool build_kselftests(struct build_output *out, struct make_call *kernel_m,
			     const struct build_target *t, const struct build_env *env,
			     GError **error)
{
	const char *src = kernel_m->src, *outdir = kernel_m->out;
	g_autofree char *log = g_strconcat(env->log_path, BUILD_KSELFTEST_LOG, NULL);
	g_autofree char *install = g_build_filename(env->builddir, BUILD_KSELFTEST_INSTALL, NULL);
	g_autofree char *selftests = g_build_filename(src, KSELFTEST_ROOT, NULL);
	g_autofree char *install_arg = NULL;
	g_autofree char *jobs = g_strdup_printf("-j%u", env->jobs ? env->jobs : 1);
	g_autoptr(GString) targets = g_string_new("TARGETS=");
	struct make_call m = *kernel_m;
	g_autoptr(GError) local = NULL;
	gint64 start = g_get_monotonic_time();

	for (char **k = t->kselftests; *k; k++) {
		g_autofree char *dir = build_kselftest_dir(env->srcdir, *k);

		if (!dir) {
			out->kselftest = BUILD_KSELFTEST_FAILED;
			out->kselftest_reason = g_strdup_printf("the tree has no selftest '%s'", *k);
			return true;
		}
		g_string_append_printf(targets, "%s%s", k == t->kselftests ? "" : " ", dir);
	}
	/* The last commit's tree goes: what is there now is this commit's, or nothing. */
	if (g_file_test(install, G_FILE_TEST_EXISTS) && !run_remove_tree(install, &local)) {
		out->status = BUILD_INFRA;
		out->reason = g_strdup_printf("removing the last selftests: %s", local->message);
		return true;
	}
	m.log_path = log;
	if (!make(&m, (const char *[]){ "headers", jobs, NULL }, NULL, error))
		return false;
	if (m.result.outcome != RUN_EXITED) {
		make_done(out, &m, "make headers");
		return true;
	}
	if (m.result.status != 0) {
		out->kselftest = BUILD_KSELFTEST_FAILED;
		out->kselftest_reason = g_strdup_printf("make headers failed (see %s)", log);
		return true;
	}
	m.bare = true;
	m.src = selftests;
	install_arg = g_strdup_printf("INSTALL_PATH=%s/" BUILD_KSELFTEST_INSTALL, outdir);
	if (!make(&m, (const char *[]){ "-C", selftests, targets->str, install_arg, jobs,
					"install", NULL },
		  NULL, error))
		return false;
	g_info("%s: selftests built in %.1f s", t->spec,
	       (double)(g_get_monotonic_time() - start) / G_USEC_PER_SEC);
	/*
	 * Killed, out of time, out of disk or the sandbox's failure is the
	 * machine's (retried, as the kernel's make's is); a make that ran and
	 * failed is the tree's, and its boots say so.
	 */
	if (m.result.outcome != RUN_EXITED) {
		make_done(out, &m, "the selftests' make");
		return true;
	}
	if (m.result.status != 0) {
		out->kselftest = BUILD_KSELFTEST_FAILED;
		out->kselftest_reason = g_strdup_printf("the selftests did not build (make failed; "
							"see %s)", log);
		return true;
	}
	out->kselftest = BUILD_KSELFTEST_OK;
	return true;
}

static bool program_exists(const char *name)
{
	g_autofree char *path = run_find_program(name);

	return path != NULL;
}

bool build_run(struct build_output *out, const struct build_target *target,
	       const struct build_env *env, GError **error)
{
	g_autofree char *cross = NULL;
	g_autofree char *dotconfig = g_build_filename(env->builddir, ".config", NULL);
	g_autofree char *stamp = NULL;
	g_autofree char *stamp_path = NULL;
	g_autofree char *kept_path = NULL;
	g_autofree char *running = NULL;
	g_autofree char *seed_env = NULL;
	g_autofree char *log = NULL;
	gsize log_len = 0;
	g_autofree char *ks_config = NULL;
	g_autoptr(GPtrArray) args = g_ptr_array_new_with_free_func(g_free);
	struct make_call m = {
		.target = target, .env = env,
		.src = env->sandbox ? BUILD_SANDBOX_SRC : env->srcdir,
		.out = env->sandbox ? BUILD_SANDBOX_OUT : env->builddir,
		.tools = env->sandbox ? BUILD_SANDBOX_TOOLS : env->tools_dir,
		.ccache = !env->ccache_dir ? NULL
			  : env->sandbox ? BUILD_SANDBOX_CCACHE : env->ccache_dir,
	};
	gint64 start = g_get_monotonic_time();
	gint64 started_us = g_get_real_time();
	gint64 started_at = started_us / G_USEC_PER_SEC - 1;
	const char *extra_env[] = { NULL, NULL };
	bool ok = true;
	bool wipe = false;

	memset(out, 0, sizeof(*out));
	out->diags = g_ptr_array_new_with_free_func((GDestroyNotify)diag_free);
	cross = target->llvm ? g_strdup("") : cross_prefix(target->arch);
	if (!cross) {
		out->status = BUILD_SKIPPED;
		out->reason = g_strdup_printf("skipped: no compiler for %s", target->arch);
		return true;
	}
	if (target->llvm && (!program_exists("clang") || !program_exists("ld.lld"))) {
		out->status = BUILD_SKIPPED;
		out->reason = g_strdup("skipped: clang and lld are not installed (LLVM=1)");
		return true;
	}
	m.cross = cross;
	if ((target->checks & (BUILD_SPARSE | BUILD_SPARSE_ALL)) && !program_exists("sparse")) {
		out->status = BUILD_SKIPPED;
		out->reason = g_strdup("skipped: sparse is not installed");
		return true;
	}
	if ((target->checks & BUILD_COCCI) && !program_exists("spatch")) {
		out->status = BUILD_SKIPPED;
		out->reason = g_strdup("skipped: coccinelle (spatch) is not installed");
		return true;
	}
	/*
	 * A build that was interrupted (zeroday killed, the machine down)
	 * leaves half-written objects newer than their sources: make would
	 * take them as built, and the next build would fail or miss a
	 * diagnostic. The marker beside the build directory says a build
	 * was under way, and since when (see clean_interrupted()).
	 */
	stamp_path = g_strconcat(env->builddir, ".zeroday-config", NULL);
	running = g_strconcat(env->builddir, ".zeroday-building", NULL);
	kept_path = g_strconcat(env->builddir, ".zeroday-kept", NULL);
	if (g_file_test(running, G_FILE_TEST_EXISTS))
		clean_interrupted(env, running, stamp_path);
	/*
	 * What is kept beside the objects changes with BUILD_DIAG_VERSION: a
	 * directory of another version would lack a piece for every object
	 * it does not build again, and those diagnostics would come out as
	 * new when a child builds them.
	 */
	if (!kept_current(kept_path) && g_file_test(env->builddir, G_FILE_TEST_IS_DIR))
		wipe_builddir(env, stamp_path, "its kept diagnostics are of another version");
	if (env->sandbox && !run_sandbox_prepare_dir(env->builddir, error))
		return false;
	if (!env->sandbox && g_mkdir_with_parents(env->builddir, 0755) < 0) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s: %s", env->builddir,
			    g_strerror(errno));
		return false;
	}
	if (env->ccache_dir && env->sandbox && !run_sandbox_prepare_dir(env->ccache_dir, error))
		return false;
	if (env->ccache_dir && !env->sandbox && g_mkdir_with_parents(env->ccache_dir, 0755) < 0) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s: %s", env->ccache_dir,
			    g_strerror(errno));
		return false;
	}
	if (env->ccache_dir && env->ccache_shared && env->sandbox &&
	    !run_sandbox_prepare_dir(env->ccache_shared, error))
		return false;
	if (env->ccache_dir && env->ccache_shared && !env->sandbox &&
	    g_mkdir_with_parents(env->ccache_shared, 0755) < 0) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s: %s", env->ccache_shared,
			    g_strerror(errno));
		return false;
	}
	{
		GError *local = NULL;

		g_autofree char *since = g_strdup_printf("%" G_GINT64_FORMAT "\n", started_at);

		if (!g_file_set_contents(running, since, -1, &local)) {
			g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s", local->message);
			g_error_free(local);
			return false;
		}
		if (!g_file_set_contents(kept_path, G_STRINGIFY(BUILD_DIAG_VERSION) "\n", -1, &local)) {
			g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s", local->message);
			g_error_free(local);
			return false;
		}
	}
	m.space_reserve = space_reserve(env->builddir);

	/* The configuration, unless nothing it depends on changed. */
	ks_config = kselftest_configs(target, env->srcdir);
	stamp = config_stamp(target, ks_config);
	/* The stamp is beside the build directory, where the build cannot write. */
	if (config_current(env, stamp_path, stamp)) {
		g_info("%s: configuration unchanged since the last build", target->spec);
		goto configured;
	}
	unlink(stamp_path);
	if (strcmp(target->config, "file") == 0) {
		g_autofree char *text = NULL;
		g_autoptr(GError) local = NULL;

		if (!g_file_get_contents(target->config_file, &text, NULL, &local) ||
		    !g_file_set_contents(dotconfig, text, -1, &local)) {
			out->status = BUILD_INFRA;
			out->reason = g_strdup(local->message);
			goto done;
		}
		ok = make(&m, (const char *[]){ "olddefconfig", NULL }, NULL, error);
	} else {
		if (strcmp(target->config, "randconfig") == 0) {
			seed_env = g_strdup_printf("KCONFIG_SEED=%" G_GUINT64_FORMAT, target->seed);
			extra_env[0] = seed_env;
		}
		ok = make(&m, (const char *[]){ target->config, NULL }, extra_env, error);
	}
	if (!ok)
		return false;
	if (!make_done(out, &m, "configuring"))
		goto done;
	if ((target->fragments && target->fragments[0]) || *ks_config) {
		g_autoptr(GError) local = NULL;

		if (!merge_fragments(env->builddir, target->fragments, ks_config, &local)) {
			out->status = BUILD_INFRA;
			out->reason = g_strdup(local->message);
			goto done;
		}
		if (!make(&m, (const char *[]){ "olddefconfig", NULL }, NULL, error))
			return false;
		if (!make_done(out, &m, "merging fragments"))
			goto done;
	}
	if (env->commit) {
		g_autofree char *text = g_strdup_printf("%s\n%s\n", stamp, env->commit);

		g_file_set_contents(stamp_path, text, -1, NULL);
	}
configured:
	if (env->config_copy) {
		g_autoptr(GError) local = NULL;

		if (!hostile_copy(env->builddir, ".config", BUILD_MAX_CONFIG, env->config_copy, 0644,
				  &local)) {
			out->status = BUILD_INFRA;
			out->reason = g_strdup_printf("taking the .config out: %s", local->message);
			goto done;
		}
	}

	/* The build. */
	g_ptr_array_add(args, g_strdup_printf("-j%u", env->jobs ? env->jobs : 1));
	if (target->checks & BUILD_W1)
		g_ptr_array_add(args, g_strdup("W=1"));
	if (target->checks & BUILD_SPARSE_ALL)
		g_ptr_array_add(args, g_strdup("C=2"));
	else if (target->checks & BUILD_SPARSE)
		g_ptr_array_add(args, g_strdup("C=1"));
	g_ptr_array_add(args, NULL);
	g_info("%s: configured after %.1f s", target->spec,
	       (double)(g_get_monotonic_time() - start) / G_USEC_PER_SEC);
	if (!make(&m, (const char *const *)args->pdata, NULL, error))
		return false;
	g_info("%s: make took %.1f s", target->spec, m.result.seconds);
	if (!make_done(out, &m, "make"))
		goto done;

	/* coccicheck on the directories of the changed C files. */
	if ((target->checks & BUILD_COCCI) && env->changed_files) {
		g_autoptr(GHashTable) dirs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
		GHashTableIter it;
		gpointer dir;

		for (const char *const *f = env->changed_files; *f; f++) {
			if (g_str_has_suffix(*f, ".c"))
				g_hash_table_add(dirs, g_path_get_dirname(*f));
		}
		g_hash_table_iter_init(&it, dirs);
		while (g_hash_table_iter_next(&it, &dir, NULL)) {
			g_autofree char *marg = g_strdup_printf("M=%s", (char *)dir);

			if (!make(&m, (const char *[]){ "coccicheck", "MODE=report", marg, NULL },
				  NULL, error))
				return false;
			if (!make_done(out, &m, "coccicheck"))
				goto done;
		}
	}
	if (target->kselftests && target->kselftests[0]) {
		if (!build_kselftests(out, &m, target, env, error))
			return false;
		if (out->status == BUILD_INFRA)
			goto done;
	}
	out->status = BUILD_OK;
done:
	out->seconds = (double)(g_get_monotonic_time() - start) / G_USEC_PER_SEC;
	/* The log is zeroday's own file, capped as it was written. */
	if (g_file_get_contents(env->log_path, &log, &log_len, NULL)) {
		g_ptr_array_unref(out->diags);
		out->diags = collect_diags(&m, env->srcdir, log, log_len, started_us,
					   &out->diags_cut);
		g_info("%s: %u diagnostics collected after %.1f s", target->spec, out->diags->len,
		       (double)(g_get_monotonic_time() - start) / G_USEC_PER_SEC);
		if (out->diags_cut)
			g_message("%s: %u more diagnostics not kept (the cap is %u)", target->spec,
				  out->diags_cut, out->diags->len);
		if (out->status == BUILD_FAILED && killed_by_resources(log)) {
			out->status = BUILD_INFRA;
			g_free(out->reason);
			out->reason = g_strdup("a compiler was killed for lack of memory");
		}
		if (out->status == BUILD_FAILED && out_of_space(log)) {
			wipe = true;
			out->status = BUILD_INFRA;
			g_free(out->reason);
			out->reason = g_strdup("the build ran out of disk space or hit the file size "
					       "limit");
		}
	}
	{
		guint64 cap = env->max_disk ? env->max_disk : BUILD_DEFAULT_MAX_DISK;
		guint64 used = disk_use(env->builddir);

		if (used > cap && out->status != BUILD_INFRA) {
			out->status = BUILD_INFRA;
			g_free(out->reason);
			out->reason = g_strdup_printf("the build directory grew to %" G_GUINT64_FORMAT
						      " MiB, over the cap of %" G_GUINT64_FORMAT
						      " MiB", used >> 20, cap >> 20);
		}
		/* A make killed mid-way leaves half-written objects too. */
		if (used > cap || m.result.outcome == RUN_NO_SPACE ||
		    m.result.outcome == RUN_TIMEOUT || m.result.outcome == RUN_SIGNALED || wipe)
			wipe_builddir(env, stamp_path, out->reason);
	}
	unlink(running);
	return true;
}

const char *build_image_name(const struct build_target *target)
{
	/* The arches boot.c boots (boot_arch_find()). */
	static const struct { const char *arch, *image; } images[] = {
		{ "x86_64", "arch/x86/boot/bzImage" }, { "i386", "arch/x86/boot/bzImage" },
		{ "x86", "arch/x86/boot/bzImage" }, { "arm64", "arch/arm64/boot/Image" },
		{ "riscv", "arch/riscv/boot/Image" },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(images); i++) {
		if (strcmp(images[i].arch, target->arch) == 0)
			return images[i].image;
	}
	return NULL;
}

/* Whether @d is of one object's compilation (compiler, sparse, kernel-doc), not of the link. */
static bool from_object(const struct diag *d)
{
	return strcmp(d->checker, "compiler") == 0 || strcmp(d->checker, "sparse") == 0;
}

enum build_verdict build_compare(const struct build_output *child,
				 const struct build_output *parent, GPtrArray **fresh)
{
	*fresh = g_ptr_array_new();
	if (child->status == BUILD_INFRA)
		return VERDICT_INFRA;
	if (child->status == BUILD_SKIPPED)
		return VERDICT_SKIPPED;
	if (parent && parent->status == BUILD_INFRA)
		return VERDICT_INFRA;
	g_ptr_array_unref(*fresh);
	*fresh = diag_new_in(child->diags, parent ? parent->diags : NULL);
	if (child->status == BUILD_FAILED) {
		if (diag_has_error(*fresh))
			return VERDICT_FAIL_NEW_ERROR;
		if (parent && parent->status == BUILD_FAILED)
			return VERDICT_FAIL_PARENT_FAILING;
		/* Failed, but every parsed error existed before: show all of them. */
		for (guint i = 0; i < child->diags->len; i++) {
			struct diag *d = child->diags->pdata[i];

			if (d->kind == DIAG_ERROR)
				g_ptr_array_add(*fresh, d);
		}
		return VERDICT_FAIL_NEW_ERROR;
	}
	/*
	 * A parent that failed stopped where it failed: it never linked,
	 * so the child's warnings of the link (ld, modpost, objtool on
	 * vmlinux.o) are unseen there, not new; a fix of the parent's error
	 * would be blamed for each. An object's warnings compare as ever:
	 * what it did not compile again, its kept output still says.
	 */
	if (parent && parent->status == BUILD_FAILED) {
		for (guint i = (*fresh)->len; i-- > 0;) {
			if (!from_object((*fresh)->pdata[i]))
				g_ptr_array_remove_index(*fresh, i);
		}
	}
	return (*fresh)->len ? VERDICT_NEW_DIAGNOSTICS : VERDICT_PASS;
}
