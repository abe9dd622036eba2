/*
 * crc32c.c: CRC-32C (Castagnoli), reflected polynomial 0x82f63b78.
 *
 * Two implementations compute the same function:
 *
 *   - crc32c_sw(): portable slicing-by-8.  Table k holds the CRC of a byte
 *     followed by k zero bytes, so eight table lookups fold eight input
 *     bytes into the CRC at once instead of one lookup per byte.  Input
 *     words are assembled byte by byte, which makes the code independent
 *     of alignment and byte order (compilers turn it into one load on
 *     little-endian machines).
 *   - crc32c_hw(): on x86-64, the SSE4.2 crc32 instruction, 8 bytes per
 *     instruction.  It is compiled with a target attribute, so the file
 *     needs no -msse4.2 and still runs on CPUs without it.
 *
 * State: the tables and the choice of implementation are made once, by
 * crc32c_init() under pthread_once(), on the first call.  pthread_once()
 * also orders those writes before every later read in any thread, which
 * is what makes tfs_crc32c() thread safe without further locking.
 *
 * Both work on the inverted CRC; tfs_crc32c() inverts on the way in and
 * out, so a stream checksummed in pieces gives the same result as in one
 * call and the initial value is 0.
 */
#include "crc32c.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TFS_CRC32C_HW 1
#include <nmmintrin.h>
#else
#define TFS_CRC32C_HW 0
#endif

#define CRC32C_POLY 0x82f63b78u /* 0x1edc6f41, bit-reversed */

typedef uint32_t (*crc32c_fn)(uint32_t crc, const uint8_t *p, size_t len);

static uint32_t crc32c_table[8][256];
static crc32c_fn crc32c_impl;
static pthread_once_t crc32c_once = PTHREAD_ONCE_INIT;

static void crc32c_build_tables(void)
{
	uint32_t c;
	int i, k;

	for (i = 0; i < 256; i++) {
		c = (uint32_t)i;
		for (k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ CRC32C_POLY : c >> 1;
		crc32c_table[0][i] = c;
	}
	for (i = 0; i < 256; i++) {
		c = crc32c_table[0][i];
		for (k = 1; k < 8; k++) {
			c = (c >> 8) ^ crc32c_table[0][c & 0xff];
			crc32c_table[k][i] = c;
		}
	}
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint32_t crc32c_sw(uint32_t crc, const uint8_t *p, size_t len)
{
	uint32_t(*t)[256] = crc32c_table;
	uint32_t lo, hi;

	for (; len >= 8; p += 8, len -= 8) {
		lo = crc ^ get_le32(p);
		hi = get_le32(p + 4);
		crc = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^
		      t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
		      t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^
		      t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
	}
	for (; len; p++, len--)
		crc = t[0][(crc ^ *p) & 0xff] ^ (crc >> 8);
	return crc;
}

#if TFS_CRC32C_HW
__attribute__((target("sse4.2"))) static uint32_t
crc32c_hw(uint32_t crc, const uint8_t *p, size_t len)
{
	unsigned long long c = crc;
	unsigned long long v;

	for (; len >= 8; p += 8, len -= 8) {
		memcpy(&v, p, sizeof(v)); /* p may be unaligned */
		c = _mm_crc32_u64(c, v);
	}
	crc = (uint32_t)c;
	for (; len; p++, len--)
		crc = _mm_crc32_u8(crc, *p);
	return crc;
}
#endif

static void crc32c_init(void)
{
	/* Built even when the instruction is used, so both paths agree on
	 * what is initialised and tests can compare them. */
	crc32c_build_tables();
	crc32c_impl = crc32c_sw;
#if TFS_CRC32C_HW
	__builtin_cpu_init();
	if (__builtin_cpu_supports("sse4.2"))
		crc32c_impl = crc32c_hw;
#endif
}

uint32_t tfs_crc32c(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&crc32c_once, crc32c_init);
	if (!len)
		return crc; /* buf may be NULL */
	return ~crc32c_impl(~crc, buf, len);
}
