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
	bool read_only;			/* opened read-only: writes fail */
};

struct mq_dev;
struct mq_hw_queue;

/* What a driver with its own completion thread reports. */
struct mq_dev_queue_stats {
	uint64_t reaper_runs;		/* wake-ups that completed >= 1 */
	uint64_t reaped;		/* requests completed by the reaper */
	uint64_t reaper_cs;		/* context switches of that thread */
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
};

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

/* io_uring driver: direct I/O on a regular file or a block device. */
struct mq_uring_config {
	unsigned queue_depth;		/* ring slots per queue; default 128 */
	bool sqpoll;			/* kernel submission thread */
	bool iopoll;			/* polled completions (poll queues) */
	bool no_fixed_files;		/* do not register the fd */
	bool readonly;			/* O_RDONLY: every write fails EBADF */
	/*
	 * Have the device to ourselves: a block device opened O_EXCL, an
	 * image file under an exclusive flock (held until close).  -EBUSY
	 * when someone has it, after waiting @lock_wait_ms for it (the
	 * daemon waits out an unmounting one).
	 */
	bool exclusive;
	unsigned lock_wait_ms;
	/*
	 * No reaper thread: completions are reaped by the threads that wait
	 * for them, through mq_queue_poll() (and the core's own waits).  The
	 * device is then mq_dev.polled; it combines with iopoll.
	 */
	bool caller_reap;
};

/*
 * NULL with *err = -errno on failure.  A path that cannot be opened is
 * the caller's to report (strerror + mq_uring_open_hint), so the user
 * reads one line naming the tool; a bad configuration the driver names.
 */
struct mq_dev *mq_uring_open(const char *path,
			     const struct mq_uring_config *cfg, int *err);
/* What to add to strerror() of an mq_uring_open() error: "" or " (..)". */
const char *mq_uring_open_hint(int err);
/* 0 when io_uring works with every opcode the driver issues. */
int mq_uring_probe(void);
/*
 * Does someone have @path to itself (a mounted mqfs)?  1 yes, 0 no, or
 * -errno.  For a reader that goes on anyway (fsck -n), to say so.
 */
int mq_uring_in_use(const char *path);
struct iovec;
/*
 * Register the caller's I/O memory with every ring (io_uring fixed
 * buffers): single-bio requests inside it then skip the per-I/O page
 * pinning.  Call before mq_queue_create() on @dev; the memory must stay
 * allocated until the device is closed.  0 or -errno.
 */
int mq_uring_register_buffers(struct mq_dev *dev, const struct iovec *iov,
			      unsigned nr);

/*
 * Fault-injection device (sched/dev/fault.c): a stacking driver, as
 * device-mapper's dm-flakey.  It serves its requests with clone bios on a
 * queue of its own over a lower device, and on the way fails chosen
 * requests with -EIO, delays completions, and can keep writes in a
 * volatile write cache that a simulated power cut loses.  Every random
 * choice derives from the seed, so a failing run can be replayed.
 */
enum mq_fault_cut {
	MQ_FAULT_CUT_LOSE = 0,	/* every cached, unflushed sector is lost */
	MQ_FAULT_CUT_TORN,	/* a seeded subset of them is written first */
};

struct mq_fault_config {
	/*
	 * EIO rules, applied per request in arrival order.  A request is a
	 * candidate when its op is in @eio_op_mask (bits 1 << MQ_OP_x; 0:
	 * every op) and it touches [eio_sector_start, eio_sector_end) (end
	 * 0: no range rule; a flush touches no range).  A candidate fails
	 * when the Nth-candidate counter or the probability draw fires, or
	 * always when neither is set.  With no rule at all (mask, range end,
	 * Nth and probability all zero) nothing fails.  A failed request
	 * never reaches the lower device; all of its bios end with -EIO.
	 */
	uint64_t eio_sector_start;
	uint64_t eio_sector_end;
	uint32_t eio_op_mask;
	uint32_t eio_every_nth;		/* 0: off */
	double eio_probability;		/* 0.0 - 1.0; 0: off */
	uint64_t seed;			/* 0: from the clock, printed */
	uint64_t latency_ns;		/* added to every completion */
	unsigned queue_depth;		/* 0: the lower device's */
	/*
	 * Writes (discard and write-zeroes too, as zeroed sectors) complete
	 * into an in-memory cache and reach the lower device only on a
	 * flush, or for a FUA write's own sectors; reads see the cache.
	 */
	bool volatile_cache;
};

struct mq_fault_stats {
	uint64_t seed;			/* the seed in use */
	uint64_t injected;		/* requests failed by an EIO rule */
	uint64_t forwarded;		/* requests served by lower clones */
	uint64_t cached;		/* writes completed into the cache */
	uint64_t powered_off;		/* requests failed by the power cut */
	uint64_t dirty_sectors;		/* cached, not yet written down */
	uint64_t writes;		/* write-like requests popped (not reads) */
};

/*
 * Open a fault device over @lower, on an internal queue (elevator
 * "none") it creates there.  @lower is not owned: mq_dev_close() of the
 * fault device destroys that queue and leaves @lower open; close @lower
 * after it.  Geometry is @lower's, with cfg->queue_depth if set and at
 * most 32 bios per request.
 * Context: process; no queue of the fault device exists yet.
 * Return: the device, or NULL (invalid @cfg, no memory, no queue, a
 * polled @lower) after a message on stderr.
 */
struct mq_dev *mq_fault_open(struct mq_dev *lower,
			     const struct mq_fault_config *cfg);
/*
 * Replace the EIO rules (range, op mask, Nth, probability) of an open
 * fault device; other fields of @cfg are ignored, except that a non-zero
 * cfg->seed restarts the random stream of the probability rule from it.
 * The Nth counter restarts.  Takes effect for requests not yet examined.
 * Context: any thread, an end_io included.
 * Return: 0, or -EINVAL for invalid rules (nothing changed).
 */
int mq_fault_set_eio(struct mq_dev *dev, const struct mq_fault_config *cfg);
/*
 * Cut the power: after the request being served finishes, fail every
 * request not yet completed (waiting ones, delayed completions, reads
 * still at the lower device) with -EIO, then lose the volatile cache
 * (@mode LOSE), or first write down a subset of its dirty sectors chosen
 * by hashing the open seed with each sector number (@mode TORN: each
 * sector is whole old or whole new data on the lower device).  From then
 * on every request fails with -EIO until the device is closed.
 * Context: process, not an end_io of this device (it waits for the
 * device's worker thread, which may be running that end_io).
 * Return: dirty sectors lost (0 without a volatile cache), -EINVAL for
 * an unknown @mode, -EALREADY when the power is already off.
 */
int mq_fault_power_cut(struct mq_dev *dev, enum mq_fault_cut mode);
/*
 * Arm a cut: the power goes off (@mode) just before the @nth write-like
 * request (write, flush, discard, write-zeroes) from now is served, and
 * that request fails with every later one; 1 is the next.  0 disarms.
 * Context: any thread but an end_io of this device.
 * Return: 0, or -EINVAL for an unknown @mode.
 */
int mq_fault_arm_cut(struct mq_dev *dev, uint64_t nth, enum mq_fault_cut mode);
/* Has the power gone off (a cut, asked or armed)?  Context: any thread. */
bool mq_fault_powered_off(struct mq_dev *dev);
/* Counters of the fault device, a snapshot.  Context: any thread. */
void mq_fault_get_stats(struct mq_dev *dev, struct mq_fault_stats *out);

/* Release a device opened by one of the above (queues destroyed first). */
void mq_dev_close(struct mq_dev *dev);

#endif /* MQFS_MQ_DEV_H */
