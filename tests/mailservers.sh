# Private mail servers for the tests: a test CA and certificates, and a
# Postfix (SMTP with STARTTLS, SMTPS, AUTH after TLS) delivering every
# accepted message over LMTP to a Dovecot (IMAP with STARTTLS, IMAPS, one
# Maildir per recipient address). Sourced by the tests (POSIX sh, safe under set -u):
#
#	. "$ZERODAY_SRCDIR/tests/mailservers.sh"
#	ms_certs "$scratch/mail" && ms_start "$scratch/mail" || skip...
#	trap 'ms_stop "$scratch/mail"; cleanup' EXIT
#
# Everything lives under the directory a test gives (configurations, queue,
# sockets, logs, mail) and listens on 127.0.0.1 only, on free ports, so the
# system's own Postfix or Dovecot, and other test runs, are not disturbed.
# Needs root (Postfix's master and Dovecot start as root and drop
# privileges: mail is stored as nobody:nogroup) and Debian's postfix,
# dovecot-imapd, dovecot-lmtpd, openssl and python3. Linux only (/proc).
# Internal helpers and their variables are prefixed _ms_.

# The SMTP AUTH credential that works; IMAP takes any address as the user
# name with this password.
MS_USER=zeroday
MS_PASSWORD=secret

# _ms_err MESSAGE...: MESSAGE on stderr, and false.
_ms_err() {
	printf '%s\n' "$*" >&2
	return 1
}

# _ms_abs DIR: DIR as an absolute path without symbolic links, on stdout.
_ms_abs() {
	(cd "$1" 2>/dev/null && pwd -P)
}

