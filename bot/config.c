/*
 * zeroday.conf: see config.h and zeroday.conf(5).
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bot/bot.h"
#include "bot/config.h"
#include "engine/boot.h"
#include "engine/build.h"
#include "engine/initramfs.h"
#include "mail/address.h"
#include "mail/patchmail.h"
#include "mail/source.h"

/* A config is a page of text; this refuses /dev/zero and other mistakes. */
#define CONFIG_MAX_BYTES (1024 * 1024)

/* The slot counts bot/lab/booter.c accepts after a host's '*'. */
#define HOST_MAX_SLOTS 1024

/* The payload names engine/initramfs.c accepts. */
#define PAYLOAD_NAME_MAX 64

enum key_type { KEY_BOOL, KEY_UINT, KEY_UINT64, KEY_PATH, KEY_LIST, KEY_CHOICE, KEY_TEXT, KEY_ADDRESS,
		KEY_URL, KEY_OUTBOX };

/*
 * The checks of list keys: each looks at every item and, on failure, sets
 * *@why (caller frees) to a reason that quotes the item.
 */
static bool check_targets(char **items, char **why);
static bool check_hosts(char **items, char **why);
static bool check_payloads(char **items, char **why);
static bool check_cmdline(char **items, char **why);
static bool check_sources(char **items, char **why);
static bool check_addresses(char **items, char **why);
static bool check_domains(char **items, char **why);

/* Every key zeroday.conf may hold: a table, not an if-chain. */
static const struct key {
	const char *group;
	const char *name;
	enum key_type type;
	size_t offset;
	guint64 min, max;
	bool (*check)(char **items, char **why); /* KEY_LIST only, may be NULL */
	const char *choices; /* KEY_CHOICE only: the values allowed, "a|b|c" */
} keys[] = {
	{ "zeroday", "state-dir", KEY_PATH, offsetof(struct config, state_dir), 0, 0 },
	{ "zeroday", "workers", KEY_UINT, offsetof(struct config, workers), 1, 256 },
	{ "git", "allow-ssh", KEY_BOOL, offsetof(struct config, allow_ssh), 0, 0 },
	{ "git", "allow-local-trees", KEY_BOOL, offsetof(struct config, allow_local), 0, 0 },
	{ "git", "max-new-commits", KEY_UINT, offsetof(struct config, max_new_commits), 1, 100000 },
	{ "git", "poll-jobs", KEY_UINT, offsetof(struct config, poll_jobs), 1, 64 },
	{ "git", "connect-timeout", KEY_UINT,
	  offsetof(struct config, limits.connect_timeout_s), 1, 3600 },
	{ "git", "io-timeout", KEY_UINT, offsetof(struct config, limits.io_timeout_s), 1, 3600 },
	{ "git", "fetch-timeout", KEY_UINT,
	  offsetof(struct config, limits.fetch_timeout_s), 1, 86400 },
	{ "git", "max-pack-objects", KEY_UINT64,
	  offsetof(struct config, limits.max_pack_objects), 1, G_MAXUINT32 },
	{ "git", "max-pack-bytes", KEY_UINT64,
	  offsetof(struct config, limits.max_pack_bytes), 1, G_MAXINT64 },
	{ "build", "jobs", KEY_UINT, offsetof(struct config, build_jobs), 1, 1024 },
	{ "build", "timeout", KEY_UINT, offsetof(struct config, build_timeout), 60, 604800 },
	{ "build", "max-memory", KEY_UINT64, offsetof(struct config, build_max_memory),
	  G_GUINT64_CONSTANT(1) << 28, G_MAXINT64 },
	{ "build", "max-procs", KEY_UINT, offsetof(struct config, build_max_procs), 16, 1000000 },
	{ "build", "sandbox", KEY_BOOL, offsetof(struct config, build_sandbox), 0, 0 },
	{ "build", "ccache", KEY_BOOL, offsetof(struct config, build_ccache), 0, 0 },
	{ "build", "targets", KEY_LIST, offsetof(struct config, build_targets), 0, 0,
	  check_targets },
	{ "build", "executor", KEY_CHOICE, offsetof(struct config, build_executor), 0, 0, NULL,
	  "local|slurm" },
	{ "slurm", "spool", KEY_PATH, offsetof(struct config, slurm_spool), 0, 0 },
	{ "slurm", "node-root", KEY_PATH, offsetof(struct config, slurm_node_root), 0, 0 },
	{ "slurm", "zeroday", KEY_PATH, offsetof(struct config, slurm_zeroday), 0, 0 },
	{ "slurm", "partition", KEY_TEXT, offsetof(struct config, slurm_partition), 1, 64 },
	{ "slurm", "poll", KEY_UINT, offsetof(struct config, slurm_poll), 1, 3600 },
	{ "slurm", "shared-ccache", KEY_BOOL, offsetof(struct config, slurm_shared_ccache), 0, 0 },
	{ "boot", "hosts", KEY_LIST, offsetof(struct config, boot_hosts), 0, 0, check_hosts },
	{ "boot", "timeout", KEY_UINT, offsetof(struct config, boot_timeout), 5, 86400 },
	{ "boot", "memory", KEY_UINT, offsetof(struct config, boot_memory), 64, 1048576 },
	{ "boot", "repeat", KEY_UINT, offsetof(struct config, boot_repeat), 1, 100 },
	{ "boot", "payloads", KEY_LIST, offsetof(struct config, boot_payloads), 0, 0,
	  check_payloads },
	{ "boot", "cmdline", KEY_LIST, offsetof(struct config, boot_cmdline), 0, 0, check_cmdline },
	{ "boot", "payload-timeout", KEY_UINT, offsetof(struct config, boot_payload_timeout), 1, 86400 },
	{ "boot", "kvm", KEY_CHOICE, offsetof(struct config, boot_kvm), 0, 0, NULL,
	  "false|true|auto" },
	{ "boot", "busybox", KEY_PATH, offsetof(struct config, boot_busybox), 0, 0 },
	{ "boot", "busybox-dir", KEY_PATH, offsetof(struct config, boot_busybox_dir), 0, 0 },
	{ "mail", "address", KEY_ADDRESS, offsetof(struct config, mail_address), 0, 0 },
	{ "mail", "name", KEY_TEXT, offsetof(struct config, mail_name), 1, 64 },
	{ "mail", "archive-url", KEY_URL, offsetof(struct config, mail_archive_url), 0, 0 },
	{ "mail", "archive-list", KEY_ADDRESS, offsetof(struct config, mail_archive_list), 0, 0 },
	{ "report", "artifacts-dir", KEY_PATH, offsetof(struct config, report_artifacts_dir), 0, 0 },
	{ "report", "artifacts-url", KEY_URL, offsetof(struct config, report_artifacts_url), 0, 0 },
	{ "mail", "templates", KEY_PATH, offsetof(struct config, mail_templates), 0, 0 },
	{ "mail", "cc-max", KEY_UINT, offsetof(struct config, mail_cc_max), 1, 1000 },
	{ "mail", "outbox", KEY_OUTBOX, offsetof(struct config, mail_outbox), 0, 0 },
	{ "mail", "credentials", KEY_PATH, offsetof(struct config, mail_credentials), 0, 0 },
	{ "mail", "ca-file", KEY_PATH, offsetof(struct config, mail_ca_file), 0, 0 },
	{ "mail", "timeout", KEY_UINT, offsetof(struct config, mail_timeout), 1, 3600 },
	{ "mail", "retry", KEY_UINT, offsetof(struct config, mail_retry), 1, 86400 },
	{ "mail", "max-per-recipient-day", KEY_UINT,
	  offsetof(struct config, mail_max_recipient_day), 1, 1000000 },
	{ "mail", "max-per-hour", KEY_UINT, offsetof(struct config, mail_max_hour), 1, 1000000 },
	{ "mail", "sources", KEY_LIST, offsetof(struct config, mail_sources), 0, 0, check_sources },
	{ "mail", "grace", KEY_UINT, offsetof(struct config, mail_grace), 0, 7 * 86400 },
	{ "mail", "series-timeout", KEY_UINT, offsetof(struct config, mail_series_timeout), 1,
	  30 * 86400 },
	{ "mail", "max-bytes", KEY_UINT64, offsetof(struct config, mail_max_bytes), 10000,
	  100000000 },
	{ "mail", "max-size", KEY_UINT64, offsetof(struct config, mail_max_size), 65536,
	  256 * 1024 * 1024 },
	{ "commands", "admins", KEY_LIST, offsetof(struct config, commands_admins), 0, 0,
	  check_addresses },
	{ "commands", "dkim-required", KEY_LIST, offsetof(struct config, commands_dkim_required),
	  0, 0, check_domains },
	{ "commands", "dkim-keys", KEY_PATH, offsetof(struct config, commands_dkim_keys), 0, 0 },
	{ "commands", "allowed-hosts", KEY_LIST, offsetof(struct config, commands_allowed_hosts),
	  0, 0, check_domains },
	{ "commands", "ignore", KEY_LIST, offsetof(struct config, commands_ignore), 0, 0, NULL },
	{ "commands", "max-per-sender-hour", KEY_UINT,
	  offsetof(struct config, commands_max_sender_hour), 1, 1000000 },
	{ "commands", "max-per-hour", KEY_UINT, offsetof(struct config, commands_max_hour), 1,
	  1000000 },
};

