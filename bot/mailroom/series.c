/*
 * Posted patch series: assembly, base selection, tests and replies. See
 * series.h.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <string.h>

#include "bot/bot.h"
#include "bot/mailroom/commands.h"
#include "bot/mailroom/inbox.h"
#include "bot/mailroom/outbox.h"
#include "bot/mailroom/policy.h"
#include "bot/mailroom/render.h"
#include "bot/mailroom/report.h"
#include "bot/mailroom/series.h"
#include "bot/mailroom/template.h"
#include "bot/trees.h"
#include "engine/build.h"
#include "mail/address.h"
#include "mail/patchmail.h"


/* Mails looked at per call, and series started per call. */
/* Branch heads tried as a base, at most, per series. */
#define BASES_MAX 16
/*
 * How far apart, at most, two series of one sender with the same title
 * and no thread in common are taken as versions of one change: a v2
 * follows its v1 within days or weeks, while a title such as "fix typo"
 * or "update MAINTAINERS" comes back months later as a change of its own.
 */
#define TITLE_WINDOW (30 * 24 * 3600)

/* Mail @id as parsed when it was stored (or NULL with @error). */
static struct patchmail *mail_parse(struct db *db, const struct config *config, gint64 id,
				    GError **error)
{
	return inbox_mail(db, config, id, false, error);
}

/* The Message-IDs that place @m in a thread: its own, its In-Reply-To, its References. */
static char **thread_ids(const struct patchmail *m)
{
	g_autoptr(GStrvBuilder) b = g_strv_builder_new();

	g_strv_builder_add(b, m->message_id);
	if (m->in_reply_to)
		g_strv_builder_add(b, m->in_reply_to);
	for (guint i = 0; m->references && i < m->references->len; i++)
		g_strv_builder_add(b, m->references->pdata[i]);
	return g_strv_builder_end(b);
}

/*
 * Supersedes the older versions of series @s that are not tested yet, and
 * @s itself when a newer version came first. A RESEND supersedes the
 * same version too; a RESEND of a series tested already is not tested
 * again. An older version is the same sender's, of the same title within
 * TITLE_WINDOW, or of as many patches in the same thread: an unversioned
 * follow-up patch posted in reply to a v3, or a title used again months
 * later, is a series of its own.
 */
static bool supersede_older(struct db *db, struct series_row *s, GError **error)
{
	guint below = s->resend ? s->version + 1 : s->version;
	g_autoptr(GArray) older = db_series_older(db, s->id, s->sender, s->title, below, false,
						  TITLE_WINDOW, error);
	g_autoptr(GArray) newer = older ? db_series_older(db, s->id, s->sender, s->title,
							  s->version, true, TITLE_WINDOW, error)
					: NULL;

	if (!newer)
		return false;
	if (newer->len && s->state == SERIES_WAITING) {
		s->state = SERIES_SUPERSEDED;
		s->superseded_by = g_array_index(newer, gint64, newer->len - 1);
		g_free(s->note);
		s->note = g_strdup_printf("superseded by series %" G_GINT64_FORMAT
					  ", a newer version that came first", s->superseded_by);
		g_message("series %" G_GINT64_FORMAT " (v%u): %s", s->id, s->version, s->note);
		return db_series_update(db, s, error);
	}
	for (guint i = 0; i < older->len; i++) {
		zd_autoptr(series_row) o = db_series_get(db, g_array_index(older, gint64, i), error);

		if (!o)
			return false;
		if (s->resend && o->version == s->version && o->state == SERIES_TESTED &&
		    s->state == SERIES_WAITING) {
			s->state = SERIES_IGNORED;
			g_free(s->note);
			s->note = g_strdup_printf("a resend of series %" G_GINT64_FORMAT
						  ", tested already", o->id);
			g_message("series %" G_GINT64_FORMAT ": %s", s->id, s->note);
			if (!db_series_update(db, s, error))
				return false;
			continue;
		}
		if (o->state != SERIES_WAITING && o->state != SERIES_TESTING)
			continue;
		o->state = SERIES_SUPERSEDED;
		o->superseded_by = s->id;
		g_free(o->note);
		o->note = g_strdup_printf("superseded by %s%u (series %" G_GINT64_FORMAT ")",
					  s->resend && s->version == o->version ? "a resend of v" : "v",
					  s->version, s->id);
		g_message("series %" G_GINT64_FORMAT " (v%u): %s", o->id, o->version, o->note);
		if (!db_series_update(db, o, error))
			return false;
	}
	return true;
}

/*
 * The series of @version (0: any) and @total in the thread of @ids: the
 * sender's own first; else anyone's, as b4 groups a series by its thread,
 * for a list that rewrites From ("Jane Doe via linux-foo"
 * <linux-foo@lists.example.org>, DMARC's munging) or an archive that
 * rewrites addresses (gmane) gives one series' parts other senders. The
 * sender still decides who supersedes a series: see supersede_older().
 */
static bool find_series(struct db *db, const char *sender, guint version, guint total,
			const char *const *ids, gint64 *id, GError **error)
{
	if (!db_series_find(db, sender, version, total, ids, id, error))
		return false;
	return *id || db_series_find_thread(db, version, total, ids, id, error);
}

/* The part numbered @n of @s, or NULL. */
/*
 * The version of a part whose subject gives none: that of the series of
 * the cover letter it answers, when that cover letter said one (b4 does
 * the same: "[PATCH 1/2]" in reply to "[PATCH v2 0/2]" is v2's); else 1.
 */
static bool implied_version(struct db *db, const char *sender, guint total, char **ids,
			    guint *version, GError **error)
{
	zd_autoptr(series_row) found = NULL;
	const struct series_part *cover;
	gint64 id = 0;

	*version = 1;
	/* ids[0] is the mail's own: only what it answers counts. */
	if (!ids[0])
		return true;
	if (!find_series(db, sender, 0, total, (const char *const *)ids + 1, &id, error))
		return false;
	if (!id)
		return true;
	found = db_series_get(db, id, error);
	if (!found)
		return false;
	cover = series_row_part(found, 0);
	if (!found->versioned || !cover)
		return true;
	for (char **i = ids + 1; *i; i++) {
		if (strcmp(*i, cover->message_id) == 0) {
			*version = found->version;
			return true;
		}
	}
	return true;
}

/*
 * A versioned cover letter whose parts came first, unversioned and
 * answering it: their series is the cover letter's, and takes its
 * version. Sets *@id to that series (0: none).
 */
