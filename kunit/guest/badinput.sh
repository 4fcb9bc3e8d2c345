#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# Bad input: every project-side control of the series written with
# invalid, empty, overlong, negative and out-of-range values. A runtime
# control (debugfs, writable module parameter) must refuse each write and
# read back unchanged; a load-time module parameter must make insmod fail,
# leave neither the module loaded nor a migrator registered, and the kernel
# log must name the parameter. The core's sysfs controls (ABI) are tested
# by the series' own selftest, tools/testing/selftests/mm/
# migrate_offload_sysfs.sh, which the list runs.
CTL=/sys/kernel/mm/migrate_offload
D=/sys/kernel/debug
TM=migrate_offload_test_migrator
. /tests/testlib.sh

OVERFLOW=99999999999999999999999
OVERLONG=$(printf '9%.0s' $(seq 300))

# sweep NAME DIR FILE [VALUE...]: the generic bad values (empty, text, too
# large, too long) and the VALUEs (trailing junk, negative, out of range for
# this control) are each refused, the file unchanged.
sweep() {
	n=$1 dir=$2 file=$3
	shift 3
	want=$(cat "$dir/$file") || { fail "$n" "cannot read $dir/$file"; return; }
	for v in "" abc "$OVERFLOW" "$OVERLONG" "$@"; do
		out=$(bad_write "$dir" "$file" "$v" "$want") ||
			{ fail "$n" "$out"; return; }
	done
	pass "$n"
}

# load_bad NAME MODULE PARAM VALUE...: insmod MODULE PARAM=VALUE fails for
# each VALUE, MODULE is not left loaded, nothing registered, and the log
# names PARAM.
load_bad() {
	n=$1 mod=$2 param=$3
	shift 3
	for v in "$@"; do
		# A mark in the log: what follows it is this insmod's (the
		# ring buffer may be full, so lines cannot be counted).
		mark="badinput: insmod $mod $param=$v"
		log_mark "$mark"
		if insmod "/tests/$mod.ko" "$param=$v" 2>/dev/null; then
			fail "$n" "insmod $mod $param=$v succeeded"
			echo 0 >"$(registered "$mod")" 2>/dev/null
			rmmod "$mod"
			return
		fi
		if grep -q "^$mod " /proc/modules; then
			fail "$n" "$mod left loaded after $param=$v"
			return
		fi
		if [ "$(cat $CTL/migrator)" != none ]; then
			fail "$n" "migrator '$(cat $CTL/migrator)' registered after $param=$v"
			return
		fi
		after=$(log_since "$mark")
		if ! echo "$after" | grep -q "$param"; then
			fail "$n" "no kernel message names $param after $param=$v: $(echo "$after" | tr '\n' '|')"
			return
		fi
	done
	pass "$n"
}

registered() {
	case "$1" in
	$TM) echo /sys/module/$TM/parameters/registered ;;
	*) echo $D/$1/registered ;;
	esac
}

# The core's debugfs control.
bad_ro() { if echo x >"$1" 2>/dev/null; then echo "$1 took a write"; return 1; fi; }
sweep badinput_batch_max_pages $D/migrate batch_max_pages 12abc -1 0 1048577

# Load-time parameters.
load_bad badinput_load_test_min_batch_bytes $TM min_batch_bytes -1 abc "$OVERFLOW"
load_bad badinput_load_test_fail_after $TM fail_after abc "$OVERFLOW"
load_bad badinput_load_test_decline $TM decline 2 abc
load_bad badinput_load_mtcopy_nr_threads mtcopy nr_threads 0 33 -1 abc "$OVERFLOW"
load_bad badinput_load_mtcopy_min_batch_bytes mtcopy min_batch_bytes -1 abc "$OVERFLOW"
load_bad badinput_load_swdma_nr_channels swdma nr_channels 0 17 -1 abc
load_bad badinput_load_swdma_personality swdma personality dsa "" ptdma2
load_bad badinput_load_swdma_report_errors swdma report_errors 2 abc
if insmod /tests/swdma.ko nr_channels=2; then
	load_bad badinput_load_dcbm_nr_dma_chan dcbm nr_dma_chan 0 17 -1 abc
	load_bad badinput_load_dcbm_timeout_ms dcbm timeout_ms 0 -1 abc
	load_bad badinput_load_dcbm_use_sg dcbm use_sg 2 abc
	load_bad badinput_load_dcbm_min_batch_bytes dcbm min_batch_bytes -1 abc "$OVERFLOW"
else
	fail badinput_load_swdma "insmod swdma failed"
fi

# Runtime controls of each module.
if insmod /tests/dcbm.ko nr_dma_chan=1; then
	sweep badinput_dcbm_nr_dma_chan $D/dcbm nr_dma_chan 12abc 0 17 -1
	sweep badinput_dcbm_use_sg $D/dcbm use_sg 12abc 2 -1
	sweep badinput_dcbm_timeout_ms $D/dcbm timeout_ms 12abc 0 -1
	sweep badinput_dcbm_registered $D/dcbm registered 12abc 2 -1
	check badinput_dcbm_stats_ro bad_ro $D/dcbm/stats
	echo 0 >$D/dcbm/registered
	rmmod dcbm
else
	fail badinput_dcbm_load "insmod dcbm failed"
fi
if grep -q "^swdma " /proc/modules; then
	sweep badinput_swdma_fail_nth $D/swdma fail_nth 12abc -1 2147483648
	sweep badinput_swdma_fail_every $D/swdma fail_every 12abc -1 4294967296
	sweep badinput_swdma_reverse $D/swdma reverse 12abc -1 2
	sweep badinput_swdma_terminate_fails $D/swdma terminate_fails 12abc -1 2
	sweep badinput_swdma_delay_ms $D/swdma delay_ms 12abc -1 60001
	rmmod swdma
fi
if insmod /tests/mtcopy.ko; then
	sweep badinput_mtcopy_nr_threads $D/mtcopy nr_threads 12abc 0 33 -1
	sweep badinput_mtcopy_registered $D/mtcopy registered 12abc 2 -1
	check badinput_mtcopy_stats_ro bad_ro $D/mtcopy/stats
	echo 0 >$D/mtcopy/registered
	rmmod mtcopy
else
	fail badinput_mtcopy_load "insmod mtcopy failed"
fi
if insmod /tests/$TM.ko; then
	sweep badinput_test_fail_after /sys/module/$TM/parameters fail_after 12abc 2147483648
	# Booleans: kstrtobool() goes by the first character (as for every
	# bool module parameter), so "12abc" is a 1; the rest must fail.
	sweep badinput_test_decline /sys/module/$TM/parameters decline -1 2
	sweep badinput_test_registered /sys/module/$TM/parameters registered -1 2
	check badinput_test_min_batch_bytes_ro bad_ro /sys/module/$TM/parameters/min_batch_bytes
	echo 0 >/sys/module/$TM/parameters/registered
	rmmod $TM
else
	fail badinput_test_load "insmod $TM failed"
fi
check badinput_nothing_left expect_file $CTL/migrator none
