/* SPDX-License-Identifier: MIT */
/*
 * proto.h - the kernel's FUSE protocol as mqfs speaks it.
 *
 * The structs come from the machine's <linux/fuse.h> (protocol 7.38 on
 * Debian 12).  What 7.39-7.45 added and mqfs uses is defined here, each
 * with the minor that brought it (the kernel's include/uapi/linux/fuse.h
 * changelog), and every layout mqfs builds or decodes by hand has its
 * size checked against the protocol's.
 */
#ifndef MQFS_FUSE_PROTO_H
#define MQFS_FUSE_PROTO_H

#include <linux/fuse.h>
#include <stddef.h>
#include <stdint.h>

/* The minor mqfs answers INIT with (the kernel uses the smaller one). */
#define MQFS_FUSE_MINOR		45
/*
 * Oldest kernel minor served: FUSE_INIT_EXT (flags2) came in 7.36, commit
 * 53db28933e95 ("fuse: extend init flags").
 */
#define MQFS_FUSE_MINOR_MIN	36

/*
 * 7.39: shared mmap of FOPEN_DIRECT_IO files (page cache for the map);
 * commit e78662e818f9 ("fuse: add a new fuse init flag to relax
 * restrictions in no cache mode") named it FUSE_DIRECT_IO_RELAX.
 */
#ifndef FUSE_DIRECT_IO_ALLOW_MMAP
#define FUSE_DIRECT_IO_ALLOW_MMAP	(1ULL << 36)
#endif
/* 7.42: requests over io_uring (FUSE_IO_URING_CMD_*). */
#ifndef FUSE_OVER_IO_URING
#define FUSE_OVER_IO_URING		(1ULL << 41)
#endif

/*
 * Opcodes after 7.38, for the names in -d output (served as ENOSYS).
 * FUSE_STATX: commit ba58a37c2847 ("fuse: add STATX request").
 */
enum {
	MQFS_FUSE_STATX			= 52,	/* 7.39 */
	MQFS_FUSE_COPY_FILE_RANGE_64	= 53,	/* 7.45 */
	MQFS_FUSE_OPCODE_MAX		= 54,
};

/*
 * fuse_init_out as of 7.43: 7.40 took the first unused word for
 * max_stack_depth (passthrough; commit 7dc4e97a4f9a, "fuse: introduce
 * FUSE_PASSTHROUGH capability"), 7.43 the next half for request_timeout.
 * mqfs sets neither; the layout keeps the reply's size honest.
 */
struct mqfs_fuse_init_out {
	uint32_t major;
	uint32_t minor;
	uint32_t max_readahead;
	uint32_t flags;
	uint16_t max_background;
	uint16_t congestion_threshold;
	uint32_t max_write;
	uint32_t time_gran;
	uint16_t max_pages;
	uint16_t map_alignment;
	uint32_t flags2;
	uint32_t max_stack_depth;
	uint16_t request_timeout;
	uint16_t unused[11];
};

_Static_assert(sizeof(struct mqfs_fuse_init_out) == sizeof(struct fuse_init_out),
	       "fuse_init_out 7.43 layout");
_Static_assert(offsetof(struct mqfs_fuse_init_out, flags2) ==
	       offsetof(struct fuse_init_out, flags2), "init_out flags2");
_Static_assert(sizeof(struct fuse_in_header) == 40, "fuse_in_header");
_Static_assert(sizeof(struct fuse_out_header) == 16, "fuse_out_header");
_Static_assert(sizeof(struct fuse_write_in) == 40, "fuse_write_in");
_Static_assert(sizeof(struct fuse_read_in) == 40, "fuse_read_in");
_Static_assert(sizeof(struct fuse_init_in) == 64, "fuse_init_in");
_Static_assert(sizeof(struct fuse_entry_out) == 128, "fuse_entry_out");
_Static_assert(sizeof(struct fuse_attr_out) == 104, "fuse_attr_out");
_Static_assert(sizeof(struct fuse_open_out) == 16, "fuse_open_out");
_Static_assert(sizeof(struct fuse_dirent) == 24, "fuse_dirent");
_Static_assert(sizeof(struct fuse_direntplus) == 152, "fuse_direntplus");
/* With FUSE_SETXATTR_EXT (always asked) SETXATTR has the 7.33 16 bytes. */
_Static_assert(sizeof(struct fuse_setxattr_in) == 16 &&
	       offsetof(struct fuse_setxattr_in, setxattr_flags) == 8,
	       "setxattr_in");
_Static_assert(sizeof(struct fuse_statfs_out) == 80, "fuse_statfs_out");

/*
 * FUSE over io_uring (7.42, merged in 6.14: the "fuse update for 6.14"
 * pull): the structs of the kernel's uapi (include/uapi/linux/fuse.h),
 * absent from Debian 12's <linux/fuse.h>.  Byte-identical 6.14 to 6.18.
 */
enum {
	MQFS_FUSE_URING_CMD_REGISTER		= 1,
	MQFS_FUSE_URING_CMD_COMMIT_AND_FETCH	= 2,
};

#define MQFS_FUSE_URING_IN_OUT_SZ	128
#define MQFS_FUSE_URING_OP_IN_SZ	128

/* Per request, in the entry's header buffer (both directions). */
struct mqfs_fuse_uring_ent_in_out {
	uint64_t flags;
	uint64_t commit_id;		/* the request's unique */
	uint32_t payload_sz;		/* bytes used in the payload buffer */
	uint32_t padding;
	uint64_t reserved;
};

/* The header buffer of an entry (iov[0] of REGISTER). */
struct mqfs_fuse_uring_req_header {
	char in_out[MQFS_FUSE_URING_IN_OUT_SZ];	/* fuse_in/out_header */
	char op_in[MQFS_FUSE_URING_OP_IN_SZ];	/* the opcode's struct */
	struct mqfs_fuse_uring_ent_in_out ring_ent_in_out;
};

/* In the SQE's command area (IORING_SETUP_SQE128). */
struct mqfs_fuse_uring_cmd_req {
	uint64_t flags;
	uint64_t commit_id;
	uint16_t qid;
	uint8_t padding[6];
};

_Static_assert(sizeof(struct mqfs_fuse_uring_ent_in_out) == 32,
	       "fuse_uring_ent_in_out");
_Static_assert(sizeof(struct mqfs_fuse_uring_req_header) == 288,
	       "fuse_uring_req_header");
_Static_assert(sizeof(struct mqfs_fuse_uring_cmd_req) == 24,
	       "fuse_uring_cmd_req");

/* Bytes before a WRITE's data: the kernel copies it right after these. */
#define MQFS_FUSE_WRITE_HDR	(sizeof(struct fuse_in_header) + \
				 sizeof(struct fuse_write_in))

#endif /* MQFS_FUSE_PROTO_H */
