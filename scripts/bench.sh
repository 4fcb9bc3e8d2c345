#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench: move_pages() throughput by folio size, Linux 7.3.4 against the
# series in each of its copy configurations (tools-bench/matrix).
#   1. builds each kernel of tools-bench/kernels (7.3.4, the series without
#      its rmap batching, the series) with the production configuration of
#      tools-bench/bench.config, in build/bench-NAME through ccache; builds
#      migbench statically for the guest;
#   2. boots each kernel once per round (alternating, after waiting for an
#      idle host) in QEMU with two NUMA nodes and runs migbench for every
#      throughput configuration of the matrix that names that kernel; the
#      sweep configurations (--no-throughput) in boots of their own, spread
#      over the rounds; the tiered configurations (--demotion, --promotion)
#      in boots of their own on the tiered machine (node 1 a lower memory
#      tier), spread over the rounds too;
#   3. writes build/bench/report.md, results.json, plot.png and latency.png,
#      and prints the tables.
# BENCH_FULL=1 measures more memory, more runs and call latencies;
# BENCH_MATRIX=FILE measures another matrix (tools-bench/matrix-policy: the
# offload policy); BENCH_ONLY=label,label runs only those lines of it (and
# builds only their kernels); BENCH_ROUNDS=N sets the number of rounds,
# BENCH_SWEEP_ROUNDS=N the number of boots of each kernel for the sweeps,
# BENCH_TIERED_ROUNDS=N for the tiered configurations;
# BENCH_IDLE_PCT=N the idle threshold (other processes' CPU use, in percent
# of one CPU; default 10); BENCH_SIZES=4K,16K the folio sizes of the
# throughput lines (all six by default), for a run that narrows a few
# cells with more rounds.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

BENCH_DIR=$BUILD_DIR/bench
CARGO_DIR=$BUILD_DIR/cargo
BENCH_TIMEOUT=${BENCH_TIMEOUT:-3600}
export CCACHE_DIR=${CCACHE_DIR:-$BUILD_DIR/ccache}
export CCACHE_BASEDIR=$TOP CCACHE_NOHASHDIR=true

# Each round boots every kernel once, alternating, so that slow phases of
# the host hit all configurations alike; the report pools the rounds, and
# compares them again with the boot as the unit: boots differ by more than
# the moves within one, so the rounds, not the moves per boot, are what
# narrows the ratios. Every measurement moves fresh memory; the first move
# of each size in a boot is a warm-up and is not counted. The sweep lines
# of the matrix run in boots of their own (the sweep rounds), so that their
# minutes of 4 GiB moves cannot disturb the throughput cells, with the
# common options of BENCH_SWEEP_ARGS. The tiered lines (--demotion,
# --promotion) need another machine (tools-bench/qemu-bench-tiered.args):
# they run in boots of their own on it (the tiered rounds), with the common
# options of BENCH_TIERED_ARGS.
BENCH_SWEEP_ARGS="--warmup 1"
BENCH_ARGS="--sizes ${BENCH_SIZES:-4K,16K,64K,256K,1M,2M} --memcpy-threads 2"
BENCH_TIERED_ARGS="--sizes 4K,64K,2M --warmup 1"
# The sweeps (tools-bench/matrix): folios per call at 2M, and batch_max_pages.
BENCH_COUNTS=1,8,32,64,256,512,2048
BENCH_BATCHES=1,8,64,512,2048,8192
if [ "${BENCH_FULL:-0}" = 1 ]; then
	BENCH_SWEEP_ARGS+=" --total 512M --iterations 6"
	BENCH_ARGS+=" $BENCH_SWEEP_ARGS --latency 1,16,256"
	# migbench's own sizes: 128 MiB demoted, 64 MiB promoted.
	BENCH_TIERED_ARGS+=" --iterations 5"
	BENCH_ROUNDS=${BENCH_ROUNDS:-4}
	BENCH_SWEEP_ROUNDS=${BENCH_SWEEP_ROUNDS:-4}
	BENCH_TIERED_ROUNDS=${BENCH_TIERED_ROUNDS:-2}
