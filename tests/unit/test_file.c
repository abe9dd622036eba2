/*
 * test_file.c: file data (lib/file.c).
 * Description: the data path: unaligned writes, holes, reads at and past
 * EOF, truncate, open with O_TRUNC, fallocate and punch, ENOSPC, an
 * unlinked open file, failed write-backs, and writers racing namespace
 * changes; random writes and truncates checked against a model.
 */

#include "testfs.h"

/* ===== file data ===== */

/* A file and a model of what it must contain. */
struct model {
	uint8_t *b;
	uint64_t size, cap;
};

static void model_write(struct model *m, const uint8_t *buf, size_t len,
			uint64_t off)
{
	assert_true(off + len <= m->cap);
	memcpy(m->b + off, buf, len);
	if (off + len > m->size)
		m->size = off + len;
}

static void model_truncate(struct model *m, uint64_t size)
{
	assert_true(size <= m->cap);
	if (size < m->size)
		memset(m->b + size, 0, m->size - size);
	m->size = size;
}

static void assert_model(struct tfs_fs *fs, uint64_t ino, const struct model *m)
{
	uint8_t *b = malloc(m->size + 1);

	assert_non_null(b);
	assert_int_equal(st_of(fs, ino).st_size, m->size);
	assert_int_equal(tfs_read(fs, ino, b, m->size + 1, 0),
			 (ssize_t)m->size);
	for (uint64_t i = 0; i < m->size; i++)
		if (b[i] != m->b[i])
			fail_msg("byte %llu is %u, should be %u",
				 (unsigned long long)i, b[i], m->b[i]);
	free(b);
}

static void test_fs_write_read_unaligned(void **state)
{
	struct fx *f = *state;
	static const struct {
		uint64_t off;
		size_t len;
	} w[] = {
		{ 0, 1 },
		{ 1, 4094 },
		{ 4095, 2 },
		{ 5000, 10000 },
		{ 3 * 4096 - 7, 2 * 4096 + 14 },
		{ 100000, 1 },
		{ 150000, 50000 },
		{ 8191, 1 },
		{ 4096, 4096 },
		{ 99999, 3 },
		{ 0, 200001 },
	};
	struct model m = { calloc(1, 256 * 1024), 0, 256 * 1024 };
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f");
	uint8_t buf[300000];

	assert_non_null(m.b);
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		fill_pat(buf, w[i].len, w[i].off, (unsigned int)i + 10);
		wr(f->fs, ino, buf, w[i].len, w[i].off);
		model_write(&m, buf, w[i].len, w[i].off);
		assert_model(f->fs, ino, &m);
		/* reads at odd places agree too */
		for (uint64_t o = 1; o < m.size; o += 7777) {
			size_t n =
			    m.size - o < 5000 ? (size_t)(m.size - o) : 5000;

			assert_int_equal(tfs_read(f->fs, ino, buf, 5000, o),
					 (ssize_t)n);
			assert_memory_equal(buf, m.b + o, n);
		}
	}
	reopen(f);
	assert_model(f->fs, ino, &m);
	free(m.b);
}

/* xorshift64*: reproducible random numbers */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

static void test_fs_random_writes_and_truncates_match_a_model(void **state)
{
	struct fx *f = *state;
	struct model m = { calloc(1, 3 * MiB), 0, 3 * MiB };
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f"), seed = 42;
	static uint8_t buf[80000];

	assert_non_null(m.b);
	for (int i = 0; i < 400; i++) {
		uint64_t r = rnd(&seed);

		if (r % 13 == 0) {
			uint64_t size = rnd(&seed) % (2 * MiB);

			assert_int_equal(set_size(f->fs, ino, (off_t)size), 0);
			model_truncate(&m, size);
		} else {
			uint64_t off = rnd(&seed) % (2 * MiB);
			size_t len = 1 + rnd(&seed) % sizeof(buf);

			fill_pat(buf, len, off, (unsigned int)i);
			wr(f->fs, ino, buf, len, off);
			model_write(&m, buf, len, off);
		}
		if (i % 50 == 0)
			assert_model(f->fs, ino, &m);
	}
	assert_model(f->fs, ino, &m);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	assert_model(crash(f), ino, &m);
	reopen(f);
	assert_model(f->fs, ino, &m);
	assert_fsck_clean(f->fs);
	free(m.b);
}

static void test_fs_write_past_eof_leaves_a_zero_hole(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f");
	uint8_t buf[8];
	struct stat st;

	wr(f->fs, ino, "abc", 3, 0);
	wr(f->fs, ino, "xyz", 3, 100000);
	st = st_of(f->fs, ino);
	assert_int_equal(st.st_size, 100003);
	/* only the two blocks written take space */
	assert_int_equal(st.st_blocks, 2 * (4096 / 512));
	assert_int_equal(tfs_read(f->fs, ino, buf, 3, 0), 3);
	assert_memory_equal(buf, "abc", 3);
	assert_zero(f->fs, ino, 100000 - 3, 3);
	assert_int_equal(tfs_read(f->fs, ino, buf, 8, 100000), 3);
	assert_memory_equal(buf, "xyz", 3);
	assert_int_equal(tfs_extent_count(f->fs, ino), 2);
}

static void test_fs_read_at_and_past_eof(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f");
	uint8_t buf[8192];
	struct tfs_read_pin pin;
	size_t got = 0;

	assert_int_equal(tfs_read(f->fs, ino, buf, 10, 0), 0);
	wr_pat(f->fs, ino, 10000, 0, 5);
	assert_int_equal(tfs_read(f->fs, ino, buf, 5000, 9000), 1000);
	assert_int_equal(tfs_read(f->fs, ino, buf, 10, 10000), 0);
	assert_int_equal(tfs_read(f->fs, ino, buf, 10, 1ull << 40), 0);
	assert_int_equal(tfs_read(f->fs, ino, buf, 0, 0), 0);
	/* the zero-copy read hands out the same bytes, cut at the end */
	assert_int_equal(tfs_read_pin(f->fs, ino, 5000, 4000, &pin), 5000);
	fill_pat(buf, 5000, 4000, 5);
	for (int i = 0; i < pin.niov; i++) {
		assert_true(got + pin.iov[i].iov_len <= 5000);
		assert_memory_equal(pin.iov[i].iov_base, buf + got,
				    pin.iov[i].iov_len);
		got += pin.iov[i].iov_len;
	}
	assert_int_equal(got, 5000);
	tfs_read_unpin(f->fs, &pin);
	/* unpinned: the file can be written and truncated again */
	wr_pat(f->fs, ino, 100, 0, 6);
	assert_int_equal(set_size(f->fs, ino, 9500), 0);
	assert_int_equal(tfs_read_pin(f->fs, ino, 100, 10000, &pin), 0);
	tfs_read_unpin(f->fs, &pin);
	assert_int_equal(tfs_read_pin(f->fs, TFS_ROOT_INO, 1, 0, &pin),
			 -EISDIR);
	tfs_read_unpin(f->fs, &pin); /* harmless after a failure */
}

