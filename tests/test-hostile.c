/*
 * Taking files out of a build directory: links (at the end and on the
 * way), FIFOs, hard links, sizes, and "..", each refused with a reason;
 * a regular file read and copied whole.
 */
#include "autoconfig.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/engine.h"
#include "engine/hostile.h"
#include "tests/testlib.h"

static char *dir;

static void refused(const char *relpath, int code, const char *why)
{
	g_autoptr(GError) error = NULL;
	g_autofree char *text = NULL;

	g_assert_false(hostile_read(&text, NULL, dir, relpath, 1024, &error));
	g_assert_error(error, ENGINE_ERROR, code);
	g_test_message("%s: %s", relpath, error->message);
	g_assert_nonnull(strstr(error->message, why));
	if (code != ENGINE_ERROR_LIMIT)
		g_assert_false(hostile_is_file(dir, relpath));
}

static void test_refused(void)
{
	g_autofree char *sub = g_build_filename(dir, "sub", NULL);
	g_autofree char *file = g_build_filename(dir, "sub", "file", NULL);
	g_autofree char *big = g_build_filename(dir, "big", NULL);
	g_autofree char *path = NULL;
	g_autofree char *blob = g_strnfill(2048, 'x');

	g_assert_cmpint(g_mkdir_with_parents(sub, 0755), ==, 0);
	g_assert_true(g_file_set_contents(file, "ok\n", -1, NULL));
	g_assert_true(g_file_set_contents(big, blob, -1, NULL));
	path = g_build_filename(dir, "shadow", NULL);
	g_assert_cmpint(symlink("/etc/shadow", path), ==, 0);
	g_clear_pointer(&path, g_free);
	path = g_build_filename(dir, "linkdir", NULL);
	g_assert_cmpint(symlink("sub", path), ==, 0);
	g_clear_pointer(&path, g_free);
	path = g_build_filename(dir, "fifo", NULL);
	g_assert_cmpint(mkfifo(path, 0644), ==, 0);
	g_clear_pointer(&path, g_free);
	path = g_build_filename(dir, "hard", NULL);
	g_assert_cmpint(link(file, path), ==, 0);

	refused("shadow", ENGINE_ERROR_INVALID, "symbolic link");
	refused("linkdir/file", ENGINE_ERROR_INVALID, "link");
	refused("fifo", ENGINE_ERROR_INVALID, "not a regular file");
	refused("hard", ENGINE_ERROR_INVALID, "hard links");
	refused("sub", ENGINE_ERROR_INVALID, "not a regular file");
	refused("big", ENGINE_ERROR_LIMIT, "over the cap");
	refused("sub/../big", ENGINE_ERROR_INVALID, "'..' refused");
	refused("missing", ENGINE_ERROR_NOT_FOUND, "No such file");
	refused("/etc/passwd", ENGINE_ERROR_INVALID, "not a relative path");
}

static void test_read_and_copy(void)
{
	g_autofree char *src = g_build_filename(dir, "good", NULL);
	g_autofree char *dest = g_build_filename(testlib_scratch(), "copy", NULL);
	g_autofree char *text = NULL;
	g_autofree char *copied = NULL;
	g_autoptr(GError) error = NULL;
	struct stat st;
	gsize len;

	g_assert_true(g_file_set_contents(src, "line one\nline two\n", -1, NULL));
	g_assert_true(hostile_read(&text, &len, dir, "good", 1024, &error));
	g_assert_no_error(error);
	g_assert_cmpstr(text, ==, "line one\nline two\n");
	g_assert_cmpuint(len, ==, 18);
	g_assert_true(hostile_is_file(dir, "good"));
	g_assert_true(hostile_copy(dir, "good", 1024, dest, 0640, &error));
	g_assert_no_error(error);
	g_assert_true(g_file_get_contents(dest, &copied, NULL, NULL));
	g_assert_cmpstr(copied, ==, text);
	g_assert_cmpint(stat(dest, &st), ==, 0);
	g_assert_cmpint(st.st_mode & 0777, ==, 0640);
	/* Refused copies leave nothing behind, not even a temporary file. */
	g_assert_false(hostile_copy(dir, "good", 4, dest, 0640, &error));
	g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_LIMIT);
	{
		g_autoptr(GDir) d = g_dir_open(testlib_scratch(), 0, NULL);
		const char *name;

		while ((name = g_dir_read_name(d)))
			g_assert_false(g_str_has_prefix(name, "copy.tmp-"));
	}
}

