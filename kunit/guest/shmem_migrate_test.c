// SPDX-License-Identifier: GPL-2.0
/*
 * shmem_migrate_test: move large shmem/tmpfs folios mapped by two processes,
 * through the batched unmap and restore of their mappings.
 *
 *   shmem_migrate_test NAME MIGRATOR KIND FOLIO_KB NR_FOLIOS SUB
 *
 * MIGRATOR is the migrator that must be registered ("none", "test",
 * "dcbm", "mtcopy"). KIND says what the memory is:
 *   anon      MAP_SHARED|MAP_ANONYMOUS, with only hugepages-<FOLIO_KB>kB/
 *             shmem_enabled "always" (the per-size control of anonymous
 *             shmem); the forked child inherits the mapping;
 *   memfd     a memfd, mapped by the parent at an address that is FOLIO_KB
 *             aligned but not twice that, and by the child elsewhere; an
 *             unlinked shmem file is mapped as anonymous shared memory
 *             (shmem_mmap_prepare()), so the same per-size control decides;
 *   tmpfs:DIR a file on the tmpfs mounted at DIR with huge=always (2M
 *             folios), linked while mapped (else it would be anonymous
 *             shared memory), mapped by the parent 2M-aligned (PMD
 *             mappings) and by the child 64K off (the same folios mapped
 *             by PTEs).
 * The parent faults NR_FOLIOS folios of FOLIO_KB in, bound to node 0,
 * writing a pattern; every folio must be whole (pagemap + kpageflags).
 * The child then maps everything (reads every page) and both processes
 * map every folio. SUB prepares the parent's mapping:
 *   plain     nothing more;
 *   mlock     mlock()ed: every page mlocked and unevictable, VmLck the
 *             whole range;
 *   softdirty soft-dirty cleared, then every other page written: exactly
 *             those pages are soft-dirty (PTE-mapped kinds only).
 * The parent then moves every folio (move_pages(MPOL_MF_MOVE_ALL), one
 * address per folio) to node 1 and back to node 0. After each move:
 *   - in the parent every page is on the target node at a new pfn, holds
 *     its bytes, in whole folios of FOLIO_KB (the folio stayed large),
 *     with the same pagemap flag bits as before the first move (present,
 *     file/shared, exclusive, soft-dirty), the same dirty bit on every
 *     folio (kpageflags), the same ShmemPmdMapped (PMD mappings kept), and
 *     what SUB set up (mlocked and unevictable pages, VmLck; soft-dirty
 *     bits page by page);
 *   - pgmigrate_success grew by the pages moved, and the offload counters
 *     show the migrator copying every folio (shmem opted in to the batch
 *     copy) or, with no migrator, nothing offloaded;
 *   - the child reads its bytes, on the target node, through the very
 *     pages the parent maps (same pfns), still mapped by PTEs (no
 *     ShmemPmdMapped in the child).
 * Between the moves the child writes the second page of every folio and
 * the parent must see those writes (the mappings are shared), before and
 * after the second move.
 * NEGATIVE=node|bytes|large|softdirty|mlock|offload expects one wrong thing.
 */
#include "migrate_paths.h"

#define MAX_SAVED	32

static size_t folio_size, len;
static unsigned long nr_folios, nr_pages, folio_pages;
static char *buf;
static int have_migrator, pmd_parent, moved;
static pid_t main_pid;

