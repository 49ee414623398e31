# The shell tests' common part, sourced (with $test_name set) by the TAP
# tests: $ZERODAY and $ZERODAY_SRCDIR required (make check sets them), a
# scratch directory readable by libvirt's QEMU user and removed at exit
# unless KEEP is set, a private HOME and git identity, and TAP helpers.
set -u
: "${ZERODAY:?run through make check}"
: "${ZERODAY_SRCDIR:?run through make check}"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/zeroday-$test_name-XXXXXX")
chmod 0711 "$scratch"
cleanup() { [ -n "${KEEP:-}" ] || rm -rf "$scratch"; }
trap cleanup EXIT
export HOME="$scratch/home" XDG_CONFIG_HOME="$scratch/home" XDG_STATE_HOME="$scratch/home"
export GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=A GIT_AUTHOR_EMAIL=a@example.org
export GIT_COMMITTER_NAME=C GIT_COMMITTER_EMAIL=c@example.org
unset ZERODAY_CONFIG
mkdir -p "$HOME"

n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=1; echo "not ok $n - $1"; }
# check DESCRIPTION COMMAND...: one TAP result, COMMAND's exit status.
check() {
	desc=$1
	shift
	if "$@"; then ok "$desc"; else not_ok "$desc"; fi
}
# tap_end: the plan, and the exit status: 1 when anything failed.
tap_end() {
	echo "1..$n"
	exit $failed
}
# import_linux CACHE: Debian's linux-source-6.1 imported into CACHE
# (tests/linux-import.sh). Only a machine without the package skips the
# test; an import that fails there (a full disk, a broken tarball) is a
# failure, with the importer's words.
import_linux() {
	st=0
	sh "$ZERODAY_SRCDIR/tests/linux-import.sh" "$1" > "$scratch/import.log" 2>&1 || st=$?
	if [ "$st" -eq 77 ]; then
		echo "1..0 # SKIP linux-source-6.1 is not installed"
		exit 0
	elif [ "$st" -ne 0 ]; then
		tail -20 "$scratch/import.log" | sed 's/^/# /'
		echo "Bail out! importing linux-source-6.1 into $1 failed (status $st)"
		exit 1
	fi
}
# kbuild_repo DIR MESSAGE: a git repository at DIR holding the kbuild-like
# fixture tree (tests/data/kbuild), committed on master with MESSAGE.
kbuild_repo() {
	mkdir -p "$1"
	cp -a "$ZERODAY_SRCDIR/tests/data/kbuild/." "$1/"
	git -C "$1" init -q -b master && git -C "$1" add -A && git -C "$1" commit -q -m "$2"
}

# kbuild_history DIR: kbuild_repo DIR with a history: a root with an old
# warning, a new warning ($warn), an innocent change, and an error under
# defconfig ($err).
kbuild_history() {
	kbuild_repo "$1" root
	sed -i 's/int ready = 1;/int ready = 1;\n\tint fresh;/' "$1/src/net.c"
	git -C "$1" commit -q -am "net: an unused variable"
	warn=$(git -C "$1" rev-parse HEAD)
	echo "/* innocent */" >> "$1/src/main.c"
	git -C "$1" commit -q -am "main: innocent"
	sed -i 's/return ready - 1;/undeclared_counter++;\n\treturn ready - 1;/' "$1/src/net.c"
	git -C "$1" commit -q -am "net: broken"
	err=$(git -C "$1" rev-parse HEAD)
}
