// SPDX-License-Identifier: MIT
/*
 * extent.c - the map from a file's logical blocks to device blocks:
 * checking and opening its nodes, lookups and the walk (extent_edit.c
 * makes the changes).
 *
 * Up to MQFS_INLINE_EXTENTS extents live in the inode itself.  Beyond
 * that the inode holds the root of a B+tree (format.h, struct mqfs_ext_node):
 * index nodes whose entries say "keys >= lblk live under child", and
 * leaves of extents, each node one MQFS_T_EXTENT block.
 *
 * Invariants kept by every change (and checked on every read):
 *   - entries of a node are sorted; extents never overlap;
 *   - every key under index entry i is >= entry i's lblk, and every
 *     extent under it ends at or before entry i+1's lblk (the bound the
 *     parent passes down), so a lookup descends to exactly one leaf;
 *   - no node but the root is empty; the root is inline (no tree) when
 *     it holds extents directly.
 * An index key is only a lower bound: removing the first extent of a
 * leaf does not touch its parent.  An insert left of a subtree lowers
 * the key on the way down instead.
 *
 * Changes work on a copy of the path (struct ext_path): the leaf copy is
 * edited (it may overflow by EXT_SLACK entries), then ext_commit()
 * allocates every block the splits will need *before* writing anything,
 * so ENOSPC leaves the tree untouched, and writes the path back bottom
 * up: splits, root growth, emptied nodes dropped.
 *
 * Locking: the caller holds ip->lock (shared for lookups, exclusive for
 * changes).  A tree block's buffer lock is taken only to copy or write
 * its bytes and is never held across another call of this module's
 * neighbours (allocator, buffer cache, inode writes).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "extent_i.h"

/* ---- checking nodes --------------------------------------------------- */

int mqfs_ext_bad(struct mqfs_fs *fs, struct mqfs_ino *ip, uint64_t blk,
		 const char *what, unsigned i)
{
	mqfs_fs_error(fs, blk, "inode %" PRIu64 ": extent %s %s (entry %u)",
		      ip->ino, blk ? "block" : "root", what, i);
	return -EUCLEAN;
}

static int ext_check_leaf(struct mqfs_fs *fs, struct mqfs_ino *ip,
			  uint64_t blk, const struct ext_view *v,
			  uint64_t lo, uint64_t hi)
{
	uint64_t prev_end = lo;

	for (unsigned i = 0; i < v->nr; i++) {
		const struct mqfs_extent *x = &v->e[i].ext;

		if (!x->len || x->flags & ~(uint32_t)MQFS_EXT_UNWRITTEN)
			return mqfs_ext_bad(fs, ip, blk, "has a bad extent", i);
		if (x->lblk < prev_end || x->lblk > hi || x->len > hi - x->lblk)
			return mqfs_ext_bad(fs, ip, blk,
					    "keys out of order", i);
		if (!ext_blocks_ok(fs, x->pblk, x->len))
			return mqfs_ext_bad(fs, ip, blk,
					    "points outside the fs", i);
		prev_end = ext_end(x);
	}
	return 0;
}

static int ext_check_index(struct mqfs_fs *fs, struct mqfs_ino *ip,
			   uint64_t blk, const struct ext_view *v,
			   uint64_t lo, uint64_t hi)
{
	for (unsigned i = 0; i < v->nr; i++) {
		const struct mqfs_ext_index *x = &v->e[i].idx;

		if (x->lblk < lo || x->lblk >= hi ||
		    (i && x->lblk <= v->e[i - 1].idx.lblk))
			return mqfs_ext_bad(fs, ip, blk,
					    "keys out of order", i);
		if (!ext_blocks_ok(fs, x->child, 1))
			return mqfs_ext_bad(fs, ip, blk,
					    "points outside the fs", i);
	}
	return 0;
}

/*
 * Check a node found at @blk (0: the root) whose keys must lie in
 * [lo, hi); @depth is what its parent expects (-1: the root).
 */
static int ext_check(struct mqfs_fs *fs, struct mqfs_ino *ip, uint64_t blk,
		     const struct ext_view *v, int depth, uint64_t lo,
		     uint64_t hi)
{
	if (v->depth > EXT_MAX_DEPTH || (depth >= 0 && v->depth != (unsigned)depth))
		return mqfs_ext_bad(fs, ip, blk, "depth mismatch", 0);
	if (v->nr > v->max || (blk && !v->nr))
		return mqfs_ext_bad(fs, ip, blk, "bad entry count", v->nr);
	if (v->depth == 0)
		return ext_check_leaf(fs, ip, blk, v, lo, hi);
	return ext_check_index(fs, ip, blk, v, lo, hi);
}

/* ---- opening nodes ---------------------------------------------------- */

