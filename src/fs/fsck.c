// SPDX-License-Identifier: MIT
/*
 * fsck.c - the filesystem checker: driver, block access, journal, AG
 * headers, bitmaps and counts (passes 2, 3 and 7; pass 1 is
 * fsck_super.c).
 *
 * fsck reads raw blocks through the queue and never mounts: a mount
 * trusts what it reads, fsck must survive anything.  Passes:
 *   1 superblock (or its backup) and geometry
 *   2 journal: a committed transaction is replayed (repair modes) or
 *     overlaid in memory (-n), so both check the state a mount would see
 *   3 AG headers and bitmaps: checksums and fields
 *   4 inodes and extent trees (fsck_inode.c)
 *   5 directories and links, 6 the orphan list (fsck_dir.c)
 *   7 the computed bitmaps and counts against the disk
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

#define FK_HASH_BITS	14u

/* ---- reporting ------------------------------------------------------- */

void fk_problem(struct fsck *f, enum fk_kind kind, const char *fix,
		const char *fmt, ...)
{
	/* -p learns only at the end whether it may write: no "fixed" yet. */
	bool fixing = f->o.mode == MQFS_FSCK_YES;
	va_list ap;

	switch (kind) {
	case FK_NOTE:
		f->notes++;
		if (!f->o.verbose)
			return;
		break;
	case FK_SAFE:
		f->problems++;
		break;
	case FK_UNSAFE:
		f->problems++;
		f->unsafe++;
		break;
	case FK_BAD:
		f->problems++;
		f->uncorrected++;
		break;
	}
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	if (kind == FK_BAD)
		fputs(" (cannot be fixed)", stdout);
	else if (kind != FK_NOTE && fixing && fix && *fix)
		printf("; %s", fix);
	putchar('\n');
}

