/*
 * Boots through real libvirt and QEMU (TCG) with Debian's kernel and
 * zeroday's initramfs: success, a panic from a payload and from the
 * command line, a hang, a failing payload, a 1-in-3 failure, files in
 * a directory QEMU cannot enter, a console log on a full disk, an
 * unreachable libvirt, orphan reaping, and a scratch disk (Debian's
 * virtio modules packed), gone after its boot or its crashed run.
 */
#include "autoconfig.h"

#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "engine/boot.h"
#include "engine/diag.h"
#include "engine/initramfs.h"
#include "tests/testlib.h"

#define URI "qemu:///system"

static char *kernel;
static char *host_id;

static char *payload_path(const char *name)
{
	if (strcmp(name, "smoke") == 0)
		return g_build_filename(ZERODAY_SRCDIR, "engine", "payloads", "smoke", NULL);
	return g_build_filename(ZERODAY_SRCDIR, "tests", "data", "payloads", name, NULL);
}

/* Boots with the named payloads and classifies the console. */
static void boot(struct console_result *r, const char *payload, const char *cmdline,
		 unsigned timeout_s, struct boot_outcome *outcome_out)
{
	static int n;
	g_autofree char *initrd = g_strdup_printf("%s/initrd-%d.gz", testlib_scratch(), ++n);
	g_autofree char *log = g_strdup_printf("%s/console-%d.log", testlib_scratch(), n);
	g_autofree char *smoke = payload_path("smoke");
	g_autofree char *extra = payload ? payload_path(payload) : NULL;
	struct initramfs_payload payloads[] = {
		{ "smoke", smoke, 60 },
		{ payload, extra, 600 },
	};
	struct boot_request req = {
		.kernel = kernel, .initrd = initrd, .cmdline = cmdline, .console_log = log,
		.timeout_s = timeout_s, .memory_mb = 512, .host_id = host_id,
	};
	struct boot_outcome out;
	g_autoptr(GError) error = NULL;
	g_autofree char *text = NULL;

	g_assert_true(initramfs_build(initrd, "/bin/busybox", payloads, payload ? 2 : 1, NULL, &error));
	g_assert_no_error(error);
	g_assert_true(boot_run(&out, URI, &req, &error));
	g_assert_no_error(error);
	if (!g_file_get_contents(log, &text, NULL, NULL))
		text = g_strdup("");
	diag_console_classify(r, text, out.timed_out, out.infra);
	g_test_message("boot %d: %s (%s) in %.1f s%s%s", n, diag_console_kind_name(r->kind), r->title,
		       out.seconds, out.infra ? ": " : "", out.infra ? out.infra_reason : "");
	if (outcome_out)
		*outcome_out = out;
	else
		boot_outcome_clear(&out);
}

static void test_ok(void)
{
	struct console_result r;
	struct boot_outcome out;

	boot(&r, NULL, NULL, 120, &out);
	g_assert_cmpstr(diag_console_kind_name(r.kind), ==, "boot-ok");
	g_assert_false(out.timed_out);
	g_assert_false(out.infra);
	console_result_clear(&r);
	boot_outcome_clear(&out);
}

static void test_sysrq_panic(void)
{
	struct console_result r;

	boot(&r, "sysrq-crash", NULL, 120, NULL);
	g_assert_cmpstr(diag_console_kind_name(r.kind), ==, "panic");
	g_assert_cmpstr(r.title, ==, "Kernel panic - not syncing: sysrq triggered crash");
	console_result_clear(&r);
}

static void test_cmdline_panic(void)
{
	struct console_result r;

	boot(&r, NULL, "rdinit=/nonexistent", 120, NULL);
	g_assert_cmpstr(diag_console_kind_name(r.kind), ==, "panic");
	g_assert_true(g_str_has_prefix(r.title, "Kernel panic - not syncing: "));
	console_result_clear(&r);
}

static void test_hang(void)
{
	struct console_result r;
	struct boot_outcome out;

	boot(&r, "hang", NULL, 30, &out);
	g_assert_true(out.timed_out);
	g_assert_cmpstr(diag_console_kind_name(r.kind), ==, "timeout");
	g_assert_cmpstr(r.title, ==, "timeout after the init started");
	g_assert_nonnull(r.last_line);
	console_result_clear(&r);
	boot_outcome_clear(&out);
}

