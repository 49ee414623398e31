#!/bin/sh
# The libFuzzer targets (tests/fuzz), a short run each: builds them in a
# clang tree beside this one (fuzz-build/, as `make fuzz` does), replays
# the crashes kept in tests/fuzz/crashes/, then fuzzes each target
# FUZZ_SECONDS (default 20) from its seeds and the corpus kept in
# fuzz-corpus/. A target fails when it crashes, leaks, runs out of memory
# or hangs; its exec count is a comment. Speaks TAP.

test_name=fuzz
. "$ZERODAY_SRCDIR/tests/lib.sh"

builddir=$(dirname "$ZERODAY")
export FUZZ_SRCDIR="$ZERODAY_SRCDIR" FUZZ_BUILDDIR="$builddir/fuzz-build"
export FUZZ_CORPUS="$builddir/fuzz-corpus" FUZZ_SECONDS="${FUZZ_SECONDS:-20}"
run="$ZERODAY_SRCDIR/tests/fuzz/run.sh"
# make check's sanitizer options are for gcc's runtime; run.sh sets clang's.
unset ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS

if ! command -v clang >/dev/null 2>&1; then
	echo "1..0 # SKIP clang is not installed (quickstart installs clang and libclang-rt-14-dev)"
	exit 0
fi

out=$("$run" build 2>&1)
if [ $? -eq 0 ]; then
	ok "the fuzz targets build with clang"
else
	not_ok "the fuzz targets build with clang"
	printf '%s\n' "$out" | sed 's/^/# /'
	tap_end
fi

for t in mail commands series console diag; do
	out=$("$run" replay "$t" 2>&1)
	check_rc=$?
	if [ -d "$ZERODAY_SRCDIR/tests/fuzz/crashes/$t" ]; then
		if [ $check_rc -eq 0 ]; then
			ok "fuzz-$t: the kept crashes pass"
		else
			not_ok "fuzz-$t: the kept crashes pass"
			printf '%s\n' "$out" | sed 's/^/# /'
		fi
	fi
	out=$("$run" fuzz "$t" 2>&1)
	rc=$?
	# The exec count in the result's name, so that the suite's output shows it.
	count=$(printf '%s\n' "$out" | sed -n "s/^fuzz-$t: //p" | head -1)
	if [ $rc -eq 0 ]; then
		ok "fuzz-$t: no crash in ${FUZZ_SECONDS} s (${count:-no count})"
	else
		not_ok "fuzz-$t: no crash in ${FUZZ_SECONDS} s (${count:-no count})"
		printf '%s\n' "$out" | grep -v "^fuzz-$t:" | sed 's/^/# /'
	fi
done

tap_end
