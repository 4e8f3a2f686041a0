// SPDX-License-Identifier: MIT
/*
 * inode.c - in-core inodes: the inode cache (get and put, new inodes,
 * times kept in memory until the next commit) and an inode's attributes,
 * locks and direct-I/O count.  Its record in the inode tables is
 * itable.c's, the deletion of an unlinked inode and the orphan list are
 * orphan.c's; the cache's internals they share are in icache_i.h.
 *
 * The cache: one hash by inode number under one mutex (the icache lock,
 * after the AG locks and before buffer locks in the lock order).  An
 * inode stays cached while a call uses it (refcount) or a file is open
 * (open_count).  Once both are zero it goes on an LRU list of idle
 * inodes, bounded by meta_cache_bytes / IC_BYTES_PER_UNUSED (about
 * 54,000 with the default 32 MiB); beyond that the oldest are freed.
 * One the kernel still holds (FUSE lookups not forgotten, nlookup)
 * leaves only its count behind, in c->held (lookups.c: some 30 bytes,
 * not a 600-byte inode), and gets it back when it is read again; while
 * its record is read a placeholder is hashed (ic_load), so there is
 * never a second, older copy.  An unlinked one
 * the kernel holds is never evicted: its last forget deletes it.
 *
 * Missing inodes: mqfs_iget returns -ENOENT both for a number outside
 * the filesystem and for a free record (no -ESTALE).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "icache_i.h"

#define IC_BUCKETS_MIN		1024u
/* What one idle inode costs: its entry in the slab (64-byte aligned). */
#define IC_BYTES_PER_UNUSED	((sizeof(struct ic_ent) + 63u) & ~63u)
#define IC_UNUSED_MIN		16u

/*
 * ip->lazy: CLEAN, QUEUED on the list, or WRITING (taken off it by a
 * batch, which holds lazy_lock until they are CLEAN again; a touch that
 * sees WRITING waits for the lock and queues anew).
 *
 * Lock order: inode lock, then a handle, then lazy_lock - a batch starts
 * its handle before it takes the lock, and the commit thread only tries
 * both, so nothing holding lazy_lock ever waits for the journal.  The
 * list holds no reference: a queued inode is never evicted
 * (ic_park_locked passes it by until a commit wrote it, so eviction does
 * no I/O), and a deletion, of an inode nothing uses and so nothing can
 * queue again, takes it off before its own handle.
 */
enum { IC_LAZY_CLEAN = 0, IC_LAZY_QUEUED, IC_LAZY_WRITING };
#define IC_LAZY_BATCH		16u	/* records per handle */
#define IC_EVICT_SCAN		16u	/* queued inodes passed by per park */

/* No call and no open file uses it: it may wait on the LRU list. */
static inline bool ic_idle(const struct mqfs_ino *ip)
{
	return !ip->refcount && !ip->open_count;
}


/* ---- entries ----------------------------------------------------------- */

static struct ic_ent *ic_alloc(struct mqfs_icache *c, uint64_t ino)
{
	struct ic_ent *e = mqfs_slab_alloc(&c->ents);

	if (!e)
		return NULL;
	memset(e, 0, sizeof(*e));
	e->ip.ino = ino;
	pthread_rwlock_init(&e->ip.lock, NULL);
	pthread_mutex_init(&e->ip.meta_lock, NULL);
	mq_inflight_init(&e->ip.dio);
	mq_list_init(&e->ip.lazy_link);
	mq_list_init(&e->lru);
	return e;
}

void mqfs_ic_free(struct mqfs_icache *c, struct ic_ent *e)
{
	if (e->ip.dir_index)
		c->ops->free_dir_index(&e->ip);
	mq_inflight_destroy(&e->ip.dio);
	pthread_mutex_destroy(&e->ip.meta_lock);
	pthread_rwlock_destroy(&e->ip.lock);
	mqfs_slab_free(&c->ents, e);
}

