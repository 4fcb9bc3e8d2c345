#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# hugetlb pages moved to a node whose pool is empty, so into temporary huge
# pages, and back (hugetlb_migrate_test, B1 of the v1 review): anonymous
# (MAP_PRIVATE) and shared (memfd, hugetlbfs) memory, first with no
# migrator, then with the test migrator registered. hugetlb folios do not
# go through the batch copy; whatever the series does with them, the bytes
# and the pool counts must come out as vanilla Linux leaves them.
TEST_PREFIX=hugetlb
. /tests/testlib.sh

for mode in anon shared; do
	guest_run hugetlb_migrate_test "hugetlb_migrate_$mode" $mode
done

if migrator_load test; then
	for mode in anon shared; do
		guest_run hugetlb_migrate_test "hugetlb_migrate_${mode}_test_migrator" $mode
	done
	migrator_unload test
fi
exit 0
