/* SPDX-License-Identifier: MIT */
/*
 * blk.h - the block layer's contract with its users: bios, requests,
 * queues and plugs.
 *
 * A caller (the filesystem, mqfs-bench) describes I/O as bios and hands
 * them to mq_submit_bio().  The block layer turns bios into requests
 * (merging them where it can), schedules them through an elevator, issues
 * them to a driver and calls each bio's end_io when its request completes.
 * Errors reach the caller only through bio->status: submission never fails.
 */
#ifndef MQFS_BLK_H
#define MQFS_BLK_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include "mqfs/compiler.h"
#include "mqfs/list.h"
#include "mqfs/rbtree.h"

#define MQ_SECTOR_SHIFT		9
#define MQ_SECTOR_SIZE		(1u << MQ_SECTOR_SHIFT)

enum mq_op {
	MQ_OP_READ = 0,
	MQ_OP_WRITE,
	MQ_OP_FLUSH,
	MQ_OP_DISCARD,
	MQ_OP_WRITE_ZEROES,
	MQ_OP_COUNT
};

/* Data direction, the index of every per-direction array (as mq-deadline). */
enum mq_dir {
	MQ_DIR_READ = 0,
	MQ_DIR_WRITE,
	MQ_DIR_COUNT
};

/* Request flags carried from the bio (cmd_flags). */
enum {
	MQ_REQ_SYNC		= 1u << 0,	/* someone waits for it */
	MQ_REQ_FUA		= 1u << 1,	/* forced unit access */
	MQ_REQ_META		= 1u << 2,	/* filesystem metadata */
	MQ_REQ_DONTCACHE	= 1u << 3,	/* uncached write-behind */
	MQ_REQ_NOMERGE		= 1u << 4,	/* never merge this one */
	MQ_REQ_COMPLETE_IN_TASK	= 1u << 5,	/* end_io needs task context */
	/*
	 * May go to the submitting thread's poll queue (mq_set_task_poll_queue)
	 * and complete only when someone polls it: set on I/O whose waiters
	 * all poll (the kernel's REQ_POLLED).  Ignored, and cleared, for a
	 * thread with no poll queue.
	 */
	MQ_REQ_POLLED		= 1u << 6,
};

/* I/O priority classes, as ioprio(7).  NONE is served as BE. */
enum mq_prio_class {
	MQ_PRIO_NONE = 0,
	MQ_PRIO_RT,
	MQ_PRIO_BE,
	MQ_PRIO_IDLE,
};

/*
 * The calling thread's I/O priority class, as the kernel's task
 * io_context priority (bio_set_ioprio): a data bio submitted with
 * MQ_PRIO_NONE takes it.  Metadata (MQ_REQ_META) keeps NONE: it is
 * shared (the journal, an inode table block), and a demoted metadata
 * read would hold back every caller waiting for the same buffer.
 * Returns the class set before, for the caller to put back.
 */
enum mq_prio_class mq_set_task_prio(enum mq_prio_class c);
enum mq_prio_class mq_task_prio(void);

struct mq_bio;
typedef void (*mq_bio_end_io_t)(struct mq_bio *bio);

/*
 * struct mq_bio - one contiguous piece of I/O from a caller.
 *
 * The caller owns the bio until end_io runs.  @next is the block layer's
 * link while the bio sits inside a request.
 *
 * end_io runs where the driver reaps the completion (a reaper or timer
 * thread, or inside queue_rq), or in the queue's completion worker when
 * the bio carries MQ_REQ_COMPLETE_IN_TASK.  On a polled queue (io_uring
 * with caller_reap) it runs in the thread that polls: a caller of
 * mq_queue_poll(), or a thread that waits inside the block layer (for a
 * tag, a drain or a freeze), which may be another submitter of the same
 * hardware queue.  It may submit new bios (they never wait for a freeze
 * there), but a submission that runs out of tags waits in that thread:
 * end_io work that submits much belongs in task context.
 */
