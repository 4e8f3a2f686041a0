/* SPDX-License-Identifier: MIT */
/*
 * test_rbtree.c - Check unit tests for the intrusive red-black tree
 * (mqfs/rbtree.h).  Every test drives a real tree of "items" keyed like
 * mq-deadline requests (u64 sector, duplicates go right) next to a plain
 * sorted array used as the reference model, and after each change verifies
 * the red-black invariants, the parent pointers, and that both in-order walks
 * match the model node for node.  Randomness comes from a local xorshift
 * generator with fixed seeds, so every failure is reproducible from the seed
 * and op index printed in its message.
 */
#include <check.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mqfs/rbtree.h"
#include "t_main.h"

#define POOL_SIZE	512

struct item {
	uint64_t key;
	unsigned int seq;		/* global insertion order */
	struct mq_rb_node rb;
};

/*
 * The tree under test plus its reference model: ref[] holds the items that
 * are in the tree, sorted by (key, seq) - exactly the in-order sequence the
 * tree must produce when equal keys are always linked to the right.
 */
static struct {
	struct mq_rb_root root;
	struct item items[POOL_SIZE];
	struct item *ref[POOL_SIZE];
	size_t nref;
	unsigned int free_idx[POOL_SIZE];	/* stack of unused items */
	size_t nfree;
	unsigned int next_seq;
} w;

static uint64_t rng_state;

static void rng_seed(uint64_t seed)
{
	rng_state = seed ? seed : 1;	/* xorshift must not start at zero */
}

