/*
 * Maildir delivery: see maildir.h (and notmuch-insert.c, which does the
 * same dance: tmp/, fsync, link, unlink, fsync the directory).
 */
#define G_LOG_DOMAIN "mail"

#include "autoconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mail/mail.h"
#include "mail/maildir.h"

static bool fail_errno(GError **error, int saved, const char *what, const char *path)
{
	g_set_error(error, MAIL_ERROR, MAIL_ERROR_FAILED, "%s %s: %s", what, path,
		    g_strerror(saved));
	return false;
}

static bool sync_dir(const char *path, GError **error)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return fail_errno(error, errno, "opening", path);
	if (fsync(fd) < 0) {
		int saved = errno;

		close(fd);
		return fail_errno(error, saved, "syncing", path);
	}
	close(fd);
	return true;
}

bool maildir_create(const char *dir, GError **error)
{
	static const char *const subdirs[] = { "", "cur", "new", "tmp" };

	for (size_t i = 0; i < G_N_ELEMENTS(subdirs); i++) {
		g_autofree char *path = g_build_filename(dir, subdirs[i], NULL);

		if (g_mkdir_with_parents(path, 0700) < 0)
			return fail_errno(error, errno, "creating", path);
	}
	return true;
}

static bool name_ok(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len > MAILDIR_NAME_MAX || name[0] == '.')
		return false;
	for (const char *p = name; *p; p++) {
		if (!g_ascii_isalnum(*p) && !strchr("._-", *p))
			return false;
	}
	return true;
}

/* Writes @len bytes of @data to a new file @path and syncs it. */
static bool write_synced(const char *path, const char *data, gsize len, GError **error)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	gsize done = 0;
	int saved = 0;

	if (fd < 0)
		return fail_errno(error, errno, "creating", path);
	while (done < len) {
		ssize_t n = write(fd, data + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			saved = errno;
			break;
		}
		done += (gsize)n;
	}
	if (!saved && fsync(fd) < 0)
		saved = errno;
	if (close(fd) < 0 && !saved)
		saved = errno;
	if (saved) {
		unlink(path);
		return fail_errno(error, saved, "writing", path);
	}
	return true;
}

char *maildir_deliver(const char *dir, const char *name, const char *data, gsize len,
		      GError **error)
{
	g_autofree char *tmp = NULL;
	g_autofree char *new_path = NULL;
	g_autofree char *cur_path = NULL;
	g_autofree char *new_dir = NULL;
	struct stat st;

	if (!name_ok(name)) {
		g_autofree char *shown = g_strescape(name, NULL);

		g_set_error(error, MAIL_ERROR, MAIL_ERROR_INVALID, "not a Maildir name: '%s'",
			    shown);
		return NULL;
	}
	if (!maildir_create(dir, error))
		return NULL;
	new_dir = g_build_filename(dir, "new", NULL);
	new_path = g_build_filename(new_dir, name, NULL);
	cur_path = g_strdup_printf("%s/cur/%s:2,", dir, name);
	/* Delivered before (a crash after the link, before the caller recorded it). */
	if (lstat(new_path, &st) == 0 || lstat(cur_path, &st) == 0)
		return g_steal_pointer(&new_path);
	tmp = g_strdup_printf("%s/tmp/%s", dir, name);
	if (!write_synced(tmp, data, len, error))
		return NULL;
	if (link(tmp, new_path) < 0 && errno != EEXIST) {
		int saved = errno;

		unlink(tmp);
		fail_errno(error, saved, "delivering", new_path);
		return NULL;
	}
	unlink(tmp);
	if (!sync_dir(new_dir, error))
		return NULL;
	return g_steal_pointer(&new_path);
}
