// SPDX-License-Identifier: MIT
/*
 * test_inode.c - in-core inodes (src/fs/inode.c, itable.c, orphan.c,
 * attr.c): records that survive a remount, deletion when the last
 * reference goes, lookup and open counts, the orphan list and its
 * recovery after a crash, the cache's LRU bound, setattr/open/release
 * and the lock helpers.
 */
#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "t_fs.h"
#include "t_main.h"

#define T_SIZE		(32 * T_FS_MIB)	/* 8 AGs of 1024 blocks */

/* ---- helpers -------------------------------------------------------------- */

/* Is @ino's bit set in its inode bitmap? */
static bool t_ino_used(struct mqfs_fs *fs, uint64_t ino)
{
	uint32_t ag = (uint32_t)((ino - 1) / fs->inodes_per_ag);
	uint32_t i = (uint32_t)((ino - 1) % fs->inodes_per_ag);
	struct mqfs_buf *b;
	bool used;

	ck_assert_int_eq(mqfs_buf_read(fs, mqfs_fs_ag_meta(fs, ag) + 2, MQFS_T_IBITMAP,
				       &b), 0);
	mqfs_buf_lock(b);
	used = ((uint8_t *)b->data)[MQFS_HDR_SIZE + i / 8] >> (i % 8) & 1;
	mqfs_buf_unlock(b);
	mqfs_buf_put(b);
	return used;
}

static bool t_blk_used(struct mqfs_fs *fs, uint64_t blk)
{
	bool used;

	ck_assert_int_eq(mqfs_block_in_use(fs, blk, &used), 0);
	return used;
}

/* A new inode in the root's AG, with a reference (not in a directory). */
static uint64_t t_new(struct mqfs_fs *fs, mode_t mode, struct mqfs_ino **out)
{
	struct mqfs_handle h;
	uint64_t ino;

	ck_assert_int_eq(mqfs_trans_start(fs, 4, &h), 0);
	ck_assert_int_eq(mqfs_ialloc(&h, MQFS_ROOT_INO, S_ISDIR(mode), &ino),
			 0);
	ck_assert_int_eq(mqfs_inew(&h, ino, mode, 1000, 100, out), 0);
	ck_assert_int_eq(mqfs_trans_stop(&h), 0);
	ck_assert_uint_eq((*out)->ino, ino);
	return ino;
}

/* What namei's unlink does to the inode: nlink 0, onto the orphan list. */
static void t_unlink(struct mqfs_fs *fs, struct mqfs_ino *ip, bool drop)
{
	struct mqfs_handle h;

	pthread_rwlock_wrlock(&ip->lock);
	ck_assert_int_eq(mqfs_trans_start(fs, 4, &h), 0);
	if (drop)
		ip->d.nlink = 0;
	ck_assert_int_eq(mqfs_orphan_add(&h, ip), 0);
	ck_assert_int_eq(mqfs_inode_dirty(&h, ip), 0);
	ck_assert_int_eq(mqfs_trans_stop(&h), 0);
	pthread_rwlock_unlock(&ip->lock);
}

/* Map @n new blocks at file block 0 and set the size; returns the run. */
static uint64_t t_give_blocks(struct mqfs_fs *fs, struct mqfs_ino *ip,
			      uint32_t n)
{
	struct mqfs_handle h;
	uint64_t start;
	uint32_t got;

	pthread_rwlock_wrlock(&ip->lock);
	ck_assert_int_eq(mqfs_trans_start(fs, 4 + mqfs_extent_credits(fs),
					  &h), 0);
	ck_assert_int_eq(mqfs_alloc_blocks(&h, 0, n, &start, &got), 0);
	ck_assert_uint_eq(got, n);
	ck_assert_int_eq(mqfs_extent_insert(&h, ip, 0, start, n, 0), 0);
	ip->d.size = (uint64_t)n * MQFS_BLOCK_SIZE;
	ck_assert_int_eq(mqfs_inode_dirty(&h, ip), 0);
	ck_assert_int_eq(mqfs_trans_stop(&h), 0);
	pthread_rwlock_unlock(&ip->lock);
	return start;
}

static void t_check_blocks(struct mqfs_fs *fs, uint64_t start, uint32_t n,
			   bool want)
{
	for (uint32_t i = 0; i < n; i++)
		ck_assert_msg(t_blk_used(fs, start + i) == want,
			      "block %llu used != %d",
			      (unsigned long long)(start + i), want);
}

/* ---- records ---------------------------------------------------------------- */

