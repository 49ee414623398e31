# A private public-inbox archive of one mailing list, served over IMAP by
# public-inbox-imapd, as lore.kernel.org serves the kernel's lists.
# Sourced by the tests (POSIX sh, safe under set -u), after
# tests/mailservers.sh, whose ms_certs makes the test CA:
#
#	. "$ZERODAY_SRCDIR/tests/mailservers.sh"
#	. "$ZERODAY_SRCDIR/tests/publicinbox.sh"
#	ms_certs "$scratch/certs" &&
#		pi_start "$scratch/pi" "$scratch/certs" linux-foo linux-foo@vger.example.org || skip...
#	trap 'pi_stop "$scratch/pi"; cleanup' EXIT
#	pi_add "$scratch/pi" patch1.eml patch2.eml
#
# Everything lives under the directory a test gives (the public-inbox
# configuration, PI_CONFIG=DIR/config, never ~/.public-inbox; the v2 inbox;
# logs) and the server listens on 127.0.0.1 only, on free ports. Needs
# Debian's public-inbox (1.9.0 in Debian 12), git and python3; not root.
# Linux only (/proc). Internal helpers are prefixed _pi_.
#
# What public-inbox-imapd 1.9.0 does (read in its source, checked by
# tests/publicinbox-selftest.sh):
# - Login: anonymous. LOGIN takes any user name and any password (both
#   ignored, never refused), before or after STARTTLS; AUTHENTICATE
#   ANONYMOUS works too. The greeting's capabilities: "IMAP4rev1 IDLE
#   STARTTLS AUTH=ANONYMOUS" (STARTTLS only on the imap:// port; no
#   LOGINDISABLED); after login "IMAP4rev1 IDLE COMPRESS=DEFLATE".
# - Folders: read-only. An inbox whose newsgroup is NAME is served as the
#   folders NAME.0, NAME.1, ...: slices of 50,000 UIDs, NAME.K holding UIDs
#   K*50000+1 to (K+1)*50000 (the UID is the NNTP article number, 1 for the
#   first message; NAME.K+1 appears, maybe empty, once the highest UID
#   reaches (K+1)*50000). LIST shows every level of NAME as a \HasChildren
#   folder, and an "inbox." prefix as "INBOX."; names are matched without
#   regard to case. Newsgroups must be lower case, [a-z0-9/_.~@+=:-], and
#   not end in .DIGITS. SELECT is EXAMINE: [READ-ONLY], FLAGS (\Seen),
#   PERMANENTFLAGS (), every message RECENT and unseen.
# - UIDVALIDITY: the inbox's creation time (msgmap's created_at, seconds
#   since the epoch at public-inbox-init), the same for every slice and
#   stable across restarts.
# - IDLE: supported (advertised before login too). New mail shows as
#   "* N EXISTS" about 2 s after it is added: without Linux::Inotify2
#   (Debian's liblinux-inotify2-perl, only recommended), imapd polls the
#   inbox's lock file every 2 s; with it, inotify at once. "* OK Still
#   here" every 60 s. New sessions, and UID SEARCH/FETCH in a session
#   already open, see a message as soon as pi_add returns: no restart.
# - BODY[]: the message as public-inbox stored it, lines ending CRLF
#   (stored with LF), RFC822.SIZE its length. Storing changes a message
#   (public-inbox-mda and the v2 importer): a leading mbox "From " line is
#   removed; the header fields Delivered-To, X-Original-To, Approved,
#   Approve, X-Approved, X-Approve, Urgent, Return-Receipt-To,
#   Disposition-Notification-To, X-Confirm-Reading-To, X-Pmrqc, Bytes,
#   Lines, Content-Length, Status and X-Status are removed (Return-Path,
#   Received and the rest are kept, in their order); "List-Id:
#   <LIST.ADDR>" (the list address with @ as .) is appended to the header
#   unless the message has a List-Id. A message without Message-ID gets a
#   generated one appended; one whose Message-ID is archived already with
#   other content is stored with a second, generated, Message-ID field
#   appended; one identical to an archived message is not stored (pi_add
#   fails). HTML, image, audio, video and vendor-specific parts, and
#   attachments named *.exe, *.zip and the like, are refused (pi_add
#   fails).

