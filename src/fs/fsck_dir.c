// SPDX-License-Identifier: MIT
/*
 * fsck_dir.c - passes 5 and 6: the directory tree, link counts and the
 * orphan list.
 *
 * The walk starts at the root and visits every directory reachable from
 * it, breadth first.  Each directory block must verify and its records
 * tile the block the way dir.c keeps them (only the first record may be
 * free); each entry must name a live inode of the type it says, and a
 * directory may be entered from one place only.  What the walk finds is
 * counted: entries per inode, subdirectories per directory (a
 * directory's nlink is 2 + its subdirectories).
 *
 * Bad entries are removed the way dir.c removes them (merged into the
 * record before); a block that fails its checksum is reinitialised
 * empty.  Live inodes the walk never reached go to /lost+found (a whole
 * subtree under its topmost unreachable directory) or, with no links,
 * are freed.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsck_i.h"

#define FK_FIRST_REC	((unsigned)MQFS_HDR_SIZE)

/* Names seen in one directory (duplicate detection). */
struct fk_nent {
	uint32_t hash, next;		/* next: index + 1 in the chain */
	uint32_t off;			/* in the arena */
	uint8_t len;
};

struct fk_names {
	uint32_t *bucket;
	uint32_t nbucket;
	struct fk_nent *v;
	uint32_t n, cap;
	char *arena;
	size_t alen, acap;
};

/* A directory walk: the queue and scratch space. */
struct fk_dwalk {
	struct fsck *f;
	uint64_t *q;
	size_t head, n, cap;
	struct fk_names names;
	uint8_t *blk;
	uint64_t done;			/* directories scanned (progress) */
};

/* ---- names ------------------------------------------------------------ */

static void fk_names_reset(struct fk_names *s)
{
	if (s->bucket)
		memset(s->bucket, 0, s->nbucket * sizeof(*s->bucket));
	s->n = 0;
	s->alen = 0;
}

static void fk_names_free(struct fk_names *s)
{
	free(s->bucket);
	free(s->v);
	free(s->arena);
}

static int fk_names_grow(struct fk_names *s, size_t len)
{
	if (s->n == s->cap) {
		uint32_t cap = s->cap ? s->cap * 2 : 256;
		struct fk_nent *v = realloc(s->v, cap * sizeof(*v));
		uint32_t *b = calloc(cap, sizeof(*b));

		if (!v || !b) {
			free(b);
			if (v)
				s->v = v;
			return -ENOMEM;
		}
		s->v = v;
		s->cap = cap;
		free(s->bucket);
		s->bucket = b;
		s->nbucket = cap;
		for (uint32_t i = 0; i < s->n; i++) {
			uint32_t h = s->v[i].hash & (cap - 1);

			s->v[i].next = b[h];
			b[h] = i + 1;
		}
	}
	if (s->alen + len > s->acap) {
		size_t cap = s->acap ? s->acap * 2 : 4096;
		char *a;

		while (cap < s->alen + len)
			cap *= 2;
		a = realloc(s->arena, cap);
		if (!a)
			return -ENOMEM;
		s->arena = a;
		s->acap = cap;
	}
	return 0;
}

/* 1 when @name was seen already, 0 when added, -ENOMEM. */
static int fk_names_add(struct fk_names *s, const char *name, uint8_t len,
			uint32_t hash)
{
	struct fk_nent *e;
	int err;

	for (uint32_t i = s->nbucket ? s->bucket[hash & (s->nbucket - 1)] : 0;
	     i; i = s->v[i - 1].next) {
		e = &s->v[i - 1];
		if (e->hash == hash && e->len == len &&
		    !memcmp(s->arena + e->off, name, len))
			return 1;
	}
	err = fk_names_grow(s, len);
	if (err)
		return err;
	e = &s->v[s->n];
	*e = (struct fk_nent){ .hash = hash, .off = (uint32_t)s->alen,
			       .len = len };
	memcpy(s->arena + s->alen, name, len);
	s->alen += len;
	e->next = s->bucket[hash & (s->nbucket - 1)];
	s->bucket[hash & (s->nbucket - 1)] = ++s->n;
	return 0;
}

