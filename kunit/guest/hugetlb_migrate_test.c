// SPDX-License-Identifier: GPL-2.0
/*
 * hugetlb_migrate_test: move 2M hugetlb pages to a node whose pool is empty
 * and back, and check their bytes, their nodes and the pool counts.
 *
 *   hugetlb_migrate_test NAME anon|shared
 *
 * Guards against B1 of the v1 review. The series marked "already copied" in
 * the destination folio's private word, which a hugetlb folio uses for its
 * HPG_* flags. When the target node has no free pool page, migration
 * allocates a temporary huge page (alloc_migrate_hugetlb_folio()), whose
 * private word is then BIT(HPG_temporary) == 4, the marker's value: the
 * move took it as copied and cleared it. For anonymous hugetlb memory the
 * copy was skipped (the process saw stale memory, another user's data), and
 * in both cases the page lost HPG_temporary, so move_hugetlb_state() did not
 * hand that state to the old page: the old page went back to the pool
 * instead of to the buddy allocator, and HugePages_Total grew by one for
 * every page moved. None of it needed a migrator.
 *
 * The pools are set to 4 pages on node 0 and none on node 1 (no overcommit;
 * hugetlb_optimize_vmemmap off, so that nothing else sets a flag in a new
 * page's private word), and 4 huge pages are mapped, faulted in on node 0
 * and filled with a pattern that differs in every word:
 *   anon    mmap(MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB);
 *   shared  memfd_create(MFD_HUGETLB), mmap(MAP_SHARED): hugetlbfs page
 *           cache, moved by hugetlbfs_migrate_folio().
 * Then they are moved with move_pages(), one address per huge page, to
 * node 1 and back to node 0. After each move: every status is the target,
 * every byte holds its pattern, every page is on the target node,
 * pgmigrate_success grew by the pages moved, and the pool counts of
 * /proc/meminfo and of both nodes are what vanilla Linux makes of them:
 * a page moved into a free pool page frees the old one to the source
 * node's pool; a page moved into a temporary page makes that page the pool
 * page (the target node's nr_hugepages rises, the source's drops) and
 * frees the old one to the buddy allocator: HugePages_Total never changes,
 * HugePages_Surp stays 0. Once unmapped, every page is free again, and
 * once the pools are restored, the totals are what they were.
 *
 * Skipped (not failed) only if node 0 cannot get 4 huge pages. Prints
 * "GUEST-TEST: PASS|FAIL|SKIP NAME".
 */
#include "guest.h"

#define HPAGE_SIZE	PMD_SIZE
#define NR_HPAGES	4UL
#define NODE_HP		"/sys/devices/system/node/node%d/hugepages/hugepages-2048kB/%s"
#define OVERCOMMIT	"/sys/kernel/mm/hugepages/hugepages-2048kB/nr_overcommit_hugepages"
#define VMEMMAP		"/proc/sys/vm/hugetlb_optimize_vmemmap"

/* The pool counts: /proc/meminfo's and each node's. */
struct pool {
	unsigned long total, free, rsvd, surp;
	unsigned long nr[2], nr_free[2], nr_surp[2];
};

static size_t len;
static char *buf;
static int memfd = -1;

/* What the test changed, to put back. */
static unsigned long saved_nr[2], saved_overcommit;
static char saved_vmemmap[32];
static int restored;

static unsigned long meminfo(const char *key)
{
	return proc_value("/proc/meminfo", key, ':');
}

static void node_path(char *path, size_t size, int node, const char *file)
{
	snprintf(path, size, NODE_HP, node, file);
}

static unsigned long node_read(int node, const char *file)
{
	char path[256];

	node_path(path, sizeof(path), node, file);
	return read_ulong(path);
}

static int node_try_write(int node, unsigned long val)
{
	char path[256], v[32];

	node_path(path, sizeof(path), node, "nr_hugepages");
	snprintf(v, sizeof(v), "%lu", val);
	return try_write_file(path, v);
}

static void pool_read(struct pool *p)
{
	int n;

	p->total = meminfo("HugePages_Total");
	p->free = meminfo("HugePages_Free");
	p->rsvd = meminfo("HugePages_Rsvd");
	p->surp = meminfo("HugePages_Surp");
	for (n = 0; n < 2; n++) {
		p->nr[n] = node_read(n, "nr_hugepages");
		p->nr_free[n] = node_read(n, "free_hugepages");
		p->nr_surp[n] = node_read(n, "surplus_hugepages");
	}
}

