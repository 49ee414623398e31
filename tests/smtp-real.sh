#!/bin/sh
# Reports by mail through real servers: zeroday finds a build error in the
# kbuild-like fixture tree and mails its report over STARTTLS with AUTH to
# a Postfix on 127.0.0.1, which delivers over LMTP to a Dovecot; the test
# reads the mails back over IMAP. Each recipient's copy is byte for byte
# what zeroday's outbox holds (the servers' trace headers aside); headers,
# threading and the text match tests/data/mail/*.expected after the
# variable fields (hashes, Message-IDs, dates, paths) are masked; the fixed
# follow-up lands in the report's thread. Then implicit TLS, a relay
# refused without AUTH, and a crash after the server's acceptance: the
# mail comes again with its Message-ID, never under a second one. Needs
# root (Postfix and Dovecot start as root). Speaks TAP.
test_name=smtp-real
. "$ZERODAY_SRCDIR/tests/lib.sh"
. "$ZERODAY_SRCDIR/tests/mailservers.sh"

if [ "$(id -u)" -ne 0 ]; then
	echo "1..0 # SKIP Postfix and Dovecot start as root; run the suite as root (./quickstart check)"
	exit 0
fi
ms="$scratch/ms"
trap 'ms_stop "$ms"; cleanup' EXIT
if ! ms_start "$ms"; then
	not_ok "Postfix and Dovecot start on 127.0.0.1"
	tap_end
fi

kb="$scratch/kb"
kbuild_repo "$kb" root
sed -i 's/return ready - 1;/undeclared_counter++;\n\treturn ready - 1;/' "$kb/src/net.c"
GIT_AUTHOR_NAME="Ann Author" GIT_AUTHOR_EMAIL=ann@example.com \
GIT_AUTHOR_DATE="2026-11-30T10:00:00+0100" \
GIT_COMMITTER_NAME="Carl Committer" GIT_COMMITTER_EMAIL=carl@example.com \
	git -C "$kb" commit -q -a -F - <<'EOF'
net: count readiness

Signed-off-by: Ann Author <ann@example.com>
Signed-off-by: Carl Committer <carl@example.com>
EOF
err=$(git -C "$kb" rev-parse HEAD)

printf 'user = %s\npassword = %s\n' "$MS_USER" "$MS_PASSWORD" > "$scratch/creds"
chmod 0600 "$scratch/creds"
# conf SCHEME PORT [CREDENTIALS]: the configuration.
conf() {
	printf '[git]\nallow-local-trees = true\n[mail]\naddress = bot@example.org\nname = Test Robot\narchive-url = https://lists.example.org/r/\noutbox = %s://127.0.0.1:%s\nca-file = %s\ntimeout = 10\nretry = 1\n%s\n' \
		"$1" "$2" "$ms/ca.pem" "${3:+credentials = $3}" > "$scratch/z.conf"
}
conf smtp "$MS_SMTP_PORT" "$scratch/creds"
z() { "$ZERODAY" --config="$scratch/z.conf" --state-dir="$scratch/state" "$@"; }
# has ID PATTERN: outbox mail ID's JSON matches PATTERN (grep).
has() { z outbox --json | sed 's/}, {"id"/\n{"id"/g' | grep "\"id\": $1, " | grep -q "$2"; }
z init > /dev/null
z tree add kb "$kb" master --non-rebasable --target x86_64:defconfig \
	--list "Net List <list@vger.example.org>" --cc maint@example.org > /dev/null
git -C "$kb" update-ref refs/heads/master "$(git -C "$kb" rev-parse HEAD~1)"
z run --once --poll-interval 3600 > "$scratch/run1.log" 2>&1
git -C "$kb" update-ref refs/heads/master "$err"
z run --once --poll-interval 3600 > "$scratch/run2.log" 2>&1
check "zeroday run finds the error and sends its report" \
	grep -q "outbox: sent <zeroday-f[0-9]*-" "$scratch/run2.log"

# fetch ADDRESS: the mails of ADDRESS's INBOX over IMAP, into $scratch/ADDRESS.
fetch() {
	python3 "$ZERODAY_SRCDIR/tests/imap-fetch.py" --port "$MS_IMAP_PORT" --user "$1" \
		--password "$MS_PASSWORD" > "$scratch/$1"
}
# message N FILE: the Nth mail of an imap-fetch.py output.
message() {
	awk -v n="$1" '/^=== message / { i++; next } i == n' "$2" | sed '$ { /^$/d }'
}
# untraced: the mail on stdin without the trace fields the servers added.
untraced() {
	awk 'BEGIN { head = 1 }
	     head && /^$/ { head = 0 }
	     head && /^[ \t]/ { if (skip) next }
	     head && /^[^ \t]/ { skip = ($0 ~ /^(Return-Path|Delivered-To|Received|X-Original-To):/) }
	     !(head && skip)'
}
# masked: the mail on stdin with its variable fields masked.
masked() {
	sed -e "s|$scratch|SCRATCH|g" \
	    -e 's/[0-9a-f]\{40\}/SHA/g' -e 's/\b[0-9a-f]\{12\}\b/SHORT/g' \
	    -e 's/zeroday-\([a-z0-9-]*\)-[0-9a-f]\{32\}@/zeroday-\1-RANDOM@/g' \
	    -e 's/^Date: .*/Date: DATE/' \
	    -e 's/^compiler: .*/compiler: COMPILER/' \
	    -e 's/^\(boundary\|Content-Type: multipart\/mixed; boundary\)=.*/\1=BOUNDARY/' \
	    -e 's/^--=-[A-Za-z0-9+=_-]*/--BOUNDARY/'
}
# arrived ADDRESS N: ADDRESS has N mails (waits up to 30 s).
arrived() { ms_wait_mail "$ms" "$1" "$2" 30 > "$scratch/wait.log" 2>&1; }
for who in ann@example.com carl@example.com list@vger.example.org maint@example.org; do
	check "the report reaches $who" arrived "$who" 1
