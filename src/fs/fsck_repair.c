// SPDX-License-Identifier: MIT
/*
 * fsck_repair.c - repairs that allocate or free: freeing inodes, giving
 * a doubly claimed extent its own copy, adding directory entries and
 * /lost+found.
 *
 * Allocation uses the computed bitmaps (what the check found in use),
 * never the on-disk ones, which may be the very thing that is wrong.
 * Every allocation and free goes through mqfs_fk_block_change() /
 * mqfs_fk_inode_change(), so pass 7 knows which bitmap differences are
 * fsck's own doing.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "fsck_i.h"

#define FK_COPY_RUN	64u	/* blocks copied per I/O */

/* ---- allocation from the computed maps ------------------------------- */

uint64_t mqfs_fk_alloc_block(struct fsck *f, uint64_t goal, uint32_t want,
			     uint32_t *got)
{
	uint64_t first = f->l.journal_start + f->l.journal_blocks;
	uint64_t end = f->l.block_count - 1, best = 0;
	uint32_t best_len = 0;

	if (goal < first || goal >= end)
		goal = first;
	for (int pass = 0; pass < 2; pass++) {
		uint64_t b = pass ? first : goal, stop = pass ? goal : end;

		while (b < stop) {
			uint64_t s = b;

			if (!fk_avail(f, b)) {
				b++;
				continue;
			}
			while (b < end && fk_avail(f, b) && b - s < want)
				b++;
			if (b - s == want) {
				*got = want;
				return s;
			}
			if (b - s > best_len) {
				best = s;
				best_len = (uint32_t)(b - s);
			}
		}
	}
	*got = best_len;
	return best;
}

uint64_t mqfs_fk_alloc_inode(struct fsck *f)
{
	for (uint64_t ino = MQFS_ROOT_INO + 1; ino <= f->inode_count; ino++)
		if (!(f->ino[ino].flags & FK_I_LIVE) &&
		    !(f->ag_bad[fk_ino_ag(f, ino)] & FK_AG_UNINIT))
			return ino;
	return 0;
}

/* ---- freeing ---------------------------------------------------------- */

struct fk_release {
	struct fsck *f;
	uint64_t ino;
};

/* Is @x an extent of @ino whose blocks were found claimed already (so
 * they are another file's, not this one's to free)? */
static bool fk_is_pending_dup(const struct fsck *f, uint64_t ino,
			      const struct mqfs_extent *x)
{
	for (size_t i = 0; i < f->ndups; i++) {
		const struct fk_dup *u = &f->dups[i];

		if (!u->done && u->ino == ino && u->ext.lblk == x->lblk &&
		    u->ext.pblk == x->pblk && u->ext.len == x->len)
			return true;
	}
	return false;
}

static int fk_release_extent(void *ctx, const struct mqfs_extent *x,
			     uint64_t tree_blk)
{
	struct fk_release *r = ctx;

	if (!x) {
		mqfs_fk_block_change(r->f, tree_blk, false);
		return 0;
	}
	if (fk_is_pending_dup(r->f, r->ino, x))
		return 0;
	for (uint32_t i = 0; i < x->len; i++)
		mqfs_fk_block_change(r->f, x->pblk + i, false);
	return 0;
}

static void fk_release_xblock(struct fsck *f, uint64_t blk)
{
	mqfs_fk_block_change(f, blk, false);
}

int mqfs_fk_free_inode(struct fsck *f, uint64_t ino)
{
	struct fk_release r = { f, ino };
	struct mqfs_inode d;
	int err = mqfs_fk_inode_read(f, ino, &d);

	if (err)
		return err;
	err = mqfs_fk_extent_iter(f, &d, fk_release_extent, &r);
	if (err)
		return err;
	err = mqfs_fk_xattr_each(f, &d, fk_release_xblock);
	if (err)
		return err;
	memset(&d, 0, sizeof(d));
	err = mqfs_fk_inode_write(f, ino, &d);
	if (!err)
		mqfs_fk_inode_change(f, ino, false, false);
	return err;
}

