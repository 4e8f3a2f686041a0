/* SPDX-License-Identifier: MIT */
/*
 * test_journal.c - Check unit tests for transactions and the journal
 * (src/fs/journal.c) over the buffer cache, on a ram device (under a
 * fault device for crashes), with a hand-built struct mqfs_fs.
 *
 * Tested: a commit writes descriptor, copies and commit block exactly as
 * FORMAT.md says and then every block home, sealed with the sequence;
 * the sequence continues from the superblock; the commit thread commits
 * on its interval and when a handle finds the transaction full; sync
 * handles and mqfs_journal_destroy make changes durable; transactions
 * larger than one descriptor; replay applies a committed transaction
 * whose checkpoint was lost, ignores a torn one (no commit block, a
 * commit block of an older transaction, a bad body checksum), and is
 * idempotent; a sealed transaction whose superblock copy is bad or
 * another filesystem's replays all but that copy and reports it; a crash at every write of a commit (failed write, then a
 * power cut that loses the volatile cache) leaves each block wholly old
 * or wholly new, new exactly when the commit was durable; a failed
 * journal write aborts the journal (handles get -EROFS, clear -EIO);
 * threads updating shared blocks through handles, with commits in
 * between, lose no update.
 *
 * The allocator's checkpoint callback (fs->checkpointed) is a counting
 * one of the test's; errors are counted in the struct (fs_err.c).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "t_util.h"
#include "fs_i.h"
#include "t_fs_double.h"
#include "t_jforge.h"
#include "t_main.h"
#include "mqfs/dev/fault.h"
#include "mqfs/dev/ram.h"
#include "t_dev.h"

#define RIG_BLOCKS	4096u			/* 16 MiB */
#define BS		MQFS_BLOCK_SIZE
#define J_START		1u

/* ---- the checkpoint callback ----------------------------------------- */

static _Atomic uint64_t t_committed_seq;	/* last alloc_txn_committed */
static atomic_uint t_committed_calls, t_committed_backwards;

static void t_checkpointed(struct mqfs_fs *fs, uint64_t seq)
{
	(void)fs;
	if (seq <= atomic_load(&t_committed_seq))
		atomic_fetch_add(&t_committed_backwards, 1);
	atomic_store(&t_committed_seq, seq);
	atomic_fetch_add(&t_committed_calls, 1);
}

/* ---- rig ----------------------------------------------------------- */

struct rig {
	struct mq_dev *ram, *dev;
	struct mq_queue *q;
	struct mqfs_fs fs;
	uint32_t jblocks;
	unsigned interval_ms;
};

/* The home block on the ram device: sealed @type, payload all @v. */
static bool home_is(struct rig *r, uint64_t blk, unsigned type, uint8_t v)
{
	const unsigned char *p = t_ram_blk(r->ram, blk);

	if (mqfs_blk_verify(p, type, blk))
		return false;
	for (unsigned i = MQFS_HDR_SIZE; i < BS; i++)
		if (p[i] != v)
			return false;
	return true;
}

static uint64_t home_gen(struct rig *r, uint64_t blk)
{
	return ((const struct mqfs_blk_hdr *)t_ram_blk(r->ram, blk))->gen;
}

static void put_super(struct rig *r, uint64_t journal_seq)
{
	struct mqfs_super *sb = t_ram_blk(r->ram, 0);

	memset(sb, 0, BS);
	sb->format_version = MQFS_FORMAT_VERSION;
	sb->block_size = BS;
	sb->block_count = RIG_BLOCKS;
	sb->journal_start = J_START;
	sb->journal_blocks = r->jblocks;
	sb->journal_seq = journal_seq;
	/* One AG of one inode-table block: a geometry sbcheck.c accepts. */
	sb->ag_blocks = RIG_BLOCKS;
	sb->ag_count = 1;
	sb->inodes_per_ag = MQFS_INODES_PER_BLOCK;
	sb->itable_blocks = 1;
	sb->inode_count = MQFS_INODES_PER_BLOCK;
	sb->root_ino = MQFS_ROOT_INO;
	memset(sb->uuid, 0x5a, sizeof(sb->uuid));
	mqfs_blk_seal(sb, MQFS_T_SUPER, 0, 1);
}

/* Queue (under a fault device when @fc), cache and journal on r->ram. */
static void rig_start(struct rig *r, const struct mq_fault_config *fc)
{
	struct mq_queue_config qc = { .elevator = "none" };

	r->dev = r->ram;
	if (fc) {
		r->dev = t_dev_fault(r->ram, fc);
		t_check(r->dev != NULL, "mq_fault_open");
	}
	r->q = t_queue_create(r->dev, &qc);
	memset(&r->fs, 0, sizeof(r->fs));
	r->fs.q = r->q;
	r->fs.block_count = RIG_BLOCKS;
	r->fs.journal_start = J_START;
	r->fs.journal_blocks = r->jblocks;
	r->fs.opts.commit_interval_ms = r->interval_ms;
	r->fs.checkpointed = t_checkpointed;
	/* The superblock as a mount reads it before replay. */
	r->fs.sb0 = mqfs_alloc_blocks_mem(1);
	t_check(r->fs.sb0 != NULL, "sb0");
	memcpy(r->fs.sb0, t_ram_blk(r->ram, 0), BS);
	t_check(mqfs_bcache_create(&r->fs, 8u << 20) == 0, "bcache_create");
	t_check(mqfs_journal_create(&r->fs) == 0, "journal_create");
	t_check(r->fs.journal != NULL, "fs->journal set");
}

