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

#endif
