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
# A mutation that no longer applies (the source changed) is an error.
set -euo pipefail
src=$1 out=$2
mkdir -p "$out"
corrupt() { # TEST WHEN
	sed "s|^\(\t*\)region_check(r, \"$2\");|\1if (r->kind == K_2M) ((uint64_t *)r->buf)[4242] ^= 1;\n\1region_check(r, \"$2\");|" \
		"$src/$1.c" >"$out/$1_corrupt.c"
}
corrupt memory_offline_test "after offlining"
corrupt longterm_pin_test "after pinning"
corrupt contig_range_test "after the allocation"
corrupt soft_offline_test "after soft offline"
sed 's|if (block_set_state(blk, "offline"))|if (0)|' \
	"$src/memory_offline_test.c" >"$out/memory_offline_test_nomove.c"
sed 's|if (pfn_movable(pfn\[i\]))|if (pfn_movable(r->pfn[i]))|' \
	"$src/longterm_pin_test.c" >"$out/longterm_pin_test_nomove.c"
sed 's|pfn = page_pfns(r->buf, r->len);|pfn = r->pfn;|' \
	"$src/contig_range_test.c" >"$out/contig_range_test_nomove.c"
sed 's|uint64_t \*pfn = page_pfns(r->buf, r->len);|uint64_t *pfn = r->pfn;|' \
	"$src/soft_offline_test.c" >"$out/soft_offline_test_nomove.c"
for f in "$out"/*_corrupt.c "$out"/*_nomove.c; do
	orig=$(basename "$f" | sed 's/_\(corrupt\|nomove\)\.c$/.c/')
	if cmp -s "$f" "$src/$orig"; then
		echo "error: $(basename "$f"): the mutation no longer applies to $orig" >&2
		exit 1
	fi
	gcc -static -O2 -Wall -Wextra -Werror -I"$src" -o "${f%.c}" "$f"
done
