/*
 * crashwriter.c: writers for crash tests, and the checker that runs after.
 *
 *   crashwriter [--all-ops] DIR MANIFEST NTHREADS SEED   write until killed
 *   crashwriter --verify [--strict] DIR MANIFEST          check what survived
 *
 * Write mode runs NTHREADS threads until the process is killed.  Thread T
 * owns the files DIR/tT-N; N counts up and is never reused (a new run
 * continues after the highest N found in DIR or in MANIFEST).  Each thread
 * loops, choosing at random: create a file of a random length (1 B .. 8 MiB,
 * mostly unaligned, written by write() in pieces of random size, sometimes
 * followed by more steps on the open file); rewrite part of an older file;
 * truncate one shorter or longer; append to one, or write past its end
 * leaving a hole; fsync an older file through a new descriptor; delete an
 * older file.  A thread keeps at most CW_BUDGET bytes (or
 * $CRASHWRITER_BUDGET_MIB MiB) in CW_MAX_FILES files
 * and deletes its oldest files beyond that, files left by earlier runs
 * first, so that a loop of runs does not fill the device.
 *
 * --all-ops adds: O_DIRECT writes of whole blocks (a new file, or a part
 * of an older one whose size is whole blocks); writes through a shared
 * mmap of an older file (msync'd or not); a rename to a new name (tT-N
 * becomes tT-N.rM); and an atomic replace (the new contents written and
 * fsync'd under tT-N.nM, then renamed over the file); and a clone (the
 * whole of an older file copied with copy_file_range to tT-N.cM: a
 * tensorfs of format 4 shares its blocks, and later writes to either
 * file copy on write).  A file keeps its pattern across renames and
 * clones: the pattern's NAME is the name up to its first '.', so tT-N,
 * tT-N.rM, tT-N.nM and tT-N.cM share it.
 *
 * The pattern.  Every byte ever written to file NAME at offset X is
 * pattern(NAME, X): byte X % 8, little-endian, of the 64-bit word
 * tfs_pattern_word(tfs_fnv1a64(NAME), X / 8) (tfs_test_pattern.h).  An
 * overwrite writes the same bytes again, so the content of a file is a
 * function of which byte ranges were written and not cut off by a truncate
 * since: those bytes are pattern, every other byte (holes, extensions) is
 * zero.  The writer models each file as its size plus those ranges.
 *
 * Clean blocks.  The writer keeps every 4 KiB block of every file (the last
 * one up to the file size) entirely pattern or entirely zero: a write that
 * would leave a block part pattern and part zero is widened to the block
 * boundary (the zero bytes of that block get their pattern too), and before
 * a file is extended with a hole, its last block, if it holds pattern, is
 * filled up to the block boundary.  The writer checks this of its model
 * after every step and aborts if it fails.
 *
 * The manifest, a file outside DIR, gets one line per event, each written
 * with one write() and made durable with fdatasync() before the writer goes
 * on:
 *   NAME SIZE SHA256   after fsync(file) and fsync(DIR) both returned 0: the
 *                      file is SIZE bytes with that SHA-256 (computed from the
 *                      writer's model of the content, never read back)
 *   NAME modified      before the writer changes a recorded file
 *   NAME deleted       before the writer unlinks a recorded or adopted file
 *   # ...              a comment (one per run)
 * The last line for a name decides.  A last line without its newline is
 * ignored, and cut off when the next run starts; ignoring it is always
 * right, because a retraction is durable before the change it announces.
 *
 * The rule --verify checks, for every entry of DIR:
 *  1. it is a regular file named tT-N or tT-N.SUFFIX (SUFFIX letters and
 *     digits): nothing else may appear in DIR;
 *  2. its whole st_size reads back, with no error and no short read;
 *  3. each of its 4 KiB blocks is the file's own pattern, or all zeros, or
 *     mixed: every byte either pattern(NAME, offset) or zero.  A byte that is
 *     neither (another file's data, a stale device block, metadata) is a
 *     failure.  Mixed blocks never exist before a crash (clean blocks,
 *     above); after one, a mixed block means the device held an older
 *     version of a partly written block.  No byte in it is foreign, so by
 *     default it is counted and reported; --strict makes it a failure;
 *  4. if the manifest's last line for it is a record, it has exactly that
 *     size and SHA-256 (the file was fsync'd and not changed since);
 * and every name whose last line is a record must exist (a missing DIR
 * counts as empty).
 * Exit 0 when all of it holds, 1 with one line per failure on stderr,
 * 2 on a usage error, 3 when the writer itself fails (a system call error:
 * expected once the file system under it is killed).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "tfs_test_pattern.h"

#define CW_BLOCK	4096u
#define CW_MAX_LEN	(8ull << 20)  /* longest new file */
#define CW_MAX_SIZE	(16ull << 20) /* no step grows a file past this */
#define CW_MAX_PIECE	(1u << 20)    /* largest single write() */
#define CW_BUF		(CW_MAX_PIECE + CW_BLOCK)
#define CW_BUDGET	(32ull << 20) /* bytes per thread */
#define CW_MAX_FILES	200	      /* files per thread */
#define CW_MAX_FAILURES 50	      /* --verify reports at most this many */

#define EXIT_FAIL    1
#define EXIT_USAGE   2
#define EXIT_SYSCALL 3

/* ===== pattern and checksums ===== */

/* The pattern's key of a file name: the name up to its first '.'. */
static uint64_t name_hash(const char *name)
{
	char base[64];
	size_t n = strcspn(name, ".");

	if (n >= sizeof(base))
		n = sizeof(base) - 1;
	memcpy(base, name, n);
	base[n] = '\0';
	return tfs_fnv1a64(base);
}

/* buf[0 .. len) = pattern(name, off ..) */
static void pattern_fill(uint64_t namehash, uint64_t off, unsigned char *buf,
			 size_t len)
{
	size_t i = 0;

	while (i < len) {
		uint64_t x = off + i;
		uint64_t w = tfs_pattern_word(namehash, x / 8);
		unsigned int k;

		if (x % 8 == 0 && len - i >= 8) {
			for (k = 0; k < 8; k++)
				buf[i + k] = (unsigned char)(w >> (8 * k));
			i += 8;
			continue;
		}
		buf[i++] = (unsigned char)(w >> (8 * (x % 8)));
	}
}

