// SPDX-License-Identifier: MIT
/*
 * file_times.c - test_file's lazy times: overwrites from the caller's
 * aligned memory keep their times in memory until a commit, fsync,
 * unmount or eviction writes them, and so do reads their access times
 * (by the rule of the mount's atime mode); and under load (fsyncs,
 * deletions, a full journal) every thread gets through.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "file_fixture.h"
#include "t_fsio.h"

/* ---- lazy times -------------------------------------------------------- */

/* @ino's record in the inode table as it is now. */
static struct mqfs_inode t_record(struct mqfs_fs *fs, uint64_t ino)
{
	uint32_t ag = (uint32_t)((ino - 1) / fs->inodes_per_ag);
	uint32_t i = (uint32_t)((ino - 1) % fs->inodes_per_ag);
	uint64_t blk = mqfs_fs_ag_meta(fs, ag) + 3 + i / MQFS_INODES_PER_BLOCK;
	struct mqfs_inode d;
	struct mqfs_buf *b;

	ck_assert_int_eq(mqfs_buf_read(fs, blk, MQFS_T_ITABLE, &b), 0);
	memcpy(&d, (char *)b->data +
	       mqfs_itable_offset(i % MQFS_INODES_PER_BLOCK), sizeof(d));
	mqfs_buf_put(b);
	return d;
}

static struct timespec t_record_mtime(struct mqfs_fs *fs, uint64_t ino)
{
	struct mqfs_inode d = t_record(fs, ino);

	return (struct timespec){ .tv_sec = (time_t)d.mtime_sec,
				  .tv_nsec = d.mtime_nsec };
}

static struct timespec t_record_atime(struct mqfs_fs *fs, uint64_t ino)
{
	struct mqfs_inode d = t_record(fs, ino);

	return (struct timespec){ .tv_sec = (time_t)d.atime_sec,
				  .tv_nsec = d.atime_nsec };
}

static bool t_ts_eq(struct timespec a, struct timespec b)
{
	return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

/* @n empty files in the root, their lookups given back (unused). */
static void t_make_others(struct t_fs *t, const char *prefix, int n)
{
	struct mqfs_entry e;
	char name[32];

	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s%d", prefix, i);
		ck_assert_int_eq(mqfs_mknod(t->fs, MQFS_ROOT_INO, name,
					    S_IFREG | 0644, 0, 0, 0, &e), 0);
		mqfs_forget(t->fs, e.ino, 1);
	}
}

/* One aligned 4 KiB overwrite at 0, a tick after the last; the mtime
 * stat sees right after. */
static struct timespec t_overwrite(struct t_file *tf, uint8_t *blk, int v)
{
	t_next_tick();
	memset(blk, v, 4096);
	ck_assert_int_eq(t_write(*tf->fsp, tf->f, 0, blk, 4096), 4096);
	return t_stat(tf).st_mtim;
}

/*
 * The times of an overwrite: visible at once, in the record only once a
 * commit takes them - fsync (then they survive a power cut), unmount,
 * and eviction of the unused inode from the cache.
 */
