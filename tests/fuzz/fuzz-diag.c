/*
 * The build output parser (engine/diag.h diag_parse_build()): compiler,
 * linker, modpost, sparse, coccinelle and make lines into fingerprinted
 * diagnostics, and the comparison of two builds' diagnostics.
 */
#include "autoconfig.h"

#include <string.h>

#include "engine/diag.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_quiet_logs();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A build log is read as a C string, as build.c hands it over. */
	g_autofree char *log = g_strndup((const char *)data, size);
	g_autoptr(GPtrArray) diags = diag_parse_build(log, "/src/linux", "/build/linux");
	g_autoptr(GPtrArray) none = g_ptr_array_new();
	g_autoptr(GPtrArray) same = NULL;
	g_autoptr(GPtrArray) all = NULL;

	for (guint i = 0; i < diags->len; i++) {
		const struct diag *d = diags->pdata[i];

		g_assert(d->checker && d->file && d->message);
		g_assert(d->fingerprint && strlen(d->fingerprint) == 16);
		(void)diag_kind_name(d->kind);
	}
	same = diag_new_in(diags, diags);
	all = diag_new_in(diags, none);
	g_assert(same->len == 0);
	g_assert(all->len == diags->len);
	(void)diag_has_error(diags);
	return 0;
}
