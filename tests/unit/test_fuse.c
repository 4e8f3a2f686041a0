// SPDX-License-Identifier: MIT
/*
 * test_fuse.c - the FUSE engine's parts that need no kernel (src/fuse):
 * the decoder on crafted and on damaged messages, whole and split over a
 * ring entry's buffers (every opcode's
 * layout, short headers, lengths that disagree, names without their
 * NUL, data shorter than announced, extensions, opcodes not served; and
 * a few hundred thousand random damages of valid messages, each either
 * refused or decoded with every pointer inside the message); the slot
 * pool (ABA-safe stack, a getter sleeping until a put); the replies'
 * framing on a pipe, errors outside the kernel's range, and a
 * cancellable request answered once only; directory records; the
 * writeback limit that follows the free space; the callers' I/O
 * priorities (a fake getter and clock for the cache, then the real
 * system call); the command line (every elevator tunable an option,
 * ranges from the elevator's table, bad values refused).
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "fuse_i.h"
#include "mqfs/elevator.h"
#include "t_fs.h"
#include "t_main.h"

/* ---- building messages ---------------------------------------------------- */

struct msg {
	_Alignas(8) char buf[8192];
	size_t len;
};

static void msg_start(struct msg *m, uint32_t opcode, uint64_t nodeid)
{
	struct fuse_in_header h = { .opcode = opcode, .unique = 42,
				    .nodeid = nodeid, .uid = 1, .gid = 2 };

	memset(m, 0, sizeof(*m));
	memcpy(m->buf, &h, sizeof(h));
	m->len = sizeof(h);
}

static void msg_add(struct msg *m, const void *p, size_t n)
{
	ck_assert_uint_le(m->len + n, sizeof(m->buf));
	memcpy(m->buf + m->len, p, n);
	m->len += n;
}

static void msg_str(struct msg *m, const char *s)
{
	msg_add(m, s, strlen(s) + 1);
}

/* Seal: the header's length is what was built (or @len if nonzero). */
static size_t msg_end(struct msg *m)
{
	((struct fuse_in_header *)m->buf)->len = (uint32_t)m->len;
	return m->len;
}

static int dec(struct msg *m, struct mqfs_fuse_msg *out)
{
	return mqfs_fuse_decode(m->buf, m->len, out);
}

/* ---- the decoder ------------------------------------------------------------ */

/*
 * A request as the kernel puts it on a ring entry: the header in in_out,
 * the first argument (@arg, @arg_len) in op_in, the rest in @payload.
 */
struct ring_msg {
	struct mqfs_fuse_uring_req_header hdr;
	_Alignas(8) char payload[8192];
};

static void ring_msg(struct ring_msg *rm, uint32_t opcode, const void *arg,
		     size_t arg_len, const void *rest, size_t rest_len)
{
	struct fuse_in_header h = { .opcode = opcode, .unique = 77,
				    .nodeid = 3 };

	memset(rm, 0, sizeof(*rm));
	h.len = (uint32_t)(sizeof(h) + arg_len + rest_len);
	memcpy(rm->hdr.in_out, &h, sizeof(h));
	if (arg_len)
		memcpy(rm->hdr.op_in, arg, arg_len);
	if (rest_len)
		memcpy(rm->payload, rest, rest_len);
	rm->hdr.ring_ent_in_out.payload_sz = (uint32_t)rest_len;
	rm->hdr.ring_ent_in_out.commit_id = 77;
}

static int dec_ring(struct ring_msg *rm, struct mqfs_fuse_msg *out)
{
	return mqfs_fuse_decode_ring(&rm->hdr, rm->payload,
				     sizeof(rm->payload), out);
}

/* Does [@p, @p + @n) lie in @rm's payload or its op_in? */
static bool ring_inside(const struct ring_msg *rm, const void *p, size_t n)
{
	const char *c = p;

	return (c >= rm->payload && c + n <= rm->payload + sizeof(rm->payload)) ||
	       (c >= rm->hdr.op_in && c + n <= rm->hdr.op_in +
						sizeof(rm->hdr.op_in));
}

/* Random bytes of the header fields and the names: refused, or every
 * pointer of the result inside the entry's buffers. */
static void ring_damage(struct ring_msg *rm)
{
	static const size_t spots[] = { 0, 4, 32, 128, 144, 272, 288 };
	struct fuse_write_in w = { .size = 64 };
	struct mqfs_fuse_msg m;
	char data[64] = "old";
	unsigned seed = 1;

	for (unsigned i = 0; i < 50000; i++) {
		uint32_t op = i % 3 ? FUSE_WRITE : FUSE_RENAME2;
		size_t at = spots[rand_r(&seed) % MQ_ARRAY_SIZE(spots)] +
			    (size_t)(rand_r(&seed) % 16);

		ring_msg(rm, op, &w, sizeof(w), data, sizeof(data));
		((char *)rm)[at] = (char)rand_r(&seed);
		if (dec_ring(rm, &m))
			continue;
		for (int k = 0; k < 2; k++)
			ck_assert(!m.name[k] || ring_inside(rm, m.name[k],
						strlen(m.name[k]) + 1));
		ck_assert(!m.data || ring_inside(rm, m.data, m.data_len));
	}
}

/*
 * The ring's split: the opcode's struct from op_in, names and data from
 * the payload's start (a WRITE's data on the payload's first byte: page
 * aligned in a slot); lengths that disagree are refused.
 */