START_TEST(test_lazy_times)
{
	struct timespec m0, m1, m2, m3;
	struct mqfs_entry e;
	struct t_file tf;
	struct t_fs t;
	uint8_t *blk;

	ck_assert_int_eq(posix_memalign((void **)&blk, 4096, 4096), 0);
	t_fs_make_opts(&t, T_SIZE, 0, true);
	t_file_create(&t, &tf, "lazy", O_RDWR);
	m0 = t_overwrite(&tf, blk, 1);		/* allocating: journaled */
	ck_assert_int_eq(mqfs_fsync(t.fs, tf.ino, false), 0);
	ck_assert(t_ts_eq(t_record_mtime(t.fs, tf.ino), m0));
	m1 = t_overwrite(&tf, blk, 2);
	ck_assert(!t_ts_eq(m1, m0));
	ck_assert_msg(t_ts_eq(t_record_mtime(t.fs, tf.ino), m0),
		      "an overwrite wrote its inode record");
	ck_assert_int_eq(mqfs_fsync(t.fs, tf.ino, true), 0);
	ck_assert(t_ts_eq(t_record_mtime(t.fs, tf.ino), m1));
	t_file_close(&tf);
	t_fs_crash(&t);
	t_file_reopen(&tf);
	ck_assert_msg(t_ts_eq(t_stat(&tf).st_mtim, m1), "fsync'd mtime lost");
	/* Unmount writes them. */
	m2 = t_overwrite(&tf, blk, 3);
	t_file_close(&tf);
	t_fs_remount(&t);
	t_file_reopen(&tf);
	ck_assert_msg(t_ts_eq(t_stat(&tf).st_mtim, m2), "lost at unmount");
	/* Nor are they lost in a small cache (it keeps 512 unused inodes):
	 * pushed by 600 others, the unused inode with its times in memory
	 * stays cached; a commit writes it, and then it may go. */
	t_file_close(&tf);
	t_fs_unmount(&t);
	t.mount.meta_cache_bytes = 256 * T_KIB;
	t_fs_mount(&t);
	t_file_reopen(&tf);
	m3 = t_overwrite(&tf, blk, 4);
	t_file_close(&tf);
	t_make_others(&t, "other", 600);
	ck_assert_msg(t_ts_eq(t_stat(&tf).st_mtim, m3),
		      "an inode with times in memory was evicted");
	ck_assert_int_eq(mqfs_sync(t.fs), 0);
	ck_assert(t_ts_eq(t_record_mtime(t.fs, tf.ino), m3));
	t_make_others(&t, "more", 600);
	ck_assert_int_eq(mqfs_lookup(t.fs, MQFS_ROOT_INO, "lazy", &e), 0);
	ck_assert(t_ts_eq(e.st.st_mtim, m3));
	mqfs_forget(t.fs, e.ino, 1);
	t_file_reopen(&tf);
	t_file_free(&tf);
	t_fs_destroy(&t);
	free(blk);
}
END_TEST


/* ---- access times -------------------------------------------------------- */

/* The rule of each atime mode, on times set by hand: now is 100000 s. */
START_TEST(test_atime_rule)
{
	const uint64_t now = 100000;
	struct mqfs_inode d = { .mtime_sec = 500, .ctime_sec = 500,
				.atime_sec = now - 60 };

	ck_assert(!mqfs_atime_due(MQFS_ATIME_NONE, &d, now, 0));
	ck_assert(mqfs_atime_due(MQFS_ATIME_STRICT, &d, now, 0));
	/* relatime: read since the last change, less than a day ago. */
	ck_assert(!mqfs_atime_due(MQFS_ATIME_RELATIME, &d, now, 0));
	d.mtime_sec = d.atime_sec;		/* changed when last read */
	ck_assert(mqfs_atime_due(MQFS_ATIME_RELATIME, &d, now, 0));
	d.mtime_sec = 500;
	d.ctime_sec = d.atime_sec;
	d.ctime_nsec = 1;			/* changed after */
	ck_assert(mqfs_atime_due(MQFS_ATIME_RELATIME, &d, now, 0));
	d.ctime_sec = 500;
	d.atime_sec = now - 24 * 3600;		/* a day old */
	ck_assert(mqfs_atime_due(MQFS_ATIME_RELATIME, &d, now, 0));
	ck_assert(!mqfs_atime_due(MQFS_ATIME_RELATIME, &d, now - 1, 0));
	d.atime_sec = now + 3600;		/* set ahead by hand */
	ck_assert(!mqfs_atime_due(MQFS_ATIME_RELATIME, &d, now, 0));
	/* Nothing moves to the time it already has. */
	d.atime_sec = now;
	ck_assert(!mqfs_atime_due(MQFS_ATIME_STRICT, &d, now, 0));
}
END_TEST