void fk_verbose(struct fsck *f, const char *fmt, ...)
{
	va_list ap;

	if (!f->o.verbose)
		return;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

void fk_progress_pass(struct fsck *f, int base, int span)
{
	f->pbase = base;
	f->pspan = span;
	fk_progress(f, 0, 1);
}

void fk_progress(struct fsck *f, uint64_t done, uint64_t total)
{
	int pct;

	if (!f->o.progress || !total)
		return;
	pct = f->pbase + (int)((double)f->pspan * (double)done /
			       (double)total);
	if (pct <= f->pct)
		return;
	f->pct = pct;
	fprintf(stderr, "fsck.mqfs: %d%%\n", pct);
}

/* ---- block access ------------------------------------------------------ */

bool fk_all_zero(const void *buf, size_t len)
{
	const uint64_t *p = buf;

	for (size_t i = 0; i < len / 8; i++)
		if (p[i])
			return false;
	return true;
}

static struct fk_blk **fk_bucket(struct fsck *f, uint64_t blk)
{
	uint64_t h = blk * 0x9E3779B97F4A7C15ull;

	return &f->hash[h >> (64 - FK_HASH_BITS)];
}

static struct fk_blk *fk_changed(struct fsck *f, uint64_t blk)
{
	struct fk_blk *b;

	for (b = *fk_bucket(f, blk); b; b = b->next)
		if (b->blocknr == blk)
			return b;
	return NULL;
}

static const struct fk_jcopy *fk_jfind(const struct fsck *f, uint64_t blk)
{
	size_t lo = 0, hi = f->njc;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (f->jc[mid].home == blk)
			return &f->jc[mid];
		if (f->jc[mid].home < blk)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int fk_read(struct fsck *f, uint64_t blk, void *buf, uint32_t n)
{
	int err;

	if (!n || blk >= f->l.block_count || n > f->l.block_count - blk)
		return -EINVAL;
	err = mqfs_bio_sync(f->q, MQ_OP_READ, blk, buf, n, MQ_REQ_META);
	if (err) {
		fprintf(stderr, "fsck.mqfs: read error at block %llu: %s\n",
			(unsigned long long)blk, strerror(-err));
		return err;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint8_t *dst = (uint8_t *)buf + (size_t)i * MQFS_BLOCK_SIZE;
		const struct fk_blk *b = fk_changed(f, blk + i);
		const struct fk_jcopy *j;

		if (b)
			memcpy(dst, b->data, MQFS_BLOCK_SIZE);
		else if ((j = fk_jfind(f, blk + i)))
			memcpy(dst, j->data, MQFS_BLOCK_SIZE);
	}
	return 0;
}

int fk_read_meta(struct fsck *f, uint64_t blk, unsigned type, void *buf)
{
	int err = fk_read(f, blk, buf, 1);

	return err ? err : mqfs_blk_verify(buf, type, blk);
}

int fk_write(struct fsck *f, uint64_t blk, void *buf, unsigned type)
{
	struct fk_blk *b = fk_changed(f, blk);

	if (blk >= f->l.block_count)
		return -EINVAL;
	if (type)
		mqfs_blk_seal(buf, type, blk, f->gen);
	if (!b) {
		b = calloc(1, sizeof(*b));
		if (!b)
			return -ENOMEM;
		b->data = mqfs_alloc_blocks_mem(1);
		if (!b->data) {
			free(b);
			return -ENOMEM;
		}
		b->blocknr = blk;
		b->next = *fk_bucket(f, blk);
		*fk_bucket(f, blk) = b;
		f->nchanged++;
	}
	memcpy(b->data, buf, MQFS_BLOCK_SIZE);
	return 0;
}

void fk_block_change(struct fsck *f, uint64_t blk, bool used)
{
	if (fk_used(f, blk) == used)
		return;
	fk_set_used(f, blk, used);
	f->touched[blk / 64] |= 1ull << (blk % 64);
	f->agd[blk / f->l.ag_blocks].free_blocks += used ? -1 : 1;
}

void fk_inode_change(struct fsck *f, uint64_t ino, bool live, bool dir)
{
	struct fk_ino *fi = &f->ino[ino];
	struct fk_agdelta *d = &f->agd[fk_ino_ag(f, ino)];

	if (!!(fi->flags & FK_I_LIVE) == live)
		return;
	if (live) {
		fi->flags |= FK_I_LIVE | FK_I_TOUCHED | (dir ? FK_I_DIR : 0);
		d->free_inodes--;
		d->dirs += dir;
	} else {
		d->free_inodes++;
		d->dirs -= !!(fi->flags & FK_I_DIR);
		fi->flags = FK_I_TOUCHED;
	}
}

uint64_t fk_itable_blk(const struct fsck *f, uint64_t ino)
{
	uint32_t ag = fk_ino_ag(f, ino);
	uint64_t idx = (ino - 1) % f->l.inodes_per_ag;

	return mqfs_ag_meta_start(&f->l, ag) + 3 + idx / MQFS_INODES_PER_BLOCK;
}

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
			fk_problem(f, FK_UNSAFE, "ignored", "journal: "
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
				fk_problem(f, FK_NOTE, NULL, "journal: "
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
			fk_problem(f, FK_NOTE, NULL, "journal: transaction "
				   "%llu is incomplete; ignored",
				   (unsigned long long)s->seq);
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

	fk_verbose(f, "Pass 2: journal");
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
	const struct fk_jcopy *j = fk_jfind(f, 0);

	if (j)
		memcpy(f->sb, j->data, MQFS_BLOCK_SIZE);
	return 0;
}

/* ---- pass 3: AG headers and bitmaps ----------------------------------- */

static uint32_t fk_ag_size(const struct fsck *f, uint32_t ag)
{
	uint64_t first = (uint64_t)ag * f->l.ag_blocks;
	uint64_t end = first + f->l.ag_blocks;

	return (uint32_t)((end < f->l.block_count ? end : f->l.block_count) -
			  first);
}

/* Why the AG header in @buf is wrong for AG @ag, or NULL. */
static const char *fk_ag_header_bad(const struct fsck *f, uint32_t ag,
				    const struct mqfs_ag *h)
{
	uint64_t meta = mqfs_ag_meta_start(&f->l, ag);

	if (h->ag_index != ag || h->block_count != fk_ag_size(f, ag) ||
	    h->first_block != (uint64_t)ag * f->l.ag_blocks ||
	    h->bbitmap_blk != meta + 1 || h->ibitmap_blk != meta + 2 ||
	    h->itable_blk != meta + 3)
		return "fields do not match the geometry";
	return NULL;
}

static void fk_mark_range(struct fsck *f, uint64_t from, uint64_t n)
{
	for (uint64_t b = from; b < from + n; b++)
		fk_set_used(f, b, true);
}

static int fk_check_ag(struct fsck *f, uint32_t ag, uint8_t *buf)
{
	uint64_t meta = mqfs_ag_meta_start(&f->l, ag);
	const char *why = NULL;
	int err;

	fk_mark_range(f, meta, 3 + (uint64_t)f->l.itable_blocks);
	err = fk_read_meta(f, meta, MQFS_T_AG, buf);
	if (err == -EUCLEAN)
		why = "bad checksum or header";
	else if (err)
		return err;
	else
		why = fk_ag_header_bad(f, ag, (const void *)buf);
	if (why) {
		f->ag_bad[ag] |= FK_AG_HDR;
		fk_problem(f, FK_SAFE, "rebuilt", "AG %u header (block %llu): "
			   "%s", ag, (unsigned long long)meta, why);
	}
	for (unsigned i = 1; i <= 2; i++) {
		unsigned type = i == 1 ? MQFS_T_BBITMAP : MQFS_T_IBITMAP;

		err = fk_read_meta(f, meta + i, type, buf);
		if (err && err != -EUCLEAN)
			return err;
		if (!err)
			continue;
		f->ag_bad[ag] |= i == 1 ? FK_AG_BBITMAP : FK_AG_IBITMAP;
		fk_problem(f, FK_SAFE, "rebuilt", "AG %u %s bitmap (block "
			   "%llu): bad checksum or header", ag,
			   i == 1 ? "block" : "inode",
			   (unsigned long long)(meta + i));
	}
	return 0;
}

static int fk_pass_ags(struct fsck *f)
{
	uint8_t *buf = mqfs_alloc_blocks_mem(1);
	int err = 0;

	if (!buf)
		return -ENOMEM;
	fk_verbose(f, "Pass 3: allocation groups");
	fk_progress_pass(f, 0, 5);
	/* Superblock, journal, the copies: never data. */
	fk_mark_range(f, 0, 1 + (uint64_t)f->l.journal_blocks);
	{
		uint64_t at[MQFS_SB_COPIES_MAX];
		unsigned n = mqfs_sb_copies(f->sb, at, MQ_ARRAY_SIZE(at));

		for (unsigned i = 0; i < n; i++)
			fk_set_used(f, at[i], true);
	}
	for (uint32_t ag = 0; ag < f->l.ag_count && !err; ag++) {
		err = fk_check_ag(f, ag, buf);
		fk_progress(f, ag + 1, f->l.ag_count);
	}
	free(buf);
	return err;
}

/* ---- pass 7: bitmaps and counts ----------------------------------------- */

static void fk_bit_set(uint8_t *bits, uint32_t i)
{
	bits[i / 8] |= (uint8_t)(1u << (i % 8));
}

static bool fk_bit(const uint8_t *bits, uint32_t i)
{
	return (bits[i / 8] >> (i % 8)) & 1;
}

struct fk_bitdiff {
	uint32_t missing, extra;	/* set in expected only / disk only */
	uint32_t first_missing, first_extra;
};

/* Differences of @want and @disk, except bits set in @ignore. */
static void fk_bits_compare(const uint8_t *want, const uint8_t *disk,
			    const uint8_t *ignore, uint32_t nbits,
			    struct fk_bitdiff *d)
{
	memset(d, 0, sizeof(*d));
	for (uint32_t i = 0; i < nbits; i++) {
		bool w = fk_bit(want, i), h = fk_bit(disk, i);

		if (w == h || fk_bit(ignore, i))
			continue;
		if (w && !d->missing++)
			d->first_missing = i;
		if (!w && !d->extra++)
			d->first_extra = i;
	}
}

/*
 * Compare the bitmap block @blk (whose expected payload is in @want)
 * with the disk and rewrite it when it differs.  Bits set in @ignore
 * were changed by fsck's own repairs (already reported).  @what names
 * the objects ("blocks"/"inodes"), @base is the number of bit 0.
 */
static int fk_sync_bitmap(struct fsck *f, uint32_t ag, uint64_t blk,
			  unsigned type, uint8_t *want, uint8_t *disk,
			  const uint8_t *ignore, bool bad, const char *what,
			  uint64_t base)
{
	struct fk_bitdiff d;
	int err;

	if (!bad) {
		err = fk_read(f, blk, disk, 1);
		if (err)
			return err;
		if (!memcmp(want + MQFS_HDR_SIZE, disk + MQFS_HDR_SIZE,
			    MQFS_PAYLOAD))
			return 0;
		fk_bits_compare(want + MQFS_HDR_SIZE, disk + MQFS_HDR_SIZE,
				ignore, MQFS_BITMAP_BITS, &d);
		if (d.missing)
			fk_problem(f, FK_SAFE, "fixed", "AG %u %s bitmap (block "
				   "%llu): %u %s in use marked free (first "
				   "%llu)", ag, type == MQFS_T_BBITMAP ?
				   "block" : "inode", (unsigned long long)blk,
				   d.missing, what,
				   (unsigned long long)(base + d.first_missing));
		if (d.extra)
			fk_problem(f, FK_SAFE, "fixed", "AG %u %s bitmap (block "
				   "%llu): %u free %s marked in use (first "
				   "%llu)", ag, type == MQFS_T_BBITMAP ?
				   "block" : "inode", (unsigned long long)blk,
				   d.extra, what,
				   (unsigned long long)(base + d.first_extra));
	}
	return fk_write(f, blk, want, type);
}

struct fk_agcount {
	uint32_t free_blocks, free_inodes, dirs;
};

static int fk_sync_block_bitmap(struct fsck *f, uint32_t ag, uint8_t *want,
				uint8_t *disk, uint8_t *ignore,
				struct fk_agcount *c)
{
	uint64_t first = (uint64_t)ag * f->l.ag_blocks;
	uint32_t size = fk_ag_size(f, ag);
	uint8_t *bits = want + MQFS_HDR_SIZE;

	memset(want, 0, MQFS_BLOCK_SIZE);
	memset(ignore, 0, MQFS_PAYLOAD);
	c->free_blocks = 0;
	for (uint32_t i = 0; i < MQFS_BITMAP_BITS; i++) {
		uint64_t b = first + i;

		if (i >= size || fk_used(f, b))
			fk_bit_set(bits, i);
		else
			c->free_blocks++;
		if (i < size && (f->touched[b / 64] >> (b % 64)) & 1)
			fk_bit_set(ignore, i);
	}
	return fk_sync_bitmap(f, ag, mqfs_ag_meta_start(&f->l, ag) + 1,
			      MQFS_T_BBITMAP, want, disk, ignore,
			      f->ag_bad[ag] & FK_AG_BBITMAP, "blocks", first);
}

static int fk_sync_inode_bitmap(struct fsck *f, uint32_t ag, uint8_t *want,
				uint8_t *disk, uint8_t *ignore,
				struct fk_agcount *c)
{
	uint64_t base = (uint64_t)ag * f->l.inodes_per_ag + 1;
	uint8_t *bits = want + MQFS_HDR_SIZE;

	memset(want, 0, MQFS_BLOCK_SIZE);
	memset(ignore, 0, MQFS_PAYLOAD);
	c->free_inodes = c->dirs = 0;
	for (uint32_t i = 0; i < MQFS_BITMAP_BITS; i++) {
		const struct fk_ino *fi = &f->ino[base + i];

		if (i >= f->l.inodes_per_ag) {
			fk_bit_set(bits, i);
			continue;
		}
		if (fi->flags & FK_I_LIVE)
			fk_bit_set(bits, i);
		else
			c->free_inodes++;
		if ((fi->flags & (FK_I_LIVE | FK_I_DIR)) ==
		    (FK_I_LIVE | FK_I_DIR))
			c->dirs++;
		if (fi->flags & FK_I_TOUCHED)
			fk_bit_set(ignore, i);
	}
	return fk_sync_bitmap(f, ag, mqfs_ag_meta_start(&f->l, ag) + 2,
			      MQFS_T_IBITMAP, want, disk, ignore,
			      f->ag_bad[ag] & FK_AG_IBITMAP, "inodes", base);
}

static int fk_sync_ag_header(struct fsck *f, uint32_t ag, uint8_t *buf,
			     const struct fk_agcount *c)
{
	uint64_t meta = mqfs_ag_meta_start(&f->l, ag);
	struct mqfs_ag *h = (struct mqfs_ag *)buf;
	int err = fk_read(f, meta, buf, 1);

	if (err)
		return err;
	if (!(f->ag_bad[ag] & FK_AG_HDR)) {
		const struct fk_agdelta *d = &f->agd[ag];

		if (h->free_blocks == c->free_blocks &&
		    h->free_inodes == c->free_inodes && h->dirs == c->dirs)
			return 0;
		/* Off only by what fsck freed and allocated: no report. */
		if (h->free_blocks + d->free_blocks != c->free_blocks ||
		    h->free_inodes + d->free_inodes != c->free_inodes ||
		    h->dirs + d->dirs != c->dirs)
			fk_problem(f, FK_SAFE, "fixed", "AG %u header (block "
				   "%llu): free blocks %u, free inodes %u, "
				   "directories %u; counted %u, %u, %u", ag,
				   (unsigned long long)meta, h->free_blocks,
				   h->free_inodes, h->dirs, c->free_blocks -
				   (uint32_t)d->free_blocks, c->free_inodes -
				   (uint32_t)d->free_inodes,
				   c->dirs - (uint32_t)d->dirs);
	}
	memset(buf, 0, MQFS_BLOCK_SIZE);
	h->ag_index = ag;
	h->block_count = fk_ag_size(f, ag);
	h->first_block = (uint64_t)ag * f->l.ag_blocks;
	h->bbitmap_blk = meta + 1;
	h->ibitmap_blk = meta + 2;
	h->itable_blk = meta + 3;
	h->free_blocks = c->free_blocks;
	h->free_inodes = c->free_inodes;
	h->dirs = c->dirs;
	return fk_write(f, meta, buf, MQFS_T_AG);
}

static int fk_pass_bitmaps(struct fsck *f)
{
	uint8_t *want = mqfs_alloc_blocks_mem(3);
	uint8_t *disk = want + MQFS_BLOCK_SIZE, *ignore = disk + MQFS_BLOCK_SIZE;
	uint64_t free_blocks = 0, free_inodes = 0;
	int64_t dblocks = 0, dinodes = 0;
	struct mqfs_super *sb = f->sb;
	int err = 0;

	if (!want)
		return -ENOMEM;
	fk_verbose(f, "Pass 7: bitmaps and counts");
	fk_progress_pass(f, 95, 5);
	for (uint32_t ag = 0; ag < f->l.ag_count && !err; ag++) {
		struct fk_agcount c = { 0 };

		err = fk_sync_block_bitmap(f, ag, want, disk, ignore, &c);
		if (!err)
			err = fk_sync_inode_bitmap(f, ag, want, disk, ignore,
						   &c);
		if (!err)
			err = fk_sync_ag_header(f, ag, want, &c);
		free_blocks += c.free_blocks;
		free_inodes += c.free_inodes;
		dblocks += f->agd[ag].free_blocks;
		dinodes += f->agd[ag].free_inodes;
		fk_progress(f, ag + 1, f->l.ag_count);
	}
	free(want);
	if (err)
		return err;
	if (sb->free_blocks != free_blocks || sb->free_inodes != free_inodes) {
		/* Exact only at a clean unmount: otherwise just refresh. */
		if (sb->state & MQFS_STATE_CLEAN &&
		    (sb->free_blocks + (uint64_t)dblocks != free_blocks ||
		     sb->free_inodes + (uint64_t)dinodes != free_inodes))
			fk_problem(f, FK_SAFE, "fixed", "superblock: free "
				   "blocks %llu, free inodes %llu; counted "
				   "%llu, %llu",
				   (unsigned long long)sb->free_blocks,
				   (unsigned long long)sb->free_inodes,
				   (unsigned long long)(free_blocks - (uint64_t)dblocks),
				   (unsigned long long)(free_inodes - (uint64_t)dinodes));
		sb->free_blocks = free_blocks;
		sb->free_inodes = free_inodes;
		f->sb_changed = true;
	}
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
	int err = fk_pass_super(f);

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
		err = fk_pass_ags(f);
	if (!err)
		err = fk_pass_inodes(f);
	if (!err)
		err = fk_fix_dups(f);
	if (!err)
		err = fk_pass_dirs(f);
	if (!err)
		err = fk_pass_orphans(f);
	if (!err)
		err = fk_check_links(f);
	if (!err)
		err = fk_pass_bitmaps(f);
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
