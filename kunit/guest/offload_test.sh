#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# Guest tests of the page-migration copy offload with the test migrator
# (mm/tests/migrate_offload_test_migrator.c): move_pages() of 4K, 16K, 64K
# and 2M folios from node 0 to node 1, with the migrator copying, failing
# part-way, failing at once and declining, and with the offload narrowed
# by reasons and min_batch_bytes. Every run compares every byte and checks
# every page's node (move_pages_test); the vmstat counters must say what
# the migrator did. A folio written after its batch copy, whose move is
# retried (eagain_test). Then the sysfs controls, and unloading the
# migrator while another process migrates in a loop.
MOD=migrate_offload_test_migrator
PARAMS=/sys/module/$MOD/parameters
CTL=/sys/kernel/mm/migrate_offload
SIZES="4 16 64 2048"
TOTAL_KB=8192
. /tests/testlib.sh

# Each folio size once with every migrator behaviour.
run_sizes() {
	for kb in $SIZES; do
		move_pages_test "offload_$1_${kb}k" "$kb" "$TOTAL_KB" "$2"
	done
}

DEFAULT_REASONS="compaction memory_hotplug syscall_or_cpuset mempolicy_mbind numa_misplaced longterm_pin demotion damon"
check offload_sysfs_reasons_default expect_file $CTL/reasons "$DEFAULT_REASONS"
check offload_sysfs_min_batch_bytes_default expect_file $CTL/min_batch_bytes auto

# The policy is the administrator's: set with no migrator registered, it
# holds when one registers (and, at the end, after it has gone).
policy_before_load() {
	echo "demotion syscall_or_cpuset" >$CTL/reasons || return 1
	echo 4194304 >$CTL/min_batch_bytes || return 1
	insmod /tests/$MOD.ko || { echo "insmod $MOD failed"; return 1; }
	expect_file $CTL/reasons "syscall_or_cpuset demotion" || return 1
	expect_file $CTL/min_batch_bytes 4194304
}
check offload_policy_before_load policy_before_load
grep -q "^$MOD " /proc/modules || { fail offload_load "$MOD is not loaded"; exit 1; }
# 2 MiB batches, below the administrator's minimum: nothing offloaded.
move_pages_test offload_admin_min_batch_2048k 2048 "$TOTAL_KB" none
echo auto >$CTL/min_batch_bytes
move_pages_test offload_admin_reasons_2048k 2048 "$TOTAL_KB" all
echo "$DEFAULT_REASONS" >$CTL/reasons
check offload_sysfs_migrator expect_file $CTL/migrator test
# memory_failure is supported, but only offloaded when asked for.
echo "memory_failure demotion" >$CTL/reasons
check offload_sysfs_reasons_memory_failure expect_file $CTL/reasons "memory_failure demotion"
echo all >$CTL/reasons

run_sizes copy all
echo 1 >$PARAMS/fail_after
run_sizes fail_after_1 one
echo 0 >$PARAMS/fail_after
run_sizes fail_at_once fallback
echo -1 >$PARAMS/fail_after
echo 1 >$PARAMS/decline
run_sizes decline fallback
echo 0 >$PARAMS/decline

# A writer holding a reference to a source folio after the migrator copied
# it (hold_ref): that folio's move fails with -EAGAIN, and the retry must
# copy it again, or what was written after the batch copy is lost
# (eagain_test). 8192 4K folios in one batch, so that the first pass of
# moves outlasts the reference and the retry runs in the same call; with
# larger folios the pass is too short (512 of 64K: the reference outlasts
# every retry, and the test would prove nothing). It fails on a kernel that
# keeps trusting the copy on the retry (checked: 5 of 5 runs). Only
# move_pages() is offloaded meanwhile, so that no other migration's batch
# takes the one-shot reference.
echo syscall_or_cpuset >$CTL/reasons
guest_run eagain_test offload_eagain_4k 4 8192
echo all >$CTL/reasons

# move_pages() migrates for MR_SYSCALL: not offloaded once that is left out.
echo "demotion numa_misplaced" >$CTL/reasons
check offload_sysfs_reasons_set expect_file $CTL/reasons "numa_misplaced demotion"
run_sizes reasons_exclude_syscall none
echo all >$CTL/reasons

