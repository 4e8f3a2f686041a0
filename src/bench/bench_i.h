/* SPDX-License-Identifier: MIT */
/*
 * bench_i.h - mqfs-bench, a fio-like driver of the block layer: options,
 * latency histograms and the per-job state.
 */
#ifndef MQFS_BENCH_I_H
#define MQFS_BENCH_I_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include "mqfs/blk.h"

enum bench_rw {
	BENCH_READ, BENCH_WRITE, BENCH_RANDREAD, BENCH_RANDWRITE, BENCH_RANDRW,
};

struct bench_opts {
	const char *dev;		/* null | ram | a path (io_uring) */
	uint64_t dev_lat_us;
	unsigned dev_qd;
	const char *sched;
	enum bench_rw rw;
	unsigned rwmixread;		/* percent reads for randrw */
	uint32_t bs;
	unsigned qd;
	unsigned jobs;
	double runtime;			/* seconds */
	uint64_t size;			/* bytes of the device to use */
	unsigned plug;			/* bios per plug, 0 = unplugged */
	unsigned nr_hw_queues;
	unsigned nr_requests;
	unsigned queue_depth;
	bool json;
	bool eager_dispatch, async_run, single_tag, nomerges;
	uint64_t seed;
	bool sqpoll;
	bool iopoll;
	bool poll;			/* caller-reaped rings, jobs poll */
	bool fixedbufs;
	bool complete_in_task;
	unsigned complete_delay_us;
};

int bench_parse_opts(int argc, char **argv, struct bench_opts *o);
const char *bench_rw_name(enum bench_rw rw);

/* Log-linear latency histogram: 16 buckets per power of two. */
#define HIST_SUB_BITS	4
#define HIST_BUCKETS	(64 << HIST_SUB_BITS)

struct bench_hist {
	_Atomic uint64_t b[HIST_BUCKETS];
};

void hist_add(struct bench_hist *h, uint64_t ns);
void hist_merge(struct bench_hist *to, const struct bench_hist *from);
uint64_t hist_count(const struct bench_hist *h);
/* Latency in ns below which @pct percent of samples fall. */
uint64_t hist_percentile(const struct bench_hist *h, double pct);
double hist_mean(const struct bench_hist *h);

struct bench_result {
	double elapsed_s;
	struct rusage ru0, ru1;
	struct bench_hist lat[MQ_DIR_COUNT], all;
	struct mq_queue_stats st;
	uint64_t errors;
};

/* Print the results as text or JSON; the exit status of the run. */
int bench_report(const struct bench_opts *o, const struct bench_result *r);

#endif /* MQFS_BENCH_I_H */
