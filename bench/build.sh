#!/bin/sh
# bench/build: the build engine on the real Linux tree (linux-source-6.1),
# target x86_64:tinyconfig+serial, every figure as a ratio against a
# baseline measured in the same run:
#   - the cold build (no ccache), through zeroday;
#   - a one-file commit built incrementally, against the cold build (the
#     seed system's ratio was 2 min / 10 min = 0.2);
#   - zeroday's incremental step against raw make doing the same rebuild
#     in the same sandbox (the goal is at most 1.10 times);
#   - the same configuration built in a second, empty build directory
#     (another target slot, or a directory wiped after a distant checkout)
#     with ccache warm, against cold.
#
# usage: bench/build.sh ZERODAY SRCDIR
set -eu
zd=${1:?usage: bench/build.sh ZERODAY SRCDIR}
srcdir=${2:?usage: bench/build.sh ZERODAY SRCDIR}
target=x86_64:tinyconfig+serial
cache=${ZERODAY_TEST_CACHE:-/var/cache/zeroday-test}/linux-6.1
work=$(mktemp -d "${TMPDIR:-/tmp}/zeroday-bench-build-XXXXXX")
chmod 0711 "$work"
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/lib.sh"

import_linux "$cache" "build step"

# A tree sharing the cache's objects, with a one-file commit.
git clone -q --bare --shared "$cache" "$work/a.git"
one_file_commit "$work/a.git"

z() { state=$1; shift; "$zd" --state-dir="$work/$state" --config="$work/$state.conf" "$@"; }
printf '[build]\nccache = false\n' > "$work/cold.conf"
printf '[build]\nccache = true\n' > "$work/warm.conf"
z cold init >/dev/null
z warm init >/dev/null

t0=$(now); z cold build "$work/a.git" "$base" --target "$target" >"$work/out" 2>&1; t1=$(now)
cold=$(elapsed "$t0" "$t1")
grep -q ": pass" "$work/out" || { cat "$work/out"; exit 1; }
echo "cold build (no ccache): $cold s"

t0=$(now); z cold build "$work/a.git" "$one" --target "$target" >"$work/out" 2>&1; t1=$(now)
inc=$(elapsed "$t0" "$t1")
grep -q ": pass" "$work/out" || { cat "$work/out"; exit 1; }
echo "one-file commit, incremental: $inc s; ratio incremental/cold: $(ratio "$inc" "$cold")"

# The same rebuild with raw make: the engine's overhead on top of kbuild.
src=$(find "$work/cold/src" -mindepth 1 -maxdepth 1 -type d)
bld=$(find "$work/cold/build" -mindepth 2 -maxdepth 2 -type d)
cp "$src/kernel/panic.c" "$work/panic.c"
printf '/* raw */\n' >> "$src/kernel/panic.c"
# The same command line zeroday runs (a different CC string or path would
# rebuild everything), in the same sandbox at the same paths, without the
# checkout, parsing and bookkeeping.
t0=$(now)
env -i PATH=/usr/local/bin:/usr/bin:/bin LC_ALL=C HOME=/tmp KBUILD_BUILD_USER=zeroday \
	KBUILD_BUILD_HOST=zeroday KBUILD_BUILD_TIMESTAMP=@0 \
	bwrap --unshare-ipc --unshare-pid --unshare-net --die-with-parent \
	--ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64 \
	--perms 0755 --dir /etc --ro-bind /etc/alternatives /etc/alternatives \
	--ro-bind /etc/passwd /etc/passwd --ro-bind /etc/group /etc/group \
	--proc /proc --dev /dev --perms 01777 --tmpfs /tmp --perms 0755 --dir /zeroday \
	--ro-bind "$src" /zeroday/src --ro-bind "$work/cold/tools" /zeroday/tools \
	--bind "$bld" /zeroday/out --chdir /zeroday/src -- \
	setpriv --reuid=nobody --regid=nogroup --clear-groups --no-new-privs -- \
	make O=/zeroday/out ARCH=x86_64 CC="/zeroday/tools/zeroday-cc gcc" -j"$(nproc)" \
	>/dev/null 2>&1
t1=$(now)
raw=$(elapsed "$t0" "$t1")
cp "$work/panic.c" "$src/kernel/panic.c"
echo "the same one-file rebuild with raw make: $raw s; ratio zeroday/raw make: $(ratio "$inc" "$raw")" \
	"(goal <= 1.10)"

# ccache: fill it with one build, then the same configuration in a second
# build directory (an empty extra fragment makes it another target slot).
: > "$work/empty.config"
z warm build "$work/a.git" "$base" --target "$target" >/dev/null 2>&1
t0=$(now)
z warm build "$work/a.git" "$base" --target "$target+$work/empty.config" >"$work/out" 2>&1
t1=$(now)
switch=$(elapsed "$t0" "$t1")
grep -q ": pass" "$work/out" || { cat "$work/out"; exit 1; }
echo "the same configuration in an empty build directory, ccache warm: $switch s;" \
	"ratio ccache-warm/cold: $(ratio "$switch" "$cold")"
