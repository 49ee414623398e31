/*
 * zeroday.conf: read once with GKeyFile, validated, then read-only.
 * See zeroday.conf(5).
 */
#ifndef ZERODAY_CONFIG_H
#define ZERODAY_CONFIG_H

#include <stdbool.h>
#include <glib.h>

#include "engine/repo.h"

struct config {
	gint refs;       /* references: config_ref(), config_free() */
	char *path;      /* the file read, or NULL for the embedded defaults */
	char *state_dir; /* holds zeroday.db, git/ and logs/ */
	unsigned workers; /* jobs `zeroday run` runs at once */

	/* [git] */
	bool allow_ssh;
	bool allow_local;
	unsigned max_new_commits;
	unsigned poll_jobs;
	struct repo_limits limits;

	/* [build] */
	unsigned build_jobs;
	unsigned build_timeout;
	guint64 build_max_memory;
	unsigned build_max_procs;
	bool build_sandbox;
	bool build_ccache;
	char **build_targets; /* the default targets, NULL-terminated */
	char *build_executor; /* "local" or "slurm": where builds run (bot/lab/executor.h) */

	/* [slurm]: the Slurm executor's cluster (bot/lab/slurm.h) */
	char *slurm_spool;     /* the directory zeroday and every node share, same path */
	char *slurm_node_root; /* where a node keeps its work trees, O= and caches */
	char *slurm_zeroday;   /* zeroday's path on the nodes; NULL: this program's path */
	char *slurm_partition; /* NULL: Slurm's default */
	unsigned slurm_poll;   /* seconds between two questions to Slurm about a job */
	bool slurm_shared_ccache; /* the nodes share each tree's compiler cache on the spool */

	/* [boot] */
	char **boot_hosts;      /* libvirt URIs, each optionally "*N" slots */
	unsigned boot_timeout;
	unsigned boot_memory;   /* MiB */
	unsigned boot_repeat;
	char **boot_payloads;   /* shipped names or absolute paths */
	unsigned boot_payload_timeout;
	char *boot_kvm;         /* "false", "true" or "auto" */
	char *boot_busybox;     /* the machine's own arch's */
	char *boot_busybox_dir; /* other arches': DIR/DEBIAN-ARCH */
	char **boot_cmdline;    /* words added to every boot's kernel command line, or NULL */

	/* [mail] */
	char *mail_address;     /* the bot's address (addr-spec): the From of every mail */
	char *mail_name;        /* its display name */
	char *mail_archive_url; /* a report's Closes: link is this and its Message-ID; NULL: none */
	char *report_artifacts_dir; /* a web directory reports' full files are written to; NULL: none */
	char *report_artifacts_url; /* its URL, linked from reports */
	char *mail_archive_list; /* Cc'd on reports, so that the archive holds them; NULL: none */
	char *mail_templates;   /* the directory of the report templates */
	char *mail_outbox;      /* the Maildir mail is delivered to, or the copies of what
				 * SMTP sent kept; NULL: STATE/outbox */
	char *mail_smtp_host;   /* NULL: deliver to the Maildir, no server */
	unsigned mail_smtp_port;
	bool mail_smtps;        /* implicit TLS (smtps://), else STARTTLS, required */
	char *mail_credentials; /* a file with "user = " and "password = " lines, or NULL */
	char *mail_ca_file;     /* PEM CA certificates for the server's; NULL: the system's */
	unsigned mail_timeout;  /* seconds, for each SMTP step */
	unsigned mail_retry;    /* seconds before the first retry; doubled each time */
	unsigned mail_cc_max;   /* recipients of one report, To and Cc together, at most */
	unsigned mail_max_recipient_day; /* mails to one address in 24 hours, at most */
	unsigned mail_max_hour;          /* mails in an hour, at most */
	/* Where mail is read: maildir:PATH, imap://USER@HOST[:PORT]/FOLDER, imaps://...; or NULL. */
	char **mail_sources;
	unsigned mail_grace;    /* seconds a series waits for late parts (and its cover letter) */
	/*
	 * Seconds after its last part that a series still waits for parts it
	 * lacks, or for a first poll of the tree it is for; then it is closed
	 * untested and unanswered, with a note, its parts kept.
	 */
	unsigned mail_series_timeout;
	guint64 mail_max_size;  /* bytes of one mail read, at most: larger ones are quarantined */
	guint64 mail_max_bytes; /* bytes of one report sent, at most: attachments left out past it */

