/*
 * journal.h: how the metadata reaches the device and comes back.
 *
 * The state on the device is a checkpoint (the whole tree as records, in
 * blocks allocated from the data area and listed in the superblock)
 * plus the journal transactions committed after it
 * (format.h).  Changes are made in memory, collected as records, and
 * committed as one transaction: the transaction is one write of header
 * plus payload with a CRC over both, so after a crash it is either
 * entirely there or recognisably not (a torn write fails its CRC), and
 * replay stops before it.  When the journal is full, or at unmount, a
 * checkpoint of the whole tree goes to newly allocated blocks and the
 * superblock switches to it; until that superblock write the old
 * checkpoint and journal are untouched, so a crash at any point leaves one complete state.
 *
 * The crash protocol (invariants J1..J10) is written down, numbered, at
 * the top of journal.c.
 *
 * Errors.  A failed write of a transaction or checkpoint is returned and
 * may be retried (the next commit gets -ENOSPC: checkpoint instead).  A
 * failed flush, or a failed superblock write, stops the journal for good
 * (J7): j->err and j->why say what happened, and every call that would
 * write returns j->err without writing.
 *
 * The caller serialises all calls (the file system's journal lock).
 */
#ifndef TFS_JOURNAL_H
#define TFS_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "format.h"
#include "io.h"
#include "meta.h"

struct tfs_journal {
	struct tfs_dev *dev;
	struct tfs_super sb; /* current superblock */
	uint64_t head;	     /* next free journal byte */
	uint64_t seq;	     /* seq of the next transaction */
	uint64_t replayed;   /* transactions replayed at load */
	uint64_t skipped;    /* not replayed: TFS_JLOAD_NO_REPLAY */
	int err;	     /* J7: -errno once a write or flush failed so
				   that no more metadata may be written */
	char why[768];	     /* what failed, a sentence ("" if !err) */
	char note[512];	     /* load: a warning, e.g. J8's fallback to
				   the older superblock ("" if none) */
	void *iobuf;	     /* aligned scratch, iobuf_len bytes */
	size_t iobuf_len;
	/* J10: where checkpoints get their blocks (NULL: none may be
	 * written), and what each on-disk superblock copy names */
	struct tfs_alloc *alloc;
	struct tfs_super disk[2];
	int disk_ok[2]; /* copy i is valid: its map's blocks held */
};

/*
 * Format: write an empty file system of 'bytes' bytes (at most the
 * device's size) with a root directory owned by uid:gid, mode 0755, to
 * dev: an empty journal, the first checkpoint at the start of the data
 * area and both superblocks.
 * Returns 0 or -errno (-ENOSPC: below the minimum size).
 */
int tfs_journal_format(struct tfs_dev *dev, uint64_t bytes, uint32_t uid,
		       uint32_t gid);
/*
 * The same on a set of members (io.h): member m gets bytes[m] bytes (at
 * most its size; at least TFS_MIN_DEVICE_BYTES on member 0 and
 * TFS_MIN_MEMBER_BYTES on the others), stripe_blocks is the stripe unit
 * (0: TFS_STRIPE_DEFAULT).  Members past the first get their superblock
 * copies, written and flushed before member 0's, so that a set whose
 * member 0 holds a file system always has all its members.  -ENOSPC
 * when a member is too small, -EINVAL for a stripe unit out of range.
 */
int tfs_journal_format_set(struct tfs_dev *dev, const uint64_t *bytes,
			   uint32_t stripe_blocks, uint32_t uid, uint32_t gid);
/* Write both superblock copies of every member past the first from j's
 * superblock (their index, the set's sizes and uuid), then flush: what
 * mkfs wrote, for a new set and for fsck's repair.  0 or -errno. */
int tfs_journal_write_members(struct tfs_journal *j);

/* A new allocator over the data area of every member of the set s
 * describes, all free (the space between members held used); NULL
 * with errno ENOMEM. */
struct tfs_alloc *tfs_journal_new_alloc(const struct tfs_super *s);

