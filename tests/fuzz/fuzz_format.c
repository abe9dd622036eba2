/*
 * fuzz_format.c: the on-disk superblock (its map of checkpoint pieces
 * included), checkpoint and transaction headers and records
 * (lib/format.c): the input as a 4096-byte block, as headers, and as a
 * stream of records decoded to its end.  The block is also decoded with
 * its magic, version, block size and CRC made right, so that the layout
 * and map checks see every input: whatever they accept must be a map
 * inside the data area, without overlaps, adding up to the checkpoint's
 * length, and encode back to what was decoded.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What a decoded superblock must satisfy (J10): abort otherwise. */
static void check_super(const struct tfs_super *s)
{
	static uint8_t again[TFS_BLOCK_SIZE];
	static struct tfs_super d;
	uint64_t total = 0;

	if (s->member) {
		/* a member past the first: no journal, no checkpoint */
		if (s->npieces || s->ckpt_len || s->journal_blocks ||
		    s->member >= s->nmembers ||
		    s->data_start != TFS_MEMBER_DATA_START ||
		    s->data_start >= s->dev_blocks)
			abort();
		tfs_super_encode(s, again);
		if (tfs_super_decode(again, &d) || d.member != s->member)
			abort();
		return;
	}
	if (s->npieces == 0 ||
	    s->npieces >
		(s->version == TFS_VERSION_V2 ? TFS_MAP_MAX_V2 : TFS_MAP_MAX) ||
	    s->data_start >= s->dev_blocks ||
	    s->dev_blocks > (1ull << TFS_MEMBER_BITS) || s->nmembers < 1 ||
	    s->nmembers > TFS_SET_MAX)
		abort();
	for (uint32_t i = 0; i < s->npieces; i++) {
		const struct tfs_piece *p = &s->map[i];
		uint32_t m = (uint32_t)(p->start >> TFS_MEMBER_BITS);
		uint64_t b = p->start & ((1ull << TFS_MEMBER_BITS) - 1);
		uint64_t end = tfs_super_member_blocks(s, m);

		if (m >= s->nmembers || b < tfs_super_data_start(s, m) ||
		    p->len == 0 || b > end || p->len > end - b ||
		    !tfs_super_in_data(s, p->start, p->len))
			abort();
		for (uint32_t k = 0; k < i; k++)
			if (p->start < s->map[k].start + s->map[k].len &&
			    s->map[k].start < p->start + p->len)
				abort();
		total += p->len;
	}
	if (total != (s->ckpt_len + TFS_BLOCK_SIZE - 1) / TFS_BLOCK_SIZE ||
	    total != tfs_super_map_blocks(s) || !tfs_super_same_ckpt(s, s))
		abort();
	tfs_super_encode(s, again);
	if (tfs_super_decode(again, &d) || d.npieces != s->npieces ||
	    d.version != s->version || d.nmembers != s->nmembers ||
	    memcmp(d.map, s->map, s->npieces * sizeof(s->map[0])) ||
	    d.ckpt_len != s->ckpt_len || d.generation != s->generation)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t block[TFS_BLOCK_SIZE];
	static struct tfs_super s;
	struct tfs_hdr h;
	struct tfs_rec r;
	size_t pos = 0;

	memset(block, 0, sizeof(block));
	memcpy(block, data, size < sizeof(block) ? size : sizeof(block));
	if (tfs_super_decode(block, &s) == 0)
		check_super(&s);
	(void)tfs_super_version(block);
	tfs_ckpt_hdr_decode(block, &h);
	if (!tfs_txn_hdr_decode(block, &h) && h.payload_len <= size &&
	    size - h.payload_len >= TFS_HDR_SIZE)
		tfs_txn_verify(block, &h, data + TFS_HDR_SIZE);
	while (tfs_rec_next(data, size, &pos, &r) == 1)
		;
	/* the same block as a superblock that passes the first checks */
	memcpy(block, TFS_MAGIC, 8);
	tfs_put32(block + 12, TFS_BLOCK_SIZE);
	/* as each version this build reads */
	for (uint32_t v = TFS_VERSION_V2; v <= TFS_VERSION; v++) {
		tfs_put32(block + 8, v);
		tfs_put32(block + 4092, tfs_crc32c(0, block, 4092));
		if (tfs_super_decode(block, &s) == 0)
			check_super(&s);
	}
	return 0;
}
