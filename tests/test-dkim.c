/*
 * DKIM verification through libopendkim, against mail signed at run time
 * by real tools: keys made by opendkim-genkey, rsa-sha256 signatures by
 * python3-dkim (dkimpy; opendkim-testmsg signs only with rsa-sha1, which
 * RFC 8301 forbids verifiers to accept), rsa-sha1 ones by
 * opendkim-testmsg. A missing tool fails the test: quickstart installs
 * them all.
 */
#include "autoconfig.h"

#include <string.h>

#include <gio/gio.h>

#include "mail/dkim.h"
#include "mail/mail.h"
#include "tests/testlib.h"

/* The command mail every case starts from. */
static const char message[] =
	"From: Dev <dev@example.org>\r\n"
	"To: bot@zeroday.example\r\n"
	"Subject: test linux-next\r\n"
	"Date: Fri, 04 Dec 2026 12:00:00 +0000\r\n"
	"Message-ID: <cmd-1@example.org>\r\n"
	"\r\n"
	"test linux-next\r\n";

/*
 * Signs stdin with dkimpy: argv is selector, domain, private key, [l=].
 * Signing needs no DNS, and importing dnspython would cost most of a second.
 */
static const char dkimpy_sign[] =
	"import sys\n"
	"sys.modules['dns'] = None\n"
	"import dkim\n"
	"sel, dom, key = sys.argv[1:4]\n"
	"msg = sys.stdin.buffer.read()\n"
	"sig = dkim.sign(msg, sel.encode(), dom.encode(), open(key, 'rb').read(),\n"
	"                include_headers=[b'from', b'to', b'subject', b'date', b'message-id'],\n"
	"                length=len(sys.argv) > 4)\n"
	"sys.stdout.buffer.write(sig + msg)\n";

/* Built once by setup(): the tools, the keys and the key file. */
static struct {
	char *dir;
	char *python;
	char *genkey;
	char *testmsg;
	char *keys;
} fx;

/*
 * Returns the path of program @name: from PATH, else from /usr/sbin (where
 * Debian puts opendkim's tools); a missing one fails the test (caller frees).
 */
static char *tool(const char *name)
{
	char *path = g_find_program_in_path(name);

	if (!path) {
		path = g_build_filename("/usr/sbin", name, NULL);
		if (!g_file_test(path, G_FILE_TEST_IS_EXECUTABLE))
			g_clear_pointer(&path, g_free);
	}
	if (!path) {
		g_test_message("%s not found: quickstart installs it", name);
		g_test_fail();
	}
	return path;
}

/*
 * Runs @argv with @input on stdin and returns its stdout; a failing run
 * fails the test and returns "" (caller frees).
 */
static char *run(const char *const *argv, const char *input)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GSubprocess) proc = NULL;
	g_autoptr(GBytes) in = g_bytes_new(input ? input : "", input ? strlen(input) : 0);
	g_autoptr(GBytes) out = NULL;
	g_autoptr(GBytes) err = NULL;
	gsize len = 0;
	const char *data;

	proc = g_subprocess_newv(argv, G_SUBPROCESS_FLAGS_STDIN_PIPE |
				 G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE,
				 &error);
	if (proc && g_subprocess_communicate(proc, in, NULL, &out, &err, &error) &&
	    g_subprocess_get_if_exited(proc) && g_subprocess_get_exit_status(proc) == 0) {
		data = g_bytes_get_data(out, &len);
		return g_strndup(data ? data : "", len);
	}
	{
		g_autofree char *cmd = g_strjoinv(" ", (char **)argv);
		g_autofree char *msg = err ? g_strndup(g_bytes_get_data(err, NULL),
						       g_bytes_get_size(err)) : NULL;

		g_test_message("%s failed: %s %s", cmd, error ? error->message : "",
			       msg ? msg : "");
		g_test_fail();
	}
	return g_strdup("");
}

