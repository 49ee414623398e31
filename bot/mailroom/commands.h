/*
 * The mail command language: maintainers steer zeroday by mail.
 *
 * A command is a line that starts, in its first column, with "#zeroday"
 * and a space, in the plain-text body of a mail to the bot's address or
 * of a reply to one of its mails. Quoted lines ("> #zeroday ...") are
 * not commands, nor is the word later in a line, nor what follows a
 * signature ("-- ") or an original pasted unquoted or forwarded
 * ("-----Original Message-----", Outlook's line of underscores and
 * "From:", "-------- Forwarded Message --------", "Begin forwarded
 * message:", an "On ..., X wrote:" with unquoted text below it); the
 * examples in zeroday's own mails are indented, so they are none
 * either, but for "#zeroday confirm <token>" with a token in it: the
 * subscribe reply's line, pasted back as it was. An HTML-only mail
 * with a command at the start of a line of its text, outside
 * <blockquote>, is answered "plain text, please", unless it replies to
 * one of zeroday's command answers. At most COMMANDS_MAX per mail: more
 * gets one reply that refuses them all.
 *
 * Every command mail gets exactly one reply, in its thread, To its
 * sender, saying for each command what was done or why not. Commands
 * whose result comes later (rerun, test) hold the reply until it does.
 * A command mail gets no reply when it comes from zeroday itself, from a
 * machine (patchmail.automatic: Auto-Submitted, bounces, vacation
 * replies; Precedence: junk, or bulk without a List-Id), from a sender
 * in [commands] ignore (other robots), from an address whose local part
 * holds quotes, angle brackets or '@' (mail/address.h
 * address_is_plain()), from a list's address without a single Reply-To,
 * or past [commands] max-per-sender-hour or max-per-hour; why is logged
 * and kept.
 *
 * The sender is From's address. When a list rewrote From to its own
 * address (DMARC: "Joe via KB <list@example.org>", From the List-Post
 * address or a list zeroday knows) the one Reply-To is the sender, but
 * unverified: it gets the reply and counts for the per-sender limit,
 * and gives only what anyone may ask (help, status, subscribe); every
 * other command is refused, saying to send it to zeroday directly.
 *
 * Who may: anyone asks for help, status, and a subscription (which only
 * mails a single-use token to confirm, valid for SUBSCRIBE_TOKEN_DAYS,
 * from the address that asked); anyone on a report's thread (a recipient
 * of zeroday's mail there, or the series' sender) asks for a rerun, a
 * test or to be muted (the mail of zeroday's that makes them so is one
 * this mail replies to, about the series or tree the command acts on:
 * References name mails, not rights); a list is never muted; a tree's
 * maintainers (its --cc addresses, an M:
 * line of its MAINTAINERS file, the address that subscribed it) and
 * [commands] admins blacklist, unblacklist, unsubscribe and say a report
 * is invalid. From a domain in [commands] dkim-required, nothing is
 * taken without a valid DKIM signature of that domain, verified here
 * (mail/dkim.h). A refusal says why and changes nothing: each command
 * runs in a savepoint of the mail's transaction.
 *
 * The table of commands is in commands.c; zeroday(1) lists them.
 */
#ifndef ZERODAY_COMMANDS_H
#define ZERODAY_COMMANDS_H

#include <stdbool.h>
#include <glib.h>

#include "bot/store/db.h"
#include "bot/mailroom/report.h"
#include "mail/patchmail.h"

/* Commands one mail may carry. */
#define COMMANDS_MAX 5
/* Bytes of one command line, and of one of its words, at most. */
#define COMMAND_LINE_MAX 1000
#define COMMAND_ARG_MAX 512
/* How long a subscription's token is good for. */
#define SUBSCRIBE_TOKEN_DAYS 7

/*
 * Returns the command lines of @body (NULL-terminated; caller frees), as
 * the header says, in order; at most @max + 1, so that a caller can tell
 * that there were more than @max.
 */
char **commands_lines(const char *body, guint max);

/*
 * Returns the command lines of the HTML body @html as commands_lines()
 * reads its text (NULL-terminated; caller frees): its lines as a
 * browser breaks them, outside <blockquote>.
 */
char **commands_html_lines(const char *html, guint max);

/*
 * Splits command line @line (one of commands_lines()) into its words
 * after "#zeroday" (NULL-terminated; caller frees); NULL with *@why (a
 * static string) when it is too long, holds control characters, or has
 * too many words.
 */
char **commands_split_line(const char *line, const char **why);

/*
 * Returns @line as it is kept and quoted back (caller frees): at most
 * COMMAND_LINE_MAX bytes, made valid UTF-8, control characters made '?'.
 */
char *commands_printable_line(const char *line);

/*
 * Looks at stored mail @mail (parsed: @m) in the caller's transaction:
 * when it is a command mail, runs its commands and queues its reply, or
 * records why it gets none. Its raw text is read from the store only
 * for a DKIM check. Sets *@taken to whether it was a command mail.
 * False only when the store fails.
 */
bool commands_take(const struct bot *c, const struct mail_row *mail,
		   const struct patchmail *m, gint64 now, bool *taken, GError **error);

/*
 * Job @job ended with @result (and @note), in the caller's
 * transaction: the commands waiting for it get their answer (a rerun
 * that did not reproduce closes its finding), and a mail whose commands
 * are all answered gets its reply.
 */
bool commands_job_done(const struct bot *c, const struct job_row *job,
		       enum job_result result, const char *note, gint64 now, GError **error);

/*
 * Series @series_id is settled (tested, or applies nowhere; its state
 * stored), in the caller's transaction: the test commands waiting for it
 * are answered with its result, and *@claimed says whether one of them
 * came from the series' own sender (by From). Then the series' own
 * replies are not sent: the sender's command mail gets one reply, not
 * several. Anyone else's test claims nothing: the series' replies go to
 * its sender and lists as ever, and the command's answer apart.
 */
bool commands_series_claimed(const struct bot *c, gint64 series_id, gint64 now,
			     bool *claimed, GError **error);

/*
 * Answers the commands that wait for what will not come: a series
 * tested, or that will not be (superseded, ignored, applying nowhere);
 * a job gone with its tree. Each in a transaction of its own.
 */
bool commands_sweep(const struct bot *c, gint64 now, GError **error);

#endif
