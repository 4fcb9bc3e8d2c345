#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make mbox: the series as sent, cover letter first, in build/series.mbox,
# made from the patch files (not from linux/'s working branch). Then check
# it the way a maintainer would take it: 'b4 am' on the mbox, and 'git am'
# of what b4 produced onto base must give the same tree.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -e "$LINUX_DIR/.git" ] || die "no linux/ tree: run 'make setup' first"
WORK=$BUILD_DIR/mbox
MBOX=$BUILD_DIR/series.mbox
COVER=$TOP/patches/cover-letter

rm -rf "$WORK" && mkdir -p "$WORK"
say "mbox: applying the series onto base"
new_worktree "$WORK/series"
"$TOP/scripts/apply.sh" "$WORK/series"
n=$(git -C "$WORK/series" rev-list --count base..HEAD)

say "mbox: formatting $n patches and the cover letter"
git -C "$WORK/series" -c core.abbrev=12 format-patch -q --cover-letter --numbered \
	--thread=shallow --base=base --subject-prefix="RFC PATCH" --reroll-count=3 -o "$WORK/out" base..HEAD
cover=$(ls "$WORK"/out/*0000-*.patch)
subject=$(head -n 1 "$COVER")
# The cover text: everything after the subject line and the blank line.
tail -n +3 "$COVER" >"$WORK/blurb"
sed -i -e "s|\*\*\* SUBJECT HERE \*\*\*|$subject|" \
       -e "/\*\*\* BLURB HERE \*\*\*/{r $WORK/blurb
d}" "$cover"
cat "$WORK"/out/*.patch >"$MBOX"

say "mbox: checking with b4 am + git am"
(cd "$WORK" && "$VENV/bin/b4" -q am -n b4 -o "$WORK/b4" -m "$MBOX" >"$WORK/b4.log" 2>&1) ||
	{ cat "$WORK/b4.log"; die "b4 am failed on $MBOX"; }
new_worktree "$WORK/check"
git -C "$WORK/check" am -q "$WORK/b4/b4.mbx" || die "git am of b4's output failed"
[ "$(git -C "$WORK/check" rev-parse 'HEAD^{tree}')" = \
  "$(git -C "$WORK/series" rev-parse 'HEAD^{tree}')" ] ||
	die "b4 am + git am gives another tree than the series"
for w in check series; do git -C "$LINUX_DIR" worktree remove --force "$WORK/$w"; done
say "mbox: build/series.mbox ($n patches + cover); b4 am + git am onto base: same tree"
