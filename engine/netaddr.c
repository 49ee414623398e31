/*
 * Where zeroday may connect: see netaddr.h.
 */
#define G_LOG_DOMAIN "engine"

#include "autoconfig.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/netaddr.h"

/*
 * An address range: the first @bits bits of @addr (4 bytes for IPv4,
 * 16 for IPv6). @why NULL means the range carries an IPv4 address in its
 * last 4 bytes, which is judged instead.
 */
struct netaddr_range {
	guint8 addr[16];
	unsigned bits;
	const char *why;
};

/* Checked in order; the first match decides. */
static const struct netaddr_range ipv4_ranges[] = {
	{ { 0 }, 8, "unspecified" },                  /* "this network", 0.0.0.0 */
	{ { 10 }, 8, "private" },
	{ { 100, 64 }, 10, "carrier-grade NAT" },
	{ { 127 }, 8, "loopback" },
	{ { 169, 254 }, 16, "link-local" },           /* cloud metadata services too */
	{ { 172, 16 }, 12, "private" },
	{ { 192, 0, 0 }, 24, "reserved" },            /* IETF protocol assignments */
	{ { 192, 0, 2 }, 24, "documentation" },
	{ { 192, 88, 99 }, 24, "reserved" },          /* the former 6to4 relay anycast */
	{ { 192, 168 }, 16, "private" },
	{ { 198, 18 }, 15, "benchmarking" },
	{ { 198, 51, 100 }, 24, "documentation" },
	{ { 203, 0, 113 }, 24, "documentation" },
	{ { 224 }, 4, "multicast" },
	{ { 240 }, 4, "reserved" },                   /* 255.255.255.255 included */
};

static const struct netaddr_range ipv6_ranges[] = {
	{ { 0 }, 128, "unspecified" },
	{ { [15] = 1 }, 128, "loopback" },
	{ { [10] = 0xff, [11] = 0xff }, 96, NULL },   /* IPv4-mapped ::ffff:a.b.c.d */
	{ { 0 }, 96, NULL },                          /* IPv4-compatible ::a.b.c.d */
	{ { 0, 0x64, 0xff, 0x9b }, 96, NULL },        /* NAT64 64:ff9b::a.b.c.d */
	{ { 0, 0x64, 0xff, 0x9b, 0, 1 }, 48, "NAT64 local-use" },
	/* Tunnels: the relay they go through may deliver anywhere. */
	{ { 0x20, 0x01, 0, 0 }, 32, "Teredo" },
	{ { 0x20, 0x02 }, 16, "6to4" },
	{ { 0x20, 0x01, 0x0d, 0xb8 }, 32, "documentation" },
	{ { 0x20, 0x01, 0, 0x02, 0, 0 }, 48, "benchmarking" },
	{ { 0xfc }, 7, "private" },                   /* unique local */
	{ { 0xfe, 0x80 }, 10, "link-local" },
	{ { 0xfe, 0xc0 }, 10, "site-local" },
	{ { 0xff }, 8, "multicast" },
};

/* Whether the first @bits bits of @a and @b agree. */
static bool prefix_match(const guint8 *a, const guint8 *b, unsigned bits)
{
	unsigned whole = bits / 8, rest = bits % 8;
	guint8 mask = (guint8)(0xff << (8 - rest));

	if (memcmp(a, b, whole) != 0)
		return false;
	return rest == 0 || (a[whole] & mask) == (b[whole] & mask);
}

/* Why the IPv4 address @a (network order) is internal, or NULL. */
static const char *ipv4_why(const guint8 a[4])
{
	for (size_t i = 0; i < G_N_ELEMENTS(ipv4_ranges); i++) {
		if (prefix_match(a, ipv4_ranges[i].addr, ipv4_ranges[i].bits))
			return ipv4_ranges[i].why;
	}
	return NULL;
}