# _pi_err MESSAGE...: MESSAGE on stderr, and false.
_pi_err() {
	printf '%s\n' "$*" >&2
	return 1
}

# _pi_check_dir FUNCTION DIR: sets _pi_dir to DIR's absolute path, or fails
# when DIR is missing or its path has characters the configuration and the
# listen addresses would not take.
_pi_check_dir() {
	_pi_dir=$(cd "$2" 2>/dev/null && pwd -P) || { _pi_err "$1: no directory '$2'"; return 1; }
	case $_pi_dir in
	*[!A-Za-z0-9/._+-]*)
		_pi_err "$1: '$_pi_dir': only letters, digits and /._+- are allowed in the path"
		return 1 ;;
	esac
}

# _pi_need_tools FUNCTION: fails naming the first command missing.
_pi_need_tools() {
	for _pi_t in public-inbox-init public-inbox-mda public-inbox-imapd git python3; do
		command -v "$_pi_t" >/dev/null 2>&1 ||
			{ _pi_err "$1: '$_pi_t' not found (Debian: apt-get install public-inbox git python3)"; return 1; }
	done
}

# _pi_free_ports N: N distinct free TCP ports on 127.0.0.1, one a line.
_pi_free_ports() {
	python3 -c '
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    socks.append(s)
for s in socks:
    print(s.getsockname()[1])
' "$1"
}

# _pi_env DIR COMMAND...: COMMAND with DIR's public-inbox configuration
# (PI_CONFIG) and emergency Maildir (PI_EMERGENCY), nothing under ~.
_pi_env() {
	_pi_e=$1
	shift
	PI_CONFIG="$_pi_e/config" PI_EMERGENCY="$_pi_e/emergency" "$@"
}

# _pi_pids DIR: the ids of the running processes using DIR's public-inbox
# configuration (PI_CONFIG in their environment: imapd, a public-inbox-mda,
# and the git processes they start), one a line.
_pi_pids() {
	python3 - "$1" <<-'EOF'
	import os, sys
	want = b"PI_CONFIG=" + os.fsencode(sys.argv[1]) + b"/config"
	for pid in os.listdir("/proc"):
	    if not pid.isdigit() or int(pid) == os.getpid():
	        continue
	    try:
	        with open("/proc/%s/environ" % pid, "rb") as f:
	            if want in f.read().split(b"\0"):
	                print(pid)
	    except OSError:
	        continue
	EOF
}

# _pi_imapd_pid DIR: the id of DIR's imapd, when it runs.
_pi_imapd_pid() {
	[ -f "$1/imapd.pid" ] || return 1
	_pi_p=$(cat "$1/imapd.pid" 2>/dev/null)
	case " $(_pi_pids "$1" | tr '\n' ' ') " in
	*" $_pi_p "*) echo "$_pi_p" ;;
	*) return 1 ;;
	esac
}

# _pi_logs DIR: the tail of DIR's logs, on stderr.
_pi_logs() {
	for _pi_l in "$1/imapd.early" "$1/imapd.err" "$1/imapd.out" "$1/init.log" "$1/mda.log"; do
		[ -s "$_pi_l" ] || continue
		echo "--- tail of $_pi_l:"
		tail -n 25 "$_pi_l"
	done >&2
}

