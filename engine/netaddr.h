/*
 * Where zeroday may connect. Tree URLs arrive by mail from strangers, and
 * must never make zeroday reach an address inside its own network
 * (server-side request forgery): loopback, private, link-local, cloud
 * metadata (169.254.169.254), and every other spelling of them (127.1,
 * 2130706433, 0x7f000001, [::ffff:127.0.0.1], ...). Host names are judged
 * by the addresses they resolve to; the connection itself is judged again
 * by engine/repo.c on the address actually connected to, which defeats DNS
 * rebinding.
 */
#ifndef ZERODAY_NETADDR_H
#define ZERODAY_NETADDR_H

#include <stdbool.h>
#include <sys/socket.h>
#include <glib.h>

#include "engine/engine.h"

/*
 * Returns whether @sa (@len bytes, AF_INET or AF_INET6) is an address
 * zeroday must not connect to on a stranger's behalf: loopback,
 * unspecified, link-local, private (RFC 1918, fc00::/7), carrier-grade
 * NAT (100.64/10), multicast, reserved and broadcast (240/4), IETF
 * protocol, documentation and benchmarking ranges, IPv6 site-local, and
 * any IPv6 address outside global unicast (2000::/3). IPv4-mapped,
 * IPv4-compatible and NAT64 (64:ff9b::/96) addresses are judged by the
 * IPv4 address they carry; 6to4 and Teredo tunnels are refused outright.
 * Any other family is internal. With @why non-NULL, *@why receives a short
 * static reason ("loopback", "private", ...) when true, NULL when false.
 */
bool netaddr_is_internal(const struct sockaddr *sa, socklen_t len, const char **why);

/*
 * Returns @sa (@len bytes) as a numeric address without port, such as
 * "127.0.0.1" or "::ffff:127.0.0.1" (caller frees).
 */
char *netaddr_format(const struct sockaddr *sa, socklen_t len);

/*
 * Returns whether @host is in the NULL-terminated @hosts (NULL: empty):
 * compared exactly but case-insensitively, with the brackets of an IPv6
 * literal ignored on both sides ("[::1]" is "::1").
 */
bool netaddr_host_listed(const char *host, const char *const *hosts);

/*
 * Checks that @host (a name, an IPv4 literal in any spelling inet_aton()
 * accepts, or an IPv6 literal, bracketed or not) on @port (decimal, or
 * NULL) is somewhere zeroday may connect on a stranger's behalf. A host in
 * @allowed_hosts (see netaddr_host_listed()) is accepted without a lookup.
 * "localhost" and names ending in ".localhost", ".local" or ".internal"
 * are refused without one. Otherwise @host is resolved, and refused when
 * ANY of its addresses is internal (netaddr_is_internal()).
 *
 * Returns true when acceptable; false with ENGINE_ERROR_INVALID for a
 * refusal (an empty or malformed host, an IPv6 zone id, an internal
 * address), or ENGINE_ERROR_FAILED when @host does not resolve (which may
 * be temporary, and is not a refusal). The check is only as good as DNS
 * at the time: connect again through a repo_net_policy.
 */
bool netaddr_host_check(const char *host, const char *port, const char *const *allowed_hosts,
			GError **error);

/*
 * Returns the host of an https://, http:// or git:// @url (scheme in any
 * case), without userinfo, port or the brackets of an IPv6 literal
 * (caller frees), and in *@port (may be NULL; caller frees) the port the
 * URL names or the scheme's default (443, 80, 9418). Returns NULL (and
 * *@port NULL) for any other scheme and anything odd: no host, more than
 * one '@', a port that is not 1 to 65535, characters a host name does not
 * have, percent escapes in the host, or an IPv6 literal that inet_pton()
 * does not read (zone ids included).
 */
char *netaddr_url_host(const char *url, char **port);

/*
 * Returns whether the authority of @url ("scheme://authority/...") has a
 * userinfo part ("user@" or "user:pass@"). A string without "://" has
 * none.
 */
bool netaddr_url_has_credentials(const char *url);

#endif
