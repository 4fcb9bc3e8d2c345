// SPDX-License-Identifier: GPL-2.0
/*
 * memory_offline_test: memory offlining (MR_MEMORY_HOTPLUG) moves the
 * test's data out of the ZONE_MOVABLE memory blocks it offlines, intact,
 * through the copy offload when a migrator is registered.
 *
 *   memory_offline_test NAME EXPECT [COUNTER_FILE [KEY]]
 *
 * Needs a ZONE_MOVABLE (movablecore= on the kernel command line), else
 * skips. The blocks of that zone are sorted first: those holding a page
 * that offlining cannot move (boot-time memblock allocations - the memmap
 * lands at the top of the node -, holes) cannot be offlined, and the page
 * allocator hands out the top of the zone first. So the free pages of
 * those blocks are taken by a "blocker" mapping of small pages (bound to
 * the zone's node, faulted with MADV_POPULATE_WRITE, and those of its pages
 * that landed anywhere else released again), and the data goes where it
 * can be tested.
 *
 * The data, bound to the zone's node: 8 MiB each of anonymous small
 * pages, 64K mTHPs, 2M THPs and shmem (see migpath.h). Every block of
 * ZONE_MOVABLE holding some of it is offlined (echo offline >
 * /sys/devices/system/memory/memoryN/state; at most 120 s each); data that
 * landed outside ZONE_MOVABLE or in a block that cannot be offlined is
 * left out of the count (skips if some kind has no folio in a block that
 * can be offlined, or if no 64K or 2M folio could be had). Then:
 *   - every page of the data is in memory still online (its pfn, from
 *     pagemap, in none of the offlined blocks): the data left them;
 *   - every byte holds its pattern;
 *   - the counters (migpath.h): with "offload", the migrator copied at
 *     least the folios of the data that were in the offlined blocks;
 *     with "none", nothing was offloaded.
 * The blocks are put back online (online_movable) at exit, whatever
 * happened.
 */
#include "migpath.h"

#define REGION_BYTES	(8UL << 20)
#define OFFLINE_TIMEOUT	120

/* The blocks this program offlined, to online again at exit. */
static unsigned long offlined[MAX_BLOCKS];
static int nr_offlined;

static int block_set_state(unsigned long blk, const char *state)
{
	char path[160];

	snprintf(path, sizeof(path), MEM_DIR "/memory%lu/state", blk);
	return try_write_file(path, state);
}

static void online_all(void)
{
	char state[32];

	while (nr_offlined > 0) {
		unsigned long blk = offlined[--nr_offlined];

		block_attr(blk, "state", state, sizeof(state));
		if (strcmp(state, "offline"))
			continue;
		if (block_set_state(blk, "online_movable") &&
		    block_set_state(blk, "online"))
			printf("memory_offline_test: could not online memory%lu again: %s\n",
			       blk, strerror(errno));
	}
}

/* regions_check_after(): a page must not be in a block this program offlined. */
static int in_offlined_block(const struct region *r, unsigned long i,
			     uint64_t pfn, void *arg, char *why, size_t len)
{
	unsigned long blk = pfn_block(pfn);
	int j;

	(void)r, (void)i, (void)arg;
	for (j = 0; j < nr_offlined; j++) {
		if (offlined[j] == blk) {
			snprintf(why, len, "in memory%lu, which is offline", blk);
			return 1;
		}
	}
	return 0;
}

/*
 * Take the free pages of the blocks of @mz that cannot be offlined
 * (@bad[block - @first]), so that the data goes to the others: fault in
 * nearly as many small pages as the zone has free, bound to its node, and
 * give back every one that is not in such a block. The mapping stays
 * until exit.
 */
