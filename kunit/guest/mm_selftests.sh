#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# The kernel's own mm selftests (built by scripts/test.sh from
# tools/testing/selftests/mm), each case reported by kselftest.sh. Those
# that migrate memory (migration, rmap) run with the core's batch copy, and
# again with each migrator registered, which must then have copied folios
# (of the migration test only the anonymous and anonymous THP cases: each
# case migrates for 20 s); the THP, mTHP, COW, soft-dirty and split ones (cow,
# mkdirty, soft-dirty, split_huge_page_test) run once: they do not migrate. The hugetlb cases of the migration test
# need free huge pages. cow skips its swap cases (the guest has no swap).
TEST_PREFIX=mm_selftests
. /tests/testlib.sh

# migrating LABEL [copied]: the selftests that migrate; with "copied", the
# registered migrator must have copied folios meanwhile.
migrating() {
	before=$(stat /proc/vmstat migrate_offload_folios_copied)
	if [ -n "$2" ]; then
		kselftest.sh "mm_migration_$1" mm_migration -t private_anon -t private_anon_thp
	else
		kselftest.sh "mm_migration_$1" mm_migration
	fi
	kselftest.sh "mm_rmap_$1" mm_rmap
	[ -n "$2" ] || return 0
	after=$(stat /proc/vmstat migrate_offload_folios_copied)
	if [ "$after" -gt "$before" ]; then
		pass "mm_selftests_$1_offloaded"
	else
		fail "mm_selftests_$1_offloaded" "migrate_offload_folios_copied stayed at $before"
	fi
}

echo 16 >/proc/sys/vm/nr_hugepages
migrating serial
for mig in test dcbm mtcopy; do
	if migrator_load $mig; then
		migrating $mig copied
		migrator_unload $mig
	fi
done
echo 0 >/proc/sys/vm/nr_hugepages

kselftest.sh mm_mkdirty mm_mkdirty
kselftest.sh mm_soft_dirty mm_soft-dirty
kselftest.sh mm_cow mm_cow

# split_huge_page_test splits THPs through debugfs to every order and
# checks the orders, the bytes and the mappings after each (the split
# restores the mappings through remove_migration_ptes(), whose batched
# form is the series'). khugepaged is held off while it runs: glibc's
# free() keeps the test's memory mapped for its next memalign(), and
# khugepaged working on that memory while a split is asked for left THPs
# unsplit in 6 of 200 runs on 7.3.4 as on the series, and in none of 200
# runs held off (kunit/guest/list-split-many, list-split-quiet).
k=/sys/kernel/mm/transparent_hugepage/khugepaged
old_scan=$(cat $k/scan_sleep_millisecs) old_alloc=$(cat $k/alloc_sleep_millisecs)
echo 600000 >$k/scan_sleep_millisecs
echo 600000 >$k/alloc_sleep_millisecs
kselftest.sh mm_split_huge_page mm_split_huge_page_test
echo "$old_scan" >$k/scan_sleep_millisecs
echo "$old_alloc" >$k/alloc_sleep_millisecs
