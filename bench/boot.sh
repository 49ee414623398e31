#!/bin/sh
# bench/boot: zeroday's boot of Debian's kernel to the end marker, against
# the same boot launched as a bare qemu-system-x86_64 command with the same
# kernel, initramfs and command line (the baseline, measured in the same
# run; the goal is at most 1.2 times); then 8 boots queued on the default
# 2 slots, against 8 times one boot.
#
# usage: bench/boot.sh ZERODAY SRCDIR
set -eu
zd=${1:?usage: bench/boot.sh ZERODAY SRCDIR}
srcdir=${2:?usage: bench/boot.sh ZERODAY SRCDIR}
kernel=$(ls /boot/vmlinuz-* | head -1)
work=$(mktemp -d "${TMPDIR:-/tmp}/zeroday-bench-boot-XXXXXX")
chmod 0755 "$work"
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/lib.sh"

z() { "$zd" --state-dir="$work/state" "$@"; }
z init >/dev/null
z boot "$kernel" -n 1 >"$work/out" # warm-up: libvirt's capability cache
grep -q "all 1 conclusive boots ok" "$work/out" || { cat "$work/out"; exit 1; }
initrd=$(ls "$work"/state/boot/*/initrd.gz | head -1)
# zeroday's own command line (engine/boot.h BOOT_CMDLINE_ARGS), as the
# reproduce line of a boot report gives it.
cmdline=$(sed -n 's/^#define BOOT_CMDLINE_ARGS "\(.*\)"$/\1/p' "$srcdir/engine/boot.h")
[ -n "$cmdline" ] || { echo "no BOOT_CMDLINE_ARGS in $srcdir/engine/boot.h"; exit 1; }

zt="" qt=""
for _ in 1 2 3; do
	t0=$(now); z boot "$kernel" -n 1 >"$work/out"; t1=$(now)
	grep -q "all 1 conclusive boots ok" "$work/out" || { cat "$work/out"; exit 1; }
	zt="$zt $(elapsed "$t0" "$t1")"
	t0=$(now)
	qemu-system-x86_64 -machine pc -cpu qemu64 -m 512 -nographic -no-reboot \
		-kernel "$kernel" -initrd "$initrd" \
		-append "console=ttyS0 $cmdline zeroday.seed=1" >"$work/qemu.log" 2>&1
	t1=$(now)
	grep -q ZERODAY-BOOT-END "$work/qemu.log" || { tail "$work/qemu.log"; exit 1; }
	qt="$qt $(elapsed "$t0" "$t1")"
done
# shellcheck disable=SC2086
zb=$(best $zt)
# shellcheck disable=SC2086
qb=$(best $qt)
echo "one boot to the end marker (best of 3): zeroday $zb s, bare qemu $qb s"
echo "ratio zeroday/bare-qemu: $(ratio "$zb" "$qb") (goal <= 1.2)"

t0=$(now); z boot "$kernel" -n 8 >"$work/out"; t1=$(now)
grep -q "all 8 conclusive boots ok" "$work/out" || { cat "$work/out"; exit 1; }
eight=$(elapsed "$t0" "$t1")
echo "8 boots queued on 2 slots: $eight s ($(ratio 8 "$eight") boots/s);" \
	"ratio against 8 single boots: $(ratio "$eight" "$(awk -v z="$zb" 'BEGIN { print 8 * z }')")"
