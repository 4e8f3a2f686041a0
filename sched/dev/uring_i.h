/* SPDX-License-Identifier: MIT */
/*
 * uring_i.h - the io_uring driver's device and rings, shared by its files:
 * uring.c owns the rings (submission, reaping, polling, teardown),
 * uring_open.c opens a path with the command set that serves it,
 * uring_rw.c is the command set of files and block devices
 * (read/write/fsync/fallocate), nvme.c the NVMe command set
 * (IORING_OP_URING_CMD on /dev/ngXnY).  A command set turns requests into
 * SQEs and CQEs back into statuses, and says what its device needs at
 * open, close and in the figures: the rings know none by name.
 */
#ifndef MQFS_SCHED_DEV_URING_I_H
#define MQFS_SCHED_DEV_URING_I_H

#include <liburing.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>
#include <sys/uio.h>
#include "mqfs/mq_dev.h"
#include "mqfs/dev/uring.h"

struct uring_queue;
struct uring_dev;
struct nvme_ns;
struct stat;

#define URING_MAX_SEGS		128
/* Rings with no reaper a queue may ask for besides (poll queues). */
#define URING_MAX_POLL_QUEUES	32u

struct uring_cmdset {
	const char *name;		/* the driver's name: "uring", "nvme" */
	bool direct;			/* the path is opened O_DIRECT */
	unsigned ring_flags;		/* IORING_SETUP_ flags it needs */
	size_t pdu_size;		/* per-request context */
	/*
	 * Register memory as fixed buffers of at most this many bytes (0:
	 * as given): the kernel may count every page to the end of a fixed
	 * buffer against a request's segment limit (see nvme.c).
	 */
	size_t fixed_chunk;
	/*
	 * Queue @rq as SQEs on @uq (serialised per queue): 0 (taken, or
	 * completed already), MQ_DEV_BUSY (the ring has no room), -errno.
	 */
	int (*queue)(struct uring_queue *uq, struct mq_request *rq);
	/*
	 * One CQE of @rq came back with @res (or -EIO for an SQE taken back
	 * from a broken ring).  True when @rq is finished, rq->status set.
	 * Any thread that reaps the ring; concurrently with the submitter.
	 */
	bool (*cqe)(struct uring_dev *ud, struct mq_request *rq, int res);
	/* Chosen by the path (driver=auto): does it serve @st? */
	bool (*serves)(const struct stat *st);
	/* After open: fill @ud->dev.geo, check the configuration. */
	int (*setup)(struct uring_dev *ud);
	/* Undo setup, also after a setup that failed (NULL: nothing). */
	void (*free)(struct uring_dev *ud);
	/* 1 when what backs @st is in use besides its own open (NULL: no
	 * more than the open's lock says). */
	int (*in_use)(const struct stat *st);
	/* Add the device's own figures, once per device (NULL: none). */
	void (*stats)(struct uring_dev *ud, struct mq_dev_queue_stats *s);
};

struct uring_dev {
	struct mq_dev dev;
	struct mq_dev_ops ops;		/* mq_uring_ops, named by @cs */
	struct mq_uring_config cfg;
	const struct uring_cmdset *cs;
	int fd;
	bool is_bdev;
	bool fixed_file;
	struct uring_queue **queues;
	struct iovec *bufs;		/* registered buffers, by address */
	unsigned nr_bufs;
	struct nvme_ns *nvme;		/* the NVMe command set's namespace */
	bool no_fixed_bufs;		/* the kernel cannot take them */
};

struct uring_queue {
	struct uring_dev *ud;
	unsigned index;
	struct io_uring ring;
	unsigned unsubmitted;		/* SQEs prepared, not yet submitted */
	unsigned prepared;		/* SQEs not yet counted in @inflight */
	_Atomic unsigned inflight;	/* CQEs owed: SQEs made visible - reaped */
	pthread_t reaper;
	bool reaper_running;
	bool broken;			/* a submit was refused for good */
	bool polled;			/* no reaper: caller_reap, a poll queue */
	int efd;			/* poll_fd's eventfd, or -1 */
	/* Polled: one poller at a time; @poll_owner names it. */
	pthread_mutex_t poll_lock;
	_Atomic(const void *) poll_owner;
	atomic_bool poll_missed;	/* a try found the lock taken */
	_Atomic uint64_t reaps, reaped;	/* reap runs, requests completed */
	_Atomic pid_t reaper_tid;
};

/*
 * @n free SQEs on @uq, submitting what is queued once if needed: false
 * when the ring has not that many (the caller answers MQ_DEV_BUSY).
 */
bool mq_uring_reserve(struct uring_queue *uq, unsigned n);
/* @n SQEs were taken with io_uring_get_sqe: count them. */
void mq_uring_taken(struct uring_queue *uq, unsigned n);
/* The registered buffer index holding [buf, buf + len), or -1. */
int mq_uring_fixed_index(const struct uring_dev *ud, const void *buf,
		      uint32_t len);
/* The fd an SQE names: 0 when the file is registered (IOSQE_FIXED_FILE). */
int mq_uring_sqe_fd(const struct uring_dev *ud);

/* uring.c: the driver's operations, the name left to the command set. */
extern const struct mq_dev_ops mq_uring_ops;

/* The command sets: uring_rw.c, nvme.c. */
extern const struct uring_cmdset mq_uring_rw_cmdset;
extern const struct uring_cmdset mq_uring_nvme_cmdset;
/* Is @st an NVMe generic character device (/dev/ngXnY)? */
bool mq_uring_nvme_is_generic(const struct stat *st);

#endif /* MQFS_SCHED_DEV_URING_I_H */