else
	# The default run's time, from build/bench-run.log and
	# build/bench-prealloc.log (this 2-CPU host, TCG, progress every 5 s):
	# a boot costs about 8 s besides its configurations (QEMU with 12 GiB
	# preallocated, the kernel, the power-off: a boot of no-rmap's one line
	# took 20 s) and 2-3 s between boots (idle wait, initramfs); a
	# throughput line about 12 s (10 to 15); vanilla's count sweep about
	# 90 s, a line with both sweeps 112 to 125 s. A throughput round - base
	# 2 lines, no-rmap 1, series 6 - is then 32 + 20 + 81 s and 3 gaps,
	# about 141 s; a sweep round - base 1 line, series 3 - 98 + 358 s and 2
	# gaps, about 461 s. The tiered lines have not run in a make bench yet:
	# their estimate comes from the throughput lines, whose 30 moves of
	# 128 MiB, each with its fill and checks, take about 0.35 s a move. A
	# tiered line is 3 sizes x (1 + 3) demotions of 64 MiB (fill and checks
	# like a move, the reclaim a move of slower 4K pages: about 0.5 s) and
	# as many promotions of 32 MiB (the scanner every 100-200 ms of CPU
	# time, a hinting fault per folio, the checks: 0.3 to 0.6 s), 10 to 14
	# s in all; say 12 to 20 s. A tiered round - base 1 line, series 4, two
	# boots of 8 s (10 GiB preallocated) and 2 gaps - is then 80 to 120 s.
	# 10 throughput rounds, 3 sweep rounds and 1 tiered round:
	# 10 x 141 + 3 x 461 + 120 = about 2910 s, 48.5 minutes (measured:
	# 3154 s, 52.6 minutes, on an idle host; 114 minutes on a host that
	# ran every kernel 1.7-2.7x slower, 2026-12-04/05); with a fifth
	# more for slower boots 58 minutes, and with the migbench build and the
	# report (a minute) still under 60 (kernels reused: a kernel build is
	# not counted). One tiered round, 3 measurements per size: the 60
	# minutes leave no room for more; the tiered cells' intervals are those
	# of 3 measurements of one boot (BENCH_TIERED_ROUNDS=3 for boot-to-boot
	# spread, about 2 minutes a round). A promotion that never reaches 90%
	# fails its line after --promote-timeout (60 s) instead.
	BENCH_SWEEP_ARGS+=" --total 128M --iterations 4"
	BENCH_ARGS+=" $BENCH_SWEEP_ARGS"
	BENCH_TIERED_ARGS+=" --iterations 3 --demote-total 64M --promote-total 32M"
	BENCH_ROUNDS=${BENCH_ROUNDS:-10}
	BENCH_SWEEP_ROUNDS=${BENCH_SWEEP_ROUNDS:-3}
	BENCH_TIERED_ROUNDS=${BENCH_TIERED_ROUNDS:-1}
fi
for n in BENCH_ROUNDS BENCH_SWEEP_ROUNDS BENCH_TIERED_ROUNDS; do
	[[ ${!n} =~ ^[1-9][0-9]*$ ]] || die "$n=${!n}: want a number of rounds, at least 1"
done
# The ratios the report adds to those against vanilla (pairs of matrix
# labels; a pair with a label this run does not measure is left out).
BENCH_COMPARE="cpu-batch:no-migrator no-migrator:no-migrator-no-rmap
	no-migrator-aged:no-migrator vanilla-aged:vanilla mtcopy-2t:no-migrator
	mtcopy-2t-all:no-migrator dcbm-swdma-2ch:no-migrator"
# The host is idle enough to measure on while other processes than QEMU use
# less than this, in percent of one CPU (100: one CPU's worth, whatever the
# number of the host's CPUs): before each boot it waits for that, and a
# boot during which they used more is flagged.
BENCH_IDLE_PCT=${BENCH_IDLE_PCT:-10}
# The benchmark guests: two nodes of 6 GiB, a CPU each (the count sweep
# moves 4 GiB); and for the tiered lines, node 0 with both CPUs and 4 GiB,
# node 1 memory only, 6 GiB, a lower memory tier through the ACPI HMAT.
# Both preallocated by QEMU (a move must not wait for the host to fault in
# guest memory: without it single moves ran up to 5x slower). QEMU's
# arguments, one per line, as QEMU_ARGS for scripts/lib.sh's qemu_machine
# (qemu_boot's reader, as for make test), which leaves out blank lines and
# lines starting with #.
# BENCH_MACHINE=FILE boots the throughput and sweep lines on another
# machine: tools-bench/qemu-bench-icount.args counts time in guest
# instructions; BENCH_TIERED_MACHINE=FILE the tiered lines
# (tools-bench/qemu-bench-tiered-icount.args, the same in instructions).
BENCH_MACHINE=${BENCH_MACHINE:-$TOP/tools-bench/qemu-bench.args}
BENCH_TIERED_MACHINE=${BENCH_TIERED_MACHINE:-$TOP/tools-bench/qemu-bench-tiered.args}

