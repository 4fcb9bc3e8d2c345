/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the guest tests of the migration paths that move_pages() does
 * not take: memory offline (memory_offline_test), long-term pinning
 * (longterm_pin_test), alloc_contig_range() (contig_range_test) and soft
 * offline (soft_offline_test).
 *
 * Every test maps the same four kinds of data ("regions"): anonymous memory
 * in small pages, in 64K mTHPs and in 2M THPs, and shmem (a memfd, small
 * pages), each filled with its own pattern so that a page of one cannot
 * pass for a page of another. It records where each page is (pagemap) and
 * what folio it is in (kpageflags) before the migration it triggers, and
 * checks afterwards every byte, where every page went, and the copy
 * offload's counters:
 *
 *   NAME EXPECT [COUNTER_FILE [KEY]]
 *
 * EXPECT "offload": /proc/vmstat's migrate_offload_folios_copied, and the
 * migrator's own count of folios copied (COUNTER_FILE: a file holding one
 * number, or "KEY value" lines), must each have grown by at least the
 * number of the test's folios the operation migrated; "none": no batch may
 * have been given to a migrator (migrate_offload_batches unchanged) and the
 * migrator's own count must not have moved.
 */
#ifndef MIGPATH_H
#define MIGPATH_H

#include "guest.h"

#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23
#endif
#ifndef MADV_SOFT_OFFLINE
#define MADV_SOFT_OFFLINE	101
#endif
#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC		1U
#endif

/* /proc/kpageflags bits guest.h does not name. */
#define KPF_LRU			5
#define KPF_SLAB		7
#define KPF_BUDDY		10
#define KPF_HUGE		17
#define KPF_HWPOISON		19
#define KPF_NOPAGE		20
#define KPF_PGTABLE		26
#define KPF_RESERVED		32

#define MEM_DIR			"/sys/devices/system/memory"
#define NODE_DIR		"/sys/devices/system/node"

/* The kinds of data every test migrates. */
enum kind { K_4K, K_64K, K_2M, K_SHMEM, NR_KINDS };

static const char *const kind_name[NR_KINDS] = { "4k", "64k", "2m", "shmem" };
static const size_t kind_folio_kb[NR_KINDS] = { 4, 64, 2048, 4 };

struct region {
	enum kind kind;
	char *buf;
	size_t len;
	unsigned long nr_pages;
	/* Where each page was and what its folio was, before the operation. */
	uint64_t *pfn;
	uint64_t *flags;
};

static struct region regions[NR_KINDS];

/* ---- Data ---- */

static inline uint64_t region_word(const struct region *r, size_t word)
{
	return pattern(word + ((uint64_t)(r->kind + 1) << 40));
}

/*
 * Map @len bytes of kind @k, nothing faulted in yet (region_fill() does).
 * 64K and 2M: aligned to the folio size, MADV_HUGEPAGE.
 */
static inline void region_alloc(struct region *r, enum kind k, size_t len)
{
	int fd;

	r->kind = k;
	r->len = len;
	r->nr_pages = len / page_size;
	if (k == K_SHMEM) {
		fd = syscall(SYS_memfd_create, "migpath", MFD_CLOEXEC);
		if (fd < 0 || ftruncate(fd, len))
			fail("memfd of %zu bytes: %s", len, strerror(errno));
		r->buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (r->buf == MAP_FAILED)
			fail("mmap memfd: %s", strerror(errno));
		close(fd);
	} else {
		r->buf = map_aligned(len, kind_folio_kb[k] * 1024);
	}
}

/*
 * Write the pattern into bytes [@off, @off + @len) of @r, bound to @node
 * (every page faulted in by the write). 64K and 2M: with the only mTHP
 * size enabled the kind's (restored at exit).
 */
static inline void region_fill(struct region *r, size_t off, size_t len, int node)
{
	uint64_t *data = (uint64_t *)r->buf;
	size_t i;

	if (r->kind == K_64K || r->kind == K_2M)
		thp_only_size(kind_folio_kb[r->kind], "madvise");
	bind_to_node(node);
	for (i = off / sizeof(*data); i < (off + len) / sizeof(*data); i++)
		data[i] = region_word(r, i);
	bind_to_node(-1);
}

