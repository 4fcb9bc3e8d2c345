// SPDX-License-Identifier: GPL-2.0
/*
 * eagain_test: a folio the migrator copied, then written by someone who
 * holds a reference to it, must be copied again when its move is retried.
 *
 *   eagain_test NAME FOLIO_KB NR_FOLIOS
 *
 * Run with the test migrator loaded and offloading move_pages() batches of
 * every size (offload_test.sh). Faults NR_FOLIOS folios of FOLIO_KB on
 * node 0, filled with pattern(): 4 means small pages (MADV_NOHUGEPAGE), a
 * larger size is enabled alone, "always" (the mTHP controls are put back
 * at exit), and pagemap + /proc/kpageflags must show every folio whole.
 * Then it sets the migrator's hold_ref to 0 and hold_ref_ms to HOLD_MS (both
 * put back at exit) and moves all the folios to node 1 with one
 * move_pages() call, one address per folio. The migrator, once it copied
 * the first folio of the batch, takes a reference to that source folio,
 * writes hold_ref_marker into its first 8 bytes and drops the reference
 * HOLD_MS later: the folio's move fails with -EAGAIN meanwhile, and the
 * retry must copy it again, or the marker, written after the batch copy,
 * is lost. 50 ms after the call it checks that:
 *   - hold_ref_done grew by exactly 1: the hook fired and its reference
 *     was dropped (else the test proved nothing);
 *   - page 0 starts with the marker, and the rest of it and every other
 *     page hold their pattern;
 *   - every page is on node 1. If the reference outlasted every retry
 *     of the call, folio 0 legitimately stays on node 0 (a folio with an
 *     unexpected reference cannot move) and move_pages() reports it: the
 *     test says so and moves it again, alone, which must succeed.
 * It prints hold_ref_locked's growth: 1 when the reference was dropped
 * while the migration still held the folio locked, that is, when the
 * retry this test is about ran within the same migrate_pages() call.
 *
 * Prints one line, "GUEST-TEST: PASS NAME (...)" or "GUEST-TEST: FAIL
 * NAME: why", and exits 0 or 1.
 */
#include "guest.h"

#include <time.h>

#define MIGRATOR_PARAMS	"/sys/module/migrate_offload_test_migrator/parameters"
/* How long to wait for the reference to be dropped, after the first 50 ms. */
#define DONE_WAIT_MS	2000
/* What a move_pages() status holds until the kernel writes it. */
#define NO_STATUS	(-1000)

/*
 * The reference is held for HOLD_MS (two jiffies at HZ=250, so at least one
 * full jiffy after the batch copy ended): long after the folio's first move
 * attempt, which comes right after the copy, and before the first pass of
 * moves over the whole batch ends. The batch is made as large as the call
 * (debugfs batch_max_pages, when the kernel has it), so that this pass takes
 * much longer than HOLD_MS and the retry of the first folio runs in the same
 * migrate_pages_batch() as its failed attempt: the path under test.
 */
#define HOLD_MS		8
#define BATCH_MAX	"/sys/kernel/debug/migrate/batch_max_pages"

/* The hold_ref controls as they were, put back at exit; 0: not saved. */
static int params_saved;
static long saved_hold_ref, saved_hold_ref_ms, saved_batch_max = -1;

static void param_path(char *path, size_t len, const char *param)
{
	snprintf(path, len, MIGRATOR_PARAMS "/%s", param);
}

static long param_read(const char *param)
{
	char path[256];
	long val;

	param_path(path, sizeof(path), param);
	if (try_read_long(path, &val))
		fail("read %s: %s (is the test migrator of this kernel loaded?)",
		     path, strerror(errno));
	return val;
}

static unsigned long param_read_ulong(const char *param)
{
	char path[256];

	param_path(path, sizeof(path), param);
	return read_ulong(path);
}

static int param_try_write(const char *param, long val)
{
	char path[256], v[32];

	param_path(path, sizeof(path), param);
	snprintf(v, sizeof(v), "%ld", val);
	return try_write_file(path, v);
}

static void param_write(const char *param, long val)
{
	if (param_try_write(param, val))
		fail("write %ld to %s/%s: %s", val, MIGRATOR_PARAMS, param,
		     strerror(errno));
}

/*
 * Disarm hold_ref (if it never fired, the next batch of anyone would take
 * it) and put hold_ref_ms back.
 */
