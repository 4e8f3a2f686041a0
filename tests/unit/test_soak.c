/* SPDX-License-Identifier: MIT */
/*
 * test_soak.c - a time-bounded randomized soak of the whole stack: the
 * block layer (sched/), the fault-injection stacking device (fault.c) and
 * the io_uring (uring.c) or ram driver under it.
 *
 * For T_SOAK_SECONDS (default 20; the long run is T_SOAK_SECONDS=600) the
 * test runs rounds of 2-5 s, each with new parameters drawn from a seeded
 * PRNG.  A round builds a stack: the lower device is an io_uring device
 * on a 64 MiB temporary file (O_DIRECT, aligned buffers) with a small
 * ring (4-16 slots, sometimes SQPOLL) under a queue of 16-64 driver tags,
 * so the ring fills up, or a ram device; over it 1-3 fault devices, each
 * failing with -EIO every request that touches its one "bad" sector range
 * (optionally only for some ops), sometimes one more failing every flush,
 * each adding 0-100 us of completion latency; on top a queue with
 * no_merges, so one bio is one request and EIO attribution is exact,
 * elevator none or mq-deadline.  Without io_uring only ram is used.
 *
 * Four threads submit random reads, writes and flushes (4-64 KiB, 4 KiB
 * aligned, random plugs, priorities and flags, each thread in its own
 * quarter of the device, biased towards the edges of bad ranges), and a
 * controller switches the top queue's elevator and tunables at random.
 * Every bio knows the status it must end with: -EIO when the first fault
 * layer that matches it (op mask, range) fails it, else 0; and it must end
 * exactly once.  Writes stamp every 512-byte sector with thread, sequence
 * and sector; reads are checked against the thread's model at completion,
 * reads that failed must leave the buffer untouched, and at the end of the
 * round every thread reads its region back, after which the lower
 * device's content (ram memory or the file) must equal the model sector by
 * sector, bad ranges included (a failed write never reaches it).
 *
 * After the round: every queue of the stack (the inner ones found by
 * wrapping each device's queue_rq) is drained and balanced - nothing in
 * flight, dispatched == completed == expected per direction, errors ==
 * the EIOs failed at or below it, no driver or scheduler tag held, no
 * usage reference - and each fault device injected exactly the bios
 * attributed to it and forwarded the rest.  A watchdog dumps the stack
 * instead of hanging.  One line per round goes to stdout.
 *
 * Environment: T_SOAK_SECONDS; T_SOAK_SEED (default: from the clock,
 * printed; round 0 runs exactly this seed, so a failed round replays with
 * its printed seed); T_SOAK_LOWER=ram|uring to use only one lower device.
 *
 * One program from six files sharing soak_fixture.h: this one (the
 * environment, the test, main), soak_stack.c (a round's devices and
 * queues), soak_io.c (the submitting threads), soak_ctl.c (the
 * controller) and soak_check.c (a round run, watched and balanced).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <liburing.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "soak_fixture.h"
#include "t_main.h"
#include "mqfs/clock.h"
#include "mqfs/dev/uring.h"

#define DEFAULT_SECONDS	20

/* ---- io_uring: watch the ring fill up; ordering for TSan -------------- */

/*
 * uring.c calls liburing's io_uring_submit() and io_uring_peek_batch_cqe()
 * (shared library functions): the test interposes both to see ring-full
 * conditions - a submit entered with no free SQ slot (the driver's
 * get_sqe failed), a submit refused with -EBUSY/-EAGAIN, a reap that
 * finds the kernel's CQ-overflow flag set - and, in TSan builds, to tell
 * TSan that a CQE is ordered after its SQE (the kernel is in between): a
 * submit releases the ring, a reap acquires it.
 */
static int (*real_uring_submit)(struct io_uring *);
static unsigned (*real_uring_peek)(struct io_uring *, struct io_uring_cqe **,
				   unsigned);
atomic_ulong g_sq_full;
atomic_ulong g_ring_busy;
atomic_ulong g_cq_overflow;

