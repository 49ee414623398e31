/*
 * Booting a kernel image N times: see booter.h.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <stdio.h>
#include <string.h>

#include <glib/gstdio.h>

#include "bot/bot.h"
#include "bot/booter.h"
#include "engine/boot.h"
#include "engine/initramfs.h"

#define RETRIES 2

void booter_run_free(struct booter_run *run)
{
	if (!run)
		return;
	g_free(run->host);
	g_free(run->console_path);
	console_result_clear(&run->result);
	g_free(run);
}

struct host {
	char *uri;
	unsigned slots;
	unsigned busy;
	unsigned failures; /* infrastructure failures seen */
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
	bool kvm;
};

static bool parse_hosts(struct pool *p, char **specs, GError **error)
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
	}
	return true;
}

/* Free slots, ranked so that a host that just failed this run comes last. */
static int host_score(const struct host *h, const struct host *avoid)
{
	if (h->busy >= h->slots)
		return -1;
	return (h == avoid ? 0 : 1 << 20) + (int)(h->slots - h->busy);
}

/* Takes a slot on the best host, waiting for one to free up. */
static struct host *take_host(struct pool *p, const struct host *avoid)
{
	struct host *best = NULL;

	g_mutex_lock(&p->lock);
	while (!best) {
		for (guint i = 0; i < p->n_hosts; i++) {
			struct host *h = &p->hosts[i];

			if (host_score(h, avoid) >= 0 &&
			    (!best || host_score(h, avoid) > host_score(best, avoid)))
				best = h;
		}
		if (!best)
			g_cond_wait(&p->freed, &p->lock);
	}
	best->busy++;
	g_mutex_unlock(&p->lock);
	return best;
}

static void give_host(struct pool *p, struct host *h, bool failed)
{
	g_mutex_lock(&p->lock);
	h->busy--;
	h->failures += failed;
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
		struct host *h = take_host(p, last);
		struct boot_request br = {
			.kernel = p->req->image, .initrd = p->initrd, .cmdline = cmdline,
			.timeout_s = p->config->boot_timeout, .memory_mb = p->config->boot_memory,
			.kvm = p->kvm,
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
		give_host(p, h, out.infra);
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

/* Resolves payload names: shipped ones from the data dir, or absolute paths. */
static GArray *payload_list(const struct config *config, const char *const *names,
			    GError **error)
{
	g_autofree char *dir = config_payload_dir();
	GArray *out = g_array_new(FALSE, TRUE, sizeof(struct initramfs_payload));

	for (const char *const *n = names; n && *n; n++) {
		struct initramfs_payload pl = { .timeout_s = config->boot_payload_timeout };
		char *path = g_path_is_absolute(*n) ? g_strdup(*n) : g_build_filename(dir, *n, NULL);

		if (!g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
			if (g_path_is_absolute(*n)) {
				/* External suites run only where they are installed. */
				g_message("payload %s is not installed; skipped", *n);
				g_free(path);
				continue;
			}
			g_set_error(error, BOT_ERROR, BOT_ERROR_NOT_FOUND, "no payload named '%s'", *n);
			g_free(path);
			g_array_unref(out);
			return NULL;
		}
		pl.path = path;
		pl.name = g_path_get_basename(path);
		g_array_append_val(out, pl);
	}
	return out;
}

static void payloads_free(GArray *a)
{
	for (guint i = 0; a && i < a->len; i++) {
		g_free((char *)g_array_index(a, struct initramfs_payload, i).name);
		g_free((char *)g_array_index(a, struct initramfs_payload, i).path);
	}
	if (a)
		g_array_unref(a);
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
			.kernel = p->req->image, .initrd = p->initrd, .console_log = log,
			.timeout_s = 60, .memory_mb = p->config->boot_memory, .kvm = true,
		};
		struct boot_outcome out = { 0 };
		struct console_result r = { 0 };

		if (g_file_test("/dev/kvm", G_FILE_TEST_EXISTS) &&
		    boot_run(&out, p->hosts[0].uri, &br, NULL)) {
			g_file_get_contents(log, &text, NULL, NULL);
			diag_console_classify(&r, text ? text : "", out.timed_out, out.infra);
			works = r.kind == CONSOLE_BOOT_OK;
		}
		g_message("KVM probe: %s", works ? "KVM boots guests; using it"
						 : "KVM did not boot the probe; using TCG");
		console_result_clear(&r);
		boot_outcome_clear(&out);
		g_once_init_leave(&once, 1);
	}
	return works;
}