struct sha256 {
	uint32_t h[8];
	uint64_t len;
	unsigned char blk[64];
	size_t fill;
};

static const uint32_t sha256_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
	0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
	0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
	0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
	0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t ror32(uint32_t x, unsigned int n)
{
	return (x >> n) | (x << (32 - n));
}

static void sha256_block(struct sha256 *s, const unsigned char *p)
{
	uint32_t w[64], a, b, c, d, e, f, g, h;
	unsigned int i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (i = 16; i < 64; i++) {
		uint32_t s0 = ror32(w[i - 15], 7) ^ ror32(w[i - 15], 18) ^
			      (w[i - 15] >> 3);
		uint32_t s1 = ror32(w[i - 2], 17) ^ ror32(w[i - 2], 19) ^
			      (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	a = s->h[0];
	b = s->h[1];
	c = s->h[2];
	d = s->h[3];
	e = s->h[4];
	f = s->h[5];
	g = s->h[6];
	h = s->h[7];
	for (i = 0; i < 64; i++) {
		uint32_t t1 = h + (ror32(e, 6) ^ ror32(e, 11) ^ ror32(e, 25)) +
			      ((e & f) ^ (~e & g)) + sha256_k[i] + w[i];
		uint32_t t2 = (ror32(a, 2) ^ ror32(a, 13) ^ ror32(a, 22)) +
			      ((a & b) ^ (a & c) ^ (b & c));
		h = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	s->h[0] += a;
	s->h[1] += b;
	s->h[2] += c;
	s->h[3] += d;
	s->h[4] += e;
	s->h[5] += f;
	s->h[6] += g;
	s->h[7] += h;
}

static void sha256_init(struct sha256 *s)
{
	static const uint32_t iv[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};

	memcpy(s->h, iv, sizeof(iv));
	s->len = 0;
	s->fill = 0;
}

static void sha256_update(struct sha256 *s, const unsigned char *p, size_t n)
{
	s->len += n;
	if (s->fill) {
		size_t k = 64 - s->fill < n ? 64 - s->fill : n;

		memcpy(s->blk + s->fill, p, k);
		s->fill += k;
		p += k;
		n -= k;
		if (s->fill < 64)
			return;
		sha256_block(s, s->blk);
		s->fill = 0;
	}
	for (; n >= 64; p += 64, n -= 64)
		sha256_block(s, p);
	memcpy(s->blk, p, n);
	s->fill = n;
}

/* hex: 65 bytes, NUL-terminated */
static void sha256_final(struct sha256 *s, char *hex)
{
	uint64_t bits = s->len * 8;
	unsigned char pad[72] = { 0x80 };
	size_t padlen = (s->fill < 56 ? 56 : 120) - s->fill;
	unsigned int i;

	for (i = 0; i < 8; i++)
		pad[padlen + i] = (unsigned char)(bits >> (56 - 8 * i));
	sha256_update(s, pad, padlen + 8);
	for (i = 0; i < 8; i++)
		sprintf(hex + 8 * i, "%08" PRIx32, s->h[i]);
}

/* ===== the model of one file ===== */

struct cw_range {
	uint64_t start, end; /* [start, end) holds pattern */
};

struct cw_file {
	char name[48];
	uint64_t hash;
	uint64_t size;
	struct cw_range *r; /* sorted, disjoint, not adjacent */
	size_t nr, cap;
	unsigned int known : 1;	   /* 0: left by an earlier run */
	unsigned int recorded : 1; /* last manifest line is a record */
};

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p) {
		fprintf(stderr, "crashwriter: out of memory\n");
		_exit(EXIT_SYSCALL);
	}
	return p;
}

/* 1 if [a, b) is entirely pattern in the model (a < b) */
static int model_covered(const struct cw_file *f, uint64_t a, uint64_t b)
{
	size_t i;

	for (i = 0; i < f->nr; i++)
		if (f->r[i].start <= a && b <= f->r[i].end)
			return 1;
	return 0;
}

/* 1 if no byte of [a, b) is pattern */
static int model_empty(const struct cw_file *f, uint64_t a, uint64_t b)
{
	size_t i;

	for (i = 0; i < f->nr; i++)
		if (f->r[i].start < b && a < f->r[i].end)
			return 0;
	return 1;
}

static void model_write(struct cw_file *f, uint64_t a, uint64_t b)
{
	size_t i = 0, j;

	/* ranges [0, i) end before a; [i, j) touch [a, b) and merge */
	while (i < f->nr && f->r[i].end < a)
		i++;
	j = i;
	while (j < f->nr && f->r[j].start <= b) {
		if (f->r[j].start < a)
			a = f->r[j].start;
		if (f->r[j].end > b)
			b = f->r[j].end;
		j++;
	}
	if (j == i) {
		if (f->nr == f->cap) {
			f->cap = f->cap ? 2 * f->cap : 4;
			f->r = xrealloc(f->r, f->cap * sizeof(*f->r));
		}
		memmove(f->r + i + 1, f->r + i, (f->nr - i) * sizeof(*f->r));
		f->nr++;
	} else {
		memmove(f->r + i + 1, f->r + j, (f->nr - j) * sizeof(*f->r));
		f->nr -= j - i - 1;
	}
	f->r[i].start = a;
	f->r[i].end = b;
	if (b > f->size)
		f->size = b;
}

static void model_truncate(struct cw_file *f, uint64_t len)
{
	while (f->nr && f->r[f->nr - 1].start >= len)
		f->nr--;
	if (f->nr && f->r[f->nr - 1].end > len)
		f->r[f->nr - 1].end = len;
	f->size = len;
}

/* buf = the modelled content of [off, off + len) */
static void model_fill(const struct cw_file *f, uint64_t off,
		       unsigned char *buf, size_t len)
{
	size_t i;

	memset(buf, 0, len);
	for (i = 0; i < f->nr; i++) {
		uint64_t a = f->r[i].start > off ? f->r[i].start : off;
		uint64_t b = f->r[i].end < off + len ? f->r[i].end : off + len;

		if (a < b)
			pattern_fill(f->hash, a, buf + (a - off), b - a);
	}
}

/* the clean-blocks invariant: every block all pattern or all zero */
static int model_clean(const struct cw_file *f, uint64_t *bad)
{
	uint64_t a;

	for (a = 0; a < f->size; a += CW_BLOCK) {
		uint64_t b = a + CW_BLOCK < f->size ? a + CW_BLOCK : f->size;

		if (!model_covered(f, a, b) && !model_empty(f, a, b)) {
			*bad = a;
			return 0;
		}
	}
	return 1;
}

/* ===== names ===== */

/* parse "tT-N" or "tT-N.SUFFIX"; 1 on success */
static int parse_name(const char *s, unsigned int *tid, uint64_t *n)
{
	char *end;
	unsigned long t;
	unsigned long long v;

	if (s[0] != 't' || s[1] < '0' || s[1] > '9')
		return 0;
	errno = 0;
	t = strtoul(s + 1, &end, 10);
	if (errno || *end != '-' || t > 1000 || end[1] < '0' || end[1] > '9')
		return 0;
	v = strtoull(end + 1, &end, 10);
	if (errno)
		return 0;
	if (*end == '.' && end[1] &&
	    strspn(end + 1, "abcdefghijklmnopqrstuvwxyz0123456789") ==
		strlen(end + 1))
		end += strlen(end);
	if (*end)
		return 0;
	*tid = (unsigned int)t;
	*n = v;
	return 1;
}

/* ===== the manifest ===== */

enum {
	LINE_COMMENT,
	LINE_RECORD,
	LINE_RETRACT,
	LINE_BAD,
};

struct mline {
	char name[48];
	uint64_t size;
	char sha[65];
};

static int parse_line(char *s, struct mline *m)
{
	char word[32], extra;
	unsigned long long size;
	int k;

	memset(m, 0, sizeof(*m));
	if (s[0] == '#')
		return LINE_COMMENT;
	k = sscanf(s, "%47s %31s %64s %c", m->name, word, m->sha, &extra);
	if (k == 2 && (!strcmp(word, "modified") || !strcmp(word, "deleted")))
		return LINE_RETRACT;
	if (k != 3 || strlen(m->sha) != 64 ||
	    strspn(m->sha, "0123456789abcdef") != 64 ||
	    strspn(word, "0123456789") != strlen(word))
		return LINE_BAD;
	size = strtoull(word, NULL, 10);
	m->size = size;
	return LINE_RECORD;
}

/*
 * Read the manifest at path (absent: empty) and call fn for each complete
 * line; a last line without its newline is not passed.  *complete gets the
 * byte length of the complete lines.  Returns 0, or -errno on a read error.
 */
static int manifest_read(const char *path,
			 int (*fn)(char *line, unsigned long lineno, void *arg),
			 void *arg, off_t *complete)
{
	FILE *fp = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	unsigned long lineno = 0;
	off_t done = 0;
	int rc = 0;

	*complete = 0;
	if (!fp)
		return errno == ENOENT ? 0 : -errno;
	while ((n = getline(&line, &cap, fp)) > 0) {
		if (line[n - 1] != '\n')
			break;
		line[n - 1] = '\0';
		done += n;
		rc = fn(line, ++lineno, arg);
		if (rc)
			break;
	}
	if (!rc && ferror(fp))
		rc = -EIO;
	free(line);
	fclose(fp);
	*complete = done;
	return rc;
}

/* ===== write mode ===== */

struct cw_thread {
	unsigned int tid;
	uint64_t rng;
	uint64_t next_n;
	struct cw_file **files; /* oldest first */
	size_t nfiles, cap;
	uint64_t live;	    /* bytes in files */
	unsigned char *buf; /* CW_BUF bytes */
	pthread_t th;
};

static const char *g_dir;
static int g_dirfd = -1;
static int g_all_ops;		      /* --all-ops */
static uint64_t g_budget = CW_BUDGET; /* bytes per thread */
static int g_no_direct;		      /* the file system refuses O_DIRECT */
static int g_manifest = -1;
static pthread_mutex_t g_manifest_lock = PTHREAD_MUTEX_INITIALIZER;

static void die_errno(const struct cw_thread *t, const char *what,
		      const char *name)
{
	int e = errno;

	fprintf(stderr, "crashwriter: t%u: %s '%s/%s': %s\n", t->tid, what,
		g_dir, name, strerror(e));
	_exit(EXIT_SYSCALL);
}

static uint64_t rnd(struct cw_thread *t)
{
	t->rng += 0x9e3779b97f4a7c15ull;
	return tfs_mix64(t->rng);
}

static uint64_t rnd_below(struct cw_thread *t, uint64_t n)
{
	return n ? rnd(t) % n : 0;
}

/* log-uniform in [1, max]: many small values, some large */
static uint64_t rnd_log(struct cw_thread *t, uint64_t max)
{
	unsigned int bits = 0;
	uint64_t lo, v;

	while ((2ull << bits) <= max)
		bits++;
	bits = (unsigned int)rnd_below(t, bits + 1);
	lo = 1ull << bits;
	v = lo + rnd_below(t, lo);
	return v > max ? max : v;
}

static void manifest_append(const struct cw_thread *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void manifest_append(const struct cw_thread *t, const char *fmt, ...)
{
	char line[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&g_manifest_lock);
	if (write(g_manifest, line, (size_t)n) != n || fdatasync(g_manifest)) {
		fprintf(stderr, "crashwriter: t%u: writing the manifest: %s\n",
			t ? t->tid : 0, strerror(errno));
		_exit(EXIT_SYSCALL);
	}
	pthread_mutex_unlock(&g_manifest_lock);
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p) {
		fprintf(stderr, "crashwriter: out of memory\n");
		_exit(EXIT_SYSCALL);
	}
	return p;
}

static struct cw_file *file_new(const char *name, int known)
{
	struct cw_file *f = xcalloc(1, sizeof(*f));
	size_t n = strnlen(name, sizeof(f->name) - 1);

	memcpy(f->name, name, n);
	f->hash = name_hash(f->name);
	f->known = known ? 1 : 0;
	return f;
}

static void thread_add(struct cw_thread *t, struct cw_file *f)
{
	if (t->nfiles == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 64;
		t->files = xrealloc(t->files, t->cap * sizeof(*t->files));
	}
	t->files[t->nfiles++] = f;
	t->live += f->size;
}

static void check_clean(const struct cw_file *f)
{
	uint64_t bad;

	if (!model_clean(f, &bad)) {
		fprintf(stderr,
			"crashwriter: internal error: '%s' block at %" PRIu64
			" is part pattern, part zero\n",
			f->name, bad);
		abort();
	}
}

/* write pattern [a, b) at its offsets, in pieces of random size */
static void put_pattern(struct cw_thread *t, int fd, struct cw_file *f,
			uint64_t a, uint64_t b, int sequential)
{
	while (a < b) {
		size_t piece = (size_t)rnd_log(t, CW_MAX_PIECE);
		ssize_t n;

		if (piece > b - a)
			piece = (size_t)(b - a);
		pattern_fill(f->hash, a, t->buf, piece);
		if (sequential)
			n = write(fd, t->buf, piece);
		else
			n = pwrite(fd, t->buf, piece, (off_t)a);
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			die_errno(t, "write", f->name);
		}
		model_write(f, a, a + (uint64_t)n);
		a += (uint64_t)n;
	}
}