	/* [commands]: mail commands (#zeroday ...); see zeroday(1). */
	char **commands_admins;         /* addresses (address_key() form) that may do anything */
	char **commands_dkim_required;  /* From domains whose commands need a DKIM signature */
	char *commands_dkim_keys;       /* a key file for tests (libopendkim's file method); NULL: DNS */
	char **commands_allowed_hosts;  /* hosts a mailed URL may name though internal */
	char **commands_ignore;         /* glob patterns of senders never answered (robots) */
	unsigned commands_max_sender_hour; /* command mails answered per sender per hour */
	unsigned commands_max_hour;        /* command mails answered per hour in all */
};

/*
 * Loads the configuration: @path if given, else $ZERODAY_CONFIG, else
 * $XDG_CONFIG_HOME/zeroday/zeroday.conf or /etc/zeroday/zeroday.conf if one
 * exists, else the embedded defaults. A non-NULL @state_dir overrides the
 * file's. The file is read from one descriptor and must be a regular file
 * of at most 1 MiB without NUL bytes. Every value is parsed and checked
 * here (ranges, build targets, host URIs and slots, payloads), so nothing
 * fails later: unknown groups or keys and invalid values fail with
 * BOT_ERROR_CONFIG naming the file, the group and the key.
 *
 * Returns a configuration freed with config_free().
 */
struct config *config_load(const char *path, const char *state_dir, GError **error);

/*
 * Parses configuration text, checked as config_load() checks a file's;
 * @origin names it in errors. For tests.
 */
struct config *config_load_data(const char *data, const char *origin, GError **error);

/*
 * Reads the file at @path once, from one descriptor: a regular file of at
 * most @max bytes (a FIFO does not block the open; the type is checked on
 * the descriptor, so nothing can swap the file between the check and the
 * read). Returns its bytes with a NUL after them and *@len their count
 * (caller frees); BOT_ERROR_CONFIG naming @path on failure.
 */
char *config_read_file(const char *path, gsize max, gsize *len, GError **error);

/*
 * A configuration is reference-counted so that `zeroday run` can swap in
 * a reloaded one while its workers finish their jobs on the old one:
 * config_load() returns one reference, config_ref() takes another (and
 * returns @config), config_free() drops one and frees the configuration
 * with the last. Both are thread-safe; the configuration itself is never
 * changed once loaded.
 */
struct config *config_ref(struct config *config);
void config_free(struct config *config);
ZD_AUTOPTR_DEFINE(config, config_free)

/*
 * For a reload of the running daemon: the settings that cannot change
 * while it runs (the state directory, and with it the database and the
 * object store; [zeroday] workers, the size of the pool; the [git]
 * limits, applied to libgit2 once per process) are copied from @old into
 * @fresh, with a warning for each that @fresh wanted changed.
 */
void config_keep_fixed(struct config *fresh, const struct config *old);

/* Paths inside the state directory (caller frees). */
char *config_db_path(const struct config *config);
char *config_git_path(const struct config *config);
char *config_log_dir(const struct config *config);
char *config_outbox_path(const struct config *config);

/*
 * Reads the SMTP credentials file: "user = NAME" and "password = SECRET"
 * lines, '#' comments. Refused when others may read it. Sets *@user and
 * *@password (caller frees; the password is wiped by
 * config_credentials_free()).
 */
bool config_read_credentials(const char *path, char **user, char **password, GError **error);
void config_credentials_free(char *user, char *password);

/* Where zeroday's config fragments are: $ZERODAY_DATADIR/kconfig, else the installed ones. */
char *config_fragment_dir(void);

/* Where zeroday's boot payloads are, likewise. */
char *config_payload_dir(void);

/*
 * The boot payloads @names (shipped names or absolute paths; NULL: [boot]
 * payloads) as the initramfs takes them, an array of struct
 * initramfs_payload with [boot] payload-timeout: an absolute path that is
 * not installed is left out, with a log line; a shipped name that is not
 * there is an error. Free with config_boot_payloads_free().
 */
GArray *config_boot_payloads(const struct config *config, const char *const *names,
			     GError **error);

/*
 * Checks a list of payloads as [boot] payloads is checked: shipped names
 * that are installed, or absolute paths with a payload's file name, each
 * name once. ENGINE_ERROR_INVALID says which is refused.
 */
bool config_payloads_check(const char *const *names, GError **error);
void config_boot_payloads_free(GArray *payloads);

/*
 * The static busybox for the initramfs of @arch's kernels (caller frees):
 * [boot] busybox for this machine's own arch, else [boot] busybox-dir/
 * NAME, NAME being Debian's name of the arch (arm64, riscv64, i386).
 * Fails, naming the file, when it is missing.
 */
struct boot_arch;
char *config_boot_busybox(const struct config *config, const struct boot_arch *arch,
			  GError **error);

/* Where zeroday's report templates are, likewise ($ZERODAY_DATADIR/templates). */
char *config_template_dir(void);

#endif
