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

int main(int argc, char **argv)
{
	testlib_init(&argc, &argv);
	dir = testlib_mkdir("build");
	g_test_add_func("/hostile/refused", test_refused);
	g_test_add_func("/hostile/read-and-copy", test_read_and_copy);
	return g_test_run();
}
