/*
 * bench/farm: the load of the test farm zeroday is modelled on (the 2012
 * Kernel Summit account: 180 trees, 40 new heads and 200 commits a day,
 * 140 configurations a commit, heads booted several times, bisections
 * when something fails), driven through zeroday's own job queue: every
 * job is queued with db_job_add() and taken with db_job_claim() by
 * simulated build nodes, on a simulated clock.
 *
 * Costs are arguments (seconds): an incremental build step, a boot, and
 * their defaults, which bench/build and bench/boot measure on a machine
 * (a tinyconfig step and a TCG boot here are far cheaper than a farm's
 * defconfig step; pass the farm's). A head is reported when each of its
 * configurations is built and its bootable ones are booted BOOTS times
 * on the boot hosts; a failing head (FAIL of them) is bisected first,
 * ceil(log2(commits since the last head)) more builds in a row.
 *
 * It prints, for 1, 5, 10 and 20 build nodes and 8 boot hosts: push to
 * report p50/p90 of the heads, the deepest queue, the nodes' use (the
 * store in memory: the clock is simulated); then
 * the fewest nodes with p90 under an hour (or that none is). Nodes claim
 * as the Slurm executor does, a running build holding its tree's target;
 * one more row gives 20 nodes claiming as the local executor does, a
 * running build holding its whole tree. Then the control plane: jobs queued, claimed and completed a second by
 * one zeroday with instant builds and its store on disk, with 0, 5,000
 * and 30,000 jobs queued behind, against the 100 a second it must keep.
 *
 * usage: bench/farm [STEP-SECONDS [BOOT-SECONDS [CONFIGS]]]
 */
#include "autoconfig.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <glib/gstdio.h>

#include "bot/bot.h"
#include "bot/store/db.h"

#define TREES 180
#define HEADS_A_DAY 40
#define COMMITS_A_DAY 200
#define BOOT_HOSTS 8
#define BOOTS 3           /* a head's boots of each bootable configuration */
#define BOOTABLE_EVERY 10 /* one configuration in ten boots */
#define FAIL 0.05         /* of the heads, those that break something */
#define DAY (24 * 3600)
#define SEED 2012

enum event_kind { EV_PUSH, EV_BUILT, EV_BOOTED };

struct event {
	gint64 when;
	enum event_kind kind;
	guint node;    /* EV_BUILT: which node */
	gint64 job_id; /* EV_BUILT */
	guint head;    /* EV_BOOTED, EV_PUSH (a head's index, or G_MAXUINT for a commit) */
	guint tree;    /* EV_PUSH */
};

struct head {
	gint64 pushed;
	guint left;     /* jobs and boots before it is reported */
	guint bisect;   /* bisection builds still to queue after its failing build */
	gint64 reported;
};

struct farm {
	struct db *db;
	GSequence *events;
	GArray *heads;             /* struct head */
	GHashTable *head_of;       /* commit id -> head index + 1 */
	gint64 *trees;             /* tree ids */
	guint nodes;
	gint64 *node_busy;         /* per node: the job it runs, 0 idle */
	char **node_commit;        /* per node: that job's commit */
	gint64 node_seconds;       /* build seconds in all */
	guint boot_free;           /* boot hosts idle */
	GQueue boots_waiting;      /* head index + 1, one per boot */
	guint queued, deepest;
	double step, boot;
	guint configs;
	enum job_claim_scope scope;
	GRand *rand;
	guint serial;
};

static gint event_cmp(gconstpointer a, gconstpointer b, gpointer data)
{
	const struct event *x = a, *y = b;

	(void)data;
	if (x->when != y->when)
		return x->when < y->when ? -1 : 1;
	return x < y ? -1 : x > y;
}

static void schedule(struct farm *f, struct event e)
{
	g_sequence_insert_sorted(f->events, g_memdup2(&e, sizeof(e)), event_cmp, NULL);
}

/* Queues the configurations of a commit of tree @tree; @head (or G_MAXUINT) it is. */
static void queue_commit(struct farm *f, guint tree, guint head, gint64 now)
{
	char commit[41];
	bool added;

	g_snprintf(commit, sizeof(commit), "%040u", ++f->serial);
	if (head != G_MAXUINT)
		g_hash_table_insert(f->head_of, g_strdup(commit), GUINT_TO_POINTER(head + 1));
	for (guint c = 0; c < f->configs; c++) {
		char target[32];

		g_snprintf(target, sizeof(target), "x86_64:config%u", c);
		if (!db_job_add(f->db, JOB_KIND_BUILD, f->trees[tree], commit, target,
				head != G_MAXUINT ? JOB_HEAD : JOB_BACKLOG, &added, NULL))
			g_error("queueing a job");
		f->queued++;
	}
	f->deepest = MAX(f->deepest, f->queued);
	(void)now;
}