START_TEST(test_decode_ring)
{
	struct fuse_write_in w = { .fh = 7, .offset = 4096, .size = 100 };
	struct fuse_rename2_in rn = { .newdir = 9 };
	uint32_t sx[4] = { 5, 0, 0, 0 };	/* fuse_setxattr_in, 7.33 */
	struct fuse_read_in rd = { .size = 4096 };
	char data[100], names[] = "old\0new", xattr[] = "user.x\0value";
	struct mqfs_fuse_msg m;
	static struct ring_msg rm;

	ring_msg(&rm, FUSE_LOOKUP, NULL, 0, "name", 5);
	ck_assert_int_eq(dec_ring(&rm, &m), 0);
	ck_assert_ptr_null(m.arg);
	ck_assert_ptr_eq(m.name[0], rm.payload);
	ck_assert_uint_eq(m.h->unique, 77);

	memset(data, 'd', sizeof(data));
	ring_msg(&rm, FUSE_WRITE, &w, sizeof(w), data, sizeof(data));
	ck_assert_int_eq(dec_ring(&rm, &m), 0);
	ck_assert_ptr_eq(m.arg, rm.hdr.op_in);
	ck_assert_ptr_eq(m.data, rm.payload);
	ck_assert_uint_eq(m.data_len, 100);

	ring_msg(&rm, FUSE_RENAME2, &rn, sizeof(rn), names, sizeof(names));
	ck_assert_int_eq(dec_ring(&rm, &m), 0);
	ck_assert_str_eq(m.name[0], "old");
	ck_assert_str_eq(m.name[1], "new");

	ring_msg(&rm, FUSE_SETXATTR, sx, sizeof(sx), xattr, sizeof(xattr) - 1);
	ck_assert_int_eq(dec_ring(&rm, &m), 0);
	ck_assert_str_eq(m.name[0], "user.x");
	ck_assert(m.data_len == 5 && !memcmp(m.data, "value", 5));

	ring_msg(&rm, FUSE_READ, &rd, sizeof(rd), NULL, 0);
	ck_assert_int_eq(dec_ring(&rm, &m), 0);
	ck_assert_uint_eq(m.arg_len, sizeof(rd));

	/* Write data shorter than announced; a name without its NUL. */
	w.size = 101;
	ring_msg(&rm, FUSE_WRITE, &w, sizeof(w), data, sizeof(data));
	ck_assert_int_eq(dec_ring(&rm, &m), -EIO);
	ring_msg(&rm, FUSE_LOOKUP, NULL, 0, "name", 4);
	ck_assert_int_eq(dec_ring(&rm, &m), -EIO);
	/* A first argument shorter than the opcode's struct. */
	ring_msg(&rm, FUSE_READ, &rd, sizeof(rd) - 1, NULL, 0);
	ck_assert_int_eq(dec_ring(&rm, &m), -EIO);
	/* payload_sz past the buffer, or more than the header counts. */
	ring_msg(&rm, FUSE_LOOKUP, NULL, 0, "name", 5);
	rm.hdr.ring_ent_in_out.payload_sz = sizeof(rm.payload) + 1;
	ck_assert_int_eq(dec_ring(&rm, &m), -EIO);
	ring_msg(&rm, FUSE_LOOKUP, NULL, 0, "name", 5);
	((struct fuse_in_header *)rm.hdr.in_out)->len = 40 + 4;
	ck_assert_int_eq(dec_ring(&rm, &m), -EIO);
	/* A header that claims more than op_in holds. */
	ring_msg(&rm, FUSE_READ, &rd, sizeof(rd), NULL, 0);
	((struct fuse_in_header *)rm.hdr.in_out)->len = 40 + 129;
	ck_assert_int_eq(dec_ring(&rm, &m), -EIO);
	/* Extensions longer than the payload; an opcode not served. */
	ring_msg(&rm, FUSE_LOOKUP, NULL, 0, "name", 5);
	((struct fuse_in_header *)rm.hdr.in_out)->total_extlen = 1;
	ck_assert_int_eq(dec_ring(&rm, &m), -EIO);
	ring_msg(&rm, FUSE_IOCTL, &rd, sizeof(rd), NULL, 0);
	ck_assert_int_eq(dec_ring(&rm, &m), -ENOSYS);
	ring_damage(&rm);
}
END_TEST

START_TEST(test_decode_layouts)
{
	struct fuse_write_in w = { .fh = 7, .offset = 4096, .size = 100 };
	struct fuse_batch_forget_in bf = { .count = 3 };
	struct fuse_forget_one one[3] = { { 5, 1 }, { 6, 2 }, { 7, 3 } };
	struct fuse_rename2_in rn = { .newdir = 9, .flags = 1 };
	/* setxattr (FUSE_SETXATTR_EXT): size, flags, setxattr_flags, pad */
	uint32_t sx[4] = { 5, 0, 0, 0 };
	uint32_t init[4] = { 7, 31, 65536, 0 };
	struct mqfs_fuse_msg m;
	struct msg b;
	char data[100];

	msg_start(&b, FUSE_LOOKUP, 1);
	msg_str(&b, "name");
	msg_end(&b);
	ck_assert_int_eq(dec(&b, &m), 0);
	ck_assert_ptr_null(m.arg);
	ck_assert_str_eq(m.name[0], "name");
	ck_assert_uint_eq(m.h->nodeid, 1);

	memset(data, 'd', sizeof(data));
	msg_start(&b, FUSE_WRITE, 3);
	msg_add(&b, &w, sizeof(w));
	msg_add(&b, data, sizeof(data));
	msg_end(&b);
	ck_assert_int_eq(dec(&b, &m), 0);
	ck_assert_ptr_eq(m.data, b.buf + MQFS_FUSE_WRITE_HDR);
	ck_assert_uint_eq(m.data_len, 100);

	msg_start(&b, FUSE_SETXATTR, 3);
	msg_add(&b, sx, sizeof(sx));
	msg_str(&b, "user.x");
	msg_add(&b, "value", 5);
	msg_end(&b);
	ck_assert_int_eq(dec(&b, &m), 0);
	ck_assert_str_eq(m.name[0], "user.x");
	ck_assert_uint_eq(m.data_len, 5);
	ck_assert(!memcmp(m.data, "value", 5));

	msg_start(&b, FUSE_BATCH_FORGET, 0);
	msg_add(&b, &bf, sizeof(bf));
	msg_add(&b, one, sizeof(one));
	msg_end(&b);
	ck_assert_int_eq(dec(&b, &m), 0);
	ck_assert_uint_eq(m.data_len, sizeof(one));

	msg_start(&b, FUSE_RENAME2, 3);
	msg_add(&b, &rn, sizeof(rn));
	msg_str(&b, "old");
	msg_str(&b, "new");
	msg_end(&b);
	ck_assert_int_eq(dec(&b, &m), 0);
	ck_assert_str_eq(m.name[0], "old");
	ck_assert_str_eq(m.name[1], "new");

	/* An INIT from a kernel before 7.36: four words. */
	msg_start(&b, FUSE_INIT, 0);
	msg_add(&b, init, sizeof(init));
	msg_end(&b);
	ck_assert_int_eq(dec(&b, &m), 0);
	ck_assert_uint_eq(m.arg_len, sizeof(init));

	msg_start(&b, FUSE_STATFS, 1);
	msg_end(&b);
	ck_assert_int_eq(dec(&b, &m), 0);
}
END_TEST

