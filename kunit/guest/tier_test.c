// SPDX-License-Identifier: GPL-2.0
/*
 * Migrations of a tiered machine (kunit/qemu-tiered.args: node 0 with the
 * CPUs, node 1 slower memory in a lower tier), driven the way the kernel
 * does them rather than by move_pages():
 *
 *   tier_test NAME demote FOLIO_KB TOTAL_KB EXPECT [aged]
 *	fill TOTAL_KB of FOLIO_KB folios on node 0 from within the cgroup
 *	/sys/fs/cgroup/tier, and reclaim that much through its memory.reclaim
 *	(demotion_enabled must be on: with no swap, reclaiming anonymous
 *	memory is demoting it, MR_DEMOTION, in this task with the reclaim
 *	context's flags); "aged" clears the accessed bits first
 *	(clear_refs), so memory reclaim finds cold, as tiering does.
 *   tier_test NAME promote FOLIO_KB TOTAL_KB EXPECT
 *	fill the memory on node 1 and read it until NUMA balancing in tiering
 *	mode (kernel.numa_balancing=2, set by the caller) has promoted most
 *	of it to node 0 (MR_NUMA_MISPLACED, one folio per migration, in the
 *	hinting fault).
 *   tier_test NAME compact 4 TOTAL_KB EXPECT
 *	fill small pages on node 1, free every other one, and compact node 1
 *	(/sys/devices/system/node/node1/compact: MR_COMPACTION, at most 32
 *	pages per migration); some of the pages left must have moved.
 *   tier_test NAME cold FOLIO_KB TOTAL_KB EXPECT
 *	fill the memory on node 0, start a DAMON migrate_cold scheme over its
 *	physical range (paddr) and wait, without touching it, until DAMON
 *	(MR_DAMON, whole regions per migration) has moved most of it to node
 *	1.
 *   tier_test NAME storm FOLIO_KB TOTAL_KB EXPECT WRITERS SECONDS
 *	WRITERS processes, TOTAL_KB each (together more than node 0 holds),
 *	for SECONDS: half map, write, check and unmap fresh memory bound to
 *	node 0 again and again, so that direct reclaim and kswapd demote from
 *	the full node 0; half rewrite and check memory they keep (anonymous,
 *	or a shmem file), which is demoted and, with NUMA balancing in tiering
 *	mode, promoted back. The caller may narrow the offload to demotion
 *	(reasons), so that the offload counters show reclaim's batches.
 *
 * Every case compares every byte after the migrations, checks where the
 * pages are, and checks the vmstat counters of the path (pgdemote_*,
 * pgpromote_success, compact_*, pgmigrate_success) and of the copy offload
 * against EXPECT: "cpu" (no batch given to a migrator), "offload" (batches
 * offloaded, the migrator copied at least every folio that moved and the
 * CPU none of them after it), "fallback" (batches offloaded, the migrator
 * failed them all and the CPU copied at least every folio that moved) or
 * "declined" (batches offloaded, and every folio that moved was copied by
 * the migrator or, where it declined or gave up on a batch, by the CPU
 * after it: dcbm, which declines a batch while another reclaimer's batch
 * holds its channels, and gives up on a batch that must not block after
 * 10 ms) or "some" (batches offloaded, the migrator may decline or fail
 * some: the storm, where batches contend).
 */
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include "guest.h"

#define CGROUP "/sys/fs/cgroup/tier"

struct counters {
	unsigned long batch, copied, fallback, migrated, demoted, promoted;
	unsigned long demoted_kswapd, demoted_direct, demoted_proactive;
	unsigned long allocstall, hint_faults;
	unsigned long compact_scanned, compact_isolated, kcompactd_scanned;
};

