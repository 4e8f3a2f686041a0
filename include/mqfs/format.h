/* SPDX-License-Identifier: MIT */
/*
 * format.h - the mqfs on-disk format, byte for byte (FORMAT.md explains
 * every field).  All integers are little endian; configure refuses
 * big-endian hosts, so the structs are used as they lie on disk.
 *
 * The disk-format version (MQFS_FORMAT_VERSION) is separate from the
 * software version: it changes only when these bytes change.
 */
#ifndef MQFS_FORMAT_H
#define MQFS_FORMAT_H

#include <stdint.h>
#include <stddef.h>

#define MQFS_BLOCK_SHIFT	12
#define MQFS_BLOCK_SIZE		(1u << MQFS_BLOCK_SHIFT)
#define MQFS_SECTORS_PER_BLOCK	(MQFS_BLOCK_SIZE >> 9)
#define MQFS_MAGIC		0x5346514du	/* "MQFS" */
#define MQFS_FORMAT_VERSION	1u
#define MQFS_ROOT_INO		1u		/* FUSE_ROOT_ID */
#define MQFS_NAME_MAX		255u
#define MQFS_MIN_BLOCKS		512u		/* 2 MiB */

/* Types of metadata blocks (mqfs_blk_hdr.type). */
enum mqfs_blk_type {
	MQFS_T_SUPER = 1,
	MQFS_T_AG,
	MQFS_T_BBITMAP,
	MQFS_T_IBITMAP,
	MQFS_T_ITABLE,
	MQFS_T_EXTENT,
	MQFS_T_DIR,
	MQFS_T_XATTR,
	MQFS_T_JDESC,
	MQFS_T_JCOMMIT,
	MQFS_T_AGINIT,
	MQFS_T_COUNT
};

/* A type of block that lives at a home address (what a journal copy may
 * be): every type but the journal's own descriptor and commit. */
static inline int mqfs_blk_type_home(unsigned type)
{
	return type && type < MQFS_T_COUNT && type != MQFS_T_JDESC &&
	       type != MQFS_T_JCOMMIT;
}

/*
 * The first 32 bytes of every metadata block.  @csum is XXH3-64 (seed 0)
 * of bytes 8..4095, so it covers the content and the block's own number,
 * type and generation: a misdirected write (wrong @blocknr) or a stale
 * block from another type fails the check like a flipped bit does.
 */
struct mqfs_blk_hdr {
	uint64_t csum;
	uint32_t magic;			/* MQFS_MAGIC */
	uint16_t type;			/* enum mqfs_blk_type */
	uint16_t flags;			/* 0 */
	uint64_t blocknr;		/* the block's home address */
	uint64_t gen;			/* sequence of the last commit */
};
#define MQFS_HDR_SIZE		sizeof(struct mqfs_blk_hdr)
#define MQFS_PAYLOAD		(MQFS_BLOCK_SIZE - MQFS_HDR_SIZE)

/* Superblock state bits. */
enum {
	MQFS_STATE_CLEAN	= 1u << 0,	/* unmounted cleanly */
	MQFS_STATE_ERRORS	= 1u << 1,	/* an error was found; fsck */
};

/*
 * Block 0; a backup copy (its own blocknr in the header) in the last
 * block of the filesystem, written by mkfs and at every clean unmount.
 */
