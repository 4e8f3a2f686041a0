/* SPDX-License-Identifier: MIT */
/*
 * stress_worker.c - test_stress's submitting threads: random bios, in
 * plugs or not, each completed exactly once with status 0; on the ram
 * device every sector stamped by its writer and verified by reads.
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stress_fixture.h"

/* ---- data pattern (ram) ---------------------------------------------- */

static uint64_t pat_word(unsigned tid, uint32_t seq, uint64_t sector,
			 unsigned i)
{
	uint64_t s = ((uint64_t)tid << 56) ^ ((uint64_t)seq << 20) ^
		     (sector << 7) ^ i;

	return rnd(&s);
}

/* Every sector: thread id and sequence, its own number, then noise. */
static void pat_fill(uint64_t *w, unsigned tid, uint32_t seq, uint64_t sector)
{
	w[0] = ((uint64_t)tid << 32) | seq;
	w[1] = sector;
	for (unsigned i = 2; i < MQ_SECTOR_SIZE / 8; i++)
		w[i] = pat_word(tid, seq, sector, i);
}

/* 0 when the sector holds the expected content (all zero for seq 0). */
int pat_check(const void *data, unsigned tid, uint32_t seq, uint64_t sector)
{
	uint64_t want[MQ_SECTOR_SIZE / 8];

	if (seq)
		pat_fill(want, tid, seq, sector);
	else
		memset(want, 0, sizeof(want));
	return memcmp(data, want, sizeof(want));
}

static void pat_describe(const void *data, char *out, size_t len)
{
	const uint64_t *w = data;

	snprintf(out, len, "tid %u seq %u sector %" PRIu64,
		 (unsigned)(w[0] >> 32), (unsigned)w[0], w[1]);
}

/* ---- completion side ------------------------------------------------- */

