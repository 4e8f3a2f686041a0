/* SPDX-License-Identifier: MIT */
/*
 * ring.c - FUSE over io_uring: one thread and one ring per possible CPU
 * carry the requests and their replies.  This file is a ring thread's
 * work (registering, serving, replying); ring_setup.c sets the rings up
 * and down.
 *
 * The kernel (6.14+, fs/fuse/dev_uring.c) queues a request on the ring
 * queue of the CPU its caller runs on; queue N is served here by thread
 * mqfs-ringN (placed on or off CPU N by its load: ring_pin.c), with its
 * own io_uring (SQE128: the command lives in the SQE; COOP_TASKRUN,
 * below) and uring_depth entries.  An entry is one request slot of the
 * pool (pool.c): its header page holds the 288-byte
 * fuse_uring_req_header, its payload the request's names and data and
 * then the reply, and the slots' arena is the device's fixed buffer, so a
 * WRITE goes to the device from the page the kernel copied it into and a
 * READ lands where the reply is sent from.
 *
 * The life of an entry: REGISTER (once, after the INIT reply: earlier the
 * kernel says EAGAIN); its CQE is a request, served inline by the ring
 * thread (engine.c); the reply is written into the entry's buffers; when
 * the request's last user lets go (at once for most, at the device
 * completion for reads and writes), the entry goes on the queue's pending
 * stack, and the ring thread turns it into a COMMIT_AND_FETCH SQE, whose
 * CQE is the entry's next request.  The buffers are the kernel's again the
 * moment the commit is submitted, which is why it waits for the last user
 * and not for the reply.
 *
 * A reply finished on another thread (the block layer's completion
 * worker, the write-behind flusher) goes on the queue's lock-free pending
 * stack.  While the ring thread is awake it commits the stack before it
 * next waits, in one io_uring_enter with its own commits; while it
 * sleeps in io_uring_enter the completing thread takes the SQ lock and
 * submits the commit itself: no wake-up of the ring thread, no thread hop
 * before the caller sees its reply (an eventfd kick of the ring thread,
 * tried first, cost a context switch per reply at QD1: 106 us against
 * /dev/fuse's 71 us on the same image).  The SQ lock is only ever taken
 * around preparing and submitting, never across a wait.  An entry whose
 * commit another thread submitted gets its next request copied in that
 * thread's context; every such thread lives as long as the mount.
 *
 * What stays on /dev/fuse (engine.c's workers): INIT, FORGET, INTERRUPT
 * and the notifications.  An INTERRUPT cannot answer a ring request early
 * (the kernel WARNs at an interrupt reply on a ring), so ring requests are
 * never cancellable: they run to their end.  Teardown: at unmount, abort
 * or daemon death the kernel completes every waiting entry with
 * -ENOTCONN and refuses later commits; mqfs_rings_stop runs after every
 * request has ended and only wakes and joins the threads.
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

/* ---- submission (the ring thread only) ------------------------------------- */

struct io_uring_sqe *mqfs_ring_sqe(struct mqfs_ring_queue *q)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&q->ring);

	while (!sqe) {
		/* Never full by construction (an SQE per entry); be safe. */
		io_uring_submit(&q->ring);
		atomic_fetch_add(&q->enters, 1);
		sqe = io_uring_get_sqe(&q->ring);
	}
	return sqe;
}

static void ring_prep_cmd(struct mqfs_ring_queue *q, struct mqfs_ring_ent *e,
			  uint32_t op)
{
	struct io_uring_sqe *sqe = mqfs_ring_sqe(q);
	struct mqfs_fuse_uring_cmd_req *req = (void *)sqe->cmd;

	/* fd 0: the registered /dev/fuse file. */
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, 0, NULL, 0, 0);
	sqe->flags |= IOSQE_FIXED_FILE;
	memset(sqe->cmd, 0, 80);	/* the SQE128 command area */
	sqe->cmd_op = op;		/* after prep: it shares sqe->off */
	req->qid = e->qid;
	if (op == MQFS_FUSE_URING_CMD_REGISTER) {
		sqe->addr = (uintptr_t)e->iov;
		sqe->len = 2;
	} else {
		req->commit_id = e->unique;
		atomic_fetch_add(&q->commits, 1);
	}
	e->registering = op == MQFS_FUSE_URING_CMD_REGISTER;
	io_uring_sqe_set_data(sqe, e);
}

