/*
 * The boot initramfs: see initramfs.h. The newc cpio format is written
 * here directly (struct cpio_newc_header of the kernel's
 * Documentation/driver-api/early-userspace/buffer-format.rst), compressed
 * with GIO's zlib compressor.
 */
#define G_LOG_DOMAIN "engine"

#include "autoconfig.h"

#include <string.h>
#include <sys/stat.h>

#include <gio/gio.h>

#include "engine/initramfs.h"

struct cpio {
	GByteArray *data;
	unsigned ino;
};

static void pad4(GByteArray *b)
{
	static const guint8 zero[4];

	if (b->len % 4)
		g_byte_array_append(b, zero, 4 - b->len % 4);
}

static void cpio_entry(struct cpio *c, const char *name, unsigned mode, unsigned rmajor,
		       unsigned rminor, const void *data, size_t size)
{
	char header[111];

	g_snprintf(header, sizeof(header),
		   "070701%08X%08X%08X%08X%08X%08X%08zX%08X%08X%08X%08X%08zX%08X",
		   ++c->ino, mode, 0, 0, 1, 0, size, 0, 0, rmajor, rminor, strlen(name) + 1, 0);
	g_byte_array_append(c->data, (const guint8 *)header, 110);
	g_byte_array_append(c->data, (const guint8 *)name, strlen(name) + 1);
	pad4(c->data);
	if (size) {
		g_byte_array_append(c->data, data, size);
		pad4(c->data);
	}
}

static void cpio_dir(struct cpio *c, const char *name)
{
	cpio_entry(c, name, S_IFDIR | 0755, 0, 0, NULL, 0);
}

static void cpio_file(struct cpio *c, const char *name, unsigned perm, const char *data,
		      size_t size)
{
	cpio_entry(c, name, S_IFREG | perm, 0, 0, data, size);
}

static bool valid_name(const char *name)
{
	if (!*name || name[0] == '.' || strlen(name) > 64)
		return false;
	for (const char *p = name; *p; p++) {
		if (!g_ascii_isalnum(*p) && !strchr("._-", *p))
			return false;
	}
	return true;
}

/* Payload @p's bytes (*@len of them), once its name is checked; NULL with @error set. */
static char *payload_read(const struct initramfs_payload *p, gsize *len, GError **error)
{
	char *text = NULL;

	if (!valid_name(p->name)) {
		g_set_error(error, ENGINE_ERROR, ENGINE_ERROR_INVALID, "bad payload name '%s'",
			    p->name);
		return NULL;
	}
	if (!g_file_get_contents(p->path, &text, len, error))
		return NULL;
	return text;
}

/* The init: markers, each payload under its own timeout, then reboot. */
static char *init_script(const struct initramfs_payload *payloads, size_t n)
{
	GString *s = g_string_new(
		"#!/bin/busybox sh\n"
		"/bin/busybox --install -s /bin\n"
		"export PATH=/bin:/sbin\n"
		"mkdir -p /proc /sys /dev /tmp\n"
		"mount -t proc proc /proc\n"
		"mount -t sysfs sysfs /sys\n"
		"mount -t devtmpfs devtmpfs /dev 2>/dev/null\n"
		"ZERODAY_SEED=$(sed -n 's/.*zeroday\\.seed=\\([0-9]*\\).*/\\1/p' /proc/cmdline)\n"
		"export ZERODAY_SEED\n"
		"echo ZERODAY-BOOT-START\n"
		"uname -a\n");

	for (size_t i = 0; i < n; i++) {
		g_string_append_printf(s,
			"echo 'ZERODAY-PAYLOAD-START %s'\n"
			"timeout %u /payloads/%s </dev/null\n"
			"echo \"ZERODAY-PAYLOAD-END %s rc=$?\"\n",
			payloads[i].name, payloads[i].timeout_s ? payloads[i].timeout_s : 600,
			payloads[i].name, payloads[i].name);
	}
	/*
	 * The end marker, then a second before the reboot: QEMU goes at once
	 * when the guest reboots, and the console stream must have read the
	 * marker by then.
	 */
	g_string_append(s, "echo ZERODAY-BOOT-END\nsync\nsleep 1\nreboot -f\n"
			   "echo ZERODAY-REBOOT-FAILED\nsleep 100000\n");
	return g_string_free(s, FALSE);
}

/* The directories of the archive, then its console node: both forms write them. */
static const char *const dirs[] = { "bin", "sbin", "dev", "proc", "sys", "tmp", "payloads" };

/* The heredoc delimiter of the recipe; a file with a line like it goes in base64. */
#define RECIPE_EOF "ZERODAY_EOF"

/* Whether @text (@len bytes) can stand in a quoted heredoc as it is. */
static bool heredoc_safe(const char *text, gsize len)
{
	if (!len || text[len - 1] != '\n' || memchr(text, '\0', len) ||
	    !g_utf8_validate(text, len, NULL))
		return false;
	for (const char *line = text; line < text + len; line = strchr(line, '\n') + 1) {
		if (strncmp(line, RECIPE_EOF "\n", strlen(RECIPE_EOF) + 1) == 0)
			return false;
	}
	return true;
}

