/* SPDX-License-Identifier: MIT */
/*
 * soak_ctl.c - test_soak's controller thread: switches the top queue's
 * elevator, walks mq-deadline's tunables, stores what must be refused,
 * and freezes the queue now and then to check its balance mid-round.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "soak_fixture.h"
#include "t_util.h"

/* ---- controller --------------------------------------------------------- */

static bool top_has_deadline(struct soak_round *r)
{
	return strcmp(mq_queue_elevator_name(r->q), "none") != 0;
}

static int show_int(struct soak_round *r, const char *name, int dflt)
{
	char buf[64];

	if (mq_queue_attr_show(r->q, name, buf, sizeof(buf))) {
		round_error(r, "show %s failed", name);
		return dflt;
	}
	return atoi(buf);
}

/* Store, then read back the same text. */
static void ctl_store(struct soak_round *r, const char *name, int val)
{
	char shown[64];
	int ret = t_attr_roundtrip(r->q, name, val, shown, sizeof(shown));

	if (ret)
		round_error(r, "store %s=%d: %d, shows %s", name, val, ret,
			    ret == -EBADMSG ? shown : "?");
	atomic_fetch_add(&r->tunes, 1);
}

static void ctl_store_expect(struct soak_round *r, const char *name,
			     const char *val, int want)
{
	int ret = mq_queue_attr_store(r->q, name, val);

	if (ret != want)
		round_error(r, "store %s=%s: %d, want %d", name, val, ret,
			    want);
}

/*
 * Deadlines only walk: a read or write queued under a long expiry is
 * held back until its recomputed start when the expiry drops a lot
 * (dd_started_after), which would only slow the round down.
 */
static void ctl_walk(struct soak_round *r, const char *name, int lo, int hi)
{
	int cur = show_int(r, name, lo);

	cur += rnd_range(&r->ctl_rng, 0, 125) - 25;
	ctl_store(r, name, MQ_MIN(MQ_MAX(cur, lo), hi));
}

static void ctl_tune_deadline(struct soak_round *r)
{
	switch (rnd_range(&r->ctl_rng, 0, 7)) {
	case 0:
		ctl_walk(r, "read_expire", 1, 1000);
		break;
	case 1:
		ctl_walk(r, "write_expire", 1, 5000);
		break;
	case 2:
		ctl_store(r, "fifo_batch", (int)rnd_range(&r->ctl_rng, 1, 64));
		ctl_store_expect(r, "fifo_batch", "-1", -EINVAL);
		break;
	case 3:
		ctl_store(r, "writes_starved",
			  (int)rnd_range(&r->ctl_rng, 0, 5) - 1);
		break;
	case 4:
		ctl_store(r, "front_merges", (int)rnd_range(&r->ctl_rng, 0, 1));
		break;
	case 5:
		ctl_store(r, "async_depth", (int)rnd_range(&r->ctl_rng, 1,
				(unsigned)show_int(r, "nr_requests", 1)));
		ctl_store_expect(r, "async_depth", "0", -EINVAL);
		break;
	case 6:
		ctl_store(r, "prio_aging_expire",
			  (int)rnd_range(&r->ctl_rng, 1, 10000));
		break;
	default:
		ctl_store_expect(r, "no_such_tunable", "1", -ENOENT);
		break;
	}
}

static void ctl_switch(struct soak_round *r)
{
	bool none = !top_has_deadline(r);
	const char *to = none ? (rnd(&r->ctl_rng) & 1 ? "mq-deadline"
						     : "deadline") : "none";
	const char *want = none ? "mq-deadline" : "none";
	int ret = rnd(&r->ctl_rng) & 1 ? mq_queue_switch_elevator(r->q, to)
				       : mq_queue_attr_store(r->q, "scheduler",
							     to);

	if (ret || strcmp(mq_queue_elevator_name(r->q), want))
		round_error(r, "switch to %s: %d, now %s", to, ret,
			    mq_queue_elevator_name(r->q));
	else
		atomic_fetch_add(&r->switches, 1);
}

/*
 * mq-deadline saw every request it inserted complete, and merged none
 * (no_merges).  From the controller (@async) errors go to the round.
 */
void check_deadline_balance(struct soak_round *r, struct mq_queue *q,
			    unsigned j, bool async)
{
	static const char *const prio[] = { "RT", "BE", "IDLE" };
	uint64_t st[3][4];

	if (!t_dd_stats(q, st))
		return;
	for (int p = 0; p < 3; p++) {
		if (st[p][0] == st[p][3] && !st[p][1])
			continue;
		if (async) {
			round_error(r, "queue %u mq-deadline %s: inserted %"
				    PRIu64 " merged %" PRIu64 " completed %"
				    PRIu64, j, prio[p], st[p][0], st[p][1],
				    st[p][3]);
			return;
		}
		ck_abort_msg("round %u seed %#" PRIx64 ": queue %u mq-deadline "
			     "%s: inserted %" PRIu64 " merged %" PRIu64
			     " completed %" PRIu64, r->index, r->seed, j,
			     prio[p], st[p][0], st[p][1], st[p][3]);
	}
}

/* Frozen: every request of the top queue has completed and let go. */
static void ctl_check_frozen(struct soak_round *r)
{
	struct mq_queue *q = r->q;
	struct mq_queue_stats s;

	mq_queue_freeze(q);
	for (unsigned h = 0; h < q->nr_hw_queues; h++)
		if (t_driver_tags_used(q, h) || t_sched_tags_used(q, h) ||
		    t_nr_dispatch(q, h))
			round_error(r, "frozen: hctx %u holds driver %u sched %u "
				    "dispatch %u", h, t_driver_tags_used(q, h),
				    t_sched_tags_used(q, h), t_nr_dispatch(q, h));
	mq_queue_get_stats(q, -1, &s);
	if (s.in_flight)
		round_error(r, "frozen: in_flight %" PRIu64, s.in_flight);
	check_deadline_balance(r, q, 0, true);
	mq_queue_unfreeze(q);
	atomic_fetch_add(&r->freezes, 1);
}

void *ctl_main(void *p)
{
	struct soak_round *r = p;

	while (!atomic_load(&r->stop) && !round_nerr(r)) {
		unsigned v;

		sleep_us(rnd_range(&r->ctl_rng, 200, 20000));
		if (atomic_load(&r->stop))
			break;
		v = rnd_range(&r->ctl_rng, 0, 99);
		atomic_store(&r->ctl_phase, 1 + (int)v);
		if (v < 35 || (v >= 55 && !top_has_deadline(r))) {
			ctl_switch(r);
		} else if (v < 45) {
			ctl_store(r, "complete_delay_us",
				  (int)rnd_range(&r->ctl_rng, 0, 2000));
		} else if (v < 50) {
			ctl_check_frozen(r);
		} else if (v < 55) {
			/* Read-only while the queue lives: merges stay off. */
			ctl_store_expect(r, "nomerges", "0", -EACCES);
			ctl_store_expect(r, "queue_depth", "1", -EACCES);
			ctl_store_expect(r, "scheduler", "bfq", -EINVAL);
		} else {
			ctl_tune_deadline(r);
		}
		atomic_store(&r->ctl_phase, 0);
	}
	return NULL;
}