static void test_payload_fail(void)
{
	struct console_result r;

	boot(&r, "fail", NULL, 120, NULL);
	g_assert_cmpstr(diag_console_kind_name(r.kind), ==, "payload-fail");
	g_assert_cmpstr(r.title, ==, "payload-fail (fail)");
	console_result_clear(&r);
}

static void test_flaky(void)
{
	g_autoptr(GPtrArray) runs = g_ptr_array_new();
	g_autoptr(GPtrArray) tally = NULL;
	struct console_result r[3];

	for (int seed = 1; seed <= 3; seed++) {
		g_autofree char *cmdline = g_strdup_printf("zeroday.seed=%d", seed);

		boot(&r[seed - 1], "flaky", cmdline, 120, NULL);
		g_ptr_array_add(runs, &r[seed - 1]);
	}
	tally = diag_console_tally((struct console_result **)runs->pdata, runs->len);
	g_assert_cmpuint(tally->len, ==, 1);
	if (tally->len == 1) {
		const struct console_tally *t = tally->pdata[0];

		g_assert_cmpstr(t->title, ==, "payload-fail (flaky)");
		g_assert_cmpuint(t->failures, ==, 1);
		g_assert_cmpuint(t->runs, ==, 3);
		g_assert_true(t->intermittent);
	}
	for (int i = 0; i < 3; i++)
		console_result_clear(&r[i]);
}

/*
 * initramfs.sh carries every payload byte for byte: text as it is (even
 * one with a line like the heredoc's end), anything else in base64. A
 * stand-in for usr/gen_init_cpio copies each file the list names.
 */
static void test_initramfs_recipe_files(void)
{
	const char *dir = testlib_scratch();
	g_autofree char *text = g_build_filename(dir, "text", NULL);
	g_autofree char *tricky = g_build_filename(dir, "tricky", NULL);
	g_autofree char *binary = g_build_filename(dir, "binary", NULL);
	g_autofree char *tool = g_build_filename(dir, "build", "usr", "gen_init_cpio", NULL);
	g_autofree char *script = g_build_filename(dir, "initramfs.sh", NULL);
	g_autofree char *usr = g_path_get_dirname(tool);
	g_autofree char *out = g_build_filename(dir, "out", NULL);
	g_autofree char *init_copy = g_build_filename(out, "init", NULL);
	g_autofree char *archive_copy = g_build_filename(out, "archive", NULL);
	g_autofree char *cmd = NULL;
	g_autofree char *recipe = NULL;
	static const char bytes[] = { 0x7f, 'E', 'L', 'F', 0, 1, 2, '\n', 0, (char)0xff };
	struct initramfs_payload payloads[] = {
		{ "text", text, 10 }, { "tricky", tricky, 10 }, { "binary", binary, 10 },
	};
	const char *names[] = { "text", "tricky", "binary" };
	g_autoptr(GError) error = NULL;

	g_assert_true(g_file_set_contents(text, "#!/bin/sh\necho 'it $runs' \\\n", -1, NULL));
	g_assert_true(g_file_set_contents(tricky, "#!/bin/sh\ncat << ZERODAY_EOF\nx\nZERODAY_EOF\n",
					  -1, NULL));
	g_assert_true(g_file_set_contents(binary, bytes, sizeof(bytes), NULL));
	g_assert_cmpint(g_mkdir_with_parents(usr, 0755), ==, 0);
	g_assert_true(g_file_set_contents(
		tool, "#!/bin/sh\n"
		      "while read -r kind dest src rest; do\n"
		      "\t[ \"$kind\" = file ] && cp \"$src\" \"$OUT/$(basename \"$dest\")\"\n"
		      "done < \"$1\"\necho archive\n", -1, NULL));
	g_assert_cmpint(g_chmod(tool, 0755), ==, 0);

	recipe = initramfs_recipe(payloads, G_N_ELEMENTS(payloads), NULL, &error);
	g_assert_no_error(error);
	g_assert_nonnull(strstr(recipe, "echo 'it $runs' \\\n"));  /* readable as it is */
	g_assert_nonnull(strstr(recipe, "base64 -d > \"$dir/payload-tricky\""));
	g_assert_nonnull(strstr(recipe, "base64 -d > \"$dir/payload-binary\""));
	g_assert_null(initramfs_recipe((struct initramfs_payload[]){ { "../x", text, 1 } }, 1, NULL,
				       &error));
	g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID);
	g_clear_error(&error);

	g_assert_true(g_file_set_contents(script, recipe, -1, NULL));
	g_assert_cmpint(g_mkdir_with_parents(out, 0755), ==, 0);
	cmd = g_strdup_printf("cd '%s' && OUT=out BUSYBOX=/bin/busybox sh initramfs.sh build "
			      "| gzip -dc > out/archive", dir);
	g_assert_cmpint(system(cmd), ==, 0);
	for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
		g_autofree char *want = NULL;
		g_autofree char *got = NULL;
		g_autofree char *copy = g_build_filename(out, names[i], NULL);
		gsize want_len, got_len;

		g_assert_true(g_file_get_contents(payloads[i].path, &want, &want_len, NULL));
		g_assert_true(g_file_get_contents(copy, &got, &got_len, NULL));
		g_assert_cmpmem(got, got_len, want, want_len);
	}
	{
		g_autofree char *init = NULL;
		g_autofree char *archive = NULL;

		g_assert_true(g_file_get_contents(init_copy, &init, NULL, NULL));
		g_assert_nonnull(strstr(init, "ZERODAY-PAYLOAD-START tricky"));
		g_assert_true(g_file_get_contents(archive_copy, &archive, NULL, NULL));
		g_assert_cmpstr(archive, ==, "archive\n");
	}
}

