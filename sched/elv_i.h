/* SPDX-License-Identifier: MIT */
/*
 * elv_i.h - the block layer core's side of the elevator: creating an
 * instance, the bio merge, tunables.  Private to sched/.
 */
#ifndef MQFS_SCHED_ELV_I_H
#define MQFS_SCHED_ELV_I_H

#include "mqfs/elevator.h"

/* Allocate and init an instance of @type; NULL on failure (no memory,
 * or the type's init_sched refused). */
struct mq_elevator *mq_elv_alloc(const struct mq_elevator_type *type,
				 struct mq_queue *q, unsigned nr_requests,
				 uint32_t max_rq_bytes, uint16_t max_segs,
				 bool nomerges);
void mq_elv_free(struct mq_elevator *e);

/*
 * Merge @bio into a queued request (lock held).  Returns true when merged;
 * *absorbed is then a request that a follow-up request merge emptied and
 * that the caller must free after dropping the lock (or NULL).
 */
bool mq_elv_bio_merge(struct mq_elevator *e, struct mq_bio *bio,
		      struct mq_request **absorbed);

int mq_elv_attr_show(struct mq_elevator *e, const char *name,
		     char *buf, size_t len);
int mq_elv_attr_store(struct mq_elevator *e, const char *name,
		      const char *value);

#endif /* MQFS_SCHED_ELV_I_H */
