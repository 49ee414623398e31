#!/bin/sh
# The mail command language (bot/mailroom/commands.c) through real servers: command
# mails are real mails from developers' mailboxes, sent through the
# Postfix of tests/mailservers.sh (STARTTLS, the test CA, AUTH:
# tests/send-mail.py, or git send-email for a patch), delivered over LMTP
# into the Dovecot mailbox of bot@example.org, read by zeroday over IMAP
# ([mail] sources) and answered through the Postfix ([mail] outbox); the
# answers are read over IMAP (tests/imap-fetch.py) from the senders'
# mailboxes, and the effects checked in the store (sqlite3, `zeroday
# commands --json`, `zeroday tree show`, `zeroday status --json`).
#
# Every command's happy path (help, status, status <tree>, subscribe and
# confirm, unsubscribe, blacklist, unblacklist, rerun in a report's thread,
# test <tree> <branch>, "#zeroday test" alone in a patch mail, mute,
# invalid), each command mail answered exactly once (In-Reply-To,
# References, To checked); confirmation tokens (another address, reuse,
# expiry); who may (a stranger's blacklist and invalid refused); a table of
# hostile arguments, each refused with no side effect (no file made, no
# connection to a listener on 127.0.0.1, no tree, no subscription); what is
# not a command (quoted, later in a line, indented, a lookalike marker);
# a lookalike command word; too many commands; HTML only; mail loops (the
# bot itself in any case, Auto-Submitted, an empty Return-Path,
# X-Autoreply, a robot's address; a list's mail is answered), two
# instances cross-wired by a vacation responder; the per-sender rate
# limit; DKIM required of a domain (dkimpy signs, libopendkim verifies).
#
# Needs root (Postfix and Dovecot start as root), git send-email
# (git-email), git daemon, sqlite3, opendkim-genkey (opendkim-tools) and
# python3's dkim module (python3-dkim): a missing one is a failure. Speaks TAP.
test_name=commands-real
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
t0=$(date +%s)
ms="$scratch/ms"
gdpid=
lpid=
stop_helpers() {
	for _p in $gdpid $lpid; do
		kill "$_p" 2>/dev/null
		wait "$_p" 2>/dev/null
	done
	gdpid='' lpid=''
}
trap 'stop_helpers; ms_stop "$ms"; cleanup' EXIT

# The tools: a missing one is a missing dependency, not a reason to skip.
missing=
git send-email -h 2>&1 | grep -q -- --smtp-server || missing="$missing git-send-email(git-email)"
git daemon -h 2>&1 | grep -q -- --base-path || missing="$missing git-daemon"
command -v sqlite3 > /dev/null || missing="$missing sqlite3"
dkgen=$(command -v opendkim-genkey || echo /usr/sbin/opendkim-genkey)
[ -x "$dkgen" ] || missing="$missing opendkim-genkey(opendkim-tools)"
# dkimpy is Debian's python3-dkim: for the system's python3, which may not
# be the first on PATH. That python3 ($PY) runs every Python helper here:
# called straight, not through a wrapper script (pyenv's shims cost 0.3 s
# a call, and the test makes hundreds).
PY=
for _py in python3 /usr/bin/python3; do
	if "$_py" -c 'import dkim' 2>/dev/null; then
		PY=$("$_py" -c 'import sys; print(sys.executable)')
		break
	fi
done
[ -n "$PY" ] || missing="$missing python3-dkim"
if [ -n "$missing" ]; then
	not_ok "the tools are installed; missing:$missing"
	finish
fi
if ! ms_start "$ms"; then
	not_ok "Postfix and Dovecot start on 127.0.0.1"
	finish
fi
ok "Postfix and Dovecot start on 127.0.0.1"

# ---- Helpers ----

# t.py: what the shell does badly. Its subcommands:
#   arrive SEEN: reads `zeroday outbox --json`; waits (30 s at most) until
#	each mail sent is in each of its recipients' Maildirs (SEEN lists
#	those found before); fails naming what is missing.
#   wait PENDING: PENDING's lines "ADDRESS MESSAGE-ID"; waits the same.
#   reply FILE MID FROM TO SUBJECT: FILE holds the headers of the mails
#	that reply to <MID> (imap-fetch.py --headers-only); checks that there
#	is one, From FROM, To TO, Subject SUBJECT, In-Reply-To <MID>, and
#	References ending with <MID>.
#   commands MAIL-ID: reads `zeroday commands --json`; prints, for each
#	command of mail MAIL-ID in order, "verb<TAB>state<TAB>answer" (the
#	answer's lines joined by " | ").
#   listen PORTFILE LOG: listens on 127.0.0.1 (a free port, written to
#	PORTFILE), and appends a line to LOG for every connection accepted.
#   vacation MAILDIR SEEN OUTDIR FIRST HEADER BOTS: an Outlook-style
#	vacation responder: for every mail in MAILDIR not answered yet (SEEN),
#	writes an auto-reply to OUTDIR (To its sender; Cc everyone else it
#	names and the BOTS, comma-separated; the header line HEADER; below a
#	header block each, unquoted, the conversation: its first mail FIRST,
#	then the mail answered) and prints "FILE<TAB>TO,CC..." for each.
#	No rule of underscores above the blocks, as Outlook writes: zeroday
#	reads no command below one, and here only the auto-reply's header
#	is to keep it silent.
#   dkim-key DIR DOMAIN: the key file line of opendkim-genkey's DIR/sel.txt.
#   dkim-sign IN OUT DOMAIN PRIVATE: OUT is IN (CRLF line ends) signed by
#	DOMAIN (selector sel, rsa-sha256, relaxed/simple) with key PRIVATE.
#   dkim-verify FILE KEYS: whether FILE's signature verifies with dkimpy,
#	the keys taken from the key file KEYS.
cat > "$scratch/t.py" <<'EOF'
import collections, email, email.policy, email.utils, json, os, re, socket, sys, time

def maildir_ids(d):
    """The Message-IDs (lower case, no brackets) of the mails in Maildir d, counted."""
    ids = collections.Counter()
    for sub in ("new", "cur"):
        try:
            names = os.listdir(os.path.join(d, sub))
        except OSError:
            continue
        for name in names:
            try:
                with open(os.path.join(d, sub, name), "rb") as f:
                    head = f.read(65536).replace(b"\r\n", b"\n").split(b"\n\n", 1)[0]
            except OSError:
                continue
            m = re.search(rb"^message-id:\s*<([^>]*)>", head, re.I | re.M)
            if m:
                ids[m.group(1).decode("utf-8", "replace").lower()] += 1
    return ids

def wait_for(pairs):
    """Waits until each (address, Message-ID) of pairs (an iterable, where a
    pair twice wants two copies) is in the address's Maildir."""
    root = os.environ["MS_MAILDIRS"]
    left = collections.Counter(pairs)
    for _ in range(300):
        boxes = {}
        for (addr, mid), want in list(left.items()):
            if addr not in boxes:
                boxes[addr] = maildir_ids(os.path.join(root, addr))
            if boxes[addr][mid.lower()] >= want:
                del left[(addr, mid)]
        if not left:
            return True
        time.sleep(0.1)
    for (addr, mid), want in sorted(left.items()):
        print("# not delivered after 30 s: %d of <%s> to %s" % (want, mid, addr))
    return False

def addr_of(text):
    return email.utils.parseaddr(text)[1].lower()

def arrive(seen):
    rows = json.load(sys.stdin)
    try:
        with open(seen) as f:
            done = set(tuple(l.split()) for l in f if l.strip())
    except OSError:
        done = set()
    pairs = set()
    for r in rows:
        if r["state"] != "sent":
            continue
        for e in r["each"]:
            if e["state"] == "sent":
                pairs.add((addr_of(e["address"]) or e["address"].lower(), r["message_id"]))
    pairs -= done
    ok = wait_for(pairs)
    with open(seen, "a") as f:
        for p in pairs:
            f.write("%s %s\n" % p)
    sys.exit(0 if ok else 1)

def parse_dump(path):
    """The messages of an imap-fetch.py --headers-only dump: lists of (name, value)."""
    msgs = []
    with open(path, "rb") as f:
        text = f.read().decode("utf-8", "replace")
    for chunk in re.split(r"^=== message \d+\n", text, flags=re.M)[1:]:
        fields = []
        for line in chunk.split("\n"):
            if line[:1] in (" ", "\t") and fields:
                fields[-1] = (fields[-1][0], fields[-1][1] + " " + line.strip())
            elif ":" in line:
                n, v = line.split(":", 1)
                fields.append((n.strip().lower(), v.strip()))
        msgs.append(fields)
    return msgs

def reply(path, mid, frm, to, subject):
    msgs = parse_dump(path)
    bad = []
    if len(msgs) != 1:
        bad.append("%d replies, not 1" % len(msgs))
    for fields in msgs:
        h = {}
        for n, v in fields:
            h.setdefault(n, v)
        want = {"from": frm, "to": to, "subject": subject, "in-reply-to": "<%s>" % mid}
        for n, v in want.items():
            if h.get(n) != v:
                bad.append('%s: "%s", not "%s"' % (n, h.get(n), v))
        refs = h.get("references", "").split()
        if not refs or refs[-1] != "<%s>" % mid:
            bad.append('References "%s" does not end with <%s>' % (h.get("references"), mid))
    for b in bad:
        print("# reply to <%s>: %s" % (mid, b))
    sys.exit(1 if bad else 0)

