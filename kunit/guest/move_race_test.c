// SPDX-License-Identifier: GPL-2.0
/*
 * move_race_test: change the mappings of 64K mTHPs while move_pages() moves
 * them back and forth between the nodes.
 *
 *   move_race_test NAME MIGRATOR MODE [ROUNDS]
 *
 * MIGRATOR is the migrator that must be registered ("none", "test",
 * "dcbm", "mtcopy"), or "base": a kernel without the series (no copy
 * offload to check; for comparison runs only). 64 anonymous 64K mTHPs
 * (only that size enabled, MADV_HUGEPAGE, 2M aligned) are faulted on node
 * 0. A mover thread moves all of them (one address per folio) to the
 * other node, again and again, while the main thread, ROUNDS times
 * (default 60, 200 for the fork modes, and until the mover has made 10
 * moves), does what MODE says:
 *   zap      to every even folio: MADV_DONTNEED it, write it whole (a new
 *            mTHP), MADV_DONTNEED its second half, and write that half
 *            again (small pages) on every other one of them;
 *   munmap   the same with munmap() and mmap(MAP_FIXED) instead of
 *            MADV_DONTNEED and the refault: the unmapped halves are holes;
 *   fork     fork a child that checks every byte it sees, writes the first
 *            page of every even folio of the first half of the range (copy
 *            on write) and MADV_DONTNEEDs the second half of every odd one
 *            there, in its own address space, and exits (moves with
 *            MPOL_MF_MOVE_ALL: the folios are shared); the folios of the
 *            second half of the range the child unmaps only whole, as it
 *            exits;
 *   fork_cow, fork_zap
 *            the same with the child's writes only, or its MADV_DONTNEEDs;
 *   collapse MADV_COLLAPSE each 2M range (the mTHPs into a PMD THP), check
 *            it, MADV_DONTNEED it and write it again (new mTHPs).
 * The mover's statuses may only be a node, -EBUSY, -EAGAIN, -ENOMEM,
 * -ENOENT or -EFAULT (unmapped); move_pages() must not fail. When both
 * stop, a last move_pages() drains the per-CPU LRU caches (in the fork
 * modes two: every folio moved once more after the race, see below), and
 * then:
 *   - every byte is what was last written there (zero where zapped and not
 *     written again; in fork mode the parent's bytes never changed);
 *   - folios no process unmapped part of (odd folios in zap and munmap,
 *     the second half of the range in the fork modes) are still whole 64K
 *     folios: migration never marks a fully mapped folio partially
 *     mapped, so the next move never splits it (on 7.3.4 every migrated
 *     mTHP is marked, and split by its next move);
 *   - hugepages-64kB/stats/nr_anon_partially_mapped grew by exactly the
 *     number of 64K folios that are really partially mapped now (some
 *     pages of them mapped here, some not), and nr_anon by the number of
 *     64K folios mapped here at all;
 *   - with a migrator the offload counters show it copied folios, with
 *     none nothing was offloaded; in collapse mode at least one collapse
 *     succeeded.
 * NEGATIVE=partial (expect one more partially mapped folio), bytes,
 * offload, or whole (zap mode: take folio 0, which is rewritten half with
 * small pages, for one nobody touched) expects one wrong thing.
 *
 * The folios the child of the fork modes unmaps part of (copy on write,
 * MADV_DONTNEED) may be split, by 7.3.4 and by the series alike: while
 * try_to_migrate() has replaced the parent's PTEs of a shared mTHP with
 * migration entries (their rmap is gone) but not yet the child's, the
 * child's copy on write or zap of one of its pages removes that page's
 * last mapping through the ordinary __folio_remove_rmap(), which sees the
 * folio partially mapped and marks it; migrate_folio_move() carries the
 * mark to the destination, which the parent maps whole, and the next move
 * splits it. So the test counts those splits, and only requires the
 * folios no process unmapped part of to stay whole. The child's exit
 * unmaps every folio too, and could meet the unmap walk the same way (its
 * zap and the parent's batched unmap of the same folio interleaving page
 * by page): the child exits while the mover is paused. A folio the race marked in the
 * mover's last rounds may still be whole, and counted in
 * nr_anon_partially_mapped; so in the fork modes every folio is moved
 * once more after the race (to node 1 and back to 0) before the counters
 * are read: a marked folio is split then, and nr_anon_partially_mapped
 * must count exactly the folios really partially mapped.
 */