static unsigned long take_bad_blocks(const struct zone_info *mz,
				     const unsigned char *bad, unsigned long first,
				     unsigned long nr_blocks)
{
	long keep_free = mz->high + (32UL << 20) / page_size;
	long nr = (long)mz->free - keep_free;
	unsigned long i, run = 0, kept = 0, blk;
	uint64_t *pfn;
	char *buf;

	if (nr <= 0)
		return 0;
	buf = mmap(NULL, nr * page_size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		fail("mmap the blocker: %s", strerror(errno));
	if (madvise(buf, nr * page_size, MADV_NOHUGEPAGE))
		fail("madvise(MADV_NOHUGEPAGE): %s", strerror(errno));
	bind_to_node(mz->node);
	populate(buf, nr * page_size);
	bind_to_node(-1);
	pfn = page_pfns(buf, nr * page_size);
	for (i = 0; i < (unsigned long)nr; i++) {
		blk = pfn_block(pfn[i]);
		if (pfn[i] && blk >= first && blk < first + nr_blocks &&
		    bad[blk - first]) {
			release(buf + run * page_size, (i - run) * page_size);
			run = i + 1;
			kept++;
		}
	}
	release(buf + run * page_size, (nr - run) * page_size);
	free(pfn);
	return kept;
}

int main(int argc, char **argv)
{
	unsigned long first, nr_blocks, i, blk, kept = 0, nr_bad = 0, nr_good = 0;
	unsigned long folios[NR_KINDS] = { 0 }, pages = 0, total = 0, outside = 0;
	unsigned char *bad, *target;
	struct counters before, after;
	struct zone_info mz;
	char what[512], blocks[256] = "";
	double t0, t1;
	size_t off;
	int k;

	parse_args(argc, argv, "memory_offline_test NAME none|offload [COUNTER_FILE [KEY]]");
	movable_zone(&mz);
	if (atexit(online_all))
		fail("atexit failed");
	catch_alarm();

	/* The blocks of the zone, and which of them cannot be offlined. */
	first = pfn_block(mz.start_pfn);
	nr_blocks = pfn_block(mz.start_pfn + mz.spanned - 1) - first + 1;
	bad = calloc(nr_blocks, 1);
	target = calloc(nr_blocks, 1);
	if (!bad || !target)
		fail("out of memory");
	for (i = 0; i < nr_blocks; i++) {
		if (!block_movable(first + i))
			continue;
		bad[i] = block_has_unmovable(first + i);
		nr_bad += bad[i];
		nr_good += !bad[i];
	}
	if (!nr_good)
		skip("none of the %lu blocks of ZONE_MOVABLE on node %d can be offlined",
		     nr_blocks, mz.node);
	if (nr_bad)
		kept = take_bad_blocks(&mz, bad, first, nr_blocks);

	for (k = 0; k < NR_KINDS; k++)
		region_map(&regions[k], k, REGION_BYTES, mz.node);
	for (k = 0; k < NR_KINDS; k++)
		region_snapshot(&regions[k], "before offlining");
	regions_check_sizes();

	/* The blocks to offline: those of the zone that hold data and can go. */
	for (k = 0; k < NR_KINDS; k++) {
		struct region *r = &regions[k];

		for (i = 0; i < r->nr_pages; i++) {
			blk = pfn_block(r->pfn[i]);
			if (blk < first || blk >= first + nr_blocks ||
			    !block_movable(blk) || bad[blk - first]) {
				outside++;
				continue;
			}
			target[blk - first] = 1;
			pages++;
			if (region_folio_start(r, i))
				folios[k]++;
		}
		if (!folios[k])
			skip("no %s data landed in a block of ZONE_MOVABLE that can be offlined (%lu of %lu pages elsewhere)",
			     kind_name[k], outside, r->nr_pages);
		total += folios[k];
	}

	counters_read(&before);
	t0 = now_s();
	for (i = 0; i < nr_blocks; i++) {
		if (!target[i])
			continue;
		blk = first + i;
		offlined[nr_offlined++] = blk;
		alarm(OFFLINE_TIMEOUT);
		if (block_set_state(blk, "offline"))
			fail("offlining memory%lu: %s%s", blk, strerror(errno),
			     errno == EINTR ? " (timed out)" : "");
		alarm(0);
		off = strlen(blocks);
		snprintf(blocks + off, sizeof(blocks) - off, "%s%lu",
			 off ? "," : "", blk);
	}
	t1 = now_s();
	counters_read(&after);

	regions_check_after("after offlining", in_offlined_block, NULL);
	counters_check(&before, &after, total, pages, "offlining", what, sizeof(what));

	online_all();
	printf("GUEST-TEST: PASS %s (node %d: memory%s offlined in %.1f s, %lu folios of the data in them: %lu 4k, %lu 64k, %lu 2m, %lu shmem, %lu pages elsewhere; %lu blocks that cannot go, %lu of their pages held; %s)\n",
	       name, mz.node, blocks, t1 - t0, total, folios[K_4K], folios[K_64K],
	       folios[K_2M], folios[K_SHMEM], outside, nr_bad, kept, what);
	return 0;
}
