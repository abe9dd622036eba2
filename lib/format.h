/*
 * format.h: the on-disk format of tensorfs, byte by byte.
 *
 * All integers are little-endian.  The file system lives on a set of 1
 * to TFS_SET_MAX members (block devices or image files), each an array of
 * 4096-byte blocks.  A block number (pblk) is 64-bit and names its member
 * in its top bits: pblk = member << TFS_MEMBER_BITS | block in the member,
 * so a one-member set's block numbers are those of a plain device.
 * Checksums are CRC-32C (crc32c.h).
 *
 * Layout of member 0 (mkfs chooses the journal's size; the superblock
 * records it):
 *
 *   block 0              superblock, copy 0
 *   block 1              superblock, copy 1
 *   journal_start ...    journal: committed transactions, back to back
 *   data_start ... end   file data and checkpoints, in extents
 *
 * Layout of every other member: its superblock in blocks 0 and 1 (both
 * copies written once, by mkfs), then nothing up to block
 * TFS_MEMBER_DATA_START (1 MiB, so its stripes start aligned), then file
 * data and checkpoints to its end.  Superblocks and the journal live on
 * member 0 only; file data and checkpoints anywhere in the set.
 *
 * The whole state of the file system is: the checkpoint the current
 * superblock names plus the journal transactions committed after it.
 * A checkpoint has no place of its own: its blocks are allocated from
 * the data area like a file's, and the superblock lists them (the map,
 * at most TFS_MAP_MAX pieces), so metadata grows into whatever space is
 * free, as data does.  Free space is not stored: it is every data block
 * that no extent maps and no superblock copy's map names.
 *
 * Shared blocks (version 4).  Several extents, of one file or of
 * several, may map the same device blocks: a clone (copy_file_range
 * over whole blocks) maps the destination onto the source's blocks.
 * REFCOUNT records say how many extents map each such block; a block no
 * REFCOUNT record names is mapped by one extent at most.  A block is
 * free only when no extent maps it.
 *
 * Superblock (one 4096-byte block; two copies, written alternately):
 *
 *    0  8  magic "tensorfs"
 *    8  4  version: 4 (blocks may be shared: REFCOUNT records); 3
 *          (a set of members, the same layout without REFCOUNT records:
 *          still read and written; its copies copy data);
 *          2 (one device: no member fields, up to TFS_MAP_MAX_V2 pieces,
 *          still read and written); version 1 had two fixed checkpoint
 *          slots
 *   12  4  block size (4096)
 *   16  8  generation; copy (generation & 1) holds it; the valid copy with
 *          the highest generation is the current one
 *   24  8  blocks of this member (of the device, in version 2)
 *   32  8  journal_start (2)  40  8  journal_blocks (0 off member 0)
 *   48  8  data_start (journal_start + journal_blocks; off member 0
 *          TFS_MEMBER_DATA_START)
 *   56  4  flags: 1 = CLEAN (unmounted cleanly; the journal is empty)
 *   60  4  map pieces: n, 1..TFS_MAP_MAX (0 off member 0)
 *   64  8  checkpoint length in bytes
 *   72  4  checkpoint CRC-32C (over its whole length)
 *   76  4  this member's index, 0..count-1 (version 2: 0)
 *   80  8  ckpt_seq: sequence number of the first journal transaction
 *          that follows the checkpoint
 *   88 16  uuid (of the whole set: every member has the same)
 *  104  8  creation time, ns since the epoch
 *  112  8  last write time of this superblock, ns since the epoch
 *  120  4  member count, 1..TFS_SET_MAX (version 2: 0)
 *  124  4  stripe unit in blocks, 1..TFS_STRIPE_MAX (version 2: 0)
 *  128 16n the map: n pieces of (start pblk u64, blocks u64), in the
 *          order the checkpoint's bytes fill them; each inside the data
 *          area of its member, none overlapping another, together
 *          exactly the blocks the checkpoint's length rounds up to
 *  ... zero
 * 3552 8c version 3: the blocks of each of the count members, in order
 *  ... zero
 * 4092  4  CRC-32C of bytes 0..4091
 *
 * Checkpoint (the map's blocks hold one stream of "length" bytes):
 *
 *    0  8  magic "tfsckpt\0"
 *    8  8  seq (equal to the superblock's ckpt_seq)
 *   16  8  next inode number
 *   24  8  used data blocks (what the extents add up to)
 *   32  8  number of records that follow
 *   40 24  zero
 *   64 ... records (below) that rebuild the whole tree from nothing
 *
 * Journal transaction (starts on a block boundary; padded to one):
 *
 *    0  4  magic "tfsj"
 *    4  4  payload length in bytes
 *    8  8  seq: the checkpoint's ckpt_seq for the first transaction, then
 *          one more for each; replay stops at the first block that is not
 *          the next transaction
 *   16  8  next inode number after this transaction
 *   24  8  used data blocks after this transaction
 *   32  4  number of records
 *   36  4  CRC-32C of bytes 0..63 (with this field 0) and the payload
 *   40 24  zero
 *   64 ... payload: records
 *
 * Record: 4-byte type, 4-byte body length, body.  Bodies:
 *
 *   1 INODE      ino u64, mode u32, uid u32, gid u32, nlink u32, size u64,
 *                atime, mtime, ctime (each sec s64, nsec u32), rdev u64,
 *                parent u64 (directories: the parent's inode number)
 *                (92 bytes).  Creates the inode or sets all its attributes.
 *   2 FREE       ino u64.  The inode, its extents and xattrs are gone.
 *   3 LINK       dir u64, ino u64, name (the rest).  Adds a directory entry.
 *   4 UNLINK     dir u64, name (the rest).  Removes a directory entry.
 *   5 EXTENT     ino u64, lblk u64, pblk u64, len u64, flags u32 (36 bytes).
 *                Maps file blocks lblk.. to device blocks pblk..;
 *                flags 1 = unwritten (reads as zeros).
 *   6 PUNCH      ino u64, lblk u64, len u64.  Unmaps file blocks.
 *   7 XATTR      ino u64, name length u32, name, value (the rest).
 *   8 XATTR_DEL  ino u64, name (the rest).
 *   9 SYMLINK    ino u64, target (the rest).
 *  10 REFCOUNT   pblk u64, len u64, count u32 (20 bytes).  Blocks pblk..
 *                are mapped by count extents; 1 means once (the blocks
 *                leave the table).  Only in version 4; a checkpoint holds
 *                one for each range of equal count >= 2.
 *
 * Names are 1..255 bytes without '/' or NUL; xattr values up to 65536.
 */
