/*
 * What the libFuzzer targets share: the entry points libFuzzer calls,
 * and quiet logging. Built only with configure --enable-fuzzing (clang);
 * tests/fuzz/run.sh builds and runs them.
 */
#ifndef ZERODAY_FUZZ_H
#define ZERODAY_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <glib.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Drops messages, info and debug output (the parsers log what they
 * refuse, thousands of times a second here) unless FUZZ_LOG is set,
 * keeps warnings, and makes a critical fatal: a failed
 * g_return_if_fail() is a bug found.
 */
static GLogWriterOutput fuzz_log_writer(GLogLevelFlags level, const GLogField *fields,
					gsize n_fields, gpointer data)
{
	if (level & (G_LOG_LEVEL_MESSAGE | G_LOG_LEVEL_INFO | G_LOG_LEVEL_DEBUG))
		return G_LOG_WRITER_HANDLED;
	return g_log_writer_standard_streams(level, fields, n_fields, data);
}

static inline void fuzz_quiet_logs(void)
{
	/* FUZZ_LOG=1: everything logged, to see what one input does. */
	if (!g_getenv("FUZZ_LOG"))
		g_log_set_writer_func(fuzz_log_writer, NULL, NULL);
	g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);
}

#endif
