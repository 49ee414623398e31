/*
 * DKIM verification: the only file that includes libopendkim's header.
 *
 * Each dkim_verify_mail() call makes its own library handle (dkim_init())
 * and closes it before returning. The query method and the key file are
 * options of the handle, not of one verification, so a shared handle would
 * let two concurrent calls with different key files race; a handle costs
 * a few allocations and a resolver set-up, nothing next to a DNS query.
 */
#define G_LOG_DOMAIN "mail"

#include "autoconfig.h"

#include <errno.h>
#include <limits.h>
#include <resolv.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <opendkim/dkim.h>

#include "mail/dkim.h"
#include "mail/mail.h"

/*
 * Seconds a key query waits for one name server. libopendkim's timeout
 * option bounds only asynchronous resolvers; its stock one, glibc's
 * res_nsend(), obeys resolver_init()'s settings instead.
 */
#define DKIM_QUERY_TIMEOUT 5

/* More signatures than this and the message is not verified at all. */
#define DKIM_MAX_SIGNATURES 8

/* The state of one verification, released by verification_release(). */
struct verification {
	DKIM_LIB *lib;
	DKIM *dkim;
	GByteArray *crlf;
};

static void verification_release(struct verification *v)
{
	if (v->dkim)
		dkim_free(v->dkim);
	if (v->lib)
		dkim_close(v->lib);
	if (v->crlf)
		g_byte_array_unref(v->crlf);
}

/* Returns @text (hostile, may be NULL) escaped for the log (caller frees). */
static char *shown(const unsigned char *text)
{
	return g_strescape(text ? (const char *)text : "(none)", NULL);
}

/* Returns a copy of @raw with every bare LF made CRLF; a CR is kept as it is. */
static GByteArray *to_crlf(const char *raw, gsize len)
{
	GByteArray *out = g_byte_array_sized_new(len + len / 16 + 2);
	gsize from = 0;

	for (gsize i = 0; i < len; i++) {
		if (raw[i] != '\n' || (i > 0 && raw[i - 1] == '\r'))
			continue;
		g_byte_array_append(out, (const guint8 *)raw + from, i - from);
		g_byte_array_append(out, (const guint8 *)"\r\n", 2);
		from = i + 1;
	}
	g_byte_array_append(out, (const guint8 *)raw + from, len - from);
	return out;
}

/* Returns whether the header field @field of @len bytes is a DKIM-Signature. */
static bool is_signature(const guint8 *field, gsize len)
{
	static const char name[] = "DKIM-Signature";
	gsize n = sizeof(name) - 1;

	if (len <= n || g_ascii_strncasecmp((const char *)field, name, n) != 0)
		return false;
	while (n < len && (field[n] == ' ' || field[n] == '\t'))
		n++;
	return n < len && field[n] == ':';
}

/*
 * Translates libopendkim's status @status, returned by step @what of
 * verification @v, into @error; returns false.
 */
static bool library_failed(struct verification *v, const char *what, DKIM_STAT status,
			   GError **error)
{
	const char *detail = v->dkim ? dkim_geterror(v->dkim) : NULL;

	g_set_error(error, MAIL_ERROR, MAIL_ERROR_FAILED, "DKIM verification: %s: %s%s%s", what,
		    dkim_getresultstr(status), detail && *detail ? ": " : "",
		    detail && *detail ? detail : "");
	return false;
}

/* Whether @status, from a step of a verification, means the library itself failed. */
static bool library_fault(DKIM_STAT status)
{
	return status == DKIM_STAT_NORESOURCE || status == DKIM_STAT_INTERNAL ||
	       status == DKIM_STAT_INVALID;
}

/*
 * Sets up the resolver for libopendkim's key queries, as its own
 * dkim_res_init() does, but with one try of DKIM_QUERY_TIMEOUT seconds per
 * name server instead of resolv.conf's (by default two of 5 seconds).
 */
