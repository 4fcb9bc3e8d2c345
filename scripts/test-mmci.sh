#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make test-mmci: upstream's mm CI (linux-mm/mm-ci, run-mm-selftests.sh) on
# Linux 7.3.4 and on the series, under TCG. Separate from 'make test': it
# takes hours here.
#   1. Two kernels, incrementally, from kunit/.kunitconfig + kunit/mmci.config
#      (mm-ci's config fragment and what its guest needs): build/mmci-base
#      from tag base (a git archive in build/mmci-src-base) and
#      build/mmci-series from linux/ HEAD (a worktree, build/mmci-src-series,
#      moved to the new HEAD when it changes); a check lists every mm-ci
#      option the .config lacks (build/mmci/config-check-*.txt).
#   2. tools/testing/selftests/mm of each tree, as mm-ci builds it, against
#      the kernel's headers, copied into an ext4 image.
#   3. One virtme-ng boot (vng --disable-kvm) per configuration and suite,
#      the guest as mm-ci's: 16 GiB in two NUMA nodes of 8 GiB, four 1 GiB
#      huge pages (reserved on the command line: asked for at runtime, a
#      TCG guest got 0 to 2 of them, a different number in each boot), a 2
#      GiB virtio swap disk, the ext4 image (read-only to the host: QEMU
#      snapshot), tmpfs /tmp, ASLR off; then
#      tools/testing/selftests/mm/ksft_SUITE.sh; the serial console (the
#      whole kernel log) goes to out.log with the tests' output. A suite
#      fails on a failing exit status, a timeout, or a kernel log with a
#      splat.
# Configurations (MMCI_CONFIGS, in this order by default), all running
# 7.3.4's selftests, so that a suite is the same tests on every kernel:
#   base          Linux 7.3.4
#   series        the series, no migrator
#   series-test   the series, the test migrator (migrate_offload_test_migrator)
#   series-mtcopy the series, mtcopy
#   series-dcbm   the series, dcbm over the software DMA engine (swdma)
#   series-own    the series with its own selftests (the cases it adds to
#                 migration and soft_dirty: its own tests, not a comparison)
# The migrators get every migration reason and min_batch_bytes 0: more of
# the suites' migrations go through them than the defaults would send (a
# stress of the offload, not its default policy), and their copies run in
# software on the guest's vCPUs: a TIMEOUT there is time, not evidence of
# a regression, until a longer MMCI_TIMEOUT shows otherwise.
# MMCI_SUITES: the suites (default: mm-ci's 30; the series' own
# migrate_offload may be added, NA on 7.3.4). A (configuration, suite)
# with a result in build/mmci/CONFIG/SUITE/ from the same kernel, selftests
# image and guest script (a stamp in the result) is not run again unless
# MMCI_FORCE=1, so partial runs add up; build/mmci/results.md is written
# from every result there, a stale one marked as such. MMCI_TIMEOUT: seconds per suite (default 1800:
# mm-ci's 300 s on KVM, TCG being 5-10 times slower, and the boot).
# MMCI_BOOT_LIMIT: seconds a boot may take to reach userspace before it is
# counted as stalled and done again, once (default 300; a boot takes ~15).
# NO_BUILD=1: use the kernels and selftests as last built.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

MMCI_DIR=$BUILD_DIR/mmci
# The virtme-ng release the results were measured with.
VIRTME_NG_VERSION=1.42
ALL_SUITES=(compaction madv_guard madv_populate mdwe mkdirty pfnmap process_madv
	process_mrelease rmap vma_merge mmap mremap page_frag ksm_numa soft_dirty cow
	pagemap migration mlock hugevm pkey gup_test memfd_secret ksm memory_failure
	thp userfaultfd hugetlb hmm vmalloc)
