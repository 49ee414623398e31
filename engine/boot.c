/*
 * Boots through libvirt: see boot.h. The only file that includes libvirt.
 *
 * Everything a host needs travels over the libvirt connection, so a host
 * that shares no file system with zeroday works like the local one, and
 * qemu:///system takes the same path: QEMU never opens a file of
 * zeroday's.
 *  - The kernel and initrd are volumes of the dir pool BOOT_POOL_NAME,
 *    named "zeroday-SHA256" by content and uploaded with
 *    virStorageVolUpload(). A volume counts only once its marker volume
 *    "zeroday-SHA256.ok" exists, which its uploader creates after the
 *    last byte: a concurrent or interrupted upload is never booted.
 *  - The serial console is a pty on the host, read through a console
 *    stream (virDomainOpenConsole()) attached while the domain is still
 *    paused.
 * Non-blocking streams need libvirt's event loop: one thread runs it for
 * the process.
 */
#define G_LOG_DOMAIN "engine"

#include "autoconfig.h"

#include <stdint.h>
#include <stdlib.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "engine/boot.h"

#define VOLUME_PREFIX "zeroday-"
#define VOLUME_MARK ".ok"
/* A boot's scratch disk: its domain's name and this. */
#define VOLUME_SCRATCH ".scratch"

/*
 * Volume clean-up policy (boot_reap): a complete volume is removed once
 * it went unused for VOLUME_UNUSED_S, "used" meaning the later of its
 * upload (mtime) and its last read by QEMU (atime, which relatime keeps
 * to within a day, hence more than a day); a volume without its marker,
 * an upload that never finished, after VOLUME_PARTIAL_S (libvirt refuses
 * to delete one that an upload still holds).
 */
#define VOLUME_UNUSED_S (72 * 3600)
#define VOLUME_PARTIAL_S 3600

/* How long to wait for another client's upload of the same content. */
#define UPLOAD_WAIT_S 300
/* After this long without its marker, a volume may be an abandoned upload. */
#define UPLOAD_STALE_S 30

/* How long the console may still deliver bytes after the guest ended. */
#define DRAIN_GRACE_US (2 * G_USEC_PER_SEC)

/* libvirt prints every error to stderr unless told otherwise. */
static void quiet(void *data, virErrorPtr err)
{
}

static gpointer event_loop(gpointer data)
{
	for (;;) {
		if (virEventRunDefaultImpl() < 0)
			g_usleep(G_USEC_PER_SEC / 10);
	}
	return NULL;
}

static void boot_global_init(void)
{
	static gsize once;

	if (g_once_init_enter(&once)) {
		virInitialize();
		virSetErrorFunc(NULL, quiet);
		/* Before the first connection: the client registers its socket then. */
		if (virEventRegisterDefaultImpl() < 0)
			g_warning("libvirt event loop: cannot register");
		else
			g_thread_unref(g_thread_new("libvirt-events", event_loop, NULL));
		g_once_init_leave(&once, 1);
	}
}

/*
 * Opens @uri with keepalive where the driver has it (remote ones), so a
 * host that stops answering fails a call within about 30 s instead of
 * hanging an upload or a console forever.
 */
static virConnectPtr connect_open(const char *uri)
{
	virConnectPtr conn;

	boot_global_init();
	conn = virConnectOpen(uri);
	if (conn)
		virConnectSetKeepAlive(conn, 5, 6);
	return conn;
}

static char *last_error(void)
{
	virErrorPtr e = virGetLastError();

	return g_strdup(e && e->message ? e->message : "unknown libvirt error");
}

static int last_error_code(void)
{
	virErrorPtr e = virGetLastError();

	return e ? e->code : VIR_ERR_OK;
}

/*
 * Reads a capabilities document: each <guest> block names its <arch
 * name='...'> and one <domain type='...'/> per accelerator.
 */
static enum boot_support support_of(const char *caps, const char *guest)
{
	g_autofree char *arch = g_strdup_printf("<arch name='%s'>", guest);
	enum boot_support best = BOOT_SUPPORT_NONE;
	const char *p = caps;

	while ((p = strstr(p, "<guest>"))) {
		const char *end = strstr(p, "</guest>");
		g_autofree char *block = end ? g_strndup(p, end - p) : g_strdup(p);

		p = end ? end : p + strlen(p);
		if (!strstr(block, "<os_type>hvm</os_type>") || !strstr(block, arch))
			continue;
		if (strstr(block, "<domain type='kvm'"))
			best = BOOT_SUPPORT_KVM;
		else if (strstr(block, "<domain type='qemu'") && best == BOOT_SUPPORT_NONE)
			best = BOOT_SUPPORT_TCG;
	}
	return best;
}

