/*
 * The shared git object store: the only file that includes libgit2.
 *
 * libgit2 1.5 has no network timeouts of its own, so this file registers
 * its own socket stream (GIT_STREAM_STANDARD, which the git://, http and
 * TLS transports all build on) with a connect timeout, an idle timeout and
 * a deadline for the whole operation. The same stream applies a
 * struct repo_net_policy: it checks the addresses a host resolves to
 * before connect(), and the peer after it.
 */
#define G_LOG_DOMAIN "engine"

#include "autoconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <git2.h>
#include <git2/sys/stream.h>

#include "engine/engine.h"
#include "engine/names.h"
#include "engine/netaddr.h"
#include "engine/repo.h"

struct repo {
	git_repository *git;
	char *path;
};

static struct repo_limits limits;
static bool initialised;

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

static void net_op_start(const struct repo_net_policy *policy)
{
	net_op.policy = policy;
	net_op.failed = false;
	net_op.failure = ENGINE_ERROR_FAILED;
	net_op.deadline_us = limits.fetch_timeout_s
		? g_get_monotonic_time() + (gint64)limits.fetch_timeout_s * G_USEC_PER_SEC
		: 0;
}

/* Forgets the caller's policy, which is borrowed for the operation only. */
static void net_op_end(void)
{
	net_op.policy = NULL;
}

static void net_op_fail(enum engine_error code, const char *message)
{
	net_op.failed = true;
	net_op.failure = code;
	git_error_set_str(GIT_ERROR_NET, message);
}

/*
 * Sets @error from libgit2's last error, with @context (a URL, a commit)
 * in front. Our own timeouts and limits keep their codes.
 */
static void set_git_error(GError **error, int code, const char *context)
{
	const git_error *e = git_error_last();
	enum engine_error ours = ENGINE_ERROR_FAILED;

	if (net_op.failed)
		ours = net_op.failure;
	else if (code == GIT_ENOTFOUND)
		ours = ENGINE_ERROR_NOT_FOUND;
	else if (code == GIT_EINVALIDSPEC)
		ours = ENGINE_ERROR_INVALID;
	g_set_error(error, ENGINE_ERROR, ours, "%s: %s", context,
		    e && e->message ? e->message : "unknown libgit2 error");
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

bool repo_global_init(const struct repo_limits *lim, GError **error)
{
	static git_stream_registration reg = {
		.version = GIT_STREAM_VERSION,
		.init = zd_stream_new,
	};
	static const int levels[] = {
		GIT_CONFIG_LEVEL_SYSTEM, GIT_CONFIG_LEVEL_XDG,
		GIT_CONFIG_LEVEL_GLOBAL, GIT_CONFIG_LEVEL_PROGRAMDATA,
	};

	g_return_val_if_fail(!initialised, false);
	limits = *lim;
	if (git_libgit2_init() < 0)
		goto fail;
	/*
	 * The user's and the system's git configuration must not change what
	 * zeroday fetches (url.*.insteadOf, http.proxy, ...).
	 */
	for (size_t i = 0; i < G_N_ELEMENTS(levels); i++) {
		if (git_libgit2_opts(GIT_OPT_SET_SEARCH_PATH, levels[i], "") < 0)
			goto fail;
	}
	if (git_stream_register(GIT_STREAM_STANDARD, &reg) < 0)
		goto fail;
	if (limits.max_pack_objects &&
	    git_libgit2_opts(GIT_OPT_SET_PACK_MAX_OBJECTS, (size_t)limits.max_pack_objects) < 0)
		goto fail;
	if (git_libgit2_opts(GIT_OPT_SET_USER_AGENT, "zeroday/" PACKAGE_VERSION) < 0)
		goto fail;
	initialised = true;
	return true;
fail:
	set_git_error(error, -1, "libgit2 initialisation");
	return false;
}

char *repo_version_string(void)
{
	int major, minor, rev;

	git_libgit2_version(&major, &minor, &rev);
	return g_strdup_printf("libgit2 %d.%d.%d", major, minor, rev);
}

void repo_head_free(struct repo_head *head)
{
	if (!head)
		return;
	g_free(head->branch);
	g_free(head->oid);
	g_free(head);
}

void repo_commit_free(struct repo_commit *commit)
{
	if (!commit)
		return;
	g_free(commit->oid);
	g_free(commit->summary);
	g_strfreev(commit->parent_ids);
	g_free(commit);
}

bool repo_branch_check(const char *name, GError **error)
{
	g_autofree char *ref = NULL;
	int valid = 0;

	g_assert(initialised);
	if (!names_branch_chars_check(name, error))
		return false;
	ref = g_strconcat("refs/heads/", name, NULL);
	if (git_reference_name_is_valid(&valid, ref) < 0 || !valid) {
		g_autofree char *shown = g_strescape(name, NULL);

		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID,
			    "refused branch name '%s': not a valid git ref name", shown);
		return false;
	}
	return true;
}

/* Aborts a transfer that passes the pack limits or the deadline. */
static int transfer_progress_cb(const git_indexer_progress *stats, void *payload)
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

static int sideband_cb(const char *str, int len, void *payload)
{
	if (net_op.deadline_us && g_get_monotonic_time() > net_op.deadline_us) {
		net_op_fail(ENGINE_ERROR_TIMEOUT, "fetch took longer than fetch-timeout");
		return -1;
	}
	return 0;
}

/*
 * Creates an in-memory remote for @url, in @git or detached. The URL is
 * used as given: url.*.insteadOf must not rewrite a checked URL (and
 * libgit2 1.5 leaks on every config entry its insteadOf scan does not
 * match).
 */
static int remote_new(git_remote **out, git_repository *git, const char *url)
{
	git_remote_create_options opts = GIT_REMOTE_CREATE_OPTIONS_INIT;

	opts.repository = git;
	opts.flags = GIT_REMOTE_CREATE_SKIP_INSTEADOF | GIT_REMOTE_CREATE_SKIP_DEFAULT_FETCHSPEC;
	return git_remote_create_with_opts(out, url, &opts);
}

GPtrArray *repo_ls_remote(const char *url, const struct repo_net_policy *policy,
			  GError **error)
{
	g_autoptr(GPtrArray) heads = g_ptr_array_new_with_free_func((GDestroyNotify)repo_head_free);
	git_remote_connect_options opts = GIT_REMOTE_CONNECT_OPTIONS_INIT;
	const git_remote_head **refs = NULL;
	git_remote *remote = NULL;
	size_t n = 0;
	int rc;

	net_op_start(policy);
	opts.follow_redirects = GIT_REMOTE_REDIRECT_NONE;
	opts.callbacks.sideband_progress = sideband_cb;
	rc = remote_new(&remote, NULL, url);
	if (rc == 0)
		rc = git_remote_connect_ext(remote, GIT_DIRECTION_FETCH, &opts);
	if (rc == 0)
		rc = git_remote_ls(&refs, &n, remote);
	if (rc < 0) {
		set_git_error(error, rc, url);
		git_remote_free(remote);
		net_op_end();
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		const char *name = refs[i]->name;
		struct repo_head *head;
		g_autoptr(GError) bad = NULL;

		if (!g_str_has_prefix(name, "refs/heads/"))
			continue;
		name += strlen("refs/heads/");
		if (!repo_branch_check(name, &bad)) {
			g_message("%s: ignoring advertised branch: %s", url, bad->message);
			continue;
		}
		head = g_new0(struct repo_head, 1);
		head->branch = g_strdup(name);
		head->oid = g_strdup(git_oid_tostr_s(&refs[i]->oid));
		g_ptr_array_add(heads, head);
	}
	git_remote_disconnect(remote);
	git_remote_free(remote);
	net_op_end();
	return g_steal_pointer(&heads);
}

struct repo *repo_open(const char *path, GError **error)
{
	struct repo *repo = g_new0(struct repo, 1);
	int rc;

	rc = git_repository_open_ext(&repo->git, path, GIT_REPOSITORY_OPEN_NO_SEARCH |
				     GIT_REPOSITORY_OPEN_BARE, NULL);
	if (rc == GIT_ENOTFOUND)
		rc = git_repository_init(&repo->git, path, 1);
	if (rc < 0) {
		set_git_error(error, rc, path);
		g_free(repo);
		return NULL;
	}
	repo->path = g_strdup(path);
	return repo;
}

void repo_free(struct repo *repo)
{
	if (!repo)
		return;
	git_repository_free(repo->git);
	g_free(repo->path);
	g_free(repo);
}