/*
 * After the last region_fill(): the 64K region is marked MADV_NOHUGEPAGE
 * so that khugepaged does not collapse it into 2M THPs behind the test's
 * back.
 */
static inline void region_filled(struct region *r)
{
	if (r->kind == K_64K && madvise(r->buf, r->len, MADV_NOHUGEPAGE))
		fail("madvise(MADV_NOHUGEPAGE): %s", strerror(errno));
}

/* Map @len bytes of kind @k and fill them, bound to @node. */
static inline void region_map(struct region *r, enum kind k, size_t len, int node)
{
	region_alloc(r, k, len);
	region_fill(r, 0, len, node);
	region_filled(r);
}

/* Every word of @r holds its pattern. */
static inline void region_check(const struct region *r, const char *when)
{
	const uint64_t *data = (const uint64_t *)r->buf;
	size_t i;

	for (i = 0; i < r->len / sizeof(*data); i++)
		if (data[i] != region_word(r, i))
			fail("%s: %s data: byte %zu (page %zu) is %#llx, want %#llx",
			     when, kind_name[r->kind], i * sizeof(*data),
			     i * sizeof(*data) / page_size,
			     (unsigned long long)data[i],
			     (unsigned long long)region_word(r, i));
}

/* ---- /proc/kpageflags ---- */

static int kpageflags_fd = -1;

static inline void kpf_read(uint64_t pfn, unsigned long n, uint64_t *flags)
{
	ssize_t want = n * sizeof(*flags);

	if (kpageflags_fd < 0) {
		kpageflags_fd = open("/proc/kpageflags", O_RDONLY);
		if (kpageflags_fd < 0)
			fail("open /proc/kpageflags: %s", strerror(errno));
	}
	if (pread(kpageflags_fd, flags, want, pfn * sizeof(*flags)) != want)
		fail("read kpageflags of pfn %#llx..+%lu: %s",
		     (unsigned long long)pfn, n, strerror(errno));
}

static inline uint64_t kpf(uint64_t pfn)
{
	uint64_t flags;

	kpf_read(pfn, 1, &flags);
	return flags;
}

/* Record where every page of @r is and the flags of its folio. */
static inline void region_snapshot(struct region *r, const char *when)
{
	unsigned long i, n;

	free(r->pfn);
	free(r->flags);
	r->pfn = page_pfns(r->buf, r->len);
	r->flags = calloc(r->nr_pages, sizeof(*r->flags));
	if (!r->flags)
		fail("out of memory");
	for (i = 0; i < r->nr_pages; i += n) {
		if (!r->pfn[i])
			fail("%s: %s page %lu not present", when, kind_name[r->kind], i);
		/* One read for each run of consecutive pfns. */
		n = 1;
		while (i + n < r->nr_pages && n < 4096 &&
		       r->pfn[i + n] == r->pfn[i] + n)
			n++;
		kpf_read(r->pfn[i], n, &r->flags[i]);
	}
}

/* The number of pages of the folio page @i of @r starts (1 if it is small). */
static inline unsigned long region_folio_pages(const struct region *r, unsigned long i)
{
	unsigned long n = 1;

	if (!(r->flags[i] & (1ULL << KPF_COMPOUND_HEAD)))
		return 1;
	while (i + n < r->nr_pages &&
	       (r->flags[i + n] & (1ULL << KPF_COMPOUND_TAIL)) &&
	       r->pfn[i + n] == r->pfn[i] + n)
		n++;
	return n;
}

/* Page @i of @r starts a folio (as recorded). */
static inline int region_folio_start(const struct region *r, unsigned long i)
{
	return !(r->flags[i] & (1ULL << KPF_COMPOUND_TAIL));
}

/* How many folios of @r have the size the kind asks for. */
static inline unsigned long region_folios_of_kind(const struct region *r)
{
	unsigned long i, n = 0, want = kind_folio_kb[r->kind] * 1024 / page_size;

	for (i = 0; i < r->nr_pages; i++)
		if (region_folio_start(r, i) && region_folio_pages(r, i) == want)
			n++;
	return n;
}

/*
 * The 64K and 2M regions must hold folios of their size, or the test would
 * not test them: the machine could not give them (fragmented memory).
 */
static inline void regions_check_sizes(void)
{
	int k;

	for (k = K_64K; k <= K_2M; k++)
		if (!region_folios_of_kind(&regions[k]))
			skip("no %zuK folio could be allocated for the %s data",
			     kind_folio_kb[k], kind_name[k]);
}

