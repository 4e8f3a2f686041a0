// SPDX-License-Identifier: MIT
/*
 * xattr_chain.c - where an inode's extended attributes live: a chain of
 * MQFS_T_XATTR blocks from d.xattr_blk, each linked to the next by its
 * last 8 bytes, and values too large for one entry split into fragments
 * that fill blocks of their own (FORMAT.md §9).  xattr.c gives the
 * attributes their meaning; this file only stores them.
 *
 * One block, as before chains, stays in the old layout (no link), so an
 * image that never needs more stays readable by an older mqfs; the
 * first link or fragment sets INCOMPAT_XATTR_CHAIN in the same handle.
 * New blocks go at the head of the chain: a fragmented value's blocks
 * are put there together, its fragments in chain order, and a block
 * that empties is unlinked and freed rather than written.  A whole
 * value goes into the first block with room for it.
 *
 * Locking: ip->lock shared to read, exclusive to change; one buffer
 * lock at a time, around every look at a block's bytes.  d.blocks counts
 * every block of the chain, as ext4's i_blocks counts its xattr block.
 */
#include <errno.h>
#include <string.h>
#include <sys/xattr.h>

#include "mqfs/compiler.h"
#include "acl_i.h"
#include "fs_i.h"

#define XA_BASE		(MQFS_HDR_SIZE + sizeof(struct mqfs_xattr_hdr))
#define XA_ENT_LEN(nl, vl) \
	((MQFS_XATTR_ENTRY_HDR + (nl) + (vl) + 3u) & ~3u)
#define XA_FRAG_INDEX(e)	((e)->frag & MQFS_XATTR_FRAG_INDEX)
#define XA_FRAGS_MAX		(MQFS_XATTR_FRAG_INDEX + 1u)

/* The packed entry of format.h; @name is followed by the value. */
struct xa_ent {
	uint8_t name_len;
	uint8_t frag;
	uint16_t value_len;
	char name[];
};
_Static_assert(sizeof(struct xa_ent) == MQFS_XATTR_ENTRY_HDR, "xa_ent");

/* ---- one block's bytes -------------------------------------------------- */

static struct mqfs_xattr_hdr *xa_hdr(const void *data)
{
	return (struct mqfs_xattr_hdr *)((char *)data + MQFS_HDR_SIZE);
}

/* Entry at byte @off of the entry area. */
static struct xa_ent *xa_ent(const void *data, unsigned off)
{
	return (struct xa_ent *)((char *)data + XA_BASE + off);
}

static unsigned xa_len(const struct xa_ent *e)
{
	return XA_ENT_LEN(e->name_len, e->value_len);
}

static unsigned xa_space(const void *data)
{
	return xa_hdr(data)->flags & MQFS_XATTR_F_NEXT ?
	       MQFS_XATTR_LINK_SPACE : MQFS_XATTR_SPACE;
}

uint64_t mqfs_xattr_next(const void *data)
{
	uint64_t next = 0;

	if (xa_hdr(data)->flags & MQFS_XATTR_F_NEXT)
		memcpy(&next, (const char *)data + MQFS_XATTR_NEXT_OFF,
		       sizeof(next));
	return next;
}

void mqfs_xattr_set_next(void *data, uint64_t next)
{
	xa_hdr(data)->flags |= MQFS_XATTR_F_NEXT;
	memcpy((char *)data + MQFS_XATTR_NEXT_OFF, &next, sizeof(next));
}

static bool xa_is(const struct xa_ent *e, const char *name, size_t len)
{
	return e->name_len == len && !memcmp(e->name, name, len);
}

/*
 * Do the header and the entries agree?  (The checksum was verified.)
 * Pure, on the block's bytes: fsck applies the same rule, so a block
 * the daemon refuses is one fsck repairs.
 */
const char *mqfs_xattr_why_bad(const void *data)
{
	const struct mqfs_xattr_hdr *xh = xa_hdr(data);
	unsigned off = 0, i;

	if (xh->flags & ~MQFS_XATTR_F_NEXT)
		return "has unknown flags";
	if (!xh->count || xh->used > xa_space(data))
		return "has impossible counts";
	for (i = 0; i < xh->count; i++) {
		const struct xa_ent *e = xa_ent(data, off);

		if (off + MQFS_XATTR_ENTRY_HDR > xh->used)
			return "has fewer entries than it counts";
		if (!e->name_len || off + xa_len(e) > xh->used)
			return "has an entry that runs past its end";
		if (e->frag & ~(MQFS_XATTR_FRAG_INDEX | MQFS_XATTR_FRAG_MORE))
			return "has an entry with unknown fragment bits";
		off += xa_len(e);
	}
	return off == xh->used ? NULL : "has more bytes than its entries";
}

