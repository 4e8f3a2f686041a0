/* SPDX-License-Identifier: MIT */
/*
 * engine.c - mqfs's own FUSE request loop on /dev/fuse, and what every
 * request goes through whichever way it came (mqfs_engine_serve, the
 * replies, the asynchronous completions): ring.c brings requests over
 * io_uring and answers them through mqfs_ring_fill/mqfs_ring_release.
 *
 * libfuse mounts, unmounts and parses the command line; the requests
 * are read and answered here.  Each worker thread has its own channel,
 * a /dev/fuse fd cloned from the session's (FUSE_DEV_IOC_CLONE): the
 * kernel queues requests once for the connection, wakes one reader per
 * request, and keeps a request being processed on the channel that read
 * it, so its reply must go back through that same fd.
 *
 * A worker reads straight into a free slot (pool.c), where the headers
 * of a WRITE end on a page boundary: the data the kernel copies after
 * them is page-aligned, and the filesystem writes it to the device from
 * there.  A request the handler finishes is answered by the worker,
 * which keeps the slot for its next read; one handed to an asynchronous
 * completion (reads, writes) keeps its slot until the completion has
 * answered it, and the worker takes another.  Nothing is allocated per
 * request.
 *
 * Interrupts: a FUSE_INTERRUPT names a request by its unique.  A read
 * waiting for the device or for a lock (mqfs_req_async with
 * cancellable) is answered EINTR at once; the I/O still completes into
 * its slot, and the completion, finding the request answered, only
 * frees the slot.  Every other request runs to its end and is answered
 * normally, which the protocol allows; an INTERRUPT itself is never
 * answered (an EAGAIN would have to go to the channel of the original).
 *
 * Priorities: the bios a handler submits carry its caller's I/O
 * priority class (ioprio.c), as a kernel filesystem's carry the task's.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include "fuse_i.h"
#include "mqfs/clock.h"

/* A handler that took this long waited for something: add a worker. */
#define ENG_BLOCKED_NS	(200 * 1000ull)
/* Workers left waiting in read() when the others are surplus. */
#define ENG_READERS	2u
/* The longest an ENOSPC waits for the forgets on their way. */
#define ENG_FORGET_WAIT_MS	2000u

struct mqfs_worker {
	struct mqfs_daemon *d;
	int fd;
	unsigned index;
	pthread_t thread;
	struct mqfs_engine *e;
};

/* ---- -d: what libfuse's debug output would show -------------------------- */

static const char *const eng_opnames[MQFS_FUSE_OPCODE_MAX] = {
	[FUSE_LOOKUP] = "LOOKUP", [FUSE_FORGET] = "FORGET",
	[FUSE_GETATTR] = "GETATTR", [FUSE_SETATTR] = "SETATTR",
	[FUSE_READLINK] = "READLINK", [FUSE_SYMLINK] = "SYMLINK",
	[FUSE_MKNOD] = "MKNOD", [FUSE_MKDIR] = "MKDIR",
	[FUSE_UNLINK] = "UNLINK", [FUSE_RMDIR] = "RMDIR",
	[FUSE_RENAME] = "RENAME", [FUSE_LINK] = "LINK", [FUSE_OPEN] = "OPEN",
	[FUSE_READ] = "READ", [FUSE_WRITE] = "WRITE",
	[FUSE_STATFS] = "STATFS", [FUSE_RELEASE] = "RELEASE",
	[FUSE_FSYNC] = "FSYNC", [FUSE_SETXATTR] = "SETXATTR",
	[FUSE_GETXATTR] = "GETXATTR", [FUSE_LISTXATTR] = "LISTXATTR",
	[FUSE_REMOVEXATTR] = "REMOVEXATTR", [FUSE_FLUSH] = "FLUSH",
	[FUSE_INIT] = "INIT", [FUSE_OPENDIR] = "OPENDIR",
	[FUSE_READDIR] = "READDIR", [FUSE_RELEASEDIR] = "RELEASEDIR",
	[FUSE_FSYNCDIR] = "FSYNCDIR", [FUSE_GETLK] = "GETLK",
	[FUSE_SETLK] = "SETLK", [FUSE_SETLKW] = "SETLKW",
	[FUSE_ACCESS] = "ACCESS", [FUSE_CREATE] = "CREATE",
	[FUSE_INTERRUPT] = "INTERRUPT", [FUSE_BMAP] = "BMAP",
	[FUSE_DESTROY] = "DESTROY", [FUSE_IOCTL] = "IOCTL",
	[FUSE_POLL] = "POLL", [FUSE_NOTIFY_REPLY] = "NOTIFY_REPLY",
	[FUSE_BATCH_FORGET] = "BATCH_FORGET", [FUSE_FALLOCATE] = "FALLOCATE",
	[FUSE_READDIRPLUS] = "READDIRPLUS", [FUSE_RENAME2] = "RENAME2",
	[FUSE_LSEEK] = "LSEEK", [FUSE_COPY_FILE_RANGE] = "COPY_FILE_RANGE",
	[FUSE_SETUPMAPPING] = "SETUPMAPPING",
	[FUSE_REMOVEMAPPING] = "REMOVEMAPPING", [FUSE_SYNCFS] = "SYNCFS",
	[FUSE_TMPFILE] = "TMPFILE", [MQFS_FUSE_STATX] = "STATX",
	[MQFS_FUSE_COPY_FILE_RANGE_64] = "COPY_FILE_RANGE_64",
};

