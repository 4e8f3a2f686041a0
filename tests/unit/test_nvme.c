/* SPDX-License-Identifier: MIT */
/*
 * test_nvme.c - Check unit tests for the NVMe command set of the io_uring
 * driver (sched/dev/nvme_cmd.c, nvme.c) without an NVMe device: this
 * kernel has no NVMe driver, so the real device is tested in a QEMU guest
 * (tests/nvme/, make check-nvme).
 *
 * Tested: Identify Controller (MDTS in 4 KiB units, 0 = no limit, ONCS
 * bits, VWC) and Identify Namespace (size, the LBA format FLBAS names,
 * its high index bits past 16 formats, refusals: inactive, metadata,
 * block size) parsed from crafted pages; the transfer limit from MDTS
 * and the kernel's, write-zeroes and DSM limits; checks (LBA alignment, optional commands); every
 * command of a request: a multi-bio request with a bio larger than a
 * command cut into pieces that cover each byte once, in order, with the
 * right SLBA / NLB (0's based) / FUA; flush with and without a volatile
 * cache; write-zeroes cut at 65,536 blocks; DSM ranges, cut at the
 * controller's range limit; NVMe status to
 * errno and names (DNR and More bits ignored); choosing the driver from
 * the path (a regular file is not an NVMe device; a char device that is
 * not one is refused, forced or not, with the reason).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "t_main.h"
#include "mqfs/blk.h"
#include "mqfs/dev/uring.h"
#include "dev/nvme_i.h"
#include "dev/uring_i.h"

static uint8_t g_id[NVME_ID_SIZE];

static void put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put_le32(uint8_t *p, uint32_t v)
{
	put_le16(p, (uint16_t)v);
	put_le16(p + 2, (uint16_t)(v >> 16));
}

static void put_le64(uint8_t *p, uint64_t v)
{
	put_le32(p, (uint32_t)v);
	put_le32(p + 4, (uint32_t)(v >> 32));
}

/* An Identify Namespace page: @nsze blocks, format @idx of @nlbaf + 1. */
static void id_ns(uint64_t nsze, unsigned nlbaf, unsigned idx,
		  unsigned lbads, unsigned ms)
{
	memset(g_id, 0, sizeof(g_id));
	put_le64(g_id, nsze);
	g_id[25] = (uint8_t)nlbaf;
	g_id[26] = (uint8_t)((idx & 0xf) | ((idx >> 4) & 3) << 5);
	for (unsigned i = 0; i <= nlbaf && i < 64; i++)
		put_le32(g_id + 128 + 4 * i, 9u << 16);	/* 512 B, no md */
	put_le32(g_id + 128 + 4 * idx, lbads << 16 | ms);
}

static struct nvme_info info_4k(uint32_t max_lbas)
{
	return (struct nvme_info){ .nsid = 1, .lba_shift = 12,
				   .nlbas = 1u << 20, .max_lbas = max_lbas,
				   .max_wz_lbas = NVME_MAX_NLB,
				   .max_dsm_lbas = NVME_DSM_MAX_LBAS,
				   .vwc = true, .dsm = true,
				   .write_zeroes = true };
}

START_TEST(id_ctrl_fields)
{
	struct nvme_info ni = { 0 };

	memset(g_id, 0, sizeof(g_id));
	g_id[77] = 5;
	put_le16(g_id + 520, 1u << 2 | 1u << 3);
	g_id[525] = 1;
	mq_nvme_parse_id_ctrl(&ni, g_id);
	ck_assert_uint_eq(ni.mdts_bytes, 128 * 1024);
	ck_assert(ni.dsm && ni.write_zeroes && ni.vwc);
	g_id[77] = 0;
	put_le16(g_id + 520, 1u << 2);
	g_id[525] = 0x6;		/* other VWC bits: no cache */
	mq_nvme_parse_id_ctrl(&ni, g_id);
	ck_assert_uint_eq(ni.mdts_bytes, 0);
	ck_assert(ni.dsm && !ni.write_zeroes && !ni.vwc);
}
END_TEST

