/*
 * Booting a kernel image N times: see booter.h.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "bot/bot.h"
#include "bot/lab/booter.h"
#include "bot/lab/builder.h"
#include "engine/boot.h"
#include "engine/initramfs.h"

#define RETRIES 2

/*
 * A host that keeps failing is used less. After BACKOFF_AFTER
 * infrastructure failures in a row (counted per host URI, across every
 * booter_boot() call of this process), a host is passed over for a
 * backoff that starts at BACKOFF_MIN_S and doubles with each further
 * failure up to BACKOFF_MAX_S, as long as another host can take the boot;
 * when every host is backed off, the one with the shortest run of
 * failures is used. One success clears its record.
 */
#define BACKOFF_AFTER 2
#define BACKOFF_MIN_S 60
#define BACKOFF_MAX_S 600

struct host_health {
	unsigned streak;  /* infrastructure failures in a row */
	gint64 retry_at;  /* monotonic time before which it is backed off */
};

static GMutex health_lock;
static GHashTable *health; /* URI -> struct host_health, for the process's life */

/* The record of @uri, created on first use. Under health_lock. */
static struct host_health *health_of(const char *uri)
{
	struct host_health *hh;

	if (!health)
		health = g_hash_table_new(g_str_hash, g_str_equal);
	hh = g_hash_table_lookup(health, uri);
	if (!hh) {
		hh = g_new0(struct host_health, 1);
		g_hash_table_insert(health, g_strdup(uri), hh);
	}
	return hh;
}

static void health_note(const char *uri, bool failed)
{
	struct host_health *hh;

	g_mutex_lock(&health_lock);
	hh = health_of(uri);
	if (!failed) {
		hh->streak = 0;
		hh->retry_at = 0;
	} else if (++hh->streak >= BACKOFF_AFTER) {
		unsigned shift = MIN(hh->streak - BACKOFF_AFTER, 16u);
		gint64 s = MIN((gint64)BACKOFF_MIN_S << shift, (gint64)BACKOFF_MAX_S);

		hh->retry_at = g_get_monotonic_time() + s * G_USEC_PER_SEC;
		g_message("boot host %s failed %u times in a row; used less for %" G_GINT64_FORMAT
			  " s", uri, hh->streak, s);
	}
	g_mutex_unlock(&health_lock);
}

/* The host's current run of failures, and whether it is backed off now. */
static bool health_backed_off(const char *uri, unsigned *streak)
{
	struct host_health *hh;
	bool off;

	g_mutex_lock(&health_lock);
	hh = health_of(uri);
	*streak = hh->streak;
	off = hh->streak >= BACKOFF_AFTER && g_get_monotonic_time() < hh->retry_at;
	g_mutex_unlock(&health_lock);
	return off;
}

void booter_run_free(struct booter_run *run)
{
	if (!run)
		return;
	g_free(run->host);
	g_free(run->console_path);
	console_result_clear(&run->result);
	g_free(run);
}

/*
 * A host's slots are shared by every booter_boot() call, in this process
 * (the workers of `zeroday run`) and in others (`zeroday boot`): slot N of
 * a host is held by an flock on STATE/boot/slots/HOST-N.lock, which the
 * kernel drops when its holder dies.
 */
struct host {
	char *uri;
	enum boot_support support; /* of the boot's arch: BOOT_SUPPORT_TCG when unknown */
	char *lock_prefix;
	unsigned slots;
	int *held;         /* per slot: the lock's fd while this call holds it, else -1 */
	unsigned busy;     /* slots this call holds */
	unsigned failures; /* infrastructure failures seen */
	unsigned streak;   /* its failures in a row, from health_backed_off() */
	bool backed_off;   /* passed over while another host can boot */
};

/* The shared state of one booter_boot() call. */
struct pool {
	GMutex lock;
	GCond freed;
	struct host *hosts;
	guint n_hosts;
	const struct config *config;
	const struct booter_request *req;
	const char *initrd;
	const char *logdir;
	const char *host_id; /* boot_host_id() of this installation */
	const struct boot_arch *arch;
	bool kvm;            /* KVM wanted, where a host has it for the arch */
	unsigned scratch_mb; /* the largest scratch disk a payload declares */
};

