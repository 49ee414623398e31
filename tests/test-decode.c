/*
 * Console traces decoded with a vmlinux: an ELF file compiled here with
 * the real gcc from a small source tree laid out as a kernel's
 * (init/main.c with kernel_init, lib/zd.c with the functions of the
 * trace), one function inlined into another; the excerpt made of the
 * addresses the real nm gives, at labels whose lines are known. Then the
 * same without debug information, a symbol the ELF does not have, a
 * module's frame, and vmlinux files that are garbage, too large, absent,
 * a FIFO and a link: never a crash, never a changed line.
 */
#include "autoconfig.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "engine/decode.h"
#include "engine/run.h"
#include "tests/testlib.h"

static bool sandbox; /* whether the sandbox works here */
static char *tree;   /* the source tree */
static char *elf;    /* built from it with -g */
static char *bare;   /* built from it without debug information */

/*
 * lib/zd.c. The labels mark addresses whose lines the test knows: a
 * label emits no code, so it is at the first instruction of the next
 * statement (lines 6 and 13).
 */
static const char zd_c[] =
	"int zd_sink;\n"                                                   /* 1 */
	"static inline __attribute__((always_inline)) void zd_helper(int x)\n" /* 2 */
	"{\n"                                                              /* 3 */
	"\tzd_sink += x;\n"                                                /* 4 */
	"\t__asm__ volatile(\".globl zd_mark_helper\\nzd_mark_helper:\");\n" /* 5 */
	"\tzd_sink += 2 * x;\n"                                            /* 6 */
	"}\n"                                                              /* 7 */
	"\n"                                                               /* 8 */
	"__attribute__((noinline)) int zd_inner(int x)\n"                  /* 9 */
	"{\n"                                                              /* 10 */
	"\tzd_sink += x;\n"                                                /* 11 */
	"\t__asm__ volatile(\".globl zd_mark_inner\\nzd_mark_inner:\");\n" /* 12 */
	"\treturn zd_sink;\n"                                              /* 13 */
	"}\n"                                                              /* 14 */
	"\n"                                                               /* 15 */
	"__attribute__((noinline)) int zd_outer(int x)\n"                  /* 16 */
	"{\n"                                                              /* 17 */
	"\tzd_sink += 1;\n"                                                /* 18 */
	"\tzd_helper(x);\n"                                                /* 19 */
	"\treturn zd_inner(x);\n"                                          /* 20 */
	"}\n";                                                             /* 21 */

static const char main_c[] =
	"int zd_outer(int x);\n"
	"\n"
	"int kernel_init(void *unused)\n"
	"{\n"
	"\treturn zd_outer(unused != 0);\n"
	"}\n"
	"\n"
	"int main(void)\n"
	"{\n"
	"\treturn kernel_init(0);\n"
	"}\n";

/* Runs @argv in @dir; fails the test when it fails. Returns its stdout (caller frees). */
static char *run(const char *dir, const char *const *argv)
{
	g_autoptr(GError) error = NULL;
	g_autofree char *err = NULL;
	char *out = NULL;
	int status = 0;

	g_assert_true(g_spawn_sync(dir, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out,
				   &err, &status, &error));
	g_assert_no_error(error);
	if (!g_spawn_check_wait_status(status, NULL))
		g_test_message("%s: %s", argv[0], err);
	g_assert_true(g_spawn_check_wait_status(status, NULL));
	return out;
}

static void setup_fixture(void)
{
	g_autofree char *init = NULL;
	g_autofree char *lib = NULL;
	g_autofree char *path = NULL;
	const char *const with[] = { "gcc", "-g", "-O0", "-o", "zd", "init/main.c", "lib/zd.c",
				     NULL };
	const char *const without[] = { "gcc", "-O0", "-o", "zd-bare", "init/main.c",
					"lib/zd.c", NULL };

	tree = testlib_mkdir("tree");
	init = g_build_filename(tree, "init", NULL);
	lib = g_build_filename(tree, "lib", NULL);
	g_assert_cmpint(g_mkdir(init, 0755), ==, 0);
	g_assert_cmpint(g_mkdir(lib, 0755), ==, 0);
	path = g_build_filename(init, "main.c", NULL);
	g_assert_true(g_file_set_contents(path, main_c, -1, NULL));
	g_free(path);
	path = g_build_filename(lib, "zd.c", NULL);
	g_assert_true(g_file_set_contents(path, zd_c, -1, NULL));
	g_free(run(tree, with));
	g_free(run(tree, without));
	elf = g_build_filename(tree, "zd", NULL);
	bare = g_build_filename(tree, "zd-bare", NULL);
}

