// SPDX-License-Identifier: MIT
/*
 * fsck.c - the filesystem checker: driver, the journal (pass 2; pass 1
 * is fsck_super.c, passes 3 and 7 fsck_ag.c) and the final write-back;
 * the passes' reporting and block access are fsck_io.c.
 *
 * fsck reads raw blocks through the queue and never mounts: a mount
 * trusts what it reads, fsck must survive anything.  Passes:
 *   1 superblock (or its backup) and geometry
 *   2 journal: a committed transaction is replayed (repair modes) or
 *     overlaid in memory (-n), so both check the state a mount would see
 *   3 AG headers and bitmaps: checksums and fields (fsck_ag.c)
 *   4 inodes and extent trees (fsck_inode.c)
 *   5 directories and links, 6 the orphan list (fsck_dir.c)
 *   7 the computed bitmaps and counts against the disk (fsck_ag.c)
 * Repairs go to in-memory copies of the blocks (fsck_i.h) and reach the
 * device at the end, sealed, only with -y, or with -p when every problem
 * found is one -p may fix.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <xxhash.h>

#include "fsck_i.h"

/* ---- writing the changed blocks back -------------------------------- */

static int fk_cmp_blk(const void *a, const void *b)
{
	uint64_t x = (*(struct fk_blk *const *)a)->blocknr;
	uint64_t y = (*(struct fk_blk *const *)b)->blocknr;

	return x < y ? -1 : x > y;
}

/* Write every changed block in block order, then flush. */
static int fk_write_changed(struct fsck *f)
{
	struct fk_blk **v;
	struct mqfs_bio_batch batch;
	size_t n = 0;
	int err;

	if (!f->nchanged)
		return 0;
	v = malloc(f->nchanged * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < f->nhash; i++)
		for (struct fk_blk *b = f->hash[i]; b; b = b->next)
			v[n++] = b;
	qsort(v, n, sizeof(*v), fk_cmp_blk);
	for (size_t i = 0; i < n; ) {
		struct mq_plug plug;
		size_t end = i + 256 < n ? i + 256 : n;

		mqfs_batch_init(&batch);
		mq_start_plug(&plug, 32);
		for (; i < end; i++)
			mqfs_batch_add(f->q, &batch, MQ_OP_WRITE, v[i]->blocknr,
				       v[i]->data, 1, MQ_REQ_META);
		mq_finish_plug(&plug);
		err = mqfs_batch_wait(&batch);
		if (err) {
			free(v);
			return err;
		}
	}
	free(v);
	return mqfs_flush_device(f->q);
}

static void fk_drop_changed(struct fsck *f)
{
	for (size_t i = 0; f->hash && i < f->nhash; i++) {
		while (f->hash[i]) {
			struct fk_blk *b = f->hash[i];

			f->hash[i] = b->next;
			free(b->data);
			free(b);
		}
	}
	f->nchanged = 0;
}

/* ---- pass 2: the journal ----------------------------------------------- */

