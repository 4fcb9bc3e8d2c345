// SPDX-License-Identifier: GPL-2.0
/*
 * rmap_state_test: migrating large folios keeps every page table state the
 * process can observe.
 *
 *   rmap_state_test NAME FOLIO_KB NR_FOLIOS MODE
 *
 * Faults NR_FOLIOS anonymous folios of FOLIO_KB on node 0, prepares them as
 * MODE says, and moves them with move_pages() (one address per folio) to
 * node 1 and back to node 0. After each move every page must be on the
 * node it was moved to, hold its bytes, still be in a whole folio of
 * FOLIO_KB (pagemap + kpageflags), and show exactly the pagemap flag bits
 * (soft-dirty, exclusively mapped, uffd-wp, file/shared, swap, present) it
 * showed before the first move. MODE:
 *   private   the memory as faulted;
 *   fork      shared with a forked child (moved with MPOL_MF_MOVE_ALL): both
 *             read back their data, and a write in one is not seen by the
 *             other;
 *   mprotect  the second half of every folio read-only, so its PTEs differ
 *             in write permission: afterwards the writable half is written
 *             in place (same PFN: still exclusive, no copy on write), and a
 *             write to the read-only half still faults;
 *   softdirty soft-dirty cleared, then every other page (mTHP) or folio
 *             (PMD-mapped THP) written: the soft-dirty bits differ and must
 *             be kept page by page;
 *   softdirty_none, softdirty_quarter, softdirty_whole
 *             every page written (dirty), soft-dirty cleared, then nothing,
 *             every 4th page (mTHP) or folio (PMD-mapped THP), or everything
 *             written again: exactly the pages written since clear_refs are
 *             soft-dirty, before and after each move;
 *   mlock     mlock()ed: every page stays mlocked and unevictable.
 *
 * The softdirty_* modes guard against a regression of the batched unmap of
 * PTE-mapped large folios (B3 of the v1 review): try_to_migrate_one() took
 * a run of identical PTEs with get_and_clear_ptes(), which ORs their dirty
 * bits into the first with pte_mkdirty(), and on x86 pte_mkdirty() sets
 * _PAGE_SOFT_DIRTY too. PTEs written before clear_refs and not since are
 * dirty but not soft-dirty; a run of them came back from migration all
 * soft-dirty, and a checkpointing tool (CRIU) would dump memory that did
 * not change. The "softdirty" mode cannot see that: it writes every other
 * page, so its runs are one PTE long. softdirty_none makes every folio one
 * run of dirty PTEs that are not soft-dirty; softdirty_quarter makes runs
 * of 3 between written pages (a write fault on a write-protected page of
 * an exclusive mTHP reuses that page in place and makes only its PTE
 * writable, dirty and soft-dirty); softdirty_whole is the control where
 * everything is soft-dirty. For 2M (PMD-mapped) folios the unit is the PMD, and the
 * modes check that the migrated PMD keeps its soft-dirty bit (the series'
 * fix of remove_migration_pmd()).
 */
#include "guest.h"

#include <signal.h>
#include <sys/wait.h>

#define MPOL_MF_MOVE_ALL	(1 << 2)
#define KPF_UNEVICTABLE		18
#define KPF_MLOCKED		33
#define PM_FLAGS_SHIFT		55
#define PM_SOFT_DIRTY		(1ULL << 55)

static size_t folio_size, len;

/* Write a byte's own value back: the page becomes dirty, the data stays. */
static void touch(char *p)
{
	*(volatile char *)p = *(volatile char *)p;
}
static unsigned long nr_folios, nr_pages;
static char *buf;
/* The soft-dirty bit every page must show (softdirty_* modes), or NULL. */
static char *want_soft_dirty;