def commands(mail_id):
    for r in sorted(json.load(sys.stdin), key=lambda r: r["n"]):
        if r["mail"] == int(mail_id):
            print("%s\t%s\t%s" % (r["verb"] or "", r["state"],
                                  (r["answer"] or "").replace("\n", " | ")))

def listen(portfile, log):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    with open(portfile + ".tmp", "w") as f:
        f.write("%d\n" % s.getsockname()[1])
    os.rename(portfile + ".tmp", portfile)
    while True:
        c, peer = s.accept()
        with open(log, "a") as f:
            f.write("connection from %s:%d\n" % peer)
        c.close()

def text_of(msg):
    for part in msg.walk():
        if part.get_content_type() == "text/plain":
            return part.get_content()
    return ""

def vacation(maildir, seen, outdir, first, header, bots):
    try:
        with open(seen) as f:
            done = set(l.strip() for l in f)
    except OSError:
        done = set()
    with open(first, "rb") as f:
        orig = email.message_from_binary_file(f, policy=email.policy.default)
    me = addr_of(orig["From"])
    files = []
    for sub in ("new", "cur"):
        d = os.path.join(maildir, sub)
        files += [os.path.join(d, n) for n in sorted(os.listdir(d))] if os.path.isdir(d) else []
    for path in files:
        with open(path, "rb") as f:
            m = email.message_from_binary_file(f, policy=email.policy.default)
        mid = m["Message-ID"]
        if mid in done or addr_of(m["From"]) == me:
            continue
        done.add(mid)
        sender = addr_of(m["From"])
        cc = []
        for a in [addr_of(x) for x in (m.get_all("To", []) + m.get_all("Cc", []))] + bots.split(","):
            if a and a not in (me, sender) and a not in cc:
                cc.append(a)
        name = "vac-%d" % len(done)
        refs = (m["References"] or "") + " " + mid
        body = ("I am away until Monday, with no access to my mail.\n\n"
                "From: %s\nSent: %s\nTo: %s\nCc: %s\nSubject: %s\n\n%s\n\n"
                "From: %s\nSent: %s\nTo: %s\nSubject: %s\n\n%s\n"
                % (orig["From"], orig["Date"], orig["To"], orig["Cc"], orig["Subject"],
                   text_of(orig),
                   m["From"], m["Date"], m["To"], m["Subject"], text_of(m)))
        text = ("From: %s\nTo: %s\nCc: %s\nSubject: Re: %s\nDate: %s\nMessage-ID: <%s-%s>\n"
                "In-Reply-To: %s\nReferences: %s\n%s\nMIME-Version: 1.0\n"
                "Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: 8bit\n\n%s"
                % (orig["From"], m["From"], ", ".join(cc), m["Subject"],
                   email.utils.formatdate(), name, me, mid, refs.strip(), header, body))
        out = os.path.join(outdir, name + "-" + me + ".eml")
        with open(out, "w") as f:
            f.write(text)
        print("%s\t%s" % (out, ",".join([sender] + cc)))
    with open(seen, "w") as f:
        f.write("".join("%s\n" % x for x in sorted(done)))

def dkim_key(d, domain):
    with open(os.path.join(d, "sel.txt")) as f:
        record = "".join(re.findall(r'"([^"]*)"', f.read()))
    print("sel._domainkey.%s %s" % (domain, record))

def dkim_sign(src, dst, domain, private):
    import dkim
    with open(src, "rb") as f:
        data = f.read().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    with open(private, "rb") as f:
        key = f.read()
    sig = dkim.sign(data, b"sel", domain.encode(), key,
                    canonicalize=(b"relaxed", b"simple"),
                    include_headers=[b"from", b"to", b"subject", b"date", b"message-id"])
    with open(dst, "wb") as f:
        f.write(sig + data)

def dkim_verify(path, keys):
    import dkim
    table = {}
    with open(keys) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                name, record = line.split(None, 1)
                table[name.lower()] = record.strip().encode()
    def dns(name, timeout=5):
        return table.get(name.decode().rstrip(".").lower())
    with open(path, "rb") as f:
        data = f.read().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    sys.exit(0 if dkim.verify(data, dnsfunc=dns) else 1)

def main(cmd, args):
    if cmd == "arrive":
        arrive(*args)
    elif cmd == "wait":
        with open(args[0]) as f:
            sys.exit(0 if wait_for([tuple(l.split()) for l in f if l.strip()]) else 1)
    elif cmd == "reply":
        reply(*args)
    elif cmd == "commands":
        commands(*args)
    elif cmd == "listen":
        listen(*args)
    elif cmd == "vacation":
        vacation(*args)
    elif cmd == "dkim-key":
        dkim_key(*args)
    elif cmd == "dkim-sign":
        dkim_sign(*args)
    elif cmd == "dkim-verify":
        dkim_verify(*args)
    else:
        sys.exit("t.py: unknown command " + cmd)

# A helper that breaks exits 2: never taken for a "no" (1).
try:
    main(sys.argv[1], sys.argv[2:])
except Exception:
    import traceback
    traceback.print_exc()
    sys.exit(2)
EOF
tpy() { "$PY" "$scratch/t.py" "$@"; }

# is WHAT EXPECTED ACTUAL: a check of ACTUAL against EXPECTED, printing both on a mismatch.
is() {
	[ "$2" = "$3" ] && return 0
	printf '# %s: expected "%s", got "%s"\n' "$1" "$2" "$3"
	return 1
}
# has WHAT TEXT PATTERN: whether TEXT holds PATTERN (grep -E), printing TEXT if not.
has() {
	printf '%s\n' "$2" | grep -Eq -- "$3" && return 0
	printf '# %s: no "%s" in:\n' "$1" "$3"
	printf '%s\n' "$2" | sed 's/^/#   /'
	return 1
}
# hasnt WHAT TEXT PATTERN: the opposite.
hasnt() {
	printf '%s\n' "$2" | grep -Eq -- "$3" || return 0
	printf '# %s: "%s" in:\n' "$1" "$3"
	printf '%s\n' "$2" | sed 's/^/#   /'
	return 1
}
sql() { sqlite3 "$scratch/state/zeroday.db" ".timeout 5000" "$1"; }

# Mail: each command mail is a file $M/NAME.eml whose Message-ID is
# <NAME@test.example>.
M="$scratch/m"
mkdir -p "$M"
mid() { echo "$1@test.example"; }
# compose NAME FROM TO SUBJECT [HEADER...] < BODY: writes $M/NAME.eml,
# plain text (UTF-8, 8bit), with the extra header lines HEADER.
compose() {
	_n=$1 _f=$2 _t=$3 _s=$4
	shift 4
	{
		printf 'From: %s\nTo: %s\nSubject: %s\nDate: %s\nMessage-ID: <%s>\n' \
			"$_f" "$_t" "$_s" "$(date -R)" "$(mid "$_n")"
		for _h in "$@"; do printf '%s\n' "$_h"; done
		printf 'MIME-Version: 1.0\nContent-Type: text/plain; charset=utf-8\n'
		printf 'Content-Transfer-Encoding: 8bit\n\n'
		cat
	} > "$M/$_n.eml"
}
# post NAME ENVELOPE-FROM RCPT...: sends $M/NAME.eml through Postfix
# (tests/send-mail.py: STARTTLS, the test CA, AUTH) to the RCPTs, from
# ENVELOPE-FROM; each delivery is waited for before the next run.
post() {
	_n=$1 _e=$2
	shift 2
	_to=
	for _r in "$@"; do
		_to="$_to --to $_r"
		echo "$_r $(mid "$_n")" >> "$scratch/pending"
	done
	# shellcheck disable=SC2086
	"$PY" "$ZERODAY_SRCDIR/tests/send-mail.py" --port "$MS_SMTP_PORT" --ca-file "$ms/ca.pem" \
		--user "$MS_USER" --password "$MS_PASSWORD" --from "$_e" $_to "$M/$_n.eml"
}
# cmd NAME FROM-ADDRESS BODY [HEADER...]: a command mail from
# "User name <FROM-ADDRESS>" to the bot, its body BODY, sent.
cmd() {
	_n=$1 _a=$2 _b=$3
	shift 3
	printf '%s\n' "$_b" | compose "$_n" "$(who "$_a")" "Test Robot <$bot>" "cmd $_n" "$@" &&
		post "$_n" "$_a" "$bot"
}
# who ADDRESS: ADDRESS with a display name, as the From of its mails.
who() { echo "User ${1%%@*} <$1>"; }

