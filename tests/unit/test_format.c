/*
 * test_format.c: the on-disk encoding of lib/format.h, byte by byte.
 * Description: superblock (versions 2 and 3, sets of members),
 * checkpoint and journal headers and every record type round-trip at
 * the offsets format.h documents, and every
 * decoder refuses damaged input with the documented error, never reading
 * past the bytes it was given (run under ASan).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>

#include <cmocka.h>

#include "crc32c.h"
#include "format.h"

/* A superblock with every field set to something distinguishable: a
 * checkpoint of 12345 bytes (4 blocks) in two pieces of the data area. */
static void sample_super(struct tfs_super *s)
{
	memset(s, 0, sizeof(*s));
	assert_int_equal(tfs_layout(65536, s), 0); /* 256 MiB */
	s->generation = 0x0102030405060708ull;
	s->flags = TFS_SB_CLEAN;
	s->ckpt_len = 12345;
	s->ckpt_crc = 0xdeadbeef;
	s->ckpt_seq = 0x1122334455667788ull;
	for (int i = 0; i < 16; i++)
		s->uuid[i] = (uint8_t)(0xa0 + i);
	s->ctime_ns = 1700000000123456789ull;
	s->wtime_ns = 1700000001987654321ull;
	s->npieces = 2;
	s->map[0].start = s->data_start + 100;
	s->map[0].len = 3;
	s->map[1].start = s->data_start + 7;
	s->map[1].len = 1;
}

/* Recompute the CRC of a superblock block after patching it. */
static void super_recrc(uint8_t *b)
{
	tfs_put32(b + 4092, tfs_crc32c(0, b, 4092));
}

static void test_format_super_roundtrip(void **state)
{
	struct tfs_super s, d;
	uint8_t b[TFS_BLOCK_SIZE];

	(void)state;
	sample_super(&s);
	tfs_super_encode(&s, b);
	assert_int_equal(tfs_super_decode(b, &d), 0);
	assert_int_equal(d.generation, s.generation);
	assert_int_equal(d.dev_blocks, s.dev_blocks);
	assert_int_equal(d.journal_start, s.journal_start);
	assert_int_equal(d.journal_blocks, s.journal_blocks);
	assert_int_equal(d.data_start, s.data_start);
	assert_int_equal(d.npieces, s.npieces);
	for (uint32_t i = 0; i < s.npieces; i++) {
		assert_int_equal(d.map[i].start, s.map[i].start);
		assert_int_equal(d.map[i].len, s.map[i].len);
	}
	assert_int_equal(d.flags, s.flags);
	assert_int_equal(d.ckpt_len, s.ckpt_len);
	assert_int_equal(d.ckpt_crc, s.ckpt_crc);
	assert_int_equal(d.ckpt_seq, s.ckpt_seq);
	assert_memory_equal(d.uuid, s.uuid, 16);
	assert_int_equal(d.ctime_ns, s.ctime_ns);
	assert_int_equal(d.wtime_ns, s.wtime_ns);
}

static void test_format_super_fields_at_documented_offsets(void **state)
{
	struct tfs_super s;
	uint8_t b[TFS_BLOCK_SIZE];

	(void)state;
	sample_super(&s);
	tfs_super_encode(&s, b);
	assert_memory_equal(b, "tensorfs", 8);
	assert_int_equal(tfs_get32(b + 8), 4);
	assert_int_equal(tfs_get32(b + 12), 4096);
	/* little-endian: the lowest byte first */
	assert_int_equal(b[16], 0x08);
	assert_int_equal(b[23], 0x01);
	assert_int_equal(tfs_get64(b + 16), s.generation);
	assert_int_equal(tfs_get64(b + 24), s.dev_blocks);
	assert_int_equal(tfs_get64(b + 32), s.journal_start);
	assert_int_equal(tfs_get64(b + 40), s.journal_blocks);
	assert_int_equal(tfs_get64(b + 48), s.data_start);
	assert_int_equal(tfs_get32(b + 56), TFS_SB_CLEAN);
	assert_int_equal(tfs_get32(b + 60), 2);
	assert_int_equal(tfs_get64(b + 64), 12345);
	assert_int_equal(tfs_get32(b + 72), 0xdeadbeef);
	assert_int_equal(tfs_get32(b + 76), 0);
	assert_int_equal(tfs_get64(b + 80), s.ckpt_seq);
	assert_memory_equal(b + 88, s.uuid, 16);
	assert_int_equal(tfs_get64(b + 104), s.ctime_ns);
	assert_int_equal(tfs_get64(b + 112), s.wtime_ns);
	/* a one-member set: count 1, the default stripe, its own size */
	assert_int_equal(tfs_get32(b + 120), 1);
	assert_int_equal(tfs_get32(b + 124), 256);
	assert_int_equal(tfs_get64(b + 128), s.map[0].start);
	assert_int_equal(tfs_get64(b + 136), 3);
	assert_int_equal(tfs_get64(b + 144), s.map[1].start);
	assert_int_equal(tfs_get64(b + 152), 1);
	assert_int_equal(tfs_get64(b + 3552), s.dev_blocks);
	for (int i = 160; i < 4092; i++)
		if (i < 3552 || i >= 3560)
			assert_int_equal(b[i], 0);
	/* the largest map still fits before the member table, the largest
	 * table before the CRC, and a version-2 map before the CRC */
	assert_true(128 + 16 * TFS_MAP_MAX <= TFS_SET_TABLE);
	assert_true(TFS_SET_TABLE + 8 * TFS_SET_MAX <= 4092);
	assert_true(128 + 16 * TFS_MAP_MAX_V2 <= 4092);
	assert_int_equal(tfs_get32(b + 4092), tfs_crc32c(0, b, 4092));
}

static void test_format_super_rejects_flipped_bit(void **state)
{
	struct tfs_super s, d;
	uint8_t b[TFS_BLOCK_SIZE];

	(void)state;
	sample_super(&s);
	tfs_super_encode(&s, b);
	/* Every single-bit error anywhere in the block is caught. */
	for (unsigned int i = 0; i < TFS_BLOCK_SIZE; i++) {
		for (int bit = 0; bit < 8; bit += 3) {
			int rc;

			b[i] ^= (uint8_t)(1u << bit);
			rc = tfs_super_decode(b, &d);
			b[i] ^= (uint8_t)(1u << bit);
			if (i < 8)
				assert_int_equal(rc, -EINVAL); /* magic */
			else
				assert_int_equal(rc, -EUCLEAN);
		}
	}
	assert_int_equal(tfs_super_decode(b, &d), 0);
}

static void test_format_super_without_magic_is_einval(void **state)
{
	uint8_t b[TFS_BLOCK_SIZE] = { 0 };
	struct tfs_super d;

	(void)state;
	assert_int_equal(tfs_super_decode(b, &d), -EINVAL);
	memcpy(b, "ext4fs\0\0", 8);
	assert_int_equal(tfs_super_decode(b, &d), -EINVAL);
}

