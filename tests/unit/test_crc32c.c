/*
 * test_crc32c.c: CRC-32C (lib/crc32c.c).
 *
 * The module is compiled into this test (#include "crc32c.c") so that both
 * implementations can be checked against a bit-at-a-time reference, not
 * only the one this machine's CPU selects, and so that the first call, the
 * one that builds the tables, happens inside the concurrency test.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "crc32c.c"

#define CHECK_VALUE 0xe3069283u

/* The definition, one bit at a time. */
static uint32_t ref_crc32c(uint32_t crc, const uint8_t *p, size_t len)
{
	int k;

	crc = ~crc;
	while (len--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = (crc & 1) ? (crc >> 1) ^ 0x82f63b78u : crc >> 1;
	}
	return ~crc;
}

static void fill_random(uint8_t *p, size_t len, uint32_t seed)
{
	while (len--) {
		seed = seed * 1103515245u + 12345u;
		*p++ = (uint8_t)(seed >> 16);
	}
}

static void *crc_check_value(void *arg)
{
	uint32_t *out = arg;

	*out = tfs_crc32c(0, "123456789", 9);
	return NULL;
}

/* Must run first: the tables are built by whichever thread comes first. */
static void test_crc32c_first_use_from_many_threads_is_safe(void **state)
{
	enum {
		N = 8
	};
	pthread_t t[N];
	uint32_t crc[N];
	int i;

	(void)state;
	for (i = 0; i < N; i++)
		assert_int_equal(
		    pthread_create(&t[i], NULL, crc_check_value, &crc[i]), 0);
	for (i = 0; i < N; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(crc[i], CHECK_VALUE);
	}
}

static void test_crc32c_check_value(void **state)
{
	(void)state;
	assert_int_equal(tfs_crc32c(0, "123456789", 9), CHECK_VALUE);
}

/* RFC 3720 (iSCSI), appendix B.4. */
static void test_crc32c_matches_iscsi_test_vectors(void **state)
{
	uint8_t buf[32];
	int i;

	(void)state;
	memset(buf, 0, sizeof(buf));
	assert_int_equal(tfs_crc32c(0, buf, 32), 0x8a9136aau);
	memset(buf, 0xff, sizeof(buf));
	assert_int_equal(tfs_crc32c(0, buf, 32), 0x62a8ab43u);
	for (i = 0; i < 32; i++)
		buf[i] = (uint8_t)i;
	assert_int_equal(tfs_crc32c(0, buf, 32), 0x46dd794eu);
	for (i = 0; i < 32; i++)
		buf[i] = (uint8_t)(31 - i);
	assert_int_equal(tfs_crc32c(0, buf, 32), 0x113fdb5cu);
}

static void test_crc32c_empty_buffer_keeps_crc(void **state)
{
	(void)state;
	assert_int_equal(tfs_crc32c(0, NULL, 0), 0);
	assert_int_equal(tfs_crc32c(CHECK_VALUE, NULL, 0), CHECK_VALUE);
	assert_int_equal(tfs_crc32c(0, "", 0), 0);
}

static void test_crc32c_pieces_equal_whole(void **state)
{
	uint8_t buf[1000];
	uint32_t whole, crc;
	size_t cut, cut2;

	(void)state;
	fill_random(buf, sizeof(buf), 1);
	whole = tfs_crc32c(0, buf, sizeof(buf));
	assert_int_equal(whole, ref_crc32c(0, buf, sizeof(buf)));
	for (cut = 0; cut <= sizeof(buf); cut++) {
		crc = tfs_crc32c(0, buf, cut);
		assert_int_equal(tfs_crc32c(crc, buf + cut, sizeof(buf) - cut),
				 whole);
	}
	for (cut = 0; cut < 40; cut++) {
		for (cut2 = cut; cut2 < 40; cut2++) {
			crc = tfs_crc32c(0, buf, cut);
			crc = tfs_crc32c(crc, buf + cut, cut2 - cut);
			crc = tfs_crc32c(crc, buf + cut2, sizeof(buf) - cut2);
			assert_int_equal(crc, whole);
		}
	}
}

/* Every length around the 8-byte stride, at every alignment. */
static void compare_with_reference(crc32c_fn fn)
{
	uint8_t buf[512 + 8];
	size_t off, len;
	uint32_t seed;

	fill_random(buf, sizeof(buf), 7);
	for (off = 0; off < 8; off++) {
		for (len = 0; len <= 512; len++) {
			seed = (uint32_t)(len * 2654435761u);
			assert_int_equal(~fn(~seed, buf + off, len),
					 ref_crc32c(seed, buf + off, len));
		}
	}
}

static void test_crc32c_software_matches_bitwise_reference(void **state)
{
	(void)state;
	tfs_crc32c(0, NULL, 0); /* build the tables */
	compare_with_reference(crc32c_sw);
}

static void test_crc32c_hardware_matches_bitwise_reference(void **state)
{
	(void)state;
#if TFS_CRC32C_HW
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("sse4.2"))
		skip();
	compare_with_reference(crc32c_hw);
	/* And it is the one tfs_crc32c() uses here. */
	tfs_crc32c(0, NULL, 0);
	assert_true(crc32c_impl == crc32c_hw);
#else
	skip();
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
		    test_crc32c_first_use_from_many_threads_is_safe),
		cmocka_unit_test(test_crc32c_check_value),
		cmocka_unit_test(test_crc32c_matches_iscsi_test_vectors),
		cmocka_unit_test(test_crc32c_empty_buffer_keeps_crc),
		cmocka_unit_test(test_crc32c_pieces_equal_whole),
		cmocka_unit_test(
		    test_crc32c_software_matches_bitwise_reference),
		cmocka_unit_test(
		    test_crc32c_hardware_matches_bitwise_reference),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
