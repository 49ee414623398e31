/*
 * engine/boot.c against a libvirt host that shares no files with
 * zeroday: a second libvirtd, started here in its own mount namespace
 * (private tmpfs over /var/lib/libvirt, /var/cache/libvirt,
 * /var/log/libvirt, /run, /boot and the directory that holds this test's
 * state, its own /etc/libvirt), listening on TCP 127.0.0.1 only, used as
 * qemu+tcp://127.0.0.1:PORT/system. A kernel boots there with its
 * console read back through libvirt, its files are uploaded once and
 * reused, and reaping leaves the domains of another installation (and
 * names it cannot read) alone while it ends this installation's orphans.
 */
#include "autoconfig.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "engine/boot.h"
#include "engine/diag.h"
#include "engine/initramfs.h"
#include "tests/testlib.h"

/* The second daemon; skip says why it is not there. */
struct daemon {
	GPid pid;
	int port;
	char *uri;
	char *log;
	char *skip;
};

static struct daemon daemon_;
static char *kernel;
static char *host_id;

/* The mount namespace: every argument is a path, none goes through the shell's parser. */
static const char namespace_script[] =
	"set -e\n"
	"etc=$1; hide=$2; conf=$3\n"
	"mount --bind \"$etc\" /etc/libvirt\n"
	"for d in /var/lib/libvirt /var/cache/libvirt /var/log/libvirt /run /boot \"$hide\"; do\n"
	"	mount -t tmpfs -o mode=0755 zeroday-test \"$d\"\n"
	"done\n"
	/* What a booted host's tmpfiles make: libvirt locks console ptys there. */
	"mkdir -m 0755 /run/lock\n"
	"exec libvirtd --listen -f \"$conf\"\n";

static void die_with_parent(gpointer data)
{
	prctl(PR_SET_PDEATHSIG, SIGTERM);
}

/* Runs virsh against the daemon; returns its stdout, or NULL (logged). */
static char *virsh(const char *const *args)
{
	g_autoptr(GPtrArray) argv = g_ptr_array_new();
	g_autoptr(GError) error = NULL;
	g_autofree char *err = NULL;
	char *out = NULL;
	int status;

	g_ptr_array_add(argv, (char *)"virsh");
	g_ptr_array_add(argv, (char *)"-q");
	g_ptr_array_add(argv, (char *)"-c");
	g_ptr_array_add(argv, daemon_.uri);
	for (const char *const *a = args; *a; a++)
		g_ptr_array_add(argv, (char *)*a);
	g_ptr_array_add(argv, NULL);
	if (!g_spawn_sync(NULL, (char **)argv->pdata, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out,
			  &err, &status, &error) ||
	    !g_spawn_check_wait_status(status, &error)) {
		g_test_message("virsh %s: %s %s", args[0], error->message, err ? err : "");
		g_free(out);
		return NULL;
	}
	return out;
}

/* Whether the daemon accepts connections on its port yet. */
static bool listening(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return ok;
}

