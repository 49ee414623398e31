#!/bin/sh
# Trees that attack zeroday through their Makefiles: links to root-only
# files where zeroday takes files out of the build, a FIFO where it reads
# the image, a ccache configuration planted for the next tree's build, and
# a flood of output. Each must end as an infrastructure error of the
# attacking tree's build (or a bounded result), leak nothing, plant
# nothing, and hang nothing. Everything lives under a mode-0700 directory,
# as a root's home does. Speaks TAP.
test_name=attack
. "$ZERODAY_SRCDIR/tests/lib.sh"

home="$scratch/home700"
mkdir -p "$home"
chmod 0700 "$home"
state="$home/state"
printf '[git]\nallow-local-trees = true\n[build]\nccache = true\n' > "$scratch/z.conf"
z() { "$ZERODAY" --config="$scratch/z.conf" --state-dir="$state" "$@"; }

# evil NAME RECIPE...: a tree whose config or build step runs RECIPE.
# Each RECIPE is a make recipe line ($(obj) is the build directory).
evil() {
	name=$1 where=$2
	shift 2
	r="$home/$name"
	kbuild_repo "$r" "$name: the starting point"
	# A build step that runs every time, after the program is linked.
	[ "$where" = build ] && printf 'all: zd-attack\nzd-attack: $(obj)/prog\n' >> "$r/Makefile"
	for line in "$@"; do
		case $where in
		config) sed -i "/^\t@echo \"  CONF    \$@\"/a\\
\t$line" "$r/Makefile" ;;
		build) printf '\t%s\n' "$line" >> "$r/Makefile" ;;
		esac
	done
	git -C "$r" commit -q -am "$name: attack"
	z tree add "$name" "$r" master --target x86_64:defconfig >/dev/null && z poll >/dev/null
}

# no_leak DESCRIPTION: no file under the state directory holds a line of
# /etc/shadow, and none outside the build directories (the attacker's own)
# is a link to it.
secret=$(grep -m1 . /etc/shadow)
no_leak() {
	if grep -rqF -- "$secret" "$state" 2>/dev/null; then
		not_ok "$1: /etc/shadow leaked into the state directory"
		grep -rlF -- "$secret" "$state" | sed 's/^/#   /'
	elif find "$state" -path "$state/build" -prune -o -lname '/etc/*' -print | grep -q .; then
		not_ok "$1: a link to /etc in the state directory"
	else
		ok "$1: nothing of /etc/shadow in the state directory"
	fi
}

# build NAME: zeroday build of the tree's head, bounded in time.
build() {
	timeout 600 "$ZERODAY" --config="$scratch/z.conf" --state-dir="$state" \
		build "$1" master > "$scratch/$1.out" 2>&1
}

z init >/dev/null

# 1. A .config that is a link to /etc/shadow.
evil config-link config 'ln -sf /etc/shadow $(obj)/.config'
check "config link: zeroday build ends" build config-link
check "config link: an infrastructure error naming the .config" \
	grep -q 'infra-error (.*\.config.*link' "$scratch/config-link.out"
no_leak "config link"

# 2. A kernel image that is a link to /etc/shadow.
evil image-link build 'mkdir -p $(obj)/arch/x86/boot' \
	'ln -sf /etc/shadow $(obj)/arch/x86/boot/bzImage'
check "image link: zeroday build ends" build image-link
check "image link: an infrastructure error naming the image" \
	grep -q 'infra-error (taking the image out: .*bzImage' "$scratch/image-link.out"
no_leak "image link"

# 3. A kernel image that is a FIFO: opening it must not block.
evil image-fifo build 'mkdir -p $(obj)/arch/x86/boot' \
	'rm -f $(obj)/arch/x86/boot/bzImage' 'mkfifo $(obj)/arch/x86/boot/bzImage'
start=$(date +%s)
check "image FIFO: zeroday build ends" build image-fifo
check "image FIFO: in well under the build timeout" test $(($(date +%s) - start)) -lt 300
check "image FIFO: an infrastructure error: not a regular file" \
	grep -q 'infra-error (taking the image out: .*not a regular file' "$scratch/image-fifo.out"

# 3b. A vmlinux that is a link to /etc/shadow, beside a good image: the
# build stands (vmlinux only serves to decode traces), the image is kept,
# the vmlinux is not. Then a regular vmlinux: kept beside its image.
evil vmlinux-link build 'mkdir -p $(obj)/arch/x86/boot' \
	'echo image > $(obj)/arch/x86/boot/bzImage' 'ln -sf /etc/shadow $(obj)/vmlinux'
check "vmlinux link: zeroday build ends" build vmlinux-link
check "vmlinux link: the build passes" grep -q 'x86_64:defconfig [0-9a-f]*: pass' "$scratch/vmlinux-link.out"
check "vmlinux link: the image is kept" sh -c "ls '$state/images/vmlinux-link/'*.image >/dev/null"
check "vmlinux link: no vmlinux is kept" sh -c "! ls '$state/images/vmlinux-link/'*.vmlinux 2>/dev/null"
no_leak "vmlinux link"
evil vmlinux-kept build 'mkdir -p $(obj)/arch/x86/boot' \
	'echo image > $(obj)/arch/x86/boot/bzImage' 'cp $(obj)/prog $(obj)/vmlinux'
