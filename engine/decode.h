/*
 * A kernel's console trace decoded into source lines, as the kernel's own
 * scripts/decode_stacktrace.sh does: each frame that names
 * SYMBOL+0xOFFSET/0xLENGTH (a call trace's frames, "RIP: 0010:SYMBOL+...",
 * arm64's "pc : SYMBOL+..." and "lr : SYMBOL+...") gets the file and line
 * of that address in the kernel's vmlinux, inlined frames too, innermost
 * first, on the frame's own line:
 *
 *   zd_outer+0x10/0x40 lib/zd.c:5 lib/zd.c:12
 *
 * The symbols' addresses come from nm, the lines from one addr2line run
 * for all of the frames. A vmlinux is a build's file, written by
 * strangers' code: both tools run inside the sandbox (run.h) when asked,
 * with only the vmlinux visible, read-only, with a timeout, a memory
 * limit and a cap on their output, never through a shell. What addr2line
 * says is kept only when it is printable text.
 *
 * Paths are made relative to the kernel's source tree: the directory
 * before the "init/main.c" of kernel_init, as decode_stacktrace.sh finds
 * its base path. A frame in a module ("... [mod]"), a symbol vmlinux does
 * not have, and an address without debug information ("??:0") leave
 * their line as it is.
 */
#ifndef ZERODAY_DECODE_H
#define ZERODAY_DECODE_H

#include <stdbool.h>
#include <glib.h>

#include "engine/engine.h"

/* The defaults of struct decode_opts. */
#define DECODE_TIMEOUT_S 60
/* nm's output: a symbol a line, a few hundred thousand of them. */
#define DECODE_SYMBOLS_MAX (64 * 1024 * 1024)
/* addr2line's memory: it reads the DWARF of a large kernel. */
#define DECODE_MEMORY (4ULL * 1024 * 1024 * 1024)
/* The largest vmlinux decoded. */
#define DECODE_VMLINUX_MAX (1024ULL * 1024 * 1024)
/* At most this many distinct frames of an excerpt are decoded. */
#define DECODE_FRAMES_MAX 256

struct decode_opts {
	/*
	 * Run nm and addr2line inside the sandbox. Only this module's tests
	 * run them without it, on ELF files they compiled themselves.
	 */
	bool sandbox;
	unsigned timeout_s;     /* per tool; 0: DECODE_TIMEOUT_S */
	guint64 vmlinux_max;    /* 0: DECODE_VMLINUX_MAX */
	const char *tmp_parent; /* where the private directory is made; NULL: g_get_tmp_dir() */
};

/*
 * Returns @excerpt with its frames decoded with @vmlinux (caller frees):
 * every line as it was, frame lines with " FILE:LINE ..." added. An
 * excerpt with no frame is returned as it is without running anything.
 * NULL with @error when @vmlinux cannot be read or decoded: missing
 * (ENGINE_ERROR_NOT_FOUND), not a regular file (ENGINE_ERROR_INVALID),
 * too large or too much output (ENGINE_ERROR_LIMIT), a tool that did not
 * finish in time (ENGINE_ERROR_TIMEOUT) or failed (ENGINE_ERROR_FAILED):
 * the caller keeps the excerpt undecoded.
 */
char *decode_trace(const char *excerpt, const char *vmlinux, const struct decode_opts *opts,
		   GError **error);

#endif
