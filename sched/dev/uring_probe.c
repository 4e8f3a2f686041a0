/* SPDX-License-Identifier: MIT */
/*
 * uring_probe.c - is io_uring usable here, with the opcodes we issue?
 * Containers often disable it (sysctl kernel.io_uring_disabled, seccomp):
 * say so plainly instead of failing on the first I/O.
 */
#include <errno.h>
#include <liburing.h>
#include <stdio.h>
#include <string.h>
#include "mqfs/mq_dev.h"
#include "mqfs/dev/uring.h"

static const struct {
	int op;
	const char *name;
} uring_needed[] = {
	{ IORING_OP_READ, "READ" }, { IORING_OP_WRITE, "WRITE" },
	{ IORING_OP_READV, "READV" }, { IORING_OP_WRITEV, "WRITEV" },
	{ IORING_OP_FSYNC, "FSYNC" }, { IORING_OP_FALLOCATE, "FALLOCATE" },
	{ IORING_OP_NOP, "NOP" },
};

static int probe_opcodes(struct io_uring *ring)
{
	struct io_uring_probe *p = io_uring_get_probe_ring(ring);
	int ret = 0;

	if (!p)
		return -EOPNOTSUPP;
	for (size_t i = 0; i < MQ_ARRAY_SIZE(uring_needed); i++)
		if (!io_uring_opcode_supported(p, uring_needed[i].op)) {
			fprintf(stderr, "mqfs: io_uring lacks opcode %s\n",
				uring_needed[i].name);
			ret = -EOPNOTSUPP;
		}
	io_uring_free_probe(p);
	return ret;
}

int mq_uring_probe(void)
{
	struct io_uring ring;
	int ret = io_uring_queue_init(2, &ring, 0);

	if (ret) {
		fprintf(stderr, "mqfs: io_uring is not available: %s%s\n",
			strerror(-ret), ret == -EPERM || ret == -ENOSYS ?
			" (disabled by sysctl kernel.io_uring_disabled or seccomp?)"
			: "");
		return ret == -ENOSYS || ret == -EPERM ? -EOPNOTSUPP : ret;
	}
	ret = probe_opcodes(&ring);
	io_uring_queue_exit(&ring);
	return ret;
}