# Listed in the results too when run: the series' own ksft script.
EXTRA_SUITES=(migrate_offload)
# mm-ci reports a failure of these but does not count it.
FLAKY=" ksm ksm_numa "
ALL_CONFIGS=(base series series-test series-mtcopy series-dcbm series-own)
read -r -a CONFIGS <<<"${MMCI_CONFIGS:-${ALL_CONFIGS[*]}}"
read -r -a SUITES <<<"${MMCI_SUITES-${ALL_SUITES[*]}}"
TIMEOUT=${MMCI_TIMEOUT:-1800}
# Seconds for a guest to reach userspace before its boot counts as stalled
# (MMCI_BOOT_LIMIT; see run_suite()).
BOOT_LIMIT=${MMCI_BOOT_LIMIT:-300}
GUEST_LOCK=${GUEST_LOCK:-/tmp/ks/guest.lock}
# mm-ci's config fragment (kconfigs/mm-selftests.config), the options that
# must be y or m in both .configs.
MMCI_OPTIONS=(MMU HUGETLBFS HUGETLB_PAGE TRANSPARENT_HUGEPAGE TRANSPARENT_HUGEPAGE_ALWAYS
	MEMORY_FAILURE MM_ID THP_SWAP NUMA NUMA_BALANCING COMPACTION MIGRATION MEMCG SWAP
	MEMCG_V1 CGROUP_WRITEBACK USERFAULTFD PTE_MARKER_UFFD_WP KSM MEMORY_HOTPLUG
	MEMORY_HOTREMOVE DEBUG_VM DEBUG_VM_PGTABLE DEBUG_VM_IRQSOFF GUP_TEST DEVICE_PRIVATE
	TEST_HMM TEST_VMALLOC HWPOISON_INJECT KUNIT SLUB_DEBUG SLUB_KUNIT_TEST
	CHECKPOINT_RESTORE MEM_SOFT_DIRTY SYSVIPC SHMEM TMPFS PROC_FS SYSFS IKCONFIG
	IKCONFIG_PROC PSI SLAB_OBJ_EXT PROC_CHILDREN CONFIGFS_FS FAULT_INJECTION FAILSLAB
	DEBUG_FS ANON_VMA_NAME FS_DAX_PMD PROC_MEM_ALWAYS_FORCE VIRTIO_PCI VIRTIO_MMIO
	VIRTIO_BLK VIRTIO_NET VIRTIO_CONSOLE VIRTIO_INPUT TUN EXT4_FS EXT4_USE_FOR_EXT2
	XFS_FS)
# mm-ci's console check (check_kernel_log), and what it lets pass.
BAD_RE='WARNING:|BUG|Oops|UBSAN:|rcu:.*stall|INFO: task .* blocked|watchdog:.*LOCKUP'
OK_RE='FAULT_INJECTION'
OK_RE_MEMORY_FAILURE='Memory failure:|MCE: Killing|Soft offline:|Unpoison:'

export CCACHE_DIR=${CCACHE_DIR:-$BUILD_DIR/ccache}
export CCACHE_BASEDIR=$TOP CCACHE_NOHASHDIR=true
MAKE_KERNEL=("${MAKE_LLVM[@]}" "CC=ccache clang$LLVM_SUFFIX")

# src KERNEL: the source tree of base or series.
src() {
	echo "$BUILD_DIR/mmci-src-$1"
}

# prepare_src KERNEL: base as a git archive of tag base (it never moves);
# the series as a worktree of linux/ at HEAD, checked out anew when HEAD
# moves (which touches only the files that changed, so make stays
# incremental).
prepare_src() {
	local dir rev
	dir=$(src "$1")
	case $1 in
	base)
		rev=$(git -C "$LINUX_DIR" rev-parse base)
		[ "$(cat "$dir/.mmci-rev" 2>/dev/null)" = "$rev" ] && return
		rm -rf "$dir" && mkdir -p "$dir"
		git -C "$LINUX_DIR" archive base | tar -x -C "$dir"
		echo "$rev" >"$dir/.mmci-rev"
		;;
	series)
		rev=$(git -C "$LINUX_DIR" rev-parse HEAD)
		if [ -e "$dir/.git" ]; then
			[ "$(git -C "$dir" rev-parse HEAD)" = "$rev" ] ||
				git -C "$dir" checkout -q --detach "$rev"
		else
			new_worktree "$dir" "$rev"
		fi
		;;
	esac
}

