/* SPDX-License-Identifier: MIT */
/*
 * uring.c - the io_uring driver's rings: one per hardware queue, for
 * direct I/O to a regular file or a block device, or NVMe commands.
 *
 * Submission side: queue_rq() turns a request into one SQE (read/write,
 * vectored when the request carries several bios; fsync for flush;
 * fallocate or a block ioctl for discard and write-zeroes) and rings the
 * doorbell - one io_uring_submit() - only at the end of a batch (@last or
 * commit_rqs), so a plug flush or dispatch run costs one system call.
 * The core serialises queue_rq per hardware queue, which is what a ring's
 * single submitter needs.
 *
 * Completion side: a reaper thread per ring waits for CQEs, takes them in
 * batches and completes the requests as one batch.  Short transfers are
 * finished synchronously (they happen only at end of file or on signals);
 * a short read at end of file is zero-filled, as a block device would.
 *
 * The rings do not know what they carry: a command set (uring_i.h) makes
 * the SQEs of a request and reads its CQEs - uring_rw.c's for files and
 * block devices, nvme.c's NVMe commands for /dev/ngXnY - and uring_open.c
 * opens a path with the one that serves it.
 *
 * Caller-reaped rings (caller_reap) have no reaper: the device is polled
 * (mq_dev.polled) and the threads that wait reap through ->poll, one at a
 * time per ring under poll_lock, blocking in io_uring_enter(GETEVENTS) as
 * fio's single thread does.  @inflight counts the CQEs still to come, so a
 * poller never waits on a ring that owes it nothing.  The poll queues a
 * queue asks for (mq_dev.poll_base) are such rings beside reaped ones; an
 * eventfd registered on one (->poll_fd) tells a thread that waits for
 * other things too - FUSE requests on its own ring - when to poll it.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>
#include "mqfs/thread_stats.h"
#include "geometry.h"
#include "uring_i.h"
#include "mqfs/dev/uring.h"

#define URING_REAP_BATCH	64
/* The kernel's IORING_MAX_REG_BUFFERS. */
#define URING_MAX_FIXED_BUFS	16384u

/* Its address names the calling thread (poll_owner). */
static _Thread_local char uring_self;
/* poll_locks this thread holds (rings whose completions it is running). */
static _Thread_local unsigned uring_polls_held;

/* user_data of the NOP that stops a reaper (never a request's address). */
static const char uring_stop_mark;
#define URING_STOP	((void *)&uring_stop_mark)

static struct uring_dev *to_uring(struct mq_dev *dev)
{
	return mq_container_of(dev, struct uring_dev, dev);
}

int mq_uring_sqe_fd(const struct uring_dev *ud)
{
	return ud->fixed_file ? 0 : ud->fd;
}

/* The registered buffer holding [buf, buf + len), by binary search. */
int mq_uring_fixed_index(const struct uring_dev *ud, const void *buf,
		      uint32_t len)
{
	uintptr_t a = (uintptr_t)buf;
	unsigned lo = 0, hi = ud->nr_bufs;

	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		uintptr_t base = (uintptr_t)ud->bufs[mid].iov_base;

		if (a < base) {
			hi = mid;
		} else if (a >= base + ud->bufs[mid].iov_len) {
			lo = mid + 1;
		} else {
			return a + len <= base + ud->bufs[mid].iov_len ?
			       (int)mid : -1;
		}
	}
	return -1;
}

static unsigned uring_reap(struct uring_queue *uq, bool *stop,
			   unsigned *completed);
static int uring_poll_try(struct uring_queue *uq);

/*
 * The kernel refused new work for a moment (-EBUSY/-EAGAIN: a full
 * completion queue).  With a reaper, it is draining: retry - unless this
 * is the reaper itself (a completion restarted the queue), which drains
 * here.  Caller-reaped, the submitter drains: inside a poll of its own
 * (an end_io submitted) directly, else with a try (uring_poll_try: a
 * thread that holds the poll lock is told to reap once more).
 */
