// SPDX-License-Identifier: MIT
/*
 * fsck_random.c - test_fsck's damage campaigns: random damage to one to
 * three metadata blocks per round (MQFS_FSCK_ROUNDS, MQFS_FSCK_ROUND),
 * and sealed damage structure by structure (MQFS_SEALED_ROUNDS); after
 * fsck -y every image must check clean, mount, read and be used.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fsck_fixture.h"
#include "mqfs/dev/ram.h"

/* ---- random damage --------------------------------------------------------- */

/* The metadata blocks of the image (any that verify where they lie). */
static unsigned tf_meta_blocks(struct t_fs *t, uint64_t *v, unsigned max)
{
	uint64_t blocks = tf_sb(t)->block_count;
	unsigned n = 0;

	for (uint64_t b = 0; b < blocks && n < max; b++) {
		const struct mqfs_blk_hdr *h = (void *)t_fs_raw_block(t, b);

		if (h->magic == MQFS_MAGIC && mqfs_blk_type_home(h->type) &&
		    !mqfs_blk_verify(h, h->type, b))
			v[n++] = b;
	}
	return n;
}

#define TF_DAMAGE_ROUNDS	300u

/* More shapes for the damage to hit: an extent tree, a directory of
 * several blocks, a deeper path, extended attributes. */
static void tf_enrich(struct tf *x)
{
	struct t_fs *t = &x->t;
	uint64_t ino, big, deep;
	char name[32];

	t_fs_mount(t);
	ino = tf_mk(t, MQFS_ROOT_INO, "sparse", S_IFREG | 0644);
	for (unsigned i = 0; i < TF_TREE_EXT; i++)
		tf_pwrite(t, ino, 2ull * i * MQFS_BLOCK_SIZE, i,
			  MQFS_BLOCK_SIZE);
	big = tf_mk(t, MQFS_ROOT_INO, "big", S_IFDIR | 0755);
	for (unsigned i = 0; i < 400; i++) {
		snprintf(name, sizeof(name), "entry-with-a-long-name-%03u", i);
		ino = tf_mk(t, big, name, i % 50 ? S_IFREG | 0644
						 : S_IFDIR | 0755);
		if (i % 7 == 0)
			ck_assert_int_eq(mqfs_setxattr(t->fs, ino, "user.k",
						       name, strlen(name), 0),
					 0);
	}
	deep = x->sub;
	for (unsigned i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "deep%u", i);
		deep = tf_mk(t, deep, name, S_IFDIR | 0755);
	}
	tf_write_file(t, tf_mk(t, deep, "leaf", S_IFREG | 0644), 3, 12345);
	t_fs_unmount(t);
}

/*
 * Damage at @off of block @p: a flipped bit, a random byte, a random
 * 64-bit word, or a word set to a small number (a pointer to another
 * real block or inode: the nastiest lie).
 */
static void tf_damage(uint8_t *p, unsigned off, uint64_t r, uint64_t blocks)
{
	unsigned w = off & ~7u;
	uint64_t v;

	switch ((r >> 40) % 4) {
	case 0:
		p[off] ^= (uint8_t)(1u << ((r >> 28) % 8));
		break;
	case 1:
		p[off] = (uint8_t)(r >> 20);
		break;
	case 2:
		v = r * 0xff51afd7ed558ccdull;
		memcpy(p + w, &v, sizeof(v));
		break;
	default:
		v = (r >> 8) % blocks;
		memcpy(p + w, &v, sizeof(v));
		break;
	}
}

/*
 * After fsck -y returned @ret on a damaged image: it repaired (or found
 * nothing), the image is clean, mounts, reads entirely, takes a new file
 * and is clean after that use.  @what and @round name a failure.
 */
static void tf_check_repaired(struct tf *x, int ret, const char *what,
			      unsigned round)
{
	ck_assert_msg(ret == MQFS_FSCK_OK || ret == MQFS_FSCK_FIXED,
		      "%s %u: fsck -y returned %d", what, round, ret);
	ck_assert_msg(tf_fsck(&x->t, MQFS_FSCK_NO, true) == MQFS_FSCK_OK,
		      "%s %u: not clean after fsck -y", what, round);
	t_fs_mount(&x->t);
	(void)tf_walk(&x->t, MQFS_ROOT_INO, 0);
	tf_pwrite(&x->t, tf_mk(&x->t, MQFS_ROOT_INO, "after", S_IFREG | 0644),
		  0, 9, 20000);
	t_fs_unmount(&x->t);
	ck_assert_msg(tf_fsck(&x->t, MQFS_FSCK_NO, true) == MQFS_FSCK_OK,
		      "%s %u: not clean after use", what, round);
}