/* A read and the atime it leaves: in memory @moved, never in the record. */
static struct timespec t_read_atime(struct t_file *tf, uint8_t *blk,
				    bool moved)
{
	struct timespec before = t_stat(tf).st_atim, after;
	struct timespec rec = t_record_atime(*tf->fsp, tf->ino);

	t_next_tick();
	ck_assert_int_eq(t_read(*tf->fsp, tf->f, 0, blk, 4096), 4096);
	after = t_stat(tf).st_atim;
	ck_assert_msg(t_ts_eq(before, after) != moved, "atime %s",
		      moved ? "kept" : "moved");
	ck_assert_msg(t_ts_eq(t_record_atime(*tf->fsp, tf->ino), rec),
		      "a read wrote its inode record");
	return after;
}

/* Mount again with atime mode @mode, @tf open again. */
static void t_remount_atime(struct t_fs *t, struct t_file *tf,
			    enum mqfs_atime_mode mode)
{
	t_file_close(tf);
	t_fs_unmount(t);
	t->mount.atime = mode;
	t_fs_mount(t);
	t_file_reopen(tf);
}

/*
 * Reads move atime in memory only; fsync writes it; a power cut before
 * a commit loses it (the lazytime window); relatime moves it once after
 * a change, strictatime every time, noatime never.
 */
START_TEST(test_atime_lazy)
{
	struct timespec a1, a2;
	struct t_file tf;
	struct t_fs t;
	uint8_t *blk;

	ck_assert_int_eq(posix_memalign((void **)&blk, 4096, 4096), 0);
	memset(blk, 7, 4096);
	t_fs_make_opts(&t, T_SIZE, 0, true);
	t_fs_unmount(&t);
	t.mount.commit_interval_ms = 3600 * 1000;	/* no commit unasked */
	t_fs_mount(&t);
	t_file_create(&t, &tf, "atime", O_RDWR);
	ck_assert_int_eq(t_write(t.fs, tf.f, 0, blk, 4096), 4096);
	ck_assert_int_eq(mqfs_fsync(t.fs, tf.ino, false), 0);
	a1 = t_read_atime(&tf, blk, true);	/* relatime: after a change */
	t_read_atime(&tf, blk, false);
	ck_assert_int_eq(mqfs_fsync(t.fs, tf.ino, false), 0);
	ck_assert(t_ts_eq(t_record_atime(t.fs, tf.ino), a1));
	t_remount_atime(&t, &tf, MQFS_ATIME_STRICT);
	t_read_atime(&tf, blk, true);
	a2 = t_read_atime(&tf, blk, true);
	t_file_close(&tf);
	t_fs_crash(&t);				/* before any commit */
	t_file_reopen(&tf);
	ck_assert(!t_ts_eq(t_stat(&tf).st_atim, a2));
	ck_assert(t_ts_eq(t_stat(&tf).st_atim, a1));
	t_remount_atime(&t, &tf, MQFS_ATIME_NONE);
	t_read_atime(&tf, blk, false);
	t_file_free(&tf);
	t_fs_destroy(&t);
	free(blk);
}
END_TEST

/* ---- lazy times under load: no deadlock ------------------------------- */

struct t_storm {
	struct t_fs *t;
	struct mqfs_file *f;
	uint64_t ino;
	unsigned id;
	atomic_bool *stop;
	unsigned rounds;
	int err;
};

