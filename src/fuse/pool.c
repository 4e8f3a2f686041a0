/* SPDX-License-Identifier: MIT */
/*
 * pool.c - the receive slots: where requests arrive, where a WRITE's
 * data stays while the device writes it, where a READ's data lands.
 *
 * One arena holds every slot's memory, so the daemon can register it
 * with the io_uring driver as a single fixed buffer (no page pinning per
 * I/O).  It is mapped once and never grows: registration pins it, and a
 * slot is 1 MiB + 8 KiB because the kernel will not read a request into
 * less than max_write plus the headers.
 *
 * Free slots sit on a Treiber stack of indices whose head carries a tag
 * against ABA; a worker that finds none sleeps on a condition variable,
 * which a put signals only when someone sleeps (the waiter announces
 * itself before it looks again, the putter pushes before it looks for
 * waiters: one of them sees the other).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "fuse_i.h"

#define POOL_IDX_MASK	0xffffffffull

int mqfs_pool_create(struct mqfs_pool *p, unsigned nr)
{
	memset(p, 0, sizeof(*p));
	if (!nr || nr > 1000)
		return -EINVAL;		/* io_uring: 1 GiB per fixed buffer */
	p->bytes = (size_t)nr * MQFS_SLOT_BYTES;
	p->arena = mmap(NULL, p->bytes, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p->arena == MAP_FAILED) {
		p->arena = NULL;
		return -ENOMEM;
	}
	p->reqs = calloc(nr, sizeof(*p->reqs));
	if (!p->reqs) {
		munmap(p->arena, p->bytes);
		p->arena = NULL;
		return -ENOMEM;
	}
	p->nr = nr;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	for (unsigned i = 0; i < nr; i++) {
		struct mqfs_req *r = &p->reqs[i];

		r->index = i;
		r->mem = p->arena + (size_t)i * MQFS_SLOT_BYTES;
		r->payload = r->mem + MQFS_SLOT_HDR;
		mqfs_pool_put(p, r);
	}
	atomic_store(&p->waits, 0);
	return 0;
}

void mqfs_pool_destroy(struct mqfs_pool *p)
{
	if (!p->arena)
		return;
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	free(p->reqs);
	munmap(p->arena, p->bytes);
	memset(p, 0, sizeof(*p));
}

static struct mqfs_req *pool_pop(struct mqfs_pool *p)
{
	uint64_t old = atomic_load(&p->head), new;
	struct mqfs_req *r;

	do {
		uint32_t idx = (uint32_t)(old & POOL_IDX_MASK);

		if (!idx)
			return NULL;
		r = &p->reqs[idx - 1];
		new = ((old >> 32) + 1) << 32 | atomic_load(&r->next);
	} while (!atomic_compare_exchange_weak(&p->head, &old, new));
	return r;
}

static void pool_push(struct mqfs_pool *p, struct mqfs_req *r)
{
	uint64_t old = atomic_load(&p->head), new;

	do {
		atomic_store(&r->next, (uint32_t)(old & POOL_IDX_MASK));
		new = ((old >> 32) + 1) << 32 | (r->index + 1);
	} while (!atomic_compare_exchange_weak(&p->head, &old, new));
}

struct mqfs_req *mqfs_pool_try_get(struct mqfs_pool *p)
{
	return pool_pop(p);
}

struct mqfs_req *mqfs_pool_get(struct mqfs_pool *p)
{
	struct mqfs_req *r = pool_pop(p);

	if (r)
		return r;
	atomic_fetch_add(&p->waits, 1);
	pthread_mutex_lock(&p->lock);
	atomic_fetch_add(&p->waiters, 1);
	while (!(r = pool_pop(p)))
		pthread_cond_wait(&p->cond, &p->lock);
	atomic_fetch_sub(&p->waiters, 1);
	pthread_mutex_unlock(&p->lock);
	return r;
}

void mqfs_pool_put(struct mqfs_pool *p, struct mqfs_req *r)
{
	pool_push(p, r);
	if (atomic_load(&p->waiters)) {
		pthread_mutex_lock(&p->lock);
		pthread_cond_signal(&p->cond);
		pthread_mutex_unlock(&p->lock);
	}
}
