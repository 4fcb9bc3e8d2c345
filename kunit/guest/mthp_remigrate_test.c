// SPDX-License-Identifier: GPL-2.0
/*
 * mthp_remigrate_test: migrate anonymous mTHPs back and forth between the
 * two nodes and check that they stay whole.
 *
 *   mthp_remigrate_test NAME FOLIO_KB NR_FOLIOS [partial]
 *
 * Faults NR_FOLIOS folios of FOLIO_KB (only that mTHP size enabled) on
 * node 0 and moves them with move_pages(), one address per folio, to
 * node 1, back to node 0 and to node 1 again. After every step it prints a
 * line of the size's /sys/kernel/mm/transparent_hugepage/hugepages-<N>kB/
 * stats/ counters (as changes since the start) and checks that:
 *   - every page is on the node it was moved to and holds its bytes;
 *   - nr_anon still counts NR_FOLIOS folios, nr_anon_partially_mapped,
 *     split and split_deferred did not move: a fully mapped folio is never
 *     marked partially mapped by its migration, so never split by the next;
 *   - /proc/self/pagemap and /proc/kpageflags show every folio whole: a
 *     compound head on its first page, tails on the others, physically
 *     contiguous and naturally aligned.
 * A counter mismatch is reported after the last move, so that the printed
 * lines show what the following moves did to the folios.
 *
 * With "partial", the last page of every folio is unmapped first, so the
 * folios really are partially mapped. The kernel queues each of them for
 * deferred split then, and the migration splits them and moves the
 * remaining small pages; the pages that are left keep their bytes and all
 * arrive on node 1, and a second move of those pages back to node 0
 * splits nothing more.
 *
 *   mthp_remigrate_test NAME 2048 NR_FOLIOS pmd_forked_partial
 *
 * PMD-mapped THPs shared with a forked child that maps only half of each:
 * NR_FOLIOS 2M THPs are faulted on node 0 (SKIP if the machine cannot give
 * them), the process forks, and the child unmaps the second half of every
 * 2M range, which splits its PMDs into PTEs over the first half and leaves
 * each folio whole, mapped entirely by the parent's PMD and half by the
 * child's PTEs: fully mapped, and never marked partially mapped. The
 * parent then moves the folios (move_pages(MPOL_MF_MOVE_ALL), one address
 * per folio) to node 1, back to node 0 and to node 1 again. When
 * set_pmd_migration_entry() removes the parent's PMD mapping before the
 * child's PTEs are replaced (the parent's VMA comes first in the anon_vma
 * tree), only the child's PTEs are left and the folio looks partially
 * mapped: if that removal queues it for deferred split, the mark is
 * carried over to the destination folio, and the next move splits it.
 * After every step the test prints the 2048kB mTHP stats, the THP
 * counters of /proc/vmstat (thp_split_page, thp_deferred_split_page,
 * thp_split_pmd, thp_migration_success/fail/split) as changes
 * since the start, and the parent's first folio (pfn, node, kpageflags,
 * AnonHugePages), then checks that:
 *   - the parent still maps every 2M range by a PMD (AnonHugePages) with
 *     one whole THP (pagemap + kpageflags) on the node it was moved to,
 *     holding its bytes;
 *   - the child, still mapping the first half by PTEs (no AnonHugePages),
 *     reads its bytes there, on that node, as the first half of the very
 *     folios the parent maps (same pfns);
 *   - no counter moved but nr_anon (+NR_FOLIOS), thp_split_pmd (+NR_FOLIOS,
 *     the child's munmap) and thp_migration_success (+NR_FOLIOS a move):
 *     nothing marked partially mapped, queued, or split.
 * A folio found split fails at once; counter mismatches are reported after
 * the last move (or with the split), so that the lines show every step.
 */
#include "guest.h"

#include <sys/wait.h>

#define MPOL_MF_MOVE_ALL	(1 << 2)
#define KPF_THP_MASK		((1ULL << KPF_COMPOUND_HEAD) | \
				 (1ULL << KPF_COMPOUND_TAIL) | (1ULL << KPF_THP))

static char stats_dir[256];

struct mthp_stats {
	long nr_anon, partially_mapped, split, split_deferred;
};

static long stat_read(const char *file)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", stats_dir, file);
	return read_ulong(path);
}

static void stats_read(struct mthp_stats *s)
{
	s->nr_anon = stat_read("nr_anon");
	s->partially_mapped = stat_read("nr_anon_partially_mapped");
	s->split = stat_read("split");
	s->split_deferred = stat_read("split_deferred");
}

