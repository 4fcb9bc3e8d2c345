// SPDX-License-Identifier: GPL-2.0
/*
 * longterm_pin_test: pinning memory of ZONE_MOVABLE with FOLL_LONGTERM
 * migrates it out of that zone first (MR_LONGTERM_PIN); the pinned pages
 * hold the data, are the pages the process maps, and were copied through
 * the copy offload when a migrator is registered.
 *
 *   longterm_pin_test NAME EXPECT [COUNTER_FILE [KEY]]
 *
 * Needs a ZONE_MOVABLE (movablecore=), else skips, and CONFIG_GUP_TEST's
 * /sys/kernel/debug/gup_test, whose PIN_LONGTERM_TEST_START ioctl pins a
 * range with pin_user_pages(FOLL_LONGTERM | FOLL_WRITE) and keeps it
 * pinned until PIN_LONGTERM_TEST_STOP, and whose PIN_LONGTERM_TEST_READ
 * copies out what the pinned pages hold (as tools/testing/selftests/mm/
 * gup_longterm.c uses them).
 *
 * The data, bound to the zone's node so that it lands in ZONE_MOVABLE (the
 * allocator's first choice): 8 MiB each of anonymous small pages, 64K
 * mTHPs, 2M THPs and shmem (see migpath.h); skips if some kind has no page
 * in ZONE_MOVABLE. Each kind in turn is pinned whole, then:
 *   - no page of it is in a ZONE_MOVABLE block any more (pagemap, and the
 *     block's valid_zones);
 *   - the pinned pages hold the data (PIN_LONGTERM_TEST_READ), and a word
 *     written to each page through the mapping is what the pinned page
 *     holds next (the pin is on the mapped page, not on a stale copy);
 *   - every byte through the mapping, once unpinned;
 *   - the counters (migpath.h), for the folios of that kind that were in
 *     ZONE_MOVABLE: "offload", the migrator copied at least as many;
 *     "none", nothing was offloaded.
 */
#include "migpath.h"

#define REGION_BYTES	(8UL << 20)
#define GUP_TEST_FILE	"/sys/kernel/debug/gup_test"

/* mm/gup_test.h */
struct pin_longterm_test {
	uint64_t addr;
	uint64_t size;
	uint32_t flags;
};

#define PIN_LONGTERM_TEST_START		_IOW('g', 7, struct pin_longterm_test)
#define PIN_LONGTERM_TEST_STOP		_IO('g', 8)
#define PIN_LONGTERM_TEST_READ		_IOW('g', 9, uint64_t)
#define PIN_LONGTERM_TEST_FLAG_USE_WRITE	1

/* Read what the pinned pages hold into @out (as many bytes as pinned). */
static void pinned_read(int fd, void *out)
{
	uint64_t addr = (uintptr_t)out;

	if (ioctl(fd, PIN_LONGTERM_TEST_READ, &addr))
		fail("PIN_LONGTERM_TEST_READ: %s", strerror(errno));
}

