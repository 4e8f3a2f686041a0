/* SPDX-License-Identifier: MIT */
/*
 * soak_check.c - one round of test_soak: run its threads under a
 * watchdog that dumps the stack instead of hanging, then check that
 * every queue of the stack drained and balanced, that each fault device
 * injected exactly the bios attributed to it, and that the lower
 * device holds the model sector by sector; one line per round.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "soak_fixture.h"
#include "t_util.h"
#include "mqfs/dev/ram.h"

/* ---- watchdog ----------------------------------------------------------- */

static void dump_queue(const char *what, struct mq_queue *q)
{
	struct mq_queue_stats s;

	if (!q) {
		fprintf(stderr, "  %s: (never used)\n", what);
		return;
	}
	mq_queue_get_stats(q, -1, &s);
	fprintf(stderr, "  %s %s: frozen %d quiesced %d in_flight %" PRIu64
		" disp %" PRIu64 "/%" PRIu64 " ios %" PRIu64 "/%" PRIu64
		" requeues %" PRIu64 " task_pending %ld\n", what,
		mq_queue_elevator_name(q), atomic_load(&q->frozen),
		atomic_load(&q->quiesced), s.in_flight, s.dispatched[0],
		s.dispatched[1], s.ios[0], s.ios[1], s.requeues,
		atomic_load(&q->task_pending));
	for (unsigned h = 0; h < q->nr_hw_queues; h++) {
		struct mq_hw_queue *hc = q->hctxs[h];

		fprintf(stderr, "    hctx %u: run_state %d restart %d "
			"nr_dispatch %u tags %u sched_tags %u busy %u\n", h,
			atomic_load(&hc->run_state),
			atomic_load(&hc->sched_restart),
			atomic_load(&hc->nr_dispatch), t_driver_tags_used(q, h),
			t_sched_tags_used(q, h), atomic_load(&hc->dispatch_busy));
	}
	for (unsigned i = 0; i < MQ_NR_CTX; i++)
		if (atomic_load(&q->ctxs[i].usage))
			fprintf(stderr, "    ctx %u: usage %ld\n", i,
				atomic_load(&q->ctxs[i].usage));
}

/* Racy snapshot for a human: the round is stuck anyway. */
static void dump_round(struct soak_round *r)
{
	char what[32];

	fprintf(stderr, "STALL round %u seed %#" PRIx64 " lower %s ring %u "
		"ltags %u layers %u: completed %lu ctl_phase %d switches %lu\n",
		r->index, r->seed, lower_name(r), r->ring, r->lower_tags,
		r->nr_layers, atomic_load(&r->completed),
		atomic_load(&r->ctl_phase), atomic_load(&r->switches));
	for (unsigned j = 0; j <= r->nr_layers; j++) {
		snprintf(what, sizeof(what), "queue %u", j);
		dump_queue(what, round_queue(r, j));
	}
	for (unsigned i = 0; i < r->nr_layers; i++) {
		struct mq_fault_stats fs;

		mq_fault_get_stats(r->layers[i].dev, &fs);
		fprintf(stderr, "  fault %u: injected %" PRIu64 " forwarded %"
			PRIu64 "\n", i, fs.injected, fs.forwarded);
	}
	for (unsigned i = 0; i < NR_THREADS; i++)
		fprintf(stderr, "  thread %u: issued %" PRIu64 " reaped %"
			PRIu64 "\n", i, r->t[i].issued, r->t[i].reaped);
}

static void round_run(struct soak_round *r)
{
	uint64_t last = 0, since = mq_clock_real_ns();

	r->ring0[0] = atomic_load(&g_sq_full);
	r->ring0[1] = atomic_load(&g_ring_busy);
	r->ring0[2] = atomic_load(&g_cq_overflow);
	r->end_ns = mq_clock_real_ns() + (uint64_t)r->ms * 1000000ull;
	for (unsigned i = 0; i < NR_THREADS; i++)
		ck_assert_int_eq(pthread_create(&r->t[i].thr, NULL,
						thread_main, &r->t[i]), 0);
	ck_assert_int_eq(pthread_create(&r->ctl, NULL, ctl_main, r), 0);
	while (atomic_load(&r->threads_done) < NR_THREADS) {
		uint64_t now = mq_clock_real_ns(), c;

		sleep_us(20000);
		c = atomic_load(&r->completed);
		if (c != last) {
			last = c;
			since = now;
		} else if (now - since > STALL_NS) {
			dump_round(r);
			ck_abort_msg("round %u seed %#" PRIx64 ": no completion "
				     "for %llu s (deadlock or lost wakeup), see "
				     "stderr", r->index, r->seed,
				     STALL_NS / SEC_NS);
		}
	}
	for (unsigned i = 0; i < NR_THREADS; i++)
		pthread_join(r->t[i].thr, NULL);
	atomic_store(&r->stop, true);
	pthread_join(r->ctl, NULL);
}

