/*
 * tfs_test_pattern.h: the hashing behind the test programs' data
 * patterns, written once.  A pattern byte depends on a key (a file's
 * name, number or seed) and the byte's offset, so a byte of another
 * file, another seed or another offset never passes for the right one.
 *
 *   tfs_mix64(z)             SplitMix64's finalizer: a bijection of
 *                            64-bit words that scatters every input bit
 *   tfs_pattern_word(k, w)   word w (bytes 8w .. 8w+7, little-endian) of
 *                            the pattern keyed by k
 *   tfs_fnv1a64(s)           FNV-1a of a string: a key from a name
 *
 * Header-only, for the test helpers in tests/integration/ and the unit
 * tests; not part of the product.
 */
#ifndef TFS_TEST_PATTERN_H
#define TFS_TEST_PATTERN_H

#include <stdint.h>

#define TFS_GOLDEN64 0x9e3779b97f4a7c15ull /* 2^64 / phi */

static inline uint64_t tfs_mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint64_t tfs_pattern_word(uint64_t key, uint64_t word)
{
	return tfs_mix64(key + (word + 1) * TFS_GOLDEN64);
}

static inline uint64_t tfs_fnv1a64(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	return h;
}

#endif