check "vmlinux: zeroday build ends" build vmlinux-kept
check "vmlinux: kept beside its image, as STAMP.vmlinux" sh -c \
	"for i in '$state/images/vmlinux-kept/'*.image; do cmp \"\${i%.image}.vmlinux\" '$state/build/vmlinux-kept/'*/vmlinux || exit 1; done"

# 4. A tree that plants a ccache configuration and a prefix command for
# the builds after it. The victim's build must not see it.
evil planter build \
	'printf "prefix_command = $$CCACHE_DIR/plant\n" > $$CCACHE_DIR/ccache.conf' \
	'printf "#!/bin/sh\necho src/net.c:1:1: error: planted by tree evil >&2\nexit 1\n" > $$CCACHE_DIR/plant' \
	'chmod +x $$CCACHE_DIR/plant'
check "planter: zeroday build ends" build planter
victim="$home/victim"
kbuild_repo "$victim" "victim: the starting point"
echo "/* innocent */" >> "$victim/src/main.c"
git -C "$victim" commit -q -am "victim: an innocent change"
z tree add victim "$victim" master --target x86_64:defconfig >/dev/null && z poll >/dev/null
check "victim: zeroday build ends" build victim
check "victim: its innocent commit passes" grep -q 'x86_64:defconfig [0-9a-f]*: pass' "$scratch/victim.out"
check "victim: nothing planted in its build" sh -c "test -d '$state/logs/build/victim' && ! grep -rq 'planted by tree evil' '$state/logs/build/victim'"
check "victim: a ccache of its own" test -d "$state/ccache/victim"
check "victim: a cache zeroday configured (CCACHE_CONFIGPATH)" \
	sh -c "test -f '$state/tools/ccache.conf' && ! grep -rq prefix_command '$state/ccache/victim' '$state/tools'"

# 5. A flood of distinct warnings: the log and the diagnostics are capped,
# and the build ends.
# (Numbers are not part of a fingerprint: the warnings differ in words.)
evil flood build \
	"@awk 'BEGIN { for (i = 0; i < 2000000; i++) { w = \"\"; for (n = i; n > 0; n = int(n / 26)) w = w sprintf(\"%c\", 97 + n % 26); printf \"src/net.c:1:1: warning: flood %s [-Wflood]\\n\", w } }'"
start=$(date +%s)
check "flood: zeroday build ends" build flood
echo "# the flood took $(($(date +%s) - start)) s"
log=$(sed -n 's/^    log: //p' "$scratch/flood.out")
size=$(stat -c %s "$log")
echo "# the flood's log: $size bytes"
check "flood: its log is capped (16 MiB and a note)" test "$size" -lt 17000000
check "flood: the log says what it cut" grep -q 'bytes of output cut here' "$log"
count=$(sqlite3 "$state/zeroday.db" "SELECT max(n) FROM (SELECT count(*) AS n FROM diagnostics d
	JOIN builds b ON b.id = d.build_id WHERE b.source = 'flood' GROUP BY d.build_id)")
echo "# the flood's diagnostics stored for its build: $count"
check "flood: the diagnostics are capped" test "$count" -gt 1000 -a "$count" -le 20000

# 6. The state directory and the trees live in a mode-0700 directory, as
# a root's home: the sandbox still reaches them (the victim passed), and
# no build was an infrastructure error for want of permissions.
check "mode 0700: the victim built from inside it" test "$(stat -c %a "$home")" = 700
check "mode 0700: no build failed on permissions" \
	sh -c "test -d '$state/logs/build/victim' && ! grep -rq 'Permission denied' '$state/logs/build/victim'"

# A boot from there too: the kernel image itself inside the mode-0700
# directory. QEMU (as libvirt's user) reads nothing of zeroday's: the
# kernel and initramfs reach it through libvirt.
kernel=$(ls /boot/vmlinuz-* 2>/dev/null | head -1)
if [ -z "$kernel" ] || ! virsh -c qemu:///system version >/dev/null 2>&1; then
	echo "# SKIP the boot under mode 0700: no kernel in /boot or no libvirt (qemu:///system)"
	ok "mode 0700: a boot # SKIP no kernel in /boot or no libvirt"
else
	cp "$kernel" "$home/vmlinuz"
	timeout 600 "$ZERODAY" --config="$scratch/z.conf" --state-dir="$state" \
		boot "$home/vmlinuz" --repeat 1 > "$scratch/boot.out" 2>&1
	sed 's/^/# /' "$scratch/boot.out" | tail -5
	check "mode 0700: a boot of a kernel kept there" grep -q 'all 1 conclusive boots ok' "$scratch/boot.out"
fi

tap_end