static int pool_fmt(char *s, size_t size, const struct pool *p)
{
	return snprintf(s, size,
			"Total %lu Free %lu Rsvd %lu Surp %lu, node 0: %lu (%lu free, %lu surplus), node 1: %lu (%lu free, %lu surplus)",
			p->total, p->free, p->rsvd, p->surp, p->nr[0], p->nr_free[0],
			p->nr_surp[0], p->nr[1], p->nr_free[1], p->nr_surp[1]);
}

/* Fail unless the pool counts are @want now; @why says what went wrong. */
static void pool_check(const struct pool *want, const char *when, const char *why)
{
	char have_s[256], want_s[256];
	struct pool p;

	pool_read(&p);
	if (!memcmp(&p, want, sizeof(p)))
		return;
	pool_fmt(have_s, sizeof(have_s), &p);
	pool_fmt(want_s, sizeof(want_s), want);
	fail("%s: hugetlb pool %s; want %s%s%s", when, have_s, want_s,
	     why ? ": " : "", why ? why : "");
}

/* All @nr pages of the pool on @node and in use (or free if @free). */
static void pool_all_on(struct pool *p, int node, unsigned long nr, int free)
{
	memset(p, 0, sizeof(*p));
	p->total = nr;
	p->nr[node] = nr;
	if (free) {
		p->free = nr;
		p->nr_free[node] = nr;
	}
}

static void unmap(void)
{
	if (buf) {
		if (munmap(buf, len))
			fail("munmap: %s", strerror(errno));
		buf = NULL;
	}
	if (memfd >= 0) {
		close(memfd);
		memfd = -1;
	}
}

static void save_settings(void)
{
	FILE *f;

	saved_nr[0] = node_read(0, "nr_hugepages");
	saved_nr[1] = node_read(1, "nr_hugepages");
	saved_overcommit = read_ulong(OVERCOMMIT);
	f = fopen(VMEMMAP, "r");
	if (f) {
		if (!fgets(saved_vmemmap, sizeof(saved_vmemmap), f))
			saved_vmemmap[0] = 0;
		fclose(f);
	}
}

/*
 * Put the pools and settings back; on failure paths (at exit) as well as
 * possible, without another result line.
 */
static int restore_settings(void)
{
	char v[32];
	int rc = 0;

	if (restored)
		return 0;
	restored = 1;
	if (buf)
		munmap(buf, len);
	buf = NULL;
	if (memfd >= 0)
		close(memfd);
	memfd = -1;
	rc |= node_try_write(1, saved_nr[1]);
	rc |= node_try_write(0, saved_nr[0]);
	snprintf(v, sizeof(v), "%lu", saved_overcommit);
	rc |= try_write_file(OVERCOMMIT, v);
	if (saved_vmemmap[0])
		rc |= try_write_file(VMEMMAP, saved_vmemmap);
	return rc;
}

static void restore_at_exit(void)
{
	restore_settings();
}

static void map_hugetlb(const char *mode)
{
	if (!strcmp(mode, "anon")) {
		buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	} else if (!strcmp(mode, "shared")) {
		memfd = memfd_create("hugetlb_migrate_test", MFD_HUGETLB);
		if (memfd < 0)
			fail("memfd_create(MFD_HUGETLB): %s", strerror(errno));
		if (ftruncate(memfd, len))
			fail("ftruncate: %s", strerror(errno));
		buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	} else {
		fail("unknown mode '%s'", mode);
	}
	if (buf == MAP_FAILED) {
		buf = NULL;
		fail("mmap of %zu bytes of hugetlb memory (%s): %s", len, mode,
		     strerror(errno));
	}
}

/*
 * Move every huge page to @to and check it all; @before is the pool as it
 * is now, every page in use on the other node.
 */