static char *tree_ref(const char *tree, const char *branch)
{
	return g_strdup_printf("refs/trees/%s/heads/%s", tree, branch);
}

bool repo_fetch(struct repo *repo, const char *url, const char *tree,
		const char *const *branches, const struct repo_net_policy *policy,
		GError **error)
{
	git_fetch_options opts = GIT_FETCH_OPTIONS_INIT;
	g_autoptr(GPtrArray) specs = g_ptr_array_new_with_free_func(g_free);
	git_strarray refspecs;
	git_remote *remote = NULL;
	int rc;

	for (const char *const *b = branches; *b; b++) {
		g_autofree char *dst = tree_ref(tree, *b);

		if (!repo_branch_check(*b, error))
			return false;
		g_ptr_array_add(specs, g_strdup_printf("+refs/heads/%s:%s", *b, dst));
	}
	if (specs->len == 0)
		return true;
	refspecs.strings = (char **)specs->pdata;
	refspecs.count = specs->len;

	net_op_start(policy);
	opts.follow_redirects = GIT_REMOTE_REDIRECT_NONE;
	opts.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_NONE;
	opts.prune = GIT_FETCH_NO_PRUNE;
	opts.update_fetchhead = 0;
	opts.callbacks.transfer_progress = transfer_progress_cb;
	opts.callbacks.sideband_progress = sideband_cb;
	rc = remote_new(&remote, repo->git, url);
	if (rc == 0)
		rc = git_remote_fetch(remote, &refspecs, &opts, "zeroday: fetch");
	if (rc < 0)
		set_git_error(error, rc, url);
	git_remote_free(remote);
	net_op_end();
	return rc >= 0;
}

static bool parse_oid(git_oid *oid, const char *hex, GError **error)
{
	if (strlen(hex) != GIT_OID_HEXSZ || git_oid_fromstr(oid, hex) < 0) {
		g_autofree char *shown = g_strescape(hex, NULL);

		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID,
			    "'%s' is not a full commit id", shown);
		return false;
	}
	return true;
}

bool repo_has_commit(struct repo *repo, const char *oid)
{
	git_oid id;
	git_commit *commit = NULL;

	if (!parse_oid(&id, oid, NULL))
		return false;
	if (git_commit_lookup(&commit, repo->git, &id) < 0)
		return false;
	git_commit_free(commit);
	return true;
}

char *repo_tree_branch_head(struct repo *repo, const char *tree, const char *branch,
			    GError **error)
{
	g_autofree char *ref = tree_ref(tree, branch);
	git_oid id;
	int rc;

	rc = git_reference_name_to_id(&id, repo->git, ref);
	if (rc < 0) {
		set_git_error(error, rc, ref);
		return NULL;
	}
	return g_strdup(git_oid_tostr_s(&id));
}

/* Points @ref at commit @oid (NULL: deletes it; a missing ref is fine). */
static bool ref_point(struct repo *repo, const char *ref, const char *oid, GError **error)
{
	git_reference *out = NULL;
	git_oid id;
	int rc;

	if (oid == NULL) {
		rc = git_reference_remove(repo->git, ref);
		if (rc < 0 && rc != GIT_ENOTFOUND) {
			set_git_error(error, rc, ref);
			return false;
		}
		return true;
	}
	if (!parse_oid(&id, oid, error))
		return false;
	if (!repo_has_commit(repo, oid)) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_NOT_FOUND,
			    "%s: commit %s is not in the store", ref, oid);
		return false;
	}
	rc = git_reference_create(&out, repo->git, ref, &id, 1, "zeroday: set head");
	if (rc < 0) {
		set_git_error(error, rc, ref);
		return false;
	}
	git_reference_free(out);
	return true;
}

bool repo_set_tree_branch(struct repo *repo, const char *tree, const char *branch,
			  const char *oid, GError **error)
{
	g_autofree char *ref = tree_ref(tree, branch);

	if (!repo_branch_check(branch, error))
		return false;
	return ref_point(repo, ref, oid, error);
}

bool repo_keep(struct repo *repo, const char *name, const char *oid, GError **error)
{
	g_autofree char *ref = NULL;

	if (!repo_branch_check(name, error))
		return false;
	ref = g_strconcat("refs/zeroday/", name, NULL);
	return ref_point(repo, ref, oid, error);
}

bool repo_forget_tree(struct repo *repo, const char *tree, GError **error)
{
	g_autofree char *glob = g_strdup_printf("refs/trees/%s/*", tree);
	g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
	git_reference_iterator *it = NULL;
	const char *name;
	int rc;

	rc = git_reference_iterator_glob_new(&it, repo->git, glob);
	while (rc == 0 && (rc = git_reference_next_name(&name, it)) == 0)
		g_ptr_array_add(names, g_strdup(name));
	git_reference_iterator_free(it);
	if (rc != GIT_ITEROVER) {
		set_git_error(error, rc, glob);
		return false;
	}
	for (guint i = 0; i < names->len; i++) {
		rc = git_reference_remove(repo->git, names->pdata[i]);
		if (rc < 0 && rc != GIT_ENOTFOUND) {
			set_git_error(error, rc, names->pdata[i]);
			return false;
		}
	}
	return true;
}

int repo_is_ancestor(struct repo *repo, const char *ancestor, const char *descendant,
		     GError **error)
{
	git_oid a, d;
	int rc;

	if (!parse_oid(&a, ancestor, error) || !parse_oid(&d, descendant, error))
		return -1;
	if (git_oid_equal(&a, &d))
		return 1;
	rc = git_graph_descendant_of(repo->git, &d, &a);
	if (rc < 0) {
		set_git_error(error, rc, descendant);
		return -1;
	}
	return rc;
}

char **repo_merge_bases(struct repo *repo, const char *a, const char *b, GError **error)
{
	git_oid x, y;
	git_oidarray bases = { 0 };
	char **out;
	int rc;

	if (!parse_oid(&x, a, error) || !parse_oid(&y, b, error))
		return NULL;
	rc = git_merge_bases(&bases, repo->git, &x, &y);
	if (rc == GIT_ENOTFOUND)
		return g_new0(char *, 1);
	if (rc < 0) {
		set_git_error(error, rc, b);
		return NULL;
	}
	out = g_new0(char *, bases.count + 1);
	for (size_t i = 0; i < bases.count; i++)
		out[i] = g_strdup(git_oid_tostr_s(&bases.ids[i]));
	git_oidarray_dispose(&bases);
	return out;
}

/* What a summary must not carry to a terminal, a database or a mail. */
static bool summary_refused(gunichar c)
{
	return g_unichar_iscntrl(c) || c == 0x2028 || c == 0x2029 || /* line breaks */
	       (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069); /* bidi */
}

/*
 * A commit's summary as it enters zeroday (caller frees): valid UTF-8,
 * without control characters (a tab becomes a space), at most
 * REPO_SUMMARY_MAX bytes, cut at a character boundary and ended with "..."
 * when longer. A commit's message is the author's, and may be hostile.
 */
static char *summary_clean(const char *summary)
{
	g_autofree char *valid = g_utf8_make_valid(summary ? summary : "", -1);
	GString *s = g_string_sized_new(REPO_SUMMARY_MAX + 1);
	gsize keep = 0; /* the length at which "..." still fits */

	for (const char *p = valid; *p; p = g_utf8_next_char(p)) {
		gunichar c = g_utf8_get_char(p);
		const char *bytes = c == '\t' ? " " : p;
		gsize n = c == '\t' ? 1 : (gsize)(g_utf8_next_char(p) - p);

		if (c != '\t' && summary_refused(c))
			continue;
		if (s->len + n > REPO_SUMMARY_MAX) {
			g_string_truncate(s, keep);
			g_string_append(s, "...");
			break;
		}
		g_string_append_len(s, bytes, n);
		if (s->len + 3 <= REPO_SUMMARY_MAX)
			keep = s->len;
	}
	return g_string_free(s, FALSE);
}

