// SPDX-License-Identifier: MIT
/*
 * dir_index.c - the in-memory directory index (dir_i.h): hash chains in
 * a table of slots with a free list, rehashed by doubling, and the
 * per-block free-room max-tree that finds the first block an entry fits
 * in.  Pure memory: dir.c does the reading and the locking.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dir_i.h"

/* ---- the index: hash chains -------------------------------------------- */

void mqfs_di_destroy(struct mqfs_dir_index *di)
{
	if (!di)
		return;
	free(di->bucket);
	free(di->ent);
	free(di->pblk);
	free(di->room);
	free(di);
}

static int di_rehash(struct mqfs_dir_index *di, uint32_t nbucket)
{
	uint32_t *b = calloc(nbucket, sizeof(*b));
	uint32_t i;

	if (!b)
		return -ENOMEM;
	for (i = 0; i < di->nent; i++) {
		struct di_ent *e = &di->ent[i];

		if (e->lblk == DI_FREE_LBLK)
			continue;
		e->next = b[e->hash & (nbucket - 1)];
		b[e->hash & (nbucket - 1)] = i + 1;
	}
	free(di->bucket);
	di->bucket = b;
	di->nbucket = nbucket;
	return 0;
}

/* Make room for one more entry (before any change, so failure is clean). */
int mqfs_di_reserve(struct mqfs_dir_index *di)
{
	int err = di->free ? 0 : mqfs_array_reserve(&di->ent, &di->ent_cap,
						      di->nent,
						      sizeof(*di->ent), 8);

	if (err)
		return err;
	if (di->count + 1 > di->nbucket)
		return di_rehash(di, di->nbucket * 2);
	return 0;
}

void mqfs_di_insert(struct mqfs_dir_index *di, uint32_t hash,
		    uint32_t lblk, unsigned off)
{
	uint32_t *head = &di->bucket[hash & (di->nbucket - 1)];
	uint32_t slot;
	struct di_ent *e;

	if (di->free) {
		slot = di->free - 1;
		di->free = di->ent[slot].next;
	} else {
		MQ_ASSERT(di->nent < di->ent_cap);
		slot = di->nent++;
	}
	e = &di->ent[slot];
	e->hash = hash;
	e->lblk = lblk;
	e->off = (uint16_t)off;
	e->unused = 0;
	e->next = *head;
	*head = slot + 1;
	di->count++;
}

void mqfs_di_unlink(struct mqfs_dir_index *di, uint32_t *link)
{
	uint32_t slot = *link - 1;
	struct di_ent *e = &di->ent[slot];

	*link = e->next;
	e->lblk = DI_FREE_LBLK;
	e->next = di->free;
	di->free = slot + 1;
	di->count--;
}

/* ---- the index: per-block free space ----------------------------------- */

void mqfs_di_room_set(struct mqfs_dir_index *di, uint32_t lblk,
		      unsigned room)
{
	uint32_t p = di->blk_cap + lblk;

	di->room[p] = (uint16_t)room;
	for (p >>= 1; p; p >>= 1)
		di->room[p] = MQ_MAX(di->room[2 * p], di->room[2 * p + 1]);
}

/* First block that can take a record of @need bytes, or DI_NONE. */
uint32_t mqfs_di_room_find(const struct mqfs_dir_index *di, unsigned need)
{
	uint32_t p = 1;

	if (!di->nblk || di->room[1] < need)
		return DI_NONE;
	while (p < di->blk_cap)
		p = di->room[2 * p] >= need ? 2 * p : 2 * p + 1;
	return p - di->blk_cap;
}

/* Room for @nblk blocks in the block arrays. */
int mqfs_di_grow_blocks(struct mqfs_dir_index *di, uint32_t nblk)
{
	uint32_t cap = di->blk_cap ? di->blk_cap : 1, i;
	uint64_t *pb;
	uint16_t *room;

	if (nblk <= di->blk_cap)
		return 0;
	while (cap < nblk)
		cap *= 2;
	pb = realloc(di->pblk, cap * sizeof(*pb));
	if (!pb)
		return -ENOMEM;
	di->pblk = pb;
	room = calloc(2 * (size_t)cap, sizeof(*room));
	if (!room)
		return -ENOMEM;
	for (i = 0; i < di->nblk; i++)
		room[cap + i] = di->room[di->blk_cap + i];
	for (i = cap - 1; i; i--)
		room[i] = MQ_MAX(room[2 * i], room[2 * i + 1]);
	free(di->room);
	di->room = room;
	di->blk_cap = cap;
	return 0;
}

struct mqfs_dir_index *mqfs_di_alloc(uint32_t nblk)
{
	struct mqfs_dir_index *di = calloc(1, sizeof(*di));

	if (!di)
		return NULL;
	if (di_rehash(di, 8) || mqfs_di_grow_blocks(di, nblk ? nblk : 1)) {
		mqfs_di_destroy(di);
		return NULL;
	}
	return di;
}

void mqfs_dir_index_free(struct mqfs_ino *dir)
{
	mqfs_di_destroy(dir->dir_index);
	dir->dir_index = NULL;
}
