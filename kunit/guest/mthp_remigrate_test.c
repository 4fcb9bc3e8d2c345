// SPDX-License-Identifier: GPL-2.0
/*
 * mthp_remigrate_test: migrate anonymous mTHPs back and forth between the
 * two nodes and check that they stay whole.
 *
 *   mthp_remigrate_test NAME FOLIO_KB NR_FOLIOS [partial]
 *
 * Faults NR_FOLIOS folios of FOLIO_KB (only that mTHP size enabled) on
 * node 0 and moves them with move_pages(), one address per folio, to
 * node 1, back to node 0 and to node 1 again. After every step it prints a
 * line of the size's /sys/kernel/mm/transparent_hugepage/hugepages-<N>kB/
 * stats/ counters (as changes since the start) and checks that:
 *   - every page is on the node it was moved to and holds its bytes;
 *   - nr_anon still counts NR_FOLIOS folios, nr_anon_partially_mapped,
 *     split and split_deferred did not move: a fully mapped folio is never
 *     marked partially mapped by its migration, so never split by the next;
 *   - /proc/self/pagemap and /proc/kpageflags show every folio whole: a
 *     compound head on its first page, tails on the others, physically
 *     contiguous and naturally aligned.
 * A counter mismatch is reported after the last move, so that the printed
 * lines show what the following moves did to the folios.
 *
 * With "partial", the last page of every folio is unmapped first, so the
 * folios really are partially mapped. The kernel queues each of them for
 * deferred split then, and the migration splits them and moves the
 * remaining small pages; the pages that are left keep their bytes and all
 * arrive on node 1, and a second move of those pages back to node 0
 * splits nothing more.
 */
#include "guest.h"

static char stats_dir[256];

struct mthp_stats {
	long nr_anon, partially_mapped, split, split_deferred;
};

static long stat_read(const char *file)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", stats_dir, file);
	return read_ulong(path);
}

static void stats_read(struct mthp_stats *s)
{
	s->nr_anon = stat_read("nr_anon");
	s->partially_mapped = stat_read("nr_anon_partially_mapped");
	s->split = stat_read("split");
	s->split_deferred = stat_read("split_deferred");
}

/* The first mismatch of a stats_check() that was told to carry on. */
static char stats_failure[512];

/*
 * Print the counters' changes since @base and check them against @want. A
 * mismatch fails the test at once if @fatal, else it is kept in
 * stats_failure, so that the table goes on to show the following steps.
 */
static void stats_check(const struct mthp_stats *base, const struct mthp_stats *want,
			const char *when, int fatal)
{
	struct mthp_stats now, d;

	stats_read(&now);
	d.nr_anon = now.nr_anon - base->nr_anon;
	d.partially_mapped = now.partially_mapped - base->partially_mapped;
	d.split = now.split - base->split;
	d.split_deferred = now.split_deferred - base->split_deferred;
	printf("%s: %-18s nr_anon %5ld  nr_anon_partially_mapped %5ld  split %5ld  split_deferred %5ld\n",
	       name, when, d.nr_anon, d.partially_mapped, d.split, d.split_deferred);
	if (d.nr_anon != want->nr_anon || d.partially_mapped != want->partially_mapped ||
	    d.split != want->split || d.split_deferred != want->split_deferred) {
		char msg[sizeof(stats_failure)];

		snprintf(msg, sizeof(msg),
			 "%s: nr_anon %+ld, nr_anon_partially_mapped %+ld, split %+ld, split_deferred %+ld; want %+ld, %+ld, %+ld, %+ld",
			 when, d.nr_anon, d.partially_mapped, d.split,
			 d.split_deferred, want->nr_anon, want->partially_mapped,
			 want->split, want->split_deferred);
		if (fatal)
			fail("%s", msg);
		if (!stats_failure[0])
			memcpy(stats_failure, msg, sizeof(msg));
	}
}

/* Move @count pages, given by their addresses, to @node; all must get there. */
static void move_to(void **addrs, unsigned long count, int node, const char *when)
{
	int *nodes = calloc(count, sizeof(*nodes));
	int *status = calloc(count, sizeof(*status));
	unsigned long i;
	long ret;

	if (!nodes || !status)
		fail("out of memory");
	for (i = 0; i < count; i++)
		nodes[i] = node;
	ret = move_pages(count, addrs, nodes, status, MPOL_MF_MOVE);
	if (ret < 0)
		fail("%s: move_pages(to node %d): %s", when, node, strerror(errno));
	if (ret > 0)
		fail("%s: move_pages(to node %d): %ld pages not migrated", when,
		     node, ret);
	for (i = 0; i < count; i++)
		if (status[i] != node)
			fail("%s: page %lu: status %d after the move to node %d",
			     when, i, status[i], node);
	free(nodes);
	free(status);
}