# _pi_wait_ready DIR PID SECONDS: waits up to SECONDS until imapd (PID)
# greets on PI_IMAP_PORT (with STARTTLS among its capabilities) and, after
# a TLS handshake verifying DIR's ca.pem for localhost, on PI_IMAPS_PORT.
# Fails naming what is not ready, at once if PID is gone.
_pi_wait_ready() {
	python3 - "$@" "$PI_IMAP_PORT" "$PI_IMAPS_PORT" <<-'EOF'
	import os, socket, ssl, sys, time
	d, pid, seconds, imap, imaps = sys.argv[1:6]
	limit = time.time() + float(seconds)
	def greeting(port, want, tls=False):
	    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
	    s.settimeout(5)
	    try:
	        s.connect(("127.0.0.1", int(port)))
	        if tls:
	            ctx = ssl.create_default_context(cafile=d + "/ca.pem")
	            s = ctx.wrap_socket(s, server_hostname="localhost")
	        line = s.recv(512)
	        return line.startswith(b"* OK") and want in line
	    except (OSError, ssl.SSLError):
	        return False
	    finally:
	        s.close()
	checks = {
	    "IMAP (STARTTLS) on 127.0.0.1:%s" % imap: lambda: greeting(imap, b" STARTTLS"),
	    "IMAPS on 127.0.0.1:%s" % imaps: lambda: greeting(imaps, b"IMAP4rev1", tls=True),
	}
	while True:
	    for name in [n for n, ready in checks.items() if ready()]:
	        del checks[name]
	    if not checks:
	        sys.exit(0)
	    gone = not os.path.exists("/proc/" + pid)
	    if gone or time.time() > limit:
	        why = "public-inbox-imapd exited" if gone else "not ready after %s s" % seconds
	        for name in checks:
	            print("%s: %s" % (why, name), file=sys.stderr)
	        sys.exit(1)
	    time.sleep(0.1)
	EOF
}

