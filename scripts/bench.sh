#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench: move_pages() throughput by folio size, Linux 7.3.4 against the
# series in each of its copy configurations (tools-bench/matrix).
#   1. builds the series' kernel (the test kernel, scripts/build.sh) and the
#      base kernel (7.3.4, tag 'base', same .config) in build/base, both
#      through ccache; builds migbench statically for the guest;
#   2. boots each kernel once in QEMU with two NUMA nodes and runs migbench
#      for every configuration of the matrix that names that kernel;
#   3. writes build/bench/report.md, results.json and plot.png, and prints
#      the table.
# BENCH_FULL=1 measures more memory, more runs and call latencies;
# BENCH_MATRIX=FILE measures another matrix (tools-bench/matrix-policy: the
# offload policy); BENCH_ONLY=label,label runs only those lines of it (and
# builds only their kernels); BENCH_ROUNDS=N sets the number of rounds.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

BENCH_DIR=$BUILD_DIR/bench
CARGO_DIR=$BUILD_DIR/cargo
BENCH_TIMEOUT=${BENCH_TIMEOUT:-3600}
export CCACHE_DIR=${CCACHE_DIR:-$BUILD_DIR/ccache}
export CCACHE_BASEDIR=$TOP CCACHE_NOHASHDIR=true

# Each round boots every kernel once, alternating, so that slow phases of
# the host hit all configurations alike; the report pools the rounds.
BENCH_ARGS="--sizes 4K,16K,64K,256K,1M,2M --memcpy-threads 2"
if [ "${BENCH_FULL:-0}" = 1 ]; then
	BENCH_ARGS+=" --total 512M --iterations 5 --latency 1,16,256"
	BENCH_ROUNDS=${BENCH_ROUNDS:-4}
else
	BENCH_ARGS+=" --total 128M --iterations 4"
	BENCH_ROUNDS=${BENCH_ROUNDS:-3}
fi

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

