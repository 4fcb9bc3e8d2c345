# SPDX-License-Identifier: GPL-2.0
#
# Shell helpers of the guest tests of the copy offload (offload_test.sh,
# dcbm_test.sh, mtcopy_test.sh, hugetlb.sh, bdev_migrate.sh, ...): sourced,
# not run.

pass() { echo "GUEST-TEST: PASS $1"; }
fail() { echo "GUEST-TEST: FAIL $1: $2"; }

# guest_run PROGRAM NAME [ARGS...]: run a test program that prints its own
# result line for NAME; if it dies without a FAIL line (a crash, a usage
# error), that is a failure of NAME, as init counts it for a list line.
guest_run() {
	_out=$("$@" 2>&1)
	_rc=$?
	echo "$_out"
	[ $_rc -eq 0 ] || echo "$_out" | grep -q "^GUEST-TEST: FAIL" ||
		fail "$2" "$1 exited with status $_rc"
}

# grun PROGRAM NAME [ARGS...]: guest_run, with the output shown as it comes
# (a test that hangs leaves what it printed), the time it took, and a
# limit of $GRUN_LIMIT seconds (default 300): a test still running then is
# killed (SIGTERM: guest.h's handler prints its FAIL line and runs its
# exit handlers) and fails.
grun() {
	_t0=$(cut -d' ' -f1 /proc/uptime)
	{ timeout "${GRUN_LIMIT:-300}" "$@" 2>&1; echo $? >/tmp/grun.rc; } | tee /tmp/grun.out
	_rc=$(cat /tmp/grun.rc)
	_t1=$(cut -d' ' -f1 /proc/uptime)
	echo "    ($2: $(echo "$_t0 $_t1" | awk '{ printf "%.1f", $2 - $1 }') s)"
	if [ "$_rc" -ne 0 ] && ! grep -q "^GUEST-TEST: FAIL" /tmp/grun.out; then
		if [ "$_rc" -eq 143 ] || [ "$_rc" -eq 124 ]; then
			fail "$2" "$1 still running after ${GRUN_LIMIT:-300} s: killed"
		else
			fail "$2" "$1 exited with status $_rc"
		fi
	fi
}

# check NAME: run the rest as a command; PASS if it succeeds.
check() {
	name=$1
	shift
	if out=$("$@" 2>&1); then pass "$name"; else fail "$name" "$(echo "$out" | tr '\n' ' ')"; fi
}

# log_mark TEXT: write TEXT into the kernel log; log_since TEXT: the kernel
# log after the last line holding TEXT (the ring buffer may be full, so
# lines cannot be counted; nothing is cleared).
log_mark() { echo "$1" >/dev/kmsg; }
log_since() {
	dmesg | awk -v m="$1" 'index($0, m) { n = NR } { l[NR] = $0 } END { for (i = n + 1; i <= NR; i++) print l[i] }'
}

expect_file() {
	[ "$(cat "$1")" = "$2" ] || { echo "$1 is '$(cat "$1")', want '$2'"; return 1; }
}

# stat FILE NAME: the value of "NAME value" in FILE.
stat() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }

# bad_write DIR FILE VALUE WANT: writing VALUE to DIR/FILE fails, and the
# file still reads WANT.
bad_write() {
	if echo "$3" >"$1/$2" 2>/dev/null; then
		echo "writing '$3' to $2 succeeded"
		return 1
	fi
	expect_file "$1/$2" "$4"
}

# loop_start NAME: another process moves 4 MiB of 2M folios back and forth
# until loop_stop; loop_stop ends it and fails unless every move passed and
# there were at least two.
loop_start() {
	rm -f /tmp/stop /tmp/loop_failed
	(
		n=0
		while [ ! -e /tmp/stop ]; do
			move_pages_test "$1" 2048 4096 >/tmp/loop_out 2>&1 ||
				{ cat /tmp/loop_out >/tmp/loop_failed; break; }
			n=$((n + 1))
		done
		echo $n >/tmp/loop_count
	) &
	loop=$!
}

loop_stop() {
	touch /tmp/stop
	wait $loop
	[ ! -e /tmp/loop_failed ] || { echo "migration loop failed: $(cat /tmp/loop_failed)"; return 1; }
	[ "$(cat /tmp/loop_count)" -ge 2 ] || { echo "the loop ran only $(cat /tmp/loop_count) times"; return 1; }
}

