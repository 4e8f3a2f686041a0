/* SPDX-License-Identifier: MIT */
/*
 * ctl_set.c - mqfsctl set PATH key=value...: each value written to
 * .mqfs/queue/KEY, or .mqfs/queue/iosched/KEY when the first is not
 * there, in order, stopping at the first refusal.
 *
 * A refusal says why in the user's terms: a setting the daemon only
 * shows (its file has no write permission) is "read-only", an unknown
 * one names the closest known setting when it is a likely typo.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "ctl_i.h"

/* The directories of the settings, searched in this order. */
static const char *const set_dirs[] = { "queue", "queue/iosched" };
#define SET_NR_DIRS	(sizeof(set_dirs) / sizeof(set_dirs[0]))
/* A name this many edits from a setting is taken for a typo of it. */
#define SET_TYPO_EDITS	2
#define SET_NAME_MAX	64

/* Edit distance between @a and @b (Levenshtein), both < SET_NAME_MAX. */
static unsigned set_distance(const char *a, const char *b)
{
	unsigned row[SET_NAME_MAX + 1];
	size_t la = strlen(a), lb = strlen(b);

	for (size_t j = 0; j <= lb; j++)
		row[j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		unsigned diag = row[0];

		row[0] = (unsigned)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned up = row[j];
			unsigned best = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[lb];
}

/* The setting of @mnt closest to @key within SET_TYPO_EDITS, or "". */
static void set_closest(const char *mnt, const char *key, char *out,
			size_t size)
{
	unsigned best = SET_TYPO_EDITS + 1;
	char path[CTL_PATH_MAX];

	out[0] = '\0';
	if (strlen(key) >= SET_NAME_MAX)
		return;
	for (size_t i = 0; i < SET_NR_DIRS; i++) {
		struct dirent *e;
		DIR *d;

		d = ctl_path(path, mnt, "%s", set_dirs[i]) ? NULL
							    : opendir(path);
		while (d && (e = readdir(d))) {
			unsigned n;

			if (e->d_type == DT_DIR || strlen(e->d_name) >=
			    SET_NAME_MAX)
				continue;
			n = set_distance(key, e->d_name);
			if (n < best) {
				best = n;
				snprintf(out, size, "%s", e->d_name);
			}
		}
		if (d)
			closedir(d);
	}
}

/* The file of setting @key in @path (CTL_PATH_MAX): 0, or -ENOENT. */
static int set_find(const char *mnt, const char *key, char *path,
		    struct stat *st)
{
	for (size_t i = 0; i < SET_NR_DIRS; i++)
		if (!ctl_path(path, mnt, "%s/%s", set_dirs[i], key) &&
		    !stat(path, st) && !S_ISDIR(st->st_mode))
			return 0;
	return -ENOENT;
}

/* Write @value to @path: 0 or an errno. */
static int set_write(const char *path, const char *value)
{
	FILE *f = fopen(path, "w");
	int err = 0;

	if (!f)
		return errno;
	if (fputs(value, f) == EOF || fflush(f) == EOF)
		err = errno;
	if (fclose(f) && !err)
		err = errno;
	return err;
}

static void set_unknown(const char *mnt, const char *key)
{
	char near[SET_NAME_MAX];

	set_closest(mnt, key, near, sizeof(near));
	if (near[0])
		fprintf(stderr, CTL_PROG ": %s: no such setting; did you mean "
			"'%s'?\n", key, near);
	else
		fprintf(stderr, CTL_PROG ": %s: no such setting (see the "
			"files in %s/" CTL_DIR "/queue)\n", key, mnt);
}

static int set_one(const char *mnt, const char *kv)
{
	const char *eq = strchr(kv, '=');
	char path[CTL_PATH_MAX], key[NAME_MAX + 1];
	struct stat st;
	int err, len;

	if (!eq || eq == kv || memchr(kv, '/', (size_t)(eq - kv))) {
		fprintf(stderr, CTL_PROG ": %s: not key=value\n", kv);
		return -1;
	}
	len = (int)(eq - kv);
	snprintf(key, sizeof(key), "%.*s", len, kv);
	if (len > NAME_MAX || set_find(mnt, key, path, &st)) {
		set_unknown(mnt, key);
		return -1;
	}
	if (!(st.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH))) {
		fprintf(stderr, CTL_PROG ": %s: read-only setting (fixed at "
			"mount time)\n", key);
		return -1;
	}
	err = set_write(path, eq + 1);
	if (err)
		fprintf(stderr, CTL_PROG ": %s=%s: %s\n", key, eq + 1,
			err == EINVAL ? "invalid value" : strerror(err));
	return err ? -1 : 0;
}

int ctl_cmd_set(int argc, char **argv)
{
	struct mqfs_cli_mount m;

	if (argc < 2)
		return mqfs_cli_usage_error(CTL_PROG, CTL_USAGE, "set takes "
					    "PATH key=value...");
	if (ctl_find_mount(argv[0], &m))
		return CTL_FAIL;
	for (int i = 1; i < argc; i++)
		if (set_one(m.dir, argv[i]))
			return CTL_FAIL;
	return 0;
}
