/*
 * The status snapshot and its renderings: see status.h.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <stdlib.h>
#include <string.h>

#include <json-glib/json-glib.h>

#include "bot/status.h"

char *status_format_time(gint64 when)
{
	g_autoptr(GDateTime) t = NULL;

	if (when <= 0)
		return g_strdup("never");
	t = g_date_time_new_from_unix_utc(when);
	return g_date_time_format(t, "%Y-%m-%d %H:%M:%S UTC");
}

char *status_short_id(const char *oid)
{
	return oid ? g_strndup(oid, 12) : g_strdup("-");
}

char *status_format_age(gint64 seconds)
{
	if (seconds < 0)
		seconds = 0;
	if (seconds >= 86400)
		return g_strdup_printf("%" G_GINT64_FORMAT "d %" G_GINT64_FORMAT "h",
				       seconds / 86400, seconds % 86400 / 3600);
	if (seconds >= 3600)
		return g_strdup_printf("%" G_GINT64_FORMAT "h %" G_GINT64_FORMAT "m",
				       seconds / 3600, seconds % 3600 / 60);
	if (seconds >= 60)
		return g_strdup_printf("%" G_GINT64_FORMAT "m %" G_GINT64_FORMAT "s",
				       seconds / 60, seconds % 60);
	return g_strdup_printf("%" G_GINT64_FORMAT "s", seconds);
}

static gint cmp_gint64(gconstpointer a, gconstpointer b)
{
	gint64 x = *(const gint64 *)a, y = *(const gint64 *)b;

	return (x > y) - (x < y);
}

gint64 status_percentile(gint64 *values, guint n, unsigned p)
{
	guint64 rank;

	g_assert(p > 0 && p <= 100);
	if (n == 0)
		return -1;
	qsort(values, n, sizeof(*values), cmp_gint64);
	/* The rank is ceil(p/100 * n), counted from 1. */
	rank = ((guint64)p * n + 99) / 100;
	return values[MAX(rank, 1) - 1];
}

/* Fills @out from @values (freed), the response times of one kind. */
static void latency_of(struct status_latency *out, GArray *values)
{
	out->count = values->len;
	out->p50 = status_percentile((gint64 *)(void *)values->data, values->len, 50);
	out->p90 = status_percentile((gint64 *)(void *)values->data, values->len, 90);
	g_array_unref(values);
}

static void status_tree_free(struct status_tree *t)
{
	tree_row_free(t->tree);
	g_clear_pointer(&t->branches, g_ptr_array_unref);
	g_free(t);
}

void status_cluster_job_free(struct status_cluster_job *j)
{
	if (!j)
		return;
	g_free(j->id);
	g_free(j->name);
	g_free(j->state);
	g_free(j->node);
	g_free(j->reason);
	g_free(j);
}

void status_release(struct status *status)
{
	g_clear_pointer(&status->cluster, g_ptr_array_unref);
	g_clear_pointer(&status->cluster_error, g_free);
	g_clear_pointer(&status->trees, g_ptr_array_unref);
	g_clear_pointer(&status->pending, g_ptr_array_unref);
	g_clear_pointer(&status->retrying, g_ptr_array_unref);
	g_clear_pointer(&status->errors, g_ptr_array_unref);
	g_clear_pointer(&status->findings, g_ptr_array_unref);
	g_clear_pointer(&status->events, g_ptr_array_unref);
	g_clear_pointer(&status->quarantined, g_ptr_array_unref);
	g_clear_pointer(&status->active, g_ptr_array_unref);
	g_clear_pointer(&status->sources, g_ptr_array_unref);
	memset(status, 0, sizeof(*status));
}

