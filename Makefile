# SPDX-License-Identifier: GPL-2.0
# Entry points of the project; the logic lives in scripts/.
# LINUX=/path/to/kernel.git with 'make setup' applies the series to your tree.

.PHONY: all setup build test check export mbox bench clean

all: test

setup:
	@scripts/setup.sh

build:
	@scripts/build.sh

test:
	@scripts/test.sh

check:
	@scripts/check.sh

export:
	@scripts/export.sh

mbox:
	@scripts/mbox.sh

bench:
	@scripts/bench.sh

clean:
	rm -rf build/kunit build/check build/guest build/mbox build/bench build/base build/cargo