static void move_hugepages(int to, const struct pool *before, const char *when)
{
	unsigned long i, reused, temporary, success;
	void *addrs[NR_HPAGES];
	int nodes[NR_HPAGES], status[NR_HPAGES];
	int from = !to;
	struct pool want = *before;
	char why[128];
	long rc;

	for (i = 0; i < NR_HPAGES; i++) {
		addrs[i] = buf + i * HPAGE_SIZE;
		nodes[i] = to;
		status[i] = -1;
	}
	success = vmstat("pgmigrate_success");
	rc = move_pages(NR_HPAGES, addrs, nodes, status, MPOL_MF_MOVE);
	if (rc)
		fail("%s: move_pages() returned %ld: %s", when, rc,
		     rc < 0 ? strerror(errno) : "pages left behind");
	for (i = 0; i < NR_HPAGES; i++)
		if (status[i] != to)
			fail("%s: huge page %lu: status %d, want %d", when, i,
			     status[i], to);
	check_bytes(buf, 0, len, when);
	check_nodes(buf, len, to, when);
	success = vmstat("pgmigrate_success") - success;
	if (success != NR_HPAGES * (HPAGE_SIZE / page_size))
		fail("%s: pgmigrate_success grew by %lu, want %lu", when, success,
		     NR_HPAGES * (HPAGE_SIZE / page_size));

	/*
	 * Free pool pages on the target are used first, and the old pages
	 * go back to the source's pool; the others move into temporary
	 * pages, which stay as the target's pool pages while the old ones go
	 * to the buddy allocator.
	 */
	reused = before->nr_free[to] < NR_HPAGES ? before->nr_free[to] : NR_HPAGES;
	temporary = NR_HPAGES - reused;
	want.nr[to] += temporary;
	want.nr[from] -= temporary;
	want.nr_free[to] -= reused;
	want.nr_free[from] += reused;
	snprintf(why, sizeof(why),
		 "%lu pages moved into temporary huge pages, %lu into free pool pages",
		 temporary, reused);
	pool_check(&want, when, why);
}

int main(int argc, char **argv)
{
	struct pool want, before;
	const char *mode;
	char path[256];

	if (argc != 3) {
		fprintf(stderr, "usage: %s NAME anon|shared\n", argv[0]);
		return 2;
	}
	name = argv[1];
	mode = argv[2];
	page_size = sysconf(_SC_PAGESIZE);
	len = NR_HPAGES * HPAGE_SIZE;
	if (strcmp(mode, "anon") && strcmp(mode, "shared"))
		fail("unknown mode '%s'", mode);
	node_path(path, sizeof(path), 1, "nr_hugepages");
	if (access(path, W_OK))
		fail("no %s: %s (the test kernel has CONFIG_HUGETLBFS)", path,
		     strerror(errno));

	save_settings();
	atexit(restore_at_exit);
	if (saved_vmemmap[0])
		write_file(VMEMMAP, "0");
	write_file(OVERCOMMIT, "0");
	if (node_try_write(1, 0) || node_try_write(0, NR_HPAGES))
		fail("setting the per-node pools: %s", strerror(errno));
	if (node_read(0, "nr_hugepages") < NR_HPAGES)
		skip("node 0 got %lu of %lu huge pages", node_read(0, "nr_hugepages"),
		     NR_HPAGES);
	pool_all_on(&want, 0, NR_HPAGES, 1);
	pool_check(&want, "pools set", "huge pages in use or left over before the test");

	map_hugetlb(mode);
	fill_on_node(buf, len, 0);
	check_nodes(buf, len, 0, "faulted in");
	check_bytes(buf, 0, len, "faulted in");
	pool_all_on(&want, 0, NR_HPAGES, 0);
	pool_check(&want, "faulted in", NULL);

	pool_read(&before);
	move_hugepages(1, &before, "move to node 1");
	pool_read(&before);
	move_hugepages(0, &before, "move back to node 0");

	unmap();
	pool_read(&before);
	if (before.free != before.total || before.total != NR_HPAGES ||
	    before.rsvd || before.surp)
		fail("unmapped: HugePages_Total %lu, Free %lu, Rsvd %lu, Surp %lu; want %lu, %lu, 0, 0",
		     before.total, before.free, before.rsvd, before.surp,
		     NR_HPAGES, NR_HPAGES);
	pool_all_on(&want, 0, NR_HPAGES, 1);
	pool_check(&want, "unmapped", NULL);

	if (restore_settings())
		fail("restoring the pools (%lu and %lu pages) and settings: %s",
		     saved_nr[0], saved_nr[1], strerror(errno));
	if (node_read(0, "nr_hugepages") != saved_nr[0] ||
	    node_read(1, "nr_hugepages") != saved_nr[1] ||
	    meminfo("HugePages_Total") != saved_nr[0] + saved_nr[1] ||
	    meminfo("HugePages_Free") != meminfo("HugePages_Total"))
		fail("pools restored: nodes have %lu and %lu huge pages, HugePages_Total %lu, Free %lu; want %lu and %lu, all free",
		     node_read(0, "nr_hugepages"), node_read(1, "nr_hugepages"),
		     meminfo("HugePages_Total"), meminfo("HugePages_Free"),
		     saved_nr[0], saved_nr[1]);

	printf("GUEST-TEST: PASS %s (%lu huge pages, %s, to node 1 and back through temporary pages)\n",
	       name, NR_HPAGES, mode);
	return 0;
}
