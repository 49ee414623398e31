#!/bin/sh
# The Slurm executor ([build] executor = slurm) on the private cluster of
# tests/slurmcluster.sh: two nodes that cannot see zeroday's state
# directory. zeroday run builds every job through Slurm and reaches the
# verdicts and findings of a local run; each build is a Slurm job of its
# tree and target's name, run by `zeroday node-build` on a node; results
# come back through the spool and its directory is emptied. Then the
# faults, each against a tree whose build takes a while, each ending with
# the verdict of an undisturbed run and nothing cluster-made stored as a
# build: scancel from outside, a node lost whole mid-build, slurmd killed
# with -9 mid-build, slurmctld stopped while the build ends (and the
# outputs deleted meanwhile), and zeroday killed right after sbatch or
# while it waits (the job adopted after a restart, never submitted twice).
# Needs root and Debian's slurmctld, slurmd, slurm-client and munge.
# Speaks TAP.
test_name=slurm-build
. "$ZERODAY_SRCDIR/tests/lib.sh"
. "$ZERODAY_SRCDIR/tests/slurmcluster.sh"

sc_tap_skip

sc="$scratch/sc"
states="$scratch/states"
spool="$scratch/spool"
mkdir -p "$states" "$spool"
zpid=
trap '[ -z "$zpid" ] || kill -9 "$zpid" 2>/dev/null; sc_stop "$sc"; cleanup' EXIT
if ! sc_start "$sc" "$states"; then
	not_ok "the cluster starts"
	tap_end
fi
ok "the cluster starts, zeroday's state directories hidden from its nodes"

# The history: a root with an old warning, a new warning ($warn), an
# innocent change, and an error under defconfig ($err).
kb="$scratch/kb"
kbuild_history "$kb"

# A tree of one commit that takes about $slow seconds to build: time for
# a fault to strike mid-build.
slow=20
sl="$scratch/sl"
kbuild_repo "$sl" root
# (a goal of its own, so that a warm build directory waits too).
printf 'all: pause\npause:\n\t@sleep %s\n.PHONY: pause\n' "$slow" >> "$sl/Makefile"
git -C "$sl" commit -q --amend -am "a root that links slowly"

local_conf="$scratch/local.conf"
slurm_conf="$scratch/slurm.conf"
printf '[zeroday]\nworkers = 2\n[git]\nallow-local-trees = true\n' > "$local_conf"
cat > "$slurm_conf" <<EOF
[zeroday]
workers = 2
[git]
allow-local-trees = true
[build]
executor = slurm
jobs = 1
[slurm]
spool = $spool
node-root = $scratch/nodes/%h
poll = 1
EOF

z() { conf=$1 state=$2; shift 2; "$ZERODAY" --config="$conf" --state-dir="$state" "$@"; }
setup() { # setup CONF STATE TREE REPO
	z "$1" "$2" init > /dev/null && z "$1" "$2" tree add "$3" "$4" master \
		--target x86_64:defconfig > /dev/null
}
results() { sqlite3 "$1/zeroday.db" "SELECT commit_id, target, result FROM jobs ORDER BY commit_id"; }
findings() {
	sqlite3 "$1/zeroday.db" "SELECT culprit, kind, fingerprint FROM findings ORDER BY 1, 2, 3"
}
# Builds the store holds that are not the code's: none may be kept.
cluster_made() { sqlite3 "$1/zeroday.db" "SELECT count(*) FROM builds WHERE status = 'infra'"; }
# slurm_jobs NAME: the finished Slurm jobs of NAME, as "state node" lines.
slurm_jobs() {
	sed -n "s/^JobId=[0-9]* .* Name=$1 JobState=\([A-Z_]*\) .* NodeList=\([^ ]*\) .*/\1 \2/p" \
		"$SC_JOBCOMP"
}
# running NAME [SECONDS]: waits until a job of NAME runs; its id on stdout.
running() {
	i=0
	while [ "$i" -lt "${2:-60}" ]; do
		j=$(squeue -h -n "$1" -t RUNNING -o %i 2>/dev/null | head -1)
		[ -n "$j" ] && { echo "$j"; return 0; }
		sleep 1
		i=$((i + 1))
	done
	return 1
}
# done_jobs STATE: how many of the state's jobs are done.
done_jobs() { sqlite3 "$1/zeroday.db" "SELECT count(*) FROM jobs WHERE state = 'done'"; }
# wait_done STATE N SECONDS: until N jobs are done.
wait_done() {
	i=0
	while [ "$i" -lt "$3" ]; do
		[ "$(done_jobs "$1")" -ge "$2" ] && return 0
		sleep 1
		i=$((i + 1))
	done
	return 1
}

