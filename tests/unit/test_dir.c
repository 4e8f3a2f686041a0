// SPDX-License-Identifier: MIT
/*
 * test_dir.c - directory entries (src/fs/dir.c) through fs_i.h on the
 * root directory of a ram-device filesystem: add, lookup, replace,
 * remove, iterate with cookies, a 100k-entry directory, persistence
 * across remount and refusal of a corrupt block.  The entries name
 * made-up inode numbers: dir.c never looks at the inodes.
 */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

#include "t_fs.h"
#include "t_main.h"

#define TD_BIG		100000u
#define TD_FS_SIZE	(128 * T_FS_MIB)
/* Entries name inodes inside the table (the daemon skips others). */
#define TD_INOS		2000u

/* The inode number entry @i names: never the root, never past 2001. */
static uint64_t td_ino(unsigned i)
{
	return 2 + i % TD_INOS;
}

/* ---- helpers ----------------------------------------------------------- */

static struct mqfs_ino *td_root(struct t_fs *t)
{
	struct mqfs_ino *ip;

	ck_assert_int_eq(mqfs_iget(t->fs, MQFS_ROOT_INO, &ip), 0);
	return ip;
}

static const char *td_name(char *buf, const char *prefix, unsigned i)
{
	snprintf(buf, MQFS_NAME_MAX + 1, "%s%06u", prefix, i);
	return buf;
}

enum td_op { TD_ADD, TD_REMOVE, TD_REPLACE };

/* One change in its own handle, as namei.c does it. */
static int td_change(struct t_fs *t, struct mqfs_ino *dir, enum td_op op,
		     const char *name, uint64_t ino)
{
	struct mqfs_handle h;
	size_t len = strlen(name);
	int err, err2;

	pthread_rwlock_wrlock(&dir->lock);
	err = mqfs_trans_start(t->fs, mqfs_dir_credits(t->fs), &h);
	ck_assert_int_eq(err, 0);
	if (op == TD_ADD)
		err = mqfs_dir_add(&h, dir, name, len, ino, DT_REG);
	else if (op == TD_REMOVE)
		err = mqfs_dir_remove(&h, dir, name, len);
	else
		err = mqfs_dir_replace(&h, dir, name, len, ino, DT_DIR);
	err2 = mqfs_trans_stop(&h);
	pthread_rwlock_unlock(&dir->lock);
	ck_assert_int_eq(err2, 0);
	return err;
}

static int td_lookup(struct t_fs *t, struct mqfs_ino *dir, const char *name,
		     uint64_t *ino, unsigned *type)
{
	int err;

	pthread_rwlock_rdlock(&dir->lock);
	err = mqfs_dir_lookup(t->fs, dir, name, strlen(name), ino, type);
	pthread_rwlock_unlock(&dir->lock);
	return err;
}

/* What an iteration saw: counts per name index, the last cookie. */
struct td_seen {
	unsigned *count;		/* by the number in the name */
	unsigned n, total, limit;	/* limit: stop after this many */
	uint64_t resume;		/* next_pos of the last taken entry */
	char stopped[MQFS_NAME_MAX + 1];
	uint64_t last_pos;
	bool ordered;			/* cookies strictly increased */
};

static int td_collect(void *ctx, const char *name, size_t len, uint64_t ino,
		      unsigned type, uint64_t next_pos)
{
	struct td_seen *s = ctx;
	unsigned idx;

	(void)type;
	if (s->limit && s->total == s->limit) {
		memcpy(s->stopped, name, len);
		s->stopped[len] = '\0';
		return 1;
	}
	ck_assert_uint_ge(next_pos, 3);
	if (next_pos <= s->last_pos)
		s->ordered = false;
	s->last_pos = next_pos;
	ck_assert_int_eq(sscanf(name + 1, "%6u", &idx), 1);
	ck_assert_uint_lt(idx, s->n);
	ck_assert_uint_eq(ino, td_ino(idx));
	s->count[idx]++;
	s->total++;
	s->resume = next_pos;
	return 0;
}

static void td_seen_init(struct td_seen *s, unsigned n, unsigned limit)
{
	memset(s, 0, sizeof(*s));
	s->count = calloc(n, sizeof(*s->count));
	ck_assert_ptr_nonnull(s->count);
	s->n = n;
	s->limit = limit;
	s->ordered = true;
}

static void td_iterate(struct t_fs *t, struct mqfs_ino *dir, uint64_t pos,
		       struct td_seen *s)
{
	int err;

