/*
 * Files a sandboxed build left behind: see hostile.h.
 */
#define G_LOG_DOMAIN "engine"

#include "autoconfig.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/hostile.h"

/*
 * While reading below a build directory as root, this thread's file
 * system identity is the sandbox user's (setfsuid is per thread, and
 * drops CAP_DAC_OVERRIDE with it): whatever a build put there, root's
 * files stay out of reach.
 */
struct fs_identity {
	int uid, gid; /* the previous ones; -1: unchanged */
};

/* The sandbox user's ids, looked up once: every kept object's file comes here. */
static bool sandbox_ids(uid_t *uid, gid_t *gid)
{
	static gsize once;
	static uid_t cached_uid;
	static gid_t cached_gid;
	static bool found;

	if (g_once_init_enter(&once)) {
		struct passwd pw, *p = NULL;
		char buf[1024];

		if (getpwnam_r("nobody", &pw, buf, sizeof(buf), &p) == 0 && p) {
			cached_uid = pw.pw_uid;
			cached_gid = pw.pw_gid;
			found = true;
		}
		g_once_init_leave(&once, 1);
	}
	*uid = cached_uid;
	*gid = cached_gid;
	return found;
}

static struct fs_identity become_sandbox_user(void)
{
	struct fs_identity old = { -1, -1 };
	uid_t uid;
	gid_t gid;

	if (geteuid() != 0 || !sandbox_ids(&uid, &gid))
		return old;
	old.gid = setfsgid(gid);
	old.uid = setfsuid(uid);
	return old;
}

static void restore_identity(struct fs_identity old)
{
	if (old.uid >= 0)
		setfsuid((uid_t)old.uid);
	if (old.gid >= 0)
		setfsgid((gid_t)old.gid);
}

/*
 * Opens @relpath below the directory @fd (which it closes) a component at
 * a time, never following a link.
 */
static int open_components(int fd, const char *dir, const char *relpath, GError **error)
{
	g_auto(GStrv) parts = NULL;

	parts = g_strsplit(relpath, "/", -1);
	for (char **p = parts; *p; p++) {
		bool last = p[1] == NULL;
		int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY |
			    (last ? O_NONBLOCK : O_DIRECTORY);
		int next;

		if (!**p || strcmp(*p, ".") == 0)
			continue;
		if (strcmp(*p, "..") == 0) {
			close(fd);
			g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID,
				    "%s/%s: '..' refused", dir, relpath);
			return -1;
		}
		next = openat(fd, *p, flags);
		close(fd);
		if (next < 0) {
			int e = errno;

			g_set_error(error, ENGINE_ERROR,
				    e == ENOENT ? ENGINE_ERROR_NOT_FOUND
				    : e == ELOOP || e == ENOTDIR ? ENGINE_ERROR_INVALID
								 : ENGINE_ERROR_FAILED,
				    "%s/%s: %s", dir, relpath,
				    e == ELOOP ? "a symbolic link, refused"
				    : e == ENOTDIR ? "a path through a link or a non-directory, refused"
						   : g_strerror(e));
			return -1;
		}
		fd = next;
	}
	return fd;
}

/*
 * Opens @relpath below @dir for reading, a component at a time, never
 * following a link; checks the result is a regular file with one link of
 * at most @max bytes. Returns the descriptor, or -1 with @error set.
 */
static int open_beneath(struct stat *st, const char *dir, const char *relpath, guint64 max,
			GError **error)
{
	struct fs_identity old;
	int fd;

	if (!*relpath || g_path_is_absolute(relpath)) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID, "%s: not a relative path",
			    relpath);
		return -1;
	}
	/* The directory itself is zeroday's: reached with zeroday's rights. */
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s: %s", dir,
			    g_strerror(errno));
		return -1;
	}
	old = become_sandbox_user();
	fd = open_components(fd, dir, relpath, error);
	restore_identity(old);
	if (fd < 0)
		return -1;
	if (fstat(fd, st) < 0) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s/%s: %s", dir, relpath,
			    g_strerror(errno));
		close(fd);
		return -1;
	}
	if (!S_ISREG(st->st_mode) || st->st_nlink != 1) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID,
			    "%s/%s: %s, refused", dir, relpath,
			    !S_ISREG(st->st_mode) ? "not a regular file" : "a file with hard links");
		close(fd);
		return -1;
	}
	if ((guint64)st->st_size > max) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_LIMIT,
			    "%s/%s: %" G_GINT64_FORMAT " bytes, over the cap of %" G_GUINT64_FORMAT,
			    dir, relpath, (gint64)st->st_size, max);
		close(fd);
		return -1;
	}
	/* Reads block again: a regular file never makes them wait. */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

