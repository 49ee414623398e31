#!/bin/sh
# bench/poll: poll 200 subscribed, unchanged trees served by git daemon,
# against a shell loop of `git ls-remote` over the same URLs (the baseline,
# measured in the same run); then one new commit in one tree.
#
# usage: bench/poll.sh ZERODAY [TREES]

set -eu
zd=${1:?usage: bench/poll.sh ZERODAY [TREES]}
trees=${2:-200}
rounds=3
work=$(mktemp -d "${TMPDIR:-/tmp}/zeroday-bench-XXXXXX")
export HOME="$work/home" GIT_CONFIG_NOSYSTEM=1
mkdir -p "$HOME" "$work/served"
cleanup() {
	kill "$(cat "$work/daemon.pid" 2>/dev/null)" 2>/dev/null || :
	rm -rf "$work"
}
trap cleanup EXIT

. "$(dirname "$0")/lib.sh"

# Fixture: a shared history of 50 commits, and one unique commit per tree.
base="$work/base"
git init -q -b master "$base"
for i in $(seq 1 50); do
	echo "$i" > "$base/f.c"
	git -C "$base" add f.c
	git -C "$base" commit -q -m "base $i"
done
for i in $(seq 1 "$trees"); do
	cp -r "$base" "$work/served/t$i"
	echo "$i" > "$work/served/t$i/own.c"
	git -C "$work/served/t$i" add own.c
	git -C "$work/served/t$i" commit -q -m "tree $i"
done

port=$((30000 + $$ % 20000))
git daemon --reuseaddr --export-all --listen=127.0.0.1 --port=$port --max-connections=64 \
	--base-path="$work/served" --pid-file="$work/daemon.pid" "$work/served" \
	>"$work/daemon.log" 2>&1 &
for _ in $(seq 1 20); do
	git ls-remote "git://127.0.0.1:$port/t1" >/dev/null 2>&1 && break
	sleep 0.25
done

z() { "$zd" --state-dir="$work/state" "$@"; }
z init >/dev/null
for i in $(seq 1 "$trees"); do
	z tree add "t$i" "git://127.0.0.1:$port/t$i" >/dev/null
done
t0=$(now)
z poll >/dev/null
t1=$(now)
echo "first poll of $trees trees (fetches everything): $(elapsed "$t0" "$t1") s"

printf '[git]\npoll-jobs = 1\n' > "$work/serial.conf"
zt="" st="" lt=""
for _ in $(seq 1 $rounds); do
	t0=$(now)
	z poll >"$work/poll.out"
	t1=$(now)
	zt="$zt $(elapsed "$t0" "$t1")"
	grep -q "unchanged" "$work/poll.out" || { echo "poll was not a no-op" >&2; exit 1; }
	grep -qv "unchanged" "$work/poll.out" && { echo "poll was not a no-op" >&2; exit 1; }
	t0=$(now)
	z --config="$work/serial.conf" poll >/dev/null
	t1=$(now)
	st="$st $(elapsed "$t0" "$t1")"
	t0=$(now)
	for i in $(seq 1 "$trees"); do
		git ls-remote "git://127.0.0.1:$port/t$i" >/dev/null
	done
	t1=$(now)
	lt="$lt $(elapsed "$t0" "$t1")"
done
# shellcheck disable=SC2086
zbest=$(best $zt)
# shellcheck disable=SC2086
lbest=$(best $lt)
# shellcheck disable=SC2086
sbest=$(best $st)
echo "unchanged poll of $trees trees (best of $rounds): zeroday ${zbest} s" \
	"(8 connections at once), ${sbest} s (one at a time); git ls-remote loop ${lbest} s"
echo "ratio zeroday/ls-remote-loop: $(ratio "$zbest" "$lbest")"
echo "ratio zeroday-one-at-a-time/ls-remote-loop: $(ratio "$sbest" "$lbest")"

echo 1 > "$work/served/t1/new.c"
git -C "$work/served/t1" add new.c
git -C "$work/served/t1" commit -q -m "one new commit"
t0=$(now)
z poll >"$work/poll.out"
t1=$(now)
onet=$(elapsed "$t0" "$t1")
grep -q "queued 1 commit" "$work/poll.out" || { echo "the new commit was not selected" >&2; exit 1; }
echo "poll with one new commit in one tree: ${onet} s"
echo "ratio one-new-commit/unchanged poll: $(ratio "$onet" "$zbest")"