/* Overwrite (lazy times) and fsync, or create/overwrite/unlink (deletes). */
static void *t_storm_run(void *arg)
{
	struct t_storm *s = arg;
	struct mqfs_fs *fs = s->t->fs;
	uint8_t *blk = NULL;
	char name[32];

	if (posix_memalign((void **)&blk, 4096, 4096))
		return (void *)"no memory";
	memset(blk, (int)s->id, 4096);
	while (!atomic_load(s->stop) && !s->err) {
		struct mqfs_entry e;
		struct mqfs_file *f;

		if (s->f) {
			ssize_t n = t_write(fs, s->f, (s->rounds % 16) * 4096,
					    blk, 4096);

			if (n != 4096)
				s->err = n < 0 ? (int)n : -EIO;
			else if (s->rounds % 4 == 0)
				s->err = mqfs_fsync(fs, s->ino, false);
		} else {
			snprintf(name, sizeof(name), "storm%u.%u", s->id,
				 s->rounds);
			s->err = mqfs_mknod(fs, MQFS_ROOT_INO, name,
					    S_IFREG | 0644, 0, 0, 0, &e);
			if (!s->err)
				s->err = mqfs_open(fs, e.ino, O_RDWR, &f);
			if (!s->err) {
				if (t_write(fs, f, 0, blk, 4096) != 4096 ||
				    t_write(fs, f, 0, blk, 4096) != 4096)
					s->err = -EIO;
				mqfs_release(fs, f);
			}
			if (!s->err)
				s->err = mqfs_unlink(fs, MQFS_ROOT_INO, name);
			if (!s->err)
				mqfs_forget(fs, e.ino, 1);
		}
		s->rounds++;
	}
	free(blk);
	return NULL;
}

/*
 * Overwrites keep their times on the lazy list while other threads
 * fsync (each fsync writes the list in handles of its own), delete
 * overwritten files (a deletion takes its inode off the list) and the
 * commit thread runs every 5 ms with a journal small enough to be full
 * often: every thread must get through (a lock-order cycle between the
 * list and the journal hung fsync for good once), and the image checks
 * clean afterwards.
 */
START_TEST(test_lazy_times_storm)
{
	static uint8_t zero[64 * 1024];
	struct t_storm s[4];
	atomic_bool stop = false;
	struct t_file tf[2];
	pthread_t tid[4];
	struct t_fs t;

	t_fs_make_opts(&t, T_SIZE, 0, false);
	t_fs_unmount(&t);
	t.mkfs.journal_bytes = 64 * 4096;
	ck_assert_int_eq(mqfs_mkfs(t.q, &t.mkfs, NULL), 0);
	t.mount.commit_interval_ms = 5;
	t_fs_mount(&t);
	for (unsigned i = 0; i < 4; i++) {
		s[i] = (struct t_storm){ .t = &t, .id = i, .stop = &stop };
		if (i >= 2)
			continue;
		t_file_create(&t, &tf[i], i ? "storm-b" : "storm-a", O_RDWR);
		t_mwrite(&tf[i], 0, zero, sizeof(zero));	/* allocated */
		s[i].f = tf[i].f;
		s[i].ino = tf[i].ino;
	}
	for (unsigned i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&tid[i], NULL, t_storm_run,
						&s[i]), 0);
	usleep(1500 * 1000);
	atomic_store(&stop, true);
	for (unsigned i = 0; i < 4; i++) {
		struct timespec due;

		clock_gettime(CLOCK_REALTIME, &due);
		due.tv_sec += 20;
		ck_assert_msg(pthread_timedjoin_np(tid[i], NULL, &due) == 0,
			      "storm thread %u hangs (round %u)", i,
			      s[i].rounds);
		ck_assert_msg(!s[i].err, "storm thread %u: %d", i, s[i].err);
		ck_assert_uint_gt(s[i].rounds, 10);
	}
	t_file_free(&tf[0]);
	t_file_free(&tf[1]);
	t_fs_unmount(&t);
	{
		struct mqfs_fsck_opts fo = { .mode = MQFS_FSCK_NO,
					     .force = true };

		ck_assert_int_eq(mqfs_fsck(t.q, &fo), MQFS_FSCK_OK);
	}
	t_fs_destroy(&t);
}
END_TEST

void file_add_times_tests(TCase *tc)
{
	tcase_add_test(tc, test_lazy_times);
	tcase_add_test(tc, test_atime_rule);
	tcase_add_test(tc, test_atime_lazy);
	tcase_add_test(tc, test_lazy_times_storm);
}
