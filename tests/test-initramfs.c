/*
 * What payloads declare and what the initramfs packs for them: the
 * header's needs, modules and scratch disk; refusal of host programs for
 * a guest of another arch; a program with the closure of its shared
 * libraries and its interpreter, each file once; modules with their
 * dependencies in load order, decompressed, built-in ones left out; a
 * distribution kernel's version read from its bzImage; and initramfs.sh
 * packing the same files on the developer's machine.
 */
#include "autoconfig.h"

#include <stdlib.h>
#include <string.h>

#include <glib/gstdio.h>

#include "engine/initramfs.h"
#include "tests/testlib.h"

/* Writes @text to a new file @name in the scratch directory; its path. */
static char *scratch_file(const char *name, const char *text)
{
	char *path = g_build_filename(testlib_scratch(), name, NULL);

	g_assert_true(g_file_set_contents(path, text, -1, NULL));
	return path;
}

/* The output of `sh -c @script` (run in the scratch directory), which must succeed. */
static char *sh(const char *script)
{
	const char *argv[] = { "sh", "-c", script, NULL };
	g_autofree char *out = NULL;
	int status = -1;
	g_autoptr(GError) error = NULL;

	g_assert_true(g_spawn_sync(testlib_scratch(), (char **)argv, NULL, G_SPAWN_SEARCH_PATH,
				   NULL, NULL, &out, NULL, &status, &error));
	g_assert_no_error(error);
	g_assert_cmpint(status, ==, 0);
	return g_steal_pointer(&out);
}

/* How many lines of @text are exactly @line. */
static unsigned count_lines(const char *text, const char *line)
{
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	unsigned n = 0;

	for (char **l = lines; *l; l++)
		n += strcmp(*l, line) == 0;
	return n;
}

static void test_needs_read(void)
{
	g_autofree char *ok = scratch_file("ok", "#!/bin/sh\n"
					   "# what it does\n"
					   "# zeroday-needs: mkfs.ext4  e2fsck\n"
					   "#zeroday-needs: e2fsck stress-ng\n"
					   "# zeroday-modules: virtio_blk ext4\n"
					   "# zeroday-scratch-mb: 64\n"
					   "# zeroday-libraries: libnuma.so.1 libm.so.6\n"
					   "echo hi\n"
					   "# zeroday-needs: after-the-header\n");
	g_autofree char *typo = scratch_file("typo", "#!/bin/sh\n# zeroday-need: trinity\n");
	g_autofree char *path = scratch_file("path", "#!/bin/sh\n# zeroday-needs: /bin/sh\n");
	g_autofree char *big = scratch_file("big", "#!/bin/sh\n# zeroday-scratch-mb: lots\n");
	g_autofree char *binary = scratch_file("binary", "\177ELF# zeroday-needs: x\n");
	struct initramfs_needs n;
	g_autoptr(GError) error = NULL;

	g_assert_true(initramfs_needs_read(&n, ok, &error));
	g_assert_no_error(error);
	g_assert_cmpuint(g_strv_length(n.programs), ==, 3);
	g_assert_cmpstr(n.programs[0], ==, "mkfs.ext4");
	g_assert_cmpstr(n.programs[1], ==, "e2fsck");
	g_assert_cmpstr(n.programs[2], ==, "stress-ng");
	g_assert_cmpuint(g_strv_length(n.modules), ==, 2);
	g_assert_cmpstr(n.modules[1], ==, "ext4");
	g_assert_cmpuint(n.scratch_mb, ==, 64);
	g_assert_cmpuint(g_strv_length(n.libraries), ==, 2);
	g_assert_cmpstr(n.libraries[0], ==, "libnuma.so.1");
	initramfs_needs_release(&n);
	/* A library is a file name of a shared library, not a path. */
	{
		g_autofree char *lpath = scratch_file("lpath", "#!/bin/sh\n"
						      "# zeroday-libraries: /lib/libm.so.6\n");
		g_autofree char *lname = scratch_file("lname", "#!/bin/sh\n"
						      "# zeroday-libraries: libm\n");

		g_assert_false(initramfs_needs_read(&n, lpath, &error));
		g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID);
		g_clear_error(&error);
		g_assert_false(initramfs_needs_read(&n, lname, &error));
		g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID);
		g_clear_error(&error);
	}

	g_assert_true(initramfs_needs_read(&n, binary, &error));
	g_assert_null(n.programs[0]);
	g_assert_null(n.modules[0]);
	g_assert_cmpuint(n.scratch_mb, ==, 0);
	initramfs_needs_release(&n);

	g_assert_false(initramfs_needs_read(&n, typo, &error));
	g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID);
	g_assert_nonnull(strstr(error->message, "zeroday-need'"));
	g_clear_error(&error);
	g_assert_false(initramfs_needs_read(&n, path, &error));
	g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID);
	g_clear_error(&error);
	g_assert_false(initramfs_needs_read(&n, big, &error));
	g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID);
}

