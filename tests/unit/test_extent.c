// SPDX-License-Identifier: MIT
/*
 * test_extent.c - the extent map (src/fs/extent.c): inline extents and
 * merging, the switch to a tree and back, holes and unwritten extents,
 * random inserts/removes/mark-written against a reference model (a map
 * of every logical block), a tree of depth 2 surviving a remount, block
 * accounting back to the start, ENOSPC leaving the map untouched, and
 * corrupt tree blocks reported as -EUCLEAN.
 *
 * Every failure names the test, the operation index and the seed, so a
 * case can be rerun exactly (T_EXT_SEED overrides the seed).
 */
#include <check.h>
#include <inttypes.h>
#include <stdlib.h>

#include "t_fs.h"
#include "t_main.h"

#define T_SIZE		(64 * T_FS_MIB)	/* 16384 blocks, 16 AGs */
#define T_SPAN		4096u		/* logical blocks the model covers */

/* The reference model: what every logical block maps to. */
struct t_model {
	uint64_t pblk[T_SPAN];		/* 0: hole */
	bool unw[T_SPAN];
};

struct t_ctx {
	struct t_fs t;
	struct mqfs_ino *ip;
	uint64_t ino;
	const char *what;		/* the operation being checked */
	unsigned step;
	unsigned seed;
};