static void daemon_start(struct daemon *d)
{
	g_autofree char *dir = testlib_mkdir("remote");
	g_autofree char *etc = g_build_filename(dir, "etc-libvirt", NULL);
	g_autofree char *qemu_conf = g_build_filename(etc, "qemu.conf", NULL);
	g_autofree char *conf = g_build_filename(etc, "libvirtd.conf", NULL);
	g_autofree char *hide = g_path_get_dirname(testlib_scratch());
	g_autofree char *text = NULL;

	d->log = g_build_filename(dir, "libvirtd.log", NULL);
	g_assert_cmpint(g_mkdir_with_parents(etc, 0755), ==, 0);
	/* No virtlogd in the namespace: QEMU's own output goes to a file there. */
	g_assert_true(g_file_set_contents(qemu_conf, "stdio_handler = \"file\"\n", -1, NULL));
	for (int attempt = 0; attempt < 5 && !d->pid; attempt++) {
		g_autofree char *body = NULL;
		const char *argv[] = { "unshare", "--mount", "--propagation", "private", "sh", "-c",
				       namespace_script, "sh", etc, hide,
				       "/etc/libvirt/libvirtd.conf", NULL };
		g_autoptr(GError) error = NULL;
		int log_fd;

		d->port = testlib_free_port();
		body = g_strdup_printf("listen_tls = 0\nlisten_tcp = 1\nlisten_addr = \"127.0.0.1\"\n"
				       "tcp_port = \"%d\"\nauth_tcp = \"none\"\n"
				       "unix_sock_dir = \"/run/libvirt\"\n"
				       "log_outputs = \"3:stderr\"\n", d->port);
		g_assert_true(g_file_set_contents(conf, body, -1, NULL));
		g_free(d->uri);
		d->uri = g_strdup_printf("qemu+tcp://127.0.0.1:%d/system", d->port);
		log_fd = open(d->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		g_assert_cmpint(log_fd, >=, 0);
		if (!g_spawn_async_with_fds("/", (char **)argv, NULL,
					    G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD,
					    die_with_parent, NULL, &d->pid, -1, log_fd, log_fd,
					    &error)) {
			close(log_fd);
			d->skip = g_strdup_printf("cannot run unshare: %s", error->message);
			return;
		}
		close(log_fd);
		/* Listening, or dead (a taken port, no privileges), within 60 s. */
		for (int i = 0; i < 600; i++) {
			int status;

			if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
				g_spawn_close_pid(d->pid);
				d->pid = 0;
				break;
			}
			if (listening(d->port)) {
				const char *args[] = { "uri", NULL };
				g_autofree char *out = virsh(args);

				if (out)
					return;
			}
			g_usleep(100 * 1000);
		}
		if (d->pid) {
			kill(d->pid, SIGKILL);
			waitpid(d->pid, NULL, 0);
			g_spawn_close_pid(d->pid);
			d->pid = 0;
		}
	}
	g_file_get_contents(d->log, &text, NULL, NULL);
	d->skip = g_strdup_printf("the second libvirtd did not start; its log:\n%s",
				  text ? text : "(none)");
}

/* Destroys every domain the daemon runs, then stops it. */
static void daemon_stop(struct daemon *d)
{
	const char *list[] = { "list", "--name", NULL };
	g_autofree char *names = d->pid ? virsh(list) : NULL;
	g_auto(GStrv) lines = names ? g_strsplit(names, "\n", -1) : NULL;

	for (char **l = lines; l && *l; l++) {
		const char *destroy[] = { "destroy", g_strstrip(*l), NULL };
		g_autofree char *out = NULL;

		if (**l)
			out = virsh(destroy);
	}
	if (d->pid) {
		bool gone = false;

		kill(d->pid, SIGTERM);
		for (int i = 0; i < 100 && !gone; i++) {
			gone = waitpid(d->pid, NULL, WNOHANG) == d->pid;
			if (!gone)
				g_usleep(100 * 1000);
		}
		if (!gone) {
			kill(d->pid, SIGKILL);
			waitpid(d->pid, NULL, 0);
		}
		g_spawn_close_pid(d->pid);
		d->pid = 0;
	}
	g_free(d->uri);
	g_free(d->log);
	g_free(d->skip);
}

static bool skipped(void)
{
	if (!daemon_.skip)
		return false;
	g_test_skip(daemon_.skip);
	return true;
}

/* The names of the volumes in the daemon's zeroday pool, one a line. */
static char *volumes(void)
{
	const char *args[] = { "vol-list", "--pool", BOOT_POOL_NAME, NULL };
	char *out = virsh(args);

	return out ? out : g_strdup("");
}

