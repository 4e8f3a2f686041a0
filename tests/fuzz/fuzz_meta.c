// SPDX-License-Identifier: MIT
/*
 * fuzz_meta.c - a libFuzzer harness over mqfs's metadata parsers and
 * over fsck and the mount on damaged images.
 *
 * The first byte of an input chooses what the rest is:
 *   0: a block for the parsers: the superblock rules (and its copies'
 *      places), the journal-copy rule, an inode table block's records,
 *      a directory block's entries, an xattr block (as a chain of one:
 *      its link, its fragments checked whole) and the POSIX ACLs
 *      in it, and the bytes as one ACL value.  Sealed first when
 *      the second byte is odd, so that the checksum lets the meaning
 *      through (the damage a checksum cannot see).
 *   1: damage to a small populated image: records of (block, offset,
 *      bytes, reseal), applied to a pristine copy; then fsck -n, fsck
 *      -y, and fsck -n again must say clean unless -y gave up (exit 8);
 *      then the image is mounted, every file and directory read, and
 *      unmounted.  Anything else (a crash, a sanitizer report, a
 *      leak, -y leaving problems) is a finding.  The image is made
 *      with lazy AGs: AG 0, and the AGs its directory and files
 *      initialised, are written; the last is not, so damage meets the
 *      AG-init map and an uninitialised AG's never-written blocks.
 *
 * tests/fuzz/fuzz.sh builds it with clang (-fsanitize=fuzzer,address,
 * undefined, every core source instrumented) and runs it for a bounded
 * time over tests/fuzz/corpus.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "acl_i.h"
#include "fs_i.h"
#include "mqfs/mq_dev.h"
#include "../unit/t_fsio.h"
#include "mqfs/dev/ram.h"

#define FZ_BYTES	(8ull << 20)
#define FZ_AG_BLOCKS	512u

static struct mq_dev *fz_ram;
static uint8_t *fz_pristine;

static int fz_mkdev(struct mq_queue **q)
{
	struct mq_queue_config cfg = { .elevator = "none" };

	return mq_queue_create(fz_ram, &cfg, q);
}

/* ---- the parsers --------------------------------------------------------- */

/*
 * An ACL value through the rules of acl.c; chmod and create change only
 * permissions, so what was valid must stay valid.
 */
static void fz_acl(const void *data, size_t size)
{
	static uint8_t v[MQFS_ACL_SIZE(MQFS_ACL_MAX_ENTRIES)];
	mode_t mode = S_IFREG | 0777, perm;
	size_t n = MQ_MIN(size, sizeof(v));

	memcpy(v, data, n);
	if (mqfs_acl_valid(v, n))
		return;
	(void)mqfs_acl_equiv_mode(v, n, &perm);
	(void)mqfs_acl_matches_mode(v, n, mode);
	mqfs_acl_chmod(v, n, 0751);
	(void)mqfs_acl_create(v, n, &mode);
	if (mqfs_acl_valid(v, n) || (mode & ~(mode_t)0777) != S_IFREG)
		abort();
}

/* A valid xattr block as a chain of one, and the ACLs in it. */
static void fz_xattr_acls(uint8_t *blk)
{
	static const char *const names[] = { MQFS_ACL_ACCESS_XATTR,
					     MQFS_ACL_DEFAULT_XATTR };
	void *chain[1] = { blk };
	bool changed = false;
	const void *v;
	size_t n;

	if (mqfs_xattr_why_bad(blk))
		return;
	(void)mqfs_xattr_next(blk);
	(void)mqfs_xattr_fix_frags(chain, 1, &changed, NULL, NULL);
	if (mqfs_xattr_why_bad(blk) && ((const struct mqfs_xattr_hdr *)
					(blk + MQFS_HDR_SIZE))->count)
		abort();	/* what is left of a valid block stays valid */
	for (unsigned i = 0; i < MQ_ARRAY_SIZE(names); i++)
		if (mqfs_xattr_lookup(blk, names[i], &v, &n) >= 0)
			fz_acl(v, n);
}

