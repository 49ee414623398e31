/*
 * engine/: kernels as data. No database, no mail: plain inputs go in,
 * result structs come out.
 */
#ifndef ZERODAY_ENGINE_H
#define ZERODAY_ENGINE_H

#include <glib.h>

#define ENGINE_ERROR (engine_error_quark())

/* The failures a caller acts on; everything else is ENGINE_ERROR_FAILED. */
enum engine_error {
	ENGINE_ERROR_FAILED,
	ENGINE_ERROR_INVALID,   /* hostile or malformed input, refused */
	ENGINE_ERROR_NOT_FOUND, /* no such commit, ref or object */
	ENGINE_ERROR_TIMEOUT,   /* a remote or a child did not answer in time */
	ENGINE_ERROR_LIMIT,     /* a size limit (pack objects, bytes) was hit */
};

GQuark engine_error_quark(void);

/*
 * g_autoptr() for our own structs, which have no typedef:
 * ZD_AUTOPTR_DEFINE(repo, repo_free) once beside the prototypes, then
 * `zd_autoptr(repo) r = repo_open(...);` frees r when it goes out of scope.
 */
#define ZD_AUTOPTR_DEFINE(name, func) \
	static inline void zd_autoptr_cleanup_##name(struct name **p) \
	{ \
		g_clear_pointer(p, func); \
	}
#define zd_autoptr(name) __attribute__((cleanup(zd_autoptr_cleanup_##name))) struct name *

/*
 * g_auto() likewise, for a struct embedded on the stack and released with
 * its _release(): ZD_AUTO_DEFINE(reply, reply_release) once, then
 * `zd_auto(reply) r = { 0 };`. The release must take a zeroed struct.
 */
#define ZD_AUTO_DEFINE(name, func) \
	static inline void zd_auto_cleanup_##name(struct name *p) \
	{ \
		func(p); \
	}
#define zd_auto(name) __attribute__((cleanup(zd_auto_cleanup_##name))) struct name

#endif