# The revision of linux/ a line of tools-bench/kernels names.
kernel_rev() {
	local spec=$1 subject sha
	case "$spec" in
	"parent-of "*)
		subject=${spec#parent-of }
		sha=$(git -C "$LINUX_DIR" log --format='%H %s' base..HEAD |
		      awk -v s="$subject" '{ h = $1; $1 = ""; if (substr($0, 2) == s) print h }')
		[ -n "$sha" ] || die "tools-bench/kernels: no commit '$subject' in the series"
		echo "$sha^"
		;;
	*) echo "$spec" ;;
	esac
}

# The configuration every bench kernel is built with: x86_64_defconfig and
# tools-bench/bench.config (a production build, no debug options).
BENCH_CONFIG=$TOP/tools-bench/bench.config
# Options the measured kernels must not have (they slow the paths the series
# changes), and options they need.
BENCH_FORBIDDEN=(DEBUG_VM DMA_API_DEBUG KASAN PROVE_LOCKING DEBUG_LOCK_ALLOC
	DEBUG_PAGEALLOC PAGE_OWNER KUNIT KCSAN KMSAN UBSAN DEBUG_OBJECTS)
BENCH_REQUIRED=(NUMA X86_64_ACPI_NUMA MIGRATION TRANSPARENT_HUGEPAGE DEBUG_FS
	ACPI_HMAT MEMCG NUMA_BALANCING)

# cc_version: the first line of the kernel compiler's --version ("Debian
# clang version 19.1.7 (3)"); fails without the compiler.
cc_version() {
	local v
	v=$("clang$LLVM_SUFFIX" --version 2>/dev/null) || return 1
	printf '%s\n' "$v" | sed -n 1p
}

# build_kernel NAME REV: REV of linux/ with the bench configuration, in
# build/bench-NAME, from one worktree (build/bench-src) that each build
# checks out in turn, so that ccache serves the files the kernels share.
build_kernel() {
	local name=$1 rev=$2 src=$BUILD_DIR/bench-src out=$BUILD_DIR/bench-$1 o
	# A kernel built from the same revision and configuration with the
	# same compiler is reused: checking the shared worktree out again would
	# touch the files the kernels differ in, and make would rebuild them
	# all. The compiler is in the stamp because another clang builds
	# other code from the same sources (a toolchain update must not leave
	# one kernel of the comparison built with the old one).
	local stamp cc
	cc=$(cc_version) || die "no clang$LLVM_SUFFIX to build the bench kernels with"
	stamp="$(git -C "$LINUX_DIR" rev-parse "$rev") $(sha256sum "$BENCH_CONFIG" | cut -c1-16) $cc"
	if [ -f "$out/arch/x86/boot/bzImage" ] && [ "$(cat "$out/.bench-built" 2>/dev/null)" = "$stamp" ]; then
		say "bench: the $name kernel ($rev) in ${out#"$TOP"/} is up to date"
		bzimage[$name]=$out/arch/x86/boot/bzImage
		modules[$name]=$out
		return
	fi
	say "bench: the $name kernel ($rev) in ${out#"$TOP"/} (log: build/bench-$name-build.log)"
	# (A directory that is not a worktree of its own - a stale one, or one
	# git would take for the repository it sits in - is made anew.)
	if [ "$(git -C "$src" rev-parse --show-toplevel 2>/dev/null)" != "$(realpath -m "$src")" ]; then
		new_worktree "$src" "$rev" || die "cannot create the worktree $src"
	fi
	git -C "$src" checkout -q --detach "$(git -C "$LINUX_DIR" rev-parse "$rev")"
	mkdir -p "$out"
	local make=(make -C "$src" O="$out" "${MAKE_LLVM[@]}"
		CC="ccache clang$LLVM_SUFFIX" -j"$(nproc)")
	if ! { "${make[@]}" x86_64_defconfig &&
	       cat "$BENCH_CONFIG" >>"$out/.config" &&
	       "${make[@]}" olddefconfig &&
	       "${make[@]}" bzImage modules; } >"$BUILD_DIR/bench-$name-build.log" 2>&1; then
		tail -n 30 "$BUILD_DIR/bench-$name-build.log" >&2
		die "$name kernel build failed (build/bench-$name-build.log)"
	fi
	for o in "${BENCH_FORBIDDEN[@]}"; do
		! grep -q "^CONFIG_$o=y" "$out/.config" ||
			die "the $name bench kernel has CONFIG_$o=y (tools-bench/bench.config)"
	done
	for o in "${BENCH_REQUIRED[@]}"; do
		grep -q "^CONFIG_$o=y" "$out/.config" ||
			die "the $name bench kernel lacks CONFIG_$o (tools-bench/bench.config)"
	done
	echo "$stamp" >"$out/.bench-built"
	bzimage[$name]=$out/arch/x86/boot/bzImage
	modules[$name]=$out
}

