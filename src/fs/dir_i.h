/* SPDX-License-Identifier: MIT */
/*
 * dir_i.h - the directory index (dir_index.c), in memory only: hash
 * chains from a name's hash to its record (block, offset) and a max-tree
 * of each block's free room.  dir.c builds it from the blocks and keeps
 * it in step with every change; see dir.c for why it is not on disk.
 */
#ifndef MQFS_DIR_I_H
#define MQFS_DIR_I_H

#include "fs_i.h"

#define DI_NONE		UINT32_MAX
#define DI_FREE_LBLK	UINT32_MAX			/* slot on the free list */

/* One indexed entry: where the record of a name with this hash lives. */
struct di_ent {
	uint32_t hash;
	uint32_t next;			/* chain: slot + 1, 0 ends it */
	uint32_t lblk;			/* DI_FREE_LBLK: slot is free */
	uint16_t off;
	uint16_t unused;
};

struct mqfs_dir_index {
	uint32_t *bucket;		/* slot + 1 of the chain head, 0: none */
	uint32_t nbucket;		/* power of two */
	struct di_ent *ent;
	uint32_t nent;			/* slots handed out */
	size_t ent_cap;			/* slots allocated */
	uint32_t free;			/* free slot list (slot + 1) */
	uint32_t count;			/* live entries */
	uint32_t bad;			/* entries left out: not servable */
	uint64_t *pblk;			/* lblk -> physical block */
	/*
	 * Max-tree over the blocks: leaf blk_cap + i holds the largest
	 * record block i can still take, inner nodes the max of their two
	 * children, so the first block with room is found from the root.
	 */
	uint16_t *room;
	uint32_t nblk, blk_cap;		/* blocks, leaves (power of two) */
};

void mqfs_di_destroy(struct mqfs_dir_index *di);
int mqfs_di_reserve(struct mqfs_dir_index *di);
void mqfs_di_insert(struct mqfs_dir_index *di, uint32_t hash,
		    uint32_t lblk, unsigned off);
void mqfs_di_unlink(struct mqfs_dir_index *di, uint32_t *link);
void mqfs_di_room_set(struct mqfs_dir_index *di, uint32_t lblk,
		      unsigned room);
uint32_t mqfs_di_room_find(const struct mqfs_dir_index *di, unsigned need);
int mqfs_di_grow_blocks(struct mqfs_dir_index *di, uint32_t nblk);
struct mqfs_dir_index *mqfs_di_alloc(uint32_t nblk);

#endif /* MQFS_DIR_I_H */
