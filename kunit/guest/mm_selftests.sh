#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# The kernel's own mm selftests that migrate memory (built by scripts/test.sh
# from tools/testing/selftests/mm), each case reported by kselftest.sh. The
# hugetlb cases of the migration test need free huge pages.
echo 16 >/proc/sys/vm/nr_hugepages
kselftest.sh mm_migration mm_migration
kselftest.sh mm_rmap mm_rmap
kselftest.sh mm_mkdirty mm_mkdirty
echo 0 >/proc/sys/vm/nr_hugepages
