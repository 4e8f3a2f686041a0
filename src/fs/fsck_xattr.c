// SPDX-License-Identifier: MIT
/*
 * fsck_xattr.c - pass 4 for an inode's extended attributes: the chain of
 * xattr blocks from d.xattr_blk (FORMAT.md §9).  Every link must be a
 * valid MQFS_T_XATTR block nobody else claims, whose entries pass the
 * daemon's own rule (mqfs_xattr_why_bad): the chain is cut before the
 * first that is not.  Then every value split into fragments must be
 * whole (a broken one is removed, mqfs_xattr_fix_frags), the ACLs valid
 * (fsck_acl.c), and a block left with no entry leaves the chain.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fsck_i.h"

/* The chain as read: its blocks' numbers and bytes, in order. */
struct fk_xchain {
	uint64_t *blk;
	void **buf;
	bool *changed;
	unsigned n, cap;
};

struct fk_xreport {
	struct fsck *f;
	uint64_t ino;
};

static void fk_xchain_free(struct fk_xchain *c)
{
	for (unsigned i = 0; i < c->n; i++)
		free(c->buf[i]);
	free(c->blk);
	free(c->buf);
	free(c->changed);
}

static int fk_xchain_grow(struct fk_xchain *c)
{
	unsigned cap = c->cap ? 2 * c->cap : 8;
	uint64_t *blk = realloc(c->blk, cap * sizeof(*blk));
	void **buf;
	bool *changed;

	if (!blk)
		return -ENOMEM;
	c->blk = blk;
	buf = realloc(c->buf, cap * sizeof(*buf));
	if (!buf)
		return -ENOMEM;
	c->buf = buf;
	changed = realloc(c->changed, cap * sizeof(*changed));
	if (!changed)
		return -ENOMEM;
	c->changed = changed;
	c->cap = cap;
	return 0;
}

/* Why chain block @blk (read into @buf) cannot stay; *err: I/O error. */
static const char *fk_xblock_why_bad(struct fsck *f, uint64_t blk, void *buf,
				     int *err)
{
	if (!fk_data_range(f, blk, 1))
		return "is outside the data area";
	if (fk_used(f, blk))
		return "is already in use";
	*err = mqfs_fk_read_meta(f, blk, MQFS_T_XATTR, buf);
	if (*err == -EUCLEAN) {
		*err = 0;
		return "is bad";
	}
	return *err ? NULL : mqfs_xattr_why_bad(buf);
}

/* The chain ends before block @n (the inode holds none when @n is 0). */
static void fk_xchain_end(struct fk_xchain *c, unsigned n,
			  struct mqfs_inode *d, bool *dirty)
{
	if (n) {
		mqfs_xattr_set_next(c->buf[n - 1], 0);
		c->changed[n - 1] = true;
	} else {
		d->xattr_blk = 0;
		*dirty = true;
	}
}

/* Read the chain, cut before the first block that cannot be kept. */
static int fk_xchain_read(struct fsck *f, uint64_t ino, struct mqfs_inode *d,
			  struct fk_xchain *c, bool *dirty)
{
	uint64_t blk = d->xattr_blk;
	int err = 0;

	while (blk && !err) {
		const char *why;
		void *buf;

		if (c->n == c->cap && (err = fk_xchain_grow(c)))
			break;
		buf = mqfs_alloc_blocks_mem(1);
		if (!buf)
			return -ENOMEM;
		why = fk_xblock_why_bad(f, blk, buf, &err);
		if (why || err) {
			free(buf);
			if (why) {
				mqfs_fk_problem(f, FK_UNSAFE, "removed",
						"inode %llu: xattr block %llu "
						"%s, with the chain after it",
						(unsigned long long)ino,
						(unsigned long long)blk, why);
				fk_xchain_end(c, c->n, d, dirty);
			}
			break;
		}
		fk_set_used(f, blk, true);	/* a cycle finds it in use */
		c->blk[c->n] = blk;
		c->buf[c->n] = buf;
		c->changed[c->n++] = false;
		blk = mqfs_xattr_next(buf);
	}
	return err;
}

static void fk_xreport(void *arg, const char *name)
{
	struct fk_xreport *r = arg;

	mqfs_fk_problem(r->f, FK_UNSAFE, "removed", "inode %llu: xattr %s "
			"is not whole", (unsigned long long)r->ino, name);
}

static unsigned fk_xcount(const void *buf)
{
	return ((const struct mqfs_xattr_hdr *)((const char *)buf +
						 MQFS_HDR_SIZE))->count;
}

/* Drop the blocks left empty, link the others, write what changed. */
static int fk_xchain_write(struct fsck *f, struct mqfs_inode *d,
			   struct fk_xchain *c, bool *dirty, uint64_t *blocks)
{
	uint64_t next = 0;
	int err = 0;

	for (unsigned i = c->n; i-- > 0;) {
		if (!fk_xcount(c->buf[i])) {
			fk_set_used(f, c->blk[i], false);
			continue;
		}
		if (mqfs_xattr_next(c->buf[i]) != next) {
			mqfs_xattr_set_next(c->buf[i], next);
			c->changed[i] = true;
		}
		if (c->changed[i] && !err)
			err = mqfs_fk_write(f, c->blk[i], c->buf[i],
					    MQFS_T_XATTR);
		next = c->blk[i];
		(*blocks)++;
	}
	if (d->xattr_blk != next) {
		d->xattr_blk = next;
		*dirty = true;
	}
	return err;
}

int mqfs_fk_check_xattr(struct fsck *f, uint64_t ino, struct mqfs_inode *d,
			uint64_t *blocks, bool *dirty)
{
	struct fk_xreport r = { f, ino };
	struct fk_xchain c = { 0 };
	int err;

	if (!d->xattr_blk)
		return 0;
	err = fk_xchain_read(f, ino, d, &c, dirty);
	if (!err) {
		(void)mqfs_xattr_fix_frags(c.buf, c.n, c.changed, fk_xreport,
					   &r);
		for (unsigned i = 0; i < c.n; i++) {
			bool cut;

			(void)mqfs_fk_check_acls(f, ino, d, c.buf[i], dirty,
						 &cut);
			c.changed[i] |= cut;
		}
		err = fk_xchain_write(f, d, &c, dirty, blocks);
	}
	fk_xchain_free(&c);
	return err;
}

int mqfs_fk_xattr_each(struct fsck *f, const struct mqfs_inode *d,
		       void (*fn)(struct fsck *f, uint64_t blk))
{
	uint8_t *buf = mqfs_alloc_blocks_mem(1);
	uint64_t blk = d->xattr_blk;
	int err = 0;

	if (!buf)
		return -ENOMEM;
	while (blk && !err) {
		err = mqfs_fk_read_meta(f, blk, MQFS_T_XATTR, buf);
		if (!err) {
			fn(f, blk);
			blk = mqfs_xattr_next(buf);
		}
	}
	free(buf);
	return err;
}