#define t_ok(c, cond, fmt, ...)						\
	ck_assert_msg((cond), "%s step %u (seed %u): " fmt, (c)->what,	\
		      (c)->step, (c)->seed, ##__VA_ARGS__)

static unsigned t_seed(unsigned dflt)
{
	const char *s = getenv("T_EXT_SEED");

	return s ? (unsigned)strtoul(s, NULL, 0) : dflt;
}

/* Mount a fresh fs and create one regular file. */
static void t_setup(struct t_ctx *c, uint64_t size)
{
	struct mqfs_entry e;

	memset(c, 0, sizeof(*c));
	c->what = "setup";
	t_fs_make(&c->t, size);
	ck_assert_int_eq(mqfs_mknod(c->t.fs, MQFS_ROOT_INO, "f",
				    S_IFREG | 0644, 0, 0, 0, &e), 0);
	c->ino = e.ino;
	ck_assert_int_eq(mqfs_iget(c->t.fs, c->ino, &c->ip), 0);
}

static void t_drop_inode(struct t_ctx *c)
{
	if (c->ip)
		mqfs_iput(c->t.fs, c->ip);
	c->ip = NULL;
}

static void t_remount(struct t_ctx *c)
{
	t_drop_inode(c);
	t_fs_remount(&c->t);
	ck_assert_int_eq(mqfs_iget(c->t.fs, c->ino, &c->ip), 0);
}

/* Unmount, fsck must find nothing, mount again. */
static void t_fsck(struct t_ctx *c)
{
	struct mqfs_fsck_opts fo = { .mode = MQFS_FSCK_NO, .force = true };

	t_drop_inode(c);
	t_fs_unmount(&c->t);
	ck_assert_int_eq(mqfs_fsck(c->t.q, &fo), MQFS_FSCK_OK);
	t_fs_mount(&c->t);
	ck_assert_int_eq(mqfs_iget(c->t.fs, c->ino, &c->ip), 0);
}

static void t_teardown(struct t_ctx *c)
{
	t_drop_inode(c);
	t_fs_destroy(&c->t);
}

static unsigned t_credits(struct mqfs_fs *fs)
{
	return mqfs_extent_credits(fs) + 2 + 1;
}

/* Allocate up to @want blocks near @goal in a handle of their own. */
static int t_alloc(struct t_ctx *c, uint64_t goal, uint32_t want,
		   uint64_t *start, uint32_t *got)
{
	struct mqfs_handle h;
	int err;

	ck_assert_int_eq(mqfs_trans_start(c->t.fs, 8, &h), 0);
	err = mqfs_alloc_blocks(&h, goal, want, start, got);
	ck_assert_int_eq(mqfs_trans_stop(&h), 0);
	return err;
}

static void t_free(struct t_ctx *c, uint64_t start, uint32_t count)
{
	struct mqfs_handle h;

	ck_assert_int_eq(mqfs_trans_start(c->t.fs, 8, &h), 0);
	ck_assert_int_eq(mqfs_free_blocks(&h, start, count), 0);
	ck_assert_int_eq(mqfs_trans_stop(&h), 0);
}

enum t_op { T_INSERT, T_REMOVE, T_WRITTEN };

/* One extent operation under the inode lock, in its own handle. */
static int t_op(struct t_ctx *c, enum t_op op, uint64_t lblk, uint64_t len,
		uint64_t pblk, uint32_t flags)
{
	struct mqfs_handle h;
	int err;

	pthread_rwlock_wrlock(&c->ip->lock);
	ck_assert_int_eq(mqfs_trans_start(c->t.fs, t_credits(c->t.fs), &h), 0);
	if (op == T_INSERT)
		err = mqfs_extent_insert(&h, c->ip, lblk, pblk, (uint32_t)len,
					 flags);
	else if (op == T_REMOVE)
		err = mqfs_extent_remove(&h, c->ip, lblk, len);
	else
		err = mqfs_extent_mark_written(&h, c->ip, lblk, (uint32_t)len);
	ck_assert_int_eq(mqfs_trans_stop(&h), 0);
	pthread_rwlock_unlock(&c->ip->lock);
	return err;
}

static int t_map(struct t_ctx *c, uint64_t lblk, uint32_t max,
		 struct mqfs_map *m)
{
	int err;

	pthread_rwlock_rdlock(&c->ip->lock);
	err = mqfs_extent_map(c->t.fs, c->ip, lblk, max, m);
	pthread_rwlock_unlock(&c->ip->lock);
	return err;
}

static unsigned t_depth(struct t_ctx *c)
{
	const struct mqfs_ext_node *n = (const void *)c->ip->d.u.root;

	return c->ip->d.iflags & MQFS_IF_EXTENT_TREE ? n->depth : 0;
}

/* ---- the walk: extents in order, tree blocks counted ------------------- */

struct t_walk {
	struct t_ctx *c;
	struct t_model got;
	uint64_t exts, tree, data, prev_end;
	uint64_t tree_blk[64];
};

static int t_walk_fn(void *ctx, const struct mqfs_extent *x, uint64_t blk)
{
	struct t_walk *w = ctx;

	if (!x) {
		if (w->tree < 64)
			w->tree_blk[w->tree] = blk;
		w->tree++;
		return 0;
	}
	if (!x->len || x->lblk < w->prev_end || x->lblk + x->len > T_SPAN)
		t_ok(w->c, false, "extent %" PRIu64 "+%u out of order or "
		     "past the model (prev end %" PRIu64 ")", x->lblk, x->len,
		     w->prev_end);
	for (uint32_t i = 0; i < x->len; i++) {
		w->got.pblk[x->lblk + i] = x->pblk + i;
		w->got.unw[x->lblk + i] = x->flags & MQFS_EXT_UNWRITTEN;
	}
	w->prev_end = x->lblk + x->len;
	w->exts++;
	w->data += x->len;
	return 0;
}

static void t_walk(struct t_ctx *c, struct t_walk *w)
{
	memset(w, 0, sizeof(*w));
	w->c = c;
	pthread_rwlock_rdlock(&c->ip->lock);
	ck_assert_int_eq(mqfs_extent_walk(c->t.fs, c->ip, t_walk_fn, w), 0);
	pthread_rwlock_unlock(&c->ip->lock);
}

/* The map equals the model, d.blocks counts it all; a few map() probes. */
static void t_check_model(struct t_ctx *c, const struct t_model *m)
{
	struct t_walk *w = malloc(sizeof(*w));
	uint64_t mapped = 0;

	ck_assert_ptr_nonnull(w);
	t_walk(c, w);
	/* Assert only on a mismatch: every passing check costs a syscall. */
	for (unsigned i = 0; i < T_SPAN; i++) {
		if (w->got.pblk[i] != m->pblk[i])
			t_ok(c, false, "lblk %u maps to %" PRIu64 ", model %"
			     PRIu64, i, w->got.pblk[i], m->pblk[i]);
		if (m->pblk[i] && w->got.unw[i] != m->unw[i])
			t_ok(c, false, "lblk %u unwritten %d, model %d", i,
			     w->got.unw[i], m->unw[i]);
		mapped += m->pblk[i] != 0;
	}
	t_ok(c, w->data == mapped, "walk saw %" PRIu64 " blocks, model %"
	     PRIu64, w->data, mapped);
	t_ok(c, c->ip->d.blocks == mapped + w->tree,
	     "d.blocks %" PRIu64 " != data %" PRIu64 " + tree %" PRIu64,
	     c->ip->d.blocks, mapped, w->tree);
	t_ok(c, (w->tree != 0) == (t_depth(c) != 0), "tree blocks vs flag");
	t_ok(c, !(c->ip->d.iflags & MQFS_IF_EXTENT_TREE) || w->exts > 4 ||
	     t_depth(c) > 1 || w->tree > 1,
	     "a tree of %" PRIu64 " extents was not pulled back inline",
	     w->exts);
	for (unsigned k = 0; k < 8; k++) {
		unsigned l = (unsigned)rand() % T_SPAN;
		struct mqfs_map mm;

		ck_assert_int_eq(t_map(c, l, T_SPAN, &mm), 0);
		t_ok(c, mm.len >= 1 && mm.lblk == l, "map len");
		t_ok(c, mm.pblk == m->pblk[l], "map(%u) = %" PRIu64 ", model %"
		     PRIu64, l, mm.pblk, m->pblk[l]);
		for (uint32_t i = 1; i < mm.len && l + i < T_SPAN; i++)
			if (mm.pblk ? m->pblk[l + i] != mm.pblk + i ||
				      m->unw[l + i] != mm.unwritten :
				      m->pblk[l + i] != 0)
				t_ok(c, false, "map(%u) run of %u wrong at +%u",
				     l, mm.len, i);
		if (l + mm.len < T_SPAN && !mm.pblk)
			t_ok(c, m->pblk[l + mm.len] != 0,
			     "hole at %u stops at %u before a hole", l,
			     l + mm.len);
	}
	free(w);
}

/* ---- simple cases ------------------------------------------------------ */

START_TEST(test_inline_merge_and_tree)
{
	struct t_model *m = calloc(1, sizeof(*m));
	struct t_ctx c;
	struct t_walk w;
	uint64_t p, free0, tree_blk;
	uint32_t got;
	bool used;

	t_setup(&c, T_SIZE);
	c.what = "inline";
	free0 = atomic_load(&c.t.fs->free_blocks);
	ck_assert_int_eq(t_alloc(&c, 0, 64, &p, &got), 0);
	ck_assert_uint_eq(got, 64);
	/* Contiguous in both spaces: one extent. */
	ck_assert_int_eq(t_op(&c, T_INSERT, 0, 4, p, 0), 0);
	ck_assert_int_eq(t_op(&c, T_INSERT, 4, 4, p + 4, 0), 0);
	t_walk(&c, &w);
	ck_assert_uint_eq(w.exts, 1);
	/* Filling the gap between two extents merges all three. */
	ck_assert_int_eq(t_op(&c, T_INSERT, 12, 4, p + 12, 0), 0);
	ck_assert_int_eq(t_op(&c, T_INSERT, 8, 4, p + 8, 0), 0);
	t_walk(&c, &w);
	ck_assert_uint_eq(w.exts, 1);
	ck_assert_uint_eq(c.ip->d.blocks, 16);
	/* Different flags do not merge; overlaps are refused. */
	ck_assert_int_eq(t_op(&c, T_INSERT, 16, 2, p + 16,
			      MQFS_EXT_UNWRITTEN), 0);
	ck_assert_int_eq(t_op(&c, T_INSERT, 15, 2, p + 40, 0), -EEXIST);
	ck_assert_int_eq(t_op(&c, T_INSERT, 0, 1, 1, 0), -EINVAL);
	/* Five extents stay inline; the sixth makes a tree. */
	for (unsigned i = 0; i < 3; i++)
		ck_assert_int_eq(t_op(&c, T_INSERT, 100 + 10 * i, 1,
				      p + 20 + 2 * i, 0), 0);
	ck_assert(!(c.ip->d.iflags & MQFS_IF_EXTENT_TREE));
	ck_assert_int_eq(t_op(&c, T_INSERT, 200, 1, p + 30, 0), 0);
	ck_assert(c.ip->d.iflags & MQFS_IF_EXTENT_TREE);
	ck_assert_uint_eq(t_depth(&c), 1);
	for (unsigned i = 0; i < 16; i++)
		m->pblk[i] = p + i;
	m->pblk[16] = p + 16, m->pblk[17] = p + 17;
	m->unw[16] = m->unw[17] = true;
	for (unsigned i = 0; i < 3; i++)
		m->pblk[100 + 10 * i] = p + 20 + 2 * i;
	m->pblk[200] = p + 30;
	t_check_model(&c, m);
	t_walk(&c, &w);
	tree_blk = w.tree_blk[0];
	ck_assert_int_eq(mqfs_block_in_use(c.t.fs, tree_blk, &used), 0);
	ck_assert(used);
	/* Down to four extents: back inline, the tree block freed. */
	ck_assert_int_eq(t_op(&c, T_REMOVE, 100, 101, 0, 0), 0);
	memset(&m->pblk[100], 0, 101 * sizeof(m->pblk[0]));
	ck_assert_int_eq(t_op(&c, T_REMOVE, 16, 1, 0, 0), 0);
	m->pblk[16] = 0;
	ck_assert(!(c.ip->d.iflags & MQFS_IF_EXTENT_TREE));
	ck_assert_int_eq(mqfs_block_in_use(c.t.fs, tree_blk, &used), 0);
	ck_assert(!used);
	t_check_model(&c, m);
	/* What was never mapped goes back by hand; the rest by remove. */
	t_free(&c, p + 18, 2);
	t_free(&c, p + 21, 1);
	t_free(&c, p + 23, 1);
	t_free(&c, p + 25, 5);
	t_free(&c, p + 31, 33);
	ck_assert_int_eq(t_op(&c, T_REMOVE, 0, UINT64_MAX, 0, 0), 0);
	ck_assert_uint_eq(c.ip->d.blocks, 0);
	ck_assert_uint_eq(atomic_load(&c.t.fs->free_blocks), free0);
	free(m);
	t_teardown(&c);
}
END_TEST

START_TEST(test_map_holes_and_written)
{
	struct t_ctx c;
	struct mqfs_map m;
	struct t_walk w;
	uint64_t p;
	uint32_t got;

	t_setup(&c, T_SIZE);
	c.what = "map";
	ck_assert_int_eq(t_map(&c, 0, 100, &m), 0);
	ck_assert(m.pblk == 0 && m.len == 100);
	ck_assert_int_eq(t_map(&c, 0, 0, &m), -EINVAL);
	ck_assert_int_eq(t_alloc(&c, 0, 10, &p, &got), 0);
	ck_assert_uint_eq(got, 10);
	ck_assert_int_eq(t_op(&c, T_INSERT, 50, 10, p, MQFS_EXT_UNWRITTEN), 0);
	ck_assert_int_eq(t_map(&c, 0, 1000, &m), 0);
	ck_assert(m.pblk == 0 && m.len == 50);
	ck_assert_int_eq(t_map(&c, 0, 20, &m), 0);
	ck_assert(m.pblk == 0 && m.len == 20);
	ck_assert_int_eq(t_map(&c, 52, 1000, &m), 0);
	ck_assert(m.pblk == p + 2 && m.len == 8 && m.unwritten);
	ck_assert_int_eq(t_map(&c, 60, 7, &m), 0);
	ck_assert(m.pblk == 0 && m.len == 7);
	/* Written in the middle: unwritten, written, unwritten. */
	ck_assert_int_eq(t_op(&c, T_WRITTEN, 53, 3, 0, 0), 0);
	t_walk(&c, &w);
	ck_assert_uint_eq(w.exts, 3);
	ck_assert_int_eq(t_map(&c, 53, 100, &m), 0);
	ck_assert(m.pblk == p + 3 && m.len == 3 && !m.unwritten);
	/* The head joins the written middle. */
	ck_assert_int_eq(t_op(&c, T_WRITTEN, 40, 13, 0, 0), 0);
	t_walk(&c, &w);
	ck_assert_uint_eq(w.exts, 2);
	ck_assert_int_eq(t_map(&c, 50, 100, &m), 0);
	ck_assert(m.pblk == p && m.len == 6 && !m.unwritten);
	ck_assert_int_eq(t_op(&c, T_WRITTEN, 0, 100, 0, 0), 0);
	t_walk(&c, &w);
	ck_assert_uint_eq(w.exts, 1);
	ck_assert_uint_eq(c.ip->d.blocks, 10);
	/* Punching the middle splits; removing everything frees all. */
	ck_assert_int_eq(t_op(&c, T_REMOVE, 54, 2, 0, 0), 0);
	t_walk(&c, &w);
	ck_assert_uint_eq(w.exts, 2);
	ck_assert_uint_eq(c.ip->d.blocks, 8);
	ck_assert_int_eq(t_op(&c, T_REMOVE, 0, UINT64_MAX, 0, 0), 0);
	ck_assert_uint_eq(c.ip->d.blocks, 0);
	t_teardown(&c);
}
END_TEST

/* ---- random operations against the model ------------------------------- */

/* A random hole of up to @maxlen blocks inside the span, or false. */
static bool t_pick_hole(const struct t_model *m, uint32_t maxlen,
			uint64_t *lblk, uint32_t *len)
{
	for (int tries = 0; tries < 64; tries++) {
		unsigned l = (unsigned)rand() % T_SPAN, n = 0;

		while (l + n < T_SPAN && n < maxlen && !m->pblk[l + n])
			n++;
		if (n) {
			*lblk = l;
			*len = 1 + (unsigned)rand() % n;
			return true;
		}
	}
	return false;
}

static void t_random_insert(struct t_ctx *c, struct t_model *m)
{
	bool unw = rand() % 3 == 0;
	uint64_t lblk, p;
	uint32_t len, got;
	/* Random goals: neighbours rarely continue each other physically. */
	uint64_t goal = (uint64_t)rand() % c->t.fs->block_count;

	if (!t_pick_hole(m, 3, &lblk, &len))
		return;
	if (t_alloc(c, goal, len, &p, &got) == -ENOSPC)
		return;
	t_ok(c, t_op(c, T_INSERT, lblk, got, p, unw ? MQFS_EXT_UNWRITTEN : 0)
	     == 0, "insert %" PRIu64 "+%u", lblk, got);
	for (uint32_t i = 0; i < got; i++) {
		m->pblk[lblk + i] = p + i;
		m->unw[lblk + i] = unw;
	}
}

static void t_random_remove(struct t_ctx *c, struct t_model *m)
{
	unsigned l = (unsigned)rand() % T_SPAN;
	unsigned n = 1 + (unsigned)rand() % (rand() % 8 ? 16 : 400);

	n = MQ_MIN(n, T_SPAN - l);
	t_ok(c, t_op(c, T_REMOVE, l, n, 0, 0) == 0, "remove %u+%u", l, n);
	memset(&m->pblk[l], 0, n * sizeof(m->pblk[0]));
}

static void t_random_written(struct t_ctx *c, struct t_model *m)
{
	unsigned l = (unsigned)rand() % T_SPAN;
	unsigned n = 1 + (unsigned)rand() % 24;

	n = MQ_MIN(n, T_SPAN - l);	/* MQ_MIN evaluates twice */
	t_ok(c, t_op(c, T_WRITTEN, l, n, 0, 0) == 0, "written %u+%u", l, n);
	for (unsigned i = 0; i < n; i++)
		m->unw[l + i] = false;
}

START_TEST(test_random_model)
{
	struct t_model *m = calloc(1, sizeof(*m));
	uint64_t free0;
	unsigned max_depth = 0;
	struct t_ctx c;

	t_setup(&c, T_SIZE);
	c.seed = t_seed(0x5eed0 + (unsigned)_i);
	srand(c.seed);
	c.what = "random";
	free0 = atomic_load(&c.t.fs->free_blocks);
	for (c.step = 0; c.step < 3000; c.step++) {
		unsigned r = (unsigned)rand() % 16;

		/* Grow for the first half, shrink for the second. */
		if (r < (c.step < 1500 ? 13u : 4u))
			t_random_insert(&c, m);
		else if (r < 14)
			t_random_remove(&c, m);
		else
			t_random_written(&c, m);
		if (c.step % 7 == 0)
			t_check_model(&c, m);
		max_depth = MQ_MAX(max_depth, t_depth(&c));
		if (c.step == 1500) {
			c.what = "random after fsck";
			t_fsck(&c);
			t_check_model(&c, m);
		}
	}
	t_check_model(&c, m);
	ck_assert_uint_ge(max_depth, 2);
	c.what = "random cleanup";
	ck_assert_int_eq(t_op(&c, T_REMOVE, 0, UINT64_MAX, 0, 0), 0);
	memset(m, 0, sizeof(*m));
	t_check_model(&c, m);
	ck_assert_uint_eq(c.ip->d.blocks, 0);
	ck_assert(!(c.ip->d.iflags & MQFS_IF_EXTENT_TREE));
	ck_assert_uint_eq(atomic_load(&c.t.fs->free_blocks), free0);
	free(m);
	t_teardown(&c);
}
END_TEST

/* ---- a deep tree ------------------------------------------------------- */

/* Single blocks at every other lblk (never adjacent), in a shuffled order. */
static void t_build_sparse(struct t_ctx *c, struct t_model *m, unsigned n)
{
	unsigned *order = malloc(n * sizeof(*order));

	ck_assert_ptr_nonnull(order);
	for (unsigned i = 0; i < n; i++)
		order[i] = i;
	for (unsigned i = n - 1; i > 0; i--) {
		unsigned j = (unsigned)rand() % (i + 1), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (c->step = 0; c->step < n; c->step++) {
		uint64_t lblk = 2ull * order[c->step], p;
		uint32_t got;

		ck_assert_int_eq(t_alloc(c, 0, 1, &p, &got), 0);
		t_ok(c, t_op(c, T_INSERT, lblk, 1, p, c->step & 1 ?
			     MQFS_EXT_UNWRITTEN : 0) == 0, "insert");
		m->pblk[lblk] = p;
		m->unw[lblk] = c->step & 1;
	}
	free(order);
}

START_TEST(test_depth2_remount_and_accounting)
{
	struct t_model *m = calloc(1, sizeof(*m));
	struct t_ctx c;
	uint64_t free0;

	t_setup(&c, T_SIZE);
	c.seed = t_seed(77);
	srand(c.seed);
	c.what = "depth2 build";
	free0 = atomic_load(&c.t.fs->free_blocks);
	t_build_sparse(&c, m, 1800);
	ck_assert_uint_eq(t_depth(&c), 2);
	t_check_model(&c, m);
	c.what = "depth2 remount";
	t_fsck(&c);
	ck_assert_uint_eq(t_depth(&c), 2);
	t_check_model(&c, m);
	/* Take it down in random bites; it must come back inline. */
	c.what = "depth2 remove";
	for (c.step = 0; c.step < 400; c.step++) {
		unsigned l = (unsigned)rand() % T_SPAN;
		unsigned n = 1 + (unsigned)rand() % 40;

		n = MQ_MIN(n, T_SPAN - l);
		t_ok(&c, t_op(&c, T_REMOVE, l, n, 0, 0) == 0, "remove");
		memset(&m->pblk[l], 0, n * sizeof(m->pblk[0]));
		if (c.step % 10 == 0)
			t_check_model(&c, m);
	}
	t_check_model(&c, m);
	ck_assert_int_eq(t_op(&c, T_REMOVE, 0, T_SPAN, 0, 0), 0);
	ck_assert_uint_eq(c.ip->d.blocks, 0);
	ck_assert(!(c.ip->d.iflags & MQFS_IF_EXTENT_TREE));
	ck_assert_uint_eq(atomic_load(&c.t.fs->free_blocks), free0);
	c.what = "depth2 empty remount";
	t_remount(&c);
	memset(m, 0, sizeof(*m));
	t_check_model(&c, m);
	free(m);
	t_teardown(&c);
}
END_TEST

/* Sequential appends keep leaves full (the split leaves the left full). */
START_TEST(test_append_fill)
{
	struct t_model *m = calloc(1, sizeof(*m));
	struct t_ctx c;
	struct t_walk w;

	t_setup(&c, T_SIZE);
	c.what = "append";
	for (c.step = 0; c.step < 1000; c.step++) {
		uint64_t lblk = 2ull * c.step, p;
		uint32_t got;

		ck_assert_int_eq(t_alloc(&c, 0, 1, &p, &got), 0);
		ck_assert_int_eq(t_op(&c, T_INSERT, lblk, 1, p, 0), 0);
		m->pblk[lblk] = p;
	}
	t_check_model(&c, m);
	t_walk(&c, &w);
	/*
	 * 1000 extents in ceil(1000/169) = 6 full leaves; the fifth leaf
	 * overflowed the root (4 entries), so one index block above them.
	 */
	ck_assert_uint_eq(t_depth(&c), 2);
	ck_assert_uint_eq(w.tree, 7);
	ck_assert_int_eq(t_op(&c, T_REMOVE, 0, UINT64_MAX, 0, 0), 0);
	ck_assert_uint_eq(c.ip->d.blocks, 0);
	free(m);
	t_teardown(&c);
}
END_TEST

/* ---- ENOSPC and corruption --------------------------------------------- */

struct t_run {
	uint64_t start;
	uint32_t len;
};

START_TEST(test_enospc_leaves_map)
{
	struct t_model *m = calloc(1, sizeof(*m));
	struct t_run *runs = calloc(4096, sizeof(*runs));
	unsigned nruns = 0;
	struct t_ctx c;
	uint64_t p;
	uint32_t got;

	t_setup(&c, 8 * T_FS_MIB);
	c.what = "enospc";
	ck_assert_int_eq(t_alloc(&c, 0, 12, &p, &got), 0);
	ck_assert_uint_eq(got, 12);
	for (unsigned i = 0; i < 5; i++) {
		ck_assert_int_eq(t_op(&c, T_INSERT, 10 * i, 1, p + 2 * i, 0), 0);
		m->pblk[10 * i] = p + 2 * i;
	}
	/* Take every free block. */
	ck_assert_int_eq(mqfs_sync(c.t.fs), 0);
	while (nruns < 4096 && !t_alloc(&c, 0, 4096, &runs[nruns].start,
					&runs[nruns].len))
		nruns++;
	ck_assert_uint_lt(nruns, 4096);
	/* The sixth extent needs a tree block: refused, nothing changed. */
	ck_assert_int_eq(t_op(&c, T_INSERT, 60, 1, p + 11, 0), -ENOSPC);
	ck_assert(!(c.ip->d.iflags & MQFS_IF_EXTENT_TREE));
	t_check_model(&c, m);
	/* With one block back it goes through. */
	t_free(&c, runs[0].start, runs[0].len);
	ck_assert_int_eq(mqfs_sync(c.t.fs), 0);
	ck_assert_int_eq(t_op(&c, T_INSERT, 60, 1, p + 11, 0), 0);
	m->pblk[60] = p + 11;
	ck_assert_uint_eq(t_depth(&c), 1);
	t_check_model(&c, m);
	for (unsigned i = 1; i < nruns; i++)
		t_free(&c, runs[i].start, runs[i].len);
	/* Blocks of @p that never got mapped: 1, 3, 5, 7, 9, 10. */
	for (unsigned i = 1; i < 11; i += i < 9 ? 2 : 1)
		t_free(&c, p + i, 1);
	free(runs);
	free(m);
	t_teardown(&c);
}
END_TEST

/* Build a depth-1 tree, unmount, damage the leaf, reseal it, mount. */
static uint64_t t_corrupt_setup(struct t_ctx *c)
{
	struct t_walk w;

	t_setup(c, T_SIZE);
	c->what = "corrupt";
	for (unsigned i = 0; i < 20; i++) {
		uint64_t p;
		uint32_t got;

		ck_assert_int_eq(t_alloc(c, 0, 1, &p, &got), 0);
		ck_assert_int_eq(t_op(c, T_INSERT, 3 * i, 1, p, 0), 0);
	}
	t_walk(c, &w);
	ck_assert_uint_eq(w.tree, 1);
	t_drop_inode(c);
	t_fs_unmount(&c->t);
	return w.tree_blk[0];
}

static void t_corrupt_check(struct t_ctx *c)
{
	struct mqfs_map m;

	t_fs_mount(&c->t);
	ck_assert_int_eq(mqfs_iget(c->t.fs, c->ino, &c->ip), 0);
	ck_assert_int_eq(t_map(c, 30, 1, &m), -EUCLEAN);
	ck_assert(atomic_load(&c->t.fs->error_seen));
	t_drop_inode(c);
	(void)mqfs_unmount(c->t.fs);	/* the fs knows it has errors */
	c->t.fs = NULL;
	t_fs_destroy(&c->t);
}

static struct mqfs_extent *t_leaf_ext(uint8_t *raw, unsigned i)
{
	return (struct mqfs_extent *)(raw + MQFS_HDR_SIZE +
				      sizeof(struct mqfs_ext_node)) + i;
}

START_TEST(test_corrupt_leaf)
{
	struct t_ctx c;
	uint64_t blk = t_corrupt_setup(&c);
	uint8_t *raw = t_fs_raw_block(&c.t, blk);
	struct mqfs_blk_hdr *hdr = (void *)raw;
	struct mqfs_ext_node *n = (void *)(raw + MQFS_HDR_SIZE);

	ck_assert_int_eq(mqfs_blk_verify(raw, MQFS_T_EXTENT, blk), 0);
	ck_assert_uint_eq(n->nr, 20);
	switch (_i) {
	case 0: {	/* keys out of order */
		struct mqfs_extent t = *t_leaf_ext(raw, 3);

		*t_leaf_ext(raw, 3) = *t_leaf_ext(raw, 4);
		*t_leaf_ext(raw, 4) = t;
		break;
	}
	case 1:		/* depth mismatch */
		n->depth = 1;
		break;
	case 2:		/* a pointer outside the fs */
		t_leaf_ext(raw, 10)->pblk = 1ull << 40;
		break;
	default:	/* more entries than room */
		n->nr = MQFS_EXT_BLOCK_MAX + 1;
		break;
	}
	mqfs_blk_seal(raw, MQFS_T_EXTENT, blk, hdr->gen);
	t_corrupt_check(&c);
}
END_TEST

static Suite *extent_suite(void)
{
	Suite *s = suite_create("extent");
	TCase *tc = t_tcase(s, "extent", 120);

	tcase_add_test(tc, test_inline_merge_and_tree);
	tcase_add_test(tc, test_map_holes_and_written);
	tcase_add_loop_test(tc, test_random_model, 0, 2);
	tcase_add_test(tc, test_depth2_remount_and_accounting);
	tcase_add_test(tc, test_append_fill);
	tcase_add_test(tc, test_enospc_leaves_map);
	tcase_add_loop_test(tc, test_corrupt_leaf, 0, 4);
	return s;
}

T_MAIN(extent_suite)