/* The host's programs do not run in a guest of another arch: refused, before any work. */
static void test_foreign_arch(void)
{
	g_autofree char *payload = scratch_file("needs-sh", "#!/bin/sh\n# zeroday-needs: e2fsck\n");
	g_autofree char *plain = scratch_file("plain", "#!/bin/sh\necho plain\n");
	g_autofree char *out = g_build_filename(testlib_scratch(), "foreign.gz", NULL);
	struct initramfs_payload p[] = { { "needs-sh", payload, 10 } };
	struct initramfs_payload q[] = { { "plain", plain, 10 } };
	struct initramfs_kernel arm = { .arch = "arm64" };
	g_autoptr(GError) error = NULL;
	g_autofree char *recipe = NULL;

	g_assert_false(initramfs_build(out, "/bin/busybox", p, 1, &arm, &error));
	g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID);
	g_assert_nonnull(strstr(error->message, "needs-sh"));
	g_assert_nonnull(strstr(error->message, "arm64"));
	g_clear_error(&error);
	g_assert_null(initramfs_recipe(p, 1, &arm, &error));
	g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID);
	g_clear_error(&error);
	/* A payload without needs is for any arch. */
	recipe = initramfs_recipe(q, 1, &arm, &error);
	g_assert_no_error(error);
	g_assert_nonnull(recipe);
}

/* The archive's names, and its init. */
static void archive_list(const char *gz, char **names, char **init)
{
	g_autofree char *list = g_strdup_printf("gzip -dc < '%s' | cpio -it --quiet", gz);
	g_autofree char *cat = g_strdup_printf("gzip -dc < '%s' | cpio -i --quiet --to-stdout init",
					      gz);

	*names = sh(list);
	*init = sh(cat);
}