/* The reports' boot line: the same machine and command line as the domain's. */
static void test_reproduce_command(void)
{
	g_autofree char *cmd = boot_reproduce_command(NULL, "build", "arch/x86/boot/bzImage",
						      "initramfs.cpio.gz", NULL);
	g_autofree char *big = boot_reproduce_command("x86_64", "b", "arch/x86/boot/bzImage", NULL,
						      &(struct boot_reproduce_extra){
							      .memory_mb = 1024, .seed = 3 });
	struct boot_request req = { 0 };
	g_autofree char *xml = boot_domain_xml("d", &req, "/k", NULL);

	g_assert_cmpstr(cmd, ==, "qemu-system-x86_64 -machine pc -cpu qemu64 -m 256 -nographic "
				 "-no-reboot -kernel build/arch/x86/boot/bzImage "
				 "-initrd initramfs.cpio.gz -append '" BOOT_CMDLINE
				 " zeroday.seed=1'");
	g_assert_nonnull(strstr(big, " -m 1024 "));
	g_assert_nonnull(strstr(big, " -kernel b/arch/x86/boot/bzImage -append "));
	g_assert_nonnull(strstr(big, " zeroday.seed=3'"));
	g_assert_nonnull(strstr(xml, "<cmdline>" BOOT_CMDLINE " </cmdline>"));
	{
		/* [boot] cmdline's words and the scratch disk, as the boot had them. */
		g_autofree char *fs = boot_reproduce_command(
			"x86_64", "build", "arch/x86/boot/bzImage", "initramfs.cpio.gz",
			&(struct boot_reproduce_extra){ .seed = 4, .cmdline = "TRINITY_SECONDS=10",
							.scratch_mb = 512 });

		g_assert_true(g_str_has_prefix(fs, "truncate -s 512M scratch.img && qemu-system-x86_64 "));
		g_assert_nonnull(strstr(fs, " -initrd initramfs.cpio.gz -drive "
					    "file=scratch.img,format=raw,if=virtio -append "));
		g_assert_nonnull(strstr(fs, " TRINITY_SECONDS=10 zeroday.seed=4'"));
	}
	g_assert_nonnull(strstr(xml, "machine='pc'"));
	g_assert_nonnull(strstr(xml, "<model>qemu64</model>"));
	g_assert_nonnull(strstr(xml, "<features><acpi/></features>"));
}

/* A scratch disk is the domain's vda only when the request asks for one. */
static void test_scratch_xml(void)
{
	struct boot_request none = { 0 };
	struct boot_request some = { .scratch_mb = 64 };
	g_autofree char *without = boot_domain_xml("d", &none, "/k", NULL);
	g_autofree char *with = boot_domain_xml("d", &some, "/k", NULL);
	g_autofree char *vol = boot_scratch_volume("d");

	g_assert_null(strstr(without, "<disk"));
	g_assert_cmpstr(vol, ==, "d.scratch");
	g_assert_nonnull(strstr(with, "<source pool='" BOOT_POOL_NAME "' volume='d.scratch'/>"));
	g_assert_nonnull(strstr(with, "<target dev='vda' bus='virtio'/>"));
	g_assert_nonnull(strstr(with, "<driver name='qemu' type='raw'"));
}

