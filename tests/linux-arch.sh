#!/bin/sh
# Architectures on the real Linux tree, a non-rebasable tree over git
# daemon built for four targets: x86_64 and riscv64 with gcc, and arm64
# with Debian's cross gcc and with clang (LLVM=1), each head booted under
# TCG through libvirt on its arch's QEMU. The first head boots to the end
# marker on every target. Push 1 hides an arm64-only build error under
# innocent commits: bisected on arm64, nothing reported on x86 or riscv.
# Push 2 reverts it, hides a warning only clang gives under innocent
# commits (found by the clang target, not by gcc), then a panic only arm64
# kernels have, bisected by booting arm64 kernels: one finding, also on
# the clang target, whose kernels panic alike; the other arches clean. The reports name the compiler, and their reproduce
# lines carry ARCH=, CROSS_COMPILE= or LLVM=1, and the arch's QEMU and
# console. Speaks TAP. The build trees persist in the test cache.
test_name=linux-arch
. "$ZERODAY_SRCDIR/tests/lib.sh"
# Shares linux-run.sh's state directory, and so its x86_64 build tree.
. "$ZERODAY_SRCDIR/tests/linux-lib.sh"
export GIT_INDEX_FILE="$scratch/index"
# Push 1: an error in code only arm64 builds. (innocent writes $scratch/file
# too: each culprit's parent is made first.)
tip=$(innocent "$base" 1)
git -C "$repo" show "$base:arch/arm64/kernel/setup.c" > "$scratch/file"
printf '\nint zd_arm64_broken(void);\nint zd_arm64_broken(void)\n{\n\treturn zd_undeclared_arm64;\n}\n' \
	>> "$scratch/file"
arm_err=$(commit_file "$tip" arch/arm64/kernel/setup.c "$scratch/file" "arm64: the build culprit")
push1=$(innocent "$arm_err" 2)
# Push 2: the error reverted; a variable used uninitialized on one path,
# which clang warns of (-Wsometimes-uninitialized) and the kernel's gcc
# flags do not; then a panic on arm64 only.
git -C "$repo" show "$base:arch/arm64/kernel/setup.c" > "$scratch/file"
revert=$(commit_file "$push1" arch/arm64/kernel/setup.c "$scratch/file" "Revert the arm64 culprit")
tip=$(innocent "$revert" 1)
git -C "$repo" show "$base:kernel/exit.c" > "$scratch/file"
printf '\nint zd_clang_only(int x);\nint zd_clang_only(int x)\n{\n\tint y;\n\n\tif (x)\n\t\ty = 1;\n\treturn y;\n}\n' \
	>> "$scratch/file"
warn=$(commit_file "$tip" kernel/exit.c "$scratch/file" "exit: the clang culprit")
tip=$(innocent "$warn" 2)
git -C "$repo" show "$base:init/main.c" |
	awk '{ print } /^static int __ref kernel_init\(void \*unused\)$/ { k = 1 }
	     k && /^\tint ret;$/ { print "\tif (IS_ENABLED(CONFIG_ARM64))";
				    print "\t\tpanic(\"zeroday: an arm64 boot panic\");"; k = 0 }' \
	> "$scratch/file"
panic=$(commit_file "$tip" init/main.c "$scratch/file" "init: the arm64 panic")
push2=$(innocent "$panic" 2)
unset GIT_INDEX_FILE
check "the culprits change what they say, and nothing else" sh -c "
	git -C '$repo' diff '$arm_err~' '$arm_err' | grep -q '^+	return zd_undeclared_arm64;' &&
	git -C '$repo' diff --stat '$arm_err~' '$arm_err' | grep -q '1 file changed, 6 insertions' &&
	git -C '$repo' diff --stat '$warn~' '$warn' | grep -q 'kernel/exit.c .*| 10 +' &&
	git -C '$repo' diff '$panic~' '$panic' | grep -B1 'an arm64 boot panic' | grep -q CONFIG_ARM64 &&
	git -C '$repo' diff --stat '$panic~' '$panic' | grep -q '1 file changed, 2 insertions'"

serve
fresh_store
printf '[boot]\nrepeat = 2\nhosts = qemu:///system*2\n' > "$scratch/z.conf"
z() { "$ZERODAY" --config="$scratch/z.conf" --state-dir="$state" "$@"; }
z init >/dev/null
gcc=x86_64:tinyconfig+serial
arm=arm64:tinyconfig+serial
clang=arm64:tinyconfig+serial:LLVM=1
rv=riscv:tinyconfig+serial
git -C "$repo" update-ref refs/heads/master "$base"
z tree add linux "git://127.0.0.1:$port/linux.git" master --non-rebasable \
	--target "$gcc" --target "$arm" --target "$clang" --target "$rv" >/dev/null
# run NAME: zeroday run --once, its log in NAME.log, the findings in NAME.json.
run() {
	since=$(date +%s)
	z run --once --poll-interval 3600 > "$scratch/$1.log" 2>&1
	check "$1: zeroday run" test $? -eq 0
	grep -E "finding|bisect|fixed|infra" "$scratch/$1.log" | head -30 | sed 's/^/# /'
	z status --json | sed 's/}, {/\n/g' > "$scratch/$1.json"
	sqlite3 "$state/zeroday.db" "SELECT target, status, round(seconds, 1) FROM builds
		WHERE created >= $since ORDER BY id" | sed 's/^/# build /'
	sqlite3 "$state/zeroday.db" "SELECT d.target, b.kind, round(b.seconds, 1) FROM boots b
		JOIN builds d ON d.id = b.build_id WHERE b.created >= $since ORDER BY b.id" |
		sed 's/^/# boot /'
}
# boots TARGET KIND COMMIT: how many boots of COMMIT on TARGET ended as KIND.
boots() {
	sqlite3 "$state/zeroday.db" "SELECT count(*) FROM boots b JOIN builds d ON d.id = b.build_id
		WHERE d.target = '$1' AND b.kind = '$2' AND d.commit_id = '$3'"
}
# culprits: the distinct culprits of the findings in FILE.
culprits() { grep -o '"culprit": "[0-9a-f]*"' "$1" | sort -u | wc -l; }