/* Returns the TXT record content of the zone stub @txt_file, unquoted (caller frees). */
static char *txt_record(const char *txt_file)
{
	g_autofree char *zone = NULL;
	g_autoptr(GRegex) quoted = g_regex_new("\"([^\"]*)\"", 0, 0, NULL);
	g_autoptr(GMatchInfo) match = NULL;
	GString *record = g_string_new(NULL);

	g_assert_true(g_file_get_contents(txt_file, &zone, NULL, NULL));
	for (g_regex_match(quoted, zone ? zone : "", 0, &match); g_match_info_matches(match);
	     g_match_info_next(match, NULL)) {
		g_autofree char *part = g_match_info_fetch(match, 1);

		g_string_append(record, part);
	}
	return g_string_free(record, FALSE);
}

/*
 * Makes a key for @selector in @domain with opendkim-genkey (with @flag
 * unless NULL) and adds its record to @keys as the key file wants it:
 * "selector._domainkey.domain record". With @strip, that text is cut out
 * of the record first.
 */
static void make_key(GString *keys, const char *domain, const char *selector, const char *flag,
		     const char *strip)
{
	g_autofree char *dir = g_build_filename(fx.dir, domain, NULL);
	g_autofree char *txt = NULL;
	g_autofree char *record = NULL;
	g_autofree char *out = NULL;
	const char *argv[] = { fx.genkey, "-D", dir, "-d", domain, "-s", selector, flag, NULL };

	g_assert_cmpint(g_mkdir_with_parents(dir, 0700), ==, 0);
	out = run(argv, NULL);
	txt = g_strdup_printf("%s/%s.txt", dir, selector);
	record = txt_record(txt);
	g_assert_true(g_str_has_prefix(record, "v=DKIM1;"));
	if (strip) {
		char *at = strstr(record, strip);

		g_assert_nonnull(at);
		if (at)
			memmove(at, at + strlen(strip), strlen(at + strlen(strip)) + 1);
	}
	g_string_append_printf(keys, "%s._domainkey.%s %s\n", selector, domain, record);
}

/* Builds the fixture on the first call; a missing tool fails every test. */
static void setup(void)
{
	static bool done;
	g_autoptr(GString) keys = NULL;
	g_autofree char *check = NULL;

	if (done) {
		if (!fx.keys)
			g_test_fail();
		return;
	}
	done = true;
	keys = g_string_new("# selector._domainkey.domain TXT-record\n");
	fx.dir = testlib_mkdir("dkim");
	/* Debian's python3, where python3-dkim lives, before any other. */
	fx.python = g_file_test("/usr/bin/python3", G_FILE_TEST_IS_EXECUTABLE) ?
			    g_strdup("/usr/bin/python3") : tool("python3");
	fx.genkey = tool("opendkim-genkey");
	fx.testmsg = tool("opendkim-testmsg");
	if (!fx.python || !fx.genkey || !fx.testmsg)
		return;
	{
		const char *argv[] = { fx.python, "-c", "import dkim", NULL };

		check = run(argv, NULL);
	}

	make_key(keys, "example.org", "sel", NULL, NULL);
	make_key(keys, "evil.example", "sel", NULL, NULL);
	/* A key in test mode (t=y): its signatures prove nothing. */
	make_key(keys, "example.org", "testing", "--testmode", NULL);
	/* A key for any hash, so rsa-sha1 is refused by zeroday, not by h=. */
	make_key(keys, "example.org", "any", NULL, "h=sha256; ");
	fx.keys = g_build_filename(fx.dir, "keys", NULL);
	g_assert_true(g_file_set_contents(fx.keys, keys->str, -1, NULL));
	g_test_message("key file:\n%s", keys->str);
}

/*
 * Returns @mail signed by dkimpy for @domain with the key of @key_domain
 * and @selector (with an l= body length when @length) (caller frees).
 */
static char *sign_key(const char *mail, const char *domain, const char *key_domain,
		      const char *selector, bool length)
{
	g_autofree char *key = g_strdup_printf("%s/%s/%s.private", fx.dir, key_domain, selector);
	const char *argv[] = { fx.python, "-c", dkimpy_sign, selector, domain, key,
			       length ? "length" : NULL, NULL };

	if (!fx.python)
		return g_strdup(mail);
	return run(argv, mail);
}