bool status_load(struct status *out, struct db *db, gint64 now, GError **error)
{
	g_autoptr(GPtrArray) trees = NULL;

	memset(out, 0, sizeof(*out));
	out->now = now;
	trees = db_tree_list(db, error);
	if (!trees || !db_test_count_pending(db, &out->queue_depth, error))
		goto fail;
	out->events = db_event_recent(db, STATUS_EVENTS_MAX, error);
	if (!out->events)
		goto fail;
	out->pending = db_test_pending(db, STATUS_PENDING_MAX, error);
	if (!out->pending)
		goto fail;
	out->findings = db_finding_list(db, STATUS_FINDINGS_MAX, error);
	if (!out->findings || !db_job_counts(db, now, &out->queued, &out->waiting, &out->running,
					     &out->done, error))
		goto fail;
	out->retrying = db_job_list(db, JOB_LIST_RETRYING, STATUS_JOBS_MAX, error);
	if (!out->retrying)
		goto fail;
	out->errors = db_job_list(db, JOB_LIST_ERROR, STATUS_JOBS_MAX, error);
	if (!out->errors)
		goto fail;
	out->quarantined = db_mail_list(db, MAIL_QUARANTINED, STATUS_QUARANTINE_MAX, error);
	if (!out->quarantined)
		goto fail;
	out->active = db_job_list(db, JOB_LIST_ACTIVE, STATUS_JOBS_MAX, error);
	if (!out->active || !db_job_oldest_queued(db, &out->oldest_queued, error))
		goto fail;
	out->sources = db_source_list(db, error);
	if (!out->sources || !db_outbox_counts(db, &out->outbox, error))
		goto fail;
	{
		gint64 since = now - (gint64)STATUS_LATENCY_DAYS * 86400;
		GArray *push = db_latency_push_report(db, since, error);
		GArray *post = push ? db_latency_post_reply(db, since, error) : NULL;

		if (!post) {
			if (push)
				g_array_unref(push);
			goto fail;
		}
		latency_of(&out->push_report, push);
		latency_of(&out->post_reply, post);
	}
	{
		gint64 n_new = 0, n_done = 0, n_q = 0;

		if (!db_mail_count(db, MAIL_NEW, &n_new, error) ||
		    !db_mail_count(db, MAIL_DONE, &n_done, error) ||
		    !db_mail_count(db, MAIL_QUARANTINED, &n_q, error))
			goto fail;
		out->mails = n_new + n_done + n_q;
	}
	/* A job waiting for its retry is still queued. */
	out->queued += out->waiting;
	out->trees = g_ptr_array_new_with_free_func((GDestroyNotify)status_tree_free);
	for (guint i = 0; i < trees->len; i++) {
		struct status_tree *t = g_new0(struct status_tree, 1);

		/* The array keeps the row; this entry takes it over. */
		t->tree = trees->pdata[i];
		trees->pdata[i] = NULL;
		g_ptr_array_add(out->trees, t);
		t->branches = db_branch_list(db, t->tree->id, error);
		if (!t->branches)
			goto fail;
	}
	return true;
fail:
	status_release(out);
	return false;
}

char *status_finding_details(const struct finding_row *f)
{
	if (f->details || !f->head)
		return g_strdup(f->details);
	if (f->kind == FINDING_BOOT)
		return g_strdup_printf("%u/%u boots at the head%s\n%s", f->failures, f->runs,
				       f->intermittent ? " (intermittent)" : "",
				       f->excerpt ? f->excerpt : "");
	if (f->line)
		return g_strdup_printf("%s:%u:%u: %s: %s", f->file ? f->file : "", f->line,
				       f->column, diag_kind_name(f->diag_kind),
				       f->message ? f->message : "");
	return g_strdup_printf("%s: %s", diag_kind_name(f->diag_kind),
			       f->message ? f->message : "");
}

char *status_finding_reproduce(const struct finding_row *f)
{
	GString *out;

	if (f->reproduce || !f->head)
		return g_strdup(f->reproduce);
	out = g_string_new(NULL);
	g_string_append_printf(out, "zeroday build %s %s --target '%s'", f->tree ? f->tree : "-",
			       f->repro_commit ? f->repro_commit : f->culprit, f->target);
	if (f->repro_boots > 0)
		g_string_append_printf(out, " && zeroday boot BUILD-ID --repeat %u", f->repro_boots);
	return g_string_free(out, FALSE);
}

