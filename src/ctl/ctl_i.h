/* SPDX-License-Identifier: MIT */
/*
 * ctl_i.h - mqfsctl's commands (one file each) and what they share:
 * the mount a path lies in, checked to be an mqfs mount.
 */
#ifndef MQFS_CTL_I_H
#define MQFS_CTL_I_H

#include <limits.h>
#include <stdio.h>

#include "mqfs/cli.h"

#define CTL_PROG	"mqfsctl"
#define CTL_DIR		".mqfs"
/* Exit codes: a refused value or an unreadable mount, a usage error. */
#define CTL_FAIL	1
#define CTL_USAGE	2

/* Room for a control file's path under a mount point. */
#define CTL_PATH_MAX	(PATH_MAX + 128)

/*
 * @out (CTL_PATH_MAX bytes) = "@mnt/.mqfs/" and printf(@fmt, ...): 0,
 * or -ENAMETOOLONG (the path would not fit).
 */
int ctl_path(char *out, const char *mnt, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* fopen() of @mnt/.mqfs/@file; NULL with errno set. */
FILE *ctl_open(const char *mnt, const char *file, const char *mode);

/*
 * The mqfs mount @path lies in (any path inside it) in *@m: 0, or -1
 * after a message naming @path ("not an mqfs mount", or why it cannot
 * be resolved).
 */
int ctl_find_mount(const char *path, struct mqfs_cli_mount *m);

/* stat PATH [INTERVAL [COUNT]], top PATH, set PATH key=value...: their
 * arguments after the command's name; the exit code. */
int ctl_cmd_stat(int argc, char **argv);
int ctl_cmd_top(int argc, char **argv);
int ctl_cmd_set(int argc, char **argv);

#endif /* MQFS_CTL_I_H */
