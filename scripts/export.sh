#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make export: write the commits base..HEAD of linux/ as patch files into the
# area folders, rewrite patches/series in commit order, and copy the final
# admin guide to docs/admin-guide/. Deterministic: exporting an unchanged tree
# changes no byte.
#
# The area of a patch is decided by the files it touches, leaving out build
# glue (Kconfig, Makefile, MAINTAINERS, .kunitconfig):
#   kunit/                    every remaining file is test code: a path with
#                             a tests/ directory, or a name containing
#                             "kunit" or "test" (KUnit suites, test-only
#                             providers and migrators);
#   drivers-migrate_offload/  otherwise, any file under rust/,
#                             drivers/migrate_offload/, drivers/dma/ or
#                             include/linux/dmaengine.h;
#   mm-changes/               everything else (mm core C).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -e "$LINUX_DIR/.git" ] || die "no linux/ tree: run 'make setup' first"
git -C "$LINUX_DIR" rev-parse -q --verify base >/dev/null || die "linux/ has no 'base' tag"
[ -z "$(git -C "$LINUX_DIR" status --porcelain --untracked-files=no)" ] ||
	say "export: note: linux/ has uncommitted changes; only commits are exported"

area_of() {
	local commit=$1 f decide=() test_only=1
	while read -r f; do
		case "$(basename "$f")" in
		Kconfig*|Makefile*|MAINTAINERS|.kunitconfig) continue ;;
		esac
		decide+=("$f")
	done < <(git -C "$LINUX_DIR" diff-tree --no-commit-id --name-only -r "$commit")
	[ ${#decide[@]} -gt 0 ] || { echo mm-changes; return; }
	for f in "${decide[@]}"; do
		case "$f" in
		*/tests/*|*kunit*|*test*) ;;
		*) test_only=0 ;;
		esac
	done
	[ $test_only -eq 1 ] && { echo kunit; return; }
	for f in "${decide[@]}"; do
		case "$f" in
		rust/*|drivers/migrate_offload/*|drivers/dma/*|include/linux/dmaengine.h)
			echo drivers-migrate_offload; return ;;
		esac
	done
	echo mm-changes
}

gitx() {
	git -C "$LINUX_DIR" -c core.abbrev=12 -c diff.algorithm=myers \
		-c diff.noprefix=false -c diff.mnemonicPrefix=false \
		-c diff.relative=false -c format.signature= "$@"
}

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mkdir -p "$out/patches"
for a in "${AREAS[@]}"; do mkdir -p "$out/$a"; done
{
	echo "# The series, in order: one patch file per line, as 'git am' takes them."
	echo "# Written by 'make export' from linux/ (base..HEAD); do not edit by hand."
} >"$out/patches/series"

n=0
while read -r c; do
	area=$(area_of "$c")
	slug=$(gitx log -1 --format=%f "$c" | cut -c1-64)
	file=$area/$slug.patch
	[ ! -e "$out/$file" ] || die "two commits export to $file; reword one subject"
	gitx format-patch -1 --stdout --zero-commit --no-numbered --no-signature \
		"$c" >"$out/$file"
	echo "$file" >>"$out/patches/series"
	n=$((n + 1))
done < <(git -C "$LINUX_DIR" rev-list --reverse base..HEAD)

# Replace the patch files and the series; leave everything else in the area
# folders (configs, guest tests) alone. Unchanged files are not rewritten.
for a in "${AREAS[@]}"; do
	mkdir -p "$TOP/$a"
	find "$TOP/$a" -maxdepth 1 -name '*.patch' | while read -r f; do
		[ -e "$out/$a/$(basename "$f")" ] || rm -f "$f"
	done
	for f in "$out/$a"/*.patch; do
		[ -e "$f" ] || continue
		copy_if_changed "$f" "$TOP/$a/$(basename "$f")"
	done
done
copy_if_changed "$out/patches/series" "$TOP/patches/series"

# The series' final admin guide, so that operators can read it without applying the patches.
guide=Documentation/admin-guide/mm/migrate_offload.rst
if git -C "$LINUX_DIR" cat-file -e "HEAD:$guide" 2>/dev/null; then
	git -C "$LINUX_DIR" show "HEAD:$guide" >"$out/migrate_offload.rst"
	mkdir -p "$TOP/docs/admin-guide"
	copy_if_changed "$out/migrate_offload.rst" "$TOP/docs/admin-guide/migrate_offload.rst"
else
	say "export: note: linux/ HEAD has no $guide; docs/admin-guide/ left as it is"
fi
git -C "$LINUX_DIR" update-ref "$EXPORTED_REF" HEAD
say "export: $n patches"