static bool parse_hosts(struct pool *p, char **specs, const char *lock_dir, GError **error)
{
	p->n_hosts = g_strv_length(specs);
	p->hosts = g_new0(struct host, p->n_hosts);
	for (guint i = 0; i < p->n_hosts; i++) {
		const char *star = strrchr(specs[i], '*');

		p->hosts[i].slots = 1;
		if (star) {
			char *end;
			guint64 n = g_ascii_strtoull(star + 1, &end, 10);

			if (*end || n == 0 || n > 1024) {
				g_set_error(error, BOT_ERROR, BOT_ERROR_CONFIG,
					    "[boot] hosts: bad slot count in '%s'", specs[i]);
				return false;
			}
			p->hosts[i].slots = (unsigned)n;
		}
		p->hosts[i].uri = star ? g_strndup(specs[i], star - specs[i]) : g_strdup(specs[i]);
		{
			g_autofree char *sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256,
									     p->hosts[i].uri, -1);

			p->hosts[i].lock_prefix = g_strdup_printf("%s/%.16s", lock_dir, sum);
		}
		p->hosts[i].held = g_new(int, p->hosts[i].slots);
		for (unsigned s = 0; s < p->hosts[i].slots; s++)
			p->hosts[i].held[s] = -1;
	}
	return true;
}

/* Tries to take a free slot of @h; returns its index or -1. Under p->lock. */
static int try_slot(struct host *h)
{
	for (unsigned s = 0; s < h->slots; s++) {
		g_autofree char *path = NULL;
		int fd;

		if (h->held[s] >= 0)
			continue;
		path = g_strdup_printf("%s-%u.lock", h->lock_prefix, s);
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0) {
			g_warning("%s: %s", path, g_strerror(errno));
			continue;
		}
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			h->held[s] = fd;
			h->busy++;
			return (int)s;
		}
		close(fd);
	}
	return -1;
}

/*
 * Free slots, ranked so that a host that just failed this run comes last,
 * then by the host's run of recent failures (fewer first), then by free
 * slots. A backed-off host is not a candidate while another host is not
 * backed off (whether or not that one has a slot free now).
 */
static int host_score(const struct host *h, const struct host *avoid, bool any_healthy)
{
	if (h->busy >= h->slots || (h->backed_off && any_healthy))
		return -1;
	return (h == avoid ? 0 : 1 << 20) + ((64 - (int)MIN(h->streak, 64u)) << 11) +
	       (int)(h->slots - h->busy);
}

/*
 * Takes a slot on the best host that has one free, waiting for one to
 * free up: released by this call (signalled) or by another (polled).
 */
static struct host *take_host(struct pool *p, const struct host *avoid, int *slot)
{
	g_mutex_lock(&p->lock);
	for (;;) {
		g_autofree guint *order = g_new(guint, p->n_hosts);
		bool any_healthy = false;

		for (guint i = 0; i < p->n_hosts; i++) {
			struct host *h = &p->hosts[i];

			h->backed_off = health_backed_off(h->uri, &h->streak);
			any_healthy |= !h->backed_off;
		}
		/* Best first: insertion sort by score; full hosts last. */
		for (guint i = 0; i < p->n_hosts; i++) {
			guint j = i;

			while (j > 0 && host_score(&p->hosts[order[j - 1]], avoid, any_healthy) <
					host_score(&p->hosts[i], avoid, any_healthy)) {
				order[j] = order[j - 1];
				j--;
			}
			order[j] = i;
		}
		for (guint k = 0; k < p->n_hosts; k++) {
			struct host *h = &p->hosts[order[k]];

			if (host_score(h, avoid, any_healthy) < 0)
				continue;
			*slot = try_slot(h);
			if (*slot >= 0) {
				g_mutex_unlock(&p->lock);
				return h;
			}
		}
		g_cond_wait_until(&p->freed, &p->lock,
				  g_get_monotonic_time() + G_USEC_PER_SEC / 4);
	}
}

