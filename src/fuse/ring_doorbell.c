/* SPDX-License-Identifier: MIT */
/*
 * ring_doorbell.c - when a ring thread submits the device I/O of the
 * requests it serves (-o uring_doorbell=auto|batch|request).
 *
 * A batch of FUSE requests (the CQEs of one io_uring_enter) puts its
 * bios on the device's ring; "batch" rings the device's doorbell once,
 * after the last request of the batch, "request" after each one, and
 * reaps the device's completions there too.  Once per batch is one
 * system call for the lot, which is what a thread short of CPU needs
 * (a fast device: on /dev/shm, per request cost 20-30 % of the IOPS);
 * once per request starts each I/O a part of a batch earlier, which is
 * what a slow device with room in its queue needs while the thread
 * sleeps most of the time anyway (a disk: +5-10 % at QD32).  "auto"
 * tells the two apart by the thread's own busy share: the time it
 * spends outside its waits in io_uring_enter, over a window of
 * BELL_WINDOW_NS, with a gap between the two thresholds so that a share
 * between them keeps the mode it has (DESIGN.md §17).
 */
#include "fuse_i.h"

/* The window the busy share is taken over. */
#define BELL_WINDOW_NS		(2 * 1000 * 1000)
/* Busy below this percentage: per request... */
#define BELL_EAGER_BELOW	40u
/* ... at or above this: per batch. */
#define BELL_BATCH_FROM		60u

/* In the order of enum mqfs_ring_doorbell: the option's values. */
const char *const mqfs_ring_doorbell_names[MQFS_RING_DOORBELL_NR] = {
	"batch", "request", "auto",
};

void mqfs_ring_bell_init(struct mqfs_ring_bell *b,
			 enum mqfs_ring_doorbell mode, uint64_t now)
{
	*b = (struct mqfs_ring_bell){
		.mode = mode, .mark = now,
		.per_request = mode == MQFS_RING_DOORBELL_REQUEST,
	};
}

void mqfs_ring_bell_sleep(struct mqfs_ring_bell *b, uint64_t now)
{
	b->busy += now - b->mark;
	b->mark = now;
}

bool mqfs_ring_bell_woke(struct mqfs_ring_bell *b, uint64_t now)
{
	uint64_t all, share;
	bool was = b->per_request;

	b->idle += now - b->mark;
	b->mark = now;
	all = b->busy + b->idle;
	if (all < BELL_WINDOW_NS)
		return false;
	share = b->busy * 100 / all;
	b->busy = b->idle = 0;
	b->windows++;
	if (b->mode == MQFS_RING_DOORBELL_AUTO)
		b->per_request = was ? share < BELL_BATCH_FROM
				     : share < BELL_EAGER_BELOW;
	b->eager_windows += b->per_request;
	return b->per_request != was;
}
