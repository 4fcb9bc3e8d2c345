#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# Device-private memory (lib/test_hmm, /dev/hmm_dmirror0): anonymous small
# pages and a 2M THP migrated to the device and back, and between the nodes
# with move_pages(), with a migrator registered or not (hmm_migrate_test):
# bytes, nodes, device-private state, and the offload counters (system
# memory is copied by the migrator, device-private pages cannot be moved
# by move_pages()); then a race of move_pages() against migrations to the
# device and back. Then the kernel's own hmm-tests selftest
# (tools/testing/selftests/mm/hmm-tests.c, built statically), each case
# a GUEST-TEST line, with no migrator and with the test migrator; its THP
# benchmark case (seconds of copies of 256 MiB on real hardware) is left
# out (loads and unloads test_hmm and the migrators).
TEST_PREFIX=hmm_migrate
. /tests/testlib.sh
. /tests/migrate_paths_lib.sh

if ! insmod /tests/test_hmm.ko; then
	fail hmm_migrate_load "insmod /tests/test_hmm.ko failed (CONFIG_TEST_HMM=m)"
	exit 0
fi
if ! wait_for_dev -c /dev/hmm_dmirror0; then
	fail hmm_migrate_load "test_hmm loaded, but /dev/hmm_dmirror0 did not appear"
	rmmod test_hmm
	exit 0
fi
quiet_mm
syscall_only

run() { grun hmm_migrate_test "hmm_migrate_$1" "$1"; }
grun hmm_migrate_test hmm_migrate_no_migrator none
each_migrator run test dcbm mtcopy

# hmm-tests' THP cases need PMD-sized THPs in MADV_HUGEPAGE areas (and the
# huge zero page): migrate_anon_huge_err and migrate_anon_huge_zero_err
# fail (-ENOENT) when the range is mapped by small pages, since test_hmm's
# forced allocation failure then leaves a small page unmigrated. So they
# run with THP "always" and the PMD size "inherit" (the boot's settings),
# whatever a test before left, and the controls are put back after.
thp_save
echo always >/sys/kernel/mm/transparent_hugepage/enabled
echo inherit >/sys/kernel/mm/transparent_hugepage/hugepages-2048kB/enabled
t0=$(cut -d' ' -f1 /proc/uptime)
kselftest.sh hmm_tests mm_hmm-tests -T benchmark_thp_migration
echo "    (hmm_tests: $(echo "$t0 $(cut -d' ' -f1 /proc/uptime)" | awk '{ printf "%.1f", $2 - $1 }') s)"
if migrator_load test; then
	kselftest.sh hmm_tests_test_migrator mm_hmm-tests -T benchmark_thp_migration
	migrator_unload test
fi
thp_restore

syscall_only_end
quiet_mm_end
check hmm_migrate_unload rmmod test_hmm
exit 0
