#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make test: build the test kernel if needed, then run in QEMU (TCG, two
# vCPUs, two NUMA nodes); 'make test-debug' (TEST_DEBUG=1) does the same on
# the debug kernel of kunit/debug.config (KASAN, lockdep, kmemleak, ...):
#   1. every KUnit suite of the kernel config, Rust doctests included; the
#      kernel's own kunit.py builds the kernel and parses the results;
#   2. the guest userspace tests of kunit/guest/ on the same kernel, from a
#      busybox initramfs: kunit/guest/list, the mm selftests
#      (list-selftests, four vCPUs) and the tiered-memory tests
#      (list-tiered, on the CPU-less slow node of kunit/qemu-tiered.args);
#   3. the unit tests of the benchmark in tools-bench/ (cargo test).
# 'make test-paths' (TEST_PATHS=1) runs instead, on the same kernel, the
# migration paths move_pages() does not take (kunit/guest/list-paths: memory
# offline, long-term pinning, alloc_contig_range(), soft offline, KSM, swap
# cache, shmem, ext4, device-private memory, races), with each migrator, on
# the machine of kunit/qemu-paths.args; 6 minutes on an idle host, 17 beside
# 'make test': too long to join it in CI's budget.
# The last line is "N passed, N failed[, N skipped]"; the exit status is
# non-zero on any failure. A run that does not complete counts as a failure.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

GUEST_DIR=$LOG_DIR/guest
# tools/testing/selftests/mm programs run in the guest
# (kunit/guest/mm_selftests.sh).
MM_SELFTESTS=(migration rmap mkdirty cow split_huge_page_test soft-dirty
	migration_mthp migration_hugetlb migration_pagemap migration_bdev hmm-tests)
# The debug kernel runs several times slower under TCG (its pressure tests
# alone take ~16 min, the whole guest list more than 45 min).
# list-paths' one boot took 6 minutes alone, 15 beside 'make test': 45
# leave room for a busy host.
if [ "${TEST_DEBUG:-0}" = 1 ]; then
	BOOT_TIMEOUT=${BOOT_TIMEOUT:-5400}
elif [ "${TEST_PATHS:-0}" = 1 ] || [[ ${GUEST_LIST:-} == list-paths* ]]; then
	BOOT_TIMEOUT=${BOOT_TIMEOUT:-2700}
else
	BOOT_TIMEOUT=${BOOT_TIMEOUT:-900}
fi
# What the kernel prints when something went wrong: WARN/BUG/oops, KASAN and
# UBSAN reports, lockdep and RCU reports (all "WARNING:"), hung tasks and
# stalls, kmemleak reports, the OOM killer. (Not a bare stack trace: the
# pressure tests make allocations fail on purpose.)
SPLAT='WARNING:|BUG:|Oops|kernel BUG|UBSAN:|INFO: task .* blocked|rcu: INFO|self-detected stall|unreferenced object|suspected memory leak|Out of memory'

passed=0
failed=0
skipped=0
failures=()
skips=()

# Boot the test kernel on the NUMA machine of kunit/qemu-numa.args (TCG).
# TEST_KERNEL=bzImage (development, with NO_BUILD=1 GUEST_LIST=...) boots
# another kernel with the same tests, e.g. Linux 7.3.4 from make bench's
# build/base, to compare a test's outcome with vanilla's.
boot() {
	local log=$1 cmdline=$2
	shift 2
	qemu_boot "${TEST_KERNEL:-$KUNIT_BUILD/arch/x86/boot/bzImage}" "$log" "$BOOT_TIMEOUT" \
		"$cmdline" "$@"
}

# kernel_log NAME LOG: one more check, passed if the console log of the boot
# has no splat (the first few lines of any are the failure).
kernel_log() {
	local bad
	bad=$(tr -d '\r' <"$2" | grep -E "$SPLAT" | head -n 3 | tr '\n' '|' || true)
	if [ -z "$bad" ]; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		failures+=("$1: kernel log: $bad (see $(logname "$2"))")
	fi
}