static bool adopt_parts(struct db *db, const char *sender, const struct patchmail *m,
			gint64 *id, GError **error)
{
	const char *own[] = { m->message_id, NULL };
	zd_autoptr(series_row) found = NULL;

	*id = 0;
	if (!find_series(db, sender, 0, m->tags.total, own, id, error))
		return false;
	if (!*id)
		return true;
	found = db_series_get(db, *id, error);
	if (!found)
		return false;
	if (found->versioned || found->state != SERIES_WAITING || series_row_part(found, 0)) {
		*id = 0;
		return true;
	}
	g_message("series %" G_GINT64_FORMAT ": its parts answer a v%u cover letter: v%u now",
		  found->id, m->tags.version, m->tags.version);
	found->version = m->tags.version;
	found->versioned = true;
	return db_series_update(db, found, error);
}

/* Mail @mail joins its series, in the caller's transaction. */
static bool assemble_one(struct db *db, const struct mail_row *mail, const struct patchmail *m,
			 gint64 now, GError **error)
{
	g_auto(GStrv) ids = thread_ids(m);
	g_autofree char *sender = address_key(m->from);
	zd_autoptr(series_row) s = NULL;
	guint n = m->kind == PATCHMAIL_COVER ? 0 : m->tags.n;
	guint total = m->tags.total;
	guint version = m->tags.version;
	gint64 id = 0, follows = 0;
	bool added = false, changed = false;

	if (total == 0)
		return true;
	if (!m->tags.versioned && !implied_version(db, sender, total, ids, &version, error))
		return false;
	if (!find_series(db, sender, version, total, (const char *const *)ids, &id, error))
		return false;
	if (!id && n == 0 && m->tags.versioned && version > 1 &&
	    !adopt_parts(db, sender, m, &id, error))
		return false;
	/*
	 * A series already started, or holding another mail as this part, is
	 * not this mail's: a resend into the same thread (or a Message-ID
	 * made the same second) starts a series of its own. But a cover
	 * letter that comes after its series started is that series' (its
	 * base-commit: came too late, the test is not run again); and a part
	 * past the count ("[PATCH 3/2]") that comes after its series started
	 * is a follow-up to it, recorded and not tested: on the series' base
	 * alone it could only fail to apply.
	 */
	if (id) {
		zd_autoptr(series_row) found = db_series_get(db, id, error);
		const struct series_part *had;
		bool started, same;

		if (!found)
			return false;
		had = series_row_part(found, n);
		if (had && strcmp(had->message_id, m->message_id) == 0 && had->mail_id != mail->id) {
			g_message("series %" G_GINT64_FORMAT ": part %u/%u <%s> came again with "
				  "other content; the first kept", id, n, total, m->message_id);
			return true;
		}
		started = found->state != SERIES_WAITING;
		same = !had && found->resend == m->tags.resend;
		if (started && same && n > total) {
			follows = id;
			id = 0;
		} else if (!same || (started && n != 0)) {
			id = 0;
		}
	}
	if (!id) {
		g_autofree char *note = follows
			? g_strdup_printf("a follow-up to series %" G_GINT64_FORMAT " (patch %u of "
					  "%u), which had started before it came: not tested",
					  follows, n, total)
			: NULL;
		struct series_row row = {
			.sender = sender, .title = follows ? m->tags.title : NULL,
			.version = version, .versioned = version > 1, .resend = m->tags.resend,
			.total = total, .state = follows ? SERIES_IGNORED : SERIES_WAITING,
			.created = now, .last_part = now, .note = note,
		};

		if (!db_series_add(db, &row, error))
			return false;
		id = row.id;
		if (follows)
			g_message("series %" G_GINT64_FORMAT ": <%s> is %s", id, m->message_id, note);
		else
			g_message("series %" G_GINT64_FORMAT ": new, %sv%u of %u patch%s from %s", id,
				  row.resend ? "a resend of " : "", row.version, total,
				  total == 1 ? "" : "es", sender);
	}
	if (!db_series_add_ids(db, id, (const char *const *)ids, error) ||
	    !db_series_add_part(db, id, n, mail->id, m->message_id, now, &added, error))
		return false;
	if (follows)
		return true;
	s = db_series_get(db, id, error);
	if (!s)
		return false;
	if (!added) {
		g_message("series %" G_GINT64_FORMAT ": part %u/%u <%s> came twice; the first kept",
			  id, n, total, m->message_id);
		return true;
	}
	if (s->state != SERIES_WAITING)
		g_message("series %" G_GINT64_FORMAT ": part %u/%u <%s> came after the series was %s",
			  id, n, total, m->message_id, db_series_state_name(s->state));
	/* The cover letter's title names the series; else patch 1's. */
	if (n == 0 || (n == 1 && !s->title)) {
		g_free(s->title);
		s->title = g_strdup(m->tags.title);
		changed = true;
	}
	if (m->tags.versioned && !s->versioned) {
		s->versioned = true;
		changed = true;
	}
	if (changed && !db_series_update(db, s, error))
		return false;
	return supersede_older(db, s, error);
}

bool series_take(const struct bot *c, const struct mail_row *mail, const struct patchmail *m,
		 gint64 now, GError **error)
{
	if (!m->from || (m->kind != PATCHMAIL_PATCH && m->kind != PATCHMAIL_COVER))
		return true;
	return assemble_one(c->db, mail, m, now, error);
}

/*
 * How many patches @s has to have: its count, or more when a part past
 * it came while it waited ("[PATCH 3/2]" in its thread), as b4 counts.
 */
static guint series_span(const struct series_row *s)
{
	guint span = s->total;

	for (guint i = 0; i < s->parts->len; i++)
		span = MAX(span, ((const struct series_part *)s->parts->pdata[i])->n);
	return span;
}

/* Whether @s has patches 1..series_span(); *@cover, whether its cover letter. */
static bool has_all_patches(const struct series_row *s, bool *cover)
{
	guint have = 0;

	*cover = false;
	for (guint i = 0; i < s->parts->len; i++) {
		const struct series_part *p = s->parts->pdata[i];

		/* The store keeps one part a number: these count distinct numbers. */
		if (p->n == 0)
			*cover = true;
		else
			have++;
	}
	return have == series_span(s);
}

/*
 * Whether the patches of @s are numbered n/N, "[PATCH 1/1]" too: then
 * `git format-patch --cover-letter` may have written a cover letter,
 * which alone carries the base-commit: trailer, and the series waits for
 * it. An unnumbered "[PATCH]" comes alone.
 */
static bool numbered(const struct series_row *s)
{
	if (s->total > 1)
		return true;
	for (guint i = 0; i < s->parts->len; i++) {
		const struct series_part *p = s->parts->pdata[i];
		struct patchmail_subject tags;
		bool counted;

		if (p->n == 0)
			return true;
		patchmail_subject_parse(&tags, p->subject);
		counted = tags.counted;
		patchmail_subject_release(&tags);
		if (counted)
			return true;
	}
	return false;
}