/* The first mismatch of a stats_check() that was told to carry on. */
static char stats_failure[512];

/*
 * Print the counters' changes since @base and check them against @want. A
 * mismatch fails the test at once if @fatal, else it is kept in
 * stats_failure, so that the table goes on to show the following steps.
 */
static void stats_check(const struct mthp_stats *base, const struct mthp_stats *want,
			const char *when, int fatal)
{
	struct mthp_stats now, d;

	stats_read(&now);
	d.nr_anon = now.nr_anon - base->nr_anon;
	d.partially_mapped = now.partially_mapped - base->partially_mapped;
	d.split = now.split - base->split;
	d.split_deferred = now.split_deferred - base->split_deferred;
	printf("%s: %-18s nr_anon %5ld  nr_anon_partially_mapped %5ld  split %5ld  split_deferred %5ld\n",
	       name, when, d.nr_anon, d.partially_mapped, d.split, d.split_deferred);
	if (d.nr_anon != want->nr_anon || d.partially_mapped != want->partially_mapped ||
	    d.split != want->split || d.split_deferred != want->split_deferred) {
		char msg[sizeof(stats_failure)];

		snprintf(msg, sizeof(msg),
			 "%s: nr_anon %+ld, nr_anon_partially_mapped %+ld, split %+ld, split_deferred %+ld; want %+ld, %+ld, %+ld, %+ld",
			 when, d.nr_anon, d.partially_mapped, d.split,
			 d.split_deferred, want->nr_anon, want->partially_mapped,
			 want->split, want->split_deferred);
		if (fatal)
			fail("%s", msg);
		if (!stats_failure[0])
			memcpy(stats_failure, msg, sizeof(msg));
	}
}

/*
 * Move @count pages, given by their addresses, to @node with move_pages()
 * @flags. Returns 0 if all got there, else -1 with what went wrong in @err.
 */
static int try_move_to(void **addrs, unsigned long count, int node, int flags,
		       const char *when, char *err, size_t err_len)
{
	int *nodes = calloc(count, sizeof(*nodes));
	int *status = calloc(count, sizeof(*status));
	unsigned long i;
	long ret;
	int rc = 0;

	if (!nodes || !status)
		fail("out of memory");
	for (i = 0; i < count; i++)
		nodes[i] = node;
	ret = move_pages(count, addrs, nodes, status, flags);
	if (ret < 0) {
		snprintf(err, err_len, "%s: move_pages(to node %d): %s", when,
			 node, strerror(errno));
		rc = -1;
	} else if (ret > 0) {
		snprintf(err, err_len, "%s: move_pages(to node %d): %ld pages not migrated",
			 when, node, ret);
		rc = -1;
	}
	for (i = 0; !rc && i < count; i++) {
		if (status[i] != node) {
			snprintf(err, err_len, "%s: page %lu: status %d after the move to node %d",
				 when, i, status[i], node);
			rc = -1;
		}
	}
	free(nodes);
	free(status);
	return rc;
}

/* try_move_to(), failing the test if not everything got there. */
static void move_to(void **addrs, unsigned long count, int node, int flags,
		    const char *when)
{
	char err[256];

	if (try_move_to(addrs, count, node, flags, when, err, sizeof(err)))
		fail("%s", err);
}

/* Fully mapped folios: three moves, nothing marked, nothing split. */
static void run_whole(char *buf, unsigned long nr_folios, size_t folio_size,
		      const struct mthp_stats *base)
{
	unsigned long folio_pages = folio_size / page_size, i;
	struct mthp_stats want = { .nr_anon = nr_folios };
	size_t len = nr_folios * folio_size;
	void **addrs = calloc(nr_folios, sizeof(*addrs));
	static const int to[] = { 1, 0, 1 };
	char when[64];
	int round;

	if (!addrs)
		fail("out of memory");
	for (i = 0; i < nr_folios; i++)
		addrs[i] = buf + i * folio_size;
	for (round = 0; round < 3; round++) {
		snprintf(when, sizeof(when), "move %d to node %d", round + 1, to[round]);
		move_to(addrs, nr_folios, to[round], MPOL_MF_MOVE, when);
		stats_check(base, &want, when, 0);
		check_nodes(buf, len, to[round], when);
		check_bytes(buf, 0, len, when);
		check_folios(buf, nr_folios * folio_pages, folio_pages, when);
	}
	if (stats_failure[0])
		fail("%s", stats_failure);
	free(addrs);
}

