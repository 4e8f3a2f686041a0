/* SPDX-License-Identifier: MIT */
/*
 * soak_stack.c - test_soak's stack of devices for a round: the
 * parameters drawn from the round's seed, the lower device (io_uring on
 * a temporary file, or ram), the fault devices over it, each wrapped by
 * a queue_rq spy, and the top queue; and the round's first error.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "soak_fixture.h"
#include "mqfs/dev/ram.h"
#include "mqfs/dev/uring.h"
#include "t_dev.h"

/* ---- a queue_rq wrapper: finds the inner queues, counts busy ---------- */

/*
 * Installed on a device before any queue exists on it: the device's ops
 * pointer is redirected to a copy whose queue_rq records the queue it is
 * called for (a fault device creates its lower queue itself) and counts
 * the driver's answers.  Everything else is the driver's own function,
 * called with the driver's own device.
 */
static int spy_queue_rq(struct mq_hw_queue *hctx, struct mq_request *rq,
			bool last)
{
	struct mq_dev *dev = mq_hctx_dev(hctx);
	struct spy *s = mq_container_of((struct mq_dev_ops *)dev->ops,
					struct spy, ops);
	struct mq_queue *q = NULL;
	int ret;

	if (!atomic_compare_exchange_strong(&s->q, &q, hctx->q) &&
	    q != hctx->q)
		atomic_store(&s->foreign, true);
	ret = s->orig->queue_rq(hctx, rq, last);
	if (ret == 0)
		atomic_fetch_add(&s->accepted, 1);
	else if (ret == MQ_DEV_BUSY || ret == -EAGAIN)
		atomic_fetch_add(&s->busy, 1);
	else
		atomic_fetch_add(&s->failed, 1);
	return ret;
}

static void spy_install(struct spy *s, struct mq_dev *dev)
{
	s->dev = dev;
	s->orig = dev->ops;
	s->ops = *dev->ops;
	s->ops.queue_rq = spy_queue_rq;
	dev->ops = &s->ops;
}

