/*
 * Mailing-list mail as data. The subject tags of kernel mail, table
 * driven, with where b4 reads them differently ([PATCH 3/2] kept); RFC
 * 2047 subjects and display names, past GMime 3.2.13's cut of adjacent
 * base64 words. A diff kept in its mail's bytes (ISO-8859-1), its
 * message converted; the lines that declare prerequisites. A
 * corpus made with the real `git format-patch` (tests/data/patchmail,
 * generate.py there): a series with its cover letter and base, a patch
 * quoted-printable, one base64 in ISO-8859-1, one attached, one with an
 * in-body From, a review quoting the diff and a reply with a fixup diff;
 * the diffs extracted byte for byte and applied in order with the real
 * `git apply`. Refusals: too large, headers too large, too many parts
 * (bombs built here, and timed), nested too deep, a multipart cut short,
 * GMime's critical warnings, no or a bad Message-ID. And a fuzz loop of
 * mutated corpus mails and random bytes, under the sanitizers. What is
 * stored with a mail (patchmail_pack()) read back field for field, for
 * the corpus and every mail the fuzz loop accepts; bytes of another
 * layout, or cut short, refused.
 */
#include "autoconfig.h"

#include <string.h>

#include "mail/mail.h"
#include "mail/patchmail.h"
#include "tests/testlib.h"

/* The series of the corpus: its Message-IDs and its base. */
#define SERIES_ID(n) "20231114211320.3188529-" #n "-marta.kowalska@example.com"
#define BASE_COMMIT "6d41032548566f30f54461fea258dcf4c50f78e0"
#define MARTA "Marta Kowalska <marta.kowalska@example.com>"

/* Fuzzing: mails tried, and the longest one may take (sanitizers included). */
#define FUZZ_ROUNDS 2000
#define FUZZ_MAIL_SECONDS 2.0
/* A bomb must be refused in this many seconds at most. */
#define BOMB_SECONDS 10.0

static char *data_path(const char *name)
{
	return g_build_filename(ZERODAY_SRCDIR, "tests", "data", "patchmail", name, NULL);
}

static char *data_file(const char *name, gsize *len)
{
	g_autofree char *path = data_path(name);
	g_autoptr(GError) error = NULL;
	char *text = NULL;

	g_file_get_contents(path, &text, len, &error);
	g_assert_no_error(error);
	return text;
}

static struct patchmail *parse_file(const char *name)
{
	gsize len = 0;
	g_autofree char *text = data_file(name, &len);
	g_autoptr(GError) error = NULL;
	struct patchmail *m = patchmail_parse(text, len, PATCHMAIL_SIZE_DEFAULT, &error);

	g_assert_no_error(error);
	g_assert_nonnull(m);
	if (m)
		g_test_message("%s: %s, %s", name, patchmail_kind_name(m->kind), m->subject);
	return m;
}

static struct patchmail *parse_text(const char *text, GError **error)
{
	return patchmail_parse(text, strlen(text), PATCHMAIL_SIZE_DEFAULT, error);
}

/* The strings of @a joined by a space. */
static char *joined(GPtrArray *a)
{
	g_autoptr(GString) s = g_string_new(NULL);

	for (guint i = 0; a && i < a->len; i++)
		g_string_append_printf(s, "%s%s", i ? " " : "", (const char *)a->pdata[i]);
	return g_strdup(s->str);
}

/* ---- Subject tags ---- */

static const struct subject_case {
	const char *subject;
	const char *title;
	const char *prefixes;
	guint version, n, total;
	bool reply, patch, cover, rfc, resend;
} subject_cases[] = {
	{ "[PATCH] net: fix foo", "net: fix foo", "", 1, 1, 1, false, true, false, false, false },
	{ "[PATCH v3 2/7] mm: bar", "mm: bar", "", 3, 2, 7, false, true, false, false, false },
	{ "[PATCH v3 0/7] mm: series", "mm: series", "", 3, 0, 7, false, true, true, false, false },
	{ "[RFC PATCH net-next 1/2] net: x", "net: x", "net-next", 1, 1, 2,
	  false, true, false, true, false },
	{ "[PATCH net-next v2 3/5] net: y", "net: y", "net-next", 2, 3, 5,
	  false, true, false, false, false },
	{ "[PATCH 1/2] [PATCH] doubled", "doubled", "", 1, 1, 2, false, true, false, false, false },
	{ "[PATCH-next] linux-next only", "linux-next only", "next", 1, 1, 1,
	  false, true, false, false, false },
	{ "[patch] lower case", "lower case", "", 1, 1, 1, false, true, false, false, false },
	{ "[PATCH RESEND v2 1/3] x", "x", "", 2, 1, 3, false, true, false, false, true },
	{ "[RFC] an idea", "an idea", "", 1, 1, 1, false, false, false, true, false },
	{ "[RFC 0/3] a proposal", "a proposal", "", 1, 0, 3, false, true, true, true, false },
	{ "Re: [PATCH v2 1/3] x", "x", "", 2, 1, 3, true, false, false, false, false },
	{ "RE: [PATCH] outlook", "outlook", "", 1, 1, 1, true, false, false, false, false },
	{ "Aw: [PATCH] german", "german", "", 1, 1, 1, true, false, false, false, false },
	{ "Fwd: [PATCH] forwarded", "forwarded", "", 1, 1, 1, true, false, false, false, false },
	{ "Re: Re: [PATCH v2] twice", "twice", "", 2, 1, 1, true, false, false, false, false },
	{ "Re : [PATCH] french", "french", "", 1, 1, 1, true, false, false, false, false },
	{ "Antw: [PATCH] dutch", "dutch", "", 1, 1, 1, true, false, false, false, false },
	{ "Re: [PATCH v3 0/7] mm: series", "mm: series", "", 3, 0, 7,
	  true, false, false, false, false },
	{ "[PATCHv4 03/12] glued version", "glued version", "", 4, 3, 12,
	  false, true, false, false, false },
	{ "  [PATCH   v2\t1/2]\t  spaced \t  title  ", "spaced title", "", 2, 1, 2,
	  false, true, false, false, false },
	{ "[PATCH 6.1 012/345] stable review", "stable review", "6.1", 1, 12, 345,
	  false, true, false, false, false },
	{ "[PATCH AUTOSEL 6.6 01/23] x", "x", "AUTOSEL 6.6", 1, 1, 23,
	  false, true, false, false, false },
	{ "[Intel-gfx] [PATCH v2 1/3] drm/i915: x", "drm/i915: x", "Intel-gfx", 2, 1, 3,
	  false, true, false, false, false },
	{ "[Intel-gfx] Re: [PATCH] drm: y", "drm: y", "Intel-gfx", 1, 1, 1,
	  true, false, false, false, false },
	{ "[PATCH] fw: load firmware", "fw: load firmware", "", 1, 1, 1,
	  false, true, false, false, false },
	{ "[PATCH v2] Re: odd title", "Re: odd title", "", 2, 1, 1,
	  false, true, false, false, false },
	{ "[PATCH net,v2] net: z", "net: z", "net", 2, 1, 1, false, true, false, false, false },
	{ "[PATCH bpf-next v3 00/10] bpf: Grüße – ünïcode", "bpf: Grüße – ünïcode", "bpf-next",
	  3, 0, 10, false, true, true, false, false },
	/* Past its count: a follow-up in a series' thread, kept as b4 keeps it. */
	{ "[PATCH 3/2] follow-up", "follow-up", "", 1, 3, 2, false, true, false, false, false },
	{ "[GIT PULL] Networking for 6.7", "Networking for 6.7", "GIT PULL", 1, 1, 1,
	  false, false, false, false, false },
	{ "no tags at all", "no tags at all", "", 1, 1, 1, false, false, false, false, false },
	{ "[PATCH unclosed", "[PATCH unclosed", "", 1, 1, 1, false, false, false, false, false },
	{ "[PATCH [net] v2] nested", "nested", "net", 2, 1, 1, false, true, false, false, false },
	{ "", "", "", 1, 1, 1, false, false, false, false, false },
	{ "[PATCH v0] x", "x", "v0", 1, 1, 1, false, true, false, false, false },
	{ "[PATCH RFC v2 2/2] x", "x", "", 2, 2, 2, false, true, false, true, false },
	{ "[RFCv2 1/2] x", "x", "", 2, 1, 2, false, true, false, true, false },
	{ "[PATCHES] x", "x", "", 1, 1, 1, false, true, false, false, false },
	{ "[PATCH_v2 1/2] x", "x", "", 2, 1, 2, false, true, false, false, false },
	{ "[PATCHWORK] x", "x", "PATCHWORK", 1, 1, 1, false, false, false, false, false },
	{ "[PATCH 2/3 v2] order", "order", "", 2, 2, 3, false, true, false, false, false },
	{ "[PATCH] ", "", "", 1, 1, 1, false, true, false, false, false },
	{ "[PATCH]\r\n\tfolded", "folded", "", 1, 1, 1, false, true, false, false, false },
};

