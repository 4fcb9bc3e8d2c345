#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Part of make check: every prefix of the series compiles. For each patch,
# in a worktree at that patch, build (with W=1, warnings are errors) every
# C object the series has touched so far, with the test kernel's config;
# for a patch that touches Rust, the kernel crate and the series' Rust
# driver directories too.
# Hidden symbols that only later patches select (FORCE) get a temporary
# prompt and are turned on, so that their code is compiled in every prefix
# that has it; NO_FORCE=1 leaves Kconfig as the patches make it (make
# split-check does). PREFIX_FROM..PREFIX_TO (default base..linux/ HEAD)
# picks the commits, PREFIX_OUT the build directories' prefix.
# The Rust doctests are left out of the prefixes (regenerating and compiling
# them at each of the Rust patches took most of this check's time): the
# test kernel builds and runs them at the end of the series, and 'make
# bisect-check' builds them in every prefix.
# Objects under another architecture's arch/ directory are compiled for that
# architecture (its defconfig with FORCE on, clang cross-compiling) at the
# patch that touches them and at the end of the series: the test config is
# x86_64 and cannot build them.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

SRC=${PREFIX_SRC:-$BUILD_DIR/prefix-src}
# The C objects build without Rust: with CONFIG_RUST=y every make goes
# through 'prepare', which builds rust/ again whenever a header bindgen
# reads has changed - at two prefixes in three, and rustc has no ccache.
# The Rust builds have a directory of their own. So a C patch that
# changes a header bindgen reads (sched.h, dmaengine.h) has its Rust built
# at the next run of Rust patches, not at its own prefix: make
# bisect-check builds every prefix whole.
OUT=${PREFIX_OUT:-$BUILD_DIR/prefix}
ROUT=$OUT-rust
FROM=${PREFIX_FROM:-base} TO=${PREFIX_TO:-HEAD}
if [ "${NO_FORCE:-0}" = 1 ]; then
	FORCE=()
fi
export CCACHE_DIR=${CCACHE_DIR:-$BUILD_DIR/ccache} CCACHE_BASEDIR=$TOP CCACHE_NOHASHDIR=true

[ -e "$KUNIT_BUILD/.config" ] || "$TOP/scripts/build.sh"
worktree "$SRC"
mkdir -p "$OUT" "$ROUT"

