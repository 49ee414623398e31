/*
 * Hostile and valid tree URLs, tree names, branch names and patterns.
 */
#include "autoconfig.h"

#include "engine/engine.h"
#include "engine/names.h"
#include "engine/repo.h"
#include "tests/testlib.h"

#define ALL (NAMES_URL_ALLOW_SSH | NAMES_URL_ALLOW_LOCAL)

static const struct url_case {
	const char *url;
	enum names_url_flags flags;
	const char *why; /* a substring of the refusal, or NULL if accepted */
} url_cases[] = {
	/* Accepted. */
	{ "https://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git", 0, NULL },
	{ "git://git.kernel.org/pub/scm/linux/kernel/git/next/linux-next.git", 0, NULL },
	{ "git://127.0.0.1:9418/linux", 0, NULL },
	{ "https://[::1]:8443/linux.git", 0, NULL },
	{ "ssh://git@example.org/linux.git", NAMES_URL_ALLOW_SSH, NULL },
	{ "ssh://example.org/~user/linux.git", NAMES_URL_ALLOW_SSH, NULL },
	{ "file:///srv/git/linux.git", NAMES_URL_ALLOW_LOCAL, NULL },
	{ "/srv/git/linux.git", NAMES_URL_ALLOW_LOCAL, NULL },
	{ "https://git@example.org:443/linux.git", 0, NULL },
	{ "https://example.org/linux.git?x=1#y", 0, NULL },
	/* Refused always. */
	{ "ext::sh -c touch% /tmp/pwned", ALL, "white space" },
	{ "ext::sh", ALL, "remote helpers" },
	{ "fd::17", ALL, "remote helpers" },
	{ "-oProxyCommand=touch /tmp/pwned", ALL, "white space" },
	{ "--upload-pack=touch", ALL, "starts with '-'" },
	{ "-u", ALL, "starts with '-'" },
	{ "ssh://-oProxyCommand=id/x", ALL, "starts with '-'" },
	{ "ssh://user@-oProxyCommand=id/x", ALL, "starts with '-'" },
	{ "ssh://-user@host/x", ALL, "starts with '-'" },
	{ "https://-host/x", ALL, "starts with '-'" },
	{ "https://example.org/linux\n.git", ALL, "control character" },
	{ "https://example.org/linux\r", ALL, "control character" },
	{ "https://example.org/\x1b[31m", ALL, "control character" },
	{ "https://example.org/linux%0a.git", ALL, "percent escape" },
	{ "https://example.org/linux%zz", ALL, "percent escape" },
	{ "https://example.org/$(reboot)", ALL, "not allowed" },
	{ "https://example.org/`id`", ALL, "not allowed" },
	{ "git://example.org/a;rm -rf ~", ALL, "not allowed" },
	{ "git://example.org/a|nc", ALL, "not allowed" },
	{ "git://example.org/a&&id", ALL, "not allowed" },
	{ "git://example.org/a>/etc/passwd", ALL, "not allowed" },
	{ "git://example.org/'x'", ALL, "not allowed" },
	{ "git://example.org/\"x\"", ALL, "not allowed" },
	{ "git://example.org/a\\b", ALL, "not allowed" },
	{ "git://example.org/a b", ALL, "white space" },
	{ "git://example.org/a\tb", ALL, "control character" },
	{ "git://", ALL, "no host" },
	{ "git:///path", ALL, "no host" },
	{ "https://example.org", ALL, "no host" },
	{ "https://example.org/", ALL, "no repository path" },
	{ "http://example.org/linux.git", ALL, "plain http" },
	{ "ftp://example.org/linux.git", ALL, "scheme not allowed" },
	{ "rsync://example.org/linux.git", ALL, "scheme not allowed" },
	{ "git@example.org:linux.git", ALL, "scp-style" },
	{ "relative/path", ALL, "not a URL" },
	{ "file://relative", ALL, "absolute path" },
	{ "/srv/../etc", ALL, "'..'" },
	{ "file:///srv/git/..", ALL, "'..'" },
	{ "", ALL, "empty" },
	/* Refused since GUri parses them. */
	{ "https://example.org:99999/linux.git", ALL, "malformed" },
	{ "https://example.org:9x/linux.git", ALL, "malformed" },
	{ "git://[::1/linux", ALL, "malformed" },
	{ "git://exa[mple.org/linux", ALL, "malformed" },
	{ "https://example.org%zz/linux.git", ALL, "percent escape" },
	{ "https://example.org:0/linux.git", ALL, "port 0" },
	{ "https://user:secret@example.org/linux.git", ALL, "password" },
	{ "ssh://git:@example.org/linux.git", ALL, "password" },
	{ "file:///srv/%2e%2e/etc", ALL, "'..'" },
	{ "file://host/srv/git/linux.git", ALL, "absolute path" },
	/* Refused unless the config allows them. */
	{ "ssh://git@example.org/linux.git", 0, "allow-ssh" },
	{ "file:///srv/git/linux.git", 0, "allow-local-trees" },
	{ "file:///srv/git/linux.git", NAMES_URL_ALLOW_SSH, "allow-local-trees" },
	{ "/srv/git/linux.git", 0, "allow-local-trees" },
};

