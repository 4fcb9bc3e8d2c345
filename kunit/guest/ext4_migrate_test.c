// SPDX-License-Identifier: GPL-2.0
/*
 * ext4_migrate_test: migrate the (large-folio) page cache of an ext4 file
 * while another process writes the file, and check that no write is lost
 * and that no page-cache folio was copied by a migrator.
 *
 *   ext4_migrate_test NAME MIGRATOR FILE large|small
 *
 * MIGRATOR is the migrator that must be registered ("none", "test",
 * "dcbm", "mtcopy"). FILE is on a mounted ext4 (ext4_migrate.sh mounts
 * one on a brd RAM disk). The file (32 MiB) is written with 2M write()s
 * bound to node 0 and synced; this process maps it 64K off a 2M boundary
 * (so that its large folios are mapped by PTEs) and reads every page. The
 * page cache folios must be large ("large": at least half the pages in
 * folios of 16 pages or more, which ext4 gives for 2M writes) or small
 * ("small": data=journal, which keeps ext4 to small folios). Then a
 * writer process rewrites the file in 64K chunks, each generation with its
 * own pattern, alternately with pwrite() and through its own MAP_SHARED
 * mapping (with msync), syncing every third generation, while this
 * process moves every folio of its mapping (move_pages(MPOL_MF_MOVE_ALL),
 * one address per folio) to the other node, ROUNDS times: each round
 * passes over the folios not there yet, up to 8 times (move_pages() stops
 * at a batch whose move failed, a folio the writer held). Then the writer
 * finishes a generation started after the moves and stops, the file is
 * synced, and everything is moved to node 1 (with data=journal, 90% of the
 * folios: buffers still in the journal keep a folio from moving).
 * Checked:
 *   - the writer wrote while the folios moved, and every round got at
 *     least 90% of the folios to their node; at the end every page is on
 *     node 1 and pgmigrate_success grew by at least the folios moved;
 *   - the folios have the sizes they had before the moves;
 *   - every byte, through the mapping and through pread(), is the last
 *     generation written to its chunk; and after fsync() and dropping the
 *     page cache (POSIX_FADV_DONTNEED), pread() from the disk gives the
 *     same: the moved dirty folios were written back;
 *   - migrate_offload_folios_copied did not grow (page cache is copied by
 *     the CPU during the move, never by a migrator); with no migrator no
 *     offload counter moved.
 * NEGATIVE=copied (expect page cache copied by the migrator), dirty (no
 * fsync() before the drop), bytes, large
 * or node expects one wrong thing.
 */
#include "migrate_paths.h"

#include <time.h>

#define FILE_SIZE	(32UL << 20)
#define CHUNK		(64UL << 10)
#define NR_CHUNKS	(FILE_SIZE / CHUNK)
#define ROUNDS		8
#define WAIT_SECS	300

struct writer_ctl {
	int stop;
	unsigned long writes, gens_done;
	uint32_t gen[NR_CHUNKS];
};

static struct writer_ctl *ctl;
static unsigned long nr_pages;
static int fd;
static pid_t writer_pid;

static uint64_t chunk_word(unsigned long c, size_t w, unsigned long gen)
{
	return gen_word(c, w, gen);
}

static void fill_chunk(uint64_t *p, unsigned long c, unsigned long gen)
{
	size_t w;

	for (w = 0; w < CHUNK / 8; w++)
		p[w] = chunk_word(c, w, gen);
}

static void check_chunk(const uint64_t *p, unsigned long c, unsigned long gen,
			const char *how)
{
	size_t w;

	for (w = 0; w < CHUNK / 8; w++)
		if (p[w] != chunk_word(c, w, gen))
			fail("chunk %lu through %s: word %zu is %#llx, want %#llx (generation %lu)",
			     c, how, w, (unsigned long long)p[w],
			     (unsigned long long)chunk_word(c, w, gen), gen);
}