static void ic_free_list(struct mqfs_icache *c, struct mq_list_head *list)
{
	struct ic_ent *e;

	mq_list_for_each_entry_safe(e, list, lru) {
		mq_list_del_init(&e->lru);
		mqfs_ic_free(c, e);
	}
}

/* ---- times kept in memory ------------------------------------------------- */

/* @ip is being deleted or freed (nothing uses it): off the list. */
void mqfs_ic_lazy_drop(struct mqfs_icache *c, struct mqfs_ino *ip)
{
	if (atomic_load(&ip->lazy) == IC_LAZY_CLEAN)
		return;		/* nobody uses it: nobody queues it meanwhile */
	pthread_mutex_lock(&c->lazy_lock);
	if (atomic_load(&ip->lazy) == IC_LAZY_QUEUED) {
		mq_list_del_init(&ip->lazy_link);
		atomic_fetch_sub(&c->nr_lazy, 1);
	}
	atomic_store(&ip->lazy, IC_LAZY_CLEAN);
	pthread_mutex_unlock(&c->lazy_lock);
}

void mqfs_ino_touch_lazy(struct mqfs_fs *fs, struct mqfs_ino *ip)
{
	/* The times first: a concurrent write of the record that took
	 * @ip off the list already set it WRITING (see IC_LAZY_*). */
	mqfs_touch(ip, false, true, true);
	mqfs_ino_queue_lazy(fs, ip);
}

void mqfs_ino_queue_lazy(struct mqfs_fs *fs, struct mqfs_ino *ip)
{
	struct mqfs_icache *c = fs->icache;

	if (atomic_load(&ip->lazy) == IC_LAZY_QUEUED)
		return;
	pthread_mutex_lock(&c->lazy_lock);
	if (atomic_load(&ip->lazy) == IC_LAZY_CLEAN) {
		atomic_store(&ip->lazy, IC_LAZY_QUEUED);
		mq_list_add_tail(&ip->lazy_link, &c->lazy);
		atomic_fetch_add(&c->nr_lazy, 1);
	}
	pthread_mutex_unlock(&c->lazy_lock);
}

/* Take up to @max queued inodes off the list (lazy_lock held). */
static unsigned ic_lazy_take(struct mqfs_icache *c, struct mqfs_ino **v,
			     unsigned max)
{
	unsigned n = 0;

	while (n < max && !mq_list_empty(&c->lazy)) {
		struct mqfs_ino *ip = mq_list_first_entry(&c->lazy,
							  struct mqfs_ino,
							  lazy_link);

		mq_list_del_init(&ip->lazy_link);
		atomic_fetch_sub(&c->nr_lazy, 1);
		atomic_store(&ip->lazy, IC_LAZY_WRITING);
		v[n++] = ip;
	}
	return n;
}

/* Records [from, n) were not written: back on the list (mount failing). */
static void ic_lazy_requeue(struct mqfs_icache *c, struct mqfs_ino **v,
			    unsigned from, unsigned n)
{
	for (unsigned k = 0; k < n; k++) {
		if (k < from) {
			atomic_store(&v[k]->lazy, IC_LAZY_CLEAN);
			continue;
		}
		atomic_store(&v[k]->lazy, IC_LAZY_QUEUED);
		mq_list_add_tail(&v[k]->lazy_link, &c->lazy);
		atomic_fetch_add(&c->nr_lazy, 1);
	}
}

