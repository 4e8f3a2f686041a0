/* SPDX-License-Identifier: MIT */
/*
 * bench_opts.c - mqfs-bench's command line.  Sizes take k/m/g suffixes (powers
 * of 1024), as fio's do.  Bad input is an error with the option named.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench_i.h"
#include "mqfs/cli.h"

#define BENCH_PROG	"mqfs-bench"
#define BENCH_USAGE	2

static const char *const rw_names[] = {
	[BENCH_READ] = "read", [BENCH_WRITE] = "write",
	[BENCH_RANDREAD] = "randread", [BENCH_RANDWRITE] = "randwrite",
	[BENCH_RANDRW] = "randrw",
};

const char *bench_rw_name(enum bench_rw rw)
{
	return rw_names[rw];
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: mqfs-bench [options]\n"
"  --dev null|ram|PATH   device (default null); PATH: a file or block\n"
"                        device through the io_uring driver (O_DIRECT),\n"
"                        or an NVMe generic device /dev/ngXnY (NVMe\n"
"                        commands, no kernel block layer)\n"
"  --dev-lat-us N        device latency in microseconds (null; default 0)\n"
"  --dev-qd N            device queue depth (default 128)\n"
"  --sched none|mq-deadline   elevator (default mq-deadline)\n"
"  --rw read|write|randread|randwrite|randrw   (default randread)\n"
"  --rwmixread PCT       reads in randrw (default 50)\n"
"  --bs SIZE             block size (default 4k)\n"
"  --qd N                I/Os in flight per job (default 32)\n"
"  --jobs N              submitting threads (default 1)\n"
"  --runtime SEC         (default 5)\n"
"  --size SIZE           device span used (default 1g; ram: its size)\n"
"  --plug N              bios per plug, 0 = unplugged (default 32)\n"
"  --nr-hw-queues N      hardware queues (default 1)\n"
"  --nr-requests N       scheduler tags (default 2*min(qd,128))\n"
"  --queue-depth N       driver tags (default: the device's)\n"
"  --eager-dispatch      A/B: dequeue even when the device is busy\n"
"  --async-run           A/B: run every queue from the worker thread\n"
"  --single-tag          A/B: one tag per allocation call\n"
"  --nomerges            A/B: no merging at all\n"
"  --seed N              random offsets seed (default 1)\n"
"  --sqpoll              io_uring: kernel submission thread\n"
"  --iopoll              io_uring: polled completions (the device's poll\n"
"                        queues; NVMe passthrough: Linux 6.5 or later)\n"
"  --poll                io_uring: no reaper thread; a job that waits reaps\n"
"                        its own hardware queue (mq_queue_poll), as fio's\n"
"                        thread does; --nr-hw-queues defaults to --jobs\n"
"  --fixedbufs           io_uring: register the I/O buffers\n"
"  --complete-in-task    end bios in the completion worker (task context)\n"
"  --complete-delay-us N completion worker batching delay (default 1000)\n"
"  --json                print JSON\n"
"  -h, --help            this text\n"
"  -V, --version         the version\n");
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	case 't': case 'T': v <<= 40; end++; break;
	}
	if (*end == 'b' || *end == 'B' || *end == 'i')
		end++;
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_uint(const char *s, unsigned *out)
{
	uint64_t v;

	if (parse_size(s, &v) || v > 0xffffffffu)
		return -EINVAL;
	*out = (unsigned)v;
	return 0;
}

static int parse_rw(const char *s, enum bench_rw *rw)
{
	for (size_t i = 0; i < sizeof(rw_names) / sizeof(rw_names[0]); i++)
		if (!strcmp(s, rw_names[i])) {
			*rw = (enum bench_rw)i;
			return 0;
		}
	return -EINVAL;
}

enum {
	O_DEV = 256, O_LAT, O_DEVQD, O_SCHED, O_RW, O_MIX, O_BS, O_QD, O_JOBS,
	O_RUNTIME, O_SIZE, O_PLUG, O_NRHW, O_NRREQ, O_QDEPTH, O_EAGER,
	O_ASYNC, O_SINGLE, O_NOMERGE, O_SEED, O_JSON, O_SQPOLL,
	O_TASK, O_DELAY, O_FIXEDBUFS, O_POLL, O_IOPOLL,
};

static const struct option long_opts[] = {
	{ "dev", 1, NULL, O_DEV }, { "dev-lat-us", 1, NULL, O_LAT },
	{ "dev-qd", 1, NULL, O_DEVQD }, { "sched", 1, NULL, O_SCHED },
	{ "rw", 1, NULL, O_RW }, { "rwmixread", 1, NULL, O_MIX },
	{ "bs", 1, NULL, O_BS }, { "qd", 1, NULL, O_QD },
	{ "jobs", 1, NULL, O_JOBS }, { "runtime", 1, NULL, O_RUNTIME },
	{ "size", 1, NULL, O_SIZE }, { "plug", 1, NULL, O_PLUG },
	{ "nr-hw-queues", 1, NULL, O_NRHW }, { "nr-requests", 1, NULL, O_NRREQ },
	{ "queue-depth", 1, NULL, O_QDEPTH },
	{ "eager-dispatch", 0, NULL, O_EAGER }, { "async-run", 0, NULL, O_ASYNC },
	{ "single-tag", 0, NULL, O_SINGLE }, { "nomerges", 0, NULL, O_NOMERGE },
	{ "seed", 1, NULL, O_SEED }, { "json", 0, NULL, O_JSON },
	{ "sqpoll", 0, NULL, O_SQPOLL },
	{ "complete-in-task", 0, NULL, O_TASK },
	{ "complete-delay-us", 1, NULL, O_DELAY },
	{ "fixedbufs", 0, NULL, O_FIXEDBUFS }, { "poll", 0, NULL, O_POLL },
	{ "iopoll", 0, NULL, O_IOPOLL },
	MQFS_CLI_LONG_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

static int set_opt(struct bench_opts *o, int c, const char *arg)
{
	uint64_t v;
	char *end;

	switch (c) {
	case O_DEV: o->dev = arg; return 0;
	case O_LAT: return parse_size(arg, &o->dev_lat_us);
	case O_DEVQD: return parse_uint(arg, &o->dev_qd);
	case O_SCHED: o->sched = arg; return 0;
	case O_RW: return parse_rw(arg, &o->rw);
	case O_MIX: return parse_uint(arg, &o->rwmixread) ||
			   o->rwmixread > 100 ? -EINVAL : 0;
	case O_BS:
		if (parse_size(arg, &v) || !v || v % 512 || v > (64u << 20))
			return -EINVAL;
		o->bs = (uint32_t)v;
		return 0;
	case O_QD: return parse_uint(arg, &o->qd) || !o->qd ? -EINVAL : 0;
	case O_JOBS: return parse_uint(arg, &o->jobs) || !o->jobs ? -EINVAL : 0;
	case O_RUNTIME:
		o->runtime = strtod(arg, &end);
		return *end || o->runtime <= 0 ? -EINVAL : 0;
	case O_SIZE: return parse_size(arg, &o->size);
	case O_PLUG: return parse_uint(arg, &o->plug);
	case O_NRHW: return parse_uint(arg, &o->nr_hw_queues);
	case O_NRREQ: return parse_uint(arg, &o->nr_requests);
	case O_QDEPTH: return parse_uint(arg, &o->queue_depth);
	case O_EAGER: o->eager_dispatch = true; return 0;
	case O_ASYNC: o->async_run = true; return 0;
	case O_SINGLE: o->single_tag = true; return 0;
	case O_NOMERGE: o->nomerges = true; return 0;
	case O_SEED: return parse_size(arg, &o->seed);
	case O_JSON: o->json = true; return 0;
	case O_SQPOLL: o->sqpoll = true; return 0;
	case O_IOPOLL: o->iopoll = true; return 0;
	case O_POLL: o->poll = true; return 0;
	case O_FIXEDBUFS: o->fixedbufs = true; return 0;
	case O_TASK: o->complete_in_task = true; return 0;
	case O_DELAY: return parse_uint(arg, &o->complete_delay_us);
	default: return -EINVAL;
	}
}

/*
 * --poll: each job reaps the hardware queue it submits to, so each gets
 * one of its own (threads take queues in arrival order).
 */
