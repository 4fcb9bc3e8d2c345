#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make split-check: each series of patches/stack stands alone, and the
# stack is one tree.
#   1. For each series (SPLIT_SERIES="name ..." picks some): on a fresh
#      worktree at base, 'git am' of the series its deps name (transitively,
#      and nothing else), then of the series itself: every patch applies.
#   2. checkpatch --strict on its patches (exceptions:
#      patches/checkpatch-exceptions).
#   3. Every prefix of the series compiles with W=1 and no warning
#      (scripts/check-prefixes.sh on those commits, NO_FORCE=1: Kconfig as
#      the patches leave it, no forced prompts, so code nothing can select
#      yet is not built, and code whose first selector is missing fails to
#      show up rather than passing).
#   4. The whole stack applied in order on base gives the tree of linux/'s
#      HEAD (the integrated tree everything else is tested on): tree ids.
# Build directories: build/split and build/split-rust, reused across series.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -e "$LINUX_DIR/.git" ] || die "no linux/ tree: run 'make setup' first"
[ -e "$KUNIT_BUILD/.config" ] || "$TOP/scripts/build.sh"
WT=$BUILD_DIR/split-apply
trap 'git -C "$LINUX_DIR" worktree remove --force "$WT" 2>/dev/null || true' EXIT
bad=0

checkpatch_series() {
	local p rc=0
	while read -r p; do
		checkpatch_patch "$p" || rc=1
	done < <(series_patch_files "$1")
	return $rc
}

names=(${SPLIT_SERIES:-$(stack_names)})
for name in "${names[@]}"; do
	deps=$(deps_closure "$name" | paste -sd' ')
	say "split-check: $name on base${deps:+ + $deps}"
	new_worktree "$WT"
	for d in $deps; do
		if p=$(am_series "$WT" "$d"); then :; else
			printf '%s: its prerequisite %s does not apply at %s\n' "$name" "$d" "$p"
			bad=1
			continue 2
		fi
	done
	from=$(git -C "$WT" rev-parse HEAD)
	if ! p=$(am_series "$WT" "$name"); then
		printf '%s: %s does not apply on base%s\n' "$name" "$p" "${deps:+ + $deps}"
		bad=1
		continue
	fi
	to=$(git -C "$WT" rev-parse HEAD)
	checkpatch_series "$name" || bad=1
	PREFIX_FROM=$from PREFIX_TO=$to NO_FORCE=1 PREFIX_SRC=$BUILD_DIR/split-src \
		PREFIX_OUT=$BUILD_DIR/split "$TOP/scripts/check-prefixes.sh" || {
		printf '%s: a prefix does not compile cleanly on base%s\n' "$name" "${deps:+ + $deps}"
		bad=1
	}
done

if [ -z "${SPLIT_SERIES:-}" ]; then
	say "split-check: the stack in order, compared with linux/ HEAD"
	new_worktree "$WT"
	for name in $(stack_names); do
		am_series "$WT" "$name" >/dev/null || { echo "the stack does not apply at $name"; bad=1; break; }
	done
	stack=$(git -C "$WT" rev-parse 'HEAD^{tree}')
	head=$(git -C "$LINUX_DIR" rev-parse 'HEAD^{tree}')
	if [ "$stack" = "$head" ]; then
		say "split-check: stack tree $stack = linux/ HEAD's tree"
	else
		echo "the stack's tree $stack is not linux/ HEAD's $head: run 'make export'?"
		bad=1
	fi
fi
[ $bad -eq 0 ] || { echo "make split-check: FAILED"; exit 1; }
echo "make split-check: every series applies and builds on its prerequisites alone; one tree"
