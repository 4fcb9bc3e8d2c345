// SPDX-License-Identifier: GPL-2.0
/*
 * swapcache_migrate_test: move anonymous folios that are in the swap cache.
 *
 *   swapcache_migrate_test NAME MIGRATOR FOLIO_KB NR_FOLIOS
 *
 * Needs an active swap device (swapcache_migrate.sh puts one on a brd
 * RAM disk). MIGRATOR is the migrator that must be registered ("none",
 * "test", "dcbm", "mtcopy"). Faults NR_FOLIOS anonymous folios of
 * FOLIO_KB (4: small pages; else that mTHP size alone, MADV_HUGEPAGE) on
 * node 0, pages them out with MADV_PAGEOUT (every page must become a swap
 * entry in pagemap; an mTHP must be swapped out whole: its size's
 * stats/swpout grows by NR_FOLIOS), then forks: the child keeps the swap
 * entries, so that when the parent reads its memory back (bound to node
 * 0) the folios stay in the swap cache (brd is a synchronous device: with
 * no other user of the entries, the fault would drop them from it). Then:
 *   - every page is present, on node 0, KPF_SWAPCACHE, holds its bytes,
 *     and node 0's SwapCached holds at least the range (the layout of the
 *     folios the swap-in made - large or small - is recorded and printed);
 *   - the parent moves the folios (move_pages(MPOL_MF_MOVE), one address
 *     per folio) to node 1 and back to node 0; after each move every page
 *     is on the target node at a new pfn, holds its bytes, is still in the
 *     swap cache (kpageflags), in folios of the same sizes as before; the
 *     SwapCached of the nodes moved with them (node meminfo);
 *     pgmigrate_success grew by the pages moved; and the offload counters
 *     show the migrator copying every folio (the swap cache opted in to
 *     the batch copy, AS_MIGRATE_BATCH_COPY) or, with no migrator,
 *     nothing offloaded;
 *   - the parent writes the first word of every folio (copy on write: the
 *     entries are shared), then the child reads its memory: it must see
 *     the old bytes everywhere, on node 0, in the very pages the parent
 *     mapped before its writes (same pfns, found through the swap cache,
 *     so the swap cache points at the moved folios), and the parent sees
 *     its writes.
 * NEGATIVE=nofork (no child: the swap-in drops the folios from the swap
 * cache), offload, node or bytes expects one wrong thing.
 */
#include "migrate_paths.h"

static size_t folio_size, len;
static unsigned long nr_folios, nr_pages, words_per_page;
static char *buf;
static int have_migrator, moved;
static char stats_dir[256];

static unsigned long mthp_stat(const char *file)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", stats_dir, file);
	return read_ulong(path);
}

/* "Node N SwapCached:" of node @node, in kB. */
static unsigned long node_swapcached(int node)
{
	char path[128], line[256], key[64];
	unsigned long kb;
	FILE *f;

	/* Fold the per-CPU counter deltas in first: exact numbers. */
	try_write_file("/proc/sys/vm/stat_refresh", "1");
	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/meminfo", node);
	snprintf(key, sizeof(key), "Node %d SwapCached: %%lu kB", node);
	f = fopen(path, "r");
	if (!f)
		fail("open %s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, key, &kb) == 1) {
			fclose(f);
			return kb;
		}
	fclose(f);
	fail("no SwapCached in %s", path);
}

static void check_data(const char *when)
{
	long w = bad_word(buf, 0, len / 8, moved && negative("bytes") ? 7 : 0, 0);

	if (w >= 0)
		fail("%s: byte %ld changed", when, w * 8);
}

/* The heads (first pages) of the folios of the range, from @l. */
static unsigned long folio_heads(const struct layout *l, void **addrs,
				 unsigned long *sizes)
{
	unsigned long i, n = 0;

	for (i = 0; i < l->nr_pages; i++) {
		if (page_is_tail(l, i) && n && i > 0 && l->pfn[i] == l->pfn[i - 1] + 1) {
			sizes[n - 1]++;
			continue;
		}
		addrs[n] = buf + i * page_size;
		sizes[n++] = 1;
	}
	return n;
}

