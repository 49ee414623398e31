/*
 * Where zeroday may connect: every spelling of an internal address,
 * refused; public literals (which resolve without a network) accepted;
 * hosts and ports out of URLs, and credentials in them.
 */
#include "autoconfig.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/un.h>

#include "engine/engine.h"
#include "engine/netaddr.h"
#include "tests/testlib.h"

/* The classifier alone, on numeric addresses, boundaries included. */
static const struct addr_case {
	const char *addr;
	const char *why; /* the reason, or NULL for a public address */
} addr_cases[] = {
	{ "0.0.0.0", "unspecified" },
	{ "0.255.255.255", "unspecified" },
	{ "10.0.0.1", "private" },
	{ "100.63.255.255", NULL },
	{ "100.64.0.1", "carrier-grade NAT" },
	{ "100.127.255.255", "carrier-grade NAT" },
	{ "100.128.0.0", NULL },
	{ "127.0.0.1", "loopback" },
	{ "127.255.255.254", "loopback" },
	{ "169.253.255.255", NULL },
	{ "169.254.169.254", "link-local" },
	{ "172.15.255.255", NULL },
	{ "172.16.0.1", "private" },
	{ "172.31.255.255", "private" },
	{ "172.32.0.0", NULL },
	{ "192.0.0.8", "reserved" },
	{ "192.0.2.1", "documentation" },
	{ "192.88.99.1", "reserved" },
	{ "192.168.1.1", "private" },
	{ "198.17.255.255", NULL },
	{ "198.18.0.1", "benchmarking" },
	{ "198.19.255.255", "benchmarking" },
	{ "198.20.0.0", NULL },
	{ "198.51.100.7", "documentation" },
	{ "203.0.113.9", "documentation" },
	{ "223.255.255.255", NULL },
	{ "224.0.0.1", "multicast" },
	{ "239.255.255.250", "multicast" },
	{ "240.0.0.1", "reserved" },
	{ "255.255.255.255", "reserved" },
	{ "1.1.1.1", NULL },
	{ "8.8.8.8", NULL },
	{ "::", "unspecified" },
	{ "::1", "loopback" },
	{ "::2", "unspecified" },             /* IPv4-compatible 0.0.0.2 */
	{ "::127.0.0.1", "loopback" },        /* IPv4-compatible */
	{ "::8.8.8.8", NULL },
	{ "::ffff:127.0.0.1", "loopback" },   /* IPv4-mapped */
	{ "::ffff:7f00:1", "loopback" },
	{ "::ffff:10.0.0.1", "private" },
	{ "::ffff:169.254.169.254", "link-local" },
	{ "::ffff:0.0.0.0", "unspecified" },
	{ "::ffff:8.8.8.8", NULL },
	{ "::ffff:0:7f00:1", "reserved" },    /* IPv4-translated: not global unicast */
	{ "64:ff9b::7f00:1", "loopback" },    /* NAT64 */
	{ "64:ff9b::192.168.0.1", "private" },
	{ "64:ff9b::8.8.8.8", NULL },
	{ "64:ff9b:1::1", "NAT64 local-use" },
	{ "100::1", "reserved" },             /* discard-only */
	{ "2001::1", "Teredo" },
	{ "2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo" },
	{ "2001:2::1", "benchmarking" },
	{ "2001:db8::1", "documentation" },
	{ "2002:7f00:1::1", "6to4" },
	{ "2002:808:808::1", "6to4" },
	{ "fc00::1", "private" },
	{ "fd00::1", "private" },
	{ "fe80::1", "link-local" },
	{ "febf::1", "link-local" },
	{ "fec0::1", "site-local" },
	{ "ff02::1", "multicast" },
	{ "fbff::1", "reserved" },
	{ "4000::1", "reserved" },
	{ "2001:4860:4860::8888", NULL },
	{ "2606:4700:4700::1111", NULL },
	{ "2a00:1450:4001::1", NULL },
};