/* A new inode's record, as written, is what a remount reads back. */
START_TEST(test_inew_roundtrip)
{
	struct t_fs t;
	struct mqfs_ino *ip, *ip2;
	struct mqfs_inode d;
	struct stat st;
	uint64_t ino, gen0;

	t_fs_make(&t, T_SIZE);
	gen0 = mqfs_sb(t.fs)->inode_gen;
	ino = t_new(t.fs, S_IFREG | 0640, &ip);
	ck_assert_uint_eq(ip->d.generation, gen0);
	ck_assert_uint_eq(mqfs_sb(t.fs)->inode_gen, gen0 + 1);
	ck_assert_uint_eq(ip->d.nlink, 1);
	ck_assert_uint_ne(ip->d.ctime_sec, 0);
	/* Another iget finds the same in-core inode. */
	ck_assert_int_eq(mqfs_iget(t.fs, ino, &ip2), 0);
	ck_assert_ptr_eq(ip, ip2);
	mqfs_iput(t.fs, ip2);
	d = ip->d;
	mqfs_iput(t.fs, ip);
	t_fs_remount(&t);
	ck_assert_uint_eq(mqfs_sb(t.fs)->inode_gen, gen0 + 1);
	ck_assert_int_eq(mqfs_iget(t.fs, ino, &ip), 0);
	ck_assert_mem_eq(&ip->d, &d, sizeof(d));
	mqfs_iput(t.fs, ip);
	ck_assert_int_eq(mqfs_getattr(t.fs, ino, &st), 0);
	ck_assert_uint_eq(st.st_ino, ino);
	ck_assert_uint_eq(st.st_mode, S_IFREG | 0640);
	ck_assert_uint_eq(st.st_uid, 1000);
	ck_assert_uint_eq(st.st_gid, 100);
	ck_assert_uint_eq(st.st_nlink, 1);
	ck_assert_uint_eq(st.st_blksize, 4096);
	ck_assert_uint_eq((uint64_t)st.st_mtim.tv_sec, d.mtime_sec);
	ck_assert_uint_eq((uint64_t)st.st_mtim.tv_nsec, d.mtime_nsec);
	t_fs_destroy(&t);
}
END_TEST

START_TEST(test_iget_missing)
{
	struct t_fs t;
	struct mqfs_ino *ip = (struct mqfs_ino *)&t;
	struct stat st;

	t_fs_make(&t, T_SIZE);
	ck_assert_int_eq(mqfs_iget(t.fs, 0, &ip), -ENOENT);
	ck_assert_ptr_null(ip);
	ck_assert_int_eq(mqfs_iget(t.fs, t.fs->inode_count + 1, &ip),
			 -ENOENT);
	ck_assert_int_eq(mqfs_iget(t.fs, 2, &ip), -ENOENT);
	ck_assert_int_eq(mqfs_iget(t.fs, t.fs->inode_count, &ip), -ENOENT);
	ck_assert_int_eq(mqfs_getattr(t.fs, 77, &st), -ENOENT);
	ck_assert_int_eq(mqfs_getattr(t.fs, MQFS_ROOT_INO, &st), 0);
	ck_assert_uint_eq(st.st_mode, S_IFDIR | 0755);
	ck_assert_uint_eq(st.st_nlink, 2);
	ck_assert_uint_eq(st.st_ino, MQFS_ROOT_INO);
	t_fs_destroy(&t);
}
END_TEST

/* ---- deletion ----------------------------------------------------------------- */

/* The last iput of an unlinked inode frees its number and its data. */
START_TEST(test_delete_on_last_iput)
{
	struct t_fs t;
	struct mqfs_ino *ip;
	uint64_t ino, ino2, free_i, free_b, run, gen, xblk;

	t_fs_make(&t, T_SIZE);
	free_i = atomic_load(&t.fs->free_inodes);
	free_b = atomic_load(&t.fs->free_blocks);
	ino = t_new(t.fs, S_IFREG | 0644, &ip);
	gen = ip->d.generation;
	run = t_give_blocks(t.fs, ip, 6);
	ck_assert_int_eq(mqfs_setxattr(t.fs, ino, "user.t", "v", 1, 0), 0);
	xblk = ip->d.xattr_blk;
	ck_assert_uint_ne(xblk, 0);
	ck_assert(t_blk_used(t.fs, xblk));
	ck_assert_uint_eq(atomic_load(&t.fs->free_inodes), free_i - 1);
	t_unlink(t.fs, ip, true);
	ck_assert_uint_eq(mqfs_sb(t.fs)->orphan_head, ino);
	mqfs_iput(t.fs, ip);
	ck_assert_uint_eq(mqfs_sb(t.fs)->orphan_head, 0);
	ck_assert_int_eq(mqfs_iget(t.fs, ino, &ip), -ENOENT);
	ck_assert(!t_ino_used(t.fs, ino));
	ck_assert_uint_eq(atomic_load(&t.fs->free_inodes), free_i);
	ck_assert_uint_eq(atomic_load(&t.fs->free_blocks), free_b);
	t_check_blocks(t.fs, run, 6, false);
	ck_assert(!t_blk_used(t.fs, xblk));
	/* The number is handed out again, with a new generation. */
	ino2 = t_new(t.fs, S_IFREG | 0600, &ip);
	ck_assert_uint_eq(ino2, ino);
	ck_assert_uint_gt(ip->d.generation, gen);
	mqfs_iput(t.fs, ip);
	/* A directory too (it leaves its AG's directory count). */
	ino = t_new(t.fs, S_IFDIR | 0755, &ip);
	t_unlink(t.fs, ip, true);
	mqfs_iput(t.fs, ip);
	ck_assert(!t_ino_used(t.fs, ino));
	t_fs_remount(&t);
	ck_assert_uint_eq(atomic_load(&t.fs->free_inodes), free_i - 1);
	ck_assert_int_eq(mqfs_iget(t.fs, ino, &ip), -ENOENT);
	ck_assert_int_eq(mqfs_iget(t.fs, ino2, &ip), 0);
	mqfs_iput(t.fs, ip);
	t_fs_destroy(&t);
}
END_TEST