static void fz_parsers(const uint8_t *data, size_t size)
{
	static _Alignas(4096) uint8_t blk[MQFS_BLOCK_SIZE];
	const struct mqfs_super *sb = (const void *)blk;
	uint64_t at[MQFS_SB_COPIES_MAX];
	struct mqfs_blk_hdr *h = (void *)blk;
	struct mqfs_super good;
	bool seal = size > 0 && (data[0] & 1);
	uint64_t home = size > 1 ? data[1] : 0;

	memset(blk, 0, sizeof(blk));
	if (size > 2)
		memcpy(blk, data + 2, MQ_MIN(size - 2, sizeof(blk)));
	if (seal)
		mqfs_blk_seal(blk, h->type, home, h->gen);
	(void)mqfs_blk_verify(blk, h->type, home);
	if (!mqfs_super_why_bad(sb, 1ull << 40)) {
		(void)mqfs_super_unknown_features(sb);
		(void)mqfs_sb_copies(sb, at, MQ_ARRAY_SIZE(at));
	}
	memset(&good, 0, sizeof(good));
	memcpy(&good, fz_pristine, sizeof(good));
	(void)mqfs_jcopy_why_bad(&good, FZ_BYTES / MQFS_BLOCK_SIZE, h->gen,
				 home, blk);
	for (unsigned i = 0; i < MQFS_INODES_PER_BLOCK; i++)
		(void)mqfs_inode_why_bad((const void *)(blk +
					 mqfs_itable_offset(i)));
	fz_xattr_acls(blk);
	if (size > 2)
		fz_acl(data + 2, size - 2);
	for (size_t off = MQFS_HDR_SIZE; off + sizeof(struct mqfs_dirent) <=
	     MQFS_BLOCK_SIZE; off += 8) {
		const struct mqfs_dirent *de = (const void *)(blk + off);

		if (off + sizeof(*de) + de->name_len <= MQFS_BLOCK_SIZE)
			(void)mqfs_dirent_why_bad(de, 1u << 20);
	}
}

/* ---- images -------------------------------------------------------------- */

static int fz_fill(void *ctx, const char *name, uint64_t ino, unsigned type,
		   uint64_t next_pos, const struct mqfs_entry *e)
{
	uint64_t *list = ctx;

	(void)next_pos, (void)e, (void)type;
	if (strcmp(name, ".") && strcmp(name, "..") && list[0] < 63)
		list[++list[0]] = ino;
	return 0;
}

/* Read everything reachable from @dir (errors are fine, crashes not). */
static void fz_walk(struct mqfs_fs *fs, uint64_t dir, unsigned depth)
{
	uint64_t list[64] = { 0 };
	static uint8_t buf[65536];

	if (depth > 8 || mqfs_readdir(fs, dir, 0, false, fz_fill, list))
		return;
	for (uint64_t i = 1; i <= list[0]; i++) {
		struct mqfs_file *f;
		struct stat st;

		if (mqfs_getattr(fs, list[i], &st))
			continue;
		if (S_ISDIR(st.st_mode)) {
			fz_walk(fs, list[i], depth + 1);
		} else if (S_ISREG(st.st_mode) &&
			   !mqfs_open(fs, list[i], O_RDONLY, &f)) {
			(void)t_read(fs, f, 0, buf, sizeof(buf));
			(void)mqfs_release(fs, f);
		} else if (S_ISLNK(st.st_mode)) {
			(void)mqfs_readlink(fs, list[i], (char *)buf,
					    sizeof(buf));
		}
	}
}

static int fz_fsck(struct mq_queue *q, enum mqfs_fsck_mode mode)
{
	struct mqfs_fsck_opts o = { .mode = mode, .force = true };

	return mqfs_fsck(q, &o);
}

