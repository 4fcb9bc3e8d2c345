#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# The copy offload on the paths a tiered-memory machine migrates by, in the
# guest of kunit/qemu-tiered.args (node 0: CPUs and 1 GiB; node 1: 2 GiB
# of slower, CPU-less memory, put in a lower tier by the ACPI HMAT): with no
# migrator, then with each migrator loaded (the test migrator, dcbm over
# swdma, mtcopy) -
#   demotion by a cgroup's memory.reclaim (fresh and aged memory, small
#   pages, mTHPs, THPs), promotion by NUMA balancing in tiering mode,
#   compaction of a fragmented node, DAMON's migrate_cold, and a storm of
#   writers over a full node 0 (kswapd and direct reclaim demoting, NUMA
#   balancing promoting back) with hung-task detection, the offload
#   narrowed to demotion so that its counters show reclaim's batches;
#   dcbm also with an engine failing every descriptor and in each swdma
#   start mode;
# then, with the test migrator, the reasons control: the reasons left out
# keep their migrations on the CPU, and put back they are offloaded again.
# tier_test checks bytes, nodes and the vmstat counters of each path.
#
# tiered.sh [CASES [MIGRATORS]]: only the cases (comma-separated: demote,
# promote, compact, cold, storm, reasons) and migrators (none, test, dcbm,
# mtcopy) named, for development; everything by default.
TEST_PREFIX=tier
CASES=,${1:-demote,promote,compact,cold,storm,reasons},
MIGRATORS=${2:-none,test,dcbm,mtcopy}
CTL=/sys/kernel/mm/migrate_offload
NB=/sys/kernel/debug/sched/numa_balancing
SW=/sys/kernel/debug/swdma
DCBM=/sys/kernel/debug/dcbm
. /tests/testlib.sh

want() { case $CASES in *,$1,*) return 0 ;; esac; return 1; }

# set_knob FILE VALUE: write VALUE and read it back (FAIL and status 1 if
# the kernel did not take it: a case run with the wrong setting proves
# nothing).
set_knob() {
	if echo "$2" >"$1" && [ "$(cat "$1")" = "$2" ]; then
		return 0
	fi
	fail "${TEST_PREFIX}_knob" "$1 did not take '$2' (reads '$(cat "$1" 2>/dev/null)')"
	return 1
}

# The HMAT made node 1 a lower memory tier than node 0, and node 0 demotes
# to it.
tiers() {
	t0='' t1=''
	for d in /sys/devices/virtual/memory_tiering/memory_tier*; do
		[ -e "$d/nodelist" ] || continue
		case $(cat "$d/nodelist") in
		0) t0=${d##*memory_tier} ;;
		1) t1=${d##*memory_tier} ;;
		*) echo "$d holds nodes $(cat "$d/nodelist")"; return 1 ;;
		esac
	done
	[ -n "$t0" ] && [ -n "$t1" ] || { echo "tiers: node 0 in '$t0', node 1 in '$t1'"; return 1; }
	[ "$t0" -lt "$t1" ] || { echo "node 0 is in tier $t0, node 1 in tier $t1"; return 1; }
	dmesg | grep -q "Demotion targets for Node 0: preferred: 1," ||
		{ echo "no demotion target for node 0: $(dmesg | grep 'Demotion targets')"; return 1; }
}
if out=$(tiers 2>&1); then
	pass tier_node1_lower
else
	fail tier_node1_lower "$(echo "$out" | tr '\n' ' ')"
	exit 0
fi

mkdir -p /sys/fs/cgroup
mount -t cgroup2 cgroup2 /sys/fs/cgroup || { fail tier_cgroup "mount cgroup2"; exit 0; }
echo +memory >/sys/fs/cgroup/cgroup.subtree_control
mkdir -p /sys/fs/cgroup/tier

# What the cases change, put back at the end. NUMA balancing boots on
# (mode 1) on a NUMA machine and kcompactd compacts proactively: both off
# but where a case asks for them, so that nothing else migrates the test's
# pages or competes for the migrator.
saved_nb=$(cat /proc/sys/kernel/numa_balancing)
saved_proactive=$(cat /proc/sys/vm/compaction_proactiveness)
saved_reasons=$(cat $CTL/reasons)
saved_demotion=$(cat /sys/kernel/mm/numa/demotion_enabled)
saved_hung=$(cat /proc/sys/kernel/hung_task_timeout_secs)
# The debug kernel (kmemleak is one of its options) is several times
# slower under TCG: its storms' writers get 10 minutes, not 2, to finish
# (hung tasks are reported after 30 s either way).
[ -e /sys/kernel/debug/kmemleak ] && export TIER_STORM_GRACE_S=600
saved_nb_knobs=
for k in scan_delay_ms scan_period_min_ms scan_period_max_ms hot_threshold_ms; do
	saved_nb_knobs="$saved_nb_knobs $k=$(cat $NB/$k)"
