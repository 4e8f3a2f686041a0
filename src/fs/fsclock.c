// SPDX-License-Identifier: MIT
/*
 * fsclock.c - the one clock every timestamp the filesystem writes comes
 * from.
 *
 * The kernel stamps the files it caches itself (with the writeback
 * cache, mtime and ctime at each write) from current_time(): the coarse
 * wall clock, one tick (1-4 ms) behind the precise one, or since
 * multigrain timestamps (6.13) a floor within the current tick that a
 * fine-grained stamp of another filesystem raised.  Daemon stamps from
 * the precise clock ran ahead of those: a file created by the daemon had
 * a later ctime than a file the kernel wrote after it.  So the daemon
 * reads the same coarse clock, and never goes below the latest kernel
 * stamp it was sent (a SETATTR of mtime or ctime), which may stand above
 * the coarse clock by that floor.  The floor is the process's, as the
 * kernel's is the machine's: one clock for every mount of the daemon.
 */
#include <stdatomic.h>
#include <time.h>

#include "fs_i.h"

#define FSCLOCK_NS	1000000000ull

static _Atomic uint64_t fsclock_floor_ns;

static uint64_t fsclock_read(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * FSCLOCK_NS + (uint64_t)ts.tv_nsec;
}

void mqfs_now(uint64_t *sec, uint32_t *nsec)
{
	uint64_t now = fsclock_read(CLOCK_REALTIME_COARSE);
	uint64_t floor = atomic_load_explicit(&fsclock_floor_ns,
					      memory_order_relaxed);

	if (floor > now)
		now = floor;
	*sec = now / FSCLOCK_NS;
	*nsec = (uint32_t)(now % FSCLOCK_NS);
}

void mqfs_clock_saw(uint64_t sec, uint32_t nsec)
{
	uint64_t now = fsclock_read(CLOCK_REALTIME), t;
	uint64_t floor = atomic_load_explicit(&fsclock_floor_ns,
					      memory_order_relaxed);

	/* A time set by hand may lie ahead (or before 1970: a huge
	 * unsigned second); only one already past can be a kernel stamp. */
	if (sec > now / FSCLOCK_NS || nsec >= FSCLOCK_NS)
		return;
	t = sec * FSCLOCK_NS + nsec;
	if (t > now)
		return;
	while (t > floor &&
	       !atomic_compare_exchange_weak(&fsclock_floor_ns, &floor, t))
		;
}
