#!/bin/sh
# The runtime payloads on Debian's own kernel, booted through the real
# libvirtd under TCG with `zeroday boot`: trinity fuzzes as nobody with the
# boot's seed, and fs-stress makes, stresses and checks ext4 and xfs on
# the boot's scratch disk, with virtio_blk, ext4 and xfs loaded from the
# kernel's own modules (/lib/modules). A second boot with the same seed
# replays the same trinity seed. Prints each payload's time. Speaks TAP.
test_name=runtime-debian
. "$ZERODAY_SRCDIR/tests/lib.sh"

passed=0
bad=0
ok() { n=$((n + 1)); passed=$((passed + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); bad=$((bad + 1)); failed=1; echo "not ok $n - $1"; }

kernel=$(ls /boot/vmlinuz-*-amd64 2>/dev/null | head -1)
state="$scratch/state"
z() { "$ZERODAY" --state-dir="$state" "$@"; }

# boot NAME ARGS...: zeroday boot of Debian's kernel with ARGS; its output
# in $scratch/NAME.out, its console (without the serial line's CRs) in
# $scratch/NAME.console.
boot() {
	name=$1
	shift
	z boot "$kernel" -n 1 "$@" > "$scratch/$name.out" 2>&1
	echo $? > "$scratch/$name.rc"
	console=$(sed -n 's/^ *console: //p' "$scratch/$name.out")
	tr -d '\r' < "${console:-/dev/null}" > "$scratch/$name.console"
}
# has NAME LINE: the console of boot NAME has LINE, exactly.
has() { grep -qxF "$2" "$scratch/$1.console"; }
scratch_volumes() {
	virsh -q -c qemu:///system vol-list zeroday 2>/dev/null | grep -c '\.scratch ' || :
}

check "Debian's kernel is installed" test -n "$kernel"
for prog in trinity stress-ng mkfs.ext4 mkfs.xfs e2fsck xfs_repair; do
	check "$prog is installed" sh -c "PATH=\$PATH:/usr/sbin:/sbin command -v $prog >/dev/null"
done
z init > /dev/null
before=$(scratch_volumes)

start=$(date +%s)
boot first --payload trinity --payload fs-stress
echo "# boot with trinity and fs-stress: $(( $(date +%s) - start )) s"
check "the boot ends 0" test "$(cat "$scratch/first.rc")" -eq 0
check "the boot is boot-ok" grep -q "seed 1: boot-ok" "$scratch/first.out"
check "trinity prints its seed first" has first "trinity: seed 1"
check "trinity passes the seed on" has first "[main] Using user passed random seed: 1."
# trinity ends "ok 1 trinity" when it ran its time, and says why when the
# guest's OOM killer ended it first (its fuzzing exhausts 512 MiB now and
# then): never a failure either way.
trinity_ok() {
	grep -qx "ok 1 trinity" "$scratch/$1.console" ||
		grep -q "^ok 1 trinity # stopped after [0-9]* s: the OOM killer ended it" "$scratch/$1.console"
}
check "trinity ran its time, or the OOM killer ended it: ok 1 trinity" trinity_ok first
check "ext4 made, stressed, verified and checked: ok 1 ext4" has first "ok 1 ext4"
check "xfs likewise: ok 2 xfs" has first "ok 2 xfs"
check "fs-stress ran on the 512 MiB scratch disk" \
	grep -q "^# fs-stress: ext4 on /dev/vda, 512 MiB, stress-ng .*seed 1$" "$scratch/first.console"
check "no payload failed" sh -c "! grep -q 'ZERODAY-PAYLOAD-END .* rc=[1-9]' '$scratch/first.console'"
check "the scratch disk is gone after the boot" test "$(scratch_volumes)" -eq "$before"
sed -n 's/^# \(trinity: exit .*\)/# time: \1/p; s/^# \(fs-stress: .* took .*\)/# time: \1/p' \
	"$scratch/first.console"

# The same seed again, trinity alone, for 10 s through the command line.
boot again --payload trinity --cmdline TRINITY_SECONDS=10
check "the second boot is boot-ok" grep -q "seed 1: boot-ok" "$scratch/again.out"
check "the same seed again" has again "trinity: seed 1"
check "trinity replays it" has again "[main] Using user passed random seed: 1."
check "TRINITY_SECONDS on the command line bounds it" \
	grep -q "^# trinity: 10 s as nobody" "$scratch/again.console"
check "ok 1 trinity again" trinity_ok again
sed -n 's/^# \(trinity: exit .*\)/# time: \1/p' "$scratch/again.console"

echo "# $passed passed, $bad failed, 0 skipped"
tap_end