struct mqfs_super {
	struct mqfs_blk_hdr hdr;
	uint32_t format_version;	/* MQFS_FORMAT_VERSION */
	uint32_t block_size;		/* MQFS_BLOCK_SIZE */
	uint64_t block_count;		/* blocks in the filesystem */
	uint32_t ag_count;
	uint32_t ag_blocks;		/* blocks per AG; the last may be shorter */
	uint32_t inodes_per_ag;		/* multiple of MQFS_INODES_PER_BLOCK */
	uint32_t itable_blocks;		/* inode table blocks per AG */
	uint64_t inode_count;		/* ag_count * inodes_per_ag */
	uint64_t journal_start;		/* first journal block */
	uint32_t journal_blocks;
	uint32_t state;			/* MQFS_STATE_* */
	uint64_t root_ino;		/* MQFS_ROOT_INO */
	uint64_t orphan_head;		/* first orphan inode, 0: none */
	uint64_t free_blocks;		/* exact at clean unmount */
	uint64_t free_inodes;		/* exact at clean unmount */
	uint64_t mkfs_time;		/* seconds since the epoch */
	uint64_t mount_time;
	uint64_t write_time;
	uint32_t mount_count;
	uint32_t feature_incompat;	/* MQFS_FEATURE_INCOMPAT_* */
	uint8_t uuid[16];
	char label[64];			/* NUL padded */
	uint64_t journal_seq;		/* next commit sequence */
	uint64_t inode_gen;		/* next inode generation */
	uint32_t feature_compat;	/* MQFS_FEATURE_COMPAT_* */
	uint32_t feature_ro_compat;	/* MQFS_FEATURE_RO_COMPAT_* */
	/* INCOMPAT_LAZY_AGS: the AG-init map; 0 without the feature. */
	uint64_t aginit_blk;
	uint32_t aginit_blocks;
	uint32_t reserved;		/* 0 */
};

/*
 * Feature sets, as ext4's: a reader that does not know a bit of
 * feature_compat may read and write the filesystem; of feature_ro_compat,
 * only read it; of feature_incompat, not even read it.
 *
 * RO_COMPAT_SB_BACKUPS: besides the one in the last block, superblock
 * copies in the last block of AG 1 and of every AG numbered a power of
 * 3, 5 or 7 but the last AG (FORMAT.md §3); their bitmap bits are set
 * and no inode owns them, which an older fsck would take for a leak.
 */
#define MQFS_FEATURE_RO_COMPAT_SB_BACKUPS	0x1u
/*
 * INCOMPAT_LAZY_AGS: an AG whose bit in the AG-init map (aginit_blk) is
 * clear is uninitialised: its header, bitmaps and inode table were
 * never written and mean nothing; it is all free but its own metadata
 * and superblock copy.  A reader that took its blocks for AG metadata
 * would read garbage, hence incompat.
 *
 * INCOMPAT_XATTR_CHAIN: an inode's attributes may take a chain of xattr
 * blocks and a value may be split into fragments (FORMAT.md §9); set by
 * the transaction that first writes either, so an older mqfs, which
 * would read one block and a value's first fragment, refuses the image.
 */
#define MQFS_FEATURE_INCOMPAT_LAZY_AGS		0x1u
#define MQFS_FEATURE_INCOMPAT_XATTR_CHAIN	0x2u
#define MQFS_FEATURE_COMPAT_SUPP	0u
#define MQFS_FEATURE_RO_COMPAT_SUPP	MQFS_FEATURE_RO_COMPAT_SB_BACKUPS
#define MQFS_FEATURE_INCOMPAT_SUPP	(MQFS_FEATURE_INCOMPAT_LAZY_AGS | \
					 MQFS_FEATURE_INCOMPAT_XATTR_CHAIN)

/* Allocation group header: the first block of each AG's metadata. */
struct mqfs_ag {
	struct mqfs_blk_hdr hdr;
	uint32_t ag_index;
	uint32_t block_count;		/* blocks in this AG */
	uint64_t first_block;		/* bit 0 of the block bitmap */
	uint64_t bbitmap_blk;
	uint64_t ibitmap_blk;
	uint64_t itable_blk;		/* first inode table block */
	uint32_t free_blocks;
	uint32_t free_inodes;
	uint32_t dirs;
	/*
	 * INCOMPAT_LAZY_AGS: low 32 bits of XXH3-64 of the superblock's
	 * uuid, so that a stale header of another filesystem in an AG
	 * the AG-init map calls uninitialised is never taken for this
	 * one's (fsck); 0 without the feature.
	 */
	uint32_t fs_tag;
};

/*
 * Block and inode bitmaps: a header, then bit i (byte i / 8, bit i % 8)
 * set when block first_block + i (inode ag * inodes_per_ag + i + 1) is
 * in use.  One block of bits bounds an AG.
 */
#define MQFS_BITMAP_BITS	(MQFS_PAYLOAD * 8)	/* 32512 */
#define MQFS_AG_MAX_BLOCKS	MQFS_BITMAP_BITS