static void snapshot(struct counters *c)
{
	/*
	 * pgdemote_* and pgpromote_success are node counters, which CPUs
	 * fold into /proc/vmstat only now and then: fold them now.
	 */
	write_file("/proc/sys/vm/stat_refresh", "1");
	c->batch = vmstat("migrate_offload_batches");
	c->copied = vmstat("migrate_offload_folios_copied");
	c->fallback = vmstat("migrate_offload_folios_fallback");
	c->migrated = vmstat("pgmigrate_success");
	c->demoted_kswapd = vmstat("pgdemote_kswapd");
	c->demoted_direct = vmstat("pgdemote_direct");
	c->demoted_proactive = vmstat("pgdemote_proactive");
	c->demoted = c->demoted_kswapd + c->demoted_direct +
		     c->demoted_proactive + vmstat("pgdemote_khugepaged");
	c->allocstall = vmstat("allocstall_dma") + vmstat("allocstall_dma32") +
			vmstat("allocstall_normal") + vmstat("allocstall_movable");
	c->promoted = vmstat("pgpromote_success");
	c->hint_faults = vmstat("numa_hint_faults");
	c->compact_scanned = vmstat("compact_migrate_scanned");
	c->compact_isolated = vmstat("compact_isolated");
	c->kcompactd_scanned = vmstat("compact_daemon_migrate_scanned");
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * The offload counters between @a and @b against @expect, for a case in
 * which @moved_folios of the test's folios migrated.
 */
static void check_offload(const char *expect, const struct counters *a,
			  const struct counters *b, unsigned long moved_folios)
{
	unsigned long batch = b->batch - a->batch;
	unsigned long copied = b->copied - a->copied;
	unsigned long fallback = b->fallback - a->fallback;

	printf("%s: offload: %lu batches, %lu folios copied by the migrator, %lu by the CPU after it\n",
	       name, batch, copied, fallback);
	if (!strcmp(expect, "cpu")) {
		if (batch || copied || fallback)
			fail("a migrator was given %lu batches (%lu folios copied, %lu fell back), want none",
			     batch, copied, fallback);
	} else if (!strcmp(expect, "offload")) {
		if (!batch || !copied)
			fail("%lu batches offloaded, %lu folios copied: want some", batch, copied);
		if (copied < moved_folios)
			fail("the migrator copied %lu folios, but %lu of the test's moved",
			     copied, moved_folios);
		if (fallback)
			fail("%lu offloaded folios were left to the CPU", fallback);
	} else if (!strcmp(expect, "fallback")) {
		if (!batch)
			fail("no batch was offloaded");
		if (copied)
			fail("the failing migrator copied %lu folios", copied);
		if (fallback < moved_folios)
			fail("the CPU copied %lu folios after the migrator, but %lu of the test's moved",
			     fallback, moved_folios);
	} else if (!strcmp(expect, "declined")) {
		if (!batch || !copied)
			fail("%lu batches offloaded, %lu folios copied: want some", batch, copied);
		if (copied + fallback < moved_folios)
			fail("the migrator and the CPU after it copied %lu folios, but %lu of the test's moved",
			     copied + fallback, moved_folios);
	} else if (!strcmp(expect, "some")) {
		if (!batch || !copied)
			fail("%lu batches offloaded, %lu folios copied: want some", batch, copied);
	} else {
		fail("unknown expectation '%s'", expect);
	}
}

static void join_cgroup(void)
{
	char pid[32];

	snprintf(pid, sizeof(pid), "%d", getpid());
	write_file(CGROUP "/cgroup.procs", pid);
}

static void check_large_folios(char *buf, size_t len, size_t folio_kb,
			       const char *when)
{
	if (folio_kb * 1024 > (size_t)page_size)
		check_folios(buf, len / page_size, folio_kb * 1024 / page_size, when);
}

static void demote(size_t folio_kb, size_t len, const char *expect, int aged)
{
	unsigned long folio_pages = folio_kb * 1024 / page_size, on1;
	struct counters a, b;
	char req[64];
	char *buf;

	join_cgroup();
	set_thp_size(folio_kb);
	buf = map_aligned(len, folio_kb * 1024);
	fill_on_node(buf, len, 0);
	check_nodes(buf, len, 0, "before reclaim");
	check_large_folios(buf, len, folio_kb, "before reclaim");
	if (aged)
		write_file("/proc/self/clear_refs", "1");
	snapshot(&a);
	snprintf(req, sizeof(req), "%zuK", len / 1024);
	/* EAGAIN: less than asked for was reclaimed, judged below. */
	if (try_write_file(CGROUP "/memory.reclaim", req) && errno != EAGAIN)
		fail("write %s to memory.reclaim: %s", req, strerror(errno));
	snapshot(&b);
	on1 = pages_on(buf, len, 1);
	printf("%s: %lu of %zu pages demoted to node 1; pgdemote +%lu, pgmigrate_success +%lu\n",
	       name, on1, len / page_size, b.demoted - a.demoted,
	       b.migrated - a.migrated);
	check_bytes(buf, 0, len, "after demotion");
	if (on1 < len / page_size / 2)
		fail("only %lu of %zu pages were demoted", on1, len / page_size);
	/* memory.reclaim is proactive reclaim, counted apart. */
	if (b.demoted_proactive - a.demoted_proactive < on1)
		fail("pgdemote_proactive counted %lu pages, %lu were demoted",
		     b.demoted_proactive - a.demoted_proactive, on1);
	check_large_folios(buf, len, folio_kb, "after demotion");
	check_offload(expect, &a, &b, on1 / folio_pages);
	printf("GUEST-TEST: PASS %s\n", name);
}

static void promote(size_t folio_kb, size_t len, const char *expect)
{
	unsigned long folio_pages = folio_kb * 1024 / page_size, on0 = 0;
	volatile const uint64_t *data;
	double start, deadline, last;
	struct counters a, b;
	uint64_t sum = 0;
	char *buf;
	size_t i;

	set_thp_size(folio_kb);
	buf = map_aligned(len, folio_kb * 1024);
	fill_on_node(buf, len, 1);
	check_nodes(buf, len, 1, "before promotion");
	check_large_folios(buf, len, folio_kb, "before promotion");
	snapshot(&a);
	/*
	 * Read every page without a pause (the scanner runs after so much of
	 * the task's CPU time, and its hinting faults are what promotes)
	 * until nine tenths are on node 0, looking twice a second; TCG makes
	 * the scanner slow, so allow a minute.
	 */
	data = (volatile const uint64_t *)buf;
	start = now();
	deadline = start + 60;
	for (last = start; now() < deadline;) {
		for (i = 0; i < len / sizeof(*data); i += page_size / sizeof(*data))
			sum += data[i];
		if (now() - last < 0.5)
			continue;
		last = now();
		on0 = pages_on(buf, len, 0);
		if (on0 >= len / page_size * 9 / 10)
			break;
	}
	snapshot(&b);
	printf("%s: %lu of %zu pages promoted in %.1f s; pgpromote_success +%lu, numa_hint_faults +%lu (sum %llx)\n",
	       name, on0, len / page_size, now() - start, b.promoted - a.promoted,
	       b.hint_faults - a.hint_faults, (unsigned long long)sum);
	check_bytes(buf, 0, len, "after promotion");
	if (on0 < len / page_size * 9 / 10)
		fail("only %lu of %zu pages were promoted in 60 s", on0, len / page_size);
	if (b.promoted - a.promoted < on0)
		fail("pgpromote_success counted %lu pages, %lu were promoted",
		     b.promoted - a.promoted, on0);
	check_large_folios(buf, len, folio_kb, "after promotion");
	check_offload(expect, &a, &b, on0 / folio_pages);
	printf("GUEST-TEST: PASS %s\n", name);
}

static void compact(size_t folio_kb, size_t len, const char *expect)
{
	unsigned long moved = 0, kept = 0;
	uint64_t *before, *after;
	struct counters a, b;
	int *nodes;
	char *buf;
	size_t i;

	if (folio_kb != 4)
		fail("compact moves small pages only");
	set_thp_size(4);
	buf = map_aligned(len, page_size);
	fill_on_node(buf, len, 1);
	/* Every other page freed: the node is fragmented by the test's holes. */
	for (i = 1; i < len / page_size; i += 2)
		if (madvise(buf + i * page_size, page_size, MADV_DONTNEED))
			fail("madvise(DONTNEED): %s", strerror(errno));
	before = page_pfns(buf, len);
	snapshot(&a);
	write_file("/sys/devices/system/node/node1/compact", "1");
	snapshot(&b);
	after = page_pfns(buf, len);
	for (i = 0; i < len / page_size; i += 2) {
		if (!before[i] || !after[i])
			fail("page %zu not present", i);
		moved += before[i] != after[i];
		kept++;
	}
	printf("%s: %lu of %lu pages moved by compaction; pgmigrate_success +%lu, compact_migrate_scanned +%lu, compact_isolated +%lu, compact_daemon_migrate_scanned +%lu\n",
	       name, moved, kept, b.migrated - a.migrated,
	       b.compact_scanned - a.compact_scanned,
	       b.compact_isolated - a.compact_isolated,
	       b.kcompactd_scanned - a.kcompactd_scanned);
	/* The holes read as zeroes, the pages left as written. */
	for (i = 0; i < len / page_size; i += 2)
		check_bytes(buf, i * page_size, page_size, "after compaction");
	for (i = 1; i < len / page_size; i += 2)
		if (buf[i * page_size] || memcmp(buf + i * page_size,
						 buf + i * page_size + 1,
						 page_size - 1))
			fail("freed page %zu is not zero after compaction", i);
	nodes = page_nodes(buf, len, "after compaction");
	for (i = 0; i < len / page_size; i += 2)
		if (nodes[i] != 1)
			fail("page %zu is on node %d after compaction", i, nodes[i]);
	free(nodes);
	if (!moved)
		fail("compaction moved none of the %lu pages", kept);
	/* compact_isolated counts both scanners' pages: each move isolates two. */
	if (b.compact_scanned == a.compact_scanned ||
	    b.compact_isolated - a.compact_isolated < 2 * moved)
		fail("compaction scanned %lu and isolated %lu pages, %lu moved",
		     b.compact_scanned - a.compact_scanned,
		     b.compact_isolated - a.compact_isolated, moved);
	if (b.migrated - a.migrated < moved)
		fail("pgmigrate_success counted %lu, %lu pages moved",
		     b.migrated - a.migrated, moved);
	check_offload(expect, &a, &b, b.migrated - a.migrated);
	free(before);
	free(after);
	printf("GUEST-TEST: PASS %s\n", name);
}

#define DAMON "/sys/kernel/mm/damon/admin/kdamonds"
#define DAMON_CTX DAMON "/0/contexts/0"
#define DAMON_SCHEME DAMON_CTX "/schemes/0"

static void write_ulong(const char *path, unsigned long val)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lu", val);
	write_file(path, buf);
}

