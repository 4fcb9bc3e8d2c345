// SPDX-License-Identifier: GPL-2.0
/*
 * hmm_migrate_test: anonymous memory moved to device-private memory (the
 * test_hmm driver, /dev/hmm_dmirror0) and back, and between the nodes,
 * with a migrator registered or not.
 *
 *   hmm_migrate_test NAME MIGRATOR
 *
 * MIGRATOR is the migrator that must be registered ("none", "test",
 * "dcbm", "mtcopy").
 *
 * Small pages: 512 pages (MADV_NOHUGEPAGE) filled on node 0
 *   1. moved to node 1 with move_pages(): bytes, node, and the offload
 *      counters (the migrator copies all 512 folios, or nothing offloaded);
 *   2. migrated to the device (HMM_DMIRROR_MIGRATE_TO_DEV): all 512
 *      pages, the device read the right bytes, every page is a swap-type
 *      entry in pagemap and device-private in the device's snapshot;
 *      nothing offloaded (migrate_vma_*() copies by itself; so for every
 *      migration to the device and back outside the race);
 *   3. move_pages() to node 0 of the device-private pages: each status
 *      -ENOENT, no migration counted, nothing offloaded;
 *   4. the device writes new bytes into the first half
 *      (HMM_DMIRROR_WRITE); the CPU faults the first quarter back
 *      (migrate_to_ram) and HMM_DMIRROR_MIGRATE_TO_SYS the rest, bound to
 *      node 0: every page present on node 0 with the device's bytes in the
 *      first half and the old ones in the second;
 *   5. moved to node 1 again: bytes, node, offload counters.
 * A 2M THP (PMD-aligned, MADV_HUGEPAGE, 2048kB only):
 *   6. moved to node 1 (one address): still a THP, thp_migration_success
 *      +1, the migrator copied the one folio;
 *   7. migrated to the device: 512 pages, the device maps it by a PMD
 *      (HMM_DMIRROR_PROT_PMD in the snapshot: a large device folio);
 *   8. migrated back (MIGRATE_TO_SYS, bound to node 0): bytes, node 0;
 *      whether it came back as a THP is printed; then moved to node 1
 *      with the folio count the offload counters must show.
 * Race: a thread moves the 512 small pages back and forth with
 *   move_pages() (statuses: a node, -ENOENT for device pages, -EBUSY,
 *   -EAGAIN), while the main thread, 20 times, migrates them to the
 *   device, has the device read them (HMM_DMIRROR_READ mirrors what is in
 *   system memory), migrates them back and reads them: every byte stays.
 * NEGATIVE=offload|node|bytes|enoent|devmig expects one wrong thing.
 */
#include "migrate_paths.h"

#include <pthread.h>
#include <sys/ioctl.h>

/* lib/test_hmm_uapi.h */
struct hmm_dmirror_cmd {
	uint64_t addr, ptr, npages, cpages, faults;
};
#define HMM_DMIRROR_READ		_IOWR('H', 0x00, struct hmm_dmirror_cmd)
#define HMM_DMIRROR_WRITE		_IOWR('H', 0x01, struct hmm_dmirror_cmd)
#define HMM_DMIRROR_MIGRATE_TO_DEV	_IOWR('H', 0x02, struct hmm_dmirror_cmd)
#define HMM_DMIRROR_MIGRATE_TO_SYS	_IOWR('H', 0x03, struct hmm_dmirror_cmd)
#define HMM_DMIRROR_SNAPSHOT		_IOWR('H', 0x04, struct hmm_dmirror_cmd)
#define HMM_DMIRROR_PROT_WRITE			0x02
#define HMM_DMIRROR_PROT_PMD			0x04
#define HMM_DMIRROR_PROT_DEV_PRIVATE_LOCAL	0x20

#define NP		512
#define RACE_ROUNDS	20

static int dev, have_migrator, moved;
static char *buf;
static size_t len;

/* The race's mover thread runs: its move_pages() calls offload. */
static int race_running;

/*
 * A test_hmm command. A migration to the device or back goes through
 * migrate_vma_*() and its own copy, never migrate_pages()' batch copy: it
 * must offload nothing (checked but during the race).
 */