/* Why the IPv6 address @a is internal, or NULL. */
static const char *ipv6_why(const guint8 a[16])
{
	for (size_t i = 0; i < G_N_ELEMENTS(ipv6_ranges); i++) {
		const struct netaddr_range *r = &ipv6_ranges[i];

		if (prefix_match(a, r->addr, r->bits))
			return r->why ? r->why : ipv4_why(a + 12);
	}
	/* Everything allocated for global unicast is in 2000::/3. */
	if ((a[0] & 0xe0) != 0x20)
		return "reserved";
	return NULL;
}

bool netaddr_is_internal(const struct sockaddr *sa, socklen_t len, const char **why)
{
	const char *reason;

	if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in))
		reason = ipv4_why((const guint8 *)&((const struct sockaddr_in *)sa)->sin_addr);
	else if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6))
		reason = ipv6_why(((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr);
	else
		reason = "non-IP";
	if (why)
		*why = reason;
	return reason != NULL;
}

char *netaddr_format(const struct sockaddr *sa, socklen_t len)
{
	char buf[INET6_ADDRSTRLEN] = "?";

	if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in))
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, buf, sizeof(buf));
	else if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6))
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, buf, sizeof(buf));
	return g_strdup(buf);
}

/*
 * Returns @host without the brackets of an IPv6 literal (caller frees), or
 * NULL when it opens a bracket it does not close where it ends.
 */
static char *host_unbracket(const char *host)
{
	size_t n = strlen(host);

	if (host[0] != '[')
		return g_strdup(host);
	if (n < 2 || host[n - 1] != ']')
		return NULL;
	return g_strndup(host + 1, n - 2);
}

bool netaddr_host_listed(const char *host, const char *const *hosts)
{
	g_autofree char *bare = host_unbracket(host);

	for (; bare && hosts && *hosts; hosts++) {
		g_autofree char *other = host_unbracket(*hosts);

		if (other && g_ascii_strcasecmp(bare, other) == 0)
			return true;
	}
	return false;
}

/* Whether @name (lower case) is reserved for the local host or network. */
static bool name_is_local(const char *name)
{
	static const char *const suffixes[] = { ".localhost", ".local", ".internal" };
	g_autofree char *n = g_strdup(name);
	size_t len = strlen(n);

	/* "localhost." is "localhost": a trailing dot only anchors the name. */
	if (len > 0 && n[len - 1] == '.')
		n[len - 1] = '\0';
	if (strcmp(n, "localhost") == 0)
		return true;
	for (size_t i = 0; i < G_N_ELEMENTS(suffixes); i++) {
		if (g_str_has_suffix(n, suffixes[i]))
			return true;
	}
	return false;
}

static bool host_refuse(GError **error, const char *host, const char *why)
{
	g_autofree char *shown = g_strescape(host, NULL);

	g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID, "\"%s\": %s", shown, why);
	return false;
}

/* Whether @port is a decimal port number, 1 to 65535. */
static bool port_ok(const char *port)
{
	size_t n = strspn(port, "0123456789");
	guint64 v;

	if (n == 0 || n > 5 || port[n] != '\0')
		return false;
	v = g_ascii_strtoull(port, NULL, 10);
	return v >= 1 && v <= 65535;
}

