/* SPDX-License-Identifier: MIT */
/*
 * ctl.c - the control surface: a virtual directory .mqfs in the root
 * that readdir never lists and lookup finds (ZFS's .zfs), holding the
 * queue's tunables and statistics in the kernel's sysfs and blk-mq
 * debugfs vocabulary and the filesystem's own figures:
 *
 *   .mqfs/queue/scheduler, .mqfs/queue/<attr>   /sys/block/DEV/queue/
 *   .mqfs/queue/iosched/<tunable>               the elevator's tunables
 *   .mqfs/queue/iosched/{queued,owned_by_driver,prio_stat}  per priority
 *   .mqfs/queue/stat                            /sys/block/DEV/stat
 *   .mqfs/hctx<N>/{dispatched,run,requeues,dispatch_busy,tags,io}
 *   .mqfs/fs/{space,cache,journal,dontcache}
 *   .mqfs/fuse/{stat,conn}                      the FUSE engine, INIT
 *
 * The tree is fixed at mount: one node per name, inode number = base +
 * index, base above the filesystem's last inode so no real inode can
 * collide.  Nodes live as long as the mount, so lookup counts need no
 * keeping and forget has nothing to do.  A file's text is generated at
 * open and kept in the handle (the files are direct_io); a write is
 * parsed and applied at once, as sysfs does.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fuse_i.h"
#include "mqfs/elevator.h"

#define CTL_NAME	".mqfs"
#define CTL_ROOT_PARENT	UINT32_MAX	/* node 0's parent: the fs root */
#define CTL_TEXT_MAX	4096
#define CTL_WRITE_MAX	256

enum ctl_kind {
	CTL_DIR,
	CTL_QATTR,	/* queue/<attr>: mq_queue_attr_show/store */
	CTL_ELVATTR,	/* queue/iosched/<tunable>: same, elevator's */
	CTL_QSTAT,	/* queue/stat */
	CTL_HCTX,	/* hctx<N>/<file>: @arg = N, @file below */
	CTL_FS,		/* fs/<file> */
	CTL_FUSE,	/* fuse/<file> */
	CTL_PRIO,	/* queue/iosched/<file>: per priority level */
};

/* mq-deadline's debugfs "queued" and "owned_by_driver", and all counts. */
enum ctl_prio_file { PF_QUEUED, PF_OWNED, PF_STAT, PF_COUNT };
static const char *const ctl_prio_files[PF_COUNT] = {
	"queued", "owned_by_driver", "prio_stat",
};

enum ctl_hctx_file { HF_DISPATCHED, HF_RUN, HF_REQUEUES, HF_BUSY, HF_TAGS,
		     HF_IO, HF_COUNT };
static const char *const ctl_hctx_files[HF_COUNT] = {
	"dispatched", "run", "requeues", "dispatch_busy", "tags", "io",
};

enum ctl_fs_file { FF_SPACE, FF_CACHE, FF_JOURNAL, FF_DONTCACHE, FF_COUNT };
static const char *const ctl_fs_files[FF_COUNT] = {
	"space", "cache", "journal", "dontcache",
};

enum ctl_fuse_file { UF_STAT, UF_CONN, UF_OPS, UF_COUNT };
static const char *const ctl_fuse_files[UF_COUNT] = { "stat", "conn", "ops" };

struct mqfs_ctl_node {
	const char *name;
	uint32_t parent;	/* node index, or CTL_ROOT_PARENT */
	uint8_t kind;
	uint8_t file;		/* CTL_HCTX, CTL_FS: which file */
	uint16_t arg;		/* CTL_HCTX: the hardware queue */
	bool writable;
};

/* An open control file: the text generated at open. */
struct mqfs_ctl_file {
	uint32_t node;
	size_t len;
	char text[CTL_TEXT_MAX];
};

/* ---- the tree ----------------------------------------------------------- */

static struct mqfs_ctl_node *ctl_add(struct mqfs_ctl *c, const char *name,
				     uint32_t parent, enum ctl_kind kind)
{
	struct mqfs_ctl_node *n = &c->nodes[c->nr_nodes++];

	*n = (struct mqfs_ctl_node){ .name = name, .parent = parent,
				     .kind = (uint8_t)kind };
	return n;
}

static bool ctl_is_elv_attr(const char *name)
{
	const char *elvs[8];
	unsigned n = mq_elv_list(elvs, 8);

	for (unsigned i = 0; i < n; i++) {
		const struct mq_elevator_type *t = mq_elv_find(elvs[i]);

		for (unsigned j = 0; t && j < t->nr_attrs; j++)
			if (!strcmp(t->attrs[j].name, name))
				return true;
	}
	return false;
}