static void give_host(struct pool *p, struct host *h, int slot, bool failed)
{
	g_mutex_lock(&p->lock);
	close(h->held[slot]);
	h->held[slot] = -1;
	h->busy--;
	h->failures += failed;
	health_note(h->uri, failed);
	g_cond_broadcast(&p->freed);
	g_mutex_unlock(&p->lock);
}

static void boot_worker(gpointer data, gpointer user_data)
{
	struct booter_run *run = data;
	struct pool *p = user_data;
	struct host *last = NULL;

	for (run->attempts = 1; run->attempts <= 1 + RETRIES; run->attempts++) {
		g_autofree char *cmdline = g_strdup_printf("zeroday.seed=%u %s", run->seed,
							   p->req->cmdline ? p->req->cmdline : "");
		g_autofree char *text = NULL;
		int slot;
		struct host *h = take_host(p, last, &slot);
		struct boot_request br = {
			.arch = p->arch->arch, .kernel = p->req->image, .initrd = p->initrd,
			.cmdline = cmdline, .timeout_s = p->config->boot_timeout,
			.memory_mb = p->config->boot_memory, .host_id = p->host_id,
			.scratch_mb = p->scratch_mb,
			.kvm = p->kvm && h->support == BOOT_SUPPORT_KVM,
		};
		struct boot_outcome out = { 0 };
		g_autoptr(GError) error = NULL;

		g_free(run->console_path);
		run->console_path = g_strdup_printf("%s/seed%u-try%u.console", p->logdir, run->seed,
						    run->attempts);
		br.console_log = run->console_path;
		if (!boot_run(&out, h->uri, &br, &error)) {
			out.infra = true;
			out.infra_reason = g_strdup(error->message);
		}
		give_host(p, h, slot, out.infra);
		last = h;
		g_free(run->host);
		run->host = g_strdup(h->uri);
		run->seconds = out.seconds;
		console_result_clear(&run->result);
		if (!g_file_get_contents(run->console_path, &text, NULL, NULL))
			text = g_strdup("");
		diag_console_classify(&run->result, text, out.timed_out, out.infra);
		if (out.infra)
			g_message("boot seed %u on %s: infrastructure error: %s%s", run->seed, h->uri,
				  out.infra_reason, run->attempts <= RETRIES ? "; retrying" : "");
		if (p->req->progress)
			fprintf(stderr, "boot seed %u on %s: %s (%.1f s)\n", run->seed, h->uri,
				run->result.title, out.seconds);
		boot_outcome_clear(&out);
		if (run->result.kind != CONSOLE_INFRA)
			break;
	}
	if (run->attempts > 1 + RETRIES)
		run->attempts = 1 + RETRIES;
}

/*
 * How often a host's volumes are looked over for clean-up (boot_reap()):
 * asking after each volume takes the host a call per volume, hundreds
 * where kernels are booted all day, and the volumes' own policy counts
 * in hours (a day unused, an hour incomplete). Every boot still reaps the
 * domains (boot_reap_domains()).
 */
#define PRUNE_EVERY_S 3600

/*
 * How often, at most, one process reaps a host's orphaned domains: a
 * bisection boots one seed a call, and a crashed zeroday's domain can
 * wait a minute.
 */
#define REAP_EVERY_S 60

/* Whether this process's reaping of @h's orphaned domains is due; if so, it is noted. */
static bool reap_due(const struct host *h)
{
	static GMutex lock;
	static GHashTable *last; /* URI -> gint64 *, the monotonic time of the last */
	gint64 now = g_get_monotonic_time();
	gint64 *at;
	bool due;

	g_mutex_lock(&lock);
	if (!last)
		last = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	at = g_hash_table_lookup(last, h->uri);
	due = !at || now - *at >= (gint64)REAP_EVERY_S * G_USEC_PER_SEC;
	if (due) {
		at = g_new(gint64, 1);
		*at = now;
		g_hash_table_replace(last, g_strdup(h->uri), at);
	}
	g_mutex_unlock(&lock);
	return due;
}

/*
 * Whether @h's volumes are due for clean-up: the mtime of a stamp beside
 * its slots' locks says when they last were (by any zeroday of this state
 * directory); when due, the stamp is renewed at once.
 */
