/* SPDX-License-Identifier: MIT */
/*
 * kthread.h - one service thread with its sleep and its kick, after the
 * kernel's kthread_run()/kthread_stop() and a wait_event with a timeout.
 *
 * The thread sleeps in mq_kthread_wait_locked() until it is kicked, a
 * deadline passes or it is told to stop.  A kick stays pending until the
 * next wait returns, so one sent while the thread was busy is never lost,
 * whatever lock guards the state that caused it.  The thread's owner may
 * keep that state under the helper's own mutex (mq_kthread_lock()) and
 * then kick with mq_kthread_kick_locked(); otherwise the mutex is a leaf,
 * held only for the flags.
 */
#ifndef MQFS_KTHREAD_H
#define MQFS_KTHREAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct mq_kthread {
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* CLOCK_MONOTONIC */
	bool stop, kicked;		/* under @lock */
	bool running;			/* started, not yet stopped */
	pthread_t thread;
};

/* The mutex and condition, no thread yet: state under @lock may be used. */
void mq_kthread_init(struct mq_kthread *kt);
/*
 * Run @fn(@arg) on a new thread named @name (15 characters kept): 0 or
 * -errno.  On failure @kt stays initialised; mq_kthread_stop() frees it.
 */
int mq_kthread_start(struct mq_kthread *kt, const char *name,
		     void *(*fn)(void *), void *arg);
/* Tell the thread to stop and join it (if started), then free @kt. */
void mq_kthread_stop(struct mq_kthread *kt);

void mq_kthread_kick(struct mq_kthread *kt);
void mq_kthread_kick_locked(struct mq_kthread *kt);
/*
 * Sleep until kicked, @deadline_ns (CLOCK_MONOTONIC ns; 0: none) or told
 * to stop, with @kt's lock held; consumes the kick.  False: stop.
 */
bool mq_kthread_wait_locked(struct mq_kthread *kt, uint64_t deadline_ns);
/* The same for a thread that keeps no state under @kt's lock. */
bool mq_kthread_wait(struct mq_kthread *kt, uint64_t deadline_ns);

static inline void mq_kthread_lock(struct mq_kthread *kt)
{
	pthread_mutex_lock(&kt->lock);
}

static inline void mq_kthread_unlock(struct mq_kthread *kt)
{
	pthread_mutex_unlock(&kt->lock);
}

static inline bool mq_kthread_should_stop_locked(const struct mq_kthread *kt)
{
	return kt->stop;
}

#endif /* MQFS_KTHREAD_H */