static void uring_submit_busy(struct uring_queue *uq)
{
	bool stop = false;
	unsigned nr;

	if (uq->reaper_running) {
		if (pthread_equal(pthread_self(), uq->reaper))
			uring_reap(uq, &stop, &nr);
		else
			sched_yield();
		return;
	}
	if (atomic_load(&uq->poll_owner) == &uring_self)
		uring_reap(uq, &stop, &nr);
	else if (!uring_poll_try(uq))
		sched_yield();
}

/*
 * io_uring_enter() failed in a way no retry mends (EBADF, EBADFD,
 * EOWNERDEAD...: the ring, not the device).  Its SQEs are published but
 * unread, and the next enter that works would run them after their
 * requests were failed and reused: take them back - rewind the tail to
 * the kernel's head (without SQPOLL the kernel reads SQEs only inside an
 * enter, and only the queue's run submits) - and fail their requests
 * with -EIO through the completion path, so the filesystem's errors=
 * policy decides.  A live SQPOLL thread may be reading them: it keeps
 * them.
 */
static void uring_submit_failed(struct uring_queue *uq, int err)
{
	struct io_uring_sq *sq = &uq->ring.sq;
	unsigned head = io_uring_smp_load_acquire(sq->khead);
	unsigned n = sq->sqe_tail - head, nr = 0;
	/* An SQE128 ring's entries are two struct io_uring_sqe long. */
	unsigned shift = !!(uq->ring.flags & IORING_SETUP_SQE128);
	struct mq_rq_list failed = { 0 };
	struct mq_request *rq;

	uq->unsubmitted = 0;
	uq->broken = true;
	if ((uq->ring.flags & IORING_SETUP_SQPOLL) && err != -EOWNERDEAD) {
		fprintf(stderr, "mqfs: uring %s q%u: submit: %s: left to the "
			"SQ thread\n", uq->ud->dev.name, uq->index,
			strerror(-err));
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		uint64_t data = sq->sqes[((head + i) & sq->ring_mask) << shift]
					.user_data;

		rq = (struct mq_request *)(uintptr_t)data;
		/*
		 * Not a NOP standing in, nor the reaper's stop; a request of
		 * several SQEs is failed at its last (the command set counts).
		 */
		if (rq && (void *)rq != URING_STOP &&
		    uq->ud->cs->cqe(uq->ud, rq, -EIO)) {
			/* Ours since queue_rq: rq_next is free to link it. */
			mq_rq_list_add_tail(&failed, rq);
			nr++;
		}
	}
	sq->sqe_head = sq->sqe_tail = head;
	io_uring_smp_store_release(sq->ktail, head);
	atomic_fetch_sub(&uq->inflight, n);
	fprintf(stderr, "mqfs: uring %s q%u: submit: %s: %u requests failed "
		"with EIO\n", uq->ud->dev.name, uq->index, strerror(-err), nr);
	while ((rq = mq_rq_list_pop(&failed)))
		mq_complete_request(rq, rq->status);
}

/*
 * The doorbell.  SQEs are counted in @inflight before they become visible
 * to the kernel, so a poller never misses one (it may briefly wait for
 * one still being submitted, which this loop finishes unless the ring
 * breaks).
 */
/* ---- doorbell batching (mq_uring_batch_begin) ------------------------- */

#define URING_BATCH_RINGS	8

static _Thread_local unsigned uring_batch_depth;
static _Thread_local unsigned uring_batch_nr;
static _Thread_local struct uring_queue *uring_batch_rings[URING_BATCH_RINGS];

/* SQEs the kernel can see and has not consumed: any thread may read it. */
static unsigned uring_published(struct uring_queue *uq)
{
	return io_uring_smp_load_acquire(uq->ring.sq.ktail) -
	       io_uring_smp_load_acquire(uq->ring.sq.khead);
}

/*
 * Enter for the SQEs published on @uq, from any thread: the kernel takes
 * what is there under its own lock, and nothing of liburing's user-side
 * state is touched (the queue run owns it).  0, or -errno.
 */
static int uring_enter_published(struct uring_queue *uq)
{
	unsigned n = uring_published(uq);

	if (n && syscall(__NR_io_uring_enter, uq->ring.ring_fd, n, 0, 0,
			 NULL, 0) < 0)
		return -errno;
	return 0;
}