/* Makes @rel below @root: a directory when it ends in '/', else a file with @text. */
static void make_entry(const char *root, const char *rel, const char *text, mode_t mode)
{
	g_autofree char *path = g_build_filename(root, rel, NULL);

	if (g_str_has_suffix(rel, "/")) {
		g_assert_cmpint(g_mkdir_with_parents(path, 0755), ==, 0);
		return;
	}
	{
		g_autofree char *parent = g_path_get_dirname(path);

		g_assert_cmpint(g_mkdir_with_parents(parent, 0755), ==, 0);
	}
	g_assert_true(g_file_set_contents(path, text, -1, NULL));
	g_assert_cmpint(chmod(path, mode), ==, 0);
}

static const struct hostile_tree_caps caps = { .max_files = 100, .max_depth = 4,
					       .max_bytes = 4096 };

/* A tree copy refused for @why; nothing is left at @dest or beside it. */
static void tree_refused(const char *top, int code, const char *why)
{
	g_autofree char *dest = g_build_filename(testlib_scratch(), "tree-refused", NULL);
	g_autoptr(GError) error = NULL;

	g_assert_false(hostile_copy_tree(dir, top, dest, &caps, &error));
	g_assert_error(error, ENGINE_ERROR, code);
	g_test_message("%s: %s", top, error->message);
	g_assert_nonnull(strstr(error->message, why));
	g_assert_false(g_file_test(dest, G_FILE_TEST_EXISTS));
	{
		g_autoptr(GDir) d = g_dir_open(testlib_scratch(), 0, NULL);
		const char *name;

		while ((name = g_dir_read_name(d)))
			g_assert_false(g_str_has_prefix(name, "tree-refused.tmp-"));
	}
}

static void test_tree(void)
{
	g_autofree char *dest = g_build_filename(testlib_scratch(), "tree-copy", NULL);
	g_autofree char *path = NULL;
	g_autofree char *text = NULL;
	g_autofree char *blob = g_strnfill(3000, 'x');
	g_autoptr(GError) error = NULL;
	struct stat st;

	/* A good tree: the executable bit kept, nothing else of the modes (group write). */
	make_entry(dir, "t-kst/vm/", NULL, 0);
	make_entry(dir, "t-kst/run_kselftest.sh", "#!/bin/sh\n", 0775);
	make_entry(dir, "t-kst/vm/settings", "timeout=45\n", 0664);
	make_entry(dir, "t-kst/vm/map_fixed_noreplace", "ELF", 0775);
	make_entry(dir, "t-kst/empty/", NULL, 0);
	g_assert_true(hostile_copy_tree(dir, "t-kst", dest, &caps, &error));
	g_assert_no_error(error);
	path = g_build_filename(dest, "vm", "map_fixed_noreplace", NULL);
	g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
	g_assert_cmpstr(text, ==, "ELF");
	g_assert_cmpint(stat(path, &st), ==, 0);
	g_assert_cmpint(st.st_mode & 07777, ==, 0755);
	g_clear_pointer(&path, g_free);
	path = g_build_filename(dest, "vm", "settings", NULL);
	g_assert_cmpint(stat(path, &st), ==, 0);
	g_assert_cmpint(st.st_mode & 07777, ==, 0644);
	g_clear_pointer(&path, g_free);
	path = g_build_filename(dest, "empty", NULL);
	g_assert_true(g_file_test(path, G_FILE_TEST_IS_DIR));
	g_clear_pointer(&path, g_free);
	/* Copied again, over the last copy. */
	make_entry(dir, "t-kst/vm/settings", "timeout=30\n", 0644);
	g_assert_true(hostile_copy_tree(dir, "t-kst", dest, &caps, &error));
	g_clear_pointer(&text, g_free);
	path = g_build_filename(dest, "vm", "settings", NULL);
	g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
	g_assert_cmpstr(text, ==, "timeout=30\n");
	g_clear_pointer(&path, g_free);

	/* A link anywhere, at the top or on the way, a FIFO, a hard link. */
	make_entry(dir, "t-symlink/a/", NULL, 0);
	path = g_build_filename(dir, "t-symlink", "a", "shadow", NULL);
	g_assert_cmpint(symlink("/etc/shadow", path), ==, 0);
	g_clear_pointer(&path, g_free);
	tree_refused("t-symlink", ENGINE_ERROR_INVALID, "a symbolic link");
	path = g_build_filename(dir, "t-linktop", NULL);
	g_assert_cmpint(symlink("t-kst", path), ==, 0);
	g_clear_pointer(&path, g_free);
	tree_refused("t-linktop", ENGINE_ERROR_INVALID, "link");
	make_entry(dir, "t-fifo/", NULL, 0);
	path = g_build_filename(dir, "t-fifo", "pipe", NULL);
	g_assert_cmpint(mkfifo(path, 0644), ==, 0);
	g_clear_pointer(&path, g_free);
	tree_refused("t-fifo", ENGINE_ERROR_INVALID, "not a regular file");
	make_entry(dir, "t-hard/one", "x", 0644);
	{
		g_autofree char *one = g_build_filename(dir, "t-hard", "one", NULL);

		path = g_build_filename(dir, "t-hard", "two", NULL);
		g_assert_cmpint(link(one, path), ==, 0);
		g_clear_pointer(&path, g_free);
	}
	tree_refused("t-hard", ENGINE_ERROR_INVALID, "hard links");
	/* Too big (one file, or all together), too deep, too many. */
	make_entry(dir, "t-big/a", blob, 0644);
	make_entry(dir, "t-big/b", blob, 0644);
	tree_refused("t-big", ENGINE_ERROR_LIMIT, "over the cap");
	make_entry(dir, "t-deep/1/2/3/4/5/", NULL, 0);
	tree_refused("t-deep", ENGINE_ERROR_LIMIT, "deeper than");
	make_entry(dir, "t-many/", NULL, 0);
	for (int i = 0; i < 120; i++) {
		g_autofree char *name = g_strdup_printf("t-many/f%d", i);

		make_entry(dir, name, "", 0644);
	}
	tree_refused("t-many", ENGINE_ERROR_LIMIT, "entries");
	tree_refused("t-kst/run_kselftest.sh", ENGINE_ERROR_INVALID, "not a directory");
	tree_refused("t-missing", ENGINE_ERROR_NOT_FOUND, "No such file");
	tree_refused("t-kst/../good", ENGINE_ERROR_INVALID, "'..' refused");
	g_assert_true(hostile_is_dir(dir, "t-kst/vm"));
	g_assert_false(hostile_is_dir(dir, "t-linktop"));
	g_assert_false(hostile_is_dir(dir, "t-kst/run_kselftest.sh"));
}

