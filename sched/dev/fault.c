/* SPDX-License-Identifier: MIT */
/*
 * fault.c - the fault-injection device: a stacking driver that serves its
 * requests with clone bios on a queue of its own over a lower device (as
 * device-mapper's dm-flakey), and on the way fails chosen requests with
 * -EIO, adds completion latency, and keeps written data in a volatile
 * write cache (as littlefs's emulated block device) that a simulated
 * power cut loses whole or tears at sector granularity.
 *
 * queue_rq() only hands the request to the device's worker thread, which
 * does the rest in arrival order: the EIO rules, the cache, the clones
 * and the power cut.  Submitting from queue_rq itself would be unsafe:
 * queue_rq may run inside the submitter's plug flush, plugs do not nest,
 * and a clone would land in a plug that was already emptied and never be
 * issued.  A flush must also wait for its write-back, which queue_rq must
 * not do.  One thread in arrival order also makes the Nth counter and the
 * random stream - seeded from cfg.seed - reproducible, and puts a power
 * cut between two requests, never inside one.  An armed cut
 * (mq_fault_arm_cut) is taken by the worker itself just before the Nth
 * write-like request it pops, which then fails as every later one: a
 * power-loss runner can cut at each of a scenario's writes in turn.
 *
 * Only the worker changes the cache, and it submits nothing else while
 * it writes sectors down, so a write-back drains the lower queue (reads
 * still there must still see the sectors it is about to drop), submits
 * bios that point into the cache entries, drains, flushes, drains, and
 * only then frees the entries.
 *
 * Every completion goes through fault_finish(): at once, or latency_ns
 * later from a timer thread in due order (as null.c's TIMER mode); once
 * the power is off, always with -EIO.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mqfs/clock.h"
#include "mqfs/kthread.h"
#include "dev_i.h"
#include "mqfs/dev/fault.h"

#define FAULT_MAX_SEGS		32	/* clones live in the request's pdu */
#define FAULT_FAKE_POLL_NS	1000000	/* re-read a fake clock this often */

/* Per-request context. */
struct fault_cmd {
	struct mq_request *next;	/* worker or timer FIFO */
	uint64_t due_ns;		/* timer: when to complete */
	int done_status;		/* timer: status to complete with */
	_Atomic unsigned pending;	/* clones not yet completed */
	_Atomic int status;		/* first clone error */
	bool overlay;			/* a read the cache must patch */
	struct mq_bio clones[FAULT_MAX_SEGS];
};

/* One sector of the volatile cache: written, not yet written down. */
struct fault_sector {
	struct mq_rb_node node;		/* ordered by sector */
	uint64_t sector;
	unsigned char data[MQ_SECTOR_SIZE];
};

struct fault_fifo {
	struct mq_request *head, *tail;
};

struct fault_dev {
	struct mq_dev dev;
	struct mq_queue *lq;		/* ours, on the lower device */
	uint64_t latency_ns, seed;	/* fixed at open */
	uint64_t capacity;		/* sectors */
	bool volatile_cache;

	pthread_mutex_t lock;		/* rules, random stream, cache */
	struct mq_fault_config rules;
	uint64_t rng, nth;
	struct mq_rb_root cache;	/* changed by the worker only */
	uint64_t nr_cached;

	/* The two threads' locks are leaves, each guarding its FIFO. */
	struct mq_kthread worker;	/* lock: @work and the cut below */
	struct fault_fifo work;
	int cut_mode, cut_result;	/* cut_mode -1: no cut asked */
	uint64_t arm_left;		/* write-like requests to the cut */
	int arm_mode;
	pthread_cond_t cut_cond;	/* a cut is over (worker's lock) */
	struct mq_kthread timer;	/* lock: @due; runs with a latency */
	struct fault_fifo due;