/* A base to try. */
struct candidate {
	char *tree;
	gint64 tree_id;
	char *branch;
	char *commit;
	char *how;
	gint64 updated;
};

static void candidate_free(struct candidate *c)
{
	if (!c)
		return;
	g_free(c->tree);
	g_free(c->branch);
	g_free(c->commit);
	g_free(c->how);
	g_free(c);
}

/* "netdev.vger.kernel.org" for "netdev@vger.kernel.org": how List-Id names a list. */
static char *list_id_of(const char *address)
{
	g_autofree char *key = address_key(address);
	char *at = key ? strchr(key, '@') : NULL;

	if (at)
		*at = '.';
	return g_steal_pointer(&key);
}

/* Whether tree @t is for mail @m: by its lists, or its subject prefixes. Sets *@how. */
static bool tree_matches(const struct tree_row *t, const struct patchmail *m, char **how)
{
	for (char **l = t->lists; l && *l; l++) {
		g_autofree char *key = address_key(*l);
		g_autofree char *id = list_id_of(*l);

		if (m->list_id && id && strcmp(m->list_id, id) == 0) {
			*how = g_strdup_printf("list %s", key);
			return true;
		}
		for (GPtrArray *a = m->to; a; a = a == m->to ? m->cc : NULL) {
			for (guint i = 0; i < a->len; i++) {
				g_autofree char *k = address_key(a->pdata[i]);

				if (k && key && strcmp(k, key) == 0) {
					*how = g_strdup_printf("list %s", key);
					return true;
				}
			}
		}
	}
	for (char **p = t->prefixes; p && *p; p++) {
		for (guint i = 0; m->tags.prefixes && i < m->tags.prefixes->len; i++) {
			if (g_ascii_strcasecmp(m->tags.prefixes->pdata[i], *p) == 0) {
				*how = g_strdup_printf("prefix %s", *p);
				return true;
			}
		}
	}
	return false;
}

static int by_updated_desc(gconstpointer a, gconstpointer b)
{
	const struct candidate *x = *(const struct candidate *const *)a;
	const struct candidate *y = *(const struct candidate *const *)b;

	return x->updated < y->updated ? 1 : x->updated > y->updated ? -1 : 0;
}

/*
 * The bases to try for a series whose first mail is @first (the cover
 * letter, else patch 1), in order: the base-commit: trailer's commit,
 * then the matching trees' branch heads, newest first. A trailer's
 * commit the store lacks is recorded as rejected at once. A series mailed
 * to zeroday itself that no tree's list or prefix matches (a developer
 * asking "#zeroday test") is for the public tree whose branches hold its
 * trailer's commit. Sets *@matched when a tree's list or prefix matches,
 * whether or not it has a polled branch yet.
 */
static GPtrArray *candidates_of(const struct bot *c, const struct series_row *s,
				const struct patchmail *first, const char *base_commit,
				bool *matched, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)candidate_free);
	g_autoptr(GPtrArray) heads = g_ptr_array_new_with_free_func((GDestroyNotify)candidate_free);
	g_autoptr(GPtrArray) trees = db_tree_list(c->db, error);
	struct candidate *from_trailer = NULL;
	bool direct;

	*matched = false;
	if (!trees)
		return NULL;
	for (guint i = 0; i < trees->len; i++) {
		const struct tree_row *t = trees->pdata[i];
		g_autofree char *how = NULL;
		g_autoptr(GPtrArray) branches = NULL;

		if (!tree_matches(t, first, &how))
			continue;
		*matched = true;
		branches = db_branch_list(c->db, t->id, error);
		if (!branches)
			return NULL;
		for (guint j = 0; j < branches->len; j++) {
			const struct branch_row *b = branches->pdata[j];
			struct candidate *cand;

			if (b->state != BRANCH_TESTED)
				continue;
			cand = g_new0(struct candidate, 1);
			cand->tree = g_strdup(t->name);
			cand->tree_id = t->id;
			cand->branch = g_strdup(b->name);
			cand->commit = g_strdup(b->head);
			cand->how = g_strdup(how);
			cand->updated = b->updated;
			g_ptr_array_add(heads, cand);
		}
		/* The trailer's commit is built in the first matching tree that holds it. */
		if (base_commit && !from_trailer && repo_has_commit(c->repo, base_commit)) {
			from_trailer = g_new0(struct candidate, 1);
			from_trailer->tree = g_strdup(t->name);
			from_trailer->tree_id = t->id;
			from_trailer->commit = g_strdup(base_commit);
			from_trailer->how = g_strdup("base-commit");
		}
	}
	/* Mailed to zeroday itself, for no tree: the public tree that holds the trailer's commit. */
	direct = base_commit && !*matched && patchmail_addressed_to(first, c->config->mail_address) &&
		 repo_has_commit(c->repo, base_commit);
	for (guint i = 0; direct && !from_trailer && i < trees->len; i++) {
		const struct tree_row *t = trees->pdata[i];
		bool holds = false;

		if (t->private)
			continue;
		if (!trees_holds_commit(c->db, c->repo, t, base_commit, &holds, error))
			return NULL;
		if (!holds)
			continue;
		from_trailer = g_new0(struct candidate, 1);
		from_trailer->tree = g_strdup(t->name);
		from_trailer->tree_id = t->id;
		from_trailer->commit = g_strdup(base_commit);
		from_trailer->how = g_strdup("base-commit");
	}
	if (base_commit && !from_trailer) {
		struct series_base b = {
			.commit = (char *)base_commit, .how = (char *)"base-commit",
			.reason = (char *)(repo_has_commit(c->repo, base_commit)
				  ? "in none of the trees this series is for"
				  : "not in any subscribed tree"),
		};

		if (!db_series_base_add(c->db, s->id, &b, error))
			return NULL;
	}
	if (from_trailer)
		g_ptr_array_add(out, from_trailer);
	g_ptr_array_sort(heads, by_updated_desc);
	for (guint i = 0; i < heads->len && out->len < BASES_MAX; i++) {
		struct candidate *h = heads->pdata[i];

		if (from_trailer && strcmp(h->commit, from_trailer->commit) == 0)
			continue;
		g_ptr_array_add(out, g_steal_pointer(&heads->pdata[i]));
	}
	return g_steal_pointer(&out);
}

/* The build targets of tree @tree_id. */
static char **tree_targets(const struct bot *c, const char *tree, GError **error)
{
	zd_autoptr(tree_row) t = db_tree_get(c->db, tree, error);

	if (!t)
		return NULL;
	return g_strdupv(t->targets && t->targets[0] ? t->targets : c->config->build_targets);
}


