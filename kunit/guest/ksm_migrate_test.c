// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_migrate_test: move KSM pages between the nodes with move_pages().
 *
 *   ksm_migrate_test NAME MIGRATOR
 *
 * MIGRATOR is the migrator that must be registered ("none", "test",
 * "dcbm", "mtcopy"). Maps 16 groups of 32 identical pages (each group its
 * own contents) and 64 pages of unique contents, small pages only, bound
 * to node 0, marks them MADV_MERGEABLE and runs ksmd until every group is
 * one KSM page (kpageflags KSM, one pfn per group, pages_shared and
 * pages_sharing up by 16 and 16 * 31). ksmd is stopped (run=0 keeps the
 * merged pages), and then:
 *   1. move_pages(MPOL_MF_MOVE) of the KSM pages is tried: each is mapped
 *      32 times, and the kernel's answer (-EACCES: "mapped by several")
 *      is printed, not judged;
 *   2. move_pages(MPOL_MF_MOVE_ALL) of one address per KSM page and of
 *      every unique page to node 1: every page (all 32 mappings of each
 *      KSM page) is on node 1 and holds its bytes, every group is still
 *      one KSM page at a new pfn, the unique pages are not KSM, the KSM
 *      counters did not move, pgmigrate_success grew by 80, and the
 *      offload counters show the migrator copying all 80 folios (KSM
 *      folios have no mapping: they take the batch copy) or, with no
 *      migrator, nothing offloaded;
 *   3. 64 new pages with the groups' contents, bound to node 0, are
 *      merged by ksmd: they must join the moved KSM pages (same pfn, on
 *      node 1; pages_shared unchanged, pages_sharing +64), which shows
 *      that the stable tree follows the moved pages;
 *   4. move back to node 0 (now 36 mappings per KSM page), same checks;
 *   5. a write to one mapping of each group breaks it out (COW): the
 *      writer sees its write, the 35 others the old bytes, still KSM;
 *   6. ksmd running at full speed while the KSM pages move back and forth
 *      ten times: every byte stays;
 *   7. run=2 unmerges everything: every byte stays, no page is KSM.
 * NEGATIVE=offload|node|merged|bytes expects one wrong thing.
 */
#include "migrate_paths.h"

#include <time.h>

#define KSM_DIR		"/sys/kernel/mm/ksm"
#define GROUPS		16
#define COPIES		32
#define UNIQUE		64
#define EXTRA		4	/* new pages per group in step 3 */
#define WAIT_SECS	90

static unsigned long nr_pages, words;
static char *buf, *buf2;
static char saved_run[32], saved_scan[32], saved_sleep[32];
static int have_migrator, moved;

static void ksm_restore(void)
{
	/* Unmerge what is left, then put the settings back. */
	try_write_file(KSM_DIR "/run", "2");
	try_write_file(KSM_DIR "/pages_to_scan", saved_scan);
	try_write_file(KSM_DIR "/sleep_millisecs", saved_sleep);
	try_write_file(KSM_DIR "/run", saved_run);
}

static long ksm(const char *file)
{
	char path[128];

	snprintf(path, sizeof(path), KSM_DIR "/%s", file);
	return sys_long(path);
}

/* Page @p of the first buffer: its group (or -1) and contents seed. */
static int group_of(unsigned long p)
{
	return p < GROUPS * COPIES ? (int)(p % GROUPS) : -1;
}

static uint64_t seed_of(unsigned long p)
{
	int g = group_of(p);

	return g >= 0 ? 100 + (uint64_t)g : 1000 + (uint64_t)p;
}

/* Every page of the first buffer holds its contents (@written: page 'p' of
 * group g written in step 5 holds generation 1). */
static void check_data(const char *when, const unsigned long *written)
{
	unsigned long p;
	uint64_t seed_off = moved && negative("bytes") ? 1 : 0;

	for (p = 0; p < nr_pages; p++) {
		int g = group_of(p);
		uint64_t gen = g >= 0 && written && written[g] == p;
		long w = bad_word(buf + p * page_size, 0, words, seed_of(p) + seed_off, gen);

		if (w >= 0)
			fail("%s: page %lu (group %d): word %ld is %#llx, want %#llx",
			     when, p, g, w,
			     (unsigned long long)((uint64_t *)(buf + p * page_size))[w],
			     (unsigned long long)gen_word(seed_of(p) + seed_off, w, gen));
	}
	if (buf2)
		for (p = 0; p < GROUPS * EXTRA; p++)
			if (bad_word(buf2 + p * page_size, 0, words, 100 + p % GROUPS, 0) >= 0)
				fail("%s: new page %lu lost its bytes", when, p);
}

/*
 * Check the merged state: every group one KSM page (the same pfn in all
 * its mappings, in both buffers), unique pages not KSM; the KSM pfn of
 * each group into @pfn. @except_page[g]: a page of group g that was broken
 * out of it (or ~0).
 */
