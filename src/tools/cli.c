// SPDX-License-Identifier: MIT
/*
 * cli.c - the command-line manners every mqfs program shares (see
 * include/mqfs/cli.h): the version line, usage errors, and mounts found
 * in /proc/self/mountinfo.
 *
 * Mounts are read from mountinfo rather than by stat()ing the mount
 * point: a stat of a FUSE mount whose daemon is busy or gone waits or
 * fails, and the tools must answer at once.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "mqfs/cli.h"

#define CLI_MOUNTINFO	"/proc/self/mountinfo"
/* The type the daemon mounts with (subtype=mqfs, as mount -t fuse.mqfs). */
#define CLI_MQFS_TYPE	"fuse.mqfs"

void mqfs_cli_version(const char *prog)
{
	printf("%s (mqfs) %s\n", prog, PACKAGE_VERSION);
}

static void cli_try_help(const char *prog)
{
	fprintf(stderr, "Try '%s --help' for more information.\n", prog);
}

int mqfs_cli_usage_error(const char *prog, int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	cli_try_help(prog);
	return code;
}

int mqfs_cli_bad_option(const char *prog, int code, int c, char **argv)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "";

	if (c == ':' && optopt)
		return mqfs_cli_usage_error(prog, code, "option requires an "
					    "argument -- '%c'", optopt);
	if (c == ':')
		return mqfs_cli_usage_error(prog, code, "option '%s' requires "
					    "an argument", arg);
	if (optopt)
		return mqfs_cli_usage_error(prog, code, "invalid option -- "
					    "'%c'", optopt);
	return mqfs_cli_usage_error(prog, code, "unrecognized option '%s'",
				    arg);
}

int mqfs_cli_std_option(const char *prog, int code, int c, char **argv,
			void (*help)(FILE *))
{
	if (c == 'h') {
		help(stdout);
		exit(0);
	}
	if (c == 'V') {
		mqfs_cli_version(prog);
		exit(0);
	}
	return mqfs_cli_bad_option(prog, code, c, argv);
}

void mqfs_cli_wrap(FILE *f, const char *text, int col)
{
	int at = col;

	text += strspn(text, " ");
	while (*text) {
		int len = (int)strcspn(text, " ");

		if (at > col && at + 1 + len > 80) {
			fprintf(f, "\n%*s", col, "");
			at = col;
		}
		at += fprintf(f, "%s%.*s", at > col ? " " : "", len, text);
		text += len;
		text += strspn(text, " ");
	}
	fputc('\n', f);
}

/* Copy mountinfo field @s into @out, undoing its octal escapes (\040). */
static void cli_unescape(const char *s, char *out, size_t size)
{
	size_t n = 0;

	while (*s && n + 1 < size) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			out[n++] = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 |
					  (s[3] - '0'));
			s += 4;
		} else {
			out[n++] = *s++;
		}
	}
	out[n] = '\0';
}

/*
 * Parse one mountinfo line: "ID PARENT MAJ:MIN ROOT DIR OPTS [TAGS...]
 * - TYPE SOURCE SUPEROPTS".  0, or -EINVAL for a line not of that shape.
 */
static int cli_parse_line(char *line, struct mqfs_cli_mount *m)
{
	char *save = NULL, *tok, *dir = NULL;
	int field = 0;

	for (tok = strtok_r(line, " \n", &save); tok;
	     tok = strtok_r(NULL, " \n", &save), field++) {
		if (field == 4)
			dir = tok;
		if (field >= 6 && !strcmp(tok, "-"))
			break;
	}
	tok = strtok_r(NULL, " \n", &save);
	if (!dir || !tok)
		return -EINVAL;
	cli_unescape(dir, m->dir, sizeof(m->dir));
	cli_unescape(tok, m->type, sizeof(m->type));
	tok = strtok_r(NULL, " \n", &save);
	cli_unescape(tok ? tok : "", m->source, sizeof(m->source));
	return 0;
}

/* Depth of mount point @m->dir when it holds @path (resolved), else -1. */
static int cli_score_dir(const struct mqfs_cli_mount *m, const char *path)
{
	size_t n = strlen(m->dir);

	if (!strcmp(m->dir, "/"))
		return 0;
	if (!strncmp(m->dir, path, n) && (path[n] == '/' || !path[n]))
		return (int)n;
	return -1;
}

/* 0 when @m is an mqfs mount of device @dev (resolved), else -1. */
static int cli_score_device(const struct mqfs_cli_mount *m, const char *dev)
{
	/* A plain "fuse" too: an older daemon mounted without a subtype. */
	if (strcmp(m->source, dev))
		return -1;
	return mqfs_cli_is_mqfs(m) || !strcmp(m->type, "fuse") ? 0 : -1;
}

/*
 * The mountinfo line @score rates highest for @path's real path (the
 * later of equals: it is mounted on top) in *@m: 1 found, 0 none, or
 * -errno.
 */
static int cli_scan(const char *path, struct mqfs_cli_mount *m,
		    int (*score)(const struct mqfs_cli_mount *, const char *))
{
	struct mqfs_cli_mount cur;
	char line[3 * PATH_MAX], *real;
	int best = -1, s;
	FILE *f;

	real = realpath(path, NULL);
	if (!real)
		return -errno;
	f = fopen(CLI_MOUNTINFO, "r");
	if (!f) {
		s = -errno;
		free(real);
		return s;
	}
	while (fgets(line, sizeof(line), f))
		if (!cli_parse_line(line, &cur) &&
		    (s = score(&cur, real)) >= best && s >= 0) {
			best = s;
			*m = cur;
		}
	fclose(f);
	free(real);
	return best >= 0;
}

int mqfs_cli_mount_of(const char *path, struct mqfs_cli_mount *m)
{
	int ret = cli_scan(path, m, cli_score_dir);

	return ret < 0 ? ret : ret ? 0 : -ENOENT;
}

int mqfs_cli_mount_of_device(const char *dev, struct mqfs_cli_mount *m)
{
	return cli_scan(dev, m, cli_score_device);
}

bool mqfs_cli_is_mqfs(const struct mqfs_cli_mount *m)
{
	return !strcmp(m->type, CLI_MQFS_TYPE);
}