/*
 * One kdamond over the physical range [@start, @end) (the test's pages),
 * sampling every 10 ms, aggregating every 100 ms, and migrating what it
 * has not seen accessed for 20 aggregations (2 s) to node 1: migrate_cold,
 * MR_DAMON, whole regions per migration.
 */
static void damon_start(unsigned long start, unsigned long end)
{
	write_file(DAMON "/nr_kdamonds", "1");
	write_file(DAMON "/0/contexts/nr_contexts", "1");
	write_file(DAMON_CTX "/operations", "paddr");
	write_file(DAMON_CTX "/monitoring_attrs/intervals/sample_us", "10000");
	write_file(DAMON_CTX "/monitoring_attrs/intervals/aggr_us", "100000");
	write_file(DAMON_CTX "/targets/nr_targets", "1");
	write_file(DAMON_CTX "/targets/0/regions/nr_regions", "1");
	write_ulong(DAMON_CTX "/targets/0/regions/0/start", start);
	write_ulong(DAMON_CTX "/targets/0/regions/0/end", end);
	write_file(DAMON_CTX "/schemes/nr_schemes", "1");
	write_file(DAMON_SCHEME "/action", "migrate_cold");
	write_file(DAMON_SCHEME "/target_nid", "1");
	/* Every limit written: the files start at 0, which matches nothing. */
	write_file(DAMON_SCHEME "/access_pattern/sz/min", "0");
	write_ulong(DAMON_SCHEME "/access_pattern/sz/max", ~0UL);
	write_file(DAMON_SCHEME "/access_pattern/nr_accesses/min", "0");
	write_file(DAMON_SCHEME "/access_pattern/nr_accesses/max", "0");
	write_file(DAMON_SCHEME "/access_pattern/age/min", "20");
	write_ulong(DAMON_SCHEME "/access_pattern/age/max", 0xffffffffUL);
	/*
	 * Only the test's cgroup's pages: the range also holds other tasks'
	 * memory, which must not move (nor compete for the migrator).
	 */
	write_file(DAMON_SCHEME "/ops_filters/nr_filters", "1");
	write_file(DAMON_SCHEME "/ops_filters/0/type", "memcg");
	write_file(DAMON_SCHEME "/ops_filters/0/memcg_path", "/tier");
	write_file(DAMON_SCHEME "/ops_filters/0/matching", "Y");
	write_file(DAMON_SCHEME "/ops_filters/0/allow", "Y");
	write_file(DAMON "/0/state", "on");
}

