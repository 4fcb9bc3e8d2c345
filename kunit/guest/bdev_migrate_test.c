// SPDX-License-Identifier: GPL-2.0
/*
 * bdev_migrate_test: migrate the page cache of a block device while another
 * process keeps writing to it, and check that no write is lost and that no
 * folio of it was copied by a migrator.
 *
 *   bdev_migrate_test NAME DEVICE none|test
 *
 * Guards against B2 of the v1 review. The page cache of every block device
 * (def_blk_aops) migrates through buffer_migrate_folio_norefs(), which may
 * only move a folio once no buffer_head of it is in use: holders of a
 * buffer_head reference (the per-CPU bh LRU, jbd2) write to the buffers
 * without the folio lock or a folio reference, so the callback checks
 * b_count after locking the buffers, and only then copies. The v1 batch
 * copy ran before that check and the move then skipped the copy, so an
 * update made through a buffer_head between the two was lost. The fix is
 * that a migrator never copies a folio with buffer heads: the core copies
 * it inside the callback, after the check. Userspace cannot write through a
 * buffer_head reference, so the lost update itself cannot be provoked from
 * here; what the test can see is the offload of such folios, which is
 * where the corruption starts: with a migrator registered,
 * migrate_offload_folios_copied must not grow while they move.
 *
 * The first 16 MiB of DEVICE are written with buffered write()s bound to
 * node 0 (after the old page cache is dropped), synced, mapped MAP_SHARED
 * and faulted in: every page must be on node 0 and its folio must have
 * buffer heads (PG_private in kpageflags). A child process then rewrites
 * the range with buffered pwrite()s, one page at a time, each generation
 * with its own pattern, and syncs after every other generation, while this
 * process moves every page to node 1 with move_pages() (up to three rounds
 * for pages the writer held busy). Then the writer finishes a generation
 * that started after the moves, and stops. Checked:
 *   - the writer wrote while the pages moved;
 *   - at least 90% of the pages are on node 1, every other one on node 0,
 *     and pgmigrate_success grew by at least the pages moved;
 *   - every page reads, through the mapping and through pread(), the last
 *     generation the writer wrote to it;
 *   - the folios still have buffer heads;
 *   - with "test", the test migrator is registered and
 *     migrate_offload_folios_copied did not grow; with "none", no migrator is
 *     registered and no offload counter moved.
 */
#include <time.h>
#include <sys/wait.h>

#include "guest.h"

#define RANGE		(16UL << 20)
#define KPF_PRIVATE	35
#define MOVE_ROUNDS	3
#define WAIT_SECS	300

/* Shared with the writer. */
struct writer_ctl {
	int stop;
	unsigned long writes;
	unsigned long gens_done;
	uint32_t gen[];		/* the last generation written to each page */
};

static unsigned long nr_pages, words_per_page;
static struct writer_ctl *ctl;
static pid_t writer_pid;
static int fd;

/* Word @w of page @p as generation @g writes it; 0 is the first fill. */
static uint64_t gen_word(unsigned long p, unsigned long w, unsigned long g)
{
	return pattern(p * words_per_page + w) ^ (g * 0xd1b54a32d192ed03ULL);
}

static void gen_page(uint64_t *page, unsigned long p, unsigned long g)
{
	unsigned long w;

	for (w = 0; w < words_per_page; w++)
		page[w] = gen_word(p, w, g);
}

/* Fail unless @page holds generation @g of page @p. */
static void check_page(const uint64_t *page, unsigned long p, unsigned long g,
		       const char *how)
{
	unsigned long w;

	for (w = 0; w < words_per_page; w++)
		if (page[w] != gen_word(p, w, g))
			fail("page %lu through %s: word %lu is %#llx, want %#llx (generation %lu)",
			     p, how, w, (unsigned long long)page[w],
			     (unsigned long long)gen_word(p, w, g), g);
}

static void writer(void)
{
	uint64_t *page = malloc(page_size);
	unsigned long p, g;

	if (!page)
		_exit(2);
	for (g = 1; !__atomic_load_n(&ctl->stop, __ATOMIC_ACQUIRE); g++) {
		for (p = 0; p < nr_pages; p++) {
			gen_page(page, p, g);
			if (pwrite(fd, page, page_size, p * page_size) != page_size)
				_exit(3);
			__atomic_store_n(&ctl->gen[p], g, __ATOMIC_RELEASE);
			__atomic_add_fetch(&ctl->writes, 1, __ATOMIC_RELEASE);
		}
		if (g % 2 == 0 && fsync(fd))
			_exit(4);
		__atomic_store_n(&ctl->gens_done, g, __ATOMIC_RELEASE);
	}
	_exit(0);
}