static int resolver_init(void **service)
{
	struct __res_state *res = g_new0(struct __res_state, 1);

	if (res_ninit(res) != 0) {
		g_free(res);
		return -1;
	}
	res->retrans = DKIM_QUERY_TIMEOUT;
	res->retry = 1;
	*service = res;
	return 0;
}

static void resolver_close(void *service)
{
	res_nclose(service);
	g_free(service);
}

/* Sets the options of the handle @lib; returns false with @error set on failure. */
static bool set_options(DKIM_LIB *lib, const char *key_file, GError **error)
{
	/* Refuse messages whose From (or Date, Subject...) is ambiguous. */
	uint32_t flags = DKIM_LIBFLAGS_STRICTHDRS;
	unsigned int timeout = DKIM_QUERY_TIMEOUT;
	DKIM_STAT status;

	dkim_dns_set_init(lib, resolver_init);
	dkim_dns_set_close(lib, resolver_close);
	status = dkim_options(lib, DKIM_OP_SETOPT, DKIM_OPTS_FLAGS, &flags, sizeof(flags));
	if (status == DKIM_STAT_OK)
		status = dkim_options(lib, DKIM_OP_SETOPT, DKIM_OPTS_TIMEOUT, &timeout,
				      sizeof(timeout));
	if (status == DKIM_STAT_OK && key_file) {
		dkim_query_t method = DKIM_QUERY_FILE;

		status = dkim_options(lib, DKIM_OP_SETOPT, DKIM_OPTS_QUERYMETHOD, &method,
				      sizeof(method));
		if (status == DKIM_STAT_OK)
			status = dkim_options(lib, DKIM_OP_SETOPT, DKIM_OPTS_QUERYINFO,
					      (void *)key_file, strlen(key_file));
	}
	if (status != DKIM_STAT_OK) {
		g_set_error(error, MAIL_ERROR, MAIL_ERROR_FAILED,
			    "DKIM verification: setting library options: %s",
			    dkim_getresultstr(status));
		return false;
	}
	return true;
}

/* Why signature @sig did not pass, for the log; NULL if it passed. */
static const char *refusal(DKIM_SIGINFO *sig)
{
	unsigned int flags = dkim_sig_getflags(sig);
	dkim_alg_t alg = DKIM_SIGN_UNKNOWN;
	int error = dkim_sig_geterror(sig);

	if (flags & DKIM_SIGFLAG_IGNORE)
		return "ignored";
	if ((flags & DKIM_SIGFLAG_PROCESSED) && dkim_sig_getbh(sig) == DKIM_SIGBH_MISMATCH)
		return "body hash mismatch";
	if (error != DKIM_SIGERROR_OK && error != DKIM_SIGERROR_UNKNOWN)
		return dkim_sig_geterrorstr(error);
	if (!(flags & DKIM_SIGFLAG_PROCESSED))
		return "not processed";
	if (!(flags & DKIM_SIGFLAG_PASSED))
		return "signature mismatch";
	if (dkim_sig_getbh(sig) != DKIM_SIGBH_MATCH)
		return "body hash mismatch";
	if (flags & DKIM_SIGFLAG_TESTKEY)
		return "key in test mode (t=y)";
	if (dkim_sig_getsignalg(sig, &alg) != DKIM_STAT_OK ||
	    (alg != DKIM_SIGN_RSASHA256 && alg != DKIM_SIGN_ED25519SHA256))
		return "algorithm refused (rsa-sha1 is not accepted, RFC 8301)";
	if (dkim_sig_gettagvalue(sig, false, (u_char *)"l"))
		return "body length limit l= refused";
	return NULL;
}

/* Adds @domain (library memory) to @out in lower case unless it is there. */
static void add_domain(GPtrArray *out, const unsigned char *domain)
{
	g_autofree char *lower = g_ascii_strdown((const char *)domain, -1);

	for (guint i = 0; i < out->len; i++) {
		if (strcmp(out->pdata[i], lower) == 0)
			return;
	}
	g_ptr_array_add(out, g_steal_pointer(&lower));
}

