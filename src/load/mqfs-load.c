/* SPDX-License-Identifier: MIT */
/*
 * mqfs-load.c - the command line, the run (one thread per job, timed with
 * the system's and the process's context switches and CPU time around it)
 * and the report, as text or one JSON object.  The I/O is in run.c.
 *
 * Why a loader of our own: Debian 12's fio 3.33 cannot send RWF_DONTCACHE
 * (its "uncached" is the old 0x40, RWF_ATOMIC since Linux 6.11, commit
 * c34fc6f26ab8 "fs: Initial atomic write support"), and
 * ext4's RWF_DONTCACHE is the reference mqfs's cache=dontcache is judged by.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include "load_i.h"
#include "mqfs/cli.h"

#define MAX_BS		(64u << 20)
#define MAX_QD		4096u
#define MAX_JOBS	256u

static const char *const mode_names[] = {
	[LOAD_WRITE] = "write", [LOAD_READ] = "read",
	[LOAD_RANDWRITE] = "randwrite", [LOAD_RANDREAD] = "randread",
	[LOAD_RW] = "rw",
};
static const char *const engine_names[] = {
	[LOAD_PSYNC] = "psync", [LOAD_URING] = "io_uring",
};
static const char *const flags_names[] = {
	[LOAD_BUFFERED] = "buffered", [LOAD_DONTCACHE] = "dontcache",
	[LOAD_DIRECT] = "direct",
};

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

const char *load_mode_name(enum load_mode m) { return mode_names[m]; }
const char *load_engine_name(enum load_engine e) { return engine_names[e]; }
const char *load_flags_name(enum load_flags f) { return flags_names[f]; }

bool load_mode_reads(enum load_mode m)
{
	return m == LOAD_READ || m == LOAD_RANDREAD || m == LOAD_RW;
}

bool load_mode_writes(enum load_mode m)
{
	return m == LOAD_WRITE || m == LOAD_RANDWRITE || m == LOAD_RW;
}

/* ---- command line ---- */

#define LOAD_PROG	"mqfs-load"

static void usage(FILE *f)
{
	fputs("Usage: " LOAD_PROG " [options] FILE\n", f);
	fputs(
"  -m, --mode MODE    write|read|randwrite|randread|rw (default write)\n"
"      --mix PCT      rw: percent reads (default 50)\n"
"  -b, --bs SIZE      block size, a multiple of 512 (default 128k)\n"
"  -q, --qd N         I/Os in flight per job (default 1; psync: 1)\n"
"  -e, --engine E     psync|io_uring (default io_uring)\n"
"  -f, --flags F      buffered|dontcache|direct (default buffered)\n"
"  -j, --jobs N       threads; job i uses FILE.i when N > 1 (default 1)\n"
"  -s, --size SIZE    bytes per job, a multiple of --bs (default: the\n"
"                     file's size)\n"
"  -t, --time SEC     time limit; 0 = one pass over --size (default 0)\n"
"      --loops        with -t: start over until the time is up\n"
"      --fsync-end    fsync each file at the end, inside the timing\n"
"      --verify       writes: a pattern from (seed, offset); reads: check it\n"
"      --seed N       offsets, rw draws and the pattern (default 1)\n"
"      --json         one JSON object instead of the text report\n"
"  -h, --help         this text\n"
"  -V, --version      the version\n"
"SIZE takes k, m, g or t (powers of 1024).\n", f);
}

static int parse_size(const char *s, uint64_t *out)
{
	unsigned shift = 0;
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-' || *s == '+')
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	}
	if (shift && (*end == 'i' || *end == 'I'))
		end++;
	if (shift && (*end == 'b' || *end == 'B'))
		end++;
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

static int parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *out)
{
	uint64_t v;

	if (parse_size(s, &v) || v < lo || v > hi)
		return -EINVAL;
	*out = (unsigned)v;
	return 0;
}

static int parse_name(const char *s, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s, names[i]))
			return (int)i;
	return -EINVAL;
}

