#!/bin/sh
# The daemon's operations: SIGHUP reads the configuration again. A bad
# one (a syntax error, an invalid value, a template with a mistake) is
# refused with the reason and the daemon runs on the old one; a good one
# is swapped in and the next poll uses it, with the settings that cannot
# change live kept and warned about. The sandbox is kept off PATH, so
# every job fails for infrastructure and waits: nothing is built, but
# every job records the target it was queued for. Speaks TAP.
test_name=ops
. "$ZERODAY_SRCDIR/tests/lib.sh"

for t in kb1 kb2 kb3; do
	kbuild_repo "$scratch/$t" "$t: root"
done
conf="$scratch/z.conf"
state="$scratch/state"
log="$scratch/run.log"
good() { # good TARGET WORKERS
	printf '[zeroday]\nworkers = %s\n[git]\nallow-local-trees = true\n[build]\ntargets = %s\n' \
		"$2" "$1" > "$conf"
}
z() { "$ZERODAY" --config="$conf" --state-dir="$state" "$@"; }
# wait_for PATTERN: until the daemon's log has a line matching PATTERN (10 s at most).
wait_for() {
	for _ in $(seq 1 100); do
		grep -q "$1" "$log" && return 0
		sleep 0.1
	done
	return 1
}
# targets TREE: the targets of the tree's jobs, one a line.
targets() {
	sqlite3 "file:$state/zeroday.db?mode=ro" \
		"SELECT DISTINCT j.target FROM jobs j JOIN trees t ON t.id = j.tree_id
		 WHERE t.name = '$1' ORDER BY 1"
}
# queued_for TREE TARGET: until TREE's jobs are queued, all for TARGET (10 s at most).
queued_for() {
	for _ in $(seq 1 100); do
		[ -n "$(targets "$1")" ] && break
		sleep 0.1
	done
	test "$(targets "$1")" = "$2"
}

good x86_64:defconfig 1
z init > /dev/null
z tree add kb1 "$scratch/kb1" master > /dev/null
PATH="$scratch/no-such-bin" "$ZERODAY" --config="$conf" --state-dir="$state" \
	run --poll-interval 1 --retry-delay 3600 > "$log" 2>&1 &
pid=$!
check "the first poll queues kb1 for the configured target" queued_for kb1 x86_64:defconfig

# A syntax error: refused, with the file and the line (GKeyFile quotes
# the line; it does not number it).
printf '[build\ntargets = x86_64:allnoconfig\n' > "$conf"
kill -HUP "$pid"
check "a syntax error: the reload is refused" wait_for "config not reloaded"
check "a syntax error: the warning names the file and the line" \
	grep -q "warning: config not reloaded.*$conf: .*line .*\\[build.* which is not" "$log"
check "a syntax error: the daemon still runs" kill -0 "$pid"

# An invalid value: refused, with the file, the group and the key.
good "x86_64:no such config" 1
kill -HUP "$pid"
check "an invalid value: refused" wait_for "config not reloaded.*\[build\] targets"
check "an invalid value: the daemon still runs" kill -0 "$pid"

# A template with a mistake: refused like at the start.
mkdir "$scratch/templates"
cp "$ZERODAY_SRCDIR"/templates/*.txt "$scratch/templates/"
sed -i 's/{{culprit_short}}/{{culprit_shrot}}/' "$scratch/templates/build-error.txt"
good x86_64:allnoconfig 1
printf '[mail]\ntemplates = %s\n' "$scratch/templates" >> "$conf"
kill -HUP "$pid"
check "a bad template: refused" wait_for "config not reloaded.*culprit_shrot"
check "a bad template: the daemon still runs" kill -0 "$pid"
check "nothing was reloaded yet" test "$(grep -c 'config reloaded' "$log")" -eq 0
z tree add kb2 "$scratch/kb2" master > /dev/null
check "the old configuration stays in force: kb2 is queued for its target" \
	queued_for kb2 x86_64:defconfig

# A good configuration, which also asks for more workers and adds a mail
# source: swapped in, the worker count kept (the runs below get 3), and
# the source read by a reader started on it.
good x86_64:allnoconfig 3
mkdir -p "$scratch/maildir/cur" "$scratch/maildir/new" "$scratch/maildir/tmp"
printf '[mail]\nsources = maildir:%s\n' "$scratch/maildir" >> "$conf"
kill -HUP "$pid"
check "a good configuration is reloaded" wait_for "config reloaded from $conf"
check "workers cannot change live: a warning" \
	grep -q "warning: $conf: \[zeroday\] workers cannot change while zeroday runs; keeping 1" "$log"
z tree add kb3 "$scratch/kb3" master > /dev/null
check "the new configuration is in force: kb3 is queued for the new target" \
	queued_for kb3 x86_64:allnoconfig
check "the jobs queued before keep their target" test "$(targets kb1)" = x86_64:defconfig
# source_json: the daemon's mail sources in status --json, once one was read (10 s at most).
source_json() {
	for _ in $(seq 1 100); do
		out=$(z status --json | sed -n 's/.*"mail_sources": \(\[[^]]*\]\).*/\1/p')
		[ "$out" != "[]" ] && break
		sleep 0.1
	done
	printf '%s\n' "$out"
}
source_json > "$scratch/sources.json"
check "the mail source added by the reload is read" \
	grep -q "^\[{\"source\": \"maildir:$scratch/maildir\", \"last_read\": [1-9][0-9]*, \"last_read_age\": [0-9]*, \"failed\": 0, \"error\": null}\]$" \
	"$scratch/sources.json"

