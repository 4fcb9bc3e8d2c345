// SPDX-License-Identifier: GPL-2.0
/*
 * async_latency_test: a caller of page migration that must not block
 * (MIGRATE_ASYNC) never waits long for a copy-offload migrator, however
 * late the migrator's engine is. async_latency.sh runs it with dcbm over
 * swdma, the engine holding every descriptor 20 s and dcbm's timeout at
 * 10 s: dcbm waits at most MIGRATE_OFFLOAD_ASYNC_WAIT_MS (10 ms) for such
 * a batch, terminates its channels and the CPU copies the batch, where the
 * old kernel waited dcbm's timeout, 10 s, on every batch.
 *
 *   async_latency_test NAME numa|compact
 *
 * numa: 8 MiB of small pages on node 1, read again and again by a task on
 *	CPU 0 (node 0) with NUMA balancing on (kernel.numa_balancing, which
 *	this sets to 1 once the memory is in place and puts back; the caller
 *	makes the scanner fast), timing every page's read, until 256 of the
 *	pages are on node 0 or 60 s have passed. Each NUMA hinting fault
 *	migrates one folio (MR_NUMA_MISPLACED, MIGRATE_ASYNC). The pages
 *	left are then kept where they are (MPOL_BIND to both nodes) for
 *	the check.
 * compact: node 0 filled with small pages but 64 MiB, every other page
 *	freed, so that no 2 MiB block is free but the ones left over; then
 *	2 MiB-aligned regions bound to node 0 faulted one at a time (the
 *	caller sets THP enabled and defrag to "always"), timing each first
 *	write, until 8 faults entered direct compaction (compact_stall grew
 *	across them), or as many faults as blocks were left free and 64
 *	more. Such a fault's compaction is MIGRATE_ASYNC, see below.
 *
 * Every read or fault must take less than 2 s (BOUND_MS), failing at the
 * first that does not; the path must have run: its vmstat counters grew,
 * dcbm took batches of callers that must not block ("nonblocking") and
 * timed them out ("timeouts"), the CPU copied the folios of the timed-out
 * batches after dcbm (migrate_offload_folios_fallback) and dcbm copied none
 * (the engine held everything back); and every byte is compared after.
 *
 * Prints "GUEST-TEST: PASS NAME" or "GUEST-TEST: FAIL NAME: why" (exit 1),
 * or SKIP when the machine cannot give the test what it needs.
 */
#include "guest.h"

#include <sched.h>
#include <time.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23
#endif

#define DCBM_STATS	"/sys/kernel/debug/dcbm/stats"
#define NUMA_BALANCING	"/proc/sys/kernel/numa_balancing"
#define NODE0_MEMINFO	"/sys/devices/system/node/node0/meminfo"

/* The bound of every measured read or fault, far below dcbm's 10 s. */
#define BOUND_MS	2000.0
/* A read this slow took a hinting fault that migrated (for the record). */
#define SLOW_MS		5.0

struct counters {
	unsigned long hint_faults, numa_migrated, migrated;
	unsigned long compact_stall, compact_scanned, thp_alloc, thp_fallback;
	unsigned long offload_batches, offload_copied, offload_fallback;
	unsigned long dcbm_batches, dcbm_nonblocking, dcbm_timeouts;
	unsigned long dcbm_failures, dcbm_busy;
};