/* Records of 8 bytes: block (2), offset (2), 3 bytes, flags (1). */
static void fz_image(const uint8_t *data, size_t size)
{
	uint8_t *img = mq_ram_data(fz_ram);
	uint64_t nblk = FZ_BYTES / MQFS_BLOCK_SIZE;
	struct mqfs_mount_opts mo = { .commit_interval_ms = 3600 * 1000 };
	struct mqfs_fs *fs;
	struct mq_queue *q;
	int ret;

	memcpy(img, fz_pristine, FZ_BYTES);
	for (size_t i = 0; i + 8 <= size && i < 8 * 64; i += 8) {
		uint64_t blk = (data[i] | (uint64_t)data[i + 1] << 8) % nblk;
		unsigned off = (data[i + 2] | (unsigned)data[i + 3] << 8) %
			       (MQFS_BLOCK_SIZE - 3);
		uint8_t *b = img + blk * MQFS_BLOCK_SIZE;
		struct mqfs_blk_hdr *h = (void *)b;

		memcpy(b + off, data + i + 4, 3);
		if (data[i + 7] & 1)
			mqfs_blk_seal(b, h->type, blk, h->gen);
	}
	if (fz_mkdev(&q))
		abort();
	(void)fz_fsck(q, MQFS_FSCK_NO);
	ret = fz_fsck(q, MQFS_FSCK_YES);
	if (!(ret & MQFS_FSCK_ERROR)) {
		ret = fz_fsck(q, MQFS_FSCK_NO);
		if (ret != MQFS_FSCK_OK) {
			fprintf(stderr, "fuzz: fsck -n after -y: %d\n", ret);
			abort();
		}
		if (!mqfs_mount(q, &mo, &fs)) {
			fz_walk(fs, MQFS_ROOT_INO, 0);
			(void)mqfs_unmount(fs);
		}
	}
	mq_queue_destroy(q);
}

/* A pristine image: directories, small and large files, a symlink,
 * xattrs (one file's a chain of blocks with a fragmented value), a big
 * directory, a removed file. */
static void fz_make(void)
{
	struct mqfs_mkfs_opts mk = { .ag_blocks = FZ_AG_BLOCKS,
				     .now_sec = 1700000000 };
	struct mqfs_mount_opts mo = { .commit_interval_ms = 3600 * 1000 };
	static uint8_t data[40000];
	struct mqfs_entry d, e;
	struct mqfs_file *f;
	struct mqfs_fs *fs;
	struct mq_queue *q;
	char name[32];

	if (mq_ram_open(FZ_BYTES, 64, &fz_ram) || fz_mkdev(&q) || mqfs_mkfs(q, &mk, NULL) ||
	    mqfs_mount(q, &mo, &fs))
		abort();
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + i / 4096);
	if (mqfs_mknod(fs, MQFS_ROOT_INO, "dir", S_IFDIR | 0755, 0, 0, 0, &d))
		abort();
	for (int i = 0; i < 120; i++) {
		snprintf(name, sizeof(name), "file-with-a-long-name-%03d", i);
		if (mqfs_mknod(fs, d.ino, name, S_IFREG | 0644, 0, 0, 0, &e) ||
		    mqfs_open(fs, e.ino, O_RDWR, &f))
			abort();
		(void)t_write(fs, f, 0, data, i % 7 ? 100 + i : sizeof(data));
		(void)mqfs_release(fs, f);
		if (i % 5 == 0)
			(void)mqfs_setxattr(fs, e.ino, "user.k", data, 30 + i,
					    0);
		for (int k = 0; i == 1 && k < 150; k++) {
			snprintf(name, sizeof(name), "user.chain.%03d", k);
			(void)mqfs_setxattr(fs, e.ino, name, data + k, 40, 0);
		}
		if (i == 1)
			(void)mqfs_setxattr(fs, e.ino, "user.big", data,
					    sizeof(data), 0);
		mqfs_forget(fs, e.ino, 1);
	}
	(void)mqfs_unlink(fs, d.ino, "file-with-a-long-name-007");
	(void)mqfs_symlink(fs, MQFS_ROOT_INO, "link", "dir/file-with-a-long-"
			   "name-001", 0, 0, &e);
	if (mqfs_unmount(fs))
		abort();
	mq_queue_destroy(q);
	fz_pristine = malloc(FZ_BYTES);
	if (!fz_pristine)
		abort();
	memcpy(fz_pristine, mq_ram_data(fz_ram), FZ_BYTES);
}

