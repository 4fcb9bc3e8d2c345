# SPDX-License-Identifier: GPL-2.0
# Entry points of the project; the logic lives in scripts/.
# LINUX=/path/to/kernel.git with 'make setup' applies the series to your tree.

.PHONY: all setup build test test-debug bisect-check check export mbox bench clean

all: test

setup:
	@scripts/setup.sh

build:
	@scripts/build.sh

test:
	@scripts/test.sh

test-debug:
	@TEST_DEBUG=1 scripts/test.sh

bisect-check:
	@scripts/bisect-check.sh

check:
	@scripts/check.sh

export:
	@scripts/export.sh

mbox:
	@scripts/mbox.sh

bench:
	@scripts/bench.sh

clean:
	rm -rf build/kunit build/debug build/debug-logs build/bisect build/check build/guest build/mbox build/bench build/base build/cargo
