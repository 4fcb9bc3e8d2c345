# SPDX-License-Identifier: GPL-2.0
# Entry points of the project; the logic lives in scripts/.
# make apply LINUX=/path/to/kernel.git applies the series to your tree.

.PHONY: all setup apply build test test-paths test-debug test-mmci bisect-check split-check check export mbox bench clean

all: test

setup:
	@scripts/setup.sh

# make apply LINUX=/path/to/linux [SERIES=name]: the stack (or one series and
# the series it needs) onto that tree's HEAD, on a new branch (BRANCH=,
# default migrate-offload); installs nothing.
apply:
	@test -n "$(LINUX)" || { echo "make apply: set LINUX=/path/to/your/kernel/tree" >&2; exit 2; }
	@LINUX="$(LINUX)" SERIES="$(SERIES)" scripts/setup.sh

build:
	@scripts/build.sh

test:
	@scripts/test.sh

test-paths:
	@TEST_PATHS=1 scripts/test.sh

test-debug:
	@TEST_DEBUG=1 scripts/test.sh

# Upstream's mm CI (mm selftests, virtme-ng) on 7.3.4 and the series: hours.
test-mmci:
	@scripts/test-mmci.sh

bisect-check:
	@scripts/bisect-check.sh

# Each series alone on its prerequisites (apply, checkpatch, every prefix
# with W=1), and the stack's tree against linux/'s (SPLIT_SERIES= for some).
split-check:
	@scripts/split-check.sh

check:
	@scripts/check.sh

export:
	@scripts/export.sh

# make mbox [SERIES=name]: each posted series (or one) as mail in build/mbox/.
mbox:
	@SERIES="$(SERIES)" scripts/mbox.sh

bench:
	@scripts/bench.sh

clean:
	rm -rf build/kunit build/debug build/debug-logs build/bisect build/check build/guest build/mbox build/split build/split-rust build/bench build/base build/cargo \
		build/mmci build/mmci-base build/mmci-series build/mmci-src-base build/mmci-src-series
