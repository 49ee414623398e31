#!/bin/sh
# bench/ingest: the IMAP ingest of 10,000 generated LKML-style mails
# (bench/gen-lkml.py) from the real Dovecot of tests/mailservers.sh, by
# `zeroday run --once` with no tree subscribed (it ingests, then assembles
# the series), against mbsync (Debian's isync, the baseline, measured in the
# same run) pulling the same folder into an empty Maildir. Both over
# STARTTLS to 127.0.0.1, each into a fresh state or Maildir every time, best
# of 3 timed runs after one untimed run that warms Dovecot's cache for both.
# Both must fetch every mail: zeroday's "mail: N new" line and the files in
# mbsync's Maildir are checked.
#
# zeroday is timed twice per run, from the request to its "mail: N new"
# line (the ingest, set against mbsync) and to its exit (with the series
# assembly). zeroday commits each mail in its own transaction (WAL,
# synchronous = FULL: an fsync per mail), mbsync fsyncs each mail it
# writes (FSync yes, its default): both are run again with their store on
# a tmpfs (/dev/shm), to tell the disk's part from the protocol's.
#
# Needs root (Dovecot starts as root), python3 and mbsync; skipped with a
# message otherwise, or when the servers cannot start.
#
# usage: bench/ingest.sh BUILDDIR SRCDIR [MAILS]

set -eu
build=${1:?usage: bench/ingest.sh BUILDDIR SRCDIR [MAILS]}
src=${2:?usage: bench/ingest.sh BUILDDIR SRCDIR [MAILS]}
mails=${3:-10000}
zd=$build/zeroday
rounds=3
user=bot@example.org

skip() {
	echo "ingest: skipped: $*"
	exit 0
}
[ "$(id -u)" -eq 0 ] || skip "Dovecot starts as root; run as root"
command -v python3 >/dev/null 2>&1 || skip "no python3"
command -v mbsync >/dev/null 2>&1 || skip "no mbsync for the baseline (apt-get install isync)"

# shellcheck source=tests/mailservers.sh
. "$src/tests/mailservers.sh"
# Short, and searchable by Dovecot's unprivileged processes.
work=$(mktemp -d "${TMPDIR:-/tmp}/zeroday-bench-XXXXXX")
chmod 0711 "$work"
shm=
if [ -d /dev/shm ] && [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ]; then
	shm=$(mktemp -d /dev/shm/zeroday-bench-XXXXXX)
fi
cleanup() {
	ms_stop "$work/ms" || :
	rm -rf "$work" ${shm:+"$shm"}
}
trap cleanup EXIT
if ! ms_start "$work/ms" 2>"$work/ms.err"; then
	sed 's/^/ingest: /' "$work/ms.err"
	skip "the test mail servers do not start"
fi

# The folder: MAILS generated mails in $user's INBOX.
python3 "$src/bench/gen-lkml.py" "$mails" "$work/mail"
bytes=$(du -sb "$work/mail" | cut -f1)
ms_deliver_dir "$work/ms" "$user" "$work/mail"
rm -rf "$work/mail"

# mbsync: isync 1.4 says SSLType, 1.5 TLSType; it checks the certificate's
# DNS names only, so it connects to localhost (127.0.0.1 only, here too).
if mbsync --version | grep -q '^isync 1\.[0-4]\.'; then tls=SSLType; else tls=TLSType; fi
getent ahosts localhost | awk '{ print $1 }' | grep -qvx 127.0.0.1 &&
	echo "ingest: note: localhost resolves to more than 127.0.0.1 here; mbsync tries each"
# mbsyncrc NEAR: a configuration pulling the folder into the Maildir NEAR.
mbsyncrc() {
	cat <<-EOF
	IMAPAccount acct
	Host localhost
	Port $MS_IMAP_PORT
	User $user
	Pass $MS_PASSWORD
	$tls STARTTLS
	CertificateFile $work/ms/ca.pem

	IMAPStore far
	Account acct

	MaildirStore near
	Path $1/
	Inbox $1/INBOX

	Channel ingest
	Far :far:INBOX
	Near :near:INBOX
	Sync Pull
	Create Near
	SyncState *
	EOF
}

# zeroday: the folder as its only source.
(
	umask 077
	printf 'user = %s\npassword = %s\n' "$user" "$MS_PASSWORD" > "$work/credentials"
)
cat > "$work/zeroday.conf" <<EOF
[mail]
sources = imap://$(echo "$user" | sed 's/@/%40/')@127.0.0.1:$MS_IMAP_PORT/INBOX
ca-file = $work/ms/ca.pem
credentials = $work/credentials
EOF

. "$(dirname "$0")/lib.sh"
rate() { awk -v s="$1" -v n="$mails" 'BEGIN { printf "%.0f", n / s }'; }
fail() {
	echo "ingest: FAILED: $*" >&2
	exit 1
}