static struct head *head_find(struct farm *f, const char *commit, guint *index)
{
	guint i = GPOINTER_TO_UINT(g_hash_table_lookup(f->head_of, commit));

	if (!i)
		return NULL;
	*index = i - 1;
	return &g_array_index(f->heads, struct head, i - 1);
}

static void head_done_one(struct farm *f, guint index, gint64 now)
{
	struct head *h = &g_array_index(f->heads, struct head, index);

	if (--h->left == 0)
		h->reported = now;
}

/* Idle nodes take jobs (when @builds); idle boot hosts take boots. */
static void dispatch(struct farm *f, gint64 now, bool builds)
{
	for (guint n = 0; builds && n < f->nodes; n++) {
		g_autofree char *owner = NULL;
		struct job_row *job = NULL;

		if (f->node_busy[n])
			continue;
		owner = g_strdup_printf("node%u", n);
		if (!db_job_claim(f->db, owner, f->scope, now, 7 * DAY, &job, NULL))
			g_error("claiming a job");
		if (!job)
			break; /* nothing claimable: what is queued waits for a running build */
		f->node_busy[n] = job->id;
		g_free(f->node_commit[n]);
		f->node_commit[n] = g_strdup(job->commit);
		f->queued--;
		schedule(f, (struct event){ .when = now + (gint64)f->step, .kind = EV_BUILT,
					    .node = n, .job_id = job->id });
		job_row_free(job);
	}
	while (f->boot_free && f->boots_waiting.length) {
		guint head = GPOINTER_TO_UINT(g_queue_pop_head(&f->boots_waiting)) - 1;

		f->boot_free--;
		schedule(f, (struct event){ .when = now + (gint64)f->boot, .kind = EV_BOOTED,
					    .head = head });
	}
}

static void built(struct farm *f, const struct event *e)
{
	g_autofree char *owner = g_strdup_printf("node%u", e->node);
	guint index = 0;
	struct head *h = head_find(f, f->node_commit[e->node], &index);

	if (h && h->bisect) {
		/* A failing head's first build: bisected there, one build after another. */
		f->node_seconds += (gint64)(f->step * h->bisect);
		schedule(f, (struct event){ .when = e->when + (gint64)(f->step * h->bisect),
					    .kind = EV_BUILT, .node = e->node,
					    .job_id = e->job_id });
		h->bisect = 0;
		return;
	}
	if (!db_job_complete(f->db, e->job_id, owner, JOB_RESULT_PASS, NULL, e->when, NULL))
		g_error("completing a job");
	f->node_busy[e->node] = 0;
	f->node_seconds += (gint64)f->step;
	if (!h)
		return;
	if (e->job_id % BOOTABLE_EVERY == 0) {
		for (guint b = 0; b < BOOTS; b++)
			g_queue_push_tail(&f->boots_waiting, GUINT_TO_POINTER(index + 1));
		h->left += BOOTS;
	}
	head_done_one(f, index, e->when);
}

static void push(struct farm *f, const struct event *e)
{
	if (e->head == G_MAXUINT) {
		queue_commit(f, e->tree, G_MAXUINT, e->when);
		return;
	}
	g_array_index(f->heads, struct head, e->head).pushed = e->when;
	queue_commit(f, e->tree, e->head, e->when);
}

static int cmp_gint64(const void *a, const void *b)
{
	gint64 x = *(const gint64 *)a, y = *(const gint64 *)b;

	return x < y ? -1 : x > y;
}

struct day {
	double p50, p90; /* push to report of the heads, seconds; -1 when some never were */
	guint deepest;
	double use;      /* of the nodes' time, until the last build */
	guint unreported;
};

