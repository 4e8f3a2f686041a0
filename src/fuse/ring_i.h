/* SPDX-License-Identifier: MIT */
/*
 * ring_i.h - what the FUSE-over-io_uring transport's files share
 * (ring.c: a ring thread's serving loop, replies and release;
 * ring_setup.c: what the kernel offers, and setting the rings up and
 * down): an entry, a queue, and the two calls between them.
 */
#ifndef MQFS_FUSE_RING_I_H
#define MQFS_FUSE_RING_I_H

#include <liburing.h>
#include <pthread.h>

#include "fuse_i.h"

#define RING_PARAM	"/sys/module/fuse/parameters/enable_uring"
#define RING_CPUS	"/sys/devices/system/cpu/possible"
/* The CQE of mqfs_rings_stop's NOP, not an entry's. */
#define RING_WAKE_UD	UINT64_MAX
/* The CQE of the read of the device poll queue's eventfd. */
#define RING_POLL_UD	(UINT64_MAX - 1)
/* How long mqfs_rings_start waits for every queue to register. */
#define RING_START_MS	5000
/* A REGISTER the kernel refused for now (EAGAIN) is retried this often. */
#define RING_RETRY_NS	(1000 * 1000)
#define RING_MAX_RETRIES 2000

struct mqfs_ring_ent {
	struct mqfs_ring_queue *q;
	struct mqfs_req *r;		/* its slot */
	struct mqfs_fuse_uring_req_header *hdr;	/* = r->mem */
	struct iovec iov[2];		/* header, payload: REGISTER's */
	uint16_t qid;			/* the kernel's queue it serves */
	bool registering;		/* its SQE is a REGISTER */
	bool refused;			/* its REGISTER failed */
	unsigned retries;
	bool replied;			/* mqfs_ring_fill ran */
	int reply_err;
	uint32_t reply_len;
	uint64_t unique;		/* the request's (its commit id) */
	struct mqfs_ring_ent *next;	/* on the pending stack */
};

struct mqfs_ring_queue {
	struct mqfs_rings *rs;
	unsigned qid;
	bool ring_ok, thread_ok, lock_ok;
	bool reported;			/* to mqfs_rings_start, under rs->lock */
	/* Entries the kernel holds for this queue, whichever thread's. */
	atomic_uint registered;
	struct io_uring ring;
	pthread_t thread;
	struct mqfs_ring_ent *ents;
	pthread_mutex_t sq_lock;	/* the SQ: prepare and submit only */
	_Atomic(struct mqfs_ring_ent *) pending;
	atomic_bool sleeping;		/* waits in io_uring_enter */
	/* The device poll queue this thread reaps (uring_reap=ring). */
	int poll_index;			/* -1: none, the reapers do */
	int poll_fd;			/* readable: it has completions */
	uint64_t poll_count;		/* the eventfd read's buffer */
	bool poll_armed;		/* that read is queued */
	atomic_uint_fast64_t requests, enters, commits, batches, direct;
	/* Requests of this queue that other threads' spill entries took. */
	atomic_uint_fast64_t overflowed;
	atomic_uint_fast64_t dev_reaps, dev_reaped;
	struct mqfs_ring_place place;	/* the thread's only */
	atomic_uint_fast64_t moves;
	atomic_bool away;		/* placed off CPU qid */
	struct mqfs_ring_bell bell;	/* the thread's only */
	atomic_uint_fast64_t bell_requests, bell_windows, bell_eager_windows;
	atomic_bool bell_eager;		/* bell.per_request, for the stats */
};

/* ring.c */
/* The next SQE of @q's ring (its SQ lock held, or the thread alone). */
struct io_uring_sqe *mqfs_ring_sqe(struct mqfs_ring_queue *q);
/* The ring thread of queue @arg: registers, then serves until stopped. */
void *mqfs_ring_thread(void *arg);

#endif /* MQFS_FUSE_RING_I_H */