START_TEST(test_decode_refuses)
{
	struct fuse_write_in w = { .size = 100 };
	struct fuse_batch_forget_in bf = { .count = 1000 };
	struct fuse_read_in rd = { .size = 4096 };
	struct mqfs_fuse_msg m;
	struct msg b;

	msg_start(&b, FUSE_LOOKUP, 1);
	msg_str(&b, "x");
	msg_end(&b);
	ck_assert_int_eq(mqfs_fuse_decode(b.buf, 39, &m), -EPROTO);
	ck_assert_int_eq(mqfs_fuse_decode(b.buf, 0, &m), -EPROTO);
	/* The header says more (or less) than was read. */
	ck_assert_int_eq(mqfs_fuse_decode(b.buf, b.len - 1, &m), -EIO);
	ck_assert_ptr_eq(m.h, (void *)b.buf);

	msg_start(&b, FUSE_LOOKUP, 1);
	msg_add(&b, "noterm", 6);
	msg_end(&b);
	ck_assert_int_eq(dec(&b, &m), -EIO);

	msg_start(&b, FUSE_SYMLINK, 1);
	msg_str(&b, "name");
	msg_add(&b, "tgt", 3);			/* the target's NUL missing */
	msg_end(&b);
	ck_assert_int_eq(dec(&b, &m), -EIO);

	msg_start(&b, FUSE_WRITE, 3);
	msg_add(&b, &w, sizeof(w));
	msg_add(&b, "short", 5);
	msg_end(&b);
	ck_assert_int_eq(dec(&b, &m), -EIO);

	msg_start(&b, FUSE_READ, 3);
	msg_add(&b, &rd, sizeof(rd) - 1);
	msg_end(&b);
	ck_assert_int_eq(dec(&b, &m), -EIO);

	msg_start(&b, FUSE_BATCH_FORGET, 0);
	msg_add(&b, &bf, sizeof(bf));
	msg_end(&b);
	ck_assert_int_eq(dec(&b, &m), -EIO);

	/* Extensions longer than the message. */
	msg_start(&b, FUSE_GETATTR, 1);
	msg_add(&b, &rd, 16);
	msg_end(&b);
	((struct fuse_in_header *)b.buf)->total_extlen = 3;
	ck_assert_int_eq(dec(&b, &m), -EIO);

	msg_start(&b, FUSE_GETLK, 1);
	msg_end(&b);
	ck_assert_int_eq(dec(&b, &m), -ENOSYS);
	msg_start(&b, 4000, 1);
	msg_end(&b);
	ck_assert_int_eq(dec(&b, &m), -ENOSYS);
}
END_TEST

/* Every pointer a decoded message holds lies inside it. */
static void check_inside(const struct msg *b, size_t n,
			 const struct mqfs_fuse_msg *m)
{
	const char *lo = b->buf, *hi = b->buf + n;

	for (int i = 0; i < 2; i++)
		if (m->name[i]) {
			ck_assert(m->name[i] >= lo && m->name[i] < hi);
			ck_assert_ptr_nonnull(memchr(m->name[i], 0,
						     (size_t)(hi - m->name[i])));
		}
	if (m->data)
		ck_assert(m->data >= (void *)lo &&
			  (const char *)m->data + m->data_len <= hi);
	if (m->arg)
		ck_assert(m->arg >= (void *)lo &&
			  (const char *)m->arg + m->arg_len <= hi);
}

/* Random damage to valid messages: refused, or decoded inside bounds. */
START_TEST(test_decode_damage)
{
	static const uint32_t ops[] = { FUSE_LOOKUP, FUSE_WRITE, FUSE_SETXATTR,
					FUSE_RENAME2, FUSE_BATCH_FORGET,
					FUSE_CREATE };
	unsigned seed = 12345, decoded = 0, refused = 0;

	for (unsigned iter = 0; iter < 200000; iter++) {
		struct mqfs_fuse_msg m;
		struct msg b;
		size_t n;
		int ret;

		msg_start(&b, ops[iter % MQ_ARRAY_SIZE(ops)], 2);
		/* Names every 9 bytes; small sizes for WRITE and SETXATTR. */
		for (unsigned k = 0; k < 64; k++)
			b.buf[40 + k] = k % 9 == 8 ? 0 : (char)('a' + k % 26);
		memset(b.buf + 40, 0, 4);
		memset(b.buf + 40 + 17, 0, 3);
		b.len = 40 + 64;
		msg_end(&b);
		/* Damage: bytes after the header, then maybe the length. */
		for (int k = 0; k < 1 + rand_r(&seed) % 4; k++)
			b.buf[40 + rand_r(&seed) % 64] = (char)rand_r(&seed);
		n = b.len;
		if (rand_r(&seed) % 3 == 0)
			n = 40 + rand_r(&seed) % 64;
		if (rand_r(&seed) % 5 == 0)
			((struct fuse_in_header *)b.buf)->len = (uint32_t)n;
		ret = mqfs_fuse_decode(b.buf, n, &m);
		if (ret) {
			ck_assert(ret == -EIO || ret == -ENOSYS);
			refused++;
			continue;
		}
		check_inside(&b, n, &m);
		decoded++;
	}
	ck_assert_uint_gt(decoded, 1000);
	ck_assert_uint_gt(refused, 1000);
}
END_TEST

/* ---- the pool ------------------------------------------------------------- */

struct getter {
	struct mqfs_pool *p;
	struct mqfs_req *got;
};

static void *getter_main(void *arg)
{
	struct getter *g = arg;

	g->got = mqfs_pool_get(g->p);
	return NULL;
}

START_TEST(test_pool)
{
	struct mqfs_req *r[4];
	struct mqfs_pool p;
	struct getter g;
	pthread_t t;

	ck_assert_int_eq(mqfs_pool_create(&p, 0), -EINVAL);
	ck_assert_int_eq(mqfs_pool_create(&p, 4), 0);
	for (int i = 0; i < 4; i++) {
		r[i] = mqfs_pool_get(&p);
		ck_assert_ptr_eq(r[i]->payload, r[i]->mem + MQFS_SLOT_HDR);
		ck_assert_uint_eq((uintptr_t)r[i]->payload % 4096, 0);
		for (int k = 0; k < i; k++)
			ck_assert_ptr_ne(r[i], r[k]);
	}
	g = (struct getter){ .p = &p };
	ck_assert_int_eq(pthread_create(&t, NULL, getter_main, &g), 0);
	while (!atomic_load(&p.waiters))
		usleep(1000);
	ck_assert_ptr_null(g.got);
	mqfs_pool_put(&p, r[2]);
	pthread_join(t, NULL);
	ck_assert_ptr_eq(g.got, r[2]);
	ck_assert_uint_eq(atomic_load(&p.waits), 1);
	for (int i = 0; i < 4; i++)
		mqfs_pool_put(&p, i == 2 ? g.got : r[i]);
	mqfs_pool_destroy(&p);
}
END_TEST

