// SPDX-License-Identifier: MIT
/*
 * fsck_io.c - what every pass of the checker uses: reporting (problems,
 * verbose lines, progress) and block access through the in-memory copies
 * of changed blocks and the journal's overlay.  A leaf of the checker:
 * the passes call it and it calls none of them, so fsck.c (the driver)
 * and the pass files form no cycle.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fsck_i.h"

/* ---- reporting ------------------------------------------------------- */

void mqfs_fk_problem(struct fsck *f, enum fk_kind kind, const char *fix,
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

void mqfs_fk_verbose(struct fsck *f, const char *fmt, ...)
{
	va_list ap;

	if (!f->o.verbose)
		return;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

void mqfs_fk_progress_pass(struct fsck *f, int base, int span)
{
	f->pbase = base;
	f->pspan = span;
	mqfs_fk_progress(f, 0, 1);
}

void mqfs_fk_progress(struct fsck *f, uint64_t done, uint64_t total)
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

bool mqfs_fk_all_zero(const void *buf, size_t len)
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

const struct fk_jcopy *mqfs_fk_jfind(const struct fsck *f, uint64_t blk)
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

/* Block @blk as read into @dst, with fsck's change or the journal's
 * copy over it. */
static void fk_overlay(struct fsck *f, uint64_t blk, uint8_t *dst)
{
	const struct fk_blk *b = fk_changed(f, blk);
	const struct fk_jcopy *j;

	if (b)
		memcpy(dst, b->data, MQFS_BLOCK_SIZE);
	else if ((j = mqfs_fk_jfind(f, blk)))
		memcpy(dst, j->data, MQFS_BLOCK_SIZE);
}

static int fk_read_error(uint64_t blk, int err)
{
	fprintf(stderr, "fsck.mqfs: read error at block %llu: %s\n",
		(unsigned long long)blk, strerror(-err));
	return err;
}

int mqfs_fk_read(struct fsck *f, uint64_t blk, void *buf, uint32_t n)
{
	int err;

	if (!n || blk >= f->l.block_count || n > f->l.block_count - blk)
		return -EINVAL;
	err = mqfs_bio_sync(f->q, MQ_OP_READ, blk, buf, n, MQ_REQ_META);
	if (err)
		return fk_read_error(blk, err);
	for (uint32_t i = 0; i < n; i++)
		fk_overlay(f, blk + i, (uint8_t *)buf + (size_t)i *
				       MQFS_BLOCK_SIZE);
	return 0;
}

int mqfs_fk_read_blocks(struct fsck *f, const uint64_t *blks, uint32_t n,
			void *buf)
{
	struct mqfs_bio_batch batch;
	int err;

	for (uint32_t i = 0; i < n; i++)
		if (blks[i] >= f->l.block_count)
			return -EINVAL;
	mqfs_batch_init(&batch);
	for (uint32_t i = 0; i < n; i++)
		mqfs_batch_add(f->q, &batch, MQ_OP_READ, blks[i], (uint8_t *)buf +
			       (size_t)i * MQFS_BLOCK_SIZE, 1, MQ_REQ_META);
	err = mqfs_batch_wait(&batch);
	if (err)
		return fk_read_error(batch.error_blk, err);
	for (uint32_t i = 0; i < n; i++)
		fk_overlay(f, blks[i], (uint8_t *)buf + (size_t)i *
				       MQFS_BLOCK_SIZE);
	return 0;
}

int mqfs_fk_read_meta(struct fsck *f, uint64_t blk, unsigned type, void *buf)
{
	int err = mqfs_fk_read(f, blk, buf, 1);

	return err ? err : mqfs_blk_verify(buf, type, blk);
}

int mqfs_fk_write(struct fsck *f, uint64_t blk, void *buf, unsigned type)
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

void mqfs_fk_block_change(struct fsck *f, uint64_t blk, bool used)
{
	if (fk_used(f, blk) == used)
		return;
	fk_set_used(f, blk, used);
	f->touched[blk / 64] |= 1ull << (blk % 64);
	f->agd[blk / f->l.ag_blocks].free_blocks += used ? -1 : 1;
}

void mqfs_fk_inode_change(struct fsck *f, uint64_t ino, bool live, bool dir)
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

uint64_t mqfs_fk_itable_blk(const struct fsck *f, uint64_t ino)
{
	uint32_t ag = fk_ino_ag(f, ino);
	uint64_t idx = (ino - 1) % f->l.inodes_per_ag;

	return mqfs_ag_meta_start(&f->l, ag) + 3 + idx / MQFS_INODES_PER_BLOCK;
}