# Status shows the queue with ages, the mail source's last read, the
# outbox and the response times (none measured here: no mail was sent).
z status > "$scratch/status.txt"
z status --json > "$scratch/status.json"
check "status: the age of the oldest queued job" grep -q "^  oldest queued [0-9]*[smhd]" "$scratch/status.txt"
check "status: each queued job with its age" \
	grep -q "^  queued kb3 [0-9a-f]\{12\} x86_64:allnoconfig: job [0-9]*, build, queued [0-9]*s ago$" \
	"$scratch/status.txt"
check "status: each tree's last poll with its age" \
	grep -q "^  kb1  *rebasable  *polled [0-9-]* [0-9:]* UTC ([0-9]*[sm].* ago)$" "$scratch/status.txt"
check "status: the mail source's last read" \
	grep -q "^  source maildir:$scratch/maildir: read [0-9-]* [0-9:]* UTC ([0-9]*[sm].* ago)$" \
	"$scratch/status.txt"
check "status: the outbox" grep -qx "Outbox: 0 queued, 0 held, 0 sent, 0 failed" "$scratch/status.txt"
check "status: no response time yet" \
	grep -q "^  push to report: - / - (0 measured; " "$scratch/status.txt"
check "status --json: three queued jobs with their ages, oldest first" \
	test "$(grep -o '"state": "queued", "kind": "build", "tree": "kb[123]", "commit": "[0-9a-f]\{40\}", "target": "[a-z0-9_:]*", "created": [0-9]*, "age": [0-9]*}' \
		"$scratch/status.json" | sed 's/.*"tree": "\(kb[123]\)".*/\1/' | tr '\n' ' ')" = "kb1 kb2 kb3 "
check "status --json: the oldest queued job's age" grep -q '"oldest_queued_age": [0-9][0-9]*, ' "$scratch/status.json"
check "status --json: the outbox and the response times" \
	grep -q '"outbox": {"queued": 0, "held": 0, "sent": 0, "failed": 0, "oldest_queued_age": null}, "response_times": {"days": 30, "push_to_report": {"from": "first_poll", "count": 0, "p50": null, "p90": null}, "post_to_reply": {"from": "ingest", "count": 0, "p50": null, "p90": null}}}$' \
	"$scratch/status.json"
check "the daemon still runs" kill -0 "$pid"
kill -TERM "$pid"
wait "$pid"
check "SIGTERM stops it cleanly" test $? -eq 0
if [ "$failed" -ne 0 ]; then sed 's/^/# /' "$log"; fi

# Under systemd, stderr is a stream to the journal ($JOURNAL_STREAM names
# it): the log goes to the journal's socket as structured entries. In a
# mount namespace of its own, a fake journal listens on that socket.
cat > "$scratch/journal.py" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("/run/systemd/journal/socket")
open(sys.argv[1], "w").close()
s.settimeout(20)
with open(sys.argv[2], "wb") as out:
    while True:
        try:
            data = s.recv(65536)
        except socket.timeout:
            break
        out.write(data + b"\n--\n")
        out.flush()
        if b"MESSAGE=running" in data:
            break
PY
cat > "$scratch/journal.sh" <<EOF2
mount -t tmpfs tmpfs /run && mkdir -p /run/systemd/journal || exit 77
python3 "$scratch/journal.py" "$scratch/journal.ready" "$scratch/journal.out" &
for _ in \$(seq 1 100); do [ -e "$scratch/journal.ready" ] && break; sleep 0.1; done
exec 2> "$scratch/journal.err"
JOURNAL_STREAM=\$(stat -c %d:%i "$scratch/journal.err") "$ZERODAY" --config="$conf" \
	--state-dir="$state" run --once --poll-interval 3600 --retry-delay 3600
