/* SPDX-License-Identifier: MIT */
/*
 * fs.h - the filesystem's contract with its front ends (the FUSE daemon,
 * mkfs.mqfs, fsck.mqfs).
 *
 * Objects are named by inode number; the filesystem keeps FUSE's lookup
 * counts itself (every call that returns an entry adds one, forget
 * drops them).  Every call returns 0 or a negative errno.  Reads and
 * writes are asynchronous: they return after submitting and call @done
 * exactly once, possibly before they return, from any thread.
 */
#ifndef MQFS_FS_H
#define MQFS_FS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>

struct mq_queue;
struct mqfs_fs;
struct mqfs_file;

/* mkfs parameters; zero fields take the documented defaults. */
struct mqfs_mkfs_opts {
	uint64_t size_bytes;		/* 0: the whole device */
	uint64_t inodes;		/* 0: one per 16 KiB */
	uint64_t journal_bytes;		/* 0: 1/64 of the size, 1-32 MiB;
					 * more than fits: -EINVAL */
	uint32_t ag_blocks;		/* 0: MQFS_AG_MAX_BLOCKS (tests: less) */
	const char *label;
	const uint8_t *uuid;		/* NULL: random */
	uint64_t now_sec;		/* 0: the clock (tests fix it) */
	/*
	 * Write every AG now, without INCOMPAT_LAZY_AGS: an image an mqfs
	 * older than the feature can read.  Default: only AG 0, the rest
	 * initialised on first use.
	 */
	bool init_all_ags;
};

/* Report of what mkfs made, for the tool to print. */
struct mqfs_mkfs_report {
	uint64_t block_count, inode_count;
	uint32_t ag_count, ag_blocks, journal_blocks;
	uint8_t uuid[16];
	/* Superblock copies: the first MQFS_REPORT_COPIES, and how many. */
#define MQFS_REPORT_COPIES	16
	uint64_t sb_copy[MQFS_REPORT_COPIES];
	unsigned nr_sb_copies;
};

/*
 * The largest journal_bytes a filesystem of @size_bytes (whole blocks)
 * made with @o can have: a quarter of it, and half an allocation group.
 */
uint64_t mqfs_mkfs_journal_max(uint64_t size_bytes,
			       const struct mqfs_mkfs_opts *o);

/* Format the device behind @q (every write goes through @q). */
int mqfs_mkfs(struct mq_queue *q, const struct mqfs_mkfs_opts *o,
	      struct mqfs_mkfs_report *rep);

enum mqfs_errors_mode {
	MQFS_ERRORS_REMOUNT_RO = 0,	/* default */
	MQFS_ERRORS_CONTINUE,
};

/* When a read moves a file's atime (mount options of the same names). */
enum mqfs_atime_mode {
	MQFS_ATIME_RELATIME = 0,	/* default: once after each change,
					 * or once a day */
	MQFS_ATIME_STRICT,		/* every read */
	MQFS_ATIME_NONE,		/* never */
};

struct mqfs_mount_opts {
	bool readonly;
	enum mqfs_atime_mode atime;
	bool nodiratime;		/* listing a directory moves nothing */
	uint64_t dontcache_dirty_bytes;	/* write-behind bound; 0: 64 MiB */
	enum mqfs_errors_mode errors;
	uint64_t meta_cache_bytes;	/* 0: 32 MiB */
	unsigned commit_interval_ms;	/* 0: 5000 */
	bool no_replay;			/* fsck -n: do not write the journal */
	/*
	 * Called before an allocation that met ENOSPC tries again; returns
	 * once the FORGETs the kernel has sent are served.  An unlinked
	 * inode the kernel still holds is deleted, its blocks and inode
	 * freed, only at its last forget, and FUSE may deliver that forget
	 * after the request that needs the space.  May be NULL.
	 */
	void (*await_forgets)(void *arg);
	void *await_forgets_arg;
	/* Refuse POSIX ACLs (EOPNOTSUPP) and inherit none: -o noacl. */
	bool noacl;
};

/*
 * Mount: read and check the superblock, replay the journal, process the
 * orphan list.  @q stays the caller's; unmount before destroying it.
 */