/* ---- replies -------------------------------------------------------------- */

struct rig {
	struct mqfs_daemon d;
	struct mqfs_req *r;
	struct msg in;
	int pipe[2];
};

static void rig_open(struct rig *g, uint32_t opcode)
{
	struct mqfs_config cfg = { .cache = MQFS_CACHE_NONE };

	mqfs_daemon_init(&g->d, &cfg);
	ck_assert_int_eq(mqfs_engine_init(&g->d.eng, 1, 1, false), 0);
	ck_assert_int_eq(pipe2(g->pipe, O_NONBLOCK), 0);
	g->r = mqfs_pool_get(&g->d.eng.pool);
	g->r->d = &g->d;
	g->r->fd = g->pipe[1];
	msg_start(&g->in, opcode, 1);
	g->in.len += 64;	/* zeroes: any opcode's fixed argument */
	msg_end(&g->in);
	ck_assert_int_eq(dec(&g->in, &g->r->m), 0);
	atomic_store(&g->r->refs, 1);
}

static void rig_close(struct rig *g)
{
	mqfs_pool_put(&g->d.eng.pool, g->r);
	close(g->pipe[0]);
	close(g->pipe[1]);
	mqfs_daemon_destroy(&g->d);
}

/* The next reply on the pipe: its header, its body in @body. */
static ssize_t rig_read(struct rig *g, struct fuse_out_header *oh, void *body,
			size_t cap)
{
	char buf[4096];
	ssize_t n = read(g->pipe[0], buf, sizeof(buf));

	if (n < 0)
		return -errno;
	ck_assert_int_ge(n, (ssize_t)sizeof(*oh));
	memcpy(oh, buf, sizeof(*oh));
	ck_assert_uint_eq(oh->len, (size_t)n);
	memcpy(body, buf + sizeof(*oh), MQ_MIN(cap, (size_t)n - sizeof(*oh)));
	return n - (ssize_t)sizeof(*oh);
}

START_TEST(test_replies)
{
	struct fuse_out_header oh;
	struct rig g;
	char body[64];

	rig_open(&g, FUSE_GETATTR);
	ck_assert_int_eq(mqfs_reply_err(g.r, -ENOENT), 0);
	ck_assert_int_eq(rig_read(&g, &oh, body, sizeof(body)), 0);
	ck_assert_int_eq(oh.error, -ENOENT);
	ck_assert_uint_eq(oh.unique, 42);
	ck_assert_int_eq(mqfs_reply(g.r, "hello", 5), 0);
	ck_assert_int_eq(rig_read(&g, &oh, body, sizeof(body)), 5);
	ck_assert_int_eq(oh.error, 0);
	ck_assert(!memcmp(body, "hello", 5));
	/* Outside (-ERESTARTSYS, 0] the kernel would refuse it: EIO. */
	ck_assert_int_eq(mqfs_reply_err(g.r, -1000), 0);
	ck_assert_int_eq(rig_read(&g, &oh, body, sizeof(body)), 0);
	ck_assert_int_eq(oh.error, -EIO);
	ck_assert_int_eq(mqfs_reply_err(g.r, 5), 0);
	ck_assert_int_eq(rig_read(&g, &oh, body, sizeof(body)), 0);
	ck_assert_int_eq(oh.error, -EIO);
	rig_close(&g);
}
END_TEST

/*
 * A cancellable request: whoever takes its unique answers (here the
 * interrupt's side takes it first); the completion's reply then writes
 * nothing, and its slot comes back once both references are gone.
 */
START_TEST(test_cancellable_once)
{
	struct fuse_out_header oh;
	uint64_t unique = 42;
	struct rig g;
	char body[8];

	rig_open(&g, FUSE_READ);
	mqfs_req_async(g.r, true);
	ck_assert_uint_eq(atomic_load(&g.r->live), 42);
	ck_assert(atomic_compare_exchange_strong(&g.r->live, &unique, 0));
	ck_assert_int_eq(mqfs_reply(g.r, "late", 4), -ENOENT);
	ck_assert_int_eq(rig_read(&g, &oh, body, sizeof(body)), -EAGAIN);
	ck_assert_uint_eq(mq_inflight_count(&g.d.eng.inflight), 1);
	atomic_fetch_add(&g.r->refs, 1);	/* rig_close puts it */
	mqfs_req_complete(g.r);			/* the completion's */
	ck_assert_uint_eq(mq_inflight_count(&g.d.eng.inflight), 0);
	atomic_fetch_sub(&g.r->refs, 1);	/* the handler's */
	rig_close(&g);
}
END_TEST

/* ---- directory records ----------------------------------------------------- */

static void count_forget(void *arg, uint64_t ino)
{
	uint64_t *sum = arg;

	*sum += ino;
}

START_TEST(test_dirbuf)
{
	char buf[400];
	struct mqfs_dirbuf b = { .buf = buf, .size = sizeof(buf) };
	struct mqfs_entry e = { .ino = 10, .generation = 1 };
	const struct fuse_dirent *de;
	uint64_t sum = 0;
	unsigned n = 0;

	while (mqfs_dirbuf_add(&b, "entry", 5, DT_REG, n + 1, NULL))
		n++;
	ck_assert_uint_eq(n, sizeof(buf) / FUSE_DIRENT_ALIGN(FUSE_NAME_OFFSET + 5));
	de = (const struct fuse_dirent *)buf;
	ck_assert_uint_eq(de->namelen, 5);
	ck_assert_uint_eq(de->off, 1);
	ck_assert(!memcmp(de->name, "entry", 5));

	b = (struct mqfs_dirbuf){ .buf = buf, .size = sizeof(buf), .plus = true,
				  .timeout = 60 };
	ck_assert(mqfs_dirbuf_add(&b, ".", 1, DT_DIR, 1, &(struct mqfs_entry){ 0 }));
	ck_assert(mqfs_dirbuf_add(&b, "f", 10, DT_REG, 2, &e));
	ck_assert(!mqfs_dirbuf_add(&b, "g", 11, DT_REG, 3, &e));	/* full */
	mqfs_dirbuf_forget(&b, count_forget, &sum);
	ck_assert_uint_eq(sum, 10);	/* "." handed out no lookup */
}
END_TEST

/*
 * The dirty limit never exceeds the free space (the kernel's dirty pages
 * fit), stays at least MQFS_BDI_MIN_CAP, changes in few steps, and goes
 * back to the roomy limits once they fit.
 */
