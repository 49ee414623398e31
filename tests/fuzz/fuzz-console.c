/*
 * The boot console classifier (engine/diag.h diag_console_classify()) on
 * a hostile console log, and the tally of repeated boots over its
 * verdicts. The first byte chooses the watchdog and infrastructure
 * flags; the rest is the log.
 */
#include "autoconfig.h"

#include "engine/diag.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_quiet_logs();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct console_result r[2] = { 0 };
	struct console_result *runs[] = { &r[0], &r[1] };
	g_autofree char *log = NULL;
	g_autoptr(GPtrArray) tally = NULL;
	enum console_kind kind;
	guint8 flags = 0;

	if (size) {
		flags = data[0];
		data++;
		size--;
	}
	/* The console log is read as a C string, as boot.c hands it over. */
	log = g_strndup((const char *)data, size);
	diag_console_classify(&r[0], log, flags & 1, flags & 2);
	diag_console_classify(&r[1], log, flags & 4, false);
	for (guint i = 0; i < G_N_ELEMENTS(r); i++) {
		g_assert(diag_console_kind_parse(diag_console_kind_name(r[i].kind), &kind));
		g_assert(kind == r[i].kind);
		(void)diag_console_excerpt(&r[i]);
	}
	tally = diag_console_tally(runs, G_N_ELEMENTS(runs));
	console_result_clear(&r[0]);
	console_result_clear(&r[1]);
	return 0;
}
