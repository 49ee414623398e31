/*
 * The boot initramfs: busybox, an init that mounts proc, sys and devtmpfs,
 * prints the markers diag_console_classify() reads, runs each payload with
 * its own timeout, and reboots (which ends the guest).
 */
#ifndef ZERODAY_INITRAMFS_H
#define ZERODAY_INITRAMFS_H

#include <stdbool.h>
#include <glib.h>

#include "engine/engine.h"

struct initramfs_payload {
	const char *name;  /* [A-Za-z0-9._-]+ */
	const char *path;  /* a script (#!/bin/sh) or a static binary */
	unsigned timeout_s;
};

/*
 * What a payload declares in the comment lines at its top (a script's
 * header; a binary declares nothing):
 *
 *   # zeroday-needs: trinity mkfs.ext4      host programs, found in PATH,
 *                                            /usr/sbin and /sbin
 *   # zeroday-modules: virtio_blk ext4      kernel modules to load first
 *   # zeroday-scratch-mb: 512               a scratch disk, /dev/vda
 *   # zeroday-libraries: libm.so.6 libnuma.so.1
 *                                            host shared libraries, found in
 *                                            the host's library directories,
 *                                            packed with their own closure:
 *                                            for programs of the kernel's tree
 *                                            (the selftests), on which ldd is
 *                                            never run
 *
 * A key may repeat (its words add up); any other "zeroday-" key is an
 * error, so a typo does not silently drop a need.
 */
struct initramfs_needs {
	char **programs;     /* NULL-terminated, never NULL */
	char **modules;      /* likewise, module names as modules.dep spells them */
	char **libraries;    /* likewise, library file names ("libm.so.6") */
	unsigned scratch_mb; /* 0: none */
};

/* Reads @path's declarations into @out (released with initramfs_needs_release()). */
bool initramfs_needs_read(struct initramfs_needs *out, const char *path, GError **error);
void initramfs_needs_release(struct initramfs_needs *needs);

/*
 * The kernel an initramfs is for: its arch decides whether host programs
 * may be packed (only for boot_arch_native() arches: they are this
 * machine's binaries), and its modules directory on this machine, when
 * it has one, where the payloads' modules come from.
 */
struct initramfs_kernel {
	const char *arch;        /* kernel ARCH (boot_arch_find()); NULL: x86_64 */
	const char *modules_dir; /* /lib/modules/VERSION of the booted kernel, or NULL */
	/*
	 * NULL, or the selftest tree the kernel's build installed, as zeroday
	 * kept it (directories and plain files only): packed under
	 * /kselftest as it is, files 0755 or 0644 as they are there. Its
	 * programs are never run here (no ldd): the payload that runs them
	 * declares their libraries (zeroday-libraries).
	 */
	const char *kselftest_dir;
};

/*
 * The modules directory on this machine of the kernel image at @image
 * (x86's bzImage names its version in its setup header), or NULL when
 * it has none there, or its version cannot be read (caller frees).
 */
char *initramfs_modules_dir(const char *image);

/*
 * Writes a gzip-compressed newc cpio archive to @out_path with @busybox (a
 * static busybox) and the payloads, run in order. Payloads receive the
 * kernel command line's zeroday.seed=N in $ZERODAY_SEED. Each payload's
 * zeroday-needs are packed at their paths with the closure of their
 * shared libraries and their ELF interpreter, each file once; its
 * zeroday-modules, when @kernel (NULL: x86_64, no modules) has a modules
 * directory, with their dependencies (modules.dep), uncompressed, and
 * the init loads them before the first payload; @kernel's kselftest_dir
 * under /kselftest. The init links /dev/fd and /dev/std{in,out,err}
 * (scripts write to /dev/stdout). Refuses (INVALID) host
 * programs for a kernel whose arch is not this machine's, and fails
 * (NOT_FOUND) when a program is not installed.
 */
bool initramfs_build(const char *out_path, const char *busybox,
		     const struct initramfs_payload *payloads, size_t n_payloads,
		     const struct initramfs_kernel *kernel, GError **error);

/*
 * The same initramfs as a shell script a developer runs with nothing of
 * zeroday's (caller frees): it writes the init and the payloads, then
 * packs them with a static busybox ($BUSYBOX, else /bin/busybox) by the
 * kernel's own usr/gen_init_cpio of the build directory it is given, as
 * a user, to standard output:
 *
 *   sh initramfs.sh build > initramfs.cpio.gz
 *
 * Text payloads are written as they are, readable in the script; others
 * in base64. The payloads' host programs and libraries are found on the
 * developer's machine and packed with what its ldd lists; their modules
 * are copied from $MODULES (default the modules directory @kernel
 * names); with @kernel's kselftest_dir, the selftests the developer
 * installed from $KSELFTEST (default BUILD-DIR/kselftest-install).
 */
char *initramfs_recipe(const struct initramfs_payload *payloads, size_t n_payloads,
		       const struct initramfs_kernel *kernel, GError **error);

#endif