bool boot_host_support(const char *uri, const struct boot_arch *a, enum boot_support *out,
		       GError **error)
{
	virConnectPtr conn = connect_open(uri);
	char *caps;

	*out = BOOT_SUPPORT_NONE;
	if (!conn) {
		g_autofree char *why = last_error();

		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s: %s", uri, why);
		return false;
	}
	caps = virConnectGetCapabilities(conn);
	if (!caps) {
		g_autofree char *why = last_error();

		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s: capabilities: %s", uri,
			    why);
		virConnectClose(conn);
		return false;
	}
	*out = support_of(caps, a->guest);
	free(caps);
	virConnectClose(conn);
	return true;
}

void boot_outcome_clear(struct boot_outcome *out)
{
	g_free(out->infra_reason);
	memset(out, 0, sizeof(*out));
}

char *boot_host_id(const char *state_dir)
{
	g_autoptr(GChecksum) sum = g_checksum_new(G_CHECKSUM_SHA256);
	g_autofree char *machine = NULL;
	g_autofree char *canon = NULL;

	if (!g_file_get_contents("/etc/machine-id", &machine, NULL, NULL) &&
	    !g_file_get_contents("/var/lib/dbus/machine-id", &machine, NULL, NULL))
		machine = g_strdup(g_get_host_name());
	g_strstrip(machine);
	if (state_dir) {
		char *real = realpath(state_dir, NULL);

		/* realpath() allocates with malloc: copied into GLib's. */
		canon = real ? g_strdup(real) : g_canonicalize_filename(state_dir, NULL);
		free(real);
	}
	g_checksum_update(sum, (const guchar *)"zeroday host id\n", -1);
	g_checksum_update(sum, (const guchar *)machine, -1);
	g_checksum_update(sum, (const guchar *)"\n", 1);
	if (canon)
		g_checksum_update(sum, (const guchar *)canon, -1);
	return g_strndup(g_checksum_get_string(sum), 12);
}

static const struct boot_arch boot_arches[] = {
	/* x86's 8250 console registers early, in console_init(). */
	{ "x86_64", "x86_64", "pc", "qemu64", "ttyS0", NULL, true, "amd64",
	  "qemu-system-x86" },
	{ "x86", "x86_64", "pc", "qemu64", "ttyS0", NULL, true, "amd64",
	  "qemu-system-x86" },
	{ "i386", "x86_64", "pc", "qemu64", "ttyS0", NULL, true, "i386",
	  "qemu-system-x86" },
	/* The Arm and RISC-V virt machines give the kernel a device tree. */
	{ "arm64", "aarch64", "virt", "cortex-a57", "ttyAMA0", "earlycon", false, "arm64",
	  "qemu-system-arm" },
	{ "riscv", "riscv64", "virt", NULL, "ttyS0", "earlycon", false, "riscv64",
	  "qemu-system-misc" },
};

const struct boot_arch *boot_arch_find(const char *arch)
{
	for (size_t i = 0; arch && i < G_N_ELEMENTS(boot_arches); i++) {
		if (strcmp(boot_arches[i].arch, arch) == 0)
			return &boot_arches[i];
	}
	return NULL;
}

bool boot_arch_native(const struct boot_arch *a)
{
	static const struct { const char *machine, *userland; } natives[] = {
		{ "x86_64", "amd64" }, { "aarch64", "arm64" }, { "riscv64", "riscv64" },
		{ "i686", "i386" },
	};
	struct utsname u;

	if (uname(&u) < 0)
		return false;
	for (size_t i = 0; i < G_N_ELEMENTS(natives); i++) {
		if (strcmp(natives[i].machine, u.machine) == 0)
			return strcmp(natives[i].userland, a->userland) == 0;
	}
	return false;
}

const char *boot_arch_of_image(const char *path)
{
	unsigned char head[0x206];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return NULL;
	n = read(fd, head, sizeof(head));
	close(fd);
	/* Documentation/arm64/booting.rst and riscv/boot-image-header.rst: the magic at 56. */
	if (n >= 60 && memcmp(head + 56, "ARM\x64", 4) == 0)
		return "arm64";
	if (n >= 60 && memcmp(head + 56, "RSC\x05", 4) == 0)
		return "riscv";
	/* Documentation/x86/boot.rst: "HdrS" at 0x202. */
	if (n >= 0x206 && memcmp(head + 0x202, "HdrS", 4) == 0)
		return "x86_64";
	return NULL;
}

/* The request's arch; x86_64 when it names none or one zeroday does not boot. */
static const struct boot_arch *arch_or_default(const char *arch)
{
	const struct boot_arch *a = boot_arch_find(arch);

	return a ? a : &boot_arches[0];
}