static void test_fs_write_and_read_errors(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f"), fifo;
	uint8_t buf[16] = { 0 };
	struct stat st;

	assert_int_equal(tfs_mknod(f->fs, TFS_ROOT_INO, "fifo", S_IFIFO | 0600,
				   0, 0, 0, &st),
			 0);
	fifo = st.st_ino;
	assert_int_equal(tfs_write(f->fs, TFS_ROOT_INO, buf, 1, 0, NULL),
			 -EISDIR);
	assert_int_equal(tfs_read(f->fs, TFS_ROOT_INO, buf, 1, 0), -EISDIR);
	assert_int_equal(tfs_write(f->fs, fifo, buf, 1, 0, NULL), -EINVAL);
	assert_int_equal(tfs_read(f->fs, fifo, buf, 1, 0), -EINVAL);
	/* past the largest file size, or wrapping around */
	assert_int_equal(tfs_write(f->fs, ino, buf, 16, (1ull << 56) - 8, NULL),
			 -EFBIG);
	assert_int_equal(tfs_write(f->fs, ino, buf, 16, UINT64_MAX - 4, NULL),
			 -EFBIG);
	assert_int_equal(tfs_write(f->fs, ino, buf, 0, 12345, NULL), 0);
	st = st_of(f->fs, ino);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(st.st_blocks, 0);
	/* the last byte below the limit is fine */
	assert_int_equal(tfs_write(f->fs, ino, buf, 1, (1ull << 56) - 1, NULL),
			 1);
	assert_int_equal(st_of(f->fs, ino).st_size, 1ull << 56);
}

static void test_fs_truncate_zeroes_tail(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f");
	uint8_t buf[10000];

	memset(buf, 0xaa, sizeof(buf));
	wr(f->fs, ino, buf, sizeof(buf), 0);
	assert_int_equal(set_size(f->fs, ino, 5000), 0);
	assert_int_equal(st_of(f->fs, ino).st_size, 5000);
	assert_int_equal(st_of(f->fs, ino).st_blocks, 2 * 8);
	/* growing again shows zeros, not the old bytes */
	assert_int_equal(set_size(f->fs, ino, 20000), 0);
	assert_int_equal(st_of(f->fs, ino).st_size, 20000);
	assert_int_equal(tfs_read(f->fs, ino, buf, 5000, 0), 5000);
	for (int i = 0; i < 5000; i++)
		assert_int_equal(buf[i], 0xaa);
	assert_zero(f->fs, ino, 15000, 5000);
	/* to a block boundary and back */
	assert_int_equal(set_size(f->fs, ino, 4096), 0);
	assert_int_equal(st_of(f->fs, ino).st_blocks, 8);
	assert_int_equal(set_size(f->fs, ino, 9000), 0);
	assert_zero(f->fs, ino, 9000 - 4096, 4096);
	reopen(f);
	assert_int_equal(st_of(f->fs, ino).st_size, 9000);
	assert_int_equal(tfs_read(f->fs, ino, buf, 4096, 0), 4096);
	for (int i = 0; i < 4096; i++)
		assert_int_equal(buf[i], 0xaa);
	assert_zero(f->fs, ino, 9000 - 4096, 4096);
	/* truncate to 0 */
	assert_int_equal(set_size(f->fs, ino, 0), 0);
	assert_int_equal(st_of(f->fs, ino).st_blocks, 0);
	assert_int_equal(tfs_extent_count(f->fs, ino), 0);
}

static void test_fs_truncate_then_write_beyond_keeps_zeros(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f");
	uint8_t buf[8192];

	memset(buf, 0xff, sizeof(buf));
	wr(f->fs, ino, buf, sizeof(buf), 0);
	assert_int_equal(set_size(f->fs, ino, 100), 0);
	wr(f->fs, ino, "x", 1, 8000);
	assert_int_equal(st_of(f->fs, ino).st_size, 8001);
	assert_int_equal(tfs_read(f->fs, ino, buf, 100, 0), 100);
	for (int i = 0; i < 100; i++)
		assert_int_equal(buf[i], 0xff);
	assert_zero(f->fs, ino, 8000 - 100, 100);
	assert_int_equal(tfs_read(f->fs, ino, buf, 10, 8000), 1);
	assert_int_equal(buf[0], 'x');
	/* the same through a write in the block of the old end of file */
	assert_int_equal(set_size(f->fs, ino, 50), 0);
	wr(f->fs, ino, "y", 1, 60);
	assert_zero(f->fs, ino, 10, 50);
}

static void test_fs_truncate_frees_blocks(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f");
	uint64_t free0 = bfree(f->fs);

	wr_pat(f->fs, ino, 4 * MiB, 0, 1);
	assert_int_equal(st_of(f->fs, ino).st_blocks, 4 * MiB / 512);
	assert_int_equal(bfree(f->fs), free0 - 1024);
	assert_int_equal(set_size(f->fs, ino, MiB + 1), 0);
	assert_int_equal(st_of(f->fs, ino).st_blocks, (MiB + 4096) / 512);
	assert_int_equal(bfree(f->fs), free0 - 257);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	assert_int_equal(bfree(f->fs), free0 - 257);
	assert_pat(f->fs, ino, MiB + 1, 0, 1);
	reopen(f);
	assert_int_equal(bfree(f->fs), free0 - 257);
}

static void test_fs_open_trunc_and_open_errors(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f");
	uint64_t d = mkd(f->fs, TFS_ROOT_INO, "d");

	wr_pat(f->fs, ino, 10000, 0, 1);
	/* read-only opens never truncate */
	assert_int_equal(tfs_open(f->fs, ino, O_RDONLY | O_TRUNC), 0);
	assert_int_equal(st_of(f->fs, ino).st_size, 10000);
	assert_int_equal(tfs_release(f->fs, ino), 0);
	assert_int_equal(tfs_open(f->fs, ino, O_WRONLY | O_TRUNC), 0);
	assert_int_equal(st_of(f->fs, ino).st_size, 0);
	assert_int_equal(st_of(f->fs, ino).st_blocks, 0);
	assert_int_equal(tfs_release(f->fs, ino), 0);
	wr_pat(f->fs, ino, 100, 0, 1);
	assert_int_equal(tfs_open(f->fs, ino, O_RDWR), 0);
	assert_int_equal(st_of(f->fs, ino).st_size, 100);
	assert_int_equal(tfs_release(f->fs, ino), 0);
	/* directories open read-only only */
	assert_int_equal(tfs_open(f->fs, d, O_WRONLY), -EISDIR);
	assert_int_equal(tfs_open(f->fs, d, O_RDWR), -EISDIR);
	assert_int_equal(tfs_open(f->fs, d, O_RDONLY), 0);
	assert_int_equal(tfs_release(f->fs, d), 0);
	assert_int_equal(tfs_opendir(f->fs, d), 0);
	assert_int_equal(tfs_opendir(f->fs, ino), -ENOTDIR);
	/* a release without an open is harmless */
	assert_int_equal(tfs_release(f->fs, ino), 0);
	assert_int_equal(st_of(f->fs, ino).st_size, 100);
}

