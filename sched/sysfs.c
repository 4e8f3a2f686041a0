/* SPDX-License-Identifier: MIT */
/*
 * sysfs.c - a queue's tunables and statistics in the kernel's vocabulary
 * (/sys/block/DEV/queue/ and its iosched/ directory), plus the small
 * accessors drivers use.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "blk_i.h"
#include "elv_i.h"

static const char *const queue_attrs[] = {
	"scheduler", "nr_requests", "queue_depth", "nr_hw_queues",
	"max_sectors_kb", "nomerges", "complete_delay_us", "driver",
};

int mq_queue_attr_list(struct mq_queue *q, const char **names, unsigned max)
{
	unsigned n = 0;

	for (size_t i = 0; i < MQ_ARRAY_SIZE(queue_attrs) && n < max; i++)
		names[n++] = queue_attrs[i];
	if (q->elv_type)
		for (unsigned i = 0; i < q->elv_type->nr_attrs && n < max; i++)
			names[n++] = q->elv_type->attrs[i].name;
	return (int)n;
}

/* "[mq-deadline] none" style: the active one in brackets. */
static void attr_show_scheduler(struct mq_queue *q, char *buf, size_t len)
{
	const char *names[8];
	unsigned n = mq_elv_list(names, 8);
	size_t off = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < n && off < len; i++) {
		bool cur = !strcmp(names[i], mq_queue_elevator_name(q));

		off += (size_t)snprintf(buf + off, len - off, "%s%s%s%s",
					i ? " " : "", cur ? "[" : "",
					names[i], cur ? "]" : "");
	}
}

static int attr_show_elv(struct mq_queue *q, const char *name, char *buf,
			 size_t len)
{
	int ret = -ENOENT;

	mq_flush_plug();	/* a switch may be waiting for our plug */
	pthread_mutex_lock(&q->attr_lock);
	if (q->elv_type)
		ret = mq_elv_attr_show(q->hctxs[0]->elevator, name, buf, len);
	pthread_mutex_unlock(&q->attr_lock);
	return ret;
}

int mq_queue_attr_show(struct mq_queue *q, const char *name, char *buf,
		       size_t len)
{
	unsigned v;

	if (!strcmp(name, "scheduler")) {
		attr_show_scheduler(q, buf, len);
		return 0;
	}
	if (!strcmp(name, "driver")) {	/* the device's driver, read-only */
		snprintf(buf, len, "%s", q->dev->ops->name);
		return 0;
	}
	if (!strcmp(name, "nr_requests"))
		v = q->nr_requests;
	else if (!strcmp(name, "queue_depth"))
		v = q->queue_depth;
	else if (!strcmp(name, "nr_hw_queues"))
		v = q->nr_hw_queues;
	else if (!strcmp(name, "max_sectors_kb"))
		v = q->limits.max_bytes / 1024;
	else if (!strcmp(name, "nomerges"))
		v = q->cfg.no_merges ? 2 : 0;
	else if (!strcmp(name, "complete_delay_us"))
		v = (unsigned)(atomic_load(&q->complete_delay_ns) / 1000);
	else
		return attr_show_elv(q, name, buf, len);
	snprintf(buf, len, "%u", v);
	return 0;
}

int mq_queue_prio_stats(struct mq_queue *q, struct mq_prio_stats *out)
{
	int ret = -ENOENT;

	memset(out, 0, sizeof(*out));
	mq_flush_plug();	/* a switch may be waiting for our plug */
	pthread_mutex_lock(&q->attr_lock);
	if (q->elv_type && q->elv_type->ops->prio_stats) {
		for (unsigned i = 0; i < q->nr_hw_queues; i++)
			q->elv_type->ops->prio_stats(q->hctxs[i]->elevator, out);
		ret = 0;
	}
	pthread_mutex_unlock(&q->attr_lock);
	return ret;
}

