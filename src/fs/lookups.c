// SPDX-License-Identifier: MIT
/*
 * lookups.c - the lookup counts of inodes the kernel holds but the inode
 * cache let go: the whole of what FUSE needs of such an inode is its
 * number and how many lookups it has not forgotten yet.
 *
 * A kernel keeps an inode for every dentry in its cache; `find` over a
 * few million files makes the daemon hold as many.  A full in-core inode
 * is 600 bytes, this table's slot twelve (a count past 2^32 - 1, which
 * takes that many lookups without a forget, keeps its inode in core
 * instead), at a load between 3/8 and 3/4: 16 to 32 bytes per inode
 * beyond the cache.  Doubling rehashes under
 * the caller's lock (about 30 ms at two million); the table never
 * shrinks while mounted.  The record,
 * generation and everything else come back from the inode table when
 * the inode is next used.
 *
 * Open addressing with linear probing; removal shifts the rest of the
 * cluster back, so there are no tombstones.  Not thread-safe: inode.c
 * calls it under the icache lock.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "fs_i.h"

#define LK_MIN_SLOTS	1024u

static size_t lk_home(const struct mqfs_lookups *t, uint64_t ino)
{
	return (size_t)((ino * 0x9e3779b97f4a7c15ull) >> 29) & (t->nslots - 1);
}

/* The slot holding @ino, or the empty slot where it would go. */
static size_t lk_find(const struct mqfs_lookups *t, uint64_t ino)
{
	size_t i = lk_home(t, ino);

	while (t->slot[i].ino && t->slot[i].ino != ino)
		i = (i + 1) & (t->nslots - 1);
	return i;
}

static int lk_resize(struct mqfs_lookups *t, size_t nslots)
{
	struct mqfs_lookups n = { .nslots = nslots, .count = t->count };

	n.slot = calloc(nslots, sizeof(*n.slot));
	if (!n.slot)
		return -ENOMEM;
	for (size_t i = 0; i < t->nslots; i++)
		if (t->slot[i].ino)
			n.slot[lk_find(&n, t->slot[i].ino)] = t->slot[i];
	free(t->slot);
	*t = n;
	return 0;
}

int mqfs_lookups_add(struct mqfs_lookups *t, uint64_t ino, uint64_t nlookup)
{
	size_t i;
	int err;

	if (!ino || !nlookup)
		return -EINVAL;
	if (nlookup > UINT32_MAX)
		return -EOVERFLOW;
	if (4 * (t->count + 1) > 3 * t->nslots) {
		err = lk_resize(t, t->nslots ? 2 * t->nslots : LK_MIN_SLOTS);
		if (err)
			return err;
	}
	i = lk_find(t, ino);
	if (nlookup > UINT32_MAX - (uint64_t)t->slot[i].nlookup)
		return -EOVERFLOW;
	if (!t->slot[i].ino) {
		t->slot[i].ino = ino;
		t->count++;
	}
	t->slot[i].nlookup += (uint32_t)nlookup;
	return 0;
}

/* Empty slot @i: pull back the entries of its cluster that may move. */
static void lk_remove_at(struct mqfs_lookups *t, size_t i)
{
	size_t mask = t->nslots - 1, j = i;

	t->slot[i].ino = 0;
	t->slot[i].nlookup = 0;
	t->count--;
	for (;;) {
		size_t home;

		j = (j + 1) & mask;
		if (!t->slot[j].ino)
			return;
		home = lk_home(t, t->slot[j].ino);
		/* Stays when its home lies cyclically in (i, j]. */
		if (i <= j ? (home > i && home <= j) : (home > i || home <= j))
			continue;
		t->slot[i] = t->slot[j];
		t->slot[j].ino = 0;
		t->slot[j].nlookup = 0;
		i = j;
	}
}

uint64_t mqfs_lookups_take(struct mqfs_lookups *t, uint64_t ino)
{
	uint64_t n;
	size_t i;

	if (!t->count)
		return 0;
	i = lk_find(t, ino);
	if (!t->slot[i].ino)
		return 0;
	n = t->slot[i].nlookup;
	lk_remove_at(t, i);
	return n;
}

bool mqfs_lookups_forget(struct mqfs_lookups *t, uint64_t ino,
			 uint64_t nlookup, uint64_t *had)
{
	size_t i;

	if (!t->count)
		return false;
	i = lk_find(t, ino);
	if (!t->slot[i].ino)
		return false;
	*had = t->slot[i].nlookup;
	if (nlookup < t->slot[i].nlookup)
		t->slot[i].nlookup -= (uint32_t)nlookup;
	else
		lk_remove_at(t, i);
	return true;
}

void mqfs_lookups_free(struct mqfs_lookups *t)
{
	free(t->slot);
	t->slot = NULL;
	t->nslots = t->count = 0;
}
