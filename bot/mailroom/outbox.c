/*
 * The outbox: see outbox.h.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <signal.h>
#include <string.h>

#include "bot/bot.h"
#include "bot/mailroom/outbox.h"
#include "bot/mailroom/policy.h"
#include "bot/mailroom/render.h"
#include "engine/build.h"
#include "mail/address.h"
#include "mail/compose.h"
#include "mail/maildir.h"
#include "mail/smtp.h"

/* Mails sent in one call of outbox_send_due(), at most. */
#define SEND_BATCH 1000
/* The longest wait between two tries of one mail, in seconds. */
#define RETRY_MAX (4 * 3600)

char *outbox_message_id(const struct config *config, const char *tag)
{
	const char *at = strrchr(config->mail_address, '@');

	return compose_message_id(tag, at ? at + 1 : "localhost");
}

/* "to:ADDR" and "cc:ADDR" lines, as the outbox keeps them (caller frees). */
static char **recipient_lines(const struct reply *r)
{
	g_autoptr(GStrvBuilder) b = g_strv_builder_new();

	for (guint i = 0; i < r->to->len + r->cc->len; i++) {
		bool to = i < r->to->len;
		const char *addr = to ? r->to->pdata[i] : r->cc->pdata[i - r->to->len];
		g_autofree char *line = g_strdup_printf("%s:%s", to ? "to" : "cc", addr);

		g_strv_builder_add(b, line);
	}
	return g_strv_builder_end(b);
}

/* A row of @kind queued at @now, with a new Message-ID tagged @tag (caller frees). */
static struct outbox_row *new_row(const struct bot *c, enum outbox_kind kind, const char *tag,
				  gint64 now)
{
	struct outbox_row *row = g_new0(struct outbox_row, 1);

	row->kind = kind;
	row->created = now;
	row->message_id = outbox_message_id(c->config, tag);
	return row;
}

/*
 * Fills @row from @reply composed with the row's Message-ID and date,
 * or, when rendering failed (@cause), as an OUTBOX_ERROR row that says
 * why.
 */
static void fill_row(struct outbox_row *row, struct reply *reply, const GError *cause)
{
	g_autoptr(GError) error = NULL;

	if (!cause) {
		g_free(reply->message_id);
		reply->message_id = g_strdup(row->message_id);
		reply->date = row->created;
		row->raw = compose_message(reply, &error);
		cause = error;
	}
	row->subject = g_strdup(reply->subject ? reply->subject : "(not rendered)");
	row->recipients = recipient_lines(reply);
	row->in_reply_to = g_strdup(reply->in_reply_to);
	{
		g_autoptr(GStrvBuilder) b = g_strv_builder_new();

		for (guint i = 0; i < reply->references->len; i++)
			g_strv_builder_add(b, reply->references->pdata[i]);
		row->references = g_strv_builder_end(b);
	}
	if (cause) {
		g_clear_pointer(&row->raw, g_free);
		row->state = OUTBOX_ERROR;
		row->last_error = g_strdup(cause->message);
	}
}

/*
 * The addr-spec of a "to:"/"cc:" line of outbox_row.recipients, as
 * GMime reads it (mail/address.h), or NULL: never the text after the
 * last '<', which a quoted local part can hold.
 */
static char *line_address(const char *line)
{
	const char *addr = strchr(line, ':');

	return addr ? address_spec(addr + 1) : NULL;
}

/* Gives @row its recipients one by one, unless it has them. */
static bool add_rcpts(struct db *db, const struct outbox_row *row, GError **error)
{
	for (char **r = row->recipients; r && *r; r++) {
		g_autofree char *addr = line_address(*r);

		if (addr && *addr && !db_rcpt_add(db, row->id, addr, error))
			return false;
	}
	return true;
}

