/* SPDX-License-Identifier: MIT */
/*
 * stress_ctl.c - test_stress's controller thread: switches the elevator
 * (none <-> mq-deadline) at random intervals, changes mq-deadline's
 * tunables while it is attached, and before half of the switches
 * freezes the queue to check the balance counters mid-run.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stress_fixture.h"
#include "t_util.h"

struct tunable {
	const char *name;
	int lo, hi;
	const char *bad;
};

static const struct tunable tunables[] = {
	{ "fifo_batch", 0, 64, "-1" },
	{ "writes_starved", -1, 4, "x" },
};

static int rnd_int(uint64_t *s, int lo, int hi)
{
	return lo + (int)(rnd(s) % (uint64_t)(hi - lo + 1));
}

/* Store @val, read it back; errors go to the run. */
static void ctl_store(struct run *r, const char *name, int val)
{
	char shown[32];
	int ret = t_attr_roundtrip(r->q, name, val, shown, sizeof(shown));

	if (ret)
		run_error(r, "seed %#" PRIx64 ": store %s=%d: %d", r->seed,
			  name, val, ret);
}

static void ctl_store_bad(struct run *r, const char *name, const char *bad)
{
	int ret = mq_queue_attr_store(r->q, name, bad);

	if (ret != -EINVAL)
		run_error(r, "seed %#" PRIx64 ": store %s=%s: %d, want -EINVAL",
			  r->seed, name, bad, ret);
}

static int ctl_show_int(struct run *r, const char *name)
{
	char buf[32];

	if (mq_queue_attr_show(r->q, name, buf, sizeof(buf))) {
		run_error(r, "seed %#" PRIx64 ": show %s failed", r->seed, name);
		return 500;
	}
	return atoi(buf);
}

/*
 * read_expire: a lower value holds reads already queued back until their
 * recomputed start time (the kernel's started_after()), so a big drop
 * would stall a drain for up to the old value.  Walk in small steps down,
 * larger ones up, and sometimes pulse a tiny value (1-5 ms) for a moment:
 * reads inserted meanwhile carry expired deadlines.
 */
static void ctl_tune_read_expire(struct run *r)
{
	int cur = ctl_show_int(r, "read_expire");

	if (rnd(&r->ctl_rng) % 4 == 0) {
		ctl_store(r, "read_expire", rnd_int(&r->ctl_rng, 1, 5));
		ctl_store(r, "read_expire", cur);
		return;
	}
	cur += rnd_int(&r->ctl_rng, -25, 100);
	ctl_store(r, "read_expire", MQ_MIN(MQ_MAX(cur, 1), 1000));
	ctl_store_bad(r, "read_expire", "-5");
}

static void ctl_tune(struct run *r)
{
	unsigned i = (unsigned)(rnd(&r->ctl_rng) % (MQ_ARRAY_SIZE(tunables) + 1));

	if (i == MQ_ARRAY_SIZE(tunables)) {
		ctl_tune_read_expire(r);
	} else {
		const struct tunable *t = &tunables[i];

		ctl_store(r, t->name, rnd_int(&r->ctl_rng, t->lo, t->hi));
		ctl_store_bad(r, t->name, t->bad);
	}
	atomic_fetch_add(&r->tunes, 1);
}

/*
 * Freeze (every request completed, new ones held off) and look at the
 * balance counters mid-run: tags, dispatch lists, in-flight requests,
 * and mq-deadline's inserted == completed before the instance goes away.
 */
static void ctl_check_frozen(struct run *r)
{
	struct mq_queue *q = r->q;
	struct mq_queue_stats s;
	uint64_t st[3][4];

	mq_queue_freeze(q);
	if (t_dd_stats(q, st)) {
		for (int p = 0; p < 3; p++)
			if (st[p][0] != st[p][3])
				run_error(r, "seed %#" PRIx64 ": frozen: prio %d "
					  "inserted %" PRIu64 " completed %" PRIu64,
					  r->seed, p, st[p][0], st[p][3]);
	}
	for (unsigned i = 0; i < q->nr_hw_queues; i++) {
		struct mq_hw_queue *h = q->hctxs[i];

		if (mq_sbitmap_weight(&h->tags->bitmap.sb) ||
		    (h->sched_tags && mq_sbitmap_weight(&h->sched_tags->bitmap.sb)) ||
		    atomic_load(&h->nr_dispatch))
			run_error(r, "seed %#" PRIx64 ": frozen: hctx %u holds "
				  "requests", r->seed, i);
	}
	mq_queue_get_stats(q, -1, &s);
	if (s.in_flight)
		run_error(r, "seed %#" PRIx64 ": frozen: in_flight %" PRIu64,
			  r->seed, s.in_flight);
	mq_queue_unfreeze(q);
}

static void ctl_switch(struct run *r)
{
	bool none = !strcmp(mq_queue_elevator_name(r->q), "none");
	const char *to = none ? (rnd(&r->ctl_rng) & 1 ? "mq-deadline"
						     : "deadline") : "none";
	const char *want = none ? "mq-deadline" : "none";
	int ret;

	if (rnd(&r->ctl_rng) & 1)
		ctl_check_frozen(r);
	ret = mq_queue_switch_elevator(r->q, to);
	if (ret || strcmp(mq_queue_elevator_name(r->q), want))
		run_error(r, "seed %#" PRIx64 ": switch to %s: %d, now %s",
			  r->seed, to, ret, mq_queue_elevator_name(r->q));
	atomic_fetch_add(&r->switches, 1);
}

void *controller_main(void *p)
{
	struct run *r = p;

	while (!atomic_load(&r->stop)) {
		sleep_us(rnd_range(&r->ctl_rng, 100, 2000));
		if (atomic_load(&r->stop))
			break;
		if (!strcmp(mq_queue_elevator_name(r->q), "none") ||
		    rnd(&r->ctl_rng) % 3 == 0) {
			atomic_store(&r->ctl_phase, 1);
			ctl_switch(r);
		} else {
			atomic_store(&r->ctl_phase, 2);
			ctl_tune(r);
		}
		atomic_store(&r->ctl_phase, 0);
	}
	return NULL;
}