/* The same until they are in; a full completion queue is drained. */
static void uring_kick(struct uring_queue *uq)
{
	for (;;) {
		int ret = uring_enter_published(uq);

		if (ret != -EBUSY && ret != -EAGAIN && ret != -EINTR)
			return;		/* a broken ring fails at its next run */
		uring_submit_busy(uq);
	}
}

/*
 * Inside a batch, a poll queue's submission only publishes its SQEs
 * (liburing's flush without the enter) and the batch's end enters once
 * per ring - unless another thread is polling the ring, then at once.
 * Only poll queues: their waiters all poll, and a poll enters what is
 * published (uring_poll_locked), so nobody waits for a doorbell that is
 * still to ring.
 */
static bool uring_defer(struct uring_queue *uq)
{
	struct io_uring_sq *sq = &uq->ring.sq;
	const void *owner;
	unsigned i;

	if (!uring_batch_depth || !uq->polled || uq->ud->cfg.sqpoll)
		return false;
	for (i = 0; i < uring_batch_nr && uring_batch_rings[i] != uq; i++)
		;
	if (i == uring_batch_nr) {
		if (i == URING_BATCH_RINGS)
			return false;
		uring_batch_rings[uring_batch_nr++] = uq;
	}
	if (sq->sqe_head != sq->sqe_tail) {
		sq->sqe_head = sq->sqe_tail;
		io_uring_smp_store_release(sq->ktail, sq->sqe_tail);
	}
	/*
	 * uring_submit counted these SQEs before the store above, so a
	 * poller may have seen them owed, found nothing published and gone
	 * to sleep in the kernel for their CQEs - and this thread may block
	 * before its batch ends (on a lock that poller holds).  With a
	 * poller there, ring now.  It names itself before it looks
	 * (uring_poll_locked): of its look and this one, one sees the other.
	 */
	atomic_thread_fence(memory_order_seq_cst);
	owner = atomic_load(&uq->poll_owner);
	return !owner || owner == &uring_self;
}

void mq_uring_batch_begin(void)
{
	uring_batch_depth++;
}

void mq_uring_batch_end(void)
{
	if (!uring_batch_depth || --uring_batch_depth)
		return;
	for (unsigned i = 0; i < uring_batch_nr; i++)
		uring_kick(uring_batch_rings[i]);
	uring_batch_nr = 0;
}

static void uring_count_prepared(struct uring_queue *uq)
{
	if (uq->prepared) {
		atomic_fetch_add(&uq->inflight, uq->prepared);
		uq->prepared = 0;
	}
}

static void uring_submit_now(struct uring_queue *uq)
{
	uring_count_prepared(uq);
	while (uq->unsubmitted) {
		int ret = io_uring_submit(&uq->ring);

		if (ret >= 0) {
			uq->unsubmitted -= MQ_MIN((unsigned)ret, uq->unsubmitted);
			if (ret == 0)
				uq->unsubmitted = 0;
			continue;
		}
		if (ret != -EAGAIN && ret != -EBUSY && ret != -EINTR) {
			uring_submit_failed(uq, ret);
			return;
		}
		uring_submit_busy(uq);
	}
}

/* The doorbell: now, or at the end of this thread's batch. */
static void uring_submit(struct uring_queue *uq)
{
	uring_count_prepared(uq);
	if (uq->unsubmitted && uring_defer(uq))
		return;
	uring_submit_now(uq);
}

bool mq_uring_reserve(struct uring_queue *uq, unsigned n)
{
	if (io_uring_sq_space_left(&uq->ring) >= n)
		return true;
	uring_submit_now(uq);
	return io_uring_sq_space_left(&uq->ring) >= n;
}

void mq_uring_taken(struct uring_queue *uq, unsigned n)
{
	uq->prepared += n;
	uq->unsubmitted += n;
}

static int uring_queue_rq(struct mq_hw_queue *hctx, struct mq_request *rq,
			  bool last)
{
	struct uring_queue *uq = mq_hctx_driver_data(hctx);
	int ret = uq->ud->cs->queue(uq, rq);

	if (last)
		uring_submit(uq);
	return ret;
}

