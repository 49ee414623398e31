#!/bin/sh
# Sending over SMTP when things go wrong, against the scripted fake server
# (tests/fake-smtp.py; the real Postfix and Dovecot are tests/smtp-real.sh):
# STARTTLS required and AUTH only after it; a certificate for another host,
# a server without STARTTLS and a response injected before the handshake
# refused before anything is said; a 4xx, a connection dropped after DATA
# and a server that never answers tried again, with the same Message-ID; a
# 5xx for one recipient of three, and a 4xx for one; implicit TLS; the
# per-recipient limit holding mail back and its digest; and zeroday killed
# at each step of sending, K times: no mail lost, none sent under a second
# Message-ID. Speaks TAP.
test_name=smtp-faults
. "$ZERODAY_SRCDIR/tests/lib.sh"
. "$ZERODAY_SRCDIR/tests/mailservers.sh"

# The number of kills at each step.
K=${K:-3}

if ! command -v python3 > /dev/null || ! command -v openssl > /dev/null; then
	echo "1..0 # SKIP python3 and openssl are needed for the fake server (./quickstart installs them)"
	exit 0
fi
ms_certs "$scratch/certs" || { not_ok "test certificates made"; tap_end; }

server_pid=
stop_server() {
	[ -n "$server_pid" ] && kill "$server_pid" 2> /dev/null && wait "$server_pid" 2> /dev/null
	server_pid=
}
trap 'stop_server; cleanup' EXIT

# serve MODE [ARGS...]: the fake server in MODE on a new port and spool;
# sets $port and $spool.
serve() {
	stop_server
	mode=$1
	shift
	port=$(ms_free_port)
	spool="$scratch/spool-$mode-$port"
	mkdir -p "$spool"
	python3 "$ZERODAY_SRCDIR/tests/fake-smtp.py" --port "$port" --mode "$mode" --spool "$spool" \
		--cert "$scratch/certs/${cert:-server}.pem" --key "$scratch/certs/${cert:-server}.key" \
		"$@" > "$spool/fake.out" 2> "$scratch/fake-$mode.err" &
	server_pid=$!
	conf
	# The server's own file, new with its spool: the shell opens it in the
	# child, maybe after the first look, and a file shared with the server
	# before could still say "ready".
	for _ in $(seq 1 100); do
		grep -q ready "$spool/fake.out" 2> /dev/null && return 0
		sleep 0.1
	done
	echo "# the fake server did not start: $(cat "$scratch/fake-$mode.err")"
	return 1
}