/* The address and size nm gives @name in @file. */
static void symbol(const char *file, const char *name, guint64 *address, guint64 *size)
{
	const char *const argv[] = { "nm", "-S", file, NULL };
	g_autofree char *out = run(NULL, argv);
	g_auto(GStrv) lines = g_strsplit(out, "\n", -1);

	for (char **l = lines; *l; l++) {
		g_auto(GStrv) f = g_strsplit(*l, " ", -1);
		guint n = g_strv_length(f);

		if (n >= 3 && strcmp(f[n - 1], name) == 0) {
			*address = g_ascii_strtoull(f[0], NULL, 16);
			*size = n == 4 ? g_ascii_strtoull(f[1], NULL, 16) : 0;
			return;
		}
	}
	g_test_message("no symbol %s in %s", name, file);
	g_assert_not_reached();
}

/* "NAME+0xOFF/0xLEN" for @mark's address in function @name of @file. */
static char *frame(const char *file, const char *name, const char *mark)
{
	guint64 start, size, at = 0, unused;

	symbol(file, name, &start, &size);
	if (mark)
		symbol(file, mark, &at, &unused);
	else
		at = start;
	g_assert_cmpuint(at, >=, start);
	g_assert_cmpuint(at, <, start + size);
	return g_strdup_printf("%s+0x%" G_GINT64_MODIFIER "x/0x%" G_GINT64_MODIFIER "x", name,
			       at - start, size);
}

/* A console excerpt of @file's frames, as an x86 oops and an arm64 one print them. */
static char *excerpt_of(const char *file)
{
	g_autofree char *inner = frame(file, "zd_inner", "zd_mark_inner");
	g_autofree char *outer = frame(file, "zd_outer", "zd_mark_helper");
	g_autofree char *init = frame(file, "kernel_init", NULL);

	return g_strdup_printf("BUG: kernel NULL pointer dereference, address: 0000000000000000\n"
			       "RIP: 0010:%s\n"
			       "Code: 48 89 e5 <0f> 0b\n"
			       "Call Trace:\n"
			       " <TASK>\n"
			       " ? zd_missing+0x1/0x10\n"
			       " %s\n"
			       " %s\n"
			       " zd_module_fn+0x1/0x10 [zd_mod]\n"
			       " </TASK>\n"
			       "pc : %s\n"
			       "lr : %s\n",
			       inner, outer, init, inner, outer);
}

static struct decode_opts opts(void)
{
	struct decode_opts o = { .sandbox = sandbox, .tmp_parent = testlib_scratch() };

	return o;
}

/* Decodes @file's excerpt and checks every frame's lines. */
static void check_lines(const char *file)
{
	g_autofree char *excerpt = excerpt_of(file);
	g_autofree char *inner = frame(file, "zd_inner", "zd_mark_inner");
	g_autofree char *outer = frame(file, "zd_outer", "zd_mark_helper");
	g_autofree char *init = frame(file, "kernel_init", NULL);
	struct decode_opts o = opts();
	g_autoptr(GError) error = NULL;
	g_autofree char *got = decode_trace(excerpt, file, &o, &error);
	g_autofree char *want = g_strdup_printf(
		"BUG: kernel NULL pointer dereference, address: 0000000000000000\n"
		"RIP: 0010:%s lib/zd.c:13\n"
		"Code: 48 89 e5 <0f> 0b\n"
		"Call Trace:\n"
		" <TASK>\n"
		" ? zd_missing+0x1/0x10\n"
		" %s lib/zd.c:6 lib/zd.c:19\n"
		" %s init/main.c:4\n"
		" zd_module_fn+0x1/0x10 [zd_mod]\n"
		" </TASK>\n"
		"pc : %s lib/zd.c:13\n"
		"lr : %s lib/zd.c:6 lib/zd.c:19\n",
		inner, outer, init, inner, outer);

	g_assert_no_error(error);
	g_assert_cmpstr(got, ==, want);
}

