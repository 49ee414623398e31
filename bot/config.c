/*
 * zeroday.conf: see config.h and zeroday.conf(5).
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "bot/bot.h"
#include "bot/config.h"
#include "engine/build.h"

G_DEFINE_QUARK(zeroday-bot-error-quark, bot_error)

enum key_type { KEY_BOOL, KEY_UINT, KEY_UINT64, KEY_PATH, KEY_LIST, KEY_KVM };

/* Every key zeroday.conf may hold: a table, not an if-chain. */
static const struct key {
	const char *group;
	const char *name;
	enum key_type type;
	size_t offset;
	guint64 min, max;
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
	{ "build", "targets", KEY_LIST, offsetof(struct config, build_targets), 0, 0 },
	{ "boot", "hosts", KEY_LIST, offsetof(struct config, boot_hosts), 0, 0 },
	{ "boot", "timeout", KEY_UINT, offsetof(struct config, boot_timeout), 5, 86400 },
	{ "boot", "memory", KEY_UINT, offsetof(struct config, boot_memory), 64, 1048576 },
	{ "boot", "repeat", KEY_UINT, offsetof(struct config, boot_repeat), 1, 100 },
	{ "boot", "payloads", KEY_LIST, offsetof(struct config, boot_payloads), 0, 0 },
	{ "boot", "payload-timeout", KEY_UINT, offsetof(struct config, boot_payload_timeout), 1, 86400 },
	{ "boot", "kvm", KEY_KVM, offsetof(struct config, boot_kvm), 0, 0 },
	{ "boot", "busybox", KEY_PATH, offsetof(struct config, boot_busybox), 0, 0 },
};

static struct config *config_defaults(void)
{
	struct config *c = g_new0(struct config, 1);

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
	c->boot_hosts = g_strsplit("qemu:///system*2", ";", -1);
	c->boot_timeout = 300;
	c->boot_memory = 512;
	c->boot_repeat = 3;
	c->boot_payloads = g_strsplit("smoke", ";", -1);
	c->boot_payload_timeout = 600;
	c->boot_kvm = g_strdup("false");
	c->boot_busybox = g_strdup("/bin/busybox");
	return c;
}

void config_free(struct config *config)
{
	if (!config)
		return;
	g_free(config->path);
	g_free(config->state_dir);
	g_strfreev(config->build_targets);
	g_strfreev(config->boot_hosts);
	g_strfreev(config->boot_payloads);
	g_free(config->boot_kvm);
	g_free(config->boot_busybox);
	g_free(config);
}

static bool bad_key(GError **error, const char *origin, const char *group, const char *key,
		    const char *why)
{
	g_set_error(error, BOT_ERROR, BOT_ERROR_CONFIG, "%s: [%s] %s: %s", origin, group,
		    key, why);
	return false;
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

static bool set_key(struct config *c, GKeyFile *kf, const char *origin, const struct key *k,
		    GError **error)
{
	g_autofree char *raw = g_key_file_get_value(kf, k->group, k->name, NULL);
	char *field = (char *)c + k->offset;
	guint64 v;
	char *end;

	g_strstrip(raw);
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
	case KEY_UINT64:
		errno = 0;
		v = g_ascii_strtoull(raw, &end, 10);
		if (raw[0] == '\0' || raw[0] == '-' || *end != '\0' || errno != 0)
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
	case KEY_LIST: {
		g_auto(GStrv) items = g_key_file_get_string_list(kf, k->group, k->name, NULL, NULL);
		g_autoptr(GStrvBuilder) b = g_strv_builder_new();

		for (char **i = items; i && *i; i++) {
			g_strstrip(*i);
			if (**i)
				g_strv_builder_add(b, *i);
		}
		g_strfreev(*(char ***)field);
		*(char ***)field = g_strv_builder_end(b);
		if (!(*(char ***)field)[0])
			return bad_key(error, origin, k->group, k->name, "expected a list");
		return true;
	}
	case KEY_KVM:
		if (strcmp(raw, "true") != 0 && strcmp(raw, "false") != 0 &&
		    strcmp(raw, "auto") != 0)
			return bad_key(error, origin, k->group, k->name,
				       "expected true, false or auto");
		g_free(*(char **)field);
		*(char **)field = g_strdup(raw);
		return true;
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

struct config *config_load(const char *path, const char *state_dir, GError **error)
{
	g_autofree char *file = path ? g_strdup(path) : find_config_file();
	zd_autoptr(config) c = NULL;

	if (file) {
		g_autofree char *data = NULL;
		g_autoptr(GError) local = NULL;

		if (!g_file_get_contents(file, &data, NULL, &local)) {
			g_set_error(error, BOT_ERROR, BOT_ERROR_CONFIG, "%s", local->message);
			return NULL;
		}
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

static char *data_dir(const char *name)
{
	const char *env = g_getenv("ZERODAY_DATADIR");
	g_autofree char *installed = g_build_filename(ZERODAY_DATADIR, name, NULL);

	if (env && *env)
		return g_build_filename(env, name, NULL);
	if (g_file_test(installed, G_FILE_TEST_IS_DIR))
		return g_steal_pointer(&installed);
	/* Run from the build tree, not installed. */
	return g_build_filename(ZERODAY_SRCDIR, "engine", name, NULL);
}

char *config_fragment_dir(void)
{
	return data_dir("kconfig");
}

char *config_payload_dir(void)
{
	return data_dir("payloads");
}