static void check_merged(const char *when, uint64_t *pfn, const unsigned long *except)
{
	struct layout l, l2;
	unsigned long p;
	int want_ksm = !(moved && negative("merged"));

	layout_read(&l, buf, nr_pages);
	for (p = 0; p < GROUPS; p++)
		pfn[p] = 0;
	for (p = 0; p < nr_pages; p++) {
		int g = group_of(p);
		int is_ksm = !!(l.flags[p] & BIT64(KPF_KSM));

		if (!l.pfn[p])
			fail("%s: page %lu not present", when, p);
		if (g < 0 || (except && except[g] == p)) {
			if (is_ksm)
				fail("%s: page %lu (unique or written) is a KSM page", when, p);
			continue;
		}
		if (is_ksm != want_ksm)
			fail("%s: page %lu of group %d is %sa KSM page (kpageflags %#llx)",
			     when, p, g, is_ksm ? "" : "not ", (unsigned long long)l.flags[p]);
		if (!pfn[g])
			pfn[g] = l.pfn[p];
		else if (pfn[g] != l.pfn[p])
			fail("%s: group %d is not one page: pfn %#llx and %#llx", when, g,
			     (unsigned long long)pfn[g], (unsigned long long)l.pfn[p]);
	}
	layout_free(&l);
	if (!buf2)
		return;
	layout_read(&l2, buf2, GROUPS * EXTRA);
	for (p = 0; p < GROUPS * EXTRA; p++)
		if (l2.pfn[p] != pfn[p % GROUPS] || !(l2.flags[p] & BIT64(KPF_KSM)))
			fail("%s: new page %lu (group %lu) is pfn %#llx (kpageflags %#llx), not the group's KSM page %#llx",
			     when, p, p % GROUPS, (unsigned long long)l2.pfn[p],
			     (unsigned long long)l2.flags[p],
			     (unsigned long long)pfn[p % GROUPS]);
	layout_free(&l2);
}

/* Run ksmd until pages_shared and pages_sharing reach the targets. */
static void ksm_wait(long shared, long sharing, const char *when)
{
	time_t end = time(NULL) + WAIT_SECS;
	long s, sh;

	write_file(KSM_DIR "/run", "1");
	for (;;) {
		s = ksm("pages_shared");
		sh = ksm("pages_sharing");
		if (s == shared && sh == sharing)
			break;
		if (time(NULL) > end)
			fail("%s: ksmd did not merge in %d s: pages_shared %ld, pages_sharing %ld; want %ld, %ld",
			     when, WAIT_SECS, s, sh, shared, sharing);
		usleep(50 * 1000);
	}
	write_file(KSM_DIR "/run", "0");
}

/* The addresses to move: one per KSM page, and every unique page. */
static unsigned long move_addrs(void **addrs)
{
	unsigned long n = 0, p;

	for (p = 0; p < GROUPS; p++)
		addrs[n++] = buf + p * page_size;
	for (p = GROUPS * COPIES; p < nr_pages; p++)
		addrs[n++] = buf + p * page_size;
	return n;
}

static void move_and_check(int node, uint64_t *pfn, const char *when)
{
	void *addrs[GROUPS + UNIQUE];
	struct offload_counters before;
	unsigned long n = move_addrs(addrs), success, p;
	long shared = ksm("pages_shared"), sharing = ksm("pages_sharing");
	uint64_t old[GROUPS];
	int want_node = negative("node") ? !node : node;

	memcpy(old, pfn, sizeof(old));
	offload_snapshot(&before);
	success = vmstat("pgmigrate_success");
	move_list_all(addrs, n, node, MPOL_MF_MOVE_ALL, when);
	moved = 1;
	success = vmstat("pgmigrate_success") - success;
	check_nodes(buf, nr_pages * page_size, want_node, when);
	if (buf2)
		check_nodes(buf2, GROUPS * EXTRA * page_size, want_node, when);
	check_data(when, NULL);
	check_merged(when, pfn, NULL);
	for (p = 0; p < GROUPS; p++)
		if (pfn[p] == old[p])
			fail("%s: the KSM page of group %lu did not move (pfn %#llx)",
			     when, p, (unsigned long long)pfn[p]);
	if (ksm("pages_shared") != shared || ksm("pages_sharing") != sharing)
		fail("%s: pages_shared %ld -> %ld, pages_sharing %ld -> %ld: the move changed what is merged",
		     when, shared, ksm("pages_shared"), sharing, ksm("pages_sharing"));
	if (success != n)
		fail("%s: pgmigrate_success grew by %lu, want %lu", when, success, n);
	check_offload_all(have_migrator, &before, n, "KSM and anonymous", when);
}

