// SPDX-License-Identifier: MIT
/*
 * test_powerloss.c - a power-loss runner in the littlefs manner.
 *
 * Each scenario (create and write, overwrite and append, rename over a
 * file and unlink, truncate down and up through a hole, fallocate,
 * xattrs, a chain of xattr blocks with a value of XATTR_SIZE_MAX
 * replaced and removed, mkdir and rmdir, dontcache write-behind with
 * fsync, POSIX ACLs: set, chmod, inherited, O_TMPFILE files linked or
 * not, renameat2's exchange and whiteout, new directories initialising
 * lazy AGs) is run once on a fault device with a volatile write cache to
 * count its write-like requests (writes and flushes), N.  Then it is run
 * again for every k = 1 .. N + 1 with the power cut just before its kth
 * write (N + 1: after its end), once losing every unflushed sector
 * (LOSE) and once writing a seeded subset of them first (TORN).  After
 * each cut:
 * fsck -n of the image as the cut left it must be clean; the mount
 * (journal replay) must succeed; the root must hold the names of one of
 * the states from the last sync or fsync to the operation the cut hit;
 * every file's size must be one it had in those states and each of its
 * sectors one it had in them (or zeros; data is not journaled, so an
 * overwrite not yet synced may be torn between sectors): every synced
 * byte there and nothing that was never written; and fsck -n after the
 * unmount clean.  The model holds no modes or ACLs: fsck -n, which
 * checks that a mode agrees with its access ACL, judges those.
 *
 * make check runs every cut point of every scenario with one torn
 * pattern; `make check-powerloss` with 16 (MQFS_PL_SEEDS=n).  A failure
 * prints the scenario, k, the mode and the seed; MQFS_PL_SCENARIO=i
 * MQFS_PL_CUT=k MQFS_PL_SEEDS=n runs one cut point.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t_fs.h"
#include "t_fsio.h"
#include "t_main.h"
#include "mqfs/dev/fault.h"

#define PL_SIZE		(16 * T_FS_MIB)
#define PL_NAMES	5		/* a b c d dir */
#define PL_FILE_MAX	(64 * 1024)
#define PL_SNAPS	48
#define PL_XATTR	"user.k"
#define PL_BIG		"user.big"	/* up to XATTR_SIZE_MAX */
#define PL_MANY_FMT	"user.many.%04u"	/* a chain's worth */
#define PL_MANY_VALUE	"a value of a chained attribute"

static const char *const pl_name[PL_NAMES] = { "a", "b", "c", "d", "dir" };

struct pl_ent {
	bool exists, dir;
	uint32_t size;
	uint8_t xlen;			/* 0: no user.k */
	uint8_t x[16];
	uint32_t big, big_seed;		/* user.big's size (0: none) */
	uint32_t many;			/* user.many.0000 .. many - 1 */
	uint8_t data[PL_FILE_MAX];
};

struct pl_state {
	struct pl_ent e[PL_NAMES];
};

struct pl {
	struct t_fs t;
	struct pl_state cur;
	struct pl_state *snap;		/* every state the scenario passed */
	unsigned nsnap;
	unsigned durable;		/* snap index of the last sync */
	bool dontcache;			/* files open through write-behind */
	bool dead;			/* an operation met the cut: stop */
};

/* ---- the operations: each updates the model, then does it ---------------- */

static int pl_idx(const char *name)
{
	for (int i = 0; i < PL_NAMES; i++)
		if (!strcmp(pl_name[i], name))
			return i;
	ck_abort_msg("no name %s", name);
	return -1;
}

/* The intended state is a state the cut may leave. */
static void pl_push(struct pl *p)
{
	ck_assert_uint_lt(p->nsnap, PL_SNAPS);
	p->snap[p->nsnap++] = p->cur;
}

/* An error is expected only once the power is off. */
static bool pl_failed(struct pl *p, long ret, const char *what)
{
	if (ret >= 0)
		return false;
	ck_assert_msg(mq_fault_powered_off(p->t.fault),
		      "%s: %ld with the power on", what, ret);
	p->dead = true;
	return true;
}

static uint64_t pl_ino(struct pl *p, const char *name)
{
	struct mqfs_entry e;

	if (mqfs_lookup(p->t.fs, MQFS_ROOT_INO, name, &e))
		return 0;
	mqfs_forget(p->t.fs, e.ino, 1);
	return e.ino;
}