static void test_subject(void)
{
	for (gsize i = 0; i < G_N_ELEMENTS(subject_cases); i++) {
		const struct subject_case *c = &subject_cases[i];
		struct patchmail_subject s;
		g_autofree char *prefixes = NULL;

		patchmail_subject_parse(&s, c->subject);
		prefixes = joined(s.prefixes);
		g_test_message("'%s': title '%s' prefixes '%s' v%u %u/%u%s%s%s%s%s", c->subject,
			       s.title, prefixes, s.version, s.n, s.total, s.reply ? " reply" : "",
			       s.patch ? " patch" : "", s.cover ? " cover" : "", s.rfc ? " rfc" : "",
			       s.resend ? " resend" : "");
		g_assert_cmpstr(s.title, ==, c->title);
		g_assert_cmpstr(prefixes, ==, c->prefixes);
		g_assert_cmpuint(s.version, ==, c->version);
		g_assert_cmpuint(s.n, ==, c->n);
		g_assert_cmpuint(s.total, ==, c->total);
		g_assert_cmpint(s.reply, ==, c->reply);
		g_assert_cmpint(s.patch, ==, c->patch);
		g_assert_cmpint(s.cover, ==, c->cover);
		g_assert_cmpint(s.rfc, ==, c->rfc);
		g_assert_cmpint(s.resend, ==, c->resend);
		g_assert_cmpint(patchmail_subject_beyond(&s), ==, c->n > c->total);
		patchmail_subject_release(&s);
	}
	/* NULL is an empty subject. */
	{
		struct patchmail_subject s;

		patchmail_subject_parse(&s, NULL);
		g_assert_cmpstr(s.title, ==, "");
		g_assert_false(s.patch);
		patchmail_subject_release(&s);
	}
}

/* Subjects as they come: RFC 2047 encoded, split over encoded words and folded lines. */
static void test_subject_encoded(void)
{
	static const struct {
		const char *header;
		const char *subject;
		const char *title;
		guint version;
		bool patch;
	} cases[] = {
		{ "=?utf-8?q?=5BPATCH_v2_1/2=5D_caf=C3=A9:_fix_cr=C3=A8me?=",
		  "[PATCH v2 1/2] café: fix crème", "café: fix crème", 2, true },
		{ "=?UTF-8?B?W1BBVENIIHYzXSBuZXQ6IOKAnHF1b3RlZOKAnQ==?=",
		  "[PATCH v3] net: “quoted”", "net: “quoted”", 3, true },
		{ "[PATCH net-next v2 3/5] net: a subject folded\n over two lines",
		  "[PATCH net-next v2 3/5] net: a subject folded over two lines",
		  "net: a subject folded over two lines", 2, true },
		{ "=?iso-8859-1?q?Re:_=5BPATCH=5D_Jos=E9?=\n =?iso-8859-1?q?_M=FCller?=",
		  "Re: [PATCH] José Müller", "José Müller", 1, false },
		{ "[PATCH] =?utf-8?q?=F0=9F=90=A7?= penguin", "[PATCH] 🐧 penguin", "🐧 penguin", 1,
		  true },
		/*
		 * Two base64 words folded, the first padded: GMime 3.2.13 stops
		 * at the padding ("drm: fix"), each word is decoded alone.
		 */
		{ "[PATCH v2 1/2] =?UTF-8?B?ZHJtOiBmaXg=?=\n =?UTF-8?B?IHRoZSBtw7xsbGVy?=",
		  "[PATCH v2 1/2] drm: fix the müller", "drm: fix the müller", 2, true },
		/* A character split over two words ("m\xc3" "\xbcller") stays whole. */
		{ "=?UTF-8?B?ZHJtOiBmaXggdGhlIG3D?= =?UTF-8?B?vGxsZXI=?=", "drm: fix the müller",
		  "drm: fix the müller", 1, false },
		/* Words of two charsets, one padded, then text after a space. */
		{ "=?UTF-8?B?ZHJtOiBmaXg=?= =?ISO-8859-1?Q?_the_m=FCller?= driver",
		  "drm: fix the müller driver", "drm: fix the müller driver", 1, false },
	};

	for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *text = g_strdup_printf("Message-ID: <s%zu@example.org>\n"
							"Subject: %s\n\nbody\n", i, cases[i].header);
		g_autoptr(GError) error = NULL;
		struct patchmail *m = parse_text(text, &error);

		g_assert_no_error(error);
		g_assert_nonnull(m);
		if (!m)
			continue;
		g_test_message("%s -> %s", cases[i].header, m->subject);
		g_assert_cmpstr(m->subject, ==, cases[i].subject);
		g_assert_cmpstr(m->tags.title, ==, cases[i].title);
		g_assert_cmpuint(m->tags.version, ==, cases[i].version);
		g_assert_cmpint(m->tags.patch, ==, cases[i].patch);
		patchmail_free(m);
	}
}

/* ---- The corpus ---- */

static void assert_diff_file(const char *diff, const char *name)
{
	g_autofree char *want = data_file(name, NULL);

	g_assert_nonnull(diff);
	g_assert_cmpuint(diff ? strlen(diff) : 0, ==, strlen(want));
	g_assert_cmpstr(diff, ==, want);
}

static void write_file(const char *dir, const char *name, const char *text)
{
	g_autofree char *path = g_build_filename(dir, name, NULL);
	g_autofree char *parent = g_path_get_dirname(path);
	g_autoptr(GError) error = NULL;

	g_assert_cmpint(g_mkdir_with_parents(parent, 0755), ==, 0);
	g_file_set_contents(path, text, -1, &error);
	g_assert_no_error(error);
}

/* Applies the series' diffs as extracted, in order, to its base with `git apply`. */
static void apply_series(struct patchmail *patches[], guint n)
{
	static const char *const files[] = {
		"drivers/net/ethernet/acme/acme_main.c",
		"drivers/net/ethernet/acme/acme.h",
		"drivers/net/ethernet/acme/Makefile",
	};
	g_autofree char *dir = testlib_mkdir("apply");
	g_autofree char *tree = NULL;
	g_autofree char *want = data_file("tip-tree", NULL);

	testlib_repo_init(dir);
	for (gsize i = 0; i < G_N_ELEMENTS(files); i++) {
		g_autofree char *name = g_build_filename("tree", files[i], NULL);
		g_autofree char *text = data_file(name, NULL);

		write_file(dir, files[i], text);
	}
	for (guint i = 0; i < n; i++) {
		g_autofree char *name = g_strdup_printf("../patch-%u.diff", i + 1);
		g_autofree char *out = NULL;

		write_file(dir, name, patches[i]->diff);
		out = testlib_git(dir, "apply", "--whitespace=error-all", name, NULL);
	}
	g_free(testlib_git(dir, "add", "-A", NULL));
	tree = testlib_git(dir, "write-tree", NULL);
	g_assert_cmpstr(tree, ==, g_strstrip(want));
}

static void test_series(void)
{
	static const char *const messages[] = {
		NULL,
		"devm_alloc_etherdev() returns NULL when it cannot allocate the\n"
		"net_device, and acme_probe() dereferences the result right away.\n"
		"Return -ENOMEM instead.\n\n"
		"Fixes: 0123456789ab (\"net: acme: add ACME Gigabit Ethernet driver\")\n"
		"Signed-off-by: " MARTA "\n",
		"A missing clock is usually a deferred probe: dev_err_probe() keeps\n"
		"the log quiet for -EPROBE_DEFER and records the reason, so use it\n"
		"for the clock and for the registration error.\n\n"
		"Signed-off-by: " MARTA "\n",
		"Report the packet counters through ethtool -S.\n\n"
		"Signed-off-by: " MARTA "\n",
	};
	struct patchmail *m[4];
	g_autofree char *cc = NULL;

	for (guint i = 0; i < 4; i++) {
		g_autofree char *name = g_strdup_printf("series-v2-%u.eml", i);

		m[i] = parse_file(name);
		if (!m[i])
			return;
	}
	/* The cover letter. */
	g_assert_cmpint(m[0]->kind, ==, PATCHMAIL_COVER);
	g_assert_cmpstr(m[0]->message_id, ==, SERIES_ID(0));
	g_assert_null(m[0]->in_reply_to);
	g_assert_cmpuint(m[0]->references->len, ==, 0);
	g_assert_cmpstr(m[0]->from, ==, MARTA);
	g_assert_cmpint(m[0]->date, ==, 1699996400); /* Tue, 14 Nov 2023 22:13:20 +0100 */
	g_assert_cmpstr(m[0]->subject, ==,
			"[PATCH net-next v2 0/3] net: acme: probe fixes and ethtool statistics");
	g_assert_cmpstr(m[0]->tags.title, ==, "net: acme: probe fixes and ethtool statistics");
	g_assert_cmpstr(m[0]->list_id, ==, "netdev.vger.kernel.org");
	g_assert_cmpuint(m[0]->to->len, ==, 1);
	g_assert_cmpstr(m[0]->to->pdata[0], ==, "netdev@vger.kernel.org");
	cc = joined(m[0]->cc);
	g_assert_cmpstr(cc, ==, "Tomasz Reviewer <tomasz@example.org> linux-kernel@vger.kernel.org");
	g_assert_cmpstr(m[0]->base_commit, ==, BASE_COMMIT);
	g_assert_cmpuint(m[0]->prerequisite_patch_ids->len, ==, 0);
	g_assert_null(m[0]->diff);
	g_assert_null(m[0]->commit_message);
	g_assert_true(g_str_has_prefix(m[0]->body, "The ACME driver landed in net-next"));
	/* The patches. */
	for (guint i = 1; i < 4; i++) {
		g_autofree char *diff = g_strdup_printf("patch-%u.diff", i);
		g_autofree char *id = g_strdup_printf("20231114211320.3188529-%u-marta.kowalska@example.com", i);

		g_assert_cmpint(m[i]->kind, ==, PATCHMAIL_PATCH);
		g_assert_cmpstr(m[i]->message_id, ==, id);
		g_assert_cmpstr(m[i]->in_reply_to, ==, SERIES_ID(0));
		g_assert_cmpuint(m[i]->references->len, ==, 1);
		g_assert_cmpstr(m[i]->references->pdata[0], ==, SERIES_ID(0));
		g_assert_cmpuint(m[i]->tags.version, ==, 2);
		g_assert_cmpuint(m[i]->tags.n, ==, i);
		g_assert_cmpuint(m[i]->tags.total, ==, 3);
		g_assert_cmpuint(m[i]->tags.prefixes->len, ==, 1);
		g_assert_cmpstr(m[i]->tags.prefixes->pdata[0], ==, "net-next");
		g_assert_false(m[i]->diff_attached);
		assert_diff_file(m[i]->diff, diff);
		g_assert_cmpstr(m[i]->commit_message, ==, messages[i]);
		g_assert_cmpstr(m[i]->author, ==, MARTA);
		g_assert_null(m[i]->body_subject);
		g_assert_cmpint(m[i]->body_date, ==, 0);
		g_assert_null(m[i]->base_commit);
	}
	g_assert_cmpstr(m[1]->tags.title, ==, "net: acme: fix NULL dereference in acme_probe()");
	apply_series(m + 1, 3);
	for (guint i = 0; i < 4; i++)
		patchmail_free(m[i]);
}

