/* SPDX-License-Identifier: MIT */
/*
 * sbitmap_stress.c - test_sbitmap's threaded stress: four threads get and
 * clear concurrently (spinning, on a full map, sleeping, in batches) and
 * no tag is ever handed to two owners.
 */
#include "sbitmap_fixture.h"

#define STRESS_THREADS	4
#define STRESS_ITERS	200000
#define STRESS_HOLD	3
#define STRESS_MAXDEPTH	64

struct stress {
	struct mq_sbitmap_queue q;
	_Atomic int owner[STRESS_MAXDEPTH];
	_Atomic unsigned long errors;
	bool blocking;
};

struct stress_arg {
	struct stress *s;
	int id;
};

static void stress_take(struct stress *s, int tag, int id)
{
	int expect = 0;

	if (tag < 0 || tag >= (int)s->q.sb.depth ||
	    !atomic_compare_exchange_strong(&s->owner[tag], &expect, id))
		atomic_fetch_add(&s->errors, 1);
}

static void stress_give(struct stress *s, int tag, int id)
{
	int expect = id;

	if (!atomic_compare_exchange_strong(&s->owner[tag], &expect, 0))
		atomic_fetch_add(&s->errors, 1);
}

static int stress_get(struct stress *s, unsigned int *hint,
		      unsigned int *wait_index)
{
	int tag;

	if (s->blocking)
		return blocking_get(&s->q, hint, wait_index);
	while ((tag = mq_sbq_get(&s->q, hint)) < 0)
		sched_yield();
	return tag;
}

/*
 * Each thread keeps up to STRESS_HOLD tags and frees the oldest before
 * taking another, now and then all at once through clear_batch.
 */
static void *stress_thread(void *p)
{
	struct stress_arg *a = p;
	struct stress *s = a->s;
	unsigned int hint = mq_sbitmap_random_hint(&s->q.sb, (unsigned)a->id);
	unsigned int wait_index = (unsigned int)a->id, head = 0, n = 0, i;
	int held[STRESS_HOLD];

	for (i = 0; i < STRESS_ITERS; i++) {
		if (n == STRESS_HOLD && (i & 63) == 0) {
			for (n = 0; n < STRESS_HOLD; n++)
				stress_give(s, held[n], a->id);
			mq_sbq_clear_batch(&s->q, held, STRESS_HOLD);
			n = head = 0;
		} else if (n == STRESS_HOLD) {
			stress_give(s, held[head], a->id);
			mq_sbq_clear(&s->q, (unsigned int)held[head], &hint);
			n--;
			head = (head + 1) % STRESS_HOLD;
		}
		held[(head + n) % STRESS_HOLD] = stress_get(s, &hint,
							    &wait_index);
		stress_take(s, held[(head + n) % STRESS_HOLD], a->id);
		n++;
	}
	for (; n; n--, head = (head + 1) % STRESS_HOLD) {
		stress_give(s, held[head], a->id);
		mq_sbq_clear(&s->q, (unsigned int)held[head], NULL);
	}
	return NULL;
}

static void run_stress(unsigned int depth, bool blocking)
{
	static struct stress s;
	struct stress_arg args[STRESS_THREADS];
	pthread_t t[STRESS_THREADS];
	unsigned int i;

	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(mq_sbq_init(&s.q, depth, -1, false), 0);
	s.blocking = blocking;
	for (i = 0; i < STRESS_THREADS; i++) {
		args[i] = (struct stress_arg){ .s = &s, .id = (int)i + 1 };
		ck_assert_int_eq(pthread_create(&t[i], NULL, stress_thread,
						&args[i]), 0);
	}
	for (i = 0; i < STRESS_THREADS; i++)
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
	ck_assert_uint_eq(ldul(&s.errors), 0);
	ck_assert_uint_eq(mq_sbitmap_weight(&s.q.sb), 0);
	for (i = 0; i < depth; i++)
		ck_assert_int_eq(ldi(&s.owner[i]), 0);
	ck_assert_int_eq(ldi(&s.q.ws_active), 0);
	if (blocking)
		fprintf(stderr, "sbitmap stress depth %u: %llu sleeps, "
			"%llu wake-ups, %llu backstop timeouts\n", depth,
			(unsigned long long)ld64(&s.q.waits),
			(unsigned long long)ld64(&s.q.wakeups),
			(unsigned long long)ld64(&s.q.backstop_timeouts));
	mq_sbq_exit(&s.q);
}

/* Plenty of tags: contention on the words, no waiting. */
START_TEST(test_stress_spin)
{
	run_stress(STRESS_MAXDEPTH, false);
}
END_TEST

/* 4 x 3 held > 10 tags: the map fills, deferred frees race with gets. */
START_TEST(test_stress_full_map)
{
	run_stress(10, false);
}
END_TEST

/* Same, but sleepers: exercises prepare/retry/sleep against the frees. */
START_TEST(test_stress_sleepers)
{
	run_stress(10, true);
}
END_TEST

static void *batch_stress_thread(void *p)
{
	struct stress_arg *a = p;
	struct stress *s = a->s;
	unsigned int hint = mq_sbitmap_random_hint(&s->q.sb, (unsigned)a->id);
	unsigned int i, off, b;

	for (i = 0; i < STRESS_ITERS / 4; i++) {
		unsigned long mask = mq_sbq_get_batch(&s->q, &hint, 4, &off);

		if (!mask) {
			sched_yield();
			continue;
		}
		for (b = 0; mask >> b; b++)
			stress_take(s, (int)(off + b), a->id);
		for (b = 0; mask >> b; b++)
			stress_give(s, (int)(off + b), a->id);
		mq_sbitmap_clear_mask(&s->q.sb, off >> s->q.sb.shift,
				      mask << (off & ((1U << s->q.sb.shift) - 1)));
	}
	return NULL;
}

START_TEST(test_stress_batch)
{
	static struct stress s;
	struct stress_arg args[STRESS_THREADS];
	pthread_t t[STRESS_THREADS];
	unsigned int i;

	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(mq_sbq_init(&s.q, 24, -1, false), 0);
	for (i = 0; i < STRESS_THREADS; i++) {
		args[i] = (struct stress_arg){ .s = &s, .id = (int)i + 1 };
		ck_assert_int_eq(pthread_create(&t[i], NULL,
						batch_stress_thread,
						&args[i]), 0);
	}
	for (i = 0; i < STRESS_THREADS; i++)
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
	ck_assert_uint_eq(ldul(&s.errors), 0);
	ck_assert_uint_eq(mq_sbitmap_weight(&s.q.sb), 0);
	mq_sbq_exit(&s.q);
}
END_TEST

void sbitmap_add_stress_tcases(Suite *s)
{
	TCase *tc;

	tc = tcase_create("stress");
	/* Thread sanitizer runs these ~20x slower. */
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_stress_spin);
	tcase_add_test(tc, test_stress_full_map);
	tcase_add_test(tc, test_stress_sleepers);
	tcase_add_test(tc, test_stress_batch);
	suite_add_tcase(s, tc);
}