START_TEST(test_bdi_cap)
{
	const uint64_t mib = 1ull << 20, roomy = 5ull << 30;
	uint64_t last = 0, steps = 0;

	ck_assert_uint_eq(mqfs_bdi_cap(roomy, roomy), 0);
	ck_assert_uint_eq(mqfs_bdi_cap(roomy, 1ull << 40), 0);
	ck_assert_uint_eq(mqfs_bdi_cap(roomy, 0), MQFS_BDI_MIN_CAP);
	ck_assert_uint_eq(mqfs_bdi_cap(roomy, mib + 5), MQFS_BDI_MIN_CAP);
	ck_assert_uint_eq(mqfs_bdi_cap(roomy, 3 * mib), 3 * mib);
	ck_assert_uint_eq(mqfs_bdi_cap(roomy, 9 * mib), 8 * mib);
	ck_assert_uint_eq(mqfs_bdi_cap(roomy, 1600 * mib), 1536 * mib);
	for (uint64_t f = roomy - 1; f >= 4096; f -= f / 997 + 4096) {
		uint64_t cap = mqfs_bdi_cap(roomy, f);

		ck_assert_uint_ne(cap, 0);
		ck_assert(cap <= f || cap == MQFS_BDI_MIN_CAP);
		ck_assert(cap >= MQFS_BDI_MIN_CAP);
		/* Within a quarter below it (whole MiB below 8 MiB). */
		if (f >= 8 * mib)
			ck_assert(cap > f - f / 4);
		ck_assert(!last || cap <= last);	/* never up as it fills */
		steps += cap != last;
		last = cap;
	}
	/* Four steps per doubling from 5 GiB down to 1 MiB: about 50. */
	ck_assert_uint_le(steps, 60);
}
END_TEST

/*
 * A READ whose caller was killed can be served after the RELEASE that
 * followed it (another worker took it): the control file's handle is
 * then stale and the read -EBADF, not a read of freed memory (ASan
 * found that in dontcache.sh).  A new open never gets the old handle.
 */
START_TEST(test_ctl_stale_handle)
{
	struct mqfs_daemon d;
	struct mqfs_entry dir, e;
	uint64_t fh, fh2;
	struct t_fs t;
	char buf[4096];

	memset(&d, 0, sizeof(d));
	t_fs_make(&t, 16 * T_FS_MIB);
	ck_assert_int_eq(mqfs_ctl_init(&d.ctl, t.fs, &d), 0);
	ck_assert_int_eq(mqfs_ctl_lookup(&d.ctl, FUSE_ROOT_ID, ".mqfs", &dir),
			 0);
	ck_assert_int_eq(mqfs_ctl_lookup(&d.ctl, dir.ino, "fs", &dir), 0);
	ck_assert_int_eq(mqfs_ctl_lookup(&d.ctl, dir.ino, "dontcache", &e), 0);
	ck_assert_int_eq(mqfs_ctl_open(&d.ctl, e.ino, O_RDONLY, 0, &fh), 0);
	ck_assert_int_gt(mqfs_ctl_read(&d.ctl, fh, 0, sizeof(buf), buf), 0);
	mqfs_ctl_release(&d.ctl, fh);
	ck_assert_int_eq(mqfs_ctl_read(&d.ctl, fh, 0, sizeof(buf), buf),
			 -EBADF);
	ck_assert_int_eq(mqfs_ctl_write(&d.ctl, fh, 0, "1\n", 2), -EBADF);
	mqfs_ctl_release(&d.ctl, fh);		/* twice: nothing */
	ck_assert_int_eq(mqfs_ctl_open(&d.ctl, e.ino, O_RDONLY, 0, &fh2), 0);
	ck_assert_uint_ne(fh2, fh);		/* same slot, new generation */
	ck_assert_int_eq(mqfs_ctl_read(&d.ctl, fh, 0, sizeof(buf), buf),
			 -EBADF);
	ck_assert_int_gt(mqfs_ctl_read(&d.ctl, fh2, 0, sizeof(buf), buf), 0);
	mqfs_ctl_destroy(&d.ctl);		/* frees what is still open */
	t_fs_destroy(&t);
}
END_TEST

/* ---- the command line (opts.c) --------------------------------------- */