static struct config *config_defaults(void)
{
	struct config *c = g_new0(struct config, 1);

	c->refs = 1;
	c->state_dir = g_build_filename(g_get_user_state_dir(), "zeroday", NULL);
	c->workers = g_get_num_processors();
	c->max_new_commits = 500;
	c->poll_jobs = 8;
	c->limits.connect_timeout_s = 30;
	c->limits.io_timeout_s = 300;
	c->limits.fetch_timeout_s = 3600;
	c->limits.max_pack_objects = 20000000;
	c->limits.max_pack_bytes = G_GUINT64_CONSTANT(16) << 30;
	c->build_jobs = g_get_num_processors();
	c->build_timeout = 7200;
	c->build_max_memory = G_GUINT64_CONSTANT(8) << 30;
	c->build_max_procs = 8192;
	c->build_sandbox = true;
	c->build_ccache = true;
	c->build_targets = g_strsplit(BUILD_DEFAULT_TARGET, ";", -1);
	c->build_executor = g_strdup("local");
	c->slurm_node_root = g_strdup("/var/lib/zeroday-node");
	c->slurm_poll = 5;
	c->slurm_shared_ccache = true;
	c->boot_hosts = g_strsplit("qemu:///system*2", ";", -1);
	c->boot_timeout = 300;
	c->boot_memory = 512;
	c->boot_repeat = 3;
	c->boot_payloads = g_strsplit("smoke", ";", -1);
	c->boot_payload_timeout = 600;
	c->boot_kvm = g_strdup("false");
	c->boot_busybox = g_strdup("/bin/busybox");
	c->boot_busybox_dir = g_strdup(ZERODAY_BUSYBOX_DIR);
	c->mail_address = g_strdup("zeroday@localhost.localdomain");
	c->mail_name = g_strdup("zeroday kernel test robot");
	c->mail_templates = config_template_dir();
	c->mail_cc_max = 20;
	c->mail_timeout = 60;
	c->mail_retry = 60;
	c->mail_max_recipient_day = 50;
	c->mail_max_hour = 200;
	c->mail_grace = 300;
	c->mail_series_timeout = 86400;
	c->mail_max_size = PATCHMAIL_SIZE_DEFAULT;
	c->mail_max_bytes = 100000;
	/* Robots that mail kernel developers: never answered, whatever they carry. */
	c->commands_ignore = g_strsplit("*noreply*;*no-reply*;*-bounces*;mailer-daemon@*;"
					"postmaster@*;lkp@intel.com;syzbot*@*;bot@kernelci.org;"
					"patchwork*@*", ";", -1);
	c->commands_max_sender_hour = 10;
	c->commands_max_hour = 100;
	return c;
}

