#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# Memory pressure (pressure_test): migrations to a nearly full node, for
# 4K, 64K and 2M folios, with the batch copy of the core and with each
# migrator registered (copying every batch). With an argument (serial, test,
# dcbm or mtcopy), only that copy path.
TEST_PREFIX=pressure
. /tests/testlib.sh

run() {
	for kb in 4 64 2048; do
		pressure_test "pressure_$1_${kb}k" "$kb" 262144 "$2"
	done
}

only=${1:-}
[ -n "$only" ] && [ "$only" != serial ] || run serial
for mig in test dcbm mtcopy; do
	[ -z "$only" ] || [ "$only" = $mig ] || continue
	if migrator_load $mig; then
		run $mig copied
		migrator_unload $mig
	fi
done
