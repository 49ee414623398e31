#!/bin/sh
# The IMAP source (mail/source.h, through tests/source-tool) against the
# real Dovecot of tests/mailservers.sh: list and fetch over STARTTLS and
# over implicit TLS, byte for byte what was stored; a certificate from
# another CA, or for another host, refused before LOGIN; a server without
# STARTTLS, and one injecting a response after it (tests/fake-imap.py),
# left before anything is said; a wrong password and a missing folder
# PERMANENT; the size cap refusing before BODY.PEEK[]; UIDVALIDITY
# reported, and its change seen; IDLE ending on a delivery; Dovecot
# restarted between list and fetch a TEMPORARY error, and a reopen
# working; no flag changed on the server; the password in no trace.
# Needs root (Dovecot starts as root). Speaks TAP.
test_name=imap-real
. "$ZERODAY_SRCDIR/tests/lib.sh"
. "$ZERODAY_SRCDIR/tests/mailservers.sh"

bad=0
not_ok() { n=$((n + 1)); failed=1; bad=$((bad + 1)); echo "not ok $n - $1"; }
finish() {
	echo "# $((n - bad)) passed, $bad failed, 0 skipped"
	tap_end
}

if [ "$(id -u)" -ne 0 ]; then
	echo "1..0 # SKIP Dovecot starts as root; run the suite as root (./quickstart check)"
	echo "# 0 passed, 0 failed, 1 skipped"
	exit 0
fi
tool=${ZERODAY_SOURCE_TOOL:-$(dirname "$ZERODAY")/tests/source-tool}
ms="$scratch/ms"
fake_pid=
stop_fake() { [ -z "$fake_pid" ] || { kill "$fake_pid" 2>/dev/null; wait "$fake_pid" 2>/dev/null; fake_pid=; }; }
trap 'stop_fake; ms_stop "$ms"; cleanup' EXIT
if ! ms_start "$ms"; then
	not_ok "Postfix and Dovecot start on 127.0.0.1"
	finish
fi

user=bot@example.org
imap="imap://bot%40example.org@127.0.0.1:$MS_IMAP_PORT/INBOX"
imaps="imaps://bot%40example.org@127.0.0.1:$MS_IMAPS_PORT/INBOX"
# st ARGS...: source-tool trusting the test CA, with the right password.
st() { "$tool" --ca-file "$ms/ca.pem" --password "$MS_PASSWORD" --timeout 10 "$@"; }
# logins: how many IMAP logins Dovecot has let in so far.
logins() { grep -c 'imap-login: .*Login: user=<' "$ms/dovecot.log"; }
# crlf_size FILE: FILE's size with LF line ends counted as CRLF (as IMAP does).
crlf_size() { echo $(($(wc -c < "$1") + $(wc -l < "$1"))); }
# status: the exit status of the last command, for check.
is() { test "$1" -eq "$2"; }

# Three mails, the third large.
for i in 1 2 3; do
	{
		printf 'From: Ann <ann@example.com>\nTo: %s\nMessage-ID: <m%s@example.org>\n' "$user" "$i"
		printf 'Subject: mail %s\n\nbody %s\n' "$i" "$i"
		[ "$i" -eq 3 ] && head -c 30000 /dev/zero | tr '\0' 'x' | fold -w 72
	} > "$scratch/m$i"
	ms_deliver_file "$ms" "$user" "$scratch/m$i"
done
check "three mails stored with doveadm save" ms_wait_mail "$ms" "$user" 3 10

# 1. STARTTLS: list and fetch.
st list "$imap" > "$scratch/list" 2> "$scratch/list.err"
check "STARTTLS: listed" is $? 0
check "UIDVALIDITY reported" grep -q '^uidvalidity [1-9][0-9]*$' "$scratch/list"
uidvalidity=$(sed -n 's/^uidvalidity //p' "$scratch/list")
check "three entries in UID order, with their Message-IDs" \
	test "$(sed 1d "$scratch/list" | awk '{ print $1, $3 }' | tr '\n' ' ')" = \
	"1 m1@example.org 2 m2@example.org 3 m3@example.org "
check "with their RFC822.SIZE" \
	test "$(sed 1d "$scratch/list" | awk '{ print $2 }' | tr '\n' ' ')" = \
	"$(crlf_size "$scratch/m1") $(crlf_size "$scratch/m2") $(crlf_size "$scratch/m3") "
st list "$imap" 2 > "$scratch/list2"
check "after UID 2: only UID 3" test "$(sed 1d "$scratch/list2" | cut -d' ' -f1)" = 3
st fetch "$imap" 1 > "$scratch/f1"
check "STARTTLS: fetched" is $? 0
check "byte for byte what was stored (CRLF aside)" sh -c "tr -d '\r' < '$scratch/f1' | cmp -s - '$scratch/m1'"
check "as long as listed" test "$(wc -c < "$scratch/f1")" -eq "$(crlf_size "$scratch/m1")"

