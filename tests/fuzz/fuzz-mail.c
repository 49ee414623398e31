/*
 * The mail parser (mail/patchmail.h) on hostile bytes: a raw RFC 5322
 * message, its MIME structure, subject tags, in-body headers and diff.
 */
#include "autoconfig.h"

#include "mail/patchmail.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_quiet_logs();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	g_autoptr(GError) error = NULL;
	struct patchmail *m = patchmail_parse((const char *)data, size, PATCHMAIL_SIZE_DEFAULT,
					      &error);

	if (!m) {
		g_assert(error != NULL);
		return 0;
	}
	g_assert(error == NULL);
	g_assert(m->message_id && m->subject && m->body);
	/* patchmail.h: strings are UTF-8. */
	g_assert(g_utf8_validate(m->body, -1, NULL));
	g_assert(g_utf8_validate(m->subject, -1, NULL));
	g_assert(g_utf8_validate(m->tags.title, -1, NULL));
	(void)patchmail_addressed_to(m, "zeroday@example.org");
	(void)patchmail_kind_name(m->kind);
	patchmail_free(m);
	return 0;
}
