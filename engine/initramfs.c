/*
 * The boot initramfs: see initramfs.h. The newc cpio format is written
 * here directly (struct cpio_newc_header of the kernel's
 * Documentation/driver-api/early-userspace/buffer-format.rst), compressed
 * with GIO's zlib compressor.
 *
 * Host programs a payload needs are packed with their shared libraries as
 * `ldd` lists them. ldd runs the program's own ELF interpreter in its
 * trace mode, so it resolves exactly as the loader will (RUNPATH,
 * Debian's multiarch directories, ld.so.cache), which a reader of
 * DT_NEEDED would have to reimplement; it may run code of the program's
 * loader, which is acceptable for the programs it is used on: named by a
 * payload of the administrator's configuration and installed by the
 * machine's package manager. The archive keeps each file at the path the
 * loader asked for, so the same loader finds it there in the guest.
 */
#define G_LOG_DOMAIN "engine"

#include "autoconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gio/gio.h>

#include "engine/boot.h"
#include "engine/initramfs.h"

/* Debian's multiarch name of this machine's arch, for its library directories. */
#if defined(__x86_64__)
#define MULTIARCH "x86_64-linux-gnu"
#elif defined(__aarch64__)
#define MULTIARCH "aarch64-linux-gnu"
#elif defined(__riscv) && __riscv_xlen == 64
#define MULTIARCH "riscv64-linux-gnu"
#else
#define MULTIARCH "unknown-linux-gnu"
#endif

struct cpio {
	GByteArray *data;
	unsigned ino;
	GHashTable *dirs;  /* the directories in the archive */
	GHashTable *files; /* the files packed from the host, each once */
};

static void pad4(GByteArray *b)
{
	static const guint8 zero[4];

	if (b->len % 4)
		g_byte_array_append(b, zero, 4 - b->len % 4);
}

static void cpio_entry(struct cpio *c, const char *name, unsigned mode, unsigned rmajor,
		       unsigned rminor, const void *data, size_t size)
{
	char header[111];

	g_snprintf(header, sizeof(header),
		   "070701%08X%08X%08X%08X%08X%08X%08zX%08X%08X%08X%08X%08zX%08X",
		   ++c->ino, mode, 0, 0, 1, 0, size, 0, 0, rmajor, rminor, strlen(name) + 1, 0);
	g_byte_array_append(c->data, (const guint8 *)header, 110);
	g_byte_array_append(c->data, (const guint8 *)name, strlen(name) + 1);
	pad4(c->data);
	if (size) {
		g_byte_array_append(c->data, data, size);
		pad4(c->data);
	}
}

static void cpio_dir(struct cpio *c, const char *name)
{
	if (g_hash_table_contains(c->dirs, name))
		return;
	g_hash_table_add(c->dirs, g_strdup(name));
	cpio_entry(c, name, S_IFDIR | 0755, 0, 0, NULL, 0);
}

/* The directories above archive path @name, outermost first. */
static void cpio_parents(struct cpio *c, const char *name)
{
	for (const char *p = strchr(name, '/'); p; p = strchr(p + 1, '/')) {
		g_autofree char *dir = g_strndup(name, p - name);

		cpio_dir(c, dir);
	}
}

static void cpio_file(struct cpio *c, const char *name, unsigned perm, const char *data,
		      size_t size)
{
	cpio_entry(c, name, S_IFREG | perm, 0, 0, data, size);
}

static bool valid_name(const char *name)
{
	if (!*name || name[0] == '.' || strlen(name) > 64)
		return false;
	for (const char *p = name; *p; p++) {
		if (!g_ascii_isalnum(*p) && !strchr("._-", *p))
			return false;
	}
	return true;
}

/* Payload @p's bytes (*@len of them), once its name is checked; NULL with @error set. */
static char *payload_read(const struct initramfs_payload *p, gsize *len, GError **error)
{
	char *text = NULL;

	if (!valid_name(p->name)) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID, "bad payload name '%s'",
			    p->name);
		return NULL;
	}
	if (!g_file_get_contents(p->path, &text, len, error))
		return NULL;
	return text;
}

/* Words of a zeroday-needs line: program names, no path. */
static bool program_name_ok(const char *w)
{
	for (const char *p = w; *p; p++) {
		if (!g_ascii_isalnum(*p) && !strchr("._+-", *p))
			return false;
	}
	return *w && *w != '.' && *w != '-';
}

/* Words of a zeroday-modules line: module names as modules.dep spells them. */
static bool module_name_ok(const char *w)
{
	for (const char *p = w; *p; p++) {
		if (!g_ascii_isalnum(*p) && !strchr("_-", *p))
			return false;
	}
	return *w && *w != '-';
}

/* Words of a zeroday-libraries line: a shared library's file name, no path. */
static bool library_name_ok(const char *w)
{
	return program_name_ok(w) && strstr(w, ".so");
}

/* Appends the words of @value to @list, each checked by @ok, once each. */
static bool needs_words(GPtrArray *list, const char *value, bool (*ok)(const char *),
			const char *path, const char *key, GError **error)
{
	g_auto(GStrv) words = g_strsplit_set(value, " \t", -1);

	for (char **w = words; *w; w++) {
		bool seen = false;

		if (!**w)
			continue;
		if (!ok(*w)) {
			g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID,
				    "%s: zeroday-%s: bad name '%s'", path, key, *w);
			return false;
		}
		for (guint i = 0; i < list->len && !seen; i++)
			seen = strcmp(list->pdata[i], *w) == 0;
		if (!seen)
			g_ptr_array_add(list, g_strdup(*w));
	}
	return true;
}

