// SPDX-License-Identifier: MIT
/*
 * ring_setup.c - FUSE over io_uring, set up and down (see ring.c for the
 * transport): whether the kernel offers it and on how many queues, the
 * rings' depth, each queue's ring, thread and entries prepared before
 * INIT, started after it (every queue registered, or the reason why
 * not), quiesced, stopped and freed; their figures.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <liburing.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "ring_i.h"
#include "mqfs/clock.h"

/* ---- what the kernel offers ---------------------------------------------- */

int mqfs_ring_probe(char *why, size_t size)
{
	char c = 0;
	int fd = open(RING_PARAM, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		snprintf(why, size, "this kernel has no FUSE over io_uring "
			 "(no %s)", RING_PARAM);
		return -EOPNOTSUPP;
	}
	if (read(fd, &c, 1) != 1)
		c = 0;
	close(fd);
	if (c == 'Y' || c == '1')
		return 1;
	snprintf(why, size, "FUSE over io_uring is off (as root: echo Y > "
		 "%s)", RING_PARAM);
	return 0;
}

/*
 * The kernel has a queue per possible CPU (num_possible_cpus) and every
 * one must have an entry before the ring is used: the count of the
 * possible list ("0-1", "0,2-3").
 */
unsigned mqfs_ring_nr_queues(void)
{
	char buf[256], *p = buf, *end;
	unsigned n = 0;
	FILE *f = fopen(RING_CPUS, "re");

	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	while (*p && *p != '\n') {
		unsigned long a = strtoul(p, &end, 10), b = a;

		if (end == p)
			return 0;
		if (*end == '-')
			b = strtoul(end + 1, &end, 10);
		if (b < a || b - a > 4096)
			return 0;
		n += (unsigned)(b - a + 1);
		p = *end == ',' ? end + 1 : end;
	}
	return n;
}

unsigned mqfs_ring_default_depth(unsigned queue_depth, unsigned nr_queues)
{
	unsigned d = nr_queues ? queue_depth / nr_queues : queue_depth;

	return MQ_MAX(8u, MQ_MIN(d, 32u));
}

unsigned mqfs_ring_entries(unsigned depth, unsigned spill, unsigned nr_queues)
{
	return depth + (nr_queues ? spill * (nr_queues - 1) : 0);
}

/* ---- life cycle -------------------------------------------------------------- */

/* MQFS_FAULT_RING_REGISTER=QID: that queue offers a payload buffer the
 * kernel refuses (a test of the failure path, tests/integration). */
static int ring_fault_qid(void)
{
	const char *s = getenv("MQFS_FAULT_RING_REGISTER");

	return s && *s ? atoi(s) : -1;
}

unsigned mqfs_ring_ent_qid(unsigned depth, unsigned spill, unsigned qid,
			   unsigned i)
{
	unsigned other;

	if (i < depth || !spill)
		return qid;
	other = (i - depth) / spill;	/* 0 .. nr_queues - 2 */
	return other < qid ? other : other + 1;
}

static int ring_queue_init(struct mqfs_rings *rs, struct mqfs_ring_queue *q,
			   unsigned qid)
{
	/*
	 * COOP_TASKRUN: the kernel copies a request into an entry in the
	 * ring thread's task work; without it every request interrupts the
	 * thread while it serves the last one (4k QD32 reads: 94k -> 118k
	 * IOPS with it).
	 */
	struct io_uring_params p = { .flags = IORING_SETUP_SQE128 |
					      IORING_SETUP_COOP_TASKRUN };
	bool fault = ring_fault_qid() == (int)qid;
	int ret;

	q->rs = rs;
	q->qid = qid;
	q->poll_index = -1;
	pthread_mutex_init(&q->sq_lock, NULL);
	q->lock_ok = true;
	q->ents = calloc(rs->nr_ents, sizeof(*q->ents));
	if (!q->ents)
		return -ENOMEM;
	/* An SQE per entry, the stop's NOP, the poll queue's eventfd read. */
	ret = io_uring_queue_init_params(rs->nr_ents + 2, &q->ring, &p);
	if (ret)
		return ret;
	q->ring_ok = true;
	ret = io_uring_register_files(&q->ring, &rs->fuse_fd, 1);
	if (ret)
		return ret;
	for (unsigned i = 0; i < rs->nr_ents; i++) {
		struct mqfs_ring_ent *e = &q->ents[i];

		e->q = q;
		e->qid = (uint16_t)mqfs_ring_ent_qid(rs->depth, rs->spill, qid,
						     i);
		e->r = mqfs_pool_try_get(&rs->d->eng.pool);
		if (!e->r)
			return -ENOMEM;
		e->r->ent = e;		/* until ring_queue_destroy */
		e->hdr = (void *)e->r->mem;
		e->iov[0] = (struct iovec){ e->r->mem, sizeof(*e->hdr) };
		e->iov[1] = (struct iovec){ e->r->payload,
					    fault ? 4096 : MQFS_SLOT_PAYLOAD };
	}
	return 0;
}