int repo_revert_on(struct repo *repo, const char *head, const char *culprit, char **out,
		   GError **error)
{
	git_oid h, c, tree_id, made;
	git_commit *head_commit = NULL, *culprit_commit = NULL;
	git_index *index = NULL;
	git_tree *tree = NULL;
	git_signature *sig = NULL;
	git_revert_options opts = GIT_REVERT_OPTIONS_INIT;
	g_autofree char *message = NULL;
	g_autofree char *summary = NULL;
	int rc, result = -1;

	*out = NULL;
	if (!parse_oid(&h, head, error) || !parse_oid(&c, culprit, error))
		return -1;
	if ((rc = git_commit_lookup(&head_commit, repo->git, &h)) < 0 ||
	    (rc = git_commit_lookup(&culprit_commit, repo->git, &c)) < 0) {
		set_git_error(error, rc, head_commit ? culprit : head);
		goto out;
	}
	/* A merge is reverted against its first parent, as `git revert -m 1` does. */
	opts.mainline = git_commit_parentcount(culprit_commit) > 1 ? 1 : 0;
	rc = git_revert_commit(&index, repo->git, culprit_commit, head_commit, opts.mainline,
			       &opts.merge_opts);
	if (rc < 0) {
		set_git_error(error, rc, culprit);
		goto out;
	}
	if (git_index_has_conflicts(index)) {
		result = 0;
		goto out;
	}
	if ((rc = git_index_write_tree_to(&tree_id, index, repo->git)) < 0 ||
	    (rc = git_tree_lookup(&tree, repo->git, &tree_id)) < 0 ||
	    (rc = git_signature_new(&sig, "zeroday", "zeroday@localhost",
				    git_commit_time(head_commit), 0)) < 0) {
		set_git_error(error, rc, culprit);
		goto out;
	}
	summary = summary_clean(git_commit_summary(culprit_commit));
	message = g_strdup_printf("Revert \"%s\"\n\nThis reverts commit %s on %s, to verify "
				  "it as a culprit.\n", summary, culprit, head);
	{
		const git_commit *parents[] = { head_commit };

		rc = git_commit_create(&made, repo->git, NULL, sig, sig, NULL, message, tree, 1,
				       parents);
	}
	if (rc < 0) {
		set_git_error(error, rc, culprit);
		goto out;
	}
	*out = g_strdup(git_oid_tostr_s(&made));
	result = 1;
out:
	git_signature_free(sig);
	git_tree_free(tree);
	git_index_free(index);
	git_commit_free(culprit_commit);
	git_commit_free(head_commit);
	return result;
}

/*
 * Posted patches, applied as `git am` does, without a work tree.
 *
 * libgit2 1.5 parses the diff (git_diff_from_buffer), but its applier
 * (git_apply_to_tree, git_apply) tries each hunk only at the line its
 * header names (apply.c find_hunk_linenum): no offsets, where git am finds
 * a hunk a few lines away. So the hunks are applied here with git apply's
 * search (apply.c find_pos, match_fragment), onto an in-memory index
 * holding the tree so far. The patch is hostile: every delta is checked
 * before anything is applied.
 */

/* Hunk positions tried in one patch before it is refused (a CPU bound). */
#define APPLY_SEARCH_BUDGET 200000000

/* One line of a file or of a hunk, borrowed from a blob or a parsed diff. */
struct apply_line {
	const char *p;
	gsize n;
};

/* A series being applied. */
struct apply_state {
	git_repository *git;
	git_index *index;                 /* the tree so far */
	enum repo_apply_failure failure;  /* why the current patch did not apply */
	char *why;
	guint64 budget;                   /* hunk positions left to try */
};

/* Records why the current patch did not apply; returns 0. */
static int apply_fail(struct apply_state *st, enum repo_apply_failure kind, const char *fmt, ...)
	G_GNUC_PRINTF(3, 4);
static int apply_fail(struct apply_state *st, enum repo_apply_failure kind, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	st->failure = kind;
	g_free(st->why);
	st->why = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	return 0;
}

/* A hostile path as a reason shows it: quoted, escaped to printable ASCII, bounded. */
static char *path_shown(const char *path)
{
	g_autofree char *e = g_strescape(path ? path : "", NULL);

	if (strlen(e) > 200)
		return g_strdup_printf("'%.200s...'", e);
	return g_strdup_printf("'%s'", e);
}

/* The code points HFS+ ignores in names (git's utf8.c next_hfs_char). */
static bool hfs_ignorable(gunichar c)
{
	return (c >= 0x200c && c <= 0x200f) || (c >= 0x202a && c <= 0x202e) ||
	       (c >= 0x206a && c <= 0x206f) || c == 0xfeff;
}

/*
 * Whether the path component @c (@len bytes) means ".git" to some file
 * system: ".git" in any case; followed by dots or spaces, or by an NTFS
 * stream (":..."); its 8.3 short name "git~1"; with code points HFS+
 * ignores anywhere inside (git's is_ntfs_dotgit and is_hfs_dotgit).
 */
static bool component_is_dotgit(const char *c, gsize len)
{
	g_autoptr(GString) s = g_string_sized_new(len);
	const char *rest;

	for (gsize i = 0; i < len;) {
		gunichar u = g_utf8_get_char_validated(c + i, (gssize)(len - i));
		gsize n;

		if (u == (gunichar)-1 || u == (gunichar)-2) {
			g_string_append_c(s, c[i++]);
			continue;
		}
		n = (gsize)(g_utf8_next_char(c + i) - (c + i));
		if (!hfs_ignorable(u))
			g_string_append_len(s, c + i, (gssize)n);
		i += n;
	}
	for (gsize i = 0; i < s->len; i++)
		s->str[i] = g_ascii_tolower(s->str[i]);
	if (g_str_has_prefix(s->str, ".git"))
		rest = s->str + 4;
	else if (g_str_has_prefix(s->str, "git~1"))
		rest = s->str + 5;
	else
		return false;
	for (; *rest && *rest != ':'; rest++) {
		if (*rest != '.' && *rest != ' ')
			return false;
	}
	return true;
}

/* Why @path must not be written to a tree, or NULL (git's verify_path, stricter). */
static const char *path_refusal(const char *path)
{
	const char *c, *end;

	if (!path || !*path)
		return "empty path";
	if (path[0] == '/')
		return "absolute path";
	for (const char *p = path; *p; p++) {
		if ((guchar)*p < 0x20 || *p == 0x7f)
			return "control character in path";
		if (*p == '\\')
			return "backslash in path";
	}
	for (c = path;; c = end + 1) {
		gsize n;

		end = strchrnul(c, '/');
		n = (gsize)(end - c);
		if (n == 0)
			return "empty path component";
		if (n == 1 && c[0] == '.')
			return "'.' component";
		if (n == 2 && c[0] == '.' && c[1] == '.')
			return "'..' component";
		if (component_is_dotgit(c, n))
			return "'.git' component";
		if (!*end)
			return NULL;
	}
}

/* Refuses a mode other than a regular file's (0: the patch does not say). */
static bool mode_refused(struct apply_state *st, const char *shown, unsigned mode)
{
	switch (mode) {
	case 0:
	case GIT_FILEMODE_BLOB:
	case GIT_FILEMODE_BLOB_EXECUTABLE:
		return false;
	case GIT_FILEMODE_LINK:
		apply_fail(st, REPO_APPLY_REFUSED, "%s: symbolic link", shown);
		return true;
	case GIT_FILEMODE_COMMIT:
		apply_fail(st, REPO_APPLY_REFUSED, "%s: submodule", shown);
		return true;
	default:
		apply_fail(st, REPO_APPLY_REFUSED, "%s: file mode %06o", shown, mode);
		return true;
	}
}

/* Returns 1 when the delta of @patch may be applied, else 0 with the reason. */
static int delta_check(struct apply_state *st, git_patch *patch)
{
	const git_diff_delta *d = git_patch_get_delta(patch);
	const char *paths[] = { d->old_file.path, d->new_file.path };
	const unsigned modes[] = { d->old_file.mode, d->new_file.mode };
	g_autofree char *shown = path_shown(d->new_file.path ? d->new_file.path : d->old_file.path);

	switch (d->status) {
	case GIT_DELTA_ADDED:
	case GIT_DELTA_DELETED:
	case GIT_DELTA_MODIFIED:
	case GIT_DELTA_RENAMED:
	case GIT_DELTA_COPIED:
		break;
	default:
		return apply_fail(st, REPO_APPLY_INVALID, "%s: unexpected change", shown);
	}
	for (size_t i = 0; i < G_N_ELEMENTS(paths); i++) {
		const char *why = path_refusal(paths[i]);

		if (why) {
			g_autofree char *p = path_shown(paths[i]);

			return apply_fail(st, REPO_APPLY_REFUSED, "%s: %s", p, why);
		}
	}
	for (size_t i = 0; i < G_N_ELEMENTS(modes); i++) {
		g_autofree char *p = path_shown(paths[i]);

		if (mode_refused(st, p, modes[i]))
			return 0;
	}
	if (d->flags & GIT_DIFF_FLAG_BINARY)
		return apply_fail(st, REPO_APPLY_REFUSED, "%s: binary patch", shown);
	return 1;
}

