/* SPDX-License-Identifier: MIT */
/*
 * t_uring.h - helpers shared by the io_uring driver's test programs
 * (test_uring_open, test_uring_data, test_uring_rings,
 * test_uring_blockdev, test_uring_poll): a temp directory that takes
 * O_DIRECT, sparse files, offset-dependent data patterns, a bio pool that
 * counts every end_io, synchronous bios and ranges of bios, failed opens
 * with their message, a loop device fixture, liburing interposed
 * (ring-full counters; the ThreadSanitizer model of the kernel's
 * ordering), and the programs' main.
 *
 * Each program defines g_prog (its name, for messages) before including
 * this and ends with UR_MAIN(its suite): main probes io_uring (exit 77
 * when unusable), makes the directory, runs the suite and cleans up.
 * Files live in a mkdtemp directory under $TMPDIR (default /var/tmp);
 * the loop device is attached by an unchecked fixture (in the parent
 * process) and detached in its teardown even when a test failed.
 * g_submit_breaks makes the next submits fail as a broken ring's do
 * (test_uring_submit).
 */
#ifndef MQFS_TESTS_T_URING_H
#define MQFS_TESTS_T_URING_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t_main.h"
#include "t_util.h"
#include "mqfs/dev/uring.h"
#include "t_dev.h"

#define KiB		1024u
#define MiB		(1024u * 1024u)
#define UR_ALIGN	4096u

static const char *const elv_names[] = { "mq-deadline", "none" };

static char g_dir[PATH_MAX / 2];	/* this run's temp directory */
static pid_t g_main_pid;
static unsigned g_file_seq;

/* ---- liburing interposed ----------------------------------------------- */

#include <dlfcn.h>
#include <liburing.h>

/*
 * uring.c calls liburing's io_uring_submit() and io_uring_peek_batch_cqe()
 * (shared library functions): the tests interpose both to count ring-full
 * conditions - a submit entered with no free SQ slot, a reap that finds
 * the kernel's CQ-overflow flag set - and, in TSan builds, to model the
 * ordering io_uring provides.  ThreadSanitizer cannot see it: a request
 * prepared and submitted by one thread is read by the thread reaping the
 * ring (its reaper, or a poller) after its CQE arrives, with only the
 * kernel in between (liburing makes raw system calls), so every request
 * and bio field looks raced.  A submission releases the ring, a reap
 * acquires it.
 */
#if defined(__SANITIZE_THREAD__)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define ur_tsan_acquire(p)	__tsan_acquire(p)
#define ur_tsan_release(p)	__tsan_release(p)
#else
#define ur_tsan_acquire(p)	do { } while (0)
#define ur_tsan_release(p)	do { } while (0)
#endif

static int (*real_submit)(struct io_uring *);
static unsigned (*real_peek_batch)(struct io_uring *, struct io_uring_cqe **,
				   unsigned);
static atomic_ulong g_sq_full;		/* submits with a full SQ ring */
static atomic_ulong g_cq_overflow;	/* reaps that saw CQ overflow */
static atomic_int g_submit_breaks;	/* submits still to fail, EBADFD */

/*
 * What a broken ring's submit leaves (an R_DISABLED ring's, say): liburing
 * has published the SQEs to the kernel, whose enter then refused them.
 */
static inline int ur_submit_broken(struct io_uring *ring)
{
	ring->sq.sqe_head = ring->sq.sqe_tail;
	io_uring_smp_store_release(ring->sq.ktail, ring->sq.sqe_tail);
	return -EBADFD;
}

int io_uring_submit(struct io_uring *ring)
{
	if (!io_uring_sq_space_left(ring))
		atomic_fetch_add_explicit(&g_sq_full, 1, memory_order_relaxed);
	if (atomic_load(&g_submit_breaks) > 0 &&
	    atomic_fetch_sub(&g_submit_breaks, 1) > 0)
		return ur_submit_broken(ring);
	ur_tsan_release(ring);
	return real_submit(ring);
}

unsigned io_uring_peek_batch_cqe(struct io_uring *ring,
				 struct io_uring_cqe **cqes, unsigned count)
{
	unsigned n = real_peek_batch(ring, cqes, count);

	ur_tsan_acquire(ring);
	if (IO_URING_READ_ONCE(*ring->sq.kflags) & IORING_SQ_CQ_OVERFLOW)
		atomic_fetch_add_explicit(&g_cq_overflow, 1,
					  memory_order_relaxed);
	return n;
}

