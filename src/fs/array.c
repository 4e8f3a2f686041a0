// SPDX-License-Identifier: MIT
/*
 * array.c - the growable array the filesystem and fsck keep their lists
 * in: one way to make room, doubling, so that a failed allocation leaves
 * the array as it was.
 */
#include <errno.h>
#include <stdlib.h>

#include "fs_i.h"

int mqfs_array_reserve(void *arrayp, size_t *cap, size_t n, size_t elem,
		       size_t first)
{
	void **array = arrayp;
	size_t want;
	void *p;

	if (n < *cap)
		return 0;
	want = *cap ? *cap * 2 : first;
	if (want <= n || want > SIZE_MAX / elem)
		return -ENOMEM;
	p = realloc(*array, want * elem);
	if (!p)
		return -ENOMEM;
	*array = p;
	*cap = want;
	return 0;
}
