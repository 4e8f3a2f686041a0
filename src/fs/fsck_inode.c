// SPDX-License-Identifier: MIT
/*
 * fsck_inode.c - pass 4: inode tables and extent trees.
 *
 * Every inode table block is read (in runs) and every live inode
 * checked: its mode, flags, extents (inline or a tree: checksums, node
 * headers, key order and bounds as extent.c keeps them), xattr chain
 * (fsck_xattr.c) and block count.  The blocks each inode claims go into the computed block
 * bitmap; a block claimed a second time is not marked again but its
 * extent is remembered, and mqfs_fk_fix_dups() gives that extent a copy of
 * its own once every claim is known.
 *
 * A damaged extent (or tree block) truncates the file where it starts:
 * the node holding it keeps the entries before it and every later entry
 * of every level is dropped, so what remains satisfies extent.c's
 * invariants and the dropped blocks simply stay out of the bitmap.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsck_i.h"

#define FK_ITABLE_RUN	64u	/* inode table blocks per read */
#define FK_EXT_DEPTH	5u	/* extent.c's EXT_MAX_DEPTH */
#define FK_NO_TRUNC	UINT64_MAX

union fk_entry {
	struct mqfs_extent ext;
	struct mqfs_ext_index idx;
};

/* One inode's extent walk in pass 4. */
struct fk_walk {
	struct fsck *f;
	uint64_t ino;
	bool dense;			/* directory: no holes, no unwritten */
	uint64_t end;			/* end of the last extent kept */
	uint64_t blocks;		/* data + tree blocks counted */
	uint64_t trunc;			/* FK_NO_TRUNC, or cut at this lblk */
	uint8_t *bufs[FK_EXT_DEPTH + 1];	/* one node buffer per level */
};

unsigned mqfs_fk_mode_dtype(uint16_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return DT_REG;
	case S_IFDIR: return DT_DIR;
	case S_IFLNK: return DT_LNK;
	case S_IFCHR: return DT_CHR;
	case S_IFBLK: return DT_BLK;
	case S_IFIFO: return DT_FIFO;
	case S_IFSOCK: return DT_SOCK;
	default: return DT_UNKNOWN;
	}
}

static bool fk_has_extents(const struct mqfs_inode *d)
{
	if (d->iflags & MQFS_IF_INLINE_DATA)
		return false;
	return S_ISREG(d->mode) || S_ISDIR(d->mode) || S_ISLNK(d->mode);
}

static bool fk_range_free(const struct fsck *f, uint64_t b, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		if (fk_used(f, b + i))
			return false;
	return true;
}

