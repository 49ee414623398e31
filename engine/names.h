/*
 * Validation of the names that come from outside: tree URLs, tree names,
 * branch names and branch patterns. They arrive from mail, from the
 * command line and from remote servers, so they are hostile until checked
 * here, before any library or process sees them.
 */
#ifndef ZERODAY_NAMES_H
#define ZERODAY_NAMES_H

#include <stdbool.h>
#include <glib.h>

enum names_url_flags {
	NAMES_URL_ALLOW_SSH = (1 << 0),   /* ssh:// URLs */
	NAMES_URL_ALLOW_LOCAL = (1 << 1), /* file:// URLs and absolute paths */
};

/*
 * Checks that @url is a git URL zeroday may fetch from: https:// and
 * git://, plus ssh:// and local paths when @flags allow them. Remote
 * helpers ("ext::"), a leading '-', control characters, shell
 * metacharacters, hosts or users starting with '-', passwords, port 0 and
 * what GLib's GUri does not parse (a port out of range, a malformed host)
 * are always refused.
 *
 * Returns true when the URL is acceptable; otherwise false with
 * ENGINE_ERROR_INVALID saying why.
 */
bool names_url_check(const char *url, enum names_url_flags flags, GError **error);

/*
 * Checks a tree name: 1 to 64 characters of [A-Za-z0-9._-], starting with
 * a letter or a digit. Tree names become parts of git ref names.
 */
bool names_tree_check(const char *name, GError **error);

/*
 * Checks the characters of a branch name: [A-Za-z0-9._/+=,@-], no leading
 * '-', at most 200 bytes. Git's own rules (no "..", no ".lock", ...) are
 * checked on top of this by repo_branch_check().
 */
bool names_branch_chars_check(const char *name, GError **error);

/*
 * Checks a branch glob pattern: the characters of a branch name plus '*'
 * and '?', matched with fnmatch(3) without flags.
 */
bool names_pattern_check(const char *pattern, GError **error);

/* Returns whether @branch matches any of the NULL-terminated @patterns. */
bool names_pattern_match_any(const char *const *patterns, const char *branch);

#endif
