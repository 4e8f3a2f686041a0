/* SPDX-License-Identifier: MIT */
/*
 * uring.c - the io_uring driver: direct I/O to a regular file or a block
 * device, one ring per hardware queue.
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
 * the SQEs of a request and reads its CQEs - the one here for files and
 * block devices, nvme.c's NVMe commands for /dev/ngXnY.
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

#define URING_MAX_SEGS		128
#define URING_REAP_BATCH	64
/* The kernel's IORING_MAX_REG_BUFFERS. */
#define URING_MAX_FIXED_BUFS	16384u
/* Rings with no reaper a queue may ask for besides (poll queues). */
#define URING_MAX_POLL_QUEUES	32u

/* Per-request driver context, allocated with the request. */
struct uring_cmd {
	struct iovec iov[URING_MAX_SEGS];
};


/* Its address names the calling thread (poll_owner). */
static _Thread_local char uring_self;
/* poll_locks this thread holds (rings whose completions it is running). */
static _Thread_local unsigned uring_polls_held;

static const struct mq_dev_ops uring_ops, uring_nvme_ops;

/* user_data of the NOP that stops a reaper (never a request's address). */
static const char uring_stop_mark;
#define URING_STOP	((void *)&uring_stop_mark)

static struct uring_dev *to_uring(struct mq_dev *dev)
{
	return mq_container_of(dev, struct uring_dev, dev);
}