/* Journal (its destroy result returned), cache, queue; the ram stays. */
static int rig_stop(struct rig *r)
{
	int err = mqfs_journal_destroy(&r->fs);

	t_check(r->fs.journal == NULL, "fs->journal cleared");
	mqfs_bcache_destroy(&r->fs);
	free(r->fs.sb0);
	r->fs.sb0 = NULL;
	mq_queue_destroy(r->q);
	if (r->dev != r->ram)
		mq_dev_close(r->dev);
	return err;
}

static void rig_open(struct rig *r, uint32_t jblocks, uint64_t sb_seq,
		     const struct mq_fault_config *fc)
{
	memset(r, 0, sizeof(*r));
	r->jblocks = jblocks;
	r->interval_ms = 60000;		/* commits only when a test asks */
	r->ram = t_dev_ram((uint64_t)RIG_BLOCKS * BS, 64);
	t_check(r->ram != NULL, "mq_ram_open");
	put_super(r, sb_seq);
	rig_start(r, fc);
}

static void rig_close(struct rig *r)
{
	t_check(rig_stop(r) == 0, "journal_destroy");
	mq_dev_close(r->ram);
}

/* Set the payload of @blk (read as @type) to @v inside @h. */
static void modify(struct mqfs_handle *h, uint64_t blk, unsigned type,
		   uint8_t v)
{
	struct mqfs_buf *b;

	t_check(mqfs_buf_read(h->fs, blk, type, &b) == 0, "read %" PRIu64,
		blk);
	mqfs_buf_lock(b);
	memset((char *)b->data + MQFS_HDR_SIZE, v, MQFS_PAYLOAD);
	mqfs_trans_dirty(h, b);
	mqfs_buf_unlock(b);
	mqfs_buf_put(b);
}

/* One handle setting every block of @blks to @v. */
static uint64_t modify_all(struct rig *r, const uint64_t *blks, unsigned n,
			   uint8_t v)
{
	struct mqfs_handle h;

	t_check(mqfs_trans_start(&r->fs, n, &h) == 0, "trans_start");
	for (unsigned i = 0; i < n; i++)
		modify(&h, blks[i], MQFS_T_DIR, v);
	t_check(mqfs_trans_stop(&h) == 0, "trans_stop");
	return h.seq;
}

static bool all_home(struct rig *r, const uint64_t *blks, unsigned n,
		     uint8_t v)
{
	for (unsigned i = 0; i < n; i++)
		if (!home_is(r, blks[i], MQFS_T_DIR, v))
			return false;
	return true;
}

/* Homes deliberately unsorted and partly contiguous. */
static const uint64_t homes[5] = { 300, 101, 500, 100, 102 };
#define NH	5u

static void seed_homes(struct rig *r, uint8_t v)
{
	for (unsigned i = 0; i < NH; i++)
		t_put_meta(r->ram, homes[i], MQFS_T_DIR, v);
}

static uint64_t commits(struct rig *r)
{
	uint64_t c, b;

	mqfs_journal_stats(&r->fs, &c, &b);
	return c;
}

/* ---- commit ------------------------------------------------------------- */

