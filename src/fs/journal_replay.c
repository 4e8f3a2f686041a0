// SPDX-License-Identifier: MIT
/*
 * journal_replay.c - the journal at mount: apply the transaction at
 * journal_start if its commit is valid (journal.c's file comment has the
 * layout and why replay is idempotent), then number the next transaction
 * past every sequence the journal has seen.  Apart from journal.c
 * because it runs once, before any handle, and needs none of the
 * running journal's state: it calls into journal.c, never the reverse.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "fs_i.h"
#include "journal_i.h"

/* ---- replay --------------------------------------------------------------- */

/* A transaction read back from the journal. */
struct jreplay {
	uint64_t seq;
	unsigned ndesc, nr, max_desc;
	struct mqfs_jdesc **desc;	/* max_desc slots */
	void **copies;			/* desc[k]->nr blocks each */
	bool found;			/* a descriptor at journal_start */
};

static int jr_read_blocks(struct mqfs_fs *fs, uint64_t pos, void *buf,
			  unsigned n)
{
	int err = mqfs_bio_sync(fs->q, MQ_OP_READ, fs->journal_start + pos,
				buf, n, MQ_REQ_META | MQ_REQ_SYNC);

	if (err)
		fprintf(stderr, "mqfs: journal: reading journal block %"
			PRIu64 " failed: %d\n", fs->journal_start + pos, err);
	return err ? -EIO : 0;
}

/* Why the copy of @home must not go there, or NULL (sbcheck.c's rule). */
static const char *jr_copy_why(struct mqfs_fs *fs, const struct jreplay *r,
			       uint64_t home, const void *blk)
{
	uint64_t dev_blocks = mq_queue_size_bytes(fs->q) / MQFS_BLOCK_SIZE;

	return mqfs_jcopy_why_bad(fs->sb0, dev_blocks, r->seq, home, blk);
}

/*
 * Each copy must be a sealed metadata block of this transaction for its
 * home, else the transaction is torn.  A sealed copy that is corrupt (a
 * bad superblock) does not make it torn: jr_apply() leaves that one out.
 */
static bool jr_copies_ok(struct mqfs_fs *fs, const struct jreplay *r,
			 const struct mqfs_jdesc *d, const void *copies)
{
	for (unsigned i = 0; i < d->nr; i++) {
		const char *why = jr_copy_why(fs, r, d->home[i],
					      jnl_blk((void *)copies, i));

		if (why && !mqfs_jcopy_corrupt(why))
			return false;
	}
	return true;
}

/*
 * Read descriptor @k at @pos and its copies into @r.  1: done, 0: not a
 * descriptor of this transaction, -errno.
 */
static int jr_read_desc(struct mqfs_fs *fs, struct jreplay *r, unsigned pos,
			void *blk, XXH3_state_t *st)
{
	struct mqfs_jdesc *d = blk;
	unsigned k = r->ndesc;
	int err;

	if (mqfs_blk_verify(d, MQFS_T_JDESC, fs->journal_start + pos) ||
	    (k && d->hdr.gen != r->seq) || d->index != k || !d->nr ||
	    d->nr > MQFS_JDESC_MAX || pos + 1 + d->nr >= fs->journal_blocks ||
	    k >= r->max_desc)
		return 0;
	if (!k) {
		r->seq = d->hdr.gen;
		r->found = true;
	}
	r->copies[k] = mqfs_alloc_blocks_mem(d->nr);
	r->desc[k] = mqfs_alloc_blocks_mem(1);
	if (!r->copies[k] || !r->desc[k]) {
		free(r->copies[k]);
		free(r->desc[k]);
		return -ENOMEM;
	}
	r->ndesc++;
	memcpy(r->desc[k], d, MQFS_BLOCK_SIZE);
	err = jr_read_blocks(fs, pos + 1, r->copies[k], d->nr);
	if (err)
		return err;
	XXH3_64bits_update(st, d, MQFS_BLOCK_SIZE);
	XXH3_64bits_update(st, r->copies[k],
			   (size_t)d->nr * MQFS_BLOCK_SIZE);
	r->nr += d->nr;
	return jr_copies_ok(fs, r, d, r->copies[k]) ? 1 : 0;
}

static bool jr_commit_ok(struct mqfs_fs *fs, const struct jreplay *r,
			 unsigned pos, const void *blk, uint64_t body_csum)
{
	const struct mqfs_jcommit *c = blk;

	return !mqfs_blk_verify(c, MQFS_T_JCOMMIT, fs->journal_start + pos) &&
	       c->hdr.gen == r->seq && c->nr_blocks == r->nr &&
	       c->nr_desc == r->ndesc && c->body_csum == body_csum;
}

