// SPDX-License-Identifier: MIT
/*
 * extent_edit.c - changes to a file's extent map (see extent.c for the
 * tree and its invariants): a private copy of the path from the root to
 * the leaf is edited, every block its splits need is allocated before
 * anything is written (ENOSPC leaves the tree untouched), and the path
 * is written back bottom up.  Insert, remove, mark written.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "extent_i.h"

/* ---- paths for changes ------------------------------------------------ */

static void ext_path_free(struct ext_path *p)
{
	for (unsigned i = 0; i < p->nlev; i++)
		if (p->lv[i].b)
			mqfs_buf_put(p->lv[i].b);
	free(p);
}

static void ext_level_fill(struct ext_level *lv, const struct ext_view *v,
			   struct mqfs_buf *b)
{
	lv->b = b;
	lv->depth = v->depth;
	lv->nr = v->nr;
	lv->max = v->depth ? v->max : (b ? v->max : MQFS_INLINE_EXTENTS);
	lv->ins = -1;
	lv->dirty = false;
	memcpy(lv->e, v->e, v->nr * sizeof(lv->e[0]));
}

/*
 * Choose the child to follow at index level @lv for @key.  With @len
 * (an insert of [key, key+len)) the keys on the way are adjusted so the
 * new extent fits its leaf's bounds: a key left of the first subtree
 * lowers that subtree's key; a range running into the next subtree
 * (it is a hole, so that subtree starts at or after key+len) goes into
 * that subtree, whose key is lowered to @key.
 */
static void ext_choose(struct ext_level *lv, uint64_t key, uint64_t len)
{
	unsigned ub = ext_search(lv->e, lv->nr, key);
	unsigned pos = ub ? ub - 1 : 0;

	if (len && pos + 1 < lv->nr && key + len > lv->e[pos + 1].idx.lblk) {
		pos++;
		lv->e[pos].idx.lblk = key;
		lv->dirty = true;
	} else if (len && key < lv->e[pos].idx.lblk) {
		lv->e[pos].idx.lblk = key;
		lv->dirty = true;
	}
	lv->pos = pos;
}

/* Copy the path to @key's leaf; the leaf's pos is the insertion slot. */
static int ext_path_load(struct mqfs_fs *fs, struct mqfs_ino *ip,
			 uint64_t key, uint64_t len, struct ext_path **out)
{
	struct ext_path *p = malloc(sizeof(*p));
	uint64_t hi = EXT_END;
	struct ext_view v;
	unsigned L = 0;
	int err;

	if (!p)
		return -ENOMEM;
	p->ip = ip;
	p->nlev = 0;
	p->rightmost = true;
	err = mqfs_ext_root_view(fs, ip, &v);
	if (err)
		goto fail;
	ext_level_fill(&p->lv[0], &v, NULL);
	p->nlev = 1;
	for (; p->lv[L].depth; L++) {
		struct ext_level *lv = &p->lv[L];
		struct ext_ref r;

		ext_choose(lv, key, len);
		if (lv->pos + 1 < lv->nr) {
			hi = lv->e[lv->pos + 1].idx.lblk;
			p->rightmost = false;
		}
		err = mqfs_ext_open(fs, ip, lv->e[lv->pos].idx.child,
				    lv->depth - 1, lv->e[lv->pos].idx.lblk, hi,
				    &r);
		if (err)
			goto fail;
		ext_level_fill(&p->lv[L + 1], &r.v, r.b);
		mqfs_buf_unlock(r.b);	/* keep the reference for the write */
		p->nlev++;
	}
	p->lv[L].pos = ext_search(p->lv[L].e, p->lv[L].nr, key);
	*out = p;
	return 0;
fail:
	ext_path_free(p);
	return err;
}