/*
 * A reply on mail @mail_id of @s: Re: its subject, In-Reply-To it,
 * References its References and it; To its sender, Cc its To and Cc (the
 * lists and people it went to), the archive's list and the lists of the
 * base's tree (unless private), never the bot itself, each once, at most
 * [mail] cc-max in all. Fills the values every series template has.
 */
static bool reply_on(const struct bot *c, const struct series_row *s, gint64 mail_id,
		     struct reply *r, struct template_values *v, GError **error)
{
	zd_autoptr(patchmail) m = mail_parse(c->db, c->config, mail_id, error);
	g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	g_autofree char *bot = address_key(c->config->mail_address);
	zd_autoptr(tree_row) tree = NULL;
	guint count = 0;

	if (!m)
		return false;
	/* The base's tree's lists hear of it too: a series may have reached them by Bcc. */
	if (s->tree && !(tree = db_tree_get(c->db, s->tree, error)))
		return false;
	reply_thread(r, m->message_id, m->in_reply_to,
		     m->references ? (char **)m->references->pdata : NULL,
		     m->references ? m->references->len : 0);
	g_hash_table_add(seen, g_strdup(bot));
	for (int pass = 0; pass < 5; pass++) {
		const char *archive = pass == 1 ? policy_archive_list(c->config, tree) : NULL;
		GPtrArray *from = pass == 2 ? m->to : pass == 3 ? m->cc : NULL;
		char **lists = pass == 4 && tree && !tree->private ? tree->lists : NULL;
		guint len = pass == 0 || archive ? 1 : from ? from->len
							 : lists ? g_strv_length(lists) : 0;

		for (guint i = 0; i < len && count < c->config->mail_cc_max; i++) {
			const char *a = pass == 0 ? m->from : archive ? archive
					: from ? from->pdata[i] : lists[i];
			char *key = a ? address_key(a) : NULL;

			if (!key || !g_hash_table_add(seen, key))
				continue;
			g_ptr_array_add(pass == 0 ? r->to : r->cc, g_strdup(a));
			count++;
		}
	}
	template_values_set(v, "bot_name", c->config->mail_name);
	template_values_set(v, "bot_address", c->config->mail_address);
	template_values_set(v, "subject", m->subject);
	template_values_set(v, "title", s->title ? s->title : m->tags.title);
	template_values_printf(v, "version", "%u", s->version);
	template_values_printf(v, "total", "%u", s->total);
	template_values_printf(v, "patch_count", "%u patch%s", s->total, s->total == 1 ? "" : "es");
	template_values_set(v, "sender", s->sender);
	template_values_set(v, "message_id", m->message_id);
	template_values_printf(v, "reported_by", "%s <%s>", c->config->mail_name,
			       c->config->mail_address);
	return true;
}

/* The mail a series-wide reply goes on: the cover letter, else patch 1. */
static gint64 series_head_mail(const struct series_row *s)
{
	const struct series_part *p = series_row_part(s, 0);

	if (!p)
		p = series_row_part(s, 1);
	return p ? p->mail_id : 0;
}

/* Renders template @name into @r and queues it, in the caller's transaction. */
static bool queue_series_mail(const struct bot *c, const struct series_row *s,
			      const char *name, struct reply *r, struct template_values *v,
			      gint64 now, GError **error)
{
	g_autoptr(GError) cause = NULL;
	g_autofree char *tag = g_strdup_printf("s%" G_GINT64_FORMAT, s->id);
	zd_autoptr(tree_row) tree = NULL;
	g_autofree char *closes = NULL;

	if (s->tree && !(tree = db_tree_get(c->db, s->tree, error)))
		return false;
	/* Closes: names this reply in the archive, as a report's does. */
	r->message_id = outbox_message_id(c->config, tag);
	closes = policy_closes(c->config, tree, r->message_id);
	template_values_set(v, "closes", closes);
	render_mail(r, c->config, name, v, &cause);
	return outbox_queue_reply(c, OUTBOX_SERIES, r, cause, tag, now, NULL, error);
}

/* The "applies to no base" reply, in the caller's transaction. */
static bool queue_no_base(const struct bot *c, gint64 series_id, gint64 now,
			  GError **error)
{
	zd_autoptr(series_row) s = db_series_get(c->db, series_id, error);
	zd_autoptr(template_values) v = template_values_new();
	struct reply r;
	bool ok = false;
	bool claimed = false;

	if (!s || !commands_series_claimed(c, s->id, now, &claimed, error))
		return false;
	if (claimed)
		return true;
	reply_init(&r);
	if (!reply_on(c, s, series_head_mail(s), &r, v, error))
		goto out;
	for (guint i = 0; i < s->bases->len; i++) {
		const struct series_base *b = s->bases->pdata[i];
		struct template_values *item = template_values_add(v, "bases");
		g_autofree char *what = g_strdup_printf(
			"%s%s%s%s%.12s (%s)", b->tree ? b->tree : "", b->branch ? "/" : "",
			b->branch ? b->branch : "", b->tree ? " " : "", b->commit ? b->commit : "?",
			b->how);

		template_values_set(item, "base", what);
		template_values_set(item, "reason", b->reason ? b->reason : "applied");
	}
	ok = queue_series_mail(c, s, "series-no-base", &r, v, now, error);
out:
	reply_release(&r);
	return ok;
}

/* The patches of @s, parsed, by n (index n - 1). */
static GPtrArray *series_patches(const struct bot *c, const struct series_row *s,
				 GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)patchmail_free);

	for (guint n = 1; n <= s->total; n++) {
		const struct series_part *p = series_row_part(s, n);
		struct patchmail *m = p ? mail_parse(c->db, c->config, p->mail_id, error) : NULL;

		if (!m)
			return NULL;
		g_ptr_array_add(out, m);
	}
	return g_steal_pointer(&out);
}

/*
 * The commit's first line from a patch mail (caller frees): the in-body
 * Subject:'s title, its [PATCH] tags left out as `git am` does, else the
 * subject's title.
 */
static char *patch_title(const struct patchmail *m)
{
	g_autofree char *title = m->body_subject ? patchmail_subject_title(m->body_subject) : NULL;

	return title && *title ? g_steal_pointer(&title) : g_strdup(m->tags.title);
}

/*
 * Splits a patch's author, "Name <addr>" or "addr" as patchmail gives it,
 * into the name (quotes removed; may be "") and the address, as a commit
 * keeps them (caller frees both).
 */
static void split_author(const char *author, char **name, char **email)
{
	const char *lt = author ? strrchr(author, '<') : NULL;
	size_t len;

	if (!lt) {
		*name = g_strdup("");
		*email = g_strdup(author ? author : "");
		return;
	}
	*name = g_strstrip(g_strndup(author, (gsize)(lt - author)));
	*email = g_strndup(lt + 1, strcspn(lt + 1, ">"));
	len = strlen(*name);
	if (len >= 2 && (*name)[0] == '"' && (*name)[len - 1] == '"') {
		memmove(*name, *name + 1, len - 2);
		(*name)[len - 2] = '\0';
	}
}