/*
 * MQFS_FUZZ_SEEDS=DIR: write seeds there, one parser input per block
 * type of the pristine image (its first block of each type, sealed) and
 * a few image damages, so a run starts from real structures.
 */
static void fz_seed(const char *dir, const char *name, const uint8_t *a,
		    size_t alen, const uint8_t *b, size_t blen)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/seed-%s", dir, name);
	f = fopen(path, "wb");
	if (!f)
		return;
	fwrite(a, 1, alen, f);
	fwrite(b, 1, blen, f);
	fclose(f);
}

/* Damage records (fz_image) at @blk, offset @off, resealed or not. */
static void fz_seed_damage(const char *dir, const char *name, uint64_t blk,
			   unsigned off, bool reseal)
{
	uint8_t rec[9] = { 0x80, (uint8_t)blk, (uint8_t)(blk >> 8),
			   (uint8_t)off, (uint8_t)(off >> 8), 0xff, 0x00, 0x5a,
			   reseal };

	fz_seed(dir, name, rec, sizeof(rec), NULL, 0);
}

/* Lazy AGs: the AG-init map's bits (resealed: only the meaning is
 * wrong), and the header of the last AG, which is never written. */
static void fz_seeds_lazy(const char *dir)
{
	const struct mqfs_super *sb = (const void *)fz_pristine;
	struct mqfs_layout l;
	uint64_t map;

	mqfs_super_layout(sb, &l);
	map = mqfs_aginit_start(&l);
	/* The image must have both kinds of AG. */
	if (!l.aginit_blocks || l.ag_count > MQFS_BITMAP_BITS ||
	    mqfs_aginit_test(fz_pristine + map * MQFS_BLOCK_SIZE,
			     l.ag_count - 1))
		abort();
	fz_seed_damage(dir, "aginit-bits", map, MQFS_HDR_SIZE, true);
	fz_seed_damage(dir, "aginit-csum", map, 200, false);
	fz_seed_damage(dir, "uninit-header", mqfs_ag_meta_start(&l,
		       l.ag_count - 1), 40, true);
}

static void fz_seeds(const char *dir)
{
	bool seen[64] = { false };
	char name[32];

	for (uint64_t blk = 0; blk < FZ_BYTES / MQFS_BLOCK_SIZE; blk++) {
		const uint8_t *b = fz_pristine + blk * MQFS_BLOCK_SIZE;
		const struct mqfs_blk_hdr *h = (const void *)b;
		uint8_t pre[3] = { 0x00, 0x01, (uint8_t)blk };

		if (h->magic != MQFS_MAGIC || h->type >= 64 || seen[h->type])
			continue;
		seen[h->type] = true;
		snprintf(name, sizeof(name), "type%u", h->type);
		fz_seed(dir, name, pre, sizeof(pre), b, MQFS_BLOCK_SIZE);
	}
	fz_seeds_lazy(dir);
	for (unsigned i = 0; i < 8; i++) {
		/* Block i*7+1 (the journal, AG 0's metadata), a byte, resealed
		 * every other time. */
		uint8_t rec[9] = { 0x80, (uint8_t)(i * 7 + 1), 0,
				   (uint8_t)(40 + i * 8), 0, 0xff, 0x01, 0x00,
				   (uint8_t)(i & 1) };

		snprintf(name, sizeof(name), "image%u", i);
		fz_seed(dir, name, rec, sizeof(rec), NULL, 0);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	/* fsck prints every problem (MQFS_FUZZ_VERBOSE=1 to replay one). */
	if (!getenv("MQFS_FUZZ_VERBOSE") && !freopen("/dev/null", "w", stdout))
		return 0;
	fz_make();
	if (getenv("MQFS_FUZZ_SEEDS"))
		fz_seeds(getenv("MQFS_FUZZ_SEEDS"));
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	if (data[0] & 0x80)
		fz_image(data + 1, size - 1);
	else
		fz_parsers(data + 1, size - 1);
	return 0;
}
