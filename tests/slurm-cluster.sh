#!/bin/sh
# The private Slurm cluster of tests/slurmcluster.sh, the foundation of the
# Slurm build executor to come (issue 24), doing what the executor will
# lean on: two nodes, each in its own UTS and mount namespaces, idle on
# 127.0.0.1; a batch job runs and its output lands where the test reads
# it; the state directory hidden from the nodes; jobs of one name with
# --dependency=singleton never overlap (while jobs without it do);
# --prefer=<feature> picks the node with that feature, or the other one
# at once when that node is busy, and a feature no node has is refused;
# scancel ends a running job, seen in "scontrol show job" and in the
# jobcomp log; a slurmd killed and started again, and slurmctld
# restarted with a job queued, lose nothing; a node lost whole ends its
# job NODE_FAIL and takes jobs again once back; and the cluster stops
# with no process left.
# Needs root and Debian's slurmctld, slurmd, slurm-client and munge.
# Speaks TAP.
test_name=slurm-cluster
. "$ZERODAY_SRCDIR/tests/lib.sh"
. "$ZERODAY_SRCDIR/tests/slurmcluster.sh"

sc_tap_skip

sc="$scratch/sc"
state="$scratch/state"
out="$scratch/out"
mkdir -p "$state" "$out"
echo "zeroday's state" > "$state/secret"
trap 'sc_stop "$sc"; cleanup' EXIT
t0=$(date +%s)
if ! sc_start "$sc" "$state"; then
	not_ok "munged, slurmctld and two slurmd start on 127.0.0.1"
	tap_end
fi
ok "munged, slurmctld and two slurmd start, both nodes idle ($(($(date +%s) - t0)) s)"

# submit ARGS...: sbatch --parsable ARGS, the job's id on stdout.
submit() { sbatch --parsable -o "$out/%j.log" "$@"; }
# node_of JOBID: the node the job ran on, as slurmctld says.
node_of() { scontrol -o show job "$1" | sed -n 's/.* NodeList=\([^ ]*\) .*/\1/p'; }

# A job on each node: runs, writes where the test reads, and does not see
# the hidden state directory (an empty tmpfs there).
for node in node1 node2; do
	j=$(submit -J "probe-$node" -w "$node" \
		--wrap "hostname > $out/$node.host; ls -A $state > $out/$node.state; echo ok > $out/$node.ok")
	if sc_wait_job "$j" COMPLETED 60; then
		ok "a job on $node completes"
	else
		not_ok "a job on $node completes"
	fi
	check "its output arrives" grep -qx ok "$out/$node.ok"
	check "it runs in $node's UTS namespace (hostname $node)" grep -qx "$node" "$out/$node.host"
	check "the state directory is hidden from $node" test ! -s "$out/$node.state"
	check "the job's end is in the jobcomp log" \
		grep -q "^JobId=$j .* Name=probe-$node JobState=COMPLETED .* NodeList=$node " "$SC_JOBCOMP"
done
check "the state directory is still there outside the nodes" test -s "$state/secret"

# Three jobs of one name with --dependency=singleton: one at a time, each
# holding a lock directory while it runs (mkdir fails if another holds it)
# and recording its start and end. On two nodes with four CPUs, two jobs
# of another name without the dependency do run at once: the singleton
# dependency, not a lack of room, keeps the first ones apart.
# lockjob DIR: the script of such a job, recording under DIR.
lockjob() {
	# shellcheck disable=SC2016
	printf 'D=%s; mkdir "$D/lock" || echo overlap >> "$D/overlap"; date +%%s.%%N > "$D/$SLURM_JOB_ID.start"; sleep 2; date +%%s.%%N > "$D/$SLURM_JOB_ID.end"; rmdir "$D/lock" 2>/dev/null; exit 0\n' "$1"
}
mkdir -p "$out/single" "$out/free"
single=
for i in 1 2 3; do
	single="$single $(submit -J lock-kb-x86 --dependency=singleton --wrap "$(lockjob "$out/single")")"
done
free=
for i in 1 2; do
	free="$free $(submit -J free --wrap "$(lockjob "$out/free")")"
done
done_ok=0
for j in $single $free; do
	sc_wait_job "$j" COMPLETED 60 || done_ok=1