START_TEST(test_commit_home)
{
	const struct mqfs_jdesc *d;
	const struct mqfs_jcommit *c;
	struct mqfs_buf *b;
	uint64_t seq, nb;
	struct rig r;

	T_BEGIN();
	rig_open(&r, 64, 10, NULL);
	seed_homes(&r, 1);
	t_check_u64(mqfs_journal_durable_seq(&r.fs), 9, "durable from sb");
	seq = modify_all(&r, homes, NH, 2);
	t_check_u64(seq, 10, "first sequence from the superblock");
	t_check(all_home(&r, homes, NH, 1), "nothing written before commit");
	t_check(mqfs_journal_sync(&r.fs) == 0, "commit and checkpoint");
	t_check_u64(mqfs_journal_durable_seq(&r.fs), 10, "durable");
	t_check(all_home(&r, homes, NH, 2), "homes written");
	for (unsigned i = 0; i < NH; i++)
		t_check_u64(home_gen(&r, homes[i]), 10, "home gen");
	t_check_u64(atomic_load(&t_committed_seq), 10, "alloc told");

	/* Journal layout: D0 (homes sorted), 5 copies, commit. */
	d = t_ram_blk(r.ram, J_START);
	t_check(mqfs_blk_verify(d, MQFS_T_JDESC, J_START) == 0, "desc");
	t_check(d->hdr.gen == 10 && d->nr == NH && d->index == 0, "desc fields");
	t_check(d->home[0] == 100 && d->home[1] == 101 && d->home[2] == 102 &&
		d->home[3] == 300 && d->home[4] == 500, "homes sorted");
	for (unsigned i = 0; i < NH; i++)
		t_check(!memcmp(t_ram_blk(r.ram, J_START + 1 + i),
				t_ram_blk(r.ram, d->home[i]), BS), "copy %u", i);
	c = t_ram_blk(r.ram, J_START + 1 + NH);
	t_check(mqfs_blk_verify(c, MQFS_T_JCOMMIT, J_START + 1 + NH) == 0,
		"commit block");
	t_check(c->hdr.gen == 10 && c->nr_blocks == NH && c->nr_desc == 1,
		"commit fields");
	t_check(c->body_csum == mqfs_hash(t_ram_blk(r.ram, J_START), (NH + 1) * BS),
		"body checksum");

	/* The live buffer is unpinned and carries the committed header. */
	t_check(mqfs_buf_read(&r.fs, 100, MQFS_T_DIR, &b) == 0, "read");
	t_check_u64(atomic_load(&b->refcount), 1, "journal let go");
	t_check(!(atomic_load(&b->flags) &
		  (MQFS_BUF_DIRTY | MQFS_BUF_CHECKPOINT)), "clean");
	t_check(!memcmp(b->data, t_ram_blk(r.ram, 100), BS), "live == home");
	mqfs_buf_put(b);

	/* Nothing running: nothing written. */
	t_check(mqfs_journal_commit(&r.fs) == 0, "empty commit");
	mqfs_journal_stats(&r.fs, &seq, &nb);
	t_check(seq == 1 && nb == NH, "stats %" PRIu64 " %" PRIu64, seq, nb);
	t_check(mqfs_journal_wait_seq(&r.fs, 10) == 0, "wait durable");
	t_check_u64(atomic_load(&r.fs.errors), 0, "no errors");
	rig_close(&r);
}
END_TEST

/* A commit carrying the superblock records the next sequence in it. */
START_TEST(test_seq_in_super)
{
	struct mqfs_handle h;
	struct mqfs_buf *sb;
	bool replayed;
	struct rig r;

	T_BEGIN();
	rig_open(&r, 64, 10, NULL);
	seed_homes(&r, 1);
	modify_all(&r, homes, NH, 2);			/* seq 10 */
	t_check(mqfs_journal_sync(&r.fs) == 0, "sync");
	t_check(mqfs_trans_start(&r.fs, 1, &h) == 0, "start");
	t_check(mqfs_buf_read(&r.fs, 0, MQFS_T_SUPER, &sb) == 0, "sb");
	mqfs_buf_lock(sb);
	((struct mqfs_super *)sb->data)->mount_count++;
	mqfs_trans_dirty(&h, sb);
	mqfs_buf_unlock(sb);
	t_check_u64(h.seq, 11, "seq");
	t_check(mqfs_trans_stop(&h) == 0, "stop");
	t_check(mqfs_journal_sync(&r.fs) == 0, "sync");
	t_check_u64(((struct mqfs_super *)sb->data)->journal_seq, 12,
		    "live superblock");
	mqfs_buf_put(sb);
	t_check(mqfs_journal_clear(&r.fs) == 0, "clear");
	t_check(rig_stop(&r) == 0, "stop");
	t_check(mqfs_blk_verify(t_ram_blk(r.ram, 0), MQFS_T_SUPER, 0) == 0, "sb");
	t_check_u64(((struct mqfs_super *)t_ram_blk(r.ram, 0))->journal_seq, 12,
		    "superblock on the device");
	rig_start(&r, NULL);
	t_check(mqfs_journal_replay(&r.fs, &replayed) == 0 && !replayed,
		"clean");
	t_check_u64(modify_all(&r, homes, NH, 3), 12, "numbering goes on");
	rig_close(&r);
}
END_TEST

/* Fresh blocks (buf_new) and the same block dirtied twice. */
START_TEST(test_commit_new)
{
	struct mqfs_handle h;
	struct mqfs_buf *b;
	struct rig r;

	T_BEGIN();
	rig_open(&r, 64, 0, NULL);
	t_check(mqfs_trans_start(&r.fs, 2, &h) == 0, "start");
	t_check_u64(h.seq, 1, "seq 1 without a journal_seq");
	t_check(mqfs_buf_new(&r.fs, 700, MQFS_T_EXTENT, &b) == 0, "new");
	mqfs_buf_lock(b);
	memset((char *)b->data + MQFS_HDR_SIZE, 9, MQFS_PAYLOAD);
	mqfs_trans_dirty(&h, b);
	mqfs_trans_dirty(&h, b);
	mqfs_buf_unlock(b);
	t_check_u64(h.credits, 1, "one credit used");
	t_check_u64(atomic_load(&b->refcount), 2, "journal reference");
	t_check_u64(b->txn_seq, 1, "txn_seq");
	h.sync = true;
	t_check(mqfs_trans_stop(&h) == 0, "sync stop");
	t_check(home_is(&r, 700, MQFS_T_EXTENT, 9), "home after sync stop");
	mqfs_buf_put(b);
	rig_close(&r);
}
END_TEST

