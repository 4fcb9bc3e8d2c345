// SPDX-License-Identifier: GPL-2.0
/*
 * move_pages_test: move anonymous memory from node 0 to node 1 with
 * move_pages(2) and check that it arrived whole.
 *
 *   move_pages_test NAME FOLIO_KB TOTAL_KB [OFFLOAD]
 *
 * Maps TOTAL_KB of anonymous memory bound to node 0, backed by folios of
 * FOLIO_KB: 4 means small pages (MADV_NOHUGEPAGE); a larger size is enabled
 * alone in /sys/kernel/mm/transparent_hugepage/hugepages-<N>kB/ and asked for
 * with MADV_HUGEPAGE, and its stats/anon_fault_alloc must show that every
 * folio was allocated at that size. The memory is filled with a pattern, and moves it to node 1 passing one address per folio
 * (move_pages() isolates a large folio at its first address). It then checks
 * every page's node with move_pages(..., NULL, status), every byte, and that
 * /proc/vmstat's pgmigrate_success grew by exactly the number of pages moved
 * (thp_migration_success by the number of PMD-sized folios).
 *
 * With OFFLOAD, the copy-offload counters of /proc/vmstat must also show
 * what the registered migrator should have done with the folios:
 *   none      no batch was offloaded;
 *   all       every folio was copied by the migrator, none fell back;
 *   one       the migrator copied exactly one folio per batch (it was told
 *             to fail after one) and the CPU copied the rest;
 *   fallback  batches went to the migrator, which copied nothing, and the
 *             CPU copied every folio;
 *   mixed     the migrator copied some folios and the CPU the others (some
 *             batches failed), each folio counted once.
 *
 * MOVE_HOW in the environment chooses the call: move_pages (the default,
 * MPOL_MF_MOVE), move_all (move_pages() with MPOL_MF_MOVE_ALL) or mbind
 * (mbind(MPOL_BIND, MPOL_MF_MOVE | MPOL_MF_STRICT) of the whole range).
 *
 * Prints one line, "GUEST-TEST: PASS NAME" or "GUEST-TEST: FAIL NAME: why",
 * and exits 0 or 1. No libnuma in the guest: raw system calls.
 */
#include <time.h>

#include "guest.h"

struct offload_counters {
	unsigned long batch, copied, fallback;
};

static void offload_snapshot(struct offload_counters *c)
{
	c->batch = vmstat("migrate_offload_batches");
	c->copied = vmstat("migrate_offload_folios_copied");
	c->fallback = vmstat("migrate_offload_folios_fallback");
}

/* Check the offload counters against what @expect says should happen. */
static void check_offload(const char *expect, const struct offload_counters *before,
			  unsigned long nr_folios)
{
	struct offload_counters now, d;
	unsigned long want_copied, want_fallback;

	offload_snapshot(&now);
	d.batch = now.batch - before->batch;
	d.copied = now.copied - before->copied;
	d.fallback = now.fallback - before->fallback;

	if (!strcmp(expect, "none")) {
		if (d.batch || d.copied || d.fallback)
			fail("offloaded %lu batches (%lu copied, %lu fell back), want none",
			     d.batch, d.copied, d.fallback);
		return;
	}
	if (!d.batch || d.batch > nr_folios)
		fail("%lu batches offloaded for %lu folios", d.batch, nr_folios);
	if (!strcmp(expect, "all")) {
		want_copied = nr_folios;
	} else if (!strcmp(expect, "one")) {
		want_copied = d.batch;
	} else if (!strcmp(expect, "fallback")) {
		want_copied = 0;
	} else if (!strcmp(expect, "mixed")) {
		if (!d.copied || !d.fallback || d.copied + d.fallback != nr_folios)
			fail("%lu batches: %lu folios copied by the migrator and %lu fell back, want some of each, %lu in all",
			     d.batch, d.copied, d.fallback, nr_folios);
		return;
	} else {
		fail("unknown offload expectation '%s'", expect);
		return;
	}
	want_fallback = nr_folios - want_copied;
	if (d.copied != want_copied || d.fallback != want_fallback)
		fail("%lu batches: %lu folios copied by the migrator and %lu fell back, want %lu and %lu",
		     d.batch, d.copied, d.fallback, want_copied, want_fallback);
}

