#!/bin/sh
# A posted series on the real Linux tree: three patches against
# linux-source-6.1, sent to a list (a Maildir source) with a cover letter
# and a base-commit: trailer, the tree subscribed by its list. Patch 1 adds
# a comment to init/main.c, patch 2 an unused variable (a warning the
# kernel's -Wall gives), patch 3 another comment that moves that warning
# down a line. One `zeroday run --once` (timed) must test the series, reply
# on patch 2 naming the warning and the target, blame neither patch 1 nor
# patch 3, and summarize on the cover letter. Speaks TAP.
# It shares linux-run.sh's state directory in the test cache, one test at
# a time, so the tree's source and build trees (x86_64:tinyconfig+serial)
# and its ccache are reused and the base builds incrementally.
test_name=linux-series
. "$ZERODAY_SRCDIR/tests/lib.sh"
# Mails come From the sender, as git send-email writes them.
export GIT_COMMITTER_NAME=A GIT_COMMITTER_EMAIL=a@example.org
. "$ZERODAY_SRCDIR/tests/linux-lib.sh"

# The series, three commits on the imported base.
export GIT_INDEX_FILE="$scratch/index"
# edit PARENT AWK-PROGRAM MESSAGE: a commit on PARENT whose init/main.c is
# PARENT's passed through AWK-PROGRAM; prints it.
edit() {
	git -C "$repo" show "$1:init/main.c" | awk "$2" > "$scratch/file"
	commit_file "$1" init/main.c "$scratch/file" "$3"
}
p1=$(edit "$base" '/^static int __ref kernel_init\(void \*unused\)$/ {
	print "/* The first user-space process starts here. */" } { print }' \
	"$(printf 'init: say where user space starts\n\nSigned-off-by: A <a@example.org>')")
p2=$(edit "$p1" '{ print } /^static int __ref kernel_init\(void \*unused\)$/ { k = 1 }
	k && /^\tint ret;$/ { print "\tint zd_spare;"; k = 0 }' \
	"$(printf 'init: keep a spare variable in kernel_init\n\nSigned-off-by: A <a@example.org>')")
p3=$(edit "$p2" '/^static int __ref kernel_init\(void \*unused\)$/ {
	print "/* It runs once every built-in initcall has run. */" } { print }' \
	"$(printf 'init: say when kernel_init runs\n\nSigned-off-by: A <a@example.org>')")
unset GIT_INDEX_FILE
git -C "$repo" update-ref refs/heads/series "$p3"
# The warning's place in patch 2's init/main.c.
line=$(git -C "$repo" show "$p2:init/main.c" | grep -n '^	int zd_spare;$' | cut -d: -f1)
check "patch 2 adds the unused variable, patch 3 moves it down a line" \
	test -n "$line" -a "$(git -C "$repo" show "$p3:init/main.c" | grep -n '^	int zd_spare;$' |
		cut -d: -f1)" = "$((line + 1))"

# Posted as git send-email posts it, delivered by the list to a Maildir.
mkdir "$scratch/s"
git -C "$repo" format-patch -q --from="A <a@example.org>" --to="linux@example.org" \
	--cover-letter --thread --base="$base" -o "$scratch/s" "$base..$p3"
sed -i 's/\*\*\* SUBJECT HERE \*\*\*/init: notes on kernel_init/' "$scratch/s/0000-cover-letter.patch"
list="$scratch/list"
mkdir -p "$list/new" "$list/cur" "$list/tmp"
i=0
for f in "$scratch/s/"*.patch; do
	i=$((i + 1))
	{
		echo "List-Id: Linux test list <linux.example.org>"
		sed '1{/^From [0-9a-f]\{40\} /d}' "$f"
	} > "$list/tmp/m$i"
	mv "$list/tmp/m$i" "$list/new/$(printf %06d $i).test"
done
check "four mails: the cover letter and three patches, with a base-commit: trailer" \
	sh -c "test $i -eq 4 && grep -q '^base-commit: $base\$' '$scratch/s/0000-cover-letter.patch'"
# mid FILE: the Message-ID of a format-patch file, without brackets.
mid() { sed -n 's/^Message-I[Dd]: <\(.*\)>$/\1/p' "$1" | head -1; }
cover=$(mid "$scratch/s/0000-cover-letter.patch")
m1=$(mid "$scratch/s/0001-"*.patch)
m2=$(mid "$scratch/s/0002-"*.patch)
m3=$(mid "$scratch/s/0003-"*.patch)

