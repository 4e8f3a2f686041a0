/* SPDX-License-Identifier: MIT */
/*
 * test_kthread.c - Check unit tests for the service-thread helper
 * (mqfs/kthread.h, sched/lib/kthread.c).
 *
 * Tested: a kick wakes a sleeping thread, once per kick; a kick sent
 * before the thread sleeps is not lost; a wait with a deadline and no
 * kick returns at the deadline, not before, and not as a stop; the kick
 * is consumed by the wait that returns; a stop wins over a pending kick;
 * mq_kthread_stop() returns only once the thread has exited; the thread
 * carries its name, cut to 15 characters; and a refused pthread_create
 * returns -errno and leaves @kt for mq_kthread_stop().  Every wait that
 * must end is bounded (t_wait_until), so a lost wake-up fails, never hangs.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "t_util.h"
#include "t_main.h"
#include "mqfs/kthread.h"

#define KT_DEADLINE_NS	(20 * T_MS)

struct kt_probe {
	struct mq_kthread kt;
	atomic_uint wakes;		/* waits that returned true */
	atomic_bool gate;		/* the thread waits for it first */
	atomic_bool exited;
	atomic_bool last_ret;		/* of the thread's last wait */
	uint64_t slept_ns;		/* kt_deadline_main: its one wait */
	char name[16];			/* kt_name_main */
};

/* Sleep without deadline until stopped, counting the kicks. */
static void *kt_count_main(void *arg)
{
	struct kt_probe *p = arg;

	while (!atomic_load(&p->gate))
		sched_yield();
	mq_kthread_lock(&p->kt);
	while (mq_kthread_wait_locked(&p->kt, 0))
		atomic_fetch_add(&p->wakes, 1);
	mq_kthread_unlock(&p->kt);
	/* Late on purpose: stop must still wait for it (the join). */
	usleep(50 * 1000);
	atomic_store(&p->exited, true);
	return NULL;
}

static void kt_probe_start(struct kt_probe *p, void *(*fn)(void *),
			   bool gate_open)
{
	memset(p, 0, sizeof(*p));
	atomic_store(&p->gate, gate_open);
	mq_kthread_init(&p->kt);
	t_check(mq_kthread_start(&p->kt, "kt-test", fn, p) == 0,
		"mq_kthread_start");
}

START_TEST(test_kick_wakes)
{
	struct kt_probe p;

	T_BEGIN();
	kt_probe_start(&p, kt_count_main, true);
	for (unsigned i = 1; i <= 3; i++) {
		mq_kthread_kick(&p.kt);
		t_check(t_wait_until(atomic_load(&p.wakes) == i),
			"kick %u: %u wake-ups", i, atomic_load(&p.wakes));
	}
	mq_kthread_stop(&p.kt);
	t_check_u64(atomic_load(&p.wakes), 3, "wake-ups after stop");
}
END_TEST

START_TEST(test_kick_before_wait)
{
	struct kt_probe p;

	T_BEGIN();
	kt_probe_start(&p, kt_count_main, false);
	mq_kthread_kick(&p.kt);		/* the thread is not asleep yet */
	atomic_store(&p.gate, true);
	t_check(t_wait_until(atomic_load(&p.wakes) == 1),
		"an early kick was lost");
	mq_kthread_stop(&p.kt);
}
END_TEST

START_TEST(test_stop_joins)
{
	struct kt_probe p;

	T_BEGIN();
	kt_probe_start(&p, kt_count_main, true);
	mq_kthread_stop(&p.kt);
	t_check(atomic_load(&p.exited), "stop returned before the join");
	t_check_u64(atomic_load(&p.wakes), 0, "wake-ups without a kick");
}
END_TEST

/* One wait with a deadline, timed. */
static void *kt_deadline_main(void *arg)
{
	struct kt_probe *p = arg;
	uint64_t t0 = mq_clock_real_ns();
	bool ret = mq_kthread_wait(&p->kt, t0 + KT_DEADLINE_NS);

	p->slept_ns = mq_clock_real_ns() - t0;
	atomic_store(&p->last_ret, ret);
	atomic_store(&p->exited, true);
	return NULL;
}

START_TEST(test_deadline_wakes)
{
	struct kt_probe p;

	T_BEGIN();
	kt_probe_start(&p, kt_deadline_main, true);
	t_check(t_wait_until(atomic_load(&p.exited)), "the deadline passed "
		"unnoticed");
	t_check(atomic_load(&p.last_ret), "a timeout returned as a stop");
	t_check(p.slept_ns >= KT_DEADLINE_NS, "woke after %" PRIu64 " ns",
		p.slept_ns);
	mq_kthread_stop(&p.kt);
}
END_TEST