/* ---- doubly claimed extents ------------------------------------------- */

/* Copy @len blocks from @from to @to through the changed-block set;
 * directory blocks are resealed for their new address. */
static int fk_copy_blocks(struct fsck *f, uint64_t from, uint64_t to,
			  uint32_t len, bool dir)
{
	uint8_t *buf = mqfs_alloc_blocks_mem(FK_COPY_RUN);
	int err = buf ? 0 : -ENOMEM;

	for (uint32_t i = 0; i < len && !err; ) {
		uint32_t n = len - i < FK_COPY_RUN ? len - i : FK_COPY_RUN;

		err = mqfs_fk_read(f, from + i, buf, n);
		for (uint32_t k = 0; k < n && !err; k++) {
			uint8_t *b = buf + (size_t)k * MQFS_BLOCK_SIZE;
			bool meta = dir && !mqfs_blk_verify(b, MQFS_T_DIR,
							     from + i + k);

			err = mqfs_fk_write(f, to + i + k, b,
					    meta ? MQFS_T_DIR : 0);
		}
		i += n;
	}
	free(buf);
	return err;
}

/* Index of dup @u's extent among @nr entries (found by its key, since
 * an earlier deletion may have moved it), or -1. */
static int fk_dup_slot(const struct fk_dup *u, const struct mqfs_extent *e,
		       unsigned nr)
{
	for (unsigned i = 0; i < nr; i++)
		if (e[i].lblk == u->ext.lblk && e[i].pblk == u->ext.pblk)
			return (int)i;
	return -1;
}

/* Repoint (@pblk) or delete (@pblk 0) the extent in @e[0..*nr). */
static int fk_dup_edit(const struct fk_dup *u, struct mqfs_extent *e,
		       unsigned *nr, uint64_t pblk)
{
	int i = fk_dup_slot(u, e, *nr);

	if (i < 0)
		return -EUCLEAN;
	if (pblk) {
		e[i].pblk = pblk;
		return 0;
	}
	memmove(&e[i], &e[i + 1], (*nr - (unsigned)i - 1) * sizeof(*e));
	memset(&e[--*nr], 0, sizeof(*e));
	return 0;
}

/* Extent of dup @u in the inode itself. */
static int fk_dup_update_root(struct fsck *f, const struct fk_dup *u,
			      uint64_t pblk)
{
	struct mqfs_inode d;
	struct mqfs_ext_node *n = (void *)d.u.root;
	unsigned nr = 0;
	int err = mqfs_fk_inode_read(f, u->ino, &d);

	if (err)
		return err;
	if (d.iflags & MQFS_IF_EXTENT_TREE) {
		nr = n->nr;
		err = fk_dup_edit(u, (void *)(n + 1), &nr, pblk);
		n->nr = (uint16_t)nr;
	} else {
		while (nr < MQFS_INLINE_EXTENTS && d.u.ext[nr].len)
			nr++;
		err = fk_dup_edit(u, d.u.ext, &nr, pblk);
	}
	if (err)
		return err;
	if (!pblk)
		d.blocks -= u->ext.len;
	return mqfs_fk_inode_write(f, u->ino, &d);
}

/*
 * Point dup @u's extent at @pblk, or delete it (@pblk 0; -ENOSPC when
 * that would leave a tree block empty).
 */
static int fk_dup_update(struct fsck *f, const struct fk_dup *u,
			 uint64_t pblk)
{
	struct mqfs_ext_node *n;
	struct mqfs_inode d;
	unsigned nr;
	uint8_t *buf;
	int err;

	if (!u->node)
		return fk_dup_update_root(f, u, pblk);
	buf = mqfs_alloc_blocks_mem(1);
	if (!buf)
		return -ENOMEM;
	err = mqfs_fk_read_meta(f, u->node, MQFS_T_EXTENT, buf);
	n = (void *)(buf + MQFS_HDR_SIZE);
	nr = n->nr;
	if (!err && !pblk && nr == 1)
		err = -ENOSPC;
	if (!err)
		err = fk_dup_edit(u, (void *)(n + 1), &nr, pblk);
	n->nr = (uint16_t)nr;
	if (!err)
		err = mqfs_fk_write(f, u->node, buf, MQFS_T_EXTENT);
	free(buf);
	if (!err && !pblk && !(err = mqfs_fk_inode_read(f, u->ino, &d))) {
		d.blocks -= u->ext.len;
		err = mqfs_fk_inode_write(f, u->ino, &d);
	}
	return err;
}

