#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make setup: install what is missing, fetch and verify the pinned base tree,
# and create linux/ (tag "base", then the series applied with git am).
# With LINUX=/path/to/kernel.git (also 'make apply'), only apply the series to
# that tree, on a new branch, leaving every other branch alone: nothing is
# installed or downloaded, since git is all that needs.
#
# Idempotent: a second run installs nothing, downloads nothing and does not
# touch an existing linux/.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

DEB_PACKAGES=(clang-19 lld-19 llvm-19 libclang-19-dev ccache make gcc libc6-dev
	      flex bison bc libelf-dev libssl-dev cpio kmod xz-utils perl
	      python3 python3-venv busybox-static git fonts-dejavu-core
	      libnuma-dev e2fsprogs)
# qemu-system-x86 comes from the machine's backports suite, next to its qemu-utils.
QEMU_PACKAGE=qemu-system-x86

# The Debian URI this machine already uses, so that no mirror is written here.
debian_uri() {
	local f uri
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -e "$f" ] || continue
		uri=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) print $i }' "$f" |
		      grep -v -e security -e '^$' | grep -m1 debian || true)
		[ -n "$uri" ] && { echo "$uri"; return; }
	done
	awk '$1 == "deb" && $2 !~ /security/ && $2 ~ /debian/ { print $2; exit }' \
		/etc/apt/sources.list 2>/dev/null
}

# The suites this machine needs beside its own: BASE_SUITE for the pinned
# source package, the machine's backports for QEMU.
# This Debian's codename (bookworm, ...).
os_codename() {
	(. /etc/os-release && echo "$VERSION_CODENAME")
}

apt_suites() {
	local codename
	codename=$(os_codename)
	if [ "$codename-backports" = "$BASE_SUITE" ]; then
		echo "$BASE_SUITE"
	else
		echo "$BASE_SUITE $codename-backports"
	fi
}

APT_LIST=/etc/apt/sources.list.d/migrate-offload.sources

# The deb822 source file setup writes, reusing the machine's Debian URI.
apt_source_text() {
	local uri
	uri=$(debian_uri)
	[ -n "$uri" ] || die "no Debian apt source found to reuse for $BASE_SUITE"
	printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: %s\n' \
		"$uri" "$(apt_suites)" /usr/share/keyrings/debian-archive-keyring.gpg
}

apt_source_present() {
	[ -e "$APT_LIST" ] && grep -q "^Suites: $(apt_suites)\$" "$APT_LIST"
}

have_root() {
	[ "$(id -u)" -eq 0 ] || { command -v sudo >/dev/null && sudo -n true 2>/dev/null; }
}

# Stop, printing what to run as root: the apt source if it is missing, then
# the commands in $1 (each line ending in a newline).
die_as_root() {
	local src=""
	apt_source_present ||
		src="  cat >$APT_LIST <<'END'
$(apt_source_text)
END
  apt-get update
"
	die "this needs root; as root run:
$src$1then run 'make setup' again"
}

setup_apt_source() {
	apt_source_present && return
	have_root || die_as_root ""
	say "apt: adding suites $(apt_suites)"
	local text
	text=$(apt_source_text)
	printf '%s\n' "$text" | as_root tee "$APT_LIST" >/dev/null
	as_root apt-get update -qq
}

