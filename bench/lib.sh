# bench/lib.sh: what the benchmarks share; sourced by each, after `set -eu`.
export GIT_AUTHOR_NAME=Bench GIT_AUTHOR_EMAIL=bench@example.org
export GIT_COMMITTER_NAME=Bench GIT_COMMITTER_EMAIL=bench@example.org

# now: the time, in seconds.
now() { date +%s.%N; }
# elapsed START END: the seconds between two now()s.
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
# ratio A B: A / B.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
# best TIMES...: the smallest, the usual way to read repeated timings.
best() { printf '%s\n' "$@" | sort -n | head -1; }

# one_file_commit REPO: in REPO, a bare clone of the imported Linux tree,
# a commit on master's that changes one line of kernel/panic.c (objects
# only, no ref moves); sets $base to master's commit and $one to the new one.
one_file_commit() {
	base=$(git -C "$1" rev-parse master)
	_blob=$(git -C "$1" show "$base:kernel/panic.c" |
		sed 's/^void panic(const char \*fmt, ...)$/\/* bench *\/\nvoid panic(const char *fmt, ...)/' |
		git -C "$1" hash-object -w --stdin)
	_index=$(mktemp "${TMPDIR:-/tmp}/zeroday-bench-index-XXXXXX")
	GIT_INDEX_FILE=$_index git -C "$1" read-tree "$base"
	GIT_INDEX_FILE=$_index git -C "$1" update-index --cacheinfo "100644,$_blob,kernel/panic.c"
	_tree=$(GIT_INDEX_FILE=$_index git -C "$1" write-tree)
	rm -f "$_index"
	one=$(git -C "$1" commit-tree "$_tree" -p "$base" -m "panic: a one-file change")
}

# import_linux CACHE WHAT: Debian's linux-source-6.1 imported into CACHE
# (tests/linux-import.sh), as tests/lib.sh's import_linux does for the
# tests. Without the package, WHAT is skipped, saying why, and the bench
# ends with status 0; an import that fails is the bench's failure, with
# the importer's last lines. Needs $srcdir and $work.
import_linux() {
	_st=0
	sh "$srcdir/tests/linux-import.sh" "$1" > "$work/import.log" 2>&1 || _st=$?
	if [ "$_st" -eq 77 ]; then
		echo "$2: skipped: linux-source-6.1 is not installed"
		exit 0
	elif [ "$_st" -ne 0 ]; then
		tail -20 "$work/import.log"
		echo "$2: importing linux-source-6.1 into $1 failed (status $_st)"
		exit 1
	fi
}
