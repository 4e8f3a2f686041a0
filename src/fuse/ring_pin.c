/* SPDX-License-Identifier: MIT */
/*
 * ring_pin.c - where ring thread N runs (-o uring_pin=off|own|other|auto).
 *
 * The kernel queues a FUSE request on the ring of the CPU its caller runs
 * on, so thread N serves the callers of CPU N.  Which CPU suits it
 * depends on what the caller does while its request is served
 * (DESIGN.md §17):
 *   - a caller that waits (read(2), one request at a time) leaves its CPU
 *     free: a thread kept there is woken with no cross-CPU wake-up and
 *     wakes the caller the same way ("own");
 *   - a caller that keeps running (io_uring, libaio, several threads)
 *     competes with a thread kept on its CPU, whose requests then wait
 *     for the caller to yield ("other": any CPU but N).
 * "auto" tells the two apart by how many requests the queue holds after
 * it served a batch (received, not yet committed: one for a waiting
 * caller, about its queue depth for the others), averaged over a window
 * of batches, with a gap between the two thresholds so that a load
 * between them does not move the thread back and forth.
 *
 * Every set is taken within the thread's affinity at start (a `taskset`
 * of the daemon holds); a set that would be empty there is that affinity.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include "fuse_i.h"

/* Batches averaged before a decision. */
#define PLACE_WINDOW		64u
/* Mean requests held, in quarters: at least this: "other"... */
#define PLACE_OTHER_QUARTERS	8u
/* ... at most this: "own". */
#define PLACE_OWN_QUARTERS	5u

/* In the order of enum mqfs_ring_pin: the option's values. */
const char *const mqfs_ring_pin_names[MQFS_RING_PIN_NR] = {
	"off", "own", "other", "auto",
};

/* Move the calling thread to @where: 0 or -errno (it stays put). */
static int place_apply(const struct mqfs_ring_place *p,
		       enum mqfs_ring_pin where)
{
	cpu_set_t set;

	mqfs_ring_place_mask(p, where, &set);
	return -pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

void mqfs_ring_place_init(struct mqfs_ring_place *p, unsigned qid,
			  enum mqfs_ring_pin mode)
{
	*p = (struct mqfs_ring_place){
		.qid = qid, .mode = mode,
		.now = mode == MQFS_RING_PIN_AUTO ? MQFS_RING_PIN_OWN : mode,
	};
	/* More CPUs than a cpu_set_t holds, or refused: the scheduler's. */
	if (pthread_getaffinity_np(pthread_self(), sizeof(p->base), &p->base) ||
	    (p->now != MQFS_RING_PIN_OFF && place_apply(p, p->now)))
		p->mode = p->now = MQFS_RING_PIN_OFF;
}

void mqfs_ring_place_mask(const struct mqfs_ring_place *p,
			  enum mqfs_ring_pin where, cpu_set_t *set)
{
	*set = p->base;
	if (where == MQFS_RING_PIN_OWN && p->qid < CPU_SETSIZE &&
	    CPU_ISSET(p->qid, &p->base)) {
		CPU_ZERO(set);
		CPU_SET(p->qid, set);
	} else if (where == MQFS_RING_PIN_OTHER && p->qid < CPU_SETSIZE &&
		   CPU_COUNT(&p->base) > 1) {
		CPU_CLR(p->qid, set);
	}
}

bool mqfs_ring_place_away(const struct mqfs_ring_place *p)
{
	cpu_set_t set;

	if (p->now != MQFS_RING_PIN_OTHER)
		return false;
	mqfs_ring_place_mask(p, p->now, &set);
	return !CPU_EQUAL(&set, &p->base);
}

bool mqfs_ring_place_sample(struct mqfs_ring_place *p, unsigned held)
{
	enum mqfs_ring_pin was = p->now;
	uint64_t quarters;

	if (p->mode != MQFS_RING_PIN_AUTO)
		return false;
	p->held_sum += held;
	if (++p->samples < PLACE_WINDOW)
		return false;
	quarters = p->held_sum * 4 / p->samples;
	p->samples = 0;
	p->held_sum = 0;
	if (quarters >= PLACE_OTHER_QUARTERS)
		p->now = MQFS_RING_PIN_OTHER;
	else if (quarters <= PLACE_OWN_QUARTERS)
		p->now = MQFS_RING_PIN_OWN;
	return p->now != was;
}

bool mqfs_ring_place_update(struct mqfs_ring_place *p, unsigned held)
{
	enum mqfs_ring_pin was = p->now;
	cpu_set_t before, after;

	if (!mqfs_ring_place_sample(p, held))
		return false;
	mqfs_ring_place_mask(p, was, &before);
	mqfs_ring_place_mask(p, p->now, &after);
	if (CPU_EQUAL(&before, &after))
		return false;		/* one CPU, or CPU qid not ours */
	if (place_apply(p, p->now)) {
		p->now = was;		/* offline now, or a cpuset shrank */
		return false;
	}
	return true;
}
