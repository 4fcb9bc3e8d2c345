#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# dcbm on the DMA engines it must not use: swdma behaving as a provider
# that reports failed copies as successful ones (PTDMA and AE4DMA up to
# 7.3, and any provider that passes no result: report_errors=0), and one
# that cannot terminate transfers (I/OAT: no device_terminate_all). dcbm
# must refuse to load, and say which property the engine lacks. A dcbm that
# took such an engine would hand processes wrong bytes (a failure taken for
# a copy), or wait without a bound for a batch past its timeout. (Engines
# that can be unplugged while their channels are held, DSA's, are used:
# dcbm_test.sh idxd.)
#
#   dcbm_engines.sh
P=dcbm_engines
CTL=/sys/kernel/mm/migrate_offload
. /tests/testlib.sh

# refused SWDMA_ARGS WHY: with swdma loaded with SWDMA_ARGS, dcbm does not
# load, and the kernel log says WHY.
refused() {
	insmod /tests/swdma.ko nr_channels=2 $1 || { echo "insmod swdma $1 failed"; return 1; }
	log_mark "dcbm_engines: swdma $1"
	if insmod /tests/dcbm.ko 2>/dev/null; then
		echo "dcbm loaded over swdma $1"
		rmmod dcbm
		rmmod swdma
		return 1
	fi
	log=$(log_since "dcbm_engines: swdma $1")
	rmmod swdma || { echo "rmmod swdma failed"; return 1; }
	expect_file $CTL/migrator none || return 1
	echo "$log" | grep -q "dcbm: cannot use DMA engine dma[0-9]*: it $2" ||
		{ echo "no message that the engine $2:"; echo "$log" | tail -5; return 1; }
	echo "$log" | grep -q "no DMA memcpy channel dcbm can use" ||
		{ echo "no load error:"; echo "$log" | tail -5; return 1; }
}

check ${P}_silent_ptdma refused "personality=ptdma report_errors=0" \
	"does not report failed copies (no DMA_COMPLETION_RESULT)"
check ${P}_silent_ae4dma refused "personality=ae4dma report_errors=0" \
	"does not report failed copies (no DMA_COMPLETION_RESULT)"
check ${P}_silent_generic refused "report_errors=0" \
	"does not report failed copies (no DMA_COMPLETION_RESULT)"
check ${P}_ioat refused "personality=ioat" \
	"cannot terminate transfers"
# An engine that needs copies aligned past a page (dcbm copies pages).
check ${P}_copy_align refused "copy_align=13" \
	"needs copies aligned past a page"

# One that needs page-aligned copies (swdma then refuses any other) is
# used, and copies every folio.
if insmod /tests/swdma.ko nr_channels=2 copy_align=12; then
	if insmod /tests/dcbm.ko min_batch_bytes=0; then
		move_pages_test ${P}_copy_align_page_64k 64 4096 all
		rmmod dcbm || fail ${P}_copy_align_page_unload "rmmod dcbm failed"
	else
		fail ${P}_copy_align_page_load "dcbm refused an engine with page-aligned copies"
	fi
	rmmod swdma || fail ${P}_copy_align_page_unload_swdma "rmmod swdma failed"
else
	fail ${P}_copy_align_page_swdma "insmod swdma copy_align=12 failed"
fi