bot=bot@example.org
bot2=bot2@example.org
botfrom="Test Robot <$bot>"
author=a@example.org
author2=b@example.org
maint=maint@example.org
stranger=eve@example.org
# imapf ADDRESS ARGS...: tests/imap-fetch.py on ADDRESS's INBOX.
imapf() {
	_who=$1
	shift
	"$PY" "$ZERODAY_SRCDIR/tests/imap-fetch.py" --port "$MS_IMAP_PORT" --user "$_who" \
		--password "$MS_PASSWORD" "$@"
}
z() { "$ZERODAY" --config="$scratch/z.conf" --state-dir="$scratch/state" "$@"; }
z2() { "$ZERODAY" --config="$scratch/z2.conf" --state-dir="$scratch/state2" "$@"; }
# settle: waits until every mail posted is in its recipients' mailboxes.
settle() {
	[ -s "$scratch/pending" ] || return 0
	tpy wait "$scratch/pending" || return 1
	: > "$scratch/pending"
}
# run NAME: the mail posted delivered, zeroday run --once (its output in
# $scratch/NAME.log), then its mail delivered; the run's status. The
# outbox and the commands taken, as `zeroday outbox --json` and `zeroday
# commands --json` list them, are kept for the checks until the next run.
run() {
	settle
	z run --once --poll-interval 3600 > "$scratch/$1.log" 2>&1
	_rc=$?
	z outbox --json > "$scratch/outbox.json" || _rc=1
	z commands --json > "$scratch/commands.json" || _rc=1
	tpy arrive "$scratch/arrived" < "$scratch/outbox.json" || _rc=1
	[ "$_rc" -eq 0 ] || { echo "# run $1 ended with $_rc:"; tail -5 "$scratch/$1.log" | sed 's/^/#   /'; }
	return "$_rc"
}
run2() {
	settle
	z2 run --once --poll-interval 3600 > "$scratch/$1.log" 2>&1
	_rc=$?
	z2 outbox --json | tpy arrive "$scratch/arrived2" || _rc=1
	return "$_rc"
}
# mail_id NAME: the store's id of mail <NAME@test.example> (or MID given in full).
mail_id() {
	case $1 in *@*) _m=$1 ;; *) _m=$(mid "$1") ;; esac
	sql "SELECT id FROM mails WHERE message_id = '$_m'"
}
# answers NAME: "verb<TAB>state<TAB>answer" of each command of mail NAME (zeroday commands --json).
answers() { tpy commands "$(mail_id "$1")" < "$scratch/commands.json"; }
# cmail NAME: "state|reason" of command mail NAME (the command_mails table), or nothing.
cmail() { sql "SELECT state || '|' || coalesce(reason, '') FROM command_mails WHERE mail_id = '$(mail_id "$1")'"; }
# outbox_to MID: how many outbox mails reply to <MID>.
outbox_to() {
	"$PY" -c 'import json, sys
print(sum(1 for m in json.load(sys.stdin) if m["in_reply_to"] == sys.argv[1]))' "$1" < "$scratch/outbox.json"
}
# outbox_kinds MID: the kinds of the outbox mails that reply to <MID>, one a line.
outbox_kinds() {
	"$PY" < "$scratch/outbox.json" -c 'import json, sys
for m in json.load(sys.stdin):
    if m["in_reply_to"] == sys.argv[1]:
        print(m["kind"])' "$1"
}
outbox_count() { "${2:-z}" outbox --json | "$PY" -c 'import json, sys; print(len(json.load(sys.stdin)))'; }
# answered NAME ADDRESS [FROM]: command mail NAME, sent from ADDRESS, got
# exactly one reply: one in the outbox, and one in ADDRESS's mailbox (over
# IMAP) From the bot, To the sender, Subject "Re: " once and the command
# mail's, In-Reply-To the command mail, References ending with it.
answered() {
	_m=$(mid "$1")
	_subj=$(tr -d '\r' < "$M/$1.eml" | sed -n 's/^Subject: \([Rr][Ee]: *\)*//p' | head -1)
	is "outbox replies to $1" 1 "$(outbox_to "$_m")" || return 1
	imapf "$2" --where "In-Reply-To=<$_m>" --headers-only > "$scratch/hdr" || return 1
	tpy reply "$scratch/hdr" "$_m" "${3:-$botfrom}" "$(who "$2")" "Re: $_subj"
}
# reply_text NAME ADDRESS: the reply to command mail NAME in ADDRESS's mailbox, whole.
reply_text() { imapf "$2" --where "In-Reply-To=<$(mid "$1")>"; }
# reply_flat NAME ADDRESS: its body, on one line (the reply wraps its prose).
reply_flat() { reply_text "$1" "$2" | sed '1,/^$/d' | tr '\n' ' '; }
# unanswered NAME ADDRESS: command mail NAME got no reply: none queued,
# none in ADDRESS's mailbox.
unanswered() {
	is "outbox replies to $1" 0 "$(outbox_to "$(mid "$1")")" &&
		is "replies to $1 at $2" 0 "$(imapf "$2" --count --where "In-Reply-To=<$(mid "$1")>")"
}
# silent NAME REASON: command mail NAME is recorded as unanswered, REASON (grep -E) why.
silent() {
	_c=$(cmail "$1")
	has "command mail $1 silent" "$_c" "^silent\|.*$2"
}
blacklist_of() { z tree show "$1" | sed -n 's/^blacklist *//p'; }

# ---- Setup ----

# DKIM keys for dkim.example and other.example, in the key file zeroday
# reads ([commands] dkim-keys) instead of DNS.
dk="$scratch/dkim-keys"
for d in dkim.example other.example; do
	mkdir -p "$dk/$d"
	"$dkgen" -D "$dk/$d" -d "$d" -s sel || not_ok "opendkim-genkey makes a key for $d"
	tpy dkim-key "$dk/$d" "$d" >> "$dk/keys" || not_ok "the key of $d is read"
done
check "opendkim-genkey made two keys for the key file" is keys 2 "$(grep -c '^sel._domainkey.* p=' "$dk/keys")"

printf 'user = %s\npassword = %s\n' "$bot" "$MS_PASSWORD" > "$scratch/creds"
printf 'user = %s\npassword = %s\n' "$bot2" "$MS_PASSWORD" > "$scratch/creds2"
chmod 0600 "$scratch/creds" "$scratch/creds2"
# One config for both instances, but for the address, the mailbox and
# the credentials. The limits of [mail] are lifted (the rate limit tested
# is [commands] max-per-sender-hour: 25, so that the other scenarios fit);
# 127.0.0.1 is allowed, so that a mailed git:// URL of the git daemon below
# is taken (and 127.1 and the like, other spellings of it, are not).
conf() {
	cat <<EOF
[git]
allow-local-trees = true
[mail]
address = $1
name = $2
archive-url = https://lists.example.org/r/
sources = imap://$(echo "$1" | sed 's/@/%40/')@127.0.0.1:$MS_IMAP_PORT/INBOX
outbox = smtp://127.0.0.1:$MS_SMTP_PORT
ca-file = $ms/ca.pem
credentials = $3
timeout = 10
retry = 1
grace = 0
max-per-recipient-day = 100000
max-per-hour = 100000
[commands]
allowed-hosts = 127.0.0.1
max-per-sender-hour = 25
max-per-hour = 100000
dkim-required = dkim.example
dkim-keys = $dk/keys
EOF
}
conf "$bot" "Test Robot" "$scratch/creds" > "$scratch/z.conf"
conf "$bot2" "Test Robot 2" "$scratch/creds2" > "$scratch/z2.conf"

export GIT_AUTHOR_NAME=A GIT_AUTHOR_EMAIL=$author GIT_COMMITTER_NAME=A GIT_COMMITTER_EMAIL=$author
kb="$scratch/kb"
kbuild_repo "$kb" root
root=$(git -C "$kb" rev-parse HEAD)
z init > /dev/null
z tree add kb "$kb" --non-rebasable --target x86_64:defconfig \
	--maintainer "Maint <$maint>" > /dev/null
check "the tree is added, its maintainer maint@example.org" \
	is cc "Maint <$maint>" "$(z tree show kb | sed -n 's/^cc *//p')"
run run0
check "run --once polls and builds the tree's head" test $? -eq 0

# ---- Reports, and commands in their threads ----

# X1: the author breaks the build on master; X2: another author breaks it
# on a branch of its own. Each makes a finding and a report.
sed -i 's/return ready - 1;/undeclared_counter++;\n\treturn ready - 1;/' "$kb/src/net.c"
git -C "$kb" commit -q -am "net: count readiness"
x1=$(git -C "$kb" rev-parse HEAD)
git -C "$kb" checkout -q -b b2 "$root"
sed -i 's/return net_init() + legacy(1);/return net_init() + legacy(1) + undeclared_other;/' "$kb/src/main.c"
GIT_AUTHOR_NAME=B GIT_AUTHOR_EMAIL=$author2 GIT_COMMITTER_NAME=B GIT_COMMITTER_EMAIL=$author2 \
	git -C "$kb" commit -q -am "main: add other"
x2=$(git -C "$kb" rev-parse HEAD)
git -C "$kb" checkout -q master
run run1
check "run --once finds the two errors" test $? -eq 0
f1=$(sql "SELECT id FROM findings WHERE culprit = '$x1'")
f2=$(sql "SELECT id FROM findings WHERE culprit = '$x2'")
check "finding 1 is X1's, open" is state open "$(sql "SELECT state FROM findings WHERE id = '$f1'")"
check "finding 2 is X2's, open" is state open "$(sql "SELECT state FROM findings WHERE id = '$f2'")"
r1=$(sql "SELECT message_id FROM outbox WHERE finding_id = '$f1' AND kind = 'report'")
r2=$(sql "SELECT message_id FROM outbox WHERE finding_id = '$f2' AND kind = 'report'")
check "the report of X1 reached its author" \
	is reports 1 "$(imapf "$author" --count --where "Message-Id=<$r1>")"
check "and the maintainer" is reports 1 "$(imapf "$maint" --count --where "Message-Id=<$r1>")"
check "the report of X2 reached its author" \
	is reports 1 "$(imapf "$author2" --count --where "Message-Id=<$r2>")"