static void test_is_internal(void)
{
	for (size_t i = 0; i < G_N_ELEMENTS(addr_cases); i++) {
		const struct addr_case *c = &addr_cases[i];
		struct sockaddr_in sin = { .sin_family = AF_INET };
		struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6 };
		const struct sockaddr *sa = (struct sockaddr *)&sin;
		socklen_t len = sizeof(sin);
		const char *why = "unset";
		g_autofree char *shown = NULL;

		g_test_message("address %zu: %s", i, c->addr);
		if (inet_pton(AF_INET, c->addr, &sin.sin_addr) != 1) {
			g_assert_cmpint(inet_pton(AF_INET6, c->addr, &sin6.sin6_addr), ==, 1);
			sa = (struct sockaddr *)&sin6;
			len = sizeof(sin6);
		}
		g_assert_cmpint(netaddr_is_internal(sa, len, &why), ==, c->why != NULL);
		g_assert_cmpstr(why, ==, c->why);
		shown = netaddr_format(sa, len);
		g_assert_nonnull(shown);
	}
}

/* A socket that is not IP, or a truncated address, is never public. */
static void test_not_ip(void)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct sockaddr_in sin = { .sin_family = AF_INET };
	const char *why = NULL;

	g_assert_true(netaddr_is_internal((struct sockaddr *)&sun, sizeof(sun), &why));
	g_assert_cmpstr(why, ==, "non-IP");
	sin.sin_addr.s_addr = htonl(0x08080808);
	g_assert_false(netaddr_is_internal((struct sockaddr *)&sin, sizeof(sin), NULL));
	g_assert_true(netaddr_is_internal((struct sockaddr *)&sin, 2, NULL));
}

/* No expected refusal: the host is accepted. */
#define OK (-1)

static const char *const allow_loopback[] = { "127.0.0.1", "localhost", "::1", NULL };