#ifndef TFS_FORMAT_H
#define TFS_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define TFS_BLOCK_SIZE	4096u
#define TFS_BLOCK_SHIFT 12
#define TFS_VERSION	4u /* what mkfs writes */
#define TFS_VERSION_V3	3u /* sets without shared blocks; mounted as it is */
#define TFS_VERSION_V2	2u /* one device; still mounted as it is */
/* Pieces a checkpoint's map holds (128 + 16 x 214 bytes fit before the
 * member table): a checkpoint must fit in the 214 largest free extents.
 * A version-2 superblock may list up to 240. */
#define TFS_MAP_MAX    214u
#define TFS_MAP_MAX_V2 240u
/* Sets: pblk = member << TFS_MEMBER_BITS | block (members up to 4 PiB) */
#define TFS_MEMBER_BITS	      40
#define TFS_SET_MAX	      64u
#define TFS_SET_TABLE	      3552u   /* byte offset of the member sizes */
#define TFS_MEMBER_DATA_START 256u    /* first data block off member 0 */
#define TFS_STRIPE_DEFAULT    256u    /* blocks: 1 MiB */
#define TFS_STRIPE_MAX	      262144u /* blocks: 1 GiB */
#define TFS_MIN_MEMBER_BYTES  (16ull << 20)
#define TFS_MAGIC	      "tensorfs"
#define TFS_CKPT_MAGIC	      "tfsckpt"
#define TFS_JOURNAL_MAGIC     0x6a736674u /* "tfsj" */
#define TFS_SB_CLEAN	      0x1u
#define TFS_HDR_SIZE	      64u
#define TFS_NAME_MAX	      255u
#define TFS_XATTR_VALUE_MAX   65536u
#define TFS_XATTR_NAME_MAX    255u
#define TFS_SYMLINK_MAX	      4095u
#define TFS_ROOT_INO	      1u
#define TFS_MIN_DEVICE_BYTES  (64ull << 20)