	pthread_mutex_t irq_lock;	/* held while completing */
	_Atomic int sync_status;	/* the worker's own lower I/O */
	_Atomic uint64_t sync_bytes;
	_Atomic bool dead;		/* the power is off */
	_Atomic uint64_t injected, forwarded, cached, powered_off, writes;
};

static struct fault_dev *to_fault(struct mq_dev *dev)
{
	return mq_container_of(dev, struct fault_dev, dev);
}

static uint64_t fault_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* splitmix64: tiny, and the stream is a pure function of the seed. */
static double fault_rand01(uint64_t *state)
{
	*state += 0x9e3779b97f4a7c15ull;
	return (double)(fault_mix64(*state) >> 11) * 0x1.0p-53;
}

/*
 * A hash, not the stream: the torn subset then depends only on the seed
 * and which sectors are cached, not on the history of the run.
 */
static bool fault_torn_pick(uint64_t seed, uint64_t sector)
{
	return fault_mix64(seed ^ fault_mix64(sector + 1)) & 1;
}

static void fault_fifo_push(struct fault_fifo *f, struct mq_request *rq)
{
	struct fault_cmd *cmd = mq_rq_pdu(rq);

	cmd->next = NULL;
	if (f->tail)
		((struct fault_cmd *)mq_rq_pdu(f->tail))->next = rq;
	else
		f->head = rq;
	f->tail = rq;
}

static struct mq_request *fault_fifo_pop(struct fault_fifo *f)
{
	struct mq_request *rq = f->head;

	if (rq) {
		f->head = ((struct fault_cmd *)mq_rq_pdu(rq))->next;
		if (!f->head)
			f->tail = NULL;
	}
	return rq;
}

/*
 * Completing under irq_lock lets queue_exit wait for a completion that
 * is still inside the core after dropping its last queue reference.
 */
static void fault_complete(struct fault_dev *fd, struct mq_request *rq,
			   int status)
{
	pthread_mutex_lock(&fd->irq_lock);
	mq_complete_request(rq, status);
	pthread_mutex_unlock(&fd->irq_lock);
}

/* The request is served: complete it now or after the latency. */
static void fault_finish(struct fault_dev *fd, struct mq_request *rq,
			 int status)
{
	struct fault_cmd *cmd = mq_rq_pdu(rq);

	if (fd->latency_ns) {
		mq_kthread_lock(&fd->timer);
		/* Checked under this lock: a cut empties the FIFO under it. */
		if (!atomic_load(&fd->dead)) {
			cmd->due_ns = mq_clock_ns() + fd->latency_ns;
			cmd->done_status = status;
			if (!fd->due.head)
				mq_kthread_kick_locked(&fd->timer);
			fault_fifo_push(&fd->due, rq);
			mq_kthread_unlock(&fd->timer);
			return;
		}
		mq_kthread_unlock(&fd->timer);
	}
	if (atomic_load(&fd->dead)) {
		status = -EIO;
		atomic_fetch_add(&fd->powered_off, 1);
	}
	fault_complete(fd, rq, status);
}

/* Relative wait, so a fake clock works too (polled: nobody signals). */
static void fault_timer_wait(struct fault_dev *fd, uint64_t due)
{
	uint64_t now = mq_clock_ns(), wait = due > now ? due - now : 0;

	if (atomic_load_explicit(&mq_clock_is_fake, memory_order_relaxed))
		wait = MQ_MIN(wait, (uint64_t)FAULT_FAKE_POLL_NS);
	mq_kthread_wait_locked(&fd->timer, mq_clock_real_ns() + wait);
}