const char *mqfs_engine_op_name(uint32_t op)
{
	return op < MQFS_FUSE_OPCODE_MAX ? eng_opnames[op] : NULL;
}

static const char *eng_opname(uint32_t op)
{
	const char *name = mqfs_engine_op_name(op);

	return name ? name : "???";
}

static void eng_debug_in(const struct mqfs_fuse_msg *m, size_t n)
{
	const struct fuse_in_header *h = m->h;

	fprintf(stderr, "unique: %" PRIu64 ", opcode: %s (%u), nodeid: %"
		PRIu64 ", insize: %zu, pid: %u\n", h->unique,
		eng_opname(h->opcode), h->opcode, h->nodeid, n, h->pid);
}

static void eng_debug_out(const struct fuse_out_header *oh)
{
	if (oh->error)
		fprintf(stderr, "   unique: %" PRIu64 ", error: %d (%s), "
			"outsize: %u\n", oh->unique, oh->error,
			strerror(-oh->error), oh->len);
	else
		fprintf(stderr, "   unique: %" PRIu64 ", success, outsize: %u\n",
			oh->unique, oh->len);
}

/* ---- replies ------------------------------------------------------------- */

/* Write a reply for @unique to channel @fd (@iov[0] is the header's). */
static int eng_write_to(struct mqfs_engine *e, int fd, uint64_t unique,
			int err, struct iovec *iov, int n)
{
	struct fuse_out_header oh = { .len = sizeof(oh), .error = err,
				      .unique = unique };

	iov[0] = (struct iovec){ .iov_base = &oh, .iov_len = sizeof(oh) };
	for (int i = 1; i < n; i++)
		oh.len += (uint32_t)iov[i].iov_len;
	if (e->debug)
		eng_debug_out(&oh);
	if (writev(fd, iov, n) >= 0)
		return 0;
	err = errno;
	/* ENOENT: interrupted or aborted, nobody waits; ENODEV: unmounted. */
	if (err != ENOENT && err != ENODEV)
		fprintf(stderr, "mqfs: fuse: reply to %" PRIu64 ": %s\n",
			unique, strerror(err));
	return -ENOENT;
}

/* To the request's channel, or into its ring entry (ring.c). */
static int eng_write(struct mqfs_req *r, int err, struct iovec *iov, int n)
{
	struct mqfs_engine *e = &r->d->eng;
	int ret;

	if (!r->ent)
		return eng_write_to(e, r->fd, r->m.h->unique, err, iov, n);
	ret = mqfs_ring_fill(r->ent, err, iov, n);
	if (e->debug && !ret) {
		struct fuse_out_header oh = { .len = sizeof(oh), .error = err,
					      .unique = r->m.h->unique };

		for (int i = 1; i < n; i++)
			oh.len += (uint32_t)iov[i].iov_len;
		eng_debug_out(&oh);
	}
	return ret;
}

