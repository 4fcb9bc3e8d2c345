#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# 64K mTHPs whose mappings change while move_pages() moves them back and
# forth (move_race_test): half of them zapped with MADV_DONTNEED or
# munmap() and written again, shared with forked children that write
# (copy on write) and/or zap in half of the range, or collapsed into PMD
# THPs with MADV_COLLAPSE. Every byte, the folios no process unmapped any
# page of still whole (those a child unmapped part of during a migration
# may be split, on 7.3.4 too), and hugepages-64kB/stats/
# nr_anon_partially_mapped counting exactly the folios really partially
# mapped. Each mode with no migrator and with the test migrator; zap also
# with mtcopy (loads and unloads each). Proactive compaction is off
# meanwhile. "move_race.sh base": each mode once on a kernel without the
# series (no copy offload to check), for comparison: there the untouched
# folios are split (every migrated mTHP is marked partially mapped).
TEST_PREFIX=move_race
. /tests/testlib.sh
. /tests/migrate_paths_lib.sh

quiet_mm
syscall_only

modes="zap munmap fork fork_cow fork_zap collapse"
if [ "$1" = base ]; then
	for mode in $modes; do
		grun move_race_test "move_race_${mode}_base" base $mode
	done
	syscall_only_end
	quiet_mm_end
	exit 0
fi
# run MIGRATOR [SUFFIX]: every mode with MIGRATOR (none: no migrator), the
# test names ending in SUFFIX (default: MIGRATOR).
run() {
	for mode in $modes; do
		grun move_race_test "move_race_${mode}_${2:-$1}" "$1" $mode
	done
}
zap() { grun move_race_test "move_race_zap_$1" "$1" zap; }
run none no_migrator
each_migrator run test
each_migrator zap mtcopy

syscall_only_end
quiet_mm_end
exit 0
