#!/bin/sh
# bench/pool: `zeroday run --once` over 4 fixture trees of 6 new commits
# each (24 build jobs, each commit against its parent), with 2 workers
# against 1 worker (the baseline, measured in the same run). Each state
# starts empty, so both runs build the same jobs cold.
#
# usage: bench/pool.sh ZERODAY SRCDIR

set -eu
zd=${1:?usage: bench/pool.sh ZERODAY SRCDIR}
src=${2:?usage: bench/pool.sh ZERODAY SRCDIR}
work=$(mktemp -d "${TMPDIR:-/tmp}/zeroday-bench-XXXXXX")
chmod 0711 "$work"
export HOME="$work/home" GIT_CONFIG_NOSYSTEM=1
mkdir -p "$HOME"
trap 'rm -rf "$work"' EXIT

. "$(dirname "$0")/lib.sh"

printf '[git]\nallow-local-trees = true\n[build]\nccache = false\n' > "$work/z.conf"
for t in 1 2 3 4; do
	tree="$work/t$t"
	mkdir -p "$tree"
	cp -a "$src/tests/data/kbuild/." "$tree/"
	git -C "$tree" init -q -b master
	git -C "$tree" add -A
	git -C "$tree" commit -q -m root
	for i in 1 2 3 4 5 6; do
		echo "int tree${t}_v$i;" >> "$tree/src/main.c"
		git -C "$tree" commit -q -am "main: step $i"
	done
done

# run WORKERS: prints the seconds `zeroday run --once` took.
run() {
	state="$work/state-$1"
	"$zd" --config="$work/z.conf" --state-dir="$state" init >/dev/null
	for t in 1 2 3 4; do
		"$zd" --config="$work/z.conf" --state-dir="$state" tree add "t$t" "$work/t$t" master \
			--target x86_64:defconfig >/dev/null
	done
	# The poll (first fetch) is not what is measured: do it first.
	"$zd" --config="$work/z.conf" --state-dir="$state" poll >/dev/null
	t0=$(now)
	"$zd" --config="$work/z.conf" --state-dir="$state" run --once --poll-interval 3600 \
		--workers "$1" 2>/dev/null
	t1=$(now)
	elapsed "$t0" "$t1"
}

one=$(run 1)
two=$(run 2)
echo "24 build jobs in 4 trees: 1 worker $one s; 2 workers $two s; ratio $(ratio "$two" "$one")"