bool hostile_read(char **contents, gsize *len, const char *dir, const char *relpath, gsize max,
		  GError **error)
{
	struct stat st;
	g_autoptr(GByteArray) buf = g_byte_array_new();
	int fd = open_beneath(&st, dir, relpath, max, error);

	if (fd < 0)
		return false;
	for (;;) {
		guint8 chunk[65536];
		ssize_t n = read(fd, chunk, sizeof(chunk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s/%s: %s", dir,
				    relpath, g_strerror(errno));
			close(fd);
			return false;
		}
		if (n == 0)
			break;
		/* The file may grow after fstat: the cap holds all the same. */
		if (buf->len + (gsize)n > max) {
			g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_LIMIT,
				    "%s/%s: over the cap of %" G_GSIZE_FORMAT " bytes", dir, relpath,
				    max);
			close(fd);
			return false;
		}
		g_byte_array_append(buf, chunk, (guint)n);
	}
	close(fd);
	if (len)
		*len = buf->len;
	g_byte_array_append(buf, (const guint8 *)"", 1);
	*contents = (char *)g_byte_array_free(g_steal_pointer(&buf), FALSE);
	return true;
}

/*
 * Copies @in to @out up to its end, adding what it copies to *@used,
 * which may not pass @cap (a file may grow after its fstat: the cap holds
 * all the same). Returns 0; 1 when the cap was passed; -1 with errno set
 * when a read or a write failed.
 */
static int copy_capped(int in, int out, guint64 *used, guint64 cap)
{
	for (;;) {
		char chunk[65536];
		ssize_t n = read(in, chunk, sizeof(chunk));
		ssize_t done = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			return 0;
		*used += (guint64)n;
		if (*used > cap)
			return 1;
		while (done < n) {
			ssize_t w = write(out, chunk + done, (size_t)(n - done));

			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0)
				return -1;
			done += w;
		}
	}
}

bool hostile_copy(const char *dir, const char *relpath, guint64 max, const char *dest,
		  mode_t mode, GError **error)
{
	struct stat st;
	g_autofree char *tmp = g_strconcat(dest, ".tmp-XXXXXX", NULL);
	guint64 copied = 0;
	int in = open_beneath(&st, dir, relpath, max, error);
	int out;

	if (in < 0)
		return false;
	out = g_mkstemp_full(tmp, O_WRONLY | O_CLOEXEC, mode);
	if (out < 0) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s: %s", tmp,
			    g_strerror(errno));
		close(in);
		return false;
	}
	switch (copy_capped(in, out, &copied, max)) {
	case -1:
		goto io_error;
	case 1:
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_LIMIT,
			    "%s/%s: over the cap of %" G_GUINT64_FORMAT " bytes", dir, relpath, max);
		goto fail;
	}
	if (fchmod(out, mode) < 0 || fsync(out) < 0 || close(out) < 0) {
		out = -1;
		goto io_error;
	}
	out = -1;
	if (rename(tmp, dest) < 0)
		goto io_error;
	close(in);
	return true;
io_error:
	g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "copying %s/%s to %s: %s", dir,
		    relpath, dest, g_strerror(errno));
fail:
	if (out >= 0)
		close(out);
	close(in);
	unlink(tmp);
	return false;
}

