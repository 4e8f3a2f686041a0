// SPDX-License-Identifier: MIT
/*
 * test_alloc.c - allocation groups (src/fs/alloc.c): block runs near a
 * goal, contiguity, ENOSPC and recovery, busy blocks held until their
 * transaction commits, counts across remounts, directories spread over
 * AGs, and threads allocating at once never sharing a block.
 */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>

#include "t_fs.h"
#include "t_main.h"

#define T_SIZE		(32 * T_FS_MIB)	/* 8 AGs of 1024 blocks */
#define T_CREDITS	8u

/* ---- helpers -------------------------------------------------------------- */

/* First data block of AG @ag (after its inode table). */
static uint64_t t_data_start(struct mqfs_fs *fs, uint32_t ag)
{
	return mqfs_fs_ag_meta(fs, ag) + 3 + fs->itable_blocks;
}

/* The AG header's counts, as the buffer cache holds them. */
static struct mqfs_ag t_ag_header(struct mqfs_fs *fs, uint32_t ag)
{
	struct mqfs_buf *b;
	struct mqfs_ag h;

	ck_assert_int_eq(mqfs_buf_read(fs, mqfs_fs_ag_meta(fs, ag), MQFS_T_AG, &b), 0);
	mqfs_buf_lock(b);
	h = *(struct mqfs_ag *)b->data;
	mqfs_buf_unlock(b);
	mqfs_buf_put(b);
	return h;
}

static int t_alloc(struct mqfs_fs *fs, uint64_t goal, uint32_t want,
		   uint64_t *start, uint32_t *got)
{
	struct mqfs_handle h;
	int err, err2;

	ck_assert_int_eq(mqfs_trans_start(fs, T_CREDITS, &h), 0);
	err = mqfs_alloc_blocks(&h, goal, want, start, got);
	err2 = mqfs_trans_stop(&h);
	ck_assert_int_eq(err2, 0);
	return err;
}

static int t_free(struct mqfs_fs *fs, uint64_t start, uint32_t count)
{
	struct mqfs_handle h;
	int err;

	ck_assert_int_eq(mqfs_trans_start(fs, T_CREDITS, &h), 0);
	err = mqfs_free_blocks(&h, start, count);
	ck_assert_int_eq(mqfs_trans_stop(&h), 0);
	return err;
}

static bool t_used(struct mqfs_fs *fs, uint64_t blk)
{
	bool used;

	ck_assert_int_eq(mqfs_block_in_use(fs, blk, &used), 0);
	return used;
}

static void t_check_range(struct mqfs_fs *fs, uint64_t start, uint32_t n,
			  bool want_used)
{
	for (uint32_t i = 0; i < n; i++)
		ck_assert_msg(t_used(fs, start + i) == want_used,
			      "block %llu: used %d, want %d",
			      (unsigned long long)(start + i), !want_used,
			      want_used);
}

/* ---- tests ----------------------------------------------------------------- */

/* A run is marked, counted in the AG header and fs totals, and freed. */
START_TEST(test_alloc_free_counts)
{
	struct t_fs t;
	uint64_t start, free0;
	uint32_t got, ag, hfree;

	t_fs_make(&t, T_SIZE);
	free0 = atomic_load(&t.fs->free_blocks);
	ck_assert_int_eq(t_alloc(t.fs, 0, 10, &start, &got), 0);
	ck_assert_uint_eq(got, 10);
	ag = (uint32_t)(start / t.fs->ag_blocks);
	ck_assert_uint_eq((start + got - 1) / t.fs->ag_blocks, ag);
	ck_assert_uint_ge(start, t_data_start(t.fs, ag));
	t_check_range(t.fs, start, got, true);
	ck_assert_uint_eq(atomic_load(&t.fs->free_blocks), free0 - 10);
	hfree = t_ag_header(t.fs, ag).free_blocks;
	ck_assert_int_eq(t_free(t.fs, start, got), 0);
	t_check_range(t.fs, start, got, false);
	ck_assert_uint_eq(atomic_load(&t.fs->free_blocks), free0);
	ck_assert_uint_eq(t_ag_header(t.fs, ag).free_blocks, hfree + 10);
	ck_assert_int_eq(t_alloc(t.fs, 0, 0, &start, &got), -EINVAL);
	t_fs_destroy(&t);
}
END_TEST