bool initramfs_needs_read(struct initramfs_needs *out, const char *path, GError **error)
{
	g_autofree char *text = NULL;
	g_autoptr(GPtrArray) programs = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GPtrArray) modules = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GPtrArray) libraries = g_ptr_array_new_with_free_func(g_free);
	g_auto(GStrv) lines = NULL;

	memset(out, 0, sizeof(*out));
	if (!g_file_get_contents(path, &text, NULL, error))
		return false;
	/* The header: the comment lines at the top (a binary has none). */
	lines = g_strsplit(text[0] == '#' ? text : "", "\n", -1);
	for (char **l = lines; *l && (*l)[0] == '#'; l++) {
		const char *p = *l + 1;
		const char *colon;
		g_autofree char *key = NULL;

		while (*p == ' ' || *p == '\t')
			p++;
		if (!g_str_has_prefix(p, "zeroday-") || !(colon = strchr(p, ':')))
			continue;
		key = g_strndup(p + strlen("zeroday-"), colon - p - strlen("zeroday-"));
		if (strcmp(key, "needs") == 0) {
			if (!needs_words(programs, colon + 1, program_name_ok, path, key, error))
				return false;
		} else if (strcmp(key, "modules") == 0) {
			if (!needs_words(modules, colon + 1, module_name_ok, path, key, error))
				return false;
		} else if (strcmp(key, "libraries") == 0) {
			if (!needs_words(libraries, colon + 1, library_name_ok, path, key, error))
				return false;
		} else if (strcmp(key, "scratch-mb") == 0) {
			g_autofree char *v = g_strstrip(g_strdup(colon + 1));
			guint64 mb;

			if (!g_ascii_string_to_unsigned(v, 10, 1, 1u << 20, &mb, NULL)) {
				g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID,
					    "%s: zeroday-scratch-mb: expected 1 to %u, not '%s'",
					    path, 1u << 20, v);
				return false;
			}
			out->scratch_mb = MAX(out->scratch_mb, (unsigned)mb);
		} else {
			g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID,
				    "%s: unknown declaration 'zeroday-%s' (zeroday-needs, "
				    "zeroday-libraries, zeroday-modules, zeroday-scratch-mb)", path,
				    key);
			return false;
		}
	}
	g_ptr_array_add(programs, NULL);
	g_ptr_array_add(modules, NULL);
	g_ptr_array_add(libraries, NULL);
	out->libraries = (char **)g_ptr_array_free(g_steal_pointer(&libraries), FALSE);
	out->programs = (char **)g_ptr_array_free(g_steal_pointer(&programs), FALSE);
	out->modules = (char **)g_ptr_array_free(g_steal_pointer(&modules), FALSE);
	return true;
}

void initramfs_needs_release(struct initramfs_needs *needs)
{
	g_strfreev(needs->programs);
	g_strfreev(needs->modules);
	g_strfreev(needs->libraries);
	memset(needs, 0, sizeof(*needs));
}

/* What all the payloads need together, each name once, in their order. */
struct plan {
	GPtrArray *programs;
	GPtrArray *libraries;
	GPtrArray *modules;
	char *version;     /* the modules directory's name, when modules are packed */
	GPtrArray *module_files; /* paths under it, in load order */
};

static void plan_release(struct plan *p)
{
	g_clear_pointer(&p->programs, g_ptr_array_unref);
	g_clear_pointer(&p->libraries, g_ptr_array_unref);
	g_clear_pointer(&p->modules, g_ptr_array_unref);
	g_clear_pointer(&p->module_files, g_ptr_array_unref);
	g_clear_pointer(&p->version, g_free);
}

ZD_AUTO_DEFINE(plan, plan_release)

/* Where the modules of @name come from, read once per plan. */
struct modules_dep {
	GHashTable *by_name; /* "ext4" -> "kernel/fs/ext4/ext4.ko" */
	GHashTable *deps;    /* "kernel/fs/ext4/ext4.ko" -> "kernel/lib/crc16.ko ..." */
	GHashTable *builtin; /* names built into the kernel */
};

/* A module's name from its path: the file name without .ko[.xz|.zst|.gz], '-' as '_'. */
static char *module_name_of(const char *relpath)
{
	g_autofree char *base = g_path_get_basename(relpath);
	char *ko = strstr(base, ".ko");

	if (ko)
		*ko = '\0';
	g_strdelimit(base, "-", '_');
	return g_steal_pointer(&base);
}

static bool modules_dep_read(struct modules_dep *m, const char *dir, GError **error)
{
	g_autofree char *dep_path = g_build_filename(dir, "modules.dep", NULL);
	g_autofree char *builtin_path = g_build_filename(dir, "modules.builtin", NULL);
	g_autofree char *text = NULL;
	g_autofree char *builtin = NULL;
	g_auto(GStrv) lines = NULL;

	m->by_name = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	m->deps = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	m->builtin = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	if (!g_file_get_contents(dep_path, &text, NULL, error))
		return false;
	lines = g_strsplit(text, "\n", -1);
	for (char **l = lines; *l; l++) {
		const char *colon = strchr(*l, ':');
		char *path;

		if (!colon)
			continue;
		path = g_strndup(*l, colon - *l);
		g_hash_table_replace(m->by_name, module_name_of(path), g_strdup(path));
		g_hash_table_replace(m->deps, path, g_strstrip(g_strdup(colon + 1)));
	}
	if (g_file_get_contents(builtin_path, &builtin, NULL, NULL)) {
		g_auto(GStrv) names = g_strsplit(builtin, "\n", -1);

		for (char **l = names; *l; l++) {
			if (**l)
				g_hash_table_add(m->builtin, module_name_of(*l));
		}
	}
	return true;
}