/* A cancellable request is answered by whoever takes its unique first. */
static bool eng_claim(struct mqfs_req *r)
{
	uint64_t unique = r->m.h->unique;

	return !r->cancellable ||
	       atomic_compare_exchange_strong(&r->live, &unique, 0);
}

int mqfs_reply_iov(struct mqfs_req *r, struct iovec *iov, int n)
{
	if (!eng_claim(r))
		return -ENOENT;
	return eng_write(r, 0, iov, n);
}

int mqfs_reply(struct mqfs_req *r, const void *arg, size_t len)
{
	struct iovec iov[2] = { [1] = { .iov_base = (void *)arg,
					.iov_len = len } };

	return mqfs_reply_iov(r, iov, len ? 2 : 1);
}

int mqfs_reply_err(struct mqfs_req *r, int err)
{
	struct iovec iov[1];

	if (!eng_claim(r))
		return -ENOENT;
	/* The kernel takes only errors in (-ERESTARTSYS, 0]. */
	if (err < -511 || err > 0)
		err = -EIO;
	return eng_write(r, err, iov, 1);
}

void mqfs_reply_none(struct mqfs_req *r)
{
	if (r->d->eng.debug)
		fprintf(stderr, "   unique: %" PRIu64 ", no reply\n",
			r->m.h->unique);
}

void mqfs_notify_inval_attr(struct mqfs_req *r, uint64_t ino)
{
	struct fuse_notify_inval_inode_out o = { .ino = ino, .off = -1 };
	struct fuse_out_header oh = { .len = sizeof(oh) + sizeof(o),
				      .error = FUSE_NOTIFY_INVAL_INODE };
	struct iovec iov[2] = { { &oh, sizeof(oh) }, { &o, sizeof(o) } };

	/* Attributes only (off < 0): no page lock a writer may hold. */
	if (writev(r->fd, iov, 2) < 0 && errno != ENOENT && errno != ENODEV)
		fprintf(stderr, "mqfs: fuse: notify inode %" PRIu64 ": %s\n",
			ino, strerror(errno));
}

/* ---- asynchronous requests ------------------------------------------------ */

/* A slot no user holds: back to the pool, or its ring entry commits. */
static void eng_req_free(struct mqfs_req *r)
{
	if (r->ent)
		mqfs_ring_release(r->ent);
	else
		mqfs_pool_put(&r->d->eng.pool, r);
}

void mqfs_req_async(struct mqfs_req *r, bool cancellable)
{
	struct mqfs_engine *e = &r->d->eng;

	atomic_fetch_add(&r->refs, 1);
	mq_inflight_inc(&e->inflight);
	atomic_fetch_add(&e->async, 1);
	/* A ring request cannot be answered before its end (ring.c). */
	if (cancellable && !r->ent) {
		r->cancellable = true;
		atomic_store(&r->live, r->m.h->unique);
	}
}

void mqfs_req_complete(struct mqfs_req *r)
{
	struct mqfs_engine *e = &r->d->eng;

	if (atomic_fetch_sub(&r->refs, 1) == 1)
		eng_req_free(r);
	mq_inflight_dec(&e->inflight);
}

/* ---- serving a request ---------------------------------------------------- */

