/* SPDX-License-Identifier: MIT */
/*
 * test_poll_queue.c - Check unit tests for poll queues (sched/poll.c,
 * mq_queue_config.nr_poll_queues) on the io_uring driver: reaped queues
 * with poll queues beside them, as the FUSE ring threads use them.
 *
 * Tested: the queue's shape (poll queues after the others, counted in the
 * statistics) and its refusals (a device that offers none, more than the
 * driver offers, indexes past the end); MQ_REQ_POLLED from a thread bound
 * to no poll queue goes to the reaped queue with the flag cleared; a
 * bound thread's polled bios go to its poll queue and nowhere else, end
 * only when polled, make the queue's eventfd readable, and end in the
 * polling thread - unflagged bios of the same thread still go to the
 * reaped queue, and a polled and an unflagged bio side by side in one
 * plug stay two requests on two queues; another thread reaps them with
 * mq_queue_poll_polled, and mq_queue_inflight_wait on a count of it; a
 * drain from an unbound thread completes polled I/O nobody else polls; doorbell batching (mq_uring_batch_begin/end,
 * nested) holds a poll queue's SQEs until the batch ends, unless a poller
 * enters for them first (one that only tries too), never while another
 * thread is inside a poll of the ring, and never an unflagged bio's; a CQE that comes
 * while another thread holds the poll lock is reaped by that thread when
 * the ring's own poll found the lock taken.  Data written this way reads
 * back.
 * Exits 77 only when mq_uring_probe() says io_uring is unusable here.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <poll.h>
#include <pthread.h>

static const char *const g_prog = "test_poll_queue";

#include "t_uring.h"
#include "t_main.h"
#include "mqfs/dev/uring.h"
#include "mqfs/inflight.h"
#include "t_dev.h"

#define PQ_FILE_SIZE	(8 * MiB)
#define PQ_NR_POLL	2u

/* Where each bio ended: the thread that ran its end_io. */
static pthread_t pq_ender[256];

static void pq_end_io(struct mq_bio *bio)
{
	struct ur_pool *p = bio->private;

	pq_ender[bio - p->bios] = pthread_self();
	ur_end_io(bio);
}

static struct mq_queue *pq_queue(struct mq_dev *dev, const char *elv)
{
	struct mq_queue_config cfg = { .elevator = elv, .nr_hw_queues = 1,
				       .nr_poll_queues = PQ_NR_POLL };

	return t_queue_create(dev, &cfg);
}

static struct mq_dev *pq_open(char *path, size_t len)
{
	struct mq_uring_config uc = { 0 };

	ur_file(path, len, "pq", PQ_FILE_SIZE);
	return ur_open(path, &uc);
}

/* Requests completed by hardware queue @h. */
static uint64_t pq_ios(struct mq_queue *q, int h)
{
	struct mq_queue_stats s = t_stats(q, h);

	return s.ios[MQ_DIR_READ] + s.ios[MQ_DIR_WRITE];
}

static void pq_submit_range(struct mq_queue *q, struct ur_pool *p,
			    enum mq_op op, uint64_t off, unsigned n,
			    unsigned char *buf, unsigned flags)
{
	struct mq_plug plug;

	mq_start_plug(&plug, n);
	for (unsigned i = 0; i < n; i++)
		ur_submit(q, p, op, off + i * 4 * KiB, 4 * KiB,
			  buf + i * 4 * KiB, flags);
	mq_finish_plug(&plug);
}

/* Poll queue @index until every bio of @p ended (bounded). */
static void pq_poll_until(struct mq_queue *q, unsigned index,
			  struct ur_pool *p)
{
	uint64_t end = mq_clock_real_ns() + T_WAIT_NS;

	while (atomic_load(&p->ended) < p->submitted) {
		int n = mq_queue_poll_queue(q, index, 1);

		t_check(n >= 0, "poll queue %u: %s", index, strerror(-n));
		t_check(mq_clock_real_ns() < end, "poll queue %u: %u of %u "
			"ended", index, atomic_load(&p->ended), p->submitted);
	}
}

/* ---- tests -------------------------------------------------------------- */

