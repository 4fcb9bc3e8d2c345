// SPDX-License-Identifier: GPL-2.0
/*
 * contig_range_test: a 1 GiB hugetlb page allocated at runtime, over memory
 * full of the test's data, takes its range with alloc_contig_range(), which
 * migrates the data out of it (MR_CONTIG_RANGE): every byte arrives, and
 * the copy offload takes part exactly when the administrator enabled the
 * contig_range reason (off by default).
 *
 *   contig_range_test NAME EXPECT [COUNTER_FILE [KEY]]
 *
 * Skips if the kernel has no 1 GiB huge pages (x86 needs the CPU's pdpe1gb:
 * QEMU's default CPU has none, -cpu qemu64,pdpe1gb=on gives it).
 * vm.movable_gigantic_pages is set to 1 until exit, so that ZONE_MOVABLE
 * may give one too (any zone can, where a whole 1 GiB range holds only
 * movable or free pages). Each node in
 * turn, empty of the test's data, is asked for one (writing 1 to its
 * hugepages-1048576kB/nr_hugepages), up to 5 rounds a second apart (the
 * allocation can fail on a page that is briefly busy): the first that
 * gives one is used, and the page given back at once. If none can (every
 * 1 GiB-aligned range holds a page nobody can move: boot-time memblock
 * allocations such as the memmap, firmware's e820 holes, kernel
 * allocations), skips.
 *
 * Then that node is filled with the test's data up to 256 MiB short of its
 * free memory: a quarter each of anonymous small pages, 64K mTHPs, 2M THPs
 * and shmem (see migpath.h), written 16 MiB of each kind in turn so that
 * every kind is spread over the node, and the 1 GiB page asked for again
 * (up to 5 tries, a second apart). Its range is found in /proc/kpageflags
 * (the one hugetlb head on a 1 GiB boundary). Then:
 *   - the page was allocated: failing over movable data, where it could be
 *     allocated over free memory, is a failure;
 *   - each kind had a folio of its size in the range (else that kind was
 *     not tested: a failure of the test), and none of the data is there
 *     any more (pagemap);
 *   - every byte holds its pattern;
 *   - the counters (migpath.h), for the folios of the data that were in
 *     the range: "offload", the migrator copied at least as many; "none",
 *     nothing was offloaded.
 * The page is given back at exit.
 */
#include "migpath.h"

#define HP_1G		"hugepages-1048576kB"
#define HP_1G_DIR	"/sys/kernel/mm/hugepages/" HP_1G
#define MARGIN		(256UL << 20)
#define MAX_NODES	8
#define TRIES		5
#define CHUNK		(16UL << 20)
#define MOVABLE_GIGANTIC "/proc/sys/vm/movable_gigantic_pages"

/* The order region_fill() writes the kinds in, last first. */
static const enum kind fill_order[NR_KINDS] = { K_4K, K_SHMEM, K_64K, K_2M };

static int hp_node = -1;
static char movable_gigantic[16];

static void node_hp_path(int node, char *path, size_t len)
{
	snprintf(path, len, NODE_DIR "/node%d/hugepages/" HP_1G "/nr_hugepages",
		 node);
}

/* Ask @node's pool for @nr 1 GiB pages; returns how many it holds. */
static unsigned long node_hp_set(int node, unsigned long nr)
{
	char path[160], val[32];

	node_hp_path(node, path, sizeof(path));
	snprintf(val, sizeof(val), "%lu", nr);
	/* A pool that cannot grow keeps its size: not an error of the write. */
	if (try_write_file(path, val) && errno != ENOMEM)
		fail("write %s to %s: %s", val, path, strerror(errno));
	return read_ulong(path);
}

/*
 * Ask @node for one 1 GiB page, up to TRIES times a second apart (the
 * allocation can fail on a page briefly busy, on its way to a free list,
 * say); returns the tries it took, 0 if it never got one.
 */
static unsigned long node_hp_try(int node)
{
	unsigned long i;

	for (i = 1; i <= TRIES; i++) {
		if (node_hp_set(node, 1) == 1)
			return i;
		if (i < TRIES)
			sleep(1);
	}
	return 0;
}

static void give_back(void)
{
	if (hp_node >= 0)
		node_hp_set(hp_node, 0);
	hp_node = -1;
	if (movable_gigantic[0])
		try_write_file(MOVABLE_GIGANTIC, movable_gigantic);
}

/*
 * Say, into @out, what each 1 GiB-aligned range of @node's zones holds that
 * is neither free nor on the LRU (reserved pages, holes, kernel pages), for
 * a skip message.
 */
