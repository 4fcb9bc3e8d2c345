#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# Memory pressure (pressure_test): migrations to a nearly full node, for
# 4K, 64K and 2M folios, with the batch copy of the core and with each
# migrator registered (copying every batch).
. /tests/testlib.sh
D=/sys/kernel/debug

run() {
	for kb in 4 64 2048; do
		pressure_test "pressure_$1_${kb}k" "$kb" 262144 "$2"
	done
}

run serial
if insmod /tests/migrate_offload_test_migrator.ko; then
	run test copied
	echo 0 >/sys/module/migrate_offload_test_migrator/parameters/registered
	rmmod migrate_offload_test_migrator || fail pressure_test_unload "rmmod failed"
else
	fail pressure_test_load "insmod migrate_offload_test_migrator failed"
fi
if insmod /tests/swdma.ko nr_channels=2 && insmod /tests/dcbm.ko nr_dma_chan=2 min_batch_bytes=0; then
	run dcbm copied
	echo 0 >$D/dcbm/registered
	rmmod dcbm || fail pressure_dcbm_unload "rmmod dcbm failed"
	rmmod swdma || fail pressure_dcbm_unload "rmmod swdma failed"
else
	fail pressure_dcbm_load "insmod swdma or dcbm failed"
	rmmod swdma 2>/dev/null
fi
if insmod /tests/mtcopy.ko min_batch_bytes=0; then
	run mtcopy copied
	echo 0 >$D/mtcopy/registered
	rmmod mtcopy || fail pressure_mtcopy_unload "rmmod failed"
else
	fail pressure_mtcopy_load "insmod mtcopy failed"
fi
