/* SPDX-License-Identifier: MIT */
/*
 * nvme.c - the io_uring driver's NVMe command set: requests become NVMe
 * commands (IORING_OP_URING_CMD with NVME_URING_CMD_IO) on a namespace's
 * generic character device /dev/ngXnY.  The kernel's block layer and its
 * elevator are bypassed: mqfs's plugs, tags and mq-deadline are the whole
 * I/O stack above the NVMe driver's queues.
 *
 * At open: Identify Controller and Namespace (the admin ioctl) give the
 * LBA format, size, MDTS, the optional commands (ONCS) and the volatile
 * write cache; the kernel's limits for the namespace (max_hw_sectors_kb
 * and max_segments of its block device, when sysfs shows one) cap a
 * command's transfer, since the kernel maps user buffers into requests
 * under them.  A request becomes one command per piece of each bio
 * (nvme_cmd.c), each its own SQE on the queue's ring (SQE128 | CQE32, as
 * NVMe passthrough needs); the request completes at its last CQE with
 * the first error.  One that needs more commands than the ring holds
 * (a huge discard, a bio of megabytes on a small MDTS) is sent
 * synchronously with the NVMe ioctl instead, as the file driver's block
 * device ranges are.  Single-bio data inside registered memory goes as
 * IORING_URING_CMD_FIXED: no page pinning per I/O.
 *
 * A CQE's res is 0, a negative errno (the kernel refused or cancelled
 * the command) or the NVMe status (SCT/SC with DNR and More bits).
 * Statuses become errnos (nvme_cmd.c), are counted, and the first few
 * are printed with the raw value.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "nvme_i.h"
#include "uring_i.h"

/*
 * Fixed buffers of 256 KiB: Linux 6.1 maps a fixed buffer into an NVMe
 * request with the iterator's segment count, which runs to the end of
 * the registered buffer, not of the command (blk_rq_map_user_bvec): a
 * 4 KiB read at the start of a 74 MiB arena was refused with EINVAL
 * against max_segments 127.  64 pages a buffer stay under any limit; a
 * command that crosses two goes without (the kernel pins its pages).
 */
#define NVME_FIXED_CHUNK	(256u * 1024)

/* Errors printed in full before they are only counted. */
#define NVME_SAY_MAX	8u

struct nvme_ns {
	struct nvme_info info;
	char sysfs[PATH_MAX / 2];	/* the namespace's block dir, or "" */
	int claim_fd;			/* its block device, O_EXCL, or -1 */
	_Atomic uint64_t status_errors;	/* commands the device failed */
	_Atomic int last_status;
	_Atomic unsigned said;
	_Atomic uint64_t sync_rqs;	/* requests sent with the ioctl */
};

/* Per request: DSM ranges, commands in flight, the first error. */
struct nvme_pdu {
	struct nvme_dsm_range ranges[NVME_MAX_CMDS];
	_Atomic unsigned pending;
	_Atomic int status;
};

static const char *const nvme_op_names[MQ_OP_COUNT] = {
	"read", "write", "flush", "discard", "write-zeroes",
};

bool mq_uring_nvme_is_generic(const struct stat *st)
{
	char path[96], link[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/dev/char/%u:%u/subsystem",
		 major(st->st_rdev), minor(st->st_rdev));
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return false;
	link[n] = '\0';
	return !strcmp(strrchr(link, '/') ? strrchr(link, '/') + 1 : link,
		       "nvme-generic");
}

/* An error of the device: counted; printed in full the first times. */
static void nvme_note_error(struct uring_dev *ud, const struct mq_request *rq,
			    int res)
{
	struct nvme_ns *ns = ud->nvme;
	unsigned said;

	if (res > 0) {
		atomic_fetch_add(&ns->status_errors, 1);
		atomic_store(&ns->last_status, res);
	}
	said = atomic_fetch_add(&ns->said, 1);
	if (said >= NVME_SAY_MAX)
		return;
	if (res > 0)
		fprintf(stderr, "mqfs: nvme %s: %s of %u bytes at sector %llu: "
			"NVMe status 0x%x (%s%s)\n", ud->dev.name,
			nvme_op_names[rq->op], rq->nr_bytes,
			(unsigned long long)rq->sector, (unsigned)res,
			mq_nvme_status_name(res), res & 0x4000 ? ", do not retry"
			: "");
	else
		fprintf(stderr, "mqfs: nvme %s: %s of %u bytes at sector %llu: "
			"%s\n", ud->dev.name, nvme_op_names[rq->op],
			rq->nr_bytes, (unsigned long long)rq->sector,
			strerror(-res));
	if (said + 1 == NVME_SAY_MAX)
		fprintf(stderr, "mqfs: nvme %s: further errors are only "
			"counted (the queue's statistics)\n", ud->dev.name);
}