static void test_quoted_printable(void)
{
	struct patchmail *m = parse_file("quoted-printable.eml");

	if (!m)
		return;
	g_assert_cmpint(m->kind, ==, PATCHMAIL_PATCH);
	g_assert_cmpuint(m->tags.version, ==, 1);
	g_assert_cmpuint(m->tags.n, ==, 2);
	g_assert_cmpuint(m->tags.total, ==, 3);
	/* "=3D", "=20" and soft line breaks undone: git's own diff, byte for byte. */
	assert_diff_file(m->diff, "patch-2.diff");
	g_assert_nonnull(strstr(m->commit_message,
				"\n\nTested on the ACME EVB-2 – no more “deferred” spam.\n\n"));
	g_assert_true(g_str_has_suffix(m->commit_message, "Signed-off-by: " MARTA "\n"));
	patchmail_free(m);
}

static void test_base64_latin1(void)
{
	struct patchmail *m = parse_file("base64-latin1.eml");

	if (!m)
		return;
	g_assert_cmpint(m->kind, ==, PATCHMAIL_PATCH);
	g_assert_cmpstr(m->from, ==, "José Müller <jose.muller@example.es>");
	g_assert_cmpstr(m->author, ==, m->from);
	g_assert_cmpstr(m->to->pdata[0], ==, MARTA);
	g_assert_cmpstr(m->tags.title, ==, "net: acme: add José Müller as copyright holder");
	/*
	 * The diff in the mail's ISO-8859-1, as `git am` would apply it: a
	 * client that re-encodes a patch changes it. The message is UTF-8.
	 */
	{
		g_autofree char *utf8 = data_file("patch-4.diff", NULL);
		g_autofree char *latin1 = g_convert(utf8, -1, "ISO-8859-1", "UTF-8", NULL, NULL,
						    NULL);

		g_assert_cmpstr(m->diff, ==, latin1);
	}
	g_assert_cmpstr(m->commit_message, ==,
			"José Müller wrote the receive path; say so.\n\n"
			"Signed-off-by: José Müller <jose.muller@example.es>\n");
	g_assert_true(g_str_has_prefix(m->body, "José Müller wrote"));
	patchmail_free(m);
}

static void test_attached(void)
{
	struct patchmail *m = parse_file("attached.eml");

	if (!m)
		return;
	g_assert_cmpint(m->kind, ==, PATCHMAIL_PATCH);
	g_assert_cmpstr(m->tags.prefixes->pdata[0], ==, "net");
	g_assert_true(g_str_has_prefix(m->body, "Hi,\n\nmy mail client mangles inline patches"));
	g_assert_true(m->diff_attached);
	assert_diff_file(m->diff, "patch-1.diff");
	/* The attachment is a format-patch file: its From, Date and Subject are the commit's. */
	g_assert_cmpstr(m->author, ==, MARTA);
	g_assert_cmpstr(m->body_subject, ==,
			"[PATCH] net: acme: fix NULL dereference in acme_probe()");
	g_assert_cmpint(m->body_date, ==, 1699989000); /* Tue, 14 Nov 2023 20:10:00 +0100 */
	g_assert_true(g_str_has_prefix(m->commit_message, "devm_alloc_etherdev() returns NULL"));
	g_assert_true(g_str_has_suffix(m->commit_message, "Signed-off-by: " MARTA "\n"));
	patchmail_free(m);
}

static void test_in_body_from(void)
{
	static const char *const prerequisites =
		"bdc2b9be667f8027d9367e80cce11b7dfc39b81e bfc959517f79faaaab2ccf04f0c83bdcca2c567d "
		"811deb332813fd3fccd525f75133099fb61d1b1d 30a3ed9b8a49f8049bd9decff677eaacdf9ec7cd";
	struct patchmail *m = parse_file("in-body-from.eml");
	g_autofree char *ids = NULL;

	if (!m)
		return;
	g_assert_cmpint(m->kind, ==, PATCHMAIL_PATCH);
	g_assert_cmpstr(m->from, ==, MARTA);
	g_assert_cmpstr(m->author, ==, "Inês Duarte <ines.duarte@example.pt>");
	g_assert_true(g_str_has_prefix(m->commit_message, "The module is called acme"));
	g_assert_cmpstr(m->base_commit, ==, BASE_COMMIT);
	ids = joined(m->prerequisite_patch_ids);
	g_assert_cmpstr(ids, ==, prerequisites);
	/* The diff ends with its hunk: the base lines after it are not the diff's. */
	g_assert_true(g_str_has_suffix(m->diff, " module_platform_driver(acme_driver);\n"));
	patchmail_free(m);
}

/* In-body headers as `git am` reads them, in mails built here. */
static void test_in_body_headers(void)
{
	static const char *const diff =
		"diff --git a/x.c b/x.c\n"
		"--- a/x.c\n"
		"+++ b/x.c\n"
		"@@ -1 +1 @@\n"
		"-a\n"
		"+b\n";
	static const struct {
		const char *body;
		const char *author;
		const char *subject;
		gint64 date;
		const char *message;
	} cases[] = {
		{ "From: Ann Author <ann@example.org>\n"
		  "Date: Mon, 13 Nov 2023 10:00:00 +0000\n"
		  "Subject: [PATCH] x: the real\n subject, folded\n\n"
		  "Why.\n---\n",
		  "Ann Author <ann@example.org>", "[PATCH] x: the real subject, folded", 1699869600,
		  "Why.\n" },
		/* Leading blank lines, then the fields in any order and case. */
		{ "\n\nsubject: other order\nfrom: bob@example.org\n\nWhy not.\n\n---\n",
		  "bob@example.org", "other order", 0, "Why not.\n" },
		/* A From: after the message started is the message's. */
		{ "Why.\nFrom: not@example.org\n---\n", MARTA, NULL, 0,
		  "Why.\nFrom: not@example.org\n" },
		/* An unreadable in-body From leaves the mail's. */
		{ "From: nobody\n\nWhy.\n---\n", MARTA, NULL, 0, "Why.\n" },
		/* No "---": the message ends where the diff starts. */
		{ "Just a diff:\n", MARTA, NULL, 0, "Just a diff:\n" },
	};

	for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *text = g_strdup_printf("Message-ID: <ib%zu@example.org>\n"
							"From: " MARTA "\n"
							"Subject: [PATCH] x\n\n%s%s",
							i, cases[i].body, diff);
		g_autoptr(GError) error = NULL;
		struct patchmail *m = parse_text(text, &error);

		g_assert_no_error(error);
		g_assert_nonnull(m);
		if (!m)
			continue;
		g_assert_cmpint(m->kind, ==, PATCHMAIL_PATCH);
		g_assert_cmpstr(m->diff, ==, diff);
		g_assert_cmpstr(m->author, ==, cases[i].author);
		g_assert_cmpstr(m->body_subject, ==, cases[i].subject);
		g_assert_cmpint(m->body_date, ==, cases[i].date);
		g_assert_cmpstr(m->commit_message, ==, cases[i].message);
		patchmail_free(m);
	}
}

/* Display names in two encoded-words, the first padded: whole, past GMime 3.2.13's bug. */
static void test_encoded_names(void)
{
	static const char *const text =
		"From: =?UTF-8?B?Wm/Dqw==?= =?UTF-8?B?IE3DvGxsZXItTMO8ZGVuc2NoZWlkdA==?= "
		"<zoe@example.com>\n"
		"To: =?UTF-8?B?Sm/Dqw==?=\n =?UTF-8?B?IEJsb2dncw==?= <joe@example.org>\n"
		"Cc: Plain Name <plain@example.org>, =?UTF-8?Q?J=C3=B6rg?= =?UTF-8?B?IE3DvGxsZXI=?= "
		"<jm@example.org>\n"
		"Subject: [PATCH] a: b\n"
		"Message-ID: <names@example.org>\n\n"
		"From: =?UTF-8?B?Wm/Dqw==?= =?UTF-8?B?IE3DvGxsZXI=?= <zoe@example.net>\n\n"
		"Why.\n---\n"
		"diff --git a/x.c b/x.c\n--- a/x.c\n+++ b/x.c\n@@ -1 +1 @@\n-a\n+b\n";
	g_autoptr(GError) error = NULL;
	struct patchmail *m = parse_text(text, &error);
	g_autofree char *cc = NULL;

	g_assert_no_error(error);
	g_assert_nonnull(m);
	if (!m)
		return;
	g_assert_cmpstr(m->from, ==, "Zoë Müller-Lüdenscheidt <zoe@example.com>");
	g_assert_cmpuint(m->to->len, ==, 1);
	g_assert_cmpstr(m->to->pdata[0], ==, "Joë Bloggs <joe@example.org>");
	cc = joined(m->cc);
	g_assert_cmpstr(cc, ==, "Plain Name <plain@example.org> Jörg Müller <jm@example.org>");
	/* The in-body From: is read the same way. */
	g_assert_cmpstr(m->author, ==, "Zoë Müller <zoe@example.net>");
	patchmail_free(m);
}