/* The pagemap entry of every page of the buffer. */
static void read_pagemap(uint64_t *pme)
{
	int fd = open("/proc/self/pagemap", O_RDONLY);
	size_t want = nr_pages * sizeof(*pme);

	if (fd < 0)
		fail("open pagemap: %s", strerror(errno));
	if (pread(fd, pme, want, (uintptr_t)buf / page_size * sizeof(*pme)) != (ssize_t)want)
		fail("read pagemap: %s", strerror(errno));
	close(fd);
}

/*
 * Check that exactly the pages want_soft_dirty says are soft-dirty in
 * pagemap; the failure counts both kinds of wrong pages.
 */
static void check_soft_dirty(const char *when)
{
	uint64_t *pme = calloc(nr_pages, sizeof(*pme));
	unsigned long i, extra = 0, missing = 0, first = 0;

	if (!pme)
		fail("out of memory");
	read_pagemap(pme);
	for (i = 0; i < nr_pages; i++) {
		int sd = !!(pme[i] & PM_SOFT_DIRTY);

		if (sd == want_soft_dirty[i])
			continue;
		if (!extra && !missing)
			first = i;
		if (sd)
			extra++;
		else
			missing++;
	}
	if (extra || missing)
		fail("%s: %lu pages soft-dirty that were not written since clear_refs, %lu written ones not soft-dirty (of %lu; first: page %lu, pagemap %#llx)",
		     when, extra, missing, nr_pages, first,
		     (unsigned long long)pme[first]);
	free(pme);
}

/* Compare every page's pagemap flag bits with @before. */
static void check_flags(const uint64_t *before, const char *when)
{
	uint64_t *now = calloc(nr_pages, sizeof(*now));
	unsigned long i;

	if (!now)
		fail("out of memory");
	read_pagemap(now);
	for (i = 0; i < nr_pages; i++)
		if ((now[i] >> PM_FLAGS_SHIFT) != (before[i] >> PM_FLAGS_SHIFT))
			fail("%s: page %lu: pagemap flags %#llx, were %#llx", when, i,
			     (unsigned long long)(now[i] >> PM_FLAGS_SHIFT),
			     (unsigned long long)(before[i] >> PM_FLAGS_SHIFT));
	free(now);
}

static void check_mlocked(const char *when)
{
	uint64_t *flags = calloc(nr_pages, sizeof(*flags));
	unsigned long i;

	if (!flags)
		fail("out of memory");
	read_kpageflags(buf, nr_pages, flags, when);
	for (i = 0; i < nr_pages; i++)
		if (!(flags[i] & (1ULL << KPF_MLOCKED)) ||
		    !(flags[i] & (1ULL << KPF_UNEVICTABLE)))
			fail("%s: page %lu is not mlocked and unevictable (kpageflags %#llx)",
			     when, i, (unsigned long long)flags[i]);
	free(flags);
}

static void move_all(int node, int flags, const char *when)
{
	void **addrs = calloc(nr_folios, sizeof(*addrs));
	int *nodes = calloc(nr_folios, sizeof(*nodes));
	int *status = calloc(nr_folios, sizeof(*status));
	unsigned long i;
	long ret;

	if (!addrs || !nodes || !status)
		fail("out of memory");
	for (i = 0; i < nr_folios; i++) {
		addrs[i] = buf + i * folio_size;
		nodes[i] = node;
	}
	ret = move_pages(nr_folios, addrs, nodes, status, flags);
	if (ret)
		fail("%s: move_pages(to node %d) returned %ld: %s", when, node, ret,
		     ret < 0 ? strerror(errno) : "pages left");
	for (i = 0; i < nr_folios; i++)
		if (status[i] != node)
			fail("%s: folio %lu: status %d", when, i, status[i]);
	free(addrs);
	free(nodes);
	free(status);
}

/* Both moves, with everything checked after each. */
static void move_and_check(const uint64_t *before, int flags, int mlocked)
{
	static const int to[] = { 1, 0 };
	char when[64];
	int i;

	for (i = 0; i < 2; i++) {
		snprintf(when, sizeof(when), "move %d to node %d", i + 1, to[i]);
		move_all(to[i], flags, when);
		check_nodes(buf, len, to[i], when);
		check_bytes(buf, 0, len, when);
		check_folios(buf, nr_pages, folio_size / page_size, when);
		if (want_soft_dirty)
			check_soft_dirty(when);
		check_flags(before, when);
		if (mlocked)
			check_mlocked(when);
	}
}

