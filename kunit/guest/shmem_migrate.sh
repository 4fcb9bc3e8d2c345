#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# Large shmem folios mapped by two processes moved between the nodes with
# MPOL_MF_MOVE_ALL (shmem_migrate_test), through the batched unmap and
# restore of their mappings: 64K mTHPs of anonymous shared memory
# (hugepages-64kB/shmem_enabled=always) and of a memfd (which, unlinked,
# is mapped as anonymous shared memory: the same control), mapped by PTEs in
# both processes; and 2M folios of a tmpfs mounted huge=always, mapped by
# a PMD in one process and by PTEs in the other. Bytes, nodes, folios
# still large, pagemap bits, dirty bits, PMD mappings, and (in the mlock
# and softdirty variants) mlocked/unevictable pages and VmLck, soft-dirty
# page by page. shmem opted in to the batch copy: a registered migrator
# copies every folio. Every variant with no migrator and the test
# migrator; the plain ones also with dcbm and mtcopy (loads and unloads
# each).
TEST_PREFIX=shmem_migrate
. /tests/testlib.sh
. /tests/migrate_paths_lib.sh

MNT=/mnt/shmem_migrate_huge

mkdir -p $MNT
if ! mount -t tmpfs -o huge=always,size=256m tmpfs $MNT; then
	fail shmem_migrate_mount "mount -t tmpfs -o huge=always failed"
	exit 0
fi
quiet_mm
syscall_only

plain() {
	grun shmem_migrate_test "shmem_migrate_anon_64k_$1" "$2" anon 64 64 plain
	grun shmem_migrate_test "shmem_migrate_memfd_64k_$1" "$2" memfd 64 64 plain
	grun shmem_migrate_test "shmem_migrate_tmpfs_2m_$1" "$2" tmpfs:$MNT 2048 16 plain
}
variants() {
	grun shmem_migrate_test "shmem_migrate_anon_64k_softdirty_$1" "$2" anon 64 64 softdirty
	grun shmem_migrate_test "shmem_migrate_memfd_64k_softdirty_$1" "$2" memfd 64 64 softdirty
	grun shmem_migrate_test "shmem_migrate_anon_64k_mlock_$1" "$2" anon 64 64 mlock
	grun shmem_migrate_test "shmem_migrate_tmpfs_2m_mlock_$1" "$2" tmpfs:$MNT 2048 16 mlock
}
plain no_migrator none
variants no_migrator none
all() {
	plain "$1" "$1"
	[ "$1" != test ] || variants "$1" "$1"
}
each_migrator all test dcbm mtcopy

syscall_only_end
quiet_mm_end
check shmem_migrate_umount umount $MNT
exit 0