/*
 * A patch to a file in ISO-8859-1: the diff is kept in the mail's bytes,
 * which are the file's, as `git mailinfo` keeps it, and only the message
 * is converted, whether the mail says it is UTF-8 or ISO-8859-1.
 */
static void test_latin1_diff(void)
{
	static const char *const diff =
		"diff --git a/drivers/old.c b/drivers/old.c\n"
		"index 1111111..2222222 100644\n"
		"--- a/drivers/old.c\n"
		"+++ b/drivers/old.c\n"
		"@@ -1,2 +1,2 @@\n"
		" /* (C) J\xf6rg M\xfcller */\n"
		"-int teh;\n"
		"+int the;\n";
	static const struct {
		const char *charset;
		const char *message; /* as sent, in @charset */
		const char *want;    /* in UTF-8 */
	} cases[] = {
		{ "UTF-8", "Fix it, J\xc3\xb6rg.\n", "Fix it, J\xc3\xb6rg.\n" },
		{ "ISO-8859-1", "Fix it, J\xf6rg.\n", "Fix it, J\xc3\xb6rg.\n" },
	};

	for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *text = g_strdup_printf(
			"From: Ann Author <ann@example.com>\n"
			"Subject: [PATCH] old: fix typo\n"
			"Message-ID: <latin1-%zu@example.org>\n"
			"MIME-Version: 1.0\n"
			"Content-Type: text/plain; charset=%s\n"
			"Content-Transfer-Encoding: 8bit\n\n"
			"%s\n---\n%s-- \n2.39.5\n", i, cases[i].charset, cases[i].message, diff);
		g_autoptr(GError) error = NULL;
		struct patchmail *m = parse_text(text, &error);
		struct patchmail *back = NULL;
		g_autoptr(GBytes) packed = NULL;

		g_assert_no_error(error);
		g_assert_nonnull(m);
		if (!m)
			continue;
		g_assert_cmpint(m->kind, ==, PATCHMAIL_PATCH);
		g_assert_cmpstr(m->diff, ==, diff);
		g_assert_cmpstr(m->commit_message, ==, cases[i].want);
		g_assert_true(g_utf8_validate(m->body, -1, NULL));
		/* The store keeps the bytes. */
		packed = patchmail_pack(m);
		back = patchmail_unpack(packed, &error);
		g_assert_no_error(error);
		g_assert_cmpstr(back ? back->diff : NULL, ==, diff);
		patchmail_free(back);
		patchmail_free(m);
	}
}

/* What says a series needs other patches first: git's lines and b4's, outside the diff. */
static void test_prerequisites(void)
{
	static const char *const diff =
		"diff --git a/x.c b/x.c\n--- a/x.c\n+++ b/x.c\n@@ -1 +1,2 @@\n a\n"
		"+prerequisite-change-id: 20231114-in-the-code-0123456789ab:v1\n";
	static const struct {
		const char *subject;
		const char *before; /* the diff, if any, then after */
		bool diff;
		const char *after;
		bool has;
	} cases[] = {
		{ "[PATCH] x", "Why.\n---\n", true, "\nbase-commit: " BASE_COMMIT "\n"
		  "prerequisite-patch-id: bdc2b9be667f8027d9367e80cce11b7dfc39b81e\n", true },
		{ "[PATCH 0/1] x", "A cover.\n\n---\nChanges in v2: none.\n\n"
		  "---\nbase-commit: " BASE_COMMIT "\n"
		  "change-id: 20231114-x-0123456789ab\n", false,
		  "prerequisite-change-id: 20231101-y-ba9876543210:v3\n\nBest regards,\n", true },
		{ "[PATCH 0/1] x", "A cover.\n\n", false,
		  "prerequisite-message-id: <p@example.org>\n", true },
		/* In the diff, it is code. */
		{ "[PATCH] x", "Why.\n---\n", true, "\nbase-commit: " BASE_COMMIT "\n", false },
		{ "[PATCH] x", "Why.\n---\n", true, "", false },
	};

	for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *text = g_strdup_printf("Message-ID: <pre%zu@example.org>\n"
							"From: " MARTA "\n"
							"Subject: %s\n\n%s%s%s", i, cases[i].subject,
							cases[i].before, cases[i].diff ? diff : "",
							cases[i].after);
		g_autoptr(GError) error = NULL;
		struct patchmail *m = parse_text(text, &error);

		g_assert_no_error(error);
		g_assert_nonnull(m);
		if (!m)
			continue;
		g_test_message("case %zu: %s", i, patchmail_kind_name(m->kind));
		g_assert_cmpint(patchmail_has_prerequisites(m), ==, cases[i].has);
		patchmail_free(m);
	}
}

static void test_review_reply(void)
{
	struct patchmail *m = parse_file("review-reply.eml");
	g_autofree char *refs = NULL;

	if (!m)
		return;
	/* Every line of the diff is there, quoted: no diff. */
	g_assert_nonnull(strstr(m->body, "\n> diff --git a/drivers/net/ethernet/acme/acme_main.c"));
	g_assert_nonnull(strstr(m->body, "\n> @@ -51,14 +51,14 @@"));
	g_assert_cmpint(m->kind, ==, PATCHMAIL_REPLY);
	g_assert_null(m->diff);
	g_assert_null(m->commit_message);
	g_assert_true(m->tags.reply);
	g_assert_false(m->tags.patch);
	g_assert_cmpuint(m->tags.version, ==, 2);
	g_assert_cmpuint(m->tags.n, ==, 2);
	g_assert_cmpstr(m->in_reply_to, ==, SERIES_ID(2));
	refs = joined(m->references);
	g_assert_cmpstr(refs, ==, SERIES_ID(0) " " SERIES_ID(2));
	g_assert_cmpstr(m->from, ==, "Tomasz Reviewer <tomasz@example.org>");
	patchmail_free(m);
}

static void test_fixup_reply(void)
{
	struct patchmail *m = parse_file("fixup-reply.eml");

	if (!m)
		return;
	/* A reply with a diff of its own: the diff is kept, the mail stays a reply. */
	g_assert_cmpint(m->kind, ==, PATCHMAIL_REPLY);
	assert_diff_file(m->diff, "fixup.diff");
	g_assert_cmpstr(m->in_reply_to, ==, SERIES_ID(3));
	g_assert_cmpstr(m->author, ==, "Tomasz Reviewer <tomasz@example.org>");
	patchmail_free(m);
}

/* Diff shapes beyond plain hunks, in mails built here. */
static void test_diff_shapes(void)
{
	static const struct {
		const char *what;
		const char *body;
		const char *diff; /* NULL: none */
	} cases[] = {
		{ "mode change only",
		  "Why.\n---\ndiff --git a/s.sh b/s.sh\nold mode 100644\nnew mode 100755\n-- \n2.39.5\n",
		  "diff --git a/s.sh b/s.sh\nold mode 100644\nnew mode 100755\n" },
		{ "rename and binary",
		  "Why.\n---\ndiff --git a/a b/b\nsimilarity index 100%\nrename from a\nrename to b\n"
		  "diff --git a/f.bin b/f.bin\nindex 1..2 100644\nGIT binary patch\nliteral 3\n"
		  "KcmZp\n\nliteral 0\nHcmV?d00001\n\n-- \n2.39.5\n",
		  "diff --git a/a b/b\nsimilarity index 100%\nrename from a\nrename to b\n"
		  "diff --git a/f.bin b/f.bin\nindex 1..2 100644\nGIT binary patch\nliteral 3\n"
		  "KcmZp\n\nliteral 0\nHcmV?d00001\n\n" },
		{ "a removed \"- \" line is no signature, an empty line is context",
		  "Why.\n---\n--- a/t.txt\n+++ b/t.txt\n@@ -1,3 +1,2 @@\n-- \n\n x\n-- \nsig\n",
		  "--- a/t.txt\n+++ b/t.txt\n@@ -1,3 +1,2 @@\n-- \n\n x\n" },
		{ "no newline at end of file",
		  "--- a/n\n+++ b/n\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n"
		  "\\ No newline at end of file\nbye\n",
		  "--- a/n\n+++ b/n\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n"
		  "\\ No newline at end of file\n" },
		{ "a hunk cut short ends the diff where it stops",
		  "diff --git a/c b/c\n--- a/c\n+++ b/c\n@@ -1,5 +1,5 @@\n a\n-b\nthanks\n",
		  "diff --git a/c b/c\n--- a/c\n+++ b/c\n@@ -1,5 +1,5 @@\n a\n-b\n" },
		{ "prose naming a diff", "Run diff --git a/x b/x.\ndiff --git a/x b/x\nand more\n",
		  NULL },
		{ "quoted", "> diff --git a/x b/x\n> --- a/x\n> +++ b/x\n> @@ -1 +1 @@\n> -a\n> +b\n",
		  NULL },
		{ "indented", "  --- a/x\n  +++ b/x\n  @@ -1 +1 @@\n  -a\n  +b\n", NULL },
		{ "a hunk header out of range", "--- a/x\n+++ b/x\n@@ -1,9999999999 +1 @@\n-a\n",
		  NULL },
		{ "CRLF line ends (the transport's, dropped)",
		  "Why.\r\n---\r\n--- a/x\r\n+++ b/x\r\n@@ -1 +1 @@\r\n-a\r\n+b\r\n",
		  "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n" },
	};

	for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *text = g_strdup_printf("Message-ID: <d%zu@example.org>\n"
							"Subject: [PATCH] x\n\n%s", i, cases[i].body);
		g_autoptr(GError) error = NULL;
		struct patchmail *m = parse_text(text, &error);

		g_test_message("%s", cases[i].what);
		g_assert_no_error(error);
		g_assert_nonnull(m);
		if (!m)
			continue;
		g_assert_cmpstr(m->diff, ==, cases[i].diff);
		g_assert_cmpint(m->kind, ==, cases[i].diff ? PATCHMAIL_PATCH : PATCHMAIL_OTHER);
		patchmail_free(m);
	}
}