static void uring_commit_rqs(struct mq_hw_queue *hctx)
{
	uring_submit(mq_hctx_driver_data(hctx));
}

/*
 * Take every ready CQE (up to a batch) and complete them together; adds
 * the requests completed to *@completed and returns the CQEs consumed.
 */
static unsigned uring_reap(struct uring_queue *uq, bool *stop,
			   unsigned *completed)
{
	struct io_uring_cqe *cqes[URING_REAP_BATCH];
	struct mq_request *rqs[URING_REAP_BATCH];
	unsigned n = io_uring_peek_batch_cqe(&uq->ring, cqes, URING_REAP_BATCH);
	unsigned nr = 0;

	for (unsigned i = 0; i < n; i++) {
		struct mq_request *rq = io_uring_cqe_get_data(cqes[i]);

		if ((void *)rq == URING_STOP) {
			*stop = true;
			continue;
		}
		if (!rq)		/* a NOP that stood in for a failed prep */
			continue;
		if (uq->ud->cs->cqe(uq->ud, rq, cqes[i]->res))
			rqs[nr++] = rq;
	}
	io_uring_cq_advance(&uq->ring, n);
	if (n)
		atomic_fetch_sub(&uq->inflight, n);
	*completed += nr;
	if (nr) {
		atomic_fetch_add_explicit(&uq->reaps, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&uq->reaped, nr, memory_order_relaxed);
		mq_complete_batch(rqs, nr);
	}
	return n;
}

static void *uring_reaper_main(void *arg)
{
	struct uring_queue *uq = arg;
	bool stop = false;
	unsigned nr = 0;

	atomic_store(&uq->reaper_tid, mq_thread_id());
	while (!stop) {
		struct io_uring_cqe *cqe;
		int ret = io_uring_wait_cqe(&uq->ring, &cqe);

		if (ret == -EINTR || ret == -EAGAIN)
			continue;
		if (ret < 0) {
			fprintf(stderr, "mqfs: uring %s q%u: wait: %s\n",
				uq->ud->dev.name, uq->index, strerror(-ret));
			break;
		}
		while (uring_reap(uq, &stop, &nr) == URING_REAP_BATCH)
			;
	}
	return NULL;
}

/*
 * Reap until @min_complete requests have completed or the ring owes no
 * more CQEs, blocking in the kernel for what is missing.  The caller owns
 * poll_lock.  An IOPOLL ring finds completions only by entering the
 * kernel, so a non-blocking poll enters once.
 */
static int uring_poll_locked(struct uring_queue *uq, unsigned min_complete)
{
	unsigned done = 0;
	bool stop = false;

	if (!min_complete && uq->ud->cfg.iopoll)
		io_uring_get_events(&uq->ring);
	for (;;) {
		struct io_uring_cqe *cqe;
		unsigned owed;
		int ret;

		if (uring_reap(uq, &stop, &done) == URING_REAP_BATCH)
			continue;
		owed = atomic_load(&uq->inflight);
		if (!owed)
			return (int)done;
		/*
		 * Owed CQEs may be of SQEs a batch published but did not
		 * submit: enter for them, in a poll that will not wait too (a
		 * waiter inside another poll only tries, and the batch's thread
		 * may be blocked on that waiter).  One that publishes after
		 * this look sees us (uring_defer).
		 */
		atomic_thread_fence(memory_order_seq_cst);
		(void)uring_enter_published(uq);
		if (done >= min_complete)
			return (int)done;
		ret = io_uring_wait_cqe_nr(&uq->ring, &cqe,
					   MQ_MIN(min_complete - done, owed));
		if (ret < 0 && ret != -EINTR && ret != -EAGAIN) {
			fprintf(stderr, "mqfs: uring %s q%u: poll: %s\n",
				uq->ud->dev.name, uq->index, strerror(-ret));
			return done ? (int)done : ret;
		}
	}
}

/* Poll under poll_lock, which the caller took. */
static int uring_poll_held(struct uring_queue *uq, unsigned min_complete)
{
	int ret;

	atomic_store(&uq->poll_owner, &uring_self);
	uring_polls_held++;
	ret = uring_poll_locked(uq, min_complete);
	uring_polls_held--;
	atomic_store(&uq->poll_owner, NULL);
	return ret;
}