/* ---- the queue ---------------------------------------------------------- */

static int fk_queue_push(struct fk_dwalk *w, uint64_t ino)
{
	if (w->head + w->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 256;
		uint64_t *q;

		if (w->head) {
			memmove(w->q, w->q + w->head, w->n * sizeof(*w->q));
			w->head = 0;
		}
		if (w->n < w->cap) {
			w->q[w->n++] = ino;
			return 0;
		}
		q = realloc(w->q, cap * sizeof(*q));
		if (!q)
			return -ENOMEM;
		w->q = q;
		w->cap = cap;
	}
	w->q[w->head + w->n++] = ino;
	return 0;
}

/* ---- one entry ------------------------------------------------------------ */

/* A printable copy of a name for messages. */
static const char *fk_name_str(const char *name, size_t len, char *buf)
{
	size_t i;

	for (i = 0; i < len && i < MQFS_NAME_MAX; i++)
		buf[i] = name[i] >= 0x20 && name[i] < 0x7f ? name[i] : '?';
	buf[i] = '\0';
	return buf;
}

/* Why the entry must go, or NULL. */
static const char *fk_entry_bad(struct fk_dwalk *w, const struct mqfs_dirent *de,
				int *err)
{
	struct fsck *f = w->f;
	const struct fk_ino *fi;
	int dup;

	const char *why = mqfs_dirent_why_bad(de, f->inode_count);

	*err = 0;
	if (why)
		return why;		/* the daemon's rule */
	fi = &f->ino[de->ino];
	if (!(fi->flags & FK_I_LIVE))
		return "points at a free inode";
	dup = fk_names_add(&w->names, de->name, de->name_len,
			   (uint32_t)mqfs_hash(de->name, de->name_len));
	if (dup < 0) {
		*err = dup;
		return NULL;
	}
	if (dup)
		return "repeats a name";
	if ((fi->flags & FK_I_DIR) && (fi->flags & FK_I_REACHED))
		return "is a second link to a directory";
	return NULL;
}

/* Count a kept entry of @dir and queue a subdirectory. */
static int fk_entry_count(struct fk_dwalk *w, uint64_t dir, uint64_t ino)
{
	struct fk_ino *fi = &w->f->ino[ino];
	struct fk_dir *fd;

	fi->flags |= FK_I_REACHED;
	if (!(fi->flags & FK_I_DIR)) {
		fi->links++;
		return 0;
	}
	fd = mqfs_fk_dir_find(w->f, ino);
	if (fd)
		fd->found = dir;
	w->f->ino[dir].links++;		/* the subdirectory's ".." */
	return fk_queue_push(w, ino);
}

/* Check entry @de; 1 to keep it, 0 to remove it, -errno. */
static int fk_check_entry(struct fk_dwalk *w, uint64_t dir, uint64_t pblk,
			  unsigned off, struct mqfs_dirent *de, bool *changed)
{
	struct fsck *f = w->f;
	char nb[MQFS_NAME_MAX + 1];
	const char *why;
	uint32_t hash;
	unsigned dtype;
	int err;

	why = fk_entry_bad(w, de, &err);
	if (err)
		return err;
	fk_name_str(de->name, de->name_len, nb);
	if (why) {
		mqfs_fk_problem(f, FK_UNSAFE, "entry removed", "directory %llu "
				"(block %llu offset %u): entry '%s' -> inode "
				"%llu %s", (unsigned long long)dir,
				(unsigned long long)pblk, off, nb,
				(unsigned long long)de->ino, why);
		return 0;
	}
	hash = (uint32_t)mqfs_hash(de->name, de->name_len);
	dtype = f->ino[de->ino].dtype;
	if (de->hash != hash || de->type != dtype) {
		mqfs_fk_problem(f, FK_SAFE, "fixed", "directory %llu (block "
				"%llu): entry '%s' has a wrong %s",
				(unsigned long long)dir,
				(unsigned long long)pblk, nb,
				de->type != dtype ? "file type" : "hash");
		de->hash = hash;
		de->type = (uint8_t)dtype;
		*changed = true;
	}
	err = fk_entry_count(w, dir, de->ino);
	return err ? err : 1;
}