static void *fault_timer_main(void *arg)
{
	struct fault_dev *fd = arg;

	mq_kthread_lock(&fd->timer);
	while (!mq_kthread_should_stop_locked(&fd->timer)) {
		struct mq_request *rq = fd->due.head;
		struct fault_cmd *cmd = rq ? mq_rq_pdu(rq) : NULL;

		if (!rq) {
			mq_kthread_wait_locked(&fd->timer, 0);
		} else if (cmd->due_ns > mq_clock_ns()) {
			fault_timer_wait(fd, cmd->due_ns);
		} else {
			fault_fifo_pop(&fd->due);
			mq_kthread_unlock(&fd->timer);
			fault_complete(fd, rq, cmd->done_status);
			mq_kthread_lock(&fd->timer);
		}
	}
	mq_kthread_unlock(&fd->timer);
	return NULL;
}

/* Power cut: completions still waiting for their latency never arrive. */
static void fault_timer_fail_all(struct fault_dev *fd)
{
	struct fault_fifo f;
	struct mq_request *rq;

	mq_kthread_lock(&fd->timer);
	f = fd->due;
	fd->due = (struct fault_fifo){ 0 };
	mq_kthread_unlock(&fd->timer);
	while ((rq = fault_fifo_pop(&f))) {
		atomic_fetch_add(&fd->powered_off, 1);
		fault_complete(fd, rq, -EIO);
	}
}

static int fault_check_rules(const struct mq_fault_config *c)
{
	if (!(c->eio_probability >= 0.0 && c->eio_probability <= 1.0) ||
	    (c->eio_op_mask >> MQ_OP_COUNT) ||
	    (c->eio_sector_end && c->eio_sector_start >= c->eio_sector_end))
		return -EINVAL;
	return 0;
}

/* Whether a rule is set at all and @rq passes the op and range filters. */
static bool fault_candidate(const struct mq_fault_config *r,
			    const struct mq_request *rq)
{
	if (!r->eio_sector_end && !r->eio_op_mask && !r->eio_every_nth &&
	    r->eio_probability <= 0)
		return false;
	if (r->eio_op_mask && !(r->eio_op_mask & (1u << rq->op)))
		return false;
	/* A flush (no data) touches no range. */
	return !r->eio_sector_end ||
	       (rq->nr_bytes && rq->sector < r->eio_sector_end &&
		mq_rq_end_sector(rq) > r->eio_sector_start);
}

static bool fault_inject(struct fault_dev *fd, const struct mq_request *rq)
{
	const struct mq_fault_config *r = &fd->rules;
	bool hit;

	pthread_mutex_lock(&fd->lock);
	hit = fault_candidate(r, rq);
	if (hit && (r->eio_every_nth || r->eio_probability > 0)) {
		hit = r->eio_every_nth && ++fd->nth % r->eio_every_nth == 0;
		/* Draw for every candidate: the stream ignores the Nth rule. */
		if (r->eio_probability > 0 &&
		    fault_rand01(&fd->rng) < r->eio_probability)
			hit = true;
	}
	pthread_mutex_unlock(&fd->lock);
	return hit;
}

static struct fault_sector *fault_sector_of(struct mq_rb_node *n)
{
	return n ? mq_rb_entry(n, struct fault_sector, node) : NULL;
}

/* The first cached sector at or after @sector. */
static struct fault_sector *fault_cache_ceil(struct fault_dev *fd,
					     uint64_t sector)
{
	struct mq_rb_node *n = fd->cache.node, *best = NULL;

	while (n) {
		if (fault_sector_of(n)->sector >= sector) {
			best = n;
			n = n->left;
		} else {
			n = n->right;
		}
	}
	return fault_sector_of(best);
}

static struct fault_sector *fault_cache_next(struct fault_sector *s)
{
	return fault_sector_of(mq_rb_next(&s->node));
}

/* The entry of @sector, created if absent; NULL without memory. */
static struct fault_sector *fault_cache_get(struct fault_dev *fd,
					    uint64_t sector)
{
	struct mq_rb_node **link = &fd->cache.node, *parent = NULL;
	struct fault_sector *s;

	while (*link) {
		parent = *link;
		s = fault_sector_of(parent);
		if (s->sector == sector)
			return s;
		link = sector < s->sector ? &parent->left : &parent->right;
	}
	s = malloc(sizeof(*s));
	if (!s)
		return NULL;
	s->sector = sector;
	mq_rb_link_node(&s->node, parent, link);
	mq_rb_insert_color(&s->node, &fd->cache);
	fd->nr_cached++;
	return s;
}