char *status_finding_log(const struct finding_row *f)
{
	GString *out;

	if (f->bisect_log || !f->head)
		return g_strdup(f->bisect_log);
	out = g_string_new(NULL);
	for (guint i = 0; f->steps && i < f->steps->len; i++) {
		const struct finding_step *st = f->steps->pdata[i];
		bool revert = st->role == BISECT_ROLE_REVERT;

		g_string_append_printf(out, "%s %s %u/%u (%s%s%s)\n",
				       st->tested ? st->tested : st->commit,
				       bisect_result_name(st->result), st->failures, st->runs,
				       bisect_role_name(st->role), revert ? " of " : "",
				       revert ? st->commit : "");
	}
	if (f->state != FINDING_INCONCLUSIVE) {
		g_string_append_printf(out, "culprit %s, confidence %.4f\n", f->culprit,
				       f->confidence);
	} else {
		g_autofree char *suspects = f->suspects ? g_strjoinv(" ", f->suspects) : NULL;
		bool reason = f->reason && *f->reason;

		g_string_append_printf(out, "inconclusive%s%s%s%s\n", reason ? ": " : "",
				       reason ? f->reason : "", suspects && *suspects ? "; one of " : "",
				       suspects ? suspects : "");
	}
	return g_string_free(out, FALSE);
}

/* One line of response times: "  NAME: P50 / P90 (N measured; HOW)", "-" for none. */
static void text_latency(GString *out, const char *name, const struct status_latency *l,
			 const char *how)
{
	g_autofree char *p50 = l->count ? status_format_age(l->p50) : g_strdup("-");
	g_autofree char *p90 = l->count ? status_format_age(l->p90) : g_strdup("-");

	g_string_append_printf(out, "  %s: %s / %s (%u measured; %s)\n", name, p50, p90,
			       l->count, how);
}

