#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# The tests of ksm_migrate.sh, swapcache_migrate.sh, shmem_migrate.sh,
# ext4_migrate.sh, hmm_migrate.sh and move_race.sh run with one wrong
# expectation each (NEGATIVE=<what>, see each program), or, for
# swapcache, with a setup that breaks what it checks (no child holding the
# swap entries: the folios leave the swap cache): each must FAIL, and
# this prints PASS negative_<what>_<name> when it does (with its reason),
# FAIL when the test passed anyway. Late in list-paths: it shows that the
# checks can fail (loads and unloads brd, test_hmm and the test migrator).
TEST_PREFIX=negative
. /tests/testlib.sh
. /tests/migrate_paths_lib.sh

# pattern WHAT: what the FAIL line of the check NEGATIVE=WHAT turns round
# says (a FAIL for another reason, a broken setup, proves nothing).
pattern() {
	case $1 in
	offload) echo "offloaded|offload: " ;;
	node) echo "is on node" ;;
	merged) echo "KSM page" ;;
	bytes) echo "word [0-9]* is|byte [0-9]* changed|byte [0-9]* is" ;;
	nofork) echo "not in the swap cache" ;;
	large) echo "whole folio|in folios of" ;;
	softdirty) echo "soft-dirty" ;;
	mlock) echo "mlocked" ;;
	copied) echo "page-cache folios copied" ;;
	enoent) echo "want -ENOENT" ;;
	partial) echo "nr_anon_partially_mapped grew" ;;
	whole) echo "not whole" ;;
	devmig) echo "migrating [0-9]* pages to" ;;
	dirty) echo "cached and dirty" ;;
	*) echo "no pattern for NEGATIVE=$1: add one to pattern()" >&2; return 1 ;;
	esac
}

# neg WHAT PROGRAM NAME ARGS...: PROGRAM with NEGATIVE=WHAT must fail, on
# the check WHAT names.
neg() {
	what=$1
	shift
	out=$(NEGATIVE=$what "$@" 2>&1)
	line=$(echo "$out" | grep "^GUEST-TEST: FAIL" | head -n 1)
	if [ -z "$line" ]; then
		fail "negative_${what}_$2" "passed with NEGATIVE=$what: $(echo "$out" | tail -n 1)"
	elif ! pat=$(pattern "$what"); then
		fail "negative_${what}_$2" "no pattern for NEGATIVE=$what"
	elif echo "$line" | grep -qE "$pat"; then
		pass "negative_${what}_$2 (${line#GUEST-TEST: FAIL })"
	else
		fail "negative_${what}_$2" "failed, but not on the check NEGATIVE=$what turns round: ${line#GUEST-TEST: FAIL }"
	fi
}

# setup NAME COMMAND...: a step the negatives need; its failure ends the
# script with a FAIL line (what was set up so far stays: the guest ends).
setup() {
	_s=$1
	shift
	"$@" >/tmp/negative_setup.out 2>&1 && return 0
	fail "negative_setup_$_s" "$* failed: $(tr '\n' ' ' </tmp/negative_setup.out)"
	exit 0
}

setup brd insmod /tests/brd.ko rd_nr=2 rd_size=262144
setup ram1 wait_for_dev -b /dev/ram1
setup mkswap mkswap /dev/ram0
setup swapon swapon /dev/ram0
setup ext4_image sh -c "gunzip -c /tests/ext4_migrate.img.gz | dd of=/dev/ram1 bs=1M"
mkdir -p /mnt/neg_ext4 /mnt/neg_huge
setup ext4_mount mount -t ext4 /dev/ram1 /mnt/neg_ext4
setup tmpfs_mount mount -t tmpfs -o huge=always,size=256m tmpfs /mnt/neg_huge
setup test_hmm insmod /tests/test_hmm.ko
setup hmm_dmirror0 wait_for_dev -c /dev/hmm_dmirror0

for w in offload node merged bytes; do
	neg $w ksm_migrate_test ksm_migrate_none none
done
for w in nofork offload node bytes; do
	neg $w swapcache_migrate_test swapcache_migrate_64k none 64 64
done
neg nofork swapcache_migrate_test swapcache_migrate_4k none 4 1024
for w in node bytes large offload; do
	neg $w shmem_migrate_test shmem_migrate_anon_64k none anon 64 64 plain
done
neg large shmem_migrate_test shmem_migrate_tmpfs_2m none tmpfs:/mnt/neg_huge 2048 16 plain
neg softdirty shmem_migrate_test shmem_migrate_memfd_64k_softdirty none memfd 64 64 softdirty
neg mlock shmem_migrate_test shmem_migrate_anon_64k_mlock none anon 64 64 mlock
for w in copied bytes large node dirty; do
	neg $w ext4_migrate_test ext4_migrate none /mnt/neg_ext4/file large
done
for w in offload node bytes enoent devmig; do
	neg $w hmm_migrate_test hmm_migrate none
done
for w in partial bytes offload whole; do
	neg $w move_race_test move_race_zap none zap 5
done
neg partial move_race_test move_race_fork_zap none fork_zap 5
neg partial move_race_test move_race_fork_cow none fork_cow 5
neg bytes move_race_test move_race_fork none fork 5

# ext4_migrate.sh's check of the THP controls: move_pages_test (which it
# runs) leaves them changed unless thp_save/thp_restore put them back.
thp_save
thp_before=$_thp_saved
move_pages_test negative_thp 4 64 >/dev/null 2>&1
thp_save
if out=$(thp_same "$thp_before"); then
	fail negative_thp_controls "move_pages_test left the THP controls as they were"
else
	pass "negative_thp_controls ($out)"
fi
_thp_saved=$thp_before
thp_restore

if migrator_load test; then
	neg offload ksm_migrate_test ksm_migrate_test test
	neg offload swapcache_migrate_test swapcache_migrate_64k_test test 64 64
	neg offload shmem_migrate_test shmem_migrate_anon_64k_test test anon 64 64 plain
	neg copied ext4_migrate_test ext4_migrate_test test /mnt/neg_ext4/file large
	neg offload hmm_migrate_test hmm_migrate_test test
	neg offload move_race_test move_race_zap_test test zap 5
	migrator_unload test
fi

rmmod test_hmm
umount /mnt/neg_huge
umount /mnt/neg_ext4
swapoff /dev/ram0
rmmod brd
exit 0