static int nvme_res_errno(struct uring_dev *ud, const struct mq_request *rq,
			  int res)
{
	if (!res)
		return 0;
	nvme_note_error(ud, rq, res);
	return res < 0 ? res : mq_nvme_status_errno(res);
}

/*
 * The NVMe ioctl, one command at a time: for requests too big for the
 * ring.  nvme_passthru_cmd64 is nvme_uring_cmd with a result after it.
 */
static int nvme_sync(struct uring_dev *ud, struct mq_request *rq)
{
	struct nvme_ns *ns = ud->nvme;
	struct nvme_cursor c = { 0 };
	struct nvme_dsm_range range;
	struct nvme_uring_cmd cmd;

	atomic_fetch_add(&ns->sync_rqs, 1);
	while (mq_nvme_next_cmd(&ns->info, rq, &c, &cmd, &range)) {
		struct nvme_passthru_cmd64 p = { 0 };
		int ret;

		memcpy(&p, &cmd, sizeof(cmd));
		ret = ioctl(ud->fd, NVME_IOCTL_IO64_CMD, &p);
		if (ret < 0)
			ret = -errno;
		if (ret)
			return nvme_res_errno(ud, rq, ret);
	}
	return 0;
}

static void nvme_prep_sqe(struct uring_dev *ud, struct io_uring_sqe *sqe,
			  const struct nvme_uring_cmd *cmd,
			  struct mq_request *rq)
{
	int idx = cmd->opcode == NVME_OP_READ || cmd->opcode == NVME_OP_WRITE ?
		  mq_uring_fixed_index(ud, (void *)(uintptr_t)cmd->addr,
				       cmd->data_len) : -1;

	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = mq_uring_sqe_fd(ud);
	sqe->cmd_op = NVME_URING_CMD_IO;
	if (ud->fixed_file)
		sqe->flags |= IOSQE_FIXED_FILE;
	if (idx >= 0) {
		sqe->uring_cmd_flags = IORING_URING_CMD_FIXED;
		sqe->buf_index = (uint16_t)idx;
	}
	io_uring_sqe_set_data(sqe, rq);
}

/*
 * Room for @n more CQEs: a request of several commands could otherwise
 * post more completions than the CQ holds, leaving them to the kernel's
 * overflow list (which drops one when its allocation fails).  With
 * nothing owed the request fits (the caller checked it against the CQ).
 */
static bool nvme_cq_room(struct uring_queue *uq, uint64_t n)
{
	uint64_t owed = atomic_load(&uq->inflight) + uq->prepared;

	return !owed || owed + n <= uq->ring.cq.ring_entries;
}

static int nvme_queue(struct uring_queue *uq, struct mq_request *rq)
{
	struct uring_dev *ud = uq->ud;
	const struct nvme_info *ni = &ud->nvme->info;
	struct nvme_pdu *pdu = mq_rq_pdu(rq);
	struct nvme_cursor c = { 0 };
	uint64_t n;
	int ret = mq_nvme_rq_check(ni, rq);

	if (ret)
		return ret;
	n = mq_nvme_rq_nr_cmds(ni, rq);
	if (!n) {			/* a flush with no write cache */
		mq_complete_request(rq, 0);
		return 0;
	}
	if (n > NVME_MAX_CMDS || n > uq->ring.sq.ring_entries ||
	    n > uq->ring.cq.ring_entries) {
		mq_complete_request(rq, nvme_sync(ud, rq));
		return 0;
	}
	if (!mq_uring_reserve(uq, (unsigned)n) || !nvme_cq_room(uq, n))
		return MQ_DEV_BUSY;
	atomic_store(&pdu->pending, (unsigned)n);
	atomic_store(&pdu->status, 0);
	for (unsigned i = 0; i < n; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&uq->ring);
		struct nvme_uring_cmd *cmd = (struct nvme_uring_cmd *)sqe->cmd;
		bool more;

		memset(sqe, 0, 2 * sizeof(*sqe));	/* SQE128 */
		more = mq_nvme_next_cmd(ni, rq, &c, cmd, &pdu->ranges[i]);
		MQ_ASSERT(more);	/* as many as mq_nvme_rq_nr_cmds said */
		(void)more;
		nvme_prep_sqe(ud, sqe, cmd, rq);
	}
	mq_uring_taken(uq, (unsigned)n);
	return 0;
}

