#!/bin/sh
# kconfig.sh TARGET KCONFIG DOTCONFIG: writes a .config from KCONFIG's
# "SYMBOL DEFAULT" lines, like the kernel's config targets.
set -eu
target=$1 kconfig=$2 out=$3
old=/dev/null
[ "$target" = olddefconfig ] && [ -f "$out" ] && old=$out
awk -v target="$target" -v seed="${KCONFIG_SEED:-1}" '
	FILENAME == ARGV[1] { if (match($0, /^CONFIG_[A-Z0-9_]*=y$/)) old[substr($0, 8, RLENGTH - 9)] = "y"
		    else if (match($0, /^# CONFIG_[A-Z0-9_]* is not set$/)) old[substr($0, 10, RLENGTH - 20)] = "n"
		    next }
	/^#/ || NF < 2 { next }
	{
		v = $2
		if (target == "allnoconfig") v = "n"
		else if (target == "tinyconfig") v = ($1 == "TINY") ? "y" : "n"
		else if (target == "allmodconfig" || target == "allyesconfig") v = "y"
		else if (target == "randconfig") { if (!seeded) { srand(seed); seeded = 1 }; v = rand() < 0.5 ? "y" : "n" }
		else if (target == "olddefconfig" && ($1 in old)) v = old[$1]
		if (v == "y") print "CONFIG_" $1 "=y"; else print "# CONFIG_" $1 " is not set"
	}' "$old" "$kconfig" > "$out.tmp"
mv "$out.tmp" "$out"