/* Give dup @u blocks of its own, or take the extent out of the file. */
static int fk_fix_dup(struct fsck *f, const struct fk_dup *u)
{
	const struct mqfs_extent *x = &u->ext;
	bool dir = f->ino[u->ino].flags & FK_I_DIR;
	uint32_t got;
	uint64_t to = mqfs_fk_alloc_block(f, x->pblk, x->len, &got);
	int err;

	if (to && got == x->len) {
		mqfs_fk_problem(f, FK_UNSAFE, "copied", "inode %llu: blocks "
				"%llu-%llu (file block %llu) also belong to "
				"another file", (unsigned long long)u->ino,
				(unsigned long long)x->pblk,
				(unsigned long long)(x->pblk + x->len - 1),
				(unsigned long long)x->lblk);
		for (uint32_t i = 0; i < x->len; i++)
			mqfs_fk_block_change(f, to + i, true);
		err = fk_copy_blocks(f, x->pblk, to, x->len, dir);
		return err ? err : fk_dup_update(f, u, to);
	}
	mqfs_fk_problem(f, FK_UNSAFE, "removed from the file (no space for a "
			"copy)", "inode %llu: blocks %llu-%llu (file block "
			"%llu) also belong to another file",
			(unsigned long long)u->ino, (unsigned long long)x->pblk,
			(unsigned long long)(x->pblk + x->len - 1),
			(unsigned long long)x->lblk);
	/* A directory may not have holes: it goes as a whole. */
	err = dir ? -ENOSPC : fk_dup_update(f, u, 0);
	if (err == -ENOSPC) {
		mqfs_fk_problem(f, FK_UNSAFE, "freed", "inode %llu: cannot "
				"drop its shared extent",
				(unsigned long long)u->ino);
		err = mqfs_fk_free_inode(f, u->ino);
	}
	return err;
}

int mqfs_fk_fix_dups(struct fsck *f)
{
	int err = 0;

	for (size_t i = 0; i < f->ndups && !err; i++) {
		if (f->ino[f->dups[i].ino].flags & FK_I_LIVE)
			err = fk_fix_dup(f, &f->dups[i]);
		f->dups[i].done = true;
	}
	return err;
}

/* ---- adding directory entries ------------------------------------------ */

static unsigned fk_rec_avail(const struct mqfs_dirent *de)
{
	return de->ino ? de->rec_len - MQFS_DIRENT_LEN(de->name_len)
		       : de->rec_len;
}

static void fk_rec_fill(uint8_t *blk, unsigned off, unsigned rec_len,
			const char *name, size_t len, uint64_t ino,
			unsigned dtype)
{
	struct mqfs_dirent *de = (void *)(blk + off);

	memset(de, 0, MQFS_DIRENT_LEN(len));
	de->ino = ino;
	de->rec_len = (uint16_t)rec_len;
	de->name_len = (uint8_t)len;
	de->type = (uint8_t)dtype;
	de->hash = (uint32_t)mqfs_hash(name, len);
	memcpy(de->name, name, len);
}

