#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# Anonymous folios in the swap cache moved between the nodes
# (swapcache_migrate_test): 64K mTHPs and small pages paged out with
# MADV_PAGEOUT to swap on a brd RAM disk, read back by the parent of a
# fork whose child keeps the swap entries (so that they stay in the swap
# cache), moved to node 1 and back. The swap cache opted in to the batch
# copy (AS_MIGRATE_BATCH_COPY): a registered migrator copies every folio.
# Run with no migrator, then with the test migrator, dcbm and mtcopy
# (loads and unloads brd and each migrator).
TEST_PREFIX=swapcache_migrate
. /tests/testlib.sh
. /tests/migrate_paths_lib.sh

DEV=/dev/ram0

brd_load 262144 || exit 0
if ! mkswap $DEV >/dev/null || ! swapon $DEV; then
	fail swapcache_migrate_swapon "mkswap/swapon $DEV failed"
	rmmod brd
	exit 0
fi
quiet_mm
syscall_only

run() {
	grun swapcache_migrate_test "swapcache_migrate_64k_$1" "$2" 64 64
	grun swapcache_migrate_test "swapcache_migrate_4k_$1" "$2" 4 1024
}
run_with() { run "$1" "$1"; }
run no_migrator none
each_migrator run_with test dcbm mtcopy

syscall_only_end
quiet_mm_end
check swapcache_migrate_swapoff swapoff $DEV
check swapcache_migrate_brd_unload rmmod brd
exit 0