/* The commit thread commits on its own, on the interval. */
START_TEST(test_commit_thread)
{
	struct rig r;

	T_BEGIN();
	memset(&r, 0, sizeof(r));
	r.jblocks = 64;
	r.interval_ms = 20;
	r.ram = t_dev_ram((uint64_t)RIG_BLOCKS * BS, 64);
	put_super(&r, 5);
	seed_homes(&r, 1);
	rig_start(&r, NULL);
	modify_all(&r, homes, NH, 3);
	t_check(t_wait_until(mqfs_journal_durable_seq(&r.fs) == 5),
		"the thread committed");
	/* Nothing left to commit: sync only waits out the checkpoint. */
	t_check(mqfs_journal_sync(&r.fs) == 0, "sync");
	t_check(all_home(&r, homes, NH, 3), "homes");
	t_check_u64(commits(&r), 1, "the thread's commit only");
	rig_close(&r);
}
END_TEST

/* destroy commits what is still running. */
START_TEST(test_destroy_commits)
{
	struct rig r;

	T_BEGIN();
	rig_open(&r, 64, 0, NULL);
	seed_homes(&r, 1);
	modify_all(&r, homes, NH, 4);
	t_check(rig_stop(&r) == 0, "destroy");
	t_check(all_home(&r, homes, NH, 4), "homes after destroy");
	mq_dev_close(r.ram);
}
END_TEST

/* A transaction larger than one descriptor holds, and its replay. */
START_TEST(test_multi_desc)
{
	enum { N = 600, BASE = 2000 };
	struct mqfs_handle h;
	bool replayed;
	struct rig r;
	unsigned pc;

	T_BEGIN();
	rig_open(&r, 1200, 0, NULL);
	t_check(mqfs_trans_start(&r.fs, N, &h) == 0, "start");
	for (unsigned i = 0; i < N; i++) {
		struct mqfs_buf *b;

		t_check(mqfs_buf_new(&r.fs, BASE + i, MQFS_T_EXTENT, &b) == 0,
			"new");
		mqfs_buf_lock(b);
		memset((char *)b->data + MQFS_HDR_SIZE, (uint8_t)i,
		       MQFS_PAYLOAD);
		mqfs_trans_dirty(&h, b);
		mqfs_buf_unlock(b);
		mqfs_buf_put(b);
	}
	t_check(mqfs_trans_stop(&h) == 0, "stop");
	/* Past half the limit: the thread may commit it; sync waits. */
	t_check(mqfs_journal_sync(&r.fs) == 0, "commit and checkpoint");
	for (unsigned i = 0; i < N; i++)
		t_check(home_is(&r, BASE + i, MQFS_T_EXTENT, (uint8_t)i),
			"home %u", i);
	pc = J_START + MQFS_JDESC_MAX + 1;
	t_check(mqfs_blk_verify(t_ram_blk(r.ram, pc), MQFS_T_JDESC, pc) == 0,
		"second descriptor");
	t_check_u64(((struct mqfs_jdesc *)t_ram_blk(r.ram, pc))->nr,
		    N - MQFS_JDESC_MAX, "its count");
	pc = J_START + N + 2;
	t_check(mqfs_blk_verify(t_ram_blk(r.ram, pc), MQFS_T_JCOMMIT, pc) == 0,
		"commit after both");
	t_check(rig_stop(&r) == 0, "stop");

	/* Lose every home write, then replay. */
	for (unsigned i = 0; i < N; i++)
		memset(t_ram_blk(r.ram, BASE + i), 0, BS);
	rig_start(&r, NULL);
	t_check(mqfs_journal_replay(&r.fs, &replayed) == 0 && replayed,
		"replay");
	for (unsigned i = 0; i < N; i++)
		t_check(home_is(&r, BASE + i, MQFS_T_EXTENT, (uint8_t)i),
			"replayed home %u", i);
	t_check_u64(mqfs_journal_durable_seq(&r.fs), 1, "seq after replay");
	rig_close(&r);
}
END_TEST

/* ---- replay ------------------------------------------------------------------ */

/* EIO on writes to the homes (blocks 100..500): checkpoints fail. */
static const struct mq_fault_config fail_homes = {
	.seed = 1, .eio_op_mask = 1u << MQ_OP_WRITE,
	.eio_sector_start = 100 * MQFS_SECTORS_PER_BLOCK,
	.eio_sector_end = 501 * MQFS_SECTORS_PER_BLOCK,
};

