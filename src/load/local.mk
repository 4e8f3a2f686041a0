# SPDX-License-Identifier: MIT
# mqfs-load: a small fio-like load generator on plain files (psync or
# io_uring; buffered, O_DIRECT or RWF_DONTCACHE).  It links liburing only,
# not libmqfs: it measures the kernel's filesystems beside a mounted mqfs.
bin_PROGRAMS += mqfs-load
mqfs_load_SOURCES = %reldir%/mqfs-load.c %reldir%/run.c %reldir%/load_i.h
mqfs_load_LDADD = libmqcli.a $(URING_LIBS)
man_MANS += man/mqfs-load.1
EXTRA_DIST += man/mqfs-load.1.in