struct config *config_ref(struct config *config)
{
	g_atomic_int_inc(&config->refs);
	return config;
}

void config_free(struct config *config)
{
	if (!config || !g_atomic_int_dec_and_test(&config->refs))
		return;
	g_free(config->path);
	g_free(config->state_dir);
	g_strfreev(config->build_targets);
	g_free(config->build_executor);
	g_free(config->report_artifacts_dir);
	g_free(config->report_artifacts_url);
	g_free(config->slurm_spool);
	g_free(config->slurm_node_root);
	g_free(config->slurm_zeroday);
	g_free(config->slurm_partition);
	g_strfreev(config->boot_hosts);
	g_strfreev(config->boot_payloads);
	g_strfreev(config->mail_sources);
	g_strfreev(config->commands_admins);
	g_strfreev(config->commands_dkim_required);
	g_free(config->commands_dkim_keys);
	g_strfreev(config->commands_allowed_hosts);
	g_strfreev(config->commands_ignore);
	g_free(config->boot_kvm);
	g_free(config->boot_busybox);
	g_free(config->boot_busybox_dir);
	g_strfreev(config->boot_cmdline);
	g_free(config->mail_address);
	g_free(config->mail_name);
	g_free(config->mail_archive_url);
	g_free(config->mail_archive_list);
	g_free(config->mail_templates);
	g_free(config->mail_outbox);
	g_free(config->mail_smtp_host);
	g_free(config->mail_credentials);
	g_free(config->mail_ca_file);
	g_free(config);
}

static bool bad_key(GError **error, const char *origin, const char *group, const char *key,
		    const char *why)
{
	g_set_error(error, BOT_ERROR, BOT_ERROR_CONFIG, "%s: [%s] %s: %s", origin, group,
		    key, why);
	return false;
}

/* Why @text cannot be a value (a static string), or NULL when it can. */
static const char *text_refused(const char *text)
{
	if (!g_utf8_validate(text, -1, NULL))
		return "not valid UTF-8";
	for (const char *p = text; *p; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return "control character in the value";
	}
	return NULL;
}

/*
 * Whether @raw looks like a value with a comment after it ("x = 4  #
 * why"): a key file's comments are whole lines, so the comment would be
 * part of the value. A number or a choice would be refused for a reason
 * that hides the real one, and a path or a list item taken with the
 * comment in it. Free text ([mail] name) may hold " #".
 */
static bool comment_after_value(const char *raw)
{
	for (const char *p = strchr(raw, '#'); p; p = strchr(p + 1, '#')) {
		if (p > raw && (p[-1] == ' ' || p[-1] == '\t'))
			return true;
	}
	return false;
}

static bool check_targets(char **items, char **why)
{
	g_autofree char *fragments = config_fragment_dir();

	for (char **i = items; *i; i++) {
		struct build_target t;
		g_autoptr(GError) local = NULL;

		if (!build_target_parse(&t, *i, fragments, &local)) {
			*why = g_strdup(local->message);
			return false;
		}
		build_target_clear(&t);
	}
	return true;
}

/* libvirt's remote transports (see libvirt's "Connection URIs"). */
static const char *const transports[] = {
	"unix", "ssh", "libssh", "libssh2", "tcp", "tls", "ext", NULL,
};

/*
 * A libvirt URI, syntactically: DRIVER[+TRANSPORT]://[USER@][HOST][:PORT]/PATH[?QUERY],
 * valid as RFC 3986 and without white space. Whether it connects is the
 * booter's to find out.
 */
static bool libvirt_uri_ok(const char *uri)
{
	const char *p = uri;
	const char *plus = NULL;

	if (!g_ascii_islower(*p))
		return false;
	for (p++; *p && *p != ':'; p++) {
		if (*p == '+' && !plus)
			plus = p;
		else if (!g_ascii_islower(*p) && !g_ascii_isdigit(*p))
			return false;
	}
	if (!g_str_has_prefix(p, "://"))
		return false;
	if (plus) {
		g_autofree char *transport = g_strndup(plus + 1, p - plus - 1);

		if (!g_strv_contains(transports, transport))
			return false;
	}
	for (const char *c = uri; *c; c++) {
		if (g_ascii_isspace(*c))
			return false;
	}
	return g_uri_is_valid(uri, G_URI_FLAGS_NONE, NULL);
}

/* The same rule as bot/lab/booter.c's parse_hosts(): URI, then optionally "*N". */
static bool check_hosts(char **items, char **why)
{
	for (char **i = items; *i; i++) {
		const char *star = strrchr(*i, '*');
		g_autofree char *uri = star ? g_strndup(*i, star - *i) : g_strdup(*i);

		if (star) {
			const char *n = star + 1;
			bool digits = *n && strlen(n) <= 4;
			guint64 slots;

			for (const char *d = n; *d; d++)
				digits = digits && g_ascii_isdigit(*d);
			slots = digits ? g_ascii_strtoull(n, NULL, 10) : 0;
			if (slots < 1 || slots > HOST_MAX_SLOTS) {
				*why = g_strdup_printf("'%s': the slot count after '*' must be "
						       "1 to %u", *i, HOST_MAX_SLOTS);
				return false;
			}
		}
		if (!libvirt_uri_ok(uri)) {
			*why = g_strdup_printf("'%s': expected a libvirt URI "
					       "(DRIVER[+TRANSPORT]://[HOST]/PATH), then "
					       "optionally *SLOTS", *i);
			return false;
		}
	}
	return true;
}