/* Whether name is already a child of @parent (tunables shared by two
 * elevators get one node). */
static bool ctl_has_child(const struct mqfs_ctl *c, uint32_t parent,
			  const char *name)
{
	for (uint32_t i = 0; i < c->nr_nodes; i++)
		if (c->nodes[i].parent == parent &&
		    !strcmp(c->nodes[i].name, name))
			return true;
	return false;
}

/* queue/<attr> (queue-level names) and queue/iosched/<every tunable>. */
static void ctl_add_queue(struct mqfs_ctl *c, uint32_t queue)
{
	const char *names[64], *elvs[8];
	int n = mq_queue_attr_list(c->q, names, 64);
	unsigned ne = mq_elv_list(elvs, 8);
	uint32_t iosched;

	/*
	 * Which queue attributes take a store is the block layer's to say:
	 * -EACCES for the fixed ones comes before any parsing, and an empty
	 * value is refused by the others with nothing changed.
	 */
	for (int i = 0; i < n; i++)
		if (!ctl_is_elv_attr(names[i]))
			ctl_add(c, names[i], queue, CTL_QATTR)->writable =
				mq_queue_attr_store(c->q, names[i], "") !=
				-EACCES;
	ctl_add(c, "stat", queue, CTL_QSTAT);
	iosched = c->nr_nodes;
	ctl_add(c, "iosched", queue, CTL_DIR);
	for (unsigned i = 0; i < ne; i++) {
		const struct mq_elevator_type *t = mq_elv_find(elvs[i]);

		for (unsigned j = 0; t && j < t->nr_attrs; j++)
			if (!ctl_has_child(c, iosched, t->attrs[j].name))
				ctl_add(c, t->attrs[j].name, iosched,
					CTL_ELVATTR)->writable = true;
	}
	for (unsigned f = 0; f < PF_COUNT; f++)
		ctl_add(c, ctl_prio_files[f], iosched, CTL_PRIO)->file =
			(uint8_t)f;
}

static void ctl_add_hctx(struct mqfs_ctl *c, unsigned i)
{
	uint32_t dir = c->nr_nodes;

	snprintf(c->hctx_names[i], sizeof(c->hctx_names[i]), "hctx%u", i);
	ctl_add(c, c->hctx_names[i], 0, CTL_DIR);
	for (unsigned f = 0; f < HF_COUNT; f++) {
		struct mqfs_ctl_node *n = ctl_add(c, ctl_hctx_files[f], dir,
						  CTL_HCTX);

		n->file = (uint8_t)f;
		n->arg = (uint16_t)i;
	}
}

/* Upper bound of the nodes: dirs, queue names, tunables, hctx files. */
static unsigned ctl_max_nodes(unsigned nr_hw)
{
	return 5 + 64 + 8 * 16 + 2 + nr_hw * (1 + HF_COUNT) + FF_COUNT +
	       UF_COUNT;
}

int mqfs_ctl_init(struct mqfs_ctl *c, struct mqfs_fs *fs,
		  struct mqfs_daemon *d)
{
	struct mq_queue_stats st;
	uint32_t dir;

	*c = (struct mqfs_ctl){ .fs = fs, .q = mqfs_queue(fs), .d = d,
				.base = mqfs_inode_count(fs) + 1,
				.owner = getuid(), .group = getgid() };
	mq_queue_get_stats(c->q, -1, &st);
	c->nr_hw = st.nr_hw_queues;
	c->nodes = calloc(ctl_max_nodes(c->nr_hw), sizeof(*c->nodes));
	c->hctx_names = calloc(c->nr_hw ? c->nr_hw : 1,
			       sizeof(*c->hctx_names));
	if (!c->nodes || !c->hctx_names) {
		mqfs_ctl_destroy(c);
		return -ENOMEM;
	}
	pthread_mutex_init(&c->files_lock, NULL);
	c->files_ready = true;
	clock_gettime(CLOCK_REALTIME, &c->mtime);
	ctl_add(c, CTL_NAME, CTL_ROOT_PARENT, CTL_DIR);
	dir = c->nr_nodes;
	ctl_add(c, "queue", 0, CTL_DIR);
	ctl_add_queue(c, dir);
	for (unsigned i = 0; i < c->nr_hw; i++)
		ctl_add_hctx(c, i);
	dir = c->nr_nodes;
	ctl_add(c, "fs", 0, CTL_DIR);
	for (unsigned f = 0; f < FF_COUNT; f++)
		ctl_add(c, ctl_fs_files[f], dir, CTL_FS)->file = (uint8_t)f;
	dir = c->nr_nodes;
	ctl_add(c, "fuse", 0, CTL_DIR);
	for (unsigned f = 0; f < UF_COUNT; f++)
		ctl_add(c, ctl_fuse_files[f], dir, CTL_FUSE)->file = (uint8_t)f;
	return 0;
}

