#!/bin/sh
# kselftests on the real Linux tree (make check-runtime; not in make
# check: a cold kernel build of several minutes): a non-rebasable tree
# over git daemon whose x86_64 target builds the tree's own vm and size
# selftests after the kernel (kselftest=vm,kselftest=size) and boots
# them with the kselftest payload, twice per commit (TCG, libvirt). The
# push hides, under innocent commits, a change to mm/mmap.c that makes
# MAP_FIXED_NOREPLACE check only the first page for an overlap: the
# selftest vm/map_fixed_noreplace fails, bisected to its commit by
# booting, reported as that test's failure with how to run it alone.
# The same commit makes vm/mremap_test crash (it places its regions with
# MAP_FIXED_NOREPLACE): a second new failure of the same culprit, its own
# finding on the same commit, never an innocent one's, carried by the
# first one's report: one commit, one mail. The
# first head already has a failing selftest (size/get_size made to print
# "not ok" in the tree: the selftests are the tree's own): a known
# failure, never mailed. Speaks TAP.
test_name=linux-kselftest
. "$ZERODAY_SRCDIR/tests/lib.sh"
. "$ZERODAY_SRCDIR/tests/linux-lib.sh"
export GIT_INDEX_FILE="$scratch/index"
git -C "$repo" show "$base:tools/testing/selftests/size/get_size.c" |
	sed 's/^\tprint("ok 1");$/\tprint("not ok 1");/' > "$scratch/file"
known=$(commit_file "$base" tools/testing/selftests/size/get_size.c "$scratch/file" \
	"selftests/size: a selftest that always fails")
first=$(innocent "$known" 1)
tip=$(innocent "$first" 2)
git -C "$repo" show "$base:mm/mmap.c" |
	sed 's/if (find_vma_intersection(mm, addr, addr + len))/if (find_vma_intersection(mm, addr, addr + PAGE_SIZE))/' \
	> "$scratch/file"
culprit=$(commit_file "$tip" mm/mmap.c "$scratch/file" "mm/mmap: the kselftest culprit")
push=$(innocent "$culprit" 2)
unset GIT_INDEX_FILE
check "the commits change one line each" sh -c "
	git -C '$repo' diff '$known~' '$known' | grep -q '^+	print(\"not ok 1\");' &&
	git -C '$repo' diff --stat '$known~' '$known' | grep -q '1 file changed, 1 insertion(+), 1 deletion' &&
	git -C '$repo' diff '$culprit~' '$culprit' | grep -q '^+.*addr + PAGE_SIZE))' &&
	git -C '$repo' diff --stat '$culprit~' '$culprit' | grep -q '1 file changed, 1 insertion(+), 1 deletion'"

serve
fresh_store
printf '[boot]\nrepeat = 2\nhosts = qemu:///system*2\n' > "$scratch/z.conf"
z() { "$ZERODAY" --config="$scratch/z.conf" --state-dir="$state" "$@"; }
z init >/dev/null
t=x86_64:tinyconfig+serial:kselftest=vm,kselftest=size
git -C "$repo" update-ref refs/heads/master "$first"
z tree add linux "git://127.0.0.1:$port/linux.git" master --non-rebasable --target "$t" \
	--payload kselftest >/dev/null
check "a kselftest target of another arch is refused at parse" sh -c "
	'$ZERODAY' --config='$scratch/z.conf' --state-dir='$state' tree add other \
		git://127.0.0.1:$port/linux.git master --target arm64:tinyconfig:kselftest=vm 2>&1 |
	grep -q 'x86_64 targets only'"
run() {
	since=$(date +%s)
	z run --once --poll-interval 3600 > "$scratch/$1.log" 2>&1
	check "$1: zeroday run" test $? -eq 0
	grep -E "finding|bisect|fixed|infra|selftest" "$scratch/$1.log" | head -30 | sed 's/^/# /'
	z status --json | sed 's/}, {/\n/g' > "$scratch/$1.json"
	sqlite3 "$state/zeroday.db" "SELECT d.commit_id, b.kind, b.title, b.tests, round(b.seconds, 1)
		FROM boots b JOIN builds d ON d.id = b.build_id WHERE b.created >= $since
		ORDER BY b.id" | sed 's/^/# boot /'
}
culprits() { grep -o '"culprit": "[0-9a-f]*"' "$1" | sort -u | wc -l; }
tests_of() {
	sqlite3 "$state/zeroday.db" "SELECT b.tests FROM boots b JOIN builds d ON d.id = b.build_id
		WHERE d.commit_id = '$1' ORDER BY b.id"
}

run first
image=$(sqlite3 "$state/zeroday.db" "SELECT image_path FROM builds WHERE commit_id = '$first' AND target = '$t'")
log=$(sqlite3 "$state/zeroday.db" "SELECT log_path FROM builds WHERE commit_id = '$first' AND target = '$t'")
grep -E "^zeroday: make|selftests built" "$log" "$log.kselftest.log" "$scratch/first.log" 2>/dev/null |
	cut -c1-200 | sed 's/^/# /'