static bool prune_due(const struct host *h)
{
	g_autofree char *stamp = g_strconcat(h->lock_prefix, ".pruned", NULL);
	struct stat st;
	int fd;

	if (stat(stamp, &st) == 0 && st.st_mtime <= time(NULL) &&
	    time(NULL) - st.st_mtime < PRUNE_EVERY_S)
		return false;
	fd = open(stamp, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0) {
		if (futimens(fd, NULL) < 0)
			g_message("%s: %s", stamp, g_strerror(errno));
		close(fd);
	}
	return true;
}

/* [boot] kvm = auto: one boot with KVM must reach its end marker. */
static bool probe_kvm(struct pool *p)
{
	static gsize once;
	static bool works;

	if (g_once_init_enter(&once)) {
		g_autofree char *log = g_strdup_printf("%s/kvm-probe.console", p->logdir);
		g_autofree char *text = NULL;
		struct boot_request br = {
			.arch = p->arch->arch, .kernel = p->req->image, .initrd = p->initrd,
			.console_log = log,
			.timeout_s = 60, .memory_mb = p->config->boot_memory,
			.host_id = p->host_id, .kvm = true,
		};
		struct boot_outcome out = { 0 };
		struct console_result r = { 0 };

		if (g_file_test("/dev/kvm", G_FILE_TEST_EXISTS) &&
		    boot_run(&out, p->hosts[0].uri, &br, NULL)) {
			g_file_get_contents(log, &text, NULL, NULL);
			diag_console_classify(&r, text ? text : "", out.timed_out, out.infra);
			/* Its tests may fail under KVM as under TCG: the end marker is what counts. */
			works = r.ended && r.kind != CONSOLE_INFRA;
		}
		g_message("KVM probe: %s", works ? "KVM boots guests; using it"
						 : "KVM did not boot the probe; using TCG");
		console_result_clear(&r);
		boot_outcome_clear(&out);
		g_once_init_leave(&once, 1);
	}
	return works;
}

/*
 * The key of an initramfs that packs nothing of this machine's: a hash of
 * all it is made of (busybox, and each payload's name, timeout and bytes,
 * for @kernel's arch), or NULL when a file cannot be read.
 */
static char *initrd_key(const char *busybox, GArray *payloads,
			const struct initramfs_kernel *kernel)
{
	g_autoptr(GChecksum) sum = g_checksum_new(G_CHECKSUM_SHA256);

	g_checksum_update(sum, (const guchar *)"initrd v1\n", -1);
	g_checksum_update(sum, (const guchar *)kernel->arch, -1);
	for (guint i = 0; i <= payloads->len; i++) {
		const struct initramfs_payload *pl =
			i < payloads->len ? &g_array_index(payloads, struct initramfs_payload, i)
					  : NULL;
		g_autofree char *head = pl ? g_strdup_printf("\npayload %s %u\n", pl->name,
							     pl->timeout_s)
					   : g_strdup("\nbusybox\n");
		g_autofree char *data = NULL;
		gsize len;

		if (!g_file_get_contents(pl ? pl->path : busybox, &data, &len, NULL))
			return NULL;
		g_checksum_update(sum, (const guchar *)head, -1);
		g_checksum_update(sum, (const guchar *)data, (gssize)len);
	}
	return g_strdup(g_checksum_get_string(sum));
}

/*
 * Writes the boot's initramfs to @out. One that packs nothing of this
 * machine's (not @local: no payload needs a program, library or module
 * of the host, and no selftests) is the same bytes for the same busybox
 * and payloads: built once, kept in @bootdir/initrd/ by initrd_key(), and
 * linked from there by every later boot (a bisection boots one seed a
 * call, each call an initramfs).
 */
static bool initrd_make(const char *out, const char *bootdir, const char *busybox,
			GArray *payloads, bool local, const struct initramfs_kernel *kernel,
			GError **error)
{
	g_autofree char *key = local ? NULL : initrd_key(busybox, payloads, kernel);
	g_autofree char *dir = key ? g_build_filename(bootdir, "initrd", NULL) : NULL;
	g_autofree char *kept = key ? g_strdup_printf("%s/%s.gz", dir, key) : NULL;

	if (kept && link(kept, out) == 0)
		return true;
	if (!initramfs_build(out, busybox, (const struct initramfs_payload *)payloads->data,
			     payloads->len, kernel, error))
		return false;
	/* Complete before it is linked: another boot never takes half of one. */
	if (kept && g_mkdir_with_parents(dir, 0755) == 0 && link(out, kept) < 0 &&
	    errno != EEXIST)
		g_message("%s: %s", kept, g_strerror(errno));
	return true;
}