/* mqfs_config_parse of "mqfs img /tmp -o @opts" (NULL: no -o). */
static int t_parse(const char *opts, struct mqfs_config *cfg)
{
	char *argv[] = { "mqfs", "img", "/tmp", "-o", (char *)opts, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(opts ? 5 : 3, argv);
	int ret = mqfs_config_parse(&args, cfg);

	fuse_opt_free_args(&args);
	return ret;
}

/* Each of an option's @n values parses to its index, in the enum at @off. */
static void t_parse_each(const char *key, const char *const *names,
			 unsigned n, size_t off)
{
	struct mqfs_config cfg;

	for (unsigned i = 0; i < n; i++) {
		char opt[64];
		int got;

		snprintf(opt, sizeof(opt), "%s=%s", key, names[i]);
		ck_assert_int_eq(t_parse(opt, &cfg), 0);
		memcpy(&got, (const char *)&cfg + off, sizeof(got));
		ck_assert_int_eq(got, (int)i);
		mqfs_config_free(&cfg);
	}
}

/* The index of mq-deadline's tunable @name (its attribute table). */
static int t_tunable(const char *name)
{
	const struct mq_elevator_type *t = mq_elv_find("mq-deadline");

	for (unsigned i = 0; i < t->nr_attrs; i++)
		if (!strcmp(t->attrs[i].name, name))
			return (int)i;
	ck_abort_msg("no tunable %s", name);
	return -1;
}

/*
 * Every mq-deadline tunable is a mount option, checked against the
 * elevator's own range before anything is opened; the last value given
 * wins; other bad values and missing arguments are refused.
 */
START_TEST(test_options)
{
	static const char *const bad[] = {
		"read_expire=soon", "read_expire=-1", "front_merges=2",
		"idle_depth=", "fifo_batch", "sched=none,read_expire=10",
		"cache=fast", "queue_depth=0", "queue_depth=4097",
		"dontcache_dirty=1K", "errors=panic", "fuse_bufs=0",
		"transport=fast", "uring_depth=0", "uring_depth=257",
		"uring_reap=kernel", "uring_reap=", "uring_pin=both",
		"uring_pin=", "uring_doorbell=always", "uring_doorbell=",
		"uring_spill=-1", "uring_spill=257", "uring_spill=", "uring_spill",
	};
	struct mqfs_config cfg;

	unsetenv("MQFS_TRANSPORT");	/* the suite's choice for the mounts */
	ck_assert_int_eq(t_parse("read_expire=250,idle_depth=0,cache=none,"
				 "queue_depth=64,read_expire=300", &cfg), 0);
	ck_assert_str_eq(cfg.device, "img");
	ck_assert_str_eq(cfg.tunables[t_tunable("read_expire")], "300");
	ck_assert_str_eq(cfg.tunables[t_tunable("idle_depth")], "0");
	ck_assert_ptr_null(cfg.tunables[t_tunable("fifo_batch")]);
	ck_assert_int_eq(cfg.cache, MQFS_CACHE_NONE);
	ck_assert_uint_eq(cfg.queue.queue_depth, 64);
	ck_assert_str_eq(cfg.queue.elevator, "mq-deadline");
	mqfs_config_free(&cfg);
	ck_assert_int_eq(t_parse(NULL, &cfg), 0);
	ck_assert_int_eq(cfg.cache, MQFS_CACHE_KERNEL);
	ck_assert_int_eq(cfg.transport, MQFS_TRANSPORT_AUTO);
	ck_assert(!cfg.uring_depth && !cfg.uring_reaper);
	ck_assert_uint_eq(cfg.uring_spill, 0);
	ck_assert_int_eq(cfg.uring_pin, MQFS_RING_PIN_AUTO);
	ck_assert_int_eq(cfg.uring_doorbell, MQFS_RING_DOORBELL_AUTO);
	ck_assert(!cfg.mount.noacl);		/* ACLs on by default */
	mqfs_config_free(&cfg);
	ck_assert_int_eq(t_parse("noacl", &cfg), 0);
	ck_assert(cfg.mount.noacl);
	mqfs_config_free(&cfg);
	ck_assert_int_eq(t_parse("noacl,acl", &cfg), 0);	/* the last wins */
	ck_assert(!cfg.mount.noacl);
	mqfs_config_free(&cfg);
	t_parse_each("uring_doorbell", mqfs_ring_doorbell_names,
		     MQFS_RING_DOORBELL_NR,
		     offsetof(struct mqfs_config, uring_doorbell));
	ck_assert_int_eq(t_parse("transport=uring,uring_depth=16,uring_pin,"
				 "uring_reap=reaper,uring_spill=5", &cfg), 0);
	ck_assert_int_eq(cfg.transport, MQFS_TRANSPORT_URING);
	ck_assert(cfg.uring_depth == 16 && cfg.uring_reaper);
	ck_assert_uint_eq(cfg.uring_spill, 5);
	ck_assert_int_eq(cfg.uring_pin, MQFS_RING_PIN_OWN);
	mqfs_config_free(&cfg);
	t_parse_each("uring_pin", mqfs_ring_pin_names, MQFS_RING_PIN_NR,
		     offsetof(struct mqfs_config, uring_pin));
	ck_assert_int_eq(t_parse("uring_reap=ring", &cfg), 0);
	ck_assert(!cfg.uring_reaper);
	mqfs_config_free(&cfg);
	/* The environment's default, which the option overrides. */
	setenv("MQFS_TRANSPORT", "dev", 1);
	ck_assert_int_eq(t_parse(NULL, &cfg), 0);
	ck_assert_int_eq(cfg.transport, MQFS_TRANSPORT_DEV);
	mqfs_config_free(&cfg);
	ck_assert_int_eq(t_parse("transport=auto", &cfg), 0);
	ck_assert_int_eq(cfg.transport, MQFS_TRANSPORT_AUTO);
	mqfs_config_free(&cfg);
	setenv("MQFS_TRANSPORT", "bogus", 1);
	ck_assert_int_eq(t_parse(NULL, &cfg), -EINVAL);
	unsetenv("MQFS_TRANSPORT");
	for (size_t i = 0; i < MQ_ARRAY_SIZE(bad); i++)
		ck_assert_msg(t_parse(bad[i], &cfg) == -EINVAL, "took %s",
			      bad[i]);
}
END_TEST

/* ---- where the ring threads run --------------------------------------- */

static void t_place_feed(struct mqfs_ring_place *p, unsigned held,
			 unsigned batches, unsigned *moves)
{
	for (unsigned i = 0; i < batches; i++)
		*moves += mqfs_ring_place_sample(p, held);
}

/*
 * auto starts on the callers' CPU, goes off it when a window of batches
 * averages two requests held or more, back at 1.25 or fewer, and stays
 * put between (no moving back and forth); the fixed modes never move.
 * The sets stay within the thread's affinity at start.
 */
START_TEST(test_ring_place)
{
	struct mqfs_ring_place p;
	unsigned moves = 0;
	cpu_set_t set;

	mqfs_ring_place_init(&p, 1, MQFS_RING_PIN_AUTO);
	ck_assert_int_eq(p.now, MQFS_RING_PIN_OWN);
	t_place_feed(&p, 1, 64 * 16, &moves);	/* a waiting caller */
	ck_assert_uint_eq(moves, 0);
	t_place_feed(&p, 32, 63, &moves);	/* not a whole window yet */
	ck_assert_uint_eq(moves, 0);
	t_place_feed(&p, 32, 1, &moves);
	ck_assert(moves == 1 && p.now == MQFS_RING_PIN_OTHER);
	t_place_feed(&p, 1, 64 * 4, &moves);	/* 1.5 then 1: back */
	ck_assert(moves == 2 && p.now == MQFS_RING_PIN_OWN);
	for (unsigned i = 0; i < 64 * 8; i++)	/* 1.5 on average: between */
		moves += mqfs_ring_place_sample(&p, 1 + i % 2);
	ck_assert(moves == 2 && p.now == MQFS_RING_PIN_OWN);
	t_place_feed(&p, 2, 64, &moves);
	ck_assert(moves == 3 && p.now == MQFS_RING_PIN_OTHER);
	for (unsigned i = 0; i < 64 * 8; i++)
		moves += mqfs_ring_place_sample(&p, 1 + i % 2);
	ck_assert(moves == 3 && p.now == MQFS_RING_PIN_OTHER);

	mqfs_ring_place_init(&p, 0, MQFS_RING_PIN_OTHER);
	t_place_feed(&p, 1, 1000, &moves);
	ck_assert(moves == 3 && p.now == MQFS_RING_PIN_OTHER);

	/* The sets, on a made-up affinity of CPUs 0, 2 and 3. */
	CPU_ZERO(&p.base);
	CPU_SET(0, &p.base);
	CPU_SET(2, &p.base);
	CPU_SET(3, &p.base);
	p.qid = 2;
	mqfs_ring_place_mask(&p, MQFS_RING_PIN_OWN, &set);
	ck_assert(CPU_COUNT(&set) == 1 && CPU_ISSET(2, &set));
	mqfs_ring_place_mask(&p, MQFS_RING_PIN_OTHER, &set);
	ck_assert(CPU_COUNT(&set) == 2 && !CPU_ISSET(2, &set));
	mqfs_ring_place_mask(&p, MQFS_RING_PIN_OFF, &set);
	ck_assert(CPU_EQUAL(&set, &p.base));
	p.qid = 1;			/* outside the affinity: all of it */
	mqfs_ring_place_mask(&p, MQFS_RING_PIN_OWN, &set);
	ck_assert(CPU_EQUAL(&set, &p.base));
	CPU_ZERO(&p.base);		/* one CPU: no other to go to */
	CPU_SET(1, &p.base);
	mqfs_ring_place_mask(&p, MQFS_RING_PIN_OTHER, &set);
	ck_assert(CPU_EQUAL(&set, &p.base));
	/* ... so auto decides "other" but nothing moves, nor is away. */
	p.mode = MQFS_RING_PIN_AUTO;
	p.now = MQFS_RING_PIN_OWN;
	for (unsigned i = 0; i < 64; i++)
		ck_assert(!mqfs_ring_place_update(&p, 32));
	ck_assert(p.now == MQFS_RING_PIN_OTHER && !mqfs_ring_place_away(&p));
}
END_TEST

/*
 * The entries of a ring thread: uring_depth of its own queue first, then
 * uring_spill on each other queue (none with one CPU).
 */
START_TEST(test_ring_spill_entries)
{
	static const unsigned want[] = { 2, 2, 2, 0, 0, 1, 1, 3, 3 };

	ck_assert_uint_eq(mqfs_ring_entries(32, 16, 2), 48);
	ck_assert_uint_eq(mqfs_ring_entries(8, 2, 4), 14);
	ck_assert_uint_eq(mqfs_ring_entries(8, 5, 1), 8);
	ck_assert_uint_eq(mqfs_ring_entries(8, 0, 4), 8);
	/* Thread 2 of 4 queues, depth 3, spill 2: 2 2 2, 0 0, 1 1, 3 3. */
	for (unsigned i = 0; i < MQ_ARRAY_SIZE(want); i++)
		ck_assert_uint_eq(mqfs_ring_ent_qid(3, 2, 2, i), want[i]);
	for (unsigned i = 0; i < 4; i++)	/* thread 0: 1 1 2 2 ... */
		ck_assert_uint_eq(mqfs_ring_ent_qid(0, 2, 0, i), 1 + i / 2);
}
END_TEST

/*
 * A real move of this thread (forked per test: the affinity dies with
 * it), where it may run on two CPUs or more: off its first CPU, then back.
 */
/*
 * @n loop passes of a thread @busy_us busy, then @idle_us asleep, from
 * @now; how often the doorbell mode changed.
 */
static unsigned t_bell_feed(struct mqfs_ring_bell *b, uint64_t *now,
			    unsigned busy_us, unsigned idle_us, unsigned n)
{
	unsigned changes = 0;

	for (unsigned i = 0; i < n; i++) {
		*now += busy_us * 1000ull;
		mqfs_ring_bell_sleep(b, *now);
		*now += idle_us * 1000ull;
		changes += mqfs_ring_bell_woke(b, *now);
	}
	return changes;
}

/* auto: per request while the thread idles, per batch while it is busy. */
START_TEST(test_ring_bell)
{
	struct mqfs_ring_bell b;
	uint64_t now = 1000;

	mqfs_ring_bell_init(&b, MQFS_RING_DOORBELL_AUTO, now);
	ck_assert(!b.per_request);
	/* 30 % busy, but the first window (2 ms) is not over yet. */
	ck_assert_uint_eq(t_bell_feed(&b, &now, 30, 70, 19), 0);
	ck_assert(!b.per_request && b.windows == 0);
	ck_assert_uint_eq(t_bell_feed(&b, &now, 30, 70, 1), 1);
	ck_assert(b.per_request && b.windows == 1 && b.eager_windows == 1);
	/* 50 %: between the thresholds, it stays as it is, either way. */
	ck_assert_uint_eq(t_bell_feed(&b, &now, 50, 50, 200), 0);
	ck_assert(b.per_request);
	/* 60 % and more: back to once a batch, and 50 % keeps that. */
	ck_assert_uint_eq(t_bell_feed(&b, &now, 60, 40, 20), 1);
	ck_assert(!b.per_request);
	ck_assert_uint_eq(t_bell_feed(&b, &now, 50, 50, 200), 0);
	ck_assert(!b.per_request);
	ck_assert_uint_eq(b.eager_windows, 11);
	/* One long busy stretch counts whole: a 10 ms batch, then 1 ms. */
	ck_assert_uint_eq(t_bell_feed(&b, &now, 10000, 1000, 1), 0);
	ck_assert(!b.per_request);
	ck_assert_uint_eq(t_bell_feed(&b, &now, 100, 9900, 1), 1);
	ck_assert(b.per_request);
	/* The fixed modes never change, whatever the load. */
	mqfs_ring_bell_init(&b, MQFS_RING_DOORBELL_BATCH, now);
	ck_assert_uint_eq(t_bell_feed(&b, &now, 1, 99, 100), 0);
	ck_assert(!b.per_request && b.windows == 5 && b.eager_windows == 0);
	mqfs_ring_bell_init(&b, MQFS_RING_DOORBELL_REQUEST, now);
	ck_assert_uint_eq(t_bell_feed(&b, &now, 99, 1, 100), 0);
	ck_assert(b.per_request && b.eager_windows == 5);
}
END_TEST

START_TEST(test_ring_place_moves)
{
	struct mqfs_ring_place p;
	cpu_set_t base, now;
	unsigned first = 0;

	ck_assert_int_eq(sched_getaffinity(0, sizeof(base), &base), 0);
	if (CPU_COUNT(&base) < 2)
		return;			/* nowhere else to go: sets above */
	while (!CPU_ISSET(first, &base))
		first++;
	mqfs_ring_place_init(&p, first, MQFS_RING_PIN_AUTO);
	ck_assert(p.mode == MQFS_RING_PIN_AUTO && !mqfs_ring_place_away(&p));
	ck_assert_int_eq(sched_getaffinity(0, sizeof(now), &now), 0);
	ck_assert(CPU_COUNT(&now) == 1 && CPU_ISSET(first, &now));
	for (unsigned i = 0; i < 63; i++)
		ck_assert(!mqfs_ring_place_update(&p, 32));
	ck_assert(mqfs_ring_place_update(&p, 32));
	ck_assert(mqfs_ring_place_away(&p));
	ck_assert_int_eq(sched_getaffinity(0, sizeof(now), &now), 0);
	ck_assert(!CPU_ISSET(first, &now) &&
		  CPU_COUNT(&now) == CPU_COUNT(&base) - 1);
	for (unsigned i = 0; i < 63; i++)
		ck_assert(!mqfs_ring_place_update(&p, 1));
	ck_assert(mqfs_ring_place_update(&p, 1));
	ck_assert_int_eq(sched_getaffinity(0, sizeof(now), &now), 0);
	ck_assert(CPU_COUNT(&now) == 1 && CPU_ISSET(first, &now));
}
END_TEST

/* ---- callers' I/O priorities ---------------------------------------- */

/* This thread's effective capabilities, read the plain way. */
static uint64_t t_own_capeff(void)
{
	unsigned long long cap = 0;
	char line[256];
	FILE *f = fopen("/proc/thread-self/status", "r");

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &cap) == 1)
			break;
	fclose(f);
	return cap;
}

