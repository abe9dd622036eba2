/*
 * test_units.c: size parsing and formatting (lib/units.c).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "units.h"

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)
#define TiB (UINT64_C(1) << 40)
#define PiB (UINT64_C(1) << 50)

static void parses(const char *s, uint64_t want, int want_suffix)
{
	uint64_t v = 0xdeadbeef;
	int suffix = -1;

	if (tfs_parse_size(s, &v, &suffix) != 0)
		fail_msg("'%s' did not parse", s);
	if (v != want)
		fail_msg("'%s' parsed as %llu, not %llu", s,
			 (unsigned long long)v, (unsigned long long)want);
	assert_int_equal(suffix, want_suffix);
}

static void rejects(const char *s, int want_rc)
{
	uint64_t v = 12345;
	int suffix = 77, rc;

	rc = tfs_parse_size(s, &v, &suffix);
	if (rc != want_rc)
		fail_msg("'%s': got %d, not %d", s, rc, want_rc);
	/* Nothing is written on failure. */
	assert_int_equal(v, 12345);
	assert_int_equal(suffix, 77);
}

static const char *fmt(uint64_t bytes)
{
	static char buf[32];

	return tfs_format_size(bytes, buf, sizeof(buf));
}

/* ===== parsing ===== */

static void test_units_parses_plain_integer(void **state)
{
	(void)state;
	parses("0", 0, 0);
	parses("1", 1, 0);
	parses("4096", 4096, 0);
	parses("007", 7, 0);
	parses("18446744073709551615", UINT64_MAX, 0);
}

static void test_units_parses_deepspeed_exponent(void **state)
{
	(void)state;
	parses("1e8", 100000000, 0);
	parses("5E8", 500000000, 0);
	parses("2.5e9", 2500000000u, 0);
	parses("1e+3", 1000, 0);
	parses("1e0", 1, 0);
	parses("0.5e1", 5, 0);
	parses("1.25e2", 125, 0);
	parses("1000e-3", 1, 0);
	parses("1.8446744073709551615e19", UINT64_MAX, 0);
	parses("0e99", 0, 0);
}

static void test_units_rejects_fractional_result(void **state)
{
	(void)state;
	rejects("1.5e0", -EINVAL);
	rejects("1.5", -EINVAL);
	rejects("0.1", -EINVAL);
	rejects("1e-1", -EINVAL);
	rejects("1500e-3", -EINVAL);
	rejects("2.55e1", -EINVAL);
	rejects("1.0001K", -EINVAL); /* 1024.1024 bytes */
	rejects("0.1K", -EINVAL);    /* 102.4 bytes */
	rejects("1.5B", -EINVAL);
	rejects("1e-99999999999999999999", -EINVAL);
}

static void test_units_accepts_whole_fraction_with_suffix(void **state)
{
	(void)state;
	parses("1.5G", 3 * GiB / 2, 1);
	parses("0.5K", 512, 1);
	parses("0.25KiB", 256, 1);
	parses("2.5MB", 2500000, 1);
	parses("1.5e3K", 1536000, 1);
	parses("0.0009765625K", 1, 1); /* 2^-10 KiB */
	parses("1.50000G", 3 * GiB / 2, 1);
}

static void test_units_binary_suffixes_are_powers_of_1024(void **state)
{
	(void)state;
	parses("1K", KiB, 1);
	parses("1KiB", KiB, 1);
	parses("3M", 3 * MiB, 1);
	parses("3MiB", 3 * MiB, 1);
	parses("2G", 2 * GiB, 1);
	parses("2GiB", 2 * GiB, 1);
	parses("4T", 4 * TiB, 1);
	parses("4TiB", 4 * TiB, 1);
	parses("5P", 5 * PiB, 1);
	parses("5PiB", 5 * PiB, 1);
}

static void test_units_decimal_suffixes_are_powers_of_1000(void **state)
{
	(void)state;
	parses("1KB", 1000, 1);
	parses("3MB", 3000000, 1);
	parses("2GB", 2000000000, 1);
	parses("4TB", UINT64_C(4000000000000), 1);
	parses("5PB", UINT64_C(5000000000000000), 1);
	parses("1e3KB", 1000000, 1);
}