static void test_lines(void)
{
	check_lines(elf);
}

/*
 * arm64's and riscv64's kernels: the host's nm and addr2line read any
 * ELF, so the same decoding serves them. The fixture built by Debian's
 * cross compilers, without a C library (it calls none).
 */
static void test_lines_cross(void)
{
	static const char *const compilers[] = { "aarch64-linux-gnu-gcc", "riscv64-linux-gnu-gcc" };

	for (size_t i = 0; i < G_N_ELEMENTS(compilers); i++) {
		g_autofree char *out = g_strdup_printf("zd-%s", compilers[i]);
		g_autofree char *path = g_build_filename(tree, out, NULL);
		const char *const cc[] = { compilers[i], "-g", "-O0", "-nostdlib", "-static",
					   "-Wl,-e,main", "-o", out, "init/main.c", "lib/zd.c",
					   NULL };

		g_test_message("%s", compilers[i]);
		g_free(run(tree, cc));
		check_lines(path);
	}
}

/* Decoding twice changes nothing more: a decoded line names no frame at its end. */
static void test_idempotent(void)
{
	g_autofree char *excerpt = excerpt_of(elf);
	struct decode_opts o = opts();
	g_autoptr(GError) error = NULL;
	g_autofree char *once = decode_trace(excerpt, elf, &o, &error);
	g_autofree char *twice = NULL;

	g_assert_no_error(error);
	g_assert_nonnull(once);
	twice = decode_trace(once, elf, &o, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(twice, ==, once);
}

static void test_no_debug_info(void)
{
	g_autofree char *excerpt = excerpt_of(bare);
	struct decode_opts o = opts();
	g_autoptr(GError) error = NULL;
	g_autofree char *got = decode_trace(excerpt, bare, &o, &error);

	g_assert_no_error(error);
	g_assert_cmpstr(got, ==, excerpt);
}

/* No frame in the excerpt: nothing is run, and no vmlinux is needed. */
static void test_no_frames(void)
{
	const char *excerpt = "Kernel panic - not syncing: VFS: Unable to mount root fs\n";
	struct decode_opts o = opts();
	g_autoptr(GError) error = NULL;
	g_autofree char *got = decode_trace(excerpt, "/nonexistent/vmlinux", &o, &error);

	g_assert_no_error(error);
	g_assert_cmpstr(got, ==, excerpt);
}

/* Symbols the ELF does not have: every line as it was. */
static void test_unknown_symbols(void)
{
	const char *excerpt = "RIP: 0010:zd_nowhere+0x4/0x20\n zd_missing+0x1/0x10\n";
	struct decode_opts o = opts();
	g_autoptr(GError) error = NULL;
	g_autofree char *got = decode_trace(excerpt, elf, &o, &error);

	g_assert_no_error(error);
	g_assert_cmpstr(got, ==, excerpt);
}

/* Decodes the excerpt of @elf with @vmlinux, which must fail with @code. */
static void expect_failure(const char *vmlinux, const struct decode_opts *o, gint code)
{
	g_autofree char *excerpt = excerpt_of(elf);
	g_autoptr(GError) error = NULL;
	g_autofree char *got = decode_trace(excerpt, vmlinux, o, &error);

	g_assert_null(got);
	g_assert_error(error, ENGINE_ERROR, code);
	if (error)
		g_test_message("%s", error->message);
}

static void test_hostile_garbage(void)
{
	g_autofree char *dir = testlib_mkdir("garbage");
	g_autofree char *path = g_build_filename(dir, "vmlinux", NULL);
	g_autofree char *bytes = g_malloc(64 * 1024);
	struct decode_opts o = opts();

	for (gsize i = 0; i < 64 * 1024; i++)
		bytes[i] = (char)g_random_int();
	memcpy(bytes, "\177ELF", 4); /* a header that is not one */
	g_assert_true(g_file_set_contents(path, bytes, 64 * 1024, NULL));
	expect_failure(path, &o, ENGINE_ERROR_FAILED);
}

static void test_hostile_huge(void)
{
	g_autofree char *dir = testlib_mkdir("huge");
	g_autofree char *path = g_build_filename(dir, "vmlinux", NULL);
	struct decode_opts o = opts();
	FILE *f = fopen(path, "w");

	/* Sparse: larger than the cap without taking the disk. */
	g_assert_nonnull(f);
	g_assert_cmpint(ftruncate(fileno(f), (off_t)DECODE_VMLINUX_MAX + 1), ==, 0);
	fclose(f);
	expect_failure(path, &o, ENGINE_ERROR_LIMIT);
	/* A smaller cap, and a real ELF above it. */
	o.vmlinux_max = 1024;
	expect_failure(elf, &o, ENGINE_ERROR_LIMIT);
}

static void test_hostile_absent(void)
{
	struct decode_opts o = opts();
	g_autofree char *path = g_build_filename(testlib_scratch(), "no-such-vmlinux", NULL);

	expect_failure(path, &o, ENGINE_ERROR_NOT_FOUND);
}

static void test_hostile_special(void)
{
	g_autofree char *dir = testlib_mkdir("special");
	g_autofree char *fifo = g_build_filename(dir, "fifo", NULL);
	g_autofree char *link = g_build_filename(dir, "link", NULL);
	struct decode_opts o = opts();

	/* A FIFO would block its reader: refused without opening it for long. */
	g_assert_cmpint(mkfifo(fifo, 0644), ==, 0);
	expect_failure(fifo, &o, ENGINE_ERROR_INVALID);
	/* A link, even to a good ELF, is not followed. */
	g_assert_cmpint(symlink(elf, link), ==, 0);
	expect_failure(link, &o, ENGINE_ERROR_INVALID);
}

/* Lines that look like frames but are not: left alone, never a crash. */
static void test_odd_lines(void)
{
	const char *excerpt =
		"zd_inner+0x/0x20\n"
		"zd_inner+0x1/\n"
		"+0x1/0x2\n"
		"zd_inner+0xffffffffffffffffff/0x1\n"
		"RIP: 0033:0x7f0000001000\n"
		"\n"
		"no newline at the end: zd_outer+0x0";
	struct decode_opts o = opts();
	g_autoptr(GError) error = NULL;
	g_autofree char *got = decode_trace(excerpt, elf, &o, &error);

	g_assert_no_error(error);
	g_assert_cmpstr(got, ==, excerpt);
}

int main(int argc, char **argv)
{
	g_autoptr(GError) error = NULL;
	int rc;

	testlib_init(&argc, &argv);
	sandbox = run_sandbox_available(&error);
	if (!sandbox)
		g_test_message("running nm and addr2line without a sandbox: %s", error->message);
	g_clear_error(&error);
	setup_fixture();
	g_test_add_func("/decode/lines", test_lines);
	g_test_add_func("/decode/lines-cross", test_lines_cross);
	g_test_add_func("/decode/idempotent", test_idempotent);
	g_test_add_func("/decode/no-debug-info", test_no_debug_info);
	g_test_add_func("/decode/no-frames", test_no_frames);
	g_test_add_func("/decode/unknown-symbols", test_unknown_symbols);
	g_test_add_func("/decode/odd-lines", test_odd_lines);
	g_test_add_func("/decode/hostile/garbage", test_hostile_garbage);
	g_test_add_func("/decode/hostile/huge", test_hostile_huge);
	g_test_add_func("/decode/hostile/absent", test_hostile_absent);
	g_test_add_func("/decode/hostile/special", test_hostile_special);
	rc = g_test_run();
	g_free(tree);
	g_free(elf);
	g_free(bare);
	return rc;
}