static char *sign(const char *mail, const char *domain)
{
	return sign_key(mail, domain, domain, "sel", false);
}

/* Returns the command mail signed for example.org, signed once (caller frees). */
static char *signed_message(void)
{
	static char *once;

	if (!once)
		once = sign(message, "example.org");
	return g_strdup(once);
}

/* Returns @text with every @from replaced by @to (caller frees). */
static char *replace(const char *text, const char *from, const char *to)
{
	g_auto(GStrv) parts = g_strsplit(text, from, -1);

	g_assert_cmpuint(g_strv_length(parts), >, 1);
	return g_strjoinv(to, parts);
}

/* The mails of the cases, made fresh (caller frees). */

static char *mail_signed(void)
{
	return signed_message();
}

static char *mail_signed_lf(void)
{
	g_autofree char *signed_mail = signed_message();

	return replace(signed_mail, "\r\n", "\n");
}

static char *mail_unsigned(void)
{
	return g_strdup(message);
}

static char *mail_empty(void)
{
	return g_strdup("");
}

static char *mail_body_altered(void)
{
	g_autofree char *signed_mail = signed_message();

	return g_strconcat(signed_mail, "bisect linux-next\r\n", NULL);
}

static char *mail_body_altered_lf(void)
{
	g_autofree char *altered = mail_body_altered();

	return replace(altered, "\r\n", "\n");
}

static char *mail_from_altered(void)
{
	g_autofree char *signed_mail = signed_message();

	return replace(signed_mail, "From: Dev <dev@example.org>", "From: Eve <eve@example.org>");
}

static char *mail_subject_altered(void)
{
	g_autofree char *signed_mail = signed_message();

	return replace(signed_mail, "Subject: test linux-next", "Subject: test linux-nexu");
}

static char *mail_evil_signer(void)
{
	return sign(message, "evil.example");
}

static char *mail_auth_results(void)
{
	return g_strconcat("Authentication-Results: mx.example.org; dkim=pass header.d=example.org "
			   "header.s=sel header.b=abcdefgh\r\n",
			   message, NULL);
}

static char *mail_auth_results_evil(void)
{
	g_autofree char *signed_mail = sign(message, "evil.example");

	return g_strconcat("Authentication-Results: mx.example.org; dkim=pass header.d=example.org\r\n",
			   signed_mail, NULL);
}

static char *mail_two_signers(void)
{
	g_autofree char *evil = sign(message, "evil.example");

	return sign(evil, "example.org");
}

static char *mail_same_signer_twice(void)
{
	g_autofree char *once = signed_message();

	return sign(once, "example.org");
}

static char *mail_upper_case_domain(void)
{
	/* The key file's names match case-insensitively, as DNS names do. */
	return sign_key(message, "Example.ORG", "example.org", "sel", false);
}

static char *mail_unknown_selector(void)
{
	g_autofree char *signed_mail = signed_message();

	return replace(signed_mail, "s=sel;", "s=gone;");
}

static char *mail_test_mode_key(void)
{
	return sign_key(message, "example.org", "example.org", "testing", false);
}

static char *mail_any_hash_sha256(void)
{
	return sign_key(message, "example.org", "example.org", "any", false);
}

static char *mail_rsa_sha1(void)
{
	g_autofree char *key = g_build_filename(fx.dir, "example.org", "any.private", NULL);
	/* -C: else opendkim-testmsg leaves garbage after b= (its decr() bug). */
	const char *argv[] = { fx.testmsg, "-C", "-d", "example.org", "-k", key, "-s", "any",
			       NULL };
	g_autofree char *lf = replace(message, "\r\n", "\n");
	char *out;

	if (!fx.testmsg)
		return g_strdup(message);
	out = run(argv, lf);
	g_assert_true(strstr(out, "a=rsa-sha1;") != NULL);
	return out;
}