static bool queue(const struct bot *c, struct outbox_row *row, GError **error)
{
	bool added;

	if (!db_outbox_add(c->db, row, &added, error))
		return false;
	if (!added)
		return true;
	if (row->state != OUTBOX_ERROR && !add_rcpts(c->db, row, error))
		return false;
	{
		g_autofree char *about = row->finding_id
			? g_strdup_printf(" (finding %" G_GINT64_FORMAT ")", row->finding_id)
			: g_strdup("");

		if (row->state == OUTBOX_ERROR)
			g_warning("outbox: a %s mail%s cannot be mailed: %s",
				  db_outbox_kind_name(row->kind), about, row->last_error);
		else
			g_message("outbox: queued a %s mail%s <%s>", db_outbox_kind_name(row->kind),
				  about, row->message_id);
	}
	return true;
}

bool outbox_queue_report(const struct bot *c, gint64 finding_id, gint64 now,
			 GError **error)
{
	zd_autoptr(finding_row) f = db_finding_get(c->db, finding_id, error);
	zd_autoptr(outbox_row) row = NULL;
	g_autofree char *tag = g_strdup_printf("f%" G_GINT64_FORMAT, finding_id);
	g_autoptr(GError) cause = NULL;
	struct reply reply;
	bool reported;

	if (!f || !policy_reports(c, f, &reported, error))
		return false;
	if (!reported)
		return true;
	row = new_row(c, OUTBOX_REPORT, tag, now);
	row->finding_id = finding_id;
	{
		g_autoptr(GError) unpublished = NULL;

		if (!report_publish(c, f, row->message_id, &unpublished))
			g_message("report of finding %" G_GINT64_FORMAT ": no artifacts linked: %s",
				  finding_id, unpublished->message);
	}
	report_finding(&reply, c, f, row->message_id, now, &cause);
	fill_row(row, &reply, cause);
	reply_release(&reply);
	return queue(c, row, error);
}

/*
 * Whether every finding the report of finding @lead carries, its own
 * included, is closed (no longer open nor inconclusive), and no follow-up
 * was queued in its thread yet: then the last one to close queues the
 * report's one follow-up.
 */
static bool followup_due(struct db *db, gint64 lead, bool *due, GError **error)
{
	g_autoptr(GError) local = NULL;
	zd_autoptr(finding_row) own = db_finding_get(db, lead, error);
	zd_autoptr(outbox_row) fixed = NULL;
	zd_autoptr(outbox_row) dropped = NULL;
	g_autoptr(GPtrArray) carried = NULL;

	*due = false;
	if (!own)
		return false;
	carried = db_finding_carried(db, lead, error);
	if (!carried)
		return false;
	g_ptr_array_add(carried, g_steal_pointer(&own));
	for (guint i = 0; i < carried->len; i++) {
		const struct finding_row *f = carried->pdata[i];

		if (f->state == FINDING_OPEN || f->state == FINDING_INCONCLUSIVE)
			return true;
	}
	fixed = db_outbox_of_finding(db, lead, OUTBOX_FIXED, &local);
	if (!local)
		dropped = db_outbox_of_finding(db, lead, OUTBOX_DROPPED, &local);
	if (local) {
		g_propagate_error(error, g_steal_pointer(&local));
		return false;
	}
	*due = !fixed && !dropped;
	return true;
}

/*
 * Queues the follow-up @kind (OUTBOX_FIXED, OUTBOX_DROPPED) on finding
 * @finding_id, in the thread of the report that carries it: one per
 * report, when the last of the findings it carries is closed.
 */