#if defined(__SANITIZE_THREAD__)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define tsan_acquire(p)	__tsan_acquire(p)
#define tsan_release(p)	__tsan_release(p)
#else
#define tsan_acquire(p)	do { } while (0)
#define tsan_release(p)	do { } while (0)
#endif

int io_uring_submit(struct io_uring *ring)
{
	int ret;

	if (!io_uring_sq_space_left(ring))
		atomic_fetch_add_explicit(&g_sq_full, 1, memory_order_relaxed);
	tsan_release(ring);
	ret = real_uring_submit(ring);
	if (ret == -EBUSY || ret == -EAGAIN)
		atomic_fetch_add_explicit(&g_ring_busy, 1, memory_order_relaxed);
	return ret;
}

unsigned io_uring_peek_batch_cqe(struct io_uring *ring,
				 struct io_uring_cqe **cqes, unsigned count)
{
	unsigned n = real_uring_peek(ring, cqes, count);

	tsan_acquire(ring);
	if (IO_URING_READ_ONCE(*ring->sq.kflags) & IORING_SQ_CQ_OVERFLOW)
		atomic_fetch_add_explicit(&g_cq_overflow, 1,
					  memory_order_relaxed);
	return n;
}

static bool uring_hooks_init(void)
{
	real_uring_submit = (int (*)(struct io_uring *))
		dlsym(RTLD_NEXT, "io_uring_submit");
	real_uring_peek = (unsigned (*)(struct io_uring *,
					struct io_uring_cqe **, unsigned))
		dlsym(RTLD_NEXT, "io_uring_peek_batch_cqe");
	return real_uring_submit && real_uring_peek;
}

/* ---- environment -------------------------------------------------------- */

bool g_uring_ok;
bool g_sqpoll_ok;
char g_dir[PATH_MAX / 2];
char g_file[PATH_MAX];
static pid_t g_main_pid;

static uint64_t soak_seconds(void)
{
	const char *e = getenv("T_SOAK_SECONDS");
	long long v = e ? atoll(e) : DEFAULT_SECONDS;

	return v > 0 ? (uint64_t)v : DEFAULT_SECONDS;
}

static uint64_t soak_seed(void)
{
	const char *e = getenv("T_SOAK_SEED");
	uint64_t s;

	if (e && *e)
		return strtoull(e, NULL, 0);
	s = mix64(mq_clock_real_ns() ^ ((uint64_t)getpid() << 40));
	return s ? s : 1;
}

int soak_lower_choice(void)
{
	const char *e = getenv("T_SOAK_LOWER");

	if (!e || !*e)
		return -1;
	return strcmp(e, "ram") ? 1 : 0;
}

/* ---- the test ----------------------------------------------------------- */

START_TEST(test_soak)
{
	uint64_t seconds = soak_seconds(), master = soak_seed();
	uint64_t start = mq_clock_real_ns(), deadline = start + seconds * SEC_NS;
	struct soak_totals tot = { 0 };

	int lower = soak_lower_choice();

	printf("soak: seed %#" PRIx64 " (T_SOAK_SEED), %" PRIu64 " s, lower "
	       "%s%s\n", master, seconds, !g_uring_ok || !lower ? "ram only"
	       : lower > 0 ? "io_uring only" : "io_uring and ram",
	       g_uring_ok && lower && !g_sqpoll_ok ? " (no SQPOLL)" : "");
	fflush(stdout);
	for (unsigned i = 0; i == 0 || mq_clock_real_ns() < deadline; i++) {
		uint64_t now = mq_clock_real_ns();
		uint64_t left_ms = now < deadline ? (deadline - now) / 1000000 : 0;

		round_one(i, i ? mix64(master + i) : master,
			  MQ_MAX(left_ms, (uint64_t)500), &tot);
	}
	printf("soak: seed %#" PRIx64 ": %u rounds (%u io_uring) in %.1f s, %"
	       PRIu64 " I/Os, %" PRIu64 " injected EIO, %" PRIu64 " elevator "
	       "switches, %" PRIu64 " tunes, %" PRIu64 " freezes, %" PRIu64
	       " driver busy, ring: %" PRIu64 " sq-full %" PRIu64 " ebusy %"
	       PRIu64 " cq-overflow, %" PRIu64 " sectors verified by reads: "
	       "PASS\n", master, tot.rounds,
	       tot.uring_rounds, (double)(mq_clock_real_ns() - start) / 1e9,
	       tot.ios, tot.injected, tot.switches, tot.tunes, tot.freezes,
	       tot.busy, tot.ring[0], tot.ring[1], tot.ring[2], tot.verified);
	fflush(stdout);
	ck_assert_msg(tot.switches > 0, "seed %#" PRIx64 ": no elevator switch",
		      master);
}
END_TEST