START_TEST(test_pq_shape)
{
	char path[PATH_MAX];
	struct mq_dev *dev = pq_open(path, sizeof(path));
	struct mq_queue_config cfg = { .nr_hw_queues = 1,
				       .nr_poll_queues = 33 };
	struct mq_queue *q;
	struct mq_queue_stats s;

	T_BEGIN();
	t_check(mq_queue_create(dev, &cfg, &q) == -EOPNOTSUPP,
		"33 poll queues accepted");
	q = pq_queue(dev, "mq-deadline");
	s = t_stats(q, -1);
	t_check_u64(s.nr_hw_queues, 1 + PQ_NR_POLL, "hardware queues");
	t_check_u64(s.nr_poll_queues, PQ_NR_POLL, "poll queues");
	t_check_u64(mq_queue_nr_poll_queues(q), PQ_NR_POLL, "nr_poll_queues");
	t_check(!q->hctxs[0]->polled && q->hctxs[1]->polled &&
		q->hctxs[2]->polled, "poll queues are not the last ones");
	t_check(mq_queue_poll_queue(q, PQ_NR_POLL, 0) == -EOPNOTSUPP,
		"poll of a queue past the end");
	t_check(mq_queue_poll_fd(q, PQ_NR_POLL) == -EOPNOTSUPP,
		"poll fd of a queue past the end");
	t_check(mq_queue_poll_queue(q, 0, 0) == 0, "idle poll queue");
	t_teardown(q, dev);
	unlink(path);

	dev = t_dev_ram(1 * MiB, 0);
	cfg.nr_poll_queues = 1;
	t_check(mq_queue_create(dev, &cfg, &q) == -EOPNOTSUPP,
		"a ram device took a poll queue");
	mq_dev_close(dev);
}
END_TEST

/* No binding: the flag is dropped and the reaper completes the bios. */
START_TEST(test_pq_unbound)
{
	char path[PATH_MAX];
	struct mq_dev *dev = pq_open(path, sizeof(path));
	struct mq_queue *q = pq_queue(dev, elv_names[_i]);
	unsigned char *w = ur_alloc(256 * KiB);
	struct ur_pool p;

	T_BEGIN();
	t_check(ur_pool_init(&p, 64), "pool");
	pat_fill(w, 256 * KiB, 0, 41);
	pq_submit_range(q, &p, MQ_OP_WRITE, 0, 64, w, MQ_REQ_POLLED);
	ur_pool_check(&p, "unbound polled writes");
	for (unsigned i = 0; i < 64; i++)
		t_check(!(p.bios[i].flags & MQ_REQ_POLLED), "bio %u kept "
			"MQ_REQ_POLLED", i);
	t_check(pq_ios(q, 0) > 0, "nothing on the reaped queue");
	t_check_u64(pq_ios(q, 1) + pq_ios(q, 2), 0, "poll queues used");
	ur_pool_free(&p);
	t_teardown(q, dev);
	file_check_pattern(path, 0, 256 * KiB, 41, "unbound writes");
	unlink(path);
	free(w);
}
END_TEST

/*
 * A bound thread: its polled bios wait on its poll queue until polled,
 * the eventfd says when, and end_io runs in the poller; its other bios
 * keep going to the reaped queue, and the two kinds never merge.
 */