enum tfs_rec_type {
	TFS_REC_INODE = 1,
	TFS_REC_FREE = 2,
	TFS_REC_LINK = 3,
	TFS_REC_UNLINK = 4,
	TFS_REC_EXTENT = 5,
	TFS_REC_PUNCH = 6,
	TFS_REC_XATTR = 7,
	TFS_REC_XATTR_DEL = 8,
	TFS_REC_SYMLINK = 9,
	TFS_REC_REFCOUNT = 10,
};

#define TFS_REC_HDR	  8u
#define TFS_INODE_BODY	  92u
#define TFS_EXTENT_BODY	  36u
#define TFS_REFCOUNT_BODY 20u

struct tfs_timespec {
	int64_t sec;
	uint32_t nsec;
};

/* The attributes an INODE record carries. */
struct tfs_attr {
	uint64_t ino;
	uint32_t mode, uid, gid, nlink;
	uint64_t size;
	struct tfs_timespec atime, mtime, ctime;
	uint64_t rdev;
	uint64_t parent;
};

/* One piece of a checkpoint's map: blocks [start, start + len). */
struct tfs_piece {
	uint64_t start, len;
};

/* A decoded superblock. */
struct tfs_super {
	uint32_t version;			  /* 0 encodes as TFS_VERSION */
	uint32_t member, nmembers, stripe_blocks; /* 0, 0, 0: a one-member
						     set, default stripe */
	uint64_t member_blocks[TFS_SET_MAX];	  /* [0]: 0 = dev_blocks */
	uint64_t generation;
	uint64_t dev_blocks;
	uint64_t journal_start, journal_blocks;
	uint64_t data_start;
	uint32_t flags;
	uint32_t npieces;
	uint64_t ckpt_len;
	uint32_t ckpt_crc;
	uint64_t ckpt_seq;
	uint8_t uuid[16];
	uint64_t ctime_ns, wtime_ns;
	struct tfs_piece map[TFS_MAP_MAX_V2]; /* the checkpoint's blocks */
};

/* A decoded record.  Pointers point into the buffer it was decoded from
 * (borrowed: valid while that buffer is). */
struct tfs_rec {
	uint32_t type;
	struct tfs_attr attr;	  /* INODE */
	uint64_t ino;		  /* all but INODE, LINK/UNLINK: dir */
	uint64_t child;		  /* LINK */
	uint64_t lblk, pblk, len; /* EXTENT, PUNCH */
	uint32_t flags;		  /* EXTENT; REFCOUNT: the count */
	const char *name;	  /* LINK, UNLINK, XATTR*, SYMLINK */
	size_t name_len;
	const void *value; /* XATTR */
	size_t value_len;
};

/* A growable byte buffer; zero-initialised is empty. */
struct tfs_buf {
	uint8_t *p;
	size_t len, cap;
};

void tfs_buf_release(struct tfs_buf *b);
/* Make room for n more bytes; 0 or -ENOMEM. */
int tfs_buf_reserve(struct tfs_buf *b, size_t n);

/* Encode one record at the end of b.  0 or -ENOMEM (b unchanged). */
int tfs_rec_put_inode(struct tfs_buf *b, const struct tfs_attr *a);
int tfs_rec_put_free(struct tfs_buf *b, uint64_t ino);
int tfs_rec_put_link(struct tfs_buf *b, uint64_t dir, uint64_t ino,
		     const char *name, size_t len);
int tfs_rec_put_unlink(struct tfs_buf *b, uint64_t dir, const char *name,
		       size_t len);
int tfs_rec_put_extent(struct tfs_buf *b, uint64_t ino, uint64_t lblk,
		       uint64_t pblk, uint64_t len, uint32_t flags);
int tfs_rec_put_punch(struct tfs_buf *b, uint64_t ino, uint64_t lblk,
		      uint64_t len);
int tfs_rec_put_xattr(struct tfs_buf *b, uint64_t ino, const char *name,
		      size_t nlen, const void *val, size_t vlen);
int tfs_rec_put_xattr_del(struct tfs_buf *b, uint64_t ino, const char *name,
			  size_t nlen);
int tfs_rec_put_symlink(struct tfs_buf *b, uint64_t ino, const char *target,
			size_t len);