/* Stop the kdamond; the bytes its scheme applied to. */
static unsigned long damon_stop(void)
{
	unsigned long applied;

	write_file(DAMON "/0/state", "update_schemes_stats");
	applied = read_ulong(DAMON_SCHEME "/stats/sz_applied");
	printf("%s: DAMON migrate_cold: %lu regions (%lu bytes) tried, %lu (%lu bytes) applied, %lu bytes passed the memcg filter\n",
	       name, read_ulong(DAMON_SCHEME "/stats/nr_tried"),
	       read_ulong(DAMON_SCHEME "/stats/sz_tried"),
	       read_ulong(DAMON_SCHEME "/stats/nr_applied"), applied,
	       read_ulong(DAMON_SCHEME "/stats/sz_ops_filter_passed"));
	write_file(DAMON "/0/state", "off");
	write_file(DAMON "/nr_kdamonds", "0");
	return applied;
}

static void cold(size_t folio_kb, size_t len, const char *expect)
{
	unsigned long folio_pages = folio_kb * 1024 / page_size, on1 = 0;
	uint64_t *pfn, lo = ~0ULL, hi = 0;
	double start, deadline;
	struct counters a, b;
	char *buf;
	unsigned long applied;
	size_t i;

	join_cgroup();
	set_thp_size(folio_kb);
	buf = map_aligned(len, folio_kb * 1024);
	fill_on_node(buf, len, 0);
	check_nodes(buf, len, 0, "before DAMON");
	check_large_folios(buf, len, folio_kb, "before DAMON");
	pfn = page_pfns(buf, len);
	for (i = 0; i < len / page_size; i++) {
		lo = pfn[i] < lo ? pfn[i] : lo;
		hi = pfn[i] > hi ? pfn[i] : hi;
	}
	free(pfn);
	snapshot(&a);
	damon_start(lo * page_size, (hi + 1) * page_size);
	start = now();
	deadline = start + 60;
	while (now() < deadline) {
		on1 = pages_on(buf, len, 1);
		if (on1 >= len / page_size * 9 / 10)
			break;
		usleep(100000);
	}
	applied = damon_stop();
	snapshot(&b);
	printf("%s: %lu of %zu pages moved to node 1 by DAMON in %.1f s; pgmigrate_success +%lu\n",
	       name, on1, len / page_size, now() - start, b.migrated - a.migrated);
	check_bytes(buf, 0, len, "after DAMON migrate_cold");
	if (on1 < len / page_size * 9 / 10)
		fail("only %lu of %zu pages moved in 60 s", on1, len / page_size);
	if (applied < on1 * page_size)
		fail("DAMON applied its scheme to %lu bytes, %lu pages moved",
		     applied, on1);
	if (b.demoted != a.demoted)
		fail("%lu pages were demoted meanwhile: not DAMON's moves",
		     b.demoted - a.demoted);
	check_large_folios(buf, len, folio_kb, "after DAMON migrate_cold");
	check_offload(expect, &a, &b, on1 / folio_pages);
	printf("GUEST-TEST: PASS %s\n", name);
}