/* A handle, then up to a batch of queued records in it; -EAGAIN: not now. */
static int ic_lazy_batch(struct mqfs_fs *fs, struct mqfs_icache *c, bool wait)
{
	/* A batch is small against the journal (tests make tiny ones). */
	unsigned max = MQ_MAX(1u,
			      MQ_MIN(IC_LAZY_BATCH, fs->journal_blocks / 8));
	struct mqfs_ino *v[IC_LAZY_BATCH];
	struct mqfs_handle h;
	unsigned n, i;
	int err;

	err = wait ? mqfs_trans_start(fs, max, &h)
		   : mqfs_trans_try_start(fs, max, &h);
	if (err)
		return err;
	if (wait) {
		pthread_mutex_lock(&c->lazy_lock);
	} else if (pthread_mutex_trylock(&c->lazy_lock)) {
		mqfs_trans_stop(&h);
		return -EAGAIN;		/* a batch of another thread is at it */
	}
	n = ic_lazy_take(c, v, max);
	for (i = 0; i < n && !err; i++)
		err = v[i]->deleted ? 0 : mqfs_inode_dirty(&h, v[i]);
	ic_lazy_requeue(c, v, err ? i - 1 : n, n);
	pthread_mutex_unlock(&c->lazy_lock);
	return mqfs_trans_finish(&h, err);
}

int mqfs_ino_write_lazy(struct mqfs_fs *fs, bool wait)
{
	struct mqfs_icache *c = fs->icache;
	int err = 0;

	if (!c || mqfs_fs_writable(fs))
		return 0;
	while (!err && atomic_load(&c->nr_lazy))
		err = ic_lazy_batch(fs, c, wait);
	return err == -EAGAIN ? 0 : err;	/* no room: the next commit */
}

int mqfs_inode_write(struct mqfs_fs *fs, struct mqfs_ino *ip)
{
	return mqfs_trans_one(fs, MQFS_CREDITS_INODE, mqfs_inode_dirty, ip);
}

/* ---- hash (icache lock held) ---------------------------------------------- */

static size_t ic_bucket(size_t nbuckets, uint64_t ino)
{
	return (size_t)((ino * 0x9e3779b97f4a7c15ull) >> 32) & (nbuckets - 1);
}

static struct mqfs_ino *ic_find_locked(struct mqfs_icache *c, uint64_t ino)
{
	struct mqfs_ino *ip = c->hash[ic_bucket(c->nbuckets, ino)];

	while (ip && ip->ino != ino)
		ip = ip->hash_next;
	return ip;
}

/* Double the buckets when chains grow; on ENOMEM keep the old ones. */
static void ic_grow_locked(struct mqfs_icache *c)
{
	size_t n = c->nbuckets * 2;
	struct mqfs_ino **h = calloc(n, sizeof(*h));

	if (!h)
		return;
	for (size_t i = 0; i < c->nbuckets; i++) {
		while (c->hash[i]) {
			struct mqfs_ino *ip = c->hash[i];
			size_t b = ic_bucket(n, ip->ino);

			c->hash[i] = ip->hash_next;
			ip->hash_next = h[b];
			h[b] = ip;
		}
	}
	free(c->hash);
	c->hash = h;
	c->nbuckets = n;
}

static void ic_insert_locked(struct mqfs_icache *c, struct mqfs_ino *ip)
{
	struct mqfs_ino **head;

	if (c->nr_cached >= 2 * c->nbuckets)
		ic_grow_locked(c);
	head = &c->hash[ic_bucket(c->nbuckets, ip->ino)];
	ip->hash_next = *head;
	*head = ip;
	ic_ent(ip)->hashed = true;
	c->nr_cached++;
}

void mqfs_ic_unhash_locked(struct mqfs_icache *c, struct mqfs_ino *ip)
{
	struct mqfs_ino **pp = &c->hash[ic_bucket(c->nbuckets, ip->ino)];

	if (!ic_ent(ip)->hashed)
		return;
	while (*pp != ip)
		pp = &(*pp)->hash_next;
	*pp = ip->hash_next;
	ip->hash_next = NULL;
	ic_ent(ip)->hashed = false;
	c->nr_cached--;
}

