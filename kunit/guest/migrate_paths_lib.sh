# SPDX-License-Identifier: GPL-2.0
#
# Shell helpers of ksm_migrate.sh, swapcache_migrate.sh, shmem_migrate.sh,
# ext4_migrate.sh, hmm_migrate.sh and move_race.sh, sourced after
# testlib.sh: not run.

# grun PROGRAM NAME [ARGS...]: guest_run, with the output shown as it comes
# (a test that hangs leaves what it printed), the time it took, and a
# limit of $GRUN_LIMIT seconds (default 300): a test still running then is
# killed and fails.
grun() {
	_t0=$(cut -d' ' -f1 /proc/uptime)
	{ timeout "${GRUN_LIMIT:-300}" "$@" 2>&1; echo $? >/tmp/grun.rc; } | tee /tmp/grun.out
	_rc=$(cat /tmp/grun.rc)
	_t1=$(cut -d' ' -f1 /proc/uptime)
	echo "    ($2: $(echo "$_t0 $_t1" | awk '{ printf "%.1f", $2 - $1 }') s)"
	if [ "$_rc" -ne 0 ] && ! grep -q "^GUEST-TEST: FAIL" /tmp/grun.out; then
		if [ "$_rc" -eq 143 ] || [ "$_rc" -eq 124 ]; then
			fail "$2" "$1 still running after ${GRUN_LIMIT:-300} s: killed"
		else
			fail "$2" "$1 exited with status $_rc"
		fi
	fi
}

# thp_save: remember the anonymous THP controls (the top-level enabled and
# every size's); thp_restore writes them back. Around programs that set
# them and leave them so (move_pages_test's set_thp_size() turns every
# size off but one, and the top level to madvise): the tests after them,
# the kernel's hmm-tests among them, expect the boot's settings.
thp_save() {
	_thp_saved=
	for _f in /sys/kernel/mm/transparent_hugepage/enabled \
		  /sys/kernel/mm/transparent_hugepage/hugepages-*/enabled; do
		_thp_saved="$_thp_saved $_f=$(sed 's/.*\[\(.*\)\].*/\1/' "$_f")"
	done
}
thp_restore() {
	for _e in $_thp_saved; do
		echo "${_e#*=}" >"${_e%%=*}" 2>/dev/null
	done
}
# thp_same SAVED: the controls thp_save last read are SAVED ($_thp_saved
# of an earlier thp_save).
thp_same() {
	[ "$_thp_saved" = "$1" ] || { echo "THP controls now:$_thp_saved; were:$1"; return 1; }
}
