/* SPDX-License-Identifier: MIT */
/*
 * fsck_i.h - the checker's private state, shared by its files:
 *   fsck.c        driver, reporting, block access, journal (pass 2),
 *                 write-out
 *   fsck_ag.c     AG headers and bitmaps (pass 3), the computed bitmaps
 *                 and counts against them (pass 7)
 *   fsck_aginit.c the AG-init map and uninitialised AGs (lazy AGs)
 *   fsck_super.c  the superblock and its copies (pass 1)
 *   fsck_inode.c  inode tables and extent trees (pass 4), duplicates
 *   fsck_acl.c    the POSIX ACLs of an inode's xattr block (pass 4)
 *   fsck_dir.c    directories, links, orphans (passes 5 and 6)
 *   fsck_repair.c changes that allocate or free: inodes, lost+found
 *
 * fsck works on raw blocks through the queue, never through a mount, so
 * that any corruption is survivable.  Every repair is made first to an
 * in-memory copy of the block (struct fk_blk): later reads see it, so
 * the rest of the check runs on the repaired state, and nothing reaches
 * the device before the end, and only in a repair mode.
 */
#ifndef MQFS_FSCK_I_H
#define MQFS_FSCK_I_H

#include <stdbool.h>
#include <stdint.h>

#include "fs_i.h"

#define FK_HASH_BITS	14u		/* buckets of the changed blocks */

/* A block fsck has changed: sealed (or all zero), written at the end. */
struct fk_blk {
	uint64_t blocknr;
	struct fk_blk *next;		/* hash chain */
	uint8_t *data;			/* MQFS_BLOCK_SIZE, 4 KiB aligned */
};

/* One home block of the journal's transaction (the replay overlay). */
struct fk_jcopy {
	uint64_t home;
	uint8_t *data;
	size_t order;			/* position in the journal */
};

/* What fsck knows about one inode (struct fk_ino.flags). */
enum {
	FK_I_LIVE	= 1u << 0,	/* in use after pass 4's repairs */
	FK_I_REACHED	= 1u << 1,	/* found by the directory walk */
	FK_I_ORPHAN	= 1u << 2,	/* on the orphan list */
	FK_I_DIR	= 1u << 3,
	FK_I_QUEUED	= 1u << 4,	/* directory walk: queued */
	FK_I_TOUCHED	= 1u << 5,	/* allocated or freed by fsck itself */
};

struct fk_ino {
	uint16_t flags;			/* FK_I_* */
	uint8_t dtype;			/* DT_* of the mode */
	uint8_t unused;
	uint32_t nlink;			/* on disk */
	uint32_t links;			/* counted references */
};

/* Directories, in inode order (bsearch by ino). */
struct fk_dir {
	uint64_t ino;
	uint64_t parent;		/* d.parent on disk */
	uint64_t found;			/* the directory holding its entry */
};

/* An extent whose blocks were already claimed (pass 4, fixed after). */
struct fk_dup {
	uint64_t ino;
	uint64_t node;			/* extent block, 0: in the inode */
	uint32_t slot;			/* entry index in that node */
	bool done;			/* copied or dropped */
	struct mqfs_extent ext;
};

/* Per-AG damage found in pass 3 (struct fsck.ag_bad). */
enum {
	FK_AG_HDR	= 1u << 0,	/* AG header bad: rebuilt in pass 7 */
	FK_AG_BBITMAP	= 1u << 1,	/* block bitmap bad */
	FK_AG_IBITMAP	= 1u << 2,	/* inode bitmap bad: liveness from modes */
	FK_AG_UNINIT	= 1u << 3,	/* not initialised (lazy AGs): unread */
};

/*
 * What fsck itself allocated and freed in an AG (free blocks, free
 * inodes, directories gained): pass 7 tells these changes, which were
 * reported when made, from damage it has to report.
 */
struct fk_agdelta {
	int64_t free_blocks, free_inodes, dirs;
};

/* Problem kinds for mqfs_fk_problem(). */
enum fk_kind {
	FK_NOTE = 0,			/* information, not an error */
	FK_SAFE,			/* -p may fix it */
	FK_UNSAFE,			/* needs -y */
	FK_BAD,				/* cannot be fixed */
};

