/* SPDX-License-Identifier: MIT */
/*
 * ctl_stat.c - mqfsctl stat and top: the iostat -x figures of the mount's
 * queue between two samples of .mqfs/queue/stat, the requests per I/O
 * priority class, and how the FUSE requests come.
 *
 * Every line fits 80 columns (top redraws a terminal): the device is
 * named once above the table rather than in a column, and the table
 * keeps the figures a user steers the scheduler by.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl_i.h"

#define STAT_FIELDS	17

/* The fields of queue/stat used here (Documentation/block/stat.rst). */
enum { F_RIOS, F_RMERGE, F_RSECT, F_RTICKS, F_WIOS, F_WMERGE, F_WSECT,
       F_WTICKS, F_INFLIGHT, F_IOTICKS, F_TIQ };

struct sample {
	uint64_t f[STAT_FIELDS];
	double t;			/* CLOCK_MONOTONIC, seconds */
};

static volatile sig_atomic_t ctl_stop;

static void ctl_on_signal(int sig)
{
	(void)sig;
	ctl_stop = 1;
}

static double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int read_sample(const char *mnt, struct sample *s)
{
	FILE *f = ctl_open(mnt, "queue/stat", "r");
	int n = 0;

	if (!f) {
		fprintf(stderr, CTL_PROG ": %s/" CTL_DIR "/queue/stat: %s\n",
			mnt, strerror(errno));
		return -1;
	}
	while (n < STAT_FIELDS && fscanf(f, "%" SCNu64, &s->f[n]) == 1)
		n++;
	fclose(f);
	s->t = now_sec();
	if (n != STAT_FIELDS) {
		fprintf(stderr, CTL_PROG ": %s/" CTL_DIR "/queue/stat: %d "
			"fields, want %d\n", mnt, n, STAT_FIELDS);
		return -1;
	}
	return 0;
}

static double ratio(double a, double b)
{
	return b > 0 ? a / b : 0.0;
}

/* The device and where it is mounted, above the table. */
static void print_title(const struct mqfs_cli_mount *m)
{
	printf("Device: %s on %s\n", m->source, m->dir);
}

/* 78 columns: the figures of iostat -x that fit, in its names. */
static void print_header(void)
{
	printf("%8s %8s %9s %9s %5s %5s %7s %7s %6s %5s\n", "r/s", "w/s",
	       "rkB/s", "wkB/s", "%rrqm", "%wrqm", "r_await", "w_await",
	       "aqu-sz", "%util");
}

/* The iostat -x figures between two samples (%util from io_ticks). */
static void print_delta(const struct sample *a, const struct sample *b)
{
	double dt = b->t - a->t, d[STAT_FIELDS], util;

	for (int i = 0; i < STAT_FIELDS; i++)
		d[i] = (double)(b->f[i] - a->f[i]);
	if (dt <= 0)
		dt = 1e-9;
	util = d[F_IOTICKS] / 10 / dt;
	printf("%8.1f %8.1f %9.1f %9.1f %5.1f %5.1f %7.2f %7.2f %6.2f %5.1f\n",
	       d[F_RIOS] / dt, d[F_WIOS] / dt,
	       d[F_RSECT] / 2 / dt, d[F_WSECT] / 2 / dt,
	       100 * ratio(d[F_RMERGE], d[F_RMERGE] + d[F_RIOS]),
	       100 * ratio(d[F_WMERGE], d[F_WMERGE] + d[F_WIOS]),
	       ratio(d[F_RTICKS], d[F_RIOS]), ratio(d[F_WTICKS], d[F_WIOS]),
	       d[F_TIQ] / 1000 / dt, util > 100 ? 100 : util);
	fflush(stdout);
}