/* What apply_somewhere() found. */
enum applied {
	APPLIED_NOWHERE = -1,  /* no candidate took the whole series */
	APPLIED_FAILED = -2,   /* the store failed: @error */
	APPLIED_LATER = -3,    /* the object store failed: try again later, @error */
};

/*
 * Tries the candidates in order until the whole series applies to one;
 * records each try with why it was rejected. Returns the index of the
 * winner, its commits in *@commits, or an enum applied. A base the store
 * lacks is a rejected base; any other failure of the object store is no
 * verdict on the series (APPLIED_LATER).
 */
static int apply_somewhere(const struct bot *c, const struct series_row *s,
			   GPtrArray *patches, GPtrArray *cands, char ***commits, gint64 now,
			   GError **error)
{
	g_autofree struct repo_patch *rp = g_new0(struct repo_patch, patches->len);
	g_autofree char *committer = address_key(c->config->mail_address);
	g_autoptr(GPtrArray) keep = g_ptr_array_new_with_free_func(g_free);

	for (guint i = 0; i < patches->len; i++) {
		const struct patchmail *m = patches->pdata[i];
		char *name, *email, *title = patch_title(m);

		split_author(m->author ? m->author : m->from, &name, &email);
		g_ptr_array_add(keep, name);
		g_ptr_array_add(keep, email);
		g_ptr_array_add(keep, title);
		rp[i] = (struct repo_patch){
			.diff = m->diff, .subject = title,
			.message = m->commit_message ? m->commit_message : "",
			.author_name = name, .author_email = email,
			.author_time = m->body_date ? m->body_date : m->date,
		};
	}
	for (guint i = 0; i < cands->len; i++) {
		const struct candidate *cand = cands->pdata[i];
		g_autoptr(GError) local = NULL;
		g_autofree char *why = NULL;
		g_autofree char *reason = NULL;
		g_auto(GStrv) made = NULL;
		enum repo_apply_failure failure = REPO_APPLY_OK;
		struct series_base b = {
			.tree = cand->tree, .branch = cand->branch, .commit = cand->commit,
			.how = cand->how,
		};
		int applied = repo_apply_series(c->repo, cand->commit, rp, patches->len,
						c->config->mail_name, committer, now, &made,
						&failure, &why, &local);

		if (applied < 0 && !g_error_matches(local, ENGINE_ERROR, ENGINE_ERROR_NOT_FOUND)) {
			g_propagate_error(error, g_steal_pointer(&local));
			return APPLIED_LATER;
		}
		if (applied < 0)
			reason = g_strdup(local->message);
		else if ((guint)applied < patches->len)
			reason = g_strdup_printf("patch %d/%u %s: %s", applied + 1, s->total,
						 failure == REPO_APPLY_REFUSED ? "refused"
						 : failure == REPO_APPLY_INVALID ? "is no readable diff"
										 : "does not apply",
						 why ? why : "?");
		b.applied = reason == NULL;
		b.reason = reason;
		if (!db_series_base_add(c->db, s->id, &b, error))
			return APPLIED_FAILED;
		if (b.applied) {
			*commits = g_steal_pointer(&made);
			return (int)i;
		}
	}
	return APPLIED_NOWHERE;
}

static bool all_results_in(const struct series_row *s, char **targets);
static bool queue_results(const struct bot *c, const struct series_row *s,
			  bool mail_clean, gint64 now, GError **error);

/*
 * Starts ready series @s: base, apply, jobs; in one transaction. Sets
 * *@waits when it is for a tree not polled yet, and stays waiting.
 */