static void snapshot(struct counters *c)
{
	c->hint_faults = vmstat("numa_hint_faults");
	c->numa_migrated = vmstat("numa_pages_migrated");
	c->migrated = vmstat("pgmigrate_success");
	c->compact_stall = vmstat("compact_stall");
	c->compact_scanned = vmstat("compact_migrate_scanned");
	c->thp_alloc = vmstat("thp_fault_alloc");
	c->thp_fallback = vmstat("thp_fault_fallback");
	c->offload_batches = vmstat("migrate_offload_batches");
	c->offload_copied = vmstat("migrate_offload_folios_copied");
	c->offload_fallback = vmstat("migrate_offload_folios_fallback");
	c->dcbm_batches = proc_value(DCBM_STATS, "batches", ' ');
	c->dcbm_nonblocking = proc_value(DCBM_STATS, "nonblocking", ' ');
	c->dcbm_timeouts = proc_value(DCBM_STATS, "timeouts", ' ');
	c->dcbm_failures = proc_value(DCBM_STATS, "failures", ' ');
	c->dcbm_busy = proc_value(DCBM_STATS, "busy", ' ');
}

static void print_offload(const struct counters *a, const struct counters *b)
{
	printf("%s: dcbm: batches +%lu, nonblocking +%lu, timeouts +%lu, failures +%lu, busy +%lu; migrate_offload_batches +%lu, folios copied by dcbm +%lu, by the CPU after it +%lu\n",
	       name, b->dcbm_batches - a->dcbm_batches,
	       b->dcbm_nonblocking - a->dcbm_nonblocking,
	       b->dcbm_timeouts - a->dcbm_timeouts,
	       b->dcbm_failures - a->dcbm_failures, b->dcbm_busy - a->dcbm_busy,
	       b->offload_batches - a->offload_batches,
	       b->offload_copied - a->offload_copied,
	       b->offload_fallback - a->offload_fallback);
}

/*
 * dcbm was given batches of callers that must not block and timed them
 * out, the CPU copied their folios, and dcbm copied nothing (its engine
 * held every descriptor past dcbm's timeout: a copy by dcbm would mean the
 * delay was not in force, and the case proved nothing).
 */
