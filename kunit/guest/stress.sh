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
if insmod /tests/migrate_offload_test_migrator.ko fail_after=1; then
	echo 2048 >$D/migrate/batch_max_pages
	run test faults
	echo "$batch" >$D/migrate/batch_max_pages
	echo 0 >/sys/module/migrate_offload_test_migrator/parameters/registered
	rmmod migrate_offload_test_migrator || fail stress_test_unload "rmmod failed"
else
	fail stress_test_load "insmod migrate_offload_test_migrator failed"
fi

if insmod /tests/swdma.ko nr_channels=2 && insmod /tests/dcbm.ko nr_dma_chan=2 min_batch_bytes=0; then
	echo 5 >$D/swdma/fail_every
	run dcbm faults
	echo 0 >$D/swdma/fail_every
	echo 0 >$D/dcbm/registered
	rmmod dcbm || fail stress_dcbm_unload "rmmod dcbm failed"
	rmmod swdma || fail stress_dcbm_unload "rmmod swdma failed"
else
	fail stress_dcbm_load "insmod swdma or dcbm failed"
	rmmod swdma 2>/dev/null
fi

if insmod /tests/mtcopy.ko nr_threads=2 min_batch_bytes=0; then
	run mtcopy copied
	echo 0 >$D/mtcopy/registered
	rmmod mtcopy || fail stress_mtcopy_unload "rmmod failed"
else
	fail stress_mtcopy_load "insmod mtcopy failed"
fi
check stress_migrator_none_after expect_file $CTL/migrator none