/*
 * What a boot's result depends on besides the kernel: the initramfs
 * (busybox and every payload, by content), the command line, memory,
 * timeouts and the accelerator. Stored boots are reused only under the
 * same profile.
 */
static char *boot_profile(const struct config *config, const struct booter_request *req,
			  const struct boot_arch *arch, GArray *payloads, const char *busybox,
			  const char *initrd, bool needs, unsigned scratch_mb, bool kvm,
			  GError **error)
{
	g_autoptr(GChecksum) sum = g_checksum_new(G_CHECKSUM_SHA256);
	const char *files[] = { busybox };
	/* x86's machine and console as they always were: its stored boots stay good. */
	g_autofree char *machine = arch->early ? g_strdup_printf(" machine=%s/%s console=%s %s",
								 arch->guest, arch->machine,
								 arch->console, arch->early)
					       : g_strdup("");
	g_autofree char *head = g_strdup_printf("v1 cmdline=%s memory=%u timeout=%u/%u kvm=%d%s\n",
						req->cmdline ? req->cmdline : "", config->boot_memory,
						config->boot_timeout, config->boot_payload_timeout,
						kvm, machine);

	g_checksum_update(sum, (const guchar *)head, -1);
	/*
	 * Payloads that pack this machine's programs and modules: the whole
	 * initramfs, which has them (and is the same bytes for the same
	 * files). Others keep the profile they always had.
	 */
	if (needs) {
		g_autofree char *data = NULL;
		g_autofree char *more = g_strdup_printf("scratch=%u\n", scratch_mb);
		gsize len;

		if (!g_file_get_contents(initrd, &data, &len, error))
			return NULL;
		g_checksum_update(sum, (const guchar *)more, -1);
		g_checksum_update(sum, (const guchar *)data, (gssize)len);
	}
	for (guint i = 0; i <= payloads->len; i++) {
		const char *path = i < payloads->len
			? g_array_index(payloads, struct initramfs_payload, i).path : files[0];
		g_autofree char *data = NULL;
		gsize len;

		if (!g_file_get_contents(path, &data, &len, error))
			return NULL;
		g_checksum_update(sum, (const guchar *)path, -1);
		g_checksum_update(sum, (const guchar *)"\n", 1);
		g_checksum_update(sum, (const guchar *)data, (gssize)len);
	}
	return g_strdup(g_checksum_get_string(sum));
}

/* The stored boots of this build and profile, as runs. */
static bool reuse_stored(struct db *db, const struct booter_request *req, const char *profile,
			 GPtrArray *runs, GError **error)
{
	g_autoptr(GPtrArray) stored = db_boot_list(db, req->build_id, profile, error);

	if (!stored)
		return false;
	for (guint i = 0; i < stored->len && runs->len < req->repeat; i++) {
		const struct boot_record *b = stored->pdata[i];
		struct booter_run *run = g_new0(struct booter_run, 1);
		struct console_finding *f;

		run->seed = b->seed;
		run->host = g_strdup(b->host);
		run->console_path = g_strdup(b->console_path);
		run->attempts = b->attempts;
		run->seconds = b->seconds;
		run->stored = true;
		run->result.kind = b->kind;
		run->result.title = g_strdup(b->title);
		run->result.fingerprint = g_strdup(b->fingerprint);
		run->result.findings = g_ptr_array_new_with_free_func(
			(GDestroyNotify)console_finding_free);
		f = g_new0(struct console_finding, 1);
		f->kind = run->result.kind;
		f->title = g_strdup(b->title);
		f->fingerprint = g_strdup(b->fingerprint);
		f->excerpt = g_strdup(b->excerpt);
		g_ptr_array_add(run->result.findings, f);
		/* Its failed tests, besides (the verdict may be one of them, or a kernel report). */
		for (guint k = 0; k < b->failed_tests->len; k++) {
			const struct console_finding *t = b->failed_tests->pdata[k];
			struct console_finding *copy = g_new0(struct console_finding, 1);

			*copy = (struct console_finding){ .kind = t->kind, .title = g_strdup(t->title),
							  .fingerprint = g_strdup(t->fingerprint),
							  .excerpt = g_strdup(t->excerpt) };
			g_ptr_array_add(run->result.findings, copy);
		}
		run->result.ended = run->result.kind != CONSOLE_TIMEOUT &&
				    run->result.kind != CONSOLE_NO_OUTPUT;
		g_ptr_array_add(runs, run);
	}
	return true;
}