/* ---- Refusals ---- */

static void expect_refused(const char *what, const char *data, gsize len, const char *reason)
{
	g_autoptr(GError) error = NULL;
	gint64 start = g_get_monotonic_time();
	struct patchmail *m = patchmail_parse(data, len, PATCHMAIL_SIZE_DEFAULT, &error);
	double seconds = (double)(g_get_monotonic_time() - start) / G_USEC_PER_SEC;

	g_test_message("%s (%" G_GSIZE_FORMAT " bytes): %s in %.3f s", what, len,
		       error ? error->message : "accepted", seconds);
	g_assert_null(m);
	g_assert_error(error, MAIL_ERROR, MAIL_ERROR_INVALID);
	g_assert_cmpstr(error ? error->message : NULL, ==, reason);
	g_assert_cmpfloat(seconds, <, BOMB_SECONDS);
	patchmail_free(m);
}

static void expect_accepted(const char *what, const char *data)
{
	g_autoptr(GError) error = NULL;
	struct patchmail *m = parse_text(data, &error);

	g_test_message("%s: %s", what, error ? error->message : "accepted");
	g_assert_no_error(error);
	g_assert_nonnull(m);
	patchmail_free(m);
}

static void refuse_file(const char *name, const char *reason)
{
	gsize len = 0;
	g_autofree char *text = data_file(name, &len);

	expect_refused(name, text, len, reason);
}

static const char *const head =
	"Message-ID: <bomb@example.org>\nFrom: x@example.org\nSubject: [PATCH] x\n";

/* A multipart/mixed of @parts text parts, each with a Content-Type when @typed. */
static char *many_parts(guint parts, bool typed)
{
	GString *s = g_string_new(head);

	g_string_append(s, "Content-Type: multipart/mixed; boundary=b\n\n");
	for (guint i = 0; i < parts; i++)
		g_string_append_printf(s, "--b\n%s\npart %u\n", typed ? "Content-Type: text/plain\n" : "",
				       i);
	g_string_append(s, "--b--\n");
	return g_string_free(s, FALSE);
}

/* @levels multiparts, one in the other, around one text part. */
static char *nested_multiparts(guint levels)
{
	GString *s = g_string_new(head);

	for (guint i = 0; i < levels; i++)
		g_string_append_printf(s, "Content-Type: multipart/mixed; boundary=b%u\n\n--b%u\n",
				       i, i);
	g_string_append(s, "Content-Type: text/plain\n\ninnermost\n");
	for (guint i = levels; i-- > 0;)
		g_string_append_printf(s, "--b%u--\n", i);
	return g_string_free(s, FALSE);
}

/* @levels message/rfc822 parts, one in the other. */
static char *nested_messages(guint levels)
{
	GString *s = g_string_new(head);

	for (guint i = 0; i < levels; i++)
		g_string_append(s, "Content-Type: message/rfc822\n\nSubject: inner\n");
	g_string_append(s, "\ninnermost\n");
	return g_string_free(s, FALSE);
}

/* @text repeated until the mail has @size bytes. */
static char *padded(const char *start, const char *text, gsize size)
{
	GString *s = g_string_new(start);

	while (s->len + strlen(text) <= size)
		g_string_append(s, text);
	return g_string_free(s, FALSE);
}

static void test_refused(void)
{
	refuse_file("no-message-id.eml", "no Message-ID");
	refuse_file("truncated-multipart.eml", "truncated multipart");
	/* A NUL in a header's name: GMime skips the header, critically. */
	refuse_file("nul-header.eml", "malformed: NUL byte");
	/* An empty file (found by tests/fuzz/fuzz-mail: NULL data in an empty GByteArray). */
	expect_refused("empty", "", 0, "malformed: not a message");
	expect_refused("nothing", NULL, 0, "malformed: not a message");

	{
		g_autofree char *big = padded(head, "0123456789abcdef0123456789abcdef\n",
					      20 * 1024 * 1024);
		g_autofree char *reason = g_strdup_printf("too large: %zu bytes", strlen(big));

		expect_refused("20 MiB", big, strlen(big), reason);
		/* The cap is the caller's. */
		g_assert_null(patchmail_parse(big, 1000, 999, NULL));
	}
	{
		g_autofree char *typed = many_parts(200, true);
		g_autofree char *untyped = many_parts(150, false);
		g_autofree char *most = many_parts(PATCHMAIL_PARTS_MAX - 1, false);

		/* Refused before GMime sees them, and by counting GMime's parts. */
		expect_refused("200 parts", typed, strlen(typed), "too many parts");
		expect_refused("150 parts", untyped, strlen(untyped), "too many parts");
		expect_accepted("99 parts in a multipart", most);
	}
	{
		g_autofree char *deep = nested_multiparts(50);
		g_autofree char *deepest_ok = nested_multiparts(PATCHMAIL_DEPTH_MAX);
		g_autofree char *too_deep = nested_multiparts(PATCHMAIL_DEPTH_MAX + 1);
		g_autofree char *messages = nested_messages(20);

		expect_refused("multiparts 50 deep", deep, strlen(deep), "nested too deep");
		expect_refused("multiparts 9 deep", too_deep, strlen(too_deep), "nested too deep");
		expect_accepted("multiparts 8 deep", deepest_ok);
		expect_refused("messages 20 deep", messages, strlen(messages), "nested too deep");
	}
	{
		/* Bombs that cost GMime gigabytes: refused before it sees them. */
		g_autofree char *multipart = g_strconcat(head, "Content-Type: multipart/mixed; "
							 "boundary=b\n\n", NULL);
		g_autofree char *fields = padded(head, "X-A: b\n", 9 * 1024 * 1024);
		g_autofree char *parts = padded(multipart, "--b\n\n", 9 * 1024 * 1024);
		g_autofree char *messages = padded(head, "Content-Type: message/rfc822\n\n",
						   9 * 1024 * 1024);

		g_autofree char *typed = g_strconcat(head, "Content-Type: text/plain", NULL);
		g_autofree char *params = padded(typed, ";\n x=y", 9 * 1024 * 1024);
		g_autofree char *addressed = g_strconcat(head, "To: a@example.org", NULL);
		g_autofree char *to = padded(addressed, ",\n a@example.org", 9 * 1024 * 1024);

		expect_refused("9 MiB of header fields", fields, strlen(fields), "headers too large");
		expect_refused("9 MiB of Content-Type parameters", params, strlen(params),
			       "headers too large");
		expect_refused("9 MiB of To: addresses", to, strlen(to), "headers too large");
		expect_refused("9 MiB of empty parts", parts, strlen(parts), "too many parts");
		expect_refused("9 MiB of attached messages", messages, strlen(messages),
			       "too many parts");
	}

	static const struct {
		const char *what;
		const char *text;
		const char *reason;
	} cases[] = {
		{ "two Subjects", "Message-ID: <a@b.org>\nSubject: [PATCH] one\nSubject: [PATCH] two\n\nx\n",
		  "malformed: conflicting subject headers" },
		{ "two Message-IDs", "Message-ID: <a@b.org>\nMessage-ID: <c@d.org>\n\nx\n",
		  "malformed: conflicting message-id headers" },
		{ "a header line without a colon", "Message-ID: <a@b.org>\nnot a header\n\nx\n",
		  "malformed: invalid header name" },
		{ "a multipart without boundary",
		  "Message-ID: <a@b.org>\nContent-Type: multipart/mixed\n\n--b\n\nx\n--b--\n",
		  "malformed: multipart without boundary" },
		{ "a part without headers or content",
		  "Message-ID: <a@b.org>\nContent-Type: multipart/mixed; boundary=b\n\n--b\n--b\n"
		  "Content-Type: text/plain\n\nx\n--b--\n",
		  "malformed: invalid header name" },
		{ "an inner multipart never closed",
		  "Message-ID: <a@b.org>\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"
		  "Content-Type: multipart/alternative; boundary=c\n\n--c\n\nx\n--b--\n",
		  "truncated multipart" },
		{ "no Message-ID", "Subject: [PATCH] x\n\nx\n", "no Message-ID" },
		{ "an empty Message-ID", "Message-ID: <>\n\nx\n", "no Message-ID" },
		{ "a Message-ID with a space", "Message-ID: <a b@c.org>\n\nx\n", "bad Message-ID" },
		{ "nothing", "", "malformed: not a message" },
	};
	for (gsize i = 0; i < G_N_ELEMENTS(cases); i++)
		expect_refused(cases[i].what, cases[i].text, strlen(cases[i].text), cases[i].reason);
}

/*
 * NUL bytes: GMime reads headers as C strings (a Subject cut at the NUL),
 * and a "#zeroday" line behind one was taken as a command. A mail with one
 * in its headers or text is refused, whatever the encoding hid it in.
 */
static void test_nul(void)
{
	static const char subject[] =
		"Message-ID: <nul@example.org>\nFrom: x@example.org\n"
		"Subject: [PATCH] net: fix\0 and more\n\nbody\n";
	static const char body[] =
		"Message-ID: <nul@example.org>\nFrom: x@example.org\nSubject: hello\n\n"
		"text\0\n#zeroday blacklist linux\n";
	/* "text\0\n#zeroday blacklist linux\n" in base64. */
	static const char encoded[] =
		"Message-ID: <nul@example.org>\nFrom: x@example.org\nSubject: hello\n"
		"Content-Type: text/plain\nContent-Transfer-Encoding: base64\n\n"
		"dGV4dAAKI3plcm9kYXkgYmxhY2tsaXN0IGxpbnV4Cg==\n";

	expect_refused("a NUL in the Subject", subject, sizeof(subject) - 1, "malformed: NUL byte");
	expect_refused("a NUL before a command", body, sizeof(body) - 1, "malformed: NUL byte");
	expect_refused("a NUL in base64 text", encoded, strlen(encoded),
		       "malformed: NUL byte in a text part");
}