static void test_format_super_unknown_version_is_eproto(void **state)
{
	struct tfs_super s, d;
	uint8_t b[TFS_BLOCK_SIZE];

	(void)state;
	sample_super(&s);
	tfs_super_encode(&s, b);
	tfs_put32(b + 8, 5);
	super_recrc(b);
	assert_int_equal(tfs_super_decode(b, &d), -EPROTO);
	assert_int_equal(tfs_super_version(b), 5);
	/* version 1, two fixed checkpoint slots: refused, not misread */
	tfs_put32(b + 8, 1);
	super_recrc(b);
	assert_int_equal(tfs_super_decode(b, &d), -EPROTO);
	assert_int_equal(tfs_super_version(b), 1);
}

/* Patch a 64- or 32-bit field with a valid CRC: the layout check must
 * refuse it. */
static int decode_patched64(const struct tfs_super *s, size_t off, uint64_t v)
{
	uint8_t b[TFS_BLOCK_SIZE];
	struct tfs_super d;

	tfs_super_encode(s, b);
	tfs_put64(b + off, v);
	super_recrc(b);
	return tfs_super_decode(b, &d);
}

static int decode_patched32(const struct tfs_super *s, size_t off, uint32_t v)
{
	uint8_t b[TFS_BLOCK_SIZE];
	struct tfs_super d;

	tfs_super_encode(s, b);
	tfs_put32(b + off, v);
	super_recrc(b);
	return tfs_super_decode(b, &d);
}

/* Fields near 2^63 or 2^64 whose sums wrap around to a layout that
 * looks right (each superblock's checksum right) are refused: they
 * passed the layout check and were read at wrapped byte offsets. */
static void test_format_super_offsets_that_wrap_are_refused(void **state)
{
	static const struct {
		uint64_t dev_blocks, journal_blocks;
	} bad[] = {
		/* a journal near 2^63 + 2^62: data_start wraps */
		{ 65536, (1ull << 63) + (1ull << 62) },
		/* a journal that ends at 2^64: data_start 0 */
		{ 65536, UINT64_MAX - 1 },
		/* a device of 2^63 blocks, whose byte size wraps */
		{ 1ull << 63, 100 },
		{ UINT64_MAX, UINT64_MAX - 1 },
	};
	static const struct {
		uint64_t start, len;
	} badmap[] = {
		/* pieces whose end wraps around 2^64 to inside the device */
		{ UINT64_MAX - 1, 4 },
		{ 1ull << 63, (1ull << 63) + 200 },
		/* a piece of 2^52 blocks: its byte length wraps to 0 */
		{ 1000, 1ull << 52 },
		/* start inside, length past the end */
		{ 65535, 2 },
	};
	uint8_t b[TFS_BLOCK_SIZE];
	struct tfs_super s, d;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sample_super(&s);
		s.dev_blocks = bad[i].dev_blocks;
		s.journal_blocks = bad[i].journal_blocks;
		s.data_start = s.journal_start + s.journal_blocks;
		tfs_super_encode(&s, b);
		if (tfs_super_decode(b, &d) != -EUCLEAN)
			fail_msg("superblock %zu (journal %llu blocks, device "
				 "%llu blocks) was not refused",
				 i, (unsigned long long)s.journal_blocks,
				 (unsigned long long)s.dev_blocks);
	}
	for (size_t i = 0; i < sizeof(badmap) / sizeof(badmap[0]); i++) {
		sample_super(&s);
		s.npieces = 2;
		s.map[1].start = badmap[i].start;
		s.map[1].len = badmap[i].len;
		/* the lengths add up to the checkpoint's, modulo 2^64 */
		s.ckpt_len = (3 + badmap[i].len) * TFS_BLOCK_SIZE;
		tfs_super_encode(&s, b);
		if (tfs_super_decode(b, &d) != -EUCLEAN)
			fail_msg("map piece %zu (%llu blocks from %llu) was "
				 "not refused",
				 i, (unsigned long long)badmap[i].len,
				 (unsigned long long)badmap[i].start);
	}
	/* the largest member (2^40 blocks, 4 PiB) still decodes */
	sample_super(&s);
	s.dev_blocks = 1ull << TFS_MEMBER_BITS;
	tfs_super_encode(&s, b);
	assert_int_equal(tfs_super_decode(b, &d), 0);
	s.dev_blocks++;
	tfs_super_encode(&s, b);
	assert_int_equal(tfs_super_decode(b, &d), -EUCLEAN);
}

static void test_format_super_rejects_inconsistent_layout(void **state)
{
	struct tfs_super s, t;

	(void)state;
	sample_super(&s);
	assert_int_equal(decode_patched32(&s, 12, 8192), -EUCLEAN);
	assert_int_equal(decode_patched64(&s, 32, 3), -EUCLEAN);
	assert_int_equal(decode_patched64(&s, 40, 1), -EUCLEAN);
	assert_int_equal(decode_patched64(&s, 48, s.data_start + 1), -EUCLEAN);
	assert_int_equal(decode_patched64(&s, 48, s.data_start - 1), -EUCLEAN);
	/* the data area must not be empty or outside the device */
	assert_int_equal(decode_patched64(&s, 24, s.data_start), -EUCLEAN);
	assert_int_equal(decode_patched64(&s, 24, UINT64_MAX), -EUCLEAN);
	/* the map: 1..TFS_MAP_MAX pieces, adding up to the length */
	assert_int_equal(decode_patched32(&s, 60, 0), -EUCLEAN);
	assert_int_equal(decode_patched32(&s, 60, TFS_MAP_MAX + 1), -EUCLEAN);
	assert_int_equal(decode_patched32(&s, 60, 1), -EUCLEAN);
	assert_int_equal(decode_patched64(&s, 64, TFS_HDR_SIZE - 1), -EUCLEAN);
	assert_int_equal(decode_patched64(&s, 64, 3 * TFS_BLOCK_SIZE),
			 -EUCLEAN);
	assert_int_equal(decode_patched64(&s, 64, 4 * TFS_BLOCK_SIZE + 1),
			 -EUCLEAN);
	/* a piece in the journal, empty, or overlapping another */
	assert_int_equal(decode_patched64(&s, 128, s.data_start - 1), -EUCLEAN);
	assert_int_equal(decode_patched64(&s, 152, 0), -EUCLEAN);
	assert_int_equal(decode_patched64(&s, 144, s.map[0].start + 2),
			 -EUCLEAN);
	assert_int_equal(decode_patched64(&s, 144, s.dev_blocks), -EUCLEAN);
	/* the limits themselves are fine */
	assert_int_equal(decode_patched64(&s, 64, 3 * TFS_BLOCK_SIZE + 1), 0);
	assert_int_equal(decode_patched64(&s, 64, 4 * TFS_BLOCK_SIZE), 0);
	assert_int_equal(decode_patched64(&s, 144, s.map[0].start + 3), 0);
	assert_int_equal(decode_patched64(&s, 144, s.dev_blocks - 1), 0);
	assert_int_equal(decode_patched64(&s, 144, s.data_start), 0);
	/* TFS_MAP_MAX one-block pieces */
	t = s;
	t.npieces = TFS_MAP_MAX;
	t.ckpt_len = TFS_MAP_MAX * TFS_BLOCK_SIZE;
	for (uint32_t i = 0; i < TFS_MAP_MAX; i++) {
		t.map[i].start = t.data_start + 2 * i;
		t.map[i].len = 1;
	}
	assert_int_equal(decode_patched64(&t, 64, t.ckpt_len), 0);
	t.map[TFS_MAP_MAX - 1].start = t.map[0].start;
	assert_int_equal(decode_patched64(&t, 64, t.ckpt_len), -EUCLEAN);
}