static void pl_mknod(struct pl *p, const char *name, bool dir)
{
	struct pl_ent *e = &p->cur.e[pl_idx(name)];
	struct mqfs_entry out;
	int ret;

	if (p->dead)
		return;
	memset(e, 0, sizeof(*e));
	e->exists = true;
	e->dir = dir;
	pl_push(p);
	ret = mqfs_mknod(p->t.fs, MQFS_ROOT_INO, name,
			 (dir ? S_IFDIR | 0755 : S_IFREG | 0644), 0, 0, 0, &out);
	if (!pl_failed(p, ret, "mknod"))
		mqfs_forget(p->t.fs, out.ino, 1);
}

static void pl_fill(uint8_t *buf, uint64_t off, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed * 131 + (off + i) / 4096 * 7 + off + i);
}

static void pl_write(struct pl *p, const char *name, uint64_t off,
		     size_t len, unsigned seed)
{
	struct pl_ent *e = &p->cur.e[pl_idx(name)];
	struct mqfs_file *f;
	uint8_t *buf;
	ssize_t ret;

	if (p->dead)
		return;
	ck_assert_uint_le(off + len, PL_FILE_MAX);
	buf = aligned_alloc(4096, (len + 4095) & ~(size_t)4095);
	pl_fill(buf, off, len, seed);
	memcpy(e->data + off, buf, len);
	if (off + len > e->size)
		e->size = (uint32_t)(off + len);
	pl_push(p);
	ret = mqfs_open(p->t.fs, pl_ino(p, name), O_RDWR, &f);
	if (!pl_failed(p, ret, "open")) {
		if (p->dontcache)
			mqfs_file_set_dontcache(f);
		ret = t_write(p->t.fs, f, off, buf, len);
		if (!pl_failed(p, ret, "write"))
			ck_assert_int_eq(ret, (ssize_t)len);
		/* Close-to-open: the write-behind goes back on release. */
		(void)pl_failed(p, mqfs_flush(p->t.fs, f), "flush");
		(void)mqfs_release(p->t.fs, f);
	}
	free(buf);
}

static void pl_truncate(struct pl *p, const char *name, uint32_t size)
{
	struct pl_ent *e = &p->cur.e[pl_idx(name)];
	struct stat st = { .st_size = size };

	if (p->dead)
		return;
	if (size < e->size)
		memset(e->data + size, 0, e->size - size);
	e->size = size;
	pl_push(p);
	(void)pl_failed(p, mqfs_setattr(p->t.fs, pl_ino(p, name), &st,
					MQFS_SET_SIZE, NULL), "truncate");
}

static void pl_fallocate(struct pl *p, const char *name, uint32_t off,
			 uint32_t len)
{
	struct pl_ent *e = &p->cur.e[pl_idx(name)];

	if (p->dead)
		return;
	if (off + len > e->size)
		e->size = off + len;
	pl_push(p);
	(void)pl_failed(p, mqfs_fallocate(p->t.fs, pl_ino(p, name), 0, off,
					  len), "fallocate");
}

/* @flags: 0, RENAME_EXCHANGE or RENAME_WHITEOUT. */
static void pl_rename(struct pl *p, const char *from, const char *to,
		      unsigned flags)
{
	struct pl_ent *old = &p->cur.e[pl_idx(from)];
	struct pl_ent *new = &p->cur.e[pl_idx(to)];
	struct pl_ent was = *new;
	int ret;

	if (p->dead)
		return;
	*new = *old;
	if (flags & RENAME_EXCHANGE) {
		*old = was;
	} else {
		memset(old, 0, sizeof(*old));
		old->exists = flags & RENAME_WHITEOUT;	/* empty, no dir */
	}
	pl_push(p);
	if (flags & RENAME_WHITEOUT)
		ret = mqfs_rename_whiteout(p->t.fs, MQFS_ROOT_INO, from,
					   MQFS_ROOT_INO, to, flags, 0, 0);
	else
		ret = mqfs_rename(p->t.fs, MQFS_ROOT_INO, from, MQFS_ROOT_INO,
				  to, flags);
	(void)pl_failed(p, ret, "rename");
}

