/* SPDX-License-Identifier: MIT */
/*
 * mq_dev.h - the contract between the block layer and a device driver.
 *
 * A driver is one const struct mq_dev_ops.  Its device embeds struct
 * mq_dev and recovers itself with mq_container_of.  The core calls
 * queue_rq() for one hardware queue from one thread at a time (the run of
 * that queue is serialised), so a driver may keep per-queue state such as
 * an io_uring without locks on the submission side.  Completions may be
 * reported from any thread with mq_complete_request() or, for a batch,
 * mq_complete_batch(); a polled device (mq_dev.polled) reports them only
 * from its ->poll, in the thread that polls.
 *
 * Only the contract is here; each built-in driver's constructor and
 * options are in its own header, mqfs/dev/{null,ram,uring,fault}.h.
 */
#ifndef MQFS_MQ_DEV_H
#define MQFS_MQ_DEV_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include "mqfs/blk.h"

struct mq_dev_geometry {
	uint32_t logical_block_size;
	uint32_t physical_block_size;
	uint64_t size_bytes;
	uint32_t max_hw_sectors;	/* largest request, sectors */
	uint16_t max_segments;		/* most bios per request */
	unsigned nr_hw_queues;		/* most queues the device offers */
	unsigned nr_poll_queues;	/* most poll queues besides them */
	unsigned queue_depth;		/* default in-flight slots per queue */
	bool flush, fua, discard, write_zeroes;
	bool read_only;			/* opened read-only: writes fail */
};

struct mq_dev;
struct mq_hw_queue;

/* What a driver with its own completion thread reports. */
struct mq_dev_queue_stats {
	uint64_t reaper_runs;		/* wake-ups that completed >= 1 */
	uint64_t reaped;		/* requests completed by the reaper */
	uint64_t reaper_cs;		/* context switches of that thread */
	/* A device that reports its own status codes (NVMe): */
	uint64_t status_errors;		/* commands it failed */
	uint32_t last_status;		/* the raw status of the last one */
	uint64_t sync_rqs;		/* requests sent outside the rings */
};

/* queue_rq() results besides 0 (accepted). */
#define MQ_DEV_BUSY	(-EBUSY)	/* resource busy: requeue, retry */

struct mq_dev_ops {
	const char *name;
	/* Required.  Per-queue state; *priv is handed back in queue_exit. */
	int (*queue_init)(struct mq_dev *dev, unsigned index, void **priv);
	/*
	 * Required.  All of the queue's requests have completed.  When it
	 * returns no thread of the driver may still be inside a completion
	 * call for this queue (join reaper threads): the queue is freed next.
	 */
	void (*queue_exit)(struct mq_dev *dev, unsigned index, void *priv);
	/*
	 * Required.  Take @rq (it has a driver tag).  0: accepted and will
	 * complete later (or already did); MQ_DEV_BUSY / -EAGAIN: not taken,
	 * the core requeues it; other -errno: the core fails it.  @last is
	 * false when more requests follow in this batch: a driver with a
	 * doorbell may defer it until last or commit_rqs.  Called with the
	 * queue's run serialised.
	 */
	int (*queue_rq)(struct mq_hw_queue *hctx, struct mq_request *rq,
			bool last);
	/* Optional.  Ring the doorbell for requests queued with !last. */
	void (*commit_rqs)(struct mq_hw_queue *hctx);
	/* Optional.  Add this queue's completion-side figures to @s. */
	void (*queue_stats)(struct mq_dev *dev, void *priv,
			    struct mq_dev_queue_stats *s);
	/*
	 * Optional; required when the device sets mq_dev.polled.  Reap the
	 * completions of @hctx and complete their requests in the calling
	 * thread (end_io runs here).  With @min_complete > 0 block until at
	 * least that many requests of @hctx completed during the call (here,
	 * or in another thread's poll the caller waited for), or until
	 * nothing of @hctx is in flight any more; 0 only takes what is
	 * ready.  Returns the requests completed here, -EOPNOTSUPP when
	 * @hctx is not a polled queue, or another -errno.  Context: any
	 * thread, without block-layer locks; concurrent pollers of one
	 * queue are the driver's to serialise, and a poll from inside an
	 * end_io it runs must work.
	 */
	int (*poll)(struct mq_hw_queue *hctx, unsigned min_complete);
	/*
	 * Optional.  An fd, the driver's, that becomes readable when the
	 * polled queue @hctx has completions to reap (mq_queue_poll_fd), or
	 * -errno.
	 */
	int (*poll_fd)(struct mq_hw_queue *hctx);
	/* Required.  Release the device; every queue has exited. */
	void (*close)(struct mq_dev *dev);
};

struct mq_dev {
	const struct mq_dev_ops *ops;
	char name[64];
	struct mq_dev_geometry geo;
	size_t rq_pdu_size;		/* driver context bytes per request */
	/*
	 * Set by the driver at open: its queues complete only inside ->poll
	 * (the kernel's HCTX_TYPE_POLL), nothing reaps them otherwise.  The
	 * core then polls where it would sleep waiting for completions.
	 */
	bool polled;
	/*
	 * Set by the core before the first queue_init: hardware queues at
	 * and past this index are poll queues (mq_queue_config.nr_poll_queues,
	 * within geo.nr_poll_queues), reaped only inside ->poll.
	 */
	unsigned poll_base;
};

/* Is hardware queue @index of @dev reaped only inside ->poll? */
static inline bool mq_dev_queue_polled(const struct mq_dev *dev,
				       unsigned index)
{
	return dev->polled || (dev->poll_base && index >= dev->poll_base);
}

/*
 * Does @dev's ops table hold every required op (and poll for a polled
 * device)?  0, or -EINVAL after a message naming what is missing.
 * mq_queue_create calls it (dev/core.c).
 */
int mq_dev_check_ops(const struct mq_dev *dev);

/* For drivers. */
void *mq_hctx_driver_data(const struct mq_hw_queue *hctx);
struct mq_dev *mq_hctx_dev(const struct mq_hw_queue *hctx);
/* Complete @rq with @status (0 or -errno).  Any thread. */
void mq_complete_request(struct mq_request *rq, int status);
/*
 * Complete @nr requests whose ->status the driver already set, with one
 * timestamp and batched tag frees.  Any thread.
 */
void mq_complete_batch(struct mq_request **rqs, unsigned nr);

/* Release a device (its queues destroyed first), whatever its driver. */
void mq_dev_close(struct mq_dev *dev);

#endif /* MQFS_MQ_DEV_H */