/* Partially mapped folios: split on migration, as they always were. */
static void run_partial(char *buf, unsigned long nr_folios, size_t folio_size,
			const struct mthp_stats *base)
{
	unsigned long folio_pages = folio_size / page_size, i, j, n = 0;
	unsigned long mapped_pages = nr_folios * (folio_pages - 1);
	struct mthp_stats want = { .nr_anon = nr_folios };
	void **addrs = calloc(mapped_pages, sizeof(*addrs));
	char *folio;

	if (!addrs)
		fail("out of memory");
	for (i = 0; i < nr_folios; i++) {
		folio = buf + i * folio_size;
		if (munmap(folio + folio_size - page_size, page_size))
			fail("munmap: %s", strerror(errno));
		addrs[i] = folio;
	}
	want.partially_mapped = nr_folios;
	want.split_deferred = nr_folios;
	stats_check(base, &want, "munmap last pages", 1);

	/* move_pages() splits each folio and moves what is left of it. */
	move_to(addrs, nr_folios, 1, MPOL_MF_MOVE, "move 1 to node 1");
	want.nr_anon = 0;
	want.partially_mapped = 0;
	want.split = nr_folios;
	stats_check(base, &want, "move 1 to node 1", 1);
	for (i = 0; i < nr_folios; i++) {
		folio = buf + i * folio_size;
		check_nodes(folio, folio_size - page_size, 1, "move 1 to node 1");
		check_bytes(buf, i * folio_size, folio_size - page_size,
			    "move 1 to node 1");
		check_folios(folio, folio_pages - 1, 1, "move 1 to node 1");
		for (j = 0; j < folio_pages - 1; j++)
			addrs[n++] = folio + j * page_size;
	}

	/* The small pages move back one by one, with nothing left to split. */
	move_to(addrs, mapped_pages, 0, MPOL_MF_MOVE, "move 2 to node 0");
	stats_check(base, &want, "move 2 to node 0", 1);
	for (i = 0; i < nr_folios; i++) {
		check_nodes(buf + i * folio_size, folio_size - page_size, 0,
			    "move 2 to node 0");
		check_bytes(buf, i * folio_size, folio_size - page_size,
			    "move 2 to node 0");
	}
	free(addrs);
}

/* The /proc/vmstat THP counters of pmd_forked_partial. */
enum { EV_SPLIT_PAGE, EV_DEFERRED_SPLIT, EV_SPLIT_PMD, EV_MIGRATION_SUCCESS,
       EV_MIGRATION_FAIL, EV_MIGRATION_SPLIT, NR_EVENTS };
static const char *const thp_events[NR_EVENTS] = {
	"thp_split_page", "thp_deferred_split_page", "thp_split_pmd",
	"thp_migration_success", "thp_migration_fail", "thp_migration_split",
};

static void events_read(unsigned long *ev)
{
	int i;

	for (i = 0; i < NR_EVENTS; i++)
		ev[i] = vmstat(thp_events[i]);
}

/* stats_check() for the THP counters of /proc/vmstat. */
static void events_check(const unsigned long *base, const long *want,
			 const char *when, int fatal)
{
	unsigned long now[NR_EVENTS];
	char line[512], msg[sizeof(stats_failure)];
	long d[NR_EVENTS];
	int i, off = 0, bad = 0;

	events_read(now);
	for (i = 0; i < NR_EVENTS; i++) {
		d[i] = now[i] - base[i];
		off += snprintf(line + off, sizeof(line) - off, "%s%s %ld",
				i ? "  " : " ", thp_events[i], d[i]);
		bad |= d[i] != want[i];
	}
	printf("%s: %-18s%s\n", name, when, line);
	if (!bad)
		return;
	off = snprintf(msg, sizeof(msg), "%s:", when);
	for (i = 0; i < NR_EVENTS; i++)
		off += snprintf(msg + off, sizeof(msg) - off, " %s %+ld%s",
				thp_events[i], d[i], i < NR_EVENTS - 1 ? "," : "");
	off += snprintf(msg + off, sizeof(msg) - off, "; want");
	for (i = 0; i < NR_EVENTS; i++)
		off += snprintf(msg + off, sizeof(msg) - off, " %+ld%s", want[i],
				i < NR_EVENTS - 1 ? "," : "");
	if (fatal)
		fail("%s", msg);
	if (!stats_failure[0])
		memcpy(stats_failure, msg, sizeof(msg));
}

