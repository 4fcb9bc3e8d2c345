#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# Stress with writers (stress_test): two processes keep rewriting and
# checking 8 MiB each while two others migrate that memory both ways at
# once, for 4K, 64K and 2M folios, with each copy path:
#   serial   no migrator: the batch copy of the core;
#   test     the test migrator, failing after one folio of every batch
#            (batches of 8 MiB);
#   dcbm     dcbm over swdma (2 channels), every 5th descriptor failing;
#   mtcopy   mtcopy with 2 threads (it has no fault injection).
# Every write must survive; the offload counters must show the migrator
# copying and, with faults injected, the CPU copying what it failed.
# guest.stress_seconds=N on the kernel command line sets the time of
# each run (default 5 s).
CTL=/sys/kernel/mm/migrate_offload
D=/sys/kernel/debug
TEST_PREFIX=stress
. /tests/testlib.sh

secs=5
for word in $(cat /proc/cmdline); do
	case "$word" in guest.stress_seconds=*) secs=${word#guest.stress_seconds=} ;; esac
done

run() {
	for kb in 4 64 2048; do
		stress_test "stress_$1_${kb}k" "$secs" "$kb" 8192 2 2 "$2"
	done
}

check stress_no_migrator expect_file $CTL/migrator none
run serial none

# Batches of 8 MiB (four 2M folios), so that failing after one folio
# fails part-way for every size.
batch=$(cat $D/migrate/batch_max_pages)
if migrator_load test fail_after=1; then
	echo 2048 >$D/migrate/batch_max_pages
	run test faults
	echo "$batch" >$D/migrate/batch_max_pages
	migrator_unload test
fi

if migrator_load dcbm; then
	echo 5 >$D/swdma/fail_every
	run dcbm faults
	echo 0 >$D/swdma/fail_every
	migrator_unload dcbm
fi

if migrator_load mtcopy nr_threads=2; then
	run mtcopy copied
	migrator_unload mtcopy
fi
check stress_migrator_none_after expect_file $CTL/migrator none
