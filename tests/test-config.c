/*
 * zeroday.conf: defaults, every key, and the errors that name file, group
 * and key.
 */
#include "autoconfig.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bot/bot.h"
#include "bot/config.h"
#include "bot/mailroom/render.h"
#include "engine/boot.h"
#include "mail/address.h"
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
	/* The embedded mail settings work as they are: a valid From, templates that load. */
	{
		g_autofree char *from = address_normalize(c->mail_address, &error);

		g_assert_no_error(error);
		g_assert_cmpstr(from, ==, c->mail_address);
		g_assert_true(render_check_templates(c->mail_templates, &error));
		g_assert_no_error(error);
		g_clear_error(&error);
	}
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
		"busybox=/usr/bin/busybox\nbusybox-dir=/srv/busybox\n"
		"cmdline=TRINITY_SECONDS=10; kunit.filter_glob=cmdline.*\n"
		"[mail]\naddress = robot@lkml.example.org\nname = Kernel Test Robot\n"
		"archive-url = https://lore.example.org/r/\ntemplates = /etc/zeroday/templates\n"
		"cc-max = 7\noutbox = maildir:/var/mail/zeroday\n";
	g_autoptr(GError) error = NULL;
	zd_autoptr(config) c = config_load_data(text, "test.conf", &error);

	g_assert_no_error(error);
	if (!c)
		return;
	g_assert_cmpstr(c->state_dir, ==, "/srv/zeroday");
	g_assert_cmpstr(c->mail_address, ==, "robot@lkml.example.org");
	g_assert_cmpstr(c->mail_name, ==, "Kernel Test Robot");
	g_assert_cmpstr(c->mail_archive_url, ==, "https://lore.example.org/r/");
	g_assert_cmpstr(c->mail_templates, ==, "/etc/zeroday/templates");
	g_assert_cmpuint(c->mail_cc_max, ==, 7);
	g_assert_cmpstr(c->mail_outbox, ==, "/var/mail/zeroday");
	g_assert_null(c->mail_smtp_host);
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
	g_assert_cmpstr(c->boot_busybox_dir, ==, "/srv/busybox");
	g_assert_cmpuint(g_strv_length(c->boot_cmdline), ==, 2);
	g_assert_cmpstr(c->boot_cmdline[1], ==, "kunit.filter_glob=cmdline.*");
}