/* Take a reference; an unused inode leaves the LRU list. */
void mqfs_ic_hold_locked(struct mqfs_icache *c, struct mqfs_ino *ip)
{
	struct ic_ent *e = ic_ent(ip);

	if (!mq_list_empty(&e->lru)) {
		mq_list_del_init(&e->lru);
		c->nr_unused--;
	}
	ip->refcount++;
}

/*
 * May @e go now?  Not while its times are only in memory (the next
 * commit writes them, a later park evicts it), nor while its lookups
 * cannot be kept in c->held (no memory).
 */
static bool ic_may_evict_locked(struct mqfs_icache *c, struct ic_ent *e)
{
	if (atomic_load(&e->ip.lazy) != IC_LAZY_CLEAN)
		return false;
	return !e->ip.nlookup ||
	       !mqfs_lookups_add(&c->held, e->ip.ino, e->ip.nlookup);
}

/*
 * An inode became idle: to the LRU, evicting the oldest past the bound;
 * one that may not go yet is passed by (to the LRU's tail).
 */
static void ic_park_locked(struct mqfs_icache *c, struct mqfs_ino *ip,
			   struct mq_list_head *victims)
{
	unsigned passed = 0;

	mq_list_add_tail(&ic_ent(ip)->lru, &c->lru);
	c->nr_unused++;
	while (c->nr_unused > c->max_unused && passed < IC_EVICT_SCAN) {
		struct ic_ent *old = mq_list_first_entry(&c->lru,
							 struct ic_ent, lru);

		mq_list_del_init(&old->lru);
		if (!ic_may_evict_locked(c, old)) {
			mq_list_add_tail(&old->lru, &c->lru);
			passed++;
			continue;
		}
		c->nr_unused--;
		mqfs_ic_unhash_locked(c, &old->ip);
		mq_list_add_tail(&old->lru, victims);
	}
}

/* ---- the cache ------------------------------------------------------------ */

int mqfs_icache_create(struct mqfs_fs *fs)
{
	struct mqfs_icache *c = calloc(1, sizeof(*c));
	uint64_t bytes = fs->opts.meta_cache_bytes ? fs->opts.meta_cache_bytes
						   : 32ull << 20;

	if (!c)
		return -ENOMEM;
	c->nbuckets = IC_BUCKETS_MIN;
	c->hash = calloc(c->nbuckets, sizeof(*c->hash));
	if (!c->hash) {
		free(c);
		return -ENOMEM;
	}
	c->max_unused = MQ_MAX(bytes / IC_BYTES_PER_UNUSED, IC_UNUSED_MIN);
	mqfs_slab_init(&c->ents, sizeof(struct ic_ent), 64);
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->loaded, NULL);
	pthread_mutex_init(&c->lazy_lock, NULL);
	mq_list_init(&c->lru);
	mq_list_init(&c->lazy);
	c->ops = fs->ino_ops;
	fs->icache = c;
	return 0;
}

void mqfs_icache_counts(struct mqfs_fs *fs, size_t *cached, size_t *held)
{
	struct mqfs_icache *c = fs->icache;

	pthread_mutex_lock(&c->lock);
	*cached = c->nr_cached;
	*held = c->held.count;
	pthread_mutex_unlock(&c->lock);
}

/*
 * Unmount: unlinked inodes the front end still refers to are deleted
 * now (FUSE sends no forget at unmount), then every entry is freed.
 */
void mqfs_icache_destroy(struct mqfs_fs *fs)
{
	struct mqfs_icache *c = fs->icache;
	unsigned held = 0;

	if (!c)
		return;
	mqfs_ino_write_lazy(fs, true);
	/* The commit thread stops calling in before the cache goes. */
	mqfs_journal_set_pre_commit(fs, NULL);
	if (!mqfs_fs_writable(fs))
		mqfs_ic_delete_unlinked(fs);
	for (size_t i = 0; i < c->nbuckets; i++) {
		while (c->hash[i]) {
			struct mqfs_ino *ip = c->hash[i];

			if (ip->refcount || ip->open_count)
				held++;
			c->hash[i] = ip->hash_next;
			mqfs_ic_free(c, ic_ent(ip));
		}
	}
	if (held)
		fprintf(stderr, "mqfs: icache: %u inodes still referenced "
			"or open at teardown\n", held);
	pthread_mutex_destroy(&c->lazy_lock);
	pthread_cond_destroy(&c->loaded);
	pthread_mutex_destroy(&c->lock);
	mqfs_lookups_free(&c->held);
	mqfs_slab_destroy(&c->ents);
	free(c->hash);
	free(c);
	fs->icache = NULL;
}