static void test_closure(void)
{
	g_autofree char *payload = scratch_file("fsck", "#!/bin/sh\n"
					       "# zeroday-needs: mkfs.ext4 e2fsck\n"
					       "# zeroday-needs: mkfs.xfs\n");
	g_autofree char *out = g_build_filename(testlib_scratch(), "closure.gz", NULL);
	g_autofree char *missing = scratch_file("missing", "#!/bin/sh\n"
						"# zeroday-needs: no-such-program-here\n");
	struct initramfs_payload p[] = { { "fsck", payload, 10 } };
	struct initramfs_payload m[] = { { "missing", missing, 10 } };
	g_autoptr(GError) error = NULL;
	g_autofree char *names = NULL;
	g_autofree char *init = NULL;
	g_autofree char *libc = NULL;
	g_autofree char *interp = NULL;

	g_assert_true(initramfs_build(out, "/bin/busybox", p, 1, NULL, &error));
	g_assert_no_error(error);
	archive_list(out, &names, &init);
	/* What the host's loader resolves, at the same paths. */
	libc = sh("ldd \"$(PATH=$PATH:/usr/sbin:/sbin command -v e2fsck)\" | "
		  "sed -n 's/.*libc.so.6 => \\/\\([^ ]*\\) .*/\\1/p' | tr -d '\\n'");
	interp = sh("ldd \"$(PATH=$PATH:/usr/sbin:/sbin command -v e2fsck)\" | "
		    "sed -n 's/^[[:space:]]*\\/\\(ld-[^ ]*\\|lib[^ ]*ld-linux[^ ]*\\) (0x.*/\\1/p' | "
		    "tr -d '\\n'");
	g_test_message("libc %s, interpreter %s", libc, interp);
	g_assert_cmpstr(libc, !=, "");
	g_assert_cmpstr(interp, !=, "");
	g_assert_cmpuint(count_lines(names, libc), ==, 1);
	g_assert_cmpuint(count_lines(names, interp), ==, 1);
	/* libext2fs is needed by two of them, packed once; their directories are there. */
	g_assert_cmpuint(count_lines(names, "lib/x86_64-linux-gnu/libext2fs.so.2"), ==, 1);
	g_assert_cmpuint(count_lines(names, "lib"), ==, 1);
	g_assert_cmpuint(count_lines(names, "lib/x86_64-linux-gnu"), ==, 1);
	g_assert_true(strstr(names, "sbin/mkfs.ext4\n") && strstr(names, "sbin/e2fsck\n") &&
		      strstr(names, "sbin/mkfs.xfs\n"));
	g_assert_nonnull(strstr(names, "lib/x86_64-linux-gnu/libinih.so.1\n"));
	/* The payload's programs come before busybox's applets. */
	g_assert_nonnull(strstr(init, "export PATH=/usr/sbin:/usr/bin:/sbin:/bin\n"));
	g_assert_null(strstr(init, "insmod"));

	g_assert_false(initramfs_build(out, "/bin/busybox", m, 1, NULL, &error));
	g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_NOT_FOUND);
	g_assert_nonnull(strstr(error->message, "no-such-program-here"));
}

/*
 * A modules directory of its own: a.ko.xz needs b.ko, c is built in, d
 * is nowhere. a is packed decompressed after b, and the init loads b
 * then a.
 */
static void test_modules(void)
{
	g_autofree char *dir = testlib_mkdir("lib/modules/9.9.9-test");
	g_autofree char *kdir = g_build_filename(dir, "kernel", "x", NULL);
	g_autofree char *payload = scratch_file("mods", "#!/bin/sh\n"
						"# zeroday-modules: a c d\n# zeroday-modules: b\n");
	g_autofree char *out = g_build_filename(testlib_scratch(), "modules.gz", NULL);
	struct initramfs_payload p[] = { { "mods", payload, 10 } };
	struct initramfs_kernel k = { .modules_dir = dir };
	g_autoptr(GError) error = NULL;
	g_autofree char *names = NULL;
	g_autofree char *init = NULL;
	g_autofree char *a = NULL;
	g_autofree char *cmd = NULL;
	g_autofree char *recipe = NULL;
	const char *b_at, *a_at;

	g_assert_cmpint(g_mkdir_with_parents(kdir, 0755), ==, 0);
	cmd = g_strdup_printf("cd '%s' && printf 'module a\\n' > kernel/x/a.ko && xz kernel/x/a.ko && "
			      "printf 'module b\\n' > kernel/x/b.ko && "
			      "printf 'kernel/x/a.ko.xz: kernel/x/b.ko\\nkernel/x/b.ko:\\n' > modules.dep && "
			      "printf 'kernel/y/c.ko\\n' > modules.builtin", dir);
	g_free(sh(cmd));
	g_assert_true(initramfs_build(out, "/bin/busybox", p, 1, &k, &error));
	g_assert_no_error(error);
	archive_list(out, &names, &init);
	g_assert_cmpuint(count_lines(names, "lib/modules/9.9.9-test/kernel/x/a.ko"), ==, 1);
	g_assert_cmpuint(count_lines(names, "lib/modules/9.9.9-test/kernel/x/b.ko"), ==, 1);
	g_assert_null(strstr(names, "c.ko"));
	b_at = strstr(init, "insmod /lib/modules/9.9.9-test/kernel/x/b.ko\n");
	a_at = strstr(init, "insmod /lib/modules/9.9.9-test/kernel/x/a.ko\n");
	g_assert_nonnull(b_at);
	g_assert_nonnull(a_at);
	g_assert_true(b_at < a_at);
	g_assert_true(a_at < strstr(init, "ZERODAY-PAYLOAD-START mods"));
	g_free(cmd);
	cmd = g_strdup_printf("gzip -dc < '%s' | cpio -i --quiet --to-stdout "
			      "lib/modules/9.9.9-test/kernel/x/a.ko", out);
	a = sh(cmd);
	g_assert_cmpstr(a, ==, "module a\n");

	/* initramfs.sh copies them from $MODULES, decompressing likewise. */
	recipe = initramfs_recipe(p, 1, &k, &error);
	g_assert_no_error(error);
	g_assert_nonnull(strstr(recipe, "xz -dc \"$modules/kernel/x/a.ko.xz\""));
	g_assert_nonnull(strstr(recipe, "file /lib/modules/9.9.9-test/kernel/x/a.ko "));

	/* Without a modules directory (a kernel with them built in), nothing is packed. */
	g_assert_true(initramfs_build(out, "/bin/busybox", p, 1, NULL, &error));
	g_free(names);
	g_free(init);
	archive_list(out, &names, &init);
	g_assert_null(strstr(names, "lib/modules"));
	g_assert_null(strstr(init, "insmod"));
}

