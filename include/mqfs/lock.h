/* SPDX-License-Identifier: MIT */
/*
 * lock.h - how the block layer makes its short-hold locks.
 *
 * The elevator lock and the dispatch-list lock guard a few dozen
 * instructions, like the kernel's spinlocks.  A plain pthread mutex puts a
 * contended thread to sleep in the kernel (two context switches); the
 * adaptive kind spins briefly first, which is what a short hold wants.
 */
#ifndef MQFS_LOCK_H
#define MQFS_LOCK_H

#include <pthread.h>

static inline void mq_lock_init_short(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
	pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
}

#endif /* MQFS_LOCK_H */