START_TEST(test_pq_bound)
{
	char path[PATH_MAX];
	struct mq_dev *dev = pq_open(path, sizeof(path));
	struct mq_queue *q = pq_queue(dev, elv_names[_i]);
	unsigned char *w = ur_alloc(256 * KiB), *r = ur_alloc(256 * KiB);
	struct pollfd pfd = { .events = POLLIN };
	struct ur_pool p, u;
	uint64_t v;

	T_BEGIN();
	t_check(mq_set_task_poll_queue(1) == -1, "bound before");
	pfd.fd = mq_queue_poll_fd(q, 1);
	t_check(pfd.fd >= 0, "poll fd: %s", strerror(-pfd.fd));
	t_check(mq_queue_poll_fd(q, 1) == pfd.fd, "a second poll fd");
	t_check(ur_pool_init(&p, 64) && ur_pool_init(&u, 2), "pools");
	p.end_io = pq_end_io;
	pat_fill(w, 256 * KiB, 0, 42);
	pq_submit_range(q, &p, MQ_OP_WRITE, 0, 64, w, MQ_REQ_POLLED);
	t_check(poll(&pfd, 1, 5000) == 1, "eventfd not readable");
	usleep(20 * 1000);
	t_check_u64(atomic_load(&p.ended), 0, "polled bios ended unpolled");
	pq_poll_until(q, 1, &p);
	ur_pool_check(&p, "bound polled writes");
	for (unsigned i = 0; i < 64; i++)
		t_check(pthread_equal(pq_ender[i], pthread_self()),
			"bio %u ended in another thread", i);
	t_check_u64(pq_ios(q, 0) + pq_ios(q, 1), 0, "not only poll queue 1");
	t_check(pq_ios(q, 2) > 0, "nothing on poll queue 1");
	t_check(read(pfd.fd, &v, sizeof(v)) == sizeof(v) && v > 0,
		"eventfd counted nothing");

	/* The bound thread's ordinary I/O is reaped as before. */
	ur_submit(q, &u, MQ_OP_READ, 0, 256 * KiB, r, 0);
	ur_pool_check(&u, "bound thread, unflagged read");
	t_check(!memcmp(w, r, 256 * KiB), "read back differs");
	t_check_u64(pq_ios(q, 0), 1, "reaped queue's requests");

	/* Adjacent, one plug, one of each: two requests, one per queue. */
	ur_pool_free(&u);
	t_check(ur_pool_init(&u, 2), "pool");
	{
		struct mq_plug plug;
		uint64_t before = pq_ios(q, 2);

		mq_start_plug(&plug, 2);
		ur_submit(q, &u, MQ_OP_READ, 0, 4 * KiB, r, MQ_REQ_POLLED);
		ur_submit(q, &u, MQ_OP_READ, 4 * KiB, 4 * KiB, r + 4 * KiB, 0);
		mq_finish_plug(&plug);
		t_check(t_wait_until(atomic_load(&u.ended) >= 1),
			"the unflagged read never ended");
		pq_poll_until(q, 1, &u);
		ur_pool_check(&u, "mixed plug");
		t_check_u64(pq_ios(q, 0), 2, "reaped queue after the plug");
		t_check_u64(pq_ios(q, 2) - before, 1, "poll queue after the plug");
	}
	t_check(mq_set_task_poll_queue(-1) == 1, "binding");
	ur_pool_free(&p);
	ur_pool_free(&u);
	t_teardown(q, dev);
	file_check_pattern(path, 0, 256 * KiB, 42, "bound writes");
	unlink(path);
	free(w);
	free(r);
}
END_TEST

struct pq_submitter {
	struct mq_queue *q;
	struct ur_pool *p;
	unsigned char *buf;
	atomic_bool submitted, release;
};

/* Bound to poll queue 0, submits and then never polls. */
static void *pq_submitter_main(void *arg)
{
	struct pq_submitter *s = arg;

	mq_set_task_poll_queue(0);
	pq_submit_range(s->q, s->p, MQ_OP_READ, 0, 32, s->buf, MQ_REQ_POLLED);
	atomic_store(&s->submitted, true);
	while (!atomic_load(&s->release))
		usleep(1000);
	return NULL;
}

/* Counts pq_others' third round down. */
static struct mq_inflight pq_count;

static void pq_counted_end_io(struct mq_bio *bio)
{
	pq_end_io(bio);
	mq_inflight_dec(&pq_count);
}

/*
 * Another thread's polled I/O: mq_queue_poll_polled, then a drain, then
 * mq_queue_inflight_wait on a count of it (a size change's wait).
 */
