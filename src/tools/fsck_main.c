// SPDX-License-Identifier: MIT
/*
 * fsck.mqfs - check (and repair) an mqfs filesystem.
 *
 *   fsck.mqfs [-n|-y|-p|-a] [-f] [-v] [-C fd] DEVICE
 *
 * The checker is the library's (mqfs_fsck, src/fs/fsck.c); this front end
 * parses e2fsck's options and returns e2fsck's exit codes: 0 clean,
 * 1 errors fixed, 4 errors left, 8 operational error, 16 usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mqfs/blk.h"
#include "mqfs/cli.h"
#include "mqfs/fs.h"
#include "tools_i.h"

#define PROG "fsck.mqfs"
#define FSCK_USAGE 16
/* Below this many bytes a tty gets no progress lines unless -C asks. */
#define FSCK_PROGRESS_MIN (1ull << 30)

struct fsck_args {
	struct mqfs_fsck_opts o;
	bool mode_set;
	int progress_fd;		/* -C, -1: not given */
	const char *path;
};

static void fsck_usage(FILE *out)
{
	fprintf(out,
		"Usage: " PROG " [-n|-y|-p|-a] [-f] [-v] [-b block] [-C fd] "
		"DEVICE\n"
		"  -n     check only, change nothing (the default)\n"
		"  -y     repair every problem found\n"
		"  -p/-a  repair what is safe without questions, else exit 4\n"
		"  -f     check even when the filesystem is marked clean\n"
		"  -v     verbose\n"
		"  -b blk work from the superblock copy in block blk (with\n"
		"         -y or -p block 0 is rewritten from it)\n"
		"  -C fd  progress lines (percentages) on stderr\n"
		"  -h, --help     this text\n"
		"  -V, --version  the version\n"
		"Exit: 0 clean, 1 errors fixed, 4 errors left uncorrected,\n"
		"      8 operational error, 16 usage error.\n");
}

static int fsck_set_mode(struct fsck_args *a, enum mqfs_fsck_mode m)
{
	if (a->mode_set && a->o.mode != m) {
		fprintf(stderr, PROG ": only one of -n, -y and -p/-a\n");
		return -EINVAL;
	}
	a->o.mode = m;
	a->mode_set = true;
	return 0;
}

static const struct option fsck_long_opts[] = {
	MQFS_CLI_LONG_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

static int fsck_parse(int argc, char **argv, struct fsck_args *a)
{
	unsigned long long blk;
	char *end;
	long fd;
	int c;

	a->o.mode = MQFS_FSCK_NO;
	a->progress_fd = -1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":nypafvb:C:hV", fsck_long_opts,
				NULL)) != -1) {
		switch (c) {
		case 'n':
			if (fsck_set_mode(a, MQFS_FSCK_NO))
				return -EINVAL;
			break;
		case 'y':
			if (fsck_set_mode(a, MQFS_FSCK_YES))
				return -EINVAL;
			break;
		case 'p':
		case 'a':
			if (fsck_set_mode(a, MQFS_FSCK_PREEN))
				return -EINVAL;
			break;
		case 'f':
			a->o.force = true;
			break;
		case 'v':
			a->o.verbose = true;
			break;
		case 'b':
			errno = 0;
			blk = strtoull(optarg, &end, 10);
			if (*end || !*optarg || errno || !blk ||
			    optarg[0] == '-') {
				fprintf(stderr, PROG ": -b: invalid block '%s' "
					"(a superblock copy's block number)\n",
					optarg);
				return -EINVAL;
			}
			a->o.sb_block = blk;
			a->o.force = true;
			break;
		case 'C':
			fd = strtol(optarg, &end, 10);
			if (*end || fd < 0 || fd > 1024) {
				fprintf(stderr, PROG ": -C: invalid fd '%s'\n",
					optarg);
				return -EINVAL;
			}
			a->progress_fd = (int)fd;
			break;
		default:
			mqfs_cli_std_option(PROG, FSCK_USAGE, c, argv,
					    fsck_usage);
			return -EINVAL;
		}
	}
	a->path = tool_operand(PROG, FSCK_USAGE, "no device given", argc,
			       argv);
	return a->path ? 0 : -EINVAL;
}

int main(int argc, char **argv)
{
	struct fsck_args a = { 0 };
	struct tool_dev td;
	int ret;

	if (fsck_parse(argc, argv, &a))
		return FSCK_USAGE;
	if (tool_open(PROG, a.path, a.o.mode == MQFS_FSCK_NO ?
		      TOOL_READ_SHARED : TOOL_EXCLUSIVE, &td))
		return MQFS_FSCK_ERROR;
	/* -C asks for progress; a terminal gets it on large devices. */
	a.o.progress = a.progress_fd >= 0 ||
		(isatty(STDERR_FILENO) &&
		 mq_queue_size_bytes(td.q) >= FSCK_PROGRESS_MIN);
	ret = mqfs_fsck(td.q, &a.o);
	tool_close(&td);
	if (ret < 0) {
		fprintf(stderr, PROG ": %s: %s\n", a.path, strerror(-ret));
		return MQFS_FSCK_ERROR;
	}
	return ret;
}
