#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# A 64K mTHP with a poisoned page (MADV_HWPOISON while a pipe pins it, so
# memory_failure() cannot split it) moved with 15 healthy ones in one
# move_pages() call, the test migrator registered (hwpoison_test): the
# migrator is handed the healthy folios and never the poisoned one, which
# the core copies itself. Loads and unloads the test migrator. The page
# stays poisoned until the guest powers off, so this runs late in the list.
# Only move_pages() is offloaded, and NUMA balancing and proactive
# compaction are off meanwhile, so that the migrator's counters count this
# test's folios alone.
TEST_PREFIX=hwpoison
CTL=/sys/kernel/mm/migrate_offload
. /tests/testlib.sh

quiet_mm numa

if migrator_load test; then
	reasons=$(cat $CTL/reasons)
	echo syscall_or_cpuset >$CTL/reasons
	guest_run hwpoison_test hwpoison_64k
	echo "$reasons" >$CTL/reasons
	migrator_unload test
fi

quiet_mm_end
exit 0