/* Drops the newline ending the last line of @lines ("\ No newline at end of file"). */
static void drop_newline(GArray *lines)
{
	struct apply_line *l;

	if (lines->len == 0)
		return;
	l = &g_array_index(lines, struct apply_line, lines->len - 1);
	if (l->n && l->p[l->n - 1] == '\n')
		l->n--;
}

static bool fragment_matches(GArray *img, GArray *pre, gsize at)
{
	if (at + pre->len > img->len)
		return false;
	for (gsize i = 0; i < pre->len; i++) {
		const struct apply_line *a = &g_array_index(img, struct apply_line, at + i);
		const struct apply_line *b = &g_array_index(pre, struct apply_line, i);

		if (a->n != b->n || memcmp(a->p, b->p, a->n) != 0)
			return false;
	}
	return true;
}

/*
 * Where @pre occurs in @img: at @line, else the nearest position after,
 * then before, and so on (git apply's find_pos). Anchored hunks match only
 * at the start or the end. Returns the position, -1 when nowhere, -2 when
 * the search budget ran out.
 */
static gssize find_pos(struct apply_state *st, GArray *img, GArray *pre, gsize line,
		       bool match_beginning, bool match_end)
{
	if (pre->len > img->len)
		return -1;
	if (match_beginning || match_end) {
		gsize at = match_beginning ? 0 : img->len - pre->len;

		if (match_end && at + pre->len != img->len)
			return -1;
		return fragment_matches(img, pre, at) ? (gssize)at : -1;
	}
	if (line > img->len)
		line = img->len;
	for (gsize d = 0;; d++) {
		bool tried = false;

		if (line + d <= img->len) {
			tried = true;
			if (st->budget-- == 0)
				return -2;
			if (fragment_matches(img, pre, line + d))
				return (gssize)(line + d);
		}
		if (d > 0 && d <= line) {
			tried = true;
			if (st->budget-- == 0)
				return -2;
			if (fragment_matches(img, pre, line - d))
				return (gssize)(line - d);
		}
		if (!tried)
			return -1;
	}
}

/*
 * Applies the hunks of @patch to @src (@len bytes) into @out. Returns 1,
 * or 0 with the reason.
 */
static int hunks_apply(struct apply_state *st, git_patch *patch, const char *shown,
		       const char *src, gsize len, GString *out)
{
	g_autoptr(GArray) img = g_array_new(FALSE, FALSE, sizeof(struct apply_line));
	size_t nhunks = git_patch_num_hunks(patch);

	for (gsize i = 0; i < len;) {
		const char *nl = memchr(src + i, '\n', len - i);
		struct apply_line l = { src + i, nl ? (gsize)(nl - (src + i)) + 1 : len - i };

		g_array_append_val(img, l);
		i += l.n;
	}
	for (size_t h = 0; h < nhunks; h++) {
		g_autoptr(GArray) pre = g_array_new(FALSE, FALSE, sizeof(struct apply_line));
		g_autoptr(GArray) post = g_array_new(FALSE, FALSE, sizeof(struct apply_line));
		const git_diff_hunk *hunk = NULL;
		size_t nlines = 0, trailing = 0;
		bool match_beginning, match_end;
		gssize at;

		if (git_patch_get_hunk(&hunk, &nlines, patch, h) < 0)
			return apply_fail(st, REPO_APPLY_INVALID, "%s: unreadable hunk", shown);
		for (size_t i = 0; i < nlines; i++) {
			const git_diff_line *line = NULL;
			struct apply_line l;

			if (git_patch_get_line_in_hunk(&line, patch, h, i) < 0)
				return apply_fail(st, REPO_APPLY_INVALID, "%s: unreadable hunk",
						  shown);
			l.p = line->content;
			l.n = line->content_len;
			switch (line->origin) {
			case GIT_DIFF_LINE_CONTEXT:
				g_array_append_val(pre, l);
				g_array_append_val(post, l);
				trailing++;
				break;
			case GIT_DIFF_LINE_DELETION:
				g_array_append_val(pre, l);
				trailing = 0;
				break;
			case GIT_DIFF_LINE_ADDITION:
				g_array_append_val(post, l);
				trailing = 0;
				break;
			case GIT_DIFF_LINE_CONTEXT_EOFNL:
				drop_newline(pre);
				drop_newline(post);
				break;
			case GIT_DIFF_LINE_DEL_EOFNL:
				drop_newline(pre);
				break;
			case GIT_DIFF_LINE_ADD_EOFNL:
				drop_newline(post);
				break;
			default:
				break;
			}
		}
		/* As git apply without --unidiff-zero. */
		match_beginning = hunk->old_start <= 1;
		match_end = trailing == 0;
		at = find_pos(st, img, pre, hunk->new_start > 0 ? (gsize)hunk->new_start - 1 : 0,
			      match_beginning, match_end);
		if (at == -2)
			return apply_fail(st, REPO_APPLY_REFUSED,
					  "%s: hunks too far from their stated lines", shown);
		if (at < 0)
			return apply_fail(st, REPO_APPLY_CONFLICT,
					  "%s: hunk %zu (@@ -%d,%d) does not apply", shown, h + 1,
					  hunk->old_start, hunk->old_lines);
		g_array_remove_range(img, (guint)at, pre->len);
		g_array_insert_vals(img, (guint)at, post->data, post->len);
	}
	for (guint i = 0; i < img->len; i++) {
		const struct apply_line *l = &g_array_index(img, struct apply_line, i);

		g_string_append_len(out, l->p, (gssize)l->n);
	}
	return 1;
}

/* Returns 1 when nothing in the index is at @path, under it or above it, else 0. */
static int path_free(struct apply_state *st, const char *path, const char *shown)
{
	g_autofree char *dir = g_strconcat(path, "/", NULL);
	size_t pos;

	if (git_index_get_bypath(st->index, path, 0))
		return apply_fail(st, REPO_APPLY_CONFLICT, "%s: already exists", shown);
	if (git_index_find_prefix(&pos, st->index, dir) == 0)
		return apply_fail(st, REPO_APPLY_CONFLICT, "%s: is a directory", shown);
	for (char *slash = strchr(dir, '/'); slash && slash[1]; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		if (git_index_get_bypath(st->index, dir, 0))
			return apply_fail(st, REPO_APPLY_CONFLICT, "%s: a leading directory is a file",
					  shown);
		*slash = '/';
	}
	return 1;
}

/* Applies the (checked) delta of @patch to the index: 1, 0 with the reason, -1 with @error. */
static int delta_apply(struct apply_state *st, git_patch *patch, GError **error)
{
	const git_diff_delta *d = git_patch_get_delta(patch);
	g_autofree char *old_shown = path_shown(d->old_file.path);
	g_autofree char *new_shown = path_shown(d->new_file.path);
	g_autoptr(GString) out = g_string_new(NULL);
	git_index_entry entry;
	git_blob *blob = NULL;
	unsigned mode = GIT_FILEMODE_BLOB;
	int rc, r;

	if (d->status != GIT_DELTA_ADDED) {
		const git_index_entry *e = git_index_get_bypath(st->index, d->old_file.path, 0);

		if (!e)
			return apply_fail(st, REPO_APPLY_CONFLICT, "%s: does not exist", old_shown);
		if (e->mode != GIT_FILEMODE_BLOB && e->mode != GIT_FILEMODE_BLOB_EXECUTABLE)
			return apply_fail(st, REPO_APPLY_REFUSED, "%s: not a regular file in the tree",
					  old_shown);
		mode = e->mode;
		rc = git_blob_lookup(&blob, st->git, &e->id);
		if (rc < 0) {
			set_git_error(error, rc, d->old_file.path);
			return -1;
		}
	}
	if (d->status == GIT_DELTA_ADDED || d->status == GIT_DELTA_RENAMED ||
	    d->status == GIT_DELTA_COPIED) {
		if (!path_free(st, d->new_file.path, new_shown)) {
			git_blob_free(blob);
			return 0;
		}
	}
	r = hunks_apply(st, patch, old_shown, blob ? git_blob_rawcontent(blob) : "",
			blob ? (gsize)git_blob_rawsize(blob) : 0, out);
	git_blob_free(blob);
	if (r <= 0)
		return r;
	if (d->status == GIT_DELTA_DELETED) {
		if (out->len)
			return apply_fail(st, REPO_APPLY_CONFLICT,
					  "%s: removal patch leaves file contents", old_shown);
		rc = git_index_remove_bypath(st->index, d->old_file.path);
		goto done;
	}
	/*
	 * The mode only changes when the patch says so ("new file mode",
	 * "old mode"/"new mode"), as with git apply; the "index" line's mode
	 * describes the author's tree, not ours.
	 */
	if (d->status == GIT_DELTA_ADDED || d->old_file.mode != d->new_file.mode)
		mode = d->new_file.mode ? d->new_file.mode : mode;
	memset(&entry, 0, sizeof(entry));
	entry.mode = mode;
	entry.path = d->new_file.path;
	rc = git_blob_create_from_buffer(&entry.id, st->git, out->str, out->len);
	if (rc < 0) {
		set_git_error(error, rc, d->new_file.path);
		return -1;
	}
	if (d->status == GIT_DELTA_RENAMED &&
	    (rc = git_index_remove_bypath(st->index, d->old_file.path)) < 0)
		goto done;
	if (git_index_add(st->index, &entry) < 0) {
		const git_error *e = git_error_last();
		g_autofree char *m = g_strescape(e && e->message ? e->message : "", NULL);

		return apply_fail(st, REPO_APPLY_REFUSED, "%s: refused by libgit2: %s", new_shown, m);
	}
done:
	if (rc < 0) {
		set_git_error(error, rc, d->old_file.path);
		return -1;
	}
	return 1;
}

