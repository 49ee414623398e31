/*
 * Tree watching: see watch.h.
 *
 * The database is the truth; the refs under refs/trees/ only keep objects
 * alive and give walks their starting points. A crash between moving a ref
 * and committing the transaction is harmless: the next poll sees the same
 * change again, finds the objects already present, and records it once.
 */
#define G_LOG_DOMAIN "bot"

#include "autoconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "bot/bot.h"
#include "bot/lab/watch.h"
#include "engine/names.h"

/* A tree's ls-remote, run in the thread pool. */
struct ls_task {
	const struct tree_row *tree;
	const struct config *config;
	GPtrArray *heads; /* struct repo_head, or NULL on error */
	GError *error;
};

/*
 * Where fetching @t may connect: anywhere for a tree the administrator
 * added; for one subscribed by mail (a stranger's URL), public addresses
 * only, checked on the address connected to, unless [commands]
 * allowed-hosts names its host. Fills and returns @buf, or NULL.
 */
static const struct repo_net_policy *tree_policy(const struct tree_row *t,
						 const struct config *config,
						 struct repo_net_policy *buf)
{
	if (!t->subscriber)
		return NULL;
	buf->public_only = true;
	buf->allowed_hosts = (const char *const *)config->commands_allowed_hosts;
	return buf;
}

static void ls_worker(gpointer data, gpointer user_data)
{
	struct ls_task *task = data;
	struct repo_net_policy policy;

	task->heads = repo_ls_remote(task->tree->url, tree_policy(task->tree, task->config, &policy),
				     &task->error);
}

void watch_tree_free(struct watch_tree *result)
{
	if (!result)
		return;
	g_free(result->tree);
	g_free(result->error);
	if (result->changes)
		g_ptr_array_unref(result->changes);
	g_free(result);
}

static void watch_change_free(struct watch_change *change)
{
	head_event_free(change->event);
	if (change->commits)
		g_ptr_array_unref(change->commits);
	g_free(change);
}

static int lock_polls(const struct config *config, GError **error)
{
	g_autofree char *path = g_build_filename(config->state_dir, "poll.lock", NULL);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);

	if (fd < 0) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_FAILED, "%s: %s", path, g_strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		g_set_error(error, BOT_ERROR, BOT_ERROR_BUSY,
			    "another zeroday poll is running in %s", config->state_dir);
		close(fd);
		return -1;
	}
	return fd;
}

/* The state a tree's branches are in during one poll. */
struct tree_poll {
	struct db *db;
	struct repo *repo;
	const struct config *config;
	const struct tree_row *tree;
	GHashTable *known;  /* branch name -> struct branch_row, from the store (borrowed) */
	GHashTable *remote; /* branch name -> oid, advertised and matching */
	gint64 now;
};

/* Returns the first blacklist pattern that matches @branch, or NULL. */
static const char *blacklisted(const struct tree_row *tree, const char *branch)
{
	for (char **p = tree->blacklist; p && *p; p++) {
		const char *one[] = { *p, NULL };

		if (names_pattern_match_any(one, branch))
			return *p;
	}
	return NULL;
}

/*
 * Brings the objects of every moved branch into the store and points its
 * ref at the head. Heads whose commit is already present (another tree
 * fetched it) need no transfer. Updates tp->remote with what was fetched.
 */
static bool fetch_moved(struct tree_poll *tp, GError **error)
{
	g_autoptr(GPtrArray) want = g_ptr_array_new();
	struct repo_net_policy policy;
	GHashTableIter it;
	gpointer key, value;

	g_hash_table_iter_init(&it, tp->remote);
	while (g_hash_table_iter_next(&it, &key, &value)) {
		const struct branch_row *old = g_hash_table_lookup(tp->known, key);

		if (old && old->state != BRANCH_DELETED && strcmp(old->head, value) == 0)
			continue;
		if (repo_has_commit(tp->repo, value)) {
			if (!repo_set_tree_branch(tp->repo, tp->tree->name, key, value, error))
				return false;
		} else {
			g_ptr_array_add(want, key);
		}
	}
	if (want->len == 0)
		return true;
	g_ptr_array_add(want, NULL);
	if (!repo_fetch(tp->repo, tp->tree->url, tp->tree->name,
			(const char *const *)want->pdata,
			tree_policy(tp->tree, tp->config, &policy), error))
		return false;
	for (guint i = 0; want->pdata[i]; i++) {
		char *head = repo_tree_branch_head(tp->repo, tp->tree->name, want->pdata[i], error);

		if (!head)
			return false;
		g_hash_table_replace(tp->remote, g_strdup(want->pdata[i]), head);
	}
	return true;
}