/* ---- one block ------------------------------------------------------------ */

static void fk_dir_block_init(uint8_t *blk)
{
	struct mqfs_dirent *de = (void *)(blk + FK_FIRST_REC);

	memset(blk, 0, MQFS_BLOCK_SIZE);
	de->rec_len = MQFS_BLOCK_SIZE - FK_FIRST_REC;
}

/* Does the record at @off fit the block the way dir.c checks it? */
static bool fk_rec_ok(const uint8_t *blk, unsigned off)
{
	const struct mqfs_dirent *de = (const void *)(blk + off);

	if (off + MQFS_DIRENT_HDR > MQFS_BLOCK_SIZE)
		return false;
	if (de->rec_len < MQFS_DIRENT_HDR || de->rec_len % 8 ||
	    off + de->rec_len > MQFS_BLOCK_SIZE)
		return false;
	if (!de->ino)
		return off == FK_FIRST_REC;
	return de->name_len && MQFS_DIRENT_LEN(de->name_len) <= de->rec_len;
}

/* Drop the record at @off: into the one before, or clear the first. */
static void fk_rec_remove(uint8_t *blk, unsigned prev, unsigned off)
{
	struct mqfs_dirent *de = (void *)(blk + off);

	if (off == FK_FIRST_REC) {
		de->ino = 0;
		de->name_len = 0;
		de->type = 0;
		de->hash = 0;
		return;
	}
	((struct mqfs_dirent *)(blk + prev))->rec_len += de->rec_len;
}

static int fk_scan_records(struct fk_dwalk *w, uint64_t dir, uint64_t pblk,
			   uint8_t *blk, bool *changed)
{
	unsigned prev = 0;

	for (unsigned off = FK_FIRST_REC; off < MQFS_BLOCK_SIZE; ) {
		struct mqfs_dirent *de = (void *)(blk + off);
		unsigned next;
		int keep = 1;

		if (!fk_rec_ok(blk, off)) {
			mqfs_fk_problem(w->f, FK_UNSAFE, "rest of the block "
					"dropped", "directory %llu (block %llu "
					"offset %u): bad record",
					(unsigned long long)dir,
					(unsigned long long)pblk, off);
			if (prev)
				((struct mqfs_dirent *)(blk + prev))->rec_len =
					(uint16_t)(MQFS_BLOCK_SIZE - prev);
			else
				fk_dir_block_init(blk);
			*changed = true;
			return 0;
		}
		next = off + de->rec_len;
		if (de->ino)
			keep = fk_check_entry(w, dir, pblk, off, de, changed);
		if (keep < 0)
			return keep;
		if (!keep) {
			fk_rec_remove(blk, prev, off);
			*changed = true;
		}
		if (keep || off == FK_FIRST_REC)
			prev = off;
		off = next;
	}
	return 0;
}

static int fk_scan_dir_block(struct fk_dwalk *w, uint64_t dir, uint64_t lblk,
			     uint64_t pblk)
{
	bool changed = false;
	int err = mqfs_fk_read_meta(w->f, pblk, MQFS_T_DIR, w->blk);

	if (err == -EUCLEAN) {
		mqfs_fk_problem(w->f, FK_UNSAFE, "reinitialised empty; its "
				"entries are lost", "directory %llu block %llu "
				"(file block %llu): bad checksum or header",
				(unsigned long long)dir,
				(unsigned long long)pblk,
				(unsigned long long)lblk);
		fk_dir_block_init(w->blk);
		return mqfs_fk_write(w->f, pblk, w->blk, MQFS_T_DIR);
	}
	if (!err)
		err = fk_scan_records(w, dir, pblk, w->blk, &changed);
	if (!err && changed)
		err = mqfs_fk_write(w->f, pblk, w->blk, MQFS_T_DIR);
	return err;
}

