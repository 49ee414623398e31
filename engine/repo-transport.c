/*
 * The network transport of the object store: libgit2 1.5 has no network
 * timeouts of its own, so this file registers its own socket stream
 * (GIT_STREAM_STANDARD, which the git://, http and TLS transports all
 * build on) with a connect timeout, an idle timeout and a deadline for the
 * whole operation. The same stream applies a struct repo_net_policy: it
 * checks the addresses a host resolves to before connect(), and the peer
 * after it.
 */
#define G_LOG_DOMAIN "engine"

#include "autoconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine/repo-private.h"
#include "engine/netaddr.h"

static struct repo_limits limits;

/*
 * Per-thread state of the network operation in progress: its deadline,
 * where it may connect, and why it failed, so that a libgit2 error can be
 * told apart from our own timeouts, limits and refusals.
 */
struct net_op {
	gint64 deadline_us; /* monotonic; 0 = none */
	const struct repo_net_policy *policy; /* borrowed from the caller; NULL = anywhere */
	enum engine_error failure;
	bool failed;
};

static __thread struct net_op net_op;

void repo_net_start(const struct repo_net_policy *policy)
{
	net_op.policy = policy;
	net_op.failed = false;
	net_op.failure = ENGINE_ERROR_FAILED;
	net_op.deadline_us = limits.fetch_timeout_s
		? g_get_monotonic_time() + (gint64)limits.fetch_timeout_s * G_USEC_PER_SEC
		: 0;
}

/* Forgets the caller's policy, which is borrowed for the operation only. */
void repo_net_end(void)
{
	net_op.policy = NULL;
}

static void net_op_fail(enum engine_error code, const char *message)
{
	net_op.failed = true;
	net_op.failure = code;
	git_error_set_str(GIT_ERROR_NET, message);
}

/* The socket stream with timeouts. */
struct zd_stream {
	git_stream parent;
	char *host;
	char *port;
	int fd;
};

/* Milliseconds to wait for the next I/O: the idle timeout or what is left. */
static int io_wait_ms(void)
{
	gint64 ms = limits.io_timeout_s ? (gint64)limits.io_timeout_s * 1000 : -1;

	if (net_op.deadline_us) {
		gint64 left = (net_op.deadline_us - g_get_monotonic_time()) / 1000;

		if (left < 0)
			left = 0;
		if (ms < 0 || left < ms)
			ms = left;
	}
	return ms > G_MAXINT ? G_MAXINT : (int)ms;
}

static bool io_wait(struct zd_stream *s, short events, int ms, const char *what)
{
	struct pollfd p = { .fd = s->fd, .events = events };
	int rc;

	do
		rc = poll(&p, 1, ms);
	while (rc < 0 && errno == EINTR);
	if (rc > 0)
		return true;
	if (rc == 0) {
		g_autofree char *m = g_strdup_printf("timed out %s %s:%s", what, s->host, s->port);

		net_op_fail(ENGINE_ERROR_TIMEOUT, m);
	} else {
		git_error_set(GIT_ERROR_OS, "poll failed: %s", g_strerror(errno));
	}
	return false;
}

/* Whether the operation's policy keeps @s's host away from internal addresses. */
static bool policy_public_only(const struct zd_stream *s)
{
	const struct repo_net_policy *p = net_op.policy;

	return p && p->public_only && !netaddr_host_listed(s->host, p->allowed_hosts);
}

/* Fails the operation: @s's host must not be reached at @addr. */
static void refuse_internal(const struct zd_stream *s, const struct sockaddr *addr,
			    socklen_t len)
{
	const char *why = NULL;
	g_autofree char *a = netaddr_format(addr, len);
	g_autofree char *m = NULL;

	netaddr_is_internal(addr, len, &why);
	m = g_strdup_printf("%s: internal address %s refused (%s)", s->host, a, why);
	net_op_fail(ENGINE_ERROR_INVALID, m);
}

/*
 * Checks the address @s is connected to, as the kernel has it: what was
 * checked before connect() must be what was reached.
 */
static bool peer_public(const struct zd_stream *s)
{
	struct sockaddr_storage peer;
	socklen_t len = sizeof(peer);

	if (getpeername(s->fd, (struct sockaddr *)&peer, &len) < 0) {
		git_error_set(GIT_ERROR_NET, "cannot connect to %s:%s: %s", s->host, s->port,
			      g_strerror(errno));
		return false;
	}
	if (!netaddr_is_internal((struct sockaddr *)&peer, len, NULL))
		return true;
	refuse_internal(s, (struct sockaddr *)&peer, len);
	return false;
}

/*
 * Connects to the first address of @s's host that answers. Under a
 * public-only policy, internal addresses are skipped before connect(),
 * and the peer is checked again after it.
 */