/*
 * One storm writer, until @deadline. A "churning" writer maps fresh
 * anonymous memory each pass, bound to node 0, writes it, checks it and
 * unmaps it: its allocations find node 0 full and reclaim it, demoting
 * (direct reclaim, and kswapd). The others keep their memory, anonymous or
 * a shmem file (@kind): they rewrite every word with the next
 * generation's value after checking the last one's, while their pages
 * are demoted and, being read, promoted back. Exit status 1 (after a
 * message) on a lost write.
 */
enum writer_kind { LONG_LIVED, CHURNING, SHMEM };

static const char *const writer_kinds[] = {
	[LONG_LIVED] = "long-lived",
	[CHURNING] = "churning on node 0",
	[SHMEM] = "long-lived shmem",
};

static char *map_shmem(int id, size_t len)
{
	char path[64];
	char *buf;
	int fd;

	snprintf(path, sizeof(path), "/dev/shm/tier_storm_%d", id);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, len))
		fail("%s: %s", path, strerror(errno));
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (buf == MAP_FAILED)
		fail("mmap %s: %s", path, strerror(errno));
	close(fd);
	unlink(path);
	return buf;
}

static void writer(int id, enum writer_kind kind, size_t folio_kb, size_t len,
		   double deadline)
{
	uint64_t *data = NULL, gen = 0, i, n = len / sizeof(*data);
	unsigned long on1 = 0;
	char *buf = NULL;

	while (now() < deadline) {
		if (kind == CHURNING || !buf) {
			buf = kind == SHMEM ? map_shmem(id, len) :
					      map_aligned(len, folio_kb * 1024);
			data = (uint64_t *)buf;
			if (kind == CHURNING)
				bind_to_node(0);
			for (i = 0; i < n; i++)
				data[i] = pattern(i) ^ gen;
			bind_to_node(-1);
		}
		for (i = 0; i < n; i++) {
			if (data[i] != (pattern(i) ^ gen)) {
				printf("%s: writer %d (%s), generation %llu: byte %llu is %#llx, want %#llx\n",
				       name, id, writer_kinds[kind],
				       (unsigned long long)gen,
				       (unsigned long long)(i * sizeof(*data)),
				       (unsigned long long)data[i],
				       (unsigned long long)(pattern(i) ^ gen));
				exit(1);
			}
			if (kind != CHURNING)
				data[i] = pattern(i) ^ (gen + 1);
		}
		gen++;
		if (kind == CHURNING) {
			on1 += pages_on(buf, len, 1);
			munmap(buf, len);
		}
	}
	if (kind != CHURNING)
		on1 = pages_on(buf, len, 1);
	printf("%s: writer %d (%s): %llu passes, %lu pages %s on node 1\n",
	       name, id, writer_kinds[kind], (unsigned long long)gen, on1,
	       kind == CHURNING ? "found, over all passes," : "at the end");
	exit(0);
}

