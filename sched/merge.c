/* SPDX-License-Identifier: MIT */
/*
 * merge.c - whether a bio or a request may join a request, and the join.
 *
 * The eligibility rules follow the kernel's blk_rq_merge_ok(): same
 * operation (so same direction), same priority class, neither marked
 * NOMERGE, both polled or neither (they go to different hardware
 * queues), and the result within the queue's size and segment limits.
 * Only reads and writes merge; flushes, discards and write-zeroes travel
 * alone.
 */
#include "merge.h"

bool mq_rq_mergeable(const struct mq_request *rq)
{
	return (rq->op == MQ_OP_READ || rq->op == MQ_OP_WRITE) &&
	       !(rq->cmd_flags & MQ_REQ_NOMERGE);
}

static bool merge_fits(const struct mq_request *rq, uint32_t bytes,
		       unsigned segs, const struct mq_merge_limits *lim)
{
	return (uint64_t)rq->nr_bytes + bytes <= lim->max_bytes &&
	       (unsigned)rq->nr_segs + segs <= lim->max_segs;
}

enum mq_elv_merge mq_rq_try_merge(const struct mq_request *rq,
				  const struct mq_bio *bio,
				  const struct mq_merge_limits *lim)
{
	if (!mq_rq_mergeable(rq) || rq->op != bio->op ||
	    rq->prio_class != bio->prio_class ||
	    /* A plug holds both kinds; each has its own hardware queue. */
	    ((rq->cmd_flags ^ bio->flags) & MQ_REQ_POLLED) ||
	    (bio->flags & MQ_REQ_NOMERGE) || !merge_fits(rq, bio->size, 1, lim))
		return MQ_ELV_NO_MERGE;
	if (mq_rq_end_sector(rq) == bio->sector)
		return MQ_ELV_BACK_MERGE;
	if (rq->sector == mq_bio_end_sector(bio))
		return MQ_ELV_FRONT_MERGE;
	return MQ_ELV_NO_MERGE;
}

/* Flags that stick to the whole request once any part carries them. */
#define MERGE_STICKY_FLAGS (MQ_REQ_SYNC | MQ_REQ_FUA | MQ_REQ_META | \
			    MQ_REQ_COMPLETE_IN_TASK)

void mq_rq_back_merge_bio(struct mq_request *rq, struct mq_bio *bio)
{
	bio->next = NULL;
	rq->biotail->next = bio;
	rq->biotail = bio;
	rq->nr_bytes += bio->size;
	rq->nr_segs++;
	rq->cmd_flags |= bio->flags & MERGE_STICKY_FLAGS;
}

void mq_rq_front_merge_bio(struct mq_request *rq, struct mq_bio *bio)
{
	bio->next = rq->bio;
	rq->bio = bio;
	rq->sector = bio->sector;
	rq->nr_bytes += bio->size;
	rq->nr_segs++;
	rq->cmd_flags |= bio->flags & MERGE_STICKY_FLAGS;
}

bool mq_rq_merge_requests(struct mq_request *rq, struct mq_request *next,
			  const struct mq_merge_limits *lim)
{
	if (!mq_rq_mergeable(rq) || !mq_rq_mergeable(next) ||
	    rq->op != next->op || rq->prio_class != next->prio_class ||
	    mq_rq_end_sector(rq) != next->sector ||
	    !merge_fits(rq, next->nr_bytes, next->nr_segs, lim))
		return false;
	rq->biotail->next = next->bio;
	rq->biotail = next->biotail;
	rq->nr_bytes += next->nr_bytes;
	rq->nr_segs += next->nr_segs;
	rq->cmd_flags |= next->cmd_flags & MERGE_STICKY_FLAGS;
	if (next->alloc_ns < rq->alloc_ns)
		rq->alloc_ns = next->alloc_ns;
	next->bio = next->biotail = NULL;
	next->nr_bytes = 0;
	next->nr_segs = 0;
	return true;
}
