#!/bin/sh
# zeroday run: poll, build every selected commit, record findings with
# their culprits; dedupe on a second run; resume after kill -9 with every
# job completed once and the same findings; stop on SIGTERM. Speaks TAP.
test_name=run
. "$ZERODAY_SRCDIR/tests/lib.sh"

# The history: a root with an old warning, a new warning, an innocent
# change, and an error under defconfig.
kb="$scratch/kb"
kbuild_repo "$kb" root
sed -i 's/int ready = 1;/int ready = 1;\n\tint fresh;/' "$kb/src/net.c"
git -C "$kb" commit -q -am "net: an unused variable"
warn=$(git -C "$kb" rev-parse HEAD)
echo "/* innocent */" >> "$kb/src/main.c"
git -C "$kb" commit -q -am "main: innocent"
sed -i 's/return ready - 1;/undeclared_counter++;\n\treturn ready - 1;/' "$kb/src/net.c"
git -C "$kb" commit -q -am "net: broken"
err=$(git -C "$kb" rev-parse HEAD)
printf '[zeroday]\nworkers = 2\n[git]\nallow-local-trees = true\n' > "$scratch/z.conf"

setup() { # setup STATE
	"$ZERODAY" --config="$scratch/z.conf" --state-dir="$1" init >/dev/null &&
	"$ZERODAY" --config="$scratch/z.conf" --state-dir="$1" tree add kb "$kb" master \
		--target x86_64:defconfig >/dev/null
}
z() { state=$1; shift; "$ZERODAY" --config="$scratch/z.conf" --state-dir="$state" "$@"; }
# The findings as sorted "culprit kind fingerprint" lines.
findings() {
	z "$1" status --json | sed 's/}, {/\n/g' | sed -n \
		's/.*"culprit": "\([0-9a-f]*\)".*"kind": "\([a-z-]*\)", "fingerprint": "\([0-9a-f]*\)".*/\1 \2 \3/p' |
		sort
}
jobs_json() { z "$1" status --json | sed -n 's/.*"jobs": \({[^}]*}\).*/\1/p'; }

a="$scratch/a"
setup "$a"
check "run --once builds the queue dry" z "$a" run --once --poll-interval 3600
findings "$a" > "$scratch/a.findings"
check "two findings" test "$(wc -l < "$scratch/a.findings")" -eq 2
check "the warning's culprit" grep -q "^$warn build-warning " "$scratch/a.findings"
check "the error's culprit" grep -q "^$err build-error " "$scratch/a.findings"
check "no finding blames the root or the innocent commit" \
	test "$(cut -d' ' -f1 "$scratch/a.findings" | sort -u | wc -l)" -eq 2
check "every job done" test "$(jobs_json "$a")" = '{"queued": 0, "running": 0, "done": 4}'
z "$a" status > "$scratch/a.status"
check "status lists the findings" grep -q "Findings: 2" "$scratch/a.status"

# Two trees, two workers: both work at once (jobs of one tree wait for
# each other: they share its work tree), and every job is
# done once.
p="$scratch/p"
setup "$p"
z "$p" tree add kb2 "$kb" master --target x86_64:defconfig >/dev/null
z "$p" run --once --poll-interval 3600 > "$scratch/p.log" 2>&1
check "two trees on two workers" test $? -eq 0
check "both workers ran jobs" sh -c "grep -q ':[0-9]*\.1)\$' '$scratch/p.log' && grep -q ':[0-9]*\.2)\$' '$scratch/p.log'"
check "every job of both trees done once" \
	test "$(jobs_json "$p")" = '{"queued": 0, "running": 0, "done": 8}'
check "each job ran once" test "$(grep -c ': build kb' "$scratch/p.log")" -eq 8
findings "$p" > "$scratch/p.findings"
check "the same two culprits (a finding per culprit, however many trees)" \
	cmp -s "$scratch/a.findings" "$scratch/p.findings"

