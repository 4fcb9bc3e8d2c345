/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the guest tests of the migration paths no other test covers
 * (ksm_migrate_test, swapcache_migrate_test, shmem_migrate_test,
 * ext4_migrate_test, hmm_migrate_test, move_race_test), on top of guest.h:
 * the copy-offload counters and what they must show, the registered
 * migrator, moves of a list of addresses, the folio layout of a range
 * (pagemap + kpageflags), smaps fields, and the "NEGATIVE" switch with
 * which a test is run on purpose with one wrong expectation, to show that
 * the check behind it can fail.
 */
#ifndef MIGRATE_PATHS_H
#define MIGRATE_PATHS_H

#include "guest.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#ifndef MPOL_MF_MOVE_ALL
#define MPOL_MF_MOVE_ALL	(1 << 2)
#endif
#define KPF_DIRTY		4
#define KPF_LRU			5
#define KPF_ANON		12
#define KPF_SWAPCACHE		13
#define KPF_UNEVICTABLE		18
#define KPF_KSM			21
#define KPF_ZERO_PAGE_BIT	24
#define KPF_PRIVATE		35
#define KPF_MLOCKED		33
#define PM_FLAGS_SHIFT		55
#define PM_SOFT_DIRTY		(1ULL << 55)
#define PM_MMAP_EXCLUSIVE	(1ULL << 56)
#define PM_FILE			(1ULL << 61)
#define PM_SWAP			(1ULL << 62)
#define BIT64(n)		(1ULL << (n))

/*
 * NEGATIVE=<what> in the environment makes a test expect one wrong thing
 * (each test says which words it knows), so that a run can show that the
 * check fails. Never set in the real lists.
 */
static inline int negative(const char *what)
{
	const char *neg = getenv("NEGATIVE");

	return neg && !strcmp(neg, what);
}

/*
 * In a forked child: die with the parent, so that a parent that fails
 * never leaves a child blocked on a pipe, or writing, with the test's
 * output still open (the shell would wait for it forever).
 */
static inline void die_with_parent(pid_t parent)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(9);
}

/* ------------------------------------------------------------------ */
/* The copy-offload counters.                                          */

struct offload_counters {
	unsigned long batches, copied, fallback;
};

static inline void offload_snapshot(struct offload_counters *c)
{
	c->batches = vmstat("migrate_offload_batches");
	c->copied = vmstat("migrate_offload_folios_copied");
	c->fallback = vmstat("migrate_offload_folios_fallback");
}

static inline void offload_delta(const struct offload_counters *before,
				 struct offload_counters *d)
{
	struct offload_counters now;

	offload_snapshot(&now);
	d->batches = now.batches - before->batches;
	d->copied = now.copied - before->copied;
	d->fallback = now.fallback - before->fallback;
}

/* The registered migrator's name ("none" if there is none). */
static inline void registered_migrator(char *buf, size_t len)
{
	FILE *f = fopen("/sys/kernel/mm/migrate_offload/migrator", "r");

	if (!f || !fgets(buf, len, f))
		fail("read /sys/kernel/mm/migrate_offload/migrator: %s", strerror(errno));
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
}

/*
 * @expect is "none" (no migrator may be registered) or the name of the
 * migrator that must be: "test", "dcbm", "mtcopy". Returns whether one is.
 */
static inline int check_migrator(const char *expect)
{
	char now[64];

	registered_migrator(now, sizeof(now));
	if (strcmp(now, expect))
		fail("the registered migrator is '%s', want '%s'", now, expect);
	return strcmp(expect, "none") != 0;
}

/*
 * After moving @nr_folios folios that take the batch copy: with no
 * migrator nothing was offloaded; with one, it copied every one of them
 * and none fell back to the CPU. @what names the folios in the message.
 */
static inline void check_offload_all(int have_migrator,
				     const struct offload_counters *before,
				     unsigned long nr_folios, const char *what,
				     const char *when)
{
	struct offload_counters d;
	unsigned long want = have_migrator ? nr_folios : 0;

	offload_delta(before, &d);
	if (negative("offload"))
		want = have_migrator ? 0 : nr_folios;
	if (!want) {
		if (d.batches || d.copied || d.fallback)
			fail("%s: %lu batches offloaded (%lu folios copied, %lu fell back), want none",
			     when, d.batches, d.copied, d.fallback);
		return;
	}
	if (d.copied != want || d.fallback || !d.batches)
		fail("%s: %lu batches offloaded, %lu folios copied by the migrator and %lu fell back; want all %lu %s copied by it",
		     when, d.batches, d.copied, d.fallback, want, what);
}

