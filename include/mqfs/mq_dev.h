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
 * mq_complete_batch().
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
	unsigned queue_depth;		/* default in-flight slots per queue */
	bool flush, fua, discard, write_zeroes;
};

struct mq_dev;
struct mq_hw_queue;

/* queue_rq() results besides 0 (accepted). */
#define MQ_DEV_BUSY	(-EBUSY)	/* resource busy: requeue, retry */

struct mq_dev_ops {
	const char *name;
	/* Required.  Per-queue state; *priv is handed back in queue_exit. */
	int (*queue_init)(struct mq_dev *dev, unsigned index, void **priv);
	/* Required.  All of the queue's requests have completed. */
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
	/* Required.  Release the device; every queue has exited. */
	void (*close)(struct mq_dev *dev);
};

struct mq_dev {
	const struct mq_dev_ops *ops;
	char name[64];
	struct mq_dev_geometry geo;
	size_t rq_pdu_size;		/* driver context bytes per request */
};

/* For drivers. */
void *mq_hctx_driver_data(const struct mq_hw_queue *hctx);
unsigned mq_hctx_index(const struct mq_hw_queue *hctx);
struct mq_dev *mq_hctx_dev(const struct mq_hw_queue *hctx);
/* Complete @rq with @status (0 or -errno).  Any thread. */
void mq_complete_request(struct mq_request *rq, int status);
/*
 * Complete @nr requests whose ->status the driver already set, with one
 * timestamp and batched tag frees.  Any thread.
 */
void mq_complete_batch(struct mq_request **rqs, unsigned nr);

/* Built-in drivers. */
enum mq_null_irqmode {
	MQ_NULL_IRQ_NONE = 0,	/* complete inside queue_rq */
	MQ_NULL_IRQ_TIMER,	/* complete from a timer thread after latency */
	MQ_NULL_IRQ_MANUAL,	/* tests complete with mq_null_complete_due() */
};

struct mq_null_config {
	uint64_t size_bytes;		/* default 1 TiB */
	uint64_t latency_ns;		/* 0: at once */
	unsigned queue_depth;		/* default 128 */
	unsigned nr_hw_queues;		/* default 1 */
	enum mq_null_irqmode irqmode;	/* TIMER when latency_ns > 0 */
};

struct mq_dev *mq_null_open(const struct mq_null_config *cfg);
/* MANUAL mode: complete every request whose latency has passed. */
unsigned mq_null_complete_due(struct mq_dev *dev);
/* Requests the device holds right now (all queues). */
unsigned mq_null_inflight(struct mq_dev *dev);

struct mq_dev *mq_ram_open(uint64_t size_bytes, unsigned queue_depth);
void *mq_ram_data(struct mq_dev *dev);

/* Release a device opened by one of the above (queues destroyed first). */
void mq_dev_close(struct mq_dev *dev);

#endif /* MQFS_MQ_DEV_H */