install_packages() {
	local missing=() p codename
	codename=$(os_codename)
	for p in "${DEB_PACKAGES[@]}" "$QEMU_PACKAGE"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
			missing+=("$p")
	done
	if [ ${#missing[@]} -eq 0 ]; then
		say "packages: all present"
		return
	fi
	if ! have_root; then
		die_as_root "  apt-get install --no-install-recommends ${missing[*]/$QEMU_PACKAGE/}
  apt-get install --no-install-recommends -t $codename-backports $QEMU_PACKAGE
"
	fi
	setup_apt_source
	say "packages: installing ${missing[*]}"
	local plain=()
	for p in "${missing[@]}"; do
		[ "$p" = "$QEMU_PACKAGE" ] || plain+=("$p")
	done
	export DEBIAN_FRONTEND=noninteractive
	if [ ${#plain[@]} -gt 0 ]; then
		as_root apt-get install -y -qq --no-install-recommends "${plain[@]}" >/dev/null
	fi
	if [[ " ${missing[*]} " == *" $QEMU_PACKAGE "* ]]; then
		as_root apt-get install -y -qq --no-install-recommends \
			-t "$codename-backports" "$QEMU_PACKAGE" >/dev/null
	fi
}

install_rust_tools() {
	command -v rustup >/dev/null || die "rustup not found: install Rust with rustup first"
	if ! rustup component list --installed | grep -q '^rust-src'; then
		say "rust: adding rust-src"
		rustup component add rust-src
	fi
	if ! bindgen --version 2>/dev/null | grep -q "bindgen $BINDGEN_VERSION"; then
		say "rust: building bindgen-cli $BINDGEN_VERSION (a few minutes)"
		cargo install --quiet --locked bindgen-cli --version "$BINDGEN_VERSION"
	fi
}

# b4 to send the series; ply and GitPython for checkpatch's SPDX check.
PYPI_PACKAGES=(b4 ply gitpython)

install_python_tools() {
	[ -x "$VENV/bin/python3" ] || python3 -m venv "$VENV"
	if ! "$VENV/bin/python3" -c 'import ply, git' 2>/dev/null || [ ! -x "$VENV/bin/b4" ]; then
		say "python: installing ${PYPI_PACKAGES[*]} into ${VENV#"$TOP"/}"
		"$VENV/bin/pip" install --quiet --disable-pip-version-check "${PYPI_PACKAGES[@]}"
	fi
}

# Download the pinned linux-source package, or loudly the newest 7.3.y.
fetch_base() {
	local dl=$BUILD_DIR/dl tarball=$BUILD_DIR/dl/$BASE_TARBALL sum newest
	mkdir -p "$dl"
	if [ -e "$tarball" ]; then
		return
	fi
	setup_apt_source
	say "base: downloading $BASE_PKG $BASE_VERSION"
	rm -rf "$dl/deb" && mkdir -p "$dl/deb"
	if ! (cd "$dl/deb" && apt-get download -q "$BASE_PKG=$BASE_VERSION" 2>/dev/null); then
		newest=$(apt-cache madison "$BASE_PKG" | awk '{ print $3; exit }')
		[ -n "$newest" ] || die "$BASE_PKG is not in the archive"
		cat >&2 <<MSG
########################################################################
# WARNING: $BASE_PKG $BASE_VERSION has left the archive.
# Using the newest 7.3.y instead: $newest
# The series may not apply; its sha256 is not the pinned one.
########################################################################
MSG
		(cd "$dl/deb" && apt-get download -q "$BASE_PKG=$newest")
		BASE_SHA256=
	fi
	dpkg-deb --fsys-tarfile "$dl"/deb/*.deb |
		tar -xO "./usr/src/$BASE_TARBALL" >"$tarball.tmp"
	sum=$(sha256sum "$tarball.tmp" | cut -d' ' -f1)
	if [ -n "$BASE_SHA256" ] && [ "$sum" != "$BASE_SHA256" ]; then
		rm -f "$tarball.tmp"
		die "sha256 mismatch for $BASE_TARBALL: got $sum, want $BASE_SHA256"
	fi
	say "base: $BASE_TARBALL sha256 $sum"
	mv "$tarball.tmp" "$tarball"
	rm -rf "$dl/deb"
}

# Fixed identity and date for the base commit, so that every machine gets the
# same base hash (b4 and the mbox name it as base-commit).
base_commit_env() {
	export GIT_AUTHOR_NAME="Debian Kernel Team" GIT_COMMITTER_NAME="Debian Kernel Team"
	export GIT_AUTHOR_EMAIL="debian-kernel@lists.debian.org"
	export GIT_COMMITTER_EMAIL="debian-kernel@lists.debian.org"
	export GIT_AUTHOR_DATE="2026-11-15T00:00:00Z" GIT_COMMITTER_DATE="2026-11-15T00:00:00Z"
}

strip_debian_gitignore() {
	local f=$1 n
	n=$(grep -n -m1 '^# Debian packaging' "$f" | cut -d: -f1)
	[ -n "$n" ] || die "$f: the Debian rules were not found; has the package changed?"
	# Drop the comment block ("#" line above it) and everything after it,
	# then the blank line that separated it.
	head -n $((n - 2)) "$f" | sed -e '${/^$/d}' >"$f.new"
	mv "$f.new" "$f"
	! grep -qx '/\*' "$f" || die "$f still ignores everything"
}

create_tree() {
	local tmp=$LINUX_DIR.tmp
	say "base: unpacking into linux/"
	rm -rf "$tmp" && mkdir -p "$tmp"
	tar -C "$tmp" --strip-components=1 -xf "$BUILD_DIR/dl/$BASE_TARBALL"
	# Debian's top-level .gitignore ends with rules that ignore everything
	# (for its packaging); keep only the kernel's own rules.
	strip_debian_gitignore "$tmp/.gitignore"
	git -C "$tmp" init -q -b master
	git -C "$tmp" config core.autocrlf false
	# No background auto-gc: after the base commit's 90k new objects it
	# would lock HEAD while the series is being applied.
	git -C "$tmp" config gc.auto 0
	git -C "$tmp" add -A
	(base_commit_env
	 git -C "$tmp" commit -q -m "Linux 7.3.4 (Debian $BASE_PKG $BASE_VERSION)")
	git -C "$tmp" tag base
	mv "$tmp" "$LINUX_DIR"
}

setup_user_tree() {
	local tree=$1 branch=${BRANCH:-migrate-offload}
	git -C "$tree" rev-parse --git-dir >/dev/null 2>&1 || die "$tree is not a git tree"
	[ -z "$(git -C "$tree" status --porcelain --untracked-files=no)" ] ||
		die "$tree has uncommitted changes; commit or stash them first"
	git -C "$tree" rev-parse -q --verify "refs/heads/$branch" >/dev/null &&
		die "branch $branch exists in $tree; pass BRANCH=<name> for another"
	git_identity_ok "$tree"
	say "series: applying onto $tree, new branch $branch from $(git -C "$tree" rev-parse --short HEAD)"
	git -C "$tree" switch -q -c "$branch"
	"$TOP/scripts/apply.sh" "$tree"
}

# b4 reads its settings from .b4-config at the top of the tree it works in.
install_b4_config() {
	copy_if_changed "$TOP/b4.conf" "$LINUX_DIR/.b4-config"
	grep -qx '/.b4-config' "$LINUX_DIR/.git/info/exclude" 2>/dev/null ||
		echo '/.b4-config' >>"$LINUX_DIR/.git/info/exclude"
}

main() {
	if [ -n "${LINUX:-}" ]; then
		setup_user_tree "$LINUX"
		return
	fi
	install_packages
	install_rust_tools
	install_python_tools
	if [ -d "$LINUX_DIR/.git" ]; then
		[ ! -d "$LINUX_DIR/.git/rebase-apply" ] ||
			die "linux/ is in the middle of 'git am': finish it (git -C linux am --continue) or start over (rm -rf linux; make setup)"
		install_b4_config
		say "linux/: present, left as it is (after pulling new patches: scripts/apply.sh --reset)"
		return
	fi
	# linux/ is a new repository: only the global identity reaches it.
	git_identity_ok /
	fetch_base
	create_tree
	"$TOP/scripts/apply.sh" "$LINUX_DIR"
	install_b4_config
}

main "$@"
