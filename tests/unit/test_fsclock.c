// SPDX-License-Identifier: MIT
/*
 * test_fsclock.c - the filesystem's clock (fsclock.c): it reads the
 * kernel's coarse wall clock, so it never runs ahead of the kernel's own
 * stamps; a kernel stamp it is shown becomes its floor; times set by
 * hand in the future, or before 1970, do not move it; and it never goes
 * backwards.
 */
#include <check.h>
#include <stdint.h>
#include <time.h>

#include "fs_i.h"
#include "t_main.h"

#define NS	1000000000ull

static uint64_t t_read(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * NS + (uint64_t)ts.tv_nsec;
}

static uint64_t t_now(void)
{
	uint64_t sec;
	uint32_t nsec;

	mqfs_now(&sec, &nsec);
	ck_assert_uint_lt(nsec, NS);
	return sec * NS + nsec;
}

/* Between the coarse clock read before and the precise one after, and
 * never backwards. */
START_TEST(test_coarse_monotonic)
{
	uint64_t before = t_read(CLOCK_REALTIME_COARSE);
	uint64_t prev = t_now();

	ck_assert_uint_ge(prev, before);
	ck_assert_uint_le(prev, t_read(CLOCK_REALTIME));
	for (int i = 0; i < 100000; i++) {
		uint64_t now = t_now();

		ck_assert_uint_ge(now, prev);
		prev = now;
	}
}
END_TEST

/* A stamp of the precise clock (as the kernel's multigrain floor may
 * be) is not undercut; a later one raises the floor again. */
START_TEST(test_floor)
{
	for (int i = 0; i < 1000; i++) {
		uint64_t stamp = t_read(CLOCK_REALTIME);

		mqfs_clock_saw(stamp / NS, (uint32_t)(stamp % NS));
		ck_assert_uint_ge(t_now(), stamp);
	}
}
END_TEST

/* touch -d 2100, or a time before 1970 (a huge unsigned second), is no
 * kernel stamp: now stays now. */
START_TEST(test_future_ignored)
{
	uint64_t ahead = t_read(CLOCK_REALTIME) + 3600 * NS;

	mqfs_clock_saw(ahead / NS, (uint32_t)(ahead % NS));
	mqfs_clock_saw(UINT64_MAX - 5, 0);
	mqfs_clock_saw(0, (uint32_t)NS);	/* no such nanosecond */
	ck_assert_uint_le(t_now(), t_read(CLOCK_REALTIME));
}
END_TEST

static Suite *fsclock_suite(void)
{
	Suite *s = suite_create("fsclock");
	TCase *tc = t_tcase(s, "fsclock", 30);

	tcase_add_test(tc, test_coarse_monotonic);
	tcase_add_test(tc, test_floor);
	tcase_add_test(tc, test_future_ignored);
	return s;
}

T_MAIN(fsclock_suite)