static void ext_level_insert(struct ext_level *lv, unsigned pos,
			     const union ext_entry *e)
{
	memmove(&lv->e[pos + 1], &lv->e[pos], (lv->nr - pos) * sizeof(*e));
	lv->e[pos] = *e;
	lv->nr++;
	lv->ins = (int)pos;
	lv->dirty = true;
}

static void ext_level_delete(struct ext_level *lv, unsigned pos)
{
	memmove(&lv->e[pos], &lv->e[pos + 1],
		(lv->nr - pos - 1) * sizeof(lv->e[0]));
	lv->nr--;
	lv->dirty = true;
}

static bool ext_mergeable(const struct mqfs_extent *a,
			  const struct mqfs_extent *b)
{
	return ext_end(a) == b->lblk && a->pblk + a->len == b->pblk &&
	       a->flags == b->flags && (uint64_t)a->len + b->len <= UINT32_MAX;
}

/* Merge leaf entry @i with its neighbours; returns its new index. */
static unsigned ext_leaf_merge(struct ext_level *lv, unsigned i)
{
	if (i + 1 < lv->nr && ext_mergeable(&lv->e[i].ext, &lv->e[i + 1].ext)) {
		lv->e[i].ext.len += lv->e[i + 1].ext.len;
		ext_level_delete(lv, i + 1);
	}
	if (i > 0 && ext_mergeable(&lv->e[i - 1].ext, &lv->e[i].ext)) {
		lv->e[i - 1].ext.len += lv->e[i].ext.len;
		ext_level_delete(lv, i);
		i--;
	}
	return i;
}

/* ---- writing a path back ---------------------------------------------- */

static void ext_store_blk(struct mqfs_handle *h, struct mqfs_buf *b,
			  unsigned depth, unsigned nr,
			  const union ext_entry *e)
{
	struct mqfs_ext_node *n;

	mqfs_buf_lock(b);
	n = (void *)((char *)b->data + MQFS_HDR_SIZE);
	*n = (struct mqfs_ext_node){ .depth = (uint16_t)depth,
				     .nr = (uint16_t)nr,
				     .max = MQFS_EXT_BLOCK_MAX };
	memcpy(n + 1, e, nr * sizeof(*e));
	memset((union ext_entry *)(n + 1) + nr, 0,
	       (MQFS_EXT_BLOCK_MAX - nr) * sizeof(*e));
	mqfs_trans_dirty(h, b);
	mqfs_buf_unlock(b);
}

/* The root -> ip->d: inline extents at depth 0, a tree root above. */
static void ext_store_root(struct mqfs_ino *ip, unsigned depth, unsigned nr,
			   const union ext_entry *e)
{
	struct mqfs_inode *d = &ip->d;

	memset(d->u.root, 0, sizeof(d->u.root));
	if (depth == 0) {
		d->iflags &= (uint16_t)~MQFS_IF_EXTENT_TREE;
		memcpy(d->u.ext, e, nr * sizeof(*e));
	} else {
		struct mqfs_ext_node *n = (void *)d->u.root;

		d->iflags |= MQFS_IF_EXTENT_TREE;
		*n = (struct mqfs_ext_node){ .depth = (uint16_t)depth,
					     .nr = (uint16_t)nr,
					     .max = MQFS_ROOT_ENTRIES };
		memcpy(n + 1, e, nr * sizeof(*e));
	}
}

/* Allocation goal for tree blocks: beside the leaf, or the file's data. */
static uint64_t ext_goal(const struct ext_path *p)
{
	const struct ext_level *leaf = &p->lv[p->nlev - 1];

	if (leaf->b)
		return leaf->b->blocknr;
	if (leaf->nr)
		return leaf->e[0].ext.pblk;
	return 0;
}

static void ext_drop_new(struct mqfs_handle *h, unsigned n, uint64_t *blk,
			 struct mqfs_buf **bufs)
{
	/* mqfs_free_blocks drops the (clean, unreferenced) cached copies. */
	for (unsigned i = 0; i < n; i++) {
		mqfs_buf_put(bufs[i]);
		mqfs_free_blocks(h, blk[i], 1);
	}
}

