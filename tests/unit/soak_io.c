/* SPDX-License-Identifier: MIT */
/*
 * soak_io.c - test_soak's submitting threads: random reads, writes and
 * flushes in the thread's quarter of the device, each knowing the status
 * it must end with; writes stamp every sector, reads are checked against
 * the thread's model, and the round ends with a read-back of the region.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "soak_fixture.h"

/* ---- data pattern ------------------------------------------------------- */

/* A sector written by thread @tid as its write @seq: header, then noise. */
static void pat_fill(uint64_t *w, uint64_t rseed, unsigned tid, uint32_t seq,
		     uint64_t sector)
{
	uint64_t x = mix64(rseed ^ ((uint64_t)tid << 56) ^
			   ((uint64_t)seq << 24) ^ (sector * 0x9e37ull)) | 1;

	w[0] = 0x534f414bull << 32 | (uint64_t)tid << 24;
	w[1] = seq;
	w[2] = sector;
	w[3] = rseed;
	for (unsigned i = 4; i < MQ_SECTOR_SIZE / 8; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		w[i] = x;
	}
}

/* 0 when @data holds what the model says (all zeroes for seq 0). */
int pat_check(const void *data, uint64_t rseed, unsigned tid, uint32_t seq,
	      uint64_t sector)
{
	uint64_t want[MQ_SECTOR_SIZE / 8];

	if (seq)
		pat_fill(want, rseed, tid, seq, sector);
	else
		memset(want, 0, sizeof(want));
	return memcmp(data, want, sizeof(want));
}

void pat_describe(const void *data, char *out, size_t len)
{
	const uint64_t *w = data;

	if ((w[0] >> 32) != 0x534f414bull) {
		snprintf(out, len, "no stamp (%#" PRIx64 " %#" PRIx64 ")",
			 w[0], w[1]);
		return;
	}
	snprintf(out, len, "thread %u seq %" PRIu64 " sector %" PRIu64,
		 (unsigned)(w[0] >> 24) & 0xff, w[1], w[2]);
}

/* ---- expected status ---------------------------------------------------- */

/* The documented rule of one fault device (mq_dev.h), restated. */
static bool rule_hits(const struct mq_fault_config *c, unsigned op,
		      uint64_t sector, uint64_t end)
{
	if (!c->eio_sector_end && !c->eio_op_mask)
		return false;
	if (c->eio_op_mask && !(c->eio_op_mask & OPBIT(op)))
		return false;
	if (!c->eio_sector_end)
		return true;
	if (op == MQ_OP_FLUSH)		/* a flush touches no range */
		return false;
	return sector < c->eio_sector_end && end > c->eio_sector_start;
}

/* The first layer (top down) that fails the I/O, or nr_layers. */
unsigned stop_layer(const struct soak_round *r, unsigned op, uint64_t sector,
		    uint64_t end)
{
	for (unsigned i = 0; i < r->nr_layers; i++)
		if (rule_hits(&r->layers[i].cfg, op, sector, end))
			return i;
	return r->nr_layers;
}

/* ---- completion side ---------------------------------------------------- */

static const char *op_name(unsigned op)
{
	return op == MQ_OP_READ ? "read" : op == MQ_OP_WRITE ? "write"
					 : op == MQ_OP_FLUSH ? "flush" : "?";
}

