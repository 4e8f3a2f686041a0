// SPDX-License-Identifier: MIT
/*
 * dir.c - directory entries: variable-length records in MQFS_T_DIR
 * blocks (FORMAT.md, "Directories") and the in-memory index that makes
 * lookups and adds O(1) in directories of 100k entries and more.
 *
 * Records tile bytes 32..4095 of each block.  Only the first record of
 * a block is ever free (ino 0): removing any other record merges it into
 * the one before it, and adds either reuse that free first record or
 * split the slack after a live record.  Records never move, so a
 * record's byte position in the directory (lblk * 4096 + offset) is a
 * readdir cookie that stays valid while other entries come and go.
 *
 * Why the index lives in memory rather than on disk (an htree/B-tree):
 * the on-disk format stays a flat list of blocks that fsck and replay
 * can check without knowing any tree invariant, and there is nothing to
 * split, rebalance or journal besides the one block an entry lives in.
 * One sequential scan of the directory, on its first use after the
 * inode is read, builds a hash table (name hash -> block, offset;
 * collisions compared by name) and a per-block free-space tree; after
 * that a lookup reads exactly one block and an add finds room in
 * O(log blocks) without scanning.  The cost is that scan (a 100k-entry
 * directory is ~800 blocks) and ~20 bytes of memory per entry while the
 * inode is cached; mqfs_dir_index_free() drops it with the inode.
 *
 * Locking: the caller holds dir->lock, shared for lookup and iterate,
 * exclusive for add, remove and replace.  The index changes only under
 * the exclusive lock; under the shared lock two readers may both build
 * it, and the first to install it (compare-and-swap) wins.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mqfs/compiler.h"
#include "dir_i.h"

#define DIR_FIRST	((unsigned)MQFS_HDR_SIZE)	/* first record offset */
#define DIR_BS		MQFS_BLOCK_SIZE
/* Where a name's record is, as found through the index. */
struct dir_pos {
	uint32_t *link;			/* the index link that points at it */
	uint32_t lblk;
	unsigned off;
	uint64_t ino;
	unsigned type;
};

static uint32_t dir_hash(const char *name, size_t len)
{
	return (uint32_t)mqfs_hash(name, len);
}

static struct mqfs_dirent *dir_rec(void *data, unsigned off)
{
	return (struct mqfs_dirent *)((char *)data + off);
}

/* Bytes a record can still give to a new entry. */
static unsigned dir_rec_avail(const struct mqfs_dirent *de)
{
	return de->ino ? de->rec_len - MQFS_DIRENT_LEN(de->name_len)
		       : de->rec_len;
}

/* Bounds of the record at @off; every walk checks each record. */
static bool dir_rec_ok(const void *data, unsigned off)
{
	const struct mqfs_dirent *de;

	if (off < DIR_FIRST || off + MQFS_DIRENT_HDR > DIR_BS)
		return false;
	de = (const struct mqfs_dirent *)((const char *)data + off);
	if (de->rec_len < MQFS_DIRENT_HDR || de->rec_len % 8 ||
	    off + de->rec_len > DIR_BS)
		return false;
	return !de->ino || (de->name_len &&
			    MQFS_DIRENT_LEN(de->name_len) <= de->rec_len);
}

static int dir_corrupt(struct mqfs_fs *fs, struct mqfs_ino *dir,
		       uint64_t blocknr, unsigned off)
{
	mqfs_fs_error(fs, blocknr, "dir: inode %llu: bad record at offset %u",
		      (unsigned long long)dir->ino, off);
	return -EUCLEAN;
}

const char *mqfs_dirent_why_bad(const struct mqfs_dirent *de,
				uint64_t inode_count)
{
	const char *n = de->name;
	size_t len = de->name_len;

	if ((len == 1 && n[0] == '.') ||
	    (len == 2 && n[0] == '.' && n[1] == '.') ||
	    memchr(n, '/', len) || memchr(n, '\0', len))
		return "has an invalid name";
	if (!de->ino || de->ino > inode_count)
		return "points outside the inode table";
	if (de->ino == MQFS_ROOT_INO)
		return "links the root directory";
	return NULL;
}

/*
 * Is live record @de one to serve?  A bad one is reported (each time a
 * walk meets it) and skipped: the rest of the directory stays readable.
 */