static int fk_scan_dir(struct fk_dwalk *w, uint64_t dir)
{
	struct mqfs_extent *v = NULL;
	struct mqfs_inode d;
	uint64_t lblk = 0;
	size_t n = 0;
	int err = mqfs_fk_inode_read(w->f, dir, &d);

	if (!err)
		err = mqfs_fk_dir_extents(w->f, &d, &v, &n);
	fk_names_reset(&w->names);
	for (size_t i = 0; !err && i < n; i++)
		for (uint32_t k = 0; !err && k < v[i].len; k++, lblk++)
			err = fk_scan_dir_block(w, dir, v[i].lblk + k,
						v[i].pblk + k);
	free(v);
	return err;
}

/* Scan @start and everything below it not reached yet. */
static int fk_walk_from(struct fsck *f, uint64_t start)
{
	struct fk_dwalk w = { .f = f };
	int err;

	w.blk = mqfs_alloc_blocks_mem(1);
	err = w.blk ? fk_queue_push(&w, start) : -ENOMEM;
	f->ino[start].flags |= FK_I_REACHED;
	while (!err && w.n) {
		uint64_t dir = w.q[w.head++];

		w.n--;
		err = fk_scan_dir(&w, dir);
		mqfs_fk_progress(f, ++f->dirs_done, f->ndirs);
	}
	free(w.q);
	free(w.blk);
	fk_names_free(&w.names);
	return err;
}

/* ---- pass 5 -------------------------------------------------------------- */

/* The root must be a live directory; otherwise it starts over empty. */
static int fk_check_root(struct fsck *f)
{
	struct fk_ino *fi = &f->ino[MQFS_ROOT_INO];
	int err = 0;

	if ((fi->flags & (FK_I_LIVE | FK_I_DIR)) == (FK_I_LIVE | FK_I_DIR))
		return 0;
	mqfs_fk_problem(f, FK_UNSAFE, "recreated empty", "root directory "
			"(inode 1): %s", fi->flags & FK_I_LIVE ? "not a "
			"directory" : "missing");
	if (fi->flags & FK_I_LIVE)
		err = mqfs_fk_free_inode(f, MQFS_ROOT_INO);
	return err ? err : mqfs_fk_make_dir(f, MQFS_ROOT_INO, MQFS_ROOT_INO,
					    0755);
}

int mqfs_fk_pass_dirs(struct fsck *f)
{
	int err;

	mqfs_fk_verbose(f, "Pass 5: directories");
	mqfs_fk_progress_pass(f, 75, 20);
	err = fk_check_root(f);
	if (!err) {
		struct fk_dir *root = mqfs_fk_dir_find(f, MQFS_ROOT_INO);

		if (root)
			root->found = MQFS_ROOT_INO;
		err = fk_walk_from(f, MQFS_ROOT_INO);
	}
	return err;
}

/* ---- pass 6: the orphan list ------------------------------------------- */

int mqfs_fk_pass_orphans(struct fsck *f)
{
	uint64_t ino = f->sb->orphan_head, steps = 0;
	struct mqfs_inode d;
	int err;

	mqfs_fk_verbose(f, "Pass 6: orphan list");
	while (ino) {
		const char *why = NULL;

		if (!fk_ino_valid(f, ino))
			why = "is outside the inode table";
		else if (!(f->ino[ino].flags & FK_I_LIVE))
			why = "is free";
		else if (f->ino[ino].flags & FK_I_ORPHAN || ++steps > f->inode_count)
			why = "closes a cycle";
		if (why) {
			mqfs_fk_problem(f, FK_SAFE, "list cut there", "orphan "
					"list: inode %llu %s",
					(unsigned long long)ino, why);
			break;
		}
		f->ino[ino].flags |= FK_I_ORPHAN;
		err = mqfs_fk_inode_read(f, ino, &d);
		if (err)
			return err;
		ino = d.orphan_next;
	}
	return 0;
}

/* ---- unreachable inodes, orphans, link counts --------------------------- */

