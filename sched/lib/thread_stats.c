/* SPDX-License-Identifier: MIT */
/*
 * thread_stats.c - per-thread context switches from /proc, read only when
 * statistics are asked for (getrusage(RUSAGE_THREAD) would have to run in
 * the thread itself).
 */
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "mqfs/thread_stats.h"

pid_t mq_thread_id(void)
{
	return (pid_t)syscall(SYS_gettid);
}

uint64_t mq_thread_cs(pid_t tid)
{
	char path[64], line[128];
	unsigned long v;
	uint64_t cs = 0;
	FILE *f;

	if (!tid)
		return 0;
	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "voluntary_ctxt_switches: %lu", &v) == 1 ||
		    sscanf(line, "nonvoluntary_ctxt_switches: %lu", &v) == 1)
			cs += v;
	fclose(f);
	return cs;
}