/* ---- end of round: balance ---------------------------------------------- */

static void check_threads(struct soak_round *r)
{
	ck_assert_msg(round_nerr(r) == 0, "%lu errors, first: %s",
		      round_nerr(r), r->err);
	for (unsigned i = 0; i < NR_THREADS; i++) {
		struct soak_thread *t = &r->t[i];

		ck_assert_msg(t->issued == t->reaped && t->nr_free == r->window,
			      "round %u seed %#" PRIx64 ": thread %u issued %"
			      PRIu64 " reaped %" PRIu64 " free %u of %u",
			      r->index, r->seed, i, t->issued, t->reaped,
			      t->nr_free, r->window);
		for (unsigned k = 0; k < MAX_WINDOW; k++)
			ck_assert_msg(atomic_load(&t->slots[k].state) == SIO_FREE,
				      "round %u seed %#" PRIx64 ": thread %u "
				      "slot %u state %d", r->index, r->seed, i,
				      k, atomic_load(&t->slots[k].state));
	}
}

/* Bios of direction @d stopped at layer >= @from and < @to. */
static uint64_t count_stops(struct soak_round *r, unsigned from, unsigned to,
			    int d)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < NR_THREADS; i++)
		for (unsigned s = from; s < to; s++)
			n += r->t[i].stop_dir[s][d];
	return n;
}

