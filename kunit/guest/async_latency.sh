#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# A caller of page migration that must not block (MIGRATE_ASYNC) never
# waits for a copy-offload migrator longer than MIGRATE_OFFLOAD_ASYNC_WAIT_MS
# (10 ms), plus the migrator's terminate and the CPU's copy of the batch.
# dcbm registers with MIGRATOR_ASYNC (effective_async reads 1): for such a
# batch it waits at most 10 ms for the engine, then terminates its channels
# and the migration core copies the batch with the CPU. Here swdma holds
# every descriptor 20 s and dcbm's timeout is 10 s, so that each batch
# dcbm is given times out: a caller that waited dcbm's timeout would wait
# 10 s per batch. async_latency_test times every operation of two such
# callers, each of which must take less than 2 s, checks that the path ran
# (its vmstat counters, dcbm's nonblocking and timeouts, the CPU's fallback
# copies) and compares every byte:
#   numa     NUMA hinting faults (NUMA balancing on, a fast scanner), each
#            migrating one folio from node 1 to node 0;
#   compact  THP faults (enabled and defrag "always", the VMA not madvised)
#            on a fragmented node 0, entering async direct compaction.
# Every batch reaches dcbm (min_batch_bytes 0), nothing else competes for
# it or compacts (proactive compaction, watermark boosting and khugepaged's
# compaction off), and every control is put back; then both modules must
# unload.
P=async_latency
TEST_PREFIX=$P
CTL=/sys/kernel/mm/migrate_offload
D=/sys/kernel/debug/dcbm
S=/sys/kernel/debug/swdma
NB=/sys/kernel/debug/sched/numa_balancing
THP=/sys/kernel/mm/transparent_hugepage
DMA_API=/sys/kernel/debug/dma-api
. /tests/testlib.sh

# knob FILE: FILE's value; of a selection ("always [madvise] never"), the
# selected word.
knob() {
	case $(cat "$1") in
	*"["*) sed 's/.*\[\([^]]*\)\].*/\1/' "$1" ;;
	*) cat "$1" ;;
	esac
}

# remember FILE: note FILE's value (once) for restore_knobs, which puts the
# files back newest first.
saved=
remember() {
	case " $saved " in
	*" $1="*) ;;
	*) saved="$1=$(knob "$1") $saved" ;;
	esac
}

# set_knob FILE VALUE: remember FILE, write VALUE and read it back (FAIL and
# status 1 if the kernel did not take it: a case run with the wrong setting
# proves nothing).
set_knob() {
	remember "$1"
	if echo "$2" >"$1" && [ "$(knob "$1")" = "$2" ]; then
		return 0
	fi
	fail ${P}_knob "$1 did not take '$2' (reads '$(knob "$1" 2>/dev/null)')"
	return 1
}

restore_knobs() {
	for kv in $saved; do
		f=${kv%%=*}
		v=${kv#*=}
		if ! echo "$v" >"$f" || [ "$(knob "$f")" != "$v" ]; then
			fail ${P}_restore "$f did not take back '$v' (reads '$(knob "$f" 2>/dev/null)')"
		fi
	done
	saved=
}

# No mapping of swdma's device is left after the terminated transfers, and
# DMA API debugging saw no misuse.
no_leaked_mappings() {
	left=$(grep -c ' swdma ' $DMA_API/dump)
	[ "$left" -eq 0 ] || { echo "$left DMA mappings of swdma left:"; grep ' swdma ' $DMA_API/dump | head -3; return 1; }
	expect_file $DMA_API/error_count 0
}

# dcbm is given the batches of callers that must not block, for both
# reasons the cases migrate for.
dcbm_takes_async() {
	expect_file $CTL/migrator dcbm || return 1
	expect_file $CTL/effective_async 1 || return 1
	for r in numa_misplaced compaction; do
		grep -qw $r $CTL/effective_reasons ||
			{ echo "effective_reasons is '$(cat $CTL/effective_reasons)', without $r"; return 1; }
	done
}

# THP faults of PMD size only, compacting directly (defrag "always"), and
# khugepaged not compacting (its defrag off: its allocations would compact
# in sync-light mode, waiting out dcbm's 10 s and holding its channels).
thp_for_compaction() {
	set_knob $THP/enabled always &&
		set_knob $THP/defrag always &&
		set_knob $THP/khugepaged/defrag 0 &&
		set_knob $THP/hugepages-2048kB/enabled inherit || return 1
	for f in $THP/hugepages-*kB/enabled; do
		[ "$f" = $THP/hugepages-2048kB/enabled ] && continue
		[ "$(knob "$f")" = never ] && continue
		# Sizes anonymous memory cannot use are read-only: leave them.
		old=$(knob "$f")
		echo never >"$f" 2>/dev/null || continue
		saved="$f=$old $saved"
	done
}

migrator_load dcbm || exit 1
# async_latency_test turns NUMA balancing on and puts it back; should it
# die first, this puts it back.
remember /proc/sys/kernel/numa_balancing
# Every batch to dcbm; each of its descriptors held past its timeout; no
# proactive compaction (kcompactd would compact in sync-light mode and
# hold dcbm's channels for 10 s a batch), no watermark boosting (which
# wakes kswapd and then kcompactd when the fill below steals pageblocks).
if set_knob $CTL/min_batch_bytes 0 &&
	set_knob $D/timeout_ms 10000 &&
	set_knob $S/delay_ms 20000 &&
	set_knob /proc/sys/vm/compaction_proactiveness 0 &&
	set_knob /proc/sys/vm/watermark_boost_factor 0; then
	if out=$(dcbm_takes_async 2>&1); then
		pass ${P}_dcbm_takes_async
		# NUMA balancing's scanner as fast as TCG allows: no delay after
		# exec, a rescan every 100-200 ms of CPU time, 256 MB (all of
		# the test's memory) a scan.
		set_knob $NB/scan_delay_ms 0 &&
			set_knob $NB/scan_period_min_ms 100 &&
			set_knob $NB/scan_period_max_ms 200 &&
			set_knob $NB/scan_size_mb 256 &&
			guest_run async_latency_test ${P}_numa_fault numa
		thp_for_compaction &&
			guest_run async_latency_test ${P}_thp_compaction compact
	else
		# The cases would only wait out dcbm's 10 s timeouts.
		fail ${P}_dcbm_takes_async "$(echo "$out" | tr '\n' ' ')"
	fi
fi
restore_knobs
check ${P}_no_leaked_mappings no_leaked_mappings
if ! rmmod dcbm; then
	fail ${P}_unload "rmmod dcbm failed"
elif ! rmmod swdma; then
	fail ${P}_unload "rmmod swdma failed"
else
	pass ${P}_unload
fi