char *boot_reproduce_command(const char *arch, const char *builddir, const char *image,
			     const char *initrd, const struct boot_reproduce_extra *extra)
{
	const struct boot_arch *a = arch_or_default(arch);
	const struct boot_reproduce_extra none = { 0 };
	g_autofree char *disk = NULL;

	if (!extra)
		extra = &none;
	/* The scratch disk, as a sparse file of the same size. */
	if (extra->scratch_mb)
		disk = g_strdup_printf("truncate -s %uM scratch.img && ", extra->scratch_mb);
	return g_strdup_printf("%sqemu-system-%s -machine %s%s%s -m %u -nographic "
			       "-no-reboot -kernel %s/%s%s%s%s -append 'console=%s%s%s "
			       BOOT_CMDLINE_ARGS "%s%s zeroday.seed=%u'",
			       disk ? disk : "", a->guest, a->machine, a->tcg_cpu ? " -cpu " : "",
			       a->tcg_cpu ? a->tcg_cpu : "", extra->memory_mb ? extra->memory_mb : 256,
			       builddir, image, initrd ? " -initrd " : "", initrd ? initrd : "",
			       disk ? " -drive file=scratch.img,format=raw,if=virtio" : "",
			       a->console, a->early ? " " : "", a->early ? a->early : "",
			       extra->cmdline ? " " : "", extra->cmdline ? extra->cmdline : "",
			       extra->seed ? extra->seed : 1);
}

char *boot_scratch_volume(const char *name)
{
	return g_strconcat(name, VOLUME_SCRATCH, NULL);
}

char *boot_domain_xml(const char *name, const struct boot_request *req, const char *kernel_path,
		      const char *initrd_path)
{
	const struct boot_arch *a = arch_or_default(req->arch);
	g_autofree char *ename = g_markup_escape_text(name, -1);
	g_autofree char *kernel = g_markup_escape_text(kernel_path, -1);
	g_autofree char *initrd = initrd_path ? g_markup_escape_text(initrd_path, -1) : NULL;
	/*
	 * panic=1, not -1: the guest ends when it reboots, and QEMU goes at
	 * once; what it wrote last to the pty (the panic itself) is lost if
	 * the console stream has not read it yet. A second's pause first.
	 */
	g_autofree char *cmdline = g_markup_printf_escaped(
		"console=%s%s%s " BOOT_CMDLINE_ARGS " %s", a->console, a->early ? " " : "",
		a->early ? a->early : "", req->cmdline ? req->cmdline : "");
	GString *x = g_string_new(NULL);

	g_string_append_printf(x, "<domain type='%s'>\n", req->kvm ? "kvm" : "qemu");
	g_string_append_printf(x, "  <name>%s</name>\n", ename);
	g_string_append_printf(x, "  <memory unit='MiB'>%u</memory>\n",
			       req->memory_mb ? req->memory_mb : 256);
	g_string_append_printf(x, "  <vcpu>%u</vcpu>\n", req->vcpus ? req->vcpus : 1);
	g_string_append_printf(x, "  <os>\n    <type arch='%s' machine='%s'>hvm</type>\n",
			       a->guest, a->machine);
	g_string_append_printf(x, "    <kernel>%s</kernel>\n", kernel);
	if (initrd)
		g_string_append_printf(x, "    <initrd>%s</initrd>\n", initrd);
	g_string_append_printf(x, "    <cmdline>%s</cmdline>\n  </os>\n", cmdline);
	if (a->acpi)
		g_string_append(x, "  <features><acpi/></features>\n");
	if (!req->kvm && a->tcg_cpu)
		g_string_append_printf(x, "  <cpu mode='custom' match='exact'><model>%s</model></cpu>\n",
				       a->tcg_cpu);
	else if (req->kvm && strcmp(a->guest, "x86_64") != 0)
		g_string_append(x, "  <cpu mode='host-passthrough'/>\n");
	/* The console is a pty on the host, read back through a stream. */
	g_string_append(x, "  <on_poweroff>destroy</on_poweroff>\n"
			   "  <on_reboot>destroy</on_reboot>\n"
			   "  <on_crash>destroy</on_crash>\n"
			   "  <devices>\n"
			   "    <serial type='pty'><target port='0'/></serial>\n"
			   "    <console type='pty'><target type='serial' port='0'/></console>\n"
			   "    <memballoon model='none'/>\n");
	if (req->scratch_mb) {
		g_autofree char *vol = boot_scratch_volume(name);
		g_autofree char *evol = g_markup_escape_text(vol, -1);

		/* A pool's volume: libvirt gives QEMU its file and labels it for the boot. */
		g_string_append_printf(x, "    <disk type='volume' device='disk'>"
					  "<driver name='qemu' type='raw' cache='unsafe'/>"
					  "<source pool='%s' volume='%s'/>"
					  "<target dev='vda' bus='virtio'/></disk>\n",
				       BOOT_POOL_NAME, evol);
	}
	g_string_append(x, "  </devices>\n</domain>\n");
	return g_string_free(x, FALSE);
}

