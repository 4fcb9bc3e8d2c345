#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# Guest tests of mtcopy, the Rust multi-threaded CPU copy migrator:
# move_pages() of 4K..2M folios from node 0 to node 1 with 1, 2 and 4
# threads, every byte compared and every node checked (move_pages_test),
# vmstat's offload counters and mtcopy's own counters matched. Then bad
# control writes, unloading it while another process migrates, and its
# default policy (min_batch_bytes, max_batch_bytes).
M=/sys/kernel/debug/mtcopy
CTL=/sys/kernel/mm/migrate_offload
SIZES="4 16 64 256 1024 2048"
TOTAL_KB=8192
. /tests/testlib.sh

# grew_by FILE NAME BEFORE WANT: NAME in FILE grew by exactly WANT.
grew_by() {
	now=$(stat "$1" "$2")
	[ $((now - $3)) -eq "$4" ] || { echo "$2 grew by $((now - $3)), want $4"; return 1; }
}

# Every batch offloaded, whatever its size, for the coverage of these tests.
if ! insmod /tests/mtcopy.ko nr_threads=1 min_batch_bytes=0; then
	fail mtcopy_load "insmod mtcopy failed"
	exit 1
fi
check mtcopy_registered expect_file $CTL/migrator mtcopy
check mtcopy_min_batch_bytes_auto expect_file $CTL/min_batch_bytes auto

for threads in 1 2 4; do
	echo $threads >$M/nr_threads
	check "mtcopy_threads_set_$threads" expect_file $M/nr_threads $threads
	f0=$(stat $M/stats folios)
	b0=$(stat $M/stats bytes)
	want_folios=0
	for kb in $SIZES; do
		move_pages_test "mtcopy_${threads}t_${kb}k" "$kb" "$TOTAL_KB" all
		want_folios=$((want_folios + TOTAL_KB / kb))
	done
	check "mtcopy_${threads}t_folios_counted" grew_by $M/stats folios "$f0" "$want_folios"
	n=0
	for kb in $SIZES; do n=$((n + 1)); done
	check "mtcopy_${threads}t_bytes_counted" grew_by $M/stats bytes "$b0" $((n * TOTAL_KB * 1024))
done
check mtcopy_no_failures grew_by $M/stats failures 0 0

# Bad writes fail and change nothing.
check mtcopy_bad_threads_zero bad_write $M nr_threads 0 4
check mtcopy_bad_threads_33 bad_write $M nr_threads 33 4
check mtcopy_bad_threads_negative bad_write $M nr_threads -2 4
check mtcopy_bad_threads_text bad_write $M nr_threads many 4
check mtcopy_bad_threads_empty bad_write $M nr_threads "" 4
check mtcopy_bad_threads_overlong bad_write $M nr_threads 000000000000000000000000002 4
check mtcopy_bad_registered bad_write $M registered 2 1

# Unloading while another process migrates through mtcopy.
unload_under_load() {
	loop_start mtcopy_unload_loop
	sleep 2
	rmmod mtcopy || { echo "rmmod mtcopy failed while migrations ran"; loop_abort; return 1; }
	expect_file $CTL/migrator none || { loop_abort; return 1; }
	sleep 2
	loop_stop || return 1
}
check mtcopy_unload_under_load unload_under_load

# The default policy: batches of the default size (2 MiB) stay on the
# serial copy; a task moving its own memory gets the 32 MiB batches mtcopy
# asks for (here 8 MiB, all there is), which go to the threads, but 4K
# folios no more than the default batch's 512 (2 MiB: serial); with the
# administrator's max_batch_bytes at 0, every batch is of the default
# size. Batches of 8 MiB set through debugfs batch_max_pages go to the
# threads at 4K too.
BMP=/sys/kernel/debug/migrate/batch_max_pages
if insmod /tests/mtcopy.ko; then
	check mtcopy_default_min_batch_bytes expect_file $CTL/min_batch_bytes auto
	check mtcopy_default_threads expect_file $M/nr_threads 2
	check mtcopy_default_max_batch expect_file $CTL/effective_max_batch_bytes 33554432
	move_pages_test mtcopy_default_2048k 2048 "$TOTAL_KB" all
	move_pages_test mtcopy_default_64k 64 "$TOTAL_KB" all
	move_pages_test mtcopy_default_4k 4 "$TOTAL_KB" none
	# The default batch only, from here: debugfs alone makes it larger.
	echo 0 >$CTL/max_batch_bytes
	move_pages_test mtcopy_default_bound_0_2048k 2048 "$TOTAL_KB" none
	bmp=$(cat $BMP)
	echo 2048 >$BMP
	move_pages_test mtcopy_default_large_batch_2048k 2048 "$TOTAL_KB" all
	move_pages_test mtcopy_default_large_batch_4k 4 "$TOTAL_KB" all
	echo "$bmp" >$BMP
	echo 33554432 >$CTL/max_batch_bytes
	rmmod mtcopy || fail mtcopy_default_unload "rmmod failed"
else
	fail mtcopy_default_load "insmod mtcopy failed"
fi
move_pages_test mtcopy_unloaded_2048k 2048 "$TOTAL_KB" none
