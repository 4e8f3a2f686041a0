/* SPDX-License-Identifier: MIT */
/*
 * acl_i.h - POSIX ACL values (acl.c) and the filesystem's use of them
 * (acl_fs.c).  The value layout is the kernel's xattr format
 * (include/uapi/linux/posix_acl_xattr.h), little endian like the rest
 * of the disk format, and stored as it is (FORMAT.md, "POSIX ACLs").
 */
#ifndef MQFS_ACL_I_H
#define MQFS_ACL_I_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MQFS_ACL_ACCESS_XATTR	"system.posix_acl_access"
#define MQFS_ACL_DEFAULT_XATTR	"system.posix_acl_default"
#define MQFS_ACL_VERSION	2u

/* Tags, in the order a valid ACL lists them. */
enum {
	MQFS_ACL_USER_OBJ	= 0x01,
	MQFS_ACL_USER		= 0x02,
	MQFS_ACL_GROUP_OBJ	= 0x04,
	MQFS_ACL_GROUP		= 0x08,
	MQFS_ACL_MASK		= 0x10,
	MQFS_ACL_OTHER		= 0x20,
	MQFS_ACL_BASE = MQFS_ACL_USER_OBJ | MQFS_ACL_GROUP_OBJ | MQFS_ACL_OTHER,
};
#define MQFS_ACL_UNDEFINED_ID	UINT32_MAX
/* The mode's permission bits, which an access ACL's base entries mirror. */
#define MQFS_ACL_RWX_UGO	((mode_t)0777)

/*
 * Packed (alignment 1, the layout unchanged): an ACL value lies wherever
 * its xattr entry or the FUSE request puts it, after a name of any
 * length, so its fields are read where they are, at any address.
 */
struct __attribute__((packed)) mqfs_acl_header {
	uint32_t version;
};

struct __attribute__((packed)) mqfs_acl_entry {
	uint16_t tag;
	uint16_t perm;			/* 4 read, 2 write, 1 execute */
	uint32_t id;			/* uid or gid of a named entry */
};
#define MQFS_ACL_ENTRY_SIZE	8u
_Static_assert(sizeof(struct mqfs_acl_header) == 4, "acl header");
_Static_assert(sizeof(struct mqfs_acl_entry) == MQFS_ACL_ENTRY_SIZE,
	       "acl entry");
/* The kernel reads an ACL back into one page (fs/fuse/acl.c). */
#define MQFS_ACL_MAX_ENTRIES	((4096u - 4u) / MQFS_ACL_ENTRY_SIZE)
#define MQFS_ACL_SIZE(n)	(4u + (n) * MQFS_ACL_ENTRY_SIZE)

enum {
	MQFS_ACL_TYPE_NONE = 0,
	MQFS_ACL_TYPE_ACCESS,
	MQFS_ACL_TYPE_DEFAULT,
};

/* ---- values (acl.c): pure ------------------------------------------------ */
/* Which ACL the xattr @name is, or MQFS_ACL_TYPE_NONE. */
int mqfs_acl_type(const char *name);
/* 0, or -EINVAL for a value the kernel's posix_acl_valid would refuse. */
int mqfs_acl_valid(const void *value, size_t size);
/* *perm: the 0777 bits of a valid access ACL; 1 when it says more. */
int mqfs_acl_equiv_mode(const void *value, size_t size, mode_t *perm);
/* The base entries take @mode's bits (chmod). */
void mqfs_acl_chmod(void *value, size_t size, mode_t mode);
/* A copy of a default ACL becomes a new inode's; 1 when worth storing. */
int mqfs_acl_create(void *value, size_t size, mode_t *mode);
/* Do the base entries of a stored access ACL give @mode's bits? */
bool mqfs_acl_matches_mode(const void *value, size_t size, mode_t mode);

#endif
