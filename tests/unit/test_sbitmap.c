/* SPDX-License-Identifier: MIT */
/*
 * test_sbitmap.c - Check unit tests for the scalable bitmap tag allocator
 * and its wait queue (sched/sbitmap.h).  Single-threaded cases pin down the
 * map geometry, the deferred-clear, hint, shallow and batch semantics the
 * block layer relies on; threaded cases check that sleepers are woken by
 * frees (joining with deadlines, never sleeping to "let things happen"),
 * that the 5 ms backstop shows up in the statistics, and that concurrent
 * get/clear never hands one tag to two owners.
 *
 * One program from four files: this one (the suite), sbitmap_map.c,
 * sbitmap_queue.c and sbitmap_stress.c (the cases, each group with its
 * own registration), sharing sbitmap_fixture.h.
 */
#include "sbitmap_fixture.h"
#include "t_main.h"

static Suite *sbitmap_suite(void)
{
	Suite *s = suite_create("sbitmap");

	sbitmap_add_map_tcases(s);
	sbitmap_add_queue_tcases(s);
	sbitmap_add_stress_tcases(s);
	return s;
}

T_MAIN(sbitmap_suite)