static void describe_ranges(int node, char *out, size_t len)
{
	const uint64_t ok = (1ULL << KPF_BUDDY) | (1ULL << KPF_LRU) |
			    (1ULL << KPF_COMPOUND_TAIL) | (1ULL << KPF_HUGE);
	unsigned long nr = (1UL << 30) / page_size, pfn, i, odd, resv;
	struct zone_info z[MAX_ZONES];
	uint64_t *flags = malloc(nr * sizeof(*flags)), first;
	int n = read_zones(z), j;
	size_t off;

	if (!flags)
		fail("out of memory");
	out[0] = '\0';
	for (j = 0; j < n; j++) {
		if (z[j].node != node || !z[j].present)
			continue;
		for (pfn = (z[j].start_pfn + nr - 1) / nr * nr;
		     pfn + nr <= z[j].start_pfn + z[j].spanned; pfn += nr) {
			kpf_read(pfn, nr, flags);
			odd = resv = 0;
			first = 0;
			for (i = 0; i < nr; i++) {
				if (flags[i] & ((1ULL << KPF_RESERVED) | (1ULL << KPF_NOPAGE))) {
					resv++;
				} else if (flags[i] && !(flags[i] & ok)) {
					if (!odd++)
						first = pfn + i;
				}
			}
			off = strlen(out);
			snprintf(out + off, len - off,
				 "%s%s pfn %#lx: %lu reserved or holes, %lu kernel pages (first %#llx, kpageflags %#llx)",
				 off ? "; " : "", z[j].zone, pfn, resv, odd,
				 (unsigned long long)first,
				 (unsigned long long)(odd ? kpf(first) : 0));
		}
	}
	free(flags);
}

/* The first pfn of the (only) 1 GiB hugetlb page, below @end. */
static uint64_t find_1g_page(unsigned long end)
{
	unsigned long nr = (1UL << 30) / page_size;
	uint64_t pfn, flags;

	for (pfn = 0; pfn < end; pfn += nr) {
		flags = kpf(pfn);
		if ((flags & (1ULL << KPF_HUGE)) &&
		    (flags & (1ULL << KPF_COMPOUND_HEAD)))
			return pfn;
	}
	fail("no 1 GiB hugetlb page found in /proc/kpageflags");
}

/* regions_check_after(): a page must not be in the 1 GiB page at *@arg. */
static int in_1g_page(const struct region *r, unsigned long i, uint64_t pfn,
		      void *arg, char *why, size_t len)
{
	uint64_t start = *(uint64_t *)arg;

	(void)r, (void)i;
	if (pfn < start || pfn >= start + (1UL << 30) / page_size)
		return 0;
	snprintf(why, len, "in the 1 GiB page at pfn %#llx", (unsigned long long)start);
	return 1;
}

