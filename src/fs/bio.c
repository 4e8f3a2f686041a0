// SPDX-License-Identifier: MIT
/*
 * bio.c - the filesystem's way into the block layer: batches of bios
 * submitted together (inside the caller's plug) and waited for together.
 *
 * Every device I/O of the filesystem goes through mq_submit_bio(); this
 * file only adds the waiting.  Bios of a batch complete in the driver's
 * reaper (or inline), so the batch is a mutex and a condition variable.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs_i.h"

struct batch_bio {
	struct mq_bio bio;
	struct mqfs_bio_batch *batch;
	uint64_t blk;
};

void *mqfs_alloc_blocks_mem(size_t nblocks)
{
	void *p;

	if (posix_memalign(&p, MQFS_BLOCK_SIZE, nblocks * MQFS_BLOCK_SIZE))
		return NULL;
	memset(p, 0, nblocks * MQFS_BLOCK_SIZE);
	return p;
}

void mqfs_batch_init(struct mqfs_bio_batch *b)
{
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->done, NULL);
	b->pending = 0;
	b->error = 0;
	b->error_blk = 0;
}

static void batch_end_io(struct mq_bio *bio)
{
	struct batch_bio *bb = mq_container_of(bio, struct batch_bio, bio);
	struct mqfs_bio_batch *b = bb->batch;

	pthread_mutex_lock(&b->lock);
	if (bio->status && !b->error) {
		b->error = bio->status;
		b->error_blk = bb->blk;
	}
	if (--b->pending == 0)
		pthread_cond_broadcast(&b->done);
	pthread_mutex_unlock(&b->lock);
	free(bb);
}

void mqfs_batch_add(struct mq_queue *q, struct mqfs_bio_batch *b,
		    enum mq_op op, uint64_t blk, void *buf, uint32_t nblocks,
		    uint16_t flags)
{
	struct batch_bio *bb = malloc(sizeof(*bb));

	if (!bb) {
		pthread_mutex_lock(&b->lock);
		if (!b->error)
			b->error = -ENOMEM;
		pthread_mutex_unlock(&b->lock);
		return;
	}
	bb->batch = b;
	bb->blk = blk;
	mq_bio_init(&bb->bio, op, op == MQ_OP_FLUSH ? 0 : mqfs_blk_to_sector(blk),
		    buf, op == MQ_OP_FLUSH ? 0 : nblocks * MQFS_BLOCK_SIZE,
		    batch_end_io, bb);
	bb->bio.flags = flags;
	pthread_mutex_lock(&b->lock);
	b->pending++;
	pthread_mutex_unlock(&b->lock);
	mq_submit_bio(q, &bb->bio);
}

int mqfs_batch_wait(struct mqfs_bio_batch *b)
{
	int err;

	mq_flush_plug();
	pthread_mutex_lock(&b->lock);
	while (b->pending)
		pthread_cond_wait(&b->done, &b->lock);
	err = b->error;
	pthread_mutex_unlock(&b->lock);
	pthread_cond_destroy(&b->done);
	pthread_mutex_destroy(&b->lock);
	return err;
}

int mqfs_bio_sync(struct mq_queue *q, enum mq_op op, uint64_t blk,
		  void *buf, uint32_t nblocks, uint16_t flags)
{
	struct mqfs_bio_batch b;

	mqfs_batch_init(&b);
	mqfs_batch_add(q, &b, op, blk, buf, nblocks, flags | MQ_REQ_SYNC);
	return mqfs_batch_wait(&b);
}

int mqfs_flush_device(struct mq_queue *q)
{
	return mqfs_bio_sync(q, MQ_OP_FLUSH, 0, NULL, 0, 0);
}
