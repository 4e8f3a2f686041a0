// SPDX-License-Identifier: MIT
/*
 * stats_print.c - a queue's statistics as text, in the kernel's words
 * (/sys/block/DEV/stat, blk-mq debugfs), for the daemon and the demo.
 */
#include <inttypes.h>
#include <stdio.h>

#include "mqfs/blk.h"

static double stats_ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0.0;
}

static void stats_print_dir(FILE *out, const struct mq_queue_stats *s,
			    enum mq_dir d, const char *name)
{
	fprintf(out, "  %-5s bios=%" PRIu64 " requests=%" PRIu64
		" KiB=%" PRIu64 " merged=%" PRIu64 " avg_rq=%.1fKiB"
		" queue_avg=%.1fus device_avg=%.1fus\n", name, s->bios[d],
		s->ios[d], s->sectors[d] / 2, s->merges[d],
		stats_ratio(s->sectors[d], s->ios[d]) / 2,
		stats_ratio(s->queue_ns[d], s->ios[d]) / 1000,
		stats_ratio(s->device_ns[d], s->ios[d]) / 1000);
}

void mq_queue_stats_print(struct mq_queue *q, FILE *out)
{
	static const char *const hist[MQ_DISPATCH_HIST] = {
		"0", "1", "2-3", "4-7", "8-15", "16-31", "32-63", "64-127",
		"128+" };
	struct mq_queue_stats s;
	char driver[32];

	if (mq_queue_get_stats(q, -1, &s))
		return;
	if (mq_queue_attr_show(q, "driver", driver, sizeof(driver)))
		driver[0] = '\0';
	fprintf(out, "scheduler %s, %u hardware queue(s)",
		mq_queue_elevator_name(q), s.nr_hw_queues);
	if (s.nr_poll_queues)
		fprintf(out, " (%u of them poll queues)", s.nr_poll_queues);
	fprintf(out, ", driver %s\n", driver);
	stats_print_dir(out, &s, MQ_DIR_READ, "read");
	stats_print_dir(out, &s, MQ_DIR_WRITE, "write");
	fprintf(out, "  merges: plug=%" PRIu64 " elevator=%" PRIu64
		" request=%" PRIu64 "; errors=%" PRIu64 " requeues=%" PRIu64
		"\n", s.plug_merges, s.elv_merges, s.rq_merges, s.errors,
		s.requeues);
	fprintf(out, "  dispatch runs=%" PRIu64 " (sync %" PRIu64 ", async %"
		PRIu64 ") busy=%u; requests per run:", s.dispatch_runs,
		s.run_sync, s.run_async, s.dispatch_busy);
	for (unsigned i = 0; i < MQ_DISPATCH_HIST; i++)
		if (s.dispatch_hist[i])
			fprintf(out, " %s:%" PRIu64, hist[i], s.dispatch_hist[i]);
	fprintf(out, "\n  tags: %.1f per allocation, %" PRIu64 " waits\n",
		stats_ratio(s.tags_allocated, s.tag_alloc_calls), s.tag_waits);
	fprintf(out, "  completion: reaper runs=%" PRIu64 " (%.1f per run, %"
		PRIu64 " cs); task worker runs=%" PRIu64 " (%.1f per run, %"
		PRIu64 " wake-ups, %" PRIu64 " cs)\n", s.reaper_runs,
		stats_ratio(s.reaped, s.reaper_runs), s.reaper_cs, s.task_runs,
		stats_ratio(s.task_completions, s.task_runs), s.task_wakeups,
		s.task_worker_cs);
	if (s.dev_status_errors || s.dev_sync_rqs)
		fprintf(out, "  device: status errors=%" PRIu64 " (last 0x%x);"
			" requests sent synchronously=%" PRIu64 "\n",
			s.dev_status_errors, s.dev_last_status, s.dev_sync_rqs);
}