static int parse_bs(const char *s, uint32_t *bs)
{
	uint64_t v;

	if (parse_size(s, &v) || !v || v % 512 || v > MAX_BS)
		return -EINVAL;
	*bs = (uint32_t)v;
	return 0;
}

static int parse_time(const char *s, double *t)
{
	char *end;

	errno = 0;
	*t = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(*t) || *t < 0 || *t > 1e7)
		return -EINVAL;
	return 0;
}

enum { O_MIX = 256, O_LOOPS, O_FSYNC_END, O_VERIFY, O_SEED, O_JSON };

static const struct option long_opts[] = {
	{ "mode", 1, NULL, 'm' }, { "mix", 1, NULL, O_MIX },
	{ "bs", 1, NULL, 'b' }, { "qd", 1, NULL, 'q' },
	{ "engine", 1, NULL, 'e' }, { "flags", 1, NULL, 'f' },
	{ "jobs", 1, NULL, 'j' }, { "size", 1, NULL, 's' },
	{ "time", 1, NULL, 't' }, { "loops", 0, NULL, O_LOOPS },
	{ "fsync-end", 0, NULL, O_FSYNC_END }, { "verify", 0, NULL, O_VERIFY },
	{ "seed", 1, NULL, O_SEED }, { "json", 0, NULL, O_JSON },
	MQFS_CLI_LONG_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

static int set_opt(struct load_opts *o, int c, const char *arg)
{
	int v;

	switch (c) {
	case 'm':
		v = parse_name(arg, mode_names, ARRAY_SIZE(mode_names));
		return v < 0 ? v : (o->mode = (enum load_mode)v, 0);
	case 'e':
		v = parse_name(arg, engine_names, ARRAY_SIZE(engine_names));
		return v < 0 ? v : (o->engine = (enum load_engine)v, 0);
	case 'f':
		v = parse_name(arg, flags_names, ARRAY_SIZE(flags_names));
		return v < 0 ? v : (o->flags = (enum load_flags)v, 0);
	case O_MIX: return parse_uint(arg, 0, 100, &o->mix);
	case 'b': return parse_bs(arg, &o->bs);
	case 'q': return parse_uint(arg, 1, MAX_QD, &o->qd);
	case 'j': return parse_uint(arg, 1, MAX_JOBS, &o->jobs);
	case 's': return parse_size(arg, &o->size) || !o->size ? -EINVAL : 0;
	case 't': return parse_time(arg, &o->time);
	case O_LOOPS: o->loops = true; return 0;
	case O_FSYNC_END: o->fsync_end = true; return 0;
	case O_VERIFY: o->verify = true; return 0;
	case O_SEED: return parse_size(arg, &o->seed);
	case O_JSON: o->json = true; return 0;
	default: return -EINVAL;
	}
}

/* Combinations no single option can judge. */
static const char *check_opts(const struct load_opts *o)
{
	if (o->engine == LOAD_PSYNC && o->qd != 1)
		return "psync issues one I/O at a time: --qd must be 1";
	if (o->loops && o->time <= 0)
		return "--loops needs a time limit (-t SEC)";
	if (o->size % o->bs)
		return "--size must be a multiple of --bs";
	return NULL;
}

/* @why and the hint to --help: a usage error (exit 2). */
static int usage_error(const char *why)
{
	mqfs_cli_usage_error(LOAD_PROG, LOAD_EXIT_USAGE, "%s", why);
	return -EINVAL;
}

static int bad_value(int c, int idx, const char *arg)
{
	char why[160];

	if (idx >= 0)
		snprintf(why, sizeof(why), "bad value '%s' for --%s", arg,
			 long_opts[idx].name);
	else
		snprintf(why, sizeof(why), "bad value '%s' for -%c", arg, c);
	return usage_error(why);
}

/* 0, or -EINVAL after a message (exit 2); --help and --version exit 0. */
static int load_parse_opts(int argc, char **argv, struct load_opts *o)
{
	int c, idx = -1;

	*o = (struct load_opts){ .mode = LOAD_WRITE, .mix = 50, .bs = 128 << 10,
				 .qd = 1, .engine = LOAD_URING,
				 .flags = LOAD_BUFFERED, .jobs = 1, .seed = 1 };
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":m:b:q:e:f:j:s:t:hV", long_opts,
				&idx)) != -1) {
		if (c == 'h' || c == 'V' || c == '?' || c == ':') {
			mqfs_cli_std_option(LOAD_PROG, LOAD_EXIT_USAGE, c, argv,
					    usage);
			return -EINVAL;
		}
		if (set_opt(o, c, optarg))
			return bad_value(c, idx, optarg);
		idx = -1;
	}
	if (optind != argc - 1)
		return usage_error(optind < argc ? "more than one FILE"
				   : "no FILE given");
	o->file = argv[optind];
	return check_opts(o) ? usage_error(check_opts(o)) : 0;
}

