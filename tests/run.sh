#!/bin/sh
# zeroday run: poll, build every selected commit, record findings with
# their culprits; dedupe on a second run; resume after kill -9 with every
# job completed once and the same findings; stop on SIGTERM. Speaks TAP.
set -u
: "${ZERODAY:?run through make check}"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/zeroday-run-XXXXXX")
chmod 0711 "$scratch"
trap '[ -n "${KEEP:-}" ] || rm -rf "$scratch"' EXIT
export HOME="$scratch/home" XDG_CONFIG_HOME="$scratch/home" XDG_STATE_HOME="$scratch/home"
export GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=A GIT_AUTHOR_EMAIL=a@example.org
export GIT_COMMITTER_NAME=C GIT_COMMITTER_EMAIL=c@example.org
unset ZERODAY_CONFIG
mkdir -p "$HOME"
n=0 failed=0
check() { # check DESCRIPTION COMMAND...
	desc=$1
	shift
	n=$((n + 1))
	if "$@"; then echo "ok $n - $desc"; else failed=1; echo "not ok $n - $desc"; fi
}

# The history: a root with an old warning, a new warning, an innocent
# change, and an error under defconfig.
kb="$scratch/kb"
mkdir -p "$kb"
cp -a "$ZERODAY_SRCDIR/tests/data/kbuild/." "$kb/"
git -C "$kb" init -q -b master && git -C "$kb" add -A && git -C "$kb" commit -q -m root
sed -i 's/int ready = 1;/int ready = 1;\n\tint fresh;/' "$kb/src/net.c"
git -C "$kb" commit -q -am "net: an unused variable"
warn=$(git -C "$kb" rev-parse HEAD)
echo "/* innocent */" >> "$kb/src/main.c"
git -C "$kb" commit -q -am "main: innocent"
sed -i 's/return ready - 1;/undeclared_counter++;\n\treturn ready - 1;/' "$kb/src/net.c"
git -C "$kb" commit -q -am "net: broken"
err=$(git -C "$kb" rev-parse HEAD)
printf '[git]\nallow-local-trees = true\n' > "$scratch/z.conf"

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
mkdir -p "$nr"
cp -a "$ZERODAY_SRCDIR/tests/data/kbuild/." "$nr/"
git -C "$nr" init -q -b master && git -C "$nr" add -A && git -C "$nr" commit -q -m root
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

# A later head without the error: its finding is fixed, by that head.
sed -i '/undeclared_counter++;/d' "$kb/src/net.c"
git -C "$kb" commit -q -am "net: fix the build"
fix=$(git -C "$kb" rev-parse HEAD)
check "the fixing head" z "$a" run --once --poll-interval 3600
z "$a" status --json | sed 's/}, {/\n/g' > "$scratch/a3.json"
check "the error is fixed by the new head" \
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

echo "1..$n"
exit $failed
