#!/bin/sh
# zeroday run: poll, build every selected commit, record findings with
# their culprits; dedupe on a second run; resume after kill -9 with every
# job completed once and the same findings; infrastructure failures (no
# sandbox, a full disk) retried, never a verdict; stop on SIGTERM. Speaks TAP.
test_name=run
. "$ZERODAY_SRCDIR/tests/lib.sh"

# The history: a root with an old warning, a new warning ($warn), an
# innocent change, and an error under defconfig ($err).
kb="$scratch/kb"
kbuild_history "$kb"
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
# Each job's verdict, as "commit target result" lines.
results() { sqlite3 "$1/zeroday.db" "SELECT commit_id, target, result FROM jobs ORDER BY commit_id"; }
results "$a" > "$scratch/a.results"

# Infrastructure is never a verdict. The state directory lives on a small
# tmpfs. First the sandbox cannot start (no bwrap on PATH): every job is
# queued again with backoff, and status says why and when it is tried
# next; run --once leaves a waiting job queued. Then the disk is full: the
# store refuses every write, run --once exits 1 with the jobs still
# queued, and the daemon waits and goes on once there is space again.
# The jobs end as they did in the clean run.
inf="$scratch/inf"
mkdir -p "$inf"
if mount -t tmpfs -o size=64m,mode=0711 tmpfs "$inf" 2> "$scratch/inf.mount"; then
	trap 'umount -l "$inf" 2>/dev/null; cleanup' EXIT
	fs="$inf/state"
	setup "$fs"
	PATH="$scratch/no-such-bin" "$ZERODAY" --config="$scratch/z.conf" --state-dir="$fs" \
		run --once --poll-interval 3600 --retry-delay 4 > "$scratch/inf1.log" 2>&1
	check "no sandbox: run --once exits 0, leaving the jobs queued" test $? -eq 0
	check "no sandbox: no job done" \
		test "$(jobs_json "$fs")" = '{"queued": 4, "running": 0, "done": 0}'
	check "no sandbox: each job waits for its retry" grep -q "left queued: retry 1 at" "$scratch/inf1.log"
	z "$fs" status > "$scratch/inf1.status"
	check "status: waiting to retry" grep -q "^Jobs: 4 queued (4 waiting to retry)" "$scratch/inf1.status"
	check "status: attempts, next try and cause" \
		grep -q "^  retry kb [0-9a-f]\{12\} x86_64:defconfig: 1 of 8 attempts failed, next try at .*bwrap" \
		"$scratch/inf1.status"
	z "$fs" status --json > "$scratch/inf1.json"
	check "status --json: the waiting jobs" \
		grep -q '"retrying": \[{"id": [0-9]*, "tree": "kb", "commit": "[0-9a-f]\{40\}", "target": "x86_64:defconfig", "attempts": 1, "failures": 1, "next_try": [1-9][0-9]*, "result": null, "last_error": "[^"]*bwrap' \
		"$scratch/inf1.json"
	check "no finding from infrastructure" test -z "$(findings "$fs")"
	# The retry time an hour off, so that a loaded machine cannot reach it
	# before the next run does.
	sqlite3 "$fs/zeroday.db" "UPDATE jobs SET not_before = CAST(strftime('%s', 'now') AS INTEGER) + 3600
		WHERE state = 'queued'"
	z "$fs" run --once --poll-interval 3600 > "$scratch/inf2.log" 2>&1
	check "before the retry time: run --once exits at once" test $? -eq 0
	check "before the retry time: no job is claimed" test "$(grep -c ': build kb' "$scratch/inf2.log")" -eq 0
	sleep 4

	# A full disk (filled to the last page): the store cannot even open.
	fill() { dd if=/dev/zero of="$inf/filler" bs=1M 2> /dev/null; dd if=/dev/zero bs=4k 2> /dev/null >> "$inf/filler"; }
	queued_jobs() { sqlite3 "file:$fs/zeroday.db?immutable=1" "SELECT count(*) FROM jobs WHERE state = 'queued'"; }
	fill
	z "$fs" run --once --poll-interval 3600 > "$scratch/inf3.log" 2>&1
	check "disk full: run --once fails" test $? -eq 1
	check "disk full: it says so" grep -Eq "disk is full|disk I/O error" "$scratch/inf3.log"
	check "disk full: the jobs are still queued" test "$(queued_jobs)" -eq 4
	# The daemon waits for the store instead of exiting, and stops on SIGTERM.
	"$ZERODAY" --config="$scratch/z.conf" --state-dir="$fs" run --poll-interval 3600 \
		> "$scratch/inf4.log" 2>&1 &
	pid=$!
	for _ in $(seq 1 100); do
		grep -q "trying again in" "$scratch/inf4.log" && break
		sleep 0.1
	done
	check "disk full at start: the daemon waits" grep -q "trying again in" "$scratch/inf4.log"
	kill -TERM "$pid"
	wait "$pid"
	check "disk full at start: SIGTERM stops it cleanly" test $? -eq 0

	# The disk fills while the store is open (another reader holds it, so
	# the daemon opens it): every write fails, the daemon's workers log it,
	# wait and go on once there is space again. The retry time is now.
	rm -f "$inf/filler"
	sqlite3 "$fs/zeroday.db" "UPDATE jobs SET not_before = 0 WHERE state = 'queued'"
	mkfifo "$scratch/holder.in"
	sqlite3 "$fs/zeroday.db" < "$scratch/holder.in" > "$scratch/holder.out" &
	holder=$!
	exec 9> "$scratch/holder.in"
	echo "SELECT 'open' FROM jobs LIMIT 1;" >&9
	for _ in $(seq 1 100); do
		grep -q open "$scratch/holder.out" && break
		sleep 0.1
	done
	fill
	"$ZERODAY" --config="$scratch/z.conf" --state-dir="$fs" run --poll-interval 3600 \
		--retry-delay 1 > "$scratch/inf5.log" 2>&1 &
	pid=$!
	for _ in $(seq 1 300); do
		grep -q "disk is full; trying again in" "$scratch/inf5.log" && break
		sleep 0.1
	done
	check "disk full: a worker logs it and waits" \
		grep -q "worker .*: database.*disk is full; trying again in" "$scratch/inf5.log"
	sleep 2
	check "disk full: the daemon keeps running" kill -0 "$pid"
	rm -f "$inf/filler"
	for _ in $(seq 1 600); do
		[ "$(jobs_json "$fs")" = '{"queued": 0, "running": 0, "done": 4}' ] && break
		sleep 0.2
	done
	kill -TERM "$pid"
	wait "$pid"
	check "space back: the daemon finished the jobs and stopped cleanly" test $? -eq 0
	exec 9>&-
	wait "$holder"
	check "space back: every job done" \
		test "$(jobs_json "$fs")" = '{"queued": 0, "running": 0, "done": 4}'
	results "$fs" > "$scratch/inf.results"
	check "the same verdicts as the clean run" cmp -s "$scratch/a.results" "$scratch/inf.results"
	findings "$fs" > "$scratch/inf.findings"
	check "the same findings as the clean run" cmp -s "$scratch/a.findings" "$scratch/inf.findings"

	# Causes a retry cannot fix end a job in error at once, saying which:
	# a commit no longer in the store, a bad target.
	sqlite3 "$fs/zeroday.db" "INSERT INTO jobs (kind, tree_id, commit_id, target, priority, created)
		SELECT 'build', id, '0123456789abcdef0123456789abcdef01234567', 'x86_64:defconfig', 20, 0 FROM trees;
		INSERT INTO jobs (kind, tree_id, commit_id, target, priority, created)
		SELECT 'build', id, '$err', 'x86_64:nosuchconfig', 20, 0 FROM trees;"
	z "$fs" run --once --poll-interval 3600 > "$scratch/inf6.log" 2>&1
	check "permanent causes: run --once exits 0" test $? -eq 0
	check "permanent causes: both jobs done, none waiting" \
		test "$(jobs_json "$fs")" = '{"queued": 0, "running": 0, "done": 6}'
	z "$fs" status > "$scratch/inf6.status"
	check "permanent causes: a commit that is gone" \
		grep -q "^  error kb 0123456789ab x86_64:defconfig: commit 0123456789abcdef0123456789abcdef01234567 is no longer in the object store" \
		"$scratch/inf6.status"
	check "permanent causes: a bad target" \
		grep -q "^  error kb [0-9a-f]\{12\} x86_64:nosuchconfig: bad build target" "$scratch/inf6.status"
	check "permanent causes: tried once each" \
		test "$(sqlite3 "$fs/zeroday.db" "SELECT count(*) FROM jobs WHERE result = 'error' AND attempts = 1 AND failures = 0")" -eq 2
	umount -l "$inf"
	trap cleanup EXIT
