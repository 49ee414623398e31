#!/bin/sh
# seeds.sh TARGET DIR: writes the seed inputs of fuzz target TARGET into
# DIR, from the test data (tests/data) and the few seeds kept for the
# fuzzers alone (tests/fuzz/corpus/TARGET). See tests/fuzz/run.sh.
set -eu

top=$(cd "$(dirname "$0")/../.." && pwd)
t=$1
out=$2
data=$top/tests/data
mkdir -p "$out"
if [ -d "$top/tests/fuzz/corpus/$t" ]; then
	cp "$top/tests/fuzz/corpus/$t"/* "$out/"
fi

# nul_join FILE...: the files separated by NUL bytes, as fuzz-series reads a batch.
nul_join() {
	first=1
	for f in "$@"; do
		[ $first -eq 1 ] || printf '\0'
		first=0
		cat "$f"
	done
}

case $t in
mail)
	cp "$data"/patchmail/*.eml "$out/"
	;;
commands)
	# The command lines the scenarios mail, one body each.
	i=0
	grep -ho '"#zeroday[^"$]*' "$top/tests/commands-real.sh" | sed 's/^"//' | sort -u |
		while IFS= read -r line; do
			i=$((i + 1))
			printf 'Hello,\n\n%s\n\nThanks\n' "$line" >"$out/real-$i"
		done
	;;
series)
	p=$data/patchmail
	nul_join "$p"/series-v2-0.eml "$p"/series-v2-1.eml "$p"/series-v2-2.eml \
		"$p"/series-v2-3.eml >"$out/series-v2"
	nul_join "$p"/series-v2-3.eml "$p"/series-v2-1.eml "$p"/series-v2-2.eml \
		"$p"/review-reply.eml "$p"/series-v2-0.eml >"$out/series-v2-out-of-order"
	nul_join "$p"/in-body-from.eml "$p"/fixup-reply.eml "$p"/attached.eml \
		>"$out/single-patches"
	nul_join "$p"/series-v2-0.eml "$p"/series-v2-1.eml "$p"/series-v2-2.eml \
		"$p"/series-v2-3.eml "$top/tests/fuzz/corpus/series/command.eml" >"$out/command"
	;;
console)
	# The first byte holds the flags: 1 the watchdog fired, 2 infrastructure failed.
	for f in "$data"/console/*.log; do
		b=$(basename "$f" .log)
		flag='\000'
		[ "$b" = timeout ] && flag='\001'
		{ printf "$flag"; cat "$f"; } >"$out/$b"
	done
	;;
diag)
	cp "$data"/diag/*.log "$out/"
	;;
*)
	echo "seeds.sh: no target $t" >&2
	exit 2
	;;
esac