static uint64_t floor_blk(uint64_t x)
{
	return x / CW_BLOCK * CW_BLOCK;
}

static uint64_t ceil_blk(uint64_t x)
{
	return (x + CW_BLOCK - 1) / CW_BLOCK * CW_BLOCK;
}

/* If the file's last block is part of a pattern run and ends before the
 * block boundary, fill it up to min(boundary, limit). */
static void pad_tail(struct cw_thread *t, int fd, struct cw_file *f,
		     uint64_t limit)
{
	uint64_t s = f->size, e = ceil_blk(s);

	if (s % CW_BLOCK == 0 || !model_covered(f, floor_blk(s), s))
		return;
	if (e > limit)
		e = limit;
	if (e > s)
		put_pattern(t, fd, f, s, e, 0);
}

/* write the pattern over [a, b), widened so that every block stays clean */
static void step_write(struct cw_thread *t, int fd, struct cw_file *f,
		       uint64_t a, uint64_t b)
{
	uint64_t before = f->size;

	if (a > f->size && floor_blk(a) > floor_blk(f->size))
		pad_tail(t, fd, f, a);
	if (a % CW_BLOCK && !model_covered(f, floor_blk(a), a))
		a = floor_blk(a);
	if (b < f->size && b % CW_BLOCK) {
		uint64_t e = ceil_blk(b) < f->size ? ceil_blk(b) : f->size;

		if (!model_covered(f, b, e))
			b = e;
	}
	put_pattern(t, fd, f, a, b, 0);
	t->live += f->size - before;
}