/* Exactly the goal when free; extending a run stays contiguous. */
START_TEST(test_alloc_goal_contiguous)
{
	struct t_fs t;
	uint64_t goal, start, s2;
	uint32_t got, g2;

	t_fs_make(&t, T_SIZE);
	goal = t_data_start(t.fs, 3) + 100;
	ck_assert_int_eq(t_alloc(t.fs, goal, 4, &start, &got), 0);
	ck_assert_uint_eq(start, goal);
	ck_assert_uint_eq(got, 4);
	ck_assert_int_eq(t_alloc(t.fs, goal + 4, 8, &s2, &g2), 0);
	ck_assert_uint_eq(s2, goal + 4);
	ck_assert_uint_eq(g2, 8);
	/* A goal inside a used run: the first fitting run after it. */
	ck_assert_int_eq(t_alloc(t.fs, goal, 5, &s2, &g2), 0);
	ck_assert_uint_eq(s2, goal + 12);
	ck_assert_uint_eq(g2, 5);
	/* A goal on metadata: still a data run, in that AG. */
	ck_assert_int_eq(t_alloc(t.fs, mqfs_fs_ag_meta(t.fs, 5), 3, &s2, &g2), 0);
	ck_assert_uint_eq(s2, t_data_start(t.fs, 5));
	ck_assert_uint_eq(g2, 3);
	t_fs_destroy(&t);
}
END_TEST

/* Asking for more than an AG holds gives a partial (longest) run. */
START_TEST(test_alloc_partial_run)
{
	struct t_fs t;
	uint64_t start, ds = 0;
	uint32_t got;

	t_fs_make(&t, T_SIZE);
	ds = t_data_start(t.fs, 2);
	ck_assert_int_eq(t_alloc(t.fs, ds, 4000, &start, &got), 0);
	ck_assert_uint_eq(start, ds);
	ck_assert_uint_eq(got, (uint32_t)(3 * t.fs->ag_blocks - ds));
	t_check_range(t.fs, start, got, true);
	ck_assert_uint_eq(t_ag_header(t.fs, 2).free_blocks, 0);
	/* AG 2 is full: the next goal there moves to another AG. */
	ck_assert_int_eq(t_alloc(t.fs, ds, 1, &start, &got), 0);
	ck_assert_uint_ne(start / t.fs->ag_blocks, 2);
	t_fs_destroy(&t);
}
END_TEST

struct t_run {
	uint64_t start;
	uint32_t len;
};