static struct day run_day(guint nodes, enum job_claim_scope scope, double step, double boot,
			  guint configs)
{
	g_autoptr(GArray) times = g_array_new(FALSE, FALSE, sizeof(gint64));
	struct farm f = { .nodes = nodes, .scope = scope, .step = step, .boot = boot,
			  .configs = configs, .boot_free = BOOT_HOSTS };
	struct day d = { 0 };
	gint64 end = 0;

	/* The clock is simulated: the store's writes need not reach a disk. */
	f.db = db_open(":memory:", NULL);
	g_assert(f.db);
	f.events = g_sequence_new(g_free);
	f.heads = g_array_new(FALSE, TRUE, sizeof(struct head));
	f.head_of = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	f.trees = g_new0(gint64, TREES);
	f.node_busy = g_new0(gint64, nodes);
	f.node_commit = g_new0(char *, nodes + 1);
	f.rand = g_rand_new_with_seed(SEED);
	for (guint t = 0; t < TREES; t++) {
		g_autofree char *name = g_strdup_printf("tree%u", t);
		struct tree_row row = { .name = name, .url = (char *)"git://example.org/t" };

		if (!db_tree_insert(f.db, &row, NULL))
			g_error("adding a tree");
		f.trees[t] = row.id;
	}
	/* The day's pushes, spread at random over it. */
	for (guint i = 0; i < HEADS_A_DAY + COMMITS_A_DAY; i++) {
		struct event e = { .when = g_rand_int_range(f.rand, 0, DAY), .kind = EV_PUSH,
				   .tree = (guint)g_rand_int_range(f.rand, 0, TREES),
				   .head = G_MAXUINT };

		if (i < HEADS_A_DAY) {
			struct head h = { .left = configs };

			/* Commits since the last head: bisected over when it fails. */
			if (g_rand_double(f.rand) < FAIL)
				h.bisect = (guint)ceil(log2(1 + COMMITS_A_DAY / HEADS_A_DAY));
			e.head = f.heads->len;
			g_array_append_val(f.heads, h);
		}
		schedule(&f, e);
	}
	while (g_sequence_get_length(f.events)) {
		GSequenceIter *first = g_sequence_get_begin_iter(f.events);
		struct event e = *(struct event *)g_sequence_get(first);

		g_sequence_remove(first);
		if (e.kind == EV_PUSH) {
			push(&f, &e);
		} else if (e.kind == EV_BUILT) {
			built(&f, &e);
			end = e.when;
		} else {
			f.boot_free++;
			head_done_one(&f, e.head, e.when);
		}
		/* A boot frees no build node and no tree: only boots can start then. */
		dispatch(&f, e.when, e.kind != EV_BOOTED);
	}
	for (guint i = 0; i < f.heads->len; i++) {
		const struct head *h = &g_array_index(f.heads, struct head, i);
		gint64 took = h->reported - h->pushed;

		if (h->reported)
			g_array_append_val(times, took);
		else
			d.unreported++;
	}
	g_array_sort(times, cmp_gint64);
	d.p50 = times->len ? (double)g_array_index(times, gint64, times->len / 2) : -1;
	d.p90 = times->len ? (double)g_array_index(times, gint64, (times->len * 9) / 10) : -1;
	d.deepest = f.deepest;
	d.use = end ? (double)f.node_seconds / ((double)end * nodes) : 0;
	g_rand_free(f.rand);
	g_free(f.node_busy);
	g_strfreev(f.node_commit);
	g_free(f.trees);
	g_hash_table_unref(f.head_of);
	g_array_unref(f.heads);
	g_sequence_free(f.events);
	db_close(f.db);
	return d;
}

/*
 * Jobs a second through queue, claim and complete, with instant builds
 * and the store on disk, @depth jobs queued behind them all along.
 */
static double control_plane(guint depth, guint jobs)
{
	g_autofree char *dir = g_dir_make_tmp("zeroday-farm-XXXXXX", NULL);
	g_autofree char *path = g_build_filename(dir, "farm.db", NULL);
	g_autofree char *wal = g_strconcat(path, "-wal", NULL);
	g_autofree char *shm = g_strconcat(path, "-shm", NULL);
	struct db *db = db_open(path, NULL);
	gint64 start, took;
	bool added;

	g_assert(db);
	for (guint t = 0; t < TREES; t++) {
		g_autofree char *name = g_strdup_printf("tree%u", t);
		struct tree_row row = { .name = name, .url = (char *)"git://example.org/t" };

		if (!db_tree_insert(db, &row, NULL))
			g_error("adding a tree");
	}
	/* The queue behind: backlog, which the heads below overtake. */
	if (!db_tx_begin(db, NULL))
		g_error("a transaction");
	for (guint i = 0; i < depth; i++) {
		char commit[41];

		g_snprintf(commit, sizeof(commit), "b%039u", i);
		if (!db_job_add(db, JOB_KIND_BUILD, (gint64)(i % TREES) + 1, commit,
				"x86_64:tinyconfig", JOB_BACKLOG, &added, NULL))
			g_error("queueing a job");
	}
	if (!db_tx_commit(db, NULL))
		g_error("a transaction");
	start = g_get_monotonic_time();
	for (guint i = 0; i < jobs; i++) {
		char commit[41];
		struct job_row *job = NULL;

		g_snprintf(commit, sizeof(commit), "h%039u", i);
		if (!db_job_add(db, JOB_KIND_BUILD, (gint64)(i % TREES) + 1, commit,
				"x86_64:tinyconfig", JOB_HEAD, &added, NULL) ||
		    !db_job_claim(db, "node", JOB_CLAIM_TARGET, i, 3600, &job, NULL) || !job ||
		    !db_job_complete(db, job->id, "node", JOB_RESULT_PASS, NULL, i, NULL))
			g_error("a job's round trip");
		job_row_free(job);
	}
	took = g_get_monotonic_time() - start;
	db_close(db);
	g_unlink(path);
	g_unlink(wal);
	g_unlink(shm);
	g_rmdir(dir);
	return jobs / ((double)took / G_USEC_PER_SEC);
}