static void ring_queue_destroy(struct mqfs_rings *rs, struct mqfs_ring_queue *q)
{
	if (q->ring_ok)
		io_uring_queue_exit(&q->ring);
	for (unsigned i = 0; q->ents && i < rs->nr_ents; i++)
		if (q->ents[i].r) {
			q->ents[i].r->ent = NULL;
			mqfs_pool_put(&rs->d->eng.pool, q->ents[i].r);
		}
	free(q->ents);
	if (q->lock_ok)
		pthread_mutex_destroy(&q->sq_lock);
}

void mqfs_rings_init(struct mqfs_rings *rs)
{
	memset(rs, 0, sizeof(*rs));
	rs->fuse_fd = -1;
	pthread_mutex_init(&rs->lock, NULL);
	pthread_cond_init(&rs->cond, NULL);
}

static int ring_start_threads(struct mqfs_rings *rs)
{
	for (unsigned i = 0; i < rs->nr_queues; i++) {
		struct mqfs_ring_queue *q = &rs->queues[i];
		int err = -pthread_create(&q->thread, NULL, mqfs_ring_thread, q);

		if (err)
			return err;
		q->thread_ok = true;
	}
	return 0;
}

int mqfs_rings_prepare(struct mqfs_rings *rs, struct mqfs_daemon *d,
		       int session_fd, const struct mqfs_rings_shape *shape)
{
	int err = 0;

	rs->d = d;
	rs->depth = shape->depth;
	rs->spill = shape->spill;
	rs->doorbell = shape->doorbell;
	rs->nr_queues = mqfs_ring_nr_queues();
	if (!rs->nr_queues) {
		snprintf(rs->why, sizeof(rs->why), "cannot read %s", RING_CPUS);
		return -ENODEV;
	}
	rs->nr_ents = mqfs_ring_entries(rs->depth, rs->spill, rs->nr_queues);
	/* With spill entries the other CPUs take part of a deep queue: its
	 * thread stays where its callers' wake-ups cost least. */
	rs->pin = rs->nr_ents > rs->depth && shape->pin == MQFS_RING_PIN_AUTO
		? MQFS_RING_PIN_OWN : shape->pin;
	rs->fuse_fd = fcntl(session_fd, F_DUPFD_CLOEXEC, 0);
	if (rs->fuse_fd < 0)
		err = -errno;
	rs->queues = err ? NULL : calloc(rs->nr_queues, sizeof(*rs->queues));
	if (!err && !rs->queues)
		err = -ENOMEM;
	for (unsigned i = 0; !err && i < rs->nr_queues; i++)
		err = ring_queue_init(rs, &rs->queues[i], i);
	if (!err)
		err = ring_start_threads(rs);
	if (err) {
		snprintf(rs->why, sizeof(rs->why), "%u rings of %u entries: %s",
			 rs->nr_queues, rs->nr_ents, strerror(-err));
		mqfs_rings_stop(rs);
		return err;
	}
	rs->prepared = true;
	return 0;
}