struct mq_bio {
	uint64_t sector;		/* start, 512-byte sectors */
	uint32_t size;			/* bytes; 0 for flush */
	uint8_t op;			/* enum mq_op */
	uint8_t prio_class;		/* enum mq_prio_class */
	uint16_t flags;			/* MQ_REQ_* */
	void *buf;			/* data for read/write */
	int status;			/* 0 or -errno, valid in end_io */
	uint64_t done_ns;		/* completion time, valid in end_io */
	mq_bio_end_io_t end_io;
	void *private;			/* caller's */
	struct mq_bio *next;		/* block layer's chain */
};

static inline void mq_bio_init(struct mq_bio *bio, enum mq_op op,
			       uint64_t sector, void *buf, uint32_t size,
			       mq_bio_end_io_t end_io, void *private)
{
	*bio = (struct mq_bio){ .sector = sector, .size = size, .op = op,
				.buf = buf, .end_io = end_io,
				.private = private };
}

static inline uint64_t mq_bio_end_sector(const struct mq_bio *bio)
{
	return bio->sector + (bio->size >> MQ_SECTOR_SHIFT);
}

static inline enum mq_dir mq_op_dir(unsigned op)
{
	return op == MQ_OP_READ ? MQ_DIR_READ : MQ_DIR_WRITE;
}

struct mq_queue;
struct mq_hw_queue;
struct mq_sw_ctx;
struct mq_inflight;

/* Request state flags (rq_flags), owned by the block layer. */
enum {
	MQ_RQF_ELV		= 1u << 0,	/* allocated from scheduler tags */
	MQ_RQF_ELVPRIV		= 1u << 1,	/* elevator saw it at insert */
	MQ_RQF_STARTED		= 1u << 2,	/* handed to the driver */
	MQ_RQF_DONTPREP		= 1u << 3,	/* driver prepared it once */
};

/*
 * struct mq_request - the unit the elevator schedules and the driver runs.
 *
 * Every request is one slot of a preallocated pool indexed by tag; the
 * driver's per-request context follows the struct (mq_rq_pdu()), so
 * nothing is allocated per I/O.
 */
struct mq_request {
	struct mq_queue *q;
	struct mq_hw_queue *hctx;
	struct mq_sw_ctx *ctx;
	struct mq_request *rq_next;	/* plug and batch lists */

	uint64_t sector;		/* start, 512-byte sectors */
	uint32_t nr_bytes;
	uint16_t nr_segs;		/* bios in the chain */
	uint8_t op;
	uint8_t prio_class;
	uint32_t cmd_flags;		/* MQ_REQ_* */
	uint32_t rq_flags;		/* MQ_RQF_* */
	int tag;			/* driver tag, -1 when none */
	int internal_tag;		/* scheduler tag, -1 without elevator */
	int status;			/* set by the driver before completion */
	struct mq_bio *bio, *biotail;

	uint64_t alloc_ns;		/* entered the block layer */
	uint64_t start_ns;		/* handed to the driver */

	/* Elevator linkage; valid only while the elevator owns it. */
	struct mq_list_head queuelist;	/* FIFO or dispatch list */
	struct mq_rb_node rb_node;	/* sort tree */
	struct mq_hlist_node hash;	/* back-merge hash on end sector */
	uint64_t fifo_time;		/* deadline, ns */
	void *elv_priv[2];		/* the elevator's private slot */
} mq_cacheline_aligned;

static inline void *mq_rq_pdu(struct mq_request *rq)
{
	return rq + 1;
}

static inline enum mq_dir mq_rq_dir(const struct mq_request *rq)
{
	return mq_op_dir(rq->op);
}

static inline uint64_t mq_rq_end_sector(const struct mq_request *rq)
{
	return rq->sector + (rq->nr_bytes >> MQ_SECTOR_SHIFT);
}

/* Iterate the bios of a request. */
#define mq_rq_for_each_bio(bio, rq) \
	for ((bio) = (rq)->bio; (bio); (bio) = (bio)->next)

