# SPDX-License-Identifier: MIT
# mqfsctl: statistics and tunables of a mounted mqfs through MNT/.mqfs.
bin_PROGRAMS += mqfsctl
mqfsctl_SOURCES = %reldir%/mqfsctl.c
dist_man_MANS += man/mqfsctl.8