static void sio_end_io(struct mq_bio *bio)
{
	struct sio *s = bio->private;
	struct soak_thread *t = s->t;
	int want = SIO_INFLIGHT;

	if (!atomic_compare_exchange_strong(&s->state, &want, SIO_DONE)) {
		round_error(t->r, "thread %u slot %td: end_io in state %d "
			    "(completed twice or never issued)", t->id,
			    s - t->slots, want);
		return;
	}
	s->status = bio->status;
	atomic_fetch_add(&t->r->completed, 1);
	pthread_mutex_lock(&t->lock);
	s->next_done = t->done_list;
	t->done_list = s;
	pthread_cond_signal(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

static void verify_read(struct soak_thread *t, struct sio *s)
{
	struct soak_round *r = t->r;

	for (uint32_t i = 0; i < s->nblk * BLK_SECT; i++) {
		uint64_t rel = (uint64_t)s->blk * BLK_SECT + i;
		const unsigned char *d = s->buf + (size_t)i * MQ_SECTOR_SIZE;
		char got[128];

		if (!pat_check(d, r->seed, t->id, t->shadow[rel], t->base + rel))
			continue;
		pat_describe(d, got, sizeof(got));
		round_error(r, "thread %u read #%" PRIu64 " sector %" PRIu64
			    ": want seq %u, read %s", t->id, s->nr,
			    t->base + rel, t->shadow[rel], got);
		return;
	}
	t->verified += s->nblk * BLK_SECT;
}

/* A failed read never reached a device: the poison must be intact. */
static void verify_untouched(struct soak_thread *t, struct sio *s)
{
	size_t n = (size_t)s->nblk * BLK;

	for (size_t i = 0; i < n; i++)
		if (s->buf[i] != 0xa5) {
			round_error(t->r, "thread %u read #%" PRIu64 " sector %"
				    PRIu64 " failed with %d but its buffer "
				    "changed at byte %zu", t->id, s->nr,
				    s->bio.sector, s->status, i);
			return;
		}
}

static void reap_one(struct soak_thread *t, struct sio *s)
{
	struct soak_round *r = t->r;
	int st = atomic_load(&s->state);

	if (st != SIO_DONE)
		round_error(r, "thread %u slot %td reaped in state %d", t->id,
			    s - t->slots, st);
	if (s->status != s->expect)
		round_error(r, "thread %u %s #%" PRIu64 " sectors %" PRIu64
			    "+%u: status %d, want %d (stop layer %u of %u)",
			    t->id, op_name(s->op), s->nr, s->bio.sector,
			    s->nblk * BLK_SECT, s->status, s->expect, s->stop,
			    r->nr_layers);
	else if (s->op == MQ_OP_READ && !s->status)
		verify_read(t, s);
	else if (s->op == MQ_OP_READ)
		verify_untouched(t, s);
	if (s->op != MQ_OP_FLUSH)
		memset(t->busy + s->blk, 0, s->nblk);
	atomic_store(&s->state, SIO_FREE);
	t->free_idx[t->nr_free++] = (unsigned)(s - t->slots);
	t->reaped++;
}

static void reap(struct soak_thread *t, bool wait)
{
	struct sio *list;

	pthread_mutex_lock(&t->lock);
	while (wait && !t->done_list)
		pthread_cond_wait(&t->cond, &t->lock);
	list = t->done_list;
	t->done_list = NULL;
	pthread_mutex_unlock(&t->lock);
	while (list) {
		struct sio *next = list->next_done;

		reap_one(t, list);
		list = next;
	}
}

/* Wait for one completion; our plugged requests go out first. */
static void reap_wait(struct soak_thread *t)
{
	if (t->issued == t->reaped)
		return;
	mq_flush_plug();
	reap(t, true);
}

/* ---- submission side ---------------------------------------------------- */

static void issue(struct soak_thread *t, unsigned op, uint32_t blk,
		  uint32_t nblk, uint16_t flags, uint8_t prio)
{
	struct soak_round *r = t->r;
	struct sio *s = &t->slots[t->free_idx[--t->nr_free]];
	uint64_t sector = op == MQ_OP_FLUSH ? 0
			  : t->base + (uint64_t)blk * BLK_SECT;
	uint32_t bytes = op == MQ_OP_FLUSH ? 0 : nblk * BLK;

	s->op = (uint8_t)op;
	s->blk = blk;
	s->nblk = op == MQ_OP_FLUSH ? 0 : nblk;
	s->stop = stop_layer(r, op, sector, sector + bytes / MQ_SECTOR_SIZE);
	s->expect = s->stop < r->nr_layers ? -EIO : 0;
	s->status = 1;
	s->nr = t->issued;
	s->seq = 0;
	if (op != MQ_OP_FLUSH)
		memset(t->busy + blk, 1, nblk);
	if (op == MQ_OP_WRITE) {
		s->seq = ++t->seq;
		for (uint32_t i = 0; i < nblk * BLK_SECT; i++) {
			uint64_t rel = (uint64_t)blk * BLK_SECT + i;

			pat_fill((uint64_t *)(s->buf + (size_t)i * MQ_SECTOR_SIZE),
				 r->seed, t->id, s->seq, t->base + rel);
			if (!s->expect)
				t->shadow[rel] = s->seq;
		}
	} else if (op == MQ_OP_READ) {
		memset(s->buf, 0xa5, bytes);
	}
	mq_bio_init(&s->bio, (enum mq_op)op, sector,
		    op == MQ_OP_FLUSH ? NULL : s->buf, bytes, sio_end_io, s);
	s->bio.flags = flags;
	s->bio.prio_class = prio;
	t->ops[op == MQ_OP_READ ? 0 : op == MQ_OP_WRITE ? 1 : 2]++;
	t->stop_dir[s->stop][mq_op_dir(op)]++;
	t->issued++;
	atomic_store(&s->state, SIO_INFLIGHT);
	mq_submit_bio(r->q, &s->bio);
}

static bool range_busy(const struct soak_thread *t, uint32_t blk,
		       uint32_t nblk)
{
	for (uint32_t i = 0; i < nblk; i++)
		if (t->busy[blk + i])
			return true;
	return false;
}

/* A block near an edge of a bad range inside our region, if any. */
static bool pick_near(struct soak_thread *t, uint32_t nblk, uint32_t *blk)
{
	struct soak_round *r = t->r;
	unsigned i = rnd_range(&t->rng, 0, r->nr_layers - 1);
	const struct mq_fault_config *c = &r->layers[i].cfg;
	uint64_t edge;
	int64_t b;

	if (!c->eio_sector_end)
		return false;
	edge = rnd(&t->rng) & 1 ? c->eio_sector_start : c->eio_sector_end;
	if (edge + MAX_BYTES / MQ_SECTOR_SIZE < t->base ||
	    edge >= t->base + REGION_SECT + MAX_BYTES / MQ_SECTOR_SIZE)
		return false;
	b = ((int64_t)edge - (int64_t)t->base) / BLK_SECT;
	b += (int64_t)rnd_range(&t->rng, 0, 2 * MAX_BLKS) - MAX_BLKS;
	if (b < 0)
		b = 0;
	if (b + nblk > (int64_t)REGION_BLKS)
		b = (int64_t)(REGION_BLKS - nblk);
	*blk = (uint32_t)b;
	return true;
}

static uint8_t gen_prio(struct soak_thread *t)
{
	unsigned v = rnd_range(&t->rng, 0, 99);

	if (v < 3)
		return MQ_PRIO_RT;
	if (v < 5)
		return MQ_PRIO_IDLE;
	return v < 25 ? MQ_PRIO_BE : MQ_PRIO_NONE;
}

/* One random op; false when four tries only found busy ranges. */
static bool issue_random(struct soak_thread *t)
{
	struct soak_round *r = t->r;
	uint16_t flags = 0;
	uint8_t prio = gen_prio(t);

	if (rnd_pct(&t->rng, r->sync_pct))
		flags |= MQ_REQ_SYNC;
	if (rnd_pct(&t->rng, r->task_pct))
		flags |= MQ_REQ_COMPLETE_IN_TASK;
	if (rnd_pct(&t->rng, r->flush_pct)) {
		issue(t, MQ_OP_FLUSH, 0, 0, flags & MQ_REQ_COMPLETE_IN_TASK,
		      prio);
		return true;
	}
	for (int tries = 0; tries < 4; tries++) {
		unsigned op = rnd_pct(&t->rng, r->write_pct) ? MQ_OP_WRITE
							      : MQ_OP_READ;
		uint32_t nblk = rnd_range(&t->rng, 0, 3) ? rnd_range(&t->rng, 1, 4)
						     : rnd_range(&t->rng, 1, MAX_BLKS);
		uint32_t blk;

		if (rnd_pct(&t->rng, r->near_pct) && pick_near(t, nblk, &blk))
			;
		else if (rnd_pct(&t->rng, r->seq_pct))
			blk = (uint32_t)t->cursor;
		else
			blk = (uint32_t)(rnd(&t->rng) % REGION_BLKS);
		if (blk + nblk > REGION_BLKS)
			blk = REGION_BLKS - nblk;
		if (range_busy(t, blk, nblk))
			continue;
		t->cursor = (blk + nblk) % REGION_BLKS;
		if (op == MQ_OP_WRITE && rnd_pct(&t->rng, r->fua_pct))
			flags |= MQ_REQ_FUA;
		issue(t, op, blk, nblk, flags, prio);
		return true;
	}
	return false;
}

/* One bio unplugged, or a batch of 1-16 under a plug. */
static void thread_batch(struct soak_thread *t)
{
	struct soak_round *r = t->r;
	bool plugged = rnd_pct(&t->rng, r->plug_pct);
	unsigned n = plugged ? rnd_range(&t->rng, 1, 16) : 1;
	struct mq_plug plug;

	if (plugged)
		mq_start_plug(&plug, rnd_range(&t->rng, 1, 32));
	for (unsigned k = 0; k < n; k++) {
		reap(t, false);
		while (!t->nr_free)
			reap_wait(t);
		if (!issue_random(t)) {
			reap_wait(t);
			break;
		}
	}
	if (plugged)
		mq_finish_plug(&plug);
}

static void thread_wait_all(struct soak_thread *t)
{
	while (t->reaped < t->issued)
		reap_wait(t);
}

static void issue_read_back(struct soak_thread *t, uint32_t blk, uint32_t nblk)
{
	while (!t->nr_free)
		reap_wait(t);
	issue(t, MQ_OP_READ, blk, nblk, MQ_REQ_SYNC, MQ_PRIO_NONE);
	reap(t, false);
}

/*
 * Read the whole region back in 64 KiB pieces; a piece the model says
 * fails is read again block by block, so only blocks that really touch
 * a bad range go unread (the device check at the end covers them).
 */
static void thread_readback(struct soak_thread *t)
{
	struct soak_round *r = t->r;

	for (uint32_t blk = 0; blk < REGION_BLKS; blk += MAX_BLKS) {
		uint64_t sector = t->base + (uint64_t)blk * BLK_SECT;

		if (stop_layer(r, MQ_OP_READ, sector,
			       sector + MAX_BLKS * BLK_SECT) == r->nr_layers) {
			issue_read_back(t, blk, MAX_BLKS);
			continue;
		}
		for (uint32_t b = blk; b < blk + MAX_BLKS; b++)
			issue_read_back(t, b, 1);
	}
}

void *thread_main(void *p)
{
	struct soak_thread *t = p;
	struct soak_round *r = t->r;

	while (mq_clock_real_ns() < r->end_ns && !round_nerr(r))
		thread_batch(t);
	thread_wait_all(t);
	if (!round_nerr(r)) {
		thread_readback(t);
		thread_wait_all(t);
	}
	atomic_fetch_add(&r->threads_done, 1);
	return NULL;
}