START_TEST(test_pq_others)
{
	char path[PATH_MAX];
	struct mq_dev *dev = pq_open(path, sizeof(path));
	struct mq_queue *q = pq_queue(dev, elv_names[_i]);
	struct pq_submitter s = { .q = q, .buf = ur_alloc(128 * KiB) };
	uint64_t end = mq_clock_real_ns() + T_WAIT_NS;
	struct ur_pool p;
	pthread_t th;

	T_BEGIN();
	t_check(ur_pool_init(&p, 32), "pool");
	p.end_io = pq_end_io;
	s.p = &p;
	t_check(!pthread_create(&th, NULL, pq_submitter_main, &s), "thread");
	t_check(t_wait_until(atomic_load(&s.submitted)), "never submitted");
	while (atomic_load(&p.ended) < p.submitted) {
		mq_queue_poll_polled(q);
		t_check(mq_clock_real_ns() < end, "poll_polled: %u of %u",
			atomic_load(&p.ended), p.submitted);
	}
	ur_pool_check(&p, "reaped by another thread");
	for (unsigned i = 0; i < 32; i++)
		t_check(pthread_equal(pq_ender[i], pthread_self()),
			"bio %u ended in the submitter", i);

	/* Again, and this time a drain of the queue reaps them. */
	ur_pool_free(&p);
	t_check(ur_pool_init(&p, 32), "pool");
	atomic_store(&s.submitted, false);
	atomic_store(&s.release, true);
	pthread_join(th, NULL);
	atomic_store(&s.release, false);
	t_check(!pthread_create(&th, NULL, pq_submitter_main, &s), "thread");
	t_check(t_wait_until(atomic_load(&s.submitted)), "never submitted");
	mq_queue_drain(q);
	t_check_u64(atomic_load(&p.ended), 32, "bios ended by the drain");
	ur_pool_check(&p, "drained");
	atomic_store(&s.release, true);
	pthread_join(th, NULL);
	ur_pool_free(&p);

	/* Counted first, then waited for while the other thread submits. */
	t_check(ur_pool_init(&p, 32), "pool");
	p.end_io = pq_counted_end_io;
	mq_inflight_init(&pq_count);
	for (unsigned i = 0; i < 32; i++)
		mq_inflight_inc(&pq_count);
	atomic_store(&s.release, false);
	t_check(!pthread_create(&th, NULL, pq_submitter_main, &s), "thread");
	mq_queue_inflight_wait(q, &pq_count);
	t_check_u64(mq_inflight_count(&pq_count), 0, "count after the wait");
	ur_pool_check(&p, "waited for by count");
	atomic_store(&s.release, true);
	pthread_join(th, NULL);
	mq_inflight_destroy(&pq_count);
	ur_pool_free(&p);
	t_teardown(q, dev);
	unlink(path);
	free(s.buf);
}
END_TEST

/* The first bio's end_io holds its poller (and so the ring's poll lock). */
static atomic_bool pq_in_slow;

static void pq_slow_end_io(struct mq_bio *bio)
{
	atomic_store(&pq_in_slow, true);
	usleep(100 * 1000);
	ur_end_io(bio);
}

static void *pq_block_poll_main(void *arg)
{
	mq_queue_poll_queue(arg, 0, 1);
	return NULL;
}

/*
 * Two reads on poll queue 0 of a thread bound to it: @first, whose end_io
 * holds the poller that reaps it (thread @th, with the ring's poll lock),
 * and @second, submitted by the test meanwhile.
 */
struct pq_held {
	char path[PATH_MAX];
	struct mq_dev *dev;
	struct mq_queue *q;
	unsigned char *buf;
	struct pollfd pfd;
	struct ur_pool first, second;
	pthread_t th;
};

/* Until @first's end_io runs in @h->th; its CQE's eventfd signal taken. */
static void pq_held_begin(struct pq_held *h, void (*end_io)(struct mq_bio *))
{
	uint64_t v;

	h->dev = pq_open(h->path, sizeof(h->path));
	h->q = pq_queue(h->dev, "none");
	h->buf = ur_alloc(8 * KiB);
	mq_set_task_poll_queue(0);
	h->pfd = (struct pollfd){ .fd = mq_queue_poll_fd(h->q, 0),
				  .events = POLLIN };
	t_check(h->pfd.fd >= 0, "poll fd: %s", strerror(-h->pfd.fd));
	t_check(ur_pool_init(&h->first, 1) && ur_pool_init(&h->second, 1),
		"pools");
	h->first.end_io = end_io;
	atomic_store(&pq_in_slow, false);
	ur_submit(h->q, &h->first, MQ_OP_READ, 0, 4 * KiB, h->buf,
		  MQ_REQ_POLLED);
	t_check(!pthread_create(&h->th, NULL, pq_block_poll_main, h->q),
		"thread");
	t_check(t_wait_until(atomic_load(&pq_in_slow)), "never reaped");
	(void)!read(h->pfd.fd, &v, sizeof(v));
}

