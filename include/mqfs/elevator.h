/* SPDX-License-Identifier: MIT */
/*
 * elevator.h - the contract between the block layer core and an I/O
 * scheduler (elevator).
 *
 * Policy apart from mechanism: an elevator only orders requests it is
 * handed.  It never calls a driver and never touches tags.  The core owns
 * the back-merge hash and the merge decisions; the elevator supplies the
 * ordering (front-merge lookup, neighbours, dispatch order).
 *
 * Locking: the core takes e->lock once around insert, dispatch and merge
 * calls and may call dispatch_request several times under one hold, as
 * Yu Kuai's 2025 series "blk-mq-sched: support request batch dispatching
 * for sq elevator" proposes (Message-ID
 * 20250908092007.3796967-1-yukuai1@huaweicloud.com; no merged commit of
 * it was found, and the kernel's struct elevator_queue has no such lock).
 * Each op's comment says whether the lock is held.
 */
#ifndef MQFS_ELEVATOR_H
#define MQFS_ELEVATOR_H

#include <pthread.h>
#include <stdint.h>
#include "mqfs/blk.h"
#include "mqfs/clock.h"

#define MQ_ELV_HASH_BITS	6
#define MQ_ELV_HASH_SIZE	(1u << MQ_ELV_HASH_BITS)

enum mq_elv_merge {
	MQ_ELV_NO_MERGE = 0,
	MQ_ELV_FRONT_MERGE,
	MQ_ELV_BACK_MERGE,
};

/* What a request allocation asks for; limit_depth may set shallow_depth. */
struct mq_alloc_data {
	uint8_t op;
	uint32_t cmd_flags;
	unsigned shallow_depth;		/* 0: the whole tag space */
};

struct mq_elevator;

struct mq_elevator_ops {
	/* Required.  Allocate e->data.  Lock not held.  0 or -errno. */
	int (*init_sched)(struct mq_elevator *e, unsigned nr_requests);
	/* Required.  Free e->data; complain if balance counters are off. */
	void (*exit_sched)(struct mq_elevator *e);
	/* Optional.  Throttle an allocation (async_depth).  Lock not held. */
	void (*limit_depth)(struct mq_elevator *e, struct mq_alloc_data *d);
	/* Optional.  nr_requests changed.  Lock not held, queue frozen. */
	void (*depth_updated)(struct mq_elevator *e, unsigned nr_requests);
	/*
	 * Required.  Take every request on @list (linked by queuelist).  A
	 * request merged into another at insert is moved to @free and the
	 * core frees it after dropping the lock.  Lock held.
	 */
	void (*insert_requests)(struct mq_elevator *e, struct mq_list_head *list,
				bool at_head, struct mq_list_head *free);
	/* Required.  Next request to issue, or NULL.  Lock held. */
	struct mq_request *(*dispatch_request)(struct mq_elevator *e);
	/* Required.  Anything queued?  May be called without the lock. */
	bool (*has_work)(struct mq_elevator *e);
	/*
	 * Optional.  Find a request @bio can be front-merged into (its start
	 * equals the bio's end).  Return MQ_ELV_FRONT_MERGE and set *rq, or
	 * MQ_ELV_NO_MERGE.  Lock held.
	 */
	enum mq_elv_merge (*request_merge)(struct mq_elevator *e,
					   struct mq_request **rq,
					   const struct mq_bio *bio);
	/* Optional.  @rq grew by a bio merge of @type.  Lock held. */
	void (*request_merged)(struct mq_elevator *e, struct mq_request *rq,
			       enum mq_elv_merge type);
	/* Optional.  @next was absorbed into @rq; forget @next.  Lock held. */
	void (*requests_merged)(struct mq_elevator *e, struct mq_request *rq,
				struct mq_request *next);
	/* Optional.  Sort-order neighbours, for request merges.  Lock held. */
	struct mq_request *(*former_request)(struct mq_elevator *e,
					     struct mq_request *rq);
	struct mq_request *(*latter_request)(struct mq_elevator *e,
					     struct mq_request *rq);
	/* Optional.  Reset the private slot of a new request.  No lock. */
	void (*prepare_request)(struct mq_elevator *e, struct mq_request *rq);
	/* Optional.  @rq completed or was freed after a merge.  No lock. */
	void (*finish_request)(struct mq_elevator *e, struct mq_request *rq);
	/* Optional.  Add the per-level counts to @sum.  Takes the lock. */
	void (*prio_stats)(struct mq_elevator *e, struct mq_prio_stats *sum);
};

/*
 * A tunable: an int64_t field at @offset in the elevator's data, shown
 * in user units (value / scale) and stored after a range check.
 */
struct mq_elv_attr {
	const char *name;
	size_t offset;
	int64_t min, max;		/* in user units */
	int64_t scale;			/* e.g. 1000000 for ms shown, ns kept */
	const char *help;
};

struct mq_elevator_type {
	const char *name;
	const char *alias;		/* Optional ("deadline") */
	const struct mq_elevator_ops *ops;
	const struct mq_elv_attr *attrs;
	unsigned nr_attrs;
};

/*
 * One elevator instance per hardware queue: its own lock, its own
 * scheduler tags; it orders only that hardware queue's requests.
 */
struct mq_elevator {
	const struct mq_elevator_type *type;
	void *data;			/* the elevator's */
	struct mq_queue *q;
	pthread_mutex_t lock;
	struct mq_request *last_merge;	/* one-hit merge cache */
	uint32_t max_rq_bytes;		/* merge limit, from the queue */
	uint16_t max_segs;		/* merge limit, from the queue */
	bool nomerges;			/* merges off (A/B switch) */
	struct mq_hlist_head hash[MQ_ELV_HASH_SIZE];
};

/* Registry: an explicit table, checked for required ops. */
const struct mq_elevator_type *mq_elv_find(const char *name);
int mq_elv_check_type(const struct mq_elevator_type *t);
unsigned mq_elv_list(const char **names, unsigned max);

/* Back-merge hash helpers for elevators (lock held). */
void mq_elv_rqhash_add(struct mq_elevator *e, struct mq_request *rq);
void mq_elv_rqhash_del(struct mq_elevator *e, struct mq_request *rq);
void mq_elv_rqhash_reposition(struct mq_elevator *e, struct mq_request *rq);
struct mq_request *mq_elv_rqhash_find(struct mq_elevator *e,
				      uint64_t end_sector);
/*
 * Insert-time merge: try to append @rq to a queued request ending where
 * @rq starts.  On success @rq's bios moved and the caller frees @rq.
 */
bool mq_elv_attempt_insert_merge(struct mq_elevator *e,
				 struct mq_request *rq);
/* Forget @rq in the core's merge state (hash, last_merge).  Lock held. */
void mq_elv_remove_request(struct mq_elevator *e, struct mq_request *rq);
/* Whether the request may take part in merges at all. */
bool mq_rq_mergeable(const struct mq_request *rq);

extern const struct mq_elevator_type mq_elv_deadline;

#endif /* MQFS_ELEVATOR_H */
