// SPDX-License-Identifier: MIT
/*
 * test_fsck.c - the checker (src/fs/fsck*.c) on ram-device filesystems
 * populated through the public API: a clean image passes untouched;
 * each kind of damage (superblock, inode table, directory block, bitmap,
 * link count, extent outside the fs, doubly claimed block, a resealed
 * xattr entry the daemon would refuse) is reported
 * by -n without a single write, repaired by -y (or -p when safe), and
 * the repaired image checks clean, mounts and still reads the files
 * that survived.  Random damage to any metadata block, and sealed damage
 * (checksums made valid again) structure by structure.  Crash images:
 * the journal (also one carrying a bad superblock copy) and the orphan
 * list.  Lazy AGs: uninitialised ones never demanded, an extent into
 * one, the AG-init map damaged.
 *
 * One program from six files: this one (the suite), fsck_damage.c,
 * fsck_random.c, fsck_crash.c and fsck_lazy.c (the cases, in this
 * order), sharing
 * fsck_fixture.c/.h.
 */
#include "fsck_fixture.h"
#include "t_main.h"

static Suite *fsck_suite(void)
{
	Suite *s = suite_create("fsck");
	TCase *tc = t_tcase(s, "fsck", 60);

	fsck_add_damage_tests(tc);
	fsck_add_random_tests(tc);
	fsck_add_crash_tests(tc);
	fsck_add_lazy_tests(tc);
	return s;
}

T_MAIN(fsck_suite)