fresh_store
cat > "$scratch/z.conf" <<EOF
[git]
allow-local-trees = true
[mail]
address = bot@example.org
name = Test Robot
archive-url = https://lists.example.org/r/
sources = maildir:$list
grace = 0
[boot]
repeat = 1
EOF
z() { "$ZERODAY" --config="$scratch/z.conf" --state-dir="$state" "$@"; }
z init > /dev/null
z tree add linux "$repo" master --non-rebasable --target x86_64:tinyconfig+serial \
	--list "Linux test list <linux@example.org>" > /dev/null
check "the tree is subscribed by its list" test $? -eq 0
since=$(date +%s)
t0=$(date +%s.%N)
z run --once --poll-interval 3600 > "$scratch/run.log" 2>&1
check "run --once" test $? -eq 0
t1=$(date +%s.%N)
sed 's/^/# /' "$scratch/run.log" | grep -E "series|built|warning|error" | head -30
awk -v a="$t0" -v b="$t1" -v n="$(sqlite3 "$state/zeroday.db" \
	"SELECT count(*) FROM builds WHERE created >= $since")" -v m="$(sqlite3 "$state/zeroday.db" \
	"SELECT coalesce(sum(seconds), 0) FROM builds WHERE created >= $since")" 'BEGIN {
	printf "# run --once: %.1f s wall, %d builds taking %.1f s\n", b - a, n, m }'

# The series and its results, one a line.
z series --json | sed 's/, {"id": \([0-9]*\), "subject"/\n{"id": \1, "subject"/g' > "$scratch/series.json"
s=$(grep '"subject": "init: notes on kernel_init"' "$scratch/series.json")
has_s() { printf '%s\n' "$s" | grep -q -- "$1"; }
target='x86_64:tinyconfig+serial'
check "the series is tested" has_s '"state": "tested"'
check "on its base-commit: trailer's commit" has_s "\"base\": \"$base\", \"base_how\": \"base-commit\""
check "with its cover letter and three patches" has_s '"n": 3, "total": 3'
check "patch 1 passes" has_s "\"n\": 1, \"target\": \"$target\", \"commit\": \"[0-9a-f]*\", \"result\": \"pass\""
check "patch 2 adds new diagnostics" \
	has_s "\"n\": 2, \"target\": \"$target\", \"commit\": \"[0-9a-f]*\", \"result\": \"new-diagnostics\""
check "the unused variable's warning, at its line" \
	has_s "init/main.c:$line:[0-9]*: warning: unused variable 'zd_spare'"
check "patch 3, which only moves the warning, is not blamed" \
	has_s "\"n\": 3, \"target\": \"$target\", \"commit\": \"[0-9a-f]*\", \"result\": \"pass\""

# The replies: the series mails of the outbox, one a line.
z outbox --json | sed 's/, {"id": \([0-9]*\), "finding"/\n{"id": \1, "finding"/g' |
	grep '"kind": "series"' > "$scratch/mails.json"
sed 's/^/# /' "$scratch/mails.json" | cut -c1-200
replies_to() { grep -c "\"in_reply_to\": \"$1\"" "$scratch/mails.json"; }
check "exactly one reply on patch 2" test "$(replies_to "$m2")" -eq 1
check "none on patches 1 and 3" test "$(replies_to "$m1")" -eq 0 -a "$(replies_to "$m3")" -eq 0
check "one summary on the cover letter, and no other series mail" \
	test "$(replies_to "$cover")" -eq 1 -a "$(wc -l < "$scratch/mails.json")" -eq 2
id2=$(grep "\"in_reply_to\": \"$m2\"" "$scratch/mails.json" | sed -n 's/^\[*{"id": \([0-9]*\),.*/\1/p' | head -1)
idc=$(grep "\"in_reply_to\": \"$cover\"" "$scratch/mails.json" | sed -n 's/^\[*{"id": \([0-9]*\),.*/\1/p' | head -1)
z outbox show "${id2:-0}" > "$scratch/reply2" 2>&1
z outbox show "${idc:-0}" > "$scratch/summary" 2>&1
sed -n 's/^>> /# >> /p' "$scratch/reply2"
# The headers, unfolded.
sed '/^$/q' "$scratch/reply2" | sed -e ':a' -e 'N' -e '$!ba' -e 's/\n[ \t]\+/ /g' > "$scratch/reply2.h"
has() { grep -q -- "$2" "$1"; }
check "it is threaded on patch 2" has "$scratch/reply2.h" "^In-Reply-To: <$m2>$"
check "under the cover letter" has "$scratch/reply2.h" "^References: <$cover> <$m2>$"
check "its subject is patch 2's" has "$scratch/reply2.h" \
	'^Subject: Re: \[PATCH 2/3\] init: keep a spare variable in kernel_init$'
