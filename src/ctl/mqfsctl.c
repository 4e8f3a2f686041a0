/* SPDX-License-Identifier: MIT */
/*
 * mqfsctl - statistics and tunables of a mounted mqfs, through its
 * control surface MNT/.mqfs (see mqfs(8), CONTROL SURFACE):
 *
 *   mqfsctl stat MNT [INTERVAL [COUNT]]   iostat -x style figures, then the
 *                                         priority counts and the transport
 *   mqfsctl set MNT key=value...          queue/ or queue/iosched/ files
 *   mqfsctl top MNT                       stat, refreshed every second
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CTL_DIR		".mqfs"
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
	char path[4096];
	FILE *f;
	int n = 0;

	snprintf(path, sizeof(path), "%s/" CTL_DIR "/queue/stat", mnt);
	f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "mqfsctl: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (n < STAT_FIELDS && fscanf(f, "%" SCNu64, &s->f[n]) == 1)
		n++;
	fclose(f);
	s->t = now_sec();
	if (n != STAT_FIELDS) {
		fprintf(stderr, "mqfsctl: %s: %d fields, want %d\n", path, n,
			STAT_FIELDS);
		return -1;
	}
	return 0;
}

static double ratio(double a, double b)
{
	return b > 0 ? a / b : 0.0;
}

static void print_header(void)
{
	printf("%-8s %9s %9s %10s %10s %8s %8s %6s %6s %8s %8s %7s %9s %9s "
	       "%6s\n", "Device", "r/s", "w/s", "rkB/s", "wkB/s", "rrqm/s",
	       "wrqm/s", "%rrqm", "%wrqm", "r_await", "w_await", "aqu-sz",
	       "rareq-sz", "wareq-sz", "%util");
}

/* The iostat -x figures between two samples (%util from io_ticks). */
static void print_delta(const char *name, const struct sample *a,
			const struct sample *b)
{
	double dt = b->t - a->t, d[STAT_FIELDS];

	for (int i = 0; i < STAT_FIELDS; i++)
		d[i] = (double)(b->f[i] - a->f[i]);
	if (dt <= 0)
		dt = 1e-9;
	printf("%-8s %9.2f %9.2f %10.2f %10.2f %8.2f %8.2f %6.2f %6.2f "
	       "%8.2f %8.2f %7.2f %9.2f %9.2f %6.2f\n", name,
	       d[F_RIOS] / dt, d[F_WIOS] / dt,
	       d[F_RSECT] / 2 / dt, d[F_WSECT] / 2 / dt,
	       d[F_RMERGE] / dt, d[F_WMERGE] / dt,
	       100 * ratio(d[F_RMERGE], d[F_RMERGE] + d[F_RIOS]),
	       100 * ratio(d[F_WMERGE], d[F_WMERGE] + d[F_WIOS]),
	       ratio(d[F_RTICKS], d[F_RIOS]), ratio(d[F_WTICKS], d[F_WIOS]),
	       d[F_TIQ] / 1000 / dt,
	       ratio(d[F_RSECT] / 2, d[F_RIOS]),
	       ratio(d[F_WSECT] / 2, d[F_WIOS]),
	       d[F_IOTICKS] / 10 / dt > 100 ? 100 : d[F_IOTICKS] / 10 / dt);
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
 * with "none" the file is not there and nothing is printed).
 */
static void print_prio(const char *mnt)
{
	char path[4096], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/" CTL_DIR "/queue/iosched/prio_stat",
		 mnt);
	f = fopen(path, "r");
	if (!f)
		return;
	printf("\nrequests by I/O priority class, since mount:\n");
	while (fgets(line, sizeof(line), f))
		fputs(line, stdout);
	fclose(f);
}

