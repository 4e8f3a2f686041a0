/* SPDX-License-Identifier: MIT */
/*
 * icache_i.h - the inode cache's internals, shared by its files: the
 * cache (inode.c), the deletion of unlinked inodes and the orphan list
 * (orphan.c), inode records (itable.c).  Not in fs_i.h: no other module
 * may look inside the cache or its entries.
 */
#ifndef MQFS_ICACHE_I_H
#define MQFS_ICACHE_I_H

#include "fs_i.h"

/* What the cache knows of an inode's place on the orphan list. */
enum { IC_ORPH_UNKNOWN = 0, IC_ORPH_ON, IC_ORPH_OFF };

/* A cached inode and the cache's bookkeeping of it. */
struct ic_ent {
	struct mqfs_ino ip;
	struct mq_list_head lru;	/* on icache->lru while unused */
	bool hashed;			/* findable by number */
	bool loading;			/* its record is being read */
	bool dying;			/* one thread is deleting it */
	int load_err;			/* why the read failed */
	uint8_t orphan;			/* IC_ORPH_*, under fs->sb_lock */
};

struct mqfs_icache {
	const struct mqfs_ino_ops *ops;	/* the calls upwards (fs->ino_ops) */
	pthread_mutex_t lock;		/* everything below, ip counts */
	struct mqfs_ino **hash;
	size_t nbuckets;		/* a power of two */
	size_t nr_cached;
	struct mq_list_head lru;	/* idle inodes, oldest first */
	size_t nr_unused, max_unused;
	struct mqfs_lookups held;	/* lookups of evicted inodes */
	struct mqfs_slab ents;		/* the ic_ents: they churn */
	pthread_cond_t loaded;		/* an entry stopped loading */
	/* Inodes whose times changed in memory only, by lazy_link. */
	pthread_mutex_t lazy_lock;
	struct mq_list_head lazy;
	atomic_uint nr_lazy;
};

static inline struct ic_ent *ic_ent(struct mqfs_ino *ip)
{
	return mq_container_of(ip, struct ic_ent, ip);
}

/* ---- inode.c ------------------------------------------------------------- */

void mqfs_ic_free(struct mqfs_icache *c, struct ic_ent *e);
/* @ip is being deleted or freed (nothing uses it): off the lazy list. */
void mqfs_ic_lazy_drop(struct mqfs_icache *c, struct mqfs_ino *ip);
/* Icache lock held: @ip is no longer findable by number. */
void mqfs_ic_unhash_locked(struct mqfs_icache *c, struct mqfs_ino *ip);
/* Icache lock held: take a reference; an unused inode leaves the LRU. */
void mqfs_ic_hold_locked(struct mqfs_icache *c, struct mqfs_ino *ip);
/* Drop a reference; with @may_delete false (the orphan walk) no deletion. */
void mqfs_ic_put(struct mqfs_fs *fs, struct mqfs_ino *ip, bool may_delete);
/* Take @e out of the cache and drop the caller's reference. */
void mqfs_ic_unhash_put(struct mqfs_fs *fs, struct ic_ent *e);

/* ---- itable.c ------------------------------------------------------------ */

/* Read @ino's record: -ENOENT when free, -EUCLEAN when impossible. */
int mqfs_ic_read_record(struct mqfs_fs *fs, uint64_t ino, struct mqfs_inode *d);

/* ---- orphan.c ------------------------------------------------------------ */

/* Delete @e, marked dying; the caller's reference is consumed. */
int mqfs_ic_delete(struct mqfs_fs *fs, struct ic_ent *e);
/* Unmount: delete the unlinked inodes the front end still refers to. */
void mqfs_ic_delete_unlinked(struct mqfs_fs *fs);

#endif /* MQFS_ICACHE_I_H */