static void pl_unlink(struct pl *p, const char *name)
{
	struct pl_ent *e = &p->cur.e[pl_idx(name)];
	bool dir = e->dir;

	if (p->dead)
		return;
	memset(e, 0, sizeof(*e));
	pl_push(p);
	(void)pl_failed(p, dir ? mqfs_rmdir(p->t.fs, MQFS_ROOT_INO, name) :
			mqfs_unlink(p->t.fs, MQFS_ROOT_INO, name), "unlink");
}

static void pl_setxattr(struct pl *p, const char *name, const char *value)
{
	struct pl_ent *e = &p->cur.e[pl_idx(name)];

	if (p->dead)
		return;
	e->xlen = (uint8_t)strlen(value);
	memcpy(e->x, value, e->xlen);
	pl_push(p);
	(void)pl_failed(p, mqfs_setxattr(p->t.fs, pl_ino(p, name), PL_XATTR,
					 value, e->xlen, 0), "setxattr");
}

static void pl_removexattr(struct pl *p, const char *name)
{
	if (p->dead)
		return;
	p->cur.e[pl_idx(name)].xlen = 0;
	pl_push(p);
	(void)pl_failed(p, mqfs_removexattr(p->t.fs, pl_ino(p, name),
					    PL_XATTR), "removexattr");
}

static void pl_big_value(uint32_t seed, uint32_t size, uint8_t *v)
{
	for (uint32_t i = 0; i < size; i++) {
		seed = seed * 1103515245u + 12345u;
		v[i] = (uint8_t)(seed >> 16);
	}
}

/* user.big set to @size bytes made from @seed, or removed (@size 0). */
static void pl_set_big(struct pl *p, const char *name, uint32_t size,
		       uint32_t seed)
{
	static uint8_t v[MQFS_XATTR_VALUE_MAX];
	struct pl_ent *e = &p->cur.e[pl_idx(name)];
	uint64_t ino = pl_ino(p, name);

	if (p->dead)
		return;
	e->big = size;
	e->big_seed = seed;
	pl_push(p);
	pl_big_value(seed, size, v);
	(void)pl_failed(p, size ? mqfs_setxattr(p->t.fs, ino, PL_BIG, v,
						size, 0) :
			mqfs_removexattr(p->t.fs, ino, PL_BIG), "user.big");
}

static void pl_many_one(struct pl *p, uint64_t ino, uint32_t i, bool add)
{
	char x[32];

	snprintf(x, sizeof(x), PL_MANY_FMT, i);
	(void)pl_failed(p, add ? mqfs_setxattr(p->t.fs, ino, x, PL_MANY_VALUE,
					       sizeof(PL_MANY_VALUE), 0) :
			mqfs_removexattr(p->t.fs, ino, x), "user.many");
}

/*
 * user.many.* grown or shrunk to @n attributes, one call each, at the
 * end: a cut leaves a count between the two (pl_check_many).
 */
static void pl_set_many(struct pl *p, const char *name, uint32_t n)
{
	struct pl_ent *e = &p->cur.e[pl_idx(name)];
	uint64_t ino = pl_ino(p, name);
	uint32_t from = e->many;

	if (p->dead)
		return;
	e->many = n;
	pl_push(p);
	for (uint32_t i = from; i < n && !p->dead; i++)
		pl_many_one(p, ino, i, true);
	for (uint32_t i = from; i-- > n && !p->dead;)
		pl_many_one(p, ino, i, false);
}

/* POSIX ACL operations (mode and ACL: fsck's to judge, see the top). */
static void pl_set_acl(struct pl *p, const char *name, const char *xname,
		       const void *acl, size_t size)
{
	if (p->dead)
		return;
	pl_push(p);
	(void)pl_failed(p, mqfs_setxattr(p->t.fs, pl_ino(p, name), xname, acl,
					 size, 0), "set an ACL");
}

static void pl_chmod(struct pl *p, const char *name, mode_t mode)
{
	struct stat a = { .st_mode = mode };

	if (p->dead)
		return;
	pl_push(p);
	(void)pl_failed(p, mqfs_setattr(p->t.fs, pl_ino(p, name), &a,
					MQFS_SET_MODE, NULL), "chmod");
}

/* A file @child in directory @dir, outside the model's names. */
static void pl_mknod_in(struct pl *p, const char *dir, const char *child)
{
	struct mqfs_entry out;

	if (p->dead)
		return;
	pl_push(p);
	if (!pl_failed(p, mqfs_mknod_umask(p->t.fs, pl_ino(p, dir), child,
					   S_IFREG | 0666, 022, 0, 0, 0,
					   &out), "mknod in a directory"))
		mqfs_forget(p->t.fs, out.ino, 1);
}

