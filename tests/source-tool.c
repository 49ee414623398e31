/*
 * A driver for the mail sources (mail/source.h), for the real-server
 * tests (tests/imap-real.sh):
 *
 *	source-tool [--ca-file F] [--password P] [--size-max N] [--timeout S]
 *		list URL [AFTER_UID]    "uidvalidity N", then "UID SIZE MESSAGE-ID" a line
 *		fetch URL UID           the message's bytes on stdout
 *		wait URL SECONDS        "changed" or "timeout"
 *		relist URL PAUSE_FILE   list, wait until PAUSE_FILE exists, then fetch
 *		                        each message on the same connection
 *		fetchall URL DIR        list, plan (source_plan()) and fetch every
 *		                        message as ingest does, into DIR/UID; a line
 *		                        "UID LEN" or "UID refused: WHY" for each
 *
 * On failure: "source-tool: CLASS: MESSAGE" on stderr (CLASS: temporary,
 * permanent, invalid, failed) and exit status 2, 3, 4 or 1.
 */
#include "autoconfig.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mail/mail.h"
#include "mail/source.h"

static int fail(const GError *error)
{
	static const struct {
		int code;
		const char *name;
		int status;
	} classes[] = {
		{ MAIL_ERROR_TEMPORARY, "temporary", 2 },
		{ MAIL_ERROR_PERMANENT, "permanent", 3 },
		{ MAIL_ERROR_INVALID, "invalid", 4 },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(classes); i++) {
		if (g_error_matches(error, MAIL_ERROR, classes[i].code)) {
			fprintf(stderr, "source-tool: %s: %s\n", classes[i].name, error->message);
			return classes[i].status;
		}
	}
	fprintf(stderr, "source-tool: failed: %s\n", error->message);
	return 1;
}

static int usage(void)
{
	fprintf(stderr, "usage: source-tool [--ca-file F] [--password P] [--size-max N] "
		"[--timeout S] list URL [AFTER_UID] | fetch URL UID | wait URL SECONDS | "
		"relist URL PAUSE_FILE | fetchall URL DIR\n");
	return 64;
}

static bool write_all(const char *data, gsize len)
{
	return fwrite(data, 1, len, stdout) == len && fflush(stdout) == 0;
}

static void print_entries(guint32 uidvalidity, GPtrArray *entries)
{
	printf("uidvalidity %u\n", uidvalidity);
	for (guint i = 0; i < entries->len; i++) {
		const struct source_entry *e = entries->pdata[i];

		printf("%u %" G_GUINT64_FORMAT " %s\n", e->uid, e->size,
		       e->message_id ? e->message_id : "-");
	}
	fflush(stdout);
}