static int t_run_cmp(const void *a, const void *b)
{
	const struct t_run *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Sorted runs must not overlap. */
static void t_check_disjoint(struct t_run *runs, size_t n)
{
	qsort(runs, n, sizeof(*runs), t_run_cmp);
	for (size_t i = 1; i < n; i++)
		ck_assert_msg(runs[i - 1].start + runs[i - 1].len <=
			      runs[i].start, "runs %llu+%u and %llu overlap",
			      (unsigned long long)runs[i - 1].start,
			      runs[i - 1].len,
			      (unsigned long long)runs[i].start);
}

/* Fill the filesystem, check ENOSPC, then free: busy until commit. */
START_TEST(test_alloc_enospc_busy)
{
	struct t_fs t;
	struct t_run *runs;
	size_t n = 0, cap = 4096;
	uint64_t total = 0, free0, start;
	uint32_t got;
	int err;

	t_fs_make(&t, T_SIZE);
	free0 = atomic_load(&t.fs->free_blocks);
	runs = malloc(cap * sizeof(*runs));
	ck_assert_ptr_nonnull(runs);
	while ((err = t_alloc(t.fs, 0, 37, &start, &got)) == 0) {
		ck_assert_uint_lt(n, cap);
		runs[n++] = (struct t_run){ start, got };
		total += got;
	}
	ck_assert_int_eq(err, -ENOSPC);
	ck_assert_uint_eq(total, free0);
	ck_assert_uint_eq(atomic_load(&t.fs->free_blocks), 0);
	t_check_disjoint(runs, n);
	/* Freed but not committed: still not allocatable. */
	ck_assert_int_eq(t_free(t.fs, runs[n / 2].start, runs[n / 2].len), 0);
	ck_assert_uint_eq(atomic_load(&t.fs->free_blocks), runs[n / 2].len);
	ck_assert_int_eq(t_alloc(t.fs, runs[n / 2].start, 1, &start, &got),
			 -ENOSPC);
	ck_assert_int_eq(mqfs_journal_commit(t.fs), 0);
	ck_assert_int_eq(t_alloc(t.fs, 0, 1000, &start, &got), 0);
	ck_assert_uint_eq(start, runs[n / 2].start);
	ck_assert_uint_eq(got, runs[n / 2].len);
	ck_assert_int_eq(t_alloc(t.fs, 0, 1, &start, &got), -ENOSPC);
	free(runs);
	t_fs_destroy(&t);
}
END_TEST

/* With free space around, a busy run is skipped, not waited for. */
START_TEST(test_alloc_busy_skipped)
{
	struct t_fs t;
	uint64_t goal, start;
	uint32_t got;

	t_fs_make(&t, T_SIZE);
	goal = t_data_start(t.fs, 1);
	ck_assert_int_eq(t_alloc(t.fs, goal, 16, &start, &got), 0);
	ck_assert_uint_eq(start, goal);
	ck_assert_int_eq(mqfs_journal_commit(t.fs), 0);
	ck_assert_int_eq(t_free(t.fs, goal + 4, 8), 0);
	ck_assert_int_eq(t_alloc(t.fs, goal + 4, 4, &start, &got), 0);
	ck_assert_uint_eq(start, goal + 16);
	ck_assert_int_eq(mqfs_journal_commit(t.fs), 0);
	ck_assert_int_eq(t_alloc(t.fs, goal + 4, 8, &start, &got), 0);
	ck_assert_uint_eq(start, goal + 4);
	ck_assert_uint_eq(got, 8);
	t_fs_destroy(&t);
}
END_TEST

/* Bitmaps and counts come back after a clean remount. */
START_TEST(test_alloc_persist)
{
	struct t_fs t;
	uint64_t a, b, free1;
	uint32_t ga, gb, hfree;

	t_fs_make(&t, T_SIZE);
	ck_assert_int_eq(t_alloc(t.fs, t_data_start(t.fs, 4), 50, &a, &ga),
			 0);
	ck_assert_int_eq(t_alloc(t.fs, 0, 7, &b, &gb), 0);
	ck_assert_int_eq(t_free(t.fs, a + 10, 5), 0);
	free1 = atomic_load(&t.fs->free_blocks);
	hfree = t_ag_header(t.fs, 4).free_blocks;
	t_fs_remount(&t);
	ck_assert_uint_eq(atomic_load(&t.fs->free_blocks), free1);
	ck_assert_uint_eq(t_ag_header(t.fs, 4).free_blocks, hfree);
	ck_assert_uint_eq(mqfs_sb(t.fs)->free_blocks, free1);
	t_check_range(t.fs, a, 10, true);
	t_check_range(t.fs, a + 10, 5, false);
	t_check_range(t.fs, a + 15, ga - 15, true);
	t_check_range(t.fs, b, gb, true);
	t_fs_destroy(&t);
}
END_TEST

/* Directories go to the AG with the most free inodes: all different. */
START_TEST(test_ialloc_spread)
{
	struct t_fs t;
	struct mqfs_handle h;
	uint64_t ino[8], fino, free0;
	bool seen[8] = { false };
	uint32_t n;

	t_fs_make(&t, T_SIZE);
	n = t.fs->ag_count;
	ck_assert_uint_eq(n, 8);
	free0 = atomic_load(&t.fs->free_inodes);
	/* Two buffers per AG touched. */
	ck_assert_int_eq(mqfs_trans_start(t.fs, 2 * n, &h), 0);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t ag;

		ck_assert_int_eq(mqfs_ialloc(&h, MQFS_ROOT_INO, true, &ino[i]),
				 0);
		ag = (uint32_t)((ino[i] - 1) / t.fs->inodes_per_ag);
		ck_assert_msg(!seen[ag], "two directories in AG %u", ag);
		seen[ag] = true;
	}
	/* A file goes into its parent's AG (the first free number). */
	ck_assert_int_eq(mqfs_ialloc(&h, ino[3], false, &fino), 0);
	ck_assert_uint_eq((fino - 1) / t.fs->inodes_per_ag,
			  (ino[3] - 1) / t.fs->inodes_per_ag);
	ck_assert_uint_eq(fino, ino[3] + 1);
	ck_assert_uint_eq(atomic_load(&t.fs->free_inodes), free0 - n - 1);
	ck_assert_uint_eq(t_ag_header(t.fs, 0).dirs, 2);
	for (uint32_t i = 0; i < n; i++)
		ck_assert_int_eq(mqfs_ifree(&h, ino[i], true), 0);
	ck_assert_int_eq(mqfs_ifree(&h, fino, false), 0);
	ck_assert_int_eq(mqfs_trans_stop(&h), 0);
	ck_assert_uint_eq(atomic_load(&t.fs->free_inodes), free0);
	ck_assert_uint_eq(t_ag_header(t.fs, 0).dirs, 1);
	t_fs_remount(&t);
	ck_assert_uint_eq(atomic_load(&t.fs->free_inodes), free0);
	t_fs_destroy(&t);
}
END_TEST