/*
 * After the operation: every page of every region is present, where
 * @misplaced() accepts it, and holds its bytes. @misplaced(@r, @i, @pfn,
 * @arg, @why, @len) is given page @i of @r at its new @pfn; it returns
 * nonzero, with the reason in @why, if the page must not be there.
 */
typedef int (*misplaced_fn)(const struct region *r, unsigned long i,
			    uint64_t pfn, void *arg, char *why, size_t len);

static inline void regions_check_after(const char *when, misplaced_fn misplaced,
				       void *arg)
{
	char why[256];
	unsigned long i;
	int k;

	for (k = 0; k < NR_KINDS; k++) {
		struct region *r = &regions[k];
		uint64_t *pfn = page_pfns(r->buf, r->len);

#ifdef MIGPATH_MUTANT_NOMOVE
		/* scripts/paths-mutants.sh: judge where the pages were before. */
		memcpy(pfn, r->pfn, r->nr_pages * sizeof(*pfn));
#endif
		for (i = 0; i < r->nr_pages; i++) {
			if (!pfn[i])
				fail("%s: %s page %lu is not present", when,
				     kind_name[k], i);
			if (misplaced(r, i, pfn[i], arg, why, sizeof(why)))
				fail("%s: %s page %lu is at pfn %#llx (was %#llx): %s",
				     when, kind_name[k], i,
				     (unsigned long long)pfn[i],
				     (unsigned long long)r->pfn[i], why);
		}
		free(pfn);
#ifdef MIGPATH_MUTANT_CORRUPT
		/* scripts/paths-mutants.sh: a bit flipped after the migration. */
		if (r->kind == K_2M)
			((uint64_t *)r->buf)[4242] ^= 1;
#endif
		region_check(r, when);
	}
}

/* ---- Counters ---- */

enum expect { EXPECT_NONE, EXPECT_OFFLOAD };

static enum expect expect;
static const char *own_file, *own_key;

struct counters {
	unsigned long batches, copied, fallback, own, migrated;
};

static inline void counters_read(struct counters *c)
{
	c->batches = vmstat("migrate_offload_batches");
	c->copied = vmstat("migrate_offload_folios_copied");
	c->fallback = vmstat("migrate_offload_folios_fallback");
	c->migrated = vmstat("pgmigrate_success");
	c->own = 0;
	if (own_file)
		c->own = own_key ? proc_value(own_file, own_key, ' ') :
				   read_ulong(own_file);
}

/*
 * Check what the offload counters did between @b and @a, while the
 * operation migrated @folios folios (@pages pages) of the test's data;
 * describe it in @out.
 */
static inline void counters_check(const struct counters *b,
				  const struct counters *a,
				  unsigned long folios, unsigned long pages,
				  const char *what, char *out, size_t len)
{
	unsigned long batches = a->batches - b->batches;
	unsigned long copied = a->copied - b->copied;
	unsigned long fallback = a->fallback - b->fallback;
	unsigned long own = a->own - b->own;
	unsigned long migrated = a->migrated - b->migrated;

	if (migrated < pages)
		fail("%s: pgmigrate_success grew by %lu, want at least the %lu pages of the test that moved",
		     what, migrated, pages);
	if (expect == EXPECT_NONE) {
		if (batches || copied || fallback)
			fail("%s: %lu batches were offloaded (%lu folios copied by the migrator, %lu fell back), want none",
			     what, batches, copied, fallback);
		if (own_file && own)
			fail("%s: the migrator's count of folios copied grew by %lu, want 0",
			     what, own);
	} else {
		if (copied < folios)
			fail("%s: migrate_offload_folios_copied grew by %lu (%lu batches, %lu fell back), want at least the %lu folios of the test that moved",
			     what, copied, batches, fallback, folios);
		if (own_file && own < folios)
			fail("%s: the migrator's count of folios copied grew by %lu, want at least %lu",
			     what, own, folios);
	}
	if (own_file)
		snprintf(out, len, "%lu pages migrated, %lu batches offloaded: %lu folios copied by the migrator (%lu by its own count), %lu fell back",
			 migrated, batches, copied, own, fallback);
	else
		snprintf(out, len, "%lu pages migrated, %lu batches offloaded: %lu folios copied by a migrator, %lu fell back",
			 migrated, batches, copied, fallback);
}