/*
 * Load: read the superblocks (the valid copy with the higher generation
 * wins), the active checkpoint and every journal transaction after it
 * into m, which must be empty.  With TFS_JLOAD_NO_REPLAY in flags (a
 * read-only look at the last checkpoint as it is, as ext4's
 * norecovery) the transactions are only counted, into j->skipped, not
 * applied; j must then never commit.  If that checkpoint is damaged, the
 * other copy's is loaded instead, with a sentence in j->note (J8).  On failure returns -errno and writes a
 * sentence for people into err: -EINVAL no tensorfs here, -EUCLEAN
 * corrupted metadata (which part), -EPROTO unknown version, -EIO.
 * On success j is ready for tfs_journal_commit() at the end of the
 * replayed journal.  Caller releases j with tfs_journal_release().
 */
#define TFS_JLOAD_NO_REPLAY 1
int tfs_journal_load(struct tfs_journal *j, struct tfs_dev *dev,
		     struct tfs_meta *m, unsigned int flags, char *err,
		     size_t errlen);
void tfs_journal_release(struct tfs_journal *j);

/*
 * Commit the records in [p, p + len) (nrec of them) as the next
 * transaction, then flush the device.  'flush_first' flushes before the
 * write too, so file data written earlier is durable before the metadata
 * that points to it.  Returns 0, -ENOSPC when the journal has no room
 * (checkpoint instead; nothing was written), or -EIO: after a failed
 * write the journal is full until a checkpoint (J3), after a failed
 * flush it is stopped (j->err, J7).
 */
int tfs_journal_commit(struct tfs_journal *j, const uint8_t *p, size_t len,
		       uint64_t nrec, uint64_t next_ino, uint64_t used_blocks,
		       int flush_first);

/* Flush the device as a step of the protocol ('after' names what was
 * written before, for j->why): 0, or -errno and the journal is stopped
 * (J7).  Returns j->err without flushing once stopped. */
int tfs_journal_flush(struct tfs_journal *j, const char *after);

/* Bytes left in the journal. */
uint64_t tfs_journal_free(const struct tfs_journal *j);

/*
 * Checkpoint: write the whole tree m to blocks allocated from j->alloc
 * (J10), flush, switch the superblock to it with an empty journal
 * (flags: TFS_SB_CLEAN at unmount), flush; then the blocks of the
 * checkpoint no superblock copy names any more go back to j->alloc.
 * -ENOSPC if the free space cannot hold the tree in TFS_MAP_MAX pieces
 * (nothing was written).  A failed write may be retried (its blocks go
 * back); a failed flush or superblock write stops the journal (J7).
 */
int tfs_journal_checkpoint(struct tfs_journal *j, struct tfs_meta *m,
			   uint32_t flags);

/* Rewrite the superblock with new flags (e.g. clear CLEAN at mount). */
int tfs_journal_set_flags(struct tfs_journal *j, uint32_t flags);

/*
 * J10: after load, hand the journal the allocator of the data area (in
 * which the file extents are already marked used): the blocks of the
 * checkpoint loaded are marked used (-EUCLEAN with a sentence in err if
 * file extents hold any of them), and those of the other superblock
 * copy's checkpoint where no extent holds them (that copy is the J8
 * fallback; one that clashes is stale, its blocks are not held).
 * Checkpoints take their blocks from a from then on.
 */
int tfs_journal_hold(struct tfs_journal *j, struct tfs_alloc *a, char *err,
		     size_t errlen);

/* Blocks the checkpoints of the two superblock copies hold (J10). */
uint64_t tfs_journal_held_blocks(const struct tfs_journal *j);

/*
 * J10: the free blocks needed so that any number of checkpoints of
 * 'blocks' blocks each can follow one another: the first one frees the
 * checkpoint of the copy it replaces only if the other copy does not
 * name it too, the second frees the current one, the third and later
 * ones the one two before, of their own size.  So max(b, 2b - q,
 * 3b - q - p), p the current checkpoint's blocks, q those the first
 * one frees: b when the two copies name checkpoints of about that size.
 */
uint64_t tfs_journal_ckpt_need(const struct tfs_journal *j, uint64_t blocks);

/* Blocks a checkpoint of 'bytes' (tfs_meta_bytes()) takes. */
static inline uint64_t tfs_journal_ckpt_blocks(uint64_t bytes)
{
	return (bytes + TFS_BLOCK_SIZE - 1) / TFS_BLOCK_SIZE;
}

#endif