struct fk_dir *mqfs_fk_dir_find(struct fsck *f, uint64_t ino)
{
	size_t lo = 0, hi = f->ndirs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (f->dirs[mid].ino == ino)
			return &f->dirs[mid];
		if (f->dirs[mid].ino < ino)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int fk_dir_append(struct fsck *f, uint64_t ino, uint64_t parent)
{
	if (mqfs_array_reserve(&f->dirs, &f->dirs_cap, f->ndirs,
			       sizeof(*f->dirs), 256))
		return -ENOMEM;
	f->dirs[f->ndirs++] = (struct fk_dir){ .ino = ino, .parent = parent };
	return 0;
}

static int fk_dup_add(struct fsck *f, uint64_t ino, uint64_t node,
		      uint32_t slot, const struct mqfs_extent *x)
{
	if (mqfs_array_reserve(&f->dups, &f->dups_cap, f->ndups,
			       sizeof(*f->dups), 16))
		return -ENOMEM;
	f->dups[f->ndups++] = (struct fk_dup){ .ino = ino, .node = node,
					       .slot = slot, .ext = *x };
	return 0;
}

/* ---- inode records -------------------------------------------------- */

int mqfs_fk_inode_read(struct fsck *f, uint64_t ino, struct mqfs_inode *d)
{
	uint8_t *buf = mqfs_alloc_blocks_mem(1);
	uint64_t blk = mqfs_fk_itable_blk(f, ino);
	int err;

	if (!buf)
		return -ENOMEM;
	err = mqfs_fk_read(f, blk, buf, 1);
	if (!err && !mqfs_fk_all_zero(buf, MQFS_BLOCK_SIZE))
		err = mqfs_blk_verify(buf, MQFS_T_ITABLE, blk);
	if (!err)
		memcpy(d, buf + mqfs_itable_offset(fk_ino_slot(f, ino)),
		       sizeof(*d));
	free(buf);
	return err;
}

int mqfs_fk_inode_write(struct fsck *f, uint64_t ino,
			const struct mqfs_inode *d)
{
	uint8_t *buf = mqfs_alloc_blocks_mem(1);
	uint64_t blk = mqfs_fk_itable_blk(f, ino);
	int err;

	if (!buf)
		return -ENOMEM;
	err = mqfs_fk_read(f, blk, buf, 1);
	if (!err) {
		memcpy(buf + mqfs_itable_offset(fk_ino_slot(f, ino)), d,
		       sizeof(*d));
		err = mqfs_fk_write(f, blk, buf, MQFS_T_ITABLE);
	}
	free(buf);
	return err;
}

/* ---- walking checked extents (after pass 4) -------------------------- */

static int fk_iter_node(struct fsck *f, unsigned depth, unsigned nr,
			const union fk_entry *e, mqfs_extent_fn fn, void *ctx)
{
	uint8_t *buf = NULL;
	int ret = 0;

	for (unsigned i = 0; i < nr && !ret; i++) {
		const struct mqfs_ext_node *n;

		if (!depth) {
			ret = fn(ctx, &e[i].ext, 0);
			continue;
		}
		ret = fn(ctx, NULL, e[i].idx.child);
		if (ret)
			break;
		if (!buf && !(buf = mqfs_alloc_blocks_mem(1)))
			return -ENOMEM;
		ret = mqfs_fk_read_meta(f, e[i].idx.child, MQFS_T_EXTENT, buf);
		if (ret)
			break;
		n = (const void *)(buf + MQFS_HDR_SIZE);
		if (n->depth != depth - 1 || n->nr > MQFS_EXT_BLOCK_MAX) {
			ret = -EUCLEAN;
			break;
		}
		ret = fk_iter_node(f, depth - 1, n->nr, (const void *)(n + 1),
				   fn, ctx);
	}
	free(buf);
	return ret;
}

int mqfs_fk_extent_iter(struct fsck *f, const struct mqfs_inode *d,
			mqfs_extent_fn fn, void *ctx)
{
	const struct mqfs_ext_node *n = (const void *)d->u.root;
	unsigned nr = 0;

	if (!fk_has_extents(d))
		return 0;
	if (d->iflags & MQFS_IF_EXTENT_TREE) {
		if (n->depth > FK_EXT_DEPTH || n->nr > MQFS_ROOT_ENTRIES)
			return -EUCLEAN;
		return fk_iter_node(f, n->depth, n->nr, (const void *)(n + 1),
				    fn, ctx);
	}
	while (nr < MQFS_INLINE_EXTENTS && d->u.ext[nr].len)
		nr++;
	return fk_iter_node(f, 0, nr, (const void *)d->u.ext, fn, ctx);
}

/* ---- pass 4: checking extents ------------------------------------------ */

static void fk_cut(struct fk_walk *w, const char *where, uint64_t node,
		   unsigned slot, const char *why)
{
	w->trunc = w->end;
	if (node)
		mqfs_fk_problem(w->f, FK_UNSAFE, "truncated", "inode %llu: "
				"extent %s %llu entry %u %s; file cut at block "
				"%llu", (unsigned long long)w->ino, where,
				(unsigned long long)node, slot, why,
				(unsigned long long)w->end);
	else mqfs_fk_problem(w->f, FK_UNSAFE, "truncated", "inode %llu: extent "
			     "%s entry %u %s; file cut at block %llu",
			     (unsigned long long)w->ino, where, slot, why,
			     (unsigned long long)w->end);
}

/* Why leaf entry @x (keys in [prev_end, hi)) is wrong, or NULL. */
static const char *fk_leaf_bad(struct fk_walk *w, const struct mqfs_extent *x,
			       uint64_t hi)
{
	if (!x->len || x->flags & ~(uint32_t)MQFS_EXT_UNWRITTEN)
		return "is not a valid extent";
	if (x->lblk < w->end || x->lblk > hi || x->len > hi - x->lblk)
		return "is out of order";
	if (!fk_data_range(w->f, x->pblk, x->len))
		return "points outside the data area";
	if (w->dense && (x->lblk != w->end || x->flags))
		return "leaves a hole in the directory";
	return NULL;
}

/* Check leaf entries (keys in [lo, hi)); returns how many are kept. */
static int fk_walk_leaf(struct fk_walk *w, union fk_entry *e, unsigned nr,
			uint64_t lo, uint64_t hi, uint64_t node)
{
	for (unsigned i = 0; i < nr; i++) {
		const struct mqfs_extent *x = &e[i].ext;
		const char *why = x->lblk < lo ? "is out of order"
					       : fk_leaf_bad(w, x, hi);
		int err;

		if (why) {
			fk_cut(w, node ? "block" : "root", node, i, why);
			return (int)i;
		}
		if (fk_range_free(w->f, x->pblk, x->len)) {
			for (uint32_t b = 0; b < x->len; b++)
				fk_set_used(w->f, x->pblk + b, true);
		} else {
			err = fk_dup_add(w->f, w->ino, node, i, x);
			if (err)
				return err;
		}
		w->blocks += x->len;
		w->end = x->lblk + x->len;
	}
	return (int)nr;
}

static int fk_walk_node(struct fk_walk *w, union fk_entry *e, unsigned nr,
			unsigned depth, uint64_t lo, uint64_t hi,
			uint64_t node);

/* Read child @i of an index node; why it is unusable, or NULL. */
static const char *fk_open_child(struct fk_walk *w, const union fk_entry *e,
				 unsigned i, unsigned nr, unsigned depth,
				 uint64_t lo, uint64_t hi, int *err)
{
	const struct mqfs_ext_index *x = &e[i].idx;
	uint8_t *buf = w->bufs[depth - 1];
	const struct mqfs_ext_node *n = (const void *)(buf + MQFS_HDR_SIZE);

	*err = 0;
	if (x->lblk < lo || x->lblk >= hi || (i && x->lblk <= e[i - 1].idx.lblk))
		return "is out of order";
	if (!fk_data_range(w->f, x->child, 1))
		return "points outside the data area";
	if (fk_used(w->f, x->child))
		return "points at a block already in use";
	*err = mqfs_fk_read_meta(w->f, x->child, MQFS_T_EXTENT, buf);
	if (*err == -EUCLEAN) {
		*err = 0;
		return "points at a bad tree block";
	}
	if (*err)
		return "cannot be read";
	if (n->depth != depth - 1 || n->max != MQFS_EXT_BLOCK_MAX || !n->nr ||
	    n->nr > MQFS_EXT_BLOCK_MAX)
		return "points at a tree block with a bad header";
	(void)nr;
	return NULL;
}

/* Walk child @i; the child block is rewritten if its walk cut it. */
static int fk_walk_child(struct fk_walk *w, union fk_entry *e, unsigned i,
			 unsigned nr, unsigned depth, uint64_t hi)
{
	uint64_t child = e[i].idx.child;
	uint64_t chi = i + 1 < nr ? e[i + 1].idx.lblk : hi;
	uint8_t *buf = w->bufs[depth - 1];
	struct mqfs_ext_node *n = (void *)(buf + MQFS_HDR_SIZE);
	union fk_entry *ce = (void *)(n + 1);
	int kept;

	fk_set_used(w->f, child, true);
	w->blocks++;
	kept = fk_walk_node(w, ce, n->nr, depth - 1, e[i].idx.lblk, chi,
			    child);
	if (kept < 0 || kept == n->nr)
		return kept;
	if (!kept) {
		/* An empty node may not stay: drop it from the tree. */
		fk_set_used(w->f, child, false);
		w->blocks--;
		return 0;
	}
	memset(&ce[kept], 0, (n->nr - (unsigned)kept) * sizeof(*ce));
	n->nr = (uint16_t)kept;
	return mqfs_fk_write(w->f, child, buf, MQFS_T_EXTENT) ?: kept;
}

/* Check a node's entries (keys in [lo, hi)); returns how many stay. */
static int fk_walk_node(struct fk_walk *w, union fk_entry *e, unsigned nr,
			unsigned depth, uint64_t lo, uint64_t hi, uint64_t node)
{
	if (!depth)
		return fk_walk_leaf(w, e, nr, lo, hi, node);
	for (unsigned i = 0; i < nr; i++) {
		const char *why;
		int err, kept;

		why = fk_open_child(w, e, i, nr, depth, lo, hi, &err);
		if (err)
			return err;
		if (why) {
			fk_cut(w, node ? "block" : "root", node, i, why);
			return (int)i;
		}
		kept = fk_walk_child(w, e, i, nr, depth, hi);
		if (kept < 0)
			return kept;
		if (w->trunc != FK_NO_TRUNC)
			return kept ? (int)i + 1 : (int)i;
	}
	return (int)nr;
}

/* The inline extents: a prefix of non-empty entries, zeroes after. */
static int fk_walk_inline(struct fk_walk *w, struct mqfs_inode *d,
			  bool *dirty)
{
	union fk_entry *e = (void *)d->u.ext;
	unsigned nr = 0;
	int kept;

	while (nr < MQFS_INLINE_EXTENTS && d->u.ext[nr].len)
		nr++;
	if (!mqfs_fk_all_zero(&d->u.ext[nr], (MQFS_INLINE_EXTENTS - nr) *
			      sizeof(d->u.ext[0]))) {
		kept = fk_walk_node(w, e, nr, 0, 0, MQFS_MAX_FILE_BLOCKS, 0);
		if (kept < 0)
			return kept;
		if (w->trunc == FK_NO_TRUNC)
			fk_cut(w, "root", 0, (unsigned)kept,
			       "is followed by stray entries");
	} else {
		kept = fk_walk_node(w, e, nr, 0, 0, MQFS_MAX_FILE_BLOCKS, 0);
		if (kept < 0 || (unsigned)kept == nr)
			return kept < 0 ? kept : 0;
	}
	memset(&d->u.ext[kept], 0,
	       (MQFS_INLINE_EXTENTS - (unsigned)kept) * sizeof(d->u.ext[0]));
	*dirty = true;
	return 0;
}

static int fk_walk_tree(struct fk_walk *w, struct mqfs_inode *d, bool *dirty)
{
	struct mqfs_ext_node *n = (void *)d->u.root;
	union fk_entry *e = (void *)(n + 1);
	int kept;

	if (n->max != MQFS_ROOT_ENTRIES || n->depth > FK_EXT_DEPTH ||
	    n->nr > MQFS_ROOT_ENTRIES) {
		fk_cut(w, "root", 0, 0, "has a bad header");
		kept = 0;
	} else {
		kept = fk_walk_node(w, e, n->nr, n->depth, 0,
				    MQFS_MAX_FILE_BLOCKS, 0);
		if (kept < 0 || kept == n->nr)
			return kept < 0 ? kept : 0;
	}
	*dirty = true;
	if (!kept) {
		memset(d->u.root, 0, sizeof(d->u.root));
		d->iflags &= (uint16_t)~MQFS_IF_EXTENT_TREE;
		return 0;
	}
	memset(&e[kept], 0, (n->nr - (unsigned)kept) * sizeof(*e));
	n->nr = (uint16_t)kept;
	return 0;
}

/* Walk @d's extents; *blocks gets the data and tree blocks counted. */
static int fk_check_extents(struct fsck *f, uint64_t ino,
			    struct mqfs_inode *d, uint64_t *blocks,
			    bool *dirty, bool *cut)
{
	struct fk_walk w = { .f = f, .ino = ino, .trunc = FK_NO_TRUNC,
			     .dense = S_ISDIR(d->mode) };
	int err = 0;

	for (unsigned i = 0; i <= FK_EXT_DEPTH && !err; i++)
		if (!(w.bufs[i] = mqfs_alloc_blocks_mem(1)))
			err = -ENOMEM;
	if (!err)
		err = d->iflags & MQFS_IF_EXTENT_TREE ? fk_walk_tree(&w, d,
				dirty) : fk_walk_inline(&w, d, dirty);
	for (unsigned i = 0; i <= FK_EXT_DEPTH; i++)
		free(w.bufs[i]);
	if (err)
		return err;
	*blocks = w.blocks;
	*cut = w.trunc != FK_NO_TRUNC;
	if (S_ISREG(d->mode) && d->size > MQFS_MAX_FILE_BYTES) {
		mqfs_fk_problem(f, FK_SAFE, "fixed", "inode %llu: size %llu is "
				"beyond the largest file; set to %llu",
				(unsigned long long)ino,
				(unsigned long long)d->size,
				(unsigned long long)(w.end * MQFS_BLOCK_SIZE));
		d->size = w.end * MQFS_BLOCK_SIZE;
		*dirty = true;
	}
	if (S_ISDIR(d->mode) && d->size != w.end * MQFS_BLOCK_SIZE) {
		if (w.trunc == FK_NO_TRUNC)
			mqfs_fk_problem(f, FK_SAFE, "fixed", "inode %llu: "
				"directory size %llu, its blocks hold %llu",
				(unsigned long long)ino,
				(unsigned long long)d->size,
				(unsigned long long)(w.end * MQFS_BLOCK_SIZE));
		d->size = w.end * MQFS_BLOCK_SIZE;
		*dirty = true;
	} else if (w.trunc != FK_NO_TRUNC &&
		   d->size > w.trunc * MQFS_BLOCK_SIZE) {
		d->size = w.trunc * MQFS_BLOCK_SIZE;
	}
	return 0;
}

/* ---- pass 4: one inode ------------------------------------------------- */

/* Why @d cannot be kept at all, or NULL. */
/* Devices, FIFOs and sockets own no blocks. */
static void fk_check_special(struct fsck *f, uint64_t ino,
			     struct mqfs_inode *d, bool *dirty)
{
	if (fk_has_extents(d) ||
	    (mqfs_fk_all_zero(d->u.root, sizeof(d->u.root)) && !d->iflags &&
	     !d->size))
		return;
	mqfs_fk_problem(f, FK_UNSAFE, "cleared", "inode %llu: special file "
			"with data or extents", (unsigned long long)ino);
	memset(d->u.root, 0, sizeof(d->u.root));
	d->iflags = 0;
	d->size = 0;
	*dirty = true;
}

static void fk_unmark(struct fsck *f, uint64_t blk)
{
	fk_set_used(f, blk, false);
}

/* Check live inode @ino in place; *dirty when the record changed. */
static int fk_check_inode(struct fsck *f, uint64_t ino, struct mqfs_inode *d,
			  bool *dirty)
{
	const char *why = mqfs_inode_why_bad(d);	/* the daemon's rule */
	uint64_t blocks = 0, xblocks = 0;
	bool cut = false;
	int err;

	if (why) {
		mqfs_fk_problem(f, FK_UNSAFE, "cleared", "inode %llu: %s (mode "
				"0%o)", (unsigned long long)ino, why, d->mode);
		memset(d, 0, sizeof(*d));
		*dirty = true;
		return 0;
	}
	if (!mqfs_inode_size_ok(d)) {
		/* Keep the data: a size at the limit loses nothing. */
		mqfs_fk_problem(f, FK_UNSAFE, "set to the limit", "inode %llu: "
				"size %llu is past the largest file",
				(unsigned long long)ino,
				(unsigned long long)d->size);
		d->size = MQFS_MAX_FILE_BYTES;
		*dirty = true;
	}
	if (fk_has_extents(d))
		err = fk_check_extents(f, ino, d, &blocks, dirty, &cut);
	else
		err = 0;
	if (!err && !S_ISREG(d->mode) && !S_ISDIR(d->mode) && !S_ISLNK(d->mode))
		fk_check_special(f, ino, d, dirty);
	if (!err)
		err = mqfs_fk_check_xattr(f, ino, d, &xblocks, dirty);
	if (err)
		return err;
	if (S_ISLNK(d->mode) && !(d->iflags & MQFS_IF_INLINE_DATA) &&
	    !blocks) {
		mqfs_fk_problem(f, FK_UNSAFE, "cleared", "inode %llu: symlink "
				"without a target block",
				(unsigned long long)ino);
		if (xblocks)
			(void)mqfs_fk_xattr_each(f, d, fk_unmark);
		memset(d, 0, sizeof(*d));
		*dirty = true;
		return 0;
	}
	blocks += xblocks;
	if (d->blocks != blocks) {
		/* After a cut the count follows silently: reported there. */
		if (!cut)
			mqfs_fk_problem(f, FK_SAFE, "fixed", "inode %llu: "
					"block count %llu, counted %llu",
					(unsigned long long)ino,
					(unsigned long long)d->blocks,
					(unsigned long long)blocks);
		d->blocks = blocks;
		*dirty = true;
	}
	return 0;
}

/* Record a live inode in the computed state. */
static int fk_note_live(struct fsck *f, uint64_t ino,
			const struct mqfs_inode *d)
{
	struct fk_ino *fi = &f->ino[ino];

	fi->flags = FK_I_LIVE | (S_ISDIR(d->mode) ? FK_I_DIR : 0);
	fi->dtype = (uint8_t)mqfs_fk_mode_dtype(d->mode);
	fi->nlink = d->nlink;
	if (d->generation >= f->next_gen)
		f->next_gen = d->generation + 1;
	return S_ISDIR(d->mode) ? fk_dir_append(f, ino, d->parent) : 0;
}

static bool fk_ibit(const uint8_t *ibm, uint32_t i)
{
	return (ibm[MQFS_HDR_SIZE + i / 8] >> (i % 8)) & 1;
}

/* One inode table block (@data) of AG @ag holding index @first on. */
static int fk_scan_itable(struct fsck *f, uint32_t ag, uint64_t blk,
			  uint8_t *data, uint32_t first, const uint8_t *ibm)
{
	uint64_t base = (uint64_t)ag * f->l.inodes_per_ag + first + 1;
	bool dirty = false;
	int err = 0;

	if (mqfs_fk_all_zero(data, MQFS_BLOCK_SIZE))
		return 0;	/* never written: all inodes free */
	if (mqfs_blk_verify(data, MQFS_T_ITABLE, blk)) {
		mqfs_fk_problem(f, FK_UNSAFE, "zeroed; its inodes are lost",
			"inode table block %llu (inodes %llu-%llu): bad "
			"checksum or header", (unsigned long long)blk,
			(unsigned long long)base,
			(unsigned long long)(base + MQFS_INODES_PER_BLOCK - 1));
		memset(data, 0, MQFS_BLOCK_SIZE);
		return mqfs_fk_write(f, blk, data, 0);
	}
	for (unsigned s = 0; s < MQFS_INODES_PER_BLOCK && !err; s++) {
		struct mqfs_inode *d = (void *)(data + mqfs_itable_offset(s));
		uint64_t ino = base + s;
		bool live = ibm ? fk_ibit(ibm, first + s) : d->mode != 0;

		if (!live) {
			if (d->mode)
				mqfs_fk_problem(f, FK_NOTE, NULL, "inode %llu: "
						"free but has mode 0%o",
						(unsigned long long)ino,
						d->mode);
			continue;
		}
		if (!d->mode)
			continue;	/* pass 7 clears its bitmap bit */
		err = fk_check_inode(f, ino, d, &dirty);
		if (!err && d->mode)
			err = fk_note_live(f, ino, d);
	}
	if (!err && dirty)
		err = mqfs_fk_write(f, blk, data, MQFS_T_ITABLE);
	return err;
}

static int fk_scan_ag(struct fsck *f, uint32_t ag, uint8_t *run,
		      uint8_t *ibm, uint64_t *done)
{
	uint64_t itable = mqfs_ag_meta_start(&f->l, ag) + 3;
	const uint8_t *bits = ibm;
	int err = 0;

	if (f->ag_bad[ag] & FK_AG_UNINIT) {
		*done += f->l.itable_blocks;	/* no inode lives there */
		return 0;
	}
	if (f->ag_bad[ag] & FK_AG_IBITMAP)
		bits = NULL;	/* unreadable: a nonzero mode means live */
	else if ((err = mqfs_fk_read(f, itable - 1, ibm, 1)))
		return err;
	for (uint32_t b = 0; b < f->l.itable_blocks && !err; ) {
		uint32_t n = f->l.itable_blocks - b;

		if (n > FK_ITABLE_RUN)
			n = FK_ITABLE_RUN;
		err = mqfs_fk_read(f, itable + b, run, n);
		for (uint32_t i = 0; i < n && !err; i++)
			err = fk_scan_itable(f, ag, itable + b + i,
					     run + (size_t)i * MQFS_BLOCK_SIZE,
					     (b + i) * MQFS_INODES_PER_BLOCK,
					     bits);
		b += n;
		*done += n;
		mqfs_fk_progress(f, *done, (uint64_t)f->l.ag_count *
				 f->l.itable_blocks);
	}
	return err;
}

/*
 * The next inode's generation must be new: a file handle of a deleted
 * file names its number and generation, and a new file with both would
 * open in its place (FORMAT.md §6).
 */
static void fk_check_next_gen(struct fsck *f)
{
	if (f->sb->inode_gen >= f->next_gen)
		return;
	mqfs_fk_problem(f, FK_SAFE, "fixed", "superblock: next inode "
			"generation %llu, but inodes have up to %llu",
			(unsigned long long)f->sb->inode_gen,
			(unsigned long long)(f->next_gen - 1));
	f->sb->inode_gen = f->next_gen;
	f->sb_changed = true;
}

int mqfs_fk_pass_inodes(struct fsck *f)
{
	uint8_t *run = mqfs_alloc_blocks_mem(FK_ITABLE_RUN);
	uint8_t *ibm = mqfs_alloc_blocks_mem(1);
	uint64_t done = 0;
	int err = 0;

	if (!run || !ibm)
		err = -ENOMEM;
	mqfs_fk_verbose(f, "Pass 4: inodes and extents");
	mqfs_fk_progress_pass(f, 5, 70);
	for (uint32_t ag = 0; ag < f->l.ag_count && !err; ag++)
		err = fk_scan_ag(f, ag, run, ibm, &done);
	free(run);
	free(ibm);
	if (!err)
		fk_check_next_gen(f);
	return err;
}