/* Forget the cached sectors of [lo, hi). */
static void fault_cache_drop(struct fault_dev *fd, uint64_t lo, uint64_t hi)
{
	struct fault_sector *s = fault_cache_ceil(fd, lo), *next;

	for (; s && s->sector < hi; s = next) {
		next = fault_cache_next(s);
		mq_rb_erase(&s->node, &fd->cache);
		free(s);
		fd->nr_cached--;
	}
}

/* Keep one bio's data (zeroes for discard, write-zeroes) in the cache. */
static int fault_cache_put_bio(struct fault_dev *fd, const struct mq_bio *bio)
{
	if (bio->size % MQ_SECTOR_SIZE)
		return -EINVAL;
	for (uint32_t off = 0; off < bio->size; off += MQ_SECTOR_SIZE) {
		struct fault_sector *s;

		s = fault_cache_get(fd, bio->sector + (off >> MQ_SECTOR_SHIFT));
		if (!s)
			return -ENOMEM;
		if (bio->op == MQ_OP_WRITE)
			memcpy(s->data, (char *)bio->buf + off, MQ_SECTOR_SIZE);
		else
			memset(s->data, 0, MQ_SECTOR_SIZE);
	}
	return 0;
}

/* Let a read from the lower device see the cached sectors it covers. */
static void fault_cache_overlay(struct fault_dev *fd, struct mq_bio *bio)
{
	uint64_t end = mq_bio_end_sector(bio);
	struct fault_sector *s;

	pthread_mutex_lock(&fd->lock);
	for (s = fault_cache_ceil(fd, bio->sector); s && s->sector < end;
	     s = fault_cache_next(s))
		memcpy((char *)bio->buf +
		       ((s->sector - bio->sector) << MQ_SECTOR_SHIFT),
		       s->data, MQ_SECTOR_SIZE);
	pthread_mutex_unlock(&fd->lock);
}

static void fault_sync_end_io(struct mq_bio *bio)
{
	struct fault_dev *fd = bio->private;
	int none = 0;

	if (bio->status)
		atomic_compare_exchange_strong(&fd->sync_status, &none,
					       bio->status);
	else
		atomic_fetch_add(&fd->sync_bytes, bio->size);
}

/*
 * Submit @n bios and wait for them: a drain, as nothing else of ours can
 * be at the lower device then (see the file comment).  Bytes done in *ok.
 */
static int fault_sync_submit(struct fault_dev *fd, struct mq_bio *bios,
			     unsigned n, uint64_t *ok)
{
	atomic_store(&fd->sync_status, 0);
	atomic_store(&fd->sync_bytes, 0);
	for (unsigned i = 0; i < n; i++)
		mq_submit_bio(fd->lq, &bios[i]);
	mq_queue_drain(fd->lq);
	*ok = atomic_load(&fd->sync_bytes);
	return atomic_load(&fd->sync_status);
}

/*
 * Write the cached sectors of [lo, hi) down, whole sectors, one bio each
 * straight from the entries (freed only after the drain); with @torn,
 * only those fault_torn_pick() selects.  *written counts what landed.
 */