static void xa_append(void *data, const char *name, size_t len,
		      const void *value, size_t size, uint8_t frag)
{
	struct mqfs_xattr_hdr *xh = xa_hdr(data);
	struct xa_ent *e = xa_ent(data, xh->used);
	unsigned elen = XA_ENT_LEN(len, size);

	e->name_len = (uint8_t)len;
	e->frag = frag;
	e->value_len = (uint16_t)size;
	memcpy(e->name, name, len);
	if (size)
		memcpy(e->name + len, value, size);
	memset(e->name + len + size, 0,
	       elen - MQFS_XATTR_ENTRY_HDR - len - size);
	xh->used += elen;
	xh->count++;
}

static void xa_delete(void *data, unsigned off)
{
	struct mqfs_xattr_hdr *xh = xa_hdr(data);
	unsigned elen = xa_len(xa_ent(data, off));
	char *at = (char *)xa_ent(data, off);

	memmove(at, at + elen, xh->used - off - elen);
	xh->used -= elen;
	xh->count--;
	memset((char *)xa_ent(data, xh->used), 0, elen);
}

/* The whole value of @name in the (valid) block @data: its entry's offset. */
int mqfs_xattr_lookup(void *data, const char *name, const void **value,
		      size_t *size)
{
	const struct mqfs_xattr_hdr *xh = xa_hdr(data);
	size_t len = strlen(name);

	for (unsigned off = 0; off < xh->used; off += xa_len(xa_ent(data, off))) {
		const struct xa_ent *e = xa_ent(data, off);

		if (!e->frag && xa_is(e, name, len)) {
			*value = e->name + e->name_len;
			*size = e->value_len;
			return (int)off;
		}
	}
	return -ENODATA;
}

/* Remove the entry at @off of @data (fsck: the daemon has its own path). */
unsigned mqfs_xattr_cut(void *data, unsigned off)
{
	xa_delete(data, off);
	return xa_hdr(data)->count;
}

/* The fragments a value of @size under a name of @len bytes takes. */
static unsigned xa_frag_bytes(size_t len)
{
	return (MQFS_XATTR_LINK_SPACE - MQFS_XATTR_ENTRY_HDR - (unsigned)len) &
	       ~3u;
}

unsigned mqfs_xattr_frags(size_t len, size_t size)
{
	if (XA_ENT_LEN(len, size) <= MQFS_XATTR_LINK_SPACE)
		return 1;
	return (unsigned)((size + xa_frag_bytes(len) - 1) / xa_frag_bytes(len));
}

/* ---- walking the chain -------------------------------------------------- */

/* A place in @ip's chain: block @blk (its buffer locked), after @prev. */
struct xa_cur {
	struct mqfs_fs *fs;
	struct mqfs_ino *ip;
	uint64_t prev;			/* 0: @blk is the head */
	uint64_t blk;
	uint64_t steps;			/* a cycle would pass d.blocks */
	struct mqfs_buf *b;
};

static int xa_corrupt(struct xa_cur *c, const char *why)
{
	mqfs_fs_error(c->fs, c->blk, "xattr: inode %llu: block %llu %s",
		      (unsigned long long)c->ip->ino,
		      (unsigned long long)c->blk, why);
	return -EUCLEAN;
}

static void xa_release(struct xa_cur *c)
{
	if (!c->b)
		return;
	mqfs_buf_unlock(c->b);
	mqfs_buf_put(c->b);
	c->b = NULL;
}

/* Read, lock and check c->blk: 0, 1 at the chain's end, or -errno. */
static int xa_load(struct xa_cur *c)
{
	const char *why;
	uint64_t next;
	int err;

	if (!c->blk)
		return 1;
	if (++c->steps > c->ip->d.blocks)
		return xa_corrupt(c, "is in a chain longer than the inode");
	err = mqfs_buf_read(c->fs, c->blk, MQFS_T_XATTR, &c->b);
	if (err)
		return err;
	mqfs_buf_lock(c->b);
	why = mqfs_xattr_why_bad(c->b->data);
	next = mqfs_xattr_next(c->b->data);
	if (!why && (next >= c->fs->block_count || next == c->blk))
		why = "links to an impossible block";
	if (why) {
		xa_release(c);
		return xa_corrupt(c, why);
	}
	return 0;
}