/* ---- get / put ------------------------------------------------------------ */

/*
 * Hold cached @ip and wait until its record is in: 0, or the reader's
 * error (the entry is unhashed then; the caller drops its reference).
 */
static int ic_hold_loaded_locked(struct mqfs_icache *c, struct mqfs_ino *ip)
{
	struct ic_ent *e = ic_ent(ip);

	mqfs_ic_hold_locked(c, ip);
	while (e->loading)
		pthread_cond_wait(&c->loaded, &c->lock);
	return e->load_err;
}

/*
 * A hashed placeholder while the record is read, so that no second copy
 * of the inode can exist: an inode evicted and changed by another thread
 * meanwhile would otherwise come back with the record read before.
 */
static int ic_load(struct mqfs_fs *fs, struct ic_ent *e)
{
	struct mqfs_icache *c = fs->icache;
	struct mqfs_ino *ip = &e->ip;
	int err = mqfs_ic_read_record(fs, ip->ino, &ip->d);

	if (!err && ip->d.orphan_next)
		e->orphan = IC_ORPH_ON;
	pthread_mutex_lock(&c->lock);
	e->loading = false;
	e->load_err = err;
	if (err) {
		mqfs_ic_unhash_locked(c, ip);
		int lerr = ip->nlookup ?
			   mqfs_lookups_add(&c->held, ip->ino, ip->nlookup) : 0;

		if (lerr)
			fprintf(stderr, "mqfs: inode %" PRIu64 ": %" PRIu64
				" lookups lost (%s)\n", ip->ino, ip->nlookup,
				strerror(-lerr));
		ip->nlookup = 0;
	}
	pthread_cond_broadcast(&c->loaded);
	pthread_mutex_unlock(&c->lock);
	return err;
}

int mqfs_iget(struct mqfs_fs *fs, uint64_t ino, struct mqfs_ino **out)
{
	struct mqfs_icache *c = fs->icache;
	struct mqfs_ino *ip;
	struct ic_ent *e = NULL;
	int err;

	*out = NULL;
	if (!ino || ino > fs->inode_count)
		return -ENOENT;
	for (;;) {
		pthread_mutex_lock(&c->lock);
		ip = ic_find_locked(c, ino);
		if (ip || e)
			break;
		pthread_mutex_unlock(&c->lock);
		e = ic_alloc(c, ino);
		if (!e)
			return -ENOMEM;
	}
	if (ip) {
		err = ic_hold_loaded_locked(c, ip);
		pthread_mutex_unlock(&c->lock);
		if (e)
			mqfs_ic_free(c, e);
	} else {
		ip = &e->ip;
		ip->refcount = 1;
		ip->nlookup = mqfs_lookups_take(&c->held, ino);
		e->loading = true;
		ic_insert_locked(c, ip);
		pthread_mutex_unlock(&c->lock);
		err = ic_load(fs, e);
	}
	if (err) {
		/* Unhashed: freed at the last put. */
		mqfs_ic_put(fs, ip, false);
		return err;
	}
	*out = ip;
	return 0;
}

/*
 * Drop a reference.  @may_delete is false on the orphan walk, which
 * runs inside a handle with sb_lock held: an orphan it touched is left
 * cached (and on the orphan list) instead of being deleted there.
 */
