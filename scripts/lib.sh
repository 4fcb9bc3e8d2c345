# SPDX-License-Identifier: GPL-2.0
# Common settings for the project's scripts. Sourced, never run.

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LINUX_DIR=${LINUX_DIR:-$TOP/linux}
# The commit of linux/ whose series the patch files hold: set by 'make
# export' and by applying the patch files; 'apply.sh --reset' refuses to drop
# commits made after it.
EXPORTED_REF=refs/migrate-offload/exported
# copy_if_changed SRC DST: cp only when DST differs, so that an unchanged
# file keeps its timestamp.
copy_if_changed() {
	cmp -s "$1" "$2" || cp "$1" "$2"
}
BUILD_DIR=${BUILD_DIR:-$TOP/build}
VENV=$BUILD_DIR/venv

# The test kernel and where its logs go: build/kunit and build/ for 'make
# test'; build/debug and build/debug-logs for 'make test-debug', whose kernel
# adds the bug detectors of kunit/debug.config.
if [ "${TEST_DEBUG:-0}" = 1 ]; then
	KUNIT_BUILD=$BUILD_DIR/debug
	LOG_DIR=$BUILD_DIR/debug-logs
	KUNITCONFIGS=(kunit/.kunitconfig kunit/debug.config)
else
	KUNIT_BUILD=$BUILD_DIR/kunit
	LOG_DIR=$BUILD_DIR
	KUNITCONFIGS=(kunit/.kunitconfig)
fi
# A log's name as the messages show it (relative to the top).
logname() {
	echo "${1#"$TOP"/}"
}

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

# git am records a committer: stop before a half-applied series if git has
# no identity to give it (in the tree $1, or from the global config for /).
git_identity_ok() {
	git -C "$1" var GIT_COMMITTER_IDENT >/dev/null 2>&1 ||
		die "git has no identity to commit with: set it first (git config --global user.name 'Your Name'; git config --global user.email you@example.org)"
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

# The QEMU machine of kunit/qemu-numa.args (two NUMA nodes, one argument
# per line), or of the file $QEMU_ARGS names.
qemu_machine() {
	grep -v -e '^[[:space:]]*$' -e '^[[:space:]]*#' "${QEMU_ARGS:-$TOP/kunit/qemu-numa.args}"
}

# qemu_boot KERNEL LOG TIMEOUT CMDLINE [QEMU ARGS...]: boot KERNEL on that
# machine under TCG, console into LOG; never fails (the caller reads LOG).
# kunit.py's own runner always tries KVM first, and where /dev/kvm exists
# but cannot run this guest (as on the project's machines) it hangs.
qemu_boot() {
	local kernel=$1 log=$2 timeout=$3 cmdline=$4 machine=()
	shift 4
	mapfile -t machine < <(qemu_machine)
	timeout "$timeout" qemu-system-x86_64 -nodefaults -nographic -no-reboot \
		-serial stdio -kernel "$kernel" \
		-append "console=ttyS0 panic=-1 $cmdline" "${machine[@]}" "$@" \
		</dev/null >"$log" 2>&1 || true
}

# A static busybox, or die saying what to install.
require_static_busybox() {
	case "$(ldd /bin/busybox 2>&1 || true)" in
	*"not a dynamic"*) ;;
	*) die "/bin/busybox is not static: install busybox-static" ;;
	esac
}