int mqfs_rings_start(struct mqfs_rings *rs)
{
	struct timespec until = mqfs_deadline_ms(RING_START_MS);
	int err = 0;

	pthread_mutex_lock(&rs->lock);
	rs->go = true;
	pthread_cond_broadcast(&rs->cond);
	while (!err && rs->reported < rs->nr_queues)
		err = pthread_cond_timedwait(&rs->cond, &rs->lock, &until);
	if (err) {
		rs->error = -ETIMEDOUT;
		snprintf(rs->why, sizeof(rs->why), "%u of %u queues registered "
			 "in %u ms", rs->reported, rs->nr_queues, RING_START_MS);
	}
	err = rs->error;
	/*
	 * A queue without an entry: the kernel can never use the rings.  Only
	 * when every thread has counted its entries (a late one may still
	 * add some, and others' spill entries may have made the ring ready).
	 */
	for (unsigned i = 0; rs->reported == rs->nr_queues &&
			     i < rs->nr_queues; i++)
		rs->never_ready |= !atomic_load(&rs->queues[i].registered);
	pthread_mutex_unlock(&rs->lock);
	return err;
}

/* A NOP's CQE ends the ring thread's wait. */
static void ring_wake(struct mqfs_ring_queue *q)
{
	struct io_uring_sqe *sqe;

	if (!q->ring_ok)
		return;
	pthread_mutex_lock(&q->sq_lock);
	sqe = mqfs_ring_sqe(q);
	io_uring_prep_nop(sqe);
	io_uring_sqe_set_data64(sqe, RING_WAKE_UD);
	io_uring_submit(&q->ring);
	pthread_mutex_unlock(&q->sq_lock);
}

void mqfs_rings_quiesce(struct mqfs_rings *rs)
{
	if (!rs->queues)
		return;
	pthread_mutex_lock(&rs->lock);
	atomic_store(&rs->stopping, true);
	pthread_cond_broadcast(&rs->cond);
	pthread_mutex_unlock(&rs->lock);
	for (unsigned i = 0; i < rs->nr_queues; i++)
		ring_wake(&rs->queues[i]);
	for (unsigned i = 0; i < rs->nr_queues; i++) {
		struct mqfs_ring_queue *q = &rs->queues[i];

		if (q->thread_ok)
			pthread_join(q->thread, NULL);
		q->thread_ok = false;
	}
}

void mqfs_rings_stop(struct mqfs_rings *rs)
{
	if (!rs->queues)
		goto out;
	mqfs_rings_quiesce(rs);
	for (unsigned i = 0; i < rs->nr_queues; i++)
		ring_queue_destroy(rs, &rs->queues[i]);
	free(rs->queues);
	rs->queues = NULL;
out:
	if (rs->fuse_fd >= 0)
		close(rs->fuse_fd);
	rs->fuse_fd = -1;
	rs->prepared = false;
}

void mqfs_rings_destroy(struct mqfs_rings *rs)
{
	mqfs_rings_stop(rs);
	pthread_cond_destroy(&rs->cond);
	pthread_mutex_destroy(&rs->lock);
}

void mqfs_rings_get_stats(struct mqfs_rings *rs, struct mqfs_ring_stats *s)
{
	*s = (struct mqfs_ring_stats){ .queues = rs->nr_queues,
				       .depth = rs->depth };
	for (unsigned i = 0; rs->queues && i < rs->nr_queues; i++) {
		struct mqfs_ring_queue *q = &rs->queues[i];

		s->requests += atomic_load(&q->requests);
		s->enters += atomic_load(&q->enters);
		s->commits += atomic_load(&q->commits);
		s->batches += atomic_load(&q->batches);
		s->direct += atomic_load(&q->direct);
		s->spilled += atomic_load(&q->overflowed);
		s->dev_reaps += atomic_load(&q->dev_reaps);
		s->dev_reaped += atomic_load(&q->dev_reaped);
		s->dev_polled += q->poll_index >= 0;
		s->moves += atomic_load(&q->moves);
		s->away += atomic_load(&q->away);
		s->bell_requests += atomic_load(&q->bell_requests);
		s->bell_windows += atomic_load(&q->bell_windows);
		s->bell_eager_windows += atomic_load(&q->bell_eager_windows);
		s->bell_eager += atomic_load(&q->bell_eager);
	}
}