void mqfs_ic_put(struct mqfs_fs *fs, struct mqfs_ino *ip, bool may_delete)
{
	struct mq_list_head victims = MQ_LIST_HEAD_INIT(victims);
	struct mqfs_icache *c = fs->icache;
	struct ic_ent *e = ic_ent(ip);

	pthread_mutex_lock(&c->lock);
	MQ_ASSERT(ip->refcount > 0);
	ip->refcount--;
	/* An unlinked inode the kernel holds waits, cached, for its forget. */
	if (!ic_idle(ip) || (ip->nlookup && !ip->d.nlink && e->hashed)) {
		pthread_mutex_unlock(&c->lock);
		return;
	}
	if (!e->hashed) {
		/*
		 * Deleted or dropped while this reference was held (an
		 * orphan walk's reference may outlive the deleter's).
		 */
		pthread_mutex_unlock(&c->lock);
		mqfs_ic_lazy_drop(c, ip);
		mqfs_ic_free(c, e);
		return;
	}
	if (e->dying) {
		pthread_mutex_unlock(&c->lock);
		return;
	}
	if (!ip->d.nlink && may_delete && !mqfs_fs_writable(fs)) {
		e->dying = true;
		ip->refcount = 1;	/* the deleter's */
		pthread_mutex_unlock(&c->lock);
		mqfs_ic_delete(fs, e);
		return;
	}
	ic_park_locked(c, ip, &victims);
	pthread_mutex_unlock(&c->lock);
	ic_free_list(c, &victims);
}

void mqfs_iput(struct mqfs_fs *fs, struct mqfs_ino *ip)
{
	mqfs_ic_put(fs, ip, true);
}

/* Take @ip out of the cache and drop the caller's reference. */
void mqfs_ic_unhash_put(struct mqfs_fs *fs, struct ic_ent *e)
{
	struct mqfs_icache *c = fs->icache;
	bool last;

	pthread_mutex_lock(&c->lock);
	mqfs_ic_unhash_locked(c, &e->ip);
	MQ_ASSERT(e->ip.refcount > 0);
	last = --e->ip.refcount == 0;
	pthread_mutex_unlock(&c->lock);
	mqfs_ic_lazy_drop(c, &e->ip);
	if (last)
		mqfs_ic_free(c, e);
}

void mqfs_ino_lookup_inc(struct mqfs_fs *fs, struct mqfs_ino *ip)
{
	pthread_mutex_lock(&fs->icache->lock);
	ip->nlookup++;
	pthread_mutex_unlock(&fs->icache->lock);
}

void mqfs_ino_open_inc(struct mqfs_fs *fs, struct mqfs_ino *ip)
{
	pthread_mutex_lock(&fs->icache->lock);
	ip->open_count++;
	pthread_mutex_unlock(&fs->icache->lock);
}

bool mqfs_ino_is_open(struct mqfs_fs *fs, struct mqfs_ino *ip)
{
	bool open;

	pthread_mutex_lock(&fs->icache->lock);
	open = ip->open_count > 0;
	pthread_mutex_unlock(&fs->icache->lock);
	return open;
}

/* The caller still holds a reference; its mqfs_iput does the rest. */
void mqfs_ino_open_dec(struct mqfs_fs *fs, struct mqfs_ino *ip)
{
	pthread_mutex_lock(&fs->icache->lock);
	MQ_ASSERT(ip->open_count > 0);
	ip->open_count--;
	pthread_mutex_unlock(&fs->icache->lock);
}