static bool dir_entry_servable(struct mqfs_fs *fs, struct mqfs_ino *dir,
			       uint64_t blocknr, unsigned off,
			       const struct mqfs_dirent *de)
{
	const char *why = mqfs_dirent_why_bad(de, fs->inode_count);

	if (!why)
		return true;
	mqfs_fs_error(fs, blocknr, "dir: inode %llu: the entry at offset %u "
		      "%s (inode %llu); skipped", (unsigned long long)dir->ino,
		      off, why, (unsigned long long)de->ino);
	return false;
}

/* ---- reading blocks ---------------------------------------------------- */

static int dir_nblocks(struct mqfs_fs *fs, struct mqfs_ino *dir,
		       uint32_t *nblk)
{
	uint64_t n = dir->d.size / DIR_BS;

	if (dir->d.size % DIR_BS || n >= DI_NONE) {
		mqfs_fs_error(fs, 0, "dir: inode %llu: bad size %llu",
			      (unsigned long long)dir->ino,
			      (unsigned long long)dir->d.size);
		return -EUCLEAN;
	}
	*nblk = (uint32_t)n;
	return 0;
}

/* Directories have no holes (nor unwritten extents). */
static int dir_hole(struct mqfs_fs *fs, struct mqfs_ino *dir, uint32_t lblk)
{
	mqfs_fs_error(fs, 0, "dir: inode %llu: hole at block %u",
		      (unsigned long long)dir->ino, lblk);
	return -EUCLEAN;
}

/* Physical block of directory block @lblk. */
static int dir_pblk(struct mqfs_fs *fs, struct mqfs_ino *dir,
		    const struct mqfs_dir_index *di, uint32_t lblk,
		    uint64_t *pblk)
{
	struct mqfs_map m;
	int err;

	if (di && lblk < di->nblk) {
		*pblk = di->pblk[lblk];
		return 0;
	}
	err = mqfs_extent_map(fs, dir, lblk, 1, &m);
	if (err)
		return err;
	if (!m.pblk || m.unwritten)
		return dir_hole(fs, dir, lblk);
	*pblk = m.pblk;
	return 0;
}

static int dir_bread(struct mqfs_fs *fs, struct mqfs_ino *dir,
		     const struct mqfs_dir_index *di, uint32_t lblk,
		     struct mqfs_buf **b)
{
	uint64_t pblk;
	int err = dir_pblk(fs, dir, di, lblk, &pblk);

	return err ? err : mqfs_buf_read(fs, pblk, MQFS_T_DIR, b);
}

/* ---- building the index ------------------------------------------------ */

/* Index every record of block @lblk; the caller holds the buffer lock. */
static int di_scan_block(struct mqfs_fs *fs, struct mqfs_ino *dir,
			 struct mqfs_dir_index *di, struct mqfs_buf *b,
			 uint32_t lblk)
{
	unsigned off, room = 0;
	int err;

	for (off = DIR_FIRST; off < DIR_BS; off += dir_rec(b->data, off)->rec_len) {
		struct mqfs_dirent *de = dir_rec(b->data, off);

		if (!dir_rec_ok(b->data, off) || (!de->ino && off != DIR_FIRST))
			return dir_corrupt(fs, dir, b->blocknr, off);
		room = MQ_MAX(room, dir_rec_avail(de));
		if (!de->ino)
			continue;
		if (!dir_entry_servable(fs, dir, b->blocknr, off, de)) {
			di->bad++;
			continue;
		}
		err = mqfs_di_reserve(di);
		if (err)
			return err;
		mqfs_di_insert(di, dir_hash(de->name, de->name_len), lblk, off);
	}
	mqfs_di_room_set(di, lblk, room);
	return 0;
}

static int di_build(struct mqfs_fs *fs, struct mqfs_ino *dir,
		    struct mqfs_dir_index **out)
{
	struct mqfs_dir_index *di;
	uint32_t nblk, lblk = 0;
	int err = dir_nblocks(fs, dir, &nblk);

