/*
 * Export: the objects of one commit copied out of the store into another
 * bare repository (a cluster's shared spool), as one pack of what that
 * repository lacks.
 */
#define G_LOG_DOMAIN "engine"

#include "autoconfig.h"

#include <string.h>
#include <unistd.h>

#include "engine/repo-private.h"
#include "engine/run.h"

#define EXPORT_REFS "refs/spool/"

char *repo_first_parent(struct repo *repo, const char *oid, GError **error)
{
	return repo_commit_first_parent(repo->git, oid, error);
}

/* Opens the bare repository at @path, creating it when missing; libgit2's code. */
static int open_or_init(git_repository **out, const char *path)
{
	int rc = git_repository_open_bare(out, path);

	if (rc == GIT_ENOTFOUND)
		rc = git_repository_init(out, path, 1);
	return rc;
}

/*
 * Hides from @walk every commit @dst's export refs name that @src has:
 * what @dst holds already is not packed again.
 */
static int hide_exported(git_revwalk *walk, git_repository *src, git_repository *dst)
{
	git_reference_iterator *it = NULL;
	git_reference *ref;
	int rc = git_reference_iterator_glob_new(&it, dst, EXPORT_REFS "*");

	while (rc == 0 && (rc = git_reference_next(&ref, it)) == 0) {
		const git_oid *id = git_reference_target(ref);
		git_commit *c = NULL;

		if (id && git_commit_lookup(&c, src, id) == 0) {
			rc = git_revwalk_hide(walk, id);
			git_commit_free(c);
		}
		git_reference_free(ref);
	}
	git_reference_iterator_free(it);
	return rc == GIT_ITEROVER ? 0 : rc;
}

/* The pack being written: libgit2's indexer keeps its counts in @stats, append to commit. */
struct pack_out {
	git_odb_writepack *wp;
	git_indexer_progress stats;
};

static int append_pack(void *buf, size_t size, void *payload)
{
	struct pack_out *out = payload;

	return out->wp->append(out->wp, buf, size, &out->stats);
}

/* Writes the objects of @id that @dst lacks into @dst's object store; libgit2's code. */
static int copy_objects(git_repository *src, git_repository *dst, const git_oid *id)
{
	git_packbuilder *pb = NULL;
	git_revwalk *walk = NULL;
	git_odb *odb = NULL;
	struct pack_out out = { 0 };
	int rc = git_packbuilder_new(&pb, src);

	/* The first export of a kernel tree compresses all of it: every CPU helps. */
	if (rc == 0)
		git_packbuilder_set_threads(pb, 0);
	if (rc == 0)
		rc = git_revwalk_new(&walk, src);
	if (rc == 0)
		rc = git_revwalk_push(walk, id);
	if (rc == 0)
		rc = hide_exported(walk, src, dst);
	if (rc == 0)
		rc = git_packbuilder_insert_walk(pb, walk);
	if (rc == 0)
		rc = git_repository_odb(&odb, dst);
	if (rc == 0)
		rc = git_odb_write_pack(&out.wp, odb, NULL, NULL);
	if (rc == 0)
		rc = git_packbuilder_foreach(pb, append_pack, &out);
	if (rc == 0)
		rc = out.wp->commit(out.wp, &out.stats);
	if (out.wp)
		out.wp->free(out.wp);
	git_odb_free(odb);
	git_revwalk_free(walk);
	git_packbuilder_free(pb);
	return rc;
}

bool repo_export(struct repo *repo, const char *oid, const char *dest, GError **error)
{
	g_autofree char *name = g_strconcat(EXPORT_REFS, oid, NULL);
	g_autofree char *lock_path = NULL;
	git_repository *dst = NULL;
	git_reference *ref = NULL;
	git_commit *commit;
	git_oid id;
	int lock, rc;

	commit = repo_commit_get(repo->git, oid, &id, error);
	if (!commit)
		return false;
	git_commit_free(commit);
	/*
	 * One export to @dest at a time, from every thread and process, so that
	 * each opens @dest after the last one's pack and ref landed. The lock
	 * is beside @dest, which may not exist yet.
	 */
	lock_path = g_strconcat(dest, ".lock", NULL);
	lock = run_lock(lock_path, error);
	if (lock < 0)
		return false;
	rc = open_or_init(&dst, dest);
	if (rc == 0) {
		git_odb *odb = NULL;

		rc = git_repository_odb(&odb, dst);
		if (rc == 0 && !git_odb_exists(odb, &id))
			rc = copy_objects(repo->git, dst, &id);
		git_odb_free(odb);
	}
	/* The ref keeps the commit alive there, and tells the next export what is there. */
	if (rc == 0)
		rc = git_reference_create(&ref, dst, name, &id, 1, "zeroday export");
	git_reference_free(ref);
	git_repository_free(dst);
	close(lock);
	if (rc < 0) {
		repo_git_error(error, rc, dest);
		return false;
	}
	return true;
}