# The body's paragraphs, each on one line.
sed '1,/^$/d' "$scratch/reply2" | awk '/^$/ { print p; p = ""; next } { p = p (p == "" ? "" : " ") $0 }
	END { print p }' > "$scratch/reply2.b"
check "it names patch 2, a new warning, and the target" has "$scratch/reply2.b" \
	"^patch 2/3 of \"init: notes on kernel_init\" (v1) adds a new build warning for $target:"
check "and the warning, file:line and text" has "$scratch/reply2" \
	"^>> init/main.c:$line:[0-9]*: warning: unused variable 'zd_spare'"
check "the base it tested on" has "$scratch/reply2" "^base: *$base (base-commit)$"
check "its reproduce line starts from the config it carries, gzipped" \
	sh -c "grep -q '^        mkdir -p build && zcat config.gz > build/.config && make ' '$scratch/reply2' &&
		grep -q '^Content-Disposition: attachment; filename=config.gz$' '$scratch/reply2'"
check "it goes to the author, Cc the list" \
	sh -c "grep -q '^To: .*a@example.org' '$scratch/reply2' && grep -q '^Cc: .*linux@example.org' '$scratch/reply2'"
check "the summary is on the cover letter" has "$scratch/summary" "^In-Reply-To: <$cover>$"
check "and lists each patch's result, the last patch booted clean" \
	sh -c "grep -q '^  1/3 init: say where user space starts: pass on $target\$' '$scratch/summary' &&
	grep -q '^  2/3 init: keep a spare variable in kernel_init: new-diagnostics on $target\$' '$scratch/summary' &&
	grep -q '^  3/3 init: say when kernel_init runs: pass on $target; 1 boot clean\$' '$scratch/summary'"