/* Wait until the writer has finished generation @g. */
static void wait_gens(unsigned long g, const char *when)
{
	struct timespec ts = { .tv_nsec = 10 * 1000 * 1000 };
	time_t end = time(NULL) + WAIT_SECS;
	int status;

	while (__atomic_load_n(&ctl->gens_done, __ATOMIC_ACQUIRE) < g) {
		if (waitpid(writer_pid, &status, WNOHANG) == writer_pid)
			fail("%s: the writer died (status %#x)", when, status);
		if (time(NULL) > end)
			fail("%s: the writer did not finish generation %lu in %d s",
			     when, g, WAIT_SECS);
		nanosleep(&ts, NULL);
	}
}

/* Every folio of the range has buffer heads (PG_private on its head). */
static void check_buffer_heads(char *map, const char *when)
{
	uint64_t *flags = calloc(nr_pages, sizeof(*flags));
	unsigned long i;

	if (!flags)
		fail("out of memory");
	read_kpageflags(map, nr_pages, flags, when);
	for (i = 0; i < nr_pages; i++) {
		if (flags[i] & (1ULL << KPF_COMPOUND_TAIL))
			continue;
		if (!(flags[i] & (1ULL << KPF_PRIVATE)))
			fail("%s: page %lu has no buffer heads (kpageflags %#llx): does the test kernel have CONFIG_BUFFER_HEAD?",
			     when, i, (unsigned long long)flags[i]);
	}
	free(flags);
}

static void check_migrator(const char *want)
{
	char line[64] = "";
	FILE *f = fopen("/sys/kernel/mm/migrate_offload/migrator", "r");

	if (!f || !fgets(line, sizeof(line), f))
		fail("read /sys/kernel/mm/migrate_offload/migrator: %s", strerror(errno));
	fclose(f);
	line[strcspn(line, "\n")] = 0;
	if (strcmp(line, want))
		fail("the registered migrator is '%s', want '%s'", line, want);
}

/*
 * A folio that could not be dropped before the fill (still referenced)
 * kept its node: move what is not on node 0 there, before anything is
 * measured.
 */
static void place_on_node0(char *map)
{
	int *where = page_nodes(map, RANGE, "after the fill");
	unsigned long i;
	int node = 0, status;
	long rc;

	for (i = 0; i < nr_pages; i++) {
		void *addr = map + i * page_size;

		if (where[i] == 0)
			continue;
		rc = move_pages(1, &addr, &node, &status, MPOL_MF_MOVE);
		if (rc)
			fail("moving page %lu (on node %d) to node 0: %s", i,
			     where[i], rc < 0 ? strerror(errno) : "busy");
	}
	free(where);
}

/* Move the pages not on node 1 there, in up to MOVE_ROUNDS rounds. */
static int move_to_node1(char *map)
{
	void **addrs = calloc(nr_pages, sizeof(*addrs));
	int *nodes = calloc(nr_pages, sizeof(*nodes));
	int *status = calloc(nr_pages, sizeof(*status));
	unsigned long i, n;
	int round, *where;
	long rc;

	if (!addrs || !nodes || !status)
		fail("out of memory");
	for (round = 0; round < MOVE_ROUNDS; round++) {
		where = page_nodes(map, RANGE, "moving");
		for (i = n = 0; i < nr_pages; i++) {
			if (where[i] == 1)
				continue;
			addrs[n] = map + i * page_size;
			nodes[n++] = 1;
		}
		free(where);
		if (!n)
			break;
		/* > 0: some pages were busy; the next round tries them again. */
		rc = move_pages(n, addrs, nodes, status, MPOL_MF_MOVE);
		if (rc < 0)
			fail("round %d: move_pages() of %lu pages to node 1: %s",
			     round + 1, n, strerror(errno));
	}
	free(addrs);
	free(nodes);
	free(status);
	return round;
}

