/* SPDX-License-Identifier: MIT */
/*
 * ioprio.c - the callers' I/O priorities, so that `ionice` works
 * through the mount.
 *
 * Every FUSE request names the calling thread (in.h.pid is its thread
 * id in the daemon's pid namespace).  On a kernel filesystem the block
 * layer takes a bio's priority from the submitting task; here the task
 * is in another process, so the daemon asks the kernel
 * (ioprio_get(IOPRIO_WHO_PROCESS, tid)) and gives the bios that serve
 * the request that class (mq_set_task_prio).  One system call per
 * request would cost about as much as a small request's handling, so
 * answers are kept per thread id for MQFS_IOPRIO_TTL_NS: a priority
 * changed with ionice -p is seen within that time.  A thread that is
 * gone (the answer is ESRCH) counts as NONE.
 *
 * The cache is direct-mapped by thread id, under one lock held for a
 * few loads and stores: a miss calls the getter outside it.
 *
 * An rt policy on a directory (user.mqfs.ioprio) lifts everybody's I/O
 * there, so setting one takes what ioprio_set(rt) takes: CAP_SYS_ADMIN
 * or CAP_SYS_NICE, read from the caller's /proc/TID/status.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "fuse_i.h"
#include "mqfs/clock.h"

#define IOPRIO_WHO_PROCESS	1
#define IOPRIO_CLASS_SHIFT	13

static int ioprio_syscall(pid_t tid)
{
	long v = syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, (int)tid);

	return v < 0 ? -errno : (int)v;
}

void mqfs_ioprio_init(struct mqfs_ioprio *c, mqfs_ioprio_get_t get,
		      uint64_t (*now_ns)(void))
{
	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
	c->get = get ? get : ioprio_syscall;
	c->now_ns = now_ns ? now_ns : mq_clock_ns;
}

void mqfs_ioprio_destroy(struct mqfs_ioprio *c)
{
	pthread_mutex_destroy(&c->lock);
}

enum mq_prio_class mqfs_ioprio_class(int ioprio)
{
	int cls = ioprio >> IOPRIO_CLASS_SHIFT;

	if (ioprio < 0 || cls > MQ_PRIO_IDLE)
		return MQ_PRIO_NONE;
	return (enum mq_prio_class)cls;
}

#define CAP_SYS_ADMIN_BIT	21
#define CAP_SYS_NICE_BIT	23

bool mqfs_ioprio_caps_allow_rt(uint64_t capeff)
{
	return capeff & (1ull << CAP_SYS_ADMIN_BIT | 1ull << CAP_SYS_NICE_BIT);
}

bool mqfs_ioprio_may_rt(pid_t tid)
{
	char path[64], line[256];
	bool ok = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long cap;

		if (sscanf(line, "CapEff: %llx", &cap) == 1) {
			ok = mqfs_ioprio_caps_allow_rt(cap);
			break;
		}
	}
	fclose(f);
	return ok;
}

int mqfs_ioprio_of(struct mqfs_ioprio *c, pid_t tid)
{
	struct mqfs_ioprio_slot *s;
	uint64_t now;
	int v;

	if (tid <= 0)
		return 0;		/* the kernel's own: NONE */
	s = &c->slot[((uint32_t)tid * 0x9e3779b1u) >> (32 - MQFS_IOPRIO_BITS)];
	now = c->now_ns();
	pthread_mutex_lock(&c->lock);
	if (s->tid == tid && now - s->at < MQFS_IOPRIO_TTL_NS) {
		v = s->ioprio;
		pthread_mutex_unlock(&c->lock);
		atomic_fetch_add(&c->hits, 1);
		return v;
	}
	pthread_mutex_unlock(&c->lock);
	atomic_fetch_add(&c->misses, 1);
	v = c->get(tid);
	if (v < 0)
		v = 0;			/* gone, or not ours to ask: NONE */
	pthread_mutex_lock(&c->lock);
	*s = (struct mqfs_ioprio_slot){ .tid = tid, .ioprio = (uint16_t)v,
					.at = now };
	pthread_mutex_unlock(&c->lock);
	return v;
}
