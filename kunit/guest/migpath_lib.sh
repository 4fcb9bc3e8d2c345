# SPDX-License-Identifier: GPL-2.0
#
# Shell helpers of the guest tests of the migration paths move_pages() does
# not take (memory_offline.sh, longterm_pin.sh, contig_range.sh,
# soft_offline.sh): sourced after testlib.sh, not run. Each of those
# scripts takes the migrator to run with - none, test (the test migrator),
# dcbm (over swdma) or mtcopy - and loads it with migrator_load, which makes
# dcbm and mtcopy take batches of every size (min_batch_bytes=0: their own
# defaults, 2 and 4 MiB, would leave the small batches of these paths on
# the CPU).
CTL=/sys/kernel/mm/migrate_offload

# mig_args MIGRATOR: check MIGRATOR, set MIG and P (the test names' prefix,
# ${TEST_PREFIX}_MIGRATOR).
mig_args() {
	MIG=${1:-none}
	P=${TEST_PREFIX}_$MIG
	case $MIG in
	none | test | dcbm | mtcopy) ;;
	*) fail "$P" "unknown migrator '$MIG' (none, test, dcbm or mtcopy)"; exit 1 ;;
	esac
}

# own_counter MIGRATOR: the file where MIGRATOR counts the folios it copied,
# and the key of that count in it if the file has several (for the test
# programs' COUNTER_FILE [KEY] arguments).
own_counter() {
	case $1 in
	test) echo /sys/module/migrate_offload_test_migrator/parameters/copied ;;
	dcbm) echo /sys/kernel/debug/dcbm/stats folios ;;
	mtcopy) echo /sys/kernel/debug/mtcopy/stats folios ;;
	esac
}

# reasons_but REASON...: offload every migration reason the kernel knows
# but these (one write of the reasons control); on failure a FAIL line
# "${P:-$TEST_PREFIX}_reasons" (the reasons put back), status 1.
reasons_but() {
	_saved=$(cat $CTL/reasons)
	if ! echo all >$CTL/reasons; then
		fail "${P:-$TEST_PREFIX}_reasons" "writing 'all' to $CTL/reasons failed"
		return 1
	fi
	_all=$(cat $CTL/reasons)
	_want=
	for _r in $_all; do
		_keep=1
		for _x in "$@"; do [ "$_r" = "$_x" ] && _keep=0; done
		[ $_keep = 0 ] || _want="$_want $_r"
	done
	echo "$_want" >$CTL/reasons && return 0
	fail "${P:-$TEST_PREFIX}_reasons" "writing '$_want' to $CTL/reasons failed"
	echo "$_saved" >$CTL/reasons
	return 1
}

# need_movablecore NAME: SKIP NAME unless the kernel was booted with a
# ZONE_MOVABLE (movablecore=, kernelcore= or movable_node); status 1 then.
need_movablecore() {
	grep -qE '(^| )(movablecore=|kernelcore=|movable_node)' /proc/cmdline && return 0
	echo "GUEST-TEST: SKIP $1: no ZONE_MOVABLE: boot with movablecore= (e.g. movablecore=1G)"
	return 1
}

# quiet_start / quiet_end: no proactive compaction while a test counts the
# batches offloaded (its migrations would be counted too); put back after.
quiet_start() {
	quiet_mm
	_reasons=$(cat $CTL/reasons)
}
quiet_end() {
	quiet_mm_end
	echo "$_reasons" >$CTL/reasons
}

# default_reason_path PROGRAM REASON: the run of a path whose migration
# REASON is offloaded by default (memory_offline.sh, longterm_pin.sh), with
# $MIG: PROGRAM with no migrator registered; else with $MIG loaded, REASON
# in effective_reasons and the data copied by $MIG; with the test migrator
# also with REASON left out, and nothing offloaded. Compaction is left out
# with it: allocating the migration targets may compact, and those batches
# would be counted.
default_reason_path() {
	quiet_start
	if [ "$MIG" = none ]; then
		check "${P}_unregistered" expect_file $CTL/migrator none
		grun "$1" "$P" none
		quiet_end
		return
	fi
	migrator_load "$MIG" || { quiet_end; return 1; }
	check "${P}_effective" sh -c "grep -qw $2 $CTL/effective_reasons || { echo 'effective_reasons: '\$(cat $CTL/effective_reasons); exit 1; }"
	# shellcheck disable=SC2046
	grun "$1" "$P" offload $(own_counter "$MIG")
	if [ "$MIG" = test ]; then
		reasons_but "$2" compaction
		# shellcheck disable=SC2046
		grun "$1" "${P}_reason_off" none $(own_counter "$MIG")
	fi
	quiet_end
	migrator_unload "$MIG"
}