static void test_fs_unlink_open_file_keeps_data_until_release(void **state)
{
	struct fx *f = *state;
	uint64_t free0 = bfree(f->fs), ino = mk(f->fs, TFS_ROOT_INO, "f");
	struct stat st;

	wr_pat(f->fs, ino, 100000, 0, 4);
	assert_int_equal(tfs_open(f->fs, ino, O_RDWR), 0);
	assert_int_equal(tfs_open(f->fs, ino, O_RDONLY), 0); /* twice */
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "f"), 0);
	assert_int_equal(tfs_lookup(f->fs, TFS_ROOT_INO, "f", &st), -ENOENT);
	st = st_of(f->fs, ino);
	assert_int_equal(st.st_nlink, 0);
	assert_int_equal(st.st_size, 100000);
	assert_pat(f->fs, ino, 100000, 0, 4);
	/* it can still be written, truncated and synced */
	wr_pat(f->fs, ino, 50000, 100000, 4);
	assert_pat(f->fs, ino, 150000, 0, 4);
	assert_int_equal(set_size(f->fs, ino, 120000), 0);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	assert_pat(f->fs, ino, 120000, 0, 4);
	/* a new file of the same name is another file */
	assert_true(mk(f->fs, TFS_ROOT_INO, "f") != ino);
	assert_int_equal(tfs_release(f->fs, ino), 0);
	assert_int_equal(st_of(f->fs, ino).st_nlink, 0);
	assert_pat(f->fs, ino, 120000, 0, 4);
	assert_int_equal(tfs_release(f->fs, ino), 0);
	/* the last release frees it */
	assert_int_equal(tfs_getattr(f->fs, ino, &st), -ENOENT);
	assert_int_equal(tfs_read(f->fs, ino, &st, 1, 0), -ENOENT);
	assert_int_equal(bfree(f->fs), free0);
	reopen(f);
	assert_int_equal(bfree(f->fs), free0);
	assert_int_equal(tfs_getattr(f->fs, ino, &st), -ENOENT);
	assert_fsck_clean(f->fs);
}

/* ===== ENOSPC ===== */

/* Write 1 MiB pieces to a new file until the device is full. */
static uint64_t fill_device(struct tfs_fs *fs, const char *name, uint64_t *ino)
{
	static uint8_t buf[MiB];
	uint64_t n = 0;
	ssize_t rc;

	*ino = mk(fs, TFS_ROOT_INO, name);
	memset(buf, 0x3c, sizeof(buf));
	while ((rc = tfs_write(fs, *ino, buf, sizeof(buf), n * MiB, NULL)) ==
	       (ssize_t)sizeof(buf))
		n++;
	assert_int_equal(rc, -ENOSPC);
	return n;
}

static void test_fs_enospc_then_free_then_write_again(void **state)
{
	struct fx *f = *state;
	uint64_t free0 = bfree(f->fs), big, again, n, n2;
	static uint8_t buf[MiB];
	struct stat st;

	n = fill_device(f->fs, "big", &big);
	assert_true(n >= 40);
	/* a failed write changes nothing: no short write, no size change */
	st = st_of(f->fs, big);
	assert_int_equal(st.st_size, n * MiB);
	assert_int_equal(st.st_blocks, n * MiB / 512);
	assert_true(bavail(f->fs) < 256);
	assert_int_equal(tfs_fallocate(f->fs, big, 0, n * MiB, MiB), -ENOSPC);
	assert_int_equal(st_of(f->fs, big).st_size, n * MiB);
	/* the last blocks can still be used by a write that fits; those
	 * the next checkpoint needs cannot (J10) */
	if (bavail(f->fs)) {
		uint64_t left = bavail(f->fs);

		wr_pat(f->fs, big, (size_t)left * 4096, n * MiB, 7);
		assert_int_equal(bavail(f->fs), 0);
		assert_true(bfree(f->fs) > 0);
		assert_int_equal(tfs_write(f->fs, big, buf, 1,
					   (n * MiB) + left * 4096, NULL),
				 -ENOSPC);
		assert_pat(f->fs, big, (size_t)left * 4096, n * MiB, 7);
	}
	/* free it (uncommitted): the next write must find the space */
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "big"), 0);
	assert_int_equal(bfree(f->fs), free0);
	again = mk(f->fs, TFS_ROOT_INO, "again");
	memset(buf, 0x11, sizeof(buf));
	assert_int_equal(tfs_write(f->fs, again, buf, sizeof(buf), 0, NULL),
			 (ssize_t)sizeof(buf));
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "again"), 0);
	n2 = fill_device(f->fs, "big2", &big);
	assert_int_equal(n2, n);
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "big2"), 0);
	reopen(f);
	assert_int_equal(bfree(f->fs), free0);
	assert_fsck_clean(f->fs);
}

/* ===== fallocate ===== */

static void test_fs_fallocate_unwritten_reads_zero(void **state)
{
	struct fx *f = *state;
	uint64_t old = mk(f->fs, TFS_ROOT_INO, "old"), ino;
	struct stat st;
	char *want;

	/* garbage in free blocks: the new file must not show it */
	wr_pat(f->fs, old, 4 * MiB, 0, 1);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "old"), 0);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	ino = mk(f->fs, TFS_ROOT_INO, "new");
	assert_int_equal(tfs_fallocate(f->fs, ino, 0, 0, 4 * MiB), 0);
	st = st_of(f->fs, ino);
	assert_int_equal(st.st_size, 4 * MiB);
	assert_int_equal(st.st_blocks, 4 * MiB / 512);
	assert_zero(f->fs, ino, 4 * MiB, 0);
	/* a write in the middle: the rest of its block and of the file
	 * still read as zeros */
	wr(f->fs, ino, "hello", 5, 5000);
	assert_zero(f->fs, ino, 5000, 0);
	assert_zero(f->fs, ino, 4 * MiB - 5005, 5005);
	/* once written back, its block alone is written */
	assert_int_equal(tfs_fsync(f->fs, ino, 0, NULL), 0);
	assert_int_equal(tfs_extent_count(f->fs, ino), 3);
	assert_int_equal(st_of(f->fs, ino).st_blocks, 4 * MiB / 512);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	want = snapshot(f->fs);
	assert_same_tree(crash(f), want);
	reopen(f);
	assert_same_tree(f->fs, want);
	assert_zero(f->fs, ino, 4 * MiB - 5005, 5005);
	free(want);
	assert_fsck_clean(f->fs);
}