START_TEST(test_replay_committed)
{
	unsigned char *img1;
	struct mqfs_handle h;
	bool replayed;
	uint64_t seq;
	struct rig r;

	T_BEGIN();
	rig_open(&r, 64, 7, &fail_homes);
	seed_homes(&r, 1);
	seq = modify_all(&r, homes, NH, 2);
	t_check(mqfs_journal_commit(&r.fs) == -EIO, "checkpoint fails");
	t_check_u64(mqfs_journal_durable_seq(&r.fs), seq, "but durable");
	t_check(atomic_load(&r.fs.errors) == 1, "fs_error once");
	t_check(atomic_load(&t_committed_calls) == 0,
		"blocks not released without a checkpoint");
	t_check(all_home(&r, homes, NH, 1), "homes old");
	/* Aborted: no new handles, the journal is kept. */
	t_check(mqfs_trans_start(&r.fs, 1, &h) == -EROFS, "start aborted");
	t_check(mqfs_journal_clear(&r.fs) == -EIO, "clear refused");
	t_check(mqfs_journal_sync(&r.fs) == -EIO, "sync reports the abort");
	t_check(rig_stop(&r) == -EIO, "destroy reports the abort");

	rig_start(&r, NULL);
	t_check(mqfs_journal_replay(&r.fs, &replayed) == 0, "replay");
	t_check(replayed, "replayed");
	t_check(all_home(&r, homes, NH, 2), "homes new");
	t_check_u64(home_gen(&r, 100), seq, "gen");
	t_check_u64(mqfs_journal_durable_seq(&r.fs), seq, "next seq");
	img1 = malloc((size_t)RIG_BLOCKS * BS);
	memcpy(img1, mq_ram_data(r.ram), (size_t)RIG_BLOCKS * BS);
	t_check(mqfs_journal_replay(&r.fs, &replayed) == 0 && replayed,
		"replay twice");
	t_check(!memcmp(img1, mq_ram_data(r.ram), (size_t)RIG_BLOCKS * BS),
		"idempotent");
	free(img1);
	/* Work goes on after the replayed sequence. */
	t_check_u64(modify_all(&r, homes, NH, 3), seq + 1, "next txn seq");
	t_check(mqfs_journal_sync(&r.fs) == 0, "commit");
	t_check(all_home(&r, homes, NH, 3), "homes newer");
	/* Clean unmount: nothing left to replay. */
	t_check(mqfs_journal_clear(&r.fs) == 0, "clear");
	t_check(rig_stop(&r) == 0, "stop");
	rig_start(&r, NULL);
	t_check(mqfs_journal_replay(&r.fs, &replayed) == 0 && !replayed,
		"nothing after clear");
	rig_close(&r);
}
END_TEST

/* EIO on the commit block: a torn transaction is never replayed. */
START_TEST(test_replay_torn)
{
	struct mq_fault_config fail_commit = {
		.seed = 1, .eio_op_mask = 1u << MQ_OP_WRITE,
		.eio_sector_start = (J_START + 1 + NH) * MQFS_SECTORS_PER_BLOCK,
		.eio_sector_end = (J_START + 2 + NH) * MQFS_SECTORS_PER_BLOCK,
	};
	bool replayed;
	uint64_t seq;
	struct rig r;

	T_BEGIN();
	rig_open(&r, 64, 0, &fail_commit);
	seed_homes(&r, 1);
	seq = modify_all(&r, homes, NH, 2);
	t_check(mqfs_journal_commit(&r.fs) == -EIO, "commit write fails");
	t_check_u64(mqfs_journal_durable_seq(&r.fs), seq - 1, "not durable");
	t_check_u64(atomic_load(&r.fs.last_error_blk), J_START + 1 + NH, "error block");
	t_check(rig_stop(&r) == -EIO, "destroy");
	t_check(mqfs_blk_verify(t_ram_blk(r.ram, J_START), MQFS_T_JDESC,
				J_START) == 0, "descriptor did land");
	rig_start(&r, NULL);
	t_check(mqfs_journal_replay(&r.fs, &replayed) == 0, "replay");
	t_check(!replayed, "torn transaction ignored");
	t_check(all_home(&r, homes, NH, 1), "homes old");
	t_check(mqfs_journal_durable_seq(&r.fs) >= seq,
		"the torn sequence is not reused");
	rig_close(&r);
}
END_TEST

/* A copy changed and resealed: block checks pass, body_csum does not. */
START_TEST(test_replay_bad_body)
{
	unsigned char save[BS], *copy;
	const struct mqfs_blk_hdr *hd;
	bool replayed;
	struct rig r;

	T_BEGIN();
	rig_open(&r, 64, 0, NULL);
	seed_homes(&r, 1);
	modify_all(&r, homes, NH, 2);
	t_check(mqfs_journal_commit(&r.fs) == 0, "commit");
	t_check(rig_stop(&r) == 0, "stop");
	seed_homes(&r, 1);		/* as if the checkpoint were lost */
	copy = t_ram_blk(r.ram, J_START + 2);
	memcpy(save, copy, BS);
	copy[100] ^= 1;
	hd = (const void *)copy;
	mqfs_blk_seal(copy, hd->type, hd->blocknr, hd->gen);
	rig_start(&r, NULL);
	t_check(mqfs_journal_replay(&r.fs, &replayed) == 0 && !replayed,
		"bad body checksum");
	t_check(all_home(&r, homes, NH, 1), "homes untouched");
	/* A copy failing its own check stops replay too. */
	copy[200] ^= 1;
	t_check(mqfs_journal_replay(&r.fs, &replayed) == 0 && !replayed,
		"bad copy");
	memcpy(copy, save, BS);
	t_check(mqfs_journal_replay(&r.fs, &replayed) == 0 && replayed,
		"restored journal replays");
	t_check(all_home(&r, homes, NH, 2), "homes new");
	rig_close(&r);
}
END_TEST

