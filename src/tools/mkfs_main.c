// SPDX-License-Identifier: MIT
/*
 * mkfs.mqfs - make an mqfs filesystem on a device or an image file.
 *
 *   mkfs.mqfs [-L label] [-U uuid] [-N inodes] [-J journal-size]
 *             [-E extended-options] [-s size] [-f] [-q] DEVICE|IMAGE
 *
 * The formatting itself is the library's (mqfs_mkfs); this front end
 * parses options, creates the image file when asked, refuses to destroy
 * an existing filesystem without -f, and prints what it made.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "mqfs/blk.h"
#include "mqfs/cli.h"
#include "mqfs/format.h"
#include "mqfs/fs.h"
#include "tools_i.h"

#define PROG "mkfs.mqfs"
#define MKFS_USAGE 1
/* Bytes the signature probe reads: up to btrfs's magic at 65600. */
#define PROBE_BLOCKS 17u

struct mkfs_args {
	struct mqfs_mkfs_opts o;
	uint8_t uuid[16];
	uint64_t size;			/* -s, 0: not given */
	bool force, quiet;
	const char *path;
};

static void mkfs_usage(FILE *out)
{
	fprintf(out,
		"Usage: " PROG " [-L label] [-U uuid] [-N inodes] "
		"[-J journal-size] [-E opts]\n"
		"                 [-s size] [-f] [-q] DEVICE|IMAGE\n"
		"  -L label   volume label (at most 63 bytes)\n"
		"  -U uuid    volume UUID (default: random)\n"
		"  -N inodes  number of inodes (default: one per 16 KiB)\n"
		"  -J size    journal size (default: 1/64 of the fs, 1-32 MiB;\n"
		"             at most a quarter of the fs)\n"
		"  -E lazy_ags=0  write every allocation group now (an image\n"
		"             older mqfs can read; default 1: on first use)\n"
		"  -s size    filesystem size; creates IMAGE if it is missing\n"
		"  -f         overwrite an existing filesystem signature\n"
		"  -q         quiet\n"
		"  -h, --help     this text\n"
		"  -V, --version  the version\n"
		"Sizes take K, M, G or T suffixes (powers of 1024).\n");
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* 8-4-4-4-12 hex digits, the dashes where uuid(3) puts them. */
static int mkfs_parse_uuid(const char *s, uint8_t out[16])
{
	unsigned n = 0;

	if (strlen(s) != 36)
		return -EINVAL;
	for (unsigned i = 0; i < 36; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;
		int hi, lo;

		if (dash) {
			if (s[i] != '-')
				return -EINVAL;
			continue;
		}
		hi = hexval(s[i]);
		lo = hexval(s[i + 1]);
		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[n++] = (uint8_t)(hi << 4 | lo);
		i++;
	}
	return 0;
}

static int mkfs_size_arg(char opt, const char *s, uint64_t *out)
{
	if (tool_parse_size(s, out) || !*out) {
		fprintf(stderr, PROG ": -%c: invalid size '%s'\n", opt, s);
		return -EINVAL;
	}
	return 0;
}

static const struct option mkfs_long_opts[] = {
	MQFS_CLI_LONG_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

/* -E: comma-separated extended options (only lazy_ags=0|1 for now). */
static int mkfs_parse_extended(char *s, struct mkfs_args *a)
{
	char *save = NULL;

	for (char *o = strtok_r(s, ",", &save); o;
	     o = strtok_r(NULL, ",", &save)) {
		if (!strcmp(o, "lazy_ags=0") || !strcmp(o, "lazy_ags=1")) {
			a->o.init_all_ags = o[9] == '0';
			continue;
		}
		fprintf(stderr, PROG ": -E: unknown extended option '%s'\n", o);
		return -EINVAL;
	}
	return 0;
}

static int mkfs_parse(int argc, char **argv, struct mkfs_args *a)
{
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":L:U:N:J:E:s:fqhV",
				mkfs_long_opts, NULL)) != -1) {
		switch (c) {
		case 'L':
			if (strlen(optarg) >= sizeof(((struct mqfs_super *)0)->label)) {
				fprintf(stderr, PROG ": -L: label longer than 63 bytes\n");
				return -EINVAL;
			}
			a->o.label = optarg;
			break;
		case 'U':
			if (mkfs_parse_uuid(optarg, a->uuid)) {
				fprintf(stderr, PROG ": -U: invalid UUID '%s'\n",
					optarg);
				return -EINVAL;
			}
			a->o.uuid = a->uuid;
			break;
		case 'N':
			if (mkfs_size_arg('N', optarg, &a->o.inodes))
				return -EINVAL;
			break;
		case 'J':
			if (mkfs_size_arg('J', optarg, &a->o.journal_bytes))
				return -EINVAL;
			break;
		case 'E':
			if (mkfs_parse_extended(optarg, a))
				return -EINVAL;
			break;
		case 's':
			if (mkfs_size_arg('s', optarg, &a->size))
				return -EINVAL;
			break;
		case 'f':
			a->force = true;
			break;
		case 'q':
			a->quiet = true;
			break;
		default:
			mqfs_cli_std_option(PROG, MKFS_USAGE, c, argv,
					    mkfs_usage);
			return -EINVAL;
		}
	}
	a->path = tool_operand(PROG, MKFS_USAGE, "no device or image given",
			       argc, argv);
	if (!a->path)
		return -EINVAL;
	if (a->size && a->size < (uint64_t)MQFS_MIN_BLOCKS * MQFS_BLOCK_SIZE) {
		fprintf(stderr, PROG ": -s: at least %u KiB\n",
			MQFS_MIN_BLOCKS * MQFS_BLOCK_SIZE / 1024);
		return -EINVAL;
	}
	a->o.size_bytes = a->size & ~(uint64_t)(MQFS_BLOCK_SIZE - 1);
	return 0;
}

