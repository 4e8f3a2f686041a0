/* SPDX-License-Identifier: MIT */
/*
 * clock.h - the block layer's clock: CLOCK_MONOTONIC in nanoseconds, or a
 * fake clock that tests set and advance so deadlines, FIFO expiry and
 * priority aging are deterministic.
 */
#ifndef MQFS_CLOCK_H
#define MQFS_CLOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include "mqfs/compiler.h"

extern atomic_bool mq_clock_is_fake;
extern _Atomic uint64_t mq_clock_fake_ns;

static inline uint64_t mq_clock_real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t mq_clock_ns(void)
{
	if (mq_unlikely(atomic_load_explicit(&mq_clock_is_fake,
					     memory_order_relaxed)))
		return atomic_load_explicit(&mq_clock_fake_ns,
					    memory_order_relaxed);
	return mq_clock_real_ns();
}

/*
 * A clock as cheap as jiffies (CLOCK_MONOTONIC_COARSE: one tick, 1-4 ms):
 * for deadlines that are soft anyway, read on every request.
 */
static inline uint64_t mq_clock_coarse_ns(void)
{
	struct timespec ts;

	if (mq_unlikely(atomic_load_explicit(&mq_clock_is_fake,
					     memory_order_relaxed)))
		return atomic_load_explicit(&mq_clock_fake_ns,
					    memory_order_relaxed);
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Tests only: switch to the fake clock at @ns, and move it forward. */
void mq_clock_fake_start(uint64_t ns);
void mq_clock_fake_advance(uint64_t delta_ns);
void mq_clock_fake_stop(void);

#endif /* MQFS_CLOCK_H */
