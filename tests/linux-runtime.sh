#!/bin/sh
# Runtime tests on the real Linux tree: a non-rebasable tree over git
# daemon whose x86_64 target builds KUnit in (+kunit), so that each boot
# (TCG, libvirt) prints every suite's KTAP results and zeroday reads them
# per test. The first head already has a test that fails (a case added to
# the example suite that expects 1 == 2): a known failure, shown in the
# job's note and never mailed. The push hides, under innocent commits, a
# change to lib/cmdline.c's range parsing that breaks KUnit's
# cmdline_test_range: bisected to its commit by booting, reported as that
# test's failure with its KTAP lines and how to run it alone. Speaks TAP.
test_name=linux-runtime
. "$ZERODAY_SRCDIR/tests/lib.sh"
. "$ZERODAY_SRCDIR/tests/linux-lib.sh"
export GIT_INDEX_FILE="$scratch/index"
# The first head: a KUnit case that always fails.
git -C "$repo" show "$base:lib/kunit/kunit-example-test.c" |
	awk '/^static struct kunit_case example_test_cases\[\] = \{$/ {
		print "static void example_known_failure(struct kunit *test)"
		print "{"
		print "\tKUNIT_EXPECT_EQ(test, 1, 2);"
		print "}"
		print ""
		print; print "\tKUNIT_CASE(example_known_failure),"; next } { print }' > "$scratch/file"
known=$(commit_file "$base" lib/kunit/kunit-example-test.c "$scratch/file" \
	"kunit: an example test that always fails")
first=$(innocent "$known" 1)
# The push: lib/cmdline.c's get_range() stops one short.
tip=$(innocent "$first" 2)
git -C "$repo" show "$base:lib/cmdline.c" |
	sed 's/for (x = \*pint; n \&\& x < upper_range; x++, n--)/for (x = *pint; n \&\& x < upper_range - 1; x++, n--)/' \
	> "$scratch/file"
culprit=$(commit_file "$tip" lib/cmdline.c "$scratch/file" "lib/cmdline: the KUnit culprit")
push=$(innocent "$culprit" 2)
unset GIT_INDEX_FILE
check "the commits change what they say, and nothing else" sh -c "
	git -C '$repo' diff '$known~' '$known' | grep -q '^+	KUNIT_CASE(example_known_failure),' &&
	git -C '$repo' diff --stat '$known~' '$known' | grep -q '1 file changed, 6 insertions' &&
	git -C '$repo' diff '$culprit~' '$culprit' | grep -q '^+.*x < upper_range - 1;' &&
	git -C '$repo' diff --stat '$culprit~' '$culprit' | grep -q '1 file changed, 1 insertion(+), 1 deletion'"

serve
fresh_store
printf '[boot]\nrepeat = 2\nhosts = qemu:///system*2\n' > "$scratch/z.conf"
z() { "$ZERODAY" --config="$scratch/z.conf" --state-dir="$state" "$@"; }
z init >/dev/null
t=x86_64:tinyconfig+serial+kunit
git -C "$repo" update-ref refs/heads/master "$first"
z tree add linux "git://127.0.0.1:$port/linux.git" master --non-rebasable --target "$t" >/dev/null
# run NAME: zeroday run --once, its log in NAME.log, the findings in NAME.json.
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
# tests_of COMMIT: the test counts of its boots, one line each.
tests_of() {
	sqlite3 "$state/zeroday.db" "SELECT b.tests FROM boots b JOIN builds d ON d.id = b.build_id
		WHERE d.commit_id = '$1' ORDER BY b.id"
}

run first
check "the first head boots twice, its KUnit suites' results read from the console" \
	test "$(tests_of "$first" | grep -c '^[1-9][0-9]* passed, 1 failed, [1-9][0-9]* skipped$')" -eq 2
check "its failed test is the boot's verdict" test "$(sqlite3 "$state/zeroday.db" \
	"SELECT count(*) FROM boots b JOIN builds d ON d.id = b.build_id WHERE d.commit_id = '$first'
	 AND b.kind = 'test-fail' AND b.title = 'kunit/example/example_known_failure: fail'")" -eq 2
check "no finding on the first head" test "$(culprits "$scratch/first.json")" -eq 0
build=$(sqlite3 "$state/zeroday.db" "SELECT id FROM builds WHERE commit_id = '$first' AND target = '$t'")
z boot "$build" --repeat 1 > "$scratch/boot.out" 2>&1
sed 's/^/# /' "$scratch/boot.out" | head -40
check "zeroday boot prints each test's result" sh -c "
	grep -q '^    kunit/example/example_simple_test: pass$' '$scratch/boot.out' &&
	grep -q '^    kunit/example/example_skip_test: skip # ' '$scratch/boot.out' &&
	grep -q '^    kunit/example/example_known_failure: fail$' '$scratch/boot.out' &&
	grep -q '^    kunit/cmdline/cmdline_test_range: pass$' '$scratch/boot.out' &&
	grep -q '^    tests: [0-9]* passed, 1 failed, [0-9]* skipped$' '$scratch/boot.out'"

git -C "$repo" update-ref refs/heads/master "$push"
run push
check "the broken test is blamed on its commit, by booting" \
	grep -q "\"culprit\": \"$culprit\", \"target\": \"$t\", \"kind\": \"boot-test-fail\"" "$scratch/push.json"
check "as that test's failure" grep -q '"title": "kunit/cmdline/cmdline_test_range: fail"' "$scratch/push.json"
check "no innocent commit is blamed" test "$(culprits "$scratch/push.json")" -eq 1
check "the known failure is not a finding" sh -c "! grep -q 'example_known_failure' '$scratch/push.json'"
check "but the head's job says it was there before" test "$(sqlite3 "$state/zeroday.db" \
	"SELECT count(*) FROM jobs WHERE commit_id = '$push' AND result = 'known-failure'
	 AND last_error LIKE '%kunit/example/example_known_failure: fail: 2/2 boots, and 2/2 at ${first%${first#????????????}}%'")" -eq 1

z outbox --json | sed 's/}, {/\n/g' > "$scratch/outbox.json"
mail=$(grep '"kind": "report"' "$scratch/outbox.json" | head -1 | sed -n 's/.*"path": "\([^"]*\)".*/\1/p')
sed 's/^/# /' "$mail" 2>/dev/null | sed -n '1,60p'
check "one report is mailed" test "$(grep -c '"kind": "report"' "$scratch/outbox.json")" -eq 1
check "it names the test the commit breaks" \
	sh -c "test -f '$mail' && tr '\n' ' ' < '$mail' | grep -q 'makes test kunit/cmdline/cmdline_test_range fail'"
check "with the test's KTAP lines" sh -c "grep -q 'Expected' '$mail' && grep -q 'not ok kunit/cmdline/cmdline_test_range' '$mail'"
check "and how to run it alone" grep -q 'kunit.filter_glob=cmdline.cmdline_test_range' "$mail"
tap_end