/*
 * How long the writers may take to finish after the storm's end: 120 s,
 * or TIER_STORM_GRACE_S (the debug kernel, several times slower under TCG,
 * needs more; a deadlock is still caught, by the hung task detector too).
 */
static int storm_grace(void)
{
	const char *s = getenv("TIER_STORM_GRACE_S");

	return s && atoi(s) > 0 ? atoi(s) : 120;
}

/*
 * A storm that never ends is a deadlock: report it (with the blocked
 * tasks, sysrq-w) rather than leave it to the host's timeout.
 */
static void storm_stuck(int sig)
{
	static const char w = 'w';
	char msg[256];
	int fd, n;

	(void)sig;
	n = snprintf(msg, sizeof(msg),
		     "GUEST-TEST: FAIL %s: the writers did not finish %d s after the storm (blocked tasks in the kernel log)\n",
		     name, storm_grace());
	if (write(1, msg, n) < 0)
		_exit(1);
	fd = open("/proc/sysrq-trigger", O_WRONLY);
	if (fd >= 0 && write(fd, &w, 1) < 0)
		_exit(1);
	_exit(1);
}

/*
 * Writers of @len each, by turns long-lived, churning, shmem, churning:
 * together more than node 0 holds.
 */
static void storm(size_t folio_kb, size_t len, const char *expect, int writers,
		  int seconds)
{
	static const enum writer_kind kinds[] = { LONG_LIVED, CHURNING, SHMEM, CHURNING };
	struct counters a, b;
	double deadline;
	int i, status, bad = 0;
	pid_t pid;

	set_thp_size(folio_kb);
	snapshot(&a);
	deadline = now() + seconds;
	for (i = 0; i < writers; i++) {
		pid = fork();
		if (pid < 0)
			fail("fork: %s", strerror(errno));
		if (!pid)
			writer(i, kinds[i % 4], folio_kb, len, deadline);
	}
	signal(SIGALRM, storm_stuck);
	alarm(seconds + storm_grace());
	for (i = 0; i < writers; i++) {
		if (wait(&status) < 0)
			fail("wait: %s", strerror(errno));
		bad += !WIFEXITED(status) || WEXITSTATUS(status);
	}
	alarm(0);
	snapshot(&b);
	printf("%s: pgdemote_kswapd +%lu, pgdemote_direct +%lu, allocstall +%lu, pgpromote_success +%lu, pgmigrate_success +%lu\n",
	       name, b.demoted_kswapd - a.demoted_kswapd,
	       b.demoted_direct - a.demoted_direct, b.allocstall - a.allocstall,
	       b.promoted - a.promoted, b.migrated - a.migrated);
	if (bad)
		fail("%d of %d writers lost data or died", bad, writers);
	/* Both reclaimers demoted, and tasks stalled in direct reclaim. */
	if (b.demoted_kswapd == a.demoted_kswapd ||
	    b.demoted_direct == a.demoted_direct || b.allocstall == a.allocstall)
		fail("the storm did not make both kswapd and direct reclaim demote");
	/*
	 * And in volume: an eighth of one writer's memory at least (the
	 * storms demote about 40k to 350k pages in 20 s here, fewer when the
	 * host is busy, and fewer on the debug kernel).
	 */
	if (b.demoted - a.demoted < len / page_size / 8)
		fail("only %lu pages were demoted: the storm did not fill node 0",
		     b.demoted - a.demoted);
	if (b.promoted == a.promoted)
		fail("nothing was promoted");
	/*
	 * With small pages and the offload narrowed to demotion, reclaim's
	 * demotions are the migrator's batches: nearly every page kswapd and
	 * direct reclaim demoted went through it (copied, or declined and
	 * copied by the CPU after it; a folio with an extra reference is left
	 * out of the batch).
	 */
	if (folio_kb == 4 && strcmp(expect, "cpu")) {
		unsigned long offered = (b.copied - a.copied) + (b.fallback - a.fallback);
		unsigned long reclaimed = (b.demoted_kswapd - a.demoted_kswapd) +
					  (b.demoted_direct - a.demoted_direct);

		if (offered < reclaimed / 100 * 95)
			fail("the migrator was offered %lu folios, reclaim demoted %lu pages",
			     offered, reclaimed);
	}
	check_offload(expect, &a, &b, 0);
	printf("GUEST-TEST: PASS %s\n", name);
}

