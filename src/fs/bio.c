// SPDX-License-Identifier: MIT
/*
 * bio.c - the filesystem's way into the block layer: a set of bios in
 * flight for one purpose, ended together, and on it the batch a caller
 * waits for.
 *
 * Every device I/O of the filesystem goes through mq_submit_bio(); this
 * file only groups bios.  A set carries a few bios inline (in its
 * owner's structure) and grows an array past them, so a typical request
 * allocates nothing; the last bio's end_io - in the driver's reaper, the
 * completion worker or inline - runs the owner's callback with the first
 * error.  Bios are collected first and submitted together, under one
 * plug sized by their number: an array that grows cannot have members
 * in flight.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs_i.h"

void *mqfs_alloc_blocks_mem(size_t nblocks)
{
	void *p;

	if (posix_memalign(&p, MQFS_BLOCK_SIZE, nblocks * MQFS_BLOCK_SIZE))
		return NULL;
	memset(p, 0, nblocks * MQFS_BLOCK_SIZE);
	return p;
}

/* ---- a set of bios ----------------------------------------------------- */

void mqfs_bioset_init(struct mqfs_bioset *s, struct mq_bio *inline_bios,
		      unsigned n_inline, mqfs_bioset_done_t done)
{
	*s = (struct mqfs_bioset){ .bios = inline_bios, .cap = n_inline,
				   .inline_bios = inline_bios, .done = done };
}

void mqfs_bioset_release(struct mqfs_bioset *s)
{
	if (s->bios != s->inline_bios)
		free(s->bios);
	s->bios = s->inline_bios;
	s->nbios = 0;
}

/* Record @err unless an earlier error is there. */
static void bioset_set_error(struct mqfs_bioset *s, int err, uint64_t sector)
{
	int none = 0;

	if (atomic_compare_exchange_strong(&s->error, &none, err))
		s->error_sector = sector;
}

void mqfs_bioset_fail(struct mqfs_bioset *s, int err)
{
	bioset_set_error(s, err, 0);
	s->nbios = 0;
}

static void bioset_end_io(struct mq_bio *bio)
{
	struct mqfs_bioset *s = bio->private;

	if (bio->status)
		bioset_set_error(s, bio->status, bio->sector);
	/* The callback may free @s: nothing of it after. */
	if (atomic_fetch_sub(&s->pending, 1) == 1)
		s->done(s);
}

static int bioset_grow(struct mqfs_bioset *s)
{
	unsigned cap = s->cap ? 2 * s->cap : 4;
	struct mq_bio *nb = malloc(cap * sizeof(*nb));

	if (!nb)
		return -ENOMEM;
	memcpy(nb, s->bios, s->nbios * sizeof(*nb));
	if (s->bios != s->inline_bios)
		free(s->bios);
	s->bios = nb;
	s->cap = cap;
	return 0;
}

int mqfs_bioset_add(struct mqfs_bioset *s, enum mq_op op, uint64_t blk,
		    void *buf, uint32_t nblocks, uint16_t flags)
{
	bool empty = op == MQ_OP_FLUSH;

	do {
		uint32_t n = MQ_MIN(nblocks, MQFS_BIO_BLOCKS);
		struct mq_bio *bio;

		if (s->nbios == s->cap && bioset_grow(s)) {
			bioset_set_error(s, -ENOMEM, mqfs_blk_to_sector(blk));
			return -ENOMEM;
		}
		bio = &s->bios[s->nbios++];
		mq_bio_init(bio, op, empty ? 0 : mqfs_blk_to_sector(blk),
			    buf, empty ? 0 : n * MQFS_BLOCK_SIZE,
			    bioset_end_io, s);
		bio->flags = flags;
		bio->prio_class = s->prio_class;
		blk += n;
		if (buf)
			buf = (char *)buf + (size_t)n * MQFS_BLOCK_SIZE;
		nblocks -= n;
	} while (nblocks);
	return 0;
}

void mqfs_bioset_submit(struct mq_queue *q, struct mqfs_bioset *s)
{
	struct mq_bio *bios = s->bios;
	unsigned n = s->nbios;
	struct mq_plug plug;

	if (!n) {
		s->done(s);
		return;
	}
	atomic_store(&s->pending, n);
	mq_start_plug(&plug, n);
	for (unsigned i = 0; i < n; i++)
		mq_submit_bio(q, &bios[i]);
	mq_finish_plug(&plug);
}

/* ---- a batch waited for ------------------------------------------------ */

static void batch_done(struct mqfs_bioset *s)
{
	struct mqfs_bio_batch *b = mq_container_of(s, struct mqfs_bio_batch,
						   set);

	pthread_mutex_lock(&b->lock);
	b->finished = true;
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

void mqfs_batch_init(struct mqfs_bio_batch *b)
{
	mqfs_bioset_init(&b->set, b->inline_bios, MQFS_BATCH_INLINE,
			 batch_done);
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->cond, NULL);
	b->q = NULL;
	b->finished = false;
	b->error = 0;
	b->error_blk = 0;
}

void mqfs_batch_add(struct mq_queue *q, struct mqfs_bio_batch *b,
		    enum mq_op op, uint64_t blk, void *buf, uint32_t nblocks,
		    uint16_t flags)
{
	b->q = q;
	mqfs_bioset_add(&b->set, op, blk, buf, nblocks, flags);
}

int mqfs_batch_wait(struct mqfs_bio_batch *b)
{
	if (b->q)
		mqfs_bioset_submit(b->q, &b->set);
	else
		b->finished = true;
	mq_flush_plug();	/* an outer plug (the caller's) holds them */
	pthread_mutex_lock(&b->lock);
	while (!b->finished)
		pthread_cond_wait(&b->cond, &b->lock);
	pthread_mutex_unlock(&b->lock);
	b->error = atomic_load(&b->set.error);
	b->error_blk = b->set.error_sector >>
		       (MQFS_BLOCK_SHIFT - MQ_SECTOR_SHIFT);
	mqfs_bioset_release(&b->set);
	pthread_cond_destroy(&b->cond);
	pthread_mutex_destroy(&b->lock);
	return b->error;
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

/*
 * Make @nblocks at @blk read as zeroes: WRITE_ZEROES where the device
 * or file has it, else zeroes written (tmpfs has no ZERO_RANGE), as the
 * kernel's blkdev_issue_zeroout falls back to writing.
 */
int mqfs_bio_zeroout(struct mq_queue *q, uint64_t blk, uint32_t nblocks)
{
	int err = mqfs_bio_sync(q, MQ_OP_WRITE_ZEROES, blk, NULL, nblocks, 0);
	void *zeroes;

	if (err != -EOPNOTSUPP && err != -EINVAL)
		return err;
	zeroes = mqfs_alloc_blocks_mem(nblocks);
	if (!zeroes)
		return -ENOMEM;
	err = mqfs_bio_sync(q, MQ_OP_WRITE, blk, zeroes, nblocks, 0);
	free(zeroes);
	return err;
}