/*
 * Writing a file of zeroday's among a build's: a link planted at the name
 * is replaced, not followed; a link on the way is refused; NULL removes.
 */
static void test_write(void)
{
	g_autofree char *w = g_build_filename(dir, "w", NULL);
	g_autofree char *target = g_build_filename(dir, "w-target", NULL);
	g_autofree char *planted = g_build_filename(w, "x.o.zd-log", NULL);
	g_autofree char *via = g_build_filename(dir, "w-via", NULL);
	g_autofree char *text = NULL;
	g_autoptr(GError) error = NULL;
	struct stat st;

	g_assert_cmpint(g_mkdir_with_parents(w, 0755), ==, 0);
	g_assert_true(g_file_set_contents(target, "zeroday's own\n", -1, NULL));
	g_assert_cmpint(symlink(target, planted), ==, 0);
	g_assert_true(hostile_write(dir, "w/x.o.zd-log", "kept\n", 5, &error));
	g_assert_no_error(error);
	g_assert_cmpint(lstat(planted, &st), ==, 0);
	g_assert_true(S_ISREG(st.st_mode));
	g_assert_true(g_file_get_contents(planted, &text, NULL, NULL));
	g_assert_cmpstr(text, ==, "kept\n");
	g_clear_pointer(&text, g_free);
	g_assert_true(g_file_get_contents(target, &text, NULL, NULL));
	g_assert_cmpstr(text, ==, "zeroday's own\n");

	g_assert_cmpint(symlink(w, via), ==, 0);
	g_assert_false(hostile_write(dir, "w-via/y.zd-log", "no\n", 3, &error));
	g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID);
	g_clear_error(&error);
	g_assert_false(hostile_write(dir, "w/../escape", "no\n", 3, &error));
	g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID);
	g_clear_error(&error);

	g_assert_true(hostile_write(dir, "w/x.o.zd-log", NULL, 0, &error));
	g_assert_no_error(error);
	g_assert_cmpint(lstat(planted, &st), <, 0);
	/* Removing what is not there is no error. */
	g_assert_true(hostile_write(dir, "w/x.o.zd-log", NULL, 0, &error));
	g_assert_no_error(error);
}

int main(int argc, char **argv)
{
	testlib_init(&argc, &argv);
	dir = testlib_mkdir("build");
	g_test_add_func("/hostile/refused", test_refused);
	g_test_add_func("/hostile/read-and-copy", test_read_and_copy);
	g_test_add_func("/hostile/tree", test_tree);
	g_test_add_func("/hostile/write", test_write);
	return g_test_run();
}