static void step_truncate(struct cw_thread *t, int fd, struct cw_file *f,
			  uint64_t len)
{
	uint64_t before = f->size;

	if (len > f->size)
		pad_tail(t, fd, f, len);
	if (ftruncate(fd, (off_t)len))
		die_errno(t, "ftruncate", f->name);
	model_truncate(f, len);
	t->live = t->live - before + len;
}

/* fsync the file and the directory, then record the file in the manifest */
static void step_record(struct cw_thread *t, int fd, struct cw_file *f)
{
	struct sha256 s;
	char hex[65];
	uint64_t off;

	if (fsync(fd))
		die_errno(t, "fsync", f->name);
	if (fsync(g_dirfd))
		die_errno(t, "fsync the directory of", f->name);
	sha256_init(&s);
	for (off = 0; off < f->size; off += CW_MAX_PIECE) {
		size_t n = f->size - off < CW_MAX_PIECE
			       ? (size_t)(f->size - off)
			       : CW_MAX_PIECE;

		model_fill(f, off, t->buf, n);
		sha256_update(&s, t->buf, n);
	}
	sha256_final(&s, hex);
	manifest_append(t, "%s %" PRIu64 " %s\n", f->name, f->size, hex);
	f->recorded = 1;
}

/* one random change to an open file */
static void step_change(struct cw_thread *t, int fd, struct cw_file *f)
{
	uint64_t r = rnd_below(t, 100), a, len;

	if (r < 40 && f->size) { /* rewrite a part */
		a = rnd_below(t, f->size);
		len = rnd_log(t, CW_MAX_PIECE * 2);
		step_write(t, fd, f, a, a + len);
	} else if (r < 55 && f->size) { /* shorter */
		step_truncate(t, fd, f,
			      rnd_below(t, 8) ? rnd_below(t, f->size) : 0);
	} else if (r < 65) { /* longer: a hole */
		step_truncate(t, fd, f, f->size + rnd_log(t, 2u << 20));
	} else if (r < 85) { /* append */
		step_write(t, fd, f, f->size,
			   f->size + rnd_log(t, CW_MAX_PIECE * 2));
	} else { /* past the end */
		a = f->size + rnd_log(t, 1u << 20);
		step_write(t, fd, f, a, a + rnd_log(t, CW_MAX_PIECE));
	}
	check_clean(f);
}

static void op_create(struct cw_thread *t)
{
	char name[48];
	struct cw_file *f;
	uint64_t len;
	int fd, k;

	for (;;) {
		snprintf(name, sizeof(name), "t%u-%" PRIu64, t->tid,
			 t->next_n++);
		fd = openat(g_dirfd, name,
			    O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd >= 0)
			break;
		if (errno != EEXIST)
			die_errno(t, "create", name);
	}
	f = file_new(name, 1);
	thread_add(t, f);
	len = rnd_log(t, CW_MAX_LEN);
	if (rnd_below(t, 10) == 0)
		len = ceil_blk(len); /* some aligned lengths too */
	put_pattern(t, fd, f, 0, len, 1);
	t->live += f->size;
	check_clean(f);
	if (rnd_below(t, 3) == 0)
		for (k = (int)rnd_below(t, 3); k >= 0; k--)
			if (f->size < CW_MAX_SIZE)
				step_change(t, fd, f);
	if (rnd_below(t, 2))
		step_record(t, fd, f);
	if (close(fd))
		die_errno(t, "close", f->name);
}

static struct cw_file *pick_known(struct cw_thread *t, int unrecorded)
{
	size_t i, start, n = t->nfiles;

