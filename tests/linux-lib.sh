# The real-tree tests' common part, sourced after lib.sh by linux-run.sh,
# linux-arch.sh and linux-series.sh: Debian's linux-source-6.1 imported
# once into the test cache ($cache; the test is skipped without it), the
# state directory they share ($state, its source and build trees reused
# from run to run) taken for this test alone, and a scratch bare clone
# sharing the cache's objects ($repo, whose master is $base) to write a
# history into with plumbing: no work tree of 80,000 files.
cache_root=${ZERODAY_TEST_CACHE:-/var/cache/zeroday-test}
cache="$cache_root/linux-6.1"
state="$cache_root/run-state"
export GIT_AUTHOR_DATE=@1700000000 GIT_COMMITTER_DATE=@1700000000

import_linux "$cache"
# One test of the shared state directory at a time.
exec 8>"$cache_root/run-state.lock"
flock 8

repo="$scratch/linux.git"
git clone -q --bare --shared "$cache" "$repo"
base=$(git -C "$repo" rev-parse master)

# commit_file PARENT PATH FILE MESSAGE: a commit on PARENT whose PATH is
# FILE's text; prints it. Uses $GIT_INDEX_FILE, which the caller sets.
commit_file() {
	git -C "$repo" read-tree "$1"
	blob=$(git -C "$repo" hash-object -w "$3")
	git -C "$repo" update-index --cacheinfo "100644,$blob,$2"
	git -C "$repo" commit-tree "$(git -C "$repo" write-tree)" -p "$1" -m "$4"
}
# innocent PARENT N: N innocent commits on top (a comment each, in
# kernel/panic.c); prints the last.
innocent() {
	tip=$1
	for i in $(seq 1 "$2"); do
		git -C "$repo" show "$tip:kernel/panic.c" > "$scratch/file"
		echo "/* innocent $tip $i */" >> "$scratch/file"
		tip=$(commit_file "$tip" kernel/panic.c "$scratch/file" "panic: innocent $i")
	done
	echo "$tip"
}
# serve: $scratch served by a real git daemon on a free port, stopped at
# exit; the tree is at git://127.0.0.1:$port/linux.git.
serve() {
	port=$((40000 + $$ % 20000))
	git daemon --reuseaddr --export-all --listen=127.0.0.1 --port=$port \
		--base-path="$scratch" --pid-file="$scratch/daemon.pid" "$scratch" \
		> "$scratch/daemon.log" 2>&1 &
	for _ in $(seq 1 50); do
		git ls-remote "git://127.0.0.1:$port/linux.git" > /dev/null 2>&1 && break
		sleep 0.2
	done
	trap 'kill "$(cat "$scratch/daemon.pid" 2>/dev/null)" 2>/dev/null; cleanup' EXIT
}
# fresh_store: an empty store in $state, keeping its source and build trees.
fresh_store() {
	mkdir -p "$state"
	rm -f "$state/zeroday.db" "$state/zeroday.db-wal" "$state/zeroday.db-shm"
}
