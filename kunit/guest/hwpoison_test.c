// SPDX-License-Identifier: GPL-2.0
/*
 * hwpoison_test: a large folio with a poisoned page, moved in one batch
 * with healthy ones, must stay on the CPU copy; the healthy ones are still
 * offloaded.
 *
 *   hwpoison_test NAME
 *
 * Run with the test migrator loaded (hwpoison.sh loads it). Faults 16
 * folios of 64K (hugepages-64kB enabled "always", every other size
 * "never", all put back at exit) on node 0, filled with pattern(), and
 * checks through pagemap and /proc/kpageflags that each is one 64K folio.
 * Folio 0 is pinned against splitting by vmsplice()ing its 16 pages into a
 * pipe that is not read, and its page 3 is poisoned with MADV_HWPOISON:
 * memory_failure() marks the page hwpoisoned and the folio has_hwpoisoned,
 * cannot split it (the pipe's references) and sends the task a SIGBUS,
 * which a handler takes. Checked through /proc/kpageflags: folio 0 is
 * still one 64K folio, page 3 alone has KPF_HWPOISON. The pipe is closed,
 * dropping its references, and the 16 folios are moved to node 1 with one
 * move_pages() call, one address per folio. Then:
 *   - the migrator's "poisoned" counter did not grow: the core never
 *     handed it a folio with a known-poisoned page (on a kernel whose test
 *     migrator has no such counter, the next check stands alone);
 *   - its "copied" grew by exactly 15 and "batches" by at least 1: the
 *     healthy folios of the batch were offloaded, the poisoned one was not
 *     (a core that offloads it makes that 16);
 *   - folios 1..15 are on node 1 with every byte;
 *   - folio 0, wherever it is, still holds the bytes of every page but
 *     page 3, which is never read (poisoned: a SIGBUS once it is unmapped).
 * A SIGBUS while reading any of those bytes is a failure. The kernel must
 * not crash or warn, which init checks in the log. The poisoned page stays
 * poisoned until the guest powers off.
 *
 * Prints one line, "GUEST-TEST: PASS|FAIL|SKIP NAME[: why]", with the
 * counters' changes.
 */
#include "guest.h"

#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/uio.h>

#ifndef MADV_HWPOISON
#define MADV_HWPOISON		100
#endif
#define KPF_HWPOISON		19

#define FOLIO_KB		64
#define NR_FOLIOS		16
/* The page of folio 0 that is poisoned. */
#define BAD_PAGE		3
#define MIGRATOR_PARAMS		"/sys/module/migrate_offload_test_migrator/parameters"
#define NO_STATUS		INT_MIN

/* What the SIGBUS handler saw, and where to go when armed. */
static sigjmp_buf sigbus_jmp;
static volatile sig_atomic_t sigbus_armed, sigbus_count;
static volatile int sigbus_code;
static void *volatile sigbus_addr;

static void sigbus_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	sigbus_count++;
	sigbus_code = si->si_code;
	sigbus_addr = si->si_addr;
	/*
	 * Armed while the test reads memory: a fault would come back at
	 * once, so leave the access. The SIGBUS memory_failure() sends at
	 * the injection is no fault: returning from it is fine.
	 */
	if (sigbus_armed)
		siglongjmp(sigbus_jmp, 1);
}

/* A test migrator counter; -1 if it has none of that name (older one). */
static long migrator_param(const char *param)
{
	char path[256];
	long val;

	snprintf(path, sizeof(path), MIGRATOR_PARAMS "/%s", param);
	return try_read_long(path, &val) ? -1 : val;
}

/*
 * The offload counters of /proc/vmstat, by their names, or by the names
 * of v2 of the series; -1 if neither is there.
 */
enum { OFF_BATCHES, OFF_COPIED, OFF_FALLBACK, NR_OFF };
static const char *const offload_stat[NR_OFF][2] = {
	{ "migrate_offload_batches", "pgmigrate_offload_batch" },
	{ "migrate_offload_folios_copied", "pgmigrate_offload_copied" },
	{ "migrate_offload_folios_fallback", "pgmigrate_offload_fallback" },
};

static void offload_read(long *val)
{
	char line[256], key[128];
	unsigned long v;
	FILE *f = fopen("/proc/vmstat", "r");
	int i;

	if (!f)
		fail("open /proc/vmstat: %s", strerror(errno));
	for (i = 0; i < NR_OFF; i++)
		val[i] = -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%127s %lu", key, &v) != 2)
			continue;
		for (i = 0; i < NR_OFF; i++)
			if (!strcmp(key, offload_stat[i][0]) ||
			    !strcmp(key, offload_stat[i][1]))
				val[i] = v;
	}
	fclose(f);
}