/* Debian's kernel names its version in its bzImage; its modules are on this machine. */
static void test_modules_dir(void)
{
	g_autofree char *kernel = testlib_boot_kernel();
	g_autofree char *version = g_strdup(strchr(kernel, '-') + 1);
	g_autofree char *want = g_build_filename("/lib/modules", version, NULL);
	g_autofree char *dir = initramfs_modules_dir(kernel);
	g_autofree char *text = scratch_file("not-a-kernel", "#!/bin/sh\n");
	g_autofree char *none = initramfs_modules_dir(text);

	g_assert_cmpstr(dir, ==, want);
	g_assert_null(none);
	g_assert_null(initramfs_modules_dir("/nonexistent"));
}

/*
 * initramfs.sh finds the programs on the developer's machine and lists
 * them with their libraries, each once, parents before children; a
 * stand-in for usr/gen_init_cpio prints the list it is given.
 */
static void test_recipe_needs(void)
{
	g_autofree char *payload = scratch_file("rfsck", "#!/bin/sh\n"
						"# zeroday-needs: mkfs.ext4 e2fsck\n");
	g_autofree char *usr = testlib_mkdir("rbuild/usr");
	g_autofree char *tool = g_build_filename(usr, "gen_init_cpio", NULL);
	g_autofree char *script = NULL;
	g_autofree char *recipe = NULL;
	g_autofree char *list = NULL;
	g_autofree char *cmd = NULL;
	struct initramfs_payload p[] = { { "rfsck", payload, 10 } };
	g_autoptr(GError) error = NULL;
	const char *dir_lib, *file_libc;

	g_assert_true(g_file_set_contents(tool, "#!/bin/sh\ncat \"$1\"\n", -1, NULL));
	g_assert_cmpint(g_chmod(tool, 0755), ==, 0);
	recipe = initramfs_recipe(p, 1, NULL, &error);
	g_assert_no_error(error);
	script = scratch_file("rinitramfs.sh", recipe);
	cmd = g_strdup_printf("BUSYBOX=/bin/busybox sh '%s' rbuild | gzip -dc", script);
	list = sh(cmd);
	g_assert_cmpuint(count_lines(list, "dir /lib 0755 0 0"), ==, 1);
	g_assert_cmpuint(count_lines(list, "dir /bin 0755 0 0"), ==, 1);
	g_assert_cmpuint(count_lines(list, "file /lib/x86_64-linux-gnu/libc.so.6 "
					   "/lib/x86_64-linux-gnu/libc.so.6 0755 0 0"), ==, 1);
	g_assert_cmpuint(count_lines(list, "file /lib/x86_64-linux-gnu/libext2fs.so.2 "
					   "/lib/x86_64-linux-gnu/libext2fs.so.2 0755 0 0"), ==, 1);
	g_assert_cmpuint(count_lines(list, "file /lib64/ld-linux-x86-64.so.2 "
					   "/lib64/ld-linux-x86-64.so.2 0755 0 0"), ==, 1);
	dir_lib = strstr(list, "dir /lib/x86_64-linux-gnu 0755");
	file_libc = strstr(list, "file /lib/x86_64-linux-gnu/libc.so.6");
	g_assert_true(dir_lib && file_libc && dir_lib < file_libc);
	g_assert_nonnull(strstr(list, "sbin/e2fsck 0755 0 0\n"));
}