# check_arch ARCH N SUBJECT: the series' C objects under arch/ARCH/ compile
# with W=1 and no warning in ARCH's defconfig (FORCE symbols on).
check_arch() {
	local a=$1 out aobjs
	mkdir -p "$OUT-$a"
	make -s -C "$SRC" O="$OUT-$a" ARCH="$a" "${MAKE_LLVM[@]}" \
		CC="ccache clang$LLVM_SUFFIX" defconfig >/dev/null 2>&1
	if [ ${#FORCE[@]} -gt 0 ]; then
		force_config "$OUT-$a/.config" "$OUT-$a/.config.forced"
		mv "$OUT-$a/.config.forced" "$OUT-$a/.config"
	fi
	make -s -C "$SRC" O="$OUT-$a" ARCH="$a" "${MAKE_LLVM[@]}" \
		CC="ccache clang$LLVM_SUFFIX" olddefconfig >/dev/null 2>&1
	mapfile -t aobjs < <(git -C "$SRC" diff --name-only base HEAD -- "arch/$a/*.c" |
		sed 's/\.c$/.o/')
	if ! out=$(make -s -C "$SRC" O="$OUT-$a" ARCH="$a" "${MAKE_LLVM[@]}" \
			CC="ccache clang$LLVM_SUFFIX" W=1 -j"$(nproc)" "${aobjs[@]}" 2>&1 >/dev/null) ||
	   grep -q 'warning:' <<<"${out:-}"; then
		printf 'prefix %d (%s) does not compile cleanly for %s:\n%s\n' "$2" "$3" "$a" "${out:-}"
		return 1
	fi
	say "prefix $2: arch/$a objects compiled (${aobjs[*]})"
}

# obj_enabled OBJ: the Makefile line that names OBJ (in its directory, or
# a parent's: obj-$(CONFIG_X) += tests/foo.o) has its symbol on in
# $OUT/.config; true too for obj-y, composite objects and no such line.
obj_enabled() {
	local d=${1%/*} rel=${1##*/} sym=
	while [ -n "$d" ]; do
		if [ -e "$SRC/$d/Makefile" ] && grep -qE "(^|[[:space:]])$rel([[:space:]]|\$)" "$SRC/$d/Makefile"; then
			sym=$(grep -E "^[[:space:]]*obj-\\\$\(CONFIG_[A-Z0-9_]+\)[[:space:]]*[+:]?=.*(^|[[:space:]])$rel([[:space:]]|\$)" \
				"$SRC/$d/Makefile" | head -n1 |
				sed -E 's/^[[:space:]]*obj-\$\(CONFIG_([A-Z0-9_]+)\).*/\1/')
			break
		fi
		case $d in */*) rel=${d##*/}/$rel d=${d%/*} ;; *) break ;; esac
	done
	[ -z "$sym" ] || grep -q "^CONFIG_$sym=[ym]" "$OUT/.config"
}

# touches_rust COMMIT: COMMIT changes Rust code (rust/ or a .rs file).
touches_rust() {
	git -C "$LINUX_DIR" diff --name-only "$1~1" "$1" | grep -q '^rust/\|\.rs$'
}

# touches_c COMMIT: COMMIT changes a file the kernel's C objects can depend
# on: anything but Rust (rust/, .rs files), the selftests (user space,
# built by make test; the rest of tools/ has objtool, which checks every
# object), Documentation/ and MAINTAINERS. A prefix that adds none
# compiles the C objects of the one before it.
touches_c() {
	git -C "$LINUX_DIR" diff --name-only "$1~1" "$1" |
		grep -v '^rust/\|\.rs$\|^tools/testing/\|^Documentation/\|^MAINTAINERS$' | grep -q .
}

# configure DIR RUST PREV: the test kernel's configuration with the FORCE
# symbols on and the Rust doctests off, with CONFIG_RUST as RUST (y or n),
# in DIR, through olddefconfig - at the first build in DIR (PREV, the
# commit DIR was last built at, is empty) or when a Kconfig file changed
# since PREV; otherwise DIR keeps its configuration, and make's own
# syncconfig takes the mm/Kconfig that force_prompts edits at each prefix.
configure() {
	local dir=$1 rust=$2 prev=$3
	# (No Kconfig change: git diff --quiet is true. On an error it is not,
	# and the configuration is made again.)
	if [ -n "$prev" ] && git -C "$SRC" diff --quiet "$prev" HEAD -- '*Kconfig*'; then
		return 0
	fi
	if [ ${#FORCE[@]} -gt 0 ]; then
		force_config "$KUNIT_BUILD/.config" "$dir/.config"
	else
		cp "$KUNIT_BUILD/.config" "$dir/.config"
	fi
	sed -i '/CONFIG_RUST_KERNEL_DOCTESTS/d' "$dir/.config"
	echo '# CONFIG_RUST_KERNEL_DOCTESTS is not set' >>"$dir/.config"
	if [ "$rust" = n ]; then
		sed -i '/^CONFIG_RUST=/d' "$dir/.config"
		echo '# CONFIG_RUST is not set' >>"$dir/.config"
	fi
	make -s -C "$SRC" O="$dir" "${MAKE_LLVM[@]}" CC="ccache clang$LLVM_SUFFIX" \
		olddefconfig >/dev/null 2>&1 || die "olddefconfig failed in $dir"
}

last=$(git -C "$LINUX_DIR" rev-parse "$TO")
mapfile -t commits < <(git -C "$LINUX_DIR" rev-list --reverse "$FROM..$last")
bad=0 n=0 nc=0 nr=0 cprev= rprev=
t0=$SECONDS
for c in "${commits[@]}"; do
	n=$((n + 1))
	# PREFIX_START=N: begin at the N-th patch (to re-check the end quickly).
	[ "$n" -ge "${PREFIX_START:-1}" ] || continue
	# The C objects: at the first prefix checked, at each that changes
	# what they are built from, and at the last.
	do_c=0 do_rust=0 arches=()
	if [ -z "$cprev" ] || [ "$c" = "$last" ] || touches_c "$c"; then
		do_c=1
	fi
	# A patch that touches Rust, at the end of a run of such patches (the
	# next one does not, or this is the last): the kernel crate and every
	# Rust driver directory of the series so far compile without warnings.
	# Within a run only its last prefix is built, to keep make check in
	# CI's time (a build of the kernel crate takes minutes); make
	# bisect-check builds every prefix whole.
	if touches_rust "$c" &&
	   { [ "$c" = "$last" ] || ! touches_rust "${commits[$n]}"; }; then
		do_rust=1
	fi
	for a in $(git -C "$LINUX_DIR" diff --name-only base "$c" -- 'arch/*.c' |
			cut -d/ -f2 | grep -vx x86 | sort -u); do
		[ "$c" = "$last" ] ||
			git -C "$LINUX_DIR" diff --name-only "$c~1" "$c" | grep -q "^arch/$a/" ||
			continue
		arches+=("$a")
	done
	[ $do_c = 1 ] || [ $do_rust = 1 ] || [ ${#arches[@]} -gt 0 ] || continue
	git -C "$SRC" checkout -q --detach "$c"
	subject=$(git -C "$SRC" log -1 --format=%s)
	[ ${#FORCE[@]} -eq 0 ] || force_prompts "$SRC"
	# rust/helpers/*.c are not objects of their own: helpers.c includes
	# them, and the Rust step below compiles it. The selftests under
	# tools/ are user-space programs, built by make test.
	mapfile -t objs < <(git -C "$SRC" diff --name-only base HEAD -- '*.c' |
		grep -v '^rust/helpers/' | grep -v '^arch/' | grep -v '^tools/' |
		sed 's/\.c$/.o/')
	mapfile -t xobjs < <(git -C "$SRC" diff --name-only base HEAD -- 'arch/*.c' |
		grep '^arch/x86/' | sed 's/\.c$/.o/')
	objs+=("${xobjs[@]}")
	# Without FORCE, an object whose Kconfig symbol is off at this prefix
	# is not built (named alone, make would compile it all the same, with
	# its header's declarations configured out).
	if [ ${#FORCE[@]} -eq 0 ] && [ ${#objs[@]} -gt 0 ] && [ -e "$OUT/.config" ]; then
		mapfile -t objs < <(for o in "${objs[@]}"; do
			obj_enabled "$o" && echo "$o"
		done)
	fi
	if [ $do_c = 1 ] && [ ${#objs[@]} -gt 0 ]; then
		configure "$OUT" n "$cprev"
		cprev=$c nc=$((nc + 1))
		if ! out=$(make -s -C "$SRC" O="$OUT" "${MAKE_LLVM[@]}" CC="ccache clang$LLVM_SUFFIX" \
				W=1 -j"$(nproc)" "${objs[@]}" 2>&1 >/dev/null) ||
		   grep -q 'warning:' <<<"${out:-}"; then
			printf 'prefix %d (%s) does not compile cleanly:\n%s\n' "$n" "$subject" "${out:-}"
			bad=1
		fi
	fi
	if [ $do_rust = 1 ]; then
		configure "$ROUT" y "$rprev"
		rprev=$c nr=$((nr + 1))
		mapfile -t rdirs < <(git -C "$SRC" diff --name-only base HEAD -- '*.rs' |
			grep -v '^rust/' | xargs -r -n1 dirname | sort -u | sed 's|$|/|')
		if ! out=$(make -s -C "$SRC" O="$ROUT" "${MAKE_LLVM[@]}" CC="ccache clang$LLVM_SUFFIX" \
				-j"$(nproc)" rust/ "${rdirs[@]}" 2>&1 >/dev/null) ||
		   grep -q 'warning' <<<"${out:-}"; then
			printf 'prefix %d (%s): Rust does not compile cleanly:\n%s\n' "$n" "$subject" "${out:-}"
			bad=1
		fi
		say "prefix $n: Rust compiled ($((SECONDS - t0)) s into the prefixes)"
	fi
	for a in "${arches[@]}"; do
		check_arch "$a" "$n" "$subject" || bad=1
	done
	git -C "$SRC" checkout -q -- .
done
say "prefixes: $n checked (C objects built at $nc, Rust at $nr; $((SECONDS - t0)) s)"
exit $bad
