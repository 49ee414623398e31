#!/bin/sh
# bench/slurm: the Slurm executor on the real Linux tree (linux-source-6.1,
# x86_64:tinyconfig+serial), on the private two-node cluster of
# tests/slurmcluster.sh, every figure a ratio against a baseline measured
# in the same run:
#   - an incremental step (a one-file commit after its parent), through
#     `zeroday run --once` on the Slurm executor against the same on the
#     local executor: the executor's overhead (export to the spool,
#     sbatch, the node's checkout, squeue, taking the result back);
#   - the first build of the tree on a second node (its O= directory and
#     its own ccache cold) with the shared compiler cache the first node
#     filled, against the same without it.
# Needs root (the cluster) and Slurm's packages; skips without them.
#
# usage: bench/slurm.sh ZERODAY SRCDIR
set -eu
zd=${1:?usage: bench/slurm.sh ZERODAY SRCDIR}
srcdir=${2:?usage: bench/slurm.sh ZERODAY SRCDIR}
target=x86_64:tinyconfig+serial
cache=${ZERODAY_TEST_CACHE:-/var/cache/zeroday-test}/linux-6.1
. "$srcdir/tests/slurmcluster.sh"
if [ "$(id -u)" -ne 0 ] || missing=$(sc_missing); then
	echo "slurm: skipped: needs root and Slurm's packages (${missing:-not root})"
	exit 0
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/zeroday-bench-slurm-XXXXXX")
chmod 0711 "$work"
mkdir -p "$work/states"
trap 'sc_stop "$work/sc"; rm -rf "$work"' EXIT
. "$(dirname "$0")/lib.sh"
unset ZERODAY_CONFIG

import_linux "$cache" "slurm build step"
sc_start "$work/sc" "$work/states" || { echo "slurm: the cluster did not start"; exit 1; }

# The tree: the imported commit, then a one-file change on top.
git clone -q --bare --shared "$cache" "$work/a.git"
one_file_commit "$work/a.git"
# Each state sees master at $base first, then at $one: a copy of the refs each.
tree_at() { git -C "$work/a.git" update-ref "refs/heads/$1" "$2"; }

# conf NAME EXECUTOR NODE-ROOT SHARED: a configuration.
conf() {
	printf '[git]\nallow-local-trees = true\n[build]\nexecutor = %s\n' "$2" > "$work/$1.conf"
	[ "$2" = local ] || printf '[slurm]\nspool = %s\nnode-root = %s/%%h\npoll = 1\nshared-ccache = %s\n' \
		"$work/spool" "$3" "$4" >> "$work/$1.conf"
}
z() { name=$1; shift; "$zd" --config="$work/$name.conf" --state-dir="$work/states/$name" "$@"; }
# run NAME: run --once, its seconds on stdout; fails when a job did not pass.
run() {
	t0=$(now)
	z "$1" run --once --poll-interval 3600 > "$work/$1.log" 2>&1 || { cat "$work/$1.log" >&2; return 1; }
	t1=$(now)
	if sqlite3 "$work/states/$1/zeroday.db" "SELECT result FROM jobs" | grep -qv '^pass$'; then
		cat "$work/$1.log" >&2
		return 1
	fi
	elapsed "$t0" "$t1"
}
# setup NAME BRANCH: the state, subscribed to BRANCH of the tree.
setup() {
	z "$1" init > /dev/null
	z "$1" tree add lx "$work/a.git" "$2" --target "$target" > /dev/null
}

conf local local "" ""
conf slurm slurm "$work/nodes-a" true
conf shared slurm "$work/nodes-b" true
conf unshared slurm "$work/nodes-c" false

# The incremental step, local and on the cluster: each builds $base cold
# first (not timed), then $one after it.
for e in local slurm; do
	tree_at "$e" "$base"
	setup "$e" "$e"
	run "$e" > /dev/null
	tree_at "$e" "$one"
	eval "inc_$e=\$(run $e)"
done
echo "slurm: incremental step (one-file commit), local executor: $inc_local s; Slurm executor: $inc_slurm s;" \
	"ratio Slurm/local: $(ratio "$inc_slurm" "$inc_local")"

# A second node's first build of the tree: node1 drained, so both go to
# node2, each into an empty node root; with the cache node1 filled, then
# without any.
scontrol update NodeName=node1 State=DRAIN Reason=bench
for e in shared unshared; do
	tree_at "$e" "$base"
	setup "$e" "$e"
	eval "first_$e=\$(run $e)"
done
scontrol update NodeName=node1 State=RESUME
echo "slurm: the tree's first build on a second node, with the shared cache: $first_shared s;" \
	"without: $first_unshared s; ratio shared/without: $(ratio "$first_shared" "$first_unshared")"