static int xa_first(struct xa_cur *c, struct mqfs_fs *fs,
		    struct mqfs_ino *ip)
{
	*c = (struct xa_cur){ .fs = fs, .ip = ip, .blk = ip->d.xattr_blk };
	return xa_load(c);
}

static int xa_advance(struct xa_cur *c)
{
	uint64_t next = mqfs_xattr_next(c->b->data);

	xa_release(c);
	c->prev = c->blk;
	c->blk = next;
	return xa_load(c);
}

static void xa_set_head(struct mqfs_ino *ip, uint64_t blk, int64_t blocks)
{
	pthread_mutex_lock(&ip->meta_lock);	/* mqfs_inode_stat reads it */
	ip->d.xattr_blk = blk;
	ip->d.blocks += (uint64_t)blocks;
	pthread_mutex_unlock(&ip->meta_lock);
}

/*
 * c->blk is about to hold nothing: unlink it (its bytes left alone, so
 * no copy of a freed block reaches the journal), free it and go on to
 * the block after it.
 */
static int xa_unlink(struct xa_cur *c, struct mqfs_handle *h)
{
	uint64_t gone = c->blk, next = mqfs_xattr_next(c->b->data);
	struct mqfs_buf *pb;
	int err = 0;

	xa_release(c);
	if (!c->prev) {
		xa_set_head(c->ip, next, 0);
	} else if (!(err = mqfs_buf_read(c->fs, c->prev, MQFS_T_XATTR, &pb))) {
		mqfs_buf_lock(pb);
		mqfs_xattr_set_next(pb->data, next);
		mqfs_trans_dirty(h, pb);
		mqfs_buf_unlock(pb);
		mqfs_buf_put(pb);
	}
	if (!err)
		err = mqfs_free_blocks(h, gone, 1);
	if (err)
		return err;
	mqfs_buf_forget(c->fs, gone);
	xa_set_head(c->ip, c->ip->d.xattr_blk, c->ip->d.blocks ? -1 : 0);
	c->steps--;		/* it no longer counts in d.blocks */
	c->blk = next;
	return xa_load(c);
}

/* ---- reading ------------------------------------------------------------ */

/* Called on each entry in chain order: nonzero stops the walk. */
typedef int (*xa_visit_fn)(struct xa_cur *c, const struct xa_ent *e,
			   void *arg);

/* @fn on every entry: what stopped it, else 0 at the end, or -errno. */
static int xa_each(struct mqfs_fs *fs, struct mqfs_ino *ip, xa_visit_fn fn,
		   void *arg)
{
	struct xa_cur c;
	int err = xa_first(&c, fs, ip), stop = 0;

	while (!err && !stop) {
		const struct mqfs_xattr_hdr *xh = xa_hdr(c.b->data);

		for (unsigned off = 0; !stop && off < xh->used;
		     off += xa_len(xa_ent(c.b->data, off)))
			stop = fn(&c, xa_ent(c.b->data, off), arg);
		if (!stop)
			err = xa_advance(&c);
	}
	xa_release(&c);
	return stop ? stop : (err < 0 ? err : 0);
}

/* One value being read: its pieces checked, counted and copied. */
struct xa_get {
	const char *name;
	size_t len;
	char *value;
	size_t size, total;
	unsigned want;			/* the next fragment's index */
	uint64_t last;			/* the block of the last piece */
};

static int xa_take(struct xa_cur *c, const struct xa_ent *e, void *arg)
{
	struct xa_get *g = arg;

	if (!xa_is(e, g->name, g->len))
		return 0;
	if (XA_FRAG_INDEX(e) != g->want)
		return xa_corrupt(c, "has a value's fragments out of order");
	if (g->size && g->total + e->value_len > g->size)
		return -ERANGE;
	if (g->size)
		memcpy(g->value + g->total, e->name + e->name_len,
		       e->value_len);
	g->total += e->value_len;
	g->want++;
	g->last = c->blk;
	return e->frag & MQFS_XATTR_FRAG_MORE ? 0 : 1;
}

ssize_t mqfs_xattr_get_locked(struct mqfs_fs *fs, struct mqfs_ino *ip,
			      const char *name, size_t len, void *value,
			      size_t size)
{
	struct xa_get g = { .name = name, .len = len, .value = value,
			    .size = size };
	int err = xa_each(fs, ip, xa_take, &g);

	if (err < 0)
		return err;
	if (!g.want)
		return -ENODATA;
	if (!err) {			/* the chain ended inside the value */
		struct xa_cur c = { .fs = fs, .ip = ip, .blk = g.last };

		return xa_corrupt(&c, "ends a chain inside a value");
	}
	return (ssize_t)g.total;
}

