#!/bin/sh
# bench/parse: parse and classify 10,000 generated LKML-style mails
# (bench/gen-lkml.py) with mail/patchmail.c (bench/parse), against
# Python's standard email package on the same files (bench/parse-email.py,
# the baseline, measured in the same run). Both read the files into memory
# first and report the best of 3 timed runs; both print their counts of
# patch/cover/reply/other mails and of mails with a diff, which must agree:
# a difference over 2% is reported with the mails that differ, kept for
# inspection.
#
# usage: bench/parse.sh BUILDDIR SRCDIR [MAILS]

set -eu
build=${1:?usage: bench/parse.sh BUILDDIR SRCDIR [MAILS]}
src=${2:?usage: bench/parse.sh BUILDDIR SRCDIR [MAILS]}
mails=${3:-10000}
if ! command -v python3 >/dev/null 2>&1; then
	echo "parse: skipped: no python3 for the baseline"
	exit 0
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/zeroday-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT

python3 "$src/bench/gen-lkml.py" "$mails" "$work/mail"
"$build/bench/parse" --list="$work/zeroday.list" "$work/mail" >"$work/zeroday.out"
python3 "$src/bench/parse-email.py" --list="$work/python.list" "$work/mail" >"$work/python.out"
sed 's/^/parse: zeroday:      /' "$work/zeroday.out"
sed 's/^/parse: python email: /' "$work/python.out"

# count SIDE KEY: a count from a side's "kinds" line.
count() {
	awk -v k="$2" '$1 == "kinds" { for (i = 2; i < NF; i += 2) if ($i == k) print $(i + 1) }' \
		"$work/$1.out"
}
rate() { awk -v f="$2" '$1 == "best" { print $f }' "$work/$1.out"; }

differ=
for k in patch cover reply other diffs refused; do
	a=$(count zeroday "$k")
	b=$(count python "$k")
	if awk -v a="$a" -v b="$b" -v n="$mails" 'BEGIN { d = a - b; exit !(d * 50 > n || -d * 50 > n) }'; then
		differ="$differ $k (zeroday $a, python $b)"
	fi
done
# NAME KIND DIFF on both sides: the mails classified differently.
cut -d' ' -f1-3 "$work/zeroday.list" >"$work/z"
cut -d' ' -f1-3 "$work/python.list" >"$work/p"
LC_ALL=C join "$work/z" "$work/p" | awk '$2 != $4 || $3 != $5' >"$work/disagree"
echo "parse: mails classified alike: $((mails - $(wc -l <"$work/disagree")))/$mails"
if [ -n "$differ" ]; then
	keep=$(mktemp -d "${TMPDIR:-/tmp}/zeroday-bench-parse-differ-XXXXXX")
	head -20 "$work/disagree" | while read -r name zk zd pk pd; do
		cp "$work/mail/$name" "$keep/"
		reason=$(grep "^$name refused" "$work/zeroday.list" "$work/python.list" | cut -d' ' -f4- | head -1)
		echo "parse:   $name: zeroday $zk (diff $zd), python $pk (diff $pd)${reason:+: refused: $reason}"
	done
	echo "parse: WARNING: counts differ by more than 2%:$differ."
	echo "parse: WARNING: the two sides no longer classify alike (mail/patchmail.c changed its rules," \
		"or bench/parse-email.py does not follow them), so the ratio compares different work;" \
		"the mails above are kept in $keep"
fi
echo "parse: zeroday $(rate zeroday 4) msg/s ($(rate zeroday 6) MB/s)," \
	"python email $(rate python 4) msg/s ($(rate python 6) MB/s)," \
	"ratio $(awk -v a="$(rate zeroday 4)" -v b="$(rate python 4)" 'BEGIN { printf "%.1f", a / b }')x"