static int t_prio_value[4];		/* what each fake thread has */
static unsigned t_prio_calls;
static uint64_t t_prio_now;

static int t_prio_get(pid_t tid)
{
	t_prio_calls++;
	if (tid >= 4)
		return -ESRCH;
	return t_prio_value[tid];
}

static uint64_t t_prio_clock(void)
{
	return t_prio_now;
}

/*
 * A thread's answer is kept for the cache's lifetime and asked again
 * after it; a gone thread and the kernel's own requests (tid 0) are
 * NONE; the class comes out of the kernel's value as ioprio(7) says.
 */
START_TEST(test_ioprio_cache)
{
	struct mqfs_ioprio c;

	t_prio_value[1] = 3 << 13;		/* idle */
	t_prio_value[2] = 2 << 13 | 0;		/* be, level 0 */
	t_prio_now = 1000;
	mqfs_ioprio_init(&c, t_prio_get, t_prio_clock);
	ck_assert_int_eq(mqfs_ioprio_of(&c, 0), 0);
	ck_assert_uint_eq(t_prio_calls, 0);
	ck_assert_int_eq(mqfs_ioprio_of(&c, 1), 3 << 13);
	ck_assert_int_eq(mqfs_ioprio_of(&c, 2), 2 << 13);
	ck_assert_uint_eq(t_prio_calls, 2);
	/* ionice -p: seen only once the answer is older than the TTL. */
	t_prio_value[1] = 1 << 13 | 4;		/* rt, level 4 */
	t_prio_now += MQFS_IOPRIO_TTL_NS - 1;
	ck_assert_int_eq(mqfs_ioprio_of(&c, 1), 3 << 13);
	ck_assert_uint_eq(t_prio_calls, 2);
	t_prio_now += 1;
	ck_assert_int_eq(mqfs_ioprio_of(&c, 1), 1 << 13 | 4);
	ck_assert_uint_eq(t_prio_calls, 3);
	ck_assert_int_eq(mqfs_ioprio_of(&c, 7), 0);	/* ESRCH */
	ck_assert_uint_eq(atomic_load(&c.hits), 1);
	ck_assert_uint_eq(atomic_load(&c.misses), 4);
	mqfs_ioprio_destroy(&c);
	ck_assert_int_eq(mqfs_ioprio_class(0), MQ_PRIO_NONE);
	ck_assert_int_eq(mqfs_ioprio_class(1 << 13 | 7), MQ_PRIO_RT);
	ck_assert_int_eq(mqfs_ioprio_class(2 << 13 | 4), MQ_PRIO_BE);
	ck_assert_int_eq(mqfs_ioprio_class(3 << 13), MQ_PRIO_IDLE);
	ck_assert_int_eq(mqfs_ioprio_class(5 << 13), MQ_PRIO_NONE);
	ck_assert_int_eq(mqfs_ioprio_class(-EPERM), MQ_PRIO_NONE);
}
END_TEST