# check_config KERNEL: the mm-ci options the .config lacks, one a line, in
# build/mmci/config-check-KERNEL.txt ("none missing" when there are none).
check_config() {
	local out=$MMCI_DIR/config-check-$1.txt o missing=()
	for o in "${MMCI_OPTIONS[@]}"; do
		grep -q -E "^CONFIG_$o=[ym]\$" "$BUILD_DIR/mmci-$1/.config" || missing+=("CONFIG_$o")
	done
	if [ ${#missing[@]} -eq 0 ]; then
		echo "none missing (${#MMCI_OPTIONS[@]} options of mm-ci checked)" >"$out"
	else
		printf '%s\n' "${missing[@]}" >"$out"
		say "build $1: missing mm-ci options: ${missing[*]}"
	fi
}

# build_kernel KERNEL: configure (only when the fragments changed), build
# bzImage and modules, install the modules in build/mmci-KERNEL/mods.
build_kernel() {
	local k=$1 out=$BUILD_DIR/mmci-$1 log=$MMCI_DIR/logs/build-$1.log t0
	t0=$(date +%s)
	prepare_src "$k"
	mkdir -p "$out"
	# The kunit.py qemu_config's own options (kunit/qemu_numa.py) too.
	{ cat "$TOP/kunit/.kunitconfig"
	  printf 'CONFIG_SERIAL_8250=y\nCONFIG_SERIAL_8250_CONSOLE=y\n'
	  cat "$TOP/kunit/mmci.config"; } >"$out/.config.in.new"
	if ! cmp -s "$out/.config.in.new" "$out/.config.in" || [ ! -e "$out/.config" ]; then
		cp "$out/.config.in.new" "$out/.config"
		# (The fragment repeats some options of .kunitconfig: no
		# "override" warnings.)
		make -s -C "$(src "$k")" O="$out" "${MAKE_KERNEL[@]}" olddefconfig 2>&1 |
			grep -v 'warning: override' >&2 || true
		mv "$out/.config.in.new" "$out/.config.in"
	fi
	rm -f "$out/.config.in.new"
	check_config "$k"
	say "build $k: kernel in $(logname "$out") (log: $(logname "$log"))"
	if ! nice -n 5 make -C "$(src "$k")" O="$out" "${MAKE_KERNEL[@]}" -j"$(nproc)" \
		bzImage modules >"$log" 2>&1; then
		tail -n 30 "$log" >&2
		die "build of $k failed (log: $(logname "$log"))"
	fi
	# (Others may boot these modules: reinstalled only when they changed.)
	if [ ! -e "$out/mods/.stamp" ] || [ "$out/modules.order" -nt "$out/mods/.stamp" ] ||
		[ "$out/vmlinux" -nt "$out/mods/.stamp" ]; then
		rm -rf "$out/mods"
		make -s -C "$(src "$k")" O="$out" "${MAKE_KERNEL[@]}" modules_install \
			INSTALL_MOD_PATH="$out/mods" >>"$log" 2>&1 || die "modules_install of $k failed"
		touch "$out/mods/.stamp"
	fi
	sha1sum <"$out/arch/x86/boot/bzImage" | cut -c1-12 >"$out/bzImage.sha1"
	say "build $k: done in $(($(date +%s) - t0)) s"
}

# build_selftests KERNEL: tools/testing/selftests/mm of that tree, in place,
# against the kernel's uapi headers (mm-ci: make headers_install, make -C
# tools/testing/selftests/mm), with clang as the kernel (page_frag's test
# module is built against build/mmci-KERNEL); then the ext4 image holding a
# copy of tools/testing/selftests, as mm-ci's guest has.
build_selftests() {
	local k=$1 out=$BUILD_DIR/mmci-$1 log=$MMCI_DIR/logs/selftests-$1.log st stage t0
	t0=$(date +%s)
	st=$(src "$k")/tools/testing/selftests
	say "selftests $k: building tools/testing/selftests/mm (log: $(logname "$log"))"
	# (The uapi headers do not depend on the .config: a build directory of
	# their own. 'make headers', as headers_install would need rsync.)
	mkdir -p "$MMCI_DIR/hdr-$k"
	make -s -C "$(src "$k")" O="$MMCI_DIR/hdr-$k" "${MAKE_LLVM[@]}" headers >"$log" 2>&1 ||
		die "the uapi headers of $k failed (log: $(logname "$log"))"
	# (make -C selftests/mm, as mm-ci: through selftests/Makefile with
	# TARGETS=mm, page_frag's module is built against the source tree.
	# OUTPUT given: lib.mk sets it only in a make at MAKELEVEL 0, and
	# under 'make test-mmci' an empty one put the tests in /.)
	nice -n 5 make -C "$st/mm" "${MAKE_LLVM[@]}" -j"$(nproc)" OUTPUT="$st/mm" \
		KHDR_INCLUDES="-isystem $MMCI_DIR/hdr-$k/usr/include" KDIR="$out" >>"$log" 2>&1 ||
		die "selftests build of $k failed (log: $(logname "$log"))"
	[ -x "$st/mm/migration" ] && [ -x "$st/mm/compaction_test" ] ||
		die "selftests build of $k left no tests in $st/mm (log: $(logname "$log"))"
	stage=$out/selftests-stage
	rm -rf "$stage" && mkdir -p "$stage/mm-selftests"
	cp -a "$st"/. "$stage/mm-selftests/"
	# What the image holds, for the results' stamps: the image itself is
	# made anew at every build.
	(cd "$stage" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha1sum) |
		sha1sum | cut -c1-12 >"$out/selftests.sha1"
	rm -f "$out/selftests.ext4"
	truncate -s 2G "$out/selftests.ext4"
	mkfs.ext4 -q -F -d "$stage" "$out/selftests.ext4" >>"$log" 2>&1 ||
		die "the selftests image of $k failed (log: $(logname "$log"))"
	rm -rf "$stage"
	say "selftests $k: done in $(($(date +%s) - t0)) s"
}

# guest_script CONFIG SUITE: what the guest runs (mm-ci's prepare_guest_script,
# plus the migrator of CONFIG). The swap disk and the image are found by
# their virtio serials.
guest_script() {
	local cfg=$1 suite=$2
	cat <<EOF
#!/bin/bash
disk() { local d; for d in /sys/block/vd*; do [ "\$(cat \$d/serial 2>/dev/null)" = "\$1" ] && echo /dev/\${d##*/}; done; }
swap=\$(disk mmciswap)
mkswap "\$swap" >/dev/null && swapon "\$swap" || echo "MMCI: no swap"
echo "MMCI: 1G hugepages: \$(cat /sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages 2>/dev/null || echo none)"
echo 0 >/proc/sys/kernel/randomize_va_space
mount "\$(disk mmcitests)" /mnt/st || exit 99
mount -t tmpfs tmpfs /tmp
EOF
	case $cfg in
	series-test) echo 'modprobe migrate_offload_test_migrator min_batch_bytes=0 || exit 98' ;;
	series-mtcopy) echo 'modprobe mtcopy min_batch_bytes=0 || exit 98' ;;
	series-dcbm)
		echo 'modprobe swdma nr_channels=2 || exit 98'
		echo 'modprobe dcbm nr_dma_chan=2 min_batch_bytes=0 || exit 98'
		;;
	esac
	case $cfg in
	series-*)
		cat <<'EOF'
C=/sys/kernel/mm/migrate_offload
echo all >$C/reasons && echo 0 >$C/min_batch_bytes || exit 97
for f in migrator reasons min_batch_bytes effective_reasons effective_async effective_min_batch_bytes; do
	echo "MMCI: migrate_offload/$f: $(cat $C/$f)"
done
EOF
		;;
	esac
	cat <<EOF
grep -E '^(migrate_offload|pgmigrate_success|thp_migration_success)' /proc/vmstat | sed 's/^/MMCI: before: /'
cd /mnt/st/mm-selftests/mm || exit 99
[ -e ./ksft_$suite.sh ] || { echo "MMCI: this tree has no ksft_$suite.sh"; exit 96; }
./ksft_$suite.sh -n 2>&1
rc=\$?
grep -E '^(migrate_offload|pgmigrate_success|thp_migration_success)' /proc/vmstat | sed 's/^/MMCI: after: /'
[ -e /sys/kernel/mm/migrate_offload/migrator ] && echo "MMCI: migrator at the end: \$(cat /sys/kernel/mm/migrate_offload/migrator)"
echo "MMCI: exit \$rc"
exit \$rc
EOF
}