r1subj=$(imapf "$author" --where "Message-Id=<$r1>" --field Subject)
r2subj=$(imapf "$author2" --where "Message-Id=<$r2>" --field Subject)

# in_thread NAME FROM REPORT-MID REPORT-SUBJECT BODY: FROM replies to the
# report, To the bot, with BODY.
in_thread() {
	printf '%s\n\n> %s\n' "$5" "$4" |
		compose "$1" "$(who "$2")" "$botfrom" "Re: $4" "In-Reply-To: <$3>" "References: <$3>" &&
		post "$1" "$2" "$bot"
}
cmd status-open watcher@example.org "#zeroday status kb"
in_thread rerun "$author" "$r1" "$r1subj" "#zeroday rerun"
in_thread inval-stranger "$stranger" "$r1" "$r1subj" "#zeroday invalid"
in_thread inval-maint "$maint" "$r2" "$r2subj" "#zeroday invalid"
in_thread mute "$author" "$r1" "$r1subj" "Thanks, looking into it.

#zeroday mute"
run run2
check "run --once takes the commands in the reports' threads" test $? -eq 0
for c in rerun:$author inval-stranger:$stranger inval-maint:$maint mute:$author; do
	check "${c%%:*}: one reply, to its sender, in its thread" answered "${c%%:*}" "${c#*:}"
done
a=$(answers rerun)
check "rerun: done, finding $f1 still reproduces" \
	has rerun "$a" "^rerun	done	Finding $f1 still reproduces at ${x1%"${x1#????????????}"}.*undeclared_counter"
check "rerun: the reply says so" has "rerun reply" "$(reply_flat rerun "$author")" "still reproduces"
check "rerun: the reply reads well in a mail client: no line past 72 columns" \
	hasnt "rerun reply" "$(reply_text rerun "$author" | sed '1,/^$/d')" '^.{73,}$'
check "rerun: a rerun job ran for the culprit" \
	is job "rerun|done" "$(sql "SELECT kind || '|' || state FROM jobs WHERE kind = 'rerun' AND commit_id = '$x1'")"
check "rerun: the finding stays open" is state open "$(sql "SELECT state FROM findings WHERE id = '$f1'")"
a=$(answers inval-stranger)
check "a stranger's invalid is refused, saying who may" \
	has inval-stranger "$a" "^invalid	refused	only the maintainers of kb may"
check "and finding $f1 stays open" is state open "$(sql "SELECT state FROM findings WHERE id = '$f1'")"
a=$(answers inval-maint)
check "the maintainer's invalid is done" has inval-maint "$a" "^invalid	done	Recorded: finding $f2"
check "finding $f2 is invalid (sqlite)" is state invalid "$(sql "SELECT state FROM findings WHERE id = '$f2'")"
check "finding $f2 is invalid (status --json)" \
	has status "$(z status --json | sed 's/}, {/\n/g' | grep "\"id\": $f2, ")" '"state": "invalid"'
a=$(answers mute)
check "mute: done" has mute "$a" "^mute	done	Muted"
# status_open A F...: the answer A lists findings F..., and says which is whose.
status_open() {
	_a=$1
	shift
	for _f in "$@"; do
		_c=$(sql "SELECT substr(culprit, 1, 12) FROM findings WHERE id = '$_f'")
		printf '%s\n' "$_a" | grep -Eq "Open findings:.*\| +$_f build-error $_c " && continue
		printf '# finding %s not in: %s\n' "$_f" "$_a"
		return 1
	done
}
check "status kb, before the invalid: both open findings" \
	status_open "$(answers status-open)" "$f1" "$f2"
check "mute: recorded for the author and the report's thread" \
	is mutes "$author|$r1" "$(sql "SELECT address || '|' || thread FROM mutes")"

# The fix: the follow-up ("fixed") reaches the maintainer, not the author
# who muted the thread.
sed -i '/undeclared_counter++;/d' "$kb/src/net.c"
git -C "$kb" commit -q -am "net: fix the readiness count"
run run3
check "run --once builds the fix" test $? -eq 0
check "finding $f1 is fixed" is state fixed "$(sql "SELECT state FROM findings WHERE id = '$f1'")"
fixed=$(sql "SELECT message_id FROM outbox WHERE finding_id = '$f1' AND kind = 'fixed'")
check "a fixed mail is queued in the report's thread" test -n "$fixed"
check "it is sent To the maintainer only" \
	is recipients "to:Maint <$maint>" "$(sql "SELECT recipients FROM outbox WHERE message_id = '$fixed'")"
check "the maintainer got it, in the report's thread" \
	is fixed "<$r1>" "$(imapf "$maint" --where "Message-Id=<$fixed>" --field In-Reply-To)"
check "the author, who muted the thread, did not" \
	is fixed 0 "$(imapf "$author" --count --where "Message-Id=<$fixed>")"
check "the run logs the muted recipient left out" grep -q "$author muted the thread" "$scratch/run3.log"

# A failure that went away without a commit (a toolchain mended, a cause
# outside the tree): simulated by giving X3's finding a fingerprint its
# build does not show. The maintainer asks for a rerun by the finding's
# id, outside any thread: the culprit is built afresh, the reply says the
# finding no longer reproduces, and it is closed.
git -C "$kb" checkout -q -b b3 "$root"
sed -i 's/return net_init() + legacy(1);/return net_init() + legacy(1) + undeclared_third;/' "$kb/src/main.c"
git -C "$kb" commit -q -am "main: add a third"
x3=$(git -C "$kb" rev-parse HEAD)
git -C "$kb" checkout -q master
run run3b
check "run --once finds X3's error" test $? -eq 0
f3=$(sql "SELECT id FROM findings WHERE culprit = '$x3'")
check "finding 3 is X3's, open" is state open "$(sql "SELECT state FROM findings WHERE id = '$f3'")"
sql "UPDATE findings SET fingerprint = '0000000000000000' WHERE id = '$f3'"
cmd rerun-eve "$stranger" "#zeroday rerun $f3"
cmd rerun-id "$maint" "#zeroday rerun $f3"
run run3c
check "run --once takes the rerun by id" test $? -eq 0
check "rerun by id: one reply, to its sender, in its thread" answered rerun-id "$maint"
check "rerun by id: the answer says it no longer reproduces" \
	has rerun-id "$(answers rerun-id)" "^rerun	done	Finding $f3 no longer reproduces"
check "rerun by id: finding $f3 is closed as unreproduced" \
	is state unreproduced "$(sql "SELECT state FROM findings WHERE id = '$f3'")"
a=$(answers rerun-eve)
check "rerun by id: a stranger's is refused" \
	has rerun-eve "$a" "^rerun	refused	only those on the report's thread"

# ---- dup, undup and fix: ----

# X4 and X5 break the build on branches of their own. The author says X5's
# report is X4's bug (#zeroday dup), then takes it back (#zeroday undup);
# a stranger's dup is refused. The author names X4's fix by its subject
# (#zeroday fix:). The commit that comes under that subject does not fix
# it: the finding stays open while the head shows it; the real fix, under
# another subject, closes it, and the follow-up names the real fix, not
# the one named.
git -C "$kb" checkout -q -b b4 "$root"
sed -i 's/return net_init() + legacy(1);/return net_init() + legacy(1) + undeclared_fourth;/' "$kb/src/main.c"
git -C "$kb" commit -q -am "main: add a fourth"
x4=$(git -C "$kb" rev-parse HEAD)
git -C "$kb" checkout -q -b b5 "$root"
sed -i 's/return net_init() + legacy(1);/return net_init() + legacy(1) + undeclared_fifth;/' "$kb/src/main.c"
git -C "$kb" commit -q -am "main: add a fifth"
x5=$(git -C "$kb" rev-parse HEAD)
git -C "$kb" checkout -q master
run run3d
check "run --once finds X4's and X5's errors" test $? -eq 0
f4=$(sql "SELECT id FROM findings WHERE culprit = '$x4'")
f5=$(sql "SELECT id FROM findings WHERE culprit = '$x5'")
r4=$(sql "SELECT message_id FROM outbox WHERE finding_id = '$f4' AND kind = 'report'")
r5=$(sql "SELECT message_id FROM outbox WHERE finding_id = '$f5' AND kind = 'report'")
r4subj=$(imapf "$author" --where "Message-Id=<$r4>" --field Subject)
r5subj=$(imapf "$author" --where "Message-Id=<$r5>" --field Subject)
in_thread dup5 "$author" "$r5" "$r5subj" "#zeroday dup $f4"
in_thread dup-eve "$stranger" "$r4" "$r4subj" "#zeroday dup $f5"
in_thread fix4 "$author" "$r4" "$r4subj" "#zeroday fix:   main: drop	the fourth  "
in_thread fix-eve "$stranger" "$r4" "$r4subj" "#zeroday fix: main: something else"
run run3e
check "run --once takes dup and fix:" test $? -eq 0
for c in dup5:$author dup-eve:$stranger fix4:$author fix-eve:$stranger; do
	check "${c%%:*}: one reply, to its sender, in its thread" answered "${c%%:*}" "${c#*:}"
done
check "dup: done, naming both findings" has dup5 "$(answers dup5)" \
	"^dup	done	Recorded: finding $f5 .*is the same bug as finding $f4 "