/* A decimal in [0, @max], trailing blanks allowed, as sysfs takes it. */
static int attr_parse_ulong(const char *value, unsigned long max,
			    unsigned long *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(value, &end, 10);
	if (errno || end == value || *value == '-' || v > max)
		return -EINVAL;
	while (*end == '\n' || *end == ' ')
		end++;
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

/* 0 .. 1 s: longer only stalls completions. */
static int attr_store_delay(struct mq_queue *q, const char *value)
{
	unsigned long v;

	if (attr_parse_ulong(value, 1000000, &v))
		return -EINVAL;
	atomic_store(&q->complete_delay_ns, (uint64_t)v * 1000);
	return 0;
}

static int attr_store_nr_requests(struct mq_queue *q, const char *value)
{
	unsigned long v;

	if (attr_parse_ulong(value, MQ_MAX_NR_REQUESTS, &v))
		return -EINVAL;
	return mq_queue_set_nr_requests(q, (unsigned)v);
}

/*
 * A tunable applies to every hardware queue's instance alike.  attr_lock
 * keeps a live elevator switch from freeing the instances meanwhile.
 */
static int attr_store_elv(struct mq_queue *q, const char *name,
			  const char *value)
{
	int ret = -ENOENT;

	mq_flush_plug();	/* a switch may be waiting for our plug */
	pthread_mutex_lock(&q->attr_lock);
	if (q->elv_type) {
		ret = 0;
		for (unsigned i = 0; i < q->nr_hw_queues && !ret; i++) {
			ret = mq_elv_attr_store(q->hctxs[i]->elevator, name,
						value);
			mq_tags_update_shallow(q->hctxs[i]);
		}
	}
	pthread_mutex_unlock(&q->attr_lock);
	return ret;
}

int mq_queue_attr_store(struct mq_queue *q, const char *name,
			const char *value)
{
	if (!strcmp(name, "scheduler"))
		return mq_queue_switch_elevator(q, value);
	if (!strcmp(name, "complete_delay_us"))
		return attr_store_delay(q, value);
	if (!strcmp(name, "nr_requests"))
		return attr_store_nr_requests(q, value);
	for (size_t i = 0; i < MQ_ARRAY_SIZE(queue_attrs); i++)
		if (!strcmp(name, queue_attrs[i]))
			return -EACCES;	/* read-only while the queue lives */
	return attr_store_elv(q, name, value);
}

static void stats_add_ctx(struct mq_queue_stats *s, struct mq_sw_ctx *ctx)
{
	struct mq_ctx_stats *c = &ctx->stats;

	for (int d = 0; d < MQ_DIR_COUNT; d++) {
		s->bios[d] += atomic_load(&c->bios[d]);
		s->merges[d] += atomic_load(&c->merges[d]);
	}
	s->plug_merges += atomic_load(&c->plug_merges);
	s->elv_merges += atomic_load(&c->elv_merges);
	s->rq_merges += atomic_load(&c->rq_merges);
	s->tag_alloc_calls += atomic_load(&c->tag_alloc_calls);
	s->tags_allocated += atomic_load(&c->tags_allocated);
	s->tag_waits += atomic_load(&c->tag_waits);
}

static void stats_add_hctx(struct mq_queue_stats *s, struct mq_hw_queue *h)
{
	uint64_t done = 0, disp = 0;

	for (int d = 0; d < MQ_DIR_COUNT; d++) {
		s->dispatched[d] += atomic_load(&h->rstats.dispatched[d]);
		s->queue_ns[d] += atomic_load(&h->rstats.queue_ns[d]);
		s->ios[d] += atomic_load(&h->dstats.ios[d]);
		s->sectors[d] += atomic_load(&h->dstats.sectors[d]);
		s->device_ns[d] += atomic_load(&h->dstats.device_ns[d]);
		disp += atomic_load(&h->rstats.dispatched[d]);
		done += atomic_load(&h->dstats.ios[d]);
	}
	s->in_flight += disp > done ? disp - done : 0;
	s->errors += atomic_load(&h->dstats.errors);
	s->busy_ns = MQ_MAX(s->busy_ns, atomic_load(&h->dstats.busy_ns));
	s->dispatch_runs += atomic_load(&h->rstats.dispatch_runs);
	for (int i = 0; i < MQ_DISPATCH_HIST; i++)
		s->dispatch_hist[i] += atomic_load(&h->rstats.dispatch_hist[i]);
	s->requeues += atomic_load(&h->rstats.requeues);
	s->run_sync += atomic_load(&h->rstats.run_sync);
	s->run_async += atomic_load(&h->rstats.run_async);
	s->completion_batches += atomic_load(&h->dstats.completion_batches);
	s->dispatch_busy = MQ_MAX(s->dispatch_busy, h->dispatch_busy);
	mq_task_worker_stats(h->task, s);
	if (h->q->dev->ops->queue_stats) {
		struct mq_dev_queue_stats d = { 0 };

		h->q->dev->ops->queue_stats(h->q->dev, h->driver_data, &d);
		s->reaper_runs += d.reaper_runs;
		s->reaped += d.reaped;
		s->reaper_cs += d.reaper_cs;
		s->dev_status_errors += d.status_errors;
		s->dev_sync_rqs += d.sync_rqs;
		if (d.last_status)
			s->dev_last_status = d.last_status;
	}
}

int mq_queue_get_stats(struct mq_queue *q, int hctx, struct mq_queue_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (hctx >= (int)q->nr_hw_queues)
		return -EINVAL;
	out->nr_hw_queues = q->nr_hw_queues;
	out->nr_poll_queues = q->nr_poll_queues;
	for (unsigned i = 0; i < q->nr_hw_queues; i++)
		if (hctx < 0 || (unsigned)hctx == i)
			stats_add_hctx(out, q->hctxs[i]);
	/* Submission counters live per thread slot, not per hw queue. */
	for (unsigned i = 0; i < mq_queue_nr_ctxs(q); i++)
		if (hctx < 0 || q->ctxs[i].hctx->index == (unsigned)hctx)
			stats_add_ctx(out, &q->ctxs[i]);
	return 0;
}