/*
 * The commits that must not count as new: the stored heads of the tree's
 * tested branches (a skipped branch's commits were never selected, so its
 * old head hides nothing) and the head of the base branch.
 */
static GPtrArray *hidden_heads(struct tree_poll *tp, GString *note)
{
	GPtrArray *hide = g_ptr_array_new_with_free_func(g_free);
	GHashTableIter it;
	gpointer key, value;

	g_hash_table_iter_init(&it, tp->known);
	while (g_hash_table_iter_next(&it, &key, &value)) {
		const struct branch_row *row = value;

		if (row->state == BRANCH_TESTED)
			g_ptr_array_add(hide, g_strdup(row->head));
	}
	if (tp->tree->base) {
		g_auto(GStrv) parts = g_strsplit(tp->tree->base, "/", 2);
		g_autoptr(GError) missing = NULL;
		char *head = NULL;

		if (parts[0] && parts[1])
			head = repo_tree_branch_head(tp->repo, parts[0], parts[1], &missing);
		if (head)
			g_ptr_array_add(hide, head);
		else
			g_string_append_printf(note, "base %s not fetched yet; ", tp->tree->base);
	}
	g_ptr_array_add(hide, NULL);
	return hide;
}

/* Decides and records what to do about one moved branch. */
static bool branch_changed(struct tree_poll *tp, const char *branch, const char *head,
			   struct watch_change **out, GError **error)
{
	const struct branch_row *old = g_hash_table_lookup(tp->known, branch);
	g_autoptr(GString) note = g_string_new(NULL);
	struct watch_change *change = g_new0(struct watch_change, 1);
	struct head_event *ev = g_new0(struct head_event, 1);
	struct branch_row row = { .name = (char *)branch, .head = (char *)head,
				  .state = BRANCH_TESTED, .updated = tp->now };
	g_autoptr(GPtrArray) walked = NULL;
	g_autoptr(GPtrArray) hide = NULL;
	const char *pattern;
	bool truncated = false;

	change->event = ev;
	change->commits = g_ptr_array_new_with_free_func((GDestroyNotify)repo_commit_free);
	*out = change;
	ev->branch = g_strdup(branch);
	ev->new_head = g_strdup(head);
	ev->when = tp->now;
	if (!old || old->state == BRANCH_DELETED) {
		ev->change = HEAD_NEW;
	} else {
		g_autoptr(GError) gone = NULL;

		ev->old_head = g_strdup(old->head);
		ev->change = repo_is_ancestor(tp->repo, old->head, head, &gone) == 1
			? HEAD_FORWARD : HEAD_FORCED;
	}

	pattern = blacklisted(tp->tree, branch);
	if (pattern) {
		ev->action = HEAD_ACTION_SKIPPED;
		ev->reason = g_strdup_printf("blacklisted by pattern '%s'", pattern);
		goto record;
	}

	hide = hidden_heads(tp, note);
	walked = repo_walk_new(tp->repo, head, (const char *const *)hide->pdata,
			       tp->config->max_new_commits, &truncated, error);
	if (!walked)
		return false;
	for (guint i = 0; i < walked->len; i++) {
		const struct repo_commit *c = walked->pdata[i];

		if (c->dont_auto_build) {
			ev->action = HEAD_ACTION_SKIPPED;
			ev->reason = g_strdup_printf("commit %.12s (\"%s\") has Dont-Auto-Build",
						     c->oid, c->summary);
			goto record;
		}
	}
	if (truncated)
		g_string_append_printf(note, "more than %u new commits (max-new-commits): "
				       "testing the head only; ", tp->config->max_new_commits);

	for (guint i = 0; i < walked->len; i++) {
		struct repo_commit *c = walked->pdata[i];
		bool is_head = strcmp(c->oid, head) == 0;
		bool known;

		if (!is_head && (truncated || tp->tree->policy == TREE_NON_REBASABLE))
			continue;
		if (!db_test_known(tp->db, tp->tree->id, c->oid, &known, error))
			return false;
		if (known)
			continue;
		g_ptr_array_add(change->commits, g_steal_pointer(&walked->pdata[i]));
	}
	ev->selected = change->commits->len;
	ev->action = change->commits->len ? HEAD_ACTION_QUEUED : HEAD_ACTION_NONE;
	if (!change->commits->len)
		g_string_append(note, "no untested commits; ");

record:
	if (ev->reason == NULL && note->len > 2) {
		g_string_truncate(note, note->len - 2);
		ev->reason = g_strdup(note->str);
	}
	if (ev->action == HEAD_ACTION_SKIPPED) {
		row.state = BRANCH_SKIPPED;
		row.reason = ev->reason;
	}
	if (!db_event_add(tp->db, tp->tree->id, ev, error))
		return false;
	for (guint i = 0; i < change->commits->len; i++) {
		const struct repo_commit *c = change->commits->pdata[i];
		bool added;

		if (!db_test_add(tp->db, tp->tree->id, branch, c->oid, c->summary, ev->id,
				 &added, error))
			return false;
	}
	return db_branch_put(tp->db, tp->tree->id, &row, error);
}