printf 'user = %s\npassword = %s\n' zeroday 'pa ss=word' > "$scratch/creds"
chmod 0600 "$scratch/creds"
# conf: the configuration for the fake server on $port: $scheme (smtp or
# smtps), $retry seconds before a retry, and $extra lines.
scheme=smtp
retry=1
extra=
conf() {
	printf '[mail]\naddress = bot@example.org\noutbox = %s://127.0.0.1:%s\nca-file = %s\ncredentials = %s\ntimeout = 10\nretry = %s\n%s\n' \
		"$scheme" "$port" "$scratch/certs/ca.pem" "$scratch/creds" "$retry" "$extra" > "$scratch/z.conf"
}
z() { "$ZERODAY" --config="$scratch/z.conf" --state-dir="$scratch/state" "$@"; }
json() { z outbox --json | sed 's/}, {"id"/\n{"id"/g'; }
# row ID: the outbox row of mail ID, one line of JSON.
row() { json | grep "^.\{0,2\}\"id\": $1, "; }
# has ID PATTERN: mail ID's JSON matches PATTERN (grep).
has() { row "$1" | grep -q "$2"; }
# mid ID: its Message-ID.
mid() { row "$1" | sed -n 's/.*"message_id": "\([^"]*\)".*/\1/p'; }
# copies ID: how many copies of mail ID the fake server stored.
copies() { grep -l "^Message-Id: <$(mid "$1")>" "$spool"/*.eml 2> /dev/null | wc -l; }
# queue ADDRESS...: a test mail queued; prints its id.
queue() { z outbox test "$@" | sed -n 's/^queued test mail //p'; }

# 1. STARTTLS, AUTH over it, three recipients, one refused for good.
serve ok --refuse Bad@example.org
z init > /dev/null
id=$(queue a@example.org bad@example.org "Cee <c@example.org>")
z outbox send > "$scratch/send1.out" 2> "$scratch/send1.err"
check "zeroday outbox send succeeds" test $? -eq 0
check "sent over STARTTLS" test "$(copies "$id")" -eq 1
check "to the two recipients the server took" \
	grep -q '^X-Fake-Rcpt: a@example.org, c@example.org$' "$spool"/0001.eml
check "after AUTH with the credentials file's user" grep -q '^X-Fake-Auth: zeroday$' "$spool"/0001.eml
check "STARTTLS before AUTH, and AUTH before MAIL" \
	python3 -c 'import json, sys
c = json.loads(open(sys.argv[1]).readline())["commands"]
w = [x.split()[0] for x in c]
sys.exit(not (w.index("STARTTLS") < w.index("AUTH") < w.index("MAIL")))' "$spool/log.jsonl"
check "the refused recipient recorded with the server's words" \
	has "$id" '"address": "bad@example.org", "state": "refused", "reply": "[^"]*user unknown'
z outbox --json > "$scratch/o1.json"
check "the mail is sent" has "$id" '"kind": "test", "state": "sent"'
check "the password is nowhere in the log, the store or the outbox" \
	sh -c "! grep -rq 'pa ss=word' '$scratch/send1.out' '$scratch/send1.err' '$scratch/state' '$scratch/o1.json'"
check "a copy of what went out is kept" test -f "$(row "$id" | sed -n 's/.*"path": "\([^"]*\)".*/\1/p')"

# 2. A 4xx to MAIL FROM: tried again after the retry time, same Message-ID.
# The retry time is long enough that the send right after the try comes
# before it even on a loaded machine.
retry=12
serve tempfail --once
id=$(queue a@example.org)
tried=$(date +%s)
z outbox send > /dev/null 2> "$scratch/send2.err"
check "a 4xx is no failure of zeroday's" test $? -eq 0
check "a 4xx: not sent" test "$(copies "$id")" -eq 0
check "queued again, the 451 recorded" has "$id" '"state": "queued".*"last_error": "[^"]*451'
check "and said in the log" grep -q "not sent: .*451" "$scratch/send2.err"
z outbox send > /dev/null 2>&1
check "not tried again before its time" test "$(copies "$id")" -eq 0
# Against the time of the try, not the clock now: a loaded machine may
# take the whole retry time to get here.
check "which is the retry time after the try" \
	test "$(row "$id" | sed -n 's/.*"next_try": \([0-9]*\),.*/\1/p')" -ge "$((tried + retry))"
while [ "$(date +%s)" -le "$((tried + retry))" ]; do sleep 0.2; done
z outbox send > /dev/null 2>&1
check "then sent, once" test "$(copies "$id")" -eq 1
check "after two tries" has "$id" '"state": "sent".*"attempts": 2'
retry=1

# 3. The connection dropped after DATA: sent again, same Message-ID.
serve drop-after-data --once
id=$(queue a@example.org)
z outbox send > /dev/null 2>&1
check "dropped after DATA: queued again" has "$id" '"state": "queued"'
sleep 1.2
z outbox send > /dev/null 2>&1
check "then sent once, with its Message-ID" test "$(copies "$id")" -eq 1

# 4. A server that never answers: the timeout, then a retry.
serve silent --once
id=$(queue a@example.org)
id2=$(queue b@example.org)
id3=$(queue c@example.org)
start=$(date +%s)
z outbox send > /dev/null 2> "$scratch/send4.err"
took=$(($(date +%s) - start))
check "a silent server: given up after the timeout (${took} s)" test "$took" -lt 60
check "queued again" has "$id" '"state": "queued"'
untried() { has "$id2" '"attempts": 0,' && has "$id3" '"attempts": 0,'; }
check "the mails after it are not tried against a server that is down" untried
sleep 1.2
z outbox send > /dev/null 2>&1
check "then sent, all three" \
	test "$(copies "$id")$(copies "$id2")$(copies "$id3")" = 111

# 5. A certificate for another host, no STARTTLS, a response injected
# before the handshake: refused, before AUTH and before MAIL.
for fault in wrong-host no-starttls starttls-inject; do
	case $fault in
	wrong-host) cert=other; serve ok; cert=server; expect="certificate is refused for host 127.0.0.1" ;;
	no-starttls) serve no-starttls; expect="does not offer STARTTLS; refusing to send in plain text" ;;
	starttls-inject) serve starttls-inject; expect="more after its answer to STARTTLS" ;;
	esac
	id=$(queue a@example.org)
	z outbox send > /dev/null 2> "$scratch/send-$fault.err"
	check "$fault: nothing sent" test "$(copies "$id")" -eq 0
	check "$fault: said why" grep -q "$expect" "$scratch/send-$fault.err"
	check "$fault: no AUTH, no MAIL said" \
		sh -c "! grep -q '\"AUTH\|\"MAIL' '$spool/log.jsonl'"
	check "$fault: the mail waits, queued" has "$id" '"state": "queued"'
	# Mended (the right server), it goes.
	serve ok
	sleep 1.2
	z outbox send > /dev/null 2>&1
	check "$fault: sent once mended" test "$(copies "$id")" -eq 1
done

# 6. Implicit TLS (smtps://).
scheme=smtps
serve ok --implicit-tls
scheme=smtp
id=$(queue a@example.org)
z outbox send > /dev/null 2>&1
check "smtps: sent" test "$(copies "$id")" -eq 1
check "smtps: over TLS from the first byte" grep -q '"tls": true' "$spool/log.jsonl"

# 7. A 4xx for one recipient: the others get it now, that one later, alone.
serve rcpt-tempfail --refuse b@example.org
id=$(queue a@example.org b@example.org c@example.org)
z outbox send > /dev/null 2>&1
check "a 4xx for one of three: the two others have it" \
	grep -q '^X-Fake-Rcpt: a@example.org, c@example.org$' "$spool"/0001.eml