build_migbench() {
	say "bench: migbench (static, for the guest) and its report tool"
	(cd "$TOP/tools-bench" &&
		RUSTFLAGS="-C target-feature=+crt-static" CARGO_TARGET_DIR=$CARGO_DIR \
			cargo build --quiet --locked --release --no-default-features \
			--target x86_64-unknown-linux-gnu &&
		CARGO_TARGET_DIR=$CARGO_DIR cargo build --quiet --locked --release) ||
		die "migbench build failed"
}

# bench_kernel NAME PHASE ROUND: boot it once for its configurations of
# PHASE (throughput, sweep or tiered; see matrix_phase), on the tiered
# machine for the tiered phase.
bench_kernel() {
	local name=$1 phase=$2 round=$3 kernel=${bzimage[$1]} root=$BENCH_DIR/root-$1
	local log=$BENCH_DIR/$1-$2-$3.log
	rm -rf "$root" && mkdir -p "$root"/{bin,bench,proc,sys,dev,tmp}
	cp /bin/busybox "$root/bin/busybox"
	install -m 0755 "$TOP/tools-bench/guest/init" "$root/init"
	install -m 0755 "$CARGO_DIR/x86_64-unknown-linux-gnu/release/migbench" "$root/bench/"
	sed -e "s/COUNTS/$BENCH_COUNTS/g" -e "s/BATCHES/$BENCH_BATCHES/g" "$MATRIX" \
		>"$root/bench/matrix"
	echo "$BENCH_ARGS" >"$root/bench/args"
	echo "$BENCH_SWEEP_ARGS" >"$root/bench/sweep-args"
	echo "$BENCH_TIERED_ARGS" >"$root/bench/tiered-args"
	find "${modules[$name]}" -name '*.ko' -exec cp {} "$root/bench/" \;
	(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) >"$BENCH_DIR/$name.cpio"
	boot=$((boot + 1))
	wait_idle
	say "bench: boot $boot of $boots_total ($phase round $round), the $name kernel (log: ${log#"$TOP"/})"
	local busy0 qemu0 busy1 qemu1 t0 t1 raw other flag=
	children_cpu "$BENCH_DIR/cpu0"
	busy0=$(host_busy) qemu0=$(cat "$BENCH_DIR/cpu0") t0=$(date +%s.%N)
	if [ "$phase" = tiered ]; then
		export QEMU_ARGS=$BENCH_TIERED_MACHINE
	else
		export QEMU_ARGS=$BENCH_MACHINE
	fi
	qemu_boot "$kernel" "$log" "$BENCH_TIMEOUT" \
		"kunit.enable=0 loglevel=4 numa_balancing=disable bench.kernel=$name bench.phase=$phase" \
		-initrd "$BENCH_DIR/$name.cpio" &
	guest_pid=$!
	while kill -0 "$guest_pid" 2>/dev/null; do
		progress "$log"
		sleep 5
	done
	wait "$guest_pid" || true
	guest_pid=
	progress "$log"
	configs_done=$((configs_done + $(finished "$log")))
	[ ! -t 1 ] || echo
	children_cpu "$BENCH_DIR/cpu1"
	busy1=$(host_busy) qemu1=$(cat "$BENCH_DIR/cpu1") t1=$(date +%s.%N)
	# What the host's CPUs did during the boot besides QEMU, in percent of
	# one CPU: the busy time of /proc/stat less QEMU's own (its rusage).
	# The two count time apart, so on an idle host the difference can be a
	# few percent below zero; host.txt gets it raw beside the value clamped
	# at zero, and a boot whose raw value is above BENCH_IDLE_PCT is flagged
	# (it was not measured on an idle host; the report lists it).
	raw=$(awk -v b="$((busy1 - busy0))" -v q0="$qemu0" -v q1="$qemu1" -v t0="$t0" -v t1="$t1" \
		-v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", 100 * (b / hz - (q1 - q0)) / (t1 - t0) }')
	other=$(awk -v r="$raw" 'BEGIN { printf "%.1f", r < 0 ? 0 : r }')
	if above "$raw" "$BENCH_IDLE_PCT"; then
		flag=", BUSY: above $BENCH_IDLE_PCT% of one CPU"
		busy_boots+=("$name $phase round $round (${raw}%)")
		say "bench: other processes used ${raw}% of one CPU during the boot (above $BENCH_IDLE_PCT%): flagged in host.txt"
	fi
	echo "$name $phase round $round: $(awk -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.0f", t1 - t0 }') s, other host CPU use ${other}% of one CPU (raw ${raw}%; ${idle_pct}% before the boot, after ${idle_waited} s of idle wait)$flag" \
		>>"$BENCH_DIR/host.txt"
	tr -d '\r' <"$log" >"$log.txt"
	grep -q '^BENCH-DONE' "$log.txt" ||
		fails+=("$name kernel, $phase round $round: the guest did not finish (crash or timeout; see ${log#"$TOP"/})")
}