/* The replies other threads (and this one) finished: commit them
 * (sq_lock held). */
static void ring_take_pending(struct mqfs_ring_queue *q)
{
	struct mqfs_ring_ent *e = atomic_exchange(&q->pending, NULL);

	while (e) {
		struct mqfs_ring_ent *next = e->next;

		ring_prep_cmd(q, e, MQFS_FUSE_URING_CMD_COMMIT_AND_FETCH);
		e = next;
	}
}

/* ---- the device's completions (uring_reap=ring) ----------------------------- */

/*
 * The thread's reads and writes go to a poll queue of the block layer
 * (MQ_REQ_POLLED: fs/file.c) that has no reaper: this thread reaps it in
 * its loop, so a READ's device completion, its reply and its commit run
 * here, between two io_uring_enter calls on the FUSE ring, with no other
 * thread woken (the ublk shape, with the device's own ring beside ours).
 * A read of the queue's eventfd, kept queued on the FUSE ring, wakes the
 * thread when the device completes while it sleeps.  Other threads that
 * wait for such I/O (truncate, release) poll the queues themselves.
 */
static struct mq_queue *ring_mq(struct mqfs_ring_queue *q)
{
	return mqfs_queue(q->rs->d->fs);
}

static void ring_poll_setup(struct mqfs_ring_queue *q)
{
	struct mq_queue *mq = ring_mq(q);
	unsigned n = mq_queue_nr_poll_queues(mq);
	int fd;

	q->poll_index = -1;
	if (!n)
		return;
	fd = mq_queue_poll_fd(mq, q->qid % n);
	if (fd < 0) {
		/* Unbound, its bios go to the reaped queues. */
		fprintf(stderr, "mqfs: fuse: ring %u: device poll queue: %s: "
			"the reapers complete its I/O\n", q->qid,
			strerror(-fd));
		return;
	}
	q->poll_fd = fd;
	q->poll_index = (int)(q->qid % n);
	mq_set_task_poll_queue(q->poll_index);
}

/* Queue the eventfd read unless it is queued (sq_lock held). */
static void ring_arm_poll(struct mqfs_ring_queue *q)
{
	struct io_uring_sqe *sqe;

	if (q->poll_index < 0 || q->poll_armed)
		return;
	sqe = mqfs_ring_sqe(q);
	io_uring_prep_read(sqe, q->poll_fd, &q->poll_count,
			   sizeof(q->poll_count), 0);
	io_uring_sqe_set_data64(sqe, RING_POLL_UD);
	q->poll_armed = true;
}

/* What the device completed: end_io, replies, commits onto our stack. */
static void ring_poll_device(struct mqfs_ring_queue *q)
{
	int n;

	if (q->poll_index < 0)
		return;
	n = mq_queue_poll_queue(ring_mq(q), (unsigned)q->poll_index, 0);
	if (n > 0) {
		atomic_fetch_add(&q->dev_reaps, 1);
		atomic_fetch_add(&q->dev_reaped, (unsigned)n);
	}
}

/* The ring threads are gone: nobody else reaps their poll queues. */
void mqfs_rings_drain(struct mqfs_rings *rs, struct mq_inflight *f)
{
	if (rs->d && rs->d->fs)
		mq_queue_inflight_wait(mqfs_queue(rs->d->fs), f);
	else
		mq_inflight_wait(f);
}

/* ---- the engine's side: replies and release --------------------------------- */

/*
 * A reply is written into the request's own buffers, where the request
 * may still be read: the write-behind copies a WRITE's data after its
 * reply (wback.c), and handlers read the header after theirs.  So a
 * reply of up to RING_STASH bytes waits in the slot's header page past
 * the ring header and moves to the payload at release; a larger one
 * (READ data, listings, built in the payload's scratch after every name)
 * goes to the payload at once.  The out header is written at release.
 */