static void test_fs_fallocate_keep_size_and_existing_data(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f");
	uint8_t buf[256];
	struct stat st;

	wr_pat(f->fs, ino, 100, 0, 1);
	assert_int_equal(tfs_fallocate(f->fs, ino, FALLOC_FL_KEEP_SIZE, 0, MiB),
			 0);
	st = st_of(f->fs, ino);
	assert_int_equal(st.st_size, 100);
	assert_int_equal(st.st_blocks, MiB / 512);
	assert_int_equal(tfs_read(f->fs, ino, buf, sizeof(buf), 0), 100);
	assert_pat(f->fs, ino, 100, 0, 1);
	/* growing into the preallocation shows zeros */
	assert_int_equal(set_size(f->fs, ino, 500000), 0);
	assert_pat(f->fs, ino, 100, 0, 1);
	assert_zero(f->fs, ino, 500000 - 100, 100);
	assert_int_equal(st_of(f->fs, ino).st_blocks, MiB / 512);
	/* allocating over data keeps the data */
	assert_int_equal(tfs_fallocate(f->fs, ino, 0, 0, 2 * MiB), 0);
	assert_int_equal(st_of(f->fs, ino).st_size, 2 * MiB);
	assert_pat(f->fs, ino, 100, 0, 1);
	assert_zero(f->fs, ino, 2 * MiB - 100, 100);
	/* an unaligned range covers every block it touches */
	assert_int_equal(
	    tfs_fallocate(f->fs, ino, FALLOC_FL_KEEP_SIZE, 3 * MiB - 1, 2), 0);
	assert_int_equal(st_of(f->fs, ino).st_blocks, (2 * MiB + 8192) / 512);
	reopen(f);
	assert_int_equal(st_of(f->fs, ino).st_size, 2 * MiB);
	assert_int_equal(st_of(f->fs, ino).st_blocks, (2 * MiB + 8192) / 512);
	assert_pat(f->fs, ino, 100, 0, 1);
}

static void test_fs_fallocate_errors(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f"), fifo;
	struct stat st;

	assert_int_equal(
	    tfs_mknod(f->fs, TFS_ROOT_INO, "p", S_IFIFO | 0600, 0, 0, 0, &st),
	    0);
	fifo = st.st_ino;
	assert_int_equal(tfs_fallocate(f->fs, ino, 0, 0, 0), -EINVAL);
	assert_int_equal(
	    tfs_fallocate(f->fs, ino, FALLOC_FL_COLLAPSE_RANGE, 0, 4096),
	    -EOPNOTSUPP);
	assert_int_equal(
	    tfs_fallocate(f->fs, ino, FALLOC_FL_ZERO_RANGE, 0, 4096),
	    -EOPNOTSUPP);
	assert_int_equal(
	    tfs_fallocate(f->fs, ino, FALLOC_FL_INSERT_RANGE, 0, 4096),
	    -EOPNOTSUPP);
	assert_int_equal(
	    tfs_fallocate(f->fs, ino, FALLOC_FL_PUNCH_HOLE, 0, 4096),
	    -EOPNOTSUPP);
	assert_int_equal(tfs_fallocate(f->fs, TFS_ROOT_INO, 0, 0, 4096),
			 -EISDIR);
	assert_int_equal(tfs_fallocate(f->fs, fifo, 0, 0, 4096), -ENODEV);
	assert_int_equal(tfs_fallocate(f->fs, ino, 0, UINT64_MAX - 10, 100),
			 -EFBIG);
	assert_int_equal(tfs_fallocate(f->fs, ino, 0, 1ull << 56, 1), -EFBIG);
	st = st_of(f->fs, ino);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(st.st_blocks, 0);
}

static void test_fs_punch_hole(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f");
	const int mode = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
	uint64_t free0;
	char *want;

	wr_pat(f->fs, ino, 65536, 0, 3);
	free0 = bfree(f->fs);
	assert_int_equal(st_of(f->fs, ino).st_blocks, 128);
	/* [5000, 25000): whole blocks 2..5 go, the edges are zeroed */
	assert_int_equal(tfs_fallocate(f->fs, ino, mode, 5000, 20000), 0);
	assert_int_equal(st_of(f->fs, ino).st_size, 65536);
	assert_int_equal(st_of(f->fs, ino).st_blocks, 128 - 4 * 8);
	assert_int_equal(bfree(f->fs), free0 + 4);
	assert_pat(f->fs, ino, 5000, 0, 3);
	assert_zero(f->fs, ino, 20000, 5000);
	assert_pat(f->fs, ino, 65536 - 25000, 25000, 3);
	/* inside one block */
	assert_int_equal(tfs_fallocate(f->fs, ino, mode, 30000, 10), 0);
	assert_zero(f->fs, ino, 10, 30000);
	assert_pat(f->fs, ino, 30000 - 25000, 25000, 3);
	assert_pat(f->fs, ino, 65536 - 30010, 30010, 3);
	assert_int_equal(st_of(f->fs, ino).st_blocks, 128 - 4 * 8);
	/* reaching past the end of file: size stays */
	assert_int_equal(tfs_fallocate(f->fs, ino, mode, 60000, 100000), 0);
	assert_int_equal(st_of(f->fs, ino).st_size, 65536);
	assert_zero(f->fs, ino, 65536 - 60000, 60000);
	assert_int_equal(st_of(f->fs, ino).st_blocks, 128 - 5 * 8);
	/* entirely past it: nothing to do */
	assert_int_equal(tfs_fallocate(f->fs, ino, mode, MiB, 4096), 0);
	/* the hole can be written again */
	wr(f->fs, ino, "new", 3, 10000);
	assert_zero(f->fs, ino, 10000 - 5000, 5000);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	want = snapshot(f->fs);
	assert_same_tree(crash(f), want);
	reopen(f);
	assert_same_tree(f->fs, want);
	free(want);
	assert_fsck_clean(f->fs);
}

static void test_fs_punch_hole_in_unwritten_extent(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f"), free0;
	const int mode = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;

	free0 = bfree(f->fs);
	assert_int_equal(tfs_fallocate(f->fs, ino, 0, 0, MiB), 0);
	assert_int_equal(tfs_fallocate(f->fs, ino, mode, 4096, 8192), 0);
	assert_int_equal(bfree(f->fs), free0 - 254);
	assert_int_equal(tfs_extent_count(f->fs, ino), 2);
	assert_zero(f->fs, ino, MiB, 0);
	reopen(f);
	assert_int_equal(tfs_extent_count(f->fs, ino), 2);
	assert_zero(f->fs, ino, MiB, 0);
}