static bool queue_followup(const struct bot *c, gint64 finding_id, enum outbox_kind kind,
			   gint64 now, GError **error)
{
	g_autoptr(GError) local = NULL;
	zd_autoptr(finding_row) f = db_finding_get(c->db, finding_id, error);
	zd_autoptr(outbox_row) report = NULL;
	zd_autoptr(outbox_row) row = NULL;
	g_autofree char *tag = NULL;
	g_autoptr(GError) cause = NULL;
	struct reply reply;
	gint64 lead;
	bool due;

	if (!f)
		return false;
	lead = f->report_finding ? f->report_finding : finding_id;
	/* Its own report, or the one that carries it. */
	report = db_outbox_of_finding(c->db, lead, OUTBOX_REPORT, &local);
	if (local) {
		g_propagate_error(error, g_steal_pointer(&local));
		return false;
	}
	/* Nothing was mailed about it: there is no thread to follow up in. */
	if (!report || report->state == OUTBOX_ERROR)
		return true;
	if (!followup_due(c->db, lead, &due, error))
		return false;
	if (!due)
		return true;
	/* The follow-up is the report's: about its own finding, under its tag. */
	if (lead != finding_id) {
		finding_row_free(f);
		f = db_finding_get(c->db, lead, error);
		if (!f)
			return false;
	}
	tag = g_strdup_printf("f%" G_GINT64_FORMAT "-%s", lead, db_outbox_kind_name(kind));
	row = new_row(c, kind, tag, now);
	row->finding_id = lead;
	if (kind == OUTBOX_DROPPED)
		report_dropped(&reply, c, f, report, row->message_id, now, &cause);
	else
		report_fixed(&reply, c, f, report, row->message_id, now, &cause);
	if (!cause && !policy_without_muted(c, kind, &reply, &cause, error)) {
		reply_release(&reply);
		return false;
	}
	fill_row(row, &reply, cause);
	reply_release(&reply);
	return queue(c, row, error);
}

bool outbox_queue_fixed(const struct bot *c, gint64 finding_id, gint64 now,
			GError **error)
{
	return queue_followup(c, finding_id, OUTBOX_FIXED, now, error);
}

bool outbox_queue_dropped(const struct bot *c, gint64 finding_id, gint64 now,
			  GError **error)
{
	return queue_followup(c, finding_id, OUTBOX_DROPPED, now, error);
}

/*
 * Test hook, for the crash tests: ZERODAY_TEST_CRASH=STEP kills zeroday
 * with SIGKILL at that step of sending a mail: "connect" (the try is
 * recorded, nothing is said to the server yet), "mail" (MAIL FROM
 * accepted), "accepted" (the server accepted the message; the store
 * does not know it yet), "commit" (the outcome written, not committed).
 */
static void crash_point(const char *step)
{
	bot_crash_point("outbox", step);
}

static void smtp_step(enum smtp_step step, void *data)
{
	static const char *const names[] = {
		[SMTP_STEP_CONNECT] = "connect", [SMTP_STEP_MAIL] = "mail",
		[SMTP_STEP_ACCEPTED] = "accepted",
	};

	(void)data;
	crash_point(names[step]);
}

/* Where mail goes, for one round of sending. */
struct sink {
	char *maildir;           /* the Maildir: the sink, or where SMTP's copies go */
	struct smtp_server smtp; /* .host NULL: the Maildir is the sink */
	char *user;
	char *password;
};

static bool sink_open(struct sink *k, const struct config *config, GError **error)
{
	g_autoptr(GError) local = NULL;

	memset(k, 0, sizeof(*k));
	k->maildir = config_outbox_path(config);
	if (!config->mail_smtp_host)
		return true;
	k->smtp.host = config->mail_smtp_host;
	k->smtp.port = config->mail_smtp_port;
	k->smtp.tls = config->mail_smtps ? SMTP_IMPLICIT_TLS : SMTP_STARTTLS;
	k->smtp.ca_file = config->mail_ca_file;
	k->smtp.timeout = config->mail_timeout;
	if (config->mail_credentials &&
	    !config_read_credentials(config->mail_credentials, &k->user, &k->password, &local)) {
		/* An operator mends it; the mail waits. */
		g_set_error(error, BOT_ERROR, BOT_ERROR_TEMPORARY, "%s", local->message);
		return false;
	}
	k->smtp.user = k->user;
	k->smtp.password = k->password;
	return true;
}