/* The names being listed. */
struct xa_list {
	struct mqfs_fs *fs;
	char *list;
	size_t size, total;
};

static int xa_list_one(struct xa_cur *c, const struct xa_ent *e, void *arg)
{
	struct xa_list *l = arg;

	(void)c;
	if (XA_FRAG_INDEX(e) || mqfs_acl_hidden(l->fs, e->name, e->name_len))
		return 0;
	if (l->size && l->total + e->name_len + 1 > l->size)
		return -ERANGE;
	if (l->size) {
		memcpy(l->list + l->total, e->name, e->name_len);
		l->list[l->total + e->name_len] = '\0';
	}
	l->total += e->name_len + 1u;
	return 0;
}

/* Names, each NUL-terminated; @size 0 only measures. */
ssize_t mqfs_xattr_list_locked(struct mqfs_fs *fs, struct mqfs_ino *ip,
			       char *list, size_t size)
{
	struct xa_list l = { .fs = fs, .list = list, .size = size };
	int err = xa_each(fs, ip, xa_list_one, &l);

	return err < 0 ? err : (ssize_t)l.total;
}

/* ---- removing ----------------------------------------------------------- */

/*
 * Take @name's entries out of c->blk: 1 when the value's last fragment
 * went, 2 when the block is to go (its only entry is @name's).
 */
static int xa_cut_block(struct xa_cur *c, struct mqfs_handle *h,
			const char *name, size_t len, bool *found)
{
	void *data = c->b->data;
	unsigned off = 0;

	while (off < xa_hdr(data)->used) {
		const struct xa_ent *e = xa_ent(data, off);
		bool last = !(e->frag & MQFS_XATTR_FRAG_MORE);

		if (!xa_is(e, name, len)) {
			off += xa_len(e);
			continue;
		}
		*found = true;
		if (xa_hdr(data)->count == 1)
			return 2;
		xa_delete(data, off);
		mqfs_trans_dirty(h, c->b);
		if (last)
			return 1;
	}
	return 0;
}

int mqfs_xattr_remove_locked(struct mqfs_handle *h, struct mqfs_ino *ip,
			     const char *name, size_t len)
{
	bool found = false;
	struct xa_cur c;
	int err = xa_first(&c, h->fs, ip);

	while (!err) {
		int cut = xa_cut_block(&c, h, name, len, &found);

		if (cut == 2) {
			bool last = !(xa_ent(c.b->data, 0)->frag &
				      MQFS_XATTR_FRAG_MORE);

			err = xa_unlink(&c, h);
			if (last && err >= 0)
				err = 1;
		} else {
			err = cut ? 1 : xa_advance(&c);
		}
	}
	xa_release(&c);
	if (err < 0)
		return err;
	return found ? 0 : -ENODATA;
}

/* ---- placing ------------------------------------------------------------ */

/* Mark the superblock: this image has chains or fragments now. */
static void xa_feature(struct mqfs_handle *h)
{
	struct mqfs_fs *fs = h->fs;
	struct mqfs_super *sb = mqfs_sb(fs);

	pthread_mutex_lock(&fs->sb_lock);
	mqfs_buf_lock(fs->sb_buf);
	if (!(sb->feature_incompat & MQFS_FEATURE_INCOMPAT_XATTR_CHAIN)) {
		sb->feature_incompat |= MQFS_FEATURE_INCOMPAT_XATTR_CHAIN;
		mqfs_trans_dirty(h, fs->sb_buf);
	}
	mqfs_buf_unlock(fs->sb_buf);
	pthread_mutex_unlock(&fs->sb_lock);
}

/* Blocks for @n new chain blocks near the inode: all of them, or none. */
static int xa_alloc(struct mqfs_handle *h, struct mqfs_ino *ip, unsigned n,
		    uint64_t *blks)
{
	struct mqfs_fs *fs = h->fs;
	uint64_t goal = (ip->ino - 1) / fs->inodes_per_ag *
			(uint64_t)fs->ag_blocks;
	unsigned have = 0;
	int err = 0;

	while (!err && have < n) {
		uint64_t start;
		uint32_t got;

		err = mqfs_alloc_blocks(h, goal, n - have, &start, &got);
		for (uint32_t i = 0; !err && i < got; i++)
			blks[have++] = start + i;
		goal = start + got;
	}
	while (err && have)
		(void)mqfs_free_blocks(h, blks[--have], 1);
	return err;
}

