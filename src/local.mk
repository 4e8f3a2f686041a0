# SPDX-License-Identifier: MIT
bin_PROGRAMS += mqfs-bench
mqfs_bench_SOURCES = %reldir%/bench/mqfs-bench.c %reldir%/bench/bench_i.h \
	%reldir%/bench/hist.c %reldir%/bench/opts.c %reldir%/bench/report.c
mqfs_bench_LDADD = $(CORE_LIBS)
