#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/apply.sh [--reset] [TREE]
#
# git am the series of patches/stack, in order, onto the checked-out branch
# of TREE (default: linux/). With SERIES=<name>, only that series and the
# series it needs (its deps, transitively). In linux/, a branch
# series/<name> marks where each series ends (make export reads them).
# With --reset, first move linux/'s branch back to the base tag, after
# making sure that no commit on it was made after its last export or apply
# (that is what you want after pulling new patch files).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

reset=0
if [ "${1:-}" = "--reset" ]; then
	reset=1
	shift
fi
tree=${1:-$LINUX_DIR}

if [ $reset -eq 1 ]; then
	[ "$tree" = "$LINUX_DIR" ] || die "--reset only works on linux/"
	[ -z "${SERIES:-}" ] || die "--reset applies the whole stack; SERIES= is for other trees"
	[ -z "$(git -C "$tree" status --porcelain --untracked-files=no)" ] ||
		die "linux/ has uncommitted changes; commit and 'make export' them, or discard them"
	# Every commit up to the one last exported (or applied) is in the patch
	# files; a commit after it would be lost.
	exported=$(git -C "$tree" rev-parse -q --verify "$EXPORTED_REF" || true)
	[ -n "$exported" ] ||
		die "linux/ has no record of its last export; run 'make export' (before pulling) and commit the patch files, or reset linux/ by hand"
	[ "$(git -C "$tree" rev-parse HEAD)" = "$exported" ] ||
		die "linux/ holds commits made after its last export: run 'make export' and commit the patch files first"
	say "apply: resetting linux/ to base"
	git -C "$tree" checkout -q -B "$(git -C "$tree" branch --show-current || echo master)" base
fi

if [ -n "${SERIES:-}" ]; then
	mapfile -t names < <(deps_closure "$SERIES"; echo "$SERIES")
else
	mapfile -t names < <(stack_names)
fi
git_identity_ok "$tree"
n=0
for name in "${names[@]}"; do
	while read -r p; do
		git -C "$tree" am -q --keep-cr "$TOP/$p" ||
			die "$p does not apply; fix it in $tree (git am --show-current-patch) or git -C $tree am --abort"
		n=$((n + 1))
	done < <(series_patch_files "$name")
	[ "$tree" != "$LINUX_DIR" ] || git -C "$tree" branch -f "series/$name" HEAD
done
if [ "$tree" = "$LINUX_DIR" ]; then
	git -C "$tree" update-ref "$EXPORTED_REF" HEAD
	# 'git rebase' then moves the series/ branches with the commits they mark.
	git -C "$tree" config rebase.updateRefs true
fi
say "apply: $n patches of ${#names[@]} series applied (${names[*]})"