/*
 * An O_TMPFILE written through its handle, then (with @name) linked
 * there: the name appears with its data at the link, never before; one
 * never linked is gone at its release, or at the mount after a cut.
 */
static void pl_tmpfile(struct pl *p, const char *name, size_t len,
		       unsigned seed)
{
	uint8_t *buf = aligned_alloc(4096, (len + 4095) & ~(size_t)4095);
	struct mqfs_entry t, l;
	struct mqfs_file *f;
	struct pl_ent *e;
	ssize_t ret;

	if (p->dead || pl_failed(p, mqfs_tmpfile(p->t.fs, MQFS_ROOT_INO, 0644, 0,
						 0, 0, &t), "tmpfile")) {
		free(buf);
		return;
	}
	pl_fill(buf, 0, len, seed);
	if (!pl_failed(p, mqfs_open(p->t.fs, t.ino, O_RDWR, &f), "open")) {
		ret = t_write(p->t.fs, f, 0, buf, len);
		if (!pl_failed(p, ret, "write") && name) {
			e = &p->cur.e[pl_idx(name)];
			memset(e, 0, sizeof(*e));
			e->exists = true;
			e->size = (uint32_t)len;
			memcpy(e->data, buf, len);
			pl_push(p);
			ret = mqfs_link(p->t.fs, t.ino, MQFS_ROOT_INO, name,
					&l);
			if (!pl_failed(p, ret, "link"))
				mqfs_forget(p->t.fs, t.ino, 1);
		}
		(void)pl_failed(p, mqfs_flush(p->t.fs, f), "flush");
		(void)mqfs_release(p->t.fs, f);
	}
	mqfs_forget(p->t.fs, t.ino, 1);
	free(buf);
}

/* Everything so far is durable once it returns. */
static void pl_sync(struct pl *p)
{
	if (!p->dead && !pl_failed(p, mqfs_sync(p->t.fs), "sync"))
		p->durable = p->nsnap - 1;
}

/* fsync of @name: in these scenarios nothing else is pending. */
static void pl_fsync(struct pl *p, const char *name)
{
	if (!p->dead && !pl_failed(p, mqfs_fsync(p->t.fs, pl_ino(p, name),
						 false), "fsync"))
		p->durable = p->nsnap - 1;
}

/* ---- the scenarios --------------------------------------------------------- */

static void sc_create_write(struct pl *p)
{
	pl_mknod(p, "a", false);
	pl_write(p, "a", 0, 12288, 1);
	pl_sync(p);
	pl_write(p, "a", 4096, 4096, 2);	/* overwrite */
	pl_write(p, "a", 12288, 8192, 3);	/* append */
	pl_write(p, "a", 20480, 1000, 4);	/* a partial block */
	pl_sync(p);
}

static void sc_rename_unlink(struct pl *p)
{
	pl_mknod(p, "a", false);
	pl_write(p, "a", 0, 8192, 1);
	pl_mknod(p, "b", false);
	pl_write(p, "b", 0, 16384, 2);
	pl_sync(p);
	pl_rename(p, "a", "b", 0);			/* over b */
	pl_sync(p);
	pl_unlink(p, "b");
	pl_mknod(p, "c", false);
	pl_write(p, "c", 0, 8192, 3);
	pl_rename(p, "c", "d", 0);
	pl_sync(p);
}

static void sc_truncate(struct pl *p)
{
	pl_mknod(p, "a", false);
	pl_write(p, "a", 0, 40960, 1);
	pl_sync(p);
	pl_truncate(p, "a", 10000);
	pl_write(p, "a", 30720, 4096, 2);	/* past a hole */
	pl_sync(p);
	pl_truncate(p, "a", 0);
	pl_write(p, "a", 0, 4096, 3);
	pl_sync(p);
}

static void sc_fallocate_xattr(struct pl *p)
{
	pl_mknod(p, "a", false);
	pl_fallocate(p, "a", 0, 65536);
	pl_write(p, "a", 8192, 4096, 1);
	pl_setxattr(p, "a", "one");
	pl_sync(p);
	pl_setxattr(p, "a", "two-longer");
	pl_mknod(p, "dir", true);
	pl_setxattr(p, "dir", "d");
	pl_sync(p);
	pl_removexattr(p, "a");
	pl_unlink(p, "dir");
	pl_write(p, "a", 61440, 4096, 2);
	pl_sync(p);
}

