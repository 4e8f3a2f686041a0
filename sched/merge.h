/* SPDX-License-Identifier: MIT */
/*
 * merge.h - request-level merge primitives shared by the plug, the
 * elevator core and the elevators.  Pure functions of requests and bios:
 * no locks, no queue state.
 */
#ifndef MQFS_SCHED_MERGE_H
#define MQFS_SCHED_MERGE_H

#include <stdbool.h>
#include <stdint.h>
#include "mqfs/blk.h"
#include "mqfs/elevator.h"

struct mq_merge_limits {
	uint32_t max_bytes;		/* largest request */
	uint16_t max_segs;		/* most bios in one request */
};

bool mq_rq_mergeable(const struct mq_request *rq);
/* Which side of @rq @bio touches, if it may merge there at all. */
enum mq_elv_merge mq_rq_try_merge(const struct mq_request *rq,
				  const struct mq_bio *bio,
				  const struct mq_merge_limits *lim);
void mq_rq_back_merge_bio(struct mq_request *rq, struct mq_bio *bio);
void mq_rq_front_merge_bio(struct mq_request *rq, struct mq_bio *bio);
/* Append @next (which starts where @rq ends) to @rq if allowed. */
bool mq_rq_merge_requests(struct mq_request *rq, struct mq_request *next,
			  const struct mq_merge_limits *lim);

#endif /* MQFS_SCHED_MERGE_H */
