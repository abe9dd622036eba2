/*
 * test_memcheck.c: whether a cache and pool fit the machine (lib/memcheck.h).
 * Description: fits, too large for MemAvailable or a cgroup's memory.max,
 * pinned over RLIMIT_MEMLOCK, sums that would wrap, the metadata of the
 * file system's files counted with headroom, and this process's own
 * limits read from /proc and getrlimit.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>

#include <cmocka.h>

#include "memcheck.h"
#include "meta.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)

static struct tfs_mem_limits machine(uint64_t avail, uint64_t cgroup,
				     uint64_t memlock)
{
	struct tfs_mem_limits l;

	memset(&l, 0, sizeof(l));
	l.mem_available = avail;
	l.cgroup_free = cgroup;
	l.memlock = memlock;
	return l;
}

static void test_memcheck_fitting_budget_passes(void **state)
{
	struct tfs_mem_limits l = machine(16 * GiB, UINT64_MAX, UINT64_MAX);
	char err[512] = "";

	(void)state;
	assert_int_equal(
	    tfs_mem_check(&l, 2 * GiB, GiB, 0, 0, 64 * MiB, err, sizeof(err)),
	    0);
	/* pinned too, with room under the lock limit */
	l.memlock = 4 * GiB;
	assert_int_equal(
	    tfs_mem_check(&l, 2 * GiB, GiB, 0, 1, 64 * MiB, err, sizeof(err)),
	    0);
}

static void test_memcheck_over_memavailable_names_keys_and_numbers(void **state)
{
	struct tfs_mem_limits l = machine(2 * GiB, UINT64_MAX, UINT64_MAX);
	char err[512] = "";

	(void)state;
	assert_int_equal(
	    tfs_mem_check(&l, 2 * GiB, GiB, 0, 0, 64 * MiB, err, sizeof(err)),
	    -ENOMEM);
	assert_non_null(strstr(err, "max_in_cpu"));
	assert_non_null(strstr(err, "buffer_count"));
	assert_non_null(strstr(err, "MemAvailable"));
	assert_non_null(strstr(err, "2 GiB available"));
	assert_non_null(strstr(err, "memory_check = false"));
}

/* Regression: the pool-too-large message named max_in_cpu and
 * buffer_count but not buffer_size, which was what had been set. */
static void
test_memcheck_config_names_every_key_and_where_it_came_from(void **state)
{
	struct tfs_mem_limits l = machine(2 * GiB, UINT64_MAX, UINT64_MAX);
	struct tfs_config c;
	char err[2048] = "";

	(void)state;
	tfs_config_defaults(&c);
	assert_int_equal(
	    tfs_config_set(&c, "buffer_size", "1e10", err, sizeof(err)), 0);
	assert_int_equal(
	    tfs_mem_check_config(&l, &c, 0, 64 * MiB, err, sizeof(err)),
	    -ENOMEM);
	assert_non_null(strstr(err, "offload_param.max_in_cpu = 1e9 by "
				    "default"));
	assert_non_null(strstr(err, "offload_param.buffer_count = 5 by "
				    "default x offload_param.buffer_size = "
				    "1e10 from -o buffer_size=1e10"));
	assert_non_null(strstr(err, "offload_param.dtype = fp16 by default"));
	assert_non_null(strstr(err, "lower offload_param.buffer_size or "
				    "buffer_count (the pool is the larger "
				    "part)"));
	/* the cache the larger part: max_in_cpu first */
	tfs_config_defaults(&c);
	assert_int_equal(
	    tfs_config_set(&c, "max_in_cpu", "100GiB", err, sizeof(err)), 0);
	assert_int_equal(
	    tfs_mem_check_config(&l, &c, 0, 64 * MiB, err, sizeof(err)),
	    -ENOMEM);
	assert_non_null(strstr(err, "offload_param.max_in_cpu = 100GiB from "
				    "-o max_in_cpu=100GiB"));
	assert_non_null(strstr(err, "lower offload_param.max_in_cpu"));
	/* pinned over the lock limit: pin_memory named too */
	l = machine(64 * GiB, UINT64_MAX, 8 * MiB);
	tfs_config_defaults(&c);
	assert_int_equal(
	    tfs_config_set(&c, "pin_memory", "true", err, sizeof(err)), 0);
	assert_int_equal(
	    tfs_mem_check_config(&l, &c, 0, 64 * MiB, err, sizeof(err)),
	    -EPERM);
	assert_non_null(strstr(err, "offload_param.pin_memory = true from -o "
				    "pin_memory=true"));
	assert_non_null(strstr(err, "offload_param.buffer_size = 1e8 by "
				    "default"));
	/* the numbers-only check names buffer_size as well */
	l = machine(2 * GiB, UINT64_MAX, UINT64_MAX);
	assert_int_equal(
	    tfs_mem_check(&l, GiB, 8 * GiB, 0, 0, 64 * MiB, err, sizeof(err)),
	    -ENOMEM);
	assert_non_null(strstr(err, "lower buffer_size or buffer_count"));
}

