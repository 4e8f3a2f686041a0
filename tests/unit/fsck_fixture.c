// SPDX-License-Identifier: MIT
/*
 * fsck_fixture.c - the helpers test_fsck's case files share
 * (fsck_fixture.h): the populated test filesystem, patterned file I/O,
 * raw block access, fsck runs, churn and a walk that reads everything.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>

#include "fsck_fixture.h"
#include "t_fsio.h"
#include "mqfs/dev/ram.h"

/* ---- file I/O (t_fsio.h) ------------------------------------------------ */

static void tf_fill(uint8_t *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed * 31 + i / 512);
}

/* Write @len bytes of pattern @seed at @off. */
void tf_pwrite(struct t_fs *t, uint64_t ino, uint64_t off,
		      unsigned seed, size_t len)
{
	uint8_t *buf = malloc(len);
	struct mqfs_file *f;

	tf_fill(buf, len, seed);
	ck_assert_int_eq(mqfs_open(t->fs, ino, O_WRONLY, &f), 0);
	ck_assert_int_eq(t_write(t->fs, f, off, buf, len), (ssize_t)len);
	ck_assert_int_eq(mqfs_release(t->fs, f), 0);
	free(buf);
}

void tf_write_file(struct t_fs *t, uint64_t ino, unsigned seed,
			  size_t len)
{
	tf_pwrite(t, ino, 0, seed, len);
}

/* Do the @len bytes at @off hold pattern @seed (and, with @eof, end
 * the file there)? */
bool tf_pread_is(struct t_fs *t, uint64_t ino, uint64_t off,
			unsigned seed, size_t len, bool eof)
{
	uint8_t *want = malloc(len), *got = calloc(1, len + 1);
	struct mqfs_file *f;
	ssize_t n;
	bool same;

	tf_fill(want, len, seed);
	ck_assert_int_eq(mqfs_open(t->fs, ino, O_RDONLY, &f), 0);
	n = t_read(t->fs, f, off, got, len + (eof ? 1 : 0));
	same = n == (ssize_t)len && !memcmp(want, got, len);
	ck_assert_int_eq(mqfs_release(t->fs, f), 0);
	free(want);
	free(got);
	return same;
}

/* Does file @ino hold exactly @len bytes of pattern @seed? */
bool tf_file_is(struct t_fs *t, uint64_t ino, unsigned seed,
		       size_t len)
{
	return tf_pread_is(t, ino, 0, seed, len, true);
}

/* ---- building the test filesystem --------------------------------------- */

uint64_t tf_mk(struct t_fs *t, uint64_t parent, const char *name,
		      mode_t mode)
{
	struct mqfs_entry e;

	ck_assert_int_eq(mqfs_mknod(t->fs, parent, name, mode, 0, 0, 0, &e),
			 0);
	mqfs_forget(t->fs, e.ino, 1);
	return e.ino;
}

/* Inode number of @name in @parent, 0 when missing. */
uint64_t tf_lookup(struct t_fs *t, uint64_t parent, const char *name)
{
	struct mqfs_entry e;

	if (mqfs_lookup(t->fs, parent, name, &e))
		return 0;
	mqfs_forget(t->fs, e.ino, 1);
	return e.ino;
}

static char tf_target[300];

/*
 * / : dir/ (f00..f39, sub/, a2 -> a), a (8 KiB), b (4 KiB), s (a long
 * symlink, one data block); then unmounted cleanly.
 */
void tf_populate(struct tf *x)
{
	struct t_fs *t = &x->t;
	struct mqfs_entry e;
	char name[16];

	memset(x, 0, sizeof(*x));
	t_fs_make(t, TF_SIZE);
	x->dir = tf_mk(t, MQFS_ROOT_INO, "dir", S_IFDIR | 0755);
	x->sub = tf_mk(t, x->dir, "sub", S_IFDIR | 0755);
	for (unsigned i = 0; i < TF_FILES; i++) {
		snprintf(name, sizeof(name), "f%02u", i);
		x->f[i] = tf_mk(t, x->dir, name, S_IFREG | 0644);
		tf_write_file(t, x->f[i], i, TF_FILE_BYTES);
	}
	x->a = tf_mk(t, MQFS_ROOT_INO, "a", S_IFREG | 0644);
	tf_write_file(t, x->a, 100, 2 * MQFS_BLOCK_SIZE);
	x->b = tf_mk(t, MQFS_ROOT_INO, "b", S_IFREG | 0644);
	tf_write_file(t, x->b, 101, MQFS_BLOCK_SIZE);
	ck_assert_int_eq(mqfs_link(t->fs, x->a, x->dir, "a2", &e), 0);
	mqfs_forget(t->fs, e.ino, 1);
	memset(tf_target, 'x', sizeof(tf_target) - 1);
	ck_assert_int_eq(mqfs_symlink(t->fs, MQFS_ROOT_INO, "s", tf_target,
				      0, 0, &e), 0);
	mqfs_forget(t->fs, e.ino, 1);
	x->sym = e.ino;
	t_fs_unmount(t);
}

