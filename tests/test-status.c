/*
 * The status snapshot's operations part: nearest-rank percentiles, ages,
 * and how the queue, the mail sources, the outbox and the response times
 * are rendered as text and as JSON.
 */
#include "autoconfig.h"

#include "bot/bot.h"
#include "bot/status.h"
#include "tests/testlib.h"

static void test_percentile(void)
{
	static const struct {
		gint64 values[12];
		guint n;
		unsigned p;
		gint64 want;
	} cases[] = {
		{ { 0 }, 0, 50, -1 },                      /* none */
		{ { 7 }, 1, 50, 7 },
		{ { 7 }, 1, 90, 7 },
		{ { 1, 2 }, 2, 50, 1 },                    /* rank ceil(1.0) = 1 */
		{ { 1, 2 }, 2, 90, 2 },                    /* rank ceil(1.8) = 2 */
		{ { 5, 1, 4, 2, 3 }, 5, 50, 3 },           /* unsorted; rank 3 */
		{ { 5, 1, 4, 2, 3 }, 5, 90, 5 },           /* rank ceil(4.5) = 5 */
		{ { 5, 1, 4, 2, 3 }, 5, 100, 5 },
		{ { 10, 20, 30, 40, 50, 60, 70, 80, 90, 100 }, 10, 50, 50 },
		{ { 10, 20, 30, 40, 50, 60, 70, 80, 90, 100 }, 10, 90, 90 },
		{ { 10, 20, 30, 40, 50, 60, 70, 80, 90, 100 }, 10, 91, 100 },
		{ { 10, 20, 30, 40, 50, 60, 70, 80, 90, 100 }, 10, 1, 10 },
		{ { 3, 3, 3, 1, 1 }, 5, 50, 3 },           /* ties */
		{ { 3, 3, 3, 1, 1 }, 5, 40, 1 },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		gint64 values[12];

		memcpy(values, cases[i].values, sizeof(values));
		g_assert_cmpint(status_percentile(values, cases[i].n, cases[i].p), ==,
				cases[i].want);
	}
}

static void test_age(void)
{
	static const struct {
		gint64 seconds;
		const char *want;
	} cases[] = {
		{ -5, "0s" }, { 0, "0s" }, { 59, "59s" }, { 60, "1m 0s" }, { 3599, "59m 59s" },
		{ 3600, "1h 0m" }, { 86399, "23h 59m" }, { 86400, "1d 0h" }, { 200000, "2d 7h" },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *got = status_format_age(cases[i].seconds);

		g_assert_cmpstr(got, ==, cases[i].want);
	}
}

/* Whether @haystack has @line as a whole line. */
static bool has_line(const char *haystack, const char *line)
{
	g_auto(GStrv) lines = g_strsplit(haystack, "\n", -1);

	for (char **l = lines; *l; l++) {
		if (g_str_equal(*l, line))
			return true;
	}
	g_test_message("no line \"%s\" in:\n%s", line, haystack);
	return false;
}

static void test_render(void)
{
	g_autoptr(GError) error = NULL;
	zd_autoptr(db) db = db_open(":memory:", &error);
	g_autoptr(GString) text = g_string_new(NULL);
	g_autoptr(GString) json = g_string_new(NULL);
	struct status s;

	g_assert_no_error(error);
	if (!db)
		return;
	g_assert_true(db_source_read(db, "imaps://u@h/INBOX", 9000, NULL, &error));
	g_assert_true(db_source_read(db, "imaps://u@h/INBOX", 9900, "timed out", &error));
	g_assert_true(status_load(&s, db, 10000, &error));
	g_assert_no_error(error);
	s.outbox = (struct outbox_counts){ .queued = 2, .held = 1, .sent = 9, .failed = 3,
					   .oldest_queued = 10000 - 125 };
	s.push_report = (struct status_latency){ .count = 4, .p50 = 600, .p90 = 7200 };
	s.post_reply = (struct status_latency){ .count = 0, .p50 = -1, .p90 = -1 };
	status_format_text(text, &s);
	status_format_json(json, &s);
	status_release(&s);

	g_assert_true(has_line(text->str, "  source imaps://u@h/INBOX: read 1970-01-01 02:30:00 UTC "
				       "(16m 40s ago); FAILED at 1970-01-01 02:45:00 UTC: timed out"));
	g_assert_true(has_line(text->str, "Outbox: 2 queued (oldest 2m 5s ago), 1 held, 9 sent, "
				       "3 failed"));
	g_assert_true(has_line(text->str, "Response times, last 30 days (p50 / p90):"));
	g_assert_true(has_line(text->str, "  push to report: 10m 0s / 2h 0m (4 measured; from the "
				       "poll that first saw the commit to the report sent)"));
	g_assert_true(has_line(text->str, "  post to reply: - / - (0 measured; from the ingest of "
				       "a series' first mail to its first reply sent)"));
	g_assert_nonnull(strstr(json->str,
		"\"now\": 10000, \"oldest_queued_age\": null, \"active_jobs\": [], "
		"\"mail_sources\": [{\"source\": \"imaps://u@h/INBOX\", \"last_read\": 9000, "
		"\"last_read_age\": 1000, \"failed\": 9900, \"error\": \"timed out\"}], "
		"\"outbox\": {\"queued\": 2, \"held\": 1, \"sent\": 9, \"failed\": 3, "
		"\"oldest_queued_age\": 125}, \"response_times\": {\"days\": 30, "
		"\"push_to_report\": {\"from\": \"first_poll\", \"count\": 4, \"p50\": 600, "
		"\"p90\": 7200}, \"post_to_reply\": {\"from\": \"ingest\", \"count\": 0, "
		"\"p50\": null, \"p90\": null}}}\n"));
}

int main(int argc, char **argv)
{
	testlib_init(&argc, &argv);
	g_test_add_func("/status/percentile", test_percentile);
	g_test_add_func("/status/age", test_age);
	g_test_add_func("/status/render", test_render);
	return g_test_run();
}
