/* SPDX-License-Identifier: MIT */
/*
 * file_fixture.h - what the case files of test_file share: a file of the
 * filesystem under test together with its model (a reference copy of
 * every byte), the calls that change both, the checks that compare
 * them, and each case file's registration function, called in this
 * order by test_file.c.  The helpers are in file_fixture.c.
 */
#ifndef MQFS_TESTS_FILE_FIXTURE_H
#define MQFS_TESTS_FILE_FIXTURE_H

#include <check.h>
#include <stdint.h>
#include <sys/stat.h>

#include "t_fs.h"

#define T_SIZE		(64 * T_FS_MIB)
#define T_MODEL_MAX	(4 * T_FS_MIB)	/* bytes a model file may hold */
#define T_KIB		1024ull

/* ---- files and their models -------------------------------------------- */

struct t_file {
	struct mqfs_fs **fsp;		/* follows remounts */
	uint64_t ino;
	int flags;
	struct mqfs_file *f;
	uint8_t *model;			/* T_MODEL_MAX bytes */
	uint64_t size;
	const char *what;
	unsigned step, seed;
};

#define t_ok(tf, cond, fmt, ...)					\
	ck_assert_msg((cond), "%s step %u (seed %u): " fmt, (tf)->what,	\
		      (tf)->step, (tf)->seed, ##__VA_ARGS__)

/* T_FILE_SEED when set, else @dflt. */
unsigned t_seed(unsigned dflt);

/* A file and its model: create, close, reopen, free. */
void t_file_create(struct t_fs *t, struct t_file *tf, const char *name,
		   int flags);
void t_file_close(struct t_file *tf);
void t_file_reopen(struct t_file *tf);
void t_file_free(struct t_file *tf);
/* Close @files, remount (or unmount, fsck clean, mount), reopen them. */
void t_remount(struct t_fs *t, struct t_file **files, unsigned n);
void t_fsck(struct t_fs *t, struct t_file **files, unsigned n);

/* Changes made to the file and the model alike, and their checks. */
void t_rand_bytes(uint8_t *p, size_t n);
struct stat t_stat(struct t_file *tf);
/* Wait for the filesystem's clock (the coarse one: a tick of 1-4 ms) to
 * move on, so that the next stamp differs from the last. */
void t_next_tick(void);
void t_mwrite(struct t_file *tf, uint64_t off, const void *buf, size_t n);
void t_mtruncate(struct t_file *tf, uint64_t size);
int t_falloc(struct t_file *tf, int mode, uint64_t off, uint64_t len);
/* lseek that must return @want; the offset it found. */
uint64_t t_seek(struct t_file *tf, uint64_t off, int whence, int want);
void t_check(struct t_file *tf);
uint64_t t_free_blocks(struct t_fs *t);
uint64_t t_blocks(struct t_file *tf);
uint64_t t_data_blocks(struct t_file *tf);

/* file_io.c: aligned and unaligned I/O, EOF, sparse files, extents,
 * O_APPEND, truncate, fallocate modes, SEEK_DATA/SEEK_HOLE. */
void file_add_io_tests(TCase *tc);
/* file_limits.c: the size limit, read-only mounts, ENOSPC. */
void file_add_limits_tests(TCase *tc);
/* file_crash.c: power cuts, I/O errors, an interrupted truncate. */
void file_add_crash_tests(TCase *tc);
/* file_random.c: random operations, from one thread and from several. */
void file_add_random_tests(TCase *tc);
/* file_times.c: lazy times, alone and under load. */
void file_add_times_tests(TCase *tc);
/* file_release.c: a release waits for the reads still in flight. */
void file_add_release_tests(TCase *tc);

#endif /* MQFS_TESTS_FILE_FIXTURE_H */