/* The root as stored in the inode (inline extents or a tree root). */
int mqfs_ext_root_view(struct mqfs_fs *fs, struct mqfs_ino *ip,
		       struct ext_view *v)
{
	const struct mqfs_inode *d = &ip->d;

	if (d->iflags & MQFS_IF_INLINE_DATA) {
		*v = (struct ext_view){ .e = (const void *)d->u.root };
		return 0;
	}
	if (d->iflags & MQFS_IF_EXTENT_TREE) {
		const struct mqfs_ext_node *n = (const void *)d->u.root;

		*v = (struct ext_view){ .depth = n->depth, .nr = n->nr,
					.max = MQFS_ROOT_ENTRIES,
					.e = (const void *)(n + 1) };
		if (n->max != MQFS_ROOT_ENTRIES)
			return mqfs_ext_bad(fs, ip, 0, "has a bad capacity", 0);
	} else {
		unsigned nr = 0;

		while (nr < MQFS_INLINE_EXTENTS && d->u.ext[nr].len)
			nr++;
		for (unsigned i = nr; i < MQFS_INLINE_EXTENTS; i++)
			if (d->u.ext[i].lblk || d->u.ext[i].pblk ||
			    d->u.ext[i].len || d->u.ext[i].flags)
				return mqfs_ext_bad(fs, ip, 0, "has a gap", i);
		*v = (struct ext_view){ .nr = nr, .max = MQFS_INLINE_EXTENTS,
					.e = (const void *)d->u.ext };
	}
	return ext_check(fs, ip, 0, v, -1, 0, EXT_END);
}

static void ext_blk_view(struct mqfs_buf *b, struct ext_view *v)
{
	const struct mqfs_ext_node *n =
		(const void *)((const char *)b->data + MQFS_HDR_SIZE);

	*v = (struct ext_view){ .depth = n->depth, .nr = n->nr, .max = n->max,
				.e = (const void *)(n + 1) };
}

/*
 * Read tree block @blk and check it as a node of @depth with keys in
 * [lo, hi).  On success the buffer is referenced and locked.
 */
int mqfs_ext_open(struct mqfs_fs *fs, struct mqfs_ino *ip, uint64_t blk,
		  unsigned depth, uint64_t lo, uint64_t hi, struct ext_ref *r)
{
	int err = mqfs_buf_read(fs, blk, MQFS_T_EXTENT, &r->b);

	if (err)
		return err;
	mqfs_buf_lock(r->b);
	ext_blk_view(r->b, &r->v);
	if (r->v.max != MQFS_EXT_BLOCK_MAX)
		err = mqfs_ext_bad(fs, ip, blk, "has a bad capacity", 0);
	else
		err = ext_check(fs, ip, blk, &r->v, (int)depth, lo, hi);
	if (err) {
		mqfs_buf_unlock(r->b);
		mqfs_buf_put(r->b);
		r->b = NULL;
	}
	return err;
}

void mqfs_ext_close(struct ext_ref *r)
{
	if (r->b) {
		mqfs_buf_unlock(r->b);
		mqfs_buf_put(r->b);
		r->b = NULL;
	}
}

/* ---- read-only lookups ------------------------------------------------ */

/* First key of the subtree at @blk (its leftmost extent). */
static int ext_leftmost(struct mqfs_fs *fs, struct mqfs_ino *ip,
			uint64_t blk, unsigned depth, uint64_t lo,
			uint64_t hi, uint64_t *key)
{
	for (;;) {
		struct ext_ref r;
		int err = mqfs_ext_open(fs, ip, blk, depth, lo, hi, &r);

		if (err)
			return err;
		if (depth == 0) {
			*key = r.v.e[0].ext.lblk;
			mqfs_ext_close(&r);
			return 0;
		}
		blk = r.v.e[0].idx.child;
		lo = r.v.e[0].idx.lblk;
		if (r.v.nr > 1)
			hi = r.v.e[1].idx.lblk;
		depth--;
		mqfs_ext_close(&r);
	}
}

/* A later subtree to look in when the leaf has nothing after the key. */
struct ext_sibling {
	uint64_t blk, lo, hi;
	unsigned depth;
};

/* Search a leaf view for @lblk; fills @f except a next beyond the leaf. */
static bool ext_find_leaf(const struct ext_view *v, uint64_t lblk,
			  struct ext_found *f)
{
	unsigned ub = ext_search(v->e, v->nr, lblk);

	if (ub && lblk < ext_end(&v->e[ub - 1].ext)) {
		f->mapped = true;
		f->ext = v->e[ub - 1].ext;
		return true;
	}
	f->mapped = false;
	f->next = ub < v->nr ? v->e[ub].ext.lblk : EXT_NONE;
	return ub < v->nr;
}