void mqfs_ctl_destroy(struct mqfs_ctl *c)
{
	for (uint32_t i = 0; i < c->files_cap; i++)
		free(c->files[i]);
	free(c->files);
	free(c->files_gen);
	c->files = NULL;
	c->files_gen = NULL;
	c->files_cap = 0;
	if (c->files_ready)
		pthread_mutex_destroy(&c->files_lock);
	c->files_ready = false;
	free(c->nodes);
	free(c->hctx_names);
	c->nodes = NULL;
	c->hctx_names = NULL;
	c->nr_nodes = 0;
}

bool mqfs_ctl_owns(const struct mqfs_ctl *c, uint64_t ino)
{
	return c->nr_nodes && ino >= c->base && ino - c->base < c->nr_nodes;
}

bool mqfs_ctl_claims(const struct mqfs_ctl *c, uint64_t parent,
		     const char *name)
{
	return mqfs_ctl_owns(c, parent) ||
	       (c->nr_nodes && parent == FUSE_ROOT_ID &&
		!strcmp(name, CTL_NAME));
}

static const struct mqfs_ctl_node *ctl_node(const struct mqfs_ctl *c,
					    uint64_t ino)
{
	return mqfs_ctl_owns(c, ino) ? &c->nodes[ino - c->base] : NULL;
}

/*
 * An iosched tunable is there only while the elevator has it, the
 * priority counts while it keeps priority levels.
 */
static bool ctl_visible(const struct mqfs_ctl *c, const struct mqfs_ctl_node *n)
{
	const struct mq_elevator_type *t;
	struct mq_prio_stats ps;

	if (n->kind == CTL_PRIO)
		return !mq_queue_prio_stats(c->q, &ps);
	if (n->kind != CTL_ELVATTR)
		return true;
	t = mq_elv_find(mq_queue_elevator_name(c->q));
	for (unsigned j = 0; t && j < t->nr_attrs; j++)
		if (!strcmp(t->attrs[j].name, n->name))
			return true;
	return false;
}

/* ---- names and attributes ----------------------------------------------- */

static void ctl_stat(const struct mqfs_ctl *c, uint32_t idx, struct stat *st)
{
	const struct mqfs_ctl_node *n = &c->nodes[idx];

	*st = (struct stat){
		.st_ino = c->base + idx, .st_uid = c->owner,
		.st_gid = c->group, .st_blksize = CTL_TEXT_MAX,
		.st_atim = c->mtime, .st_mtim = c->mtime, .st_ctim = c->mtime,
	};
	if (n->kind == CTL_DIR) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | (n->writable ? 0644 : 0444);
		st->st_nlink = 1;
	}
}

static void ctl_entry(const struct mqfs_ctl *c, uint32_t idx,
		      struct mqfs_entry *e)
{
	e->ino = c->base + idx;
	e->generation = 1;
	ctl_stat(c, idx, &e->st);
}

int mqfs_ctl_lookup(const struct mqfs_ctl *c, uint64_t parent,
		    const char *name, struct mqfs_entry *e)
{
	uint32_t p = parent == FUSE_ROOT_ID ? CTL_ROOT_PARENT :
		     (uint32_t)(parent - c->base);

	if (!mqfs_ctl_claims(c, parent, name))
		return -ENOENT;
	for (uint32_t i = 0; i < c->nr_nodes; i++) {
		const struct mqfs_ctl_node *n = &c->nodes[i];

		if (n->parent == p && !strcmp(n->name, name) &&
		    ctl_visible(c, n)) {
			ctl_entry(c, i, e);
			return 0;
		}
	}
	return -ENOENT;
}

int mqfs_ctl_getattr(const struct mqfs_ctl *c, uint64_t ino, struct stat *st)
{
	if (!mqfs_ctl_owns(c, ino))
		return -ENOENT;
	ctl_stat(c, (uint32_t)(ino - c->base), st);
	return 0;
}