# kill_guest: stop the guest of a boot that is still running, so that a
# bench.sh that is interrupted, killed or fails does not leave QEMU behind
# for an hour (BENCH_TIMEOUT), using the host's CPUs. qemu_boot runs it in
# the background under timeout(1), which puts QEMU in a process group of
# its own that a Ctrl-C of this script does not reach: TERM goes to that
# timeout (the child of the qemu_boot subshell), which passes it on to
# QEMU, and to the subshell.
guest_pid=
kill_guest() {
	[ -n "$guest_pid" ] || return 0
	pkill -TERM -P "$guest_pid" 2>/dev/null || true
	kill -TERM "$guest_pid" 2>/dev/null || true
	wait "$guest_pid" 2>/dev/null || true
	guest_pid=
}
trap kill_guest EXIT
trap 'kill_guest; exit 130' INT
trap 'kill_guest; exit 143' TERM

# host_busy: jiffies the host's CPUs spent busy so far (/proc/stat).
host_busy() {
	awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat
}

# children_cpu FILE: CPU seconds of this shell's finished children (QEMU
# among them) into FILE. 'times' must run in this shell itself: a command
# substitution's subshell would report its own, empty, children.
children_cpu() {
	times >"$1.times"
	awk 'NR == 2 {
		n = 0
		for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); n += a[1] * 60 + a[2] }
		print n }' "$1.times" >"$1"
	rm -f "$1.times"
}

# finished LOG: configurations a boot's console says are done (or failed).
finished() {
	local c
	c=$(grep -c -a -E '^BENCH-(JSON-END|FAIL)' "$1" 2>/dev/null) || true
	echo "${c:-0}"
}

# progress LOG: the progress bar (on a terminal) or, elsewhere, a line for
# each configuration that ends, counted over the whole run.
progress() {
	local n=$((configs_done + $(finished "$1"))) total=$configs_total
	[ "$total" -gt 0 ] || return 0
	# A configuration whose run and teardown both fail says so twice.
	[ "$n" -le "$total" ] || n=$total
	if [ -t 1 ]; then
		local w=$((40 * n / total))
		printf '\r[%-40s] %d/%d configurations measured' "$(printf '%*s' "$w" '' | tr ' ' '#')" "$n" "$total"
	elif [ "$n" != "${last_progress:-}" ]; then
		say "bench: $n of $total configurations measured"
	fi
	last_progress=$n
}

# above A B: whether the number A is above B (both may have decimals).
above() {
	awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > b) }'
}

# wait_idle: before a boot, wait (up to BENCH_IDLE_WAIT s, default 120) until
# the host's processes use less than BENCH_IDLE_PCT% of one CPU over 2 s
# (QEMU is not running then: all of it is other processes), so that a build
# that just ended does not share the boot's CPUs. The last value measured
# and the seconds waited are left in idle_pct and idle_waited for host.txt.
wait_idle() {
	local b0 b1 hz
	hz=$(getconf CLK_TCK)
	idle_waited=0
	while :; do
		b0=$(host_busy)
		sleep 2
		b1=$(host_busy)
		idle_pct=$(awk -v b="$((b1 - b0))" -v hz="$hz" 'BEGIN { printf "%.1f", 100 * b / (2 * hz) }')
		above "$BENCH_IDLE_PCT" "$idle_pct" && return
		idle_waited=$((idle_waited + 2))
		if [ "$idle_waited" -ge "${BENCH_IDLE_WAIT:-120}" ]; then
			say "bench: other processes still use ${idle_pct}% of one CPU after $idle_waited s; measuring anyway (see host.txt)"
			return
		fi
	done
}