int main(int argc, char **argv)
{
	unsigned long i, nr_folios, nr_pages, pmd_folios;
	unsigned long success, thp_success, faults = 0;
	struct offload_counters before;
	struct timespec t0, t1;
	double secs;
	char stat_path[256];
	size_t folio_size, len;
	void **addrs;
	int *nodes, *status, from = 0, to = 1;
	const char *how = getenv("MOVE_HOW");
	unsigned long to_mask;
	char *buf;
	long rc;

	if (argc < 4 || argc > 6 || (argc == 6 && strcmp(argv[5], "1to0"))) {
		fprintf(stderr, "usage: %s NAME FOLIO_KB TOTAL_KB [none|all|one|fallback|mixed [1to0]]\n",
			argv[0]);
		return 2;
	}
	/* From node 0 to node 1, or the other way. */
	if (argc == 6) {
		from = 1;
		to = 0;
	}
	name = argv[1];
	folio_size = strtoul(argv[2], NULL, 0) << 10;
	len = strtoul(argv[3], NULL, 0) << 10;
	page_size = sysconf(_SC_PAGESIZE);
	if (folio_size < (size_t)page_size || len % folio_size)
		fail("bad sizes: folio %zu, total %zu", folio_size, len);
	nr_folios = len / folio_size;
	nr_pages = len / page_size;
	pmd_folios = folio_size == PMD_SIZE ? nr_folios : 0;

	set_thp_size(folio_size >> 10);
	snprintf(stat_path, sizeof(stat_path),
		 THP_DIR "/hugepages-%zukB/stats/anon_fault_alloc", folio_size >> 10);
	if (folio_size > (size_t)page_size)
		faults = read_ulong(stat_path);

	buf = map_aligned(len, folio_size);
	fill_on_node(buf, len, from);
	check_nodes(buf, len, from, "before");
	if (folio_size > (size_t)page_size) {
		faults = read_ulong(stat_path) - faults;
		if (faults != nr_folios)
			fail("%lu folios of %zu KiB were allocated, want %lu",
			     faults, folio_size >> 10, nr_folios);
	}

	addrs = calloc(nr_folios, sizeof(*addrs));
	nodes = calloc(nr_folios, sizeof(*nodes));
	status = calloc(nr_folios, sizeof(*status));
	if (!addrs || !nodes || !status)
		fail("out of memory");
	for (i = 0; i < nr_folios; i++) {
		addrs[i] = buf + i * folio_size;
		nodes[i] = to;
	}

	if (argc >= 5)
		offload_snapshot(&before);
	success = vmstat("pgmigrate_success");
	thp_success = vmstat("thp_migration_success");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	to_mask = 1UL << to;
	if (!how || !strcmp(how, "move_pages"))
		rc = move_pages(nr_folios, addrs, nodes, status, MPOL_MF_MOVE);
	else if (!strcmp(how, "move_all"))
		rc = move_pages(nr_folios, addrs, nodes, status, MPOL_MF_MOVE_ALL);
	else if (!strcmp(how, "mbind"))
		rc = syscall(SYS_mbind, buf, len, MPOL_BIND, &to_mask,
			     8 * sizeof(to_mask), MPOL_MF_MOVE | MPOL_MF_STRICT);
	else
		fail("unknown MOVE_HOW '%s'", how);
	if (rc)
		fail("%s(to node %d): %s", how ? how : "move_pages", to,
		     strerror(errno));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* mbind() reports no status: check_nodes() below checks each page. */
	for (i = 0; (!how || strcmp(how, "mbind")) && i < nr_folios; i++)
		if (status[i] != to)
			fail("folio %lu: status %d after the move", i, status[i]);
	success = vmstat("pgmigrate_success") - success;
	thp_success = vmstat("thp_migration_success") - thp_success;

	check_nodes(buf, len, to, "after");
	check_bytes(buf, 0, len, "after");
	if (success != nr_pages)
		fail("pgmigrate_success grew by %lu, want %lu", success, nr_pages);
	if (thp_success != pmd_folios)
		fail("thp_migration_success grew by %lu, want %lu", thp_success,
		     pmd_folios);
	if (argc >= 5)
		check_offload(argv[4], &before, nr_folios);

	secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("GUEST-TEST: PASS %s (%lu folios of %zu KiB, moved at %.3f GB/s)\n",
	       name, nr_folios, folio_size >> 10, len / secs / 1e9);
	return 0;
}