else
	n=$((n + 1))
	echo "ok $n # SKIP cannot mount a tmpfs for the disk-full test: $(head -c 200 "$scratch/inf.mount")"
fi

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
	grep -q "\"bisect_log\": \".*[0-9a-f]\\{40\\} good 0/1 (revert of $culprit)" "$scratch/d.json"

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
check "the merge base was tested" grep -q "(boundary)" "$scratch/d2.json"
check "the new error is bisected to its commit" \
	grep -q "\"culprit\": \"$culprit2\", .*\"kind\": \"build-error\".*\"state\": \"open\"" "$scratch/d2.json"
check "the old warning is not blamed on the new history" \
	test "$(grep -c '"kind": "build-warning"' "$scratch/d2.json")" -eq 1

# The error fixed, then a force-push back onto the culprit, dropping the
# fix: the merge base already shows the error, so no commit of the new
# range can be blamed, and none is: the job says it predates the range.
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
check "the error is back, but predates the range" \
	grep -q "predates the range: $(echo "$culprit2" | cut -c1-12) has it" "$scratch/d4.log"
check "no innocent commit is blamed" \
	test "$(grep -o '"culprit": "[0-9a-f]*"' "$scratch/d4.json" | sort -u | tr -d '\n')" = \
	"$(printf '"culprit": "%s"\n' "$old_head" "$culprit2" | sort | tr -d '\n')"

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

# A job that zeroday died running 12 times (a crash it causes, say) ends
# in error instead of taking the daemon down again; the queue goes on.
j=$(sqlite3 "$c/zeroday.db" "SELECT id FROM jobs ORDER BY id LIMIT 1")
sqlite3 "$c/zeroday.db" "UPDATE jobs SET state = 'running', lease_owner = 'gone:1.1',
	lease_until = 1, attempts = 12, failures = 0, result = NULL, finished = NULL WHERE id = $j"
check "a job cut short 12 times: run --once goes on" z "$c" run --once --poll-interval 3600
check "and ends it in error, saying why" \
	test "$(sqlite3 "$c/zeroday.db" "SELECT state || '|' || result || '|' || last_error FROM jobs WHERE id = $j")" = \
	"done|error|cut short 12 times: zeroday died each time it ran this job (see the log for a crash)"

tap_end