int main(int argc, char **argv)
{
	g_autofree char *ca_file = NULL;
	g_autofree char *password = NULL;
	gint64 size_max = 0;
	gint timeout = 30;
	GOptionEntry options[] = {
		{ "ca-file", 0, 0, G_OPTION_ARG_FILENAME, &ca_file, "trusted CAs", "F" },
		{ "password", 0, 0, G_OPTION_ARG_STRING, &password, "IMAP password", "P" },
		{ "size-max", 0, 0, G_OPTION_ARG_INT64, &size_max, "largest message", "N" },
		{ "timeout", 0, 0, G_OPTION_ARG_INT, &timeout, "seconds", "S" },
		{ NULL },
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new("COMMAND URL [ARG]");
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) entries = NULL;
	struct source_options opts = { 0 };
	struct source *s;
	const char *cmd;
	guint32 uidvalidity = 0;
	int status = 0;

	/* Traces (G_MESSAGES_DEBUG=mail) on stderr: stdout is for the answers. */
	g_log_writer_default_set_use_stderr(TRUE);
	g_option_context_add_main_entries(ctx, options, NULL);
	if (!g_option_context_parse(ctx, &argc, &argv, &error)) {
		fprintf(stderr, "source-tool: %s\n", error->message);
		return usage();
	}
	if (argc < 3 || timeout < 0 || size_max < 0)
		return usage();
	cmd = argv[1];
	opts = (struct source_options){ .ca_file = ca_file, .password = password,
					.timeout = (unsigned)timeout, .size_max = (gsize)size_max };
	s = source_open(argv[2], &opts, &error);
	if (!s)
		return fail(error);
	g_debug("opened %s", source_name(s));
	if (strcmp(cmd, "list") == 0 && argc <= 4) {
		guint32 after = argc == 4 ? (guint32)g_ascii_strtoull(argv[3], NULL, 10) : 0;

		if (!source_list(s, after, 0, &uidvalidity, &entries, &error))
			status = fail(error);
		else
			print_entries(uidvalidity, entries);
	} else if (strcmp(cmd, "fetch") == 0 && argc == 4) {
		guint32 uid = (guint32)g_ascii_strtoull(argv[3], NULL, 10);
		const struct source_entry *found = NULL;

		/* The entry as the source lists it (its size checked against the cap). */
		if (!source_list(s, uid ? uid - 1 : 0, 0, &uidvalidity, &entries, &error)) {
			status = fail(error);
			goto out;
		}
		for (guint i = 0; i < entries->len && !found; i++) {
			const struct source_entry *e = entries->pdata[i];

			if (e->uid == uid || (e->name && strcmp(e->name, argv[3]) == 0))
				found = e;
		}
		if (!found) {
			fprintf(stderr, "source-tool: no message %s\n", argv[3]);
			status = 1;
		} else {
			gsize len = 0;
			g_autofree char *data = source_fetch(s, found, &len, &error);

			if (!data)
				status = fail(error);
			else if (!write_all(data, len))
				status = 1;
		}
	} else if (strcmp(cmd, "wait") == 0 && argc == 4) {
		bool changed = false;

		if (!source_wait(s, (unsigned)atoi(argv[3]), &changed, &error))
			status = fail(error);
		else
			printf("%s\n", changed ? "changed" : "timeout");
	} else if (strcmp(cmd, "relist") == 0 && argc == 4) {
		if (!source_list(s, 0, 0, &uidvalidity, &entries, &error)) {
			status = fail(error);
			goto out;
		}
		print_entries(uidvalidity, entries);
		printf("paused\n");
		fflush(stdout);
		while (access(argv[3], F_OK) != 0)
			g_usleep(100000);
		for (guint i = 0; i < entries->len; i++) {
			gsize len = 0;
			g_autofree char *data = source_fetch(s, entries->pdata[i], &len, &error);

			if (!data) {
				status = fail(error);
				break;
			}
			printf("fetched %u: %" G_GSIZE_FORMAT " bytes\n",
			       ((struct source_entry *)entries->pdata[i])->uid, len);
		}
	} else if (strcmp(cmd, "fetchall") == 0 && argc == 4) {
		if (!source_list(s, 0, 0, &uidvalidity, &entries, &error)) {
			status = fail(error);
			goto out;
		}
		source_plan(s, entries);
		for (guint i = 0; i < entries->len && !status; i++) {
			const struct source_entry *e = entries->pdata[i];
			g_autofree char *name = g_strdup_printf("%u", e->uid);
			g_autofree char *path = g_build_filename(argv[3], name, NULL);
			gsize len = 0;
			g_autofree char *data = source_fetch(s, e, &len, &error);

			if (!data && g_error_matches(error, MAIL_ERROR, MAIL_ERROR_INVALID)) {
				printf("%u refused: %s\n", e->uid, error->message);
				g_clear_error(&error);
			} else if (!data) {
				status = fail(error);
			} else if (!g_file_set_contents(path, data, (gssize)len, &error)) {
				status = fail(error);
			} else {
				printf("%u %" G_GSIZE_FORMAT "\n", e->uid, len);
			}
		}
	} else {
		status = usage();
	}
out:
	source_close(s);
	return status;
}
