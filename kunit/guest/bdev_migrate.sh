#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# The series' selftest migration_bdev (tools/testing/selftests/mm) on brd's
# /dev/ram0, as run_vmtests.sh runs it: the page cache of a block device
# (def_blk_aops, buffer heads, buffer_migrate_folio_norefs()) moved between
# the nodes, idle and while another process keeps writing to it (B2 of the
# v1 review): no write may be lost, and no folio with buffer heads may be
# copied by a migrator. Run with no migrator, then with the test migrator,
# which the test first sees copying anonymous folios (so that "copied
# nothing" means something). NUMA balancing and proactive compaction are off meanwhile:
# neither may move the pages or count migrations under the test.
TEST_PREFIX=bdev_migrate
. /tests/testlib.sh

DEV=/dev/ram0

brd_load 65536 || exit 0

quiet_mm numa

kselftest.sh mm_migration_bdev mm_migration_bdev $DEV
with_test() { kselftest.sh mm_migration_bdev_test_migrator mm_migration_bdev $DEV; }
each_migrator with_test test

quiet_mm_end
check bdev_migrate_brd_unload rmmod brd
exit 0