GPtrArray *booter_boot(struct db *db, const struct config *config,
		       const struct booter_request *req, GPtrArray **tally, GError **error)
{
	g_autoptr(GPtrArray) runs = g_ptr_array_new_with_free_func((GDestroyNotify)booter_run_free);
	g_autofree char *stamp = g_strdup_printf("%" G_GINT64_FORMAT, g_get_real_time() / 1000);
	/* QEMU runs as libvirt's own user: what it opens must be reachable. */
	g_autofree char *logdir = g_build_filename(config->state_dir, "boot", stamp, NULL);
	g_autofree char *initrd = g_build_filename(logdir, "initrd.gz", NULL);
	GArray *payloads = NULL;
	struct pool p = { .config = config, .req = req, .initrd = initrd, .logdir = logdir };
	unsigned slots = 0;
	GThreadPool *workers;
	GPtrArray *out = NULL;

	*tally = NULL;
	g_mutex_init(&p.lock);
	g_cond_init(&p.freed);
	if (!g_file_test(req->image, G_FILE_TEST_IS_REGULAR)) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_NOT_FOUND, "no kernel image at %s", req->image);
		goto done;
	}
	if (!parse_hosts(&p, config->boot_hosts, error))
		goto done;
	payloads = payload_list(config, req->payloads ? req->payloads
						       : (const char *const *)config->boot_payloads,
				error);
	if (!payloads)
		goto done;
	if (g_mkdir_with_parents(logdir, 0755) < 0 || g_chmod(logdir, 0755) < 0) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_FAILED, "cannot create %s", logdir);
		goto done;
	}
	if (!initramfs_build(initrd, config->boot_busybox,
			     (const struct initramfs_payload *)payloads->data, payloads->len, error))
		goto done;
	/* Domains a crashed zeroday left behind go first. */
	for (guint i = 0; i < p.n_hosts; i++) {
		g_autoptr(GError) local = NULL;

		if (boot_reap(p.hosts[i].uri, false, &local) < 0)
			g_message("cannot reap on %s: %s", p.hosts[i].uri, local->message);
		slots += p.hosts[i].slots;
	}
	p.kvm = strcmp(config->boot_kvm, "true") == 0 ||
		(strcmp(config->boot_kvm, "auto") == 0 && probe_kvm(&p));

	workers = g_thread_pool_new(boot_worker, &p, (int)slots, FALSE, NULL);
	for (unsigned i = 0; i < req->repeat; i++) {
		struct booter_run *run = g_new0(struct booter_run, 1);

		run->seed = i + 1;
		g_ptr_array_add(runs, run);
		g_thread_pool_push(workers, run, NULL);
	}
	g_thread_pool_free(workers, FALSE, TRUE);

	if (!db_tx_begin(db, error))
		goto done;
	for (guint i = 0; i < runs->len; i++) {
		const struct booter_run *r = runs->pdata[i];
		struct boot_row row = {
			.build_id = req->build_id, .image = req->image, .host = r->host,
			.seed = r->seed, .kind = diag_console_kind_name(r->result.kind),
			.title = r->result.title, .fingerprint = r->result.fingerprint,
			.console_path = r->console_path, .seconds = r->seconds,
			.attempts = r->attempts,
		};

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
	payloads_free(payloads);
	for (guint i = 0; i < p.n_hosts; i++)
		g_free(p.hosts[i].uri);
	g_free(p.hosts);
	g_mutex_clear(&p.lock);
	g_cond_clear(&p.freed);
	return out;
}
