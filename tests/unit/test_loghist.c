// SPDX-License-Identifier: MIT
/*
 * test_loghist.c - the log-linear histogram's buckets (mqfs/loghist.h),
 * which mqfs-bench and mqfs-load report percentiles from.
 *
 * Tested, at the sub_bits both tools use (4 and 7): below 2^sub_bits a
 * bucket is one value; above, each value lands in a bucket whose
 * reported value lies in the same bucket, is its middle (within half a
 * bucket of any member, as fio's plat_idx_to_val), and indices grow
 * with the values, one bucket after another with no gap.
 */
#include <check.h>
#include <stdint.h>

#include "mqfs/loghist.h"
#include "t_main.h"

static const unsigned lh_bits[] = { 4, 7 };

/* Every value up to 2^20, and powers of two around the top. */
START_TEST(test_value_in_bucket)
{
	unsigned s = lh_bits[_i];

	for (uint64_t v = 0; v < (1u << 20); v++) {
		unsigned idx = mq_loghist_index(v, s);
		uint64_t mid = mq_loghist_value(idx, s);
		uint64_t width = v < (1u << s) ? 1 :
			(uint64_t)1 << (63 - __builtin_clzll(v) - s);

		ck_assert_uint_eq(mq_loghist_index(mid, s), idx);
		ck_assert_uint_le(mid > v ? mid - v : v - mid, width / 2);
		if (v < (1u << s))
			ck_assert_uint_eq(mid, v);
	}
	for (unsigned b = s + 1; b < 63; b++) {
		uint64_t v = (uint64_t)1 << b;
		unsigned idx = mq_loghist_index(v, s);

		ck_assert_uint_eq(mq_loghist_value(idx, s),
				  v + ((v >> s) >> 1));
		ck_assert_uint_eq(mq_loghist_index(v - 1, s), idx - 1);
	}
}
END_TEST

/* Consecutive values never skip a bucket. */
START_TEST(test_index_contiguous)
{
	unsigned s = lh_bits[_i], prev = 0;

	for (uint64_t v = 1; v < (1u << 22); v++) {
		unsigned idx = mq_loghist_index(v, s);

		ck_assert(idx == prev || idx == prev + 1);
		prev = idx;
	}
}
END_TEST

static Suite *loghist_suite(void)
{
	Suite *s = suite_create("loghist");
	TCase *tc = t_tcase(s, "loghist", 60);

	tcase_add_loop_test(tc, test_value_in_bucket, 0, 2);
	tcase_add_loop_test(tc, test_index_contiguous, 0, 2);
	return s;
}

T_MAIN(loghist_suite)