/*
 * A committed, checksum-valid transaction whose superblock copy is bad
 * (or another filesystem's): replay writes every other copy home, keeps
 * block 0 as it was and reports the error, as fsck does.
 */
START_TEST(test_replay_bad_super)
{
	void (*damage[2])(struct mqfs_super *) = { t_jforge_bad_geometry,
						   t_jforge_other_fs };
	unsigned char sb0[BS], journal[64 * BS];
	struct mqfs_handle h;
	struct mqfs_buf *sb;
	bool replayed;
	struct rig r;

	T_BEGIN();
	rig_open(&r, 64, 0, NULL);
	seed_homes(&r, 1);
	memcpy(sb0, t_ram_blk(r.ram, 0), BS);
	t_check(mqfs_trans_start(&r.fs, NH + 1, &h) == 0, "start");
	for (unsigned i = 0; i < NH; i++)
		modify(&h, homes[i], MQFS_T_DIR, 2);
	t_check(mqfs_buf_read(&r.fs, 0, MQFS_T_SUPER, &sb) == 0, "sb");
	mqfs_buf_lock(sb);
	((struct mqfs_super *)sb->data)->mount_count = 99;
	mqfs_trans_dirty(&h, sb);
	mqfs_buf_unlock(sb);
	mqfs_buf_put(sb);
	t_check(mqfs_trans_stop(&h) == 0, "stop");
	t_check(mqfs_journal_commit(&r.fs) == 0, "commit");
	t_check(rig_stop(&r) == 0, "stop");
	memcpy(journal, t_ram_blk(r.ram, J_START), sizeof(journal));
	for (unsigned k = 0; k < 2; k++) {
		/* As if the checkpoint were lost. */
		seed_homes(&r, 1);
		memcpy(t_ram_blk(r.ram, 0), sb0, BS);
		memcpy(t_ram_blk(r.ram, J_START), journal, sizeof(journal));
		t_jforge_super(t_ram_blk(r.ram, J_START), J_START, damage[k]);
		rig_start(&r, NULL);
		t_check(mqfs_journal_replay(&r.fs, &replayed) == 0 && replayed,
			"replayed");
		t_check(all_home(&r, homes, NH, 2), "the other copies home");
		t_check(!memcmp(t_ram_blk(r.ram, 0), sb0, BS),
			"the bad superblock copy reached block 0");
		t_check(atomic_load(&r.fs.errors) == 1 &&
			atomic_load(&r.fs.last_error_blk) == 0, "error reported");
		t_check(atomic_load(&r.fs.error_seen), "filesystem flagged");
		t_check(mqfs_journal_clear(&r.fs) == 0, "clear");
		t_check(rig_stop(&r) == 0, "stop");
	}
	/* The undamaged journal replays the superblock copy too. */
	seed_homes(&r, 1);
	memcpy(t_ram_blk(r.ram, 0), sb0, BS);
	memcpy(t_ram_blk(r.ram, J_START), journal, sizeof(journal));
	rig_start(&r, NULL);
	t_check(mqfs_journal_replay(&r.fs, &replayed) == 0 && replayed, "ok");
	t_check(((struct mqfs_super *)t_ram_blk(r.ram, 0))->mount_count == 99,
		"a good superblock copy goes home");
	t_check(atomic_load(&r.fs.errors) == 0, "no error for a good copy");
	rig_close(&r);
}
END_TEST

/*
 * Crash at the Nth write of a commit: writes are 1 journal body, 2
 * commit block, 3.. checkpoint (sorted homes merge: 100-102, 300, 500).
 * The failed write aborts the journal, the power cut loses what was
 * not flushed, replay runs on the bare ram device.
 */