# 2. Implicit TLS.
st list "$imaps" > "$scratch/list-s"
check "imaps: the same list" cmp -s "$scratch/list" "$scratch/list-s"
st fetch "$imaps" 3 > "$scratch/f3"
check "imaps: the large mail fetched, byte for byte" \
	sh -c "tr -d '\r' < '$scratch/f3' | cmp -s - '$scratch/m3'"

# 3. A certificate from another CA: refused before LOGIN.
ms_certs "$scratch/otherca"
before=$(logins)
for url in "$imap" "$imaps"; do
	"$tool" --ca-file "$scratch/otherca/ca.pem" --password "$MS_PASSWORD" --timeout 10 \
		list "$url" > /dev/null 2> "$scratch/ca.err"
	check "${url%%:*}: another CA: a TEMPORARY error" is $? 2
	check "${url%%:*}: saying why" grep -q "certificate is refused for host 127.0.0.1" "$scratch/ca.err"
done
check "no LOGIN reached Dovecot" test "$(logins)" -eq "$before"

# 4. Refused for good: a wrong password, a missing folder.
"$tool" --ca-file "$ms/ca.pem" --password wrong --timeout 10 list "$imaps" > /dev/null 2> "$scratch/pw.err"
check "a wrong password: PERMANENT" is $? 3
check "the wrong password in no message" sh -c "! grep -q wrong '$scratch/pw.err'"
st list "imaps://bot%40example.org@127.0.0.1:$MS_IMAPS_PORT/No%20Such" > /dev/null 2> "$scratch/nf.err"
check "a missing folder: PERMANENT" is $? 3
check "naming EXAMINE" grep -q "EXAMINE" "$scratch/nf.err"

# 5. The size cap: refused before BODY.PEEK[] is said; the password never traced.
size3=$(crlf_size "$scratch/m3")
G_MESSAGES_DEBUG=mail st --size-max 1000 fetch "$imap" 3 > "$scratch/cap.out" 2> "$scratch/cap.err"
check "over the cap: INVALID" is $? 4
check "too large: $size3 bytes" grep -q "too large: $size3 bytes" "$scratch/cap.err"
check "nothing written" test ! -s "$scratch/cap.out"
check "the protocol was traced" grep -q 'C: [0-9]* UID FETCH' "$scratch/cap.err"
check "no BODY.PEEK[] asked for" sh -c "! grep -q 'BODY.PEEK\[\]' '$scratch/cap.err'"
check "LOGIN traced masked" grep -q 'C: \[private: [0-9]* bytes masked\]' "$scratch/cap.err"
check "the password nowhere in the trace" sh -c "! grep -q '$MS_PASSWORD' '$scratch/cap.err'"
st --size-max 1000 fetch "$imap" 1 > "$scratch/f1-cap"
check "under the cap: fetched" cmp -s "$scratch/f1" "$scratch/f1-cap"

# 5b. Fetched as ingest fetches, planned: the three in one UID FETCH, byte for byte.
mkdir -p "$scratch/all" "$scratch/all-cap"
G_MESSAGES_DEBUG=mail st fetchall "$imap" "$scratch/all" > "$scratch/all.out" 2> "$scratch/all.err"
check "planned: fetched" is $? 0
check "planned: one UID FETCH for the three" \
	test "$(grep -c 'C: [0-9A-Za-z]* UID FETCH .*BODY.PEEK\[\]' "$scratch/all.err")" -eq 1
check "planned: asked for as UIDs 1:3" grep -q 'C: [0-9A-Za-z]* UID FETCH 1:3 ' "$scratch/all.err"
for i in 1 2 3; do
	check "planned: mail $i byte for byte" sh -c "tr -d '\r' < '$scratch/all/$i' | cmp -s - '$scratch/m$i'"
done
# Over the cap in a batch: left out of the UID FETCH, refused unfetched.
G_MESSAGES_DEBUG=mail st --size-max 1000 fetchall "$imap" "$scratch/all-cap" > "$scratch/cap2.out" 2> "$scratch/cap2.err"
check "planned under a cap: fetched" is $? 0
check "planned under a cap: 1 and 2 in one UID FETCH" grep -q 'C: [0-9A-Za-z]* UID FETCH 1:2 ' "$scratch/cap2.err"
check "planned under a cap: one UID FETCH of bodies" \
	test "$(grep -c 'C: [0-9A-Za-z]* UID FETCH .*BODY.PEEK\[\]' "$scratch/cap2.err")" -eq 1