/*
 * Take what is ready without waiting for the lock.  A holder may be past
 * its last reap when a CQE comes, so a thread that finds the lock taken
 * says so (@poll_missed, set before its second try: of it and the
 * holder's look after unlocking, one sees the other) and the holder
 * reaps once more; else a ring thread woken by the eventfd for that CQE
 * would go back to sleep with it unreaped.
 */
static int uring_poll_try(struct uring_queue *uq)
{
	int done = 0, n;

	for (;;) {
		if (pthread_mutex_trylock(&uq->poll_lock)) {
			atomic_store(&uq->poll_missed, true);
			if (pthread_mutex_trylock(&uq->poll_lock))
				return done;	/* the holder reaps for us */
		}
		atomic_store(&uq->poll_missed, false);
		n = uring_poll_held(uq, 0);
		pthread_mutex_unlock(&uq->poll_lock);
		if (n > 0)
			done += n;
		if (!atomic_load(&uq->poll_missed))
			return done;
	}
}

/*
 * From an end_io this thread runs inside its own poll of this ring: go on
 * under that hold.  Inside a poll of another ring, never wait for this
 * one's lock (two pollers would take them in opposite orders): take what
 * is ready if it is free.  Completions another poller reaped while we
 * waited for the lock count towards @min_complete: the caller's may be
 * among them.
 */
static int uring_poll_queue(struct uring_queue *uq, unsigned min_complete)
{
	uint64_t seen = atomic_load(&uq->reaped), others;
	int ret;

	if (atomic_load(&uq->poll_owner) == &uring_self)
		return uring_poll_locked(uq, min_complete);
	if (uring_polls_held || !min_complete)
		return uring_poll_try(uq);
	pthread_mutex_lock(&uq->poll_lock);
	others = atomic_load(&uq->reaped) - seen;
	min_complete -= (unsigned)MQ_MIN(others, (uint64_t)min_complete);
	ret = uring_poll_held(uq, min_complete);
	pthread_mutex_unlock(&uq->poll_lock);
	if (ret >= 0 && atomic_load(&uq->poll_missed))
		ret += uring_poll_try(uq);
	return ret;
}

static int uring_poll(struct mq_hw_queue *hctx, unsigned min_complete)
{
	struct uring_queue *uq = mq_hctx_driver_data(hctx);

	if (!uq->polled)
		return -EOPNOTSUPP;
	return uring_poll_queue(uq, min_complete);
}

/* Signalled at every CQE the ring posts, whoever reaps it. */
static int uring_poll_fd(struct mq_hw_queue *hctx)
{
	struct uring_queue *uq = mq_hctx_driver_data(hctx);
	int ret = 0;

	if (!uq->polled || uq->ud->cfg.iopoll)
		return -EOPNOTSUPP;	/* IOPOLL CQEs appear only when entered */
	pthread_mutex_lock(&uq->poll_lock);
	if (uq->efd < 0) {
		uq->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (uq->efd < 0)
			ret = -errno;
		else
			ret = io_uring_register_eventfd(&uq->ring, uq->efd);
		if (ret && uq->efd >= 0) {
			close(uq->efd);
			uq->efd = -1;
		}
	}
	pthread_mutex_unlock(&uq->poll_lock);
	return ret ? ret : uq->efd;
}

/*
 * The caller's memory as fixed buffers.  Registration pins it (charged
 * per ring), which RLIMIT_MEMLOCK may refuse an unprivileged caller:
 * the device then goes on without them on every ring (plain reads and
 * writes), said once.
 */
static int uring_register_bufs(struct uring_dev *ud, struct uring_queue *uq)
{
	int ret = io_uring_register_buffers(&uq->ring, ud->bufs, ud->nr_bufs);

	if (!ret)
		return 0;
	fprintf(stderr, "mqfs: uring %s q%u: fixed buffers refused (%s): "
		"plain I/O\n", ud->dev.name, uq->index, strerror(-ret));
	/* Queues come up in order, before any I/O: undo the earlier ones. */
	for (unsigned i = 0; i < uq->index; i++)
		if (ud->queues[i])
			io_uring_unregister_buffers(&ud->queues[i]->ring);
	free(ud->bufs);
	ud->bufs = NULL;
	ud->nr_bufs = 0;
	return 0;
}

