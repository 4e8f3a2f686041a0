// SPDX-License-Identifier: MIT
/*
 * acl.c - POSIX ACLs as values: the system.posix_acl_access and
 * system.posix_acl_default xattrs in the kernel's format (struct
 * posix_acl_xattr_header, version 2, then 8-byte entries), which is also
 * how mqfs stores them (FORMAT.md, "POSIX ACLs").
 *
 * Pure functions on the value's bytes, with the kernel's rules
 * (fs/posix_acl.c): posix_acl_valid for what a value may hold,
 * posix_acl_equiv_mode for the mode an access ACL gives and whether it
 * says more than the mode, posix_acl_chmod_masq for chmod, and
 * posix_acl_create_masq for a new inode under a default ACL.  The
 * filesystem's side (what is stored, in which transaction) is
 * acl_fs.c; fsck and the fuzzer use the checks here too.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "acl_i.h"

/* The value's entries, or NULL when the value is not even shaped right. */
static struct mqfs_acl_entry *acl_entries(const void *value, size_t size,
					  unsigned *count)
{
	const struct mqfs_acl_header *h = value;

	if (size < sizeof(*h) || (size - sizeof(*h)) % MQFS_ACL_ENTRY_SIZE ||
	    h->version != MQFS_ACL_VERSION)
		return NULL;
	*count = (unsigned)((size - sizeof(*h)) / MQFS_ACL_ENTRY_SIZE);
	return (struct mqfs_acl_entry *)((char *)value + sizeof(*h));
}

/*
 * Entries sorted by tag, the named ones by id, one of each base entry
 * (USER_OBJ, GROUP_OBJ, OTHER), a MASK when named entries exist, and
 * permissions within rwx: what the kernel's posix_acl_valid demands.
 * The id of an unnamed entry means nothing (the kernel writes -1).
 */
int mqfs_acl_valid(const void *value, size_t size)
{
	const struct mqfs_acl_entry *e;
	unsigned count, i, seen = 0, prev_tag = 0;
	uint32_t prev_id = 0;

	e = acl_entries(value, size, &count);
	if (!e || !count || count > MQFS_ACL_MAX_ENTRIES)
		return -EINVAL;
	for (i = 0; i < count; i++) {
		unsigned tag = e[i].tag;

		if (e[i].perm & ~7u || tag < prev_tag)
			return -EINVAL;
		switch (tag) {
		case MQFS_ACL_USER_OBJ: case MQFS_ACL_GROUP_OBJ:
		case MQFS_ACL_MASK: case MQFS_ACL_OTHER:
			if (seen & tag)
				return -EINVAL;	/* a second one */
			break;
		case MQFS_ACL_USER: case MQFS_ACL_GROUP:
			if ((seen & tag) && e[i].id <= prev_id)
				return -EINVAL;	/* unsorted or twice */
			break;
		default:
			return -EINVAL;
		}
		seen |= tag;
		prev_tag = tag;
		prev_id = e[i].id;
	}
	if ((seen & MQFS_ACL_BASE) != MQFS_ACL_BASE)
		return -EINVAL;
	if ((seen & (MQFS_ACL_USER | MQFS_ACL_GROUP)) && !(seen & MQFS_ACL_MASK))
		return -EINVAL;
	return 0;
}

/*
 * The permission bits (0777) a valid access ACL gives the mode: owner
 * from USER_OBJ, group from MASK (else GROUP_OBJ), other from OTHER.
 * Returns 0 when the ACL says nothing more than that mode (only the base
 * entries: it is folded into the mode, not stored), 1 when it does.
 */