	if (!n)
		return NULL;
	start = (size_t)rnd_below(t, n);
	for (i = 0; i < n; i++) {
		struct cw_file *f = t->files[(start + i) % n];

		if (f->known && !(unrecorded && f->recorded))
			return f;
	}
	return NULL;
}

static void op_modify(struct cw_thread *t)
{
	struct cw_file *f = pick_known(t, 0);
	int fd, k;

	if (!f || f->size >= CW_MAX_SIZE)
		return;
	if (f->recorded) {
		manifest_append(t, "%s modified\n", f->name);
		f->recorded = 0;
	}
	fd = openat(g_dirfd, f->name, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		die_errno(t, "open", f->name);
	for (k = (int)rnd_below(t, 3); k >= 0; k--)
		step_change(t, fd, f);
	if (rnd_below(t, 2))
		step_record(t, fd, f);
	if (close(fd))
		die_errno(t, "close", f->name);
}

static void op_sync_old(struct cw_thread *t)
{
	struct cw_file *f = pick_known(t, 1);
	int fd;

	if (!f)
		return;
	fd = openat(g_dirfd, f->name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die_errno(t, "open", f->name);
	step_record(t, fd, f);
	if (close(fd))
		die_errno(t, "close", f->name);
}

static void op_delete(struct cw_thread *t, size_t i)
{
	struct cw_file *f = t->files[i];

	if (f->recorded || !f->known)
		manifest_append(t, "%s deleted\n", f->name);
	if (unlinkat(g_dirfd, f->name, 0))
		die_errno(t, "unlink", f->name);
	t->live -= f->size;
	memmove(t->files + i, t->files + i + 1,
		(t->nfiles - i - 1) * sizeof(*t->files));
	t->nfiles--;
	free(f->r);
	free(f);
}

/* ===== --all-ops ===== */

/* write pattern [a, b) with O_DIRECT: a, b and every piece whole blocks */
static void put_direct(struct cw_thread *t, int fd, struct cw_file *f,
		       uint64_t a, uint64_t b)
{
	while (a < b) {
		size_t piece = (size_t)ceil_blk(rnd_log(t, CW_MAX_PIECE));
		ssize_t n;

		if (piece > b - a)
			piece = (size_t)(b - a);
		pattern_fill(f->hash, a, t->buf, piece);
		n = pwrite(fd, t->buf, piece, (off_t)a);
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			die_errno(t, "O_DIRECT write", f->name);
		}
		/* a short O_DIRECT write still ends on a block */
		model_write(f, a, a + (uint64_t)n);
		a += (uint64_t)n;
	}
}

/* O_DIRECT: a new file of whole blocks, or whole blocks of an older one */
static void op_direct(struct cw_thread *t)
{
	struct cw_file *f = pick_known(t, 0);
	uint64_t before, a, len;
	char name[48];
	int fd;

	if (g_no_direct)
		return;
	if (f && (f->size % CW_BLOCK || !f->size || f->size >= CW_MAX_SIZE ||
		  rnd_below(t, 2)))
		f = NULL;
	if (f) {
		if (f->recorded) {
			manifest_append(t, "%s modified\n", f->name);
			f->recorded = 0;
		}
		fd = openat(g_dirfd, f->name, O_WRONLY | O_DIRECT | O_CLOEXEC);
		a = floor_blk(rnd_below(t, f->size));
		len = ceil_blk(rnd_log(t, CW_MAX_PIECE * 2));
	} else {
		snprintf(name, sizeof(name), "t%u-%" PRIu64, t->tid,
			 t->next_n++);
		fd = openat(g_dirfd, name,
			    O_WRONLY | O_CREAT | O_EXCL | O_DIRECT | O_CLOEXEC,
			    0644);
		if (fd >= 0) {
			f = file_new(name, 1);
			thread_add(t, f);
		}
		a = 0;
		len = ceil_blk(rnd_log(t, CW_MAX_LEN));
	}
	if (fd < 0 && errno == EINVAL) {
		g_no_direct = 1; /* not supported: skip from now on */
		return;
	}
	if (fd < 0)
		die_errno(t, "open O_DIRECT", f ? f->name : name);
	before = f->size;
	put_direct(t, fd, f, a, a + len);
	t->live += f->size - before;
	check_clean(f);
	if (rnd_below(t, 2))
		step_record(t, fd, f);
	if (close(fd))
		die_errno(t, "close", f->name);
}

/* write through a shared mapping of an older file, inside its size */
static void op_mmap(struct cw_thread *t)
{
	struct cw_file *f = pick_known(t, 0);
	uint64_t a, b;
	unsigned char *p;
	int fd;

	if (!f || !f->size)
		return;
	if (f->recorded) {
		manifest_append(t, "%s modified\n", f->name);
		f->recorded = 0;
	}
	fd = openat(g_dirfd, f->name, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		die_errno(t, "open", f->name);
	p = mmap(NULL, (size_t)f->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 0);
	if (p == MAP_FAILED)
		die_errno(t, "mmap MAP_SHARED", f->name);
	/* whole blocks, or up to the end of the file: blocks stay clean */
	a = floor_blk(rnd_below(t, f->size));
	b = ceil_blk(a + rnd_log(t, CW_MAX_PIECE));
	if (b > f->size)
		b = f->size;
	pattern_fill(f->hash, a, p + a, (size_t)(b - a));
	model_write(f, a, b);
	check_clean(f);
	if (rnd_below(t, 2) && msync(p, (size_t)f->size, MS_SYNC))
		die_errno(t, "msync", f->name);
	if (munmap(p, (size_t)f->size))
		die_errno(t, "munmap", f->name);
	if (rnd_below(t, 2))
		step_record(t, fd, f);
	if (close(fd))
		die_errno(t, "close", f->name);
}

/* "tT-N" (or "tT-N.x") as "tT-N.<tag><M>", M new */
static void suffixed(struct cw_thread *t, const struct cw_file *f,
		     const char *tag, char *out, size_t len)
{
	int n = (int)strcspn(f->name, ".");

	snprintf(out, len, "%.*s.%s%" PRIu64, n, f->name, tag, t->next_n++);
}

/* rename an older file to a new name */
static void op_rename(struct cw_thread *t)
{
	struct cw_file *f = pick_known(t, 0);
	char name[48];
	int fd;

	if (!f)
		return;
	suffixed(t, f, "r", name, sizeof(name));
	/* the old name goes away: retracted first */
	if (f->recorded) {
		manifest_append(t, "%s deleted\n", f->name);
		f->recorded = 0;
	}
	if (renameat(g_dirfd, f->name, g_dirfd, name))
		die_errno(t, "rename", f->name);
	snprintf(f->name, sizeof(f->name), "%s", name);
	if (rnd_below(t, 2))
		return;
	fd = openat(g_dirfd, f->name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die_errno(t, "open", f->name);
	step_record(t, fd, f);
	if (close(fd))
		die_errno(t, "close", f->name);
}

/* new contents under a temporary name, fsync'd, renamed over the file */
static void op_replace(struct cw_thread *t)
{
	struct cw_file *f = pick_known(t, 0), *tmp;
	char name[48];
	int fd;

	if (!f)
		return;
	suffixed(t, f, "n", name, sizeof(name));
	fd = openat(g_dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
		    0644);
	if (fd < 0)
		die_errno(t, "create", name);
	tmp = file_new(name, 1);
	put_pattern(t, fd, tmp, 0, rnd_log(t, CW_MAX_LEN / 4), 1);
	check_clean(tmp);
	if (fsync(fd))
		die_errno(t, "fsync", tmp->name);
	if (f->recorded) {
		manifest_append(t, "%s modified\n", f->name);
		f->recorded = 0;
	}
	if (renameat(g_dirfd, tmp->name, g_dirfd, f->name))
		die_errno(t, "rename over", f->name);
	/* f now has tmp's contents (the same pattern: one NAME) */
	t->live = t->live - f->size + tmp->size;
	free(f->r);
	f->r = tmp->r;
	f->nr = tmp->nr;
	f->cap = tmp->cap;
	f->size = tmp->size;
	free(tmp);
	if (rnd_below(t, 2))
		step_record(t, fd, f);
	if (close(fd))
		die_errno(t, "close", f->name);
}

/* the whole of an older file, copied with copy_file_range to a new
 * name with the same pattern (a clone on tensorfs) */
static void op_clone(struct cw_thread *t)
{
	struct cw_file *f = pick_known(t, 0), *c;
	loff_t off_in = 0, off_out = 0;
	char name[48];
	int in, out;

	if (!f)
		return;
	suffixed(t, f, "c", name, sizeof(name));
	in = openat(g_dirfd, f->name, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		die_errno(t, "open", f->name);
	out = openat(g_dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
		     0644);
	if (out < 0)
		die_errno(t, "create", name);
	while ((uint64_t)off_in < f->size) {
		ssize_t n =
		    copy_file_range(in, &off_in, out, &off_out,
				    (size_t)(f->size - (uint64_t)off_in), 0);

		if (n < 0)
			die_errno(t, "copy_file_range to", name);
		if (n == 0)
			break;
	}
	c = file_new(name, 1);
	c->size = f->size;
	if (f->nr) {
		c->r = xrealloc(NULL, f->nr * sizeof(*c->r));
		memcpy(c->r, f->r, f->nr * sizeof(*c->r));
	}
	c->nr = c->cap = f->nr;
	check_clean(c);
	thread_add(t, c);
	if (rnd_below(t, 2))
		step_record(t, out, c);
	if (close(out))
		die_errno(t, "close", name);
	if (close(in))
		die_errno(t, "close", f->name);
}

static void *writer(void *arg)
{
	struct cw_thread *t = arg;

	for (;;) {
		uint64_t r = rnd_below(t, 100);

		if (g_all_ops && r < 28 && t->nfiles)
			r < 8	 ? op_direct(t)
			: r < 16 ? op_mmap(t)
			: r < 20 ? op_rename(t)
			: r < 24 ? op_replace(t)
				 : op_clone(t);
		else if (r < 45 || t->nfiles == 0)
			op_create(t);
		else if (r < 70)
			op_modify(t);
		else if (r < 85)
			op_sync_old(t);
		else
			op_delete(t, (size_t)rnd_below(t, t->nfiles));
		while (t->nfiles &&
		       (t->live > g_budget || t->nfiles > CW_MAX_FILES))
			op_delete(t, 0);
	}
	return NULL;
}

struct scan {
	struct cw_thread *threads;
	unsigned int nthreads;
};

static void note_n(struct scan *sc, const char *name)
{
	unsigned int tid;
	uint64_t n;

	if (parse_name(name, &tid, &n) && tid < sc->nthreads &&
	    n >= sc->threads[tid].next_n)
		sc->threads[tid].next_n = n + 1;
}

static int scan_manifest_line(char *line, unsigned long lineno, void *arg)
{
	struct mline m;

	(void)lineno;
	if (parse_line(line, &m) != LINE_COMMENT)
		note_n(arg, m.name);
	return 0;
}

/* the writer cannot start: say why and exit */
_Noreturn static void setup_failed(const char *what, const char *path, int e)
{
	fprintf(stderr, "crashwriter: %s '%s': %s\n", what, path, strerror(e));
	_exit(EXIT_SYSCALL);
}

/* Set up, start the threads and wait for them: they never end, so this
 * returns only by the process being killed, or exiting on an error. */
static void write_main(const char *dir, const char *manifest,
		       unsigned int nthreads, unsigned int seed)
{
	char parent[PATH_MAX];
	struct scan sc;
	struct cw_thread *threads; /* live as long as the process */
	off_t complete;
	DIR *d;
	struct dirent *de;
	unsigned int i;
	int rc, fd;

	g_dir = dir;
	if (getenv("CRASHWRITER_BUDGET_MIB")) {
		uint64_t mib =
		    strtoull(getenv("CRASHWRITER_BUDGET_MIB"), NULL, 10);

		if (mib >= 1 && mib <= 4096)
			g_budget = mib << 20;
	}
	if (mkdir(dir, 0755) && errno != EEXIST)
		setup_failed("mkdir", dir, errno);
	g_dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (g_dirfd < 0)
		setup_failed("open", dir, errno);
	/* make DIR's own entry durable */
	snprintf(parent, sizeof(parent), "%s/..", dir);
	fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd))
		setup_failed("fsync", parent, errno);
	close(fd);

	threads = xcalloc(nthreads, sizeof(*threads));
	for (i = 0; i < nthreads; i++) {
		threads[i].tid = i;
		threads[i].rng = tfs_mix64((uint64_t)seed * 1000003u + i);
		/* aligned, for O_DIRECT */
		if (posix_memalign((void **)&threads[i].buf, CW_BLOCK, CW_BUF))
			setup_failed("allocate a buffer for", dir, ENOMEM);
	}
	sc.threads = threads;
	sc.nthreads = nthreads;

	rc = manifest_read(manifest, scan_manifest_line, &sc, &complete);
	if (rc)
		setup_failed("read", manifest, -rc);
	g_manifest =
	    open(manifest, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (g_manifest < 0 || ftruncate(g_manifest, complete))
		setup_failed("open", manifest, errno);

	/* adopt the files of earlier runs: they may only be deleted */
	fd = dup(g_dirfd);
	d = fd < 0 ? NULL : fdopendir(fd);
	if (!d)
		setup_failed("opendir", dir, errno);
	while ((de = readdir(d))) {
		unsigned int tid;
		uint64_t n;
		struct stat st;
		struct cw_file *f;

		if (!parse_name(de->d_name, &tid, &n) || tid >= nthreads)
			continue;
		note_n(&sc, de->d_name);
		if (fstatat(g_dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		f = file_new(de->d_name, 0);
		f->size = (uint64_t)st.st_size;
		thread_add(&threads[tid], f);
	}
	closedir(d);

	manifest_append(NULL, "# crashwriter seed=%u threads=%u pid=%ld\n",
			seed, nthreads, (long)getpid());
	for (i = 0; i < nthreads; i++) {
		rc = pthread_create(&threads[i].th, NULL, writer, &threads[i]);
		if (rc)
			setup_failed("pthread_create for", dir, rc);
	}
	for (i = 0; i < nthreads; i++)
		pthread_join(threads[i].th, NULL);
	free(threads); /* not reached */
}

/* ===== verify mode ===== */

struct expect {
	char name[48];
	int state; /* LINE_RECORD or LINE_RETRACT */
	uint64_t size;
	char sha[65];
	unsigned long lineno;
	int seen;
};

struct verify {
	struct expect *tab; /* open addressing on fnv1a64(name) */
	size_t cap, n;
	unsigned long failures;
	int strict;
	uint64_t files, exact, blk_pattern, blk_zero, blk_mixed;
	unsigned char *buf, *pat;
};

static void vfail(struct verify *v, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void vfail(struct verify *v, const char *fmt, ...)
{
	va_list ap;

	if (++v->failures > CW_MAX_FAILURES)
		return;
	fputs("crashwriter: verify: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static struct expect *expect_slot(struct verify *v, const char *name)
{
	size_t i = (size_t)tfs_fnv1a64(name) & (v->cap - 1);

	while (v->tab[i].name[0] && strcmp(v->tab[i].name, name))
		i = (i + 1) & (v->cap - 1);
	return &v->tab[i];
}

static int verify_manifest_line(char *line, unsigned long lineno, void *arg)
{
	struct verify *v = arg;
	struct mline m;
	struct expect *e;
	int kind = parse_line(line, &m);

	if (kind == LINE_COMMENT)
		return 0;
	if (kind == LINE_BAD) {
		fprintf(stderr,
			"crashwriter: verify: manifest line %lu is "
			"malformed: '%s'\n",
			lineno, line);
		return -EINVAL;
	}
	if (2 * (v->n + 1) > v->cap) {
		struct expect *old = v->tab;
		size_t oldcap = v->cap, i;

		v->cap = v->cap ? 2 * v->cap : 1024;
		v->tab = xcalloc(v->cap, sizeof(*v->tab));
		for (i = 0; i < oldcap; i++)
			if (old[i].name[0])
				*expect_slot(v, old[i].name) = old[i];
		free(old);
	}
	e = expect_slot(v, m.name);
	if (!e->name[0]) {
		snprintf(e->name, sizeof(e->name), "%s", m.name);
		v->n++;
	}
	e->state = kind;
	e->size = m.size;
	memcpy(e->sha, m.sha, sizeof(e->sha));
	e->lineno = lineno;
	return 0;
}

static void verify_file(struct verify *v, int dfd, const char *name)
{
	struct expect *e = expect_slot(v, name);
	struct sha256 s;
	struct stat st;
	unsigned int tid;
	uint64_t n, off, hash = name_hash(name), size;
	int fd, failed = 0;
	char hex[65];

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW)) {
		vfail(v, "'%s': stat: %s", name, strerror(errno));
		return;
	}
	if (!S_ISREG(st.st_mode) || !parse_name(name, &tid, &n)) {
		vfail(v,
		      "'%s': unexpected entry (mode %o): only files tT-N "
		      "and tT-N.SUFFIX belong here",
		      name, (unsigned int)st.st_mode);
		return;
	}
	if (e->name[0])
		e->seen = 1;
	v->files++;
	fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		vfail(v, "'%s': open: %s", name, strerror(errno));
		return;
	}
	size = (uint64_t)st.st_size;
	sha256_init(&s);
	for (off = 0; off < size && !failed;) {
		size_t want = size - off < CW_MAX_PIECE ? (size_t)(size - off)
							: CW_MAX_PIECE;
		ssize_t got = pread(fd, v->buf, want, (off_t)off);
		size_t b;

		if (got < 0) {
			vfail(v,
			      "'%s': read at %" PRIu64 " (size %" PRIu64
			      "): %s",
			      name, off, size, strerror(errno));
			failed = 1;
			break;
		}
		if (got == 0) {
			vfail(v,
			      "'%s': end of file at %" PRIu64
			      ", but st_size is %" PRIu64,
			      name, off, size);
			failed = 1;
			break;
		}
		pattern_fill(hash, off, v->pat, (size_t)got);
		for (b = 0; b < (size_t)got; b += CW_BLOCK) {
			size_t len = (size_t)got - b < CW_BLOCK
					 ? (size_t)got - b
					 : CW_BLOCK;
			const unsigned char *p = v->buf + b, *q = v->pat + b;
			size_t i, zeros = 0, pats = 0;

			if (!memcmp(p, q, len)) {
				v->blk_pattern++;
				continue;
			}
			for (i = 0; i < len; i++) {
				if (p[i] == 0)
					zeros++;
				else if (p[i] == q[i])
					pats++;
				else
					break;
			}
			if (i < len) {
				vfail(v,
				      "'%s': block at %" PRIu64
				      ": byte %" PRIu64
				      " is 0x%02x, neither the "
				      "file's pattern (0x%02x) nor zero: "
				      "data the file was never given",
				      name, off + b, off + b + i, p[i], q[i]);
				failed = 1;
				break;
			}
			if (pats == 0) {
				v->blk_zero++;
				continue;
			}
			v->blk_mixed++;
			if (v->strict) {
				vfail(v,
				      "'%s': block at %" PRIu64 " is part "
				      "pattern, part zero (%zu zero "
				      "bytes) (--strict)",
				      name, off + b, zeros);
				failed = 1;
				break;
			}
		}
		if (e->name[0] && e->state == LINE_RECORD)
			sha256_update(&s, v->buf, (size_t)got);
		off += (uint64_t)got;
	}
	if (!failed && pread(fd, v->buf, 1, (off_t)size) > 0) {
		vfail(v, "'%s': data past st_size %" PRIu64, name, size);
		failed = 1;
	}
	close(fd);
	if (failed || !e->name[0] || e->state != LINE_RECORD)
		return;
	v->exact++;
	if (size != e->size) {
		vfail(v,
		      "'%s': size %" PRIu64 ", but it was fsync'd with "
		      "size %" PRIu64 " (manifest line %lu)",
		      name, size, e->size, e->lineno);
		return;
	}
	sha256_final(&s, hex);
	if (strcmp(hex, e->sha))
		vfail(v,
		      "'%s': SHA-256 %s, but it was fsync'd with %s "
		      "(manifest line %lu)",
		      name, hex, e->sha, e->lineno);
}

static int verify_main(const char *dir, const char *manifest, int strict)
{
	struct verify v;
	off_t complete;
	DIR *d;
	struct dirent *de;
	size_t i;
	int rc = EXIT_SYSCALL;

	memset(&v, 0, sizeof(v));
	v.strict = strict;
	v.cap = 1024;
	v.tab = calloc(v.cap, sizeof(*v.tab));
	v.buf = malloc(CW_MAX_PIECE);
	v.pat = malloc(CW_MAX_PIECE);
	if (!v.tab || !v.buf || !v.pat)
		goto out_free;
	rc = manifest_read(manifest, verify_manifest_line, &v, &complete);
	if (rc) {
		if (rc != -EINVAL)
			fprintf(stderr, "crashwriter: verify: read '%s': %s\n",
				manifest, strerror(-rc));
		rc = EXIT_FAIL;
		goto out_free;
	}
	/* a DIR that never reached the device holds no files */
	d = opendir(dir);
	if (!d && errno != ENOENT) {
		fprintf(stderr, "crashwriter: verify: opendir '%s': %s\n", dir,
			strerror(errno));
		rc = EXIT_FAIL;
		goto out_free;
	}
	errno = 0;
	while (d && (de = readdir(d))) {
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			verify_file(&v, dirfd(d), de->d_name);
		errno = 0;
	}
	if (d && errno)
		vfail(&v, "readdir '%s': %s", dir, strerror(errno));
	if (d)
		closedir(d);
	for (i = 0; i < v.cap; i++) {
		struct expect *e = &v.tab[i];

		if (e->name[0] && e->state == LINE_RECORD && !e->seen)
			vfail(&v,
			      "'%s': missing, but it was fsync'd with "
			      "size %" PRIu64 " (manifest line %lu)",
			      e->name, e->size, e->lineno);
	}
	if (v.failures > CW_MAX_FAILURES)
		fprintf(stderr, "crashwriter: verify: %lu more failures\n",
			v.failures - CW_MAX_FAILURES);
	printf("crashwriter: verify '%s': %" PRIu64 " files, %" PRIu64
	       " of them fsync'd and checked exactly; blocks: %" PRIu64
	       " pattern, %" PRIu64 " zero, %" PRIu64 " mixed; %lu failures\n",
	       dir, v.files, v.exact, v.blk_pattern, v.blk_zero, v.blk_mixed,
	       v.failures);
	rc = v.failures ? EXIT_FAIL : 0;
out_free:
	free(v.tab);
	free(v.buf);
	free(v.pat);
	return rc;
}

/* ===== main ===== */

static void usage(FILE *fp)
{
	fprintf(fp, "usage: crashwriter [--all-ops] DIR MANIFEST NTHREADS "
		    "SEED\n"
		    "       crashwriter --verify [--strict] DIR MANIFEST\n");
}

int main(int argc, char **argv)
{
	char *end;
	unsigned long nthreads, seed;

	if (argc >= 2 && !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	if (argc >= 2 && !strcmp(argv[1], "--verify")) {
		int strict = argc >= 3 && !strcmp(argv[2], "--strict");

		if (argc != 4 + strict) {
			usage(stderr);
			return EXIT_USAGE;
		}
		return verify_main(argv[2 + strict], argv[3 + strict], strict);
	}
	if (argc >= 2 && !strcmp(argv[1], "--all-ops")) {
		g_all_ops = 1;
		argv++;
		argc--;
	}
	if (argc != 5) {
		usage(stderr);
		return EXIT_USAGE;
	}
	errno = 0;
	nthreads = strtoul(argv[3], &end, 10);
	if (errno || *end || nthreads < 1 || nthreads > 64) {
		fprintf(stderr, "crashwriter: NTHREADS '%s' is not 1..64\n",
			argv[3]);
		return EXIT_USAGE;
	}
	seed = strtoul(argv[4], &end, 10);
	if (errno || *end || seed > UINT_MAX) {
		fprintf(stderr, "crashwriter: SEED '%s' is not a number\n",
			argv[4]);
		return EXIT_USAGE;
	}
	write_main(argv[1], argv[2], (unsigned int)nthreads,
		   (unsigned int)seed);
	return EXIT_SYSCALL; /* not reached: the writers never end */
}