/* FUSE lookups and open files keep an unlinked inode alive. */
START_TEST(test_lookup_and_open_counts)
{
	struct t_fs t;
	struct mqfs_ino *ip;
	struct mqfs_file *f;
	uint64_t ino;

	t_fs_make(&t, T_SIZE);
	ino = t_new(t.fs, S_IFREG | 0644, &ip);
	mqfs_ino_lookup_inc(t.fs, ip);
	mqfs_ino_lookup_inc(t.fs, ip);
	ck_assert_int_eq(mqfs_open(t.fs, ino, O_RDWR, &f), 0);
	ck_assert_ptr_eq(f->ip, ip);
	ck_assert_uint_eq(ip->open_count, 1);
	t_unlink(t.fs, ip, true);
	mqfs_iput(t.fs, ip);
	mqfs_forget(t.fs, ino, 1);
	ck_assert(t_ino_used(t.fs, ino));
	ck_assert_int_eq(mqfs_release(t.fs, f), 0);
	ck_assert(t_ino_used(t.fs, ino));
	ck_assert_uint_eq(mqfs_sb(t.fs)->orphan_head, ino);
	mqfs_forget(t.fs, ino, 1);
	ck_assert(!t_ino_used(t.fs, ino));
	ck_assert_uint_eq(mqfs_sb(t.fs)->orphan_head, 0);
	/* A forget of an inode that is gone is ignored. */
	mqfs_forget(t.fs, ino, 1);
	t_fs_destroy(&t);
}
END_TEST

/* Unmount deletes unlinked inodes the front end never forgot. */
START_TEST(test_unmount_deletes_unlinked)
{
	struct t_fs t;
	struct mqfs_ino *ip;
	uint64_t ino, free_i;

	t_fs_make(&t, T_SIZE);
	free_i = atomic_load(&t.fs->free_inodes);
	ino = t_new(t.fs, S_IFREG | 0644, &ip);
	mqfs_ino_lookup_inc(t.fs, ip);
	t_unlink(t.fs, ip, true);
	mqfs_iput(t.fs, ip);
	ck_assert(t_ino_used(t.fs, ino));
	t_fs_remount(&t);
	ck_assert(!t_ino_used(t.fs, ino));
	ck_assert_uint_eq(mqfs_sb(t.fs)->orphan_head, 0);
	ck_assert_uint_eq(atomic_load(&t.fs->free_inodes), free_i);
	t_fs_destroy(&t);
}
END_TEST

/* ---- orphan list -------------------------------------------------------------- */

/* Removal from the head, the middle and the tail keeps the chain. */
START_TEST(test_orphan_list)
{
	struct t_fs t;
	struct mqfs_ino *a, *b, *c;
	struct mqfs_handle h;

	t_fs_make(&t, T_SIZE);
	t_new(t.fs, S_IFREG | 0644, &a);
	t_new(t.fs, S_IFREG | 0644, &b);
	t_new(t.fs, S_IFREG | 0644, &c);
	t_unlink(t.fs, a, false);
	t_unlink(t.fs, b, false);
	t_unlink(t.fs, c, false);
	t_unlink(t.fs, b, false);		/* twice: no change */
	ck_assert_uint_eq(mqfs_sb(t.fs)->orphan_head, c->ino);
	ck_assert_uint_eq(c->d.orphan_next, b->ino);
	ck_assert_uint_eq(b->d.orphan_next, a->ino);
	ck_assert_uint_eq(a->d.orphan_next, 0);
	ck_assert_int_eq(mqfs_trans_start(t.fs, 6, &h), 0);
	ck_assert_int_eq(mqfs_orphan_del(&h, b), 0);	/* middle */
	ck_assert_uint_eq(c->d.orphan_next, a->ino);
	ck_assert_uint_eq(b->d.orphan_next, 0);
	ck_assert_int_eq(mqfs_orphan_del(&h, b), 0);	/* not listed */
	ck_assert_int_eq(mqfs_orphan_del(&h, a), 0);	/* tail */
	ck_assert_uint_eq(c->d.orphan_next, 0);
	ck_assert_uint_eq(mqfs_sb(t.fs)->orphan_head, c->ino);
	ck_assert_int_eq(mqfs_orphan_del(&h, c), 0);	/* head */
	ck_assert_uint_eq(mqfs_sb(t.fs)->orphan_head, 0);
	ck_assert_int_eq(mqfs_trans_stop(&h), 0);
	mqfs_iput(t.fs, a);
	mqfs_iput(t.fs, b);
	mqfs_iput(t.fs, c);
	t_fs_destroy(&t);
}
END_TEST