/* virsh's list of the zeroday pool's volumes: a line each, "NAME PATH". */
static char *pool_volumes(void)
{
	const char *argv[] = { "virsh", "-q", "-c", URI, "vol-list", BOOT_POOL_NAME, NULL };
	g_autofree char *out = NULL;
	int status = -1;

	g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH |
				   G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, &out, NULL, &status,
				   NULL));
	g_assert_cmpint(status, ==, 0);
	return g_steal_pointer(&out);
}

/* Whether the pool has a scratch volume of installation host_id. */
static bool scratch_left(void)
{
	g_autofree char *vols = pool_volumes();
	g_autofree char *mark = g_strdup_printf("-%s-", host_id);
	g_auto(GStrv) lines = g_strsplit(vols, "\n", -1);

	for (char **l = lines; *l; l++) {
		if (strstr(*l, mark) && strstr(*l, ".scratch "))
			return true;
	}
	return false;
}

/*
 * Debian's kernel with its virtio modules packed: the payload finds the
 * 64 MiB disk it declared and writes it; after the boot the volume is
 * gone.
 */
static void test_scratch_disk(void)
{
	g_autofree char *initrd = g_build_filename(testlib_scratch(), "initrd-scratch.gz", NULL);
	g_autofree char *log = g_build_filename(testlib_scratch(), "console-scratch.log", NULL);
	g_autofree char *path = payload_path("scratch");
	g_autofree char *modules = initramfs_modules_dir(kernel);
	struct initramfs_payload payloads[] = { { "scratch", path, 60 } };
	struct initramfs_kernel k = { .modules_dir = modules };
	struct initramfs_needs needs;
	struct boot_request req = {
		.kernel = kernel, .initrd = initrd, .console_log = log, .timeout_s = 120,
		.memory_mb = 512, .host_id = host_id,
	};
	struct boot_outcome out;
	struct console_result r;
	g_autoptr(GError) error = NULL;
	g_autofree char *text = NULL;

	g_assert_nonnull(modules);
	g_assert_true(initramfs_needs_read(&needs, path, &error));
	req.scratch_mb = needs.scratch_mb;
	initramfs_needs_release(&needs);
	g_assert_cmpuint(req.scratch_mb, ==, 64);
	g_assert_true(initramfs_build(initrd, "/bin/busybox", payloads, 1, &k, &error));
	g_assert_no_error(error);
	g_assert_true(boot_run(&out, URI, &req, &error));
	g_assert_no_error(error);
	g_assert_true(g_file_get_contents(log, &text, NULL, NULL));
	diag_console_classify(&r, text, out.timed_out, out.infra);
	g_test_message("scratch boot: %s (%s) in %.1f s%s%s", diag_console_kind_name(r.kind),
		       r.title, out.seconds, out.infra ? ": " : "",
		       out.infra ? out.infra_reason : "");
	g_assert_cmpstr(diag_console_kind_name(r.kind), ==, "boot-ok");
	g_assert_nonnull(strstr(text, "scratch: vda 64 MiB"));
	g_assert_false(scratch_left());
	console_result_clear(&r);
	boot_outcome_clear(&out);
}

/*
 * A crashed run's scratch disk (its process is gone) is reaped; a live
 * process's stays until `all`.
 */
static void test_scratch_reap(void)
{
	g_autofree char *dead = g_strdup_printf(BOOT_DOMAIN_PREFIX "99999999-%s-0-1.scratch",
						host_id);
	g_autofree char *live = g_strdup_printf(BOOT_DOMAIN_PREFIX "%d-%s-0-1.scratch",
						(int)getpid(), host_id);
	g_autoptr(GError) error = NULL;
	g_autofree char *vols = NULL;

	for (int i = 0; i < 2; i++) {
		g_autofree char *cmd = g_strdup_printf("virsh -q -c " URI " vol-create-as "
						       BOOT_POOL_NAME " %s 1M --format raw",
						       i ? live : dead);
		int status = -1;

		g_assert_true(g_spawn_command_line_sync(cmd, NULL, NULL, &status, NULL));
		g_assert_cmpint(status, ==, 0);
	}
	g_assert_cmpint(boot_reap(URI, host_id, false, &error), >=, 0);
	g_assert_no_error(error);
	vols = pool_volumes();
	g_assert_null(strstr(vols, dead));
	g_assert_nonnull(strstr(vols, live));
	g_assert_cmpint(boot_reap(URI, host_id, true, &error), >=, 0);
	g_assert_false(scratch_left());
}

