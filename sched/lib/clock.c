/* SPDX-License-Identifier: MIT */
/*
 * clock.c - the fake clock behind mq_clock_ns() for deterministic tests.
 */
#include "mqfs/clock.h"

atomic_bool mq_clock_is_fake;
_Atomic uint64_t mq_clock_fake_ns;

void mq_clock_fake_start(uint64_t ns)
{
	atomic_store(&mq_clock_fake_ns, ns);
	atomic_store(&mq_clock_is_fake, true);
}

void mq_clock_fake_advance(uint64_t delta_ns)
{
	atomic_fetch_add(&mq_clock_fake_ns, delta_ns);
}

void mq_clock_fake_stop(void)
{
	atomic_store(&mq_clock_is_fake, false);
}
