#!/bin/sh
# zeroday run end to end on the real Linux tree: a non-rebasable tree whose
# push of eight commits hides a boot panic in the third. The head's boots
# fail, the last tested head's boot fine, and the bisection, which builds
# and boots the commits in between, names the third commit. Speaks TAP.
# The state directory's build and source trees persist in the test cache,
# so reruns build incrementally.
set -u
: "${ZERODAY:?run through make check}"
cache_root=${ZERODAY_TEST_CACHE:-/var/cache/zeroday-test}
cache="$cache_root/linux-6.1"
state="$cache_root/run-state"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/zeroday-linux-run-XXXXXX")
chmod 0711 "$scratch"
trap '[ -n "${KEEP:-}" ] || rm -rf "$scratch"' EXIT
export GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=A GIT_AUTHOR_EMAIL=a@example.org
export GIT_COMMITTER_NAME=C GIT_COMMITTER_EMAIL=c@example.org
export GIT_AUTHOR_DATE=@1700000000 GIT_COMMITTER_DATE=@1700000000
n=0 failed=0
check() {
	desc=$1
	shift
	n=$((n + 1))
	if "$@"; then echo "ok $n - $desc"; else failed=1; echo "not ok $n - $desc"; fi
}

sh "$ZERODAY_SRCDIR/tests/linux-import.sh" "$cache" >/dev/null || {
	echo "1..0 # SKIP linux-source-6.1 is not installed"
	exit 0
}

# The history, in a scratch repository sharing the cache's objects.
repo="$scratch/linux.git"
git clone -q --bare --shared "$cache" "$repo"
base=$(git -C "$repo" rev-parse master)
export GIT_INDEX_FILE="$scratch/index"
git -C "$repo" read-tree "$base"
tip=$base
for i in 1 2 3 4 5 6 7 8; do
	if [ "$i" -eq 3 ]; then
		git -C "$repo" show "$tip:init/main.c" |
			sed 's/^static int __ref kernel_init(void \*unused)$/&/' |
			awk '{ print } /^static int __ref kernel_init\(void \*unused\)$/ { k = 1 }
			     k && /^\tint ret;$/ { print "\tpanic(\"zeroday: a boot panic for the test\");"; k = 0 }' \
			> "$scratch/file"
		path=init/main.c
		msg="init: the culprit"
	else
		git -C "$repo" show "$tip:kernel/panic.c" > "$scratch/file"
		echo "/* innocent $i */" >> "$scratch/file"
		path=kernel/panic.c
		msg="panic: innocent $i"
	fi
	blob=$(git -C "$repo" hash-object -w "$scratch/file")
	git -C "$repo" update-index --cacheinfo "100644,$blob,$path"
	tree=$(git -C "$repo" write-tree)
	tip=$(git -C "$repo" commit-tree "$tree" -p "$tip" -m "$msg")
	[ "$i" -eq 3 ] && culprit=$tip
done
unset GIT_INDEX_FILE
check "the culprit commit adds the panic" \
	sh -c "git -C '$repo' show '$culprit:init/main.c' | grep -q 'a boot panic for the test'"

# A fresh store, keeping the persistent source and build trees.
mkdir -p "$state"
rm -f "$state/zeroday.db" "$state/zeroday.db-wal" "$state/zeroday.db-shm"
printf '[git]\nallow-local-trees = true\n[boot]\nrepeat = 2\n' > "$scratch/z.conf"
z() { "$ZERODAY" --config="$scratch/z.conf" --state-dir="$state" "$@"; }
z init >/dev/null
git -C "$repo" update-ref refs/heads/master "$base"
z tree add linux "$repo" master --non-rebasable --target x86_64:tinyconfig+serial >/dev/null
z run --once --poll-interval 3600 > "$scratch/first.log" 2>&1
check "the first head" test $? -eq 0
check "its boots were conclusive" sh -c "! grep -q 'infrastructure' '$scratch/first.log'"
git -C "$repo" update-ref refs/heads/master "$tip"
z run --once --poll-interval 3600 > "$scratch/run.log" 2>&1
check "the pushed head" test $? -eq 0
sed 's/^/# /' "$scratch/run.log" | grep -E "finding|bisect" | head -20
z status --json > "$scratch/status.json"
check "the panic is blamed on the third commit" \
	grep -q "\"culprit\": \"$culprit\", \"target\": \"x86_64:tinyconfig+serial\", \"kind\": \"boot-panic\"" \
	"$scratch/status.json"
check "with its title" grep -q 'Kernel panic - not syncing: zeroday: a boot panic for the test' \
	"$scratch/status.json"
check "no finding blames another commit" test "$(grep -o '"culprit"' "$scratch/status.json" | wc -l)" -eq 1

echo "1..$n"
exit $failed
