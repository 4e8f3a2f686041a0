/* SPDX-License-Identifier: MIT */
/*
 * fuse_i.h - the FUSE daemon's private interfaces: its configuration
 * (opts.c), the control surface (ctl.c), its own FUSE protocol engine
 * (decode.c, pool.c, engine.c, init.c) and its io_uring transport
 * (ring.c, its threads' CPUs in ring_pin.c), the callers' I/O priorities
 * (ioprio.c), the operations (ops.c, reply.c),
 * the writeback throttle (bdi.c) and the background start (daemon.c),
 * tied together by main.c.  libfuse does the mounting and the option
 * parsing; mqfs reads and answers /dev/fuse itself.
 */
#ifndef MQFS_FUSE_I_H
#define MQFS_FUSE_I_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>
#include <sys/types.h>
#include <sys/uio.h>
#include "mqfs/blk.h"
#include "mqfs/fs.h"
#include "mqfs/inflight.h"
#include "mqfs/mq_dev.h"
#include "proto.h"
#include "mqfs/dev/uring.h"

/* The CLOCK_REALTIME time @ms from now, for pthread's timed waits. */
static inline struct timespec mqfs_deadline_ms(unsigned ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

/* ---- configuration (opts.c) -------------------------------------------- */

/*
 * The elevator tunables settable at mount: every attribute of
 * mq-deadline's table (elevator.h), by its index there, in the queue's
 * vocabulary; the option names and the help come from that table.
 */
#define MQFS_MAX_TUNABLES	16
/* Defaults of fuse_bufs= and bdi_max_ratio= (DESIGN.md §17). */
#define MQFS_DEFAULT_FUSE_BUFS		64
#define MQFS_DEFAULT_BDI_MAX_RATIO	50

/* -o transport= */
enum mqfs_transport {
	MQFS_TRANSPORT_AUTO,		/* io_uring when the kernel offers it */
	MQFS_TRANSPORT_URING,		/* io_uring or no mount */
	MQFS_TRANSPORT_DEV,		/* read/writev on /dev/fuse */
};

/* uring_pin=: where ring thread N (serving the callers on CPU N) runs. */
enum mqfs_ring_pin {
	MQFS_RING_PIN_OFF,		/* anywhere */
	MQFS_RING_PIN_OWN,		/* on CPU N only */
	MQFS_RING_PIN_OTHER,		/* on any CPU but N */
	MQFS_RING_PIN_AUTO,		/* own or other, by the queue's load */
	MQFS_RING_PIN_NR
};
extern const char *const mqfs_ring_pin_names[MQFS_RING_PIN_NR];

/* uring_doorbell=: when a ring thread submits its requests' device I/O. */
enum mqfs_ring_doorbell {
	MQFS_RING_DOORBELL_BATCH,	/* once, after the batch's last */
	MQFS_RING_DOORBELL_REQUEST,	/* after each request */
	MQFS_RING_DOORBELL_AUTO,	/* request while the thread idles */
	MQFS_RING_DOORBELL_NR
};
extern const char *const mqfs_ring_doorbell_names[MQFS_RING_DOORBELL_NR];

/* The command line, parsed and checked. */
struct mqfs_config {
	char *device;			/* as given on the command line */
	struct fuse_cmdline_opts cmd;	/* mountpoint, -f, -d, -s, threads */
	struct mq_uring_config uring;
	struct mq_queue_config queue;
	enum mqfs_transport transport;	/* transport= */
	unsigned uring_depth;		/* entries per ring; 0: default */
	unsigned uring_spill;		/* and on each other CPU's queue */
	enum mqfs_ring_pin uring_pin;	/* where ring thread N runs */
	enum mqfs_ring_doorbell uring_doorbell;	/* when its device I/O goes */
	bool uring_reaper;		/* uring_reap=reaper: no poll queues */
	/* Strings handed to mq_queue_attr_store; NULL: the default. */
	char *tunables[MQFS_MAX_TUNABLES];
	char *complete_delay_us;
	char *stats_path;		/* stats=: report written at unmount */
	bool plug;			/* handlers run inside a plug */
	enum mqfs_cache_mode cache;	/* cache=, never UNSET */
	struct mqfs_mount_opts mount;
	unsigned workers;		/* FUSE worker threads (-s: 1) */
	unsigned fuse_bufs;		/* request slots beyond the workers' */
	unsigned bdi_max_ratio;		/* 0: leave the kernel's limits */
};

/*
 * Parse argv into @cfg and leave in @args what fuse_session_new takes
 * (FUSE's own options plus default_permissions and fsname).  0: go on;
 * 1: help or version printed, exit 0; -EINVAL: bad command line, the
 * message printed.
 */
int mqfs_config_parse(struct fuse_args *args, struct mqfs_config *cfg);
void mqfs_config_free(struct mqfs_config *cfg);
/* Apply the tunables to a new queue; a refused value is reported. */
int mqfs_config_tune_queue(const struct mqfs_config *cfg,
			   struct mq_queue *q);

/* ---- the control surface (ctl.c) ---------------------------------------- */

struct mqfs_ctl_node;
struct mqfs_ctl_file;

/*
 * The .mqfs directory: fixed at mount, read-only afterwards (no lock).
 * Its inodes are @base .. @base + @nr_nodes - 1, above the filesystem's
 * last inode.  Writes: root or @owner (the mounting user) only.
 */
struct mqfs_daemon;

struct mqfs_ctl {
	struct mqfs_fs *fs;
	struct mq_queue *q;
	struct mqfs_daemon *d;		/* fuse/: the engine's figures */
	uint64_t base;
	uid_t owner;
	gid_t group;
	unsigned nr_hw;
	struct mqfs_ctl_node *nodes;
	uint32_t nr_nodes;
	char (*hctx_names)[16];
	struct timespec mtime;
	/*
	 * Open files by handle (generation << 32 | index): a READ or WRITE
	 * whose caller was killed may be served after the RELEASE that
	 * followed it, and then meets a stale handle (-EBADF), never a
	 * freed file.
	 */
	pthread_mutex_t files_lock;
	bool files_ready;
	struct mqfs_ctl_file **files;
	uint32_t *files_gen, files_cap;
};

/* After mqfs_mount; 0 or -ENOMEM. */
int mqfs_ctl_init(struct mqfs_ctl *c, struct mqfs_fs *fs,
		  struct mqfs_daemon *d);
void mqfs_ctl_destroy(struct mqfs_ctl *c);
/* @ino is a control inode. */
bool mqfs_ctl_owns(const struct mqfs_ctl *c, uint64_t ino);
/* @name in @parent is the control surface's: .mqfs in the root, or any
 * name in a control directory. */
bool mqfs_ctl_claims(const struct mqfs_ctl *c, uint64_t parent,
		     const char *name);
/* The handlers' halves; lookups hand out no count that needs keeping. */
int mqfs_ctl_lookup(const struct mqfs_ctl *c, uint64_t parent,
		    const char *name, struct mqfs_entry *e);
int mqfs_ctl_getattr(const struct mqfs_ctl *c, uint64_t ino, struct stat *st);
int mqfs_ctl_setattr(const struct mqfs_ctl *c, uint64_t ino, uid_t uid,
		     const struct stat *attr, unsigned to_set,
		     struct stat *out);
int mqfs_ctl_readdir(const struct mqfs_ctl *c, uint64_t ino, uint64_t pos,
		     bool plus, mqfs_fill_t fill, void *ctx);
/* The text is generated at open; a write-open checks @uid.  *fh: the
 * handle for the calls below. */
int mqfs_ctl_open(struct mqfs_ctl *c, uint64_t ino, int flags, uid_t uid,
		  uint64_t *fh);
/* Copy up to @size bytes at @off into @dst: bytes, or -EBADF. */
ssize_t mqfs_ctl_read(struct mqfs_ctl *c, uint64_t fh, uint64_t off,
		      size_t size, char *dst);
/* Applies the value at once: @size, -EINVAL (nothing changed), -EACCES,
 * -EBADF. */
ssize_t mqfs_ctl_write(struct mqfs_ctl *c, uint64_t fh, uid_t uid,
		       const char *buf, size_t size);
void mqfs_ctl_release(struct mqfs_ctl *c, uint64_t fh);

/* ---- decoding requests (decode.c) ---------------------------------------- */

/* A request from /dev/fuse, checked: every pointer lies inside it. */
struct mqfs_fuse_msg {
	const struct fuse_in_header *h;
	const void *arg;		/* the opcode's struct, or NULL */
	size_t arg_len;			/* bytes from @arg on (no extensions) */
	const char *name[2];		/* its NUL-terminated names */
	const void *data;		/* WRITE data, SETXATTR value, forgets */
	size_t data_len;
};

/*
 * Check the @n bytes at @buf.  0; -EPROTO: shorter than a header (no
 * unique to answer); -EIO: malformed (answer EIO); -ENOSYS: an opcode
 * mqfs does not decode.  @m->h is set unless -EPROTO.
 */
int mqfs_fuse_decode(const void *buf, size_t n, struct mqfs_fuse_msg *m);
/* fuse_setattr_in as a struct stat and MQFS_SET_* (FATTR_'s values). */
unsigned mqfs_setattr_decode(const struct fuse_setattr_in *in,
			     struct stat *st);
/* The same for a request on a ring entry: the header buffer @hdr and
 * the payload buffer of @cap bytes (never -EPROTO). */
int mqfs_fuse_decode_ring(const struct mqfs_fuse_uring_req_header *hdr,
			  const void *payload, size_t cap,
			  struct mqfs_fuse_msg *m);

/* ---- request slots (pool.c) ----------------------------------------------- */

/*
 * A slot's memory: one page for the request headers, laid out so that
 * a WRITE's data starts on the page after it, then room for a 1 MiB
 * write or a 1 MiB read at any offset (MQFS_READ_ROOM), which is also
 * the reply buffer of the requests that return data.
 */
#define MQFS_SLOT_HDR		4096u
#define MQFS_SLOT_PAYLOAD	((1u << 20) + 4096u)
#define MQFS_SLOT_BYTES		(MQFS_SLOT_HDR + MQFS_SLOT_PAYLOAD)
#define MQFS_FUSE_MAX_WRITE	(1u << 20)
#define MQFS_FUSE_MAX_PAGES	256u
/* Where replies that carry data are built: past any request name. */
#define MQFS_SLOT_SCRATCH	4096u

/*
 * struct mqfs_req - one request being served, and the receive slot it
 * arrived in.  A worker reads into a free slot; the request owns it
 * until it is answered and every user is done (@refs: the handler's,
 * and an asynchronous completion's), then the slot goes back.
 */
struct mqfs_ring_ent;

struct mqfs_req {
	struct mqfs_daemon *d;
	int fd;				/* its channel: the reply goes there */
	struct mqfs_fuse_msg m;
	char *mem;			/* MQFS_SLOT_BYTES, in the arena */
	char *payload;			/* mem + MQFS_SLOT_HDR, page aligned */
	atomic_int refs;
	/* An interruptible read: its unique until one side answers. */
	bool cancellable;
	_Atomic uint64_t live;
	bool writeback;			/* FUSE_WRITE_CACHE */
	size_t size;			/* a write's bytes: short is an error */
	_Atomic uint32_t next;		/* pool free stack: index + 1 */
	uint32_t index;
	struct mqfs_ring_ent *ent;	/* a ring's entry (ring.c), or NULL */
	struct mqfs_io io;
};

/*
 * The slots and their memory, one arena (registered with the io_uring
 * driver as one fixed buffer), and a lock-free stack of free slots.
 */
struct mqfs_pool {
	char *arena;
	size_t bytes;
	struct mqfs_req *reqs;
	unsigned nr;
	_Atomic uint64_t head;		/* ABA tag << 32 | index + 1 */
	pthread_mutex_t lock;		/* only to sleep when all are busy */
	pthread_cond_t cond;
	atomic_uint waiters;
	atomic_uint_fast64_t waits;	/* gets that had to sleep */
};

int mqfs_pool_create(struct mqfs_pool *p, unsigned nr);
void mqfs_pool_destroy(struct mqfs_pool *p);
/* A free slot; sleeps while every one is in use. */
struct mqfs_req *mqfs_pool_get(struct mqfs_pool *p);
/* A free slot, or NULL when none is (never sleeps). */
struct mqfs_req *mqfs_pool_try_get(struct mqfs_pool *p);
void mqfs_pool_put(struct mqfs_pool *p, struct mqfs_req *r);

/* ---- FUSE over io_uring (ring.c) ------------------------------------------ */

struct mqfs_ring_queue;

/* Where one ring thread runs, and (uring_pin=auto) what moves it. */
struct mqfs_ring_place {
	cpu_set_t base;			/* its affinity at start */
	unsigned qid;			/* the CPU whose callers it serves */
	enum mqfs_ring_pin mode;	/* uring_pin= */
	enum mqfs_ring_pin now;		/* OFF, OWN or OTHER */
	unsigned samples;		/* batches in this window */
	uint64_t held_sum;		/* their requests held */
};

/*
 * Place the calling thread, serving CPU @qid, as @mode says (auto
 * starts "own"); a refusal, or an affinity that cannot be read, leaves
 * it to the scheduler ("off").
 */
void mqfs_ring_place_init(struct mqfs_ring_place *p, unsigned qid,
			  enum mqfs_ring_pin mode);
/* The CPUs @where means for @p. */
void mqfs_ring_place_mask(const struct mqfs_ring_place *p,
			  enum mqfs_ring_pin where, cpu_set_t *set);
/*
 * auto's decision alone: a batch was served and the queue holds @held
 * requests; true when @p->now changed.
 */
bool mqfs_ring_place_sample(struct mqfs_ring_place *p, unsigned held);
/*
 * The decision, and the move: true when the calling thread now runs on
 * another set of CPUs (a refused move keeps the old placement).
 */
bool mqfs_ring_place_update(struct mqfs_ring_place *p, unsigned held);
/* Is the thread kept off CPU @p->qid? */
bool mqfs_ring_place_away(const struct mqfs_ring_place *p);

/* When one ring thread rings the device's doorbell (ring_doorbell.c). */
struct mqfs_ring_bell {
	enum mqfs_ring_doorbell mode;	/* uring_doorbell= */
	bool per_request;		/* now */
	uint64_t mark;			/* the last wait's start or end, ns */
	uint64_t busy, idle;		/* this window's, ns */
	uint64_t windows, eager_windows;	/* ended; of them per request */
};

void mqfs_ring_bell_init(struct mqfs_ring_bell *b,
			 enum mqfs_ring_doorbell mode, uint64_t now);
/* The thread is about to sleep in io_uring_enter, at @now. */
void mqfs_ring_bell_sleep(struct mqfs_ring_bell *b, uint64_t now);
/* It woke at @now: true when @b->per_request changed (auto). */
bool mqfs_ring_bell_woke(struct mqfs_ring_bell *b, uint64_t now);

/*
 * One queue (thread, io_uring, entries) per possible CPU.  Prepared
 * before the INIT reply (so that a failure can still leave the flag out
 * of it), registered after it (mqfs_rings_start).
 */
struct mqfs_rings {
	struct mqfs_daemon *d;
	unsigned nr_queues, depth;
	unsigned spill;			/* entries on each other CPU's queue */
	unsigned nr_ents;		/* per thread: depth + the spill's */
	struct mqfs_ring_queue *queues;
	int fuse_fd;			/* a dup of the session's */
	enum mqfs_ring_pin pin;		/* uring_pin= */
	enum mqfs_ring_doorbell doorbell;	/* uring_doorbell= */
	bool prepared;
	pthread_mutex_t lock;		/* @go, @reported, @error, @why */
	pthread_cond_t cond;
	bool go;			/* the INIT reply is written */
	unsigned reported;		/* queues done registering */
	unsigned spill_registered;	/* threads past their spill entries */
	bool never_ready;		/* a queue has no entry at all */
	int error;
	atomic_bool stopping;
	char why[128];			/* the first failure */
};

struct mqfs_ring_stats {
	unsigned queues, depth;
	/* direct: commits another thread submitted (the ring slept) */
	uint64_t requests, enters, commits, batches, direct;
	uint64_t spilled;		/* served for another CPU's queue */
	/* uring_reap=ring: loop passes that reaped the device, requests */
	uint64_t dev_reaps, dev_reaped;
	unsigned dev_polled;		/* rings reaping a device poll queue */
	uint64_t moves;			/* uring_pin=auto's changes */
	unsigned away;			/* threads now off their CPU */
	/* uring_doorbell: rung after a request; windows, of them eager */
	uint64_t bell_requests, bell_windows, bell_eager_windows;
	unsigned bell_eager;		/* threads ringing per request now */
};

/*
 * Is FUSE over io_uring on (1), off (0), or missing from this kernel
 * (-EOPNOTSUPP)?  @why says how when not 1.
 */
int mqfs_ring_probe(char *why, size_t size);
/* The kernel's queue count: the possible CPUs (0: unreadable). */
unsigned mqfs_ring_nr_queues(void);
/* uring_depth's default: the device queue shared by the CPUs, 8-32. */
unsigned mqfs_ring_default_depth(unsigned queue_depth, unsigned nr_queues);
/* Entries (request slots) per ring thread: its queue's and the spill. */
unsigned mqfs_ring_entries(unsigned depth, unsigned spill, unsigned nr_queues);
/*
 * The kernel queue of thread @qid's entry @i: its own for the first
 * @depth, then @spill for each other queue in turn (registered first).
 */
unsigned mqfs_ring_ent_qid(unsigned depth, unsigned spill, unsigned qid,
			   unsigned i);

void mqfs_rings_init(struct mqfs_rings *rs);
/* What the options ask of the rings. */
struct mqfs_rings_shape {
	unsigned depth;			/* uring_depth: the queue's own */
	unsigned spill;			/* uring_spill: on each other queue */
	enum mqfs_ring_pin pin;		/* uring_pin= */
	enum mqfs_ring_doorbell doorbell;	/* uring_doorbell= */
};
/*
 * Rings, entries (slots of @d's pool) and threads, not yet registered;
 * 0, or -errno with @rs->why set and nothing left.
 */
int mqfs_rings_prepare(struct mqfs_rings *rs, struct mqfs_daemon *d,
		       int session_fd, const struct mqfs_rings_shape *shape);
/* After the INIT reply: register every entry; 0 or -errno (@rs->why). */
int mqfs_rings_start(struct mqfs_rings *rs);
/*
 * Wake and join the threads: no request starts on a ring after it (the
 * connection is gone).  Before the engine waits for the asynchronous
 * requests, which the threads could otherwise still be starting.
 */
void mqfs_rings_quiesce(struct mqfs_rings *rs);
/*
 * After quiesce: wait until @f (the engine's requests in flight) is 0,
 * reaping the device poll queues the ring threads reaped (uring_reap=ring).
 */
void mqfs_rings_drain(struct mqfs_rings *rs, struct mq_inflight *f);
/* Quiesce, then free it all (every request has ended). */
void mqfs_rings_stop(struct mqfs_rings *rs);
void mqfs_rings_destroy(struct mqfs_rings *rs);
void mqfs_rings_get_stats(struct mqfs_rings *rs, struct mqfs_ring_stats *s);
/* The engine's: write a reply into @e's buffers (mqfs_reply_iov's
 * @iov); the commit waits for mqfs_ring_release. */
int mqfs_ring_fill(struct mqfs_ring_ent *e, int err, struct iovec *iov,
		   int n);
/* The request's last user is done: commit and fetch the next. */
void mqfs_ring_release(struct mqfs_ring_ent *e);

/* ---- callers' I/O priorities (ioprio.c) ----------------------------------- */

/* How long a thread's answer is kept; ionice -p shows within this. */
#define MQFS_IOPRIO_TTL_NS	(100 * 1000 * 1000ull)
#define MQFS_IOPRIO_BITS	8	/* 256 threads remembered */

/* ioprio_get(IOPRIO_WHO_PROCESS, @tid): the kernel's value, or -errno. */
typedef int (*mqfs_ioprio_get_t)(pid_t tid);

struct mqfs_ioprio_slot {
	pid_t tid;			/* 0: empty */
	uint16_t ioprio;		/* class << 13 | level */
	uint64_t at;			/* when asked, ns */
};

struct mqfs_ioprio {
	pthread_mutex_t lock;
	mqfs_ioprio_get_t get;
	uint64_t (*now_ns)(void);
	struct mqfs_ioprio_slot slot[1u << MQFS_IOPRIO_BITS];
	atomic_uint_fast64_t hits, misses;
};

/* @get NULL: the system call; @now_ns NULL: the monotonic clock. */
void mqfs_ioprio_init(struct mqfs_ioprio *c, mqfs_ioprio_get_t get,
		      uint64_t (*now_ns)(void));
void mqfs_ioprio_destroy(struct mqfs_ioprio *c);
/* The I/O priority of thread @tid (0, NONE, for tid <= 0 or a gone one). */
int mqfs_ioprio_of(struct mqfs_ioprio *c, pid_t tid);
/* The class of a kernel ioprio value (NONE for one mqfs does not know). */
enum mq_prio_class mqfs_ioprio_class(int ioprio);
/*
 * May thread @tid use the real-time class (CAP_SYS_ADMIN or CAP_SYS_NICE
 * in its effective set, as ioprio_set requires)?  From /proc/TID/status;
 * false when it cannot be read.
 */
bool mqfs_ioprio_may_rt(pid_t tid);
/* The same for a "CapEff:" hex word @capeff (the parser, for tests). */
bool mqfs_ioprio_caps_allow_rt(uint64_t capeff);

/* ---- the protocol engine (engine.c) --------------------------------------- */

/* What the engine counts, for .mqfs/fuse/stat. */
struct mqfs_engine_stats {
	uint64_t requests, async, interrupts, cancelled, bad;
	uint64_t slot_waits;
	uint64_t forget_waits;
	unsigned slots, workers, parked, max_workers;
	unsigned inflight;
};

struct mqfs_worker;

struct mqfs_engine {
	bool inited;			/* mqfs_engine_init ran */
	struct mqfs_pool pool;
	/*
	 * Workers: two at first.  A handler that blocked (took over
	 * ENG_BLOCKED_NS) while no other worker was waiting for the next
	 * request brings a parked worker back, or starts one, up to
	 * @max_workers; a worker done with a quick request while two others
	 * wait parks itself.  Few waiters mean few wake-ups (every request
	 * queued wakes a sleeping reader); reads and writes never block a
	 * handler, so only metadata and fsync waits add readers.
	 */
	unsigned max_workers;
	struct mqfs_worker *workers;	/* each with its cloned channel */
	struct mqfs_daemon *d;
	int clone_fd;			/* a dup of the session's, to clone */
	pthread_mutex_t spawn_lock;	/* everything to @stopping */
	pthread_cond_t park_cond;
	unsigned parked, wake_tokens;
	atomic_uint started;
	bool stopping;
	atomic_uint idle;		/* workers waiting in read() */
	int done_fd;			/* eventfd: a worker ended */
	bool debug;
	atomic_bool initialized;	/* INIT answered */
	/* Asynchronous requests not yet completed (the drain waits). */
	struct mq_inflight inflight;
	pthread_mutex_t init_lock;
	pthread_cond_t init_cond;
	int init_state;			/* 0 waiting, 1 done, or -errno */
	atomic_int failed;		/* mqfs_engine_fail's -errno */
	atomic_uint_fast64_t requests, async, interrupts, cancelled, bad;
	/* Requests by opcode (.mqfs/fuse/ops): what a workload costs. */
	atomic_uint_fast64_t op_counts[MQFS_FUSE_OPCODE_MAX];
	atomic_uint forgets_busy;	/* FORGET handlers running */
	atomic_uint_fast64_t forget_waits;	/* ENOSPCs that awaited one */
};

/*
 * Serve the request in @r (decoded with result @err, @n bytes): INIT,
 * INTERRUPT, a refused message or an operation.  True when the slot is
 * free again (no asynchronous user left).  @r->d, @r->fd, @r->ent set.
 */
bool mqfs_engine_serve(struct mqfs_req *r, int err, size_t n);
/*
 * mqfs_mount_opts.await_forgets (@arg: the engine): return once no
 * forget the kernel sent waits to be served (at most 2 s), so that an
 * ENOSPC tries again with the space of the files just unlinked.
 */
void mqfs_engine_await_forgets(void *arg);
/* The INIT handler's verdict: 0 serving, or -errno (the mount fails). */
void mqfs_engine_init_done(struct mqfs_engine *e, int err);
/* The mount cannot go on (a ring thread died): unmount, exit non-zero. */
void mqfs_engine_fail(struct mqfs_engine *e, int err);
/* Wait up to @ms for it: 0, its -errno, or -ETIMEDOUT. */
int mqfs_engine_wait_init(struct mqfs_engine *e, unsigned ms);

/* Slots for @max_workers workers and @inflight requests in flight. */
int mqfs_engine_init(struct mqfs_engine *e, unsigned max_workers,
		     unsigned inflight, bool debug);
/*
 * Clone a channel per worker from @session_fd (libfuse's, which only
 * mounts and unmounts) and start them.  When a worker ends (the
 * connection went, or a read failed) @done_fd becomes readable.
 */
int mqfs_engine_start(struct mqfs_engine *e, struct mqfs_daemon *d,
		      int session_fd);
/* Wait for the workers (they end when the connection goes), then for
 * every asynchronous request to complete. */
void mqfs_engine_stop(struct mqfs_engine *e);
void mqfs_engine_destroy(struct mqfs_engine *e);
void mqfs_engine_get_stats(struct mqfs_engine *e, struct mqfs_engine_stats *s);
/* Requests of opcode @op served so far, and its name (NULL: unknown). */
uint64_t mqfs_engine_op_count(struct mqfs_engine *e, uint32_t op);
const char *mqfs_engine_op_name(uint32_t op);

/*
 * Replies.  Each request is answered once, by one of these (FORGET and
 * BATCH_FORGET by none): mqfs_reply_err with 0 or a negative errno,
 * mqfs_reply with the reply's argument, mqfs_reply_iov with @iov[0]
 * left for the header.  They return 0, or -ENOENT when the kernel no
 * longer waits (interrupted, answered by an interrupt already, the
 * connection gone): a reply that handed out a lookup gives it back then.
 */
int mqfs_reply_err(struct mqfs_req *r, int err);
int mqfs_reply(struct mqfs_req *r, const void *arg, size_t len);
int mqfs_reply_iov(struct mqfs_req *r, struct iovec *iov, int n);
/* No reply (FORGET). */
void mqfs_reply_none(struct mqfs_req *r);
/*
 * Tell the kernel its cached attributes of @ino are stale (a
 * notification, written on @r's channel; safe inside a handler: it
 * touches no page).
 */
void mqfs_notify_inval_attr(struct mqfs_req *r, uint64_t ino);
/*
 * The handler hands the request to an asynchronous completion, which
 * calls mqfs_req_complete after its reply; with @cancellable an
 * INTERRUPT may answer it first (EINTR): reads, which change nothing.
 */
void mqfs_req_async(struct mqfs_req *r, bool cancellable);
void mqfs_req_complete(struct mqfs_req *r);

/* ---- replies that carry structures (reply.c) -------------------------------- */

void mqfs_fill_attr(struct fuse_attr *a, const struct stat *st);
/* Entry and attribute cache times are whole seconds. */
int mqfs_reply_entry(struct mqfs_req *r, const struct mqfs_entry *e,
		     unsigned timeout);
int mqfs_reply_noent(struct mqfs_req *r, unsigned timeout);
int mqfs_reply_attr(struct mqfs_req *r, const struct stat *st,
		    unsigned timeout);
int mqfs_reply_open(struct mqfs_req *r, uint64_t fh, uint32_t open_flags);
int mqfs_reply_create(struct mqfs_req *r, const struct mqfs_entry *e,
		      unsigned timeout, uint64_t fh, uint32_t open_flags);
int mqfs_reply_statfs(struct mqfs_req *r, const struct statvfs *sv);
/* A GETXATTR or LISTXATTR answer: the size when @size is 0, else @ret
 * bytes of @buf (@ret < 0: the error). */
void mqfs_reply_xattr(struct mqfs_req *r, ssize_t ret, const void *buf,
		      size_t size);

/* A READDIR(PLUS) reply being built in a slot's scratch space. */
struct mqfs_dirbuf {
	char *buf;
	size_t size, len;
	bool plus;
	unsigned timeout;		/* plus: the entries' cache time */
};

bool mqfs_dirbuf_add(struct mqfs_dirbuf *b, const char *name, uint64_t ino,
		     unsigned type, uint64_t next, const struct mqfs_entry *e);
/* Each lookup a plus listing handed out (the reply did not arrive). */
void mqfs_dirbuf_forget(const struct mqfs_dirbuf *b,
			void (*forget)(void *arg, uint64_t ino), void *arg);

/* ---- INIT and the connection (init.c) -------------------------------------- */

/* What INIT settled, read-only afterwards. */
struct mqfs_conn {
	uint32_t minor;			/* the protocol minor in use */
	uint64_t flags;			/* granted FUSE_* (flags2 << 32) */
	unsigned max_write, max_background;
	bool writeback;			/* kernel writeback cache */
	bool mmap_direct;		/* DIRECT_IO_ALLOW_MMAP */
	bool uring;			/* requests come over the rings */
};

void mqfs_fuse_init(struct mqfs_req *r);

/* ---- the writeback throttle (bdi.c) ----------------------------------------- */

/*
 * The mount's backing-device limits.  A FUSE bdi starts with
 * strict_limit=1 and max_ratio=1 (1 % of the dirty limit), which
 * throttles cache=kernel writers long before the device is busy; with
 * @max_ratio non-zero the "roomy" limits are strict_limit 0 and that
 * max_ratio (0: the kernel's).  While the free space is low the limit
 * follows it (bdi.c says how).  Root only: elsewhere nothing is set and
 * mqfs_bdi_describe says why.
 */
#define MQFS_BDI_MIN_CAP	(1ull << 20)
struct mqfs_bdi {
	char dev[32];			/* "0:MINOR" */
	unsigned max_ratio;		/* bdi_max_ratio= */
	atomic_bool live;		/* ours to set */
	pthread_mutex_t lock;		/* one writer of sysfs at a time */
	_Atomic uint64_t cap;		/* max_bytes set; 0: the roomy limits */
	_Atomic uint64_t roomy;		/* dirty bytes the roomy limits allow */
	_Atomic uint64_t roomy_at;	/* when @roomy was read (s, coarse) */
	_Atomic uint64_t changes;	/* limit changes since mount */
	char error[64];			/* why not live, under @lock */
};

void mqfs_bdi_init(struct mqfs_bdi *b, unsigned max_ratio);
/* Take the mount's bdi and set the roomy limits: @path is the mount
 * point resolved before the mount (a stat of it now would wait for the
 * daemon). */
void mqfs_bdi_attach(struct mqfs_bdi *b, const char *path);
/*
 * The max_bytes for @free_bytes when the roomy limits let the kernel
 * hold @roomy bytes: 0 (the roomy limits) when they fit, else the free
 * space rounded down to a quarter of its power of two (four steps per
 * doubling: few sysfs writes as the space goes), at least
 * MQFS_BDI_MIN_CAP.
 */
uint64_t mqfs_bdi_cap(uint64_t roomy, uint64_t free_bytes);
/* The free space changed (cheap when the limit stays). */
void mqfs_bdi_follow(struct mqfs_bdi *b, uint64_t free_bytes);
void mqfs_bdi_describe(struct mqfs_bdi *b, char *buf, size_t size);
void mqfs_bdi_destroy(struct mqfs_bdi *b);

/* ---- the operations (ops.c) ------------------------------------------------ */

/*
 * The daemon: the filesystem, the control surface, the engine and what
 * the handlers need.  @fs is set before the engine starts and stays
 * until it has stopped.
 */
struct mqfs_daemon {
	struct mqfs_fs *fs;
	struct mqfs_ctl ctl;
	struct mqfs_engine eng;
	struct mqfs_rings rings;	/* prepared: io_uring may be granted */
	enum mqfs_transport transport;	/* asked for */
	char transport_note[160];	/* why not io_uring, or "" */
	struct mqfs_conn conn;
	bool plug;			/* handlers run inside a plug */
	enum mqfs_cache_mode cache;	/* the mount's; files may differ */
	bool acl;			/* POSIX ACLs asked at INIT */
	unsigned max_background;	/* asked for at INIT */
	struct mqfs_bdi bdi;		/* the writeback limits */
	struct mqfs_ioprio ioprio;	/* the callers' I/O priorities */
};

/* Serve one decoded request (any opcode but INIT and INTERRUPT). */
void mqfs_ops_dispatch(struct mqfs_req *r);
void mqfs_daemon_init(struct mqfs_daemon *d, const struct mqfs_config *cfg);
/* The filesystem's free space, for the writeback limits (bdi.c). */
uint64_t mqfs_daemon_free_bytes(struct mqfs_daemon *d);
void mqfs_daemon_destroy(struct mqfs_daemon *d);

/* ---- background start and logging (daemon.c) ---------------------------- */

/*
 * Without -f: fork now, before any thread exists (threads do not survive
 * a fork, and the device, the queue and the journal all start some).
 * The parent waits for mqfs_bg_ready() and exits with the status it
 * reports, so errors before the mount still reach the caller's exit
 * status and terminal.  Returns in the child (or at once with -f).
 */
int mqfs_bg_start(bool foreground);
/*
 * Report the start-up @status (0: mounted) to the waiting parent.  On
 * success the child detaches: stdin/stdout go to /dev/null and stderr
 * lines go to syslog (facility daemon, ident "mqfs").
 */
void mqfs_bg_ready(int status);
/* Flush and stop the syslog forwarder (before exit). */
void mqfs_bg_finish(void);
/*
 * The termination signals (INT, TERM, HUP, QUIT), blocked in the main
 * thread before any other starts, so that every thread inherits the
 * mask; the main thread takes them from a signalfd and unmounts.
 */
void mqfs_signals_set(sigset_t *s);
void mqfs_signals_block(void);

#endif /* MQFS_FUSE_I_H */