/* Every inode of the filesystem, then ENOSPC. */
START_TEST(test_ialloc_enospc)
{
	struct t_fs t;
	struct mqfs_handle h;
	uint64_t ino, n = 0;
	int err;

	t_fs_make(&t, T_SIZE);
	for (;;) {
		ck_assert_int_eq(mqfs_trans_start(t.fs, T_CREDITS, &h), 0);
		err = mqfs_ialloc(&h, MQFS_ROOT_INO, false, &ino);
		ck_assert_int_eq(mqfs_trans_stop(&h), 0);
		if (err)
			break;
		ck_assert_uint_ge(ino, 2);
		ck_assert_uint_le(ino, t.fs->inode_count);
		n++;
	}
	ck_assert_int_eq(err, -ENOSPC);
	ck_assert_uint_eq(n, t.fs->inode_count - 1);
	ck_assert_uint_eq(atomic_load(&t.fs->free_inodes), 0);
	t_fs_destroy(&t);
}
END_TEST

/* Impossible frees are refused as corruption, and change nothing. */
START_TEST(test_free_invalid)
{
	struct t_fs t;
	uint64_t start, free0;
	uint32_t got;

	t_fs_make(&t, T_SIZE);
	t_fs_unmount(&t);
	t.mount.errors = MQFS_ERRORS_CONTINUE;
	t_fs_mount(&t);
	ck_assert_int_eq(t_alloc(t.fs, t_data_start(t.fs, 1), 4, &start,
				 &got), 0);
	free0 = atomic_load(&t.fs->free_blocks);
	ck_assert_int_eq(t_free(t.fs, start + 2, 4), -EUCLEAN); /* 2 free */
	ck_assert_int_eq(t_free(t.fs, mqfs_fs_ag_meta(t.fs, 1), 1), -EUCLEAN);
	ck_assert_int_eq(t_free(t.fs, 2 * t.fs->ag_blocks - 2, 4), -EUCLEAN);
	ck_assert_int_eq(t_free(t.fs, t.fs->block_count - 1, 1), -EUCLEAN);
	ck_assert_int_eq(t_free(t.fs, t.fs->block_count + 5, 1), -EUCLEAN);
	ck_assert_int_eq(t_free(t.fs, start, 0), -EUCLEAN);
	ck_assert_uint_eq(atomic_load(&t.fs->free_blocks), free0);
	t_check_range(t.fs, start, 4, true);
	ck_assert(atomic_load(&t.fs->error_seen));
	t_fs_unmount_unclean(&t);
	t_fs_destroy(&t);
}
END_TEST

/* A bad AG header (counts beyond its size) fails the mount. */
START_TEST(test_load_bad_header)
{
	struct t_fs t;
	struct mqfs_ag *h;
	uint64_t meta;
	int err;

	t_fs_make(&t, T_SIZE);
	meta = mqfs_fs_ag_meta(t.fs, 0);	/* the AG mkfs wrote */
	t_fs_unmount(&t);
	h = (struct mqfs_ag *)t_fs_raw_block(&t, meta);
	h->free_blocks = 5000;	/* more than the AG has */
	mqfs_blk_seal(h, MQFS_T_AG, meta, h->hdr.gen);
	err = mqfs_mount(t.q, &t.mount, &t.fs);
	ck_assert_int_eq(err, -EUCLEAN);
	t.fs = NULL;
	t_fs_destroy(&t);
}
END_TEST

/* ---- lazy AGs (INCOMPAT_LAZY_AGS) ---------------------------------------- */

static void t_fsck_clean(struct t_fs *t)
{
	struct mqfs_fsck_opts o = { .mode = MQFS_FSCK_NO, .force = true };

	ck_assert_int_eq(mqfs_fsck(t->q, &o), MQFS_FSCK_OK);
}

/* Garbage where AG @ag's header and inode table would be: what an
 * older filesystem on the device may have left there. */
static void t_poison_ag(struct t_fs *t, uint32_t ag)
{
	uint64_t meta = mqfs_fs_ag_meta(t->fs, ag);

	for (uint64_t b = meta; b < meta + 3 + t->fs->itable_blocks; b++)
		memset(t_fs_raw_block(t, b), 0xa5, MQFS_BLOCK_SIZE);
}