/* A version-2 superblock (one device, no member fields, up to 240 map
 * pieces) decodes as a one-member set and encodes back as version 2,
 * byte for byte. */
static void test_format_super_version2_still_reads(void **state)
{
	struct tfs_super s, d;
	uint8_t b[TFS_BLOCK_SIZE], c[TFS_BLOCK_SIZE];

	(void)state;
	sample_super(&s);
	s.version = TFS_VERSION_V2;
	s.npieces = TFS_MAP_MAX_V2;
	s.ckpt_len = TFS_MAP_MAX_V2 * TFS_BLOCK_SIZE;
	for (uint32_t i = 0; i < TFS_MAP_MAX_V2; i++) {
		s.map[i].start = s.data_start + 2 * i;
		s.map[i].len = 1;
	}
	tfs_super_encode(&s, b);
	assert_int_equal(tfs_get32(b + 8), 2);
	assert_int_equal(tfs_get64(b + 120), 0);
	assert_int_equal(tfs_get32(b + 76), 0);
	assert_int_equal(tfs_super_decode(b, &d), 0);
	assert_int_equal(d.version, 2);
	assert_int_equal(d.member, 0);
	assert_int_equal(d.nmembers, 1);
	assert_int_equal(d.stripe_blocks, TFS_STRIPE_DEFAULT);
	assert_int_equal(d.member_blocks[0], s.dev_blocks);
	assert_int_equal(d.npieces, TFS_MAP_MAX_V2);
	tfs_super_encode(&d, c);
	assert_memory_equal(b, c, TFS_BLOCK_SIZE);
	/* its reserved fields stay zero */
	tfs_put32(b + 76, 1);
	super_recrc(b);
	assert_int_equal(tfs_super_decode(b, &d), -EUCLEAN);
	/* version 3 holds fewer pieces: the member table follows them */
	s.version = 0;
	tfs_super_encode(&s, b);
	tfs_put32(b + 60, TFS_MAP_MAX + 1);
	super_recrc(b);
	assert_int_equal(tfs_super_decode(b, &d), -EUCLEAN);
}

/* A set of three: member 0 with a checkpoint in pieces on members 1
 * and 2, and member 2's own superblock. */
static void sample_set(struct tfs_super *s)
{
	sample_super(s);
	s->nmembers = 3;
	s->stripe_blocks = 512;
	s->member_blocks[0] = s->dev_blocks;
	s->member_blocks[1] = 4096;
	s->member_blocks[2] = 1ull << TFS_MEMBER_BITS;
	s->map[0].start = (1ull << TFS_MEMBER_BITS) | TFS_MEMBER_DATA_START;
	s->map[1].start = (2ull << TFS_MEMBER_BITS) | ((1ull << 40) - 1);
}

static void test_format_super_set_fields(void **state)
{
	struct tfs_super s, m, d;
	uint8_t b[TFS_BLOCK_SIZE];

	(void)state;
	sample_set(&s);
	tfs_super_encode(&s, b);
	assert_int_equal(tfs_get32(b + 120), 3);
	assert_int_equal(tfs_get32(b + 124), 512);
	assert_int_equal(tfs_get64(b + 3560), 4096);
	assert_int_equal(tfs_super_decode(b, &d), 0);
	assert_int_equal(d.nmembers, 3);
	assert_int_equal(d.stripe_blocks, 512);
	assert_int_equal(d.member_blocks[2], 1ull << TFS_MEMBER_BITS);
	assert_int_equal(tfs_super_member_blocks(&d, 1), 4096);
	assert_int_equal(tfs_super_member_blocks(&d, 3), 0);
	assert_int_equal(tfs_super_data_start(&d, 1), TFS_MEMBER_DATA_START);
	/* the data areas: member 0's from data_start, the others' from 1 MiB */
	assert_true(tfs_super_in_data(&d, d.data_start, 1));
	assert_false(tfs_super_in_data(&d, d.data_start - 1, 1));
	assert_true(tfs_super_in_data(&d, (1ull << 40) | 256, 4096 - 256));
	assert_false(tfs_super_in_data(&d, (1ull << 40) | 256, 4096 - 255));
	assert_false(tfs_super_in_data(&d, (1ull << 40) | 255, 1));
	assert_false(tfs_super_in_data(&d, 3ull << 40 | 256, 1));
	assert_false(tfs_super_in_data(&d, UINT64_MAX, 1));
	/* a map piece outside its member, or on no member */
	assert_int_equal(decode_patched64(&s, 128, (1ull << 40) | 4094),
			 -EUCLEAN);
	assert_int_equal(decode_patched64(&s, 128, (1ull << 40) | 100),
			 -EUCLEAN);
	assert_int_equal(decode_patched64(&s, 128, (3ull << 40) | 300),
			 -EUCLEAN);
	assert_int_equal(decode_patched64(&s, 128, (1ull << 40) | 4093), 0);
	/* member fields: index past the count, counts, stripes, sizes */
	assert_int_equal(decode_patched32(&s, 76, 3), -EUCLEAN);
	assert_int_equal(decode_patched32(&s, 120, 0), -EUCLEAN);
	assert_int_equal(decode_patched32(&s, 120, TFS_SET_MAX + 1), -EUCLEAN);
	assert_int_equal(decode_patched32(&s, 124, 0), -EUCLEAN);
	assert_int_equal(decode_patched32(&s, 124, TFS_STRIPE_MAX + 1),
			 -EUCLEAN);
	assert_int_equal(decode_patched32(&s, 124, TFS_STRIPE_MAX), 0);
	assert_int_equal(decode_patched64(&s, 3552, s.dev_blocks + 1),
			 -EUCLEAN);
	assert_int_equal(decode_patched64(&s, 3560, TFS_MEMBER_DATA_START),
			 -EUCLEAN);
	assert_int_equal(decode_patched64(&s, 3568, (1ull << 40) + 1),
			 -EUCLEAN);
	/* member 2's superblock: no journal, no checkpoint, no flags */
	m = s;
	m.member = 2;
	m.dev_blocks = s.member_blocks[2];
	m.journal_blocks = 0;
	m.data_start = TFS_MEMBER_DATA_START;
	m.npieces = 0;
	m.ckpt_len = 0;
	m.flags = 0;
	tfs_super_encode(&m, b);
	assert_int_equal(tfs_super_decode(b, &d), 0);
	assert_int_equal(d.member, 2);
	assert_int_equal(d.npieces, 0);
	assert_memory_equal(d.uuid, s.uuid, 16);
	assert_int_equal(decode_patched32(&m, 56, TFS_SB_CLEAN), -EUCLEAN);
	assert_int_equal(decode_patched32(&m, 60, 1), -EUCLEAN);
	assert_int_equal(decode_patched64(&m, 40, 8), -EUCLEAN);
	assert_int_equal(decode_patched64(&m, 48, 2), -EUCLEAN);
	assert_int_equal(decode_patched64(&m, 24, 4096), -EUCLEAN);
}