# build_kernel NAME REV: REV of linux/ with the test kernel's .config, in
# build/NAME from a worktree in build/NAME-src; 'series' is the test kernel.
build_kernel() {
	local name=$1 rev=$2 src=$BUILD_DIR/$1-src out=$BUILD_DIR/$1
	if [ "$name" = series ]; then
		bzimage[$name]=$KUNIT_BUILD/arch/x86/boot/bzImage
		modules[$name]=$KUNIT_BUILD
		return
	fi
	say "bench: the $name kernel ($rev) in ${out#"$TOP"/} (log: build/$name-build.log)"
	if [ ! -d "$src" ]; then
		git -C "$LINUX_DIR" worktree add --detach "$src" "$rev" >/dev/null 2>&1 ||
			die "cannot create the worktree $src"
	fi
	git -C "$src" checkout -q --detach "$(git -C "$LINUX_DIR" rev-parse "$rev")"
	mkdir -p "$out"
	cmp -s "$KUNIT_BUILD/.config" "$out/.config.test" || {
		cp "$KUNIT_BUILD/.config" "$out/.config"
		cp "$KUNIT_BUILD/.config" "$out/.config.test"
	}
	local make=(make -C "$src" O="$out" "${MAKE_LLVM[@]}"
		CC="ccache clang$LLVM_SUFFIX" -j"$(nproc)")
	if ! { "${make[@]}" olddefconfig && "${make[@]}" bzImage modules; } \
		>"$BUILD_DIR/$name-build.log" 2>&1; then
		tail -n 30 "$BUILD_DIR/$name-build.log" >&2
		die "$name kernel build failed (build/$name-build.log)"
	fi
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

# bench_kernel NAME ROUND: boot it once for its configurations.
bench_kernel() {
	local name=$1 kernel=${bzimage[$1]} root=$BENCH_DIR/root-$1 log=$BENCH_DIR/$1-$2.log
	rm -rf "$root" && mkdir -p "$root"/{bin,bench,proc,sys,dev,tmp}
	cp /bin/busybox "$root/bin/busybox"
	install -m 0755 "$TOP/tools-bench/guest/init" "$root/init"
	install -m 0755 "$CARGO_DIR/x86_64-unknown-linux-gnu/release/migbench" "$root/bench/"
	cp "$MATRIX" "$root/bench/matrix"
	echo "$BENCH_ARGS" >"$root/bench/args"
	find "${modules[$name]}" -name '*.ko' -exec cp {} "$root/bench/" \;
	(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) >"$BENCH_DIR/$name.cpio"
	say "bench: round $2 of $BENCH_ROUNDS, booting the $name kernel (log: ${log#"$TOP"/})"
	qemu_boot "$kernel" "$log" "$BENCH_TIMEOUT" "kunit.enable=0 loglevel=4 bench.kernel=$name" \
		-initrd "$BENCH_DIR/$name.cpio"
	tr -d '\r' <"$log" >"$log.txt"
	grep -q '^BENCH-DONE' "$log.txt" ||
		fails+=("$name kernel: the guest did not finish (crash or timeout; see ${log#"$TOP"/})")
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

# The labels of the matrix, in order.
matrix_labels() {
	sed -e 's/#.*//' "$MATRIX" | awk -F'|' 'NF >= 2 { gsub(/ /, "", $1); print $1 }'
}

# The kernels the matrix uses.
matrix_kernels() {
	sed -e 's/#.*//' "$MATRIX" | awk -F'|' 'NF >= 2 { gsub(/ /, "", $2); print $2 }' | sort -u
}

[ -d "$LINUX_DIR/.git" ] || "$TOP/scripts/setup.sh"
require_static_busybox
t_start=$(date +%s)
"$TOP/scripts/build.sh"
declare -A bzimage modules revs
select_matrix
kernels=()
while read -r name spec; do
	matrix_kernels | grep -qx "$name" || continue
	kernels+=("$name")
	revs[$name]=$(kernel_rev "$spec")
	build_kernel "$name" "${revs[$name]}"
done < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$TOP/tools-bench/kernels")
build_migbench
rm -rf "$BENCH_DIR" && mkdir -p "$BENCH_DIR/runs"
fails=()
for round in $(seq "$BENCH_ROUNDS"); do
	for name in "${kernels[@]}"; do
		bench_kernel "$name" "$round"
	done
done

runs=()
while read -r label; do
	for round in $(seq "$BENCH_ROUNDS"); do
		json=$BENCH_DIR/runs/$label-$round.json
		cat "$BENCH_DIR"/*-"$round".log.txt |
			sed -n "/^BENCH-JSON-BEGIN $label\$/,/^BENCH-JSON-END $label\$/p" |
			sed '1d;$d' >"$json"
		if [ -s "$json" ]; then
			runs+=("$json")
		else
			rm -f "$json"
			fails+=("round $round: no result for $label")
		fi
	done
done < <(matrix_labels)
# What the guests said went wrong (a run, a setup or a teardown).
while read -r line; do
	fails+=("$line")
done < <(cd "$BENCH_DIR" && grep -H '^BENCH-FAIL' ./*.log.txt | sed 's|^\./||' || true)

mapfile -t machine < <(qemu_machine)
{
	echo "host CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPUs"
	echo "QEMU: $(qemu-system-x86_64 --version | head -n 1); qemu-system-x86_64 -kernel <bzImage> -append 'console=ttyS0 kunit.enable=0 bench.kernel=<name>' -initrd <migbench initramfs> ${machine[*]}"
	echo "kernels (tools-bench/kernels), all with the test kernel's .config (kunit/.kunitconfig: CONFIG_DEBUG_VM=y, KUnit built in, not run): $(for k in "${kernels[@]}"; do printf '%s = %s; ' "$k" "$(git -C "$LINUX_DIR" log -1 --format='%h (%s)' "${revs[$k]}")"; done)"
	echo "migbench options: $BENCH_ARGS; $BENCH_ROUNDS rounds (one boot of each kernel per round, alternating)"
	echo "configurations: tools-bench/matrix"
} >"$BENCH_DIR/meta.txt"

if [ ${#runs[@]} -gt 0 ]; then
	say "bench: report (build/bench/report.md, results.json, plot.png)"
	"$CARGO_DIR/release/migbench" report --meta "$BENCH_DIR/meta.txt" --out "$BENCH_DIR" "${runs[@]}"
fi
say "bench: took $(( $(date +%s) - t_start )) s"
for f in "${fails[@]}"; do
	printf 'FAILED: %s\n' "$f"
done
[ ${#fails[@]} -eq 0 ]