# Batches here hold 2M (512 pages, or one THP): a smaller minimum
# offloads them all, a larger one none.
echo 65536 >$CTL/min_batch_bytes
run_sizes above_min_batch all
echo 4194304 >$CTL/min_batch_bytes
run_sizes below_min_batch none
echo 0 >$CTL/min_batch_bytes
move_pages_test offload_after_controls_2048k 2048 "$TOTAL_KB" all

# Bad writes fail and change nothing.
all_reasons=$(cat $CTL/reasons)
check offload_sysfs_reasons_unknown bad_write $CTL reasons "demotion bogus" "$all_reasons"
check offload_sysfs_reasons_empty bad_write $CTL reasons "" "$all_reasons"
check offload_sysfs_reasons_mixed bad_write $CTL reasons "all demotion" "$all_reasons"
check offload_sysfs_min_batch_bytes_bad bad_write $CTL min_batch_bytes "12abc" 0
check offload_sysfs_min_batch_bytes_max bad_write $CTL min_batch_bytes 18446744073709551615 0
echo auto >$CTL/min_batch_bytes
check offload_sysfs_migrator_ro bad_write $CTL migrator "other" test

# Registration does not pin the module: it unloads while another process
# keeps migrating through it (module_exit() unregisters, which waits for
# the copies in flight).
unload_under_load() {
	expect_file /sys/module/$MOD/refcnt 0 || return 1
	loop_start unload_loop
	sleep 2
	rmmod $MOD || { echo "rmmod failed while migrations ran"; loop_abort; return 1; }
	sleep 2
	loop_stop || return 1
	expect_file $CTL/migrator none
}
check offload_unload_under_load unload_under_load
# With no migrator, no batch is offloaded.
move_pages_test offload_unloaded_2048k 2048 "$TOTAL_KB" none
# The administrator's settings outlive the migrator.
echo demotion >$CTL/reasons
echo 65536 >$CTL/min_batch_bytes
if insmod /tests/$MOD.ko; then
	rmmod $MOD
	check offload_policy_after_unload expect_file $CTL/reasons demotion
	check offload_min_batch_after_unload expect_file $CTL/min_batch_bytes 65536
else
	fail offload_policy_reload "insmod $MOD failed"
fi
echo "$DEFAULT_REASONS" >$CTL/reasons
echo auto >$CTL/min_batch_bytes

# Two migrators ("test" and "test_b") registered in turn, as fast as the
# grace periods allow, while a process keeps migrating through them: every
# copy must be handed its own migrator and every byte must arrive. Then the
# module goes in the middle of it. (One migrating process: move_pages_test
# checks pgmigrate_success exactly, which a second one would disturb.)
flip_under_load() {
	insmod /tests/$MOD.ko flip=1 || { echo "insmod flip=1 failed"; return 1; }
	end=$(($(date +%s) + 10))
	while [ "$(date +%s)" -lt "$end" ]; do
		out=$(move_pages_test offload_flip_4k 4 4096 2>&1) ||
			{ echo "$out"; rmmod $MOD; return 1; }
	done
	flips=$(cat $PARAMS/flips)
	wrong=$(cat $PARAMS/wrong_migrator)
	copied=$(cat $PARAMS/copied)
	loop_start flip_unload_loop
	sleep 1
	rmmod $MOD || { echo "rmmod failed while migrations ran"; loop_abort; return 1; }
	loop_stop || return 1
	expect_file $CTL/migrator none || return 1
	[ "$wrong" = 0 ] || { echo "$wrong copies were handed another migrator"; return 1; }
	[ "$flips" -ge 20 ] || { echo "only $flips registrations in 10 s"; return 1; }
	[ "$copied" -gt 0 ] || { echo "no folio copied through the flipping migrators"; return 1; }
}
check offload_flip_under_load flip_under_load

# A module that goes away with its migrator registered, as one that leaked
# its registration would: the core unregisters it (with an error message)
# before the module's code is freed, and the next batches stay on the CPU.
# Without that, the next migration would call into freed module text.
leaked_registration() {
	log_mark "offload_test: leaked registration"
	insmod /tests/$MOD.ko leak=1 || { echo "insmod leak=1 failed"; return 1; }
	move_pages_test offload_leak_before_4k 4 4096 all || { rmmod $MOD; return 1; }
	rmmod $MOD || { echo "rmmod failed"; return 1; }
	expect_file $CTL/migrator none || return 1
	log_since "offload_test: leaked registration" |
		grep -q "migrator test still registered as module $MOD goes away: unregistering it" ||
		{ echo "no message about the leaked registration"; dmesg | tail -3; return 1; }
	move_pages_test offload_leak_after_4k 4 4096 none
}
check offload_leaked_registration leaked_registration