/*
 * AG-init map (INCOMPAT_LAZY_AGS): aginit_blocks blocks of type
 * MQFS_T_AGINIT after AG 0's inode table; after each header, bit i
 * (byte i / 8, bit i % 8) of block k is set when AG
 * k * MQFS_BITMAP_BITS + i is initialised.  Bits past ag_count are 0.
 */

/* Extent flags. */
enum {
	MQFS_EXT_UNWRITTEN	= 1u << 0,	/* allocated, reads as zeroes */
};

/* One extent: @len blocks of the file from @lblk live at @pblk. */
struct mqfs_extent {
	uint64_t lblk;
	uint64_t pblk;
	uint32_t len;
	uint32_t flags;			/* MQFS_EXT_* */
};

/* Index entry of the extent tree: keys >= @lblk live under @child. */
struct mqfs_ext_index {
	uint64_t lblk;
	uint64_t child;
	uint64_t reserved;
};

/* Header of an extent tree node (in the inode or in an EXTENT block). */
struct mqfs_ext_node {
	uint16_t depth;			/* 0: entries are extents */
	uint16_t nr;			/* entries in use */
	uint16_t max;			/* capacity */
	uint16_t reserved;
};

#define MQFS_EXT_ENTRY_SIZE	24u
#define MQFS_EXT_BLOCK_MAX \
	((MQFS_PAYLOAD - sizeof(struct mqfs_ext_node)) / MQFS_EXT_ENTRY_SIZE)
#define MQFS_INLINE_EXTENTS	5u	/* in the inode, no tree */
#define MQFS_ROOT_ENTRIES \
	((MQFS_INODE_DATA - sizeof(struct mqfs_ext_node)) / MQFS_EXT_ENTRY_SIZE)

/* Inode flags (mqfs_inode.iflags). */
enum {
	MQFS_IF_EXTENT_TREE	= 1u << 0,	/* data is a tree root */
	MQFS_IF_INLINE_DATA	= 1u << 1,	/* data holds a symlink target */
};

#define MQFS_INODE_DATA		120u
#define MQFS_INODE_SIZE		240u
#define MQFS_INODES_PER_BLOCK	16u

/* One inode; 16 of them follow the header of an inode table block. */
struct mqfs_inode {
	uint16_t mode;			/* 0: free */
	uint16_t iflags;		/* MQFS_IF_* */
	uint32_t nlink;
	uint32_t uid;
	uint32_t gid;
	uint64_t size;
	uint64_t blocks;		/* 4 KiB blocks allocated to it */
	uint64_t atime_sec, mtime_sec, ctime_sec, crtime_sec;
	uint32_t atime_nsec, mtime_nsec, ctime_nsec, crtime_nsec;
	uint64_t generation;
	uint64_t rdev;
	uint64_t xattr_blk;		/* 0: none */
	uint64_t orphan_next;		/* next orphan, 0: end */
	uint64_t parent;		/* directories: the parent directory */
	union {
		struct mqfs_extent ext[MQFS_INLINE_EXTENTS];
		uint8_t root[MQFS_INODE_DATA];	/* ext_node + entries */
		char symlink[MQFS_INODE_DATA];	/* not NUL terminated */
	} u;
};

/*
 * Directory block: a header, then records tiling bytes 32..4095.  A
 * record with ino 0 is free space.  rec_len is a multiple of 8.
 */
struct mqfs_dirent {
	uint64_t ino;
	uint16_t rec_len;
	uint8_t name_len;
	uint8_t type;			/* DT_* of dirent.h */
	uint32_t hash;			/* low 32 bits of XXH3-64(name) */
	char name[];
};
#define MQFS_DIRENT_HDR		16u
#define MQFS_DIRENT_LEN(n)	((MQFS_DIRENT_HDR + (n) + 7u) & ~7u)

/*
 * Extended attribute block: a header, this, then entries packed from
 * byte 40: u8 name_len, u8 frag, u16 value_len, name (full, such as
 * "user.x"), value, each entry padded to 4 bytes.  A block whose @flags
 * has MQFS_XATTR_F_NEXT is a link of a chain: its last 8 bytes hold the
 * next block (0: the end) and its entries stop before them.  @frag 0 is
 * a whole value; else bits 0-5 are the fragment's index in its value and
 * MQFS_XATTR_FRAG_MORE says another fragment of it follows in chain
 * order.  (@count was a u32 once: @flags is its upper half, always 0 in
 * a block written before chains.)
 */