/* Put the entry into block @blk (checked by pass 5) if it has room. */
static bool fk_place(uint8_t *blk, const char *name, size_t len,
		     uint64_t ino, unsigned dtype)
{
	unsigned need = MQFS_DIRENT_LEN(len);

	for (unsigned off = MQFS_HDR_SIZE; off < MQFS_BLOCK_SIZE; ) {
		struct mqfs_dirent *de = (void *)(blk + off);
		unsigned used;

		if (de->rec_len < MQFS_DIRENT_HDR)
			return false;
		if (fk_rec_avail(de) >= need) {
			used = de->ino ? MQFS_DIRENT_LEN(de->name_len) : 0;
			fk_rec_fill(blk, off + used, de->rec_len - used, name,
				    len, ino, dtype);
			if (used)
				de->rec_len = (uint16_t)used;
			return true;
		}
		off += de->rec_len;
	}
	return false;
}

struct fk_dirmap {
	struct mqfs_extent *v;
	size_t n, cap;
	uint64_t last_tree;		/* the last tree block seen */
};

static int fk_collect(void *ctx, const struct mqfs_extent *x, uint64_t blk)
{
	struct fk_dirmap *m = ctx;

	if (!x) {
		m->last_tree = blk;
		return 0;
	}
	if (mqfs_array_reserve(&m->v, &m->cap, m->n, sizeof(*m->v), 8))
		return -ENOMEM;
	m->v[m->n++] = *x;
	return 0;
}

int mqfs_fk_dir_extents(struct fsck *f, const struct mqfs_inode *d,
			struct mqfs_extent **v, size_t *n)
{
	struct fk_dirmap m = { 0 };
	int err = mqfs_fk_extent_iter(f, d, fk_collect, &m);

	if (err) {
		free(m.v);
		return err;
	}
	*v = m.v;
	*n = m.n;
	return 0;
}

/* Extend @x (the last extent, ending at @pblk - 1) or append after it. */
static int fk_map_append_inline(struct mqfs_inode *d, uint64_t lblk,
				uint64_t pblk)
{
	unsigned nr = 0;

	while (nr < MQFS_INLINE_EXTENTS && d->u.ext[nr].len)
		nr++;
	if (nr) {
		struct mqfs_extent *x = &d->u.ext[nr - 1];

		if (x->lblk + x->len == lblk && x->pblk + x->len == pblk &&
		    !x->flags && x->len < UINT32_MAX) {
			x->len++;
			return 0;
		}
	}
	if (nr == MQFS_INLINE_EXTENTS)
		return -EFBIG;
	d->u.ext[nr] = (struct mqfs_extent){ .lblk = lblk, .pblk = pblk,
					     .len = 1 };
	return 0;
}

/* The same at the end of the last leaf of a tree (root depth >= 1). */
static int fk_map_append_tree(struct fsck *f, struct mqfs_inode *d,
			      uint64_t lblk, uint64_t pblk)
{
	struct mqfs_ext_node *n = (void *)d->u.root;
	uint8_t *buf = mqfs_alloc_blocks_mem(1);
	struct mqfs_ext_index *ix = (void *)(n + 1);
	uint64_t leaf = ix[n->nr - 1].child;
	struct mqfs_extent *e;
	int err = buf ? 0 : -ENOMEM;

	for (unsigned depth = n->depth; !err && depth > 1; depth--) {
		err = mqfs_fk_read_meta(f, leaf, MQFS_T_EXTENT, buf);
		if (!err) {
			struct mqfs_ext_node *c = (void *)(buf + MQFS_HDR_SIZE);

			leaf = ((struct mqfs_ext_index *)(c + 1))[c->nr - 1].child;
		}
	}
	if (!err)
		err = mqfs_fk_read_meta(f, leaf, MQFS_T_EXTENT, buf);
	if (!err) {
		n = (void *)(buf + MQFS_HDR_SIZE);
		e = (void *)(n + 1);
		if (e[n->nr - 1].lblk + e[n->nr - 1].len == lblk &&
		    e[n->nr - 1].pblk + e[n->nr - 1].len == pblk &&
		    !e[n->nr - 1].flags && e[n->nr - 1].len < UINT32_MAX)
			e[n->nr - 1].len++;
		else if (n->nr < MQFS_EXT_BLOCK_MAX)
			e[n->nr++] = (struct mqfs_extent){ lblk, pblk, 1, 0 };
		else
			err = -EFBIG;
	}
	if (!err)
		err = mqfs_fk_write(f, leaf, buf, MQFS_T_EXTENT);
	free(buf);
	return err;
}