static char *mail_length_limit(void)
{
	return sign_key(message, "example.org", "example.org", "sel", true);
}

static char *mail_length_limit_appended(void)
{
	g_autofree char *signed_mail = mail_length_limit();

	return g_strconcat(signed_mail, "bisect linux-next\r\n", NULL);
}

static char *mail_utf8_headers(void)
{
	g_autofree char *utf8 = replace(message, "From: Dev <", "From: J\xc3\xb6rg D\xc3\xa9v <");

	return sign(utf8, "example.org");
}

static char *mail_second_from(void)
{
	g_autofree char *signed_mail = signed_message();

	return g_strconcat("From: Boss <boss@example.org>\r\n", signed_mail, NULL);
}

static char *mail_garbage_and_good(void)
{
	g_autofree char *signed_mail = signed_message();

	return g_strconcat("DKIM-Signature: v=1; a=rsa-sha256; d=example.org; s=sel; h=from; "
			   "bh=AAAA; b=AAAA\r\n",
			   signed_mail, NULL);
}

static char *mail_too_many_signatures(void)
{
	g_autofree char *signed_mail = signed_message();
	GString *mail = g_string_new(NULL);

	for (int i = 0; i < 8; i++)
		g_string_append_printf(mail, "DKIM-Signature: v=1; a=rsa-sha256; d=x%d.example; "
				       "s=sel; h=from; bh=AAAA; b=AAAA\r\n", i);
	g_string_append(mail, signed_mail);
	return g_string_free(mail, FALSE);
}

static char *mail_tampered_b(void)
{
	g_autofree char *signed_mail = signed_message();
	char *b = strstr(signed_mail, " b=");

	g_assert_nonnull(b);
	if (b)
		b[3] = b[3] == 'A' ? 'B' : 'A';
	return g_strdup(signed_mail);
}

/* Hostile DKIM-Signature fields, each put above the unsigned message, then the signed one. */
static const char *const garbage[] = {
	"DKIM-Signature: garbage\r\n",
	"DKIM-Signature:\r\n",
	"DKIM-Signature: ;;;;====;;;\r\n",
	"DKIM-Signature: v=1; a=rsa-sha256; d=example.org; s=sel; h=from; bh=AAAA; b=AAAA\r\n",
	"DKIM-Signature: v=1; a=rsa-sha256; d=; s=; h=; bh=; b=\r\n",
	"DKIM-Signature: v=1; a=rsa-sha256; d=example.org; s=sel; h=from:to; bh=!!!; b=@@@\r\n",
	"DKIM-Signature: v=1; a=rsa-sha256; d=example.org; d=evil.example; s=sel; h=from; "
	"bh=AAAA; b=AAAA\r\n",
	"DKIM-Signature: v=1; a=rsa-sha256; d=example.org; s=sel; h=from; "
	"l=99999999999999999999999; bh=AAAA; b=AAAA\r\n",
	"DKIM-Signature: v=1; a=rsa-sha512; c=bogus/bogus; d=example.org; s=sel; h=from; "
	"bh=AAAA; b=AAAA\r\n",
	"DKIM-Signature: v=1; a=rsa-sha256; d=example.org; s=sel; h=from; x=1; t=2; "
	"bh=AAAA; b=AAAA\r\n",
	"DKIM-Signature: v=1; a=rsa-sha256; d=exa\x80\xff" "mple.org; s=s\x01" "el; h=from; "
	"bh=AAAA; b=AAAA\r\n",
	"DKIM-Signature: v=1; a=rsa-sha256; d=example.org; s=../../../../etc/passwd; h=from; "
	"bh=AAAA; b=AAAA\r\n",
	"DKIM-Signature: v=1; a=rsa-sha256; q=dns/txt; d=example.org; s=sel; h=from; i=@evil.example; "
	"bh=AAAA; b=AAAA\r\n",
	"\tDKIM-Signature: v=1\r\n",
	"DKIM-Signature v=1; no colon in this field\r\n",
};