START_TEST(test_crash_points)
{
	struct mq_fault_config fc = { .seed = 3, .volatile_cache = true };
	struct mq_fault_config eio = { .eio_op_mask = 1u << MQ_OP_WRITE };
	uint64_t seq1, seq2, durable;
	unsigned n = (unsigned)_i;
	bool replayed;
	struct rig r;
	int rc;

	T_BEGIN();
	memset(&r, 0, sizeof(r));
	r.jblocks = 64;
	r.interval_ms = 60000;
	r.ram = t_dev_ram((uint64_t)RIG_BLOCKS * BS, 64);
	put_super(&r, 0);
	seed_homes(&r, 1);
	rig_start(&r, &fc);
	seq1 = modify_all(&r, homes, NH, 2);
	t_check(mqfs_journal_sync(&r.fs) == 0, "txn 1");
	eio.eio_every_nth = n;
	t_check(mq_fault_set_eio(r.dev, &eio) == 0, "arm EIO");
	seq2 = modify_all(&r, homes, NH, 3);
	rc = mqfs_journal_sync(&r.fs);
	durable = mqfs_journal_durable_seq(&r.fs);
	/* Checkpoint requests depend on merging: only the ends are sure. */
	t_check(n > 2 || rc == -EIO, "commit rc %d at N=%u", rc, n);
	t_check(n < 8 || rc == 0, "commit rc %d at N=%u", rc, n);
	t_check((durable == seq2) == (n >= 3), "durable %" PRIu64 " at N=%u",
		durable, n);
	t_check(mq_fault_power_cut(r.dev, MQ_FAULT_CUT_LOSE) >= 0, "cut");
	t_check(rig_stop(&r) == rc, "destroy agrees with the commit");

	rig_start(&r, NULL);
	t_check(mqfs_journal_replay(&r.fs, &replayed) == 0, "replay");
	/* At N=2 txn 2's body overwrote txn 1 but its commit never came. */
	t_check(replayed == (n != 2), "replayed %d at N=%u", replayed, n);
	t_check(all_home(&r, homes, NH, durable == seq2 ? 3 : 2),
		"atomic at N=%u (durable %" PRIu64 ", seq1 %" PRIu64 ")", n,
		durable, seq1);
	rig_close(&r);
}
END_TEST

/* ---- handles and credits ----------------------------------------------------- */

struct waiter {
	struct rig *r;
	unsigned credits;
	struct mqfs_handle h;
	atomic_bool started;
	int rc;
};

static void *waiter_fn(void *p)
{
	struct waiter *w = p;

	w->rc = mqfs_trans_start(&w->r->fs, w->credits, &w->h);
	atomic_store(&w->started, true);
	if (!w->rc) {
		modify(&w->h, 900, MQFS_T_DIR, 0x99);
		w->rc = mqfs_trans_stop(&w->h);
	}
	return NULL;
}

START_TEST(test_credits)
{
	struct mqfs_handle a;
	struct waiter w = { .credits = 1 };
	unsigned limit;
	uint64_t c0;
	pthread_t th;
	struct rig r;

	T_BEGIN();
	rig_open(&r, 24, 0, NULL);
	for (unsigned i = 0; i < 30; i++)
		t_put_meta(r.ram, 900 + i, MQFS_T_DIR, 1);
	/* Find the limit: the largest reservation accepted. */
	for (limit = 24; limit; limit--)
		if (mqfs_trans_start(&r.fs, limit, &a) == 0)
			break;
	t_check(limit >= 16 && limit < 24, "limit %u", limit);
	t_check(mqfs_trans_stop(&a) == 0, "stop");
	t_check(mqfs_trans_start(&r.fs, limit + 1, &a) == -ENOSPC,
		"more than the journal holds");

	/* A reservation blocks a start until it is dropped. */
	w.r = &r;
	t_check(mqfs_trans_start(&r.fs, limit, &a) == 0, "reserve all");
	t_check(pthread_create(&th, NULL, waiter_fn, &w) == 0, "thread");
	usleep(50 * 1000);
	t_check(!atomic_load(&w.started), "waiter got in while full");
	modify(&a, 901, MQFS_T_DIR, 2);
	t_check(mqfs_trans_stop(&a) == 0, "stop");
	pthread_join(th, NULL);
	t_check(w.rc == 0 && w.h.seq >= a.seq, "waiter got in");
	t_check(mqfs_journal_commit(&r.fs) == 0, "settle");
	c0 = commits(&r);

	/* A full transaction: the next start kicks a commit and waits. */
	t_check(mqfs_trans_start(&r.fs, limit, &a) == 0, "start");
	for (unsigned i = 0; i < limit; i++)
		modify(&a, 902 + i, MQFS_T_DIR, 3);
	t_check(mqfs_trans_stop(&a) == 0, "stop");
	w.started = false;
	t_check(pthread_create(&th, NULL, waiter_fn, &w) == 0, "thread");
	pthread_join(th, NULL);
	t_check(w.rc == 0 && w.h.seq == a.seq + 1, "waiter in the next txn");
	t_check(t_wait_until(commits(&r) > c0),
		"a kick committed (interval is 60 s)");
	t_check(mqfs_journal_sync(&r.fs) == 0, "sync");
	t_check(home_is(&r, 902, MQFS_T_DIR, 3), "home");
	t_check(rig_stop(&r) == 0, "stop");
	t_check(home_is(&r, 900, MQFS_T_DIR, 0x99), "waiter's change");
	mq_dev_close(r.ram);
}
END_TEST

/* ---- concurrency -------------------------------------------------------------- */

#define CC_THREADS	4
#define CC_OPS		300
#define CC_SHARED	900u	/* 4 blocks of shared counters */
#define CC_OWN		910u	/* one block per thread */
#define CC_POOL		920u	/* 32 blocks, rotating */

struct cc_arg {
	struct rig *r;
	unsigned id;
	int err;
};

