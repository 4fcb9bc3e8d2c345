#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# paths_failcheck.sh PATH: show that the tests of PATH (memory_offline,
# longterm_pin, contig_range, soft_offline) fail when what they check
# breaks. Each case runs the test program, or a mutant of it (built by
# scripts/paths-mutants.sh), where it must print a FAIL line matching a
# pattern; the case passes if it does. The inner result lines are printed
# as "INNER: ...".
TEST_PREFIX=failcheck_$1
. /tests/testlib.sh
. /tests/migpath_lib.sh
T=/sys/module/migrate_offload_test_migrator/parameters

# expect_fail NAME PATTERN COMMAND...
expect_fail() {
	_n=$1 _pat=$2
	shift 2
	_o=$(timeout 900 "$@" 2>&1)
	echo "$_o" | sed 's/^GUEST-TEST: /INNER: /'
	if echo "$_o" | grep -q "^GUEST-TEST: FAIL .*$_pat"; then
		pass "failcheck_$_n"
	elif echo "$_o" | grep -q "^GUEST-TEST: SKIP"; then
		fail "failcheck_$_n" "cannot show it: the test skipped"
	else
		fail "failcheck_$_n" "no FAIL line matching '$_pat'"
	fi
}

prog=${1}_test
# The reason of the path, and what its placement check says of a page left
# where the operation must not leave it.
case $1 in
memory_offline) reason=memory_hotplug nomove="which is offline" ;;
longterm_pin) reason=longterm_pin nomove="in ZONE_MOVABLE" ;;
contig_range) reason=contig_range nomove="in the 1 GiB page at" ;;
soft_offline) reason=memory_failure nomove="did not move" ;;
*) fail "failcheck_$1" "unknown path '$1'"; exit 0 ;;
esac
quiet_start
# Data changed after the migration, or left where it was.
expect_fail "${1}_corrupt" "byte 33936 " ${prog}_corrupt fc_${1}_corrupt none
expect_fail "${1}_nomove" "$nomove" ${prog}_nomove fc_${1}_nomove none
# No migrator, but the offload expected.
expect_fail "${1}_no_migrator" "folios_copied grew by 0 " $prog fc_${1}_no_migrator offload
migrator_load test || { quiet_end; exit 0; }
# The reason enabled (alone), but no offload expected.
echo $reason >$CTL/reasons
expect_fail "${1}_enabled_expect_none" "batches were offloaded" $prog fc_${1}_enabled_none none $(own_counter test)
# A migrator that declines every batch: the offload did not happen.
echo 1 >$T/decline
expect_fail "${1}_declined" "folios_copied grew by 0 " $prog fc_${1}_declined offload $(own_counter test)
echo 0 >$T/decline
# The reason left out, but the offload expected.
reasons_but $reason compaction
expect_fail "${1}_disabled_expect_offload" "folios_copied grew by 0 " $prog fc_${1}_disabled_offload offload $(own_counter test)
migrator_unload test
if [ "$1" = soft_offline ]; then
	# dcbm with memory_failure enabled must not take the batches: expecting
	# it to fails.
	if migrator_load dcbm; then
		echo memory_failure >$CTL/reasons
		expect_fail "${1}_dcbm_expect_offload" "folios_copied grew by 0 " $prog fc_${1}_dcbm offload $(own_counter dcbm)
		migrator_unload dcbm
	fi
fi
quiet_end