static const struct dkim_case {
	const char *name;
	char *(*mail)(void);
	const char *domains; /* the passing d= domains, comma-separated */
	bool matches;	     /* dkim_from_matches() for dev@example.org */
} cases[] = {
	{ "signed", mail_signed, "example.org", true },
	{ "signed, LF line ends", mail_signed_lf, "example.org", true },
	{ "unsigned", mail_unsigned, "", false },
	{ "empty", mail_empty, "", false },
	{ "body altered", mail_body_altered, "", false },
	{ "body altered, LF line ends", mail_body_altered_lf, "", false },
	{ "signed From altered", mail_from_altered, "", false },
	{ "signed Subject altered", mail_subject_altered, "", false },
	{ "signature b= altered", mail_tampered_b, "", false },
	{ "signed by another domain", mail_evil_signer, "evil.example", false },
	{ "Authentication-Results on unsigned", mail_auth_results, "", false },
	{ "Authentication-Results on another domain's", mail_auth_results_evil, "evil.example",
	  false },
	{ "two signers", mail_two_signers, "example.org,evil.example", true },
	{ "same signer twice", mail_same_signer_twice, "example.org", true },
	{ "d= in upper case", mail_upper_case_domain, "example.org", true },
	{ "selector without key", mail_unknown_selector, "", false },
	{ "key in test mode", mail_test_mode_key, "", false },
	{ "rsa-sha256 with a key for any hash", mail_any_hash_sha256, "example.org", true },
	{ "rsa-sha1 by opendkim-testmsg", mail_rsa_sha1, "", false },
	{ "l= body length", mail_length_limit, "", false },
	{ "l= body length, text appended", mail_length_limit_appended, "", false },
	{ "raw UTF-8 in the signed From", mail_utf8_headers, "example.org", true },
	{ "second From above the signed one", mail_second_from, "", false },
	{ "a garbage signature beside a good one", mail_garbage_and_good, "example.org", true },
	{ "more than 8 signatures", mail_too_many_signatures, "", false },
};

/* Verifies @mail of @len bytes with the fixture's keys and checks the outcome. */
static void check(const char *name, const char *mail, gsize len, const char *want, bool matches)
{
	g_autoptr(GError) error = NULL;
	g_auto(GStrv) domains = NULL;
	g_autofree char *got = NULL;

	g_test_message("case: %s", name);
	if (!fx.keys)
		return;
	g_assert_true(dkim_verify_mail(mail, len, fx.keys, &domains, &error));
	g_assert_no_error(error);
	g_assert_nonnull(domains);
	if (!domains)
		return;
	got = g_strjoinv(",", domains);
	g_assert_cmpstr(got, ==, want);
	g_assert_cmpint(dkim_from_matches((const char *const *)domains, "dev@example.org"), ==,
			matches);
}

static void test_cases(void)
{
	setup();
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *mail = cases[i].mail();

		check(cases[i].name, mail, strlen(mail), cases[i].domains, cases[i].matches);
	}
}

static void test_nul_byte(void)
{
	g_autofree char *mail = NULL;
	gsize len;

	setup();
	mail = signed_message();
	len = strlen(mail);

	/* A NUL in the body: the signature itself is fine, the mail is not. */
	g_assert_true(len > 2);
	mail[len - 2] = '\0';
	check("NUL byte in the body", mail, len, "", false);
}

static void test_garbage(void)
{
	setup();
	for (size_t i = 0; i < G_N_ELEMENTS(garbage); i++) {
		g_autofree char *mail = g_strconcat(garbage[i], message, NULL);
		g_autofree char *signed_mail = signed_message();
		g_autofree char *with_good = g_strconcat(garbage[i], signed_mail, NULL);
		g_autofree char *name = g_strdup_printf("garbage %zu", i);
		g_autofree char *name_good = g_strdup_printf("garbage %zu above a good one", i);

		check(name, mail, strlen(mail), "", false);
		/*
		 * A bad signature is ignored, the good one still checked; but
		 * a field that is not a header field leaves nothing verified.
		 */
		if (g_str_has_prefix(garbage[i], "DKIM-Signature:"))
			check(name_good, with_good, strlen(with_good), "example.org", true);
	}
}

