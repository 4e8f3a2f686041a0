/* SPDX-License-Identifier: MIT */
/*
 * uring_rw.c - the io_uring driver's command set for regular files and
 * block devices (uring_i.h): one SQE a request - read/write (vectored
 * when it carries several bios, fixed when its one buffer is
 * registered), fsync for flush, fallocate for discard and write-zeroes
 * (block ioctls on a block device); a short transfer finished
 * synchronously, a short read at end of file zero-filled as a block
 * device's tail would be.
 */
#include <errno.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include "geometry.h"
#include "uring_i.h"

/* Per-request driver context, allocated with the request. */
struct uring_cmd {
	struct iovec iov[URING_MAX_SEGS];
};

/* Build the iovec of a multi-bio request in its context area. */
static unsigned uring_fill_iov(struct mq_request *rq, struct uring_cmd *cmd)
{
	struct mq_bio *bio;
	unsigned n = 0;

	mq_rq_for_each_bio(bio, rq) {
		cmd->iov[n].iov_base = bio->buf;
		cmd->iov[n].iov_len = bio->size;
		n++;
	}
	return n;
}
static void uring_prep_rw(struct uring_queue *uq, struct io_uring_sqe *sqe,
			  struct mq_request *rq)
{
	struct uring_cmd *cmd = mq_rq_pdu(rq);
	off_t off = (off_t)(rq->sector << MQ_SECTOR_SHIFT);
	int fd = mq_uring_sqe_fd(uq->ud);
	bool write = rq->op == MQ_OP_WRITE;

	int idx = rq->nr_segs == 1 ?
		  mq_uring_fixed_index(uq->ud, rq->bio->buf, rq->nr_bytes) : -1;

	if (idx >= 0) {
		if (write)
			io_uring_prep_write_fixed(sqe, fd, rq->bio->buf,
						  rq->nr_bytes, off, idx);
		else
			io_uring_prep_read_fixed(sqe, fd, rq->bio->buf,
						 rq->nr_bytes, off, idx);
	} else if (rq->nr_segs == 1) {
		if (write)
			io_uring_prep_write(sqe, fd, rq->bio->buf, rq->nr_bytes, off);
		else
			io_uring_prep_read(sqe, fd, rq->bio->buf, rq->nr_bytes, off);
	} else {
		unsigned n = uring_fill_iov(rq, cmd);

		if (write)
			io_uring_prep_writev(sqe, fd, cmd->iov, n, off);
		else
			io_uring_prep_readv(sqe, fd, cmd->iov, n, off);
	}
	/* FUA: RWF_DSYNC makes the block layer below issue REQ_FUA. */
	if (write && (rq->cmd_flags & MQ_REQ_FUA))
		sqe->rw_flags = RWF_DSYNC;
}

/* Discard / write-zeroes on a block device: synchronous ioctls. */
static int uring_blk_range(struct uring_dev *ud, struct mq_request *rq)
{
	uint64_t range[2] = { rq->sector << MQ_SECTOR_SHIFT, rq->nr_bytes };
	unsigned long cmd = rq->op == MQ_OP_DISCARD ? BLKDISCARD : BLKZEROOUT;

	return ioctl(ud->fd, cmd, range) ? -errno : 0;
}

static int uring_prep(struct uring_queue *uq, struct io_uring_sqe *sqe,
		      struct mq_request *rq)
{
	struct uring_dev *ud = uq->ud;
	int fd = mq_uring_sqe_fd(ud);
	off_t off = (off_t)(rq->sector << MQ_SECTOR_SHIFT);