static int bench_check_poll(struct bench_opts *o)
{
	if (!o->poll)
		return 0;
	if (!strcmp(o->dev, "null") || !strcmp(o->dev, "ram")) {
		fprintf(stderr, "mqfs-bench: --poll needs a path (io_uring) "
			"device\n");
		return -EINVAL;
	}
	if (!o->nr_hw_queues)
		o->nr_hw_queues = o->jobs;
	if (o->nr_hw_queues < o->jobs) {
		fprintf(stderr, "mqfs-bench: --poll: --nr-hw-queues %u < --jobs "
			"%u (each job polls a hardware queue of its own)\n",
			o->nr_hw_queues, o->jobs);
		return -EINVAL;
	}
	return 0;
}

int bench_parse_opts(int argc, char **argv, struct bench_opts *o)
{
	int c, idx;

	*o = (struct bench_opts){ .dev = "null", .sched = "mq-deadline",
				  .rw = BENCH_RANDREAD, .rwmixread = 50,
				  .bs = 4096, .qd = 32, .jobs = 1, .runtime = 5,
				  .plug = 32, .seed = 1,
				  .complete_delay_us = 1000 };
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":hV", long_opts, &idx)) != -1) {
		if (c == 'h' || c == 'V' || c == '?' || c == ':')
			return mqfs_cli_std_option(BENCH_PROG, -EINVAL, c, argv,
						   usage);
		if (set_opt(o, c, optarg))
			return mqfs_cli_usage_error(BENCH_PROG, -EINVAL,
						    "bad value for --%s: '%s'",
						    long_opts[idx].name,
						    optarg ? optarg : "");
	}
	if (optind < argc)
		return mqfs_cli_usage_error(BENCH_PROG, -EINVAL, "unexpected "
					    "argument '%s'", argv[optind]);
	return bench_check_poll(o);
}
