/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the guest userspace tests: result lines, /proc and /sys
 * access, the mTHP size controls, raw NUMA system calls (there is no libnuma
 * in the guest) and the data pattern the tests write and compare.
 *
 * Every test sets @name first; fail() prints "GUEST-TEST: FAIL name: why"
 * and exits 1, which is how scripts/test.sh counts a failure. skip() prints
 * "GUEST-TEST: SKIP name: why" and exits 0: scripts/test.sh counts it apart
 * and lists it, never as a pass. Skip only when the machine cannot give the
 * test what it needs (memory, say), never when the kernel misbehaves.
 */
#ifndef GUEST_H
#define GUEST_H

#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MPOL_DEFAULT	0
#define MPOL_BIND	2
#define MPOL_MF_STRICT	(1 << 0)
#define MPOL_MF_MOVE	(1 << 1)
#define MPOL_MF_MOVE_ALL (1 << 2)
#define PMD_SIZE	(2UL << 20)
#define THP_DIR		"/sys/kernel/mm/transparent_hugepage"

/* /proc/kpageflags bits and /proc/self/pagemap fields. */
#define KPF_COMPOUND_HEAD	15
#define KPF_COMPOUND_TAIL	16
#define KPF_THP			22
#define PM_PRESENT		(1ULL << 63)
#define PM_PFN_MASK		((1ULL << 55) - 1)

static const char *name;
static long page_size;

