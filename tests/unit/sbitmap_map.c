/* SPDX-License-Identifier: MIT */
/*
 * sbitmap_map.c - test_sbitmap's single-threaded cases of the bitmap
 * itself: the map geometry (layout), the deferred-clear and hint
 * semantics of get, shallow gets, batch gets and clear_mask, resize.
 */
#include "sbitmap_fixture.h"


/* Take every free bit; check each comes once and lies below depth. */
static unsigned int drain(struct mq_sbitmap *sb, unsigned int *hint,
			  unsigned char *seen)
{
	unsigned int n = 0;
	int bit;

	while ((bit = mq_sbitmap_get(sb, hint)) >= 0) {
		ck_assert_uint_lt((unsigned int)bit, sb->depth);
		ck_assert_msg(!seen[bit], "bit %d handed out twice", bit);
		seen[bit] = 1;
		n++;
		ck_assert_uint_le(n, sb->depth);
	}
	return n;
}

/* ------------------------------- layout -------------------------------- */

static const struct {
	unsigned int depth, shift, map_nr, last_bits;
} layouts[] = {
	{ 1,    6, 1,  1 },
	{ 3,    6, 1,  3 },
	{ 64,   4, 4,  16 },
	{ 128,  5, 4,  32 },
	{ 256,  6, 4,  64 },
	{ 1000, 6, 16, 40 },
};

START_TEST(test_layout_default_shift)
{
	struct mq_sbitmap sb;
	unsigned int depth = layouts[_i].depth;

	ck_assert_int_eq(mq_sbitmap_init(&sb, depth, -1, false), 0);
	ck_assert_uint_eq(sb.depth, depth);
	ck_assert_uint_eq(sb.shift, layouts[_i].shift);
	ck_assert_uint_eq(sb.map_nr, layouts[_i].map_nr);
	ck_assert_uint_eq(depth - ((sb.map_nr - 1) << sb.shift),
			  layouts[_i].last_bits);
	ck_assert_uint_eq((uintptr_t)sb.map % MQ_CACHELINE, 0);
	ck_assert_uint_eq(mq_sbitmap_weight(&sb), 0);
	mq_sbitmap_exit(&sb);
	ck_assert_ptr_null(sb.map);
}
END_TEST

START_TEST(test_layout_word_struct)
{
	ck_assert_uint_eq(sizeof(struct mq_sbitmap_word), 2 * MQ_CACHELINE);
	ck_assert_uint_eq(offsetof(struct mq_sbitmap_word, cleared),
			  MQ_CACHELINE);
	ck_assert_uint_eq(_Alignof(struct mq_sbitmap_word), MQ_CACHELINE);
}
END_TEST

/* The block layer embeds the queue in calloc()ed tag sets. */
START_TEST(test_layout_queue_embeddable)
{
	struct mq_sbitmap_queue *q = calloc(1, sizeof(*q));
	unsigned int hint = 0;
	int tag;

	ck_assert_uint_le(_Alignof(struct mq_sbitmap_queue),
			  _Alignof(max_align_t));
	ck_assert_uint_ge(offsetof(struct mq_sbitmap_queue, ws_active) -
			  offsetof(struct mq_sbitmap_queue, min_shallow_depth),
			  MQ_CACHELINE);
	ck_assert_ptr_nonnull(q);
	ck_assert_int_eq(mq_sbq_init(q, 128, -1, false), 0);
	tag = mq_sbq_get(q, &hint);
	ck_assert_int_eq(tag, 0);
	mq_sbq_clear(q, (unsigned int)tag, &hint);
	mq_sbq_wake_all(q);
	mq_sbq_exit(q);
	free(q);
}
END_TEST

