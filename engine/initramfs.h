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
 * Writes a gzip-compressed newc cpio archive to @out_path with @busybox (a
 * static busybox) and the payloads, run in order. Payloads receive the
 * kernel command line's zeroday.seed=N in $ZERODAY_SEED.
 */
bool initramfs_build(const char *out_path, const char *busybox,
		     const struct initramfs_payload *payloads, size_t n_payloads, GError **error);

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
 * in base64.
 */
char *initramfs_recipe(const struct initramfs_payload *payloads, size_t n_payloads,
		       GError **error);

#endif