static void test_units_suffixes_are_case_insensitive(void **state)
{
	(void)state;
	parses("1k", KiB, 1);
	parses("1kib", KiB, 1);
	parses("1KIB", KiB, 1);
	parses("1gB", 1000000000, 1);
	parses("1b", 1, 1);
}

static void test_units_bytes_suffix_is_a_suffix(void **state)
{
	uint64_t v;

	(void)state;
	parses("512B", 512, 1);
	parses("512 B", 512, 1);
	/* has_suffix may be NULL. */
	assert_int_equal(tfs_parse_size("2K", &v, NULL), 0);
	assert_int_equal(v, 2048);
}

static void test_units_allows_space_around_number_and_suffix(void **state)
{
	(void)state;
	parses("1 G", GiB, 1);
	parses("1\tKiB", KiB, 1);
	parses(" 64M ", 64 * MiB, 1);
	parses("10 ", 10, 0);
}

static void test_units_rejects_negative(void **state)
{
	(void)state;
	rejects("-1", -EINVAL);
	rejects("-0", -EINVAL);
	rejects("+1", -EINVAL);
	rejects("-1K", -EINVAL);
}

static void test_units_rejects_empty(void **state)
{
	(void)state;
	rejects("", -EINVAL);
	rejects("   ", -EINVAL);
	rejects("K", -EINVAL);
	rejects(".5", -EINVAL);
	rejects("e8", -EINVAL);
}

static void test_units_rejects_trailing_garbage(void **state)
{
	(void)state;
	rejects("1Gx", -EINVAL);
	rejects("12abc", -EINVAL);
	rejects("1 2", -EINVAL);
	rejects("1G B", -EINVAL);
	rejects("1GiBs", -EINVAL);
	rejects("1.", -EINVAL);
	rejects("1.e3", -EINVAL);
	rejects("1e", -EINVAL);
	rejects("1e+", -EINVAL);
	rejects("1 e8", -EINVAL);
	rejects("1E", -EINVAL); /* no exabytes */
	rejects("1EiB", -EINVAL);
	rejects("1X", -EINVAL);
	rejects("1KiBB", -EINVAL);
	rejects("1,5G", -EINVAL);
	rejects("0x10", -EINVAL);
}

static void test_units_overflow_is_erange(void **state)
{
	(void)state;
	rejects("18446744073709551616", -ERANGE);
	rejects("99999999999999999999999", -ERANGE);
	rejects("1e20", -ERANGE);
	rejects("1.8446744073709551616e19", -ERANGE);
	rejects("16384P", -ERANGE);
	rejects("17179869184G", -ERANGE);
	rejects("18446744073709551.616KB", -ERANGE);
	rejects("1e99999999999999999999", -ERANGE);
	/* More digits than any 64-bit size has. */
	rejects(
	    "1000000000000000000000000000000000000000000000000000000000000000000001",
	    -ERANGE);
}

static void test_units_largest_sizes_fit(void **state)
{
	(void)state;
	parses("16383P", 16383 * PiB, 1);
	parses("17179869183G", 17179869183 * GiB, 1);
	parses("18446744073709551.615KB", UINT64_MAX, 1);
	/* Long but exact: 2^-30 PiB = 5^30 / 10^30 PiB = 2^20 bytes... */
	parses("0.000000000931322574615478515625P", MiB, 1);
	/* ...and trailing zeros do not count as digits. */
	parses(
	    "1.0000000000000000000000000000000000000000000000000000000000000000000000G",
	    GiB, 1);
}

/* ===== formatting ===== */

static void test_units_formats_sizes_in_largest_unit(void **state)
{
	(void)state;
	assert_string_equal(fmt(3 * GiB / 2), "1.5 GiB");
	assert_string_equal(fmt(512 * MiB), "512 MiB");
	assert_string_equal(fmt(10 * KiB), "10 KiB");
	assert_string_equal(fmt(GiB), "1 GiB");
	assert_string_equal(fmt(3 * TiB), "3 TiB");
	assert_string_equal(fmt(PiB), "1 PiB");
	assert_string_equal(fmt(UINT64_C(1) << 60), "1 EiB");
}