# kernel_of CONFIG: base or series.
kernel_of() {
	case $1 in base) echo base ;; *) echo series ;; esac
}

# selftests_of CONFIG: the tree whose selftests CONFIG runs.
selftests_of() {
	case $1 in series-own) echo series ;; *) echo base ;; esac
}

# stamp CONFIG SUITE: what a result was measured with - the kernel, the
# selftests in the image (hashes written by the builds), the guest script.
stamp() {
	local k st
	k=$(kernel_of "$1")
	st=$(selftests_of "$1")
	# (Builds before those hashes: the kernel hashed here, the image by
	# its size and time.)
	{ cat "$BUILD_DIR/mmci-$k/bzImage.sha1" 2>/dev/null ||
		sha1sum <"$BUILD_DIR/mmci-$k/arch/x86/boot/bzImage"
	  cat "$BUILD_DIR/mmci-$st/selftests.sha1" 2>/dev/null ||
		stat -c '%s %Y' "$BUILD_DIR/mmci-$st/selftests.ext4"
	  guest_script "$1" "$2"; } | sha1sum | cut -c1-12
}

# fresh DIR CONFIG SUITE: DIR holds a result measured with what is built now.
fresh() {
	[ -e "$1/result" ] && grep -q " stamp=$(stamp "$2" "$3")\$" "$1/result"
}