/*
 * Without --size: the size of (the first job's) file, whole blocks.  A
 * missing file is a usage error for a write (exit 2) and a failed run
 * for a read (exit 1), as a short one is.
 */
static int load_default_size(struct load_opts *o)
{
	bool reads = load_mode_reads(o->mode);
	char path[PATH_MAX];
	struct stat st;

	if (o->size)
		return 0;
	if (load_path(o, 0, path, sizeof(path)))
		return LOAD_EXIT_USAGE;
	if (!stat(path, &st) && (uint64_t)st.st_size >= o->bs) {
		o->size = (uint64_t)st.st_size / o->bs * o->bs;
		return 0;
	}
	fprintf(stderr, "mqfs-load: %s: missing or shorter than one block: %s\n",
		path, reads ? "write it first (-m write -s SIZE)" : "give --size");
	return reads ? LOAD_EXIT_FAIL : LOAD_EXIT_USAGE;
}

/* ---- the run ---- */

struct load_result {
	double secs;
	uint64_t ios, rbytes, wbytes;
	struct load_hist lat;
	bool have_ctxt;
	uint64_t ctxt0, ctxt1;
	struct rusage ru0, ru1;
};

/* The system's context switches since boot: "ctxt" in /proc/stat. */
static int read_ctxt(uint64_t *v)
{
	FILE *f = fopen("/proc/stat", "re");
	char *line = NULL;
	size_t cap = 0;
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0)
		if (sscanf(line, "ctxt %" SCNu64, v) == 1) {
			ret = 0;
			break;
		}
	free(line);
	fclose(f);
	return ret;
}

static void result_begin(struct load_result *r)
{
	hist_init(&r->lat);
	r->have_ctxt = !read_ctxt(&r->ctxt0);
	getrusage(RUSAGE_SELF, &r->ru0);
}

static void result_end(struct load_result *r, uint64_t t0)
{
	r->secs = (double)(load_now_ns() - t0) / 1e9;
	getrusage(RUSAGE_SELF, &r->ru1);
	r->have_ctxt = r->have_ctxt && !read_ctxt(&r->ctxt1);
}

static void result_add(struct load_result *r, const struct load_job *j)
{
	hist_merge(&r->lat, &j->lat);
	r->ios += j->ios;
	r->rbytes += j->rbytes;
	r->wbytes += j->wbytes;
}

static int start_jobs(struct load_job *jobs, unsigned n, double time,
		      unsigned *started)
{
	uint64_t deadline = time > 0 ? load_now_ns() + (uint64_t)(time * 1e9) : 0;
	int ret;

	for (*started = 0; *started < n; (*started)++) {
		jobs[*started].deadline = deadline;
		ret = pthread_create(&jobs[*started].tid, NULL, load_job_run,
				     &jobs[*started]);
		if (ret) {
			fprintf(stderr, "mqfs-load: pthread_create: %s\n",
				strerror(ret));
			load_stop_all();
			return -ret;
		}
	}
	return 0;
}

/* The worst job's status: 2 (unsupported) over 1 (failed) over 0. */
static int join_jobs(struct load_job *jobs, unsigned n, struct load_result *r)
{
	int status = 0;

	for (unsigned i = 0; i < n; i++) {
		pthread_join(jobs[i].tid, NULL);
		if (jobs[i].status > status)
			status = jobs[i].status;
	}
	for (unsigned i = 0; i < n; i++)
		result_add(r, &jobs[i]);
	return status;
}

