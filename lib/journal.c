/*
 * journal.c: format, load (recovery), commit and checkpoint, and the
 * crash protocol they follow.
 *
 * The state on the device is a checkpoint (the whole tree, in blocks
 * allocated from the data area and listed by the superblock's map) plus
 * the journal transactions committed after it, found through the newer
 * of two superblock copies (format.h has the bytes).
 *
 * ===== the crash protocol =====
 *
 * What reaches the device before what, and what load may assume.  These
 * hold for a crash, a power cut (writes not yet flushed are lost, any of
 * them may have reached the medium early) and a failed read, write or
 * flush at any point; together they make the device load to a state
 * that holds everything fsync'd before the fault.  Code, fsck checks and
 * crash or fault tests name the invariant they rely on or protect.
 *
 * J1  Data before the metadata that points to it.  A commit flushes the
 *     device before it writes the transaction (flush_first, commit.c),
 *     so a committed extent never maps blocks whose data is not on the
 *     device; unwritten extents read as zeros until their write-back is
 *     done (file.c).  fsck cannot see data; the crash tests check it.
 * J2  A transaction is one write, header and payload under one CRC
 *     (format.h), flushed before the commit returns.  Replay applies
 *     transactions in journal order while each has the next seq and a
 *     good CRC, and stops at the first that does not: a torn tail.  If
 *     a valid transaction with a later seq follows, the journal is
 *     damaged in the middle and load fails (-EUCLEAN) rather than drop
 *     committed work.  fsck: loading checks every CRC.
 * J3  A sequence number is used once.  Each checkpoint takes a new one
 *     (ckpt_seq, above every transaction before it) and the transactions
 *     after it count on from there.  A transaction whose write was
 *     issued burns its number and its place, even if the write or its
 *     flush failed, and the journal takes no transaction after it until
 *     a checkpoint.  So replay never applies a transaction twice (one
 *     the checkpoint holds), nor one of another epoch (checkpoint).
 * J4  A checkpoint goes to newly allocated blocks (J10) and is flushed
 *     before the superblock that names them is written; that superblock
 *     goes to the copy not holding the current generation and is
 *     flushed before the journal is reused from its start.  A crash
 *     anywhere leaves the old superblock, checkpoint and journal intact,
 *     or the new ones complete.
 * J5  Never write into a checkpoint, or the part of the journal, that a
 *     superblock copy possibly newest on the device depends on.  After
 *     J4's steps succeed only the current copy qualifies for the
 *     journal; after a superblock write or flush fails either copy may,
 *     so nothing more is written (J7).
 * J6  Blocks freed by a transaction are reused only once it is durable
 *     (the pending list, commit.c), and only after write-backs still in
 *     flight to them have finished.  fsck: no two extents share a block
 *     that J12's counts do not say is shared (load's allocator,
 *     tfs_check_extents()), used + free = data area, a shared block
 *     counted once.
 * J7  The error state.  A failed flush (the device may have dropped any
 *     write since the last good flush, data or metadata: a later commit
 *     would point at lost data), a failed superblock write, or a device
 *     found truncated or deleted under the mount (fs.c) stop all
 *     metadata writes for good (j->err; the mount's error state: changes
 *     fail with EROFS, fsync and unmount report the error).  The device
 *     then holds one of the states of J4.  A failed transaction or
 *     checkpoint write (the write itself, before any flush) is retried
 *     safely: J3 burns the transaction, the next commit is a checkpoint
 *     to new blocks (J10); a failed checkpoint's blocks go back.
 * J8  Load takes the valid superblock copy with the higher generation.
 *     If its checkpoint is damaged (CRC, header) and the other copy is
 *     valid and names another checkpoint, load falls back to that copy,
 *     its checkpoint and the transactions of its epoch still intact in the
 *     journal (J3 keeps those of newer epochs out; no "damaged in the
 *     middle" check, since a newer epoch reuses the journal), and says
 *     so in j->note: an older state, but a consistent one.  The device
 *     must be as big as the file system says.  fsck reports a fallback.
 * J9  Every committed state is a consistent tree; each transaction
 *     keeps it one.  What fsck's tfs_check() verifies (check.c):
 *     J9a every entry names a live inode, never the root;
 *     J9b a directory has one entry and its ".." names that parent;
 *     J9c an inode's link count is the number of entries naming it
 *         (a directory's: 2 + its subdirectories);
 *     J9d every inode with links is reachable from the root (inodes
 *         without links are orphans, freed at the next mount);
 *     J9e an extent map is sorted and within the data area (J6 for
 *         overlaps);
 *     J9f a symlink has a target.
 * J10 Metadata space is data space.  A checkpoint's blocks are
 *     allocated from the free data space and listed in the superblock's
 *     map (at most TFS_MAP_MAX pieces).  The blocks that either
 *     superblock copy on the device names are never given out (load
 *     marks both maps used, tfs_journal_hold()); those of the copy a
 *     superblock write replaced go back to the allocator only once that
 *     write is flushed and no copy names them (write_super()), since
 *     until then J8 may fall back to them.  The file system keeps free
 *     what the next checkpoints take (tfs_journal_ckpt_need(): up to
 *     three times the tree's size when the copies name small ones, the
 *     tree's size in the steady state; tfs_txn_room(), commit.c), in
 *     the TFS_MAP_MAX largest free extents (tfs_txn_ckpt_fits()): data
 *     writes and new metadata get ENOSPC first, so a checkpoint always
 *     finds its blocks and space and inodes run out together.
 *     Load checks every map piece against the data area (format.c,
 *     no wrap near 2^64) and against the file extents; fsck: used +
 *     free + checkpoint blocks = data area.
 * J11 A block is discarded (trim: a hole punched in an image, BLKDISCARD
 *     on a device) only when no state load can reach still maps it:
 *     neither the committed one nor the one J8 falls back to, the older
 *     superblock copy's checkpoint plus whatever of its epoch's journal
 *     is intact.  A block freed while checkpoint C(e) is the newest is
 *     still mapped by C(e) or by the older C(e-1)'s epoch until it leaves
 *     both copies: once the checkpoint that frees it is durable (J6's
 *     commit, or C(e+1)), C(e+1) holds the current copy and C(e) the
 *     older; only after C(e+2) is durable (its superblock flushed, J4)
 *     are both copies past it.  The ordering: freed blocks go to the
 *     allocator when their commit is durable (J6) and wait there in
 *     age sets (alloc.c); each durable checkpoint (tfs_journal_checkpoint()
 *     returned 0) ages them one step (tfs_alloc_age() in commit.c), and
 *     only those freed before the last two checkpoints are ready.  A
 *     block handed out again leaves the sets, so reuse restarts the wait.
 *     At mount all free space waits as if just freed: the older copy may
 *     map any of it.  A ready block is taken out of the free space while
 *     it is discarded (commit.c's tfs_txn_discard()), so no new owner's
 *     write races the discard, and nothing is discarded in the error
 *     state (J7).  A failed checkpoint ages nothing.  A discard that a
 *     power cut loses leaves stale data in a free block, as any free
 *     block may hold.
 * J12 Shared blocks (format version 4).  A block's count (its REFCOUNT
 *     record; 1 where none names it) is the number of extents mapping
 *     it.  A change that maps or unmaps extents of shared blocks (a
 *     clone, copy-on-write, truncate, punch, unlink) puts the new counts
 *     in the transaction that holds its extent records, so J2 applies
 *     them together and every committed state keeps the rule; a
 *     checkpoint writes the whole table.  A block goes to J6's pending
 *     list only when its count reaches zero.  No write reaches a block
 *     whose count is above one: the writer first gets blocks of its own
 *     (copy-on-write, file.c), the kept bytes copied there before the
 *     commit that maps them (J1).  Load counts the extents: a count
 *     above them (a decrement that found no memory to split a range)
 *     is set to them, space found again; a count below them is damage,
 *     refused unless fsck -y sets it from the extents.  fsck: load's
 *     recount (fs.c), and J6's overlap check beyond the counts.
 *
 * J12 Sets of members (format.h).  Superblocks and the journal live on
 *     member 0 only; checkpoint and file data blocks may be on any
 *     member (extents and map pieces carry it in their pblk).  A flush
 *     (tfs_dev_flush(), io.c) covers member 0 and every member written
 *     or discarded since its own last good flush, all before it returns,
 *     so J1's flush before a commit and J4's before a superblock write
 *     cover every member holding data or checkpoint blocks the new state
 *     points at.  A flush that fails on any member is J7's failed flush:
 *     that member may have dropped any write since its last good one.
 *     Members past the first hold only their superblocks, written and
 *     flushed once by mkfs before member 0's first
 *     (tfs_journal_format_set()), so a member 0 that names a set implies
 *     members that name it too.  Load takes member 0 only with every
 *     member the set names, each of the recorded size and the same uuid
 *     (set.c; J8's "as big as the file system says" per member).
 *
 * Load reads both superblock copies and takes the valid one with the
 * higher generation (J8).  The checkpoint's CRC is checked before any of
 * it is used.  Journal replay then follows J2.
 *
 * Checkpoint allocates the blocks the tree takes (tfs_meta_bytes() is
 * exact), largest free extents first, and writes the tree in 1 MiB
 * pieces straight from the record encoder into them, so it needs no
 * memory proportional to the tree.  Superblock generations alternate between the two copies.
 */
