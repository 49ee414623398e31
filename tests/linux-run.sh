#!/bin/sh
# zeroday run end to end on the real Linux tree, a non-rebasable tree over
# git daemon: push 1 hides a build error under nine innocent commits; push
# 2 reverts it and hides a boot panic under nine more; push 3 reverts the
# panic; push 4 hides a panic that shows in about seven boots of eight
# under three innocent commits; push 5 adds three new branches, one
# with its own intermittent panic, one that carries push 4's, one whose
# head panics in every boot. Each culprit is bisected by building (and
# booting) the commits in between and verified by reverting it on the
# head; each fix is found. The boots and builds of each push are printed.
# Speaks TAP.
# The state directory's build and source trees persist in the test cache,
# so reruns build incrementally.
test_name=linux-run
. "$ZERODAY_SRCDIR/tests/lib.sh"
. "$ZERODAY_SRCDIR/tests/linux-lib.sh"
export GIT_INDEX_FILE="$scratch/index"
# flaky_panic PARENT TEXT MESSAGE: a commit on PARENT whose kernel panics
# with "zeroday: TEXT" in about seven boots of eight (the kernel's own random
# numbers decide), on push 3's init/main.c; prints it.
flaky_panic() {
	git -C "$repo" show "$push3:init/main.c" |
		awk -v text="$2" '{ print } /^\trcu_end_inkernel_boot\(\);$/ {
			print "\tif (get_random_u32() % 8)"
			print "\t\tpanic(\"zeroday: " text "\");" }' > "$scratch/file"
	commit_file "$1" init/main.c "$scratch/file" "$3"
}
# Push 1: a build error, under nine innocent commits.
git -C "$repo" show "$base:kernel/exit.c" > "$scratch/file"
printf '\nint zd_broken(void);\nint zd_broken(void)\n{\n\treturn zd_undeclared;\n}\n' >> "$scratch/file"
err=$(commit_file "$base" kernel/exit.c "$scratch/file" "exit: the build culprit")
push1=$(innocent "$err" 9)
# Push 2: the error reverted, then a boot panic under nine innocent commits.
git -C "$repo" show "$base:kernel/exit.c" > "$scratch/file"
revert=$(commit_file "$push1" kernel/exit.c "$scratch/file" "Revert the build culprit")
git -C "$repo" show "$revert:init/main.c" |
	awk '{ print } /^static int __ref kernel_init\(void \*unused\)$/ { k = 1 }
	     k && /^\tint ret;$/ { print "\tpanic(\"zeroday: a boot panic for the test\");"; k = 0 }' \
	> "$scratch/file"
culprit=$(commit_file "$revert" init/main.c "$scratch/file" "init: the boot culprit")
push2=$(innocent "$culprit" 9)
# Push 3: the panic reverted, under two innocent commits.
git -C "$repo" show "$revert:init/main.c" > "$scratch/file"
unpanic=$(commit_file "$push2" init/main.c "$scratch/file" "Revert the boot culprit")
push3=$(innocent "$unpanic" 2)
# Push 4: a panic in about seven boots of eight (the kernel's own random
# numbers decide), under three innocent commits.
flaky=$(flaky_panic "$push3" "a flaky boot panic for the test" "init: the flaky culprit")
push4=$(innocent "$flaky" 3)
# Push 5: two new branches. zd/topic leaves master at push 3 and brings
# its own panic, in about seven boots of eight, under an innocent commit;
# zd/carry leaves master at push 4 and only carries its flaky panic.
topic_base=$(innocent "$push3" 1)
topic_culprit=$(flaky_panic "$topic_base" "a flaky panic of a new branch" \
	"init: the new branch's culprit")
topic=$(innocent "$topic_culprit" 1)
carry=$(innocent "$push4" 1)
# zd/top leaves master at push 3 too: an innocent commit, then its head
# panics in every boot. The bisection's last rounds boot the head beside
# its parent, each in a thread of its own.
git -C "$repo" show "$push3:init/main.c" |
	awk '{ print } /^static int __ref kernel_init\(void \*unused\)$/ { k = 1 }
	     k && /^\tint ret;$/ { print "\tpanic(\"zeroday: a panic at the top of a branch\");"; k = 0 }' \
	> "$scratch/file"