void status_format_text(GString *out, const struct status *s)
{
	g_string_append_printf(out, "Trees: %u\n", s->trees->len);
	for (guint i = 0; i < s->trees->len; i++) {
		const struct status_tree *st = s->trees->pdata[i];
		const struct tree_row *t = st->tree;
		g_autofree char *polled = status_format_time(t->last_poll);
		g_autofree char *age = t->last_poll ? status_format_age(s->now - t->last_poll)
						    : NULL;

		g_string_append_printf(out, "  %-20s %-13s polled %s%s%s%s%s%s\n", t->name,
				       db_policy_name(t->policy), polled, age ? " (" : "",
				       age ? age : "", age ? " ago)" : "",
				       t->last_error ? ": FAILED: " : "",
				       t->last_error ? t->last_error : "");
		for (guint j = 0; j < st->branches->len; j++) {
			const struct branch_row *b = st->branches->pdata[j];

			if (b->state == BRANCH_SKIPPED)
				g_string_append_printf(out, "    skipped %s: %s\n", b->name, b->reason);
		}
	}
	g_string_append_printf(out, "Queue: %" G_GINT64_FORMAT " commit%s to test\n",
			       s->queue_depth, s->queue_depth == 1 ? "" : "s");
	for (guint i = 0; i < s->pending->len; i++) {
		const struct test_row *r = s->pending->pdata[i];

		g_string_append_printf(out, "  %s/%s %.12s %s\n", r->tree, r->branch, r->commit,
				       r->summary);
	}
	if (s->queue_depth > (gint64)s->pending->len)
		g_string_append_printf(out, "  ... and %" G_GINT64_FORMAT " more\n",
				       s->queue_depth - (gint64)s->pending->len);
	g_string_append_printf(out, "Jobs: %" G_GINT64_FORMAT " queued", s->queued);
	if (s->waiting)
		g_string_append_printf(out, " (%" G_GINT64_FORMAT " waiting to retry)", s->waiting);
	g_string_append_printf(out, ", %" G_GINT64_FORMAT " running, %" G_GINT64_FORMAT " done\n",
			       s->running, s->done);
	if (s->oldest_queued) {
		g_autofree char *age = status_format_age(s->now - s->oldest_queued);

		g_string_append_printf(out, "  oldest queued %s ago\n", age);
	}
	for (guint i = 0; i < s->active->len; i++) {
		const struct job_row *j = s->active->pdata[i];
		g_autofree char *age = status_format_age(s->now - j->created);

		g_string_append_printf(out, "  %s %s %.12s %s: job %" G_GINT64_FORMAT ", %s, "
				       "queued %s ago\n", j->running ? "running" : "queued",
				       j->tree, j->commit, j->target, j->id,
				       db_job_kind_name(j->kind), age);
	}
	if (s->cluster) {
		guint running = 0;

		for (guint i = 0; i < s->cluster->len; i++)
			running += strcmp(((struct status_cluster_job *)s->cluster->pdata[i])->state,
					  "RUNNING") == 0;
		if (s->cluster_error)
			g_string_append_printf(out, "Cluster: Slurm does not answer: %s\n",
					       s->cluster_error);
		else
			g_string_append_printf(out, "Cluster: %u queued, %u running\n",
					       s->cluster->len - running, running);
	}
	for (guint i = 0; s->cluster && i < s->cluster->len; i++) {
		const struct status_cluster_job *j = s->cluster->pdata[i];
		g_autofree char *age = j->since ? status_format_age(s->now - j->since) : NULL;

		g_string_append_printf(out, "  slurm job %s %s: %s", j->id, j->name, j->state);
		if (j->node)
			g_string_append_printf(out, " on %s", j->node);
		if (j->reason)
			g_string_append_printf(out, " (%s)", j->reason);
		if (age)
			g_string_append_printf(out, ", since %s ago", age);
		g_string_append_c(out, '\n');
	}
	for (guint i = 0; i < s->retrying->len; i++) {
		const struct job_row *j = s->retrying->pdata[i];
		const struct job_backoff backoff = JOB_BACKOFF_INIT;
		g_autofree char *when = status_format_time(j->not_before);

		g_string_append_printf(out, "  retry %s %.12s %s: %u of %u attempts failed, "
				       "next try %s%s: %s\n", j->tree, j->commit, j->target,
				       j->failures, backoff.limit, j->not_before > s->now ? "at " : "",
				       j->not_before > s->now ? when : "now",
				       j->last_error ? j->last_error : "?");
	}
	for (guint i = 0; i < s->errors->len; i++) {
		const struct job_row *j = s->errors->pdata[i];

		g_string_append_printf(out, "  error %s %.12s %s: %s\n", j->tree, j->commit,
				       j->target, j->last_error ? j->last_error : "no cause recorded");
	}
	g_string_append_printf(out, "Findings: %u\n", s->findings->len);
	for (guint i = 0; i < s->findings->len; i++) {
		const struct finding_row *f = s->findings->pdata[i];

		g_string_append_printf(out, "  %s %.12s %s %s: %s [%s]", f->tree ? f->tree : "-",
				       f->culprit, f->target, db_finding_kind_name(f->kind, f->console),
				       f->title, f->fingerprint);
		/*
		 * Boot failures: the rate's posterior mean, from the bisection (rows
		 * with a head); older rows kept the lower bound they were bisected with.
		 */
		if (f->rate < 1.0)
			g_string_append_printf(out, " (shows in %s %.0f%% of boots)",
					       f->head ? "about" : ">=", 100.0 * f->rate);
		if (f->confidence < 0.9995 && f->state != FINDING_INCONCLUSIVE)
			g_string_append_printf(out, " (confidence %.3f)", f->confidence);
		if (f->also) {
			g_autofree char *targets = g_strdelimit(g_strdup(f->also), " ", ',');

			g_string_append_printf(out, " (also on %s)", targets);
		}
		if (f->state == FINDING_DUPLICATE)
			g_string_append_printf(out, " (duplicate of %" G_GINT64_FORMAT ")", f->dup_of);
		else if (f->state != FINDING_OPEN)
			g_string_append_printf(out, " (%s%s%.12s)", db_finding_state_name(f->state),
					       f->fixed_by ? " by " : "", f->fixed_by ? f->fixed_by : "");
		g_string_append_c(out, '\n');
	}
	g_string_append_printf(out, "Mail: %" G_GINT64_FORMAT " read, %u quarantined\n", s->mails,
			       s->quarantined->len);
	for (guint i = 0; i < s->quarantined->len; i++) {
		const struct mail_row *m = s->quarantined->pdata[i];

		g_string_append_printf(out, "  quarantined %" G_GINT64_FORMAT " <%s> from %s: %s\n",
				       m->id, m->message_id, m->source, m->reason ? m->reason : "?");
	}
	for (guint i = 0; i < s->sources->len; i++) {
		const struct source_row *r = s->sources->pdata[i];
		g_autofree char *when = status_format_time(r->last_read);
		g_autofree char *age = r->last_read ? status_format_age(s->now - r->last_read)
						    : NULL;
		g_autofree char *failed = status_format_time(r->failed);

		g_string_append_printf(out, "  source %s: read %s%s%s%s", r->source, when,
				       age ? " (" : "", age ? age : "", age ? " ago)" : "");
		if (r->failed)
			g_string_append_printf(out, "; FAILED at %s: %s", failed,
					       r->last_error ? r->last_error : "?");
		g_string_append_c(out, '\n');
	}
	g_string_append_printf(out, "Outbox: %" G_GINT64_FORMAT " queued", s->outbox.queued);
	if (s->outbox.oldest_queued) {
		g_autofree char *age = status_format_age(s->now - s->outbox.oldest_queued);

		g_string_append_printf(out, " (oldest %s ago)", age);
	}
	g_string_append_printf(out, ", %" G_GINT64_FORMAT " held, %" G_GINT64_FORMAT " sent, %"
			       G_GINT64_FORMAT " failed\n", s->outbox.held, s->outbox.sent,
			       s->outbox.failed);
	g_string_append_printf(out, "Response times, last %d days (p50 / p90):\n",
			       STATUS_LATENCY_DAYS);
	text_latency(out, "push to report", &s->push_report,
		     "from the poll that first saw the commit to the report sent");
	text_latency(out, "post to reply", &s->post_reply,
		     "from the ingest of a series' first mail to its first reply sent");
	g_string_append(out, "Recent branch changes:\n");
	for (guint i = 0; i < s->events->len; i++) {
		const struct head_event *e = s->events->pdata[i];
		g_autofree char *when = status_format_time(e->when);
		g_autofree char *to = status_short_id(e->new_head ? e->new_head : e->old_head);

		g_string_append_printf(out, "  %s %s/%s %s %s: %s", when, e->tree, e->branch,
				       db_head_change_name(e->change), to,
				       db_head_action_name(e->action));
		if (e->selected)
			g_string_append_printf(out, " %u", e->selected);
		g_string_append_printf(out, "%s%s%s\n", e->reason ? " (" : "",
				       e->reason ? e->reason : "", e->reason ? ")" : "");
	}
}

