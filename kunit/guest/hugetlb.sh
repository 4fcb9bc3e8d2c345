#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# The series' selftest migration_hugetlb (tools/testing/selftests/mm: hugetlb
# pages moved into a node whose pool is empty, so into temporary huge pages,
# and back, private and shared, bytes and pool counts; B1 of the v1 review),
# run by the list with no migrator, and here again with the test migrator
# registered: hugetlb folios do not go through the batch copy, and whatever
# the series does with them, the bytes and the pool counts must come out as
# vanilla Linux leaves them. The same for migration_mthp (mTHPs moved back
# and forth stay whole), whose folios the test migrator then copies, and for
# migrate_offload_sysfs.sh, whose effective_* checks then see a migrator
# registered before it starts (list's run loads one itself, by modprobe).
TEST_PREFIX=hugetlb
. /tests/testlib.sh

if migrator_load test; then
	before=$(stat /proc/vmstat migrate_offload_folios_copied)
	kselftest.sh mm_migration_hugetlb_test_migrator mm_migration_hugetlb
	kselftest.sh mm_migration_mthp_test_migrator mm_migration_mthp
	kselftest.sh mm_migrate_offload_sysfs_test_migrator migrate_offload_sysfs.sh
	after=$(stat /proc/vmstat migrate_offload_folios_copied)
	if [ "$after" -gt "$before" ]; then
		pass mm_migration_mthp_test_migrator_offloaded
	else
		fail mm_migration_mthp_test_migrator_offloaded "migrate_offload_folios_copied stayed at $before"
	fi
	migrator_unload test
fi
exit 0