/*
 * What each host's libvirt says of the arch's guests, asked once every
 * SUPPORT_TTL_S per host and process. A host that cannot be asked is
 * kept (as TCG): its boots fail as infra-errors and it is backed off.
 */
#define SUPPORT_TTL_S 600

static enum boot_support host_support(const char *uri, const struct boot_arch *a)
{
	static GMutex lock;
	static GHashTable *known; /* "URI\nGUEST" -> struct known_support */
	struct known_support {
		enum boot_support support;
		gint64 at;
	} *k;
	g_autofree char *key = g_strdup_printf("%s\n%s", uri, a->guest);
	g_autoptr(GError) error = NULL;
	enum boot_support support;
	gint64 now = g_get_monotonic_time();

	g_mutex_lock(&lock);
	if (!known)
		known = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	k = g_hash_table_lookup(known, key);
	if (k && now - k->at < SUPPORT_TTL_S * G_USEC_PER_SEC) {
		support = k->support;
		g_mutex_unlock(&lock);
		return support;
	}
	g_mutex_unlock(&lock);
	if (!boot_host_support(uri, a, &support, &error)) {
		g_message("cannot ask %s which guests it boots: %s", uri, error->message);
		return BOOT_SUPPORT_TCG;
	}
	g_mutex_lock(&lock);
	k = g_new(struct known_support, 1);
	k->support = support;
	k->at = now;
	g_hash_table_replace(known, g_steal_pointer(&key), k);
	g_mutex_unlock(&lock);
	return support;
}

/*
 * Keeps the hosts that boot @a's guests, first to last. Fails when none
 * does: a setting to mend (a QEMU to install), not a kernel's fault.
 */
static bool hosts_for_arch(struct pool *p, GError **error)
{
	guint kept = 0;

	for (guint i = 0; i < p->n_hosts; i++) {
		struct host *h = &p->hosts[i];

		h->support = host_support(h->uri, p->arch);
		if (h->support == BOOT_SUPPORT_NONE) {
			g_free(h->uri);
			g_free(h->lock_prefix);
			g_free(h->held);
			continue;
		}
		p->hosts[kept++] = *h;
	}
	p->n_hosts = kept;
	if (kept == 0) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_CONFIG,
			    "no boot host runs %s guests ([boot] hosts; install %s there)",
			    p->arch->guest, p->arch->qemu_package);
		return false;
	}
	return true;
}