# Larger batches for a task that moves its own memory (move_pages() on
# itself, mbind() with MPOL_MF_MOVE): the migrator's wish (8 MiB here)
# within max_batch_bytes, never more than the bound (but for one folio
# larger), never more folios than the default batch has pages (512), and
# the default batch (2 MiB) once the bound is 0, and for move_pages() with
# MPOL_MF_MOVE_ALL, which may take other processes' folios. Only the
# reasons of these calls are offloaded meanwhile, so that no other batch
# (compaction, NUMA hinting) reaches the migrator. The test migrator
# records the largest batch it was given.
expect_largest() {
	b=$(cat $PARAMS/largest_batch)
	f=$(cat $PARAMS/largest_batch_folios)
	[ "$b" = "$1" ] && [ "$f" = "$2" ] ||
		{ echo "largest batch $b bytes in $f folios, want $1 bytes in $2"; return 1; }
}

# batch_sized HOW NAME FOLIO_KB TOTAL_KB BOUND BYTES FOLIOS [EXPECT]: move
# TOTAL_KB of FOLIO_KB folios by HOW (move_pages_test's MOVE_HOW) with
# max_batch_bytes at BOUND, the migrator copying every folio, or doing
# what move_pages_test's EXPECT says (NAME_move); the largest batch must be
# BYTES in FOLIOS folios (NAME).
batch_sized() {
	if ! echo "$5" >$CTL/max_batch_bytes || ! echo 0 >$PARAMS/largest_batch ||
	   ! echo 0 >$PARAMS/largest_batch_folios; then
		fail "$2" "cannot set max_batch_bytes to $5 or reset largest_batch"
		return
	fi
	export MOVE_HOW="$1"
	guest_run move_pages_test "$2_move" "$3" "$4" "${8:-all}"
	unset MOVE_HOW
	check "$2" expect_largest "$6" "$7"
}

echo "syscall_or_cpuset mempolicy_mbind" >$CTL/reasons
if insmod /tests/$MOD.ko max_batch_bytes=8388608; then
	check offload_sized_max_default expect_file $CTL/max_batch_bytes 33554432
	check offload_sized_effective expect_file $CTL/effective_max_batch_bytes 8388608
	batch_sized move_pages offload_sized_64k 64 32768 33554432 8388608 128
	batch_sized move_pages offload_sized_2m 2048 32768 33554432 8388608 4
	batch_sized mbind offload_sized_mbind_64k 64 32768 33554432 8388608 128
	batch_sized move_pages offload_sized_bound_64k 64 32768 4194304 4194304 64
	# Three 2 MiB folios would pass a 5 MiB bound: two.
	batch_sized move_pages offload_sized_strict_2m 2048 32768 5242880 4194304 2
	batch_sized move_pages offload_sized_4k 4 32768 33554432 2097152 512
	batch_sized move_pages offload_sized_off_64k 64 32768 0 2097152 32
	batch_sized move_all offload_sized_move_all_64k 64 32768 33554432 2097152 32
	# A migrator that fails or declines part of a larger batch: the CPU
	# copies the rest of each 8 MiB batch, every byte intact.
	echo 1 >$PARAMS/fail_after
	batch_sized move_pages offload_sized_fail_after_64k 64 32768 33554432 8388608 128 one
	echo -1 >$PARAMS/fail_after
	echo 1 >$PARAMS/decline
	batch_sized move_pages offload_sized_decline_2m 2048 32768 33554432 8388608 4 fallback
	echo 0 >$PARAMS/decline
	# Neither move_pages() nor mbind() offloaded: no larger batch shown.
	echo demotion >$CTL/reasons
	check offload_sized_effective_other_reasons expect_file $CTL/effective_max_batch_bytes 2097152
	echo "syscall_or_cpuset mempolicy_mbind" >$CTL/reasons
	check offload_sized_effective_own_reasons expect_file $CTL/effective_max_batch_bytes 8388608
	echo 33554432 >$CTL/max_batch_bytes
	rmmod $MOD
	check offload_sized_effective_none expect_file $CTL/effective_max_batch_bytes 2097152
else
	fail offload_sized_load "insmod $MOD max_batch_bytes=8388608 failed"
fi
echo "$DEFAULT_REASONS" >$CTL/reasons