static const struct bad_case {
	const char *text;
	const char *message;
} bad_cases[] = {
	{ "[nope]\nx=1\n", "test.conf: [nope]: unknown group" },
	{ "[git]\nallow-shh=true\n", "test.conf: [git] allow-shh: unknown key" },
	{ "[git]\nallow-ssh=yes\n", "test.conf: [git] allow-ssh: expected true or false" },
	/* Words that the reproduce line's quoting or a shell would read otherwise. */
	{ "[boot]\ncmdline=init=/bin/sh' -s\n",
	  "test.conf: [boot] cmdline: 'init=/bin/sh' -s': a kernel command line word must be " },
	{ "[boot]\ncmdline=a=$(reboot)\n",
	  "test.conf: [boot] cmdline: 'a=$(reboot)': a kernel command line word must be " },
	{ "[git]\nmax-new-commits=many\n",
	  "test.conf: [git] max-new-commits: expected a whole number" },
	{ "[git]\nmax-new-commits=-1\n",
	  "test.conf: [git] max-new-commits: expected a whole number" },
	{ "[git]\nmax-new-commits=0\n",
	  "test.conf: [git] max-new-commits: 0 is out of range (1 to 100000)" },
	{ "[git]\npoll-jobs=99999999999999999999\n",
	  "test.conf: [git] poll-jobs: expected a whole number" },
	{ "[boot]\nkvm=maybe\n", "test.conf: [boot] kvm: expected one of false, true, auto" },
	{ "[build]\nexecutor=pbs\n", "test.conf: [build] executor: expected one of local, slurm" },
	{ "[build]\nexecutor=slurm\n",
	  "test.conf: [build] executor: slurm needs [slurm] spool, the directory zeroday and the "
	  "nodes share" },
	{ "[slurm]\nspool=spool\n", "test.conf: [slurm] spool: expected an absolute path" },
	/* A key file's comments are whole lines: one after a value is refused, not kept in it. */
	{ "[slurm]\nspool = /srv/zeroday-spool   # shared with the nodes\n",
	  "test.conf: [slurm] spool: a comment after a value is part of the value: put it on a "
	  "line of its own" },
	{ "[zeroday]\nworkers = 16\t# builds in flight\n",
	  "test.conf: [zeroday] workers: a comment after a value is part of the value: put it on "
	  "a line of its own" },
	{ "[boot]\nhosts = qemu:///system*2 # two slots\n",
	  "test.conf: [boot] hosts: a comment after a value is part of the value: put it on a "
	  "line of its own" },
	{ "[report]\nartifacts-dir=/srv/www/zeroday\n",
	  "test.conf: [report] artifacts-dir: artifacts-dir and artifacts-url go together: the "
	  "directory zeroday writes and the URL that serves it" },
	{ "[report]\nartifacts-url=https://zeroday.example.org/a/\n",
	  "test.conf: [report] artifacts-url: artifacts-dir and artifacts-url go together: the "
	  "directory zeroday writes and the URL that serves it" },
	{ "[report]\nartifacts-url=file:///srv\nartifacts-dir=/srv\n",
	  "test.conf: [report] artifacts-url: expected an http:// or https:// URL" },
	{ "[mail]\naddress=Bot <bot@example.org>\n",
	  "test.conf: [mail] address: expected one address, user@domain, without a name" },
	{ "[mail]\naddress=bot\n",
	  "test.conf: [mail] address: expected one address, user@domain, without a name" },
	{ "[mail]\naddress=a@example.org, b@example.org\n",
	  "test.conf: [mail] address: expected one address, user@domain, without a name" },
	{ "[mail]\nname=\n", "test.conf: [mail] name: expected 1 to 64 characters" },
	{ "[mail]\narchive-url=ftp://lore.example.org/\n",
	  "test.conf: [mail] archive-url: expected an http:// or https:// URL" },
	{ "[mail]\narchive-url=https://lore.example.org/a b\n",
	  "test.conf: [mail] archive-url: expected an http:// or https:// URL" },
	{ "[mail]\narchive-url=https:///r/\n",
	  "test.conf: [mail] archive-url: expected an http:// or https:// URL" },
	{ "[mail]\narchive-url=https://lore.example.org:99999/r/\n",
	  "test.conf: [mail] archive-url: expected an http:// or https:// URL" },
	{ "[mail]\narchive-url=https://[::1/r/\n",
	  "test.conf: [mail] archive-url: expected an http:// or https:// URL" },
	{ "[mail]\narchive-url=https://bot:secret@lore.example.org/r/\n",
	  "test.conf: [mail] archive-url: a user or password in the URL is not allowed" },
	{ "[mail]\noutbox=ftp://127.0.0.1\n",
	  "test.conf: [mail] outbox: expected maildir:PATH, smtp://HOST[:PORT] or smtps://HOST[:PORT]" },
	{ "[mail]\noutbox=smtp://user:secret@mail.example.org\n",
	  "test.conf: [mail] outbox: expected a host name or an IP address, and no user or password "
	  "(see [mail] credentials)" },
	{ "[mail]\noutbox=smtp://mail.example.org:0\n",
	  "test.conf: [mail] outbox: expected a port from 1 to 65535" },
	{ "[mail]\noutbox=smtps://mail.example.org:465/x\n",
	  "test.conf: [mail] outbox: expected nothing after the host but :PORT" },
	{ "[mail]\noutbox=smtps://mail.example.org:4x5\n",
	  "test.conf: [mail] outbox: expected a port from 1 to 65535" },
	{ "[mail]\noutbox=smtp://mail.example.org/path\n",
	  "test.conf: [mail] outbox: expected nothing after the host but :PORT" },
	{ "[mail]\noutbox=smtp://[::1\n", "test.conf: [mail] outbox: an unclosed '[' in the host" },
	{ "[mail]\noutbox=smtp://-x\n", "test.conf: [mail] outbox: expected a host name" },
	{ "[mail]\ntimeout=0\n", "test.conf: [mail] timeout: 0 is out of range (1 to 3600)" },
	{ "[mail]\ncredentials=secret.txt\n",
	  "test.conf: [mail] credentials: expected an absolute path" },
	{ "[mail]\noutbox=maildir:relative/dir\n",
	  "test.conf: [mail] outbox: expected maildir:PATH, with an absolute path" },
	{ "[mail]\ncc-max=0\n", "test.conf: [mail] cc-max: 0 is out of range (1 to 1000)" },
	{ "[mail]\ntemplates=templates\n", "test.conf: [mail] templates: expected an absolute path" },
	{ "[build]\ntimeout=5\n", "test.conf: [build] timeout: 5 is out of range (60 to 604800)" },
	{ "[build]\ntargets=\n", "test.conf: [build] targets: expected a list" },
	{ "[zeroday]\nworkers=0\n",
	  "test.conf: [zeroday] workers: 0 is out of range (1 to 256)" },
	{ "[zeroday]\nstate-dir=relative\n",
	  "test.conf: [zeroday] state-dir: expected an absolute path" },
	{ "[zeroday]\nworkers=+4\n", "test.conf: [zeroday] workers: expected a whole number" },
	{ "[zeroday]\nworkers=0x10\n", "test.conf: [zeroday] workers: expected a whole number" },
	{ "[zeroday]\nworkers=\n", "test.conf: [zeroday] workers: expected a whole number" },
	{ "[zeroday]\nworkers=257\n",
	  "test.conf: [zeroday] workers: 257 is out of range (1 to 256)" },
	{ "[git]\nmax-pack-bytes=18446744073709551616\n",
	  "test.conf: [git] max-pack-bytes: expected a whole number" },
	{ "[build]\nmax-memory=1024\n",
	  "test.conf: [build] max-memory: 1024 is out of range "
	  "(268435456 to 9223372036854775807)" },
	{ "[git]\nallow-ssh=TRUE\n", "test.conf: [git] allow-ssh: expected true or false" },
	{ "[zeroday]\nstate-dir=/srv/\x01zd\n",
	  "test.conf: [zeroday] state-dir: control character in the value" },
	{ "[boot]\nbusybox=/bin/\xff\n", "test.conf: [boot] busybox: not valid UTF-8" },
	/* Build targets: parsed as builds parse them. */
	{ "[build]\ntargets=bogus\n",
	  "test.conf: [build] targets: bad build target 'bogus': "
	  "expected ARCH:CONFIG[+FRAGMENT...][:CHECKS]" },
	{ "[build]\ntargets=x86_64:defconfig;vax:defconfig\n",
	  "test.conf: [build] targets: bad build target 'vax:defconfig': unknown architecture" },
	{ "[build]\ntargets=x86_64:tinyconfig+nosuch\n",
	  "test.conf: [build] targets: bad build target 'x86_64:tinyconfig+nosuch': "
	  "no such config fragment" },
	{ "[build]\ntargets=x86_64:defconfig:W=2\n",
	  "test.conf: [build] targets: bad build target 'x86_64:defconfig:W=2': "
	  "unknown check (W=1, sparse, sparse-all, coccinelle, LLVM=1, heads, kselftest=NAME)" },
	{ "[build]\ntargets=x86_64:defconfig\\nreboot\n",
	  "test.conf: [build] targets: control character in the value" },
	/* Boot hosts: the slot count as bot/lab/booter.c reads it, and a libvirt URI. */
	{ "[boot]\nhosts=qemu:///system*0\n",
	  "test.conf: [boot] hosts: 'qemu:///system*0': the slot count after '*' must be "
	  "1 to 1024" },
	{ "[boot]\nhosts=qemu:///system*1025\n",
	  "test.conf: [boot] hosts: 'qemu:///system*1025': the slot count after '*' must be "
	  "1 to 1024" },
	{ "[boot]\nhosts=qemu:///system*\n",
	  "test.conf: [boot] hosts: 'qemu:///system*': the slot count after '*' must be "
	  "1 to 1024" },
	{ "[boot]\nhosts=qemu:///system*-1\n",
	  "test.conf: [boot] hosts: 'qemu:///system*-1': the slot count after '*' must be "
	  "1 to 1024" },
	{ "[boot]\nhosts=qemu:///system*2x\n",
	  "test.conf: [boot] hosts: 'qemu:///system*2x': the slot count after '*' must be "
	  "1 to 1024" },
	{ "[boot]\nhosts=qemu:///system*99999999999999999999\n",
	  "test.conf: [boot] hosts: 'qemu:///system*99999999999999999999': the slot count after "
	  "'*' must be 1 to 1024" },
	{ "[boot]\nhosts=qemu:///system*2;localhost\n",
	  "test.conf: [boot] hosts: 'localhost': expected a libvirt URI "
	  "(DRIVER[+TRANSPORT]://[HOST]/PATH), then optionally *SLOTS" },
	{ "[boot]\nhosts=qemu+carrier-pigeon://h/system\n",
	  "test.conf: [boot] hosts: 'qemu+carrier-pigeon://h/system': expected a libvirt URI "
	  "(DRIVER[+TRANSPORT]://[HOST]/PATH), then optionally *SLOTS" },
	{ "[boot]\nhosts=QEMU:///system\n",
	  "test.conf: [boot] hosts: 'QEMU:///system': expected a libvirt URI "
	  "(DRIVER[+TRANSPORT]://[HOST]/PATH), then optionally *SLOTS" },
	{ "[boot]\nhosts=qemu:/system\n",
	  "test.conf: [boot] hosts: 'qemu:/system': expected a libvirt URI "
	  "(DRIVER[+TRANSPORT]://[HOST]/PATH), then optionally *SLOTS" },
	{ "[boot]\nhosts=qemu+ssh://h%zz/system\n",
	  "test.conf: [boot] hosts: 'qemu+ssh://h%zz/system': expected a libvirt URI "
	  "(DRIVER[+TRANSPORT]://[HOST]/PATH), then optionally *SLOTS" },
	{ "[boot]\nhosts=qemu:///sys tem\n",
	  "test.conf: [boot] hosts: 'qemu:///sys tem': expected a libvirt URI "
	  "(DRIVER[+TRANSPORT]://[HOST]/PATH), then optionally *SLOTS" },
	{ "[boot]\nhosts=;\n", "test.conf: [boot] hosts: expected a list" },
	/* Payloads: shipped names must be shipped; each name once. */
	{ "[boot]\npayloads=nosuch\n",
	  "test.conf: [boot] payloads: 'nosuch': no such payload in " },
	{ "[boot]\npayloads=../smoke\n",
	  "test.conf: [boot] payloads: '../smoke': expected a shipped payload's name or an "
	  "absolute path" },
	{ "[boot]\npayloads=.smoke\n",
	  "test.conf: [boot] payloads: '.smoke': expected a shipped payload's name or an "
	  "absolute path" },
	{ "[boot]\npayloads=/opt/ltp/run me\n",
	  "test.conf: [boot] payloads: '/opt/ltp/run me': a payload's file name must be 1 to 64 "
	  "of A-Z a-z 0-9 . _ -, not starting with '.'" },
	{ "[boot]\npayloads=smoke;/opt/x/smoke\n",
	  "test.conf: [boot] payloads: '/opt/x/smoke': a payload of that name is listed already" },
	{ "[boot]\nkvm=\n", "test.conf: [boot] kvm: expected one of false, true, auto" },
	{ "[boot]\nmemory=63\n", "test.conf: [boot] memory: 63 is out of range (64 to 1048576)" },
	{ "[boot]\nrepeat=101\n", "test.conf: [boot] repeat: 101 is out of range (1 to 100)" },
};