static void params_restore(void)
{
	if (!params_saved)
		return;
	param_try_write("hold_ref", saved_hold_ref);
	param_try_write("hold_ref_ms", saved_hold_ref_ms);
	if (saved_batch_max >= 0) {
		FILE *f = fopen(BATCH_MAX, "w");

		if (f) {
			fprintf(f, "%ld\n", saved_batch_max);
			fclose(f);
		}
	}
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

struct counters {
	long done, locked, batches, copied;
	unsigned long vm_batches, vm_copied, vm_fallback;
};

static void counters_read(struct counters *c)
{
	c->done = param_read("hold_ref_done");
	c->locked = param_read("hold_ref_locked");
	c->batches = param_read("batches");
	c->copied = param_read("copied");
	c->vm_batches = vmstat("migrate_offload_batches");
	c->vm_copied = vmstat("migrate_offload_folios_copied");
	c->vm_fallback = vmstat("migrate_offload_folios_fallback");
}

/* Is every page of [buf, buf + len) on @node? */
static int all_on_node(char *buf, size_t len, int node, const char *when)
{
	int *status = page_nodes(buf, len, when);
	unsigned long i;
	int ok = 1;

	for (i = 0; i < len / page_size; i++)
		ok &= status[i] == node;
	free(status);
	return ok;
}

int main(int argc, char **argv)
{
	unsigned long i, nr_folios, nr_pages, folio_pages, marker;
	struct counters before, after;
	size_t folio_kb, folio_size, len;
	char numbers[512], moved_again[256] = "", st0[32];
	int *nodes, *status, node, first_status0;
	long ret, waited = 50;
	uint64_t head;
	void **addrs;
	char *buf;

	if (argc != 4) {
		fprintf(stderr, "usage: %s NAME FOLIO_KB NR_FOLIOS\n", argv[0]);
		return 2;
	}
	name = argv[1];
	folio_kb = strtoul(argv[2], NULL, 0);
	nr_folios = strtoul(argv[3], NULL, 0);
	page_size = sysconf(_SC_PAGESIZE);
	folio_size = folio_kb << 10;
	if (folio_size < (size_t)page_size || folio_size >= PMD_SIZE || nr_folios < 2)
		fail("bad sizes: folio %zu KiB, %lu folios", folio_kb, nr_folios);
	folio_pages = folio_size / page_size;
	len = nr_folios * folio_size;
	nr_pages = len / page_size;

	if (param_read("registered") != 1)
		fail("the test migrator is not registered: load it first");
	/* A hold_ref armed by someone else would fire on another folio. */
	saved_hold_ref = param_read("hold_ref");
	saved_hold_ref_ms = param_read("hold_ref_ms");
	if (saved_hold_ref != -1)
		fail("hold_ref is %ld before the test, want -1", saved_hold_ref);
	marker = param_read_ulong("hold_ref_marker");
	if (marker == pattern(0))
		fail("hold_ref_marker %#lx is the pattern of page 0", marker);
	params_saved = 1;
	if (atexit(params_restore))
		fail("atexit failed");

	if (folio_size > (size_t)page_size)
		thp_only_size(folio_kb, "always");
	buf = map_aligned(len, folio_size);
	fill_on_node(buf, len, 0);
	check_nodes(buf, len, 0, "fault on node 0");
	/* The folios are of the size the case is about. */
	check_folios(buf, nr_pages, folio_pages, "fault on node 0");

	addrs = calloc(nr_folios, sizeof(*addrs));
	nodes = calloc(nr_folios, sizeof(*nodes));
	status = calloc(nr_folios, sizeof(*status));
	if (!addrs || !nodes || !status)
		fail("out of memory");
	for (i = 0; i < nr_folios; i++) {
		addrs[i] = buf + i * folio_size;
		nodes[i] = 1;
		status[i] = NO_STATUS;
	}

	/* One batch for the whole call, if the kernel lets the batch grow. */
	if (!try_read_long(BATCH_MAX, &saved_batch_max)) {
		FILE *f = fopen(BATCH_MAX, "w");

		if (!f || fprintf(f, "%lu\n", nr_pages) < 0 || fclose(f))
			fail("write %lu to %s: %s", nr_pages, BATCH_MAX, strerror(errno));
	}

	counters_read(&before);
	param_write("hold_ref_ms", HOLD_MS);
	/* Pair 0: the first folio of the batch, folio 0 (page 0). */
	param_write("hold_ref", 0);
	ret = move_pages(nr_folios, addrs, nodes, status, MPOL_MF_MOVE);
	if (ret < 0)
		fail("move_pages(to node 1): %s", strerror(errno));
	first_status0 = status[0];

	/* The reference is dropped from a delayed work: let it run. */
	sleep_ms(50);
	while (param_read("hold_ref_done") == before.done && waited < 50 + DONE_WAIT_MS) {
		sleep_ms(10);
		waited += 10;
	}
	counters_read(&after);
	snprintf(numbers, sizeof(numbers),
		 "move_pages() returned %ld; hold_ref_done %+ld, hold_ref_locked %+ld after %ld ms, hold_ref now %ld; migrator: batches %+ld, copied %+ld; vmstat: batches %+ld, copied %+ld, fallback %+ld",
		 ret, after.done - before.done, after.locked - before.locked,
		 waited, param_read("hold_ref"), after.batches - before.batches,
		 after.copied - before.copied,
		 (long)(after.vm_batches - before.vm_batches),
		 (long)(after.vm_copied - before.vm_copied),
		 (long)(after.vm_fallback - before.vm_fallback));

	/* The hook fired once, and its reference is gone: else no test. */
	if (after.done == before.done)
		fail("hold_ref never took its reference (or never dropped it): the test proved nothing; %s",
		     numbers);
	if (after.done - before.done != 1)
		fail("hold_ref_done grew by %ld, want 1; %s",
		     after.done - before.done, numbers);

	/*
	 * The marker written into the source after the batch copy reached
	 * whatever now maps page 0: the retried move copied afresh (or the
	 * move failed and the source stayed).
	 */
	head = *(volatile uint64_t *)buf;
	if (head != marker)
		fail("page 0 starts with %#llx, want the marker %#lx%s; %s",
		     (unsigned long long)head, marker,
		     head == pattern(0) ?
		     ": the move used the batch copy made before the marker was written" : "",
		     numbers);
	/* Nothing else changed, on any page. */
	check_bytes(buf, sizeof(uint64_t), len - sizeof(uint64_t), "after the move");

	/* Every other folio moved in the one call. */
	check_nodes(buf + folio_size, len - folio_size, 1, "after the move");
	if (!all_on_node(buf, folio_size, 1, "after the move")) {
		int *st = page_nodes(buf, page_size, "after the move");

		node = st[0];
		free(st);
		/*
		 * The reference outlasted every retry of the call (move_pages()
		 * must then have reported the one folio): moving a folio that
		 * someone holds a reference to fails, as it always has. The
		 * reference is gone now, so a second call must move it: that
		 * checks the folio was left intact and movable, not the retry.
		 */
		if (ret != 1)
			fail("folio 0 is on node %d, but move_pages() returned %ld, want 1 (folio 0 not moved); %s",
			     node, ret, numbers);
		/* (Statuses are only written when the whole call succeeded.) */
		if (first_status0 == NO_STATUS)
			snprintf(st0, sizeof(st0), "not written");
		else
			snprintf(st0, sizeof(st0), "%d", first_status0);
		snprintf(moved_again, sizeof(moved_again),
			 "; folio 0 stayed on node %d in the first call (status %s): moved again",
			 node, st0);
		status[0] = NO_STATUS;
		ret = move_pages(1, addrs, nodes, status, MPOL_MF_MOVE);
		if (ret)
			fail("second move_pages() of folio 0: returned %ld (%s), status %d; %s",
			     ret, ret < 0 ? strerror(errno) : "not moved",
			     status[0], numbers);
		if (status[0] != 1)
			fail("second move_pages() of folio 0: status %d; %s",
			     status[0], numbers);
		check_nodes(buf, folio_size, 1, "after the second move");
		head = *(volatile uint64_t *)buf;
		if (head != marker)
			fail("after the second move, page 0 starts with %#llx, want the marker %#lx; %s",
			     (unsigned long long)head, marker, numbers);
		check_bytes(buf, sizeof(uint64_t), folio_size - sizeof(uint64_t),
			    "after the second move");
	} else if (ret) {
		fail("every folio is on node 1, but move_pages() returned %ld; %s",
		     ret, numbers);
	}

	/*
	 * The path under test is a retry within the call that first failed
	 * the move: the reference dropped while the migration still held the
	 * folio. Otherwise the folio was given up and moved again from
	 * scratch, which would deliver the marker even on a kernel that
	 * trusted the stale copy: the test would prove nothing.
	 */
	if (after.locked == before.locked)
		fail("the reference was dropped after the migration gave folio 0 up: its in-call retry never ran; %s%s",
		     numbers, moved_again);

	printf("GUEST-TEST: PASS %s (%lu folios of %zu KiB; %s%s; hold_ref_locked %+ld: %s)\n",
	       name, nr_folios, folio_kb, numbers, moved_again,
	       after.locked - before.locked,
	       after.locked > before.locked ?
	       "dropped while the migration held the folio locked, the retry ran in the same call" :
	       "dropped while the migration did not hold the folio locked");
	free(addrs);
	free(nodes);
	free(status);
	return 0;
}