static void check_layout(uint64_t dev_blocks)
{
	const uint64_t mib = (1u << 20) / TFS_BLOCK_SIZE;
	struct tfs_super s = { 0 }, d;
	uint8_t b[TFS_BLOCK_SIZE];

	assert_int_equal(tfs_layout(dev_blocks, &s), 0);
	assert_int_equal(s.dev_blocks, dev_blocks);
	assert_int_equal(s.journal_start, 2);
	assert_true(s.journal_blocks >= 3 * mib);
	assert_true(s.journal_blocks <= 1024 * mib);
	assert_true(s.journal_blocks + 1 >= dev_blocks / 256 ||
		    s.journal_blocks == 1024 * mib);
	assert_int_equal(s.data_start, s.journal_start + s.journal_blocks);
	assert_true(s.data_start < s.dev_blocks);
	/* A layout tfs_layout() makes, with a one-block checkpoint at the
	 * start of the data area, is one the decoder accepts. */
	s.ckpt_len = TFS_HDR_SIZE;
	s.npieces = 1;
	s.map[0].start = s.data_start;
	s.map[0].len = 1;
	tfs_super_encode(&s, b);
	assert_int_equal(tfs_super_decode(b, &d), 0);
}

static void test_format_layout_regions_in_order(void **state)
{
	(void)state;
	check_layout(TFS_MIN_DEVICE_BYTES / TFS_BLOCK_SIZE);
	check_layout(65536);	  /* 256 MiB */
	check_layout(65536 + 7);  /* odd sizes */
	check_layout(262144);	  /* 1 GiB */
	check_layout(1ull << 28); /* 1 TiB */
	check_layout(1ull << 34); /* 64 TiB: journal capped */
}

static void test_format_layout_rejects_below_minimum(void **state)
{
	struct tfs_super s;

	(void)state;
	assert_int_equal(
	    tfs_layout(TFS_MIN_DEVICE_BYTES / TFS_BLOCK_SIZE - 1, &s), -ENOSPC);
	assert_int_equal(tfs_layout(0, &s), -ENOSPC);
}

/* ===== records ===== */

static struct tfs_attr sample_attr(void)
{
	struct tfs_attr a = { 0 };

	a.ino = 0x1234567890ull;
	a.mode = 0100644;
	a.uid = 1001;
	a.gid = 1002;
	a.nlink = 3;
	a.size = 0xabcdef012345ull;
	a.atime.sec = -5; /* before the epoch */
	a.atime.nsec = 999999999;
	a.mtime.sec = 1700000000;
	a.mtime.nsec = 1;
	a.ctime.sec = INT64_MAX;
	a.ctime.nsec = 500;
	a.rdev = 0x0801;
	a.parent = 77;
	return a;
}

static void test_format_rec_inode_at_documented_offsets(void **state)
{
	struct tfs_buf b = { 0 };
	struct tfs_attr a = sample_attr();
	const uint8_t *p;

	(void)state;
	assert_int_equal(tfs_rec_put_inode(&b, &a), 0);
	assert_int_equal(b.len, TFS_REC_SIZE_INODE);
	assert_int_equal(b.len, 100);
	p = b.p;
	assert_int_equal(tfs_get32(p), TFS_REC_INODE);
	assert_int_equal(tfs_get32(p + 4), 92);
	p += 8;
	assert_int_equal(tfs_get64(p), a.ino);
	assert_int_equal(tfs_get32(p + 8), a.mode);
	assert_int_equal(tfs_get32(p + 12), a.uid);
	assert_int_equal(tfs_get32(p + 16), a.gid);
	assert_int_equal(tfs_get32(p + 20), a.nlink);
	assert_int_equal(tfs_get64(p + 24), a.size);
	assert_int_equal(tfs_get64(p + 32), (uint64_t)a.atime.sec);
	assert_int_equal(tfs_get32(p + 40), a.atime.nsec);
	assert_int_equal(tfs_get64(p + 44), (uint64_t)a.mtime.sec);
	assert_int_equal(tfs_get32(p + 52), a.mtime.nsec);
	assert_int_equal(tfs_get64(p + 56), (uint64_t)a.ctime.sec);
	assert_int_equal(tfs_get32(p + 64), a.ctime.nsec);
	assert_int_equal(tfs_get64(p + 68), a.rdev);
	assert_int_equal(tfs_get64(p + 76), a.parent);
	for (int i = 84; i < 92; i++)
		assert_int_equal(p[i], 0);
	tfs_buf_release(&b);
}

static void test_format_rec_extent_at_documented_offsets(void **state)
{
	struct tfs_buf b = { 0 };
	const uint8_t *p;

	(void)state;
	assert_int_equal(tfs_rec_put_extent(&b, 9, 10, 11, 12, 1), 0);
	assert_int_equal(b.len, TFS_REC_SIZE_EXTENT);
	p = b.p;
	assert_int_equal(tfs_get32(p), TFS_REC_EXTENT);
	assert_int_equal(tfs_get32(p + 4), 36);
	assert_int_equal(tfs_get64(p + 8), 9);
	assert_int_equal(tfs_get64(p + 16), 10);
	assert_int_equal(tfs_get64(p + 24), 11);
	assert_int_equal(tfs_get64(p + 32), 12);
	assert_int_equal(tfs_get32(p + 40), 1);
	tfs_buf_release(&b);
}