/* Singly linked request list with a tail, as the kernel's rq_list. */
struct mq_rq_list {
	struct mq_request *head, *tail;
};

static inline void mq_rq_list_add_tail(struct mq_rq_list *l,
				       struct mq_request *rq)
{
	rq->rq_next = NULL;
	if (l->tail)
		l->tail->rq_next = rq;
	else
		l->head = rq;
	l->tail = rq;
}

static inline void mq_rq_list_add_head(struct mq_rq_list *l,
				       struct mq_request *rq)
{
	rq->rq_next = l->head;
	l->head = rq;
	if (!l->tail)
		l->tail = rq;
}

static inline struct mq_request *mq_rq_list_pop(struct mq_rq_list *l)
{
	struct mq_request *rq = l->head;

	if (rq) {
		l->head = rq->rq_next;
		if (!l->head)
			l->tail = NULL;
		rq->rq_next = NULL;
	}
	return rq;
}

static inline bool mq_rq_list_empty(const struct mq_rq_list *l)
{
	return l->head == NULL;
}

/*
 * struct mq_plug - a thread's batch of requests not yet issued.
 *
 * Lives on the caller's stack between mq_start_plug() and mq_finish_plug().
 * The fields are the block layer's; callers only start and finish it.
 */
struct mq_plug {
	struct mq_rq_list mq_list;	/* requests waiting for the flush */
	struct mq_rq_list cached_rqs;	/* preallocated by a batch tag get */
	struct mq_queue *cached_q;	/* queue the cached requests belong to */
	uint64_t cur_ns;		/* one timestamp per plug batch */
	unsigned short nr_ios;		/* requests still to preallocate */
	unsigned short rq_count;
	bool multiple_queues;
	bool has_elevator;
};

void mq_start_plug(struct mq_plug *plug, unsigned nr_ios);
void mq_finish_plug(struct mq_plug *plug);
/* Flush the calling thread's plug, if any: call before any blocking wait. */
void mq_flush_plug(void);
struct mq_plug *mq_current_plug(void);

/* Queue configuration; zero fields take the documented defaults. */
struct mq_queue_config {
	const char *elevator;		/* "none" or "mq-deadline" (default) */
	unsigned nr_hw_queues;		/* default 1, capped by the driver */
	/*
	 * Poll queues besides them (the kernel's nvme poll_queues): indexes
	 * nr_hw_queues.. of the hardware queues; they carry only the
	 * MQ_REQ_POLLED bios of threads bound to them and complete only in
	 * mq_queue_poll_queue().  Default 0; the device must offer them
	 * (mq_dev_geometry.nr_poll_queues), else -EOPNOTSUPP.
	 */
	unsigned nr_poll_queues;
	unsigned queue_depth;		/* driver tags; default: the driver's */
	unsigned nr_requests;		/* scheduler tags; 2*min(qd,128) */
	unsigned max_sectors_kb;	/* largest merged request; 512 */
	/* Mechanism switches for A/B measurements (all on by default). */
	bool eager_dispatch;		/* dequeue even when no driver tag */
	bool async_run;			/* punt every queue run to the worker */
	bool single_tag_alloc;		/* one tag per allocation call */
	bool no_merges;			/* nomerges=2 */
};

struct mq_dev;
/*
 * Create a queue on @dev in *@out: 0, -EINVAL (an unknown elevator, a
 * driver whose ops miss a method or a polled device without poll),
 * -ENOMEM, or the driver's queue_init error.
 */
int mq_queue_create(struct mq_dev *dev, const struct mq_queue_config *cfg,
		    struct mq_queue **out);
/* Destroy: all I/O must have completed; checks every balance counter. */
void mq_queue_destroy(struct mq_queue *q);
void mq_submit_bio(struct mq_queue *q, struct mq_bio *bio);