/* Whether a line of @text starts with @prefix. */
static bool has_line_prefix(const char *text, const char *prefix)
{
	for (const char *l = text; l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		if (g_str_has_prefix(l, prefix))
			return true;
	}
	return false;
}

/*
 * The name on a plain unified diff's "---"/"+++" line (@p up to @end), as
 * git apply -p1 takes it: up to a tab, without its first directory;
 * "/dev/null" as is. NULL when there is no directory to strip.
 */
static char *plain_name(const char *p, const char *end)
{
	const char *tab = memchr(p, '\t', (gsize)(end - p));
	g_autofree char *name = g_strndup(p, (gsize)((tab ? tab : end) - p));
	const char *slash;

	g_strchomp(name);
	if (strcmp(name, "/dev/null") == 0)
		return g_steal_pointer(&name);
	slash = strchr(name, '/');
	if (!slash || !slash[1])
		return NULL;
	return g_strdup(slash + 1);
}

/* The line counts of a hunk header "@@ -a[,b] +c[,d] @@" (0 when unreadable). */
static void hunk_counts(const char *line, gint64 *old_lines, gint64 *new_lines)
{
	char *p = (char *)line + 4;

	*old_lines = *new_lines = 0;
	g_ascii_strtoll(p, &p, 10);
	*old_lines = *p == ',' ? g_ascii_strtoll(p + 1, &p, 10) : 1;
	if (!g_str_has_prefix(p, " +")) {
		*old_lines = 0;
		return;
	}
	g_ascii_strtoll(p + 2, &p, 10);
	*new_lines = *p == ',' ? g_ascii_strtoll(p + 1, &p, 10) : 1;
}

/*
 * A plain unified diff (diff -u, quilt) with the "diff --git" headers
 * libgit2's parser needs (it reads no other kind), or NULL when @text
 * has git headers already or no file header to convert. Hunk lines are
 * counted, so a removed line "-- x" is never taken for a file header.
 */
static char *diff_gitify(const char *text)
{
	g_autoptr(GString) out = NULL;
	gint64 old_left = 0, new_left = 0;
	bool changed = false;

	if (has_line_prefix(text, "diff --git "))
		return NULL;
	out = g_string_new(NULL);
	for (const char *line = text; *line;) {
		const char *eol = strchrnul(line, '\n');
		const char *next = *eol ? eol + 1 : eol;

		if (old_left > 0 || new_left > 0) {
			bool in_hunk = true;

			switch (*line) {
			case ' ':
			case '\n':
				old_left--;
				new_left--;
				break;
			case '-':
				old_left--;
				break;
			case '+':
				new_left--;
				break;
			case '\\':
				break;
			default:
				old_left = new_left = 0;
				in_hunk = false;
			}
			if (in_hunk) {
				g_string_append_len(out, line, next - line);
				line = next;
				continue;
			}
		}
		if (g_str_has_prefix(line, "--- ") && g_str_has_prefix(next, "+++ ")) {
			const char *eol2 = strchrnul(next, '\n');
			g_autofree char *a = plain_name(line + 4, eol);
			g_autofree char *b = plain_name(next + 4, eol2);
			bool added = a && strcmp(a, "/dev/null") == 0;
			bool deleted = b && strcmp(b, "/dev/null") == 0;

			if (a && b && !(added && deleted)) {
				const char *name = deleted ? a : b;

				g_string_append_printf(out, "diff --git a/%s b/%s\n%s", name, name,
						       added ? "new file mode 100644\n" :
						       deleted ? "deleted file mode 100644\n" : "");
				g_string_append_printf(out, "--- %s%s\n+++ %s%s\n",
						       added ? "" : "a/", added ? "/dev/null" : name,
						       deleted ? "" : "b/", deleted ? "/dev/null" : name);
				changed = true;
				line = *eol2 ? eol2 + 1 : eol2;
				continue;
			}
		}
		if (g_str_has_prefix(line, "@@ -"))
			hunk_counts(line, &old_left, &new_left);
		g_string_append_len(out, line, next - line);
		line = next;
	}
	return changed ? g_string_free(g_steal_pointer(&out), FALSE) : NULL;
}

/* Removes control characters and angle brackets, which would break a commit header. */
static char *ident_clean(const char *s)
{
	GString *out = g_string_new(NULL);

	for (const char *p = s ? s : ""; *p; p++) {
		if ((guchar)*p >= 0x20 && *p != 0x7f && *p != '<' && *p != '>')
			g_string_append_c(out, *p);
	}
	return g_strstrip(g_string_free(out, FALSE));
}

/*
 * Applies @p on the index and commits it on @parent as *@made. Returns 1,
 * 0 with the reason in @st, or -1 with @error.
 */
static int patch_apply(struct apply_state *st, git_commit *parent, const struct repo_patch *p,
		       const git_signature *committer, gint64 now, git_oid *made, GError **error)
{
	g_autofree char *gitified = NULL;
	g_autofree char *name = ident_clean(p->author_name);
	g_autofree char *email = ident_clean(p->author_email);
	g_autofree char *message = NULL;
	g_autoptr(GPtrArray) patches = g_ptr_array_new_with_free_func((GDestroyNotify)git_patch_free);
	const char *text = p->diff ? p->diff : "";
	gsize len = strlen(text);
	git_diff *diff = NULL;
	git_signature *author = NULL;
	git_tree *tree = NULL;
	git_oid tree_id;
	size_t ndeltas;
	int rc, r = -1;

	if (len > REPO_APPLY_MAX_BYTES)
		return apply_fail(st, REPO_APPLY_REFUSED, "diff larger than %d MiB",
				  REPO_APPLY_MAX_BYTES >> 20);
	if (has_line_prefix(text, "GIT binary patch") || has_line_prefix(text, "Binary files "))
		return apply_fail(st, REPO_APPLY_REFUSED, "binary patch");
	gitified = diff_gitify(text);
	if (gitified)
		text = gitified;
	rc = git_diff_from_buffer(&diff, text, strlen(text));
	if (rc < 0) {
		const git_error *e = git_error_last();
		g_autofree char *m = g_strescape(e && e->message ? e->message : "", NULL);

		return apply_fail(st, REPO_APPLY_INVALID, "not a readable diff: %.200s", m);
	}
	ndeltas = git_diff_num_deltas(diff);
	if (ndeltas == 0) {
		r = apply_fail(st, REPO_APPLY_INVALID, "not a readable diff: no file changed");
		goto out;
	}
	if (ndeltas > REPO_APPLY_MAX_FILES) {
		r = apply_fail(st, REPO_APPLY_REFUSED, "diff changes more than %d files",
			       REPO_APPLY_MAX_FILES);
		goto out;
	}
	for (size_t i = 0; i < ndeltas; i++) {
		git_patch *patch = NULL;

		if ((rc = git_patch_from_diff(&patch, diff, i)) < 0) {
			set_git_error(error, rc, "diff");
			goto out;
		}
		g_ptr_array_add(patches, patch);
		if (!delta_check(st, patch)) {
			r = 0;
			goto out;
		}
	}
	for (guint i = 0; i < patches->len; i++) {
		r = delta_apply(st, patches->pdata[i], error);
		if (r <= 0)
			goto out;
	}
	r = -1;
	if (!*email) {
		r = apply_fail(st, REPO_APPLY_INVALID, "no author address");
		goto out;
	}
	if (!*name) {
		g_free(name);
		name = g_strdup(email);
	}
	rc = git_signature_new(&author, name, email, p->author_time ? p->author_time : now,
			       ABS(p->author_offset) < 24 * 60 ? p->author_offset : 0);
	if (rc < 0) {
		const git_error *e = git_error_last();
		g_autofree char *m = g_strescape(e && e->message ? e->message : "", NULL);

		r = apply_fail(st, REPO_APPLY_INVALID, "author: %s", m);
		goto out;
	}
	/* As git am: the body follows a blank line, and the message ends with a newline. */
	if (p->message && *p->message)
		message = g_strdup_printf("%s\n\n%s%s", p->subject ? p->subject : "", p->message,
					  g_str_has_suffix(p->message, "\n") ? "" : "\n");
	else
		message = g_strdup_printf("%s\n", p->subject ? p->subject : "");
	if ((rc = git_index_write_tree_to(&tree_id, st->index, st->git)) < 0 ||
	    (rc = git_tree_lookup(&tree, st->git, &tree_id)) < 0) {
		set_git_error(error, rc, "writing the patched tree");
		goto out;
	}
	{
		const git_commit *parents[] = { parent };

		rc = git_commit_create(made, st->git, NULL, author, committer, NULL, message, tree,
				       1, parents);
	}
	if (rc < 0) {
		set_git_error(error, rc, "committing a patch");
		goto out;
	}
	r = 1;
out:
	git_tree_free(tree);
	git_signature_free(author);
	g_clear_pointer(&patches, g_ptr_array_unref);
	git_diff_free(diff);
	return r;
}

