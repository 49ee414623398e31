#!/bin/sh
# kernel-doc.sh FILE: a look-alike of kbuild's W=1 "scripts/kernel-doc
# -none FILE": one warning on stderr for each line of FILE that says
# KDOC(name), naming the function.
grep -n 'KDOC(' "$1" | while IFS=: read -r n rest; do
	name=${rest#*KDOC(}
	name=${name%%)*}
	echo "$1:$n: warning: Function parameter or member 'x' not described in '$name'" >&2
done
exit 0