START_TEST(test_layout_explicit_shift)
{
	struct mq_sbitmap sb;
	unsigned int hint = 0;

	ck_assert_int_eq(mq_sbitmap_init(&sb, 100, 3, false), 0);
	ck_assert_uint_eq(sb.shift, 3);
	ck_assert_uint_eq(sb.map_nr, 13);
	mq_sbitmap_exit(&sb);

	ck_assert_int_eq(mq_sbitmap_init(&sb, 100, 7, false), -EINVAL);
	ck_assert_int_eq(mq_sbitmap_init(&sb, 100, 99, false), -EINVAL);

	ck_assert_int_eq(mq_sbitmap_init(&sb, 0, -1, false), 0);
	ck_assert_uint_eq(sb.map_nr, 0);
	ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), -1);
	ck_assert_int_eq(mq_sbitmap_get_shallow(&sb, &hint, 4), -1);
	ck_assert_uint_eq(mq_sbitmap_weight(&sb), 0);
	ck_assert_uint_eq(mq_sbitmap_random_hint(&sb, 7), 0);
	mq_sbitmap_exit(&sb);
}
END_TEST

START_TEST(test_random_hint)
{
	struct mq_sbitmap sb;
	unsigned int seed, words = 0;

	ck_assert_int_eq(mq_sbitmap_init(&sb, 256, -1, false), 0);
	for (seed = 0; seed < 64; seed++) {
		unsigned int h = mq_sbitmap_random_hint(&sb, seed);

		ck_assert_uint_lt(h, 256);
		ck_assert_uint_eq(h, mq_sbitmap_random_hint(&sb, seed));
		words |= 1U << (h >> sb.shift);
	}
	ck_assert_uint_eq(words, 0xf);	/* 64 seeds reach all 4 words */
	mq_sbitmap_exit(&sb);
}
END_TEST

/* --------------------------------- get --------------------------------- */

START_TEST(test_get_until_full)
{
	static const unsigned int depths[] = { 1, 3, 64, 100, 128, 256, 1000 };
	unsigned int d;

	for (d = 0; d < MQ_ARRAY_SIZE(depths); d++) {
		struct mq_sbitmap sb;
		unsigned int depth = depths[d];
		unsigned int hint = depth / 2;
		unsigned char *seen = calloc(depth, 1);

		ck_assert_ptr_nonnull(seen);
		ck_assert_int_eq(mq_sbitmap_init(&sb, depth, -1, _i), 0);
		ck_assert_uint_eq(drain(&sb, &hint, seen), depth);
		ck_assert_uint_eq(hint, 0);	/* full map resets the hint */
		ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), -1);
		ck_assert_uint_eq(mq_sbitmap_weight(&sb), depth);
		mq_sbitmap_exit(&sb);
		free(seen);
	}
}
END_TEST

START_TEST(test_clear_is_deferred)
{
	struct mq_sbitmap sb;
	unsigned int hint = 0, i;
	unsigned char seen[64] = { 0 };

	ck_assert_int_eq(mq_sbitmap_init(&sb, 64, -1, false), 0);
	ck_assert_uint_eq(drain(&sb, &hint, seen), 64);

	mq_sbitmap_clear(&sb, 21);	/* word 1, bit 5 */
	ck_assert_uint_eq(mq_sbitmap_weight(&sb), 63);
	ck_assert_uint_eq(raw_word(&sb, 1), 0xffff);	/* still set */
	ck_assert_uint_eq(raw_cleared(&sb, 1), 1UL << 5);

	/* The next get finds the map full, folds the free and reuses it. */
	ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), 21);
	ck_assert_uint_eq(raw_cleared(&sb, 1), 0);
	ck_assert_uint_eq(mq_sbitmap_weight(&sb), 64);
	ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), -1);

	for (i = 0; i < 64; i++)
		mq_sbitmap_clear(&sb, i);
	ck_assert_uint_eq(mq_sbitmap_weight(&sb), 0);
	memset(seen, 0, sizeof(seen));
	ck_assert_uint_eq(drain(&sb, &hint, seen), 64);
	mq_sbitmap_exit(&sb);
}
END_TEST