git -C "$repo" show "$push3:kernel/panic.c" > "$scratch/file2"
echo "/* innocent, under the top culprit */" >> "$scratch/file2"
top_base=$(commit_file "$push3" kernel/panic.c "$scratch/file2" "panic: innocent, on its own branch")
top=$(commit_file "$top_base" init/main.c "$scratch/file" "init: the top culprit")
unset GIT_INDEX_FILE
check "the flaky culprit adds the panic" \
	sh -c "git -C '$repo' show '$flaky:init/main.c' | grep -q 'a flaky boot panic for the test'"
check "the new branch's culprit adds its panic" \
	sh -c "git -C '$repo' show '$topic_culprit:init/main.c' | grep -q 'a flaky panic of a new branch'"
check "the boot culprit adds the panic" \
	sh -c "git -C '$repo' show '$culprit:init/main.c' | grep -q 'a boot panic for the test'"
check "the top culprit adds its panic" \
	sh -c "git -C '$repo' show '$top:init/main.c' | grep -q 'a panic at the top of a branch'"

serve
fresh_store
# Two boot hosts of one slot each (two URIs of the local libvirtd, as two
# boot machines would be), so that the bisections' boots show spread over both.
printf '[boot]\nrepeat = 4\nhosts = qemu:///system*1;qemu:///system?socket=/run/libvirt/libvirt-sock*1\n' \
	> "$scratch/z.conf"
z() { "$ZERODAY" --config="$scratch/z.conf" --state-dir="$state" "$@"; }
z init >/dev/null
# push N HEAD: points master at HEAD and runs zeroday run --once (timed,
# for bench/e2e), leaving its log in pushN.log and the findings, one a
# line, in pushN.json.
push() {
	git -C "$repo" update-ref refs/heads/master "$2"
	since=$(date +%s)
	t0=$(date +%s.%N)
	z run --once --poll-interval 3600 > "$scratch/push$1.log" 2>&1
	check "push $1" test $? -eq 0
	t1=$(date +%s.%N)
	sed 's/^/# /' "$scratch/push$1.log" | grep -E "finding|bisect|predates|fixed" | head -40
	z status --json | sed 's/}, {/\n/g' > "$scratch/push$1.json"
	echo "# push $1: $(sqlite3 "$state/zeroday.db" "SELECT count(*) FROM boots WHERE created >= $since") boots, $(sqlite3 "$state/zeroday.db" "SELECT count(*) FROM builds WHERE created >= $since") builds"
}
git -C "$repo" update-ref refs/heads/master "$base"
z tree add linux "git://127.0.0.1:$port/linux.git" master 'zd/*' --non-rebasable \
	--target x86_64:tinyconfig+serial >/dev/null
z run --once --poll-interval 3600 > "$scratch/first.log" 2>&1
check "the first head" test $? -eq 0
check "its boots were conclusive" sh -c "! grep -q 'infrastructure' '$scratch/first.log'"

push 1 "$push1"
check "the build error is blamed on its commit, under nine innocent ones" \
	grep -q "\"culprit\": \"$err\", \"target\": \"x86_64:tinyconfig+serial\", \"kind\": \"build-error\"" \
	"$scratch/push1.json"

push 2 "$push2"
# For bench/e2e: the push-to-finding time against the builds and boots it
# ran, one after another, and with the boots spread over the 2 boot slots.
builds=$(sqlite3 "$state/zeroday.db" "SELECT coalesce(sum(seconds), 0) FROM builds WHERE created >= $since")
boots=$(sqlite3 "$state/zeroday.db" "SELECT coalesce(sum(seconds), 0) FROM boots WHERE created >= $since")
awk -v a="$t0" -v b="$t1" -v m="$builds" -v q="$boots" 'BEGIN {
	printf "# e2e: push to finding %.1f s; its builds %.1f s and boots %.1f s: one after another %.1f s, ratio %.2f; boots on 2 slots %.1f s, ratio %.2f\n", b - a, m, q, m + q, (b - a) / (m + q), m + q / 2, (b - a) / (m + q / 2) }'
check "the boot panic is blamed on its commit, under nine innocent ones" \
	grep -q "\"culprit\": \"$culprit\", \"target\": \"x86_64:tinyconfig+serial\", \"kind\": \"boot-panic\"" \
	"$scratch/push2.json"
check "with its title" grep -q 'Kernel panic - not syncing: zeroday: a boot panic for the test' \
	"$scratch/push2.json"
check "every culprit was verified by reverting it on the head" \
	test "$(grep -c 'good 0/[0-9]* (revert of ' "$scratch/push2.json")" -eq \
	"$(grep -c '"culprit"' "$scratch/push2.json")"
