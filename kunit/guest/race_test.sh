#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# Races: while stress_test runs (two writers, two processes migrating the
# same memory both ways with concurrent move_pages()), load and unload the
# migrator modules and flip every control in a loop: dcbm's channel count
# and descriptor kind, mtcopy's thread count, the core's reasons and
# min_batch_bytes, registering and unregistering. Every control write must
# succeed (a second migrator must be refused while one is registered), no
# write of the stress processes may be lost, and at the end no migrator is
# left and every module unloads.
CTL=/sys/kernel/mm/migrate_offload
D=/sys/kernel/debug
. /tests/testlib.sh

secs=20
err=
# try WHAT CMD...: run CMD; remember the first failure.
try() {
	what=$1
	shift
	"$@" 2>/dev/null || { [ -n "$err" ] || err="$what failed"; }
}
w() { try "writing '$1' to $2" sh -c "echo '$1' >$2"; }

all_reasons=$(cat $CTL/reasons)
stress_test race_stress "$secs" 64 8192 2 2 >/tmp/race_out 2>&1 &
sp=$!
rounds=0
while kill -0 $sp 2>/dev/null; do
	try "insmod swdma" insmod /tests/swdma.ko nr_channels=4
	try "insmod dcbm" insmod /tests/dcbm.ko min_batch_bytes=0
	for ch in 1 4 2 3; do
		w $ch $D/dcbm/nr_dma_chan
		w $((ch % 2)) $D/dcbm/use_sg
	done
	w "demotion numa_misplaced" $CTL/reasons
	w all $CTL/reasons
	w 4194304 $CTL/min_batch_bytes
	w 0 $CTL/min_batch_bytes
	w auto $CTL/min_batch_bytes
	if insmod /tests/mtcopy.ko min_batch_bytes=0 2>/dev/null; then
		[ -n "$err" ] || err="mtcopy loaded while dcbm was registered"
		echo 0 >$D/mtcopy/registered
		rmmod mtcopy
	fi
	w 0 $D/dcbm/registered
	w 1 $D/dcbm/registered
	# Unloading unregisters, waiting for the copies in flight.
	try "rmmod dcbm" rmmod dcbm
	try "rmmod swdma" rmmod swdma

	try "insmod mtcopy" insmod /tests/mtcopy.ko min_batch_bytes=0
	for t in 1 4 2; do
		w $t $D/mtcopy/nr_threads
	done
	try "rmmod mtcopy" rmmod mtcopy

	try "insmod the test migrator" insmod /tests/migrate_offload_test_migrator.ko fail_after=2
	w "syscall_or_cpuset" $CTL/reasons
	w "$all_reasons" $CTL/reasons
	w 0 /sys/module/migrate_offload_test_migrator/parameters/registered
	w 1 /sys/module/migrate_offload_test_migrator/parameters/registered
	try "rmmod the test migrator" rmmod migrate_offload_test_migrator
	rounds=$((rounds + 1))
	[ -z "$err" ] || break
done
wait $sp
rc=$?
cat /tmp/race_out
echo "race_test: $rounds rounds of load, flip and unload"
if [ -n "$err" ]; then
	fail race_controls "$err (round $((rounds + 1)))"
elif [ "$rounds" -lt 2 ]; then
	fail race_controls "only $rounds rounds in $secs s"
else
	pass race_controls
fi
[ $rc -eq 0 ] || grep -q "GUEST-TEST: FAIL" /tmp/race_out || fail race_stress "exit status $rc"
nothing_left() {
	expect_file $CTL/migrator none || return 1
	left=$(grep -E '^(dcbm|mtcopy|swdma|migrate_offload_test_migrator) ' /proc/modules)
	[ -z "$left" ] || { echo "modules left: $left"; return 1; }
}
check race_nothing_left nothing_left