static void modules_dep_release(struct modules_dep *m)
{
	g_clear_pointer(&m->by_name, g_hash_table_unref);
	g_clear_pointer(&m->deps, g_hash_table_unref);
	g_clear_pointer(&m->builtin, g_hash_table_unref);
}

ZD_AUTO_DEFINE(modules_dep, modules_dep_release)

/* Appends @relpath after its dependencies (depth first), each once. */
static void module_order(struct modules_dep *m, const char *relpath, GHashTable *seen,
			 GPtrArray *order)
{
	const char *deps = g_hash_table_lookup(m->deps, relpath);

	if (!g_hash_table_add(seen, g_strdup(relpath)))
		return;
	if (deps && *deps) {
		g_auto(GStrv) list = g_strsplit_set(deps, " \t", -1);

		for (char **d = list; *d; d++) {
			if (**d)
				module_order(m, *d, seen, order);
		}
	}
	g_ptr_array_add(order, g_strdup(relpath));
}

/*
 * The payloads' needs, each once; with @kernel's modules directory, the
 * module files to pack in load order. A module built into the kernel,
 * or that the kernel does not have, is not packed: the payload finds
 * its feature there or not, and says so.
 */
static bool plan_make(struct plan *p, const struct initramfs_payload *payloads, size_t n,
		      const struct initramfs_kernel *kernel, GError **error)
{
	const char *arch = kernel && kernel->arch ? kernel->arch : "x86_64";
	const struct boot_arch *a = boot_arch_find(arch);

	p->programs = g_ptr_array_new_with_free_func(g_free);
	p->libraries = g_ptr_array_new_with_free_func(g_free);
	p->modules = g_ptr_array_new_with_free_func(g_free);
	p->module_files = g_ptr_array_new_with_free_func(g_free);
	for (size_t i = 0; i < n; i++) {
		struct initramfs_needs needs;

		if (!valid_name(payloads[i].name)) {
			g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID,
				    "bad payload name '%s'", payloads[i].name);
			return false;
		}
		if (!initramfs_needs_read(&needs, payloads[i].path, error))
			return false;
		if ((needs.programs[0] || needs.libraries[0]) && (!a || !boot_arch_native(a))) {
			g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID,
				    "payload %s needs this machine's programs (%s), which "
				    "cannot run in a %s guest", payloads[i].name,
				    needs.programs[0] ? needs.programs[0] : needs.libraries[0], arch);
			initramfs_needs_release(&needs);
			return false;
		}
		for (char **w = needs.programs; *w; w++)
			needs_words(p->programs, *w, program_name_ok, "", "", NULL);
		for (char **w = needs.modules; *w; w++)
			needs_words(p->modules, *w, module_name_ok, "", "", NULL);
		for (char **w = needs.libraries; *w; w++)
			needs_words(p->libraries, *w, library_name_ok, "", "", NULL);
		initramfs_needs_release(&needs);
	}
	if (p->modules->len && kernel && kernel->modules_dir) {
		zd_auto(modules_dep) m = { 0 };
		g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal,
								   g_free, NULL);

		if (!modules_dep_read(&m, kernel->modules_dir, error))
			return false;
		for (guint i = 0; i < p->modules->len; i++) {
			g_autofree char *name = g_strdelimit(g_strdup(p->modules->pdata[i]), "-", '_');
			const char *relpath = g_hash_table_lookup(m.by_name, name);

			if (relpath)
				module_order(&m, relpath, seen, p->module_files);
			else if (!g_hash_table_contains(m.builtin, name))
				g_message("module %s is not in %s; not packed", name,
					  kernel->modules_dir);
		}
		if (p->module_files->len)
			p->version = g_path_get_basename(kernel->modules_dir);
	}
	return true;
}

/* The host's path of program @name: PATH first, then the sbin directories. */
static char *program_find(const char *name, GError **error)
{
	static const char *const extra[] = { "/usr/sbin", "/sbin", "/usr/bin", "/bin" };
	char *path = g_find_program_in_path(name);

	for (size_t i = 0; !path && i < G_N_ELEMENTS(extra); i++) {
		g_autofree char *p = g_build_filename(extra[i], name, NULL);

		if (g_file_test(p, G_FILE_TEST_IS_EXECUTABLE) && !g_file_test(p, G_FILE_TEST_IS_DIR))
			path = g_steal_pointer(&p);
	}
	if (!path)
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_NOT_FOUND,
			    "a payload needs '%s', which is not installed here", name);
	return path;
}

/*
 * Where a declared library is looked for, in this order: the multiarch
 * directories of this machine's arch first (where ldd finds libc, so
 * that each file is packed once, at one path), then the plain ones. The
 * guest's loader, without an ld.so.cache, searches the same.
 */
static const char *const library_dirs[] = {
	"/lib/" MULTIARCH, "/usr/lib/" MULTIARCH, "/lib64", "/usr/lib64", "/lib", "/usr/lib",
};

