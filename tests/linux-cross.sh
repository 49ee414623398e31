#!/bin/sh
# The real Linux tree built by zeroday for the arches linux-arch.sh does
# not boot: arm (gnueabihf), powerpc (Debian's powerpc64le compiler), s390,
# mips (Debian's mips64el compiler) and i386 (the native gcc), tinyconfig
# each, in zeroday's sandbox with its ccache, through `zeroday build`. Each
# builds; each stored build names its compiler in its log; a build of an
# arch whose compiler Debian 12 lacks (loongarch) is skipped, saying why;
# an i386 tinyconfig+serial kernel boots under QEMU.
# The build trees persist in the test cache: reruns are incremental. Speaks
# TAP. Run by `make check-arches`, not by `make check`: five cold kernel
# builds do not fit its time on a fresh machine.
test_name=linux-cross
. "$ZERODAY_SRCDIR/tests/lib.sh"
cache_root=${ZERODAY_TEST_CACHE:-/var/cache/zeroday-test}
cache="$cache_root/linux-6.1"
state="$cache_root/cross-state"

import_linux "$cache"
exec 8>"$cache_root/cross-state.lock"
flock 8
mkdir -p "$state"
rm -f "$state/zeroday.db" "$state/zeroday.db-wal" "$state/zeroday.db-shm"
: > "$scratch/z.conf"
z() { "$ZERODAY" --config="$scratch/z.conf" --state-dir="$state" "$@"; }
z init >/dev/null
head=$(git -C "$cache" rev-parse master | cut -c1-12)

for arch in arm powerpc s390 mips i386; do
	t0=$(date +%s)
	z build "$cache" master --target "$arch:tinyconfig" > "$scratch/$arch.log" 2>&1
	rc=$?
	echo "# $arch: $(head -1 "$scratch/$arch.log") ($(($(date +%s) - t0)) s)"
	check "$arch:tinyconfig builds" \
		sh -c "test $rc -eq 0 && grep -q '^$arch:tinyconfig $head: pass' '$scratch/$arch.log'"
	log=$(sed -n 's/^    log: //p' "$scratch/$arch.log")
	case $arch in
	arm) cc=arm-linux-gnueabihf-gcc ;;
	powerpc) cc=powerpc64le-linux-gnu-gcc ;;
	s390) cc=s390x-linux-gnu-gcc ;;
	mips) cc=mips64el-linux-gnuabi64-gcc ;;
	i386) cc=gcc ;;
	esac
	check "with $cc" grep -q "CC=/zeroday/tools/zeroday-cc ccache $cc\( \|\$\)" "$log"
done

# i386 boots too, with Debian's i386 busybox.
z build "$cache" master --target i386:tinyconfig+serial > "$scratch/i386-serial.log" 2>&1
id=$(sqlite3 "$state/zeroday.db" "SELECT id FROM builds WHERE target = 'i386:tinyconfig+serial'
	AND status = 'ok' ORDER BY id DESC LIMIT 1")
z boot --repeat 1 "$id" > "$scratch/i386-boot.log" 2>&1
sed 's/^/# /' "$scratch/i386-boot.log" | head -3
check "an i386 kernel boots to the end marker" grep -q '^all 1 conclusive boots ok$' \
	"$scratch/i386-boot.log"

z build "$cache" master --target loongarch:tinyconfig > "$scratch/loongarch.log" 2>&1
check "loongarch, which Debian 12 has no compiler for, is skipped, saying so" \
	grep -q "^loongarch:tinyconfig $head: skipped (skipped: no compiler for loongarch)" \
	"$scratch/loongarch.log"

tap_end