# A second run finds nothing new and records nothing twice.
check "second run" z "$a" run --once --poll-interval 3600
findings "$a" > "$scratch/a2.findings"
check "findings deduplicated" cmp -s "$scratch/a.findings" "$scratch/a2.findings"
check "no job twice" test "$(jobs_json "$a")" = '{"queued": 0, "running": 0, "done": 4}'

# kill -9 in the middle of a job, then resume.
b="$scratch/b"
setup "$b"
# The binary itself in the background, so that $! is zeroday, not a subshell.
"$ZERODAY" --config="$scratch/z.conf" --state-dir="$b" run --poll-interval 3600 --lease 5 \
	> "$scratch/b.log" 2>&1 &
pid=$!
running=""
for _ in $(seq 1 600); do
	case $(jobs_json "$b") in *'"running": 1'*) running=yes; break ;; esac
	sleep 0.1
done
kill -9 "$pid"
wait "$pid" 2>/dev/null
status=$?
check "a job was running when killed" test -n "$running"
check "zeroday itself died of SIGKILL" test "$status" -eq 137
# And again, several times, at random points of whatever it is doing then.
for delay in $(awk 'BEGIN { srand(); for (i = 0; i < 4; i++) printf "%.2f ", 0.1 + rand() * 1.5 }'); do
	"$ZERODAY" --config="$scratch/z.conf" --state-dir="$b" run --poll-interval 3600 --lease 5 \
		>> "$scratch/b.log" 2>&1 &
	pid=$!
	sleep "$delay"
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	echo "# killed after ${delay}s"
done
check "resume after kill -9" z "$b" run --once --poll-interval 3600
check "every job done once after the crash" \
	test "$(jobs_json "$b")" = '{"queued": 0, "running": 0, "done": 4}'
findings "$b" > "$scratch/b.findings"
check "the same findings as without the crash" cmp -s "$scratch/a.findings" "$scratch/b.findings"

# A non-rebasable tree: only heads are built; what a head adds since the
# last tested head is bisected to its culprit.
nr="$scratch/nr"
kbuild_repo "$nr" root
d="$scratch/d"
"$ZERODAY" --config="$scratch/z.conf" --state-dir="$d" init >/dev/null
z "$d" tree add nr "$nr" master --non-rebasable --target x86_64:defconfig >/dev/null
check "first head" z "$d" run --once --poll-interval 3600
for i in 1 2 3 4 5 6; do
	if [ "$i" -eq 3 ]; then
		sed -i 's/int ready = 1;/int ready = 1;\n\tint fresh;/' "$nr/src/net.c"
		git -C "$nr" commit -q -am "net: the culprit"
		culprit=$(git -C "$nr" rev-parse HEAD)
	else
		echo "/* $i */" >> "$nr/src/main.c"
		git -C "$nr" commit -q -am "main: innocent $i"
	fi
done
z "$d" run --once --poll-interval 3600 > "$scratch/d.log" 2>&1
check "second head" test $? -eq 0
findings "$d" > "$scratch/d.findings"
check "one finding, bisected to the culprit in the middle" \
	test "$(cut -d' ' -f1,2 "$scratch/d.findings")" = "$culprit build-warning"
check "the bisection built the commits in between" grep -q "bisect .* bad" "$scratch/d.log"
check "only heads were queued" test "$(jobs_json "$d")" = '{"queued": 0, "running": 0, "done": 2}'
z "$d" status --json | sed 's/}, {/\n/g' > "$scratch/d.json"
check "the culprit was verified by reverting it on the head" \
	grep -q '"bisect_log": ".*[0-9a-f]\{40\} good 0/1 (the head with the culprit reverted)' "$scratch/d.json"

# A force-push: the last tested head is not an ancestor of the new one. As
# git bisect does, the merge base is tested before the range is bisected.
old_head=$culprit
git -C "$nr" checkout -q -B master "$(git -C "$nr" rev-list --max-parents=0 HEAD)"
echo "/* a */" >> "$nr/src/main.c"
git -C "$nr" commit -q -am "main: innocent a"
sed -i 's/return ready - 1;/undeclared_counter++;\n\treturn ready - 1;/' "$nr/src/net.c"
git -C "$nr" commit -q -am "net: the culprit after the force-push"
culprit2=$(git -C "$nr" rev-parse HEAD)
for i in b c; do
	echo "/* $i */" >> "$nr/src/main.c"
	git -C "$nr" commit -q -am "main: innocent $i"