static bool start_one(const struct bot *c, struct series_row *s, gint64 now,
		      bool *waits, GError **error)
{
	g_autoptr(GPtrArray) patches = NULL;
	g_autoptr(GPtrArray) cands = NULL;
	zd_autoptr(patchmail) cover = NULL;
	const struct patchmail *first;
	const struct series_part *cp = series_row_part(s, 0);
	const char *base_commit = NULL;
	g_auto(GStrv) commits = NULL;
	g_auto(GStrv) targets = NULL;
	g_autoptr(GError) apply_error = NULL;
	bool matched = false;
	int won;

	patches = series_patches(c, s, error);
	if (!patches)
		return false;
	if (cp && !(cover = mail_parse(c->db, c->config, cp->mail_id, error)))
		return false;
	first = cover ? cover : patches->pdata[0];
	if (cover && cover->base_commit)
		base_commit = cover->base_commit;
	for (guint i = 0; !base_commit && i < patches->len; i++)
		base_commit = ((const struct patchmail *)patches->pdata[i])->base_commit;
	if (!db_tx_begin(c->db, error))
		return false;
	cands = candidates_of(c, s, first, base_commit, &matched, error);
	if (!cands)
		goto fail;
	/*
	 * For a tree with no polled branch yet (just added, or its polls
	 * failing): the series waits for a poll, nothing recorded, up to
	 * [mail] series-timeout after its last part.
	 */
	*waits = cands->len == 0 && matched &&
		 now < s->last_part + (gint64)c->config->mail_series_timeout;
	if (*waits) {
		db_tx_rollback(c->db);
		return true;
	}
	/* No base to try: the series is for no tree here, and gets no reply. */
	if (cands->len == 0) {
		s->state = SERIES_IGNORED;
		s->note = matched
			? g_strdup_printf("its trees had no polled branch %u s after its last "
					  "part", c->config->mail_series_timeout)
			: g_strdup("for no subscribed tree: no --list matches its List-Id, To or "
				   "Cc, and no --prefix its subject");
		g_message("series %" G_GINT64_FORMAT ": %s", s->id, s->note);
		if (!db_series_update(c->db, s, error) || !db_tx_commit(c->db, error))
			goto fail;
		return true;
	}
	won = apply_somewhere(c, s, patches, cands, &commits, now, &apply_error);
	if (won == APPLIED_FAILED) {
		g_propagate_error(error, g_steal_pointer(&apply_error));
		goto fail;
	}
	if (won == APPLIED_LATER) {
		/* Nothing recorded: the series waits, and is tried again next round. */
		g_warning("series %" G_GINT64_FORMAT ": %s; trying again later", s->id,
			  apply_error->message);
		db_tx_rollback(c->db);
		return true;
	}
	if (won == APPLIED_NOWHERE) {
		/*
		 * A series that says it needs other patches first was posted
		 * with --base as asked: the reply asking for it would be wrong,
		 * and the prerequisites are not looked for among stored patches.
		 */
		bool prerequisites = cover && patchmail_has_prerequisites(cover);

		for (guint i = 0; !prerequisites && i < patches->len; i++)
			prerequisites = patchmail_has_prerequisites(patches->pdata[i]);
		s->state = SERIES_NO_BASE;
		s->note = prerequisites
			? g_strdup_printf("needs prerequisite patches not found: applies to none "
					  "of the %u bases tried", cands->len)
			: g_strdup_printf("applies to none of the %u bases tried", cands->len);
		g_message("series %" G_GINT64_FORMAT ": %s", s->id, s->note);
		if (!db_series_update(c->db, s, error) ||
		    (!prerequisites && !queue_no_base(c, s->id, now, error)) ||
		    !db_tx_commit(c->db, error))
			goto fail;
		return true;
	}
	{
		const struct candidate *cand = cands->pdata[won];

		s->tree_id = cand->tree_id;
		s->base = g_strdup(cand->commit);
		s->base_how = cand->branch
			? g_strdup_printf("%s (%s/%s)", cand->how, cand->tree, cand->branch)
			: g_strdup(cand->how);
		s->state = SERIES_TESTING;
		targets = tree_targets(c, cand->tree, error);
		if (!targets)
			goto fail;
	}
	for (guint i = 0; commits[i]; i++) {
		g_autofree char *keep = g_strdup_printf("series/%" G_GINT64_FORMAT "/%u", s->id,
							i + 1);

		if (!repo_keep(c->repo, keep, commits[i], error) ||
		    !db_series_part_commit(c->db, s->id, i + 1, commits[i], error))
			goto fail;
	}
	g_message("series %" G_GINT64_FORMAT ": applied on %.12s (%s); testing", s->id, s->base,
		  s->base_how);
	if (!db_series_update(c->db, s, error))
		goto fail;
	for (char **t = targets; *t; t++) {
		bool added, copied = false;

		if (!db_job_add(c->db, JOB_KIND_PATCH_TEST, s->tree_id, commits[s->total - 1], *t,
				JOB_PATCH, &added, error))
			goto fail;
		/*
		 * The same commits were tested for another series (a RESEND): its
		 * results are this one's; a job still to run serves both.
		 */
		if (!added && !db_series_copy_results(c->db, s->id, commits[s->total - 1], *t,
						      &copied, error))
			goto fail;
		if (copied)
			g_message("series %" G_GINT64_FORMAT ": the same commits were tested on %s "
				  "already", s->id, *t);
	}
	{
		zd_autoptr(series_row) again = db_series_get(c->db, s->id, error);
		zd_autoptr(tree_row) tree = again ? db_tree_get(c->db, again->tree, error) : NULL;

		if (!tree)
			goto fail;
		if (all_results_in(again, targets)) {
			again->state = SERIES_TESTED;
			if (!db_series_update(c->db, again, error) ||
			    !queue_results(c, again, tree->mail_clean, now, error))
				goto fail;
			g_message("series %" G_GINT64_FORMAT ": tested", s->id);
		}
	}
	if (!db_tx_commit(c->db, error))
		goto fail;
	return true;
fail:
	db_tx_rollback(c->db);
	return false;
}

/*
 * A partial reroll ("[PATCH v2 2/3]" alone, in the thread of v1): once its
 * grace period is over, a series takes the parts it lacks from the newest
 * older version of the same sender and size in its thread or of its title,
 * as b4 does. Sets *@filled when it took any.
 */
static bool fill_from_older(const struct bot *c, const struct series_row *s, gint64 now,
			    bool *filled, GError **error)
{
	g_autoptr(GArray) older = NULL;
	zd_autoptr(series_row) from = NULL;

	*filled = false;
	if (!db_tx_begin(c->db, error))
		return false;
	older = db_series_older(c->db, s->id, s->sender, s->title, s->version, false,
				TITLE_WINDOW, error);
	if (!older)
		goto fail;
	for (guint i = older->len; i-- > 0 && !from;) {
		from = db_series_get(c->db, g_array_index(older, gint64, i), error);
		if (!from)
			goto fail;
		if (from->total != s->total)
			g_clear_pointer(&from, series_row_free);
	}
	for (guint i = 0; from && i < from->parts->len; i++) {
		const struct series_part *p = from->parts->pdata[i];
		bool added = false;

		if (series_row_part(s, p->n))
			continue;
		if (!db_series_add_part(c->db, s->id, p->n, p->mail_id, p->message_id, now, &added,
					error))
			goto fail;
		*filled |= added;
	}
	if (*filled)
		g_message("series %" G_GINT64_FORMAT ": v%u resends only some parts; the others "
			  "are v%u's (series %" G_GINT64_FORMAT ")", s->id, s->version,
			  from->version, from->id);
	if (db_tx_commit(c->db, error))
		return true;
fail:
	db_tx_rollback(c->db);
	return false;
}

/*
 * Closes @s, which lacks patches [mail] series-timeout after its last
 * part: ignored, with a note naming what never came, its parts kept; not
 * tested, and not answered, for nothing failed that the sender did.
 */
static bool close_incomplete(const struct bot *c, struct series_row *s, GError **error)
{
	g_autoptr(GString) missing = g_string_new(NULL);
	guint count = 0;

	for (guint n = 1; n <= s->total; n++) {
		if (series_row_part(s, n))
			continue;
		/* A series of thousands of patches: the first few name it well enough. */
		if (count++ < 10)
			g_string_append_printf(missing, "%s%u", missing->len ? ", " : "", n);
	}
	if (count > 10)
		g_string_append_printf(missing, " and %u more", count - 10);
	g_free(s->note);
	s->note = g_strdup_printf("incomplete: patch%s %s of %u never came, %u s after its "
				  "last part", count == 1 ? "" : "es", missing->str, s->total,
				  c->config->mail_series_timeout);
	s->state = SERIES_IGNORED;
	g_message("series %" G_GINT64_FORMAT ": \"%s\" v%u from %s closed, %s", s->id,
		  s->title ? s->title : "?", s->version, s->sender, s->note);
	if (!db_tx_begin(c->db, error))
		return false;
	if (db_series_update(c->db, s, error) && db_tx_commit(c->db, error))
		return true;
	db_tx_rollback(c->db);
	return false;
}