static uint64_t rng_next(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static unsigned int rng_below(unsigned int bound)
{
	return (unsigned int)(rng_next() % bound);
}

static void world_reset(void)
{
	memset(&w, 0, sizeof(w));
	for (unsigned int i = 0; i < POOL_SIZE; i++)
		w.free_idx[i] = POOL_SIZE - 1 - i;
	w.nfree = POOL_SIZE;
}

static struct item *rb_item(const struct mq_rb_node *n)
{
	return n ? mq_rb_entry(n, struct item, rb) : NULL;
}

/* The canonical deadline-style insert: equal keys go to the right. */
static void tree_insert(struct item *it)
{
	struct mq_rb_node **link = &w.root.node, *parent = NULL;

	while (*link) {
		parent = *link;
		if (it->key < rb_item(parent)->key)
			link = &parent->left;
		else
			link = &parent->right;
	}
	mq_rb_link_node(&it->rb, parent, link);
	mq_rb_insert_color(&it->rb, &w.root);
}

/* First node with key >= @key, i.e. the oldest among equal keys. */
static struct item *tree_lower_bound(uint64_t key)
{
	struct mq_rb_node *n = w.root.node;
	struct item *best = NULL;

	while (n) {
		struct item *cur = rb_item(n);

		if (cur->key >= key) {
			best = cur;
			n = n->left;
		} else {
			n = n->right;
		}
	}
	return best;
}

static size_t ref_lower_bound_idx(uint64_t key)
{
	size_t lo = 0, hi = w.nref;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (w.ref[mid]->key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct item *ref_lower_bound(uint64_t key)
{
	size_t i = ref_lower_bound_idx(key);

	return i < w.nref ? w.ref[i] : NULL;
}

/* Take a fresh item, insert it in both the tree and the model. */
static struct item *add_key(uint64_t key)
{
	struct item *it;
	size_t pos;

	ck_assert_uint_gt(w.nfree, 0);
	it = &w.items[w.free_idx[--w.nfree]];
	it->key = key;
	it->seq = w.next_seq++;
	tree_insert(it);

	/* After every existing equal key: lower bound of key + 1. */
	pos = ref_lower_bound_idx(key + 1);
	memmove(&w.ref[pos + 1], &w.ref[pos],
		(w.nref - pos) * sizeof(w.ref[0]));
	w.ref[pos] = it;
	w.nref++;
	return it;
}

/* Erase the model's @idx-th item from both; returns it (cleared). */
static struct item *del_idx(size_t idx)
{
	struct item *it = w.ref[idx];

	mq_rb_erase(&it->rb, &w.root);
	mq_rb_clear_node(&it->rb);
	memmove(&w.ref[idx], &w.ref[idx + 1],
		(w.nref - idx - 1) * sizeof(w.ref[0]));
	w.nref--;
	w.free_idx[w.nfree++] = (unsigned int)(it - w.items);
	return it;
}

static size_t ref_index_of(const struct item *it)
{
	for (size_t i = 0; i < w.nref; i++)
		if (w.ref[i] == it)
			return i;
	ck_abort_msg("item key %" PRIu64 " seq %u not in model", it->key,
		     it->seq);
	return 0;
}

static char errbuf[256];

static const char *fail_fmt(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(errbuf, sizeof(errbuf), fmt, ap);
	va_end(ap);
	return errbuf;
}

/* Recursive invariant check; *bh gets the black height of @n's subtree. */
static const char *check_subtree(const struct mq_rb_node *n,
				 const struct mq_rb_node *parent,
				 int *bh, size_t *count)
{
	const char *err;
	int lbh, rbh;

	if (!n) {
		*bh = 1;
		return NULL;
	}
	if (mq_rb_parent(n) != parent)
		return fail_fmt("bad parent pointer at key %" PRIu64,
				rb_item(n)->key);
	if (mq_rb_is_red(n) && (mq_rb_is_red(n->left) ||
				mq_rb_is_red(n->right)))
		return fail_fmt("red-red at key %" PRIu64, rb_item(n)->key);
	if ((err = check_subtree(n->left, n, &lbh, count)) ||
	    (err = check_subtree(n->right, n, &rbh, count)))
		return err;
	if (lbh != rbh)
		return fail_fmt("black height %d vs %d under key %" PRIu64,
				lbh, rbh, rb_item(n)->key);
	*bh = lbh + mq_rb_is_black(n);
	++*count;
	return NULL;
}

/* Full check of tree against model; NULL if all is well. */
static const char *check_tree(void)
{
	const struct mq_rb_node *n;
	size_t count = 0, i;
	const char *err;
	int bh;

	if (mq_rb_empty(&w.root) != (w.nref == 0))
		return "mq_rb_empty disagrees with model";
	if (!mq_rb_is_black(w.root.node))
		return "root is red";
	if ((err = check_subtree(w.root.node, NULL, &bh, &count)))
		return err;
	if (count != w.nref)
		return fail_fmt("tree has %zu nodes, model %zu", count, w.nref);
	for (i = 0, n = mq_rb_first(&w.root); n; n = mq_rb_next(n), i++)
		if (i >= w.nref || rb_item(n) != w.ref[i])
			return fail_fmt("forward walk differs at %zu", i);
	if (i != w.nref)
		return fail_fmt("forward walk stopped at %zu", i);
	for (i = w.nref, n = mq_rb_last(&w.root); n; n = mq_rb_prev(n))
		if (i == 0 || rb_item(n) != w.ref[--i])
			return fail_fmt("backward walk differs at %zu", i);
	if (i != 0)
		return fail_fmt("backward walk stopped at %zu", i);
	return NULL;
}

static int count_children(const struct mq_rb_node *n)
{
	return (n->left != NULL) + (n->right != NULL);
}

/* Some node in the tree with @nchild children, other than the root. */
static struct mq_rb_node *find_nonroot(int nchild)
{
	struct mq_rb_node *n;

	for (n = mq_rb_first(&w.root); n; n = mq_rb_next(n))
		if (n != w.root.node && count_children(n) == nchild)
			return n;
	return NULL;
}

/* ---------------------------------------------------------------------- */

START_TEST(test_empty)
{
	world_reset();
	ck_assert(mq_rb_empty(&w.root));
	ck_assert_ptr_null(mq_rb_first(&w.root));
	ck_assert_ptr_null(mq_rb_last(&w.root));
	ck_assert_ptr_null(tree_lower_bound(0));
	ck_assert_ptr_null(check_tree());

	mq_rb_clear_node(&w.items[0].rb);
	ck_assert(mq_rb_node_empty(&w.items[0].rb));
	ck_assert_ptr_null(mq_rb_next(&w.items[0].rb));
	ck_assert_ptr_null(mq_rb_prev(&w.items[0].rb));
}
END_TEST

/* _i picks the order: 0 ascending, 1 descending, 2 shuffled. */
START_TEST(test_insert_walk)
{
	static const char *const names[] = { "ascending", "descending",
					     "shuffled" };
	const uint64_t seed = 0x5eed0001;
	uint64_t keys[300];
	const char *err;
	size_t i;

	world_reset();
	rng_seed(seed);
	for (i = 0; i < MQ_ARRAY_SIZE(keys); i++)
		keys[i] = _i == 1 ? MQ_ARRAY_SIZE(keys) - i : i * 8;
	for (i = MQ_ARRAY_SIZE(keys) - 1; _i == 2 && i > 0; i--) {
		size_t j = rng_below((unsigned int)i + 1);
		uint64_t t = keys[i];

		keys[i] = keys[j];
		keys[j] = t;
	}
	for (i = 0; i < MQ_ARRAY_SIZE(keys); i++) {
		struct item *it = add_key(keys[i]);

		ck_assert(!mq_rb_node_empty(&it->rb));
		err = check_tree();
		ck_assert_msg(!err, "%s seed %#" PRIx64 " insert #%zu key %"
			      PRIu64 ": %s", names[_i], seed, i, keys[i], err);
	}
	ck_assert_ptr_eq(rb_item(mq_rb_first(&w.root)), w.ref[0]);
	ck_assert_ptr_eq(rb_item(mq_rb_last(&w.root)), w.ref[w.nref - 1]);
	for (i = 1; i < w.nref; i++)
		ck_assert_uint_lt(w.ref[i - 1]->key, w.ref[i]->key);
}
END_TEST

START_TEST(test_erase_single)
{
	struct item *it;

	world_reset();
	it = add_key(42);
	ck_assert_ptr_eq(w.root.node, &it->rb);
	ck_assert(mq_rb_is_black(&it->rb));
	ck_assert_ptr_null(mq_rb_parent(&it->rb));
	del_idx(0);
	ck_assert(mq_rb_empty(&w.root));
	ck_assert(mq_rb_node_empty(&it->rb));
	ck_assert_ptr_null(check_tree());
}
END_TEST

/* Remove one specific node and check tree + that it is really gone. */
static void erase_node_checked(struct mq_rb_node *n, const char *what,
			       uint64_t seed)
{
	struct item *it = rb_item(n);
	const char *err;

	del_idx(ref_index_of(it));
	ck_assert_msg(mq_rb_node_empty(&it->rb), "%s: node not cleared", what);
	err = check_tree();
	ck_assert_msg(!err, "seed %#" PRIx64 " erase %s key %" PRIu64 ": %s",
		      seed, what, it->key, err);
	ck_assert_msg(tree_lower_bound(it->key) == ref_lower_bound(it->key),
		      "seed %#" PRIx64 " erase %s: stale lower bound", seed,
		      what);
}

START_TEST(test_erase_cases)
{
	const uint64_t seed = 0x5eed0002;
	struct mq_rb_node *n, *old_root;
	unsigned int step = 0;

	world_reset();
	rng_seed(seed);
	for (int i = 0; i < 63; i++)
		add_key(rng_below(1000));
	ck_assert_ptr_null(check_tree());

	old_root = w.root.node;
	ck_assert_int_eq(count_children(old_root), 2);
	erase_node_checked(old_root, "root", seed);
	ck_assert_ptr_ne(w.root.node, old_root);

	n = find_nonroot(0);
	ck_assert_ptr_nonnull(n);
	erase_node_checked(n, "leaf", seed);

	n = find_nonroot(2);
	ck_assert_ptr_nonnull(n);
	erase_node_checked(n, "inner", seed);

	/* A one-child node (black with a red leaf) appears after some churn. */
	while (!(n = find_nonroot(1)) && w.nref > 2)
		erase_node_checked(find_nonroot(0), "leaf", seed);
	if (n)
		erase_node_checked(n, "one-child", seed);

	/* Drain through the root: the hardest spot, always two-sided. */
	while (!mq_rb_empty(&w.root)) {
		char what[32];

		snprintf(what, sizeof(what), "root step %u", step++);
		erase_node_checked(w.root.node, what, seed);
	}
	ck_assert_uint_eq(w.nref, 0);
}
END_TEST

START_TEST(test_duplicates)
{
	const uint64_t seed = 0x5eed0003;
	const char *err;
	struct mq_rb_node *n;
	int i;

	world_reset();
	rng_seed(seed);
	for (i = 0; i < 200; i++)
		add_key(rng_below(5));
	/* Drop some, add more: newcomers must land after surviving twins. */
	for (i = 0; i < 60; i++)
		del_idx(rng_below((unsigned int)w.nref));
	for (i = 0; i < 60; i++)
		add_key(rng_below(5));
	err = check_tree();
	ck_assert_msg(!err, "seed %#" PRIx64 ": %s", seed, err);

	for (n = mq_rb_first(&w.root); n && mq_rb_next(n); n = mq_rb_next(n)) {
		struct item *a = rb_item(n), *b = rb_item(mq_rb_next(n));

		ck_assert_uint_le(a->key, b->key);
		if (a->key == b->key)
			ck_assert_msg(a->seq < b->seq, "seed %#" PRIx64
				      ": key %" PRIu64 " seq %u before %u",
				      seed, a->key, a->seq, b->seq);
	}
	/* Lower bound of a duplicated key is its oldest copy. */
	for (uint64_t k = 0; k < 5; k++)
		ck_assert_ptr_eq(tree_lower_bound(k), ref_lower_bound(k));
}
END_TEST

START_TEST(test_walk_both_ways)
{
	const uint64_t seed = 0x5eed0004;
	struct mq_rb_node *n, *prev = NULL;
	size_t i;

	world_reset();
	rng_seed(seed);
	for (i = 0; i < 300; i++)
		add_key(rng_below(100));

	for (i = 0, n = mq_rb_first(&w.root); n; prev = n, n = mq_rb_next(n)) {
		ck_assert_msg(rb_item(n) == w.ref[i], "seed %#" PRIx64
			      " forward step %zu", seed, i);
		ck_assert_msg(mq_rb_prev(n) == prev, "seed %#" PRIx64
			      " prev(next) at step %zu", seed, i);
		i++;
	}
	ck_assert_uint_eq(i, w.nref);
	ck_assert_ptr_null(mq_rb_next(mq_rb_last(&w.root)));

	for (prev = NULL, n = mq_rb_last(&w.root); n;
	     prev = n, n = mq_rb_prev(n)) {
		ck_assert_msg(rb_item(n) == w.ref[--i], "seed %#" PRIx64
			      " backward step %zu", seed, i);
		ck_assert_msg(mq_rb_next(n) == prev, "seed %#" PRIx64
			      " next(prev) at step %zu", seed, i);
	}
	ck_assert_uint_eq(i, 0);
	ck_assert_ptr_null(mq_rb_prev(mq_rb_first(&w.root)));
}
END_TEST

static void check_all_lower_bounds(uint64_t seed, const char *phase)
{
	/* Even keys only, so odd probes test the "between keys" case. */
	for (uint64_t x = 0; x <= 202; x++) {
		struct item *got = tree_lower_bound(x);
		struct item *want = ref_lower_bound(x);

		ck_assert_msg(got == want, "seed %#" PRIx64 " %s: lower_bound(%"
			      PRIu64 ") got key %" PRId64 " want %" PRId64,
			      seed, phase, x, got ? (int64_t)got->key : -1,
			      want ? (int64_t)want->key : -1);
	}
}

START_TEST(test_lower_bound)
{
	const uint64_t seed = 0x5eed0005;
	int i;

	world_reset();
	rng_seed(seed);
	check_all_lower_bounds(seed, "empty");
	for (i = 0; i < 300; i++)
		add_key(2 * (uint64_t)rng_below(100));
	check_all_lower_bounds(seed, "full");
	for (i = 0; i < 200; i++)
		del_idx(rng_below((unsigned int)w.nref));
	check_all_lower_bounds(seed, "after erase");
	ck_assert_ptr_null(check_tree());
}
END_TEST

/*
 * Mixed insert/erase soak.  Keys fall in [0, 64) so long runs of duplicates
 * form; the insert bias flips halfway so the tree fills the pool and then
 * drains, exercising fix-ups at every depth.
 */
static const uint64_t random_seeds[] = { 0x12345678, 0xdeadbeef, 0x0badf00d };

START_TEST(test_random_ops)
{
	const uint64_t seed = random_seeds[_i];
	const int nops = 10000;

	world_reset();
	rng_seed(seed);
	for (int op = 0; op < nops; op++) {
		unsigned int bias = op < nops / 2 ? 60 : 40;
		bool ins = w.nref == 0 ||
			   (w.nfree > 0 && rng_below(100) < bias);
		uint64_t key, probe = rng_below(66);
		const char *err;

		if (ins)
			key = add_key(rng_below(64))->key;
		else
			key = del_idx(rng_below((unsigned int)w.nref))->key;
		err = check_tree();
		ck_assert_msg(!err, "seed %#" PRIx64 " op %d (%s %" PRIu64
			      "): %s", seed, op, ins ? "insert" : "erase",
			      key, err);
		ck_assert_msg(tree_lower_bound(probe) == ref_lower_bound(probe),
			      "seed %#" PRIx64 " op %d: lower_bound(%" PRIu64
			      ") mismatch", seed, op, probe);
	}
}
END_TEST

static Suite *rbtree_suite(void)
{
	Suite *s = suite_create("rbtree");
	TCase *tc;

	tc = tcase_create("insert");
	tcase_add_test(tc, test_empty);
	tcase_add_loop_test(tc, test_insert_walk, 0, 3);
	suite_add_tcase(s, tc);

	tc = tcase_create("erase");
	tcase_add_test(tc, test_erase_single);
	tcase_add_test(tc, test_erase_cases);
	suite_add_tcase(s, tc);

	tc = tcase_create("duplicates");
	tcase_add_test(tc, test_duplicates);
	suite_add_tcase(s, tc);

	tc = tcase_create("walk");
	tcase_add_test(tc, test_walk_both_ways);
	suite_add_tcase(s, tc);

	tc = tcase_create("lower_bound");
	tcase_add_test(tc, test_lower_bound);
	suite_add_tcase(s, tc);

	tc = tcase_create("random");
	/* O(n) check per op; leave room for valgrind / sanitizer builds. */
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_random_ops, 0,
			    (int)MQ_ARRAY_SIZE(random_seeds));
	suite_add_tcase(s, tc);

	return s;
}

T_MAIN(rbtree_suite)
