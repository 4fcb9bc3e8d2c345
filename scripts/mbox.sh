#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make mbox [SERIES=name]: each series as it would be sent (all that are
# posted, or the one named), in build/mbox/<name>.mbox, made from the
# patch files, never from linux/'s branch:
#   - the series applied on base plus its prerequisites (its deps,
#     transitively), then 'git format-patch --base' over the series alone,
#     so that the mail carries base-commit: and prerequisite-patch-id:
#     lines as git writes them;
#   - subject prefix and version from the series' config; its To: and Cc:;
#     its cover letter (none for a one-patch series: its 'notes' file goes
#     below the patch's '---');
#   - b4's change-id: of the series and prerequisite-change-id: of each
#     deps line after base-commit:, as 'b4 send' writes them, so that 'b4
#     shazam' of a later series finds the earlier ones.
# Then the check a maintainer makes: 'b4 am' of the mbox, and 'git am' of
# what b4 gives onto base plus the prerequisites must give the same tree.
# The mail is from whoever runs this: each patch's author and the author's
# Signed-off-by become git's identity on this machine (git config
# user.name/user.email); the repository names nobody.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# --resign-head (run by 'git rebase --exec' below): HEAD becomes the work of
# whoever runs this: author reset to git's identity here, and the old
# author's Signed-off-by replaced by this identity's.
if [ "${1:-}" = --resign-head ]; then
	me=$(git var GIT_AUTHOR_IDENT | sed 's/>.*/>/')
	old=$(git log -1 --format='%an <%ae>')
	[ "$me" != "$old" ] || exit 0
	git log -1 --format=%B |
		awk -v old="Signed-off-by: $old" -v me="Signed-off-by: $me" \
			'$0 == old { $0 = me; done = 1 } { print } END { if (!done) exit 1 }' >"$(git rev-parse --git-dir)/resign-msg" ||
		git log -1 --format=%B | git interpret-trailers --trailer "Signed-off-by: $me" >"$(git rev-parse --git-dir)/resign-msg"
	git commit -q --amend --reset-author -F "$(git rev-parse --git-dir)/resign-msg"
	exit 0
fi

[ -e "$LINUX_DIR/.git" ] || die "no linux/ tree: run 'make setup' first"
WORK=$BUILD_DIR/mbox
mkdir -p "$WORK"

# am_names TREE NAME...: git am those series onto TREE.
am_names() {
	local tree=$1 n p
	shift
	for n in "$@"; do
		p=$(am_series "$tree" "$n") || die "$p does not apply"
	done
}

mbox_one() {
	local name=$1 dir prefix version to cc cid deps out n cover mbox
	dir=$TOP/$(series_dir "$name")
	[ "$(series_conf "$name" POST)" = 1 ] || { say "mbox: $name is not posted (POST=0)"; return 0; }
	prefix=$(series_conf "$name" PREFIX)
	version=$(series_conf "$name" VERSION)
	to=$(series_conf "$name" TO)
	cc=$(series_conf "$name" CC)
	cid=$(series_conf "$name" CHANGE_ID)
	mapfile -t deps < <(deps_closure "$name")
	out=$WORK/$name
	mbox=$WORK/$name.mbox
	rm -rf "$out" "$mbox"
	new_worktree "$WORK/tree"
	am_names "$WORK/tree" "${deps[@]}"
	git -C "$WORK/tree" tag -f "mbox-prereq" >/dev/null
	am_names "$WORK/tree" "$name"
	n=$(git -C "$WORK/tree" rev-list --count mbox-prereq..HEAD)
	# The mail is from whoever formats it (git's identity on this machine).
	git -C "$WORK/tree" rebase -q mbox-prereq --exec "$TOP/scripts/mbox.sh --resign-head" >/dev/null
	local args=(-q --thread=shallow --base=base -o "$out" --subject-prefix="$prefix")
	[ "$version" = 1 ] || args+=(--reroll-count="$version")
	[ "$n" -gt 1 ] && args+=(--cover-letter --numbered) || args+=(--no-numbered)
	local t
	IFS=, read -ra t <<<"$to"
	for t in "${t[@]}"; do [ -n "${t// /}" ] && args+=(--to="$(echo "$t" | sed 's/^ *//')"); done
	IFS=, read -ra t <<<"$cc"
	for t in "${t[@]}"; do [ -n "${t// /}" ] && args+=(--cc="$(echo "$t" | sed 's/^ *//')"); done
	git -C "$WORK/tree" -c core.abbrev=12 format-patch "${args[@]}" mbox-prereq..HEAD
	# b4's lines after base-commit: (and git's prerequisite-patch-id: lines).
	local footer=$out/footer first
	{
		echo "change-id: $cid"
		sed -n 's/^change-id:[[:space:]]*/prerequisite-change-id: /p' "$dir/deps"
		sed -n 's/^message-id:[[:space:]]*/prerequisite-message-id: /p' "$dir/deps"
	} >"$footer"
	if [ "$n" -gt 1 ]; then
		[ -e "$dir/cover-letter" ] || die "$dir has no cover-letter"
		cover=$(ls "$out"/*0000-*.patch)
		tail -n +3 "$dir/cover-letter" >"$out/blurb"
		subject=$(head -n 1 "$dir/cover-letter")
		sed -i -e "s|\*\*\* SUBJECT HERE \*\*\*|$subject|" \
		       -e "/\*\*\* BLURB HERE \*\*\*/{r $out/blurb
d}" -e "/^base-commit: /r $footer" "$cover"
	else
		first=$(ls "$out"/*.patch)
		# The notes, and the footer, go below the '---' of the one patch.
		if [ -e "$dir/notes" ]; then
			sed -i -e "0,/^---\$/{/^---\$/r $dir/notes
}" "$first"
		fi
		sed -i -e "/^base-commit: /r $footer" "$first"
	fi
	cat "$out"/*.patch >"$mbox"

	# What a maintainer does: b4 am, then git am onto base + prerequisites.
	(cd "$out" && "$VENV/bin/b4" -q am -n b4 -o "$out/b4" -m "$mbox" >"$out/b4.log" 2>&1) ||
		{ cat "$out/b4.log"; die "$name: b4 am failed on $mbox"; }
	new_worktree "$WORK/check"
	am_names "$WORK/check" "${deps[@]}"
	git -C "$WORK/check" am -q "$out/b4/b4.mbx" || die "$name: git am of b4's output failed"
	[ "$(git -C "$WORK/check" rev-parse 'HEAD^{tree}')" = \
	  "$(git -C "$WORK/tree" rev-parse 'HEAD^{tree}')" ] ||
		die "$name: b4 am + git am gives another tree than the series"
	for t in check tree; do git -C "$LINUX_DIR" worktree remove --force "$WORK/$t"; done
	git -C "$LINUX_DIR" tag -d mbox-prereq >/dev/null
	local size=-
	[ ! -e "$dir/cover-letter" ] || size=$(wc -c <"$dir/cover-letter")
	[ "$size" = - ] || [ "$size" -le 15360 ] || die "$name: its cover letter has $size bytes, more than 15 KB"
	say "mbox: build/mbox/$name.mbox: $n patches on base${deps[*]:+ + ${deps[*]}}; cover letter $size bytes; b4 am + git am: same tree"
}

if [ -n "${SERIES:-}" ]; then
	series_dir "$SERIES" >/dev/null
	mbox_one "$SERIES"
else
	for name in $(stack_names); do mbox_one "$name"; done
fi