	if (err)
		return err;
	di = mqfs_di_alloc(nblk);
	if (!di)
		return -ENOMEM;
	while (!err && lblk < nblk) {
		struct mqfs_map m;
		uint32_t i;

		err = mqfs_extent_map(fs, dir, lblk, nblk - lblk, &m);
		if (!err && (!m.pblk || m.unwritten || !m.len))
			err = dir_hole(fs, dir, lblk);
		for (i = 0; !err && i < m.len && lblk < nblk; i++, lblk++) {
			struct mqfs_buf *b;

			di->pblk[lblk] = m.pblk + i;
			di->nblk = lblk + 1;
			err = mqfs_buf_read(fs, m.pblk + i, MQFS_T_DIR, &b);
			if (err)
				break;
			mqfs_buf_lock(b);
			err = di_scan_block(fs, dir, di, b, lblk);
			mqfs_buf_unlock(b);
			mqfs_buf_put(b);
		}
	}
	if (err) {
		mqfs_di_destroy(di);
		return err;
	}
	*out = di;
	return 0;
}

/* The directory's index, built on first use. */
static int dir_index(struct mqfs_fs *fs, struct mqfs_ino *dir,
		     struct mqfs_dir_index **out)
{
	struct mqfs_dir_index *di, *expected = NULL;
	int err;

	di = __atomic_load_n(&dir->dir_index, __ATOMIC_ACQUIRE);
	if (di) {
		*out = di;
		return 0;
	}
	err = di_build(fs, dir, &di);
	if (err)
		return err;
	if (!__atomic_compare_exchange_n(&dir->dir_index, &expected, di, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		mqfs_di_destroy(di);		/* another reader built it first */
		di = expected;
	}
	*out = di;
	return 0;
}

/* ---- finding a name ---------------------------------------------------- */

/* Does the record at @e name @name?  Fills @p when it does. */
static int di_match(struct mqfs_fs *fs, struct mqfs_ino *dir,
		    struct mqfs_dir_index *di, const struct di_ent *e,
		    const char *name, size_t len, struct dir_pos *p)
{
	struct mqfs_dirent *de;
	struct mqfs_buf *b;
	int err = dir_bread(fs, dir, di, e->lblk, &b);

	if (err)
		return err;
	mqfs_buf_lock(b);
	de = dir_rec(b->data, e->off);
	if (!dir_rec_ok(b->data, e->off) || !de->ino) {
		err = dir_corrupt(fs, dir, b->blocknr, e->off);
	} else if (de->name_len == len && !memcmp(de->name, name, len)) {
		p->lblk = e->lblk;
		p->off = e->off;
		p->ino = de->ino;
		p->type = de->type;
		err = 1;
	}
	mqfs_buf_unlock(b);
	mqfs_buf_put(b);
	return err;
}

/* 0 and @p filled, -ENOENT, or -errno. */
static int di_find(struct mqfs_fs *fs, struct mqfs_ino *dir,
		   struct mqfs_dir_index *di, const char *name, size_t len,
		   uint32_t hash, struct dir_pos *p)
{
	uint32_t *link = &di->bucket[hash & (di->nbucket - 1)];

	for (; *link; link = &di->ent[*link - 1].next) {
		const struct di_ent *e = &di->ent[*link - 1];
		int ret;

		if (e->hash != hash)
			continue;
		ret = di_match(fs, dir, di, e, name, len, p);
		if (ret < 0)
			return ret;
		if (ret) {
			p->link = link;
			return 0;
		}
	}
	return -ENOENT;
}

static int dir_check_name(size_t len)
{
	if (!len)
		return -ENOENT;
	return len > MQFS_NAME_MAX ? -ENAMETOOLONG : 0;
}

static int dir_find(struct mqfs_fs *fs, struct mqfs_ino *dir,
		    const char *name, size_t len, struct mqfs_dir_index **di,
		    struct dir_pos *p)
{
	int err = dir_check_name(len);