# why STATE LOG...: '# ' lines explaining a failed check: the state's
# jobs and builds, the cluster's jobs of the slow tree, and the tail of
# each LOG.
why() {
	sqlite3 "$1/zeroday.db" "SELECT id, state, result, attempts, failures, not_before,
		last_error FROM jobs" 2>&1 | sed 's/^/# job: /'
	sqlite3 "$1/zeroday.db" "SELECT id, status, reason, seconds, (SELECT count(*)
		FROM diagnostics d WHERE d.build_id = b.id) || ' diagnostics', log_path
		FROM builds b" 2>&1 | sed 's/^/# build: /'
	echo "# the queue: $(squeue -h -t all -n "$slname" -o '%i %T %N %k' 2>&1 | tr '\n' ';')"
	shift
	for l; do
		echo "# --- the tail of $l:"
		tail -n 15 "$l" 2>&1 | sed 's/^/# /'
	done
}
# verdict_check STATE WHAT LOG...: the check that STATE's verdict is an
# undisturbed run's; on failure both verdicts and why() STATE LOG...
verdict_check() {
	results "$1" > "$1.results"
	if cmp -s "$1.results" "$scratch/sl.results"; then
		ok "$2: the verdict is an undisturbed run's"
		return
	fi
	not_ok "$2: the verdict is an undisturbed run's"
	echo "# undisturbed: $(tr '\n' ' ' < "$scratch/sl.results")"
	echo "# this run:    $(tr '\n' ' ' < "$1.results")"
	st=$1
	shift 2
	why "$st" "$@"
}
# grep_check WHAT PATTERN STATE LOG...: the check that LOG holds PATTERN;
# on failure why() STATE LOG...
grep_check() {
	if grep -q "$2" "$4"; then
		ok "$1"
		return
	fi
	not_ok "$1"
	echo "# no line of $4 matches '$2'"
	shift 2
	why "$@"
}
slname="zd-sl-x86_64_defconfig"
# jobs_check WHAT BEFORE: the check that one Slurm job of the slow tree
# ended since BEFORE were counted; on failure the ones that did.
jobs_check() {
	if [ "$(slurm_jobs "$slname" | wc -l)" -eq $(($2 + 1)) ]; then
		ok "$1: one Slurm job for the build, not two"
		return
	fi
	not_ok "$1: one Slurm job for the build, not two"
	echo "# $slname: $2 jobs ended before, now: $(slurm_jobs "$slname" | tr '\n' ';')"
	echo "# the queue: $(squeue -h -t all -n "$slname" -o '%i %T %N %k' | tr '\n' ';')"
}
# fresh_spool WHAT: before a section of its own: the slow tree's Slurm
# jobs and spool directories a section before left (after a failure of
# its own) are said, cancelled and removed, so that this section's
# zeroday cannot take them for its own and fail for another's fault.
fresh_spool() {
	left=$(squeue -h -n "$slname" -o %i | tr '\n' ' ')
	dirs=$(ls -A "$spool/jobs/sl/x86_64_defconfig" 2>/dev/null | tr '\n' ' ')
	[ -z "$left$dirs" ] && return 0
	echo "# $1: left by a section before: Slurm jobs '$left', job directories '$dirs'; removed"
	# shellcheck disable=SC2086
	[ -z "$left" ] || scancel $left
	i=0
	while [ -n "$(squeue -h -n "$slname" -o %i)" ] && [ "$i" -lt 60 ]; do
		sleep 1
		i=$((i + 1))
	done
	rm -rf "$spool/jobs/sl"
}

# The undisturbed runs, local and on the cluster.
setup "$local_conf" "$states/local" kb "$kb"
check "a local run builds the history" z "$local_conf" "$states/local" run --once \
	--poll-interval 3600
results "$states/local" > "$scratch/local.results"
findings "$states/local" > "$scratch/local.findings"
check "the local run found the warning and the error" test "$(wc -l < "$scratch/local.findings")" -eq 2