check "the panic's bisection started from the head's routine boots" \
	grep -q '"bisect_log": "[0-9a-f]* [a-z]* [0-9]*/[0-9]* (routine)' "$scratch/push2.json"
# A panic in every boot: a search round boots once (a second boot of the
# same commit would tell nothing), the revert check's rounds fill the slots.
check "and a round booted as many at once as there are boot slots" \
	grep -Eq '[0-9a-f]{40} (good|bad) [0-9]/2 \((search|boundary|revert of [0-9a-f]{40})\)' \
	"$scratch/push2.json"
# The bisection's boots: each round's boots on the two hosts.
sqlite3 "$state/zeroday.db" "SELECT b.host FROM boots b JOIN builds d ON d.id = b.build_id
	WHERE b.created >= $since AND d.commit_id <> '$push2'" | sort | uniq -c | sed 's/^/# boots on /'
check "the bisection's boots ran on both boot hosts" test "$(sqlite3 "$state/zeroday.db" \
	"SELECT count(DISTINCT b.host) FROM boots b JOIN builds d ON d.id = b.build_id
	 WHERE b.created >= $since AND d.commit_id <> '$push2'")" -eq 2
check "the build error is fixed, by the revert (bisected)" \
	grep -q "\"culprit\": \"$err\".*\"state\": \"fixed\", .*\"fixed_by\": \"$revert\"" "$scratch/push2.json"
check "no other commit is blamed" \
	test "$(grep -o '"culprit": "[0-9a-f]*"' "$scratch/push2.json" | sort -u | wc -l)" -eq 2

push 3 "$push3"
check "the panic is fixed once a head boots clean" \
	grep -q "\"culprit\": \"$culprit\".*\"state\": \"fixed\", .*\"fixed_by\": \"$push3\"" "$scratch/push3.json"
check "nothing new is blamed" \
	test "$(grep -o '"culprit": "[0-9a-f]*"' "$scratch/push3.json" | sort -u | wc -l)" -eq 2

# The mails of pushes 1 to 3: each finding's report, and its fixed
# follow-up in the report's thread, delivered to the outbox Maildir.
z outbox --json | sed 's/}, {/\n/g' > "$scratch/outbox.json"
# mail KIND PATTERN: the delivered file of the first mail of KIND whose
# outbox entry matches PATTERN.
mail() {
	grep "\"kind\": \"$1\"" "$scratch/outbox.json" | grep -e "$2" | head -1 |
		sed -n 's/.*"path": "\([^"]*\)".*/\1/p'
}
# subject FILE: a mail's Subject, unfolded.
subject() {
	awk '/^$/ { exit } /^Subject: / { s = substr($0, 10); on = 1; next }
	     on && /^[ \t]/ { sub(/^[ \t]+/, " "); s = s $0; next } { on = 0 } END { print s }' "$1"
}
err_mail=$(mail report "zd_undeclared")
panic_mail=$(mail report "a boot panic for the test")
check "the build error's report was mailed" test -f "$err_mail"
err_subject=$([ -f "$err_mail" ] && subject "$err_mail")
check "it blames the culprit, in the thread's subject" \
	sh -c 'expr "$1" : "$2" > /dev/null' - "$err_subject" \
	"\[linux:master\] kernel/exit.c:[0-9]*:[0-9]*: error: 'zd_undeclared' undeclared"
check "with the error, prefixed >>, and its source line" \
	sh -c "grep -q '^>> kernel/exit.c:[0-9]*:[0-9]*: error:' '$err_mail' && grep -q '^   > *[0-9]*		return zd_undeclared;' '$err_mail'"
check "the reproduce line and the tags: Reported-by, the culprit's Fixes:, no Closes: without an archive" \
	sh -c "grep -q '^        mkdir -p build && zcat config.gz > build/.config && make O=build ARCH=x86_64 olddefconfig && make O=build ARCH=x86_64 -j\\\$(nproc)\$' '$err_mail' && grep -q '^Reported-by: ' '$err_mail' && grep -q '^Fixes: $(echo "$err" | cut -c1-12) (\"' '$err_mail' && ! grep -q '^Closes:' '$err_mail'"
check "the boot panic's report was mailed, with its console and the revert-verified culprit's Fixes:" \
	sh -c "test -f '$panic_mail' && grep -q 'Kernel panic - not syncing: zeroday: a boot panic for the test' '$panic_mail' && grep -q '^commit:   $culprit\$' '$panic_mail' && grep -q '^Fixes: $(echo "$culprit" | cut -c1-12) (' '$panic_mail'"