START_TEST(id_ns_formats)
{
	struct nvme_info ni = { .nsid = 3 };
	char why[200] = "";

	id_ns(1000, 1, 1, 12, 0);
	ck_assert_int_eq(mq_nvme_parse_id_ns(&ni, g_id, why, sizeof(why)), 0);
	ck_assert_uint_eq(ni.nlbas, 1000);
	ck_assert_uint_eq(ni.lba_shift, 12);
	ck_assert_uint_eq(ni.lbaf, 1);
	/* More than 16 formats: FLBAS bits 6:5 are the index's bits 5:4. */
	id_ns(1u << 30, 40, 37, 9, 0);
	ck_assert_int_eq(mq_nvme_parse_id_ns(&ni, g_id, why, sizeof(why)), 0);
	ck_assert_uint_eq(ni.lbaf, 37);
	ck_assert_uint_eq(ni.lba_shift, 9);
	/* With 16 formats or fewer those bits are not the index's. */
	id_ns(1000, 2, 2, 12, 0);
	g_id[26] |= 1u << 5;
	ck_assert_int_eq(mq_nvme_parse_id_ns(&ni, g_id, why, sizeof(why)), 0);
	ck_assert_uint_eq(ni.lbaf, 2);
}
END_TEST

START_TEST(id_ns_refusals)
{
	struct nvme_info ni = { .nsid = 3 };
	char why[200];

	id_ns(0, 0, 0, 12, 0);
	ck_assert_int_eq(mq_nvme_parse_id_ns(&ni, g_id, why, sizeof(why)),
			 -EOPNOTSUPP);
	ck_assert_ptr_nonnull(strstr(why, "namespace 3 is inactive"));
	id_ns(1000, 1, 1, 12, 8);
	ck_assert_int_eq(mq_nvme_parse_id_ns(&ni, g_id, why, sizeof(why)),
			 -EOPNOTSUPP);
	ck_assert_ptr_nonnull(strstr(why, "8 metadata bytes"));
	ck_assert_ptr_nonnull(strstr(why, "nvme format"));
	id_ns(1000, 0, 0, 8, 0);
	ck_assert_int_eq(mq_nvme_parse_id_ns(&ni, g_id, why, sizeof(why)),
			 -EOPNOTSUPP);
	ck_assert_ptr_nonnull(strstr(why, "2^8"));
	id_ns(1000, 1, 1, 12, 0);
	g_id[25] = 0;			/* FLBAS names a format not listed */
	ck_assert_int_eq(mq_nvme_parse_id_ns(&ni, g_id, why, sizeof(why)),
			 -EOPNOTSUPP);
	ck_assert_ptr_nonnull(strstr(why, "LBA format 1"));
}
END_TEST

START_TEST(limits)
{
	struct nvme_info ni = { .lba_shift = 12, .mdts_bytes = 512 * 1024 };
	struct nvme_kernel_limits k = { 0 };

	mq_nvme_set_limits(&ni, &k);
	ck_assert_uint_eq(ni.max_lbas, 128);
	ck_assert_uint_eq(ni.max_wz_lbas, NVME_MAX_NLB);
	ck_assert_uint_eq(ni.max_dsm_lbas, NVME_DSM_MAX_LBAS);
	k.max_bytes = 126 * 4096;		/* the kernel's is smaller */
	mq_nvme_set_limits(&ni, &k);
	ck_assert_uint_eq(ni.max_lbas, 126);
	k.max_bytes = 8u << 20;			/* MDTS is smaller */
	mq_nvme_set_limits(&ni, &k);
	ck_assert_uint_eq(ni.max_lbas, 128);
	ni.mdts_bytes = 0;
	k.max_bytes = 0;
	mq_nvme_set_limits(&ni, &k);		/* nothing known: 128 KiB */
	ck_assert_uint_eq(ni.max_lbas, 32);
	/* The controller's WZSL and DMRSL, as the kernel reports them. */
	k.write_zeroes_max = 1u << 20;
	k.discard_max = 3u << 20;
	mq_nvme_set_limits(&ni, &k);
	ck_assert_uint_eq(ni.max_wz_lbas, 256);
	ck_assert_uint_eq(ni.max_dsm_lbas, 768);
	ni.lba_shift = 9;
	k.max_bytes = 1ull << 31;		/* NLB is 16 bits */
	k.write_zeroes_max = 1ull << 40;
	mq_nvme_set_limits(&ni, &k);
	ck_assert_uint_eq(ni.max_lbas, NVME_MAX_NLB);
	ck_assert_uint_eq(ni.max_wz_lbas, NVME_MAX_NLB);
}
END_TEST

