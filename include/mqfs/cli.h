/* SPDX-License-Identifier: MIT */
/*
 * cli.h - what every mqfs program says the same way on its command line
 * (src/tools/cli.c, libmqcli.a): the version line, a usage error with
 * its "Try 'PROG --help'" hint, and the mount that holds a path or a
 * device, read from /proc/self/mountinfo.
 *
 * The manners are e2fsprogs' and util-linux's: --help goes to stdout
 * and exits 0; -V/--version prints "PROG (mqfs) VERSION" and exits 0; a
 * usage error is one line naming the program and the problem, then the
 * hint, on stderr, with the program's own usage exit code.
 */
#ifndef MQFS_CLI_H
#define MQFS_CLI_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>

/* Print "@prog (mqfs) VERSION" on stdout. */
void mqfs_cli_version(const char *prog);

/*
 * "@prog: MESSAGE" (printf-style @fmt) and "Try '@prog --help' for more
 * information." on stderr; returns @code, the caller's usage exit code.
 */
int mqfs_cli_usage_error(const char *prog, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * A getopt()/getopt_long() error, for an optstring that starts with ':'
 * and opterr = 0 (so getopt says nothing itself): @c is what getopt
 * returned ('?' or ':'), @argv the vector it parsed.  Returns @code.
 */
int mqfs_cli_bad_option(const char *prog, int code, int c, char **argv);

/*
 * The getopt_long() entries of --help and --version, for the end of a
 * program's table (before its { NULL } terminator).
 */
#define MQFS_CLI_LONG_OPTIONS \
	{ "help", 0, NULL, 'h' }, { "version", 0, NULL, 'V' }

/*
 * What every program does with getopt's answer @c when it is none of its
 * own options: 'h' prints @help to stdout and 'V' the version, then the
 * program exits 0; '?' or ':' is a usage error (mqfs_cli_bad_option,
 * returns @code).
 */
int mqfs_cli_std_option(const char *prog, int code, int c, char **argv,
			void (*help)(FILE *));

/*
 * Print @text on @f from column @col (where the caller's output stands),
 * its words wrapped to further lines indented to @col so that no line
 * passes 80 columns, and end the line.
 */
void mqfs_cli_wrap(FILE *f, const char *text, int col);

/* One line of /proc/self/mountinfo, its escapes (\040) undone. */
struct mqfs_cli_mount {
	char dir[PATH_MAX];		/* mount point */
	char type[64];			/* "fuse.mqfs", "ext4" ... */
	char source[PATH_MAX];		/* an mqfs mount's device */
};

/*
 * The mount @path lies in (the deepest mount point above its real
 * path): 0, or -errno (the path cannot be resolved, no mountinfo).
 */
int mqfs_cli_mount_of(const char *path, struct mqfs_cli_mount *m);

/*
 * An mqfs mount of device @dev (its real path, as the daemon names its
 * source): 1 with *@m filled, 0 when there is none, or -errno.
 */
int mqfs_cli_mount_of_device(const char *dev, struct mqfs_cli_mount *m);

/* Is @m served by the mqfs daemon? */
bool mqfs_cli_is_mqfs(const struct mqfs_cli_mount *m);

#endif /* MQFS_CLI_H */