static void test_bad(void)
{
	for (size_t i = 0; i < G_N_ELEMENTS(bad_cases); i++) {
		g_autoptr(GError) error = NULL;
		zd_autoptr(config) c = config_load_data(bad_cases[i].text, "test.conf", &error);

		g_assert_null(c);
		g_assert_error(error, BOT_ERROR, BOT_ERROR_CONFIG);
		/* A message ending in a space goes on with a path that varies. */
		if (error && g_str_has_suffix(bad_cases[i].message, " "))
			g_assert_true(g_str_has_prefix(error->message, bad_cases[i].message));
		else if (error)
			g_assert_cmpstr(error->message, ==, bad_cases[i].message);
	}
}

/*
 * The shipped payloads load with their declarations; a payload whose
 * header has a typo fails the load, naming the key and the declaration.
 */
static void test_payload_declarations(void)
{
	g_autofree char *bad = g_build_filename(testlib_scratch(), "typo-payload", NULL);
	g_autofree char *text = g_strdup_printf("[boot]\npayloads=%s\n", bad);
	g_autofree char *want = g_strdup_printf("test.conf: [boot] payloads: %s: unknown "
						"declaration 'zeroday-need'", bad);
	g_autoptr(GError) error = NULL;
	zd_autoptr(config) good = config_load_data("[boot]\npayloads=smoke;trinity;fs-stress;kselftest\n",
						   "test.conf", &error);
	zd_autoptr(config) c = NULL;

	g_assert_no_error(error);
	g_assert_nonnull(good);
	g_assert_true(g_file_set_contents(bad, "#!/bin/sh\n# zeroday-need: trinity\n", -1, NULL));
	c = config_load_data(text, "test.conf", &error);
	g_assert_null(c);
	g_assert_error(error, BOT_ERROR, BOT_ERROR_CONFIG);
	if (error)
		g_assert_true(g_str_has_prefix(error->message, want));
}

