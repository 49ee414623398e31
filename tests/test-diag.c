/*
 * Diagnostics: parsing real build output shapes, fingerprints that survive
 * moves, and the new-diagnostic comparison with the parent build.
 */
#include "autoconfig.h"

#include <string.h>

#include "engine/diag.h"
#include "tests/testlib.h"

static GPtrArray *parse_file(const char *name)
{
	g_autofree char *path = g_build_filename(ZERODAY_SRCDIR, "tests", "data", "diag", name, NULL);
	g_autofree char *text = NULL;

	g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
	return diag_parse_build(text ? text : "", "/src/net",
				"/var/lib/zeroday/build/net/x86_64-tinyconfig");
}

/* "kind checker file:line:col [function] message" for compact comparison. */
static char *show(const struct diag *d)
{
	return g_strdup_printf("%s %s %s:%u:%u [%s] %s", diag_kind_name(d->kind), d->checker,
			       d->file, d->line, d->column, d->function ? d->function : "",
			       d->message);
}

static gint compare_strings(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void assert_diags(GPtrArray *diags, const char *const *expect)
{
	guint n = g_strv_length((char **)expect);

	for (guint i = 0; i < diags->len; i++) {
		g_autofree char *s = show(diags->pdata[i]);

		g_test_message("got %u: %s", i, s);
		if (i < n)
			g_assert_cmpstr(s, ==, expect[i]);
	}
	g_assert_cmpuint(diags->len, ==, n);
}

static void test_gcc(void)
{
	g_autoptr(GPtrArray) d = parse_file("gcc-parent.log");
	const char *expect[] = {
		"warning compiler include/linux/list.h:10:5 [] \"CONFIG_FOO\" is not defined, evaluates to 0 [-Wundef]",
		"warning compiler kernel/exit.c:120:13 [do_exit] unused variable 'flags' [-Wunused-variable]",
		"warning compiler kernel/exit.c:300:12 [] 'helper' defined but not used [-Wunused-function]",
		"warning compiler kernel/sys.c:55:9 [sys_foo] the frame size of 1040 bytes is larger than 1024 bytes [-Wframe-larger-than=]",
		NULL,
	};

	assert_diags(d, expect);
}

/*
 * clang (LLVM=1): the same line shape as gcc's without "In function"
 * context, notes and "N warnings generated." that are not diagnostics,
 * source ranges after the column, and lld's errors.
 */
static void test_clang(void)
{
	g_autoptr(GPtrArray) d = parse_file("clang.log");
	const char *expect[] = {
		"warning compiler kernel/exit.c:1500:6 [] variable 'zd_unused' set but not used [-Wunused-but-set-variable]",
		"error compiler kernel/fork.c:42:10 [] use of undeclared identifier 'zd_undeclared'",
		"warning compiler kernel/sys.c:3:7 [] comparison of distinct pointer types ('int *' and 'long *') [-Wcompare-distinct-pointer-types]",
		"error ld :0:0 [] undefined symbol: zd_missing",
		"warning ld :0:0 [] kernel/foo.o:(.data+0x0): has non-ABS relocation",
		NULL,
	};

	assert_diags(d, expect);
}

static void test_new_in_child(void)
{
	g_autoptr(GPtrArray) parent = parse_file("gcc-parent.log");
	g_autoptr(GPtrArray) child = parse_file("gcc-child.log");
	g_autoptr(GPtrArray) fresh = diag_new_in(child, parent);
	const char *expect[] = {
		"warning compiler kernel/exit.c:130:13 [do_exit] unused variable 'mask' [-Wunused-variable]",
		"error compiler kernel/sys.c:80:2 [sys_foo] implicit declaration of function 'frob' [-Werror=implicit-function-declaration]",
		NULL,
	};

	/* Moved warnings, a header warning printed more often, and a changed frame size are old. */
	assert_diags(fresh, expect);
	g_assert_true(diag_has_error(child));
	g_assert_false(diag_has_error(parent));
}

static void test_link(void)
{
	g_autoptr(GPtrArray) d = parse_file("link.log");
	const char *expect[] = {
		"warning modpost :0:0 [] vmlinux.o: section mismatch in reference: foo (section: .text) -> bar (section: .init.text)",
		"error modpost :0:0 [] \"undefined_sym\" [drivers/net/dummy.ko] undefined!",
		"error ld init/main.c:0:0 [] undefined reference to `missing_func'",
		"warning ld :0:0 [] arch/x86/boot/compressed/vmlinux has a LOAD segment with RWX permissions",
		NULL,
	};

	assert_diags(d, expect);
}

static void test_checkers(void)
{
	g_autoptr(GPtrArray) d = parse_file("checkers.log");
	const char *expect[] = {
		"warning sparse drivers/foo/bar.c:17:25 [] incorrect type in assignment (different address spaces)",
		"warning compiler drivers/foo/bar.c:30:5 [] no previous prototype for 'bar_init' [-Wmissing-prototypes]",
		"warning coccinelle drivers/foo/baz.c:44:8 [] Unsigned expression compared with zero: len < 0",
		"error coccinelle drivers/foo/qux.c:12:1 [] missing put_device; call of_find_device_by_node on line 10, but without a corresponding object release within this function.",
		"warning compiler drivers/foo/color.c:3:5 [] unused variable 'c' [-Wunused-variable]",
		NULL,
	};

	assert_diags(d, expect);
}

static void test_make_only(void)
{
	g_autoptr(GPtrArray) d = parse_file("make-only.log");
	const char *expect[] = {
		"error make :0:0 [] make[2]: *** No rule to make target 'init/missing.o', needed by 'init/built-in.a'.  Stop.",
		NULL,
	};

	assert_diags(d, expect);
}

/* Kbuild with O= next to the source names files through "../src/". */
static void test_relative_srctree(void)
{
	g_autoptr(GPtrArray) d = diag_parse_build(
		"  CC      kernel/fork.o\n"
		"../src/kernel/fork.c: In function 'copy_process':\n"
		"../src/kernel/fork.c:10:5: warning: unused variable 'x' [-Wunused-variable]\n"
		"include/generated/autoconf.h:3:1: warning: generated\n",
		"/w/src", "/w/build");
	const char *expect[] = {
		"warning compiler kernel/fork.c:10:5 [copy_process] unused variable 'x' [-Wunused-variable]",
		"warning compiler include/generated/autoconf.h:3:1 [] generated",
		NULL,
	};

	assert_diags(d, expect);
}

static void test_fingerprint(void)
{
	g_autofree char *a = diag_fingerprint(DIAG_WARNING, "compiler", "kernel/sys.c", "f",
					      "the frame size of 1040 bytes is larger than 1024 bytes");
	g_autofree char *b = diag_fingerprint(DIAG_WARNING, "compiler", "kernel/sys.c", "f",
					      "the frame size of 2000 bytes is larger than 1024 bytes");
	g_autofree char *c = diag_fingerprint(DIAG_WARNING, "compiler", "kernel/sys.c", "f",
					      "unused variable 'tmp1'");
	g_autofree char *d = diag_fingerprint(DIAG_WARNING, "compiler", "kernel/sys.c", "f",
					      "unused variable 'tmp2'");
	g_autofree char *e = diag_fingerprint(DIAG_ERROR, "compiler", "kernel/sys.c", "f",
					      "unused variable 'tmp2'");
	g_autofree char *f = diag_fingerprint(DIAG_WARNING, "compiler", "kernel/exit.c", "f",
					      "unused variable 'tmp2'");

	g_assert_cmpuint(strlen(a), ==, 16);
	g_assert_cmpstr(a, ==, b);
	g_assert_cmpstr(c, !=, d);
	g_assert_cmpstr(d, !=, e);
	g_assert_cmpstr(d, !=, f);
}

/*
 * BUILD_BUG_ON's and __UNIQUE_ID's names carry __COUNTER__: an assert
 * added earlier in the file renumbers the old one, which stays old. The
 * message shown keeps the number.
 */
static void test_counter_names(void)
{
	static const char *const fmt =
		"/src/net/include/linux/compiler_types.h:357:45: error: call to "
		"'__compiletime_assert_%u' declared with attribute error: BUILD_BUG_ON failed: %s\n";
	g_autofree char *parent_log = g_strdup_printf(fmt, 411, "sizeof(struct s) != 8");
	g_autofree char *added = g_strdup_printf(fmt, 3, "sizeof(struct t) != 4");
	g_autofree char *renumbered = g_strdup_printf(fmt, 412, "sizeof(struct s) != 8");
	g_autofree char *child_log = g_strconcat(added, renumbered, NULL);
	g_autoptr(GPtrArray) parent = diag_parse_build(parent_log, "/src/net", NULL);
	g_autoptr(GPtrArray) child = diag_parse_build(child_log, "/src/net", NULL);
	g_autoptr(GPtrArray) fresh = diag_new_in(child, parent);
	const char *expect[] = {
		"error compiler include/linux/compiler_types.h:357:45 [] call to '__compiletime_assert_3' "
		"declared with attribute error: BUILD_BUG_ON failed: sizeof(struct t) != 4",
		NULL,
	};
	static const char *const same[][2] = {
		{ "comparison of distinct pointer types in '__UNIQUE_ID___x412'",
		  "comparison of distinct pointer types in '__UNIQUE_ID___x97'" },
		{ "'__UNIQUE_ID_ddebug1234' defined but not used",
		  "'__UNIQUE_ID_ddebug7' defined but not used" },
		{ "vmlinux.o: section mismatch in reference: __initcall__kmod_zd__412_1234_zd_init6 "
		  "(section: .initcall6.init) -> zd_init (section: .init.text)",
		  "vmlinux.o: section mismatch in reference: __initcall__kmod_zd__413_1240_zd_init6 "
		  "(section: .initcall6.init) -> zd_init (section: .init.text)" },
	};

	assert_diags(fresh, expect);
	/* What is shown is what gcc printed. */
	g_assert_cmpstr(((struct diag *)child->pdata[1])->message, ==,
			"call to '__compiletime_assert_412' declared with attribute error: "
			"BUILD_BUG_ON failed: sizeof(struct s) != 8");
	for (size_t i = 0; i < G_N_ELEMENTS(same); i++) {
		g_autofree char *a = diag_fingerprint(DIAG_WARNING, "compiler", "x.c", NULL, same[i][0]);
		g_autofree char *b = diag_fingerprint(DIAG_WARNING, "compiler", "x.c", NULL, same[i][1]);

		g_assert_cmpstr(a, ==, b);
	}
	/* Only the counter: another name is another diagnostic. */
	{
		g_autofree char *a = diag_fingerprint(DIAG_WARNING, "compiler", "x.c", NULL,
						      "'__UNIQUE_ID_ddebug12' defined but not used");
		g_autofree char *b = diag_fingerprint(DIAG_WARNING, "compiler", "x.c", NULL,
						      "'__UNIQUE_ID_other12' defined but not used");

		g_assert_cmpstr(a, !=, b);
	}
}

/*
 * objtool, cross linkers (binutils named with the target's prefix), ld's
 * multiple definitions and undefined references with debug info, lld.
 * Offsets (+0x12, (.bss+0x0)) move with unrelated changes: they are not
 * in the fingerprints.
 */
static void test_tools(void)
{
	g_autoptr(GPtrArray) d = parse_file("tools.log");
	const char *expect[] = {
		"warning objtool drivers/x.o:0:0 [] foo+0x12: unreachable instruction",
		"warning objtool drivers/y.o:0:0 [] bar() falls through to next function baz()",
		"warning objtool vmlinux.o:0:0 [] handle_bug+0x6: call to kmsan_unpoison_entry_regs() "
		"leaves .noinstr.text section",
		"error objtool vmlinux.o:0:0 [] qux()+0x1f: unannotated intra-function call",
		"warning ld :0:0 [] orphan section `.zd' from `drivers/x.o' being placed in section `.zd'",
		"error ld :0:0 [] unplaced orphan section `.zd2' from `drivers/x.o'",
		"error ld drivers/b.o:0:0 [] multiple definition of `zd_dup'; drivers/a.o:(.bss+0x0): "
		"first defined here",
		"error ld drivers/c.c:12:0 [] undefined reference to `zd_missing'",
		"error ld :0:0 [] undefined symbol: zd_gone",
		"error ld :0:0 [] duplicate symbol: zd_twice",
		NULL,
	};
	static const char *const moved[][2] = {
		{ "drivers/x.o: warning: objtool: foo+0x12: unreachable instruction\n",
		  "drivers/x.o: warning: objtool: foo+0x2a: unreachable instruction\n" },
		{ "ld: drivers/b.o:(.bss+0x0): multiple definition of `zd_dup'; "
		  "drivers/a.o:(.bss+0x0): first defined here\n",
		  "ld: drivers/b.o:(.bss+0x8): multiple definition of `zd_dup'; "
		  "drivers/a.o:(.bss+0x10): first defined here\n" },
		/* The same linker, natively or cross. */
		{ "ld: warning: orphan section `.zd' from `drivers/x.o' being placed in section `.zd'\n",
		  "aarch64-linux-gnu-ld: warning: orphan section `.zd' from `drivers/x.o' "
		  "being placed in section `.zd'\n" },
	};

	assert_diags(d, expect);
	for (size_t i = 0; i < G_N_ELEMENTS(moved); i++) {
		g_autoptr(GPtrArray) a = diag_parse_build(moved[i][0], NULL, NULL);
		g_autoptr(GPtrArray) b = diag_parse_build(moved[i][1], NULL, NULL);
		g_autoptr(GPtrArray) fresh = diag_new_in(b, a);

		g_test_message("moved %zu", i);
		g_assert_cmpuint(a->len, ==, 1);
		g_assert_cmpuint(fresh->len, ==, 0);
	}
}

static const char *const gcc_jobs[] = { "gcc-job-a.log", "gcc-job-b.log", "gcc-job-c.log" };

static char *read_data(const char *name)
{
	g_autofree char *path = g_build_filename(ZERODAY_SRCDIR, "tests", "data", "diag", name, NULL);
	char *text = NULL;

	g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
	return text ? text : g_strdup("");
}

/* "fingerprint line function" of each of @diags, sorted. */
static char *summary(GPtrArray *diags)
{
	g_autoptr(GPtrArray) lines = g_ptr_array_new_with_free_func(g_free);
	GString *s = g_string_new(NULL);

	for (guint i = 0; i < diags->len; i++) {
		const struct diag *d = diags->pdata[i];

		g_ptr_array_add(lines, g_strdup_printf("%s %s:%u [%s] %s", d->fingerprint, d->file,
						       d->line, d->function ? d->function : "",
						       d->message));
	}
	g_ptr_array_sort(lines, compare_strings);
	for (guint i = 0; i < lines->len; i++)
		g_string_append_printf(s, "%s\n", (const char *)lines->pdata[i]);
	return g_string_free(s, FALSE);
}

/*
 * gcc's "In function" context, from gcc 12's own output: it holds for the
 * diagnostics gcc printed it for, in its file, a header's warning between
 * them included, and not past its compilation.
 */
static void test_function_context(void)
{
	g_autofree char *a = read_data("gcc-job-a.log");
	g_autoptr(GPtrArray) d = diag_parse_build(a, "/src/net", NULL);
	const char *expect[] = {
		"warning compiler include/h.h:5:5 [] \"UNDEFINED_THING\" is not defined, evaluates to 0 [-Wundef]",
		"warning compiler include/h.h:9:13 [inl] unused variable 'unused_in_inl' [-Wunused-variable]",
		/* A macro's warnings are the header's: the function is a.c's. */
		"warning compiler include/h.h:4:26 [] comparison of integer expressions of different "
		"signedness: 'unsigned int' and 'int' [-Wsign-compare]",
		"warning compiler include/h.h:4:40 [] operand of '?:' changes signedness from 'int' to "
		"'unsigned int' due to unsignedness of other operand [-Wsign-compare]",
		/* ...and do not end it. */
		"warning compiler a.c:4:13 [foo] unused variable 'tmp' [-Wunused-variable]",
		"warning compiler include/h.h:16:17 [chk, inlined from foo (a.c)] call to "
		"'__write_overflow_field' declared with attribute warning: detected write beyond size "
		"of field [-Wattribute-warning]",
		NULL,
	};

	assert_diags(d, expect);
	/* The macro's warnings fixed, the unused variable after them is the same one. */
	{
		g_autofree char *fixed = g_strdup(a);
		char *from = strstr(fixed, "./include/h.h:4:26");
		char *to = strstr(fixed, "a.c:4:13: warning");
		g_autoptr(GPtrArray) child = NULL;
		g_autoptr(GPtrArray) fresh = NULL;

		g_assert_nonnull(from);
		g_assert_nonnull(to);
		memmove(from, to, strlen(to) + 1);
		child = diag_parse_build(fixed, "/src/net", NULL);
		fresh = diag_new_in(child, d);
		g_assert_cmpuint(child->len, ==, 4);
		g_assert_cmpuint(fresh->len, ==, 0);
	}
}

/*
 * make -j: the compilers' outputs follow each other in any order, without
 * a kbuild line between them. Each diagnostic is what it is in its own
 * compilation's output (what zeroday keeps beside the object), whatever
 * came before: job c ends in a function of h.h, b and a start with a
 * warning of h.h at top level.
 */
static void test_jobs_interleaved(void)
{
	g_autoptr(GPtrArray) alone = g_ptr_array_new_with_free_func((GDestroyNotify)diag_free);
	g_autofree char *want = NULL;
	static const guint orders[][3] = {
		{ 0, 1, 2 }, { 0, 2, 1 }, { 1, 0, 2 }, { 1, 2, 0 }, { 2, 0, 1 }, { 2, 1, 0 },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(gcc_jobs); i++) {
		g_autofree char *text = read_data(gcc_jobs[i]);
		g_autoptr(GPtrArray) one = diag_parse_build(text, "/src/net", NULL);

		while (one->len)
			g_ptr_array_add(alone, g_ptr_array_steal_index(one, 0));
	}
	want = summary(alone);
	for (size_t o = 0; o < G_N_ELEMENTS(orders); o++) {
		g_autoptr(GString) log = g_string_new("  CC      a.o\n  CC      b.o\n  CC      c.o\n");
		g_autoptr(GPtrArray) all = NULL;
		g_autofree char *got = NULL;

		for (size_t j = 0; j < 3; j++) {
			g_autofree char *text = read_data(gcc_jobs[orders[o][j]]);

			g_string_append(log, text);
		}
		all = diag_parse_build(log->str, "/src/net", NULL);
		got = summary(all);
		g_test_message("order %u %u %u", orders[o][0], orders[o][1], orders[o][2]);
		/* The same records, but a header's warning printed by several jobs is kept once. */
		g_assert_cmpuint(all->len, ==, 8);
		for (guint k = 0; k < all->len; k++) {
			const struct diag *x = all->pdata[k];
			g_autofree char *line = g_strdup_printf("%s %s:%u [%s] %s\n", x->fingerprint,
								x->file, x->line,
								x->function ? x->function : "",
								x->message);

			g_assert_nonnull(strstr(want, line));
		}
	}
}

/*
 * What follows gcc's diagnostics in a log is not in gcc's function: a
 * kbuild line ends a compilation's output (a module's "CC [M]" too), and
 * sparse (C=1, C=2) and kernel-doc (W=1, run after the compiler on the
 * file) print no "In function" of their own.
 */
static void test_context_ends(void)
{
	g_autoptr(GPtrArray) d = diag_parse_build(
		"  CC [M]  drivers/x.o\n"
		"/src/net/drivers/x.c: In function 'foo':\n"
		"/src/net/drivers/x.c:20:6: warning: unused variable 'tmp' [-Wunused-variable]\n"
		"   20 |  int tmp;\n"
		"      |      ^~~\n"
		"/src/net/drivers/x.c:3: warning: Function parameter or member 'x' not described in 'foo'\n"
		"/src/net/drivers/x.c:21:6: warning: unused variable 'tmp2' [-Wunused-variable]\n"
		"  CHECK   /src/net/drivers/x.c\n"
		"/src/net/drivers/x.c:5:6: warning: symbol 'bar' was not declared. Should it be static?\n"
		"  CC [M]  drivers/y.o\n"
		"/src/net/drivers/y.c: In function 'foo':\n"
		"/src/net/drivers/y.c:20:6: warning: unused variable 'tmp' [-Wunused-variable]\n"
		"  CC [M]  drivers/z.o\n"
		"/src/net/drivers/y.c:30:1: warning: 'baz' defined but not used [-Wunused-function]\n"
		"/src/net/drivers/y.c: In function 'foo':\n"
		"/src/net/drivers/y.c:20:6: warning: unused variable 'tmp' [-Wunused-variable]\n"
		"cc1: all warnings being treated as errors\n"
		"/src/net/drivers/y.c:31:1: warning: 'qux' defined but not used [-Wunused-function]\n",
		"/src/net", NULL);
	const char *expect[] = {
		"warning compiler drivers/x.c:20:6 [foo] unused variable 'tmp' [-Wunused-variable]",
		"warning compiler drivers/x.c:3:0 [] Function parameter or member 'x' not described in 'foo'",
		"warning compiler drivers/x.c:21:6 [] unused variable 'tmp2' [-Wunused-variable]",
		"warning sparse drivers/x.c:5:6 [] symbol 'bar' was not declared. Should it be static?",
		"warning compiler drivers/y.c:20:6 [foo] unused variable 'tmp' [-Wunused-variable]",
		"warning compiler drivers/y.c:30:1 [] 'baz' defined but not used [-Wunused-function]",
		"warning compiler drivers/y.c:31:1 [] 'qux' defined but not used [-Wunused-function]",
		NULL,
	};

	assert_diags(d, expect);
}

/*
 * A fortify warning is at a line of fortify-string.h, whoever calls it:
 * the function its call is written in ("inlined from", the first) tells a
 * new caller from an old one. The callers past it depend on what the
 * optimiser inlined and are not part of it.
 */
static void test_inlined(void)
{
	static const char *const warning =
		"/src/net/include/linux/fortify-string.h:583:4: warning: call to "
		"'__write_overflow_field' declared with attribute warning: detected write beyond size "
		"of field (1st parameter); maybe use struct_group()? [-Wattribute-warning]\n";
	g_autofree char *old_call = g_strconcat(
		"In file included from /src/net/include/linux/string.h:253,\n"
		"                 from /src/net/drivers/a.c:5:\n"
		"In function 'fortify_memcpy_chk',\n"
		"    inlined from 'old_fn' at /src/net/drivers/a.c:10:2:\n", warning, NULL);
	g_autofree char *old_inlined = g_strconcat(
		"In file included from /src/net/include/linux/string.h:253,\n"
		"                 from /src/net/drivers/a.c:5:\n"
		"In function 'fortify_memcpy_chk',\n"
		"    inlined from 'old_fn' at /src/net/drivers/a.c:12:2,\n"
		"    inlined from 'a_probe' at /src/net/drivers/a.c:40:9:\n", warning, NULL);
	g_autofree char *new_call = g_strconcat(
		"In file included from /src/net/include/linux/string.h:253,\n"
		"                 from /src/net/drivers/b.c:5:\n"
		"In function 'fortify_memcpy_chk',\n"
		"    inlined from 'new_fn' at /src/net/drivers/b.c:22:2:\n", warning, NULL);
	g_autofree char *child_log = g_strconcat(old_inlined, new_call, NULL);
	g_autoptr(GPtrArray) parent = diag_parse_build(old_call, "/src/net", NULL);
	g_autoptr(GPtrArray) child = diag_parse_build(child_log, "/src/net", NULL);
	g_autoptr(GPtrArray) fresh = diag_new_in(child, parent);
	const char *expect[] = {
		"warning compiler include/linux/fortify-string.h:583:4 [fortify_memcpy_chk, inlined from "
		"new_fn (drivers/b.c)] call to '__write_overflow_field' declared with attribute "
		"warning: detected write beyond size of field (1st parameter); maybe use "
		"struct_group()? [-Wattribute-warning]",
		NULL,
	};

	assert_diags(fresh, expect);
}

/*
 * A NUL byte in a log is a byte like another: the lines after it count,
 * or they would be missing from a parent's log and new in its child's.
 */
static void test_nul(void)
{
	static const char log[] = "garbage\0more\n"
				  "/src/net/a.c:1:1: warning: after a NUL [-Wx]\n"
				  "WARNING: modpost: vmlinux: section mismatch in reference: a -> b\n";
	g_autoptr(GPtrArray) d = diag_parse_build_len(log, sizeof(log) - 1, "/src/net", NULL);
	g_autoptr(GPtrArray) cut = diag_parse_build_len(log, 7, "/src/net", NULL);
	const char *expect[] = {
		"warning compiler a.c:1:1 [] after a NUL [-Wx]",
		"warning modpost :0:0 [] vmlinux: section mismatch in reference: a -> b",
		NULL,
	};

	assert_diags(d, expect);
	g_assert_cmpuint(cut->len, ==, 0);
	/* A NUL within a line reads as '?'. */
	{
		static const char line[] = "/src/net/a.c:2:1: warning: a \0 b\n";
		g_autoptr(GPtrArray) one = diag_parse_build_len(line, sizeof(line) - 1, "/src/net", NULL);

		g_assert_cmpuint(one->len, ==, 1);
		g_assert_cmpstr(((struct diag *)one->pdata[0])->message, ==, "a ? b");
	}
}

static const struct console_case {
	const char *file;
	bool timed_out;
	const char *kind;
	const char *title;
	guint findings;
} console_cases[] = {
	{ "ok.log", false, "boot-ok", "boot-ok", 0 },
	{ "panic-sysrq.log", false, "panic", "Kernel panic - not syncing: sysrq triggered crash", 1 },
	{ "panic-vfs.log", true, "panic",
	  "Kernel panic - not syncing: VFS: Unable to mount root fs on unknown-block(0,0)", 1 },
	{ "warning.log", false, "WARNING", "WARNING in zd_demo_probe", 1 },
	{ "warning-nokallsyms.log", false, "WARNING", "WARNING in init/main.c", 1 },
	/* A bare class is named after its function: the RIP's, else the trace's first frame. */
	{ "null-deref.log", false, "BUG", "BUG: kernel NULL pointer dereference in zd_read", 1 },
	{ "null-deref-trace.log", false, "BUG", "BUG: kernel NULL pointer dereference in zd_write",
	  1 },
	{ "null-deref-arm64.log", false, "BUG",
	  "Unable to handle kernel NULL pointer dereference in zd_open", 1 },
	{ "kasan.log", true, "KASAN", "KASAN: slab-use-after-free in zd_free", 1 },
	{ "ubsan.log", false, "UBSAN", "UBSAN: shift-out-of-bounds in lib/zd_math.c", 1 },
	{ "hung.log", true, "hung-task", "INFO: task hung in kworker/0:1", 1 },
	{ "payload-fail.log", false, "payload-fail", "payload-fail (ltp-syscalls)", 0 },
	{ "timeout.log", true, "timeout", "timeout before the init started", 0 },
	{ "no-output.log", true, "no-output", "no output", 0 },
	/* Real consoles: Debian's 6.1 kernel booted by zeroday under TCG. */
	{ "real-debian-boot-ok.log", false, "boot-ok", "boot-ok", 0 },
	{ "real-debian-payload-fail.log", false, "payload-fail", "payload-fail (flaky)", 0 },
};

static void test_console(void)
{
	for (size_t i = 0; i < G_N_ELEMENTS(console_cases); i++) {
		const struct console_case *c = &console_cases[i];
		g_autofree char *path = g_build_filename(ZERODAY_SRCDIR, "tests", "data", "console",
							 c->file, NULL);
		g_autofree char *text = NULL;
		struct console_result r;

		g_test_message("console %s", c->file);
		g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
		diag_console_classify(&r, text, c->timed_out, false);
		g_assert_cmpstr(diag_console_kind_name(r.kind), ==, c->kind);
		g_assert_cmpstr(r.title, ==, c->title);
		g_assert_cmpuint(r.findings->len, ==, c->findings);
		g_assert_cmpuint(strlen(r.fingerprint), ==, 16);
		console_result_clear(&r);
	}
}

/* The same crash in another run: other PIDs, lines, offsets; one fingerprint. */
static void test_console_fingerprint(void)
{
	g_autofree char *a_path = g_build_filename(ZERODAY_SRCDIR, "tests", "data", "console",
						   "warning.log", NULL);
	g_autofree char *b_path = g_build_filename(ZERODAY_SRCDIR, "tests", "data", "console",
						   "warning-rerun.log", NULL);
	g_autofree char *a = NULL, *b = NULL;
	struct console_result ra, rb, rt, ri;

	g_assert_true(g_file_get_contents(a_path, &a, NULL, NULL));
	g_assert_true(g_file_get_contents(b_path, &b, NULL, NULL));
	diag_console_classify(&ra, a, false, false);
	diag_console_classify(&rb, b, false, false);
	g_assert_cmpstr(ra.fingerprint, ==, rb.fingerprint);
	g_assert_nonnull(strstr(((struct console_finding *)ra.findings->pdata[0])->excerpt,
				"RIP: 0010:zd_demo_probe+0x1c/0x40\n"));
	/* One class, two functions: two bugs, not one; one function, other addresses: one. */
	{
		static const char *const fmt =
			"[    2.5] BUG: kernel NULL pointer dereference, address: %s\n"
			"[    2.6] RIP: 0010:%s+0x12/0x30\n";
		g_autofree char *x = g_strdup_printf(fmt, "0000000000000008", "zd_read");
		g_autofree char *y = g_strdup_printf(fmt, "0000000000000010", "zd_read");
		g_autofree char *z = g_strdup_printf(fmt, "0000000000000008", "zd_write");
		struct console_result rx, ry, rz;

		diag_console_classify(&rx, x, true, false);
		diag_console_classify(&ry, y, true, false);
		diag_console_classify(&rz, z, true, false);
		g_assert_cmpstr(rx.fingerprint, ==, ry.fingerprint);
		g_assert_cmpstr(rx.fingerprint, !=, rz.fingerprint);
		console_result_clear(&rx);
		console_result_clear(&ry);
		console_result_clear(&rz);
	}
	/* The last line reached is kept for timeouts. */
	diag_console_classify(&rt, "[    1.0] Probing EDD (edd=off to disable)... ok\n", true, false);
	g_assert_cmpstr(rt.last_line, ==, "Probing EDD (edd=off to disable)... ok");
	/* Infrastructure failures are never the kernel's. */
	diag_console_classify(&ri, a, false, true);
	g_assert_cmpstr(diag_console_kind_name(ri.kind), ==, "infra-error");
	console_result_clear(&ra);
	console_result_clear(&rb);
	console_result_clear(&rt);
	console_result_clear(&ri);
}

/*
 * Logs are bytes, GRegex reads UTF-8: a stray byte is read as U+FFFD.
 * Found by tests/fuzz/fuzz-console (PCRE's JIT crashed on the panic line).
 */
static void test_invalid_utf8(void)
{
	g_autoptr(GPtrArray) diags = diag_parse_build("a.c:1:2: error: bad \xff byte\n", NULL,
						      NULL);
	struct console_result r;

	diag_console_classify(&r, "Kernel panic - not syncing: \xff" "e\n", false, false);
	g_assert_cmpstr(diag_console_kind_name(r.kind), ==, "panic");
	g_assert_cmpstr(r.title, ==, "Kernel panic - not syncing: \xef\xbf\xbd" "e");
	console_result_clear(&r);
	g_assert_cmpuint(diags->len, ==, 1);
	g_assert_cmpstr(((struct diag *)diags->pdata[0])->message, ==,
			"bad \xef\xbf\xbd byte");
}

/* The console: KUnit at boot and a payload's KTAP, each test a result, failures findings. */
static void test_console_tests(void)
{
	g_autofree char *log = g_strconcat(
		"[    0.500000] Linux version 6.1.0\n",
		"[    1.000000] ", "TAP version 14\n[    1.000000] 1..2\n",
		"[    1.000001]     # Subtest: example\n[    1.000002]     1..3\n"
		"[    1.000003]     ok 1 - example_simple_test\n"
		"[    1.000004]     ok 2 - example_skip_test # SKIP skipped\n"
		"[    1.000005]     # example_fail: EXPECTATION FAILED at x.c:30\n"
		"[    1.000006]     Expected 1 == 2, but\n"
		"[    1.000007]     not ok 3 - example_fail\n"
		"[    1.000008] not ok 1 - example\n"
		"[    1.000009]     # Subtest: cmdline\n[    1.000010]     1..1\n"
		"[    1.000011]     ok 1 - cmdline_test_range\n[    1.000012] ok 2 - cmdline\n",
		"ZERODAY-BOOT-START\n",
		"ZERODAY-PAYLOAD-START fs-stress\n",
		"TAP version 13\n1..2\nok 1 ext4\n# xfs_repair: found corruption\nnot ok 2 xfs\n",
		"ZERODAY-PAYLOAD-END fs-stress rc=0\n",
		"ZERODAY-PAYLOAD-START smoke\nZERODAY-PAYLOAD-END smoke rc=0\n",
		"ZERODAY-BOOT-END\n", NULL);
	struct console_result r;
	const struct console_finding *xfs;
	struct console_result *runs[] = { &r, &r };
	g_autoptr(GPtrArray) tally = NULL;

	diag_console_classify(&r, log, false, false);
	g_assert_cmpuint(r.tests->len, ==, 6);
	g_assert_cmpuint(r.passed, ==, 3);
	g_assert_cmpuint(r.failed, ==, 2);
	g_assert_cmpuint(r.skipped, ==, 1);
	g_assert_true(r.ended);
	g_assert_cmpstr(((struct ktap_test *)r.tests->pdata[2])->name, ==, "kunit/example/example_fail");
	g_assert_cmpstr(((struct ktap_test *)r.tests->pdata[5])->name, ==, "fs-stress/xfs");
	/* The first failed test is the verdict; the other is a finding too. */
	g_assert_cmpint(r.kind, ==, CONSOLE_TEST_FAIL);
	g_assert_cmpstr(r.title, ==, "kunit/example/example_fail: fail");
	g_assert_cmpuint(r.findings->len, ==, 2);
	xfs = r.findings->pdata[1];
	g_assert_cmpstr(xfs->title, ==, "fs-stress/xfs: fail");
	g_assert_nonnull(strstr(xfs->excerpt, "found corruption"));
	g_assert_true(diag_console_shows(&r, xfs->fingerprint));
	g_assert_false(diag_console_shows(&r, "0123456789abcdef"));
	g_assert_nonnull(strstr(diag_console_excerpt(&r), "Expected 1 == 2"));
	{
		g_autofree char *test = diag_console_test_of(xfs->title);

		g_assert_cmpstr(test, ==, "fs-stress/xfs");
	}
	/* Each failed test counts in the tally, once per boot. */
	tally = diag_console_tally(runs, 2);
	g_assert_cmpuint(tally->len, ==, 2);
	g_assert_cmpuint(((struct console_tally *)tally->pdata[1])->failures, ==, 2);
	g_assert_cmpstr(((struct console_tally *)tally->pdata[1])->title, ==, "fs-stress/xfs: fail");
	console_result_clear(&r);
}

/* A payload judged by its KTAP results is not a failed payload; one without them is. */
static void test_payload_status(void)
{
	struct console_result r;

	diag_console_classify(&r,
			      "ZERODAY-BOOT-START\nZERODAY-PAYLOAD-START t\nTAP version 13\n1..1\n"
			      "ok 1 a\nZERODAY-PAYLOAD-END t rc=1\nZERODAY-BOOT-END\n", false, false);
	g_assert_cmpint(r.kind, ==, CONSOLE_BOOT_OK);
	console_result_clear(&r);
	diag_console_classify(&r,
			      "ZERODAY-BOOT-START\nZERODAY-PAYLOAD-START t\nno ktap\n"
			      "ZERODAY-PAYLOAD-END t rc=1\nZERODAY-BOOT-END\n", false, false);
	g_assert_cmpint(r.kind, ==, CONSOLE_PAYLOAD_FAIL);
	g_assert_cmpstr(r.title, ==, "payload-fail (t)");
	console_result_clear(&r);
	/* A kernel report comes first, whatever the tests said. */
	diag_console_classify(&r,
			      "ZERODAY-BOOT-START\nZERODAY-PAYLOAD-START t\nTAP version 13\n1..1\n"
			      "[ 3.0] WARNING: possible circular locking dependency detected\n"
			      "not ok 1 a\nZERODAY-PAYLOAD-END t rc=0\nZERODAY-BOOT-END\n", false, false);
	g_assert_cmpint(r.kind, ==, CONSOLE_WARNING);
	g_assert_cmpstr(r.title, ==, "WARNING: possible circular locking dependency");
	g_assert_cmpuint(r.failed, ==, 1);
	console_result_clear(&r);
}

int main(int argc, char **argv)
{
	testlib_init(&argc, &argv);
	g_test_add_func("/diag/gcc", test_gcc);
	g_test_add_func("/diag/clang", test_clang);
	g_test_add_func("/diag/new-in-child", test_new_in_child);
	g_test_add_func("/diag/link", test_link);
	g_test_add_func("/diag/checkers", test_checkers);
	g_test_add_func("/diag/make-only", test_make_only);
	g_test_add_func("/diag/relative-srctree", test_relative_srctree);
	g_test_add_func("/diag/fingerprint", test_fingerprint);
	g_test_add_func("/diag/counter-names", test_counter_names);
	g_test_add_func("/diag/tools", test_tools);
	g_test_add_func("/diag/function-context", test_function_context);
	g_test_add_func("/diag/jobs-interleaved", test_jobs_interleaved);
	g_test_add_func("/diag/context-ends", test_context_ends);
	g_test_add_func("/diag/inlined", test_inlined);
	g_test_add_func("/diag/nul", test_nul);
	g_test_add_func("/diag/console", test_console);
	g_test_add_func("/diag/console-fingerprint", test_console_fingerprint);
	g_test_add_func("/diag/invalid-utf8", test_invalid_utf8);
	g_test_add_func("/diag/console-tests", test_console_tests);
	g_test_add_func("/diag/payload-status", test_payload_status);
	return g_test_run();
}
