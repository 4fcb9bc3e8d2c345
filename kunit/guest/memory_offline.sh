#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# Memory offline (MR_MEMORY_HOTPLUG, a reason offloaded by default) with
# MIGRATOR - none, test, dcbm (over swdma) or mtcopy: the ZONE_MOVABLE
# blocks holding the test's data (anonymous 4K, 64K mTHP, 2M THP, shmem)
# offlined, every byte checked, the data out of them, the counters grown by
# at least its folios (memory_offline_test), the blocks online again. With
# the test migrator, also with memory_hotplug left out of the reasons: no
# batch offloaded.
#
#   memory_offline.sh MIGRATOR
#
# Needs movablecore= on the kernel command line (SKIP without).
TEST_PREFIX=memory_offline
. /tests/testlib.sh
. /tests/migpath_lib.sh
mig_args "$1"
need_movablecore "$P" || exit 0
default_reason_path memory_offline_test memory_hotplug
