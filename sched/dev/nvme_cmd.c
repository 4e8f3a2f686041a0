/* SPDX-License-Identifier: MIT */
/*
 * nvme_cmd.c - NVMe commands for block-layer requests, and what Identify
 * says: the pure half of the NVMe command set (nvme_i.h), with no device
 * and no ring, so that test_nvme checks every byte of it.
 *
 * Field offsets are the NVMe Base Specification 2.0's (Identify
 * Controller, Identify Namespace, NVM command set) and the kernel's
 * include/linux/nvme.h.  Every multi-byte field is little-endian, and so
 * is this machine: DSM ranges are written in place.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "nvme_i.h"

/* Without any limit from the controller or the kernel: a safe size. */
#define NVME_DEFAULT_MAX_BYTES	(128u * 1024)

static uint16_t get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)get_le16(p) | (uint32_t)get_le16(p + 2) << 16;
}

static uint64_t get_le64(const uint8_t *p)
{
	return (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

void mq_nvme_parse_id_ctrl(struct nvme_info *ni, const uint8_t *id)
{
	uint8_t mdts = id[77];

	/*
	 * MDTS is a power of two in units of CAP.MPSMIN, which user space
	 * cannot read; every controller we know has 4 KiB.  The kernel's
	 * own limit (mq_nvme_set_limits) covers a larger MPSMIN anyway.
	 */
	ni->mdts_bytes = mdts && mdts < 20 ? 4096u << mdts : 0;
	ni->oncs = get_le16(id + 520);
	ni->vwc = id[525] & 1;
	ni->dsm = ni->oncs & (1u << 2);
	ni->write_zeroes = ni->oncs & (1u << 3);
}

int mq_nvme_parse_id_ns(struct nvme_info *ni, const uint8_t *id, char *why,
		     size_t size)
{
	unsigned nlbaf = id[25], flbas = id[26], idx = flbas & 0xf;
	uint32_t lbaf;
	unsigned ms, lbads;

	if (nlbaf >= 16)	/* FLBAS bits 6:5: the index's high bits */
		idx |= ((flbas >> 5) & 3) << 4;
	ni->nlbas = get_le64(id);
	if (!ni->nlbas) {
		snprintf(why, size, "namespace %u is inactive (size 0)",
			 ni->nsid);
		return -EOPNOTSUPP;
	}
	if (idx > nlbaf) {
		snprintf(why, size, "LBA format %u in use of %u formats", idx,
			 nlbaf + 1);
		return -EOPNOTSUPP;
	}
	lbaf = get_le32(id + 128 + 4 * idx);
	ms = lbaf & 0xffff;
	lbads = (lbaf >> 16) & 0xff;
	if (lbads < 9 || lbads > 16) {
		snprintf(why, size, "LBA format %u has blocks of 2^%u bytes",
			 idx, lbads);
		return -EOPNOTSUPP;
	}
	if (ms) {
		snprintf(why, size, "LBA format %u carries %u metadata bytes "
			 "per block, which mqfs does not send: format the "
			 "namespace without metadata (nvme format --lbaf=N)",
			 idx, ms);
		return -EOPNOTSUPP;
	}
	ni->lbaf = idx;
	ni->lba_shift = lbads;
	return 0;
}

/* @max bytes as LBAs, at least 1 and at most @cap. */
static uint64_t nvme_lbas(const struct nvme_info *ni, uint64_t max,
			  uint64_t cap)
{
	max >>= ni->lba_shift;
	return max ? MQ_MIN(max, cap) : 1;
}

void mq_nvme_set_limits(struct nvme_info *ni,
			const struct nvme_kernel_limits *k)
{
	uint64_t max = ni->mdts_bytes ? ni->mdts_bytes : 0;

	if (k->max_bytes && (!max || k->max_bytes < max))
		max = k->max_bytes;
	if (!max)
		max = NVME_DEFAULT_MAX_BYTES;
	ni->max_lbas = (uint32_t)nvme_lbas(ni, max, NVME_MAX_NLB);
	ni->max_wz_lbas = (uint32_t)(k->write_zeroes_max ?
		nvme_lbas(ni, k->write_zeroes_max, NVME_MAX_NLB) : NVME_MAX_NLB);
	ni->max_dsm_lbas = k->discard_max ?
		nvme_lbas(ni, k->discard_max, NVME_DSM_MAX_LBAS) :
		NVME_DSM_MAX_LBAS;
}

static bool nvme_aligned(const struct nvme_info *ni, uint64_t sector,
			 uint64_t bytes)
{
	uint64_t mask = (1ull << ni->lba_shift) - 1;

	return !((sector << MQ_SECTOR_SHIFT) & mask) && !(bytes & mask);
}

int mq_nvme_rq_check(const struct nvme_info *ni, const struct mq_request *rq)
{
	const struct mq_bio *bio;

	switch (rq->op) {
	case MQ_OP_FLUSH:
		return 0;
	case MQ_OP_READ:
	case MQ_OP_WRITE:
		mq_rq_for_each_bio(bio, rq)
			if (!nvme_aligned(ni, bio->sector, bio->size))
				return -EINVAL;
		return 0;
	case MQ_OP_DISCARD:
		if (!ni->dsm)
			return -EOPNOTSUPP;
		break;
	case MQ_OP_WRITE_ZEROES:
		if (!ni->write_zeroes)
			return -EOPNOTSUPP;
		break;
	default:
		return -EOPNOTSUPP;
	}
	return nvme_aligned(ni, rq->sector, rq->nr_bytes) ? 0 : -EINVAL;
}

static uint64_t div_up(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

uint64_t mq_nvme_rq_nr_cmds(const struct nvme_info *ni,
			 const struct mq_request *rq)
{
	uint64_t lbas = rq->nr_bytes >> ni->lba_shift, n = 0;
	const struct mq_bio *bio;

	switch (rq->op) {
	case MQ_OP_FLUSH:
		return ni->vwc;
	case MQ_OP_READ:
	case MQ_OP_WRITE:
		mq_rq_for_each_bio(bio, rq)
			n += div_up(bio->size >> ni->lba_shift, ni->max_lbas);
		return n;
	case MQ_OP_WRITE_ZEROES:
		return div_up(lbas, ni->max_wz_lbas);
	case MQ_OP_DISCARD:
		return div_up(lbas, ni->max_dsm_lbas);
	default:
		return 0;
	}
}

static void nvme_set_lbas(struct nvme_uring_cmd *cmd, uint64_t slba,
			  uint32_t nlb)
{
	cmd->cdw10 = (uint32_t)slba;
	cmd->cdw11 = (uint32_t)(slba >> 32);
	cmd->cdw12 = nlb - 1;		/* 0's based */
}

/* READ / WRITE: each bio cut into pieces of at most max_lbas. */
static bool nvme_next_rw(const struct nvme_info *ni,
			 const struct mq_request *rq, struct nvme_cursor *c,
			 struct nvme_uring_cmd *cmd)
{
	const struct mq_bio *bio;
	uint64_t slba;
	uint32_t nlb;

	while (c->bio && c->done >= c->bio->size) {
		c->bio = c->bio->next;
		c->done = 0;
	}
	bio = c->bio;
	if (!bio)
		return false;
	nlb = (uint32_t)MQ_MIN((uint64_t)(bio->size - c->done) >> ni->lba_shift,
			       (uint64_t)ni->max_lbas);
	slba = ((bio->sector << MQ_SECTOR_SHIFT) + c->done) >> ni->lba_shift;
	cmd->opcode = rq->op == MQ_OP_WRITE ? NVME_OP_WRITE : NVME_OP_READ;
	cmd->addr = (uint64_t)(uintptr_t)((char *)bio->buf + c->done);
	cmd->data_len = nlb << ni->lba_shift;
	nvme_set_lbas(cmd, slba, nlb);
	if (rq->op == MQ_OP_WRITE && (rq->cmd_flags & MQ_REQ_FUA))
		cmd->cdw12 |= NVME_FUA;
	c->done += cmd->data_len;
	return true;
}

/* WRITE ZEROES and DSM deallocate: the request's range, in pieces. */
static bool nvme_next_range(const struct nvme_info *ni,
			    const struct mq_request *rq, struct nvme_cursor *c,
			    struct nvme_uring_cmd *cmd,
			    struct nvme_dsm_range *range)
{
	uint64_t total = rq->nr_bytes >> ni->lba_shift;
	uint64_t slba = ((rq->sector << MQ_SECTOR_SHIFT) >> ni->lba_shift) +
			c->done;
	uint64_t max = rq->op == MQ_OP_DISCARD ? ni->max_dsm_lbas
					       : ni->max_wz_lbas;
	uint32_t nlb;

	if (c->done >= total)
		return false;
	nlb = (uint32_t)MQ_MIN(total - c->done, max);
	c->done += nlb;
	if (rq->op == MQ_OP_WRITE_ZEROES) {
		cmd->opcode = NVME_OP_WRITE_ZEROES;
		nvme_set_lbas(cmd, slba, nlb);
		return true;
	}
	*range = (struct nvme_dsm_range){ .nlb = nlb, .slba = slba };
	cmd->opcode = NVME_OP_DSM;
	cmd->addr = (uint64_t)(uintptr_t)range;
	cmd->data_len = sizeof(*range);
	cmd->cdw10 = 0;			/* one range (0's based) */
	cmd->cdw11 = NVME_DSM_AD;
	return true;
}

bool mq_nvme_next_cmd(const struct nvme_info *ni, const struct mq_request *rq,
		   struct nvme_cursor *c, struct nvme_uring_cmd *cmd,
		   struct nvme_dsm_range *range)
{
	if (!c->started) {
		c->started = true;
		c->bio = rq->bio;
		c->done = 0;
	}
	memset(cmd, 0, sizeof(*cmd));
	cmd->nsid = ni->nsid;
	switch (rq->op) {
	case MQ_OP_FLUSH:
		if (!ni->vwc || c->done)
			return false;
		c->done = 1;
		cmd->opcode = NVME_OP_FLUSH;
		return true;
	case MQ_OP_READ:
	case MQ_OP_WRITE:
		return nvme_next_rw(ni, rq, c, cmd);
	case MQ_OP_WRITE_ZEROES:
	case MQ_OP_DISCARD:
		return nvme_next_range(ni, rq, c, cmd, range);
	default:
		return false;
	}
}

/*
 * Status codes (SCT << 8 | SC) we name; errno as the kernel's
 * nvme_error_status() classes them, except that media errors are EIO
 * (what the filesystem's errors= policy acts on) rather than ENODATA.
 */
static const struct {
	uint16_t code;
	int err;
	const char *name;
} nvme_statuses[] = {
	{ 0x001, -EOPNOTSUPP, "invalid command opcode" },
	{ 0x002, -EINVAL, "invalid field in command" },
	{ 0x004, -EIO, "data transfer error" },
	{ 0x005, -EIO, "aborted: power loss" },
	{ 0x006, -EIO, "internal error" },
	{ 0x007, -EIO, "command abort requested" },
	{ 0x00b, -ENODEV, "invalid namespace or format" },
	{ 0x080, -ERANGE, "LBA out of range" },
	{ 0x081, -ENOSPC, "capacity exceeded" },
	{ 0x082, -EIO, "namespace not ready" },
	{ 0x083, -EBADE, "reservation conflict" },
	{ 0x182, -EROFS, "write to a read-only range" },
	{ 0x280, -EIO, "write fault" },
	{ 0x281, -EIO, "unrecovered read error" },
	{ 0x282, -EILSEQ, "end-to-end guard check error" },
	{ 0x283, -EILSEQ, "end-to-end application tag check error" },
	{ 0x284, -EILSEQ, "end-to-end reference tag check error" },
	{ 0x285, -EIO, "compare failure" },
	{ 0x286, -EACCES, "access denied" },
	{ 0x287, -ENODATA, "deallocated or unwritten logical block" },
};

#define NVME_SCT_SC(status)	((uint16_t)((status) & 0x7ff))

int mq_nvme_status_errno(int status)
{
	if (status <= 0)
		return status;
	for (size_t i = 0; i < MQ_ARRAY_SIZE(nvme_statuses); i++)
		if (nvme_statuses[i].code == NVME_SCT_SC(status))
			return nvme_statuses[i].err;
	return -EIO;
}

const char *mq_nvme_status_name(int status)
{
	for (size_t i = 0; i < MQ_ARRAY_SIZE(nvme_statuses); i++)
		if (nvme_statuses[i].code == NVME_SCT_SC(status))
			return nvme_statuses[i].name;
	return "status";
}