#include "migrate_paths.h"

#include <pthread.h>
#include <time.h>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE	25
#endif
#define NF		64
#define FOLIO		(64UL << 10)
#define MIN_MOVES	10
#define MAX_SECS	90
#define GEN_ZERO	(-1)
#define GEN_HOLE	(-2)

static char *buf;
static size_t len;
static unsigned long nr_pages, folio_pages;
static int *gen;		/* per page: the generation written, or GEN_* */
static int mode_fork, child_cow, child_zap;
static volatile int stop;
/* mover_pause(): pause_gen != resume_gen; the mover acks with ack_gen. */
static unsigned long pause_gen, resume_gen, ack_gen;
static unsigned long moves, moved_ok, busy;
static char mover_err[256];
static char stats_dir[256];

static long mstat(const char *f)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", stats_dir, f);
	return read_ulong(path);
}

static void *mover(void *arg)
{
	void **addrs = calloc(NF, sizeof(*addrs));
	int *status = calloc(NF, sizeof(int)), node = 1;
	unsigned long i;
	long ret;

	(void)arg;
	for (i = 0; i < NF; i++)
		addrs[i] = buf + i * FOLIO;
	while (!stop) {
		unsigned long g = __atomic_load_n(&pause_gen, __ATOMIC_SEQ_CST);

		if (g != __atomic_load_n(&resume_gen, __ATOMIC_SEQ_CST)) {
			/* Paused: no move until mover_resume(). */
			__atomic_store_n(&ack_gen, g, __ATOMIC_SEQ_CST);
			usleep(100);
			continue;
		}
		for (i = 0; i < NF; i++)
			status[i] = -1000;
		ret = move_list(addrs, NF, node, mode_fork ? MPOL_MF_MOVE_ALL : MPOL_MF_MOVE,
				status);
		if (ret < 0) {
			snprintf(mover_err, sizeof(mover_err), "move_pages(to node %d): %s",
				 node, strerror(errno));
			break;
		}
		for (i = 0; i < NF; i++) {
			int s = status[i];

			if (s == node)
				moved_ok++;
			else if (s == -EBUSY || s == -EAGAIN || s == -ENOMEM)
				busy++;
			else if (s != -ENOENT && s != -EFAULT && s != -1000 && s != !node) {
				snprintf(mover_err, sizeof(mover_err),
					 "move_pages(to node %d): folio %lu: status %d", node, i, s);
				stop = 1;
			}
		}
		__atomic_add_fetch(&moves, 1, __ATOMIC_RELEASE);
		node = !node;
	}
	free(addrs);
	free(status);
	return NULL;
}

/* Wait until the mover is between two moves, and keep it there. */
static void mover_pause(void)
{
	unsigned long g = __atomic_add_fetch(&pause_gen, 1, __ATOMIC_SEQ_CST);

	while (__atomic_load_n(&ack_gen, __ATOMIC_SEQ_CST) != g && !stop)
		usleep(50);
}

static void mover_resume(void)
{
	__atomic_store_n(&resume_gen, __atomic_load_n(&pause_gen, __ATOMIC_SEQ_CST),
			 __ATOMIC_SEQ_CST);
}

static void write_pages(unsigned long first, unsigned long n, int g)
{
	unsigned long p;

	for (p = first; p < first + n; p++) {
		fill_words(buf + p * page_size, p * page_size / 8, page_size / 8, 0, g);
		gen[p] = g;
	}
}