/*
 * Appends @node as JSON on one line, laid out as the scripts that read
 * it expect: ", " between items, ": " after a key, members in the order
 * they were added, doubles with four decimals. Strings, keys and the
 * other scalars are json-glib's.
 */
static void json_write(GString *out, JsonNode *node)
{
	switch (JSON_NODE_TYPE(node)) {
	case JSON_NODE_OBJECT: {
		JsonObject *o = json_node_get_object(node);
		g_autoptr(GList) members = json_object_get_members(o);

		g_string_append_c(out, '{');
		for (GList *l = members; l; l = l->next) {
			g_autoptr(JsonNode) key = json_node_init_string(json_node_alloc(), l->data);

			g_string_append(out, l == members ? "" : ", ");
			json_write(out, key);
			g_string_append(out, ": ");
			json_write(out, json_object_get_member(o, l->data));
		}
		g_string_append_c(out, '}');
		break;
	}
	case JSON_NODE_ARRAY: {
		JsonArray *a = json_node_get_array(node);

		g_string_append_c(out, '[');
		for (guint i = 0; i < json_array_get_length(a); i++) {
			g_string_append(out, i ? ", " : "");
			json_write(out, json_array_get_element(a, i));
		}
		g_string_append_c(out, ']');
		break;
	}
	case JSON_NODE_VALUE:
		if (json_node_get_value_type(node) == G_TYPE_DOUBLE) {
			char buf[G_ASCII_DTOSTR_BUF_SIZE];

			g_string_append(out, g_ascii_formatd(buf, sizeof(buf), "%.4f",
							     json_node_get_double(node)));
		} else {
			g_autofree char *text = json_to_string(node, FALSE);

			g_string_append(out, text);
		}
		break;
	case JSON_NODE_NULL:
		g_string_append(out, "null");
		break;
	}
}

void status_json_finish(GString *out, JsonBuilder *b)
{
	g_autoptr(JsonNode) root = json_builder_get_root(b);

	json_write(out, root);
	g_string_append_c(out, '\n');
}

