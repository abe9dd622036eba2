/*
 * testrng.h: the random numbers of the unit tests that check a
 * structure against a model by random operations, written once.
 *
 *   tfs_rng_seed(dflt)   start the sequence: from TFS_TEST_SEED=<n> in
 *                        the environment (to replay a failing run), else
 *                        from the test's own default, so a run repeats
 *   tfs_rng()            the next 64-bit number (xorshift64*: a fixed
 *                        sequence per seed, no libc state)
 *   tfs_rng_below(n)     the next number below n (n > 0)
 *
 * One sequence per test program (the state is static).  Header-only,
 * for the unit tests; not part of the product.
 */
#ifndef TFS_TESTRNG_H
#define TFS_TESTRNG_H

#include <stdint.h>
#include <stdlib.h>

static uint64_t tfs_rng_state;

static inline void tfs_rng_seed(uint64_t dflt)
{
	const char *s = getenv("TFS_TEST_SEED");

	tfs_rng_state = s ? strtoull(s, NULL, 0) : dflt;
	if (!tfs_rng_state)
		tfs_rng_state = 1;
}

static inline uint64_t tfs_rng(void)
{
	tfs_rng_state ^= tfs_rng_state >> 12;
	tfs_rng_state ^= tfs_rng_state << 25;
	tfs_rng_state ^= tfs_rng_state >> 27;
	return tfs_rng_state * 0x2545f4914f6cdd1dull;
}

static inline uint64_t tfs_rng_below(uint64_t n)
{
	return tfs_rng() % n;
}

#endif