int main(int argc, char **argv)
{
	unsigned long nr, end, i, attempts, fill, each, pos;
	unsigned long folios[NR_KINDS] = { 0 }, sized[NR_KINDS] = { 0 };
	unsigned long pages = 0, total = 0;
	struct counters before, after;
	char path[160], what[512], tried[256] = "";
	uint64_t start, dry;
	double t0, t1;
	int node, k, round;
	size_t off;

	parse_args(argc, argv, "contig_range_test NAME none|offload [COUNTER_FILE [KEY]]");
	nr = (1UL << 30) / page_size;
	if (access(HP_1G_DIR, F_OK))
		skip("no 1 GiB huge pages (%s): on x86 the CPU needs pdpe1gb (QEMU: -cpu qemu64,pdpe1gb=on)",
		     HP_1G_DIR);
	/* Left by a test that died: give them back, or fail. */
	if (read_ulong(HP_1G_DIR "/nr_hugepages")) {
		printf("%s: %s/nr_hugepages is not 0 before the test: setting it to 0\n",
		       name, HP_1G_DIR);
		write_file(HP_1G_DIR "/nr_hugepages", "0");
		if (read_ulong(HP_1G_DIR "/nr_hugepages"))
			fail("%s/nr_hugepages stays above 0", HP_1G_DIR);
	}
	if (atexit(give_back))
		fail("atexit failed");
	end = max_pfn();
	/* 1 GiB pages may come from ZONE_MOVABLE too (put back at exit). */
	if (!read_word(MOVABLE_GIGANTIC, movable_gigantic, sizeof(movable_gigantic)))
		write_file(MOVABLE_GIGANTIC, "1");

	/*
	 * A node that can give a 1 GiB page when nothing of the test is
	 * there: every node in turn, up to TRIES rounds a second apart.
	 */
	for (round = 1; round <= TRIES && hp_node < 0; round++) {
		if (round > 1)
			sleep(1);
		for (node = 0; node < MAX_NODES; node++) {
			node_hp_path(node, path, sizeof(path));
			if (access(path, F_OK))
				continue;
			if (round == 1) {
				off = strlen(tried);
				snprintf(tried + off, sizeof(tried) - off, " %d", node);
			}
			hp_node = node;
			if (node_hp_set(node, 1) == 1)
				break;
			hp_node = -1;
		}
	}
	if (hp_node < 0) {
		char ranges[1024] = "", one[512];

		for (node = 0; node < MAX_NODES; node++) {
			node_hp_path(node, path, sizeof(path));
			if (access(path, F_OK))
				continue;
			describe_ranges(node, one, sizeof(one));
			off = strlen(ranges);
			snprintf(ranges + off, sizeof(ranges) - off, "%snode %d: %s",
				 off ? "; " : "", node, one[0] ? one : "no whole 1 GiB range in a zone");
		}
		skip("no node could allocate a 1 GiB page even without the test's data (tried node%s, %d times each): every 1 GiB-aligned range holds a page that cannot move (memblock allocations, e820 holes, kernel memory): %s",
		     tried, TRIES, ranges);
	}
	dry = find_1g_page(end);
	if (node_hp_set(hp_node, 0))
		fail("could not give the 1 GiB page back");

	/* Fill the node with the data. */
	fill = node_free_bytes(hp_node);
	if (fill < MARGIN + (1UL << 30))
		skip("node %d has only %lu MiB free, want at least %lu", hp_node,
		     fill >> 20, (MARGIN + (1UL << 30)) >> 20);
	each = ((fill - MARGIN) / NR_KINDS) & ~(PMD_SIZE - 1);
	/*
	 * In rounds of CHUNK of each kind, 2M first: the allocator fills one
	 * zone of the node before the next, so a kind written at once would
	 * sit in one place and the range could hold none of it.
	 */
	for (k = 0; k < NR_KINDS; k++)
		region_alloc(&regions[k], k, each);
	for (pos = 0; pos < each; pos += CHUNK)
		for (k = NR_KINDS - 1; k >= 0; k--)
			region_fill(&regions[fill_order[k]], pos,
				    each - pos < CHUNK ? each - pos : CHUNK, hp_node);
	for (k = 0; k < NR_KINDS; k++)
		region_filled(&regions[k]);
	for (k = 0; k < NR_KINDS; k++)
		region_snapshot(&regions[k], "before the allocation");
	regions_check_sizes();

	counters_read(&before);
	t0 = now_s();
	attempts = node_hp_try(hp_node);
	if (!attempts)
		fail("node %d could not allocate a 1 GiB page over the test's %lu MiB of movable data in %d tries (it could without them, at pfn %#llx)",
		     hp_node, NR_KINDS * each >> 20, TRIES, (unsigned long long)dry);
	t1 = now_s();
	counters_read(&after);
	start = find_1g_page(end);

	for (k = 0; k < NR_KINDS; k++) {
		struct region *r = &regions[k];

		for (i = 0; i < r->nr_pages; i++) {
			if (r->pfn[i] < start || r->pfn[i] >= start + nr)
				continue;
			pages++;
			if (!region_folio_start(r, i))
				continue;
			folios[k]++;
			if (region_folio_pages(r, i) * page_size ==
			    kind_folio_kb[k] * 1024)
				sized[k]++;
		}
		total += folios[k];
	}
	regions_check_after("after the allocation", in_1g_page, &start);
	for (k = 0; k < NR_KINDS; k++)
		if (!sized[k])
			fail("no %zuK folio of the %s data was in the range of the 1 GiB page (pfn %#llx; %lu folios of other sizes): that kind was not tested",
			     kind_folio_kb[k], kind_name[k], (unsigned long long)start,
			     folios[k]);
	counters_check(&before, &after, total, pages,
		       "allocating the 1 GiB page", what, sizeof(what));

	node = hp_node;
	give_back();
	printf("GUEST-TEST: PASS %s (node %d, 1 GiB page at pfn %#llx (%#llx when the node was empty, in round %d) in %.1f s, %lu tries, over %lu MiB of data; %lu folios of it in the range: %lu 4k, %lu 64k, %lu 2m, %lu shmem; %s)\n",
	       name, node, (unsigned long long)start, (unsigned long long)dry,
	       round - 1, t1 - t0, attempts, NR_KINDS * each >> 20, total, folios[K_4K],
	       folios[K_64K], folios[K_2M], folios[K_SHMEM], what);
	return 0;
}