/* The AnonHugePages (anonymous THPs mapped by PMDs) of [start, end), in KiB. */
static long anon_huge_kb(const char *start, const char *end)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	unsigned long vm_start, vm_end, kb;
	char line[4096];
	long sum = 0;
	int in = 0;

	if (!f)
		fail("open /proc/self/smaps: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &vm_start, &vm_end) == 2)
			in = vm_start < (uintptr_t)end && vm_end > (uintptr_t)start;
		else if (in && sscanf(line, "AnonHugePages: %lu kB", &kb) == 1)
			sum += kb;
	}
	fclose(f);
	return sum;
}

/* The pfn of the page at @addr, which must be present. */
static uint64_t page_pfn(char *addr, const char *when)
{
	int pagemap = open("/proc/self/pagemap", O_RDONLY);
	uint64_t pme;

	if (pagemap < 0)
		fail("open pagemap: %s", strerror(errno));
	pme = read_u64_at(pagemap, (uintptr_t)addr / page_size, "pagemap");
	close(pagemap);
	if (!(pme & PM_PRESENT) || !(pme & PM_PFN_MASK))
		fail("%s: %p not present (pagemap %#llx)", when, (void *)addr,
		     (unsigned long long)pme);
	return pme & PM_PFN_MASK;
}

static int read_full(int fd, void *p, size_t len)
{
	ssize_t n;

	while (len) {
		n = read(fd, p, len);
		if (n <= 0)
			return -1;
		p = (char *)p + n;
		len -= n;
	}
	return 0;
}

/*
 * The child of pmd_forked_partial: unmaps the second half of every 2M range,
 * then, after that and after every move the parent tells it of (the node the
 * folios were moved to; -1: done), checks the first halves and answers with
 * the pfn of each. Its failures print their own FAIL line.
 */
static void __attribute__((noreturn))
pmd_child(char *buf, unsigned long nr_folios, int cmd_fd, int reply_fd)
{
	static char child_name[128];
	size_t half = PMD_SIZE / 2, len = nr_folios * PMD_SIZE;
	uint64_t *pfns = calloc(nr_folios, sizeof(*pfns));
	int node = 0, step = 0;
	unsigned long i;
	char when[64];
	long kb;

	snprintf(child_name, sizeof(child_name), "%s child", name);
	name = child_name;
	if (!pfns)
		fail("out of memory");
	for (i = 0; i < nr_folios; i++)
		if (munmap(buf + i * PMD_SIZE + half, half))
			fail("munmap: %s", strerror(errno));
	for (;;) {
		if (step)
			snprintf(when, sizeof(when), "move %d to node %d", step, node);
		else
			snprintf(when, sizeof(when), "munmap half");
		kb = anon_huge_kb(buf, buf + len);
		if (kb)
			fail("%s: %ld KiB mapped by PMDs, want the half of every folio mapped by PTEs",
			     when, kb);
		for (i = 0; i < nr_folios; i++) {
			char *folio = buf + i * PMD_SIZE;

			check_bytes(buf, i * PMD_SIZE, half, when);
			check_nodes(folio, half, node, when);
			/* The first half of a whole 2M folio. */
			check_folios(folio, half / page_size, PMD_SIZE / page_size, when);
			pfns[i] = page_pfn(folio, when);
		}
		if (write(reply_fd, pfns, nr_folios * sizeof(*pfns)) !=
		    (ssize_t)(nr_folios * sizeof(*pfns)))
			_exit(2);
		if (read_full(cmd_fd, &node, sizeof(node)) || node < 0)
			_exit(node < 0 ? 0 : 2);
		step++;
	}
}

/* Wait for the child's pfns; a child that failed has said why. */
static void child_answer(int fd, pid_t pid, uint64_t *pfns, unsigned long nr_folios)
{
	int status;

	if (!read_full(fd, pfns, nr_folios * sizeof(*pfns)))
		return;
	if (waitpid(pid, &status, 0) != pid)
		fail("waitpid: %s", strerror(errno));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 1)
		exit(1);
	fail("the child died without answering (status %#x)", status);
}

/*
 * The parent's side of every step of pmd_forked_partial: print the counters
 * and the first folio, and fail at once, with the first counter mismatch
 * seen so far, if a 2M range is no longer one THP.
 */