/* arm64 and riscv: their QEMU, the virt machine (a device tree, no ACPI), their console. */
static void test_arches(void)
{
	g_autofree char *arm = boot_reproduce_command("arm64", "build", "arch/arm64/boot/Image",
						      "initramfs.cpio.gz",
						      &(struct boot_reproduce_extra){ .seed = 2 });
	g_autofree char *rv = boot_reproduce_command("riscv", "build", "arch/riscv/boot/Image",
						     NULL, &(struct boot_reproduce_extra){ .seed = 2 });
	struct boot_request arm_req = { .arch = "arm64" };
	struct boot_request rv_req = { .arch = "riscv", .cmdline = "quiet" };
	g_autofree char *arm_xml = boot_domain_xml("d", &arm_req, "/k", "/i");
	g_autofree char *rv_xml = boot_domain_xml("d", &rv_req, "/k", NULL);

	g_assert_cmpstr(arm, ==, "qemu-system-aarch64 -machine virt -cpu cortex-a57 -m 256 "
				 "-nographic -no-reboot -kernel build/arch/arm64/boot/Image "
				 "-initrd initramfs.cpio.gz -append 'console=ttyAMA0 earlycon "
				 BOOT_CMDLINE_ARGS " zeroday.seed=2'");
	g_assert_cmpstr(rv, ==, "qemu-system-riscv64 -machine virt -m 256 -nographic -no-reboot "
				"-kernel build/arch/riscv/boot/Image -append 'console=ttyS0 earlycon "
				BOOT_CMDLINE_ARGS " zeroday.seed=2'");
	g_assert_nonnull(strstr(arm_xml, "<type arch='aarch64' machine='virt'>hvm</type>"));
	g_assert_nonnull(strstr(arm_xml, "<model>cortex-a57</model>"));
	g_assert_nonnull(strstr(arm_xml, "<cmdline>console=ttyAMA0 earlycon " BOOT_CMDLINE_ARGS
					 " </cmdline>"));
	g_assert_null(strstr(arm_xml, "acpi"));
	g_assert_nonnull(strstr(rv_xml, "<type arch='riscv64' machine='virt'>hvm</type>"));
	g_assert_null(strstr(rv_xml, "<cpu"));
	g_assert_nonnull(strstr(rv_xml, "<cmdline>console=ttyS0 earlycon " BOOT_CMDLINE_ARGS
					" quiet</cmdline>"));
	g_assert_null(boot_arch_find("arm"));
	g_assert_null(boot_arch_find(NULL));
	g_assert_cmpstr(boot_arch_find("i386")->userland, ==, "i386");
	{
		struct utsname u;

		g_assert_cmpint(uname(&u), ==, 0);
		g_assert_true(boot_arch_native(boot_arch_find("x86_64")) ==
			      (strcmp(u.machine, "x86_64") == 0));
		g_assert_false(boot_arch_native(boot_arch_find("i386")));
	}
}

/*
 * What the local libvirtd says it boots: x86_64 and, with Debian's
 * qemu-system-arm and qemu-system-misc, aarch64 and riscv64 under TCG.
 */
static void test_host_support(void)
{
	static const char *const arches[] = { "x86_64", "arm64", "riscv" };
	g_autoptr(GError) error = NULL;
	enum boot_support support;

	for (size_t i = 0; i < G_N_ELEMENTS(arches); i++) {
		g_assert_true(boot_host_support(URI, boot_arch_find(arches[i]),
						&support, &error));
		g_assert_no_error(error);
		g_assert_cmpint(support, !=, BOOT_SUPPORT_NONE);
	}
	g_assert_false(boot_host_support("qemu+tcp://127.0.0.1:1/system", boot_arch_find("arm64"),
					 &support, &error));
	g_assert_nonnull(error);
	g_assert_cmpint(support, ==, BOOT_SUPPORT_NONE);
}

