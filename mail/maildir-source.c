/*
 * The Maildir source: see source.h. Lists the regular files of new/
 * (nothing else: a symbolic link, a FIFO or a device there is skipped
 * and logged, and never opened for reading in a way that could block),
 * and moves a stored message to cur/ with the seen flag.
 */
#define G_LOG_DOMAIN "mail"

#include "autoconfig.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mail/mail.h"
#include "mail/source-private.h"

/* A file name's longest spelling in new/. */
#define NAME_MAX_LEN 255
/* The part of a file read for its Message-ID, at most. */
#define HEADER_MAX (64 * 1024)

struct maildir_source {
	struct source base;
	char *new_dir;
	char *cur_dir;
};

static bool fail_errno(GError **error, int saved, const char *what, const char *path)
{
	g_set_error(error, MAIL_ERROR, MAIL_ERROR_FAILED, "%s %s: %s", what, path,
		    g_strerror(saved));
	return false;
}

/* A plain file name as Maildir deliverers make them: no path, no dot file, ASCII. */
static bool name_ok(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len > NAME_MAX_LEN || name[0] == '.')
		return false;
	for (const char *p = name; *p; p++) {
		if (!g_ascii_isalnum(*p) && !strchr("._-,:=+", *p))
			return false;
	}
	return true;
}

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool md_open(struct source *base, GError **error)
{
	struct maildir_source *s = (struct maildir_source *)base;

	s->new_dir = g_build_filename(base->url.path, "new", NULL);
	s->cur_dir = g_build_filename(base->url.path, "cur", NULL);
	if (!is_dir(s->new_dir) || !is_dir(s->cur_dir)) {
		g_set_error(error, MAIL_ERROR, MAIL_ERROR_PERMANENT, "%s: not a Maildir (no new/ "
			    "and cur/ directories)", base->name);
		return false;
	}
	return true;
}

/*
 * Opens new/@name for reading if it is a regular file: a symbolic link
 * is not followed, a FIFO does not block. -1 with @error (INVALID for
 * what is not a regular file) otherwise; *@st its status.
 */
static int open_regular(struct maildir_source *s, const char *name, struct stat *st,
			GError **error)
{
	g_autofree char *path = g_build_filename(s->new_dir, name, NULL);
	int fd;

	if (!name_ok(name)) {
		g_autofree char *shown = g_strescape(name, NULL);

		g_set_error(error, MAIL_ERROR, MAIL_ERROR_INVALID, "not a Maildir name: '%s'",
			    shown);
		return -1;
	}
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		int saved = errno;

		if (saved == ELOOP)
			g_set_error(error, MAIL_ERROR, MAIL_ERROR_INVALID,
				    "%s: a symbolic link, not a message", path);
		else
			fail_errno(error, saved, "opening", path);
		return -1;
	}
	if (fstat(fd, st) < 0) {
		fail_errno(error, errno, "reading", path);
		close(fd);
		return -1;
	}
	if (!S_ISREG(st->st_mode)) {
		g_set_error(error, MAIL_ERROR, MAIL_ERROR_INVALID, "%s: not a regular file", path);
		close(fd);
		return -1;
	}
	return fd;
}

/* Reads up to @max bytes of @fd into @out; false with @error on a read error. */
static bool read_up_to(int fd, GString *out, gsize max, const char *path, GError **error)
{
	char buf[16384];

	while (out->len < max) {
		ssize_t n = read(fd, buf, MIN(sizeof(buf), max - out->len));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return fail_errno(error, errno, "reading", path);
		if (n == 0)
			break;
		g_string_append_len(out, buf, n);
	}
	return true;
}

static gint by_name(gconstpointer a, gconstpointer b)
{
	const struct source_entry *x = *(struct source_entry *const *)a;
	const struct source_entry *y = *(struct source_entry *const *)b;

	return strcmp(x->name, y->name);
}