	switch (rq->op) {
	case MQ_OP_READ:
	case MQ_OP_WRITE:
		uring_prep_rw(uq, sqe, rq);
		break;
	case MQ_OP_FLUSH:
		io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC);
		break;
	case MQ_OP_DISCARD:
		io_uring_prep_fallocate(sqe, fd, FALLOC_FL_PUNCH_HOLE |
					FALLOC_FL_KEEP_SIZE, off, rq->nr_bytes);
		break;
	case MQ_OP_WRITE_ZEROES:
		io_uring_prep_fallocate(sqe, fd, FALLOC_FL_ZERO_RANGE |
					FALLOC_FL_KEEP_SIZE, off, rq->nr_bytes);
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (ud->fixed_file)
		sqe->flags |= IOSQE_FIXED_FILE;
	io_uring_sqe_set_data(sqe, rq);
	return 0;
}
/* The command set of files and block devices: one SQE a request. */
static int uring_rw_queue(struct uring_queue *uq, struct mq_request *rq)
{
	struct io_uring_sqe *sqe;
	int ret;

	if (uq->ud->is_bdev && (rq->op == MQ_OP_DISCARD ||
				rq->op == MQ_OP_WRITE_ZEROES)) {
		mq_complete_request(rq, uring_blk_range(uq->ud, rq));
		return 0;
	}
	if (!mq_uring_reserve(uq, 1))
		return MQ_DEV_BUSY;
	sqe = io_uring_get_sqe(&uq->ring);
	mq_uring_taken(uq, 1);
	ret = uring_prep(uq, sqe, rq);
	if (ret) {
		/* The SQE is taken: a NOP stands in, its CQE is skipped. */
		io_uring_prep_nop(sqe);
		io_uring_sqe_set_data(sqe, NULL);
	}
	return ret;
}
/*
 * Finish a short transfer synchronously.  Reads past the end of a file
 * come back zero-filled, as reads of a block device's tail never happen.
 */
static int uring_finish_short(struct uring_dev *ud, struct mq_request *rq,
			      uint32_t done)
{
	uint64_t off = (rq->sector << MQ_SECTOR_SHIFT);
	struct mq_bio *bio;
	uint64_t pos = 0;

	mq_rq_for_each_bio(bio, rq) {
		for (uint32_t b = 0; b < bio->size;) {
			uint64_t at = pos + b;
			ssize_t n;

			if (at < done) {
				b += (uint32_t)MQ_MIN((uint64_t)bio->size - b, done - at);
				continue;
			}
			n = rq->op == MQ_OP_WRITE ?
			    pwrite(ud->fd, (char *)bio->buf + b, bio->size - b,
				   (off_t)(off + at)) :
			    pread(ud->fd, (char *)bio->buf + b, bio->size - b,
				  (off_t)(off + at));
			if (n < 0)
				return -errno;
			if (n == 0 && rq->op == MQ_OP_READ) {
				memset((char *)bio->buf + b, 0, bio->size - b);
				n = bio->size - b;
			} else if (n == 0) {
				return -EIO;
			}
			b += (uint32_t)n;
		}
		pos += bio->size;
	}
	return 0;
}

static int uring_rw_status(struct uring_dev *ud, struct mq_request *rq,
			   int res)
{
	if (res < 0)
		return res;
	if ((rq->op == MQ_OP_READ || rq->op == MQ_OP_WRITE) &&
	    (uint32_t)res < rq->nr_bytes) {
		/* Restart on a block boundary: O_DIRECT needs alignment. */
		uint32_t lbs = ud->dev.geo.logical_block_size;

		return uring_finish_short(ud, rq, (uint32_t)res / lbs * lbs);
	}
	return 0;
}

static bool uring_rw_cqe(struct uring_dev *ud, struct mq_request *rq, int res)
{
	rq->status = uring_rw_status(ud, rq, res);
	return true;
}

/* Geometry from the file or block device; iopoll needs poll queues. */
static int uring_rw_setup(struct uring_dev *ud)
{
	int ret = mq_geometry_probe(ud->fd, &ud->dev.geo, &ud->is_bdev);

	if (ret)
		return ret;
	if (ud->cfg.iopoll && !mq_geometry_poll_capable(ud->fd)) {
		fprintf(stderr, "mqfs: uring %s: iopoll needs a block device "
			"with poll queues (queue/io_poll = 1)\n", ud->dev.name);
		return -EOPNOTSUPP;
	}
	return 0;
}

/* Regular files and block devices (chosen by the path's type). */
static bool uring_rw_serves(const struct stat *st)
{
	return S_ISBLK(st->st_mode) || S_ISREG(st->st_mode);
}

const struct uring_cmdset mq_uring_rw_cmdset = {
	.name = "uring",
	.direct = true,
	.pdu_size = sizeof(struct uring_cmd),
	.queue = uring_rw_queue,
	.cqe = uring_rw_cqe,
	.serves = uring_rw_serves,
	.setup = uring_rw_setup,
};