int mqfs_mount(struct mq_queue *q, const struct mqfs_mount_opts *o,
	       struct mqfs_fs **out);
/*
 * Commit, checkpoint, mark clean, free everything.  0 or the first error;
 * -EUCLEAN when the mount met corrupt metadata (then it is not clean).
 */
int mqfs_unmount(struct mqfs_fs *fs);
struct mq_queue *mqfs_queue(struct mqfs_fs *fs);
bool mqfs_is_readonly(const struct mqfs_fs *fs);
/* Did this mount meet corrupt metadata (whatever errors= did)? */
bool mqfs_had_errors(const struct mqfs_fs *fs);

struct mqfs_entry {
	uint64_t ino;
	uint64_t generation;
	struct stat st;
};

/* Namespace.  Names are not NUL-terminated inside the fs; these take C
 * strings for the front end's convenience. */
int mqfs_lookup(struct mqfs_fs *fs, uint64_t parent, const char *name,
		struct mqfs_entry *e);
/*
 * The inode of a file handle by number (nlookup + 1), cached or not:
 * -ESTALE for a free number or an inode without links that no open
 * file keeps.  The caller compares the generation.
 */
int mqfs_lookup_handle(struct mqfs_fs *fs, uint64_t ino, struct mqfs_entry *e);
void mqfs_forget(struct mqfs_fs *fs, uint64_t ino, uint64_t nlookup);
int mqfs_getattr(struct mqfs_fs *fs, uint64_t ino, struct stat *st);

/* setattr bits (the same meaning as FUSE_SET_ATTR_*). */
enum {
	MQFS_SET_MODE		= 1u << 0,
	MQFS_SET_UID		= 1u << 1,
	MQFS_SET_GID		= 1u << 2,
	MQFS_SET_SIZE		= 1u << 3,
	MQFS_SET_ATIME		= 1u << 4,
	MQFS_SET_MTIME		= 1u << 5,
	MQFS_SET_ATIME_NOW	= 1u << 7,
	MQFS_SET_MTIME_NOW	= 1u << 8,
	MQFS_SET_CTIME		= 1u << 10,
	/*
	 * Drop privileges as the VFS does for a write, truncate or chown:
	 * S_ISUID, S_ISGID when group-executable, and the file capabilities.
	 */
	MQFS_SET_KILL_SUIDGID	= 1u << 11,
};
int mqfs_setattr(struct mqfs_fs *fs, uint64_t ino, const struct stat *attr,
		 unsigned to_set, struct stat *out);

/* Creation: @mode carries the file type (S_IFREG, S_IFDIR, ...). */
int mqfs_mknod(struct mqfs_fs *fs, uint64_t parent, const char *name,
	       mode_t mode, dev_t rdev, uid_t uid, gid_t gid,
	       struct mqfs_entry *e);
/*
 * The same with the caller's @umask, applied unless @parent has a
 * default ACL, which the new inode then inherits instead (its access ACL
 * limited to @mode; a directory takes the default ACL too).
 */
int mqfs_mknod_umask(struct mqfs_fs *fs, uint64_t parent, const char *name,
		     mode_t mode, mode_t umask, dev_t rdev, uid_t uid,
		     gid_t gid, struct mqfs_entry *e);
int mqfs_symlink(struct mqfs_fs *fs, uint64_t parent, const char *name,
		 const char *target, uid_t uid, gid_t gid,
		 struct mqfs_entry *e);
/*
 * A regular file without a name (O_TMPFILE) in directory @parent: no
 * links, freed at its last forget and release, or by the next mount
 * after a crash, unless mqfs_link names it first.  @umask as for
 * mqfs_mknod_umask (a default ACL of @parent decides instead).
 */
int mqfs_tmpfile(struct mqfs_fs *fs, uint64_t parent, mode_t mode,
		 mode_t umask, uid_t uid, gid_t gid, struct mqfs_entry *e);
/* An O_TMPFILE gets its first name; another inode without links: ENOENT. */
int mqfs_link(struct mqfs_fs *fs, uint64_t ino, uint64_t newparent,
	      const char *newname, struct mqfs_entry *e);
