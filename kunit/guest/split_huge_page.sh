#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# split_huge_page.sh N [shrink]: the kernel's split_huge_page_test N times,
# each run reported by kselftest.sh as mm_split_huge_page.I
# (kunit/guest/list-split). After each run, one line says how many objects
# the shrinkers scanned during it (vmstat slabs_scanned) and how many THP
# splits failed: a split of the test's THPs fails when the deferred-split
# shrinker holds a reference to them at that moment (every new anonymous
# THP is on the deferred-split queue since Linux 6.12).
# With "shrink", a second task runs the shrinkers without pause
# (drop_caches=2) while the test runs; with "quiet", khugepaged is held off
# (one scan every 10 minutes) during the runs.
n=${1:-10}
vm() { sed -n "s/^$1 //p" /proc/vmstat; }
if [ "$2" = shrink ]; then
	(while :; do echo 2 >/proc/sys/vm/drop_caches; done) &
	shrinker=$!
fi
k=/sys/kernel/mm/transparent_hugepage/khugepaged
if [ "$2" = quiet ]; then
	old_scan=$(cat $k/scan_sleep_millisecs) old_alloc=$(cat $k/alloc_sleep_millisecs)
	echo 600000 >$k/scan_sleep_millisecs
	echo 600000 >$k/alloc_sleep_millisecs
fi
i=1
while [ "$i" -le "$n" ]; do
	s0=$(vm slabs_scanned) f0=$(vm thp_split_page_failed)
	kselftest.sh "mm_split_huge_page.$i" mm_split_huge_page_test
	s1=$(vm slabs_scanned) f1=$(vm thp_split_page_failed)
	echo "SPLIT-RUN $i: slabs_scanned +$((s1 - s0)) thp_split_page_failed +$((f1 - f0))"
	i=$((i + 1))
done
[ -z "${shrinker:-}" ] || kill "$shrinker"
if [ "$2" = quiet ]; then
	echo "$old_scan" >$k/scan_sleep_millisecs
	echo "$old_alloc" >$k/alloc_sleep_millisecs
fi