#define RING_STASH_OFF	512u
#define RING_STASH	(MQFS_SLOT_HDR - RING_STASH_OFF)

static void ring_gather(char *dst, const struct iovec *iov, int n)
{
	size_t len = 0;

	for (int i = 1; i < n; i++) {
		/* READ data and listings may be in place already. */
		if (iov[i].iov_base != dst + len)
			memmove(dst + len, iov[i].iov_base, iov[i].iov_len);
		len += iov[i].iov_len;
	}
}

int mqfs_ring_fill(struct mqfs_ring_ent *e, int err, struct iovec *iov, int n)
{
	size_t len = 0;

	if (e->replied)
		return -ENOENT;
	for (int i = 1; i < n; i++)
		len += iov[i].iov_len;
	if (len > MQFS_SLOT_PAYLOAD) {
		err = -EIO;		/* a handler's bug: never sent */
		n = 1;
		len = 0;
	}
	ring_gather(len <= RING_STASH ? e->r->mem + RING_STASH_OFF
				      : e->r->payload, iov, n);
	e->reply_err = err;
	e->reply_len = (uint32_t)len;
	e->replied = true;
	return 0;
}

/* The reply into its place: the request is no longer read. */
static void ring_place_reply(struct mqfs_ring_ent *e)
{
	struct fuse_out_header *oh = (void *)e->hdr->in_out;

	if (e->reply_len && e->reply_len <= RING_STASH)
		memcpy(e->r->payload, e->r->mem + RING_STASH_OFF, e->reply_len);
	*oh = (struct fuse_out_header){ .len = (uint32_t)sizeof(*oh) +
					       e->reply_len,
					.error = e->reply_err,
					.unique = e->unique };
	e->hdr->ring_ent_in_out.payload_sz = e->reply_len;
}

void mqfs_ring_release(struct mqfs_ring_ent *e)
{
	struct mqfs_ring_queue *q = e->q;
	struct mqfs_ring_ent *head = atomic_load(&q->pending);

	if (!e->replied) {
		/* Every request needs a commit, or the entry is lost. */
		fprintf(stderr, "mqfs: fuse: ring %u: request %" PRIu64
			" ended without a reply: EIO\n", q->qid, e->unique);
		mqfs_ring_fill(e, -EIO, NULL, 1);
	}
	ring_place_reply(e);
	do {
		e->next = head;
	} while (!atomic_compare_exchange_weak(&q->pending, &head, e));
	/*
	 * Sleeping after the push: the thread looked at the stack for the
	 * last time before it said so (ring_loop), so this commit is ours.
	 */
	if (atomic_load(&q->sleeping)) {
		pthread_mutex_lock(&q->sq_lock);
		if (atomic_load(&q->pending)) {
			ring_take_pending(q);
			io_uring_submit(&q->ring);
			atomic_fetch_add(&q->enters, 1);
			atomic_fetch_add(&q->direct, 1);
		}
		pthread_mutex_unlock(&q->sq_lock);
	}
}

/* ---- the ring thread ----------------------------------------------------------- */

static void ring_serve(struct mqfs_ring_ent *e)
{
	struct mqfs_rings *rs = e->q->rs;
	struct mqfs_req *r = e->r;
	int err;

	e->replied = false;
	e->unique = e->hdr->ring_ent_in_out.commit_id;
	if (e->qid != e->q->qid)
		atomic_fetch_add(&rs->queues[e->qid].overflowed, 1);
	r->d = rs->d;
	r->fd = rs->fuse_fd;		/* notifications go to /dev/fuse */
	err = mqfs_fuse_decode_ring(e->hdr, r->payload, MQFS_SLOT_PAYLOAD,
				    &r->m);
	if (mqfs_engine_serve(r, err, r->m.h->len))
		mqfs_ring_release(e);
}

