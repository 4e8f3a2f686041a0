/* SPDX-License-Identifier: MIT */
/*
 * kthread.c - the service threads' start, stop, kick and sleep (see
 * mqfs/kthread.h): the queue and completion workers, the null and fault
 * devices' threads, the journal's commit thread and the write-behind
 * flusher all run on it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "mqfs/kthread.h"

#include <errno.h>
#include <stdio.h>
#include <time.h>

void mq_kthread_init(struct mq_kthread *kt)
{
	pthread_condattr_t ca;

	*kt = (struct mq_kthread){ 0 };
	pthread_mutex_init(&kt->lock, NULL);
	/* Deadlines must not jump with the wall clock. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&kt->cond, &ca);
	pthread_condattr_destroy(&ca);
}

int mq_kthread_start(struct mq_kthread *kt, const char *name,
		     void *(*fn)(void *), void *arg)
{
	char comm[16];
	int ret = pthread_create(&kt->thread, NULL, fn, arg);

	if (ret)
		return -ret;
	kt->running = true;
	/* A label for top -H and gdb only: a refusal changes nothing. */
	snprintf(comm, sizeof(comm), "%s", name);
	pthread_setname_np(kt->thread, comm);
	return 0;
}

void mq_kthread_stop(struct mq_kthread *kt)
{
	if (kt->running) {
		mq_kthread_lock(kt);
		kt->stop = true;
		pthread_cond_signal(&kt->cond);
		mq_kthread_unlock(kt);
		pthread_join(kt->thread, NULL);
		kt->running = false;
	}
	pthread_cond_destroy(&kt->cond);
	pthread_mutex_destroy(&kt->lock);
}

void mq_kthread_kick_locked(struct mq_kthread *kt)
{
	kt->kicked = true;
	pthread_cond_signal(&kt->cond);
}

void mq_kthread_kick(struct mq_kthread *kt)
{
	mq_kthread_lock(kt);
	mq_kthread_kick_locked(kt);
	mq_kthread_unlock(kt);
}

bool mq_kthread_wait_locked(struct mq_kthread *kt, uint64_t deadline_ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(deadline_ns / 1000000000ull),
		.tv_nsec = (long)(deadline_ns % 1000000000ull),
	};

	while (!kt->kicked && !kt->stop) {
		if (!deadline_ns)
			pthread_cond_wait(&kt->cond, &kt->lock);
		else if (pthread_cond_timedwait(&kt->cond, &kt->lock, &ts) ==
			 ETIMEDOUT)
			break;
	}
	kt->kicked = false;
	return !kt->stop;
}

bool mq_kthread_wait(struct mq_kthread *kt, uint64_t deadline_ns)
{
	bool run;

	mq_kthread_lock(kt);
	run = mq_kthread_wait_locked(kt, deadline_ns);
	mq_kthread_unlock(kt);
	return run;
}