void tf_destroy(struct tf *x)
{
	free(x->snap);
	t_fs_destroy(&x->t);
}

/* ---- raw access ---------------------------------------------------------- */

struct mqfs_super *tf_sb(struct t_fs *t)
{
	return (struct mqfs_super *)t_fs_raw_block(t, 0);
}

struct mqfs_layout tf_layout(struct t_fs *t)
{
	struct mqfs_layout l;

	mqfs_super_layout(tf_sb(t), &l);
	return l;
}

uint64_t tf_itable_blk(struct t_fs *t, uint64_t ino)
{
	struct mqfs_layout l = tf_layout(t);
	uint64_t idx = (ino - 1) % l.inodes_per_ag;

	return mqfs_ag_meta_start(&l, (uint32_t)((ino - 1) / l.inodes_per_ag)) +
	       3 + idx / MQFS_INODES_PER_BLOCK;
}

struct mqfs_inode *tf_inode(struct t_fs *t, uint64_t ino)
{
	uint64_t idx = (ino - 1) % tf_sb(t)->inodes_per_ag;

	return (struct mqfs_inode *)(t_fs_raw_block(t, tf_itable_blk(t, ino)) +
		mqfs_itable_offset((unsigned)(idx % MQFS_INODES_PER_BLOCK)));
}

/* Re-seal block @blk after a deliberate change of its payload. */
void tf_reseal(struct t_fs *t, uint64_t blk)
{
	struct mqfs_blk_hdr *h = (void *)t_fs_raw_block(t, blk);

	mqfs_blk_seal(h, h->type, blk, h->gen);
}

void tf_inode_changed(struct t_fs *t, uint64_t ino)
{
	tf_reseal(t, tf_itable_blk(t, ino));
}

uint64_t tf_dev_bytes(struct t_fs *t)
{
	return mq_queue_size_bytes(t->q);
}

void tf_snapshot(struct tf *x)
{
	free(x->snap);
	x->snap = malloc(tf_dev_bytes(&x->t));
	memcpy(x->snap, mq_ram_data(x->t.ram), tf_dev_bytes(&x->t));
}

bool tf_unchanged(struct tf *x)
{
	return !memcmp(x->snap, mq_ram_data(x->t.ram), tf_dev_bytes(&x->t));
}

int tf_fsck(struct t_fs *t, enum mqfs_fsck_mode mode, bool force)
{
	struct mqfs_fsck_opts o = { .mode = mode, .force = force };

	fflush(stdout);
	return mqfs_fsck(t->q, &o);
}

/* -n reports @want and writes nothing. */
void tf_check_n(struct tf *x, int want)
{
	tf_snapshot(x);
	ck_assert_int_eq(tf_fsck(&x->t, MQFS_FSCK_NO, true), want);
	ck_assert_msg(tf_unchanged(x), "fsck -n wrote to the device");
}

/* The usual cycle: -n finds it, @mode fixes it, -n is clean again. */
void tf_repair(struct tf *x, enum mqfs_fsck_mode mode)
{
	tf_check_n(x, MQFS_FSCK_UNCORRECTED);
	ck_assert_int_eq(tf_fsck(&x->t, mode, true), MQFS_FSCK_FIXED);
	tf_check_n(x, MQFS_FSCK_OK);
	ck_assert_uint_ne(tf_sb(&x->t)->state & MQFS_STATE_CLEAN, 0);
	ck_assert_uint_eq(tf_sb(&x->t)->state & MQFS_STATE_ERRORS, 0);
}

/* Files not named in @lost still read back. */
void tf_check_files(struct tf *x, const uint64_t *lost, unsigned nlost)
{
	for (unsigned i = 0; i < TF_FILES; i++) {
		bool gone = false;

		for (unsigned k = 0; k < nlost; k++)
			gone |= lost[k] == x->f[i];
		if (!gone)
			ck_assert_msg(tf_file_is(&x->t, x->f[i], i,
						 TF_FILE_BYTES),
				      "file f%02u (inode %llu) damaged", i,
				      (unsigned long long)x->f[i]);
	}
}