bool hostile_is_file(const char *dir, const char *relpath)
{
	struct stat st;
	int fd = open_beneath(&st, dir, relpath, G_MAXUINT64, NULL);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

bool hostile_is_dir(const char *dir, const char *relpath)
{
	struct fs_identity old;
	struct stat st;
	bool is_dir;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return false;
	old = become_sandbox_user();
	fd = open_components(fd, dir, relpath, NULL);
	restore_identity(old);
	if (fd < 0)
		return false;
	is_dir = fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
	close(fd);
	return is_dir;
}


/* Writes all of @len bytes of @text to @fd; false with errno set. */
static bool write_all(int fd, const char *text, gsize len)
{
	while (len) {
		ssize_t w = write(fd, text, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return false;
		text += w;
		len -= (gsize)w;
	}
	return true;
}

bool hostile_write(const char *dir, const char *relpath, const char *text, gsize len,
		   GError **error)
{
	g_autofree char *parent = g_path_get_dirname(relpath);
	g_autofree char *name = g_path_get_basename(relpath);
	g_autofree char *tmp = NULL;
	struct fs_identity old;
	struct stat st;
	int saved = 0;
	bool ok = false;
	int fd, out;

	if (!*relpath || g_path_is_absolute(relpath) || strcmp(name, "..") == 0 ||
	    strcmp(name, ".") == 0 || strcmp(name, "/") == 0) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID, "%s: not a relative path",
			    relpath);
		return false;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s: %s", dir,
			    g_strerror(errno));
		return false;
	}
	/* The way there is the build's: walked as for reading. */
	old = become_sandbox_user();
	if (strcmp(parent, ".") != 0)
		fd = open_components(fd, dir, parent, error);
	restore_identity(old);
	if (fd < 0)
		return false;
	if (fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode)) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID, "%s/%s: not a directory",
			    dir, parent);
		close(fd);
		return false;
	}
	/*
	 * The file is zeroday's, made anew and renamed over the name: what
	 * the build left there (a link, a FIFO, a hard link) is replaced,
	 * never opened.
	 */
	if (!text) {
		ok = unlinkat(fd, name, 0) == 0 || errno == ENOENT;
		saved = errno;
		goto out;
	}
	tmp = g_strdup_printf(".%s.zd-tmp-%d", name, (int)getpid());
	if (unlinkat(fd, tmp, 0) < 0 && errno != ENOENT) {
		saved = errno;
		goto out;
	}
	out = openat(fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (out < 0) {
		saved = errno;
		goto out;
	}
	ok = write_all(out, text, len);
	saved = errno;
	if (close(out) < 0 && ok) {
		ok = false;
		saved = errno;
	}
	if (ok && renameat(fd, tmp, fd, name) < 0) {
		ok = false;
		saved = errno;
	}
	if (!ok)
		unlinkat(fd, tmp, 0);
out:
	close(fd);
	if (!ok)
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s/%s: %s", dir, relpath,
			    g_strerror(saved));
	return ok;
}

/* One tree copy: the caps and what it used so far. */
struct tree_copy {
	const struct hostile_tree_caps *caps;
	const char *top; /* for messages: dir/relpath */
	guint files;
	guint64 bytes;
};

static bool tree_refuse(GError **error, int code, const char *top, const char *rel,
			const char *why)
{
	g_set_error(error, ENGINE_ERROR, code, "%s/%s: %s, refused", top, rel, why);
	return false;
}

/* Copies the open regular file @in (its status @st) to @out_path. */
static bool tree_copy_file(struct tree_copy *t, int in, const struct stat *st, const char *rel,
			   const char *out_path, GError **error)
{
	mode_t mode = (st->st_mode & 0111) ? 0755 : 0644;
	int out = open(out_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);

	if (out < 0) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s: %s", out_path,
			    g_strerror(errno));
		return false;
	}
	switch (copy_capped(in, out, &t->bytes, t->caps->max_bytes)) {
	case -1:
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "copying %s/%s to %s: %s",
			    t->top, rel, out_path, g_strerror(errno));
		close(out);
		return false;
	case 1:
		close(out);
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_LIMIT,
			    "%s/%s: the tree is over the cap of %" G_GUINT64_FORMAT " bytes",
			    t->top, rel, t->caps->max_bytes);
		return false;
	}
	if (fchmod(out, mode) < 0 || close(out) < 0) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s: %s", out_path,
			    g_strerror(errno));
		return false;
	}
	return true;
}