void mqfs_forget(struct mqfs_fs *fs, uint64_t ino, uint64_t nlookup)
{
	struct mqfs_icache *c = fs->icache;
	struct mqfs_ino *ip;

	uint64_t had;

	pthread_mutex_lock(&c->lock);
	ip = ic_find_locked(c, ino);
	if (!ip) {
		/* Evicted: only its count is left (and no deletion waits). */
		if (mqfs_lookups_forget(&c->held, ino, nlookup, &had)) {
			pthread_mutex_unlock(&c->lock);
			if (nlookup > had)
				fprintf(stderr, "mqfs: inode %" PRIu64 ": "
					"forget %" PRIu64 " of %" PRIu64
					" lookups\n", ino, nlookup, had);
			return;
		}
		pthread_mutex_unlock(&c->lock);
		fprintf(stderr, "mqfs: inode %" PRIu64 ": forget of an inode "
			"that is not cached\n", ino);
		return;
	}
	if (nlookup > ip->nlookup) {
		fprintf(stderr, "mqfs: inode %" PRIu64 ": forget %" PRIu64
			" of %" PRIu64 " lookups\n", ino, nlookup,
			ip->nlookup);
		nlookup = ip->nlookup;
	}
	ip->nlookup -= nlookup;
	mqfs_ic_hold_locked(c, ip);
	pthread_mutex_unlock(&c->lock);
	mqfs_iput(fs, ip);
}

/* ---- new inodes ------------------------------------------------------------- */

static uint64_t ic_next_generation(struct mqfs_handle *h)
{
	struct mqfs_fs *fs = h->fs;
	uint64_t gen;

	pthread_mutex_lock(&fs->sb_lock);
	mqfs_buf_lock(fs->sb_buf);
	gen = mqfs_sb(fs)->inode_gen++;
	mqfs_trans_dirty(h, fs->sb_buf);
	mqfs_buf_unlock(fs->sb_buf);
	pthread_mutex_unlock(&fs->sb_lock);
	return gen;
}

/*
 * Is free inode @ino cached?  A stale lookup of the number may be
 * reading its (free) record right now: wait for that read to fail.
 */
static bool ic_find_new_slot_locked(struct mqfs_fs *fs, uint64_t ino)
{
	struct mqfs_icache *c = fs->icache;
	struct mqfs_ino *ip;

	while ((ip = ic_find_locked(c, ino)) && ic_ent(ip)->loading) {
		(void)ic_hold_loaded_locked(c, ip);
		pthread_mutex_unlock(&c->lock);
		mqfs_ic_put(fs, ip, false);
		pthread_mutex_lock(&c->lock);
	}
	return ip != NULL;
}

/* Credits: 2 (the superblock for inode_gen, the inode table block). */
int mqfs_inew(struct mqfs_handle *h, uint64_t ino, mode_t mode, uid_t uid,
	      gid_t gid, struct mqfs_ino **out)
{
	struct mqfs_fs *fs = h->fs;
	struct mqfs_icache *c = fs->icache;
	struct mqfs_inode *d;
	struct ic_ent *e;
	bool dup;
	int err;

	*out = NULL;
	if (!ino || ino > fs->inode_count || !(mode & S_IFMT))
		return -EINVAL;
	e = ic_alloc(c, ino);
	if (!e)
		return -ENOMEM;
	d = &e->ip.d;
	d->mode = (uint16_t)mode;
	d->uid = uid;
	d->gid = gid;
	d->nlink = 1;
	mqfs_now(&d->ctime_sec, &d->ctime_nsec);
	d->atime_sec = d->mtime_sec = d->crtime_sec = d->ctime_sec;
	d->atime_nsec = d->mtime_nsec = d->crtime_nsec = d->ctime_nsec;
	d->generation = ic_next_generation(h);
	e->orphan = IC_ORPH_OFF;
	e->ip.refcount = 1;
	pthread_mutex_lock(&c->lock);
	dup = ic_find_new_slot_locked(fs, ino);
	if (!dup)
		ic_insert_locked(c, &e->ip);
	pthread_mutex_unlock(&c->lock);
	if (dup) {
		mqfs_ic_free(c, e);
		mqfs_fs_error(fs, 0, "inode %" PRIu64 " allocated while in "
			      "use", ino);
		return -EUCLEAN;
	}
	err = mqfs_inode_dirty(h, &e->ip);
	if (err) {
		mqfs_ic_unhash_put(fs, e);
		return err;
	}
	*out = &e->ip;
	return 0;
}