/* ===== SEEK_DATA and SEEK_HOLE ===== */

/* tfs_seek()'s answer, or its -errno as a negative value */
static int64_t seek(struct tfs_fs *fs, uint64_t ino, uint64_t off, int hole)
{
	uint64_t pos = UINT64_MAX;
	int rc = tfs_seek(fs, ino, off, hole, &pos);

	if (rc)
		return rc;
	assert_true(pos < INT64_MAX);
	return (int64_t)pos;
}

static void test_fs_seek_data_and_hole(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f");
	uint64_t full = mk(f->fs, TFS_ROOT_INO, "e");
	const int punch = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;

	/* data in blocks 0-1 and 5, a hole in 2-4 and one past block 5 to
	 * the end of the file (size 40000: blocks 0-9) */
	wr_pat(f->fs, ino, 8192, 0, 1);
	wr_pat(f->fs, ino, 100, 5 * 4096 + 7, 2);
	assert_int_equal(set_size(f->fs, ino, 40000), 0);
	assert_int_equal(seek(f->fs, ino, 0, 0), 0);
	assert_int_equal(seek(f->fs, ino, 100, 0), 100);
	assert_int_equal(seek(f->fs, ino, 0, 1), 8192);
	assert_int_equal(seek(f->fs, ino, 8191, 1), 8192);
	assert_int_equal(seek(f->fs, ino, 8192, 1), 8192);
	assert_int_equal(seek(f->fs, ino, 9000, 1), 9000);
	assert_int_equal(seek(f->fs, ino, 8192, 0), 5 * 4096);
	assert_int_equal(seek(f->fs, ino, 5 * 4096 + 50, 0), 5 * 4096 + 50);
	assert_int_equal(seek(f->fs, ino, 5 * 4096, 1), 6 * 4096);
	/* the trailing hole: no data after block 5, the hole to the end */
	assert_int_equal(seek(f->fs, ino, 6 * 4096, 0), -ENXIO);
	assert_int_equal(seek(f->fs, ino, 6 * 4096, 1), 6 * 4096);
	assert_int_equal(seek(f->fs, ino, 39999, 1), 39999);
	/* at and past the end */
	assert_int_equal(seek(f->fs, ino, 40000, 0), -ENXIO);
	assert_int_equal(seek(f->fs, ino, 40000, 1), -ENXIO);
	assert_int_equal(seek(f->fs, ino, UINT64_MAX, 1), -ENXIO);
	assert_int_equal(seek(f->fs, full, 0, 0), -ENXIO); /* empty */
	assert_int_equal(seek(f->fs, full, 0, 1), -ENXIO);
	/* a file with no hole: the end of the file is the hole */
	wr_pat(f->fs, full, 10000, 0, 3);
	assert_int_equal(seek(f->fs, full, 0, 1), 10000);
	assert_int_equal(seek(f->fs, full, 9999, 0), 9999);
	/* fallocated blocks are data (they read as zeros); punching makes
	 * a hole of whole blocks only */
	assert_int_equal(
	    tfs_fallocate(f->fs, ino, FALLOC_FL_KEEP_SIZE, 3 * 4096, 4096), 0);
	assert_int_equal(seek(f->fs, ino, 8192, 0), 3 * 4096);
	assert_int_equal(seek(f->fs, ino, 3 * 4096, 1), 4 * 4096);
	assert_int_equal(tfs_fallocate(f->fs, ino, punch, 100, 5000), 0);
	assert_int_equal(seek(f->fs, ino, 0, 1), 8192); /* block 0 kept */
	assert_int_equal(tfs_fallocate(f->fs, ino, punch, 0, 8192), 0);
	assert_int_equal(seek(f->fs, ino, 0, 1), 0);
	assert_int_equal(seek(f->fs, ino, 0, 0), 3 * 4096);
	/* data still in the pool counts: a write places its blocks first */
	wr(f->fs, ino, "x", 1, 9 * 4096);
	assert_int_equal(seek(f->fs, ino, 6 * 4096, 0), 9 * 4096);
	assert_int_equal(seek(f->fs, ino, 9 * 4096, 1), 40000);
	/* the same after a remount, from the map on the device */
	reopen(f);
	assert_int_equal(seek(f->fs, ino, 0, 0), 3 * 4096);
	assert_int_equal(seek(f->fs, ino, 6 * 4096, 0), 9 * 4096);
	assert_int_equal(seek(f->fs, ino, 3 * 4096, 1), 4 * 4096);
	/* what is not a regular file */
	assert_int_equal(seek(f->fs, TFS_ROOT_INO, 0, 0), -EISDIR);
	assert_int_equal(seek(f->fs, 987654, 0, 0), -ENOENT);
}

/* ===== copy_file_range ===== */

/* Bytes [aoff, aoff + len) of a are bytes [boff, boff + len) of b. */
static void assert_same(struct tfs_fs *fs, uint64_t a, uint64_t aoff,
			uint64_t b, uint64_t boff, size_t len)
{
	uint8_t *x = malloc(len), *y = malloc(len);

	assert_non_null(x);
	assert_non_null(y);
	assert_int_equal(tfs_read(fs, a, x, len, aoff), (ssize_t)len);
	assert_int_equal(tfs_read(fs, b, y, len, boff), (ssize_t)len);
	assert_memory_equal(x, y, len);
	free(x);
	free(y);
}

static uint64_t copied(struct tfs_fs *fs)
{
	struct tfs_fs_stats s;

	tfs_fs_get_stats(fs, &s);
	return s.copy_bytes;
}

static uint64_t cloned(struct tfs_fs *fs)
{
	struct tfs_fs_stats s;

	tfs_fs_get_stats(fs, &s);
	return s.clone_bytes;
}

