// SPDX-License-Identifier: GPL-2.0
/*
 * soft_offline_test: soft offlining in-use pages (madvise(MADV_SOFT_OFFLINE),
 * MR_MEMORY_FAILURE) moves their data to new pages, intact, and takes the
 * old ones out of use; the copy offload takes part exactly when the
 * administrator enabled the memory_failure reason (off by default) and the
 * migrator is machine-check safe (dcbm is not: it never gets these).
 *
 *   soft_offline_test NAME EXPECT [COUNTER_FILE [KEY]]
 *
 * The data, on node 0: 64 anonymous small pages, 16 64K mTHPs, 4 2M THPs
 * and 64 shmem pages (see migpath.h). Each region is soft offlined whole
 * with one madvise(), which takes one page per folio (the first page of a
 * large folio: the kernel splits it and steps over the rest), each in its
 * own migrate_pages() call. Then, for every page soft offlined:
 *   - it is at a new pfn (pagemap), and its old pfn has KPF_HWPOISON;
 * and:
 *   - every byte of the data holds its pattern;
 *   - the counters (migpath.h): "offload", the migrator copied at least
 *     one folio per page soft offlined, in at least one batch each; "none",
 *     nothing was offloaded.
 * The old pages stay out of use until the guest powers off: run late.
 */
#include "migpath.h"

static const size_t region_bytes[NR_KINDS] = {
	64 << 12, 16 << 16, 4 << 21, 64 << 12,
};

/*
 * regions_check_after(): a page madvise() soft offlined (@arg: the marks of
 * each kind) must have left its pfn, and the pfn it left must be marked
 * hwpoisoned.
 */
static int not_moved_off(const struct region *r, unsigned long i, uint64_t pfn,
			 void *arg, char *why, size_t len)
{
	unsigned char **marked = arg;
	uint64_t flags;

	if (!marked[r->kind][i])
		return 0;
	if (pfn == r->pfn[i]) {
		snprintf(why, len, "it was soft offlined but did not move");
		return 1;
	}
	flags = kpf(r->pfn[i]);
	if (!(flags & (1ULL << KPF_HWPOISON))) {
		snprintf(why, len, "the pfn it left is not marked hwpoisoned (kpageflags %#llx)",
			 (unsigned long long)flags);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long i, nr[NR_KINDS] = { 0 }, total = 0;
	unsigned char *marked[NR_KINDS];
	struct counters before, after;
	char what[512];
	double t0, t1;
	int k;

	parse_args(argc, argv, "soft_offline_test NAME none|offload [COUNTER_FILE [KEY]]");
	for (k = 0; k < NR_KINDS; k++)
		region_map(&regions[k], k, region_bytes[k], 0);
	for (k = 0; k < NR_KINDS; k++)
		region_snapshot(&regions[k], "before soft offline");
	regions_check_sizes();

	/* The pages madvise() soft offlines: the first of each folio. */
	for (k = 0; k < NR_KINDS; k++) {
		struct region *r = &regions[k];

		marked[k] = calloc(r->nr_pages, 1);
		if (!marked[k])
			fail("out of memory");
		for (i = 0; i < r->nr_pages; i += region_folio_pages(r, i)) {
			marked[k][i] = 1;
			nr[k]++;
		}
		total += nr[k];
	}

	counters_read(&before);
	t0 = now_s();
	for (k = 0; k < NR_KINDS; k++) {
		struct region *r = &regions[k];

		if (!madvise(r->buf, r->len, MADV_SOFT_OFFLINE))
			continue;
		if (errno == EINVAL && k == 0)
			skip("madvise(MADV_SOFT_OFFLINE): %s: kernel without CONFIG_MEMORY_FAILURE",
			     strerror(errno));
		fail("madvise(MADV_SOFT_OFFLINE) of the %s data: %s", kind_name[k],
		     strerror(errno));
	}
	t1 = now_s();
	counters_read(&after);

	regions_check_after("after soft offline", not_moved_off, marked);
	counters_check(&before, &after, total, total, "soft offline", what,
		       sizeof(what));
	if (expect == EXPECT_OFFLOAD && after.batches - before.batches < total)
		fail("soft offline: %lu batches offloaded, want one per page soft offlined (%lu)",
		     after.batches - before.batches, total);

	printf("GUEST-TEST: PASS %s (%lu pages soft offlined in %.1f s: %lu 4k, %lu of 64k folios, %lu of 2m folios, %lu shmem; %s)\n",
	       name, total, t1 - t0, nr[K_4K], nr[K_64K], nr[K_2M], nr[K_SHMEM],
	       what);
	return 0;
}