/* ---- attributes, locks, direct I/O --------------------------------------- */

void mqfs_inode_stat(struct mqfs_fs *fs, struct mqfs_ino *ip,
		     struct stat *st)
{
	const struct mqfs_inode *d = &ip->d;

	(void)fs;
	memset(st, 0, sizeof(*st));
	st->st_ino = ip->ino;
	st->st_blksize = MQFS_BLOCK_SIZE;
	pthread_mutex_lock(&ip->meta_lock);
	st->st_mode = d->mode;
	st->st_nlink = d->nlink;
	st->st_uid = d->uid;
	st->st_gid = d->gid;
	st->st_rdev = d->rdev;
	/* Pending write-behind may have made the file longer already. */
	st->st_size = (off_t)MQ_MAX(d->size, atomic_load(&ip->wb.size));
	st->st_blocks = (blkcnt_t)(d->blocks * (MQFS_BLOCK_SIZE / 512));
	st->st_atim.tv_sec = (time_t)d->atime_sec;
	st->st_atim.tv_nsec = d->atime_nsec;
	st->st_mtim.tv_sec = (time_t)d->mtime_sec;
	st->st_mtim.tv_nsec = d->mtime_nsec;
	st->st_ctim.tv_sec = (time_t)d->ctime_sec;
	st->st_ctim.tv_nsec = d->ctime_nsec;
	pthread_mutex_unlock(&ip->meta_lock);
}

void mqfs_touch(struct mqfs_ino *ip, bool atime, bool mtime, bool ctime)
{
	uint64_t sec;
	uint32_t nsec;

	mqfs_now(&sec, &nsec);
	pthread_mutex_lock(&ip->meta_lock);
	if (atime) {
		ip->d.atime_sec = sec;
		ip->d.atime_nsec = nsec;
	}
	if (mtime) {
		ip->d.mtime_sec = sec;
		ip->d.mtime_nsec = nsec;
	}
	if (ctime) {
		ip->d.ctime_sec = sec;
		ip->d.ctime_nsec = nsec;
	}
	pthread_mutex_unlock(&ip->meta_lock);
}

void mqfs_ino_lock2(struct mqfs_ino *a, struct mqfs_ino *b)
{
	if (!b || a == b) {
		pthread_rwlock_wrlock(&a->lock);
		return;
	}
	if (a->ino > b->ino) {
		struct mqfs_ino *t = a;

		a = b;
		b = t;
	}
	pthread_rwlock_wrlock(&a->lock);
	pthread_rwlock_wrlock(&b->lock);
}

void mqfs_ino_unlock2(struct mqfs_ino *a, struct mqfs_ino *b)
{
	pthread_rwlock_unlock(&a->lock);
	if (b && b != a)
		pthread_rwlock_unlock(&b->lock);
}

void mqfs_igrab(struct mqfs_fs *fs, struct mqfs_ino *ip)
{
	struct mqfs_icache *c = fs->icache;

	pthread_mutex_lock(&c->lock);
	MQ_ASSERT(ip->refcount > 0 || ip->open_count > 0 || ip->nlookup > 0);
	mqfs_ic_hold_locked(c, ip);
	pthread_mutex_unlock(&c->lock);
}

void mqfs_ino_dio_start(struct mqfs_ino *ip)
{
	mq_inflight_inc(&ip->dio);
}

void mqfs_ino_dio_end(struct mqfs_ino *ip)
{
	mq_inflight_dec(&ip->dio);
}

void mqfs_ino_dio_wait(struct mqfs_fs *fs, struct mqfs_ino *ip)
{
	mq_queue_inflight_wait(fs->q, &ip->dio);
}