int mqfs_acl_equiv_mode(const void *value, size_t size, mode_t *perm)
{
	const struct mqfs_acl_entry *e;
	unsigned count, i;
	int not_equiv = 0;
	mode_t m = 0;

	e = acl_entries(value, size, &count);
	for (i = 0; e && i < count; i++) {
		mode_t p = e[i].perm & 7u;

		switch (e[i].tag) {
		case MQFS_ACL_USER_OBJ:
			m |= p << 6;
			break;
		case MQFS_ACL_GROUP_OBJ:
			m |= p << 3;
			break;
		case MQFS_ACL_MASK:	/* sorted: after GROUP_OBJ */
			m = (m & ~(mode_t)S_IRWXG) | p << 3;
			not_equiv = 1;
			break;
		case MQFS_ACL_OTHER:
			m |= p;
			break;
		default:
			not_equiv = 1;
		}
	}
	*perm = m;
	return not_equiv;
}

/* chmod: the owner, mask (else group) and other entries take @mode's. */
void mqfs_acl_chmod(void *value, size_t size, mode_t mode)
{
	struct mqfs_acl_entry *e, *group = NULL, *mask = NULL;
	unsigned count, i;

	e = acl_entries(value, size, &count);
	for (i = 0; e && i < count; i++) {
		if (e[i].tag == MQFS_ACL_USER_OBJ)
			e[i].perm = (uint16_t)((mode >> 6) & 7u);
		else if (e[i].tag == MQFS_ACL_GROUP_OBJ)
			group = &e[i];
		else if (e[i].tag == MQFS_ACL_MASK)
			mask = &e[i];
		else if (e[i].tag == MQFS_ACL_OTHER)
			e[i].perm = (uint16_t)(mode & 7u);
	}
	if (mask)
		group = mask;
	if (group)
		group->perm = (uint16_t)((mode >> 3) & 7u);
}

/*
 * A new inode under a default ACL: @value (a copy of the parent's
 * default ACL) becomes the new inode's access ACL, its owner, other and
 * mask (else group) entries limited to the requested @mode, and @mode's
 * permission bits limited to those entries in turn.  Returns 0 when the
 * result is only the mode (nothing to store), 1 when it is more.
 */
int mqfs_acl_create(void *value, size_t size, mode_t *mode)
{
	struct mqfs_acl_entry *e, *group = NULL, *mask = NULL;
	mode_t m = *mode & MQFS_ACL_RWX_UGO;
	unsigned count, i;
	int not_equiv = 0;

	e = acl_entries(value, size, &count);
	for (i = 0; e && i < count; i++) {
		switch (e[i].tag) {
		case MQFS_ACL_USER_OBJ:
			e[i].perm &= (uint16_t)((m >> 6) & 7u);
			m &= (mode_t)e[i].perm << 6 | ~(mode_t)S_IRWXU;
			break;
		case MQFS_ACL_GROUP_OBJ:
			group = &e[i];
			break;
		case MQFS_ACL_MASK:
			mask = &e[i];
			not_equiv = 1;
			break;
		case MQFS_ACL_OTHER:
			e[i].perm &= (uint16_t)(m & 7u);
			m &= (mode_t)e[i].perm | ~(mode_t)S_IRWXO;
			break;
		default:
			not_equiv = 1;
		}
	}
	if (mask)
		group = mask;
	if (group) {
		group->perm &= (uint16_t)((m >> 3) & 7u);
		m &= (mode_t)group->perm << 3 | ~(mode_t)S_IRWXG;
	}
	*mode = (*mode & ~(mode_t)MQFS_ACL_RWX_UGO) | m;
	return not_equiv;
}

/* Does a stored access ACL agree with the inode's @mode (fsck)? */
bool mqfs_acl_matches_mode(const void *value, size_t size, mode_t mode)
{
	mode_t perm;

	mqfs_acl_equiv_mode(value, size, &perm);
	return perm == (mode & MQFS_ACL_RWX_UGO);
}

int mqfs_acl_type(const char *name)
{
	if (!strcmp(name, MQFS_ACL_ACCESS_XATTR))
		return MQFS_ACL_TYPE_ACCESS;
	if (!strcmp(name, MQFS_ACL_DEFAULT_XATTR))
		return MQFS_ACL_TYPE_DEFAULT;
	return MQFS_ACL_TYPE_NONE;
}