/* Read the transaction at journal_start: 1 if committed, 0 if not. */
static int jr_read(struct mqfs_fs *fs, struct jreplay *r, void *blk)
{
	XXH3_state_t *st = XXH3_createState();
	unsigned pos = 0;
	int ret;

	if (!st)
		return -ENOMEM;
	XXH3_64bits_reset(st);
	for (;;) {
		ret = jr_read_blocks(fs, pos, blk, 1);
		if (ret)
			break;
		if (r->ndesc && jr_commit_ok(fs, r, pos, blk,
					     XXH3_64bits_digest(st))) {
			ret = 1;
			break;
		}
		ret = jr_read_desc(fs, r, pos, blk, st);
		if (ret <= 0)
			break;
		pos += 1 + r->desc[r->ndesc - 1]->nr;
	}
	XXH3_freeState(st);
	return ret;
}

/*
 * Queue copy @i of descriptor @k for its home, unless it is corrupt:
 * that one is reported, the filesystem flagged, and the home keeps what
 * it has (as fsck does).
 */
static void jr_add_copy(struct mqfs_fs *fs, const struct jreplay *r,
			unsigned k, unsigned i, struct mqfs_bio_batch *batch)
{
	uint64_t home = r->desc[k]->home[i];
	void *blk = jnl_blk(r->copies[k], i);
	const char *why = jr_copy_why(fs, r, home, blk);

	if (why) {
		mqfs_fs_error(fs, home, "journal: transaction %" PRIu64 ": %s;"
			      " that block is not replayed", r->seq, why);
		return;
	}
	mqfs_batch_add(fs->q, batch, MQ_OP_WRITE, home, blk, 1,
		       MQ_REQ_META | MQ_REQ_SYNC);
}

/* Write every copy home, flush, and drop stale cached copies. */
static int jr_apply(struct mqfs_fs *fs, struct jreplay *r)
{
	struct mqfs_bio_batch batch;
	struct mq_plug plug;
	int err;

	mqfs_batch_init(&batch);
	mq_start_plug(&plug, r->nr);
	for (unsigned k = 0; k < r->ndesc; k++)
		for (unsigned i = 0; i < r->desc[k]->nr; i++)
			jr_add_copy(fs, r, k, i, &batch);
	err = mqfs_batch_wait(&batch);
	mq_finish_plug(&plug);
	if (!err)
		err = mqfs_flush_device(fs->q);
	if (err) {
		fprintf(stderr, "mqfs: journal: replay write failed: %d\n",
			err);
		return -EIO;
	}
	for (unsigned k = 0; k < r->ndesc && fs->bcache; k++)
		for (unsigned i = 0; i < r->desc[k]->nr; i++)
			mqfs_buf_forget(fs, r->desc[k]->home[i]);
	return 0;
}

static int jr_init(struct mqfs_fs *fs, struct jreplay *r)
{
	r->max_desc = jnl_ndesc(fs->journal_blocks);
	r->desc = calloc(r->max_desc, sizeof(*r->desc));
	r->copies = calloc(r->max_desc, sizeof(*r->copies));
	return r->desc && r->copies ? 0 : -ENOMEM;
}

static void jr_free(struct jreplay *r)
{
	for (unsigned k = 0; k < r->ndesc; k++) {
		free(r->desc[k]);
		free(r->copies[k]);
	}
	free(r->desc);
	free(r->copies);
}

int mqfs_journal_replay(struct mqfs_fs *fs, bool *replayed)
{
	struct jreplay r = { 0 };
	void *blk = mqfs_alloc_blocks_mem(1);
	uint64_t next;
	int err;

	*replayed = false;
	err = blk ? jr_init(fs, &r) : -ENOMEM;
	if (!err)
		err = jr_read(fs, &r, blk);
	if (err == 1 && mq_queue_read_only(fs->q)) {
		fprintf(stderr, "mqfs: journal: transaction %" PRIu64 " needs "
			"recovery, and the device is open read-only: mount it "
			"read-write once, or run fsck.mqfs -y\n", r.seq);
		err = -EROFS;
	} else if (err == 1) {
		err = jr_apply(fs, &r);
		*replayed = !err;
		if (!err)
			fprintf(stderr, "mqfs: journal: replayed transaction %"
				PRIu64 " (%u blocks)\n", r.seq, r.nr);
	} else if (!err && r.found) {
		fprintf(stderr, "mqfs: journal: transaction %" PRIu64
			" incomplete, not replayed\n", r.seq);
	}
	if (!err && fs->journal) {
		/* Never reuse a sequence the journal has seen. */
		next = MQ_MAX(mqfs_journal_sb_seq(fs), r.found ? r.seq + 1 : 1);
		mqfs_journal_raise_seq(fs, next);
	}
	jr_free(&r);
	free(blk);
	return err;
}
