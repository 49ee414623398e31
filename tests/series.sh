#!/bin/sh
# Posted patch series, read from a Maildir source ([mail] sources) and
# tested on the kbuild-like fixture tree by `zeroday run --once`: a clean
# 3-patch series with a cover letter (the clean reply the tree asks for,
# threaded on the cover letter), a series whose patch 2/3 adds a build
# error (the reply on patch 2 names it, the cover letter gets a summary),
# a v2 that supersedes a v1 (v1 never tested nor answered), parts that
# come out of order and wait, a series with a base-commit: trailer, one
# that applies to no base (one reply listing the bases tried), a review
# reply quoting a diff (never a patch), a malformed mail (quarantined,
# listed by status --json, not answered), a hostile patch (refused by the
# applier), the same mail read twice, and a kill -9 at each ingest step
# (nothing lost, nothing stored twice), the daemon, and a series for a
# tree not polled yet (it waits for the poll), one whose parts never all
# come (closed after series-timeout, unanswered), and one whose parts a
# list and an archive gave other senders (one series by its thread), and
# mail with NUL bytes or broken base64 (quarantined). Speaks TAP.
test_name=series
. "$ZERODAY_SRCDIR/tests/lib.sh"

# Mails come From the sender, as git send-email writes them.
export GIT_COMMITTER_NAME=A GIT_COMMITTER_EMAIL=a@example.org
kb="$scratch/kb"
kbuild_repo "$kb" root
base=$(git -C "$kb" rev-parse HEAD)
list="$scratch/list"
mkdir -p "$list/new" "$list/cur" "$list/tmp"
cat > "$scratch/z.conf" <<EOF
[git]
allow-local-trees = true
[mail]
address = bot@example.org
name = Test Robot
archive-url = https://lists.example.org/r/
sources = maildir:$list
grace = 0
EOF
z() { "$ZERODAY" --config="$scratch/z.conf" --state-dir="$scratch/state" "$@"; }
z init > /dev/null
z tree add kb "$kb" master --non-rebasable --target x86_64:defconfig --target x86_64:allnoconfig \
	--list "Tree List <list@example.org>" --prefix kb-next --mail-clean > /dev/null
z run --once --poll-interval 3600 > "$scratch/run0.log" 2>&1
check "the tree's head is polled and built" test $? -eq 0

