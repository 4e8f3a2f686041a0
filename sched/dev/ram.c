/* SPDX-License-Identifier: MIT */
/*
 * ram.c - a memory-backed device for tests: data really moves, so merged
 * requests, discards and write-zeroes can be checked byte for byte.
 * Requests complete inside queue_rq and are reaped as a batch.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dev_i.h"
#include "mqfs/dev/ram.h"

struct ram_dev {
	struct mq_dev dev;
	unsigned char *data;
};

static struct ram_dev *to_ram(struct mq_dev *dev)
{
	return mq_container_of(dev, struct ram_dev, dev);
}

static int ram_queue_init(struct mq_dev *dev, unsigned index, void **priv)
{
	struct dev_done_batch *b = calloc(1, sizeof(*b));

	if (!b || dev_done_init(b, 64)) {
		free(b);
		return -ENOMEM;
	}
	*priv = b;
	return 0;
}

static void ram_queue_exit(struct mq_dev *dev, unsigned index, void *priv)
{
	dev_done_exit(priv);
	free(priv);
}

/* Move the data of one bio; 0 or -EIO past the end of the device. */
static int ram_do_bio(struct ram_dev *rd, const struct mq_bio *bio)
{
	uint64_t off = bio->sector << MQ_SECTOR_SHIFT;

	if (bio->op == MQ_OP_FLUSH)
		return 0;
	if (off > rd->dev.geo.size_bytes ||
	    bio->size > rd->dev.geo.size_bytes - off)
		return -EIO;
	switch (bio->op) {
	case MQ_OP_READ:
		memcpy(bio->buf, rd->data + off, bio->size);
		return 0;
	case MQ_OP_WRITE:
		memcpy(rd->data + off, bio->buf, bio->size);
		return 0;
	case MQ_OP_DISCARD:
	case MQ_OP_WRITE_ZEROES:
		memset(rd->data + off, 0, bio->size);
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

static int ram_queue_rq(struct mq_hw_queue *hctx, struct mq_request *rq,
			bool last)
{
	struct ram_dev *rd = to_ram(mq_hctx_dev(hctx));
	struct mq_bio *bio;
	int status = 0;

	mq_rq_for_each_bio(bio, rq) {
		status = ram_do_bio(rd, bio);
		if (status)
			break;
	}
	dev_done_add(mq_hctx_driver_data(hctx), rq, status, last);
	return 0;
}

static void ram_commit_rqs(struct mq_hw_queue *hctx)
{
	dev_done_flush(mq_hctx_driver_data(hctx));
}

static void ram_close(struct mq_dev *dev)
{
	struct ram_dev *rd = to_ram(dev);

	free(rd->data);
	free(rd);
}

static const struct mq_dev_ops ram_ops = {
	.name = "ram",
	.queue_init = ram_queue_init,
	.queue_exit = ram_queue_exit,
	.queue_rq = ram_queue_rq,
	.commit_rqs = ram_commit_rqs,
	.close = ram_close,
};

int mq_ram_open(uint64_t size_bytes, unsigned queue_depth,
		struct mq_dev **out)
{
	struct ram_dev *rd = calloc(1, sizeof(*rd));

	*out = NULL;
	if (!rd)
		return -ENOMEM;
	rd->data = calloc(1, size_bytes);
	if (!rd->data) {
		free(rd);
		return -ENOMEM;
	}
	rd->dev.ops = &ram_ops;
	snprintf(rd->dev.name, sizeof(rd->dev.name), "ram");
	rd->dev.geo = (struct mq_dev_geometry){
		.logical_block_size = 512, .physical_block_size = 4096,
		.size_bytes = size_bytes, .max_hw_sectors = 2048,
		.max_segments = 256, .nr_hw_queues = 16,
		.queue_depth = queue_depth ? queue_depth : 64,
		.flush = true, .discard = true, .write_zeroes = true,
	};
	*out = &rd->dev;
	return 0;
}

void *mq_ram_data(struct mq_dev *dev)
{
	return to_ram(dev)->data;
}