/* As engine/initramfs.c names a payload inside the initramfs. */
static bool payload_name_ok(const char *name)
{
	if (!*name || name[0] == '.' || strlen(name) > PAYLOAD_NAME_MAX)
		return false;
	for (const char *p = name; *p; p++) {
		if (!g_ascii_isalnum(*p) && !strchr("._-", *p))
			return false;
	}
	return true;
}

/*
 * Shipped names must be shipped; absolute paths may be missing (the booter
 * skips them), but their names must fit the initramfs, once each.
 */
/* [mail] sources: each a URL source_url_parse() takes, none twice. */
static bool check_sources(char **items, char **why)
{
	for (char **i = items; *i; i++) {
		g_autoptr(GError) local = NULL;
		struct source_url u;

		if (!source_url_parse(*i, &u, &local)) {
			*why = g_strdup(local->message);
			return false;
		}
		source_url_release(&u);
		for (char **j = items; j < i; j++) {
			if (strcmp(*i, *j) == 0) {
				*why = g_strdup_printf("'%s' is listed twice", *i);
				return false;
			}
		}
	}
	return true;
}

/* [commands] admins: addresses, kept in address_key() form. */
static bool check_addresses(char **items, char **why)
{
	for (char **i = items; *i; i++) {
		g_autoptr(GError) local = NULL;
		g_autofree char *normal = address_normalize(*i, &local);

		if (!normal || strchr(normal, '<')) {
			*why = g_strdup_printf("'%s': expected an address, user@domain", *i);
			return false;
		}
		g_free(*i);
		*i = address_key(normal);
	}
	return true;
}

/* Host and domain names: letters, digits, '-' and '.', kept in lower case. */
static bool check_domains(char **items, char **why)
{
	for (char **i = items; *i; i++) {
		bool ok = **i && strlen(*i) <= 253 && **i != '.' && **i != '-';

		for (const char *p = *i; ok && *p; p++)
			ok = g_ascii_isalnum(*p) || *p == '-' || *p == '.' || *p == ':';
		if (!ok) {
			*why = g_strdup_printf("'%s': expected a host or domain name", *i);
			return false;
		}
		char *lower = g_ascii_strdown(*i, -1);

		g_free(*i);
		*i = lower;
	}
	return true;
}

/*
 * Words of the kernel command line: printable, no space, quote, '<' or
 * ';', so that the reproduce line's '-append' quotes them as they are.
 */
static bool check_cmdline(char **items, char **why)
{
	for (char **i = items; *i; i++) {
		if (!**i || strlen(*i) > 256 || strpbrk(*i, " \t'\"\\<>;`$")) {
			*why = g_strdup_printf("'%s': a kernel command line word must be 1 to 256 "
					       "printable characters without spaces, quotes, '\\', "
					       "'<', '>', ';', '`' or '$'", *i);
			return false;
		}
		for (const char *c = *i; *c; c++) {
			if ((unsigned char)*c < 0x21 || (unsigned char)*c > 0x7e) {
				*why = g_strdup_printf("'%s': not printable ASCII", *i);
				return false;
			}
		}
	}
	return true;
}

static bool check_payloads(char **items, char **why)
{
	g_autofree char *dir = config_payload_dir();
	g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);

	for (char **i = items; *i; i++) {
		g_autofree char *name = g_path_get_basename(*i);

		if (g_path_is_absolute(*i)) {
			if (!payload_name_ok(name)) {
				*why = g_strdup_printf("'%s': a payload's file name must be 1 "
						       "to %d of A-Z a-z 0-9 . _ -, not "
						       "starting with '.'", *i, PAYLOAD_NAME_MAX);
				return false;
			}
		} else {
			g_autofree char *path = NULL;

			if (!payload_name_ok(*i)) {
				*why = g_strdup_printf("'%s': expected a shipped payload's name or "
						       "an absolute path", *i);
				return false;
			}
			path = g_build_filename(dir, *i, NULL);
			if (!g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
				*why = g_strdup_printf("'%s': no such payload in %s", *i, dir);
				return false;
			}
		}
		if (!g_hash_table_add(seen, g_steal_pointer(&name))) {
			*why = g_strdup_printf("'%s': a payload of that name is listed already",
					       *i);
			return false;
		}
		/* Its declarations, when it is there: a typo fails at load, not at a boot. */
		{
			g_autofree char *path = g_path_is_absolute(*i)
				? g_strdup(*i) : g_build_filename(dir, *i, NULL);
			g_autoptr(GError) local = NULL;
			struct initramfs_needs needs;

			if (g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
				if (!initramfs_needs_read(&needs, path, &local)) {
					*why = g_strdup(local->message);
					return false;
				}
				initramfs_needs_release(&needs);
			}
		}
	}
	return true;
}

static const struct key *find_key(const char *group, const char *name)
{
	for (size_t i = 0; i < G_N_ELEMENTS(keys); i++) {
		if (strcmp(keys[i].group, group) == 0 && strcmp(keys[i].name, name) == 0)
			return &keys[i];
	}
	return NULL;
}

static bool group_known(const char *group)
{
	for (size_t i = 0; i < G_N_ELEMENTS(keys); i++) {
		if (strcmp(keys[i].group, group) == 0)
			return true;
	}
	return false;
}