static int zd_stream_connect(git_stream *stream)
{
	struct zd_stream *s = (struct zd_stream *)stream;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_family = AF_UNSPEC };
	struct addrinfo *res = NULL;
	const struct addrinfo *internal = NULL; /* the first address skipped */
	bool public_only = policy_public_only(s);
	bool tried = false;
	int rc;

	rc = getaddrinfo(s->host, s->port, &hints, &res);
	if (rc != 0) {
		git_error_set(GIT_ERROR_NET, "cannot resolve %s: %s", s->host, gai_strerror(rc));
		return -1;
	}
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		int ms = limits.connect_timeout_s ? (int)limits.connect_timeout_s * 1000 : -1;
		int soerr = 0;
		socklen_t len = sizeof(soerr);
		bool connected;
		int fd;

		if (public_only && netaddr_is_internal(ai->ai_addr, ai->ai_addrlen, NULL)) {
			if (!internal)
				internal = ai;
			continue;
		}
		tried = true;
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
			    ai->ai_protocol);
		if (fd < 0)
			continue;
		s->fd = fd;
		connected = connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 ||
			    (errno == EINPROGRESS && io_wait(s, POLLOUT, ms, "connecting to") &&
			     getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 && soerr == 0);
		if (connected) {
			/* A refused peer: peer_public() has said why. */
			if (!public_only || peer_public(s)) {
				freeaddrinfo(res);
				return 0;
			}
		} else if (soerr) {
			git_error_set(GIT_ERROR_NET, "cannot connect to %s:%s: %s", s->host,
				      s->port, g_strerror(soerr));
		} else if (!net_op.failed) {
			git_error_set(GIT_ERROR_NET, "cannot connect to %s:%s: %s", s->host,
				      s->port, g_strerror(errno));
		}
		close(fd);
		s->fd = -1;
		if (net_op.failed)
			break;
	}
	/* Every address was internal: that is a refusal, not a network failure. */
	if (!tried && internal)
		refuse_internal(s, internal->ai_addr, internal->ai_addrlen);
	freeaddrinfo(res);
	return -1;
}

static ssize_t zd_stream_read(git_stream *stream, void *data, size_t len)
{
	struct zd_stream *s = (struct zd_stream *)stream;

	for (;;) {
		ssize_t n = recv(s->fd, data, len, 0);

		if (n >= 0)
			return n;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			git_error_set(GIT_ERROR_NET, "error reading from %s: %s", s->host,
				      g_strerror(errno));
			return -1;
		}
		if (!io_wait(s, POLLIN, io_wait_ms(), "reading from"))
			return -1;
	}
}

static ssize_t zd_stream_write(git_stream *stream, const char *data, size_t len, int flags)
{
	struct zd_stream *s = (struct zd_stream *)stream;

	for (;;) {
		ssize_t n = send(s->fd, data, len, MSG_NOSIGNAL);

		if (n >= 0)
			return n;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			git_error_set(GIT_ERROR_NET, "error writing to %s: %s", s->host,
				      g_strerror(errno));
			return -1;
		}
		if (!io_wait(s, POLLOUT, io_wait_ms(), "writing to"))
			return -1;
	}
}

static int zd_stream_close(git_stream *stream)
{
	struct zd_stream *s = (struct zd_stream *)stream;

	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	return 0;
}

static void zd_stream_free(git_stream *stream)
{
	struct zd_stream *s = (struct zd_stream *)stream;

	zd_stream_close(stream);
	g_free(s->host);
	g_free(s->port);
	g_free(s);
}

static int zd_stream_new(git_stream **out, const char *host, const char *port)
{
	struct zd_stream *s = g_new0(struct zd_stream, 1);

	s->parent.version = GIT_STREAM_VERSION;
	s->parent.connect = zd_stream_connect;
	s->parent.read = zd_stream_read;
	s->parent.write = zd_stream_write;
	s->parent.close = zd_stream_close;
	s->parent.free = zd_stream_free;
	s->host = g_strdup(host);
	s->port = g_strdup(port);
	s->fd = -1;
	*out = &s->parent;
	return 0;
}

/* Aborts a transfer that passes the pack limits or the deadline. */
int repo_net_progress_cb(const git_indexer_progress *stats, void *payload)
{
	if (limits.max_pack_bytes && stats->received_bytes > limits.max_pack_bytes) {
		net_op_fail(ENGINE_ERROR_LIMIT, "pack larger than max-pack-bytes");
		return -1;
	}
	if (limits.max_pack_objects && stats->total_objects > limits.max_pack_objects) {
		net_op_fail(ENGINE_ERROR_LIMIT, "pack has more objects than max-pack-objects");
		return -1;
	}
	if (net_op.deadline_us && g_get_monotonic_time() > net_op.deadline_us) {
		net_op_fail(ENGINE_ERROR_TIMEOUT, "fetch took longer than fetch-timeout");
		return -1;
	}
	return 0;
}

int repo_net_sideband_cb(const char *str, int len, void *payload)
{
	if (net_op.deadline_us && g_get_monotonic_time() > net_op.deadline_us) {
		net_op_fail(ENGINE_ERROR_TIMEOUT, "fetch took longer than fetch-timeout");
		return -1;
	}
	return 0;
}

bool repo_net_failed(enum engine_error *code)
{
	if (net_op.failed)
		*code = net_op.failure;
	return net_op.failed;
}

int repo_transport_init(const struct repo_limits *lim)
{
	static git_stream_registration reg = {
		.version = GIT_STREAM_VERSION,
		.init = zd_stream_new,
	};

	limits = *lim;
	return git_stream_register(GIT_STREAM_STANDARD, &reg);
}