static void pq_held_submit_second(struct pq_held *h)
{
	ur_submit(h->q, &h->second, MQ_OP_READ, 4 * KiB, 4 * KiB,
		  h->buf + 4 * KiB, MQ_REQ_POLLED);
}

/* Both reads ended with their data; everything freed. */
static void pq_held_end(struct pq_held *h)
{
	ur_pool_check(&h->first, "first read");
	ur_pool_check(&h->second, "second read");
	mq_set_task_poll_queue(-1);
	ur_pool_free(&h->first);
	ur_pool_free(&h->second);
	t_teardown(h->q, h->dev);
	unlink(h->path);
	free(h->buf);
}

/*
 * A CQE that comes while another thread holds the poll lock, past its
 * last look: the ring's own poll (min_complete 0) finds the lock taken
 * and returns, and the holder must reap once more before it leaves, or
 * nothing would complete the bio (its thread sleeps on the eventfd,
 * which already fired).
 */
START_TEST(test_pq_missed)
{
	struct pq_held h;

	T_BEGIN();
	pq_held_begin(&h, pq_slow_end_io);
	pq_held_submit_second(&h);
	t_check(poll(&h.pfd, 1, 5000) == 1, "the second CQE never came");
	t_check(mq_queue_poll_queue(h.q, 0, 0) == 0, "the lock was free");
	pthread_join(h.th, NULL);
	t_check(t_wait_until(atomic_load(&h.second.ended) == 1),
		"the holder left a CQE it was told about");
	pq_held_end(&h);
}
END_TEST

struct pq_poller {
	struct mq_queue *q;
	struct ur_pool *p;
	bool timed_out;
};

/* An unbound thread reaping every poll queue until @p has ended. */
static void *pq_poller_main(void *arg)
{
	struct pq_poller *pp = arg;
	uint64_t end = mq_clock_real_ns() + T_WAIT_NS;

	while (atomic_load(&pp->p->ended) < pp->p->submitted)
		if (!mq_queue_poll_polled(pp->q) && mq_clock_real_ns() > end) {
			pp->timed_out = true;
			break;
		}
	return NULL;
}

/*
 * Doorbell batching: inside mq_uring_batch_begin/end a poll queue's SQEs
 * wait for the end (no CQE, the eventfd stays quiet), unless a poller
 * comes first (it enters for them); other queues ring at once.
 */
START_TEST(test_pq_batch)
{
	char path[PATH_MAX];
	struct mq_dev *dev = pq_open(path, sizeof(path));
	struct mq_queue *q = pq_queue(dev, elv_names[_i]);
	unsigned char *buf = ur_alloc(128 * KiB);
	struct pollfd pfd = { .events = POLLIN };
	struct pq_poller pp = { .q = q };
	struct ur_pool p, u;
	pthread_t th;

	T_BEGIN();
	mq_set_task_poll_queue(0);
	pfd.fd = mq_queue_poll_fd(q, 0);
	t_check(pfd.fd >= 0, "poll fd: %s", strerror(-pfd.fd));
	t_check(ur_pool_init(&p, 16) && ur_pool_init(&u, 1), "pools");
	mq_uring_batch_begin();
	pq_submit_range(q, &p, MQ_OP_READ, 0, 16, buf, MQ_REQ_POLLED);
	ur_submit(q, &u, MQ_OP_READ, 1 * MiB, 4 * KiB, buf + 64 * KiB, 0);
	ur_pool_check(&u, "an unflagged read inside a batch");
	usleep(20 * 1000);
	t_check(poll(&pfd, 1, 0) == 0, "a batched doorbell rang early");
	mq_uring_batch_end();
	t_check(poll(&pfd, 1, 5000) == 1, "the batch's end rang nothing");
	pq_poll_until(q, 0, &p);
	ur_pool_check(&p, "batched reads");

	/* A poller that is not in the batch enters for it. */
	ur_pool_free(&p);
	t_check(ur_pool_init(&p, 16), "pool");
	pp.p = &p;
	mq_uring_batch_begin();
	mq_uring_batch_begin();		/* nested: only the outer end rings */
	pq_submit_range(q, &p, MQ_OP_READ, 0, 16, buf, MQ_REQ_POLLED);
	mq_uring_batch_end();
	t_check(!pthread_create(&th, NULL, pq_poller_main, &pp), "thread");
	pthread_join(th, NULL);
	t_check(!pp.timed_out, "the poller waited on a doorbell never rung: "
		"%u of %u", atomic_load(&p.ended), p.submitted);
	ur_pool_check(&p, "batched reads, another poller");
	mq_uring_batch_end();
	mq_set_task_poll_queue(-1);
	ur_pool_free(&p);
	ur_pool_free(&u);
	t_teardown(q, dev);
	unlink(path);
	free(buf);
}
END_TEST

