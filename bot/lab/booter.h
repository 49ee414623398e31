/*
 * Booting a kernel image N times over the configured libvirt hosts, with
 * infrastructure retries, KVM where a probe shows it works, and a tally of
 * what failed how often. `zeroday boot`.
 */
#ifndef ZERODAY_BOOTER_H
#define ZERODAY_BOOTER_H

#include <stdbool.h>
#include <glib.h>

#include "bot/config.h"
#include "bot/store/db.h"
#include "engine/diag.h"

struct booter_request {
	const char *image;
	/*
	 * The kernel's ARCH (a build target's); NULL: read from the image's
	 * boot header (boot_arch_of_image()).
	 */
	const char *arch;
	gint64 build_id;            /* 0 when booting a path */
	unsigned repeat;
	const char *const *payloads; /* NULL: [boot] payloads */
	const char *cmdline;        /* extra kernel command line, or NULL */
	bool reuse;                 /* count the build's stored boots of the same profile */
	bool progress;
};

struct booter_run {
	unsigned seed;
	char *host;
	char *console_path;
	unsigned attempts;
	double seconds;
	bool stored;                /* reused from the store, not booted now */
	struct console_result result;
};

void booter_run_free(struct booter_run *run);

/*
 * Boots @req->image @req->repeat times with seeds 1..N, spread over the
 * hosts within their slot limits, which every caller in every process
 * shares; a run that fails for infrastructure reasons is retried (on
 * another host when there is one) up to twice. With @req->reuse, the
 * conclusive boots already stored for the build under the same profile
 * (initramfs, command line, memory, timeouts) count, and only the rest
 * are booted, with the next seeds. Records every new run. *@tally
 * receives the per-fingerprint tally of all of them.
 *
 * Boots go only to hosts whose libvirt says it runs guests of the
 * image's arch (its capabilities); KVM ([boot] kvm) only for the
 * machine's own arch.
 *
 * Returns an array of struct booter_run in seed order, or NULL with
 * @error set (no payload, no busybox, bad host list, an arch zeroday
 * does not boot or no host boots).
 */
GPtrArray *booter_boot(struct db *db, const struct config *config,
		       const struct booter_request *req, GPtrArray **tally, GError **error);

/* The boot slots of all the configured hosts: how many boots can run at once. */
unsigned booter_slots(const struct config *config);

#endif