/*
 * [mail] outbox: maildir:PATH, smtp://HOST[:PORT] (STARTTLS, required;
 * port 587 by default) or smtps://HOST[:PORT] (implicit TLS; 465). HOST
 * is a DNS name or an IP address ([...] for IPv6); nothing else: no
 * user or password (they come from [mail] credentials), no path.
 */
static bool parse_outbox(struct config *c, const char *raw, const char *origin,
			 const struct key *k, GError **error)
{
	const char *rest;
	g_autofree char *host = NULL;
	g_autofree char *port_text = NULL;
	guint64 port = 0;

	if (g_str_has_prefix(raw, "maildir:")) {
		if (!g_path_is_absolute(raw + 8))
			return bad_key(error, origin, k->group, k->name,
				       "expected maildir:PATH, with an absolute path");
		g_free(c->mail_outbox);
		c->mail_outbox = g_strdup(raw + 8);
		g_clear_pointer(&c->mail_smtp_host, g_free);
		return true;
	}
	if (g_str_has_prefix(raw, "smtp://"))
		rest = raw + 7;
	else if (g_str_has_prefix(raw, "smtps://"))
		rest = raw + 8;
	else
		return bad_key(error, origin, k->group, k->name,
			       "expected maildir:PATH, smtp://HOST[:PORT] or smtps://HOST[:PORT]");
	if (strpbrk(rest, "@?#"))
		return bad_key(error, origin, k->group, k->name,
			       "expected a host name or an IP address, and no user or password "
			       "(see [mail] credentials)");
	if (*rest == '[') {
		const char *end = strchr(rest, ']');

		if (!end)
			return bad_key(error, origin, k->group, k->name, "an unclosed '[' in the host");
		host = g_strndup(rest + 1, (gsize)(end - rest - 1));
		if (!g_hostname_is_ip_address(host) || !strchr(host, ':'))
			return bad_key(error, origin, k->group, k->name,
				       "expected an IPv6 address between '[' and ']'");
		rest = end + 1;
	} else {
		size_t len = strcspn(rest, ":/");

		host = g_strndup(rest, len);
		rest += len;
		for (const char *p = host; *p; p++) {
			if (!g_ascii_isalnum(*p) && *p != '-' && *p != '.')
				return bad_key(error, origin, k->group, k->name,
					       "expected a host name or an IP address, and no user "
					       "or password (see [mail] credentials)");
		}
		if (!*host || *host == '-' || *host == '.')
			return bad_key(error, origin, k->group, k->name, "expected a host name");
	}
	if (*rest == ':') {
		size_t len = strcspn(rest + 1, "/");

		port_text = g_strndup(rest + 1, len);
		rest += 1 + len;
		if (!g_ascii_string_to_unsigned(port_text, 10, 1, 65535, &port, NULL))
			return bad_key(error, origin, k->group, k->name,
				       "expected a port from 1 to 65535");
	}
	if (*rest == '/')
		rest++;
	if (*rest)
		return bad_key(error, origin, k->group, k->name,
			       "expected nothing after the host but :PORT");
	g_free(c->mail_smtp_host);
	c->mail_smtp_host = g_steal_pointer(&host);
	c->mail_smtps = g_str_has_prefix(raw, "smtps://");
	c->mail_smtp_port = port_text ? (unsigned)port : c->mail_smtps ? 465 : 587;
	return true;
}