int main(int argc, char **argv)
{
	unsigned long p, written[GROUPS];
	long shared0, sharing0;
	uint64_t pfn[GROUPS];
	void *addrs[GROUPS + UNIQUE];
	int status[GROUPS], round, eacces = 0, other = 0;
	long ret;

	if (argc != 3) {
		fprintf(stderr, "usage: %s NAME none|test|dcbm|mtcopy\n", argv[0]);
		return 2;
	}
	name = argv[1];
	page_size = sysconf(_SC_PAGESIZE);
	words = page_size / 8;
	nr_pages = GROUPS * COPIES + UNIQUE;
	if (access(KSM_DIR "/run", W_OK))
		skip("no %s (CONFIG_KSM)", KSM_DIR);
	have_migrator = check_migrator(argv[2]);

	swap_setting(KSM_DIR "/run", "0", saved_run, sizeof(saved_run));
	swap_setting(KSM_DIR "/pages_to_scan", "20000", saved_scan, sizeof(saved_scan));
	swap_setting(KSM_DIR "/sleep_millisecs", "20", saved_sleep, sizeof(saved_sleep));
	if (atexit(ksm_restore))
		fail("atexit");
	if (ksm("merge_across_nodes") != 1)
		fail("merge_across_nodes is %ld, want the default 1", ksm("merge_across_nodes"));

	buf = map_aligned(nr_pages * page_size, page_size);
	bind_to_node(0);
	for (p = 0; p < nr_pages; p++)
		fill_words(buf + p * page_size, 0, words, seed_of(p), 0);
	bind_to_node(-1);
	check_nodes(buf, nr_pages * page_size, 0, "after the fill");

	shared0 = ksm("pages_shared");
	sharing0 = ksm("pages_sharing");
	if (madvise(buf, nr_pages * page_size, MADV_MERGEABLE))
		fail("madvise(MADV_MERGEABLE): %s", strerror(errno));
	ksm_wait(shared0 + GROUPS, sharing0 + GROUPS * (COPIES - 1), "merging");
	check_merged("merged", pfn, NULL);
	check_data("merged", NULL);
	check_nodes(buf, nr_pages * page_size, 0, "merged");

	/* 1. MPOL_MF_MOVE: what does the kernel say of a page mapped 32 times? */
	for (p = 0; p < GROUPS; p++)
		addrs[p] = buf + p * page_size;
	ret = move_list(addrs, GROUPS, 1, MPOL_MF_MOVE, status);
	for (p = 0; p < GROUPS; p++) {
		if (status[p] == -EACCES)
			eacces++;
		else
			other++;
	}
	printf("%s: move_pages(MPOL_MF_MOVE) of %d KSM pages mapped %d times each: returned %ld, %d x -EACCES, %d other (status[0] %d)\n",
	       name, GROUPS, COPIES, ret, eacces, other, status[0]);
	/* Whatever it did, put everything back on node 0. */
	move_list(addrs, GROUPS, 0, MPOL_MF_MOVE_ALL, status);
	check_merged("after MPOL_MF_MOVE", pfn, NULL);

	/* 2. */
	move_and_check(1, pfn, "move 1 to node 1");

	/* 3. New identical pages join the moved KSM pages. */
	buf2 = map_aligned(GROUPS * EXTRA * page_size, page_size);
	bind_to_node(0);
	for (p = 0; p < GROUPS * EXTRA; p++)
		fill_words(buf2 + p * page_size, 0, words, 100 + p % GROUPS, 0);
	bind_to_node(-1);
	if (madvise(buf2, GROUPS * EXTRA * page_size, MADV_MERGEABLE))
		fail("madvise(MADV_MERGEABLE): %s", strerror(errno));
	ksm_wait(shared0 + GROUPS, sharing0 + GROUPS * (COPIES - 1 + EXTRA),
		 "merging new pages into the moved KSM pages");
	check_merged("new pages merged", pfn, NULL);
	check_nodes(buf2, GROUPS * EXTRA * page_size, 1, "new pages merged");

	/* 4. */
	move_and_check(0, pfn, "move 2 to node 0");

	/* 5. Break one mapping of each group out with a write. */
	for (p = 0; p < GROUPS; p++) {
		written[p] = GROUPS + p;	/* copy 1 of group p */
		fill_words(buf + written[p] * page_size, 0, words, seed_of(written[p]), 1);
	}
	check_data("after the writes", written);
	check_merged("after the writes", pfn, written);

	/* 6. ksmd at full speed while the KSM pages move back and forth. */
	write_file(KSM_DIR "/sleep_millisecs", "0");
	write_file(KSM_DIR "/run", "1");
	for (round = 0; round < 10; round++) {
		int st[GROUPS + UNIQUE];
		unsigned long n = move_addrs(addrs);

		ret = move_list(addrs, n, round % 2 ? 0 : 1, MPOL_MF_MOVE_ALL, st);
		if (ret < 0)
			fail("round %d with ksmd running: move_pages: %s", round, strerror(errno));
		for (p = 0; p < n; p++)
			if (st[p] < 0 && st[p] != -EBUSY && st[p] != -EAGAIN)
				fail("round %d with ksmd running: address %lu: status %d",
				     round, p, st[p]);
	}
	write_file(KSM_DIR "/run", "0");
	check_data("after the moves with ksmd running", written);

	/* 7. Unmerge. */
	write_file(KSM_DIR "/run", "2");
	{
		struct layout l;

		layout_read(&l, buf, nr_pages);
		layout_check_bit(&l, KPF_KSM, 0, "a KSM page", "after run=2");
		layout_free(&l);
	}
	check_data("after run=2", written);

	printf("GUEST-TEST: PASS %s (%d KSM pages of %d mappings + %d unique pages moved to node 1 and back, migrator %s)\n",
	       name, GROUPS, COPIES, UNIQUE, argv[2]);
	return 0;
}