void status_json_members(JsonBuilder *b, const char *types, ...)
{
	va_list ap;

	va_start(ap, types);
	for (const char *t = types; *t; t++) {
		const char *key = va_arg(ap, const char *);

		/* More letters than pairs: the caller's bug, shown here. */
		g_assert(key != NULL);
		json_builder_set_member_name(b, key);
		switch (*t) {
		case 'i':
			json_builder_add_int_value(b, va_arg(ap, gint64));
			break;
		case 'n':
			json_builder_add_int_value(b, va_arg(ap, int));
			break;
		case 'o': {
			gint64 id = va_arg(ap, gint64);

			if (id)
				json_builder_add_int_value(b, id);
			else
				json_builder_add_null_value(b);
			break;
		}
		case 'b':
			json_builder_add_boolean_value(b, va_arg(ap, int) != 0);
			break;
		case 't': {
			const char *text = va_arg(ap, const char *);

			if (text)
				json_builder_add_string_value(b, text);
			else
				json_builder_add_null_value(b);
			break;
		}
		case 'v': {
			char *const *list = va_arg(ap, char *const *);

			json_builder_begin_array(b);
			for (size_t k = 0; list && list[k]; k++)
				json_builder_add_string_value(b, list[k]);
			json_builder_end_array(b);
			break;
		}
		case 'f':
			json_builder_add_double_value(b, va_arg(ap, double));
			break;
		case 'a': {
			gint64 now = va_arg(ap, gint64);
			gint64 when = va_arg(ap, gint64);

			if (when)
				json_builder_add_int_value(b, MAX(now - when, 0));
			else
				json_builder_add_null_value(b);
			break;
		}
		default:
			g_assert_not_reached();
		}
	}
	/* Fewer letters than pairs: the next argument is a key, not the end. */
	g_assert(va_arg(ap, const char *) == NULL);
	va_end(ap);
}

void status_json_array(JsonBuilder *b, const char *key, const GPtrArray *rows,
		       status_json_row_fn fn, const void *data)
{
	if (key)
		json_builder_set_member_name(b, key);
	json_builder_begin_array(b);
	for (guint i = 0; rows && i < rows->len; i++) {
		json_builder_begin_object(b);
		fn(b, rows->pdata[i], data);
		json_builder_end_object(b);
	}
	json_builder_end_array(b);
}

static void json_job(JsonBuilder *b, const void *row, const void *data)
{
	const struct job_row *j = row;

	(void)data;
	status_json_members(b, "itttiiitt", "id", j->id, "tree", j->tree, "commit", j->commit,
			    "target", j->target, "attempts", (gint64)j->attempts,
			    "failures", (gint64)j->failures,
			    "next_try", j->result != JOB_RESULT_NONE ? (gint64)0 : j->not_before,
			    "result", db_job_result_name(j->result), "last_error", j->last_error, NULL);
}

static void json_step(JsonBuilder *b, const void *row, const void *data)
{
	const struct finding_step *st = row;

	(void)data;
	status_json_members(b, "ttttii", "role", bisect_role_name(st->role), "commit", st->commit,
			    "tested", st->tested, "result", bisect_result_name(st->result),
			    "runs", (gint64)st->runs, "failures", (gint64)st->failures, NULL);
}

static void json_finding(JsonBuilder *b, const void *row, const void *data)
{
	const struct finding_row *f = row;
	g_autofree char *reproduce = status_finding_reproduce(f);
	g_autofree char *details = status_finding_details(f);
	g_autofree char *log = status_finding_log(f);
	g_auto(GStrv) also = f->also ? g_strsplit(f->also, " ", -1) : NULL;

	(void)data;
	status_json_members(b, "itttttttttttttffiivotv", "id", f->id, "tree", f->tree,
			    "culprit", f->culprit, "target", f->target,
			    "kind", db_finding_kind_name(f->kind, f->console),
			    "fingerprint", f->fingerprint, "title", f->title,
			    "state", db_finding_state_name(f->state), "reproduce", reproduce,
			    "fixed_by", f->fixed_by, "details", details, "bisect_log", log,
			    "parent", f->parent, "head", f->head, "confidence", f->confidence,
			    "rate", f->rate, "failures", (gint64)f->failures, "runs", (gint64)f->runs,
			    "suspects", f->suspects, "dup_of", f->dup_of, "fix_subject",
			    f->fix_subject, "also_on", also, NULL);
	status_json_array(b, "steps", f->steps, json_step, NULL);
}

/* Adds member @key: {"from": FROM, "count": N, "p50": S, "p90": S}, null percentiles when N is 0. */
static void json_latency(JsonBuilder *b, const char *key, const struct status_latency *l,
			 const char *from)
{
	json_builder_set_member_name(b, key);
	json_builder_begin_object(b);
	status_json_members(b, "ti", "from", from, "count", (gint64)l->count, NULL);
	for (int k = 0; k < 2; k++) {
		json_builder_set_member_name(b, k ? "p90" : "p50");
		if (l->count)
			json_builder_add_int_value(b, k ? l->p90 : l->p50);
		else
			json_builder_add_null_value(b);
	}
	json_builder_end_object(b);
}

