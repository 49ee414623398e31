#!/bin/sh
# Builds the libFuzzer targets in a clang tree of their own and runs them
# for a bounded time each. For `make fuzz` and tests/fuzz.sh.
#
#   run.sh build                  configure the clang tree (once) and build
#   run.sh replay TARGET          run TARGET on its kept crashes
#                                 (tests/fuzz/crashes/TARGET/): each must pass
#   run.sh fuzz TARGET            fuzz TARGET for FUZZ_SECONDS
#   run.sh all [TARGET...]        build, then replay and fuzz each (all: every target)
#
# Each target gets its dictionary, tests/fuzz/TARGET.dict (series: mail.dict).
#
# Environment: FUZZ_SRCDIR (the source tree), FUZZ_BUILDDIR (the clang
# tree), FUZZ_CORPUS (the corpora kept from run to run, one directory a
# target), FUZZ_SECONDS (default 300), FUZZ_JOBS (make -j; default: the
# processors). A target's summary line reads
#   fuzz-TARGET: N execs in S s, corpus C
# and run.sh exits non-zero when a target crashed, leaked, ran out of
# memory or took over 30 s on one input; the input is kept in
# FUZZ_CORPUS/crashes/.

set -u

: "${FUZZ_SRCDIR:?}" "${FUZZ_BUILDDIR:?}" "${FUZZ_CORPUS:?}"
FUZZ_SECONDS=${FUZZ_SECONDS:-300}
FUZZ_JOBS=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
targets_all="mail commands series console diag"

say() { printf '%s\n' "$*"; }

# The longest input each target is given: a mail (or a batch of them) may
# be large; a command body, a console or build log excerpt need less.
max_len() {
	case $1 in
	mail | series) echo 262144 ;;
	*) echo 65536 ;;
	esac
}

build() {
	mkdir -p "$FUZZ_BUILDDIR" || return 1
	log="$FUZZ_BUILDDIR/build.log"
	if [ ! -f "$FUZZ_BUILDDIR/Makefile" ]; then
		say "fuzz: configuring $FUZZ_BUILDDIR (CC=clang --enable-fuzzing)"
		if ! (cd "$FUZZ_BUILDDIR" && CC=clang "$FUZZ_SRCDIR/configure" -q --enable-fuzzing --disable-werror) \
			>"$log" 2>&1; then
			sed 's/^/fuzz: /' "$log" | tail -20
			return 1
		fi
	fi
	say "fuzz: building the fuzz targets in $FUZZ_BUILDDIR"
	if ! make -C "$FUZZ_BUILDDIR" -j"$FUZZ_JOBS" fuzz-programs >"$log" 2>&1; then
		sed 's/^/fuzz: /' "$log" | tail -40
		return 1
	fi
}

# The sanitizers as make check sets them, and libFuzzer's options.
export ASAN_OPTIONS=detect_leaks=1
export LSAN_OPTIONS="suppressions=$FUZZ_SRCDIR/tests/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

replay() {
	dir="$FUZZ_SRCDIR/tests/fuzz/crashes/$1"
	mkdir -p "$FUZZ_CORPUS" || return 1
	set -- "$FUZZ_BUILDDIR/tests/fuzz/fuzz-$1" "$dir"/*
	[ -e "$2" ] || return 0
	"$@" >"$FUZZ_CORPUS/replay.log" 2>&1 && return 0
	sed 's/^/fuzz: /' "$FUZZ_CORPUS/replay.log" | tail -40
	return 1
}

fuzz() {
	t=$1
	shift
	corpus="$FUZZ_CORPUS/$t"
	seeds="$FUZZ_CORPUS/seeds/$t"
	log="$FUZZ_CORPUS/$t.log"
	mkdir -p "$corpus" "$FUZZ_CORPUS/crashes" || return 1
	rm -rf "$seeds"
	"$FUZZ_SRCDIR/tests/fuzz/seeds.sh" "$t" "$seeds" || return 1
	dict=$FUZZ_SRCDIR/tests/fuzz/$t.dict
	[ "$t" = series ] && dict=$FUZZ_SRCDIR/tests/fuzz/mail.dict
	[ -f "$dict" ] && set -- -dict="$dict"
	start=$(date +%s)
	"$FUZZ_BUILDDIR/tests/fuzz/fuzz-$t" -max_total_time="$FUZZ_SECONDS" \
		-max_len="$(max_len "$t")" -rss_limit_mb=2048 -timeout=30 -print_final_stats=1 \
		-artifact_prefix="$FUZZ_CORPUS/crashes/$t-" "$@" "$corpus" "$seeds" >"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	secs=$(($(date +%s) - start))
	units=$(sed -n 's/^#[0-9].* corp: \([0-9]*\)\/.*/\1/p' "$log" | tail -1)
	say "fuzz-$t: ${execs:-0} execs in ${secs:-0} s, corpus ${units:-0}"
	[ "$rc" -eq 0 ] && return 0
	# What went wrong, and the input that did it.
	grep -E '^(==[0-9]+==|SUMMARY|.*runtime error|    #[0-9]+ |artifact_prefix|Test unit written|\*\*|GLib)' \
		"$log" | head -60 | sed 's/^/fuzz: /'
	return 1
}

case ${1:-} in
build) build ;;
replay) replay "$2" ;;
fuzz) fuzz "$2" ;;
all)
	shift
	[ $# -gt 0 ] || set -- $targets_all
	build || exit 1
	failed=0
	mkdir -p "$FUZZ_CORPUS"
	for t in "$@"; do
		if ! replay "$t"; then
			say "fuzz-$t: a kept crash (tests/fuzz/crashes/$t) fails again"
			failed=1
		fi
		fuzz "$t" || failed=1
	done
	exit $failed
	;;
*)
	say "usage: run.sh build | replay TARGET | fuzz TARGET | all [TARGET...]" >&2
	exit 2
	;;
esac