static void zap(unsigned long first, unsigned long n, int munmap_it)
{
	unsigned long p;

	if (munmap_it) {
		if (munmap(buf + first * page_size, n * page_size))
			fail("munmap: %s", strerror(errno));
	} else if (madvise(buf + first * page_size, n * page_size, MADV_DONTNEED)) {
		fail("MADV_DONTNEED: %s", strerror(errno));
	}
	for (p = first; p < first + n; p++)
		gen[p] = munmap_it ? GEN_HOLE : GEN_ZERO;
}

static void remap(unsigned long first, unsigned long n)
{
	char *p = buf + first * page_size;

	if (mmap(p, n * page_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != p)
		fail("mmap(MAP_FIXED): %s", strerror(errno));
	if (madvise(p, n * page_size, MADV_HUGEPAGE))
		fail("MADV_HUGEPAGE: %s", strerror(errno));
}

static void check_page(unsigned long p, const char *when)
{
	uint64_t *w = (uint64_t *)(buf + p * page_size);
	long bad;
	size_t i;

	if (gen[p] == GEN_HOLE)
		return;
	if (gen[p] == GEN_ZERO) {
		for (i = 0; i < (size_t)page_size / 8; i++)
			if (w[i])
				fail("%s: page %lu should be zero (zapped), word %zu is %#llx",
				     when, p, i, (unsigned long long)w[i]);
		return;
	}
	bad = bad_word((char *)w, p * page_size / 8, page_size / 8,
		       negative("bytes") && p == 3 ? 1 : 0, gen[p]);
	if (bad >= 0)
		fail("%s: page %lu (generation %d): word %ld is %#llx", when, p, gen[p], bad,
		     (unsigned long long)w[bad]);
}

/*
 * The child of the fork modes: check every byte, copy on write or zap part
 * of the folios of the first half of the range (the mover moving them),
 * tell the parent (@done), and exit when it closes @release (the mover
 * paused).
 */
static void child(int done, int release)
{
	unsigned long p, i;
	char c;

	name = "move_race_test child";
	for (p = 0; p < nr_pages; p++)
		check_page(p, "child");
	for (i = 0; i < NF / 2; i++) {
		if (i % 2 == 0 && child_cow)
			*(volatile uint64_t *)(buf + i * FOLIO) ^= 0xff;
		else if (i % 2 && child_zap &&
			 madvise(buf + i * FOLIO + FOLIO / 2, FOLIO / 2, MADV_DONTNEED))
			_exit(3);
	}
	if (write(done, "x", 1) != 1)
		_exit(4);
	while (read(release, &c, 1) > 0)
		;
	_exit(0);
}

int main(int argc, char **argv)
{
	long nr_anon0, partial0, split0, d_anon, d_partial;
	unsigned long bad = 0, first_bad = 0;
	char bad_list[256] = "";
	size_t bad_off = 0;
	unsigned long i, p, rounds = 60, r, collapsed = 0, collapse_tries = 0;
	unsigned long partial = 0, seen = 0, whole_expected, touched = 0, touched_split = 0;
	struct offload_counters before, d;
	int have_migrator, base, munmap_mode = 0, status;
	const char *mode;
	time_t end;
	pthread_t th;
	struct layout l;
	uint64_t l_first_pfn, l_first_flags;
	void **addrs;
	int *st;

	if (argc < 4 || argc > 5) {
		fprintf(stderr, "usage: %s NAME none|test|dcbm|mtcopy|base zap|munmap|fork|fork_cow|fork_zap|collapse [ROUNDS]\n",
			argv[0]);
		return 2;
	}
	name = argv[1];
	mode = argv[3];
	if (argc == 5)
		rounds = strtoul(argv[4], NULL, 0);
	else if (!strncmp(mode, "fork", 4))
		rounds = 200;	/* a race window per round: more tries */
	page_size = sysconf(_SC_PAGESIZE);
	folio_pages = FOLIO / page_size;
	len = NF * FOLIO;
	nr_pages = len / page_size;
	base = !strcmp(argv[2], "base");
	have_migrator = base ? 0 : check_migrator(argv[2]);
	mode_fork = !strncmp(mode, "fork", 4);
	child_cow = !strcmp(mode, "fork") || !strcmp(mode, "fork_cow");
	child_zap = !strcmp(mode, "fork") || !strcmp(mode, "fork_zap");
	if (mode_fork && !child_cow && !child_zap)
		fail("unknown mode '%s'", mode);
	munmap_mode = !strcmp(mode, "munmap");
	if (!mode_fork && !munmap_mode && strcmp(mode, "zap") && strcmp(mode, "collapse"))
		fail("unknown mode '%s'", mode);
	gen = calloc(nr_pages, sizeof(*gen));
	addrs = calloc(nr_pages, sizeof(*addrs));
	st = calloc(nr_pages, sizeof(*st));
	if (!gen || !addrs || !st)
		fail("out of memory");

	thp_only_size(FOLIO >> 10, "madvise");
	snprintf(stats_dir, sizeof(stats_dir), THP_DIR "/hugepages-%lukB/stats", FOLIO >> 10);
	nr_anon0 = mstat("nr_anon");
	partial0 = mstat("nr_anon_partially_mapped");
	split0 = mstat("split");
	buf = map_aligned(len, PMD_SIZE);
	bind_to_node(0);
	write_pages(0, nr_pages, 0);
	check_folios(buf, nr_pages, folio_pages, "after the fill");

	if (!base)
		offload_snapshot(&before);
	if (pthread_create(&th, NULL, mover, NULL))
		fail("pthread_create");
	end = time(NULL) + MAX_SECS;
	for (r = 0; (r < rounds || __atomic_load_n(&moves, __ATOMIC_ACQUIRE) < MIN_MOVES) &&
		    !stop && time(NULL) < end; r++) {
		int g = r + 1;

		if (mode_fork) {
			pid_t parent = getpid(), pid;
			int done[2], release[2];
			ssize_t n;
			char c;

			if (pipe(done) || pipe(release))
				fail("pipe: %s", strerror(errno));
			fflush(stdout);
			pid = fork();
			if (pid < 0)
				fail("fork: %s", strerror(errno));
			if (!pid) {
				die_with_parent(parent);
				close(done[0]);
				close(release[1]);
				child(done[1], release[0]);
			}
			close(done[1]);
			close(release[0]);
			/* The child touched what it touches, or died. */
			n = read(done[0], &c, 1);
			mover_pause();
			close(release[1]);
			status = 0;
			if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
			    WEXITSTATUS(status) || n != 1)
				fail("round %lu: the child failed (status %#x)", r, status);
			mover_resume();
			close(done[0]);
			continue;
		}
		if (!strcmp(mode, "collapse")) {
			unsigned long k = r % (len / PMD_SIZE), first = k * PMD_SIZE / page_size;

			collapse_tries++;
			if (!madvise(buf + k * PMD_SIZE, PMD_SIZE, MADV_COLLAPSE))
				collapsed++;
			/*
			 * EINVAL: what khugepaged found did not fit (a
			 * migration entry, a folio isolated by the mover).
			 */
			else if (errno != EAGAIN && errno != EBUSY && errno != ENOMEM &&
				 errno != EINVAL)
				fail("round %lu: MADV_COLLAPSE: %s", r, strerror(errno));
			for (p = first; p < first + PMD_SIZE / page_size; p++)
				check_page(p, "after MADV_COLLAPSE");
			zap(first, PMD_SIZE / page_size, 0);
			write_pages(first, PMD_SIZE / page_size, g);
			continue;
		}
		for (i = 0; i < NF; i += 2) {
			unsigned long first = i * folio_pages, half = folio_pages / 2;

			zap(first, folio_pages, munmap_mode);
			if (munmap_mode)
				remap(first, folio_pages);
			write_pages(first, folio_pages, g);
			zap(first + half, half, munmap_mode);
			if (i % 4 == 0) {
				if (munmap_mode)
					remap(first + half, half);
				write_pages(first + half, half, g);
			}
		}
	}
	stop = 1;
	pthread_join(th, NULL);
	bind_to_node(-1);
	if (mover_err[0])
		fail("the mover: %s", mover_err);
	if (moves < MIN_MOVES)
		fail("the mover made only %lu moves in %d s", moves, MAX_SECS);
	if (!strcmp(mode, "collapse") && !collapsed)
		fail("none of %lu MADV_COLLAPSE succeeded", collapse_tries);

	/*
	 * Drain the per-CPU LRU caches: move what is mapped to node 0. In the
	 * fork modes first to node 1: every folio is moved once after the
	 * race, so one the race marked is split now (see above).
	 */
	for (p = 0, i = 0; p < nr_pages; p++)
		if (gen[p] >= 0)
			addrs[i++] = buf + p * page_size;
	if (mode_fork && move_list(addrs, i, 1, MPOL_MF_MOVE_ALL, st) < 0)
		fail("the move_pages() to node 1 after the race: %s", strerror(errno));
	if (move_list(addrs, i, 0, MPOL_MF_MOVE_ALL, st) < 0)
		fail("the last move_pages(): %s", strerror(errno));
	if (base)
		memset(&d, 0, sizeof(d));
	else
		offload_delta(&before, &d);

	/* What is mapped, and which 64K folios are partially mapped. */
	layout_read(&l, buf, nr_pages);
	for (p = 0; p < nr_pages; p++) {
		if (gen[p] >= 0 && !l.pfn[p])
			fail("page %lu (generation %d) is not mapped", p, gen[p]);
		if (gen[p] < 0 && l.pfn[p] && !(l.flags[p] & BIT64(KPF_ZERO_PAGE_BIT)))
			fail("page %lu was zapped, yet maps pfn %#llx", p,
			     (unsigned long long)l.pfn[p]);
	}
	whole_expected = 0;
	for (i = 0; i < NF; i++) {
		unsigned long first = i * folio_pages;
		int untouched = mode_fork ? i >= NF / 2 : strcmp(mode, "collapse") && i % 2;
		int whole = 1;

		/* NEGATIVE=whole: folio 0 is rewritten, half of it small pages. */
		if (negative("whole") && !mode_fork && strcmp(mode, "collapse") && i == 0)
			untouched = 1;
		for (p = first; p < first + folio_pages; p++) {
			unsigned long j = p - first;

			if (!(l.flags[p] & BIT64(KPF_THP)) ||
			    (j == 0) != page_is_head(&l, p) ||
			    l.pfn[p] != l.pfn[first] + j || l.pfn[first] % folio_pages) {
				whole = 0;
				break;
			}
		}
		/* The fork modes' child unmapped part of this one: may be split. */
		if (mode_fork && i < NF / 2 && (i % 2 ? child_zap : child_cow)) {
			touched++;
			touched_split += !whole;
		}
		if (untouched) {
			whole_expected++;
			if (!whole) {
				if (!bad++)
					first_bad = p;
				if (bad_off < sizeof(bad_list) - 8)
					bad_off += snprintf(bad_list + bad_off,
							    sizeof(bad_list) - bad_off,
							    " %lu", i);
			}
		}
	}
	/*
	 * The 64K folios mapped here: group the present THP pages by
	 * pfn / 16 (64K folios are naturally aligned); pages of a 2M THP
	 * (collapse mode) are told apart by a head 512 pages before.
	 */
	for (p = 0; p < nr_pages; p++) {
		uint64_t f;
		unsigned long q, cnt = 0;
		int first_seen = 1;

		if (!l.pfn[p] || !(l.flags[p] & BIT64(KPF_THP)) ||
		    (l.flags[p] & BIT64(KPF_ZERO_PAGE_BIT)))
			continue;
		if (p % (PMD_SIZE / page_size) == 0 && page_is_head(&l, p) &&
		    l.pfn[p] % (PMD_SIZE / page_size) == 0 &&
		    p + PMD_SIZE / page_size <= nr_pages &&
		    l.pfn[p + PMD_SIZE / page_size - 1] == l.pfn[p] + PMD_SIZE / page_size - 1 &&
		    !page_is_head(&l, p + folio_pages)) {
			p += PMD_SIZE / page_size - 1;	/* a 2M THP */
			continue;
		}
		f = l.pfn[p] / folio_pages;
		for (q = 0; q < p; q++)
			if (l.pfn[q] && l.pfn[q] / folio_pages == f &&
			    (l.flags[q] & BIT64(KPF_THP))) {
				first_seen = 0;
				break;
			}
		if (!first_seen)
			continue;
		for (q = p; q < nr_pages; q++)
			cnt += l.pfn[q] && l.pfn[q] / folio_pages == f &&
			       (l.flags[q] & BIT64(KPF_THP));
		seen++;
		partial += cnt < folio_pages;
	}
	l_first_pfn = bad ? l.pfn[first_bad] : 0;
	l_first_flags = bad ? l.flags[first_bad] : 0;
	layout_free(&l);
	d_anon = mstat("nr_anon") - nr_anon0;
	d_partial = mstat("nr_anon_partially_mapped") - partial0;
	printf("%s: %lu rounds, %lu moves (%lu folios moved, %lu busy), %lu collapses of %lu; 64K folios mapped here %lu, partially %lu; nr_anon %+ld, nr_anon_partially_mapped %+ld, split %+ld; offload: %lu batches, %lu copied, %lu fell back\n",
	       name, r, moves, moved_ok, busy, collapsed, collapse_tries, seen, partial, d_anon,
	       d_partial, mstat("split") - split0, d.batches, d.copied, d.fallback);
	if (mode_fork)
		printf("%s: %lu of the %lu folios the children unmapped part of were split (allowed: a child's unmap that meets the unmap walk of a migration marks the folio partially mapped, on 7.3.4 too)\n",
		       name, touched_split, touched);
	if (bad)
		fail("%lu of %lu folios no process unmapped part of are not whole 64K folios any more (split: marked partially mapped while fully mapped?), folios%s; first page %lu: pfn %#llx, kpageflags %#llx",
		     bad, whole_expected, bad_list, first_bad,
		     (unsigned long long)l_first_pfn, (unsigned long long)l_first_flags);

	for (p = 0; p < nr_pages; p++)
		check_page(p, "at the end");
	if (d_partial != (long)partial + negative("partial"))
		fail("nr_anon_partially_mapped grew by %ld, want %ld: %lu 64K folios are partially mapped (of %lu mapped here)",
		     d_partial, (long)partial + negative("partial"), partial, seen);
	if (d_anon != (long)seen)
		fail("nr_anon grew by %ld, but %lu 64K folios are mapped here", d_anon, seen);
	if (!base &&
	    (have_migrator ^ negative("offload") ? !d.copied : (d.batches || d.copied || d.fallback)))
		fail("offload: %lu batches, %lu folios copied by the migrator, %lu fell back; want %s",
		     d.batches, d.copied, d.fallback,
		     have_migrator ^ negative("offload") ? "copies by the migrator" : "none");

	printf("GUEST-TEST: PASS %s (%s: %lu rounds against %lu moves; %lu untouched folios whole; %lu partially mapped, all counted; migrator %s)\n",
	       name, mode, r, moves, whole_expected, partial, argv[2]);
	return 0;
}