struct fsck {
	struct mq_queue *q;
	struct mqfs_fsck_opts o;
	bool repair;			/* -y or -p */
	uint64_t dev_blocks;
	struct mqfs_super *sb;		/* working copy (4 KiB block) */
	uint64_t gen;			/* header gen of blocks fsck seals */
	/* Geometry from the superblock (checked in pass 1). */
	struct mqfs_layout l;
	uint64_t inode_count;
	/* The journal's transaction, if valid (sorted by home). */
	struct fk_jcopy *jc;
	size_t njc;
	uint64_t jseq;
	bool journal_live;		/* a valid transaction is there */
	/* Blocks changed by repairs. */
	struct fk_blk **hash;
	size_t nhash, nchanged;
	/* Computed state. */
	uint64_t *used;			/* block bitmap, block_count bits */
	uint64_t *touched;		/* blocks fsck allocated or freed */
	struct fk_agdelta *agd;		/* per AG */
	struct fk_ino *ino;		/* [0 .. inode_count] */
	struct fk_dir *dirs;
	size_t ndirs, dirs_cap;
	struct fk_dup *dups;
	size_t ndups, dups_cap;
	uint8_t *ag_bad;		/* per AG: FK_AG_* */
	uint8_t *aginit;		/* the AG-init map as it must be */
	bool aginit_changed;		/* write it at the end */
	uint64_t lost_found;		/* 0: none (yet) */
	/* Results. */
	unsigned problems, unsafe, uncorrected, notes;
	bool sb_changed;		/* write the superblocks at the end */
	uint64_t next_gen;		/* above every live inode's gen. */
	bool backup_bad;
	bool sb_restored;		/* block 0 was bad: using the backup */
	uint8_t *sb_orig;		/* superblock as found (after replay) */
	uint64_t dirs_done;		/* pass 5 progress */
	/* Progress: this pass covers [pbase, pbase + pspan) percent. */
	int pct, pbase, pspan;
};

/* ---- fsck_super.c ------------------------------------------------------ */

/* Pass 1: f->sb from block 0 or a copy, the layout, f->gen; 0 or -errno. */
int mqfs_fk_pass_super(struct fsck *f);

/* ---- fsck_io.c --------------------------------------------------------- */

/* Report one finding (one line naming the structure); @fix is the repair
 * made in repair modes ("" for none). */
void mqfs_fk_problem(struct fsck *f, enum fk_kind kind, const char *fix,
		     const char *fmt,
		     ...) __attribute__((format(printf, 4, 5)));
