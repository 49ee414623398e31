/*
 * Boots through libvirt: a transient domain that boots a kernel image
 * directly, its serial console logged to a file, destroyed on timeout.
 * The only file that includes libvirt.
 */
#ifndef ZERODAY_BOOT_H
#define ZERODAY_BOOT_H

#include <stdbool.h>
#include <glib.h>

#include "engine/engine.h"

/* Every domain zeroday creates is named with this prefix. */
#define BOOT_DOMAIN_PREFIX "zeroday-"

struct boot_request {
	const char *kernel;      /* bzImage (or the arch's image) */
	const char *initrd;      /* from initramfs_build(), or NULL */
	const char *cmdline;     /* appended to "console=ttyS0 panic=-1 ..." */
	const char *console_log; /* where the serial console goes (created) */
	unsigned timeout_s;      /* watchdog: then the domain is destroyed */
	unsigned memory_mb;
	unsigned vcpus;
	bool kvm;                /* type='kvm'; else TCG */
};

struct boot_outcome {
	bool timed_out;  /* the watchdog destroyed the domain */
	bool infra;      /* libvirt or QEMU failed: not the kernel's fault */
	char *infra_reason;
	double seconds;
};

void boot_outcome_clear(struct boot_outcome *out);

/*
 * Boots @req on the libvirt host at @uri and waits until the guest ends
 * (it reboots, powers off or crashes: each destroys the transient domain)
 * or the watchdog fires. Returns false only for bad input; QEMU or libvirt
 * failures are out->infra.
 */
bool boot_run(struct boot_outcome *out, const char *uri, const struct boot_request *req,
	      GError **error);

/*
 * Destroys the running domains named BOOT_DOMAIN_PREFIX* at @uri that a
 * crashed zeroday left behind: those whose creating process (named in the
 * domain name) is no longer alive here, or, with @all, every one. Returns
 * how many, or -1 with @error set.
 */
int boot_reap(const char *uri, bool all, GError **error);

/* The domain XML for @req (caller frees); exposed for tests. */
char *boot_domain_xml(const char *name, const struct boot_request *req);

#endif
