#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make build: configure and build the test kernel in build/kunit with
# kunit.py (x86_64, LLVM=-19, CONFIG_RUST=y), incrementally; C through ccache.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -d "$LINUX_DIR/.git" ] || die "no linux/ tree: run 'make setup' first"
mkdir -p "$KUNIT_BUILD"
export CCACHE_DIR=${CCACHE_DIR:-$BUILD_DIR/ccache}
# The kernel's own build directory is absolute, so ccache hashes would differ
# between clones; let it rewrite paths relative to the tree.
export CCACHE_BASEDIR=$TOP CCACHE_NOHASHDIR=true

say "build: kernel in ${KUNIT_BUILD#"$TOP"/} (log: build/kunit-build.log)"
if ! python3 "$LINUX_DIR/tools/testing/kunit/kunit.py" build \
	--build_dir="$KUNIT_BUILD" \
	--kunitconfig="$TOP/kunit/.kunitconfig" \
	--qemu_config="$TOP/kunit/qemu_numa.py" \
	--jobs="$(nproc)" \
	--make_options="LLVM=$LLVM_SUFFIX" \
	--make_options="CC=ccache clang$LLVM_SUFFIX" \
	>"$BUILD_DIR/kunit-build.log" 2>&1; then
	tail -n 40 "$BUILD_DIR/kunit-build.log" >&2
	die "kernel build failed (full log: build/kunit-build.log)"
fi
say "build: done"
