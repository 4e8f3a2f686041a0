// SPDX-License-Identifier: MIT
/*
 * test_file.c - file data (src/fs/file.c, fspace.c) through the public
 * calls, with synchronous wrappers around the asynchronous read and
 * write, checked against a reference copy of every file: aligned and
 * unaligned I/O, sparse files, reads across many extents, O_APPEND,
 * truncate down and up, every fallocate mode, SEEK_DATA/SEEK_HOLE, EOF,
 * the size limit, read-only mounts, ENOSPC on a small fs (short count,
 * then ENOSPC, and a consistent fs), random operations across remounts,
 * and threads; overwrites write from the caller's aligned memory and
 * keep their times in memory until a commit, fsync, unmount or eviction
 * writes them.
 *
 * Failures name the test, the step and the seed (T_FILE_SEED reruns).
 *
 * One program from eight files: this one (the suite), file_io.c,
 * file_limits.c, file_crash.c, file_random.c, file_times.c and
 * file_release.c (the cases, in this order), sharing file_fixture.c/.h.
 */
#include "file_fixture.h"
#include "t_main.h"

static Suite *file_suite(void)
{
	Suite *s = suite_create("file");
	TCase *tc = t_tcase(s, "file", 120);

	file_add_io_tests(tc);
	file_add_limits_tests(tc);
	file_add_crash_tests(tc);
	file_add_random_tests(tc);
	file_add_times_tests(tc);
	file_add_release_tests(tc);
	return s;
}

T_MAIN(file_suite)
