/*
 * Validation of names from outside: see names.h.
 */
#define G_LOG_DOMAIN "engine"

#include "autoconfig.h"

#include <fnmatch.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/names.h"

#define NAMES_URL_MAX 1024
#define NAMES_BRANCH_MAX 200
#define NAMES_TREE_MAX 64

G_DEFINE_QUARK(zeroday-engine-error-quark, engine_error)

static bool refuse(GError **error, const char *what, const char *text, const char *why)
{
	g_autofree char *shown = g_strescape(text, NULL);

	g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID,
		    "refused %s '%s': %s", what, shown, why);
	return false;
}

/*
 * The URL alphabet: RFC 3986 unreserved and reserved characters, without
 * the sub-delimiters that mean something to a shell ("!$&'()*;").
 */
static bool url_char_ok(unsigned char c)
{
	return g_ascii_isalnum(c) || strchr("-._~:/?#[]@+=,%", c) != NULL;
}

/* Decodes %XX escapes and refuses any that hide a control character. */
static bool url_escapes_ok(const char *url)
{
	for (const char *p = strchr(url, '%'); p; p = strchr(p + 1, '%')) {
		int hi, lo;

		if (!g_ascii_isxdigit(p[1]) || !g_ascii_isxdigit(p[2]))
			return false;
		hi = g_ascii_xdigit_value(p[1]);
		lo = g_ascii_xdigit_value(p[2]);
		if ((hi << 4 | lo) < 0x20 || (hi << 4 | lo) >= 0x7f)
			return false;
	}
	return true;
}

/*
 * Checks the authority and path after "scheme://": a host that does not
 * start with '-', an optional user that does not either, and a path.
 */
static bool url_authority_ok(const char *url, const char *rest, GError **error)
{
	const char *slash = strchr(rest, '/');
	g_autofree char *authority = NULL;
	const char *host;
	const char *at;

	if (!slash || slash == rest)
		return refuse(error, "URL", url, "no host");
	if (slash[1] == '\0')
		return refuse(error, "URL", url, "no repository path");
	authority = g_strndup(rest, slash - rest);
	at = strrchr(authority, '@');
	host = at ? at + 1 : authority;
	if (authority[0] == '-' || host[0] == '-')
		return refuse(error, "URL", url, "user or host starts with '-'");
	if (host[0] == '\0' || host[0] == ':')
		return refuse(error, "URL", url, "no host");
	if (host[0] != '[' && strchr(host, '[') != NULL)
		return refuse(error, "URL", url, "malformed host");
	return true;
}

bool names_url_check(const char *url, enum names_url_flags flags, GError **error)
{
	size_t len;
	const char *sep;

	g_return_val_if_fail(url != NULL, false);
	len = strlen(url);
	if (len == 0)
		return refuse(error, "URL", url, "empty");
	if (len > NAMES_URL_MAX)
		return refuse(error, "URL", url, "longer than 1024 bytes");
	for (size_t i = 0; i < len; i++) {
		unsigned char c = url[i];

		if (c < 0x20 || c == 0x7f)
			return refuse(error, "URL", url, "control character");
		if (c == ' ' || c == '\t')
			return refuse(error, "URL", url, "white space");
		if (!url_char_ok(c))
			return refuse(error, "URL", url,
				      "character not allowed in a tree URL");
	}
	if (url[0] == '-')
		return refuse(error, "URL", url, "starts with '-'");
	if (!url_escapes_ok(url))
		return refuse(error, "URL", url, "percent escape of a control character");

	sep = strstr(url, "://");
	if (sep == NULL) {
		const char *helper = strstr(url, "::");

		if (helper && strspn(url, "abcdefghijklmnopqrstuvwxyz"
					  "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-") ==
				      (size_t)(helper - url))
			return refuse(error, "URL", url,
				      "remote helpers (transport::address) are never allowed");
		if (url[0] == '/') {
			if (!(flags & NAMES_URL_ALLOW_LOCAL))
				return refuse(error, "URL", url,
					      "local paths need allow-local-trees in [git]");
			if (strstr(url, "/../") || g_str_has_suffix(url, "/.."))
				return refuse(error, "URL", url, "path contains '..'");
			return true;
		}
		if (strchr(url, ':'))
			return refuse(error, "URL", url,
				      "scp-style addresses are not accepted; use ssh://host/path");
		return refuse(error, "URL", url, "not a URL and not an absolute path");
	}

	if (g_str_has_prefix(url, "https://") || g_str_has_prefix(url, "git://"))
		return url_authority_ok(url, sep + 3, error);
	if (g_str_has_prefix(url, "ssh://")) {
		if (!(flags & NAMES_URL_ALLOW_SSH))
			return refuse(error, "URL", url, "ssh:// needs allow-ssh in [git]");
		return url_authority_ok(url, sep + 3, error);
	}
	if (g_str_has_prefix(url, "file://")) {
		if (!(flags & NAMES_URL_ALLOW_LOCAL))
			return refuse(error, "URL", url,
				      "file:// needs allow-local-trees in [git]");
		if (sep[3] != '/')
			return refuse(error, "URL", url, "file:// takes an absolute path");
		if (strstr(url, "/../") || g_str_has_suffix(url, "/.."))
			return refuse(error, "URL", url, "path contains '..'");
		return true;
	}
	if (g_str_has_prefix(url, "http://"))
		return refuse(error, "URL", url, "plain http is not allowed; use https://");
	return refuse(error, "URL", url,
		      "scheme not allowed (https://, git://, ssh://, file://)");
}