/* Appends the command that writes @text (@len bytes) to "$dir/@file". */
static void recipe_file(GString *s, const char *file, const char *text, gsize len)
{
	if (heredoc_safe(text, len)) {
		g_string_append_printf(s, "cat > \"$dir/%s\" << '" RECIPE_EOF "'\n", file);
		g_string_append_len(s, text, len);
	} else {
		g_autofree char *b64 = g_base64_encode((const guchar *)text, len);

		g_string_append_printf(s, "base64 -d > \"$dir/%s\" << '" RECIPE_EOF "'\n", file);
		for (size_t at = 0, all = strlen(b64); at < all; at += 76)
			g_string_append_printf(s, "%.76s\n", b64 + at);
	}
	g_string_append(s, RECIPE_EOF "\n");
}

char *initramfs_recipe(const struct initramfs_payload *payloads, size_t n, GError **error)
{
	g_autofree char *init = init_script(payloads, n);
	g_autoptr(GString) s = g_string_new(
		"#!/bin/sh\n"
		"# The initramfs zeroday boots its kernels with: a static busybox, the\n"
		"# init below and the payloads it runs, packed by the kernel's own\n"
		"# usr/gen_init_cpio (built with the kernel), as any user:\n"
		"#\n"
		"#   sh initramfs.sh BUILD-DIR > initramfs.cpio.gz\n"
		"#\n"
		"# $BUSYBOX names the static busybox (default /bin/busybox, which\n"
		"# Debian's busybox-static installs).\n"
		"set -eu\n"
		"build=${1:?usage: sh initramfs.sh BUILD-DIR > initramfs.cpio.gz}\n"
		"busybox=${BUSYBOX:-/bin/busybox}\n"
		"if ldd \"$busybox\" > /dev/null 2>&1; then\n"
		"\techo \"initramfs.sh: $busybox is not a static busybox\" \\\n"
		"\t\t\"(Debian: apt-get install busybox-static)\" >&2\n"
		"\texit 1\n"
		"fi\n"
		"dir=$(mktemp -d)\n"
		"trap 'rm -rf \"$dir\"' EXIT\n");

	recipe_file(s, "init", init, strlen(init));
	for (size_t i = 0; i < n; i++) {
		gsize len;
		g_autofree char *text = payload_read(&payloads[i], &len, error);
		g_autofree char *file = NULL;

		if (!text)
			return NULL;
		file = g_strconcat("payload-", payloads[i].name, NULL);
		recipe_file(s, file, text, len);
	}
	g_string_append(s, "cat > \"$dir/list\" << EOF\n");
	for (size_t i = 0; i < G_N_ELEMENTS(dirs); i++)
		g_string_append_printf(s, "dir /%s 0755 0 0\n", dirs[i]);
	g_string_append(s, "nod /dev/console 0600 0 0 c 5 1\n"
			   "file /bin/busybox $busybox 0755 0 0\n"
			   "file /init $dir/init 0755 0 0\n");
	for (size_t i = 0; i < n; i++)
		g_string_append_printf(s, "file /payloads/%s $dir/payload-%s 0755 0 0\n",
				       payloads[i].name, payloads[i].name);
	g_string_append(s, "EOF\n"
			   "\"$build/usr/gen_init_cpio\" \"$dir/list\" > \"$dir/cpio\"\n"
			   "gzip -9 < \"$dir/cpio\"\n");
	return g_string_free(g_steal_pointer(&s), FALSE);
}

bool initramfs_build(const char *out_path, const char *busybox,
		     const struct initramfs_payload *payloads, size_t n, GError **error)
{
	struct cpio c = { .data = g_byte_array_new() };
	g_autoptr(GByteArray) archive = c.data;
	g_autofree char *bb = NULL;
	g_autofree char *init = init_script(payloads, n);
	g_autoptr(GConverter) gz = NULL;
	g_autoptr(GOutputStream) file = NULL;
	g_autoptr(GOutputStream) out = NULL;
	g_autoptr(GFile) target = g_file_new_for_path(out_path);
	gsize bb_len;

	if (!g_file_get_contents(busybox, &bb, &bb_len, error))
		return false;
	for (size_t i = 0; i < G_N_ELEMENTS(dirs); i++)
		cpio_dir(&c, dirs[i]);
	/* Without /dev/console the init has no output before devtmpfs. */
	cpio_entry(&c, "dev/console", S_IFCHR | 0600, 5, 1, NULL, 0);
	cpio_file(&c, "bin/busybox", 0755, bb, bb_len);
	cpio_file(&c, "init", 0755, init, strlen(init));
	for (size_t i = 0; i < n; i++) {
		gsize len;
		g_autofree char *text = payload_read(&payloads[i], &len, error);
		g_autofree char *name = NULL;

		if (!text)
			return false;
		name = g_strconcat("payloads/", payloads[i].name, NULL);
		cpio_file(&c, name, 0755, text, len);
	}
	cpio_entry(&c, "TRAILER!!!", 0, 0, 0, NULL, 0);

	gz = G_CONVERTER(g_zlib_compressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP, 6));
	file = G_OUTPUT_STREAM(g_file_replace(target, NULL, FALSE, G_FILE_CREATE_NONE, NULL, error));
	if (!file)
		return false;
	out = g_converter_output_stream_new(file, gz);
	if (!g_output_stream_write_all(out, archive->data, archive->len, NULL, NULL, error) ||
	    !g_output_stream_close(out, NULL, error))
		return false;
	return true;
}