static inline void __attribute__((format(printf, 1, 2), noreturn))
fail(const char *fmt, ...)
{
	va_list ap;

	printf("GUEST-TEST: FAIL %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(1);
}

static inline void __attribute__((format(printf, 1, 2), noreturn))
skip(const char *fmt, ...)
{
	va_list ap;

	printf("GUEST-TEST: SKIP %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(0);
}

/*
 * A test that hangs is ended with SIGTERM (grun's timeout, testlib.sh):
 * fail, and exit, so that the exit handlers put back what the test changed
 * (the mTHP controls, KSM's settings, offlined memory blocks, the 1 GiB
 * pool) for the tests after it.
 */
static void guest_term(int sig)
{
	printf("GUEST-TEST: FAIL %s: killed by signal %d (timed out)\n",
	       name ? name : "?", sig);
	exit(1);
}

/* The test's own process, not a child it forked. */
static pid_t guest_main_pid;

static void __attribute__((constructor)) guest_catch_term(void)
{
	guest_main_pid = getpid();
	signal(SIGTERM, guest_term);
}

static inline long move_pages(unsigned long count, void **pages,
			      const int *nodes, int *status, int flags)
{
	return syscall(SYS_move_pages, 0, count, pages, nodes, status, flags);
}

/* The number after "@key@sep" on a line of @path (/proc/vmstat, meminfo). */
static inline unsigned long proc_value(const char *path, const char *key,
				       char sep)
{
	char line[256];
	size_t len = strlen(key);
	FILE *f = fopen(path, "r");

	if (!f)
		fail("open %s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, len) && line[len] == sep) {
			fclose(f);
			return strtoul(line + len + 1, NULL, 10);
		}
	}
	fclose(f);
	fail("no %s in %s", key, path);
}

static inline unsigned long vmstat(const char *key)
{
	return proc_value("/proc/vmstat", key, ' ');
}

static inline int try_write_file(const char *path, const char *val)
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

static inline void write_file(const char *path, const char *val)
{
	if (try_write_file(path, val))
		fail("write %s to %s: %s", val, path, strerror(errno));
}

static inline unsigned long read_ulong(const char *path)
{
	unsigned long val;
	FILE *f = fopen(path, "r");

	if (!f || fscanf(f, "%lu", &val) != 1)
		fail("read %s: %s", path, strerror(errno));
	fclose(f);
	return val;
}

/* Allow large folios of @kb only (none for 4), for MADV_HUGEPAGE areas. */
static inline void set_thp_size(size_t kb)
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

/*
 * The mTHP size controls thp_only_size() changed, with what they held:
 * thp_restore_sizes() writes them back when the program exits (fail() and
 * skip() too; a forked child must leave with _exit()).
 */
#define THP_MAX_SAVED	32
static struct {
	char path[300];
	char mode[16];
} thp_saved[THP_MAX_SAVED];
static int thp_nr_saved, thp_restore_registered;

static inline void thp_restore_sizes(void)
{
	/* A forked child that fail()s: the parent restores, when it ends. */
	if (getpid() != guest_main_pid)
		return;
	while (thp_nr_saved > 0) {
		thp_nr_saved--;
		try_write_file(thp_saved[thp_nr_saved].path,
			       thp_saved[thp_nr_saved].mode);
	}
}

/* The index of @path in thp_saved[], or -1. */
static inline int thp_saved_index(const char *path)
{
	int i;

	for (i = 0; i < thp_nr_saved; i++)
		if (!strcmp(thp_saved[i].path, path))
			return i;
	return -1;
}

/* The selected mode of a THP control: the word in brackets. */
static inline int thp_read_mode(const char *path, char *mode, size_t len)
{
	char line[256], *start, *end;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (!fgets(line, sizeof(line), f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	start = strchr(line, '[');
	end = start ? strchr(start, ']') : NULL;
	if (!end || (size_t)(end - start) > len)
		return -1;
	memcpy(mode, start + 1, end - start - 1);
	mode[end - start - 1] = '\0';
	return 0;
}

/*
 * Allow anonymous large folios of @kb only, in @mode ("always": on every
 * fault, whatever madvise() said), every other size "never", until the
 * program exits; then every control goes back to what it was.
 */
static inline void thp_only_size(size_t kb, const char *mode)
{
	char path[300], want[64], old[16];
	struct dirent *d;
	DIR *dir = opendir(THP_DIR);
	const char *val;
	int found = 0, is_want;

	if (!dir)
		fail("no %s: %s", THP_DIR, strerror(errno));
	if (!thp_restore_registered) {
		if (atexit(thp_restore_sizes))
			fail("atexit failed");
		thp_restore_registered = 1;
	}
	snprintf(want, sizeof(want), "hugepages-%zukB", kb);
	while ((d = readdir(dir))) {
		if (strncmp(d->d_name, "hugepages-", 10))
			continue;
		snprintf(path, sizeof(path), THP_DIR "/%s/enabled", d->d_name);
		is_want = !strcmp(d->d_name, want);
		val = is_want ? mode : "never";
		found |= is_want;
		if (thp_read_mode(path, old, sizeof(old))) {
			/* A size anonymous memory cannot use (8K on x86). */
			if (!is_want)
				continue;
			fail("read the mode of %s", path);
		}
		if (!strcmp(old, val))
			continue;
		if (thp_saved_index(path) < 0 && thp_nr_saved == THP_MAX_SAVED)
			fail("more than %d mTHP sizes", THP_MAX_SAVED);
		if (try_write_file(path, val)) {
			/* Sizes anonymous memory cannot use are read-only. */
			if (errno == EACCES && !is_want)
				continue;
			fail("write %s to %s: %s", val, path, strerror(errno));
		}
		/* Called again, keep what the control held first. */
		if (thp_saved_index(path) >= 0)
			continue;
		snprintf(thp_saved[thp_nr_saved].path,
			 sizeof(thp_saved[thp_nr_saved].path), "%s", path);
		snprintf(thp_saved[thp_nr_saved].mode,
			 sizeof(thp_saved[thp_nr_saved].mode), "%s", old);
		thp_nr_saved++;
	}
	closedir(dir);
	if (!found)
		fail("the kernel has no %s", want);
}

/* A signed number from @path (a module parameter); -1 if it cannot. */
static inline int try_read_long(const char *path, long *val)
{
	FILE *f = fopen(path, "r");
	int ok;

	if (!f)
		return -1;
	ok = fscanf(f, "%ld", val) == 1;
	fclose(f);
	return ok ? 0 : -1;
}

/*
 * Map @len bytes of anonymous memory aligned to a PMD, so that folios of
 * every size fit, asking for large folios if @folio_size is above a page.
 */
static inline char *map_aligned(size_t len, size_t folio_size)
{
	char *map, *buf;

	map = mmap(NULL, len + PMD_SIZE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		fail("mmap: %s", strerror(errno));
	buf = (char *)(((uintptr_t)map + PMD_SIZE - 1) & ~(PMD_SIZE - 1));
	if (madvise(buf, len, folio_size > (size_t)page_size ?
		    MADV_HUGEPAGE : MADV_NOHUGEPAGE))
		fail("madvise: %s", strerror(errno));
	return buf;
}

static inline uint64_t pattern(size_t word)
{
	return (word + 1) * 0x9e3779b97f4a7c15ULL;
}

/*
 * Bind the task's allocations (anonymous memory, page cache) to @node, or
 * go back to the default policy if @node is negative.
 */
static inline void bind_to_node(int node)
{
	unsigned long nodemask;

	if (node < 0) {
		if (syscall(SYS_set_mempolicy, MPOL_DEFAULT, NULL, 0))
			fail("set_mempolicy(default): %s", strerror(errno));
		return;
	}
	nodemask = 1UL << node;
	if (syscall(SYS_set_mempolicy, MPOL_BIND, &nodemask, 8 * sizeof(nodemask)))
		fail("set_mempolicy(node %d): %s", node, strerror(errno));
}

/* Fault [buf, buf + len) in on @node, filled with pattern(). */
static inline void fill_on_node(char *buf, size_t len, int node)
{
	uint64_t *data = (uint64_t *)buf;
	size_t i;

	bind_to_node(node);
	for (i = 0; i < len / sizeof(*data); i++)
		data[i] = pattern(i);
	bind_to_node(-1);
}

/*
 * Check [buf + off, buf + off + len) of a buffer filled by fill_on_node()
 * from its start: every word still holds its pattern.
 */
static inline void check_bytes(const char *buf, size_t off, size_t len,
			       const char *when)
{
	const uint64_t *data = (const uint64_t *)buf;
	size_t i;

	for (i = off / sizeof(*data); i < (off + len) / sizeof(*data); i++)
		if (data[i] != pattern(i))
			fail("%s: byte %zu changed: %#llx, want %#llx", when,
			     i * sizeof(*data), (unsigned long long)data[i],
			     (unsigned long long)pattern(i));
}

/*
 * The node of every page of [buf, buf + len) (or a negative errno), from
 * move_pages(..., NULL, status): an array the caller frees.
 */
static inline int *page_nodes(char *buf, size_t len, const char *when)
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
	free(pages);
	return status;
}

/* The pfn of each of the @n pages from @buf, into @pfn (0: not present). */
static inline void read_pfns(char *buf, size_t n, uint64_t *pfn)
{
	int fd = open("/proc/self/pagemap", O_RDONLY);
	size_t i;

	if (fd < 0)
		fail("open pagemap: %s", strerror(errno));
	if (pread(fd, pfn, n * sizeof(*pfn),
		  (uintptr_t)buf / page_size * sizeof(*pfn)) != (ssize_t)(n * sizeof(*pfn)))
		fail("read pagemap: %s", strerror(errno));
	for (i = 0; i < n; i++)
		pfn[i] = pfn[i] & PM_PRESENT ? pfn[i] & PM_PFN_MASK : 0;
	close(fd);
}

/* The pfn of every page of [buf, buf + len), in a new array (0: not present). */
static inline uint64_t *page_pfns(char *buf, size_t len)
{
	uint64_t *pfn = calloc(len / page_size, sizeof(*pfn));

	if (!pfn)
		fail("out of memory");
	read_pfns(buf, len / page_size, pfn);
	return pfn;
}

/* How many pages of [buf, buf + len) are on @node. */
static inline unsigned long pages_on(char *buf, size_t len, int node)
{
	int *status = page_nodes(buf, len, "counting pages");
	unsigned long i, n = 0;

	for (i = 0; i < len / page_size; i++)
		n += status[i] == node;
	free(status);
	return n;
}

/* Check that every page of [buf, buf + len) is on @node. */
static inline void check_nodes(char *buf, size_t len, int node, const char *when)
{
	unsigned long i, n = len / page_size;
	int *status = page_nodes(buf, len, when);

	for (i = 0; i < n; i++)
		if (status[i] != node)
			fail("%s: page %lu is on node %d, want %d", when, i,
			     status[i], node);
	free(status);
}

static inline uint64_t read_u64_at(int fd, uint64_t index, const char *what)
{
	uint64_t val;

	if (pread(fd, &val, sizeof(val), index * sizeof(val)) != sizeof(val))
		fail("read %s entry %llu: %s", what, (unsigned long long)index,
		     strerror(errno));
	return val;
}

/*
 * The kpageflags of page @i from @addr, through the open @pagemap and
 * @kpageflags files, and its pfn in @pfn if not NULL; the page must be
 * present.
 */
static inline uint64_t page_kpageflags(int pagemap, int kpageflags, char *addr,
				       unsigned long i, uint64_t *pfn,
				       const char *when)
{
	uint64_t pme = read_u64_at(pagemap,
				   (uintptr_t)(addr + i * page_size) / page_size,
				   "pagemap");

	if (!(pme & PM_PRESENT) || !(pme & PM_PFN_MASK))
		fail("%s: page %lu not present (pagemap %#llx)", when, i,
		     (unsigned long long)pme);
	if (pfn)
		*pfn = pme & PM_PFN_MASK;
	return read_u64_at(kpageflags, pme & PM_PFN_MASK, "kpageflags");
}

/*
 * The /proc/kpageflags word of each of the @nr_pages pages from @addr, into
 * @flags; every page must be present.
 */
static inline void read_kpageflags(char *addr, unsigned long nr_pages,
				   uint64_t *flags, const char *when)
{
	int pagemap = open("/proc/self/pagemap", O_RDONLY);
	int kpageflags = open("/proc/kpageflags", O_RDONLY);
	unsigned long i;

	if (pagemap < 0 || kpageflags < 0)
		fail("open pagemap/kpageflags: %s", strerror(errno));
	for (i = 0; i < nr_pages; i++)
		flags[i] = page_kpageflags(pagemap, kpageflags, addr, i, NULL, when);
	close(pagemap);
	close(kpageflags);
}

/*
 * Check through pagemap and kpageflags that the @nr_pages pages from @addr
 * are mapped by folios of @folio_pages pages (1: small pages), each whole,
 * starting at @addr.
 */
static inline void check_folios(char *addr, unsigned long nr_pages,
			 unsigned long folio_pages, const char *when)
{
	int pagemap = open("/proc/self/pagemap", O_RDONLY);
	int kpageflags = open("/proc/kpageflags", O_RDONLY);
	uint64_t pfn, head_pfn = 0, flags;
	unsigned long i, j;
	int head, tail;

	if (pagemap < 0 || kpageflags < 0)
		fail("open pagemap/kpageflags: %s", strerror(errno));
	for (i = 0; i < nr_pages; i++) {
		flags = page_kpageflags(pagemap, kpageflags, addr, i, &pfn, when);
		head = !!(flags & (1ULL << KPF_COMPOUND_HEAD));
		tail = !!(flags & (1ULL << KPF_COMPOUND_TAIL));
		j = i % folio_pages;
		if (folio_pages == 1) {
			if (head || tail)
				fail("%s: page %lu is part of a large folio (kpageflags %#llx), want a small page",
				     when, i, (unsigned long long)flags);
			continue;
		}
		if (!(flags & (1ULL << KPF_THP)))
			fail("%s: page %lu is not in a THP (kpageflags %#llx)",
			     when, i, (unsigned long long)flags);
		if (j == 0) {
			if (!head || tail || pfn % folio_pages)
				fail("%s: page %lu (pfn %#llx, kpageflags %#llx) does not start a folio of %lu pages",
				     when, i, (unsigned long long)pfn,
				     (unsigned long long)flags, folio_pages);
			head_pfn = pfn;
		} else if (head || !tail || pfn != head_pfn + j) {
			fail("%s: page %lu (pfn %#llx, kpageflags %#llx) is not page %lu of the folio at pfn %#llx",
			     when, i, (unsigned long long)pfn,
			     (unsigned long long)flags, j,
			     (unsigned long long)head_pfn);
		}
	}
	close(pagemap);
	close(kpageflags);
}

#endif /* GUEST_H */