# run_suite CONFIG SUITE: one boot; its result in build/mmci/CONFIG/SUITE/.
run_suite() {
	local cfg=$1 suite=$2 k dir rc=0 t0 t1 status kern=ok ok_re=$OK_RE
	k=$(kernel_of "$cfg")
	dir=$MMCI_DIR/$cfg/$suite
	if fresh "$dir" "$cfg" "$suite" && [ "${MMCI_FORCE:-0}" != 1 ]; then
		say "run $cfg/$suite: done before ($(cut -d' ' -f1 "$dir/result"))"
		return
	fi
	rm -rf "$dir" && mkdir -p "$dir/st"
	guest_script "$cfg" "$suite" >"$dir/guest.sh"
	say "run $cfg/$suite: waiting for the guest lock, then up to $TIMEOUT s (logs: $(logname "$dir"))"
	# shellcheck disable=SC2054 # the commas are QEMU's
	# Two sockets of two cores, one per node: vng's plain "-smp 4" puts
	# the cores of one socket (one LLC) on both nodes, and every boot then
	# WARNs in set_cpu_sibling_map() (topology_sane()).
	local qemu_opts=(-accel tcg,thread=multi -smp 4,sockets=2,cores=2,threads=1
		-drive "file=$dir/swap.qcow2,if=none,id=mmciswap,format=qcow2"
		-device virtio-blk-pci,drive=mmciswap,serial=mmciswap
		-drive "file=$BUILD_DIR/mmci-$(selftests_of "$cfg")/selftests.ext4,if=none,id=mmcitests,format=raw,snapshot=on"
		-device virtio-blk-pci,drive=mmcitests,serial=mmcitests
		-device virtio-serial-pci,id=vcon
		-device virtconsole,chardev=conlog,bus=vcon.0
		-chardev "file,id=conlog,path=$dir/console.log")
	# The time counts from when the lock is ours (another helper may be
	# booting its guest). Under TCG a boot now and then stalls before
	# userspace (in device probing or udev, seen on both kernels, busy
	# host or not): a guest whose init has not started the script after
	# BOOT_LIMIT seconds (a boot takes about 15) is killed, with its
	# process group, and booted again, once; its log is kept as
	# out-stalled.log. A second stall is the result STALL.
	local attempt
	for attempt in 1 2; do
		rc=0
		qemu-img create -q -f qcow2 "$dir/swap.qcow2" 2G
		# shellcheck disable=SC2016 # expanded by that bash
		flock "$GUEST_LOCK" bash -c '
			dir=$1 limit=$2
			shift 2
			date +%s >"$dir/start"
			setsid "$@" </dev/null >"$dir/out.log" 2>&1 &
			pid=$!
			while kill -0 "$pid" 2>/dev/null; do
				if grep -qs "virtme-ng-init: starting script" "$dir/out.log"; then
					wait "$pid"
					exit
				fi
				if [ $(($(date +%s) - $(cat "$dir/start"))) -gt "$limit" ]; then
					kill -TERM -- "-$pid" 2>/dev/null
					sleep 5
					kill -KILL -- "-$pid" 2>/dev/null
					wait "$pid"
					exit 125
				fi
				sleep 2
			done
			wait "$pid"' _ "$dir" "$BOOT_LIMIT" \
			timeout -k 10s "${TIMEOUT}s" \
			env PATH="$VENV/bin:$PATH" vng --verbose --disable-kvm --run "$BUILD_DIR/mmci-$k" \
			--cpus 4 --memory 16G --numa 8G,cpus=0-1 --numa 8G,cpus=2-3 \
			--rwdir=/mnt="$dir" --qemu-opts="${qemu_opts[*]}" \
			--append "console=hvc0 loglevel=8 panic=-1 oops=panic kunit.enable=0 hugepagesz=1G hugepages=4" \
			-- bash /mnt/guest.sh || rc=$?
		[ "$rc" = 125 ] || break
		mv "$dir/out.log" "$dir/out-stalled.log"
		rm -f "$dir/swap.qcow2" "$dir/console.log"
		say "run $cfg/$suite: the boot stalled before userspace (attempt $attempt; log: $(logname "$dir")/out-stalled.log)"
	done
	t1=$(date +%s)
	t0=$(cat "$dir/start" 2>/dev/null || echo "$t1")
	rm -f "$dir/swap.qcow2"
	[ "$suite" != memory_failure ] || ok_re="$ok_re|$OK_RE_MEMORY_FAILURE"
	# hvc0 (console.log) comes up late in the boot: the serial console
	# (--verbose) in out.log has the whole kernel log, among the output of
	# the tests, whose lines run_vmtests.sh prefixes with "# ".
	if cat "$dir/console.log" "$dir/out.log" 2>/dev/null | tr -d '\r' |
		grep -Ev '^(#|ok |not ok |MMCI: |TAP version|1\.\.)' | grep -E -- "$BAD_RE" |
		grep -Ev -- "$ok_re" >"$dir/splat.txt"; then
		kern=splat
	else
		rm -f "$dir/splat.txt"
	fi
	# vng's status is the guest command's; ksft_skip (4) counts as a pass.
	case $rc in
	0 | 4) status=PASS ;;
	124 | 137) status=TIMEOUT ;;
	125) status=STALL ;;
	96) status=NA ;;
	97 | 98 | 99) status=SETUP ;;
	*) status=FAIL ;;
	esac
	[ "$kern" = ok ] || { [ "$status" != PASS ] || status=KLOG; }
	if [ "$status" != PASS ] && [ "$status" != NA ] && [[ "$FLAKY" == *" $suite "* ]]; then
		status="$status(flaky)"
	fi
	echo "$status rc=$rc time=$((t1 - t0))s kernel_log=$kern stamp=$(stamp "$cfg" "$suite")" >"$dir/result"
	say "run $cfg/$suite: $(cat "$dir/result")"
}