/* Linked orphans left at a clean unmount are unlisted by the mount. */
START_TEST(test_orphan_linked_remount)
{
	struct t_fs t;
	struct mqfs_ino *a, *b;
	uint64_t ia, ib;

	t_fs_make(&t, T_SIZE);
	ia = t_new(t.fs, S_IFREG | 0644, &a);
	ib = t_new(t.fs, S_IFREG | 0644, &b);
	t_unlink(t.fs, a, false);
	t_unlink(t.fs, b, false);
	mqfs_iput(t.fs, a);
	mqfs_iput(t.fs, b);
	t_fs_remount(&t);
	ck_assert_uint_eq(mqfs_sb(t.fs)->orphan_head, 0);
	ck_assert_int_eq(mqfs_iget(t.fs, ia, &a), 0);
	ck_assert_int_eq(mqfs_iget(t.fs, ib, &b), 0);
	ck_assert_uint_eq(a->d.orphan_next, 0);
	ck_assert_uint_eq(b->d.orphan_next, 0);
	ck_assert_uint_eq(a->d.nlink, 1);
	mqfs_iput(t.fs, a);
	mqfs_iput(t.fs, b);
	t_fs_destroy(&t);
}
END_TEST

/*
 * Crash with two unlinked-but-open inodes (one with data) and one
 * linked orphan: the next mount frees the first two and keeps the third.
 */
START_TEST(test_orphan_recovery_after_crash)
{
	struct t_fs t;
	struct mqfs_ino *a, *b, *c;
	uint64_t ia, ib, ic, run, free_i, free_b;

	t_fs_make_opts(&t, T_SIZE, 0, true);
	free_i = atomic_load(&t.fs->free_inodes);
	free_b = atomic_load(&t.fs->free_blocks);
	ia = t_new(t.fs, S_IFREG | 0644, &a);
	ib = t_new(t.fs, S_IFREG | 0644, &b);
	ic = t_new(t.fs, S_IFREG | 0644, &c);
	run = t_give_blocks(t.fs, a, 5);
	t_unlink(t.fs, a, true);
	t_unlink(t.fs, b, true);
	t_unlink(t.fs, c, false);
	ck_assert_int_eq(mqfs_journal_commit(t.fs), 0);
	/* The references die with the mount (as an open file's would). */
	t_fs_crash(&t);
	ck_assert_uint_eq(mqfs_sb(t.fs)->orphan_head, 0);
	ck_assert_int_eq(mqfs_iget(t.fs, ia, &a), -ENOENT);
	ck_assert_int_eq(mqfs_iget(t.fs, ib, &b), -ENOENT);
	ck_assert(!t_ino_used(t.fs, ia));
	ck_assert(!t_ino_used(t.fs, ib));
	t_check_blocks(t.fs, run, 5, false);
	ck_assert_int_eq(mqfs_iget(t.fs, ic, &c), 0);
	ck_assert_uint_eq(c->d.nlink, 1);
	ck_assert_uint_eq(c->d.orphan_next, 0);
	mqfs_iput(t.fs, c);
	ck_assert_uint_eq(atomic_load(&t.fs->free_inodes), free_i - 1);
	ck_assert_uint_eq(atomic_load(&t.fs->free_blocks), free_b);
	/* What the recovery did is itself durable. */
	t_fs_crash(&t);
	ck_assert_uint_eq(mqfs_sb(t.fs)->orphan_head, 0);
	ck_assert(!t_ino_used(t.fs, ia));
	ck_assert_uint_eq(atomic_load(&t.fs->free_inodes), free_i - 1);
	t_fs_destroy(&t);
}
END_TEST

/* ---- attributes ---------------------------------------------------------------- */