check "the mail waits for the third" has "$id" '"state": "queued"'
serve ok
sleep 1.2
z outbox send > /dev/null 2>&1
check "then the third gets it, alone, same Message-ID" \
	sh -c "grep -q '^X-Fake-Rcpt: b@example.org\$' '$spool/0001.eml' && grep -q '^Message-Id: <$(mid "$id")>' '$spool/0001.eml'"
check "and the mail is sent" has "$id" '"state": "sent"'

# 8. The per-recipient limit: 2 a day. Four mails: two go, two are held;
# a day later the two held go as one digest, and nothing is dropped.
serve ok
extra="max-per-recipient-day = 2"
conf
sqlite3 "$scratch/state/zeroday.db" "UPDATE outbox_rcpt SET updated = updated - 86400"
ids=""
for i in 1 2 3 4; do ids="$ids $(queue limit@example.org)"; done
z outbox send > /dev/null 2> "$scratch/send8.err"
check "two of four mails go" test "$(ls "$spool"/*.eml | wc -l)" -eq 2
check "two are held" test "$(json | grep -c '"kind": "test", "state": "held"')" -eq 2
check "held, said in the log" grep -q "held back by a limit" "$scratch/send8.err"
z outbox send > /dev/null 2>&1
check "still held within the day" test "$(ls "$spool"/*.eml | wc -l)" -eq 2
sqlite3 "$scratch/state/zeroday.db" "UPDATE outbox_rcpt SET updated = updated - 86400"
z outbox send > /dev/null 2>&1
check "a day later: one digest" test "$(ls "$spool"/*.eml | wc -l)" -eq 3
check "the digest says how many and why" \
	grep -q '^Subject: \[zeroday kernel test robot\] 2 mails held back for limit@example.org' "$spool"/0003.eml
check "and carries both held mails" test "$(grep -c 'filename=mail-[12].eml' "$spool"/0003.eml)" -eq 2
check "every mail is sent now; none dropped" test "$(json | grep -c '"state": "held"')" -eq 0
check "the digest is in the outbox, sent" test "$(json | grep -c '"kind": "digest", "state": "sent"')" -eq 1

# 8b. The hourly limit, 2 mails: five mails to five people, two go and
# three are held; an hour later two digests go, and the third an hour
# after that: the digests count against the limit too.
serve ok
extra="max-per-hour = 2"
conf
sqlite3 "$scratch/state/zeroday.db" "UPDATE outbox_rcpt SET updated = updated - 7200"
for i in 1 2 3 4 5; do queue "hour$i@example.org" > /dev/null; done
z outbox send > /dev/null 2>&1
check "hourly limit: two of five go" test "$(ls "$spool"/*.eml | wc -l)" -eq 2
check "three are held" test "$(json | grep -c '"kind": "test", "state": "held"')" -eq 3
sqlite3 "$scratch/state/zeroday.db" "UPDATE outbox_rcpt SET updated = updated - 3600"
z outbox send > /dev/null 2>&1
check "an hour later, two digests, no more" test "$(ls "$spool"/*.eml | wc -l)" -eq 4
sqlite3 "$scratch/state/zeroday.db" "UPDATE outbox_rcpt SET updated = updated - 3600"
z outbox send > /dev/null 2>&1
check "and the third the hour after" test "$(ls "$spool"/*.eml | wc -l)" -eq 5
check "nothing held is left" test "$(json | grep -c '"state": "held"')" -eq 0

# 9. Killed at each step of sending, K times each: the restart sends what
# was not sent, and never under a new Message-ID.
extra=
serve ok
for step in connect mail accepted commit; do
	lost=0
	second_id=0
	again=0
	for k in $(seq 1 "$K"); do
		id=$(queue "crash-$step-$k@example.org")
		ZERODAY_TEST_CRASH=$step z outbox send > /dev/null 2> "$scratch/crash.err"
		rc=$?
		[ "$rc" -eq 137 ] || echo "# $step: exit $rc, not killed: $(tail -2 "$scratch/crash.err")"
		z outbox send > /dev/null 2>&1
		row "$id" | grep -q '"state": "sent"' || lost=$((lost + 1))
		got=$(copies "$id")
		[ "$got" -ge 1 ] || lost=$((lost + 1))
		[ "$got" -le 1 ] || again=$((again + got - 1))
		# Any other Message-ID delivered to this recipient is a duplicate.
		others=$(grep -l "^X-Fake-Rcpt: crash-$step-$k@example.org" "$spool"/*.eml |
			xargs grep -h '^Message-Id:' | sort -u | wc -l)
		[ "$others" -le 1 ] || second_id=$((second_id + 1))
	done
	echo "# killed at '$step' $K times: $lost lost, $second_id under a second Message-ID, $again sent again with the same Message-ID"
	check "killed at '$step' $K times: none lost" test "$lost" -eq 0
	check "killed at '$step' $K times: none under a second Message-ID" test "$second_id" -eq 0
	case $step in
	connect|mail) check "killed at '$step': no copy sent twice" test "$again" -eq 0 ;;
	esac
done
tap_end