struct mqfs_xattr_hdr {
	uint16_t count;
	uint16_t flags;			/* MQFS_XATTR_F_* */
	uint32_t used;			/* bytes of entries after this header */
};
#define MQFS_XATTR_ENTRY_HDR	4u
#define MQFS_XATTR_SPACE	(MQFS_PAYLOAD - sizeof(struct mqfs_xattr_hdr))
#define MQFS_XATTR_F_NEXT	0x1u
#define MQFS_XATTR_NEXT_OFF	(MQFS_BLOCK_SIZE - sizeof(uint64_t))
#define MQFS_XATTR_LINK_SPACE	(MQFS_XATTR_SPACE - sizeof(uint64_t))
#define MQFS_XATTR_FRAG_INDEX	0x3fu
#define MQFS_XATTR_FRAG_MORE	0x80u
#define MQFS_XATTR_VALUE_MAX	65536u	/* XATTR_SIZE_MAX */

/*
 * Journal.  A transaction is written at journal_start: descriptor blocks,
 * each followed by the copies of the blocks it lists, then one commit
 * block.  Only the newest transaction is ever in the journal: it is
 * checkpointed (written home and flushed) before the next one is
 * written, so replay is "apply the transaction at journal_start if its
 * commit is valid" and is idempotent.
 */
struct mqfs_jdesc {
	struct mqfs_blk_hdr hdr;	/* gen = transaction sequence */
	uint32_t nr;			/* blocks listed here */
	uint32_t index;			/* descriptor number in the txn */
	uint64_t home[];		/* home address of each copy */
};
#define MQFS_JDESC_MAX \
	((MQFS_BLOCK_SIZE - sizeof(struct mqfs_jdesc)) / sizeof(uint64_t))

struct mqfs_jcommit {
	struct mqfs_blk_hdr hdr;	/* gen = transaction sequence */
	uint32_t nr_blocks;		/* copies in the transaction */
	uint32_t nr_desc;
	uint64_t body_csum;		/* XXH3-64 over descriptors+copies */
	uint64_t commit_sec;
	uint32_t commit_nsec;
	uint32_t reserved;
};

/* Compile-time size checks for every on-disk structure. */
/* Every integer above is little-endian and read in place (configure
 * refuses other hosts too). */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "mqfs's on-disk format is little-endian");
_Static_assert(sizeof(struct mqfs_blk_hdr) == 32, "blk_hdr");
_Static_assert(sizeof(struct mqfs_super) == 272, "super");
_Static_assert(sizeof(struct mqfs_ag) == 32 + 56, "ag");
_Static_assert(sizeof(struct mqfs_extent) == MQFS_EXT_ENTRY_SIZE, "extent");
_Static_assert(sizeof(struct mqfs_ext_index) == MQFS_EXT_ENTRY_SIZE, "index");
_Static_assert(sizeof(struct mqfs_ext_node) == 8, "ext_node");
_Static_assert(sizeof(struct mqfs_inode) == MQFS_INODE_SIZE, "inode");
_Static_assert(MQFS_HDR_SIZE + MQFS_INODES_PER_BLOCK * MQFS_INODE_SIZE
	       <= MQFS_BLOCK_SIZE, "itable");
_Static_assert(sizeof(struct mqfs_dirent) == MQFS_DIRENT_HDR, "dirent");
_Static_assert(sizeof(struct mqfs_xattr_hdr) == 8 &&
	       offsetof(struct mqfs_xattr_hdr, used) == 4, "xattr_hdr");
_Static_assert(sizeof(struct mqfs_jdesc) == 40, "jdesc");
_Static_assert(sizeof(struct mqfs_jcommit) == 64, "jcommit");

/* Byte offset of inode slot @slot in its inode table block. */
static inline size_t mqfs_itable_offset(unsigned slot)
{
	return MQFS_HDR_SIZE + (size_t)slot * MQFS_INODE_SIZE;
}

#endif /* MQFS_FORMAT_H */