static char *domain_name(const char *host_id)
{
	static gint counter;

	return g_strdup_printf(BOOT_DOMAIN_PREFIX "%d-%s-%d-%" G_GINT64_FORMAT, (int)getpid(),
			       host_id, g_atomic_int_add(&counter, 1), g_get_real_time() / 1000);
}

/* Sets the outcome's infra reason to "@what: @why" (takes @why). */
static void infra_take(struct boot_outcome *out, const char *what, char *why)
{
	out->infra = true;
	g_free(out->infra_reason);
	out->infra_reason = g_strdup_printf("%s: %s", what, why);
	g_free(why);
}

static void infra(struct boot_outcome *out, const char *what)
{
	infra_take(out, what, last_error());
}

/* The pool zeroday owns on the host, defined and started when missing. */
static virStoragePoolPtr pool_ensure(virConnectPtr conn, char **why)
{
	static const char xml[] =
		"<pool type='dir'><name>" BOOT_POOL_NAME "</name>"
		"<target><path>" BOOT_POOL_PATH "</path>"
		"<permissions><mode>0755</mode></permissions></target></pool>";
	virStoragePoolPtr pool = virStoragePoolLookupByName(conn, BOOT_POOL_NAME);

	if (!pool) {
		pool = virStoragePoolDefineXML(conn, xml, 0);
		/* Another client may have defined it in between. */
		if (!pool)
			pool = virStoragePoolLookupByName(conn, BOOT_POOL_NAME);
		if (!pool) {
			*why = g_strdup_printf("defining storage pool %s: %s", BOOT_POOL_NAME,
					       last_error());
			return NULL;
		}
		virStoragePoolSetAutostart(pool, 1);
	}
	if (virStoragePoolIsActive(pool) != 1 &&
	    virStoragePoolCreate(pool, VIR_STORAGE_POOL_CREATE_WITH_BUILD) < 0 &&
	    virStoragePoolIsActive(pool) != 1) {
		*why = g_strdup_printf("starting storage pool %s: %s", BOOT_POOL_NAME, last_error());
		virStoragePoolFree(pool);
		return NULL;
	}
	return pool;
}

/*
 * The hashes file_sha256() computed, by file identity (device, inode,
 * size, modification time): a kernel booted again, or an initramfs linked
 * from the kept one, is not read again. For the process's life.
 */
static GMutex known_lock;
static GHashTable *known_sums; /* "DEV:INO:SIZE:MTIME" -> hex SHA-256 */