/* The change of a counter that may be missing (-1), for printing. */
static const char *delta_str(char *s, size_t len, long before, long after)
{
	if (before < 0 || after < 0)
		snprintf(s, len, "n/a");
	else
		snprintf(s, len, "%+ld", after - before);
	return s;
}

/* A move_pages() status, if it was written. */
static const char *status_str(char *s, size_t len, int status)
{
	if (status == NO_STATUS)
		snprintf(s, len, "not written");
	else
		snprintf(s, len, "%d", status);
	return s;
}

/*
 * Folio 0 after the injection: still one large folio, naturally aligned
 * and physically contiguous (the pipe's references kept memory_failure()
 * from splitting it), with page @bad hwpoisoned and no other. Read by pfn
 * from the first page's, so that page @bad need not be mapped.
 */
static void check_poisoned_folio(char *folio, unsigned long folio_pages,
				 unsigned long bad)
{
	int pagemap = open("/proc/self/pagemap", O_RDONLY);
	int kpageflags = open("/proc/kpageflags", O_RDONLY);
	uint64_t pme, pfn0 = 0, flags;
	unsigned long i;
	int head, tail;

	if (pagemap < 0 || kpageflags < 0)
		fail("open pagemap/kpageflags: %s", strerror(errno));
	for (i = 0; i < folio_pages; i++) {
		pme = read_u64_at(pagemap, (uintptr_t)(folio + i * page_size) / page_size,
				  "pagemap");
		if (!(pme & PM_PRESENT) || !(pme & PM_PFN_MASK)) {
			/* memory_failure() may unmap the poisoned page alone. */
			if (i != bad || !i)
				fail("after MADV_HWPOISON: page %lu of folio 0 not present (pagemap %#llx)",
				     i, (unsigned long long)pme);
		} else if (!i) {
			pfn0 = pme & PM_PFN_MASK;
		} else if ((pme & PM_PFN_MASK) != pfn0 + i) {
			fail("after MADV_HWPOISON: page %lu of folio 0 is pfn %#llx, want %#llx: folio 0 was split",
			     i, (unsigned long long)(pme & PM_PFN_MASK),
			     (unsigned long long)(pfn0 + i));
		}
		flags = read_u64_at(kpageflags, pfn0 + i, "kpageflags");
		head = !!(flags & (1ULL << KPF_COMPOUND_HEAD));
		tail = !!(flags & (1ULL << KPF_COMPOUND_TAIL));
		/*
		 * Still one 64K folio: had it been split, there would be no
		 * large folio with a poisoned page for the batch to leave out.
		 */
		if (!(flags & (1ULL << KPF_THP)) || (i ? head || !tail :
						     !head || tail || pfn0 % folio_pages))
			fail("after MADV_HWPOISON: page %lu of folio 0 (pfn %#llx, kpageflags %#llx) is not page %lu of a %lu KiB folio: the pinned folio was split",
			     i, (unsigned long long)(pfn0 + i),
			     (unsigned long long)flags, i,
			     folio_pages * page_size >> 10);
		/* The injection hit page @bad, and that page alone. */
		if (i == bad && !(flags & (1ULL << KPF_HWPOISON)))
			fail("after MADV_HWPOISON: page %lu of folio 0 (pfn %#llx) has no KPF_HWPOISON (kpageflags %#llx)",
			     i, (unsigned long long)(pfn0 + i),
			     (unsigned long long)flags);
		if (i != bad && (flags & (1ULL << KPF_HWPOISON)))
			fail("after MADV_HWPOISON of page %lu: page %lu of folio 0 is poisoned too (kpageflags %#llx)",
			     bad, i, (unsigned long long)flags);
	}
	close(pagemap);
	close(kpageflags);
}

/*
 * Compare the bytes of every page of the @nr_folios folios of @folio_size
 * from @buf but page @bad of folio 0, with the SIGBUS handler armed: a
 * SIGBUS on one of them fails the test.
 */