check "the panic that showed in every boot is said to, never called partial" \
	sh -c "tr '\n' ' ' < '$panic_mail' | grep -q 'fail at boot, in every one of [0-9]* boots of the commits that carry it:' && ! grep -q 'now and then' '$panic_mail'"
for what in "zd_undeclared" "a boot panic for the test"; do
	report=$(grep '"kind": "report"' "$scratch/outbox.json" | grep -e "$what" | head -1 |
		sed -n 's/.*"message_id": "\([^"]*\)".*/\1/p')
	fixed=$(mail fixed "\"in_reply_to\": \"$report\"")
	check "its fix followed up in its thread: $what" \
		sh -c "test -n '$report' && test -f '$fixed' && grep -q '^In-Reply-To: <$report>\$' '$fixed'"
done

# A flaky failure: the bisection learns its rate as it goes, and the
# outcome is the culprit or an honest "inconclusive", never an innocent
# commit.
push 4 "$push4"
flaky_line=$(grep 'a flaky boot panic for the test' "$scratch/push4.json")
check "the flaky panic is found" test -n "$flaky_line"
case $flaky_line in
*"\"culprit\": \"$flaky\""*'"state": "open"'*) flaky_outcome=exact ;;
*'"state": "inconclusive"'*"one of "*"$flaky"*) flaky_outcome=inconclusive ;;
*) flaky_outcome=wrong ;;
esac
echo "# the flaky bisection: $flaky_outcome"
check "its culprit is exact, or the bisection is inconclusive and names it among the suspects" \
	test "$flaky_outcome" != wrong
printf '%s\n' "$flaky_line" > "$scratch/flaky.json"
check "its steps were repeated" \
	grep -Eq '\\n[0-9a-f]{40} (good|bad) [0-9]+/([2-9]|[1-9][0-9]+) \(' "$scratch/flaky.json"
check "the last tested head was shown clean of it, not taken as good" \
	grep -Eq "$push3 good 0/[0-9]+ \((routine|boundary)\)" "$scratch/flaky.json"
check "no innocent commit is blamed" \
	test -z "$(grep -v '"state": "inconclusive"' "$scratch/push4.json" |
		grep -o '"culprit": "[0-9a-f]*"' | grep -v -e "$err" -e "$culprit" -e "$flaky")"

# New branches are judged from where they left known ground, not from
# their parents: the fork point is booted, and what is new against it is
# bisected over the branch's own commits.
git -C "$repo" update-ref refs/heads/zd/topic "$topic"
git -C "$repo" update-ref refs/heads/zd/carry "$carry"
git -C "$repo" update-ref refs/heads/zd/top "$top"
push 5 "$push4"
check "the new branch is compared with its fork point" \
	grep -q "a new branch, from $(echo "$push3" | cut -c1-12)" "$scratch/push5.log"
topic_line=$(grep 'a flaky panic of a new branch' "$scratch/push5.json")
check "the new branch's own intermittent panic is reported" test -n "$topic_line"
case $topic_line in
*"\"culprit\": \"$topic_culprit\""*'"state": "open"'*) topic_outcome=exact ;;
*'"state": "inconclusive"'*"one of "*"$topic_culprit"*) topic_outcome=inconclusive ;;
*) topic_outcome=wrong ;;
esac
echo "# the new branch's bisection: $topic_outcome"
check "and bisected into the branch: its culprit, or honestly inconclusive" \
	test "$topic_outcome" != wrong
check "the branch that carries its fork point's panic gets no finding" \
	test -z "$(grep -o '"culprit": "[0-9a-f]*"' "$scratch/push5.json" | grep -e "$carry")"
check "its job says the failure was already there, and since where" \
	grep -q "known-failure: .*a flaky boot panic for the test.*$(echo "$push4" | cut -c1-12)" \
	"$scratch/push5.log"
check "the branch whose head panics blames its head" \
	grep -q "\"culprit\": \"$top\", \"target\": \"x86_64:tinyconfig+serial\", \"kind\": \"boot-panic\"" \
	"$scratch/push5.json"
# A round of two commits: the first boots in a thread of its own, beside
# the second's build and boots.
check "and a round's commits booted side by side" \
	grep -q "bisect [0-9a-f]* (search): [0-9a-f]* boots beside the round's next step" \
	"$scratch/push5.log"

tap_end