/* Where is @lblk: the extent holding it, or the start of the next one. */
int mqfs_ext_find(struct mqfs_fs *fs, struct mqfs_ino *ip, uint64_t lblk,
		  struct ext_found *f)
{
	struct ext_sibling sib = { 0 };
	struct ext_ref r = { .b = NULL };
	uint64_t hi = EXT_END;
	int err = mqfs_ext_root_view(fs, ip, &r.v);

	if (err)
		return err;
	while (r.v.depth) {
		unsigned ub = ext_search(r.v.e, r.v.nr, lblk);
		unsigned pos = ub ? ub - 1 : 0;
		const struct mqfs_ext_index *x = &r.v.e[pos].idx;
		uint64_t child = x->child, lo = x->lblk;
		unsigned depth = r.v.depth - 1;

		if (pos + 1 < r.v.nr) {
			sib = (struct ext_sibling){
				.blk = r.v.e[pos + 1].idx.child,
				.lo = r.v.e[pos + 1].idx.lblk,
				.hi = pos + 2 < r.v.nr ? r.v.e[pos + 2].idx.lblk : hi,
				.depth = depth };
			hi = r.v.e[pos + 1].idx.lblk;
		}
		mqfs_ext_close(&r);
		err = mqfs_ext_open(fs, ip, child, depth, lo, hi, &r);
		if (err)
			return err;
	}
	if (!ext_find_leaf(&r.v, lblk, f) && !f->mapped && sib.blk) {
		mqfs_ext_close(&r);
		return ext_leftmost(fs, ip, sib.blk, sib.depth, sib.lo, sib.hi,
				    &f->next);
	}
	mqfs_ext_close(&r);
	return 0;
}

int mqfs_extent_map(struct mqfs_fs *fs, struct mqfs_ino *ip, uint64_t lblk,
		    uint32_t max, struct mqfs_map *m)
{
	struct ext_found f;
	int err;

	if (!max)
		return -EINVAL;
	err = mqfs_ext_find(fs, ip, lblk, &f);
	if (err)
		return err;
	m->lblk = lblk;
	if (f.mapped) {
		m->pblk = f.ext.pblk + (lblk - f.ext.lblk);
		m->len = (uint32_t)MQ_MIN(ext_end(&f.ext) - lblk, (uint64_t)max);
		m->unwritten = f.ext.flags & MQFS_EXT_UNWRITTEN;
	} else {
		m->pblk = 0;
		m->len = f.next == EXT_NONE ? max :
			 (uint32_t)MQ_MIN(f.next - lblk, (uint64_t)max);
		m->unwritten = false;
	}
	return 0;
}

/* ---- walking the whole map -------------------------------------------- */

struct ext_walk {
	struct mqfs_fs *fs;
	struct mqfs_ino *ip;
	mqfs_extent_fn fn;
	void *ctx;
};

/* Entries are a private copy: @fn may take any lock it likes. */
static int ext_walk_entries(struct ext_walk *w, unsigned depth, unsigned nr,
			    const union ext_entry *e, uint64_t hi)
{
	union ext_entry *copy = NULL;
	int ret = 0;

	for (unsigned i = 0; i < nr && !ret; i++) {
		uint64_t chi = i + 1 < nr ? e[i + 1].idx.lblk : hi;
		struct ext_ref r;
		unsigned cnr;

		if (depth == 0) {
			ret = w->fn(w->ctx, &e[i].ext, 0);
			continue;
		}
		ret = w->fn(w->ctx, NULL, e[i].idx.child);
		if (ret)
			break;
		if (!copy && !(copy = malloc(MQFS_PAYLOAD)))
			return -ENOMEM;
		ret = mqfs_ext_open(w->fs, w->ip, e[i].idx.child, depth - 1,
				    e[i].idx.lblk, chi, &r);
		if (ret)
			break;
		cnr = r.v.nr;
		memcpy(copy, r.v.e, cnr * sizeof(*copy));
		mqfs_ext_close(&r);
		ret = ext_walk_entries(w, depth - 1, cnr, copy, chi);
	}
	free(copy);
	return ret;
}

int mqfs_extent_walk(struct mqfs_fs *fs, struct mqfs_ino *ip,
		     mqfs_extent_fn fn, void *ctx)
{
	struct ext_walk w = { .fs = fs, .ip = ip, .fn = fn, .ctx = ctx };
	union ext_entry root[MQFS_INLINE_EXTENTS];
	struct ext_view v;
	int err = mqfs_ext_root_view(fs, ip, &v);

	if (err)
		return err;
	memcpy(root, v.e, v.nr * sizeof(root[0]));
	return ext_walk_entries(&w, v.depth, v.nr, root, EXT_END);
}