# loop_abort: end the loop without judging it (another check failed).
loop_abort() {
	touch /tmp/stop
	wait $loop
}

# wait_for_dev -b|-c PATH: wait up to 5 s for the block (-b) or character
# (-c) device node PATH to appear (devtmpfs creates it after the driver's
# probe); status 1 if it did not.
wait_for_dev() {
	_n=0
	while [ ! "$1" "$2" ] && [ $_n -lt 50 ]; do
		sleep 0.1
		_n=$((_n + 1))
	done
	[ "$1" "$2" ]
}

# quiet_mm [numa]: no proactive compaction - and with "numa" no NUMA
# balancing - while a test counts migrations or the offloaded batches:
# the migrations they make would be counted too, and they could move the
# test's pages under it. quiet_mm_end puts back what quiet_mm found.
quiet_mm() {
	_proactive=$(cat /proc/sys/vm/compaction_proactiveness 2>/dev/null)
	[ -z "$_proactive" ] || echo 0 >/proc/sys/vm/compaction_proactiveness
	_numa=
	if [ "$1" = numa ]; then
		_numa=$(cat /proc/sys/kernel/numa_balancing 2>/dev/null)
		[ -z "$_numa" ] || echo 0 >/proc/sys/kernel/numa_balancing
	fi
}
quiet_mm_end() {
	[ -z "$_proactive" ] || echo "$_proactive" >/proc/sys/vm/compaction_proactiveness
	[ -z "$_numa" ] || echo "$_numa" >/proc/sys/kernel/numa_balancing
}

# brd_load SIZE_KB: load brd with one RAM disk of SIZE_KB, /dev/ram0, and
# wait for it; on failure a FAIL line "$TEST_PREFIX_brd_load" (brd unloaded
# again), status 1.
brd_load() {
	if ! insmod /tests/brd.ko rd_nr=1 rd_size="$1"; then
		fail "${TEST_PREFIX}_brd_load" "insmod /tests/brd.ko rd_size=$1 failed (the test kernel has CONFIG_BLK_DEV_RAM=m)"
		return 1
	fi
	wait_for_dev -b /dev/ram0 && return 0
	fail "${TEST_PREFIX}_brd_load" "brd loaded, but /dev/ram0 did not appear"
	rmmod brd
	return 1
}

# migrator_load NAME [PARAM=VALUE...]: load migrator NAME - test (the test
# migrator), dcbm (over swdma, 2 channels) or mtcopy - offloading batches
# of every size; on failure a FAIL line "$TEST_PREFIX_NAME_load", status 1.
migrator_load() {
	_mig=$1
	shift
	case $_mig in
	test) insmod /tests/migrate_offload_test_migrator.ko "$@" ;;
	dcbm) insmod /tests/swdma.ko nr_channels=2 &&
		{ insmod /tests/dcbm.ko nr_dma_chan=2 min_batch_bytes=0 "$@" ||
			{ rmmod swdma; false; }; } ;;
	mtcopy) insmod /tests/mtcopy.ko min_batch_bytes=0 "$@" ;;
	*) false ;;
	esac && return 0
	fail "${TEST_PREFIX}_${_mig}_load" "loading $_mig failed"
	return 1
}

# migrator_unload NAME: unload what migrator_load loaded (unloading a
# migrator unregisters it).
migrator_unload() {
	case $1 in
	test) rmmod migrate_offload_test_migrator ;;
	dcbm) rmmod dcbm && rmmod swdma ;;
	mtcopy) rmmod mtcopy ;;
	*) false ;;
	esac || fail "${TEST_PREFIX}_$1_unload" "unloading $1 failed"
}

# each_migrator FUNCTION MIGRATOR...: for each MIGRATOR in turn, load it
# (migrator_load), run FUNCTION MIGRATOR, and unload it; a migrator that
# fails to load is a FAIL line and is skipped.
each_migrator() {
	local fn=$1 mig
	shift
	for mig in "$@"; do
		migrator_load "$mig" || continue
		"$fn" "$mig"
		migrator_unload "$mig"
	done
}
