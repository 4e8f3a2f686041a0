/* SPDX-License-Identifier: MIT */
/*
 * decode.c - checking a request read from /dev/fuse before any handler
 * sees it: the header says what was read, the opcode's fixed argument
 * fits, its names end inside the message, and the data it announces is
 * all there.  The kernel never sends less, but a decoder that trusts
 * lengths is a crash waiting for a kernel bug: a bad message is answered
 * with EIO (when its header can be trusted for the unique) and the
 * daemon goes on serving.  Requests arrive whole from /dev/fuse, or split
 * over a ring entry's header and payload buffers (FUSE over io_uring):
 * one table and one check serve both.  Pure: no state, no I/O
 * (tests/unit/test_fuse).
 */
#include <errno.h>
#include <string.h>
#include "fuse_i.h"

/* What follows the header for one opcode. */
struct dec_layout {
	uint16_t fixed;		/* the opcode's struct, bytes */
	uint8_t nstr;		/* NUL-terminated names after it */
	uint8_t kind;		/* DEC_* below */
	bool known;		/* an opcode mqfs decodes (else ENOSYS) */
};

enum {
	DEC_PLAIN = 0,
	DEC_WRITE,		/* fuse_write_in, then size bytes of data */
	DEC_SETXATTR,		/* fuse_setxattr_in, name, size bytes */
	DEC_FORGETS,		/* fuse_batch_forget_in, count entries */
};

#define L(op, type, n)	[op] = { sizeof(struct type), n, DEC_PLAIN, true }
#define N(op, n)	[op] = { 0, n, DEC_PLAIN, true }

static const struct dec_layout dec_layouts[MQFS_FUSE_OPCODE_MAX] = {
	N(FUSE_LOOKUP, 1),
	L(FUSE_FORGET, fuse_forget_in, 0),
	L(FUSE_GETATTR, fuse_getattr_in, 0),
	L(FUSE_SETATTR, fuse_setattr_in, 0),
	N(FUSE_READLINK, 0),
	N(FUSE_SYMLINK, 2),
	L(FUSE_MKNOD, fuse_mknod_in, 1),
	L(FUSE_MKDIR, fuse_mkdir_in, 1),
	N(FUSE_UNLINK, 1),
	N(FUSE_RMDIR, 1),
	L(FUSE_RENAME, fuse_rename_in, 2),
	L(FUSE_LINK, fuse_link_in, 1),
	L(FUSE_OPEN, fuse_open_in, 0),
	L(FUSE_READ, fuse_read_in, 0),
	[FUSE_WRITE] = { sizeof(struct fuse_write_in), 0, DEC_WRITE, true },
	N(FUSE_STATFS, 0),
	L(FUSE_RELEASE, fuse_release_in, 0),
	L(FUSE_FSYNC, fuse_fsync_in, 0),
	/* With FUSE_SETXATTR_EXT, which INIT requires (init.c). */
	[FUSE_SETXATTR] = { sizeof(struct fuse_setxattr_in), 1, DEC_SETXATTR,
			    true },
	L(FUSE_GETXATTR, fuse_getxattr_in, 1),
	L(FUSE_LISTXATTR, fuse_getxattr_in, 0),
	N(FUSE_REMOVEXATTR, 1),
	L(FUSE_FLUSH, fuse_flush_in, 0),
	/* Before 7.36 the kernel sent only major, minor, readahead, flags. */
	[FUSE_INIT] = { 4 * sizeof(uint32_t), 0, DEC_PLAIN, true },
	L(FUSE_OPENDIR, fuse_open_in, 0),
	L(FUSE_READDIR, fuse_read_in, 0),
	L(FUSE_RELEASEDIR, fuse_release_in, 0),
	L(FUSE_FSYNCDIR, fuse_fsync_in, 0),
	L(FUSE_CREATE, fuse_create_in, 1),
	L(FUSE_INTERRUPT, fuse_interrupt_in, 0),
	N(FUSE_DESTROY, 0),
	[FUSE_BATCH_FORGET] = { sizeof(struct fuse_batch_forget_in), 0,
				DEC_FORGETS, true },
	L(FUSE_FALLOCATE, fuse_fallocate_in, 0),
	L(FUSE_READDIRPLUS, fuse_read_in, 0),
	L(FUSE_RENAME2, fuse_rename2_in, 2),
	L(FUSE_LSEEK, fuse_lseek_in, 0),
	L(FUSE_SYNCFS, fuse_syncfs_in, 0),
	L(FUSE_TMPFILE, fuse_create_in, 1),	/* 7.37; the name is "/" */
};

#undef L
#undef N

/* The names after the fixed part: each must end inside the message. */
static int dec_names(const char *p, size_t len, unsigned nstr,
		     struct mqfs_fuse_msg *m, size_t *used)
{
	size_t off = 0;

	for (unsigned i = 0; i < nstr; i++) {
		const char *end = memchr(p + off, '\0', len - off);

		if (!end)
			return -EIO;
		m->name[i] = p + off;
		off = (size_t)(end - p) + 1;
	}
	*used = off;
	return 0;
}