/* Build the iovec of a multi-bio request in its context area. */
static unsigned uring_fill_iov(struct mq_request *rq, struct uring_cmd *cmd)
{
	struct mq_bio *bio;
	unsigned n = 0;

	mq_rq_for_each_bio(bio, rq) {
		cmd->iov[n].iov_base = bio->buf;
		cmd->iov[n].iov_len = bio->size;
		n++;
	}
	return n;
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

static void uring_prep_rw(struct uring_queue *uq, struct io_uring_sqe *sqe,
			  struct mq_request *rq)
{
	struct uring_cmd *cmd = mq_rq_pdu(rq);
	off_t off = (off_t)(rq->sector << MQ_SECTOR_SHIFT);
	int fd = mq_uring_sqe_fd(uq->ud);
	bool write = rq->op == MQ_OP_WRITE;

	int idx = rq->nr_segs == 1 ?
		  mq_uring_fixed_index(uq->ud, rq->bio->buf, rq->nr_bytes) : -1;

	if (idx >= 0) {
		if (write)
			io_uring_prep_write_fixed(sqe, fd, rq->bio->buf,
						  rq->nr_bytes, off, idx);
		else
			io_uring_prep_read_fixed(sqe, fd, rq->bio->buf,
						 rq->nr_bytes, off, idx);
	} else if (rq->nr_segs == 1) {
		if (write)
			io_uring_prep_write(sqe, fd, rq->bio->buf, rq->nr_bytes, off);
		else
			io_uring_prep_read(sqe, fd, rq->bio->buf, rq->nr_bytes, off);
	} else {
		unsigned n = uring_fill_iov(rq, cmd);

		if (write)
			io_uring_prep_writev(sqe, fd, cmd->iov, n, off);
		else
			io_uring_prep_readv(sqe, fd, cmd->iov, n, off);
	}
	/* FUA: RWF_DSYNC makes the block layer below issue REQ_FUA. */
	if (write && (rq->cmd_flags & MQ_REQ_FUA))
		sqe->rw_flags = RWF_DSYNC;
}

/* Discard / write-zeroes on a block device: synchronous ioctls. */
static int uring_blk_range(struct uring_dev *ud, struct mq_request *rq)
{
	uint64_t range[2] = { rq->sector << MQ_SECTOR_SHIFT, rq->nr_bytes };
	unsigned long cmd = rq->op == MQ_OP_DISCARD ? BLKDISCARD : BLKZEROOUT;

	return ioctl(ud->fd, cmd, range) ? -errno : 0;
}

static int uring_prep(struct uring_queue *uq, struct io_uring_sqe *sqe,
		      struct mq_request *rq)
{
	struct uring_dev *ud = uq->ud;
	int fd = mq_uring_sqe_fd(ud);
	off_t off = (off_t)(rq->sector << MQ_SECTOR_SHIFT);

	switch (rq->op) {
	case MQ_OP_READ:
	case MQ_OP_WRITE:
		uring_prep_rw(uq, sqe, rq);
		break;
	case MQ_OP_FLUSH:
		io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC);
		break;
	case MQ_OP_DISCARD:
		io_uring_prep_fallocate(sqe, fd, FALLOC_FL_PUNCH_HOLE |
					FALLOC_FL_KEEP_SIZE, off, rq->nr_bytes);
		break;
	case MQ_OP_WRITE_ZEROES:
		io_uring_prep_fallocate(sqe, fd, FALLOC_FL_ZERO_RANGE |
					FALLOC_FL_KEEP_SIZE, off, rq->nr_bytes);
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (ud->fixed_file)
		sqe->flags |= IOSQE_FIXED_FILE;
	io_uring_sqe_set_data(sqe, rq);
	return 0;
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

/* The command set of files and block devices: one SQE a request. */
static int uring_rw_queue(struct uring_queue *uq, struct mq_request *rq)
{
	struct io_uring_sqe *sqe;
	int ret;

	if (uq->ud->is_bdev && (rq->op == MQ_OP_DISCARD ||
				rq->op == MQ_OP_WRITE_ZEROES)) {
		mq_complete_request(rq, uring_blk_range(uq->ud, rq));
		return 0;
	}
	if (!mq_uring_reserve(uq, 1))
		return MQ_DEV_BUSY;
	sqe = io_uring_get_sqe(&uq->ring);
	mq_uring_taken(uq, 1);
	ret = uring_prep(uq, sqe, rq);
	if (ret) {
		/* The SQE is taken: a NOP stands in, its CQE is skipped. */
		io_uring_prep_nop(sqe);
		io_uring_sqe_set_data(sqe, NULL);
	}
	return ret;
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
 * Finish a short transfer synchronously.  Reads past the end of a file
 * come back zero-filled, as reads of a block device's tail never happen.
 */
static int uring_finish_short(struct uring_dev *ud, struct mq_request *rq,
			      uint32_t done)
{
	uint64_t off = (rq->sector << MQ_SECTOR_SHIFT);
	struct mq_bio *bio;
	uint64_t pos = 0;

	mq_rq_for_each_bio(bio, rq) {
		for (uint32_t b = 0; b < bio->size;) {
			uint64_t at = pos + b;
			ssize_t n;

			if (at < done) {
				b += (uint32_t)MQ_MIN((uint64_t)bio->size - b, done - at);
				continue;
			}
			n = rq->op == MQ_OP_WRITE ?
			    pwrite(ud->fd, (char *)bio->buf + b, bio->size - b,
				   (off_t)(off + at)) :
			    pread(ud->fd, (char *)bio->buf + b, bio->size - b,
				  (off_t)(off + at));
			if (n < 0)
				return -errno;
			if (n == 0 && rq->op == MQ_OP_READ) {
				memset((char *)bio->buf + b, 0, bio->size - b);
				n = bio->size - b;
			} else if (n == 0) {
				return -EIO;
			}
			b += (uint32_t)n;
		}
		pos += bio->size;
	}
	return 0;
}

static int uring_rw_status(struct uring_dev *ud, struct mq_request *rq,
			   int res)
{
	if (res < 0)
		return res;
	if ((rq->op == MQ_OP_READ || rq->op == MQ_OP_WRITE) &&
	    (uint32_t)res < rq->nr_bytes) {
		/* Restart on a block boundary: O_DIRECT needs alignment. */
		uint32_t lbs = ud->dev.geo.logical_block_size;

		return uring_finish_short(ud, rq, (uint32_t)res / lbs * lbs);
	}
	return 0;
}

static bool uring_rw_cqe(struct uring_dev *ud, struct mq_request *rq, int res)
{
	rq->status = uring_rw_status(ud, rq, res);
	return true;
}

static const struct uring_cmdset uring_rw_cmdset = {
	.pdu_size = sizeof(struct uring_cmd),
	.queue = uring_rw_queue,
	.cqe = uring_rw_cqe,
};

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

	if ((dev->ops != &uring_ops && dev->ops != &uring_nvme_ops) ||
	    ud->queues[0] || !nr)
		return -EINVAL;
	if (ud->no_fixed_bufs) {
		fprintf(stderr, "mqfs: nvme %s: fixed buffers need Linux 6.1 "
			"for NVMe passthrough: plain I/O\n", dev->name);
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

	mq_uring_nvme_free(ud);
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
	if (uq->index == 0 && uq->ud->nvme)
		mq_uring_nvme_stats(uq->ud, s);	/* per device, counted once */
}

/* One driver, two names: what the rings carry (uring_rw or NVMe). */
#define URING_OPS(drv_name) {					\
	.name = drv_name,					\
	.queue_init = uring_queue_init,				\
	.queue_exit = uring_queue_exit,				\
	.queue_rq = uring_queue_rq,				\
	.commit_rqs = uring_commit_rqs,				\
	.queue_stats = uring_queue_stats,			\
	.poll = uring_poll,					\
	.poll_fd = uring_poll_fd,				\
	.close = uring_close,					\
}
static const struct mq_dev_ops uring_ops = URING_OPS("uring");
static const struct mq_dev_ops uring_nvme_ops = URING_OPS("nvme");

/*
 * An image file's exclusive flock, retried every 100 ms for @wait_ms:
 * an unmounted daemon may hold it for a moment while it finishes.
 */
static int uring_lock_file(int fd, const char *path, unsigned wait_ms)
{
	bool said = false;

	for (unsigned waited = 0;; waited += 100) {
		if (!flock(fd, LOCK_EX | LOCK_NB))
			return 0;
		if (errno != EWOULDBLOCK)
			return 0;	/* no flock here (some network fs) */
		if (waited >= wait_ms)
			return -EBUSY;
		if (!said)
			fprintf(stderr, "mqfs: %s is in use; waiting up to %u "
				"s for it\n", path, (wait_ms + 999) / 1000);
		said = true;
		usleep(100 * 1000);
	}
}

/*
 * Which command set serves @st under @c->driver: -ENOTBLK when none can
 * (a char device that is not an NVMe generic one, a directory...), or
 * when the one forced does not fit the path.
 */
static int uring_pick_cmdset(const struct stat *st,
			     const struct mq_uring_config *c,
			     const struct uring_cmdset **cs)
{
	bool nvme = S_ISCHR(st->st_mode) && mq_uring_nvme_is_generic(st);
	bool rw = S_ISBLK(st->st_mode) || S_ISREG(st->st_mode);

	switch (c->driver) {
	case MQ_URING_DRIVER_AUTO:
		break;
	case MQ_URING_DRIVER_RW:
		nvme = false;
		break;
	case MQ_URING_DRIVER_NVME:	/* even where sysfs cannot tell */
		nvme = S_ISCHR(st->st_mode);
		rw = false;
		break;
	}
	*cs = nvme ? &mq_uring_nvme_cmdset : &uring_rw_cmdset;
	return nvme || rw ? 0 : -ENOTBLK;
}

/*
 * O_DIRECT, read-write unless asked otherwise; with @c->exclusive two
 * users must never share the device: O_EXCL for a block device, a flock
 * for an image file or an NVMe generic device (whose open has no O_EXCL;
 * the flock keeps two mqfs programs apart, not other users).
 */
static int uring_open_fd(const char *path, const struct mq_uring_config *c,
			 bool *is_bdev, const struct uring_cmdset **cs)
{
	int flags = (c->readonly ? O_RDONLY : O_RDWR) | O_CLOEXEC;
	struct stat st;
	int fd, err;

	if (stat(path, &st))
		return -errno;
	err = uring_pick_cmdset(&st, c, cs);
	if (err)
		return err;
	*is_bdev = S_ISBLK(st.st_mode);
	if (*cs == &uring_rw_cmdset)
		flags |= O_DIRECT;
	if (*is_bdev && c->exclusive)
		flags |= O_EXCL;
	fd = open(path, flags);
	if (fd < 0)
		return -errno;
	if (!*is_bdev && c->exclusive) {
		err = uring_lock_file(fd, path, c->lock_wait_ms);
		if (err) {
			close(fd);
			return err;
		}
	}
	return fd;
}

const char *mq_uring_open_hint(int err)
{
	switch (err) {
	case -ENOTBLK:
		return " (not a regular file, block device or NVMe generic "
		       "device /dev/ngXnY)";
	case -EBUSY:
		return " (mounted or in use: unmount it first)";
	case -EROFS:
	case -EACCES:
		return " (read-only here: mount with -o ro, check with -n)";
	default:
		return "";
	}
}

int mq_uring_in_use(const char *path)
{
	struct stat st;
	int fd, ret = 0;

	if (stat(path, &st))
		return -errno;
	if (S_ISBLK(st.st_mode)) {
		fd = open(path, O_RDONLY | O_EXCL | O_CLOEXEC);
		if (fd < 0)
			return errno == EBUSY ? 1 : -errno;
		close(fd);
		return 0;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_SH | LOCK_NB))
		ret = errno == EWOULDBLOCK ? 1 : 0;
	close(fd);
	/* An NVMe namespace is also in use when its block device is. */
	if (!ret && S_ISCHR(st.st_mode) && mq_uring_nvme_is_generic(&st))
		ret = mq_uring_nvme_in_use(&st);
	return ret;
}

/* Geometry and the configuration's checks, by command set. */
static int uring_setup(struct uring_dev *ud)
{
	int ret;

	if (ud->cs == &mq_uring_nvme_cmdset)
		return mq_uring_nvme_setup(ud);
	ret = mq_geometry_probe(ud->fd, &ud->dev.geo, &ud->is_bdev);
	if (ret)
		return ret;
	if (ud->cfg.iopoll && !mq_geometry_poll_capable(ud->fd)) {
		fprintf(stderr, "mqfs: uring %s: iopoll needs a block device "
			"with poll queues (queue/io_poll = 1)\n", ud->dev.name);
		return -EOPNOTSUPP;
	}
	return 0;
}

int mq_uring_open(const char *path, const struct mq_uring_config *cfg,
		  struct mq_dev **out)
{
	struct uring_dev *ud = calloc(1, sizeof(*ud));
	bool is_bdev = false;
	int ret;

	*out = NULL;
	if (!ud)
		return -ENOMEM;
	ud->cfg = *cfg;
	if (!ud->cfg.queue_depth)
		ud->cfg.queue_depth = 128;
	snprintf(ud->dev.name, sizeof(ud->dev.name), "%s", path);
	ret = mq_uring_probe();
	if (ret)
		goto err_free;
	ret = ud->fd = uring_open_fd(path, cfg, &is_bdev, &ud->cs);
	if (ret < 0)
		goto err_free;		/* the caller says why: open_hint */
	ret = uring_setup(ud);
	if (ret)
		goto err_close;
	ud->dev.geo.read_only = cfg->readonly;
	ud->fixed_file = !ud->cfg.no_fixed_files;
	ud->dev.geo.queue_depth = ud->cfg.queue_depth;
	if (!ud->dev.geo.max_segments)
		ud->dev.geo.max_segments = URING_MAX_SEGS;
	ud->dev.ops = ud->cs == &mq_uring_nvme_cmdset ? &uring_nvme_ops
						   : &uring_ops;
	ud->dev.rq_pdu_size = ud->cs->pdu_size;
	ud->dev.polled = ud->cfg.caller_reap;
	ud->dev.geo.nr_poll_queues = URING_MAX_POLL_QUEUES;
	ud->queues = calloc(ud->dev.geo.nr_hw_queues + URING_MAX_POLL_QUEUES,
			    sizeof(*ud->queues));
	if (!ud->queues) {
		ret = -ENOMEM;
		goto err_close;
	}
	*out = &ud->dev;
	return 0;
err_close:
	mq_uring_nvme_free(ud);
	close(ud->fd);
err_free:
	free(ud);
	return ret;
}