bool series_start(const struct bot *c, gint64 now, bool log_waiting, unsigned *waiting,
		  GError **error)
{
	g_autoptr(GPtrArray) list = db_series_list(c->db, SERIES_WAITING, G_MAXINT, error);
	unsigned left = 0;

	if (!list)
		return false;
	/* Oldest first. */
	for (guint i = list->len; i-- > 0;) {
		zd_autoptr(series_row) s = db_series_get(c->db, ((struct series_row *)
							      list->pdata[i])->id, error);
		gint64 due;
		bool cover = false, all, filled = false, tree_waits = false;

		if (!s)
			return false;
		/* Superseded since the list was read, by one started before it. */
		if (s->state != SERIES_WAITING)
			continue;
		due = s->last_part + c->config->mail_grace;
		all = has_all_patches(s, &cover);
		if (!all && now >= due && s->versioned && s->version > 1) {
			if (!fill_from_older(c, s, now, &filled, error))
				return false;
			if (filled) {
				series_row_free(g_steal_pointer(&s));
				s = db_series_get(c->db, ((struct series_row *)list->pdata[i])->id,
						  error);
				if (!s)
					return false;
				all = has_all_patches(s, &cover);
			}
		}
		if (!all && now >= s->last_part + (gint64)c->config->mail_series_timeout) {
			if (!close_incomplete(c, s, error))
				return false;
			continue;
		}

		if (!all || (!cover && numbered(s) && now < due)) {
			left++;
			if (log_waiting)
				g_message("series %" G_GINT64_FORMAT ": \"%s\" v%u from %s waits: %s",
					  s->id, s->title ? s->title : "?", s->version, s->sender,
					  all ? "for its cover letter, within its grace period"
					      : "for parts not yet received");
			continue;
		}
		/* Parts past the count came while it waited: they count (start_one() stores it). */
		if (series_span(s) > s->total) {
			g_message("series %" G_GINT64_FORMAT ": \"%s\" v%u has %u patches, not %u: "
				  "parts past its count came in its thread", s->id,
				  s->title ? s->title : "?", s->version, series_span(s), s->total);
			s->total = series_span(s);
		}
		if (!start_one(c, s, now, &tree_waits, error))
			return false;
		if (tree_waits) {
			left++;
			if (log_waiting)
				g_message("series %" G_GINT64_FORMAT ": \"%s\" v%u from %s waits: "
					  "for a first poll of its tree", s->id,
					  s->title ? s->title : "?", s->version, s->sender);
		}
	}
	if (waiting)
		*waiting = left;
	return true;
}

/* Whether every patch of @s has a result on every one of @targets. */
static bool all_results_in(const struct series_row *s, char **targets)
{
	guint want = s->total * g_strv_length(targets);
	guint have = 0;

	for (guint i = 0; i < s->results->len; i++) {
		const struct series_result *r = s->results->pdata[i];

		if (r->n >= 1 && g_strv_contains((const char *const *)targets, r->target))
			have++;
	}
	return have >= want;
}

static bool result_is(const struct series_result *r, enum job_result result)
{
	return strcmp(r->result, db_job_result_name(result)) == 0;
}

/* What a patch newly broke on one target: its build, or (@boot) its boots. */
struct failure {
	const struct series_result *r;
	bool boot;
	guint order; /* as the results came */
};

static const char *failure_kind(const struct failure *f)
{
	return f->boot ? "boot failure"
	       : result_is(f->r, JOB_RESULT_FAIL_NEW_ERROR) ? "build error" : "build warning";
}