/* The variable tail of WRITE, SETXATTR and BATCH_FORGET. */
static int dec_tail(unsigned kind, const char *p, size_t len,
		    struct mqfs_fuse_msg *m)
{
	uint64_t want;

	switch (kind) {
	case DEC_WRITE:
		want = ((const struct fuse_write_in *)m->arg)->size;
		break;
	case DEC_SETXATTR:
		want = ((const struct fuse_setxattr_in *)m->arg)->size;
		break;
	case DEC_FORGETS:
		want = (uint64_t)((const struct fuse_batch_forget_in *)
				  m->arg)->count *
		       sizeof(struct fuse_forget_one);
		break;
	default:
		return 0;
	}
	if (want > len)
		return -EIO;
	m->data = p;
	m->data_len = (size_t)want;
	return 0;
}

/*
 * The opcode's struct at @arg (@arg_len bytes there), then its names and
 * data at @tail (@tail_len bytes): contiguous on /dev/fuse, in two
 * buffers on a ring entry.
 */
static int dec_body(const struct fuse_in_header *h, const char *arg,
		    size_t arg_len, const char *tail, size_t tail_len,
		    struct mqfs_fuse_msg *m)
{
	const struct dec_layout *l;
	size_t used = 0;
	int err;

	if (h->opcode >= MQFS_FUSE_OPCODE_MAX)
		return -ENOSYS;
	l = &dec_layouts[h->opcode];
	if (!l->known)
		return -ENOSYS;
	if (arg_len < l->fixed)
		return -EIO;
	m->arg = l->fixed ? arg : NULL;
	m->arg_len = arg_len;
	err = dec_names(tail, tail_len, l->nstr, m, &used);
	if (!err)
		err = dec_tail(l->kind, tail + used, tail_len - used, m);
	return err;
}

int mqfs_fuse_decode(const void *buf, size_t n, struct mqfs_fuse_msg *m)
{
	const struct fuse_in_header *h = buf;
	const char *p = (const char *)buf + sizeof(*h);
	size_t len, fixed;

	memset(m, 0, sizeof(*m));
	if (n < sizeof(*h))
		return -EPROTO;		/* no unique to answer */
	m->h = h;
	if (h->len != n || (size_t)h->total_extlen * 8 > n - sizeof(*h))
		return -EIO;
	len = n - sizeof(*h) - (size_t)h->total_extlen * 8;
	fixed = h->opcode < MQFS_FUSE_OPCODE_MAX ?
		dec_layouts[h->opcode].fixed : 0;
	if (len < fixed)
		fixed = len;		/* dec_body refuses it */
	return dec_body(h, p, len, p + fixed, len - fixed, m);
}

/*
 * A ring entry: the kernel put the header in in_out, the first argument
 * (the opcode's struct; empty for the opcodes that start with a name) in
 * op_in, and the other arguments from the payload's first byte on, with
 * payload_sz their length.  The header's len counts all three, so the
 * first argument's size is what is left of it.
 */
int mqfs_fuse_decode_ring(const struct mqfs_fuse_uring_req_header *hdr,
			  const void *payload, size_t cap,
			  struct mqfs_fuse_msg *m)
{
	const struct fuse_in_header *h = (const void *)hdr->in_out;
	size_t psz = hdr->ring_ent_in_out.payload_sz, ext, arg_len;

	memset(m, 0, sizeof(*m));
	m->h = h;
	ext = (size_t)h->total_extlen * 8;
	if (psz > cap || h->len < sizeof(*h) + psz || ext > psz)
		return -EIO;
	arg_len = h->len - sizeof(*h) - psz;
	if (arg_len > sizeof(hdr->op_in))
		return -EIO;
	return dec_body(h, hdr->op_in, arg_len, payload, psz - ext, m);
}

/* fuse_setattr_in as a struct stat and MQFS_SET_* (FATTR_'s values). */
unsigned mqfs_setattr_decode(const struct fuse_setattr_in *in,
			     struct stat *st)
{
	const unsigned known = MQFS_SET_MODE | MQFS_SET_UID | MQFS_SET_GID |
			       MQFS_SET_SIZE | MQFS_SET_ATIME | MQFS_SET_MTIME |
			       MQFS_SET_ATIME_NOW | MQFS_SET_MTIME_NOW |
			       MQFS_SET_CTIME | MQFS_SET_KILL_SUIDGID;

	_Static_assert(MQFS_SET_MODE == FATTR_MODE &&
		       MQFS_SET_SIZE == FATTR_SIZE &&
		       MQFS_SET_MTIME_NOW == FATTR_MTIME_NOW &&
		       MQFS_SET_CTIME == FATTR_CTIME &&
		       MQFS_SET_KILL_SUIDGID == FATTR_KILL_SUIDGID,
		       "setattr bits");
	*st = (struct stat){
		.st_mode = in->mode, .st_uid = in->uid, .st_gid = in->gid,
		.st_size = (off_t)in->size,
		.st_atim = { (time_t)in->atime, in->atimensec },
		.st_mtim = { (time_t)in->mtime, in->mtimensec },
		.st_ctim = { (time_t)in->ctime, in->ctimensec },
	};
	return in->valid & known;
}
