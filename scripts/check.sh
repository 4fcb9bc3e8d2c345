#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make check: checkpatch.pl --strict on every patch of the series (zero
# errors, warnings and checks, except those justified in
# patches/checkpatch-exceptions), every prefix of the series compiling
# without W=1 warnings (scripts/check-prefixes.sh), rustfmtcheck, and
# clippy on the kernel's Rust code; rustfmt and clippy on tools-bench/.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -e "$LINUX_DIR/.git" ] || die "no linux/ tree: run 'make setup' first"
CHECK_BUILD=$BUILD_DIR/check
# checkpatch's SPDX check needs ply and GitPython, which live in the venv.
export PATH="$VENV/bin:$PATH"
bad=0

run_checkpatch() {
	local p n=0
	while read -r p; do
		checkpatch_patch "$p" || bad=1
		n=$((n + 1))
	done < <(series_patches)
	say "checkpatch: $n patches checked"
}

# The Rust checks run in their own build directory with the test kernel's
# config, so that clippy's objects never replace the test kernel's.
run_rust_checks() {
	local dirs=(rust/) d
	[ -e "$KUNIT_BUILD/.config" ] || "$TOP/scripts/build.sh"
	mkdir -p "$CHECK_BUILD"
	cmp -s "$KUNIT_BUILD/.config" "$CHECK_BUILD/.config" ||
		cp "$KUNIT_BUILD/.config" "$CHECK_BUILD/.config"
	# Rust drivers the series adds, outside rust/.
	while read -r d; do
		dirs+=("$d/")
	done < <(git -C "$LINUX_DIR" diff --name-only base HEAD -- '*.rs' |
		 grep -v '^rust/' | xargs -r -n1 dirname | sort -u)
	say "rust: rustfmtcheck"
	if ! make -s -C "$LINUX_DIR" O="$CHECK_BUILD" "${MAKE_LLVM[@]}" rustfmtcheck; then
		bad=1
	fi
	say "rust: clippy on ${dirs[*]} (log: build/clippy.log)"
	make -C "$LINUX_DIR" O="$CHECK_BUILD" "${MAKE_LLVM[@]}" CC="ccache clang$LLVM_SUFFIX" \
		-j"$(nproc)" olddefconfig >/dev/null
	if ! make -C "$LINUX_DIR" O="$CHECK_BUILD" "${MAKE_LLVM[@]}" CC="ccache clang$LLVM_SUFFIX" \
		CLIPPY=1 -j"$(nproc)" "${dirs[@]}" >"$BUILD_DIR/clippy.log" 2>&1; then
		tail -n 30 "$BUILD_DIR/clippy.log"
		bad=1
	elif grep -q '^warning\|^error' "$BUILD_DIR/clippy.log"; then
		grep -A8 '^warning\|^error' "$BUILD_DIR/clippy.log" | head -n 60
		bad=1
	fi
}

# The benchmark crate: formatted, and clippy-clean with and without the
# report feature (the guest build has none), warnings denied.
run_bench_checks() {
	say "tools-bench: cargo fmt --check, cargo clippy"
	(cd "$TOP/tools-bench" && cargo fmt --check) || bad=1
	for features in "" --no-default-features; do
		# shellcheck disable=SC2086
		(cd "$TOP/tools-bench" && CARGO_TARGET_DIR=$BUILD_DIR/cargo \
			cargo clippy --quiet --locked --all-targets $features -- -D warnings) || bad=1
	done
}

run_checkpatch
"$TOP/scripts/check-prefixes.sh" || bad=1
run_rust_checks
run_bench_checks
if [ $bad -ne 0 ]; then
	echo "make check: FAILED"
	exit 1
fi
echo "make check: clean"