static bool branch_deleted(struct tree_poll *tp, const struct branch_row *old, bool advertised,
			   struct watch_change **out, GError **error)
{
	struct watch_change *change = g_new0(struct watch_change, 1);
	struct head_event *ev = g_new0(struct head_event, 1);
	struct branch_row row = { .name = old->name, .head = old->head,
				  .state = BRANCH_DELETED, .updated = tp->now };

	change->event = ev;
	change->commits = g_ptr_array_new_with_free_func((GDestroyNotify)repo_commit_free);
	*out = change;
	ev->branch = g_strdup(old->name);
	ev->old_head = g_strdup(old->head);
	ev->change = HEAD_DELETED;
	ev->action = HEAD_ACTION_NONE;
	ev->reason = g_strdup(advertised ? "no longer matches the tree's branch patterns"
					 : "gone from the remote");
	ev->when = tp->now;
	row.reason = ev->reason;
	if (!repo_set_tree_branch(tp->repo, tp->tree->name, old->name, NULL, error))
		return false;
	if (!db_event_add(tp->db, tp->tree->id, ev, error))
		return false;
	return db_branch_put(tp->db, tp->tree->id, &row, error);
}

static gint strcmp_p(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Records one tree's poll in one transaction. */
static bool poll_tree(struct tree_poll *tp, GPtrArray *all_heads, struct watch_tree *result,
		      GError **error)
{
	g_autoptr(GHashTable) known = g_hash_table_new(g_str_hash, g_str_equal);
	g_autoptr(GHashTable) remote = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	g_autoptr(GPtrArray) known_list = NULL;
	g_autoptr(GPtrArray) names = NULL;
	GHashTableIter it;
	gpointer key, value;

	tp->known = known;
	tp->remote = remote;

	for (guint i = 0; i < all_heads->len; i++) {
		const struct repo_head *h = all_heads->pdata[i];

		if (names_pattern_match_any((const char *const *)tp->tree->branches, h->branch))
			g_hash_table_insert(tp->remote, g_strdup(h->branch), g_strdup(h->oid));
	}
	known_list = db_branch_list(tp->db, tp->tree->id, error);
	if (!known_list)
		return false;
	for (guint i = 0; i < known_list->len; i++) {
		struct branch_row *row = known_list->pdata[i];

		g_hash_table_insert(tp->known, row->name, row);
	}
	if (!fetch_moved(tp, error))
		return false;

	if (!db_tx_begin(tp->db, error))
		return false;
	/* Branches in name order, so that results are deterministic. */
	names = g_ptr_array_new();
	g_hash_table_iter_init(&it, tp->remote);
	while (g_hash_table_iter_next(&it, &key, NULL))
		g_ptr_array_add(names, key);
	g_ptr_array_sort(names, strcmp_p);
	for (guint i = 0; i < names->len; i++) {
		const char *branch = names->pdata[i];
		const char *head = g_hash_table_lookup(tp->remote, branch);
		const struct branch_row *old = g_hash_table_lookup(tp->known, branch);
		struct watch_change *change = NULL;

		if (old && old->state != BRANCH_DELETED && strcmp(old->head, head) == 0)
			continue;
		if (!branch_changed(tp, branch, head, &change, error)) {
			if (change)
				watch_change_free(change);
			goto fail;
		}
		g_ptr_array_add(result->changes, change);
	}
	g_hash_table_iter_init(&it, tp->known);
	while (g_hash_table_iter_next(&it, &key, &value)) {
		const struct branch_row *old = value;
		struct watch_change *change = NULL;
		bool advertised = false;

		if (old->state == BRANCH_DELETED || g_hash_table_contains(tp->remote, key))
			continue;
		for (guint i = 0; i < all_heads->len && !advertised; i++)
			advertised = strcmp(((struct repo_head *)all_heads->pdata[i])->branch, key) == 0;
		if (!branch_deleted(tp, old, advertised, &change, error)) {
			if (change)
				watch_change_free(change);
			goto fail;
		}
		g_ptr_array_add(result->changes, change);
	}
	if (!db_tree_polled(tp->db, tp->tree->id, tp->now, NULL, error) ||
	    !db_tx_commit(tp->db, error))
		goto fail;
	result->branches = g_hash_table_size(tp->remote);
	return true;
fail:
	db_tx_rollback(tp->db);
	g_ptr_array_set_size(result->changes, 0);
	return false;
}

static void record_failure(struct db *db, const struct tree_row *tree, gint64 now,
			   struct watch_tree *result, const GError *failure)
{
	g_autoptr(GError) local = NULL;

	result->error = g_strdup(failure->message);
	g_message("poll of tree %s failed: %s", tree->name, failure->message);
	if (!db_tx_begin(db, &local) ||
	    !db_tree_polled(db, tree->id, now, failure->message, &local) ||
	    !db_tx_commit(db, &local)) {
		db_tx_rollback(db);
		g_warning("cannot record the failed poll of %s: %s", tree->name, local->message);
	}
}

/* Returns whether some tree of @trees has @tree as its base. */
static bool is_base(GPtrArray *trees, const struct tree_row *tree)
{
	size_t len = strlen(tree->name);

	for (guint i = 0; i < trees->len; i++) {
		const struct tree_row *t = trees->pdata[i];

		if (t->base && strncmp(t->base, tree->name, len) == 0 && t->base[len] == '/')
			return true;
	}
	return false;
}

/*
 * Moves the trees that others name as their base to the front, so that a
 * base is fetched before the trees measured against it in the same poll.
 */
static void order_bases_first(GPtrArray *trees)
{
	guint front = 0;

	for (guint i = 0; i < trees->len; i++) {
		if (is_base(trees, trees->pdata[i])) {
			gpointer t = trees->pdata[i];

			memmove(&trees->pdata[front + 1], &trees->pdata[front],
				(i - front) * sizeof(gpointer));
			trees->pdata[front++] = t;
		}
	}
}

GPtrArray *watch_poll(struct db *db, struct repo *repo, const struct config *config,
		      const char *const *only, GError **error)
{
	g_autoptr(GPtrArray) trees = NULL;
	g_autoptr(GPtrArray) results = NULL;
	g_autofree struct ls_task *tasks = NULL;
	GThreadPool *pool;
	int lock;

	if (only && *only) {
		trees = g_ptr_array_new_with_free_func((GDestroyNotify)tree_row_free);
		for (const char *const *n = only; *n; n++) {
			struct tree_row *t = db_tree_get(db, *n, error);

			if (!t)
				return NULL;
			g_ptr_array_add(trees, t);
		}
	} else {
		trees = db_tree_list(db, error);
		if (!trees)
			return NULL;
	}
	order_bases_first(trees);
	lock = lock_polls(config, error);
	if (lock < 0)
		return NULL;

	/* Listing the remotes is network-bound: do it in parallel. */
	tasks = g_new0(struct ls_task, trees->len);
	pool = g_thread_pool_new(ls_worker, NULL, (int)config->poll_jobs, FALSE, NULL);
	for (guint i = 0; i < trees->len; i++) {
		tasks[i].tree = trees->pdata[i];
		tasks[i].config = config;
		g_thread_pool_push(pool, &tasks[i], NULL);
	}
	g_thread_pool_free(pool, FALSE, TRUE);

	/* Fetching and recording go one tree at a time. */
	results = g_ptr_array_new_with_free_func((GDestroyNotify)watch_tree_free);
	for (guint i = 0; i < trees->len; i++) {
		struct tree_poll tp = {
			.db = db, .repo = repo, .config = config, .tree = trees->pdata[i],
			.now = g_get_real_time() / G_USEC_PER_SEC,
		};
		struct watch_tree *result = g_new0(struct watch_tree, 1);
		g_autoptr(GError) failure = NULL;

		result->tree = g_strdup(tp.tree->name);
		result->changes = g_ptr_array_new_with_free_func((GDestroyNotify)watch_change_free);
		g_ptr_array_add(results, result);
		if (!tasks[i].heads) {
			record_failure(db, tp.tree, tp.now, result, tasks[i].error);
			g_clear_error(&tasks[i].error);
			continue;
		}
		if (!poll_tree(&tp, tasks[i].heads, result, &failure))
			record_failure(db, tp.tree, tp.now, result, failure);
		g_ptr_array_unref(tasks[i].heads);
	}
	close(lock);
	return g_steal_pointer(&results);
}
