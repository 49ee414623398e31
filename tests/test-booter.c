/*
 * bot/lab/booter.c through real libvirt and QEMU (TCG) with Debian's kernel:
 * stored boots of a build are reused under the same boot set-up and not
 * under another, and a host's slots are shared with every other holder of
 * their lock files (another worker, another zeroday process).
 */
#include "autoconfig.h"

#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bot/lab/booter.h"
#include "bot/config.h"
#include "bot/store/db.h"
#include "tests/testlib.h"

static char *kernel;

struct fixture {
	struct config *config;
	struct db *db;
	gint64 build_id;
};

static void fixture_set_up(struct fixture *f, gconstpointer data)
{
	g_autofree char *base = g_path_get_basename(g_test_get_path());
	g_autofree char *state = g_build_filename(testlib_scratch(), base, NULL);
	g_autofree char *db_path = g_build_filename(state, "zeroday.db", NULL);
	/* @data: the [boot] hosts, else the local host with one slot. */
	g_autofree char *conf = g_strdup_printf("[zeroday]\nstate-dir = %s\n"
						"[boot]\nhosts = %s\ntimeout = 120\n",
						state, data ? (const char *)data
							    : "qemu:///system*1");
	g_autoptr(GError) error = NULL;
	struct build_row row = {
		.source = (char *)"tree", .commit = (char *)"c0ffee", .target = (char *)"x86_64:t",
		.status = BUILD_OK, .image_path = kernel,
		.diags = g_ptr_array_new(),
	};

	g_assert_cmpint(g_mkdir_with_parents(state, 0755), ==, 0);
	g_assert_cmpint(chmod(state, 0755), ==, 0);
	f->config = config_load_data(conf, "test", &error);
	g_assert_no_error(error);
	f->db = db_open(db_path, &error);
	g_assert_no_error(error);
	g_assert_true(db_build_add(f->db, &row, &error));
	g_assert_no_error(error);
	f->build_id = row.id;
	g_ptr_array_unref(row.diags);
}

static void fixture_tear_down(struct fixture *f, gconstpointer data)
{
	db_close(f->db);
	config_free(f->config);
}

/* Boots the fixture's build @repeat times with @cmdline; returns how many were stored ones. */
static unsigned boot(struct fixture *f, unsigned repeat, const char *cmdline, unsigned *ok)
{
	struct booter_request req = {
		.image = kernel, .build_id = f->build_id, .repeat = repeat, .cmdline = cmdline,
		.reuse = true,
	};
	g_autoptr(GPtrArray) tally = NULL;
	g_autoptr(GPtrArray) runs = NULL;
	g_autoptr(GError) error = NULL;
	unsigned stored = 0;

	runs = booter_boot(f->db, f->config, &req, &tally, &error);
	g_assert_no_error(error);
	g_assert_nonnull(runs);
	g_assert_cmpuint(runs->len, ==, repeat);
	*ok = 0;
	for (guint i = 0; i < runs->len; i++) {
		const struct booter_run *r = runs->pdata[i];

		g_assert_cmpuint(r->seed, ==, i + 1);
		stored += r->stored;
		*ok += r->result.kind == CONSOLE_BOOT_OK;
	}
	g_assert_cmpuint(tally->len, ==, 0);
	return stored;
}

static void test_reuse(struct fixture *f, gconstpointer data)
{
	unsigned ok;

	g_assert_cmpuint(boot(f, 2, NULL, &ok), ==, 0);
	g_assert_cmpuint(ok, ==, 2);
	/* One more run: the two stored ones count, seed 3 is booted. */
	g_assert_cmpuint(boot(f, 3, NULL, &ok), ==, 2);
	g_assert_cmpuint(ok, ==, 3);
	/* Asked again: nothing is booted. */
	g_assert_cmpuint(boot(f, 3, NULL, &ok), ==, 3);
	g_assert_cmpuint(ok, ==, 3);
	/* Another command line is another question. */
	g_assert_cmpuint(boot(f, 1, "quiet", &ok), ==, 0);
	g_assert_cmpuint(ok, ==, 1);
}

struct booting {
	struct fixture *f;
	unsigned stored, ok;
};

static gpointer boot_thread(gpointer data)
{
	struct booting *b = data;

	b->stored = boot(b->f, 1, "zeroday.test=slots", &b->ok);
	return NULL;
}

/* Is there a console file under STATE/boot? (boot_run() creates it once the boot has a slot.) */
static bool any_console(const char *bootdir)
{
	g_autoptr(GDir) dir = g_dir_open(bootdir, 0, NULL);
	const char *name;

	while (dir && (name = g_dir_read_name(dir))) {
		g_autofree char *console = g_build_filename(bootdir, name, "seed1-try1.console",
							    NULL);

		if (g_file_test(console, G_FILE_TEST_EXISTS))
			return true;
	}
	return false;
}