static char *identity_of(const struct stat *st)
{
	return g_strdup_printf("%ju:%ju:%jd:%jd.%09ld", (uintmax_t)st->st_dev,
			       (uintmax_t)st->st_ino, (intmax_t)st->st_size,
			       (intmax_t)st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
}

/* The lowercase hex SHA-256 of the file at @path (caller frees), or NULL with *@why. */
static char *file_sha256(const char *path, guint64 *size, char **why)
{
	g_autoptr(GChecksum) sum = g_checksum_new(G_CHECKSUM_SHA256);
	g_autofree char *identity = NULL;
	guchar buf[65536];
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*size = 0;
	if (fd < 0) {
		*why = g_strdup_printf("%s: %s", path, g_strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) == 0) {
		const char *known;

		identity = identity_of(&st);
		g_mutex_lock(&known_lock);
		known = known_sums ? g_hash_table_lookup(known_sums, identity) : NULL;
		if (known) {
			char *copy = g_strdup(known);

			g_mutex_unlock(&known_lock);
			close(fd);
			*size = (guint64)st.st_size;
			return copy;
		}
		g_mutex_unlock(&known_lock);
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		g_checksum_update(sum, buf, n);
		*size += (guint64)n;
	}
	if (n < 0) {
		*why = g_strdup_printf("%s: %s", path, g_strerror(errno));
		close(fd);
		return NULL;
	}
	close(fd);
	/* Kept only when what was read is what fstat() saw: a file still being written is not. */
	if (identity && *size == (guint64)st.st_size) {
		g_mutex_lock(&known_lock);
		if (!known_sums)
			known_sums = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
		g_hash_table_replace(known_sums, g_steal_pointer(&identity),
				     g_strdup(g_checksum_get_string(sum)));
		g_mutex_unlock(&known_lock);
	}
	return g_strdup(g_checksum_get_string(sum));
}

static virStorageVolPtr volume_create(virStoragePoolPtr pool, const char *name, guint64 size)
{
	g_autofree char *xml = g_strdup_printf(
		"<volume type='file'><name>%s</name>"
		"<capacity unit='bytes'>%" G_GUINT64_FORMAT "</capacity>"
		"<allocation unit='bytes'>0</allocation>"
		"<target><format type='raw'/><permissions><mode>0644</mode></permissions>"
		"</target></volume>", name, size);

	return virStorageVolCreateXML(pool, xml, 0);
}

static int send_file(virStreamPtr st, char *data, size_t nbytes, void *opaque)
{
	int fd = *(int *)opaque;
	ssize_t n;

	do
		n = read(fd, data, nbytes);
	while (n < 0 && errno == EINTR);
	return (int)n;
}

/* Writes the file at @path into the new volume @vol of @size bytes. */
static bool volume_upload(virConnectPtr conn, virStorageVolPtr vol, const char *path,
			  guint64 size, char **why)
{
	virStreamPtr st = virStreamNew(conn, 0);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool ok = false;

	if (fd < 0) {
		*why = g_strdup_printf("%s: %s", path, g_strerror(errno));
		goto out;
	}
	if (!st || virStorageVolUpload(vol, st, 0, size, 0) < 0) {
		*why = g_strdup_printf("uploading %s: %s", path, last_error());
		goto out;
	}
	if (virStreamSendAll(st, send_file, &fd) < 0) {
		*why = g_strdup_printf("uploading %s: %s", path, last_error());
		virStreamAbort(st);
		goto out;
	}
	if (virStreamFinish(st) < 0) {
		*why = g_strdup_printf("uploading %s: %s", path, last_error());
		goto out;
	}
	ok = true;
out:
	if (fd >= 0)
		close(fd);
	if (st)
		virStreamFree(st);
	return ok;
}

/* Whether the pool has a volume named @name. */
static bool volume_exists(virStoragePoolPtr pool, const char *name)
{
	virStorageVolPtr v = virStorageVolLookupByName(pool, name);

	if (!v)
		return false;
	virStorageVolFree(v);
	return true;
}

/*
 * Returns the host's path of a complete volume holding the bytes of the
 * local file @path, uploading it unless one is there (caller frees), or
 * NULL with *@why.
 */
static char *volume_ensure(virConnectPtr conn, virStoragePoolPtr pool, const char *path,
			   char **why)
{
	guint64 size;
	g_autofree char *hash = file_sha256(path, &size, why);
	g_autofree char *name = NULL;
	g_autofree char *mark = NULL;
	gint64 start = g_get_monotonic_time();

	if (!hash)
		return NULL;
	name = g_strconcat(VOLUME_PREFIX, hash, NULL);
	mark = g_strconcat(name, VOLUME_MARK, NULL);
	for (;;) {
		virStorageVolPtr vol = NULL;
		char *host_path;
		gint64 waited;

		if (volume_exists(pool, mark))
			vol = virStorageVolLookupByName(pool, name);
		if (!vol) {
			vol = volume_create(pool, name, size);
			if (vol) {
				virStorageVolPtr m = NULL;

				if (!volume_upload(conn, vol, path, size, why)) {
					virStorageVolDelete(vol, 0);
					virStorageVolFree(vol);
					return NULL;
				}
				/* The last byte is in: from now on others may boot it. */
				m = volume_create(pool, mark, 0);
				if (!m && last_error_code() != VIR_ERR_STORAGE_VOL_EXIST) {
					*why = g_strdup_printf("creating volume %s: %s", mark,
							       last_error());
					virStorageVolFree(vol);
					return NULL;
				}
				if (m)
					virStorageVolFree(m);
				g_debug("uploaded %s as volume %s", path, name);
			} else if (last_error_code() != VIR_ERR_STORAGE_VOL_EXIST) {
				*why = g_strdup_printf("creating volume %s: %s", name, last_error());
				return NULL;
			}
		}
		if (vol) {
			host_path = virStorageVolGetPath(vol);
			if (!host_path)
				*why = g_strdup_printf("volume %s: %s", name, last_error());
			virStorageVolFree(vol);
			if (!host_path)
				return NULL;
			/* Copied out of libvirt's allocator. */
			{
				char *copy = g_strdup(host_path);

				free(host_path);
				return copy;
			}
		}
		/* Someone else's upload of the same bytes, or an abandoned one. */
		waited = (g_get_monotonic_time() - start) / G_USEC_PER_SEC;
		if (waited >= UPLOAD_WAIT_S) {
			*why = g_strdup_printf("volume %s: still incomplete after %d s", name,
					       UPLOAD_WAIT_S);
			return NULL;
		}
		if (waited >= UPLOAD_STALE_S && !volume_exists(pool, mark)) {
			/* libvirt refuses while an upload still holds the volume. */
			vol = virStorageVolLookupByName(pool, name);
			if (vol) {
				if (virStorageVolDelete(vol, 0) == 0)
					g_message("removed abandoned upload %s", name);
				virStorageVolFree(vol);
			}
		}
		g_usleep(G_USEC_PER_SEC / 2);
	}
}

/*
 * The console: bytes from the stream go to the local log, up to
 * BOOT_CONSOLE_MAX; the rest is counted.
 */
struct console {
	virStreamPtr st;
	int fd;
	guint64 bytes;
	bool eof;
	bool broken;  /* the stream failed */
	char *why;
	int write_errno; /* the first failed write to the log (a full disk), or 0 */
};

/* Reads whatever the stream has now. Returns whether it delivered bytes. */
static bool console_drain(struct console *c)
{
	char buf[65536];
	bool got = false;

	while (!c->eof && !c->broken) {
		int n = virStreamRecv(c->st, buf, sizeof(buf));

		if (n == -2)
			break;
		if (n == 0) {
			c->eof = true;
			break;
		}
		if (n < 0) {
			c->broken = true;
			c->why = last_error();
			break;
		}
		got = true;
		if (c->bytes < BOOT_CONSOLE_MAX) {
			size_t keep = MIN((guint64)n, BOOT_CONSOLE_MAX - c->bytes);

			for (size_t off = 0; off < keep;) {
				ssize_t w = write(c->fd, buf + off, keep - off);

				if (w < 0 && errno == EINTR)
					continue;
				if (w <= 0) {
					if (!c->write_errno)
						c->write_errno = w < 0 ? errno : ENOSPC;
					break;
				}
				off += (size_t)w;
			}
		}
		c->bytes += (guint64)n;
	}
	return got;
}

/* After the guest ended: the bytes still in flight, until EOF or a quiet spell. */
static void console_finish(struct console *c)
{
	gint64 quiet_since = g_get_monotonic_time();
	gint64 stop = quiet_since + 5 * DRAIN_GRACE_US;

	while (!c->eof && !c->broken && g_get_monotonic_time() < stop) {
		if (console_drain(c))
			quiet_since = g_get_monotonic_time();
		else if (g_get_monotonic_time() - quiet_since > DRAIN_GRACE_US)
			break;
		else
			g_usleep(20000);
	}
	if (c->bytes > BOOT_CONSOLE_MAX) {
		g_autofree char *note = g_strdup_printf(
			"\n[zeroday: console truncated: %" G_GUINT64_FORMAT " bytes, %u kept]\n",
			c->bytes, BOOT_CONSOLE_MAX);

		if (write(c->fd, note, strlen(note)) < 0)
			g_message("console log: %s", g_strerror(errno));
	}
}

bool boot_run(struct boot_outcome *out, const char *uri, const struct boot_request *req,
	      GError **error)
{
	g_autofree char *own_id = req->host_id ? NULL : boot_host_id(NULL);
	g_autofree char *name = domain_name(req->host_id ? req->host_id : own_id);
	g_autofree char *xml = NULL;
	g_autofree char *kernel_path = NULL;
	g_autofree char *initrd_path = NULL;
	char *why = NULL;
	virConnectPtr conn = NULL;
	virStoragePoolPtr pool = NULL;
	virDomainPtr dom = NULL;
	virStorageVolPtr scratch = NULL;
	struct console con = { .fd = -1 };
	gint64 start = 0;
	/* Where the time went, for G_MESSAGES_DEBUG=engine: set as each step ends. */
	gint64 t_begin = g_get_monotonic_time(), t_stored = 0, t_started = 0, t_ended = 0;
	gint64 t_drained = 0;
	bool gone = false; /* QEMU ended the console: libvirt is stopping the domain */

	memset(out, 0, sizeof(*out));
	if (!g_file_test(req->kernel, G_FILE_TEST_IS_REGULAR)) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_NOT_FOUND, "no kernel image at %s",
			    req->kernel);
		return false;
	}
	con.fd = open(req->console_log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
		      0644);
	if (con.fd < 0) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s: %s", req->console_log,
			    g_strerror(errno));
		return false;
	}
	conn = connect_open(uri);
	if (!conn) {
		infra(out, uri);
		goto done;
	}
	pool = pool_ensure(conn, &why);
	if (pool)
		kernel_path = volume_ensure(conn, pool, req->kernel, &why);
	if (kernel_path && req->initrd)
		initrd_path = volume_ensure(conn, pool, req->initrd, &why);
	if (!kernel_path || (req->initrd && !initrd_path)) {
		infra_take(out, "storing the boot files on the host", why);
		goto done;
	}
	t_stored = g_get_monotonic_time();
	if (req->scratch_mb) {
		g_autofree char *vol = boot_scratch_volume(name);

		/* Sparse: allocation 0, so the host spends only what the guest writes. */
		scratch = volume_create(pool, vol, (guint64)req->scratch_mb << 20);
		if (!scratch) {
			infra(out, "creating the scratch disk");
			goto done;
		}
	}
	xml = boot_domain_xml(name, req, kernel_path, initrd_path);
	dom = virDomainCreateXML(conn, xml, VIR_DOMAIN_START_PAUSED);
	if (!dom) {
		infra(out, "starting the domain");
		goto done;
	}
	con.st = virStreamNew(conn, VIR_STREAM_NONBLOCK);
	if (!con.st || virDomainOpenConsole(dom, NULL, con.st, VIR_DOMAIN_CONSOLE_FORCE) < 0) {
		infra(out, "attaching the console");
		goto done;
	}
	if (virDomainResume(dom) < 0) {
		infra(out, "resuming the domain");
		goto done;
	}
	start = t_started = g_get_monotonic_time();
	for (;;) {
		int active;

		console_drain(&con);
		/*
		 * The console's end: QEMU closed the pty, which it does only as
		 * it exits (the guest rebooted, powered off or crashed it). The
		 * boot is over; libvirt stops the domain by itself, only later
		 * where the host's init reaps the process late (seconds, in a
		 * container), and that wait is no part of the boot.
		 */
		if (con.eof && !req->scratch_mb) {
			/* (A scratch disk goes after its domain: that boot waits for it.) */
			gone = true;
			break;
		}
		active = virDomainIsActive(dom);
		if (active == 0)
			break;
		if (active < 0) {
			/* A transient domain that ended is gone: that is the end. */
			if (last_error_code() == VIR_ERR_NO_DOMAIN)
				break;
			infra(out, "watching the domain");
			break;
		}
		if (con.broken) {
			/* The guest may have just ended: it decides. */
			if (virDomainIsActive(dom) == 1)
				infra_take(out, "reading the console", g_strdup(con.why));
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
	t_ended = g_get_monotonic_time();
	console_finish(&con);
	t_drained = g_get_monotonic_time();
done:
	out->seconds = start ? (double)(g_get_monotonic_time() - start) / G_USEC_PER_SEC : 0;
	if (dom) {
		/*
		 * Whatever happened, no domain outlives its boot: one whose QEMU
		 * is gone is libvirt's to stop, as it does when QEMU exits.
		 */
		if (!gone && virDomainIsActive(dom) == 1)
			virDomainDestroy(dom);
		virDomainFree(dom);
	}
	if (scratch) {
		/* The domain is gone: its disk goes too (else boot_reap removes it). */
		if (virStorageVolDelete(scratch, 0) < 0) {
			g_autofree char *e = last_error();

			g_message("cannot remove the scratch disk of %s: %s", name, e);
		}
		virStorageVolFree(scratch);
	}
	if (con.st) {
		if (con.eof)
			virStreamFinish(con.st);
		else
			virStreamAbort(con.st);
		virStreamFree(con.st);
	}
	g_free(con.why);
	if (con.fd >= 0 && close(con.fd) < 0 && !con.write_errno)
		con.write_errno = errno;
	/* A console log that lost bytes is no verdict on the kernel. */
	if (con.write_errno && !out->infra)
		infra_take(out, req->console_log, g_strdup(g_strerror(con.write_errno)));
	if (pool)
		virStoragePoolFree(pool);
	if (conn)
		virConnectClose(conn);
	if (t_drained)
		g_debug("%s: files stored in %.2f s, domain started in %.2f s, ran %.2f s, "
			"console drained in %.2f s, torn down in %.2f s", name,
			(double)(t_stored - t_begin) / G_USEC_PER_SEC,
			(double)(t_started - t_stored) / G_USEC_PER_SEC,
			(double)(t_ended - t_started) / G_USEC_PER_SEC,
			(double)(t_drained - t_ended) / G_USEC_PER_SEC,
			(double)(g_get_monotonic_time() - t_drained) / G_USEC_PER_SEC);
	return true;
}

/*
 * Whether @name (zeroday-PID-HOSTID-...) belongs to installation
 * @host_id and the process that named it is gone from this machine.
 * *@ours says whether it belongs to @host_id at all: a name of another
 * form (another installation's, an older zeroday's) never does.
 */
static bool orphaned(const char *name, const char *host_id, bool *ours)
{
	const char *p = name + strlen(BOOT_DOMAIN_PREFIX);
	size_t n = strlen(host_id);
	char *end;
	gint64 pid = g_ascii_strtoll(p, &end, 10);

	*ours = end != p && pid > 0 && *end == '-' && strncmp(end + 1, host_id, n) == 0 &&
		end[1 + n] == '-';
	return *ours && kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

/* Seconds since the epoch in volume XML's <@tag>SECONDS.NANOSECONDS</@tag>, or 0. */
static gint64 xml_time(const char *xml, const char *tag)
{
	g_autofree char *open = g_strdup_printf("<%s>", tag);
	const char *p = strstr(xml, open);

	return p ? g_ascii_strtoll(p + strlen(open), NULL, 10) : 0;
}

/*
 * Removes the pool's volumes unused for a while (the policy above
 * VOLUME_UNUSED_S), and the scratch disks of @host_id's boots whose
 * process is gone (with @all, every one of @host_id's).
 */
static void prune_volumes(virConnectPtr conn, const char *host_id, bool all)
{
	virStoragePoolPtr pool = virStoragePoolLookupByName(conn, BOOT_POOL_NAME);
	virStorageVolPtr *vols = NULL;
	g_autoptr(GHashTable) names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	gint64 now = g_get_real_time() / G_USEC_PER_SEC;
	int n;

	if (!pool)
		return;
	n = virStoragePoolListAllVolumes(pool, &vols, 0);
	for (int i = 0; i < n; i++) {
		const char *name = virStorageVolGetName(vols[i]);

		if (name)
			g_hash_table_add(names, g_strdup(name));
	}
	for (int i = 0; i < n; i++) {
		const char *name = virStorageVolGetName(vols[i]);
		g_autofree char *mark = NULL;
		char *xml;
		gint64 used;
		bool complete;

		if (!name || !g_str_has_prefix(name, VOLUME_PREFIX))
			continue;
		if (g_str_has_suffix(name, VOLUME_SCRATCH)) {
			g_autofree char *domain = g_strndup(name, strlen(name) -
							    strlen(VOLUME_SCRATCH));
			bool ours = false;

			/* A live boot's disk is its own business, whatever its age. */
			if ((orphaned(domain, host_id, &ours) || (all && ours)) &&
			    virStorageVolDelete(vols[i], 0) == 0)
				g_message("removed the scratch disk %s of a boot that is over", name);
			continue;
		}
		if (g_str_has_suffix(name, VOLUME_MARK)) {
			g_autofree char *data = g_strndup(name, strlen(name) - strlen(VOLUME_MARK));

			/* A marker whose data is gone marks nothing. */
			if (!g_hash_table_contains(names, data))
				virStorageVolDelete(vols[i], 0);
			continue;
		}
		mark = g_strconcat(name, VOLUME_MARK, NULL);
		complete = g_hash_table_contains(names, mark);
		xml = virStorageVolGetXMLDesc(vols[i], 0);
		if (!xml)
			continue;
		used = MAX(xml_time(xml, "atime"), xml_time(xml, "mtime"));
		free(xml);
		if (used == 0 || now - used < (complete ? VOLUME_UNUSED_S : VOLUME_PARTIAL_S))
			continue;
		if (complete) {
			/* The marker goes first: nobody starts to boot a half-deleted volume. */
			virStorageVolPtr m = virStorageVolLookupByName(pool, mark);

			if (m) {
				virStorageVolDelete(m, 0);
				virStorageVolFree(m);
			}
		}
		if (virStorageVolDelete(vols[i], 0) == 0)
			g_message("removed volume %s, unused for %" G_GINT64_FORMAT " h", name,
				  (now - used) / 3600);
	}
	for (int i = 0; i < n; i++)
		virStorageVolFree(vols[i]);
	free(vols);
	virStoragePoolFree(pool);
}

/* Destroys @host_id's orphaned domains on @conn (see boot_reap_domains()). */
static int reap_domains(virConnectPtr conn, const char *uri, const char *host_id, bool all,
			GError **error)
{
	virDomainPtr *doms = NULL;
	int n, reaped = 0;

	n = virConnectListAllDomains(conn, &doms, VIR_CONNECT_LIST_DOMAINS_ACTIVE);
	for (int i = 0; i < n; i++) {
		const char *name = virDomainGetName(doms[i]);
		bool ours = false;

		if (name && g_str_has_prefix(name, BOOT_DOMAIN_PREFIX) &&
		    (orphaned(name, host_id, &ours) || (all && ours)) &&
		    virDomainDestroy(doms[i]) == 0) {
			g_message("reaped orphaned domain %s", name);
			reaped++;
		}
		virDomainFree(doms[i]);
	}
	free(doms);
	if (n < 0) {
		g_autofree char *why = last_error();

		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s: %s", uri, why);
		return -1;
	}
	return reaped;
}

/* boot_reap() with @volumes, or boot_reap_domains() without. */
static int reap(const char *uri, const char *host_id, bool all, bool volumes, GError **error)
{
	g_autofree char *own_id = host_id ? NULL : boot_host_id(NULL);
	virConnectPtr conn;
	int reaped;

	if (!host_id)
		host_id = own_id;
	conn = connect_open(uri);
	if (!conn) {
		g_autofree char *why = last_error();

		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_FAILED, "%s: %s", uri, why);
		return -1;
	}
	reaped = reap_domains(conn, uri, host_id, all, error);
	if (reaped >= 0 && volumes)
		prune_volumes(conn, host_id, all);
	virConnectClose(conn);
	return reaped;
}

int boot_reap(const char *uri, const char *host_id, bool all, GError **error)
{
	return reap(uri, host_id, all, true, error);
}

int boot_reap_domains(const char *uri, const char *host_id, bool all, GError **error)
{
	return reap(uri, host_id, all, false, error);
}