/* Give directory @dir (record @d) one more block holding just the entry. */
static int fk_dir_grow(struct fsck *f, uint64_t dir, struct mqfs_inode *d,
		       uint64_t goal, const char *name, size_t len,
		       uint64_t ino, unsigned dtype)
{
	struct mqfs_ext_node *root = (void *)d->u.root;
	uint64_t lblk = d->size / MQFS_BLOCK_SIZE, pblk;
	uint8_t *blk;
	uint32_t got;
	int err;

	pblk = mqfs_fk_alloc_block(f, goal, 1, &got);
	if (!pblk || !got)
		return -ENOSPC;
	if (!(d->iflags & MQFS_IF_EXTENT_TREE))
		err = fk_map_append_inline(d, lblk, pblk);
	else if (root->depth && root->nr)
		err = fk_map_append_tree(f, d, lblk, pblk);
	else
		err = -EFBIG;
	if (err)
		return err;
	blk = mqfs_alloc_blocks_mem(1);
	if (!blk)
		return -ENOMEM;
	fk_rec_fill(blk, MQFS_HDR_SIZE, MQFS_BLOCK_SIZE - MQFS_HDR_SIZE, name,
		    len, ino, dtype);
	err = mqfs_fk_write(f, pblk, blk, MQFS_T_DIR);
	free(blk);
	if (err)
		return err;
	mqfs_fk_block_change(f, pblk, true);
	d->size += MQFS_BLOCK_SIZE;
	d->blocks++;
	return mqfs_fk_inode_write(f, dir, d);
}

int mqfs_fk_dir_add(struct fsck *f, uint64_t dir, const char *name,
		    uint64_t ino, unsigned dtype)
{
	size_t len = strlen(name), n = 0;
	struct mqfs_extent *v = NULL;
	uint64_t goal = 0;
	struct mqfs_inode d;
	uint8_t *blk = mqfs_alloc_blocks_mem(1);
	int err = blk ? mqfs_fk_inode_read(f, dir, &d) : -ENOMEM;

	if (!err)
		err = mqfs_fk_dir_extents(f, &d, &v, &n);
	for (size_t i = 0; !err && i < n; i++) {
		for (uint32_t k = 0; !err && k < v[i].len; k++) {
			uint64_t pblk = v[i].pblk + k;

			err = mqfs_fk_read_meta(f, pblk, MQFS_T_DIR, blk);
			if (!err && fk_place(blk, name, len, ino, dtype)) {
				err = mqfs_fk_write(f, pblk, blk, MQFS_T_DIR);
				goto out;
			}
			goal = pblk + 1;
		}
	}
	if (!err)
		err = fk_dir_grow(f, dir, &d, goal, name, len, ino, dtype);
out:
	free(v);
	free(blk);
	return err;
}

/* ---- /lost+found --------------------------------------------------------- */

struct fk_find {
	const char *name;
	size_t len;
	uint64_t ino;
};

/* Look @name up in the root directory (its blocks checked by pass 5). */
static int fk_root_lookup(struct fsck *f, struct fk_find *q)
{
	struct mqfs_extent *v = NULL;
	struct mqfs_inode d;
	uint8_t *blk = mqfs_alloc_blocks_mem(1);
	size_t n = 0;
	int err = blk ? mqfs_fk_inode_read(f, MQFS_ROOT_INO, &d) : -ENOMEM;

	if (!err)
		err = mqfs_fk_dir_extents(f, &d, &v, &n);
	for (size_t i = 0; !err && i < n && !q->ino; i++) {
		for (uint32_t k = 0; !err && k < v[i].len && !q->ino; k++) {
			err = mqfs_fk_read_meta(f, v[i].pblk + k, MQFS_T_DIR,
						blk);
			for (unsigned off = MQFS_HDR_SIZE; !err &&
			     off < MQFS_BLOCK_SIZE; ) {
				const struct mqfs_dirent *de = (void *)(blk + off);

				if (de->ino && de->name_len == q->len &&
				    !memcmp(de->name, q->name, q->len)) {
					q->ino = de->ino;
					break;
				}
				off += de->rec_len;
			}
		}
	}
	free(v);
	free(blk);
	return err;
}