/* A line saying how far the test got, out at once (a hang shows where). */
static void __attribute__((format(printf, 1, 2))) progress(const char *fmt, ...)
{
	va_list ap;

	printf("%s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* The mTHP shmem allocation counters of every size, summed by size. */
static void shmem_alloc_stats(const char *when)
{
	static const char *sizes[] = { "16", "32", "64", "128", "256", "512", "1024", "2048" };
	char path[256], line[512] = "";
	size_t i, off = 0;
	long a, f;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		snprintf(path, sizeof(path), THP_DIR "/hugepages-%skB/stats/shmem_alloc", sizes[i]);
		if (try_read_long(path, &a))
			continue;
		snprintf(path, sizeof(path), THP_DIR "/hugepages-%skB/stats/shmem_fallback", sizes[i]);
		if (try_read_long(path, &f))
			continue;
		off += snprintf(line + off, sizeof(line) - off, " %sK %ld/%ld", sizes[i], a, f);
		if (off >= sizeof(line))
			break;
	}
	progress("%s: shmem_alloc/shmem_fallback:%s", when, line);
}
static struct { char path[320]; char mode[32]; } saved[MAX_SAVED];
static int nr_saved;
static char tmpfs_file[512];

static void unlink_tmpfs_file(void)
{
	if (tmpfs_file[0] && getpid() == main_pid)
		unlink(tmpfs_file);
}

static void restore_settings(void)
{
	if (getpid() != main_pid)
		return;
	while (nr_saved > 0) {
		nr_saved--;
		try_write_file(saved[nr_saved].path, saved[nr_saved].mode);
	}
}

static void set_saved(const char *path, const char *val)
{
	if (nr_saved == MAX_SAVED)
		fail("too many settings");
	snprintf(saved[nr_saved].path, sizeof(saved[nr_saved].path), "%s", path);
	swap_setting(path, val, saved[nr_saved].mode, sizeof(saved[nr_saved].mode));
	nr_saved++;
}

/* Only hugepages-@kb's shmem_enabled "always", every other size "never". */
static void shmem_only_size(size_t kb)
{
	char path[320], want[64];
	struct dirent *d;
	DIR *dir = opendir(THP_DIR);
	int found = 0;

	if (!dir)
		fail("no %s", THP_DIR);
	snprintf(want, sizeof(want), "hugepages-%zukB", kb);
	while ((d = readdir(dir))) {
		if (strncmp(d->d_name, "hugepages-", 10))
			continue;
		snprintf(path, sizeof(path), THP_DIR "/%s/shmem_enabled", d->d_name);
		if (access(path, W_OK))
			continue;
		if (!strcmp(d->d_name, want)) {
			set_saved(path, "always");
			found = 1;
		} else {
			set_saved(path, "never");
		}
	}
	closedir(dir);
	if (!found)
		fail("no %s/%s/shmem_enabled", THP_DIR, want);
}

/* An address range of @size, aligned to @align plus @off. */
static char *reserve(size_t size, size_t align, size_t off)
{
	char *map = mmap(NULL, size + 2 * align, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (map == MAP_FAILED)
		fail("mmap: %s", strerror(errno));
	return (char *)((((uintptr_t)map + align - 1) & ~(align - 1)) + off);
}

static char *map_at(char *addr, int fd)
{
	char *p = mmap(addr, len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_FIXED | (fd < 0 ? MAP_ANONYMOUS : 0), fd, 0);

	if (p == MAP_FAILED)
		fail("mmap: %s", strerror(errno));
	return p;
}

/* Word w of the memory: generation 1 on the child's pages once written. */
static int child_wrote;

static uint64_t want_word(size_t w)
{
	size_t page = w * 8 / page_size;
	int gen = child_wrote && page % folio_pages == 1;

	return gen_word(moved && negative("bytes") ? 3 : 0, w, gen);
}

static void check_data(const char *b, const char *when)
{
	const uint64_t *w = (const uint64_t *)b;
	size_t i;

	for (i = 0; i < len / 8; i++)
		if (w[i] != want_word(i))
			fail("%s: byte %zu is %#llx, want %#llx", when, i * 8,
			     (unsigned long long)w[i], (unsigned long long)want_word(i));
}

/* Child commands. */
enum { CMD_CHECK = 1, CMD_WRITE, CMD_EXIT };

struct shared {
	int node;		/* where the child's pages must be */
	uint64_t pfn[];		/* the parent's pfns, to compare */
};

static struct shared *sh;

static void child(char *cbuf, int cmd_fd, int ack_fd)
{
	unsigned long i;
	uint64_t *pfn = calloc(nr_pages, sizeof(*pfn));
	char cmd, ok = 1;

	name = "shmem_migrate_test child";
	if (!pfn)
		_exit(2);
	progress("mapped at %p, reading", cbuf);
	check_data(cbuf, "child, first read");
	progress("read everything");
	if (write(ack_fd, &ok, 1) != 1)
		_exit(2);
	while (read(cmd_fd, &cmd, 1) == 1) {
		switch (cmd) {
		case CMD_CHECK:
			check_data(cbuf, "child");
			check_nodes(cbuf, len, sh->node, "child");
			read_pfns(cbuf, nr_pages, pfn);
			for (i = 0; i < nr_pages; i++)
				if (pfn[i] != sh->pfn[i])
					fail("child: page %lu at pfn %#llx, the parent's at %#llx",
					     i, (unsigned long long)pfn[i],
					     (unsigned long long)sh->pfn[i]);
			if (smaps_field(0, (uintptr_t)cbuf, (uintptr_t)cbuf + len,
					"ShmemPmdMapped"))
				fail("child: PMD mappings in a range mapped 64K off");
			break;
		case CMD_WRITE:
			for (i = 0; i < nr_folios; i++) {
				size_t first = (i * folio_pages + 1) * page_size / 8;

				fill_words(cbuf + first * 8, first, page_size / 8, 0, 1);
			}
			child_wrote = 1;
			break;
		case CMD_EXIT:
			_exit(0);
		}
		if (write(ack_fd, &ok, 1) != 1)
			_exit(2);
	}
	_exit(3);
}

static void tell(int cmd_fd, int ack_fd, char cmd, pid_t pid)
{
	char ack;
	int status;

	if (write(cmd_fd, &cmd, 1) != 1 || read(ack_fd, &ack, 1) != 1) {
		waitpid(pid, &status, 0);
		fail("the child failed at command %d (status %#x%s%d)", cmd, status,
		     WIFSIGNALED(status) ? ", signal " : ", exit ",
		     WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	}
}

int main(int argc, char **argv)
{
	const char *kind, *sub, *dir = NULL;
	char path[512], when[64], *cbuf = NULL, *want_sd = NULL;
	int fd = -1, cmd[2], ack[2], step, node, status;
	unsigned long i, success, pmd_kb = 0, vmlck = 0;
	struct offload_counters before;
	struct layout l0, l;
	uint64_t *prev_pfn;
	void **addrs;
	pid_t pid, parent;

	if (argc != 7) {
		fprintf(stderr, "usage: %s NAME none|test|dcbm|mtcopy anon|memfd|tmpfs:DIR FOLIO_KB NR_FOLIOS plain|mlock|softdirty\n",
			argv[0]);
		return 2;
	}
	name = argv[1];
	kind = argv[3];
	folio_size = strtoul(argv[4], NULL, 0) << 10;
	nr_folios = strtoul(argv[5], NULL, 0);
	sub = argv[6];
	page_size = sysconf(_SC_PAGESIZE);
	if (folio_size <= (size_t)page_size || folio_size > PMD_SIZE || !nr_folios)
		fail("bad sizes");
	folio_pages = folio_size / page_size;
	len = folio_size * nr_folios;
	nr_pages = len / page_size;
	have_migrator = check_migrator(argv[2]);
	main_pid = getpid();
	if (atexit(restore_settings))
		fail("atexit");

	if (!strcmp(kind, "anon")) {
		shmem_only_size(folio_size >> 10);
		buf = map_at(reserve(len, PMD_SIZE, 0), -1);
	} else if (!strcmp(kind, "memfd")) {
		/*
		 * An unlinked shmem file mapped is anonymous shared memory
		 * (shmem_mmap_prepare()): the per-size control decides.
		 */
		shmem_only_size(folio_size >> 10);
		fd = memfd_create("shmem_migrate_test", 0);
		if (fd < 0 || ftruncate(fd, len))
			fail("memfd: %s", strerror(errno));
		buf = map_at(reserve(len, 2 * folio_size, folio_size), fd);
	} else if (!strncmp(kind, "tmpfs:", 6)) {
		dir = kind + 6;
		if (folio_size != PMD_SIZE)
			fail("tmpfs huge=always gives 2M folios: FOLIO_KB must be 2048");
		snprintf(path, sizeof(path), "%s/shmem_migrate_test", dir);
		/*
		 * Linked while mapped: an unlinked file would be mapped as
		 * anonymous shared memory (shmem_mmap_prepare()), under the
		 * per-size controls instead of the mount's huge=always.
		 */
		fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || ftruncate(fd, len))
			fail("%s: %s", path, strerror(errno));
		snprintf(tmpfs_file, sizeof(tmpfs_file), "%s", path);
		if (atexit(unlink_tmpfs_file))
			fail("atexit");
		buf = map_at(reserve(len, PMD_SIZE, 0), fd);
		pmd_parent = 1;
	} else {
		fail("unknown kind '%s'", kind);
	}
	if (!strcmp(sub, "softdirty") && pmd_parent)
		fail("softdirty needs PTE mappings in the parent");

	progress("mapped at %p, filling", buf);
	shmem_alloc_stats("before the fill");
	bind_to_node(0);
	fill_words(buf, 0, len / 8, 0, 0);
	bind_to_node(-1);
	shmem_alloc_stats("after the fill");
	{
		char mode[32];

		if (thp_read_mode(THP_DIR "/shmem_enabled", mode, sizeof(mode)))
			mode[0] = 0;
		progress("shmem_enabled [%s], THPeligible %lu, AnonHugePages %lu kB, ShmemPmdMapped %lu kB",
			 mode, smaps_field(0, (uintptr_t)buf, (uintptr_t)buf + len, "THPeligible"),
			 smaps_field(0, (uintptr_t)buf, (uintptr_t)buf + len, "AnonHugePages"),
			 smaps_field(0, (uintptr_t)buf, (uintptr_t)buf + len, "ShmemPmdMapped"));
	}
	check_nodes(buf, len, 0, "after the fill");
	layout_read(&l0, buf, nr_pages);
	layout_check_whole(&l0, folio_pages, "after the fill");
	layout_free(&l0);
	if (pmd_parent) {
		pmd_kb = smaps_field(0, (uintptr_t)buf, (uintptr_t)buf + len, "ShmemPmdMapped");
		if (pmd_kb != len >> 10)
			fail("after the fill: ShmemPmdMapped %lu kB, want %zu: not mapped by PMDs",
			     pmd_kb, len >> 10);
	}

	/* The child maps every folio too. */
	sh = mmap(NULL, sizeof(*sh) + nr_pages * 8, PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED || pipe(cmd) || pipe(ack))
		fail("mmap/pipe: %s", strerror(errno));
	fflush(stdout);
	parent = getpid();
	pid = fork();
	if (pid < 0)
		fail("fork: %s", strerror(errno));
	if (!pid) {
		die_with_parent(parent);
		close(cmd[1]);
		close(ack[0]);
		if (fd < 0)
			cbuf = buf;
		else
			cbuf = map_at(reserve(len, PMD_SIZE, 64 << 10), fd);
		child(cbuf, cmd[0], ack[1]);
	}
	close(cmd[0]);
	close(ack[1]);
	progress("forked the child, waiting for its first read");
	{
		char a;

		if (read(ack[0], &a, 1) != 1) {
			waitpid(pid, &status, 0);
			fail("the child failed its first read (status %#x)", status);
		}
	}

	/* What SUB sets up. */
	if (!strcmp(sub, "mlock")) {
		if (mlock(buf, len))
			fail("mlock: %s", strerror(errno));
		vmlck = kb_value("/proc/self/status", "VmLck");
		if (vmlck < len >> 10)
			fail("VmLck %lu kB after mlock of %zu kB", vmlck, len >> 10);
		layout_read(&l0, buf, nr_pages);
		layout_check_bit(&l0, KPF_MLOCKED, 1, "mlocked", "after mlock");
		layout_check_bit(&l0, KPF_UNEVICTABLE, 1, "unevictable", "after mlock");
		layout_free(&l0);
	} else if (!strcmp(sub, "softdirty")) {
		want_sd = calloc(nr_pages, 1);
		if (!want_sd)
			fail("out of memory");
		write_file("/proc/self/clear_refs", "4");
		for (i = 0; i < nr_pages; i += 2) {
			volatile char *p = buf + i * page_size;

			*p = *p;
			want_sd[i] = 1;
		}
	} else if (strcmp(sub, "plain")) {
		fail("unknown SUB '%s'", sub);
	}

	layout_read(&l0, buf, nr_pages);
	layout_check_whole(&l0, folio_pages, "before the moves");
	if (want_sd)
		for (i = 0; i < nr_pages; i++)
			if (!!(l0.pme[i] & PM_SOFT_DIRTY) != want_sd[i])
				fail("before the moves: page %lu soft-dirty %d, want %d (pagemap %#llx)",
				     i, !!(l0.pme[i] & PM_SOFT_DIRTY), want_sd[i],
				     (unsigned long long)l0.pme[i]);
	addrs = calloc(nr_folios, sizeof(*addrs));
	prev_pfn = calloc(nr_pages, sizeof(*prev_pfn));
	if (!addrs || !prev_pfn)
		fail("out of memory");
	memcpy(prev_pfn, l0.pfn, nr_pages * sizeof(*prev_pfn));
	for (i = 0; i < nr_folios; i++)
		addrs[i] = buf + i * folio_size;

	for (step = 0; step < 2; step++) {
		node = step == 0 ? 1 : 0;
		snprintf(when, sizeof(when), "move %d to node %d", step + 1, node);
		offload_snapshot(&before);
		success = vmstat("pgmigrate_success");
		move_list_all(addrs, nr_folios, node, MPOL_MF_MOVE_ALL, when);
		moved = 1;
		success = vmstat("pgmigrate_success") - success;

		check_nodes(buf, len, negative("node") ? !node : node, when);
		check_data(buf, when);
		layout_read(&l, buf, nr_pages);
		layout_check_whole(&l, negative("large") ? 2 * folio_pages : folio_pages, when);
		for (i = 0; i < nr_pages; i++) {
			uint64_t fl = l.pme[i] >> PM_FLAGS_SHIFT, fl0 = l0.pme[i] >> PM_FLAGS_SHIFT;

			if (l.pfn[i] == prev_pfn[i])
				fail("%s: page %lu did not move (pfn %#llx)", when, i,
				     (unsigned long long)l.pfn[i]);
			if (fl != fl0)
				fail("%s: page %lu: pagemap flags %#llx, were %#llx", when, i,
				     (unsigned long long)fl, (unsigned long long)fl0);
			if (want_sd && !!(l.pme[i] & PM_SOFT_DIRTY) !=
			    (want_sd[i] ^ (i == 1 && negative("softdirty"))))
				fail("%s: page %lu soft-dirty %d, want %d", when, i,
				     !!(l.pme[i] & PM_SOFT_DIRTY),
				     want_sd[i] ^ (i == 1 && negative("softdirty")));
			if (i % folio_pages == 0 &&
			    !!(l.flags[i] & BIT64(KPF_DIRTY)) != !!(l0.flags[i] & BIT64(KPF_DIRTY)))
				fail("%s: folio %lu: dirty %d, was %d", when, i / folio_pages,
				     !!(l.flags[i] & BIT64(KPF_DIRTY)),
				     !!(l0.flags[i] & BIT64(KPF_DIRTY)));
		}
		if (!strcmp(sub, "mlock")) {
			int want = !negative("mlock");

			layout_check_bit(&l, KPF_MLOCKED, want, "mlocked", when);
			layout_check_bit(&l, KPF_UNEVICTABLE, want, "unevictable", when);
			if (kb_value("/proc/self/status", "VmLck") != vmlck)
				fail("%s: VmLck %lu kB, was %lu", when,
				     kb_value("/proc/self/status", "VmLck"), vmlck);
		}
		if (pmd_parent &&
		    smaps_field(0, (uintptr_t)buf, (uintptr_t)buf + len, "ShmemPmdMapped") != pmd_kb)
			fail("%s: ShmemPmdMapped %lu kB, was %lu: PMD mappings lost", when,
			     smaps_field(0, (uintptr_t)buf, (uintptr_t)buf + len,
					 "ShmemPmdMapped"), pmd_kb);
		if (success != nr_pages)
			fail("%s: pgmigrate_success grew by %lu, want %lu", when, success,
			     nr_pages);
		check_offload_all(have_migrator, &before, nr_folios, "shmem", when);

		/* The child sees the same folios. */
		sh->node = node;
		memcpy(sh->pfn, l.pfn, nr_pages * 8);
		tell(cmd[1], ack[0], CMD_CHECK, pid);
		if (step == 0) {
			/* The child writes; the parent sees it. */
			tell(cmd[1], ack[0], CMD_WRITE, pid);
			child_wrote = 1;
			check_data(buf, "after the child's writes");
		}
		memcpy(prev_pfn, l.pfn, nr_pages * sizeof(*prev_pfn));
		layout_free(&l);
		progress("%s checked", when);
	}
	tell(cmd[1], ack[0], CMD_CHECK, pid);
	{
		char c = CMD_EXIT;

		if (write(cmd[1], &c, 1) != 1)
			fail("the child is gone before its exit");
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		fail("the child failed (status %#x)", status);

	printf("GUEST-TEST: PASS %s (%lu %s folios of %zu KiB mapped by two processes, %s, moved to node 1 and back, migrator %s)\n",
	       name, nr_folios, kind, folio_size >> 10, sub, argv[2]);
	return 0;
}