void mqfs_fk_verbose(struct fsck *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void mqfs_fk_progress_pass(struct fsck *f, int base, int span);
void mqfs_fk_progress(struct fsck *f, uint64_t done, uint64_t total);

/* Read @n blocks from @blk as they stand after replay and repairs. */
int mqfs_fk_read(struct fsck *f, uint64_t blk, void *buf, uint32_t n);
/* Read the @n blocks @blks[] (anywhere) into @buf, all at once. */
int mqfs_fk_read_blocks(struct fsck *f, const uint64_t *blks, uint32_t n,
			void *buf);
/* Replace block @blk: sealed as @type, or raw when @type is 0. */
int mqfs_fk_write(struct fsck *f, uint64_t blk, void *buf, unsigned type);
/* Read block @blk and verify it as @type: 0, -EUCLEAN or -errno. */
int mqfs_fk_read_meta(struct fsck *f, uint64_t blk, unsigned type, void *buf);
bool mqfs_fk_all_zero(const void *buf, size_t len);
/* The journal's copy of home block @blk, or NULL. */
const struct fk_jcopy *mqfs_fk_jfind(const struct fsck *f, uint64_t blk);

/* Block bitmap of the computed state. */
static inline bool fk_used(const struct fsck *f, uint64_t blk)
{
	return (f->used[blk / 64] >> (blk % 64)) & 1;
}

static inline void fk_set_used(struct fsck *f, uint64_t blk, bool on)
{
	if (on)
		f->used[blk / 64] |= 1ull << (blk % 64);
	else
		f->used[blk / 64] &= ~(1ull << (blk % 64));
}

/* May fsck's own repairs use block @blk?  Not in an uninitialised AG. */
static inline bool fk_avail(const struct fsck *f, uint64_t blk)
{
	return !fk_used(f, blk) &&
	       !(f->ag_bad[blk / f->l.ag_blocks] & FK_AG_UNINIT);
}

/* Can [b, b+n) hold file data, tree or xattr blocks at all? */
static inline bool fk_data_range(const struct fsck *f, uint64_t b, uint64_t n)
{
	uint64_t first = f->l.journal_start + f->l.journal_blocks;

	return n && b >= first && b < f->l.block_count &&
	       n <= f->l.block_count - 1 - b;
}

/* fsck allocates (@used) or frees a block / an inode itself. */
void mqfs_fk_block_change(struct fsck *f, uint64_t blk, bool used);
void mqfs_fk_inode_change(struct fsck *f, uint64_t ino, bool live, bool dir);

/* Inode number -> AG, index, table block, slot. */
static inline uint32_t fk_ino_ag(const struct fsck *f, uint64_t ino)
{
	return (uint32_t)((ino - 1) / f->l.inodes_per_ag);
}

uint64_t mqfs_fk_itable_blk(const struct fsck *f, uint64_t ino);
static inline unsigned fk_ino_slot(const struct fsck *f, uint64_t ino)
{
	return (unsigned)((ino - 1) % f->l.inodes_per_ag %
			  MQFS_INODES_PER_BLOCK);
}

static inline bool fk_ino_valid(const struct fsck *f, uint64_t ino)
{
	return ino >= 1 && ino <= f->inode_count;
}

/* ---- fsck_ag.c --------------------------------------------------------- */

/* Why the AG header @h is wrong for AG @ag, or NULL. */
const char *mqfs_fk_ag_header_bad(const struct fsck *f, uint32_t ag,
				  const struct mqfs_ag *h);
/* Pass 3: every AG header and bitmap block; the fixed metadata in use. */
int mqfs_fk_pass_ags(struct fsck *f);
/* Pass 7: the computed bitmaps and counts to the disk where they differ. */
int mqfs_fk_pass_bitmaps(struct fsck *f);

/* ---- fsck_aginit.c ----------------------------------------------------- */

/* Pass 3: read the AG-init map, mark the uninitialised AGs. */
int mqfs_fk_aginit_load(struct fsck *f);
/*
 * Pass 7, uninitialised AG @ag: is anything in it in use?  Then it is
 * initialised (reported; pass 7 rebuilds its header and bitmaps).
 */
int mqfs_fk_uninit_check(struct fsck *f, uint32_t ag, bool *in_use);
/* End of pass 7: the map, if it changed. */
int mqfs_fk_aginit_write(struct fsck *f);

/* ---- fsck_inode.c ------------------------------------------------------ */

int mqfs_fk_pass_inodes(struct fsck *f);
int mqfs_fk_fix_dups(struct fsck *f);
int mqfs_fk_inode_read(struct fsck *f, uint64_t ino, struct mqfs_inode *d);
int mqfs_fk_inode_write(struct fsck *f, uint64_t ino,
			const struct mqfs_inode *d);
unsigned mqfs_fk_mode_dtype(uint16_t mode);
/*
 * Visit the data extents of an inode checked by pass 4 (and every tree
 * block with @ext NULL); @fn returns nonzero to stop.
 */
int mqfs_fk_extent_iter(struct fsck *f, const struct mqfs_inode *d,
			mqfs_extent_fn fn, void *ctx);
struct fk_dir *mqfs_fk_dir_find(struct fsck *f, uint64_t ino);

/* ---- fsck_acl.c -------------------------------------------------------- */

/*
 * The ACLs in inode @ino's valid xattr block @xblock: bad ones cut from
 * it (*cut), the mode following the access ACL (*dirty).  Returns the
 * entries the block has left.
 */
int mqfs_fk_check_acls(struct fsck *f, uint64_t ino, struct mqfs_inode *d,
		       void *xblock, bool *dirty, bool *cut);

/* ---- fsck_xattr.c ------------------------------------------------------ */

/*
 * Check inode @ino's chain of xattr blocks (*dirty when @d changed); its
 * blocks are counted in *blocks and marked used.
 */
int mqfs_fk_check_xattr(struct fsck *f, uint64_t ino, struct mqfs_inode *d,
			uint64_t *blocks, bool *dirty);
/* Call @fn on every block of @d's chain, as pass 4 left it. */
int mqfs_fk_xattr_each(struct fsck *f, const struct mqfs_inode *d,
		       void (*fn)(struct fsck *f, uint64_t blk));

/* ---- fsck_dir.c -------------------------------------------------------- */

int mqfs_fk_pass_dirs(struct fsck *f);
int mqfs_fk_pass_orphans(struct fsck *f);
int mqfs_fk_check_links(struct fsck *f);

/* ---- fsck_repair.c ----------------------------------------------------- */

/* Free an inode: release its blocks in the computed map, zero it. */
int mqfs_fk_free_inode(struct fsck *f, uint64_t ino);
/* First free block in the computed map from @goal (0 when none). */
uint64_t mqfs_fk_alloc_block(struct fsck *f, uint64_t goal, uint32_t want,
			     uint32_t *got);
uint64_t mqfs_fk_alloc_inode(struct fsck *f);
/* Add entry @name -> @ino to directory @dir (blocks from the computed
 * free map).  0, -ENOSPC, -EFBIG (no room for another extent), -errno. */
int mqfs_fk_dir_add(struct fsck *f, uint64_t dir, const char *name,
		    uint64_t ino, unsigned dtype);
/* Find or make /lost+found; 0 and f->lost_found set, or -errno. */
int mqfs_fk_lost_found(struct fsck *f);
/* Write an empty directory record @ino in @parent (not linked yet). */
int mqfs_fk_make_dir(struct fsck *f, uint64_t ino, uint64_t parent,
		     uint16_t mode);
/* The data extents of a checked inode, in order (free *v). */
int mqfs_fk_dir_extents(struct fsck *f, const struct mqfs_inode *d,
			struct mqfs_extent **v, size_t *n);

#endif /* MQFS_FSCK_I_H */