# The matrix this run measures: BENCH_MATRIX (default tools-bench/matrix),
# or only the lines whose labels BENCH_ONLY lists (comma-separated).
MATRIX=$BUILD_DIR/bench-matrix
SOURCE_MATRIX=${BENCH_MATRIX:-$TOP/tools-bench/matrix}
select_matrix() {
	[ -f "$SOURCE_MATRIX" ] || die "BENCH_MATRIX=$SOURCE_MATRIX: no such file"
	if [ -z "${BENCH_ONLY:-}" ]; then
		cp "$SOURCE_MATRIX" "$MATRIX"
		return
	fi
	awk -F'|' -v only="$BENCH_ONLY" '
		BEGIN { n = split(only, l, ","); for (i = 1; i <= n; i++) want[l[i]] = 1 }
		/^[[:space:]]*#/ || NF < 2 { next }
		{ label = $1; gsub(/ /, "", label); if (label in want) { print; found[label] = 1 } }
		END { for (k in want) if (!(k in found)) { print "no matrix line " k > "/dev/stderr"; exit 1 } }
	' "$SOURCE_MATRIX" >"$MATRIX" || die "BENCH_ONLY=$BENCH_ONLY: unknown label"
}

# A line of the matrix is a tiered line when its options have --demotion
# or --promotion: such lines run in boots of their own on the tiered
# machine. Else it is a sweep line when they have --no-throughput: such
# lines run in boots of their own.
TIERED_LINE='(^|[[:space:]])--(demotion|promotion)([[:space:]]|$)'
SWEEP_LINE='(^|[[:space:]])--no-throughput([[:space:]]|$)'

# matrix_phase [PHASE]: the lines of the matrix, comments left out, in
# order: all, or those of PHASE - tiered, the tiered lines, sweep, the
# sweep lines, or throughput, the others.
matrix_phase() {
	sed -e 's/#.*//' "$MATRIX" |
		awk -F'|' -v phase="${1:-}" -v tiered="$TIERED_LINE" -v sweep="$SWEEP_LINE" '
		NF >= 2 {
			p = $5 ~ tiered ? "tiered" : $5 ~ sweep ? "sweep" : "throughput"
			if (phase == "" || phase == p)
				print
		}'
}