/* Parse "NAME EXPECT [COUNTER_FILE [KEY]]". */
static inline void parse_args(int argc, char **argv, const char *usage)
{
	page_size = sysconf(_SC_PAGESIZE);
	name = argc > 1 ? argv[1] : "migpath";
	if (argc < 3 || argc > 5)
		fail("usage: %s", usage);
	if (!strcmp(argv[2], "none"))
		expect = EXPECT_NONE;
	else if (!strcmp(argv[2], "offload"))
		expect = EXPECT_OFFLOAD;
	else
		fail("EXPECT is '%s', want none or offload", argv[2]);
	own_file = argc > 3 ? argv[3] : NULL;
	own_key = argc > 4 ? argv[4] : NULL;
	setvbuf(stdout, NULL, _IOLBF, 0);
}

/* ---- Files ---- */

/* The first word of @path into @buf; -1 if it cannot be read. */
static inline int read_word(const char *path, char *buf, size_t len)
{
	char fmt[16];
	FILE *f = fopen(path, "r");
	int ok;

	if (!f)
		return -1;
	snprintf(fmt, sizeof(fmt), "%%%zus", len - 1);
	ok = fscanf(f, fmt, buf) == 1;
	fclose(f);
	return ok ? 0 : -1;
}

/* ---- Zones, nodes, memory blocks ---- */

struct zone_info {
	int node;
	char zone[16];
	unsigned long free, min, low, high, spanned, present, start_pfn;
};

#define MAX_ZONES 32

/* The populated zones of /proc/zoneinfo, into @z; returns how many. */
static inline int read_zones(struct zone_info *z)
{
	char line[512], tok[64], zone[16];
	unsigned long val;
	FILE *f = fopen("/proc/zoneinfo", "r");
	int n = -1, node;

	if (!f)
		fail("open /proc/zoneinfo: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Node %d, zone %15s", &node, zone) == 2) {
			if (n + 1 == MAX_ZONES)
				break;
			n++;
			memset(&z[n], 0, sizeof(z[n]));
			z[n].node = node;
			memcpy(z[n].zone, zone, sizeof(zone));
			continue;
		}
		if (n < 0)
			continue;
		if (sscanf(line, " pages free %lu", &val) == 1) {
			z[n].free = val;
		} else if (sscanf(line, " %63s %lu", tok, &val) == 2) {
			if (!strcmp(tok, "min"))
				z[n].min = val;
			else if (!strcmp(tok, "low"))
				z[n].low = val;
			else if (!strcmp(tok, "high"))
				z[n].high = val;
			else if (!strcmp(tok, "spanned"))
				z[n].spanned = val;
			else if (!strcmp(tok, "present"))
				z[n].present = val;
			else if (!strcmp(tok, "start_pfn:"))
				z[n].start_pfn = val;
		}
	}
	fclose(f);
	return n + 1;
}

/*
 * The ZONE_MOVABLE with the most free pages, into @mz; skip if there is
 * none (no movablecore=, kernelcore= or movable_node on the command line).
 */
static inline void movable_zone(struct zone_info *mz)
{
	struct zone_info z[MAX_ZONES];
	int i, n = read_zones(z), found = 0;

	memset(mz, 0, sizeof(*mz));
	for (i = 0; i < n; i++) {
		if (strcmp(z[i].zone, "Movable") || !z[i].present)
			continue;
		if (!found || z[i].free > mz->free)
			*mz = z[i];
		found = 1;
	}
	if (!found)
		skip("no ZONE_MOVABLE: boot with movablecore= (e.g. movablecore=1G)");
}

/* The highest pfn any zone spans, plus one. */
static inline unsigned long max_pfn(void)
{
	struct zone_info z[MAX_ZONES];
	int i, n = read_zones(z);
	unsigned long end = 0;

	for (i = 0; i < n; i++)
		if (z[i].spanned && z[i].start_pfn + z[i].spanned > end)
			end = z[i].start_pfn + z[i].spanned;
	return end;
}