done
set_knob /proc/sys/kernel/numa_balancing 0 &&
	set_knob /proc/sys/vm/compaction_proactiveness 0 &&
	set_knob /sys/kernel/mm/numa/demotion_enabled true &&
	set_knob /proc/sys/kernel/hung_task_timeout_secs 30 &&
	# NUMA balancing's scanner as fast as TCG allows: no delay after exec,
	# rescans every 100-200 ms of CPU time, and a hinting fault within 10 s
	# of the scan counts as hot (the default second is less than TCG needs).
	set_knob $NB/scan_delay_ms 0 &&
	set_knob $NB/scan_period_min_ms 100 &&
	set_knob $NB/scan_period_max_ms 200 &&
	set_knob $NB/hot_threshold_ms 10000 || exit 0

promoting() { set_knob /proc/sys/kernel/numa_balancing "$1"; }

# dcbm's failures, timeouts and batches of callers that must not block
# (its busy declines are allowed).
dcbm_counts() {
	echo "$(stat $DCBM/stats failures) $(stat $DCBM/stats timeouts)" \
	     "$(stat $DCBM/stats nonblocking)"
}

# dcbm_check NAME BEFORE FAILURES: since BEFORE (dcbm_counts), dcbm's
# failures grew if FAILURES is "grow", else not; and it timed out only on
# batches of callers that must not block. Demotion is such a caller: dcbm
# waits at most 10 ms for its batches, and under a storm's load swdma's
# worker (a CPU copy, with the writers taking both CPUs) may not be done by
# then; the CPU copies those batches instead, which the storm's data checks
# cover. A batch of a caller that may block must never time out.
dcbm_check() {
	_name=$1 _want=$3
	# shellcheck disable=SC2046
	set -- $2 $(dcbm_counts)
	_f=$(($4 - $1)) _t=$(($5 - $2)) _nb=$(($6 - $3))
	_what="failures +$_f, timeouts +$_t, batches that must not block +$_nb"
	if [ "$_t" -gt "$_nb" ]; then
		fail "$_name" "a batch that may block timed out: $_what"
	elif [ "$_want" = grow ] && [ "$_f" -le 0 ]; then
		fail "$_name" "the failing engine failed no transfer: $_what"
	elif [ "$_want" != grow ] && [ "$_f" -ne 0 ]; then
		fail "$_name" "dcbm failed transfers: $_what"
	else
		pass "$_name ($_what)"
	fi
}

# dcbm_storm NAME EXPECT FAILURES: a 4K storm through dcbm, then
# dcbm_check.
dcbm_storm() {
	_before=$(dcbm_counts)
	storm "$1" 4 "$2"
	dcbm_check "${1}_dcbm_errors" "$_before" "$3"
}

# storm NAME FOLIO_KB EXPECT: four writers of 320 MiB (more than node 0
# has free) for 20 s, NUMA balancing promoting.
storm() {
	promoting 2 && guest_run tier_test "$1" storm "$2" 327680 "$3" 4 20
	promoting 0
}

# run_paths MIGRATOR EXPECT [STORM_EXPECT]: every path once; EXPECT is
# what each deterministic case must show of the offload (cpu, offload, or
# declined for dcbm), the storm STORM_EXPECT ("some" for dcbm, which
# declines a batch while another holds its channels).
run_paths() {
	m=$1
	exp=$2
	storm_exp=${3:-$2}
	if want demote; then
		for kb in 4 64 2048; do
			guest_run tier_test "tier_${m}_demote_${kb}k" demote $kb 65536 "$exp"
		done
		guest_run tier_test "tier_${m}_demote_aged_4k" demote 4 65536 "$exp" aged
		guest_run tier_test "tier_${m}_demote_aged_2048k" demote 2048 65536 "$exp" aged
	fi
	if want promote && promoting 2; then
		guest_run tier_test "tier_${m}_promote_4k" promote 4 16384 "$exp"
		guest_run tier_test "tier_${m}_promote_2048k" promote 2048 32768 "$exp"
		promoting 0
	fi
	# Half of node 1, every other page freed.
	want compact && guest_run tier_test "tier_${m}_compact_4k" compact 4 1048576 "$exp"
	if want cold; then
		guest_run tier_test "tier_${m}_damon_cold_4k" cold 4 32768 "$exp"
		guest_run tier_test "tier_${m}_damon_cold_2048k" cold 2048 32768 "$exp"
	fi
	# The offload narrowed to demotion: every batch the migrator gets is
	# reclaim's (kswapd's or a task's in direct reclaim).
	if want storm; then
		[ "$m" = none ] || set_knob $CTL/reasons demotion || return
		[ "$m" = dcbm ] && before=$(dcbm_counts)
		storm "tier_${m}_storm_4k" 4 "$storm_exp"
		storm "tier_${m}_storm_2048k" 2048 "$storm_exp"
		if [ "$m" = dcbm ]; then
			dcbm_check tier_dcbm_storm_no_errors "$before" none
		fi
		set_knob $CTL/reasons "$saved_reasons"
	fi
}