/*
 * Make sure @path exists: create it (O_EXCL) and size it with
 * ftruncate when it does not and -s was given.  *created tells the
 * caller to remove it again on failure.
 */
static int mkfs_prepare_image(const struct mkfs_args *a, bool *created)
{
	struct stat st;
	int fd;

	*created = false;
	if (!stat(a->path, &st)) {
		if (S_ISREG(st.st_mode) && a->o.size_bytes > (uint64_t)st.st_size) {
			fprintf(stderr, PROG ": %s: -s %" PRIu64 " is larger "
				"than the file (%lld bytes)\n", a->path,
				a->size, (long long)st.st_size);
			return -EINVAL;
		}
		return 0;
	}
	if (errno != ENOENT) {
		int err = -errno;	/* before printing changes it */

		fprintf(stderr, PROG ": %s: %s\n", a->path, strerror(-err));
		return err;
	}
	if (!a->size) {
		fprintf(stderr, PROG ": %s does not exist (give -s SIZE to "
			"create an image file)\n", a->path);
		return -ENOENT;
	}
	fd = open(a->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		int err = -errno;	/* before printing changes it */

		fprintf(stderr, PROG ": cannot create %s: %s\n", a->path,
			strerror(-err));
		return err;
	}
	*created = true;
	if (ftruncate(fd, (off_t)a->o.size_bytes)) {
		int err = -errno;

		fprintf(stderr, PROG ": %s: cannot set the size: %s\n",
			a->path, strerror(-err));
		close(fd);
		return err;
	}
	close(fd);
	return 0;
}

/* Name the filesystem (or other) signature found in the first blocks. */
static const char *mkfs_signature(const uint8_t *p, size_t len)
{
	const struct mqfs_blk_hdr *h = (const void *)p;

	if (len >= 4096 && h->magic == MQFS_MAGIC)
		return "an mqfs filesystem";
	if (len >= 1082 && p[1080] == 0x53 && p[1081] == 0xef)
		return "an ext2/ext3/ext4 filesystem";
	if (len >= 4 && !memcmp(p, "XFSB", 4))
		return "an XFS filesystem";
	if (len >= 6 && !memcmp(p, "LUKS\xba\xbe", 6))
		return "a LUKS volume";
	if (len >= 4096 && !memcmp(p + 4086, "SWAPSPACE2", 10))
		return "swap space";
	if (len >= 65608 && !memcmp(p + 65600, "_BHRfS_M", 8))
		return "a btrfs filesystem";
	return NULL;
}

/* Refuse to overwrite a signature without -f.  0 or -EEXIST / -errno. */
static int mkfs_probe(struct mq_queue *q, const struct mkfs_args *a)
{
	uint64_t blocks = mq_queue_size_bytes(q) / MQFS_BLOCK_SIZE;
	uint32_t n = blocks < PROBE_BLOCKS ? (uint32_t)blocks : PROBE_BLOCKS;
	const char *what;
	void *buf;
	int ret;

	if (!n)
		return 0;
	if (posix_memalign(&buf, MQFS_BLOCK_SIZE, (size_t)n * MQFS_BLOCK_SIZE))
		return -ENOMEM;
	ret = tool_read_blocks(q, 0, buf, n);
	if (ret) {
		fprintf(stderr, PROG ": %s: read error: %s\n", a->path,
			strerror(-ret));
		free(buf);
		return ret;
	}
	what = mkfs_signature(buf, (size_t)n * MQFS_BLOCK_SIZE);
	free(buf);
	if (!what)
		return 0;
	if (a->force) {
		if (!a->quiet)
			printf("%s: overwriting %s (-f)\n", a->path, what);
		return 0;
	}
	fprintf(stderr, PROG ": %s contains %s; use -f to overwrite it\n",
		a->path, what);
	return -EEXIST;
}