/* The arch of an image, from its boot header; anything else is none. */
static void test_arch_of_image(void)
{
	g_autofree char *x86 = g_build_filename(testlib_scratch(), "bzImage", NULL);
	g_autofree char *arm = g_build_filename(testlib_scratch(), "Image-arm64", NULL);
	g_autofree char *rv = g_build_filename(testlib_scratch(), "Image-riscv", NULL);
	g_autofree char *junk = g_build_filename(testlib_scratch(), "junk", NULL);
	char head[0x300] = { 0 };

	memcpy(head + 0x202, "HdrS", 4);
	g_assert_true(g_file_set_contents(x86, head, sizeof(head), NULL));
	memset(head, 0, sizeof(head));
	memcpy(head + 56, "ARM\x64", 4);
	g_assert_true(g_file_set_contents(arm, head, sizeof(head), NULL));
	memset(head, 0, sizeof(head));
	memcpy(head + 56, "RSC\x05", 4);
	g_assert_true(g_file_set_contents(rv, head, sizeof(head), NULL));
	g_assert_true(g_file_set_contents(junk, "MZ", 2, NULL));
	g_assert_cmpstr(boot_arch_of_image(x86), ==, "x86_64");
	g_assert_cmpstr(boot_arch_of_image(arm), ==, "arm64");
	g_assert_cmpstr(boot_arch_of_image(rv), ==, "riscv");
	g_assert_null(boot_arch_of_image(junk));
	g_assert_null(boot_arch_of_image("/nonexistent"));
}

/* The installation id: 12 hex digits, the same for the same directory, another for another. */
static void test_host_id(void)
{
	g_autofree char *dir = testlib_mkdir("id");
	g_autofree char *again = g_build_filename(dir, "..", "id", NULL);
	g_autofree char *a = boot_host_id(dir);
	g_autofree char *b = boot_host_id(again);
	g_autofree char *c = boot_host_id(testlib_scratch());
	g_autofree char *d = boot_host_id(NULL);

	g_assert_cmpuint(strlen(a), ==, 12);
	g_assert_cmpuint(strspn(a, "0123456789abcdef"), ==, 12);
	g_assert_cmpstr(a, ==, b);
	g_assert_cmpstr(a, !=, c);
	g_assert_cmpstr(a, !=, d);
}

/*
 * QEMU never opens a file of zeroday's: the initrd and the console log in
 * a directory only root may enter, and the boot works.
 */
static void test_private_dir(void)
{
	g_autofree char *dir = testlib_mkdir("private");
	g_autofree char *initrd = g_build_filename(dir, "initrd.gz", NULL);
	g_autofree char *log = g_build_filename(dir, "console.log", NULL);
	g_autofree char *smoke = payload_path("smoke");
	struct initramfs_payload payloads[] = { { "smoke", smoke, 60 } };
	struct boot_request req = { .kernel = kernel, .initrd = initrd, .console_log = log,
				    .timeout_s = 120, .memory_mb = 256, .host_id = host_id };
	struct boot_outcome out;
	struct console_result r;
	g_autoptr(GError) error = NULL;
	g_autofree char *text = NULL;

	g_assert_cmpint(g_chmod(dir, 0700), ==, 0);
	g_assert_true(initramfs_build(initrd, "/bin/busybox", payloads, 1, NULL, &error));
	g_assert_true(boot_run(&out, URI, &req, &error));
	g_assert_no_error(error);
	g_file_get_contents(log, &text, NULL, NULL);
	diag_console_classify(&r, text ? text : "", out.timed_out, out.infra);
	g_test_message("private dir: %s%s%s", diag_console_kind_name(r.kind),
		       out.infra ? ": " : "", out.infra ? out.infra_reason : "");
	g_assert_cmpstr(diag_console_kind_name(r.kind), ==, "boot-ok");
	console_result_clear(&r);
	boot_outcome_clear(&out);
}

/* A console log that cannot be written whole (a full disk) makes the boot an infra-error. */
static void test_console_disk_full(void)
{
	g_autofree char *dir = testlib_mkdir("full");
	g_autofree char *log = g_build_filename(dir, "console.log", NULL);
	g_autofree char *initrd = g_build_filename(testlib_scratch(), "full.gz", NULL);
	g_autofree char *smoke = payload_path("smoke");
	struct initramfs_payload payloads[] = { { "smoke", smoke, 60 } };
	struct boot_request req = { .kernel = kernel, .initrd = initrd, .console_log = log,
				    .timeout_s = 120, .memory_mb = 256, .host_id = host_id };
	const char *mount[] = { "mount", "-t", "tmpfs", "-o", "size=4k", "zeroday-test", dir, NULL };
	const char *umount[] = { "umount", dir, NULL };
	struct boot_outcome out;
	g_autoptr(GError) error = NULL;
	int status;

	if (!g_spawn_sync(NULL, (char **)mount, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, NULL,
			  &status, NULL) || !g_spawn_check_wait_status(status, NULL)) {
		g_test_skip("cannot mount a tmpfs (not root?)");
		return;
	}
	g_assert_true(initramfs_build(initrd, "/bin/busybox", payloads, 1, NULL, &error));
	g_assert_true(boot_run(&out, URI, &req, &error));
	g_assert_no_error(error);
	g_test_message("full disk: infra=%d %s", out.infra, out.infra ? out.infra_reason : "");
	g_assert_true(out.infra);
	g_assert_nonnull(out.infra_reason);
	if (out.infra_reason)
		g_assert_nonnull(strstr(out.infra_reason, "No space left on device"));
	boot_outcome_clear(&out);
	g_assert_true(g_spawn_sync(NULL, (char **)umount, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
				   NULL, NULL, &status, NULL));
}

