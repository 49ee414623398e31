/*
 * zeroday.conf: defaults, every key, and the errors that name file, group
 * and key.
 */
#include "autoconfig.h"

#include "bot/bot.h"
#include "bot/config.h"
#include "tests/testlib.h"

static void test_defaults(void)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(config) c = config_load(NULL, NULL, &error);
	g_autofree char *expect = g_build_filename(g_get_user_state_dir(), "zeroday", NULL);
	g_autofree char *db = NULL;

	g_assert_no_error(error);
	g_assert_nonnull(c);
	if (!c)
		return;
	g_assert_null(c->path);
	g_assert_cmpstr(c->state_dir, ==, expect);
	g_assert_false(c->allow_ssh);
	g_assert_false(c->allow_local);
	g_assert_cmpuint(c->max_new_commits, ==, 500);
	g_assert_cmpuint(c->limits.connect_timeout_s, ==, 30);
	g_assert_true(c->build_sandbox);
	g_assert_cmpstr(c->build_targets[0], ==, "x86_64:tinyconfig+serial");
	g_assert_null(c->build_targets[1]);
	g_assert_cmpuint(c->workers, ==, g_get_num_processors());
	db = config_db_path(c);
	g_assert_true(g_str_has_suffix(db, "/zeroday/zeroday.db"));
}

static void test_all_keys(void)
{
	static const char text[] =
		"# comment\n"
		"[zeroday]\nstate-dir = /srv/zeroday\nworkers = 6\n"
		"[git]\nallow-ssh=true\nallow-local-trees = true\nmax-new-commits=42\n"
		"poll-jobs=3\nconnect-timeout=5\nio-timeout=6\nfetch-timeout=7\n"
		"max-pack-objects=1000\nmax-pack-bytes=123456789\n"
		"[build]\njobs=3\ntimeout=600\nmax-memory=1073741824\nmax-procs=100\n"
		"sandbox=false\nccache=false\ntargets=x86_64:defconfig:W=1,sparse; arm64:defconfig ;\n"
		"[boot]\nhosts=qemu:///system*4;qemu+ssh://b/system\ntimeout=60\nmemory=1024\n"
		"repeat=5\npayloads=smoke;/opt/ltp/run\npayload-timeout=30\nkvm=auto\n"
		"busybox=/usr/bin/busybox\n";
	g_autoptr(GError) error = NULL;
	zd_autoptr(config) c = config_load_data(text, "test.conf", &error);

	g_assert_no_error(error);
	if (!c)
		return;
	g_assert_cmpstr(c->state_dir, ==, "/srv/zeroday");
	g_assert_cmpuint(c->workers, ==, 6);
	g_assert_true(c->allow_ssh);
	g_assert_true(c->allow_local);
	g_assert_cmpuint(c->max_new_commits, ==, 42);
	g_assert_cmpuint(c->poll_jobs, ==, 3);
	g_assert_cmpuint(c->limits.connect_timeout_s, ==, 5);
	g_assert_cmpuint(c->limits.io_timeout_s, ==, 6);
	g_assert_cmpuint(c->limits.fetch_timeout_s, ==, 7);
	g_assert_cmpuint(c->limits.max_pack_objects, ==, 1000);
	g_assert_cmpuint(c->limits.max_pack_bytes, ==, 123456789);
	g_assert_cmpuint(c->build_jobs, ==, 3);
	g_assert_cmpuint(c->build_timeout, ==, 600);
	g_assert_cmpuint(c->build_max_memory, ==, 1073741824);
	g_assert_cmpuint(c->build_max_procs, ==, 100);
	g_assert_false(c->build_sandbox);
	g_assert_false(c->build_ccache);
	g_assert_cmpuint(g_strv_length(c->build_targets), ==, 2);
	g_assert_cmpstr(c->build_targets[0], ==, "x86_64:defconfig:W=1,sparse");
	g_assert_cmpstr(c->build_targets[1], ==, "arm64:defconfig");
	g_assert_cmpstr(c->boot_hosts[0], ==, "qemu:///system*4");
	g_assert_cmpstr(c->boot_hosts[1], ==, "qemu+ssh://b/system");
	g_assert_cmpuint(c->boot_timeout, ==, 60);
	g_assert_cmpuint(c->boot_memory, ==, 1024);
	g_assert_cmpuint(c->boot_repeat, ==, 5);
	g_assert_cmpstr(c->boot_payloads[1], ==, "/opt/ltp/run");
	g_assert_cmpuint(c->boot_payload_timeout, ==, 30);
	g_assert_cmpstr(c->boot_kvm, ==, "auto");
	g_assert_cmpstr(c->boot_busybox, ==, "/usr/bin/busybox");
}