/*
 * mkfs writes AG 0 alone; the others count as free without a read (a
 * garbage header does not stop the mount), and the first allocation in
 * one initialises it in its transaction: inode table zeroed, header
 * and bitmaps as mkfs would have made them, its AG-init bit set; the
 * next mount finds it so, and fsck is clean.  Both allocators.
 */
START_TEST(test_lazy_init_first_use)
{
	struct t_fs t;
	struct mqfs_handle h;
	uint64_t goal, start, free0, ino;
	uint32_t got, fresh;

	t_fs_make(&t, T_SIZE);
	ck_assert(!mqfs_ag_uninit(t.fs, 0));
	for (uint32_t ag = 1; ag < t.fs->ag_count; ag++)
		ck_assert(mqfs_ag_uninit(t.fs, ag));
	t_poison_ag(&t, 2);	/* nothing has read them: no cached copy */
	t_poison_ag(&t, 3);
	t_fs_remount(&t);
	goal = t_data_start(t.fs, 2) + 5;
	ck_assert(t_used(t.fs, mqfs_fs_ag_meta(t.fs, 2)));
	ck_assert(!t_used(t.fs, goal));
	free0 = atomic_load(&t.fs->free_blocks);
	fresh = (uint32_t)(t.fs->ag_blocks - 3 - t.fs->itable_blocks);
	ck_assert_int_eq(t_alloc(t.fs, goal, 3, &start, &got), 0);
	ck_assert_uint_eq(start, goal);
	ck_assert(!mqfs_ag_uninit(t.fs, 2));
	ck_assert_uint_eq(t_ag_header(t.fs, 2).free_blocks, fresh - 3);
	ck_assert_uint_eq(atomic_load(&t.fs->free_blocks), free0 - 3);
	ck_assert(t_fs_raw_zero(&t, mqfs_fs_ag_meta(t.fs, 2) + 3));
	ck_assert_int_eq(mqfs_trans_start(t.fs, T_CREDITS, &h), 0);
	ck_assert_int_eq(mqfs_ialloc(&h, 3ull * t.fs->inodes_per_ag + 1,
				     false, &ino), 0);
	ck_assert_int_eq(mqfs_trans_stop(&h), 0);
	ck_assert_uint_eq((ino - 1) / t.fs->inodes_per_ag, 3);
	ck_assert_uint_eq(t_ag_header(t.fs, 3).free_inodes,
			  t.fs->inodes_per_ag - 1);
	ck_assert_int_eq(t_free(t.fs, start, 1), 0);	/* keep 2 */
	t_fs_remount(&t);
	ck_assert(!mqfs_ag_uninit(t.fs, 2) && !mqfs_ag_uninit(t.fs, 3));
	ck_assert(mqfs_ag_uninit(t.fs, 4));
	t_check_range(t.fs, start + 1, 2, true);
	ck_assert_uint_eq(t_ag_header(t.fs, 2).free_blocks, fresh - 2);
	/* The inode's record was never written: only its bit is in use. */
	ck_assert_int_eq(mqfs_trans_start(t.fs, T_CREDITS, &h), 0);
	ck_assert_int_eq(mqfs_ifree(&h, ino, false), 0);
	ck_assert_int_eq(mqfs_trans_stop(&h), 0);
	ck_assert_int_eq(t_free(t.fs, start + 1, 2), 0);  /* no file owns them */
	t_fs_unmount(&t);
	t_fsck_clean(&t);
	t_fs_destroy(&t);
}
END_TEST

/*
 * Power cut after the transaction that initialised an AG committed: the
 * replay brings the AG back initialised with the block in use.  Power
 * cut before it committed: the AG is uninitialised again, as if the
 * allocation had never been.  fsck is clean both times.
 */