static void boot_smoke(struct console_result *r, struct boot_outcome *out, char **text)
{
	static int n;
	g_autofree char *initrd = g_build_filename(testlib_scratch(), "remote-initrd.gz", NULL);
	g_autofree char *log = g_strdup_printf("%s/remote-console-%d.log", testlib_scratch(), ++n);
	g_autofree char *smoke = g_build_filename(ZERODAY_SRCDIR, "engine", "payloads", "smoke",
						  NULL);
	struct initramfs_payload payloads[] = { { "smoke", smoke, 60 } };
	struct boot_request req = {
		.kernel = kernel, .initrd = initrd, .console_log = log, .host_id = host_id,
		.timeout_s = 300, .memory_mb = 256,
	};
	g_autoptr(GError) error = NULL;

	if (n == 1) {
		g_assert_true(initramfs_build(initrd, "/bin/busybox", payloads, 1, NULL, &error));
		g_assert_no_error(error);
	}
	g_assert_true(boot_run(out, daemon_.uri, &req, &error));
	g_assert_no_error(error);
	if (!g_file_get_contents(log, text, NULL, NULL))
		*text = g_strdup("");
	diag_console_classify(r, *text, out->timed_out, out->infra);
	g_test_message("remote boot %d: %s (%s) in %.1f s%s%s", n, diag_console_kind_name(r->kind),
		       r->title, out->seconds, out->infra ? ": " : "",
		       out->infra ? out->infra_reason : "");
}

static void test_boot(void)
{
	struct console_result r;
	struct boot_outcome out;
	g_autofree char *text = NULL;
	g_autofree char *before = NULL;
	g_autofree char *after = NULL;

	if (skipped())
		return;
	boot_smoke(&r, &out, &text);
	g_assert_false(out.infra);
	g_assert_false(out.timed_out);
	g_assert_cmpstr(diag_console_kind_name(r.kind), ==, "boot-ok");
	/* The console came back whole: the kernel's first line, the init's last. */
	g_assert_nonnull(strstr(text, "Linux version"));
	g_assert_nonnull(strstr(text, "ZERODAY-BOOT-START"));
	g_assert_nonnull(strstr(text, "ZERODAY-PAYLOAD-END smoke rc=0"));
	g_assert_nonnull(strstr(text, "ZERODAY-BOOT-END"));
	console_result_clear(&r);
	boot_outcome_clear(&out);

	/* The kernel and initrd are volumes there, with their markers, and reused. */
	before = volumes();
	g_test_message("volumes:\n%s", before);
	g_assert_nonnull(strstr(before, BOOT_POOL_PATH "/zeroday-"));
	g_assert_nonnull(strstr(before, ".ok"));
	g_clear_pointer(&text, g_free);
	boot_smoke(&r, &out, &text);
	g_assert_cmpstr(diag_console_kind_name(r.kind), ==, "boot-ok");
	after = volumes();
	g_assert_cmpstr(after, ==, before);
	console_result_clear(&r);
	boot_outcome_clear(&out);
}

/* One boot of the kernel with @initrd, its console in @log, run by boot_job_run(). */
struct boot_job {
	const char *initrd;
	char *log;
	struct console_result r;
	struct boot_outcome out;
};

/* Builds an initrd of its own content: the smoke payload and a payload @name saying @padding. */
static char *build_initrd(const char *name, const char *padding)
{
	g_autofree char *smoke = g_build_filename(ZERODAY_SRCDIR, "engine", "payloads", "smoke",
						  NULL);
	g_autofree char *pad = g_strdup_printf("%s/%s.pad", testlib_scratch(), name);
	char *initrd = g_strdup_printf("%s/%s.gz", testlib_scratch(), name);
	struct initramfs_payload payloads[] = { { "smoke", smoke, 60 }, { name, pad, 60 } };
	g_autofree char *script = g_strdup_printf("#!/bin/sh\n# %s\ntrue\n", padding);
	g_autoptr(GError) error = NULL;

	g_assert_true(g_file_set_contents(pad, script, -1, NULL));
	g_assert_cmpint(g_chmod(pad, 0755), ==, 0);
	g_assert_true(initramfs_build(initrd, "/bin/busybox", payloads, 2, NULL, &error));
	g_assert_no_error(error);
	return initrd;
}

