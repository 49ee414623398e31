#!/bin/sh
# bench/e2e: on the real Linux tree, the time from a push to its finding
# (zeroday run: poll, build and boot the head, bisect a boot panic under
# nine innocent commits by building and booting) against the sum of the
# builds and boots it ran, measured by tests/linux-run.sh in the same run.
#
# usage: bench/e2e.sh ZERODAY SRCDIR
set -eu
ZERODAY=${1:?usage: bench/e2e.sh ZERODAY SRCDIR}
ZERODAY_SRCDIR=${2:?usage: bench/e2e.sh ZERODAY SRCDIR}
export ZERODAY ZERODAY_SRCDIR
out=$(sh "$ZERODAY_SRCDIR/tests/linux-run.sh")
printf '%s\n' "$out" | grep -q "^not ok" && { printf '%s\n' "$out"; exit 1; }
printf '%s\n' "$out" | sed -n 's/^# e2e: //p'