static void sink_close(struct sink *k)
{
	g_free(k->maildir);
	config_credentials_free(k->user, k->password);
	memset(k, 0, sizeof(*k));
}

/* The Maildir file name of outbox row @row: one name a row, so one copy. */
static char *maildir_name(const struct outbox_row *row)
{
	g_autofree char *sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256, row->message_id, -1);

	return g_strdup_printf("zeroday-%08" G_GINT64_FORMAT ".%.16s", row->id, sum);
}

/*
 * Sets row @row's state from its recipients' (in the caller's
 * transaction): any pending, queued again (after a backoff when @tried);
 * else any held, held; else refused by all, an error; else sent.
 */
static bool settle(const struct bot *c, const struct outbox_row *row, gint64 now,
		   bool tried, const char *path, const char *why, GError **error)
{
	gint64 pending, held, sent, digested, refused;
	enum outbox_state state;
	gint64 next_try = row->next_try;

	if (!db_rcpt_count(c->db, row->id, RCPT_PENDING, &pending, error) ||
	    !db_rcpt_count(c->db, row->id, RCPT_HELD, &held, error) ||
	    !db_rcpt_count(c->db, row->id, RCPT_SENT, &sent, error) ||
	    !db_rcpt_count(c->db, row->id, RCPT_DIGESTED, &digested, error) ||
	    !db_rcpt_count(c->db, row->id, RCPT_REFUSED, &refused, error))
		return false;
	if (pending) {
		state = OUTBOX_QUEUED;
		if (tried)
			next_try = now + MIN((gint64)c->config->mail_retry << MIN(row->attempts, 20u),
					     MAX((gint64)RETRY_MAX, (gint64)c->config->mail_retry));
	} else if (held) {
		state = OUTBOX_HELD;
	} else if (refused && !sent && !digested) {
		state = OUTBOX_ERROR;
	} else {
		state = OUTBOX_SENT;
	}
	return db_outbox_settle(c->db, row->id, state, tried && sent ? now : 0, next_try, path, why,
				error);
}

/* What the server said to those it refused, for the log and last_error (caller frees). */
static char *refusals(const struct smtp_rcpt *tries, size_t n)
{
	GString *s = g_string_new(NULL);

	for (size_t i = 0; i < n; i++) {
		if (tries[i].state == SMTP_RCPT_ACCEPTED)
			continue;
		g_string_append_printf(s, "%s%s %s: %s", s->len ? "; " : "", tries[i].address,
				       tries[i].state == SMTP_RCPT_REFUSED ? "refused" : "deferred",
				       tries[i].reply ? tries[i].reply : "no reply");
	}
	return s->len ? g_string_free(s, FALSE) : (g_string_free(s, TRUE), NULL);
}

/*
 * Hands @row to the sink: @n recipients in @tries get their state, and
 * *@path where the mail (or SMTP's copy of it) went. False with @error
 * when nothing was handed over.
 */
static bool deliver(struct sink *k, const struct bot *c, const struct outbox_row *row,
		    struct smtp_rcpt *tries, size_t n, char **path, GError **error)
{
	g_autofree char *name = maildir_name(row);
	g_autoptr(GError) copy = NULL;
	bool accepted = false;

	*path = NULL;
	if (!k->smtp.host) {
		crash_point("connect");
		*path = maildir_deliver(k->maildir, name, row->raw, strlen(row->raw), error);
		if (!*path)
			return false;
		for (size_t i = 0; i < n; i++)
			tries[i].state = SMTP_RCPT_ACCEPTED;
		crash_point("accepted");
		return true;
	}
	if (!smtp_send(&k->smtp, c->config->mail_address, tries, n, row->raw, strlen(row->raw),
		       smtp_step, NULL, error))
		return false;
	for (size_t i = 0; i < n; i++)
		accepted |= tries[i].state == SMTP_RCPT_ACCEPTED;
	/* The copy of what went out, as a Sent folder keeps it. */
	if (accepted) {
		*path = maildir_deliver(k->maildir, name, row->raw, strlen(row->raw), &copy);
		if (!*path)
			g_warning("outbox: <%s> sent, but no copy kept: %s", row->message_id,
				  copy->message);
	}
	return true;
}

