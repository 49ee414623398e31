#!/bin/sh
# Posted patch series through real servers: the scenarios of
# tests/series.sh, with the series sent by the real `git send-email`
# (STARTTLS, the test CA, AUTH) to a Postfix on 127.0.0.1, delivered over
# LMTP into a Dovecot mailbox for list@example.org, read by zeroday over
# IMAP ([mail] sources = imap://list%40example.org@..., STARTTLS and the
# test CA), and zeroday's replies sent back through the Postfix
# ([mail] outbox = smtp://...) and read over IMAP (tests/imap-fetch.py)
# from the author's and the list's mailboxes, their threading headers
# (Subject, In-Reply-To, References, To, Cc) checked exactly. A clean
# 3-patch series with a cover letter and a base-commit: trailer (one
# "no new problems" reply on the cover letter), a series without one whose
# patch 2/3 breaks the build (the reply on patch 2 names the error, the
# cover letter gets a summary), a v2 superseding a v1 (v1 never answered;
# the list only in Bcc, so the base is chosen by the subject's prefix),
# parts sent out of order (3 and 2, a run, then 1 and 0), a series that
# applies to no base (one reply), a review reply quoting a diff (no
# series), malformed mails from tests/data/patchmail and two over
# [mail] max-size (quarantined, listed by status --json, never answered;
# nul-header.eml reaches zeroday with its NUL as 0x80, as IMAP has no NUL),
# zeroday's own replies read back from the list (never answered), Dovecot
# restarted (SIGTERM) and then killed (SIGKILL) while zeroday ingests 100
# mails, a changed UIDVALIDITY with the UIDs shifted (nothing stored twice;
# a later mail stored), and a kill -9 at each ingest step: every mail
# stored exactly once.
#
# One credential serves both ways: the credentials file's user is the
# IMAP URL's user, list@example.org (ingest.c source_password), and the
# Postfix of tests/mailservers.sh authenticates through Dovecot's static
# passdb, which takes any user name with MS_PASSWORD, so zeroday's SMTP
# AUTH as list@example.org is accepted too. Needs root (Postfix and
# Dovecot start as root) and git send-email (Debian: git-email). Speaks TAP.
test_name=series-real
. "$ZERODAY_SRCDIR/tests/lib.sh"
. "$ZERODAY_SRCDIR/tests/mailservers.sh"