static bool nvme_cqe(struct uring_dev *ud, struct mq_request *rq, int res)
{
	struct nvme_pdu *pdu = mq_rq_pdu(rq);

	if (res) {
		int err = nvme_res_errno(ud, rq, res), none = 0;

		atomic_compare_exchange_strong(&pdu->status, &none, err);
	}
	if (atomic_fetch_sub(&pdu->pending, 1) != 1)
		return false;
	rq->status = atomic_load(&pdu->status);
	return true;
}

/* Identify (CNS @cns) into a 4 KiB buffer: 0, -errno, or NVMe status. */
static int nvme_identify(int fd, uint32_t nsid, unsigned cns, void *buf)
{
	struct nvme_admin_cmd c = {
		.opcode = NVME_ADMIN_IDENTIFY, .nsid = nsid,
		.addr = (uint64_t)(uintptr_t)buf, .data_len = NVME_ID_SIZE,
		.cdw10 = cns,
	};
	int ret = ioctl(fd, NVME_IOCTL_ADMIN_CMD, &c);

	return ret < 0 ? -errno : ret;
}

static int nvme_probe_uring_cmd(const struct uring_dev *ud)
{
	struct io_uring_probe *p = io_uring_get_probe();
	bool ok = p && io_uring_opcode_supported(p, IORING_OP_URING_CMD);

	if (p)
		io_uring_free_probe(p);
	if (ok)
		return 0;
	fprintf(stderr, "mqfs: nvme %s: io_uring lacks URING_CMD (NVMe "
		"passthrough needs Linux 5.19 or later)\n", ud->dev.name);
	return -EOPNOTSUPP;
}

/* Identify both, with the error said; 0 or -errno. */
static int nvme_identify_all(struct uring_dev *ud, struct nvme_ns *ns)
{
	char why[200];
	void *id;
	int ret;

	if (posix_memalign(&id, 4096, NVME_ID_SIZE))
		return -ENOMEM;
	ret = nvme_identify(ud->fd, 0, 0x01, id);
	if (!ret) {
		mq_nvme_parse_id_ctrl(&ns->info, id);
		ret = nvme_identify(ud->fd, ns->info.nsid, 0x00, id);
	}
	if (ret) {
		fprintf(stderr, "mqfs: nvme %s: Identify: %s%s\n", ud->dev.name,
			ret < 0 ? strerror(-ret) : mq_nvme_status_name(ret),
			ret == -EPERM || ret == -EACCES ?
			" (admin commands need CAP_SYS_ADMIN)" : "");
		free(id);
		return ret < 0 ? ret : -EIO;
	}
	ret = mq_nvme_parse_id_ns(&ns->info, id, why, sizeof(why));
	free(id);
	if (ret)
		fprintf(stderr, "mqfs: nvme %s: %s\n", ud->dev.name, why);
	return ret;
}

static void nvme_fill_geometry(struct uring_dev *ud, struct nvme_ns *ns)
{
	struct mq_dev_geometry *g = &ud->dev.geo;
	const struct nvme_info *ni = &ns->info;

	memset(g, 0, sizeof(*g));
	g->logical_block_size = 1u << ni->lba_shift;
	g->physical_block_size = g->logical_block_size;
	g->size_bytes = ni->nlbas << ni->lba_shift;
	/* Bigger requests are cut into commands; this caps merging. */
	g->max_hw_sectors = (uint32_t)(((uint64_t)ni->max_lbas <<
					ni->lba_shift) >> MQ_SECTOR_SHIFT);
	/*
	 * Each bio is a command at least: 32 bios a request keep a merged
	 * request of small bios on the ring (NVME_MAX_CMDS).
	 */
	g->max_segments = NVME_MAX_CMDS / 2;
	g->nr_hw_queues = mq_nvme_sysfs_hw_queues(ns->sysfs);
	g->flush = true;		/* completes at once with no cache */
	g->fua = true;
	g->discard = ni->dsm;
	g->write_zeroes = ni->write_zeroes;
}

/*
 * Polled passthrough needs poll queues, and a kernel that polls the
 * request rather than its bio: up to Linux 6.4 the poll followed a bio
 * pointer the completion could free (a general protection fault in
 * bio_poll seen on Debian's 6.1 with this driver).
 */
static int nvme_check_iopoll(const struct uring_dev *ud,
			     const struct nvme_ns *ns)
{
	char rel[80];

	if (mq_nvme_sysfs_number(ns->sysfs, "queue/io_poll") != 1) {
		fprintf(stderr, "mqfs: nvme %s: iopoll needs poll queues (the "
			"nvme module's poll_queues=N)\n", ud->dev.name);
		return -EOPNOTSUPP;
	}
	if (!mq_nvme_kernel_at_least(6, 5, rel, sizeof(rel))) {
		fprintf(stderr, "mqfs: nvme %s: iopoll on NVMe passthrough needs "
			"Linux 6.5 or later (this is %s)\n", ud->dev.name, rel);
		return -EOPNOTSUPP;
	}
	return 0;
}