/* ------------------------------------------------------------------ */
/* Moves.                                                               */

/*
 * Move the @n pages at @addrs to @node with move_pages(@flags); returns
 * what move_pages() returned, and fills @status (caller's, n entries).
 */
static inline long move_list(void **addrs, unsigned long n, int node, int flags,
			     int *status)
{
	int *nodes = malloc(n * sizeof(*nodes));
	unsigned long i;
	long ret;

	if (!nodes)
		fail("out of memory");
	for (i = 0; i < n; i++)
		nodes[i] = node;
	ret = move_pages(n, addrs, nodes, status, flags);
	free(nodes);
	return ret;
}

/* move_list(), failing unless every page arrived on @node. */
static inline void move_list_all(void **addrs, unsigned long n, int node,
				 int flags, const char *when)
{
	int *status = calloc(n, sizeof(*status));
	unsigned long i;
	long ret;

	if (!status)
		fail("out of memory");
	ret = move_list(addrs, n, node, flags, status);
	if (ret)
		fail("%s: move_pages(to node %d) returned %ld: %s", when, node, ret,
		     ret < 0 ? strerror(errno) : "pages not migrated");
	for (i = 0; i < n; i++)
		if (status[i] != node)
			fail("%s: address %lu (%p): status %d, want node %d", when, i,
			     addrs[i], status[i], node);
	free(status);
}

/* ------------------------------------------------------------------ */
/* Folio layout.                                                        */

/*
 * The folio layout of @nr_pages pages from @addr, as pagemap and
 * kpageflags show it: for every page its pfn (0: not present), its
 * kpageflags, and the number of pages of the folio it is in as far as the
 * range shows it (1 for a small page).
 */
struct layout {
	unsigned long nr_pages;
	uint64_t *pme, *pfn, *flags;
};

static inline void layout_read(struct layout *l, char *addr, unsigned long nr_pages)
{
	int pagemap = open("/proc/self/pagemap", O_RDONLY);
	int kpageflags = open("/proc/kpageflags", O_RDONLY);
	unsigned long i;

	if (pagemap < 0 || kpageflags < 0)
		fail("open pagemap/kpageflags: %s", strerror(errno));
	l->nr_pages = nr_pages;
	l->pme = calloc(nr_pages, sizeof(uint64_t));
	l->pfn = calloc(nr_pages, sizeof(uint64_t));
	l->flags = calloc(nr_pages, sizeof(uint64_t));
	if (!l->pme || !l->pfn || !l->flags)
		fail("out of memory");
	if (pread(pagemap, l->pme, nr_pages * 8, (uintptr_t)addr / page_size * 8) !=
	    (ssize_t)(nr_pages * 8))
		fail("read pagemap: %s", strerror(errno));
	for (i = 0; i < nr_pages; i++) {
		if (!(l->pme[i] & PM_PRESENT))
			continue;
		l->pfn[i] = l->pme[i] & PM_PFN_MASK;
		if (l->pfn[i])
			l->flags[i] = read_u64_at(kpageflags, l->pfn[i], "kpageflags");
	}
	close(pagemap);
	close(kpageflags);
}

static inline void layout_free(struct layout *l)
{
	free(l->pme);
	free(l->pfn);
	free(l->flags);
}

static inline int page_is_head(const struct layout *l, unsigned long i)
{
	return !!(l->flags[i] & BIT64(KPF_COMPOUND_HEAD));
}

static inline int page_is_tail(const struct layout *l, unsigned long i)
{
	return !!(l->flags[i] & BIT64(KPF_COMPOUND_TAIL));
}

/*
 * Check that the range is mapped by whole large folios of @folio_pages
 * pages, each naturally aligned, physically contiguous, a THP
 * (kpageflags), starting at the start of the range.
 */
