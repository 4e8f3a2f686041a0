# SPDX-License-Identifier: MIT
# The FUSE daemon: mqfs DEVICE MOUNTPOINT [-o options].  Everything but
# main.c is a library of its own, so the unit tests can link the engine.
noinst_LIBRARIES += libmqfuse.a
libmqfuse_a_SOURCES = \
	%reldir%/fuse_i.h \
	%reldir%/proto.h \
	%reldir%/opts.c \
	%reldir%/daemon.c \
	%reldir%/decode.c \
	%reldir%/pool.c \
	%reldir%/engine.c \
	%reldir%/ring.c \
	%reldir%/ring_i.h \
	%reldir%/ring_setup.c \
	%reldir%/ring_doorbell.c \
	%reldir%/ring_pin.c \
	%reldir%/ioprio.c \
	%reldir%/init.c \
	%reldir%/reply.c \
	%reldir%/ops_i.h \
	%reldir%/ops.c \
	%reldir%/ops_ctl.c \
	%reldir%/bdi.c \
	%reldir%/ctl.c
libmqfuse_a_CFLAGS = $(AM_CFLAGS) $(FUSE_CFLAGS)

bin_PROGRAMS += mqfs
mqfs_SOURCES = %reldir%/main.c
mqfs_CFLAGS = $(AM_CFLAGS) $(FUSE_CFLAGS)
mqfs_LDADD = libmqfuse.a libmqcli.a $(CORE_LIBS) $(FUSE_LIBS)
man_MANS += man/mqfs.8
EXTRA_DIST += man/mqfs.8.in