bool netaddr_host_check(const char *host, const char *port, const char *const *allowed_hosts,
			GError **error)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	g_autofree char *bare = NULL;
	g_autofree char *lower = NULL;
	bool bracketed;
	bool ok = true;
	int rc;

	g_return_val_if_fail(host != NULL, false);
	if (netaddr_host_listed(host, allowed_hosts))
		return true;
	bracketed = host[0] == '[';
	bare = host_unbracket(host);
	if (!bare)
		return host_refuse(error, host, "malformed IPv6 literal");
	if (!*bare)
		return host_refuse(error, host, "empty host");
	/* A zone id names an interface: only ever a link-local address. */
	if (strchr(bare, '%'))
		return host_refuse(error, host, "IPv6 zone identifier refused");
	if (bracketed) {
		struct in6_addr a6;

		if (inet_pton(AF_INET6, bare, &a6) != 1)
			return host_refuse(error, host, "malformed IPv6 literal");
		hints.ai_flags |= AI_NUMERICHOST;
	}
	lower = g_ascii_strdown(bare, -1);
	if (name_is_local(lower))
		return host_refuse(error, host, "name reserved for local use refused");
	if (port) {
		if (!port_ok(port))
			return host_refuse(error, port, "not a port number");
		hints.ai_flags |= AI_NUMERICSERV;
	}

	rc = getaddrinfo(bare, port, &hints, &res);
	if (rc != 0) {
		g_autofree char *shown = g_strescape(host, NULL);

		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "cannot resolve \"%s\": %s",
			    shown, gai_strerror(rc));
		return false;
	}
	/* One internal address is enough: the connection may pick any of them. */
	for (struct addrinfo *ai = res; ai && ok; ai = ai->ai_next) {
		const char *why;

		if (netaddr_is_internal(ai->ai_addr, ai->ai_addrlen, &why)) {
			g_autofree char *a = netaddr_format(ai->ai_addr, ai->ai_addrlen);
			g_autofree char *m = g_strdup_printf("%s address %s refused", why, a);

			ok = host_refuse(error, host, m);
		}
	}
	freeaddrinfo(res);
	return ok;
}

/* The schemes whose URLs name a host zeroday connects to, and their ports. */
static const struct {
	const char *scheme;
	const char *port;
} url_schemes[] = {
	{ "https", "443" },
	{ "http", "80" },
	{ "git", "9418" },
};

/* Whether @host is a plain host name or IPv4 literal: [A-Za-z0-9._-], no leading '-'. */
static bool host_chars_ok(const char *host)
{
	if (!*host || host[0] == '-')
		return false;
	for (const char *p = host; *p; p++) {
		if (!g_ascii_isalnum(*p) && !strchr("._-", *p))
			return false;
	}
	return true;
}

char *netaddr_url_host(const char *url, char **port)
{
	const char *sep = strstr(url, "://");
	const char *default_port = NULL;
	g_autofree char *authority = NULL;
	g_autofree char *host = NULL;
	const char *hostport, *rest, *at;

	if (port)
		*port = NULL;
	if (!sep)
		return NULL;
	for (size_t i = 0; i < G_N_ELEMENTS(url_schemes); i++) {
		if (strlen(url_schemes[i].scheme) == (size_t)(sep - url) &&
		    g_ascii_strncasecmp(url, url_schemes[i].scheme, sep - url) == 0)
			default_port = url_schemes[i].port;
	}
	if (!default_port)
		return NULL;
	authority = g_strndup(sep + 3, strcspn(sep + 3, "/?#"));
	/* Parsers disagree on "a@b@c" and on a backslash: refuse both. */
	at = strchr(authority, '@');
	if (at && strchr(at + 1, '@'))
		return NULL;
	if (strchr(authority, '\\'))
		return NULL;
	hostport = at ? at + 1 : authority;
	if (hostport[0] == '[') {
		const char *close = strchr(hostport, ']');
		struct in6_addr a6;

		if (!close)
			return NULL;
		host = g_strndup(hostport + 1, close - hostport - 1);
		if (inet_pton(AF_INET6, host, &a6) != 1)
			return NULL;
		rest = close + 1;
	} else {
		rest = hostport + strcspn(hostport, ":");
		host = g_strndup(hostport, rest - hostport);
		if (!host_chars_ok(host))
			return NULL;
	}
	if (*rest == ':') {
		if (!port_ok(rest + 1))
			return NULL;
		if (port)
			*port = g_strdup_printf("%u", (unsigned)g_ascii_strtoull(rest + 1, NULL, 10));
	} else if (*rest == '\0') {
		if (port)
			*port = g_strdup(default_port);
	} else {
		return NULL;
	}
	return g_steal_pointer(&host);
}

bool netaddr_url_has_credentials(const char *url)
{
	const char *sep = strstr(url, "://");

	if (!sep)
		return false;
	return memchr(sep + 3, '@', strcspn(sep + 3, "/?#")) != NULL;
}