/* ---- what the other modules leave behind --------------------------------- */

/* One namespace or data call chosen by @k among @dirs. */
void tf_churn_op(struct t_fs *t, const uint64_t *dirs, unsigned ndirs,
			unsigned k)
{
	uint64_t dir = dirs[k % ndirs], dir2 = dirs[(k / 8) % ndirs];
	struct mqfs_entry e;
	char name[32], to[32];

	snprintf(name, sizeof(name), "n%u", (k / 64) % 50);
	snprintf(to, sizeof(to), "n%u", (k / 4096) % 50);
	switch (k % 7) {
	case 0:
	case 1:
		if (!mqfs_mknod(t->fs, dir, name, S_IFREG | 0600, 0, 0, 0, &e)) {
			tf_pwrite(t, e.ino, (k % 5) * 8192, k, 1 + k % 20000);
			mqfs_forget(t->fs, e.ino, 1);
		}
		break;
	case 2:
		(void)mqfs_unlink(t->fs, dir, name);
		break;
	case 3:
		(void)mqfs_rename(t->fs, dir, name, dir2, to, 0);
		break;
	case 4:
		if (!mqfs_lookup(t->fs, dir, name, &e)) {
			uint64_t ino = e.ino;

			if (S_ISREG(e.st.st_mode) &&
			    !mqfs_link(t->fs, ino, dir2, to, &e))
				mqfs_forget(t->fs, e.ino, 1);
			mqfs_forget(t->fs, ino, 1);
		}
		break;
	case 5:
		if (!mqfs_symlink(t->fs, dir, name, k % 2 ? "short" : tf_target,
				  0, 0, &e))
			mqfs_forget(t->fs, e.ino, 1);
		break;
	default:
		if (!mqfs_mknod(t->fs, dir, name, S_IFDIR | 0700, 0, 0, 0, &e))
			mqfs_forget(t->fs, e.ino, 1);
		else
			(void)mqfs_rmdir(t->fs, dir, name);
		break;
	}
}

unsigned tf_next(uint64_t *rng)
{
	*rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
	return (unsigned)(*rng >> 33);
}

/* A small tree of directories to churn in: dirs[0] is the root. */
void tf_churn_dirs(struct t_fs *t, uint64_t *dirs, unsigned n)
{
	char name[16];

	dirs[0] = MQFS_ROOT_INO;
	for (unsigned i = 1; i < n; i++) {
		snprintf(name, sizeof(name), "d%u", i);
		dirs[i] = tf_mk(t, dirs[(i - 1) / 2], name, S_IFDIR | 0755);
	}
}

/* ---- reading everything ------------------------------------------------- */

struct tf_dirent {
	uint64_t ino;
	unsigned type;
};

struct tf_list {
	struct tf_dirent v[512];
	unsigned n;
};

static int tf_list_fill(void *ctx, const char *name, uint64_t ino,
			unsigned type, uint64_t next_pos,
			const struct mqfs_entry *e)
{
	struct tf_list *l = ctx;

	(void)next_pos, (void)e;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	ck_assert_uint_lt(l->n, MQ_ARRAY_SIZE(l->v));
	l->v[l->n++] = (struct tf_dirent){ ino, type };
	return 0;
}

/* Read everything below @dir: every call must succeed.  Entries seen. */
unsigned tf_walk(struct t_fs *t, uint64_t dir, unsigned depth)
{
	struct tf_list *l = calloc(1, sizeof(*l));
	unsigned seen;

	ck_assert_uint_lt(depth, 16);
	ck_assert_int_eq(mqfs_readdir(t->fs, dir, 0, false, tf_list_fill, l),
			 0);
	seen = l->n;
	for (unsigned i = 0; i < l->n; i++) {
		struct stat st;
		char buf[MQFS_BLOCK_SIZE];

		ck_assert_int_eq(mqfs_getattr(t->fs, l->v[i].ino, &st), 0);
		ck_assert_uint_eq(IFTODT(st.st_mode), l->v[i].type);
		if (S_ISDIR(st.st_mode))
			seen += tf_walk(t, l->v[i].ino, depth + 1);
		else if (S_ISLNK(st.st_mode))
			ck_assert_int_ge(mqfs_readlink(t->fs, l->v[i].ino, buf,
						       sizeof(buf)), 0);
		else if (S_ISREG(st.st_mode) && st.st_size)
			(void)tf_pread_is(t, l->v[i].ino, 0, 0,
					  (size_t)MQ_MIN(st.st_size, 65536),
					  false);
	}
	free(l);
	return seen;
}