GPtrArray *booter_boot(struct db *db, const struct config *config,
		       const struct booter_request *req, GPtrArray **tally, GError **error)
{
	g_autoptr(GPtrArray) runs = g_ptr_array_new_with_free_func((GDestroyNotify)booter_run_free);
	g_autoptr(GDateTime) now = g_date_time_new_now_utc();
	g_autofree char *stamp = g_date_time_format(now, "%Y%m%d-%H%M%S-XXXXXX");
	/*
	 * Nothing here is opened by QEMU: engine/boot.c uploads the kernel and
	 * initrd to the host and reads the console back through libvirt.
	 */
	g_autofree char *bootdir = g_build_filename(config->state_dir, "boot", NULL);
	g_autofree char *lockdir = g_build_filename(bootdir, "slots", NULL);
	g_autofree char *logdir = g_build_filename(bootdir, stamp, NULL);
	g_autofree char *initrd = NULL;
	g_autofree char *profile = NULL;
	g_autofree char *host_id = boot_host_id(config->state_dir);
	g_autofree char *busybox = NULL;
	g_autofree char *modules_dir = NULL;
	g_autofree char *kselftest_dir = NULL;
	bool needs = false;
	const char *arch = req->arch ? req->arch : boot_arch_of_image(req->image);
	GArray *payloads = NULL;
	struct pool p = { .config = config, .req = req };
	unsigned slots = 0, stored = 0, seed = 0;
	GThreadPool *workers;
	GPtrArray *out = NULL;
	/* The request with [boot] cmdline's words before its own. */
	struct booter_request own = *req;
	g_autofree char *cmdline = NULL;

	if (config->boot_cmdline && config->boot_cmdline[0]) {
		g_autofree char *words = g_strjoinv(" ", config->boot_cmdline);

		cmdline = req->cmdline ? g_strconcat(words, " ", req->cmdline, NULL)
				       : g_steal_pointer(&words);
		own.cmdline = cmdline;
	}
	req = &own;
	p.req = req;
	*tally = NULL;
	g_mutex_init(&p.lock);
	g_cond_init(&p.freed);
	if (!g_file_test(req->image, G_FILE_TEST_IS_REGULAR)) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_NOT_FOUND, "no kernel image at %s", req->image);
		goto done;
	}
	if (g_mkdir_with_parents(lockdir, 0755) < 0 || g_chmod(bootdir, 0755) < 0 ||
	    !g_mkdtemp_full(logdir, 0755) || g_chmod(logdir, 0755) < 0) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_FAILED, "cannot create %s: %s", logdir,
			    g_strerror(errno));
		goto done;
	}
	initrd = g_build_filename(logdir, "initrd.gz", NULL);
	p.initrd = initrd;
	p.logdir = logdir;
	p.host_id = host_id;
	p.arch = boot_arch_find(arch);
	if (!p.arch) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_NOT_FOUND,
			    arch ? "zeroday does not boot %s kernels" : "%s: not a kernel image "
			    "zeroday boots (x86 bzImage, arm64 or riscv Image); --arch names it",
			    arch ? arch : req->image);
		goto done;
	}
	busybox = config_boot_busybox(config, p.arch, error);
	if (!busybox)
		goto done;
	if (!parse_hosts(&p, config->boot_hosts, lockdir, error) || !hosts_for_arch(&p, error))
		goto done;
	payloads = config_boot_payloads(config, req->payloads, error);
	if (!payloads)
		goto done;
	for (guint i = 0; i < payloads->len; i++) {
		struct initramfs_needs n;

		if (!initramfs_needs_read(&n, g_array_index(payloads, struct initramfs_payload,
							    i).path, error))
			goto done;
		p.scratch_mb = MAX(p.scratch_mb, n.scratch_mb);
		needs |= n.programs[0] || n.modules[0] || n.libraries[0] || n.scratch_mb;
		initramfs_needs_release(&n);
	}
	/* A kernel whose modules are on this machine (a distribution's) gets them packed. */
	if (boot_arch_native(p.arch))
		modules_dir = initramfs_modules_dir(req->image);
	/* A build with kselftest= words kept its selftests beside its image. */
	kselftest_dir = builder_kselftest_path(req->image);
	if (kselftest_dir && !g_file_test(kselftest_dir, G_FILE_TEST_IS_DIR))
		g_clear_pointer(&kselftest_dir, g_free);
	if (!initrd_make(initrd, bootdir, busybox, payloads, needs || kselftest_dir,
			 &(struct initramfs_kernel){ .arch = p.arch->arch,
						     .modules_dir = modules_dir,
						     .kselftest_dir = kselftest_dir },
			 error))
		goto done;
	/*
	 * Domains a crashed zeroday left behind go first (once a minute in
	 * one process); unused volumes, hourly.
	 */
	for (guint i = 0; i < p.n_hosts; i++) {
		g_autoptr(GError) local = NULL;
		const char *uri = p.hosts[i].uri;
		int reaped = 0;

		slots += p.hosts[i].slots;
		if (!reap_due(&p.hosts[i]))
			continue;
		reaped = prune_due(&p.hosts[i]) ? boot_reap(uri, host_id, false, &local)
						: boot_reap_domains(uri, host_id, false, &local);
		if (reaped < 0)
			g_message("cannot reap on %s: %s", p.hosts[i].uri, local->message);
	}
	/* The KVM probe boots this machine's own arch only. */
	p.kvm = strcmp(config->boot_kvm, "true") == 0 ||
		(strcmp(config->boot_kvm, "auto") == 0 && boot_arch_native(p.arch) && probe_kvm(&p));
	profile = boot_profile(config, req, p.arch, payloads, busybox, initrd, needs, p.scratch_mb,
			       p.kvm, error);
	if (!profile)
		goto done;
	if (req->reuse && req->build_id > 0 && !reuse_stored(db, req, profile, runs, error))
		goto done;
	stored = runs->len;
	for (guint i = 0; i < runs->len; i++)
		seed = MAX(seed, ((struct booter_run *)runs->pdata[i])->seed);

	workers = g_thread_pool_new(boot_worker, &p, (int)slots, FALSE, NULL);
	for (unsigned i = stored; i < req->repeat; i++) {
		struct booter_run *run = g_new0(struct booter_run, 1);

		run->seed = ++seed;
		g_ptr_array_add(runs, run);
		g_thread_pool_push(workers, run, NULL);
	}
	g_thread_pool_free(workers, FALSE, TRUE);
	if (stored)
		g_message("boot of %s: %u stored result%s reused, %u booted", req->image, stored,
			  stored == 1 ? "" : "s", req->repeat > stored ? req->repeat - stored : 0);

	if (!db_tx_begin(db, error))
		goto done;
	for (guint i = stored; i < runs->len; i++) {
		const struct booter_run *r = runs->pdata[i];
		g_autoptr(GPtrArray) failed = g_ptr_array_new();
		g_autofree char *tests = r->result.tests && r->result.tests->len
			? g_strdup_printf("%u passed, %u failed, %u skipped", r->result.passed,
					  r->result.failed, r->result.skipped) : NULL;
		struct boot_row row = {
			.build_id = req->build_id, .image = req->image, .host = r->host,
			.seed = r->seed, .kind = r->result.kind,
			.title = r->result.title, .fingerprint = r->result.fingerprint,
			.console_path = r->console_path, .seconds = r->seconds,
			.attempts = r->attempts, .profile = profile,
			.excerpt = r->result.kind == CONSOLE_BOOT_OK ? NULL
								     : diag_console_excerpt(&r->result),
			.tests = tests, .failed_tests = failed,
		};

		for (guint k = 0; r->result.findings && k < r->result.findings->len; k++) {
			struct console_finding *f = r->result.findings->pdata[k];

			if (f->kind == CONSOLE_TEST_FAIL)
				g_ptr_array_add(failed, f);
		}

		if (!db_boot_add(db, &row, error)) {
			db_tx_rollback(db);
			goto done;
		}
	}
	if (!db_tx_commit(db, error)) {
		db_tx_rollback(db);
		goto done;
	}
	{
		g_autofree struct console_result **results = g_new0(struct console_result *, runs->len);

		for (guint i = 0; i < runs->len; i++)
			results[i] = &((struct booter_run *)runs->pdata[i])->result;
		*tally = diag_console_tally(results, runs->len);
	}
	out = g_steal_pointer(&runs);
done:
	config_boot_payloads_free(payloads);
	for (guint i = 0; i < p.n_hosts; i++) {
		g_free(p.hosts[i].uri);
		g_free(p.hosts[i].lock_prefix);
		g_free(p.hosts[i].held);
	}
	g_free(p.hosts);
	g_mutex_clear(&p.lock);
	g_cond_clear(&p.freed);
	return out;
}

unsigned booter_slots(const struct config *config)
{
	unsigned slots = 0;

	for (char **spec = config->boot_hosts; spec && *spec; spec++) {
		const char *star = strrchr(*spec, '*');
		guint64 n = star ? g_ascii_strtoull(star + 1, NULL, 10) : 1;

		/* The list was validated at load ([boot] hosts). */
		slots += (unsigned)CLAMP(n, 1, 1024);
	}
	return MAX(slots, 1);
}