setup "$slurm_conf" "$states/kb" kb "$kb"
t0=$(date +%s)
check "a run on the Slurm executor builds the history" z "$slurm_conf" "$states/kb" run --once \
	--poll-interval 3600 --retry-delay 1
echo "# the history on the cluster: $(($(date +%s) - t0)) s"
results "$states/kb" > "$scratch/kb.results"
findings "$states/kb" > "$scratch/kb.findings"
check "every job's verdict is the local run's" cmp -s "$scratch/local.results" "$scratch/kb.results"
check "the findings are the local run's" cmp -s "$scratch/local.findings" "$scratch/kb.findings"
check "the warning's culprit" grep -q "^$warn|build-warning|" "$scratch/kb.findings"
check "the error's culprit" grep -q "^$err|build-error|" "$scratch/kb.findings"
name="zd-kb-x86_64_defconfig"
slurm_jobs "$name" > "$scratch/kb.jobs"
check "each of the 4 builds was a Slurm job of the tree and target's name" \
	test "$(grep -c '^COMPLETED node[12]$' "$scratch/kb.jobs")" -eq 4
check "no other Slurm job ran" test "$(wc -l < "$scratch/kb.jobs")" -eq 4
check "the builds' logs came back into the state directory" \
	test "$(find "$states/kb/logs/build/kb" -name '*.log' | wc -l)" -eq 4
check "the diagnostics came back (the warning's file and line)" \
	sqlite3 "$states/kb/zeroday.db" \
	"SELECT 1 FROM diagnostics WHERE file = 'src/net.c' AND line > 0 LIMIT 1" | grep -qx 1
check "the spool keeps no job's directory" test -z "$(ls -A "$spool/jobs/kb/x86_64_defconfig" 2>/dev/null)"
check "the warm node is remembered" grep -qx 'node[12]' "$spool/warm/kb/x86_64_defconfig"
warm=$(cat "$spool/warm/kb/x86_64_defconfig")
check "the nodes built in their own roots" test -d "$scratch/nodes/$warm/build/kb/x86_64_defconfig"
z "$slurm_conf" "$states/kb" run --once --poll-interval 3600 > /dev/null 2>&1
check "a second run submits nothing: the builds are stored" \
	test "$(slurm_jobs "$name" | wc -l)" -eq 4
check "the nodes share the tree's compiler cache on the spool" \
	test -n "$(find "$spool/ccache/kb" -type f 2>/dev/null | head -1)"

# A commit built alone (the root of $sl) with a fault mid-build; the
# verdict must be the undisturbed one, nothing stored as infra.
setup "$slurm_conf" "$states/sl" sl "$sl"
check "the slow tree, undisturbed" z "$slurm_conf" "$states/sl" run --once --poll-interval 3600
results "$states/sl" > "$scratch/sl.results"
check "the slow tree: one job, one verdict" test "$(wc -l < "$scratch/sl.results")" -eq 1
# fault_setup STATE: a state with the slow tree, and zeroday run started
# in the background (its pid in $zpid, its log STATE.log).
fault_setup() {
	fresh_spool "$(basename "$1")"
	setup "$slurm_conf" "$1" sl "$sl"
	# Not through z(): $! must be zeroday's own pid, for the signals.
	"$ZERODAY" --config="$slurm_conf" --state-dir="$1" run --poll-interval 3600 \
		--retry-delay 1 > "$1.log" 2>&1 &
	zpid=$!
}
# fault_end STATE WHAT: waits for the job, stops zeroday, checks the verdict.
fault_end() {
	if wait_done "$1" 1 240; then
		ok "$2: the job ends"
	else
		not_ok "$2: the job ends"
		why "$1" "$1.log"
	fi
	kill "$zpid" 2>/dev/null
	wait "$zpid" 2>/dev/null
	verdict_check "$1" "$2" "$1.log"
	check "$2: nothing the cluster did is stored as a build" test "$(cluster_made "$1")" -eq 0
}

# scancel from outside.
fault_setup "$states/cancel"
if j=$(running "$slname"); then
	z "$slurm_conf" "$states/cancel" status > "$scratch/cancel.status"
	check "status shows the cluster's build: its job, node and age" \
		grep -q "^  slurm job $j $slname: RUNNING on node[12], since [0-9]*s ago\$" \
		"$scratch/cancel.status"
	check "status counts it" grep -q '^Cluster: 0 queued, 1 running$' "$scratch/cancel.status"
	scancel "$j"
	ok "scancel: the build's job $j was running"
	fault_end "$states/cancel" "scancel"
	check "scancel: zeroday saw it as an infra-error and retried" \
		grep -q "infra-error: Slurm job $j .* ended CANCELLED" "$states/cancel.log"
