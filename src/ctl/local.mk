# SPDX-License-Identifier: MIT
# mqfsctl: statistics and tunables of a mounted mqfs through MNT/.mqfs.
bin_PROGRAMS += mqfsctl
mqfsctl_SOURCES = %reldir%/mqfsctl.c
man_MANS += man/mqfsctl.8
EXTRA_DIST += man/mqfsctl.8.in
