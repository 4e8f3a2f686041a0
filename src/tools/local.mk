# SPDX-License-Identifier: MIT
# mkfs.mqfs and fsck.mqfs.
sbin_PROGRAMS += mkfs.mqfs fsck.mqfs
mkfs_mqfs_SOURCES = %reldir%/mkfs_main.c %reldir%/tools.c %reldir%/tools_i.h
mkfs_mqfs_LDADD = $(CORE_LIBS)
fsck_mqfs_SOURCES = %reldir%/fsck_main.c %reldir%/tools.c %reldir%/tools_i.h
fsck_mqfs_LDADD = $(CORE_LIBS)
man_MANS += man/mkfs.mqfs.8 man/fsck.mqfs.8
EXTRA_DIST += man/mkfs.mqfs.8.in man/fsck.mqfs.8.in