# dcbm in reclaim and fault context with an engine that fails every
# descriptor (the CPU copies every batch again, nothing lost), and with
# engines that complete descriptors from tx_submit(), inside it, and in
# hard-irq context - the storm too, with the failing engine and with
# hard-irq completions while kswapd waits.
swdma_start() {
	echo "$1" >$SW/start && grep -q "\[$1\]" $SW/start && return 0
	fail "tier_dcbm_start_$1" "swdma did not take start mode $1: $(cat $SW/start)"
	return 1
}

dcbm_engines() {
	if want demote; then
		if set_knob $SW/fail_every 1; then
			guest_run tier_test tier_dcbm_failing_demote_4k demote 4 65536 fallback
			guest_run tier_test tier_dcbm_failing_demote_2048k demote 2048 65536 fallback
		fi
		set_knob $SW/fail_every 0
		for start in submit sync irq; do
			before="$(dcbm_counts) $(stat $DCBM/stats busy)"
			swdma_start $start &&
				guest_run tier_test "tier_dcbm_${start}_demote_4k" demote 4 65536 declined
			# For the record, if a batch fell back: dcbm's failures,
			# timeouts, batches that must not block, and busy.
			echo "tier_dcbm_${start}_demote_4k: dcbm before: $before," \
				"after: $(dcbm_counts) $(stat $DCBM/stats busy)"
		done
		swdma_start issue
	fi
	if want promote && promoting 2; then
		set_knob $SW/fail_every 1 &&
			guest_run tier_test tier_dcbm_failing_promote_4k promote 4 16384 fallback
		set_knob $SW/fail_every 0
		swdma_start irq &&
			guest_run tier_test tier_dcbm_irq_promote_4k promote 4 16384 declined
		swdma_start issue
		promoting 0
	fi
	if want storm && set_knob $CTL/reasons demotion; then
		set_knob $SW/fail_every 1 && dcbm_storm tier_dcbm_failing_storm_4k fallback grow
		set_knob $SW/fail_every 0
		swdma_start irq && dcbm_storm tier_dcbm_irq_storm_4k some none
		swdma_start issue
		set_knob $CTL/reasons "$saved_reasons"
	fi
}

for m in $(echo "$MIGRATORS" | tr , ' '); do
	if [ "$m" = none ]; then
		run_paths none cpu
		continue
	fi
	migrator_load "$m" || continue
	case $m in
	dcbm)
		# dcbm declines a batch while another reclaimer's holds its
		# channels, and gives up after 10 ms on one that must not block:
		# such batches go to the CPU ("declined"); it must fail none.
		before=$(dcbm_counts)
		run_paths dcbm declined some
		dcbm_check tier_dcbm_paths_no_errors "$before" none
		dcbm_engines
		;;
	*) run_paths "$m" offload ;;
	esac
	migrator_unload "$m"
done

# The reasons control: with demotion, numa_misplaced, compaction and damon
# left out, their migrations stay on the CPU, the registered migrator
# notwithstanding; with demotion alone, only demotion is offloaded; put
# back, every path is offloaded again.
if want reasons && migrator_load test; then
	if set_knob $CTL/reasons "syscall_or_cpuset mempolicy_mbind"; then
		guest_run tier_test tier_reasons_no_demotion demote 4 65536 cpu
		promoting 2 &&
			guest_run tier_test tier_reasons_no_numa_misplaced promote 4 16384 cpu
		promoting 0
		guest_run tier_test tier_reasons_no_compaction compact 4 1048576 cpu
		guest_run tier_test tier_reasons_no_damon cold 4 32768 cpu
	fi
	if set_knob $CTL/reasons demotion; then
		guest_run tier_test tier_reasons_demotion_only demote 4 65536 offload
		guest_run tier_test tier_reasons_demotion_only_compaction compact 4 1048576 cpu
		guest_run tier_test tier_reasons_demotion_only_damon cold 4 32768 cpu
	fi
	if set_knob $CTL/reasons "$saved_reasons"; then
		guest_run tier_test tier_reasons_restored_demotion demote 4 65536 offload
		promoting 2 &&
			guest_run tier_test tier_reasons_restored_numa_misplaced promote 4 16384 offload
		promoting 0
		guest_run tier_test tier_reasons_restored_compaction compact 4 1048576 offload
		guest_run tier_test tier_reasons_restored_damon cold 4 32768 offload
	fi
	migrator_unload test
fi

set_knob $CTL/reasons "$saved_reasons"
set_knob /proc/sys/vm/compaction_proactiveness "$saved_proactive"
set_knob /proc/sys/kernel/numa_balancing "$saved_nb"
set_knob /sys/kernel/mm/numa/demotion_enabled "$saved_demotion"
set_knob /proc/sys/kernel/hung_task_timeout_secs "$saved_hung"
for kv in $saved_nb_knobs; do
	set_knob "$NB/${kv%%=*}" "${kv#*=}"
done