/*
 * initramfs.sh lists the same entries in the same order as the archive
 * zeroday builds, programs and modules included: a stand-in for
 * usr/gen_init_cpio prints the names it is given, `cpio -t` the built
 * archive's.
 */
static void test_recipe_order(void)
{
	g_autofree char *dir = testlib_mkdir("order/lib/modules/9.9.9-order");
	g_autofree char *payload = scratch_file("both", "#!/bin/sh\n"
						"# zeroday-needs: mkfs.xfs e2fsck\n"
						"# zeroday-modules: m\n");
	g_autofree char *plain = scratch_file("plain2", "#!/bin/sh\necho plain\n");
	g_autofree char *usr = testlib_mkdir("obuild/usr");
	g_autofree char *tool = g_build_filename(usr, "gen_init_cpio", NULL);
	g_autofree char *out = g_build_filename(testlib_scratch(), "order.gz", NULL);
	struct initramfs_payload p[] = { { "plain2", plain, 10 }, { "both", payload, 10 } };
	struct initramfs_kernel k = { .modules_dir = dir };
	g_autoptr(GError) error = NULL;
	g_autofree char *cmd = NULL;
	g_autofree char *recipe = NULL;
	g_autofree char *script = NULL;
	g_autofree char *listed = NULL;
	g_autofree char *built = NULL;
	g_autofree char *init = NULL;

	cmd = g_strdup_printf("mkdir -p '%s/kernel/fs' && echo m > '%s/kernel/fs/m.ko' && "
			      "echo 'kernel/fs/m.ko:' > '%s/modules.dep'", dir, dir, dir);
	g_free(sh(cmd));
	/* Its names without the leading slash, as cpio -t prints them. */
	g_assert_true(g_file_set_contents(tool, "#!/bin/sh\n"
					  "awk '{ sub(\"^/\", \"\", $2); print $2 }' \"$1\"\n",
					  -1, NULL));
	g_assert_cmpint(g_chmod(tool, 0755), ==, 0);
	for (size_t n = 1; n <= 2; n++) {
		g_free(recipe);
		g_free(script);
		g_free(listed);
		g_free(built);
		g_free(init);
		g_free(cmd);
		recipe = initramfs_recipe(p, n, &k, &error);
		g_assert_no_error(error);
		script = scratch_file("oinitramfs.sh", recipe);
		cmd = g_strdup_printf("BUSYBOX=/bin/busybox sh '%s' obuild | gzip -dc", script);
		listed = sh(cmd);
		g_assert_true(initramfs_build(out, "/bin/busybox", p, n, &k, &error));
		g_assert_no_error(error);
		archive_list(out, &built, &init);
		g_assert_cmpstr(listed, ==, built);
	}
	g_assert_nonnull(strstr(built, "\nlib/modules/9.9.9-order/kernel/fs/m.ko\n"));
	g_assert_nonnull(strstr(built, "\nlib64\n"));
}

/*
 * A kept selftest tree goes under /kselftest, directories and plain files
 * with their executable bit, links left out; the libraries a payload
 * declares come from the host's library directories with their closure
 * (no ldd on the tree's programs); the init links /dev/stdout; and
 * initramfs.sh lists the same entries in the same order.
 */