/* No thread: the caller's own waits see the flags. */
START_TEST(test_kick_consumed)
{
	struct mq_kthread kt;
	uint64_t t0;

	T_BEGIN();
	mq_kthread_init(&kt);
	mq_kthread_kick(&kt);
	mq_kthread_lock(&kt);
	t_check(mq_kthread_wait_locked(&kt, 0), "a kicked wait stopped");
	t0 = mq_clock_real_ns();
	t_check(mq_kthread_wait_locked(&kt, t0 + T_MS), "a timeout stopped");
	t_check(mq_clock_real_ns() - t0 >= T_MS, "the kick was not consumed");
	mq_kthread_unlock(&kt);
	mq_kthread_stop(&kt);		/* never started: only frees */
}
END_TEST

/* Wait until told to stop, then sleep once with a kick pending. */
static void *kt_stop_main(void *arg)
{
	struct kt_probe *p = arg;
	bool stop;

	do {
		sched_yield();
		mq_kthread_lock(&p->kt);
		stop = mq_kthread_should_stop_locked(&p->kt);
		mq_kthread_unlock(&p->kt);
	} while (!stop);
	atomic_store(&p->last_ret, mq_kthread_wait(&p->kt, 0));
	return NULL;
}

START_TEST(test_stop_beats_kick)
{
	struct kt_probe p;

	T_BEGIN();
	kt_probe_start(&p, kt_stop_main, true);
	atomic_store(&p.last_ret, true);
	mq_kthread_kick(&p.kt);
	mq_kthread_stop(&p.kt);
	t_check(!atomic_load(&p.last_ret), "a kick outranked the stop");
}
END_TEST

/* Read the name after a kick or stop: both come after it was set. */
static void *kt_name_main(void *arg)
{
	struct kt_probe *p = arg;

	mq_kthread_wait(&p->kt, 0);
	pthread_getname_np(pthread_self(), p->name, sizeof(p->name));
	return NULL;
}

START_TEST(test_name)
{
	struct kt_probe p;

	T_BEGIN();
	memset(&p, 0, sizeof(p));
	mq_kthread_init(&p.kt);
	t_check(mq_kthread_start(&p.kt, "kt-a-name-too-long-to-keep",
				 kt_name_main, &p) == 0, "mq_kthread_start");
	mq_kthread_kick(&p.kt);
	mq_kthread_stop(&p.kt);
	t_check(!strcmp(p.name, "kt-a-name-too-l"), "thread name \"%s\"",
		p.name);
}
END_TEST

static void *kt_noop_main(void *arg)
{
	return arg;
}

/* Default stacks larger than the address space: pthread_create fails. */
static bool kt_refuse_threads(pthread_attr_t *old)
{
	pthread_attr_t huge;
	pthread_t t;
	bool refused = false;

	pthread_getattr_default_np(old);
	pthread_attr_init(&huge);
	pthread_attr_setstacksize(&huge, (size_t)1 << 62);
	if (!pthread_setattr_default_np(&huge)) {
		refused = pthread_create(&t, NULL, kt_noop_main, NULL) != 0;
		if (!refused)
			pthread_join(t, NULL);
	}
	pthread_attr_destroy(&huge);
	return refused;
}

START_TEST(test_start_fails)
{
	struct kt_probe p;
	pthread_attr_t old;
	int ret;

	T_BEGIN();
	memset(&p, 0, sizeof(p));
	mq_kthread_init(&p.kt);
	if (!kt_refuse_threads(&old)) {
		fprintf(stderr, "test_kthread: cannot make pthread_create "
			"fail here: start failure not tested\n");
		pthread_setattr_default_np(&old);
		pthread_attr_destroy(&old);
		mq_kthread_stop(&p.kt);
		return;
	}
	ret = mq_kthread_start(&p.kt, "kt-fail", kt_noop_main, NULL);
	pthread_setattr_default_np(&old);
	pthread_attr_destroy(&old);
	t_check(ret < 0, "mq_kthread_start returned %d", ret);
	mq_kthread_kick(&p.kt);		/* still usable, no thread */
	mq_kthread_stop(&p.kt);
}
END_TEST

static Suite *kthread_suite(void)
{
	Suite *s = suite_create("kthread");
	TCase *tc = t_tcase(s, "kick", 60);

	tcase_add_test(tc, test_kick_wakes);
	tcase_add_test(tc, test_kick_before_wait);
	tcase_add_test(tc, test_kick_consumed);
	tc = t_tcase(s, "deadline", 60);
	tcase_add_test(tc, test_deadline_wakes);
	tc = t_tcase(s, "stop", 60);
	tcase_add_test(tc, test_stop_joins);
	tcase_add_test(tc, test_stop_beats_kick);
	tc = t_tcase(s, "start", 60);
	tcase_add_test(tc, test_name);
	tcase_add_test(tc, test_start_fails);
	return s;
}

T_MAIN(kthread_suite)