static const struct host_case {
	const char *host;
	const char *port;
	const char *const *allowed;
	int code;        /* OK, ENGINE_ERROR_INVALID or ENGINE_ERROR_FAILED */
	const char *why; /* a substring of the message */
} host_cases[] = {
	/* Names for the local host or network, refused without a lookup. */
	{ "localhost", NULL, NULL, ENGINE_ERROR_INVALID, "\"localhost\": name reserved for local use" },
	{ "LOCALHOST", NULL, NULL, ENGINE_ERROR_INVALID, "local use" },
	{ "localhost.", NULL, NULL, ENGINE_ERROR_INVALID, "local use" },
	{ "evil.localhost", NULL, NULL, ENGINE_ERROR_INVALID, "local use" },
	{ "printer.local", NULL, NULL, ENGINE_ERROR_INVALID, "local use" },
	{ "metadata.google.internal", "80", NULL, ENGINE_ERROR_INVALID, "local use" },
	{ "Metadata.Google.Internal.", NULL, NULL, ENGINE_ERROR_INVALID, "local use" },
	/* Every spelling of loopback (glibc reads IPv4 the way inet_aton() does). */
	{ "127.0.0.1", "9418", NULL, ENGINE_ERROR_INVALID,
	  "\"127.0.0.1\": loopback address 127.0.0.1 refused" },
	{ "127.1", NULL, NULL, ENGINE_ERROR_INVALID, "\"127.1\": loopback address 127.0.0.1 refused" },
	{ "127.0.1", NULL, NULL, ENGINE_ERROR_INVALID, "loopback address 127.0.0.1 refused" },
	{ "2130706433", NULL, NULL, ENGINE_ERROR_INVALID, "loopback address 127.0.0.1 refused" },
	{ "0x7f000001", NULL, NULL, ENGINE_ERROR_INVALID, "loopback address 127.0.0.1 refused" },
	{ "0x7f.1", NULL, NULL, ENGINE_ERROR_INVALID, "loopback address 127.0.0.1 refused" },
	{ "0177.0.0.1", NULL, NULL, ENGINE_ERROR_INVALID, "loopback address 127.0.0.1 refused" },
	{ "127.42.42.42", NULL, NULL, ENGINE_ERROR_INVALID, "loopback address 127.42.42.42" },
	{ "[::1]", "443", NULL, ENGINE_ERROR_INVALID, "\"[::1]\": loopback address ::1 refused" },
	{ "::1", NULL, NULL, ENGINE_ERROR_INVALID, "loopback address ::1 refused" },
	{ "[0:0:0:0:0:0:0:1]", NULL, NULL, ENGINE_ERROR_INVALID, "loopback address ::1 refused" },
	{ "[::ffff:127.0.0.1]", NULL, NULL, ENGINE_ERROR_INVALID,
	  "loopback address ::ffff:127.0.0.1 refused" },
	{ "[::ffff:7f00:1]", NULL, NULL, ENGINE_ERROR_INVALID,
	  "loopback address ::ffff:127.0.0.1 refused" },
	{ "[::127.0.0.1]", NULL, NULL, ENGINE_ERROR_INVALID, "loopback" },
	{ "[64:ff9b::127.0.0.1]", NULL, NULL, ENGINE_ERROR_INVALID, "loopback" },
	/* The rest of the internal network. */
	{ "10.1.2.3", NULL, NULL, ENGINE_ERROR_INVALID, "private address 10.1.2.3 refused" },
	{ "012.1.2.3", NULL, NULL, ENGINE_ERROR_INVALID, "private address 10.1.2.3 refused" },
	{ "172.16.0.1", NULL, NULL, ENGINE_ERROR_INVALID, "private address 172.16.0.1" },
	{ "192.168.1.1", NULL, NULL, ENGINE_ERROR_INVALID, "private address 192.168.1.1" },
	{ "169.254.169.254", NULL, NULL, ENGINE_ERROR_INVALID, "link-local address 169.254.169.254" },
	{ "[fe80::1]", NULL, NULL, ENGINE_ERROR_INVALID, "link-local address fe80::1" },
	{ "fe80::1%eth0", NULL, NULL, ENGINE_ERROR_INVALID, "zone identifier" },
	{ "[fe80::1%25eth0]", NULL, NULL, ENGINE_ERROR_INVALID, "zone identifier" },
	{ "[fd00::1]", NULL, NULL, ENGINE_ERROR_INVALID, "private address fd00::1" },
	{ "100.64.0.1", NULL, NULL, ENGINE_ERROR_INVALID, "carrier-grade NAT address 100.64.0.1" },
	{ "0.0.0.0", NULL, NULL, ENGINE_ERROR_INVALID, "unspecified address 0.0.0.0" },
	{ "0", NULL, NULL, ENGINE_ERROR_INVALID, "unspecified address 0.0.0.0" },
	{ "[::]", NULL, NULL, ENGINE_ERROR_INVALID, "unspecified address ::" },
	{ "224.0.0.1", NULL, NULL, ENGINE_ERROR_INVALID, "multicast address 224.0.0.1" },
	{ "255.255.255.255", NULL, NULL, ENGINE_ERROR_INVALID, "reserved" },
	{ "[2002:7f00:1::1]", NULL, NULL, ENGINE_ERROR_INVALID, "6to4" },
	{ "[2001::1]", NULL, NULL, ENGINE_ERROR_INVALID, "Teredo" },
	/* Malformed. */
	{ "", NULL, NULL, ENGINE_ERROR_INVALID, "empty host" },
	{ "[]", NULL, NULL, ENGINE_ERROR_INVALID, "empty host" },
	{ "[::1", NULL, NULL, ENGINE_ERROR_INVALID, "malformed IPv6 literal" },
	{ "[127.0.0.1]", NULL, NULL, ENGINE_ERROR_INVALID, "malformed IPv6 literal" },
	{ "[example.org]", NULL, NULL, ENGINE_ERROR_INVALID, "malformed IPv6 literal" },
	{ "8.8.8.8", "0", NULL, ENGINE_ERROR_INVALID, "not a port number" },
	{ "8.8.8.8", "65536", NULL, ENGINE_ERROR_INVALID, "not a port number" },
	{ "8.8.8.8", "https", NULL, ENGINE_ERROR_INVALID, "not a port number" },
	/* Public literals, which resolve without a network. */
	{ "8.8.8.8", NULL, NULL, OK, NULL },
	{ "8.8.8.8", "9418", NULL, OK, NULL },
	{ "134744072", NULL, NULL, OK, NULL },   /* 8.8.8.8 */
	{ "172.32.0.1", NULL, NULL, OK, NULL },
	{ "[2001:4860:4860::8888]", "443", NULL, OK, NULL },
	{ "2001:4860:4860::8888", NULL, NULL, OK, NULL },
	{ "[::ffff:8.8.8.8]", NULL, NULL, OK, NULL },
	/* What the administrator allowed, compared exactly, in any case. */
	{ "127.0.0.1", NULL, allow_loopback, OK, NULL },
	{ "LocalHost", NULL, allow_loopback, OK, NULL },
	{ "[::1]", NULL, allow_loopback, OK, NULL },
	{ "127.0.0.2", NULL, allow_loopback, ENGINE_ERROR_INVALID, "loopback address 127.0.0.2" },
	{ "127.1", NULL, allow_loopback, ENGINE_ERROR_INVALID, "loopback address 127.0.0.1" },
	{ "localhost.", NULL, allow_loopback, ENGINE_ERROR_INVALID, "local use" },
};