static void check_offload(const struct counters *a, const struct counters *b)
{
	if (b->dcbm_nonblocking == a->dcbm_nonblocking)
		fail("dcbm was given no batch of a caller that must not block (stats nonblocking stayed %lu)",
		     a->dcbm_nonblocking);
	if (b->dcbm_timeouts == a->dcbm_timeouts)
		fail("dcbm timed out no batch (stats timeouts stayed %lu): nothing waited for the held-back engine",
		     a->dcbm_timeouts);
	if (b->offload_fallback == a->offload_fallback)
		fail("migrate_offload_folios_fallback stayed %lu: the CPU copied no folio after dcbm",
		     a->offload_fallback);
	if (b->offload_copied != a->offload_copied)
		fail("dcbm copied %lu folios although the engine held every descriptor 20 s",
		     b->offload_copied - a->offload_copied);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Run on CPU 0 only, which must be on node 0. */
static void pin_to_cpu0(void)
{
	unsigned int cpu, node;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		fail("sched_setaffinity(CPU 0): %s", strerror(errno));
	if (syscall(SYS_getcpu, &cpu, &node, NULL))
		fail("getcpu: %s", strerror(errno));
	if (cpu != 0)
		fail("running on CPU %u after pinning to CPU 0", cpu);
	if (node != 0)
		skip("CPU 0 is on node %u; the test needs it on node 0", node);
}

/*
 * Bind [buf, buf + len) to the nodes of @nodemask (MPOL_BIND, moving
 * nothing), or give it back the default policy if @nodemask is 0.
 */
static void mbind_nodes(char *buf, size_t len, unsigned long nodemask)
{
	long rc;

	if (!nodemask)
		rc = syscall(SYS_mbind, buf, len, MPOL_DEFAULT, NULL, 0, 0);
	else
		rc = syscall(SYS_mbind, buf, len, MPOL_BIND, &nodemask,
			     8 * sizeof(nodemask), 0);
	if (rc)
		fail("mbind(nodemask %#lx): %s", nodemask, strerror(errno));
}

/* The first word of @path (a sysctl), for putting it back. */
static void read_word(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");

	if (!f || !fgets(buf, size, f))
		fail("read %s: %s", path, strerror(errno));
	fclose(f);
	buf[strcspn(buf, " \n")] = '\0';
}

/* kernel.numa_balancing as it was, put back at exit (fail() exits too). */
static char saved_numa_balancing[32];

static void restore_numa_balancing(void)
{
	char val[32];

	if (!saved_numa_balancing[0])
		return;
	snprintf(val, sizeof(val), "%s", saved_numa_balancing);
	saved_numa_balancing[0] = '\0';
	if (try_write_file(NUMA_BALANCING, val))
		fail("put back %s in %s: %s", val, NUMA_BALANCING, strerror(errno));
}

static void numa_balancing_on(void)
{
	char val[32];

	read_word(NUMA_BALANCING, saved_numa_balancing,
		  sizeof(saved_numa_balancing));
	if (atexit(restore_numa_balancing))
		fail("atexit failed");
	write_file(NUMA_BALANCING, "1");
	read_word(NUMA_BALANCING, val, sizeof(val));
	if (strcmp(val, "1"))
		fail("%s reads %s after writing 1", NUMA_BALANCING, val);
}

/*
 * Case A: NUMA hinting faults. The memory is faulted in on node 1 under an
 * MPOL_BIND policy, then given back the default policy (which has
 * MPOL_F_MOF | MPOL_F_MORON: NUMA balancing scans the VMA and migrates a
 * misplaced page towards the node of the CPU that touches it): every page
 * read from CPU 0 after the scanner has made it PROT_NONE takes a hinting
 * fault that migrates it to node 0 through migrate_misplaced_folio(), one
 * folio per call, MIGRATE_ASYNC.
 */
static void numa_fault(void)
{
	const size_t len = 8UL << 20, n = len / page_size;
	const unsigned long want_on0 = n / 8;
	volatile const uint64_t *data;
	size_t i, reads = 0, slow = 0, worst_page = 0;
	double start, deadline, last, t0, t1, dt, worst = 0;
	unsigned long on0 = 0;
	struct counters a, b;
	uint64_t sum = 0;
	char *buf;

	pin_to_cpu0();
	buf = map_aligned(len, page_size);
	mbind_nodes(buf, len, 1UL << 1);
	for (i = 0; i < len / sizeof(uint64_t); i++)
		((uint64_t *)buf)[i] = pattern(i);
	check_nodes(buf, len, 1, "before NUMA balancing");
	mbind_nodes(buf, len, 0);

	snapshot(&a);
	numa_balancing_on();
	data = (volatile const uint64_t *)buf;
	start = now_ms();
	deadline = start + 60000;
	last = t0 = start;
	/*
	 * Page after page, round and round, each read timed; twice a second,
	 * count the pages on node 0 (a first pass after the scanner takes a
	 * hinting fault on every page: do not wait for its end).
	 */
	for (i = 0;; i = (i + 1) % n) {
		sum += data[i * (page_size / sizeof(*data))];
		t1 = now_ms();
		dt = t1 - t0;
		t0 = t1;
		reads++;
		slow += dt >= SLOW_MS;
		if (dt > worst) {
			worst = dt;
			worst_page = i;
		}
		if (dt >= BOUND_MS)
			fail("reading page %zu took %.1f ms (bound %.0f ms), %.1f s into NUMA balancing",
			     i, dt, BOUND_MS, (t1 - start) / 1e3);
		if (t1 - last < 500)
			continue;
		on0 = pages_on(buf, len, 0);
		if (on0 >= want_on0 || t1 >= deadline)
			break;
		/* The count is not a read of the test's: leave it out. */
		last = t0 = now_ms();
	}
	restore_numa_balancing();
	/*
	 * The pages the scanner made PROT_NONE would still migrate on their
	 * next hinting fault (do_numa_page() does not look at the sysctl),
	 * one by one through the check below: bind the buffer to both nodes,
	 * whose policy (no MPOL_F_MOF) leaves them where they are.
	 */
	mbind_nodes(buf, len, (1UL << 0) | (1UL << 1));
	on0 = pages_on(buf, len, 0);
	snapshot(&b);

	printf("%s: %lu of %zu pages moved to node 0 in %.1f s; %zu reads, %zu of them >= %.0f ms, the slowest %.2f ms (page %zu); numa_hint_faults +%lu, numa_pages_migrated +%lu, pgmigrate_success +%lu (sum %llx)\n",
	       name, on0, n, (now_ms() - start) / 1e3, reads, slow, SLOW_MS,
	       worst, worst_page, b.hint_faults - a.hint_faults,
	       b.numa_migrated - a.numa_migrated, b.migrated - a.migrated,
	       (unsigned long long)sum);
	print_offload(&a, &b);

	check_bytes(buf, 0, len, "after NUMA balancing");
	if (worst >= BOUND_MS)
		fail("the slowest read took %.1f ms, bound %.0f ms", worst, BOUND_MS);
	if (!on0)
		fail("no page moved to node 0 in 60 s: NUMA balancing migrated nothing");
	if (b.hint_faults == a.hint_faults)
		fail("numa_hint_faults did not grow");
	if (b.numa_migrated - a.numa_migrated < on0)
		fail("numa_pages_migrated grew by %lu, %lu of the test's pages moved to node 0",
		     b.numa_migrated - a.numa_migrated, on0);
	check_offload(&a, &b);
	printf("GUEST-TEST: PASS %s\n", name);
}

/* Anonymous memory that never gets large folios, faulted in now. */
static void *map_small(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		fail("mmap: %s", strerror(errno));
	if (madvise(p, len, MADV_NOHUGEPAGE))
		fail("madvise(NOHUGEPAGE): %s", strerror(errno));
	memset(p, 0, len);
	return p;
}

/*
 * The free blocks of @node of a PMD or larger, counted in PMDs, from
 * /proc/buddyinfo: how many THPs it can give without compacting.
 */
static unsigned long free_pmd_blocks(int node)
{
	unsigned long count, total = 0;
	int nid, off, order, pmd_order = 0;
	FILE *f = fopen("/proc/buddyinfo", "r");
	char line[512], zone[32], *p;

	if (!f)
		fail("open /proc/buddyinfo: %s", strerror(errno));
	while ((1UL << pmd_order) * page_size < PMD_SIZE)
		pmd_order++;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Node %d, zone %31s%n", &nid, zone, &off) != 2 ||
		    nid != node)
			continue;
		p = line + off;
		for (order = 0; sscanf(p, "%lu%n", &count, &off) == 1; order++) {
			if (order >= pmd_order)
				total += count << (order - pmd_order);
			p += off;
		}
	}
	fclose(f);
	return total;
}

