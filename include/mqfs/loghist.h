/* SPDX-License-Identifier: MIT */
/*
 * loghist.h - a log-linear histogram's buckets (2^sub_bits per power of
 * two, exact below 2^sub_bits): the index of a value and the value a
 * bucket reports, shared by the latency histograms of mqfs-bench and
 * mqfs-load so that their percentiles mean the same thing.
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

/*
 * The value bucket @idx reports: its middle, as fio's plat_idx_to_val()
 * does, so a percentile is off by at most half a bucket (1/32 at
 * sub_bits 4) and compares with fio's.
 */
static inline uint64_t mq_loghist_value(unsigned idx, unsigned sub_bits)
{
	unsigned grp = idx >> sub_bits, sub = idx & ((1u << sub_bits) - 1);
	unsigned shift;

	if (grp == 0)
		return sub;
	shift = grp - 1;
	return (((uint64_t)1 << sub_bits) + sub) << shift |
	       ((1ull << shift) >> 1);
}

#endif /* MQFS_LOGHIST_H */