int repo_apply_series(struct repo *repo, const char *base, const struct repo_patch *patches,
		      size_t n, const char *committer_name, const char *committer_email,
		      gint64 now, char ***commits, enum repo_apply_failure *failure, char **why,
		      GError **error)
{
	struct apply_state st = { .git = repo->git, .failure = REPO_APPLY_OK };
	g_autoptr(GPtrArray) made = g_ptr_array_new_with_free_func(g_free);
	git_commit *parent = NULL;
	git_signature *committer = NULL;
	git_tree *tree = NULL;
	git_oid id;
	int rc, result = -1;

	*commits = NULL;
	*failure = REPO_APPLY_OK;
	*why = NULL;
	if (!parse_oid(&id, base, error))
		return -1;
	if ((rc = git_commit_lookup(&parent, repo->git, &id)) < 0 ||
	    (rc = git_commit_tree(&tree, parent)) < 0 ||
	    (rc = git_index_new(&st.index)) < 0 ||
	    (rc = git_index_read_tree(st.index, tree)) < 0) {
		set_git_error(error, rc, base);
		goto out;
	}
	if ((rc = git_signature_new(&committer, committer_name, committer_email, now, 0)) < 0) {
		set_git_error(error, rc, "committer");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		git_oid next;

		st.budget = APPLY_SEARCH_BUDGET;
		rc = patch_apply(&st, parent, &patches[i], committer, now, &next, error);
		if (rc < 0)
			goto out;
		if (rc == 0)
			break;
		git_commit_free(parent);
		parent = NULL;
		if ((rc = git_commit_lookup(&parent, repo->git, &next)) < 0) {
			set_git_error(error, rc, git_oid_tostr_s(&next));
			goto out;
		}
		g_ptr_array_add(made, g_strdup(git_oid_tostr_s(&next)));
	}
	result = (int)made->len;
	*failure = st.failure;
	*why = g_steal_pointer(&st.why);
	g_ptr_array_add(made, NULL);
	*commits = (char **)g_ptr_array_free(g_steal_pointer(&made), FALSE);
out:
	g_free(st.why);
	git_index_free(st.index);
	git_signature_free(committer);
	git_tree_free(tree);
	git_commit_free(parent);
	return result;
}

void repo_people_free(struct repo_people *p)
{
	if (!p)
		return;
	g_free(p->oid);
	g_free(p->summary);
	g_free(p->author_name);
	g_free(p->author_email);
	g_free(p->committer_name);
	g_free(p->committer_email);
	g_strfreev(p->signed_off_by);
	g_free(p);
}

/* The most Signed-off-by: trailers read from one commit. */
#define SIGNOFFS_MAX 64

struct repo_people *repo_people_of(struct repo *repo, const char *oid, GError **error)
{
	g_autoptr(GStrvBuilder) signoffs = g_strv_builder_new();
	git_message_trailer_array trailers = { 0 };
	const git_signature *author, *committer;
	struct repo_people *p;
	git_commit *commit = NULL;
	git_oid id;
	int rc;

	if (!parse_oid(&id, oid, error))
		return NULL;
	rc = git_commit_lookup(&commit, repo->git, &id);
	if (rc < 0) {
		set_git_error(error, rc, oid);
		return NULL;
	}
	author = git_commit_author(commit);
	committer = git_commit_committer(commit);
	p = g_new0(struct repo_people, 1);
	p->oid = g_strdup(git_oid_tostr_s(&id));
	p->summary = summary_clean(git_commit_summary(commit));
	p->author_name = summary_clean(author->name);
	p->author_email = summary_clean(author->email);
	p->author_time = (gint64)author->when.time;
	p->author_offset = author->when.offset;
	p->committer_name = summary_clean(committer->name);
	p->committer_email = summary_clean(committer->email);
	if (git_message_trailers(&trailers, git_commit_message(commit)) == 0) {
		for (size_t i = 0, n = 0; i < trailers.count && n < SIGNOFFS_MAX; i++) {
			g_autofree char *value = NULL;

			if (g_ascii_strcasecmp(trailers.trailers[i].key, "Signed-off-by") != 0)
				continue;
			value = summary_clean(trailers.trailers[i].value);
			g_strv_builder_add(signoffs, value);
			n++;
		}
		git_message_trailer_array_free(&trailers);
	}
	p->signed_off_by = g_strv_builder_end(signoffs);
	git_commit_free(commit);
	return p;
}

char *repo_file_at(struct repo *repo, const char *oid, const char *path, gsize max, gsize *len,
		   GError **error)
{
	git_commit *commit = NULL;
	git_tree *tree = NULL;
	git_tree_entry *entry = NULL;
	git_blob *blob = NULL;
	char *out = NULL;
	git_oid id;
	int rc;

	if (!parse_oid(&id, oid, error))
		return NULL;
	if ((rc = git_commit_lookup(&commit, repo->git, &id)) < 0 ||
	    (rc = git_commit_tree(&tree, commit)) < 0) {
		set_git_error(error, rc, oid);
		goto out;
	}
	rc = git_tree_entry_bypath(&entry, tree, path);
	if (rc == GIT_ENOTFOUND || (rc == 0 && git_tree_entry_filemode(entry) != GIT_FILEMODE_BLOB &&
				    git_tree_entry_filemode(entry) != GIT_FILEMODE_BLOB_EXECUTABLE)) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_NOT_FOUND,
			    "%s: no regular file %s", oid, path);
		goto out;
	}
	if (rc < 0 || (rc = git_blob_lookup(&blob, repo->git, git_tree_entry_id(entry))) < 0) {
		set_git_error(error, rc, path);
		goto out;
	}
	if ((guint64)git_blob_rawsize(blob) > max) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED,
			    "%s:%s: larger than %" G_GSIZE_FORMAT " bytes", oid, path, max);
		goto out;
	}
	*len = (gsize)git_blob_rawsize(blob);
	out = g_malloc(*len + 1);
	memcpy(out, git_blob_rawcontent(blob), *len);
	out[*len] = '\0';
out:
	git_blob_free(blob);
	git_tree_entry_free(entry);
	git_tree_free(tree);
	git_commit_free(commit);
	return out;
}

/* A patch being printed, and where it stops. */
struct patch_buf {
	GString *text;
	gsize max;
	bool full;
};