START_TEST(checks)
{
	struct nvme_info ni = info_4k(32);
	static char buf[8192];
	struct mq_bio b = { .sector = 8, .size = 4096, .buf = buf };
	struct mq_request rq = { .op = MQ_OP_READ, .sector = 8,
				 .nr_bytes = 4096, .bio = &b, .nr_segs = 1 };

	ck_assert_int_eq(mq_nvme_rq_check(&ni, &rq), 0);
	b.sector = rq.sector = 9;		/* not on a 4 KiB block */
	ck_assert_int_eq(mq_nvme_rq_check(&ni, &rq), -EINVAL);
	b.sector = rq.sector = 8;
	b.size = rq.nr_bytes = 2048;
	ck_assert_int_eq(mq_nvme_rq_check(&ni, &rq), -EINVAL);
	rq.op = MQ_OP_DISCARD;
	rq.nr_bytes = 8192;
	rq.bio = NULL;
	ck_assert_int_eq(mq_nvme_rq_check(&ni, &rq), 0);
	ni.dsm = false;
	ck_assert_int_eq(mq_nvme_rq_check(&ni, &rq), -EOPNOTSUPP);
	rq.op = MQ_OP_WRITE_ZEROES;
	ni.write_zeroes = false;
	ck_assert_int_eq(mq_nvme_rq_check(&ni, &rq), -EOPNOTSUPP);
	rq.op = MQ_OP_FLUSH;
	rq.nr_bytes = 0;
	ck_assert_int_eq(mq_nvme_rq_check(&ni, &rq), 0);
}
END_TEST

/*
 * A write of two bios, 40 KiB and 8 KiB, with 16 KiB commands: 3 + 1
 * commands, each byte once, SLBA following the bios, FUA on each.
 */
START_TEST(rw_split)
{
	static char a[40960], b2[8192];
	struct nvme_info ni = info_4k(4);
	struct mq_bio b1 = { .sector = 80, .size = sizeof(a), .buf = a };
	struct mq_bio bb = { .sector = 160, .size = sizeof(b2), .buf = b2 };
	struct mq_request rq = { .op = MQ_OP_WRITE, .sector = 80,
				 .nr_bytes = sizeof(a) + sizeof(b2),
				 .cmd_flags = MQ_REQ_FUA, .bio = &b1,
				 .nr_segs = 2 };
	static const uint64_t slba[] = { 10, 14, 18, 20 };
	static const uint32_t len[] = { 16384, 16384, 8192, 8192 };
	struct nvme_cursor c = { 0 };
	struct nvme_uring_cmd cmd;
	struct nvme_dsm_range r;
	unsigned n = 0;

	b1.next = &bb;
	ck_assert_uint_eq(mq_nvme_rq_nr_cmds(&ni, &rq), 4);
	while (mq_nvme_next_cmd(&ni, &rq, &c, &cmd, &r)) {
		char *want = n < 3 ? a + 16384 * n : b2;

		ck_assert_uint_lt(n, 4);
		ck_assert_uint_eq(cmd.opcode, NVME_OP_WRITE);
		ck_assert_uint_eq(cmd.nsid, 1);
		ck_assert_uint_eq(cmd.addr, (uintptr_t)want);
		ck_assert_uint_eq(cmd.data_len, len[n]);
		ck_assert_uint_eq(cmd.cdw10, slba[n]);
		ck_assert_uint_eq(cmd.cdw11, 0);
		ck_assert_uint_eq(cmd.cdw12, (len[n] / 4096 - 1) | NVME_FUA);
		n++;
	}
	ck_assert_uint_eq(n, 4);
	/* Reads never carry FUA; high SLBA bits go to CDW11. */
	rq.op = MQ_OP_READ;
	b1.sector = rq.sector = (5ull << 32) << 3;
	b1.next = NULL;
	rq.nr_bytes = b1.size = 4096;
	memset(&c, 0, sizeof(c));
	ck_assert(mq_nvme_next_cmd(&ni, &rq, &c, &cmd, &r));
	ck_assert_uint_eq(cmd.opcode, NVME_OP_READ);
	ck_assert_uint_eq(cmd.cdw10, 0);
	ck_assert_uint_eq(cmd.cdw11, 5);
	ck_assert_uint_eq(cmd.cdw12, 0);
	ck_assert(!mq_nvme_next_cmd(&ni, &rq, &c, &cmd, &r));
}
END_TEST