static void test_fs_copy_range(void **state)
{
	struct fx *f = *state;
	uint64_t src = mk(f->fs, TFS_ROOT_INO, "src");
	uint64_t dst = mk(f->fs, TFS_ROOT_INO, "dst");
	uint64_t c0, k0;

	wr_pat(f->fs, src, 3 * MiB + 123, 0, 7);
	c0 = copied(f->fs);
	/* unaligned, in several pieces, to an offset of an empty file */
	assert_int_equal(
	    tfs_copy_range(f->fs, src, 1000, dst, 5000, 2 * MiB + 77, NULL),
	    2 * MiB + 77);
	assert_int_equal(st_of(f->fs, dst).st_size, 5000 + 2 * MiB + 77);
	assert_zero(f->fs, dst, 5000, 0);
	assert_same(f->fs, src, 1000, dst, 5000, 2 * MiB + 77);
	assert_int_equal(copied(f->fs) - c0, 2 * MiB + 77);
	/* up to the source's end, then nothing */
	assert_int_equal(tfs_copy_range(f->fs, src, 3 * MiB, dst, 0, MiB, NULL),
			 123);
	assert_same(f->fs, src, 3 * MiB, dst, 0, 123);
	assert_int_equal(
	    tfs_copy_range(f->fs, src, 3 * MiB + 123, dst, 0, 10, NULL), 0);
	assert_int_equal(
	    tfs_copy_range(f->fs, src, 1ull << 40, dst, 0, 10, NULL), 0);
	assert_int_equal(tfs_copy_range(f->fs, src, 0, dst, 0, 0, NULL), 0);
	/* within one file, the ranges apart */
	assert_int_equal(
	    tfs_copy_range(f->fs, src, 4096, src, 4 * MiB, 9000, NULL), 9000);
	assert_same(f->fs, src, 4096, src, 4 * MiB, 9000);
	assert_int_equal(st_of(f->fs, src).st_size, 4 * MiB + 9000);
	/* at most TFS_COPY_MAX a call where the blocks do not line up:
	 * holes copy as zeros */
	assert_int_equal(set_size(f->fs, src, 100 * MiB), 0);
	assert_int_equal(tfs_copy_range(f->fs, src, 1, dst, 0, 100 * MiB, NULL),
			 TFS_COPY_MAX);
	assert_same(f->fs, src, 1, dst, 0, 5 * MiB);
	assert_zero(f->fs, dst, TFS_COPY_MAX - 5 * MiB, 5 * MiB);
	assert_int_equal(st_of(f->fs, dst).st_size, TFS_COPY_MAX);
	/* where they do, the whole blocks are shared, the rest copied */
	c0 = copied(f->fs);
	k0 = cloned(f->fs);
	assert_int_equal(
	    tfs_copy_range(f->fs, src, 100, dst, 100, 100 * MiB, NULL),
	    100 * MiB - 100);
	assert_int_equal(copied(f->fs) - c0, 4096 - 100);
	assert_int_equal(cloned(f->fs) - k0, 100 * MiB - 4096);
	assert_same(f->fs, src, 100, dst, 100, 5 * MiB);
	assert_zero(f->fs, dst, 50 * MiB, 50 * MiB);
	assert_int_equal(st_of(f->fs, dst).st_size, 100 * MiB);
	/* what a read or a write refuses */
	assert_int_equal(
	    tfs_copy_range(f->fs, TFS_ROOT_INO, 0, dst, 0, 10, NULL), -EISDIR);
	assert_int_equal(
	    tfs_copy_range(f->fs, src, 0, TFS_ROOT_INO, 0, 10, NULL), -EISDIR);
	assert_int_equal(
	    tfs_copy_range(f->fs, src, 0, dst, UINT64_MAX - 4, 10, NULL),
	    -EFBIG);
	reopen(f);
	assert_same(f->fs, src, 100, dst, 100, 5 * MiB);
	assert_int_equal(copied(f->fs), 0); /* counted since the mount */
	assert_fsck_clean(f->fs);
}

/*
 * Copy-on-write keeps what a write leaves of a shared block, whichever
 * end of the block the write covers, and the other file never changes.
 * The device's free blocks hold old data first, so a block given to the
 * writer without its old bytes copied shows.
 */
static void test_fs_clone_write_keeps_bytes_of_shared_blocks(void **state)
{
	static const struct {
		uint64_t off, len;
	} w[] = {
		{ 1 * 4096, 100 },	       /* starts a block, ends inside */
		{ 3 * 4096 - 100, 100 },       /* starts inside, ends a block */
		{ 5 * 4096 + 10, 20 },	       /* inside one */
		{ 7 * 4096 - 50, 4096 + 100 }, /* partial, whole, partial */
		{ 10 * 4096, 4096 },	       /* one whole block */
		{ 12 * 4096, 2 * 4096 + 7 },   /* whole blocks, then a part */
		{ 16 * 4096 - 3, 3 },	       /* the last bytes of the file */
	};
	struct fx *f = *state;
	uint64_t junk = mk(f->fs, TFS_ROOT_INO, "junk");
	uint64_t src = mk(f->fs, TFS_ROOT_INO, "src");
	uint64_t dst = mk(f->fs, TFS_ROOT_INO, "dst");
	struct model m = { calloc(1, 16 * 4096), 0, 16 * 4096 };
	uint8_t *orig = malloc(16 * 4096), buf[3 * 4096];

	assert_non_null(m.b);
	assert_non_null(orig);
	wr_pat(f->fs, junk, 4 * MiB, 0, 9);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "junk"), 0);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	wr_pat(f->fs, src, 16 * 4096, 0, 1);
	assert_int_equal(tfs_read(f->fs, src, orig, 16 * 4096, 0), 16 * 4096);
	model_write(&m, orig, 16 * 4096, 0);
	assert_int_equal(tfs_copy_range(f->fs, src, 0, dst, 0, 16 * 4096, NULL),
			 16 * 4096);
	assert_int_equal(cloned(f->fs), 16 * 4096);
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		fill_pat(buf, w[i].len, w[i].off, 2);
		assert_int_equal(
		    tfs_write(f->fs, dst, buf, w[i].len, w[i].off, NULL),
		    (ssize_t)w[i].len);
		model_write(&m, buf, w[i].len, w[i].off);
		assert_model(f->fs, dst, &m);
	}
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	reopen(f);
	assert_model(f->fs, dst, &m);
	m.size = 0;
	model_write(&m, orig, 16 * 4096, 0);
	assert_model(f->fs, src, &m);
	assert_fsck_clean(f->fs);
	free(orig);
	free(m.b);
}

/* ===== I/O errors ===== */