static void sc_dontcache(struct pl *p)
{
	p->dontcache = true;
	pl_mknod(p, "a", false);
	pl_sync(p);
	pl_write(p, "a", 0, 16384, 1);
	pl_write(p, "a", 16384, 32768, 2);
	pl_fsync(p, "a");
	pl_write(p, "a", 8192, 8192, 3);	/* over written-back data */
	pl_write(p, "a", 49152, 4096, 4);
	pl_fsync(p, "a");
	pl_truncate(p, "a", 20000);
	pl_write(p, "a", 4096, 4096, 5);
	pl_fsync(p, "a");
}

/* u::rw-, u:7:r--, g::r--, m::r--, o::--- (FORMAT.md §9). */
static const uint8_t pl_acl[] = {
	2, 0, 0, 0,
	0x01, 0, 6, 0, 0xff, 0xff, 0xff, 0xff,
	0x02, 0, 4, 0, 7, 0, 0, 0,
	0x04, 0, 4, 0, 0xff, 0xff, 0xff, 0xff,
	0x10, 0, 4, 0, 0xff, 0xff, 0xff, 0xff,
	0x20, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
};

/* u::rwx, g::r-x, o::r-x: only the mode (0755), stored as nothing. */
static const uint8_t pl_acl_min[] = {
	2, 0, 0, 0,
	0x01, 0, 7, 0, 0xff, 0xff, 0xff, 0xff,
	0x04, 0, 5, 0, 0xff, 0xff, 0xff, 0xff,
	0x20, 0, 5, 0, 0xff, 0xff, 0xff, 0xff,
};

static void sc_acl(struct pl *p)
{
	pl_mknod(p, "a", false);
	pl_mknod(p, "dir", true);
	pl_sync(p);
	pl_set_acl(p, "a", "system.posix_acl_access", pl_acl, sizeof(pl_acl));
	pl_set_acl(p, "dir", "system.posix_acl_default", pl_acl,
		   sizeof(pl_acl));
	pl_sync(p);
	pl_chmod(p, "a", 0670);			/* the mask follows */
	pl_mknod_in(p, "dir", "f");		/* inherits, mode from it */
	pl_sync(p);
	pl_set_acl(p, "a", "system.posix_acl_access", pl_acl_min,
		   sizeof(pl_acl_min));		/* the ACL goes */
	pl_sync(p);
}

static void sc_tmpfile(struct pl *p)
{
	pl_tmpfile(p, "a", 12288, 1);
	pl_sync(p);
	pl_tmpfile(p, NULL, 8192, 2);		/* never linked */
	pl_tmpfile(p, "b", 8192, 3);
	pl_unlink(p, "a");
	pl_sync(p);
}

/* A chain of blocks, a fragmented value replaced and removed, unlink. */
static void sc_xattr_chain(struct pl *p)
{
	pl_mknod(p, "a", false);
	pl_set_many(p, "a", 200);
	pl_set_big(p, "a", MQFS_XATTR_VALUE_MAX, 1);
	pl_sync(p);
	pl_set_big(p, "a", MQFS_XATTR_VALUE_MAX - 5000, 2);
	pl_set_many(p, "a", 120);
	pl_sync(p);
	pl_set_big(p, "a", 0, 0);
	pl_sync(p);
	pl_set_big(p, "a", 20000, 3);
	pl_unlink(p, "a");
	pl_sync(p);
}

static void sc_renameat2(struct pl *p)
{
	pl_mknod(p, "a", false);
	pl_write(p, "a", 0, 8192, 1);
	pl_mknod(p, "dir", true);
	pl_sync(p);
	pl_rename(p, "a", "b", RENAME_WHITEOUT);
	pl_mknod(p, "c", false);
	pl_write(p, "c", 0, 4096, 2);
	pl_rename(p, "b", "c", RENAME_EXCHANGE);
	pl_sync(p);
	pl_rename(p, "dir", "d", RENAME_WHITEOUT);
	pl_rename(p, "c", "d", RENAME_EXCHANGE);	/* a file and a dir */
	pl_sync(p);
}

/*
 * Lazy AGs: a directory goes to the AG with the most free inodes, an
 * uninitialised one while there is one, whose first use writes it in
 * the mkdir's transaction; the xattr block then comes from that AG.
 * Three directories initialise AGs 1, 2 and 3.
 */