/* Fully mapped folios: three moves, nothing marked, nothing split. */
static void run_whole(char *buf, unsigned long nr_folios, size_t folio_size,
		      const struct mthp_stats *base)
{
	unsigned long folio_pages = folio_size / page_size, i;
	struct mthp_stats want = { .nr_anon = nr_folios };
	size_t len = nr_folios * folio_size;
	void **addrs = calloc(nr_folios, sizeof(*addrs));
	static const int to[] = { 1, 0, 1 };
	char when[64];
	int round;

	if (!addrs)
		fail("out of memory");
	for (i = 0; i < nr_folios; i++)
		addrs[i] = buf + i * folio_size;
	for (round = 0; round < 3; round++) {
		snprintf(when, sizeof(when), "move %d to node %d", round + 1, to[round]);
		move_to(addrs, nr_folios, to[round], when);
		stats_check(base, &want, when, 0);
		check_nodes(buf, len, to[round], when);
		check_bytes(buf, 0, len, when);
		check_folios(buf, nr_folios * folio_pages, folio_pages, when);
	}
	if (stats_failure[0])
		fail("%s", stats_failure);
	free(addrs);
}

/* Partially mapped folios: split on migration, as they always were. */
static void run_partial(char *buf, unsigned long nr_folios, size_t folio_size,
			const struct mthp_stats *base)
{
	unsigned long folio_pages = folio_size / page_size, i, j, n = 0;
	unsigned long mapped_pages = nr_folios * (folio_pages - 1);
	struct mthp_stats want = { .nr_anon = nr_folios };
	void **addrs = calloc(mapped_pages, sizeof(*addrs));
	char *folio;

	if (!addrs)
		fail("out of memory");
	for (i = 0; i < nr_folios; i++) {
		folio = buf + i * folio_size;
		if (munmap(folio + folio_size - page_size, page_size))
			fail("munmap: %s", strerror(errno));
		addrs[i] = folio;
	}
	want.partially_mapped = nr_folios;
	want.split_deferred = nr_folios;
	stats_check(base, &want, "munmap last pages", 1);

	/* move_pages() splits each folio and moves what is left of it. */
	move_to(addrs, nr_folios, 1, "move 1 to node 1");
	want.nr_anon = 0;
	want.partially_mapped = 0;
	want.split = nr_folios;
	stats_check(base, &want, "move 1 to node 1", 1);
	for (i = 0; i < nr_folios; i++) {
		folio = buf + i * folio_size;
		check_nodes(folio, folio_size - page_size, 1, "move 1 to node 1");
		check_bytes(buf, i * folio_size, folio_size - page_size,
			    "move 1 to node 1");
		check_folios(folio, folio_pages - 1, 1, "move 1 to node 1");
		for (j = 0; j < folio_pages - 1; j++)
			addrs[n++] = folio + j * page_size;
	}

	/* The small pages move back one by one, with nothing left to split. */
	move_to(addrs, mapped_pages, 0, "move 2 to node 0");
	stats_check(base, &want, "move 2 to node 0", 1);
	for (i = 0; i < nr_folios; i++) {
		check_nodes(buf + i * folio_size, folio_size - page_size, 0,
			    "move 2 to node 0");
		check_bytes(buf, i * folio_size, folio_size - page_size,
			    "move 2 to node 0");
	}
	free(addrs);
}

int main(int argc, char **argv)
{
	struct mthp_stats base, want = { 0 };
	unsigned long nr_folios;
	size_t folio_kb, folio_size, len;
	int partial;
	char *buf;

	if (argc != 4 && !(argc == 5 && !strcmp(argv[4], "partial"))) {
		fprintf(stderr, "usage: %s NAME FOLIO_KB NR_FOLIOS [partial]\n",
			argv[0]);
		return 2;
	}
	name = argv[1];
	folio_kb = strtoul(argv[2], NULL, 0);
	nr_folios = strtoul(argv[3], NULL, 0);
	partial = argc == 5;
	page_size = sysconf(_SC_PAGESIZE);
	folio_size = folio_kb << 10;
	/* PMD-sized folios are mapped by a PMD: this is about mTHPs. */
	if (folio_size <= (size_t)page_size || folio_size >= PMD_SIZE || !nr_folios)
		fail("bad sizes: folio %zu KiB, %lu folios", folio_kb, nr_folios);
	len = nr_folios * folio_size;

	set_thp_size(folio_kb);
	snprintf(stats_dir, sizeof(stats_dir), THP_DIR "/hugepages-%zukB/stats",
		 folio_kb);
	stats_read(&base);

	buf = map_aligned(len, folio_size);
	fill_on_node(buf, len, 0);
	want.nr_anon = nr_folios;
	stats_check(&base, &want, "fault on node 0", 1);
	check_nodes(buf, len, 0, "fault on node 0");
	check_folios(buf, len / page_size, folio_size / page_size, "fault on node 0");

	if (partial)
		run_partial(buf, nr_folios, folio_size, &base);
	else
		run_whole(buf, nr_folios, folio_size, &base);

	printf("GUEST-TEST: PASS %s (%lu folios of %zu KiB)\n", name, nr_folios,
	       folio_kb);
	return 0;
}