	s->last_pos = pos;
	pthread_rwlock_rdlock(&dir->lock);
	err = mqfs_dir_iterate(t->fs, dir, pos, td_collect, s);
	pthread_rwlock_unlock(&dir->lock);
	ck_assert_int_eq(err, 0);
	ck_assert(s->ordered);
}

static int td_empty(struct t_fs *t, struct mqfs_ino *dir)
{
	int ret;

	pthread_rwlock_rdlock(&dir->lock);
	ret = mqfs_dir_is_empty(t->fs, dir);
	pthread_rwlock_unlock(&dir->lock);
	return ret;
}

/* ---- tests ------------------------------------------------------------- */

START_TEST(test_dir_basic)
{
	struct t_fs t;
	struct mqfs_ino *root;
	char big[MQFS_NAME_MAX + 2];
	uint64_t ino;
	unsigned type;

	t_fs_make(&t, 32 * T_FS_MIB);
	root = td_root(&t);
	ck_assert_int_eq(td_empty(&t, root), 1);
	ck_assert_int_eq(td_lookup(&t, root, "a", &ino, &type), -ENOENT);
	ck_assert_int_eq(td_change(&t, root, TD_ADD, "a", 1000), 0);
	ck_assert_int_eq(td_change(&t, root, TD_ADD, "b", 1001), 0);
	ck_assert_int_eq(td_change(&t, root, TD_ADD, "a", 1002), -EEXIST);
	ck_assert_int_eq(td_empty(&t, root), 0);
	ck_assert_uint_eq(root->d.size, MQFS_BLOCK_SIZE);
	ck_assert_int_eq(td_lookup(&t, root, "a", &ino, &type), 0);
	ck_assert_uint_eq(ino, 1000);
	ck_assert_uint_eq(type, DT_REG);
	ck_assert_int_eq(td_change(&t, root, TD_REPLACE, "a", 1007), 0);
	ck_assert_int_eq(td_lookup(&t, root, "a", &ino, &type), 0);
	ck_assert_uint_eq(ino, 1007);
	ck_assert_uint_eq(type, DT_DIR);
	ck_assert_int_eq(td_change(&t, root, TD_REPLACE, "zz", 1), -ENOENT);
	/* Names: empty and too long are refused, 255 bytes is fine. */
	memset(big, 'x', sizeof(big) - 1);
	big[MQFS_NAME_MAX + 1] = '\0';
	ck_assert_int_eq(td_change(&t, root, TD_ADD, big, 5), -ENAMETOOLONG);
	ck_assert_int_eq(td_change(&t, root, TD_ADD, "", 5), -EINVAL);
	big[MQFS_NAME_MAX] = '\0';
	ck_assert_int_eq(td_change(&t, root, TD_ADD, big, 1003), 0);
	ck_assert_int_eq(td_lookup(&t, root, big, &ino, NULL), 0);
	ck_assert_uint_eq(ino, 1003);
	/* The first record of the block becomes free, not merged. */
	ck_assert_int_eq(td_change(&t, root, TD_REMOVE, "a", 0), 0);
	ck_assert_int_eq(td_change(&t, root, TD_REMOVE, "a", 0), -ENOENT);
	ck_assert_int_eq(td_change(&t, root, TD_REMOVE, "b", 0), 0);
	ck_assert_int_eq(td_change(&t, root, TD_REMOVE, big, 0), 0);
	ck_assert_int_eq(td_empty(&t, root), 1);
	/* Space is reused: the directory did not grow. */
	ck_assert_int_eq(td_change(&t, root, TD_ADD, "c", 1004), 0);
	ck_assert_uint_eq(root->d.size, MQFS_BLOCK_SIZE);
	ck_assert_int_eq(td_change(&t, root, TD_REMOVE, "c", 0), 0);
	mqfs_iput(t.fs, root);
	t_fs_destroy(&t);
}
END_TEST

