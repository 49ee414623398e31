#!/bin/sh
# tests/publicinbox.sh itself: a public-inbox v2 inbox served by
# public-inbox-imapd on 127.0.0.1, read with Python's imaplib over STARTTLS
# and over implicit TLS, both verifying the test CA of ms_certs. Messages
# added after imapd started are served at once, byte for byte as given but
# for what public-inbox changes (the mbox From line, Delivered-To,
# X-Original-To and Status removed, List-Id added, CRLF line ends); any
# LOGIN works; IDLE reports
# new mail; UIDVALIDITY is the inbox's and survives a restart; a duplicate
# is refused. Needs Debian's public-inbox; not root. Speaks TAP.
test_name=publicinbox-selftest
. "$ZERODAY_SRCDIR/tests/lib.sh"
. "$ZERODAY_SRCDIR/tests/mailservers.sh"
. "$ZERODAY_SRCDIR/tests/publicinbox.sh"

if ! command -v public-inbox-imapd >/dev/null 2>&1; then
	echo "1..0 # SKIP public-inbox-imapd missing (apt-get install public-inbox)"
	exit 0
fi
pi="$scratch/pi"
list=org.kernel.vger.linux-zd
addr=linux-zd@vger.example.org
trap 'pi_stop "$pi"; cleanup' EXIT
if ! ms_certs "$scratch/certs" || ! pi_start "$pi" "$scratch/certs" "$list" "$addr"; then
	not_ok "public-inbox-imapd starts on 127.0.0.1"
	tap_end
fi
ok "public-inbox-imapd starts on 127.0.0.1 (IMAP $PI_IMAP_PORT, IMAPS $PI_IMAPS_PORT)"
check "PI_FOLDER is the first slice" test "$PI_FOLDER" = "$list.0"

# The messages: a patch as git send-email makes it, in an mbox with the
# trace headers a delivery adds; a reply naming the list in Cc only;
# one with a List-Id of its own and UTF-8 in its header and text.
m="$scratch/msgs"
mkdir -p "$m"
cat > "$m/1" <<'EOF'
From ann@example.com Mon Nov 30 09:00:00 2026
Return-Path: <ann@example.com>
Delivered-To: linux-zd@vger.example.org
X-Original-To: linux-zd@vger.example.org
Received: from mail.example.com (mail.example.com [192.0.2.1])
	by vger.example.org with ESMTP id 1234
	for <linux-zd@vger.example.org>; Mon, 30 Nov 2026 09:00:01 +0000
From: Ann Author <ann@example.com>
To: linux-zd@vger.example.org
Cc: Maint Ainer <maint@example.org>
Subject: [PATCH 1/1] net: count readiness
Date: Mon, 30 Nov 2026 10:00:00 +0100
Message-Id: <20261130090000.1-ann@example.com>
X-Mailer: git-send-email 2.39.2
MIME-Version: 1.0
Content-Transfer-Encoding: 8bit
Status: RO

Count how often the device was ready.

Signed-off-by: Ann Author <ann@example.com>
---
 src/net.c | 1 +
 1 file changed, 1 insertion(+)

