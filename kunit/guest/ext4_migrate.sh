#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# The page cache of an ext4 file (large folios) moved between the nodes
# while another process writes the file (ext4_migrate_test): no write lost,
# the folios keep their sizes, the moved dirty folios are written back,
# and no page-cache folio is copied by a migrator (page cache takes no
# batch copy: the CPU copies it during the move). The file system image
# was made on the host (mkfs.ext4, 128 MiB, gzipped into
# /tests/ext4_migrate.img.gz) and is written to a brd RAM disk. Run with
# no migrator and with the test migrator and mtcopy, each first shown to
# copy anonymous folios (so that "copied nothing" means something); then
# again mounted data=journal, where ext4 keeps small folios and migrates
# them with buffer_migrate_folio_norefs() (loads and unloads brd and the
# migrators). Proactive compaction is off meanwhile; the THP controls are
# as they were when it ends.
TEST_PREFIX=ext4_migrate
. /tests/testlib.sh
. /tests/migrate_paths_lib.sh

DEV=/dev/ram0
MNT=/mnt/ext4_migrate
IMG=/tests/ext4_migrate.img.gz

brd_load 131072 || exit 0
if ! gunzip -c $IMG | dd of=$DEV bs=1M 2>/dev/null; then
	fail ext4_migrate_image "writing $IMG to $DEV failed"
	rmmod brd
	exit 0
fi
mkdir -p $MNT
thp_save
thp_start=$_thp_saved
quiet_mm
syscall_only

# with_migrator MIGRATOR: the file's test with MIGRATOR loaded, after
# move_pages_test has seen it copy anonymous folios (so that "the file's
# folios were copied" cannot pass for nothing offloaded at all).
with_migrator() {
	# It leaves the THP controls set for small folios only.
	thp_save
	grun move_pages_test "ext4_migrate${suffix}_${1}_copies_anon" 4 4096 all
	thp_restore
	grun ext4_migrate_test "ext4_migrate${suffix}_$1" "$1" $MNT/file "$folios"
}

# run MOUNT_OPTIONS SUFFIX large|small
run() {
	if ! mount -t ext4 -o "$1" $DEV $MNT; then
		fail "ext4_migrate_mount$2" "mount -t ext4 -o $1 $DEV failed"
		return
	fi
	suffix=$2 folios=$3
	grun ext4_migrate_test "ext4_migrate${2}_no_migrator" none $MNT/file "$3"
	each_migrator with_migrator test mtcopy
	rm -f $MNT/file
	check "ext4_migrate${2}_umount" umount $MNT
}
run data=ordered "" large
run data=journal _journal small

syscall_only_end
quiet_mm_end
thp_save
check ext4_migrate_thp_controls thp_same "$thp_start"
check ext4_migrate_brd_unload rmmod brd
exit 0
