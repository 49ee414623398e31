#!/bin/sh
# One report per culprit, whatever the targets it breaks: a commit of the
# kbuild-like fixture tree adds an error that shows on both of the tree's
# targets (x86_64:defconfig and x86_64:allnoconfig) and a warning where
# CONFIG_NET is not set, which only allnoconfig builds. The head's first target to end
# leaves its report to the last ("waits for the other targets"); one mail
# names the other target ("also on"), shows the error once and says where
# the warning shows; the fix gets one follow-up. Speaks TAP.
test_name=report-targets
. "$ZERODAY_SRCDIR/tests/lib.sh"

kb="$scratch/kb"
kbuild_repo "$kb" root
root=$(git -C "$kb" rev-parse HEAD)
sed -i 's/return ready - 1;/undeclared_thing++;\n\treturn ready - 1;/' "$kb/src/net.c"
sed -i 's/int ready = 1;/int ready = 1;\n#ifndef CONFIG_NET\n\tint only_net;\n#endif/' "$kb/src/net.c"
GIT_AUTHOR_NAME="Ann Author" GIT_AUTHOR_EMAIL=ann@example.com \
	git -C "$kb" commit -q -am "net: count things" -m "Signed-off-by: Ann Author <ann@example.com>"
culprit=$(git -C "$kb" rev-parse HEAD)
echo "/* innocent */" >> "$kb/src/main.c"
git -C "$kb" commit -q -am "main: innocent"
head=$(git -C "$kb" rev-parse HEAD)

printf '[git]\nallow-local-trees = true\n[mail]\naddress = bot@example.org\n' > "$scratch/z.conf"
z() { "$ZERODAY" --config="$scratch/z.conf" --state-dir="$scratch/state" "$@"; }
sql() { sqlite3 "$scratch/state/zeroday.db" "$1"; }
z init > /dev/null
z tree add kb "$kb" master --non-rebasable --target x86_64:defconfig \
	--target x86_64:allnoconfig --list "Tree List <list@example.org>" > /dev/null
git -C "$kb" update-ref refs/heads/master "$root"
z run --once --poll-interval 3600 --workers 1 > "$scratch/run1.log" 2>&1
check "the root builds clean on both targets" test "$(sql "SELECT count(*) FROM findings")" -eq 0
git -C "$kb" update-ref refs/heads/master "$head"
z run --once --poll-interval 3600 --workers 1 > "$scratch/run2.log" 2>&1
check "zeroday run tests the new head" test $? -eq 0
sed 's/^/# /' "$scratch/run2.log" | grep -E 'finding|report|waits' | head -20

check "two findings, one culprit: the error, on both targets, and the warning, on allnoconfig" \
	test "$(sql "SELECT group_concat(kind || '@' || target || '+' || coalesce(also, ''), ' ')
		FROM (SELECT kind, target, also FROM findings WHERE culprit = '$culprit' ORDER BY kind)")" = \
	"build-error@x86_64:defconfig+x86_64:allnoconfig build-warning@x86_64:allnoconfig+"
z status > "$scratch/status"
check "status: the error, also on allnoconfig" grep -q "undeclared_thing.* (also on x86_64:allnoconfig)" "$scratch/status"
check "status --json: also_on" sh -c 'z() { "$ZERODAY" --config="$1" --state-dir="$2" status --json; }; z "$@" |
	grep -q "\"also_on\": \[\"x86_64:allnoconfig\"\]"' - "$scratch/z.conf" "$scratch/state"
check "the first target to end left the report to the last" \
	grep -q "report of ${culprit%"${culprit#????????????}"} waits for the other targets of ${head%"${head#????????????}"}" \
	"$scratch/run2.log"
check "one report for both" test "$(sql "SELECT count(*) FROM outbox WHERE kind = 'report'")" -eq 1
check "the error's, which carries the warning" \
	test "$(sql "SELECT count(*) FROM findings WHERE report_finding IS NOT NULL AND kind = 'build-warning'")" -eq 1
mail=$(sql "SELECT path FROM outbox WHERE kind = 'report'")
check "it was delivered" test -f "$mail"
lead=$(sed -n 's/^target:   x86_64, \([a-z]*\) (the config is attached)$/x86_64:\1/p' "$mail")
other=x86_64:allnoconfig
check "its target is the first to show the error: defconfig, built first by one worker" \
	test "$lead" = x86_64:defconfig
check "it names the other target: also on $other" grep -q "^also on:  $other\$" "$mail"
check "the error, once, though it shows on both" \
	test "$(grep -c "^>> src/net.c:[0-9]*:[0-9]*: error: 'undeclared_thing' undeclared" "$mail")" -eq 1
check "the warning, once" \
	test "$(grep -c "^>> src/net.c:[0-9]*:[0-9]*: warning: unused variable 'only_net'" "$mail")" -eq 1
check "the warning says where it shows: only on allnoconfig" \
	sh -c 'grep -A1 "warning: unused variable .only_net." "$1" | grep -q "^   (only on x86_64:allnoconfig)\$"' \
	- "$mail"
check "under one heading for both" grep -q '^The 1 new error and 1 new warning:$' "$mail"

# The fix, on top: every finding of the report is fixed, on both
# targets; one follow-up in its thread.
git -C "$kb" revert --no-edit "$culprit" > /dev/null
z run --once --poll-interval 3600 --workers 1 > "$scratch/run3.log" 2>&1
check "the fix closes both findings" \
	test "$(sql "SELECT count(*) FROM findings WHERE state = 'fixed'")" -eq 2
check "one follow-up, not one a target" \
	test "$(sql "SELECT count(*) FROM outbox WHERE kind = 'fixed'")" -eq 1

tap_end