/*
 * Sends @row to its pending recipients that no limit holds back. Sets
 * *@down when the sink failed (the server down, silent or refusing TLS):
 * the other mails would only wait for the same timeout.
 */
static bool send_row(const struct bot *c, struct sink *k, const struct outbox_row *row,
		     gint64 now, unsigned *sent, bool *down, GError **error)
{
	struct db *db = c->db;
	g_autoptr(GPtrArray) rcpts = NULL;
	g_autoptr(GPtrArray) to = g_ptr_array_new();
	g_autofree struct smtp_rcpt *tries = NULL;
	g_autoptr(GError) why = NULL;
	g_autofree char *path = NULL;
	g_autofree char *refused = NULL;
	bool ok;

	if (row->state == OUTBOX_SENDING)
		g_message("outbox: a try of <%s> was cut short: sending it again, with its "
			  "Message-ID", row->message_id);
	if (!db_tx_begin(db, error))
		return false;
	if (!add_rcpts(db, row, error) || !(rcpts = db_rcpt_list(db, row->id, error)))
		goto rollback;
	for (guint i = 0; i < rcpts->len; i++) {
		struct rcpt_row *r = rcpts->pdata[i];
		bool ok_now;

		if (r->state != RCPT_PENDING)
			continue;
		if (!policy_may_send(c, row->kind, r->address, now, &ok_now, error))
			goto rollback;
		if (ok_now) {
			g_ptr_array_add(to, r);
			continue;
		}
		g_message("outbox: <%s> to %s held back by a limit, for a digest", row->message_id,
			  r->address);
		if (!db_rcpt_set(db, row->id, r->address, RCPT_HELD, now, "held back by a limit", 0,
				 error))
			goto rollback;
	}
	if (to->len == 0) {
		if (!settle(c, row, now, false, NULL, row->last_error, error))
			goto rollback;
		return db_tx_commit(db, error) || (db_tx_rollback(db), false);
	}
	if (!db_outbox_attempt(db, row->id, error) || !db_tx_commit(db, error))
		goto rollback;

	/* Nobody is sent to until the sink says so: a sink that fails early leaves them due. */
	tries = g_new0(struct smtp_rcpt, to->len);
	for (guint i = 0; i < to->len; i++) {
		tries[i].address = ((struct rcpt_row *)to->pdata[i])->address;
		tries[i].state = SMTP_RCPT_DEFERRED;
	}
	ok = deliver(k, c, row, tries, to->len, &path, &why);
	refused = refusals(tries, to->len);
	*down = !ok;
	if (!ok)
		g_warning("outbox: <%s> not sent: %s", row->message_id, why->message);
	else if (refused)
		g_message("outbox: <%s>: %s", row->message_id, refused);

	if (!db_tx_begin(db, error))
		goto out;
	for (guint i = 0; i < to->len; i++) {
		static const enum rcpt_state states[] = {
			[SMTP_RCPT_ACCEPTED] = RCPT_SENT, [SMTP_RCPT_DEFERRED] = RCPT_PENDING,
			[SMTP_RCPT_REFUSED] = RCPT_REFUSED,
		};

		if (!db_rcpt_set(db, row->id, tries[i].address, states[tries[i].state], now,
				 tries[i].reply, 0, error))
			goto rollback;
	}
	if (path)
		(*sent)++;
	if (!settle(c, row, now, true, path, why ? why->message : refused, error))
		goto rollback;
	crash_point("commit");
	if (!db_tx_commit(db, error))
		goto rollback;
	if (path)
		g_message("outbox: sent <%s>: %s", row->message_id, path);
	smtp_rcpts_clear(tries, to->len);
	return true;
rollback:
	db_tx_rollback(db);
out:
	if (tries)
		smtp_rcpts_clear(tries, to->len);
	return false;
}