static void test_hosts(void)
{
	for (size_t i = 0; i < G_N_ELEMENTS(host_cases); i++) {
		const struct host_case *c = &host_cases[i];
		g_autoptr(GError) error = NULL;
		bool ok = netaddr_host_check(c->host, c->port, c->allowed, &error);

		g_test_message("host %zu: \"%s\" port %s", i, c->host, c->port ? c->port : "-");
		if (c->code == OK) {
			g_assert_no_error(error);
			g_assert_true(ok);
			continue;
		}
		g_assert_false(ok);
		g_assert_error(error, ENGINE_ERROR, c->code);
		if (error) {
			g_test_message("  -> %s", error->message);
			g_assert_nonnull(strstr(error->message, c->why));
		}
	}
}

/*
 * A name that /etc/hosts points at loopback goes through the resolver:
 * find one that the name rules do not catch first, such as the machine's
 * own name, which Debian maps to 127.0.1.1.
 */
static void test_hosts_file(void)
{
	g_autofree char *text = NULL;
	g_auto(GStrv) lines = NULL;

	if (!g_file_get_contents("/etc/hosts", &text, NULL, NULL)) {
		g_test_skip("/etc/hosts cannot be read");
		return;
	}
	lines = g_strsplit(text, "\n", -1);
	for (char **l = lines; *l; l++) {
		g_auto(GStrv) f = NULL;
		char *hash = strchr(*l, '#');

		if (hash)
			*hash = '\0';
		f = g_strsplit_set(g_strstrip(*l), " \t", -1);
		if (!f[0] || !(g_str_has_prefix(f[0], "127.") || strcmp(f[0], "::1") == 0))
			continue;
		for (char **name = f + 1; *name; name++) {
			g_autoptr(GError) error = NULL;
			g_autofree char *lower = g_ascii_strdown(*name, -1);

			if (!**name || strstr(lower, "localhost") || g_str_has_suffix(lower, ".local"))
				continue;
			g_test_message("/etc/hosts: %s -> %s", *name, f[0]);
			g_assert_false(netaddr_host_check(*name, NULL, NULL, &error));
			g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID);
			if (error) {
				g_test_message("  -> %s", error->message);
				g_assert_nonnull(strstr(error->message, "loopback address"));
			}
			return;
		}
	}
	g_test_skip("/etc/hosts maps no name but localhost to loopback");
}

/* A name that does not resolve is a failure, perhaps temporary, not a refusal. */
static void test_unresolvable(void)
{
	g_autoptr(GError) error = NULL;

	g_assert_false(netaddr_host_check("zeroday-test.invalid", "443", NULL, &error));
	g_assert_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED);
}