START_TEST(test_setattr)
{
	struct t_fs t;
	struct mqfs_ino *ip, *dir;
	struct stat a = { 0 }, st;
	uint64_t ino, dino, run;

	t_fs_make(&t, T_SIZE);
	ino = t_new(t.fs, S_IFREG | 0644, &ip);
	run = t_give_blocks(t.fs, ip, 4);
	mqfs_iput(t.fs, ip);
	dino = t_new(t.fs, S_IFDIR | 0755, &dir);
	mqfs_iput(t.fs, dir);
	a.st_mode = S_IFDIR | 04711;	/* the type bits are ignored */
	a.st_uid = 7;
	a.st_gid = 8;
	a.st_atim = (struct timespec){ 1000, 5 };
	a.st_mtim = (struct timespec){ 2000, 6 };
	ck_assert_int_eq(mqfs_setattr(t.fs, ino, &a, MQFS_SET_MODE |
				      MQFS_SET_UID | MQFS_SET_GID |
				      MQFS_SET_ATIME | MQFS_SET_MTIME, &st), 0);
	ck_assert_uint_eq(st.st_mode, S_IFREG | 04711);
	ck_assert_uint_eq(st.st_uid, 7);
	ck_assert_uint_eq(st.st_gid, 8);
	ck_assert_int_eq(st.st_atim.tv_sec, 1000);
	ck_assert_int_eq(st.st_atim.tv_nsec, 5);
	ck_assert_int_eq(st.st_mtim.tv_sec, 2000);
	ck_assert_int_gt(st.st_ctim.tv_sec, 2000);	/* now */
	ck_assert_uint_eq(st.st_size, 4 * MQFS_BLOCK_SIZE);
	/* Truncate to one block: the other three are freed. */
	a.st_size = MQFS_BLOCK_SIZE;
	ck_assert_int_eq(mqfs_setattr(t.fs, ino, &a, MQFS_SET_SIZE, &st), 0);
	ck_assert_uint_eq(st.st_size, MQFS_BLOCK_SIZE);
	ck_assert_int_gt(st.st_mtim.tv_sec, 2000);	/* now */
	ck_assert_int_eq(mqfs_journal_commit(t.fs), 0);
	ck_assert(t_blk_used(t.fs, run));
	t_check_blocks(t.fs, run + 1, 3, false);
	ck_assert_int_eq(mqfs_setattr(t.fs, dino, &a, MQFS_SET_SIZE, &st),
			 -EISDIR);
	ck_assert_int_eq(mqfs_setattr(t.fs, 99, &a, MQFS_SET_MODE, &st),
			 -ENOENT);
	t_fs_remount(&t);
	ck_assert_int_eq(mqfs_getattr(t.fs, ino, &st), 0);
	ck_assert_uint_eq(st.st_mode, S_IFREG | 04711);
	ck_assert_uint_eq(st.st_uid, 7);
	ck_assert_uint_eq(st.st_size, MQFS_BLOCK_SIZE);
	ck_assert_int_eq(st.st_atim.tv_sec, 1000);
	/* Read-only: no changes, but reads work. */
	t_fs_unmount(&t);
	t.mount.readonly = true;
	t_fs_mount(&t);
	ck_assert_int_eq(mqfs_setattr(t.fs, ino, &a, MQFS_SET_UID, &st),
			 -EROFS);
	ck_assert_int_eq(mqfs_setattr(t.fs, ino, &a, 0, &st), 0);
	ck_assert_uint_eq(st.st_uid, 7);
	t_fs_destroy(&t);
}
END_TEST

START_TEST(test_open_trunc_readonly)
{
	struct t_fs t;
	struct mqfs_ino *ip;
	struct mqfs_file *f;
	struct stat st;
	uint64_t ino, dino, run;

	t_fs_make(&t, T_SIZE);
	ino = t_new(t.fs, S_IFREG | 0644, &ip);
	run = t_give_blocks(t.fs, ip, 3);
	mqfs_iput(t.fs, ip);
	dino = t_new(t.fs, S_IFDIR | 0755, &ip);
	mqfs_iput(t.fs, ip);
	ck_assert_int_eq(mqfs_open(t.fs, dino, O_WRONLY, &f), -EISDIR);
	ck_assert_ptr_null(f);
	ck_assert_int_eq(mqfs_open(t.fs, dino, O_RDONLY, &f), 0);
	ck_assert_int_eq(mqfs_release(t.fs, f), 0);
	ck_assert_int_eq(mqfs_open(t.fs, 1234, O_RDONLY, &f), -ENOENT);
	ck_assert_int_eq(mqfs_open(t.fs, ino, O_RDWR | O_TRUNC, &f), 0);
	ck_assert_int_eq(f->flags, O_RDWR | O_TRUNC);
	ck_assert_int_eq(mqfs_getattr(t.fs, ino, &st), 0);
	ck_assert_uint_eq(st.st_size, 0);
	ck_assert_int_eq(mqfs_release(t.fs, f), 0);
	ck_assert_int_eq(mqfs_journal_commit(t.fs), 0);
	t_check_blocks(t.fs, run, 3, false);
	t_fs_unmount(&t);
	t.mount.readonly = true;
	t_fs_mount(&t);
	ck_assert_int_eq(mqfs_open(t.fs, ino, O_RDWR, &f), -EROFS);
	ck_assert_int_eq(mqfs_open(t.fs, ino, O_RDONLY | O_TRUNC, &f),
			 -EROFS);
	ck_assert_int_eq(mqfs_open(t.fs, ino, O_RDONLY, &f), 0);
	ck_assert_int_eq(mqfs_release(t.fs, f), 0);
	t_fs_destroy(&t);
}
END_TEST

/* ---- the cache ------------------------------------------------------------------ */

