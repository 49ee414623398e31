#!/bin/sh
# zeroday reads a list archive served by public-inbox-imapd, as real
# kernel lists are read over IMAP today (lore): a series posted to the
# list is archived, read over imaps:// and over imap:// with STARTTLS
# (anonymous login, the test CA), assembled, applied on the kbuild-like
# fixture tree subscribed with the list, built, and answered on patch 2,
# which breaks the build; a second run reads nothing again; a mail archived
# while nothing runs is read by the next run from the folder's cursor.
# Speaks TAP.
test_name=publicinbox-ingest
. "$ZERODAY_SRCDIR/tests/lib.sh"
. "$ZERODAY_SRCDIR/tests/mailservers.sh"
. "$ZERODAY_SRCDIR/tests/publicinbox.sh"

if ! command -v public-inbox-imapd >/dev/null 2>&1; then
	echo "1..0 # SKIP public-inbox-imapd missing (apt-get install public-inbox)"
	exit 0
fi
pi="$scratch/pi"
listname=org.example.kb
listaddr=kb@lists.example.org
trap 'pi_stop "$pi"; cleanup' EXIT
if ! ms_certs "$scratch/certs" || ! pi_start "$pi" "$scratch/certs" "$listname" "$listaddr"; then
	not_ok "public-inbox-imapd starts on 127.0.0.1"
	tap_end
fi
ok "public-inbox-imapd serves $PI_FOLDER (IMAP $PI_IMAP_PORT, IMAPS $PI_IMAPS_PORT)"

export GIT_COMMITTER_NAME=A GIT_COMMITTER_EMAIL=a@example.org
kb="$scratch/kb"
kbuild_repo "$kb" root
work="$scratch/work"
git clone -q "$kb" "$work"
echo "/* fine */" >> "$work/src/main.c"
git -C "$work" commit -q -am "main: fine first"
sed -i 's/return ready - 1;/undeclared_counter++;\n\treturn ready - 1;/' "$work/src/net.c"
git -C "$work" commit -q -am "net: count readiness"
mkdir "$scratch/s"
git -C "$work" format-patch -q --from="A <a@example.org>" --cover-letter --thread \
	--to "$listaddr" -o "$scratch/s" -2
sed -i 's/\*\*\* SUBJECT HERE \*\*\*/net: readiness/' "$scratch/s/0000-cover-letter.patch"
check "the series is archived by public-inbox" pi_add "$pi" "$scratch/s/"*.patch
mid() { sed -n 's/^Message-I[Dd]: <\(.*\)>$/\1/p' "$1" | head -1; }
p2=$(mid "$scratch/s/0002-"*.patch)

# run NAME URL: zeroday run --once with the archive folder at URL as its
# source, into state NAME.
run() {
	cat > "$scratch/$1.conf" <<EOF
[git]
allow-local-trees = true
[mail]
address = bot@example.org
name = Test Robot
sources = $2
ca-file = $scratch/certs/ca.pem
grace = 0
EOF
	"$ZERODAY" --config="$scratch/$1.conf" --state-dir="$scratch/$1" run --once \
		--poll-interval 3600 > "$scratch/$1.log" 2>&1
}
z() { st=$1; shift; "$ZERODAY" --config="$scratch/$st.conf" --state-dir="$scratch/$st" "$@"; }
for how in imaps imap; do
	port=$PI_IMAPS_PORT
	[ "$how" = imap ] && port=$PI_IMAP_PORT
	url="$how://anonymous@127.0.0.1:$port/$PI_FOLDER"
	"$ZERODAY" --state-dir="$scratch/$how" init > /dev/null
	printf '[git]\nallow-local-trees = true\n' > "$scratch/$how.conf"
	z "$how" tree add kb "$kb" master --non-rebasable --target x86_64:defconfig \
		--list "$listaddr" > /dev/null
	run "$how" "$url"
	check "$how: run --once reads the archive" test $? -eq 0
	reads() { grep -q "mail: 3 new (0 quarantined), 0 already stored, 0 sources failed" "$scratch/$1.log"; }
	check "$how: the cover letter and two patches, read once" reads "$how"
	series=$(z "$how" series --json)
	tested() { printf '%s\n' "$series" | grep -q '"subject": "net: readiness".*"state": "tested"'; }
	check "$how: the series is tested on the list's tree" tested
	broke() { printf '%s\n' "$series" | grep -q '"n": 2, "target": "x86_64:defconfig", "commit": "[0-9a-f]*", "result": "fail (new error)"'; }
	check "$how: patch 2 is blamed for its error" broke
	answered() { z "$how" outbox --json | grep -q "\"kind\": \"series\", \"state\": \"sent\", \"message_id\": \"[^\"]*\", \"in_reply_to\": \"$p2\""; }
	check "$how: the reply is on patch 2" answered
	run "$how" "$url"
	nothing() { grep -q "mail: 0 new (0 quarantined), 0 already stored, 0 sources failed" "$scratch/$1.log"; }
	check "$how: a second run reads nothing again (the folder's cursor)" nothing "$how"
done

# A mail archived while nothing runs: the next run reads it, and only it.
cat > "$scratch/late.eml" <<EOF
From: Rev Iewer <rev@example.org>
To: $listaddr
Subject: Re: [PATCH 2/2] net: count readiness
Message-ID: <late-review@example.org>
In-Reply-To: <$p2>
References: <$p2>
Date: $(date -R)

This breaks the build.
EOF
check "a review reply is archived later" pi_add "$pi" "$scratch/late.eml"
run imaps "imaps://anonymous@127.0.0.1:$PI_IMAPS_PORT/$PI_FOLDER"
late() { grep -q "mail: 1 new (0 quarantined), 0 already stored, 0 sources failed" "$scratch/imaps.log"; }
check "the next run reads it, and only it" late
uidvalidity() {
	sqlite3 "$scratch/imaps/zeroday.db" "SELECT uidvalidity, last_uid FROM mail_cursors" |
		grep -q "^[1-9][0-9]*|4$"
}
check "the cursor: the archive's UIDVALIDITY, and UID 4" uidvalidity

tap_end
