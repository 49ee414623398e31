#!/bin/sh
# zeroday's series assembly against `b4 am`, the tool maintainers fetch a
# series with. Each scenario is a set of mails made by real `git
# format-patch --thread` (some edited by hand, as people and lists do):
# the same files go to zeroday through a Maildir source (`run --once`,
# then `series --json`) and to `b4 am` as a local mbox, with the
# Message-ID of the thread's cover letter (or first patch). Both answers
# are reduced to one line: the version, complete or not, and the parts by
# number and Message-ID, in order (0 is the cover letter). For zeroday the
# answer is the series of that thread that is not superseded. Each
# scenario prints "agree" or both lines. A disagreement is expected only
# with its reason (zeroday is right by design, or both are); anything
# else fails.
# b4 runs offline (--offline-mode, no lore address it could reach, and in
# a network namespace of its own when unshare(1) may make one), with a
# private HOME. Speaks TAP.
test_name=b4-compare
. "$ZERODAY_SRCDIR/tests/lib.sh"

if ! command -v b4 > /dev/null 2>&1; then
	echo "1..0 # SKIP b4 is not installed (Debian: apt-get install b4)"
	exit 0
fi
if ! command -v python3 > /dev/null 2>&1; then
	echo "1..0 # SKIP python3 is not installed"
	exit 0
fi

# Mails come From the sender, as git send-email writes them; format-patch
# makes the Message-IDs from the committer's address.
export GIT_COMMITTER_NAME=A GIT_COMMITTER_EMAIL=a@example.org
# b4 reads its settings from git's: nothing it could fetch from, nothing to attest.
# b4 has a HOME of its own, with a maintainer's identity (it needs one).
b4home="$scratch/b4home"
mkdir -p "$b4home"
cat > "$b4home/.gitconfig" <<'EOF'
[user]
	name = Main Tainer
	email = maintainer@example.org
[b4]
	midmask = https://lore.invalid/r/%s
	linkmask = https://lore.invalid/r/%s
	attestation-policy = off
	attestation-check-dkim = no
EOF
netns=""
if unshare -rn true 2> /dev/null; then
	netns="unshare -rn"
fi
echo "# b4 $(b4 --version 2>&1), ${netns:-no network namespace: --offline-mode only}"

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
z tree add kb "$kb" master --non-rebasable --target x86_64:tinyconfig \
	--list "Tree List <list@example.org>" > /dev/null
z run --once --poll-interval 3600 > "$scratch/run0.log" 2>&1
check "the tree's head is polled and built" test $? -eq 0

# The comparison's Python part: an mbox from mail files, zeroday's answer
# from series --json, b4's from its output directory.
cat > "$scratch/cmp.py" <<'EOF'
import email, email.policy, glob, json, mailbox, os, re, sys

def ids(value):
    return re.findall(r'<([^<>\s]+)>', value or '')

def headers(path):
    with open(path, 'rb') as f:
        return email.message_from_binary_file(f, policy=email.policy.compat32)

def thread(msgid, files):
    """The Message-IDs connected to msgid by In-Reply-To and References."""
    edges = {}
    for path in files:
        m = headers(path)
        me = ids(m['Message-ID'])[0]
        for r in ids(m['In-Reply-To']) + ids(m['References']):
            edges.setdefault(me, set()).add(r)
            edges.setdefault(r, set()).add(me)
    seen, todo = {msgid}, [msgid]
    while todo:
        for r in edges.get(todo.pop(), ()):
            if r not in seen:
                seen.add(r)
                todo.append(r)
    return seen

def line(version, complete, parts):
    return 'v%d %s %s' % (version, 'complete' if complete else 'incomplete',
                          ' '.join('%d=%s' % p for p in parts))

def cmd_mbox(out, *files):
    box = mailbox.mbox(out)
    for path in files:
        with open(path, 'rb') as f:
            box.add(email.message_from_binary_file(f, policy=email.policy.compat32))
    box.close()