/* Get @need fresh tree blocks, all or none. */
static int ext_alloc_nodes(struct mqfs_handle *h, const struct ext_path *p,
			   unsigned need, uint64_t *blk, struct mqfs_buf **bufs)
{
	uint64_t goal = ext_goal(p);

	for (unsigned i = 0; i < need; i++) {
		uint32_t got = 0;
		int err = mqfs_alloc_blocks(h, goal, 1, &blk[i], &got);

		if (err) {
			ext_drop_new(h, i, blk, bufs);
			return err;
		}
		err = mqfs_buf_new(h->fs, blk[i], MQFS_T_EXTENT, &bufs[i]);
		if (err) {
			mqfs_free_blocks(h, blk[i], 1);
			ext_drop_new(h, i, blk, bufs);
			return err;
		}
		goal = blk[i] + 1;
	}
	return 0;
}

/* Split overflowing level @L (not the root) into itself and block @nblk. */
static void ext_split(struct mqfs_handle *h, struct ext_path *p, unsigned L,
		      uint64_t nblk, struct mqfs_buf *nb)
{
	struct ext_level *lv = &p->lv[L], *up = &p->lv[L - 1];
	union ext_entry x = { .idx = { .child = nblk } };
	unsigned k = lv->nr / 2;

	/* Appending at the end of the file: leave the left node full. */
	if (p->rightmost && lv->ins == (int)lv->nr - 1)
		k = MQ_MIN(lv->nr - 1, lv->max);
	ext_store_blk(h, nb, lv->depth, lv->nr - k, &lv->e[k]);
	x.idx.lblk = ext_key(&lv->e[k]);
	lv->nr = k;
	ext_store_blk(h, lv->b, lv->depth, lv->nr, lv->e);
	lv->dirty = false;
	ext_level_insert(up, up->pos + 1, &x);
}

/* The root overflowed: its entries move to block @nblk, one level down. */
static void ext_grow_root(struct mqfs_handle *h, struct ext_path *p,
			  uint64_t nblk, struct mqfs_buf *nb)
{
	struct ext_level *r = &p->lv[0];
	union ext_entry x = { .idx = { .lblk = ext_key(&r->e[0]),
				       .child = nblk } };

	ext_store_blk(h, nb, r->depth, r->nr, r->e);
	r->depth++;
	r->nr = 1;
	r->max = MQFS_ROOT_ENTRIES;
	r->e[0] = x;
	r->dirty = true;
}

/* Levels that will overflow, bottom up: each needs one new block. */
static int ext_blocks_needed(const struct ext_path *p, unsigned *need)
{
	unsigned L = p->nlev - 1, nr = p->lv[L].nr;

	*need = 0;
	while (nr > p->lv[L].max) {
		++*need;
		if (L == 0)
			return p->lv[0].depth >= EXT_MAX_DEPTH ? -EFBIG : 0;
		L--;
		nr = p->lv[L].nr + 1;
	}
	return 0;
}

/* Free the blocks of levels emptied by a commit (after the inode write). */
static int ext_free_levels(struct mqfs_handle *h, struct ext_path *p,
			   const unsigned *lvls, unsigned n)
{
	int err = 0;

	for (unsigned i = 0; i < n; i++) {
		struct ext_level *lv = &p->lv[lvls[i]];
		uint64_t blk = lv->b->blocknr;
		int e;

		mqfs_buf_put(lv->b);
		lv->b = NULL;
		e = mqfs_free_blocks(h, blk, 1);
		if (!err)
			err = e;
	}
	return err;
}

/*
 * Write the edited path back.  All new blocks are allocated first, so
 * a failure (ENOSPC, no memory) changes nothing.  @data_delta is the
 * change of data blocks, added to ip->d.blocks with the tree's own.
 */