static void test_memcheck_cgroup_limit_counts_when_smaller(void **state)
{
	struct tfs_mem_limits l = machine(64 * GiB, GiB, UINT64_MAX);
	char err[512] = "";

	(void)state;
	assert_int_equal(
	    tfs_mem_check(&l, GiB, GiB, 0, 0, 64 * MiB, err, sizeof(err)),
	    -ENOMEM);
	assert_non_null(strstr(err, "cgroup"));
}

static void test_memcheck_pinned_over_memlock_is_eperm(void **state)
{
	struct tfs_mem_limits l = machine(64 * GiB, UINT64_MAX, 8 * MiB);
	char err[512] = "";

	(void)state;
	/* cache and pool are both locked: 4 + 6 MiB > 8 MiB */
	assert_int_equal(tfs_mem_check(&l, 4 * MiB, 6 * MiB, 0, 1, 64 * MiB,
				       err, sizeof(err)),
			 -EPERM);
	assert_non_null(strstr(err, "RLIMIT_MEMLOCK"));
	assert_non_null(strstr(err, "pin_memory"));
	/* not pinned, the lock limit does not matter */
	assert_int_equal(tfs_mem_check(&l, 4 * MiB, 6 * MiB, 0, 0, 64 * MiB,
				       err, sizeof(err)),
			 0);
}

static void test_memcheck_huge_sums_do_not_wrap(void **state)
{
	struct tfs_mem_limits l = machine(64 * GiB, UINT64_MAX, 64 * GiB);
	char err[512] = "";

	(void)state;
	assert_int_equal(tfs_mem_check(&l, UINT64_MAX - 10, 100, 0, 0, 64 * MiB,
				       err, sizeof(err)),
			 -ENOMEM);
	l.mem_available = UINT64_MAX;
	assert_int_equal(
	    tfs_mem_check(&l, UINT64_MAX - 10, 100, 0, 1, 0, err, sizeof(err)),
	    -EPERM);
}

static void test_memcheck_meta_budget_is_files_plus_headroom(void **state)
{
	(void)state;
	/* an empty file system still gets room for TFS_MEM_HEADROOM_FILES */
	assert_int_equal(tfs_mem_meta_bytes(0),
			 (uint64_t)TFS_MEM_HEADROOM_FILES *
			     TFS_META_BYTES_PER_FILE);
	/* a big one a quarter more than it has */
	assert_int_equal(tfs_mem_meta_bytes(1000000),
			 1250000ull * TFS_META_BYTES_PER_FILE);
	assert_int_equal(tfs_mem_meta_bytes(UINT64_MAX), UINT64_MAX);
	assert_int_equal(tfs_mem_meta_bytes(UINT64_MAX / 200), UINT64_MAX);
}

static void test_memcheck_counts_the_files_metadata(void **state)
{
	struct tfs_mem_limits l = machine(4 * GiB, UINT64_MAX, 2 * GiB);
	char err[1024] = "";

	(void)state;
	/* 1 + 1 GiB + 64 MiB fit in 4 GiB, with a million files too ... */
	assert_int_equal(
	    tfs_mem_check(&l, GiB, GiB, 1000000, 0, 64 * MiB, err, sizeof(err)),
	    0);
	/* ... but not with ten million (3.2 GB of metadata at 256 bytes) */
	assert_int_equal(tfs_mem_check(&l, GiB, GiB, 10000000, 0, 64 * MiB, err,
				       sizeof(err)),
			 -ENOMEM);
	assert_non_null(strstr(err, "metadata of 10000000 files"));
	assert_non_null(strstr(err, "max_in_cpu"));
	assert_non_null(strstr(err, "memory_check = false"));
	/* the tree is not pinned: RLIMIT_MEMLOCK holds cache and pool only */
	assert_int_equal(tfs_mem_check(&l, GiB, 512 * MiB, 1000000, 1, 64 * MiB,
				       err, sizeof(err)),
			 0);
}

static void test_memcheck_reads_this_process_limits(void **state)
{
	struct tfs_mem_limits l;
	struct rlimit rl;

	(void)state;
	assert_int_equal(tfs_mem_limits(&l), 0);
	assert_true(l.mem_available > 0);
	assert_true(l.mem_available != UINT64_MAX); /* /proc/meminfo read */
	assert_int_equal(getrlimit(RLIMIT_MEMLOCK, &rl), 0);
	if (rl.rlim_cur == RLIM_INFINITY)
		assert_true(l.memlock == UINT64_MAX);
	else
		assert_true(l.memlock == (uint64_t)rl.rlim_cur);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memcheck_fitting_budget_passes),
		cmocka_unit_test(
		    test_memcheck_over_memavailable_names_keys_and_numbers),
		cmocka_unit_test(
		    test_memcheck_config_names_every_key_and_where_it_came_from),
		cmocka_unit_test(
		    test_memcheck_cgroup_limit_counts_when_smaller),
		cmocka_unit_test(test_memcheck_pinned_over_memlock_is_eperm),
		cmocka_unit_test(test_memcheck_huge_sums_do_not_wrap),
		cmocka_unit_test(
		    test_memcheck_meta_budget_is_files_plus_headroom),
		cmocka_unit_test(test_memcheck_counts_the_files_metadata),
		cmocka_unit_test(test_memcheck_reads_this_process_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