static int fault_write_down(struct fault_dev *fd, uint64_t lo, uint64_t hi,
			    bool torn, uint64_t *written)
{
	struct mq_bio *bios = calloc(MQ_MAX(fd->nr_cached, 1), sizeof(*bios));
	struct fault_sector *s;
	unsigned n = 0;
	uint64_t ok = 0;
	int status = 0;

	if (!bios)
		return -ENOMEM;
	pthread_mutex_lock(&fd->lock);
	for (s = fault_cache_ceil(fd, lo); s && s->sector < hi;
	     s = fault_cache_next(s))
		if (!torn || fault_torn_pick(fd->seed, s->sector))
			mq_bio_init(&bios[n++], MQ_OP_WRITE, s->sector, s->data,
				    MQ_SECTOR_SIZE, fault_sync_end_io, fd);
	pthread_mutex_unlock(&fd->lock);
	if (n)
		status = fault_sync_submit(fd, bios, n, &ok);
	free(bios);
	*written = ok >> MQ_SECTOR_SHIFT;
	return status;
}

/* Flush semantics: cached sectors of [lo, hi) down, then a lower flush. */
static int fault_writeback(struct fault_dev *fd, uint64_t lo, uint64_t hi)
{
	struct mq_bio flush;
	uint64_t ok;
	int status;

	/* A read still at the lower device may predate the write-back. */
	mq_queue_drain(fd->lq);
	status = fault_write_down(fd, lo, hi, false, &ok);
	if (status)
		return status;
	mq_bio_init(&flush, MQ_OP_FLUSH, 0, NULL, 0, fault_sync_end_io, fd);
	status = fault_sync_submit(fd, &flush, 1, &ok);
	if (!status) {
		pthread_mutex_lock(&fd->lock);
		fault_cache_drop(fd, lo, hi);
		pthread_mutex_unlock(&fd->lock);
	}
	return status;
}

static void fault_clone_end_io(struct mq_bio *clone)
{
	struct mq_request *rq = clone->private;
	struct fault_cmd *cmd = mq_rq_pdu(rq);
	struct fault_dev *fd = to_fault(mq_hctx_dev(rq->hctx));

	if (clone->status) {
		int none = 0;

		atomic_compare_exchange_strong(&cmd->status, &none,
					       clone->status);
	} else if (cmd->overlay) {
		fault_cache_overlay(fd, clone);
	}
	if (atomic_fetch_sub(&cmd->pending, 1) == 1)
		fault_finish(fd, rq, atomic_load(&cmd->status));
}

/* One clone per bio (each bio has its own buffer), sharing the buffers. */
static void fault_forward(struct fault_dev *fd, struct mq_request *rq)
{
	struct fault_cmd *cmd = mq_rq_pdu(rq);
	struct mq_bio *bio;
	unsigned n = 0;

	mq_rq_for_each_bio(bio, rq) {
		struct mq_bio *c = &cmd->clones[n++];

		MQ_ASSERT(n <= FAULT_MAX_SEGS);
		mq_bio_init(c, (enum mq_op)bio->op, bio->sector, bio->buf,
			    bio->size, fault_clone_end_io, rq);
		c->flags = bio->flags;
		c->prio_class = bio->prio_class;
	}
	cmd->overlay = fd->volatile_cache && rq->op == MQ_OP_READ;
	atomic_store(&cmd->status, 0);
	atomic_store(&cmd->pending, n);
	atomic_fetch_add(&fd->forwarded, 1);
	/* The last clone may complete @rq inline: no @cmd access after. */
	for (unsigned i = 0; i < n; i++)
		mq_submit_bio(fd->lq, &cmd->clones[i]);
}

/* Volatile write: complete into the cache; FUA makes its sectors durable. */
static void fault_cache_write(struct fault_dev *fd, struct mq_request *rq)
{
	struct mq_bio *bio;
	int status = 0;

	if (mq_rq_end_sector(rq) > fd->capacity) {
		fault_finish(fd, rq, -EIO);
		return;
	}
	pthread_mutex_lock(&fd->lock);
	mq_rq_for_each_bio(bio, rq)
		if (!status)
			status = fault_cache_put_bio(fd, bio);
	pthread_mutex_unlock(&fd->lock);
	if (!status)
		atomic_fetch_add(&fd->cached, 1);
	if (!status && (rq->cmd_flags & MQ_REQ_FUA))
		status = fault_writeback(fd, rq->sector, mq_rq_end_sector(rq));
	fault_finish(fd, rq, status);
}