static void eng_interrupt(struct mqfs_req *r)
{
	const struct fuse_interrupt_in *in = r->m.arg;
	struct mqfs_engine *e = &r->d->eng;

	atomic_fetch_add(&e->interrupts, 1);
	for (unsigned i = 0; i < e->pool.nr; i++) {
		struct mqfs_req *t = &e->pool.reqs[i];
		uint64_t want = in->unique;
		struct iovec iov[1];
		int fd;

		if (t == r || atomic_load(&t->live) != want)
			continue;
		/*
		 * The channel is read before the claim, and nothing of @t
		 * after it: once claimed, the completion may free the slot
		 * and a worker read the next request into it.  A won claim
		 * proves @t still held the request when @fd was read.
		 */
		fd = t->fd;
		if (atomic_compare_exchange_strong(&t->live, &want, 0)) {
			eng_write_to(e, fd, in->unique, -EINTR, iov, 1);
			atomic_fetch_add(&e->cancelled, 1);
		}
		break;
	}
	mqfs_reply_none(r);
}

/* A message the decoder refused: answered when its header allows. */
static void eng_bad(struct mqfs_req *r, int err, size_t n)
{
	struct mqfs_engine *e = &r->d->eng;
	uint32_t op;

	if (err == -EPROTO) {
		atomic_fetch_add(&e->bad, 1);
		fprintf(stderr, "mqfs: fuse: a %zu-byte message: ignored\n", n);
		return;
	}
	op = r->m.h->opcode;
	if (op == FUSE_FORGET || op == FUSE_BATCH_FORGET ||
	    op == FUSE_INTERRUPT || op == FUSE_NOTIFY_REPLY)
		err = 0;	/* they take no reply */
	if (err == -EIO) {
		atomic_fetch_add(&e->bad, 1);
		fprintf(stderr, "mqfs: fuse: malformed %s (%zu bytes): EIO\n",
			eng_opname(op), n);
	}
	if (err)
		mqfs_reply_err(r, err);
	else
		mqfs_reply_none(r);
}

/*
 * The class of the bios that serve @r: the caller's I/O priority.  The
 * kernel's own writeback of cached pages (and a request without a
 * caller) keeps NONE, as the kernel's writeback does.
 */
static enum mq_prio_class eng_caller_prio(struct mqfs_req *r)
{
	const struct fuse_write_in *w = r->m.arg;

	if (r->m.h->opcode == FUSE_WRITE && (w->write_flags & FUSE_WRITE_CACHE))
		return MQ_PRIO_NONE;
	return mqfs_ioprio_class(mqfs_ioprio_of(&r->d->ioprio,
						(pid_t)r->m.h->pid));
}

static void eng_dispatch(struct mqfs_req *r)
{
	struct mqfs_daemon *d = r->d;
	uint32_t op = r->m.h->opcode;
	enum mq_prio_class prio;
	struct mq_plug plug;

	if (op == FUSE_INIT) {
		mqfs_fuse_init(r);
	} else if (!atomic_load(&d->eng.initialized)) {
		mqfs_reply_err(r, -EIO);	/* the kernel sends INIT first */
	} else if (op == FUSE_INTERRUPT) {
		eng_interrupt(r);
	} else {
		prio = mq_set_task_prio(eng_caller_prio(r));
		/* Sized 1: the filesystem raises it for what it issues. */
		if (d->plug)
			mq_start_plug(&plug, 1);
		mqfs_ops_dispatch(r);
		if (d->plug)
			mq_finish_plug(&plug);
		mq_set_task_prio(prio);
	}
}

bool mqfs_engine_serve(struct mqfs_req *r, int err, size_t n)
{
	struct mqfs_engine *e = &r->d->eng;
	uint32_t op = err ? 0 : r->m.h->opcode;
	bool forget = op == FUSE_FORGET || op == FUSE_BATCH_FORGET;

	r->cancellable = false;
	r->writeback = false;
	atomic_store(&r->live, 0);
	atomic_store(&r->refs, 1);
	atomic_fetch_add(&e->requests, 1);
	if (op < MQFS_FUSE_OPCODE_MAX)
		atomic_fetch_add_explicit(&e->op_counts[op], 1,
					  memory_order_relaxed);
	if (e->debug && err != -EPROTO)
		eng_debug_in(&r->m, n);
	if (forget)
		atomic_fetch_add(&e->forgets_busy, 1);
	if (err)
		eng_bad(r, err, n);
	else
		eng_dispatch(r);
	if (forget)
		atomic_fetch_sub(&e->forgets_busy, 1);
	return atomic_fetch_sub(&r->refs, 1) == 1;
}

