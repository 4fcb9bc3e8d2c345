#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# paths-mutants.sh SRC OUT: build into OUT the mutants of the tests of the
# migration paths (kunit/guest/{memory_offline,longterm_pin,contig_range,
# soft_offline}_test.c) that kunit/guest/paths_failcheck.sh must see FAIL:
#   *_corrupt  flips one bit of the 2M data after the migration (the byte
#              check must see it);
#   *_nomove   looks at where the pages were before the migration instead of
#              after (the placement check must see it), or, for
#              memory_offline_test, does not offline at all.
# Memory offline, contig_range and soft offline check the data in migpath.h's
# regions_check_after(): their mutants are built from the unchanged source
# with -DMIGPATH_MUTANT_CORRUPT / -DMIGPATH_MUTANT_NOMOVE; longterm_pin's
# and memory_offline's "no offline" are sed edits of the test. A mutation
# that no longer applies (the source changed) is an error.
set -euo pipefail
src=$1 out=$2
# (Afresh: a mutant's source left from an earlier version would be built
# again below.)
rm -rf "$out" && mkdir -p "$out"
cc() { gcc -static -O2 -Wall -Wextra -Werror -I"$src" "$@"; }
for hook in CORRUPT NOMOVE; do
	grep -q "^#ifdef MIGPATH_MUTANT_$hook\$" "$src/migpath.h" || {
		echo "error: migpath.h has no MIGPATH_MUTANT_$hook" >&2
		exit 1
	}
done
for t in memory_offline contig_range soft_offline; do
	cc -DMIGPATH_MUTANT_CORRUPT -o "$out/${t}_test_corrupt" "$src/${t}_test.c"
done
for t in contig_range soft_offline; do
	cc -DMIGPATH_MUTANT_NOMOVE -o "$out/${t}_test_nomove" "$src/${t}_test.c"
done
sed "s|^\(\t*\)region_check(r, \"after pinning\");|\1if (r->kind == K_2M) ((uint64_t *)r->buf)[4242] ^= 1;\n\1region_check(r, \"after pinning\");|" \
	"$src/longterm_pin_test.c" >"$out/longterm_pin_test_corrupt.c"
sed 's|if (block_set_state(blk, "offline"))|if (0)|' \
	"$src/memory_offline_test.c" >"$out/memory_offline_test_nomove.c"
sed 's|if (pfn_movable(pfn\[i\]))|if (pfn_movable(r->pfn[i]))|' \
	"$src/longterm_pin_test.c" >"$out/longterm_pin_test_nomove.c"
for f in "$out"/*_corrupt.c "$out"/*_nomove.c; do
	orig=$(basename "$f" | sed 's/_\(corrupt\|nomove\)\.c$/.c/')
	if cmp -s "$f" "$src/$orig"; then
		echo "error: $(basename "$f"): the mutation no longer applies to $orig" >&2
		exit 1
	fi
	cc -o "${f%.c}" "$f"
done