static int dmirror(unsigned long req, void *addr, void *ptr, unsigned long npages,
		   uint64_t *cpages)
{
	struct hmm_dmirror_cmd cmd = {
		.addr = (uintptr_t)addr, .ptr = (uintptr_t)ptr, .npages = npages,
	};
	int check = !race_running && (req == HMM_DMIRROR_MIGRATE_TO_DEV ||
				      req == HMM_DMIRROR_MIGRATE_TO_SYS);
	struct offload_counters before = { 0 }, d;
	int ret;

	if (check)
		offload_snapshot(&before);
	do {
		ret = ioctl(dev, req, &cmd);
	} while (ret && errno == EINTR);
	if (cpages)
		*cpages = cmd.cpages;
	if (check) {
		offload_delta(&before, &d);
		if (negative("devmig") ? !d.batches : d.batches || d.copied || d.fallback)
			fail("migrating %lu pages %s offloaded %lu batches (%lu folios copied, %lu fell back), want %s",
			     npages, req == HMM_DMIRROR_MIGRATE_TO_DEV ?
			     "to the device" : "to system memory",
			     d.batches, d.copied, d.fallback, negative("devmig") ? "some" :
			     "none: migrate_vma_*() does not take the batch copy");
	}
	return ret ? -errno : 0;
}

static void check_words(const char *b, size_t first, size_t nr, uint64_t gen,
			const char *when)
{
	uint64_t seed = moved && negative("bytes") ? 9 : 0;
	long w = bad_word(b, first, nr, seed, gen);

	if (w >= 0)
		fail("%s: word %zu is %#llx, want %#llx (generation %llu)", when, first + w,
		     (unsigned long long)((const uint64_t *)b)[w],
		     (unsigned long long)gen_word(seed, first + w, gen), (unsigned long long)gen);
}

/* Move @n folios at @addrs to @node, checking the counters. */
static void move_checked(void **addrs, unsigned long n, unsigned long pages, int node,
			 unsigned long want_thp, const char *when)
{
	struct offload_counters before;
	unsigned long success = vmstat("pgmigrate_success");
	unsigned long thp = vmstat("thp_migration_success");

	offload_snapshot(&before);
	move_list_all(addrs, n, node, MPOL_MF_MOVE, when);
	moved = 1;
	success = vmstat("pgmigrate_success") - success;
	thp = vmstat("thp_migration_success") - thp;
	if (success != pages || thp != want_thp)
		fail("%s: pgmigrate_success +%lu, thp_migration_success +%lu; want +%lu, +%lu",
		     when, success, thp, pages, want_thp);
	check_offload_all(have_migrator, &before, n, "anonymous", when);
}

/* Pagemap: every page of [b, b + size) a swap-type entry (device-private). */
static void check_device(char *b, size_t size, int want_pmd, const char *when)
{
	unsigned long i, n = size / page_size;
	unsigned char *snap = malloc(n);
	uint64_t cpages, *pme = calloc(n, 8);
	int pagemap = open("/proc/self/pagemap", O_RDONLY);
	unsigned char want = HMM_DMIRROR_PROT_DEV_PRIVATE_LOCAL | HMM_DMIRROR_PROT_WRITE |
			     (want_pmd ? HMM_DMIRROR_PROT_PMD : 0);

	if (!snap || !pme || pagemap < 0)
		fail("out of memory");
	if (pread(pagemap, pme, n * 8, (uintptr_t)b / page_size * 8) != (ssize_t)(n * 8))
		fail("read pagemap: %s", strerror(errno));
	close(pagemap);
	for (i = 0; i < n; i++)
		if ((pme[i] & PM_PRESENT) || !(pme[i] & PM_SWAP))
			fail("%s: page %lu: pagemap %#llx, want a swap-type entry", when, i,
			     (unsigned long long)pme[i]);
	if (dmirror(HMM_DMIRROR_SNAPSHOT, b, snap, n, &cpages) || cpages != n)
		fail("%s: snapshot: %s (%llu pages)", when, strerror(errno),
		     (unsigned long long)cpages);
	for (i = 0; i < n; i++)
		if (snap[i] != want)
			fail("%s: page %lu: device snapshot %#x, want %#x (device-private%s)",
			     when, i, snap[i], want, want_pmd ? ", mapped by a PMD" : "");
	free(snap);
	free(pme);
}

static volatile int race_stop;
static unsigned long race_moves, race_enoent, race_partial, race_full;
static char race_err[256];