static void test_slots_shared(struct fixture *f, gconstpointer data)
{
	g_autofree char *bootdir = g_build_filename(f->config->state_dir, "boot", NULL);
	g_autofree char *slots = g_build_filename(bootdir, "slots", NULL);
	g_autofree char *sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256, "qemu:///system",
							     -1);
	g_autofree char *lock = g_strdup_printf("%s/%.16s-0.lock", slots, sum);
	struct booting b = { .f = f };
	GThread *thread;
	int fd;

	/* Another holder (as another process would) takes the host's only slot. */
	g_assert_cmpint(g_mkdir_with_parents(slots, 0755), ==, 0);
	fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	g_assert_cmpint(fd, >=, 0);
	g_assert_cmpint(flock(fd, LOCK_EX | LOCK_NB), ==, 0);
	thread = g_thread_new("boot", boot_thread, &b);
	/* The boot waits for the slot: no domain starts while it is held. */
	g_usleep(3 * G_USEC_PER_SEC);
	g_assert_false(any_console(bootdir));
	close(fd);
	g_thread_join(thread);
	g_assert_cmpuint(b.stored, ==, 0);
	g_assert_cmpuint(b.ok, ==, 1);
	g_assert_true(any_console(bootdir));
}

/*
 * A host that keeps failing is used less: with a dead host listed first
 * (which ranks first while it has not failed), it is tried at most a few
 * times, not once or twice for every boot.
 */
static gint dead_host_failures;

/* Counts the booter's "boot seed N on HOST: infrastructure error" lines for the dead host. */
static void count_failures(const gchar *domain, GLogLevelFlags level, const gchar *message,
			   gpointer data)
{
	g_autofree char *needle = g_strdup_printf(" on %s: infrastructure error", (char *)data);

	if (strstr(message, needle))
		g_atomic_int_inc(&dead_host_failures);
	g_log_default_handler(domain, level, message, NULL);
}

static void test_failing_host(struct fixture *f, gconstpointer data)
{
	g_auto(GStrv) hosts = g_strsplit(data, ";", -1);
	g_autofree char *dead = g_strndup(hosts[0], strrchr(hosts[0], '*') - hosts[0]);
	guint handler = g_log_set_handler("bot", G_LOG_LEVEL_MESSAGE, count_failures, dead);
	struct booter_request req = { .image = kernel, .repeat = 4 };
	g_autoptr(GPtrArray) tally = NULL;
	g_autoptr(GPtrArray) runs = NULL;
	g_autoptr(GError) error = NULL;
	gint64 start = g_get_monotonic_time();
	unsigned failures;

	runs = booter_boot(f->db, f->config, &req, &tally, &error);
	g_assert_no_error(error);
	g_assert_nonnull(runs);
	for (guint i = 0; runs && i < runs->len; i++) {
		const struct booter_run *r = runs->pdata[i];

		g_assert_cmpstr(diag_console_kind_name(r->result.kind), ==, "boot-ok");
		g_assert_cmpstr(r->host, ==, "qemu:///system");
	}
	g_log_remove_handler("bot", handler);
	failures = (unsigned)g_atomic_int_get(&dead_host_failures);
	g_test_message("%u failed attempts on the dead host over 4 boots in %.0f s", failures,
		       (double)(g_get_monotonic_time() - start) / G_USEC_PER_SEC);
	/* Two in a row, then one more each time its backoff (60 s, 120 s) ends. */
	g_assert_cmpuint(failures, >=, 1);
	g_assert_cmpuint(failures, <=, 3);
}

/*
 * Two hosts of one slot each (two URIs of the local libvirtd, as two boot
 * machines would be): the boots of one request, as a bisection step or a
 * head's repeated boots ask them, run on both at once.
 */
static void test_two_hosts(struct fixture *f, gconstpointer data)
{
	struct booter_request req = { .image = kernel, .repeat = 4 };
	g_autoptr(GPtrArray) tally = NULL;
	g_autoptr(GPtrArray) runs = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(GHashTable) hosts = g_hash_table_new(g_str_hash, g_str_equal);

	(void)data;
	runs = booter_boot(f->db, f->config, &req, &tally, &error);
	g_assert_no_error(error);
	g_assert_nonnull(runs);
	g_assert_cmpuint(runs->len, ==, 4);
	for (guint i = 0; i < runs->len; i++) {
		const struct booter_run *r = runs->pdata[i];

		g_assert_cmpstr(diag_console_kind_name(r->result.kind), ==, "boot-ok");
		g_hash_table_add(hosts, r->host);
	}
	g_assert_cmpuint(g_hash_table_size(hosts), ==, 2);
}

int main(int argc, char **argv)
{
	testlib_init(&argc, &argv);
	kernel = testlib_boot_kernel();
	g_test_add("/booter/reuse", struct fixture, NULL, fixture_set_up, test_reuse,
		   fixture_tear_down);
	g_test_add("/booter/slots-shared", struct fixture, NULL, fixture_set_up, test_slots_shared,
		   fixture_tear_down);
	g_test_add("/booter/failing-host", struct fixture,
		   "qemu:///system?socket=/nonexistent/libvirt-sock*1;qemu:///system*1",
		   fixture_set_up, test_failing_host, fixture_tear_down);
	g_test_add("/booter/two-hosts", struct fixture,
		   "qemu:///system*1;qemu:///system?socket=/run/libvirt/libvirt-sock*1",
		   fixture_set_up, test_two_hosts, fixture_tear_down);
	return g_test_run();
}