static inline void ur_hooks_init(void)
{
	real_submit = (int (*)(struct io_uring *))dlsym(RTLD_NEXT,
							"io_uring_submit");
	real_peek_batch = (unsigned (*)(struct io_uring *,
					struct io_uring_cqe **, unsigned))
		dlsym(RTLD_NEXT, "io_uring_peek_batch_cqe");
	if (!real_submit || !real_peek_batch) {
		fprintf(stderr, "%s: liburing symbols not found\n", g_prog);
		exit(99);
	}
}

/* ---- files and data patterns ------------------------------------------ */

static inline void *ur_alloc(size_t n)
{
	void *p = NULL;

	t_check(posix_memalign(&p, UR_ALIGN, n) == 0 && p, "posix_memalign %zu",
		n);
	return p;
}

/* A fresh sparse file of @size bytes in the run's directory. */
static inline void ur_file(char *path, size_t len, const char *tag,
			   off_t size)
{
	int fd;

	snprintf(path, len, "%s/%s.%d.%u", g_dir, tag, (int)getpid(),
		 g_file_seq++);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	t_check(fd >= 0, "create %s: %s", path, strerror(errno));
	t_check(ftruncate(fd, size) == 0, "ftruncate %s: %s", path,
		strerror(errno));
	close(fd);
}

/* Pattern: 8-byte words that depend on their absolute offset and a seed. */
static inline uint64_t pat_word(uint64_t seed, uint64_t off)
{
	uint64_t x = (seed * 0x9e3779b97f4a7c15ull) ^ off;

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 33;
	return x | 1;		/* never a zero word: holes must show */
}

/* @off and @len multiples of 8. */
static inline void pat_fill(void *buf, size_t len, uint64_t off,
			    uint64_t seed)
{
	uint64_t *w = buf;

	for (size_t i = 0; i < len / 8; i++)
		w[i] = pat_word(seed, off + 8 * i);
}

/* Offset inside @buf of the first byte that differs, or -1. */
static inline long pat_diff(const void *buf, size_t len, uint64_t off,
			    uint64_t seed)
{
	const unsigned char *b = buf;

	for (size_t i = 0; i < len; i += 8) {
		uint64_t want = pat_word(seed, off + i);
		size_t n = MQ_MIN((size_t)8, len - i);

		if (memcmp(b + i, &want, n))
			return (long)i;
	}
	return -1;
}

/* The file's bytes [off, off + len) through the page cache. */
static inline void file_read(const char *path, void *buf, size_t len,
			     off_t off)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	t_check(fd >= 0, "open %s: %s", path, strerror(errno));
	n = pread(fd, buf, len, off);
	t_check(n == (ssize_t)len, "pread %s at %lld: %zd (%s)", path,
		(long long)off, n, n < 0 ? strerror(errno) : "short");
	close(fd);
}

static inline void file_check_pattern(const char *path, off_t off,
				      size_t len, uint64_t seed,
				      const char *what)
{
	unsigned char *buf = malloc(len);
	long d;

	t_check(buf != NULL, "malloc");
	file_read(path, buf, len, off);
	d = pat_diff(buf, len, (uint64_t)off, seed);
	t_check(d < 0, "%s: file byte %lld differs", what,
		(long long)off + d);
	free(buf);
}

/* ---- bios ------------------------------------------------------------- */

/*
 * A bio pool whose end_io touches the pool for the last time when it
 * counts the bio as ended, so the pool may be freed once all have.
 */
struct ur_pool {
	unsigned nr, submitted;
	struct mq_bio *bios;
	atomic_uint *done;
	atomic_uint errors, ended;
	mq_bio_end_io_t end_io;		/* NULL: ur_end_io; else calls it */
};

static inline void ur_end_io(struct mq_bio *bio)
{
	struct ur_pool *p = bio->private;
	unsigned i = (unsigned)(bio - p->bios);

	if (bio->status)
		atomic_fetch_add(&p->errors, 1);
	atomic_fetch_add(&p->done[i], 1);
	atomic_fetch_add(&p->ended, 1);		/* last touch of @p */
}

static inline bool ur_pool_init(struct ur_pool *p, unsigned nr)
{
	memset(p, 0, sizeof(*p));
	p->nr = nr;
	p->bios = calloc(nr, sizeof(*p->bios));
	p->done = calloc(nr, sizeof(*p->done));
	return p->bios && p->done;
}