int mqfs_unlink(struct mqfs_fs *fs, uint64_t parent, const char *name);
int mqfs_rmdir(struct mqfs_fs *fs, uint64_t parent, const char *name);
/* @flags: 0, RENAME_NOREPLACE or RENAME_EXCHANGE. */
int mqfs_rename(struct mqfs_fs *fs, uint64_t parent, const char *name,
		uint64_t newparent, const char *newname, unsigned flags);
/*
 * @flags: RENAME_WHITEOUT, alone or with RENAME_NOREPLACE: a rename
 * that leaves a whiteout (a character device 0/0, mode 0, owned by
 * @uid:@gid) at @name in the same transaction.  The caller checks
 * CAP_MKNOD (the kernel does).
 */
int mqfs_rename_whiteout(struct mqfs_fs *fs, uint64_t parent,
			 const char *name, uint64_t newparent,
			 const char *newname, unsigned flags, uid_t uid,
			 gid_t gid);
/* Target into @buf (NUL-terminated, truncated to @size - 1). */
int mqfs_readlink(struct mqfs_fs *fs, uint64_t ino, char *buf, size_t size);

/*
 * readdir from cookie @pos (0: start).  @fill gets each entry and the
 * cookie of the one after it; it returns nonzero to stop (buffer full),
 * and that entry is offered again at the next call.  "." and ".." come
 * first.  With @plus each entry is looked up (nlookup + 1) and passed
 * with its attributes; @e is NULL otherwise.
 */
typedef int (*mqfs_fill_t)(void *ctx, const char *name, uint64_t ino,
			   unsigned type, uint64_t next_pos,
			   const struct mqfs_entry *e);
int mqfs_readdir(struct mqfs_fs *fs, uint64_t ino, uint64_t pos, bool plus,
		 mqfs_fill_t fill, void *ctx);

/* Open files.  @flags are open(2) flags. */
int mqfs_open(struct mqfs_fs *fs, uint64_t ino, int flags,
	      struct mqfs_file **out);
int mqfs_release(struct mqfs_fs *fs, struct mqfs_file *f);

/*
 * Cache policies.  A file's own policy is its MQFS_CACHE_XATTR xattr
 * ("kernel", "none" or "dontcache"), which files and directories inherit
 * from the directory they are created in; the front end applies it in
 * place of the mount's cache= mode.
 */
enum mqfs_cache_mode {
	MQFS_CACHE_UNSET = 0,
	MQFS_CACHE_KERNEL,
	MQFS_CACHE_NONE,
	MQFS_CACHE_DONTCACHE,
};
#define MQFS_CACHE_XATTR	"user.mqfs.cache"
/* The name of @m as cache= and the xattr spell it ("kernel"...). */
const char *mqfs_cache_mode_name(enum mqfs_cache_mode m);

/*
 * I/O priority policies.  A file's or directory's MQFS_IOPRIO_XATTR
 * ("rt", "be" with an optional ":0".."7" level, or "idle") is inherited
 * as the cache policy is, and its class applies to the file's data I/O:
 * a caller without an I/O priority of its own (and the kernel's
 * writeback) takes it; a caller with one gets the lower of the two, so
 * a policy can be undercut (ionice -c3) but not escaped.  Values are the
 * kernel's encoding: class << MQFS_IOPRIO_CLASS_SHIFT | level.
 */
#define MQFS_IOPRIO_XATTR	"user.mqfs.ioprio"
#define MQFS_IOPRIO_CLASS_SHIFT	13
/* The value @value names (a trailing NUL or newline allowed), or -EINVAL. */
int mqfs_ioprio_parse(const char *value, size_t size);
/* The canonical text of @ioprio ("be:4", "idle") in @buf; its length. */
size_t mqfs_ioprio_format(int ioprio, char *buf, size_t size);
enum mqfs_cache_mode mqfs_file_policy(struct mqfs_fs *fs,
				      struct mqfs_file *f);
/*
 * Send @f's writes through the write-behind: aligned writes are copied,
 * answered and written back in batches (cache=dontcache).
 */