done
fetch ann@example.com
id=$(z outbox --json | sed 's/}, {"id"/\n{"id"/g' | grep '"kind": "report"' |
	sed -n 's/.*"id": \([0-9]*\), "finding".*/\1/p' | head -1)
z outbox show "$id" > "$scratch/sent"
message 1 "$scratch/ann@example.com" | untraced > "$scratch/got"
check "read back over IMAP: byte for byte what the outbox holds" cmp -s "$scratch/sent" "$scratch/got"
for who in carl@example.com list@vger.example.org maint@example.org; do
	fetch "$who"
	message 1 "$scratch/$who" | untraced > "$scratch/got-$who"
	check "and $who's copy too" cmp -s "$scratch/sent" "$scratch/got-$who"
done
# The headers and the text part, masked, against the expected file.
text_part() {
	awk '/^$/ && !body { body = 1; print; next }
	     !body { print; next }
	     /^--/ { part++; if (part == 2) exit; next }
	     part == 1 && !inbody && /^$/ { inbody = 1; next }
	     part == 1 && inbody { print }'
}
text_part < "$scratch/got" | masked > "$scratch/report.masked"
check "headers and text as tests/data/mail/report.expected" \
	diff -u "$ZERODAY_SRCDIR/tests/data/mail/report.expected" "$scratch/report.masked"
mid=$(sed -n 's/^Message-Id: <\(.*\)>$/\1/p' "$scratch/got")

# The fix: the follow-up in the report's thread, to the report's people.
git -C "$kb" revert --no-edit "$err" > /dev/null
z run --once --poll-interval 3600 > "$scratch/run3.log" 2>&1
arrived ann@example.com 2
fetch ann@example.com
message 2 "$scratch/ann@example.com" | untraced > "$scratch/fixed"
check "the fixed follow-up arrives" grep -q "^In-Reply-To: <$mid>\$" "$scratch/fixed"
check "References: the report" grep -q "^References: <$mid>\$" "$scratch/fixed"
masked < "$scratch/fixed" > "$scratch/fixed.masked"
check "headers and text as tests/data/mail/fixed.expected" \
	diff -u "$ZERODAY_SRCDIR/tests/data/mail/fixed.expected" "$scratch/fixed.masked"
arrived list@vger.example.org 2
fetch list@vger.example.org
check "and to the list, in the same thread" grep -q "^In-Reply-To: <$mid>\$" "$scratch/list@vger.example.org"

# Implicit TLS.
conf smtps "$MS_SMTPS_PORT" "$scratch/creds"
z outbox test smtps@example.org > /dev/null
z outbox send > /dev/null 2>&1
check "smtps: delivered" arrived smtps@example.org 1

# No AUTH: Postfix refuses to relay; the refusal is recorded, nothing is lost silently.
conf smtp "$MS_SMTP_PORT"
tid=$(z outbox test relay@example.org | sed -n 's/^queued test mail //p')
z outbox send > /dev/null 2>&1
check "without AUTH, the relay is refused, and recorded" \
	has "$tid" '"state": "error".*Relay access denied'

# Killed after Postfix accepted, before the store knew: sent again, with
# the same Message-ID (a receiver that dedupes by Message-ID sees one).
conf smtp "$MS_SMTP_PORT" "$scratch/creds"
tid=$(z outbox test crash@example.org | sed -n 's/^queued test mail //p')
ZERODAY_TEST_CRASH=accepted z outbox send > /dev/null 2>&1
check "killed after the server's acceptance" test $? -eq 137
z outbox send > /dev/null 2>&1
arrived crash@example.org 2
python3 "$ZERODAY_SRCDIR/tests/imap-fetch.py" --port "$MS_IMAP_PORT" --user crash@example.org \
	--password "$MS_PASSWORD" --headers-only | grep '^Message-Id:' | sort | uniq -c > "$scratch/crash-ids"
echo "# after the crash, crash@example.org holds: $(cat "$scratch/crash-ids")"
check "one Message-ID, never a second" test "$(wc -l < "$scratch/crash-ids")" -eq 1
check "recorded sent" has "$tid" '"state": "sent"'
tap_end