/* Put new block @blk at the head, holding one entry. */
static int xa_push(struct mqfs_handle *h, struct mqfs_ino *ip, uint64_t blk,
		   const char *name, size_t len, const void *value,
		   size_t size, uint8_t frag)
{
	bool link = ip->d.xattr_blk || frag;
	struct mqfs_buf *b;
	int err = mqfs_buf_new(h->fs, blk, MQFS_T_XATTR, &b);

	if (err)
		return err;
	if (link)
		xa_feature(h);	/* before the block's lock: sb_lock's order */
	mqfs_buf_lock(b);
	if (link)
		mqfs_xattr_set_next(b->data, ip->d.xattr_blk);
	xa_append(b->data, name, len, value, size, frag);
	mqfs_trans_dirty(h, b);
	mqfs_buf_unlock(b);
	mqfs_buf_put(b);
	xa_set_head(ip, blk, 1);
	return 0;
}

/* A whole entry into the first block with room for it: 1 if none has. */
static int xa_fit(struct mqfs_handle *h, struct mqfs_ino *ip,
		  const char *name, size_t len, const void *value, size_t size)
{
	unsigned need = XA_ENT_LEN(len, size);
	struct xa_cur c;
	int err;

	for (err = xa_first(&c, h->fs, ip); !err; err = xa_advance(&c)) {
		if (xa_hdr(c.b->data)->used + need <= xa_space(c.b->data)) {
			xa_append(c.b->data, name, len, value, size, 0);
			mqfs_trans_dirty(h, c.b);
			break;
		}
	}
	xa_release(&c);
	return err;
}

/*
 * The fragments of a value into blocks @blks, pushed last to first so
 * that they read in order from the head.
 */
static int xa_push_frags(struct mqfs_handle *h, struct mqfs_ino *ip,
			 const uint64_t *blks, unsigned n, const char *name,
			 size_t len, const char *value, size_t size)
{
	unsigned per = xa_frag_bytes(len);
	int err = 0;

	for (unsigned i = n; !err && i-- > 0;) {
		size_t at = (size_t)i * per;
		uint8_t frag = (uint8_t)(i | (i + 1 < n ?
					      MQFS_XATTR_FRAG_MORE : 0));

		err = xa_push(h, ip, blks[i], name, len, value + at,
			      MQ_MIN(size - at, (size_t)per), frag);
	}
	return err;
}

/*
 * Store @name's new value, its old one (if @replace) removed in the same
 * handle.  The blocks the value may need are taken first, so that the
 * one failure that is no damage (ENOSPC) leaves the old value in place.
 */
static int xa_place(struct mqfs_handle *h, struct mqfs_ino *ip,
		    const char *name, size_t len, const void *value,
		    size_t size, bool replace)
{
	unsigned n = mqfs_xattr_frags(len, size);
	uint64_t blks[XA_FRAGS_MAX];
	int err;

	if (n == 1 && !replace) {
		err = xa_fit(h, ip, name, len, value, size);
		if (err <= 0)
			return err;
	}
	err = xa_alloc(h, ip, n, blks);
	if (!err && replace)
		err = mqfs_xattr_remove_locked(h, ip, name, len);
	if (err)
		return err;
	if (n > 1)
		return xa_push_frags(h, ip, blks, n, name, len, value, size);
	if (replace) {
		err = xa_fit(h, ip, name, len, value, size);
		if (err <= 0)	/* placed: the block taken goes back */
			return err ? err : mqfs_free_blocks(h, blks[0], 1);
	}
	return xa_push(h, ip, blks[0], name, len, value, size, 0);
}

unsigned mqfs_xattr_credits(size_t len, size_t size, ssize_t old)
{
	unsigned n = mqfs_xattr_frags(len, size);
	unsigned o = old >= 0 ? mqfs_xattr_frags(len, (size_t)old) : 0;

	/*
	 * An old piece: its block, the one before it, a bitmap and an AG
	 * header; a new one: its block, a bitmap and an AG header; then the
	 * block a whole value fits in, the inode and the superblock.
	 */
	return 4 * o + 3 * n + 3;
}