int main(int argc, char **argv)
{
	unsigned long i, moved, success, copied, batch, fallback;
	unsigned long writes, writes_moving, gens_moved;
	uint64_t *page;
	const char *expect;
	int rc, status, rounds, *where;
	char *map;
	off_t size;

	if (argc != 4 || (strcmp(argv[3], "none") && strcmp(argv[3], "test"))) {
		fprintf(stderr, "usage: %s NAME DEVICE none|test\n", argv[0]);
		return 2;
	}
	name = argv[1];
	expect = argv[3];
	page_size = sysconf(_SC_PAGESIZE);
	nr_pages = RANGE / page_size;
	words_per_page = page_size / sizeof(uint64_t);
	page = malloc(page_size);
	ctl = mmap(NULL, sizeof(*ctl) + nr_pages * sizeof(ctl->gen[0]),
		   PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (!page || ctl == MAP_FAILED)
		fail("out of memory");

	fd = open(argv[2], O_RDWR);
	if (fd < 0)
		fail("open %s: %s", argv[2], strerror(errno));
	size = lseek(fd, 0, SEEK_END);
	if (size < (off_t)RANGE)
		fail("%s has %lld bytes, want at least %lu", argv[2], (long long)size,
		     RANGE);
	check_migrator(strcmp(expect, "test") ? "none" : "test");

	/* Drop what is cached (partition scan, earlier runs), refill on node 0. */
	if (fsync(fd))
		fail("fsync: %s", strerror(errno));
	rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	if (rc)
		fail("dropping the page cache of %s: %s", argv[2], strerror(rc));
	bind_to_node(0);
	for (i = 0; i < nr_pages; i++) {
		gen_page(page, i, 0);
		if (pwrite(fd, page, page_size, i * page_size) != page_size)
			fail("write page %lu: %s", i, strerror(errno));
	}
	if (fsync(fd))
		fail("fsync: %s", strerror(errno));
	bind_to_node(-1);

	map = mmap(NULL, RANGE, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		fail("mmap %s: %s", argv[2], strerror(errno));
	for (i = 0; i < nr_pages; i++)
		check_page((uint64_t *)(map + i * page_size), i, 0, "the mapping after the fill");
	place_on_node0(map);
	check_nodes(map, RANGE, 0, "after the fill");
	check_buffer_heads(map, "after the fill");

	writer_pid = fork();
	if (writer_pid < 0)
		fail("fork: %s", strerror(errno));
	if (!writer_pid) {
		/* Only this process maps the pages: move_pages() moves them. */
		munmap(map, RANGE);
		writer();
	}
	/* Every page rewritten once: the writer is in its stride. */
	wait_gens(1, "before the moves");

	success = vmstat("pgmigrate_success");
	copied = vmstat("migrate_offload_folios_copied");
	batch = vmstat("migrate_offload_batches");
	fallback = vmstat("migrate_offload_folios_fallback");
	writes = __atomic_load_n(&ctl->writes, __ATOMIC_ACQUIRE);
	rounds = move_to_node1(map);
	writes_moving = __atomic_load_n(&ctl->writes, __ATOMIC_ACQUIRE) - writes;
	gens_moved = __atomic_load_n(&ctl->gens_done, __ATOMIC_ACQUIRE);
	/* A whole generation written after the moves, into the new folios. */
	wait_gens(gens_moved + 2, "after the moves");
	__atomic_store_n(&ctl->stop, 1, __ATOMIC_RELEASE);
	if (waitpid(writer_pid, &status, 0) != writer_pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		fail("the writer failed (status %#x)", status);
	success = vmstat("pgmigrate_success") - success;
	copied = vmstat("migrate_offload_folios_copied") - copied;
	batch = vmstat("migrate_offload_batches") - batch;
	fallback = vmstat("migrate_offload_folios_fallback") - fallback;

	if (!writes_moving)
		fail("the writer wrote nothing while the pages moved");

	where = page_nodes(map, RANGE, "after the moves");
	for (i = moved = 0; i < nr_pages; i++) {
		if (where[i] == 1)
			moved++;
		else if (where[i] != 0)
			fail("after the moves: page %lu: status %d", i, where[i]);
	}
	free(where);
	if (moved * 10 < nr_pages * 9)
		fail("%lu of %lu pages moved to node 1 in %d rounds, want at least 90%%",
		     moved, nr_pages, rounds);
	if (success < moved)
		fail("pgmigrate_success grew by %lu, but %lu pages moved", success, moved);

	for (i = 0; i < nr_pages; i++) {
		unsigned long g = __atomic_load_n(&ctl->gen[i], __ATOMIC_ACQUIRE);

		check_page((uint64_t *)(map + i * page_size), i, g, "the mapping");
		if (pread(fd, page, page_size, i * page_size) != page_size)
			fail("pread page %lu: %s", i, strerror(errno));
		check_page(page, i, g, "pread()");
	}
	check_buffer_heads(map, "after the moves");

	if (!strcmp(expect, "test")) {
		if (copied)
			fail("the migrator copied %lu folios of the block device's page cache (%lu batches): folios with buffer heads must be copied by buffer_migrate_folio_norefs(), after its buffer checks",
			     copied, batch);
	} else if (copied || batch || fallback) {
		fail("no migrator, yet %lu batches offloaded (%lu folios copied, %lu fell back)",
		     batch, copied, fallback);
	}

	printf("GUEST-TEST: PASS %s (%lu of %lu pages moved to node 1 in %d rounds, %lu writes during the moves, %lu generations; pgmigrate_success +%lu, offload: %lu batches, %lu copied, %lu fell back)\n",
	       name, moved, nr_pages, rounds, writes_moving,
	       __atomic_load_n(&ctl->gens_done, __ATOMIC_ACQUIRE), success, batch,
	       copied, fallback);
	munmap(map, RANGE);
	close(fd);
	return 0;
}