static bool md_list(struct source *base, guint32 after_uid, unsigned limit, guint32 *uidvalidity,
		    GPtrArray *entries, GError **error)
{
	struct maildir_source *s = (struct maildir_source *)base;
	DIR *dir = opendir(s->new_dir);
	struct dirent *d;

	if (!dir)
		return fail_errno(error, errno, "opening", s->new_dir);
	while ((errno = 0, d = readdir(dir))) {
		g_autoptr(GError) local = NULL;
		g_autoptr(GString) head = NULL;
		struct stat st;
		int fd;

		if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
			continue;
		fd = open_regular(s, d->d_name, &st, &local);
		if (fd < 0) {
			g_message("%s: skipped: %s", base->name, local->message);
			continue;
		}
		head = g_string_new(NULL);
		if (!read_up_to(fd, head, HEADER_MAX, d->d_name, &local)) {
			g_message("%s: skipped: %s", base->name, local->message);
			close(fd);
			continue;
		}
		close(fd);
		g_ptr_array_add(entries, source_entry_new(0, d->d_name, (guint64)st.st_size,
							  source_message_id(head->str, head->len)));
	}
	if (errno != 0) {
		int saved = errno;

		closedir(dir);
		return fail_errno(error, saved, "reading", s->new_dir);
	}
	closedir(dir);
	g_ptr_array_sort(entries, by_name);
	if (limit && entries->len > limit)
		g_ptr_array_remove_range(entries, limit, entries->len - limit);
	return true;
}

static char *md_fetch(struct source *base, const struct source_entry *e, gsize *len,
		      GError **error)
{
	struct maildir_source *s = (struct maildir_source *)base;
	g_autoptr(GString) data = NULL;
	struct stat st;
	int fd;

	if (!e->name) {
		g_set_error(error, MAIL_ERROR, MAIL_ERROR_INVALID, "%s: an entry without a name",
			    base->name);
		return NULL;
	}
	fd = open_regular(s, e->name, &st, error);
	if (fd < 0)
		return NULL;
	if ((guint64)st.st_size > base->size_max) {
		close(fd);
		source_too_large(error, base, (guint64)st.st_size);
		return NULL;
	}
	data = g_string_sized_new((gsize)st.st_size + 1);
	/* One byte more than allowed: a file grown since is seen. */
	if (!read_up_to(fd, data, base->size_max + 1, e->name, error)) {
		close(fd);
		return NULL;
	}
	close(fd);
	if (data->len > base->size_max) {
		source_too_large(error, base, data->len);
		return NULL;
	}
	*len = data->len;
	return g_string_free(g_steal_pointer(&data), FALSE);
}

static bool sync_dir(const char *path, GError **error)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int saved;

	if (fd < 0)
		return fail_errno(error, errno, "opening", path);
	if (fsync(fd) < 0) {
		saved = errno;
		close(fd);
		return fail_errno(error, saved, "syncing", path);
	}
	close(fd);
	return true;
}

static bool md_done(struct source *base, const struct source_entry *e, GError **error)
{
	struct maildir_source *s = (struct maildir_source *)base;
	g_autofree char *from = NULL;
	g_autofree char *to = NULL;

	if (!e->name || !name_ok(e->name) || strchr(e->name, ':')) {
		g_set_error(error, MAIL_ERROR, MAIL_ERROR_INVALID, "%s: not a name in new/",
			    base->name);
		return false;
	}
	from = g_build_filename(s->new_dir, e->name, NULL);
	to = g_strdup_printf("%s/%s:2,S", s->cur_dir, e->name);
	if (rename(from, to) < 0)
		return fail_errno(error, errno, "moving to cur/", from);
	return sync_dir(s->cur_dir, error) && sync_dir(s->new_dir, error);
}

static bool md_wait(struct source *base, unsigned seconds, bool *changed, GError **error)
{
	struct maildir_source *s = (struct maildir_source *)base;
	int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	gint64 end = g_get_monotonic_time() + (gint64)seconds * G_USEC_PER_SEC;

	if (fd < 0 || inotify_add_watch(fd, s->new_dir, IN_CREATE | IN_MOVED_TO) < 0) {
		/* No inotify: a sleep, and the caller lists anyway. */
		g_debug("%s: no inotify (%s): sleeping", base->name, g_strerror(errno));
		if (fd >= 0)
			close(fd);
		g_usleep((gulong)seconds * G_USEC_PER_SEC);
		return true;
	}
	while (!*changed) {
		gint64 left = end - g_get_monotonic_time();
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int r;

		if (left <= 0)
			break;
		r = poll(&pfd, 1, (int)MIN(left / 1000 + 1, G_MAXINT));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int saved = errno;

			close(fd);
			return fail_errno(error, saved, "waiting on", s->new_dir);
		}
		*changed = r > 0;
	}
	close(fd);
	return true;
}

static void md_close(struct source *base)
{
	struct maildir_source *s = (struct maildir_source *)base;

	g_free(s->new_dir);
	g_free(s->cur_dir);
}

const struct source_driver maildir_source_driver = {
	.size = sizeof(struct maildir_source),
	.open = md_open,
	.list = md_list,
	.fetch = md_fetch,
	.done = md_done,
	.wait = md_wait,
	.close = md_close,
};
