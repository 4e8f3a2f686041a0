// SPDX-License-Identifier: MIT
/*
 * file_random.c - test_file's random operations against the model:
 * writes, truncates, hole punches, zero ranges, fallocates and reads
 * across fsck-checked remounts (T_FILE_SEED reruns), then several
 * threads, each with its own file, at once.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>

#include "file_fixture.h"
#include "t_fsio.h"

/* ---- everything at random ---------------------------------------------- */

static void t_random_op(struct t_file *tf, uint8_t *buf)
{
	unsigned r = (unsigned)rand() % 20;
	uint64_t off = (uint64_t)rand() % (3 * T_FS_MIB);
	uint64_t len = 1 + (uint64_t)rand() % (rand() % 3 ? 20000 : 400000);

	len = MQ_MIN(len, T_MODEL_MAX - off);
	if (r < 10) {
		t_rand_bytes(buf, len);
		t_mwrite(tf, off, buf, len);
	} else if (r < 12) {
		t_mtruncate(tf, off);
	} else if (r < 14) {
		t_ok(tf, t_falloc(tf, FALLOC_FL_PUNCH_HOLE |
				  FALLOC_FL_KEEP_SIZE, off, len) == 0, "punch");
		if (off < tf->size)
			memset(tf->model + off, 0,
			       MQ_MIN(len, tf->size - off));
	} else if (r < 16) {
		int keep = rand() % 2 ? FALLOC_FL_KEEP_SIZE : 0;

		t_ok(tf, t_falloc(tf, FALLOC_FL_ZERO_RANGE | keep, off, len)
		     == 0, "zero range");
		memset(tf->model + off, 0, len);
		if (!keep)
			tf->size = MQ_MAX(tf->size, off + len);
	} else if (r < 18) {
		int keep = rand() % 2 ? FALLOC_FL_KEEP_SIZE : 0;

		t_ok(tf, t_falloc(tf, keep, off, len) == 0, "fallocate");
		if (!keep)
			tf->size = MQ_MAX(tf->size, off + len);
	} else {
		uint8_t *got = malloc(len);
		ssize_t n = t_read(*tf->fsp, tf->f, off, got, len);

		t_ok(tf, n == (ssize_t)(off < tf->size ?
					MQ_MIN(len, tf->size - off) : 0),
		     "read %" PRIu64 "+%" PRIu64 " got %zd", off, len, n);
		t_ok(tf, n <= 0 || !memcmp(got, tf->model + off, (size_t)n),
		     "read %" PRIu64 "+%" PRIu64 " differs", off, len);
		free(got);
	}
}

START_TEST(test_random_ops)
{
	uint8_t *buf = malloc(T_MODEL_MAX);
	struct t_file tf;
	struct t_fs t;
	uint64_t free0;

	t_fs_make(&t, T_SIZE);
	t_file_create(&t, &tf, "random", O_RDWR);
	free0 = t_free_blocks(&t);
	tf.seed = t_seed(4242 + (unsigned)_i);
	srand(tf.seed);
	for (tf.step = 0; tf.step < 300; tf.step++) {
		t_random_op(&tf, buf);
		if (tf.step % 15 == 0)
			t_check(&tf);
		if (tf.step % 100 == 99) {
			struct t_file *all[] = { &tf };

			t_fsck(&t, all, 1);
			t_check(&tf);
		}
	}
	t_check(&tf);
	t_mtruncate(&tf, 0);
	ck_assert_uint_eq(t_blocks(&tf), 0);
	ck_assert_uint_eq(t_free_blocks(&t), free0);
	free(buf);
	t_file_free(&tf);
	t_fs_destroy(&t);
}
END_TEST

/* ---- threads ----------------------------------------------------------- */

struct t_worker {
	pthread_t tid;
	struct t_file tf;
	uint8_t *buf;
};

static void *t_worker_run(void *arg)
{
	struct t_worker *w = arg;

	srand(w->tf.seed);
	for (w->tf.step = 0; w->tf.step < 120; w->tf.step++) {
		uint64_t off = (uint64_t)(rand() % 128) * 4096;
		size_t n = rand() % 2 ? 4096 * (1 + (size_t)(rand() % 8)) :
			   1 + (size_t)(rand() % 10000);
		ssize_t r;

		if (rand() % 3) {
			t_rand_bytes(w->buf, n);
			r = t_write(*w->tf.fsp, w->tf.f, off, w->buf, n);
			if (r != (ssize_t)n)
				return "write failed";
			memcpy(w->tf.model + off, w->buf, n);
			w->tf.size = MQ_MAX(w->tf.size, off + n);
		} else {
			r = t_read(*w->tf.fsp, w->tf.f, off, w->buf, n);
			if (r != (ssize_t)(off < w->tf.size ?
					   MQ_MIN(n, w->tf.size - off) : 0) ||
			    (r > 0 && memcmp(w->buf, w->tf.model + off,
					     (size_t)r)))
				return "read differs";
		}
	}
	return NULL;
}

START_TEST(test_threads)
{
	struct t_worker w[4];
	struct t_fs t;

	t_fs_make(&t, T_SIZE);
	for (unsigned i = 0; i < 4; i++) {
		char name[8] = "t0";

		name[1] = (char)('0' + i);
		t_file_create(&t, &w[i].tf, name, O_RDWR);
		w[i].tf.seed = 700 + i;
		w[i].buf = malloc(64 * 1024);
		ck_assert_int_eq(pthread_create(&w[i].tid, NULL, t_worker_run,
						&w[i]), 0);
	}
	for (unsigned i = 0; i < 4; i++) {
		void *res;

		ck_assert_int_eq(pthread_join(w[i].tid, &res), 0);
		ck_assert_msg(res == NULL, "worker %u: %s", i,
			      res ? (char *)res : "");
	}
	{
		struct t_file *all[] = { &w[0].tf, &w[1].tf, &w[2].tf,
					 &w[3].tf };

		t_fsck(&t, all, 4);
	}
	for (unsigned i = 0; i < 4; i++) {
		t_check(&w[i].tf);
		free(w[i].buf);
		t_file_free(&w[i].tf);
	}
	t_fs_destroy(&t);
}
END_TEST

void file_add_random_tests(TCase *tc)
{
	tcase_add_loop_test(tc, test_random_ops, 0, 2);
	tcase_add_test(tc, test_threads);
}