static gpointer boot_job_run(gpointer data)
{
	struct boot_job *j = data;
	struct boot_request req = {
		.kernel = kernel, .initrd = j->initrd, .console_log = j->log, .host_id = host_id,
		.timeout_s = 300, .memory_mb = 256,
	};
	g_autofree char *text = NULL;
	g_autoptr(GError) error = NULL;

	g_assert_true(boot_run(&j->out, daemon_.uri, &req, &error));
	g_assert_no_error(error);
	if (!g_file_get_contents(j->log, &text, NULL, NULL))
		text = g_strdup("");
	diag_console_classify(&j->r, text, j->out.timed_out, j->out.infra);
	g_test_message("%s: %s (%s) in %.1f s%s%s", j->log, diag_console_kind_name(j->r.kind),
		       j->r.title, j->out.seconds, j->out.infra ? ": " : "",
		       j->out.infra ? j->out.infra_reason : "");
	return NULL;
}

/* How many lines of `virsh vol-list` name the volume @name exactly. */
static unsigned volume_count(const char *name)
{
	g_autofree char *list = volumes();
	g_auto(GStrv) lines = g_strsplit(list, "\n", -1);
	unsigned n = 0;

	for (char **l = lines; *l; l++) {
		g_auto(GStrv) f = g_strsplit_set(g_strstrip(*l), " ", 2);

		n += f[0] && strcmp(f[0], name) == 0;
	}
	return n;
}

static char *volume_name(const char *path)
{
	g_autofree char *data = NULL;
	g_autofree char *sum = NULL;
	gsize len;

	g_assert_true(g_file_get_contents(path, &data, &len, NULL));
	sum = g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)data, len);
	return g_strconcat("zeroday-", sum, NULL);
}

/* Two boots of a new initrd at once: one uploads it, the other waits for it. */
static void test_concurrent_upload(void)
{
	g_autofree char *initrd = NULL;
	g_autofree char *name = NULL;
	g_autofree char *mark = NULL;
	struct boot_job jobs[2] = { 0 };
	GThread *threads[2];

	if (skipped())
		return;
	initrd = build_initrd("concurrent", "two boots at once");
	name = volume_name(initrd);
	mark = g_strconcat(name, ".ok", NULL);
	for (int i = 0; i < 2; i++) {
		jobs[i].initrd = initrd;
		jobs[i].log = g_strdup_printf("%s/concurrent-%d.log", testlib_scratch(), i);
		threads[i] = g_thread_new("boot", boot_job_run, &jobs[i]);
	}
	for (int i = 0; i < 2; i++) {
		g_thread_join(threads[i]);
		g_assert_cmpstr(diag_console_kind_name(jobs[i].r.kind), ==, "boot-ok");
		console_result_clear(&jobs[i].r);
		boot_outcome_clear(&jobs[i].out);
		g_free(jobs[i].log);
	}
	g_assert_cmpuint(volume_count(name), ==, 1);
	g_assert_cmpuint(volume_count(mark), ==, 1);
}

/*
 * A volume of the initrd's name without its marker, as an upload cut
 * short leaves it, holding the wrong bytes: never booted, replaced.
 */
static void test_abandoned_upload(void)
{
	g_autofree char *initrd = NULL;
	g_autofree char *name = NULL;
	g_autofree char *garbage = g_build_filename(testlib_scratch(), "garbage", NULL);
	struct boot_job job = { 0 };

	if (skipped())
		return;
	initrd = build_initrd("abandoned", "an upload cut short");
	name = volume_name(initrd);
	g_assert_true(g_file_set_contents(garbage, "not an initramfs", -1, NULL));
	{
		const char *create[] = { "vol-create-as", BOOT_POOL_NAME, name, "16", NULL };
		const char *upload[] = { "vol-upload", "--pool", BOOT_POOL_NAME, name, garbage,
					 NULL };
		g_autofree char *a = virsh(create);
		g_autofree char *b = NULL;

		g_assert_nonnull(a);
		b = virsh(upload);
		g_assert_nonnull(b);
	}
	job.initrd = initrd;
	job.log = g_strdup_printf("%s/abandoned.log", testlib_scratch());
	boot_job_run(&job);
	g_assert_false(job.out.infra);
	g_assert_cmpstr(diag_console_kind_name(job.r.kind), ==, "boot-ok");
	g_assert_cmpuint(volume_count(name), ==, 1);
	console_result_clear(&job.r);
	boot_outcome_clear(&job.out);
	g_free(job.log);
}