static void test_format_rec_refcount_at_documented_offsets(void **state)
{
	struct tfs_buf b = { 0 };
	struct tfs_rec r;
	size_t pos = 0;
	const uint8_t *p;

	(void)state;
	assert_int_equal(tfs_rec_put_refcount(&b, 7000, 30, 3), 0);
	assert_int_equal(b.len, TFS_REC_SIZE_REFCOUNT);
	p = b.p;
	assert_int_equal(tfs_get32(p), TFS_REC_REFCOUNT);
	assert_int_equal(tfs_get32(p + 4), 20);
	assert_int_equal(tfs_get64(p + 8), 7000);
	assert_int_equal(tfs_get64(p + 16), 30);
	assert_int_equal(tfs_get32(p + 24), 3);
	assert_int_equal(tfs_rec_next(b.p, b.len, &pos, &r), 1);
	assert_int_equal(r.type, TFS_REC_REFCOUNT);
	assert_int_equal(r.pblk, 7000);
	assert_int_equal(r.len, 30);
	assert_int_equal(r.flags, 3);
	tfs_buf_release(&b);
}

static void test_format_rec_roundtrip_every_type(void **state)
{
	struct tfs_buf b = { 0 };
	struct tfs_attr a = sample_attr();
	struct tfs_rec r;
	size_t pos = 0, sizes[9], before;
	static uint8_t big[TFS_XATTR_VALUE_MAX];
	char target[TFS_SYMLINK_MAX];

	(void)state;
	memset(big, 0x5c, sizeof(big));
	memset(target, 't', sizeof(target));
	before = b.len;
	assert_int_equal(tfs_rec_put_inode(&b, &a), 0);
	sizes[0] = b.len - before, before = b.len;
	assert_int_equal(tfs_rec_put_free(&b, 42), 0);
	sizes[1] = b.len - before, before = b.len;
	assert_int_equal(tfs_rec_put_link(&b, 1, 43, "hello", 5), 0);
	sizes[2] = b.len - before, before = b.len;
	assert_int_equal(tfs_rec_put_unlink(&b, 1, "bye", 3), 0);
	sizes[3] = b.len - before, before = b.len;
	assert_int_equal(tfs_rec_put_extent(&b, 44, 5, 1000, 7, 1), 0);
	sizes[4] = b.len - before, before = b.len;
	assert_int_equal(tfs_rec_put_punch(&b, 44, 2, UINT64_MAX - 2), 0);
	sizes[5] = b.len - before, before = b.len;
	assert_int_equal(
	    tfs_rec_put_xattr(&b, 45, "user.k", 6, big, sizeof(big)), 0);
	sizes[6] = b.len - before, before = b.len;
	assert_int_equal(tfs_rec_put_xattr_del(&b, 45, "user.k", 6), 0);
	sizes[7] = b.len - before, before = b.len;
	assert_int_equal(tfs_rec_put_symlink(&b, 46, target, sizeof(target)),
			 0);
	sizes[8] = b.len - before;

	/* the size helpers agree with what the encoders produce */
	assert_int_equal(sizes[0], TFS_REC_SIZE_INODE);
	assert_int_equal(sizes[1], TFS_REC_HDR + 8);
	assert_int_equal(sizes[2], tfs_rec_size_link(5));
	assert_int_equal(sizes[3], TFS_REC_HDR + 8 + 3);
	assert_int_equal(sizes[4], TFS_REC_SIZE_EXTENT);
	assert_int_equal(sizes[5], TFS_REC_HDR + 24);
	assert_int_equal(sizes[6], tfs_rec_size_xattr(6, sizeof(big)));
	assert_int_equal(sizes[7], TFS_REC_HDR + 8 + 6);
	assert_int_equal(sizes[8], tfs_rec_size_symlink(sizeof(target)));

	assert_int_equal(tfs_rec_next(b.p, b.len, &pos, &r), 1);
	assert_int_equal(r.type, TFS_REC_INODE);
	assert_int_equal(r.ino, a.ino);
	assert_memory_equal(&r.attr.ino, &a.ino, sizeof(a.ino));
	assert_int_equal(r.attr.mode, a.mode);
	assert_int_equal(r.attr.uid, a.uid);
	assert_int_equal(r.attr.gid, a.gid);
	assert_int_equal(r.attr.nlink, a.nlink);
	assert_int_equal(r.attr.size, a.size);
	assert_true(r.attr.atime.sec == a.atime.sec);
	assert_int_equal(r.attr.atime.nsec, a.atime.nsec);
	assert_true(r.attr.mtime.sec == a.mtime.sec);
	assert_true(r.attr.ctime.sec == a.ctime.sec);
	assert_int_equal(r.attr.ctime.nsec, a.ctime.nsec);
	assert_int_equal(r.attr.rdev, a.rdev);
	assert_int_equal(r.attr.parent, a.parent);

	assert_int_equal(tfs_rec_next(b.p, b.len, &pos, &r), 1);
	assert_int_equal(r.type, TFS_REC_FREE);
	assert_int_equal(r.ino, 42);

	assert_int_equal(tfs_rec_next(b.p, b.len, &pos, &r), 1);
	assert_int_equal(r.type, TFS_REC_LINK);
	assert_int_equal(r.ino, 1);
	assert_int_equal(r.child, 43);
	assert_int_equal(r.name_len, 5);
	assert_memory_equal(r.name, "hello", 5);

	assert_int_equal(tfs_rec_next(b.p, b.len, &pos, &r), 1);
	assert_int_equal(r.type, TFS_REC_UNLINK);
	assert_int_equal(r.ino, 1);
	assert_int_equal(r.name_len, 3);
	assert_memory_equal(r.name, "bye", 3);

	assert_int_equal(tfs_rec_next(b.p, b.len, &pos, &r), 1);
	assert_int_equal(r.type, TFS_REC_EXTENT);
	assert_int_equal(r.ino, 44);
	assert_int_equal(r.lblk, 5);
	assert_int_equal(r.pblk, 1000);
	assert_int_equal(r.len, 7);
	assert_int_equal(r.flags, 1);

	assert_int_equal(tfs_rec_next(b.p, b.len, &pos, &r), 1);
	assert_int_equal(r.type, TFS_REC_PUNCH);
	assert_int_equal(r.ino, 44);
	assert_int_equal(r.lblk, 2);
	assert_int_equal(r.len, UINT64_MAX - 2);

	assert_int_equal(tfs_rec_next(b.p, b.len, &pos, &r), 1);
	assert_int_equal(r.type, TFS_REC_XATTR);
	assert_int_equal(r.ino, 45);
	assert_int_equal(r.name_len, 6);
	assert_memory_equal(r.name, "user.k", 6);
	assert_int_equal(r.value_len, sizeof(big));
	assert_memory_equal(r.value, big, sizeof(big));

	assert_int_equal(tfs_rec_next(b.p, b.len, &pos, &r), 1);
	assert_int_equal(r.type, TFS_REC_XATTR_DEL);
	assert_int_equal(r.ino, 45);
	assert_int_equal(r.name_len, 6);
	assert_memory_equal(r.name, "user.k", 6);

	assert_int_equal(tfs_rec_next(b.p, b.len, &pos, &r), 1);
	assert_int_equal(r.type, TFS_REC_SYMLINK);
	assert_int_equal(r.ino, 46);
	assert_int_equal(r.name_len, sizeof(target));
	assert_memory_equal(r.name, target, sizeof(target));

	assert_int_equal(pos, b.len);
	assert_int_equal(tfs_rec_next(b.p, b.len, &pos, &r), 0);
	assert_int_equal(pos, b.len);
	tfs_buf_release(&b);
}