const char *mq_queue_elevator_name(const struct mq_queue *q);
/* The device's size and logical block size, for the filesystem. */
uint64_t mq_queue_size_bytes(const struct mq_queue *q);
uint32_t mq_queue_logical_block_size(const struct mq_queue *q);
/* The device takes no writes (opened read-only). */
bool mq_queue_read_only(const struct mq_queue *q);
/* Drain, switch, resume.  -EINVAL for an unknown elevator. */
int mq_queue_switch_elevator(struct mq_queue *q, const char *name);
/* Elevator and queue tunables in the kernel's sysfs vocabulary. */
int mq_queue_attr_store(struct mq_queue *q, const char *name,
			const char *value);
int mq_queue_attr_show(struct mq_queue *q, const char *name,
		       char *buf, size_t len);
/* Names of the tunables, NULL-terminated list valid while unchanged. */
int mq_queue_attr_list(struct mq_queue *q, const char **names,
		       unsigned max);
/* Dispatch batch histogram buckets: 0, 1, 2-3, 4-7, ... 128+. */
#define MQ_DISPATCH_HIST	9

/*
 * Statistics of one hardware queue (or their sum), in the kernel's
 * vocabulary: /sys/block/DEV/stat and blk-mq debugfs.
 */
struct mq_queue_stats {
	uint64_t bios[MQ_DIR_COUNT];		/* submitted */
	uint64_t ios[MQ_DIR_COUNT];		/* requests completed */
	uint64_t sectors[MQ_DIR_COUNT];		/* completed */
	uint64_t merges[MQ_DIR_COUNT];		/* bios merged away */
	uint64_t plug_merges, elv_merges, rq_merges;
	uint64_t dispatched[MQ_DIR_COUNT];	/* handed to the driver */
	uint64_t in_flight;			/* dispatched, not completed */
	uint64_t queue_ns[MQ_DIR_COUNT];	/* sum: alloc -> dispatch */
	uint64_t device_ns[MQ_DIR_COUNT];	/* sum: dispatch -> complete */
	uint64_t errors;
	/* Time with a request at the driver (io_ticks); a sum over hardware
	 * queues reports the busiest one's. */
	uint64_t busy_ns;
	uint64_t dispatch_runs;			/* runs that issued >= 1 */
	uint64_t dispatch_hist[MQ_DISPATCH_HIST];
	uint64_t requeues;			/* device busy: back on list */
	uint64_t run_sync, run_async;		/* queue runs by context */
	uint64_t tag_alloc_calls, tags_allocated, tag_waits;
	uint64_t completion_batches;		/* calls completing >= 1 */
	uint64_t task_runs, task_completions;	/* completion worker */
	uint64_t task_wakeups, task_worker_cs;
	uint64_t reaper_runs, reaped, reaper_cs;	/* driver's reaper */
	/* Device status errors (NVMe), the last raw status, ioctl-sent. */
	uint64_t dev_status_errors, dev_sync_rqs;
	uint32_t dev_last_status;
	unsigned dispatch_busy;			/* EWMA, 0..16 */
	unsigned nr_hw_queues;			/* poll queues included */
	unsigned nr_poll_queues;
};

/* Sum over all hardware queues (@hctx < 0) or one of them. */
int mq_queue_get_stats(struct mq_queue *q, int hctx,
		       struct mq_queue_stats *out);

/*
 * Requests per priority level, summed over the hardware queues, as
 * mq-deadline counts them ([0] RT, [1] BE with NONE, [2] IDLE).
 * queued (the kernel's debugfs "queued") = inserted - completed;
 * owned_by_driver = dispatched + merged - completed.
 */
struct mq_prio_stats {
	struct {
		uint64_t inserted, merged, dispatched, completed;
	} level[3];
};

/* 0, or -ENOENT when the elevator keeps no priority levels (none). */
int mq_queue_prio_stats(struct mq_queue *q, struct mq_prio_stats *out);

/* Print the summed statistics as text (the daemon's exit report). */
void mq_queue_stats_print(struct mq_queue *q, FILE *out);

/* Block until every submitted request has completed (a polled queue is
 * polled meanwhile). */
void mq_queue_drain(struct mq_queue *q);