static inline void ur_pool_free(struct ur_pool *p)
{
	free(p->bios);
	free((void *)p->done);
	memset(p, 0, sizeof(*p));
}

static inline void ur_submit(struct mq_queue *q, struct ur_pool *p,
			     enum mq_op op, uint64_t off, uint32_t len,
			     void *buf, unsigned flags)
{
	struct mq_bio *bio = &p->bios[p->submitted];

	mq_bio_init(bio, op, off >> MQ_SECTOR_SHIFT, buf, len,
		    p->end_io ? p->end_io : ur_end_io, p);
	bio->flags = (uint16_t)flags;
	p->submitted++;
	mq_submit_bio(q, bio);
}

/* Wait (bounded) for every submitted bio; false on timeout. */
static inline bool ur_pool_wait(struct ur_pool *p)
{
	return t_wait_until(atomic_load(&p->ended) >= p->submitted);
}

/* Every submitted bio ended exactly once, none with an error. */
static inline void ur_pool_check(struct ur_pool *p, const char *what)
{
	t_check(ur_pool_wait(p), "%s: only %u of %u bios ended", what,
		atomic_load(&p->ended), p->submitted);
	for (unsigned i = 0; i < p->submitted; i++)
		t_check(atomic_load(&p->done[i]) == 1,
			"%s: bio %u ended %u times", what, i,
			atomic_load(&p->done[i]));
	for (unsigned i = 0; i < p->submitted; i++)
		t_check(p->bios[i].status == 0, "%s: bio %u status %d (%s)",
			what, i, p->bios[i].status,
			strerror(-p->bios[i].status));
	t_check(atomic_load(&p->errors) == 0, "%s: %u errors", what,
		atomic_load(&p->errors));
}

/* ---- devices ---------------------------------------------------------- */

static inline struct mq_dev *ur_open(const char *path,
				     const struct mq_uring_config *uc)
{
	int err = 0;
	struct mq_dev *dev = t_dev_uring(path, uc, &err);

	t_check(dev != NULL, "mq_uring_open(%s): %s", path, strerror(-err));
	return dev;
}

static inline struct mq_queue *ur_queue(struct mq_dev *dev, const char *elv,
					unsigned nr_hw_queues,
					unsigned queue_depth)
{
	struct mq_queue_config cfg = {
		.elevator = elv, .nr_hw_queues = nr_hw_queues,
		.queue_depth = queue_depth,
	};

	return t_queue_create(dev, &cfg);
}

/* ---- files, descriptors, stderr, bios and ranges ----------------------- */

static inline struct stat ur_stat(const char *path)
{
	struct stat st;

	t_check(stat(path, &st) == 0, "stat %s: %s", path, strerror(errno));
	return st;
}

static inline unsigned ur_count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	unsigned n = 0;

	if (!d)
		return 0;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static inline long zero_diff(const void *buf, size_t len)
{
	const unsigned char *b = buf;

	for (size_t i = 0; i < len; i++)
		if (b[i])
			return (long)i;
	return -1;
}

static inline void file_check_zero(const char *path, off_t off,
				   size_t len, const char *what)
{
	unsigned char *buf = malloc(len);
	long d;

	t_check(buf != NULL, "malloc");
	file_read(path, buf, len, off);
	d = zero_diff(buf, len);
	t_check(d < 0, "%s: file byte %lld is not zero", what,
		(long long)off + d);
	free(buf);
}

/* Capture what is written to stderr between cap_start and cap_end. */
struct cap {
	FILE *tmp;
	int saved;
};

static inline void cap_start(struct cap *c)
{
	fflush(stderr);
	c->tmp = tmpfile();
	t_check(c->tmp != NULL, "tmpfile: %s", strerror(errno));
	c->saved = dup(STDERR_FILENO);
	dup2(fileno(c->tmp), STDERR_FILENO);
}

static inline void cap_end(struct cap *c, char *out, size_t len)
{
	size_t n;

	fflush(stderr);
	dup2(c->saved, STDERR_FILENO);
	close(c->saved);
	rewind(c->tmp);
	n = fread(out, 1, len - 1, c->tmp);
	out[n] = '\0';
	fclose(c->tmp);
}

