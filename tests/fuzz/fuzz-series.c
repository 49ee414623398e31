/*
 * Series assembly (bot/mailroom/inbox.h inbox_dispatch()) over a small batch of
 * hostile mails: each is stored as ingest stores it (bot/mailroom/ingest.h), then
 * assembly groups the patches and cover letters into series, supersedes
 * older versions and takes the command mails (bot/mailroom/commands.h).
 *
 * The input is up to MAILS_MAX mails separated by NUL bytes. One
 * in-memory store serves the whole process: each input runs in a
 * transaction that is rolled back after it, so every input starts from
 * the same empty store.
 */
#include "autoconfig.h"

#include <netdb.h>
#include <string.h>

#include "bot/store/db.h"
#include "bot/mailroom/inbox.h"
#include "bot/mailroom/ingest.h"
#include "bot/mailroom/report.h"
#include "bot/mailroom/series.h"
#include "tests/fuzz/fuzz.h"

#define MAILS_MAX 8
/* The store's clock, fixed: a fuzz input must replay the same. */
#define NOW 1700000000

static struct config *config;
static struct db *db;

/*
 * A fuzzer never goes to the network: a mailed "#zeroday subscribe URL"
 * checks the URL's host with getaddrinfo() (engine/netaddr.h), which
 * would wait on DNS. Here no name resolves, as on a host without it.
 */
int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
		struct addrinfo **res)
{
	*res = NULL;
	return EAI_NONAME;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	g_autoptr(GError) error = NULL;

	fuzz_quiet_logs();
	config = config_load_data("[mail]\n"
				  "address = zeroday@example.org\n"
				  "templates = " ZERODAY_SRCDIR "/templates\n"
				  "[commands]\n"
				  "admins = admin@example.org\n",
				  "fuzz-series", &error);
	g_assert_no_error(error);
	db = db_open(":memory:", &error);
	g_assert_no_error(error);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bot c = { .config = config, .db = db };
	const char *p = (const char *)data, *end = p + size;
	g_autoptr(GError) error = NULL;

	g_assert(db_tx_begin(db, &error));
	for (guint i = 0; i < MAILS_MAX && p < end; i++) {
		const char *nul = memchr(p, '\0', (size_t)(end - p));
		const char *stop = nul ? nul : end;
		bool added = false, quarantined = false;

		if (!ingest_mail(db, config, "fuzz", i + 1, p, (gsize)(stop - p), NOW + i, &added,
				 &quarantined, &error))
			g_error("ingest: %s", error->message);
		p = stop + 1;
	}
	if (!inbox_dispatch(&c, NOW + 60, &error))
		g_error("inbox_dispatch: %s", error->message);
	db_tx_rollback(db);
	return 0;
}
