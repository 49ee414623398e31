/*
 * Boots through libvirt: a transient domain that boots a kernel image
 * directly, destroyed on timeout. Works on any libvirt host, local or
 * not: the kernel and initramfs reach the host through libvirt itself
 * (uploaded into a storage pool zeroday owns there, reused by content
 * hash), and the serial console comes back through a libvirt console
 * stream into a local file. Nothing on the host reads zeroday's files.
 * The only file that includes libvirt.
 */
#ifndef ZERODAY_BOOT_H
#define ZERODAY_BOOT_H

#include <stdbool.h>
#include <glib.h>

#include "engine/engine.h"

/*
 * Every domain zeroday creates is named
 * BOOT_DOMAIN_PREFIX PID "-" HOSTID "-" COUNTER "-" MILLISECONDS, where
 * HOSTID is boot_host_id() of the installation that created it and PID
 * its process there. (The PID first: an older zeroday on the same
 * machine, which judged a domain by that number alone, leaves a live
 * boot alone.)
 */
#define BOOT_DOMAIN_PREFIX "zeroday-"

/*
 * The storage pool zeroday owns on every host (type dir, created and
 * started when missing, autostarted), at this path on the host itself.
 */
#define BOOT_POOL_NAME "zeroday"
#define BOOT_POOL_PATH "/var/lib/libvirt/zeroday"

/* The console log is kept up to this many bytes; the rest is counted, not kept. */
#define BOOT_CONSOLE_MAX (32u << 20)

struct boot_request {
	const char *kernel;      /* bzImage (or the arch's image), a local file */
	const char *initrd;      /* from initramfs_build(), a local file, or NULL */
	const char *cmdline;     /* appended to "console=ttyS0 panic=1 ..." */
	const char *console_log; /* local file the serial console is written to (created) */
	const char *host_id;     /* boot_host_id() of this installation; NULL: boot_host_id(NULL) */
	unsigned timeout_s;      /* watchdog: then the domain is destroyed */
	unsigned memory_mb;
	unsigned vcpus;
	bool kvm;                /* type='kvm'; else TCG */
};

struct boot_outcome {
	bool timed_out;  /* the watchdog destroyed the domain */
	bool infra;      /* libvirt or QEMU failed: not the kernel's fault */
	char *infra_reason;
	double seconds;  /* from the guest's first instruction to its end */
};

void boot_outcome_clear(struct boot_outcome *out);

/*
 * Returns a stable id of the zeroday installation whose state directory
 * is @state_dir on this machine (NULL: this machine alone): 12 lowercase
 * hex digits derived from /etc/machine-id and the directory's canonical
 * path. Another machine, or another state directory, has another id.
 * The caller frees it.
 */
char *boot_host_id(const char *state_dir);

/*
 * Boots @req on the libvirt host at @uri and waits until the guest ends
 * (it reboots, powers off or crashes: each destroys the transient domain)
 * or the watchdog fires. The kernel and initrd are uploaded into the
 * host's BOOT_POOL_NAME pool unless a volume of the same content is
 * there already; the domain starts paused, its console stream is
 * attached, and only then does it run, so the log has every byte.
 * Returns false only for bad input; QEMU or libvirt failures are
 * out->infra.
 */
bool boot_run(struct boot_outcome *out, const char *uri, const struct boot_request *req,
	      GError **error);

/*
 * Destroys the running domains at @uri that a crashed zeroday of this
 * installation (@host_id, from boot_host_id(); NULL: boot_host_id(NULL))
 * left behind: those whose creating process (named in the domain name)
 * is no longer alive here, or, with @all, every one of this installation.
 * Domains of other installations and machines, and names it cannot
 * read, are never touched. Then removes the pool's volumes that went
 * unused (see boot.c). Returns how many domains it destroyed, or -1 with
 * @error set.
 */
int boot_reap(const char *uri, const char *host_id, bool all, GError **error);

/* The kernel command line of every boot (a request's own words follow it). */
#define BOOT_CMDLINE "console=ttyS0 panic=1 oops=panic softlockup_panic=1 hung_task_panic=0 " \
		     "printk.time=1"

/*
 * The one-line QEMU command that boots, as zeroday does (the machine, the
 * CPU without KVM, @memory_mb or 256 MiB, the command line with
 * zeroday.seed=@seed), the kernel image @image of build directory
 * @builddir with initramfs @initrd (NULL: none), its console on the
 * terminal; QEMU ends when the kernel halts, panics or, at the end of
 * the initramfs, reboots (caller frees).
 */
char *boot_reproduce_command(const char *builddir, const char *image, const char *initrd,
			     unsigned memory_mb, unsigned seed);

/*
 * The domain XML for @req with the kernel and initrd at @kernel_path and
 * @initrd_path (or NULL) on the host (caller frees); exposed for tests.
 */
char *boot_domain_xml(const char *name, const struct boot_request *req, const char *kernel_path,
		      const char *initrd_path);

#endif
