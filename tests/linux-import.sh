#!/bin/sh
# linux-import.sh CACHE: imports Debian's linux-source-6.1 once into a git
# repository at CACHE (a bare-less repo with one commit), for the real-kernel
# tests. Prints the repository's path. Reruns reuse it.
set -eu
cache=${1:?usage: linux-import.sh CACHE}
tarball=$(ls /usr/src/linux-source-6.1.tar.xz 2>/dev/null || true)
[ -n "$tarball" ] || { echo "linux-source-6.1 is not installed" >&2; exit 77; }
stamp="$cache/.imported-$(stat -c %s "$tarball")"
# Tests run in parallel: one imports, the others wait for it.
mkdir -p "$(dirname "$cache")"
exec 9>"$cache.lock"
flock 9
if [ -f "$stamp" ]; then
	echo "$cache"
	exit 0
fi
rm -rf "$cache"
mkdir -p "$cache"
chmod 0755 "$cache"
tmp="$cache.tmp"
rm -rf "$tmp"
mkdir -p "$tmp"
tar -xJf "$tarball" -C "$tmp"
src=$(ls -d "$tmp"/linux-source-6.1*)
# Debian's .gitignore ignores everything at the top level: drop that block.
sed -i '/^# Debian packaging: ignore everything/,/^!\/debian\/$/d' "$src/.gitignore"
export GIT_AUTHOR_NAME=zeroday GIT_AUTHOR_EMAIL=zeroday@localhost
export GIT_COMMITTER_NAME=zeroday GIT_COMMITTER_EMAIL=zeroday@localhost
export GIT_AUTHOR_DATE=@1700000000 GIT_COMMITTER_DATE=@1700000000
git -C "$src" init -q -b master
git -C "$src" add -A
git -C "$src" commit -q -m "Linux 6.1 (Debian linux-source-6.1)"
# Keep only the repository: tests check out their own work trees.
mv "$src/.git" "$cache/.git"
rm -rf "$tmp"
git -C "$cache" config core.bare true
# In the foreground: a gc detached by --auto races the chmod below.
git -C "$cache" -c gc.autoDetach=false gc -q --auto
chmod -R a+rX "$cache"
touch "$stamp"
echo "$cache"