#include "journal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include "crc32c.h"
#include "units.h"

#define CHUNK (1u << 20)

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t round_up(uint64_t x)
{
	return (x + TFS_BLOCK_SIZE - 1) & ~(uint64_t)(TFS_BLOCK_SIZE - 1);
}

/* J7: stop writing metadata for good; rc and a sentence say why. */
static void stop(struct tfs_journal *j, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void stop(struct tfs_journal *j, int rc, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (j->err)
		return;
	va_start(ap, fmt);
	n = vsnprintf(j->why, sizeof(j->why), fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < sizeof(j->why))
		snprintf(j->why + n, sizeof(j->why) - (size_t)n, ": %s",
			 strerror(-rc));
	j->err = rc;
}

int tfs_journal_flush(struct tfs_journal *j, const char *after)
{
	char where[TFS_WHERE_LEN];
	int rc;

	if (j->err)
		return j->err;
	rc = tfs_dev_flush(j->dev);
	if (rc)
		stop(j, rc, "device flush after %s failed%s", after,
		     tfs_dev_failure_where(j->dev, where, sizeof(where)));
	return rc;
}

/* J10: give the blocks of a map back to the allocator.  A piece the
 * allocator does not hold as used (a stale copy's, not marked at load)
 * is refused by it and stays as it is. */
static void release_map(struct tfs_journal *j, const struct tfs_super *s)
{
	if (!j->alloc)
		return;
	/* as freed blocks: discarded in time (J11), with margin to spare */
	for (uint32_t i = 0; i < s->npieces && i < TFS_MAP_MAX_V2; i++)
		(void)tfs_alloc_put_freed(j->alloc, s->map[i].start,
					  s->map[i].len);
}

/*
 * Write the superblock, next generation, to its copy and flush.  A
 * failure leaves either copy possibly the newest on the device: J5 and
 * J7 say stop.  Once it is durable, the checkpoint the replaced copy
 * named goes back to the allocator unless a copy still names it (J10).
 */
static int write_super(struct tfs_journal *j)
{
	uint8_t *b = j->iobuf;
	char where[TFS_WHERE_LEN];
	struct tfs_super old;
	int rc, k, old_ok;

	if (j->err)
		return j->err;
	j->sb.generation++;
	j->sb.wtime_ns = now_ns();
	k = (int)(j->sb.generation & 1);
	tfs_super_encode(&j->sb, b);
	rc = tfs_dev_write(j->dev, b, TFS_BLOCK_SIZE,
			   (uint64_t)k * TFS_BLOCK_SIZE);
	if (rc) {
		stop(j, rc, "superblock write (generation %llu) failed%s",
		     (unsigned long long)j->sb.generation,
		     tfs_dev_failure_where(j->dev, where, sizeof(where)));
		return rc;
	}
	rc = tfs_journal_flush(j, "the superblock write");
	if (rc)
		return rc;
	old = j->disk[k];
	old_ok = j->disk_ok[k];
	j->disk[k] = j->sb;
	j->disk_ok[k] = 1;
	if (old_ok && !tfs_super_same_ckpt(&old, &j->sb) &&
	    !(j->disk_ok[k ^ 1] && tfs_super_same_ckpt(&old, &j->disk[k ^ 1])))
		release_map(j, &old);
	return 0;
}

/* ===== checkpoint ===== */

/*
 * Where byte pos of the checkpoint whose map is s lies on the device:
 * *off, with *avail bytes of the same piece from there.  -ENOSPC past
 * the map's end.
 */
static int map_at(const struct tfs_super *s, uint64_t pos, uint64_t *off,
		  uint64_t *avail)
{
	for (uint32_t i = 0; i < s->npieces; i++) {
		uint64_t bytes = s->map[i].len * TFS_BLOCK_SIZE;

		if (pos < bytes) {
			*off = s->map[i].start * TFS_BLOCK_SIZE + pos;
			*avail = bytes - pos;
			return 0;
		}
		pos -= bytes;
	}
	return -ENOSPC;
}

/* Write or read n bytes (whole blocks) at checkpoint byte pos. */
static int map_io(struct tfs_journal *j, const struct tfs_super *s,
		  uint8_t *buf, uint64_t n, uint64_t pos, int write)
{
	while (n) {
		uint64_t off, avail, k;
		int rc = map_at(s, pos, &off, &avail);

		if (rc)
			return rc;
		k = n < avail ? n : avail;
		rc = write ? tfs_dev_write(j->dev, buf, k, off)
			   : tfs_dev_read(j->dev, buf, k, off);
		if (rc)
			return rc;
		buf += k;
		pos += k;
		n -= k;
	}
	return 0;
}

/*
 * J10: allocate 'blocks' blocks for a checkpoint into s's map, each
 * piece as large as the free space allows (the allocator gives a run of
 * all that is asked if one exists, else the largest free extent).
 * -ENOSPC (nothing kept) if they do not fit in TFS_MAP_MAX pieces.
 */
static int alloc_map(struct tfs_journal *j, uint64_t blocks,
		     struct tfs_super *s)
{
	int rc = 0;

	s->npieces = 0;
	if (!j->alloc)
		return -EINVAL;
	while (blocks) {
		uint64_t start, n = blocks;

		if (s->npieces == TFS_MAP_MAX) {
			rc = -ENOSPC;
			break;
		}
		rc = tfs_alloc_get(j->alloc, UINT64_MAX, &start, &n);
		if (rc)
			break;
		s->map[s->npieces].start = start;
		s->map[s->npieces].len = n;
		s->npieces++;
		blocks -= n;
	}
	if (rc) {
		release_map(j, s);
		s->npieces = 0;
	}
	return rc;
}

struct ckpt_writer {
	struct tfs_journal *j;
	const struct tfs_super *s; /* the map written into */
	uint64_t pos;		   /* bytes written so far */
};

/* Write the whole blocks of b to the checkpoint, keep the tail in b. */
static int ckpt_flush(struct tfs_buf *b, void *arg)
{
	struct ckpt_writer *w = arg;
	size_t whole = b->len & ~(size_t)(TFS_BLOCK_SIZE - 1);
	size_t done = 0;
	int rc;

	while (done < whole) {
		size_t n = whole - done < w->j->iobuf_len ? whole - done
							  : w->j->iobuf_len;

		memcpy(w->j->iobuf, b->p + done, n);
		rc = map_io(w->j, w->s, w->j->iobuf, n, w->pos, 1);
		if (rc)
			return rc;
		w->pos += n;
		done += n;
	}
	memmove(b->p, b->p + whole, b->len - whole);
	b->len -= whole;
	return 0;
}

/*
 * Allocate s's map for the tree m and write it there with seq: s gets
 * the map, length and CRC.  On failure the blocks go back (J10).
 */
static int write_checkpoint(struct tfs_journal *j, struct tfs_meta *m,
			    uint64_t seq, struct tfs_super *s)
{
	struct ckpt_writer w = { j, s, 0 };
	struct tfs_buf b = { 0 };
	struct tfs_hdr h = { 0 };
	uint64_t nrec = 0, total;
	uint32_t crc = 0;
	int rc;

	rc = alloc_map(j, tfs_journal_ckpt_blocks(tfs_meta_bytes(m)), s);
	if (rc)
		return rc;
	rc = tfs_buf_reserve(&b, CHUNK + 2 * TFS_BLOCK_SIZE);
	if (rc)
		goto out;
	/*
	 * The header goes first but holds the record count, which is known
	 * only at the end: write a placeholder, then rewrite block 0.
	 */
	memset(b.p, 0, TFS_HDR_SIZE);
	b.len = TFS_HDR_SIZE;
	rc = tfs_meta_write_records(m, &b, CHUNK, ckpt_flush, &w, &nrec);
	if (rc)
		goto out;
	total = w.pos + b.len;
	memset(b.p + b.len, 0, round_up(b.len) - b.len);
	b.len = round_up(b.len);
	/* tfs_meta_bytes() is exact: the map holds exactly the blocks */
	if (round_up(total) != tfs_super_map_blocks(s) * TFS_BLOCK_SIZE) {
		rc = -EUCLEAN;
		goto out;
	}
	/* Patch the header: the first block is in b if nothing was flushed,
	 * otherwise re-read it, patch, rewrite. */
	h.seq = seq;
	h.next_ino = tfs_meta_next_ino(m);
	h.used_blocks = tfs_meta_used_blocks(m);
	h.nrec = nrec;
	if (w.pos == 0)
		tfs_ckpt_hdr_encode(&h, b.p);
	memcpy(j->iobuf, b.p, b.len);
	rc = map_io(j, s, j->iobuf, b.len, w.pos, 1);
	if (rc)
		goto out;
	if (w.pos != 0) {
		uint8_t *blk = j->iobuf;

		rc = map_io(j, s, blk, TFS_BLOCK_SIZE, 0, 0);
		if (rc)
			goto out;
		tfs_ckpt_hdr_encode(&h, blk);
		rc = map_io(j, s, blk, TFS_BLOCK_SIZE, 0, 1);
		if (rc)
			goto out;
	}
	/* The CRC is computed over the final bytes, re-read in pieces. */
	for (uint64_t off = 0; off < total; off += j->iobuf_len) {
		size_t n =
		    total - off < j->iobuf_len ? total - off : j->iobuf_len;

		rc = map_io(j, s, j->iobuf, round_up(n), off, 0);
		if (rc)
			goto out;
		crc = tfs_crc32c(crc, j->iobuf, n);
	}
	s->ckpt_len = total;
	s->ckpt_crc = crc;
out:
	if (rc) {
		release_map(j, s);
		s->npieces = 0;
	}
	tfs_buf_release(&b);
	return rc;
}

int tfs_journal_checkpoint(struct tfs_journal *j, struct tfs_meta *m,
			   uint32_t flags)
{
	struct tfs_super *next;
	int rc;

	if (j->err)
		return j->err;
	next = malloc(sizeof(*next));
	if (!next)
		return -ENOMEM;
	*next = j->sb;
	/* J3: a number of its own, above every transaction so far */
	j->seq++;
	/* J4, J10: new blocks, flushed before a superblock names them */
	rc = write_checkpoint(j, m, j->seq, next);
	if (!rc)
		rc = tfs_journal_flush(j, "a checkpoint");
	if (rc) {
		free(next);
		return rc;
	}
	next->ckpt_seq = j->seq;
	next->flags = flags;
	j->sb = *next;
	free(next);
	rc = write_super(j);
	if (rc)
		return rc;
	j->head = 0;
	return 0;
}

uint64_t tfs_journal_ckpt_need(const struct tfs_journal *j, uint64_t b)
{
	int k = (int)((j->sb.generation + 1) & 1); /* replaced first */
	uint64_t p = tfs_super_map_blocks(&j->sb), q = 0, need = b;

	if (j->disk_ok[k] && !tfs_super_same_ckpt(&j->disk[k], &j->sb))
		q = tfs_super_map_blocks(&j->disk[k]);
	if (b > UINT64_MAX / 3)
		return UINT64_MAX;
	if (2 * b > q && 2 * b - q > need)
		need = 2 * b - q;
	if (3 * b > q + p && 3 * b - q - p > need)
		need = 3 * b - q - p;
	return need;
}

uint64_t tfs_journal_held_blocks(const struct tfs_journal *j)
{
	uint64_t n = 0;

	for (int i = 0; i < 2; i++)
		if (j->disk_ok[i] &&
		    !(i == 1 && j->disk_ok[0] &&
		      tfs_super_same_ckpt(&j->disk[0], &j->disk[1])))
			n += tfs_super_map_blocks(&j->disk[i]);
	return n;
}

/* Mark s's map used in a: 0, or the allocator's error with nothing
 * marked. */
static int hold_map(struct tfs_alloc *a, const struct tfs_super *s)
{
	for (uint32_t i = 0; i < s->npieces; i++) {
		int rc = tfs_alloc_mark_used(a, s->map[i].start, s->map[i].len);

		if (rc) {
			while (i--)
				(void)tfs_alloc_put(a, s->map[i].start,
						    s->map[i].len);
			return rc;
		}
	}
	return 0;
}

int tfs_journal_hold(struct tfs_journal *j, struct tfs_alloc *a, char *err,
		     size_t errlen)
{
	int rc, cur = -1;

	/* the checkpoint loaded: one of the copies (J8 may have chosen the
	 * older one) */
	for (int i = 0; i < 2; i++)
		if (j->disk_ok[i] && tfs_super_same_ckpt(&j->disk[i], &j->sb))
			cur = i;
	rc = hold_map(a, &j->sb);
	if (rc == -ENOMEM)
		return rc;
	if (rc) {
		tfs_say(err, errlen,
			"the checkpoint's blocks (map of "
			"superblock generation %llu) overlap file "
			"data or each other; run tensorfs-fsck",
			(unsigned long long)j->sb.generation);
		return -EUCLEAN;
	}
	for (int i = 0; i < 2; i++) {
		if (i == cur || !j->disk_ok[i] ||
		    tfs_super_same_ckpt(&j->disk[i], &j->sb))
			continue;
		rc = hold_map(a, &j->disk[i]);
		if (rc == -ENOMEM)
			return rc;
		if (rc)
			j->disk_ok[i] = 0; /* stale: its blocks not held */
	}
	if (cur < 0) {
		/* cannot happen: the loaded copy is one of the two */
		j->disk[j->sb.generation & 1] = j->sb;
		j->disk_ok[j->sb.generation & 1] = 1;
	}
	j->alloc = a;
	return 0;
}

int tfs_journal_set_flags(struct tfs_journal *j, uint32_t flags)
{
	if (j->err)
		return j->err;
	j->sb.flags = flags;
	return write_super(j);
}

/* ===== format ===== */

static int journal_init(struct tfs_journal *j, struct tfs_dev *dev)
{
	memset(j, 0, sizeof(*j));
	j->dev = dev;
	j->iobuf_len = CHUNK;
	j->iobuf = tfs_io_alloc(CHUNK);
	return j->iobuf ? 0 : -ENOMEM;
}

void tfs_journal_release(struct tfs_journal *j)
{
	tfs_io_free(j->iobuf);
	j->iobuf = NULL;
}

struct tfs_alloc *tfs_journal_new_alloc(const struct tfs_super *s)
{
	uint32_t n = s->nmembers ? s->nmembers : 1;
	uint64_t last = (uint64_t)(n - 1) << TFS_MEMBER_BITS;
	struct tfs_alloc *a;

	a = tfs_alloc_new(s->data_start, last +
					     tfs_super_member_blocks(s, n - 1) -
					     s->data_start);
	/* between members: past one's end, before the next one's data */
	for (uint32_t m = 0; a && m + 1 < n; m++) {
		uint64_t from = ((uint64_t)m << TFS_MEMBER_BITS) +
				tfs_super_member_blocks(s, m);
		uint64_t to = ((uint64_t)(m + 1) << TFS_MEMBER_BITS) +
			      tfs_super_data_start(s, m + 1);

		if (tfs_alloc_mark_used(a, from, to - from)) {
			tfs_alloc_free(a);
			errno = ENOMEM;
			return NULL;
		}
	}
	return a;
}

/* Member superblocks: both copies of every member past the first, from
 * member 0's (sb), then flushed (a new set, or fsck's repair). */
int tfs_journal_write_members(struct tfs_journal *j)
{
	for (uint32_t m = 1; m < j->sb.nmembers; m++) {
		struct tfs_super s;
		uint8_t *b = j->iobuf;
		int rc;

		memset(&s, 0, sizeof(s));
		s.version = TFS_VERSION;
		s.member = m;
		s.nmembers = j->sb.nmembers;
		s.stripe_blocks = j->sb.stripe_blocks;
		memcpy(s.member_blocks, j->sb.member_blocks,
		       sizeof(s.member_blocks));
		s.dev_blocks = j->sb.member_blocks[m];
		s.journal_start = 2;
		s.data_start = TFS_MEMBER_DATA_START;
		memcpy(s.uuid, j->sb.uuid, sizeof(s.uuid));
		s.ctime_ns = s.wtime_ns = j->sb.ctime_ns;
		for (int c = 0; c < 2; c++) {
			s.generation = (uint64_t)c;
			tfs_super_encode(&s, b + c * TFS_BLOCK_SIZE);
		}
		rc = tfs_dev_write(j->dev, b, 2 * TFS_BLOCK_SIZE,
				   tfs_dev_off(m, 0));
		if (rc)
			return rc;
	}
	return tfs_dev_flush(j->dev);
}

int tfs_journal_format(struct tfs_dev *dev, uint64_t bytes, uint32_t uid,
		       uint32_t gid)
{
	return tfs_journal_format_set(dev, &bytes, 0, uid, gid);
}

int tfs_journal_format_set(struct tfs_dev *dev, const uint64_t *bytes,
			   uint32_t stripe_blocks, uint32_t uid, uint32_t gid)
{
	struct tfs_journal j;
	struct tfs_meta *m = NULL;
	struct tfs_alloc *a = NULL;
	struct tfs_attr root = { 0 };
	struct timespec ts;
	uint32_t n = tfs_dev_members(dev);
	uint64_t b0 = bytes[0];
	int rc;

	if (stripe_blocks > TFS_STRIPE_MAX || n > TFS_SET_MAX)
		return -EINVAL;
	rc = journal_init(&j, dev);
	if (rc)
		return rc;
	if (b0 > tfs_dev_size(dev))
		b0 = tfs_dev_size(dev);
	rc = tfs_layout(b0 / TFS_BLOCK_SIZE, &j.sb);
	if (rc)
		goto out;
	j.sb.nmembers = n;
	j.sb.stripe_blocks = stripe_blocks ? stripe_blocks : TFS_STRIPE_DEFAULT;
	for (uint32_t i = 1; i < n; i++) {
		uint64_t bi = bytes[i] < tfs_dev_member_size(dev, i)
				  ? bytes[i]
				  : tfs_dev_member_size(dev, i);

		if (bi < TFS_MIN_MEMBER_BYTES ||
		    bi / TFS_BLOCK_SIZE > 1ull << TFS_MEMBER_BITS) {
			rc = -ENOSPC;
			goto out;
		}
		j.sb.member_blocks[i] = bi / TFS_BLOCK_SIZE;
	}
	/* J10: the first checkpoint takes its blocks from the data area */
	a = tfs_journal_new_alloc(&j.sb);
	if (!a) {
		rc = -ENOMEM;
		goto out;
	}
	j.alloc = a;
	if (getrandom(j.sb.uuid, sizeof(j.sb.uuid), 0) != sizeof(j.sb.uuid))
		memset(j.sb.uuid, 0x5a, sizeof(j.sb.uuid));
	j.sb.ctime_ns = now_ns();
	m = tfs_meta_new();
	if (!m) {
		rc = -ENOMEM;
		goto out;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	root.ino = TFS_ROOT_INO;
	root.mode = S_IFDIR | 0755;
	root.uid = uid;
	root.gid = gid;
	root.nlink = 2;
	root.parent = TFS_ROOT_INO;
	root.atime.sec = root.mtime.sec = root.ctime.sec = ts.tv_sec;
	root.atime.nsec = root.mtime.nsec = root.ctime.nsec =
	    (uint32_t)ts.tv_nsec;
	if (!tfs_meta_add(m, &root)) {
		rc = -ENOMEM;
		goto out;
	}
	/* Wipe the old superblocks and the journal's first block, so no
	 * earlier file system can be read through a stale block; then the
	 * other members' superblocks, before member 0 names them. */
	memset(j.iobuf, 0, 2 * TFS_BLOCK_SIZE);
	rc = tfs_dev_write(dev, j.iobuf, 2 * TFS_BLOCK_SIZE, 0);
	if (!rc)
		rc = tfs_dev_write(dev, j.iobuf, TFS_BLOCK_SIZE,
				   j.sb.journal_start * TFS_BLOCK_SIZE);
	if (!rc)
		rc = tfs_journal_write_members(&j);
	if (rc)
		goto out;
	/*
	 * Start the sequence at a random point: the journal of a file system
	 * this one replaces is not wiped, and its transactions must never
	 * carry a sequence number the new one expects.
	 */
	if (getrandom(&j.seq, sizeof(j.seq), 0) != sizeof(j.seq))
		j.seq = (uint64_t)now_ns();
	j.seq = (j.seq >> 2) | 1;
	/* generation 1 goes to copy 1, then 2 to copy 0 */
	j.sb.generation = 0;
	rc = tfs_journal_checkpoint(&j, m, TFS_SB_CLEAN);
	if (rc)
		goto out;
	/* Write the other copy too, so both are valid from the start. */
	rc = write_super(&j);
out:
	tfs_meta_free(m);
	tfs_journal_release(&j);
	tfs_alloc_free(a);
	return rc;
}

/* ===== load ===== */

static int apply_all(struct tfs_meta *m, const uint8_t *p, size_t len,
		     uint64_t *count)
{
	struct tfs_rec r;
	size_t pos = 0;
	int rc;

	while ((rc = tfs_rec_next(p, len, &pos, &r)) == 1) {
		rc = tfs_meta_apply(m, &r, NULL, NULL);
		if (rc)
			return rc;
		(*count)++;
	}
	return rc;
}

/*
 * Read both superblock copies: j->sb gets the valid one with the higher
 * generation, *other the other one if it is valid too and names another
 * checkpoint (J8's fallback), else *has_other is 0.
 */
static int read_super(struct tfs_journal *j, struct tfs_super *other,
		      int *has_other, char *err, size_t errlen)
{
	struct tfs_super s[2];
	int rc[2];
	uint8_t *b = j->iobuf;
	int io;

	io = tfs_dev_read(j->dev, b, 2 * TFS_BLOCK_SIZE, 0);
	if (io) {
		tfs_say(err, errlen, "cannot read the superblock: %s",
			strerror(-io));
		return io;
	}
	rc[0] = tfs_super_decode(b, &s[0]);
	rc[1] = tfs_super_decode(b + TFS_BLOCK_SIZE, &s[1]);
	if (rc[0] && rc[1]) {
		if (rc[0] == -EINVAL && rc[1] == -EINVAL) {
			tfs_say(err, errlen,
				"not a tensorfs file system (no "
				"tensorfs superblock); format it "
				"with mkfs.tensorfs");
			return -EINVAL;
		}
		if (rc[0] == -EPROTO || rc[1] == -EPROTO) {
			uint32_t v = tfs_super_version(
			    rc[0] == -EPROTO ? b : b + TFS_BLOCK_SIZE);

			if (v < TFS_VERSION)
				tfs_say(err, errlen,
					"this tensorfs (format "
					"version %u) was made by an "
					"older mkfs.tensorfs; this "
					"build reads versions 2 to %u: "
					"copy the files out with the "
					"older tensorfs, then "
					"recreate it with "
					"mkfs.tensorfs",
					v, TFS_VERSION);
			else
				tfs_say(err, errlen,
					"tensorfs format version "
					"%u is newer than this build "
					"reads (%u): use a newer "
					"tensorfs",
					v, TFS_VERSION);
			return -EPROTO;
		}
		tfs_say(err, errlen,
			"both superblock copies are corrupted "
			"(bad checksum or layout)");
		return -EUCLEAN;
	}
	*has_other = 0;
	for (int i = 0; i < 2; i++) {
		j->disk_ok[i] = rc[i] == 0;
		if (!rc[i])
			j->disk[i] = s[i];
	}
	if (rc[0]) {
		j->sb = s[1];
	} else if (rc[1]) {
		j->sb = s[0];
	} else {
		int newer = s[0].generation >= s[1].generation ? 0 : 1;

		j->sb = s[newer];
		*other = s[newer ^ 1];
		*has_other = !tfs_super_same_ckpt(other, &j->sb) ||
			     other->ckpt_crc != j->sb.ckpt_crc;
	}
	if (j->sb.member != 0) {
		tfs_say(err, errlen,
			"this is member %u of a set of %u devices, not its "
			"first: give every member, joined with ':' "
			"(DEV1:DEV2:...)",
			j->sb.member + 1, j->sb.nmembers);
		return -EINVAL;
	}
	if (j->sb.nmembers != tfs_dev_members(j->dev)) {
		tfs_say(err, errlen,
			"this file system is a set of %u devices and %u %s "
			"given: give every member, joined with ':' "
			"(DEV1:DEV2:...)",
			j->sb.nmembers, tfs_dev_members(j->dev),
			tfs_dev_members(j->dev) == 1 ? "was" : "were");
		return -EINVAL;
	}
	for (uint32_t m = 1; m < j->sb.nmembers; m++) {
		uint64_t want = j->sb.member_blocks[m] * TFS_BLOCK_SIZE;

		if (tfs_dev_member_size(j->dev, m) < want) {
			tfs_say(
			    err, errlen,
			    "member %u (%s) is %llu bytes but the file "
			    "system needs %llu: it was truncated",
			    m + 1, tfs_dev_member_path(j->dev, m),
			    (unsigned long long)tfs_dev_member_size(j->dev, m),
			    (unsigned long long)want);
			return -EUCLEAN;
		}
	}
	if (j->sb.dev_blocks * TFS_BLOCK_SIZE > tfs_dev_size(j->dev)) {
		tfs_say(
		    err, errlen,
		    "device is %llu bytes but the file system "
		    "needs %llu: the image was truncated",
		    (unsigned long long)tfs_dev_size(j->dev),
		    (unsigned long long)(j->sb.dev_blocks * TFS_BLOCK_SIZE));
		return -EUCLEAN;
	}
	return 0;
}

/*
 * Load the checkpoint j->sb names into m.  *damaged is set when its bytes
 * are not the checkpoint the superblock describes (read error, CRC,
 * header): m is untouched then, and J8 may try the other copy.
 */
static int load_checkpoint(struct tfs_journal *j, struct tfs_meta *m,
			   int *damaged, char *err, size_t errlen)
{
	uint64_t len = j->sb.ckpt_len, nrec = 0;
	struct tfs_hdr h;
	uint32_t crc = 0;
	uint8_t *all;
	int rc;

	/* The checkpoint is read whole: its records refer to each other. */
	*damaged = 0;
	all = tfs_io_alloc(round_up(len));
	if (!all)
		return -ENOMEM;
	rc = map_io(j, &j->sb, all, round_up(len), 0, 0);
	if (rc) {
		tfs_say(err, errlen,
			"cannot read the checkpoint of superblock "
			"generation %llu: %s",
			(unsigned long long)j->sb.generation, strerror(-rc));
		*damaged = 1;
		goto out;
	}
	crc = tfs_crc32c(0, all, len);
	if (crc != j->sb.ckpt_crc || tfs_ckpt_hdr_decode(all, &h) ||
	    h.seq != j->sb.ckpt_seq) {
		tfs_say(err, errlen,
			"checkpoint of superblock generation "
			"%llu is corrupted (checksum mismatch)",
			(unsigned long long)j->sb.generation);
		*damaged = 1;
		rc = -EUCLEAN;
		goto out;
	}
	rc = apply_all(m, all + TFS_HDR_SIZE, len - TFS_HDR_SIZE, &nrec);
	if (rc || nrec != h.nrec) {
		tfs_say(err, errlen,
			"checkpoint records do not form a valid "
			"tree (record %llu)",
			(unsigned long long)nrec);
		rc = rc == -ENOMEM ? rc : -EUCLEAN;
		goto out;
	}
	if (!tfs_meta_get(m, TFS_ROOT_INO) ||
	    !S_ISDIR(tfs_meta_get(m, TFS_ROOT_INO)->a.mode)) {
		tfs_say(err, errlen, "checkpoint has no root directory");
		rc = -EUCLEAN;
		goto out;
	}
	if (h.next_ino > tfs_meta_next_ino(m))
		tfs_meta_set_next_ino(m, h.next_ino);
	if (h.used_blocks != tfs_meta_used_blocks(m)) {
		tfs_say(err, errlen,
			"checkpoint extents add up to %llu blocks, "
			"its header says %llu",
			(unsigned long long)tfs_meta_used_blocks(m),
			(unsigned long long)h.used_blocks);
		rc = -EUCLEAN;
	}
out:
	tfs_io_free(all);
	return rc;
}

/*
 * Read the transaction at journal offset off with the expected seq.
 * Returns its total size (> 0), 0 if there is no valid transaction there,
 * or -errno.  The payload is left in j->iobuf.
 */
static int64_t read_txn(struct tfs_journal *j, uint64_t off, uint64_t seq,
			struct tfs_hdr *h, uint8_t **payload, uint8_t **spill)
{
	uint64_t jbytes = j->sb.journal_blocks * TFS_BLOCK_SIZE;
	uint64_t base = j->sb.journal_start * TFS_BLOCK_SIZE;
	uint64_t total;
	uint8_t *p = j->iobuf;
	int rc;

	if (off + TFS_BLOCK_SIZE > jbytes)
		return 0;
	rc = tfs_dev_read(j->dev, p, TFS_BLOCK_SIZE, base + off);
	if (rc)
		return rc;
	if (tfs_txn_hdr_decode(p, h) || h->seq != seq)
		return 0;
	total = round_up(TFS_HDR_SIZE + (uint64_t)h->payload_len);
	if (off + total > jbytes)
		return 0;
	if (total > j->iobuf_len) {
		uint8_t *big = tfs_io_alloc(total);

		if (!big)
			return -ENOMEM;
		free(*spill);
		*spill = big;
		p = big;
	}
	rc = tfs_dev_read(j->dev, p, total, base + off);
	if (rc)
		return rc;
	if (tfs_txn_verify(p, h, p + TFS_HDR_SIZE))
		return 0;
	*payload = p;
	return (int64_t)total;
}

/*
 * After a bad transaction: is there a valid one with a later seq?  The
 * journal is scanned in big reads; candidates are verified one by one.
 */
static int later_txn_exists(struct tfs_journal *j, uint64_t off, uint64_t seq)
{
	uint64_t jbytes = j->sb.journal_blocks * TFS_BLOCK_SIZE;
	uint64_t base = j->sb.journal_start * TFS_BLOCK_SIZE;
	uint8_t *scan = tfs_io_alloc(CHUNK), *spill = NULL;
	int found = 0;

	if (!scan)
		return 0;
	for (uint64_t o = off + TFS_BLOCK_SIZE; o < jbytes && !found;
	     o += CHUNK) {
		size_t n = jbytes - o < CHUNK ? jbytes - o : CHUNK;

		if (tfs_dev_read(j->dev, scan, n, base + o))
			break;
		for (size_t b = 0; b < n && !found; b += TFS_BLOCK_SIZE) {
			struct tfs_hdr h;
			uint8_t *payload;

			if (tfs_txn_hdr_decode(scan + b, &h) || h.seq <= seq ||
			    h.seq > seq + jbytes / TFS_BLOCK_SIZE)
				continue;
			if (read_txn(j, o + b, h.seq, &h, &payload, &spill) > 0)
				found = 1;
		}
	}
	tfs_io_free(scan);
	free(spill);
	return found;
}

/*
 * J8: the newest copy's checkpoint is damaged; load the other copy's
 * instead (j->sb becomes it) and say so in j->note.  On failure err
 * says that both are damaged.
 */
static int load_older(struct tfs_journal *j, struct tfs_meta *m,
		      const struct tfs_super *other, char *err, size_t errlen)
{
	uint64_t newer = j->sb.generation;
	char why[160];
	int damaged, rc;

	snprintf(why, sizeof(why), "%s", err ? err : "damaged checkpoint");
	j->sb = *other;
	rc = load_checkpoint(j, m, &damaged, err, errlen);
	if (rc) {
		if (damaged)
			tfs_say(err, errlen,
				"%s, and so is the older "
				"superblock copy's (generation %llu)",
				why, (unsigned long long)other->generation);
		return rc;
	}
	tfs_say(j->note, sizeof(j->note),
		"superblock generation %llu: %s; "
		"using the older copy (generation %llu) and its "
		"checkpoint: changes committed after it may be "
		"missing",
		(unsigned long long)newer, why,
		(unsigned long long)other->generation);
	return 0;
}

int tfs_journal_load(struct tfs_journal *j, struct tfs_dev *dev,
		     struct tfs_meta *m, unsigned int flags, char *err,
		     size_t errlen)
{
	struct tfs_super other;
	uint8_t *spill = NULL;
	int rc, damaged = 0, has_other = 0, fallback = 0;

	rc = journal_init(j, dev);
	if (rc)
		return rc;
	if (tfs_dev_size(dev) < 2 * TFS_BLOCK_SIZE) {
		tfs_say(err, errlen,
			"not a tensorfs file system (under %u "
			"KiB, too small to hold one); format it with "
			"mkfs.tensorfs",
			2 * TFS_BLOCK_SIZE / 1024);
		rc = -EINVAL;
		goto fail;
	}
	rc = read_super(j, &other, &has_other, err, errlen);
	if (rc)
		goto fail;
	rc = load_checkpoint(j, m, &damaged, err, errlen);
	if (rc && damaged && has_other) {
		rc = load_older(j, m, &other, err, errlen);
		fallback = rc == 0;
	}
	if (rc)
		goto fail;
	j->seq = j->sb.ckpt_seq;
	j->head = 0;
	for (;;) {
		struct tfs_hdr h;
		uint8_t *payload;
		uint64_t n = 0;
		int64_t got =
		    read_txn(j, j->head, j->seq, &h, &payload, &spill);

		if (got < 0) {
			rc = (int)got;
			tfs_say(err, errlen, "cannot read the journal: %s",
				strerror(-rc));
			goto fail;
		}
		if (got == 0)
			break;
		if (flags & TFS_JLOAD_NO_REPLAY) {
			/* counted, and read on to the end, checked as
			 * replay reads it; the tree stays the checkpoint's */
			j->head += (uint64_t)got;
			j->seq++;
			j->skipped++;
			continue;
		}
		rc = apply_all(m, payload + TFS_HDR_SIZE, h.payload_len, &n);
		if (rc || n != h.nrec) {
			tfs_say(err, errlen,
				"journal transaction %llu does not "
				"apply to the tree",
				(unsigned long long)j->seq);
			rc = rc == -ENOMEM ? rc : -EUCLEAN;
			goto fail;
		}
		if (h.next_ino > tfs_meta_next_ino(m))
			tfs_meta_set_next_ino(m, h.next_ino);
		if (h.used_blocks != tfs_meta_used_blocks(m)) {
			tfs_say(err, errlen,
				"journal transaction %llu: extents "
				"add up to %llu blocks, it says %llu",
				(unsigned long long)j->seq,
				(unsigned long long)tfs_meta_used_blocks(m),
				(unsigned long long)h.used_blocks);
			rc = -EUCLEAN;
			goto fail;
		}
		j->head += (uint64_t)got;
		j->seq++;
		j->replayed++;
	}
	/* J8: after a fallback, newer epochs' transactions are expected */
	if (!(j->sb.flags & TFS_SB_CLEAN) && !fallback &&
	    later_txn_exists(j, j->head, j->seq)) {
		tfs_say(err, errlen,
			"journal is corrupted at offset %llu "
			"(transaction %llu is damaged but later "
			"ones exist)",
			(unsigned long long)j->head,
			(unsigned long long)j->seq);
		rc = -EUCLEAN;
		goto fail;
	}
	free(spill);
	return 0;
fail:
	free(spill);
	tfs_journal_release(j);
	return rc;
}

/* ===== commit ===== */

uint64_t tfs_journal_free(const struct tfs_journal *j)
{
	return j->sb.journal_blocks * TFS_BLOCK_SIZE - j->head;
}

int tfs_journal_commit(struct tfs_journal *j, const uint8_t *p, size_t len,
		       uint64_t nrec, uint64_t next_ino, uint64_t used_blocks,
		       int flush_first)
{
	uint64_t total = round_up(TFS_HDR_SIZE + (uint64_t)len);
	struct tfs_hdr h = { 0 };
	uint8_t *buf = j->iobuf;
	int rc;

	if (j->err)
		return j->err;
	if (total > tfs_journal_free(j) || len > UINT32_MAX)
		return -ENOSPC;
	if (flush_first) {
		/* J1 */
		rc = tfs_journal_flush(j, "file data");
		if (rc)
			return rc;
	}
	if (total > j->iobuf_len) {
		buf = tfs_io_alloc(total);
		if (!buf)
			return -ENOMEM;
	}
	h.seq = j->seq;
	h.next_ino = next_ino;
	h.used_blocks = used_blocks;
	h.nrec = nrec;
	h.payload_len = (uint32_t)len;
	memcpy(buf + TFS_HDR_SIZE, p, len);
	memset(buf + TFS_HDR_SIZE + len, 0, total - TFS_HDR_SIZE - len);
	tfs_txn_hdr_encode(&h, buf, buf + TFS_HDR_SIZE);
	rc = tfs_dev_write(j->dev, buf, total,
			   j->sb.journal_start * TFS_BLOCK_SIZE + j->head);
	if (buf != j->iobuf)
		tfs_io_free(buf);
	/*
	 * J3: the write was issued, so its seq and its place are spent
	 * whatever happens next: part or all of it may be on the device.
	 * After a failed write the journal is full until a checkpoint,
	 * which starts a new epoch past this seq; no transaction may follow
	 * one whose end on the device is unknown (J2).
	 */
	j->seq++;
	if (rc) {
		j->head = j->sb.journal_blocks * TFS_BLOCK_SIZE;
		return rc;
	}
	j->head += total;
	return tfs_journal_flush(j, "a journal transaction");
}
