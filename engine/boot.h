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

/*
 * How zeroday boots the kernels of one architecture: a QEMU machine that
 * boots a kernel image directly (no firmware of ours), its CPU under TCG,
 * and the serial console the kernel writes to.
 */
struct boot_arch {
	const char *arch;    /* the kernel's ARCH= ("x86_64", "arm64", "riscv") */
	const char *guest;   /* libvirt's and QEMU's name ("x86_64", "aarch64", "riscv64") */
	const char *machine; /* QEMU's -machine */
	const char *tcg_cpu; /* QEMU's -cpu without KVM; NULL: the machine's default */
	const char *console; /* the console= device */
	/*
	 * Words for an early console, or NULL: arm64's and riscv's console
	 * drivers register in the initcalls, and a failure before them (in
	 * kernel_init, say) would print nothing without "earlycon", which
	 * finds the UART through the device tree's stdout-path.
	 */
	const char *early;
	bool acpi;           /* the machine describes itself by ACPI (else a device tree) */
	const char *userland; /* Debian's name of the arch its initramfs's binaries are for */
	const char *qemu_package; /* Debian's package of its QEMU */
};

/* The architecture of kernel ARCH @arch, or NULL for one zeroday does not boot. */
const struct boot_arch *boot_arch_find(const char *arch);

/*
 * Whether @a's initramfs runs this machine's own binaries (its busybox is
 * the machine's): x86_64 on an x86_64 machine, not i386 or arm64.
 */
bool boot_arch_native(const struct boot_arch *a);

/*
 * The kernel ARCH of a kernel image, read from its boot header: x86's
 * bzImage ("HdrS"), arm64's and riscv's Image ("ARM\x64", "RSC\x05").
 * NULL when the file is none of those.
 */
const char *boot_arch_of_image(const char *path);

enum boot_support {
	BOOT_SUPPORT_NONE, /* the host has no QEMU for the arch */
	BOOT_SUPPORT_TCG,  /* it emulates it */
	BOOT_SUPPORT_KVM,  /* and can also run it under KVM */
};

/*
 * What the libvirt host at @uri says, in its capabilities, of guests of
 * @a's arch. Returns false with @error set when the host cannot be asked.
 */
bool boot_host_support(const char *uri, const struct boot_arch *a, enum boot_support *out,
		       GError **error);

struct boot_request {
	const char *arch;        /* kernel ARCH (boot_arch_find()); NULL: x86_64 */
	const char *kernel;      /* bzImage (or the arch's image), a local file */
	const char *initrd;      /* from initramfs_build(), a local file, or NULL */
	const char *cmdline;     /* appended to "console=ttyS0 panic=1 ..." */
	const char *console_log; /* local file the serial console is written to (created) */
	const char *host_id;     /* boot_host_id() of this installation; NULL: boot_host_id(NULL) */
	unsigned timeout_s;      /* watchdog: then the domain is destroyed */
	unsigned memory_mb;
	unsigned vcpus;
	/*
	 * MiB of an empty scratch disk, the guest's virtio disk vda: a sparse
	 * volume of the host's pool created for this boot and deleted after
	 * it, whatever happens (boot_reap() removes a crashed run's). 0: none.
	 */
	unsigned scratch_mb;
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
 * read, are never touched. Then removes the scratch volumes of the
 * domains it would reap (their boot is over) and the pool's volumes that
 * went unused (see boot.c). Returns how many domains it destroyed, or -1 with
 * @error set.
 */
int boot_reap(const char *uri, const char *host_id, bool all, GError **error);

/*
 * boot_reap() without the volumes: the domains only, one call to the
 * host, where the volumes' clean-up asks after each volume (hundreds of
 * calls, which a boot need not wait for every time).
 */
int boot_reap_domains(const char *uri, const char *host_id, bool all, GError **error);

/*
 * The kernel command line of every boot, after "console=DEVICE " (the
 * arch's) and the arch's early console words; a request's own words
 * follow it.
 */
#define BOOT_CMDLINE_ARGS "panic=1 oops=panic softlockup_panic=1 hung_task_panic=0 printk.time=1"
/* The whole of it on x86. */
#define BOOT_CMDLINE "console=ttyS0 " BOOT_CMDLINE_ARGS

/* What a boot had besides its kernel and initramfs, for boot_reproduce_command(). */
struct boot_reproduce_extra {
	unsigned memory_mb;  /* 0: 256 MiB */
	unsigned seed;       /* zeroday.seed=; 0: 1 */
	const char *cmdline; /* words after the arch's and zeroday's own ([boot] cmdline), or NULL */
	unsigned scratch_mb; /* a scratch disk of that size (virtio, /dev/vda); 0: none */
};

/*
 * The one-line command that boots, as zeroday does (the arch's QEMU,
 * machine and CPU without KVM, the memory, command line and seed of
 * @extra (NULL: the defaults), and with a scratch disk a sparse
 * scratch.img made first), the kernel image @image of build directory
 * @builddir with initramfs @initrd (NULL: none), its console on the
 * terminal; QEMU ends when the kernel halts, panics or, at the end of
 * the initramfs, reboots (caller frees). @arch is the kernel ARCH (NULL:
 * x86_64); one zeroday does not boot gets x86_64's.
 */
char *boot_reproduce_command(const char *arch, const char *builddir, const char *image,
			     const char *initrd, const struct boot_reproduce_extra *extra);

/*
 * The domain XML for @req with the kernel and initrd at @kernel_path and
 * @initrd_path (or NULL) on the host, and with req->scratch_mb, the
 * pool's volume boot_scratch_volume(@name) as its disk vda (caller
 * frees); exposed for tests.
 */
/* The name of domain @name's scratch volume in the pool (caller frees). */
char *boot_scratch_volume(const char *name);

char *boot_domain_xml(const char *name, const struct boot_request *req, const char *kernel_path,
		      const char *initrd_path);

#endif