/* A patch whose base64 does not decode is no patch: GMime would skip the bad bytes. */
static void test_bad_base64(void)
{
	static const char *const bad[] = {
		"ZGlmZiAtLWdpdCBhL3ggYi94Cg!!!notbase64***\n",
		"ZGlmZiAtLWdpdCBhL3ggYi94Cg=\nZGlmZg==\n",
		"ZGlmZiAtLWdpdCBhL3ggYi94C\n",
	};
	const char *head_text =
		"Message-ID: <b64@example.org>\nFrom: x@example.org\nSubject: [PATCH] x: y\n"
		"Content-Type: text/plain\nContent-Transfer-Encoding: base64\n\n";

	for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autofree char *text = g_strconcat(head_text, bad[i], NULL);

		expect_refused(bad[i], text, strlen(text),
			       "malformed: a text part's base64 does not decode");
	}
	{
		/* Line breaks and padding are base64 too. */
		g_autofree char *text = g_strconcat(head_text, "ZGlm\r\nZiAt\nLQ==\n", NULL);

		expect_accepted("good base64", text);
	}
}

/* Big mail that is fine: read whole, and in time. */
static void test_big(void)
{
	g_autoptr(GString) patch = g_string_new(head);
	g_autoptr(GString) subject = g_string_new("Message-ID: <big@example.org>\nSubject: ");
	g_autoptr(GString) body_types = g_string_new(head);
	guint lines = 0;

	/* A 9 MiB patch: a whole driver added. */
	g_string_append(patch, "\nWhy.\n---\n");
	while (patch->len < 9 * 1024 * 1024)
		g_string_append_printf(patch, "+static int line_%u;\n", lines++);
	{
		g_autofree char *header = g_strdup_printf("diff --git a/big.c b/big.c\nnew file mode 100644\n"
							  "--- /dev/null\n+++ b/big.c\n@@ -0,0 +1,%u @@\n",
							  lines);
		gsize start = strlen(head) + strlen("\nWhy.\n---\n");
		g_autoptr(GError) error = NULL;
		gint64 t0;
		struct patchmail *m;

		g_string_insert(patch, (gssize)start, header);
		t0 = g_get_monotonic_time();
		m = parse_text(patch->str, &error);
		g_test_message("9 MiB patch: %.3f s", (double)(g_get_monotonic_time() - t0) / G_USEC_PER_SEC);
		g_assert_no_error(error);
		g_assert_nonnull(m);
		if (m) {
			g_assert_cmpint(m->kind, ==, PATCHMAIL_PATCH);
			g_assert_cmpstr(m->diff, ==, patch->str + start);
			g_assert_cmpstr(m->commit_message, ==, "Why.\n");
		}
		g_assert_cmpfloat((double)(g_get_monotonic_time() - t0) / G_USEC_PER_SEC, <, BOMB_SECONDS);
		patchmail_free(m);
	}
	/* A long subject of reply words and unclosed brackets (folded, under the header limit). */
	for (guint i = 0; i < 10000; i++)
		g_string_append(subject, i % 2 ? "Re: \n " : "[[PATCH \n ");
	g_string_append(subject, "\n\nbody\n");
	expect_accepted("a 100 KiB subject", subject->str);
	/* Content-Type lines in a body are text, whatever their size. */
	g_string_append(body_types, "\n");
	while (body_types->len < 4 * 1024 * 1024)
		g_string_append(body_types, "Content-Type: multipart/mixed; boundary=x;\n x=y\n--x\n");
	expect_accepted("4 MiB of Content-Type lines in a body", body_types->str);
}

/* Headers that do not read are left out, not refused. */
static void test_lenient_headers(void)
{
	static const char *const text =
		"Message-ID: <lenient@example.org>\n"
		"From: not an address\n"
		"To: Ann <ann@example.org>, broken@, list: a@example.org, b@example.org;\n"
		"In-Reply-To: <parent@example.org> (Ann's message of Mon)\n"
		"References: <root@example.org> <bad id@x> <parent@example.org>\n"
		"Date: not a date\n"
		"List-Id: no brackets.example.org\n"
		"\nbody\n";
	g_autoptr(GError) error = NULL;
	struct patchmail *m = parse_text(text, &error);
	g_autofree char *to = NULL;
	g_autofree char *refs = NULL;

	g_assert_no_error(error);
	if (!m)
		return;
	g_assert_null(m->from);
	g_assert_null(m->author);
	to = joined(m->to);
	g_assert_cmpstr(to, ==, "Ann <ann@example.org> a@example.org b@example.org");
	g_assert_cmpstr(m->in_reply_to, ==, "parent@example.org");
	refs = joined(m->references);
	g_assert_cmpstr(refs, ==, "root@example.org parent@example.org");
	g_assert_cmpint(m->date, ==, 0);
	g_assert_null(m->list_id);
	g_assert_cmpstr(m->subject, ==, "");
	g_assert_cmpint(m->kind, ==, PATCHMAIL_OTHER);
	patchmail_free(m);
}

/* ---- Fuzzing ---- */

/* Pieces of mail structure that mutations splice in. */
static const char *const tokens[] = {
	"\n", "\r\n", "\n\n", "--", "-- \n", "---\n", "=", "=\n", "=3D", "=?utf-8?b?", "?=", "[", "]",
	":", " ", "\t", "<", ">", "\\", "@@ -1,3 +1,4 @@\n", "diff --git a/x b/x\n", "--- a/x\n",
	"+++ b/x\n", "Content-Type: multipart/mixed; boundary=x\n", "--x\n", "--x--\n",
	"Content-Type: message/rfc822\n\n", "Content-Transfer-Encoding: base64\n",
	"Content-Transfer-Encoding: quoted-printable\n", "charset=utf-16", "base-commit: ",
	"From: ", "Subject: [PATCH v2 0/3] ", "Re: ", "\xff\xfe", "\xc3", "\x00",
};

static const char *const corpus_names[] = {
	"series-v2-0.eml", "series-v2-1.eml", "series-v2-2.eml", "series-v2-3.eml",
	"quoted-printable.eml", "base64-latin1.eml", "attached.eml", "in-body-from.eml",
	"review-reply.eml", "fixup-reply.eml", "no-message-id.eml", "truncated-multipart.eml",
	"nul-header.eml",
};

static void insert_bytes(GByteArray *a, guint at, const guint8 *data, guint n)
{
	guint len = a->len;

	if (n == 0)
		return;
	g_byte_array_set_size(a, len + n);
	memmove(a->data + at + n, a->data + at, len - at);
	memcpy(a->data + at, data, n);
}

/* Where a mail's body starts, so that half the mutations spare the headers GMime insists on. */
static guint body_offset(const GByteArray *mail)
{
	const guint8 *blank = mail->len ? memmem(mail->data, mail->len, "\n\n", 2) : NULL;

	return blank ? (guint)(blank - mail->data) + 2 : 0;
}

static void mutate(GByteArray *mail, GRand *rand)
{
	guint len = mail->len;
	guint from = g_rand_boolean(rand) ? MIN(body_offset(mail), len) : 0;
	guint at = len > from ? (guint)g_rand_int_range(rand, (gint32)from, (gint32)len) : from;
	guint span = (guint)g_rand_int_range(rand, 1, 200);

	switch (g_rand_int_range(rand, 0, 6)) {
	case 0: /* flip a byte */
		if (len)
			mail->data[at] ^= (guint8)g_rand_int_range(rand, 1, 256);
		break;
	case 1: { /* splice in a token */
		const char *t = tokens[g_rand_int_range(rand, 0, G_N_ELEMENTS(tokens))];
		gsize n = *t ? strlen(t) : 1; /* "\x00" is one NUL byte */

		insert_bytes(mail, at, (const guint8 *)t, (guint)n);
		break;
	}
	case 2: /* delete a run */
		g_byte_array_remove_range(mail, at, MIN(span, len - at));
		break;
	case 3: { /* repeat a run */
		g_autofree guint8 *copy = g_memdup2(mail->data + at, MIN(span, len - at));

		for (int i = g_rand_int_range(rand, 1, 50); i > 0; i--)
			insert_bytes(mail, at, copy, MIN(span, len - at));
		break;
	}
	case 4: /* cut */
		g_byte_array_set_size(mail, at);
		break;
	default: /* overwrite a run with random bytes */
		for (guint i = at; i < MIN(at + span, len); i++)
			mail->data[i] = (guint8)g_rand_int_range(rand, 0, 256);
		break;
	}
}

/* ---- Stored with the mail: patchmail_pack() and back ---- */

static void assert_same_strv(const GPtrArray *a, const GPtrArray *b)
{
	g_assert_nonnull(b);
	g_assert_cmpuint(a ? a->len : 0, ==, b ? b->len : 0);
	for (guint i = 0; a && b && i < MIN(a->len, b->len); i++)
		g_assert_cmpstr(a->pdata[i], ==, b->pdata[i]);
}