/* Link @ino into /lost+found as "#ino"; a directory's subtree follows. */
static int fk_reconnect(struct fsck *f, uint64_t ino)
{
	struct fk_ino *fi = &f->ino[ino];
	struct mqfs_inode d;
	char name[32];
	int err = mqfs_fk_lost_found(f);

	if (err)
		return err;
	snprintf(name, sizeof(name), "#%llu", (unsigned long long)ino);
	err = mqfs_fk_dir_add(f, f->lost_found, name, ino, fi->dtype);
	if (err)
		return err;
	fi->flags |= FK_I_REACHED;
	if (!(fi->flags & FK_I_DIR)) {
		fi->links++;
		return 0;
	}
	mqfs_fk_dir_find(f, ino)->found = f->lost_found;
	/* lost+found gains a subdirectory: its nlink follows at once. */
	err = mqfs_fk_inode_read(f, f->lost_found, &d);
	if (!err) {
		d.nlink++;
		f->ino[f->lost_found].nlink++;
		f->ino[f->lost_found].links++;
		err = mqfs_fk_inode_write(f, f->lost_found, &d);
	}
	return err ? err : fk_walk_from(f, ino);
}

/* Reconnect (or, when that fails, free) unreachable live inode @ino. */
static int fk_unreachable(struct fsck *f, uint64_t ino, const char *what)
{
	int err;

	mqfs_fk_problem(f, FK_UNSAFE, "moved to /lost+found", "%s %llu is not "
			"in any directory", what, (unsigned long long)ino);
	err = fk_reconnect(f, ino);
	if (err == -ENOMEM || err == -EIO)
		return err;
	if (err) {
		mqfs_fk_problem(f, FK_UNSAFE, "freed", "%s %llu: cannot "
				"reconnect it (%s)", what,
				(unsigned long long)ino, strerror(-err));
		err = mqfs_fk_free_inode(f, ino);
	}
	return err;
}

/* The topmost unreachable directory above @fd (by d.parent). */
static uint64_t fk_unreached_top(struct fsck *f, const struct fk_dir *fd)
{
	uint64_t top = fd->ino;

	for (size_t steps = 0; steps < f->ndirs; steps++) {
		const struct fk_dir *p = mqfs_fk_dir_find(f, fd->parent);

		if (!p || p->ino == fd->ino ||
		    (f->ino[p->ino].flags & (FK_I_LIVE | FK_I_REACHED)) !=
		    FK_I_LIVE)
			break;
		top = p->ino;
		fd = p;
	}
	return top;
}

static int fk_connect_dirs(struct fsck *f)
{
	int err = 0;

	for (size_t i = 0; i < f->ndirs && !err; i++) {
		uint64_t ino = f->dirs[i].ino, top;

		/* Removed directories (no links) are freed with the files. */
		if ((f->ino[ino].flags & (FK_I_LIVE | FK_I_REACHED)) !=
		    FK_I_LIVE || !f->ino[ino].nlink)
			continue;
		top = fk_unreached_top(f, &f->dirs[i]);
		err = fk_unreachable(f, top, "directory");
		if (!err && top != ino && !(f->ino[ino].flags & FK_I_REACHED))
			i--;	/* not below @top after all: again */
	}
	return err;
}

static int fk_connect_files(struct fsck *f)
{
	int err = 0;

	for (uint64_t ino = 1; ino <= f->inode_count && !err; ino++) {
		struct fk_ino *fi = &f->ino[ino];

		if ((fi->flags & (FK_I_LIVE | FK_I_REACHED)) != FK_I_LIVE)
			continue;
		if (fi->nlink && !(fi->flags & FK_I_ORPHAN)) {
			err = fk_unreachable(f, ino, "inode");
		} else if (fi->flags & FK_I_ORPHAN && !fi->nlink) {
			mqfs_fk_problem(f, FK_NOTE, NULL, "orphan inode %llu "
					"freed", (unsigned long long)ino);
			err = mqfs_fk_free_inode(f, ino);
		} else if (fi->flags & FK_I_ORPHAN) {
			err = fk_unreachable(f, ino, "orphan inode");
		} else {
			mqfs_fk_problem(f, FK_SAFE, "freed", "inode %llu: not "
					"in any directory and no links",
					(unsigned long long)ino);
			err = mqfs_fk_free_inode(f, ino);
		}
	}
	return err;
}

