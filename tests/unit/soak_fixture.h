/* SPDX-License-Identifier: MIT */
/*
 * soak_fixture.h - what the files of test_soak share: the geometry of a
 * round, its structures (the stack of devices, the threads and their
 * bios, the controller's state), the PRNG, and the functions each file
 * offers the others.  test_soak.c holds the environment (io_uring
 * hooks, temp directory, knobs), the test and main; soak_stack.c builds
 * and frees a round's stack; soak_io.c is the submitting threads;
 * soak_ctl.c the controller; soak_check.c runs a round, watches it and
 * checks its balance.
 */
#ifndef MQFS_TESTS_SOAK_FIXTURE_H
#define MQFS_TESTS_SOAK_FIXTURE_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "blk_i.h"
#include "mqfs/mq_dev.h"
#include "mqfs/dev/fault.h"

#define NR_THREADS	4
#define DEV_BYTES	(64ull << 20)
#define DEV_SECT	(DEV_BYTES >> MQ_SECTOR_SHIFT)
#define BLK		4096u			/* I/O granule and alignment */
#define BLK_SECT	(BLK >> MQ_SECTOR_SHIFT)
#define REGION_SECT	(DEV_SECT / NR_THREADS)
#define REGION_BLKS	(REGION_SECT / BLK_SECT)
#define MAX_BLKS	16u			/* 64 KiB */
#define MAX_BYTES	(MAX_BLKS * BLK)
#define MAX_WINDOW	32u			/* bios in flight per thread */
#define MAX_LAYERS	5			/* fault devices in a stack */
#define STALL_NS	(30ull * 1000000000ull)
#define SEC_NS		1000000000ull
#define OPBIT(op)	(1u << (op))

/* test_soak.c: ring-full conditions seen by the liburing hooks. */
extern atomic_ulong g_sq_full;		/* submits with a full SQ ring */
extern atomic_ulong g_ring_busy;	/* submits refused: -EBUSY/-EAGAIN */
extern atomic_ulong g_cq_overflow;	/* reaps that saw CQ overflow */

/* test_soak.c: the environment. */
extern bool g_uring_ok;			/* io_uring usable, O_DIRECT dir made */
extern bool g_sqpoll_ok;
extern char g_dir[PATH_MAX / 2];
extern char g_file[PATH_MAX];		/* exists between create and unlink */

/* -1: both kinds; 0: ram only; 1: io_uring only (when usable). */
int soak_lower_choice(void);

static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static inline uint64_t rnd(uint64_t *s)
{
	*s += 0x9e3779b97f4a7c15ull;
	return mix64(*s);
}

/* Uniform in [lo, hi]. */
static inline unsigned rnd_range(uint64_t *s, unsigned lo,
				 unsigned hi)
{
	return lo + (unsigned)(rnd(s) % ((uint64_t)hi - lo + 1));
}

static inline bool rnd_pct(uint64_t *s, unsigned pct)
{
	return rnd(s) % 100 < pct;
}