static void print_time(const char *what, double s)
{
	if (s < 0)
		printf(" %s never", what);
	else
		printf(" %s %.0f min", what, s / 60);
}

/* One row of the table: a day on @nodes build nodes. */
static struct day print_day(guint nodes, enum job_claim_scope scope, double step, double boot,
			    guint configs, const char *how)
{
	struct day d = run_day(nodes, scope, step, boot, configs);

	printf("farm: %2u nodes%s:", nodes, how);
	print_time("push to report p50", d.p50);
	print_time("p90", d.p90);
	printf(", deepest queue %u jobs, nodes busy %.0f%%", d.deepest, d.use * 100);
	if (d.unreported)
		printf(", %u heads never reported", d.unreported);
	printf("\n");
	return d;
}

static bool within_an_hour(const struct day *d)
{
	return d->p90 >= 0 && d->p90 < 3600 && !d->unreported;
}

int main(int argc, char **argv)
{
	static const guint node_counts[] = { 1, 5, 10, 20 };
	static const guint depths[] = { 0, 5000, 30000 };
	double step = argc > 1 ? atof(argv[1]) : 60;
	double boot = argc > 2 ? atof(argv[2]) : 30;
	guint configs = argc > 3 ? (guint)atoi(argv[3]) : 140;
	guint enough = 0;

	/* A row as soon as it is known: a day at 140 configurations takes minutes. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("farm: %u trees, %u heads and %u commits a day, %u configurations each, "
	       "a build step %.0f s, a boot %.0f s, %u boot hosts, %u boots a bootable head\n",
	       TREES, HEADS_A_DAY, COMMITS_A_DAY, configs, step, boot, BOOT_HOSTS, BOOTS);
	/* The Slurm executor's claims: a running build holds its tree's target. */
	for (size_t i = 0; i < G_N_ELEMENTS(node_counts); i++) {
		struct day d = print_day(node_counts[i], JOB_CLAIM_TARGET, step, boot, configs, "");

		if (!enough && within_an_hour(&d))
			enough = node_counts[i];
	}
	/* Halving down from the first count that is enough, to the fewest that are. */
	if (enough) {
		guint low = 1, high = enough;

		for (size_t i = 0; i < G_N_ELEMENTS(node_counts) && node_counts[i] < enough; i++)
			low = node_counts[i] + 1;
		while (low < high) {
			guint mid = low + (high - low) / 2;
			struct day d = run_day(mid, JOB_CLAIM_TARGET, step, boot, configs);

			if (within_an_hour(&d))
				high = mid;
			else
				low = mid + 1;
		}
		printf("farm: p90 under an hour from %u nodes\n", high);
	} else {
		printf("farm: p90 under an hour with none of these\n");
	}
	/* The local executor's claims, which hold a whole tree, on a farm. */
	print_day(node_counts[G_N_ELEMENTS(node_counts) - 1], JOB_CLAIM_TREE, step, boot, configs,
		  ", a tree at a time");
	for (size_t i = 0; i < G_N_ELEMENTS(depths); i++) {
		double rate = control_plane(depths[i], 1000);

		printf("farm: control plane, %u jobs queued behind: %.0f jobs a second queued, "
		       "claimed and completed (instant builds, the store on disk), %.1fx the 100 "
		       "a second a farm needs\n", depths[i], rate, rate / 100);
	}
	return 0;
}
