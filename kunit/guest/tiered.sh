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
#   balancing promoting back) with hung-task detection at 20 s;
# then, with the test migrator, the reasons control: the reasons left out
# keep their migrations on the CPU. tier_test checks bytes, nodes and the
# vmstat counters of each path.
#
# tiered.sh [CASES [MIGRATORS]]: only the cases (comma-separated: demote,
# promote, compact, cold, storm, reasons) and migrators (none, test, dcbm,
# mtcopy) named, for development; everything by default.
TEST_PREFIX=tier
CASES=,${1:-demote,promote,compact,cold,storm,reasons},
MIGRATORS=${2:-none,test,dcbm,mtcopy}
CTL=/sys/kernel/mm/migrate_offload
NB=/sys/kernel/debug/sched/numa_balancing
. /tests/testlib.sh

# The HMAT made node 1 a lower memory tier than node 0, and node 0 demotes
# to it.
tiers() {
	t0= t1=
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
check tier_node1_lower tiers || exit 0

mkdir -p /sys/fs/cgroup
mount -t cgroup2 cgroup2 /sys/fs/cgroup || { fail tier_cgroup "mount cgroup2"; exit 0; }
echo +memory >/sys/fs/cgroup/cgroup.subtree_control
mkdir -p /sys/fs/cgroup/tier
echo true >/sys/kernel/mm/numa/demotion_enabled
echo 20 >/proc/sys/kernel/hung_task_timeout_secs
# NUMA balancing's scanner as fast as TCG allows: no delay after exec,
# rescans every 100 ms of CPU time, and a hinting fault within 10 s of the
# scan counts as hot (the default second is less than TCG needs).
echo 0 >$NB/scan_delay_ms
echo 100 >$NB/scan_period_min_ms
echo 200 >$NB/scan_period_max_ms
echo 10000 >$NB/hot_threshold_ms

promoting() { echo "$1" >/proc/sys/kernel/numa_balancing; }

want() { case $CASES in *,$1,*) return 0 ;; esac; return 1; }

# run_paths MIGRATOR EXPECT [STORM_EXPECT]: every path once; EXPECT is
# what each deterministic case must show of the offload (cpu or offload),
# the storm expects "some" with a migrator (its batches contend for it).
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
	if want promote; then
		promoting 2
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
	# Four writers of 320 MiB: more than node 0 has free.
	if want storm; then
		promoting 2
		guest_run tier_test "tier_${m}_storm_4k" storm 4 327680 "$storm_exp" 4 20
		guest_run tier_test "tier_${m}_storm_2048k" storm 2048 327680 "$storm_exp" 4 20
		promoting 0
	fi
}

# dcbm in reclaim and fault context with an engine that fails every
# descriptor (the CPU copies every batch again, nothing lost), and with
# engines that complete descriptors from tx_submit(), inside it, and in
# hard-irq context.
dcbm_engines() {
	sw=/sys/kernel/debug/swdma
	if want demote; then
		echo 1 >$sw/fail_every
		guest_run tier_test tier_dcbm_failing_demote_4k demote 4 65536 fallback
		guest_run tier_test tier_dcbm_failing_demote_2048k demote 2048 65536 fallback
		echo 0 >$sw/fail_every
		for start in submit sync irq; do
			echo $start >$sw/start
			guest_run tier_test "tier_dcbm_${start}_demote_4k" demote 4 65536 offload
		done
		echo issue >$sw/start
	fi
	if want promote; then
		promoting 2
		echo 1 >$sw/fail_every
		guest_run tier_test tier_dcbm_failing_promote_4k promote 4 16384 fallback
		echo 0 >$sw/fail_every
		echo irq >$sw/start
		guest_run tier_test tier_dcbm_irq_promote_4k promote 4 16384 offload
		echo issue >$sw/start
		promoting 0
	fi
}

for m in $(echo "$MIGRATORS" | tr , ' '); do
	if [ "$m" = none ]; then
		run_paths none cpu
		continue
	fi
	migrator_load "$m" || continue
	run_paths "$m" offload some
	[ "$m" = dcbm ] && dcbm_engines
	migrator_unload "$m"
done

# The reasons control: with demotion, numa_misplaced, compaction and damon
# left out, their migrations stay on the CPU, the registered migrator
# notwithstanding; put back, they are offloaded again.
if want reasons && migrator_load test; then
	echo "syscall_or_cpuset mempolicy_mbind" >$CTL/reasons
	guest_run tier_test tier_reasons_no_demotion demote 4 65536 cpu
	promoting 2
	guest_run tier_test tier_reasons_no_numa_misplaced promote 4 16384 cpu
	promoting 0
	guest_run tier_test tier_reasons_no_compaction compact 4 1048576 cpu
	guest_run tier_test tier_reasons_no_damon cold 4 32768 cpu
	echo "demotion" >$CTL/reasons
	guest_run tier_test tier_reasons_demotion_only demote 4 65536 offload
	guest_run tier_test tier_reasons_demotion_only_compaction compact 4 1048576 cpu
	echo "compaction memory_hotplug syscall_or_cpuset mempolicy_mbind numa_misplaced longterm_pin demotion damon" >$CTL/reasons
	migrator_unload test
fi