/* GCompareFunc over struct failure: by patch, then as the results came. */
static gint by_patch(gconstpointer a, gconstpointer b)
{
	const struct failure *x = a, *y = b;

	if (x->r->n != y->r->n)
		return x->r->n < y->r->n ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/*
 * Whether the tree just before @r's patch booted clean on its target: the
 * base (before patch 1, booted clean whenever a failure is new), or the
 * patch before, when it was booted. Else a bisection pinned the failure
 * by reverting the patch on the whole series.
 */
static bool booted_clean_before(const struct series_row *s, const struct series_result *r)
{
	if (r->n == 1)
		return true;
	for (guint i = 0; i < s->results->len; i++) {
		const struct series_result *q = s->results->pdata[i];

		if (q->n == r->n - 1 && strcmp(q->target, r->target) == 0)
			return q->boot && g_str_has_suffix(q->boot, " clean");
	}
	return false;
}

/*
 * Queues the reply on patch @p of @s for what result @r newly broke: its
 * build (@boot false) or its boots; @also (NULL: none) names the other
 * targets where the patch breaks something, and what. In the caller's
 * transaction.
 */
static bool queue_failure(const struct bot *c, const struct series_row *s,
			  const struct series_result *r, const struct series_part *p, bool boot,
			  const char *also, gint64 now, GError **error)
{
	zd_autoptr(template_values) v = template_values_new();
	g_autofree char *compiler = build_compiler_version(r->target);
	g_autofree char *frag_dir = config_fragment_dir();
	g_autofree char *repro = NULL;
	const char *text = boot ? r->boot : r->detail;
	struct build_target bt;
	struct reply rep;
	bool ok;

	reply_init(&rep);
	if (!reply_on(c, s, p->mail_id, &rep, v, error)) {
		reply_release(&rep);
		return false;
	}
	/* The config of the patch's build, for the reproduce line to start from. */
	{
		zd_autoptr(build_row) build = NULL;

		if (db_build_find(c->db, s->tree, r->commit, r->target, &build, NULL) && build)
			report_attach_config(&rep, build->config_path);
	}
	if (build_target_parse(&bt, r->target, frag_dir, NULL)) {
		repro = build_reproduce_command(&bt, "config.gz");
		if (boot) {
			/* The series' tree's payloads, as its boots ran them. */
			zd_autoptr(tree_row) tree = s->tree ? db_tree_get(c->db, s->tree, NULL) : NULL;

			report_boot_reproduce(&rep, v, c, &bt, tree ? tree->payloads : NULL);
		}
		build_target_clear(&bt);
	}
	template_values_set(v, "tree", s->tree);
	template_values_set(v, "base", s->base);
	template_values_set(v, "base_how", s->base_how);
	template_values_set(v, "target", r->target);
	template_values_set(v, "compiler", compiler);
	template_values_printf(v, "n", "%u", r->n);
	{
		g_autofree char *title = patchmail_subject_title(p->subject);

		template_values_set(v, "patch_title", title);
	}
	{
		const struct failure self = { r, boot, 0 };

		template_values_set(v, "kind", failure_kind(&self));
	}
	template_values_set(v, "also", also);
	if (boot) {
		template_values_set(v, "boot", "yes");
		if (!booted_clean_before(s, r))
			template_values_set(v, "reverted", "yes");
	}
	template_values_set(v, "reproduce", repro);
	if (text) {
		g_auto(GStrv) lines = g_strsplit(text, "\n", -1);

		for (char **l = lines; *l; l++) {
			if (**l)
				template_values_set(template_values_add(v, "diags"), "text", *l);
		}
	}
	ok = queue_series_mail(c, s, "series-failure", &rep, v, now, error);
	reply_release(&rep);
	return ok;
}

/*
 * Queues the replies of tested series @s, in the caller's transaction;
 * none when a test command waits for it: its answer carries the result.
 */
static bool queue_results(const struct bot *c, const struct series_row *s,
			  bool mail_clean, gint64 now, GError **error)
{
	g_autoptr(GString) failing = g_string_new(NULL);
	g_autoptr(GArray) fails = g_array_new(FALSE, FALSE, sizeof(struct failure));
	bool broke = false;
	bool claimed = false;

	if (!commands_series_claimed(c, s->id, now, &claimed, error))
		return false;
	if (claimed)
		return true;

	/*
	 * One reply on each patch that newly broke something: on its first
	 * failure's target, naming the others ("also").
	 */
	for (guint i = 0; i < s->results->len; i++) {
		const struct series_result *r = s->results->pdata[i];
		const struct failure build = { r, false, fails->len }, boots = { r, true, fails->len + 1 };

		if (r->n == 0 || !series_row_part(s, r->n))
			continue;
		if (result_is(r, JOB_RESULT_FAIL_PARENT_FAILING) && r->n == 1)
			g_string_append_printf(failing, "%s%s", failing->len ? ", " : "", r->target);
		if (result_is(r, JOB_RESULT_NEW_DIAGNOSTICS) ||
		    result_is(r, JOB_RESULT_FAIL_NEW_ERROR))
			g_array_append_val(fails, build);
		if (r->boot_failed)
			g_array_append_val(fails, boots);
	}
	g_array_sort(fails, by_patch);
	broke = fails->len > 0;
	for (guint i = 0, next; i < fails->len; i = next) {
		const struct failure *first = &g_array_index(fails, struct failure, i);
		g_autoptr(GString) also = g_string_new(NULL);

		for (next = i + 1; next < fails->len; next++) {
			const struct failure *f = &g_array_index(fails, struct failure, next);

			if (f->r->n != first->r->n)
				break;
			g_string_append_printf(also, "%s%s (%s)", also->len ? ", " : "", f->r->target,
					       failure_kind(f));
		}
		if (!queue_failure(c, s, first->r, series_row_part(s, first->r->n), first->boot,
				   also->len ? also->str : NULL, now, error))
			return false;
	}
	/* The summary on the cover letter, or the clean reply the tree asks for. */
	if ((broke && series_row_part(s, 0)) || (!broke && mail_clean) || failing->len || s->note) {
		zd_autoptr(template_values) v = template_values_new();
		struct reply rep;
		bool ok;

		if (broke && !series_row_part(s, 0) && !failing->len && !s->note)
			return true;
		reply_init(&rep);
		if (!reply_on(c, s, series_head_mail(s), &rep, v, error)) {
			reply_release(&rep);
			return false;
		}
		template_values_set(v, "tree", s->tree);
		template_values_set(v, "base", s->base);
		template_values_set(v, "base_how", s->base_how);
		if (failing->len)
			template_values_set(v, "base_failing", failing->str);
		template_values_set(v, "note", s->note);
		for (guint i = 0; i < s->results->len; i++) {
			const struct series_result *r = s->results->pdata[i];
			const struct series_part *p = series_row_part(s, r->n);
			g_autofree char *title = NULL;
			struct template_values *item;

			if (r->n == 0 || !p)
				continue;
			item = template_values_add(v, "patches");
			template_values_printf(item, "n", "%u/%u", r->n, s->total);
			title = patchmail_subject_title(p->subject);
			template_values_set(item, "title", title);
			/* What the boots showed, in one line: the console is the patch's reply's. */
			if (r->boot)
				template_values_printf(item, "result", "%s on %s; %.*s", r->result,
						       r->target, (int)strcspn(r->boot, "\n"), r->boot);
			else
				template_values_printf(item, "result", "%s on %s", r->result,
						       r->target);
		}
		ok = queue_series_mail(c, s, broke || failing->len || s->note ? "series-summary"
									      : "series-clean",
				       &rep, v, now, error);
		reply_release(&rep);
		if (!ok)
			return false;
	}
	return true;
}

/*
 * Records one target's @results (struct series_result, by patch) for
 * series @id, in the caller's transaction, with @note on the series when
 * there is one; once every target is in, the series is tested and its
 * replies are queued.
 */
static bool record_results(const struct bot *c, gint64 id, const char *tree,
			   const char *target, GPtrArray *results, const char *note, gint64 now,
			   GError **error)
{
	zd_autoptr(series_row) s = NULL;
	zd_autoptr(tree_row) t = NULL;
	g_auto(GStrv) targets = NULL;

	for (guint i = 0; i < results->len; i++) {
		if (!db_series_result_put(c->db, id, results->pdata[i], error))
			return false;
	}
	s = db_series_get(c->db, id, error);
	targets = s ? tree_targets(c, tree, error) : NULL;
	t = targets ? db_tree_get(c->db, tree, error) : NULL;
	if (!t)
		return false;
	if (note) {
		g_free(s->note);
		s->note = g_strdup_printf("%s: %s", target, note);
		if (!db_series_update(c->db, s, error))
			return false;
	}
	if (s->state == SERIES_TESTING && all_results_in(s, targets)) {
		s->state = SERIES_TESTED;
		if (!db_series_update(c->db, s, error) ||
		    !queue_results(c, s, t->mail_clean, now, error))
			return false;
		g_message("series %" G_GINT64_FORMAT ": tested", s->id);
	}
	return true;
}

GPtrArray *series_testing_at(const struct bot *c, const char *commit, guint *known,
			      GError **error)
{
	g_autoptr(GArray) ids = db_series_by_commit(c->db, commit, error);
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)series_row_free);

	if (!ids)
		return NULL;
	*known = ids->len;
	for (guint i = 0; i < ids->len; i++) {
		struct series_row *s = db_series_get(c->db, g_array_index(ids, gint64, i), error);

		if (!s)
			return NULL;
		if (s->state == SERIES_TESTING)
			g_ptr_array_add(out, s);
		else
			series_row_free(s);
	}
	return g_steal_pointer(&out);
}

bool series_record(const struct bot *c, GPtrArray *testing, const char *tree,
		   const char *target, GPtrArray *results, const char *note, GError **error)
{
	gint64 now = g_get_real_time() / G_USEC_PER_SEC;

	if (!db_tx_begin(c->db, error))
		return false;
	for (guint i = 0; i < testing->len; i++) {
		const struct series_row *each = testing->pdata[i];

		if (!record_results(c, each->id, tree, target, results, note, now, error)) {
			db_tx_rollback(c->db);
			return false;
		}
	}
	if (!db_tx_commit(c->db, error)) {
		db_tx_rollback(c->db);
		return false;
	}
	return true;
}