# post DIR [nolist]: the format-patch files of DIR delivered to the list's
# Maildir, as a list delivers them: without the mbox From_ line, with
# List-Id (unless nolist).
seq_no=0
post() {
	for f in "$1"/*.patch; do
		seq_no=$((seq_no + 1))
		{
			[ "${2:-}" = nolist ] || echo "List-Id: Tree List <list.example.org>"
			sed '1{/^From [0-9a-f]\{40\} /d}' "$f"
		} > "$list/tmp/m$seq_no"
		mv "$list/tmp/m$seq_no" "$list/new/$(printf %06d $seq_no).test"
	done
}
# fp ARGS...: git format-patch in the work tree, From the sender as git
# send-email writes it; a second after the last one, since git names a
# cover letter <cover.SECONDS.git.ADDRESS>.
fp() {
	sleep 1
	git -C "$work" format-patch -q --from="A <a@example.org>" "$@"
}
# series_json: `zeroday series --json`, one series a line.
series_json() { z series --json | sed 's/, {"id": \([0-9]*\), "subject"/\n{"id": \1, "subject"/g'; }
# mid FILE: the Message-ID of a format-patch file, without brackets.
mid() { sed -n 's/^Message-I[Dd]: <\(.*\)>$/\1/p' "$1" | head -1; }
# outbox_field N FIELD: FIELD of the Nth newest series mail, from outbox --json.
series_mails() {
	z outbox --json | sed 's/, {"id": \([0-9]*\), "finding"/\n{"id": \1, "finding"/g' |
		grep '"kind": "series"'
}

# 1. A clean series of three with a cover letter.
work="$scratch/work"
git clone -q "$kb" "$work"
for i in 1 2 3; do
	echo "/* part $i */" >> "$work/src/main.c"
	git -C "$work" commit -q -am "main: part $i" -m "Signed-off-by: A <a@example.org>"
done
mkdir "$scratch/s1"
fp --cover-letter --thread -o "$scratch/s1" --to list@example.org \
	-3 --subject-prefix="PATCH" --base="$base"
sed -i 's/\*\*\* SUBJECT HERE \*\*\*/main: three clean parts/' "$scratch/s1/0000-cover-letter.patch"
post "$scratch/s1"
z run --once --poll-interval 3600 > "$scratch/run1.log" 2>&1
check "run --once tests the clean series" test $? -eq 0
s1=$(series_json | grep '"subject": "main: three clean parts"')
check_s1() { printf "%s\n" "$s1" | grep -q "$1"; }
check "the series is tested" check_s1 '"state": "tested"'
check "its base is the base-commit: trailer's" check_s1 "\"base\": \"$base\", \"base_how\": \"base-commit\""
check "it has its cover letter and three patches" check_s1 '"n": 3, "total": 3'
check "every patch passes" check_s1 '"n": 3, "target": "x86_64:defconfig", "commit": "[0-9a-f]*", "result": "pass"'
cover1=$(mid "$scratch/s1/0000-cover-letter.patch")
clean_reply() { series_mails | grep "\"in_reply_to\": \"$cover1\"" | grep -q 'no new error'; }
clean_reply_subject() { series_mails | grep "\"in_reply_to\": \"$cover1\"" | grep -q '"subject": "Re: \[PATCH 0/3\] main: three clean parts"'; }
check "the tree asks for clean replies: one on the cover letter" clean_reply_subject
n_clean=$(series_mails | grep -c "\"in_reply_to\": \"$cover1\"")
check "exactly one reply on it" test "$n_clean" = 1
z status --json > "$scratch/status1.json"
check "status: its post-to-reply time, the one measured" \
	grep -q '"post_to_reply": {"from": "ingest", "count": 1, "p50": \([0-9]*\), "p90": \1}' \
	"$scratch/status1.json"

# 2. Patch 2/3 adds a build error; no base-commit: the tree's head is the base.
git -C "$work" reset -q --hard "$base"
echo "/* fine */" >> "$work/src/main.c"
git -C "$work" commit -q -am "main: fine first"
sed -i 's/return ready - 1;/undeclared_counter++;\n\treturn ready - 1;/' "$work/src/net.c"
git -C "$work" commit -q -am "net: count readiness"
echo "/* fine too */" >> "$work/src/main.c"
git -C "$work" commit -q -am "main: fine last"
mkdir "$scratch/s2"
fp --cover-letter --thread -o "$scratch/s2" --to list@example.org -3
sed -i 's/\*\*\* SUBJECT HERE \*\*\*/net: readiness, broken/' "$scratch/s2/0000-cover-letter.patch"
post "$scratch/s2"
z run --once --poll-interval 3600 > "$scratch/run2.log" 2>&1
s2=$(series_json | grep '"subject": "net: readiness, broken"')
check_s2() { printf "%s\n" "$s2" | grep -q "$1"; }
check "the broken series is tested" check_s2 '"state": "tested"'
check "its base is the tree's head, chosen by its list" check_s2 '"base_how": "list list@example.org (kb/master)"'
check "patch 1 passes" check_s2 '"n": 1, "target": "x86_64:defconfig", "commit": "[0-9a-f]*", "result": "pass"'
check "patch 2 fails with a new error" check_s2 '"n": 2, "target": "x86_64:defconfig", "commit": "[0-9a-f]*", "result": "fail (new error)"'
check "patch 3 is not blamed for it" check_s2 '"n": 3, "target": "x86_64:defconfig", "commit": "[0-9a-f]*", "result": "fail (already failing in parent)"'
p2=$(mid "$scratch/s2/0002-net-count-readiness.patch")
cover2=$(mid "$scratch/s2/0000-cover-letter.patch")
on_patch2() { series_mails | grep "\"in_reply_to\": \"$p2\"" | grep -q '"subject": "Re: \[PATCH 2/3\] net: count readiness"'; }
check "the reply lands on patch 2" on_patch2
id2=$(series_mails | grep "\"in_reply_to\": \"$p2\"" | sed -n 's/^{"id": \([0-9]*\),.*/\1/p' | head -1)
z outbox show "$id2" > "$scratch/reply2" 2>&1
has() { grep -q -- "$2" "$1"; }
check "it names the new error" has "$scratch/reply2" "undeclared_counter"
check "one reply on patch 2 for both targets it breaks" \
	test "$(series_mails | grep -c "\"in_reply_to\": \"$p2\"")" -eq 1