/* What bot/lab/booter.c and builds accept, load accepts too. */
static void test_good_values(void)
{
	static const char text[] =
		"[build]\ntargets=x86_64:randconfig@daily;x86_64:randconfig@42+serial:W=1;"
		"x86_64:file=/etc/kernel.config;arm:multi_v7_defconfig;"
		"x86_64:tinyconfig+serial:kselftest=vm,kselftest=size\n"
		"[boot]\nhosts=qemu:///system?socket=/run/libvirt/sock*1024;test:///default;"
		"qemu+tcp://127.0.0.1:16509/system;qemu+ssh://root@[::1]:22/system*3\n"
		"payloads=smoke;/opt/ltp/runltp\n"
		/* A '#' inside a value, and after a space in free text, is the value's own. */
		"[zeroday]\nstate-dir=/srv/zeroday#1\n[mail]\nname=zeroday #2\n";
	g_autoptr(GError) error = NULL;
	zd_autoptr(config) c = config_load_data(text, "test.conf", &error);

	g_assert_no_error(error);
	if (!c)
		return;
	g_assert_cmpuint(g_strv_length(c->build_targets), ==, 5);
	g_assert_cmpuint(g_strv_length(c->boot_hosts), ==, 4);
	g_assert_cmpstr(c->boot_hosts[0], ==, "qemu:///system?socket=/run/libvirt/sock*1024");
	g_assert_cmpstr(c->state_dir, ==, "/srv/zeroday#1");
	g_assert_cmpstr(c->mail_name, ==, "zeroday #2");
}

