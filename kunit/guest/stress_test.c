// SPDX-License-Identifier: GPL-2.0
/*
 * stress_test: writers keep writing their memory while other processes
 * migrate it back and forth between the nodes; no write may be lost.
 *
 *   stress_test NAME SECONDS FOLIO_KB AREA_KB NR_WRITERS NR_MIGRATORS [OFFLOAD]
 *
 * Each of NR_WRITERS processes maps AREA_KB of anonymous memory backed by
 * folios of FOLIO_KB (as in move_pages_test) and, page after page, checks
 * that the page still holds what it last wrote there, then writes the whole
 * page again with a new generation. Meanwhile NR_MIGRATORS processes move
 * every writer's memory with move_pages(pid, ...), one address per folio,
 * migrator i to node (round + i) % 2, so that with two migrators the same
 * memory is pulled both ways at once. After SECONDS (and at least two
 * rounds of every migrator, but at most 10 x SECONDS) the migrators stop
 * and then the writers check all their memory a last time.
 *
 * Fails if any word read back is not the last one written, if a writer or
 * migrator dies, if move_pages() reports an error other than a transient
 * one (-EBUSY, -EAGAIN, -ENOMEM, or -ENOENT: the other migrator has the
 * folio under migration, its PTEs are migration entries; a folio left on
 * the other node, its migration given up after retries, counts the same),
 * or if pgmigrate_success grew by fewer pages than all the writers' areas
 * together (each moved once). With OFFLOAD, /proc/vmstat must show:
 *   none     no batch offloaded;
 *   copied   folios copied by the migrator;
 *   faults   folios copied by the migrator and folios the CPU copied after
 *            the migrator failed (fault injection on).
 */
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>

#include "guest.h"

#define MAX_PROCS 8

struct shared {
	volatile int stop_migrators, stop;
	struct {
		pid_t pid;
		char *addr;
		volatile int ready;
		unsigned long rounds;
		char error[256];
	} writer[MAX_PROCS];
	struct {
		volatile unsigned long rounds;
		unsigned long calls, moved, transient;
		char error[256];
	} migrator[MAX_PROCS];
};

static struct shared *sh;
static size_t area, folio;

static uint64_t word_value(size_t page, size_t word, uint64_t gen)
{
	return ((gen << 40) | (page << 9) | word) * 0x9e3779b97f4a7c15ULL + gen;
}

/* Check @page holds generation @gen; on a mismatch say where, return -1. */
static int check_page(int w, const uint64_t *p, size_t page, uint64_t gen)
{
	size_t i, words = page_size / sizeof(*p);

	for (i = 0; i < words; i++) {
		if (p[i] != word_value(page, i, gen)) {
			snprintf(sh->writer[w].error, sizeof(sh->writer[w].error),
				 "page %zu word %zu is %#llx, want %#llx (generation %llu)",
				 page, i, (unsigned long long)p[i],
				 (unsigned long long)word_value(page, i, gen),
				 (unsigned long long)gen);
			return -1;
		}
	}
	return 0;
}

static void write_page(uint64_t *p, size_t page, uint64_t gen)
{
	size_t i, words = page_size / sizeof(*p);

	for (i = 0; i < words; i++)
		p[i] = word_value(page, i, gen);
}

static void writer(int w)
{
	size_t i, pages = area / page_size;
	uint64_t *gen = calloc(pages, sizeof(*gen));
	char *buf = map_aligned(area, folio);

	if (!gen)
		_exit(2);
	for (i = 0; i < pages; i++)
		write_page((uint64_t *)(buf + i * page_size), i, 0);
	sh->writer[w].addr = buf;
	sh->writer[w].ready = 1;
	while (!sh->stop) {
		for (i = 0; i < pages && !sh->stop; i++) {
			uint64_t *p = (uint64_t *)(buf + i * page_size);

			if (check_page(w, p, i, gen[i]))
				_exit(1);
			write_page(p, i, ++gen[i]);
		}
		sh->writer[w].rounds++;
	}
	/* The last look, after the migrators stopped. */
	for (i = 0; i < pages; i++)
		if (check_page(w, (uint64_t *)(buf + i * page_size), i, gen[i]))
			_exit(1);
	_exit(0);
}