static void pmd_parent_report(char *buf, unsigned long nr_folios,
			      const struct mthp_stats *base, const struct mthp_stats *want,
			      const unsigned long *ev_base, const long *ev_want,
			      const char *when, int fatal)
{
	int *nodes = page_nodes(buf, page_size, when);
	uint64_t flags, pfn = page_pfn(buf, when);
	unsigned long i;

	stats_check(base, want, when, fatal);
	events_check(ev_base, ev_want, when, fatal);
	read_kpageflags(buf, 1, &flags, when);
	printf("%s: %-18s folio 0: pfn %#llx node %d kpageflags %#llx; AnonHugePages %ld kB\n",
	       name, when, (unsigned long long)pfn, nodes[0],
	       (unsigned long long)flags,
	       anon_huge_kb(buf, buf + nr_folios * PMD_SIZE));
	free(nodes);
	for (i = 0; i < nr_folios; i++) {
		read_kpageflags(buf + i * PMD_SIZE, 1, &flags, when);
		if ((flags & KPF_THP_MASK) != ((1ULL << KPF_COMPOUND_HEAD) | (1ULL << KPF_THP)))
			fail("%s: the 2M range %lu is no longer one THP (kpageflags %#llx of its first page): the folio was split%s%s",
			     when, i, (unsigned long long)flags,
			     stats_failure[0] ? "; first counter mismatch: " : "",
			     stats_failure);
	}
}

/*
 * Then check that every 2M range is still one whole THP mapped by a PMD,
 * on @node, with its bytes.
 */
static void pmd_parent_check(char *buf, unsigned long nr_folios, int node,
			     const char *when)
{
	size_t len = nr_folios * PMD_SIZE;
	unsigned long folio_pages = PMD_SIZE / page_size;
	long kb = anon_huge_kb(buf, buf + len);

	if (kb != (long)(len >> 10))
		fail("%s: %ld KiB mapped by PMDs, want %zu", when, kb, len >> 10);
	check_nodes(buf, len, node, when);
	check_bytes(buf, 0, len, when);
	check_folios(buf, nr_folios * folio_pages, folio_pages, when);
}

/*
 * pmd_forked_partial: 2M THPs mapped by the parent's PMDs and by PTEs over
 * their first half in a forked child, moved back and forth.
 */
static void run_pmd_forked_partial(unsigned long nr_folios,
				   const struct mthp_stats *base)
{
	size_t len = nr_folios * PMD_SIZE;
	unsigned long ev_base[NR_EVENTS], i, nr_thp = 0;
	struct mthp_stats want = { .nr_anon = nr_folios };
	long ev_want[NR_EVENTS] = { 0 };
	void **addrs = calloc(nr_folios, sizeof(*addrs));
	uint64_t *pfns = calloc(nr_folios, sizeof(*pfns)), flags;
	static const int to[] = { 1, 0, 1 };
	int to_child[2], to_parent[2], status, round, cmd;
	char when[64], move_err[256], *buf;
	int moved;
	pid_t pid;

	if (!addrs || !pfns)
		fail("out of memory");
	events_read(ev_base);
	buf = map_aligned(len, PMD_SIZE);
	fill_on_node(buf, len, 0);
	for (i = 0; i < nr_folios; i++) {
		addrs[i] = buf + i * PMD_SIZE;
		read_kpageflags(addrs[i], 1, &flags, "fault on node 0");
		if ((flags & KPF_THP_MASK) == ((1ULL << KPF_COMPOUND_HEAD) | (1ULL << KPF_THP)))
			nr_thp++;
	}
	if (nr_thp < nr_folios)
		skip("only %lu of %lu 2M ranges were faulted in as a THP",
		     nr_thp, nr_folios);
	pmd_parent_report(buf, nr_folios, base, &want, ev_base, ev_want,
			  "fault on node 0", 1);
	pmd_parent_check(buf, nr_folios, 0, "fault on node 0");

	if (pipe(to_child) || pipe(to_parent))
		fail("pipe: %s", strerror(errno));
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		fail("fork: %s", strerror(errno));
	if (!pid) {
		close(to_child[1]);
		close(to_parent[0]);
		pmd_child(buf, nr_folios, to_child[0], to_parent[1]);
	}
	close(to_child[0]);
	close(to_parent[1]);

	/*
	 * The child's munmap splits its PMDs (thp_split_pmd) and leaves the
	 * folios whole and fully mapped: nothing marked partially mapped.
	 */
	child_answer(to_parent[0], pid, pfns, nr_folios);
	ev_want[EV_SPLIT_PMD] = nr_folios;
	pmd_parent_report(buf, nr_folios, base, &want, ev_base, ev_want,
			  "child munmap half", 1);
	pmd_parent_check(buf, nr_folios, 0, "child munmap half");
	for (i = 0; i < nr_folios; i++)
		if (pfns[i] != page_pfn(addrs[i], "child munmap half"))
			fail("child munmap half: the child maps pfn %#llx at 2M range %lu, the parent %#llx",
			     (unsigned long long)pfns[i], i,
			     (unsigned long long)page_pfn(addrs[i], "child munmap half"));

	for (round = 0; round < 3; round++) {
		snprintf(when, sizeof(when), "move %d to node %d", round + 1, to[round]);
		/*
		 * A failed move is reported after the counters and the
		 * split check, which may tell more.
		 */
		moved = try_move_to(addrs, nr_folios, to[round], MPOL_MF_MOVE_ALL,
				    when, move_err, sizeof(move_err));
		ev_want[EV_MIGRATION_SUCCESS] += nr_folios;
		pmd_parent_report(buf, nr_folios, base, &want, ev_base, ev_want,
				  when, 0);
		if (moved)
			fail("%s", move_err);
		pmd_parent_check(buf, nr_folios, to[round], when);
		cmd = to[round];
		fflush(stdout);
		if (write(to_child[1], &cmd, sizeof(cmd)) != sizeof(cmd))
			fail("%s: write to the child: %s", when, strerror(errno));
		child_answer(to_parent[0], pid, pfns, nr_folios);
		for (i = 0; i < nr_folios; i++)
			if (pfns[i] != page_pfn(addrs[i], when))
				fail("%s: the child maps pfn %#llx at 2M range %lu, the parent %#llx",
				     when, (unsigned long long)pfns[i], i,
				     (unsigned long long)page_pfn(addrs[i], when));
	}

	cmd = -1;
	if (write(to_child[1], &cmd, sizeof(cmd)) != sizeof(cmd))
		fail("write to the child: %s", strerror(errno));
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		fail("child failed (status %#x)", status);
	if (stats_failure[0])
		fail("%s", stats_failure);
	free(addrs);
	free(pfns);
}