/* Root and the mounting user may write. */
static int ctl_may_write(const struct mqfs_ctl *c,
			 const struct mqfs_ctl_node *n, uid_t uid)
{
	if (n->kind == CTL_DIR)
		return -EISDIR;
	if (!n->writable || (uid != 0 && uid != c->owner))
		return -EACCES;
	return 0;
}

/*
 * Only the truncation to 0 that "echo >" (O_TRUNC) brings, on a file
 * the caller may write; it changes nothing.  Anything else: EPERM.
 */
int mqfs_ctl_setattr(const struct mqfs_ctl *c, uint64_t ino, uid_t uid,
		     const struct stat *attr, unsigned to_set,
		     struct stat *out)
{
	const struct mqfs_ctl_node *n = ctl_node(c, ino);
	int ret;

	if (!n)
		return -ENOENT;
	/* The kernel may add time updates to a truncation; ignored. */
	if (!(to_set & MQFS_SET_SIZE) || attr->st_size != 0 ||
	    (to_set & (MQFS_SET_MODE | MQFS_SET_UID | MQFS_SET_GID)))
		return -EPERM;
	ret = ctl_may_write(c, n, uid);
	if (ret)
		return ret;
	ctl_stat(c, (uint32_t)(ino - c->base), out);
	return 0;
}

/* ---- readdir ------------------------------------------------------------ */

/*
 * Cookies: 0 ".", 1 "..", 2 + i the node i; each entry carries the
 * cookie after it.  With @plus every entry comes with its attributes.
 */
int mqfs_ctl_readdir(const struct mqfs_ctl *c, uint64_t ino, uint64_t pos,
		     bool plus, mqfs_fill_t fill, void *ctx)
{
	const struct mqfs_ctl_node *d = ctl_node(c, ino);
	uint32_t idx = (uint32_t)(ino - c->base);
	struct mqfs_entry e = { 0 };

	if (!d)
		return -ENOENT;
	if (d->kind != CTL_DIR)
		return -ENOTDIR;
	if (pos == 0 && fill(ctx, ".", ino, DT_DIR, 1, plus ? &e : NULL))
		return 0;
	if (pos <= 1 && fill(ctx, "..", d->parent == CTL_ROOT_PARENT ?
			     FUSE_ROOT_ID : c->base + d->parent, DT_DIR, 2,
			     plus ? &e : NULL))
		return 0;
	for (uint64_t p = pos < 2 ? 2 : pos; p - 2 < c->nr_nodes; p++) {
		uint32_t i = (uint32_t)(p - 2);
		const struct mqfs_ctl_node *n = &c->nodes[i];

		if (n->parent != idx || !ctl_visible(c, n))
			continue;
		ctl_entry(c, i, &e);
		if (fill(ctx, n->name, e.ino, n->kind == CTL_DIR ? DT_DIR :
			 DT_REG, p + 1, plus ? &e : NULL))
			return 0;
	}
	return 0;
}

/* ---- file text ---------------------------------------------------------- */