static int ext_commit(struct mqfs_handle *h, struct ext_path *p,
		      int64_t data_delta)
{
	uint64_t nblk[EXT_MAX_DEPTH + 1];
	struct mqfs_buf *nbuf[EXT_MAX_DEPTH + 1];
	unsigned emptied[EXT_MAX_DEPTH + 1];
	unsigned need, k = 0, nempty = 0, L;
	struct mqfs_ino *ip = p->ip;
	int ferr, err = ext_blocks_needed(p, &need);

	if (!err)
		err = ext_alloc_nodes(h, p, need, nblk, nbuf);
	if (err)
		return err;
	for (L = p->nlev - 1;; L--) {
		struct ext_level *lv = &p->lv[L];

		if (lv->nr > lv->max) {
			if (L)
				ext_split(h, p, L, nblk[k], nbuf[k]);
			else
				ext_grow_root(h, p, nblk[k], nbuf[k]);
			k++;
		} else if (L && !lv->nr) {
			emptied[nempty++] = L;
			ext_level_delete(&p->lv[L - 1], p->lv[L - 1].pos);
		} else if (L && lv->dirty) {
			ext_store_blk(h, lv->b, lv->depth, lv->nr, lv->e);
		}
		if (!L)
			break;
	}
	if (p->lv[0].depth && !p->lv[0].nr)
		p->lv[0].depth = 0;	/* everything is gone: inline again */
	ip->d.blocks += (uint64_t)((int64_t)need - (int64_t)nempty + data_delta);
	ext_store_root(ip, p->lv[0].depth, p->lv[0].nr, p->lv[0].e);
	err = mqfs_inode_dirty(h, ip);
	for (unsigned i = 0; i < need; i++)
		mqfs_buf_put(nbuf[i]);
	ferr = ext_free_levels(h, p, emptied, nempty);
	return err ? err : ferr;
}

/* ---- the changes ------------------------------------------------------ */

/*
 * Pull a lone child that fits into the root, one level at a time.  A
 * child is pulled up only when it leaves a free slot in the root, so a
 * file hovering at the limit does not allocate and free a block at
 * every change.
 */
static int ext_shrink(struct mqfs_handle *h, struct mqfs_ino *ip)
{
	for (;;) {
		union ext_entry e[MQFS_INLINE_EXTENTS];
		unsigned depth, nr, cap;
		struct ext_view v;
		struct ext_ref c;
		uint64_t blk;
		int err = mqfs_ext_root_view(h->fs, ip, &v);

		if (err || !v.depth || v.nr != 1)
			return err;
		blk = v.e[0].idx.child;
		err = mqfs_ext_open(h->fs, ip, blk, v.depth - 1,
				    v.e[0].idx.lblk, EXT_END, &c);
		if (err)
			return err;
		depth = c.v.depth;
		nr = c.v.nr;
		cap = depth ? MQFS_ROOT_ENTRIES : MQFS_INLINE_EXTENTS;
		if (nr < cap)
			memcpy(e, c.v.e, nr * sizeof(e[0]));
		mqfs_ext_close(&c);
		if (nr >= cap)
			return 0;
		ext_store_root(ip, depth, nr, e);
		ip->d.blocks--;
		err = mqfs_inode_dirty(h, ip);
		if (!err)
			err = mqfs_free_blocks(h, blk, 1);
		if (err)
			return err;
	}
}