START_TEST(test_lazy_init_crash)
{
	struct t_fs t;
	uint64_t committed, lost;
	uint32_t got;

	t_fs_make_opts(&t, T_SIZE, 0, true);
	ck_assert_int_eq(t_alloc(t.fs, t_data_start(t.fs, 4), 2, &committed,
				 &got), 0);
	ck_assert_int_eq(mqfs_journal_commit(t.fs), 0);
	ck_assert_int_eq(t_alloc(t.fs, t_data_start(t.fs, 5), 2, &lost,
				 &got), 0);
	ck_assert(!mqfs_ag_uninit(t.fs, 5));
	t_fs_crash(&t);
	ck_assert(!mqfs_ag_uninit(t.fs, 4));
	t_check_range(t.fs, committed, 2, true);
	ck_assert(mqfs_ag_uninit(t.fs, 5));
	ck_assert(!t_used(t.fs, lost));
	ck_assert_int_eq(t_free(t.fs, committed, 2), 0);  /* no file owns */
	t_fs_unmount(&t);
	t_fsck_clean(&t);
	t_fs_mount(&t);
	ck_assert_int_eq(t_alloc(t.fs, lost, 2, &lost, &got), 0);
	ck_assert(!mqfs_ag_uninit(t.fs, 5));
	ck_assert_int_eq(t_free(t.fs, lost, 2), 0);
	t_fs_unmount(&t);
	t_fsck_clean(&t);
	t_fs_destroy(&t);
}
END_TEST

#define T_THREADS	4
#define T_PER_THREAD	4096

struct t_worker {
	struct mqfs_fs *fs;
	unsigned seed;
	struct t_run runs[T_PER_THREAD];
	size_t n;
	int err;
};

static void *t_worker_main(void *arg)
{
	struct t_worker *w = arg;

	while (w->n < T_PER_THREAD) {
		struct mqfs_handle h;
		uint64_t start;
		uint32_t got, want = 1 + rand_r(&w->seed) % 9;
		int err = mqfs_trans_start(w->fs, T_CREDITS, &h);

		if (err) {
			w->err = err;
			break;
		}
		err = mqfs_alloc_blocks(&h, 0, want, &start, &got);
		mqfs_trans_stop(&h);
		if (err) {
			w->err = err;
			break;
		}
		w->runs[w->n++] = (struct t_run){ start, got };
	}
	return NULL;
}

/* Threads allocate at once until ENOSPC: no block is handed out twice. */
START_TEST(test_alloc_threads)
{
	static struct t_worker w[T_THREADS];
	struct t_run *all;
	pthread_t th[T_THREADS];
	uint64_t free0, total = 0;
	size_t n = 0;
	struct t_fs t;

	t_fs_make(&t, T_SIZE);
	free0 = atomic_load(&t.fs->free_blocks);
	for (int i = 0; i < T_THREADS; i++) {
		w[i] = (struct t_worker){ .fs = t.fs, .seed = 7u + i };
		ck_assert_int_eq(pthread_create(&th[i], NULL, t_worker_main,
						&w[i]), 0);
	}
	for (int i = 0; i < T_THREADS; i++)
		pthread_join(th[i], NULL);
	all = malloc(sizeof(*all) * T_THREADS * T_PER_THREAD);
	ck_assert_ptr_nonnull(all);
	for (int i = 0; i < T_THREADS; i++) {
		ck_assert_int_eq(w[i].err, -ENOSPC);
		for (size_t j = 0; j < w[i].n; j++) {
			all[n++] = w[i].runs[j];
			total += w[i].runs[j].len;
		}
	}
	ck_assert_uint_eq(total, free0);
	ck_assert_uint_eq(atomic_load(&t.fs->free_blocks), 0);
	t_check_disjoint(all, n);
	for (size_t i = 0; i < n; i += 97)
		t_check_range(t.fs, all[i].start, all[i].len, true);
	free(all);
	t_fs_remount(&t);
	ck_assert_uint_eq(atomic_load(&t.fs->free_blocks), 0);
	t_fs_destroy(&t);
}
END_TEST

static Suite *alloc_suite(void)
{
	Suite *s = suite_create("alloc");
	TCase *tc = t_tcase(s, "core", 60);

	tcase_add_test(tc, test_alloc_free_counts);
	tcase_add_test(tc, test_alloc_goal_contiguous);
	tcase_add_test(tc, test_alloc_partial_run);
	tcase_add_test(tc, test_alloc_enospc_busy);
	tcase_add_test(tc, test_alloc_busy_skipped);
	tcase_add_test(tc, test_alloc_persist);
	tcase_add_test(tc, test_ialloc_spread);
	tcase_add_test(tc, test_ialloc_enospc);
	tcase_add_test(tc, test_free_invalid);
	tcase_add_test(tc, test_load_bad_header);
	tcase_add_test(tc, test_lazy_init_first_use);
	tcase_add_test(tc, test_lazy_init_crash);
	tcase_add_test(tc, test_alloc_threads);
	return s;
}

T_MAIN(alloc_suite)