START_TEST(test_deferred_clear_in_hinted_word)
{
	struct mq_sbitmap sb;
	unsigned int hint = 0, i;

	ck_assert_int_eq(mq_sbitmap_init(&sb, 256, -1, false), 0);
	for (i = 0; i < 64; i++)
		ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), (int)i);
	mq_sbitmap_clear(&sb, 10);
	/* Word 0 is full but has a deferred free: reused before word 1. */
	hint = 3;
	ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), 10);
	ck_assert_uint_eq(hint, 3);
	mq_sbitmap_exit(&sb);
}
END_TEST

START_TEST(test_hint_sequential)
{
	struct mq_sbitmap sb;
	unsigned int hint = 70, i;

	ck_assert_int_eq(mq_sbitmap_init(&sb, 256, -1, false), 0);
	for (i = 0; i < 10; i++)
		ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), (int)(70 + i));
	ck_assert_uint_eq(hint, 80);

	/* Within a word the search wraps below the hint before moving on. */
	hint = 120;
	for (i = 120; i < 128; i++)
		ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), (int)i);
	ck_assert_uint_eq(hint, 128);	/* crosses words; wraps only at depth */
	mq_sbitmap_exit(&sb);
}
END_TEST

START_TEST(test_hint_wraps_in_word)
{
	struct mq_sbitmap sb;
	unsigned int hint = 60, i;

	ck_assert_int_eq(mq_sbitmap_init(&sb, 256, -1, false), 0);
	for (i = 60; i < 64; i++)
		ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), (int)i);
	ck_assert_uint_eq(hint, 64);
	hint = 61;			/* bits 61..63 busy: wrap to bit 0 */
	ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), 0);
	ck_assert_uint_eq(hint, 61);	/* not the hinted bit: unchanged */
	hint = 255;
	ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), 255);
	ck_assert_uint_eq(hint, 0);	/* wraps at depth */
	mq_sbitmap_exit(&sb);
}
END_TEST

START_TEST(test_hint_out_of_range)
{
	struct mq_sbitmap sb;
	unsigned int hint = 5000;
	int bit;

	ck_assert_int_eq(mq_sbitmap_init(&sb, 100, -1, false), 0);
	bit = mq_sbitmap_get(&sb, &hint);
	ck_assert_int_eq(bit, 5000 % 100);
	ck_assert_uint_lt(hint, 100);
	mq_sbitmap_exit(&sb);
}
END_TEST

START_TEST(test_put_hint)
{
	struct mq_sbitmap sb, rr;
	unsigned int hint = 0;
	int a, b, c;

	ck_assert_int_eq(mq_sbitmap_init(&sb, 256, -1, false), 0);
	a = mq_sbitmap_get(&sb, &hint);
	b = mq_sbitmap_get(&sb, &hint);
	c = mq_sbitmap_get(&sb, &hint);
	ck_assert_int_eq(c, 2);
	mq_sbitmap_clear(&sb, (unsigned int)b);
	mq_sbitmap_put_hint(&sb, (unsigned int)b, &hint);
	ck_assert_uint_eq(hint, (unsigned int)b);
	/* Deferred: the next get continues right after the freed bit. */
	ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), 3);
	mq_sbitmap_put_hint(&sb, 999, &hint);	/* out of range: ignored */
	ck_assert_uint_eq(hint, (unsigned int)b);
	(void)a;
	mq_sbitmap_exit(&sb);

	ck_assert_int_eq(mq_sbitmap_init(&rr, 256, -1, true), 0);
	hint = 7;
	mq_sbitmap_put_hint(&rr, 3, &hint);
	ck_assert_uint_eq(hint, 7);		/* round robin: no reuse */
	mq_sbitmap_exit(&rr);
}
END_TEST

START_TEST(test_put_hint_reuses_after_wrap)
{
	struct mq_sbitmap sb;
	unsigned int hint = 0, i;
	int bit;

	/* One 16-bit word per 64 bits of depth: a word fills quickly. */
	ck_assert_int_eq(mq_sbitmap_init(&sb, 16, 4, false), 0);
	for (i = 0; i < 16; i++)
		ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), (int)i);
	mq_sbitmap_clear(&sb, 9);
	mq_sbitmap_put_hint(&sb, 9, &hint);
	bit = mq_sbitmap_get(&sb, &hint);
	ck_assert_int_eq(bit, 9);		/* cache-hot tag comes back */
	ck_assert_uint_eq(hint, 10);
	mq_sbitmap_exit(&sb);
}
END_TEST