static void test_unreachable_libvirt(void)
{
	g_autofree char *log = g_build_filename(testlib_scratch(), "unreachable.log", NULL);
	struct boot_request req = { .kernel = kernel, .console_log = log, .timeout_s = 10 };
	struct boot_outcome out;
	struct console_result r;
	g_autoptr(GError) error = NULL;

	g_assert_true(boot_run(&out, "qemu:///system?socket=/nonexistent/libvirt-sock", &req, &error));
	g_assert_true(out.infra);
	g_assert_nonnull(out.infra_reason);
	diag_console_classify(&r, "", out.timed_out, out.infra);
	g_assert_cmpstr(diag_console_kind_name(r.kind), ==, "infra-error");
	console_result_clear(&r);
	boot_outcome_clear(&out);
}

/*
 * Fault injection: a Unix-socket proxy in front of the real libvirtd that
 * can cut every connection at once, as a dying libvirtd or network would.
 */
struct proxy {
	int listen_fd;
	char *path;
	GThread *thread;
	GMutex lock;
	GPtrArray *fds; /* every open socket, to cut */
	bool stop;
};

struct pipe_pair {
	struct proxy *proxy;
	int from, to;
};

static gpointer pump(gpointer data)
{
	struct pipe_pair *p = data;
	char buf[65536];
	ssize_t n;

	while ((n = read(p->from, buf, sizeof(buf))) > 0) {
		if (write(p->to, buf, n) != n)
			break;
	}
	shutdown(p->to, SHUT_RDWR);
	g_free(p);
	return NULL;
}

static gpointer proxy_accept(gpointer data)
{
	struct proxy *px = data;

	for (;;) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		int c = accept(px->listen_fd, NULL, NULL);
		int s;
		struct pipe_pair *a, *b;

		if (c < 0)
			return NULL;
		s = socket(AF_UNIX, SOCK_STREAM, 0);
		g_strlcpy(sa.sun_path, "/var/run/libvirt/libvirt-sock", sizeof(sa.sun_path));
		if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			close(c);
			close(s);
			continue;
		}
		g_mutex_lock(&px->lock);
		g_ptr_array_add(px->fds, GINT_TO_POINTER(c));
		g_ptr_array_add(px->fds, GINT_TO_POINTER(s));
		g_mutex_unlock(&px->lock);
		a = g_new0(struct pipe_pair, 1);
		b = g_new0(struct pipe_pair, 1);
		*a = (struct pipe_pair){ px, c, s };
		*b = (struct pipe_pair){ px, s, c };
		g_thread_unref(g_thread_new("pump", pump, a));
		g_thread_unref(g_thread_new("pump", pump, b));
	}
}