static int patch_line_cb(const git_diff_delta *delta, const git_diff_hunk *hunk,
			 const git_diff_line *line, void *payload)
{
	struct patch_buf *p = payload;

	if (p->text->len + line->content_len + 1 > p->max) {
		p->full = true;
		return 1; /* stops git_diff_print() */
	}
	if (line->origin == GIT_DIFF_LINE_CONTEXT || line->origin == GIT_DIFF_LINE_ADDITION ||
	    line->origin == GIT_DIFF_LINE_DELETION)
		g_string_append_c(p->text, line->origin);
	g_string_append_len(p->text, line->content, (gssize)line->content_len);
	return 0;
}

char *repo_commit_patch(struct repo *repo, const char *oid, gsize max, gsize *len,
			GError **error)
{
	struct patch_buf p = { .text = g_string_new(NULL), .max = max };
	git_commit *commit = NULL;
	git_commit *parent = NULL;
	git_tree *a = NULL, *b = NULL;
	git_diff *diff = NULL;
	const git_signature *author;
	const char *message;
	char *out = NULL;
	git_oid id;
	int rc;

	if (!parse_oid(&id, oid, error))
		goto out;
	rc = git_commit_lookup(&commit, repo->git, &id);
	if (rc == 0)
		rc = git_commit_tree(&b, commit);
	if (rc == 0 && git_commit_parentcount(commit) > 0) {
		rc = git_commit_parent(&parent, commit, 0);
		if (rc == 0)
			rc = git_commit_tree(&a, parent);
	}
	if (rc == 0)
		rc = git_diff_tree_to_tree(&diff, repo->git, a, b, NULL);
	if (rc < 0) {
		set_git_error(error, rc, oid);
		goto out;
	}
	author = git_commit_author(commit);
	message = git_commit_message(commit);
	g_string_append_printf(p.text, "From %s Mon Sep 17 00:00:00 2001\nFrom: %s <%s>\n"
			       "Subject: [PATCH] %s\n\n", oid, author->name, author->email,
			       git_commit_summary(commit) ? git_commit_summary(commit) : "");
	/* The message's body: what follows its first paragraph. */
	message = message ? strstr(message, "\n\n") : NULL;
	if (message)
		g_string_append(p.text, message + 2);
	g_string_append(p.text, "---\n");
	if (p.text->len > max) {
		p.full = true;
	} else {
		rc = git_diff_print(diff, GIT_DIFF_FORMAT_PATCH, patch_line_cb, &p);
		if (rc < 0 && !p.full) {
			set_git_error(error, rc, oid);
			goto out;
		}
	}
	if (p.full) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_LIMIT,
			    "%s: the patch is larger than %" G_GSIZE_FORMAT " bytes", oid, max);
		goto out;
	}
	*len = p.text->len;
	out = g_string_free(g_steal_pointer(&p.text), FALSE);
out:
	if (p.text)
		g_string_free(p.text, TRUE);
	git_diff_free(diff);
	git_tree_free(a);
	git_tree_free(b);
	git_commit_free(parent);
	git_commit_free(commit);
	return out;
}

static struct repo_commit *commit_info(git_repository *git, const git_oid *id, GError **error)
{
	struct repo_commit *info;
	git_commit *commit = NULL;
	const char *message;
	const char *summary;
	int rc;

	rc = git_commit_lookup(&commit, git, id);
	if (rc < 0) {
		set_git_error(error, rc, git_oid_tostr_s(id));
		return NULL;
	}
	message = git_commit_message(commit);
	summary = git_commit_summary(commit);
	info = g_new0(struct repo_commit, 1);
	info->oid = g_strdup(git_oid_tostr_s(id));
	info->summary = summary_clean(summary);
	info->dont_auto_build = message && strstr(message, "Dont-Auto-Build") != NULL;
	info->parents = git_commit_parentcount(commit);
	info->parent_ids = g_new0(char *, info->parents + 1);
	for (unsigned i = 0; i < info->parents; i++)
		info->parent_ids[i] = g_strdup(git_oid_tostr_s(git_commit_parent_id(commit, i)));
	git_commit_free(commit);
	return info;
}

/*
 * Pushes @head, hides @hide; hidden ids missing from the store are
 * skipped, since a forgotten or force-pushed-away head hides nothing.
 */
static git_revwalk *walk_new(git_repository *git, const git_oid *head,
			     const char *const *hide, unsigned sort, GError **error)
{
	git_revwalk *walk = NULL;
	int rc;

	rc = git_revwalk_new(&walk, git);
	if (rc == 0)
		rc = git_revwalk_sorting(walk, sort);
	if (rc == 0)
		rc = git_revwalk_push(walk, head);
	for (const char *const *h = hide; rc == 0 && h && *h; h++) {
		git_oid id;
		git_commit *c = NULL;

		if (!parse_oid(&id, *h, NULL) || git_commit_lookup(&c, git, &id) < 0)
			continue;
		git_commit_free(c);
		rc = git_revwalk_hide(walk, &id);
	}
	if (rc < 0) {
		set_git_error(error, rc, git_oid_tostr_s(head));
		git_revwalk_free(walk);
		return NULL;
	}
	return walk;
}

GPtrArray *repo_walk_new(struct repo *repo, const char *head, const char *const *hide,
			 unsigned limit, bool *truncated, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)repo_commit_free);
	g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(git_oid));
	git_revwalk *walk;
	git_oid head_id, id;
	int rc;

	*truncated = false;
	if (!parse_oid(&head_id, head, error))
		return NULL;
	if (!repo_has_commit(repo, head)) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_NOT_FOUND,
			    "commit %s is not in the store", head);
		return NULL;
	}

	/*
	 * First a cheap walk in time order that stops past @limit: a branch
	 * with no known base would otherwise sort the whole history.
	 */
	walk = walk_new(repo->git, &head_id, hide, GIT_SORT_TIME, error);
	if (!walk)
		return NULL;
	while ((rc = git_revwalk_next(&id, walk)) == 0) {
		if (ids->len == limit) {
			*truncated = true;
			break;
		}
		g_array_append_val(ids, id);
	}
	git_revwalk_free(walk);
	if (rc < 0 && rc != GIT_ITEROVER) {
		set_git_error(error, rc, head);
		return NULL;
	}

	if (!*truncated) {
		g_array_set_size(ids, 0);
		walk = walk_new(repo->git, &head_id, hide,
				GIT_SORT_TOPOLOGICAL | GIT_SORT_REVERSE, error);
		if (!walk)
			return NULL;
		while ((rc = git_revwalk_next(&id, walk)) == 0)
			g_array_append_val(ids, id);
		git_revwalk_free(walk);
		if (rc != GIT_ITEROVER) {
			set_git_error(error, rc, head);
			return NULL;
		}
		for (guint i = 0; i < ids->len; i++) {
			struct repo_commit *c = commit_info(repo->git, &g_array_index(ids, git_oid, i), error);

			if (!c)
				return NULL;
			g_ptr_array_add(out, c);
		}
	} else {
		for (guint i = ids->len; i-- > 0;) {
			struct repo_commit *c = commit_info(repo->git, &g_array_index(ids, git_oid, i), error);

			if (!c)
				return NULL;
			g_ptr_array_add(out, c);
		}
	}
	return g_steal_pointer(&out);
}

struct worktree {
	git_repository *git;    /* the work tree's own repository */
	git_repository *source; /* where objects and revisions come from */
	char *dir;
};

void repo_worktree_free(struct worktree *wt)
{
	if (!wt)
		return;
	git_repository_free(wt->git);
	git_repository_free(wt->source);
	g_free(wt->dir);
	g_free(wt);
}

struct worktree *repo_worktree_open(const char *dir, const char *objects_from, GError **error)
{
	zd_autoptr(worktree) wt = g_new0(struct worktree, 1);
	g_autofree char *source = NULL;
	g_autofree char *alternates = NULL;
	g_autofree char *objects = NULL;
	int rc;

	/* The object source may be a bare store or a work repository. */
	rc = git_repository_open_ext(&wt->source, objects_from, GIT_REPOSITORY_OPEN_NO_SEARCH,
				     NULL);
	if (rc < 0) {
		set_git_error(error, rc, objects_from);
		return NULL;
	}
	objects = g_build_filename(git_repository_path(wt->source), "objects", NULL);

