/* SPDX-License-Identifier: MIT */
/*
 * nvme_i.h - the NVMe command set's pure parts (nvme.c), apart so that
 * the unit test can check them without an NVMe device: Identify data to
 * geometry, requests to commands, NVMe status to errno.
 */
#ifndef MQFS_SCHED_DEV_NVME_I_H
#define MQFS_SCHED_DEV_NVME_I_H

#include <linux/nvme_ioctl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "mqfs/blk.h"

/* NVM command set opcodes (NVMe 2.0, figure "Opcodes for NVM Commands"). */
enum {
	NVME_OP_FLUSH = 0x00,
	NVME_OP_WRITE = 0x01,
	NVME_OP_READ = 0x02,
	NVME_OP_WRITE_ZEROES = 0x08,
	NVME_OP_DSM = 0x09,
	NVME_ADMIN_IDENTIFY = 0x06,
};

#define NVME_ID_SIZE		4096u
#define NVME_FUA		(1u << 30)	/* CDW12 of READ/WRITE */
#define NVME_DSM_AD		(1u << 2)	/* CDW11: deallocate */
#define NVME_MAX_NLB		65536u		/* CDW12 NLB: 16 bits, 0's based */
#define NVME_DSM_MAX_LBAS	0xffffffffu	/* one range's length */
/* Most commands one request may take on a ring; more go synchronously. */
#define NVME_MAX_CMDS		64u

/* One DSM range (NVMe 2.0, "Dataset Management - Range Definition"). */
struct nvme_dsm_range {
	uint32_t cattr;
	uint32_t nlb;			/* 1-based */
	uint64_t slba;
};

/* What the namespace and its controller offer, and how we use them. */
struct nvme_info {
	uint32_t nsid;
	unsigned lba_shift;		/* log2 of the LBA data size */
	uint64_t nlbas;			/* namespace size (NSZE) */
	uint32_t mdts_bytes;		/* 0: the controller sets no limit */
	uint32_t max_lbas;		/* per READ / WRITE command */
	uint16_t oncs;
	bool vwc;			/* volatile write cache: FLUSH needed */
	bool dsm, write_zeroes;		/* ONCS bits */
	uint32_t max_wz_lbas;		/* per WRITE ZEROES command */
	uint64_t max_dsm_lbas;		/* per DSM range */
	unsigned lbaf;			/* the LBA format in use */
};

/* Where a request's commands have got to (mq_nvme_next_cmd). */
struct nvme_cursor {
	const struct mq_bio *bio;	/* data ops: the bio being cut */
	uint64_t done;			/* bytes of it (LBAs of a range) done */
	bool started;
};

/* Identify Controller (CNS 01h): MDTS (4 KiB pages assumed), ONCS, VWC. */
void mq_nvme_parse_id_ctrl(struct nvme_info *ni, const uint8_t *id);
/*
 * Identify Namespace (CNS 00h): size and the LBA format in use.  An
 * inactive namespace, an LBA size outside 512 B - 64 KiB, or a format
 * with metadata (mqfs sends none) is -EOPNOTSUPP, with why in @why.
 */
int mq_nvme_parse_id_ns(struct nvme_info *ni, const uint8_t *id, char *why,
		     size_t size);
/* The kernel's limits for the namespace, bytes; 0 where not known. */
struct nvme_kernel_limits {
	uint64_t max_bytes;		/* one user buffer it maps */
	uint64_t write_zeroes_max;	/* write_zeroes_max_bytes */
	uint64_t discard_max;		/* discard_max_hw_bytes */
};
/*
 * Per-command sizes from MDTS and the kernel's limits (which carry the
 * controller's WZSL and DMRSL: the kernel reads them with Identify).
 */
void mq_nvme_set_limits(struct nvme_info *ni,
			const struct nvme_kernel_limits *k);
/*
 * Can @rq be served at all: -EINVAL when not aligned to the LBA size,
 * -EOPNOTSUPP for an op the namespace lacks.  0 otherwise (a request past
 * the end is the device's to refuse: LBA out of range).
 */
int mq_nvme_rq_check(const struct nvme_info *ni, const struct mq_request *rq);
/* Commands @rq takes (0: nothing to send, a flush with no cache). */
uint64_t mq_nvme_rq_nr_cmds(const struct nvme_info *ni,
			 const struct mq_request *rq);
/*
 * The next command of a checked @rq into @cmd (and @range, for DSM);
 * false when none is left.  Start with a zeroed cursor.
 */
bool mq_nvme_next_cmd(const struct nvme_info *ni, const struct mq_request *rq,
		   struct nvme_cursor *c, struct nvme_uring_cmd *cmd,
		   struct nvme_dsm_range *range);
/* An NVMe status (CQE DW3 bits 31:17, as the kernel returns it) as errno. */
int mq_nvme_status_errno(int status);
/* Its name, "LBA out of range", or "status" when not one we know. */
const char *mq_nvme_status_name(int status);

/* nvme_sysfs.c: the namespace's block device, where sysfs shows one. */
/* Its sysfs directory into @dir ("" and -ENOENT when there is none). */
int mq_nvme_sysfs_find(dev_t rdev, char *dir, size_t len);
/* A number of @dir/@attr; -1 when absent. */
long long mq_nvme_sysfs_number(const char *dir, const char *attr);
/* Its hardware queues (4 when unknown). */
unsigned mq_nvme_sysfs_hw_queues(const char *dir);
/* The largest user buffer the kernel maps (504 KiB when unknown). */
uint64_t mq_nvme_sysfs_kernel_max(const char *dir);
/*
 * Open the block device O_EXCL, so that nobody mounts it while we write
 * through the generic device: its fd, -EBUSY when in use, -ENOENT when
 * there is no block device node to hold.
 */
int mq_nvme_sysfs_claim(const char *dir);
/* Is the running kernel at least @major.@minor?  Its release in @rel. */
bool mq_nvme_kernel_at_least(unsigned major, unsigned minor, char *rel,
			     size_t len);

#endif /* MQFS_SCHED_DEV_NVME_I_H */
