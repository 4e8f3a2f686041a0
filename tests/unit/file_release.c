// SPDX-License-Identifier: MIT
/*
 * file_release.c - test_file's release of a file whose reads are still
 * in flight on a slow device: mqfs_release waits for them.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>

#include "file_fixture.h"
#include "t_fsio.h"
#include "mqfs/dev/fault.h"
#include "t_dev.h"

/*
 * An interrupted reader is answered before its device read ends, and its
 * close may then reach the filesystem with the read still in flight:
 * mqfs_release must wait for it (the read ends in the file's inode and,
 * with dontcache, its read-ahead windows).  The device here takes 200 ms
 * per completion, so a release that does not wait returns first.
 */
START_TEST(test_release_waits_for_reads)
{
	struct mq_fault_config fc = { .latency_ns = 200 * 1000 * 1000ull,
				      .seed = 1 };
	bool dontcache = _i;
	uint8_t buf[64 * 1024];
	struct t_file tf;
	struct mqfs_io io;
	struct t_wait w;
	struct t_fs t;
	void *room;

	t_fs_make(&t, T_SIZE);
	t_file_create(&t, &tf, "inflight", O_RDWR);
	memset(buf, 0x6b, sizeof(buf));
	ck_assert_int_eq(t_write(t.fs, tf.f, 0, buf, sizeof(buf)),
			 (ssize_t)sizeof(buf));
	t_file_close(&tf);
	t_fs_unmount(&t);
	t_fs_close_queue(&t);
	t.fault = t_dev_fault(t.ram, &fc);
	ck_assert_ptr_nonnull(t.fault);
	t.q = t_fs_queue(t.fault);
	t_fs_mount(&t);
	t_file_reopen(&tf);
	if (dontcache)
		mqfs_file_set_dontcache(tf.f);
	room = t_read_room(0, sizeof(buf));
	ck_assert_ptr_nonnull(room);
	memset(buf, 0, sizeof(buf));
	t_wait_init(&w, buf, sizeof(buf));
	mqfs_read(t.fs, tf.f, 0, sizeof(buf), room, &io, t_read_done, &w);
	t_file_close(&tf);
	pthread_mutex_lock(&w.m);
	ck_assert_msg(w.done, "release returned with the read in flight");
	pthread_mutex_unlock(&w.m);
	ck_assert_int_eq(t_wait_end(&w), (ssize_t)sizeof(buf));
	ck_assert_uint_eq(buf[0], 0x6b);
	ck_assert_uint_eq(buf[sizeof(buf) - 1], 0x6b);
	free(room);
	t_file_free(&tf);
	t_fs_destroy(&t);
}
END_TEST

void file_add_release_tests(TCase *tc)
{
	tcase_add_loop_test(tc, test_release_waits_for_reads, 0, 2);
}