/* A PID that is not alive on this machine: a child that already exited. */
static int dead_pid(void)
{
	const char *argv[] = { "true", NULL };
	GPid pid;
	int status;

	g_assert_true(g_spawn_async(NULL, (char **)argv, NULL,
				    G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL,
				    &pid, NULL));
	waitpid(pid, &status, 0);
	g_spawn_close_pid(pid);
	g_assert_cmpint(kill(pid, 0), <, 0);
	return pid;
}

/* Starts a transient domain that idles in its firmware (no boot device). */
static bool start_idle(const char *name)
{
	g_autofree char *path = g_strdup_printf("%s/%s.xml", testlib_scratch(), name);
	g_autofree char *xml = g_strdup_printf(
		"<domain type='qemu'><name>%s</name><memory unit='MiB'>32</memory>"
		"<os><type arch='x86_64' machine='pc'>hvm</type></os>"
		"<devices><memballoon model='none'/></devices></domain>\n", name);
	const char *args[] = { "create", path, NULL };
	g_autofree char *out = NULL;

	g_assert_true(g_file_set_contents(path, xml, -1, NULL));
	out = virsh(args);
	return out != NULL;
}

static bool running(const char *name)
{
	const char *args[] = { "domstate", name, NULL };
	g_autofree char *out = virsh(args);

	return out && g_str_has_prefix(out, "running");
}

static void test_reap(void)
{
	int pid = dead_pid();
	g_autofree char *other_id = boot_host_id("/var/lib/zeroday-on-another-machine");
	/* Another installation's, its PID dead here (it lives there). */
	g_autofree char *other = g_strdup_printf(BOOT_DOMAIN_PREFIX "%d-%s-0-0", pid, other_id);
	/* The same with the id first: still nothing of ours. */
	g_autofree char *other2 = g_strdup_printf(BOOT_DOMAIN_PREFIX "%s-%d-0-0", other_id, pid);
	/* A name without a host id (an older zeroday): whose it is cannot be told. */
	g_autofree char *legacy = g_strdup_printf(BOOT_DOMAIN_PREFIX "%d-0-0", pid);
	/* This installation's, its process gone: an orphan. */
	g_autofree char *orphan = g_strdup_printf(BOOT_DOMAIN_PREFIX "%d-%s-0-0", pid, host_id);
	/* This installation's, its process (this test) alive. */
	g_autofree char *alive = g_strdup_printf(BOOT_DOMAIN_PREFIX "%d-%s-0-0", (int)getpid(),
						 host_id);
	g_autoptr(GError) error = NULL;

	if (skipped())
		return;
	g_assert_cmpstr(other_id, !=, host_id);
	g_assert_true(start_idle(other));
	g_assert_true(start_idle(other2));
	g_assert_true(start_idle(legacy));
	g_assert_true(start_idle(orphan));
	g_assert_true(start_idle(alive));
	g_assert_cmpint(boot_reap(daemon_.uri, host_id, false, &error), ==, 1);
	g_assert_no_error(error);
	g_assert_true(running(other));
	g_assert_true(running(other2));
	g_assert_true(running(legacy));
	g_assert_false(running(orphan));
	g_assert_true(running(alive));
	/* All of this installation's, and still nobody else's. */
	g_assert_cmpint(boot_reap(daemon_.uri, host_id, true, &error), ==, 1);
	g_assert_no_error(error);
	g_assert_false(running(alive));
	g_assert_true(running(other));
	g_assert_true(running(other2));
	g_assert_true(running(legacy));
	/* The other installation reaps its own (the id-first name is not of its form). */
	g_assert_cmpint(boot_reap(daemon_.uri, other_id, true, &error), ==, 1);
	g_assert_false(running(other));
	g_assert_true(running(other2));
	g_assert_true(running(legacy));
}