static void report(const struct load_opts *o, const struct load_result *r);

static int run_jobs(const struct load_opts *o, struct load_job *jobs,
		    struct load_result *r)
{
	unsigned started;
	uint64_t t0;
	int ret, status;

	result_begin(r);
	t0 = load_now_ns();
	ret = start_jobs(jobs, o->jobs, o->time, &started);
	status = join_jobs(jobs, started, r);
	result_end(r, t0);
	if (ret && !status)
		status = LOAD_EXIT_FAIL;
	if (!status)
		report(o, r);
	return status;
}

static int load_run(const struct load_opts *o)
{
	struct load_job *jobs = calloc(o->jobs, sizeof(*jobs));
	struct load_result *r = calloc(1, sizeof(*r));
	unsigned n = 0;
	int status = LOAD_EXIT_FAIL;

	if (!jobs || !r) {
		fputs("mqfs-load: out of memory\n", stderr);
		goto out;
	}
	for (; n < o->jobs; n++)
		if (load_job_setup(&jobs[n], o, n)) {
			n++;
			goto out;
		}
	status = run_jobs(o, jobs, r);
out:
	for (unsigned i = 0; i < n; i++)
		load_job_teardown(&jobs[i]);
	free(jobs);
	free(r);
	return status;
}

/* ---- the report ---- */

struct load_figures {
	uint64_t bytes, ctxt;
	double mib_s, iops, ctxt_per_io, user_s, sys_s;
	double min, mean, p50, p99, p999, max;	/* microseconds */
	long vcs, ivcs;
};

static double tv_s(const struct timeval *a, const struct timeval *b)
{
	return (double)(b->tv_sec - a->tv_sec) +
	       (double)(b->tv_usec - a->tv_usec) / 1e6;
}

static double per(double a, double b)
{
	return b > 0 ? a / b : 0;
}

static void figures(const struct load_result *r, struct load_figures *f)
{
	const struct load_hist *h = &r->lat;

	f->bytes = r->rbytes + r->wbytes;
	f->mib_s = per((double)f->bytes, r->secs) / 1048576.0;
	f->iops = per((double)r->ios, r->secs);
	f->ctxt = r->have_ctxt ? r->ctxt1 - r->ctxt0 : 0;
	f->ctxt_per_io = per((double)f->ctxt, (double)r->ios);
	f->vcs = r->ru1.ru_nvcsw - r->ru0.ru_nvcsw;
	f->ivcs = r->ru1.ru_nivcsw - r->ru0.ru_nivcsw;
	f->user_s = tv_s(&r->ru0.ru_utime, &r->ru1.ru_utime);
	f->sys_s = tv_s(&r->ru0.ru_stime, &r->ru1.ru_stime);
	f->min = h->n ? (double)h->min / 1e3 : 0;
	f->max = (double)h->max / 1e3;
	f->mean = per(h->sum, (double)h->n) / 1e3;
	f->p50 = (double)hist_percentile(h, 50) / 1e3;
	f->p99 = (double)hist_percentile(h, 99) / 1e3;
	f->p999 = (double)hist_percentile(h, 99.9) / 1e3;
}

