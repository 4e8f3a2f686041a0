/* SPDX-License-Identifier: MIT */
/*
 * thread_stats.h - context switches of one thread, the figure the
 * completion-batching debate was decided on.
 */
#ifndef MQFS_THREAD_STATS_H
#define MQFS_THREAD_STATS_H

#include <stdint.h>
#include <sys/types.h>

/* The calling thread's id, for mq_thread_cs(). */
pid_t mq_thread_id(void);
/* Voluntary + involuntary switches of thread @tid of this process
 * (from /proc; 0 when unreadable or @tid is 0). */
uint64_t mq_thread_cs(pid_t tid);

#endif /* MQFS_THREAD_STATS_H */