/* The host's path of shared library @name, or NULL with @error set (caller frees). */
static char *library_find(const char *name, GError **error)
{
	for (size_t i = 0; i < G_N_ELEMENTS(library_dirs); i++) {
		g_autofree char *p = g_build_filename(library_dirs[i], name, NULL);

		if (g_file_test(p, G_FILE_TEST_IS_REGULAR))
			return g_steal_pointer(&p);
	}
	g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_NOT_FOUND,
		    "a payload needs the library '%s', which is not installed here", name);
	return NULL;
}

/* Runs @argv; its standard output, or NULL with @error set. */
static GBytes *run_capture(const char *const *argv, bool any_status, GError **error)
{
	g_autoptr(GSubprocess) sp = g_subprocess_newv(argv, G_SUBPROCESS_FLAGS_STDOUT_PIPE |
							  G_SUBPROCESS_FLAGS_STDERR_SILENCE, error);
	GBytes *out = NULL;

	if (!sp || !g_subprocess_communicate(sp, NULL, NULL, &out, NULL, error))
		return NULL;
	if (!any_status && !g_subprocess_get_successful(sp)) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s %s failed", argv[0],
			    argv[1]);
		g_bytes_unref(out);
		return NULL;
	}
	return out;
}

/*
 * Adds to @files the shared libraries and ELF interpreter of program
 * @path, as `ldd` lists them: "NAME => /path (0x...)" and "/interp
 * (0x...)"; the vDSO has no path, and a static program has none of them.
 */
static bool ldd_closure(const char *path, GPtrArray *files, GError **error)
{
	const char *argv[] = { "ldd", path, NULL };
	g_autoptr(GBytes) out = run_capture(argv, true, error);
	g_autofree char *text = NULL;
	g_auto(GStrv) lines = NULL;

	if (!out)
		return false;
	text = g_strndup(g_bytes_get_data(out, NULL), g_bytes_get_size(out));
	lines = g_strsplit(text, "\n", -1);
	for (char **l = lines; *l; l++) {
		const char *arrow = strstr(*l, "=> ");
		const char *p = arrow ? arrow + 3 : *l + strspn(*l, " \t");
		const char *end = strstr(p, " (0x");

		if (strstr(*l, "=> not found")) {
			g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_NOT_FOUND,
				    "%s: a shared library is missing:%s", path, *l);
			return false;
		}
		if (*p == '/' && end)
			g_ptr_array_add(files, g_strndup(p, end - p));
	}
	return true;
}

/* Packs the host's file @path at the same path in the archive, once. */
static bool pack_host_file(struct cpio *c, const char *path, GError **error)
{
	const char *name = path + strspn(path, "/");
	g_autofree char *data = NULL;
	gsize len;

	if (g_hash_table_contains(c->files, name))
		return true;
	if (!g_file_get_contents(path, &data, &len, error))
		return false;
	g_hash_table_add(c->files, g_strdup(name));
	cpio_parents(c, name);
	cpio_file(c, name, 0755, data, len);
	return true;
}

/* The decompressor of a compressed module, or NULL for a plain .ko. */
static const char *module_decompressor(const char *relpath)
{
	if (g_str_has_suffix(relpath, ".ko.xz"))
		return "xz";
	if (g_str_has_suffix(relpath, ".ko.zst"))
		return "zstd";
	if (g_str_has_suffix(relpath, ".ko.gz"))
		return "gzip";
	return NULL;
}

/* A module's path in the archive: uncompressed, as busybox's insmod reads it. */
static char *module_archive_path(const struct plan *p, const char *relpath)
{
	const char *ko = strstr(relpath, ".ko");
	g_autofree char *plain = g_strndup(relpath, ko ? (size_t)(ko - relpath) + 3 : strlen(relpath));

	return g_strdup_printf("lib/modules/%s/%s", p->version, plain);
}

static int compare_strings(gconstpointer a, gconstpointer b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * Packs the plan's programs with their libraries, and its modules
 * decompressed, in the order initramfs.sh lists them: the new
 * directories of both (C order puts a parent first), the programs' files
 * in C order, each once, then the modules in load order.
 */
static bool pack_needs(struct cpio *c, const struct plan *p, const struct initramfs_kernel *kernel,
		       GError **error)
{
	g_autoptr(GPtrArray) files = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GPtrArray) modules = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GPtrArray) dirs = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);

	for (guint i = 0; i < p->programs->len + p->libraries->len; i++) {
		/* The declared libraries are Debian's: ldd may list their closure. */
		g_autofree char *path = i < p->programs->len
			? program_find(p->programs->pdata[i], error)
			: library_find(p->libraries->pdata[i - p->programs->len], error);
		g_autoptr(GPtrArray) libs = g_ptr_array_new_with_free_func(g_free);

		if (!path || !ldd_closure(path, libs, error))
			return false;
		g_ptr_array_insert(libs, 0, g_steal_pointer(&path));
		for (guint j = 0; j < libs->len; j++) {
			const char *name = (const char *)libs->pdata[j] + strspn(libs->pdata[j], "/");

			if (!g_hash_table_contains(seen, name)) {
				g_ptr_array_add(files, g_strdup(name));
				g_hash_table_add(seen, files->pdata[files->len - 1]);
			}
		}
	}
	g_ptr_array_sort(files, compare_strings);
	for (guint i = 0; i < p->module_files->len; i++)
		g_ptr_array_add(modules, module_archive_path(p, p->module_files->pdata[i]));
	for (guint k = 0; k < 2; k++) {
		GPtrArray *names = k ? modules : files;

		for (guint i = 0; i < names->len; i++) {
			const char *name = names->pdata[i];

			for (const char *sl = strchr(name, '/'); sl; sl = strchr(sl + 1, '/')) {
				char *dir = g_strndup(name, sl - name);

				if (g_hash_table_contains(c->dirs, dir) ||
				    g_hash_table_contains(seen, dir)) {
					g_free(dir);
					continue;
				}
				g_ptr_array_add(dirs, dir);
				g_hash_table_add(seen, dir);
			}
		}
	}
	g_ptr_array_sort(dirs, compare_strings);
	for (guint i = 0; i < dirs->len; i++)
		cpio_dir(c, dirs->pdata[i]);
	for (guint i = 0; i < files->len; i++) {
		g_autofree char *host = g_strconcat("/", files->pdata[i], NULL);

		if (!pack_host_file(c, host, error))
			return false;
	}
	for (guint i = 0; i < p->module_files->len; i++) {
		const char *rel = p->module_files->pdata[i];
		g_autofree char *src = g_build_filename(kernel->modules_dir, rel, NULL);
		const char *unzip = module_decompressor(rel);
		g_autofree char *data = NULL;
		g_autoptr(GBytes) bytes = NULL;
		gsize len;

		if (unzip) {
			const char *argv[] = { unzip, "-dc", src, NULL };

			bytes = run_capture(argv, false, error);
			if (!bytes)
				return false;
		} else {
			if (!g_file_get_contents(src, &data, &len, error))
				return false;
			bytes = g_bytes_new_take(g_steal_pointer(&data), len);
		}
		cpio_file(c, modules->pdata[i], 0644, g_bytes_get_data(bytes, NULL),
			  g_bytes_get_size(bytes));
	}
	return true;
}