/*
 * Feeds the message in @v->crlf to @v->dkim, one header field at a time
 * (without its final CRLF), then the body. Sets *@done when the message
 * turned out unsigned or unusable: then there is nothing to collect.
 */
static bool feed(struct verification *v, bool *done, GError **error)
{
	guint8 *buf = v->crlf->data;
	gsize n = v->crlf->len;
	gsize pos = 0;
	gsize body = n;
	unsigned int signatures = 0;
	bool signature;
	DKIM_STAT status;

	*done = false;
	while (pos < n) {
		gsize start = pos;
		gsize end = n;

		if (n - pos >= 2 && buf[pos] == '\r' && buf[pos + 1] == '\n') {
			body = pos + 2;
			break;
		}
		/* A field runs to the CRLF not followed by white space. */
		for (;;) {
			guint8 *crlf = memmem(buf + pos, n - pos, "\r\n", 2);

			if (!crlf) {
				end = pos = n;
				break;
			}
			pos = (gsize)(crlf - buf) + 2;
			if (pos < n && (buf[pos] == ' ' || buf[pos] == '\t'))
				continue;
			end = (gsize)(crlf - buf);
			break;
		}
		signature = is_signature(buf + start, end - start);
		if (signature && ++signatures > DKIM_MAX_SIGNATURES) {
			g_debug("DKIM: more than %d signatures, not verified", DKIM_MAX_SIGNATURES);
			*done = true;
			return true;
		}
		/* A field is never empty: an empty line ended the header above. */
		status = dkim_header(v->dkim, buf + start, end - start);
		if (library_fault(status))
			return library_failed(v, "header", status, error);
		if (status == DKIM_STAT_SYNTAX && signature) {
			/*
			 * The field is kept, its tag list refused: RFC 6376
			 * 6.1.1 has the signature ignored, the others checked.
			 */
			g_autofree char *why = shown((const unsigned char *)dkim_geterror(v->dkim));

			g_debug("DKIM: signature ignored: %s", why);
			continue;
		}
		if (status != DKIM_STAT_OK) {
			/*
			 * A field without a colon, or with a control character
			 * in its name: a mail parser may end the header there,
			 * and read what follows as body. Nothing is verified.
			 */
			g_autofree char *field = g_strndup((const char *)buf + start,
							   MIN(end - start, 80));
			g_autofree char *shown_field = shown((const unsigned char *)field);

			g_debug("DKIM: header field refused (%s): %s", dkim_getresultstr(status),
				shown_field);
			*done = true;
			return true;
		}
	}

	status = dkim_eoh(v->dkim);
	if (status == DKIM_STAT_NOSIG) {
		g_debug("DKIM: no usable signature");
		*done = true;
		return true;
	}
	if (library_fault(status))
		return library_failed(v, "end of header", status, error);
	if (status != DKIM_STAT_OK) {
		g_autofree char *why = shown((const unsigned char *)dkim_geterror(v->dkim));

		g_debug("DKIM: header refused (%s): %s", dkim_getresultstr(status), why);
		*done = true;
		return true;
	}
	if (body < n) {
		status = dkim_body(v->dkim, buf + body, n - body);
		if (library_fault(status))
			return library_failed(v, "body", status, error);
	}
	status = dkim_eom(v->dkim, NULL);
	if (library_fault(status))
		return library_failed(v, "end of message", status, error);
	return true;
}

/*
 * Collects into @out the domains of the passing signatures of @v->dkim.
 * Returns false with MAIL_ERROR_TEMPORARY when a key query failed for a
 * domain that no passing signature vouches for.
 */