static bool set_key(struct config *c, GKeyFile *kf, const char *origin, const struct key *k,
		    GError **error)
{
	g_autofree char *raw = g_key_file_get_value(kf, k->group, k->name, NULL);
	char *field = (char *)c + k->offset;
	const char *refused;
	guint64 v;

	g_strstrip(raw);
	if (k->type != KEY_TEXT && comment_after_value(raw))
		return bad_key(error, origin, k->group, k->name,
			       "a comment after a value is part of the value: put it on a line "
			       "of its own");
	if ((refused = text_refused(raw)))
		return bad_key(error, origin, k->group, k->name, refused);
	switch (k->type) {
	case KEY_BOOL:
		if (strcmp(raw, "true") == 0)
			*(bool *)field = true;
		else if (strcmp(raw, "false") == 0)
			*(bool *)field = false;
		else
			return bad_key(error, origin, k->group, k->name,
				       "expected true or false");
		return true;
	case KEY_UINT:
	case KEY_UINT64: {
		bool digits = raw[0] != '\0';

		for (const char *p = raw; *p; p++)
			digits = digits && g_ascii_isdigit(*p);
		errno = 0;
		v = digits ? g_ascii_strtoull(raw, NULL, 10) : 0;
		if (!digits || errno != 0)
			return bad_key(error, origin, k->group, k->name,
				       "expected a whole number");
		if (v < k->min || v > k->max) {
			g_autofree char *why = g_strdup_printf(
				"%" G_GUINT64_FORMAT " is out of range (%" G_GUINT64_FORMAT
				" to %" G_GUINT64_FORMAT ")", v, k->min, k->max);

			return bad_key(error, origin, k->group, k->name, why);
		}
		if (k->type == KEY_UINT)
			*(unsigned *)field = (unsigned)v;
		else
			*(guint64 *)field = v;
		return true;
	}
	case KEY_LIST: {
		g_autoptr(GError) local = NULL;
		g_auto(GStrv) items = g_key_file_get_string_list(kf, k->group, k->name, NULL,
								 &local);
		g_autoptr(GStrvBuilder) b = g_strv_builder_new();
		g_auto(GStrv) list = NULL;
		g_autofree char *why = NULL;

		if (local)
			return bad_key(error, origin, k->group, k->name, local->message);
		for (char **i = items; i && *i; i++) {
			g_strstrip(*i);
			if ((refused = text_refused(*i)))
				return bad_key(error, origin, k->group, k->name, refused);
			if (**i)
				g_strv_builder_add(b, *i);
		}
		list = g_strv_builder_end(b);
		if (!list[0])
			return bad_key(error, origin, k->group, k->name, "expected a list");
		if (k->check && !k->check(list, &why))
			return bad_key(error, origin, k->group, k->name, why);
		g_strfreev(*(char ***)field);
		*(char ***)field = g_steal_pointer(&list);
		return true;
	}
	case KEY_CHOICE: {
		g_auto(GStrv) choices = g_strsplit(k->choices, "|", -1);

		if (!g_strv_contains((const char *const *)choices, raw)) {
			g_autofree char *list = g_strjoinv(", ", choices);
			g_autofree char *why = g_strdup_printf("expected one of %s", list);

			return bad_key(error, origin, k->group, k->name, why);
		}
		g_free(*(char **)field);
		*(char **)field = g_strdup(raw);
		return true;
	}
	case KEY_TEXT:
		if (g_utf8_strlen(raw, -1) < (glong)k->min || g_utf8_strlen(raw, -1) > (glong)k->max) {
			g_autofree char *why = g_strdup_printf(
				"expected %" G_GUINT64_FORMAT " to %" G_GUINT64_FORMAT " characters",
				k->min, k->max);

			return bad_key(error, origin, k->group, k->name, why);
		}
		g_free(*(char **)field);
		*(char **)field = g_strdup(raw);
		return true;
	case KEY_ADDRESS: {
		g_autoptr(GError) local = NULL;
		g_autofree char *normal = address_normalize(raw, &local);

		/* The bot's own address: an addr-spec, its name is [mail] name. */
		if (!normal || strcmp(normal, raw) != 0 || strchr(raw, '<'))
			return bad_key(error, origin, k->group, k->name,
				       "expected one address, user@domain, without a name");
		g_free(*(char **)field);
		*(char **)field = g_steal_pointer(&normal);
		return true;
	}
	case KEY_URL: {
		/* A link printed in every mail: a host, and no user or password. */
		g_autoptr(GUri) uri = g_uri_parse(raw, G_URI_FLAGS_NONE, NULL);

		if (!uri || (strcmp(g_uri_get_scheme(uri), "https") != 0 &&
			     strcmp(g_uri_get_scheme(uri), "http") != 0) ||
		    !g_uri_get_host(uri) || !*g_uri_get_host(uri) || strpbrk(raw, " \t\"<>"))
			return bad_key(error, origin, k->group, k->name,
				       "expected an http:// or https:// URL");
		if (g_uri_get_userinfo(uri))
			return bad_key(error, origin, k->group, k->name,
				       "a user or password in the URL is not allowed");
		g_free(*(char **)field);
		*(char **)field = g_strdup(raw);
		return true;
	}
	case KEY_OUTBOX:
		return parse_outbox(c, raw, origin, k, error);
	case KEY_PATH:
		if (!g_path_is_absolute(raw))
			return bad_key(error, origin, k->group, k->name,
				       "expected an absolute path");
		g_free(*(char **)field);
		*(char **)field = g_strdup(raw);
		return true;
	}
	g_assert_not_reached();
}

struct config *config_load_data(const char *data, const char *origin, GError **error)
{
	zd_autoptr(config) c = config_defaults();
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autoptr(GError) local = NULL;
	g_auto(GStrv) groups = NULL;

	if (!g_key_file_load_from_data(kf, data, -1, G_KEY_FILE_NONE, &local)) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_CONFIG, "%s: %s", origin, local->message);
		return NULL;
	}
	groups = g_key_file_get_groups(kf, NULL);
	for (char **g = groups; *g; g++) {
		g_auto(GStrv) names = NULL;

		if (!group_known(*g)) {
			g_set_error(error, BOT_ERROR, BOT_ERROR_CONFIG, "%s: [%s]: unknown group",
				    origin, *g);
			return NULL;
		}
		names = g_key_file_get_keys(kf, *g, NULL, NULL);
		for (char **n = names; n && *n; n++) {
			const struct key *k = find_key(*g, *n);

			if (!k) {
				bad_key(error, origin, *g, *n, "unknown key");
				return NULL;
			}
			if (!set_key(c, kf, origin, k, error))
				return NULL;
		}
	}
	if (!c->report_artifacts_dir != !c->report_artifacts_url) {
		bad_key(error, origin, "report",
			c->report_artifacts_dir ? "artifacts-dir" : "artifacts-url",
			"artifacts-dir and artifacts-url go together: the directory zeroday "
			"writes and the URL that serves it");
		return NULL;
	}
	if (strcmp(c->build_executor, "slurm") == 0 && !c->slurm_spool) {
		bad_key(error, origin, "build", "executor",
			"slurm needs [slurm] spool, the directory zeroday and the nodes share");
		return NULL;
	}
	return g_steal_pointer(&c);
}

static char *find_config_file(void)
{
	const char *env = g_getenv("ZERODAY_CONFIG");
	g_autofree char *user = NULL;

	if (env && *env)
		return g_strdup(env);
	user = g_build_filename(g_get_user_config_dir(), "zeroday", "zeroday.conf", NULL);
	if (g_file_test(user, G_FILE_TEST_EXISTS))
		return g_steal_pointer(&user);
	if (g_file_test("/etc/zeroday/zeroday.conf", G_FILE_TEST_EXISTS))
		return g_strdup("/etc/zeroday/zeroday.conf");
	return NULL;
}