# check_matrix: refuse a sweep in a throughput line, which would run in the
# throughput cells' boots, and a tiered line that would measure
# move_pages() (no --no-throughput) or sweep on the tiered machine.
check_matrix() {
	local bad
	bad=$(matrix_phase throughput | awk -F'|' '$5 ~ /--(count|batch)-sweep/ { gsub(/ /, "", $1); print $1 }' |
	      paste -sd, -)
	[ -z "$bad" ] || die "$SOURCE_MATRIX: $bad: a sweep (--count-sweep, --batch-sweep) needs a line of its own, with --no-throughput, so that it runs in boots apart from the throughput cells"
	bad=$(matrix_phase tiered | awk -F'|' -v re="$SWEEP_LINE" '
		$5 !~ re || $5 ~ /--(count|batch)-sweep/ { gsub(/ /, "", $1); print $1 }' | paste -sd, -)
	[ -z "$bad" ] || die "$SOURCE_MATRIX: $bad: a tiered line (--demotion, --promotion) runs on the tiered machine: it needs --no-throughput and no sweep (--count-sweep, --batch-sweep), which belong to the two-node machine"
}

# due K N ROUND: whether round K of the N rounds of a phase that runs apart
# (the sweeps, the tiered lines) is due after throughput round ROUND.
# Sweep round K comes after throughput round ceil(K * BENCH_ROUNDS / N),
# tiered round K after round ceil((K - 1/2) * BENCH_ROUNDS / N), the middle
# of its share of the run (one tiered round: halfway, not at the end with
# the last sweeps): spread over the run like the throughput rounds, so
# that a slow phase of the host does not fall on one phase alone.
due() {
	local k=$1 n=$2 round=$3 half=${4:-}
	[ "$k" -le "$n" ] || return 1
	if [ -n "$half" ]; then
		[ $(( ((2 * k - 1) * BENCH_ROUNDS + 2 * n - 1) / (2 * n) )) -le "$round" ]
	else
		[ $(( (k * BENCH_ROUNDS + n - 1) / n )) -le "$round" ]
	fi
}

# The labels of the matrix (of PHASE), in order.
matrix_labels() {
	matrix_phase "${1:-}" | awk -F'|' '{ gsub(/ /, "", $1); print $1 }'
}

# The kernels the matrix (of PHASE) uses.
matrix_kernels() {
	matrix_phase "${1:-}" | awk -F'|' '{ gsub(/ /, "", $2); print $2 }' | sort -u
}

# phase_kernels PHASE: the kernels of this run with lines of PHASE, in the
# order of tools-bench/kernels.
phase_kernels() {
	local k
	for k in "${kernels[@]}"; do
		if matrix_kernels "$1" | grep -qx "$k"; then
			echo "$k"
		fi
	done
}

[ -e "$LINUX_DIR/.git" ] || "$TOP/scripts/setup.sh"
require_static_busybox
t_start=$(date +%s)
declare -A bzimage modules revs
select_matrix
check_matrix
kernels=()
while read -r name spec; do
	matrix_kernels | grep -qx "$name" || continue
	kernels+=("$name")
	revs[$name]=$(kernel_rev "$spec")
	build_kernel "$name" "${revs[$name]}"
done < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$TOP/tools-bench/kernels")
# BENCH_BUILD_ONLY=1 (development): build the kernels and stop.
[ "${BENCH_BUILD_ONLY:-0}" = 0 ] || exit 0
build_migbench
rm -rf "$BENCH_DIR" && mkdir -p "$BENCH_DIR/runs"
fails=() busy_boots=()
mapfile -t throughput_kernels < <(phase_kernels throughput)
mapfile -t sweep_kernels < <(phase_kernels sweep)
mapfile -t tiered_kernels < <(phase_kernels tiered)
boots_total=$((BENCH_ROUNDS * ${#throughput_kernels[@]} + BENCH_SWEEP_ROUNDS * ${#sweep_kernels[@]} +
	BENCH_TIERED_ROUNDS * ${#tiered_kernels[@]}))
configs_total=$((BENCH_ROUNDS * $(matrix_labels throughput | wc -l) +
	BENCH_SWEEP_ROUNDS * $(matrix_labels sweep | wc -l) +
	BENCH_TIERED_ROUNDS * $(matrix_labels tiered | wc -l)))
boot=0 configs_done=0 sweep=1 tiered=1
for round in $(seq "$BENCH_ROUNDS"); do
	for name in "${throughput_kernels[@]}"; do
		bench_kernel "$name" throughput "$round"
	done
	while due "$sweep" "$BENCH_SWEEP_ROUNDS" "$round"; do
		for name in "${sweep_kernels[@]}"; do
			bench_kernel "$name" sweep "$sweep"
		done
		sweep=$((sweep + 1))
	done
	while due "$tiered" "$BENCH_TIERED_ROUNDS" "$round" half; do
		for name in "${tiered_kernels[@]}"; do
			bench_kernel "$name" tiered "$tiered"
		done
		tiered=$((tiered + 1))
	done
done

runs=()
for phase in throughput sweep tiered; do
	case $phase in
	throughput) rounds=$BENCH_ROUNDS ;;
	sweep) rounds=$BENCH_SWEEP_ROUNDS ;;
	tiered) rounds=$BENCH_TIERED_ROUNDS ;;
	esac
	while read -r label; do
		for round in $(seq "$rounds"); do
			json=$BENCH_DIR/runs/$label-$round.json
			{ cat "$BENCH_DIR"/*-"$phase"-"$round".log.txt 2>/dev/null || true; } |
				sed -n "/^BENCH-JSON-BEGIN $label\$/,/^BENCH-JSON-END $label\$/p" |
				sed '1d;$d' >"$json"
			if [ -s "$json" ]; then
				runs+=("$json")
			else
				rm -f "$json"
				fails+=("$phase round $round: no result for $label")
			fi
		done
	done < <(matrix_labels "$phase")
done
# What the guests said went wrong (a run, a setup or a teardown).
while read -r line; do
	fails+=("$line")
done < <(cd "$BENCH_DIR" && grep -H '^BENCH-FAIL' ./*.log.txt | sed 's|^\./||' || true)

mapfile -t machine < <(QEMU_ARGS=$BENCH_MACHINE qemu_machine)
mapfile -t tiered_machine < <(QEMU_ARGS=$BENCH_TIERED_MACHINE qemu_machine)
{
	echo "host CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPUs"
	echo "QEMU: $(qemu-system-x86_64 --version | head -n 1); qemu-system-x86_64 -kernel <bzImage> -append 'console=ttyS0 kunit.enable=0 bench.kernel=<name>' -initrd <migbench initramfs> ${machine[*]}"
	echo "QEMU of the tiered lines (tools-bench/qemu-bench-tiered.args): the same with ${tiered_machine[*]}"
	echo "kernel compiler: $(cc_version || echo "no clang$LLVM_SUFFIX")"
	echo "kernels (tools-bench/kernels), all built with x86_64_defconfig + tools-bench/bench.config, a production configuration (checked: no $(IFS=/; echo "${BENCH_FORBIDDEN[*]}")): $(for k in "${kernels[@]}"; do printf '%s = %s; ' "$k" "$(git -C "$LINUX_DIR" log -1 --format='%h (%s)' "${revs[$k]}")"; done)"
	echo "guest command line: numa_balancing=disable (the promotions turn its tiering mode on for themselves); guest memory: ${BENCH_MACHINE#"$TOP"/} (tools-bench/qemu-bench.args: 2 x 6 GiB, preallocated; qemu-bench-icount.args the same, timed in guest instructions), for the tiered lines ${BENCH_TIERED_MACHINE#"$TOP"/} (tools-bench/qemu-bench-tiered.args: node 0 4 GiB and both CPUs, node 1 6 GiB and no CPU, a lower memory tier through the ACPI HMAT; preallocated)"
	echo "migbench options: $BENCH_ARGS; $BENCH_ROUNDS rounds (one boot of each kernel per round, alternating)"
	echo "sweeps (the lines with --no-throughput), in boots of their own: $BENCH_SWEEP_ARGS; count sweep $BENCH_COUNTS folios per call; batch sweep batch_max_pages $BENCH_BATCHES; $BENCH_SWEEP_ROUNDS boots of each kernel with sweep lines, spread over the rounds"
	echo "tiered memory (the lines with --demotion, --promotion), in boots of their own on the tiered machine: $BENCH_TIERED_ARGS; $BENCH_TIERED_ROUNDS boots of each kernel with tiered lines, spread over the rounds"
	echo "host idle check: before each boot, until other processes use less than $BENCH_IDLE_PCT% of one CPU over 2 s (100% is one CPU's worth; the host has $(nproc)), for up to ${BENCH_IDLE_WAIT:-120} s"
	echo "host during the boots (CPU use by other processes than QEMU, in % of one CPU: /proc/stat less QEMU's rusage, clamped at 0, and raw): $(paste -sd';' "$BENCH_DIR/host.txt" | sed 's/;/; /g')"
	echo "boots on a busy host (other processes above $BENCH_IDLE_PCT% of one CPU during the boot, raw): $(if [ ${#busy_boots[@]} -gt 0 ]; then printf '%s; ' "${busy_boots[@]}" | sed 's/; $//'; else echo none; fi)"
	echo "vCPU threads not pinned: 2 vCPUs and QEMU's I/O thread on 2 host CPUs; pinning one vCPU per CPU would put the I/O thread on a vCPU's CPU"
	echo "configurations: tools-bench/matrix"
} >"$BENCH_DIR/meta.txt"

if [ ${#runs[@]} -gt 0 ]; then
	say "bench: report (build/bench/report.md, results.json, plot.png)"
	compare=()
	for pair in $BENCH_COMPARE; do
		matrix_labels | grep -qx "${pair%%:*}" && matrix_labels | grep -qx "${pair#*:}" &&
			compare+=(--compare "$pair")
	done
	"$CARGO_DIR/release/migbench" report --meta "$BENCH_DIR/meta.txt" --out "$BENCH_DIR" \
		"${compare[@]}" "${runs[@]}"
fi
say "bench: took $(( $(date +%s) - t_start )) s"
for b in "${busy_boots[@]}"; do
	printf 'BUSY HOST: %s: other processes above %s%% of one CPU during the boot\n' "$b" "$BENCH_IDLE_PCT"
done
for f in "${fails[@]}"; do
	printf 'FAILED: %s\n' "$f"
done
[ ${#fails[@]} -eq 0 ]
