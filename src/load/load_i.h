/* SPDX-License-Identifier: MIT */
/*
 * load_i.h - mqfs-load, a small fio-like load generator on plain files:
 * psync (pwritev2/preadv2) or io_uring, buffered, O_DIRECT or
 * RWF_DONTCACHE.  It needs nothing of libmqfs: it measures the kernel's
 * own filesystems (ext4's RWF_DONTCACHE) beside a mounted mqfs.
 */
#ifndef MQFS_LOAD_I_H
#define MQFS_LOAD_I_H

#include <limits.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <pthread.h>
#include <liburing.h>

/*
 * Uncached buffered I/O (Linux 6.14, commit af6505e5745b: "fs: add
 * RWF_DONTCACHE iocb and FOP_DONTCACHE file_operations flag"); glibc
 * 2.36's headers lack it.
 */
#ifndef RWF_DONTCACHE
#define RWF_DONTCACHE	0x00000080
#endif

/* Exit statuses: 1 a failed run, 2 a usage error or an unsupported flag. */
#define LOAD_EXIT_FAIL	1
#define LOAD_EXIT_USAGE	2

enum load_mode { LOAD_WRITE, LOAD_READ, LOAD_RANDWRITE, LOAD_RANDREAD, LOAD_RW };
enum load_engine { LOAD_PSYNC, LOAD_URING };
enum load_flags { LOAD_BUFFERED, LOAD_DONTCACHE, LOAD_DIRECT };

struct load_opts {
	const char *file;
	enum load_mode mode;
	unsigned mix;			/* rw: percent reads */
	uint32_t bs;
	unsigned qd;
	enum load_engine engine;
	enum load_flags flags;
	unsigned jobs;
	uint64_t size;			/* bytes per job; 0 = the file's size */
	double time;			/* seconds; 0 = one pass */
	bool loops, fsync_end, verify, json;
	uint64_t seed;
};

const char *load_mode_name(enum load_mode m);
const char *load_engine_name(enum load_engine e);
const char *load_flags_name(enum load_flags f);
bool load_mode_reads(enum load_mode m);
bool load_mode_writes(enum load_mode m);

/*
 * Log-linear latency histogram in nanoseconds: 128 buckets per power of
 * two, so a bucket is at most 1/128 of its value wide and the midpoint we
 * report is within 0.4% of any sample in it.  Fixed size: no per-I/O log.
 */
#define HIST_SUB_BITS	7
#define HIST_BUCKETS	((64 - HIST_SUB_BITS + 1) << HIST_SUB_BITS)

struct load_hist {
	uint64_t b[HIST_BUCKETS];
	uint64_t n, min, max;
	double sum;
};

void hist_init(struct load_hist *h);
void hist_add(struct load_hist *h, uint64_t ns);
void hist_merge(struct load_hist *to, const struct load_hist *from);
uint64_t hist_percentile(const struct load_hist *h, double pct);

/* One I/O in flight: a slot of the job's queue with its own buffer. */
struct load_slot {
	char *buf;
	uint64_t off;			/* file offset of the whole I/O */
	uint32_t done;			/* bytes finished (short I/O resumes) */
	bool write;
	uint64_t t0;			/* issue time, ns */
};

struct load_job {
	const struct load_opts *o;
	unsigned idx;
	char path[PATH_MAX];
	int fd;
	struct io_uring ring;
	bool ring_ok;
	struct load_slot *slots;	/* qd of them */
	unsigned *free_slots, nr_free;
	char *bufs;
	uint64_t rng;			/* permutation keys, the rw draw */
	uint64_t perm_mask, perm_key[3], perm_mul[3], perm_ctr;
	unsigned perm_shift;
	uint64_t issued;		/* I/Os issued in this pass */
	uint64_t nblocks;		/* size / bs */
	uint64_t deadline;		/* ns, 0 = none */
	struct load_hist lat;
	uint64_t ios, rbytes, wbytes;
	int status;			/* exit status of this job */
	pthread_t tid;
};

/* FILE, or FILE.idx with more than one job, into @buf. */
int load_path(const struct load_opts *o, unsigned idx, char *buf, size_t len);
/* Open and size-check the job's file, allocate its buffers (and ring). */
int load_job_setup(struct load_job *j, const struct load_opts *o, unsigned idx);
void load_job_teardown(struct load_job *j);
/* Thread body: run the job; j->status ends 0, 1 or 2. */
void *load_job_run(void *arg);
/* Tell every job to stop issuing (a job failed). */
void load_stop_all(void);
uint64_t load_now_ns(void);

#endif /* MQFS_LOAD_I_H */
