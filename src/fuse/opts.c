/* SPDX-License-Identifier: MIT */
/*
 * opts.c - the daemon's command line.  mqfs's own -o options are taken
 * out of the argument list and checked here, before anything is opened;
 * FUSE's options stay for fuse_session_new, which refuses unknown ones.
 * Every refusal names the option.
 */
#include "config.h"
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuse_i.h"
#include "mqfs/cli.h"
#include "mqfs/elevator.h"

/* The elevator whose tunables are mount options: its attribute table. */
static const struct mq_elevator_type *opts_elv(void)
{
	const struct mq_elevator_type *t = mq_elv_find("mq-deadline");

	return t && t->nr_attrs <= MQFS_MAX_TUNABLES ? t : NULL;
}

/* The index of the tunable called by the @len bytes at @name, or -1. */
static int opts_tunable(const char *name, size_t len)
{
	const struct mq_elevator_type *t = opts_elv();

	for (unsigned i = 0; t && i < t->nr_attrs; i++)
		if (strlen(t->attrs[i].name) == len &&
		    !strncmp(t->attrs[i].name, name, len))
			return (int)i;
	return -1;
}

/* The -o values as given; opts_check() converts them. */
struct opts_raw {
	char *sched, *queue_depth, *nr_requests, *nr_hw_queues, *plug;
	char *complete_delay_us, *cache, *errors, *meta_cache, *commit;
	char *stats, *dontcache_dirty, *fuse_bufs, *bdi_max_ratio;
	char *transport, *uring_depth, *uring_spill, *uring_reap;
	char *uring_pin_to, *driver;
	char *uring_doorbell;
	char *tunables[MQFS_MAX_TUNABLES];
	int sqpoll, uring_pin, ro, fsname, subtype, noacl;
	enum mqfs_atime_mode atime;
	bool nodiratime;
	char *device;
};

enum { KEY_RO, KEY_FSNAME, KEY_SUBTYPE, KEY_ACL, KEY_NOACL,
       KEY_RELATIME, KEY_STRICTATIME, KEY_NOATIME, KEY_ATIME,
       KEY_NODIRATIME, KEY_DIRATIME };

#define RAW(t, f)	{ t, offsetof(struct opts_raw, f), 1 }