static int uring_ring_init(struct uring_dev *ud, struct uring_queue *uq)
{
	struct io_uring_params p = { 0 };
	unsigned entries = ud->cfg.queue_depth;
	int ret;

	p.flags = IORING_SETUP_CQSIZE | ud->cs->ring_flags;
	p.cq_entries = entries * 2;
	if (ud->cfg.sqpoll) {
		p.flags |= IORING_SETUP_SQPOLL;
		p.sq_thread_idle = 1000;
	}
	if (ud->cfg.iopoll)
		p.flags |= IORING_SETUP_IOPOLL;
	ret = io_uring_queue_init_params(entries, &uq->ring, &p);
	if (ret)
		return ret;
	if (ud->fixed_file)
		ret = io_uring_register_files(&uq->ring, &ud->fd, 1);
	if (!ret && ud->nr_bufs)
		ret = uring_register_bufs(ud, uq);
	if (ret)
		io_uring_queue_exit(&uq->ring);
	return ret;
}

static int uring_iov_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)((const struct iovec *)a)->iov_base;
	uintptr_t y = (uintptr_t)((const struct iovec *)b)->iov_base;

	return x < y ? -1 : x > y;
}

/* Names the driver's devices (mq_uring_register_buffers). */
static int uring_queue_init(struct mq_dev *dev, unsigned index, void **priv);

/* @iov cut into pieces of at most @chunk bytes (0: whole) into @out. */
static unsigned uring_cut_bufs(const struct iovec *iov, unsigned nr,
			       size_t chunk, struct iovec *out)
{
	unsigned n = 0;

	for (unsigned i = 0; i < nr; i++) {
		char *p = iov[i].iov_base;
		size_t left = iov[i].iov_len;

		do {
			size_t len = chunk && left > chunk ? chunk : left;

			if (out)
				out[n] = (struct iovec){ p, len };
			n++;
			p += len;
			left -= len;
		} while (left);
	}
	return n;
}

int mq_uring_register_buffers(struct mq_dev *dev, const struct iovec *iov,
			      unsigned nr)
{
	struct uring_dev *ud = to_uring(dev);
	size_t chunk = ud->cs->fixed_chunk;
	struct iovec *copy;
	unsigned n;

	if (dev->ops->queue_init != uring_queue_init || ud->queues[0] || !nr)
		return -EINVAL;
	if (ud->no_fixed_bufs) {
		/* Its command set said so at setup (NVMe before 6.1). */
		fprintf(stderr, "mqfs: %s %s: fixed buffers need a newer "
			"kernel: plain I/O\n", ud->cs->name, dev->name);
		return 0;
	}
	n = uring_cut_bufs(iov, nr, chunk, NULL);
	if (n > URING_MAX_FIXED_BUFS)
		return -E2BIG;
	copy = calloc(n, sizeof(*copy));
	if (!copy)
		return -ENOMEM;
	uring_cut_bufs(iov, nr, chunk, copy);
	qsort(copy, n, sizeof(*copy), uring_iov_cmp);
	free(ud->bufs);
	ud->bufs = copy;
	ud->nr_bufs = n;
	return 0;
}

static int uring_queue_init(struct mq_dev *dev, unsigned index, void **priv)
{
	struct uring_dev *ud = to_uring(dev);
	struct uring_queue *uq = calloc(1, sizeof(*uq));
	int ret;

	if (!uq)
		return -ENOMEM;
	uq->ud = ud;
	uq->index = index;
	uq->polled = mq_dev_queue_polled(dev, index);
	uq->efd = -1;
	ret = uring_ring_init(ud, uq);
	if (ret) {
		fprintf(stderr, "mqfs: uring %s q%u: setup: %s\n", dev->name,
			index, strerror(-ret));
		free(uq);
		return ret;
	}
	pthread_mutex_init(&uq->poll_lock, NULL);
	if (!uq->polled) {
		ret = -pthread_create(&uq->reaper, NULL, uring_reaper_main, uq);
		if (ret) {
			pthread_mutex_destroy(&uq->poll_lock);
			io_uring_queue_exit(&uq->ring);
			free(uq);
			return ret;
		}
		uq->reaper_running = true;
	}
	ud->queues[index] = uq;
	*priv = uq;
	return 0;
}

