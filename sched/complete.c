/* SPDX-License-Identifier: MIT */
/*
 * complete.c - request completion where the driver reaps it (the cheap
 * part of the kernel's completion path): account, give the tags back,
 * restart a queue that waits for a tag, end the bios.
 *
 * Order matters.  Tags are released before the bios end so that an
 * end_io that submits new I/O finds them free; the queue usage reference
 * is dropped last, so mq_queue_drain() returns only after every end_io
 * has run.  A batch shares one timestamp and frees its tags one bitmap
 * word at a time.
 */
#include "blk_i.h"

#define COMPLETE_CHUNK	64

struct complete_sums {
	uint64_t ios[MQ_DIR_COUNT], sectors[MQ_DIR_COUNT];
	uint64_t device_ns[MQ_DIR_COUNT], errors;
};

static void complete_flush_sums(struct mq_hw_queue *hctx,
				struct complete_sums *s, uint64_t now)
{
	struct mq_done_stats *d = &hctx->dstats;

	mq_busy_update(d, now, true);	/* these were in flight until now */

	for (int dir = 0; dir < MQ_DIR_COUNT; dir++) {
		if (!s->ios[dir])
			continue;
		mq_stat_inc_shared(&d->ios[dir], s->ios[dir]);
		mq_stat_inc_shared(&d->sectors[dir], s->sectors[dir]);
		mq_stat_inc_shared(&d->device_ns[dir], s->device_ns[dir]);
	}
	if (s->errors)
		mq_stat_inc_shared(&d->errors, s->errors);
	mq_stat_inc_shared(&d->completion_batches, 1);
	*s = (struct complete_sums){ 0 };
}

static void complete_account(struct complete_sums *s, struct mq_request *rq,
			     uint64_t now)
{
	enum mq_dir dir = mq_rq_dir(rq);

	s->ios[dir]++;
	s->sectors[dir] += rq->nr_bytes >> MQ_SECTOR_SHIFT;
	s->device_ns[dir] += now - rq->start_ns;
	s->errors += rq->status != 0;
}

/* A completion freed tags: re-run queues that stalled waiting for one. */
static void complete_restart(struct mq_hw_queue *hctx)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&hctx->sched_restart, memory_order_relaxed) &&
	    atomic_exchange(&hctx->sched_restart, false))
		mq_run_hw_queue(hctx, false);
}

static void complete_end_bios(struct mq_bio *bio, int status, uint64_t now)
{
	mq_in_completion++;
	while (bio) {
		struct mq_bio *next = bio->next;

		bio->next = NULL;
		bio->status = status;
		bio->done_ns = now;
		bio->end_io(bio);
		bio = next;
	}
	mq_in_completion--;
}

/* Hand a request's bios to the completion worker (task context). */
static void complete_defer_bios(struct mq_hw_queue *hctx, struct mq_bio *bio,
				int status, uint64_t now)
{
	struct mq_bio *tail = bio;
	long n = 1;

	for (;;) {
		tail->status = status;
		tail->done_ns = now;
		if (!tail->next)
			break;
		tail = tail->next;
		n++;
	}
	mq_task_defer(hctx, bio, tail, n);
}

/* Drop the usage references, one atomic per run of the same context. */
static void complete_put_refs(struct mq_queue *q, struct mq_sw_ctx **ctxs,
			      unsigned nr)
{
	unsigned i = 0;

	while (i < nr) {
		unsigned start = i;

		while (i < nr && ctxs[i] == ctxs[start])
			i++;
		mq_queue_exit(q, ctxs[start], (long)(i - start));
	}
}

static void complete_chunk(struct mq_request **rqs, unsigned nr, uint64_t now)
{
	struct mq_bio *bios[COMPLETE_CHUNK];
	int status[COMPLETE_CHUNK];
	bool in_task[COMPLETE_CHUNK];
	struct mq_hw_queue *hctxs[COMPLETE_CHUNK];
	struct mq_sw_ctx *ctxs[COMPLETE_CHUNK];
	struct mq_queue *q = rqs[0]->q;
	struct complete_sums sums = { 0 };
	unsigned i;

	for (i = 0; i < nr; i++) {
		struct mq_request *rq = rqs[i];

		MQ_ASSERT(rq->q == q);
		if (i && rq->hctx != hctxs[i - 1])
			complete_flush_sums(hctxs[i - 1], &sums, now);
		complete_account(&sums, rq, now);
		hctxs[i] = rq->hctx;
		ctxs[i] = rq->ctx;
		bios[i] = rq->bio;
		status[i] = rq->status;
		in_task[i] = rq->cmd_flags & MQ_REQ_COMPLETE_IN_TASK;
		rq->bio = rq->biotail = NULL;
	}
	complete_flush_sums(hctxs[nr - 1], &sums, now);
	mq_release_requests_batch(rqs, nr);
	for (i = 0; i < nr; i++)
		if (!i || hctxs[i] != hctxs[i - 1])
			complete_restart(hctxs[i]);
	for (i = 0; i < nr; i++) {
		if (!bios[i])
			continue;
		if (in_task[i])
			complete_defer_bios(hctxs[i], bios[i], status[i], now);
		else
			complete_end_bios(bios[i], status[i], now);
	}
	complete_put_refs(q, ctxs, nr);
}

void mq_complete_batch(struct mq_request **rqs, unsigned nr)
{
	uint64_t now = mq_clock_ns();

	while (nr) {
		unsigned n = MQ_MIN(nr, (unsigned)COMPLETE_CHUNK);

		complete_chunk(rqs, n, now);
		rqs += n;
		nr -= n;
	}
}

void mq_complete_request(struct mq_request *rq, int status)
{
	rq->status = status;
	mq_complete_batch(&rq, 1);
}
