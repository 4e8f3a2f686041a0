/* SPDX-License-Identifier: MIT */
/*
 * report.c - mqfs-bench's results, as a short text table or as JSON with
 * the figures the block layer's mechanisms are judged by: merges, average
 * dispatched request size, tags per allocation call, context switches and
 * CPU time per I/O.
 */
#include <inttypes.h>
#include <stdio.h>
#include "bench_i.h"

struct bench_figures {
	uint64_t ios, bytes, merges, reqs;
	double iops, mib_s, avg_rq_kib, tags_per_call, cs_per_io, cpu_ns_per_io;
	uint64_t p50, p99, p999;
	double mean;
};

static double ru_cpu_s(const struct rusage *r)
{
	return (double)r->ru_utime.tv_sec + (double)r->ru_utime.tv_usec / 1e6 +
	       (double)r->ru_stime.tv_sec + (double)r->ru_stime.tv_usec / 1e6;
}

static double ru_cs(const struct rusage *r)
{
	return (double)(r->ru_nvcsw + r->ru_nivcsw);
}

static double ratio(double a, double b)
{
	return b > 0 ? a / b : 0;
}

static void bench_figures(const struct bench_opts *o,
			  const struct bench_result *r, struct bench_figures *f)
{
	const struct mq_queue_stats *s = &r->st;

	f->ios = hist_count(&r->all);
	f->bytes = f->ios * o->bs;
	f->iops = ratio((double)f->ios, r->elapsed_s);
	f->mib_s = ratio((double)f->bytes, r->elapsed_s) / 1048576.0;
	f->merges = s->merges[0] + s->merges[1];
	f->reqs = s->ios[0] + s->ios[1];
	f->avg_rq_kib = ratio((double)(s->sectors[0] + s->sectors[1]) * 512,
			      (double)f->reqs) / 1024;
	f->tags_per_call = ratio((double)s->tags_allocated,
				 (double)s->tag_alloc_calls);
	f->cs_per_io = ratio(ru_cs(&r->ru1) - ru_cs(&r->ru0), (double)f->ios);
	f->cpu_ns_per_io = ratio((ru_cpu_s(&r->ru1) - ru_cpu_s(&r->ru0)) * 1e9,
				 (double)f->ios);
	f->p50 = hist_percentile(&r->all, 50);
	f->p99 = hist_percentile(&r->all, 99);
	f->p999 = hist_percentile(&r->all, 99.9);
	f->mean = hist_mean(&r->all);
}