/* Change an inode's uid in its table buffer behind the cache's back. */
static void t_poke_uid(struct mqfs_fs *fs, uint64_t ino, uint32_t uid)
{
	uint32_t i = (uint32_t)((ino - 1) % fs->inodes_per_ag);
	uint32_t ag = (uint32_t)((ino - 1) / fs->inodes_per_ag);
	uint64_t blk = mqfs_fs_ag_meta(fs, ag) + 3 + i / MQFS_INODES_PER_BLOCK;
	struct mqfs_buf *b;
	struct mqfs_inode *d;

	ck_assert_int_eq(mqfs_buf_read(fs, blk, MQFS_T_ITABLE, &b), 0);
	mqfs_buf_lock(b);
	d = (struct mqfs_inode *)((char *)b->data +
		mqfs_itable_offset(i % MQFS_INODES_PER_BLOCK));
	d->uid = uid;
	mqfs_buf_unlock(b);
	mqfs_buf_put(b);
}

/*
 * With a 256 KiB metadata cache the inode cache keeps 512 unused
 * inodes: of 600, the oldest is read again (sees the poked record), the
 * newest is still the cached copy.
 */
START_TEST(test_icache_lru_bound)
{
	enum { N = 600 };
	struct t_fs t;
	struct mqfs_ino *ip;
	uint64_t inos[N];

	t_fs_make(&t, T_SIZE);
	t_fs_unmount(&t);
	t.mount.meta_cache_bytes = 256 << 10;
	t_fs_mount(&t);
	for (int i = 0; i < N; i++) {
		inos[i] = t_new(t.fs, S_IFREG | 0644, &ip);
		mqfs_iput(t.fs, ip);
	}
	/* Poke, then get at once: the buffer is still the cached one. */
	t_poke_uid(t.fs, inos[0], 4242);
	ck_assert_int_eq(mqfs_iget(t.fs, inos[0], &ip), 0);
	ck_assert_uint_eq(ip->d.uid, 4242);
	mqfs_iput(t.fs, ip);
	t_poke_uid(t.fs, inos[N - 1], 4242);
	ck_assert_int_eq(mqfs_iget(t.fs, inos[N - 1], &ip), 0);
	ck_assert_uint_eq(ip->d.uid, 1000);
	/* Still correct for every one of them. */
	for (int i = 1; i < N - 1; i++) {
		struct mqfs_ino *x;

		ck_assert_int_eq(mqfs_iget(t.fs, inos[i], &x), 0);
		ck_assert_uint_eq(x->ino, inos[i]);
		ck_assert_uint_eq(x->d.mode, S_IFREG | 0644);
		mqfs_iput(t.fs, x);
	}
	mqfs_iput(t.fs, ip);
	t_fs_destroy(&t);
}
END_TEST

/*
 * Inodes the kernel holds (nlookup) but nobody uses are evicted past the
 * LRU bound, leaving only their counts: each comes back with its count,
 * forgets of evicted ones work, and an unlinked one the kernel holds
 * stays cached until its last forget deletes it.
 */
/*
 * The table of evicted inodes' lookup counts: add, forget, take, growth
 * past its first size with removals that shift clusters back, and a
 * count past 2^32 - 1 refused (its inode stays in core), nothing changed.
 */
START_TEST(test_lookups_table)
{
	struct mqfs_lookups t = { 0 };
	uint64_t had = 0;

	ck_assert_uint_eq(sizeof(struct mqfs_lookup_slot), 12);
	for (uint64_t ino = 1; ino <= 5000; ino++)
		ck_assert_int_eq(mqfs_lookups_add(&t, ino, ino % 7 + 1), 0);
	ck_assert_uint_eq(t.count, 5000);
	for (uint64_t ino = 1; ino <= 5000; ino += 2)
		ck_assert_uint_eq(mqfs_lookups_take(&t, ino), ino % 7 + 1);
	for (uint64_t ino = 2; ino <= 5000; ino += 2) {
		ck_assert(mqfs_lookups_forget(&t, ino, 1, &had));
		ck_assert_uint_eq(had, ino % 7 + 1);
		ck_assert_uint_eq(mqfs_lookups_take(&t, ino), ino % 7);
	}
	ck_assert_uint_eq(t.count, 0);
	ck_assert(!mqfs_lookups_forget(&t, 9, 1, &had));
	ck_assert_int_eq(mqfs_lookups_add(&t, 9, UINT32_MAX), 0);
	ck_assert_int_eq(mqfs_lookups_add(&t, 9, 1), -EOVERFLOW);
	ck_assert_int_eq(mqfs_lookups_add(&t, 10, 1ull << 32), -EOVERFLOW);
	ck_assert_uint_eq(t.count, 1);
	ck_assert_uint_eq(mqfs_lookups_take(&t, 9), UINT32_MAX);
	ck_assert_int_eq(mqfs_lookups_add(&t, 0, 1), -EINVAL);
	mqfs_lookups_free(&t);
}
END_TEST

