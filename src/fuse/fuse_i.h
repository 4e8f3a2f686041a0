/* SPDX-License-Identifier: MIT */
/*
 * fuse_i.h - the FUSE daemon's private interfaces: its configuration
 * (opts.c), the low-level operations (ops.c) and the background start
 * (daemon.c), tied together by main.c.
 */
#ifndef MQFS_FUSE_I_H
#define MQFS_FUSE_I_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdbool.h>
#include "mqfs/blk.h"
#include "mqfs/fs.h"
#include "mqfs/mq_dev.h"

/* ---- configuration (opts.c) -------------------------------------------- */

/* mq-deadline tunables settable at mount, in the queue's vocabulary. */
#define MQFS_NR_TUNABLES	7

/* The command line, parsed and checked. */
struct mqfs_config {
	char *device;			/* as given on the command line */
	struct fuse_cmdline_opts cmd;	/* mountpoint, -f, -d, -s, threads */
	struct mq_uring_config uring;
	struct mq_queue_config queue;
	/* Strings handed to mq_queue_attr_store; NULL: the default. */
	char *tunables[MQFS_NR_TUNABLES];
	char *complete_delay_us;
	char *stats_path;		/* stats=: report written at unmount */
	bool plug;			/* handlers run inside a plug */
	bool direct_io;			/* cache=none */
	struct mqfs_mount_opts mount;
};

/*
 * Parse argv into @cfg and leave in @args what fuse_session_new takes
 * (FUSE's own options plus default_permissions and fsname).  0: go on;
 * 1: help or version printed, exit 0; -EINVAL: bad command line, the
 * message printed.
 */
int mqfs_config_parse(struct fuse_args *args, struct mqfs_config *cfg);
void mqfs_config_free(struct mqfs_config *cfg);
/* Apply the tunables to a new queue; a refused value is reported. */
int mqfs_config_tune_queue(const struct mqfs_config *cfg,
			   struct mq_queue *q);

/* ---- the running daemon (ops.c) ----------------------------------------- */

/*
 * The session's userdata.  Set up before the session is mounted; @fs is
 * not NULL from then until the loop has ended and the I/O has drained.
 */
struct mqfs_daemon {
	struct mqfs_fs *fs;
	bool plug;			/* see mqfs_config */
	bool direct_io;
	unsigned max_background;	/* FUSE background requests */
	/* Decided by init, read-only afterwards. */
	bool writeback;			/* kernel writeback cache granted */
	bool dont_mask;			/* umask is ours to apply */
	/* Reads and writes whose completion has not replied yet. */
	pthread_mutex_t lock;
	pthread_cond_t idle;
	unsigned inflight;
};

extern const struct fuse_lowlevel_ops mqfs_ll_ops;

void mqfs_daemon_init(struct mqfs_daemon *d, const struct mqfs_config *cfg);
/* Wait until every asynchronous read and write has replied. */
void mqfs_daemon_drain(struct mqfs_daemon *d);
void mqfs_daemon_destroy(struct mqfs_daemon *d);

/* ---- background start and logging (daemon.c) ---------------------------- */

/*
 * Without -f: fork now, before any thread exists (threads do not survive
 * a fork, and the device, the queue and the journal all start some).
 * The parent waits for mqfs_bg_ready() and exits with the status it
 * reports, so errors before the mount still reach the caller's exit
 * status and terminal.  Returns in the child (or at once with -f).
 */
int mqfs_bg_start(bool foreground);
/*
 * Report the start-up @status (0: mounted) to the waiting parent.  On
 * success the child detaches: stdin/stdout go to /dev/null and stderr
 * lines go to syslog (facility daemon, ident "mqfs").
 */
void mqfs_bg_ready(int status);
/* Flush and stop the syslog forwarder (before exit). */
void mqfs_bg_finish(void);
/*
 * Block the termination signals in the calling thread so that helper
 * threads started meanwhile inherit the mask (libfuse's handlers must
 * run on the thread waiting in the session loop); unblock before it.
 */
void mqfs_signals_block(void);
void mqfs_signals_unblock(void);

#endif /* MQFS_FUSE_I_H */
