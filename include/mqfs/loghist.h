/* SPDX-License-Identifier: MIT */
/*
 * loghist.h - the bucket index of a log-linear histogram (2^sub_bits
 * buckets per power of two, exact below 2^sub_bits), shared by the
 * latency histograms of mqfs-bench and mqfs-load.
 */
#ifndef MQFS_LOGHIST_H
#define MQFS_LOGHIST_H

#include <stdint.h>

static inline unsigned mq_loghist_index(uint64_t v, unsigned sub_bits)
{
	unsigned msb, sub;

	if (v < (1u << sub_bits))
		return (unsigned)v;
	msb = 63u - (unsigned)__builtin_clzll(v);
	sub = (unsigned)(v >> (msb - sub_bits)) & ((1u << sub_bits) - 1);
	return ((msb - sub_bits + 1) << sub_bits) + sub;
}

#endif /* MQFS_LOGHIST_H */
