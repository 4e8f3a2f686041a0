/* SPDX-License-Identifier: MIT */
/*
 * fsck_fixture.h - what the case files of test_fsck share: the populated
 * test filesystem (struct tf), patterned file I/O, raw access to the
 * image's blocks, fsck runs that must leave -n images untouched, churn
 * through the namespace calls, a walk that reads everything; and each
 * case file's registration function, called in this order by
 * test_fsck.c.  The helpers are in fsck_fixture.c.
 */
#ifndef MQFS_TESTS_FSCK_FIXTURE_H
#define MQFS_TESTS_FSCK_FIXTURE_H

#include <check.h>
#include <stdbool.h>
#include <stdint.h>

#include "t_fs.h"

#define TF_SIZE		(64 * T_FS_MIB)
#define TF_FILES	40u
#define TF_FILE_BYTES	(3 * MQFS_BLOCK_SIZE)
#define TF_TREE_EXT	300u	/* extents of the file with an extent tree */

struct tf {
	struct t_fs t;
	uint64_t dir, sub, a, b, sym;
	uint64_t f[TF_FILES];
	uint8_t *snap;
};

/* File I/O: @len bytes of pattern @seed. */
void tf_pwrite(struct t_fs *t, uint64_t ino, uint64_t off, unsigned seed,
	       size_t len);
void tf_write_file(struct t_fs *t, uint64_t ino, unsigned seed, size_t len);
bool tf_pread_is(struct t_fs *t, uint64_t ino, uint64_t off, unsigned seed,
		 size_t len, bool eof);
bool tf_file_is(struct t_fs *t, uint64_t ino, unsigned seed, size_t len);

/* Building the test filesystem. */
uint64_t tf_mk(struct t_fs *t, uint64_t parent, const char *name,
	       mode_t mode);
uint64_t tf_lookup(struct t_fs *t, uint64_t parent, const char *name);
void tf_populate(struct tf *x);
void tf_destroy(struct tf *x);

/* Raw access to the image, fsck runs and their checks. */
struct mqfs_super *tf_sb(struct t_fs *t);
struct mqfs_layout tf_layout(struct t_fs *t);
uint64_t tf_itable_blk(struct t_fs *t, uint64_t ino);
struct mqfs_inode *tf_inode(struct t_fs *t, uint64_t ino);
void tf_reseal(struct t_fs *t, uint64_t blk);
void tf_inode_changed(struct t_fs *t, uint64_t ino);
uint64_t tf_dev_bytes(struct t_fs *t);
void tf_snapshot(struct tf *x);
bool tf_unchanged(struct tf *x);
int tf_fsck(struct t_fs *t, enum mqfs_fsck_mode mode, bool force);
void tf_check_n(struct tf *x, int want);
void tf_repair(struct tf *x, enum mqfs_fsck_mode mode);
void tf_check_files(struct tf *x, const uint64_t *lost, unsigned nlost);

/* Churn: namespace and data calls, as the other modules make them. */
void tf_churn_op(struct t_fs *t, const uint64_t *dirs, unsigned ndirs,
		 unsigned k);
unsigned tf_next(uint64_t *rng);
void tf_churn_dirs(struct t_fs *t, uint64_t *dirs, unsigned n);

/* Read everything below @dir; the number of entries seen. */
unsigned tf_walk(struct t_fs *t, uint64_t dir, unsigned depth);

/* fsck_damage.c: clean images, each kind of damage, churn. */
void fsck_add_damage_tests(TCase *tc);
/* fsck_random.c: random and sealed damage campaigns. */
void fsck_add_random_tests(TCase *tc);
/* fsck_crash.c: crash images (journal, orphans). */
void fsck_add_crash_tests(TCase *tc);
/* fsck_lazy.c: uninitialised AGs and the AG-init map. */
void fsck_add_lazy_tests(TCase *tc);

#endif /* MQFS_TESTS_FSCK_FIXTURE_H */