run first
for t in "$gcc" "$arm" "$clang" "$rv"; do
	check "the first head builds on $t" test "$(sqlite3 "$state/zeroday.db" \
		"SELECT count(*) FROM builds WHERE target = '$t' AND commit_id = '$base' AND status = 'ok'")" -eq 1
	check "and boots to the end marker there, twice" test "$(boots "$t" boot-ok "$base")" -eq 2
done
check "no finding on the first head" test "$(culprits "$scratch/first.json")" -eq 0

git -C "$repo" update-ref refs/heads/master "$push1"
run push1
check "the arm64 error is blamed on its commit, on arm64" \
	grep -q "\"culprit\": \"$arm_err\", \"target\": \"$arm\", \"kind\": \"build-error\"" "$scratch/push1.json"
check "and by the clang target, in clang's words" \
	grep -q "\"culprit\": \"$arm_err\", \"target\": \"$clang\", \"kind\": \"build-error\", .*use of undeclared identifier 'zd_undeclared_arm64'" \
	"$scratch/push1.json"
check "nothing is reported on x86 or riscv" \
	sh -c "! grep -q -e '\"target\": \"x86_64' -e '\"target\": \"riscv' '$scratch/push1.json'"
check "and no other commit is blamed" test "$(culprits "$scratch/push1.json")" -eq 1

git -C "$repo" update-ref refs/heads/master "$push2"
run push2
check "the clang-only warning is blamed on its commit, by the clang target" \
	grep -q "\"culprit\": \"$warn\", \"target\": \"$clang\", \"kind\": \"build-warning\"" "$scratch/push2.json"
check "as clang names it" grep -q "zd_clang_only.*-Wsometimes-uninitialized\|-Wsometimes-uninitialized.*zd_clang_only\|variable 'y' is used uninitialized" "$scratch/push2.json"
check "gcc reports nothing of it" \
	sh -c "! grep 'zd_clang_only\|sometimes-uninitialized' '$scratch/push2.json' | grep -q -e '\"target\": \"$gcc\"' -e '\"target\": \"$arm\"'"
check "the arm64 panic is blamed on its commit, by booting arm64" \
	grep -q "\"culprit\": \"$panic\", \"target\": \"$arm\", \"kind\": \"boot-panic\"" "$scratch/push2.json"
check "clang's arm64 kernels panic alike: the same finding, also on the clang target" \
	sh -c "grep '\"culprit\": \"$panic\", \"target\": \"$arm\", \"kind\": \"boot-panic\"' '$scratch/push2.json' |
		grep -q '\"also_on\": \[\"$clang\"\]'"
check "with its title" grep -q 'Kernel panic - not syncing: zeroday: an arm64 boot panic' "$scratch/push2.json"
check "the x86_64 head boots clean" test "$(boots "$gcc" boot-ok "$push2")" -eq 2
check "the riscv64 head boots clean" test "$(boots "$rv" boot-ok "$push2")" -eq 2
check "the arm64 error is fixed, by the revert" \
	grep -q "\"culprit\": \"$arm_err\".*\"state\": \"fixed\", .*\"fixed_by\": \"$revert\"" "$scratch/push2.json"
check "no innocent commit is blamed" test -z "$(grep -o '"culprit": "[0-9a-f]*"' "$scratch/push2.json" |
	grep -v -e "$arm_err" -e "$warn" -e "$panic")"

# The mails.
z outbox --json | sed 's/}, {/\n/g' > "$scratch/outbox.json"
mail() {
	grep '"kind": "report"' "$scratch/outbox.json" | grep -e "$1" | head -1 |
		sed -n 's/.*"path": "\([^"]*\)".*/\1/p'
}
arm_mail=$(mail zd_undeclared_arm64)
warn_mail=$(mail "variable 'y' is used uninitialized")
panic_mail=$(mail "an arm64 boot panic")
check "the arm64 error's report names the cross compiler" \
	sh -c "test -f '$arm_mail' && grep -q '^compiler: aarch64-linux-gnu-gcc (Debian' '$arm_mail'"
check "and builds with ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-" \
	grep -q "^        mkdir -p build && zcat config.gz > build/.config && make O=build ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu- olddefconfig && make O=build ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu- -j\$(nproc)\$" "$arm_mail"
check "the clang warning's report names clang and builds with LLVM=1, no prefix" \
	sh -c "test -f '$warn_mail' && grep -q '^compiler: Debian clang version 14' '$warn_mail' && grep -q '^        mkdir -p build && zcat config.gz > build/.config && make O=build LLVM=1 ARCH=arm64 olddefconfig && make O=build LLVM=1 ARCH=arm64 -j' '$warn_mail'"
check "the arm64 panic's report boots with qemu-system-aarch64 on ttyAMA0" \
	sh -c "test -f '$panic_mail' && grep -q '^        qemu-system-aarch64 -machine virt -cpu cortex-a57 .*-kernel build/arch/arm64/boot/Image -initrd initramfs.cpio.gz -append .console=ttyAMA0 earlycon ' '$panic_mail'"
check "and makes its initramfs with Debian's arm64 busybox" \
	grep -q '^        apt-get download busybox-static:arm64 && dpkg-deb -x ' "$panic_mail"

tap_end
