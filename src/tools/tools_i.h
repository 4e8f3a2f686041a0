/* SPDX-License-Identifier: MIT */
/*
 * tools_i.h - helpers shared by mkfs.mqfs and fsck.mqfs: size arguments
 * and opening a device or image through the block layer.
 */
#ifndef MQFS_TOOLS_I_H
#define MQFS_TOOLS_I_H

#include <stdint.h>
#include <stdio.h>

struct mq_dev;
struct mq_queue;

/* An opened device with its queue (elevator "none": one thread of I/O). */
struct tool_dev {
	struct mq_dev *dev;
	struct mq_queue *q;
};

/*
 * Parse "123", "64K", "16M", "2G", "1T" (powers of 1024; an optional
 * trailing "B" or "iB" is accepted).  0 or -EINVAL / -ERANGE.
 */
int tool_parse_size(const char *s, uint64_t *out);
/*
 * How a tool opens the device.  A writer has it to itself, as the daemon
 * does (O_EXCL, flock): a mounted filesystem is refused at once, as
 * e2fsprogs refuses it.  A checker that only reads opens it read-only
 * and shared, and says so when the filesystem is mounted.
 */
enum tool_access {
	TOOL_EXCLUSIVE,
	TOOL_READ_SHARED,
};

/* Open @path with the io_uring driver and create its queue.  0 or -errno
 * after a message naming @prog on stderr. */
int tool_open(const char *prog, const char *path, enum tool_access access,
	      struct tool_dev *td);
/* Destroy the queue, then close the device (all I/O has completed). */
void tool_close(struct tool_dev *td);
/* Read @nblocks 4 KiB blocks from block @blk into @buf (4 KiB aligned),
 * synchronously through the queue.  0 or -errno. */
int tool_read_blocks(struct mq_queue *q, uint64_t blk, void *buf,
		     uint32_t nblocks);
/*
 * The one operand left after getopt (@what names it when it is missing):
 * argv[optind], or NULL after a usage error naming @prog (exit @code).
 */
const char *tool_operand(const char *prog, int code, const char *what,
			 int argc, char **argv);
/* "1.5 GiB" style rendering of @bytes into @buf. */
const char *tool_human(uint64_t bytes, char *buf, size_t len);

#endif /* MQFS_TOOLS_I_H */