rc=\$?
wait
exit \$rc
EOF2
unshare -m sh "$scratch/journal.sh" > /dev/null 2> "$scratch/journal.unshare"
rc=$?
if [ "$rc" -eq 77 ] || grep -q "unshare failed" "$scratch/journal.unshare"; then
	ok "# SKIP no mount namespace for a fake journal: $(head -1 "$scratch/journal.unshare")"
else
	check "journal: run --once succeeds" test "$rc" -eq 0
	check "journal: a structured entry with the message" \
		grep -q "^MESSAGE=running 3 workers$" "$scratch/journal.out"
	check "journal: its priority (notice), domain and identifier" \
		sh -c "grep -q '^PRIORITY=5$' '$scratch/journal.out' &&
		       grep -q '^GLIB_DOMAIN=bot$' '$scratch/journal.out' &&
		       grep -q '^SYSLOG_IDENTIFIER=zeroday$' '$scratch/journal.out'"
	check "journal: nothing on stderr then" \
		test "$(grep -c 'running 3 workers' "$scratch/journal.err")" -eq 0
fi
# Without the journal (its socket absent), the lines still reach stderr.
: > "$scratch/plain.err"
JOURNAL_STREAM=$(stat -c %d:%i "$scratch/plain.err") \
	z run --once --poll-interval 3600 --retry-delay 3600 2> "$scratch/plain.err"
check "no journal: the log goes to stderr as before" \
	grep -q "^zeroday: bot: running 3 workers$" "$scratch/plain.err"

# --log-level: what is logged. Messages and worse by default, info and
# debug with -v or --log-level=info; --log-level=warning drops messages.
z --log-level=warning run --once --poll-interval 3600 --retry-delay 3600 2> "$scratch/warning.err"
check "--log-level=warning: no message logged" test "$(grep -c 'running 3 workers' "$scratch/warning.err")" -eq 0
"$ZERODAY" --state-dir="$scratch/fresh1" init > /dev/null 2> "$scratch/default.err"
check "by default no info logged" test "$(grep -c 'migrating the database schema' "$scratch/default.err")" -eq 0
"$ZERODAY" --log-level=info --state-dir="$scratch/fresh2" init > /dev/null 2> "$scratch/info.err"
check "--log-level=info: info logged" grep -q "^zeroday: bot: migrating the database schema from 0 to 1$" "$scratch/info.err"
"$ZERODAY" -v --state-dir="$scratch/fresh3" init > /dev/null 2> "$scratch/verbose.err"
check "-v: info logged" grep -q "^zeroday: bot: migrating the database schema from 0 to 1$" "$scratch/verbose.err"
z --log-level=loud status > /dev/null 2> "$scratch/loud.err"
check "an unknown --log-level is misuse" test $? -eq 2
check "that names the levels" grep -q "unknown --log-level 'loud' (error, warning, message, info, debug)" "$scratch/loud.err"

# The service: make install puts the unit, with this installation's
# paths, and the sysusers.d snippet in place; systemd-analyze accepts the
# unit (with the built binary in the installed one's place).
builddir=$(dirname "$ZERODAY")
inst="$scratch/inst"
make -s -C "$builddir" install DESTDIR="$inst" > "$scratch/install.log" 2>&1
check "make install DESTDIR succeeds" test $? -eq 0
unit=$(find "$inst" -path '*/system/zeroday.service')
check "the unit is installed in a systemd system unit directory" test -f "$unit"
bin=$(sed -n 's|^ExecStart=\([^ ]*\) --config /etc/zeroday/zeroday.conf --state-dir \${STATE_DIRECTORY} run$|\1|p' "$unit")
check "the unit runs the installed binary" test -n "$bin" -a -x "$inst$bin"
check "the unit reloads with SIGHUP" grep -qx 'ExecReload=/bin/kill -HUP $MAINPID' "$unit"
check "the unit has no placeholder left" test "$(grep -c '@[a-z]*@' "$unit")" -eq 0
check "the sysusers.d snippet is installed" \
	grep -qx 'u zeroday - "zeroday kernel test robot" /var/lib/zeroday' \
	"$(find "$inst" -path '*/sysusers.d/zeroday.conf')"
if command -v systemd-analyze > /dev/null; then
	sed "s|$bin |$ZERODAY |" "$unit" > "$scratch/zeroday.service"
	check "systemd-analyze verify accepts the unit" \
		systemd-analyze verify --man=no "$scratch/zeroday.service"
else
	ok "# SKIP systemd-analyze is not installed"
fi

tap_end