check "naming the other target too" sh -c "grep -q '^target:   x86_64:defconfig$' '$scratch/reply2' &&
	grep -q '^It also breaks: x86_64:allnoconfig (build error)\.$' '$scratch/reply2' ||
	{ grep -q '^target:   x86_64:allnoconfig$' '$scratch/reply2' &&
	  grep -q '^It also breaks: x86_64:defconfig (build error)\.$' '$scratch/reply2'; }"
sed '/^$/q' "$scratch/reply2" | sed -e ':a' -e 'N' -e '$!ba' -e 's/\n[ \t]\+/ /g' > "$scratch/reply2.h"
check "it is threaded: In-Reply-To patch 2" has "$scratch/reply2.h" "^In-Reply-To: <$p2>$"
check "References: the cover letter, then patch 2" has "$scratch/reply2.h" "^References: <$cover2> <$p2>$"
check "it goes to the author" has "$scratch/reply2" "^To: .*a@example.org"
check "and Cc the list" has "$scratch/reply2" "^Cc: .*list@example.org"
own2=$(sed -n 's/^Message-Id: <\(.*\)>$/\1/p' "$scratch/reply2.h")
check "it carries Reported-by and Closes (the reply's own archive link)" \
	has "$scratch/reply2" "^Closes: https://lists.example.org/r/$own2$"
check "it asks for the fix in the next version, and tags only for a separate commit" \
	sh -c "grep -q '^Please fold the fix into the next version of this patch: a new' '$scratch/reply2' &&
		grep -q '(i.e. not just a new version of the same patch/commit), kindly add' '$scratch/reply2'"
summary() { series_mails | grep "\"in_reply_to\": \"$cover2\"" | grep -q '"subject": "Re: \[PATCH 0/3\] net: readiness, broken"'; }
check "the cover letter gets a summary" summary
no_reply_1_3() { ! series_mails | grep -q "\"in_reply_to\": \"$(mid "$scratch/s2/0001-main-fine-first.patch")\""; }
check "patch 1 gets no reply" no_reply_1_3

# 3. v1 and v2 of one series, both in before a run: only v2 is tested.
git -C "$work" reset -q --hard "$base"
echo "/* v1 */" >> "$work/src/main.c"
git -C "$work" commit -q -am "main: versioned change"
mkdir "$scratch/v1" "$scratch/v2"
fp --thread -o "$scratch/v1" --to list@example.org -1 -v1 \
	--subject-prefix="PATCH kb-next"
git -C "$work" commit -q --amend -m "main: versioned change" -m "v2: better"
fp --thread -o "$scratch/v2" --to other@example.org -1 -v2 \
	--subject-prefix="PATCH kb-next"
post "$scratch/v1"
post "$scratch/v2" nolist
z run --once --poll-interval 3600 > "$scratch/run3.log" 2>&1
v1=$(series_json | grep '"subject": "main: versioned change", "version": 1,')
v2=$(series_json | grep '"subject": "main: versioned change", "version": 2,')
has_text() { printf "%s\n" "$1" | grep -q -- "$2"; }
check "v1 is superseded" has_text "$v1" '"state": "superseded"'
check "v2 is tested, its base chosen by its prefix" has_text "$v2" '"state": "tested".*"base_how": "prefix kb-next (kb/master)"'
no_v1_reply() { ! series_mails | grep -q "\"in_reply_to\": \"$(mid "$scratch/v1/"*.patch)\""; }
check "v1 gets no reply" no_v1_reply

# 4. Out of order: patches 3 and 2 first; they wait; then 1 and the cover letter.
git -C "$work" reset -q --hard "$base"
for i in 1 2 3; do
	echo "/* ooo $i */" >> "$work/src/main.c"
	git -C "$work" commit -q -am "main: out of order $i"
done
mkdir "$scratch/o" "$scratch/o1" "$scratch/o2"
fp --cover-letter --thread -o "$scratch/o" --to list@example.org -3
sed -i 's/\*\*\* SUBJECT HERE \*\*\*/main: out of order/' "$scratch/o/0000-cover-letter.patch"
mv "$scratch/o/0003-"*.patch "$scratch/o/0002-"*.patch "$scratch/o1/"
mv "$scratch/o/"*.patch "$scratch/o2/"
post "$scratch/o1"
z run --once --poll-interval 3600 > "$scratch/run4.log" 2>&1
waits() { grep -q "waits: for parts not yet received" "$scratch/run4.log"; }
check "parts missing: the series waits, and run --once says so" waits
o=$(series_json | grep '"total": 3' | grep -v '"subject"' ; series_json | grep '"subject": null')
check "it is waiting" has_text "$o" '"state": "waiting"'
post "$scratch/o2"
z run --once --poll-interval 3600 > "$scratch/run5.log" 2>&1
o=$(series_json | grep '"subject": "main: out of order"')
check "the late parts complete it, and it is tested" has_text "$o" '"state": "tested"'

