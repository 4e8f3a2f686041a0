/* SPDX-License-Identifier: MIT */
/*
 * stress_fixture.h - what the files of test_stress share: the shape of a
 * run (workers, their bios, the controller's state), the PRNG, and the
 * functions each file offers the others.  test_stress.c builds, watches
 * and checks a run; stress_worker.c is the submitting threads,
 * stress_ctl.c the controller thread.
 */
#ifndef MQFS_TESTS_STRESS_FIXTURE_H
#define MQFS_TESTS_STRESS_FIXTURE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "blk_i.h"
#include "mqfs/mq_dev.h"

#define NR_WORKERS	4
#define WINDOW		24		/* bios in flight per thread */
#define MAX_BATCH	16		/* bios per plug */
#define MAX_SECTS	128		/* 64 KiB */
#define NULL_REGION	(1ull << 21)	/* sectors per thread: 1 GiB */
#define RAM_REGION	8192u		/* sectors per thread: 4 MiB */

/* One bio of a worker, with what the worker needs to check it. */
struct sbio {
	struct mq_bio bio;
	atomic_int done;
	int status;
	struct sbio *next_done;
	uint64_t rel;			/* first sector inside the region */
	uint32_t nsect;
	uint8_t op;
};

struct run;

struct worker {
	struct run *run;
	unsigned id;
	pthread_t thr;
	uint64_t rng;
	struct sbio *bios;
	unsigned nr_bios, nr_random, issued, reaped;
	uint64_t base, cursor;		/* region start, sequential cursor */
	uint32_t seq;			/* last write sequence used */
	uint32_t *sect_seq;		/* ram: sequence of each sector, 0 zero */
	uint8_t *busy;			/* ram: sector has an op in flight */
	pthread_mutex_t lock;		/* done_list */
	pthread_cond_t cond;
	struct sbio *done_list;
};

struct run {
	uint64_t seed;
	bool ram;
	struct mq_dev *dev;
	struct mq_queue *q;
	unsigned latency_us, depth, hw_queues;
	struct worker w[NR_WORKERS];
	pthread_t ctl;
	uint64_t ctl_rng;
	atomic_bool stop;
	atomic_uint workers_done;
	atomic_ulong submitted, completed;
	atomic_ulong switches, tunes;
	atomic_int ctl_phase;		/* 0 idle, 1 switching, 2 tuning */
	pthread_mutex_t err_lock;
	unsigned long nerr;
	char err[512];
};

static inline uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline unsigned rnd_range(uint64_t *s, unsigned lo,
				 unsigned hi)
{
	return lo + (unsigned)(rnd(s) % (hi - lo + 1));
}

static inline void sleep_us(unsigned us)
{
	struct timespec ts = { .tv_sec = us / 1000000,
			       .tv_nsec = (long)(us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

/* test_stress.c: the first error of a run is kept, the rest counted. */
void run_error(struct run *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
unsigned long run_nerr(struct run *r);

/* stress_worker.c: a submitting thread and the content it expects. */
void worker_init(struct run *r, struct worker *w, unsigned id,
		 unsigned nr_random);
void worker_free(struct worker *w);
void *worker_main(void *p);
int pat_check(const void *data, unsigned tid, uint32_t seq, uint64_t sector);

/* stress_ctl.c: elevator switches and tunables while the workers run. */
void *controller_main(void *p);

#endif /* MQFS_TESTS_STRESS_FIXTURE_H */