static struct proxy *proxy_start(void)
{
	struct proxy *px = g_new0(struct proxy, 1);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	px->path = g_build_filename(testlib_scratch(), "libvirt-proxy", NULL);
	px->fds = g_ptr_array_new();
	g_mutex_init(&px->lock);
	px->listen_fd = socket(AF_UNIX, SOCK_STREAM, 0);
	g_strlcpy(sa.sun_path, px->path, sizeof(sa.sun_path));
	g_assert_cmpint(bind(px->listen_fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
	g_assert_cmpint(listen(px->listen_fd, 8), ==, 0);
	px->thread = g_thread_new("proxy", proxy_accept, px);
	return px;
}

/* Cuts every connection and stops accepting. */
static void proxy_cut(struct proxy *px)
{
	shutdown(px->listen_fd, SHUT_RDWR);
	g_mutex_lock(&px->lock);
	for (guint i = 0; i < px->fds->len; i++)
		shutdown(GPOINTER_TO_INT(px->fds->pdata[i]), SHUT_RDWR);
	g_mutex_unlock(&px->lock);
}

struct cut_later {
	struct proxy *px;
	const char *console; /* cut once the guest is inside its payload */
};

static gpointer cut_after(gpointer data)
{
	struct cut_later *c = data;

	/* Mid-boot for sure: the guest is running its payload (at most 5 min). */
	for (int i = 0; i < 3000; i++) {
		g_autofree char *text = NULL;

		if (g_file_get_contents(c->console, &text, NULL, NULL) &&
		    strstr(text, "ZERODAY-PAYLOAD-START hang"))
			break;
		g_usleep(100000);
	}
	proxy_cut(c->px);
	return NULL;
}

static void test_connection_dies(void)
{
	struct proxy *px = proxy_start();
	g_autofree char *uri = g_strdup_printf("qemu+unix:///system?socket=%s", px->path);
	g_autofree char *log = g_build_filename(testlib_scratch(), "dies.log", NULL);
	g_autofree char *initrd = g_build_filename(testlib_scratch(), "dies.gz", NULL);
	g_autofree char *hang = payload_path("hang");
	struct initramfs_payload payloads[] = { { "hang", hang, 600 } };
	struct boot_request req = { .kernel = kernel, .initrd = initrd, .console_log = log,
				    .timeout_s = 300, .memory_mb = 256, .host_id = host_id };
	struct cut_later cut = { px, log };
	struct boot_outcome out;
	struct console_result r;
	g_autoptr(GError) error = NULL;
	g_autofree char *text = NULL;
	GThread *cutter;
	int reaped;

	g_assert_true(initramfs_build(initrd, "/bin/busybox", payloads, 1, NULL, &error));
	cutter = g_thread_new("cut", cut_after, &cut);
	g_assert_true(boot_run(&out, uri, &req, &error));
	g_thread_join(cutter);
	g_test_message("outcome: infra=%d timed_out=%d %s after %.1f s", out.infra, out.timed_out,
		       out.infra_reason ? out.infra_reason : "", out.seconds);
	g_assert_true(out.infra);
	g_assert_false(out.timed_out);
	g_file_get_contents(log, &text, NULL, NULL);
	diag_console_classify(&r, text ? text : "", out.timed_out, out.infra);
	g_assert_cmpstr(diag_console_kind_name(r.kind), ==, "infra-error");
	/* The guest outlived its connection: the reaper ends it. */
	/* Its creator (this process) is alive: not an orphan yet. */
	g_assert_cmpint(boot_reap(URI, host_id, false, &error), ==, 0);
	reaped = boot_reap(URI, host_id, true, &error);
	g_assert_no_error(error);
	g_assert_cmpint(reaped, ==, 1);
	g_assert_cmpint(boot_reap(URI, host_id, true, NULL), ==, 0);
	console_result_clear(&r);
	boot_outcome_clear(&out);
}

int main(int argc, char **argv)
{
	testlib_init(&argc, &argv);
	kernel = testlib_boot_kernel();
	host_id = boot_host_id(testlib_scratch());
	g_test_add_func("/boot/host-id", test_host_id);
	g_test_add_func("/boot/reproduce-command", test_reproduce_command);
	g_test_add_func("/boot/arches", test_arches);
	g_test_add_func("/boot/arch-of-image", test_arch_of_image);
	g_test_add_func("/boot/host-support", test_host_support);
	g_test_add_func("/boot/initramfs-recipe-files", test_initramfs_recipe_files);
	g_test_add_func("/boot/scratch-xml", test_scratch_xml);
	g_test_add_func("/boot/ok", test_ok);
	g_test_add_func("/boot/scratch-disk", test_scratch_disk);
	g_test_add_func("/boot/scratch-reap", test_scratch_reap);
	g_test_add_func("/boot/sysrq-panic", test_sysrq_panic);
	g_test_add_func("/boot/cmdline-panic", test_cmdline_panic);
	g_test_add_func("/boot/hang", test_hang);
	g_test_add_func("/boot/payload-fail", test_payload_fail);
	g_test_add_func("/boot/flaky", test_flaky);
	g_test_add_func("/boot/private-dir", test_private_dir);
	g_test_add_func("/boot/console-disk-full", test_console_disk_full);
	g_test_add_func("/boot/unreachable-libvirt", test_unreachable_libvirt);
	g_test_add_func("/boot/connection-dies", test_connection_dies);
	return g_test_run();
}
