/* SPDX-License-Identifier: MIT */
/*
 * elevator.c - the elevator registry, the back-merge hash and the merge
 * decisions that are the same for every elevator (the kernel's
 * block/elevator.c and blk-merge.c, restated).
 *
 * Merge order for a bio, as elv_merge(): the one-hit last_merge cache,
 * then the hash of requests by END sector (back merge), then the
 * elevator's own front-merge lookup.  A successful bio merge is followed
 * by an attempt to merge the grown request with its sort-order neighbour.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "elv_i.h"
#include "mqfs/lock.h"
#include "merge.h"

static const struct mq_elevator_type *const elv_registry[] = {
	&mq_elv_deadline,
};

int mq_elv_check_type(const struct mq_elevator_type *t)
{
	const struct mq_elevator_ops *ops = t->ops;

	if (!t->name || !ops || !ops->init_sched || !ops->exit_sched ||
	    !ops->insert_requests || !ops->dispatch_request || !ops->has_work) {
		fprintf(stderr, "mqfs: elevator %s: required op missing\n",
			t->name ? t->name : "(unnamed)");
		return -EINVAL;
	}
	return 0;
}

const struct mq_elevator_type *mq_elv_find(const char *name)
{
	for (size_t i = 0; i < MQ_ARRAY_SIZE(elv_registry); i++) {
		const struct mq_elevator_type *t = elv_registry[i];

		if (!strcmp(t->name, name) ||
		    (t->alias && !strcmp(t->alias, name)))
			return mq_elv_check_type(t) ? NULL : t;
	}
	return NULL;
}

unsigned mq_elv_list(const char **names, unsigned max)
{
	unsigned n = 0;

	if (n < max)
		names[n++] = "none";
	for (size_t i = 0; i < MQ_ARRAY_SIZE(elv_registry) && n < max; i++)
		names[n++] = elv_registry[i]->name;
	return n;
}

struct mq_elevator *mq_elv_alloc(const struct mq_elevator_type *type,
				 struct mq_queue *q, unsigned nr_requests,
				 uint32_t max_rq_bytes, uint16_t max_segs,
				 bool nomerges)
{
	struct mq_elevator *e = calloc(1, sizeof(*e));
	int ret;

	if (!e)
		return NULL;
	e->type = type;
	e->q = q;
	e->max_rq_bytes = max_rq_bytes;
	e->max_segs = max_segs;
	e->nomerges = nomerges;
	mq_lock_init_short(&e->lock);
	ret = type->ops->init_sched(e, nr_requests);
	if (ret) {
		pthread_mutex_destroy(&e->lock);
		free(e);
		return NULL;
	}
	return e;
}

void mq_elv_free(struct mq_elevator *e)
{
	e->type->ops->exit_sched(e);
	pthread_mutex_destroy(&e->lock);
	free(e);
}

/* Hash on the end sector: the key a back merge looks up. */
static unsigned elv_hash_key(uint64_t sector)
{
	return (unsigned)((sector * 0x9E3779B97F4A7C15ull) >>
			  (64 - MQ_ELV_HASH_BITS));
}

void mq_elv_rqhash_add(struct mq_elevator *e, struct mq_request *rq)
{
	mq_hlist_add_head(&rq->hash,
			  &e->hash[elv_hash_key(mq_rq_end_sector(rq))]);
	if (!e->last_merge)
		e->last_merge = rq;
}

void mq_elv_rqhash_del(struct mq_elevator *e, struct mq_request *rq)
{
	mq_hlist_del_init(&rq->hash);
}

void mq_elv_rqhash_reposition(struct mq_elevator *e, struct mq_request *rq)
{
	mq_hlist_del_init(&rq->hash);
	mq_hlist_add_head(&rq->hash,
			  &e->hash[elv_hash_key(mq_rq_end_sector(rq))]);
}

struct mq_request *mq_elv_rqhash_find(struct mq_elevator *e,
				      uint64_t end_sector)
{
	struct mq_hlist_node *n = e->hash[elv_hash_key(end_sector)].first;

	for (; n; n = n->next) {
		struct mq_request *rq = mq_container_of(n, struct mq_request,
							 hash);

		if (mq_rq_end_sector(rq) == end_sector && mq_rq_mergeable(rq))
			return rq;
	}
	return NULL;
}

void mq_elv_remove_request(struct mq_elevator *e, struct mq_request *rq)
{
	mq_elv_rqhash_del(e, rq);
	if (e->last_merge == rq)
		e->last_merge = NULL;
}

static struct mq_merge_limits elv_limits(const struct mq_elevator *e)
{
	return (struct mq_merge_limits){ .max_bytes = e->max_rq_bytes,
					 .max_segs = e->max_segs };
}

/* @next was absorbed into @rq: tell the elevator, fix the core's state. */
static void elv_merged_requests(struct mq_elevator *e, struct mq_request *rq,
				struct mq_request *next)
{
	if (e->type->ops->requests_merged)
		e->type->ops->requests_merged(e, rq, next);
	mq_elv_remove_request(e, next);
	if (!mq_hlist_unhashed(&rq->hash))
		mq_elv_rqhash_reposition(e, rq);
	e->last_merge = rq;
}