static void migrator(int m, int nr_writers)
{
	size_t i, n = area / folio;
	void **pages = calloc(n, sizeof(*pages));
	int *nodes = calloc(n, sizeof(*nodes));
	int *status = calloc(n, sizeof(*status));
	unsigned long round;
	int w;

	if (!pages || !nodes || !status)
		_exit(2);
	for (round = 0; !sh->stop_migrators; round++) {
		for (w = 0; w < nr_writers && !sh->stop_migrators; w++) {
			int node = (round + m) % 2;

			for (i = 0; i < n; i++) {
				pages[i] = sh->writer[w].addr + i * folio;
				nodes[i] = node;
			}
			if (syscall(SYS_move_pages, sh->writer[w].pid, n, pages,
				    nodes, status, MPOL_MF_MOVE) < 0) {
				snprintf(sh->migrator[m].error,
					 sizeof(sh->migrator[m].error),
					 "move_pages(pid %d): %s",
					 sh->writer[w].pid, strerror(errno));
				_exit(1);
			}
			sh->migrator[m].calls++;
			for (i = 0; i < n; i++) {
				if (status[i] == node) {
					sh->migrator[m].moved += folio / page_size;
				} else if (status[i] >= 0 ||
					   status[i] == -EBUSY ||
					   status[i] == -EAGAIN ||
					   status[i] == -ENOMEM ||
					   status[i] == -ENOENT) {
					sh->migrator[m].transient++;
				} else {
					snprintf(sh->migrator[m].error,
						 sizeof(sh->migrator[m].error),
						 "folio %zu of writer %d: status %d moving to node %d",
						 i, w, status[i], node);
					_exit(1);
				}
			}
		}
		sh->migrator[m].rounds++;
	}
	_exit(0);
}