else
	not_ok "scancel: the build's job runs"
	kill "$zpid"
fi

# A node lost whole (slurmd, its job and all) mid-build: NODE_FAIL, built again elsewhere.
fault_setup "$states/nodefail"
if j=$(running "$slname"); then
	lost=$(squeue -h -j "$j" -o %N)
	sc_kill_node "$sc" "$lost"
	ok "node lost: $lost, running job $j, powered off"
	fault_end "$states/nodefail" "node lost"
	check "node lost: an infra-error named the job's end" \
		grep -q "infra-error: Slurm job $j .* ended NODE_FAIL" "$states/nodefail.log"
	sc_start_slurmd "$sc" "$lost"
	check "node lost: the node is back" sc_wait_idle "$sc" 60
else
	not_ok "node lost: the build's job runs"
	kill "$zpid"
fi

# slurmd killed with -9 mid-build: the job's slurmstepd goes on; once
# slurmd is back, the job ends as it would have.
fault_setup "$states/slurmd"
if j=$(running "$slname"); then
	on=$(squeue -h -j "$j" -o %N)
	sc_kill_slurmd "$sc" "$on" KILL
	ok "slurmd -9: slurmd of $on killed while job $j runs"
	sleep 3
	sc_start_slurmd "$sc" "$on"
	fault_end "$states/slurmd" "slurmd -9"
else
	not_ok "slurmd -9: the build's job runs"
	kill "$zpid"
fi