def parts_of(s):
    return ' '.join('%d=%s' % p for p in sorted((p['n'], p['message_id']) for p in s['parts']))

def cmd_zeroday(series_json, msgid, *files):
    """The series holding msgid, or what superseded it; then notes."""
    t = thread(msgid, files)
    with open(series_json) as f:
        series = json.load(f)
    by_id = {s['id']: s for s in series}
    mine = [s for s in series if any(p['message_id'] in t for p in s['parts'])]
    s = start = next((s for s in mine if any(p['message_id'] == msgid for p in s['parts'])), None)
    while s and s['state'] == 'superseded' and s['superseded_by'] in by_id:
        s = by_id[s['superseded_by']]
    if not s:
        print('none')
        return
    others = [o for o in mine if o is not s and o['state'] != 'superseded']
    same = [o for o in others if o['sender'] == s['sender']]
    print(line(s['version'], s['state'] != 'waiting', sorted((p['n'], p['message_id'])
                                                             for p in s['parts']))
          + ''.join(' [also not superseded: v%d %s %s]' % (o['version'], o['state'], parts_of(o))
                    for o in same))
    if s is not start:
        print('note: the series of this thread is superseded by series %d (v%d), %s' % (
            s['id'], s['version'], 'in this thread' if s in mine else 'outside this thread'))
    for o in others:
        if o['sender'] != s['sender']:
            print('note: series %d of %s in this thread too: v%d %s %s' % (
                o['id'], o['sender'], o['version'], o['state'], parts_of(o)))
    for o in mine:
        if o['state'] == 'testing':
            print('stuck: series %d v%d %s' % (o['id'], o['version'], parts_of(o)))

def cmd_b4(outdir, log):
    with open(log, errors='replace') as f:
        text = f.read()
    complete = 'Thread incomplete' not in text
    mbx = glob.glob(os.path.join(outdir, '*.mbx'))
    if not mbx:
        print('none: ' + ' / '.join(l.strip() for l in text.splitlines() if l.strip()))
        return
    # The version b4 settled on names the file (v2_...); the subjects are as sent.
    v = re.match(r'v(\d+)_', os.path.basename(mbx[0]))
    parts, version = [], int(v.group(1)) if v else 1
    for m in mailbox.mbox(mbx[0]):
        subject = ' '.join((m['Subject'] or '').split())
        tags = re.match(r'\[([^\]]*)\]', subject)
        tags = tags.group(1) if tags else ''
        n = re.search(r'\b(\d+)/\d+\b', tags)
        # b4 writes each patch's Message-ID in its Link: trailer.
        links = re.findall(r'^Link: https://lore\.invalid/r/(\S+)$',
                           m.get_payload(decode=False), re.M)
        mid = (ids(m['Message-ID']) or links or ['?'])[0]
        parts.append((int(n.group(1)) if n else 1, mid))
    for cover in glob.glob(os.path.join(outdir, '*.cover')):
        with open(cover, 'rb') as f:
            c = email.message_from_binary_file(f, policy=email.policy.compat32)
        parts.insert(0, (0, (ids(c['Message-ID']) or ['?'])[0]))
    print(line(version, complete, parts))

globals()['cmd_' + sys.argv[1]](*sys.argv[2:])
EOF
cmp_py() { python3 "$scratch/cmp.py" "$@"; }

