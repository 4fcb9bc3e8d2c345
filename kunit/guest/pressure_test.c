// SPDX-License-Identifier: GPL-2.0
/*
 * pressure_test: migrate to a node that is nearly full, so that allocating
 * destination folios fails part-way through the batches.
 *
 *   pressure_test NAME FOLIO_KB TOTAL_KB [OFFLOAD]
 *
 * A child process fills node 1 (MPOL_BIND) until only TOTAL_KB / 8 is free
 * above the high watermarks.
 * TOTAL_KB of anonymous memory in folios of FOLIO_KB is filled on node 0 and
 * moved to node 1 with move_pages(), one address per folio: some of it must
 * arrive and some must not (the destination allocations fail: -ENOMEM,
 * large folios split and retried as small ones). Then every byte must be
 * intact wherever its page ended up, nothing may stay isolated
 * (nr_isolated_anon), and pgmigrate_fail must have grown. The child goes
 * away and the same memory is moved again: now all of it must arrive, every
 * byte intact - no page is left locked or unmovable by the failures - and
 * node 1's free memory must come back once everything is freed (measured
 * with the kernel's caches of freed memory emptied: see settle()).
 *
 * With OFFLOAD ("copied"), the registered migrator must have copied folios
 * in this run.
 */
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "guest.h"

/*
 * Node 1's free pages in bytes, from /proc/zoneinfo, with those in per-CPU
 * lists if @pcp; with @reserved, also what its zones keep from user
 * allocations: the high watermarks and the largest lowmem reserve of each
 * zone.
 */
static unsigned long node1_free(int pcp, unsigned long *reserved)
{
	char line[256], *p;
	unsigned long pages, free = 0, keep = 0, most;
	int in_node1 = 0, node;
	FILE *f = fopen("/proc/zoneinfo", "r");

	if (!f)
		fail("open /proc/zoneinfo: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Node %d, zone", &node) == 1) {
			in_node1 = node == 1;
		} else if (!in_node1) {
			continue;
		} else if (sscanf(line, " pages free %lu", &pages) == 1 ||
			   (pcp && sscanf(line, " count: %lu", &pages) == 1)) {
			free += pages;
		} else if (sscanf(line, " high %lu", &pages) == 1) {
			keep += pages;
		} else if ((p = strstr(line, "protection: ("))) {
			char *end;

			for (most = 0, p += 13; *p && *p != ')'; p = end + 1) {
				pages = strtoul(p, &end, 10);
				if (end == p)
					break;
				most = pages > most ? pages : most;
			}
			keep += most;
		}
	}
	fclose(f);
	if (!keep)
		fail("no zone of node 1 in /proc/zoneinfo");
	if (reserved)
		*reserved = keep * page_size;
	return free * page_size;
}

/*
 * Fork a process holding node 1's free memory but what the zones keep and
 * @leave bytes (and the page tables it needs there).
 */