# The stack: patches/stack lists the series' folders in the order they
# apply, one per line. Each folder holds 'series' (its patch files, in
# order), 'config' (where and how it is posted), 'deps' (its prerequisites,
# as b4 writes them), its cover letter and its patch files.
STACK_FILE=$TOP/patches/stack
stack_dirs() {
	sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$STACK_FILE"
}
# The series' names (their folders' names), in stack order.
stack_names() {
	local d
	while read -r d; do basename "$d"; done < <(stack_dirs)
}
# series_dir NAME: the folder of series NAME, relative to $TOP.
series_dir() {
	local d
	while read -r d; do
		[ "$(basename "$d")" = "$1" ] && { echo "$d"; return 0; }
	done < <(stack_dirs)
	die "no series '$1' in patches/stack (the series: $(stack_names | paste -sd' '))"
}
# series_patch_files NAME: its patch files, relative to $TOP, in order.
series_patch_files() {
	local d
	d=$(series_dir "$1")
	sed -e 's/#.*//' -e '/^[[:space:]]*$/d' -e "s|^|$d/|" "$TOP/$d/series"
}
# Every patch of the stack, in order.
series_patches() {
	local n
	for n in $(stack_names); do series_patch_files "$n"; done
}
# series_conf NAME VAR: the value of VAR in the series' config (a shell
# fragment of assignments).
series_conf() {
	(
		# shellcheck disable=SC1090
		. "$TOP/$(series_dir "$1")/config"
		eval "printf '%s\\n' \"\${$2:-}\""
	)
}
# series_deps NAME: the series NAME's deps file names, by the change-id of
# their config (lines 'change-id: <id>:v<N>'). Other lines (message-id: of a
# posting elsewhere) are for b4 only.
series_deps() {
	local id n
	while read -r id; do
		id=${id%:v*}
		for n in $(stack_names); do
			[ "$(series_conf "$n" CHANGE_ID)" = "$id" ] && { echo "$n"; continue 2; }
		done
		die "$(series_dir "$1")/deps: change-id $id is no series of patches/stack"
	done < <(sed -n 's/^change-id:[[:space:]]*//p' "$TOP/$(series_dir "$1")/deps")
}
# deps_closure NAME: every series NAME needs, directly or not, in stack order
# (each before the series that needs it, or patches/stack is wrong).
deps_closure() {
	local want=" " todo=("$1") n d
	while [ ${#todo[@]} -gt 0 ]; do
		n=${todo[0]}
		todo=("${todo[@]:1}")
		for d in $(series_deps "$n"); do
			case $want in *" $d "*) ;; *) want="$want$d " todo+=("$d") ;; esac
		done
	done
	for n in $(stack_names); do
		[ "$n" = "$1" ] && break
		case $want in *" $n "*) echo "$n"; want=${want/ $n / } ;; esac
	done
	[ "$want" = " " ] || die "series $1 needs$want, which patches/stack puts after it"
}

# am_series TREE NAME: git am series NAME's patches onto TREE's HEAD. On a
# patch that does not apply: abort the am, print that patch, return 1.
am_series() {
	local p
	while read -r p; do
		if ! git -C "$1" am -q --keep-cr "$TOP/$p" >/dev/null 2>&1; then
			git -C "$1" am --abort >/dev/null 2>&1 || true
			echo "$p"
			return 1
		fi
	done < <(series_patch_files "$2")
}

# checkpatch_patch P: checkpatch.pl --strict on patch file P (relative to
# $TOP), ignoring the types patches/checkpatch-exceptions justifies for it
# (lines '<patch path> <TYPE> <why>'); prints what it finds, and fails if
# it finds anything.
checkpatch_patch() {
	local ign out
	ign=$(awk -v p="$1" '$1 == p { print $2 }' "$TOP/patches/checkpatch-exceptions" | paste -sd, -)
	[ -z "$ign" ] || say "checkpatch: $1: ignoring $ign (see patches/checkpatch-exceptions)"
	out=$(cd "$LINUX_DIR" && PATH="$VENV/bin:$PATH" scripts/checkpatch.pl --strict --show-types -q \
		${ign:+--ignore "$ign"} "$TOP/$1" 2>&1) && [ -z "$out" ] && return 0
	printf 'checkpatch: %s\n%s\n\n' "$1" "$out"
	return 1
}

# new_worktree DIR [REV]: a fresh detached worktree of linux/ at REV (base
# if none) in DIR. What DIR held goes first, a worktree too - even a locked
# one whose directory is gone, as an interrupted 'git worktree add' leaves
# it (a single --force would refuse it, and the add would then fail).
new_worktree() {
	git -C "$LINUX_DIR" worktree remove --force --force "$1" 2>/dev/null || rm -rf "$1"
	git -C "$LINUX_DIR" worktree prune
	git -C "$LINUX_DIR" worktree add -q --detach "$1" "${2:-base}"
}

# worktree DIR: new_worktree DIR, removed when the calling script exits
# (through the EXIT trap, which it sets: a script with a trap of its own
# removes DIR there).
worktree() {
	new_worktree "$1"
	# shellcheck disable=SC2064 # DIR now, not at exit
	trap "git -C '$LINUX_DIR' worktree remove --force '$1'" EXIT
}

# Hidden symbols that only later patches of the series select: the prefix
# checks turn them on so that their code is built in every prefix that has
# it. force_prompts SRC gives each a temporary prompt in SRC/mm/Kconfig.
FORCE=(MIGRATION_COPY_OFFLOAD)
force_prompts() {
	local s
	for s in "${FORCE[@]}"; do
		sed -i "s/^config $s\$/config $s\\n\\tprompt \"$s (forced by the prefix checks)\"/" \
			"$1"/mm/Kconfig
	done
}

# force_config SRC DST: the configuration SRC with every FORCE symbol set to
# y, in DST (replacing SRC's own line for it, so that Kconfig does not warn
# that a symbol is assigned twice).
force_config() {
	local s
	grep -v -E "^(# )?CONFIG_($(IFS='|'; echo "${FORCE[*]}"))[= ]" "$1" >"$2" || true
	for s in "${FORCE[@]}"; do
		echo "CONFIG_$s=y" >>"$2"
	done
}