static const struct fuse_opt raw_opts[] = {
	RAW("sched=%s", sched),
	RAW("queue_depth=%s", queue_depth),
	RAW("nr_requests=%s", nr_requests),
	RAW("nr_hw_queues=%s", nr_hw_queues),
	RAW("plug=%s", plug),
	RAW("complete_delay_us=%s", complete_delay_us),
	RAW("cache=%s", cache),
	RAW("errors=%s", errors),
	RAW("meta_cache=%s", meta_cache),
	RAW("dontcache_dirty=%s", dontcache_dirty),
	RAW("commit=%s", commit),
	RAW("stats=%s", stats),
	RAW("fuse_bufs=%s", fuse_bufs),
	RAW("bdi_max_ratio=%s", bdi_max_ratio),
	RAW("transport=%s", transport),
	RAW("uring_depth=%s", uring_depth),
	RAW("uring_spill=%s", uring_spill),
	RAW("uring_pin", uring_pin),
	RAW("uring_pin=%s", uring_pin_to),
	RAW("uring_reap=%s", uring_reap),
	RAW("uring_doorbell=%s", uring_doorbell),
	RAW("sqpoll", sqpoll),
	RAW("driver=%s", driver),
	/* Kept for the kernel too: the mount itself is read-only. */
	FUSE_OPT_KEY("ro", KEY_RO),
	FUSE_OPT_KEY("fsname=", KEY_FSNAME),
	FUSE_OPT_KEY("subtype=", KEY_SUBTYPE),
	/* POSIX ACLs, on unless refused; the last one given wins. */
	FUSE_OPT_KEY("acl", KEY_ACL),
	FUSE_OPT_KEY("noacl", KEY_NOACL),
	/* atime: ours (the kernel keeps none for FUSE); libfuse knows
	 * noatime and atime as mount flags, and gets them too. */
	FUSE_OPT_KEY("relatime", KEY_RELATIME),
	FUSE_OPT_KEY("strictatime", KEY_STRICTATIME),
	FUSE_OPT_KEY("norelatime", KEY_STRICTATIME),
	FUSE_OPT_KEY("noatime", KEY_NOATIME),
	FUSE_OPT_KEY("atime", KEY_ATIME),
	FUSE_OPT_KEY("nodiratime", KEY_NODIRATIME),
	FUSE_OPT_KEY("diratime", KEY_DIRATIME),
	/* mount(8) options that mount.fuse3 may pass and libfuse refuses. */
	FUSE_OPT_KEY("defaults", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("auto", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("noauto", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("nofail", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("_netdev", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("user", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("user=", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("nouser", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("users", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("rw", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_END
};

/* Options that take a value, for a clearer message when it is missing. */
static bool opts_takes_value(const char *arg)
{
	if (opts_tunable(arg, strlen(arg)) >= 0)
		return true;
	for (const struct fuse_opt *o = raw_opts; o->templ; o++) {
		size_t n = strlen(arg);

		if (!strncmp(o->templ, arg, n) && !strcmp(o->templ + n, "=%s"))
			return true;
	}
	return false;
}

/* NAME=VALUE for an elevator tunable: kept (1), no memory (-1), or 0. */
static int raw_tunable(struct opts_raw *raw, const char *arg)
{
	const char *eq = strchr(arg, '=');
	int i = eq ? opts_tunable(arg, (size_t)(eq - arg)) : -1;

	if (i < 0)
		return 0;
	free(raw->tunables[i]);		/* the last one given wins */
	raw->tunables[i] = strdup(eq + 1);
	return raw->tunables[i] ? 1 : -1;
}

/* The atime options (the last one given wins): 1 keeps it for libfuse. */
static int raw_atime(struct opts_raw *raw, int key)
{
	switch (key) {
	case KEY_RELATIME:
	case KEY_ATIME:
		raw->atime = MQFS_ATIME_RELATIME;
		break;
	case KEY_STRICTATIME:
		raw->atime = MQFS_ATIME_STRICT;
		break;
	case KEY_NOATIME:
		raw->atime = MQFS_ATIME_NONE;
		break;
	default:
		raw->nodiratime = key == KEY_NODIRATIME;
		break;
	}
	return key == KEY_NOATIME || key == KEY_ATIME;
}

static int raw_proc(void *data, const char *arg, int key,
		    struct fuse_args *outargs)
{
	struct opts_raw *raw = data;
	int tun;

	if (key >= KEY_RELATIME && key <= KEY_DIRATIME)
		return raw_atime(raw, key);
	switch (key) {
	case KEY_RO:
		raw->ro = 1;
		return 1;
	case KEY_FSNAME:
		raw->fsname = 1;
		return 1;
	case KEY_SUBTYPE:
		raw->subtype = 1;
		return 1;
	case KEY_ACL:
	case KEY_NOACL:
		raw->noacl = key == KEY_NOACL;
		return 0;	/* ours: the kernel learns it at INIT */
	case FUSE_OPT_KEY_NONOPT:
		if (raw->device)
			return 1;	/* the mount point: fuse_parse_cmdline's */
		raw->device = strdup(arg);
		return raw->device ? 0 : -1;
	case FUSE_OPT_KEY_OPT:
		tun = raw_tunable(raw, arg);
		if (tun)
			return tun < 0 ? -1 : 0;	/* ours: not libfuse's */
		/* fall through */
	default:
		if (opts_takes_value(arg)) {
			fprintf(stderr, "mqfs: option '%s' needs a value (%s=...)\n",
				arg, arg);
			return -1;
		}
		return 1;	/* FUSE's, or unknown: fuse_session_new decides */
	}
}

static void raw_free(struct opts_raw *raw)
{
	char **strs[] = { &raw->sched, &raw->queue_depth, &raw->nr_requests,
			  &raw->nr_hw_queues, &raw->plug,
			  &raw->complete_delay_us, &raw->cache, &raw->errors,
			  &raw->meta_cache, &raw->commit, &raw->stats,
			  &raw->dontcache_dirty, &raw->fuse_bufs,
			  &raw->bdi_max_ratio, &raw->transport,
			  &raw->uring_depth, &raw->uring_spill, &raw->uring_reap,
			  &raw->uring_pin_to,
			  &raw->driver, &raw->uring_doorbell,
			  &raw->device };

	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		free(*strs[i]);
	for (int i = 0; i < MQFS_MAX_TUNABLES; i++)
		free(raw->tunables[i]);
}

static int bad_value(const char *name, const char *value, const char *want)
{
	fprintf(stderr, "mqfs: bad value for option '%s': '%s' (%s)\n",
		name, value, want);
	return -EINVAL;
}

/* Digits only (no sign, no blanks); with @suffix a K, M or G may follow. */
static int parse_u64(const char *s, bool suffix, uint64_t *out)
{
	unsigned long long v;
	unsigned shift = 0;
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (suffix) {
		switch (*end) {
		case 'k': case 'K': shift = 10; end++; break;
		case 'm': case 'M': shift = 20; end++; break;
		case 'g': case 'G': shift = 30; end++; break;
		}
	}
	if (errno || *end || v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

static int opt_uint(const char *name, const char *s, unsigned lo,
		    unsigned hi, unsigned *out)
{
	char want[64];
	uint64_t v;

	if (!s)
		return 0;
	if (parse_u64(s, false, &v) || v < lo || v > hi) {
		snprintf(want, sizeof(want), "a number from %u to %u", lo, hi);
		return bad_value(name, s, want);
	}
	*out = (unsigned)v;
	return 0;
}

static int opt_choice(const char *name, const char *s,
		      const char *const *choices, unsigned n, unsigned *out)
{
	char want[96] = "one of";

	if (!s)
		return 0;
	for (unsigned i = 0; i < n; i++)
		if (!strcmp(s, choices[i])) {
			*out = i;
			return 0;
		}
	for (unsigned i = 0; i < n; i++)
		snprintf(want + strlen(want), sizeof(want) - strlen(want),
			 "%s %s", i ? "," : "", choices[i]);
	return bad_value(name, s, want);
}

/* An integer in the attribute's range, in its user units. */
static int opt_tunable(const struct mq_elv_attr *a, const char *s,
		       bool deadline)
{
	char want[96];
	long long v;
	char *end;

	if (!s)
		return 0;
	errno = 0;
	v = strtoll(s, &end, 10);
	snprintf(want, sizeof(want), "an integer from %lld to %lld: %s",
		 (long long)a->min, (long long)a->max, a->help);
	if (errno || end == s || *end || v < a->min || v > a->max)
		return bad_value(a->name, s, want);
	if (!deadline) {
		fprintf(stderr, "mqfs: option '%s' needs sched=mq-deadline\n",
			a->name);
		return -EINVAL;
	}
	return 0;
}

static int opt_meta_cache(const char *s, uint64_t *out)
{
	uint64_t v;

	if (!s)
		return 0;
	if (parse_u64(s, true, &v) || v < (1u << 20) ||
	    v > (64ull << 30))
		return bad_value("meta_cache", s,
				 "a size from 1M to 64G, K/M/G suffixes");
	*out = v;
	return 0;
}

static int opt_dontcache_dirty(const char *s, uint64_t *out)
{
	uint64_t v;

	if (!s)
		return 0;
	if (parse_u64(s, true, &v) || v < (1u << 20) || v > (64ull << 30))
		return bad_value("dontcache_dirty", s,
				 "a size from 1M to 64G, K/M/G suffixes");
	*out = v;
	return 0;
}

/* The queue and the device; 0 or the number of bad options. */
static int check_queue(const struct opts_raw *raw, struct mqfs_config *cfg)
{
	static const char *const scheds[] = { "mq-deadline", "none" };
	/* In the order of enum mq_uring_driver. */
	static const char *const drivers[] = { "auto", "uring", "nvme" };
	const struct mq_elevator_type *t = opts_elv();
	unsigned sched = 0, plug = 1, qd = 0, delay = 0, driver = 0;
	int bad = 0;

	bad += !!opt_choice("sched", raw->sched, scheds, 2, &sched);
	cfg->queue.elevator = scheds[sched];
	bad += !!opt_uint("queue_depth", raw->queue_depth, 1, 4096, &qd);
	cfg->queue.queue_depth = qd;
	cfg->uring.queue_depth = qd;
	bad += !!opt_uint("nr_requests", raw->nr_requests, 4, 16384,
			  &cfg->queue.nr_requests);
	bad += !!opt_uint("nr_hw_queues", raw->nr_hw_queues, 1, 64,
			  &cfg->queue.nr_hw_queues);
	bad += !!opt_uint("plug", raw->plug, 0, 1, &plug);
	cfg->plug = plug;
	bad += !!opt_uint("complete_delay_us", raw->complete_delay_us, 0,
			  1000000, &delay);
	for (unsigned i = 0; t && i < t->nr_attrs; i++)
		bad += !!opt_tunable(&t->attrs[i], raw->tunables[i],
				     sched == 0);
	cfg->uring.sqpoll = raw->sqpoll;
	bad += !!opt_choice("driver", raw->driver, drivers, 3, &driver);
	cfg->uring.driver = (enum mq_uring_driver)driver;
	return bad;
}

/*
 * transport= (MQFS_TRANSPORT in the environment when not given: the
 * test suite runs every script on each), uring_depth=, entries per
 * ring: each is a request slot of 1 MiB + 8 KiB, pinned as the device's
 * fixed buffer, so the pool's 1,000-slot bound covers them all, and
 * uring_reap= (ring.c: who completes the rings' device I/O),
 * uring_spill=, entries on each other CPU's queue (ring.c), uring_pin=
 * (ring_pin.c: where the ring threads run) and
 * uring_doorbell= (ring_doorbell.c: when their device I/O goes).
 */
static int check_transport(const struct opts_raw *raw, struct mqfs_config *cfg)
{
	/* In the order of enum mqfs_transport. */
	static const char *const names[] = { "auto", "uring", "dev" };
	static const char *const reapers[] = { "ring", "reaper" };
	/* A bare uring_pin is "own". */
	unsigned reaper = 0, pin = raw->uring_pin ? MQFS_RING_PIN_OWN
						  : MQFS_RING_PIN_AUTO;
	unsigned bell = MQFS_RING_DOORBELL_AUTO;
	const char *t = raw->transport ? raw->transport
				       : getenv("MQFS_TRANSPORT");
	unsigned which = 0;
	int bad;

	if (t && !*t)
		t = NULL;
	bad = !!opt_choice(raw->transport ? "transport" : "MQFS_TRANSPORT",
			   t, names, 3, &which);
	cfg->transport = (enum mqfs_transport)which;
	bad += !!opt_uint("uring_depth", raw->uring_depth, 1, 256,
			  &cfg->uring_depth);
	bad += !!opt_uint("uring_spill", raw->uring_spill, 0, 256,
			  &cfg->uring_spill);
	bad += !!opt_choice("uring_pin", raw->uring_pin_to,
			    mqfs_ring_pin_names, MQFS_RING_PIN_NR, &pin);
	cfg->uring_pin = (enum mqfs_ring_pin)pin;
	bad += !!opt_choice("uring_doorbell", raw->uring_doorbell,
			    mqfs_ring_doorbell_names, MQFS_RING_DOORBELL_NR,
			    &bell);
	cfg->uring_doorbell = (enum mqfs_ring_doorbell)bell;
	bad += !!opt_choice("uring_reap", raw->uring_reap, reapers, 2, &reaper);
	cfg->uring_reaper = reaper == 1;
	return bad;
}

/*
 * The FUSE side: workers (libfuse's -s and max_threads), request buffers
 * beyond the workers' own (each 1 MiB + 8 KiB, pinned: the requests in
 * flight at once), the writeback limits.
 */
static int check_fuse(const struct opts_raw *raw, struct mqfs_config *cfg)
{
	int bad = 0;

	cfg->workers = cfg->cmd.singlethread ? 1 :
		       MQ_MAX(1u, MQ_MIN(cfg->cmd.max_threads, 64u));
	cfg->fuse_bufs = MQFS_DEFAULT_FUSE_BUFS;
	bad += !!opt_uint("fuse_bufs", raw->fuse_bufs, 1, 512, &cfg->fuse_bufs);
	cfg->bdi_max_ratio = MQFS_DEFAULT_BDI_MAX_RATIO;
	bad += !!opt_uint("bdi_max_ratio", raw->bdi_max_ratio, 0, 100,
			  &cfg->bdi_max_ratio);
	return bad + check_transport(raw, cfg);
}

/* The filesystem and the cache mode; 0 or the number of bad options. */
static int check_fs(const struct opts_raw *raw, struct mqfs_config *cfg)
{
	/* In the order of enum mqfs_cache_mode, from MQFS_CACHE_KERNEL. */
	static const char *const caches[] = { "kernel", "none", "dontcache" };
	static const char *const errs[] = { "remount-ro", "continue" };
	unsigned cache = 0, errors = 0, commit = 0;
	int bad = 0;

	bad += !!opt_choice("cache", raw->cache, caches, 3, &cache);
	cfg->cache = (enum mqfs_cache_mode)(MQFS_CACHE_KERNEL + cache);
	bad += !!opt_dontcache_dirty(raw->dontcache_dirty,
				     &cfg->mount.dontcache_dirty_bytes);
	bad += !!opt_choice("errors", raw->errors, errs, 2, &errors);
	cfg->mount.errors = errors ? MQFS_ERRORS_CONTINUE
				   : MQFS_ERRORS_REMOUNT_RO;
	bad += !!opt_meta_cache(raw->meta_cache, &cfg->mount.meta_cache_bytes);
	bad += !!opt_uint("commit", raw->commit, 0, 86400, &commit);
	cfg->mount.commit_interval_ms = commit * 1000;
	cfg->mount.readonly = raw->ro;
	cfg->mount.noacl = raw->noacl;
	cfg->mount.atime = raw->atime;
	cfg->mount.nodiratime = raw->nodiratime;
	return bad;
}

/* Move the strings the running daemon still needs from @raw to @cfg. */
static void take_strings(struct opts_raw *raw, struct mqfs_config *cfg)
{
	cfg->device = raw->device;
	raw->device = NULL;
	cfg->complete_delay_us = raw->complete_delay_us;
	raw->complete_delay_us = NULL;
	cfg->stats_path = raw->stats;
	raw->stats = NULL;
	for (int i = 0; i < MQFS_MAX_TUNABLES; i++) {
		cfg->tunables[i] = raw->tunables[i];
		raw->tunables[i] = NULL;
	}
}

/* mq-deadline's tunables, from its attribute table. */
static void usage_tunables(FILE *f)
{
	const struct mq_elevator_type *t = opts_elv();

	for (unsigned i = 0; t && i < t->nr_attrs; i++) {
		const struct mq_elv_attr *a = &t->attrs[i];
		char opt[40];

		snprintf(opt, sizeof(opt), "%s=N", a->name);
		fprintf(f, "  -o %-25s ", opt);
		mqfs_cli_wrap(f, a->help, 31);
	}
	if (t)
		fprintf(f, "%31s(mq-deadline only; defaults in mqfs(8))\n", "");
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: mqfs DEVICE MOUNTPOINT [-f] [-d] [-s] [-o OPTION[,OPTION...]]\n"
"\n"
"mqfs options (default in brackets):\n"
"  -o sched=mq-deadline|none    I/O scheduler [mq-deadline]\n");
	usage_tunables(f);
	fprintf(f,
"  -o queue_depth=N             device queue depth, 1-4096 [128]\n"
"  -o nr_requests=N             scheduler requests [2*min(queue_depth,128)]\n"
"  -o nr_hw_queues=N            hardware queues, 1-64 [1]\n"
"  -o plug=0|1                  batch each request's I/O in a plug [1]\n"
"  -o complete_delay_us=N       completion worker batching delay [1000]\n"
"  -o sqpoll                    io_uring kernel submission thread [off]\n"
"  -o driver=auto|uring|nvme    O_DIRECT I/O, or NVMe commands on an NVMe\n"
"                               generic device /dev/ngXnY; auto: nvme for\n"
"                               /dev/ngXnY, uring otherwise [auto]\n"
"  -o cache=kernel|none|dontcache\n"
"                               page cache with writeback, direct, or\n"
"                               uncached write-behind [kernel]; a file's\n"
"                               user.mqfs.cache xattr overrides it\n"
"  -o dontcache_dirty=SIZE      write-behind memory bound, K/M/G [64M]\n"
"  -o ro                        read-only mount [off]\n"
"  -o acl|noacl                 POSIX ACLs (setfacl, default ACLs), or\n"
"                               refuse them (EOPNOTSUPP) [acl]\n"
"  -o relatime|strictatime|noatime\n"
"                               when reads move atime: after a change or\n"
"                               once a day, always, never [relatime]\n"
"  -o nodiratime                listing a directory leaves its atime [off]\n"
"  -o errors=remount-ro|continue  on metadata corruption [remount-ro]\n"
"  -o meta_cache=SIZE           metadata buffer cache, K/M/G [32M]\n"
"  -o commit=SECONDS            journal commit interval [5]\n"
"  -o stats=PATH                write the scheduler's statistics to PATH\n"
"                               at unmount [off]\n"
"  -o fuse_bufs=N               FUSE requests in flight beyond the workers'\n"
"                               own, 1 MiB + 8 KiB of pinned memory each,\n"
"                               1-512 [" MQ_STR(MQFS_DEFAULT_FUSE_BUFS) "]\n"
"  -o bdi_max_ratio=PERCENT     the mount's share of dirty page cache\n"
"                               (cache=kernel), 0 keeps the kernel's 1%%\n"
"                               strict limit, 0-100 [" MQ_STR(MQFS_DEFAULT_BDI_MAX_RATIO) "]\n"
"  -o max_threads=N, -s         FUSE worker threads [10], one\n"
"  -o transport=auto|uring|dev  FUSE over io_uring (one ring per CPU) or\n"
"                               /dev/fuse; auto takes io_uring when the\n"
"                               kernel offers it [auto]\n"
"default_permissions is always on: the kernel checks access.\n"
"\n"
"general options:\n"
"  -f                           stay in the foreground\n"
"  -d                           print every FUSE request (implies -f)\n"
"  -o allow_other, allow_root   let other users (or root) in\n"
"  -o auto_unmount              unmount when the daemon dies\n"
"  -h, --help                   this text\n"
"  -V, --version                the version\n");
}

/* Help and version: printed, then the caller exits 0. */
static int show_info(const struct fuse_cmdline_opts *cmd)
{
	if (cmd->show_version)
		mqfs_cli_version("mqfs");
	else
		usage(stdout);
	return 1;
}

/*
 * default_permissions always; the device as the source in mtab and the
 * type fuse.mqfs (as mount -t fuse.mqfs gives), by which the tools know
 * an mqfs mount and its device.
 */
static int add_fuse_opts(struct fuse_args *args, const struct opts_raw *raw,
			 const char *device)
{
	char *opts = NULL, *path = realpath(device, NULL);
	char *fsname = NULL;
	int ret = -ENOMEM;

	if (asprintf(&fsname, "fsname=%s", path ? path : device) < 0)
		fsname = NULL;
	if (fuse_opt_add_opt(&opts, "default_permissions") ||
	    (!raw->subtype && fuse_opt_add_opt(&opts, "subtype=mqfs")) ||
	    (!raw->fsname && (!fsname ||
			      fuse_opt_add_opt_escaped(&opts, fsname))) ||
	    fuse_opt_add_arg(args, "-o") || fuse_opt_add_arg(args, opts))
		goto out;
	ret = 0;
out:
	free(path);
	free(fsname);
	free(opts);
	return ret;
}

static int parse_checked(struct fuse_args *args, struct opts_raw *raw,
			 struct mqfs_config *cfg)
{
	if (fuse_opt_parse(args, raw, raw_opts, raw_proc) ||
	    fuse_parse_cmdline(args, &cfg->cmd))
		return -EINVAL;
	if (cfg->cmd.show_help || cfg->cmd.show_version)
		return show_info(&cfg->cmd);
	if (!raw->device || !cfg->cmd.mountpoint)
		return mqfs_cli_usage_error("mqfs", -EINVAL, "%s", raw->device ?
					    "no mount point given" :
					    "no device given");
	if (check_queue(raw, cfg) + check_fs(raw, cfg) + check_fuse(raw, cfg))
		return -EINVAL;
	if (add_fuse_opts(args, raw, raw->device)) {
		fprintf(stderr, "mqfs: out of memory\n");
		return -ENOMEM;
	}
	take_strings(raw, cfg);
	return 0;
}

int mqfs_config_parse(struct fuse_args *args, struct mqfs_config *cfg)
{
	struct opts_raw raw = { 0 };
	int ret;

	*cfg = (struct mqfs_config){ .plug = true };
	ret = parse_checked(args, &raw, cfg);
	raw_free(&raw);
	if (ret)
		mqfs_config_free(cfg);
	return ret;
}

void mqfs_config_free(struct mqfs_config *cfg)
{
	free(cfg->device);
	free(cfg->cmd.mountpoint);
	free(cfg->complete_delay_us);
	free(cfg->stats_path);
	for (int i = 0; i < MQFS_MAX_TUNABLES; i++)
		free(cfg->tunables[i]);
	*cfg = (struct mqfs_config){ 0 };
}

static int tune_one(struct mq_queue *q, const char *name, const char *value)
{
	int ret;

	if (!value)
		return 0;
	ret = mq_queue_attr_store(q, name, value);
	if (ret)
		return bad_value(name, value, ret == -EINVAL ? "out of range"
				 : strerror(-ret));
	return 0;
}

int mqfs_config_tune_queue(const struct mqfs_config *cfg,
			   struct mq_queue *q)
{
	const struct mq_elevator_type *t = opts_elv();
	int bad = 0;

	for (unsigned i = 0; t && i < t->nr_attrs; i++)
		bad += !!tune_one(q, t->attrs[i].name, cfg->tunables[i]);
	bad += !!tune_one(q, "complete_delay_us", cfg->complete_delay_us);
	return bad ? -EINVAL : 0;
}