void round_error(struct soak_round *r, const char *fmt, ...)
{
	va_list ap;
	int n;

	pthread_mutex_lock(&r->err_lock);
	if (!r->nerr++) {
		n = snprintf(r->err, sizeof(r->err), "round %u seed %#" PRIx64
			     ": ", r->index, r->seed);
		va_start(ap, fmt);
		vsnprintf(r->err + n, sizeof(r->err) - (size_t)n, fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&r->err_lock);
}

unsigned long round_nerr(struct soak_round *r)
{
	unsigned long n;

	pthread_mutex_lock(&r->err_lock);
	n = r->nerr;
	pthread_mutex_unlock(&r->err_lock);
	return n;
}

/* ---- building the stack ------------------------------------------------- */

const char *lower_name(const struct soak_round *r)
{
	return r->uring ? "uring" : "ram";
}

/* The queue on layer @j's device (j = nr_layers: the lower device). */
struct mq_queue *round_queue(struct soak_round *r, unsigned j)
{
	if (j == 0)
		return r->q;
	if (j == r->nr_layers)
		return atomic_load(&r->lower_spy.q);
	return atomic_load(&r->layers[j].spy.q);
}

struct spy *round_spy(struct soak_round *r, unsigned j)
{
	return j == r->nr_layers ? &r->lower_spy : &r->layers[j].spy;
}

static void round_params(struct soak_round *r, uint64_t max_ms)
{
	uint64_t *g = &r->prng;
	int lower = soak_lower_choice();
	unsigned ranges;

	r->ms = rnd_range(g, 2000, 5000);	/* MQ_MIN evaluates twice */
	r->ms = (unsigned)MQ_MIN((uint64_t)r->ms, max_ms);
	r->uring = g_uring_ok && (lower < 0 ? rnd(g) & 1 : lower == 1);
	r->ring = rnd_range(g, 4, 16);
	r->lower_tags = rnd_range(g, 16, 64);
	r->sqpoll = g_sqpoll_ok && rnd_pct(g, 25);
	r->fixed = !rnd_pct(g, 25);

	ranges = rnd_range(g, 1, 3);
	for (unsigned i = 0; i < ranges; i++) {
		struct mq_fault_config *c = &r->layers[r->nr_layers++].cfg;
		uint64_t len = rnd_pct(g, 30) ? rnd_range(g, 1, 8)
					      : rnd_range(g, 8, 512);
		unsigned m = rnd_range(g, 0, 99);

		c->eio_sector_start = rnd(g) % (DEV_SECT - len);
		/* Block-aligned edges: I/O that ends or starts right there. */
		if (rnd(g) & 1) {
			c->eio_sector_start &= ~(uint64_t)(BLK_SECT - 1);
			len = MQ_ALIGN_UP(len, (uint64_t)BLK_SECT);
		}
		c->eio_sector_end = c->eio_sector_start + len;
		c->eio_op_mask = m < 45 ? 0 : m < 65 ? OPBIT(MQ_OP_WRITE)
			       : m < 85 ? OPBIT(MQ_OP_READ)
			       : OPBIT(MQ_OP_READ) | OPBIT(MQ_OP_WRITE);
		/* A flush in the mask changes nothing: it touches no range. */
		if (c->eio_op_mask && rnd_pct(g, 20))
			c->eio_op_mask |= OPBIT(MQ_OP_FLUSH);
	}
	/* Sometimes a layer failing every flush, or one that never fires. */
	if (rnd_pct(g, 20) || rnd_pct(g, 10)) {
		unsigned at = rnd_range(g, 0, r->nr_layers);
		bool flush = rnd(g) & 1;

		memmove(&r->layers[at + 1], &r->layers[at],
			(r->nr_layers - at) * sizeof(r->layers[0]));
		memset(&r->layers[at], 0, sizeof(r->layers[at]));
		r->layers[at].cfg.eio_op_mask = flush ? OPBIT(MQ_OP_FLUSH)
						      : OPBIT(MQ_OP_DISCARD);
		r->nr_layers++;
	}
	for (unsigned i = 0; i < r->nr_layers; i++) {
		struct mq_fault_config *c = &r->layers[i].cfg;

		c->latency_ns = rnd_pct(g, 30) ? 0
			      : (uint64_t)rnd_range(g, 1, 100) * 1000;
		c->seed = r->seed + i + 1;	/* non-zero: nothing printed */
		c->queue_depth = rnd_pct(g, 50) ? 0 : rnd_range(g, 8, 64);
	}

	r->qcfg.elevator = rnd(g) & 1 ? "none" : "mq-deadline";
	r->qcfg.queue_depth = rnd_range(g, 4, 64);
	r->qcfg.nr_hw_queues = rnd_range(g, 1, 2);
	r->qcfg.nr_requests = rnd_pct(g, 50) ? 0 : rnd_range(g, 4, 128);
	r->qcfg.no_merges = true;
	r->qcfg.eager_dispatch = rnd_pct(g, 10);
	r->qcfg.single_tag_alloc = rnd_pct(g, 10);
	r->qcfg.async_run = rnd_pct(g, 5);

	r->window = rnd_range(g, 1, MAX_WINDOW);
	r->flush_pct = rnd_range(g, 0, 4);
	r->write_pct = rnd_range(g, 30, 70);
	r->fua_pct = rnd_range(g, 0, 3);
	r->task_pct = rnd_pct(g, 50) ? 0 : rnd_range(g, 1, 40);
	r->plug_pct = rnd_range(g, 0, 60);
	r->near_pct = rnd_range(g, 5, 40);
	r->seq_pct = rnd_range(g, 0, 50);
	r->sync_pct = rnd_range(g, 0, 100);
}

static void open_lower(struct soak_round *r)
{
	if (r->uring) {
		struct mq_uring_config uc = {
			.queue_depth = r->ring, .sqpoll = r->sqpoll,
			.no_fixed_files = !r->fixed,
		};
		int fd, err = 0;

		snprintf(r->path, sizeof(r->path), "%s/soak.%d.%u", g_dir,
			 (int)getpid(), r->index);
		snprintf(g_file, sizeof(g_file), "%s", r->path);
		fd = open(r->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0)
			g_file[0] = '\0';
		ck_assert_msg(fd >= 0, "create %s: %s", r->path, strerror(errno));
		ck_assert_msg(ftruncate(fd, (off_t)DEV_BYTES) == 0,
			      "ftruncate %s: %s", r->path, strerror(errno));
		r->verify_fd = fd;
		r->lower = t_dev_uring(r->path, &uc, &err);
		/* Both descriptors keep the file: nothing to leak on a crash. */
		unlink(r->path);
		g_file[0] = '\0';
		ck_assert_msg(r->lower != NULL, "round %u seed %#" PRIx64
			      ": mq_uring_open: %s", r->index, r->seed,
			      strerror(-err));
		/* The fault device's queue takes the geometry's depth. */
		r->lower->geo.queue_depth = r->lower_tags;
	} else {
		r->verify_fd = -1;
		r->lower = t_dev_ram(DEV_BYTES, r->lower_tags);
		ck_assert_msg(r->lower != NULL, "mq_ram_open");
	}
	spy_install(&r->lower_spy, r->lower);
}

/* Bottom up: each fault device over the one below, wrapped before use. */
static void open_stack(struct soak_round *r)
{
	struct mq_dev *below = r->lower;

	for (unsigned i = r->nr_layers; i-- > 0;) {
		struct layer *l = &r->layers[i];

		l->dev = t_dev_fault(below, &l->cfg);
		ck_assert_msg(l->dev != NULL, "round %u seed %#" PRIx64
			      ": mq_fault_open layer %u", r->index, r->seed, i);
		if (i)
			spy_install(&l->spy, l->dev);
		below = l->dev;
	}
	r->q = t_queue_new(r->layers[0].dev, &r->qcfg);
	ck_assert_msg(r->q != NULL, "round %u seed %#" PRIx64
		      ": mq_queue_create", r->index, r->seed);
}

struct soak_round *round_new(unsigned index, uint64_t seed, uint64_t max_ms)
{
	struct soak_round *r = calloc(1, sizeof(*r));
	void *bufs = NULL;

	ck_assert_ptr_nonnull(r);
	r->index = index;
	r->seed = seed;
	r->prng = seed;
	r->ctl_rng = seed ^ 0xc0c0c0c0ull;
	pthread_mutex_init(&r->err_lock, NULL);
	round_params(r, max_ms);
	ck_assert_int_eq(posix_memalign(&bufs, BLK, (size_t)NR_THREADS *
					MAX_WINDOW * MAX_BYTES), 0);
	r->bufs = bufs;
	for (unsigned i = 0; i < NR_THREADS; i++) {
		struct soak_thread *t = &r->t[i];

		t->r = r;
		t->id = i;
		t->rng = mix64(seed + 0x1000 * (i + 1));
		t->base = (uint64_t)i * REGION_SECT;
		t->shadow = calloc(REGION_SECT, sizeof(*t->shadow));
		t->busy = calloc(REGION_BLKS, 1);
		ck_assert(t->shadow && t->busy);
		for (unsigned k = 0; k < MAX_WINDOW; k++) {
			t->slots[k].t = t;
			t->slots[k].buf = r->bufs +
				((size_t)i * MAX_WINDOW + k) * MAX_BYTES;
		}
		for (unsigned k = 0; k < r->window; k++)
			t->free_idx[t->nr_free++] = r->window - 1 - k;
		pthread_mutex_init(&t->lock, NULL);
		pthread_cond_init(&t->cond, NULL);
	}
	open_lower(r);
	open_stack(r);
	return r;
}

void round_free(struct soak_round *r)
{
	for (unsigned i = 0; i < NR_THREADS; i++) {
		free(r->t[i].shadow);
		free(r->t[i].busy);
		pthread_mutex_destroy(&r->t[i].lock);
		pthread_cond_destroy(&r->t[i].cond);
	}
	free(r->bufs);
	pthread_mutex_destroy(&r->err_lock);
	free(r);
}