/* One bio, waited for; returns its status. */
static inline int ur_sync(struct mq_queue *q, enum mq_op op, uint64_t off,
			  uint32_t len, void *buf, unsigned flags)
{
	struct ur_pool p;
	int st;

	t_check(ur_pool_init(&p, 1), "pool");
	ur_submit(q, &p, op, off, len, buf, flags);
	t_check(ur_pool_wait(&p), "op %d at %" PRIu64 " never ended", op, off);
	t_check(atomic_load(&p.done[0]) == 1, "ended %u times",
		atomic_load(&p.done[0]));
	st = p.bios[0].status;
	ur_pool_free(&p);
	return st;
}

/*
 * Submit [off, off + len) in @bs-byte bios from @p (len / bs of them),
 * plugged (batches of 32) or not.
 */
static inline void ur_submit_range(struct mq_queue *q, struct ur_pool *p,
				   enum mq_op op, uint64_t off, uint32_t len,
				   uint32_t bs, unsigned char *buf, bool plug,
				   unsigned flags)
{
	unsigned nr = len / bs;

	for (unsigned i = 0; i < nr;) {
		struct mq_plug pl;

		if (plug)
			mq_start_plug(&pl, 32);
		for (unsigned j = 0; j < (plug ? 32u : 1u) && i < nr; j++, i++)
			ur_submit(q, p, op, off + (uint64_t)i * bs, bs,
				  buf + (size_t)i * bs, flags);
		if (plug)
			mq_finish_plug(&pl);
	}
}

/* [off, off + len) in @bs-byte bios, waited for and checked. */
static inline void ur_rw_range(struct mq_queue *q, enum mq_op op,
			       uint64_t off, uint32_t len, uint32_t bs,
			       unsigned char *buf, bool plug, unsigned flags,
			       const char *what)
{
	struct ur_pool p;

	t_check(ur_pool_init(&p, len / bs), "pool");
	ur_submit_range(q, &p, op, off, len, bs, buf, plug, flags);
	ur_pool_check(&p, what);
	ur_pool_free(&p);
}

/*
 * Expect mq_uring_open to fail with @want (or @alt), and its message
 * (the driver's, or its caller's with mq_uring_open_hint) to say why.
 */
static inline void ur_open_fails(const char *path,
				 const struct mq_uring_config *uc, int want,
				 int alt, const char *needle)
{
	unsigned fds = ur_count_fds();
	struct mq_dev *dev;
	char msg[1024];
	struct cap c;
	int err = 0;

	cap_start(&c);
	dev = t_dev_uring(path, uc, &err);
	cap_end(&c, msg, sizeof(msg));
	if (dev)
		mq_dev_close(dev);
	t_check(dev == NULL, "mq_uring_open(%s) succeeded", path);
	t_check(err == want || (alt && err == alt),
		"mq_uring_open(%s): err %d (%s), want %d (%s)", path, err,
		strerror(-err), want, strerror(-want));
	/* The caller reports a failed open, as main.c and tools.c do. */
	if (!msg[0])
		snprintf(msg, sizeof(msg), "%s: %s%s", path, strerror(-err),
			 mq_uring_open_hint(err));
	t_check(strstr(msg, needle) != NULL,
		"mq_uring_open(%s): message \"%s\" lacks \"%s\"", path, msg,
		needle);
	t_check(ur_count_fds() == fds, "mq_uring_open(%s) leaked %d fds",
		path, (int)(ur_count_fds() - fds));
}

/* ---- a loop device ---------------------------------------------------- */

#define LOOP_SIZE	(16 * MiB)

static char g_loop[64];			/* attached by the fixture, or "" */
static char g_loop_file[PATH_MAX];
static char g_loop_why[160];		/* why there is no loop device */

