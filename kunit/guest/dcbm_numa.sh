#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# dcbm chooses channels near the memory it copies (v2 review, B5): swdma
# with one device on each node (nodes=0,1), as a machine with an engine per
# socket or I/O die. A batch from node 0 to node 1 must be copied by node
# 0's engine, one from node 1 to node 0 by node 1's, with nr_dma_chan=1 as
# with 2; the per-node counters must say so. With the source's engine gone
# (its driver unbound), the destination's copies; with engines on no node,
# any copies and the batch counts as remote. Every byte is compared by
# move_pages_test. (A first-fit dcbm holds node 0's channel only, and node
# 0's engine copies both ways: the 1to0 checks fail.)
#
#   dcbm_numa.sh
P=dcbm_numa
D=/sys/kernel/debug/dcbm
SWDRV=/sys/bus/platform/drivers/swdma
. /tests/testlib.sh

# completed N: descriptors swdma device N (swdma.N) completed.
completed() { stat /sys/kernel/debug/swdma.$1/stats completed; }

# moved DIR SRC DST: 8 MiB of 2M THPs moved (DIR 0to1 or 1to0); only the
# engine on node SRC completed descriptors, and dcbm counted the batches
# as copied on the source's node, and under node SRC in its nodes file.
moved() {
	a0=$(completed 0); a1=$(completed 1)
	l0=$(stat $D/stats src_local)
	n0=$(awk -v n="$2" '$1 == "node" && $2 == n { print $6 }' $D/nodes)
	if [ "$1" = 1to0 ]; then
		move_pages_test ${P}_move_$1_$3 2048 8192 all 1to0 || return 1
	else
		move_pages_test ${P}_move_$1_$3 2048 8192 all || return 1
	fi
	d0=$(($(completed 0) - a0)); d1=$(($(completed 1) - a1))
	if [ "$2" = 0 ]; then mine=$d0 other=$d1; else mine=$d1 other=$d0; fi
	[ "$mine" -gt 0 ] || { echo "node $2's engine copied nothing (node 0: $d0, node 1: $d1 descriptors)"; return 1; }
	[ "$other" -eq 0 ] || { echo "the other node's engine completed $other descriptors"; return 1; }
	l=$(($(stat $D/stats src_local) - l0))
	[ "$l" -gt 0 ] || { echo "src_local did not grow"; return 1; }
	n=$(awk -v n="$2" '$1 == "node" && $2 == n { print $6 }' $D/nodes)
	[ "$((n - n0))" -eq "$l" ] || { echo "node $2 counted $((n - n0)) batches, src_local $l"; cat $D/nodes; return 1; }
}

# held N: dcbm holds N channels on each of nodes 0 and 1, and says so.
held() {
	expect_file $D/nr_dma_chan "$1" || return 1
	for n in 0 1; do
		h=$(awk -v n=$n '$1 == "node" && $2 == n { print $4 }' $D/nodes)
		[ "$h" = "$1" ] || { echo "node $n: ${h:-no} channels, want $1"; cat $D/nodes; return 1; }
	done
}

if ! insmod /tests/swdma.ko nodes=0,1 nr_channels=2 personality=idxd; then
	fail ${P}_swdma "insmod swdma nodes=0,1 failed"
	exit 1
fi
if ! insmod /tests/dcbm.ko nr_dma_chan=1 min_batch_bytes=0; then
	fail ${P}_load "insmod dcbm failed"
	rmmod swdma
	exit 1
fi
check ${P}_held_1 held 1
check ${P}_0to1 moved 0to1 0 1ch
check ${P}_1to0 moved 1to0 1 1ch
echo 2 >$D/nr_dma_chan
check ${P}_held_2 held 2
check ${P}_0to1_2ch moved 0to1 0 2ch
check ${P}_1to0_2ch moved 1to0 1 2ch
echo 1 >$D/nr_dma_chan
check ${P}_held_1_again held 1

# Node 0's engine gone: node 1's copies node 0's batches (dst_local).
echo swdma.0 >$SWDRV/unbind
check ${P}_unbound_node0 sh -c "
	grep -q '^node 0 channels 0 ' $D/nodes || { echo 'node 0 channels still held:'; cat $D/nodes; exit 1; }
	awk '\$1 == \"node\" && \$2 == 1 && \$4 == 1 { f = 1 } END { exit !f }' $D/nodes ||
		{ echo 'node 1 lost its channel:'; cat $D/nodes; exit 1; }"
dl=$(stat $D/stats dst_local)
b1=$(completed 1)
move_pages_test ${P}_move_0to1_dst 2048 8192 all
check ${P}_dst_local sh -c "
	[ \$(awk '\$1 == \"dst_local\" { print \$2 }' $D/stats) -gt $dl ] || { echo 'dst_local did not grow'; exit 1; }
	[ \$(awk '\$1 == \"completed\" { print \$2 }' /sys/kernel/debug/swdma.1/stats) -gt $b1 ] ||
		{ echo 'node 1 engine copied nothing'; exit 1; }"
rmmod dcbm || fail ${P}_unload "rmmod dcbm failed"
rmmod swdma || fail ${P}_unload_swdma "rmmod swdma failed"

# Engines on no node: the batches are remote.
insmod /tests/swdma.ko nr_channels=2 || { fail ${P}_swdma_nonode "insmod swdma failed"; exit 1; }
if insmod /tests/dcbm.ko nr_dma_chan=1 min_batch_bytes=0; then
	check ${P}_nonode_listed sh -c "grep -q '^node - channels 1 ' $D/nodes || { cat $D/nodes; exit 1; }"
	r=$(stat $D/stats remote)
	move_pages_test ${P}_move_nonode 2048 8192 all
	check ${P}_remote sh -c "[ \$(awk '\$1 == \"remote\" { print \$2 }' $D/stats) -gt $r ] ||
		{ echo 'remote did not grow'; cat $D/stats; exit 1; }"
	rmmod dcbm || fail ${P}_unload_nonode "rmmod dcbm failed"
else
	fail ${P}_load_nonode "insmod dcbm failed"
fi
rmmod swdma || fail ${P}_unload_swdma_nonode "rmmod swdma failed"