static void test_kselftest(void)
{
	g_autofree char *tree = testlib_mkdir("kst-install/vm");
	g_autofree char *top = g_path_get_dirname(tree);
	g_autofree char *payload = scratch_file("kst", "#!/bin/sh\n"
						"# zeroday-needs: timeout\n"
						"# zeroday-libraries: libm.so.6 libgcc_s.so.1\n");
	g_autofree char *usr = testlib_mkdir("kbuild/usr");
	g_autofree char *tool = g_build_filename(usr, "gen_init_cpio", NULL);
	g_autofree char *out = g_build_filename(testlib_scratch(), "kst.gz", NULL);
	struct initramfs_payload p[] = { { "kselftest", payload, 10 } };
	struct initramfs_kernel k = { .kselftest_dir = top };
	g_autoptr(GError) error = NULL;
	g_autofree char *cmd = NULL;
	g_autofree char *recipe = NULL;
	g_autofree char *script = NULL;
	g_autofree char *listed = NULL;
	g_autofree char *built = NULL;
	g_autofree char *init = NULL;
	g_autofree char *modes = NULL;

	cmd = g_strdup_printf("cd '%s' && printf '#!/bin/sh\\n' > run_kselftest.sh && "
			      "chmod 755 run_kselftest.sh && echo ELF > vm/map_fixed_noreplace && "
			      "chmod 755 vm/map_fixed_noreplace && echo timeout=45 > vm/settings && "
			      "mkdir vm-extra && echo x > vm-extra/a && ln -s /etc/shadow vm/shadow",
			      top);
	g_free(sh(cmd));
	g_assert_true(initramfs_build(out, "/bin/busybox", p, 1, &k, &error));
	g_assert_no_error(error);
	archive_list(out, &built, &init);
	g_assert_nonnull(strstr(built, "\nkselftest\nkselftest/run_kselftest.sh\nkselftest/vm\n"
					"kselftest/vm-extra\nkselftest/vm-extra/a\n"
					"kselftest/vm/map_fixed_noreplace\nkselftest/vm/settings\n"));
	g_assert_null(strstr(built, "shadow"));
	g_assert_nonnull(strstr(built, "\nlib/x86_64-linux-gnu/libm.so.6\n"));
	g_assert_nonnull(strstr(built, "\nlib/x86_64-linux-gnu/libgcc_s.so.1\n"));
	g_assert_nonnull(strstr(built, "\nlib/x86_64-linux-gnu/libc.so.6\n"));
	g_assert_nonnull(strstr(built, "bin/timeout\n"));
	g_assert_nonnull(strstr(init, "ln -s fd/1 /dev/stdout"));
	g_free(cmd);
	cmd = g_strdup_printf("gzip -dc < '%s' | cpio -itv --quiet | "
			      "awk '/kselftest\\/vm\\// { print $1, $NF }'", out);
	modes = sh(cmd);
	g_assert_cmpstr(modes, ==, "-rwxr-xr-x kselftest/vm/map_fixed_noreplace\n"
				   "-rw-r--r-- kselftest/vm/settings\n");

	/* initramfs.sh packs the developer's install ($KSELFTEST) the same way. */
	g_assert_true(g_file_set_contents(tool, "#!/bin/sh\n"
					  "awk '{ sub(\"^/\", \"\", $2); print $2 }' \"$1\"\n",
					  -1, NULL));
	g_assert_cmpint(g_chmod(tool, 0755), ==, 0);
	g_free(cmd);
	recipe = initramfs_recipe(p, 1, &k, &error);
	g_assert_no_error(error);
	script = scratch_file("kinitramfs.sh", recipe);
	cmd = g_strdup_printf("KSELFTEST='%s' BUSYBOX=/bin/busybox sh '%s' kbuild | gzip -dc", top,
			      script);
	listed = sh(cmd);
	g_assert_cmpstr(listed, ==, built);
}

int main(int argc, char **argv)
{
	testlib_init(&argc, &argv);
	g_test_add_func("/initramfs/needs-read", test_needs_read);
	g_test_add_func("/initramfs/foreign-arch", test_foreign_arch);
	g_test_add_func("/initramfs/closure", test_closure);
	g_test_add_func("/initramfs/modules", test_modules);
	g_test_add_func("/initramfs/modules-dir", test_modules_dir);
	g_test_add_func("/initramfs/recipe-needs", test_recipe_needs);
	g_test_add_func("/initramfs/recipe-order", test_recipe_order);
	g_test_add_func("/initramfs/kselftest", test_kselftest);
	return g_test_run();
}
