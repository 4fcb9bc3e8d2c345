#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# KSM pages moved between the nodes with move_pages() (ksm_migrate_test):
# bytes, nodes, still merged into one page per group at its new place (new
# identical pages join it there), the KSM counters, and the offload
# counters: KSM folios have no mapping and take the batch copy, so a
# registered migrator copies every one of them. Run with no migrator, then
# with the test migrator, dcbm (over swdma) and mtcopy (loads and unloads
# each). Proactive compaction is off meanwhile: it must not move pages or
# count migrations under the test.
TEST_PREFIX=ksm_migrate
. /tests/testlib.sh
. /tests/migrate_paths_lib.sh

quiet_mm
syscall_only

run() { grun ksm_migrate_test "ksm_migrate_$1" "$1"; }
grun ksm_migrate_test ksm_migrate_no_migrator none
each_migrator run test dcbm mtcopy

syscall_only_end
quiet_mm_end
exit 0