/* ---- set-up ------------------------------------------------------------- */

static int rm_entry(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	remove(path);
	return 0;
}

/* In the main process only: forked test children run atexit too. */
static void cleanup(void)
{
	if (getpid() != g_main_pid || !g_dir[0])
		return;
	nftw(g_dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
	g_dir[0] = '\0';
}

/*
 * Interrupted (a long run stopped by hand): remove what exists, then die
 * of the signal.  Only async-signal-safe calls; the directory is empty
 * except for a moment around each round's file creation.
 */
static void on_signal(int sig)
{
	if (g_file[0])
		unlink(g_file);
	if (g_dir[0])
		rmdir(g_dir);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void catch_signals(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };

	for (size_t i = 0; i < MQ_ARRAY_SIZE(sigs); i++)
		signal(sigs[i], on_signal);
	/* Output into a closed pipe must not skip the clean-up. */
	signal(SIGPIPE, SIG_IGN);
}

/* A temp directory whose file system takes O_DIRECT; false otherwise. */
static bool make_dir(void)
{
	const char *base = getenv("TMPDIR");
	char probe[PATH_MAX];
	int fd;

	if (!base || !*base)
		base = "/var/tmp";
	snprintf(g_dir, sizeof(g_dir), "%s/mqfs-test-soak.XXXXXX", base);
	if (!mkdtemp(g_dir)) {
		fprintf(stderr, "test_soak: mkdtemp %s: %s: ram only\n", g_dir,
			strerror(errno));
		g_dir[0] = '\0';
		return false;
	}
	snprintf(probe, sizeof(probe), "%s/odirect", g_dir);
	fd = open(probe, O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0600);
	if (fd < 0)
		fprintf(stderr, "test_soak: %s does not take O_DIRECT (%s): "
			"ram only; set TMPDIR to a disk file system\n", base,
			strerror(errno));
	else
		close(fd);
	unlink(probe);
	return fd >= 0;
}

static bool sqpoll_works(void)
{
	struct io_uring ring;
	struct io_uring_params p = { .flags = IORING_SETUP_SQPOLL,
				     .sq_thread_idle = 10 };

	if (io_uring_queue_init_params(4, &ring, &p))
		return false;
	io_uring_queue_exit(&ring);
	return true;
}

static Suite *soak_suite(void)
{
	Suite *s = suite_create("soak");
	TCase *c = t_tcase(s, "soak", (double)soak_seconds() + 120);

	tcase_add_test(c, test_soak);
	return s;
}

int main(void)
{
	int failed;

	g_main_pid = getpid();
	if (!uring_hooks_init()) {
		fprintf(stderr, "test_soak: liburing symbols not found\n");
		return 99;
	}
	if (mq_uring_probe() == 0) {
		g_uring_ok = make_dir();
		g_sqpoll_ok = g_uring_ok && sqpoll_works();
		atexit(cleanup);
		catch_signals();
	} else {
		fprintf(stderr, "test_soak: io_uring unusable: ram only\n");
	}
	failed = t_run(soak_suite()) != EXIT_SUCCESS;
	cleanup();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