bool outbox_queue_reply(const struct bot *c, enum outbox_kind kind, struct reply *reply,
			const GError *cause, const char *tag, gint64 now, gint64 *id,
			GError **error)
{
	zd_autoptr(outbox_row) row = new_row(c, kind, tag, now);
	g_autoptr(GError) copy = cause ? g_error_copy(cause) : NULL;

	if (!copy && !policy_without_muted(c, kind, reply, &copy, error))
		return false;
	/* A Message-ID the caller made already (to name it in the text) is kept. */
	if (reply->message_id) {
		g_free(row->message_id);
		row->message_id = g_strdup(reply->message_id);
	}
	fill_row(row, reply, copy);
	if (!queue(c, row, error))
		return false;
	if (id)
		*id = row->id;
	return true;
}

/*
 * The mails held back for @address, as one digest to it (policy.h),
 * queued in one transaction with them marked as carried by it.
 */
static bool make_digest(const struct bot *c, const char *address, gint64 now,
			GError **error)
{
	struct db *db = c->db;
	g_autoptr(GPtrArray) held = policy_held_for(c, address, error);
	zd_autoptr(outbox_row) row = NULL;
	g_autoptr(GError) cause = NULL;
	struct reply reply;
	bool ok = false;

	if (!held)
		return false;
	row = new_row(c, OUTBOX_DIGEST, "digest", now);
	policy_digest(&reply, c, address, held, row->message_id, now, &cause);
	if (!db_tx_begin(db, error))
		goto out;
	fill_row(row, &reply, cause);
	if (!queue(c, row, error))
		goto rollback;
	for (guint i = 0; i < held->len; i++) {
		const struct outbox_row *h = held->pdata[i];

		if (!db_rcpt_set(db, h->id, address, RCPT_DIGESTED, now, NULL, row->id, error) ||
		    !settle(c, h, now, false, NULL, h->last_error, error))
			goto rollback;
	}
	if (!db_tx_commit(db, error))
		goto rollback;
	g_message("outbox: %u held mails to %s go out as one digest <%s>", held->len, address,
		  row->message_id);
	ok = true;
	goto out;
rollback:
	db_tx_rollback(db);
out:
	reply_release(&reply);
	return ok;
}

/* A digest for every address with held mail that the policy lets through now. */
static bool make_digests(const struct bot *c, gint64 now, GError **error)
{
	g_auto(GStrv) addresses = policy_digests_due(c, now, error);

	if (!addresses)
		return false;
	for (char **a = addresses; *a; a++) {
		if (!make_digest(c, *a, now, error))
			return false;
	}
	return true;
}

gint64 outbox_queue_test(const struct bot *c, const char *const *to, gint64 now,
			 GError **error)
{
	zd_autoptr(template_values) v = template_values_new();
	zd_autoptr(outbox_row) row = new_row(c, OUTBOX_TEST, "test", now);
	g_autofree char *where = c->config->mail_smtp_host
		? g_strdup_printf("%s://%s:%u", c->config->mail_smtps ? "smtps" : "smtp",
				  c->config->mail_smtp_host, c->config->mail_smtp_port)
		: config_outbox_path(c->config);
	struct reply reply;
	gint64 id = 0;

	reply_init(&reply);
	template_values_set(v, "bot_name", c->config->mail_name);
	template_values_set(v, "bot_address", c->config->mail_address);
	template_values_set(v, "outbox", where);
	if (!render_mail(&reply, c->config, "test", v, error))
		goto out;
	for (const char *const *t = to; *t; t++) {
		char *normal = address_normalize(*t, error);

		if (!normal)
			goto out;
		g_ptr_array_add(reply.to, normal);
	}
	if (!db_tx_begin(c->db, error))
		goto out;
	fill_row(row, &reply, NULL);
	if (!queue(c, row, error) || row->state == OUTBOX_ERROR) {
		if (row->state == OUTBOX_ERROR)
			g_set_error(error, BOT_ERROR, BOT_ERROR_FAILED, "%s", row->last_error);
		db_tx_rollback(c->db);
		goto out;
	}
	if (!db_tx_commit(c->db, error)) {
		db_tx_rollback(c->db);
		goto out;
	}
	id = row->id;
out:
	reply_release(&reply);
	return id;
}