START_TEST(test_icache_evicts_looked_up)
{
	enum { N = 1500 };
	struct t_fs t;
	struct mqfs_ino *ip, *u;
	uint64_t *inos = calloc(N, sizeof(*inos)), uino;
	size_t cached, held;

	t_fs_make(&t, T_SIZE);
	t_fs_unmount(&t);
	t.mount.meta_cache_bytes = 64 << 10;	/* 128 idle inodes */
	t_fs_mount(&t);
	uino = t_new(t.fs, S_IFREG | 0644, &u);
	mqfs_ino_lookup_inc(t.fs, u);
	t_unlink(t.fs, u, true);
	mqfs_iput(t.fs, u);			/* u stays: the kernel has it */
	for (int i = 0; i < N; i++) {
		inos[i] = t_new(t.fs, S_IFREG | 0644, &ip);
		for (int k = 0; k <= i % 3; k++)
			mqfs_ino_lookup_inc(t.fs, ip);
		mqfs_iput(t.fs, ip);
	}
	mqfs_icache_counts(t.fs, &cached, &held);
	ck_assert_uint_le(cached, 200);
	ck_assert_uint_ge(held, N - 200);
	for (int i = 0; i < N; i += 7) {
		ck_assert_int_eq(mqfs_iget(t.fs, inos[i], &ip), 0);
		ck_assert_uint_eq(ip->nlookup, (uint64_t)(i % 3 + 1));
		mqfs_iput(t.fs, ip);
	}
	for (int i = 0; i < N; i++)
		mqfs_forget(t.fs, inos[i], (uint64_t)(i % 3 + 1));
	for (int i = 0; i < N; i += 11) {
		ck_assert_int_eq(mqfs_iget(t.fs, inos[i], &ip), 0);
		ck_assert_uint_eq(ip->nlookup, 0);
		mqfs_iput(t.fs, ip);
	}
	ck_assert(t_ino_used(t.fs, uino));
	mqfs_forget(t.fs, uino, 1);
	ck_assert(!t_ino_used(t.fs, uino));
	free(inos);
	t_fs_destroy(&t);
}
END_TEST

#define T_IGET_THREADS	4

struct t_igetter {
	struct mqfs_fs *fs;
	const uint64_t *inos;
	int n, err;
	bool change;			/* uid++ of each, journaled */
	unsigned seed;
};

/* Bump @ip's uid in a handle of its own, as a chown would. */
static int t_bump_uid(struct mqfs_fs *fs, struct mqfs_ino *ip)
{
	struct mqfs_handle h;
	int err = mqfs_trans_start(fs, 1, &h), err2;

	if (err)
		return err;
	pthread_rwlock_wrlock(&ip->lock);
	ip->d.uid++;
	err = mqfs_inode_dirty(&h, ip);
	pthread_rwlock_unlock(&ip->lock);
	err2 = mqfs_trans_stop(&h);
	return err ? err : err2;
}

static void *t_iget_main(void *arg)
{
	struct t_igetter *g = arg;

	for (int r = 0; r < 200 && !g->err; r++) {
		for (int i = 0; i < g->n; i++) {
			int k = g->change ? (int)(rand_r(&g->seed) % g->n) : i;
			struct mqfs_ino *ip;

			g->err = mqfs_iget(g->fs, g->inos[k], &ip);
			if (g->err)
				break;
			if (ip->ino != g->inos[k])
				g->err = -EINVAL;
			if (!g->err && g->change)
				g->err = t_bump_uid(g->fs, ip);
			mqfs_iput(g->fs, ip);
		}
	}
	return NULL;
}

/* Concurrent gets and puts (with evictions) leave the counts balanced. */
START_TEST(test_iget_threads)
{
	enum { N = 64 };
	struct t_igetter g[T_IGET_THREADS];
	pthread_t th[T_IGET_THREADS];
	struct t_fs t;
	struct mqfs_ino *ip;
	uint64_t inos[N];

	t_fs_make(&t, T_SIZE);
	t_fs_unmount(&t);
	t.mount.meta_cache_bytes = 16 << 10;	/* 32 unused inodes */
	t_fs_mount(&t);
	for (int i = 0; i < N; i++) {
		inos[i] = t_new(t.fs, S_IFREG | 0644, &ip);
		mqfs_iput(t.fs, ip);
	}
	for (int i = 0; i < T_IGET_THREADS; i++) {
		g[i] = (struct t_igetter){ .fs = t.fs, .inos = inos, .n = N };
		ck_assert_int_eq(pthread_create(&th[i], NULL, t_iget_main,
						&g[i]), 0);
	}
	for (int i = 0; i < T_IGET_THREADS; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(g[i].err, 0);
	}
	ck_assert_int_eq(mqfs_iget(t.fs, inos[N - 1], &ip), 0);
	ck_assert_uint_eq(ip->refcount, 1);
	mqfs_iput(t.fs, ip);
	t_fs_destroy(&t);
}
END_TEST