/* The chosen value of a THP control ("always [madvise] never") is @want. */
static void expect_thp_control(const char *file, const char *want)
{
	char path[256], line[256], bracketed[64];
	FILE *f;

	snprintf(path, sizeof(path), THP_DIR "/%s", file);
	snprintf(bracketed, sizeof(bracketed), "[%s]", want);
	f = fopen(path, "r");
	if (!f || !fgets(line, sizeof(line), f))
		fail("read %s: %s", path, strerror(errno));
	fclose(f);
	if (!strstr(line, bracketed))
		fail("%s is '%.*s', want %s (async_latency.sh sets it)", path,
		     (int)strcspn(line, "\n"), line, want);
}

#define NR_COMPACTING	8
#define MAX_REGIONS	1024

/*
 * Case B: a THP fault entering direct compaction. The regions are neither
 * MADV_HUGEPAGE nor MADV_NOHUGEPAGE: with defrag=always, a THP fault in a
 * VMA that was not madvised allocates with GFP_TRANSHUGE | __GFP_NORETRY
 * (vma_thp_gfp_mask()), and such a costly __GFP_NORETRY allocation only
 * ever compacts at INIT_COMPACT_PRIORITY, COMPACT_PRIO_ASYNC: its direct
 * compaction migrates MIGRATE_ASYNC (MR_COMPACTION, up to 32 pages a
 * batch). (MADV_HUGEPAGE would drop __GFP_NORETRY and let it retry at
 * sync-light priority, which may block.) The task runs on CPU 0, so the
 * fault tries node 0 alone first (alloc_pages_mpol()), and the regions are
 * bound to node 0 anyway.
 */