static void fault_handle(struct fault_dev *fd, struct mq_request *rq)
{
	if (atomic_load(&fd->dead)) {
		fault_finish(fd, rq, -EIO);
	} else if (fault_inject(fd, rq)) {
		atomic_fetch_add(&fd->injected, 1);
		fault_finish(fd, rq, -EIO);
	} else if (!fd->volatile_cache || rq->op == MQ_OP_READ) {
		fault_forward(fd, rq);
	} else if (rq->op == MQ_OP_FLUSH) {
		fault_finish(fd, rq, fault_writeback(fd, 0, UINT64_MAX));
	} else {
		fault_cache_write(fd, rq);
	}
}

/* The cut proper, between two requests.  Returns the sectors lost. */
static int fault_do_cut(struct fault_dev *fd, enum mq_fault_cut mode)
{
	uint64_t cached = fd->nr_cached, written = 0;

	atomic_store(&fd->dead, true);
	fault_timer_fail_all(fd);
	/* Reads still at the lower device end, with -EIO, before the cut. */
	mq_queue_drain(fd->lq);
	if (mode == MQ_FAULT_CUT_TORN)
		fault_write_down(fd, 0, UINT64_MAX, true, &written);
	pthread_mutex_lock(&fd->lock);
	fault_cache_drop(fd, 0, UINT64_MAX);
	pthread_mutex_unlock(&fd->lock);
	return (int)MQ_MIN(cached - written, (uint64_t)INT_MAX);
}

static void *fault_worker_main(void *arg)
{
	struct fault_dev *fd = arg;
	struct mq_request *rq;

	mq_kthread_lock(&fd->worker);
	for (;;) {
		if (fd->cut_mode >= 0) {
			enum mq_fault_cut mode = fd->cut_mode;

			mq_kthread_unlock(&fd->worker);
			fd->cut_result = fault_do_cut(fd, mode);
			mq_kthread_lock(&fd->worker);
			fd->cut_mode = -1;
			pthread_cond_broadcast(&fd->cut_cond);
		} else if ((rq = fault_fifo_pop(&fd->work))) {
			bool cut = rq->op != MQ_OP_READ && fd->arm_left &&
				   !--fd->arm_left;

			if (rq->op != MQ_OP_READ)
				atomic_fetch_add(&fd->writes, 1);
			mq_kthread_unlock(&fd->worker);
			if (cut && !atomic_load(&fd->dead))
				(void)fault_do_cut(fd, fd->arm_mode);
			fault_handle(fd, rq);
			mq_kthread_lock(&fd->worker);
		} else if (!mq_kthread_wait_locked(&fd->worker, 0)) {
			break;		/* stop, and nothing left to do */
		}
	}
	mq_kthread_unlock(&fd->worker);
	return NULL;
}

static int fault_queue_init(struct mq_dev *dev, unsigned index, void **priv)
{
	*priv = NULL;
	return 0;
}

static void fault_queue_exit(struct mq_dev *dev, unsigned index, void *priv)
{
	struct fault_dev *fd = to_fault(dev);

	/* As null.c: the queue is freed next; let a completion get out. */
	pthread_mutex_lock(&fd->irq_lock);
	pthread_mutex_unlock(&fd->irq_lock);
}

static int fault_queue_rq(struct mq_hw_queue *hctx, struct mq_request *rq,
			  bool last)
{
	struct fault_dev *fd = to_fault(mq_hctx_dev(hctx));

	mq_kthread_lock(&fd->worker);
	if (!fd->work.head)
		mq_kthread_kick_locked(&fd->worker);
	fault_fifo_push(&fd->work, rq);
	mq_kthread_unlock(&fd->worker);
	return 0;
}