# 5. A series that applies to no base: one reply listing the bases tried.
git -C "$work" reset -q --hard "$base"
printf 'int nowhere(void);\n' > "$work/src/nowhere.c"
git -C "$work" add src/nowhere.c && git -C "$work" commit -q -m "nowhere: add"
echo "/* edit */" >> "$work/src/nowhere.c"
git -C "$work" commit -q -am "nowhere: edit a file the tree lacks"
mkdir "$scratch/nb"
fp --thread -o "$scratch/nb" --to list@example.org -1
post "$scratch/nb"
z run --once --poll-interval 3600 > "$scratch/run6.log" 2>&1
nb=$(series_json | grep '"subject": "nowhere: edit a file the tree lacks"')
check "it could not apply" has_text "$nb" '"state": "could-not-apply"'
check "the bases tried are recorded with the reason" has_text "$nb" '"applied": false, "reason": "patch 1/1 does not apply'
nbmid=$(mid "$scratch/nb/"*.patch)
nb_reply() { series_mails | grep "\"in_reply_to\": \"$nbmid\"" | grep -q '"state": "sent"'; }
check "one reply on the patch" nb_reply
nbid=$(series_mails | grep "\"in_reply_to\": \"$nbmid\"" | sed -n 's/^{"id": \([0-9]*\),.*/\1/p' | head -1)
z outbox show "$nbid" > "$scratch/nbreply" 2>&1
check "it names the base tried and asks for format-patch --base" has "$scratch/nbreply" "format-patch --base"

# 6. A review reply that quotes a diff, a malformed mail, and a hostile patch.
cat > "$list/new/review.test" <<EOF
From: Rev Iewer <rev@example.org>
To: list@example.org
Subject: Re: [PATCH 2/3] net: count readiness
Message-ID: <review-1@example.org>
In-Reply-To: <$p2>
References: <$cover2> <$p2>

> diff --git a/src/net.c b/src/net.c
> --- a/src/net.c
> +++ b/src/net.c
> @@ -5,5 +5,6 @@

This breaks the build.
EOF
printf 'From: x@example.org\nSubject: [PATCH] no id\n\n---\n' > "$list/new/bad.test"
cat > "$list/new/hostile.test" <<'EOF'
From: Mal Lory <mal@example.org>
To: list@example.org
Subject: [PATCH] escape the tree
Message-ID: <hostile-1@example.org>
List-Id: <list.example.org>

Write outside.

---
diff --git a/../../escape b/../../escape
new file mode 100644
--- /dev/null
+++ b/../../escape
@@ -0,0 +1 @@
+owned
EOF
before=$(series_json | wc -l)
z run --once --poll-interval 3600 > "$scratch/run7.log" 2>&1
after=$(series_json | wc -l)
check "the review reply makes no series (only the hostile patch does)" test "$after" -eq $((before + 1))
quarantined() { z status --json | grep -q '"quarantined": \[{"id": [0-9]*, "message_id": "", "source": "maildir:[^"]*", "reason": "no Message-ID"'; }
check "the malformed mail is quarantined with its reason" quarantined
hs=$(series_json | grep '"subject": "escape the tree"')
check "the hostile patch is refused, not applied" has_text "$hs" '"applied": false, "reason": "patch 1/1 refused'
check "nothing was written outside" test ! -e "$scratch/escape"

# 7. The same mail again (a second list): stored once, no second series part.
cp "$scratch/s1/0001-"*.patch "$list/new/again.test"
z run --once --poll-interval 3600 > "$scratch/run8.log" 2>&1
dup() { grep -q "mail: 0 new (0 quarantined), 1 already stored" "$scratch/run8.log"; }
check "a mail read twice is stored once" dup

# 8. kill -9 at each ingest step: the mail is stored exactly once.
for step in ingest-fetched ingest-stored ingest-committed; do
	cat > "$list/new/crash-$step.test" <<EOF