static void writer(void)
{
	uint64_t *chunk = malloc(CHUNK);
	char *map = mmap(NULL, FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	unsigned long c, g;

	if (!chunk || map == MAP_FAILED)
		_exit(2);
	for (g = 1; !__atomic_load_n(&ctl->stop, __ATOMIC_ACQUIRE); g++) {
		for (c = 0; c < NR_CHUNKS; c++) {
			if (g % 2) {
				fill_chunk(chunk, c, g);
				if (pwrite(fd, chunk, CHUNK, c * CHUNK) != (ssize_t)CHUNK)
					_exit(3);
			} else {
				fill_chunk((uint64_t *)(map + c * CHUNK), c, g);
			}
			__atomic_store_n(&ctl->gen[c], g, __ATOMIC_RELEASE);
			__atomic_add_fetch(&ctl->writes, 1, __ATOMIC_RELEASE);
		}
		if (g % 2 == 0 && msync(map, FILE_SIZE, MS_ASYNC))
			_exit(4);
		if (g % 3 == 0 && fsync(fd))
			_exit(5);
		__atomic_store_n(&ctl->gens_done, g, __ATOMIC_RELEASE);
	}
	_exit(0);
}

static void wait_gens(unsigned long g, const char *when)
{
	time_t end = time(NULL) + WAIT_SECS;
	int status;

	while (__atomic_load_n(&ctl->gens_done, __ATOMIC_ACQUIRE) < g) {
		if (waitpid(writer_pid, &status, WNOHANG) == writer_pid)
			fail("%s: the writer died (status %#x)", when, status);
		if (time(NULL) > end)
			fail("%s: the writer did not finish generation %lu in %d s", when, g,
			     WAIT_SECS);
		usleep(10000);
	}
}

/* The folio size (in pages) of every page of the mapping, from kpageflags. */
static void folio_sizes(char *map, unsigned long *size, const char *when)
{
	struct layout l;
	unsigned long i, start = 0;

	layout_read(&l, map, nr_pages);
	for (i = 0; i <= nr_pages; i++) {
		if (i < nr_pages && !l.pfn[i])
			fail("%s: page %lu not mapped", when, i);
		if (i == nr_pages || !page_is_tail(&l, i) || l.pfn[i] != l.pfn[i - 1] + 1) {
			unsigned long j;

			for (j = start; j < i; j++)
				size[j] = i - start;
			start = i;
		}
	}
	layout_free(&l);
}

/* The head addresses of the folios of the mapping. */
static unsigned long heads(char *map, const unsigned long *size, void **addrs)
{
	unsigned long i, n = 0;

	for (i = 0; i < nr_pages; i += size[i])
		addrs[n++] = map + i * page_size;
	return n;
}

/*
 * One pass: move every folio at @addrs to @node; the number that got
 * there. move_pages() stops at a batch with a failed move (a folio the
 * writer held), so the folios after it are not tried in this pass.
 */
static unsigned long move_pass(void **addrs, unsigned long n, int node)
{
	int *status = calloc(n, sizeof(*status));
	unsigned long i, ok = 0;
	long ret;

	if (!status)
		fail("out of memory");
	/* After a failed batch, move_pages() stops: the rest keeps this. */
	for (i = 0; i < n; i++)
		status[i] = -1000;
	ret = move_list(addrs, n, node, MPOL_MF_MOVE_ALL, status);
	if (ret < 0)
		fail("move_pages(to node %d): %s", node, strerror(errno));
	for (i = 0; i < n; i++) {
		if (status[i] == node)
			ok++;
		else if (status[i] != -EBUSY && status[i] != -EAGAIN && status[i] != -ENOMEM &&
			 status[i] != -1000 && status[i] != !node)
			fail("move_pages(to node %d): folio %lu: status %d", node, i, status[i]);
	}
	free(status);
	return ok;
}

/*
 * A round: passes of move_pass() over the folios not yet on @node, up to
 * PASSES of them; the number of folios that ended up there, of *@n.
 */
#define PASSES	8
static unsigned long move_round(char *map, unsigned long *size, void **addrs,
				unsigned long *n, int node, const char *when)
{
	unsigned long i, m, total, there = 0;
	int pass, *where;

	folio_sizes(map, size, when);
	total = heads(map, size, addrs);
	for (pass = 0; pass < PASSES; pass++) {
		where = page_nodes(map, FILE_SIZE, when);
		for (i = m = 0; i < nr_pages; i += size[i])
			if (where[i] != node)
				addrs[m++] = map + i * page_size;
		free(where);
		there = total - m;
		if (!m)
			break;
		move_pass(addrs, m, node);
	}
	if (pass == PASSES) {
		where = page_nodes(map, FILE_SIZE, when);
		for (i = there = 0; i < nr_pages; i += size[i])
			there += where[i] == node;
		free(where);
	}
	*n = total;
	return there;
}

int main(int argc, char **argv)
{
	unsigned long i, c, n, large_pages = 0, moved = 0, asked = 0, success, writes;
	unsigned long *size0, *size1, resident = 0, last;
	struct offload_counters before, d;
	int have_migrator, want_large, round, status;
	unsigned char *vec;
	uint64_t *chunk;
	void **addrs;
	char *map, *base;
	pid_t parent;

	if (argc != 5 || (strcmp(argv[4], "large") && strcmp(argv[4], "small"))) {
		fprintf(stderr, "usage: %s NAME none|test|dcbm|mtcopy FILE large|small\n", argv[0]);
		return 2;
	}
	name = argv[1];
	page_size = sysconf(_SC_PAGESIZE);
	nr_pages = FILE_SIZE / page_size;
	want_large = !strcmp(argv[4], "large");
	have_migrator = check_migrator(argv[2]);
	ctl = mmap(NULL, sizeof(*ctl), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	chunk = malloc(2 * PMD_SIZE);
	size0 = calloc(nr_pages, sizeof(*size0));
	size1 = calloc(nr_pages, sizeof(*size1));
	addrs = calloc(nr_pages, sizeof(*addrs));
	vec = calloc(nr_pages, 1);
	if (ctl == MAP_FAILED || !chunk || !size0 || !size1 || !addrs || !vec)
		fail("out of memory");

	fd = open(argv[3], O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		fail("open %s: %s", argv[3], strerror(errno));
	bind_to_node(0);
	for (i = 0; i < FILE_SIZE / PMD_SIZE; i++) {
		for (c = 0; c < PMD_SIZE / CHUNK; c++)
			fill_chunk(chunk + c * CHUNK / 8, i * (PMD_SIZE / CHUNK) + c, 0);
		if (pwrite(fd, chunk, PMD_SIZE, i * PMD_SIZE) != (ssize_t)PMD_SIZE)
			fail("write: %s", strerror(errno));
	}
	if (fsync(fd))
		fail("fsync: %s", strerror(errno));
	bind_to_node(-1);

	/* Mapped 64K off a 2M boundary: PTE mappings of the large folios. */
	base = mmap(NULL, FILE_SIZE + 2 * PMD_SIZE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED)
		fail("mmap: %s", strerror(errno));
	map = (char *)((((uintptr_t)base + PMD_SIZE - 1) & ~(PMD_SIZE - 1)) + CHUNK);
	map = mmap(map, FILE_SIZE, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0);
	if (map == MAP_FAILED)
		fail("mmap %s: %s", argv[3], strerror(errno));
	for (c = 0; c < NR_CHUNKS; c++)
		check_chunk((uint64_t *)(map + c * CHUNK), c, 0, "the mapping after the fill");
	check_nodes(map, FILE_SIZE, 0, "after the fill");
	folio_sizes(map, size0, "after the fill");
	for (i = 0; i < nr_pages; i++)
		large_pages += size0[i] >= 16;
	printf("%s: page cache after the fill: %lu of %lu pages in folios of 16 pages or more, first folio %lu pages\n",
	       name, large_pages, nr_pages, size0[0]);
	if ((want_large ^ negative("large")) ? large_pages * 2 < nr_pages : large_pages != 0)
		fail("after the fill: %lu of %lu pages in folios of 16 pages or more, want %s",
		     large_pages, nr_pages,
		     want_large ^ negative("large") ? "at least half" : "none");

	fflush(stdout);
	parent = getpid();
	writer_pid = fork();
	if (writer_pid < 0)
		fail("fork: %s", strerror(errno));
	if (!writer_pid) {
		die_with_parent(parent);
		munmap(map, FILE_SIZE);
		writer();
	}
	wait_gens(1, "before the moves");

	offload_snapshot(&before);
	success = vmstat("pgmigrate_success");
	writes = __atomic_load_n(&ctl->writes, __ATOMIC_ACQUIRE);
	for (round = 0; round < ROUNDS; round++) {
		unsigned long there = move_round(map, size1, addrs, &n, (round + 1) % 2,
						 "moving");

		asked += n;
		moved += there;
		if (there * 10 < n * 9)
			fail("round %d: %lu of %lu folios got to node %d in %d passes of move_pages(), want at least 90%%",
			     round + 1, there, n, (round + 1) % 2, PASSES);
	}
	writes = __atomic_load_n(&ctl->writes, __ATOMIC_ACQUIRE) - writes;
	wait_gens(__atomic_load_n(&ctl->gens_done, __ATOMIC_ACQUIRE) + 2, "after the moves");
	__atomic_store_n(&ctl->stop, 1, __ATOMIC_RELEASE);
	if (waitpid(writer_pid, &status, 0) != writer_pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		fail("the writer failed (status %#x)", status);
	if (!writes)
		fail("the writer wrote nothing while the folios moved");

	/* Everything to node 1. */
	/*
	 * data=journal: buffers the journal still holds (until their
	 * checkpoint) keep buffer_migrate_folio_norefs() from moving a folio;
	 * sync first, and accept 90% there (every other page on node 0).
	 */
	if (fsync(fd))
		fail("fsync: %s", strerror(errno));
	sync();
	last = move_round(map, size1, addrs, &n, 1, "the last moves");
	if (want_large) {
		check_nodes(map, FILE_SIZE, negative("node") ? 0 : 1, "after the last moves");
	} else {
		int *where = page_nodes(map, FILE_SIZE, "after the last moves");

		for (i = 0; i < nr_pages; i++)
			if (where[i] != 0 && where[i] != 1)
				fail("after the last moves: page %lu: status %d", i, where[i]);
		free(where);
		if (last * 10 < n * 9 || negative("node"))
			fail("after the last moves: %lu of %lu folios on node 1, want at least 90%%",
			     last, n);
	}
	success = vmstat("pgmigrate_success") - success;
	offload_delta(&before, &d);
	folio_sizes(map, size1, "after the moves");
	for (i = 0; i < nr_pages; i++)
		if (size1[i] != size0[i])
			fail("after the moves: page %lu is in a folio of %lu pages, was %lu",
			     i, size1[i], size0[i]);
	if (success < moved)
		fail("pgmigrate_success grew by %lu, but %lu folios moved", success, moved);

	for (c = 0; c < NR_CHUNKS; c++) {
		unsigned long g = ctl->gen[c] + (negative("bytes") && c == 5);

		check_chunk((uint64_t *)(map + c * CHUNK), c, g, "the mapping");
		if (pread(fd, chunk, CHUNK, c * CHUNK) != (ssize_t)CHUNK)
			fail("pread: %s", strerror(errno));
		check_chunk(chunk, c, g, "pread()");
	}

	/*
	 * Written back? Drop the page cache and read the disk; a page still
	 * cached must not be dirty after fsync(): fsync() writes back what the
	 * mapping's xarray tags dirty, so a migrated folio left PG_dirty
	 * without its tag (moved wrongly) would stay dirty, unwritten and
	 * undroppable, hidden among the pages the drop may leave cached.
	 * NEGATIVE=dirty writes the first page again (the same bytes) and
	 * skips the fsync() and the drop: that page stays dirty.
	 */
	if (negative("dirty") && (pread(fd, chunk, page_size, 0) != (ssize_t)page_size ||
				  pwrite(fd, chunk, page_size, 0) != (ssize_t)page_size))
		fail("NEGATIVE=dirty: rewriting the first page: %s", strerror(errno));
	if (!negative("dirty") && fsync(fd))
		fail("fsync: %s", strerror(errno));
	munmap(map, FILE_SIZE);
	status = negative("dirty") ? 0 : posix_fadvise(fd, 0, FILE_SIZE, POSIX_FADV_DONTNEED);
	if (status)
		fail("POSIX_FADV_DONTNEED: %s", strerror(status));
	map = mmap(NULL, FILE_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED || mincore(map, FILE_SIZE, vec))
		fail("mincore: %s", strerror(errno));
	for (i = 0; i < nr_pages; i++) {
		if (!(vec[i] & 1))
			continue;
		resident++;
		/* Map it (a read fault of a cached page dirties nothing). */
		(void)*(volatile char *)(map + i * page_size);
	}
	if (resident) {
		struct layout cached;

		layout_read(&cached, map, nr_pages);
		for (i = 0; i < nr_pages; i++)
			if ((vec[i] & 1) && cached.pfn[i] &&
			    (cached.flags[i] & BIT64(KPF_DIRTY)))
				fail("page %lu is still cached and dirty after fsync() (pfn %#llx, kpageflags %#llx)",
				     i, (unsigned long long)cached.pfn[i],
				     (unsigned long long)cached.flags[i]);
		layout_free(&cached);
	}
	munmap(map, FILE_SIZE);
	for (c = 0; c < NR_CHUNKS; c++) {
		if (pread(fd, chunk, CHUNK, c * CHUNK) != (ssize_t)CHUNK)
			fail("pread: %s", strerror(errno));
		check_chunk(chunk, c, ctl->gen[c], "pread() after dropping the page cache");
	}
	if (resident * 10 > nr_pages)
		fail("%lu of %lu pages still cached after POSIX_FADV_DONTNEED: the re-read did not read the disk",
		     resident, nr_pages);

	if (negative("copied") ? !d.copied : d.copied)
		fail("%lu page-cache folios copied by the migrator (%lu batches, %lu fell back), want %s",
		     d.copied, d.batches, d.fallback,
		     negative("copied") ? "some" :
		     "none: page cache must be copied by the CPU during its move");
	if (!have_migrator && (d.batches || d.fallback))
		fail("no migrator, yet %lu batches offloaded (%lu fell back)", d.batches, d.fallback);

	printf("GUEST-TEST: PASS %s (%lu of %lu folio moves in %d rounds while %lu chunks were written, %lu generations; at the end %lu of %lu folios on node 1; pgmigrate_success +%lu; offload: %lu batches, %lu copied, %lu fell back; %lu pages cached after the drop; migrator %s)\n",
	       name, moved, asked, ROUNDS, writes, ctl->gens_done, last, n, success, d.batches,
	       d.copied, d.fallback, resident, argv[2]);
	close(fd);
	return 0;
}