/* Pin @r, check where it went and what the pin sees, unpin. */
static void pin_region(int fd, struct region *r, unsigned long folios,
		       unsigned long pages, char *out, size_t len)
{
	struct pin_longterm_test args = {
		.addr = (uintptr_t)r->buf,
		.size = r->len,
		.flags = PIN_LONGTERM_TEST_FLAG_USE_WRITE,
	};
	unsigned long i, words = page_size / sizeof(uint64_t);
	uint64_t *data = (uint64_t *)r->buf, *copy, *pfn;
	struct counters before, after;
	char what[256];
	double t0, t1;

	copy = malloc(r->len);
	if (!copy)
		fail("out of memory");
	counters_read(&before);
	t0 = now_s();
	if (ioctl(fd, PIN_LONGTERM_TEST_START, &args))
		fail("%s: PIN_LONGTERM_TEST_START: %s", kind_name[r->kind],
		     strerror(errno));
	t1 = now_s();
	counters_read(&after);

	pfn = page_pfns(r->buf, r->len);
	for (i = 0; i < r->nr_pages; i++) {
		if (!pfn[i])
			fail("%s: page %lu is not present while pinned",
			     kind_name[r->kind], i);
		if (pfn_movable(pfn[i]))
			fail("%s: page %lu is pinned long-term at pfn %#llx, in ZONE_MOVABLE (memory%lu; it was at %#llx)",
			     kind_name[r->kind], i, (unsigned long long)pfn[i],
			     pfn_block(pfn[i]), (unsigned long long)r->pfn[i]);
	}
	free(pfn);

	/* The pinned pages hold the data. */
	pinned_read(fd, copy);
	for (i = 0; i < r->len / sizeof(*copy); i++)
		if (copy[i] != region_word(r, i))
			fail("%s: the pinned page %zu holds %#llx at byte %zu, want %#llx",
			     kind_name[r->kind], i * sizeof(*copy) / page_size,
			     (unsigned long long)copy[i], i * sizeof(*copy),
			     (unsigned long long)region_word(r, i));
	/* ... and are the pages mapped: a write through the mapping shows. */
	for (i = 0; i < r->nr_pages; i++)
		data[i * words + i % words] = ~region_word(r, i * words + i % words);
	pinned_read(fd, copy);
	for (i = 0; i < r->nr_pages; i++) {
		size_t w = i * words + i % words;

		if (copy[w] != ~region_word(r, w))
			fail("%s: a write to page %lu through the mapping is not in the pinned page (%#llx, want %#llx)",
			     kind_name[r->kind], i, (unsigned long long)copy[w],
			     (unsigned long long)~region_word(r, w));
		data[w] = region_word(r, w);
	}
	if (ioctl(fd, PIN_LONGTERM_TEST_STOP))
		fail("PIN_LONGTERM_TEST_STOP: %s", strerror(errno));
	free(copy);
	region_check(r, "after pinning");

	snprintf(what, sizeof(what), "pinning the %s data", kind_name[r->kind]);
	counters_check(&before, &after, folios, pages, what, out, len);
	snprintf(what, sizeof(what), " in %.1f s", t1 - t0);
	strncat(out, what, len - strlen(out) - 1);
}

int main(int argc, char **argv)
{
	unsigned long i, folios[NR_KINDS], pages[NR_KINDS];
	char what[NR_KINDS][512];
	struct zone_info mz;
	int fd, k;

	parse_args(argc, argv, "longterm_pin_test NAME none|offload [COUNTER_FILE [KEY]]");
	movable_zone(&mz);
	fd = open(GUP_TEST_FILE, O_RDWR);
	if (fd < 0)
		skip("no %s (%s): kernel without CONFIG_GUP_TEST or debugfs",
		     GUP_TEST_FILE, strerror(errno));

	for (k = 0; k < NR_KINDS; k++)
		region_map(&regions[k], k, REGION_BYTES, mz.node);
	for (k = 0; k < NR_KINDS; k++)
		region_snapshot(&regions[k], "before pinning");
	regions_check_sizes();
	for (k = 0; k < NR_KINDS; k++) {
		struct region *r = &regions[k];

		folios[k] = 0;
		pages[k] = 0;
		for (i = 0; i < r->nr_pages; i++) {
			if (!pfn_movable(r->pfn[i]))
				continue;
			pages[k]++;
			folios[k] += region_folio_start(r, i);
		}
		if (!folios[k])
			skip("none of the %s data landed in ZONE_MOVABLE (node %d)",
			     kind_name[k], mz.node);
	}

	for (k = 0; k < NR_KINDS; k++)
		pin_region(fd, &regions[k], folios[k], pages[k], what[k],
			   sizeof(what[k]));
	close(fd);

	printf("GUEST-TEST: PASS %s (node %d; 4k: %lu of %lu pages in ZONE_MOVABLE, %s; 64k: %lu folios, %s; 2m: %lu folios, %s; shmem: %lu pages, %s)\n",
	       name, mz.node, pages[K_4K], regions[K_4K].nr_pages, what[K_4K],
	       folios[K_64K], what[K_64K], folios[K_2M], what[K_2M],
	       folios[K_SHMEM], what[K_SHMEM]);
	return 0;
}