run_kunit() {
	local log=$LOG_DIR/kunit-test.log results=$LOG_DIR/kunit-results.log
	local summary case_line
	say "kunit: booting for the KUnit suites (log: $(logname "$log"))"
	boot "$log" "kunit.enable=1 kunit_shutdown=poweroff"
	# kunit.py colours its output; keep it plain for reading and grepping.
	python3 "$LINUX_DIR/tools/testing/kunit/kunit.py" parse "$log" 2>&1 |
		sed 's/\x1b\[[0-9;]*m//g' >"$results" || true
	summary=$(grep -o 'Ran [0-9]* tests: .*' "$results" | tail -n 1 || true)
	if [ -z "$summary" ]; then
		failed=$((failed + 1))
		failures+=("kunit: no summary; the run did not complete (see $(logname "$log"))")
		return
	fi
	say "kunit: $summary (details: $(logname "$results"))"
	kernel_log kunit "$log"
	# count STATUS: the number kunit.py's summary gives for STATUS, or 0.
	count() { grep -o "$1: [0-9]*" <<<"$summary" | grep -o '[0-9]*' || echo 0; }
	passed=$((passed + $(count passed)))
	skipped=$((skipped + $(count skipped)))
	failed=$((failed + $(count failed) + $(count crashed) + $(count errors)))
	# The failed cases by name (suite lines are drawn with "====").
	while read -r case_line; do
		failures+=("kunit: $case_line")
	done < <(grep -E '\[(FAILED|CRASHED)\]' "$results" | grep -v '====' || true)
}