static void mkfs_print(const struct mkfs_args *a,
		       const struct mqfs_mkfs_report *r)
{
	const uint8_t *u = r->uuid;
	char h[32];

	printf("Created an mqfs filesystem on %s\n", a->path);
	printf("  size:     %s (%" PRIu64 " blocks of %u bytes)\n",
	       tool_human(r->block_count * MQFS_BLOCK_SIZE, h, sizeof(h)),
	       r->block_count, MQFS_BLOCK_SIZE);
	printf("  groups:   %u of up to %u blocks\n", r->ag_count, r->ag_blocks);
	printf("  inodes:   %" PRIu64 "\n", r->inode_count);
	printf("  journal:  %s (%u blocks)\n",
	       tool_human((uint64_t)r->journal_blocks * MQFS_BLOCK_SIZE, h,
			  sizeof(h)), r->journal_blocks);
	printf("  uuid:     %02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
	       "%02x%02x%02x%02x%02x%02x\n", u[0], u[1], u[2], u[3], u[4],
	       u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
	       u[14], u[15]);
	printf("  label:    %s\n", a->o.label ? a->o.label : "(none)");
	printf("  superblock copies (fsck.mqfs -b):");
	for (unsigned i = 0; i < r->nr_sb_copies && i < MQFS_REPORT_COPIES;
	     i++)
		printf(" %" PRIu64, r->sb_copy[i]);
	printf("%s\n", r->nr_sb_copies > MQFS_REPORT_COPIES ? " ..." : "");
}

/* -J larger than a filesystem of @size_bytes can hold: refused. */
static int mkfs_check_journal(const struct mkfs_args *a, uint64_t size_bytes)
{
	uint64_t max = mqfs_mkfs_journal_max(size_bytes, &a->o);
	char want[32], most[32], fs[32];

	if (a->o.journal_bytes <= max)
		return 0;
	fprintf(stderr, PROG ": %s: -J %s is too large: a filesystem of %s "
		"holds a journal of at most %s\n", a->path,
		tool_human(a->o.journal_bytes, want, sizeof(want)),
		tool_human(size_bytes, fs, sizeof(fs)),
		tool_human(max, most, sizeof(most)));
	return -EINVAL;
}

/*
 * An image file is sparse: the host filesystem gives it blocks as the
 * filesystem in it is used.  Say so when the host could not hold all
 * of @bytes (what is allocated now plus what is free), as the
 * filesystem would then fail with I/O errors once it is that full.
 */
static void mkfs_warn_space(const struct mkfs_args *a, uint64_t bytes)
{
	struct statvfs vfs;
	struct stat st;
	uint64_t room;
	char h1[32], h2[32];

	if (a->quiet || stat(a->path, &st) || !S_ISREG(st.st_mode) ||
	    statvfs(a->path, &vfs))
		return;
	room = (uint64_t)st.st_blocks * 512 +
	       (uint64_t)vfs.f_bavail * vfs.f_frsize;
	if (room >= bytes)
		return;
	fprintf(stderr, PROG ": warning: %s is a sparse image of %s, but its "
		"filesystem has room for %s of it: writes past that will fail\n",
		a->path, tool_human(bytes, h1, sizeof(h1)),
		tool_human(room, h2, sizeof(h2)));
}

/* Check -s and -J against the device, probe, format.  0 or -errno. */
static int mkfs_run(struct mq_queue *q, const struct mkfs_args *a,
		    bool created)
{
	struct mqfs_mkfs_report rep = { 0 };
	uint64_t dev_bytes = mq_queue_size_bytes(q);
	int ret;

	if (a->o.size_bytes > dev_bytes) {
		fprintf(stderr, PROG ": %s: -s %" PRIu64 " is larger than the "
			"device (%" PRIu64 " bytes)\n", a->path, a->size,
			dev_bytes);
		return -EINVAL;
	}
	ret = mkfs_check_journal(a, a->o.size_bytes ? a->o.size_bytes
						    : dev_bytes);
	if (ret)
		return ret;
	if (!created && (ret = mkfs_probe(q, a)))
		return ret;
	mkfs_warn_space(a, a->o.size_bytes ? a->o.size_bytes : dev_bytes);
	ret = mqfs_mkfs(q, &a->o, &rep);
	if (ret) {
		fprintf(stderr, PROG ": %s: %s\n", a->path, strerror(-ret));
		return ret;
	}
	if (!a->quiet)
		mkfs_print(a, &rep);
	return 0;
}

int main(int argc, char **argv)
{
	struct mkfs_args a = { 0 };
	struct tool_dev td;
	bool created;
	int ret;

	if (mkfs_parse(argc, argv, &a))
		return MKFS_USAGE;
	if (mkfs_prepare_image(&a, &created))
		return 1;
	ret = tool_open(PROG, a.path, TOOL_EXCLUSIVE, &td);
	if (!ret) {
		ret = mkfs_run(td.q, &a, created);
		tool_close(&td);
	}
	if (ret && created)
		unlink(a.path);
	return ret ? 1 : 0;
}