done
check "the singleton jobs and the free ones complete" test "$done_ok" -eq 0
# overlaps DIR: the number of pairs of jobs whose [start, end] under DIR
# intersect.
overlaps() {
	for f in "$1"/*.start; do
		printf '%s %s\n' "$(cat "$f")" "$(cat "${f%.start}.end")"
	done | sort -n | awk '{ s[NR] = $1; e[NR] = $2 }
		END { n = 0; for (i = 1; i <= NR; i++) for (k = i + 1; k <= NR; k++)
			if (s[k] < e[i] && s[i] < e[k]) n++; print n }'
}
check "three singleton jobs ran" test "$(find "$out/single" -name '*.end' | wc -l)" -eq 3
check "no two of them overlapped (times)" test "$(overlaps "$out/single")" -eq 0
check "no two of them overlapped (lock)" test ! -e "$out/single/overlap"
check "the two free jobs did overlap" test "$(overlaps "$out/free")" -eq 1

# --prefer: each node's feature leads there while both are idle; with
# the preferred node busy, the job runs on the other at once rather than
# wait. A feature no node declares is refused at submission (Slurm
# 22.05), so the executor may only prefer features slurm.conf gives.
for node in node2 node1; do
	j=$(submit -J "prefer-$node" --prefer="warm${node#node}" --wrap true)
	sc_wait_job "$j" COMPLETED 60
	check "--prefer=warm${node#node} runs on $node" test "$(node_of "$j")" = "$node"
done
busy=$(submit -J busy -w node2 -c 2 --wrap "exec sleep 300")
check "node2 taken whole" sc_wait_job "$busy" RUNNING 60
j=$(submit -J prefer-busy --prefer=warm2 --wrap true)
check "--prefer=warm2 with node2 busy: completes at once" sc_wait_job "$j" COMPLETED 30
check "on node1" test "$(node_of "$j")" = node1
scancel "$busy"
sc_wait_job "$busy" CANCELLED 30
check "--prefer=<a feature no node has>: refused" \
	test -z "$(submit -J prefer-none --prefer=nowhere --wrap true 2> "$out/prefer-none.err")"
check "saying why" grep -q "Invalid preferred feature" "$out/prefer-none.err"

# scancel of a running job: its processes end (SIGTERM), and it is
# CANCELLED in scontrol and in the jobcomp log.
j=$(submit -J cancel-me --wrap "echo \$\$ > $out/cancel.pid; exec sleep 300")
check "a long job runs" sc_wait_job "$j" RUNNING 60
i=0
while [ ! -s "$out/cancel.pid" ] && [ "$i" -lt 100 ]; do i=$((i + 1)); sleep 0.1; done
scancel "$j"
check "scancel: CANCELLED in scontrol show job" sc_wait_job "$j" CANCELLED 30
i=0
while ! grep -q "^JobId=$j .* JobState=CANCELLED " "$SC_JOBCOMP" && [ "$i" -lt 100 ]; do
	i=$((i + 1))
	sleep 0.1
done
check "scancel: CANCELLED in the jobcomp log" grep -q "^JobId=$j .* JobState=CANCELLED " "$SC_JOBCOMP"
pid=$(cat "$out/cancel.pid")
i=0
while kill -0 "$pid" 2>/dev/null && [ "$i" -lt 100 ]; do i=$((i + 1)); sleep 0.1; done
check "scancel: the job's process is gone" test -n "$pid" -a ! -d "/proc/$pid"

# The fault helpers: slurmd of node2 killed and started again; slurmctld
# restarted with a held job, which it remembers and runs when released.
check "sc_kill_slurmd: node2's slurmd killed" sc_kill_slurmd "$sc" node2
check "sc_start_slurmd: node2 back" sc_start_slurmd "$sc" node2
j=$(submit -J after-kill -w node2 --wrap true)
check "a job on node2 after its restart completes" sc_wait_job "$j" COMPLETED 60
j=$(submit -J held --hold --wrap "echo ok > $out/held.ok")
check "sc_restart_ctld" sc_restart_ctld "$sc"
check "the held job survives the restart" sc_wait_job "$j" PENDING 10
scontrol release "$j"
check "and runs once released" sc_wait_job "$j" COMPLETED 60
check "its output arrives" grep -qx ok "$out/held.ok"

# A node lost whole (slurmd and its job at once): slurmctld marks it
# down (SlurmdTimeout) and the job NODE_FAIL, never COMPLETED; started
# again, the node takes jobs (ReturnToService=2).
j=$(submit -J lost -w node1 --no-requeue --wrap "echo \$\$ > $out/lost.pid; exec sleep 300")
sc_wait_job "$j" RUNNING 60
i=0
while [ ! -s "$out/lost.pid" ] && [ "$i" -lt 100 ]; do i=$((i + 1)); sleep 0.1; done
t2=$(date +%s)
check "sc_kill_node: node1's slurmd and its job killed" sc_kill_node "$sc" node1
pid=$(cat "$out/lost.pid")
i=0
while [ -d "/proc/$pid" ] && [ "$i" -lt 50 ]; do i=$((i + 1)); sleep 0.1; done
check "the job's process is gone" test -n "$pid" -a ! -d "/proc/$pid"
check "the lost job ends NODE_FAIL" sc_wait_job "$j" NODE_FAIL 60
echo "# NODE_FAIL $(($(date +%s) - t2)) s after the node's loss"
check "sc_start_slurmd: node1 back" sc_start_slurmd "$sc" node1
check "both nodes idle again" sc_wait_idle "$sc" 30
j=$(submit -J after-loss -w node1 --wrap true)
check "a job on node1 after its loss completes" sc_wait_job "$j" COMPLETED 60

t1=$(date +%s)
check "sc_stop" sc_stop "$sc"
check "no process of the cluster is left" test -z "$(sc_pids "$sc")"
echo "# the cluster stopped in $(($(date +%s) - t1)) s; the test took $(($(date +%s) - t0)) s"
tap_end