int main(int argc, char **argv)
{
	unsigned long i, n, n2, *sizes, *sizes2, large = 0, swpout = 0, swpin = 0;
	unsigned long swpin_fallback = 0;
	unsigned long success, cached0, cached1, range_kb;
	int to_child[2], to_parent[2], status, node, step, nofork;
	struct offload_counters before;
	uint64_t *child_pfn;
	struct layout l, l2;
	void **addrs, **addrs2;
	char c = 0, when[64];
	pid_t pid = -1;

	if (argc != 5) {
		fprintf(stderr, "usage: %s NAME none|test|dcbm|mtcopy FOLIO_KB NR_FOLIOS\n",
			argv[0]);
		return 2;
	}
	name = argv[1];
	page_size = sysconf(_SC_PAGESIZE);
	folio_size = strtoul(argv[3], NULL, 0) << 10;
	nr_folios = strtoul(argv[4], NULL, 0);
	if (folio_size < (size_t)page_size || folio_size >= PMD_SIZE || !nr_folios)
		fail("bad sizes");
	len = folio_size * nr_folios;
	nr_pages = len / page_size;
	words_per_page = page_size / 8;
	range_kb = len >> 10;
	nofork = negative("nofork");
	have_migrator = check_migrator(argv[2]);
	if (kb_value("/proc/meminfo", "SwapFree") < 2 * range_kb)
		fail("no swap space: SwapFree %lu kB (swapcache_migrate.sh sets up swap on brd)",
		     kb_value("/proc/meminfo", "SwapFree"));

	if (folio_size > (size_t)page_size) {
		thp_only_size(folio_size >> 10, "madvise");
		snprintf(stats_dir, sizeof(stats_dir), THP_DIR "/hugepages-%zukB/stats",
			 folio_size >> 10);
		swpout = mthp_stat("swpout");
		swpin = mthp_stat("swpin");
		swpin_fallback = mthp_stat("swpin_fallback");
	}
	buf = map_aligned(len, folio_size);
	bind_to_node(0);
	fill_words(buf, 0, len / 8, 0, 0);
	bind_to_node(-1);
	if (folio_size > (size_t)page_size)
		check_folios(buf, nr_pages, folio_size / page_size, "after the fill");
	check_nodes(buf, len, 0, "after the fill");

	/* Page everything out. */
	for (step = 0; ; step++) {
		if (madvise(buf, len, MADV_PAGEOUT))
			fail("madvise(MADV_PAGEOUT): %s", strerror(errno));
		layout_read(&l, buf, nr_pages);
		for (i = 0; i < nr_pages && (l.pme[i] & PM_SWAP); i++)
			;
		if (i < nr_pages && step == 4)
			fail("page %lu is no swap entry after 5 x MADV_PAGEOUT (pagemap %#llx)",
			     i, (unsigned long long)l.pme[i]);
		layout_free(&l);
		if (i == nr_pages)
			break;
	}
	if (folio_size > (size_t)page_size && mthp_stat("swpout") - swpout != nr_folios)
		fail("stats/swpout grew by %lu, want %lu: the mTHPs were not swapped out whole (swpout_fallback %lu)",
		     mthp_stat("swpout") - swpout, nr_folios, mthp_stat("swpout_fallback"));

	child_pfn = mmap(NULL, nr_pages * sizeof(uint64_t), PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (child_pfn == MAP_FAILED || pipe(to_child) || pipe(to_parent))
		fail("mmap/pipe: %s", strerror(errno));
	if (!nofork) {
		pid_t parent = getpid();

		fflush(stdout);
		pid = fork();
		if (pid == 0) {
			die_with_parent(parent);
			close(to_child[1]);
			close(to_parent[0]);
		}
		if (pid < 0)
			fail("fork: %s", strerror(errno));
		if (pid > 0) {
			close(to_child[0]);
			close(to_parent[1]);
		}
	}
	if (pid == 0) {
		/* Child: keep the swap entries until told, then read. */
		name = "swapcache_migrate_test child";
		if (read(to_child[0], &c, 1) != 1)
			_exit(2);
		bind_to_node(1);	/* a swap-in would come from node 1 */
		check_data("child, after the moves");
		bind_to_node(-1);
		read_pfns(buf, nr_pages, child_pfn);
		if (write(to_parent[1], &c, 1) != 1)
			_exit(2);
		_exit(0);
	}

	/* Read everything back on node 0: into the swap cache. */
	cached0 = node_swapcached(0);
	bind_to_node(0);
	check_data("after the swap-in");
	bind_to_node(-1);
	layout_read(&l, buf, nr_pages);
	layout_check_bit(&l, KPF_SWAPCACHE, 1, "in the swap cache", "after the swap-in");
	check_nodes(buf, len, 0, "after the swap-in");
	if (node_swapcached(0) < range_kb)
		fail("after the swap-in: node 0 SwapCached %lu kB (was %lu), want at least %lu",
		     node_swapcached(0), cached0, range_kb);
	addrs = calloc(nr_pages, sizeof(*addrs));
	addrs2 = calloc(nr_pages, sizeof(*addrs2));
	sizes = calloc(nr_pages, sizeof(*sizes));
	sizes2 = calloc(nr_pages, sizeof(*sizes2));
	if (!addrs || !addrs2 || !sizes || !sizes2)
		fail("out of memory");
	n = folio_heads(&l, addrs, sizes);
	for (i = 0; i < n; i++)
		large += sizes[i] > 1;
	printf("%s: swapped in as %lu folios, %lu of them large (%lu pages in the first); mTHP swpin +%lu, SwapCached %lu kB\n",
	       name, n, large, sizes[0], folio_size > (size_t)page_size ?
	       mthp_stat("swpin") - swpin : 0, kb_value("/proc/meminfo", "SwapCached"));
	/*
	 * The large-folio variant must have large folios in the swap cache
	 * to test them: swap-in gives small ones when it cannot (zswap ever
	 * enabled, a device that is not SWP_SYNCHRONOUS_IO, the size off).
	 */
	if (folio_size > (size_t)page_size && !large)
		skip("swapped in as %lu small folios, none large (mTHP swpin_fallback +%lu): no large swap-cache folio to migrate",
		     n, mthp_stat("swpin_fallback") - swpin_fallback);

	for (step = 0; step < 2; step++) {
		node = step == 0 ? 1 : 0;
		snprintf(when, sizeof(when), "move %d to node %d", step + 1, node);
		cached0 = node_swapcached(0);
		cached1 = node_swapcached(1);
		offload_snapshot(&before);
		success = vmstat("pgmigrate_success");
		move_list_all(addrs, n, node, MPOL_MF_MOVE, when);
		moved = 1;
		success = vmstat("pgmigrate_success") - success;
		check_nodes(buf, len, negative("node") ? !node : node, when);
		check_data(when);
		layout_read(&l2, buf, nr_pages);
		layout_check_bit(&l2, KPF_SWAPCACHE, 1, "in the swap cache", when);
		n2 = folio_heads(&l2, addrs2, sizes2);
		if (n2 != n || memcmp(sizes, sizes2, n * sizeof(*sizes)))
			fail("%s: %lu folios, were %lu (or their sizes changed)", when, n2, n);
		for (i = 0; i < nr_pages; i++)
			if (l2.pfn[i] == l.pfn[i])
				fail("%s: page %lu did not move (pfn %#llx)", when, i,
				     (unsigned long long)l.pfn[i]);
		layout_free(&l);
		l = l2;
		for (i = 0; i < n; i++)
			addrs[i] = addrs2[i];
		if (success != nr_pages)
			fail("%s: pgmigrate_success grew by %lu, want %lu", when, success,
			     nr_pages);
		if (node == 1 ? node_swapcached(1) - cached1 != range_kb ||
				cached0 - node_swapcached(0) != range_kb :
				node_swapcached(0) - cached0 != range_kb ||
				cached1 - node_swapcached(1) != range_kb)
			fail("%s: SwapCached of node 0 %lu -> %lu kB, node 1 %lu -> %lu kB: %lu kB did not move with the folios",
			     when, cached0, node_swapcached(0), cached1,
			     node_swapcached(1), range_kb);
		check_offload_all(have_migrator, &before, n, "swap-cache", when);
	}

	/* The parent writes, the child reads through the swap cache. */
	for (i = 0; i < n; i++)
		*(volatile uint64_t *)addrs[i] ^= 1;
	if (!nofork) {
		if (write(to_child[1], &c, 1) != 1 || read(to_parent[0], &c, 1) != 1)
			fail("the child did not answer");
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			fail("the child failed (status %#x)", status);
		for (i = 0; i < nr_pages; i++)
			if (child_pfn[i] != l.pfn[i])
				fail("the child maps page %lu at pfn %#llx, the parent had it at %#llx: not the moved swap-cache folio",
				     i, (unsigned long long)child_pfn[i],
				     (unsigned long long)l.pfn[i]);
	}
	for (i = 0; i < n; i++)
		*(volatile uint64_t *)addrs[i] ^= 1;
	check_data("the parent, after its writes");

	printf("GUEST-TEST: PASS %s (%lu swap-cache folios, %lu large, of %lu pages moved to node 1 and back, migrator %s)\n",
	       name, n, large, nr_pages, argv[2]);
	return 0;
}
