/*
 * What the bot's unit tests share: a configuration under a test's
 * scratch directory with the source's templates, and the tree "kb" in a
 * store in memory.
 */
#ifndef ZERODAY_TESTBOT_H
#define ZERODAY_TESTBOT_H

#include <glib.h>

#include "bot/config.h"
#include "bot/store/db.h"

/*
 * A configuration: state under @dir, builds unsandboxed, the robot's
 * address and name, an archive URL and the source's templates; then
 * @build lines of [build] and @mail lines of [mail] (either may be NULL).
 */
struct config *testbot_config(const char *dir, const char *build, const char *mail);

/* A store in memory, migrated. */
struct db *testbot_db(void);

/*
 * A tree row as the tests use it, to be given more fields and added with
 * testbot_tree_add(): @name at git://example.org/NAME.git, following
 * @branches and mailing @lists (comma-separated; NULL: none), with an
 * empty blacklist and no --cc, created at @created.
 */
struct tree_row *testbot_tree(const char *name, const char *branches, const char *lists,
			      gint64 created);

/* Inserts @t into @db (asserting it goes in) and returns its id. */
gint64 testbot_tree_add(struct db *db, struct tree_row *t);

#endif