static void check_bytes_but_bad(char *buf, unsigned long nr_folios,
				size_t folio_size, unsigned long bad,
				const char *when)
{
	unsigned long i, nr_pages = nr_folios * folio_size / page_size;

	if (sigsetjmp(sigbus_jmp, 1)) {
		sigbus_armed = 0;
		fail("%s: SIGBUS (si_code %d) reading %p, page %ld of the range: a page that is not poisoned is unreadable",
		     when, sigbus_code, sigbus_addr,
		     (long)(((char *)sigbus_addr - buf) / page_size));
	}
	sigbus_armed = 1;
	for (i = 0; i < nr_pages; i++)
		if (i != bad)
			check_bytes(buf, i * page_size, page_size, when);
	sigbus_armed = 0;
}

/*
 * The node of the page at each of the @n addresses (or a negative errno),
 * from move_pages(..., NULL, status), into @status.
 */
static void query_nodes(void **addrs, unsigned long n, int *status,
			const char *when)
{
	if (move_pages(n, addrs, NULL, status, 0))
		fail("%s: move_pages(query): %s", when, strerror(errno));
}

int main(int argc, char **argv)
{
	size_t folio_size = FOLIO_KB << 10, len = NR_FOLIOS * folio_size;
	unsigned long folio_pages, i;
	long copied0, batches0, poisoned0, copied, batches, poisoned;
	long off0[NR_OFF], off[NR_OFF], ret;
	void *addrs[NR_FOLIOS], *folio0_pages[FOLIO_KB];
	int nodes[NR_FOLIOS], status[NR_FOLIOS], folio0_nodes[FOLIO_KB];
	int pipefd[2], err, madv_ret, madv_err, madv_sigbus, madv_code;
	char numbers[768], d0[32], d1[32], d2[32], d3[32], d4[32], *buf;
	struct sigaction sa;
	struct iovec iov;
	unsigned long n0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s NAME\n", argv[0]);
		return 2;
	}
	name = argv[1];
	page_size = sysconf(_SC_PAGESIZE);
	folio_pages = folio_size / page_size;
	if (folio_pages > FOLIO_KB || BAD_PAGE >= folio_pages)
		fail("page size %ld: want 4 KiB", page_size);

	if (migrator_param("registered") != 1)
		fail("the test migrator is not registered (registered: %ld): load it first",
		     migrator_param("registered"));

	/* 16 folios of 64K on node 0, each whole. */
	thp_only_size(FOLIO_KB, "always");
	buf = map_aligned(len, folio_size);
	fill_on_node(buf, len, 0);
	check_nodes(buf, len, 0, "fault on node 0");
	check_folios(buf, len / page_size, folio_pages, "fault on node 0");

	/*
	 * The pipe holds a reference to each page of folio 0 until it is
	 * closed: memory_failure() cannot split the folio, which stays large
	 * with a poisoned page (has_hwpoisoned).
	 */
	if (pipe(pipefd))
		fail("pipe: %s", strerror(errno));
	if (fcntl(pipefd[1], F_SETPIPE_SZ, (int)(4 * folio_size)) < 0)
		fail("F_SETPIPE_SZ: %s", strerror(errno));
	iov.iov_base = buf;
	iov.iov_len = folio_size;
	ret = vmsplice(pipefd[1], &iov, 1, SPLICE_F_NONBLOCK);
	if (ret != (long)folio_size)
		fail("vmsplice of folio 0: %ld bytes (%s), want %zu", ret,
		     ret < 0 ? strerror(errno) : "short", folio_size);

	/*
	 * memory_failure() sends the task a SIGBUS (BUS_MCEERR_AR) when it
	 * cannot split the folio: take it, and anything later.
	 */
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = sigbus_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, NULL))
		fail("sigaction(SIGBUS): %s", strerror(errno));

	errno = 0;
	madv_ret = madvise(buf + BAD_PAGE * page_size, page_size, MADV_HWPOISON);
	madv_err = madv_ret ? errno : 0;
	madv_sigbus = sigbus_count;
	madv_code = sigbus_code;
	/*
	 * EHWPOISON: memory_failure() could not split the folio, as wanted
	 * (0 would mean it could; the check below tells). EINVAL: no
	 * CONFIG_MEMORY_FAILURE, whose sysctl is then missing too; EPERM: no
	 * CAP_SYS_ADMIN. Anything else is the kernel's failure.
	 */
	if (madv_ret && madv_err != EHWPOISON) {
		if (madv_err == EINVAL &&
		    access("/proc/sys/vm/memory_failure_recovery", F_OK))
			skip("the kernel has no CONFIG_MEMORY_FAILURE: madvise(MADV_HWPOISON): %s",
			     strerror(madv_err));
		if (madv_err == EPERM && geteuid())
			skip("MADV_HWPOISON needs CAP_SYS_ADMIN: %s",
			     strerror(madv_err));
		fail("madvise(MADV_HWPOISON) of page %d of folio 0: %s",
		     BAD_PAGE, strerror(madv_err));
	}
	check_poisoned_folio(buf, folio_pages, BAD_PAGE);
	/* The healthy folios were left alone. */
	check_folios(buf + folio_size, (len - folio_size) / page_size, folio_pages,
		     "after MADV_HWPOISON");

	/*
	 * Closing the pipe drops its references without reading the pages
	 * (a read would copy the poisoned one): folio 0 can move.
	 */
	close(pipefd[0]);
	close(pipefd[1]);

	copied0 = migrator_param("copied");
	batches0 = migrator_param("batches");
	poisoned0 = migrator_param("poisoned");
	offload_read(off0);
	if (copied0 < 0 || batches0 < 0)
		fail("the test migrator has no copied/batches counters");

	for (i = 0; i < NR_FOLIOS; i++) {
		addrs[i] = buf + i * folio_size;
		nodes[i] = 1;
		status[i] = NO_STATUS;
	}
	ret = move_pages(NR_FOLIOS, addrs, nodes, status, MPOL_MF_MOVE);
	err = errno;

	copied = migrator_param("copied");
	batches = migrator_param("batches");
	poisoned = migrator_param("poisoned");
	offload_read(off);

	/* Where folio 0's readable pages went (page BAD_PAGE not asked). */
	for (i = n0 = 0; i < folio_pages; i++)
		if (i != BAD_PAGE)
			folio0_pages[n0++] = buf + i * page_size;
	query_nodes(folio0_pages, n0, folio0_nodes, "after the move");

	snprintf(numbers, sizeof(numbers),
		 "move_pages() returned %ld; folio 0: status %s, page 0 on node %d; migrator: copied %+ld, batches %+ld, poisoned %s; vmstat: batches %s, copied %s, fallback %s; SIGBUS at the injection: %d (si_code %d), madvise(): %s",
		 ret, status_str(d0, sizeof(d0), status[0]), folio0_nodes[0],
		 copied - copied0,
		 batches - batches0, delta_str(d1, sizeof(d1), poisoned0, poisoned),
		 delta_str(d2, sizeof(d2), off0[OFF_BATCHES], off[OFF_BATCHES]),
		 delta_str(d3, sizeof(d3), off0[OFF_COPIED], off[OFF_COPIED]),
		 delta_str(d4, sizeof(d4), off0[OFF_FALLBACK], off[OFF_FALLBACK]),
		 madv_sigbus, madv_code, madv_ret ? strerror(madv_err) : "0");

	if (ret < 0)
		fail("move_pages(to node 1): %s; %s", strerror(err), numbers);
	/*
	 * The healthy folios all moved: the poisoned one in the batch must
	 * not hold them back. (The statuses are only written when the whole
	 * call succeeded, else the query below is what tells.)
	 */
	for (i = 1; i < NR_FOLIOS; i++)
		if (status[i] != 1 && (!ret || status[i] != NO_STATUS))
			fail("folio %lu: status %d after the move; %s", i,
			     status[i], numbers);
	check_nodes(buf + folio_size, len - folio_size, 1, "after the move");
	/* Every byte arrived, and folio 0's readable pages kept theirs. */
	check_bytes_but_bad(buf, NR_FOLIOS, folio_size, BAD_PAGE, "after the move");

	/* The core never hands a migrator a folio with a poisoned page. */
	if (poisoned0 >= 0 && poisoned != poisoned0)
		fail("the migrator was handed %ld folio(s) with a poisoned page; %s",
		     poisoned - poisoned0, numbers);
	/*
	 * The other folios of the batch are still offloaded, the poisoned
	 * one is not: 15 copied by the migrator (16 if it was offloaded).
	 */
	if (copied - copied0 != NR_FOLIOS - 1)
		fail("the migrator copied %ld folios, want %d (the healthy ones)%s; %s",
		     copied - copied0, NR_FOLIOS - 1,
		     copied - copied0 == NR_FOLIOS ?
		     ": it was handed the folio with the poisoned page" : "",
		     numbers);
	if (batches - batches0 < 1)
		fail("no batch reached the migrator; %s", numbers);

	printf("GUEST-TEST: PASS %s (%s)\n", name, numbers);
	return 0;
}