/* Writes @len bytes of @data to a file in the scratch directory (caller frees). */
static char *conf_file(const char *name, const char *data, gssize len)
{
	g_autofree char *dir = testlib_mkdir(name);
	char *path = g_build_filename(dir, "zeroday.conf", NULL);

	g_assert_true(g_file_set_contents(path, data, len, NULL));
	return path;
}

/* The SMTP outboxes: host, port, TLS mode; the credentials file and its checks. */
static void test_smtp(void)
{
	static const struct {
		const char *outbox;
		const char *host;
		unsigned port;
		bool smtps;
	} cases[] = {
		{ "smtp://mail.example.org", "mail.example.org", 587, false },
		{ "smtp://mail.example.org:2525", "mail.example.org", 2525, false },
		{ "smtps://127.0.0.1", "127.0.0.1", 465, true },
		{ "smtps://[::1]:4650/", "::1", 4650, true },
	};
	g_autofree char *dir = testlib_mkdir("smtp");
	g_autofree char *creds = g_build_filename(dir, "creds", NULL);
	g_autoptr(GError) error = NULL;
	char *user = NULL;
	char *password = NULL;

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *text = g_strdup_printf("[mail]\noutbox = %s\ntimeout = 9\n"
							"ca-file = /etc/ca.pem\n", cases[i].outbox);
		zd_autoptr(config) c = config_load_data(text, "test.conf", &error);

		g_assert_no_error(error);
		if (!c)
			continue;
		g_assert_cmpstr(c->mail_smtp_host, ==, cases[i].host);
		g_assert_cmpuint(c->mail_smtp_port, ==, cases[i].port);
		g_assert_cmpint(c->mail_smtps, ==, cases[i].smtps);
		g_assert_cmpuint(c->mail_timeout, ==, 9);
		g_assert_cmpstr(c->mail_ca_file, ==, "/etc/ca.pem");
	}

	g_assert_true(g_file_set_contents(creds, "# the relay's\nuser = zeroday\n"
					  "password =  s3cret = yes \n", -1, NULL));
	g_assert_cmpint(chmod(creds, 0600), ==, 0);
	g_assert_true(config_read_credentials(creds, &user, &password, &error));
	g_assert_no_error(error);
	g_assert_cmpstr(user, ==, "zeroday");
	g_assert_cmpstr(password, ==, "s3cret = yes");
	config_credentials_free(user, password);
	/* Readable by anyone: refused, and the secret is not in the message. */
	g_assert_cmpint(chmod(creds, 0644), ==, 0);
	g_assert_false(config_read_credentials(creds, &user, &password, &error));
	g_assert_error(error, BOT_ERROR, BOT_ERROR_CONFIG);
	g_assert_nonnull(strstr(error->message, "may be read by anyone"));
	g_assert_null(strstr(error->message, "s3cret"));
	g_clear_error(&error);
	g_assert_null(user);
	/* No password; an unknown key. */
	g_assert_true(g_file_set_contents(creds, "user = zeroday\n", -1, NULL));
	g_assert_cmpint(chmod(creds, 0600), ==, 0);
	g_assert_false(config_read_credentials(creds, &user, &password, &error));
	g_assert_error(error, BOT_ERROR, BOT_ERROR_CONFIG);
	g_clear_error(&error);
	g_assert_true(g_file_set_contents(creds, "user = a\npassword = b\nhost = c\n", -1, NULL));
	g_assert_cmpint(chmod(creds, 0600), ==, 0);
	g_assert_false(config_read_credentials(creds, &user, &password, &error));
	g_assert_error(error, BOT_ERROR, BOT_ERROR_CONFIG);
	g_assert_nonnull(strstr(error->message, ":3: unknown or repeated key"));
	g_clear_error(&error);
	g_assert_null(user);
	g_assert_null(password);
}