/*
 * Does a forget wait: served by a worker now, or, on FUSE over io_uring
 * (where /dev/fuse carries nothing but forgets and interrupts), still
 * queued there?  On /dev/fuse alone the kernel hands queued forgets out
 * before requests, so those the waiting request came after were read
 * before it.  No workers (stopped) or POLLERR (the connection is gone):
 * nothing will serve what is queued.
 */
static bool eng_forgets_pending(struct mqfs_engine *e)
{
	struct pollfd p = { .fd = e->clone_fd, .events = POLLIN };

	if (atomic_load(&e->forgets_busy))
		return true;
	if (!e->d || !e->d->conn.uring || !atomic_load(&e->started) ||
	    p.fd < 0 || poll(&p, 1, 0) != 1)
		return false;
	return (p.revents & POLLIN) &&
	       !(p.revents & (POLLERR | POLLHUP | POLLNVAL));
}

void mqfs_engine_await_forgets(void *arg)
{
	struct mqfs_engine *e = arg;
	uint64_t until = mq_clock_ns() + ENG_FORGET_WAIT_MS * 1000000ull;
	const struct timespec nap = { .tv_nsec = 1000 * 1000 };

	if (!eng_forgets_pending(e))
		return;
	atomic_fetch_add(&e->forget_waits, 1);
	do
		nanosleep(&nap, NULL);
	while (eng_forgets_pending(e) && mq_clock_ns() < until);
}

/* One request into @r: its length, or -errno (-ENODEV: unmounted). */
static ssize_t eng_receive(int fd, struct mqfs_req *r)
{
	char *buf = r->payload - MQFS_FUSE_WRITE_HDR;
	size_t cap = MQFS_FUSE_WRITE_HDR + MQFS_SLOT_PAYLOAD;

	for (;;) {
		ssize_t n = read(fd, buf, cap);

		if (n >= 0)
			return n;
		/* ENOENT: the request went away before we could read it. */
		if (errno != EINTR && errno != EAGAIN && errno != ENOENT)
			return -errno;
	}
}

static void eng_grow(struct mqfs_engine *e);

/*
 * A surplus worker (enough others wait in read()) sleeps here, off the
 * channel, until a handler that blocked finds nobody reading: every
 * sleeper in read() costs a wake-up per request, a parked one nothing.
 */
static void eng_park(struct mqfs_engine *e)
{
	pthread_mutex_lock(&e->spawn_lock);
	e->parked++;
	while (!e->wake_tokens && !e->stopping)
		pthread_cond_wait(&e->park_cond, &e->spawn_lock);
	if (e->wake_tokens)
		e->wake_tokens--;
	e->parked--;
	pthread_mutex_unlock(&e->spawn_lock);
}

static void *eng_worker(void *arg)
{
	struct mqfs_worker *w = arg;
	struct mqfs_engine *e = w->e;
	struct mqfs_req *r = NULL;
	ssize_t n;

	for (;;) {
		uint64_t t0;

		if (!r)
			r = mqfs_pool_get(&e->pool);
		atomic_fetch_add(&e->idle, 1);
		n = eng_receive(w->fd, r);
		atomic_fetch_sub(&e->idle, 1);
		if (n < 0)
			break;
		t0 = mq_clock_ns();
		r->d = w->d;
		r->fd = w->fd;
		if (!mqfs_engine_serve(r, mqfs_fuse_decode(r->payload -
							   MQFS_FUSE_WRITE_HDR,
							   (size_t)n, &r->m),
				       (size_t)n))
			r = NULL;	/* the request keeps it */
		if (mq_clock_ns() - t0 > ENG_BLOCKED_NS) {
			/* It blocked: was anybody left for the next one? */
			if (!atomic_load(&e->idle))
				eng_grow(e);
		} else if (atomic_load(&e->idle) >= ENG_READERS &&
			   e->max_workers > ENG_READERS) {
			if (r)
				mqfs_pool_put(&e->pool, r);
			r = NULL;
			eng_park(e);
		}
	}
	if (r)
		mqfs_pool_put(&e->pool, r);
	if (n != -ENODEV)
		fprintf(stderr, "mqfs: fuse: worker %u: read: %s\n", w->index,
			strerror((int)-n));
	if (eventfd_write(e->done_fd, 1))
		fprintf(stderr, "mqfs: fuse: worker %u: eventfd: %s\n",
			w->index, strerror(errno));
	return NULL;
}

