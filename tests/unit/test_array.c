// SPDX-License-Identifier: MIT
/*
 * test_array.c - mqfs_array_reserve (src/fs/array.c): the first room,
 * doubling when full, nothing done with room left, and a size that
 * cannot be allocated refused with the array as it was.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>

#include "fs_i.h"
#include "t_main.h"

START_TEST(test_grows_by_doubling)
{
	uint64_t *v = NULL;
	size_t cap = 0, n;

	ck_assert_int_eq(mqfs_array_reserve(&v, &cap, 0, sizeof(*v), 4), 0);
	ck_assert_uint_eq(cap, 4);
	for (n = 0; n < 100; n++) {
		size_t before = cap;

		ck_assert_int_eq(mqfs_array_reserve(&v, &cap, n, sizeof(*v), 4),
				 0);
		ck_assert_uint_gt(cap, n);
		ck_assert(cap == before || (n == before && cap == 2 * before));
		v[n] = n * 7;		/* ASan: the room is real */
	}
	for (n = 0; n < 100; n++)
		ck_assert_uint_eq(v[n], n * 7);
	ck_assert_uint_eq(cap, 128);
	free(v);
}
END_TEST

START_TEST(test_refusal_keeps_the_array)
{
	char *v = NULL;
	size_t cap = 0;

	ck_assert_int_eq(mqfs_array_reserve(&v, &cap, 0, 1, 8), 0);
	v[0] = 'x';
	/* 16 elements of SIZE_MAX / 8 bytes cannot be asked for. */
	ck_assert_int_eq(mqfs_array_reserve(&v, &cap, 8, SIZE_MAX / 8, 8),
			 -ENOMEM);
	ck_assert_uint_eq(cap, 8);
	ck_assert_int_eq(v[0], 'x');
	free(v);
}
END_TEST

static Suite *array_suite(void)
{
	Suite *s = suite_create("array");
	TCase *tc = t_tcase(s, "reserve", 10);

	tcase_add_test(tc, test_grows_by_doubling);
	tcase_add_test(tc, test_refusal_keeps_the_array);
	return s;
}

T_MAIN(array_suite)