#define round_assert(r, cond, fmt, ...)					\
	ck_assert_msg((cond), "round %u seed %#" PRIx64 ": " fmt,	\
		      (r)->index, (r)->seed, ##__VA_ARGS__)

/*
 * Queue @j (on layer j's device) saw every bio that no layer above j
 * failed; it failed those stopped at j or below, and holds nothing now.
 */
static void check_queue(struct soak_round *r, unsigned j)
{
	struct mq_queue *q = round_queue(r, j);
	struct spy *sp = j ? round_spy(r, j) : NULL;
	uint64_t want[MQ_DIR_COUNT], errs = 0;
	struct mq_queue_stats s;

	for (int d = 0; d < MQ_DIR_COUNT; d++) {
		want[d] = count_stops(r, j, r->nr_layers + 1, d);
		errs += count_stops(r, j, r->nr_layers, d);
	}
	if (!q) {
		round_assert(r, !want[0] && !want[1], "queue %u never ran, "
			     "want %" PRIu64 " reads %" PRIu64 " writes", j,
			     want[0], want[1]);
		return;
	}
	mq_queue_drain(q);
	round_assert(r, t_wait_until(t_queue_idle(q)),
		     "queue %u runs never settled", j);
	ck_assert_int_eq(mq_queue_get_stats(q, -1, &s), 0);
	round_assert(r, s.in_flight == 0, "queue %u in_flight %" PRIu64, j,
		     s.in_flight);
	for (int d = 0; d < MQ_DIR_COUNT; d++) {
		round_assert(r, s.bios[d] == want[d] && s.ios[d] == want[d] &&
			     s.dispatched[d] == want[d],
			     "queue %u dir %d: bios %" PRIu64 " ios %" PRIu64
			     " dispatched %" PRIu64 ", want %" PRIu64, j, d,
			     s.bios[d], s.ios[d], s.dispatched[d], want[d]);
		round_assert(r, s.merges[d] == 0, "queue %u dir %d merges %"
			     PRIu64 " with no_merges", j, d, s.merges[d]);
	}
	round_assert(r, s.errors == errs, "queue %u errors %" PRIu64
		     ", want %" PRIu64, j, s.errors, errs);
	for (unsigned h = 0; h < q->nr_hw_queues; h++) {
		struct mq_hw_queue *hc = q->hctxs[h];

		round_assert(r, !t_driver_tags_used(q, h) &&
			     !t_sched_tags_used(q, h) && !t_nr_dispatch(q, h) &&
			     mq_list_empty(&hc->dispatch),
			     "queue %u hctx %u holds driver %u sched %u "
			     "dispatch %u", j, h, t_driver_tags_used(q, h),
			     t_sched_tags_used(q, h), t_nr_dispatch(q, h));
		round_assert(r, (hc->sched_tags != NULL) == (hc->elevator != NULL) &&
			     (hc->elevator != NULL) == (q->elv_type != NULL),
			     "queue %u hctx %u: sched_tags %d instance %d type %d",
			     j, h, hc->sched_tags != NULL, hc->elevator != NULL,
			     q->elv_type != NULL);
	}
	for (unsigned i = 0; i < MQ_NR_CTX; i++)
		round_assert(r, atomic_load(&q->ctxs[i].usage) == 0,
			     "queue %u ctx %u usage %ld", j, i,
			     atomic_load(&q->ctxs[i].usage));
	round_assert(r, atomic_load(&q->task_pending) == 0,
		     "queue %u task_pending %ld", j,
		     atomic_load(&q->task_pending));
	check_deadline_balance(r, q, j, false);
	if (sp) {
		round_assert(r, !atomic_load(&sp->foreign),
			     "layer %u device served two queues", j);
		round_assert(r, atomic_load(&sp->accepted) == want[0] + want[1] &&
			     !atomic_load(&sp->failed),
			     "queue %u: driver accepted %lu failed %lu, want %"
			     PRIu64, j, atomic_load(&sp->accepted),
			     atomic_load(&sp->failed), want[0] + want[1]);
	}
}

/* Layer i injected exactly the bios attributed to it, forwarded the rest. */
static uint64_t check_faults(struct soak_round *r)
{
	uint64_t total = 0;

	for (unsigned i = 0; i < r->nr_layers; i++) {
		struct mq_fault_stats fs;
		uint64_t inj = count_stops(r, i, i + 1, 0) +
			       count_stops(r, i, i + 1, 1);
		uint64_t fwd = count_stops(r, i + 1, r->nr_layers + 1, 0) +
			       count_stops(r, i + 1, r->nr_layers + 1, 1);

		mq_fault_get_stats(r->layers[i].dev, &fs);
		round_assert(r, fs.injected == inj, "fault layer %u injected %"
			     PRIu64 ", want %" PRIu64, i, fs.injected, inj);
		round_assert(r, fs.forwarded == fwd, "fault layer %u forwarded %"
			     PRIu64 ", want %" PRIu64, i, fs.forwarded, fwd);
		round_assert(r, !fs.cached && !fs.powered_off &&
			     !fs.dirty_sectors, "fault layer %u: cached %"
			     PRIu64 " powered_off %" PRIu64 " dirty %" PRIu64,
			     i, fs.cached, fs.powered_off, fs.dirty_sectors);
		total += fs.injected;
	}
	return total;
}

/* The lower device holds exactly the model: @data is the whole device. */
static void check_content(struct soak_round *r, const unsigned char *data)
{
	for (unsigned i = 0; i < NR_THREADS; i++) {
		struct soak_thread *t = &r->t[i];

		for (uint64_t rel = 0; rel < REGION_SECT; rel++) {
			uint64_t sector = t->base + rel;
			const unsigned char *d = data + sector * MQ_SECTOR_SIZE;
			char got[128];

			if (!pat_check(d, r->seed, t->id, t->shadow[rel], sector))
				continue;
			pat_describe(d, got, sizeof(got));
			ck_abort_msg("round %u seed %#" PRIx64 ": %s sector %"
				     PRIu64 " (thread %u) holds %s, want seq %u%s",
				     r->index, r->seed, lower_name(r), sector, i,
				     got, t->shadow[rel],
				     stop_layer(r, MQ_OP_WRITE, sector, sector + 1)
				     < r->nr_layers ? " (in a bad range)" : "");
		}
	}
}

static void check_file(struct soak_round *r)
{
	unsigned char *data = malloc(DEV_BYTES);
	size_t done = 0;

	ck_assert_ptr_nonnull(data);
	while (done < DEV_BYTES) {
		ssize_t n = pread(r->verify_fd, data + done, DEV_BYTES - done,
				  (off_t)done);

		ck_assert_msg(n > 0, "pread %s: %s", r->path,
			      n ? strerror(errno) : "end of file");
		done += (size_t)n;
	}
	check_content(r, data);
	free(data);
}

/* Queues first, then the fault devices top down, then the lower device. */
static void round_teardown(struct soak_round *r)
{
	mq_queue_destroy(r->q);
	r->q = NULL;
	for (unsigned i = 0; i < r->nr_layers; i++)
		mq_dev_close(r->layers[i].dev);
	if (!r->uring)
		check_content(r, mq_ram_data(r->lower));
	mq_dev_close(r->lower);
	if (r->uring) {
		check_file(r);
		close(r->verify_fd);
	}
}

static void describe_layers(const struct soak_round *r, char *out, size_t len)
{
	size_t off = 0;

	out[0] = '\0';
	for (unsigned i = 0; i < r->nr_layers && off < len; i++) {
		const struct mq_fault_config *c = &r->layers[i].cfg;

		if (c->eio_sector_end)
			off += (size_t)snprintf(out + off, len - off,
				"%s[%" PRIu64 ",%" PRIu64 ")m%x/%" PRIu64 "us",
				i ? " " : "", c->eio_sector_start,
				c->eio_sector_end, c->eio_op_mask,
				c->latency_ns / 1000);
		else
			off += (size_t)snprintf(out + off, len - off,
				"%sm%x/%" PRIu64 "us", i ? " " : "",
				c->eio_op_mask, c->latency_ns / 1000);
	}
}

void round_one(unsigned index, uint64_t seed, uint64_t max_ms,
	       struct soak_totals *tot)
{
	struct soak_round *r = round_new(index, seed, max_ms);
	uint64_t ios = 0, ops[3] = { 0 }, injected, busy, verified = 0;
	unsigned long ring[3];
	struct mq_queue_stats ls = { 0 };
	char layers[256];
	uint64_t t0 = mq_clock_real_ns();

	round_run(r);
	check_threads(r);
	for (unsigned j = 0; j <= r->nr_layers; j++)
		check_queue(r, j);
	injected = check_faults(r);
	if (round_queue(r, r->nr_layers))
		mq_queue_get_stats(round_queue(r, r->nr_layers), -1, &ls);
	busy = atomic_load(&r->lower_spy.busy);
	ring[0] = atomic_load(&g_sq_full) - r->ring0[0];
	ring[1] = atomic_load(&g_ring_busy) - r->ring0[1];
	ring[2] = atomic_load(&g_cq_overflow) - r->ring0[2];
	for (unsigned i = 0; i < NR_THREADS; i++) {
		ios += r->t[i].issued;
		verified += r->t[i].verified;
		for (int k = 0; k < 3; k++)
			ops[k] += r->t[i].ops[k];
	}
	describe_layers(r, layers, sizeof(layers));
	round_teardown(r);

	printf("soak round %u seed %#" PRIx64 ": %s ring %u%s ltags %u | "
	       "faults %s | top %s tags %u hwq %u window %u | %.1f s: %" PRIu64
	       " I/Os (r %" PRIu64 " w %" PRIu64 " f %" PRIu64 "), injected %"
	       PRIu64 ", driver busy %" PRIu64 " requeues %" PRIu64 ", ring: "
	       "sq-full %lu ebusy %lu cq-overflow %lu, switches %lu tunes %lu "
	       "freezes %lu: ok\n", r->index, r->seed,
	       lower_name(r), r->uring ? r->ring : 0,
	       r->uring && r->sqpoll ? " sqpoll" : "", r->lower_tags, layers,
	       r->qcfg.elevator, r->qcfg.queue_depth, r->qcfg.nr_hw_queues,
	       r->window, (double)(mq_clock_real_ns() - t0) / 1e9, ios, ops[0],
	       ops[1], ops[2], injected, busy, ls.requeues, ring[0], ring[1],
	       ring[2],
	       atomic_load(&r->switches), atomic_load(&r->tunes),
	       atomic_load(&r->freezes));
	fflush(stdout);

	tot->rounds++;
	tot->uring_rounds += r->uring;
	tot->ios += ios;
	tot->injected += injected;
	tot->switches += atomic_load(&r->switches);
	tot->tunes += atomic_load(&r->tunes);
	tot->freezes += atomic_load(&r->freezes);
	tot->busy += busy;
	for (int k = 0; k < 3; k++)
		tot->ring[k] += ring[k];
	tot->verified += verified;
	round_free(r);
}
