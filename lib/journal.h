/*
 * journal.h: how the metadata reaches the device and comes back.
 *
 * The state on the device is a checkpoint (the whole tree as records, in
 * one of two slots) plus the journal transactions committed after it
 * (format.h).  Changes are made in memory, collected as records, and
 * committed as one transaction: the transaction is one write of header
 * plus payload with a CRC over both, so after a crash it is either
 * entirely there or recognisably not (a torn write fails its CRC), and
 * replay stops before it.  When the journal is full, or at unmount, a
 * checkpoint of the whole tree goes to the other slot and the superblock
 * switches to it; until that superblock write the old slot and journal
 * are untouched, so a crash at any point leaves one complete state.
 *
 * The crash protocol (invariants J1..J9) is written down, numbered, at
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

#include "format.h"
#include "io.h"
#include "meta.h"

struct tfs_journal {
	struct tfs_dev *dev;
	struct tfs_super sb;	/* current superblock */
	uint64_t head;		/* next free journal byte */
	uint64_t seq;		/* seq of the next transaction */
	uint64_t replayed;	/* transactions replayed at load */
	int err;		/* J7: -errno once a write or flush failed so
				   that no more metadata may be written */
	char why[192];		/* what failed, a sentence ("" if !err) */
	char note[512];		/* load: a warning, e.g. J8's fallback to
				   the older superblock ("" if none) */
	void *iobuf;		/* aligned scratch, iobuf_len bytes */
	size_t iobuf_len;
};

/*
 * Format: write an empty file system of 'bytes' bytes (at most the
 * device's size) with a root directory owned by uid:gid, mode 0755, to
 * dev: an empty journal, the checkpoint in slot 0 and both superblocks.
 * Returns 0 or -errno (-ENOSPC: below the minimum size).
 */
int tfs_journal_format(struct tfs_dev *dev, uint64_t bytes, uint32_t uid,
		       uint32_t gid);

/*
 * Load: read the superblocks (the valid copy with the higher generation
 * wins), the active checkpoint and every journal transaction after it
 * into m, which must be empty.  If that checkpoint is damaged, the
 * other copy's is loaded instead, with a sentence in j->note (J8).  On failure returns -errno and writes a
 * sentence for people into err: -EINVAL no tensorfs here, -EUCLEAN
 * corrupted metadata (which part), -EPROTO unknown version, -EIO.
 * On success j is ready for tfs_journal_commit() at the end of the
 * replayed journal.  Caller releases j with tfs_journal_release().
 */
int tfs_journal_load(struct tfs_journal *j, struct tfs_dev *dev,
		     struct tfs_meta *m, char *err, size_t errlen);
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
 * Checkpoint: write the whole tree m to the inactive slot, flush, switch
 * the superblock to it with an empty journal (flags: TFS_SB_CLEAN at
 * unmount), flush.  -ENOSPC if the tree does not fit in a slot.  A
 * failed write of the slot may be retried; a failed flush or superblock
 * write stops the journal (J7).
 */
int tfs_journal_checkpoint(struct tfs_journal *j, struct tfs_meta *m,
			   uint32_t flags);

/* Rewrite the superblock with new flags (e.g. clear CLEAN at mount). */
int tfs_journal_set_flags(struct tfs_journal *j, uint32_t flags);

/* Bytes a checkpoint slot holds. */
uint64_t tfs_journal_slot_bytes(const struct tfs_journal *j);

#endif
