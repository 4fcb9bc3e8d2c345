#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make export: write linux/'s commits back into the series' folders. linux/
# holds the whole stack on one branch, in the order of patches/stack; a
# branch series/<name> marks the last commit of each series (apply.sh makes
# them; 'git rebase' moves them along, since setup sets rebase.updateRefs).
# Series <name> is the commits after the previous series' branch up to its
# own: each goes into that series' folder as NNNN-<subject>.patch, listed
# in its 'series' file. Also copies the stack's final admin guide to
# docs/admin-guide/. Deterministic: exporting an unchanged tree changes no
# byte. The series' other files (config, deps, cover letter) are the
# repository's, never written here.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -e "$LINUX_DIR/.git" ] || die "no linux/ tree: run 'make setup' first"
git -C "$LINUX_DIR" rev-parse -q --verify base >/dev/null || die "linux/ has no 'base' tag"
[ -z "$(git -C "$LINUX_DIR" status --porcelain --untracked-files=no)" ] ||
	say "export: note: linux/ has uncommitted changes; only commits are exported"

gitx() {
	git -C "$LINUX_DIR" -c core.abbrev=12 -c diff.algorithm=myers \
		-c diff.noprefix=false -c diff.mnemonicPrefix=false \
		-c diff.relative=false -c format.signature= "$@"
}

# The series' ends must lie on HEAD's line, in stack order, the last at HEAD.
prev=base
for name in $(stack_names); do
	end=$(git -C "$LINUX_DIR" rev-parse -q --verify "refs/heads/series/$name") ||
		die "linux/ has no branch series/$name marking the end of that series (scripts/apply.sh --reset makes them)"
	git -C "$LINUX_DIR" merge-base --is-ancestor "$prev" "$end" && [ "$(git -C "$LINUX_DIR" rev-parse "$prev")" != "$end" ] ||
		die "series/$name is not after the previous series' end on one line: move it (git branch -f series/$name <its last commit>)"
	prev=$end
done
[ "$(git -C "$LINUX_DIR" rev-parse "$prev")" = "$(git -C "$LINUX_DIR" rev-parse HEAD)" ] ||
	die "HEAD is not the end of the last series ($(stack_names | tail -n1)): commits after it belong to no series; move series/<name> to take them"

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
prev=base total=0
for name in $(stack_names); do
	dir=$(series_dir "$name")
	mkdir -p "$out/$dir"
	{
		echo "# The patches of this series, in order, as 'git am' takes them."
		echo "# Written by 'make export' from linux/; do not edit by hand."
	} >"$out/$dir/series"
	n=0
	while read -r c; do
		n=$((n + 1))
		slug=$(gitx log -1 --format=%f "$c" | cut -c1-60)
		file=$(printf '%04d-%s.patch' "$n" "$slug")
		gitx format-patch -1 --stdout --zero-commit --no-numbered --no-signature \
			"$c" >"$out/$dir/$file"
		echo "$file" >>"$out/$dir/series"
	done < <(git -C "$LINUX_DIR" rev-list --reverse "$prev..series/$name")
	total=$((total + n))
	prev=series/$name
	# Replace this folder's patch files and series file; leave the rest.
	mkdir -p "$TOP/$dir"
	find "$TOP/$dir" -maxdepth 1 -name '*.patch' | while read -r f; do
		[ -e "$out/$dir/$(basename "$f")" ] || rm -f "$f"
	done
	for f in "$out/$dir"/*.patch "$out/$dir/series"; do
		copy_if_changed "$f" "$TOP/$dir/$(basename "$f")"
	done
done

# The stack's final admin guide, so that operators can read it without applying the patches.
guide=Documentation/admin-guide/mm/migrate_offload.rst
if git -C "$LINUX_DIR" cat-file -e "HEAD:$guide" 2>/dev/null; then
	git -C "$LINUX_DIR" show "HEAD:$guide" >"$out/migrate_offload.rst"
	mkdir -p "$TOP/docs/admin-guide"
	copy_if_changed "$out/migrate_offload.rst" "$TOP/docs/admin-guide/migrate_offload.rst"
fi
git -C "$LINUX_DIR" update-ref "$EXPORTED_REF" HEAD
say "export: $total patches in $(stack_names | wc -l) series"