diff --git a/src/net.c b/src/net.c
--- a/src/net.c
+++ b/src/net.c
@@ -1,3 +1,4 @@
 int ready(void)
 {
+	counter++;
 	return ready - 1;
-- 
2.39.2

EOF
cat > "$m/2" <<'EOF'
From: Maint Ainer <maint@example.org>
To: Ann Author <ann@example.com>
Cc: linux-zd@vger.example.org
Subject: Re: [PATCH 1/1] net: count readiness
Date: Mon, 30 Nov 2026 11:00:00 +0100
Message-ID: <reply-1@example.org>
In-Reply-To: <20261130090000.1-ann@example.com>
References: <20261130090000.1-ann@example.com>

On Mon, Ann Author wrote:
> Count how often the device was ready.

From here on it looks fine.
.
Applied, thanks.
EOF
cat > "$m/3" <<'EOF'
From: =?UTF-8?Q?J=C3=B6rg_Tester?= <joerg@example.net>
To: linux-zd@vger.example.org
Subject: =?UTF-8?Q?[RFC]_gr=C3=BC=C3=9Fe?=
Date: Tue, 1 Dec 2026 08:00:00 +0000
Message-ID: <rfc-1@example.net>
List-Id: Linux ZD <linux-zd.vger.example.org>
Content-Type: text/plain; charset=UTF-8
Content-Transfer-Encoding: 8bit

Grüße aus Köln.
EOF

# imap MODE WHAT [ARG...]: a Python imaplib session (MODE starttls or
# imaps, verifying the test CA for 127.0.0.1) that checks WHAT; says why
# on stdout (as TAP comments) when it fails.
cat > "$scratch/imap.py" <<'EOF'
import imaplib, os, random, re, socket, ssl, subprocess, sys, time
mode, what = sys.argv[1:3]
args = sys.argv[3:]
folder = os.environ["PI_FOLDER"]
ctx = ssl.create_default_context(cafile=os.environ["CA"])
def fail(why):
    print("# " + why.replace("\n", "\n# "))
    sys.exit(1)
def session(login=True):
    if mode == "starttls":
        c = imaplib.IMAP4("127.0.0.1", int(os.environ["PI_IMAP_PORT"]), timeout=10)
        if b"STARTTLS" not in c.welcome:
            fail("no STARTTLS in the greeting: %r" % c.welcome)
        c.starttls(ssl_context=ctx)
    else:
        c = imaplib.IMAP4_SSL("127.0.0.1", int(os.environ["PI_IMAPS_PORT"]),
                              ssl_context=ctx, timeout=10)
    if login:
        user = "user%d@example.org" % random.randrange(10**6)
        typ, data = c.login(user, "pw%d" % random.randrange(10**6))
        if typ != "OK":
            fail("LOGIN %s: %r" % (user, data))
    return c
def examine(c, name=folder):
    typ, data = c.select(name, readonly=True)
    if typ != "OK":
        fail("EXAMINE %s: %r" % (name, data))
    return int(data[0]), int(c.untagged_responses["UIDVALIDITY"][0])
# expected FILE: FILE as public-inbox should serve it.
def expected(path):
    raw = open(path, "rb").read()
    raw = re.sub(rb"\A[\r\n]*From [^\n]*\n", b"", raw)
    head, sep, body = raw.partition(b"\n\n")
    fields = []
    for line in head.split(b"\n"):
        if line[:1] in (b" ", b"\t") and fields:
            fields[-1] += b"\n" + line
        else:
            fields.append(line)
    drop = {b"delivered-to", b"x-original-to", b"approved", b"approve",
            b"x-approved", b"x-approve", b"urgent", b"return-receipt-to",
            b"disposition-notification-to", b"x-confirm-reading-to",
            b"x-pmrqc", b"bytes", b"lines", b"content-length", b"status",
            b"x-status"}
    name = lambda f: f.split(b":", 1)[0].strip().lower()
    fields = [f for f in fields if name(f) not in drop]
    if not any(name(f) == b"list-id" for f in fields):
        fields.append(b"List-Id: <" + os.environ["ADDR"].replace("@", ".").encode() + b">")
    return (b"\n".join(fields) + sep + body).replace(b"\n", b"\r\n")
if what == "greeting-login":
    c = session(login=False)
    caps = c.capabilities
    c.login("anonymous", "")
    c.logout()
    c = session(login=False)
    c.login("x" * 40, "y" * 40)
    print("# capabilities before LOGIN: %s" % " ".join(caps))
elif what == "list":
    c = session()
    typ, data = c.list()
    names = [d.decode().rsplit(" ", 1)[1] for d in data]
    print("# LIST: %s" % " ".join(names))
    if folder not in names:
        fail("%s not listed" % folder)
elif what == "examine":          # examine COUNT [UIDVALIDITY]
    c = session()
    n, v = examine(c)
    print("# EXAMINE %s: %d EXISTS, UIDVALIDITY %d" % (folder, n, v))
    if n != int(args[0]):
        fail("%d messages, not %s" % (n, args[0]))
    if len(args) > 1 and v != int(args[1]):
        fail("UIDVALIDITY %d, not %s" % (v, args[1]))
    if "READ-ONLY" not in c.untagged_responses:
        fail("not [READ-ONLY]")
elif what == "fetch":            # fetch FILE...: UIDs 1.. are FILE...
    c = session()
    examine(c)
    typ, data = c.uid("FETCH", "1:*", "(RFC822.SIZE BODY.PEEK[])")
    got = [d for d in data if isinstance(d, tuple)]
    if typ != "OK" or len(got) != len(args):
        fail("UID FETCH 1:*: %s, %d messages, not %d" % (typ, len(got), len(args)))
    for uid, (meta, body), path in zip(range(1, len(args) + 1), got, args):
        m = re.search(rb"UID (\d+) RFC822.SIZE (\d+) BODY\[\] \{(\d+)\}", meta)
        if not m or int(m.group(1)) != uid:
            fail("message %d: %r" % (uid, meta))
        if int(m.group(2)) != len(body):
            fail("UID %d: RFC822.SIZE %s, BODY[] %d bytes" % (uid, m.group(2), len(body)))
        want = expected(path)
        if body != want:
            fail("UID %d is not %s as expected:\n%r\n%r" % (uid, path, body, want))
elif what == "idle":             # idle FILE: IDLE sees FILE added (pi_add)
    c = session()
    n, v = examine(c)
    tag = c._new_tag()
    c.send(tag + b" IDLE\r\n")
    if not c.readline().startswith(b"+"):
        fail("IDLE refused")
    t0 = time.time()
    if subprocess.run(["sh", "-c", '. "$1"; pi_add "$PI" "$2"', "sh",
                       os.environ["PI_SH"], args[0]]).returncode:
        fail("pi_add failed")
    t1 = time.time()
    c.sock.settimeout(20)
    while True:
        line = c.readline()
        if line == b"" or re.match(rb"\* %d EXISTS" % (n + 1), line):
            break
    if not line:
        fail("no EXISTS within 20 s")
    c.send(b"DONE\r\n")
    while not c.readline().startswith(tag):
        pass
    print("# pi_add took %.2f s; IDLE said %s %.2f s after it returned"
          % (t1 - t0, line.strip().decode(), time.time() - t1))
c.logout()
EOF
export CA="$scratch/certs/ca.pem" ADDR="$addr" PI="$pi" PI_SH="$ZERODAY_SRCDIR/tests/publicinbox.sh"
imap() { python3 "$scratch/imap.py" "$@"; }

for mode in starttls imaps; do
	check "$mode: any LOGIN works" imap $mode greeting-login
	check "$mode: LIST shows $PI_FOLDER" imap $mode list
	check "$mode: EXAMINE the empty folder" imap $mode examine 0
done
t0=$(date +%s.%N)
check "pi_add archives 3 messages" pi_add "$pi" "$m/1" "$m/2" "$m/3"
echo "# pi_add of 3 messages took $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') s"
uidvalidity=$(python3 -c 'import sqlite3, sys
print(sqlite3.connect(sys.argv[1]).execute("select val from meta where key = ?", ("created_at",)).fetchone()[0])' \
	"$pi/inbox/msgmap.sqlite3")
for mode in starttls imaps; do
	check "$mode: EXAMINE: 3 messages, UIDVALIDITY the inbox's creation time" \
		imap $mode examine 3 "$uidvalidity"
	check "$mode: UID FETCH 1:* gives them back as public-inbox stores them" \
		imap $mode fetch "$m/1" "$m/2" "$m/3"
done
refused() { ! pi_add "$pi" "$m/2" 2> "$scratch/dup.err"; }
check "a duplicate is refused" refused
sed 's/^/# /' "$scratch/dup.err"
sed -e 's/reply-1@/reply-2@/' -e 's/looks fine/looks good/' "$m/2" > "$m/4"
check "IDLE reports a message added meanwhile" imap imaps idle "$m/4"

# A restart: the same inbox, the same UIDVALIDITY, new ports.
check "pi_stop stops imapd" pi_stop "$pi"
check "and leaves no process" test -z "$(_pi_pids "$pi")"
check "pi_start again" pi_start "$pi" "$scratch/certs" "$list" "$addr"
check "after the restart: 4 messages, the same UIDVALIDITY" imap starttls examine 4 "$uidvalidity"
check "and the same messages" imap imaps fetch "$m/1" "$m/2" "$m/3" "$m/4"
bad_name() { ! pi_start "$scratch/x" "$scratch/certs" foo.bar.1 foo@example.org 2> /dev/null; }
check "pi_start refuses a list name ending in .DIGITS" bad_name
tap_end