check "planned under a cap: 3 refused, too large" grep -q "^3 refused: .*too large: $size3 bytes" "$scratch/cap2.out"
check "planned under a cap: 3 not written" test ! -e "$scratch/all-cap/3"
check "planned under a cap: 1 as fetched alone" cmp -s "$scratch/f1" "$scratch/all-cap/1"

# 6. A certificate for another host (Dovecot serving other.pem): refused.
if ms_restart_dovecot "$ms" other; then
	before=$(logins)
	for url in "$imap" "$imaps"; do
		st list "$url" > /dev/null 2> "$scratch/host.err"
		check "${url%%:*}: a certificate for other.example: TEMPORARY" is $? 2
		check "${url%%:*}: the name refused" grep -q "certificate is refused for host 127.0.0.1" "$scratch/host.err"
	done
	check "no LOGIN reached Dovecot" test "$(logins)" -eq "$before"
else
	not_ok "Dovecot restarts with other.pem"
fi
ms_restart_dovecot "$ms" || { not_ok "Dovecot restarts with server.pem"; finish; }

# 7. No STARTTLS, and a response injected after it: nothing said in plain text.
for mode in no-starttls starttls-inject; do
	port=$(ms_free_port)
	python3 "$ZERODAY_SRCDIR/tests/fake-imap.py" --port "$port" --mode "$mode" \
		--log "$scratch/fake-$mode.log" > "$scratch/fake-$mode.out" 2>&1 &
	fake_pid=$!
	# A file of this server's own: a shared one could still say the last one's "ready".
	for _ in $(seq 1 50); do grep -q ready "$scratch/fake-$mode.out" && break; sleep 0.1; done
	st list "imap://bot%40example.org@127.0.0.1:$port/INBOX" > /dev/null 2> "$scratch/fake.err"
	check "$mode: TEMPORARY" is $? 2
	stop_fake
	case $mode in
	no-starttls)
		check "$mode: said why" grep -q "does not offer STARTTLS" "$scratch/fake.err"
		check "$mode: not a word sent" test ! -s "$scratch/fake-$mode.log" ;;
	starttls-inject)
		check "$mode: said why" grep -q "more after its answer to STARTTLS" "$scratch/fake.err"
		check "$mode: STARTTLS only, no LOGIN, no LOGOUT" \
			test "$(cut -d' ' -f2 "$scratch/fake-$mode.log" | tr -d '\r' | tr '\n' ' ')" = "STARTTLS " ;;
	esac
done

# 8. UIDVALIDITY changed on the server: seen.
_ms_doveadm "$ms" mailbox update -u "$user" --uid-validity 4242 INBOX
st list "$imap" > "$scratch/list-v"
check "the new UIDVALIDITY reported" grep -q '^uidvalidity 4242$' "$scratch/list-v"
check "not the old one" test "$uidvalidity" != 4242

# 9. IDLE: a timeout without mail, "changed" when one comes.
st wait "$imap" 2 > "$scratch/wait1"
check "wait: timeout without mail" grep -qx timeout "$scratch/wait1"
t0=$(date +%s)
st wait "$imaps" 30 > "$scratch/wait2" 2> "$scratch/wait2.err" &
wait_pid=$!
sleep 2
sed 's/m3@/m4@/' "$scratch/m1" > "$scratch/m4"
ms_deliver_file "$ms" "$user" "$scratch/m4"
wait "$wait_pid"
check "wait: changed when a mail is delivered during IDLE" grep -qx changed "$scratch/wait2"
check "soon, not at the timeout ($(($(date +%s) - t0)) s)" test $(($(date +%s) - t0)) -lt 20

# 10. Dovecot restarted between list and fetch: TEMPORARY, and a reopen works.
rm -f "$scratch/go"
st relist "$imap" "$scratch/go" > "$scratch/relist" 2> "$scratch/relist.err" &
relist_pid=$!
for _ in $(seq 1 100); do grep -q paused "$scratch/relist" 2> /dev/null && break; sleep 0.1; done
ms_restart_dovecot "$ms" || not_ok "Dovecot restarts"
touch "$scratch/go"
wait "$relist_pid"
check "the fetch after the restart: TEMPORARY" is $? 2
check "said so" grep -q "^source-tool: temporary: " "$scratch/relist.err"
st fetch "$imap" 1 > "$scratch/f1-again"
check "reopened: fetched again" cmp -s "$scratch/f1" "$scratch/f1-again"

# 11. Read-only: no flag set on the server.
_ms_doveadm "$ms" fetch -u "$user" 'uid flags' mailbox INBOX > "$scratch/flags"
check "four mails on the server" test "$(grep -c '^uid: ' "$scratch/flags")" -eq 4
check "none \\Seen (EXAMINE, BODY.PEEK)" sh -c "! grep -q 'Seen' '$scratch/flags'"
finish