/* The value of "KEY VALUE" line @key of @mnt's .mqfs/@file, or "". */
static void ctl_field(const char *mnt, const char *file, const char *key,
		      char *out, size_t size)
{
	char path[4096], line[256];
	size_t n = strlen(key);
	FILE *f;

	out[0] = '\0';
	snprintf(path, sizeof(path), "%s/" CTL_DIR "/%s", mnt, file);
	f = fopen(path, "r");
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

/* The rings' doorbells, and their spill entries when there are some. */
static void print_ring_bell_spill(const char *mnt)
{
	char bell[16], per_req[24], windows[24], eager_win[24], eager[16];
	char spill[16], spilled[24];

	ctl_field(mnt, "fuse/conn", "ring_doorbell", bell, sizeof(bell));
	ctl_field(mnt, "fuse/stat", "ring_doorbell_requests", per_req,
		  sizeof(per_req));
	ctl_field(mnt, "fuse/stat", "ring_doorbell_windows", windows,
		  sizeof(windows));
	ctl_field(mnt, "fuse/stat", "ring_doorbell_eager_windows", eager_win,
		  sizeof(eager_win));
	ctl_field(mnt, "fuse/stat", "ring_doorbell_eager", eager,
		  sizeof(eager));
	printf("device doorbells (uring_doorbell=%s): %s rung after a single "
	       "request, %s of %s 2 ms windows eager, %s threads eager now\n",
	       bell, per_req, eager_win, windows, eager);
	ctl_field(mnt, "fuse/conn", "ring_spill", spill, sizeof(spill));
	ctl_field(mnt, "fuse/stat", "ring_spilled", spilled, sizeof(spilled));
	if (spill[0] && strcmp(spill, "0"))
		printf("spill entries (uring_spill=%s on each other queue): %s "
		       "requests served off their queue's thread since mount\n",
		       spill, spilled);
}

/* How FUSE requests reach the daemon, and the rings' batching. */
static void print_transport(const char *mnt)
{
	char t[64], nq[16], depth[16], per_enter[32], per_batch[32], note[192];
	char pin[16], moves[24], away[16];

	ctl_field(mnt, "fuse/conn", "transport", t, sizeof(t));
	if (!t[0])
		return;
	if (strcmp(t, "uring")) {
		ctl_field(mnt, "fuse/conn", "transport_note", note,
			  sizeof(note));
		printf("\nFUSE transport: /dev/fuse%s%s%s\n", note[0] ? " (" : "",
		       note, note[0] ? ")" : "");
		return;
	}
	ctl_field(mnt, "fuse/conn", "ring_queues", nq, sizeof(nq));
	ctl_field(mnt, "fuse/conn", "ring_depth", depth, sizeof(depth));
	ctl_field(mnt, "fuse/stat", "ring_requests_per_enter", per_enter,
		  sizeof(per_enter));
	ctl_field(mnt, "fuse/stat", "ring_commits_per_batch", per_batch,
		  sizeof(per_batch));
	ctl_field(mnt, "fuse/conn", "ring_pin", pin, sizeof(pin));
	ctl_field(mnt, "fuse/stat", "ring_moves", moves, sizeof(moves));
	ctl_field(mnt, "fuse/stat", "ring_away", away, sizeof(away));
	printf("\nFUSE transport: io_uring, %s rings of %s entries; since "
	       "mount %s requests per io_uring_enter, %s commits per batch\n"
	       "ring threads (uring_pin=%s): %s off their callers' CPU now, "
	       "%s moves since mount\n", nq, depth, per_enter, per_batch, pin,
	       away, moves);
	print_ring_bell_spill(mnt);
}

/* stat MNT [INTERVAL [COUNT]]: one report of INTERVAL (1 s) by default. */
static int cmd_stat(int argc, char **argv)
{
	double interval = 1, count = 1;
	struct sample a, b;

	if (argc < 1 || argc > 3 ||
	    (argc > 1 && parse_num(argv[1], 0.01, &interval)) ||
	    (argc > 2 && parse_num(argv[2], 1, &count))) {
		fprintf(stderr, "usage: mqfsctl stat MNT [INTERVAL [COUNT]]\n");
		return 2;
	}
	catch_signals();
	if (read_sample(argv[0], &a))
		return 1;
	print_header();
	for (long i = 0; i < (long)count && !ctl_stop; i++) {
		nap(interval);
		if (read_sample(argv[0], &b))
			return 1;
		print_delta("mqfs", &a, &b);
		a = b;
	}
	print_prio(argv[0]);
	print_transport(argv[0]);
	return 0;
}

/* top MNT: clear the screen and show the last second, until SIGINT. */
static int cmd_top(int argc, char **argv)
{
	struct sample a, b;
	char sched[128] = "";
	char path[4096];
	FILE *f;

	if (argc != 1) {
		fprintf(stderr, "usage: mqfsctl top MNT\n");
		return 2;
	}
	catch_signals();
	if (read_sample(argv[0], &a))
		return 1;
	snprintf(path, sizeof(path), "%s/" CTL_DIR "/queue/scheduler", argv[0]);
	while (!ctl_stop) {
		nap(1.0);
		if (ctl_stop || read_sample(argv[0], &b))
			break;
		f = fopen(path, "r");
		if (f) {
			if (!fgets(sched, sizeof(sched), f))
				sched[0] = '\0';
			fclose(f);
		}
		printf("\033[H\033[2J%s  scheduler: %s\n", argv[0], sched);
		print_header();
		print_delta("mqfs", &a, &b);
		a = b;
	}
	return ctl_stop ? 0 : 1;
}

/* key: queue/KEY when it exists, else queue/iosched/KEY. */
static int set_one(const char *mnt, const char *kv)
{
	const char *eq = strchr(kv, '='), *dirs[] = { "queue", "queue/iosched" };
	const char *slash = strchr(kv, '/');
	char path[4096];
	FILE *f = NULL;
	int err = ENOENT;

	if (!eq || eq == kv || (slash && slash < eq)) {
		fprintf(stderr, "mqfsctl: %s: not key=value\n", kv);
		return -1;
	}
	for (int i = 0; i < 2 && !f; i++) {
		snprintf(path, sizeof(path), "%s/" CTL_DIR "/%s/%.*s", mnt,
			 dirs[i], (int)(eq - kv), kv);
		if (access(path, F_OK))
			continue;
		f = fopen(path, "w");
		err = errno;
	}
	if (f && (fputs(eq + 1, f) == EOF || fflush(f) == EOF))
		err = errno;
	else if (f)
		err = 0;
	if (f && fclose(f) && !err)
		err = errno;
	if (err)
		fprintf(stderr, "mqfsctl: %.*s: %s\n", (int)(eq - kv), kv,
			err == ENOENT ? "no such setting" : strerror(err));
	return err ? -1 : 0;
}

static int cmd_set(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: mqfsctl set MNT key=value...\n");
		return 2;
	}
	for (int i = 1; i < argc; i++)
		if (set_one(argv[0], argv[i]))
			return 1;
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: mqfsctl stat MNT [INTERVAL [COUNT]]\n"
		     "       mqfsctl set MNT key=value...\n"
		     "       mqfsctl top MNT\n");
}

int main(int argc, char **argv)
{
	if (argc >= 2 && (!strcmp(argv[1], "-h") ||
			  !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	if (argc < 3) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "stat"))
		return cmd_stat(argc - 2, argv + 2);
	if (!strcmp(argv[1], "set"))
		return cmd_set(argc - 2, argv + 2);
	if (!strcmp(argv[1], "top"))
		return cmd_top(argc - 2, argv + 2);
	usage(stderr);
	return 2;
}