START_TEST(test_round_robin)
{
	struct mq_sbitmap sb;
	unsigned int hint = 0, i;

	ck_assert_int_eq(mq_sbitmap_init(&sb, 8, -1, true), 0);
	ck_assert_uint_eq(sb.shift, 1);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), (int)i);
	mq_sbitmap_clear(&sb, 1);
	mq_sbitmap_clear(&sb, 0);
	/* Strict order: freed low bits wait until the hint comes around. */
	for (i = 3; i < 8; i++)
		ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), (int)i);
	ck_assert_uint_eq(hint, 0);
	ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), 0);
	ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), 1);
	ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), -1);

	/* A free below the hint in the hint's own word is still found. */
	mq_sbitmap_clear(&sb, 4);
	hint = 5;
	ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), 4);
	mq_sbitmap_exit(&sb);
}
END_TEST

/* ------------------------------- shallow ------------------------------- */

START_TEST(test_shallow_limits_each_word)
{
	static const struct {
		unsigned int depth, shallow, expect;
	} c[] = {
		{ 256, 5,  20 },	/* 4 words x 5 */
		{ 256, 64, 256 },
		{ 256, 99, 256 },	/* above the word size: no limit */
		{ 100, 6,  40 },	/* 6 x 16-bit words + 4-bit tail */
		{ 64,  1,  4 },
	};
	unsigned int k;

	for (k = 0; k < MQ_ARRAY_SIZE(c); k++) {
		struct mq_sbitmap sb;
		unsigned int hint = 13, n = 0, bits;
		int bit;

		ck_assert_int_eq(mq_sbitmap_init(&sb, c[k].depth, -1, false), 0);
		bits = 1U << sb.shift;
		while ((bit = mq_sbitmap_get_shallow(&sb, &hint,
						     c[k].shallow)) >= 0) {
			ck_assert_uint_lt((unsigned int)bit % bits,
					  c[k].shallow);
			n++;
		}
		ck_assert_uint_eq(n, c[k].expect);
		ck_assert_uint_eq(mq_sbitmap_weight(&sb), c[k].expect);
		ck_assert_int_eq(mq_sbitmap_get_shallow(&sb, &hint, 0), -1);
		/* A normal get still sees the rest of the map. */
		if (c[k].expect < c[k].depth)
			ck_assert_int_ge(mq_sbitmap_get(&sb, &hint), 0);
		mq_sbitmap_exit(&sb);
	}
}
END_TEST

START_TEST(test_shallow_uses_deferred_frees)
{
	struct mq_sbitmap sb;
	unsigned int hint = 0;

	ck_assert_int_eq(mq_sbitmap_init(&sb, 256, -1, false), 0);
	while (mq_sbitmap_get_shallow(&sb, &hint, 2) >= 0)
		;
	mq_sbitmap_clear(&sb, 129);
	ck_assert_int_eq(mq_sbitmap_get_shallow(&sb, &hint, 2), 129);
	mq_sbitmap_exit(&sb);
}
END_TEST

/* -------------------------------- batch -------------------------------- */

START_TEST(test_batch_contiguous)
{
	struct mq_sbitmap sb;
	unsigned int hint = 0, off = 0;
	unsigned long mask;
	int bit;

	ck_assert_int_eq(mq_sbitmap_init(&sb, 256, -1, false), 0);
	hint = 5;
	bit = mq_sbitmap_get(&sb, &hint);
	ck_assert_int_eq(bit, 5);

	hint = 0;
	mask = mq_sbitmap_get_batch(&sb, &hint, 32, &off);
	ck_assert_uint_eq(off, 0);
	ck_assert_uint_eq(mask, 0x1f);		/* stops at busy bit 5 */
	ck_assert_uint_eq(hint, 5);

	mask = mq_sbitmap_get_batch(&sb, &hint, 32, &off);
	ck_assert_uint_eq(off, 6);
	ck_assert_uint_eq(run_len(mask), 32);
	ck_assert_uint_eq(raw_word(&sb, 0), (1UL << 38) - 1);
	ck_assert_uint_eq(mq_sbitmap_weight(&sb), 38);
	mq_sbitmap_exit(&sb);
}
END_TEST

