/*
 * What every room of bot/ shares: its error domain and the crash points
 * the tests kill it at. See bot.h.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <signal.h>
#include <string.h>

#include "bot/bot.h"

G_DEFINE_QUARK(zeroday-bot-error-quark, bot_error)

void bot_crash_point(const char *who, const char *step)
{
	const char *want = g_getenv("ZERODAY_TEST_CRASH");

	if (want && strcmp(want, step) == 0) {
		g_warning("%s: killed at step '%s', as ZERODAY_TEST_CRASH asks", who, step);
		raise(SIGKILL);
	}
}