static void test_fs_write_back_error_reaches_fsync_and_next_write(void **state)
{
	struct fx *f = *state;
	struct tfs_super sb = { 0 };
	uint64_t ino, old;
	int copy = 0;

	old = mk(f->fs, TFS_ROOT_INO, "old");
	wr_pat(f->fs, old, 8192, 0, 1);
	assert_int_equal(tfs_fs_close(f->fs), 0);
	f->fs = NULL;
	assert_int_equal(img_super(f->path, &sb, &copy), 0);
	assert_int_equal(
	    tfs_fs_open(f->path, NULL, &f->fs, f->err, sizeof(f->err)), 0);
	/* the data area fails; the journal (below it) is fine, the
	 * checkpoints (in the data area, J10) are not */
	reopen_failing_from(f, sb.data_start * TFS_BLOCK_SIZE);
	ino = mk(f->fs, TFS_ROOT_INO, "f");
	/* the write is taken into the pool; its write-back fails, and
	 * fsync says so, once */
	assert_int_equal(tfs_write(f->fs, ino, "abc", 3, 0, NULL), 3);
	assert_int_equal(st_of(f->fs, ino).st_size, 3);
	assert_int_equal(tfs_fsync(f->fs, ino, 0, NULL), -EIO);
	assert_int_equal(tfs_fsync(f->fs, ino, 0, NULL), 0);
	/* what never reached the device is not shown: zeros */
	assert_zero(f->fs, ino, 3, 0);
	/* an overwrite that fails to reach the device: the next write
	 * reports it, and the old data stays */
	assert_int_equal(tfs_write(f->fs, old, "xyz", 3, 8192, NULL), 3);
	tfs_fs_sync(f->fs);
	assert_int_equal(tfs_write(f->fs, old, "xyz", 3, 0, NULL), -EIO);
	assert_int_equal(tfs_flush(f->fs, old, NULL), 0);
	assert_pat(f->fs, old, 8192, 0, 1);
	/* a close reports it too */
	assert_int_equal(tfs_write(f->fs, ino, "abc", 3, 0, NULL), 3);
	tfs_fs_sync(f->fs);
	assert_int_equal(tfs_flush(f->fs, ino, NULL), -EIO);
	/* the final checkpoint cannot be written: close says so (J7: a
	 * failed checkpoint write is not the error state), and the journal
	 * holds everything committed */
	assert_int_equal(tfs_fs_close(f->fs), -EIO);
	f->fs = NULL;
	assert_int_equal(
	    tfs_fs_open(f->path, NULL, &f->fs, f->err, sizeof(f->err)), 0);
	assert_true(tfs_fs_replayed(f->fs) > 0);
	/* without faults it all works again */
	wr(f->fs, ino, "abc", 3, 0);
	assert_int_equal(tfs_fsync(f->fs, ino, 0, NULL), 0);
	assert_pat(f->fs, old, 8192, 0, 1);
	assert_fsck_clean(f->fs);
}

/*
 * Every open file hears of a failed write-back once (Linux's errseq):
 * two writers of one file both see it at fsync, not just the first to
 * ask; a file opened after it was heard does not; a failure nobody has
 * heard is told to the next file opened, and to a caller with no open
 * file (NULL) only then.
 */
static void test_fs_write_back_error_reaches_every_open_file(void **state)
{
	struct fx *f = *state;
	struct tfs_super sb = { 0 };
	uint32_t a, b, c, d;
	uint64_t ino;
	int copy = 0;

	assert_int_equal(img_super(f->path, &sb, &copy), 0);
	reopen_failing_from(f, sb.data_start * TFS_BLOCK_SIZE);
	ino = mk(f->fs, TFS_ROOT_INO, "f");
	a = tfs_wb_sample(f->fs, ino);
	b = tfs_wb_sample(f->fs, ino);
	assert_int_equal(tfs_write(f->fs, ino, "abc", 3, 0, &a), 3);
	assert_int_equal(tfs_write(f->fs, ino, "def", 3, 4096, &b), 3);
	/* a's fsync writes both back; both fail */
	assert_int_equal(tfs_fsync(f->fs, ino, 0, &a), -EIO);
	assert_int_equal(tfs_fsync(f->fs, ino, 0, &a), 0);
	/* opened after a heard it: nothing to hear; NULL neither */
	c = tfs_wb_sample(f->fs, ino);
	assert_int_equal(tfs_fsync(f->fs, ino, 0, &c), 0);
	assert_int_equal(tfs_fsync(f->fs, ino, 0, NULL), 0);
	/* b was open when it failed: it hears, at a write or a close too */
	assert_int_equal(tfs_flush(f->fs, ino, &b), -EIO);
	assert_int_equal(tfs_write(f->fs, ino, "g", 1, 0, &b), 1);
	/* that write fails too, while nobody asks: the next open hears */
	tfs_fs_sync(f->fs);
	d = tfs_wb_sample(f->fs, ino);
	assert_int_equal(tfs_fsync(f->fs, ino, 0, &d), -EIO);
	assert_int_equal(tfs_fsync(f->fs, ino, 0, &d), 0);
	/* and a, b and c, open all along, each once */
	assert_int_equal(tfs_write(f->fs, ino, "h", 1, 0, &a), -EIO);
	assert_int_equal(tfs_fsync(f->fs, ino, 0, &b), -EIO);
	assert_int_equal(tfs_flush(f->fs, ino, &c), -EIO);
	assert_int_equal(tfs_fsync(f->fs, ino, 0, &a), 0);
	assert_int_equal(tfs_fsync(f->fs, ino, 0, &b), 0);
	assert_int_equal(tfs_fsync(f->fs, ino, 0, &c), 0);
	/* d heard it first, so NULL and a new open do not */
	assert_int_equal(tfs_fsync(f->fs, ino, 0, NULL), 0);
	c = tfs_wb_sample(f->fs, ino);
	assert_int_equal(tfs_flush(f->fs, ino, &c), 0);
	/* unheard by any open file: NULL hears it, once */
	assert_int_equal(tfs_write(f->fs, ino, "i", 1, 0, NULL), 1);
	tfs_fs_sync(f->fs);
	assert_int_equal(tfs_fsync(f->fs, ino, 0, NULL), -EIO);
	assert_int_equal(tfs_fsync(f->fs, ino, 0, NULL), 0);
	assert_int_equal(tfs_fs_close(f->fs), -EIO); /* its checkpoint */
	f->fs = NULL;
}

/*
 * Stale marks (tfs_mark_stale(), tfs_take_stale()): a mark is taken
 * once; writes, reads and a clean write-back leave none; a failed
 * write-back leaves one (its data may sit in the caller's cache); an
 * unknown inode has none.
 */