/*
 * Each round damages one to three metadata blocks of the populated image
 * (bytes flipped; half the time the block is resealed so only its
 * meaning is wrong).  Whatever it is, fsck -y must leave a filesystem
 * that checks clean, mounts, can be read entirely, and is still clean
 * after being used.  A failing round prints its number and blocks.
 */
START_TEST(test_random_damage)
{
	struct tf x;
	uint64_t meta[2048], rng;
	unsigned nmeta, rounds = TF_DAMAGE_ROUNDS, first = 0;
	uint8_t *pristine;
	size_t bytes;

	/* Longer runs: MQFS_FSCK_ROUNDS=n; one round: MQFS_FSCK_ROUND=i. */
	if (getenv("MQFS_FSCK_ROUNDS"))
		rounds = (unsigned)atoi(getenv("MQFS_FSCK_ROUNDS"));
	if (getenv("MQFS_FSCK_ROUND")) {
		first = (unsigned)atoi(getenv("MQFS_FSCK_ROUND"));
		rounds = first + 1;
	}

	tf_populate(&x);
	tf_enrich(&x);
	tf_check_n(&x, MQFS_FSCK_OK);
	bytes = tf_dev_bytes(&x.t);
	pristine = malloc(bytes);
	memcpy(pristine, mq_ram_data(x.t.ram), bytes);
	nmeta = tf_meta_blocks(&x.t, meta, MQ_ARRAY_SIZE(meta));
	ck_assert_uint_gt(nmeta, 10);
	for (unsigned round = 0; round < rounds; round++) {
		uint64_t last = tf_sb(&x.t)->block_count - 1;
		bool primary = false, backup = false;
		unsigned nd;
		int ret;

		/* Every round's damage follows from its number alone. */
		rng = (round + 1) * 0x9e3779b97f4a7c15ull;
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		if (round < first)
			continue;
		memcpy(mq_ram_data(x.t.ram), pristine, bytes);
		nd = 1 + (unsigned)(rng >> 60) % 3;
		for (unsigned k = 0; k < nd; k++) {
			uint64_t r, blk;
			uint8_t *p;
			unsigned off;

			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			r = rng >> 16;
			blk = meta[r % nmeta];
			/* Half the time where the headers and first records are. */
			off = MQFS_HDR_SIZE + (unsigned)((r >> 12) %
				((r >> 46) & 1 ? 256 : MQFS_PAYLOAD));
			p = t_fs_raw_block(&x.t, blk);
			primary |= blk == 0;
			backup |= blk == last;
			tf_damage(p, off, r, last + 1);
			if ((r >> 32) & 1 && blk)
				tf_reseal(&x.t, blk);
			fprintf(stderr, "round %u: block %llu byte %u mode %u%s\n",
				round, (unsigned long long)blk, off,
				(unsigned)(r >> 40) % 4,
				(r >> 32) & 1 && blk ? " (resealed)" : "");
		}
		ret = tf_fsck(&x.t, MQFS_FSCK_YES, true);
		/* Both superblocks damaged: nothing to start from. */
		if (primary && backup && ret == MQFS_FSCK_ERROR)
			continue;
		tf_check_repaired(&x, ret, "round", round);
	}
	free(pristine);
	tf_destroy(&x);
}
END_TEST

/*
 * Sealed damage, one structure at a time: each round changes one to
 * three fields of one block of the structure and seals it again, so
 * every checksum holds and only the meaning is wrong (what a bug or a
 * misdirected write of our own would leave).  Blocks and damage follow
 * from the round number.  The summary line per structure says how often
 * fsck repaired something and how often the change was harmless (fsck
 * clean, and the filesystem mounted, read and used without an error).
 */
static const struct {
	uint16_t type;
	const char *name;
} tf_structs[] = {
	{ MQFS_T_SUPER, "superblock" },
	{ MQFS_T_AG, "AG header" },
	{ MQFS_T_BBITMAP, "block bitmap" },
	{ MQFS_T_IBITMAP, "inode bitmap" },
	{ MQFS_T_ITABLE, "inode table" },
	{ MQFS_T_EXTENT, "extent node" },
	{ MQFS_T_DIR, "directory" },
	{ MQFS_T_XATTR, "xattr block" },
	{ MQFS_T_AGINIT, "AG-init map" },
};