/*
 * Stop and join the threads that run, and free their locks.  The worker
 * first: with no request left, nothing it does reaches the timer.
 */
static void fault_stop_threads(struct fault_dev *fd)
{
	mq_kthread_stop(&fd->worker);
	mq_kthread_stop(&fd->timer);
}

static void fault_free(struct fault_dev *fd)
{
	fault_cache_drop(fd, 0, UINT64_MAX);
	pthread_mutex_destroy(&fd->lock);
	pthread_mutex_destroy(&fd->irq_lock);
	pthread_cond_destroy(&fd->cut_cond);
	free(fd);
}

/* The queues on us are gone, so both FIFOs are empty; the lower stays. */
static void fault_close(struct mq_dev *dev)
{
	struct fault_dev *fd = to_fault(dev);

	fault_stop_threads(fd);
	MQ_ASSERT(!fd->work.head && !fd->due.head);
	mq_queue_destroy(fd->lq);
	fault_free(fd);
}

static const struct mq_dev_ops fault_ops = {
	.name = "fault",
	.queue_init = fault_queue_init,
	.queue_exit = fault_queue_exit,
	.queue_rq = fault_queue_rq,
	.close = fault_close,
};

static void fault_init_locks(struct fault_dev *fd)
{
	pthread_mutex_init(&fd->lock, NULL);
	pthread_mutex_init(&fd->irq_lock, NULL);
	pthread_cond_init(&fd->cut_cond, NULL);
	/* A cut empties the timer's FIFO even when no timer runs. */
	mq_kthread_init(&fd->worker);
	mq_kthread_init(&fd->timer);
}

/* Seed 0 asks for a fresh one: print it so the run can be replayed. */
static uint64_t fault_pick_seed(const struct fault_dev *fd, uint64_t seed)
{
	if (seed)
		return seed;
	seed = fault_mix64(mq_clock_real_ns() ^ ((uint64_t)getpid() << 32));
	seed = seed ? seed : 1;
	fprintf(stderr, "mqfs: %s: seed %" PRIu64 " (set cfg.seed to replay)\n",
		fd->dev.name, seed);
	return seed;
}

static void fault_setup(struct fault_dev *fd, struct mq_dev *lower,
			const struct mq_fault_config *cfg)
{
	struct mq_dev_geometry *g = &fd->dev.geo;

	fd->dev.ops = &fault_ops;
	fd->dev.rq_pdu_size = sizeof(struct fault_cmd);
	snprintf(fd->dev.name, sizeof(fd->dev.name), "fault(%.48s)",
		 lower->name);
	*g = lower->geo;
	g->nr_poll_queues = 0;		/* its clones are reaped, not polled */
	if (cfg->queue_depth)
		g->queue_depth = cfg->queue_depth;
	g->max_segments = g->max_segments ?
			  MQ_MIN(g->max_segments, (uint16_t)FAULT_MAX_SEGS) :
			  FAULT_MAX_SEGS;
	if (cfg->volatile_cache)
		g->flush = g->fua = true;
	fd->rules = *cfg;
	fd->rng = fd->seed = fault_pick_seed(fd, cfg->seed);
	fd->latency_ns = cfg->latency_ns;
	fd->volatile_cache = cfg->volatile_cache;
	fd->capacity = lower->geo.size_bytes >> MQ_SECTOR_SHIFT;
	fd->cut_mode = -1;
}

/* 0 or -errno; on failure, the caller stops what did start. */
static int fault_start_threads(struct fault_dev *fd)
{
	int ret = mq_kthread_start(&fd->worker, "fault-worker",
				   fault_worker_main, fd);

	if (!ret && fd->latency_ns)
		ret = mq_kthread_start(&fd->timer, "fault-timer",
				       fault_timer_main, fd);
	return ret;
}

int mq_fault_open(struct mq_dev *lower, const struct mq_fault_config *cfg,
		  struct mq_dev **out)
{
	struct mq_queue_config qc = { .elevator = "none", .no_merges = true };
	struct fault_dev *fd;
	int err;

