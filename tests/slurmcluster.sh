# A private Slurm cluster for the tests: a munged with its own key and
# socket, a slurmctld, and slurmd nodes (two unless SC_NODES says), all on
# 127.0.0.1, for the Slurm build executor to come (issue 24). Sourced by
# the tests (POSIX sh, safe under set -u):
#
#	. "$ZERODAY_SRCDIR/tests/slurmcluster.sh"
#	sc_start "$scratch/sc" "$scratch/state" || fail...
#	trap 'sc_stop "$scratch/sc"; cleanup' EXIT
#
# Everything lives under the directory a test gives (munge key and socket,
# slurm.conf, the controller's state, the nodes' spools, pid files, logs)
# and listens on 127.0.0.1 only, on free ports, so a system's own Slurm or
# munge, and other test runs, are not disturbed; nothing under /etc, /run
# or /var is read or written, and no systemd is needed. Every slurmd runs
# in its own UTS and mount namespaces (unshare), named like its node (its
# jobs' hostname says which node ran them), with the paths sc_start is
# given hidden under an empty tmpfs: a node there cannot see zeroday's
# state directory, as a real node on another machine would not.
# Needs root (slurmd runs jobs as their submitter, munged's key is root's)
# and Debian's slurmctld, slurmd, slurm-client, munge and python3. Linux
# only (/proc, namespaces). Internal helpers and their variables are
# prefixed _sc_.

# _sc_err MESSAGE...: MESSAGE on stderr, and false.
_sc_err() {
	printf '%s\n' "$*" >&2
	return 1
}

# _sc_abs DIR: DIR as an absolute path without symbolic links, on stdout.
_sc_abs() {
	(cd "$1" 2>/dev/null && pwd -P)
}

