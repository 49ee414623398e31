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

/* True when @path (percent escapes decoded) has a ".." segment. */
static bool path_climbs(const char *path)
{
	g_autofree char *plain = g_uri_unescape_string(path, NULL);
	g_auto(GStrv) segments = g_strsplit(plain ? plain : path, "/", -1);

	for (char **seg = segments; *seg; seg++)
		if (strcmp(*seg, "..") == 0)
			return true;
	return !plain; /* an escape hiding a NUL: as bad */
}

/*
 * Parses @url with GUri, strictly (escapes kept as they are): a URL GUri
 * refuses (a port out of range or not a number, a malformed IPv6 host,
 * a bad escape in the host) is refused here.
 */
static GUri *url_parse(const char *url, GError **error)
{
	g_autoptr(GError) parse_error = NULL;
	GUri *uri = g_uri_parse(url, G_URI_FLAGS_ENCODED | G_URI_FLAGS_HAS_PASSWORD,
				&parse_error);

	if (!uri) {
		g_autofree char *why = g_strdup_printf("malformed (%s)", parse_error->message);

		refuse(error, "URL", url, why);
	}
	return uri;
}

/*
 * Checks the authority and path of @uri: a host that does not start with
 * '-' nor holds a stray bracket, an optional user that does not start
 * with '-' either, no password (a tree's URL is shown in status and in
 * mail), a port other than 0, and a path.
 */
static bool url_authority_ok(const char *url, GUri *uri, GError **error)
{
	const char *host = g_uri_get_host(uri);
	const char *user = g_uri_get_user(uri);
	const char *path = g_uri_get_path(uri);

	if ((user && user[0] == '-') || (host && host[0] == '-'))
		return refuse(error, "URL", url, "user or host starts with '-'");
	if (!host || !host[0] || !path[0])
		return refuse(error, "URL", url, "no host");
	if (path[1] == '\0')
		return refuse(error, "URL", url, "no repository path");
	/* GUri takes the brackets off an IPv6 literal; any left are stray. */
	if (strpbrk(host, "[]"))
		return refuse(error, "URL", url, "malformed host");
	if (g_uri_get_password(uri))
		return refuse(error, "URL", url,
			      "a password in the URL is not allowed (it would be shown)");
	if (g_uri_get_port(uri) == 0)
		return refuse(error, "URL", url, "port 0");
	return true;
}

bool names_url_check(const char *url, enum names_url_flags flags, GError **error)
{
	g_autoptr(GUri) uri = NULL;
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
			if (path_climbs(url))
				return refuse(error, "URL", url, "path contains '..'");
			return true;
		}
		if (strchr(url, ':'))
			return refuse(error, "URL", url,
				      "scp-style addresses are not accepted; use ssh://host/path");
		return refuse(error, "URL", url, "not a URL and not an absolute path");
	}

	if (g_str_has_prefix(url, "http://"))
		return refuse(error, "URL", url, "plain http is not allowed; use https://");
	if (!g_str_has_prefix(url, "https://") && !g_str_has_prefix(url, "git://") &&
	    !g_str_has_prefix(url, "ssh://") && !g_str_has_prefix(url, "file://"))
		return refuse(error, "URL", url,
			      "scheme not allowed (https://, git://, ssh://, file://)");
	if (g_str_has_prefix(url, "ssh://") && !(flags & NAMES_URL_ALLOW_SSH))
		return refuse(error, "URL", url, "ssh:// needs allow-ssh in [git]");
	if (g_str_has_prefix(url, "file://") && !(flags & NAMES_URL_ALLOW_LOCAL))
		return refuse(error, "URL", url, "file:// needs allow-local-trees in [git]");
	uri = url_parse(url, error);
	if (!uri)
		return false;
	if (!g_str_has_prefix(url, "file://"))
		return url_authority_ok(url, uri, error);
	if (g_uri_get_host(uri) && *g_uri_get_host(uri))
		return refuse(error, "URL", url, "file:// takes an absolute path");
	/* GUri removes dot segments from the path: the text is checked. */
	if (path_climbs(url + strlen("file://")))
		return refuse(error, "URL", url, "path contains '..'");
	return true;
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