START_TEST(flush_and_ranges)
{
	struct nvme_info ni = info_4k(32);
	struct mq_request rq = { .op = MQ_OP_FLUSH };
	struct nvme_cursor c = { 0 };
	struct nvme_uring_cmd cmd;
	struct nvme_dsm_range r;
	uint64_t lbas = 0;
	unsigned n = 0;

	ck_assert_uint_eq(mq_nvme_rq_nr_cmds(&ni, &rq), 1);
	ck_assert(mq_nvme_next_cmd(&ni, &rq, &c, &cmd, &r));
	ck_assert_uint_eq(cmd.opcode, NVME_OP_FLUSH);
	ck_assert_uint_eq(cmd.nsid, 1);
	ck_assert(!mq_nvme_next_cmd(&ni, &rq, &c, &cmd, &r));
	ni.vwc = false;			/* nothing to flush */
	memset(&c, 0, sizeof(c));
	ck_assert_uint_eq(mq_nvme_rq_nr_cmds(&ni, &rq), 0);
	ck_assert(!mq_nvme_next_cmd(&ni, &rq, &c, &cmd, &r));

	/* 200,000 blocks of zeroes from block 7: 65,536 at most each. */
	rq = (struct mq_request){ .op = MQ_OP_WRITE_ZEROES, .sector = 56,
				  .nr_bytes = 200000u * 4096 };
	memset(&c, 0, sizeof(c));
	ck_assert_uint_eq(mq_nvme_rq_nr_cmds(&ni, &rq), 4);
	while (mq_nvme_next_cmd(&ni, &rq, &c, &cmd, &r)) {
		ck_assert_uint_eq(cmd.opcode, NVME_OP_WRITE_ZEROES);
		ck_assert_uint_eq(cmd.cdw10, 7 + lbas);
		ck_assert_uint_eq(cmd.data_len, 0);
		lbas += cmd.cdw12 + 1;
		n++;
	}
	ck_assert_uint_eq(n, 4);
	ck_assert_uint_eq(lbas, 200000);

	rq.op = MQ_OP_DISCARD;
	memset(&c, 0, sizeof(c));
	ck_assert_uint_eq(mq_nvme_rq_nr_cmds(&ni, &rq), 1);
	ck_assert(mq_nvme_next_cmd(&ni, &rq, &c, &cmd, &r));
	ck_assert_uint_eq(cmd.opcode, NVME_OP_DSM);
	ck_assert_uint_eq(cmd.addr, (uintptr_t)&r);
	ck_assert_uint_eq(cmd.data_len, 16);
	ck_assert_uint_eq(cmd.cdw10, 0);
	ck_assert_uint_eq(cmd.cdw11, NVME_DSM_AD);
	ck_assert_uint_eq(r.slba, 7);
	ck_assert_uint_eq(r.nlb, 200000);
	ck_assert_uint_eq(r.cattr, 0);
	ck_assert(!mq_nvme_next_cmd(&ni, &rq, &c, &cmd, &r));

	/* A controller that deallocates 50,000 blocks a range at most. */
	ni.max_dsm_lbas = 50000;
	memset(&c, 0, sizeof(c));
	lbas = n = 0;
	ck_assert_uint_eq(mq_nvme_rq_nr_cmds(&ni, &rq), 4);
	while (mq_nvme_next_cmd(&ni, &rq, &c, &cmd, &r)) {
		ck_assert_uint_eq(r.slba, 7 + lbas);
		ck_assert_uint_le(r.nlb, 50000);
		lbas += r.nlb;
		n++;
	}
	ck_assert_uint_eq(n, 4);
	ck_assert_uint_eq(lbas, 200000);
}
END_TEST