int tfs_rec_put_refcount(struct tfs_buf *b, uint64_t pblk, uint64_t len,
			 uint32_t count);

/* Bytes the encoded record takes, for space accounting. */
size_t tfs_rec_size_link(size_t name_len);
size_t tfs_rec_size_xattr(size_t nlen, size_t vlen);
size_t tfs_rec_size_symlink(size_t len);
#define TFS_REC_SIZE_INODE    (TFS_REC_HDR + TFS_INODE_BODY)
#define TFS_REC_SIZE_EXTENT   (TFS_REC_HDR + TFS_EXTENT_BODY)
#define TFS_REC_SIZE_REFCOUNT (TFS_REC_HDR + TFS_REFCOUNT_BODY)

/*
 * Decode the record at *pos in [p, p + len) and advance *pos.  Returns 1
 * for a record, 0 at the end, -EUCLEAN if the bytes are not a valid record
 * (unknown type, wrong length, name too long or containing '/' or NUL).
 */
int tfs_rec_next(const uint8_t *p, size_t len, size_t *pos, struct tfs_rec *r);

/* Superblock: encode into a 4096-byte block (computing the CRC; version
 * 2 and 3 as themselves, anything else as version 4, a count of 0 as a
 * one-member set), decode and verify (-EUCLEAN: bad CRC or values, a
 * layout other than the regions above back to back inside the member, a
 * member table that does not name this member's size, a map piece
 * outside the data area of its member, overlapping another or not adding
 * up to the checkpoint's length, or offsets that would wrap around 2^64
 * or not fit an off_t; -EINVAL: not a tensorfs, i.e. no magic; -EPROTO:
 * a version this build does not know: tfs_super_version() says which). */
void tfs_super_encode(const struct tfs_super *s, uint8_t *block);
int tfs_super_decode(const uint8_t *block, struct tfs_super *s);
/* The version field of a superblock block (for messages). */
uint32_t tfs_super_version(const uint8_t *block);
/* The first data block of member m of the set s describes (member 0:
 * s->data_start), and its blocks; whether [pblk, pblk + len) lies
 * inside the data area of one member (nothing wraps). */
uint64_t tfs_super_data_start(const struct tfs_super *s, uint32_t m);
uint64_t tfs_super_member_blocks(const struct tfs_super *s, uint32_t m);
int tfs_super_in_data(const struct tfs_super *s, uint64_t pblk, uint64_t len);
/* The data blocks of the whole set, every member's data area added up. */
uint64_t tfs_super_data_blocks(const struct tfs_super *s);
/* Blocks of a superblock's map, in all. */
uint64_t tfs_super_map_blocks(const struct tfs_super *s);
/* Whether two superblocks name the same checkpoint (same seq, same
 * first block). */
int tfs_super_same_ckpt(const struct tfs_super *a, const struct tfs_super *b);

/* Checkpoint and transaction headers (TFS_HDR_SIZE bytes). */
struct tfs_hdr {
	uint64_t seq, next_ino, used_blocks, nrec;
	uint32_t payload_len, crc;
};
void tfs_ckpt_hdr_encode(const struct tfs_hdr *h, uint8_t *p);
int tfs_ckpt_hdr_decode(const uint8_t *p, struct tfs_hdr *h);
/* The journal header's CRC covers header and payload: encode computes it
 * from the payload; decode checks only the magic (-EUCLEAN otherwise) and
 * tfs_txn_verify() checks the CRC once the payload is read. */
void tfs_txn_hdr_encode(const struct tfs_hdr *h, uint8_t *p,
			const uint8_t *payload);
int tfs_txn_hdr_decode(const uint8_t *p, struct tfs_hdr *h);
int tfs_txn_verify(const uint8_t *p, const struct tfs_hdr *h,
		   const uint8_t *payload);

/* The layout mkfs gives a device of dev_blocks blocks: fills the layout
 * fields of s (not the map: the first checkpoint allocates it).  -ENOSPC if the device is below TFS_MIN_DEVICE_BYTES. */
int tfs_layout(uint64_t dev_blocks, struct tfs_super *s);

/* Little-endian helpers. */
static inline void tfs_put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static inline void tfs_put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint64_t tfs_get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}
static inline uint32_t tfs_get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

#endif