/* Keep f->dirs sorted: insert @ino's record in place. */
static int fk_dir_insert(struct fsck *f, uint64_t ino, uint64_t parent)
{
	size_t i = f->ndirs;

	if (mqfs_array_reserve(&f->dirs, &f->dirs_cap, f->ndirs,
			       sizeof(*f->dirs), 256))
		return -ENOMEM;
	while (i && f->dirs[i - 1].ino > ino)
		i--;
	memmove(&f->dirs[i + 1], &f->dirs[i],
		(f->ndirs - i) * sizeof(*f->dirs));
	f->dirs[i] = (struct fk_dir){ .ino = ino, .parent = parent,
				      .found = parent };
	f->ndirs++;
	return 0;
}

/* Make an empty directory @ino (mode @mode) inside @parent's record. */
int mqfs_fk_make_dir(struct fsck *f, uint64_t ino, uint64_t parent,
		     uint16_t mode)
{
	struct mqfs_inode d = { 0 };
	struct fk_dir *fd = mqfs_fk_dir_find(f, ino);
	uint64_t now = (uint64_t)time(NULL);
	int err;

	d.mode = S_IFDIR | mode;
	d.nlink = 2;
	d.parent = parent;
	d.atime_sec = d.mtime_sec = d.ctime_sec = d.crtime_sec = now;
	d.generation = f->sb->inode_gen++;
	f->sb_changed = true;
	err = mqfs_fk_inode_write(f, ino, &d);
	if (err)
		return err;
	mqfs_fk_inode_change(f, ino, true, true);
	f->ino[ino].flags |= FK_I_REACHED;
	f->ino[ino].dtype = DT_DIR;
	f->ino[ino].nlink = 2;
	f->ino[ino].links = 0;
	if (fd) {
		fd->parent = fd->found = parent;
		return 0;
	}
	return fk_dir_insert(f, ino, parent);
}

int mqfs_fk_lost_found(struct fsck *f)
{
	struct fk_find q = { "lost+found", 10, 0 };
	struct mqfs_inode root;
	uint64_t ino;
	int err;

	if (f->lost_found)
		return 0;
	err = fk_root_lookup(f, &q);
	if (err)
		return err;
	if (q.ino) {
		if (!fk_ino_valid(f, q.ino) ||
		    (f->ino[q.ino].flags & (FK_I_LIVE | FK_I_DIR)) !=
		    (FK_I_LIVE | FK_I_DIR))
			return -EEXIST;
		f->lost_found = q.ino;
		return 0;
	}
	ino = mqfs_fk_alloc_inode(f);
	if (!ino)
		return -ENOSPC;
	err = mqfs_fk_make_dir(f, ino, MQFS_ROOT_INO, 0700);
	if (!err)
		err = mqfs_fk_dir_add(f, MQFS_ROOT_INO, "lost+found", ino,
				      DT_DIR);
	if (err) {
		mqfs_fk_free_inode(f, ino);
		return err;
	}
	/* The root gains a subdirectory: its nlink follows at once. */
	err = mqfs_fk_inode_read(f, MQFS_ROOT_INO, &root);
	if (!err) {
		root.nlink++;
		err = mqfs_fk_inode_write(f, MQFS_ROOT_INO, &root);
	}
	if (err)
		return err;
	f->ino[MQFS_ROOT_INO].nlink++;
	f->ino[MQFS_ROOT_INO].links++;
	f->lost_found = ino;
	mqfs_fk_verbose(f, "created /lost+found (inode %llu)",
			(unsigned long long)ino);
	return 0;
}