static void sc_new_ags(struct pl *p)
{
	pl_mknod(p, "dir", true);
	pl_setxattr(p, "dir", "x");
	pl_mknod(p, "b", true);
	pl_sync(p);
	pl_mknod(p, "c", true);
	pl_setxattr(p, "c", "y");
	pl_unlink(p, "b");
	pl_sync(p);
}

static const struct {
	const char *name;
	void (*run)(struct pl *p);
} pl_scenarios[] = {
	{ "create_write", sc_create_write },
	{ "rename_unlink", sc_rename_unlink },
	{ "truncate", sc_truncate },
	{ "fallocate_xattr", sc_fallocate_xattr },
	{ "dontcache", sc_dontcache },
	{ "acl", sc_acl },
	{ "tmpfile", sc_tmpfile },
	{ "renameat2", sc_renameat2 },
	{ "new_ags", sc_new_ags },
	{ "xattr_chain", sc_xattr_chain },
};

/* ---- the checks after a cut ------------------------------------------------ */

struct pl_seen {
	bool exists[PL_NAMES], dir[PL_NAMES];
	unsigned others;
};

static int pl_list_fill(void *ctx, const char *name, uint64_t ino,
			unsigned type, uint64_t next_pos,
			const struct mqfs_entry *e)
{
	struct pl_seen *s = ctx;

	(void)ino, (void)next_pos, (void)e;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	for (int i = 0; i < PL_NAMES; i++)
		if (!strcmp(name, pl_name[i])) {
			s->exists[i] = true;
			s->dir[i] = type == DT_DIR;
			return 0;
		}
	s->others++;
	return 0;
}

/* Some state in [durable, nsnap) has exactly the names seen. */
static bool pl_names_match(const struct pl *p, const struct pl_seen *s)
{
	for (unsigned j = p->durable; j < p->nsnap; j++) {
		bool same = true;

		for (int i = 0; i < PL_NAMES && same; i++)
			same = s->exists[i] == p->snap[j].e[i].exists &&
			       (!s->exists[i] ||
				s->dir[i] == p->snap[j].e[i].dir);
		if (same)
			return true;
	}
	return false;
}

