#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# split_huge_page.sh N: the kernel's split_huge_page_test N times, each run
# reported by kselftest.sh as mm_split_huge_page.I (kunit/guest/list-split).
n=${1:-10}
i=1
while [ "$i" -le "$n" ]; do
	kselftest.sh "mm_split_huge_page.$i" mm_split_huge_page_test
	i=$((i + 1))
done