static void json_tree(JsonBuilder *b, const void *row, const void *data)
{
	const struct tree_row *t = ((const struct status_tree *)row)->tree;

	(void)data;
	status_json_members(b, "ttvvvbbit", "name", t->name, "policy", db_policy_name(t->policy),
			    "lists", t->lists, "cc", t->recipients, "prefixes", t->prefixes,
			    "private", (int)t->private, "mail_clean", (int)t->mail_clean,
			    "last_poll", t->last_poll, "error", t->last_error, NULL);
}

static void json_quarantined(JsonBuilder *b, const void *row, const void *data)
{
	const struct mail_row *m = row;

	(void)data;
	status_json_members(b, "itttii", "id", m->id, "message_id", m->message_id,
			    "source", m->source, "reason", m->reason, "size", m->size,
			    "received", m->received, NULL);
}

static void json_active(JsonBuilder *b, const void *row, const void *data)
{
	const struct job_row *j = row;
	const struct status *s = data;

	status_json_members(b, "itttttia", "id", j->id, "state", j->running ? "running" : "queued",
			    "kind", db_job_kind_name(j->kind), "tree", j->tree, "commit", j->commit,
			    "target", j->target, "created", j->created, "age", s->now, j->created, NULL);
}

static void json_cluster(JsonBuilder *b, const void *row, const void *data)
{
	const struct status_cluster_job *j = row;
	const struct status *s = data;

	status_json_members(b, "tttttia", "id", j->id, "name", j->name, "state", j->state,
			    "node", j->node, "reason", j->reason, "since", j->since,
			    "age", s->now, j->since, NULL);
}

static void json_source(JsonBuilder *b, const void *row, const void *data)
{
	const struct source_row *r = row;
	const struct status *s = data;

	status_json_members(b, "tiait", "source", r->source, "last_read", r->last_read,
			    "last_read_age", s->now, r->last_read, "failed", r->failed,
			    "error", r->last_error, NULL);
}

void status_format_json(GString *out, const struct status *s)
{
	g_autoptr(JsonBuilder) b = json_builder_new();

	json_builder_begin_object(b);
	status_json_array(b, "trees", s->trees, json_tree, NULL);
	json_builder_set_member_name(b, "jobs");
	json_builder_begin_object(b);
	status_json_members(b, "iii", "queued", s->queued, "running", s->running, "done", s->done, NULL);
	json_builder_end_object(b);
	status_json_array(b, "retrying", s->retrying, json_job, NULL);
	status_json_array(b, "errors", s->errors, json_job, NULL);
	status_json_array(b, "findings", s->findings, json_finding, NULL);
	status_json_members(b, "i", "mails", s->mails, NULL);
	status_json_array(b, "quarantined", s->quarantined, json_quarantined, NULL);
	status_json_members(b, "ia", "now", s->now, "oldest_queued_age", s->now, s->oldest_queued, NULL);
	status_json_array(b, "active_jobs", s->active, json_active, s);
	status_json_array(b, "mail_sources", s->sources, json_source, s);
	if (s->cluster) {
		status_json_array(b, "cluster", s->cluster, json_cluster, s);
		status_json_members(b, "t", "cluster_error", s->cluster_error, NULL);
	}
	json_builder_set_member_name(b, "outbox");
	json_builder_begin_object(b);
	status_json_members(b, "iiiia", "queued", s->outbox.queued, "held", s->outbox.held,
			    "sent", s->outbox.sent, "failed", s->outbox.failed,
			    "oldest_queued_age", s->now, s->outbox.oldest_queued, NULL);
	json_builder_end_object(b);
	json_builder_set_member_name(b, "response_times");
	json_builder_begin_object(b);
	status_json_members(b, "n", "days", STATUS_LATENCY_DAYS, NULL);
	json_latency(b, "push_to_report", &s->push_report, "first_poll");
	json_latency(b, "post_to_reply", &s->post_reply, "ingest");
	json_builder_end_object(b);
	json_builder_end_object(b);
	status_json_finish(out, b);
}
