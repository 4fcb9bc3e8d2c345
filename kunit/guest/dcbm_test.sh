#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# Guest tests of dcbm, the Rust DMA batch migrator, over swdma, the software
# memcpy DMA engine: move_pages() of 4K..2M folios from node 0 to node 1 with
# 1, 2 and 4 channels, with DMA_MEMCPY_SG and with one DMA_MEMCPY descriptor
# per segment, every byte compared and every node checked (move_pages_test),
# the vmstat offload counters and dcbm's own counters matched. Then injected
# faults (failed descriptors, out-of-order completions, completions later
# than dcbm waits): the data is intact, the failures and the CPU fallback
# are counted. The same moves with the engine starting descriptors at
# tx_submit(), completing them inside it, or completing them in hard-irq
# context (swdma's "start"), or with swdma behaving as AMD's PTDMA or AE4DMA
# does (its "personality"), or as Intel's DSA (idxd: unordered, unpluggable
# while its channels are held). After every phase no DMA mapping of swdma's
# device is left (DMA API debugging) and none was misused (its error count
# stays 0). Then bad control writes, unbinding the engine's driver while
# another process migrates (dcbm gives its channels back, and takes new ones
# once the driver is bound again), and unloading both modules while another
# process migrates.
#
#   dcbm_test.sh [MODE]
#
# MODE is swdma's "start" mode for the whole run (issue, the default,
# submit, sync or irq), or a personality (ptdma, ae4dma, idxd); test names carry
# it (dcbm_submit_...), except in the default mode. The modes checks, the
# slow tx_submit() case and a terminate_all() that fails run in the default
# mode. Out-of-order completions need a device that says it completes so
# (swdma unordered=1, loaded in the issue, submit and irq modes); in sync
# mode, where every descriptor completes inside tx_submit(), nothing can be
# late or reordered, so those phases are left out.
MODE=${1:-issue}
P=dcbm
[ "$MODE" = issue ] || P=dcbm_$MODE
case $MODE in
issue | submit | irq) START=$MODE SWDMA_ARGS="unordered=1" ;;
sync) START=sync SWDMA_ARGS= ;;
*) START=issue SWDMA_ARGS="personality=$MODE" ;;
esac
D=/sys/kernel/debug/dcbm
S=/sys/kernel/debug/swdma
DMA_API=/sys/kernel/debug/dma-api
CTL=/sys/kernel/mm/migrate_offload
SIZES="4 16 64 256 1024 2048"
TOTAL_KB=8192
. /tests/testlib.sh

# No mapping of swdma's device is left, and DMA API debugging saw no misuse.
no_leaked_mappings() {
	left=$(grep -c ' swdma ' $DMA_API/dump)
	[ "$left" -eq 0 ] || { echo "$left DMA mappings of swdma left:"; grep ' swdma ' $DMA_API/dump | head -3; return 1; }
	expect_file $DMA_API/error_count 0
}

# grew FILE NAME BEFORE: NAME in FILE is above BEFORE.
grew() {
	now=$(stat "$1" "$2")
	[ "$now" -gt "$3" ] || { echo "$2 in $1 is $now, not above $3"; return 1; }
}

# A 4 MiB move of 2M folios; the data must survive whatever the engine does.
move_2m() { move_pages_test "$1" 2048 4096 "$2"; }

if ! insmod /tests/swdma.ko nr_channels=4 $SWDMA_ARGS; then
	fail ${P}_load "insmod swdma failed"
	exit 1
fi
if ! echo "$START" >$S/start; then
	fail ${P}_start "swdma refused start mode '$START'"
	rmmod swdma
	exit 1
fi
# The default policy first: full batches of the default size (2 MiB) only.
if insmod /tests/dcbm.ko; then
	check ${P}_default_min_batch_bytes expect_file $CTL/min_batch_bytes auto
	move_pages_test ${P}_default_2048k 2048 "$TOTAL_KB" all
	# The administrator's minimum overrides dcbm's, and "auto" gives it back.
	echo 4194304 >$CTL/min_batch_bytes
	move_pages_test ${P}_admin_min_batch_2048k 2048 "$TOTAL_KB" none
	echo auto >$CTL/min_batch_bytes
	move_pages_test ${P}_default_again_2048k 2048 "$TOTAL_KB" all
	echo 0 >$D/registered
	rmmod dcbm || fail ${P}_default_unload "rmmod failed"