static void test_format_rec_xattr_with_empty_value(void **state)
{
	struct tfs_buf b = { 0 };
	struct tfs_rec r;
	size_t pos = 0;

	(void)state;
	assert_int_equal(tfs_rec_put_xattr(&b, 5, "user.e", 6, NULL, 0), 0);
	assert_int_equal(tfs_rec_next(b.p, b.len, &pos, &r), 1);
	assert_int_equal(r.value_len, 0);
	assert_int_equal(r.name_len, 6);
	tfs_buf_release(&b);
}

static void test_format_rec_rejects_truncated_record(void **state)
{
	struct tfs_buf b = { 0 };
	struct tfs_attr a = sample_attr();
	size_t ends[6], n = 0;

	(void)state;
	assert_int_equal(tfs_rec_put_inode(&b, &a), 0);
	ends[n++] = b.len;
	assert_int_equal(tfs_rec_put_link(&b, 1, 2, "name", 4), 0);
	ends[n++] = b.len;
	assert_int_equal(tfs_rec_put_extent(&b, 2, 0, 100, 1, 0), 0);
	ends[n++] = b.len;
	assert_int_equal(tfs_rec_put_xattr(&b, 2, "user.a", 6, "v", 1), 0);
	ends[n++] = b.len;
	assert_int_equal(tfs_rec_put_symlink(&b, 3, "tgt", 3), 0);
	ends[n++] = b.len;
	assert_int_equal(tfs_rec_put_free(&b, 3), 0);
	ends[n++] = b.len;

	/*
	 * Decode every prefix of the stream from a heap copy of exactly
	 * that many bytes (so ASan sees any read past it): whole records
	 * decode, the cut one is -EUCLEAN.
	 */
	for (size_t cut = 0; cut <= b.len; cut++) {
		uint8_t *p = malloc(cut ? cut : 1);
		struct tfs_rec r;
		size_t pos = 0, whole = 0;
		int rc;

		assert_non_null(p);
		memcpy(p, b.p, cut);
		while (whole < n && ends[whole] <= cut)
			whole++;
		for (size_t i = 0; i < whole; i++)
			assert_int_equal(tfs_rec_next(p, cut, &pos, &r), 1);
		rc = tfs_rec_next(p, cut, &pos, &r);
		if (whole && ends[whole - 1] == cut)
			assert_int_equal(rc, 0);
		else if (!whole && cut == 0)
			assert_int_equal(rc, 0);
		else
			assert_int_equal(rc, -EUCLEAN);
		free(p);
	}
	tfs_buf_release(&b);
}

/* Decode one hand-made record: type, body. */
static int decode_raw(uint32_t type, const void *body, uint32_t blen)
{
	uint8_t *p = malloc(TFS_REC_HDR + blen);
	struct tfs_rec r;
	size_t pos = 0;
	int rc;

	assert_non_null(p);
	tfs_put32(p, type);
	tfs_put32(p + 4, blen);
	if (blen)
		memcpy(p + TFS_REC_HDR, body, blen);
	rc = tfs_rec_next(p, TFS_REC_HDR + blen, &pos, &r);
	if (rc != 1)
		assert_int_equal(pos, 0); /* no advance on error */
	free(p);
	return rc;
}

static void test_format_rec_rejects_wrong_lengths_and_types(void **state)
{
	uint8_t body[128] = { 0 };

	(void)state;
	tfs_put64(body, 2);
	tfs_put64(body + 24, 1); /* EXTENT len */
	assert_int_equal(decode_raw(0, body, 8), -EUCLEAN);
	assert_int_equal(decode_raw(11, body, 8), -EUCLEAN);
	/* REFCOUNT: 20 bytes, len >= 1, no wrap, count >= 1 */
	assert_int_equal(decode_raw(TFS_REC_REFCOUNT, body, 19), -EUCLEAN);
	tfs_put64(body + 8, 5);
	tfs_put32(body + 16, 2);
	assert_int_equal(decode_raw(TFS_REC_REFCOUNT, body, 20), 1);
	tfs_put32(body + 16, 0);
	assert_int_equal(decode_raw(TFS_REC_REFCOUNT, body, 20), -EUCLEAN);
	tfs_put32(body + 16, 2);
	tfs_put64(body + 8, 0);
	assert_int_equal(decode_raw(TFS_REC_REFCOUNT, body, 20), -EUCLEAN);
	tfs_put64(body, UINT64_MAX - 1);
	tfs_put64(body + 8, 5);
	assert_int_equal(decode_raw(TFS_REC_REFCOUNT, body, 20), -EUCLEAN);
	memset(body, 0, 24);
	tfs_put64(body, 2);
	assert_int_equal(decode_raw(0xffffffffu, body, 8), -EUCLEAN);
	assert_int_equal(decode_raw(TFS_REC_INODE, body, 91), -EUCLEAN);
	assert_int_equal(decode_raw(TFS_REC_INODE, body, 93), -EUCLEAN);
	assert_int_equal(decode_raw(TFS_REC_INODE, body, 92), 1);
	assert_int_equal(decode_raw(TFS_REC_FREE, body, 7), -EUCLEAN);
	assert_int_equal(decode_raw(TFS_REC_FREE, body, 9), -EUCLEAN);
	assert_int_equal(decode_raw(TFS_REC_FREE, body, 8), 1);
	assert_int_equal(decode_raw(TFS_REC_EXTENT, body, 35), -EUCLEAN);
	assert_int_equal(decode_raw(TFS_REC_EXTENT, body, 36), 1);
	assert_int_equal(decode_raw(TFS_REC_PUNCH, body, 23), -EUCLEAN);
	assert_int_equal(decode_raw(TFS_REC_PUNCH, body, 24), 1);
	assert_int_equal(decode_raw(TFS_REC_LINK, body, 16), -EUCLEAN);
	assert_int_equal(decode_raw(TFS_REC_UNLINK, body, 8), -EUCLEAN);
	assert_int_equal(decode_raw(TFS_REC_XATTR, body, 11), -EUCLEAN);
	assert_int_equal(decode_raw(TFS_REC_XATTR_DEL, body, 8), -EUCLEAN);
	assert_int_equal(decode_raw(TFS_REC_SYMLINK, body, 8), -EUCLEAN);
}