/* GKeyFile stops at a NUL byte; load refuses one and names its line's key. */
static void test_nul(void)
{
	static const char value[] = "[boot]\nhosts=qemu:///system*2\nbusybox = /bin/busy\0box\n";
	static const char comment[] = "[git]\nio-timeout=9\n# a\0comment\n";
	g_autofree char *path = conf_file("nul", value, sizeof(value) - 1);
	g_autofree char *path2 = conf_file("nul2", comment, sizeof(comment) - 1);
	g_autofree char *expect = g_strdup_printf("%s: [boot] busybox: NUL byte in the value",
						  path);
	g_autofree char *expect2 = g_strdup_printf("%s: line 3: NUL byte", path2);
	g_autoptr(GError) error = NULL;
	zd_autoptr(config) c = config_load(path, NULL, &error);

	g_assert_null(c);
	g_assert_error(error, BOT_ERROR, BOT_ERROR_CONFIG);
	g_assert_cmpstr(error ? error->message : "", ==, expect);
	g_clear_error(&error);
	c = config_load(path2, NULL, &error);
	g_assert_null(c);
	g_assert_cmpstr(error ? error->message : "", ==, expect2);
}

/* Only a regular file of at most 1 MiB is read: /dev/zero used to hang. */
static void test_not_regular(void)
{
	g_autofree char *dir = testlib_mkdir("special");
	g_autofree char *fifo = g_build_filename(dir, "fifo.conf", NULL);
	g_autofree char *big = g_build_filename(dir, "big.conf", NULL);
	g_autofree char *link = g_build_filename(dir, "link.conf", NULL);
	g_autofree char *text = NULL;
	const struct {
		const char *path;
		const char *why;
	} cases[] = {
		{ "/dev/zero", "not a regular file" },
		{ "/dev/null", "not a regular file" },
		{ dir, "not a regular file" },
		{ fifo, "not a regular file" },
		{ big, "larger than 1 MiB" },
	};

	g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
	/* Valid text, all comments, one byte over. */
	text = g_strnfill(1024 * 1024 + 1, '#');
	g_assert_true(g_file_set_contents(big, text, -1, NULL));
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(GError) error = NULL;
		zd_autoptr(config) c = config_load(cases[i].path, NULL, &error);
		g_autofree char *expect = g_strdup_printf("%s: %s", cases[i].path, cases[i].why);

		g_assert_null(c);
		g_assert_error(error, BOT_ERROR, BOT_ERROR_CONFIG);
		g_assert_cmpstr(error ? error->message : "", ==, expect);
	}
	/* Exactly 1 MiB is read, and a link to a regular file is followed. */
	text[1024 * 1024] = '\0';
	g_assert_true(g_file_set_contents(big, text, -1, NULL));
	g_assert_cmpint(symlink(big, link), ==, 0);
	{
		g_autoptr(GError) error = NULL;
		zd_autoptr(config) c = config_load(link, NULL, &error);

		g_assert_no_error(error);
		g_assert_nonnull(c);
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

/*
 * A reload: the settings that cannot change while zeroday runs keep the
 * old values; every other one takes the new. A reference keeps a
 * configuration alive past its first owner.
 */
static void test_keep_fixed(void)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(config) old = config_load_data(
		"[zeroday]\nstate-dir = /srv/old\nworkers = 2\n"
		"[git]\nio-timeout = 100\nmax-pack-bytes = 1000\n"
		"[build]\ntargets = x86_64:defconfig\n", "old.conf", &error);
	zd_autoptr(config) fresh = config_load_data(
		"[zeroday]\nstate-dir = /srv/new\nworkers = 8\n"
		"[git]\nio-timeout = 200\nmax-pack-bytes = 2000\n"
		"[build]\ntargets = x86_64:allnoconfig\n", "new.conf", &error);
	zd_autoptr(config) same = config_load_data(
		"[zeroday]\nstate-dir = /srv/old\nworkers = 2\n"
		"[git]\nio-timeout = 100\nmax-pack-bytes = 1000\n", "same.conf", &error);
	struct config *kept;

	g_assert_no_error(error);
	if (!old || !fresh || !same)
		return;
	g_test_expect_message("bot", G_LOG_LEVEL_WARNING, "*[zeroday] state-dir cannot change*");
	g_test_expect_message("bot", G_LOG_LEVEL_WARNING, "*[zeroday] workers cannot change*");
	g_test_expect_message("bot", G_LOG_LEVEL_WARNING, "*the [git] limits cannot change*");
	config_keep_fixed(fresh, old);
	g_test_assert_expected_messages();
	g_assert_cmpstr(fresh->state_dir, ==, "/srv/old");
	g_assert_cmpuint(fresh->workers, ==, 2);
	g_assert_cmpuint(fresh->limits.io_timeout_s, ==, 100);
	g_assert_cmpuint(fresh->limits.max_pack_bytes, ==, 1000);
	g_assert_cmpstr(fresh->build_targets[0], ==, "x86_64:allnoconfig");
	/* Nothing changed that cannot: no warning (a stray one fails the test). */
	config_keep_fixed(same, old);
	g_assert_cmpstr(same->state_dir, ==, "/srv/old");

	kept = config_ref(fresh);
	g_assert_true(kept == fresh);
	g_clear_pointer(&fresh, config_free);
	g_assert_cmpstr(kept->build_targets[0], ==, "x86_64:allnoconfig");
	config_free(kept);
}