/* By home block, then journal order (the dedup keeps the last). */
static int fk_cmp_jcopy(const void *a, const void *b)
{
	const struct fk_jcopy *x = a, *y = b;

	if (x->home != y->home)
		return x->home < y->home ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static void fk_journal_free(struct fsck *f)
{
	for (size_t i = 0; i < f->njc; i++)
		free(f->jc[i].data);
	free(f->jc);
	f->jc = NULL;
	f->njc = 0;
}

struct fk_jscan {
	uint64_t seq;
	uint64_t pos;			/* next journal block */
	uint64_t end;
	uint32_t ndesc, ncopies;
	XXH3_state_t *hash;
};

/* Read descriptor @d's copies (one I/O) and keep them. */
static int fk_journal_copies(struct fsck *f, struct fk_jscan *s,
			     const struct mqfs_jdesc *d)
{
	struct fk_jcopy *jc;
	uint8_t *area;
	int err;

	if (!d->nr || d->nr > MQFS_JDESC_MAX || s->pos + 1 + d->nr >= s->end)
		return -EUCLEAN;
	jc = realloc(f->jc, (f->njc + d->nr) * sizeof(*jc));
	if (!jc)
		return -ENOMEM;
	f->jc = jc;
	area = mqfs_alloc_blocks_mem(d->nr);
	if (!area)
		return -ENOMEM;
	err = mqfs_bio_sync(f->q, MQ_OP_READ, s->pos + 1, area, d->nr,
			    MQ_REQ_META);
	for (uint32_t i = 0; !err && i < d->nr; i++) {
		const uint8_t *src = area + (size_t)i * MQFS_BLOCK_SIZE;
		const char *why;
		uint8_t *data;

		why = mqfs_jcopy_why_bad(f->sb, f->dev_blocks, s->seq,
					 d->home[i], src);
		if (why && !mqfs_jcopy_corrupt(why)) {
			err = -EUCLEAN;
			break;
		}
		if (why) {
			/* Replay leaves it out too (journal.c). */
			mqfs_fk_problem(f, FK_UNSAFE, "ignored", "journal: "
					"transaction %llu: block %llu: %s",
					(unsigned long long)s->seq,
					(unsigned long long)d->home[i], why);
			continue;
		}
		data = mqfs_alloc_blocks_mem(1);
		if (!data) {
			err = -ENOMEM;
			break;
		}
		memcpy(data, src, MQFS_BLOCK_SIZE);
		f->jc[f->njc] = (struct fk_jcopy){ d->home[i], data, f->njc };
		f->njc++;
	}
	if (!err)
		XXH3_64bits_update(s->hash, area,
				   (size_t)d->nr * MQFS_BLOCK_SIZE);
	free(area);
	s->ncopies += d->nr;
	s->pos += 1 + d->nr;
	return err;
}

/* Does the commit at s->pos close the transaction we read? */
static bool fk_journal_commit_ok(struct fk_jscan *s, const void *blk)
{
	const struct mqfs_jcommit *c = blk;

	if (mqfs_blk_verify(blk, MQFS_T_JCOMMIT, s->pos) || c->hdr.gen != s->seq)
		return false;
	return c->nr_blocks == s->ncopies && c->nr_desc == s->ndesc &&
	       c->body_csum == XXH3_64bits_digest(s->hash);
}

/*
 * Read the transaction at journal_start into f->jc.  1: a complete,
 * committed transaction; 0: none; -errno.
 */
static int fk_journal_read(struct fsck *f, struct fk_jscan *s, uint8_t *blk)
{
	const struct mqfs_jdesc *d = (const void *)blk;
	int err;

	for (;;) {
		err = mqfs_bio_sync(f->q, MQ_OP_READ, s->pos, blk, 1,
				    MQ_REQ_META);
		if (err)
			return err;
		if (s->ndesc && fk_journal_commit_ok(s, blk))
			return 1;
		if (mqfs_blk_verify(blk, MQFS_T_JDESC, s->pos) ||
		    d->hdr.gen != (s->ndesc ? s->seq : d->hdr.gen) ||
		    d->index != s->ndesc) {
			if (s->ndesc)
				mqfs_fk_problem(f, FK_NOTE, NULL, "journal: "
						"transaction %llu has no valid "
						"commit; ignored",
						(unsigned long long)s->seq);
			return 0;
		}
		s->seq = d->hdr.gen;
		s->ndesc++;
		XXH3_64bits_update(s->hash, blk, MQFS_BLOCK_SIZE);
		err = fk_journal_copies(f, s, d);
		if (err == -EUCLEAN)
			mqfs_fk_problem(f, FK_NOTE, NULL, "journal: "
					"transaction %llu is incomplete; "
					"ignored", (unsigned long long)s->seq);
		if (err)
			return err == -EUCLEAN ? 0 : err;
	}
}

/* Copy the transaction home, flush, then invalidate the journal. */
static int fk_journal_replay(struct fsck *f)
{
	struct mqfs_bio_batch batch;
	struct mq_plug plug;
	uint8_t *zero;
	int err;

	mqfs_batch_init(&batch);
	mq_start_plug(&plug, 32);
	for (size_t i = 0; i < f->njc; i++)
		mqfs_batch_add(f->q, &batch, MQ_OP_WRITE, f->jc[i].home,
			       f->jc[i].data, 1, MQ_REQ_META);
	mq_finish_plug(&plug);
	err = mqfs_batch_wait(&batch);
	if (!err)
		err = mqfs_flush_device(f->q);
	zero = mqfs_alloc_blocks_mem(1);
	if (!zero)
		return -ENOMEM;
	/* Only now: a crash before this point replays it again. */
	if (!err)
		err = mqfs_bio_sync(f->q, MQ_OP_WRITE, f->l.journal_start,
				    zero, 1, MQ_REQ_META);
	free(zero);
	if (!err)
		err = mqfs_flush_device(f->q);
	return err;
}

/* Later copies of the same home block replace earlier ones. */
static void fk_journal_dedup(struct fsck *f)
{
	size_t n = 0;

	qsort(f->jc, f->njc, sizeof(*f->jc), fk_cmp_jcopy);
	for (size_t i = 0; i < f->njc; i++) {
		if (n && f->jc[n - 1].home == f->jc[i].home) {
			free(f->jc[n - 1].data);
			f->jc[n - 1] = f->jc[i];
		} else {
			f->jc[n++] = f->jc[i];
		}
	}
	f->njc = n;
}

static int fk_pass_journal(struct fsck *f)
{
	struct fk_jscan s = { .pos = f->l.journal_start,
			      .end = f->l.journal_start + f->l.journal_blocks };
	uint8_t *blk = mqfs_alloc_blocks_mem(1);
	int ret;

	mqfs_fk_verbose(f, "Pass 2: journal");
	s.hash = XXH3_createState();
	if (!blk || !s.hash) {
		free(blk);
		XXH3_freeState(s.hash);
		return -ENOMEM;
	}
	XXH3_64bits_reset(s.hash);
	ret = fk_journal_read(f, &s, blk);
	free(blk);
	XXH3_freeState(s.hash);
	if (ret <= 0) {
		fk_journal_free(f);
		return ret;
	}
	fk_journal_dedup(f);
	f->journal_live = true;
	f->jseq = s.seq;
	printf("journal: transaction %llu (%zu blocks) needs recovery%s\n",
	       (unsigned long long)s.seq, f->njc,
	       f->repair ? "; replayed" : "; checking as if replayed");
	if (f->repair) {
		ret = fk_journal_replay(f);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Re-read the superblock through the journal overlay.  The copy passed
 * mqfs_jcopy_why_bad() (fk_journal_copies): it is this filesystem's.
 */
static int fk_sb_after_journal(struct fsck *f)
{
	const struct fk_jcopy *j = mqfs_fk_jfind(f, 0);

	if (j)
		memcpy(f->sb, j->data, MQFS_BLOCK_SIZE);
	return 0;
}

/* ---- the end: write, result ------------------------------------------- */

static uint32_t fk_target_state(uint32_t state, bool clean)
{
	if (clean)
		return (state & ~MQFS_STATE_ERRORS) | MQFS_STATE_CLEAN;
	return (state & ~MQFS_STATE_CLEAN) | MQFS_STATE_ERRORS;
}

/* Seal and write the superblock; @backup: its copies too (a -p run that
 * changes nothing else leaves them alone). */
static int fk_write_super(struct fsck *f, bool clean, bool backup)
{
	struct mqfs_super *sb = f->sb;
	int err = 0;

	sb->state = fk_target_state(sb->state, clean);
	if (f->journal_live && sb->journal_seq <= f->jseq)
		sb->journal_seq = f->jseq + 1;
	sb->write_time = (uint64_t)time(NULL);
	mqfs_blk_seal(sb, MQFS_T_SUPER, 0, sb->hdr.gen);
	if (backup) {
		err = mqfs_super_write_copies(f->q, sb);
		if (!err)
			err = mqfs_flush_device(f->q);
	}
	/* The primary last, after everything it describes is stable. */
	if (!err)
		err = mqfs_bio_sync(f->q, MQ_OP_WRITE, 0, sb, 1,
				    MQ_REQ_META | MQ_REQ_FUA);
	if (!err)
		err = mqfs_flush_device(f->q);
	return err;
}

/* In a repair mode: write what may be written.  Returns the result bits. */
static int fk_commit(struct fsck *f)
{
	const struct mqfs_super *orig = (const void *)f->sb_orig;
	bool blocked = f->o.mode == MQFS_FSCK_PREEN && f->unsafe;
	bool clean = !f->uncorrected && !blocked;
	int err = 0;

	if (blocked) {
		/* Keep the disk as it was, but tell the next mount (unless
		 * block 0 itself is what -p may not touch). */
		fk_drop_changed(f);
		memcpy(f->sb, f->sb_orig, MQFS_BLOCK_SIZE);
		if (!f->sb_restored)
			err = fk_write_super(f, false, false);
		printf("UNEXPECTED INCONSISTENCY: %u problem%s need%s "
		       "fsck.mqfs -y; nothing was changed\n", f->unsafe,
		       f->unsafe == 1 ? "" : "s", f->unsafe == 1 ? "s" : "");
		return err ? err : MQFS_FSCK_UNCORRECTED;
	}
	err = fk_write_changed(f);
	if (err)
		return err;
	if (f->sb_changed || f->nchanged || f->journal_live ||
	    orig->state != fk_target_state(orig->state, clean) ||
	    orig->orphan_head != f->sb->orphan_head) {
		err = fk_write_super(f, clean, true);
		if (err)
			return err;
	}
	return (f->problems > f->uncorrected ? MQFS_FSCK_FIXED : 0) |
	       (f->uncorrected ? MQFS_FSCK_UNCORRECTED : 0);
}

static int fk_finish(struct fsck *f)
{
	uint64_t used_inodes = 0, used_blocks = 0;
	int ret;

	for (uint64_t i = 1; i <= f->inode_count; i++)
		used_inodes += f->ino[i].flags & FK_I_LIVE ? 1 : 0;
	for (uint64_t w = 0; w < (f->l.block_count + 63) / 64; w++)
		used_blocks += (uint64_t)__builtin_popcountll(f->used[w]);
	if (f->o.mode == MQFS_FSCK_NO)
		ret = f->problems ? MQFS_FSCK_UNCORRECTED : 0;
	else
		ret = fk_commit(f);
	if (ret < 0)
		return ret;
	printf("%s, %llu/%llu inodes, %llu/%llu blocks\n",
	       !f->problems ? "clean" : ret & MQFS_FSCK_UNCORRECTED ?
	       "errors left" : "errors fixed",
	       (unsigned long long)used_inodes,
	       (unsigned long long)f->inode_count,
	       (unsigned long long)used_blocks,
	       (unsigned long long)f->l.block_count);
	if (f->problems && f->o.mode == MQFS_FSCK_NO)
		printf("%u problem%s found; run fsck.mqfs -y to repair\n",
		       f->problems, f->problems == 1 ? "" : "s");
	return ret;
}

/* ---- driver ------------------------------------------------------------ */

static int fk_alloc_state(struct fsck *f)
{
	uint64_t words = (f->l.block_count + 63) / 64;

	f->used = calloc(words, sizeof(*f->used));
	f->touched = calloc(words, sizeof(*f->touched));
	f->agd = calloc(f->l.ag_count, sizeof(*f->agd));
	f->ino = calloc(f->inode_count + 1, sizeof(*f->ino));
	f->ag_bad = calloc(f->l.ag_count, 1);
	if (!f->used || !f->touched || !f->agd || !f->ino || !f->ag_bad) {
		fprintf(stderr, "fsck.mqfs: out of memory for %llu blocks and "
			"%llu inodes\n", (unsigned long long)f->l.block_count,
			(unsigned long long)f->inode_count);
		return -ENOMEM;
	}
	return 0;
}

static void fk_free(struct fsck *f)
{
	fk_drop_changed(f);
	fk_journal_free(f);
	free(f->hash);
	free(f->used);
	free(f->touched);
	free(f->agd);
	free(f->ino);
	free(f->ag_bad);
	free(f->aginit);
	free(f->dirs);
	free(f->dups);
	free(f->sb);
	free(f->sb_orig);
}

/* CLEAN, no error recorded, nothing in the journal: nothing to do. */
static bool fk_skip(struct fsck *f)
{
	const struct mqfs_super *sb = f->sb;

	if (f->o.force || f->problems || f->journal_live ||
	    (sb->state & (MQFS_STATE_CLEAN | MQFS_STATE_ERRORS)) !=
	    MQFS_STATE_CLEAN)
		return false;
	printf("clean, %llu/%llu inodes, %llu/%llu blocks\n",
	       (unsigned long long)(f->inode_count - sb->free_inodes),
	       (unsigned long long)f->inode_count,
	       (unsigned long long)(f->l.block_count - sb->free_blocks),
	       (unsigned long long)f->l.block_count);
	return true;
}

static int fk_run(struct fsck *f)
{
	int err = mqfs_fk_pass_super(f);

	if (!err)
		err = fk_pass_journal(f);
	if (!err)
		err = fk_sb_after_journal(f);
	if (err)
		return err;
	memcpy(f->sb_orig, f->sb, MQFS_BLOCK_SIZE);
	if (fk_skip(f))
		return 0;
	err = fk_alloc_state(f);
	if (!err)
		err = mqfs_fk_pass_ags(f);
	if (!err)
		err = mqfs_fk_pass_inodes(f);
	if (!err)
		err = mqfs_fk_fix_dups(f);
	if (!err)
		err = mqfs_fk_pass_dirs(f);
	if (!err)
		err = mqfs_fk_pass_orphans(f);
	if (!err)
		err = mqfs_fk_check_links(f);
	if (!err)
		err = mqfs_fk_pass_bitmaps(f);
	return err ? err : fk_finish(f);
}

int mqfs_fsck(struct mq_queue *q, const struct mqfs_fsck_opts *o)
{
	struct fsck f = { .q = q, .o = *o, .pct = -1 };
	int ret;

	f.repair = o->mode == MQFS_FSCK_YES || o->mode == MQFS_FSCK_PREEN;
	f.dev_blocks = mq_queue_size_bytes(q) / MQFS_BLOCK_SIZE;
	if (f.dev_blocks < MQFS_MIN_BLOCKS ||
	    mq_queue_logical_block_size(q) > MQFS_BLOCK_SIZE) {
		fprintf(stderr, "fsck.mqfs: the device is too small or its "
			"sectors are larger than 4096 bytes\n");
		return MQFS_FSCK_ERROR;
	}
	f.l.block_count = f.dev_blocks;
	f.nhash = 1u << FK_HASH_BITS;
	f.hash = calloc(f.nhash, sizeof(*f.hash));
	f.sb = mqfs_alloc_blocks_mem(1);
	f.sb_orig = mqfs_alloc_blocks_mem(1);
	ret = f.hash && f.sb && f.sb_orig ? fk_run(&f) : -ENOMEM;
	fk_free(&f);
	if (ret < 0) {
		if (ret == -ENOMEM)
			fprintf(stderr, "fsck.mqfs: out of memory\n");
		return MQFS_FSCK_ERROR;
	}
	fflush(stdout);
	return ret;
}