/* Creates volume @name of the pool, @size bytes, on the daemon. */
static void make_volume(const char *name, const char *size)
{
	const char *args[] = { "vol-create-as", BOOT_POOL_NAME, name, size, NULL };
	g_autofree char *out = virsh(args);

	g_assert_nonnull(out);
}

/* Sets the access and modification times of volume @name, in the daemon's namespace. */
static void age_volume(const char *name, const char *when)
{
	g_autofree char *pid = g_strdup_printf("%d", (int)daemon_.pid);
	g_autofree char *path = g_build_filename(BOOT_POOL_PATH, name, NULL);
	const char *argv[] = { "nsenter", "-t", pid, "-m", "touch", "-d", when, path, NULL };
	g_autoptr(GError) error = NULL;
	int status;

	g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
				   NULL, NULL, &status, &error));
	g_assert_no_error(error);
	g_assert_true(g_spawn_check_wait_status(status, &error));
	g_assert_no_error(error);
}

/* A volume name of zeroday's form, "zeroday-SHA256" of @seed (caller frees). */
static char *fake_volume(const char *seed)
{
	g_autofree char *sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256, seed, -1);

	return g_strconcat("zeroday-", sum, NULL);
}

/*
 * Reaping removes the volumes unused for 72 hours (with their markers)
 * and uploads abandoned for an hour; not recent ones, nor volumes that are
 * not zeroday's.
 */
static void test_prune(void)
{
	g_autofree char *old = fake_volume("old");
	g_autofree char *partial = fake_volume("partial");
	g_autofree char *recent = fake_volume("recent");
	g_autofree char *old_mark = g_strconcat(old, ".ok", NULL);
	g_autofree char *recent_mark = g_strconcat(recent, ".ok", NULL);
	g_autoptr(GError) error = NULL;

	if (skipped())
		return;
	make_volume(old, "4096");
	make_volume(old_mark, "0");
	make_volume(partial, "4096");
	make_volume(recent, "4096");
	make_volume(recent_mark, "0");
	make_volume("not-zeroday", "4096");
	age_volume(old, "4 days ago");
	age_volume(partial, "2 hours ago");
	age_volume("not-zeroday", "4 days ago");
	g_assert_cmpint(boot_reap(daemon_.uri, host_id, false, &error), ==, 0);
	g_assert_no_error(error);
	g_assert_cmpuint(volume_count(old), ==, 0);
	g_assert_cmpuint(volume_count(old_mark), ==, 0);
	g_assert_cmpuint(volume_count(partial), ==, 0);
	g_assert_cmpuint(volume_count(recent), ==, 1);
	g_assert_cmpuint(volume_count(recent_mark), ==, 1);
	g_assert_cmpuint(volume_count("not-zeroday"), ==, 1);
}

int main(int argc, char **argv)
{
	int rc;

	testlib_init(&argc, &argv);
	kernel = testlib_boot_kernel();
	host_id = boot_host_id(testlib_scratch());
	if (geteuid() != 0)
		daemon_.skip = g_strdup("a second libvirtd needs root (mount namespace, QEMU)");
	else
		daemon_start(&daemon_);
	if (daemon_.skip)
		g_printerr("# skipping: %s\n", daemon_.skip);
	g_test_add_func("/remote-boot/boot", test_boot);
	g_test_add_func("/remote-boot/concurrent-upload", test_concurrent_upload);
	g_test_add_func("/remote-boot/abandoned-upload", test_abandoned_upload);
	g_test_add_func("/remote-boot/reap", test_reap);
	g_test_add_func("/remote-boot/prune", test_prune);
	rc = g_test_run();
	daemon_stop(&daemon_);
	g_free(kernel);
	g_free(host_id);
	return rc;
}