/* The first bio's end_io holds its poller until the test lets it go. */
static atomic_bool pq_hold;

static void pq_held_end_io(struct mq_bio *bio)
{
	atomic_store(&pq_in_slow, true);
	(void)t_wait_until(!atomic_load(&pq_hold));
	ur_end_io(bio);
}

/*
 * A batch that publishes while another thread polls the ring: that
 * poller may have counted the SQEs owed before they were published,
 * looked, found nothing and gone to sleep in the kernel for them - and
 * the batch's thread may block before its end (on a lock the poller
 * holds: the hang of a size change waiting for reads).  So with a poller
 * there the batch rings at once: the CQE comes while the poller is still
 * held in the first bio's end_io, before the batch ends.
 */
START_TEST(test_pq_batch_poller)
{
	struct pq_held h;

	T_BEGIN();
	atomic_store(&pq_hold, true);
	pq_held_begin(&h, pq_held_end_io);
	mq_uring_batch_begin();
	pq_held_submit_second(&h);
	t_check(poll(&h.pfd, 1, 5000) == 1,
		"a batch left its doorbell to a poller already looking");
	atomic_store(&pq_hold, false);
	pthread_join(h.th, NULL);
	mq_uring_batch_end();
	pq_poll_until(h.q, 0, &h.second);
	pq_held_end(&h);
}
END_TEST

/*
 * A poll that only tries (min_complete 0) enters what a batch published
 * too: a waiter inside another poll only tries, and the batch's thread
 * may be blocked on that waiter.
 */
START_TEST(test_pq_batch_try)
{
	char path[PATH_MAX];
	struct mq_dev *dev = pq_open(path, sizeof(path));
	struct mq_queue *q = pq_queue(dev, "none");
	unsigned char *buf = ur_alloc(4 * KiB);
	struct pollfd pfd = { .events = POLLIN };
	struct ur_pool p;

	T_BEGIN();
	mq_set_task_poll_queue(0);
	pfd.fd = mq_queue_poll_fd(q, 0);
	t_check(pfd.fd >= 0, "poll fd: %s", strerror(-pfd.fd));
	t_check(ur_pool_init(&p, 1), "pool");
	mq_uring_batch_begin();
	ur_submit(q, &p, MQ_OP_READ, 0, 4 * KiB, buf, MQ_REQ_POLLED);
	t_check(poll(&pfd, 1, 0) == 0, "a batched doorbell rang early");
	t_check(mq_queue_poll_queue(q, 0, 0) >= 0, "the try");
	t_check(poll(&pfd, 1, 5000) == 1, "a try left a published SQE");
	mq_uring_batch_end();
	pq_poll_until(q, 0, &p);
	ur_pool_check(&p, "read entered by a try");
	mq_set_task_poll_queue(-1);
	ur_pool_free(&p);
	t_teardown(q, dev);
	unlink(path);
	free(buf);
}
END_TEST

/* ---- the program -------------------------------------------------------- */

static Suite *pq_suite(void)
{
	Suite *s = suite_create("poll_queue");

	ur_tcase(s, "shape", test_pq_shape, 1, 60);
	ur_tcase(s, "unbound", test_pq_unbound, 2, 60);
	ur_tcase(s, "bound", test_pq_bound, 2, 60);
	ur_tcase(s, "others", test_pq_others, 2, 60);
	ur_tcase(s, "batch", test_pq_batch, 2, 60);
	ur_tcase(s, "missed", test_pq_missed, 1, 60);
	ur_tcase(s, "batch_poller", test_pq_batch_poller, 1, 60);
	ur_tcase(s, "batch_try", test_pq_batch_try, 1, 60);
	return s;
}

UR_MAIN(pq_suite)