bool names_tree_check(const char *name, GError **error)
{
	size_t len = strlen(name);

	if (len == 0 || len > NAMES_TREE_MAX)
		return refuse(error, "tree name", name, "must be 1 to 64 characters");
	if (!g_ascii_isalnum(name[0]))
		return refuse(error, "tree name", name, "must start with a letter or digit");
	for (size_t i = 0; i < len; i++) {
		if (!g_ascii_isalnum(name[i]) && !strchr("._-", name[i]))
			return refuse(error, "tree name", name,
				      "only letters, digits, '.', '_' and '-' are allowed");
	}
	if (g_str_has_suffix(name, ".lock") || strstr(name, ".."))
		return refuse(error, "tree name", name, "'..' and '.lock' are not allowed");
	return true;
}

static bool branch_chars_ok(const char *what, const char *name, const char *extra,
			    GError **error)
{
	size_t len = strlen(name);

	if (len == 0 || len > NAMES_BRANCH_MAX)
		return refuse(error, what, name, "must be 1 to 200 characters");
	if (name[0] == '-')
		return refuse(error, what, name, "starts with '-'");
	for (size_t i = 0; i < len; i++) {
		unsigned char c = name[i];

		if (c < 0x20 || c == 0x7f)
			return refuse(error, what, name, "control character");
		if (!g_ascii_isalnum(c) && !strchr("._/+=,@-", c) &&
		    !(extra && strchr(extra, c)))
			return refuse(error, what, name, "character not allowed");
	}
	return true;
}

bool names_branch_chars_check(const char *name, GError **error)
{
	return branch_chars_ok("branch name", name, NULL, error);
}

/*
 * What git's check-ref-format refuses in a branch name, as literal text
 * that no wildcard can take away: a pattern holding one matches no valid
 * branch, so it is a mistake (or a probe), never a useful pattern.
 */
static const char *const never_in_branch[] = { "..", "//", "/.", "@{", ".lock/" };

bool names_pattern_check(const char *pattern, GError **error)
{
	size_t len;

	if (!branch_chars_ok("branch pattern", pattern, "*?", error))
		return false;
	len = strlen(pattern);
	for (size_t i = 0; i < G_N_ELEMENTS(never_in_branch); i++) {
		if (strstr(pattern, never_in_branch[i]))
			goto never;
	}
	if (pattern[0] == '.' || pattern[0] == '/' || pattern[len - 1] == '/' ||
	    pattern[len - 1] == '.' || g_str_has_suffix(pattern, ".lock"))
		goto never;
	return true;
never:
	g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID,
		    "branch pattern '%s' matches no valid branch name", pattern);
	return false;
}

bool names_pattern_match_any(const char *const *patterns, const char *branch)
{
	for (; patterns && *patterns; patterns++) {
		if (fnmatch(*patterns, branch, 0) == 0)
			return true;
	}
	return false;
}