static void test_format_rec_rejects_length_past_the_buffer(void **state)
{
	uint8_t p[TFS_REC_HDR + 8] = { 0 };
	struct tfs_rec r;
	size_t pos = 0;

	(void)state;
	tfs_put32(p, TFS_REC_FREE);
	tfs_put32(p + 4, 0xffffffffu); /* would wrap a 32-bit sum */
	assert_int_equal(tfs_rec_next(p, sizeof(p), &pos, &r), -EUCLEAN);
	tfs_put32(p + 4, 9);
	assert_int_equal(tfs_rec_next(p, sizeof(p), &pos, &r), -EUCLEAN);
	/* fewer bytes than a record header */
	assert_int_equal(tfs_rec_next(p, 7, &pos, &r), -EUCLEAN);
	assert_int_equal(pos, 0);
}

static void test_format_rec_rejects_bad_extent(void **state)
{
	uint8_t body[36] = { 0 };

	(void)state;
	tfs_put64(body, 2);
	tfs_put64(body + 24, 0); /* len 0 */
	assert_int_equal(decode_raw(TFS_REC_EXTENT, body, 36), -EUCLEAN);
	tfs_put64(body + 24, 1);
	tfs_put32(body + 32, 2); /* unknown flag */
	assert_int_equal(decode_raw(TFS_REC_EXTENT, body, 36), -EUCLEAN);
	tfs_put32(body + 32, 1);
	assert_int_equal(decode_raw(TFS_REC_EXTENT, body, 36), 1);
}

/* A LINK or UNLINK record with the given name. */
static int decode_name(uint32_t type, const char *name, size_t len)
{
	uint8_t body[16 + 300];
	size_t hdr = type == TFS_REC_LINK ? 16 : 8;

	memset(body, 0, sizeof(body));
	tfs_put64(body, 1);
	tfs_put64(body + 8, 2);
	memcpy(body + hdr, name, len);
	return decode_raw(type, body, (uint32_t)(hdr + len));
}

static void test_format_rec_rejects_bad_names(void **state)
{
	static const uint32_t types[] = { TFS_REC_LINK, TFS_REC_UNLINK };
	char longname[TFS_NAME_MAX + 1];

	(void)state;
	memset(longname, 'n', sizeof(longname));
	for (int i = 0; i < 2; i++) {
		uint32_t t = types[i];

		assert_int_equal(decode_name(t, "ok", 2), 1);
		assert_int_equal(decode_name(t, longname, TFS_NAME_MAX), 1);
		assert_int_equal(decode_name(t, longname, TFS_NAME_MAX + 1),
				 -EUCLEAN);
		assert_int_equal(decode_name(t, "a/b", 3), -EUCLEAN);
		assert_int_equal(decode_name(t, "/", 1), -EUCLEAN);
		assert_int_equal(decode_name(t, "a\0b", 3), -EUCLEAN);
		assert_int_equal(decode_name(t, ".", 1), -EUCLEAN);
		assert_int_equal(decode_name(t, "..", 2), -EUCLEAN);
		assert_int_equal(decode_name(t, "...", 3), 1);
		assert_int_equal(decode_name(t, ".a", 2), 1);
	}
}

static int decode_xattr(uint32_t nlen_field, const char *name, size_t nlen,
			size_t vlen)
{
	size_t blen = 12 + nlen + vlen;
	uint8_t *body = calloc(1, blen);
	int rc;

	assert_non_null(body);
	tfs_put64(body, 3);
	tfs_put32(body + 8, nlen_field);
	memcpy(body + 12, name, nlen);
	rc = decode_raw(TFS_REC_XATTR, body, (uint32_t)blen);
	free(body);
	return rc;
}

static void test_format_rec_xattr_limits(void **state)
{
	char n256[TFS_XATTR_NAME_MAX + 1];

	(void)state;
	memset(n256, 'x', sizeof(n256));
	assert_int_equal(decode_xattr(6, "user.a", 6, 0), 1);
	assert_int_equal(decode_xattr(6, "user.a", 6, TFS_XATTR_VALUE_MAX), 1);
	assert_int_equal(decode_xattr(6, "user.a", 6, TFS_XATTR_VALUE_MAX + 1),
			 -EUCLEAN);
	assert_int_equal(decode_xattr(0, "", 0, 4), -EUCLEAN);
	assert_int_equal(decode_xattr(255, n256, 255, 1), 1);
	assert_int_equal(decode_xattr(256, n256, 256, 1), -EUCLEAN);
	/* a name length past the body */
	assert_int_equal(decode_xattr(7, "user.a", 6, 0), -EUCLEAN);
	assert_int_equal(decode_xattr(0xffffffffu, "user.a", 6, 0), -EUCLEAN);
	assert_int_equal(decode_xattr(6, "use\0.a", 6, 0), -EUCLEAN);
}

static void test_format_rec_xattr_del_and_symlink_limits(void **state)
{
	uint8_t body[8 + TFS_SYMLINK_MAX + 1];

	(void)state;
	memset(body, 'y', sizeof(body));
	tfs_put64(body, 4);
	assert_int_equal(decode_raw(TFS_REC_XATTR_DEL, body, 8 + 255), 1);
	assert_int_equal(decode_raw(TFS_REC_XATTR_DEL, body, 8 + 256),
			 -EUCLEAN);
	assert_int_equal(decode_raw(TFS_REC_SYMLINK, body, 8 + 1), 1);
	assert_int_equal(decode_raw(TFS_REC_SYMLINK, body, 8 + TFS_SYMLINK_MAX),
			 1);
	assert_int_equal(
	    decode_raw(TFS_REC_SYMLINK, body, 8 + TFS_SYMLINK_MAX + 1),
	    -EUCLEAN);
}

/* ===== checkpoint and journal headers ===== */

static void test_format_ckpt_hdr_roundtrip(void **state)
{
	uint8_t p[TFS_HDR_SIZE];
	struct tfs_hdr h = { 0 }, d;

	(void)state;
	h.seq = 77;
	h.next_ino = 1000;
	h.used_blocks = 123456;
	h.nrec = 99;
	tfs_ckpt_hdr_encode(&h, p);
	assert_memory_equal(p, "tfsckpt\0", 8);
	assert_int_equal(tfs_get64(p + 8), 77);
	assert_int_equal(tfs_get64(p + 16), 1000);
	assert_int_equal(tfs_get64(p + 24), 123456);
	assert_int_equal(tfs_get64(p + 32), 99);
	for (int i = 40; i < 64; i++)
		assert_int_equal(p[i], 0);
	assert_int_equal(tfs_ckpt_hdr_decode(p, &d), 0);
	assert_int_equal(d.seq, 77);
	assert_int_equal(d.next_ino, 1000);
	assert_int_equal(d.used_blocks, 123456);
	assert_int_equal(d.nrec, 99);
	p[3] ^= 1;
	assert_int_equal(tfs_ckpt_hdr_decode(p, &d), -EUCLEAN);
}