	rc = git_repository_open_ext(&wt->git, dir, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL);
	if (rc == GIT_ENOTFOUND) {
		git_repository_init_options opts = GIT_REPOSITORY_INIT_OPTIONS_INIT;

		opts.flags = GIT_REPOSITORY_INIT_MKPATH | GIT_REPOSITORY_INIT_NO_REINIT;
		rc = git_repository_init_ext(&wt->git, dir, &opts);
	}
	if (rc < 0) {
		set_git_error(error, rc, dir);
		return NULL;
	}
	alternates = g_build_filename(git_repository_path(wt->git), "objects", "info",
				      "alternates", NULL);
	source = g_strconcat(objects, "\n", NULL);
	{
		g_autofree char *current = NULL;

		if (!g_file_get_contents(alternates, &current, NULL, NULL) ||
		    strcmp(current, source) != 0) {
			g_autoptr(GError) local = NULL;
			g_autofree char *info = g_path_get_dirname(alternates);

			g_mkdir_with_parents(info, 0755);
			if (!g_file_set_contents(alternates, source, -1, &local)) {
				g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s",
					    local->message);
				return NULL;
			}
			/* The odb read the old alternates at open: reopen. */
			git_repository_free(wt->git);
			wt->git = NULL;
			rc = git_repository_open_ext(&wt->git, dir, GIT_REPOSITORY_OPEN_NO_SEARCH,
						     NULL);
			if (rc < 0) {
				set_git_error(error, rc, dir);
				return NULL;
			}
		}
	}
	wt->dir = g_strdup(dir);
	return g_steal_pointer(&wt);
}

char *repo_worktree_resolve(struct worktree *wt, const char *rev, GError **error)
{
	git_object *obj = NULL;
	git_oid id;
	int rc;

	if (strlen(rev) == GIT_OID_HEXSZ && git_oid_fromstr(&id, rev) == 0)
		rc = git_object_lookup(&obj, wt->source, &id, GIT_OBJECT_COMMIT);
	else if (rev[0] == '-' || strstr(rev, "..") || strchr(rev, ':'))
		rc = GIT_EINVALIDSPEC;
	else
		rc = git_revparse_single(&obj, wt->source, rev);
	if (rc == 0) {
		git_object *commit = NULL;

		rc = git_object_peel(&commit, obj, GIT_OBJECT_COMMIT);
		git_object_free(obj);
		obj = commit;
	}
	if (rc < 0) {
		g_autofree char *shown = g_strescape(rev, NULL);

		if (rc == GIT_EINVALIDSPEC && !git_error_last())
			git_error_set_str(GIT_ERROR_INVALID, "not a revision");
		set_git_error(error, rc, shown);
		return NULL;
	}
	{
		char *out = g_strdup(git_oid_tostr_s(git_object_id(obj)));

		git_object_free(obj);
		return out;
	}
}

static git_commit *worktree_commit(struct worktree *wt, const char *oid, GError **error)
{
	git_commit *commit = NULL;
	git_oid id;
	int rc;

	if (!parse_oid(&id, oid, error))
		return NULL;
	rc = git_commit_lookup(&commit, wt->git, &id);
	if (rc < 0) {
		set_git_error(error, rc, oid);
		return NULL;
	}
	return commit;
}

char *repo_worktree_parent(struct worktree *wt, const char *oid, GError **error)
{
	git_commit *commit = worktree_commit(wt, oid, error);
	char *out = NULL;

	if (!commit)
		return NULL;
	if (git_commit_parentcount(commit) > 0)
		out = g_strdup(git_oid_tostr_s(git_commit_parent_id(commit, 0)));
	git_commit_free(commit);
	return out;
}

/* The paths where @index and @commit's tree differ, or NULL for an empty index. */
static char **index_changes(git_repository *git, git_index *index, git_commit *commit, int *rc)
{
	g_autoptr(GStrvBuilder) paths = NULL;
	git_tree *tree = NULL;
	git_diff *diff = NULL;

	if (git_index_entrycount(index) == 0)
		return NULL;
	*rc = git_commit_tree(&tree, commit);
	if (*rc == 0)
		*rc = git_diff_tree_to_index(&diff, git, tree, index, NULL);
	if (*rc == 0) {
		paths = g_strv_builder_new();
		for (size_t i = 0; i < git_diff_num_deltas(diff); i++) {
			const git_diff_delta *d = git_diff_get_delta(diff, i);

			g_strv_builder_add(paths, d->old_file.path);
			if (strcmp(d->old_file.path, d->new_file.path) != 0)
				g_strv_builder_add(paths, d->new_file.path);
		}
	}
	git_diff_free(diff);
	git_tree_free(tree);
	return paths ? g_strv_builder_end(paths) : NULL;
}

bool repo_worktree_checkout(struct worktree *wt, const char *oid, char ***changed,
			    GError **error)
{
	git_checkout_options opts = GIT_CHECKOUT_OPTIONS_INIT;
	git_commit *commit = worktree_commit(wt, oid, error);
	git_index *index = NULL;
	char **paths = NULL;
	int rc;

	if (changed)
		*changed = NULL;
	if (!commit)
		return false;
	opts.checkout_strategy = GIT_CHECKOUT_FORCE | GIT_CHECKOUT_REMOVE_UNTRACKED |
				 GIT_CHECKOUT_REMOVE_IGNORED;
	/*
	 * Compare with the index, not with HEAD: the index knows what is on
	 * disk, and HEAD's commit may be gone (force-pushed away, or from an
	 * object source that changed).
	 */
	rc = git_repository_index(&index, wt->git);
	if (rc == 0 && changed)
		paths = index_changes(wt->git, index, commit, &rc);
	if (rc == 0) {
		opts.baseline_index = index;
		rc = git_checkout_tree(wt->git, (git_object *)commit, &opts);
	}
	git_index_free(index);
	if (rc == 0)
		rc = git_repository_set_head_detached(wt->git, git_commit_id(commit));
	git_commit_free(commit);
	if (rc < 0) {
		g_strfreev(paths);
		set_git_error(error, rc, oid);
		return false;
	}
	if (changed)
		*changed = paths;
	return true;
}

char **repo_worktree_diff(struct worktree *wt, const char *a, const char *b, GError **error)
{
	g_autoptr(GStrvBuilder) files = g_strv_builder_new();
	git_commit *ca = worktree_commit(wt, a, error);
	git_commit *cb = ca ? worktree_commit(wt, b, error) : NULL;
	git_tree *ta = NULL, *tb = NULL;
	git_diff *diff = NULL;
	int rc;

	if (!ca || !cb) {
		git_commit_free(ca);
		return NULL;
	}
	rc = git_commit_tree(&ta, ca);
	if (rc == 0)
		rc = git_commit_tree(&tb, cb);
	if (rc == 0)
		rc = git_diff_tree_to_tree(&diff, wt->git, ta, tb, NULL);
	for (size_t i = 0; rc == 0 && i < git_diff_num_deltas(diff); i++) {
		const git_diff_delta *d = git_diff_get_delta(diff, i);

		g_strv_builder_add(files, d->old_file.path);
		if (strcmp(d->old_file.path, d->new_file.path) != 0)
			g_strv_builder_add(files, d->new_file.path);
	}
	git_diff_free(diff);
	git_tree_free(ta);
	git_tree_free(tb);
	git_commit_free(ca);
	git_commit_free(cb);
	if (rc < 0) {
		set_git_error(error, rc, b);
		return NULL;
	}
	return g_strv_builder_end(files);
}

char **repo_worktree_changed_files(struct worktree *wt, const char *oid, GError **error)
{
	g_autoptr(GStrvBuilder) files = g_strv_builder_new();
	git_commit *commit = worktree_commit(wt, oid, error);
	git_commit *parent = NULL;
	git_tree *a = NULL, *b = NULL;
	git_diff *diff = NULL;
	int rc;

	if (!commit)
		return NULL;
	rc = git_commit_tree(&b, commit);
	if (rc == 0 && git_commit_parentcount(commit) > 0) {
		rc = git_commit_parent(&parent, commit, 0);
		if (rc == 0)
			rc = git_commit_tree(&a, parent);
	}
	if (rc == 0)
		rc = git_diff_tree_to_tree(&diff, wt->git, a, b, NULL);
	for (size_t i = 0; rc == 0 && i < git_diff_num_deltas(diff); i++) {
		const git_diff_delta *d = git_diff_get_delta(diff, i);

		if (d->status != GIT_DELTA_DELETED)
			g_strv_builder_add(files, d->new_file.path);
	}
	git_diff_free(diff);
	git_tree_free(a);
	git_tree_free(b);
	git_commit_free(parent);
	git_commit_free(commit);
	if (rc < 0) {
		set_git_error(error, rc, oid);
		return NULL;
	}
	return g_strv_builder_end(files);
}