START_TEST(test_batch_loop_across_words)
{
	struct mq_sbitmap sb;
	unsigned int hint = 0, calls, i;
	int tags[64];

	ck_assert_int_eq(mq_sbitmap_init(&sb, 128, -1, false), 0);
	ck_assert_uint_eq(sb.shift, 5);
	ck_assert_uint_eq(batch_collect(&sb, &hint, 48, tags, &calls), 48);
	ck_assert_uint_eq(calls, 2);
	for (i = 0; i < 48; i++)
		ck_assert_int_eq(tags[i], (int)i);
	ck_assert_uint_eq(mq_sbitmap_weight(&sb), 48);

	/* nr above the word size is capped by one word per call. */
	ck_assert_uint_eq(batch_collect(&sb, &hint, 64, tags, &calls), 64);
	ck_assert_uint_ge(calls, 3);
	mq_sbitmap_exit(&sb);
}
END_TEST

START_TEST(test_batch_full_and_partial_word)
{
	struct mq_sbitmap sb;
	unsigned int hint = 96, off = 0, calls;
	unsigned long mask;
	int tags[128];

	/* depth 100: six 16-bit words and a 4-bit tail word. */
	ck_assert_int_eq(mq_sbitmap_init(&sb, 100, -1, false), 0);
	mask = mq_sbitmap_get_batch(&sb, &hint, 32, &off);
	ck_assert_uint_eq(off, 96);
	ck_assert_uint_eq(mask, 0xf);
	ck_assert_uint_eq(hint, 0);

	ck_assert_uint_eq(batch_collect(&sb, &hint, 128, tags, &calls), 96);
	ck_assert_uint_eq(mq_sbitmap_get_batch(&sb, &hint, 8, &off), 0);
	ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), -1);
	ck_assert_uint_eq(mq_sbitmap_weight(&sb), 100);

	/* A deferred free is folded in before the batch scan. */
	mq_sbitmap_clear(&sb, 40);
	mq_sbitmap_clear(&sb, 41);
	mask = mq_sbitmap_get_batch(&sb, &hint, 8, &off);
	ck_assert_uint_eq(off, 40);
	ck_assert_uint_eq(mask, 0x3);
	ck_assert_uint_eq(mq_sbitmap_get_batch(&sb, &hint, 0, &off), 0);
	mq_sbitmap_exit(&sb);
}
END_TEST

START_TEST(test_batch_round_robin)
{
	struct mq_sbitmap sb;
	unsigned int hint = 0, off = 0;

	ck_assert_int_eq(mq_sbitmap_init(&sb, 256, -1, true), 0);
	ck_assert_uint_eq(mq_sbitmap_get_batch(&sb, &hint, 8, &off), 0);
	ck_assert_uint_eq(mq_sbitmap_weight(&sb), 0);
	mq_sbitmap_exit(&sb);
}
END_TEST

START_TEST(test_clear_mask)
{
	struct mq_sbitmap sb;
	unsigned int hint = 64, off = 0;
	unsigned long mask;

	ck_assert_int_eq(mq_sbitmap_init(&sb, 256, -1, false), 0);
	mask = mq_sbitmap_get_batch(&sb, &hint, 32, &off);
	ck_assert_uint_eq(off, 64);
	ck_assert_uint_eq(mask, 0xffffffffUL);
	mq_sbitmap_clear_mask(&sb, off >> sb.shift, 0xff0UL << (off & 63));
	ck_assert_uint_eq(raw_cleared(&sb, 1), 0xff0UL);
	ck_assert_uint_eq(mq_sbitmap_weight(&sb), 24);
	/* Next batch in that word folds the frees and starts at bit 4. */
	hint = 64;
	mask = mq_sbitmap_get_batch(&sb, &hint, 32, &off);
	ck_assert_uint_eq(off, 68);
	ck_assert_uint_eq(mask, 0xff);
	ck_assert_uint_eq(raw_cleared(&sb, 1), 0);
	mq_sbitmap_exit(&sb);
}
END_TEST

