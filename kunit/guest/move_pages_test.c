// SPDX-License-Identifier: GPL-2.0
/*
 * move_pages_test: move anonymous memory from node 0 to node 1 with
 * move_pages(2) and check that it arrived whole.
 *
 *   move_pages_test NAME FOLIO_KB TOTAL_KB [OFFLOAD]
 *
 * Maps TOTAL_KB of anonymous memory bound to node 0, backed by folios of
 * FOLIO_KB: 4 means small pages (MADV_NOHUGEPAGE); a larger size is enabled
 * alone in /sys/kernel/mm/transparent_hugepage/hugepages-<N>kB/ and asked for
 * with MADV_HUGEPAGE, and its stats/anon_fault_alloc must show that every
 * folio was allocated at that size. The memory is filled with a pattern, and moves it to node 1 passing one address per folio
 * (move_pages() isolates a large folio at its first address). It then checks
 * every page's node with move_pages(..., NULL, status), every byte, and that
 * /proc/vmstat's pgmigrate_success grew by exactly the number of pages moved
 * (thp_migration_success by the number of PMD-sized folios).
 *
 * With OFFLOAD, the copy-offload counters of /proc/vmstat must also show
 * what the registered migrator should have done with the folios:
 *   none      no batch was offloaded;
 *   all       every folio was copied by the migrator, none fell back;
 *   one       the migrator copied exactly one folio per batch (it was told
 *             to fail after one) and the CPU copied the rest;
 *   fallback  batches went to the migrator, which copied nothing, and the
 *             CPU copied every folio.
 *
 * Prints one line, "GUEST-TEST: PASS NAME" or "GUEST-TEST: FAIL NAME: why",
 * and exits 0 or 1. No libnuma in the guest: raw system calls.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MPOL_DEFAULT	0
#define MPOL_BIND	2
#define MPOL_MF_MOVE	(1 << 1)
#define PMD_SIZE	(2UL << 20)

static const char *name;
static long page_size;

static void fail(const char *fmt, ...)
{
	va_list ap;

	printf("GUEST-TEST: FAIL %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(1);
}

static long move_pages(unsigned long count, void **pages, const int *nodes,
		       int *status, int flags)
{
	return syscall(SYS_move_pages, 0, count, pages, nodes, status, flags);
}

static unsigned long vmstat(const char *key)
{
	char line[256];
	size_t len = strlen(key);
	FILE *f = fopen("/proc/vmstat", "r");

	if (!f)
		fail("open /proc/vmstat: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, len) && line[len] == ' ') {
			fclose(f);
			return strtoul(line + len + 1, NULL, 10);
		}
	}
	fclose(f);
	fail("no %s in /proc/vmstat", key);
	return 0;
}

#define THP_DIR "/sys/kernel/mm/transparent_hugepage"

static int try_write_file(const char *path, const char *val)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	if (fputs(val, f) < 0) {
		fclose(f);
		return -1;
	}
	return fclose(f);
}

static void write_file(const char *path, const char *val)
{
	if (try_write_file(path, val))
		fail("write %s to %s: %s", val, path, strerror(errno));
}

static unsigned long read_ulong(const char *path)
{
	unsigned long val;
	FILE *f = fopen(path, "r");

	if (!f || fscanf(f, "%lu", &val) != 1)
		fail("read %s: %s", path, strerror(errno));
	fclose(f);
	return val;
}

/* Allow large folios of @kb only (none for 4), for MADV_HUGEPAGE areas. */
static void set_thp_size(size_t kb)
{
	char path[512], want[64];
	struct dirent *d;
	DIR *dir = opendir(THP_DIR);
	int found = kb == 4;

	if (!dir)
		fail("no %s: %s", THP_DIR, strerror(errno));
	snprintf(want, sizeof(want), "hugepages-%zukB", kb);
	write_file(THP_DIR "/enabled", "madvise");
	while ((d = readdir(dir))) {
		if (strncmp(d->d_name, "hugepages-", 10))
			continue;
		snprintf(path, sizeof(path), THP_DIR "/%s/enabled", d->d_name);
		if (!strcmp(d->d_name, want)) {
			write_file(path, "madvise");
			found = 1;
		} else if (try_write_file(path, "never") && errno != EACCES) {
			/* Sizes anonymous memory cannot use are read-only. */
			fail("write never to %s: %s", path, strerror(errno));
		}
	}
	closedir(dir);
	if (!found)
		fail("the kernel has no %s", want);
}

static uint64_t pattern(size_t word)
{
	return (word + 1) * 0x9e3779b97f4a7c15ULL;
}

/* Check that every page of [buf, buf + len) is on @node. */
static void check_nodes(char *buf, size_t len, int node, const char *when)
{
	unsigned long i, n = len / page_size;
	void **pages = calloc(n, sizeof(*pages));
	int *status = calloc(n, sizeof(*status));

	if (!pages || !status)
		fail("out of memory");
	for (i = 0; i < n; i++)
		pages[i] = buf + i * page_size;
	if (move_pages(n, pages, NULL, status, 0))
		fail("%s: move_pages(query): %s", when, strerror(errno));
	for (i = 0; i < n; i++)
		if (status[i] != node)
			fail("%s: page %lu is on node %d, want %d", when, i,
			     status[i], node);
	free(pages);
	free(status);
}

struct offload_counters {
	unsigned long batch, copied, fallback;
};

static void offload_snapshot(struct offload_counters *c)
{
	c->batch = vmstat("pgmigrate_offload_batch");
	c->copied = vmstat("pgmigrate_offload_copied");
	c->fallback = vmstat("pgmigrate_offload_fallback");
}