void mqfs_file_set_dontcache(struct mqfs_file *f);
bool mqfs_file_is_dontcache(const struct mqfs_file *f);
/*
 * close() of a dontcache file: write back what its inode has pending and
 * wait (close-to-open), returning the first write-behind error not yet
 * reported.  A cached file's close owes nothing (0): the kernel's
 * write-back of its pages goes through the write-behind too, and fsync,
 * not close, waits for it, as on a local filesystem.
 */
int mqfs_flush(struct mqfs_fs *fs, struct mqfs_file *f);

/*
 * struct mqfs_io - the filesystem's state for one asynchronous read or
 * write in flight.  The caller provides it with its request (a FUSE
 * request slot, a test's stack frame), so nothing is allocated per I/O;
 * it must stay put from the call until @done has run.  Opaque but for
 * @short_err: when a write's @done gets fewer bytes than were asked, the
 * error that stopped it (-ENOSPC, -EFBIG at the largest file, -EIO...).
 */
#define MQFS_IO_BYTES		512
struct mqfs_io {
	_Alignas(16) unsigned char opaque[MQFS_IO_BYTES];
	int short_err;
	/*
	 * In, for a write: it is the kernel's write-back of its page cache
	 * (FUSE's writeback cache), which keeps the file's mtime and ctime
	 * itself and sends them with a SETATTR, so the write leaves them
	 * alone.
	 */
	bool writeback;
};

/* Bytes of read buffer a read of @size bytes at @off needs (whole blocks). */
#define MQFS_READ_ROOM(off, size) \
	((((uint64_t)(off) & 4095) + (uint64_t)(size) + 4095) & ~(uint64_t)4095)

/*
 * Asynchronous read of [off, off+size).  The device reads straight into
 * @buf: 4 KiB-aligned memory of MQFS_READ_ROOM(off, size) bytes, the
 * data at @buf + off % 4096.  @done gets a pointer to the data (into
 * @buf, or into a read-ahead window: valid during the call only) and
 * its length, or a negative errno in @res.
 */
typedef void (*mqfs_read_done_t)(void *arg, const void *data, ssize_t res);
typedef void (*mqfs_write_done_t)(void *arg, ssize_t res);
void mqfs_read(struct mqfs_fs *fs, struct mqfs_file *f, uint64_t off,
	       size_t size, void *buf, struct mqfs_io *io,
	       mqfs_read_done_t done, void *arg);
/*
 * A write is about to happen: drop the file capabilities first and, for
 * a caller without CAP_FSETID (@suid), suid and executable sgid too
 * (MQFS_SET_KILL_SUIDGID), as the VFS does; cheap when there is nothing
 * to drop (the common case).  1 when the attributes changed (a front end
 * that caches them should say so), 0, or -errno.
 */
int mqfs_file_kill_priv(struct mqfs_fs *fs, struct mqfs_file *f, bool suid);
/* The same by inode number, for a change of content without a handle. */
int mqfs_kill_priv(struct mqfs_fs *fs, uint64_t ino, bool suid);
/*
 * A front end with its own write-back cache (FUSE's, under cache=kernel)
 * could not write back data of @f's inode (@err: -ENOSPC, -EFBIG, -EIO):
 * the write(2) that cached it has long returned.  The error is kept for
 * the inode's next writer: mqfs_file_take_cache_error gives it once, to
 * a handle open for writing, and 0 otherwise.
 */
void mqfs_file_set_cache_error(struct mqfs_file *f, int err);
int mqfs_file_take_cache_error(struct mqfs_file *f);
/*
 * Asynchronous write.  @data must stay valid and unchanged until both
 * mqfs_write has returned and @done has been called (in either order):
 * whole blocks at a 4 KiB-aligned @data are written to the device from
 * where they are, and the write-behind copies after answering.
 */
void mqfs_write(struct mqfs_fs *fs, struct mqfs_file *f, uint64_t off,
		const void *data, size_t size, struct mqfs_io *io,
		mqfs_write_done_t done, void *arg);
int mqfs_fsync(struct mqfs_fs *fs, uint64_t ino, bool datasync);
/* @mode as fallocate(2): 0, KEEP_SIZE, PUNCH_HOLE|KEEP_SIZE, ZERO_RANGE. */
int mqfs_fallocate(struct mqfs_fs *fs, uint64_t ino, int mode, uint64_t off,
		   uint64_t len);