static inline void layout_check_whole(const struct layout *l,
				      unsigned long folio_pages, const char *when)
{
	unsigned long i;

	for (i = 0; i < l->nr_pages; i++) {
		unsigned long j = i % folio_pages;

		if (!l->pfn[i])
			fail("%s: page %lu not present (pagemap %#llx)", when, i,
			     (unsigned long long)l->pme[i]);
		if (!(l->flags[i] & BIT64(KPF_THP)))
			fail("%s: page %lu (pfn %#llx) is not in a large folio (kpageflags %#llx): the folio was split or never large",
			     when, i, (unsigned long long)l->pfn[i],
			     (unsigned long long)l->flags[i]);
		if (j == 0 ? (!page_is_head(l, i) || l->pfn[i] % folio_pages) :
			     (page_is_head(l, i) || !page_is_tail(l, i) ||
			      l->pfn[i] != l->pfn[i - j] + j))
			fail("%s: page %lu (pfn %#llx, kpageflags %#llx) is not page %lu of a whole folio of %lu pages",
			     when, i, (unsigned long long)l->pfn[i],
			     (unsigned long long)l->flags[i], j, folio_pages);
	}
}

/* Every present page of the range has kpageflags bit @bit (or has not). */
static inline void layout_check_bit(const struct layout *l, int bit, int want,
				    const char *what, const char *when)
{
	unsigned long i;

	for (i = 0; i < l->nr_pages; i++)
		if (l->pfn[i] && !!(l->flags[i] & BIT64(bit)) != want)
			fail("%s: page %lu (pfn %#llx, kpageflags %#llx) %s %s",
			     when, i, (unsigned long long)l->pfn[i],
			     (unsigned long long)l->flags[i],
			     want ? "is not" : "is", what);
}

/* ------------------------------------------------------------------ */
/* smaps and status.                                                    */

/*
 * The sum of the "@field:" lines (kB) of /proc/@pid/smaps over the
 * mappings that start in [start, end) (pid 0: self).
 */
static inline unsigned long smaps_field(pid_t pid, uintptr_t start, uintptr_t end,
					const char *field)
{
	char path[64], line[512];
	unsigned long lo, hi, kb, sum = 0;
	size_t flen = strlen(field);
	int in = 0;
	FILE *f;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/smaps", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/smaps");
	f = fopen(path, "r");
	if (!f)
		fail("open %s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
			in = lo >= start && lo < end;
			continue;
		}
		if (in && !strncmp(line, field, flen) && line[flen] == ':' &&
		    sscanf(line + flen + 1, "%lu", &kb) == 1)
			sum += kb;
	}
	fclose(f);
	return sum;
}

/* A "Field:  N kB" line of /proc/self/status or /proc/meminfo. */
static inline unsigned long kb_value(const char *path, const char *key)
{
	return proc_value(path, key, ':');
}

/* ------------------------------------------------------------------ */
/* Data.                                                               */

/* Word @w of a buffer whose contents are generation @gen of seed @seed. */
static inline uint64_t gen_word(uint64_t seed, size_t w, uint64_t gen)
{
	return pattern(w) ^ (seed * 0xbf58476d1ce4e5b9ULL) ^ (gen * 0xd1b54a32d192ed03ULL);
}

static inline void fill_words(char *buf, size_t first_word, size_t nr_words,
			      uint64_t seed, uint64_t gen)
{
	uint64_t *w = (uint64_t *)buf;
	size_t i;

	for (i = 0; i < nr_words; i++)
		w[i] = gen_word(seed, first_word + i, gen);
}

/* Index of the first word of @buf not holding its value, or -1. */
static inline long bad_word(const char *buf, size_t first_word, size_t nr_words,
			    uint64_t seed, uint64_t gen)
{
	const uint64_t *w = (const uint64_t *)buf;
	size_t i;

	for (i = 0; i < nr_words; i++)
		if (w[i] != gen_word(seed, first_word + i, gen))
			return i;
	return -1;
}

/* The value of a file under /sys/kernel/mm/... as a number. */
static inline long sys_long(const char *path)
{
	long v;

	if (try_read_long(path, &v))
		fail("read %s: %s", path, strerror(errno));
	return v;
}

/* Write @val to @path, keeping what it held in @old (a word, maybe in []). */
static inline void swap_setting(const char *path, const char *val, char *old,
				size_t len)
{
	char line[256], *s, *e;
	FILE *f = fopen(path, "r");

	if (!f || !fgets(line, sizeof(line), f))
		fail("read %s: %s", path, strerror(errno));
	fclose(f);
	s = strchr(line, '[');
	if (s && (e = strchr(s, ']'))) {
		*e = 0;
		s++;
	} else {
		line[strcspn(line, "\n")] = 0;
		s = line;
	}
	if (strlen(s) >= len)
		fail("%s holds '%s': too long", path, s);
	memcpy(old, s, strlen(s) + 1);
	write_file(path, val);
}

#endif /* MIGRATE_PATHS_H */