/* Report this queue's registration to mqfs_rings_start. */
static void ring_report(struct mqfs_ring_queue *q, int err)
{
	struct mqfs_rings *rs = q->rs;

	pthread_mutex_lock(&rs->lock);
	if (q->reported) {
		pthread_mutex_unlock(&rs->lock);
		return;
	}
	q->reported = true;
	if (err && !rs->error) {
		rs->error = err;
		snprintf(rs->why, sizeof(rs->why), "queue %u: REGISTER: %s",
			 q->qid, strerror(-err));
	}
	rs->reported++;
	pthread_cond_broadcast(&rs->cond);
	pthread_mutex_unlock(&rs->lock);
}

/* A CQE that is not a request. */
static void ring_failed(struct mqfs_ring_queue *q, struct mqfs_ring_ent *e,
			int res)
{
	bool retry = res == -EAGAIN || res == -EINTR;

	if (retry && e->registering && e->retries++ < RING_MAX_RETRIES) {
		struct timespec ts = { 0, RING_RETRY_NS };

		nanosleep(&ts, NULL);
		pthread_mutex_lock(&q->sq_lock);
		ring_prep_cmd(q, e, MQFS_FUSE_URING_CMD_REGISTER);
		pthread_mutex_unlock(&q->sq_lock);
		return;
	}
	if (e->registering)
		ring_report(q, res);	/* the start says it, once */
	else if (res != -ENOTCONN && res != -ECONNABORTED &&
		 res != -ECANCELED && !atomic_load(&q->rs->stopping))
		fprintf(stderr, "mqfs: fuse: ring %u: COMMIT_AND_FETCH: %s\n",
			q->qid, strerror(-res));
}

/*
 * uring_doorbell (ring_doorbell.c): the device I/O of the request just
 * served goes now, not at the batch's end, and what the device has
 * completed meanwhile is reaped (its commits go at the next enter).
 */
static void ring_bell_now(struct mqfs_ring_queue *q)
{
	mq_uring_batch_end();
	ring_poll_device(q);
	mq_uring_batch_begin();
	atomic_fetch_add(&q->bell_requests, 1);
}

/*
 * Handle what the kernel completed; the number of requests.  Each request
 * runs under its own plug (engine.c), not the batch under one: a handler
 * may wait for I/O an earlier request of the batch left in the plug (a
 * read waiting for the read-ahead window the one before it started), and
 * the filesystem flushes the plug before only some of its waits.
 */
static unsigned ring_reap(struct mqfs_ring_queue *q)
{
	struct io_uring_cqe *cqe;
	unsigned head, n = 0, reqs = 0;

	io_uring_for_each_cqe(&q->ring, head, cqe) {
		n++;
		if (cqe->user_data == RING_WAKE_UD)
			continue;
		if (cqe->user_data == RING_POLL_UD) {
			q->poll_armed = false;	/* the loop polls, re-arms */
			continue;
		}
		if (cqe->res == 0) {
			reqs++;
			ring_serve(io_uring_cqe_get_data(cqe));
			if (q->bell.per_request && q->poll_index >= 0)
				ring_bell_now(q);
		} else {
			ring_failed(q, io_uring_cqe_get_data(cqe), cqe->res);
		}
	}
	io_uring_cq_advance(&q->ring, n);
	return reqs;
}

/* REGISTER entries [@first, @first + @n) in one submission. */
static int ring_register_ents(struct mqfs_ring_queue *q, unsigned first,
			      unsigned n)
{
	int ret;

	pthread_mutex_lock(&q->sq_lock);
	for (unsigned i = first; i < first + n; i++)
		ring_prep_cmd(q, &q->ents[i], MQFS_FUSE_URING_CMD_REGISTER);
	ret = io_uring_submit(&q->ring);
	pthread_mutex_unlock(&q->sq_lock);
	atomic_fetch_add(&q->enters, 1);
	return ret < 0 ? ret : 0;
}

/*
 * The kernel hands a request to the entry of its queue that became
 * available last (a stack).  Every thread registers its spill entries
 * (uring_spill) before any registers its own, so that each queue's own
 * entries lie above the others': a burst starts on the queue's own
 * thread.  Not a promise: every queue has an entry once the spill ones
 * are in, so a request that comes before the own ones may take a spill
 * entry, and from then on the order is the commits' (DESIGN.md section
 * 17).  A thread that never comes (a failed start) holds the others for
 * RING_START_MS at most.
 */