static void *race_mover(void *arg)
{
	void **addrs = calloc(NP, sizeof(*addrs));
	int *status = calloc(NP, sizeof(int)), node = 1;
	unsigned long i;
	long ret;

	(void)arg;
	if (!addrs || !status)
		return NULL;
	for (i = 0; i < NP; i++)
		addrs[i] = buf + i * page_size;
	while (!race_stop) {
		for (i = 0; i < NP; i++)
			status[i] = -1000;
		ret = move_list(addrs, NP, node, MPOL_MF_MOVE, status);
		if (ret < 0) {
			snprintf(race_err, sizeof(race_err), "move_pages: %s", strerror(errno));
			break;
		}
		for (i = 0; i < NP; i++) {
			if (status[i] == -ENOENT)
				race_enoent++;
			else if (status[i] != node && status[i] != -EBUSY &&
				 status[i] != -EAGAIN && status[i] != -1000 &&
				 status[i] != !node) {
				snprintf(race_err, sizeof(race_err), "page %lu: status %d", i,
					 status[i]);
				race_stop = 1;
			}
		}
		race_moves++;
		node = !node;
	}
	free(addrs);
	free(status);
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long i, n;
	uint64_t cpages;
	char *mirror, *thp, when[64];
	void *addrs[NP];
	int status[NP], round;
	pthread_t th;
	struct layout l;
	int came_back_thp;

	if (argc != 3) {
		fprintf(stderr, "usage: %s NAME none|test|dcbm|mtcopy\n", argv[0]);
		return 2;
	}
	name = argv[1];
	page_size = sysconf(_SC_PAGESIZE);
	len = NP * page_size;
	have_migrator = check_migrator(argv[2]);
	dev = open("/dev/hmm_dmirror0", O_RDWR);
	if (dev < 0)
		fail("open /dev/hmm_dmirror0: %s (hmm_migrate.sh loads test_hmm)", strerror(errno));
	mirror = malloc(PMD_SIZE);
	if (!mirror)
		fail("out of memory");

	/* Small pages. */
	buf = map_aligned(len, page_size);
	bind_to_node(0);
	fill_words(buf, 0, len / 8, 0, 0);
	bind_to_node(-1);
	for (i = 0; i < NP; i++)
		addrs[i] = buf + i * page_size;
	move_checked(addrs, NP, NP, 1, 0, "1. to node 1");
	check_nodes(buf, len, negative("node") ? 0 : 1, "1. to node 1");
	check_words(buf, 0, len / 8, 0, "1. to node 1");

	if (dmirror(HMM_DMIRROR_MIGRATE_TO_DEV, buf, mirror, NP, &cpages) || cpages != NP)
		fail("2. migrate to the device: %s, %llu of %d pages", strerror(errno),
		     (unsigned long long)cpages, NP);
	check_words(mirror, 0, len / 8, 0, "2. what the device read");
	check_device(buf, len, 0, "2. on the device");

	{
		struct offload_counters before, d;
		unsigned long success = vmstat("pgmigrate_success");

		offload_snapshot(&before);
		if (move_list(addrs, NP, 0, MPOL_MF_MOVE, status) < 0)
			fail("3. move_pages: %s", strerror(errno));
		for (i = 0; i < NP; i++)
			if (status[i] != (negative("enoent") ? 0 : -ENOENT))
				fail("3. move_pages() of device-private page %lu: status %d, want -ENOENT",
				     i, status[i]);
		offload_delta(&before, &d);
		if (vmstat("pgmigrate_success") != success || d.batches || d.copied)
			fail("3. moving device-private pages migrated %lu pages, offloaded %lu batches",
			     vmstat("pgmigrate_success") - success, d.batches);
		check_device(buf, len, 0, "3. after move_pages()");
	}

	/* 4. The device writes the first half; back to system memory on node 0. */
	fill_words(mirror, 0, len / 16, 0, 1);
	if (dmirror(HMM_DMIRROR_WRITE, buf, mirror, NP / 2, &cpages) || cpages != NP / 2)
		fail("4. device write: %s, %llu pages", strerror(errno), (unsigned long long)cpages);
	check_device(buf, len, 0, "4. after the device wrote");
	bind_to_node(0);
	check_words(buf, 0, len / 32, 1, "4. CPU faults of the first quarter");
	if (dmirror(HMM_DMIRROR_MIGRATE_TO_SYS, buf, mirror, NP, &cpages))
		fail("4. migrate to system memory: %s", strerror(errno));
	bind_to_node(-1);
	if (cpages != NP - NP / 4)
		printf("%s: MIGRATE_TO_SYS moved %llu pages (the CPU faulted %d back)\n", name,
		       (unsigned long long)cpages, NP / 4);
	check_nodes(buf, len, 0, "4. back in system memory");
	check_words(buf, 0, len / 16, 1, "4. back in system memory, first half");
	check_words(buf + len / 2, len / 16, len / 16, 0, "4. back in system memory, second half");

	move_checked(addrs, NP, NP, 1, 0, "5. to node 1");
	check_nodes(buf, len, 1, "5. to node 1");
	check_words(buf, 0, len / 16, 1, "5. to node 1, first half");
	check_words(buf + len / 2, len / 16, len / 16, 0, "5. to node 1, second half");

	/* A THP. */
	thp_only_size(2048, "madvise");
	thp = map_aligned(PMD_SIZE, PMD_SIZE);
	bind_to_node(0);
	fill_words(thp, 0, PMD_SIZE / 8, 0, 0);
	bind_to_node(-1);
	check_folios(thp, PMD_SIZE / page_size, PMD_SIZE / page_size, "6. the THP");
	addrs[0] = thp;
	move_checked(addrs, 1, PMD_SIZE / page_size, 1, 1, "6. THP to node 1");
	check_folios(thp, PMD_SIZE / page_size, PMD_SIZE / page_size, "6. THP to node 1");
	check_words(thp, 0, PMD_SIZE / 8, 0, "6. THP to node 1");

	if (dmirror(HMM_DMIRROR_MIGRATE_TO_DEV, thp, mirror, PMD_SIZE / page_size, &cpages) ||
	    cpages != PMD_SIZE / page_size)
		fail("7. THP to the device: %s, %llu pages", strerror(errno),
		     (unsigned long long)cpages);
	check_words(mirror, 0, PMD_SIZE / 8, 0, "7. what the device read of the THP");
	check_device(thp, PMD_SIZE, 1, "7. THP on the device");

	bind_to_node(0);
	if (dmirror(HMM_DMIRROR_MIGRATE_TO_SYS, thp, mirror, PMD_SIZE / page_size, &cpages))
		fail("8. THP back to system memory: %s", strerror(errno));
	bind_to_node(-1);
	check_nodes(thp, PMD_SIZE, 0, "8. THP back");
	check_words(thp, 0, PMD_SIZE / 8, 0, "8. THP back");
	layout_read(&l, thp, PMD_SIZE / page_size);
	came_back_thp = page_is_head(&l, 0) && (l.flags[0] & BIT64(KPF_THP));
	layout_free(&l);
	if (came_back_thp) {
		check_folios(thp, PMD_SIZE / page_size, PMD_SIZE / page_size, "8. THP back");
		move_checked(addrs, 1, PMD_SIZE / page_size, 1, 1, "8. THP back, to node 1");
	} else {
		for (i = 0; i < PMD_SIZE / page_size; i++)
			addrs[i] = thp + i * page_size;
		move_checked(addrs, PMD_SIZE / page_size, PMD_SIZE / page_size, 1, 0,
			     "8. THP back as small pages, to node 1");
	}
	check_words(thp, 0, PMD_SIZE / 8, 0, "8. to node 1");
	printf("%s: the THP came back from the device as %s\n", name,
	       came_back_thp ? "a THP" : "small pages");

	/* Race. */
	fill_words(buf, 0, len / 8, 0, 0);
	race_running = 1;
	if (pthread_create(&th, NULL, race_mover, NULL))
		fail("pthread_create");
	for (round = 0; round < RACE_ROUNDS && !race_stop; round++) {
		int ret;

		snprintf(when, sizeof(when), "race round %d", round);
		ret = dmirror(HMM_DMIRROR_MIGRATE_TO_DEV, buf, mirror, NP, &cpages);
		if (ret && ret != -ENOENT)
			fail("%s: migrate to the device: %s", when, strerror(-ret));
		/*
		 * -ENOENT: some pages were busy (being moved) and stayed in
		 * system memory. Then the device must not read the range:
		 * test_hmm's read would fault the range into its page table
		 * with the device-private pages themselves, and copy from them
		 * (an oops). Else it read what it migrated: check that.
		 */
		if (ret) {
			race_partial++;
		} else {
			race_full++;
			check_words(mirror, 0, len / 8, 0, when);
			ret = dmirror(HMM_DMIRROR_READ, buf, mirror, NP, &cpages);
			if (ret)
				fail("%s: device read: %s", when, strerror(-ret));
			check_words(mirror, 0, len / 8, 0, when);
		}
		ret = dmirror(HMM_DMIRROR_MIGRATE_TO_SYS, buf, mirror, NP, &cpages);
		if (ret)
			fail("%s: migrate to system memory: %s", when, strerror(-ret));
		check_words(buf, 0, len / 8, 0, when);
	}
	race_stop = 1;
	pthread_join(th, NULL);
	race_running = 0;
	if (race_err[0])
		fail("race: %s", race_err);
	check_words(buf, 0, len / 8, 0, "after the race");
	n = 0;
	for (i = 0; i < NP; i++) {
		int *st = page_nodes(buf + i * page_size, page_size, "after the race");

		n += *st >= 0;
		free(st);
	}
	if (n != NP)
		fail("after the race: %lu of %d pages in system memory", n, NP);

	printf("GUEST-TEST: PASS %s (512 pages and a THP to device-private memory and back; race: %lu move_pages() calls, %lu -ENOENT, %d rounds, %lu migrations to the device whole, %lu partial; migrator %s)\n",
	       name, race_moves, race_enoent, RACE_ROUNDS, race_full, race_partial, argv[2]);
	return 0;
}