int main(int argc, char **argv)
{
	struct mthp_stats base, want = { 0 };
	unsigned long nr_folios;
	size_t folio_kb, folio_size, len;
	const char *mode;
	int partial, pmd;
	char *buf;

	mode = argc == 5 ? argv[4] : "";
	partial = !strcmp(mode, "partial");
	pmd = !strcmp(mode, "pmd_forked_partial");
	if (argc != 4 && !(argc == 5 && (partial || pmd))) {
		fprintf(stderr, "usage: %s NAME FOLIO_KB NR_FOLIOS [partial|pmd_forked_partial]\n",
			argv[0]);
		return 2;
	}
	name = argv[1];
	folio_kb = strtoul(argv[2], NULL, 0);
	nr_folios = strtoul(argv[3], NULL, 0);
	page_size = sysconf(_SC_PAGESIZE);
	folio_size = folio_kb << 10;
	/*
	 * PMD-sized folios are mapped by a PMD: the other modes are about
	 * mTHPs, pmd_forked_partial about PMD-sized THPs only.
	 */
	if (folio_size <= (size_t)page_size || !nr_folios ||
	    (pmd ? folio_size != PMD_SIZE : folio_size >= PMD_SIZE))
		fail("bad sizes: folio %zu KiB, %lu folios", folio_kb, nr_folios);
	len = nr_folios * folio_size;

	set_thp_size(folio_kb);
	snprintf(stats_dir, sizeof(stats_dir), THP_DIR "/hugepages-%zukB/stats",
		 folio_kb);
	stats_read(&base);

	if (pmd) {
		run_pmd_forked_partial(nr_folios, &base);
		goto pass;
	}

	buf = map_aligned(len, folio_size);
	fill_on_node(buf, len, 0);
	want.nr_anon = nr_folios;
	stats_check(&base, &want, "fault on node 0", 1);
	check_nodes(buf, len, 0, "fault on node 0");
	check_folios(buf, len / page_size, folio_size / page_size, "fault on node 0");

	if (partial)
		run_partial(buf, nr_folios, folio_size, &base);
	else
		run_whole(buf, nr_folios, folio_size, &base);

pass:
	printf("GUEST-TEST: PASS %s (%lu folios of %zu KiB)\n", name, nr_folios,
	       folio_kb);
	return 0;
}