# _sc_check_dir FUNCTION DIR: sets _sc_dir to DIR's absolute path, or fails
# when DIR is missing or its path would break slurm.conf (white space,
# '#', '=') or munge's socket path (107 characters at most).
_sc_check_dir() {
	_sc_dir=$(_sc_abs "$2") || { _sc_err "$1: no directory '$2'"; return 1; }
	case $_sc_dir in
	*[!A-Za-z0-9/._+-]*)
		_sc_err "$1: '$_sc_dir': only letters, digits and /._+- are allowed in the path"
		return 1 ;;
	esac
	if [ ${#_sc_dir} -gt 80 ]; then
		_sc_err "$1: '$_sc_dir' is too long for munge's socket (more than 80 characters)"
		return 1
	fi
}

# _sc_sbin COMMAND: COMMAND's path (PATH first, then /usr/sbin, /sbin).
_sc_sbin() {
	if command -v "$1" 2>/dev/null; then return 0; fi
	for _sc_d in /usr/sbin /sbin; do
		[ -x "$_sc_d/$1" ] && { echo "$_sc_d/$1"; return 0; }
	done
	return 1
}

# sc_missing: the first command of the cluster that is not installed, on
# stdout, and true; false when all are there. For a test's skip.
sc_missing() {
	for _sc_t in munged munge unmunge slurmctld slurmd sbatch squeue sinfo scontrol scancel \
		unshare python3; do
		_sc_sbin "$_sc_t" >/dev/null || { echo "$_sc_t"; return 0; }
	done
	return 1
}

# sc_tap_skip: for a TAP test, prints the plan that skips it and exits 0
# when no cluster can run here (not root, or a package missing); returns
# otherwise.
sc_tap_skip() {
	if [ "$(id -u)" -ne 0 ]; then
		echo "1..0 # SKIP munged and slurmd run as root; run the suite as root (./quickstart check)"
		exit 0
	fi
	if _sc_t=$(sc_missing); then
		echo "1..0 # SKIP '$_sc_t' is not installed (apt-get install slurmctld slurmd slurm-client munge)"
		exit 0
	fi
}

# _sc_free_ports N: N distinct free TCP ports on 127.0.0.1, one a line
# (bound together, so distinct; free when this returns, not reserved).
_sc_free_ports() {
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

# _sc_cluster DIR: the cluster's name: a function of DIR, so that two
# clusters' jobs tell apart (slurmstepd gives each job
# SLURM_CLUSTER_NAME).
_sc_cluster() {
	echo "zd$(printf %s "$1" | cksum | cut -d' ' -f1)"
}

# sc_pids DIR: the ids of the running processes of DIR's cluster, one a
# line: the daemons and slurmstepds (started with SC_CLUSTER_DIR=DIR in
# their environment, which slurmd passes on to slurmstepd) and the jobs
# (whose environment names DIR's cluster in SLURM_CLUSTER_NAME).
sc_pids() {
	python3 - "$1" "$(_sc_cluster "$1")" <<-'EOF'
	import os, sys
	marks = (b"SC_CLUSTER_DIR=" + os.fsencode(sys.argv[1]),
	         b"SLURM_CLUSTER_NAME=" + os.fsencode(sys.argv[2]))
	for pid in os.listdir("/proc"):
	    if not pid.isdigit() or int(pid) == os.getpid():
	        continue
	    try:
	        with open("/proc/%s/environ" % pid, "rb") as f:
	            env = f.read().split(b"\0")
	    except OSError:
	        continue
	    if any(m in env for m in marks):
	        print(pid)
	EOF
}

# _sc_logs DIR: the tail of DIR's logs, on stderr.
_sc_logs() {
	for _sc_l in "$1"/log/*; do
		[ -s "$_sc_l" ] || continue
		echo "--- tail of $_sc_l:"
		tail -n 20 "$_sc_l"
	done >&2
}

# _sc_alive DIR NAME: true when the daemon NAME (munged, slurmctld, or a
# node's name) of DIR runs: the pid in DIR/run/NAME.pid is alive and still
# one of DIR's (not a reused pid). Sets _sc_pid.
_sc_alive() {
	_sc_pid=$(cat "$1/run/$2.pid" 2>/dev/null) || return 1
	[ -n "$_sc_pid" ] && kill -0 "$_sc_pid" 2>/dev/null || return 1
	{ tr '\0' '\n' < "/proc/$_sc_pid/environ"; } 2>/dev/null | grep -qxF "SC_CLUSTER_DIR=$1"
}

# _sc_spawn DIR NAME EXE COMMAND...: runs COMMAND in the background with
# SC_CLUSTER_DIR=DIR in its environment, its output appended to
# DIR/log/NAME.out and its pid in DIR/run/NAME.pid, and waits (10 s at
# most) until that process runs the program EXE (COMMAND execs its way to
# EXE, a daemon in the foreground): before, its environment and
# namespaces are not yet the daemon's. Forked twice, so that it is no job
# of the test's shell (whose "wait" would wait for it). Fails if the
# process ends first.
_sc_spawn() {
	_sc_s=$1
	_sc_n=$2
	_sc_exe=$(readlink -f "$3")
	shift 3
	rm -f "$_sc_s/run/$_sc_n.pid"
	(
		SC_CLUSTER_DIR=$_sc_s
		export SC_CLUSTER_DIR
		"$@" < /dev/null >> "$_sc_s/log/$_sc_n.out" 2>&1 &
		echo $! > "$_sc_s/run/$_sc_n.pid"
	)
	_sc_pid=$(cat "$_sc_s/run/$_sc_n.pid") || return 1
	_sc_i=0
	while [ "$(readlink "/proc/$_sc_pid/exe" 2>/dev/null)" != "$_sc_exe" ]; do
		if ! kill -0 "$_sc_pid" 2>/dev/null || [ "$_sc_i" -ge 100 ]; then
			_sc_err "$_sc_n did not start (its output: $_sc_s/log/$_sc_n.out)"
			return 1
		fi
		_sc_i=$((_sc_i + 1))
		sleep 0.1
	done
}

# _sc_stop_daemon DIR NAME SIGNAL TENTHS: sends SIGNAL to DIR's daemon
# NAME if it runs, and waits up to TENTHS tenths of a second until it is
# gone; fails if it is not.
_sc_stop_daemon() {
	_sc_alive "$1" "$2" || return 0
	kill "-$3" "$_sc_pid" 2>/dev/null || :
	_sc_i=0
	while kill -0 "$_sc_pid" 2>/dev/null; do
		[ "$_sc_i" -ge "$4" ] && return 1
		_sc_i=$((_sc_i + 1))
		sleep 0.1
	done
	rm -f "$1/run/$2.pid"
}

# _sc_wait FUNCTION SECONDS WHAT COMMAND...: runs COMMAND every tenth of a
# second until it succeeds, for SECONDS at most; fails saying that WHAT
# did not happen.
_sc_wait() {
	_sc_fn=$1
	_sc_end=$(($2 * 10))
	_sc_what=$3
	shift 3
	_sc_i=0
	until "$@"; do
		if [ "$_sc_i" -ge "$_sc_end" ]; then
			_sc_err "$_sc_fn: $_sc_what: not after $((_sc_end / 10)) s"
			return 1
		fi
		_sc_i=$((_sc_i + 1))
		sleep 0.1
	done
}

# _sc_munge_ok DIR: a credential made and decoded through DIR's munged.
_sc_munge_ok() {
	"$(_sc_sbin munge)" -S "$1/munge/munge.sock" -n 2>/dev/null |
		"$(_sc_sbin unmunge)" -S "$1/munge/munge.sock" > /dev/null 2>&1
}

# _sc_nodes DIR: DIR's node names, one a line.
_sc_nodes() {
	sed -n 's/^NodeName=\([^ ]*\) .*/\1/p' "$1/slurm.conf"
}

# _sc_all_idle DIR: every node of DIR's cluster is idle, as sinfo says.
_sc_all_idle() {
	_sc_st=$(SLURM_CONF="$1/slurm.conf" sinfo -h -N -o '%N %T' 2>/dev/null) || return 1
	for _sc_node in $(_sc_nodes "$1"); do
		printf '%s\n' "$_sc_st" | grep -qx "$_sc_node idle" || return 1
	done
}

# _sc_ctld_up DIR: DIR's slurmctld answers.
_sc_ctld_up() {
	SLURM_CONF="$1/slurm.conf" scontrol ping 2>/dev/null | grep -q 'is UP'
}

# _sc_write_conf DIR NODES: writes DIR/slurm.conf for NODES nodes (node1...),
# on free ports. Sets _sc_ports (the controller's port, then the nodes').
_sc_write_conf() {
	_sc_ports=$(_sc_free_ports $(($2 + 1))) || { _sc_err "sc_start: no free ports"; return 1; }
	_sc_ctld_port=$(echo "$_sc_ports" | sed -n 1p)
	_sc_node1_port=$(echo "$_sc_ports" | sed -n 2p)
	{
		cat <<-EOF
		# Written by sc_start (tests/slurmcluster.sh).
		ClusterName=$(_sc_cluster "$1")
		# slurmctld knows it is the controller by the name "localhost".
		SlurmctldHost=localhost(127.0.0.1)
		SlurmctldPort=$_sc_ctld_port
		# Each node has its own port (NodeName ... Port=); this is node1's.
		SlurmdPort=$_sc_node1_port
		SlurmUser=root
		SlurmdUser=root
		AuthType=auth/munge
		AuthInfo=socket=$1/munge/munge.sock
		CredType=cred/munge
		StateSaveLocation=$1/state
		SlurmdSpoolDir=$1/spool/%n
		SlurmctldPidFile=$1/run/slurmctld.ctld-pid
		SlurmdPidFile=$1/run/%n.slurmd-pid
		SlurmctldLogFile=$1/log/slurmctld.log
		SlurmdLogFile=$1/log/slurmd-%n.log
		SlurmctldDebug=info
		SlurmdDebug=info
		# No cgroups: a container may have none to give.
		ProctrackType=proctrack/linuxproc
		TaskPlugin=task/none
		JobAcctGatherType=jobacct_gather/none
		SelectType=select/cons_tres
		SelectTypeParameters=CR_CPU
		SchedulerType=sched/backfill
		# A batch job starts when submitted, not up to 3 s later (the
		# default delay that batches submissions on busy clusters).
		SchedulerParameters=batch_sched_delay=0
		MpiDefault=none
		MailProg=/bin/true
		# The nodes are what this file says, whatever the machine has.
		SlurmdParameters=config_overrides
		# A node back after a crash takes jobs again.
		ReturnToService=2
		# A node silent for 10 s is down; a cancelled job's processes get
		# SIGKILL 5 s after SIGTERM; finished jobs stay in
		# "scontrol show job" for 10 minutes.
		SlurmdTimeout=10
		KillWait=5
		MinJobAge=600
		# No accounting database: the jobs' ends go to a text file.
		AccountingStorageType=accounting_storage/none
		JobCompType=jobcomp/filetxt
		JobCompLoc=$1/log/jobcomp.log
		EOF
		_sc_k=1
		while [ "$_sc_k" -le "$2" ]; do
			printf 'NodeName=node%s NodeAddr=127.0.0.1 Port=%s CPUs=2 Features=warm%s,node%s State=UNKNOWN\n' \
				"$_sc_k" "$(echo "$_sc_ports" | sed -n "$((_sc_k + 1))p")" "$_sc_k" "$_sc_k"
			_sc_k=$((_sc_k + 1))
		done
		printf 'PartitionName=build Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n'
		# node1 alone: for builds that must share a node.
		printf 'PartitionName=node1 Nodes=node1 MaxTime=INFINITE State=UP\n'
	} > "$1/slurm.conf"
}

# _sc_start_munged DIR: starts DIR's munged, waits until it answers.
_sc_start_munged() {
	_sc_spawn "$1" munged "$(_sc_sbin munged)" "$(_sc_sbin munged)" --foreground \
		--socket="$1/munge/munge.sock" --key-file="$1/munge/munge.key" \
		--pid-file="$1/munge/munged.pid" --log-file="$1/log/munged.log" \
		--seed-file="$1/munge/munged.seed" &&
	_sc_wait sc_start 10 "munged answering on $1/munge/munge.sock" _sc_munge_ok "$1"
}

# _sc_start_ctld FUNCTION DIR: starts DIR's slurmctld (recovering the
# state it saved, jobs included), waits until it answers.
_sc_start_ctld() {
	_sc_spawn "$2" slurmctld "$(_sc_sbin slurmctld)" "$(_sc_sbin slurmctld)" -D -f "$2/slurm.conf" &&
	_sc_wait "$1" 30 "slurmctld answering" _sc_ctld_up "$2"
}

# _sc_start_node DIR NODE: starts NODE's slurmd in new UTS and mount
# namespaces: hostname NODE, each path of DIR/hidden under an empty tmpfs.
# Records the mount namespace in DIR/run/NODE.mntns (sc_kill_node).
_sc_start_node() {
	_sc_hidden=
	[ -s "$1/hidden" ] && _sc_hidden=$(cat "$1/hidden")
	# shellcheck disable=SC2016,SC2086
	_sc_spawn "$1" "$2" "$(_sc_sbin slurmd)" unshare --uts --mount --propagation private sh -c '
		node=$1 conf=$2 slurmd=$3
		shift 3
		hostname "$node" || exit 1
		for p; do
			mount -t tmpfs -o mode=0755,size=1m sc-hidden "$p" || exit 1
		done
		exec "$slurmd" -D -N "$node" -f "$conf"' \
		sc-node "$2" "$1/slurm.conf" "$(_sc_sbin slurmd)" $_sc_hidden || return 1
	_sc_alive "$1" "$2" &&
		readlink "/proc/$_sc_pid/ns/mnt" > "$1/run/$2.mntns"
}

# sc_start DIR [HIDE...]: starts a Slurm cluster private to DIR on
# 127.0.0.1: munged (a new key), slurmctld, and SC_NODES (2 unless set,
# 1 to 9) slurmd nodes node1, node2... (CPUs=2 each; node N has the
# feature warmN) in one partition "build" (and node1 in one of its own,
# "node1"), each in its own UTS and mount
# namespaces, with every existing HIDE path (absolute; not DIR nor a parent
# of it) under an empty tmpfs there. Waits (30 s at most for each daemon)
# until sinfo shows every node idle; on failure, prints the tail of the
# logs, stops what started, and fails. Starts afresh: a previous run's
# key, state, spools and logs under DIR are removed. Sets and exports:
#	SLURM_CONF	DIR/slurm.conf, for sbatch, squeue, scontrol...
#	SC_NODES	the number of nodes
#	SC_JOBCOMP	DIR/log/jobcomp.log: a line per finished job
#			(JobId=, Name=, JobState=, NodeList=, ExitCode=)
# Logs: DIR/log/ (slurmctld.log, slurmd-NODE.log, munged.log, and each
# daemon's own output in NAME.out). Needs root.
sc_start() {
	[ $# -ge 1 ] || { _sc_err "usage: sc_start DIR [HIDE...]"; return 1; }
	[ "$(id -u)" = 0 ] ||
		{ _sc_err "sc_start: a Slurm cluster needs root (munged, slurmd, namespaces)"; return 1; }
	_sc_m=$(sc_missing) &&
		{ _sc_err "sc_start: '$_sc_m' not found (Debian: apt-get install slurmctld slurmd slurm-client munge python3)"; return 1; }
	case ${SC_NODES:-2} in
	[1-9]) ;;
	*) _sc_err "sc_start: SC_NODES='$SC_NODES': 1 to 9 nodes"; return 1 ;;
	esac
	SC_NODES=${SC_NODES:-2}
	mkdir -p "$1" && _sc_check_dir sc_start "$1" || return 1
	_sc_s=$_sc_dir
	shift
	if [ -n "$(sc_pids "$_sc_s")" ]; then
		_sc_err "sc_start: a cluster of $_sc_s is running already (sc_stop first)"
		return 1
	fi
	: > "$_sc_s/hidden.new" || return 1
	for _sc_h; do
		case $_sc_h in
		/*) ;;
		*) _sc_err "sc_start: '$_sc_h': not an absolute path"; return 1 ;;
		esac
		[ -d "$_sc_h" ] || continue
		_sc_h=$(_sc_abs "$_sc_h") || return 1
		case $_sc_h in
		*[!A-Za-z0-9/._+-]*)
			_sc_err "sc_start: '$_sc_h': only letters, digits and /._+- are allowed"; return 1 ;;
		esac
		case $_sc_s/ in
		"$_sc_h"/*) _sc_err "sc_start: hiding '$_sc_h' would hide $_sc_s from the nodes"; return 1 ;;
		esac
		echo "$_sc_h" >> "$_sc_s/hidden.new"
	done
	mv "$_sc_s/hidden.new" "$_sc_s/hidden" || return 1
	if ! unshare --uts --mount --propagation private true 2>"$_sc_s/unshare.err"; then
		_sc_err "sc_start: cannot make UTS and mount namespaces for the nodes: $(cat "$_sc_s/unshare.err")"
		return 1
	fi
	rm -rf "$_sc_s/log" "$_sc_s/run" "$_sc_s/state" "$_sc_s/spool" "$_sc_s/munge"
	mkdir -p "$_sc_s/log" "$_sc_s/run" "$_sc_s/state" "$_sc_s/spool" || return 1
	# munged wants its socket's directory searchable by all, its key
	# readable by root only.
	mkdir -m 0755 "$_sc_s/munge" || return 1
	(umask 077 && dd if=/dev/urandom of="$_sc_s/munge/munge.key" bs=1024 count=1 2>/dev/null) ||
		{ _sc_err "sc_start: cannot write the munge key"; return 1; }
	chmod 0400 "$_sc_s/munge/munge.key"
	_sc_write_conf "$_sc_s" "$SC_NODES" || return 1
	SLURM_CONF=$_sc_s/slurm.conf
	SC_JOBCOMP=$_sc_s/log/jobcomp.log
	export SLURM_CONF SC_NODES SC_JOBCOMP

	if ! _sc_start_munged "$_sc_s" || ! _sc_start_ctld sc_start "$_sc_s"; then
		_sc_logs "$_sc_s"
		sc_stop "$_sc_s"
		return 1
	fi
	for _sc_node in $(_sc_nodes "$_sc_s"); do
		_sc_start_node "$_sc_s" "$_sc_node" || {
			_sc_err "sc_start: slurmd of $_sc_node did not start"
			_sc_logs "$_sc_s"
			sc_stop "$_sc_s"
			return 1
		}
	done
	if ! _sc_wait sc_start 30 "every node idle in sinfo" _sc_all_idle "$_sc_s"; then
		SLURM_CONF="$_sc_s/slurm.conf" sinfo -N >&2
		_sc_logs "$_sc_s"
		sc_stop "$_sc_s"
		return 1
	fi
}

# sc_wait_idle DIR [SECONDS]: waits (30 s unless SECONDS) until every node
# of DIR's cluster is idle in sinfo; fails with the tail of the logs.
sc_wait_idle() {
	[ $# -eq 1 ] || [ $# -eq 2 ] || { _sc_err "usage: sc_wait_idle DIR [SECONDS]"; return 1; }
	_sc_check_dir sc_wait_idle "$1" || return 1
	_sc_wait sc_wait_idle "${2:-30}" "every node idle in sinfo" _sc_all_idle "$_sc_dir" || {
		SLURM_CONF="$_sc_dir/slurm.conf" sinfo -N >&2
		_sc_logs "$_sc_dir"
		return 1
	}
}

# sc_kill_slurmd DIR NODE [SIGNAL]: sends SIGNAL (KILL unless given) to
# NODE's slurmd and waits until it is gone. Its jobs' slurmstepds and
# processes go on running, as when only slurmd crashes on a real node.
sc_kill_slurmd() {
	[ $# -eq 2 ] || [ $# -eq 3 ] || { _sc_err "usage: sc_kill_slurmd DIR NODE [SIGNAL]"; return 1; }
	_sc_check_dir sc_kill_slurmd "$1" || return 1
	_sc_alive "$_sc_dir" "$2" || { _sc_err "sc_kill_slurmd: slurmd of $2 is not running"; return 1; }
	_sc_stop_daemon "$_sc_dir" "$2" "${3:-KILL}" 100 ||
		{ _sc_err "sc_kill_slurmd: slurmd of $2 survives SIG${3:-KILL}"; return 1; }
}

# _sc_node_pids DIR NODE: the processes of DIR's cluster in NODE's mount
# namespace (its slurmd, slurmstepds and jobs), one a line.
_sc_node_pids() {
	_sc_ns=$(cat "$1/run/$2.mntns" 2>/dev/null) || return 0
	for _sc_p in $(sc_pids "$1"); do
		[ "$(readlink "/proc/$_sc_p/ns/mnt" 2>/dev/null)" = "$_sc_ns" ] && echo "$_sc_p"
	done
}

# sc_kill_node DIR NODE: SIGKILLs, at once, NODE's slurmd and every
# process of its jobs (all of the cluster's processes in NODE's mount
# namespace), as a node losing power; waits until they are gone.
sc_kill_node() {
	[ $# -eq 2 ] || { _sc_err "usage: sc_kill_node DIR NODE"; return 1; }
	_sc_check_dir sc_kill_node "$1" || return 1
	_sc_i=0
	while :; do
		_sc_left=$(_sc_node_pids "$_sc_dir" "$2")
		[ -z "$_sc_left" ] && break
		[ "$_sc_i" -ge 50 ] &&
			{ _sc_err "sc_kill_node: processes of $2 survive SIGKILL: $(printf '%s\n' "$_sc_left" | tr '\n' ' ')"; return 1; }
		# shellcheck disable=SC2086
		kill -KILL $_sc_left 2>/dev/null || :
		_sc_i=$((_sc_i + 1))
		sleep 0.1
	done
	rm -f "$_sc_dir/run/$2.pid"
}

# sc_start_slurmd DIR NODE: starts NODE's slurmd again (after
# sc_kill_slurmd or sc_kill_node), in new namespaces as sc_start does,
# and waits (30 s at most) until sinfo shows NODE idle or allocated.
sc_start_slurmd() {
	[ $# -eq 2 ] || { _sc_err "usage: sc_start_slurmd DIR NODE"; return 1; }
	_sc_check_dir sc_start_slurmd "$1" || return 1
	_sc_nodes "$_sc_dir" | grep -qxF "$2" || { _sc_err "sc_start_slurmd: no node '$2'"; return 1; }
	_sc_alive "$_sc_dir" "$2" && { _sc_err "sc_start_slurmd: slurmd of $2 is running"; return 1; }
	_sc_start_node "$_sc_dir" "$2" || { _sc_logs "$_sc_dir"; return 1; }
	_sc_wait sc_start_slurmd 30 "$2 back in sinfo" _sc_node_up "$_sc_dir" "$2" ||
		{ _sc_logs "$_sc_dir"; return 1; }
}

# _sc_node_up DIR NODE: sinfo shows NODE responding and usable (idle,
# mixed or allocated; not down, drained, or not responding).
_sc_node_up() {
	_sc_st=$(SLURM_CONF="$1/slurm.conf" sinfo -h -n "$2" -o '%T' 2>/dev/null) || return 1
	case $_sc_st in
	idle|mixed|allocated) return 0 ;;
	esac
	return 1
}

# sc_stop_ctld DIR: stops DIR's slurmctld (SIGTERM: it saves its state)
# and waits until it is gone. The nodes and their jobs go on; commands
# fail or wait until sc_start_ctld.
sc_stop_ctld() {
	[ $# -eq 1 ] || { _sc_err "usage: sc_stop_ctld DIR"; return 1; }
	_sc_check_dir sc_stop_ctld "$1" || return 1
	_sc_alive "$_sc_dir" slurmctld || { _sc_err "sc_stop_ctld: slurmctld of $_sc_dir is not running"; return 1; }
	_sc_stop_daemon "$_sc_dir" slurmctld TERM 300 ||
		{ _sc_err "sc_stop_ctld: slurmctld of $_sc_dir does not stop"; return 1; }
}

# sc_start_ctld DIR: starts DIR's slurmctld again, recovering its saved
# state (jobs queued and running), and waits (30 s at most) until it
# answers.
sc_start_ctld() {
	[ $# -eq 1 ] || { _sc_err "usage: sc_start_ctld DIR"; return 1; }
	_sc_check_dir sc_start_ctld "$1" || return 1
	_sc_alive "$_sc_dir" slurmctld && { _sc_err "sc_start_ctld: slurmctld of $_sc_dir is running"; return 1; }
	_sc_start_ctld sc_start_ctld "$_sc_dir" || { _sc_logs "$_sc_dir"; return 1; }
}

# sc_restart_ctld DIR: sc_stop_ctld, then sc_start_ctld.
sc_restart_ctld() {
	[ $# -eq 1 ] || { _sc_err "usage: sc_restart_ctld DIR"; return 1; }
	sc_stop_ctld "$1" && sc_start_ctld "$1"
}

# sc_job_state JOBID: the job's state as slurmctld says (PENDING,
# RUNNING, COMPLETING, COMPLETED, FAILED, CANCELLED, TIMEOUT,
# NODE_FAIL...), on stdout; fails when slurmctld does not know it.
sc_job_state() {
	[ $# -eq 1 ] || { _sc_err "usage: sc_job_state JOBID"; return 1; }
	case $1 in
	''|*[!0-9_]*) _sc_err "sc_job_state: '$1' is no job id"; return 1 ;;
	esac
	scontrol -o show job "$1" 2>/dev/null | sed -n 's/.* JobState=\([A-Z_]*\) .*/\1/p' | grep .
}

# sc_wait_job JOBID STATE [SECONDS]: waits (60 s unless SECONDS) until the
# job is in STATE; fails, saying the state it is in, on timeout or when
# it ended in another state.
sc_wait_job() {
	[ $# -eq 2 ] || [ $# -eq 3 ] || { _sc_err "usage: sc_wait_job JOBID STATE [SECONDS]"; return 1; }
	case $1 in
	''|*[!0-9_]*) _sc_err "sc_wait_job: '$1' is no job id"; return 1 ;;
	esac
	_sc_end=$((${3:-60} * 10))
	_sc_i=0
	while :; do
		_sc_st=$(sc_job_state "$1") || _sc_st=unknown
		[ "$_sc_st" = "$2" ] && return 0
		case $_sc_st in
		COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|PREEMPTED|BOOT_FAIL|DEADLINE|OUT_OF_MEMORY)
			_sc_err "sc_wait_job: job $1 ended $_sc_st, not $2"
			return 1 ;;
		esac
		if [ "$_sc_i" -ge "$_sc_end" ]; then
			_sc_err "sc_wait_job: job $1 is $_sc_st, not $2, after ${3:-60} s"
			return 1
		fi
		_sc_i=$((_sc_i + 1))
		sleep 0.1
	done
}

