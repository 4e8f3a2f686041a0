/* SPDX-License-Identifier: MIT */
/*
 * extent_i.h - what the extent map's two files share (extent.c: checking
 * and opening nodes, lookups, the walk; extent_edit.c: paths, changes
 * and writing them back, which read through extent.c and never the
 * reverse): the node views, the path, and the lookups.
 */
#ifndef MQFS_EXTENT_I_H
#define MQFS_EXTENT_I_H

#include "fs_i.h"

#define EXT_MAX_DEPTH		5	/* 4 * 169^4 leaves: ample */
#define EXT_SLACK		2	/* leaf overflow allowed before commit */
#define EXT_ALLOC_CREDITS	2	/* AG header + bitmap (alloc.c) */
#define EXT_NONE		UINT64_MAX
#define EXT_END			MQFS_MAX_FILE_BLOCKS

/* Both entry kinds start with the key, and both are 24 bytes. */
union ext_entry {
	struct mqfs_extent ext;
	struct mqfs_ext_index idx;
};
_Static_assert(sizeof(union ext_entry) == MQFS_EXT_ENTRY_SIZE, "entry");
_Static_assert(MQFS_EXT_BLOCK_MAX * MQFS_EXT_ENTRY_SIZE +
	       sizeof(struct mqfs_ext_node) <= MQFS_PAYLOAD, "node");

/* A node where it lies (the inode or a locked buffer), read-only. */
struct ext_view {
	unsigned depth, nr, max;
	const union ext_entry *e;
};

/* An opened node: the view plus the buffer behind it (NULL: root). */
struct ext_ref {
	struct mqfs_buf *b;
	struct ext_view v;
};

/* One level of a path being changed: a private copy of the node. */
struct ext_level {
	struct mqfs_buf *b;		/* reference; NULL at the root */
	unsigned depth, nr, max;
	unsigned pos;			/* index: entry followed; leaf: slot */
	int ins;			/* entry just inserted, -1: none */
	bool dirty;
	union ext_entry e[MQFS_EXT_BLOCK_MAX + EXT_SLACK];
};

struct ext_path {
	struct mqfs_ino *ip;
	unsigned nlev;			/* lv[0] root ... lv[nlev-1] leaf */
	bool rightmost;			/* the leaf is the last one */
	struct ext_level lv[EXT_MAX_DEPTH + 1];
};

/* Result of a read-only lookup. */
struct ext_found {
	bool mapped;
	struct mqfs_extent ext;		/* mapped: the extent holding lblk */
	uint64_t next;			/* hole: next extent's lblk, EXT_NONE */
};

static inline uint64_t ext_key(const union ext_entry *e)
{
	return e->ext.lblk;
}

static inline uint64_t ext_end(const struct mqfs_extent *x)
{
	return x->lblk + x->len;
}

/* Number of entries with key <= @key (binary search). */
static inline unsigned ext_search(const union ext_entry *e, unsigned nr,
				  uint64_t key)
{
	unsigned lo = 0, hi = nr;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (ext_key(&e[mid]) <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Is [b, b+n) inside the area that can hold data and tree blocks? */
static inline bool ext_blocks_ok(struct mqfs_fs *fs, uint64_t b, uint64_t n)
{
	uint64_t first = fs->journal_start + fs->journal_blocks;

	return n && b >= first && b < fs->block_count &&
	       n <= fs->block_count - 1 - b;
}

int mqfs_ext_bad(struct mqfs_fs *fs, struct mqfs_ino *ip, uint64_t blk,
		 const char *what, unsigned i);
void mqfs_ext_close(struct ext_ref *r);
int mqfs_ext_find(struct mqfs_fs *fs, struct mqfs_ino *ip, uint64_t lblk,
		  struct ext_found *f);
int mqfs_ext_open(struct mqfs_fs *fs, struct mqfs_ino *ip, uint64_t blk,
		  unsigned depth, uint64_t lo, uint64_t hi, struct ext_ref *r);
int mqfs_ext_root_view(struct mqfs_fs *fs, struct mqfs_ino *ip,
		       struct ext_view *v);

#endif /* MQFS_EXTENT_I_H */