/* Check the offload counters against what @expect says should happen. */
static void check_offload(const char *expect, const struct offload_counters *before,
			  unsigned long nr_folios)
{
	struct offload_counters now, d;
	unsigned long want_copied, want_fallback;

	offload_snapshot(&now);
	d.batch = now.batch - before->batch;
	d.copied = now.copied - before->copied;
	d.fallback = now.fallback - before->fallback;

	if (!strcmp(expect, "none")) {
		if (d.batch || d.copied || d.fallback)
			fail("offloaded %lu batches (%lu copied, %lu fell back), want none",
			     d.batch, d.copied, d.fallback);
		return;
	}
	if (!d.batch || d.batch > nr_folios)
		fail("%lu batches offloaded for %lu folios", d.batch, nr_folios);
	if (!strcmp(expect, "all")) {
		want_copied = nr_folios;
	} else if (!strcmp(expect, "one")) {
		want_copied = d.batch;
	} else if (!strcmp(expect, "fallback")) {
		want_copied = 0;
	} else {
		fail("unknown offload expectation '%s'", expect);
		return;
	}
	want_fallback = nr_folios - want_copied;
	if (d.copied != want_copied || d.fallback != want_fallback)
		fail("%lu batches: %lu folios copied by the migrator and %lu fell back, want %lu and %lu",
		     d.batch, d.copied, d.fallback, want_copied, want_fallback);
}

int main(int argc, char **argv)
{
	unsigned long nodemask = 1, i, nr_folios, nr_pages, pmd_folios;
	unsigned long success, thp_success, faults = 0;
	struct offload_counters before;
	struct timespec t0, t1;
	double secs;
	char stat_path[256];
	size_t folio_size, len, words;
	uint64_t *data;
	void **addrs;
	int *nodes, *status;
	char *map, *buf;

	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: %s NAME FOLIO_KB TOTAL_KB [none|all|one|fallback]\n",
			argv[0]);
		return 2;
	}
	name = argv[1];
	folio_size = strtoul(argv[2], NULL, 0) << 10;
	len = strtoul(argv[3], NULL, 0) << 10;
	page_size = sysconf(_SC_PAGESIZE);
	if (folio_size < (size_t)page_size || len % folio_size)
		fail("bad sizes: folio %zu, total %zu", folio_size, len);
	nr_folios = len / folio_size;
	nr_pages = len / page_size;
	pmd_folios = folio_size == PMD_SIZE ? nr_folios : 0;

	set_thp_size(folio_size >> 10);
	snprintf(stat_path, sizeof(stat_path),
		 THP_DIR "/hugepages-%zukB/stats/anon_fault_alloc", folio_size >> 10);
	if (folio_size > (size_t)page_size)
		faults = read_ulong(stat_path);

	/* Aligned to a PMD so that large folios of every size can be used. */
	map = mmap(NULL, len + PMD_SIZE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		fail("mmap: %s", strerror(errno));
	buf = (char *)(((uintptr_t)map + PMD_SIZE - 1) & ~(PMD_SIZE - 1));
	if (madvise(buf, len, folio_size > (size_t)page_size ?
		    MADV_HUGEPAGE : MADV_NOHUGEPAGE))
		fail("madvise: %s", strerror(errno));

	if (syscall(SYS_set_mempolicy, MPOL_BIND, &nodemask, 8 * sizeof(nodemask)))
		fail("set_mempolicy(node 0): %s", strerror(errno));
	data = (uint64_t *)buf;
	words = len / sizeof(*data);
	for (i = 0; i < words; i++)
		data[i] = pattern(i);
	if (syscall(SYS_set_mempolicy, MPOL_DEFAULT, NULL, 0))
		fail("set_mempolicy(default): %s", strerror(errno));
	check_nodes(buf, len, 0, "before");
	if (folio_size > (size_t)page_size) {
		faults = read_ulong(stat_path) - faults;
		if (faults != nr_folios)
			fail("%lu folios of %zu KiB were allocated, want %lu",
			     faults, folio_size >> 10, nr_folios);
	}

	addrs = calloc(nr_folios, sizeof(*addrs));
	nodes = calloc(nr_folios, sizeof(*nodes));
	status = calloc(nr_folios, sizeof(*status));
	if (!addrs || !nodes || !status)
		fail("out of memory");
	for (i = 0; i < nr_folios; i++) {
		addrs[i] = buf + i * folio_size;
		nodes[i] = 1;
	}

	if (argc == 5)
		offload_snapshot(&before);
	success = vmstat("pgmigrate_success");
	thp_success = vmstat("thp_migration_success");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (move_pages(nr_folios, addrs, nodes, status, MPOL_MF_MOVE))
		fail("move_pages(to node 1): %s", strerror(errno));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	for (i = 0; i < nr_folios; i++)
		if (status[i] != 1)
			fail("folio %lu: status %d after the move", i, status[i]);
	success = vmstat("pgmigrate_success") - success;
	thp_success = vmstat("thp_migration_success") - thp_success;

	check_nodes(buf, len, 1, "after");
	for (i = 0; i < words; i++)
		if (data[i] != pattern(i))
			fail("byte %zu changed: %#llx, want %#llx", i * sizeof(*data),
			     (unsigned long long)data[i],
			     (unsigned long long)pattern(i));
	if (success != nr_pages)
		fail("pgmigrate_success grew by %lu, want %lu", success, nr_pages);
	if (thp_success != pmd_folios)
		fail("thp_migration_success grew by %lu, want %lu", thp_success,
		     pmd_folios);
	if (argc == 5)
		check_offload(argv[4], &before, nr_folios);

	secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("GUEST-TEST: PASS %s (%lu folios of %zu KiB, moved at %.3f GB/s)\n",
	       name, nr_folios, folio_size >> 10, len / secs / 1e9);
	return 0;
}
