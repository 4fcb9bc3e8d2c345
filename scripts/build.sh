#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make build: configure and build the test kernel in build/kunit (or, with
# TEST_DEBUG=1, the debug kernel in build/debug) with
# kunit.py (x86_64, LLVM=-19, CONFIG_RUST=y), incrementally; C through ccache.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -e "$LINUX_DIR/.git" ] || die "no linux/ tree: run 'make setup' first"
mkdir -p "$KUNIT_BUILD"
export CCACHE_DIR=${CCACHE_DIR:-$BUILD_DIR/ccache}
# The kernel's own build directory is absolute, so ccache hashes would differ
# between clones; let it rewrite paths relative to the tree.
export CCACHE_BASEDIR=$TOP CCACHE_NOHASHDIR=true

log=$LOG_DIR/kunit-build.log
kunitconfigs=()
for f in "${KUNITCONFIGS[@]}"; do
	kunitconfigs+=(--kunitconfig="$TOP/$f")
done
mkdir -p "$LOG_DIR"
say "build: kernel in $(logname "$KUNIT_BUILD") (log: $(logname "$log"))"
if ! python3 "$LINUX_DIR/tools/testing/kunit/kunit.py" build \
	--build_dir="$KUNIT_BUILD" \
	"${kunitconfigs[@]}" \
	--qemu_config="$TOP/kunit/qemu_numa.py" \
	--jobs="$(nproc)" \
	--make_options="LLVM=$LLVM_SUFFIX" \
	--make_options="CC=ccache clang$LLVM_SUFFIX" \
	>"$log" 2>&1; then
	tail -n 40 "$log" >&2
	die "kernel build failed (full log: $(logname "$log"))"
fi
say "build: done"