# _sc_wait_gone DIR TENTHS: waits up to TENTHS tenths of a second until no
# process of DIR's cluster is left; fails if some are.
_sc_wait_gone() {
	_sc_i=0
	while [ -n "$(sc_pids "$1")" ]; do
		[ "$_sc_i" -ge "$2" ] && return 1
		_sc_i=$((_sc_i + 1))
		sleep 0.1
	done
}

# sc_stop DIR: stops DIR's cluster: cancels its jobs (if slurmctld
# answers) and waits up to 10 s for them to end, SIGTERMs the slurmds,
# slurmctld (which saves its state) and munged, SIGKILLs whatever of
# theirs is left after 10 s (jobs and slurmstepds of a killed slurmd
# too), and waits until all are gone. Quiet; safe to call twice, after a
# failed sc_start, and from an EXIT trap (under set -e too). Leaves DIR as
# it is (logs, state) for a look after the test.
sc_stop() {
	[ $# -eq 1 ] || { _sc_err "usage: sc_stop DIR"; return 1; }
	_sc_check_dir sc_stop "$1" 2>/dev/null || return 0
	_sc_s=$_sc_dir
	[ -f "$_sc_s/slurm.conf" ] || return 0
	if [ "$(id -u)" != 0 ]; then
		_sc_err "sc_stop: stopping the cluster of $_sc_s needs root"
		return 1
	fi
	if _sc_alive "$_sc_s" slurmctld && _sc_ctld_up "$_sc_s"; then
		_sc_jobs=$(SLURM_CONF="$_sc_s/slurm.conf" squeue -h -o %i 2>/dev/null) || _sc_jobs=
		if [ -n "$_sc_jobs" ]; then
			# shellcheck disable=SC2086
			SLURM_CONF="$_sc_s/slurm.conf" scancel $_sc_jobs 2>/dev/null || :
			_sc_i=0
			while [ -n "$(SLURM_CONF="$_sc_s/slurm.conf" squeue -h -o %i 2>/dev/null)" ] &&
				[ "$_sc_i" -lt 100 ]; do
				_sc_i=$((_sc_i + 1))
				sleep 0.1
			done
		fi
	fi
	for _sc_node in $(_sc_nodes "$_sc_s"); do
		_sc_alive "$_sc_s" "$_sc_node" && kill -TERM "$_sc_pid" 2>/dev/null
	done
	_sc_alive "$_sc_s" slurmctld && kill -TERM "$_sc_pid" 2>/dev/null
	# munged last: the others may still ask it to sign on their way out.
	for _sc_node in $(_sc_nodes "$_sc_s") slurmctld; do
		_sc_stop_daemon "$_sc_s" "$_sc_node" TERM 100 || :
	done
	_sc_stop_daemon "$_sc_s" munged TERM 100 || :
	if ! _sc_wait_gone "$_sc_s" 20; then
		_sc_left=$(sc_pids "$_sc_s")
		# shellcheck disable=SC2086
		[ -z "$_sc_left" ] || kill -KILL $_sc_left 2>/dev/null || :
		_sc_wait_gone "$_sc_s" 50 ||
			{ _sc_err "sc_stop: processes of $_sc_s survive SIGKILL: $(sc_pids "$_sc_s" | tr '\n' ' ')"; return 1; }
	fi
	rm -f "$_sc_s"/run/*.pid
	return 0
}