static void sbio_end_io(struct mq_bio *bio)
{
	struct sbio *sb = mq_container_of(bio, struct sbio, bio);
	struct worker *w = bio->private;

	sb->status = bio->status;
	if (atomic_fetch_add(&sb->done, 1) != 0) {
		run_error(w->run, "seed %#" PRIx64 ": thread %u bio %td completed twice",
			  w->run->seed, w->id, sb - w->bios);
		return;
	}
	atomic_fetch_add(&w->run->completed, 1);
	pthread_mutex_lock(&w->lock);
	sb->next_done = w->done_list;
	w->done_list = sb;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

static void verify_read(struct worker *w, struct sbio *sb)
{
	const unsigned char *buf = sb->bio.buf;

	for (uint32_t i = 0; i < sb->nsect; i++) {
		uint64_t rel = sb->rel + i;
		const void *d = buf + (size_t)i * MQ_SECTOR_SIZE;
		char got[96];

		if (!pat_check(d, w->id, w->sect_seq[rel], w->base + rel))
			continue;
		pat_describe(d, got, sizeof(got));
		run_error(w->run, "seed %#" PRIx64 ": thread %u sector %" PRIu64
			  ": want seq %u, read %s", w->run->seed, w->id,
			  w->base + rel, w->sect_seq[rel], got);
		return;
	}
}

/* The submitting thread's half of a completion: check, unbusy, free. */
static void reap_one(struct worker *w, struct sbio *sb)
{
	if (sb->status)
		run_error(w->run, "seed %#" PRIx64 ": thread %u bio %td status %d",
			  w->run->seed, w->id, sb - w->bios, sb->status);
	if (w->run->ram) {
		if (sb->op == MQ_OP_READ && !sb->status)
			verify_read(w, sb);
		if (sb->op != MQ_OP_FLUSH)
			memset(w->busy + sb->rel, 0, sb->nsect);
	}
	free(sb->bio.buf);
	sb->bio.buf = NULL;
	w->reaped++;
}

/* Reap what completed; with @wait, sleep for at least one completion. */
static void reap(struct worker *w, bool wait)
{
	struct sbio *list;

	pthread_mutex_lock(&w->lock);
	while (wait && !w->done_list)
		pthread_cond_wait(&w->cond, &w->lock);
	list = w->done_list;
	w->done_list = NULL;
	pthread_mutex_unlock(&w->lock);
	while (list) {
		struct sbio *next = list->next_done;

		reap_one(w, list);
		list = next;
	}
}

/* Wait for a completion; plugged requests go out first (the contract). */
static void reap_wait(struct worker *w, bool plugged)
{
	if (plugged)
		mq_flush_plug();
	reap(w, true);
}

/* ---- submission side ------------------------------------------------- */

struct op {
	uint8_t op, prio;
	uint16_t flags;
	uint64_t rel;
	uint32_t nsect;
};

static uint8_t gen_prio(struct worker *w)
{
	unsigned r = rnd_range(&w->rng, 0, 99);

	if (r < 3)
		return MQ_PRIO_RT;
	if (r < 4)
		return MQ_PRIO_IDLE;
	return r < 20 ? MQ_PRIO_BE : MQ_PRIO_NONE;
}

static uint8_t gen_opcode(struct worker *w)
{
	unsigned r = rnd_range(&w->rng, 0, 99);

	if (r < 3)
		return MQ_OP_FLUSH;
	if (r < 7)
		return MQ_OP_DISCARD;
	return r < 52 ? MQ_OP_READ : MQ_OP_WRITE;
}

static uint64_t region_sectors(const struct worker *w)
{
	return w->run->ram ? RAM_REGION : NULL_REGION;
}

static void gen_op(struct worker *w, struct op *o)
{
	uint64_t size = region_sectors(w);

	o->op = gen_opcode(w);
	o->prio = gen_prio(w);
	o->flags = rnd_range(&w->rng, 0, 3) ? 0 : MQ_REQ_SYNC;
	o->nsect = o->op == MQ_OP_FLUSH ? 0 : rnd_range(&w->rng, 1, MAX_SECTS);
	o->rel = rnd_range(&w->rng, 0, 1) ? w->cursor
					  : rnd(&w->rng) % size;
	if (o->rel + o->nsect > size)
		o->rel = 0;
	if (o->op == MQ_OP_FLUSH)
		o->rel = 0;
	else
		w->cursor = (o->rel + o->nsect) % size;
}

static bool ram_range_busy(const struct worker *w, const struct op *o)
{
	for (uint32_t i = 0; i < o->nsect; i++)
		if (w->busy[o->rel + i])
			return true;
	return false;
}

/* Ram: buffer, busy marks and the expected content after this op. */
static void *ram_prepare(struct worker *w, const struct op *o)
{
	size_t bytes = (size_t)o->nsect * MQ_SECTOR_SIZE;
	unsigned char *buf = NULL;

	memset(w->busy + o->rel, 1, o->nsect);
	if (o->op == MQ_OP_READ || o->op == MQ_OP_WRITE) {
		buf = malloc(bytes);
		if (!buf)
			abort();	/* no ck_assert off the test's thread */
		memset(buf, 0xee, bytes);
	}
	if (o->op == MQ_OP_WRITE)
		w->seq++;
	for (uint32_t i = 0; i < o->nsect && o->op != MQ_OP_READ; i++) {
		uint64_t rel = o->rel + i;

		w->sect_seq[rel] = o->op == MQ_OP_WRITE ? w->seq : 0;
		if (o->op == MQ_OP_WRITE)
			pat_fill((uint64_t *)(buf + (size_t)i * MQ_SECTOR_SIZE),
				 w->id, w->seq, w->base + rel);
	}
	return buf;
}

static void issue(struct worker *w, const struct op *o)
{
	struct sbio *sb = &w->bios[w->issued++];
	void *buf = NULL;

	if (w->run->ram && o->op != MQ_OP_FLUSH)
		buf = ram_prepare(w, o);
	memset(sb, 0, sizeof(*sb));
	mq_bio_init(&sb->bio, o->op, o->op == MQ_OP_FLUSH ? 0 : w->base + o->rel,
		    buf, o->nsect * MQ_SECTOR_SIZE, sbio_end_io, w);
	sb->bio.prio_class = o->prio;
	sb->bio.flags = o->flags;
	sb->rel = o->rel;
	sb->nsect = o->nsect;
	sb->op = o->op;
	atomic_fetch_add(&w->run->submitted, 1);
	mq_submit_bio(w->run->q, &sb->bio);
}

/* Issue one random op; false when its range is busy (ram). */
static bool issue_random(struct worker *w)
{
	struct op o;

	for (int tries = 0; tries < 4; tries++) {
		gen_op(w, &o);
		if (!w->run->ram || !ram_range_busy(w, &o)) {
			issue(w, &o);
			return true;
		}
	}
	return false;
}

/* A batch of 1 (unplugged) or up to MAX_BATCH bios under a plug. */
static void worker_batch(struct worker *w)
{
	bool plugged = rnd_range(&w->rng, 0, 2) == 0;
	unsigned n = plugged ? rnd_range(&w->rng, 1, MAX_BATCH) : 1;
	struct mq_plug plug;

	if (plugged)
		mq_start_plug(&plug, rnd_range(&w->rng, 1, 32));
	for (unsigned k = 0; k < n && w->issued < w->nr_random; k++) {
		reap(w, false);
		while (w->issued - w->reaped >= WINDOW)
			reap_wait(w, plugged);
		if (!issue_random(w)) {
			reap_wait(w, plugged);
			break;
		}
	}
	if (plugged)
		mq_finish_plug(&plug);
}

/* Ram: read the whole region back in 64 KiB pieces and verify it. */
static void worker_readback(struct worker *w)
{
	for (uint64_t rel = 0; rel < RAM_REGION; rel += MAX_SECTS) {
		struct op o = { .op = MQ_OP_READ, .rel = rel,
				.nsect = MAX_SECTS };

		while (w->issued - w->reaped >= WINDOW)
			reap_wait(w, false);
		issue(w, &o);
	}
}

void *worker_main(void *p)
{
	struct worker *w = p;

	while (w->issued < w->nr_random && !run_nerr(w->run))
		worker_batch(w);
	while (w->reaped < w->issued)
		reap_wait(w, false);
	if (w->run->ram && !run_nerr(w->run)) {
		worker_readback(w);
		while (w->reaped < w->issued)
			reap_wait(w, false);
	}
	atomic_fetch_add(&w->run->workers_done, 1);
	return NULL;
}

/* ---- set up and tear down -------------------------------------------- */

void worker_init(struct run *r, struct worker *w, unsigned id,
		 unsigned nr_random)
{
	w->run = r;
	w->id = id;
	w->rng = r->seed * 0x100000001b3ull + id + 1;
	w->nr_random = nr_random;
	w->nr_bios = nr_random + (r->ram ? RAM_REGION / MAX_SECTS : 0);
	w->bios = calloc(w->nr_bios, sizeof(*w->bios));
	w->base = (uint64_t)id * region_sectors(w);
	ck_assert_ptr_nonnull(w->bios);
	if (r->ram) {
		w->sect_seq = calloc(RAM_REGION, sizeof(*w->sect_seq));
		w->busy = calloc(RAM_REGION, 1);
		ck_assert(w->sect_seq && w->busy);
	}
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
}

void worker_free(struct worker *w)
{
	for (unsigned i = 0; i < w->issued; i++)
		free(w->bios[i].bio.buf);
	free(w->bios);
	free(w->sect_seq);
	free(w->busy);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
}