# slurmctld stopped while the build ends: zeroday waits, and says so;
# meanwhile the build's outputs are deleted from the spool. Once
# slurmctld is back, the result is refused (its log is gone), and the
# build done again gives the undisturbed verdict.
fault_setup "$states/ctld"
if j=$(running "$slname"); then
	sc_stop_ctld "$sc"
	ok "slurmctld stopped while job $j runs"
	jobdir=$(find "$spool/jobs/sl" -mindepth 2 -maxdepth 2 -type d | head -1)
	i=0
	while [ ! -f "$jobdir/result.json" ] && [ "$i" -lt 120 ]; do sleep 1; i=$((i + 1)); done
	check "slurmctld down: the node finished the build all the same" test -f "$jobdir/result.json"
	rm -f "$jobdir"/out/*.log
	i=0
	while ! grep -q "Slurm does not answer about job $j" "$states/ctld.log" && [ "$i" -lt 60 ]; do
		sleep 1
		i=$((i + 1))
	done
	grep_check "slurmctld down: zeroday waits, and says why" \
		"Slurm does not answer about job $j" "$states/ctld" "$states/ctld.log"
	check "slurmctld down: zeroday still runs" kill -0 "$zpid"
	sc_start_ctld "$sc"
	fault_end "$states/ctld" "slurmctld down, outputs deleted"
	grep_check "outputs deleted: the result was refused as an infra-error" \
		"infra-error\|the node's result in" "$states/ctld" "$states/ctld.log"
else
	not_ok "slurmctld down: the build's job runs"
	kill "$zpid"
fi

# zeroday stopped (SIGTERM) while its build runs: it stops at once, the
# job goes on, and the next start takes it over.
fault_setup "$states/term"
if j=$(running "$slname"); then
	kill -TERM "$zpid"
	i=0
	while kill -0 "$zpid" 2>/dev/null && [ "$i" -lt 20 ]; do sleep 1; i=$((i + 1)); done
	check "SIGTERM: zeroday stops without waiting for the build" test "$i" -lt 20
	check "SIGTERM: it says the job goes on" grep -q "Slurm job $j .* goes on" "$states/term.log"
	check "SIGTERM: the job goes on" test -n "$(squeue -h -j "$j" -o %i 2>/dev/null)"
	before=$(slurm_jobs "$slname" | wc -l)
	z "$slurm_conf" "$states/term" run --once --poll-interval 3600 --retry-delay 1 \
		> "$states/term2.log" 2>&1
	grep_check "SIGTERM: the next start took the job over" "Slurm job $j adopted" \
		"$states/term" "$states/term2.log" "$states/term.log"
	verdict_check "$states/term" "SIGTERM" "$states/term2.log"
	jobs_check "SIGTERM" "$before"
else
	not_ok "SIGTERM: the build's job runs"
	kill "$zpid"
fi
zpid=

# zeroday killed right after sbatch (before it kept the job's id), and
# while it waits: after a restart the job is adopted, not submitted again.
for step in slurm-submitted slurm-recorded; do
	st="$states/$step"
	fresh_spool "$step"
	setup "$slurm_conf" "$st" sl "$sl"
	before=$(slurm_jobs "$slname" | wc -l)
	ZERODAY_TEST_CRASH=$step z "$slurm_conf" "$st" run --once --poll-interval 3600 \
		> "$st.crash.log" 2>&1
	grep_check "$step: zeroday was killed there" "killed at step '$step'" "$st" "$st.crash.log"
	check "$step: its job runs on" test -n "$(squeue -h -n "$slname" -o %i)"
	echo "# the queue: $(squeue -h -t all -n "$slname" -o '%i %T %k' | tr '\n' ';')"
	z "$slurm_conf" "$st" run --once --poll-interval 3600 --retry-delay 1 > "$st.log" 2>&1
	grep_check "$step: after a restart the job was adopted" "adopted" "$st" "$st.log"
	verdict_check "$st" "$step" "$st.log"
	jobs_check "$step" "$before"
done

check "each tree's compiler cache is its own: one directory a tree" \
	test "$(ls "$spool/ccache" | tr '\n' ' ')" = "kb sl "

# A tree removed while its build runs: the next poll cancels its job and
# empties its directories in the spool; zeroday goes on.
st="$states/rm"
setup "$slurm_conf" "$st" gone "$sl"
"$ZERODAY" --config="$slurm_conf" --state-dir="$st" run --poll-interval 2 > "$st.log" 2>&1 &
zpid=$!
if j=$(running zd-gone-x86_64_defconfig); then
	check "tree removed: tree rm while its build runs" z "$slurm_conf" "$st" tree rm gone
	i=0
	while [ -n "$(squeue -h -j "$j" -o %i 2>/dev/null)" ] && [ "$i" -lt 30 ]; do
		sleep 1
		i=$((i + 1))
	done
	check "tree removed: its Slurm job was cancelled" \
		sh -c "scontrol -o show job $j | grep -q ' JobState=CANCELLED '"
	check "tree removed: zeroday said why" \
		grep -q "slurm: the jobs of gone cancelled (1): the tree was removed" "$st.log"
	check "tree removed: its jobs' directories are gone from the spool" test ! -e "$spool/jobs/gone"
	check "tree removed: zeroday runs on" kill -0 "$zpid"
else
	not_ok "tree removed: the build's job runs"
fi
kill "$zpid" 2>/dev/null
wait "$zpid" 2>/dev/null
zpid=

# Two targets of one head on one node: they share the node's checkout of
# the commit and build at once, each in its own O= directory.
st="$states/two"
sed 's/^poll = 1$/poll = 1\npartition = node1/' "$slurm_conf" > "$scratch/node1.conf"
z "$scratch/node1.conf" "$st" init > /dev/null
z "$scratch/node1.conf" "$st" tree add two "$sl" master --target x86_64:defconfig \
	--target x86_64:allnoconfig > /dev/null
check "one node, two targets: both built" \
	z "$scratch/node1.conf" "$st" run --once --poll-interval 3600
check "one node, two targets: each verdict an undisturbed run's" \
	test "$(results "$st" | cut -d'|' -f3 | sort -u)" = "$(cut -d'|' -f3 "$scratch/sl.results")"
check "one node, two targets: both ran on node1" \
	test "$(slurm_jobs 'zd-two-x86_64_[a-z]*config' | sort -u)" = "COMPLETED node1"
# The two builds' own spans (a build's end, less its seconds): they
# overlap by more than a few seconds when neither waited for the other's
# checkout (each sleeps $slow s).
overlap=$(sqlite3 "$st/zeroday.db" "SELECT count(*) FROM builds a JOIN builds b ON a.id < b.id
	WHERE a.created - a.seconds + 5 < b.created AND b.created - b.seconds + 5 < a.created")
sqlite3 "$st/zeroday.db" "SELECT target, created - seconds, created FROM builds" | sed 's/^/# build /'
check "one node, two targets: built at once, in one checkout" test "$overlap" -eq 1

tap_end