static void test_urls(void)
{
	for (size_t i = 0; i < G_N_ELEMENTS(url_cases); i++) {
		const struct url_case *c = &url_cases[i];
		g_autoptr(GError) error = NULL;
		bool ok = names_url_check(c->url, c->flags, &error);

		g_test_message("url %zu: %s", i, c->url);
		if (c->why == NULL) {
			g_assert_no_error(error);
			g_assert_true(ok);
		} else {
			g_assert_false(ok);
			g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID);
			if (error) {
				g_assert_nonnull(strstr(error->message, c->why));
				g_assert_nonnull(strstr(error->message, "refused URL"));
			}
		}
	}
}

static void test_url_too_long(void)
{
	g_autoptr(GError) error = NULL;
	g_autofree char *pad = g_strnfill(1100, 'a');
	g_autofree char *url = g_strconcat("https://example.org/", pad, NULL);

	g_assert_false(names_url_check(url, ALL, &error));
	g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID);
}

static const struct name_case {
	const char *name;
	bool ok;
} branch_cases[] = {
	{ "master", true },
	{ "for-next", true },
	{ "linux-6.1.y", true },
	{ "topic/x86/cleanup", true },
	{ "v6.1+fixes", true },
	{ "-delete", false },
	{ "--force", false },
	{ "a..b", false },
	{ "a b", false },
	{ "x~1", false },
	{ "x^2", false },
	{ "x:y", false },
	{ "a/.hidden", false },
	{ "a.lock", false },
	{ "a/", false },
	{ "/a", false },
	{ "a//b", false },
	{ "@{-1}", false },
	{ "$(id)", false },
	{ "`id`", false },
	{ "a;b", false },
	{ "a|b", false },
	{ "a\nb", false },
	{ "a\\b", false },
	{ "a*", false },
	{ "", false },
};

static void test_branches(void)
{
	for (size_t i = 0; i < G_N_ELEMENTS(branch_cases); i++) {
		g_autoptr(GError) error = NULL;
		bool ok = repo_branch_check(branch_cases[i].name, &error);

		g_test_message("branch %zu: %s", i, branch_cases[i].name);
		g_assert_cmpint(ok, ==, branch_cases[i].ok);
		if (!branch_cases[i].ok)
			g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID);
	}
}

static void test_tree_names(void)
{
	static const struct name_case cases[] = {
		{ "linux-next", true }, { "net_next", true }, { "v6.1", true },
		{ "-x", false }, { ".x", false }, { "a/b", false }, { "a..b", false },
		{ "a b", false }, { "x.lock", false }, { "", false }, { "a$b", false },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(GError) error = NULL;

		g_test_message("tree %zu: %s", i, cases[i].name);
		g_assert_cmpint(names_tree_check(cases[i].name, &error), ==, cases[i].ok);
	}
}

static void test_patterns(void)
{
	const char *const patterns[] = { "for-*", "master", "fixes-?", NULL };
	g_autoptr(GError) error = NULL;

	g_assert_true(names_pattern_check("for-*", NULL));
	g_assert_true(names_pattern_check("*", NULL));
	g_assert_false(names_pattern_check("-*", &error));
	g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID);
	g_assert_false(names_pattern_check("[a-z]*", NULL));
	g_assert_false(names_pattern_check("a b", NULL));
	/* Patterns that no valid branch name can match (git check-ref-format). */
	for (const char *const *p = (const char *const[]){ "a..b", "*..*", "a//b", "a/.b", "x@{1}",
			"x.lock", "a.lock/b", ".hidden", "/abs", "dir/", "dot.", NULL };
	     *p; p++) {
		g_autoptr(GError) local = NULL;

		g_assert_false(names_pattern_check(*p, &local));
		g_assert_error(local, ENGINE_ERROR, ENGINE_ERROR_INVALID);
	}
	g_assert_true(names_pattern_check("v6.1.y", NULL));
	g_assert_true(names_pattern_check("for-*/fixes", NULL));

	g_assert_true(names_pattern_match_any(patterns, "for-next"));
	g_assert_true(names_pattern_match_any(patterns, "for-linus/x"));
	g_assert_true(names_pattern_match_any(patterns, "master"));
	g_assert_true(names_pattern_match_any(patterns, "fixes-1"));
	g_assert_false(names_pattern_match_any(patterns, "fixes-10"));
	g_assert_false(names_pattern_match_any(patterns, "masterx"));
	g_assert_false(names_pattern_match_any(NULL, "master"));
}

int main(int argc, char **argv)
{
	struct repo_limits limits = { 0 };

	testlib_init(&argc, &argv);
	if (!repo_global_init(&limits, NULL))
		g_error("libgit2 did not initialise");
	g_test_add_func("/names/urls", test_urls);
	g_test_add_func("/names/url-too-long", test_url_too_long);
	g_test_add_func("/names/branches", test_branches);
	g_test_add_func("/names/trees", test_tree_names);
	g_test_add_func("/names/patterns", test_patterns);
	return g_test_run();
}