static void report_json(const struct bench_opts *o, const struct bench_result *r,
			const struct bench_figures *f)
{
	const struct mq_queue_stats *s = &r->st;

	printf("{\n  \"dev\": \"%s\", \"dev_lat_us\": %" PRIu64 ", \"sched\": \"%s\",\n"
	       "  \"rw\": \"%s\", \"bs\": %u, \"qd\": %u, \"jobs\": %u, \"plug\": %u,\n"
	       "  \"eager_dispatch\": %s, \"async_run\": %s, \"single_tag\": %s,"
	       " \"poll\": %s,\n",
	       o->dev, o->dev_lat_us, o->sched, bench_rw_name(o->rw), o->bs,
	       o->qd, o->jobs, o->plug, o->eager_dispatch ? "true" : "false",
	       o->async_run ? "true" : "false", o->single_tag ? "true" : "false",
	       o->poll ? "true" : "false");
	printf("  \"runtime_s\": %.3f, \"ios\": %" PRIu64 ", \"errors\": %" PRIu64 ",\n"
	       "  \"iops\": %.0f, \"bw_mib_s\": %.1f,\n"
	       "  \"lat_ns\": { \"mean\": %.0f, \"p50\": %" PRIu64 ", \"p99\": %" PRIu64
	       ", \"p99.9\": %" PRIu64 " },\n",
	       r->elapsed_s, f->ios, r->errors, f->iops, f->mib_s, f->mean,
	       f->p50, f->p99, f->p999);
	printf("  \"merges\": %" PRIu64 ", \"requests\": %" PRIu64
	       ", \"avg_dispatch_kib\": %.1f, \"tags_per_alloc_call\": %.2f,\n"
	       "  \"cs_per_io\": %.4f, \"cpu_ns_per_io\": %.1f,\n",
	       f->merges, f->reqs, f->avg_rq_kib, f->tags_per_call,
	       f->cs_per_io, f->cpu_ns_per_io);
	printf("  \"queue\": { \"plug_merges\": %" PRIu64 ", \"elv_merges\": %" PRIu64
	       ", \"rq_merges\": %" PRIu64 ", \"requeues\": %" PRIu64
	       ", \"run_sync\": %" PRIu64 ", \"run_async\": %" PRIu64
	       ", \"dispatch_runs\": %" PRIu64 ", \"tag_waits\": %" PRIu64
	       ", \"completion_batches\": %" PRIu64 " },\n",
	       s->plug_merges, s->elv_merges, s->rq_merges, s->requeues,
	       s->run_sync, s->run_async, s->dispatch_runs, s->tag_waits,
	       s->completion_batches);
	printf("  \"task\": { \"complete_in_task\": %s, \"complete_delay_us\": %u"
	       ", \"runs\": %" PRIu64 ", \"completions\": %" PRIu64
	       ", \"completions_per_run\": %.1f, \"wakeups\": %" PRIu64
	       ", \"worker_cs\": %" PRIu64 " },\n",
	       o->complete_in_task ? "true" : "false", o->complete_delay_us,
	       s->task_runs, s->task_completions,
	       ratio((double)s->task_completions, (double)s->task_runs),
	       s->task_wakeups, s->task_worker_cs);
	printf("  \"reaper\": { \"runs\": %" PRIu64 ", \"completions\": %" PRIu64
	       ", \"completions_per_run\": %.1f, \"cs\": %" PRIu64 " }\n}\n",
	       s->reaper_runs, s->reaped,
	       ratio((double)s->reaped, (double)s->reaper_runs), s->reaper_cs);
}

static void report_text(const struct bench_opts *o, const struct bench_result *r,
			const struct bench_figures *f)
{
	printf("mqfs-bench: dev=%s lat=%" PRIu64 "us sched=%s rw=%s bs=%u qd=%u jobs=%u plug=%u%s%s%s%s\n",
	       o->dev, o->dev_lat_us, o->sched, bench_rw_name(o->rw), o->bs,
	       o->qd, o->jobs, o->plug, o->eager_dispatch ? " eager-dispatch" : "",
	       o->async_run ? " async-run" : "", o->single_tag ? " single-tag" : "",
	       o->poll ? " poll" : "");
	printf("  iops=%.0f bw=%.1fMiB/s ios=%" PRIu64 " errors=%" PRIu64 " runtime=%.2fs\n",
	       f->iops, f->mib_s, f->ios, r->errors, r->elapsed_s);
	printf("  lat(ns): mean=%.0f p50=%" PRIu64 " p99=%" PRIu64 " p99.9=%" PRIu64 "\n",
	       f->mean, f->p50, f->p99, f->p999);
	printf("  merges=%" PRIu64 " requests=%" PRIu64 " avg_dispatch=%.1fKiB tags/alloc=%.2f\n",
	       f->merges, f->reqs, f->avg_rq_kib, f->tags_per_call);
	printf("  cs/io=%.4f cpu/io=%.1fns run_sync=%" PRIu64 " run_async=%" PRIu64
	       " requeues=%" PRIu64 "\n", f->cs_per_io, f->cpu_ns_per_io,
	       r->st.run_sync, r->st.run_async, r->st.requeues);
	if (o->complete_in_task)
		printf("  task: delay=%uus runs=%" PRIu64 " completions/run=%.1f"
		       " wakeups=%" PRIu64 " worker_cs=%" PRIu64 "\n",
		       o->complete_delay_us, r->st.task_runs,
		       ratio((double)r->st.task_completions,
			     (double)r->st.task_runs),
		       r->st.task_wakeups, r->st.task_worker_cs);
}

int bench_report(const struct bench_opts *o, const struct bench_result *r)
{
	struct bench_figures f;

	bench_figures(o, r, &f);
	if (o->json)
		report_json(o, r, &f);
	else
		report_text(o, r, &f);
	return r->errors ? 1 : 0;
}