START_TEST(statuses)
{
	ck_assert_int_eq(mq_nvme_status_errno(0), 0);
	ck_assert_int_eq(mq_nvme_status_errno(-EAGAIN), -EAGAIN);
	ck_assert_int_eq(mq_nvme_status_errno(0x4080), -ERANGE);	/* DNR */
	ck_assert_str_eq(mq_nvme_status_name(0x4080), "LBA out of range");
	ck_assert_int_eq(mq_nvme_status_errno(0x2281), -EIO);	/* More */
	ck_assert_int_eq(mq_nvme_status_errno(0x0002), -EINVAL);
	ck_assert_int_eq(mq_nvme_status_errno(0x0001), -EOPNOTSUPP);
	ck_assert_int_eq(mq_nvme_status_errno(0x0081), -ENOSPC);
	ck_assert_int_eq(mq_nvme_status_errno(0x0182), -EROFS);
	ck_assert_int_eq(mq_nvme_status_errno(0x0284), -EILSEQ);
	ck_assert_int_eq(mq_nvme_status_errno(0x03ff), -EIO);	/* unknown */
	ck_assert_str_eq(mq_nvme_status_name(0x03ff), "status");
}
END_TEST

/* The driver from the path: only an NVMe generic device is nvme. */
START_TEST(driver_from_path)
{
	struct mq_uring_config cfg = { .driver = MQ_URING_DRIVER_AUTO };
	struct mq_dev *dev = NULL;
	char path[] = "/var/tmp/test_nvme.XXXXXX";
	struct stat st;
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 1 << 20), 0);
	close(fd);
	ck_assert_int_eq(stat("/dev/null", &st), 0);
	ck_assert(!mq_uring_nvme_is_generic(&st));
	ck_assert_int_eq(mq_uring_open("/dev/null", &cfg, &dev), -ENOTBLK);
	ck_assert_ptr_nonnull(strstr(mq_uring_open_hint(-ENOTBLK), "ngXnY"));
	/* Forced: a char device is asked for its namespace, and says no. */
	cfg.driver = MQ_URING_DRIVER_NVME;
	ck_assert_int_eq(mq_uring_open("/dev/null", &cfg, &dev), -ENOTTY);
	ck_assert_int_eq(mq_uring_open(path, &cfg, &dev), -ENOTBLK);
	cfg.driver = MQ_URING_DRIVER_AUTO;
	ck_assert_int_eq(mq_uring_open(path, &cfg, &dev), 0);
	ck_assert_str_eq(dev->ops->name, "uring");
	mq_dev_close(dev);
	unlink(path);
}
END_TEST

static Suite *nvme_suite(void)
{
	Suite *s = suite_create("nvme");
	TCase *tc = t_tcase(s, "identify", 10);

	tcase_add_test(tc, id_ctrl_fields);
	tcase_add_test(tc, id_ns_formats);
	tcase_add_test(tc, id_ns_refusals);
	tcase_add_test(tc, limits);
	tc = t_tcase(s, "commands", 10);
	tcase_add_test(tc, checks);
	tcase_add_test(tc, rw_split);
	tcase_add_test(tc, flush_and_ranges);
	tcase_add_test(tc, statuses);
	tc = t_tcase(s, "open", 10);
	tcase_add_test(tc, driver_from_path);
	return s;
}

T_MAIN(nvme_suite)