/* The most entries and depth of a kept selftest tree packed (the builder's caps are lower). */
#define KSELFTEST_MAX_ENTRIES 50000
#define KSELFTEST_MAX_DEPTH 32

/*
 * Adds the paths below @root/@rel (relative to @root) of the directories
 * and regular files there, links not followed, anything else left out.
 */
static bool kselftest_walk(const char *root, const char *rel, unsigned depth, GPtrArray *out,
			   GError **error)
{
	g_autofree char *dir = rel ? g_build_filename(root, rel, NULL) : g_strdup(root);
	g_autoptr(GDir) d = g_dir_open(dir, 0, error);
	const char *name;

	if (!d)
		return false;
	if (depth > KSELFTEST_MAX_DEPTH) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_LIMIT, "%s: too deep", dir);
		return false;
	}
	while ((name = g_dir_read_name(d))) {
		g_autofree char *sub = rel ? g_build_filename(rel, name, NULL) : g_strdup(name);
		g_autofree char *path = g_build_filename(root, sub, NULL);
		struct stat st;

		if (lstat(path, &st) < 0 || (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)))
			continue;
		if (out->len >= KSELFTEST_MAX_ENTRIES) {
			g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_LIMIT, "%s: over %u entries",
				    root, KSELFTEST_MAX_ENTRIES);
			return false;
		}
		g_ptr_array_add(out, g_strdup(sub));
		if (S_ISDIR(st.st_mode) && !kselftest_walk(root, sub, depth + 1, out, error))
			return false;
	}
	return true;
}

/*
 * Packs the kept selftest tree under /kselftest, in the order initramfs.sh
 * lists it: every path in C order (a parent before what is in it).
 */
static bool pack_kselftests(struct cpio *c, const char *root, GError **error)
{
	g_autoptr(GPtrArray) paths = g_ptr_array_new_with_free_func(g_free);

	if (!kselftest_walk(root, NULL, 0, paths, error))
		return false;
	g_ptr_array_sort(paths, compare_strings);
	cpio_dir(c, "kselftest");
	for (guint i = 0; i < paths->len; i++) {
		g_autofree char *path = g_build_filename(root, paths->pdata[i], NULL);
		g_autofree char *name = g_build_filename("kselftest", paths->pdata[i], NULL);
		g_autofree char *data = NULL;
		struct stat st;
		gsize len;

		if (lstat(path, &st) < 0) {
			g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s: %s", path,
				    g_strerror(errno));
			return false;
		}
		if (S_ISDIR(st.st_mode)) {
			cpio_dir(c, name);
			continue;
		}
		if (!g_file_get_contents(path, &data, &len, error))
			return false;
		cpio_file(c, name, (st.st_mode & 0111) ? 0755 : 0644, data, len);
	}
	return true;
}

