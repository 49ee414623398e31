/*
 * Files a sandboxed build left behind, read by zeroday. Everything a build
 * writes is hostile: a path may hold a link to a file only root may read,
 * a FIFO that blocks its reader forever, a hard link, or gigabytes. These
 * open a path below a directory one component at a time without following
 * any link (O_NOFOLLOW at every step), never block on opening, accept only
 * a regular file with one link, and stop at a size cap.
 */
#ifndef ZERODAY_HOSTILE_H
#define ZERODAY_HOSTILE_H

#include <stdbool.h>
#include <sys/types.h>
#include <glib.h>

#include "engine/engine.h"

/*
 * Reads @relpath below @dir (a relative path without "..") into a new
 * NUL-terminated buffer (*@contents, caller frees; *@len its length, may
 * be NULL). Refused with ENGINE_ERROR_INVALID when any component is a
 * link or the file is not a regular file with one link; ENGINE_ERROR_LIMIT
 * when it is larger than @max; ENGINE_ERROR_NOT_FOUND when missing. Each
 * message names the file.
 */
bool hostile_read(char **contents, gsize *len, const char *dir, const char *relpath,
		  gsize max, GError **error);

/*
 * Copies @relpath below @dir, under the same rules, to @dest (written
 * anew through a temporary file and a rename, with @mode).
 */
bool hostile_copy(const char *dir, const char *relpath, guint64 max, const char *dest,
		  mode_t mode, GError **error);

/*
 * Whether @relpath below @dir is a regular file (no link on the way), for
 * a test that must not block or follow a link.
 */
bool hostile_is_file(const char *dir, const char *relpath);

/*
 * Whether @relpath below @dir is a directory, reached without following a
 * link.
 */
bool hostile_is_dir(const char *dir, const char *relpath);

/*
 * Writes @len bytes of @text as @relpath below @dir, a file of zeroday's
 * among a build's (a temporary file beside it, renamed over whatever was
 * there: a link planted at the name is replaced, never followed); the
 * directories on the way are reached as for reading (as the sandbox
 * user when root; the file is then zeroday's own). With @text NULL,
 * removes @relpath if it is there.
 */
bool hostile_write(const char *dir, const char *relpath, const char *text, gsize len,
		   GError **error);

/* What hostile_copy_tree() takes at most. */
struct hostile_tree_caps {
	guint max_files;   /* files and directories */
	guint max_depth;   /* directories below the top */
	guint64 max_bytes; /* all files together */
};

/*
 * Copies the directory @relpath below @dir, under the same rules, to the
 * new directory @dest (built as a temporary sibling, then renamed over
 * whatever @dest was): directories and regular files with one link only,
 * opened with O_NOFOLLOW at every step; anything else (a link, a FIFO, a
 * device, a socket, a hard link) fails the copy with ENGINE_ERROR_INVALID,
 * and a cap exceeded with ENGINE_ERROR_LIMIT, naming the path. The copy
 * keeps only the executable bit: files are 0755 or 0644, directories
 * 0755; no owner, time or other bit. A missing @relpath is NOT_FOUND.
 */
bool hostile_copy_tree(const char *dir, const char *relpath, const char *dest,
		       const struct hostile_tree_caps *caps, GError **error);

#endif