/* SEEK_DATA / SEEK_HOLE (SEEK_SET etc. are the front end's). */
int mqfs_lseek(struct mqfs_fs *fs, uint64_t ino, uint64_t off, int whence,
	       uint64_t *out);

int mqfs_statfs(struct mqfs_fs *fs, struct statvfs *st);
/* Inode numbers run 1 .. mqfs_inode_count(): front ends may use above. */
uint64_t mqfs_inode_count(const struct mqfs_fs *fs);
/* Buffer cache and journal figures, since mount (the control surface). */
struct mqfs_fs_stats {
	uint64_t cache_blocks, cache_hits, cache_misses;
	uint64_t journal_commits, journal_blocks;
};
void mqfs_get_stats(struct mqfs_fs *fs, struct mqfs_fs_stats *out);
/* The dontcache write-behind, since mount. */
struct mqfs_wback_stats {
	uint64_t dirty_bytes;		/* written, not yet on the device */
	uint64_t dirty_limit;		/* dontcache_dirty */
	uint64_t held_bytes;		/* buffer memory (in use + cached) */
	uint64_t held_peak;		/* its highest value */
	uint64_t buffered_bytes;	/* bytes taken by write-behind */
	uint64_t buffered_writes, direct_writes;	/* taken / declined */
	uint64_t buffers_dropped;	/* freed by their completion */
	uint64_t write_batches;		/* plugged batches written */
	uint64_t throttled;		/* writers that waited for room */
};
void mqfs_get_wback_stats(struct mqfs_fs *fs, struct mqfs_wback_stats *out);
/* Commit the running transaction and flush the device. */
int mqfs_sync(struct mqfs_fs *fs);

/*
 * Extended attributes; get/list with @size 0 return the size needed.
 * setxattr's @flags: XATTR_CREATE, XATTR_REPLACE, and for an access ACL
 * MQFS_XATTR_ACL_KILL_SGID (the caller is not in the file's group and
 * lacks CAP_FSETID: S_ISGID goes, as the kernel's posix_acl_update_mode
 * drops it).  The ACL xattrs (system.posix_acl_access, _default) are
 * POSIX ACLs: checked, folded into the mode, inherited; with the mount's
 * noacl they are refused (EOPNOTSUPP).
 */
#define MQFS_XATTR_ACL_KILL_SGID	0x10000
int mqfs_setxattr(struct mqfs_fs *fs, uint64_t ino, const char *name,
		  const void *value, size_t size, int flags);
ssize_t mqfs_getxattr(struct mqfs_fs *fs, uint64_t ino, const char *name,
		      void *value, size_t size);
ssize_t mqfs_listxattr(struct mqfs_fs *fs, uint64_t ino, char *list,
		       size_t size);
int mqfs_removexattr(struct mqfs_fs *fs, uint64_t ino, const char *name);

/* fsck (src/fs/fsck.c): e2fsck exit-code bits. */
enum {
	MQFS_FSCK_OK		= 0,
	MQFS_FSCK_FIXED		= 1,
	MQFS_FSCK_REBOOT	= 2,
	MQFS_FSCK_UNCORRECTED	= 4,
	MQFS_FSCK_ERROR		= 8,
};

enum mqfs_fsck_mode {
	MQFS_FSCK_NO = 0,	/* -n: report only, open nothing for write */
	MQFS_FSCK_YES,		/* -y: fix everything */
	MQFS_FSCK_PREEN,	/* -p: fix what is safe, else exit 4 */
};

struct mqfs_fsck_opts {
	enum mqfs_fsck_mode mode;
	bool force;		/* check even when marked clean */
	bool progress;		/* percentage lines on stderr */
	bool verbose;
	uint64_t sb_block;	/* -b: work from the copy there (0: block 0) */
};

/* Check (and repair) the filesystem on @q; returns MQFS_FSCK_* bits. */
int mqfs_fsck(struct mq_queue *q, const struct mqfs_fsck_opts *o);

#endif /* MQFS_FS_H */
