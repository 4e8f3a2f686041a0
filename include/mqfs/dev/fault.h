/* SPDX-License-Identifier: MIT */
/*
 * dev/fault.h - the fault-injection driver (sched/dev/fault.c).
 */
#ifndef MQFS_DEV_FAULT_H
#define MQFS_DEV_FAULT_H

#include <stdbool.h>
#include <stdint.h>
#include "mqfs/mq_dev.h"

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
 * Return: 0 with the device in *@out, or -EINVAL (invalid @cfg, a
 * polled @lower), -ENOMEM, or the error of the queue or threads, after
 * a message on stderr.
 */
int mq_fault_open(struct mq_dev *lower, const struct mq_fault_config *cfg,
		  struct mq_dev **out);
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

#endif /* MQFS_DEV_FAULT_H */