From: C <c@example.org>
To: list@example.org
Subject: crash at $step
Message-ID: <crash-$step@example.org>

Hello.
EOF
	ZERODAY_TEST_CRASH=$step z run --once --poll-interval 3600 > "$scratch/crash-$step.log" 2>&1
	killed=$?
	z run --once --poll-interval 3600 > "$scratch/crash-$step-2.log" 2>&1
	stored=$(sqlite3 "$scratch/state/zeroday.db" \
		"SELECT count(*) FROM mails WHERE message_id = 'crash-$step@example.org'")
	check "killed at $step (status $killed), then stored once" test "$killed" -ne 0 -a "$stored" = 1
	check "and no longer in new/ after $step" test ! -e "$list/new/crash-$step.test"
done

# 9. The daemon: its reader sees a mail that comes while it runs (inotify
# on new/), tests it and replies; SIGTERM stops it within the reader's step.
# Not through z(): $! must be zeroday itself, not a subshell.
"$ZERODAY" --config="$scratch/z.conf" --state-dir="$scratch/state" run --poll-interval 3600 \
	> "$scratch/daemon.log" 2>&1 &
daemon=$!
sleep 2
git -C "$work" reset -q --hard "$base"
echo "/* daemon */" >> "$work/src/main.c"
git -C "$work" commit -q -am "main: while the daemon runs"
mkdir "$scratch/dm"
fp --thread -o "$scratch/dm" \
	--to list@example.org -1
post "$scratch/dm"
tested_live() {
	for _ in $(seq 1 120); do
		series_json | grep '"subject": "main: while the daemon runs"' |
			grep -q '"state": "tested"' && return 0
		sleep 0.5
	done
	return 1
}
check "the daemon reads, tests and answers a mail that comes while it runs" tested_live
kill -TERM "$daemon"
stopped() {
	for _ in $(seq 1 60); do
		kill -0 "$daemon" 2>/dev/null || return 0
		sleep 0.5
	done
	kill -KILL "$daemon"
	return 1
}
check "SIGTERM stops it within 30 s" stopped
dmmid=$(mid "$scratch/dm/"*.patch)
dm_reply() { series_mails | grep "\"in_reply_to\": \"$dmmid\"" | grep -q '"state": "sent"'; }
check "its clean reply went out" dm_reply

# 10. A series for a tree not polled yet (its first poll failed): it
# waits for the poll, then is tested; it is not ignored.
git clone -q --bare "$kb" "$scratch/kb2.git"
z tree add kb2 "$scratch/kb2.git" master --non-rebasable --target x86_64:defconfig \
	--list "Two <two@example.org>" --mail-clean > /dev/null
mv "$scratch/kb2.git" "$scratch/kb2.away"
git -C "$work" reset -q --hard "$base"
echo "/* unpolled */" >> "$work/src/main.c"
git -C "$work" commit -q -am "main: for a tree not polled yet"
mkdir "$scratch/np"
fp --thread -o "$scratch/np" --to two@example.org -1
post "$scratch/np" nolist
z run --once --poll-interval 3600 > "$scratch/run10.log" 2>&1
np() { series_json | grep '"subject": "main: for a tree not polled yet"'; }
check "before its tree's first poll, the series waits" has_text "$(np)" '"state": "waiting"'
check "and run --once says so" has "$scratch/run10.log" "waits: for a first poll of its tree"
mv "$scratch/kb2.away" "$scratch/kb2.git"
z run --once --poll-interval 3600 > "$scratch/run11.log" 2>&1
check "once the tree is polled, it is tested there" has_text "$(np)" '"state": "tested".*kb2/master'

# 11. A series whose parts never all come: closed after [mail]
# series-timeout with a note, its parts kept, not tested, not answered.
echo "series-timeout = 2" >> "$scratch/z.conf"
git -C "$work" reset -q --hard "$base"
for i in 1 2 3; do
	echo "/* lost $i */" >> "$work/src/main.c"
	git -C "$work" commit -q -am "main: lost part $i"