static void test_fs_stale_marks(void **state)
{
	struct fx *f = *state;
	struct tfs_super sb = { 0 };
	char buf[8];
	uint64_t ino;
	int copy = 0;

	ino = mk(f->fs, TFS_ROOT_INO, "f");
	assert_int_equal(tfs_take_stale(f->fs, ino), 0);
	assert_int_equal(tfs_write(f->fs, ino, "abc", 3, 0, NULL), 3);
	assert_int_equal(tfs_fsync(f->fs, ino, 0, NULL), 0);
	assert_int_equal(tfs_read(f->fs, ino, buf, sizeof(buf), 0), 3);
	assert_int_equal(tfs_take_stale(f->fs, ino), 0);
	tfs_mark_stale(f->fs, ino);
	tfs_mark_stale(f->fs, ino);
	assert_int_equal(tfs_take_stale(f->fs, ino), 1);
	assert_int_equal(tfs_take_stale(f->fs, ino), 0);
	tfs_mark_stale(f->fs, ino + 1000);
	assert_int_equal(tfs_take_stale(f->fs, ino + 1000), 0);

	assert_int_equal(img_super(f->path, &sb, &copy), 0);
	reopen_failing_from(f, sb.data_start * TFS_BLOCK_SIZE);
	ino = mk(f->fs, TFS_ROOT_INO, "g");
	assert_int_equal(tfs_write(f->fs, ino, "abc", 3, 0, NULL), 3);
	assert_int_equal(tfs_take_stale(f->fs, ino), 0);
	assert_int_equal(tfs_fsync(f->fs, ino, 0, NULL), -EIO);
	assert_int_equal(tfs_take_stale(f->fs, ino), 1);
	assert_int_equal(tfs_take_stale(f->fs, ino), 0);
	assert_int_equal(tfs_fs_close(f->fs), -EIO); /* its checkpoint */
	f->fs = NULL;
}

/* ===== threads ===== */

struct writer {
	struct tfs_fs *fs;
	uint64_t ino;
	struct model m;
	unsigned int seed;
	int rc;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	uint64_t s = w->seed * 7919ull + 1;
	uint8_t *buf = malloc(65536), *rb = malloc(65536);

	for (int i = 0; i < 150 && !w->rc && buf && rb; i++) {
		uint64_t off = rnd(&s) % (MiB - 65536);
		size_t len = 1 + rnd(&s) % 65536;
		ssize_t n;

		fill_pat(buf, len, off, w->seed + (unsigned int)i);
		n = tfs_write(w->fs, w->ino, buf, len, off, NULL);
		if (n != (ssize_t)len) {
			w->rc = (int)n;
			break;
		}
		memcpy(w->m.b + off, buf, len);
		if (off + len > w->m.size)
			w->m.size = off + len;
		off = rnd(&s) % w->m.size;
		len =
		    (size_t)(w->m.size - off < 65536 ? w->m.size - off : 65536);
		n = tfs_read(w->fs, w->ino, rb, len, off);
		if (n != (ssize_t)len || memcmp(rb, w->m.b + off, len))
			w->rc = -EILSEQ;
		if (i % 40 == 0 && tfs_fsync(w->fs, w->ino, 0, NULL))
			w->rc = -EIO;
	}
	free(buf);
	free(rb);
	return NULL;
}

struct churner {
	struct tfs_fs *fs;
	uint64_t dir;
	int rc;
};

static void *churn_main(void *arg)
{
	struct churner *c = arg;
	char name[32];

	for (int i = 0; i < 2000 && !c->rc; i++) {
		struct stat st;
		struct statvfs sv;
		struct ents e;

		snprintf(name, sizeof(name), "c%d", i);
		c->rc = tfs_mknod(c->fs, c->dir, name, 0644, 0, 0, 0, &st);
		if (!c->rc && i % 2)
			c->rc = tfs_unlink(c->fs, c->dir, name);
		if (!c->rc && i % 100 == 0) {
			c->rc = tfs_statfs(c->fs, &sv);
			memset(&e, 0, sizeof(e));
			if (!c->rc)
				c->rc = tfs_readdir(c->fs, c->dir, 0, fill, &e);
			ents_free(&e);
		}
	}
	return NULL;
}

static void test_fs_concurrent_writers_and_namespace_changes(void **state)
{
	struct fx *f = *state;
	struct tfs_fs_opts o = { 0 };
	enum {
		W = 4
	};
	struct writer w[W];
	struct churner ch;
	pthread_t t[W + 1];
	char name[16];

	assert_int_equal(tfs_fs_close(f->fs), 0);
	o.commit_interval_ms = 10;
	assert_int_equal(
	    tfs_fs_open(f->path, &o, &f->fs, f->err, sizeof(f->err)), 0);
	assert_int_equal(tfs_fs_start(f->fs), 0);
	for (int i = 0; i < W; i++) {
		snprintf(name, sizeof(name), "w%d", i);
		w[i].fs = f->fs;
		w[i].ino = mk(f->fs, TFS_ROOT_INO, name);
		w[i].m.b = calloc(1, MiB);
		w[i].m.size = 0;
		w[i].m.cap = MiB;
		w[i].seed = (unsigned int)i + 1;
		w[i].rc = 0;
		assert_non_null(w[i].m.b);
		assert_int_equal(
		    pthread_create(&t[i], NULL, writer_main, &w[i]), 0);
	}
	ch.fs = f->fs;
	ch.dir = mkd(f->fs, TFS_ROOT_INO, "churn");
	ch.rc = 0;
	assert_int_equal(pthread_create(&t[W], NULL, churn_main, &ch), 0);
	for (int i = 0; i <= W; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(ch.rc, 0);
	for (int i = 0; i < W; i++) {
		assert_int_equal(w[i].rc, 0);
		assert_model(f->fs, w[i].ino, &w[i].m);
	}
	reopen(f);
	for (int i = 0; i < W; i++) {
		assert_model(f->fs, w[i].ino, &w[i].m);
		free(w[i].m.b);
	}
	assert_true(
	    exists(f->fs, ino_of(f->fs, TFS_ROOT_INO, "churn"), "c1998"));
	assert_false(
	    exists(f->fs, ino_of(f->fs, TFS_ROOT_INO, "churn"), "c1999"));
	assert_fsck_clean(f->fs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_fs_write_read_unaligned),
		T(test_fs_random_writes_and_truncates_match_a_model),
		T(test_fs_write_past_eof_leaves_a_zero_hole),
		T(test_fs_read_at_and_past_eof),
		T(test_fs_write_and_read_errors),
		T(test_fs_truncate_zeroes_tail),
		T(test_fs_truncate_then_write_beyond_keeps_zeros),
		T(test_fs_truncate_frees_blocks),
		T(test_fs_open_trunc_and_open_errors),
		T(test_fs_unlink_open_file_keeps_data_until_release),
		TS(test_fs_enospc_then_free_then_write_again),
		T(test_fs_fallocate_unwritten_reads_zero),
		T(test_fs_fallocate_keep_size_and_existing_data),
		T(test_fs_fallocate_errors),
		T(test_fs_punch_hole),
		T(test_fs_punch_hole_in_unwritten_extent),
		T(test_fs_seek_data_and_hole),
		TB(test_fs_copy_range),
		TB(test_fs_clone_write_keeps_bytes_of_shared_blocks),
		T(test_fs_write_back_error_reaches_fsync_and_next_write),
		T(test_fs_write_back_error_reaches_every_open_file),
		T(test_fs_stale_marks),
		T(test_fs_concurrent_writers_and_namespace_changes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
