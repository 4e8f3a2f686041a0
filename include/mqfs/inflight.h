/* SPDX-License-Identifier: MIT */
/*
 * inflight.h - a count of operations in flight that someone may wait to
 * see drain, without a lock on the way in or out.
 *
 * The waiter announces itself before it looks at the count; the last
 * operation drops the count before it looks for waiters (both seq_cst):
 * one of them sees the other, and the wake-up is taken under the lock
 * the waiter sleeps on, so it cannot be lost.  Used for an inode's
 * unlocked data I/O (truncate waits) and the FUSE engine's asynchronous
 * requests (teardown waits).
 *
 * Lifetime: the last mq_inflight_dec may still be taking the lock after
 * a waiter has seen the count at 0, so the struct may be destroyed only
 * once every thread that decrements it is done (an inode's I/O ends
 * before its reply; the engine's is destroyed after the device's reaper
 * threads are joined).
 */
#ifndef MQFS_INFLIGHT_H
#define MQFS_INFLIGHT_H

#include <pthread.h>
#include <stdatomic.h>
#include "mqfs/compiler.h"

struct mq_inflight {
	atomic_uint count;
	atomic_uint waiters;
	pthread_mutex_t lock;		/* only to sleep */
	pthread_cond_t cond;
};

static inline void mq_inflight_init(struct mq_inflight *f)
{
	atomic_init(&f->count, 0);
	atomic_init(&f->waiters, 0);
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cond, NULL);
}

static inline void mq_inflight_destroy(struct mq_inflight *f)
{
	pthread_cond_destroy(&f->cond);
	pthread_mutex_destroy(&f->lock);
}

static inline unsigned mq_inflight_count(struct mq_inflight *f)
{
	return atomic_load(&f->count);
}

static inline void mq_inflight_inc(struct mq_inflight *f)
{
	atomic_fetch_add(&f->count, 1);
}

static inline void mq_inflight_dec(struct mq_inflight *f)
{
	unsigned old = atomic_fetch_sub(&f->count, 1);

	MQ_ASSERT(old > 0);
	if (old == 1 && atomic_load(&f->waiters)) {
		pthread_mutex_lock(&f->lock);
		pthread_cond_broadcast(&f->cond);
		pthread_mutex_unlock(&f->lock);
	}
}

/* Until the count is 0. */
static inline void mq_inflight_wait(struct mq_inflight *f)
{
	if (!atomic_load(&f->count))
		return;
	pthread_mutex_lock(&f->lock);
	atomic_fetch_add(&f->waiters, 1);
	while (atomic_load(&f->count))
		pthread_cond_wait(&f->cond, &f->lock);
	atomic_fetch_sub(&f->waiters, 1);
	pthread_mutex_unlock(&f->lock);
}

#endif /* MQFS_INFLIGHT_H */