static pid_t spawn(void (*fn)(int, int), int i, int arg)
{
	pid_t pid = fork();

	if (pid < 0)
		fail("fork: %s", strerror(errno));
	if (!pid) {
		/* Gone with the test, whichever way it ends. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() == 1)
			_exit(1);
		fn(i, arg);
	}
	return pid;
}

static void writer_fn(int w, int unused)
{
	(void)unused;
	writer(w);
}

/* Reap @pid; "" if it exited 0, else why not. */
static const char *reap(pid_t pid, const char *what, int i, const char *error)
{
	static char why[400];
	int st;

	if (waitpid(pid, &st, 0) != pid)
		snprintf(why, sizeof(why), "%s %d: waitpid: %s", what, i, strerror(errno));
	else if (WIFEXITED(st) && !WEXITSTATUS(st))
		return "";
	else if (WIFSIGNALED(st))
		snprintf(why, sizeof(why), "%s %d killed by signal %d", what, i, WTERMSIG(st));
	else
		snprintf(why, sizeof(why), "%s %d exited %d: %s", what, i,
			 WEXITSTATUS(st), error[0] ? error : "out of memory");
	return why;
}

int main(int argc, char **argv)
{
	unsigned long copied, fallback, batch, success, moved = 0, transient = 0, calls = 0;
	pid_t mig[MAX_PROCS];
	int seconds, nr_writers, nr_migrators, i;
	const char *expect = argc > 7 ? argv[7] : NULL, *why;
	char first_error[400] = "", writer_error[400] = "";
	struct timespec start;

	name = argc > 1 ? argv[1] : "stress_test";
	if (argc < 7)
		fail("usage: stress_test NAME SECONDS FOLIO_KB AREA_KB NR_WRITERS NR_MIGRATORS [none|copied|faults]");
	page_size = sysconf(_SC_PAGESIZE);
	seconds = atoi(argv[2]);
	folio = strtoul(argv[3], NULL, 10) << 10;
	area = strtoul(argv[4], NULL, 10) << 10;
	nr_writers = atoi(argv[5]);
	nr_migrators = atoi(argv[6]);
	if (seconds < 1 || !folio || area < folio || area % folio ||
	    nr_writers < 1 || nr_writers > MAX_PROCS ||
	    nr_migrators < 1 || nr_migrators > MAX_PROCS)
		fail("bad arguments");
	set_thp_size(folio >> 10);

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		fail("mmap: %s", strerror(errno));
	success = vmstat("pgmigrate_success");
	batch = vmstat("migrate_offload_batches");
	copied = vmstat("migrate_offload_folios_copied");
	fallback = vmstat("migrate_offload_folios_fallback");

	for (i = 0; i < nr_writers; i++)
		sh->writer[i].pid = spawn(writer_fn, i, 0);
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (i = 0; i < nr_writers; i++) {
		while (!sh->writer[i].ready) {
			struct timespec now;

			clock_gettime(CLOCK_MONOTONIC, &now);
			if (now.tv_sec - start.tv_sec > 60)
				fail("writer %d did not start within 60 s", i);
			usleep(10000);
		}
	}
	for (i = 0; i < nr_migrators; i++)
		mig[i] = spawn(migrator, i, nr_writers);

	/*
	 * SECONDS, and at least two rounds of every migrator over all the
	 * memory however slow the kernel is (debug kernels), but no more
	 * than ten times SECONDS.
	 */
	for (i = 0; i < seconds * 100; i++) {
		int m, done = i >= seconds * 10;

		for (m = 0; m < nr_migrators; m++)
			done &= sh->migrator[m].rounds >= 2;
		/* Or someone failed already. */
		for (m = 0; m < nr_migrators; m++)
			done |= !!sh->migrator[m].error[0];
		for (m = 0; m < nr_writers; m++)
			done |= !!sh->writer[m].error[0];
		if (done)
			break;
		usleep(100000);
	}
	/* The writers go on until the migrators stopped. */
	sh->stop_migrators = 1;

	for (i = 0; i < nr_migrators; i++) {
		why = reap(mig[i], "migrator", i, sh->migrator[i].error);
		if (*why && !*first_error)
			snprintf(first_error, sizeof(first_error), "%s", why);
		moved += sh->migrator[i].moved;
		transient += sh->migrator[i].transient;
		calls += sh->migrator[i].calls;
		if (sh->migrator[i].rounds < 2 && !*first_error)
			snprintf(first_error, sizeof(first_error),
				 "migrator %d did only %lu rounds in %d s", i,
				 sh->migrator[i].rounds, seconds * 10);
	}
	sh->stop = 1;
	for (i = 0; i < nr_writers; i++) {
		why = reap(sh->writer[i].pid, "writer", i, sh->writer[i].error);
		if (*why && !*writer_error)
			snprintf(writer_error, sizeof(writer_error), "%s", why);
	}
	success = vmstat("pgmigrate_success") - success;
	batch = vmstat("migrate_offload_batches") - batch;
	copied = vmstat("migrate_offload_folios_copied") - copied;
	fallback = vmstat("migrate_offload_folios_fallback") - fallback;
	printf("%s: %d s, %d writers x %lu KiB of %lu KiB folios: writer rounds",
	       name, seconds, nr_writers, area >> 10, folio >> 10);
	for (i = 0; i < nr_writers; i++)
		printf(" %lu", sh->writer[i].rounds);
	printf("; %lu move_pages() calls, %lu pages on the asked node, %lu transient failures, pgmigrate_success +%lu; offload batches %lu, copied %lu, fallback %lu\n",
	       calls, moved, transient, success, batch, copied, fallback);

	/* A lost write first: a migrator fails too once its writer is gone. */
	if (*writer_error)
		fail("%s", writer_error);
	if (*first_error)
		fail("%s", first_error);
	for (i = 0; i < nr_writers; i++)
		if (sh->writer[i].rounds < 1)
			fail("writer %d never finished a round", i);
	if (success < nr_writers * (area / page_size))
		fail("only %lu pages migrated, fewer than the writers' %lu", success,
		     nr_writers * (area / page_size));
	if (expect && !strcmp(expect, "none") && (batch || copied || fallback))
		fail("offloaded with no migrator: %lu batches", batch);
	if (expect && strcmp(expect, "none") && !copied)
		fail("the migrator copied nothing (%lu batches)", batch);
	if (expect && !strcmp(expect, "faults") && !fallback)
		fail("no folio fell back to the CPU copy with faults injected");
	printf("GUEST-TEST: PASS %s\n", name);
	return 0;
}