	if (!err)
		err = dir_index(fs, dir, di);
	if (!err)
		err = di_find(fs, dir, *di, name, len, dir_hash(name, len), p);
	return err;
}

int mqfs_dir_lookup(struct mqfs_fs *fs, struct mqfs_ino *dir,
		    const char *name, size_t len, uint64_t *ino,
		    unsigned *type)
{
	struct mqfs_dir_index *di;
	struct dir_pos p;
	int err = dir_find(fs, dir, name, len, &di, &p);

	if (err)
		return err;
	*ino = p.ino;
	if (type)
		*type = p.type;
	return 0;
}

/* ---- adding ------------------------------------------------------------ */

/* Write a new live record of @rec_len bytes at @off. */
static void dir_rec_fill(void *data, unsigned off, unsigned rec_len,
			 const char *name, size_t len, uint32_t hash,
			 uint64_t ino, unsigned type)
{
	struct mqfs_dirent *de = dir_rec(data, off);

	de->ino = ino;
	de->rec_len = (uint16_t)rec_len;
	de->name_len = (uint8_t)len;
	de->type = (uint8_t)type;
	de->hash = hash;
	memcpy(de->name, name, len);
	memset(de->name + len, 0, MQFS_DIRENT_LEN(len) - MQFS_DIRENT_HDR - len);
}

/* Largest record the block can still take (records already checked). */
static unsigned dir_block_room(void *data)
{
	unsigned off, room = 0;

	for (off = DIR_FIRST; off < DIR_BS; off += dir_rec(data, off)->rec_len)
		room = MQ_MAX(room, dir_rec_avail(dir_rec(data, off)));
	return room;
}

/*
 * Put the entry into the first record of the block with room: a free
 * first record is taken whole, a live record gives its slack.  The
 * whole block is checked before anything changes.  Returns the offset
 * used, or 0 when the block has no room after all; *room gets the
 * block's largest remaining space.
 */
static int dir_place(struct mqfs_fs *fs, struct mqfs_ino *dir,
		     struct mqfs_buf *b, const char *name, size_t len,
		     uint32_t hash, uint64_t ino, unsigned type,
		     unsigned *room)
{
	unsigned need = MQFS_DIRENT_LEN(len), off, at = 0, used;
	struct mqfs_dirent *de;

	for (off = DIR_FIRST; off < DIR_BS; off += dir_rec(b->data, off)->rec_len) {
		if (!dir_rec_ok(b->data, off))
			return dir_corrupt(fs, dir, b->blocknr, off);
		if (!at && dir_rec_avail(dir_rec(b->data, off)) >= need)
			at = off;
	}
	if (at) {
		de = dir_rec(b->data, at);
		used = de->ino ? MQFS_DIRENT_LEN(de->name_len) : 0;
		dir_rec_fill(b->data, at + used, de->rec_len - used, name, len,
			     hash, ino, type);
		if (used)
			de->rec_len = (uint16_t)used;
		at += used;
	}
	*room = dir_block_room(b->data);
	return (int)at;
}

static int dir_add_in_block(struct mqfs_handle *h, struct mqfs_ino *dir,
			    struct mqfs_dir_index *di, uint32_t lblk,
			    const char *name, size_t len, uint32_t hash,
			    uint64_t ino, unsigned type)
{
	struct mqfs_buf *b;
	unsigned room = 0;
	int off = dir_bread(h->fs, dir, di, lblk, &b);

	if (off)
		return off;
	mqfs_buf_lock(b);
	off = dir_place(h->fs, dir, b, name, len, hash, ino, type, &room);
	if (off > 0)
		mqfs_trans_dirty(h, b);
	mqfs_buf_unlock(b);
	mqfs_buf_put(b);
	if (off < 0)
		return off;
	mqfs_di_room_set(di, lblk, room);
	if (!off)
		return -EAGAIN;		/* hint was high; now corrected */
	mqfs_di_insert(di, hash, lblk, (unsigned)off);
	return 0;
}

/* Where a directory's first block should go: its inode's AG. */
static uint64_t dir_goal(struct mqfs_fs *fs, struct mqfs_ino *dir,
			 const struct mqfs_dir_index *di)
{
	if (di->nblk)
		return di->pblk[di->nblk - 1] + 1;
	return (dir->ino - 1) / fs->inodes_per_ag * (uint64_t)fs->ag_blocks;
}

/* Append a block to the directory holding just the new entry. */
static int dir_add_block(struct mqfs_handle *h, struct mqfs_ino *dir,
			 struct mqfs_dir_index *di, const char *name,
			 size_t len, uint32_t hash, uint64_t ino,
			 unsigned type)
{
	struct mqfs_fs *fs = h->fs;
	uint32_t lblk = di->nblk, got;
	struct mqfs_buf *b;
	uint64_t pblk;
	int err;

	if (lblk + 1 >= DI_NONE)
		return -EFBIG;
	err = mqfs_di_grow_blocks(di, lblk + 1);
	if (err)
		return err;
	err = mqfs_alloc_blocks(h, dir_goal(fs, dir, di), 1, &pblk, &got);
	if (err)
		return err;
	err = mqfs_buf_new(fs, pblk, MQFS_T_DIR, &b);
	if (err) {
		mqfs_free_blocks(h, pblk, 1);
		return err;
	}
	err = mqfs_extent_insert(h, dir, lblk, pblk, 1, 0);
	if (err) {
		mqfs_buf_put(b);
		mqfs_buf_forget(fs, pblk);
		mqfs_free_blocks(h, pblk, 1);
		return err;
	}
	mqfs_buf_lock(b);
	dir_rec_fill(b->data, DIR_FIRST, DIR_BS - DIR_FIRST, name, len, hash,
		     ino, type);
	mqfs_trans_dirty(h, b);
	mqfs_buf_unlock(b);
	mqfs_buf_put(b);
	pthread_mutex_lock(&dir->meta_lock);	/* mqfs_inode_stat reads it */
	dir->d.size += DIR_BS;
	pthread_mutex_unlock(&dir->meta_lock);
	di->pblk[lblk] = pblk;
	di->nblk = lblk + 1;
	mqfs_di_room_set(di, lblk, DIR_BS - DIR_FIRST - MQFS_DIRENT_LEN(len));
	mqfs_di_insert(di, hash, lblk, DIR_FIRST);
	return mqfs_inode_dirty(h, dir);
}

int mqfs_dir_add(struct mqfs_handle *h, struct mqfs_ino *dir,
		 const char *name, size_t len, uint64_t ino, unsigned type)
{
	struct mqfs_dir_index *di;
	struct dir_pos p;
	uint32_t hash = dir_hash(name, len);
	int err = dir_check_name(len);

	if (err || !ino)
		return err == -ENAMETOOLONG ? err : -EINVAL;
	err = dir_find(h->fs, dir, name, len, &di, &p);
	if (err != -ENOENT)
		return err ? err : -EEXIST;
	err = mqfs_di_reserve(di);
	while (!err) {
		uint32_t lblk = mqfs_di_room_find(di, MQFS_DIRENT_LEN(len));

		if (lblk == DI_NONE)
			return dir_add_block(h, dir, di, name, len, hash, ino,
					     type);
		err = dir_add_in_block(h, dir, di, lblk, name, len, hash, ino,
				       type);
		if (err == -EAGAIN)
			err = 0;
		else
			break;
	}
	return err;
}

/* ---- removing and replacing -------------------------------------------- */

/*
 * Free the record at @off: merge it into the record before it, or clear
 * it when it is the first.  Returns the space the merged record offers.
 */
static int dir_unplace(struct mqfs_fs *fs, struct mqfs_ino *dir,
		       struct mqfs_buf *b, unsigned off)
{
	struct mqfs_dirent *de = dir_rec(b->data, off), *prev = NULL;
	unsigned o;