	*out = NULL;
	if (!lower || !cfg || fault_check_rules(cfg)) {
		fprintf(stderr, "mqfs: fault: invalid configuration\n");
		return -EINVAL;
	}
	if (lower->polled) {
		/* Its clones would complete only if our worker polled. */
		fprintf(stderr, "mqfs: fault: %s is a polled (caller-reaped) "
			"device: not supported below a fault device\n",
			lower->name);
		return -EINVAL;
	}
	fd = calloc(1, sizeof(*fd));
	if (!fd)
		return -ENOMEM;
	fault_init_locks(fd);
	fault_setup(fd, lower, cfg);
	err = mq_queue_create(lower, &qc, &fd->lq);
	if (!err)
		err = fault_start_threads(fd);
	if (err) {
		fprintf(stderr, "mqfs: %s: cannot start: %s\n", fd->dev.name,
			strerror(-err));
		fault_stop_threads(fd);
		if (fd->lq)
			mq_queue_destroy(fd->lq);
		fault_free(fd);
		return err;
	}
	*out = &fd->dev;
	return 0;
}

int mq_fault_set_eio(struct mq_dev *dev, const struct mq_fault_config *cfg)
{
	struct fault_dev *fd = to_fault(dev);

	if (fault_check_rules(cfg))
		return -EINVAL;
	pthread_mutex_lock(&fd->lock);
	fd->rules = *cfg;		/* only its EIO fields are ever read */
	fd->nth = 0;
	if (cfg->seed)
		fd->rng = cfg->seed;
	pthread_mutex_unlock(&fd->lock);
	return 0;
}

int mq_fault_power_cut(struct mq_dev *dev, enum mq_fault_cut mode)
{
	struct fault_dev *fd = to_fault(dev);
	int ret;

	if (mode != MQ_FAULT_CUT_LOSE && mode != MQ_FAULT_CUT_TORN)
		return -EINVAL;
	/* Our own plugged requests would otherwise wait past the cut. */
	mq_flush_plug();
	mq_kthread_lock(&fd->worker);
	if (fd->cut_mode >= 0 || atomic_load(&fd->dead)) {
		mq_kthread_unlock(&fd->worker);
		return -EALREADY;
	}
	fd->cut_mode = (int)mode;
	mq_kthread_kick_locked(&fd->worker);
	while (fd->cut_mode >= 0)
		pthread_cond_wait(&fd->cut_cond, &fd->worker.lock);
	ret = fd->cut_result;
	mq_kthread_unlock(&fd->worker);
	return ret;
}

int mq_fault_arm_cut(struct mq_dev *dev, uint64_t nth,
		     enum mq_fault_cut mode)
{
	struct fault_dev *fd = to_fault(dev);

	if (mode != MQ_FAULT_CUT_LOSE && mode != MQ_FAULT_CUT_TORN)
		return -EINVAL;
	mq_kthread_lock(&fd->worker);
	fd->arm_left = nth;
	fd->arm_mode = (int)mode;
	mq_kthread_unlock(&fd->worker);
	return 0;
}

bool mq_fault_powered_off(struct mq_dev *dev)
{
	return atomic_load(&to_fault(dev)->dead);
}

void mq_fault_get_stats(struct mq_dev *dev, struct mq_fault_stats *out)
{
	struct fault_dev *fd = to_fault(dev);

	out->seed = fd->seed;
	out->injected = atomic_load(&fd->injected);
	out->forwarded = atomic_load(&fd->forwarded);
	out->cached = atomic_load(&fd->cached);
	out->powered_off = atomic_load(&fd->powered_off);
	out->writes = atomic_load(&fd->writes);
	pthread_mutex_lock(&fd->lock);
	out->dirty_sectors = fd->nr_cached;
	pthread_mutex_unlock(&fd->lock);
}
