# SPDX-License-Identifier: MIT
# mqfsctl: statistics and tunables of a mounted mqfs through MNT/.mqfs.
bin_PROGRAMS += mqfsctl
mqfsctl_SOURCES = %reldir%/mqfsctl.c %reldir%/ctl_stat.c %reldir%/ctl_set.c \
	%reldir%/ctl_i.h
mqfsctl_LDADD = libmqcli.a
man_MANS += man/mqfsctl.8
EXTRA_DIST += man/mqfsctl.8.in
