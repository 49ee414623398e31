/*
 * Boots through libvirt: see boot.h. The only file that includes libvirt.
 */
#define G_LOG_DOMAIN "engine"

#include "autoconfig.h"

#include <stdlib.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "engine/boot.h"

/* libvirt prints every error to stderr unless told otherwise. */
static void quiet(void *data, virErrorPtr err)
{
}

static void boot_global_init(void)
{
	static gsize once;

	if (g_once_init_enter(&once)) {
		virInitialize();
		virSetErrorFunc(NULL, quiet);
		g_once_init_leave(&once, 1);
	}
}

static char *last_error(void)
{
	virErrorPtr e = virGetLastError();

	return g_strdup(e && e->message ? e->message : "unknown libvirt error");
}

void boot_outcome_clear(struct boot_outcome *out)
{
	g_free(out->infra_reason);
	memset(out, 0, sizeof(*out));
}

char *boot_domain_xml(const char *name, const struct boot_request *req)
{
	g_autofree char *ename = g_markup_escape_text(name, -1);
	g_autofree char *kernel = g_markup_escape_text(req->kernel, -1);
	g_autofree char *initrd = req->initrd ? g_markup_escape_text(req->initrd, -1) : NULL;
	g_autofree char *log = g_markup_escape_text(req->console_log, -1);
	g_autofree char *cmdline = g_markup_printf_escaped(
		"console=ttyS0 panic=-1 oops=panic softlockup_panic=1 hung_task_panic=0 "
		"printk.time=1 %s", req->cmdline ? req->cmdline : "");
	GString *x = g_string_new(NULL);

	g_string_append_printf(x, "<domain type='%s'>\n", req->kvm ? "kvm" : "qemu");
	g_string_append_printf(x, "  <name>%s</name>\n", ename);
	g_string_append_printf(x, "  <memory unit='MiB'>%u</memory>\n",
			       req->memory_mb ? req->memory_mb : 256);
	g_string_append_printf(x, "  <vcpu>%u</vcpu>\n", req->vcpus ? req->vcpus : 1);
	g_string_append(x, "  <os>\n    <type arch='x86_64' machine='pc'>hvm</type>\n");
	g_string_append_printf(x, "    <kernel>%s</kernel>\n", kernel);
	if (initrd)
		g_string_append_printf(x, "    <initrd>%s</initrd>\n", initrd);
	g_string_append_printf(x, "    <cmdline>%s</cmdline>\n  </os>\n", cmdline);
	g_string_append(x, "  <features><acpi/></features>\n");
	if (!req->kvm)
		g_string_append(x, "  <cpu mode='custom' match='exact'><model>qemu64</model></cpu>\n");
	g_string_append(x, "  <on_poweroff>destroy</on_poweroff>\n"
			   "  <on_reboot>destroy</on_reboot>\n"
			   "  <on_crash>destroy</on_crash>\n"
			   "  <devices>\n");
	g_string_append_printf(x, "    <serial type='file'><source path='%s'/>"
				  "<target port='0'/></serial>\n", log);
	g_string_append(x, "    <memballoon model='none'/>\n"
			   "  </devices>\n</domain>\n");
	return g_string_free(x, FALSE);
}

static char *domain_name(void)
{
	static gint counter;

	return g_strdup_printf(BOOT_DOMAIN_PREFIX "%d-%d-%" G_GINT64_FORMAT, (int)getpid(),
			       g_atomic_int_add(&counter, 1), g_get_real_time() / 1000);
}

static void infra(struct boot_outcome *out, const char *what)
{
	g_autofree char *why = last_error();

	out->infra = true;
	out->infra_reason = g_strdup_printf("%s: %s", what, why);
}

bool boot_run(struct boot_outcome *out, const char *uri, const struct boot_request *req,
	      GError **error)
{
	g_autofree char *name = domain_name();
	g_autofree char *xml = NULL;
	virConnectPtr conn = NULL;
	virDomainPtr dom = NULL;
	gint64 start = g_get_monotonic_time();

	memset(out, 0, sizeof(*out));
	if (!g_file_test(req->kernel, G_FILE_TEST_IS_REGULAR)) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_NOT_FOUND, "no kernel image at %s",
			    req->kernel);
		return false;
	}
	boot_global_init();
	xml = boot_domain_xml(name, req);
	conn = virConnectOpen(uri);
	if (!conn) {
		infra(out, uri);
		goto done;
	}
	dom = virDomainCreateXML(conn, xml, VIR_DOMAIN_NONE);
	if (!dom) {
		infra(out, "starting the domain");
		goto done;
	}
	for (;;) {
		int active = virDomainIsActive(dom);

		if (active == 0)
			break;
		if (active < 0) {
			virErrorPtr e = virGetLastError();

			/* A transient domain that ended is gone: that is the end. */
			if (e && e->code == VIR_ERR_NO_DOMAIN)
				break;
			infra(out, "watching the domain");
			break;
		}
		if (req->timeout_s &&
		    g_get_monotonic_time() - start > (gint64)req->timeout_s * G_USEC_PER_SEC) {
			out->timed_out = true;
			if (virDomainDestroy(dom) < 0 && virDomainIsActive(dom) == 1)
				infra(out, "destroying the domain after the timeout");
			break;
		}
		g_usleep(100000);
	}
done:
	out->seconds = (double)(g_get_monotonic_time() - start) / G_USEC_PER_SEC;
	if (dom) {
		/* Whatever happened, no domain outlives its boot. */
		if (virDomainIsActive(dom) == 1)
			virDomainDestroy(dom);
		virDomainFree(dom);
	}
	if (conn)
		virConnectClose(conn);
	return true;
}

/* Whether the process that named @name (zeroday-PID-...) is gone. */
static bool orphaned(const char *name)
{
	const char *p = name + strlen(BOOT_DOMAIN_PREFIX);
	char *end;
	gint64 pid = g_ascii_strtoll(p, &end, 10);

	if (end == p || *end != '-' || pid <= 0)
		return true;
	return kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

int boot_reap(const char *uri, bool all, GError **error)
{
	virConnectPtr conn;
	virDomainPtr *doms = NULL;
	int n, reaped = 0;

	boot_global_init();
	conn = virConnectOpen(uri);
	if (!conn) {
		g_autofree char *why = last_error();

		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s: %s", uri, why);
		return -1;
	}
	n = virConnectListAllDomains(conn, &doms, VIR_CONNECT_LIST_DOMAINS_ACTIVE);
	for (int i = 0; i < n; i++) {
		const char *name = virDomainGetName(doms[i]);

		if (name && g_str_has_prefix(name, BOOT_DOMAIN_PREFIX) && (all || orphaned(name)) &&
		    virDomainDestroy(doms[i]) == 0) {
			g_message("reaped orphaned domain %s", name);
			reaped++;
		}
		virDomainFree(doms[i]);
	}
	free(doms);
	virConnectClose(conn);
	if (n < 0) {
		g_autofree char *why = last_error();

		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s: %s", uri, why);
		return -1;
	}
	return reaped;
}