/*
 * The initramfs's busybox by arch: [boot] busybox for the machine's own,
 * busybox-dir/DEBIAN-ARCH for the others; a missing one is named.
 */
static void test_busybox(void)
{
	g_autofree char *dir = testlib_mkdir("busyboxes");
	g_autofree char *arm = g_build_filename(dir, "arm64", NULL);
	g_autofree char *text = g_strdup_printf("[boot]\nbusybox=/bin/sh\nbusybox-dir=%s\n", dir);
	g_autoptr(GError) error = NULL;
	zd_autoptr(config) c = config_load_data(text, "test", &error);
	g_autofree char *native = NULL;
	g_autofree char *got = NULL;
	g_autofree char *missing = NULL;

	g_assert_no_error(error);
	g_assert_true(g_file_set_contents(arm, "", 0, NULL));
	native = config_boot_busybox(c, boot_arch_find("x86_64"), &error);
	g_assert_no_error(error);
	g_assert_cmpstr(native, ==, "/bin/sh");
	got = config_boot_busybox(c, boot_arch_find("arm64"), &error);
	g_assert_no_error(error);
	g_assert_cmpstr(got, ==, arm);
	missing = config_boot_busybox(c, boot_arch_find("riscv"), &error);
	g_assert_null(missing);
	g_assert_error(error, BOT_ERROR, BOT_ERROR_NOT_FOUND);
	g_assert_nonnull(strstr(error->message, "/riscv64 (Debian's busybox-static:riscv64"));
}

int main(int argc, char **argv)
{
	testlib_init(&argc, &argv);
	g_test_add_func("/config/defaults", test_defaults);
	g_test_add_func("/config/all-keys", test_all_keys);
	g_test_add_func("/config/bad", test_bad);
	g_test_add_func("/config/payload-declarations", test_payload_declarations);
	g_test_add_func("/config/busybox", test_busybox);
	g_test_add_func("/config/good-values", test_good_values);
	g_test_add_func("/config/smtp", test_smtp);
	g_test_add_func("/config/file", test_file);
	g_test_add_func("/config/nul", test_nul);
	g_test_add_func("/config/not-regular", test_not_regular);
	g_test_add_func("/config/keep-fixed", test_keep_fixed);
	return g_test_run();
}
