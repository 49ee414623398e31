#!/bin/sh
# trinity on the real Linux tree: a non-rebasable tree over git daemon
# whose x86_64 target is built with +fs (what trinity needs of a
# tinyconfig kernel), its boots running the trinity payload for 10
# seconds ([boot] cmdline TRINITY_SECONDS=10) as the tree asks (tree add
# --payload trinity), with the boot's seed. The first head fuzzes clean.
# The push hides, under innocent commits, a WARN in times(2), which
# busybox's init never calls and trinity reaches within seconds: the
# WARNING is bisected to its commit by booting with trinity, reported
# with the seed's reproduce line, and trinity's own stop at the taint is
# no second finding. Outside `make check` (make check-runtime): every
# boot fuzzes for 10 s. Speaks TAP.
test_name=linux-trinity
. "$ZERODAY_SRCDIR/tests/lib.sh"
. "$ZERODAY_SRCDIR/tests/linux-lib.sh"
export GIT_INDEX_FILE="$scratch/index"
first=$(innocent "$base" 1)
tip=$(innocent "$first" 2)
git -C "$repo" show "$base:kernel/sys.c" |
	awk '{ print } /^SYSCALL_DEFINE1\(times, struct tms __user \*, tbuf\)$/ { t = 1; next }
	     t && /^\{$/ { print "\tWARN_ONCE(1, \"zeroday: a WARNING trinity reaches\\n\");"; t = 0 }' \
	> "$scratch/file"
culprit=$(commit_file "$tip" kernel/sys.c "$scratch/file" "sys: the trinity culprit")
push=$(innocent "$culprit" 2)
unset GIT_INDEX_FILE
check "the culprit adds one WARN to times(2), and nothing else" sh -c "
	git -C '$repo' diff '$culprit~' '$culprit' | grep -q '^+	WARN_ONCE(1, \"zeroday: a WARNING trinity reaches' &&
	git -C '$repo' diff --stat '$culprit~' '$culprit' | grep -q '1 file changed, 1 insertion(+)$'"

serve
fresh_store
printf '[boot]\nrepeat = 2\nhosts = qemu:///system*2\ncmdline = TRINITY_SECONDS=10\n' > "$scratch/z.conf"
z() { "$ZERODAY" --config="$scratch/z.conf" --state-dir="$state" "$@"; }
z init >/dev/null
t=x86_64:tinyconfig+serial+fs
git -C "$repo" update-ref refs/heads/master "$first"
z tree add linux "git://127.0.0.1:$port/linux.git" master --non-rebasable --target "$t" \
	--payload trinity >/dev/null
run() {
	since=$(date +%s)
	z run --once --poll-interval 3600 > "$scratch/$1.log" 2>&1
	check "$1: zeroday run" test $? -eq 0
	grep -E "finding|bisect|fixed|infra" "$scratch/$1.log" | head -30 | sed 's/^/# /'
	z status --json | sed 's/}, {/\n/g' > "$scratch/$1.json"
	sqlite3 "$state/zeroday.db" "SELECT d.commit_id, b.kind, b.title, b.tests, round(b.seconds, 1)
		FROM boots b JOIN builds d ON d.id = b.build_id WHERE b.created >= $since
		ORDER BY b.id" | sed 's/^/# boot /'
}
culprits() { grep -o '"culprit": "[0-9a-f]*"' "$1" | sort -u | wc -l; }
boots() {
	sqlite3 "$state/zeroday.db" "SELECT count(*) FROM boots b JOIN builds d ON d.id = b.build_id
		WHERE d.commit_id = '$1' AND b.kind = '$2' AND b.tests = '1 passed, 0 failed, 0 skipped'"
}

run first
check "the first head fuzzes clean twice, trinity's one result a pass" test "$(boots "$first" boot-ok)" -eq 2
check "its consoles show trinity's seeds" sh -c "
	grep -l '^trinity: seed 1' '$state'/boot/*/seed1-try1.console >/dev/null &&
	grep -l '^trinity: seed 2' '$state'/boot/*/seed2-try1.console >/dev/null"
check "no finding on the first head" test "$(culprits "$scratch/first.json")" -eq 0

git -C "$repo" update-ref refs/heads/master "$push"
run push
check "the WARNING is blamed on its commit, by booting with trinity" \
	grep -q "\"culprit\": \"$culprit\", \"target\": \"$t\", \"kind\": \"boot-WARNING\"" "$scratch/push.json"
check "titled by its function" grep -q '"title": "WARNING in __[a-z0-9_]*sys_times"' "$scratch/push.json"
check "no innocent commit is blamed" test "$(culprits "$scratch/push.json")" -eq 1
check "trinity's stop at the taint is no finding" sh -c "! grep -q 'trinity/trinity' '$scratch/push.json'"

z outbox --json | sed 's/}, {/\n/g' > "$scratch/outbox.json"
mail=$(grep '"kind": "report"' "$scratch/outbox.json" | head -1 | sed -n 's/.*"path": "\([^"]*\)".*/\1/p')
sed 's/^/# /' "$mail" 2>/dev/null | sed -n '1,50p'
check "one report is mailed" test "$(grep -c '"kind": "report"' "$scratch/outbox.json")" -eq 1
check "its QEMU line boots with trinity's time and the seed" \
	sh -c "test -f '$mail' && grep -q \"TRINITY_SECONDS=10 zeroday.seed=1'\" '$mail'"
check "and its console shows the WARNING where the culprit put it" \
	grep -q 'WARNING: CPU: [0-9]* PID: [0-9]* at .*kernel/sys.c:[0-9]* __[a-z0-9_]*sys_times' "$mail"
tap_end
