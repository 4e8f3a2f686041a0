/* SPDX-License-Identifier: MIT */
/*
 * test_uring_rings.c - io_uring rings under pressure and of another
 * kind: 200 bios outstanding on queue depth 8 (tag waits), also with a
 * ring smaller than the queue depth; an SQPOLL ring, with and without
 * fixed files.
 *
 * Files live in a mkdtemp directory under $TMPDIR (default /var/tmp),
 * removed at exit; the program exits 77 only when mq_uring_probe() says
 * io_uring is unusable here (t_uring.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>

static const char *const g_prog = "test_uring_rings";

#include "t_uring.h"
#include "mqfs/dev/uring.h"

/* ---- many requests in flight on a shallow queue ----------------------- */

#define INF_BIOS	200
#define INF_BS		(4 * KiB)
#define INF_STRIDE	(8 * KiB)	/* gaps: nothing merges */

struct inf_thread {
	pthread_t thr;
	struct mq_queue *q;
	enum mq_op op;
	bool plug;
	unsigned first, nr;
	unsigned char *buf;
	struct ur_pool p;
	char err[160];
};

static void inf_submit(struct inf_thread *t)
{
	struct mq_plug pl;

	if (t->plug)
		mq_start_plug(&pl, 32);
	for (unsigned i = t->first; i < t->first + t->nr; i++)
		ur_submit(t->q, &t->p, t->op, (uint64_t)i * INF_STRIDE, INF_BS,
			  t->buf + (size_t)i * INF_BS, 0);
	if (t->plug)
		mq_finish_plug(&pl);
}

static void *inf_main(void *arg)
{
	struct inf_thread *t = arg;

	inf_submit(t);
	if (!ur_pool_wait(&t->p))
		snprintf(t->err, sizeof(t->err), "only %u of %u ended",
			 atomic_load(&t->p.ended), t->p.submitted);
	return NULL;
}

/*
 * Loop index: bit 0 elevator; (index >> 1): 0 one plugged submitter,
 * ring 8 = queue depth 8 (the 9th request must wait for a tag: the plug
 * holds the first 8); 1 four unplugged submitters, depth 8; 2 one plugged
 * submitter, queue depth 32 on a ring of 4 (more in flight than the
 * completion ring holds).
 */
START_TEST(test_many_inflight)
{
	const char *elv = elv_names[_i & 1];
	unsigned mode = (unsigned)_i >> 1;
	unsigned nthreads = mode == 1 ? 4 : 1;
	struct mq_uring_config uc = { .queue_depth = mode == 2 ? 4 : 8 };
	unsigned qd = mode == 2 ? 32 : 8;
	const uint64_t seed = 900 + (unsigned)_i;
	size_t bytes = (size_t)INF_BIOS * INF_BS;
	unsigned char *wbuf = ur_alloc(bytes), *rbuf = ur_alloc(bytes);
	struct inf_thread th[4];
	struct mq_queue_stats s;
	char path[PATH_MAX];
	struct mq_dev *dev;
	struct mq_queue *q;

	T_BEGIN();
	ur_file(path, sizeof(path), "inflight", (off_t)INF_BIOS * INF_STRIDE);
	dev = ur_open(path, &uc);
	q = ur_queue(dev, elv, 1, qd);
	for (unsigned i = 0; i < INF_BIOS; i++)
		pat_fill(wbuf + (size_t)i * INF_BS, INF_BS,
			 (uint64_t)i * INF_STRIDE, seed);
	memset(rbuf, 0x5a, bytes);

	for (int pass = 0; pass < 2; pass++) {
		enum mq_op op = pass ? MQ_OP_READ : MQ_OP_WRITE;

		for (unsigned t = 0; t < nthreads; t++) {
			th[t] = (struct inf_thread){
				.q = q, .op = op, .plug = mode != 1,
				.first = t * (INF_BIOS / nthreads),
				.nr = INF_BIOS / nthreads,
				.buf = pass ? rbuf : wbuf,
			};
			t_check(ur_pool_init(&th[t].p, th[t].nr), "pool");
			t_check(pthread_create(&th[t].thr, NULL, inf_main,
					       &th[t]) == 0, "pthread_create");
		}
		for (unsigned t = 0; t < nthreads; t++) {
			pthread_join(th[t].thr, NULL);
			t_check(!th[t].err[0], "%s pass, thread %u: %s",
				pass ? "read" : "write", t, th[t].err);
			ur_pool_check(&th[t].p, pass ? "reads" : "writes");
			ur_pool_free(&th[t].p);
		}
	}
	for (unsigned i = 0; i < INF_BIOS; i++) {
		t_check(!memcmp(rbuf + (size_t)i * INF_BS,
				wbuf + (size_t)i * INF_BS, INF_BS),
			"bio %u read back differs", i);
		file_check_pattern(path, (off_t)i * INF_STRIDE, INF_BS, seed,
				   "pread");
	}
	mq_queue_drain(q);
	s = t_stats(q, -1);
	t_check_u64(s.ios[MQ_DIR_WRITE], INF_BIOS, "write requests");
	t_check_u64(s.ios[MQ_DIR_READ], INF_BIOS, "read requests");
	t_check_u64(s.dispatched[MQ_DIR_WRITE] + s.dispatched[MQ_DIR_READ],
		    2 * INF_BIOS, "dispatched");
	t_check_u64(s.errors, 0, "errors");
	if (mode != 1)
		t_check(s.tag_waits > 0, "no tag waits with %u bios on depth %u",
			INF_BIOS, qd);
	t_teardown(q, dev);
	free(wbuf);
	free(rbuf);
	unlink(path);
}
END_TEST


/* Kernel submission thread, with and without fixed files. */
START_TEST(test_sqpoll)
{
	struct mq_uring_config uc = { .sqpoll = true, .no_fixed_files = _i };
	const uint64_t seed = 1100 + (unsigned)_i;
	unsigned char *w = ur_alloc(512 * KiB), *r = ur_alloc(512 * KiB);
	char path[PATH_MAX];
	struct mq_dev *dev;
	struct mq_queue *q;

	T_BEGIN();
	ur_file(path, sizeof(path), "sqpoll", 1 * MiB);
	dev = ur_open(path, &uc);
	q = ur_queue(dev, "none", 2, 0);
	pat_fill(w, 512 * KiB, 256 * KiB, seed);
	ur_rw_range(q, MQ_OP_WRITE, 256 * KiB, 512 * KiB, 16 * KiB, w, true, 0,
		    "sqpoll writes");
	ur_rw_range(q, MQ_OP_READ, 256 * KiB, 512 * KiB, 4 * KiB, r, false, 0,
		    "sqpoll reads");
	t_check(!memcmp(w, r, 512 * KiB), "sqpoll read back differs");
	file_check_pattern(path, 256 * KiB, 512 * KiB, seed, "sqpoll pread");
	t_teardown(q, dev);
	free(w);
	free(r);
	unlink(path);
}
END_TEST

/* ---- the program -------------------------------------------------------- */

static Suite *uring_rings_suite(void)
{
	Suite *s = suite_create("uring_rings");

	ur_tcase(s, "many_inflight", test_many_inflight, 6, 120);
	ur_tcase(s, "sqpoll", test_sqpoll, 2, 60);
	return s;
}

UR_MAIN(uring_rings_suite)