/* A directory that needs several blocks; all of it survives remount. */
START_TEST(test_dir_persist)
{
	struct t_fs t;
	struct mqfs_ino *root;
	struct td_seen s;
	char name[MQFS_NAME_MAX + 1];
	unsigned i, n = 2000;
	uint64_t ino;

	t_fs_make(&t, 32 * T_FS_MIB);
	root = td_root(&t);
	for (i = 0; i < n; i++)
		ck_assert_int_eq(td_change(&t, root, TD_ADD,
					   td_name(name, "p", i), td_ino(i)), 0);
	for (i = 0; i < n; i += 3)
		ck_assert_int_eq(td_change(&t, root, TD_REMOVE,
					   td_name(name, "p", i), 0), 0);
	ck_assert_uint_gt(root->d.size, 10 * MQFS_BLOCK_SIZE);
	mqfs_iput(t.fs, root);
	t_fs_remount(&t);
	root = td_root(&t);
	ck_assert_ptr_null(root->dir_index);
	for (i = 0; i < n; i++) {
		int err = td_lookup(&t, root, td_name(name, "p", i), &ino,
				    NULL);

		ck_assert_int_eq(err, i % 3 ? 0 : -ENOENT);
		if (!err)
			ck_assert_uint_eq(ino, td_ino(i));
	}
	td_seen_init(&s, n, 0);
	td_iterate(&t, root, 0, &s);
	for (i = 0; i < n; i++)
		ck_assert_uint_eq(s.count[i], i % 3 ? 1 : 0);
	free(s.count);
	/* Iteration without an index (a fresh mount) sees the same. */
	mqfs_iput(t.fs, root);
	t_fs_remount(&t);
	root = td_root(&t);
	td_seen_init(&s, n, 0);
	td_iterate(&t, root, 0, &s);
	ck_assert_uint_eq(s.total, n - (n + 2) / 3);
	ck_assert_int_eq(td_empty(&t, root), 0);
	free(s.count);
	mqfs_iput(t.fs, root);
	t_fs_destroy(&t);
}
END_TEST

/*
 * Cookies: entries that exist throughout are seen exactly once even
 * when entries are removed (the next one to be offered among them) and
 * added between the two halves of an iteration.
 */
START_TEST(test_dir_cookies)
{
	struct t_fs t;
	struct mqfs_ino *root;
	struct td_seen s;
	char name[MQFS_NAME_MAX + 1];
	unsigned i, n = 1500, gone_idx, *first;
	bool *removed;

	t_fs_make(&t, 32 * T_FS_MIB);
	root = td_root(&t);
	removed = calloc(n, sizeof(*removed));
	for (i = 0; i < 1000; i++)
		ck_assert_int_eq(td_change(&t, root, TD_ADD,
					   td_name(name, "c", i), td_ino(i)), 0);
	td_seen_init(&s, n, 300);
	td_iterate(&t, root, 0, &s);
	ck_assert_uint_eq(s.total, 300);
	first = calloc(n, sizeof(*first));
	memcpy(first, s.count, n * sizeof(*first));
	/* Remove the entry the walk stopped on, some seen, some not. */
	ck_assert_int_eq(sscanf(s.stopped + 1, "%6u", &gone_idx), 1);
	removed[gone_idx] = true;
	for (i = 0; i < 1000; i += 7)
		removed[i] = true;
	for (i = 0; i < 1000; i++)
		if (removed[i])
			ck_assert_int_eq(td_change(&t, root, TD_REMOVE,
						   td_name(name, "c", i), 0), 0);
	for (i = 1000; i < n; i++)
		ck_assert_int_eq(td_change(&t, root, TD_ADD,
					   td_name(name, "c", i), td_ino(i)), 0);
	s.limit = 0;
	td_iterate(&t, root, s.resume, &s);
	ck_assert_uint_eq(first[gone_idx], 0);
	for (i = 0; i < 1000; i++)
		ck_assert_uint_eq(s.count[i], removed[i] ? first[i] : 1);
	for (i = 1000; i < n; i++)
		ck_assert_uint_le(s.count[i], 1);
	free(s.count);
	/* Resuming at the end yields nothing; a full walk is exact. */
	td_seen_init(&s, n, 0);
	td_iterate(&t, root, root->d.size, &s);
	ck_assert_uint_eq(s.total, 0);
	td_iterate(&t, root, 0, &s);
	for (i = 0; i < n; i++)
		ck_assert_uint_eq(s.count[i], i < 1000 && removed[i] ? 0 : 1);
	free(s.count);
	free(first);
	free(removed);
	mqfs_iput(t.fs, root);
	t_fs_destroy(&t);
}
END_TEST