char *initramfs_modules_dir(const char *image)
{
	/* Documentation/x86/boot.rst: kernel_version at 0x20E, an offset from 0x200. */
	unsigned char head[0x210];
	char version[256];
	g_autofree char *dir = NULL;
	g_autofree char *dep = NULL;
	ssize_t n;
	unsigned off;
	int fd = open(image, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	n = read(fd, head, sizeof(head));
	if (n < (ssize_t)sizeof(head) || memcmp(head + 0x202, "HdrS", 4) != 0) {
		close(fd);
		return NULL;
	}
	off = (unsigned)(head[0x20E] | head[0x20F] << 8) + 0x200;
	n = pread(fd, version, sizeof(version) - 1, off);
	close(fd);
	if (n <= 0)
		return NULL;
	version[n] = '\0';
	version[strcspn(version, " \t\n")] = '\0';
	if (!*version || strchr(version, '/') || version[0] == '.')
		return NULL;
	dir = g_build_filename("/lib/modules", version, NULL);
	dep = g_build_filename(dir, "modules.dep", NULL);
	return g_file_test(dep, G_FILE_TEST_IS_REGULAR) ? g_steal_pointer(&dir) : NULL;
}

/* The init: markers, the modules, each payload under its own timeout, then reboot. */
static char *init_script(const struct initramfs_payload *payloads, size_t n, const struct plan *p)
{
	/* The payloads' own programs come first: before busybox's applets of the same name. */
	GString *s = g_string_new(
		"#!/bin/busybox sh\n"
		"/bin/busybox --install -s /bin\n"
		"export PATH=/usr/sbin:/usr/bin:/sbin:/bin\n"
		"mkdir -p /proc /sys /dev /tmp\n"
		"mount -t proc proc /proc\n"
		"mount -t sysfs sysfs /sys\n"
		"mount -t devtmpfs devtmpfs /dev 2>/dev/null\n"
		/* devtmpfs has none of these: a shell writing to /dev/stdout would make a file. */
		"ln -s /proc/self/fd /dev/fd 2>/dev/null\n"
		"ln -s fd/0 /dev/stdin 2>/dev/null\n"
		"ln -s fd/1 /dev/stdout 2>/dev/null\n"
		"ln -s fd/2 /dev/stderr 2>/dev/null\n"
		"ZERODAY_SEED=$(sed -n 's/.*zeroday\\.seed=\\([0-9]*\\).*/\\1/p' /proc/cmdline)\n"
		"export ZERODAY_SEED\n"
		"echo ZERODAY-BOOT-START\n"
		"uname -a\n");

	for (guint i = 0; i < p->module_files->len; i++) {
		g_autofree char *path = module_archive_path(p, p->module_files->pdata[i]);

		g_string_append_printf(s, "insmod /%s\n", path);
	}
	for (size_t i = 0; i < n; i++) {
		g_string_append_printf(s,
			"echo 'ZERODAY-PAYLOAD-START %s'\n"
			"timeout %u /payloads/%s </dev/null\n"
			"echo \"ZERODAY-PAYLOAD-END %s rc=$?\"\n",
			payloads[i].name, payloads[i].timeout_s ? payloads[i].timeout_s : 600,
			payloads[i].name, payloads[i].name);
	}
	/*
	 * The end marker, then a second before the reboot: QEMU goes at once
	 * when the guest reboots, and the console stream must have read the
	 * marker by then.
	 */
	g_string_append(s, "echo ZERODAY-BOOT-END\nsync\nsleep 1\nreboot -f\n"
			   "echo ZERODAY-REBOOT-FAILED\nsleep 100000\n");
	return g_string_free(s, FALSE);
}

/* The directories of the archive, then its console node: both forms write them. */
static const char *const dirs_made[] = { "bin", "sbin", "dev", "proc", "sys", "tmp", "payloads" };

/* The heredoc delimiter of the recipe; a file with a line like it goes in base64. */
#define RECIPE_EOF "ZERODAY_EOF"

/* Whether @text (@len bytes) can stand in a quoted heredoc as it is. */
static bool heredoc_safe(const char *text, gsize len)
{
	if (!len || text[len - 1] != '\n' || memchr(text, '\0', len) ||
	    !g_utf8_validate(text, len, NULL))
		return false;
	for (const char *line = text; line < text + len; line = strchr(line, '\n') + 1) {
		if (strncmp(line, RECIPE_EOF "\n", strlen(RECIPE_EOF) + 1) == 0)
			return false;
	}
	return true;
}

/* Appends the command that writes @text (@len bytes) to "$dir/@file". */
static void recipe_file(GString *s, const char *file, const char *text, gsize len)
{
	if (heredoc_safe(text, len)) {
		g_string_append_printf(s, "cat > \"$dir/%s\" << '" RECIPE_EOF "'\n", file);
		g_string_append_len(s, text, len);
	} else {
		g_autofree char *b64 = g_base64_encode((const guchar *)text, len);

		g_string_append_printf(s, "base64 -d > \"$dir/%s\" << '" RECIPE_EOF "'\n", file);
		for (size_t at = 0, all = strlen(b64); at < all; at += 76)
			g_string_append_printf(s, "%.76s\n", b64 + at);
	}
	g_string_append(s, RECIPE_EOF "\n");
}

/* The recipe's part that finds the programs here and lists them with what ldd lists. */
static void recipe_needs(GString *s, const struct plan *p)
{
	if (p->libraries->len) {
		g_string_append(s, "# The libraries the payloads declare, found here, with what ldd lists\n"
				   "# for them.\n"
				   "for lib in");
		for (guint i = 0; i < p->libraries->len; i++)
			g_string_append_printf(s, " %s", (const char *)p->libraries->pdata[i]);
		g_string_append(s, "; do\n"
				   "\tpath=\n"
				   "\tfor d in");
		for (size_t i = 0; i < G_N_ELEMENTS(library_dirs); i++)
			g_string_append_printf(s, " %s", library_dirs[i]);
		g_string_append(s, "; do\n"
			"\t\t[ -f \"$d/$lib\" ] && { path=$d/$lib; break; }\n"
			"\tdone\n"
			"\t[ -n \"$path\" ] || {\n"
			"\t\techo \"initramfs.sh: a payload needs the library $lib, which is not installed\" >&2\n"
			"\t\texit 1\n"
			"\t}\n"
			"\techo \"$path\"\n"
			"\tldd \"$path\" | sed -n 's/.*=> \\(\\/[^ ]*\\) (0x.*/\\1/p; "
			"s/^[[:space:]]*\\(\\/[^ ]*\\) (0x.*/\\1/p'\n"
			"done > \"$dir/needs\"\n");
		if (!p->programs->len)
			g_string_append(s, "LC_ALL=C sort -u -o \"$dir/needs\" \"$dir/needs\"\n");
	}
	if (!p->programs->len)
		return;
	g_string_append(s, "# The payloads' programs, found here, with the shared libraries and the\n"
			   "# ELF interpreter ldd lists for them, each packed once at its path.\n"
			   "for prog in");
	for (guint i = 0; i < p->programs->len; i++)
		g_string_append_printf(s, " %s", (const char *)p->programs->pdata[i]);
	g_string_append(s, "; do\n"
		"\tpath=$(PATH=\"$PATH:/usr/sbin:/sbin\" command -v \"$prog\") || {\n"
		"\t\techo \"initramfs.sh: a payload needs $prog, which is not installed\" >&2\n"
		"\t\texit 1\n"
		"\t}\n"
		"\techo \"$path\"\n"
		"\tldd \"$path\" | sed -n 's/.*=> \\(\\/[^ ]*\\) (0x.*/\\1/p; "
		"s/^[[:space:]]*\\(\\/[^ ]*\\) (0x.*/\\1/p'\n");
	g_string_append(s, p->libraries->len ? "done >> \"$dir/needs\"\n" : "done > \"$dir/needs\"\n");
	g_string_append(s, "LC_ALL=C sort -u -o \"$dir/needs\" \"$dir/needs\"\n");
}

/* The recipe's part that copies the modules, uncompressed, from $MODULES. */
static void recipe_modules(GString *s, const struct plan *p, const struct initramfs_kernel *kernel)
{
	if (!p->module_files->len)
		return;
	g_string_append_printf(s, "# The modules the payloads load, from the kernel's modules directory.\n"
				  "modules=${MODULES:-%s}\n", kernel->modules_dir);
	for (guint i = 0; i < p->module_files->len; i++) {
		const char *rel = p->module_files->pdata[i];
		const char *unzip = module_decompressor(rel);

		if (unzip)
			g_string_append_printf(s, "%s -dc \"$modules/%s\" > \"$dir/module-%u.ko\"\n",
					       unzip, rel, i);
		else
			g_string_append_printf(s, "cp \"$modules/%s\" \"$dir/module-%u.ko\"\n", rel, i);
	}
}

char *initramfs_recipe(const struct initramfs_payload *payloads, size_t n,
		       const struct initramfs_kernel *kernel, GError **error)
{
	zd_auto(plan) p = { 0 };
	g_autofree char *init = NULL;
	g_autoptr(GString) s = g_string_new(
		"#!/bin/sh\n"
		"# The initramfs zeroday boots its kernels with: a static busybox, the\n"
		"# init below and the payloads it runs, packed by the kernel's own\n"
		"# usr/gen_init_cpio (built with the kernel), as any user:\n"
		"#\n"
		"#   sh initramfs.sh BUILD-DIR > initramfs.cpio.gz\n"
		"#\n"
		"# $BUSYBOX names the static busybox (default /bin/busybox, which\n"
		"# Debian's busybox-static installs).\n"
		"set -eu\n"
		"build=${1:?usage: sh initramfs.sh BUILD-DIR > initramfs.cpio.gz}\n"
		"busybox=${BUSYBOX:-/bin/busybox}\n"
		"if ldd \"$busybox\" > /dev/null 2>&1; then\n"
		"\techo \"initramfs.sh: $busybox is not a static busybox\" \\\n"
		"\t\t\"(Debian: apt-get install busybox-static)\" >&2\n"
		"\texit 1\n"
		"fi\n"
		"dir=$(mktemp -d)\n"
		"trap 'rm -rf \"$dir\"' EXIT\n");

	if (!plan_make(&p, payloads, n, kernel, error))
		return NULL;
	init = init_script(payloads, n, &p);
	recipe_file(s, "init", init, strlen(init));
	for (size_t i = 0; i < n; i++) {
		gsize len;
		g_autofree char *text = payload_read(&payloads[i], &len, error);
		g_autofree char *file = NULL;

		if (!text)
			return NULL;
		file = g_strconcat("payload-", payloads[i].name, NULL);
		recipe_file(s, file, text, len);
	}
	recipe_needs(s, &p);
	recipe_modules(s, &p, kernel);
	/* The same entries in the same order as initramfs_build()'s. */
	g_string_append(s, "cat > \"$dir/list\" << EOF\n");
	for (size_t i = 0; i < G_N_ELEMENTS(dirs_made); i++)
		g_string_append_printf(s, "dir /%s 0755 0 0\n", dirs_made[i]);
	g_string_append(s, "nod /dev/console 0600 0 0 c 5 1\n"
			   "file /bin/busybox $busybox 0755 0 0\n"
			   "file /init $dir/init 0755 0 0\n");
	for (size_t i = 0; i < n; i++)
		g_string_append_printf(s, "file /payloads/%s $dir/payload-%s 0755 0 0\n",
				       payloads[i].name, payloads[i].name);
	g_string_append(s, "EOF\n");
	if (p.programs->len || p.libraries->len || p.module_files->len) {
		/* The new directories of the programs' files and the modules, parents first. */
		g_string_append(s, "{\n");
		if (p.programs->len || p.libraries->len)
			g_string_append(s, "\tcat \"$dir/needs\"\n");
		for (guint i = 0; i < p.module_files->len; i++) {
			g_autofree char *name = module_archive_path(&p, p.module_files->pdata[i]);

			g_string_append_printf(s, "\techo /%s\n", name);
		}
		g_string_append(s, "} | while read -r f; do\n"
				   "\td=${f%/*}\n"
				   "\twhile [ -n \"$d\" ]; do echo \"dir $d 0755 0 0\"; d=${d%/*}; done\n"
				   "done | LC_ALL=C sort -u | {\n"
				   "\tgrep -vxE 'dir /(");
		for (size_t i = 0; i < G_N_ELEMENTS(dirs_made); i++)
			g_string_append_printf(s, "%s%s", i ? "|" : "", dirs_made[i]);
		g_string_append(s, ") 0755 0 0' || :\n} >> \"$dir/list\"\n");
	}
	if (p.programs->len || p.libraries->len)
		g_string_append(s, "sed 's|.*|file & & 0755 0 0|' \"$dir/needs\" >> \"$dir/list\"\n");
	for (guint i = 0; i < p.module_files->len; i++) {
		g_autofree char *name = module_archive_path(&p, p.module_files->pdata[i]);

		g_string_append_printf(s, "echo \"file /%s $dir/module-%u.ko 0644 0 0\" "
					  ">> \"$dir/list\"\n", name, i);
	}
	if (kernel && kernel->kselftest_dir)
		g_string_append(s,
			"# The selftests the kernel's tree installed (make -C tools/testing/selftests\n"
			"# O=BUILD-DIR INSTALL_PATH=BUILD-DIR/kselftest-install install), under /kselftest.\n"
			"kselftest=${KSELFTEST:-$build/kselftest-install}\n"
			"if [ ! -d \"$kselftest\" ]; then\n"
			"\techo \"initramfs.sh: no selftests in $kselftest: none packed\" >&2\n"
			"\tkselftest=$dir/no-kselftest\n"
			"\tmkdir \"$kselftest\"\n"
			"fi\n"
			"echo \"dir /kselftest 0755 0 0\" >> \"$dir/list\"\n"
			"(cd \"$kselftest\" && find . -mindepth 1 \\( -type d -o -type f \\) | LC_ALL=C sort) |\n"
			"while read -r f; do\n"
			"\tf=${f#./}\n"
			"\tif [ -d \"$kselftest/$f\" ]; then\n"
			"\t\techo \"dir /kselftest/$f 0755 0 0\"\n"
			"\telif [ -x \"$kselftest/$f\" ]; then\n"
			"\t\techo \"file /kselftest/$f $kselftest/$f 0755 0 0\"\n"
			"\telse\n"
			"\t\techo \"file /kselftest/$f $kselftest/$f 0644 0 0\"\n"
			"\tfi\n"
			"done >> \"$dir/list\"\n");
	g_string_append(s, "\"$build/usr/gen_init_cpio\" \"$dir/list\" > \"$dir/cpio\"\n"
			   "gzip -9 < \"$dir/cpio\"\n");
	return g_string_free(g_steal_pointer(&s), FALSE);
}

bool initramfs_build(const char *out_path, const char *busybox,
		     const struct initramfs_payload *payloads, size_t n,
		     const struct initramfs_kernel *kernel, GError **error)
{
	struct cpio c = {
		.data = g_byte_array_new(),
		.dirs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL),
		.files = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL),
	};
	g_autoptr(GByteArray) archive = c.data;
	g_autoptr(GHashTable) dirs = c.dirs;
	g_autoptr(GHashTable) files = c.files;
	zd_auto(plan) p = { 0 };
	g_autofree char *bb = NULL;
	g_autofree char *init = NULL;
	g_autoptr(GConverter) gz = NULL;
	g_autoptr(GOutputStream) file = NULL;
	g_autoptr(GOutputStream) out = NULL;
	g_autoptr(GFile) target = g_file_new_for_path(out_path);
	gsize bb_len;

	if (!plan_make(&p, payloads, n, kernel, error))
		return false;
	init = init_script(payloads, n, &p);
	if (!g_file_get_contents(busybox, &bb, &bb_len, error))
		return false;
	for (size_t i = 0; i < G_N_ELEMENTS(dirs_made); i++)
		cpio_dir(&c, dirs_made[i]);
	/* Without /dev/console the init has no output before devtmpfs. */
	cpio_entry(&c, "dev/console", S_IFCHR | 0600, 5, 1, NULL, 0);
	cpio_file(&c, "bin/busybox", 0755, bb, bb_len);
	cpio_file(&c, "init", 0755, init, strlen(init));
	for (size_t i = 0; i < n; i++) {
		gsize len;
		g_autofree char *text = payload_read(&payloads[i], &len, error);
		g_autofree char *name = NULL;

		if (!text)
			return false;
		name = g_strconcat("payloads/", payloads[i].name, NULL);
		cpio_file(&c, name, 0755, text, len);
	}
	if (!pack_needs(&c, &p, kernel, error))
		return false;
	if (kernel && kernel->kselftest_dir && !pack_kselftests(&c, kernel->kselftest_dir, error))
		return false;
	cpio_entry(&c, "TRAILER!!!", 0, 0, 0, NULL, 0);

	gz = G_CONVERTER(g_zlib_compressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP, 6));
	file = G_OUTPUT_STREAM(g_file_replace(target, NULL, FALSE, G_FILE_CREATE_NONE, NULL, error));
	if (!file)
		return false;
	out = g_converter_output_stream_new(file, gz);
	if (!g_output_stream_write_all(out, archive->data, archive->len, NULL, NULL, error) ||
	    !g_output_stream_close(out, NULL, error))
		return false;
	return true;
}