done
mkdir "$scratch/lp"
fp --thread -o "$scratch/lp" --to list@example.org -3
rm "$scratch/lp/0002-"*.patch "$scratch/lp/0003-"*.patch
post "$scratch/lp"
z run --once --poll-interval 3600 > "$scratch/run12.log" 2>&1
lp() { series_json | grep '"subject": "main: lost part 1"'; }
check "parts missing: the series waits" has_text "$(lp)" '"state": "waiting"'
sleep 3
z run --once --poll-interval 3600 > "$scratch/run13.log" 2>&1
check "past series-timeout it is closed, with a note" has_text "$(lp)" '"state": "ignored", "superseded_by": 0, "note": "incomplete: patches 2, 3 of 3 never came, 2 s after its last part"'
check "its part is kept" has_text "$(lp)" '"parts": \[{"n": 1, "total": 3'
check "the closing is logged" has "$scratch/run13.log" "closed, incomplete: patches 2, 3 of 3"
lpmid=$(mid "$scratch/lp/0001-"*.patch)
no_lp_reply() { ! series_mails | grep -q "\"in_reply_to\": \"$lpmid\""; }
check "and it is not answered" no_lp_reply

# 12. A series whose parts come with their From rewritten (a list's DMARC
# "via" munging on patch 2, an archive's address on patch 3): one series,
# grouped by its thread, tested; not one waiting series per sender.
git -C "$work" reset -q --hard "$base"
for i in 1 2 3; do
	echo "/* munged $i */" >> "$work/src/main.c"
	git -C "$work" commit -q -am "main: munged $i"
done
mkdir "$scratch/mu"
fp --cover-letter --thread -o "$scratch/mu" --to list@example.org -3
sed -i 's/\*\*\* SUBJECT HERE \*\*\*/main: munged senders/' "$scratch/mu/0000-cover-letter.patch"
sed -i 's/^From: A <a@example.org>$/From: "A via Tree List" <list@example.org>/' "$scratch/mu/0002-"*.patch
sed -i 's/^From: A <a@example.org>$/From: A <a-Xyz12@public.gmane.org>/' "$scratch/mu/0003-"*.patch
post "$scratch/mu"
z run --once --poll-interval 3600 > "$scratch/run14.log" 2>&1
mu() { series_json | grep -e '"subject": "main: munged senders"' -e '"subject": "main: munged 1"' -e '"subject": null'; }
check "one series, not one per sender" test "$(mu | wc -l)" -eq 1
check "and it is tested" has_text "$(mu)" '"state": "tested"'

# 13. Mail no reader sees as zeroday would: a NUL byte before a command
# line and in a Subject, and a [PATCH] whose base64 does not decode. Each
# is quarantined with its reason: nothing taken, nothing answered.
printf 'From: M <m@example.org>\nTo: list@example.org\nSubject: [PATCH] cut\0 here\nMessage-ID: <nul-subject@example.org>\n\nx\n' \
	> "$list/new/nul-subject.test"
printf 'From: M <m@example.org>\nTo: bot@example.org\nSubject: hello\nMessage-ID: <nul-command@example.org>\n\nhi\0\n#zeroday blacklist kb master\n' \
	> "$list/new/nul-command.test"
cat > "$list/new/bad-base64.test" <<'EOF'
From: M <m@example.org>
To: list@example.org
Subject: [PATCH] broken base64
Message-ID: <bad-base64@example.org>
List-Id: <list.example.org>
Content-Type: text/plain; charset=utf-8
Content-Transfer-Encoding: base64

ZGlmZiAtLWdpdCBhL3NyYy9tYWluLmMgYi9zcmMvbWFpbi5jCg!!!*** not base64 ***
EOF
before=$(series_json | wc -l)
z run --once --poll-interval 3600 > "$scratch/run15.log" 2>&1
after=$(series_json | wc -l)
quarantined_for() { z status --json | grep -q "\"message_id\": \"$1\", \"source\": \"maildir:[^\"]*\", \"reason\": \"$2\""; }
check "a NUL in the Subject: quarantined" quarantined_for nul-subject@example.org "malformed: NUL byte"
check "a NUL before a command: quarantined" quarantined_for nul-command@example.org "malformed: NUL byte"
not_read() { ! grep -qi "blacklist" "$scratch/run15.log" && ! z outbox --json | grep -q 'nul-command@example.org'; }
check "and its command neither read nor answered" not_read
check "broken base64: quarantined" quarantined_for bad-base64@example.org "malformed: a text part's base64 does not decode"
check "no series taken from them" test "$after" -eq "$before"
no_b64_reply() { ! series_mails | grep -q '"in_reply_to": "bad-base64@example.org"'; }
check "and nothing answered" no_b64_reply

tap_end
