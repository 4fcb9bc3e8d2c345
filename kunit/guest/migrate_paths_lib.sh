# SPDX-License-Identifier: GPL-2.0
#
# Shell helpers of ksm_migrate.sh, swapcache_migrate.sh, shmem_migrate.sh,
# ext4_migrate.sh, hmm_migrate.sh and move_race.sh, sourced after
# testlib.sh: not run. (Their runner, grun, is in testlib.sh.)

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

# syscall_only / syscall_only_end: while the tests count the migrator's
# copies exactly, only move_pages()' migrations (syscall_or_cpuset) may be
# offloaded: allocating the target of a large folio may compact
# (GFP_TRANSHUGE reclaims directly), and those batches would be offloaded
# and counted too. syscall_only_end puts the reasons back. (Nothing to do
# on a kernel without the copy offload: move_race.sh base.)
syscall_only() {
	_paths_reasons=
	[ -e /sys/kernel/mm/migrate_offload/reasons ] || return 0
	_paths_reasons=$(cat /sys/kernel/mm/migrate_offload/reasons)
	echo syscall_or_cpuset >/sys/kernel/mm/migrate_offload/reasons
}
syscall_only_end() {
	[ -z "$_paths_reasons" ] || echo "$_paths_reasons" >/sys/kernel/mm/migrate_offload/reasons
}
