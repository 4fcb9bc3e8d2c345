#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# kselftest.sh PREFIX PROGRAM [ARGS]: run one of the kernel's own selftests
# (built from tools/testing/selftests/mm by scripts/test.sh) and turn each of
# its TAP results into a GUEST-TEST line named PREFIX.N-case: "ok" is a PASS,
# "ok ... # SKIP" a SKIP (counted apart, never as a pass), "not ok" a FAIL.
# A program that reports nothing, or fails without saying which case did, is
# a FAIL.
prefix=$1
shift
out=$("$@" 2>&1)
rc=$?
echo "$out" | sed 's/^/    /'
results=0
failed=0
echo "$out" >/tmp/kselftest.out
while read -r line; do
	case "$line" in
	"ok "*|"not ok "*) ;;
	*) continue ;;
	esac
	results=$((results + 1))
	rest=${line#not }
	rest=${rest#ok }
	number=${rest%% *}
	rest=${rest#* }
	# "fixture.variant.case" of the harness (the fixture dropped, the
	# variant kept), or a description: number it.
	case_name=${rest%% #*}
	case "$case_name" in
	*" "*) ;;
	*.*) case_name=${case_name#*.} ;;
	esac
	case_name=$number-$(echo "$case_name" | tr -c 'A-Za-z0-9_.\n-' '_')
	case "$line" in
	*"# SKIP"*) echo "GUEST-TEST: SKIP $prefix.$case_name: ${line##*# SKIP}" ;;
	"ok "*) echo "GUEST-TEST: PASS $prefix.$case_name" ;;
	*) echo "GUEST-TEST: FAIL $prefix.$case_name: $line"; failed=1 ;;
	esac
done </tmp/kselftest.out
if [ $results -eq 0 ]; then
	echo "GUEST-TEST: FAIL $prefix: no results (exit status $rc)"
elif [ $rc -ne 0 ] && [ $rc -ne 4 ] && [ $failed -eq 0 ]; then
	echo "GUEST-TEST: FAIL $prefix: exit status $rc"
fi
exit 0