static inline void sleep_us(unsigned us)
{
	struct timespec ts = { .tv_sec = us / 1000000,
			       .tv_nsec = (long)(us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

/* A queue_rq wrapper on a device (soak_stack.c): its queue, the answers. */
struct spy {
	struct mq_dev *dev;
	const struct mq_dev_ops *orig;
	struct mq_dev_ops ops;
	_Atomic(struct mq_queue *) q;
	atomic_bool foreign;		/* called for a second queue */
	atomic_ulong accepted, busy, failed;
};

/* ---- the round ---------------------------------------------------------- */

struct soak_round;

enum { SIO_FREE = 0, SIO_INFLIGHT, SIO_DONE };

/* One slot of a thread's window: the bio and what it must end with. */
struct sio {
	struct mq_bio bio;
	struct soak_thread *t;
	_Atomic int state;
	int status;			/* seen by end_io */
	int expect;			/* 0 or -EIO */
	unsigned stop;			/* layer failing it; nr_layers: none */
	uint8_t op;
	uint32_t blk, nblk;		/* region-relative 4 KiB blocks */
	uint32_t seq;			/* writes */
	uint64_t nr;			/* issue number in the thread */
	unsigned char *buf;		/* MAX_BYTES, 4 KiB aligned, owned */
	struct sio *next_done;
};

struct soak_thread {
	struct soak_round *r;
	unsigned id;
	pthread_t thr;
	uint64_t rng;
	uint64_t base;			/* first sector of the region */
	uint64_t cursor;		/* sequential stream, blocks */
	struct sio slots[MAX_WINDOW];
	unsigned free_idx[MAX_WINDOW], nr_free;
	uint32_t seq;
	uint32_t *shadow;		/* per sector: seq written, 0 zeroes */
	uint8_t *busy;			/* per block: an op in flight */
	pthread_mutex_t lock;		/* done_list */
	pthread_cond_t cond;
	struct sio *done_list;
	/* Counters, this thread only. */
	uint64_t issued, reaped;
	uint64_t ops[3];		/* read, write, flush */
	uint64_t stop_dir[MAX_LAYERS + 1][MQ_DIR_COUNT];
	uint64_t verified;		/* sectors compared by reads */
};

struct layer {
	struct mq_fault_config cfg;
	struct mq_dev *dev;
	struct spy spy;			/* sees the queue of the layer above */
};

struct soak_round {
	unsigned index;
	uint64_t seed, prng;
	uint64_t end_ns;		/* random I/O stops */
	unsigned ms;
	/* lower device */
	bool uring, sqpoll, fixed;
	unsigned ring, lower_tags;
	struct mq_dev *lower;
	struct spy lower_spy;
	int verify_fd;
	char path[PATH_MAX];
	/* fault layers, [0] under the top queue */
	unsigned nr_layers;
	struct layer layers[MAX_LAYERS];
	/* top queue */
	struct mq_queue *q;
	struct mq_queue_config qcfg;
	/* workload */
	unsigned window, flush_pct, write_pct, fua_pct, task_pct, plug_pct;
	unsigned near_pct, seq_pct, sync_pct;
	unsigned char *bufs;
	struct soak_thread t[NR_THREADS];
	/* controller */
	pthread_t ctl;
	uint64_t ctl_rng;
	atomic_bool stop;
	atomic_int ctl_phase;
	atomic_ulong switches, tunes, freezes;
	/* progress */
	atomic_uint threads_done;
	atomic_ulong completed;
	unsigned long ring0[3];		/* sq_full, ring_busy, cq_overflow */
	pthread_mutex_t err_lock;
	unsigned long nerr;
	char err[1024];
};

struct soak_totals {
	unsigned rounds, uring_rounds;
	uint64_t ios, injected, switches, tunes, freezes, busy;
	uint64_t ring[3];		/* sq_full, ring_busy, cq_overflow */
	uint64_t verified;
};

/* soak_stack.c: a round's stack, its queues, its first error. */
struct soak_round *round_new(unsigned index, uint64_t seed, uint64_t max_ms);
void round_free(struct soak_round *r);
const char *lower_name(const struct soak_round *r);
struct mq_queue *round_queue(struct soak_round *r, unsigned j);
struct spy *round_spy(struct soak_round *r, unsigned j);
void round_error(struct soak_round *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
unsigned long round_nerr(struct soak_round *r);

/* soak_io.c: the submitting threads, the data and the expected status. */
void *thread_main(void *p);
int pat_check(const void *data, uint64_t rseed, unsigned tid, uint32_t seq,
	      uint64_t sector);
void pat_describe(const void *data, char *out, size_t len);
unsigned stop_layer(const struct soak_round *r, unsigned op, uint64_t sector,
		    uint64_t end);

/* soak_ctl.c: the controller thread. */
void *ctl_main(void *p);
void check_deadline_balance(struct soak_round *r, struct mq_queue *q,
			    unsigned j, bool async);

/* soak_check.c: one round run, checked and printed, added to @tot. */
void round_one(unsigned index, uint64_t seed, uint64_t max_ms,
	       struct soak_totals *tot);

#endif /* MQFS_TESTS_SOAK_FIXTURE_H */
