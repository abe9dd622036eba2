/*
 * fuzz_format.c: the on-disk superblock, checkpoint and transaction
 * headers and records (lib/format.c): the input as a 4096-byte block,
 * as headers, and as a stream of records decoded to its end.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t block[TFS_BLOCK_SIZE];
	struct tfs_super s;
	struct tfs_hdr h;
	struct tfs_rec r;
	size_t pos = 0;

	memset(block, 0, sizeof(block));
	memcpy(block, data, size < sizeof(block) ? size : sizeof(block));
	tfs_super_decode(block, &s);
	tfs_ckpt_hdr_decode(block, &h);
	if (!tfs_txn_hdr_decode(block, &h) && h.payload_len <= size &&
	    size - h.payload_len >= TFS_HDR_SIZE)
		tfs_txn_verify(block, &h, data + TFS_HDR_SIZE);
	while (tfs_rec_next(data, size, &pos, &r) == 1)
		;
	return 0;
}