static int compare_names(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Copies the directory open at @fd (which it closes), @rel below the top,
 * into the existing directory @out_dir.
 */
static bool tree_copy_dir(struct tree_copy *t, int fd, const char *rel, const char *out_dir,
			  guint depth, GError **error)
{
	g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
	DIR *d = fdopendir(fd);
	struct dirent *e;

	if (!d) {
		close(fd);
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s/%s: %s", t->top, rel,
			    g_strerror(errno));
		return false;
	}
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			g_ptr_array_add(names, g_strdup(e->d_name));
		if (names->len > t->caps->max_files)
			break;
	}
	g_ptr_array_sort(names, compare_names);
	for (guint i = 0; i < names->len; i++) {
		const char *name = names->pdata[i];
		g_autofree char *sub = *rel ? g_strconcat(rel, "/", name, NULL) : g_strdup(name);
		g_autofree char *out_path = g_build_filename(out_dir, name, NULL);
		struct fs_identity old;
		struct stat st;
		bool ok;
		int child;

		if (++t->files > t->caps->max_files) {
			closedir(d);
			g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_LIMIT,
				    "%s/%s: the tree has over %u entries", t->top, sub,
				    t->caps->max_files);
			return false;
		}
		/* Opened as the sandbox user; the copy is written as zeroday. */
		old = become_sandbox_user();
		child = openat(dirfd(d), name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
					       O_NOCTTY);
		restore_identity(old);
		if (child < 0) {
			int e2 = errno;

			closedir(d);
			return e2 == ELOOP
			       ? tree_refuse(error, ENGINE_ERROR_INVALID, t->top, sub,
					     "a symbolic link")
			       : tree_refuse(error, ENGINE_ERROR_INVALID, t->top, sub,
					     g_strerror(e2));
		}
		if (fstat(child, &st) < 0) {
			close(child);
			closedir(d);
			g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s/%s: %s", t->top,
				    sub, g_strerror(errno));
			return false;
		}
		if (S_ISDIR(st.st_mode)) {
			if (depth + 1 > t->caps->max_depth) {
				close(child);
				closedir(d);
				g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_LIMIT,
					    "%s/%s: deeper than %u directories", t->top, sub,
					    t->caps->max_depth);
				return false;
			}
			if (mkdir(out_path, 0755) < 0) {
				close(child);
				closedir(d);
				g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s: %s",
					    out_path, g_strerror(errno));
				return false;
			}
			ok = tree_copy_dir(t, child, sub, out_path, depth + 1, error);
		} else if (!S_ISREG(st.st_mode)) {
			close(child);
			closedir(d);
			return tree_refuse(error, ENGINE_ERROR_INVALID, t->top, sub,
					   "not a regular file or a directory");
		} else if (st.st_nlink != 1) {
			close(child);
			closedir(d);
			return tree_refuse(error, ENGINE_ERROR_INVALID, t->top, sub,
					   "a file with hard links");
		} else if (t->bytes + (guint64)st.st_size > t->caps->max_bytes) {
			close(child);
			closedir(d);
			g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_LIMIT,
				    "%s/%s: the tree is over the cap of %" G_GUINT64_FORMAT " bytes",
				    t->top, sub, t->caps->max_bytes);
			return false;
		} else {
			fcntl(child, F_SETFL, fcntl(child, F_GETFL) & ~O_NONBLOCK);
			ok = tree_copy_file(t, child, &st, sub, out_path, error);
			close(child);
		}
		if (!ok) {
			closedir(d);
			return false;
		}
	}
	closedir(d);
	return true;
}

/* Removes a partial copy: zeroday's own files, no link among them. */
static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static void remove_copy(const char *path)
{
	nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

bool hostile_copy_tree(const char *dir, const char *relpath, const char *dest,
		       const struct hostile_tree_caps *caps, GError **error)
{
	g_autofree char *top = g_build_filename(dir, relpath, NULL);
	g_autofree char *tmp = g_strconcat(dest, ".tmp-XXXXXX", NULL);
	struct tree_copy t = { .caps = caps, .top = top };
	struct fs_identity old;
	struct stat st;
	bool ok;
	int fd;

	if (!*relpath || g_path_is_absolute(relpath)) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID, "%s: not a relative path",
			    relpath);
		return false;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s: %s", dir,
			    g_strerror(errno));
		return false;
	}
	old = become_sandbox_user();
	fd = open_components(fd, dir, relpath, error);
	restore_identity(old);
	if (fd < 0)
		return false;
	if (fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode)) {
		close(fd);
		return tree_refuse(error, ENGINE_ERROR_INVALID, dir, relpath, "not a directory");
	}
	if (!g_mkdtemp_full(tmp, 0755)) {
		close(fd);
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s: %s", tmp,
			    g_strerror(errno));
		return false;
	}
	/* Below the top, entries are opened relative to their directory's descriptor. */
	ok = tree_copy_dir(&t, fd, "", tmp, 0, error);
	if (ok && chmod(tmp, 0755) < 0)
		ok = false;
	if (ok) {
		remove_copy(dest);
		if (rename(tmp, dest) < 0) {
			g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s: %s", dest,
				    g_strerror(errno));
			ok = false;
		}
	}
	if (!ok)
		remove_copy(tmp);
	return ok;
}