static void test_units_formats_small_sizes_in_bytes(void **state)
{
	(void)state;
	assert_string_equal(fmt(0), "0 B");
	assert_string_equal(fmt(1), "1 B");
	assert_string_equal(fmt(4096), "4096 B");
	assert_string_equal(fmt(10 * KiB - 1), "10239 B");
}

static void test_units_formats_inexact_sizes_rounded(void **state)
{
	(void)state;
	assert_string_equal(fmt(GiB + GiB / 4), "1.3 GiB");
	assert_string_equal(fmt(GiB + GiB / 4 - 1), "1.2 GiB");
	assert_string_equal(fmt(12345), "12.1 KiB");
	/* Rounding up into the next unit. */
	assert_string_equal(fmt(GiB - 1), "1.0 GiB");
	assert_string_equal(fmt(2 * MiB - 1), "2.0 MiB");
	assert_string_equal(fmt(UINT64_MAX), "16.0 EiB");
}

static void test_units_format_truncates_to_buffer(void **state)
{
	char buf[4] = "xyz";

	(void)state;
	assert_ptr_equal(tfs_format_size(512 * MiB, buf, sizeof(buf)), buf);
	assert_string_equal(buf, "512");
	assert_ptr_equal(tfs_format_size(512 * MiB, buf, 0), buf);
	assert_string_equal(buf, "512");
}

static void test_units_formatted_whole_sizes_parse_back(void **state)
{
	static const uint64_t sizes[] = {
		0, 1, 4096, 10 * KiB, 3 * GiB / 2, 512 * MiB, 7 * TiB, 3 * PiB,
	};
	uint64_t v;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		assert_int_equal(tfs_parse_size(fmt(sizes[i]), &v, NULL), 0);
		assert_int_equal(v, sizes[i]);
	}
}

static void test_units_formats_counts_in_deepspeed_notation(void **state)
{
	static const struct {
		uint64_t v;
		const char *s;
	} cases[] = {
		{ 0, "0" },
		{ 999999, "999999" },
		{ 1000000, "1e6" },
		{ 100000000, "1e8" },
		{ 1500000000, "1.5e9" },
		{ 8750000000ull, "8.75e9" },
		{ 70000000000ull, "7e10" },
		/* four significant digits: as it is */
		{ 1234000000, "1234000000" },
		{ 842301952, "842301952" },
	};
	char buf[32];
	uint64_t back;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_string_equal(
		    tfs_format_count(cases[i].v, buf, sizeof(buf)), cases[i].s);
		assert_int_equal(tfs_parse_size(buf, &back, NULL), 0);
		assert_int_equal(back, cases[i].v);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_units_parses_plain_integer),
		cmocka_unit_test(test_units_parses_deepspeed_exponent),
		cmocka_unit_test(test_units_rejects_fractional_result),
		cmocka_unit_test(test_units_accepts_whole_fraction_with_suffix),
		cmocka_unit_test(test_units_binary_suffixes_are_powers_of_1024),
		cmocka_unit_test(
		    test_units_decimal_suffixes_are_powers_of_1000),
		cmocka_unit_test(test_units_suffixes_are_case_insensitive),
		cmocka_unit_test(test_units_bytes_suffix_is_a_suffix),
		cmocka_unit_test(
		    test_units_allows_space_around_number_and_suffix),
		cmocka_unit_test(test_units_rejects_negative),
		cmocka_unit_test(test_units_rejects_empty),
		cmocka_unit_test(test_units_rejects_trailing_garbage),
		cmocka_unit_test(test_units_overflow_is_erange),
		cmocka_unit_test(test_units_largest_sizes_fit),
		cmocka_unit_test(test_units_formats_sizes_in_largest_unit),
		cmocka_unit_test(test_units_formats_small_sizes_in_bytes),
		cmocka_unit_test(test_units_formats_inexact_sizes_rounded),
		cmocka_unit_test(test_units_format_truncates_to_buffer),
		cmocka_unit_test(test_units_formatted_whole_sizes_parse_back),
		cmocka_unit_test(
		    test_units_formats_counts_in_deepspeed_notation),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