bool outbox_send_due(const struct bot *c, unsigned *sent, GError **error)
{
	gint64 now = g_get_real_time() / G_USEC_PER_SEC;
	g_autoptr(GPtrArray) due = NULL;
	struct sink k;
	bool ok = true;

	*sent = 0;
	if (!make_digests(c, now, error))
		return false;
	due = db_outbox_due(c->db, now, SEND_BATCH, error);
	if (!due)
		return false;
	if (due->len == 0)
		return true;
	if (!sink_open(&k, c->config, error)) {
		sink_close(&k);
		return false;
	}
	for (guint i = 0; ok && i < due->len; i++) {
		bool down = false;

		ok = send_row(c, &k, due->pdata[i], now, sent, &down, error);
		if (ok && down && i + 1 < due->len) {
			g_message("outbox: %u more mails wait for the next round", due->len - i - 1);
			break;
		}
	}
	sink_close(&k);
	return ok;
}

bool outbox_queue_clean(const struct bot *c, const char *tree_name, const char *head,
			const char *target, unsigned boots, gint64 now, GError **error)
{
	g_autoptr(GError) local = NULL;
	zd_autoptr(tree_row) tree = db_tree_get(c->db, tree_name, error);
	zd_autoptr(template_values) v = template_values_new();
	zd_autoptr(outbox_row) row = NULL;
	zd_autoptr(repo_people) people = NULL;
	g_autofree char *branch = NULL;
	g_autofree char *head_short = g_strndup(head, 12);
	g_autofree char *compiler = NULL;
	g_autoptr(GError) cause = NULL;
	struct reply reply;

	if (!tree)
		return false;
	if (!tree->mail_clean)
		return true;
	branch = db_test_branch(c->db, tree->id, head, &local);
	if (local) {
		g_propagate_error(error, g_steal_pointer(&local));
		return false;
	}
	people = repo_people_of(c->repo, head, NULL);
	compiler = build_compiler_version(target);
	reply_init(&reply);
	template_values_set(v, "bot_name", c->config->mail_name);
	template_values_set(v, "bot_address", c->config->mail_address);
	template_values_set(v, "tree", tree->name);
	template_values_set(v, "url", tree->url);
	template_values_set(v, "branch", branch);
	template_values_set(v, "head", head);
	template_values_set(v, "head_short", head_short);
	template_values_set(v, "head_title", people ? people->summary : "?");
	template_values_set(v, "target", target);
	template_values_set(v, "compiler", compiler);
	if (boots)
		template_values_printf(v, "boots", "%u", boots);
	/* The tree's people: its lists and maintainers; a private tree's maintainers only. */
	for (char **l = tree->private ? NULL : tree->lists; l && *l; l++)
		g_ptr_array_add(reply.to, g_strdup(*l));
	for (char **m = tree->recipients; m && *m; m++)
		g_ptr_array_add(reply.to->len ? reply.cc : reply.to, g_strdup(*m));
	if (reply.to->len == 0) {
		g_info("outbox: %s asks for clean-build mail but has no --list or --cc", tree->name);
		reply_release(&reply);
		return true;
	}
	row = new_row(c, OUTBOX_CLEAN, "clean", now);
	render_mail(&reply, c->config, "clean", v, &cause);
	fill_row(row, &reply, cause);
	reply_release(&reply);
	return queue(c, row, error);
}