check "dup: finding $f5 is a duplicate of $f4 (sqlite)" \
	is dup "duplicate|$f4" "$(sql "SELECT state || '|' || dup_of FROM findings WHERE id = '$f5'")"
check "dup: status --json says so" \
	has status "$(z status --json | sed 's/}, {/\n/g' | grep "\"id\": $f5, ")" "\"dup_of\": $f4"
check "dup: the reply reads well in a mail client: no line past 72 columns" \
	hasnt "dup reply" "$(reply_text dup5 "$author" | sed '1,/^$/d')" '^.{73,}$'
check "a stranger's dup is refused, saying who may" \
	has dup-eve "$(answers dup-eve)" "^dup	refused	only those on the report's thread"
check "and finding $f4 stays open" is state open "$(sql "SELECT state FROM findings WHERE id = '$f4'")"
check "fix: done, with the subject as given, blanks folded" has fix4 "$(answers fix4)" \
	"^fix	done	Recorded: finding $f4 .*closes once a commit \"main: drop the fourth\" is on kb and"
check "fix: the subject is kept" \
	is subject "main: drop the fourth" "$(sql "SELECT fix_subject FROM findings WHERE id = '$f4'")"
check "a stranger's fix: is refused" \
	has fix-eve "$(answers fix-eve)" "^fix	refused	only those on the report's thread"

git -C "$kb" checkout -q b4
echo "/* not the fix */" >> "$kb/src/net.c"
git -C "$kb" commit -q -am "main: drop the fourth"
liar=$(git -C "$kb" rev-parse HEAD)
git -C "$kb" checkout -q master
in_thread undup5 "$author" "$r5" "$r5subj" "#zeroday undup"
run run3f
check "run --once builds the commit named as the fix" test $? -eq 0
check "it does not fix it: finding $f4 stays open" \
	is state open "$(sql "SELECT state FROM findings WHERE id = '$f4'")"