int mqfs_xattr_set_locked(struct mqfs_handle *h, struct mqfs_ino *ip,
			  const char *name, size_t len, const void *value,
			  size_t size, int flags)
{
	ssize_t old = mqfs_xattr_get_locked(h->fs, ip, name, len, NULL, 0);

	if (old < 0 && old != -ENODATA)
		return (int)old;
	if (old >= 0 && (flags & XATTR_CREATE))
		return -EEXIST;
	if (old < 0 && (flags & XATTR_REPLACE))
		return -ENODATA;
	if (size > MQFS_XATTR_VALUE_MAX)
		return -E2BIG;
	return xa_place(h, ip, name, len, value, size, old >= 0);
}

/* ---- freeing with the inode --------------------------------------------- */

#define XA_TRIM_CREDITS	4u	/* inode, bitmap, AG header, superblock */

static void xa_free_head(struct mqfs_fs *fs, struct mqfs_ino *ip,
			 uint64_t next)
{
	mqfs_buf_forget(fs, ip->d.xattr_blk);
	xa_set_head(ip, next, ip->d.blocks ? -1 : 0);
}

int mqfs_xattr_trim(struct mqfs_fs *fs, struct mqfs_ino *ip)
{
	for (;;) {
		struct mqfs_handle h;
		struct xa_cur c;
		uint64_t next;
		int err = xa_first(&c, fs, ip);

		if (err)
			return err > 0 ? 0 : err;
		next = mqfs_xattr_next(c.b->data);
		xa_release(&c);
		if (!next)
			return 0;
		err = mqfs_trans_start(fs, XA_TRIM_CREDITS, &h);
		if (err)
			return err;
		err = mqfs_free_blocks(&h, c.blk, 1);
		if (!err) {
			xa_free_head(fs, ip, next);
			err = mqfs_inode_dirty(&h, ip);
		}
		err = mqfs_trans_finish(&h, err);
		if (err)
			return err;
	}
}

int mqfs_xattr_drop(struct mqfs_handle *h, struct mqfs_ino *ip)
{
	int err;

	if (!ip->d.xattr_blk)
		return 0;
	err = mqfs_free_blocks(h, ip->d.xattr_blk, 1);
	if (!err)
		xa_free_head(h->fs, ip, 0);
	return err;
}

/* ---- a chain's fragments, checked whole (fsck, the fuzzer) -------------- */

/* Cut every fragment of @name from the chain's @n blocks. */
static void xa_cut_frags(void *const *blocks, unsigned n, bool *changed,
			 const char *name, size_t len)
{
	for (unsigned i = 0; i < n; i++) {
		unsigned off = 0;

		while (off < xa_hdr(blocks[i])->used) {
			const struct xa_ent *e = xa_ent(blocks[i], off);

			if (e->frag && xa_is(e, name, len)) {
				xa_delete(blocks[i], off);
				changed[i] = true;
			} else {
				off += xa_len(e);
			}
		}
	}
}

/*
 * The first entry, in chain order, of a value whose fragments are not
 * whole: one out of order, a value left unfinished, a whole entry under
 * the name of one being read.  NULL when every value is whole.
 */
static const struct xa_ent *xa_first_broken(void *const *blocks, unsigned n)
{
	const struct xa_ent *open = NULL;
	unsigned want = 0;

	for (unsigned i = 0; i < n; i++) {
		const struct mqfs_xattr_hdr *xh = xa_hdr(blocks[i]);

		for (unsigned off = 0; off < xh->used;
		     off += xa_len(xa_ent(blocks[i], off))) {
			const struct xa_ent *e = xa_ent(blocks[i], off);
			bool same = open && xa_is(e, open->name,
						  open->name_len);

			if (!e->frag || !XA_FRAG_INDEX(e)) {
				if (same || (e->frag && open))
					return open;
				if (e->frag) {
					open = e;
					want = 1;
				}
				continue;
			}
			if (!same || XA_FRAG_INDEX(e) != want)
				return e;
			want++;
			if (!(e->frag & MQFS_XATTR_FRAG_MORE))
				open = NULL;
		}
	}
	return open;
}

unsigned mqfs_xattr_fix_frags(void *const *blocks, unsigned n, bool *changed,
			      mqfs_xattr_report_fn report, void *arg)
{
	char name[MQFS_NAME_MAX + 1];
	const struct xa_ent *bad;
	unsigned cut = 0;

	while ((bad = xa_first_broken(blocks, n))) {
		size_t len = bad->name_len;

		memcpy(name, bad->name, len);
		name[len] = '\0';
		if (report)
			report(arg, name);
		xa_cut_frags(blocks, n, changed, name, len);
		cut++;
	}
	return cut;
}