/*
 * Every orphan left is linked now.  A linked regular file on the list is
 * a truncate that a crash interrupted: its blocks past the end are still
 * mapped, and the next mount frees them (mqfs_orphan_recover), so it
 * stays on the list - rebuilt from the survivors, as fsck may have freed
 * the unlinked ones.  Anything else linked comes off.
 */
static int fk_clear_orphans(struct fsck *f)
{
	uint64_t head = 0, prev = 0;
	struct mqfs_inode d;
	int err = 0;

	for (uint64_t ino = 1; ino <= f->inode_count && !err; ino++) {
		bool keep;

		if ((f->ino[ino].flags & (FK_I_LIVE | FK_I_ORPHAN)) !=
		    (FK_I_LIVE | FK_I_ORPHAN))
			continue;
		err = mqfs_fk_inode_read(f, ino, &d);
		if (err)
			break;
		keep = S_ISREG(d.mode) && d.nlink;
		if (keep)
			mqfs_fk_problem(f, FK_NOTE, NULL, "inode %llu: "
					"interrupted truncate; the next mount "
					"finishes it", (unsigned long long)ino);
		else mqfs_fk_problem(f, FK_SAFE, "taken off the list", "inode "
				     "%llu: on the orphan list but linked",
				     (unsigned long long)ino);
		if (d.orphan_next) {
			d.orphan_next = 0;
			err = mqfs_fk_inode_write(f, ino, &d);
		}
		if (err || !keep)
			continue;
		if (prev) {
			err = mqfs_fk_inode_read(f, prev, &d);
			d.orphan_next = ino;
			if (!err)
				err = mqfs_fk_inode_write(f, prev, &d);
		} else {
			head = ino;
		}
		prev = ino;
	}
	if (!err && f->sb->orphan_head != head) {
		f->sb->orphan_head = head;
		f->sb_changed = true;
	}
	return err;
}

/* Directories: d.parent must name the directory holding them. */
static int fk_fix_parents(struct fsck *f)
{
	struct mqfs_inode d;
	int err = 0;

	for (size_t i = 0; i < f->ndirs && !err; i++) {
		struct fk_dir *fd = &f->dirs[i];

		if (!(f->ino[fd->ino].flags & FK_I_LIVE) ||
		    fd->parent == fd->found || !fd->found)
			continue;
		mqfs_fk_problem(f, FK_SAFE, "fixed", "directory %llu: parent "
				"is %llu, but it is in directory %llu",
				(unsigned long long)fd->ino,
				(unsigned long long)fd->parent,
				(unsigned long long)fd->found);
		err = mqfs_fk_inode_read(f, fd->ino, &d);
		if (!err) {
			d.parent = fd->found;
			fd->parent = fd->found;
			err = mqfs_fk_inode_write(f, fd->ino, &d);
		}
	}
	return err;
}

static int fk_fix_nlinks(struct fsck *f)
{
	struct mqfs_inode d;
	int err = 0;

	for (uint64_t ino = 1; ino <= f->inode_count && !err; ino++) {
		struct fk_ino *fi = &f->ino[ino];
		uint32_t want = fi->flags & FK_I_DIR ? 2 + fi->links
						     : fi->links;

		if (!(fi->flags & FK_I_LIVE) || fi->nlink == want)
			continue;
		mqfs_fk_problem(f, FK_SAFE, "fixed", "inode %llu: link count "
				"%u, counted %u", (unsigned long long)ino,
				fi->nlink, want);
		err = mqfs_fk_inode_read(f, ino, &d);
		if (!err) {
			d.nlink = want;
			fi->nlink = want;
			err = mqfs_fk_inode_write(f, ino, &d);
		}
	}
	return err;
}

int mqfs_fk_check_links(struct fsck *f)
{
	int err = fk_connect_dirs(f);

	if (!err)
		err = fk_connect_files(f);
	if (!err)
		err = fk_clear_orphans(f);
	if (!err)
		err = fk_fix_parents(f);
	return err ? err : fk_fix_nlinks(f);
}