/* Every field of @b equals @a's, field by field. */
static void assert_same_mail(const struct patchmail *a, const struct patchmail *b)
{
	g_assert_cmpstr(a->message_id, ==, b->message_id);
	g_assert_cmpstr(a->in_reply_to, ==, b->in_reply_to);
	assert_same_strv(a->references, b->references);
	g_assert_cmpstr(a->from, ==, b->from);
	g_assert_cmpint(a->date, ==, b->date);
	g_assert_cmpstr(a->subject, ==, b->subject);
	g_assert_cmpstr(a->list_id, ==, b->list_id);
	assert_same_strv(a->to, b->to);
	assert_same_strv(a->cc, b->cc);
	g_assert_cmpstr(a->tags.title, ==, b->tags.title);
	assert_same_strv(a->tags.prefixes, b->tags.prefixes);
	g_assert_cmpuint(a->tags.version, ==, b->tags.version);
	g_assert_cmpint(a->tags.versioned, ==, b->tags.versioned);
	g_assert_cmpuint(a->tags.n, ==, b->tags.n);
	g_assert_cmpuint(a->tags.total, ==, b->tags.total);
	g_assert_cmpint(a->tags.counted, ==, b->tags.counted);
	g_assert_cmpint(a->tags.reply, ==, b->tags.reply);
	g_assert_cmpint(a->tags.patch, ==, b->tags.patch);
	g_assert_cmpint(a->tags.cover, ==, b->tags.cover);
	g_assert_cmpint(a->tags.rfc, ==, b->tags.rfc);
	g_assert_cmpint(a->tags.resend, ==, b->tags.resend);
	g_assert_cmpint(a->kind, ==, b->kind);
	g_assert_cmpstr(a->automatic, ==, b->automatic);
	g_assert_cmpint(a->html_only, ==, b->html_only);
	g_assert_cmpstr(a->html, ==, b->html);
	g_assert_cmpstr(a->body, ==, b->body);
	g_assert_cmpstr(a->diff, ==, b->diff);
	g_assert_cmpint(a->diff_attached, ==, b->diff_attached);
	g_assert_cmpstr(a->commit_message, ==, b->commit_message);
	g_assert_cmpstr(a->author, ==, b->author);
	g_assert_cmpstr(a->body_subject, ==, b->body_subject);
	g_assert_cmpint(a->body_date, ==, b->body_date);
	g_assert_cmpstr(a->base_commit, ==, b->base_commit);
	assert_same_strv(a->prerequisite_patch_ids, b->prerequisite_patch_ids);
}

/* @m packed and unpacked: the same mail; packed again, the same bytes. */
static void assert_round_trip(const struct patchmail *m)
{
	g_autoptr(GBytes) packed = patchmail_pack(m);
	g_autoptr(GBytes) again = NULL;
	g_autoptr(GError) error = NULL;
	struct patchmail *u = patchmail_unpack(packed, &error);

	g_assert_no_error(error);
	g_assert_nonnull(u);
	if (!u)
		return;
	assert_same_mail(m, u);
	again = patchmail_pack(u);
	g_assert_true(g_bytes_equal(packed, again));
	patchmail_free(u);
}

/*
 * Every mail of the corpus that parses, and mails that fill the fields
 * the corpus leaves empty (a machine's reason, an HTML-only body, a
 * list's id, prerequisite patches, bytes that are no UTF-8 in a
 * subject), survive the store field for field.
 */
static void test_pack(void)
{
	static const char *const texts[] = {
		"From: A <a@example.org>\nTo: bot@example.org, b@example.org\nCc: c@example.org\n"
		"Subject: Out of Office: back Monday\nMessage-ID: <ooo@example.org>\n"
		"List-Id: Net <netdev.vger.kernel.org>\nX-Autoreply: yes\n\naway\n",
		"From: A <a@example.org>\nTo: bot@example.org\nSubject: help\n"
		"Message-ID: <html@example.org>\nMIME-Version: 1.0\n"
		"Content-Type: text/html; charset=utf-8\n\n<p>#zeroday help</p>\n",
		"From: A <a@example.org>\nSubject: [PATCH RFC RESEND net v3 2/4] x: \xe9t\xe9\n"
		"Message-ID: <pre@example.org>\nIn-Reply-To: <c@example.org>\n"
		"References: <a@example.org> <b@example.org>\n"
		"Date: Tue, 14 Nov 2023 21:13:20 +0000\n\n"
		"From: B <b@example.org>\nDate: Mon, 13 Nov 2023 10:00:00 +0000\n\nWhy.\n---\n"
		"diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n\n"
		"base-commit: " BASE_COMMIT "\n"
		"prerequisite-patch-id: 1111111111111111111111111111111111111111\n"
		"prerequisite-patch-id: 2222222222222222222222222222222222222222\n",
	};
	guint packed = 0;

	for (gsize i = 0; i < G_N_ELEMENTS(corpus_names); i++) {
		gsize len = 0;
		g_autofree char *text = data_file(corpus_names[i], &len);
		struct patchmail *m = patchmail_parse(text, len, PATCHMAIL_SIZE_DEFAULT, NULL);

		if (!m)
			continue;
		assert_round_trip(m);
		/*
		 * A diff in the body is stored once: as where it is in the body.
		 * A body converted from another charset no longer holds the
		 * diff's bytes (base64-latin1.eml): both are stored.
		 */
		if (m->diff && !m->diff_attached && g_utf8_validate(m->diff, -1, NULL)) {
			g_autoptr(GBytes) with = patchmail_pack(m);
			g_autoptr(GBytes) without = NULL;
			char *diff = g_steal_pointer(&m->diff);

			without = patchmail_pack(m);
			m->diff = diff;
			g_assert_cmpuint(g_bytes_get_size(with) - g_bytes_get_size(without), <, 32);
			g_assert_cmpuint(strlen(m->diff), >, 100);
		}
		patchmail_free(m);
		packed++;
	}
	for (gsize i = 0; i < G_N_ELEMENTS(texts); i++) {
		g_autoptr(GError) error = NULL;
		struct patchmail *m = parse_text(texts[i], &error);

		g_assert_no_error(error);
		if (!m)
			continue;
		assert_round_trip(m);
		packed++;
		if (i == 0) {
			g_assert_nonnull(m->automatic);
			g_assert_cmpstr(m->list_id, ==, "netdev.vger.kernel.org");
			g_assert_cmpuint(m->cc->len, ==, 1);
		} else if (i == 1) {
			g_assert_true(m->html_only);
		} else {
			g_assert_cmpuint(m->prerequisite_patch_ids->len, ==, 2);
			g_assert_cmpuint(m->references->len, ==, 2);
			g_assert_true(m->tags.rfc && m->tags.resend && m->tags.versioned);
			g_assert_nonnull(m->author);
			g_assert_cmpint(m->body_date, !=, 0);
		}
		patchmail_free(m);
	}
	g_test_message("%u mails packed and unpacked", packed);
	g_assert_cmpuint(packed, >=, G_N_ELEMENTS(corpus_names) - 3 + G_N_ELEMENTS(texts));
}

/* Bytes of another layout version, cut short, or none: refused or read safely, never a crash. */
static void test_unpack_refused(void)
{
	g_autofree char *text = data_file("series-v2-1.eml", NULL);
	struct patchmail *m = parse_text(text, NULL);
	g_autoptr(GBytes) packed = NULL;
	g_autoptr(GBytes) empty = g_bytes_new(NULL, 0);
	g_autoptr(GError) error = NULL;
	g_autofree guint8 *other = NULL;
	gsize len = 0;
	const guint8 *data;

	g_assert_nonnull(m);
	if (!m)
		return;
	packed = patchmail_pack(m);
	patchmail_free(m);
	data = g_bytes_get_data(packed, &len);
	other = g_memdup2(data, len);
	other[0]++;
	{
		g_autoptr(GBytes) b = g_bytes_new(other, len);

		g_assert_null(patchmail_unpack(b, &error));
		g_assert_error(error, MAIL_ERROR, MAIL_ERROR_INVALID);
		g_clear_error(&error);
	}
	g_assert_null(patchmail_unpack(empty, &error));
	g_assert_error(error, MAIL_ERROR, MAIL_ERROR_INVALID);
	g_clear_error(&error);
	g_assert_null(patchmail_unpack(NULL, &error));
	g_assert_error(error, MAIL_ERROR, MAIL_ERROR_INVALID);
	g_clear_error(&error);
	/* Cut at every length: a mail that reads, or a refusal. */
	for (gsize cut = 1; cut < len; cut += 1 + cut / 16) {
		g_autoptr(GBytes) b = g_bytes_new(data, cut);
		struct patchmail *u = patchmail_unpack(b, &error);

		g_assert_true(!u != !error);
		g_clear_error(&error);
		patchmail_free(u);
	}
}

/* What any accepted mail must be. */
static void check_invariants(const struct patchmail *m)
{
	g_assert_nonnull(m->message_id);
	g_assert_true(*m->message_id);
	g_assert_true(g_utf8_validate(m->subject, -1, NULL));
	g_assert_true(g_utf8_validate(m->tags.title, -1, NULL));
	g_assert_true(g_utf8_validate(m->body, -1, NULL));
	/* The diff is the part's bytes, in its charset: see test_latin1_diff(). */
	g_assert_true(!m->commit_message || g_utf8_validate(m->commit_message, -1, NULL));
	g_assert_true(m->kind != PATCHMAIL_PATCH || m->diff);
	g_assert_true(!m->diff == !m->commit_message);
	g_assert_true(!m->base_commit || strlen(m->base_commit) == 40 || strlen(m->base_commit) == 64);
	g_assert_cmpuint(m->tags.version, >=, 1);
	g_assert_true(m->tags.n <= m->tags.total || patchmail_subject_beyond(&m->tags));
}