/* MemFree of @node, in bytes. */
static inline unsigned long node_free_bytes(int node)
{
	char path[128], line[256];
	unsigned long kb;
	int nid;
	FILE *f;

	snprintf(path, sizeof(path), NODE_DIR "/node%d/meminfo", node);
	f = fopen(path, "r");
	if (!f)
		fail("open %s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Node %d MemFree: %lu kB", &nid, &kb) == 2) {
			fclose(f);
			return kb * 1024;
		}
	}
	fclose(f);
	fail("no MemFree in %s", path);
}

static unsigned long block_nr_pages;

/* Pages per memory block (block_size_bytes, in hex). */
static inline unsigned long block_pages(void)
{
	char buf[64];

	if (!block_nr_pages) {
		if (read_word(MEM_DIR "/block_size_bytes", buf, sizeof(buf)))
			skip("no " MEM_DIR "/block_size_bytes: kernel without CONFIG_MEMORY_HOTPLUG");
		block_nr_pages = strtoul(buf, NULL, 16) / page_size;
		if (!block_nr_pages)
			fail("block_size_bytes is '%s'", buf);
	}
	return block_nr_pages;
}

static inline unsigned long pfn_block(uint64_t pfn)
{
	return pfn / block_pages();
}

/* Block @blk's attribute @attr (first word), or "" if there is none. */
static inline void block_attr(unsigned long blk, const char *attr, char *buf, size_t len)
{
	char path[160];

	snprintf(path, sizeof(path), MEM_DIR "/memory%lu/%s", blk, attr);
	if (read_word(path, buf, len))
		buf[0] = '\0';
}

#define MAX_BLOCKS 4096

/* Is block @blk online and in ZONE_MOVABLE? Cached: zones do not change under the tests. */
static inline int block_movable(unsigned long blk)
{
	static signed char cache[MAX_BLOCKS];
	char state[32], zone[32];

	if (blk >= MAX_BLOCKS)
		fail("memory block %lu: more than %d blocks", blk, MAX_BLOCKS);
	if (!cache[blk]) {
		block_attr(blk, "state", state, sizeof(state));
		block_attr(blk, "valid_zones", zone, sizeof(zone));
		cache[blk] = !strcmp(state, "online") && !strcmp(zone, "Movable") ? 1 : -1;
	}
	return cache[blk] > 0;
}

static inline int pfn_movable(uint64_t pfn)
{
	return block_movable(pfn_block(pfn));
}

/*
 * Does block @blk hold a page offlining cannot move: reserved (memblock
 * allocations made at boot, such as the memmap, land in ZONE_MOVABLE too),
 * a hole, slab or page tables?
 */
static inline int block_has_unmovable(unsigned long blk)
{
	unsigned long n = block_pages(), i;
	uint64_t *flags = malloc(n * sizeof(*flags));
	const uint64_t bad = (1ULL << KPF_RESERVED) | (1ULL << KPF_NOPAGE) |
			     (1ULL << KPF_SLAB) | (1ULL << KPF_PGTABLE);
	int ret = 0;

	if (!flags)
		fail("out of memory");
	kpf_read(blk * n, n, flags);
	for (i = 0; i < n && !ret; i++)
		ret = !!(flags[i] & bad);
	free(flags);
	return ret;
}

/* ---- Small things ---- */

/* Release [buf, buf + len) (MADV_DONTNEED). */
static inline void release(char *buf, size_t len)
{
	if (len && madvise(buf, len, MADV_DONTNEED))
		fail("madvise(MADV_DONTNEED): %s", strerror(errno));
}

/* Fault @len bytes at @buf in, writable (MADV_POPULATE_WRITE, or by touching). */
static inline void populate(char *buf, size_t len)
{
	size_t off;

	if (!madvise(buf, len, MADV_POPULATE_WRITE))
		return;
	if (errno != EINVAL)
		fail("madvise(MADV_POPULATE_WRITE): %s", strerror(errno));
	for (off = 0; off < len; off += page_size)
		buf[off] = 1;
}

static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline void alarm_handler(int sig)
{
	(void)sig;
}

/*
 * From now on, SIGALRM interrupts a blocking system call (a write to a
 * sysfs file that migrates) rather than killing the program.
 */
static inline void catch_alarm(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = alarm_handler;
	if (sigaction(SIGALRM, &sa, NULL))
		fail("sigaction: %s", strerror(errno));
}

#endif /* MIGPATH_H */