# counts DIR: "pass/fail/skip" of run_vmtests' [PASS]/[FAIL]/[SKIP] lines,
# and the sums of the KTAP "Totals" lines of the tests.
counts() {
	local log=$1/out.log p f s
	p=$(tr -d '\r' <"$log" | grep -c '^# \[PASS\]' || true)
	f=$(tr -d '\r' <"$log" | grep -c '^# \[FAIL\]' || true)
	s=$(tr -d '\r' <"$log" | grep -c '^# \[SKIP\]' || true)
	printf '%s/%s/%s' "$p" "$f" "$s"
}
ktap_totals() {
	tr -d '\r' <"$1/out.log" | grep -o 'Totals: pass:[0-9]* fail:[0-9]* xfail:[0-9]* xpass:[0-9]* skip:[0-9]* error:[0-9]*' |
		awk -F'[: ]' '{ p += $4; f += $6 + $14; s += $12 } END { printf "%d/%d/%d", p, f, s }'
}

# results: build/mmci/results.md from every result in build/mmci/.
results() {
	local out=$MMCI_DIR/results.md cfg suite dir cfgs=() line r stale
	for cfg in "${ALL_CONFIGS[@]}"; do
		[ -d "$MMCI_DIR/$cfg" ] && cfgs+=("$cfg")
	done
	{
		echo "# mm-ci's mm selftests on Linux 7.3.4 (base) and the series"
		echo
		echo "Generated by scripts/test-mmci.sh on $(date -u '+%F %H:%M UTC'); series at"
		echo "$(git -C "$(src series)" log -1 --format='%h %s' 2>/dev/null || echo '?')."
		echo "Each cell: status, run_vmtests.sh [PASS]/[FAIL]/[SKIP] lines, the KTAP"
		echo "Totals of the tests (pass/fail+error/skip), wall time (TCG, four vCPUs on two host cores)."
		echo "PASS: exit 0 or 4 (skip), clean kernel log; KLOG: passed but the kernel log"
		echo "has a splat; TIMEOUT: killed after the budget; STALL: two boots stalled"
		echo "before userspace (a first stall is retried); (flaky): mm-ci does not"
		echo "count it; (stale): measured with an earlier kernel, selftests image or"
		echo "guest. Every column runs 7.3.4's selftests but series-own (the series'"
		echo "own). Logs: build/mmci/CONFIG/SUITE/{out,console}.log."
		echo
		line="| suite |"
		for cfg in "${cfgs[@]}"; do line="$line $cfg |"; done
		echo "$line"
		line="|---|"
		for cfg in "${cfgs[@]}"; do line="$line---|"; done
		echo "$line"
		for suite in "${ALL_SUITES[@]}" "${EXTRA_SUITES[@]}"; do
			line="| $suite |"
			r=0
			for cfg in "${cfgs[@]}"; do
				dir=$MMCI_DIR/$cfg/$suite
				if [ -e "$dir/result" ]; then
					r=1
					stale=
					fresh "$dir" "$cfg" "$suite" || stale=" (stale)"
					line="$line $(cut -d' ' -f1 "$dir/result")$stale $(counts "$dir") ($(ktap_totals "$dir")) $(grep -o 'time=[0-9]*s' "$dir/result" | cut -d= -f2) |"
				else
					line="$line not run |"
				fi
			done
			[ $r = 0 ] || echo "$line"
		done
	} >"$out"
	say "results: $(logname "$out")"
}