bool mq_elv_attempt_insert_merge(struct mq_elevator *e, struct mq_request *rq)
{
	struct mq_merge_limits lim = elv_limits(e);
	struct mq_request *prev;

	if (e->nomerges || !mq_rq_mergeable(rq))
		return false;
	/* The one-hit cache first, then the hash, as the kernel does. */
	prev = e->last_merge;
	if (!prev || !mq_rq_merge_requests(prev, rq, &lim)) {
		prev = mq_elv_rqhash_find(e, rq->sector);
		if (!prev || prev == e->last_merge ||
		    !mq_rq_merge_requests(prev, rq, &lim))
			return false;
	}
	elv_merged_requests(e, prev, rq);
	return true;
}

/* Find the request @bio can join and on which side. */
static enum mq_elv_merge elv_find_merge(struct mq_elevator *e,
					struct mq_bio *bio,
					struct mq_request **out)
{
	struct mq_merge_limits lim = elv_limits(e);
	struct mq_request *rq = e->last_merge;
	enum mq_elv_merge type;

	if (rq) {
		type = mq_rq_try_merge(rq, bio, &lim);
		if (type != MQ_ELV_NO_MERGE)
			goto found;
	}
	rq = mq_elv_rqhash_find(e, bio->sector);
	if (rq && mq_rq_try_merge(rq, bio, &lim) == MQ_ELV_BACK_MERGE) {
		type = MQ_ELV_BACK_MERGE;
		goto found;
	}
	if (!e->type->ops->request_merge ||
	    e->type->ops->request_merge(e, &rq, bio) != MQ_ELV_FRONT_MERGE ||
	    mq_rq_try_merge(rq, bio, &lim) != MQ_ELV_FRONT_MERGE)
		return MQ_ELV_NO_MERGE;
	type = MQ_ELV_FRONT_MERGE;
found:
	*out = rq;
	return type;
}

static struct mq_request *elv_back_merge(struct mq_elevator *e,
					 struct mq_request *rq,
					 struct mq_bio *bio)
{
	struct mq_merge_limits lim = elv_limits(e);
	const struct mq_elevator_ops *ops = e->type->ops;
	struct mq_request *next;

	mq_rq_back_merge_bio(rq, bio);
	mq_elv_rqhash_reposition(e, rq);
	if (ops->request_merged)
		ops->request_merged(e, rq, MQ_ELV_BACK_MERGE);
	e->last_merge = rq;
	next = ops->latter_request ? ops->latter_request(e, rq) : NULL;
	if (next && mq_rq_merge_requests(rq, next, &lim)) {
		elv_merged_requests(e, rq, next);
		return next;
	}
	return NULL;
}

static struct mq_request *elv_front_merge(struct mq_elevator *e,
					  struct mq_request *rq,
					  struct mq_bio *bio)
{
	struct mq_merge_limits lim = elv_limits(e);
	const struct mq_elevator_ops *ops = e->type->ops;
	struct mq_request *prev;

	mq_rq_front_merge_bio(rq, bio);
	if (ops->request_merged)
		ops->request_merged(e, rq, MQ_ELV_FRONT_MERGE);
	e->last_merge = rq;
	prev = ops->former_request ? ops->former_request(e, rq) : NULL;
	if (prev && mq_rq_merge_requests(prev, rq, &lim)) {
		elv_merged_requests(e, prev, rq);
		return rq;
	}
	return NULL;
}

bool mq_elv_bio_merge(struct mq_elevator *e, struct mq_bio *bio,
		      struct mq_request **absorbed)
{
	struct mq_request *rq = NULL;

	*absorbed = NULL;
	if (e->nomerges)
		return false;
	switch (elv_find_merge(e, bio, &rq)) {
	case MQ_ELV_BACK_MERGE:
		*absorbed = elv_back_merge(e, rq, bio);
		return true;
	case MQ_ELV_FRONT_MERGE:
		*absorbed = elv_front_merge(e, rq, bio);
		return true;
	default:
		return false;
	}
}

static const struct mq_elv_attr *elv_attr_find(struct mq_elevator *e,
					       const char *name)
{
	for (unsigned i = 0; i < e->type->nr_attrs; i++)
		if (!strcmp(e->type->attrs[i].name, name))
			return &e->type->attrs[i];
	return NULL;
}

int mq_elv_attr_show(struct mq_elevator *e, const char *name,
		     char *buf, size_t len)
{
	const struct mq_elv_attr *a = elv_attr_find(e, name);
	int64_t v;

	if (!a)
		return -ENOENT;
	pthread_mutex_lock(&e->lock);
	v = __atomic_load_n((int64_t *)((char *)e->data + a->offset),
			    __ATOMIC_RELAXED);
	pthread_mutex_unlock(&e->lock);
	snprintf(buf, len, "%" PRId64, v / a->scale);
	return 0;
}

int mq_elv_attr_store(struct mq_elevator *e, const char *name,
		      const char *value)
{
	const struct mq_elv_attr *a = elv_attr_find(e, name);
	char *end;
	long long v;

	if (!a)
		return -ENOENT;
	errno = 0;
	v = strtoll(value, &end, 10);
	while (*end == '\n' || *end == ' ')
		end++;
	if (errno || end == value || *end || v < a->min || v > a->max)
		return -EINVAL;
	pthread_mutex_lock(&e->lock);
	/* Atomic: limit_depth reads async_depth without the lock. */
	__atomic_store_n((int64_t *)((char *)e->data + a->offset),
			 (int64_t)v * a->scale, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&e->lock);
	return 0;
}