static void test_format_txn_crc_covers_header_and_payload(void **state)
{
	uint8_t p[TFS_HDR_SIZE + 100];
	struct tfs_hdr h = { 0 }, d;

	(void)state;
	for (int i = 0; i < 100; i++)
		p[TFS_HDR_SIZE + i] = (uint8_t)i;
	h.seq = 5;
	h.next_ino = 17;
	h.used_blocks = 3;
	h.nrec = 4;
	h.payload_len = 100;
	tfs_txn_hdr_encode(&h, p, p + TFS_HDR_SIZE);
	assert_int_equal(tfs_get32(p), 0x6a736674u);
	assert_memory_equal(p, "tfsj", 4);
	assert_int_equal(tfs_get32(p + 4), 100);
	assert_int_equal(tfs_get64(p + 8), 5);
	assert_int_equal(tfs_get64(p + 16), 17);
	assert_int_equal(tfs_get64(p + 24), 3);
	assert_int_equal(tfs_get32(p + 32), 4);
	for (int i = 40; i < 64; i++)
		assert_int_equal(p[i], 0);
	/* the CRC is of the header with the CRC field 0, then the payload */
	{
		uint8_t hdr[TFS_HDR_SIZE];

		memcpy(hdr, p, TFS_HDR_SIZE);
		tfs_put32(hdr + 36, 0);
		assert_int_equal(tfs_get32(p + 36),
				 tfs_crc32c(tfs_crc32c(0, hdr, TFS_HDR_SIZE),
					    p + TFS_HDR_SIZE, 100));
	}
	assert_int_equal(tfs_txn_hdr_decode(p, &d), 0);
	assert_int_equal(d.seq, 5);
	assert_int_equal(d.payload_len, 100);
	assert_int_equal(d.nrec, 4);
	assert_int_equal(d.next_ino, 17);
	assert_int_equal(d.used_blocks, 3);
	assert_int_equal(tfs_txn_verify(p, &d, p + TFS_HDR_SIZE), 0);

	/* a flipped payload byte */
	p[TFS_HDR_SIZE + 50] ^= 0x10;
	assert_int_equal(tfs_txn_verify(p, &d, p + TFS_HDR_SIZE), -EUCLEAN);
	p[TFS_HDR_SIZE + 50] ^= 0x10;
	/* a flipped header byte (next_ino): decode fine, verify not */
	p[16] ^= 0x01;
	assert_int_equal(tfs_txn_hdr_decode(p, &d), 0);
	assert_int_equal(tfs_txn_verify(p, &d, p + TFS_HDR_SIZE), -EUCLEAN);
	p[16] ^= 0x01;
	/* a flipped zero byte of the header */
	p[50] ^= 0x80;
	assert_int_equal(tfs_txn_hdr_decode(p, &d), 0);
	assert_int_equal(tfs_txn_verify(p, &d, p + TFS_HDR_SIZE), -EUCLEAN);
	p[50] ^= 0x80;
	/* no magic */
	p[0] ^= 0x01;
	assert_int_equal(tfs_txn_hdr_decode(p, &d), -EUCLEAN);
}

/* ===== helpers ===== */

static void test_format_little_endian_helpers(void **state)
{
	uint8_t p[8];

	(void)state;
	tfs_put64(p, 0x0807060504030201ull);
	for (int i = 0; i < 8; i++)
		assert_int_equal(p[i], i + 1);
	assert_int_equal(tfs_get64(p), 0x0807060504030201ull);
	tfs_put32(p, 0xfffefdfcu);
	assert_int_equal(p[0], 0xfc);
	assert_int_equal(p[3], 0xff);
	assert_int_equal(tfs_get32(p), 0xfffefdfcu);
	tfs_put64(p, UINT64_MAX);
	assert_int_equal(tfs_get64(p), UINT64_MAX);
}

static void test_format_buf_grows_and_releases(void **state)
{
	struct tfs_buf b = { 0 };

	(void)state;
	assert_int_equal(tfs_buf_reserve(&b, 1), 0);
	assert_true(b.cap >= 1);
	for (int i = 0; i < 10000; i++)
		assert_int_equal(tfs_rec_put_free(&b, (uint64_t)i), 0);
	assert_int_equal(b.len, 10000u * 16);
	assert_true(b.cap >= b.len);
	assert_int_equal(tfs_buf_reserve(&b, 0), 0);
	tfs_buf_release(&b);
	assert_null(b.p);
	assert_int_equal(b.len, 0);
	assert_int_equal(b.cap, 0);
	tfs_buf_release(&b); /* twice is harmless */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format_super_roundtrip),
		cmocka_unit_test(
		    test_format_super_fields_at_documented_offsets),
		cmocka_unit_test(test_format_super_rejects_flipped_bit),
		cmocka_unit_test(test_format_super_without_magic_is_einval),
		cmocka_unit_test(test_format_super_unknown_version_is_eproto),
		cmocka_unit_test(test_format_super_rejects_inconsistent_layout),
		cmocka_unit_test(test_format_super_version2_still_reads),
		cmocka_unit_test(test_format_super_set_fields),
		cmocka_unit_test(
		    test_format_super_offsets_that_wrap_are_refused),
		cmocka_unit_test(test_format_layout_regions_in_order),
		cmocka_unit_test(test_format_layout_rejects_below_minimum),
		cmocka_unit_test(test_format_rec_inode_at_documented_offsets),
		cmocka_unit_test(test_format_rec_extent_at_documented_offsets),
		cmocka_unit_test(
		    test_format_rec_refcount_at_documented_offsets),
		cmocka_unit_test(test_format_rec_roundtrip_every_type),
		cmocka_unit_test(test_format_rec_xattr_with_empty_value),
		cmocka_unit_test(test_format_rec_rejects_truncated_record),
		cmocka_unit_test(
		    test_format_rec_rejects_wrong_lengths_and_types),
		cmocka_unit_test(
		    test_format_rec_rejects_length_past_the_buffer),
		cmocka_unit_test(test_format_rec_rejects_bad_extent),
		cmocka_unit_test(test_format_rec_rejects_bad_names),
		cmocka_unit_test(test_format_rec_xattr_limits),
		cmocka_unit_test(test_format_rec_xattr_del_and_symlink_limits),
		cmocka_unit_test(test_format_ckpt_hdr_roundtrip),
		cmocka_unit_test(test_format_txn_crc_covers_header_and_payload),
		cmocka_unit_test(test_format_little_endian_helpers),
		cmocka_unit_test(test_format_buf_grows_and_releases),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