int mqfs_extent_insert(struct mqfs_handle *h, struct mqfs_ino *ip,
		       uint64_t lblk, uint64_t pblk, uint32_t len,
		       uint32_t flags)
{
	union ext_entry x = { .ext = { .lblk = lblk, .pblk = pblk,
				       .len = len, .flags = flags } };
	struct ext_level *leaf;
	struct ext_found f;
	struct ext_path *p;
	int err;

	if (!len || flags & ~(uint32_t)MQFS_EXT_UNWRITTEN ||
	    ip->d.iflags & MQFS_IF_INLINE_DATA ||
	    !ext_blocks_ok(h->fs, pblk, len))
		return -EINVAL;
	if (lblk >= EXT_END || len > EXT_END - lblk)
		return -EFBIG;
	err = mqfs_ext_find(h->fs, ip, lblk, &f);
	if (err)
		return err;
	if (f.mapped || f.next < lblk + len)
		return -EEXIST;
	err = ext_path_load(h->fs, ip, lblk, len, &p);
	if (err)
		return err;
	leaf = &p->lv[p->nlev - 1];
	ext_level_insert(leaf, leaf->pos, &x);
	leaf->ins = (int)ext_leaf_merge(leaf, leaf->pos);
	err = ext_commit(h, p, len);
	ext_path_free(p);
	/* A merge may have left a lone small leaf. */
	return err ? err : ext_shrink(h, ip);
}

/* Path to the extent holding @lblk; *leaf and *i name it. */
static int ext_path_at(struct mqfs_fs *fs, struct mqfs_ino *ip,
		       uint64_t lblk, struct ext_path **pp, unsigned *i)
{
	struct ext_level *leaf;
	int err = ext_path_load(fs, ip, lblk, 0, pp);

	if (err)
		return err;
	leaf = &(*pp)->lv[(*pp)->nlev - 1];
	if (!leaf->pos || ext_end(&leaf->e[leaf->pos - 1].ext) <= lblk) {
		uint64_t blk = leaf->b ? leaf->b->blocknr : 0;
		unsigned pos = leaf->pos;

		ext_path_free(*pp);
		return mqfs_ext_bad(fs, ip, blk, "lost an extent", pos);
	}
	*i = leaf->pos - 1;
	return 0;
}

/* Unmap [lblk, end) within the extent holding @lblk; *next: its end. */
static int ext_remove_one(struct mqfs_handle *h, struct mqfs_ino *ip,
			  uint64_t lblk, uint64_t end, uint64_t *next)
{
	struct ext_level *leaf;
	struct mqfs_extent *x;
	struct ext_path *p;
	uint64_t xend, t, fpblk;
	uint32_t fcnt;
	unsigned i;
	int err = ext_path_at(h->fs, ip, lblk, &p, &i);

	if (err)
		return err;
	leaf = &p->lv[p->nlev - 1];
	x = &leaf->e[i].ext;
	xend = ext_end(x);
	t = MQ_MIN(end, xend);
	fpblk = x->pblk + (lblk - x->lblk);
	fcnt = (uint32_t)(t - lblk);
	if (lblk == x->lblk && t == xend) {
		ext_level_delete(leaf, i);
	} else if (lblk == x->lblk) {
		x->lblk = t;
		x->pblk += fcnt;
		x->len -= fcnt;
	} else if (t == xend) {
		x->len = (uint32_t)(lblk - x->lblk);
	} else {
		union ext_entry r = { .ext = {
			.lblk = t, .pblk = x->pblk + (t - x->lblk),
			.len = (uint32_t)(xend - t), .flags = x->flags } };

		x->len = (uint32_t)(lblk - x->lblk);
		ext_level_insert(leaf, i + 1, &r);
	}
	leaf->dirty = true;
	err = ext_commit(h, p, -(int64_t)fcnt);
	ext_path_free(p);
	if (!err)
		err = mqfs_free_blocks(h, fpblk, fcnt);
	*next = t;
	return err;
}

/*
 * The extent holding *@lblk into @f, or, when *@lblk is in a hole, the
 * next one, *@lblk moved to its start: 1, or 0 when none starts before
 * @end, or -errno.
 */
static int ext_next_mapped(struct mqfs_handle *h, struct mqfs_ino *ip,
			   uint64_t *lblk, uint64_t end, struct ext_found *f)
{
	for (;;) {
		int err = mqfs_ext_find(h->fs, ip, *lblk, f);

		if (err)
			return err;
		if (f->mapped)
			return 1;
		if (f->next >= end)
			return 0;
		*lblk = f->next;
	}
}

