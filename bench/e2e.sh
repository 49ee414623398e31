#!/bin/sh
# bench/e2e: the acceptance scenario (tests/e2e.sh: real Postfix, Dovecot,
# git daemon, libvirt/QEMU and linux-source-6.1, the daemon undisturbed,
# with one worker and one boot slot) timed: push to report, and post to
# reply, against the builds and boots run inside each (the rest is zeroday
# itself; the goals are 1.1 and 1.2 times); then linux-run.sh's push to
# finding, for a bisection under nine innocent commits.
#
# usage: bench/e2e.sh ZERODAY SRCDIR
set -eu
ZERODAY=${1:?usage: bench/e2e.sh ZERODAY SRCDIR}
ZERODAY_SRCDIR=${2:?usage: bench/e2e.sh ZERODAY SRCDIR}
export ZERODAY ZERODAY_SRCDIR
for t in e2e linux-run; do
	out=$(E2E_CHAOS=0 E2E_SERIAL=1 sh "$ZERODAY_SRCDIR/tests/$t.sh")
	printf '%s\n' "$out" | grep -q "^not ok" && { printf '%s\n' "$out"; exit 1; }
	printf '%s\n' "$out" | sed -n 's/^# e2e: //p'
done