static void ring_spill_barrier(struct mqfs_ring_queue *q)
{
	struct mqfs_rings *rs = q->rs;
	struct timespec until = mqfs_deadline_ms(RING_START_MS);
	int err = 0;

	pthread_mutex_lock(&rs->lock);
	rs->spill_registered++;
	pthread_cond_broadcast(&rs->cond);
	while (!err && rs->spill_registered < rs->nr_queues &&
	       !atomic_load(&rs->stopping))
		err = pthread_cond_timedwait(&rs->cond, &rs->lock, &until);
	pthread_mutex_unlock(&rs->lock);
}

/*
 * Every entry registered: the spill entries, then the queue's own.  A
 * refused REGISTER fails inline, so its CQE is there when the submit
 * returns; none there means the kernel took them all (it keeps each until
 * a request comes).  The verdict comes from a look at the CQEs, before
 * any request that came at once is served (the loop serves them, and
 * retries an EAGAIN): a slow first request must not delay the start.  The
 * entries not refused count for their queue: one with none (its thread's
 * refused, and no spill entry of the others taken) can never become
 * ready, and then neither can the kernel's ring (mqfs_rings_start).
 */
static int ring_register(struct mqfs_ring_queue *q)
{
	struct mqfs_rings *rs = q->rs;
	struct io_uring_cqe *cqe;
	unsigned head;
	int ret = 0, err = 0;

	if (rs->nr_ents > rs->depth) {
		ret = ring_register_ents(q, rs->depth, rs->nr_ents - rs->depth);
		ring_spill_barrier(q);
	}
	if (atomic_load(&rs->stopping))
		return 0;		/* the mount is going: nothing counts */
	if (!ret)
		ret = ring_register_ents(q, 0, rs->depth);
	if (ret < 0)
		return ret;
	io_uring_for_each_cqe(&q->ring, head, cqe) {
		struct mqfs_ring_ent *e = io_uring_cqe_get_data(cqe);

		if (cqe->user_data == RING_WAKE_UD ||
		    cqe->user_data == RING_POLL_UD || !e->registering ||
		    cqe->res >= 0 || cqe->res == -EAGAIN || cqe->res == -EINTR)
			continue;
		e->refused = true;
		err = err ? err : cqe->res;
	}
	for (unsigned i = 0; i < rs->nr_ents; i++)
		if (!q->ents[i].refused)
			atomic_fetch_add(&rs->queues[q->ents[i].qid].registered,
					 1);
	return err;
}

/*
 * Make the prepared SQEs visible to the kernel (sq_lock held: another
 * thread may be filling the next one); how many it has not taken yet.
 * liburing's own flush, without its enter: that one happens after the
 * lock is dropped, together with the wait.
 */
static unsigned ring_publish(struct mqfs_ring_queue *q)
{
	struct io_uring_sq *sq = &q->ring.sq;
	unsigned tail = sq->sqe_tail;

	if (sq->sqe_head != tail) {
		sq->sqe_head = tail;
		io_uring_smp_store_release(sq->ktail, tail);
	}
	return tail - io_uring_smp_load_acquire(sq->khead);
}

/*
 * Submit what is published and, with @wait, sleep until a CQE comes: one
 * system call.  A thread that submitted meanwhile under the lock may have
 * taken ours already; the kernel submits what is there.
 */
static int ring_enter(struct mqfs_ring_queue *q, unsigned to_submit,
		      bool wait)
{
	long ret = syscall(__NR_io_uring_enter, q->ring.ring_fd, to_submit,
			   wait ? 1 : 0, wait ? IORING_ENTER_GETEVENTS : 0,
			   NULL, 0);

	atomic_fetch_add(&q->enters, 1);
	return ret < 0 ? -errno : 0;
}