static void thp_compaction(void)
{
	unsigned long free_kb, spare, nr_regions, compacting = 0, thps = 0;
	unsigned long thps_compacting = 0, moved = 0, stall;
	size_t i, n, fill_len, max_pages;
	double t0, dt, worst = 0, compacting_ms[NR_COMPACTING];
	char times[NR_COMPACTING * 16] = "";
	int pagemap, kpageflags, worst_region = -1;
	uint64_t *before, *after, flags;
	struct counters a, b;
	char *buf, *area, *map;
	volatile char *region;
	unsigned long r;

	pin_to_cpu0();
	expect_thp_control("enabled", "always");
	expect_thp_control("defrag", "always");
	expect_thp_control("hugepages-2048kB/enabled", "inherit");

	free_kb = proc_value(NODE0_MEMINFO, "Node 0 MemFree", ':');
	if (free_kb < 512 * 1024)
		skip("node 0 has %lu MiB free, the test needs 512", free_kb / 1024);
	/* The pfn tables, sized for all of it, allocated before measuring. */
	max_pages = free_kb * 1024 / page_size;
	before = map_small(max_pages * sizeof(*before));
	after = map_small(max_pages * sizeof(*after));

	/*
	 * Fill node 0 with small pages but 64 MiB, then free every other
	 * page: its free memory is all single pages, but what was left free.
	 */
	free_kb = proc_value(NODE0_MEMINFO, "Node 0 MemFree", ':');
	fill_len = (free_kb * 1024 - (64UL << 20)) & ~(PMD_SIZE - 1);
	n = fill_len / page_size;
	buf = map_aligned(fill_len, page_size);
	mbind_nodes(buf, fill_len, 1UL << 0);
	/* All of it at once (touching each page below does it otherwise). */
	if (madvise(buf, fill_len, MADV_POPULATE_WRITE) && errno != EINVAL)
		fail("madvise(POPULATE_WRITE) of %zu MiB on node 0: %s",
		     fill_len >> 20, strerror(errno));
	for (i = 0; i < n; i += 2) {
		uint64_t *w = (uint64_t *)(buf + i * page_size);
		size_t j, first = i * page_size / sizeof(*w);

		for (j = 0; j < page_size / sizeof(*w); j++)
			w[j] = pattern(first + j);
		buf[(i + 1) * page_size] = 1;
	}
	for (i = 1; i < n; i += 2)
		if (madvise(buf + i * page_size, page_size, MADV_DONTNEED))
			fail("madvise(DONTNEED): %s", strerror(errno));
	read_pfns(buf, n, before);
	for (i = 0; i < n; i += 2)
		if (!before[i])
			fail("page %zu of the filled memory is not present", i);
	spare = free_pmd_blocks(0);
	/*
	 * Room for a fault per block left free, and for compaction deferred
	 * (by an earlier test's failed sync compaction) for up to 64 tries.
	 */
	nr_regions = spare + 8 * NR_COMPACTING;
	if (nr_regions > MAX_REGIONS)
		nr_regions = MAX_REGIONS;
	printf("%s: filled %zu MiB of node 0 (%lu MiB free) with small pages, freed every other one; %lu free blocks of 2 MiB left on node 0, Node 0 MemFree %lu MiB\n",
	       name, fill_len >> 20, free_kb / 1024, spare,
	       proc_value(NODE0_MEMINFO, "Node 0 MemFree", ':') / 1024);

	map = mmap(NULL, (nr_regions + 1) * PMD_SIZE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		fail("mmap: %s", strerror(errno));
	area = (char *)(((uintptr_t)map + PMD_SIZE - 1) & ~(PMD_SIZE - 1));
	mbind_nodes(area, nr_regions * PMD_SIZE, 1UL << 0);
	pagemap = open("/proc/self/pagemap", O_RDONLY);
	kpageflags = open("/proc/kpageflags", O_RDONLY);
	if (pagemap < 0 || kpageflags < 0)
		fail("open pagemap/kpageflags: %s", strerror(errno));

	/*
	 * One region at a time, until NR_COMPACTING faults entered direct
	 * compaction (the first ones may find the blocks left free).
	 */
	snapshot(&a);
	for (r = 0; r < nr_regions && compacting < NR_COMPACTING; r++) {
		region = area + r * PMD_SIZE;
		stall = vmstat("compact_stall");
		t0 = now_ms();
		region[0] = 1;
		dt = now_ms() - t0;
		if (dt >= BOUND_MS)
			fail("the fault of region %lu took %.1f ms (bound %.0f ms)",
			     r, dt, BOUND_MS);
		flags = page_kpageflags(pagemap, kpageflags, (char *)region, 0,
					NULL, "after the fault");
		if (flags & (1ULL << KPF_THP))
			thps++;
		if (vmstat("compact_stall") != stall) {
			compacting++;
			thps_compacting += !!(flags & (1ULL << KPF_THP));
			compacting_ms[compacting - 1] = dt;
		}
		if (dt > worst) {
			worst = dt;
			worst_region = r;
		}
	}
	snapshot(&b);
	close(pagemap);
	close(kpageflags);
	munmap(map, (nr_regions + 1) * PMD_SIZE);

	read_pfns(buf, n, after);
	for (i = 0; i < n; i += 2)
		moved += after[i] != before[i];
	for (i = 0; i < compacting; i++)
		snprintf(times + strlen(times), sizeof(times) - strlen(times),
			 " %.1f", compacting_ms[i]);
	printf("%s: %lu regions faulted, %lu of them in direct compaction (ms:%s); THPs: %lu (%lu of those compacting); the slowest fault %.2f ms (region %d); compact_stall +%lu, compact_migrate_scanned +%lu, pgmigrate_success +%lu, thp_fault_alloc +%lu, thp_fault_fallback +%lu; %lu of the %zu pages left moved\n",
	       name, r, compacting, times, thps, thps_compacting, worst,
	       worst_region, b.compact_stall - a.compact_stall,
	       b.compact_scanned - a.compact_scanned, b.migrated - a.migrated,
	       b.thp_alloc - a.thp_alloc, b.thp_fallback - a.thp_fallback,
	       moved, (n + 1) / 2);
	print_offload(&a, &b);

	for (i = 0; i < n; i += 2)
		check_bytes(buf, i * page_size, page_size, "after compaction");
	if (worst >= BOUND_MS)
		fail("the slowest fault took %.1f ms, bound %.0f ms", worst, BOUND_MS);
	if (!compacting || b.compact_stall == a.compact_stall)
		fail("none of %lu THP faults entered direct compaction (%lu free blocks of 2 MiB were left)",
		     r, spare);
	if (b.compact_scanned == a.compact_scanned)
		fail("compaction scanned no page to migrate");
	check_offload(&a, &b);
	printf("GUEST-TEST: PASS %s\n", name);
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return fprintf(stderr, "usage: %s NAME numa|compact\n", argv[0]), 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	name = argv[1];
	page_size = sysconf(_SC_PAGESIZE);
	if (!strcmp(argv[2], "numa"))
		numa_fault();
	else if (!strcmp(argv[2], "compact"))
		thp_compaction();
	else
		fail("unknown case '%s'", argv[2]);
	return 0;
}