/*
 * mq_queue_poll - reap completions in the calling thread (polled queues).
 * @q:            a queue on a polled device (io_uring with caller_reap)
 * @min_complete: 0: complete what is ready and return; > 0: block in the
 *                kernel until at least that many requests completed, or
 *                until nothing of the hardware queue is in flight
 *
 * Flushes the caller's plug, then reaps the hardware queue the calling
 * thread submits to (its software context's), running the bios' end_io
 * here - possibly those of other threads sharing that hardware queue.
 * Threads sharing it poll one at a time; what another reaped while the
 * caller waited for its turn counts towards @min_complete (the caller's
 * bios may have been among them), but not in the return value.
 * On a polled queue nothing else reaps: a thread that waits for its I/O
 * must poll (the kernel's HCTX_TYPE_POLL with io_uring's iopoll).  Waits
 * inside the block layer (tags, drain, freeze) poll by themselves.
 * Context: any thread holding no block-layer lock; an end_io included.
 * Return: requests completed by this call - fewer than @min_complete
 * only when the hardware queue ran out of requests in flight or another
 * poller completed some - or -EOPNOTSUPP when @q is not a polled queue
 * (the driver has no ->poll, or the device was not opened caller-reaped),
 * or another -errno.
 */
int mq_queue_poll(struct mq_queue *q, unsigned min_complete);

/*
 * Poll queues (mq_queue_config.nr_poll_queues): a thread that will reap
 * its own I/O binds itself to one, and its MQ_REQ_POLLED bios go there
 * instead of to its hardware queue.  Nothing else reaps a poll queue: the
 * bound thread polls it in its loop, woken by mq_queue_poll_fd(), and any
 * thread that waits for MQ_REQ_POLLED I/O it did not submit polls them
 * all (mq_queue_poll_polled).
 *
 * mq_set_task_poll_queue - bind the calling thread to poll queue @index
 * (taken modulo the queue's count), or unbind it with -1; for every queue
 * the thread submits to.  Returns the binding before.
 */
int mq_set_task_poll_queue(int index);
/* The queue's count of poll queues (0: none). */
unsigned mq_queue_nr_poll_queues(const struct mq_queue *q);
/*
 * Are the poll queues in use: has a thread taken a poll fd, or a polled
 * bio gone to one?  Until then waiters need not poll (a mount whose FUSE
 * rings the kernel refused keeps its poll queues unused).
 */
bool mq_queue_polls_used(const struct mq_queue *q);
/*
 * Reap poll queue @index in the calling thread: as mq_queue_poll(), except
 * that with @min_complete 0 a queue another thread is reaping reports 0
 * at once (that thread takes what is ready).
 */
int mq_queue_poll_queue(struct mq_queue *q, unsigned index,
			unsigned min_complete);
/*
 * A file descriptor that becomes readable (an eventfd's counter: read 8
 * bytes to reset it) each time poll queue @index has completions to reap;
 * owned by the queue.  -EOPNOTSUPP when the device cannot say (an IOPOLL
 * ring finds completions only when entered).
 */
int mq_queue_poll_fd(struct mq_queue *q, unsigned index);
/*
 * Reap every poll queue, blocking on each that has I/O in flight until
 * one of its requests completes; returns the requests completed.  For a
 * thread that waits for MQ_REQ_POLLED I/O of other threads.
 */
unsigned mq_queue_poll_polled(struct mq_queue *q);
/*
 * mq_queue_poll_polled, then a 100 us nap when it completed nothing: one
 * round of a wait for I/O that may not have reached the device yet.
 */
void mq_queue_poll_polled_nap(struct mq_queue *q);
/*
 * Until @f drains (mqfs/inflight.h), for a thread that waits for I/O
 * other threads submitted: while poll queues are in use (some thread
 * bound itself to one) that I/O may be theirs, which only pollers
 * complete, so it polls them in rounds; else it sleeps.  The caller's
 * plug is flushed first.
 */
void mq_queue_inflight_wait(struct mq_queue *q, struct mq_inflight *f);

#endif /* MQFS_BLK_H */
