/* SPDX-License-Identifier: MIT */
/*
 * mqfsctl - statistics and tunables of a mounted mqfs, through its
 * control surface MNT/.mqfs (see mqfs(8), CONTROL SURFACE):
 *
 *   mqfsctl stat PATH [INTERVAL [COUNT]]  iostat -x style figures, then the
 *                                         priority counts and the transport
 *   mqfsctl set PATH key=value...         queue/ or queue/iosched/ files
 *   mqfsctl top PATH                      stat, refreshed every second
 *
 * PATH is the mount point or any path inside the mount.  This file
 * parses the command line and finds the mount; ctl_stat.c and ctl_set.c
 * carry the commands.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ctl_i.h"

static void usage(FILE *out)
{
	fprintf(out, "Usage: " CTL_PROG " stat PATH [INTERVAL [COUNT]]\n"
		     "       " CTL_PROG " set PATH key=value...\n"
		     "       " CTL_PROG " top PATH\n"
		     "PATH is an mqfs mount point or any path inside one.\n"
		     "  stat  I/O figures over INTERVAL seconds [1], COUNT "
		     "times [1]\n"
		     "  set   change scheduler settings (see mqfs(8))\n"
		     "  top   the figures of the last second, every second\n"
		     "  -h, --help     this text\n"
		     "  -V, --version  the version\n");
}

int ctl_path(char *out, const char *mnt, const char *fmt, ...)
{
	int n = snprintf(out, CTL_PATH_MAX, "%s/" CTL_DIR "/", mnt);
	va_list ap;

	if (n < 0 || n >= CTL_PATH_MAX)
		return -ENAMETOOLONG;
	va_start(ap, fmt);
	n = vsnprintf(out + n, (size_t)(CTL_PATH_MAX - n), fmt, ap);
	va_end(ap);
	return n < 0 || strlen(out) >= CTL_PATH_MAX - 1 ? -ENAMETOOLONG : 0;
}

FILE *ctl_open(const char *mnt, const char *file, const char *mode)
{
	char path[CTL_PATH_MAX];

	if (ctl_path(path, mnt, "%s", file)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	return fopen(path, mode);
}

int ctl_find_mount(const char *path, struct mqfs_cli_mount *m)
{
	int err = mqfs_cli_mount_of(path, m);

	if (err) {
		fprintf(stderr, CTL_PROG ": %s: %s\n", path, strerror(-err));
		return -1;
	}
	if (!mqfs_cli_is_mqfs(m)) {
		fprintf(stderr, CTL_PROG ": %s: not an mqfs mount\n", path);
		return -1;
	}
	return 0;
}

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
} ctl_cmds[] = {
	{ "stat", ctl_cmd_stat },
	{ "set", ctl_cmd_set },
	{ "top", ctl_cmd_top },
};

static const struct option ctl_long_opts[] = {
	MQFS_CLI_LONG_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

int main(int argc, char **argv)
{
	int c;

	/* "+": options end at the command (stat's INTERVAL may look like
	 * one to getopt otherwise). */
	opterr = 0;
	c = getopt_long(argc, argv, "+:hV", ctl_long_opts, NULL);
	if (c != -1)
		return mqfs_cli_std_option(CTL_PROG, CTL_USAGE, c, argv, usage);
	if (optind >= argc)
		return mqfs_cli_usage_error(CTL_PROG, CTL_USAGE,
					    "no command given");
	for (size_t i = 0; i < sizeof(ctl_cmds) / sizeof(ctl_cmds[0]); i++)
		if (!strcmp(argv[optind], ctl_cmds[i].name))
			return ctl_cmds[i].run(argc - optind - 1,
					       argv + optind + 1);
	return mqfs_cli_usage_error(CTL_PROG, CTL_USAGE, "unknown command "
				    "'%s'", argv[optind]);
}
