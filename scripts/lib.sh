# SPDX-License-Identifier: GPL-2.0
# Common settings for the project's scripts. Sourced, never run.

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LINUX_DIR=${LINUX_DIR:-$TOP/linux}
BUILD_DIR=${BUILD_DIR:-$TOP/build}
KUNIT_BUILD=$BUILD_DIR/kunit
VENV=$BUILD_DIR/venv

# The base tree: Debian's linux-source-7.3, pinned.
BASE_PKG=linux-source-7.3
BASE_VERSION=7.3.4-1~bpo13+1
BASE_SUITE=trixie-backports
BASE_TARBALL=linux-source-7.3.tar.xz
BASE_SHA256=76df1affb19f24926949369be1d74b60071c963c598ce8780bddd4bbf0fc3bc4

# The toolchain the test kernel is built with.
LLVM_SUFFIX=-19
MAKE_LLVM=(LLVM=$LLVM_SUFFIX)
BINDGEN_VERSION=0.73.2

# Area folders that hold the series' patch files, in the order export checks them.
AREAS=(mm-changes drivers-migrate_offload kunit)

export PATH="$HOME/.cargo/bin:$PATH"

_t0=${_t0:-$(date +%s)}
export _t0

# say: one progress line, prefixed with the elapsed time of this make invocation.
say() {
	local now
	now=$(date +%s)
	printf '[%4ds] %s\n' $((now - _t0)) "$*" >&2
}

die() {
	printf 'error: %s\n' "$*" >&2
	exit 1
}

# Run as root, through sudo, or fail with the command the user should run.
as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
		sudo "$@"
	else
		die "need root for: $*  (run it as root, then re-run 'make setup')"
	fi
}

# Series order: patch paths relative to $TOP, one per line, comments and blanks skipped.
series_patches() {
	sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$TOP/patches/series"
}