passed=0
bad=0
ok() { n=$((n + 1)); passed=$((passed + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=1; bad=$((bad + 1)); echo "not ok $n - $1"; }
finish() {
	echo "# $passed passed, $bad failed, 0 skipped"
	tap_end
}

if [ "$(id -u)" -ne 0 ]; then
	echo "1..0 # SKIP Postfix and Dovecot start as root; run the suite as root (./quickstart check)"
	echo "# 0 passed, 0 failed, 1 skipped"
	exit 0
fi
ms="$scratch/ms"
zpid=
trap '[ -z "$zpid" ] || { kill -9 "$zpid" 2>/dev/null; wait "$zpid" 2>/dev/null; }; ms_stop "$ms"; cleanup' EXIT
if ! ms_start "$ms"; then
	not_ok "Postfix and Dovecot start on 127.0.0.1"
	finish
fi
# A missing git send-email is a missing dependency, not a reason to skip.
if ! git send-email -h 2>&1 | grep -q -- --smtp-server; then
	not_ok "git send-email is installed (Debian: apt-get install git-email)"
	finish
fi

list=list@example.org
author=a@example.org
export GIT_COMMITTER_NAME=A GIT_COMMITTER_EMAIL=$author
kb="$scratch/kb"
kbuild_repo "$kb" root
base=$(git -C "$kb" rev-parse HEAD)

printf 'user = %s\npassword = %s\n' "$list" "$MS_PASSWORD" > "$scratch/creds"
chmod 0600 "$scratch/creds"
source_url="imap://list%40example.org@127.0.0.1:$MS_IMAP_PORT/INBOX"
cat > "$scratch/z.conf" <<EOF
[git]
allow-local-trees = true
[mail]
address = bot@example.org
name = Test Robot
archive-url = https://lists.example.org/r/
sources = $source_url
outbox = smtp://127.0.0.1:$MS_SMTP_PORT
ca-file = $ms/ca.pem
credentials = $scratch/creds
timeout = 10
retry = 1
grace = 0
max-size = 500000
EOF
z() { "$ZERODAY" --config="$scratch/z.conf" --state-dir="$scratch/state" "$@"; }
# run NAME: zeroday run --once, its output in $scratch/NAME.log; its status.
run() { z run --once --poll-interval 3600 > "$scratch/$1.log" 2>&1; }
z init > /dev/null
z tree add kb "$kb" master --non-rebasable --target x86_64:defconfig \
	--list "Tree List <$list>" --prefix kb-next --mail-clean > /dev/null
run run0
check "the tree's head is polled and built" test $? -eq 0

# The author's clone, set up to send with git send-email through Postfix:
# STARTTLS, the test CA, AUTH; no Cc taken from the trailers.
work="$scratch/work"
git clone -q "$kb" "$work"
gc() { git -C "$work" config "$@"; }
gc sendemail.smtpServer 127.0.0.1
gc sendemail.smtpServerPort "$MS_SMTP_PORT"
gc sendemail.smtpEncryption tls
gc sendemail.smtpSslCertPath "$ms/ca.pem"
gc sendemail.smtpUser "$MS_USER"
gc sendemail.smtpPass "$MS_PASSWORD"
gc sendemail.confirm never
gc sendemail.suppresscc all
gc sendemail.from "A <$author>"
# branch NAME DESCRIPTION: a new branch NAME of the work clone at the base;
# DESCRIPTION is the subject of its cover letter (--cover-from-description).
branch() {
	git -C "$work" checkout -q -b "$1" "$base"
	gc "branch.$1.description" "$2"
}
# commit MESSAGE: commits what changed in the work clone.
commit() { git -C "$work" commit -q -am "$1" -m "Signed-off-by: A <$author>"; }

# send NAME ARGS...: git send-email ARGS... from the work clone; its
# transcript in $scratch/NAME.send, the Message-IDs it sent (without
# brackets, in order) in $scratch/NAME.ids; then waits until each is in the
# list's Maildir (delivered by Postfix over LMTP).
send() {
	_name=$1
	shift
	git -C "$work" send-email "$@" > "$scratch/$_name.send" 2>&1 ||
		{ echo "# git send-email failed:"; sed 's/^/# /' "$scratch/$_name.send"; return 1; }
	sed -n 's/^Message-Id: <\(.*\)>$/\1/p' "$scratch/$_name.send" > "$scratch/$_name.ids"
	[ -s "$scratch/$_name.ids" ] || return 1
	while read -r _mid; do
		delivered "$list" "Message-Id: <$_mid>" 1 || return 1
	done < "$scratch/$_name.ids"
}
# msgid NAME N: the Nth Message-ID sent by send NAME (1 is the first sent).
msgid() { sed -n "$2p" "$scratch/$1.ids"; }
# delivered ADDRESS HEADER-LINE COUNT: waits (30 s at most) until ADDRESS's
# Maildir holds COUNT mails (or more) with the header line HEADER-LINE.
delivered() {
	_md="$MS_MAILDIRS/$1"
	for _ in $(seq 1 150); do
		_got=$(cat "$_md"/new/* "$_md"/cur/* 2>/dev/null | grep -c -i -F -x -- "$2")
		[ "$_got" -ge "$3" ] && return 0
		sleep 0.2
	done
	echo "# $1 has $_got of $3 mails with '$2' after 30 s"
	return 1
}
# imapf ADDRESS ARGS...: tests/imap-fetch.py on ADDRESS's INBOX.
imapf() {
	_who=$1
	shift
	python3 "$ZERODAY_SRCDIR/tests/imap-fetch.py" --port "$MS_IMAP_PORT" --user "$_who" \
		--password "$MS_PASSWORD" "$@"
}
bot="Test Robot <bot@example.org>"
# replies ADDRESS MID: how many of zeroday's mails in ADDRESS's mailbox
# reply to <MID>.
replies() { imapf "$1" --count --where "From=$bot" --where "In-Reply-To=<$2>"; }
# field ADDRESS MID NAME: header NAME of zeroday's replies to <MID> in
# ADDRESS's mailbox, read over IMAP, one a line.
field() { imapf "$1" --where "From=$bot" --where "In-Reply-To=<$2>" --field "$3"; }
# is WHAT EXPECTED ACTUAL: a check of ACTUAL against EXPECTED, printing both on a mismatch.
is() {
	[ "$2" = "$3" ] && return 0
	printf '# %s: expected "%s", got "%s"\n' "$1" "$2" "$3"
	return 1
}
# threaded WHAT MID SUBJECT REFERENCES TO CC: zeroday's reply to <MID>
# reached the author and the Cc address once each, and its headers, as read
# over IMAP from both mailboxes, are exactly these (REFERENCES without
# brackets, spaced; CC one address).
threaded() {
	_what=$1 _mid=$2
	for _bid in $(outbox_ids "$_mid"); do
		delivered "$author" "Message-Id: <$_bid>" 1
		delivered "$6" "Message-Id: <$_bid>" 1
	done
	_refs=$(printf '%s' "$4" | sed 's/[^ ][^ ]*/<&>/g')
	for _who in "$author" "$6"; do
		check "$_what: one reply to $_who" is count 1 "$(replies "$_who" "$_mid")"
		check "$_what: Subject (at $_who)" is Subject "$3" "$(field "$_who" "$_mid" Subject)"
		check "$_what: References (at $_who)" is References "$_refs" "$(field "$_who" "$_mid" References)"
	done
	check "$_what: In-Reply-To" is In-Reply-To "<$_mid>" "$(field "$author" "$_mid" In-Reply-To)"
	check "$_what: To" is To "$5" "$(field "$author" "$_mid" To)"
	check "$_what: Cc" is Cc "${7:-$6}" "$(field "$author" "$_mid" Cc)"
}
# body ADDRESS MID: the reply to <MID> in ADDRESS's mailbox, whole.
body() { imapf "$1" --where "In-Reply-To=<$2>"; }
# series_json: `zeroday series --json`, one series a line.
series_json() { z series --json | sed 's/, {"id": \([0-9]*\), "subject"/\n{"id": \1, "subject"/g'; }
has_text() { printf "%s\n" "$1" | grep -q -- "$2"; }
# sent_replies: how many series replies the outbox holds.
sent_replies() {
	z outbox --json | python3 -c 'import json, sys
print(sum(1 for m in json.load(sys.stdin) if m["kind"] == "series"))'
}
# outbox_ids MID: the Message-IDs of the outbox mails that reply to <MID>.
outbox_ids() {
	z outbox --json | python3 -c 'import json, sys
for m in json.load(sys.stdin):
    if m["in_reply_to"] == sys.argv[1]:
        print(m["message_id"])' "$1"
}
# outbox_to MID: how many outbox mails reply to <MID>.
outbox_to() {
	z outbox --json | python3 -c 'import json, sys
print(sum(1 for m in json.load(sys.stdin) if m["in_reply_to"] == sys.argv[1]))' "$1"
}
# stored [LIKE]: how many mails the store holds (whose Message-ID is LIKE).
stored() {
	sqlite3 "$scratch/state/zeroday.db" ".timeout 5000" \
		"SELECT count(*) FROM mails WHERE message_id LIKE '${1:-%}'"
}
# twice: the Message-IDs the store holds more than once, one a line.
twice() {
	sqlite3 "$scratch/state/zeroday.db" ".timeout 5000" \
		"SELECT message_id FROM mails WHERE message_id != '' GROUP BY message_id HAVING count(*) > 1"
}
status_mails() { z status --json | sed -n 's/.*"mails": \([0-9]*\),.*/\1/p'; }

# 1. A clean series of three with a cover letter and a base-commit: trailer.
branch s1 "main: three clean parts"
for i in 1 2 3; do
	echo "/* part $i */" >> "$work/src/main.c"
	commit "main: part $i"
done
check "git send-email sends the clean series through Postfix (STARTTLS, AUTH)" \
	send s1 --to "$list" --cover-letter --cover-from-description=subject --base="$base" -3
cover1=$(msgid s1 1)
has_base() { imapf "$list" --where "Message-Id=<$cover1>" | grep -q "^base-commit: $base\$"; }
check "it carries base-commit:, as read back over IMAP" has_base
run run1
check "run --once tests the clean series" test $? -eq 0
check "it read the four mails over IMAP" grep -q "mail: [4-9] new" "$scratch/run1.log"
s1=$(series_json | grep '"subject": "main: three clean parts"')
check "the series is tested" has_text "$s1" '"state": "tested"'
check "its base is the base-commit: trailer's" has_text "$s1" "\"base\": \"$base\", \"base_how\": \"base-commit\""
check "every patch passes" has_text "$s1" '"n": 3, "target": "x86_64:defconfig", "commit": "[0-9a-f]*", "result": "pass"'
threaded "clean" "$cover1" "Re: [PATCH 0/3] main: three clean parts" "$cover1" \
	"A <$author>" "$list"
body "$author" "$cover1" > "$scratch/reply1"
check "the clean reply says no new problems" grep -qi "no new" "$scratch/reply1"
for i in 2 3 4; do
	check "no reply on patch $((i - 1))/3" is replies 0 "$(replies "$list" "$(msgid s1 $i)")"
done

# 2. Patch 2/3 adds a build error; no base-commit: the tree's head is the base.
branch s2 "net: readiness, broken"
echo "/* fine */" >> "$work/src/main.c"
commit "main: fine first"
sed -i 's/return ready - 1;/undeclared_counter++;\n\treturn ready - 1;/' "$work/src/net.c"
commit "net: count readiness"
echo "/* fine too */" >> "$work/src/main.c"
commit "main: fine last"
check "git send-email sends the broken series" \
	send s2 --to "$list" --cover-letter --cover-from-description=subject -3
cover2=$(msgid s2 1) p1=$(msgid s2 2) p2=$(msgid s2 3) p3=$(msgid s2 4)
no_base() { ! imapf "$list" --where "Message-Id=<$p3>" | grep -q "^base-commit:"; }
check "it carries no base-commit:" no_base
run run2
s2=$(series_json | grep '"subject": "net: readiness, broken"')
check "the broken series is tested" has_text "$s2" '"state": "tested"'
check "its base is the tree's head, chosen by its list (in To)" has_text "$s2" '"base_how": "list list@example.org (kb/master)"'
check "patch 2 fails with a new error" has_text "$s2" '"n": 2, "target": "x86_64:defconfig", "commit": "[0-9a-f]*", "result": "fail (new error)"'
check "patch 3 is not blamed for it" has_text "$s2" '"n": 3, "target": "x86_64:defconfig", "commit": "[0-9a-f]*", "result": "fail (already failing in parent)"'
threaded "on patch 2" "$p2" "Re: [PATCH 2/3] net: count readiness" "$cover2 $p2" \
	"A <$author>" "$list"
body "$author" "$p2" > "$scratch/reply2"
check "the reply names the new error" grep -q "undeclared_counter" "$scratch/reply2"
own2=$(sed -n 's/^Message-I[Dd]: <\(.*\)>\r\{0,1\}$/\1/p' "$scratch/reply2" | head -1)
check "and closes with the archive link of the reply itself" \
	grep -q "^Closes: https://lists.example.org/r/$own2\$" "$scratch/reply2"
threaded "summary" "$cover2" "Re: [PATCH 0/3] net: readiness, broken" "$cover2" \
	"A <$author>" "$list"
body "$author" "$cover2" > "$scratch/summary2"
check "the summary names patch 2" grep -q "2/3" "$scratch/summary2"
check "patch 1 gets no reply" is replies 0 "$(replies "$list" "$p1")"
check "patch 3 gets no reply" is replies 0 "$(replies "$list" "$p3")"

# 3. v1 and v2 of one series, both in before a run: only v2 is tested. v2
# names the list only in Bcc: its base is chosen by the subject's prefix.
branch v "main: versioned change"
echo "/* v1 */" >> "$work/src/main.c"
commit "main: versioned change"
check "git send-email sends v1" send v1 --to "$list" -1 -v1 --subject-prefix="PATCH kb-next"
git -C "$work" commit -q --amend -m "main: versioned change" -m "v2: better"
check "and v2, the list in Bcc" send v2 --to other@example.org --bcc "$list" -1 -v2 --subject-prefix="PATCH kb-next"
v1mid=$(msgid v1 1) v2mid=$(msgid v2 1)
no_list_header() { ! imapf "$list" --where "Message-Id=<$v2mid>" --headers-only | grep -qi "^\(to\|cc\):.*$list"; }
check "v2 reached the list's mailbox without naming it" no_list_header
run run3
v1=$(series_json | grep '"subject": "main: versioned change", "version": 1,')
v2=$(series_json | grep '"subject": "main: versioned change", "version": 2,')
check "v1 is superseded" has_text "$v1" '"state": "superseded"'
check "v2 is tested, its base chosen by its prefix" has_text "$v2" '"state": "tested".*"base_how": "prefix kb-next (kb/master)"'
# The reply goes to the mail's own recipients and the tree's lists
# (series.c reply_on): the list, only in Bcc, is Cc'd on it.
threaded "v2" "$v2mid" "Re: [PATCH kb-next v2] main: versioned change" "$v2mid" \
	"A <$author>" other@example.org "other@example.org, Tree List <$list>"
check "v2: the tree's list, only in Bcc, gets one copy of the reply" \
	is replies 1 "$(replies "$list" "$v2mid")"
check "v1 gets no reply (outbox)" is outbox 0 "$(outbox_to "$v1mid")"
check "v1 gets no reply (author's mailbox)" is replies 0 "$(replies "$author" "$v1mid")"

# 4. Out of order: patches 3 and 2 first; they wait; then 1 and the cover letter.
branch o "main: out of order"
for i in 1 2 3; do
	echo "/* ooo $i */" >> "$work/src/main.c"
	commit "main: out of order $i"
done
git -C "$work" format-patch -q --cover-letter --cover-from-description=subject --thread \
	-o "$scratch/o" -3
check "git send-email sends patches 3 and 2" \
	send o1 --to "$list" --no-thread "$scratch/o/0003-"*.patch "$scratch/o/0002-"*.patch
run run4
check "parts missing: the series waits, and run --once says so" \
	grep -q "waits: for parts not yet received" "$scratch/run4.log"
check "then 1 and the cover letter" \
	send o2 --to "$list" --no-thread "$scratch/o/0001-"*.patch "$scratch/o/0000-"*.patch
ocover=$(msgid o2 2)
uids_out_of_order() {
	test "$(imapf "$list" --field Subject | grep 'out of order' | tr '\n' '|')" = \
		"[PATCH 3/3] main: out of order 3|[PATCH 2/3] main: out of order 2|[PATCH 1/3] main: out of order 1|[PATCH 0/3] main: out of order|"
}
check "the list's mailbox holds them in the order 3, 2, 1, 0" uids_out_of_order
run run5
o=$(series_json | grep '"subject": "main: out of order"')
check "the late parts complete it, and it is tested" has_text "$o" '"state": "tested"'
threaded "out of order" "$ocover" "Re: [PATCH 0/3] main: out of order" "$ocover" \
	"A <$author>" "$list"

# 5. A series that applies to no base: one reply listing the bases tried.
branch nb "nowhere"
printf 'int nowhere(void);\n' > "$work/src/nowhere.c"
git -C "$work" add src/nowhere.c && commit "nowhere: add"
echo "/* edit */" >> "$work/src/nowhere.c"
commit "nowhere: edit a file the tree lacks"
check "git send-email sends a patch for a file no base has" send nb --to "$list" -1
nbmid=$(msgid nb 1)
run run6
nb=$(series_json | grep '"subject": "nowhere: edit a file the tree lacks"')
check "it could not apply" has_text "$nb" '"state": "could-not-apply"'
check "the bases tried are recorded with the reason" has_text "$nb" '"applied": false, "reason": "patch 1/1 does not apply'
threaded "no base" "$nbmid" "Re: [PATCH] nowhere: edit a file the tree lacks" "$nbmid" \
	"A <$author>" "$list"
body "$author" "$nbmid" > "$scratch/nbreply"
check "it asks for format-patch --base" grep -q "format-patch --base" "$scratch/nbreply"

# 6. A review reply quoting a diff, sent with git send-email too; malformed
# mails (tests/data/patchmail) stored into the list's mailbox as they are.
cat > "$scratch/review.eml" <<EOF
From: Rev Iewer <rev@example.org>
To: $list
Subject: Re: [PATCH 2/3] net: count readiness
Message-Id: <review-1@example.org>
In-Reply-To: <$p2>
References: <$cover2> <$p2>

> diff --git a/src/net.c b/src/net.c
> --- a/src/net.c
> +++ b/src/net.c
> @@ -5,5 +5,6 @@

This breaks the build.
EOF
check "git send-email sends a review reply quoting a diff" \
	send review --to "$list" --no-thread --from "Rev Iewer <rev@example.org>" "$scratch/review.eml"
q_before=$(z status --json | grep -o '"reason": "' | wc -l)
for f in no-message-id truncated-multipart nul-header; do
	check "doveadm stores $f.eml in the list's mailbox" \
		ms_deliver_file "$ms" "$list" "$ZERODAY_SRCDIR/tests/data/patchmail/$f.eml"
done
# And one over [mail] max-size (500000 bytes): refused before its fetch.
{
	printf 'From: Big <big@example.org>\nTo: %s\nSubject: [PATCH] big\nMessage-ID: <big-1@example.org>\n\n' "$list"
	head -c 600000 /dev/zero | tr '\0' 'x' | fold -w 70
} > "$scratch/big.eml"
check "doveadm stores a mail over max-size" ms_deliver_file "$ms" "$list" "$scratch/big.eml"
# And one over max-size without a Message-ID.
sed -e '/^Message-ID:/d' -e 's/^Subject: .*/Subject: big, no id/' "$scratch/big.eml" > "$scratch/big-noid.eml"
check "and one without a Message-ID" ms_deliver_file "$ms" "$list" "$scratch/big-noid.eml"
before=$(series_json | grep -c '"subject"')
replies_before=$(sent_replies)
run run7
check "run --once reads them" test $? -eq 0
z status --json > "$scratch/status7"
check "four more mails quarantined, listed by status --json" \
	is quarantined "$((q_before + 4))" "$(grep -o '"reason": "' "$scratch/status7" | wc -l)"
q_by_id() { grep -q "\"message_id\": \"$1\", \"source\": \"$source_url\", \"reason\": \"$2" "$scratch/status7"; }
check "no Message-ID: quarantined from the IMAP source, with its reason" q_by_id "" "no Message-ID"
check "the truncated multipart: quarantined, with its reason" \
	q_by_id 5c1e0a3e-cut0-4d8e-9a51-2f3c0e1d9b7a@example.com "truncated multipart"
check "the mail over max-size: quarantined unfetched, too large" \
	q_by_id big-1@example.org "too large: [0-9]* bytes (at most 500000)"
check "and the one without a Message-ID" \
	q_by_id "" "too large: [0-9]* bytes (at most 500000)"
# IMAP carries no NUL: Dovecot sends the header's NUL as 0x80, so what
# zeroday reads is a well-formed patch, for no subscribed tree.
nul=$(series_json | grep '"subject": "net: acme: fix NULL dereference in acme_probe()"')
check "nul-header.eml, its NUL sent as 0x80 by Dovecot: a series for no tree, ignored" \
	has_text "$nul" '"state": "ignored"'
check "the review reply and the quarantined mails make no series" is series "$((before + 1))" \
	"$(series_json | grep -c '"subject"')"
check "none of them answered, nor the review reply" is replies "$replies_before" "$(sent_replies)"
check "the review reply gets no reply" is outbox 0 "$(outbox_to review-1@example.org)"
check "the malformed mails' author got nothing" test ! -e "$MS_MAILDIRS/marta.kowalska@example.com"

# zeroday's own replies came back through the list: read, never answered.
run run8
imapf "$list" --where "From=$bot" --field Message-Id | tr -d '<>' > "$scratch/own"
own_stored() {
	while read -r _mid; do
		[ "$(stored "$_mid")" = 1 ] || { echo "# $_mid: stored $(stored "$_mid") times"; return 1; }
	done < "$scratch/own"
}
check "its $(wc -l < "$scratch/own") replies in the list's mailbox were read back, each once" own_stored
check "and are never answered" is replies "$replies_before" "$(sent_replies)"

# 7. Dovecot restarted (SIGTERM, then started again) while zeroday ingests
# 100 mails; then killed (SIGKILL, every process of it: the IMAP session
# ends in the middle of a command) and started again while it ingests 100
# more. Each mail is stored exactly once after a second run.
# bulk TAG: 100 mails Message-ID <TAG-N@example.org> into the list's
# mailbox; then zeroday run --once in the background ($zpid), and waits
# until it has stored 5 of them (or ended).
bulk() {
	mkdir "$scratch/$1"
	for i in $(seq 1 100); do
		printf 'From: B <b@example.org>\nTo: %s\nSubject: %s %s\nMessage-ID: <%s-%s@example.org>\n\n%s\n' \
			"$list" "$1" "$i" "$1" "$i" "$pad" > "$scratch/$1/$i"
		ms_deliver_file "$ms" "$list" "$scratch/$1/$i" || return 1
	done
	z run --once --poll-interval 3600 > "$scratch/$1.log" 2>&1 &
	zpid=$!
	for _ in $(seq 1 400); do
		[ "$(stored "$1-%")" -ge 5 ] && break
		kill -0 "$zpid" 2>/dev/null || break
		sleep 0.05
	done
}
# bulk_end TAG: waits for the background run; says how it ended.
bulk_end() {
	wait "$zpid"
	echo "# $1: the run ended with status $?, $(stored "$1-%") of 100 stored"
	zpid=
}
pad=$(head -c 60000 /dev/zero | tr '\0' 'x' | fold -w 70)
bulk restart
at_restart=$(stored 'restart-%')
check "Dovecot restarted with $at_restart of 100 stored" ms_restart_dovecot "$ms"
bulk_end restart
# Dovecot lets a session under way finish (here a second, then its helpers
# are killed): whether this one was cut depends on the timing.
echo "# the restart began with $at_restart of 100 stored; the run says:"
sed 's/^/#   /' "$scratch/restart.log" | head -5
run restart-2
check "after the restart, the next run has all 100" is stored 100 "$(stored 'restart-%')"
check "each exactly once" is distinct 100 \
	"$(sqlite3 "$scratch/state/zeroday.db" "SELECT count(DISTINCT message_id) FROM mails WHERE message_id LIKE 'restart-%'")"

# 6 MB in all, over SOURCE_BATCH_BYTES (mail/source.h): zeroday fetches
# them in two UID FETCH batches, and the kill, while it stores the first,
# cuts its session before it asks for the second.
pad=$(head -c 60000 /dev/zero | tr '\0' 'x' | fold -w 70)
bulk crash
at_crash=$(stored 'crash-%')
check "Dovecot killed and started again with $at_crash of 100 stored" ms_crash_dovecot "$ms"
bulk_end crash
check "zeroday was in the middle of the ingest ($at_crash of 100)" \
	test "$at_crash" -gt 0 -a "$at_crash" -lt 100
check "the run says the IMAP source failed" grep -q "ingest: imap://.*" "$scratch/crash.log"
check "and counts it" grep -q "mail: .* 1 source failed" "$scratch/crash.log"
run crash-2
check "the next run stores the rest: all 100" is stored 100 "$(stored 'crash-%')"
check "each exactly once" is distinct 100 \
	"$(sqlite3 "$scratch/state/zeroday.db" "SELECT count(DISTINCT message_id) FROM mails WHERE message_id LIKE 'crash-%'")"

# 8. A changed UIDVALIDITY: the mailbox renumbered, its mails kept.
n_before=$(stored)
status_before=$(status_mails)
replies_before=$(sent_replies)
# The first mail gone too (a mailbox restored from a backup without it):
# every UID after it changes.
check "the list's first mail expunged" ms_expunge "$ms" "$list" uid 1
uidv=$(ms_renumber "$ms" "$list")
check "Dovecot renumbered the list's mailbox (UIDVALIDITY $uidv)" test -n "$uidv"
run run11
check "the next run says UIDVALIDITY changed" grep -q "UIDVALIDITY changed" "$scratch/run11.log"
check "and stores nothing twice" is stored "$n_before" "$(stored)"
check "not even the mail over max-size without a Message-ID" is quarantined 1 \
	"$(sqlite3 "$scratch/state/zeroday.db" "SELECT count(*) FROM mails WHERE message_id = '' AND reason LIKE '%too large%'")"
check "status --json counts the same mails" is mails "$status_before" "$(status_mails)"
check "nothing answered again" is replies "$replies_before" "$(sent_replies)"
printf 'From: L <l@example.org>\nTo: %s\nSubject: after\nMessage-ID: <after-renumber@example.org>\n\nLate.\n' \
	"$list" > "$scratch/after"
ms_deliver_file "$ms" "$list" "$scratch/after"
n_resynced=$(stored)
run run12
check "a mail added after it is stored" is after 1 "$(stored after-renumber@example.org)"
check "and only it" is stored "$((n_resynced + 1))" "$(stored)"

# 9. kill -9 at each ingest step, over IMAP: stored exactly once.
for step in ingest-fetched ingest-stored ingest-committed; do
	printf 'From: C <c@example.org>\nTo: %s\nSubject: kill at %s\nMessage-ID: <kill-%s@example.org>\n\nHello.\n' \
		"$list" "$step" "$step" > "$scratch/kill-$step"
	ms_deliver_file "$ms" "$list" "$scratch/kill-$step"
	ZERODAY_TEST_CRASH=$step z run --once --poll-interval 3600 > "$scratch/kill-$step.log" 2>&1
	killed=$?
	run "kill-$step-2"
	check "killed at $step (status $killed), then stored once" \
		test "$killed" -eq 137 -a "$(stored "kill-$step@example.org")" = 1
done

check "no Message-ID stored twice in the whole run" is twice "" "$(twice | tr '\n' ' ')"
finish