/* Run @fn in a child; it must end killed by @sig (0: exit 0). */
static void expect_child(void (*fn)(void), int sig, const char *what)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		fail("fork: %s", strerror(errno));
	if (!pid) {
		fn();
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid)
		fail("waitpid: %s", strerror(errno));
	if (sig ? !(WIFSIGNALED(status) && WTERMSIG(status) == sig) :
		  !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
		fail("%s: child status %#x", what, status);
}

static void write_read_only_half(void)
{
	buf[folio_size - page_size] = 1;
}

static void run_fork(uint64_t *before)
{
	int to_child[2], to_parent[2], status;
	char c = 0;
	pid_t pid;

	if (pipe(to_child) || pipe(to_parent))
		fail("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		fail("fork: %s", strerror(errno));
	if (!pid) {
		/* Child: wait for the moves, check, write page 0, check page 1. */
		if (read(to_child[0], &c, 1) != 1)
			_exit(2);
		name = "rmap_state_test child";
		check_bytes(buf, 0, len, "child, after the moves");
		check_nodes(buf, len, 0, "child, after the moves");
		buf[0] ^= 1;
		if (write(to_parent[1], &c, 1) != 1 || read(to_child[0], &c, 1) != 1)
			_exit(2);
		check_bytes(buf, page_size, len - page_size, "child, after the parent wrote");
		_exit(0);
	}
	/* Both map every folio now: the flags to keep are the shared ones. */
	read_pagemap(before);
	move_and_check(before, MPOL_MF_MOVE_ALL, 0);
	if (write(to_child[1], &c, 1) != 1 || read(to_parent[0], &c, 1) != 1)
		fail("child did not answer");
	check_bytes(buf, 0, len, "parent, after the child wrote");
	buf[page_size] ^= 1;
	if (write(to_child[1], &c, 1) != 1)
		fail("pipe: %s", strerror(errno));
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		fail("child failed (status %#x)", status);
}

static void run_mprotect(uint64_t *before)
{
	size_t half = folio_size / 2;
	uint64_t *after = calloc(nr_pages, sizeof(*after));
	unsigned long i, j, folio_pages = folio_size / page_size;

	if (!after)
		fail("out of memory");
	for (i = 0; i < nr_folios; i++)
		if (mprotect(buf + i * folio_size + half, half, PROT_READ))
			fail("mprotect: %s", strerror(errno));
	read_pagemap(before);
	move_and_check(before, MPOL_MF_MOVE, 0);

	/* The writable halves are still exclusive and writable in place. */
	read_pagemap(before);
	for (i = 0; i < nr_folios; i++)
		for (j = 0; j < folio_pages / 2; j++)
			touch(buf + i * folio_size + j * page_size);
	read_pagemap(after);
	for (i = 0; i < nr_pages; i++)
		if ((after[i] & PM_PFN_MASK) != (before[i] & PM_PFN_MASK))
			fail("page %lu was copied on write after the moves", i);
	/* The read-only halves are still read-only. */
	expect_child(write_read_only_half, SIGSEGV, "write to a read-only page");
	free(after);
}

static void run_softdirty(uint64_t *before)
{
	unsigned long i, set = 0, folio_pages = folio_size / page_size;

	write_file("/proc/self/clear_refs", "4");
	for (i = 0; i < nr_pages; i++) {
		/* PMD-mapped THPs have one soft-dirty bit per PMD. */
		unsigned long unit = folio_size == PMD_SIZE ? i / folio_pages : i;

		if (unit % 2)
			touch(buf + i * page_size);
	}
	read_pagemap(before);
	for (i = 0; i < nr_pages; i++)
		set += !!(before[i] & PM_SOFT_DIRTY);
	if (!set || set == nr_pages)
		fail("soft-dirty set on %lu of %lu pages after clear_refs and writes to half of them",
		     set, nr_pages);
	move_and_check(before, MPOL_MF_MOVE, 0);
}

/*
 * softdirty_none, softdirty_quarter, softdirty_whole: every page is dirty
 * from fill_on_node(); clear the soft-dirty bits (which write-protects the
 * PTEs and keeps them dirty), write @every'th unit (0: none, 1: all) and
 * move: exactly the units written since are soft-dirty, before the first
 * move (what the kernel does without migration) and after each move.
 */
static void run_softdirty_set(uint64_t *before, unsigned long every)
{
	unsigned long i, folio_pages = folio_size / page_size;

	want_soft_dirty = calloc(nr_pages, 1);
	if (!want_soft_dirty)
		fail("out of memory");
	write_file("/proc/self/clear_refs", "4");
	for (i = 0; i < nr_pages; i++) {
		/* PMD-mapped THPs have one soft-dirty bit per PMD. */
		unsigned long unit = folio_size == PMD_SIZE ? i / folio_pages : i;

		if (every && unit % every == 0) {
			touch(buf + i * page_size);
			want_soft_dirty[i] = 1;
		}
	}
	/* The mTHPs are still whole: a write fault reuses the page in place. */
	check_folios(buf, nr_pages, folio_pages, "after clear_refs and the writes");
	check_soft_dirty("before the moves");
	read_pagemap(before);
	move_and_check(before, MPOL_MF_MOVE, 0);
}

int main(int argc, char **argv)
{
	uint64_t *before;
	const char *mode;

	if (argc != 5) {
		fprintf(stderr, "usage: %s NAME FOLIO_KB NR_FOLIOS private|fork|mprotect|softdirty|softdirty_none|softdirty_quarter|softdirty_whole|mlock\n",
			argv[0]);
		return 2;
	}
	name = argv[1];
	folio_size = strtoul(argv[2], NULL, 0) << 10;
	nr_folios = strtoul(argv[3], NULL, 0);
	mode = argv[4];
	page_size = sysconf(_SC_PAGESIZE);
	if (folio_size <= (size_t)page_size || folio_size > PMD_SIZE || !nr_folios)
		fail("bad sizes: folio %zu, %lu folios", folio_size, nr_folios);
	len = nr_folios * folio_size;
	nr_pages = len / page_size;
	before = calloc(nr_pages, sizeof(*before));
	if (!before)
		fail("out of memory");

	set_thp_size(folio_size >> 10);
	buf = map_aligned(len, folio_size);
	fill_on_node(buf, len, 0);
	check_folios(buf, nr_pages, folio_size / page_size, "fault on node 0");

	if (!strcmp(mode, "private")) {
		read_pagemap(before);
		move_and_check(before, MPOL_MF_MOVE, 0);
	} else if (!strcmp(mode, "fork")) {
		run_fork(before);
	} else if (!strcmp(mode, "mprotect")) {
		run_mprotect(before);
	} else if (!strcmp(mode, "softdirty")) {
		run_softdirty(before);
	} else if (!strcmp(mode, "softdirty_none")) {
		run_softdirty_set(before, 0);
	} else if (!strcmp(mode, "softdirty_quarter")) {
		run_softdirty_set(before, 4);
	} else if (!strcmp(mode, "softdirty_whole")) {
		run_softdirty_set(before, 1);
	} else if (!strcmp(mode, "mlock")) {
		if (mlock(buf, len))
			fail("mlock: %s", strerror(errno));
		check_mlocked("after mlock");
		read_pagemap(before);
		move_and_check(before, MPOL_MF_MOVE, 1);
	} else {
		fail("unknown mode '%s'", mode);
	}

	printf("GUEST-TEST: PASS %s (%lu folios of %zu KiB, %s)\n", name,
	       nr_folios, folio_size >> 10, mode);
	return 0;
}