static void text_add(struct mqfs_ctl_file *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void text_add(struct mqfs_ctl_file *f, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (f->len >= sizeof(f->text))
		return;
	va_start(ap, fmt);
	n = vsnprintf(f->text + f->len, sizeof(f->text) - f->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		f->len = MQ_MIN(f->len + (size_t)n, sizeof(f->text) - 1);
}

static uint64_t ns_to_ms(uint64_t ns)
{
	return ns / 1000000;
}

/*
 * /sys/block/DEV/stat, Documentation/block/stat.rst: 17 fields.  What
 * struct mq_queue_stats cannot give exactly:
 * - read/write ticks: queue time (allocation to dispatch) plus device
 *   time (dispatch to completion); the kernel counts from allocation to
 *   completion too, but the queue part here also covers requests still
 *   in flight.
 * - in_flight: dispatched and not completed (the kernel also counts the
 *   requests still in the scheduler).
 * - io_ticks: time with a request at the driver, kept per hardware
 *   queue at each dispatch and completion batch (the kernel's
 *   update_io_ticks); with several hardware queues, the busiest one's.
 * - time_in_queue: read ticks + write ticks (the kernel's weighted sum
 *   is the same figure when every request is counted once).
 * - flushes and discards are counted among the writes (the block layer
 *   keeps two directions); their four discard and two flush fields are 0.
 */
static void text_qstat(struct mqfs_ctl *c, struct mqfs_ctl_file *f)
{
	struct mq_queue_stats s;
	uint64_t tr, tw;

	mq_queue_get_stats(c->q, -1, &s);
	tr = ns_to_ms(s.queue_ns[MQ_DIR_READ] + s.device_ns[MQ_DIR_READ]);
	tw = ns_to_ms(s.queue_ns[MQ_DIR_WRITE] + s.device_ns[MQ_DIR_WRITE]);
	text_add(f, "%8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64
		 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64
		 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8u %8u %8u %8u %8u"
		 " %8u\n",
		 s.ios[MQ_DIR_READ], s.merges[MQ_DIR_READ],
		 s.sectors[MQ_DIR_READ], tr,
		 s.ios[MQ_DIR_WRITE], s.merges[MQ_DIR_WRITE],
		 s.sectors[MQ_DIR_WRITE], tw,
		 s.in_flight, ns_to_ms(s.busy_ns), tr + tw, 0u, 0u, 0u, 0u, 0u,
		 0u);
}

/* Per level, RT BE IDLE, in the kernel's mq-deadline debugfs terms. */
static int text_prio(struct mqfs_ctl *c, const struct mqfs_ctl_node *n,
		     struct mqfs_ctl_file *f)
{
	static const char *const level[3] = { "RT", "BE", "IDLE" };
	struct mq_prio_stats ps;

	if (mq_queue_prio_stats(c->q, &ps))
		return -ENOENT;		/* switched to none meanwhile */
	if (n->file == PF_STAT)
		text_add(f, "class inserted merged dispatched completed\n");
	for (int l = 0; l < 3; l++) {
		uint64_t ins = ps.level[l].inserted, mrg = ps.level[l].merged,
			 dsp = ps.level[l].dispatched,
			 done = ps.level[l].completed;

		if (n->file == PF_QUEUED)
			text_add(f, "%s%" PRIu64, l ? " " : "", ins - done);
		else if (n->file == PF_OWNED)
			text_add(f, "%s%" PRIu64, l ? " " : "",
				 dsp + mrg - done);
		else
			text_add(f, "%s %" PRIu64 " %" PRIu64 " %" PRIu64
				 " %" PRIu64 "\n", level[l], ins, mrg, dsp,
				 done);
	}
	if (n->file != PF_STAT)
		text_add(f, "\n");
	return 0;
}

/* blk-mq debugfs: "dispatched" is the histogram of batch sizes. */
static void text_hctx_dispatched(const struct mq_queue_stats *s,
				 struct mqfs_ctl_file *f)
{
	for (unsigned i = 0; i < MQ_DISPATCH_HIST; i++)
		text_add(f, "%8u\t%" PRIu64 "\n", i ? 1u << (i - 1) : 0,
			 s->dispatch_hist[i]);
}

static void text_hctx_tags(struct mqfs_ctl *c, const struct mq_queue_stats *s,
			   struct mqfs_ctl_file *f)
{
	char qd[32] = "?", nr[32] = "?";

	mq_queue_attr_show(c->q, "queue_depth", qd, sizeof(qd));
	mq_queue_attr_show(c->q, "nr_requests", nr, sizeof(nr));
	text_add(f, "nr_tags=%s\nnr_sched_tags=%s\nalloc_calls=%" PRIu64
		 "\nallocated=%" PRIu64 "\nwaits=%" PRIu64 "\n", qd, nr,
		 s->tag_alloc_calls, s->tags_allocated, s->tag_waits);
}

static void text_hctx(struct mqfs_ctl *c, const struct mqfs_ctl_node *n,
		      struct mqfs_ctl_file *f)
{
	struct mq_queue_stats s;

	mq_queue_get_stats(c->q, n->arg, &s);
	switch (n->file) {
	case HF_DISPATCHED:
		text_hctx_dispatched(&s, f);
		break;
	case HF_RUN:
		text_add(f, "%" PRIu64 "\nsync %" PRIu64 "\nasync %" PRIu64
			 "\nissued %" PRIu64 "\n", s.run_sync + s.run_async,
			 s.run_sync, s.run_async, s.dispatch_runs);
		break;
	case HF_REQUEUES:
		text_add(f, "%" PRIu64 "\n", s.requeues);
		break;
	case HF_BUSY:
		text_add(f, "%u\n", s.dispatch_busy);
		break;
	case HF_TAGS:
		text_hctx_tags(c, &s, f);
		break;
	default:
		text_add(f, "dispatched %" PRIu64 " %" PRIu64 "\ncompleted %"
			 PRIu64 " %" PRIu64 "\nin_flight %" PRIu64 "\n",
			 s.dispatched[MQ_DIR_READ], s.dispatched[MQ_DIR_WRITE],
			 s.ios[MQ_DIR_READ], s.ios[MQ_DIR_WRITE], s.in_flight);
	}
}

/* The write-behind and the completion worker that drops its buffers. */
static void text_fs_dontcache(struct mqfs_ctl *c, struct mqfs_ctl_file *f)
{
	struct mqfs_wback_stats w;
	struct mq_queue_stats s;

	mqfs_get_wback_stats(c->fs, &w);
	mq_queue_get_stats(c->q, -1, &s);
	text_add(f, "dirty_bytes %" PRIu64 "\ndirty_limit %" PRIu64
		 "\nheld_bytes %" PRIu64 "\nheld_peak %" PRIu64
		 "\nbuffered_bytes %" PRIu64
		 "\nbuffered_writes %" PRIu64 "\ndirect_writes %" PRIu64
		 "\nbuffers_dropped %" PRIu64 "\nwrite_batches %" PRIu64
		 "\nthrottled %" PRIu64 "\n", w.dirty_bytes, w.dirty_limit,
		 w.held_bytes, w.held_peak, w.buffered_bytes, w.buffered_writes,
		 w.direct_writes, w.buffers_dropped, w.write_batches,
		 w.throttled);
	text_add(f, "worker_runs %" PRIu64 "\nworker_completions %" PRIu64
		 "\ncompletions_per_run %.1f\nworker_wakeups %" PRIu64
		 "\nworker_cs %" PRIu64 "\n", s.task_runs, s.task_completions,
		 s.task_runs ? (double)s.task_completions / s.task_runs : 0.0,
		 s.task_wakeups, s.task_worker_cs);
}

static void text_fs(struct mqfs_ctl *c, const struct mqfs_ctl_node *n,
		    struct mqfs_ctl_file *f)
{
	struct mqfs_fs_stats s;
	struct statvfs sv;

	if (n->file == FF_DONTCACHE) {
		text_fs_dontcache(c, f);
		return;
	}
	if (n->file == FF_SPACE) {
		mqfs_statfs(c->fs, &sv);
		text_add(f, "block_size %lu\nblocks %lu\nblocks_free %lu\n"
			 "inodes %lu\ninodes_free %lu\n", sv.f_frsize,
			 (unsigned long)sv.f_blocks, (unsigned long)sv.f_bfree,
			 (unsigned long)sv.f_files, (unsigned long)sv.f_ffree);
		return;
	}
	mqfs_get_stats(c->fs, &s);
	if (n->file == FF_CACHE)
		text_add(f, "cached_blocks %" PRIu64 "\nhits %" PRIu64
			 "\nmisses %" PRIu64 "\n", s.cache_blocks,
			 s.cache_hits, s.cache_misses);
	else
		text_add(f, "commits %" PRIu64 "\nblocks_journaled %" PRIu64
			 "\n", s.journal_commits, s.journal_blocks);
}

/*
 * transport uring|dev, the rings' shape, and why not io_uring (a
 * "transport_note" line) when the start-up or INIT said so.
 */
static void text_transport(struct mqfs_ctl *c, struct mqfs_ctl_file *f)
{
	const struct mqfs_conn *k = &c->d->conn;

	text_add(f, "transport %s\n", k->uring ? "uring" : "dev");
	if (k->uring) {
		struct mqfs_ring_stats s;

		mqfs_rings_get_stats(&c->d->rings, &s);
		text_add(f, "ring_queues %u\nring_depth %u\nring_spill %u\n"
			 "ring_reap %s\nring_pin %s\nring_doorbell %s\n",
			 c->d->rings.nr_queues, c->d->rings.depth,
			 c->d->rings.spill,
			 s.dev_polled ? "ring" : "reaper",
			 mqfs_ring_pin_names[c->d->rings.pin],
			 mqfs_ring_doorbell_names[c->d->rings.doorbell]);
	}
	if (c->d->transport_note[0])
		text_add(f, "transport_note %s\n", c->d->transport_note);
}

/* The rings' counters: requests per io_uring_enter, commits per batch. */
static void text_ring_stats(struct mqfs_ctl *c, struct mqfs_ctl_file *f)
{
	struct mqfs_ring_stats s;

	if (!c->d->conn.uring)
		return;
	mqfs_rings_get_stats(&c->d->rings, &s);
	text_add(f, "ring_requests %" PRIu64 "\nring_enters %" PRIu64
		 "\nring_commits %" PRIu64 "\nring_batches %" PRIu64
		 "\nring_direct_commits %" PRIu64
		 "\nring_device_reaps %" PRIu64 "\nring_device_reaped %" PRIu64
		 "\nring_requests_per_enter %.2f"
		 "\nring_commits_per_batch %.2f"
		 "\nring_moves %" PRIu64 "\nring_away %u"
		 "\nring_doorbell_requests %" PRIu64
		 "\nring_doorbell_windows %" PRIu64
		 "\nring_doorbell_eager_windows %" PRIu64
		 "\nring_doorbell_eager %u"
		 "\nring_spilled %" PRIu64 "\n", s.requests,
		 s.enters, s.commits, s.batches, s.direct, s.dev_reaps,
		 s.dev_reaped,
		 s.enters ? (double)s.requests / (double)s.enters : 0.0,
		 s.batches ? (double)s.commits / (double)s.batches : 0.0,
		 s.moves, s.away, s.bell_requests, s.bell_windows,
		 s.bell_eager_windows, s.bell_eager, s.spilled);
}

/* "OPCODE count" for each opcode served at least once. */
static void text_ops(struct mqfs_ctl *c, struct mqfs_ctl_file *f)
{
	for (uint32_t op = 0; op < MQFS_FUSE_OPCODE_MAX; op++) {
		uint64_t n = mqfs_engine_op_count(&c->d->eng, op);
		const char *name = mqfs_engine_op_name(op);

		if (n && name)
			text_add(f, "%s %" PRIu64 "\n", name, n);
	}
}

/* The engine's counters, and what INIT and the bdi settled. */
static void text_fuse(struct mqfs_ctl *c, const struct mqfs_ctl_node *n,
		      struct mqfs_ctl_file *f)
{
	const struct mqfs_conn *k = &c->d->conn;
	struct mqfs_engine_stats s;
	char bdi[160];

	if (n->file == UF_OPS) {
		text_ops(c, f);
		return;
	}
	if (n->file == UF_CONN) {
		mqfs_bdi_describe(&c->d->bdi, bdi, sizeof(bdi));
		text_transport(c, f);
		text_add(f, "protocol 7.%u\nflags 0x%" PRIx64
			 "\nmax_write %u\nmax_background %u\n"
			 "writeback_cache %d\ndirect_io_allow_mmap %d\n"
			 "bdi %s\n", k->minor, k->flags, k->max_write,
			 k->max_background, k->writeback, k->mmap_direct,
			 bdi);
		return;
	}
	mqfs_engine_get_stats(&c->d->eng, &s);
	text_add(f, "requests %" PRIu64 "\nasync %" PRIu64 "\ninflight %u"
		 "\ninterrupts %" PRIu64 "\ncancelled %" PRIu64
		 "\nmalformed %" PRIu64 "\nworkers %u\nparked %u"
		 "\nmax_workers %u\nslots %u\nslot_waits %" PRIu64
		 "\nforget_waits %" PRIu64 "\n",
		 s.requests, s.async, s.inflight, s.interrupts, s.cancelled,
		 s.bad, s.workers, s.parked, s.max_workers, s.slots,
		 s.slot_waits, s.forget_waits);
	text_ring_stats(c, f);
}

static int text_attr(struct mqfs_ctl *c, const struct mqfs_ctl_node *n,
		     struct mqfs_ctl_file *f)
{
	int ret = mq_queue_attr_show(c->q, n->name, f->text,
				     sizeof(f->text) - 1);

	if (ret)
		return ret;
	f->len = strlen(f->text);
	text_add(f, "\n");
	return 0;
}

static int ctl_generate(struct mqfs_ctl *c, const struct mqfs_ctl_node *n,
			struct mqfs_ctl_file *f)
{
	switch (n->kind) {
	case CTL_QATTR:
	case CTL_ELVATTR:
		return text_attr(c, n, f);
	case CTL_QSTAT:
		text_qstat(c, f);
		return 0;
	case CTL_HCTX:
		text_hctx(c, n, f);
		return 0;
	case CTL_FS:
		text_fs(c, n, f);
		return 0;
	case CTL_FUSE:
		text_fuse(c, n, f);
		return 0;
	case CTL_PRIO:
		return text_prio(c, n, f);
	}
	return -EISDIR;
}

/* ---- open files --------------------------------------------------------- */

/* Register @f: its handle, or 0 without memory.  files_lock held. */
static uint64_t ctl_files_add_locked(struct mqfs_ctl *c, struct mqfs_ctl_file *f)
{
	uint32_t i = 0, cap;

	while (i < c->files_cap && c->files[i])
		i++;
	if (i == c->files_cap) {
		cap = c->files_cap ? 2 * c->files_cap : 16;
		struct mqfs_ctl_file **fs = realloc(c->files,
						    cap * sizeof(*fs));
		uint32_t *gen;

		if (!fs)
			return 0;
		c->files = fs;
		gen = realloc(c->files_gen, cap * sizeof(*gen));
		if (!gen)
			return 0;
		c->files_gen = gen;
		for (uint32_t k = c->files_cap; k < cap; k++) {
			c->files[k] = NULL;
			c->files_gen[k] = 1;
		}
		c->files_cap = cap;
	}
	c->files[i] = f;
	return (uint64_t)c->files_gen[i] << 32 | i;
}

/* The file of @fh, or NULL when stale.  files_lock held. */
static struct mqfs_ctl_file *ctl_file_locked(struct mqfs_ctl *c, uint64_t fh)
{
	uint32_t i = (uint32_t)fh;

	if (i >= c->files_cap || c->files_gen[i] != (uint32_t)(fh >> 32))
		return NULL;
	return c->files[i];
}

int mqfs_ctl_open(struct mqfs_ctl *c, uint64_t ino, int flags, uid_t uid,
		  uint64_t *fh)
{
	const struct mqfs_ctl_node *n = ctl_node(c, ino);
	struct mqfs_ctl_file *f;
	int ret;

	if (!n)
		return -ENOENT;
	if ((flags & O_ACCMODE) != O_RDONLY) {
		ret = ctl_may_write(c, n, uid);
		if (ret)
			return ret;
	}
	if (n->kind == CTL_DIR)
		return -EISDIR;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->node = (uint32_t)(ino - c->base);
	/* A write-only open needs no text (and the tunable may be gone). */
	ret = (flags & O_ACCMODE) == O_WRONLY ? 0 : ctl_generate(c, n, f);
	if (!ret) {
		pthread_mutex_lock(&c->files_lock);
		*fh = ctl_files_add_locked(c, f);
		pthread_mutex_unlock(&c->files_lock);
		ret = *fh ? 0 : -ENOMEM;
	}
	if (ret)
		free(f);
	return ret;
}

ssize_t mqfs_ctl_read(struct mqfs_ctl *c, uint64_t fh, uint64_t off,
		      size_t size, char *dst)
{
	const struct mqfs_ctl_file *f;
	ssize_t n = -EBADF;

	pthread_mutex_lock(&c->files_lock);
	f = ctl_file_locked(c, fh);
	if (f) {
		n = off >= f->len ? 0 :
		    (ssize_t)MQ_MIN(size, f->len - (size_t)off);
		memcpy(dst, f->text + MQ_MIN(off, (uint64_t)f->len),
		       (size_t)n);
	}
	pthread_mutex_unlock(&c->files_lock);
	return n;
}

void mqfs_ctl_release(struct mqfs_ctl *c, uint64_t fh)
{
	struct mqfs_ctl_file *f;

	pthread_mutex_lock(&c->files_lock);
	f = ctl_file_locked(c, fh);
	if (f) {
		c->files[(uint32_t)fh] = NULL;
		c->files_gen[(uint32_t)fh]++;
	}
	pthread_mutex_unlock(&c->files_lock);
	free(f);
}

/*
 * A write is one value, applied at once (sysfs's rule): the block layer
 * checks it and changes nothing when it refuses it (-EINVAL).  Returns
 * @size or a negative errno.
 */
ssize_t mqfs_ctl_write(struct mqfs_ctl *c, uint64_t fh, uid_t uid,
		       const char *buf, size_t size)
{
	const struct mqfs_ctl_node *n;
	const struct mqfs_ctl_file *f;
	char val[CTL_WRITE_MAX];
	size_t len = size;
	int ret;

	pthread_mutex_lock(&c->files_lock);
	f = ctl_file_locked(c, fh);
	n = f ? &c->nodes[f->node] : NULL;
	pthread_mutex_unlock(&c->files_lock);
	if (!n)
		return -EBADF;

	ret = ctl_may_write(c, n, uid);
	if (ret)
		return ret;
	if (size >= sizeof(val))
		return -EINVAL;
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		len--;
	memcpy(val, buf, len);
	val[len] = '\0';
	if (!len || memchr(val, '\0', len))
		return -EINVAL;
	if (n->kind == CTL_ELVATTR && !ctl_visible(c, n))
		return -ENOENT;
	ret = mq_queue_attr_store(c->q, n->name, val);
	if (ret == -ENOENT)
		ret = -EINVAL;	/* a switch raced: no such tunable now */
	return ret ? ret : (ssize_t)size;
}