# run_mbsync DIR: pulls the folder into the fresh Maildir DIR/near; prints
# the seconds taken.
run_mbsync() {
	rm -rf "$1"
	mkdir -p "$1/near"
	mbsyncrc "$1/near" > "$1/mbsyncrc"
	t0=$(now)
	HOME=$1 mbsync -q -c "$1/mbsyncrc" ingest > "$1/mbsync.out" 2>&1 ||
		{ cat "$1/mbsync.out" >&2; fail "mbsync failed"; }
	t1=$(now)
	got=$(find "$1/near/INBOX/cur" "$1/near/INBOX/new" -type f | wc -l)
	[ "$got" -eq "$mails" ] || fail "mbsync fetched $got of $mails mails"
	elapsed "$t0" "$t1"
	rm -rf "$1"
}

# run_zeroday DIR: `zeroday run --once` with the fresh state DIR/state;
# prints the seconds to its "mail:" line and to its exit.
run_zeroday() {
	rm -rf "$1"
	mkdir -p "$1"
	"$zd" --config "$work/zeroday.conf" --state-dir "$1/state" init > /dev/null
	python3 - "$1/run.log" "$zd" --config "$work/zeroday.conf" --state-dir "$1/state" \
		run --once <<-'EOF' > "$1/times" || { cat "$1/run.log" >&2; fail "zeroday run --once failed"; }
	import subprocess, sys, time
	log = open(sys.argv[1], "w")
	t0 = time.monotonic()
	p = subprocess.Popen(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
	mail = None
	for line in p.stderr:
	    t = time.monotonic() - t0
	    line = line.decode(errors="replace")
	    if mail is None and ": mail: " in line and " new (" in line:
	        mail = t
	    log.write("%9.3f %s" % (t, line))
	rc = p.wait()
	total = time.monotonic() - t0
	print("%.3f %.3f" % (mail if mail is not None else -1, total))
	sys.exit(rc)
	EOF
	line=$(grep -m1 ': mail: [0-9]* new (' "$1/run.log") || fail "zeroday said no 'mail:' line"
	got=$(echo "$line" | sed 's/.*: mail: \([0-9]*\) new (\([0-9]*\) quarantined), \([0-9]*\) already stored, \([0-9]*\) source.*/\1 \2 \3 \4/')
	# shellcheck disable=SC2086
	set -- "$1" $got
	if [ "$2" -ne "$mails" ] || [ "$5" -ne 0 ]; then
		fail "zeroday: $line"
	fi
	[ "$3" -eq 0 ] || echo "ingest: note: zeroday quarantined $3 of the $mails mails" >&2
	cat "$1/times"
	rm -rf "$1"
}

echo "ingest: $mails mails ($((bytes / 1048576)) MiB) in Dovecot's INBOX; $rounds runs each, best kept"
run_mbsync "$work/warm" > /dev/null
mt="" zi="" zt="" mts="" zis="" zts=""
for _ in $(seq 1 $rounds); do
	mt="$mt $(run_mbsync "$work/m")"
	z=$(run_zeroday "$work/z")
	# shellcheck disable=SC2086
	set -- $z
	zi="$zi $1" zt="$zt $2"
	if [ -n "$shm" ]; then
		mts="$mts $(run_mbsync "$shm/m")"
		z=$(run_zeroday "$shm/z")
		# shellcheck disable=SC2086
		set -- $z
		zis="$zis $1" zts="$zts $2"
	fi
done
# shellcheck disable=SC2086
{
	m=$(best $mt) i=$(best $zi) t=$(best $zt)
}
echo "ingest: mbsync $m s, zeroday $i s to 'mail: $mails new' ($t s to the end of run --once)"
echo "ingest: zeroday $(rate "$i") msg/s, mbsync $(rate "$m") msg/s," \
	"ratio $(ratio "$(rate "$i")" "$(rate "$m")")x (zeroday/mbsync)"
echo "ingest: zeroday run --once, series assembly included: $(rate "$t") msg/s," \
	"ratio $(ratio "$(rate "$t")" "$(rate "$m")")x"
if [ -n "$shm" ]; then
	# shellcheck disable=SC2086
	{
		ms=$(best $mts) is=$(best $zis) ts=$(best $zts)
	}
	echo "ingest: on tmpfs (no disk, no fsync cost): zeroday $(rate "$is") msg/s" \
		"($(rate "$ts") with assembly), mbsync $(rate "$ms") msg/s," \
		"ratio $(ratio "$(rate "$is")" "$(rate "$ms")")x"
	echo "ingest: the disk's share: zeroday $(awk -v a="$i" -v b="$is" 'BEGIN { printf "%.0f", 100 * (a - b) / a }')%" \
		"of its ingest time, mbsync $(awk -v a="$m" -v b="$ms" 'BEGIN { printf "%.0f", 100 * (a - b) / a }')%"
else
	echo "ingest: no tmpfs at /dev/shm: the disk's share not measured"
fi