/* The thread sleeps in the enter that ends the batch: its busy share. */
static int ring_enter_wait(struct mqfs_ring_queue *q, unsigned to_submit)
{
	struct mqfs_ring_bell *b = &q->bell;
	uint64_t windows = b->windows;
	int ret;

	mqfs_ring_bell_sleep(b, mq_clock_ns());
	ret = ring_enter(q, to_submit, true);
	if (mqfs_ring_bell_woke(b, mq_clock_ns()))
		atomic_store(&q->bell_eager, b->per_request);
	if (b->windows != windows) {
		atomic_store(&q->bell_windows, b->windows);
		atomic_store(&q->bell_eager_windows, b->eager_windows);
	}
	return ret;
}

/* Its name, and its CPUs as uring_pin= says (ring_pin.c). */
static void ring_place(struct mqfs_ring_queue *q)
{
	char name[16];

	snprintf(name, sizeof(name), "mqfs-ring%u", q->qid);
	pthread_setname_np(pthread_self(), name);
	mqfs_ring_place_init(&q->place, q->qid, q->rs->pin);
	atomic_store(&q->away, mqfs_ring_place_away(&q->place));
	mqfs_ring_bell_init(&q->bell, q->rs->doorbell, mq_clock_ns());
	atomic_store(&q->bell_eager, q->bell.per_request);
}

/* A batch was served: with uring_pin=auto, its load may move the thread. */
static void ring_replace(struct mqfs_ring_queue *q)
{
	uint64_t held = atomic_load(&q->requests) - atomic_load(&q->commits);

	if (!mqfs_ring_place_update(&q->place, held > UINT32_MAX ? UINT32_MAX
								 : (unsigned)held))
		return;
	atomic_fetch_add(&q->moves, 1);
	atomic_store(&q->away, mqfs_ring_place_away(&q->place));
}

static void ring_loop(struct mqfs_ring_queue *q)
{
	struct mqfs_rings *rs = q->rs;

	while (!atomic_load(&rs->stopping)) {
		struct io_uring_cqe *cqe;
		unsigned reqs, n;
		int ret;

		ring_poll_device(q);
		mq_uring_batch_end();	/* the device I/O of the batch, at once */
		pthread_mutex_lock(&q->sq_lock);
		ring_take_pending(q);
		ring_arm_poll(q);
		atomic_store(&q->sleeping, true);
		/* A push before the store above is seen here, one after it
		 * sees the store (mqfs_ring_release). */
		ring_take_pending(q);
		n = ring_publish(q);
		pthread_mutex_unlock(&q->sq_lock);
		/* Runs pending task work too (COOP_TASKRUN): it may post. */
		ret = io_uring_peek_cqe(&q->ring, &cqe);
		if (ret)
			ret = ring_enter_wait(q, n);
		else if (n)
			ret = ring_enter(q, n, false);
		atomic_store(&q->sleeping, false);
		if (ret < 0 && ret != -EINTR && ret != -EAGAIN &&
		    ret != -EBUSY) {
			/* Its queue's callers would wait for ever: unmount. */
			fprintf(stderr, "mqfs: fuse: ring %u: io_uring_enter: "
				"%s: unmounting\n", q->qid, strerror(-ret));
			mqfs_engine_fail(&rs->d->eng, ret);
			break;
		}
		mq_uring_batch_begin();
		reqs = ring_reap(q);
		if (reqs) {
			atomic_fetch_add(&q->requests, reqs);
			atomic_fetch_add(&q->batches, 1);
			ring_replace(q);
		}
	}
	mq_uring_batch_end();
	pthread_mutex_lock(&q->sq_lock);
	ring_take_pending(q);		/* the kernel refuses them: ENOTCONN */
	io_uring_submit(&q->ring);
	pthread_mutex_unlock(&q->sq_lock);
}

void *mqfs_ring_thread(void *arg)
{
	struct mqfs_ring_queue *q = arg;
	struct mqfs_rings *rs = q->rs;
	int err;

	ring_place(q);
	pthread_mutex_lock(&rs->lock);
	while (!rs->go && !atomic_load(&rs->stopping))
		pthread_cond_wait(&rs->cond, &rs->lock);
	pthread_mutex_unlock(&rs->lock);
	if (atomic_load(&rs->stopping))
		return NULL;
	ring_poll_setup(q);		/* before any request can come */
	err = ring_register(q);
	ring_report(q, err);
	ring_loop(q);
	return NULL;
}
