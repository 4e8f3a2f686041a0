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
#include <time.h>
#include <sys/types.h>
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
	enum mqfs_cache_mode cache;	/* cache=, never UNSET */
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

/* ---- the control surface (ctl.c) ---------------------------------------- */

struct mqfs_ctl_node;
struct mqfs_ctl_file;

/*
 * The .mqfs directory: fixed at mount, read-only afterwards (no lock).
 * Its inodes are @base .. @base + @nr_nodes - 1, above the filesystem's
 * last inode.  Writes: root or @owner (the mounting user) only.
 */
struct mqfs_ctl {
	struct mqfs_fs *fs;
	struct mq_queue *q;
	uint64_t base;
	uid_t owner;
	gid_t group;
	unsigned nr_hw;
	struct mqfs_ctl_node *nodes;
	uint32_t nr_nodes;
	char (*hctx_names)[16];
	struct timespec mtime;
};

/* After mqfs_mount; 0 or -ENOMEM. */
int mqfs_ctl_init(struct mqfs_ctl *c, struct mqfs_fs *fs);
void mqfs_ctl_destroy(struct mqfs_ctl *c);
/* @ino is a control inode. */
bool mqfs_ctl_owns(const struct mqfs_ctl *c, uint64_t ino);
/* @name in @parent is the control surface's: .mqfs in the root, or any
 * name in a control directory. */
bool mqfs_ctl_claims(const struct mqfs_ctl *c, uint64_t parent,
		     const char *name);
/* The handlers' halves; lookups hand out no count that needs keeping. */
int mqfs_ctl_lookup(const struct mqfs_ctl *c, uint64_t parent,
		    const char *name, struct mqfs_entry *e);
int mqfs_ctl_getattr(const struct mqfs_ctl *c, uint64_t ino, struct stat *st);
int mqfs_ctl_setattr(const struct mqfs_ctl *c, uint64_t ino, uid_t uid,
		     const struct stat *attr, unsigned to_set,
		     struct stat *out);
int mqfs_ctl_readdir(const struct mqfs_ctl *c, uint64_t ino, uint64_t pos,
		     bool plus, mqfs_fill_t fill, void *ctx);
/* The text is generated at open; a write-open checks @uid. */
int mqfs_ctl_open(struct mqfs_ctl *c, uint64_t ino, int flags, uid_t uid,
		  struct mqfs_ctl_file **out);
size_t mqfs_ctl_read(const struct mqfs_ctl_file *f, uint64_t off,
		     size_t size, const char **data);
/* Applies the value at once: @size, -EINVAL (nothing changed), -EACCES. */
ssize_t mqfs_ctl_write(struct mqfs_ctl *c, struct mqfs_ctl_file *f,
		       uid_t uid, const char *buf, size_t size);
void mqfs_ctl_release(struct mqfs_ctl_file *f);

/* ---- the running daemon (ops.c) ----------------------------------------- */

/*
 * The session's userdata.  Set up before the session is mounted; @fs is
 * not NULL from then until the loop has ended and the I/O has drained.
 */
struct mqfs_daemon {
	struct mqfs_fs *fs;
	struct mqfs_ctl ctl;		/* set up with @fs */
	bool plug;			/* see mqfs_config */
	enum mqfs_cache_mode cache;	/* the mount's; files may differ */
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
