/*
 * Tree operations that the command line and mail commands share: add,
 * edit, blacklist and remove a subscribed tree. Every value that comes
 * from outside (names, URLs, patterns, bases, targets, addresses) is
 * checked here before anything is stored; each operation runs in its own
 * transaction, so a refused request changes nothing. Nothing here prints.
 *
 * Errors: the checks' own errors propagate unchanged (ENGINE_ERROR_INVALID
 * for a refused name, URL, pattern or target; MAIL_ERROR_INVALID for a
 * refused address); a malformed base or policy is BOT_ERROR_USAGE; an
 * unknown tree is BOT_ERROR_NOT_FOUND, a taken name BOT_ERROR_EXISTS;
 * store failures are the store's.
 */
#ifndef ZERODAY_TREES_H
#define ZERODAY_TREES_H

#include <stdbool.h>
#include <glib.h>

#include "bot/config.h"
#include "bot/store/db.h"
#include "engine/repo.h"

/* A new tree. Every pointer is borrowed; NULL lists are empty. */
struct tree_spec {
	const char *name; /* 1 to 64 of [A-Za-z0-9._-] (names_tree_check()) */
	const char *url;  /* checked against the config's allow-ssh / allow-local */
	bool non_rebasable;             /* test the head only, and bisect when it fails */
	const char *const *branches;    /* patterns to follow; NULL or empty: "*" */
	const char *const *blacklist;   /* patterns to skip */
	const char *base;               /* "TREE/BRANCH" counted as upstream, or NULL */
	const char *const *recipients;  /* the maintainers' addresses (--cc), normalized */
	const char *const *targets;     /* build targets; empty: the configured defaults */
	const char *const *lists;       /* the tree's mailing lists, normalized */
	bool private;                   /* reports go to @recipients only */
	bool mail_clean;                /* a clean build of a head gets a mail */
	bool regzbot;                   /* verified regressions carry regzbot's line */
	const char *const *prefixes;    /* subject prefixes choosing the tree for a series */
	const char *subscriber;         /* who subscribed it by mail (normalized), or NULL */
	const char *const *payloads;    /* its boots' payloads; empty: [boot] payloads */
};

/*
 * Subscribes the tree @spec describes, after checking every field.
 * Returns the stored row (caller frees with tree_row_free()), or NULL.
 */
struct tree_row *trees_add(struct db *db, const struct config *config,
			   const struct tree_spec *spec, GError **error);

/* A yes-or-no setting in a struct tree_edit: left as it is, turned on, turned off. */
enum tree_switch {
	TREE_KEEP,
	TREE_ON,
	TREE_OFF,
};

/*
 * A change of a tree's settings. Every pointer is borrowed; NULL (false,
 * TREE_KEEP) leaves a setting as it is.
 */
struct tree_edit {
	const char *url;
	const char *policy;                  /* "rebasable" or "non-rebasable" */
	const char *const *branches;         /* replaces the patterns followed */
	const char *const *blacklist_add;    /* patterns added to the blacklist */
	const char *const *blacklist_drop;   /* patterns removed from it */
	const char *base;                    /* "TREE/BRANCH"; "" clears it */
	const char *const *recipients_add;   /* addresses, normalized first */
	const char *const *recipients_drop;  /* addresses, normalized first */
	const char *const *targets;          /* replaces the build targets */
	bool default_targets; /* without @targets: build for the configured defaults */
	const char *const *lists_add;        /* mailing lists, normalized first */
	const char *const *lists_drop;       /* mailing lists, normalized first */
	enum tree_switch private;            /* reports to the maintainers (recipients) only */
	enum tree_switch mail_clean;         /* a clean build of a head gets a mail */
	enum tree_switch regzbot;            /* verified regressions carry regzbot's line */
	const char *const *prefixes_add;     /* subject prefixes ("net-next") */
	const char *const *prefixes_drop;
	const char *const *payloads;         /* replaces its boots' payloads */
	bool default_payloads; /* without @payloads: boot with [boot] payloads */
};

/*
 * Applies @edit to the tree named @name, after checking every value. An
 * edited list keeps its items that are not dropped, followed by the items
 * added that it did not hold already; addresses are compared normalized,
 * and without case (address_key()). @config may be NULL when @edit->url
 * is. Returns the updated row (caller frees with tree_row_free()), or NULL.
 */
struct tree_row *trees_edit(struct db *db, const struct config *config, const char *name,
			    const struct tree_edit *edit, GError **error);

/*
 * Adds @pattern to (@add) or removes it from the blacklist of the tree
 * named @name: branches matching it are skipped from the next poll on.
 */
bool trees_blacklist(struct db *db, const char *name, const char *pattern, bool add,
		     GError **error);

/*
 * Unsubscribes the tree named @name and forgets everything recorded for
 * it, then deletes its refs from @repo (may be NULL: left alone). A
 * failure to delete the refs is only logged: they keep objects alive,
 * nothing more.
 */
bool trees_remove(struct db *db, struct repo *repo, const char *name, GError **error);

/*
 * Sets *@holds: whether @commit is on a tested branch of @t (one of its
 * heads, or an ancestor of one), so that a commit named by a stranger is
 * taken as this tree's only when it is. False only when the store fails.
 */
bool trees_holds_commit(struct db *db, struct repo *repo, const struct tree_row *t,
			const char *commit, bool *holds, GError **error);

#endif