#define TF_SEALED_ROUNDS	40u

START_TEST(test_sealed_damage)
{
	unsigned type = tf_structs[_i].type, fixed = 0, harmless = 0, by_b = 0;
	uint64_t blocks[2048], rng = (_i + 1) * 0xd1b54a32d192ed03ull, copy;
	unsigned n = 0, nmeta, rounds = TF_SEALED_ROUNDS;
	uint8_t *pristine;
	struct tf x;
	size_t bytes;

	/* Longer campaigns: MQFS_SEALED_ROUNDS=n. */
	if (getenv("MQFS_SEALED_ROUNDS"))
		rounds = (unsigned)atoi(getenv("MQFS_SEALED_ROUNDS"));
	tf_populate(&x);
	tf_enrich(&x);
	bytes = tf_dev_bytes(&x.t);
	pristine = malloc(bytes);
	memcpy(pristine, mq_ram_data(x.t.ram), bytes);
	nmeta = tf_meta_blocks(&x.t, blocks, MQ_ARRAY_SIZE(blocks));
	for (unsigned k = 0; k < nmeta; k++)
		if (((struct mqfs_blk_hdr *)t_fs_raw_block(&x.t,
				blocks[k]))->type == type)
			blocks[n++] = blocks[k];
	ck_assert_msg(n > 0, "no %s block to damage", tf_structs[_i].name);
	ck_assert_uint_gt(mqfs_sb_copies(tf_sb(&x.t), &copy, 1), 0);
	for (unsigned round = 0; round < rounds; round++) {
		/* The primary superblock half the time: copies are fallbacks. */
		uint64_t blk = blocks[round % 2 ? round / 2 % n : 0];
		unsigned nd;
		int ret;

		if (type != MQFS_T_SUPER)
			blk = blocks[round % n];
		memcpy(mq_ram_data(x.t.ram), pristine, bytes);
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		nd = 1 + (unsigned)(rng >> 60) % 3;
		for (unsigned k = 0; k < nd; k++) {
			uint64_t r;
			unsigned off;

			rng = rng * 6364136223846793005ull +
			      1442695040888963407ull;
			r = rng >> 16;
			off = MQFS_HDR_SIZE + (unsigned)((r >> 12) %
				((r >> 46) & 1 ? 256 : MQFS_PAYLOAD));
			tf_damage(t_fs_raw_block(&x.t, blk), off, r,
				  tf_sb(&x.t)->block_count);
			fprintf(stderr, "%s round %u: block %llu byte %u "
				"mode %u (resealed)\n", tf_structs[_i].name,
				round, (unsigned long long)blk, off,
				(unsigned)(r >> 40) % 4);
		}
		tf_reseal(&x.t, blk);
		ret = tf_fsck(&x.t, MQFS_FSCK_YES, true);
		/*
		 * Unknown features in block 0 may be a newer mqfs's: fsck
		 * refuses and names a copy for -b, which must then work.
		 */
		if (ret == MQFS_FSCK_ERROR && !blk &&
		    mqfs_super_unknown_features(tf_sb(&x.t)) !=
			    MQFS_FEAT_KNOWN) {
			struct mqfs_fsck_opts o = { .mode = MQFS_FSCK_YES,
						    .sb_block = copy };

			ret = mqfs_fsck(x.t.q, &o);
			by_b++;
		}
		fixed += ret == MQFS_FSCK_FIXED;
		harmless += ret == MQFS_FSCK_OK;
		tf_check_repaired(&x, ret, tf_structs[_i].name, round);
	}
	fprintf(stderr, "sealed damage: %s: %u blocks, %u rounds: %u repaired "
		"(%u with -b), %u harmless\n", tf_structs[_i].name, n,
		rounds, fixed, by_b, harmless);
	free(pristine);
	tf_destroy(&x);
}
END_TEST

void fsck_add_random_tests(TCase *tc)
{
	tcase_add_test(tc, test_random_damage);
	tcase_add_loop_test(tc, test_sealed_damage, 0,
			    MQ_ARRAY_SIZE(tf_structs));
}