/*
 * Writing through ngXnY while someone mounts nvmeXnY would corrupt both:
 * hold the block device O_EXCL, as the file driver holds one, when a node
 * of it exists.  Its kernel limits come from there too.
 */
static int nvme_claim(struct uring_dev *ud, struct nvme_ns *ns)
{
	int fd = mq_nvme_sysfs_claim(ns->sysfs);

	if (fd >= 0) {
		ns->claim_fd = fd;
		return 0;
	}
	if (fd == -ENOENT)
		return 0;
	if (fd == -EBUSY)
		fprintf(stderr, "mqfs: nvme %s: its block device %s is in use\n",
			ud->dev.name, strrchr(ns->sysfs, '/') + 1);
	return fd;
}

/* The kernel's limits, from the namespace's block device. */
static void nvme_limits(struct nvme_ns *ns)
{
	struct nvme_kernel_limits k = {
		.max_bytes = mq_nvme_sysfs_kernel_max(ns->sysfs),
	};
	long long wz = mq_nvme_sysfs_number(ns->sysfs,
					    "queue/write_zeroes_max_bytes");
	long long dsm = mq_nvme_sysfs_number(ns->sysfs,
					     "queue/discard_max_hw_bytes");

	k.write_zeroes_max = wz > 0 ? (uint64_t)wz : 0;
	k.discard_max = dsm > 0 ? (uint64_t)dsm : 0;
	mq_nvme_set_limits(&ns->info, &k);
}

static int nvme_ns_setup(struct uring_dev *ud)
{
	struct nvme_ns *ns;
	struct stat st;
	char rel[80];
	int ret = nvme_probe_uring_cmd(ud), nsid;

	if (ret)
		return ret;
	if (fstat(ud->fd, &st))
		return -errno;
	nsid = ioctl(ud->fd, NVME_IOCTL_ID);
	if (nsid <= 0) {
		ret = nsid < 0 ? -errno : -ENODEV;
		fprintf(stderr, "mqfs: nvme %s: no namespace ID: %s\n",
			ud->dev.name, strerror(-ret));
		return ret;
	}
	ns = calloc(1, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	ud->nvme = ns;
	ns->claim_fd = -1;
	ns->info.nsid = (uint32_t)nsid;
	mq_nvme_sysfs_find(st.st_rdev, ns->sysfs, sizeof(ns->sysfs));
	if (ud->cfg.exclusive && (ret = nvme_claim(ud, ns)))
		return ret;		/* nvme_ns_free follows */
	ret = nvme_identify_all(ud, ns);
	if (ret)
		return ret;
	nvme_limits(ns);
	if (ud->cfg.iopoll && (ret = nvme_check_iopoll(ud, ns)))
		return ret;
	nvme_fill_geometry(ud, ns);
	ud->no_fixed_bufs = !mq_nvme_kernel_at_least(6, 1, rel, sizeof(rel));
	return 0;
}

static void nvme_ns_free(struct uring_dev *ud)
{
	if (ud->nvme && ud->nvme->claim_fd >= 0)
		close(ud->nvme->claim_fd);
	free(ud->nvme);
	ud->nvme = NULL;
}

static int nvme_in_use(const struct stat *st)
{
	char dir[PATH_MAX / 2];
	int fd;

	if (mq_nvme_sysfs_find(st->st_rdev, dir, sizeof(dir)))
		return 0;
	fd = mq_nvme_sysfs_claim(dir);
	if (fd >= 0)
		close(fd);
	return fd == -EBUSY;
}

static void nvme_ns_stats(struct uring_dev *ud,
			  struct mq_dev_queue_stats *s)
{
	struct nvme_ns *ns = ud->nvme;

	s->status_errors += atomic_load(&ns->status_errors);
	s->last_status = (uint32_t)atomic_load(&ns->last_status);
	s->sync_rqs += atomic_load(&ns->sync_rqs);
}

const struct uring_cmdset mq_uring_nvme_cmdset = {
	.name = "nvme",
	.ring_flags = IORING_SETUP_SQE128 | IORING_SETUP_CQE32,
	.pdu_size = sizeof(struct nvme_pdu),
	.fixed_chunk = NVME_FIXED_CHUNK,
	.serves = mq_uring_nvme_is_generic,
	.setup = nvme_ns_setup,
	.free = nvme_ns_free,
	.in_use = nvme_in_use,
	.stats = nvme_ns_stats,
	.queue = nvme_queue,
	.cqe = nvme_cqe,
};