/* 100k entries: add, look up, iterate, remove half, refill, remount. */
START_TEST(test_dir_100k)
{
	struct t_fs t;
	struct mqfs_ino *root;
	struct td_seen s;
	char name[MQFS_NAME_MAX + 1];
	uint64_t ino, size;
	unsigned i;

	t_fs_make(&t, TD_FS_SIZE);
	root = td_root(&t);
	for (i = 0; i < TD_BIG; i++)
		ck_assert_int_eq(td_change(&t, root, TD_ADD,
					   td_name(name, "f", i), td_ino(i)), 0);
	for (i = 0; i < TD_BIG; i++) {
		ck_assert_int_eq(td_lookup(&t, root, td_name(name, "f", i),
					   &ino, NULL), 0);
		ck_assert_uint_eq(ino, td_ino(i));
	}
	ck_assert_int_eq(td_lookup(&t, root, "f100000", &ino, NULL), -ENOENT);
	td_seen_init(&s, TD_BIG, 0);
	td_iterate(&t, root, 0, &s);
	ck_assert_uint_eq(s.total, TD_BIG);
	free(s.count);
	for (i = 0; i < TD_BIG; i += 2)
		ck_assert_int_eq(td_change(&t, root, TD_REMOVE,
					   td_name(name, "f", i), 0), 0);
	size = root->d.size;
	/* Re-adding fills the freed space instead of growing. */
	for (i = 0; i < TD_BIG; i += 2)
		ck_assert_int_eq(td_change(&t, root, TD_ADD,
					   td_name(name, "g", i), td_ino(i)), 0);
	ck_assert_uint_eq(root->d.size, size);
	mqfs_iput(t.fs, root);
	t_fs_remount(&t);
	root = td_root(&t);
	for (i = 0; i < TD_BIG; i++) {
		ck_assert_int_eq(td_lookup(&t, root, td_name(name, "f", i),
					   &ino, NULL), i % 2 ? 0 : -ENOENT);
		ck_assert_int_eq(td_lookup(&t, root, td_name(name, "g", i),
					   &ino, NULL), i % 2 ? -ENOENT : 0);
	}
	td_seen_init(&s, TD_BIG, 0);
	td_iterate(&t, root, 0, &s);
	ck_assert_uint_eq(s.total, TD_BIG);
	free(s.count);
	mqfs_iput(t.fs, root);
	t_fs_destroy(&t);
}
END_TEST

/* A record that breaks the tiling (checksum fine) is -EUCLEAN. */
START_TEST(test_dir_corrupt_record)
{
	struct t_fs t;
	struct mqfs_ino *root;
	struct mqfs_map m;
	struct mqfs_blk_hdr *hdr;
	struct mqfs_dirent *de;
	uint64_t ino;
	uint8_t *raw;

	t_fs_make(&t, 32 * T_FS_MIB);
	root = td_root(&t);
	ck_assert_int_eq(td_change(&t, root, TD_ADD, "one", td_ino(1000)), 0);
	ck_assert_int_eq(td_change(&t, root, TD_ADD, "two", td_ino(1001)), 0);
	pthread_rwlock_rdlock(&root->lock);
	ck_assert_int_eq(mqfs_extent_map(t.fs, root, 0, 1, &m), 0);
	pthread_rwlock_unlock(&root->lock);
	ck_assert_uint_ne(m.pblk, 0);
	mqfs_iput(t.fs, root);
	t_fs_unmount(&t);
	raw = t_fs_raw_block(&t, m.pblk);
	hdr = (struct mqfs_blk_hdr *)raw;
	de = (struct mqfs_dirent *)(raw + MQFS_HDR_SIZE);
	ck_assert_uint_eq(de->ino, td_ino(1000));
	de->rec_len = 4000;		/* overlaps "two" */
	mqfs_blk_seal(raw, MQFS_T_DIR, m.pblk, hdr->gen);
	t.mount.errors = MQFS_ERRORS_CONTINUE;
	t_fs_mount(&t);
	root = td_root(&t);
	ck_assert_int_eq(td_lookup(&t, root, "two", &ino, NULL), -EUCLEAN);
	ck_assert_ptr_null(root->dir_index);
	mqfs_iput(t.fs, root);
	t_fs_unmount_unclean(&t);
	t_fs_destroy(&t);
}
END_TEST

static Suite *dir_suite(void)
{
	Suite *s = suite_create("dir");
	TCase *tc = t_tcase(s, "core", 60);

	tcase_add_test(tc, test_dir_basic);
	tcase_add_test(tc, test_dir_persist);
	tcase_add_test(tc, test_dir_cookies);
	tcase_add_test(tc, test_dir_100k);
	tcase_add_test(tc, test_dir_corrupt_record);
	return s;
}

T_MAIN(dir_suite)