/* Sleep @sec seconds unless a signal asks to stop. */
static void nap(double sec)
{
	struct timespec ts = { (time_t)sec,
			       (long)((sec - (double)(time_t)sec) * 1e9) };

	while (!ctl_stop && nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void catch_signals(void)
{
	struct sigaction sa = { .sa_handler = ctl_on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

static int parse_num(const char *s, double min, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return errno || end == s || *end || *out < min ? -1 : 0;
}

/*
 * Requests per I/O priority class since mount (mq-deadline keeps them;
 * with "none" the file is not there and nothing is printed), as a table
 * with its columns aligned.
 */
static void print_prio(const char *mnt)
{
	FILE *f = ctl_open(mnt, "queue/iosched/prio_stat", "r");
	char line[256], *save, *word;

	if (!f)
		return;
	printf("\nrequests by I/O priority class, since mount:\n");
	while (fgets(line, sizeof(line), f)) {
		word = strtok_r(line, " \n", &save);
		if (!word)
			continue;
		printf("%-6s", word);
		while ((word = strtok_r(NULL, " \n", &save)))
			printf(" %11s", word);
		putchar('\n');
	}
	fclose(f);
}

/* The value of "KEY VALUE" line @key of @mnt's .mqfs/@file, or "". */
static void ctl_field(const char *mnt, const char *file, const char *key,
		      char *out, size_t size)
{
	FILE *f = ctl_open(mnt, file, "r");
	size_t n = strlen(key);
	char line[256];

	out[0] = '\0';
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ' ') {
			line[strcspn(line, "\n")] = '\0';
			snprintf(out, size, "%s", line + n + 1);
			break;
		}
	fclose(f);
}

/* A line of the transport's, indented under its title and wrapped. */
static void print_indented(const char *text)
{
	printf("  ");
	mqfs_cli_wrap(stdout, text, 2);
}

/* The rings' doorbells, and their spill entries when there are some. */
static void print_ring_bell_spill(const char *mnt)
{
	char bell[16], per_req[24], windows[24], eager_win[24], eager[16];
	char spill[16], spilled[24], text[320];

	ctl_field(mnt, "fuse/conn", "ring_doorbell", bell, sizeof(bell));
	ctl_field(mnt, "fuse/stat", "ring_doorbell_requests", per_req,
		  sizeof(per_req));
	ctl_field(mnt, "fuse/stat", "ring_doorbell_windows", windows,
		  sizeof(windows));
	ctl_field(mnt, "fuse/stat", "ring_doorbell_eager_windows", eager_win,
		  sizeof(eager_win));
	ctl_field(mnt, "fuse/stat", "ring_doorbell_eager", eager,
		  sizeof(eager));
	snprintf(text, sizeof(text), "device doorbells (uring_doorbell=%s): "
		 "%s rung after a single request, %s of %s 2 ms windows "
		 "eager, %s threads eager now", bell, per_req, eager_win,
		 windows, eager);
	print_indented(text);
	ctl_field(mnt, "fuse/conn", "ring_spill", spill, sizeof(spill));
	ctl_field(mnt, "fuse/stat", "ring_spilled", spilled, sizeof(spilled));
	if (!spill[0] || !strcmp(spill, "0"))
		return;
	snprintf(text, sizeof(text), "spill entries (uring_spill=%s on each "
		 "other queue): %s requests served off their queue's thread "
		 "since mount", spill, spilled);
	print_indented(text);
}

/* The rings: their shape, batching and threads. */
static void print_rings(const char *mnt)
{
	char nq[16], depth[16], per_enter[32], per_batch[32], text[320];
	char pin[16], moves[24], away[16];

	ctl_field(mnt, "fuse/conn", "ring_queues", nq, sizeof(nq));
	ctl_field(mnt, "fuse/conn", "ring_depth", depth, sizeof(depth));
	ctl_field(mnt, "fuse/stat", "ring_requests_per_enter", per_enter,
		  sizeof(per_enter));
	ctl_field(mnt, "fuse/stat", "ring_commits_per_batch", per_batch,
		  sizeof(per_batch));
	ctl_field(mnt, "fuse/conn", "ring_pin", pin, sizeof(pin));
	ctl_field(mnt, "fuse/stat", "ring_moves", moves, sizeof(moves));
	ctl_field(mnt, "fuse/stat", "ring_away", away, sizeof(away));
	printf("\nFUSE transport: ");
	snprintf(text, sizeof(text), "io_uring, %s rings of %s entries; "
		 "since mount %s requests per io_uring_enter, %s commits per "
		 "batch", nq, depth, per_enter, per_batch);
	mqfs_cli_wrap(stdout, text, 16);
	snprintf(text, sizeof(text), "ring threads (uring_pin=%s): %s off "
		 "their callers' CPU now, %s moves since mount", pin, away,
		 moves);
	print_indented(text);
	print_ring_bell_spill(mnt);
}

/* How FUSE requests reach the daemon, and the rings' batching. */
static void print_transport(const char *mnt)
{
	char t[64], note[192];

	ctl_field(mnt, "fuse/conn", "transport", t, sizeof(t));
	if (!t[0])
		return;
	if (!strcmp(t, "uring")) {
		print_rings(mnt);
		return;
	}
	ctl_field(mnt, "fuse/conn", "transport_note", note, sizeof(note));
	printf("\nFUSE transport: ");
	mqfs_cli_wrap(stdout, "/dev/fuse", 16);
	if (note[0])
		print_indented(note);
}

/* The mount of @path, stopped by SIGINT/SIGTERM from now, 1st sample. */
static int start_sampling(const char *path, struct mqfs_cli_mount *m,
			  struct sample *first)
{
	if (ctl_find_mount(path, m))
		return -1;
	catch_signals();
	return read_sample(m->dir, first);
}

/* stat PATH [INTERVAL [COUNT]]: one report of INTERVAL (1 s) by default. */
int ctl_cmd_stat(int argc, char **argv)
{
	double interval = 1, count = 1;
	struct mqfs_cli_mount m;
	struct sample a, b;

	if (argc < 1 || argc > 3 ||
	    (argc > 1 && parse_num(argv[1], 0.01, &interval)) ||
	    (argc > 2 && parse_num(argv[2], 1, &count)))
		return mqfs_cli_usage_error(CTL_PROG, CTL_USAGE, "stat takes "
					    "PATH [INTERVAL [COUNT]], INTERVAL "
					    ">= 0.01 s, COUNT >= 1");
	if (start_sampling(argv[0], &m, &a))
		return CTL_FAIL;
	print_title(&m);
	print_header();
	for (long i = 0; i < (long)count && !ctl_stop; i++) {
		nap(interval);
		if (read_sample(m.dir, &b))
			return CTL_FAIL;
		print_delta(&a, &b);
		a = b;
	}
	print_prio(m.dir);
	print_transport(m.dir);
	return 0;
}

/* The scheduler line of .mqfs/queue/scheduler, "" when unreadable. */
static void read_scheduler(const char *mnt, char *out, size_t size)
{
	FILE *f = ctl_open(mnt, "queue/scheduler", "r");

	out[0] = '\0';
	if (!f)
		return;
	if (fgets(out, (int)size, f))
		out[strcspn(out, "\n")] = '\0';
	else
		out[0] = '\0';
	fclose(f);
}

/* top PATH: clear the screen and show the last second, until SIGINT. */
int ctl_cmd_top(int argc, char **argv)
{
	struct mqfs_cli_mount m;
	struct sample a, b;
	char sched[128];

	if (argc != 1)
		return mqfs_cli_usage_error(CTL_PROG, CTL_USAGE,
					    "top takes PATH");
	if (start_sampling(argv[0], &m, &a))
		return CTL_FAIL;
	while (!ctl_stop) {
		nap(1.0);
		if (ctl_stop || read_sample(m.dir, &b))
			break;
		read_scheduler(m.dir, sched, sizeof(sched));
		printf("\033[H\033[2J");
		print_title(&m);
		printf("scheduler: %s\n", sched);
		print_header();
		print_delta(&a, &b);
		a = b;
	}
	return ctl_stop ? 0 : CTL_FAIL;
}