static inline int run_cmd(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static inline int run_cmd(const char *fmt, ...)
{
	char cmd[PATH_MAX + 128];
	va_list ap;
	int ret;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	fflush(NULL);
	ret = system(cmd);
	return ret == -1 ? -1 : WIFEXITED(ret) ? WEXITSTATUS(ret) : 128;
}

/* Why a loop device cannot be made here, or NULL. */
static inline const char *loop_unavailable(void)
{
	if (geteuid() != 0)
		return "not root";
	if (access("/dev/loop-control", F_OK))
		return "no /dev/loop-control";
	if (run_cmd("command -v losetup >/dev/null 2>&1"))
		return "no losetup";
	return NULL;
}

static inline void loop_detach(void)
{
	if (!g_loop[0])
		return;
	if (run_cmd("losetup -d '%s'", g_loop))
		fprintf(stderr, "%s: losetup -d %s failed\n", g_prog,
			g_loop);
	/* A ring's teardown may hold it a moment: losetup autoclears then. */
	for (int i = 0; i < 100 && !run_cmd("losetup -j '%s' | grep -q .",
					     g_loop_file); i++)
		usleep(50 * 1000);
	g_loop[0] = '\0';
}

/* Unchecked fixture: runs in the parent, so teardown survives failures. */
static inline void loop_setup(void)
{
	const char *why = loop_unavailable();
	char out[PATH_MAX];
	FILE *f;
	int fd;

	g_loop[0] = '\0';
	if (why) {
		snprintf(g_loop_why, sizeof(g_loop_why), "%s", why);
		return;
	}
	snprintf(g_loop_file, sizeof(g_loop_file), "%s/loop-backing", g_dir);
	snprintf(out, sizeof(out), "%s/losetup.out", g_dir);
	fd = open(g_loop_file, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, LOOP_SIZE)) {
		snprintf(g_loop_why, sizeof(g_loop_why), "backing file: %s",
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	close(fd);
	if (run_cmd("losetup --direct-io=on -f --show '%s' >'%s' 2>&1",
		    g_loop_file, out)) {
		snprintf(g_loop_why, sizeof(g_loop_why), "losetup failed");
		unlink(out);
		return;
	}
	f = fopen(out, "r");
	if (f && fgets(g_loop, sizeof(g_loop), f))
		g_loop[strcspn(g_loop, "\n")] = '\0';
	if (f)
		fclose(f);
	unlink(out);
	if (strncmp(g_loop, "/dev/", 5)) {
		snprintf(g_loop_why, sizeof(g_loop_why),
			 "losetup printed \"%s\"", g_loop);
		g_loop[0] = '\0';
	}
}

static inline void loop_teardown(void)
{
	loop_detach();
	if (g_loop_file[0])
		unlink(g_loop_file);
}

static inline int rm_entry(const char *path, const struct stat *st,
			   int flag, struct FTW *ftw)
{
	remove(path);
	return 0;
}

/* At exit of the main process only (forked test children exit too). */
static inline void cleanup(void)
{
	if (getpid() != g_main_pid)
		return;
	loop_detach();
	if (g_dir[0])
		nftw(g_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	g_dir[0] = '\0';
}

/* A temp directory whose file system takes O_DIRECT, or a warning. */
static inline int make_dir(void)
{
	const char *base = getenv("TMPDIR");
	char probe[PATH_MAX];
	int fd;

	if (!base || !*base)
		base = "/var/tmp";
	snprintf(g_dir, sizeof(g_dir), "%s/mqfs-%s.XXXXXX", base, g_prog);
	if (!mkdtemp(g_dir)) {
		fprintf(stderr, "%s: mkdtemp %s: %s\n", g_prog, g_dir,
			strerror(errno));
		g_dir[0] = '\0';
		return -1;
	}
	snprintf(probe, sizeof(probe), "%s/odirect", g_dir);
	fd = open(probe, O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0600);
	if (fd < 0)
		fprintf(stderr, "%s: %s does not take O_DIRECT (%s): "
			"set TMPDIR to a disk file system\n", g_prog, base,
			strerror(errno));
	else
		close(fd);
	unlink(probe);
	return 0;
}

/* ---- the program -------------------------------------------------------- */

/* A TCase of @s: @t run @loops times, @timeout seconds each. */
static inline TCase *ur_tcase(Suite *s, const char *name, const TTest *t,
			      int loops, int timeout)
{
	TCase *c = t_tcase(s, name, timeout);

	tcase_add_loop_test(c, t, 0, loops);
	return c;
}

static inline int ur_main(Suite *(*suite_fn)(void))
{
	int ret, failed;

	ur_hooks_init();
	ret = mq_uring_probe();
	if (ret) {
		fprintf(stderr, "%s: io_uring unusable here (%s): skipped\n",
			g_prog, strerror(-ret));
		return 77;
	}
	g_main_pid = getpid();
	if (make_dir())
		return 99;
	atexit(cleanup);
	failed = t_run(suite_fn()) != EXIT_SUCCESS;
	cleanup();
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#define UR_MAIN(suite_fn)			\
	int main(void)				\
	{					\
		return ur_main(suite_fn);	\
	}

#endif /* MQFS_TESTS_T_URING_H */