static bool pl_zero(const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

/* Size and every block from some state in range (or a zero block). */
static void pl_check_file(struct pl *p, int i, uint64_t ino, const char *ctx)
{
	static uint8_t got[PL_FILE_MAX + 4096];
	bool size_ok = false;
	struct stat st;
	ssize_t n;

	ck_assert_int_eq(mqfs_getattr(p->t.fs, ino, &st), 0);
	for (unsigned j = p->durable; j < p->nsnap; j++)
		size_ok |= p->snap[j].e[i].exists &&
			   p->snap[j].e[i].size == (uint64_t)st.st_size;
	ck_assert_msg(size_ok, "%s: %s has size %lld, never its size", ctx,
		      pl_name[i], (long long)st.st_size);
	if (!st.st_size)
		return;
	{
		struct mqfs_file *f;

		ck_assert_int_eq(mqfs_open(p->t.fs, ino, O_RDONLY, &f), 0);
		n = t_read(p->t.fs, f, 0, got, (size_t)st.st_size);
		ck_assert_int_eq(mqfs_release(p->t.fs, f), 0);
	}
	ck_assert_int_eq(n, st.st_size);
	/* A sector is the device's unit: an overwrite not yet synced may
	 * be torn between sectors, never inside one. */
	for (size_t off = 0; off < (size_t)n; off += 512) {
		size_t len = MQ_MIN(512, (size_t)n - off);
		bool ok = pl_zero(got + off, len);

		for (unsigned j = p->durable; j < p->nsnap && !ok; j++)
			ok = p->snap[j].e[i].exists &&
			     !memcmp(got + off, p->snap[j].e[i].data + off, len);
		ck_assert_msg(ok, "%s: %s sector %zu holds data it never "
			      "had", ctx, pl_name[i], off / 512);
	}
}

static void pl_check_xattr(struct pl *p, int i, uint64_t ino, const char *ctx)
{
	uint8_t v[64];
	ssize_t n = mqfs_getxattr(p->t.fs, ino, PL_XATTR, v, sizeof(v));
	bool ok = false;

	ck_assert_msg(n >= 0 || n == -ENODATA, "%s: getxattr %zd", ctx, n);
	for (unsigned j = p->durable; j < p->nsnap && !ok; j++) {
		const struct pl_ent *e = &p->snap[j].e[i];

		ok = e->exists && (n < 0 ? !e->xlen :
			(size_t)n == e->xlen && !memcmp(v, e->x, e->xlen));
	}
	ck_assert_msg(ok, "%s: %s's %s is a value it never had", ctx,
		      pl_name[i], PL_XATTR);
}

/* user.big holds a value it had in a state since the last sync. */
static void pl_check_big(struct pl *p, int i, uint64_t ino, const char *ctx)
{
	static uint8_t v[MQFS_XATTR_VALUE_MAX], want[MQFS_XATTR_VALUE_MAX];
	ssize_t n = mqfs_getxattr(p->t.fs, ino, PL_BIG, v, sizeof(v));
	bool ok = false;

	ck_assert_msg(n >= 0 || n == -ENODATA, "%s: getxattr %zd", ctx, n);
	for (unsigned j = p->durable; j < p->nsnap && !ok; j++) {
		const struct pl_ent *e = &p->snap[j].e[i];

		if (!e->exists || (n < 0 ? e->big != 0 : e->big != (size_t)n))
			continue;
		pl_big_value(e->big_seed, e->big, want);
		ok = n < 0 || !memcmp(v, want, e->big);
	}
	ck_assert_msg(ok, "%s: %s's %s is a value it never had", ctx,
		      pl_name[i], PL_BIG);
}

/* user.many.*: the first k of them, k between two states' counts. */
static void pl_check_many(struct pl *p, int i, uint64_t ino, const char *ctx)
{
	uint32_t k = 0, lo = UINT32_MAX, hi = 0;
	char x[32], v[sizeof(PL_MANY_VALUE)];
	ssize_t n;

	for (;; k++) {
		snprintf(x, sizeof(x), PL_MANY_FMT, k);
		n = mqfs_getxattr(p->t.fs, ino, x, v, sizeof(v));
		if (n < 0)
			break;
		ck_assert_msg(n == sizeof(v) && !memcmp(v, PL_MANY_VALUE, n),
			      "%s: %s's %s holds another value", ctx,
			      pl_name[i], x);
	}
	ck_assert_msg(n == -ENODATA, "%s: getxattr %zd", ctx, n);
	snprintf(x, sizeof(x), PL_MANY_FMT, k + 1);
	ck_assert_msg(mqfs_getxattr(p->t.fs, ino, x, NULL, 0) == -ENODATA,
		      "%s: %s's user.many has a hole", ctx, pl_name[i]);
	for (unsigned j = p->durable; j < p->nsnap; j++) {
		const struct pl_ent *e = &p->snap[j].e[i];

		if (e->exists) {
			lo = MQ_MIN(lo, e->many);
			hi = MQ_MAX(hi, e->many);
		}
	}
	ck_assert_msg(k >= lo && k <= hi, "%s: %s has %u of user.many, not "
		      "%u to %u", ctx, pl_name[i], k, lo, hi);
}

static void pl_fsck_clean(struct pl *p, const char *ctx, const char *when)
{
	struct mqfs_fsck_opts o = { .mode = MQFS_FSCK_NO, .force = true };

	fflush(stdout);
	ck_assert_msg(mqfs_fsck(p->t.q, &o) == MQFS_FSCK_OK,
		      "%s: fsck -n %s is not clean", ctx, when);
}

/* Power back on: check the image, mount it (replay), compare, unmount. */
static void pl_check(struct pl *p, const char *ctx)
{
	struct pl_seen seen = { 0 };

	(void)mqfs_unmount(p->t.fs);
	p->t.fs = NULL;
	t_fs_close_queue(&p->t);
	t_fs_open_queue(&p->t, true);
	pl_fsck_clean(p, ctx, "after the cut");
	t_fs_mount(&p->t);
	ck_assert_int_eq(mqfs_readdir(p->t.fs, MQFS_ROOT_INO, 0, false,
				      pl_list_fill, &seen), 0);
	ck_assert_msg(!seen.others, "%s: names never made", ctx);
	ck_assert_msg(pl_names_match(p, &seen), "%s: the names are no state "
		      "since the last sync", ctx);
	for (int i = 0; i < PL_NAMES; i++) {
		uint64_t ino;

		if (!seen.exists[i])
			continue;
		ino = pl_ino(p, pl_name[i]);
		ck_assert_uint_ne(ino, 0);
		if (!seen.dir[i])
			pl_check_file(p, i, ino, ctx);
		pl_check_xattr(p, i, ino, ctx);
		pl_check_big(p, i, ino, ctx);
		pl_check_many(p, i, ino, ctx);
	}
	t_fs_unmount(&p->t);
	pl_fsck_clean(p, ctx, "after the replay");
}

/* ---- the runner ------------------------------------------------------------ */

/* A fresh filesystem; @seed chooses what a torn cut writes down. */
static void pl_start(struct pl *p, uint64_t seed)
{
	memset(&p->cur, 0, sizeof(p->cur));
	p->nsnap = p->durable = 0;
	p->dontcache = p->dead = false;
	t_fs_make_opts(&p->t, PL_SIZE, 0, true);
	if (seed > 1) {
		t_fs_unmount(&p->t);
		t_fs_close_queue(&p->t);
		p->t.fault_seed = seed;
		t_fs_open_queue(&p->t, true);
		t_fs_mount(&p->t);
	}
	pl_push(p);			/* the empty filesystem, flushed */
}

/* Write-like requests of scenario @s, run without a cut. */
static uint64_t pl_count(struct pl *p, unsigned s)
{
	struct mq_fault_stats a, b;

	pl_start(p, 1);
	mq_fault_get_stats(p->t.fault, &a);
	pl_scenarios[s].run(p);
	mq_fault_get_stats(p->t.fault, &b);
	ck_assert(!p->dead);
	if (pl_scenarios[s].run == sc_new_ags)
		ck_assert(!mqfs_ag_uninit(p->t.fs, 3));
	t_fs_destroy(&p->t);
	return b.writes - a.writes;
}

static void pl_run(struct pl *p, unsigned s, uint64_t k,
		   enum mq_fault_cut mode, uint64_t seed)
{
	char ctx[96];

	snprintf(ctx, sizeof(ctx), "%s, cut at write %llu (%s, seed %llu)",
		 pl_scenarios[s].name, (unsigned long long)k,
		 mode == MQ_FAULT_CUT_LOSE ? "lose" : "torn",
		 (unsigned long long)seed);
	pl_start(p, seed);
	ck_assert_int_eq(mq_fault_arm_cut(p->t.fault, k, mode), 0);
	pl_scenarios[s].run(p);
	if (!mq_fault_powered_off(p->t.fault))
		(void)mq_fault_power_cut(p->t.fault, mode);
	pl_check(p, ctx);
	t_fs_destroy(&p->t);
}

START_TEST(test_powerloss)
{
	unsigned s = (unsigned)_i, cuts = 0, seeds = 1;
	uint64_t n, first = 1, last;
	struct pl p;

	if (getenv("MQFS_PL_SCENARIO") &&
	    (unsigned)atoi(getenv("MQFS_PL_SCENARIO")) != s)
		return;
	memset(&p, 0, sizeof(p));
	p.snap = malloc(PL_SNAPS * sizeof(*p.snap));
	ck_assert_ptr_nonnull(p.snap);
	n = pl_count(&p, s);
	ck_assert_uint_gt(n, 2);
	last = n + 1;
	if (getenv("MQFS_PL_CUT"))
		first = last = strtoull(getenv("MQFS_PL_CUT"), NULL, 0);
	if (getenv("MQFS_PL_SEEDS"))
		seeds = (unsigned)atoi(getenv("MQFS_PL_SEEDS"));
	for (uint64_t k = first; k <= last; k++) {
		pl_run(&p, s, k, MQ_FAULT_CUT_LOSE, 1);
		cuts++;
		for (unsigned seed = 1; seed <= seeds; seed++, cuts++)
			pl_run(&p, s, k, MQ_FAULT_CUT_TORN, seed);
	}
	fprintf(stderr, "powerloss %s: %llu writes, %u cuts, all passed\n",
		pl_scenarios[s].name, (unsigned long long)n, cuts);
	free(p.snap);
}
END_TEST

static Suite *powerloss_suite(void)
{
	Suite *s = suite_create("powerloss");
	TCase *tc = t_tcase(s, "powerloss", 300);

	tcase_add_loop_test(tc, test_powerloss, 0,
			    (int)MQ_ARRAY_SIZE(pl_scenarios));
	return s;
}

T_MAIN(powerloss_suite)