build_initramfs() {
	local root=$GUEST_DIR/root prog
	rm -rf "$root" && mkdir -p "$root"/{bin,tests,proc,sys,dev,tmp}
	require_static_busybox
	cp /bin/busybox "$root/bin/busybox"
	install -m 0755 "$TOP/kunit/guest/init" "$root/init"
	cp "$TOP"/kunit/guest/list* "$root/tests/"
	install -m 0755 "$TOP"/kunit/guest/*.sh "$root/tests/"
	# The test kernel's modules (test migrators and providers).
	find "$KUNIT_BUILD" -name '*.ko' -exec cp {} "$root/tests/" \;
	for prog in "$TOP"/kunit/guest/*.c; do
		gcc -static -O2 -Wall -Wextra -Werror -o "$root/tests/$(basename "$prog" .c)" "$prog"
	done
	# The kernel's own mm selftests, against the kernel's uapi headers.
	make -s -C "$LINUX_DIR" O="$KUNIT_BUILD" "${MAKE_LLVM[@]}" headers
	: >"$GUEST_DIR/selftests-build.log"
	local st=$LINUX_DIR/tools/testing/selftests/mm
	# What the selftests' Makefile would find out: no liburing here (cow
	# then leaves out its io_uring cases).
	: >"$GUEST_DIR/local_config.h_gen"
	# (Static libnuma makes the linker warn about getaddrinfo, which the
	# tests never reach: keep that in a log.)
	for prog in "${MM_SELFTESTS[@]}"; do
		gcc -static -O2 -D_GNU_SOURCE= -isystem "$KUNIT_BUILD/usr/include" -I"$st/.." -I"$GUEST_DIR" -I"$LINUX_DIR" \
			-o "$root/tests/mm_$prog" "$st/$prog.c" "$st/vm_util.c" \
			"$st/hugepage_settings.c" -lnuma -lpthread \
			>>"$GUEST_DIR/selftests-build.log" 2>&1 ||
			die "building selftests/mm/$prog failed ($(logname "$GUEST_DIR")/selftests-build.log)"
	done
	# An empty ext4 file system for list-paths' ext4_migrate.sh, which
	# writes it to a RAM disk.
	rm -f "$GUEST_DIR/ext4_migrate.img"
	truncate -s 128M "$GUEST_DIR/ext4_migrate.img"
	PATH=$PATH:/usr/sbin:/sbin mkfs.ext4 -q -F -b 4096 "$GUEST_DIR/ext4_migrate.img"
	gzip -c "$GUEST_DIR/ext4_migrate.img" >"$root/tests/ext4_migrate.img.gz"
	# The mutants that list-paths' paths_failcheck.sh must see fail.
	"$TOP/scripts/paths-mutants.sh" "$TOP/kunit/guest" "$GUEST_DIR/mutants"
	install -m 0755 "$GUEST_DIR"/mutants/*_corrupt "$GUEST_DIR"/mutants/*_nomove "$root/tests/"
	# The series' shell selftest, with the KTAP helpers it sources from
	# ../kselftest, as in the selftests tree.
	install -m 0755 "$st/migrate_offload_sysfs.sh" "$root/tests/"
	mkdir -p "$root/kselftest"
	install -m 0644 "$st/../kselftest/ktap_helpers.sh" "$root/kselftest/"
	(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) >"$GUEST_DIR/initramfs.cpio"
}

# run_guest NAME LIST [QEMU_ARGS_FILE]: boot the initramfs with guest.list=LIST
# (a file of kunit/guest/) and count its GUEST-TEST lines. A list line
# "# cmdline: PARAMS" adds PARAMS to the kernel command line of its boot.
run_guest() {
	local name=$1 list=$2 log=$LOG_DIR/guest-$1.log line extra
	extra=$(sed -n 's/^# cmdline: //p' "$TOP/kunit/guest/$list" | tr '\n' ' ')
	say "guest: booting for the $name tests of kunit/guest/$list (log: ${log#"$TOP"/})"
	# NUMA balancing (on by default on a NUMA machine) would move the
	# tests' pages back towards their CPUs' node behind their checks: off;
	# the tiered tests turn it on where they test it.
	QEMU_ARGS=${3:-} boot "$log" "kunit.enable=0 loglevel=4 guest.list=$list numa_balancing=disable $extra" \
		-initrd "$GUEST_DIR/initramfs.cpio"
	while read -r line; do
		case "$line" in
		"GUEST-TEST: PASS "*) passed=$((passed + 1)) ;;
		"GUEST-TEST: FAIL "*) failed=$((failed + 1)); failures+=("guest: ${line#GUEST-TEST: FAIL }") ;;
		"GUEST-TEST: SKIP "*) skipped=$((skipped + 1)); skips+=("guest: ${line#GUEST-TEST: SKIP }") ;;
		esac
	done < <(tr -d '\r' <"$log" | grep -o 'GUEST-TEST: .*' || true)
	if ! grep -q GUEST-DONE "$log"; then
		failed=$((failed + 1))
		failures+=("guest: the $name boot did not finish (crash or timeout; see ${log#"$TOP"/})")
	fi
	kernel_log "guest $name" "$log"
}

# The benchmark's own unit tests (cargo test), counted like the others.
run_bench_unit_tests() {
	local log=$LOG_DIR/cargo-test.log line n
	say "tools-bench: cargo test (log: $(logname "$log"))"
	if ! (cd "$TOP/tools-bench" && CARGO_TARGET_DIR=$BUILD_DIR/cargo \
		cargo test --locked) >"$log" 2>&1; then
		failures+=("tools-bench: cargo test failed (see $(logname "$log"))")
	fi
	while read -r line; do
		n=$(grep -o '[0-9]* passed' <<<"$line" | grep -o '[0-9]*')
		passed=$((passed + n))
		n=$(grep -o '[0-9]* failed' <<<"$line" | grep -o '[0-9]*')
		failed=$((failed + n))
	done < <(grep '^test result:' "$log" || true)
	grep -q '^test result:' "$log" || failed=$((failed + 1))
	while read -r line; do
		failures+=("tools-bench: $line")
	done < <(grep -E '^test .* FAILED$' "$log" || true)
}

[ -e "$LINUX_DIR/.git" ] || "$TOP/scripts/setup.sh"
# NO_BUILD=1 (development): test the kernel as last built.
[ "${NO_BUILD:-0}" = 1 ] || "$TOP/scripts/build.sh"
if [ "${TEST_PATHS:-0}" = 1 ]; then
	say "guest: building the initramfs"
	mkdir -p "$GUEST_DIR"
	build_initramfs
	run_guest paths list-paths "$TOP/kunit/qemu-paths.args"
elif [ -n "${GUEST_LIST:-}" ]; then
	# For development: one list of kunit/guest/ (GUEST_LIST=list-NAME),
	# without KUnit, the selftests or the benchmark's unit tests.
	mkdir -p "$GUEST_DIR"
	build_initramfs
	case $GUEST_LIST in
	list-tiered*) qemu_args=$TOP/kunit/qemu-tiered.args ;;
	list-selftests*) qemu_args=$TOP/kunit/qemu-numa-4cpu.args ;;
	list-paths*) qemu_args=$TOP/kunit/qemu-paths.args ;;
	*) qemu_args= ;;
	esac
	run_guest "$GUEST_LIST" "$GUEST_LIST" "$qemu_args"
else
	run_kunit
	say "guest: building the initramfs"
	mkdir -p "$GUEST_DIR"
	build_initramfs
	run_guest userspace list
	run_guest selftests list-selftests "$TOP/kunit/qemu-numa-4cpu.args"
	run_guest tiered list-tiered "$TOP/kunit/qemu-tiered.args"
	say "guest: done"
	run_bench_unit_tests
fi

for f in "${skips[@]}"; do
	printf 'SKIPPED: %s\n' "$f"
done
for f in "${failures[@]}"; do
	printf 'FAILED: %s\n' "$f"
done
summary="$passed passed, $failed failed"
[ "$skipped" -eq 0 ] || summary="$summary, $skipped skipped"
echo "$summary"
[ "$failed" -eq 0 ]
