#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# alloc_contig_range() (MR_CONTIG_RANGE, a reason not offloaded by default)
# with MIGRATOR - none, test, dcbm (over swdma) or mtcopy: a 1 GiB hugetlb
# page allocated at runtime over a node full of the test's data (anonymous
# 4K, 64K mTHP, 2M THP, shmem), every byte checked, the data out of its
# range (contig_range_test). With a migrator, twice: with every reason but
# contig_range (and compaction, which the allocations of the migration
# targets may run), nothing may be offloaded; with contig_range alone, the
# migrator must copy at least the data's folios that were in the range.
#
#   contig_range.sh MIGRATOR
#
# Needs 1 GiB huge pages (x86: a CPU with pdpe1gb, e.g. QEMU -cpu
# qemu64,pdpe1gb=on) and a 1 GiB-aligned range of a node that nothing
# unmovable sits in (SKIP without).
TEST_PREFIX=contig_range
. /tests/testlib.sh
. /tests/migpath_lib.sh
mig_args "$1"

# contig_run NAME EXPECT [COUNTER_FILE [KEY]]: contig_range_test (filling a
# node of 3 GiB takes minutes under TCG: 900 s at most), with what the
# kernel said about busy ranges when it skips.
contig_run() {
	log_mark "contig_range: $1"
	_o=$(GRUN_LIMIT=900 grun contig_range_test "$@")
	echo "$_o"
	case $_o in
	*"GUEST-TEST: SKIP"*) log_since "contig_range: $1" | grep -E 'PFNs busy|isolat|migrat|contig' | tail -n 5 ;;
	esac
}

quiet_start
if [ "$MIG" = none ]; then
	check "${P}_unregistered" expect_file $CTL/migrator none
	contig_run "$P" none
	quiet_end
	exit 0
fi
migrator_load "$MIG" || { quiet_end; exit 1; }
check "${P}_off_by_default" sh -c "! grep -qw contig_range $CTL/effective_reasons || { echo 'effective_reasons: '\$(cat $CTL/effective_reasons); exit 1; }"
reasons_but contig_range compaction
# shellcheck disable=SC2046
contig_run "${P}_disabled" none $(own_counter "$MIG")
echo contig_range >$CTL/reasons
check "${P}_effective" expect_file $CTL/effective_reasons contig_range
# shellcheck disable=SC2046
contig_run "${P}_enabled" offload $(own_counter "$MIG")
quiet_end
migrator_unload "$MIG"