static void test_fuzz(void)
{
	const char *env = g_getenv("ZERODAY_FUZZ_SEED");
	guint32 seed = env ? (guint32)g_ascii_strtoull(env, NULL, 10) : 20231114;
	g_autoptr(GRand) rand = g_rand_new_with_seed(seed);
	GPtrArray *corpus = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
	g_autoptr(GHashTable) reasons = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	guint accepted = 0, refused = 0;
	double slowest = 0;
	GHashTableIter iter;
	gpointer reason, count;
	gint64 start = g_get_monotonic_time();

	for (gsize i = 0; i < G_N_ELEMENTS(corpus_names); i++) {
		gsize len = 0;
		char *text = data_file(corpus_names[i], &len);

		g_ptr_array_add(corpus, g_bytes_new_take(text, len));
	}
	for (guint round = 0; round < FUZZ_ROUNDS; round++) {
		GByteArray *mail = g_byte_array_new();
		g_autoptr(GError) error = NULL;
		struct patchmail *m;
		gint64 t0;
		double seconds;

		if (round % 10 == 0) {
			guint n = (guint)g_rand_int_range(rand, 0, 4096);

			for (guint i = 0; i < n; i++)
				g_byte_array_append(mail, (const guint8[]){ (guint8)g_rand_int_range(rand, 0, 256) }, 1);
		} else {
			GBytes *base = corpus->pdata[g_rand_int_range(rand, 0, (gint32)corpus->len)];
			gsize len;
			const guint8 *data = g_bytes_get_data(base, &len);

			g_byte_array_append(mail, data, (guint)len);
			for (int i = g_rand_int_range(rand, 1, 9); i > 0; i--)
				mutate(mail, rand);
		}
		t0 = g_get_monotonic_time();
		m = patchmail_parse((const char *)mail->data, mail->len, PATCHMAIL_SIZE_DEFAULT, &error);
		seconds = (double)(g_get_monotonic_time() - t0) / G_USEC_PER_SEC;
		slowest = MAX(slowest, seconds);
		g_assert_cmpfloat(seconds, <, FUZZ_MAIL_SECONDS);
		g_assert_true(!m != !error);
		if (m) {
			check_invariants(m);
			/* What is stored with a mail must be the mail, whatever it held. */
			assert_round_trip(m);
			accepted++;
		} else {
			g_assert_error(error, MAIL_ERROR, MAIL_ERROR_INVALID);
			g_assert_true(error && *error->message);
			refused++;
			if (error) {
				count = g_hash_table_lookup(reasons, error->message);
				g_hash_table_insert(reasons, g_strdup(error->message),
						    GUINT_TO_POINTER(GPOINTER_TO_UINT(count) + 1));
			}
		}
		patchmail_free(m);
		/* The subject parser alone, on the same bytes as a string. */
		{
			g_autofree char *s = g_strndup((const char *)mail->data, MIN(mail->len, 300));
			struct patchmail_subject tags;

			patchmail_subject_parse(&tags, s);
			g_assert_true(g_utf8_validate(tags.title, -1, NULL));
			patchmail_subject_release(&tags);
		}
		g_byte_array_unref(mail);
	}
	g_test_message("seed %u: %u accepted, %u refused, slowest %.3f s, all %.1f s", seed,
		       accepted, refused, slowest,
		       (double)(g_get_monotonic_time() - start) / G_USEC_PER_SEC);
	g_hash_table_iter_init(&iter, reasons);
	while (g_hash_table_iter_next(&iter, &reason, &count))
		g_test_message("  %u: %s", GPOINTER_TO_UINT(count), (const char *)reason);
	/* The mutations must leave enough mail to reach the body code. */
	g_assert_cmpuint(accepted, >, FUZZ_ROUNDS / 4);
	g_ptr_array_unref(corpus);
}

/* ---- Mail written by machines ---- */

static const struct automatic_case {
	const char *headers; /* added to a plain mail's */
	const char *subject;
	bool automatic;
} automatic_cases[] = {
	{ "", "Re: your report", false },
	{ "Auto-Submitted: no\n", "Re: your report", false },
	{ "Auto-Submitted: No (a person)\n", "Re: your report", false },
	{ "Auto-Submitted: auto-replied\n", "Re: your report", true },
	{ "Auto-Submitted: auto-generated; owner-email=x@example.org\n", "x", true },
	{ "Auto-Submitted: AUTO-NOTIFIED\n", "x", true },
	{ "Return-Path: <>\n", "Re: your report", true },
	{ "Return-Path: <a@example.org>\n", "Re: your report", false },
	{ "X-Autoreply: yes\n", "Re: your report", true },
	{ "X-Autorespond: yes\n", "Re: your report", true },
	{ "X-Auto-Response-Suppress: All\n", "Re: your report", true },
	{ "X-MS-Exchange-Inbox-Rules-Loop: a@example.org\n", "Re: your report", true },
	{ "Precedence: auto_reply\n", "Re: your report", true },
	{ "X-Loop: a@example.org\n", "Re: your report", true },
	/* A person's mail through a list carries these: no reason to stay silent. */
	{ "Precedence: bulk\nList-Id: <linux-kernel.vger.kernel.org>\n", "Re: your report", false },
	{ "Precedence: list\n", "Re: your report", false },
	{ "", "Automatic reply: your report", true },
	{ "", "Out of Office: back Monday", true },
	{ "", "Undeliverable: your report", true },
};

static void test_automatic(void)
{
	for (gsize i = 0; i < G_N_ELEMENTS(automatic_cases); i++) {
		const struct automatic_case *c = &automatic_cases[i];
		g_autofree char *text = g_strdup_printf(
			"From: A <a@example.org>\nTo: bot@example.org\nSubject: %s\n"
			"Message-ID: <auto%zu@example.org>\n%s\n#zeroday help\n", c->subject, i,
			c->headers);
		g_autoptr(GError) error = NULL;
		struct patchmail *m = parse_text(text, &error);

		g_assert_no_error(error);
		if (!m)
			continue;
		g_test_message("%s%s: %s", c->headers, c->subject,
			       m->automatic ? m->automatic : "a person's");
		g_assert_cmpint(m->automatic != NULL, ==, c->automatic);
		g_assert_false(m->html_only);
		patchmail_free(m);
	}
	{
		/* A delivery status report: multipart/report. */
		const char *dsn =
			"From: Mail Delivery System <MAILER-DAEMON@example.org>\nTo: bot@example.org\n"
			"Subject: failure notice\nMessage-ID: <dsn@example.org>\nMIME-Version: 1.0\n"
			"Content-Type: multipart/report; report-type=delivery-status; boundary=b\n\n"
			"--b\nContent-Type: text/plain\n\n#zeroday help\n--b\n"
			"Content-Type: message/delivery-status\n\nReporting-MTA: dns; x\n\n--b--\n";
		g_autoptr(GError) error = NULL;
		struct patchmail *m = parse_text(dsn, &error);

		g_assert_no_error(error);
		g_assert_nonnull(m);
		if (m)
			g_assert_nonnull(m->automatic);
		patchmail_free(m);
	}
}

static void test_html_only(void)
{
	const char *html =
		"From: A <a@example.org>\nTo: bot@example.org\nSubject: help\n"
		"Message-ID: <html@example.org>\nMIME-Version: 1.0\n"
		"Content-Type: text/html; charset=utf-8\n\n<p>#zeroday help</p>\n";
	const char *both =
		"From: A <a@example.org>\nTo: bot@example.org\nSubject: help\n"
		"Message-ID: <alt@example.org>\nMIME-Version: 1.0\n"
		"Content-Type: multipart/alternative; boundary=b\n\n--b\n"
		"Content-Type: text/plain\n\n#zeroday help\n--b\nContent-Type: text/html\n\n"
		"<p>#zeroday help</p>\n--b--\n";
	struct patchmail *m = parse_text(html, NULL);

	g_assert_nonnull(m);
	if (m) {
		g_assert_true(m->html_only);
		g_assert_cmpstr(m->body, ==, "");
	}
	patchmail_free(m);
	m = parse_text(both, NULL);
	g_assert_nonnull(m);
	if (m) {
		g_assert_false(m->html_only);
		g_assert_cmpstr(m->body, ==, "#zeroday help");
	}
	patchmail_free(m);
}

int main(int argc, char **argv)
{
	testlib_init(&argc, &argv);
	mail_global_init();
	g_test_add_func("/patchmail/subject", test_subject);
	g_test_add_func("/patchmail/subject-encoded", test_subject_encoded);
	g_test_add_func("/patchmail/series", test_series);
	g_test_add_func("/patchmail/quoted-printable", test_quoted_printable);
	g_test_add_func("/patchmail/base64-latin1", test_base64_latin1);
	g_test_add_func("/patchmail/attached", test_attached);
	g_test_add_func("/patchmail/in-body-from", test_in_body_from);
	g_test_add_func("/patchmail/in-body-headers", test_in_body_headers);
	g_test_add_func("/patchmail/encoded-names", test_encoded_names);
	g_test_add_func("/patchmail/latin1-diff", test_latin1_diff);
	g_test_add_func("/patchmail/prerequisites", test_prerequisites);
	g_test_add_func("/patchmail/review-reply", test_review_reply);
	g_test_add_func("/patchmail/fixup-reply", test_fixup_reply);
	g_test_add_func("/patchmail/diff-shapes", test_diff_shapes);
	g_test_add_func("/patchmail/refused", test_refused);
	g_test_add_func("/patchmail/nul", test_nul);
	g_test_add_func("/patchmail/bad-base64", test_bad_base64);
	g_test_add_func("/patchmail/big", test_big);
	g_test_add_func("/patchmail/lenient-headers", test_lenient_headers);
	g_test_add_func("/patchmail/fuzz", test_fuzz);
	g_test_add_func("/patchmail/automatic", test_automatic);
	g_test_add_func("/patchmail/html-only", test_html_only);
	g_test_add_func("/patchmail/pack", test_pack);
	g_test_add_func("/patchmail/unpack-refused", test_unpack_refused);
	return g_test_run();
}