static bool collect(struct verification *v, bool from_file, GPtrArray *out, GError **error)
{
	g_autoptr(GPtrArray) unknown = g_ptr_array_new_with_free_func(g_free);
	DKIM_SIGINFO **sigs = NULL;
	int nsigs = 0;
	DKIM_STAT status;

	status = dkim_getsiglist(v->dkim, &sigs, &nsigs);
	if (status != DKIM_STAT_OK)
		return library_failed(v, "signature list", status, error);
	for (int i = 0; i < nsigs; i++) {
		const unsigned char *domain = dkim_sig_getdomain(sigs[i]);
		const char *why = refusal(sigs[i]);
		g_autofree char *shown_domain = shown(domain);
		g_autofree char *shown_selector = shown(dkim_sig_getselector(sigs[i]));

		if (!why && (!domain || !*domain))
			why = "no domain";
		if (why) {
			g_debug("DKIM: signature d=%s s=%s failed: %s", shown_domain,
				shown_selector, why);
			if (dkim_sig_geterror(sigs[i]) == DKIM_SIGERROR_KEYFAIL && domain)
				add_domain(unknown, domain);
			continue;
		}
		g_debug("DKIM: signature d=%s s=%s passed", shown_domain, shown_selector);
		add_domain(out, domain);
	}

	for (guint i = 0; i < unknown->len; i++) {
		bool vouched = false;

		for (guint j = 0; j < out->len; j++)
			vouched = vouched || strcmp(unknown->pdata[i], out->pdata[j]) == 0;
		if (vouched)
			continue;
		if (from_file) {
			g_set_error(error, MAIL_ERROR, MAIL_ERROR_FAILED,
				    "DKIM verification: reading the key file failed");
		} else {
			g_autofree char *shown_domain = shown(unknown->pdata[i]);

			g_set_error(error, MAIL_ERROR, MAIL_ERROR_TEMPORARY,
				    "DKIM verification: the key query for %s failed",
				    shown_domain);
		}
		return false;
	}
	return true;
}

bool dkim_verify_mail(const char *raw, gsize len, const char *key_file, char ***domains,
		      GError **error)
{
	struct verification v = { 0 };
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(g_free);
	DKIM_STAT status = DKIM_STAT_OK;
	bool done = false;
	bool ok = false;

	g_return_val_if_fail(raw != NULL || len == 0, false);
	g_return_val_if_fail(domains != NULL, false);

	if (!raw)
		raw = "";
	if (key_file) {
		if (strlen(key_file) >= PATH_MAX) {
			g_set_error(error, MAIL_ERROR, MAIL_ERROR_FAILED,
				    "DKIM key file name longer than %d bytes", PATH_MAX - 1);
			return false;
		}
		if (access(key_file, R_OK) != 0) {
			int saved = errno;

			g_set_error(error, MAIL_ERROR, MAIL_ERROR_FAILED, "DKIM key file %s: %s",
				    key_file, g_strerror(saved));
			return false;
		}
	}
	if (memchr(raw, '\0', len)) {
		g_debug("DKIM: message with a NUL byte, not verified");
		goto empty;
	}

	v.lib = dkim_init(NULL, NULL);
	if (!v.lib) {
		g_set_error(error, MAIL_ERROR, MAIL_ERROR_FAILED,
			    "DKIM verification: the library failed to start");
		return false;
	}
	if (!set_options(v.lib, key_file, error))
		goto out;
	v.dkim = dkim_verify(v.lib, (const unsigned char *)"zeroday", NULL, &status);
	if (!v.dkim) {
		library_failed(&v, "start", status, error);
		goto out;
	}
	v.crlf = to_crlf(raw, len);
	if (!feed(&v, &done, error))
		goto out;
	if (!done && !collect(&v, key_file != NULL, out, error))
		goto out;

empty:
	g_ptr_array_add(out, NULL);
	*domains = (char **)g_ptr_array_steal(out, NULL);
	ok = true;
out:
	verification_release(&v);
	return ok;
}

bool dkim_from_matches(const char *const *domains, const char *from_address)
{
	const char *at;

	g_return_val_if_fail(domains != NULL, false);
	g_return_val_if_fail(from_address != NULL, false);

	at = strrchr(from_address, '@');
	if (!at || at[1] == '\0')
		return false;
	for (; *domains; domains++) {
		if (g_ascii_strcasecmp(*domains, at + 1) == 0)
			return true;
	}
	return false;
}