static const struct bad_case {
	const char *text;
	const char *message;
} bad_cases[] = {
	{ "[nope]\nx=1\n", "test.conf: [nope]: unknown group" },
	{ "[git]\nallow-shh=true\n", "test.conf: [git] allow-shh: unknown key" },
	{ "[git]\nallow-ssh=yes\n", "test.conf: [git] allow-ssh: expected true or false" },
	{ "[git]\nmax-new-commits=many\n",
	  "test.conf: [git] max-new-commits: expected a whole number" },
	{ "[git]\nmax-new-commits=-1\n",
	  "test.conf: [git] max-new-commits: expected a whole number" },
	{ "[git]\nmax-new-commits=0\n",
	  "test.conf: [git] max-new-commits: 0 is out of range (1 to 100000)" },
	{ "[git]\npoll-jobs=99999999999999999999\n",
	  "test.conf: [git] poll-jobs: expected a whole number" },
	{ "[boot]\nkvm=maybe\n", "test.conf: [boot] kvm: expected true, false or auto" },
	{ "[build]\ntimeout=5\n", "test.conf: [build] timeout: 5 is out of range (60 to 604800)" },
	{ "[build]\ntargets=\n", "test.conf: [build] targets: expected a list" },
	{ "[zeroday]\nworkers=0\n",
	  "test.conf: [zeroday] workers: 0 is out of range (1 to 256)" },
	{ "[zeroday]\nstate-dir=relative\n",
	  "test.conf: [zeroday] state-dir: expected an absolute path" },
};

static void test_bad(void)
{
	for (size_t i = 0; i < G_N_ELEMENTS(bad_cases); i++) {
		g_autoptr(GError) error = NULL;
		zd_autoptr(config) c = config_load_data(bad_cases[i].text, "test.conf", &error);

		g_assert_null(c);
		g_assert_error(error, BOT_ERROR, BOT_ERROR_CONFIG);
		if (error)
			g_assert_cmpstr(error->message, ==, bad_cases[i].message);
	}
}

static void test_file(void)
{
	g_autofree char *dir = testlib_mkdir("conf");
	g_autofree char *path = g_build_filename(dir, "zeroday.conf", NULL);
	g_autofree char *missing = g_build_filename(dir, "missing.conf", NULL);
	g_autoptr(GError) error = NULL;
	zd_autoptr(config) c = NULL;
	zd_autoptr(config) d = NULL;
	g_autofree char *expect = NULL;

	g_assert_true(g_file_set_contents(path, "[git]\nio-timeout=9\nbogus=1\n", -1, NULL));
	c = config_load(path, NULL, &error);
	g_assert_null(c);
	expect = g_strdup_printf("%s: [git] bogus: unknown key", path);
	g_assert_cmpstr(error ? error->message : "", ==, expect);
	g_clear_error(&error);

	g_assert_true(g_file_set_contents(path, "[git]\nio-timeout=9\n", -1, NULL));
	g_setenv("ZERODAY_CONFIG", path, TRUE);
	c = config_load(NULL, "/tmp/override", &error);
	g_unsetenv("ZERODAY_CONFIG");
	g_assert_no_error(error);
	if (c) {
		g_assert_cmpstr(c->path, ==, path);
		g_assert_cmpuint(c->limits.io_timeout_s, ==, 9);
		g_assert_cmpstr(c->state_dir, ==, "/tmp/override");
	}
	d = config_load(missing, NULL, &error);
	g_assert_null(d);
	g_assert_error(error, BOT_ERROR, BOT_ERROR_CONFIG);
}

int main(int argc, char **argv)
{
	testlib_init(&argc, &argv);
	g_test_add_func("/config/defaults", test_defaults);
	g_test_add_func("/config/all-keys", test_all_keys);
	g_test_add_func("/config/bad", test_bad);
	g_test_add_func("/config/file", test_file);
	return g_test_run();
}