	for (o = DIR_FIRST; o < off; o += dir_rec(b->data, o)->rec_len) {
		if (!dir_rec_ok(b->data, o))
			return dir_corrupt(fs, dir, b->blocknr, o);
		prev = dir_rec(b->data, o);
	}
	if (o != off || !dir_rec_ok(b->data, off) || !de->ino)
		return dir_corrupt(fs, dir, b->blocknr, off);
	if (!prev) {
		de->ino = 0;
		de->name_len = 0;
		de->type = 0;
		de->hash = 0;
		return (int)dir_rec_avail(de);
	}
	prev->rec_len = (uint16_t)(prev->rec_len + de->rec_len);
	return (int)dir_rec_avail(prev);
}

int mqfs_dir_remove(struct mqfs_handle *h, struct mqfs_ino *dir,
		    const char *name, size_t len)
{
	struct mqfs_dir_index *di;
	struct mqfs_buf *b;
	struct dir_pos p;
	int room;
	int err = dir_find(h->fs, dir, name, len, &di, &p);

	if (err)
		return err;
	err = dir_bread(h->fs, dir, di, p.lblk, &b);
	if (err)
		return err;
	mqfs_buf_lock(b);
	room = dir_unplace(h->fs, dir, b, p.off);
	if (room >= 0)
		mqfs_trans_dirty(h, b);
	mqfs_buf_unlock(b);
	mqfs_buf_put(b);
	if (room < 0)
		return room;
	mqfs_di_unlink(di, p.link);
	/* Only the merged record grew, so the block's max stays exact. */
	if ((unsigned)room > di->room[di->blk_cap + p.lblk])
		mqfs_di_room_set(di, p.lblk, (unsigned)room);
	return 0;
}

int mqfs_dir_replace(struct mqfs_handle *h, struct mqfs_ino *dir,
		     const char *name, size_t len, uint64_t ino,
		     unsigned type)
{
	struct mqfs_dir_index *di;
	struct mqfs_dirent *de;
	struct mqfs_buf *b;
	struct dir_pos p;
	int err = dir_find(h->fs, dir, name, len, &di, &p);

	if (err)
		return err;
	err = dir_bread(h->fs, dir, di, p.lblk, &b);
	if (err)
		return err;
	mqfs_buf_lock(b);
	de = dir_rec(b->data, p.off);
	de->ino = ino;
	de->type = (uint8_t)type;
	mqfs_trans_dirty(h, b);
	mqfs_buf_unlock(b);
	mqfs_buf_put(b);
	return 0;
}

/* ---- iterating --------------------------------------------------------- */

/*
 * Visit the live records of one block from offset @from.  Works on a
 * copy so @fn runs without the buffer lock (it may read other blocks).
 * Returns 1 when @fn stopped the walk.
 */
static int dir_iter_block(struct mqfs_fs *fs, struct mqfs_ino *dir,
			  const struct mqfs_dir_index *di, uint32_t lblk,
			  unsigned from, bool all, mqfs_dir_fn fn, void *ctx)
{
	union { uint64_t align; char c[DIR_BS]; } copy;
	struct mqfs_buf *b;
	uint64_t base = (uint64_t)lblk * DIR_BS;
	unsigned off;
	int err = dir_bread(fs, dir, di, lblk, &b);

	if (err)
		return err;
	mqfs_buf_lock(b);
	memcpy(copy.c, b->data, DIR_BS);
	mqfs_buf_unlock(b);
	for (off = DIR_FIRST; off < DIR_BS; off += dir_rec(copy.c, off)->rec_len) {
		struct mqfs_dirent *de = dir_rec(copy.c, off);

		if (!dir_rec_ok(copy.c, off)) {
			err = dir_corrupt(fs, dir, b->blocknr, off);
			break;
		}
		if (off < from || !de->ino ||
		    (!all && !dir_entry_servable(fs, dir, b->blocknr, off, de)))
			continue;
		if (fn(ctx, de->name, de->name_len, de->ino, de->type,
		       base + off + de->rec_len)) {
			err = 1;
			break;
		}
	}
	mqfs_buf_put(b);
	return err;
}

/* @all: bad entries too (they still make a directory non-empty). */
static int dir_iterate(struct mqfs_fs *fs, struct mqfs_ino *dir, uint64_t pos,
		       bool all, mqfs_dir_fn fn, void *ctx)
{
	const struct mqfs_dir_index *di;
	uint64_t lblk = pos / DIR_BS;
	unsigned from = (unsigned)(pos % DIR_BS);
	uint32_t nblk;
	int err = dir_nblocks(fs, dir, &nblk);

	di = __atomic_load_n(&dir->dir_index, __ATOMIC_ACQUIRE);
	for (; !err && lblk < nblk; lblk++, from = 0)
		err = dir_iter_block(fs, dir, di, (uint32_t)lblk, from, all, fn,
				     ctx);
	return err < 0 ? err : 0;
}

int mqfs_dir_iterate(struct mqfs_fs *fs, struct mqfs_ino *dir, uint64_t pos,
		     mqfs_dir_fn fn, void *ctx)
{
	return dir_iterate(fs, dir, pos, false, fn, ctx);
}

static int dir_any(void *ctx, const char *name, size_t len, uint64_t ino,
		   unsigned type, uint64_t next_pos)
{
	(void)name, (void)len, (void)ino, (void)type, (void)next_pos;
	*(bool *)ctx = true;
	return 1;
}

int mqfs_dir_is_empty(struct mqfs_fs *fs, struct mqfs_ino *dir)
{
	const struct mqfs_dir_index *di;
	bool found = false;
	int err;

	di = __atomic_load_n(&dir->dir_index, __ATOMIC_ACQUIRE);
	if (di)
		return di->count == 0 && !di->bad;
	err = dir_iterate(fs, dir, 0, true, dir_any, &found);
	return err ? err : !found;
}

/*
 * Worst case of one add: the directory block, an appended block's
 * extent insert, the directory inode and the allocator's bitmap and AG
 * header for the new block.
 */
unsigned mqfs_dir_credits(struct mqfs_fs *fs)
{
	return 1 + mqfs_extent_credits(fs) + 1 + 2;
}