# What the selftests and virtme-ng need beyond 'make setup': libcap
# (memfd_secret), liburing (cow's io_uring cases, as mm-ci builds them) and
# udev (virtme-ng's init finds its virtio-serial ports through it).
missing=()
for p in libcap-dev liburing-dev udev; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] ||
	die "missing packages for make test-mmci; as root run: apt-get install --no-install-recommends ${missing[*]}"

mkdir -p "$MMCI_DIR/logs"
[ -x "$VENV/bin/vng" ] || {
	say "installing virtme-ng $VIRTME_NG_VERSION into $(logname "$VENV")"
	[ -x "$VENV/bin/pip" ] || python3 -m venv "$VENV"
	"$VENV/bin/pip" -q install "virtme-ng==$VIRTME_NG_VERSION"
}
[ -e "$LINUX_DIR/.git" ] || die "no linux/ tree: run 'make setup' first"
mkdir -p "$(dirname "$GUEST_LOCK")"

kernels=()
for cfg in "${CONFIGS[@]}"; do
	[[ " ${ALL_CONFIGS[*]} " == *" $cfg "* ]] || die "unknown configuration '$cfg'"
	for k in "$(kernel_of "$cfg")" "$(selftests_of "$cfg")"; do
		[[ " ${kernels[*]} " == *" $k "* ]] || kernels+=("$k")
	done
done
if [ "${NO_BUILD:-0}" != 1 ]; then
	# (The selftests of a tree are built against its kernel: page_frag's
	# test module.)
	for k in "${kernels[@]}"; do
		build_kernel "$k"
		build_selftests "$k"
	done
fi
for cfg in "${CONFIGS[@]}"; do
	for suite in "${SUITES[@]}"; do
		run_suite "$cfg" "$suite"
		results
	done
done
results