int mqfs_extent_remove(struct mqfs_handle *h, struct mqfs_ino *ip,
		       uint64_t lblk, uint64_t len)
{
	uint64_t end = lblk >= EXT_END || len > EXT_END - lblk ?
		       EXT_END : lblk + len;
	struct ext_found f;
	int got;

	while (lblk < end &&
	       (got = ext_next_mapped(h, ip, &lblk, end, &f)) != 0) {
		if (got < 0)
			return got;
		got = ext_remove_one(h, ip, lblk, end, &lblk);
		if (got)
			return got;
	}
	return ext_shrink(h, ip);
}

/* Split the unwritten extent holding @lblk: [lblk, end) becomes written. */
static int ext_written_one(struct mqfs_handle *h, struct mqfs_ino *ip,
			   uint64_t lblk, uint64_t end, uint64_t *next)
{
	union ext_entry piece[3];
	struct ext_level *leaf;
	struct mqfs_extent x;
	struct ext_path *p;
	unsigned i, n = 0, mid;
	uint64_t t;
	int err = ext_path_at(h->fs, ip, lblk, &p, &i);

	if (err)
		return err;
	leaf = &p->lv[p->nlev - 1];
	x = leaf->e[i].ext;
	t = MQ_MIN(end, ext_end(&x));
	if (lblk > x.lblk)
		piece[n++].ext = (struct mqfs_extent){
			x.lblk, x.pblk, (uint32_t)(lblk - x.lblk), x.flags };
	mid = n;
	piece[n++].ext = (struct mqfs_extent){
		lblk, x.pblk + (lblk - x.lblk), (uint32_t)(t - lblk),
		x.flags & ~(uint32_t)MQFS_EXT_UNWRITTEN };
	if (t < ext_end(&x))
		piece[n++].ext = (struct mqfs_extent){
			t, x.pblk + (t - x.lblk), (uint32_t)(ext_end(&x) - t),
			x.flags };
	ext_level_delete(leaf, i);
	for (unsigned j = 0; j < n; j++)
		ext_level_insert(leaf, i + j, &piece[j]);
	leaf->ins = (int)ext_leaf_merge(leaf, i + mid);
	err = ext_commit(h, p, 0);
	ext_path_free(p);
	*next = t;
	return err;
}

int mqfs_extent_mark_written(struct mqfs_handle *h, struct mqfs_ino *ip,
			     uint64_t lblk, uint32_t len)
{
	uint64_t end = lblk >= EXT_END ? lblk : MQ_MIN(lblk + len, EXT_END);
	struct ext_found f;
	int got;

	while (lblk < end &&
	       (got = ext_next_mapped(h, ip, &lblk, end, &f)) != 0) {
		if (got < 0)
			return got;
		if (!(f.ext.flags & MQFS_EXT_UNWRITTEN)) {
			lblk = ext_end(&f.ext);
			continue;
		}
		got = ext_written_one(h, ip, lblk, end, &lblk);
		if (got)
			return got;
	}
	return ext_shrink(h, ip);
}

/*
 * One insert or remove of a single extent, at the deepest tree allowed:
 * the path's blocks and the inode's table block; a split at every level
 * plus root growth (each new block with the allocator's buffers); the
 * data run freed; nodes emptied or pulled up into the root freed.
 */
unsigned mqfs_extent_credits(struct mqfs_fs *fs)
{
	unsigned path = EXT_MAX_DEPTH + 1;
	unsigned grow = (EXT_MAX_DEPTH + 1) * (1 + EXT_ALLOC_CREDITS);
	unsigned drop = EXT_MAX_DEPTH * EXT_ALLOC_CREDITS;

	(void)fs;
	return path + grow + drop + EXT_ALLOC_CREDITS;
}