# pi_start DIR CERTDIR LISTNAME LISTADDR: creates (unless DIR has it from
# an earlier pi_start) a public-inbox v2 inbox DIR/inbox for the list
# LISTADDR, named LISTNAME, whose newsgroup (the IMAP folder hierarchy) is
# LISTNAME, e.g. "org.kernel.vger.linux-foo"; the configuration is
# DIR/config. Copies CERTDIR's ca.pem, server.pem and server.key (from
# ms_certs) into DIR, and starts public-inbox-imapd in the background (one
# process, -W0; its pid in DIR/imapd.pid) listening on 127.0.0.1 only, and
# waits (30 s at most) until it greets; on failure, stops it and prints the
# tail of its logs. Sets and exports:
#	PI_IMAP_PORT	IMAP with STARTTLS (DIR/server.pem; optional)
#	PI_IMAPS_PORT	IMAP with implicit TLS
#	PI_FOLDER	the inbox's first folder as LIST shows it: LISTNAME.0
#			("INBOX." for a leading "inbox."), UIDs 1 to 50000
#	PI_USER, PI_PASSWORD	a LOGIN that works (any does)
# (PI_CONFIG is not exported: pi_stop ends every process whose environment
# names DIR/config.) Inbox: DIR/inbox; configuration: DIR/config.
# Logs: DIR/imapd.err (imapd's stderr), DIR/imapd.out, DIR/imapd.early
# (before imapd opens those), DIR/init.log.
pi_start() {
	[ $# -eq 4 ] || { _pi_err "usage: pi_start DIR CERTDIR LISTNAME LISTADDR"; return 1; }
	_pi_need_tools pi_start || return 1
	case $3 in
	*[!a-z0-9_.~@+=:-]* | .* | *. | *..* | '')
		_pi_err "pi_start: list name '$3': lower case letters, digits and _.~@+=:- only, no empty component"
		return 1 ;;
	*.*)
		case ${3##*.} in
		*[!0-9]*) ;;
		*) _pi_err "pi_start: list name '$3' must not end in .DIGITS (taken for a 50K slice)"; return 1 ;;
		esac ;;
	esac
	case $4 in
	*@*.* ) ;;
	*) _pi_err "pi_start: list address '$4' is no address"; return 1 ;;
	esac
	for _pi_f in ca.pem server.pem server.key; do
		[ -f "$2/$_pi_f" ] || { _pi_err "pi_start: no $2/$_pi_f (ms_certs $2 makes it)"; return 1; }
	done
	mkdir -p "$1" && _pi_check_dir pi_start "$1" || return 1
	_pi_s=$_pi_dir
	if _pi_imapd_pid "$_pi_s" >/dev/null; then
		_pi_err "pi_start: the imapd of $_pi_s is running already (pi_stop first)"
		return 1
	fi
	if [ "$_pi_s/ca.pem" != "$(cd "$2" && pwd -P)/ca.pem" ]; then
		cp "$2/ca.pem" "$2/server.pem" "$2/server.key" "$_pi_s/" || return 1
	fi
	chmod 0600 "$_pi_s/server.key"
	mkdir -p "$_pi_s/emergency" || return 1
	rm -f "$_pi_s/imapd.err" "$_pi_s/imapd.out" "$_pi_s/imapd.early" "$_pi_s/imapd.pid"
	if [ ! -f "$_pi_s/inbox/inbox.lock" ]; then
		# Full indexing (Xapian, for SEARCH) as on lore when Perl's
		# Xapian bindings are there, else only the overview database.
		_pi_lvl=basic
		perl -MSearch::Xapian -e 1 2>/dev/null || perl -MXapian -e 1 2>/dev/null && _pi_lvl=full
		: > "$_pi_s/config"
		if ! _pi_env "$_pi_s" public-inbox-init -V2 -L "$_pi_lvl" --ng "$3" \
			"$3" "$_pi_s/inbox" "http://127.0.0.1/$3/" "$4" \
			< /dev/null > "$_pi_s/init.log" 2>&1 ||
			! git config -f "$_pi_s/config" publicinboxmda.spamcheck none; then
			_pi_err "pi_start: public-inbox-init failed for $_pi_s/inbox"
			_pi_logs "$_pi_s"
			return 1
		fi
		printf '%s\n' "$4" > "$_pi_s/list-address"
	elif [ "$(git config -f "$_pi_s/config" "publicinbox.$3.address" 2>/dev/null)" != "$4" ]; then
		_pi_err "pi_start: $_pi_s holds another list than $3 <$4>"
		return 1
	fi
	_pi_ports=$(_pi_free_ports 2) || { _pi_err "pi_start: no free ports"; return 1; }
	PI_IMAP_PORT=$(echo "$_pi_ports" | sed -n 1p)
	PI_IMAPS_PORT=$(echo "$_pi_ports" | sed -n 2p)
	case $3 in
	inbox.*) PI_FOLDER=INBOX.${3#inbox.}.0 ;;
	*) PI_FOLDER=$3.0 ;;
	esac
	PI_USER=anonymous
	PI_PASSWORD=anonymous
	export PI_IMAP_PORT PI_IMAPS_PORT PI_FOLDER PI_USER PI_PASSWORD
	# In the background, forked twice so that it is no job of the test's
	# shell; one process (-W0), whose pid is recorded. --stdout/--stderr
	# rather than redirections so that SIGUSR1 reopens them.
	(
		# env execs imapd: $! is imapd's pid.
		cd "$_pi_s" &&
		env PI_CONFIG="$_pi_s/config" public-inbox-imapd -W0 \
			-l "imap://127.0.0.1:$PI_IMAP_PORT" \
			-l "imaps://127.0.0.1:$PI_IMAPS_PORT" \
			--cert "$_pi_s/server.pem" --key "$_pi_s/server.key" \
			--stdout "$_pi_s/imapd.out" --stderr "$_pi_s/imapd.err" \
			< /dev/null > "$_pi_s/imapd.early" 2>&1 &
		echo $! > "$_pi_s/imapd.pid"
	)
	if ! _pi_wait_ready "$_pi_s" "$(cat "$_pi_s/imapd.pid")" 30; then
		_pi_err "pi_start: public-inbox-imapd did not start in $_pi_s"
		_pi_logs "$_pi_s"
		pi_stop "$_pi_s"
		return 1
	fi
}

