#!/bin/sh
# bench/runtime: what each runtime test costs a boot here (TCG, one vCPU,
# 512 MiB), so that targets and payloads can be planned; each figure is a
# boot with the payload against the same boot without it (the baseline,
# measured in the same run, best of 2):
#   - trinity, per minute of fuzzing, and its start-up, on Debian's kernel;
#   - fs-stress (ext4 and xfs, 30 s of stress each), on Debian's kernel;
#   - KUnit's suites (+kunit), a tinyconfig kernel of the real tree with
#     them against the same kernel without;
#   - kselftests (kselftest=vm,kselftest=size), when zeroday builds them.
#
# usage: bench/runtime.sh ZERODAY SRCDIR
set -eu
zd=${1:?usage: bench/runtime.sh ZERODAY SRCDIR}
srcdir=${2:?usage: bench/runtime.sh ZERODAY SRCDIR}
kernel=$(ls /boot/vmlinuz-*-amd64 | head -1)
cache=${ZERODAY_TEST_CACHE:-/var/cache/zeroday-test}/linux-6.1
work=$(mktemp -d "${TMPDIR:-/tmp}/zeroday-bench-runtime-XXXXXX")
chmod 0755 "$work"
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/lib.sh"

printf '[build]\nccache = true\n' > "$work/z.conf"
z() { "$zd" --config="$work/z.conf" --state-dir="$work/state" "$@"; }
z init >/dev/null

# boot_time IMAGE ARGS...: the best of 2 wall-clock times of one boot to
# its end; the boot must be conclusive (what its tests said is not the
# figure's business: a trinity that died early is said on stderr).
boot_time() {
	image=$1
	shift
	best_t=""
	for _ in 1 2; do
		t0=$(now)
		z boot "$image" -n 1 "$@" > "$work/out" 2>&1 || { cat "$work/out" >&2; exit 1; }
		t1=$(now)
		grep -q "^seed 1: infra-error" "$work/out" && { cat "$work/out" >&2; exit 1; }
		sed -n 's/^    trinity\/trinity: fail/# (trinity failed in this boot: &)/p' "$work/out" >&2
		best_t="$best_t $(elapsed "$t0" "$t1")"
	done
	# shellcheck disable=SC2086
	best $best_t
}
minus() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a - b }'; }

z boot "$kernel" -n 1 --payload smoke > /dev/null 2>&1 # warm-up: libvirt's caches
base=$(boot_time "$kernel" --payload smoke)
echo "Debian's kernel, smoke only (the baseline): $base s"
t30=$(boot_time "$kernel" --payload smoke --payload trinity --cmdline TRINITY_SECONDS=30)
t60=$(boot_time "$kernel" --payload smoke --payload trinity --cmdline TRINITY_SECONDS=60)
per_min=$(awk -v a="$t60" -v b="$t30" 'BEGIN { printf "%.1f", 2 * (a - b) }')
echo "trinity: 30 s of fuzzing cost the boot $(minus "$t30" "$base") s, 60 s $(minus "$t60" "$base") s:" \
	"$per_min s a minute, $(awk -v t="$t30" -v b="$base" -v m="$per_min" \
		'BEGIN { printf "%.1f", t - b - m / 2 }') s of start-up;" \
	"ratio boot with 60 s of trinity / baseline: $(ratio "$t60" "$base")"
fs=$(boot_time "$kernel" --payload smoke --payload fs-stress)
echo "fs-stress (ext4 and xfs, 30 s each): $(minus "$fs" "$base") s a boot;" \
	"ratio / baseline: $(ratio "$fs" "$base")"

# The real tree's kernels, built here with ccache (warm after the first).
import_linux "$cache" "KUnit, kselftests"
git clone -q --bare --shared "$cache" "$work/linux.git"
head=$(git -C "$work/linux.git" rev-parse master)
# image TARGET: the kept image of the build of master for TARGET.
image() {
	z build "$work/linux.git" "$head" --target "$1" > "$work/build.out" 2>&1 ||
		{ tail -20 "$work/build.out"; exit 1; }
	sqlite3 "$work/state/zeroday.db" \
		"SELECT image_path FROM builds WHERE commit_id = '$head' AND target = '$1'
		 AND image_path IS NOT NULL ORDER BY id DESC LIMIT 1"
}
plain=$(image x86_64:tinyconfig+serial)
kunit=$(image x86_64:tinyconfig+serial+kunit)
tp=$(boot_time "$plain" --payload smoke)
# shellcheck disable=SC2046
tk=$(boot_time "$kunit" --payload smoke)
tests=$(sed -n 's/^    tests: //p' "$work/out" | head -1)
# The suites' own span, by the guest's clock: from KUnit's first KTAP line
# to its last result, in the printk times of the last boot's console.
console=$(sed -n 's/^ *console: //p' "$work/out" | head -1)
span=$(tr -d '\r' < "$console" | awk '
	match($0, /^\[ *[0-9]+\.[0-9]+\]/) {
		t = substr($0, 2, RLENGTH - 2) + 0
		line = substr($0, RLENGTH + 2)
		if (line ~ /^K?TAP version/ && !first) first = t
		if (first && line ~ /^(not )?ok [0-9]/) last = t
	}
	END { printf "%.2f", last - first }')
echo "KUnit (+kunit: $tests): the suites run for $span s of the guest's boot;" \
	"the boot $(minus "$tk" "$tp") s over the same kernel without ($tp s); ratio: $(ratio "$tk" "$tp")"
if z build "$work/linux.git" "$head" --target x86_64:tinyconfig+serial:kselftest=vm,kselftest=size \
	> "$work/build.out" 2>&1; then
	ks=$(sqlite3 "$work/state/zeroday.db" \
		"SELECT image_path FROM builds WHERE commit_id = '$head'
		 AND target = 'x86_64:tinyconfig+serial:kselftest=vm,kselftest=size'
		 AND image_path IS NOT NULL ORDER BY id DESC LIMIT 1")
	t0=$(now)
	# A selftest that fails is a verdict and still a boot to time (the
	# exit status says so); a boot that could not run is not.
	z boot "$ks" -n 1 --payload smoke --payload kselftest > "$work/ks.out" 2>&1 || :
	t1=$(now)
	if ! grep -q "^seed 1: " "$work/ks.out" || grep -q "^seed 1: infra-error" "$work/ks.out"; then
		cat "$work/ks.out" >&2
		exit 1
	fi
	tks=$(elapsed "$t0" "$t1")
	ksp=$(boot_time "$ks" --payload smoke)
	echo "kselftests (vm and size: $(sed -n 's/^    tests: //p' "$work/ks.out" | head -1)):" \
		"$(minus "$tks" "$ksp") s a boot over the same kernel without; ratio: $(ratio "$tks" "$ksp")"
else
	echo "kselftests: skipped: $(grep -m1 -i 'kselftest\|unknown check' "$work/build.out" || echo 'the build failed')"
fi
