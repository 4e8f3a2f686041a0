/* SPDX-License-Identifier: MIT */
/*
 * hist.c - latency histogram for mqfs-bench: log-linear buckets (16 per
 * power of two, so a reported percentile is within 1/16 of the truth),
 * updated with relaxed atomics because completions run on any thread.
 */
#include "bench_i.h"
#include "mqfs/loghist.h"

static unsigned hist_index(uint64_t v)
{
	return mq_loghist_index(v, HIST_SUB_BITS);
}

/* A bucket's middle, as mqfs-load and fio report it. */
static uint64_t hist_value(unsigned idx)
{
	return mq_loghist_value(idx, HIST_SUB_BITS);
}

void hist_add(struct bench_hist *h, uint64_t ns)
{
	unsigned i = hist_index(ns);

	if (i >= HIST_BUCKETS)
		i = HIST_BUCKETS - 1;
	atomic_fetch_add_explicit(&h->b[i], 1, memory_order_relaxed);
}

void hist_merge(struct bench_hist *to, const struct bench_hist *from)
{
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		to->b[i] += atomic_load(&from->b[i]);
}

uint64_t hist_count(const struct bench_hist *h)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		n += atomic_load(&h->b[i]);
	return n;
}

uint64_t hist_percentile(const struct bench_hist *h, double pct)
{
	uint64_t total = hist_count(h), seen = 0;
	uint64_t want = (uint64_t)((double)total * pct / 100.0);

	if (!total)
		return 0;
	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		seen += atomic_load(&h->b[i]);
		if (seen > want || seen == total)
			return hist_value(i);
	}
	return hist_value(HIST_BUCKETS - 1);
}

double hist_mean(const struct bench_hist *h)
{
	double sum = 0;
	uint64_t n = 0;

	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		uint64_t c = atomic_load(&h->b[i]);

		sum += (double)c * (double)hist_value(i);
		n += c;
	}
	return n ? sum / (double)n : 0;
}