check "the selftests are built after the kernel and kept beside its image" sh -c "
	test -x '$image.kselftest/run_kselftest.sh' && test -x '$image.kselftest/vm/map_fixed_noreplace' &&
	test -x '$image.kselftest/size/get_size' && test -z \"\$(find '$image.kselftest' ! -type f ! -type d)\""
check "their output is in their own log, not the kernel's" sh -c "
	grep -q 'tools/testing/selftests' '$log.kselftest.log' && ! grep -q 'kselftest-install' '$log'"
check "the tree's vm/config is merged into the kernel config" sh -c "
	cfg=\$(sqlite3 '$state/zeroday.db' \"SELECT config_path FROM builds WHERE commit_id = '$first' AND target = '$t'\");
	grep -q '^CONFIG_USERFAULTFD=y' \"\$cfg\" && grep -q '^CONFIG_GUP_TEST=y' \"\$cfg\" &&
	grep -q '^CONFIG_DEBUG_FS=y' \"\$cfg\""
tests_of "$first" | sed 's/^/# first head: /'
check "the first head boots twice, its selftests read from the console" \
	test "$(tests_of "$first" | grep -c '^[1-9][0-9]* passed, 1 failed')" -eq 2
check "its failed selftest, the tree's own, is the boot's verdict" test "$(sqlite3 "$state/zeroday.db" \
	"SELECT count(*) FROM boots b JOIN builds d ON d.id = b.build_id WHERE d.commit_id = '$first'
	 AND b.kind = 'test-fail' AND b.title = 'kselftest/size/get_size/get runtime memory use: fail'")" -eq 2
check "no finding on the first head" test "$(culprits "$scratch/first.json")" -eq 0
build=$(sqlite3 "$state/zeroday.db" "SELECT id FROM builds WHERE commit_id = '$first' AND target = '$t'")
z boot "$build" --repeat 1 --payload kselftest > "$scratch/boot.out" 2>&1
sed 's/^/# /' "$scratch/boot.out" | head -60
check "zeroday boot prints each selftest's result" sh -c "
	grep -q '^    kselftest/vm/map_fixed_noreplace: pass$' '$scratch/boot.out' &&
	grep -q '^    kselftest/vm/madv_populate/MADV_POPULATE_READ: pass$' '$scratch/boot.out' &&
	grep -q '^    kselftest/size/get_size/get runtime memory use: fail$' '$scratch/boot.out'"

git -C "$repo" update-ref refs/heads/master "$push"
run push
check "the broken selftest is blamed on its commit, by booting" \
	grep -q "\"culprit\": \"$culprit\", \"target\": \"$t\", \"kind\": \"boot-test-fail\"" "$scratch/push.json"
check "as that test's failure" grep -q '"title": "kselftest/vm/map_fixed_noreplace: fail"' "$scratch/push.json"
check "no innocent commit is blamed" test "$(culprits "$scratch/push.json")" -eq 1
grep -o '"title": "[^"]*"' "$scratch/push.json" | sort | uniq -c | sed 's/^/# finding /'
check "the same commit's second new failure is its own finding, on the same culprit" \
	grep -q "\"culprit\": \"$culprit\", \"target\": \"$t\", \"kind\": \"boot-test-fail\".*\"title\": \"kselftest/vm/mremap_test: fail\"" \
	"$scratch/push.json"
check "the known failure is not a finding" sh -c "! grep -q 'get_size' '$scratch/push.json'"
check "but the head's job says it was there before" test "$(sqlite3 "$state/zeroday.db" \
	"SELECT count(*) FROM jobs WHERE commit_id = '$push' AND result = 'known-failure'
	 AND last_error LIKE '%kselftest/size/get_size/get runtime memory use: fail%'")" -eq 1

z outbox --json | sed 's/}, {/\n/g' > "$scratch/outbox.json"
mail=$(grep '"kind": "report"' "$scratch/outbox.json" | head -1 | sed -n 's/.*"path": "\([^"]*\)".*/\1/p')
sed 's/^/# /' "$mail" 2>/dev/null | sed -n '1,70p'
check "one report for both new failures, none for the known one" sh -c "
	test \$(grep -c '\"kind\": \"report\"' '$scratch/outbox.json') -eq 1 &&
	! grep -l '^Subject: .*get_size' \$(sed -n 's/.*\"path\": \"\\([^\"]*\\)\".*/\\1/p' '$scratch/outbox.json')"
check "it names the test the commit breaks" \
	sh -c "test -f '$mail' && tr '\n' ' ' < '$mail' | grep -q 'kselftest/vm/map_fixed_noreplace'"
check "and how to run it alone in a checkout" grep -q \
	'run_kselftest.sh -t vm:map_fixed_noreplace' "$mail"
check "and carries the commit's other new failure" sh -c "
	tr '\n' ' ' < '$mail' | grep -q 'It also makes these fail, each bisected to it: *kselftest/vm/mremap_test: fail'"
tap_end