/*
 * Threads changing inodes the kernel holds while the cache evicts them
 * (only their lookups stay): no change is lost, so no thread ever works
 * on a second, older copy of an inode read while another was changed.
 */
START_TEST(test_iget_change_evicted)
{
	enum { N = 48 };
	struct t_igetter g[T_IGET_THREADS];
	pthread_t th[T_IGET_THREADS];
	struct t_fs t;
	struct mqfs_ino *ip;
	uint64_t inos[N], total = 0;

	t_fs_make(&t, T_SIZE);
	t_fs_unmount(&t);
	t.mount.meta_cache_bytes = 8 << 10;	/* the minimum: 16 idle */
	t_fs_mount(&t);
	for (int i = 0; i < N; i++) {
		inos[i] = t_new(t.fs, S_IFREG | 0644, &ip);
		mqfs_ino_lookup_inc(t.fs, ip);
		mqfs_iput(t.fs, ip);
	}
	for (int i = 0; i < T_IGET_THREADS; i++) {
		g[i] = (struct t_igetter){ .fs = t.fs, .inos = inos, .n = N,
					   .change = true, .seed = 7u + i };
		ck_assert_int_eq(pthread_create(&th[i], NULL, t_iget_main,
						&g[i]), 0);
	}
	for (int i = 0; i < T_IGET_THREADS; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(g[i].err, 0);
	}
	for (int i = 0; i < N; i++) {
		ck_assert_int_eq(mqfs_iget(t.fs, inos[i], &ip), 0);
		ck_assert_uint_eq(ip->nlookup, 1);
		total += ip->d.uid - 1000;
		mqfs_iput(t.fs, ip);
		mqfs_forget(t.fs, inos[i], 1);
	}
	ck_assert_uint_eq(total, (uint64_t)T_IGET_THREADS * 200 * N);
	t_fs_destroy(&t);
}
END_TEST

/* ---- locks ------------------------------------------------------------------ */

struct t_dio {
	struct mqfs_ino *ip;
	atomic_bool ended;
};

static void *t_dio_main(void *arg)
{
	struct t_dio *d = arg;
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	nanosleep(&ts, NULL);
	atomic_store(&d->ended, true);
	mqfs_ino_dio_end(d->ip);
	return NULL;
}

START_TEST(test_locks_and_dio)
{
	struct t_fs t;
	struct mqfs_ino *a, *b;
	struct t_dio d;
	pthread_t th;

	t_fs_make(&t, T_SIZE);
	t_new(t.fs, S_IFREG | 0644, &a);
	t_new(t.fs, S_IFREG | 0644, &b);
	mqfs_ino_lock2(a, a);			/* once, not twice */
	ck_assert_int_eq(pthread_rwlock_tryrdlock(&a->lock), EBUSY);
	mqfs_ino_unlock2(a, a);
	mqfs_ino_lock2(b, a);
	ck_assert_int_eq(pthread_rwlock_tryrdlock(&a->lock), EBUSY);
	ck_assert_int_eq(pthread_rwlock_tryrdlock(&b->lock), EBUSY);
	mqfs_ino_unlock2(b, a);
	ck_assert_int_eq(pthread_rwlock_trywrlock(&a->lock), 0);
	pthread_rwlock_unlock(&a->lock);
	mqfs_ino_dio_wait(t.fs, a);			/* nothing in flight */
	d.ip = a;
	atomic_init(&d.ended, false);
	mqfs_ino_dio_start(a);
	ck_assert_int_eq(pthread_create(&th, NULL, t_dio_main, &d), 0);
	mqfs_ino_dio_wait(t.fs, a);
	ck_assert(atomic_load(&d.ended));
	pthread_join(th, NULL);
	mqfs_iput(t.fs, a);
	mqfs_iput(t.fs, b);
	t_fs_destroy(&t);
}
END_TEST

static Suite *inode_suite(void)
{
	Suite *s = suite_create("inode");
	TCase *tc = t_tcase(s, "core", 60);

	tcase_add_test(tc, test_inew_roundtrip);
	tcase_add_test(tc, test_iget_missing);
	tcase_add_test(tc, test_delete_on_last_iput);
	tcase_add_test(tc, test_lookup_and_open_counts);
	tcase_add_test(tc, test_unmount_deletes_unlinked);
	tcase_add_test(tc, test_orphan_list);
	tcase_add_test(tc, test_orphan_linked_remount);
	tcase_add_test(tc, test_orphan_recovery_after_crash);
	tcase_add_test(tc, test_setattr);
	tcase_add_test(tc, test_open_trunc_readonly);
	tcase_add_test(tc, test_icache_lru_bound);
	tcase_add_test(tc, test_icache_evicts_looked_up);
	tcase_add_test(tc, test_iget_change_evicted);
	tcase_add_test(tc, test_lookups_table);
	tcase_add_test(tc, test_iget_threads);
	tcase_add_test(tc, test_locks_and_dio);
	return s;
}

T_MAIN(inode_suite)