check "the run logs that the named fix is there and the failure too" \
	grep -q "not finding $f4: ${liar%"${liar#????????????}"} (\"main: drop the fourth\") is at" "$scratch/run3f.log"
check "undup: one reply" answered undup5 "$author"
check "undup: done" has undup5 "$(answers undup5)" "^undup	done	Recorded: finding $f5 .*is no duplicate"
check "undup: finding $f5 is open again" \
	is state "open|" "$(sql "SELECT state || '|' || coalesce(dup_of, '') FROM findings WHERE id = '$f5'")"

git -C "$kb" checkout -q b4
sed -i 's/ + undeclared_fourth//' "$kb/src/main.c"
git -C "$kb" commit -q -am "main: take the fourth out"
fix4=$(git -C "$kb" rev-parse HEAD)
echo "/* innocent */" >> "$kb/src/net.c"
git -C "$kb" commit -q -am "net: a comment"
git -C "$kb" checkout -q master
in_thread dup5b "$author" "$r5" "$r5subj" "#zeroday dup $f4"
run run3g
check "run --once builds the real fix" test $? -eq 0
check "finding $f4 is fixed by the real fix, not by the commit named" \
	is fixed "fixed|$fix4" "$(sql "SELECT state || '|' || fixed_by FROM findings WHERE id = '$f4'")"
check "the run logs that the named commit does not fix it" \
	grep -q "finding $f4: ${liar%"${liar#????????????}"} (\"main: drop the fourth\") does not fix it" \
	"$scratch/run3g.log"
fixed4=$(sql "SELECT message_id FROM outbox WHERE finding_id = '$f4' AND kind = 'fixed'")
check "the follow-up, in the report's thread, names the real fix" \
	has fixed "$(imapf "$author" --where "Message-Id=<$fixed4>" | tr '\n' ' ')" \
	"fixed by commit ${fix4%"${fix4#????????????}"} .*take the fourth out"
check "and goes in the report's thread" \
	is fixed "<$r4>" "$(imapf "$author" --where "Message-Id=<$fixed4>" --field In-Reply-To)"
check "a dup after an undup: finding $f5 is a duplicate of $f4 again" \
	is dup "duplicate|$f4" "$(sql "SELECT state || '|' || dup_of FROM findings WHERE id = '$f5'")"

# ---- help, status, blacklist ----

cmd help "$stranger" "#zeroday help"
# The same mail twice (a resend, or a copy through a list): answered once.
cmd dup d@example.org "#zeroday help"
post dup d@example.org "$bot"
cmd status "$stranger" "#zeroday status"
cmd bl-stranger "$stranger" "#zeroday blacklist kb feat*"
cmd bl-maint "$maint" "#zeroday blacklist kb wip/*"
run run4
check "run --once takes help, status and blacklist" test $? -eq 0
for c in help:$stranger status:$stranger bl-stranger:$stranger bl-maint:$maint; do
	check "${c%%:*}: one reply, to its sender, in its thread" answered "${c%%:*}" "${c#*:}"
done
r=$(reply_text help "$stranger")
check "help lists every command, indented" \
	sh -c 'for v in help status subscribe confirm unsubscribe blacklist unblacklist rerun test mute invalid dup undup fix; do
		printf "%s\n" "$1" | grep -q "^    #zeroday $v" || { echo "# no $v"; exit 1; }; done' - "$r"
check "the help reply holds no command at column 0" hasnt help "$r" "^#zeroday"
check "help: done" has help "$(answers help)" "^help	done	zeroday takes these commands"
check "a command mail that came twice: one reply" answered dup d@example.org
check "its two copies reached the bot's mailbox" \
	is copies 2 "$(imapf "$bot" --count --where "Message-Id=<$(mid dup)>")"
check "status lists the tree" has status "$(answers status)" "^status	done	Trees followed: \| +kb $kb \(non-rebasable\)"
check "a stranger's blacklist is refused" \
	has bl-stranger "$(answers bl-stranger)" "^blacklist	refused	only the maintainers of kb"
check "the maintainer's blacklist is done" \
	has bl-maint "$(answers bl-maint)" "^blacklist	done	kb: branches matching wip/\* are no longer tested"
check "the tree's blacklist is the maintainer's pattern only (tree show)" is blacklist "wip/*" "$(blacklist_of kb)"

# Pushes: to a blacklisted branch (not tested) and another (tested); a
# test of that one asked by mail, and the tree's status.
git -C "$kb" checkout -q -b wip/x master
echo "/* wip */" >> "$kb/src/main.c"
git -C "$kb" commit -q -am "main: work in progress"
wip=$(git -C "$kb" rev-parse HEAD)
git -C "$kb" checkout -q -b feature master
echo "/* feature */" >> "$kb/src/main.c"
git -C "$kb" commit -q -am "main: a feature"
feature=$(git -C "$kb" rev-parse HEAD)
git -C "$kb" checkout -q master
cmd test-stranger "$stranger" "#zeroday test kb feature"
cmd test-branch "$maint" "#zeroday test kb feature"
cmd status-kb "$stranger" "#zeroday status kb"
run run5
check "run --once polls the pushes" test $? -eq 0
check "test-branch: one reply" answered test-branch "$maint"
check "a stranger's test: one reply" answered test-stranger "$stranger"
check "a stranger's test of a branch is refused" has test-stranger "$(answers test-stranger)" \
	"^test	refused	only those on a report's thread and the maintainers of kb may"
check "status-kb: one reply" answered status-kb "$stranger"
check "the blacklisted branch's commit is not tested: no job" \
	is jobs 0 "$(sql "SELECT count(*) FROM jobs WHERE commit_id = '$wip'")"
check "tree show: the branch is skipped, blacklisted" \
	has "tree show" "$(z tree show kb)" "^  wip/x +[0-9a-f]+ skipped +blacklisted by pattern 'wip/\*'"
check "the other branch's commit is tested" \
	is jobs "build|done" "$(sql "SELECT kind || '|' || state FROM jobs WHERE commit_id = '$feature'")"
a=$(answers test-branch)
check "test kb feature: done, with the build's result" \
	has test-branch "$a" "^test	done	kb ${feature%"${feature#????????????}"} on x86_64:defconfig: builds with nothing new"
a=$(answers status-kb)
check "status kb: the branches, wip/x skipped" \
	has status-kb "$a" "^status	done	kb: $kb, non-rebasable.*wip/x ${wip%"${wip#????????????}"} skipped: blacklisted by pattern 'wip/\*'.*Blacklisted: wip/\*"
check "status kb: no open finding left (fixed, invalid, unreproduced)" \
	has status-kb "$a" "Blacklisted: wip/\* \| Open findings: none$"

# ---- unblacklist, and "#zeroday test" alone in a patch To the bot ----

cmd unbl "$maint" "#zeroday unblacklist kb wip/*"
# Tests of what was built already: a branch, and a commit given in full.
cmd test-master "$maint" "#zeroday test kb master"
cmd test-root "$maint" "#zeroday test kb $root"
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
# A patch To the bot only (no list of the tree's, no --prefix): its
# base-commit: trailer names a commit of kb, which makes kb its tree. It
# breaks the build: a failing series gets a reply of its own
# (series-failure) unless a command claims it, so the one reply to the
# mail shows the claim.
echo "int patched(void) { return undeclared_patched; }" >> "$work/src/main.c"
git -C "$work" commit -q -am "main: a patch to test" -m "Signed-off-by: A <$author>"
pbase=$(git -C "$work" rev-parse HEAD~1)
git -C "$work" format-patch -q --base=HEAD~1 -o "$scratch/p" -1
# The command after the --- line, where a patch's notes go.
awk '!done && /^---$/ { print; print "#zeroday test"; print ""; done = 1; next } { print }' \
	"$scratch/p/0001-"*.patch > "$scratch/p/cmd.patch"
git -C "$work" send-email --to "$botfrom" "$scratch/p/cmd.patch" > "$scratch/patch.send" 2>&1
check "git send-email sends a patch with #zeroday test To the bot" test $? -eq 0
pmid=$(sed -n 's/^Message-Id: <\(.*\)>$/\1/p' "$scratch/patch.send" | head -1)
echo "$bot $pmid" >> "$scratch/pending"
run run6
check "run --once tests it" test $? -eq 0
check "unblacklist: one reply" answered unbl "$maint"
check "unblacklist: done" has unbl "$(answers unbl)" "^unblacklist	done	kb: branches matching wip/\* are tested again"
check "the tree's blacklist is empty" is blacklist "-" "$(blacklist_of kb)"
master=$(git -C "$kb" rev-parse master)
check "test-master: one reply" answered test-master "$maint"
check "test-master: built again, with the result" has test-master "$(answers test-master)" \
	"^test	done	kb ${master%"${master#????????????}"} on x86_64:defconfig: builds with nothing new against its parent"
check "test-root: one reply" answered test-root "$maint"
# The root has no parent: the fixture's warning (src/old.c) is new in it.
check "test-root: built again, with the result" has test-root "$(answers test-root)" \
	"^test	done	kb ${root%"${root#????????????}"} on x86_64:defconfig: builds, with new warnings"
check "the two builds ran again, in this run" sh -c 'grep -q "job [0-9]*: build kb $1 " "$3" &&
	grep -q "job [0-9]*: build kb $2 " "$3"' - "${master%"${master#????????????}"}" \
	"${root%"${root#????????????}"}" "$scratch/run6.log"
check "the patch: one reply in the outbox, the command's" is kinds command "$(outbox_kinds "$pmid")"
imapf "$author" --where "In-Reply-To=<$pmid>" --headers-only > "$scratch/hdr"
check "the patch: one reply at its author's, To the author, in its thread" \
	tpy reply "$scratch/hdr" "$pmid" "$botfrom" "A <$author>" "Re: [PATCH] main: a patch to test"
check "no series reply for it" is "series replies" 0 "$(sql "SELECT count(*) FROM outbox WHERE kind = 'series'")"
a=$(answers "$pmid")
check "test: done, with the series' result" \
	has test "$a" "^test	done	Series [0-9]+ \(v1, 1 patch\) was tested on kb at ${pbase%"${pbase#????????????}"} \(base-commit\):.*\[1/1\] main: a patch to test: fail \(new error\) on x86_64:defconfig.*undeclared_patched"
r=$(imapf "$author" --where "In-Reply-To=<$pmid>")
check "the reply carries it" has "test reply" "$r" "\[1/1\] main: a patch to test: fail \(new error\)"
check "and the error" has "test reply" "$r" "error: 'undeclared_patched' undeclared"

# ---- Hostile arguments ----

# A listener on 127.0.0.1 that counts the connections it gets: every URL
# below that names an internal address points at it.
# (Python itself in the background, so that $! is its id; its output
# away from the TAP stream.)
"$PY" "$scratch/t.py" listen "$scratch/lport" "$scratch/listener.log" > "$scratch/listener.out" 2>&1 &
lpid=$!
for _ in $(seq 1 50); do [ -s "$scratch/lport" ] && break; sleep 0.1; done
P=$(cat "$scratch/lport")
check "the listener listens on 127.0.0.1:$P" test -n "$P"
: > "$scratch/listener.log"
MARKER="$scratch/MARKER"
trees_before=$(sql "SELECT count(*) FROM trees")
subs_before=$(sql "SELECT count(*) FROM subscriptions")
long=$(printf '%02000d' 0 | tr 0 a)
ctl=$(printf 'git://127.0.0.1:%s/x\001 master' "$P")
# The table: one command mail each, "SENDER<TAB>LINE". Postfix breaks a
# line of over 998 characters, so the 2000-character line reaches zeroday
# in pieces; once more, whole, it is stored as it is with doveadm
# (SENDER/doveadm: ms_deliver_file), as a server that does not break lines
# would deliver it.
cat > "$scratch/hostile" <<EOF
$stranger	#zeroday subscribe git://localhost:$P/x master
$stranger	#zeroday subscribe git://127.1:$P/x master
$stranger	#zeroday subscribe git://2130706433:$P/x master
$stranger	#zeroday subscribe git://0x7f000001:$P/x master
$stranger	#zeroday subscribe git://0177.0.0.1:$P/x master
$stranger	#zeroday subscribe git://[::1]:$P/x master
$stranger	#zeroday subscribe git://[::ffff:127.0.0.1]:$P/x master
$stranger	#zeroday subscribe https://169.254.169.254/x master
$stranger	#zeroday subscribe https://10.1.2.3/x master
$stranger	#zeroday subscribe https://192.168.0.1/x master
$stranger	#zeroday subscribe https://user:pw@example.com/x master
$stranger	#zeroday subscribe ext::sh -c touch $MARKER
$stranger	#zeroday subscribe ext::sh%20-c%20touch%20$MARKER master
$stranger	#zeroday subscribe https://example.com/\$(touch $MARKER) master
$stranger	#zeroday subscribe https://example.com/\$(touch\${IFS}$MARKER) master
$stranger	#zeroday subscribe file:///etc master
$stranger	#zeroday subscribe /etc master
$stranger	#zeroday subscribe ssh://h/x master
$stranger	#zeroday subscribe -git://127.0.0.1:$P/x master
$stranger	#zeroday subscribe --upload-pack=touch $MARKER
$maint	#zeroday subscribe git://127.0.0.1:$P/x a..b
$maint	#zeroday subscribe git://127.0.0.1:$P/x x;touch $MARKER
$maint	#zeroday subscribe git://127.0.0.1:$P/x x;touch\${IFS}$MARKER
$maint	#zeroday blacklist kb a..b
$maint	#zeroday test git://127.1:$P/x master
$maint	#zeroday test git://[::1]:$P/x master
$stranger	#zeroday subscribe git://127.0.0.1:$P/$long master
$stranger/doveadm	#zeroday subscribe git://127.0.0.1:$P/$long master
$stranger	#zeroday subscribe $ctl
EOF
rows=$(wc -l < "$scratch/hostile")
# Spread over senders (the stranger's rows from addresses of its own), so
# that the per-sender rate limit is not what refuses them.
i=0
while IFS='	' read -r from line; do
	i=$((i + 1))
	via=smtp
	case $from in */doveadm) via=doveadm from=${from%/doveadm} ;; esac
	[ "$from" = "$stranger" ] && from="eve$i@example.org"
	echo "$from" > "$scratch/hostile-$i.from"
	if [ "$via" = smtp ]; then
		cmd "hostile-$i" "$from" "$line" || not_ok "hostile row $i is sent"
	else
		printf '%s\n' "$line" | compose "hostile-$i" "$(who "$from")" "$botfrom" "cmd hostile-$i"
		ms_deliver_file "$ms" "$bot" "$M/hostile-$i.eml" || not_ok "hostile row $i is stored"
	fi
done < "$scratch/hostile"
run run7
check "run --once takes the hostile table" test $? -eq 0
refused=0
i=0
while [ "$i" -lt "$rows" ]; do
	i=$((i + 1))
	from=$(cat "$scratch/hostile-$i.from")
	a=$(answers "hostile-$i")
	line=$(sed -n "${i}p" "$scratch/hostile" | cut -f2 | cut -c1-100)
	if answered "hostile-$i" "$from" && printf '%s\n' "$a" | grep -q "	refused	." &&
		! printf '%s\n' "$a" | grep -q "Subscribed\|To subscribe" &&
		[ "$(printf '%s\n' "$a" | grep -c .)" = 1 ]; then
		refused=$((refused + 1))
	else
		echo "# hostile row $i ($line): $a"
	fi
done
echo "# hostile rows: what each refusal said:"
i=0
while [ "$i" -lt "$rows" ]; do
	i=$((i + 1))
	answers "hostile-$i" | cut -f3 | cut -c1-110 | sed "s/^/#   $i: /"
done
check "no marker file was made" test ! -e "$MARKER"
check "the listener saw no connection" is connections 0 "$(wc -l < "$scratch/listener.log")"
check "no tree was added" is trees "$trees_before" "$(sql "SELECT count(*) FROM trees")"
check "no subscription was recorded" is subscriptions "$subs_before" "$(sql "SELECT count(*) FROM subscriptions")"
check "the blacklist is unchanged" is blacklist "-" "$(blacklist_of kb)"
sideeffect_free=0
[ ! -e "$MARKER" ] && [ ! -s "$scratch/listener.log" ] &&
	[ "$(sql "SELECT count(*) FROM trees")" = "$trees_before" ] &&
	[ "$(sql "SELECT count(*) FROM subscriptions")" = "$subs_before" ] && sideeffect_free=1
[ "$sideeffect_free" = 1 ] || refused=0
echo "# hostile table: $refused/$rows refused with no side effect"
check "every hostile row is refused with a reason, and nothing happened" is refused "$rows" "$refused"
check "the table has its 29 rows" is rows 29 "$rows"
check "the whole 2000-character line is refused as too long" \
	has "hostile-28" "$(answers hostile-28)" "	refused	not taken: the line is too long"

# ---- Subscribe, confirm, unsubscribe ----

# A tree to subscribe, served by git daemon on 127.0.0.1 (allowed-hosts).
srv="$scratch/srv"
mkdir -p "$srv"
git clone -q --bare "$kb" "$srv/sub.git"
gdport=$(ms_free_port)
git daemon --reuseaddr --export-all --base-path="$srv" --listen=127.0.0.1 --port="$gdport" \
	--pid-file="$scratch/gd.pid" "$srv" > "$scratch/gd.log" 2>&1 &
gdpid=$!
suburl="git://127.0.0.1:$gdport/sub.git"
for _ in $(seq 1 50); do git ls-remote "$suburl" > /dev/null 2>&1 && break; sleep 0.1; done
check "git daemon serves the tree to subscribe" sh -c 'git ls-remote --exit-code "$1" refs/heads/master > /dev/null' - "$suburl"
subscriber=sub@example.org
cmd subscribe "$subscriber" "#zeroday subscribe $suburl master non-rebasable"
cmd subscribe2 "$subscriber" "#zeroday subscribe git://127.0.0.1:$gdport/sub2.git master"
run run8
check "run --once takes the subscriptions" test $? -eq 0
check "subscribe: one reply" answered subscribe "$subscriber"
check "subscribe: one more reply" answered subscribe2 "$subscriber"
r=$(reply_text subscribe "$subscriber")
token=$(printf '%s\n' "$r" | sed -n 's/^ *#zeroday confirm \([0-9a-f]*\)$/\1/p')
check "the reply carries '#zeroday confirm TOKEN' on a line of its own, indented" test "${#token}" -eq 32
token2=$(reply_text subscribe2 "$subscriber" | sed -n 's/^ *#zeroday confirm \([0-9a-f]*\)$/\1/p')
check "the store keeps the token's hash, not the token" \
	is hash 1 "$(sql "SELECT count(*) FROM subscriptions WHERE token_hash = '$(printf %s "$token" | sha256sum | cut -d' ' -f1)' AND sender = '$subscriber' AND used = 0")"
check "and no tree yet" is trees "$trees_before" "$(sql "SELECT count(*) FROM trees")"
# Replies quote the reply they answer, as mail clients do.
confirm() {
	printf '%s\n\n> To subscribe ..., reply with this line:\n> #zeroday confirm %s\n' "#zeroday confirm $3" "$3" |
		compose "$1" "$(who "$2")" "$botfrom" "Re: cmd subscribe" \
			"In-Reply-To: <$(mid subscribe)>" "References: <$(mid subscribe)>" &&
		post "$1" "$2" "$bot"
}
confirm confirm-other "$stranger" "$token"
confirm confirm "$subscriber" "$token"
run run9
check "run --once takes the confirmations" test $? -eq 0
check "confirm from another address: one reply" answered confirm-other "$stranger"
check "confirm: one reply" answered confirm "$subscriber"
check "a confirmation from another address is refused" \
	has confirm-other "$(answers confirm-other)" "^confirm	refused	this token was given to another address"
check "the right address confirms" has confirm "$(answers confirm)" "^confirm	done	Subscribed: $suburl"
check "the tree is in tree list" has "tree list" "$(z tree list)" "^sub +non-rebasable +$suburl"
check "who subscribed it is kept" is subscriber "$subscriber" "$(sql "SELECT subscriber FROM trees WHERE name = 'sub'")"
check "the token is used" is used 1 "$(sql "SELECT used FROM subscriptions WHERE url = '$suburl'")"
# The token of sub2 expires: it is good for 7 days (SUBSCRIBE_TOKEN_DAYS),
# and the test cannot wait; the expiry time in the store is what the
# check reads, so it is moved to the past.
sql "UPDATE subscriptions SET expires = 0 WHERE url = 'git://127.0.0.1:$gdport/sub2.git'"
confirm confirm-again "$subscriber" "$token"
confirm confirm-expired "$subscriber" "$token2"
run run10
check "run --once polls the subscribed tree" test $? -eq 0
check "its branch is polled, at the served head" \
	has "tree show sub" "$(z tree show sub)" "^  master +$(git -C "$srv/sub.git" rev-parse --short=12 master)"
check "the same token again: one reply" answered confirm-again "$subscriber"
check "the same token again is refused" \
	has confirm-again "$(answers confirm-again)" "^confirm	refused	this token was used already"
check "an expired token: one reply" answered confirm-expired "$subscriber"
check "an expired token is refused" has confirm-expired "$(answers confirm-expired)" "^confirm	refused	this token expired"
check "sub2 is not followed" is trees 0 "$(sql "SELECT count(*) FROM trees WHERE name = 'sub2'")"

# ---- Not commands, lookalikes, too many, HTML; loops; unsubscribe ----

cmd unsub-stranger "$stranger" "#zeroday unsubscribe sub"
cmd unsub "$subscriber" "#zeroday unsubscribe sub"
cmd quoted q1@example.org "> #zeroday help"
cmd later q2@example.org "please run #zeroday help"
cmd indented q3@example.org "    #zeroday help"
cmd marker q4@example.org "#zerоday help"
cmd verb q5@example.org "#zeroday ѕtatus"
i=0
while [ "$i" -lt 20 ]; do i=$((i + 1)); echo "#zeroday blacklist kb many$i"; done > "$scratch/twenty"
cmd twenty "$maint" "$(cat "$scratch/twenty")"
{
	printf 'From: %s\nTo: %s\nSubject: html\nDate: %s\nMessage-ID: <%s>\n' \
		"$(who h@example.org)" "$botfrom" "$(date -R)" "$(mid html)"
	printf 'MIME-Version: 1.0\nContent-Type: text/html; charset=utf-8\n\n'
	printf '<html><body><p>#zeroday help</p></body></html>\n'
} > "$M/html.eml"
post html h@example.org "$bot"
# Loops: zeroday itself, in any case; machines; robots. A list's mail
# (Precedence: bulk, List-Id) is a person's, and answered.
cmd self "$bot" "#zeroday help"
cmd self-case BOT@Example.ORG "#zeroday help"
cmd autosub l1@example.org "#zeroday help" "Auto-Submitted: auto-replied"
cmd xauto l2@example.org "#zeroday help" "X-Autoreply: yes"
cmd noreply noreply@example.org "#zeroday help"
cmd bulk l3@example.org "#zeroday help" "Precedence: bulk" "List-Id: <test.lists.example.org>"
# An empty Return-Path: Postfix drops a Return-Path header that comes by
# SMTP (message_drop_headers), so this one is stored as crafted, with
# doveadm (ms_deliver_file).
printf '#zeroday help\n' | compose bounce l4@example.org "$botfrom" "bounce" "Return-Path: <>"
check "a mail with an empty Return-Path is stored as it is" ms_deliver_file "$ms" "$bot" "$M/bounce.eml"
# And the same by SMTP with the null sender: Dovecot writes Return-Path: <>.
printf '#zeroday help\n' | compose nullsender "$(who l5@example.org)" "$botfrom" "null sender"
post nullsender "" "$bot"
run run11
check "run --once takes them" test $? -eq 0
check "unsubscribe by a stranger: one reply" answered unsub-stranger "$stranger"
check "unsubscribe by a stranger is refused" has unsub-stranger "$(answers unsub-stranger)" "^unsubscribe	refused	only the maintainers of sub"
check "unsubscribe: one reply" answered unsub "$subscriber"
check "unsubscribe by who subscribed: done" has unsub "$(answers unsub)" "^unsubscribe	done	Unsubscribed: sub"
check "the tree is gone" is trees 0 "$(sql "SELECT count(*) FROM trees WHERE name = 'sub'")"
for c in quoted:q1 later:q2 indented:q3 marker:q4; do
	check "${c%%:*}: no reply at all" unanswered "${c%%:*}" "${c#*:}@example.org"
	check "${c%%:*}: not even taken as a command mail" is "command mail" "" "$(cmail "${c%%:*}")"
done
check "a lookalike command word: one reply" answered verb q5@example.org
check "it is refused, plain ASCII" has verb "$(answers verb)" "^	refused	not a command: the command word must be plain ASCII"
check "twenty commands: one reply" answered twenty "$maint"
check "it refuses them all" has twenty "$(reply_flat twenty "$maint")" "more than 5 commands: none of them was taken"
check "none of them is run" is commands "" "$(answers twenty)"
check "the blacklist is unchanged" is blacklist "-" "$(blacklist_of kb)"
check "HTML only: one reply" answered html h@example.org
check "it says: plain text, please" has html "$(reply_flat html h@example.org)" "plain text, please"
check "from the bot itself: no reply" unanswered self "$bot"
check "recorded silent: from zeroday itself" silent self "from zeroday itself"
check "from the bot in other case: no reply" unanswered self-case "$bot"
check "recorded silent: from zeroday itself" silent self-case "from zeroday itself"
check "Auto-Submitted: no reply" unanswered autosub l1@example.org
check "recorded silent: Auto-Submitted" silent autosub "Auto-Submitted"
check "X-Autoreply: no reply" unanswered xauto l2@example.org
check "recorded silent: X-Autoreply" silent xauto "X-Autoreply"
check "a robot's address ([commands] ignore): no reply" unanswered noreply noreply@example.org
check "recorded silent: ignore" silent noreply "ignore"
check "an empty Return-Path: no reply" unanswered bounce l4@example.org
check "recorded silent: a bounce" silent bounce "empty Return-Path"
check "the null sender's mail reached the bot with Return-Path: <>" \
	is Return-Path "<>" "$(imapf "$bot" --where "Message-Id=<$(mid nullsender)>" --field Return-Path)"
check "the null sender: no reply" unanswered nullsender l5@example.org
check "recorded silent: a bounce" silent nullsender "empty Return-Path"
check "Precedence: bulk with a List-Id: one reply" answered bulk l3@example.org

# ---- The rate limit ----

# 30 help mails from one sender, stored with doveadm (ms_deliver_file) for
# speed: the path through Postfix is the same as the mails above.
i=0
while [ "$i" -lt 30 ]; do
	i=$((i + 1))
	printf '#zeroday help\n' | compose "flood-$i" "$(who flood@example.org)" "$botfrom" "flood $i"
	ms_deliver_file "$ms" "$bot" "$M/flood-$i.eml" || not_ok "flood mail $i is stored"
done
run run12
check "run --once takes the flood" test $? -eq 0
check "25 replies (max-per-sender-hour) in the flooder's mailbox" \
	is replies 25 "$(imapf flood@example.org --count --where "From=$botfrom")"
check "25 in the outbox" is replies 25 "$(sql "SELECT count(*) FROM outbox WHERE recipients LIKE '%flood@example.org%'")"
check "the first 25 answered" \
	is answered 25 "$(sql "SELECT count(*) FROM command_mails WHERE sender = 'flood@example.org' AND state = 'answered'")"
check "the other 5 silent, over max-per-sender-hour" \
	is silent 5 "$(sql "SELECT count(*) FROM command_mails WHERE sender = 'flood@example.org' AND state = 'silent' AND reason = 'over [commands] max-per-sender-hour'")"
check "the last one is one of them" silent flood-30 "over \[commands\] max-per-sender-hour"
check "zeroday commands --json lists the 25 answered" \
	is commands 25 "$(z commands --json | "$PY" -c 'import json, sys
print(sum(1 for r in json.load(sys.stdin) if r["verb"] == "help" and r["state"] == "done" and r["mail"] in set(map(int, sys.argv[1:]))))' \
		$(sql "SELECT mail_id FROM command_mails WHERE sender = 'flood@example.org'"))"

# ---- DKIM ----

dev=dev@dkim.example
printf '#zeroday status\n' | compose dk-good "$(who $dev)" "$botfrom" "signed status"
tpy dkim-sign "$M/dk-good.eml" "$M/dk-good.signed" dkim.example "$dk/dkim.example/sel.private"
mv "$M/dk-good.signed" "$M/dk-good.eml"
printf '#zeroday status\n' | compose dk-none "$(who $dev)" "$botfrom" "unsigned status"
printf '#zeroday status\n' | compose dk-altered "$(who $dev)" "$botfrom" "altered status"
tpy dkim-sign "$M/dk-altered.eml" "$M/dk-altered.signed" dkim.example "$dk/dkim.example/sel.private"
sed 's/^#zeroday status/#zeroday help/' "$M/dk-altered.signed" > "$M/dk-altered.eml"
printf '#zeroday status\n' | compose dk-other "$(who $dev)" "$botfrom" "other status"
tpy dkim-sign "$M/dk-other.eml" "$M/dk-other.signed" other.example "$dk/other.example/sel.private"
mv "$M/dk-other.signed" "$M/dk-other.eml"
check "dkimpy verifies the signed mail before sending" tpy dkim-verify "$M/dk-good.eml" "$dk/keys"
for c in good none altered other; do post "dk-$c" "$dev" "$bot"; done
settle
delivered_file() { grep -ril "^Message-ID: <$(mid "$1")>" "$MS_MAILDIRS/$bot/new" "$MS_MAILDIRS/$bot/cur" | head -1; }
check "Postfix did not break the signature (dkimpy verifies the delivered copy)" \
	tpy dkim-verify "$(delivered_file dk-good)" "$dk/keys"
# unverified FILE: dkimpy reads FILE's signature and finds it does not verify.
unverified() {
	[ -f "$1" ] || return 1
	tpy dkim-verify "$1" "$dk/keys"
	[ $? -eq 1 ]
}
check "the altered copy does not verify" unverified "$(delivered_file dk-altered)"
run run13
check "run --once takes the DKIM mails" test $? -eq 0
for c in good none altered other; do
	check "dk-$c: one reply" answered "dk-$c" "$dev"
done
check "signed by dkim.example: the status is answered" has dk-good "$(answers dk-good)" "^status	done	Trees followed:"
for c in none altered other; do
	check "dk-$c: no command run" is commands "" "$(answers "dk-$c")"
	check "dk-$c: refused, the reply says DKIM" has "dk-$c" "$(reply_flat "dk-$c" "$dev")" \
		"must carry a valid DKIM signature of dkim.example"
done
check "the one signed by other.example says so" has dk-other "$(reply_flat dk-other "$dev")" "signed by other.example only"

# ---- Two instances and a vacation responder ----

z2 init > /dev/null
# variant NAME HEADER REASON: NAME@example.org, whose vacation responder
# marks its auto-replies with HEADER, asks both instances for help; both
# run, and the responder answers, for four rounds. Its auto-replies carry
# the command at column 0 (the conversation unquoted, the first mail
# first), so only HEADER keeps the instances from answering them: each
# records them silent, REASON (an SQL LIKE pattern) why.
variant() {
	_v=$1@example.org
	_b1=$(outbox_count x z) _b2=$(outbox_count x z2)
	printf '#zeroday help\n' | compose "$1" "$(who "$_v")" "$botfrom" "help please" \
		"Cc: Test Robot 2 <$bot2>"
	post "$1" "$_v" "$bot" "$bot2"
	mkdir -p "$scratch/$1.out"
	for round in 1 2 3 4; do
		run "$1-$round" || echo "# $1: bot run $round failed"
		run2 "$1-2-$round" || echo "# $1: bot2 run $round failed"
		tpy vacation "$MS_MAILDIRS/$_v" "$scratch/$1.seen" "$scratch/$1.out" "$M/$1.eml" "$2" \
			"$bot,$bot2" > "$scratch/$1.sent"
		while IFS='	' read -r _f _rcpts; do
			_m=$(sed -n 's/^Message-ID: <\(.*\)>$/\1/p' "$_f")
			# shellcheck disable=SC2046
			"$PY" "$ZERODAY_SRCDIR/tests/send-mail.py" --port "$MS_SMTP_PORT" \
				--ca-file "$ms/ca.pem" --user "$MS_USER" --password "$MS_PASSWORD" \
				--from "$_v" $(echo "$_rcpts" | tr ',' '\n' | sed 's/^/--to /') "$_f"
			for _r in $(echo "$_rcpts" | tr ',' ' '); do echo "$_r $_m" >> "$scratch/pending"; done
		done < "$scratch/$1.sent"
		echo "# $1 round $round: $(wc -l < "$scratch/$1.sent") auto-replies"
	done
	settle
	check "$1: zeroday sent exactly one mail" is mails 1 "$(($(outbox_count x z) - _b1))"
	check "$1: the second instance sent exactly one mail" is mails 1 "$(($(outbox_count x z2) - _b2))"
	check "$1: the responder's mailbox holds the two replies only" \
		is mails 2 "$(imapf "$_v" --count)"
	check "$1: the responder answered both" is auto-replies 2 "$(wc -l < "$scratch/$1.seen")"
	_q="SELECT count(*) FROM command_mails c JOIN mails m ON m.id = c.mail_id WHERE c.state = 'silent' AND c.reason LIKE '%$3%' AND m.message_id LIKE 'vac-%-$_v'"
	check "$1: each instance read both auto-replies, and kept them silent: $3" \
		is silent "2 2" "$(sql "$_q") $(sqlite3 "$scratch/state2/zeroday.db" "$_q")"
}
variant vac "Auto-Submitted: auto-replied" Auto-Submitted
# command_first FILE: whether "#zeroday help" is at column 0 in FILE before any signature line.
command_first() { awk '/^--( )?$/ { exit } /^#zeroday help$/ { found = 1; exit } END { exit !found }' "$1"; }
check "vac: an auto-reply holds the command unquoted, at column 0, before any signature" \
	command_first "$scratch/vac.out/vac-1-vac@example.org.eml"
variant vac2 "X-Autoreply: yes" "auto-reply (X-Autoreply)"
check "the second instance sent two mails in all, one per variant" is mails 2 "$(outbox_count x z2)"

# Over the whole run: one reply per command mail answered, none twice.
check "every command mail answered has its one reply in the outbox" \
	is replies "$(sql "SELECT count(*) FROM command_mails WHERE state = 'answered'")" \
	"$(sql "SELECT count(DISTINCT in_reply_to) FROM outbox WHERE kind = 'command'")"
check "and no command mail got two" \
	is twice "" "$(sql "SELECT in_reply_to FROM outbox WHERE kind = 'command' GROUP BY in_reply_to HAVING count(*) > 1")"
check "no command mail is left waiting for its answer" \
	is running "" "$(sql "SELECT mail_id FROM command_mails WHERE state = 'running'")"
echo "# $(($(date +%s) - t0)) s"
finish