int main(int argc, char **argv)
{
	size_t folio_kb, len;
	const char *mode, *expect;

	if (argc < 6)
		return fprintf(stderr, "usage: %s NAME demote|promote|compact|cold|storm FOLIO_KB TOTAL_KB cpu|offload|fallback|some [aged | WRITERS SECONDS]\n",
			       argv[0]), 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	name = argv[1];
	mode = argv[2];
	folio_kb = strtoul(argv[3], NULL, 0);
	len = strtoul(argv[4], NULL, 0) * 1024;
	expect = argv[5];
	page_size = sysconf(_SC_PAGESIZE);
	if (!folio_kb || len % (folio_kb * 1024) || len % PMD_SIZE)
		fail("TOTAL_KB must be a multiple of FOLIO_KB and of 2048");
	if (!strcmp(mode, "demote"))
		demote(folio_kb, len, expect, argc > 6 && !strcmp(argv[6], "aged"));
	else if (!strcmp(mode, "promote"))
		promote(folio_kb, len, expect);
	else if (!strcmp(mode, "compact"))
		compact(folio_kb, len, expect);
	else if (!strcmp(mode, "cold"))
		cold(folio_kb, len, expect);
	else if (!strcmp(mode, "storm") && argc == 8)
		storm(folio_kb, len, expect, atoi(argv[6]), atoi(argv[7]));
	else
		fail("unknown mode '%s' or wrong arguments", mode);
	return 0;
}
