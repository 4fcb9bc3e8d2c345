#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# Long-term pinning (MR_LONGTERM_PIN, a reason offloaded by default) with
# MIGRATOR - none, test, dcbm (over swdma) or mtcopy: the test's data
# (anonymous 4K, 64K mTHP, 2M THP, shmem) in ZONE_MOVABLE pinned with
# FOLL_LONGTERM through CONFIG_GUP_TEST, which first migrates it out of
# that zone; the pinned pages hold every byte and are the mapped ones, the
# counters grew by at least its folios (longterm_pin_test). With the test
# migrator, also with longterm_pin left out of the reasons: no batch
# offloaded.
#
#   longterm_pin.sh MIGRATOR
#
# Needs movablecore= on the kernel command line (SKIP without).
TEST_PREFIX=longterm_pin
. /tests/testlib.sh
. /tests/migpath_lib.sh
mig_args "$1"
need_movablecore "$P" || exit 0
default_reason_path longterm_pin_test longterm_pin