# _ms_check_dir FUNCTION DIR: sets _ms_dir to DIR's absolute path, or fails
# when DIR is missing or its path would break the servers' configurations
# (white space, quotes, too long for the UNIX sockets under it).
_ms_check_dir() {
	_ms_dir=$(_ms_abs "$2") || { _ms_err "$1: no directory '$2'"; return 1; }
	case $_ms_dir in
	*[!A-Za-z0-9/._+-]*)
		_ms_err "$1: '$_ms_dir': only letters, digits and /._+- are allowed in the path"
		return 1 ;;
	esac
	# Dovecot's deepest socket is about 40 characters under its base_dir,
	# and a UNIX socket's path has at most 107.
	if [ ${#_ms_dir} -gt 56 ]; then
		_ms_err "$1: '$_ms_dir' is too long for UNIX sockets (more than 56 characters)"
		return 1
	fi
}

# _ms_need_root FUNCTION: fails with a message unless running as root.
_ms_need_root() {
	[ "$(id -u)" = 0 ] ||
		_ms_err "$1: the mail servers need root (Postfix's master and Dovecot start as root)"
}

# _ms_need_tools FUNCTION COMMAND...: fails naming the first COMMAND missing
# (looked up on PATH and in /usr/sbin and /sbin).
_ms_need_tools() {
	_ms_fn=$1
	shift
	for _ms_t in "$@"; do
		command -v "$_ms_t" >/dev/null 2>&1 || [ -x "/usr/sbin/$_ms_t" ] || [ -x "/sbin/$_ms_t" ] ||
			{ _ms_err "$_ms_fn: '$_ms_t' not found (Debian: apt-get install postfix dovecot-imapd dovecot-lmtpd openssl python3)"; return 1; }
	done
}

# _ms_sbin COMMAND: COMMAND's path (PATH first, then /usr/sbin, /sbin).
_ms_sbin() {
	if command -v "$1" 2>/dev/null; then return 0; fi
	for _ms_d in /usr/sbin /sbin; do
		[ -x "$_ms_d/$1" ] && { echo "$_ms_d/$1"; return 0; }
	done
	return 1
}

# ms_certs DIR: makes, with the openssl command, a test CA (DIR/ca.pem, its
# key DIR/ca.key), a certificate it signs for localhost (DIR/server.pem and
# DIR/server.key: CN=localhost, subjectAltName DNS:localhost,
# IP:127.0.0.1), and one it signs for another host only (DIR/other.pem and
# DIR/other.key: CN and subjectAltName DNS:other.example), to check that a
# client refuses a certificate for the wrong host. RSA 2048, valid 2 days,
# extensions as strict verifiers want them. Creates DIR; quiet on success,
# openssl's output on stderr on failure.
ms_certs() {
	[ $# -eq 1 ] || { _ms_err "usage: ms_certs DIR"; return 1; }
	_ms_need_tools ms_certs openssl || return 1
	mkdir -p "$1" || return 1
	_ms_c=$(_ms_abs "$1") || return 1
	_ms_log="$_ms_c/openssl.log"
	: > "$_ms_log"
	cat > "$_ms_c/openssl.cnf" <<-'EOF' || return 1
	[req]
	distinguished_name = dn
	prompt = no
	[dn]
	[ca]
	basicConstraints = critical, CA:TRUE
	keyUsage = critical, keyCertSign, cRLSign
	subjectKeyIdentifier = hash
	[server]
	basicConstraints = critical, CA:FALSE
	keyUsage = critical, digitalSignature, keyEncipherment
	extendedKeyUsage = serverAuth
	subjectKeyIdentifier = hash
	authorityKeyIdentifier = keyid:always
	subjectAltName = DNS:localhost, IP:127.0.0.1
	[other]
	basicConstraints = critical, CA:FALSE
	keyUsage = critical, digitalSignature, keyEncipherment
	extendedKeyUsage = serverAuth
	subjectKeyIdentifier = hash
	authorityKeyIdentifier = keyid:always
	subjectAltName = DNS:other.example
	EOF
	(
		umask 077
		set -e
		openssl req -config "$_ms_c/openssl.cnf" -x509 -newkey rsa:2048 -nodes -days 2 \
			-subj "/O=zeroday tests/CN=zeroday test CA" -extensions ca \
			-set_serial "0x$(openssl rand -hex 8)" \
			-keyout "$_ms_c/ca.key" -out "$_ms_c/ca.pem"
		for _ms_n in server:localhost other:other.example; do
			_ms_f=${_ms_n%%:*}
			openssl req -config "$_ms_c/openssl.cnf" -new -newkey rsa:2048 -nodes \
				-subj "/O=zeroday tests/CN=${_ms_n#*:}" \
				-keyout "$_ms_c/$_ms_f.key" -out "$_ms_c/$_ms_f.csr"
			openssl x509 -req -in "$_ms_c/$_ms_f.csr" -days 2 \
				-CA "$_ms_c/ca.pem" -CAkey "$_ms_c/ca.key" \
				-set_serial "0x$(openssl rand -hex 8)" \
				-extfile "$_ms_c/openssl.cnf" -extensions "$_ms_f" \
				-out "$_ms_c/$_ms_f.pem"
			rm -f "$_ms_c/$_ms_f.csr"
		done
	) >> "$_ms_log" 2>&1 || {
		cat "$_ms_log" >&2
		_ms_err "ms_certs: openssl failed"
		return 1
	}
	chmod 0644 "$_ms_c/ca.pem" "$_ms_c/server.pem" "$_ms_c/other.pem"
	rm -f "$_ms_c/openssl.cnf" "$_ms_log"
}

# _ms_free_ports N: N distinct free TCP ports on 127.0.0.1, one a line
# (bound together, so distinct; free when this returns, not reserved).
_ms_free_ports() {
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

# ms_free_port: prints a free TCP port on 127.0.0.1.
ms_free_port() {
	_ms_free_ports 1
}

# _ms_instance DIR: the instance name of DIR's Dovecot, which its processes
# show in their titles ("dovecot-NAME/auth").
_ms_instance() {
	echo "zeroday-ms-$(printf %s "$1" | cksum | cut -d' ' -f1)"
}

# _ms_pids DIR: the ids of the running processes of DIR's servers, one a
# line: those whose environment names DIR's Postfix configuration
# (MAIL_CONFIG, which Postfix's master passes to every child), and
# Dovecot's master (its command line names DIR's configuration) and
# children (their titles name DIR's Dovecot instance).
_ms_pids() {
	python3 - "$1" "$(_ms_instance "$1")/" <<-'EOF'
	import os, sys
	post = b"MAIL_CONFIG=" + os.fsencode(sys.argv[1]) + b"/postfix"
	dove = os.fsencode(sys.argv[1]) + b"/dovecot/"
	title = os.fsencode(sys.argv[2])
	for pid in os.listdir("/proc"):
	    if not pid.isdigit() or int(pid) == os.getpid():
	        continue
	    try:
	        with open("/proc/%s/environ" % pid, "rb") as f:
	            env = f.read().split(b"\0")
	        with open("/proc/%s/cmdline" % pid, "rb") as f:
	            cmd = f.read().split(b"\0")
	    except OSError:
	        continue
	    if post in env or any(dove in x for x in env + cmd) or title in cmd[0]:
	        print(pid)
	EOF
}

# _ms_logs DIR: the tail of DIR's Postfix and Dovecot logs, on stderr.
_ms_logs() {
	for _ms_l in "$1/postfix.log" "$1/postfix.out" "$1/dovecot.log" "$1/dovecot.out"; do
		[ -s "$_ms_l" ] || continue
		echo "--- tail of $_ms_l:"
		tail -n 25 "$_ms_l"
	done >&2
}

# _ms_wait_ready DIR SERVER START SECONDS: waits until SECONDS after START
# (in seconds since the epoch) for SERVER: "dovecot", greeting on IMAP and
# on the LMTP socket, with its SASL socket for Postfix made; or "postfix",
# greeting on both SMTP ports (the SMTPS one after the TLS handshake).
# Fails naming what is not ready.
_ms_wait_ready() {
	python3 - "$@" "$MS_SMTP_PORT" "$MS_SMTPS_PORT" "$MS_IMAP_PORT" "$MS_IMAPS_PORT" \
		"${_ms_cert:-server}" <<-'EOF'
	import os, socket, ssl, sys, time
	d, server, start, seconds = sys.argv[1:5]
	smtp, smtps, imap, imaps = (int(p) for p in sys.argv[5:9])
	cert_host = "localhost" if sys.argv[9] == "server" else "other.example"
	limit = float(start) + float(seconds)
	def greeting(family, address, prefix, tls=False, host="localhost"):
	    s = socket.socket(family, socket.SOCK_STREAM)
	    s.settimeout(5)
	    try:
	        s.connect(address)
	        if tls:
	            ctx = ssl.create_default_context(cafile=d + "/ca.pem")
	            s = ctx.wrap_socket(s, server_hostname=host)
	        return s.recv(512).startswith(prefix)
	    except (OSError, ssl.SSLError):
	        return False
	    finally:
	        s.close()
	if server == "dovecot":
	    checks = {
	        "Dovecot IMAP on 127.0.0.1:%d" % imap:
	            lambda: greeting(socket.AF_INET, ("127.0.0.1", imap), b"* OK"),
	        "Dovecot IMAPS on 127.0.0.1:%d" % imaps:
	            lambda: greeting(socket.AF_INET, ("127.0.0.1", imaps), b"* OK", tls=True,
	                             host=cert_host),
	        "Dovecot LMTP on " + d + "/dovecot/run/lmtp":
	            lambda: greeting(socket.AF_UNIX, d + "/dovecot/run/lmtp", b"220"),
	        "Dovecot auth on " + d + "/dovecot/run/auth-postfix":
	            lambda: os.path.exists(d + "/dovecot/run/auth-postfix"),
	    }
	else:
	    checks = {
	        "Postfix SMTP on 127.0.0.1:%d" % smtp:
	            lambda: greeting(socket.AF_INET, ("127.0.0.1", smtp), b"220"),
	        "Postfix SMTPS on 127.0.0.1:%d" % smtps:
	            lambda: greeting(socket.AF_INET, ("127.0.0.1", smtps), b"220", tls=True),
	    }
	while True:
	    for name in [n for n, ready in checks.items() if ready()]:
	        del checks[name]
	    if not checks:
	        sys.exit(0)
	    if time.time() > limit:
	        for name in checks:
	            print("not ready %s s after ms_start began: %s" % (seconds, name), file=sys.stderr)
	        sys.exit(1)
	    time.sleep(0.1)
	EOF
}

# _ms_write_dovecot DIR: DIR/dovecot/dovecot.conf and DIR's mail directory.
_ms_write_dovecot() {
	mkdir -p "$1/dovecot/run" "$1/dovecot/state" "$1/dovecot/home" "$1/maildirs" || return 1
	chmod 0755 "$1/dovecot" "$1/dovecot/run"
	chown nobody:nogroup "$1/maildirs" "$1/dovecot/home" &&
		chmod 0755 "$1/maildirs" "$1/dovecot/home" || return 1
	cat > "$1/dovecot/dovecot.conf" <<-EOF
	# Written by ms_start (tests/mailservers.sh): a Dovecot private to $1.
	instance_name = $(_ms_instance "$1")
	base_dir = $1/dovecot/run
	state_dir = $1/dovecot/state
	log_path = $1/dovecot.log
	info_log_path = $1/dovecot.log
	debug_log_path = $1/dovecot.log
	protocols = imap lmtp
	listen = 127.0.0.1
	# TLS with the test certificate (ms_restart_dovecot may switch it):
	# STARTTLS on the IMAP port, where plain-text LOGIN stays allowed
	# (tests/imap-fetch.py), and implicit TLS on the IMAPS port.
	ssl = yes
	ssl_cert = <$1/${_ms_cert:-server}.pem
	ssl_key = <$1/${_ms_cert:-server}.key
	disable_plaintext_auth = no
	auth_mechanisms = plain login
	default_internal_user = dovecot
	default_login_user = dovenull
	hostname = localhost
	postmaster_address = postmaster@localhost
	# Every address is its own user and Maildir (lower case), a +detail
	# included: any character in a user name.
	recipient_delimiter =
	auth_username_chars =
	# Only the mail in the Maildirs: Dovecot's indexes and lists elsewhere.
	mail_location = maildir:$1/maildirs/%u:INDEX=~/index:CONTROL=~/control
	first_valid_uid = 1
	passdb {
	  driver = static
	  args = password=$MS_PASSWORD
	}
	userdb {
	  driver = static
	  args = uid=nobody gid=nogroup home=$1/dovecot/home/%u allow_all_users=yes
	}
	service imap-login {
	  inet_listener imap {
	    address = 127.0.0.1
	    port = $MS_IMAP_PORT
	  }
	  inet_listener imaps {
	    address = 127.0.0.1
	    port = $MS_IMAPS_PORT
	    ssl = yes
	  }
	}
	service lmtp {
	  unix_listener lmtp {
	    mode = 0666
	  }
	}
	service auth {
	  unix_listener auth-postfix {
	    mode = 0600
	    user = postfix
	    group = postfix
	  }
	}
	EOF
}

# _ms_write_postfix DIR: DIR/postfix/main.cf and master.cf, and the queue
# and data directories.
_ms_write_postfix() {
	mkdir -p "$1/postfix" "$1/postfix-queue" "$1/postfix-data" || return 1
	chmod 0755 "$1/postfix" "$1/postfix-queue"
	chown postfix "$1/postfix-data" && chmod 0700 "$1/postfix-data" || return 1
	cat > "$1/postfix/main.cf" <<-EOF
	# Written by ms_start (tests/mailservers.sh): a Postfix private to $1.
	compatibility_level = 3.6
	queue_directory = $1/postfix-queue
	data_directory = $1/postfix-data
	mail_owner = postfix
	setgid_group = postdrop
	maillog_file = $1/postfix.log
	maillog_file_prefixes = $1/
	syslog_name = postfix-ms
	inet_interfaces = 127.0.0.1
	inet_protocols = ipv4
	myhostname = localhost.localdomain
	mydomain = localdomain
	mydestination =
	relay_domains =
	mynetworks = 127.0.0.1/32
	local_recipient_maps =
	alias_maps =
	alias_database =
	recipient_delimiter =
	biff = no
	# Every accepted message, whatever the domain, to Dovecot over LMTP.
	local_transport = error:5.1.1 no local delivery
	default_transport = lmtp:unix:$1/dovecot/run/lmtp
	relay_transport = lmtp:unix:$1/dovecot/run/lmtp
	# Mailing lists: MS_LISTS (see ms_start), expanded as a list server would.
	virtual_alias_maps = texthash:$1/postfix/lists
	# Relaying (that is, everything) for SASL-authenticated clients only.
	smtpd_relay_restrictions = permit_sasl_authenticated, reject_unauth_destination
	smtpd_recipient_restrictions =
	smtpd_banner = \$myhostname ESMTP zeroday test
	smtpd_peername_lookup = no
	smtpd_tls_cert_file = $1/server.pem
	smtpd_tls_key_file = $1/server.key
	smtpd_tls_security_level = may
	smtpd_tls_auth_only = yes
	smtpd_tls_loglevel = 1
	smtpd_sasl_auth_enable = yes
	smtpd_sasl_type = dovecot
	smtpd_sasl_path = $1/dovecot/run/auth-postfix
	in_flow_delay = 0s
	queue_run_delay = 5s
	minimal_backoff_time = 5s
	maximal_backoff_time = 10s
	maximal_queue_lifetime = 1h
	bounce_queue_lifetime = 1h
	delay_warning_time = 0h
	EOF
	# A list maps to itself (its archive, MS_MAILDIRS/LIST) and its members.
	printf '%s\n' "${MS_LISTS:-}" | sed '/^$/d' | while read -r _ms_list _ms_members; do
		printf '%s %s, %s\n' "$_ms_list" "$_ms_list" "$(echo "$_ms_members" | sed 's/,/, /g')"
	done > "$1/postfix/lists" || return 1
	cat > "$1/postfix/master.cf" <<-EOF
	# Written by ms_start (tests/mailservers.sh). Nothing chrooted.
	127.0.0.1:$MS_SMTP_PORT inet n - n - - smtpd
	127.0.0.1:$MS_SMTPS_PORT inet n - n - - smtpd
	  -o syslog_name=postfix-ms/smtps
	  -o smtpd_tls_wrappermode=yes
	  -o smtpd_tls_security_level=encrypt
	pickup    unix  n - n 60 1 pickup
	cleanup   unix  n - n - 0 cleanup
	qmgr      unix  n - n 300 1 qmgr
	tlsmgr    unix  - - n 1000? 1 tlsmgr
	rewrite   unix  - - n - - trivial-rewrite
	bounce    unix  - - n - 0 bounce
	defer     unix  - - n - 0 bounce
	trace     unix  - - n - 0 bounce
	verify    unix  - - n - 1 verify
	flush     unix  n - n 1000? 0 flush
	proxymap  unix  - - n - - proxymap
	lmtp      unix  - - n - - lmtp
	showq     unix  n - n - - showq
	error     unix  - - n - - error
	retry     unix  - - n - - error
	discard   unix  - - n - - discard
	anvil     unix  - - n - 1 anvil
	scache    unix  - - n - 1 scache
	postlog   unix-dgram n - n - 1 postlogd
	EOF
	# Postfix rereads, 0.3 s later, a configuration changed less than a
	# second ago (again and again: seconds for "postfix check"): an old one.
	touch -t 200001010000 "$1/postfix/main.cf" "$1/postfix/master.cf"
}

# ms_start DIR: starts a Dovecot and a Postfix private to DIR, listening on
# 127.0.0.1 only, and waits (30 s at most) until both answer; on failure,
# stops what started and prints the tail of their logs. Makes DIR's
# certificates with ms_certs when DIR/server.pem is missing. Sets and
# exports:
#	MS_SMTP_PORT	Postfix SMTP: STARTTLS with DIR/server.pem, AUTH only
#			after it, relaying only for authenticated clients
#	MS_SMTPS_PORT	the same with implicit TLS (smtpd_tls_wrappermode)
#	MS_IMAP_PORT	Dovecot IMAP: STARTTLS with DIR/server.pem, and
#			plain-text LOGIN allowed too (tests/imap-fetch.py)
#	MS_IMAPS_PORT	Dovecot IMAP with implicit TLS
#	MS_USER, MS_PASSWORD	the SMTP AUTH credential (zeroday, secret);
#			IMAP logs in any address with MS_PASSWORD
#	MS_MAILDIRS	DIR/maildirs: every accepted message, whatever its
#			recipient's domain, lands in MS_MAILDIRS/ADDRESS, a
#			Maildir per (lower-case) recipient address
# Reads MS_LISTS, when set: lines "LIST MEMBER,MEMBER...". Postfix then
# expands a mail to LIST as a list server would: a copy to each MEMBER,
# and one to LIST's own Maildir (its archive).
# Logs: DIR/postfix.log, DIR/dovecot.log. Needs root.
ms_start() {
	[ $# -eq 1 ] || { _ms_err "usage: ms_start DIR"; return 1; }
	_ms_need_root ms_start || return 1
	_ms_need_tools ms_start postfix postconf dovecot python3 openssl || return 1
	for _ms_u in postfix dovecot dovenull nobody; do
		id "$_ms_u" >/dev/null 2>&1 ||
			{ _ms_err "ms_start: no system user '$_ms_u' (install postfix and dovecot-core)"; return 1; }
	done
	[ -x /usr/lib/dovecot/lmtp ] ||
		{ _ms_err "ms_start: Dovecot's LMTP server is missing (apt-get install dovecot-lmtpd)"; return 1; }
	mkdir -p "$1" && _ms_check_dir ms_start "$1" || return 1
	_ms_s=$_ms_dir
	if ! python3 - "$_ms_s" <<-'EOF'
	import os, pwd, sys
	nobody = pwd.getpwnam("nobody")
	os.setgroups([])
	os.setgid(nobody.pw_gid)
	os.setuid(nobody.pw_uid)
	sys.exit(0 if os.access(sys.argv[1], os.X_OK) else 1)
	EOF
	then
		_ms_err "ms_start: $_ms_s must be searchable by unprivileged users, its parents too (chmod 0711)"
		return 1
	fi
	if [ -n "$(_ms_pids "$_ms_s")" ]; then
		_ms_err "ms_start: servers of $_ms_s are running already (ms_stop first)"
		return 1
	fi
	[ -f "$_ms_s/server.pem" ] || ms_certs "$_ms_s" || return 1
	rm -f "$_ms_s/postfix.log" "$_ms_s/postfix.out" "$_ms_s/dovecot.log" "$_ms_s/dovecot.out"
	_ms_ports=$(_ms_free_ports 4) || { _ms_err "ms_start: no free ports"; return 1; }
	MS_SMTP_PORT=$(echo "$_ms_ports" | sed -n 1p)
	MS_SMTPS_PORT=$(echo "$_ms_ports" | sed -n 2p)
	MS_IMAP_PORT=$(echo "$_ms_ports" | sed -n 3p)
	MS_IMAPS_PORT=$(echo "$_ms_ports" | sed -n 4p)
	MS_MAILDIRS=$_ms_s/maildirs
	export MS_SMTP_PORT MS_SMTPS_PORT MS_IMAP_PORT MS_IMAPS_PORT MS_USER MS_PASSWORD MS_MAILDIRS
	_ms_cert=server
	# shellcheck disable=SC2015
	_ms_write_dovecot "$_ms_s" && _ms_write_postfix "$_ms_s" ||
		{ _ms_err "ms_start: cannot write the configurations under $_ms_s"; return 1; }

	# Dovecot first (Postfix's smtpd gives up on a missing SASL socket,
	# and its master then holds smtpd back for a minute). Dovecot detaches
	# itself; its master's pid lands in run/master.pid.
	_ms_t0=$(date +%s)
	if ! "$(_ms_sbin dovecot)" -c "$_ms_s/dovecot/dovecot.conf" \
		< /dev/null > "$_ms_s/dovecot.out" 2>&1 ||
		! _ms_wait_ready "$_ms_s" dovecot "$_ms_t0" 30; then
		_ms_err "ms_start: Dovecot did not start in $_ms_s"
		_ms_logs "$_ms_s"
		ms_stop "$_ms_s"
		return 1
	fi
	# Postfix: "postfix check" makes the queue directories; then, with
	# the checks done (quick-start), the master in the foreground, in the
	# background: "postfix start" without a terminal may fail without a
	# word. Its own output goes to DIR/postfix.out, its log to
	# DIR/postfix.log.
	_ms_pf=$(_ms_sbin postfix)
	if ! "$_ms_pf" -c "$_ms_s/postfix" check < /dev/null >> "$_ms_s/postfix.out" 2>&1; then
		_ms_err "ms_start: postfix check failed for $_ms_s/postfix"
		# Without a terminal nor syslog, postfix says why only here.
		command -v script >/dev/null 2>&1 &&
			script -qec "'$_ms_pf' -c '$_ms_s/postfix' check" /dev/null < /dev/null >&2
		ms_stop "$_ms_s"
		return 1
	fi
	# Forked twice, so that it is no job of the test's shell (whose
	# "wait" would wait for Postfix).
	: > "$_ms_s/postfix-queue/quick-start"
	(
		"$_ms_pf" -c "$_ms_s/postfix" start-fg \
			< /dev/null >> "$_ms_s/postfix.out" 2>&1 &
	)
	if ! _ms_wait_ready "$_ms_s" postfix "$_ms_t0" 30; then
		_ms_err "ms_start: Postfix did not start in $_ms_s"
		_ms_logs "$_ms_s"
		ms_stop "$_ms_s"
		return 1
	fi
}

# _ms_wait_gone DIR TENTHS: waits up to TENTHS tenths of a second until no
# process of DIR's servers is left; fails if some are.
_ms_wait_gone() {
	_ms_i=0
	while [ -n "$(_ms_pids "$1")" ]; do
		[ "$_ms_i" -ge "$2" ] && return 1
		_ms_i=$((_ms_i + 1))
		sleep 0.1
	done
}

# ms_stop DIR: stops DIR's Postfix ("postfix stop") and Dovecot (SIGTERM to
# its master), then SIGKILLs whatever of theirs is still running after
# 10 s, and waits until all their processes are gone. Quiet; safe to call
# twice, after a failed ms_start, and from an EXIT trap (under set -e too).
# Leaves DIR as it is: ms_start on it again keeps the queue and the mail.
ms_stop() {
	[ $# -eq 1 ] || { _ms_err "usage: ms_stop DIR"; return 1; }
	_ms_check_dir ms_stop "$1" 2>/dev/null || return 0
	_ms_s=$_ms_dir
	if [ "$(id -u)" != 0 ]; then
		# Nothing to stop unless ms_start got as far as its configurations.
		[ -f "$_ms_s/postfix/main.cf" ] || [ -f "$_ms_s/dovecot/dovecot.conf" ] || return 0
		_ms_need_root ms_stop
		return 1
	fi
	if [ -f "$_ms_s/postfix/main.cf" ] && [ -f "$_ms_s/postfix-queue/pid/master.pid" ] &&
		_ms_pf=$(_ms_sbin postfix); then
		# Fails when it is not running (its pid file stays): no matter.
		"$_ms_pf" -c "$_ms_s/postfix" stop >> "$_ms_s/postfix.out" 2>&1 || :
	fi
	if [ -f "$_ms_s/dovecot/run/master.pid" ]; then
		_ms_pid=$(cat "$_ms_s/dovecot/run/master.pid" 2>/dev/null)
		# Only if that pid is still this Dovecot's master.
		case " $(_ms_pids "$_ms_s" | tr '\n' ' ') " in
		*" $_ms_pid "*) kill -TERM "$_ms_pid" 2>/dev/null || : ;;
		esac
	fi
	if ! _ms_wait_gone "$_ms_s" 100; then
		_ms_left=$(_ms_pids "$_ms_s")
		# shellcheck disable=SC2086
		[ -z "$_ms_left" ] || kill -KILL $_ms_left 2>/dev/null || :
		_ms_wait_gone "$_ms_s" 50 ||
			{ _ms_err "ms_stop: processes of $_ms_s survive SIGKILL: $(_ms_pids "$_ms_s" | tr '\n' ' ')"; return 1; }
	fi
	return 0
}

# ms_wait_mail DIR ADDRESS COUNT [SECONDS]: waits (30 s unless SECONDS)
# until ADDRESS's Maildir under DIR holds at least COUNT messages (in new/
# and cur/). On timeout, says how many arrived, prints the tail of the
# logs, and fails.
ms_wait_mail() {
	[ $# -eq 3 ] || [ $# -eq 4 ] ||
		{ _ms_err "usage: ms_wait_mail DIR ADDRESS COUNT [SECONDS]"; return 1; }
	_ms_check_dir ms_wait_mail "$1" || return 1
	# Dovecot lower-cases user names (ASCII).
	# shellcheck disable=SC2018,SC2019
	_ms_m=$_ms_dir/maildirs/$(printf %s "$2" | tr 'A-Z' 'a-z')
	_ms_end=$((${4:-30} * 10))
	_ms_i=0
	while :; do
		_ms_got=$(find "$_ms_m/new" "$_ms_m/cur" -type f 2>/dev/null | wc -l)
		[ "$_ms_got" -ge "$3" ] && return 0
		[ "$_ms_i" -ge "$_ms_end" ] && break
		_ms_i=$((_ms_i + 1))
		sleep 0.1
	done
	_ms_err "ms_wait_mail: $2 has $_ms_got of $3 messages after ${4:-30} s ($_ms_m)"
	_ms_logs "$_ms_dir"
	return 1
}

# _ms_doveadm DIR ARGS...: doveadm with DIR's Dovecot configuration.
_ms_doveadm() {
	_ms_d=$1
	shift
	"$(_ms_sbin doveadm)" -c "$_ms_d/dovecot/dovecot.conf" "$@"
}

# ms_deliver_file DIR ADDRESS FILE: stores the message FILE, as it is (no
# trace header added), in ADDRESS's INBOX under DIR, with doveadm save
# (as that user: the file owned by nobody, Dovecot's indexes told, so an
# IMAP IDLE sees it). Quiet on success; doveadm's words on failure.
ms_deliver_file() {
	[ $# -eq 3 ] || { _ms_err "usage: ms_deliver_file DIR ADDRESS FILE"; return 1; }
	_ms_check_dir ms_deliver_file "$1" || return 1
	[ -r "$3" ] || { _ms_err "ms_deliver_file: cannot read '$3'"; return 1; }
	_ms_doveadm "$_ms_dir" save -u "$2" -m INBOX < "$3" ||
		{ _ms_err "ms_deliver_file: doveadm save for $2 failed"; return 1; }
}

# ms_deliver_dir DIR ADDRESS SRCDIR: stores every file of SRCDIR (one
# message each, as it is), in the order of their names, in ADDRESS's INBOX
# under DIR, for thousands of messages at once (ms_deliver_file runs a
# doveadm per message): written straight into the Maildir's cur/ (seen,
# with the S= and W= sizes Dovecot's own deliveries record, owned by
# nobody), then Dovecot's index rebuilt with doveadm force-resync and the
# message count checked. For a mailbox Dovecot has not opened yet (its
# UIDs then follow the names' order). Quiet on success.
ms_deliver_dir() {
	[ $# -eq 3 ] || { _ms_err "usage: ms_deliver_dir DIR ADDRESS SRCDIR"; return 1; }
	_ms_check_dir ms_deliver_dir "$1" || return 1
	[ -d "$3" ] || { _ms_err "ms_deliver_dir: no directory '$3'"; return 1; }
	# Dovecot lower-cases user names (ASCII).
	# shellcheck disable=SC2018,SC2019
	_ms_m=$_ms_dir/maildirs/$(printf %s "$2" | tr 'A-Z' 'a-z')
	_ms_n=$(python3 - "$3" "$_ms_m" <<-'EOF'
	import os, pwd, sys
	src, box = sys.argv[1:3]
	nobody = pwd.getpwnam("nobody")
	for d in (box, box + "/cur", box + "/new", box + "/tmp"):
	    os.makedirs(d, exist_ok=True)
	    os.chown(d, nobody.pw_uid, nobody.pw_gid)
	n = 0
	for name in sorted(os.listdir(src)):
	    path = os.path.join(src, name)
	    if not os.path.isfile(path):
	        continue
	    with open(path, "rb") as f:
	        data = f.read()
	    # W=: the size with CRLF line ends, as IMAP's RFC822.SIZE counts it.
	    w = len(data) + data.count(b"\n") - data.count(b"\r\n")
	    out = "%s/cur/1700000000.M%dP%d.zeroday-ms,S=%d,W=%d:2,S" % (box, n, os.getpid(), len(data), w)
	    with open(out, "wb") as f:
	        f.write(data)
	    os.chown(out, nobody.pw_uid, nobody.pw_gid)
	    n += 1
	print(n)
	EOF
	) || { _ms_err "ms_deliver_dir: cannot write into $_ms_m"; return 1; }
	_ms_doveadm "$_ms_dir" force-resync -u "$2" INBOX ||
		{ _ms_err "ms_deliver_dir: doveadm force-resync for $2 failed"; return 1; }
	_ms_got=$(_ms_doveadm "$_ms_dir" mailbox status -u "$2" messages INBOX) ||
		{ _ms_err "ms_deliver_dir: doveadm mailbox status for $2 failed"; return 1; }
	case " $_ms_got" in
	*" messages=$_ms_n") ;;
	*) _ms_err "ms_deliver_dir: $2's INBOX: '$_ms_got', not the $_ms_n messages written"
	   return 1 ;;
	esac
}

# _ms_stop_dovecot FUNCTION DIR: stops DIR's Dovecot (SIGTERM to its master,
# which ends every IMAP session) and waits until all its processes are
# gone; Postfix is left alone. FUNCTION names the caller in messages.
_ms_stop_dovecot() {
	_ms_fn=$1
	_ms_s=$2
	_ms_pid=$(cat "$_ms_s/dovecot/run/master.pid" 2>/dev/null) ||
		{ _ms_err "$_ms_fn: Dovecot of $_ms_s is not running"; return 1; }
	kill -TERM "$_ms_pid" 2>/dev/null || :
	_ms_i=0
	# Its master, then every process with its instance name in the title.
	_ms_title="dovecot-$(_ms_instance "$_ms_s")/"
	while kill -0 "$_ms_pid" 2>/dev/null; do
		[ "$_ms_i" -ge 100 ] && { _ms_err "$_ms_fn: Dovecot of $_ms_s does not stop"; return 1; }
		_ms_i=$((_ms_i + 1))
		sleep 0.1
	done
	# Its helpers (auth, log, anvil, stats) may outlive the master: a
	# second, then SIGKILL by id; only then can a new master take over.
	_ms_i=0
	while :; do
		_ms_left=$(ps -eo pid=,args= | awk -v t="$_ms_title" 'index($2, t) == 1 { print $1 }')
		[ -z "$_ms_left" ] && break
		if [ "$_ms_i" -ge 10 ]; then
			# shellcheck disable=SC2086
			kill -KILL $_ms_left 2>/dev/null || :
		fi
		[ "$_ms_i" -ge 50 ] && { _ms_err "$_ms_fn: Dovecot of $_ms_s does not stop"; return 1; }
		_ms_i=$((_ms_i + 1))
		sleep 0.1
	done
}

# _ms_start_dovecot FUNCTION DIR: writes DIR's Dovecot configuration (with
# the certificate $_ms_cert) and starts it on the same ports, waiting (30 s
# at most) until it answers; fails with the tail of its log otherwise.
_ms_start_dovecot() {
	_ms_write_dovecot "$2" || return 1
	_ms_t0=$(date +%s)
	if ! "$(_ms_sbin dovecot)" -c "$2/dovecot/dovecot.conf" \
		< /dev/null >> "$2/dovecot.out" 2>&1 ||
		! _ms_wait_ready "$2" dovecot "$_ms_t0" 30; then
		_ms_err "$1: Dovecot did not start again in $2"
		_ms_logs "$2"
		return 1
	fi
}

# ms_restart_dovecot DIR [CERT]: stops DIR's Dovecot (SIGTERM to its
# master, which ends every IMAP session), waits until it is gone, and
# starts it again on the same ports, serving the certificate CERT
# (DIR/CERT.pem and DIR/CERT.key: "server", the default, or "other", for
# the wrong host); Postfix is left alone. Waits (30 s at most) until it
# answers; fails with the tail of its log otherwise.
ms_restart_dovecot() {
	[ $# -eq 1 ] || [ $# -eq 2 ] || { _ms_err "usage: ms_restart_dovecot DIR [CERT]"; return 1; }
	_ms_check_dir ms_restart_dovecot "$1" || return 1
	_ms_s=$_ms_dir
	_ms_cert=${2:-server}
	[ -f "$_ms_s/$_ms_cert.pem" ] || { _ms_err "ms_restart_dovecot: no $_ms_s/$_ms_cert.pem"; return 1; }
	_ms_stop_dovecot ms_restart_dovecot "$_ms_s" && _ms_start_dovecot ms_restart_dovecot "$_ms_s"
}

# ms_expunge DIR ADDRESS QUERY...: expunges from ADDRESS's INBOX under DIR
# the messages the doveadm search QUERY matches (e.g. "uid 1"), with doveadm
# expunge. Quiet on success; doveadm's words on failure.
ms_expunge() {
	[ $# -ge 3 ] || { _ms_err "usage: ms_expunge DIR ADDRESS QUERY..."; return 1; }
	_ms_check_dir ms_expunge "$1" || return 1
	_ms_a=$2
	shift 2
	_ms_doveadm "$_ms_dir" expunge -u "$_ms_a" mailbox INBOX "$@" ||
		{ _ms_err "ms_expunge: doveadm expunge for $_ms_a failed"; return 1; }
}

# ms_crash_dovecot DIR: kills every process of DIR's Dovecot at once with
# SIGKILL (its IMAP sessions end in the middle of whatever they do, as in
# a crash; nothing is flushed), waits until they are gone, and starts it
# again on the same ports with the server certificate; Postfix is left
# alone. Fails with the tail of its log if it does not answer in 30 s.
ms_crash_dovecot() {
	[ $# -eq 1 ] || { _ms_err "usage: ms_crash_dovecot DIR"; return 1; }
	_ms_check_dir ms_crash_dovecot "$1" || return 1
	_ms_s=$_ms_dir
	_ms_title="dovecot-$(_ms_instance "$_ms_s")/"
	_ms_pid=$(cat "$_ms_s/dovecot/run/master.pid" 2>/dev/null) ||
		{ _ms_err "ms_crash_dovecot: Dovecot of $_ms_s is not running"; return 1; }
	_ms_left=$(ps -eo pid=,args= | awk -v t="$_ms_title" 'index($2, t) == 1 { print $1 }')
	# shellcheck disable=SC2086
	kill -KILL "$_ms_pid" $_ms_left 2>/dev/null || :
	_ms_i=0
	while :; do
		_ms_left=$(ps -eo pid=,args= | awk -v t="$_ms_title" 'index($2, t) == 1 { print $1 }')
		if [ -z "$_ms_left" ] && ! kill -0 "$_ms_pid" 2>/dev/null; then
			break
		fi
		# shellcheck disable=SC2086
		kill -KILL $_ms_left 2>/dev/null || :
		[ "$_ms_i" -ge 50 ] && { _ms_err "ms_crash_dovecot: Dovecot of $_ms_s survives SIGKILL"; return 1; }
		_ms_i=$((_ms_i + 1))
		sleep 0.1
	done
	rm -f "$_ms_s/dovecot/run/master.pid"
	_ms_cert=server
	_ms_start_dovecot ms_crash_dovecot "$_ms_s"
}

# ms_renumber DIR ADDRESS: gives ADDRESS's INBOX under DIR a new UIDVALIDITY,
# its messages kept (as a mailbox rebuilt or restored from a backup is):
# stops DIR's Dovecot, removes that user's dovecot-uidlist and indexes
# (Dovecot then numbers the Maildir's files from 1 again, under a
# UIDVALIDITY taken from the clock), waits a second so the clock moves
# past the old one, and starts Dovecot again with the server certificate.
# Prints the new UIDVALIDITY on stdout. Fails if it did not change.
ms_renumber() {
	[ $# -eq 2 ] || { _ms_err "usage: ms_renumber DIR ADDRESS"; return 1; }
	_ms_check_dir ms_renumber "$1" || return 1
	_ms_s=$_ms_dir
	# Dovecot lower-cases user names (ASCII).
	# shellcheck disable=SC2018,SC2019
	_ms_u=$(printf %s "$2" | tr 'A-Z' 'a-z')
	_ms_old=$(_ms_doveadm "$_ms_s" -f flow mailbox status -u "$2" uidvalidity INBOX 2>/dev/null |
		sed -n 's/.*uidvalidity=\([0-9]*\).*/\1/p')
	_ms_stop_dovecot ms_renumber "$_ms_s" || return 1
	# The uidlist and indexes live under the user's home (CONTROL, INDEX),
	# or in the Maildir itself for a mail_location without them.
	rm -rf "$_ms_s/dovecot/home/$_ms_u/control" "$_ms_s/dovecot/home/$_ms_u/index"
	rm -f "$_ms_s/maildirs/$_ms_u/dovecot-uidlist" "$_ms_s/maildirs/$_ms_u/dovecot.index"*
	sleep 1
	_ms_cert=server
	_ms_start_dovecot ms_renumber "$_ms_s" || return 1
	_ms_new=$(_ms_doveadm "$_ms_s" -f flow mailbox status -u "$2" uidvalidity INBOX 2>/dev/null |
		sed -n 's/.*uidvalidity=\([0-9]*\).*/\1/p')
	if [ -z "$_ms_new" ] || [ "$_ms_new" = "$_ms_old" ]; then
		_ms_err "ms_renumber: the UIDVALIDITY of $2 stayed '$_ms_old' (now '$_ms_new')"
		return 1
	fi
	echo "$_ms_new"
}