# pi_add DIR FILE...: archives each FILE (an RFC 5322 message, maybe
# starting with an mbox "From " line) in DIR's inbox, in order, as the
# list's delivery would: public-inbox-mda with ORIGINAL_RECIPIENT the list
# address, no spam check (publicinboxmda.spamcheck=none) and no precheck
# (--no-precheck: lore archives what the list sends, whether or not To or
# Cc names the list, Date is parseable and so on). A running imapd serves
# each at once. Fails, naming it, for a FILE public-inbox did not store
# (refused, or identical to an archived message); its copy lands in
# DIR/rejected, public-inbox-mda's output in DIR/mda.log.
pi_add() {
	[ $# -ge 2 ] || { _pi_err "usage: pi_add DIR FILE..."; return 1; }
	_pi_check_dir pi_add "$1" || return 1
	_pi_a=$_pi_dir
	shift
	[ -f "$_pi_a/list-address" ] || { _pi_err "pi_add: no inbox in $_pi_a (pi_start first)"; return 1; }
	_pi_to=$(cat "$_pi_a/list-address")
	_pi_rc=0
	for _pi_m in "$@"; do
		[ -r "$_pi_m" ] || { _pi_err "pi_add: cannot read '$_pi_m'"; _pi_rc=1; continue; }
		echo "--- $_pi_m" >> "$_pi_a/mda.log"
		if ! ORIGINAL_RECIPIENT=$_pi_to _pi_env "$_pi_a" public-inbox-mda --no-precheck \
			< "$_pi_m" >> "$_pi_a/mda.log" 2>&1; then
			_pi_err "pi_add: public-inbox-mda refused $_pi_m: $(tail -n 3 "$_pi_a/mda.log" | tr '\n' ' ')"
			_pi_rc=1
		fi
		# A message not stored stays in the emergency Maildir, even when
		# public-inbox-mda exits 0 (a duplicate).
		_pi_left=$(find "$_pi_a/emergency/new" "$_pi_a/emergency/tmp" -type f 2>/dev/null)
		if [ -n "$_pi_left" ]; then
			mkdir -p "$_pi_a/rejected"
			# shellcheck disable=SC2086
			mv $_pi_left "$_pi_a/rejected/" 2>/dev/null
			if [ "$_pi_rc" = 0 ]; then
				_pi_err "pi_add: $_pi_m not archived (identical to an archived message?): $(tail -n 2 "$_pi_a/mda.log" | tr '\n' ' ')"
				_pi_rc=1
			fi
		fi
	done
	return $_pi_rc
}

# pi_stop DIR: stops DIR's imapd and waits until no process using DIR's
# configuration is left: SIGTERM, which makes imapd close its listeners and
# quit once idle, but it may wait for an event that never comes; so
# SIGTERM again after 1 s (imapd then exits at once), to all of them, and
# SIGKILL to all of them after 10 s. Quiet; safe to call twice, after a failed pi_start,
# and from an EXIT trap (under set -e too). Leaves DIR as it is: pi_start
# on it again serves the same inbox, with the same UIDVALIDITY.
pi_stop() {
	[ $# -eq 1 ] || { _pi_err "usage: pi_stop DIR"; return 1; }
	_pi_check_dir pi_stop "$1" 2>/dev/null || return 0
	_pi_z=$_pi_dir
	_pi_p=$(_pi_imapd_pid "$_pi_z") && kill -TERM "$_pi_p" 2>/dev/null
	_pi_i=0
	while [ -n "$(_pi_pids "$_pi_z")" ]; do
		if [ "$_pi_i" -eq 10 ]; then
			_pi_left=$(_pi_pids "$_pi_z")
			# shellcheck disable=SC2086
			[ -z "$_pi_left" ] || kill -TERM $_pi_left 2>/dev/null
		elif [ "$_pi_i" -eq 100 ]; then
			_pi_left=$(_pi_pids "$_pi_z")
			# shellcheck disable=SC2086
			[ -z "$_pi_left" ] || kill -KILL $_pi_left 2>/dev/null
		elif [ "$_pi_i" -ge 150 ]; then
			_pi_err "pi_stop: processes of $_pi_z survive SIGKILL: $(_pi_pids "$_pi_z" | tr '\n' ' ')"
			return 1
		fi
		_pi_i=$((_pi_i + 1))
		sleep 0.1
	done
	rm -f "$_pi_z/imapd.pid"
	return 0
}