# Each scenario's mails go to $scratch/sc/NAME, named in delivery order.
work="$scratch/work"
git clone -q "$kb" "$work"
edits=0
# commits N TEXT: N new commits on the base, each appending a line to src/main.c.
commits() {
	git -C "$work" reset -q --hard "$base"
	for i in $(seq "$1"); do
		edits=$((edits + 1))
		echo "/* $2 $i ($edits) */" >> "$work/src/main.c"
		git -C "$work" commit -q -am "main: $2 $i" -m "Signed-off-by: A <a@example.org>"
	done
}
# fp DIR TAG TITLE ARGS...: git format-patch ARGS into DIR, threaded, the
# cover letter titled TITLE. format-patch makes Message-IDs from the last
# commit's date: TAG, put into each of them, keeps two postings of one
# second apart.
fp() {
	dir=$1 tag=$2 title=$3
	shift 3
	mkdir -p "$dir"
	git -C "$work" format-patch -q --from="A <a@example.org>" --thread -o "$dir" \
		--to list@example.org "$@"
	sed -i -e "s/\\.git\\.a@example\\.org>/.git.$tag.a@example.org>/g" \
		-e "s/\\*\\*\\* SUBJECT HERE \\*\\*\\*/$title/" \
		-e 's/\*\*\* BLURB HERE \*\*\*/The series./' "$dir"/*.patch
}
# mid FILE: the Message-ID of a mail file, without brackets.
mid() { sed -n 's/^Message-I[Dd]: <\(.*\)>$/\1/p' "$1" | head -1; }
# cover DIR, first DIR: the Message-ID of DIR's cover letter, of its patch 1.
cover() { mid "$(echo "$1"/*0000-cover-letter.patch)"; }
first() { mid "$(echo "$1"/*0001-*.patch)"; }
# deliver SCENARIO FILE...: the files, in this order, as the scenario's mails.
deliver() {
	sc="$scratch/sc/$1"
	shift
	mkdir -p "$sc"
	for f in "$@"; do
		k=$(($(ls "$sc" | wc -l) + 1))
		cp "$f" "$sc/$(printf %02d "$k").eml"
	done
}

# compare SCENARIO MSGID EXPECT [REASON]: posts the scenario's mails,
# asks both, prints the answers. EXPECT: agree, or differ (zeroday is
# right by design: REASON says why).
seq_no=0
compare() {
	name=$1 msgid=$2 expect=$3 reason=${4:-}
	sc="$scratch/sc/$name"
	out="$scratch/out/$name"
	mkdir -p "$out/b4"
	for f in "$sc"/*.eml; do
		seq_no=$((seq_no + 1))
		{
			echo "List-Id: Tree List <list.example.org>"
			sed '1{/^From [0-9a-f]\{40\} /d}' "$f"
		} > "$list/tmp/m$seq_no"
		mv "$list/tmp/m$seq_no" "$list/new/$(printf %06d $seq_no).test"
	done
	z run --once --poll-interval 3600 > "$out/run.log" 2>&1
	z series --json > "$out/series.json"
	cmp_py zeroday "$out/series.json" "$msgid" "$sc"/*.eml > "$out/zeroday"
	zd=$(head -1 "$out/zeroday")
	sed -n '2,$s/^/#   zeroday /p' "$out/zeroday"
	cmp_py mbox "$out/thread.mbox" "$sc"/*.eml
	(cd "$out" && HOME="$b4home" $netns b4 --offline-mode --no-interactive --no-stdin \
		am --no-cache --add-link -m "$out/thread.mbox" -o "$out/b4" "$msgid") \
		> "$out/b4.log" 2>&1
	b4=$(cmp_py b4 "$out/b4" "$out/b4.log")
	if [ "$zd" = "$b4" ]; then
		echo "# $name: agree: $zd"
		if [ "$expect" = agree ]; then
			ok "$name: zeroday and b4 agree"
		else
			not_ok "$name: zeroday and b4 agree, though a difference ($expect) was expected: $reason"
		fi
		return
	fi
	echo "# $name: differ"
	echo "#   zeroday: $zd"
	echo "#   b4:      $b4"
	case $expect in
	differ) ok "$name: zeroday differs from b4 by design: $reason" ;;
	*) not_ok "$name: zeroday and b4 agree" ;;
	esac
}

# 1. Three patches and a cover letter.
commits 3 three
fp "$scratch/p/three" three "main: three parts" --cover-letter -3
deliver three "$scratch/p/three"/*.patch
compare three "$(cover "$scratch/p/three")" agree

# 2. A single patch, no cover letter.
commits 1 single
fp "$scratch/p/single" single x -1
deliver single "$scratch/p/single"/*.patch
compare single "$(first "$scratch/p/single")" agree

# 3. v1, then v2 posted in reply to v1's cover letter: both take v2.
commits 2 reroll
fp "$scratch/p/rr1" rr1 "main: reroll" --cover-letter -2
git -C "$work" commit -q --amend -m "main: reroll 2" -m "v2: better" -m "Signed-off-by: A <a@example.org>"
fp "$scratch/p/rr2" rr2 "main: reroll" --cover-letter -2 -v2 \
	--in-reply-to="$(cover "$scratch/p/rr1")"
deliver reroll-in-thread "$scratch/p/rr1"/*.patch "$scratch/p/rr2"/*.patch
compare reroll-in-thread "$(cover "$scratch/p/rr1")" agree

# 4. v1, then v2 as a thread of its own: asked for v2's thread, both take v2.
commits 2 separate
fp "$scratch/p/sp1" sp1 "main: separate" --cover-letter -2
git -C "$work" commit -q --amend -m "main: separate 2" -m "v2: better" -m "Signed-off-by: A <a@example.org>"
fp "$scratch/p/sp2" sp2 "main: separate" --cover-letter -2 -v2
deliver reroll-new-thread "$scratch/p/sp1"/*.patch "$scratch/p/sp2"/*.patch
compare reroll-new-thread "$(cover "$scratch/p/sp2")" agree
# Asked for v1's thread, b4 sees v1 only (it looks for newer versions on
# lore with -c); zeroday knows v2 superseded it. Not a disagreement on
# assembly: b4 is told the thread, zeroday reads the whole list.
zd_v1=$(cmp_py zeroday "$scratch/out/reroll-new-thread/series.json" \
	"$(cover "$scratch/p/sp1")" "$scratch/sc/reroll-new-thread"/*.eml)
echo "$zd_v1" | sed "s/^/# reroll-new-thread, v1's thread: zeroday: /"
v1_superseded() { echo "$zd_v1" | grep -q 'superseded by series [0-9]* (v2), outside this thread'; }
check "reroll-new-thread: v1's thread is superseded in zeroday (b4 needs -c and lore to see it)" v1_superseded

# 5. Chained replies (--thread=deep, send-email's --chain-reply-to): each
# mail in reply to the one before.
commits 3 chain
fp "$scratch/p/chain" chain "main: chained" --cover-letter -3 --thread=deep
deliver chain "$scratch/p/chain"/*.patch
compare chain "$(cover "$scratch/p/chain")" agree

# 6. Parts delivered out of order: 3, the cover letter, 1, 2.
commits 3 shuffled
fp "$scratch/p/ooo" ooo "main: out of order" --cover-letter -3
deliver out-of-order "$scratch/p/ooo"/0003-*.patch "$scratch/p/ooo"/0000-*.patch \
	"$scratch/p/ooo"/0001-*.patch "$scratch/p/ooo"/0002-*.patch
compare out-of-order "$(cover "$scratch/p/ooo")" agree

# 7. A review reply proposing a fixup diff, unquoted, with a trailer.
commits 3 reviewed
fp "$scratch/p/rev" rev "main: reviewed" --cover-letter -3
rp2=$(mid "$scratch/p/rev"/0002-*.patch)
rcover=$(mid "$scratch/p/rev/0000-cover-letter.patch")
cat > "$scratch/p/rev/review.eml" <<EOF
From: Rev Iewer <rev@example.org>
To: A <a@example.org>
Cc: list@example.org
Subject: Re: [PATCH 2/3] main: reviewed 2
Date: $(date -R)
Message-ID: <review.rev@example.org>
In-Reply-To: <$rp2>
References: <$rcover> <$rp2>

On a day, A wrote:
> +/* reviewed 2 */

Better like this:

diff --git a/src/main.c b/src/main.c
--- a/src/main.c
+++ b/src/main.c
@@ -1,1 +1,1 @@
-int net_init(void);
+int net_init(void); /* fixed */

Reviewed-by: Rev Iewer <rev@example.org>
EOF
deliver review-diff "$scratch/p/rev"/*.patch "$scratch/p/rev/review.eml"
compare review-diff "$rcover" agree

# 8. A RESEND of a series, as a thread of its own (asked for the resend's
# thread), and a RESEND posted into the original's thread.
commits 2 resent
fp "$scratch/p/orig" orig "main: resent" --cover-letter -2
fp "$scratch/p/resend" resend "main: resent" --cover-letter -2 --subject-prefix="PATCH RESEND"
deliver resend-new-thread "$scratch/p/orig"/*.patch "$scratch/p/resend"/*.patch
compare resend-new-thread "$(cover "$scratch/p/resend")" agree
commits 2 resent-in-thread
fp "$scratch/p/orig2" orig2 "main: resent in thread" --cover-letter -2
fp "$scratch/p/resend2" resend2 "main: resent in thread" --cover-letter -2 \
	--subject-prefix="PATCH RESEND" --in-reply-to="$(cover "$scratch/p/orig2")"
deliver resend-in-thread "$scratch/p/orig2"/*.patch "$scratch/p/resend2"/*.patch
compare resend-in-thread "$(cover "$scratch/p/orig2")" differ \
	"one series either way, the same diffs: b4 takes the RESEND's cover letter with the original's patches, zeroday the RESEND whole"

# 9. An RFC series: [RFC PATCH n/2].
commits 2 rfc
fp "$scratch/p/rfc" rfc "main: an idea" --cover-letter -2 --rfc
deliver rfc "$scratch/p/rfc"/*.patch
compare rfc "$(cover "$scratch/p/rfc")" agree

# 10. A subject prefix and a version: [PATCH net-next v3 n/2].
commits 2 prefixed
fp "$scratch/p/pfx" pfx "main: for next" --cover-letter -2 -v3 --subject-prefix="PATCH net-next"
deliver prefix "$scratch/p/pfx"/*.patch
compare prefix "$(cover "$scratch/p/pfx")" agree

# 11. Patch 2/3 never comes: neither calls the series complete.
commits 3 holed
fp "$scratch/p/hole" hole "main: with a hole" --cover-letter -3
deliver missing-patch "$scratch/p/hole"/0000-*.patch "$scratch/p/hole"/0001-*.patch \
	"$scratch/p/hole"/0003-*.patch
compare missing-patch "$(cover "$scratch/p/hole")" agree

# 12. Hand-edited variants, as people post them.
# A single patch, then its v2 in reply to it (no cover letters).
commits 1 single-reroll
fp "$scratch/p/sr1" sr1 x -1
git -C "$work" commit -q --amend -m "main: single-reroll 1" -m "v2: better" -m "Signed-off-by: A <a@example.org>"
fp "$scratch/p/sr2" sr2 x -1 -v2 --in-reply-to="$(first "$scratch/p/sr1")"
deliver single-reroll "$scratch/p/sr1"/*.patch "$scratch/p/sr2"/*.patch
compare single-reroll "$(first "$scratch/p/sr1")" agree

# Only the cover letter says v2: the patches, in reply to it, say [PATCH n/2].
commits 2 cover-versioned
fp "$scratch/p/cv" cv "main: only the cover says v2" --cover-letter -2 -v2
sed -i 's/^Subject: \[PATCH v2 \([12]\/2\)\]/Subject: [PATCH \1]/' "$scratch/p/cv"/v2-000[12]-*.patch
deliver cover-versioned "$scratch/p/cv"/*.patch
compare cover-versioned "$(cover "$scratch/p/cv")" agree

# A partial reroll: v1 of three, then only [PATCH v2 2/3], in reply to v1's 2/3.
commits 3 partial
fp "$scratch/p/pr" pr "main: partial reroll" --cover-letter -3
pr2=$(mid "$scratch/p/pr"/0002-*.patch)
sed -e "s/^Message-I[Dd]: .*/Message-ID: <v2-2.pr.a@example.org>/" \
	-e "s/^In-Reply-To: .*/In-Reply-To: <$pr2>/" \
	-e "s/^References: .*/References: <$(cover "$scratch/p/pr")> <$pr2>/" \
	-e 's/^Subject: \[PATCH 2\/3\]/Subject: [PATCH v2 2\/3]/' \
	-e 's/^---$/---\nv2: only this patch changed/' \
	"$scratch/p/pr"/0002-*.patch > "$scratch/p/pr/v2-2.eml"
deliver partial-reroll "$scratch/p/pr"/*.patch "$scratch/p/pr/v2-2.eml"
compare partial-reroll "$(cover "$scratch/p/pr")" agree

# v2 from the same person at another address, in reply to v1's cover letter.
commits 2 moved
fp "$scratch/p/mv1" mv1 "main: moved" --cover-letter -2
git -C "$work" commit -q --amend -m "main: moved 2" -m "v2: better" -m "Signed-off-by: A <a@example.org>"
fp "$scratch/p/mv2" mv2 "main: moved" --cover-letter -2 -v2 --in-reply-to="$(cover "$scratch/p/mv1")"
sed -i 's/^From: A <a@example.org>$/From: A <a@new.example.com>/' "$scratch/p/mv2"/*.patch
deliver other-sender-v2 "$scratch/p/mv1"/*.patch "$scratch/p/mv2"/*.patch
compare other-sender-v2 "$(cover "$scratch/p/mv1")" differ \
	"only the sender of v1 may supersede it: zeroday tests v1 and v2 both, b4 takes the newest"

# A reviewer's own [PATCH] (no Re:), with a diff, in reply to patch 2/3.
commits 3 fixup
fp "$scratch/p/fx" fx "main: with a fixup" --cover-letter -3
fx2=$(mid "$scratch/p/fx"/0002-*.patch)
cat > "$scratch/p/fx/fixup.eml" <<EOF
From: Rev Iewer <rev@example.org>
To: list@example.org
Subject: [PATCH] main: fixup on top
Date: $(date -R)
Message-ID: <fixup.rev@example.org>
In-Reply-To: <$fx2>
References: <$(cover "$scratch/p/fx")> <$fx2>

Apply this on top.

Signed-off-by: Rev Iewer <rev@example.org>
---
diff --git a/src/main.c b/src/main.c
--- a/src/main.c
+++ b/src/main.c
@@ -1,1 +1,1 @@
-int net_init(void);
+int net_init(void); /* fixed */
EOF
deliver reviewer-patch "$scratch/p/fx"/*.patch "$scratch/p/fx/fixup.eml"
compare reviewer-patch "$(cover "$scratch/p/fx")" agree

# Every b4 ran offline (and, with unshare, without a network to reach).
offline() { for l in "$scratch"/out/*/b4.log; do grep -q 'Running in OFFLINE mode' "$l" || return 1; done; }
check "b4 ran offline every time${netns:+, in a network namespace}" offline

# After run --once nothing is left half-tested: a RESEND applies as the
# very commits its original did, and one job's results serve both.
z series --json > "$scratch/all.json"
stuck=$(python3 -c 'import json, sys
print(" ".join(str(s["id"]) for s in json.load(open(sys.argv[1])) if s["state"] == "testing"))' \
	"$scratch/all.json")
if [ -z "$stuck" ]; then
	ok "no series is left testing"
else
	not_ok "no series is left testing (series $stuck are)"
fi

tap_end
