#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/apply.sh [--reset] [TREE]
#
# git am the patches of patches/series, in order, onto the checked-out branch
# of TREE (default: linux/). With --reset, first move linux/'s branch back to
# the base tag, after making sure that every commit on it has been exported
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
	[ -z "$(git -C "$tree" status --porcelain --untracked-files=no)" ] ||
		die "linux/ has uncommitted changes; commit and 'make export' them, or discard them"
	# Exported commits are safe to drop: export again and see if anything moves.
	snapshot=$(mktemp -d)
	trap 'rm -rf "$snapshot"' EXIT
	for a in patches "${AREAS[@]}"; do cp -r "$TOP/$a" "$snapshot/"; done
	"$TOP/scripts/export.sh" 2>/dev/null
	if ! git -C "$TOP" diff --quiet -- patches "${AREAS[@]}" ||
	   [ -n "$(git -C "$TOP" ls-files --others --exclude-standard -- patches "${AREAS[@]}")" ]; then
		for a in patches "${AREAS[@]}"; do rm -rf "${TOP:?}/$a"; cp -r "$snapshot/$a" "$TOP/"; done
		die "linux/ holds commits that differ from the committed patch files; commit the export first"
	fi
	say "apply: resetting linux/ to base"
	git -C "$tree" checkout -q -B "$(git -C "$tree" branch --show-current || echo master)" base
fi

n=0
while read -r p; do
	git -C "$tree" am -q --keep-cr "$TOP/$p" ||
		die "$p does not apply; fix it in $tree (git am --show-current-patch) or git -C $tree am --abort"
	n=$((n + 1))
done < <(series_patches)
say "apply: $n patches applied"