/* -------------------------------- resize ------------------------------- */

START_TEST(test_resize)
{
	struct mq_sbitmap sb;
	unsigned char seen[256] = { 0 };
	unsigned int hint = 0, i;

	ck_assert_int_eq(mq_sbitmap_init(&sb, 256, -1, false), 0);
	mq_sbitmap_resize(&sb, 100);
	ck_assert_uint_eq(sb.depth, 100);
	ck_assert_uint_eq(sb.shift, 6);		/* geometry kept */
	ck_assert_uint_eq(sb.map_nr, 2);
	ck_assert_uint_eq(drain(&sb, &hint, seen), 100);

	hint = 200;				/* stale hint from old depth */
	ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), -1);

	mq_sbitmap_clear(&sb, 99);
	mq_sbitmap_resize(&sb, 256);		/* folds pending frees */
	ck_assert_uint_eq(raw_cleared(&sb, 1), 0);
	ck_assert_uint_eq(mq_sbitmap_weight(&sb), 99);
	seen[99] = 0;
	ck_assert_uint_eq(drain(&sb, &hint, seen), 157);
	for (i = 0; i < 256; i++)
		ck_assert(seen[i]);

	/* Shrink while tags are held; freeing them afterwards is fine. */
	mq_sbitmap_resize(&sb, 64);
	ck_assert_uint_eq(mq_sbitmap_weight(&sb), 64);
	mq_sbitmap_clear(&sb, 200);
	mq_sbitmap_clear(&sb, 3);
	ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), 3);
	mq_sbitmap_exit(&sb);
}
END_TEST

void sbitmap_add_map_tcases(Suite *s)
{
	TCase *tc;

	tc = tcase_create("layout");
	tcase_add_loop_test(tc, test_layout_default_shift, 0,
			    (int)MQ_ARRAY_SIZE(layouts));
	tcase_add_test(tc, test_layout_word_struct);
	tcase_add_test(tc, test_layout_queue_embeddable);
	tcase_add_test(tc, test_layout_explicit_shift);
	tcase_add_test(tc, test_random_hint);
	suite_add_tcase(s, tc);

	tc = tcase_create("get");
	tcase_add_loop_test(tc, test_get_until_full, 0, 2);	/* rr off/on */
	tcase_add_test(tc, test_clear_is_deferred);
	tcase_add_test(tc, test_deferred_clear_in_hinted_word);
	tcase_add_test(tc, test_hint_sequential);
	tcase_add_test(tc, test_hint_wraps_in_word);
	tcase_add_test(tc, test_hint_out_of_range);
	tcase_add_test(tc, test_put_hint);
	tcase_add_test(tc, test_put_hint_reuses_after_wrap);
	tcase_add_test(tc, test_round_robin);
	suite_add_tcase(s, tc);

	tc = tcase_create("shallow");
	tcase_add_test(tc, test_shallow_limits_each_word);
	tcase_add_test(tc, test_shallow_uses_deferred_frees);
	suite_add_tcase(s, tc);

	tc = tcase_create("batch");
	tcase_add_test(tc, test_batch_contiguous);
	tcase_add_test(tc, test_batch_loop_across_words);
	tcase_add_test(tc, test_batch_full_and_partial_word);
	tcase_add_test(tc, test_batch_round_robin);
	tcase_add_test(tc, test_clear_mask);
	suite_add_tcase(s, tc);

	tc = tcase_create("resize");
	tcase_add_test(tc, test_resize);
	suite_add_tcase(s, tc);
}