/* rt takes CAP_SYS_ADMIN (21) or CAP_SYS_NICE (23), as ioprio_set. */
START_TEST(test_ioprio_rt_caps)
{
	ck_assert(!mqfs_ioprio_caps_allow_rt(0));
	ck_assert(!mqfs_ioprio_caps_allow_rt(~(1ull << 21 | 1ull << 23)));
	ck_assert(mqfs_ioprio_caps_allow_rt(1ull << 21));
	ck_assert(mqfs_ioprio_caps_allow_rt(1ull << 23));
	/* The test runs as root with every capability, or it says so. */
	ck_assert_int_eq(mqfs_ioprio_may_rt((pid_t)syscall(SYS_gettid)),
			 mqfs_ioprio_caps_allow_rt(t_own_capeff()));
	ck_assert(!mqfs_ioprio_may_rt(-1));
}
END_TEST

/* The system call itself: this thread's class, as ionice sets it. */
START_TEST(test_ioprio_syscall)
{
	struct mqfs_ioprio c;
	pid_t tid = (pid_t)syscall(SYS_gettid);

	mqfs_ioprio_init(&c, NULL, NULL);
	ck_assert_int_eq(syscall(SYS_ioprio_set, 1, tid, 3 << 13), 0);
	ck_assert_int_eq(mqfs_ioprio_class(mqfs_ioprio_of(&c, tid)),
			 MQ_PRIO_IDLE);
	mqfs_ioprio_destroy(&c);
}
END_TEST

static Suite *fuse_suite(void)
{
	Suite *s = suite_create("fuse");
	TCase *tc = t_tcase(s, "fuse", 60);

	tcase_add_test(tc, test_decode_layouts);
	tcase_add_test(tc, test_decode_refuses);
	tcase_add_test(tc, test_decode_damage);
	tcase_add_test(tc, test_decode_ring);
	tcase_add_test(tc, test_pool);
	tcase_add_test(tc, test_replies);
	tcase_add_test(tc, test_cancellable_once);
	tcase_add_test(tc, test_dirbuf);
	tcase_add_test(tc, test_bdi_cap);
	tcase_add_test(tc, test_ctl_stale_handle);
	tcase_add_test(tc, test_ioprio_cache);
	tcase_add_test(tc, test_ioprio_syscall);
	tcase_add_test(tc, test_ioprio_rt_caps);
	tcase_add_test(tc, test_options);
	tcase_add_test(tc, test_ring_place);
	tcase_add_test(tc, test_ring_spill_entries);
	tcase_add_test(tc, test_ring_place_moves);
	tcase_add_test(tc, test_ring_bell);
	return s;
}

T_MAIN(fuse_suite)