#define URING_STOP_WAIT_S	2

/*
 * A reaper ends when it reaps a NOP it recognises.  On a ring that
 * refuses submits the NOP never gets there: the reaper's own wait
 * usually fails too and ends it, but if the kernel keeps it asleep the
 * join would hang the unmount.  After a bounded wait it is left asleep
 * and the ring with it (false: the caller must not free the ring).
 */
static bool uring_reaper_stop(struct uring_queue *uq)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&uq->ring);
	struct timespec until;

	if (sqe) {
		io_uring_prep_nop(sqe);
		io_uring_sqe_set_data(sqe, URING_STOP);
		uq->prepared++;
		uq->unsubmitted++;
		uring_submit(uq);
	}
	if (!uq->broken) {
		pthread_join(uq->reaper, NULL);
		return true;
	}
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += URING_STOP_WAIT_S;
	if (!pthread_timedjoin_np(uq->reaper, NULL, &until))
		return true;
	fprintf(stderr, "mqfs: uring %s q%u: the reaper of a broken ring does "
		"not stop: left with its ring\n", uq->ud->dev.name, uq->index);
	pthread_detach(uq->reaper);
	return false;
}

/*
 * All requests have completed.  Stop the reaper, or, caller-reaped, take
 * the CQEs still owed (those of NOPs that stood in for a failed prep):
 * no thread may be inside a poll of this queue any more.
 */
static void uring_queue_exit(struct mq_dev *dev, unsigned index, void *priv)
{
	struct uring_queue *uq = priv;

	if (uq->reaper_running) {
		if (!uring_reaper_stop(uq)) {
			to_uring(dev)->queues[index] = NULL;
			return;		/* the reaper may still touch it */
		}
	} else {
		uring_submit(uq);
		while (atomic_load(&uq->inflight))
			uring_poll_queue(uq, 1);
	}
	/*
	 * Ring teardown is asynchronous in the kernel and a registered file
	 * would keep the device's exclusive claim alive after close():
	 * unregister first, which waits.
	 */
	if (uq->ud->fixed_file)
		io_uring_unregister_files(&uq->ring);
	if (uq->ud->nr_bufs)
		io_uring_unregister_buffers(&uq->ring);
	if (uq->efd >= 0) {
		io_uring_unregister_eventfd(&uq->ring);
		close(uq->efd);
	}
	io_uring_queue_exit(&uq->ring);
	pthread_mutex_destroy(&uq->poll_lock);
	to_uring(dev)->queues[index] = NULL;
	free(uq);
}

static void uring_close(struct mq_dev *dev)
{
	struct uring_dev *ud = to_uring(dev);

	if (ud->cs->free)
		ud->cs->free(ud);
	close(ud->fd);
	free(ud->queues);
	free(ud->bufs);
	free(ud);
}

static void uring_queue_stats(struct mq_dev *dev, void *priv,
			      struct mq_dev_queue_stats *s)
{
	struct uring_queue *uq = priv;

	s->reaper_runs += atomic_load(&uq->reaps);
	s->reaped += atomic_load(&uq->reaped);
	s->reaper_cs += mq_thread_cs(atomic_load(&uq->reaper_tid));
	if (uq->index == 0 && uq->ud->cs->stats)
		uq->ud->cs->stats(uq->ud, s);	/* per device, counted once */
}

/* One driver; each device copies it under its command set's name. */
const struct mq_dev_ops mq_uring_ops = {
	.queue_init = uring_queue_init,
	.queue_exit = uring_queue_exit,
	.queue_rq = uring_queue_rq,
	.commit_rqs = uring_commit_rqs,
	.queue_stats = uring_queue_stats,
	.poll = uring_poll,
	.poll_fd = uring_poll_fd,
	.close = uring_close,
};
