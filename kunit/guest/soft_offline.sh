#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# Soft offline (madvise(MADV_SOFT_OFFLINE), MR_MEMORY_FAILURE, a reason not
# offloaded by default) with MIGRATOR - none, test, dcbm (over swdma) or
# mtcopy: in-use pages of the test's data (anonymous 4K, 64K mTHP, 2M THP,
# shmem) soft offlined, every byte checked, each page at a new pfn and the
# old one hwpoisoned (soft_offline_test). With a migrator, twice: with
# every reason but memory_failure (and compaction), nothing may be
# offloaded; with memory_failure alone, the test migrator and mtcopy
# (machine-check safe) must copy every page soft offlined, while dcbm,
# which is not, must still get none of them. The old pages stay poisoned
# until power-off: run late.
#
#   soft_offline.sh MIGRATOR
TEST_PREFIX=soft_offline
. /tests/testlib.sh
. /tests/migpath_lib.sh
mig_args "$1"
quiet_start
if [ "$MIG" = none ]; then
	check "${P}_unregistered" expect_file $CTL/migrator none
	grun soft_offline_test "$P" none
	quiet_end
	exit 0
fi
migrator_load "$MIG" || { quiet_end; exit 1; }
check "${P}_off_by_default" sh -c "! grep -qw memory_failure $CTL/effective_reasons || { echo 'effective_reasons: '\$(cat $CTL/effective_reasons); exit 1; }"
reasons_but memory_failure compaction
# shellcheck disable=SC2046
grun soft_offline_test "${P}_disabled" none $(own_counter "$MIG")
echo memory_failure >$CTL/reasons
if [ "$MIG" = dcbm ]; then
	# dcbm's DMA copies are not machine-check safe: it does not take
	# memory_failure batches, whatever the administrator enables.
	check "${P}_not_effective" expect_file $CTL/effective_reasons none
	# shellcheck disable=SC2046
	grun soft_offline_test "${P}_enabled" none $(own_counter "$MIG")
else
	check "${P}_effective" expect_file $CTL/effective_reasons memory_failure
	# shellcheck disable=SC2046
	grun soft_offline_test "${P}_enabled" offload $(own_counter "$MIG")
fi
quiet_end
migrator_unload "$MIG"
