#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# The kernel's own mm selftests (built by scripts/test.sh from
# tools/testing/selftests/mm), each case reported by kselftest.sh. Those
# that migrate memory (migration, rmap) run with the core's batch copy, and
# again with each migrator registered, which must then have copied folios
# (of the migration test only the anonymous and anonymous THP cases: each
# case migrates for 20 s); the THP, mTHP and COW ones (cow, mkdirty) run
# once: they do not migrate. The hugetlb cases of the migration test
# need free huge pages. cow skips its swap cases (the guest has no swap).
TEST_PREFIX=mm_selftests
. /tests/testlib.sh

# migrating LABEL [copied]: the selftests that migrate; with "copied", the
# registered migrator must have copied folios meanwhile.
migrating() {
	before=$(stat /proc/vmstat pgmigrate_offload_copied)
	if [ -n "$2" ]; then
		kselftest.sh "mm_migration_$1" mm_migration -t private_anon -t private_anon_thp
	else
		kselftest.sh "mm_migration_$1" mm_migration
	fi
	kselftest.sh "mm_rmap_$1" mm_rmap
	[ -n "$2" ] || return 0
	after=$(stat /proc/vmstat pgmigrate_offload_copied)
	if [ "$after" -gt "$before" ]; then
		pass "mm_selftests_$1_offloaded"
	else
		fail "mm_selftests_$1_offloaded" "pgmigrate_offload_copied stayed at $before"
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
kselftest.sh mm_cow mm_cow