static const char *fmt_size(uint64_t v, char *buf, size_t len)
{
	static const char units[] = "kmgt";
	int u = -1;

	while (u < 3 && v && !(v & 1023)) {
		v >>= 10;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%" PRIu64, v);
	else
		snprintf(buf, len, "%" PRIu64 "%c", v, units[u]);
	return buf;
}

static void report_text(const struct load_opts *o, const struct load_result *r,
			const struct load_figures *f)
{
	char bs[32];

	printf("mqfs-load: %s %s: jobs %u, bs %s, qd %u, engine %s, flags %s\n",
	       load_mode_name(o->mode), o->file, o->jobs,
	       fmt_size(o->bs, bs, sizeof(bs)), o->qd,
	       load_engine_name(o->engine), load_flags_name(o->flags));
	printf("  bytes      %" PRIu64 " (%.1f MiB; read %" PRIu64 ", written %"
	       PRIu64 ") in %.3f s\n", f->bytes, (double)f->bytes / 1048576.0,
	       r->rbytes, r->wbytes, r->secs);
	printf("  bandwidth  %.2f MiB/s, %.1f IOPS (%" PRIu64 " I/Os)\n",
	       f->mib_s, f->iops, r->ios);
	printf("  latency    us: min %.1f, mean %.1f, p50 %.1f, p99 %.1f, "
	       "p99.9 %.1f, max %.1f\n", f->min, f->mean, f->p50, f->p99,
	       f->p999, f->max);
	if (r->have_ctxt)
		printf("  ctxsw      system %" PRIu64 " (%.2f per I/O)", f->ctxt,
		       f->ctxt_per_io);
	else
		printf("  ctxsw      system n/a");
	printf(", process %ld (voluntary %ld, involuntary %ld)\n",
	       f->vcs + f->ivcs, f->vcs, f->ivcs);
	printf("  cpu        user %.3f s, sys %.3f s, total %.3f s\n",
	       f->user_s, f->sys_s, f->user_s + f->sys_s);
}

static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void report_json(const struct load_opts *o, const struct load_result *r,
			const struct load_figures *f)
{
	printf("{\"file\": ");
	json_string(o->file);
	printf(", \"jobs\": %u, \"mode\": \"%s\", \"mix\": %u, \"bs\": %u, "
	       "\"qd\": %u, \"engine\": \"%s\", \"flags\": \"%s\", \"size\": %"
	       PRIu64 ", \"time_limit\": %g, \"loops\": %s, \"fsync_end\": %s, "
	       "\"verify\": %s, \"seed\": %" PRIu64 ",\n", o->jobs,
	       load_mode_name(o->mode), o->mix, o->bs, o->qd,
	       load_engine_name(o->engine), load_flags_name(o->flags), o->size,
	       o->time, o->loops ? "true" : "false",
	       o->fsync_end ? "true" : "false", o->verify ? "true" : "false",
	       o->seed);
	printf(" \"bytes\": %" PRIu64 ", \"read_bytes\": %" PRIu64
	       ", \"write_bytes\": %" PRIu64 ", \"ios\": %" PRIu64
	       ", \"seconds\": %.6f, \"mib_s\": %.3f, \"iops\": %.1f,\n",
	       f->bytes, r->rbytes, r->wbytes, r->ios, r->secs, f->mib_s, f->iops);
	printf(" \"lat_us\": {\"min\": %.3f, \"mean\": %.3f, \"p50\": %.3f, "
	       "\"p99\": %.3f, \"p99.9\": %.3f, \"max\": %.3f},\n", f->min,
	       f->mean, f->p50, f->p99, f->p999, f->max);
	if (r->have_ctxt)
		printf(" \"ctxt_system\": %" PRIu64 ", \"ctxt_per_io\": %.4f,",
		       f->ctxt, f->ctxt_per_io);
	else
		printf(" \"ctxt_system\": null, \"ctxt_per_io\": null,");
	printf(" \"ctxt_process\": %ld, \"ctxt_process_voluntary\": %ld, "
	       "\"ctxt_process_involuntary\": %ld,\n", f->vcs + f->ivcs, f->vcs,
	       f->ivcs);
	printf(" \"cpu_user_s\": %.6f, \"cpu_sys_s\": %.6f, \"cpu_s\": %.6f}\n",
	       f->user_s, f->sys_s, f->user_s + f->sys_s);
}

static void report(const struct load_opts *o, const struct load_result *r)
{
	struct load_figures f;

	figures(r, &f);
	if (o->json)
		report_json(o, r, &f);
	else
		report_text(o, r, &f);
}

int main(int argc, char **argv)
{
	struct load_opts o;
	int ret = load_parse_opts(argc, argv, &o);

	if (ret)
		return LOAD_EXIT_USAGE;
	ret = load_default_size(&o);
	return ret ? ret : load_run(&o);
}