/* "1 MiB", "256 KiB" or "N bytes": a size limit as errors say it (caller frees). */
static char *size_limit_text(gsize max)
{
	if (max >= 1024 * 1024 && max % (1024 * 1024) == 0)
		return g_strdup_printf("%" G_GSIZE_FORMAT " MiB", max / (1024 * 1024));
	if (max >= 1024 && max % 1024 == 0)
		return g_strdup_printf("%" G_GSIZE_FORMAT " KiB", max / 1024);
	return g_strdup_printf("%" G_GSIZE_FORMAT " bytes", max);
}

char *config_read_file(const char *path, gsize max, gsize *len, GError **error)
{
	g_autoptr(GByteArray) buf = g_byte_array_new();
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	const char *why = NULL;
	bool too_big = false;
	int saved = 0;

	if (fd < 0) {
		saved = errno;
		goto out;
	}
	if (fstat(fd, &st) < 0) {
		saved = errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		why = "not a regular file";
		goto out;
	}
	if ((guint64)st.st_size > max) {
		too_big = true;
		goto out;
	}
	for (;;) {
		guint8 chunk[16384];
		ssize_t n = read(fd, chunk, sizeof(chunk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			saved = errno;
			goto out;
		}
		if (n == 0)
			break;
		g_byte_array_append(buf, chunk, (guint)n);
		/* It may grow while read. */
		if (buf->len > max) {
			too_big = true;
			goto out;
		}
	}
out:
	if (fd >= 0)
		close(fd);
	if (too_big) {
		g_autofree char *limit = size_limit_text(max);

		g_set_error(error, BOT_ERROR, BOT_ERROR_CONFIG, "%s: larger than %s", path, limit);
		return NULL;
	}
	if (saved || why) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_CONFIG, "%s: %s", path,
			    why ? why : g_strerror(saved));
		return NULL;
	}
	*len = buf->len;
	g_byte_array_append(buf, (const guint8 *)"", 1);
	return (char *)g_byte_array_free(g_steal_pointer(&buf), FALSE);
}

/*
 * GKeyFile would take a NUL byte for the end of the text and drop the
 * rest: refuses one, naming the group and key of its line.
 */
static bool check_nul(const char *data, gsize len, const char *origin, GError **error)
{
	const char *nul = memchr(data, '\0', len);
	g_autofree char *group = NULL;
	const char *line = data;
	const char *eq;
	unsigned lineno = 1;

	if (!nul)
		return true;
	for (;;) {
		const char *start = line;
		const char *eol = memchr(line, '\n', nul - line);
		const char *close;

		while (start < nul && g_ascii_isspace(*start))
			start++;
		if (start < nul && *start == '[' &&
		    (close = memchr(start, ']', (eol ? eol : nul) - start))) {
			g_free(group);
			group = g_strndup(start + 1, close - start - 1);
		}
		if (!eol)
			break;
		line = eol + 1;
		lineno++;
	}
	while (line < nul && g_ascii_isspace(*line))
		line++;
	eq = memchr(line, '=', nul - line);
	if (group && eq && *line != '#' && *line != '[') {
		g_autofree char *key = g_strstrip(g_strndup(line, eq - line));

		return bad_key(error, origin, group, key, "NUL byte in the value");
	}
	g_set_error(error, BOT_ERROR, BOT_ERROR_CONFIG, "%s: line %u: NUL byte", origin, lineno);
	return false;
}

struct config *config_load(const char *path, const char *state_dir, GError **error)
{
	g_autofree char *file = path ? g_strdup(path) : find_config_file();
	zd_autoptr(config) c = NULL;

	if (file) {
		g_autofree char *data = NULL;
		gsize len;

		data = config_read_file(file, CONFIG_MAX_BYTES, &len, error);
		if (!data || !check_nul(data, len, file, error))
			return NULL;
		c = config_load_data(data, file, error);
		if (!c)
			return NULL;
		c->path = g_steal_pointer(&file);
	} else {
		c = config_defaults();
	}
	if (state_dir) {
		g_free(c->state_dir);
		c->state_dir = g_canonicalize_filename(state_dir, NULL);
	}
	return g_steal_pointer(&c);
}

void config_keep_fixed(struct config *fresh, const struct config *old)
{
	const char *file = fresh->path ? fresh->path : "the defaults";

	if (g_strcmp0(fresh->state_dir, old->state_dir) != 0) {
		g_warning("%s: [zeroday] state-dir cannot change while zeroday runs; "
			  "keeping %s", file, old->state_dir);
		g_free(fresh->state_dir);
		fresh->state_dir = g_strdup(old->state_dir);
	}
	if (fresh->workers != old->workers) {
		g_warning("%s: [zeroday] workers cannot change while zeroday runs; keeping %u",
			  file, old->workers);
		fresh->workers = old->workers;
	}
	if (fresh->limits.connect_timeout_s != old->limits.connect_timeout_s ||
	    fresh->limits.io_timeout_s != old->limits.io_timeout_s ||
	    fresh->limits.fetch_timeout_s != old->limits.fetch_timeout_s ||
	    fresh->limits.max_pack_objects != old->limits.max_pack_objects ||
	    fresh->limits.max_pack_bytes != old->limits.max_pack_bytes) {
		g_warning("%s: the [git] limits cannot change while zeroday runs; "
			  "keeping the old ones", file);
		fresh->limits = old->limits;
	}
}

char *config_db_path(const struct config *config)
{
	return g_build_filename(config->state_dir, "zeroday.db", NULL);
}

char *config_git_path(const struct config *config)
{
	return g_build_filename(config->state_dir, "git", NULL);
}

char *config_log_dir(const struct config *config)
{
	return g_build_filename(config->state_dir, "logs", NULL);
}

