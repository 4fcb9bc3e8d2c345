#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# paths_failcheck.sh PATH: show that the tests of PATH (memory_offline,
# longterm_pin, contig_range, soft_offline) fail when what they check
# breaks. Each case runs the test program, or a mutant of it (built by
# scripts/paths-mutants.sh), where it must print a FAIL line matching a
# pattern; the case passes if it does. The inner result lines are printed
# as "INNER: ...".
. /tests/testlib.sh
. /tests/migpath_lib.sh
T=/sys/module/migrate_offload_test_migrator/parameters

# expect_fail NAME PATTERN COMMAND...
expect_fail() {
	_n=$1 _pat=$2
	shift 2
	_o=$("$@" 2>&1)
	echo "$_o" | sed 's/^GUEST-TEST: /INNER: /'
	if echo "$_o" | grep -q "^GUEST-TEST: FAIL .*$_pat"; then
		pass "failcheck_$_n"
	else
		fail "failcheck_$_n" "no FAIL line matching '$_pat'"
	fi
}

quiet_start
prog=${1}_test
case $1 in
memory_offline) reason=memory_hotplug ;;
longterm_pin) reason=longterm_pin ;;
contig_range) reason=contig_range ;;
soft_offline) reason=memory_failure ;;
esac
# Data changed after the migration, or left where it was.
expect_fail "${1}_corrupt" "byte 33936 " ${prog}_corrupt fc_${1}_corrupt none
expect_fail "${1}_nomove" "pfn" ${prog}_nomove fc_${1}_nomove none
# No migrator, but the offload expected.
expect_fail "${1}_no_migrator" "folios_copied grew by 0 " $prog fc_${1}_no_migrator offload
insmod /tests/migrate_offload_test_migrator.ko
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
rmmod migrate_offload_test_migrator
if [ "$1" = soft_offline ]; then
	# dcbm with memory_failure enabled must not take the batches: expecting
	# it to fails.
	migrator_load dcbm
	echo memory_failure >$CTL/reasons
	expect_fail "${1}_dcbm_expect_offload" "folios_copied grew by 0 " $prog fc_${1}_dcbm offload $(own_counter dcbm)
	migrator_unload dcbm
fi
quiet_end
