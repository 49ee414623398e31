/*
 * Tree watching: `zeroday poll`. Lists every subscribed tree's branches,
 * fetches the heads that moved into the shared store, records the changes
 * and selects the commits to test.
 */
#ifndef ZERODAY_WATCH_H
#define ZERODAY_WATCH_H

#include <stdbool.h>
#include <glib.h>

#include "bot/config.h"
#include "bot/store/db.h"
#include "engine/repo.h"

/* One branch head change seen by a poll. */
struct watch_change {
	struct head_event *event; /* as recorded */
	GPtrArray *commits;       /* struct repo_commit selected for testing */
};

/* What one poll did to one tree. */
struct watch_tree {
	char *tree;
	char *error;      /* why the poll of this tree failed, or NULL */
	unsigned branches;  /* branches followed after the poll */
	GPtrArray *changes; /* struct watch_change */
};

void watch_tree_free(struct watch_tree *result);

/*
 * Polls the trees named in @only (NULL-terminated; NULL or empty for all).
 * A tree that fails (network, timeout) is recorded with its error and does
 * not stop the others. Only one poll runs per state directory at a time;
 * another fails with BOT_ERROR_BUSY.
 *
 * Returns an array of struct watch_tree in tree-name order, or NULL with
 * @error set when nothing could be polled (unknown tree, lock, database).
 */
GPtrArray *watch_poll(struct db *db, struct repo *repo, const struct config *config,
		      const char *const *only, GError **error);

#endif