static void test_long_domain(void)
{
	g_autofree char *long_domain = g_strnfill(2000, 'a');
	g_autofree char *field = g_strdup_printf("DKIM-Signature: v=1; a=rsa-sha256; d=%s.org; "
						 "s=%s; h=from; bh=AAAA; b=AAAA\r\n",
						 long_domain, long_domain);
	g_autofree char *mail = g_strconcat(field, message, NULL);

	setup();
	check("a 2000-byte d= and s=", mail, strlen(mail), "", false);
}

static void test_key_file_missing(void)
{
	g_autoptr(GError) error = NULL;
	g_auto(GStrv) domains = NULL;
	g_autofree char *missing = NULL;

	setup();
	missing = g_build_filename(fx.dir, "no-such-keys", NULL);
	g_assert_false(dkim_verify_mail(message, strlen(message), missing, &domains, &error));
	g_assert_error(error, MAIL_ERROR, MAIL_ERROR_FAILED);
	g_assert_null(domains);
}

static void test_dns(void)
{
	g_autoptr(GError) error = NULL;
	g_auto(GStrv) domains = NULL;
	g_autofree char *mail = NULL;
	gint64 start = g_get_monotonic_time();

	/*
	 * No key for sel._domainkey.example.org is published: with a working
	 * resolver the answer is "no key", without one a temporary failure.
	 */
	setup();
	mail = signed_message();
	if (dkim_verify_mail(mail, strlen(mail), NULL, &domains, &error)) {
		g_assert_nonnull(domains);
		g_assert_null(domains ? domains[0] : NULL);
	} else {
		g_test_message("DNS: %s", error->message);
		g_assert_error(error, MAIL_ERROR, MAIL_ERROR_TEMPORARY);
		g_assert_null(domains);
	}
	g_assert_cmpint(g_get_monotonic_time() - start, <, 60 * G_USEC_PER_SEC);
}

static const struct match_case {
	const char *address;
	bool matches;
} match_cases[] = {
	{ "dev@example.org", true },
	{ "Dev@EXAMPLE.Org", true },
	{ "dev@kernel.org", true },
	{ "\"a@b\"@example.org", true },
	{ "dev@sub.example.org", false },
	{ "dev@example.org.evil.example", false },
	{ "dev@notexample.org", false },
	{ "dev@example.org.", false },
	{ "dev@", false },
	{ "dev", false },
	{ "", false },
	{ "example.org", false },
};

static void test_from_matches(void)
{
	static const char *const domains[] = { "example.org", "kernel.org", NULL };
	static const char *const none[] = { NULL };

	for (size_t i = 0; i < G_N_ELEMENTS(match_cases); i++) {
		g_test_message("address: %s", match_cases[i].address);
		g_assert_cmpint(dkim_from_matches(domains, match_cases[i].address), ==,
				match_cases[i].matches);
		g_assert_false(dkim_from_matches(none, match_cases[i].address));
	}
}

int main(int argc, char **argv)
{
	int ret;

	testlib_init(&argc, &argv);
	g_test_add_func("/dkim/cases", test_cases);
	g_test_add_func("/dkim/nul-byte", test_nul_byte);
	g_test_add_func("/dkim/garbage", test_garbage);
	g_test_add_func("/dkim/long-domain", test_long_domain);
	g_test_add_func("/dkim/key-file-missing", test_key_file_missing);
	g_test_add_func("/dkim/dns", test_dns);
	g_test_add_func("/dkim/from-matches", test_from_matches);
	ret = g_test_run();
	g_free(fx.dir);
	g_free(fx.python);
	g_free(fx.genkey);
	g_free(fx.testmsg);
	g_free(fx.keys);
	return ret;
}