static const struct url_case {
	const char *url;
	const char *host; /* NULL: refused */
	const char *port;
	bool credentials;
} url_cases[] = {
	{ "https://git.kernel.org/pub/scm/linux.git", "git.kernel.org", "443", false },
	{ "HTTPS://Git.Kernel.org/x", "Git.Kernel.org", "443", false },
	{ "http://example.org/x", "example.org", "80", false },
	{ "git://example.org/x", "example.org", "9418", false },
	{ "git://example.org", "example.org", "9418", false },
	{ "git://127.0.0.1:9418/linux", "127.0.0.1", "9418", false },
	{ "git://2130706433:1234/linux", "2130706433", "1234", false },
	{ "git://0x7f000001/linux", "0x7f000001", "9418", false },
	{ "https://[::1]:8443/linux.git", "::1", "8443", false },
	{ "https://[::ffff:127.0.0.1]/x", "::ffff:127.0.0.1", "443", false },
	{ "https://example.org:0080/x", "example.org", "80", false },
	{ "https://example.org?x=1", "example.org", "443", false },
	{ "https://example.org#frag", "example.org", "443", false },
	{ "https://user@example.org/x", "example.org", "443", true },
	{ "https://user:pass@example.org:8443/x", "example.org", "8443", true },
	{ "https://:@example.org/x", "example.org", "443", true },
	{ "git://u@[::1]:9/x", "::1", "9", true },
	{ "https://example.org/a@b", "example.org", "443", false },
	{ "https://example.org/x?u=a@b", "example.org", "443", false },
	/* Refused. */
	{ "ssh://example.org/x", NULL, NULL, false },
	{ "file:///srv/x", NULL, NULL, false },
	{ "/srv/x", NULL, NULL, false },
	{ "example.org:x.git", NULL, NULL, false },
	{ "user@example.org:x.git", NULL, NULL, false },
	{ "", NULL, NULL, false },
	{ "https:///x", NULL, NULL, false },
	{ "https://", NULL, NULL, false },
	{ "https://user@/x", NULL, NULL, true },
	{ "https://a@b@example.org/x", NULL, NULL, true },
	{ "https://evil.example\\@127.0.0.1/x", NULL, NULL, true },
	{ "https://example.org:/x", NULL, NULL, false },
	{ "https://example.org:0/x", NULL, NULL, false },
	{ "https://example.org:65536/x", NULL, NULL, false },
	{ "https://example.org:12a/x", NULL, NULL, false },
	{ "https://example.org:+80/x", NULL, NULL, false },
	{ "https://example.org:80:81/x", NULL, NULL, false },
	{ "https://[::1/x", NULL, NULL, false },
	{ "https://[::1]x/x", NULL, NULL, false },
	{ "https://[fe80::1%25eth0]/x", NULL, NULL, false },
	{ "https://[127.0.0.1]/x", NULL, NULL, false },
	{ "https://exa%6dple.org/x", NULL, NULL, false },
	{ "https://-oProxyCommand=x/x", NULL, NULL, false },
	{ "https://exa mple.org/x", NULL, NULL, false },
	{ "https://::1/x", NULL, NULL, false },
};

static void test_urls(void)
{
	for (size_t i = 0; i < G_N_ELEMENTS(url_cases); i++) {
		const struct url_case *c = &url_cases[i];
		static char unset[] = "unset";
		char *port = unset; /* must become NULL on a refusal */
		g_autofree char *host = NULL;

		g_test_message("url %zu: %s", i, c->url);
		host = netaddr_url_host(c->url, &port);
		g_assert_cmpstr(host, ==, c->host);
		g_assert_cmpstr(port, ==, c->port);
		if (port != unset)
			g_free(port);
		g_assert_cmpint(netaddr_url_has_credentials(c->url), ==, c->credentials);
	}
	/* The port is optional. */
	{
		g_autofree char *host = netaddr_url_host("git://example.org/x", NULL);

		g_assert_cmpstr(host, ==, "example.org");
	}
}

int main(int argc, char **argv)
{
	testlib_init(&argc, &argv);
	g_test_add_func("/netaddr/is-internal", test_is_internal);
	g_test_add_func("/netaddr/not-ip", test_not_ip);
	g_test_add_func("/netaddr/hosts", test_hosts);
	g_test_add_func("/netaddr/hosts-file", test_hosts_file);
	g_test_add_func("/netaddr/unresolvable", test_unresolvable);
	g_test_add_func("/netaddr/urls", test_urls);
	return g_test_run();
}
