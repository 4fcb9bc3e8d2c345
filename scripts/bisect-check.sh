#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make bisect-check: every prefix of the series builds - the whole kernel,
# vmlinux and modules, not only the objects a patch touched - in two
# configurations, without a warning the base tree does not have:
#   test    the test kernel's (kunit/.kunitconfig, as make build made it);
#   allno   allnoconfig plus kunit/bisect-allno.config (what the series
#           needs and the options its patches add).
# The base is built first in each configuration: its warnings are the
# baseline (compared without line numbers). Then each patch in turn, in a
# worktree, incrementally in build/bisect/<config>.
# Hidden symbols that only later patches select (FORCE) get a temporary
# prompt and are turned on, so that their code is built in every prefix
# that has it.
# BISECT_START=N begins at the N-th patch (after the base), BISECT_CONFIGS
# picks the configurations ("test allno").
set -euo pipefail
. "$(dirname "$0")/lib.sh"

SRC=$BUILD_DIR/bisect-src
OUT=$BUILD_DIR/bisect
CONFIGS=(${BISECT_CONFIGS:-test allno})
export CCACHE_DIR=${CCACHE_DIR:-$BUILD_DIR/ccache} CCACHE_BASEDIR=$TOP CCACHE_NOHASHDIR=true
MAKE=(make -s -C "$SRC" "${MAKE_LLVM[@]}" CC="ccache clang$LLVM_SUFFIX")

[ -e "$KUNIT_BUILD/.config" ] || "$TOP/scripts/build.sh"
worktree "$SRC"
mkdir -p "$OUT"

# configure CONFIG: the configuration of the checked-out tree in $OUT/CONFIG.
configure() {
	local out=$OUT/$1 frag=$OUT/$1.fragment
	mkdir -p "$out"
	force_prompts "$SRC"
	case $1 in
	test)
		force_config "$KUNIT_BUILD/.config" "$out/.config"
		"${MAKE[@]}" O="$out" olddefconfig >/dev/null
		;;
	allno)
		force_config "$TOP/kunit/bisect-allno.config" "$frag"
		"${MAKE[@]}" O="$out" KCONFIG_ALLCONFIG="$frag" allnoconfig >/dev/null 2>&1
		;;
	esac
}

# warnings LOG: the warnings of a build log, without line and column.
warnings() {
	grep -E 'warning:|WARNING:' "$1" | sed -E 's/:[0-9]+(:[0-9]+)?:/:/' | sort -u || true
}

# build CONFIG N: build the checked-out tree; fail on an error or on a
# warning the base did not have.
build() {
	local cfg=$1 n=$2 out=$OUT/$1 log=$OUT/$1.log t0 new
	t0=$(date +%s)
	configure "$cfg"
	if ! "${MAKE[@]}" O="$out" -j"$(nproc)" all >"$log" 2>&1; then
		printf 'prefix %s: %s build failed (%s):\n' "$n" "$cfg" "$(logname "$log")"
		grep -E 'error|Error' "$log" | head -n 20
		return 1
	fi
	if [ "$n" = base ]; then
		warnings "$log" >"$OUT/$cfg.baseline"
	else
		new=$(warnings "$log" | comm -23 - "$OUT/$cfg.baseline")
		if [ -n "$new" ]; then
			printf 'prefix %s: %s build has new warnings:\n%s\n' "$n" "$cfg" "$new"
			return 1
		fi
	fi
	say "bisect-check: prefix $n, $cfg: built in $(($(date +%s) - t0)) s"
}

bad=0
commits=(base $(git -C "$LINUX_DIR" rev-list --reverse base..HEAD))
for n in "${!commits[@]}"; do
	[ "$n" -eq 0 ] || [ "$n" -ge "${BISECT_START:-1}" ] || continue
	git -C "$SRC" checkout -q --detach "${commits[$n]}"
	label=$n
	[ "$n" -gt 0 ] || label=base
	for cfg in "${CONFIGS[@]}"; do
		build "$cfg" "$label" || bad=1
		git -C "$SRC" checkout -q -- .
	done
done
say "bisect-check: $((${#commits[@]} - 1)) patches, configurations: ${CONFIGS[*]}"
exit $bad