else
	fail ${P}_default_load "insmod dcbm failed"
fi
# Every batch offloaded, whatever its size, for the coverage of these tests.
if ! insmod /tests/dcbm.ko nr_dma_chan=1 min_batch_bytes=0; then
	fail ${P}_load "insmod dcbm failed"
	rmmod swdma
	exit 1
fi
check ${P}_registered expect_file $CTL/migrator dcbm
check ${P}_channels_at_load expect_file $D/nr_dma_chan 1
[ -r $DMA_API/dump ] || fail ${P}_dma_api_debug "no $DMA_API/dump: DMA API debugging is off"

# Every size with every channel count, with memcpy_sg and with memcpy.
for chans in 1 2 4; do
	echo $chans >$D/nr_dma_chan
	check "${P}_channels_set_$chans" expect_file $D/nr_dma_chan $chans
	for mode in sg memcpy; do
		if [ $mode = sg ]; then echo 1 >$D/use_sg; else echo 0 >$D/use_sg; fi
		sg0=$(stat $D/stats sg_descriptors)
		d0=$(stat $D/stats descriptors)
		f0=$(stat $D/stats folios)
		b0=$(stat $D/stats batches)
		s0=$(stat $D/stats setup_ns)
		w0=$(stat $D/stats wait_ns)
		for kb in $SIZES; do
			move_pages_test "${P}_${chans}ch_${mode}_${kb}k" "$kb" "$TOTAL_KB" all
		done
		# dcbm copied every folio (vmstat says so per run; its own count
		# must agree), with the descriptors of the mode.
		want=0
		for kb in $SIZES; do want=$((want + TOTAL_KB / kb)); done
		check "${P}_${chans}ch_${mode}_counters" sh -c "
			f=\$(awk '\$1 == \"folios\" { print \$2 }' $D/stats)
			[ \$((f - $f0)) -eq $want ] || { echo \"dcbm copied \$((f - $f0)) folios, want $want\"; exit 1; }
			if [ $mode = sg ]; then k=sg_descriptors; b=$sg0; o=descriptors; ob=$d0
			else k=descriptors; b=$d0; o=sg_descriptors; ob=$sg0; fi
			n=\$(awk -v k=\$k '\$1 == k { print \$2 }' $D/stats)
			m=\$(awk -v k=\$o '\$1 == k { print \$2 }' $D/stats)
			[ \$n -gt \$b ] || { echo \"no \$k used\"; exit 1; }
			[ \$m -eq \$ob ] || { echo \"\$o used in $mode mode\"; exit 1; }"
		# For the record: where a batch's time goes, per descriptor kind
		# (the dmaengine maintainer asked to compare them).
		b=$(($(stat $D/stats batches) - b0)); [ "$b" -gt 0 ] || b=1
		echo "DCBM-TIMING channels=$chans mode=$mode batches=$b" \
			"setup_us_per_batch=$((($(stat $D/stats setup_ns) - s0) / b / 1000))" \
			"wait_us_per_batch=$((($(stat $D/stats wait_ns) - w0) / b / 1000))"
	done
done
check ${P}_no_leaked_mappings no_leaked_mappings
echo 1 >$D/use_sg

if [ "$MODE" = issue ]; then
	# When the engine runs a descriptor, as real engines differ: from
	# tx_submit() without waiting for issue_pending() (idxd), inside tx_submit()
	# with the callback, and completed in hard-irq context. A descriptor can
	# complete before dcbm submitted the next one; the copy must still wait for
	# every descriptor of the batch (the bytes are compared after each move).
	check ${P}_start_default expect_file $S/start "[issue] submit sync irq"
	check ${P}_bad_start bad_write $S start idxd "[issue] submit sync irq"
	for start in submit sync irq; do
		echo $start >$S/start
		check "${P}_start_${start}_set" expect_file $S/start "$(echo "issue submit sync irq" | sed "s/$start/[$start]/")"
		for mode in sg memcpy; do
			if [ $mode = sg ]; then echo 1 >$D/use_sg; else echo 0 >$D/use_sg; fi
			for kb in 4 64 2048; do
				move_pages_test "${P}_start_${start}_${mode}_${kb}k" "$kb" "$TOTAL_KB" all
			done
		done
	done
	# From tx_submit(), the first descriptor at once and each one queued behind
	# it 2 ms later: the first completes while dcbm still submits the others,
	# which complete long after, one by one.
	echo submit >$S/start
	echo 2 >$S/delay_ms
	echo 0 >$D/use_sg
	move_pages_test ${P}_start_submit_slow_2048k 2048 "$TOTAL_KB" all
	move_pages_test ${P}_start_submit_slow_64k 64 "$TOTAL_KB" all
	echo 0 >$S/delay_ms
	echo issue >$S/start
	echo 1 >$D/use_sg
	check ${P}_start_no_leaked_mappings no_leaked_mappings
fi

# Every descriptor fails: dcbm fails each batch, the CPU copies it all.
fails=$(stat $D/stats failures)
swfail=$(stat $S/stats failed)
echo 1 >$S/fail_every
for kb in 4 64 2048; do
	move_pages_test "${P}_fail_every_${kb}k" "$kb" "$TOTAL_KB" fallback
done
echo 0 >$S/fail_every
check ${P}_fail_counted grew $D/stats failures "$fails"
check ${P}_fail_engine_counted grew $S/stats failed "$swfail"
check ${P}_fail_no_leaked_mappings no_leaked_mappings

# One descriptor fails: that batch falls back, the others are copied.
echo 0 >$D/use_sg
echo 5 >$S/fail_nth
move_pages_test ${P}_fail_nth_64k 64 "$TOTAL_KB" mixed
check ${P}_fail_nth_consumed expect_file $S/fail_nth 0
echo 1 >$D/use_sg
check ${P}_fail_nth_no_leaked_mappings no_leaked_mappings

case $SWDMA_ARGS in
*unordered=1* | *personality=idxd*)
	# Newest descriptor first: one memcpy descriptor per segment, completed out
	# of order, still copies everything.
	echo 0 >$D/use_sg
	reordered=$(stat $S/stats reversed)
	echo 1 >$S/reverse
	for kb in 4 64 2048; do
		move_pages_test "${P}_out_of_order_${kb}k" "$kb" "$TOTAL_KB" all
	done
	echo 0 >$S/reverse
	echo 1 >$D/use_sg
	check ${P}_out_of_order_happened grew $S/stats reversed "$reordered"
	;;
*)
	# A device that completes in order may not be told to do otherwise.
	check ${P}_in_order_only bad_write $S reverse 1 0
	;;
esac

if [ "$START" != sync ]; then
	# Completions later than dcbm waits: each batch is terminated and the CPU
	# copies it; nothing of it may land afterwards (the bytes are checked).
	# (An idle engine in submit mode finishes a channel's first descriptor
	# at once: give each channel several, one per segment.)
	timeouts=$(stat $D/stats timeouts)
	[ "$START" = submit ] && echo 0 >$D/use_sg
	echo 50 >$D/timeout_ms
	echo 300 >$S/delay_ms
	move_2m ${P}_timeout_2048k fallback
	move_pages_test ${P}_timeout_64k 64 2048 fallback
	echo 0 >$S/delay_ms
	echo 1000 >$D/timeout_ms
	echo 1 >$D/use_sg
	check ${P}_timeout_counted grew $D/stats timeouts "$timeouts"
	check ${P}_timeout_no_leaked_mappings no_leaked_mappings
	move_2m ${P}_after_faults_2048k all
fi

if [ "$MODE" = issue ] || [ "$MODE" = ptdma ]; then
	# A terminate_all() that fails, on an engine that would take a minute per
	# descriptor: dcbm must terminate again (every timeout_ms) rather than wait
	# for the engine; here the third second lets the terminate succeed. The
	# move completes within seconds, by the CPU, with the data intact.
	tf=$(stat $S/stats terminate_failures)
	timeouts=$(stat $D/stats timeouts)
	echo 200 >$D/timeout_ms
	echo 60000 >$S/delay_ms
	echo 1 >$S/terminate_fails
	(sleep 3; echo 0 >$S/terminate_fails) &
	t0=$(date +%s)
	move_pages_test ${P}_terminate_fails_2048k 2048 4096 fallback
	t1=$(date +%s)
	wait
	echo 0 >$S/delay_ms
	echo 1000 >$D/timeout_ms
	check ${P}_terminate_fails_bounded sh -c "[ $((t1 - t0)) -le 20 ] || { echo 'the move took $((t1 - t0)) s'; exit 1; }"
	check ${P}_terminate_fails_retried sh -c "
		n=\$(awk '\$1 == \"terminate_failures\" { print \$2 }' $S/stats)
		[ \$((n - $tf)) -ge 2 ] || { echo \"terminate failed \$((n - $tf)) times, want at least 2\"; exit 1; }"
	check ${P}_terminate_fails_timeout_counted grew $D/stats timeouts "$timeouts"
	check ${P}_terminate_fails_no_leaked_mappings no_leaked_mappings
	move_2m ${P}_after_terminate_fails_2048k all
fi

# Bad writes fail and change nothing.
check ${P}_bad_chan_zero bad_write $D nr_dma_chan 0 4
check ${P}_bad_chan_17 bad_write $D nr_dma_chan 17 4
check ${P}_bad_chan_negative bad_write $D nr_dma_chan -1 4
check ${P}_bad_chan_text bad_write $D nr_dma_chan four 4
check ${P}_bad_chan_empty bad_write $D nr_dma_chan "" 4
check ${P}_bad_chan_overlong bad_write $D nr_dma_chan 00000000000000000000000000000000004 4
check ${P}_bad_use_sg bad_write $D use_sg 2 1
check ${P}_timeout_default expect_file $D/timeout_ms 1000
check ${P}_bad_timeout_zero bad_write $D timeout_ms 0 1000
check ${P}_bad_timeout_overflow bad_write $D timeout_ms 4294967296 1000
check ${P}_bad_timeout_above_cap bad_write $D timeout_ms 10001 1000
check ${P}_bad_registered bad_write $D registered yes 1

# More channels than the engine has: dcbm holds what it can get.
echo 8 >$D/nr_dma_chan
check ${P}_channels_capped expect_file $D/nr_dma_chan 4

# The engine's driver unbound while another process migrates, every
# descriptor held back 300 ms so that a batch is on the channels: the core
# asks dcbm for its channels back before the engine stops; dcbm gives each
# back once the batch using it is done (no batch times out: none is cut off
# by the engine going away), and then declines batches (the CPU copies
# them, counted as nochannel); asking for channels then fails (ENODEV);
# nothing stays mapped, no warning (a channel kept past its provider).
# Bound again, dcbm takes channels when asked, and copies again.
SWDRV=/sys/bus/platform/drivers/swdma
unbind_under_load() {
	revoked=$(stat $D/stats revoked)
	timeouts=$(stat $D/stats timeouts)
	echo 300 >$S/delay_ms
	loop_start ${P}_unbind_loop
	sleep 2
	t0=$(date +%s)
	echo swdma >$SWDRV/unbind || { echo "unbind failed"; loop_abort; return 1; }
	t1=$(date +%s)
	echo "unbind took $((t1 - t0)) s"
	[ $((t1 - t0)) -le 10 ] || { echo "the unbind took $((t1 - t0)) s"; loop_abort; return 1; }
	expect_file $D/nr_dma_chan 0 || { loop_abort; return 1; }
	n=$(stat $D/stats revoked)
	[ $((n - revoked)) -eq 4 ] || { echo "dcbm gave back $((n - revoked)) channels, want 4"; loop_abort; return 1; }
	n=$(stat $D/stats timeouts)
	[ "$n" -eq "$timeouts" ] || { echo "$((n - timeouts)) batches timed out during the unbind"; loop_abort; return 1; }
	nochannel=$(stat $D/stats nochannel)
	sleep 2
	loop_stop || return 1
	grew $D/stats nochannel "$nochannel" || return 1
	no_leaked_mappings
}
# The engine's driver unbound while a batch is past its timeout and the
# engine refuses to terminate (terminate_fails), its descriptors held 6 s:
# dcbm keeps terminating every timeout_ms and the unbind waits for it - the
# engine is not stopped, nor the channel freed, under a transfer that may
# still write - until the descriptors complete; then the batch goes to the
# CPU (bytes compared by move_pages_test) and the unbind ends, within 20 s,
# nothing left mapped.
unbind_terminate_fails() {
	echo 200 >$D/timeout_ms
	echo 6000 >$S/delay_ms
	echo 1 >$S/terminate_fails
	move_pages_test ${P}_unbind_terminate_fails_2048k 2048 4096 fallback &
	mover=$!
	sleep 1
	t0=$(date +%s)
	echo swdma >$SWDRV/unbind || { echo "unbind failed"; wait $mover; return 1; }
	t1=$(date +%s)
	wait $mover || { echo "the move failed"; return 1; }
	echo "unbind took $((t1 - t0)) s"
	[ $((t1 - t0)) -ge 3 ] || { echo "the unbind took $((t1 - t0)) s: it did not wait for the batch"; return 1; }
	[ $((t1 - t0)) -le 20 ] || { echo "the unbind took $((t1 - t0)) s"; return 1; }
	expect_file $D/nr_dma_chan 0 || return 1
	no_leaked_mappings
}
# No warning from the core (a client that kept a channel) since the unbind.
unbind_quiet() {
	! log_since "$P: unbind" | grep -E 'WARNING|BUG|still waiting|hold a reference'
}
# Personalities without device_release cannot be unbound (a client that
# did not ask to be told would keep freed channels).
if [ "$MODE" = issue ]; then
	check ${P}_not_unbindable sh -c "[ ! -e $SWDRV/unbind ] || { echo 'swdma can be unbound'; exit 1; }"
fi
if [ "$MODE" = idxd ]; then
	log_mark "$P: unbind"
	check ${P}_unbind_under_load unbind_under_load
	move_pages_test ${P}_unbound_2048k 2048 "$TOTAL_KB" fallback
	check ${P}_unbound_no_channel bad_write $D nr_dma_chan 4 0
	check ${P}_unbind_quiet unbind_quiet
	echo swdma >$SWDRV/bind
	echo "$START" >$S/start
	echo 4 >$D/nr_dma_chan
	check ${P}_rebound_channels expect_file $D/nr_dma_chan 4
	move_2m ${P}_rebound_2048k all
	log_mark "$P: unbind during terminate"
	check ${P}_unbind_terminate_fails unbind_terminate_fails
	check ${P}_unbind_terminate_fails_quiet sh -c "
		! log_since '$P: unbind during terminate' | grep -E 'WARNING|BUG|hold a reference'"
	# A device bound again starts with no fault injected.
	echo 1000 >$D/timeout_ms
	echo swdma >$SWDRV/bind
	echo "$START" >$S/start
	echo 4 >$D/nr_dma_chan
	move_2m ${P}_rebound_again_2048k all
fi

# Unloading while another process migrates: the engine cannot go while dcbm
# holds its channels; dcbm goes at once (unloading unregisters it, after the
# copies in flight), then the engine.
unload_under_load() {
	loop_start ${P}_unload_loop
	sleep 2
	if rmmod swdma 2>/dev/null; then echo "swdma unloaded under dcbm"; loop_abort; return 1; fi
	rmmod dcbm || { echo "rmmod dcbm failed while migrations ran"; loop_abort; return 1; }
	expect_file $CTL/migrator none || { loop_abort; return 1; }
	for u in /sys/class/dma/dma*chan*/in_use; do
		[ -e "$u" ] || continue
		[ "$(cat "$u")" = 0 ] || { echo "$u is $(cat "$u") after dcbm left"; loop_abort; return 1; }
	done
	rmmod swdma || { echo "rmmod swdma failed"; loop_abort; return 1; }
	sleep 2
	loop_stop || return 1
	no_leaked_mappings
}
check ${P}_unload_under_load unload_under_load
move_pages_test ${P}_unloaded_2048k 2048 "$TOTAL_KB" none
