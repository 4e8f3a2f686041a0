# SPDX-License-Identifier: MIT
# mkfs.mqfs and fsck.mqfs; libmqcli.a, the command-line manners every
# program links (include/mqfs/cli.h).
noinst_LIBRARIES += libmqcli.a
libmqcli_a_SOURCES = %reldir%/cli.c
sbin_PROGRAMS += mkfs.mqfs fsck.mqfs
mkfs_mqfs_SOURCES = %reldir%/mkfs_main.c %reldir%/tools.c %reldir%/tools_i.h
mkfs_mqfs_LDADD = libmqcli.a $(CORE_LIBS)
fsck_mqfs_SOURCES = %reldir%/fsck_main.c %reldir%/tools.c %reldir%/tools_i.h
fsck_mqfs_LDADD = libmqcli.a $(CORE_LIBS)
man_MANS += man/mkfs.mqfs.8 man/fsck.mqfs.8
EXTRA_DIST += man/mkfs.mqfs.8.in man/fsck.mqfs.8.in
