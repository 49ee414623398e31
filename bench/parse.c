/*
 * bench/parse: parses and classifies every mail of a directory with
 * patchmail_parse() (mail/patchmail.c), for bench/parse.sh, which runs
 * bench/parse-email.py on the same files as the baseline.
 *
 * The files are read into memory first, untimed; then all of them are
 * parsed, classified and freed, three times, and the best run counts.
 * Output, one "key value ..." line each, the same keys as the baseline's:
 *   messages 10000 bytes 102533813
 *   best 0.812 s, 12315 msg/s, 120.4 MB/s
 *   kinds patch 4100 cover 500 reply 3500 other 1900 diffs 4300 refused 0
 * With --list=FILE, an untimed fourth pass writes "NAME KIND DIFF" per
 * mail to FILE ("refused" for a refused mail, DIFF 1 when one was
 * found), sorted by name, so that the two sides can be compared mail by
 * mail.
 *
 * usage: bench/parse [--list=FILE] DIR
 */
#include "autoconfig.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mail/patchmail.h"

#define RUNS 3

struct corpus {
	GPtrArray *names; /* char * */
	GPtrArray *data;  /* GBytes * */
	gsize bytes;
};

/* The counts both sides print: by kind, mails with a diff, refused mails. */
struct counts {
	guint kinds[PATCHMAIL_REPLY + 1];
	guint diffs;
	guint refused;
};

static int cmp_names(gconstpointer a, gconstpointer b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bool corpus_load(struct corpus *c, const char *dir, GError **error)
{
	g_autoptr(GDir) d = g_dir_open(dir, 0, error);
	const char *name;

	if (!d)
		return false;
	c->names = g_ptr_array_new_with_free_func(g_free);
	c->data = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
	c->bytes = 0;
	while ((name = g_dir_read_name(d)))
		g_ptr_array_add(c->names, g_strdup(name));
	g_ptr_array_sort(c->names, cmp_names);
	for (guint i = 0; i < c->names->len; i++) {
		g_autofree char *path = g_build_filename(dir, c->names->pdata[i], NULL);
		char *text;
		gsize len;

		if (!g_file_get_contents(path, &text, &len, error))
			return false;
		g_ptr_array_add(c->data, g_bytes_new_take(text, len));
		c->bytes += len;
	}
	return true;
}

static void corpus_release(struct corpus *c)
{
	g_clear_pointer(&c->names, g_ptr_array_unref);
	g_clear_pointer(&c->data, g_ptr_array_unref);
}

/* Parses and classifies mail @i into @counts; writes its line to @list unless NULL. */
static void parse_one(const struct corpus *c, guint i, struct counts *counts, FILE *list)
{
	g_autoptr(GError) error = NULL;
	gsize len;
	const char *data = g_bytes_get_data(c->data->pdata[i], &len);
	struct patchmail *m = patchmail_parse(data, len, PATCHMAIL_SIZE_DEFAULT, &error);

	if (!m) {
		counts->refused++;
		if (list)
			fprintf(list, "%s refused 0 %s\n", (const char *)c->names->pdata[i], error->message);
		return;
	}
	counts->kinds[m->kind]++;
	if (m->diff)
		counts->diffs++;
	if (list)
		fprintf(list, "%s %s %d\n", (const char *)c->names->pdata[i],
			patchmail_kind_name(m->kind), m->diff != NULL);
	patchmail_free(m);
}

int main(int argc, char **argv)
{
	g_autoptr(GError) error = NULL;
	struct corpus c = { 0 };
	struct counts counts = { 0 };
	const char *list_path = NULL, *dir;
	gint64 best = G_MAXINT64;

	if (argc == 3 && g_str_has_prefix(argv[1], "--list=")) {
		list_path = argv[1] + strlen("--list=");
		argv++;
		argc--;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: bench/parse [--list=FILE] DIR\n");
		return 2;
	}
	dir = argv[1];
	if (!corpus_load(&c, dir, &error)) {
		fprintf(stderr, "bench/parse: %s\n", error->message);
		corpus_release(&c);
		return 1;
	}
	if (c.names->len == 0) {
		fprintf(stderr, "bench/parse: no mail in %s\n", dir);
		corpus_release(&c);
		return 1;
	}
	for (int run = 0; run < RUNS; run++) {
		gint64 t0 = g_get_monotonic_time(), t;

		memset(&counts, 0, sizeof(counts));
		for (guint i = 0; i < c.names->len; i++)
			parse_one(&c, i, &counts, NULL);
		t = g_get_monotonic_time() - t0;
		best = MIN(best, MAX(t, 1));
	}
	printf("messages %u bytes %" G_GSIZE_FORMAT "\n", c.names->len, c.bytes);
	printf("best %.3f s, %.0f msg/s, %.1f MB/s\n", best / 1e6, c.names->len / (best / 1e6),
	       c.bytes / 1e6 / (best / 1e6));
	printf("kinds patch %u cover %u reply %u other %u diffs %u refused %u\n",
	       counts.kinds[PATCHMAIL_PATCH], counts.kinds[PATCHMAIL_COVER],
	       counts.kinds[PATCHMAIL_REPLY], counts.kinds[PATCHMAIL_OTHER], counts.diffs,
	       counts.refused);
	if (list_path) {
		FILE *list = fopen(list_path, "w");
		struct counts again = { 0 };

		if (!list) {
			perror(list_path);
			corpus_release(&c);
			return 1;
		}
		for (guint i = 0; i < c.names->len; i++)
			parse_one(&c, i, &again, list);
		if (fclose(list) != 0) {
			perror(list_path);
			corpus_release(&c);
			return 1;
		}
	}
	corpus_release(&c);
	return 0;
}