/* ---- life cycle ------------------------------------------------------------- */

int mqfs_engine_init(struct mqfs_engine *e, unsigned max_workers,
		     unsigned inflight, bool debug)
{
	int err;

	memset(e, 0, sizeof(*e));
	e->done_fd = e->clone_fd = -1;
	e->max_workers = max_workers ? max_workers : 1;
	e->debug = debug;
	mq_inflight_init(&e->inflight);
	pthread_mutex_init(&e->init_lock, NULL);
	pthread_cond_init(&e->init_cond, NULL);
	pthread_mutex_init(&e->spawn_lock, NULL);
	pthread_cond_init(&e->park_cond, NULL);
	e->inited = true;
	e->workers = calloc(e->max_workers, sizeof(*e->workers));
	if (!e->workers)
		return -ENOMEM;
	err = mqfs_pool_create(&e->pool, e->max_workers + inflight);
	if (err)
		return err;
	e->done_fd = eventfd(0, EFD_CLOEXEC);
	return e->done_fd < 0 ? -errno : 0;
}

/* A channel of the session's connection, for one worker. */
static int eng_clone(int session_fd)
{
	uint32_t src = (uint32_t)session_fd;
	int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	if (ioctl(fd, FUSE_DEV_IOC_CLONE, &src)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* One more worker (spawn_lock held); 0 or -errno. */
static int eng_spawn_locked(struct mqfs_engine *e)
{
	unsigned i = atomic_load(&e->started);
	struct mqfs_worker *w = &e->workers[i];
	char name[16];
	int err;

	*w = (struct mqfs_worker){ .d = e->d, .e = e, .index = i,
				   .fd = eng_clone(e->clone_fd) };
	if (w->fd < 0)
		return w->fd;
	err = -pthread_create(&w->thread, NULL, eng_worker, w);
	if (err) {
		close(w->fd);
		return err;
	}
	snprintf(name, sizeof(name), "mqfs-fuse%u", i % 100);
	pthread_setname_np(w->thread, name);
	atomic_store(&e->started, i + 1);
	return 0;
}

/* A parked worker back to the channel, or a new one (up to the most). */
static void eng_grow(struct mqfs_engine *e)
{
	int err = 0;

	pthread_mutex_lock(&e->spawn_lock);
	if (!e->stopping && !atomic_load(&e->idle)) {
		if (e->parked > e->wake_tokens) {
			e->wake_tokens++;
			pthread_cond_signal(&e->park_cond);
		} else if (atomic_load(&e->started) < e->max_workers) {
			err = eng_spawn_locked(e);
		}
	}
	pthread_mutex_unlock(&e->spawn_lock);
	if (err)
		fprintf(stderr, "mqfs: fuse: no worker added: %s\n",
			strerror(-err));
}

int mqfs_engine_start(struct mqfs_engine *e, struct mqfs_daemon *d,
		      int session_fd)
{
	unsigned first = MQ_MIN(ENG_READERS, e->max_workers);
	int err = 0;

	e->d = d;
	e->clone_fd = fcntl(session_fd, F_DUPFD_CLOEXEC, 0);
	if (e->clone_fd < 0)
		return -errno;
	pthread_mutex_lock(&e->spawn_lock);
	while (!err && atomic_load(&e->started) < first)
		err = eng_spawn_locked(e);
	pthread_mutex_unlock(&e->spawn_lock);
	return err;
}

void mqfs_engine_stop(struct mqfs_engine *e)
{
	unsigned n;

	pthread_mutex_lock(&e->spawn_lock);
	e->stopping = true;
	pthread_cond_broadcast(&e->park_cond);	/* to read their ENODEV */
	n = atomic_load(&e->started);
	pthread_mutex_unlock(&e->spawn_lock);
	for (unsigned i = 0; i < n; i++)
		pthread_join(e->workers[i].thread, NULL);
	/* No ring thread starts another request once they are joined. */
	if (e->d)
		mqfs_rings_quiesce(&e->d->rings);
	/* Completions still answer on the workers' channels and rings. */
	if (e->d)
		mqfs_rings_drain(&e->d->rings, &e->inflight);
	else
		mq_inflight_wait(&e->inflight);
	if (e->d)
		mqfs_rings_stop(&e->d->rings);
	for (unsigned i = 0; i < n; i++)
		close(e->workers[i].fd);
	atomic_store(&e->started, 0);
}

void mqfs_engine_destroy(struct mqfs_engine *e)
{
	if (!e->inited)
		return;
	e->inited = false;
	/* Kept until now: the unmount's writes may still await forgets. */
	if (e->clone_fd >= 0)
		close(e->clone_fd);
	e->clone_fd = -1;
	mqfs_pool_destroy(&e->pool);
	free(e->workers);
	e->workers = NULL;
	if (e->done_fd >= 0)
		close(e->done_fd);
	e->done_fd = -1;
	pthread_cond_destroy(&e->park_cond);
	pthread_mutex_destroy(&e->spawn_lock);
	pthread_cond_destroy(&e->init_cond);
	pthread_mutex_destroy(&e->init_lock);
	mq_inflight_destroy(&e->inflight);
}

void mqfs_engine_init_done(struct mqfs_engine *e, int err)
{
	pthread_mutex_lock(&e->init_lock);
	e->init_state = err ? err : 1;
	pthread_cond_broadcast(&e->init_cond);
	pthread_mutex_unlock(&e->init_lock);
	if (err)
		mqfs_engine_fail(e, err);	/* a failed start ends the mount */
}

void mqfs_engine_fail(struct mqfs_engine *e, int err)
{
	int none = 0;

	atomic_compare_exchange_strong(&e->failed, &none, err);
	if (eventfd_write(e->done_fd, 1))
		fprintf(stderr, "mqfs: fuse: eventfd: %s\n", strerror(errno));
}

int mqfs_engine_wait_init(struct mqfs_engine *e, unsigned ms)
{
	struct timespec until = mqfs_deadline_ms(ms);
	int ret = 0;

	pthread_mutex_lock(&e->init_lock);
	while (!e->init_state && !ret)
		ret = pthread_cond_timedwait(&e->init_cond, &e->init_lock,
					     &until);
	ret = e->init_state == 1 ? 0 : e->init_state ? e->init_state
						      : -ETIMEDOUT;
	pthread_mutex_unlock(&e->init_lock);
	return ret;
}

uint64_t mqfs_engine_op_count(struct mqfs_engine *e, uint32_t op)
{
	return op < MQFS_FUSE_OPCODE_MAX ? atomic_load(&e->op_counts[op]) : 0;
}

void mqfs_engine_get_stats(struct mqfs_engine *e, struct mqfs_engine_stats *s)
{
	unsigned parked;

	pthread_mutex_lock(&e->spawn_lock);
	parked = e->parked;
	pthread_mutex_unlock(&e->spawn_lock);
	*s = (struct mqfs_engine_stats){
		.requests = atomic_load(&e->requests),
		.async = atomic_load(&e->async),
		.interrupts = atomic_load(&e->interrupts),
		.cancelled = atomic_load(&e->cancelled),
		.bad = atomic_load(&e->bad),
		.slot_waits = atomic_load(&e->pool.waits),
		.forget_waits = atomic_load(&e->forget_waits),
		.slots = e->pool.nr, .workers = atomic_load(&e->started),
		.parked = parked,
		.max_workers = e->max_workers,
		.inflight = mq_inflight_count(&e->inflight),
	};
}