char *config_outbox_path(const struct config *config)
{
	return config->mail_outbox ? g_strdup(config->mail_outbox)
				   : g_build_filename(config->state_dir, "outbox", NULL);
}

/*
 * $ZERODAY_DATADIR/@name, else the installed one, else (run from the
 * build tree, not installed) the source tree's @source.
 */
static char *data_dir(const char *name, const char *source)
{
	const char *env = g_getenv("ZERODAY_DATADIR");
	g_autofree char *installed = g_build_filename(ZERODAY_DATADIR, name, NULL);

	if (env && *env)
		return g_build_filename(env, name, NULL);
	if (g_file_test(installed, G_FILE_TEST_IS_DIR))
		return g_steal_pointer(&installed);
	return g_build_filename(ZERODAY_SRCDIR, source, NULL);
}

char *config_fragment_dir(void)
{
	return data_dir("kconfig", "engine/kconfig");
}

char *config_payload_dir(void)
{
	return data_dir("payloads", "engine/payloads");
}

GArray *config_boot_payloads(const struct config *config, const char *const *names,
			     GError **error)
{
	g_autofree char *dir = config_payload_dir();
	GArray *out = g_array_new(FALSE, TRUE, sizeof(struct initramfs_payload));

	if (!names)
		names = (const char *const *)config->boot_payloads;
	for (const char *const *n = names; n && *n; n++) {
		struct initramfs_payload pl = { .timeout_s = config->boot_payload_timeout };
		char *path = g_path_is_absolute(*n) ? g_strdup(*n) : g_build_filename(dir, *n, NULL);

		if (!g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
			if (g_path_is_absolute(*n)) {
				/* External suites run only where they are installed. */
				g_message("payload %s is not installed; skipped", *n);
				g_free(path);
				continue;
			}
			g_set_error(error, BOT_ERROR, BOT_ERROR_NOT_FOUND, "no payload named '%s'", *n);
			g_free(path);
			config_boot_payloads_free(out);
			return NULL;
		}
		pl.path = path;
		pl.name = g_path_get_basename(path);
		g_array_append_val(out, pl);
	}
	return out;
}

bool config_payloads_check(const char *const *names, GError **error)
{
	g_autofree char *why = NULL;

	if (!names || check_payloads((char **)names, &why))
		return true;
	g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID, "payload %s", why);
	return false;
}

void config_boot_payloads_free(GArray *payloads)
{
	for (guint i = 0; payloads && i < payloads->len; i++) {
		g_free((char *)g_array_index(payloads, struct initramfs_payload, i).name);
		g_free((char *)g_array_index(payloads, struct initramfs_payload, i).path);
	}
	if (payloads)
		g_array_unref(payloads);
}

char *config_boot_busybox(const struct config *config, const struct boot_arch *arch,
			  GError **error)
{
	g_autofree char *path = boot_arch_native(arch)
		? g_strdup(config->boot_busybox)
		: g_build_filename(config->boot_busybox_dir, arch->userland, NULL);

	if (!g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_NOT_FOUND,
			    "no static busybox for %s guests at %s (Debian's busybox-static:%s; "
			    "see [boot] busybox%s in zeroday.conf(5))", arch->userland, path,
			    arch->userland, boot_arch_native(arch) ? "" : "-dir");
		return NULL;
	}
	return g_steal_pointer(&path);
}

char *config_template_dir(void)
{
	return data_dir("templates", "templates");
}

bool config_read_credentials(const char *path, char **user, char **password, GError **error)
{
	g_autofree char *text = NULL;
	g_auto(GStrv) lines = NULL;
	struct stat st;
	gsize len;

	*user = *password = NULL;
	if (stat(path, &st) == 0 && (st.st_mode & S_IROTH)) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_CONFIG,
			    "%s: the SMTP credentials may be read by anyone; chmod o-r it", path);
		return false;
	}
	text = config_read_file(path, 64 * 1024, &len, error);
	if (!text)
		return false;
	lines = g_strsplit(text, "\n", -1);
	explicit_bzero(text, len);
	for (char **l = lines; *l; l++) {
		char *eq = strchr(*l, '=');
		char *key = *l;
		char *value;

		if (!eq) {
			if (*g_strstrip(key) == '\0' || *key == '#')
				continue;
			g_set_error(error, BOT_ERROR, BOT_ERROR_CONFIG,
				    "%s:%d: expected \"user = NAME\" or \"password = SECRET\"", path,
				    (int)(l - lines) + 1);
			goto wipe;
		}
		*eq = '\0';
		value = g_strstrip(eq + 1);
		g_strstrip(key);
		if (*key == '#')
			continue;
		if (strcmp(key, "user") == 0 && !*user) {
			*user = g_strdup(value);
		} else if (strcmp(key, "password") == 0 && !*password) {
			*password = g_strdup(value);
		} else {
			g_set_error(error, BOT_ERROR, BOT_ERROR_CONFIG, "%s:%d: unknown or repeated key",
				    path, (int)(l - lines) + 1);
			goto wipe;
		}
	}
	if (*user && *password && **user && strlen(*user) < 256 && strlen(*password) < 256) {
		for (char **l = lines; *l; l++)
			explicit_bzero(*l, strlen(*l));
		return true;
	}
	g_set_error(error, BOT_ERROR, BOT_ERROR_CONFIG, "%s: needs a user and a password", path);
wipe:
	for (char **l = lines; *l; l++)
		explicit_bzero(*l, strlen(*l));
	config_credentials_free(*user, *password);
	*user = *password = NULL;
	return false;
}

void config_credentials_free(char *user, char *password)
{
	if (password)
		explicit_bzero(password, strlen(password));
	g_free(password);
	g_free(user);
}