# A second series, on the same base, in the shape a real one takes: patch
# 1 breaks the build, patch 2 mends it, patch 3 panics at boot and patch 4
# is innocent. The last patch and the base are booted (the base's boot is
# the first series' one, reused); the panic shows with the whole series
# and not on the base, so it is bisected over the patches as a tree's
# failure is: patch 1, which builds no kernel, skipped; patches 2 and 4
# booted, and patch 3 reverted on patch 4. It is pinned on patch 3, which
# gets the boot reply; patch 1 gets the build reply.
export GIT_INDEX_FILE="$scratch/index"
q1=$(edit "$base" '{ print } /^static int __ref kernel_init\(void \*unused\)$/ { k = 1 }
	k && /^\tint ret;$/ { print "\tzd_undeclared = 1;"; k = 0 }' \
	"$(printf 'init: count kernel_init runs\n\nSigned-off-by: A <a@example.org>')")
q2=$(edit "$q1" '/^\tzd_undeclared = 1;$/ { next } { print }' \
	"$(printf 'init: drop the count again\n\nSigned-off-by: A <a@example.org>')")
q3=$(edit "$q2" '{ print } /^static int __ref kernel_init\(void \*unused\)$/ { k = 1 }
	k && /^\tint ret;$/ { print "\tpanic(\"zeroday: a series panic\");"; k = 0 }' \
	"$(printf 'init: stop at kernel_init\n\nSigned-off-by: A <a@example.org>')")
q4=$(edit "$q3" '/^static int __ref kernel_init\(void \*unused\)$/ {
	print "/* Where the kernel hands over to user space. */" } { print }' \
	"$(printf 'init: a note before kernel_init\n\nSigned-off-by: A <a@example.org>')")
unset GIT_INDEX_FILE
sleep 1
mkdir "$scratch/b"
git -C "$repo" format-patch -q --from="A <a@example.org>" --to="linux@example.org" \
	--cover-letter --thread --base="$base" -o "$scratch/b" "$base..$q4"
sed -i 's/\*\*\* SUBJECT HERE \*\*\*/init: a panic in four/' "$scratch/b/0000-cover-letter.patch"
for f in "$scratch/b/"*.patch; do
	i=$((i + 1))
	{
		echo "List-Id: Linux test list <linux.example.org>"
		sed '1{/^From [0-9a-f]\{40\} /d}' "$f"
	} > "$list/tmp/m$i"
	mv "$list/tmp/m$i" "$list/new/$(printf %06d $i).test"
done
b1=$(mid "$scratch/b/0001-"*.patch)
b3=$(mid "$scratch/b/0003-"*.patch)
t0=$(date +%s.%N)
z run --once --poll-interval 3600 > "$scratch/run2.log" 2>&1
check "run --once tests the panicking series" test $? -eq 0
t1=$(date +%s.%N)
sed 's/^/# /' "$scratch/run2.log" | grep -E "series|bisect" | head -30
awk -v a="$t0" -v b="$t1" 'BEGIN { printf "# run --once: %.1f s wall\n", b - a }'
z series --json | sed 's/, {"id": \([0-9]*\), "subject"/\n{"id": \1, "subject"/g' > "$scratch/series2.json"
s=$(grep '"subject": "init: a panic in four"' "$scratch/series2.json")
check "the panicking series is tested" has_s '"state": "tested"'
check "patch 1 fails to build" \
	has_s "\"n\": 1, \"target\": \"$target\", \"commit\": \"[0-9a-f]*\", \"result\": \"fail (new error)\""
printf '%s\n' "$s" | grep -o '"n": [0-9]*, "target": [^}]*' | sed 's/^/# /'
check "patch 2 builds and boots clean" \
	has_s "\"n\": 2, \"target\": \"$target\", \"commit\": \"[0-9a-f]*\", \"result\": \"pass\", \"new\": null, \"boot\": \"[0-9]* boots* clean\", \"boot_failed\": false"
check "patch 3 builds, and the panic is pinned on it" \
	has_s "\"n\": 3, \"target\": \"$target\", \"commit\": \"[0-9a-f]*\", \"result\": \"pass\", \"new\": null, \"boot\": \"panic: Kernel panic - not syncing: zeroday: a series panic ([0-9]*/[0-9]* boots).*\", \"boot_failed\": true"
check "patch 4 shows it too, and is not blamed" \
	has_s "\"n\": 4, \"target\": \"$target\", \"commit\": \"[0-9a-f]*\", \"result\": \"pass\", \"new\": null, \"boot\": \"panic: [^\"]*\", \"boot_failed\": false"
check "the bisection reverted patch 3 on the last patch" grep -q "bisect .* (revert): [0-9a-f]* good" "$scratch/run2.log"
z outbox --json | sed 's/, {"id": \([0-9]*\), "finding"/\n{"id": \1, "finding"/g' |
	grep '"kind": "series"' > "$scratch/mails2.json"
idb=$(grep "\"in_reply_to\": \"$b3\"" "$scratch/mails2.json" | sed -n 's/^\[*{"id": \([0-9]*\),.*/\1/p' | head -1)
check "one reply on patch 3" test "$(grep -c "\"in_reply_to\": \"$b3\"" "$scratch/mails2.json")" -eq 1
check "one reply on patch 1, the build error" test "$(grep -c "\"in_reply_to\": \"$b1\"" "$scratch/mails2.json")" -eq 1
z outbox show "${idb:-0}" > "$scratch/replyb" 2>&1
sed '1,/^$/d' "$scratch/replyb" | awk '/^$/ { print p; p = ""; next } { p = p (p == "" ? "" : " ") $0 }
	END { print p }' > "$scratch/replyb.b"
check "it says patch 3 adds a new boot failure" has "$scratch/replyb.b" \
	"^patch 3/4 of \"init: a panic in four\" (v1) adds a new boot failure for $target: the tree just before this patch boots without it"
check "with the console's panic line" has "$scratch/replyb" "^>> .*Kernel panic - not syncing: zeroday: a series panic"
check "its reproduce lines build, make the initramfs, and boot the kernel with it" \
	sh -c 'grep -q "^        sh initramfs.sh build > initramfs.cpio.gz\$" "$1" &&
		grep -q "^        qemu-system-x86_64 .* -kernel build/arch/x86/boot/bzImage -initrd initramfs.cpio.gz " "$1"' \
	- "$scratch/replyb"
check "with initramfs.sh attached" grep -q 'filename="*initramfs\.sh' "$scratch/replyb"
b0=$(mid "$scratch/b/0000-"*.patch)
idc2=$(grep "\"in_reply_to\": \"$b0\"" "$scratch/mails2.json" | sed -n 's/^\[*{"id": \([0-9]*\),.*/\1/p' | head -1)
z outbox show "${idc2:-0}" > "$scratch/summary2" 2>&1
check "the cover letter's summary gives patch 3's boots in one line, the console left to its reply" \
	sh -c 'grep -A1 "^  3/4 init: stop at kernel_init: pass on $2; panic: Kernel panic - not syncing: zeroday: a series panic ([0-9]*/[0-9]* boots)\$" "$1" |
		tail -1 | grep -q "^  4/4 "' - "$scratch/summary2" "$target"

tap_end
