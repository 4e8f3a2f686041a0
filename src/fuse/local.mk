# SPDX-License-Identifier: MIT
# The FUSE daemon: mqfs DEVICE MOUNTPOINT [-o options].
bin_PROGRAMS += mqfs
mqfs_SOURCES = \
	%reldir%/fuse_i.h \
	%reldir%/main.c \
	%reldir%/opts.c \
	%reldir%/daemon.c \
	%reldir%/ops.c \
	%reldir%/ctl.c
mqfs_CFLAGS = $(AM_CFLAGS) $(FUSE_CFLAGS)
mqfs_LDADD = $(CORE_LIBS) $(FUSE_LIBS)
dist_man_MANS += man/mqfs.8