static pid_t fill_node1(unsigned long leave, int *ready_fd)
{
	unsigned long nodemask = 2, keep, free = node1_free(0, &keep), len, i;
	int fds[2];
	pid_t pid;
	char *p;

	if (free <= keep + leave + free / 256)
		fail("node 1 has only %lu KiB free", free >> 10);
	len = free - keep - leave - free / 256;
	if (pipe(fds))
		fail("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		fail("fork: %s", strerror(errno));
	if (pid) {
		close(fds[1]);
		*ready_fd = fds[0];
		return pid;
	}
	close(fds[0]);
	/* Gone with the test, whichever way it ends. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() == 1)
		_exit(1);
	if (syscall(SYS_set_mempolicy, MPOL_BIND, &nodemask, 8 * sizeof(nodemask)))
		_exit(1);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || madvise(p, len, MADV_NOHUGEPAGE))
		_exit(1);
	for (i = 0; i < len; i += page_size)
		p[i] = 1;
	if (write(fds[1], "r", 1) != 1)
		_exit(1);
	pause();
	_exit(0);
}

/* Pages of [buf, buf + len) on node 0 and on node 1. */
static void count_nodes(char *buf, size_t len, unsigned long *on0, unsigned long *on1)
{
	unsigned long i, n = len / page_size;
	int *status = page_nodes(buf, len, "after moving to a full node");

	*on0 = *on1 = 0;
	for (i = 0; i < n; i++) {
		if (status[i] == 0)
			(*on0)++;
		else if (status[i] == 1)
			(*on1)++;
		else
			fail("page %lu: status %d", i, status[i]);
	}
	free(status);
}

/*
 * move_pages() to node 1 of every @step bytes of [buf, buf + len): what it
 * returned (the folios it did not move), or -1 if it failed with ENOMEM.
 */
static long move_all(char *buf, size_t len, size_t step)
{
	unsigned long i, n = len / step;
	void **pages = calloc(n, sizeof(*pages));
	int *nodes = calloc(n, sizeof(*nodes));
	int *status = calloc(n, sizeof(*status));
	long ret;

	if (!pages || !nodes || !status)
		fail("out of memory");
	for (i = 0; i < n; i++) {
		pages[i] = buf + i * step;
		nodes[i] = 1;
	}
	ret = move_pages(n, pages, nodes, status, MPOL_MF_MOVE);
	/* -ENOMEM: a batch of small folios found no room and ended the call. */
	if (ret < 0 && errno != ENOMEM)
		fail("move_pages: %s", strerror(errno));
	free(pages);
	free(nodes);
	free(status);
	return ret;
}

/*
 * Empties what the kernel keeps of freed memory for reuse, so that node 1's
 * free memory shows what is allocated: every slab cache is shrunk (its
 * empty slabs freed, with what the per-CPU lists hold; on a KASAN kernel,
 * kmem_cache_shrink() first releases the freed objects of the cache that
 * the quarantine holds back, which alone can be megabytes after the
 * migrations of this test); then a pause for what RCU frees after a grace
 * period (page tables, slab objects).
 */
static void settle(void)
{
	char path[512];
	struct dirent *e;
	DIR *d = opendir("/sys/kernel/slab");

	if (!d)
		fail("open /sys/kernel/slab: %s", strerror(errno));
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/kernel/slab/%s/shrink", e->d_name);
		/* Aliases of one cache shrink it again: harmless. */
		try_write_file(path, "1");
	}
	closedir(d);
	usleep(200 * 1000);
}

int main(int argc, char **argv)
{
	unsigned long free_before, free_after, on0, on1, fails, copied, isolated;
	size_t folio, total;
	int ready, st;
	long left;
	char c;
	char *buf;
	pid_t hog;

	name = argc > 1 ? argv[1] : "pressure_test";
	if (argc < 4)
		fail("usage: pressure_test NAME FOLIO_KB TOTAL_KB [copied]");
	page_size = sysconf(_SC_PAGESIZE);
	folio = strtoul(argv[2], NULL, 10) << 10;
	total = strtoul(argv[3], NULL, 10) << 10;
	if (!folio || total < 4 * folio || total % folio)
		fail("bad sizes");
	set_thp_size(folio >> 10);

	buf = map_aligned(total, folio);
	/* Not shared with the filler: move_pages() leaves shared pages alone. */
	if (madvise(buf, total, MADV_DONTFORK))
		fail("madvise(MADV_DONTFORK): %s", strerror(errno));
	fill_on_node(buf, total, 0);
	settle();
	free_before = node1_free(1, NULL);
	write_file("/proc/sys/vm/stat_refresh", "1");
	isolated = vmstat("nr_isolated_anon");
	fails = vmstat("pgmigrate_fail");
	copied = vmstat("migrate_offload_folios_copied");

	/*
	 * The filler stays above the high watermarks (no OOM, no reclaim),
	 * and leaves an eighth of what is moved: with what migration may
	 * take below the high watermarks and from per-CPU lists, part of it
	 * arrives, not all.
	 */
	hog = fill_node1(total / 8, &ready);
	if (read(ready, &c, 1) != 1) {
		waitpid(hog, &st, 0);
		fail("the process filling node 1 died (status %#x)", st);
	}

	left = move_all(buf, total, folio);
	count_nodes(buf, total, &on0, &on1);
	printf("%s: node 1 full: move_pages() returned %ld (-1: ENOMEM) for %zu pages; %lu on node 0, %lu on node 1; pgmigrate_fail +%lu\n",
	       name, left, total / page_size, on0, on1, vmstat("pgmigrate_fail") - fails);
	check_bytes(buf, 0, total, "after moving to a full node");
	if (!on1)
		fail("nothing reached node 1");
	if (!on0 || !left)
		fail("everything moved (move_pages() returned %ld): node 1 was not full", left);
	if (vmstat("pgmigrate_fail") == fails)
		fail("pgmigrate_fail did not grow");
	/* Fold the per-CPU counter deltas first. */
	write_file("/proc/sys/vm/stat_refresh", "1");
	if (vmstat("nr_isolated_anon") != isolated)
		fail("nr_isolated_anon is %lu, was %lu: pages left isolated",
		     vmstat("nr_isolated_anon"), isolated);

	kill(hog, SIGKILL);
	waitpid(hog, &st, 0);
	/*
	 * Every page: large folios that found no room were split, and
	 * move_pages() moves a folio (and says -EBUSY for its other pages)
	 * at its first address.
	 */
	left = move_all(buf, total, page_size);
	if (left)
		fail("with room on node 1, %ld pages still did not move", left);
	check_nodes(buf, total, 1, "after making room");
	check_bytes(buf, 0, total, "after making room");
	if (argc > 4 && !strcmp(argv[4], "copied") &&
	    vmstat("migrate_offload_folios_copied") == copied)
		fail("the migrator copied nothing");

	munmap(buf, total);
	/*
	 * What is still in use comes and goes (page tables, slab of other
	 * tasks): allow 8 MiB, and give freeing a few tries to finish.
	 */
	free_after = node1_free(1, NULL);
	for (int i = 0;; i++) {
		unsigned long unsettled = free_after;

		settle();
		free_after = node1_free(1, NULL);
		if (!i)
			printf("%s: node 1 free: %lu KiB before, %lu KiB after freeing everything, %lu KiB with the caches emptied\n",
			       name, free_before >> 10, unsettled >> 10, free_after >> 10);
		if (free_after + (8UL << 20) >= free_before)
			break;
		if (i == 4)
			fail("node 1 has %lu KiB free after freeing everything, %lu KiB before",
			     free_after >> 10, free_before >> 10);
	}
	printf("GUEST-TEST: PASS %s\n", name);
	return 0;
}