done
z "$d" run --once --poll-interval 3600 > "$scratch/d2.log" 2>&1
check "the force-pushed head" test $? -eq 0
z "$d" status --json | sed 's/}, {/\n/g' > "$scratch/d2.json"
check "the merge base was tested first" grep -q "(merge base)" "$scratch/d2.json"
check "the new error is bisected to its commit" \
	grep -q "\"culprit\": \"$culprit2\", .*\"kind\": \"build-error\".*\"state\": \"open\"" "$scratch/d2.json"
check "the old warning is not blamed on the new history" \
	test "$(grep -c '"kind": "build-warning"' "$scratch/d2.json")" -eq 1

# The error fixed, then a force-push back onto the culprit, dropping the
# fix: the merge base already shows the error, so no commit of the new
# range can be blamed, and none is.
sed -i '/undeclared_counter++;/d' "$nr/src/net.c"
git -C "$nr" commit -q -am "net: fix the error"
z "$d" run --once --poll-interval 3600 > "$scratch/d3.log" 2>&1
check "the fixing head" test $? -eq 0
git -C "$nr" checkout -q -B master "$culprit2"
echo "/* d */" >> "$nr/src/main.c"
git -C "$nr" commit -q -am "main: innocent d"
dropped=$(git -C "$nr" rev-parse HEAD)
z "$d" run --once --poll-interval 3600 > "$scratch/d4.log" 2>&1
check "the head that drops the fix" test $? -eq 0
z "$d" status --json | sed 's/}, {/\n/g' > "$scratch/d4.json"
check "the error is back, but not bisected past its merge base" \
	grep -q "\"culprit\": \"$dropped\", .*\"state\": \"inconclusive\".*predates this range" "$scratch/d4.json"
check "no innocent commit is blamed" \
	test "$(grep -o '"culprit": "[0-9a-f]*"' "$scratch/d4.json" | sort -u | tr -d '\n')" = \
	"$(printf '"culprit": "%s"\n' "$old_head" "$culprit2" "$dropped" | sort | tr -d '\n')"

# A later push without the error: its finding is fixed, and the fixing
# commit under the push's innocent ones is found by bisection.
sed -i '/undeclared_counter++;/d' "$kb/src/net.c"
git -C "$kb" commit -q -am "net: fix the build"
fix=$(git -C "$kb" rev-parse HEAD)
for i in 1 2 3; do
	echo "/* after the fix $i */" >> "$kb/src/main.c"
	git -C "$kb" commit -q -am "main: innocent after the fix $i"
done
check "the fixing push" z "$a" run --once --poll-interval 3600
z "$a" status --json | sed 's/}, {/\n/g' > "$scratch/a3.json"
check "the error is fixed by the fixing commit" \
	grep -q "\"culprit\": \"$err\".*\"state\": \"fixed\", .*\"fixed_by\": \"$fix\"" "$scratch/a3.json"
check "the warning stays open" grep -q "\"culprit\": \"$warn\".*\"state\": \"open\"" "$scratch/a3.json"

# SIGTERM stops the daemon cleanly.
c="$scratch/c"
setup "$c"
"$ZERODAY" --config="$scratch/z.conf" --state-dir="$c" run --poll-interval 3600 \
	> "$scratch/c.log" 2>&1 &
pid=$!
# Once it works on a job, its signal handlers are in place.
for _ in $(seq 1 600); do
	case $(jobs_json "$c") in *'"running": 1'*) break ;; esac
	sleep 0.1
done
kill -TERM "$pid"
wait "$pid"
status=$?
check "SIGTERM: clean exit" test "$status" -eq 0
check "SIGTERM: the job in progress was completed, not abandoned" \
	test "$(jobs_json "$c" | sed -n 's/.*"running": \([0-9]*\).*/\1/p')" -eq 0

tap_end