/* Add 1 to the u64 at @slot of @blk's payload inside @h. */
static int cc_inc(struct mqfs_handle *h, uint64_t blk, unsigned slot)
{
	struct mqfs_buf *b;
	uint64_t *p;
	int err = mqfs_buf_read(h->fs, blk, MQFS_T_DIR, &b);

	if (err)
		return err;
	mqfs_buf_lock(b);
	p = (uint64_t *)((char *)b->data + MQFS_HDR_SIZE) + slot;
	(*p)++;
	mqfs_trans_dirty(h, b);
	mqfs_buf_unlock(b);
	mqfs_buf_put(b);
	return 0;
}

static void *cc_worker(void *p)
{
	struct cc_arg *a = p;

	for (unsigned n = 0; n < CC_OPS && !a->err; n++) {
		struct mqfs_handle h;

		a->err = mqfs_trans_start(&a->r->fs, 3, &h);
		if (a->err)
			break;
		h.sync = n % 37 == 0;
		a->err = cc_inc(&h, CC_SHARED + n % 4, 0);
		if (!a->err)
			a->err = cc_inc(&h, CC_OWN + a->id, a->id);
		if (!a->err)
			a->err = cc_inc(&h, CC_POOL + (a->id * 7 + n) % 32,
					a->id);
		if (mqfs_trans_stop(&h) && !a->err)
			a->err = -EIO;
		if (!a->err && n % 50 == 49)
			a->err = mqfs_journal_commit(&a->r->fs);
	}
	return NULL;
}

static uint64_t home_u64(struct rig *r, uint64_t blk, unsigned slot)
{
	return ((const uint64_t *)((const char *)t_ram_blk(r->ram, blk) +
				   MQFS_HDR_SIZE))[slot];
}

START_TEST(test_concurrent_handles)
{
	struct cc_arg a[CC_THREADS];
	pthread_t th[CC_THREADS];
	uint64_t sum = 0;
	struct rig r;

	T_BEGIN();
	memset(&r, 0, sizeof(r));
	r.jblocks = 24;		/* about 20 buffers: commits come often */
	r.interval_ms = 2;
	r.ram = t_dev_ram((uint64_t)RIG_BLOCKS * BS, 64);
	put_super(&r, 0);
	for (unsigned i = CC_SHARED; i < CC_POOL + 32; i++)
		t_put_meta(r.ram, i, MQFS_T_DIR, 0);
	rig_start(&r, NULL);
	for (unsigned t = 0; t < CC_THREADS; t++) {
		a[t] = (struct cc_arg){ .r = &r, .id = t };
		t_check(pthread_create(&th[t], NULL, cc_worker, &a[t]) == 0,
			"thread");
	}
	for (unsigned t = 0; t < CC_THREADS; t++) {
		pthread_join(th[t], NULL);
		t_check(a[t].err == 0, "thread %u: %d", t, a[t].err);
	}
	t_check(mqfs_journal_commit(&r.fs) == 0, "final commit");
	t_check(commits(&r) > 5, "commits in between: %" PRIu64, commits(&r));
	t_check(atomic_load(&t_committed_backwards) == 0, "seqs in order");
	t_check(rig_stop(&r) == 0, "stop");

	for (unsigned i = 0; i < 4; i++)
		sum += home_u64(&r, CC_SHARED + i, 0);
	t_check_u64(sum, CC_THREADS * CC_OPS, "shared counters");
	for (unsigned t = 0; t < CC_THREADS; t++) {
		uint64_t pool = 0;

		t_check_u64(home_u64(&r, CC_OWN + t, t), CC_OPS, "own counter");
		for (unsigned i = 0; i < 32; i++)
			pool += home_u64(&r, CC_POOL + i, t);
		t_check_u64(pool, CC_OPS, "pool counters");
	}
	for (unsigned i = CC_SHARED; i < CC_POOL + 32; i++)
		t_check(mqfs_blk_verify(t_ram_blk(r.ram, i), MQFS_T_DIR, i) == 0,
			"block %u sealed", i);
	t_check_u64(atomic_load(&r.fs.errors), 0, "no errors");
	mq_dev_close(r.ram);
}
END_TEST

static Suite *journal_suite(void)
{
	Suite *s = suite_create("journal");
	TCase *c = t_tcase(s, "core", 60);

	tcase_add_test(c, test_commit_home);
	tcase_add_test(c, test_seq_in_super);
	tcase_add_test(c, test_commit_new);
	tcase_add_test(c, test_commit_thread);
	tcase_add_test(c, test_destroy_commits);
	tcase_add_test(c, test_multi_desc);
	tcase_add_test(c, test_replay_committed);
	tcase_add_test(c, test_replay_torn);
	tcase_add_test(c, test_replay_bad_body);
	tcase_add_test(c, test_replay_bad_super);
	tcase_add_loop_test(c, test_crash_points, 1, 9);
	tcase_add_test(c, test_credits);
	tcase_add_test(c, test_concurrent_handles);
	return s;
}

T_MAIN(journal_suite)
