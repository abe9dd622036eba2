/*
 * tfs_sys: the syscalls the integration tests need exactly, in one program.
 *
 * Shell tools hide errno behind a translated message and cannot make some
 * calls at all (renameat2 flags, XATTR_CREATE, threads sharing one fd), so
 * the test scripts call this instead:
 *
 *   tfs_sys COMMAND ARGS...
 *
 * There are three kinds of command.
 *
 * Probes make one call and print one word: OK, or the errno name (EEXIST,
 * ENOTEMPTY, ...).  They exit 0 after OK and 1 after an error, so a script
 * compares the printed word with the one POSIX requires.
 *
 * Checks run a whole scenario and verify the result themselves: they print
 * OK and exit 0, or say on stderr what differed and exit 1.
 *
 * Generators produce data: "pattern" writes deterministic bytes to stdout,
 * "create-many" and "unlink-many" make and remove directory entries fast.
 *
 * Every command exits 2 on a usage error.  The byte pattern is a function of
 * (seed, file offset) alone, so any range of a file written by a check can be
 * regenerated with "pattern" and compared with cmp(1).
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
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "tfs_test_pattern.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif
#ifndef FALLOC_FL_KEEP_SIZE
#define FALLOC_FL_KEEP_SIZE 0x01
#endif
#ifndef FALLOC_FL_PUNCH_HOLE
#define FALLOC_FL_PUNCH_HOLE 0x02
#endif
#ifndef FALLOC_FL_ZERO_RANGE
#define FALLOC_FL_ZERO_RANGE 0x10
#endif

#define ALIGN	 4096
#define IO_CHUNK (1 << 20)

/* ===== errno names ===== */

#define ERRNO_NAME(e) { e, #e },
static const struct {
	int num;
	const char *name;
} errno_names[] = {
	ERRNO_NAME(EPERM) ERRNO_NAME(ENOENT) ERRNO_NAME(ESRCH) ERRNO_NAME(
	    EINTR) ERRNO_NAME(EIO) ERRNO_NAME(ENXIO) ERRNO_NAME(E2BIG)
	    ERRNO_NAME(EBADF) ERRNO_NAME(EAGAIN) ERRNO_NAME(ENOMEM) ERRNO_NAME(
		EACCES) ERRNO_NAME(EFAULT) ERRNO_NAME(EBUSY) ERRNO_NAME(EEXIST)
		ERRNO_NAME(EXDEV) ERRNO_NAME(ENODEV) ERRNO_NAME(ENOTDIR)
		    ERRNO_NAME(EISDIR) ERRNO_NAME(EINVAL) ERRNO_NAME(ENFILE)
			ERRNO_NAME(EMFILE) ERRNO_NAME(ETXTBSY) ERRNO_NAME(EFBIG)
			    ERRNO_NAME(ENOSPC) ERRNO_NAME(ESPIPE) ERRNO_NAME(
				EROFS) ERRNO_NAME(EMLINK) ERRNO_NAME(EPIPE)
				ERRNO_NAME(ERANGE) ERRNO_NAME(ENAMETOOLONG)
				    ERRNO_NAME(ENOSYS) ERRNO_NAME(ENOTEMPTY)
					ERRNO_NAME(ELOOP) ERRNO_NAME(ENODATA)
					    ERRNO_NAME(EOVERFLOW) ERRNO_NAME(
						EOPNOTSUPP) ERRNO_NAME(ENOTSUP)
						ERRNO_NAME(ENOTCONN)
						    ERRNO_NAME(ESTALE)
							ERRNO_NAME(EDQUOT)
};

static const char *errno_name(int e)
{
	static char buf[32];
	size_t i;

	/* ENOTSUP == EOPNOTSUPP on Linux; the table's first match wins */
	for (i = 0; i < sizeof(errno_names) / sizeof(errno_names[0]); i++)
		if (errno_names[i].num == e)
			return errno_names[i].name;
	snprintf(buf, sizeof(buf), "errno%d", e);
	return buf;
}

/* probe result: print OK or the errno name of a failed call */
static int report(int rc)
{
	if (rc < 0) {
		puts(errno_name(errno));
		return 1;
	}
	puts("OK");
	return 0;
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int fail(const char *fmt, ...)
{
	va_list ap;

	fputs("tfs_sys: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

static int syserr(const char *what, const char *path)
{
	return fail("%s '%s': %s (%s)", what, path, strerror(errno),
		    errno_name(errno));
}

/* ===== argument parsing ===== */

static int usage_error;

static long long parse_num(const char *s)
{
	char *end;
	long long v;
	long long mult = 1;

	errno = 0;
	v = strtoll(s, &end, 0);
	if (end == s || errno) {
		usage_error = 1;
		return 0;
	}
	switch (*end) {
	case 'k':
	case 'K':
		mult = 1LL << 10;
		end++;
		break;
	case 'm':
	case 'M':
		mult = 1LL << 20;
		end++;
		break;
	case 'g':
	case 'G':
		mult = 1LL << 30;
		end++;
		break;
	case 't':
	case 'T':
		mult = 1LL << 40;
		end++;
		break;
	}
	if (*end) {
		usage_error = 1;
		return 0;
	}
	return v * mult;
}

struct flag_name {
	const char *name;
	int value;
};

static const struct flag_name open_flags[] = {
	{ "rdonly", O_RDONLY },	      { "wronly", O_WRONLY },
	{ "rdwr", O_RDWR },	      { "creat", O_CREAT },
	{ "excl", O_EXCL },	      { "trunc", O_TRUNC },
	{ "append", O_APPEND },	      { "direct", O_DIRECT },
	{ "directory", O_DIRECTORY }, { "nofollow", O_NOFOLLOW },
	{ "sync", O_SYNC },	      { "dsync", O_DSYNC },
	{ "noatime", O_NOATIME },     { "path", O_PATH },
	{ "tmpfile", O_TMPFILE },     { NULL, 0 }
};

static const struct flag_name rename_flags[] = {
	{ "none", 0 },
	{ "noreplace", RENAME_NOREPLACE },
	{ "exchange", RENAME_EXCHANGE },
	{ NULL, 0 }
};

static const struct flag_name falloc_flags[] = {
	{ "0", 0 },
	{ "keep", FALLOC_FL_KEEP_SIZE },
	{ "punch", FALLOC_FL_PUNCH_HOLE },
	{ "zero", FALLOC_FL_ZERO_RANGE },
	{ NULL, 0 }
};

static const struct flag_name xattr_flags[] = { { "0", 0 },
						{ "create", XATTR_CREATE },
						{ "replace", XATTR_REPLACE },
						{ NULL, 0 } };

/* parse "a,b,c" against a table; the words OR together */
static int parse_flags(const struct flag_name *tab, const char *s)
{
	char buf[256];
	char *save = NULL;
	char *w;
	int v = 0;

	if (strlen(s) >= sizeof(buf)) {
		usage_error = 1;
		return 0;
	}
	strcpy(buf, s);
	for (w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		const struct flag_name *f;

		for (f = tab; f->name; f++)
			if (strcmp(f->name, w) == 0)
				break;
		if (!f->name) {
			fprintf(stderr, "tfs_sys: unknown flag '%s'\n", w);
			usage_error = 1;
			return 0;
		}
		v |= f->value;
	}
	return v;
}

/* "SEC.NSEC", "SEC", "now" or "omit" */
static struct timespec parse_time(const char *s)
{
	struct timespec ts = { 0, 0 };
	char *end;

	if (strcmp(s, "now") == 0) {
		ts.tv_nsec = UTIME_NOW;
		return ts;
	}
	if (strcmp(s, "omit") == 0) {
		ts.tv_nsec = UTIME_OMIT;
		return ts;
	}
	errno = 0;
	ts.tv_sec = strtoll(s, &end, 10);
	if (end == s || errno)
		usage_error = 1;
	if (*end == '.') {
		const char *p = end + 1;
		long ns = 0;
		int digits = 0;

		for (; *p >= '0' && *p <= '9' && digits < 9; p++, digits++)
			ns = ns * 10 + (*p - '0');
		for (; digits < 9; digits++)
			ns *= 10;
		ts.tv_nsec = ns;
		end = (char *)p;
	}
	if (*end)
		usage_error = 1;
	return ts;
}

/* ===== data pattern ===== */

/* fill buf with the pattern bytes of file range [off, off+len) */
static void fill_pattern(unsigned char *buf, uint64_t off, size_t len,
			 uint64_t seed)
{
	size_t i = 0;

	while (i < len) {
		uint64_t o = off + i;
		uint64_t w = tfs_pattern_word(
		    (o >> 3) ^ (seed * 0x2545f4914f6cdd1dULL), 0);
		unsigned k;

		for (k = o & 7; k < 8 && i < len; k++, i++)
			buf[i] = (unsigned char)(w >> (8 * k));
	}
}

/* first offset where buf differs from the pattern, or -1 */
static long long check_pattern(const unsigned char *buf, uint64_t off,
			       size_t len, uint64_t seed)
{
	unsigned char tmp[4096];
	size_t done = 0;

	while (done < len) {
		size_t n = len - done < sizeof(tmp) ? len - done : sizeof(tmp);
		size_t i;

		fill_pattern(tmp, off + done, n, seed);
		for (i = 0; i < n; i++)
			if (tmp[i] != buf[done + i])
				return (long long)(off + done + i);
		done += n;
	}
	return -1;
}

/* ===== full reads and writes ===== */

static int pwrite_all(int fd, const void *buf, size_t len, off_t off)
{
	const char *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0) {
			errno = EIO;
			return -1;
		}
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

/* read until len bytes or EOF; returns the count or -1 */
static ssize_t pread_all(int fd, void *buf, size_t len, off_t off)
{
	char *p = buf;
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, p + got, len - got, off + (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/* verify [0, size) of fd against the pattern and st_size == size */
static int verify_file(int fd, const char *path, uint64_t size, uint64_t seed)
{
	unsigned char *buf = malloc(IO_CHUNK);
	struct stat st;
	uint64_t off;
	int rc = 0;

	if (!buf)
		return fail("out of memory");
	if (fstat(fd, &st) < 0) {
		rc = syserr("fstat", path);
		goto out;
	}
	if ((uint64_t)st.st_size != size) {
		rc = fail("'%s': st_size %lld, expected %" PRIu64, path,
			  (long long)st.st_size, size);
		goto out;
	}
	for (off = 0; off < size; off += IO_CHUNK) {
		size_t n = size - off < IO_CHUNK ? size - off : IO_CHUNK;
		ssize_t got = pread_all(fd, buf, n, (off_t)off);
		long long bad;

		if (got < 0) {
			rc = syserr("pread", path);
			goto out;
		}
		if ((size_t)got != n) {
			rc = fail("'%s': short read %zd of %zu at %" PRIu64,
				  path, got, n, off);
			goto out;
		}
		bad = check_pattern(buf, off, n, seed);
		if (bad >= 0) {
			rc = fail("'%s': wrong data at offset %lld", path, bad);
			goto out;
		}
	}
out:
	free(buf);
	return rc;
}

/* ===== probes ===== */

static int cmd_open(int argc, char **argv)
{
	int flags;
	mode_t mode = 0644;
	int fd;

	if (argc < 2 || argc > 3)
		return 2;
	flags = parse_flags(open_flags, argv[1]);
	if (argc == 3)
		mode = (mode_t)parse_num(argv[2]);
	if (usage_error)
		return 2;
	fd = open(argv[0], flags, mode);
	if (fd >= 0)
		close(fd);
	return report(fd);
}

static int cmd_mkdir(int argc, char **argv)
{
	mode_t mode = 0755;

	if (argc < 1 || argc > 2)
		return 2;
	if (argc == 2)
		mode = (mode_t)parse_num(argv[1]);
	if (usage_error)
		return 2;
	return report(mkdir(argv[0], mode));
}

static int cmd_rmdir(int argc, char **argv)
{
	if (argc != 1)
		return 2;
	return report(rmdir(argv[0]));
}

static int cmd_unlink(int argc, char **argv)
{
	if (argc != 1)
		return 2;
	return report(unlink(argv[0]));
}

static int cmd_rename(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	return report(rename(argv[0], argv[1]));
}

static int cmd_rename2(int argc, char **argv)
{
	unsigned flags;

	if (argc != 3)
		return 2;
	flags = (unsigned)parse_flags(rename_flags, argv[0]);
	if (usage_error)
		return 2;
	return report(renameat2(AT_FDCWD, argv[1], AT_FDCWD, argv[2], flags));
}

static int cmd_link(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	return report(link(argv[0], argv[1]));
}

static int cmd_symlink(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	return report(symlink(argv[0], argv[1]));
}

static int cmd_truncate(int argc, char **argv)
{
	long long len;

	if (argc != 2)
		return 2;
	len = parse_num(argv[1]);
	if (usage_error)
		return 2;
	return report(truncate(argv[0], (off_t)len));
}

static int cmd_ftruncate(int argc, char **argv)
{
	long long len;
	int fd;
	int rc;

	if (argc != 2)
		return 2;
	len = parse_num(argv[1]);
	if (usage_error)
		return 2;
	fd = open(argv[0], O_WRONLY);
	if (fd < 0)
		return report(fd);
	rc = ftruncate(fd, (off_t)len);
	if (rc < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return report(rc);
	}
	return report(close(fd));
}

static int cmd_fallocate(int argc, char **argv)
{
	int mode;
	long long off;
	long long len;
	int fd;
	int rc;

	if (argc != 4)
		return 2;
	mode = parse_flags(falloc_flags, argv[1]);
	off = parse_num(argv[2]);
	len = parse_num(argv[3]);
	if (usage_error)
		return 2;
	fd = open(argv[0], O_RDWR);
	if (fd < 0)
		return report(fd);
	rc = fallocate(fd, mode, (off_t)off, (off_t)len);
	if (rc < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return report(rc);
	}
	return report(close(fd));
}

/* pwrite LEN bytes of BYTE (default 0x5a) at OFF, creating the file */
static int cmd_pwrite(int argc, char **argv)
{
	long long off;
	long long len;
	int byte = 0x5a;
	char *buf;
	int fd;
	int rc;

	if (argc < 3 || argc > 4)
		return 2;
	off = parse_num(argv[1]);
	len = parse_num(argv[2]);
	if (argc == 4)
		byte = (int)parse_num(argv[3]);
	if (usage_error || len < 0 || len > (1LL << 30))
		return 2;
	buf = malloc((size_t)len + 1);
	if (!buf)
		return fail("out of memory");
	memset(buf, byte, (size_t)len);
	fd = open(argv[0], O_WRONLY | O_CREAT, 0644);
	if (fd < 0) {
		free(buf);
		return report(fd);
	}
	rc = pwrite_all(fd, buf, (size_t)len, (off_t)off);
	free(buf);
	if (rc < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return report(rc);
	}
	return report(close(fd));
}

static int cmd_setxattr(int argc, char **argv)
{
	int flags = 0;

	if (argc < 3 || argc > 4)
		return 2;
	if (argc == 4)
		flags = parse_flags(xattr_flags, argv[3]);
	if (usage_error)
		return 2;
	return report(
	    setxattr(argv[0], argv[1], argv[2], strlen(argv[2]), flags));
}

/* getxattr into a buffer of BUFSIZE bytes (default 64 KiB) */
static int cmd_getxattr(int argc, char **argv)
{
	static char buf[65536];
	long long size = sizeof(buf);
	ssize_t n;

	if (argc < 2 || argc > 3)
		return 2;
	if (argc == 3)
		size = parse_num(argv[2]);
	if (usage_error || size < 1 || size > (long long)sizeof(buf))
		return 2;
	n = getxattr(argv[0], argv[1], buf, (size_t)size);
	return report(n < 0 ? -1 : 0);
}

/* print the value size a zero-size getxattr reports, or the errno name */
static int cmd_xattr_size(int argc, char **argv)
{
	ssize_t n;

	if (argc != 2)
		return 2;
	n = getxattr(argv[0], argv[1], NULL, 0);
	if (n < 0)
		return report(-1);
	printf("%zd\n", n);
	return 0;
}

/* print the names listxattr returns, one a line, or the errno name */
static int cmd_listxattr(int argc, char **argv)
{
	static char buf[65536];
	ssize_t n;
	ssize_t i;

	if (argc != 1)
		return 2;
	n = listxattr(argv[0], buf, sizeof(buf));
	if (n < 0)
		return report(-1);
	for (i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1)
		puts(buf + i);
	return 0;
}

static int cmd_removexattr(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	return report(removexattr(argv[0], argv[1]));
}

static int cmd_utimens(int argc, char **argv)
{
	struct timespec ts[2];

	if (argc != 3)
		return 2;
	ts[0] = parse_time(argv[1]);
	ts[1] = parse_time(argv[2]);
	if (usage_error)
		return 2;
	return report(utimensat(AT_FDCWD, argv[0], ts, 0));
}

static int cmd_chmod(int argc, char **argv)
{
	mode_t mode;

	if (argc != 2)
		return 2;
	mode = (mode_t)parse_num(argv[1]);
	if (usage_error)
		return 2;
	return report(chmod(argv[0], mode));
}

static int cmd_chown(int argc, char **argv)
{
	long long uid;
	long long gid;

	if (argc != 3)
		return 2;
	uid = parse_num(argv[1]);
	gid = parse_num(argv[2]);
	if (usage_error)
		return 2;
	return report(chown(argv[0], (uid_t)uid, (gid_t)gid));
}

/* ===== checks ===== */

struct pw_job {
	int fd;
	const char *path;
	unsigned thread;
	unsigned nthreads;
	size_t chunk;
	uint64_t nchunks;
	uint64_t seed;
	int failed;
};

/* thread t writes chunks t, t+N, t+2N...: neighbours race on shared blocks */
static void *pw_thread(void *arg)
{
	struct pw_job *j = arg;
	unsigned char *buf = malloc(j->chunk);
	uint64_t c;

	if (!buf) {
		j->failed = fail("out of memory");
		return NULL;
	}
	for (c = j->thread; c < j->nchunks; c += j->nthreads) {
		uint64_t off = c * j->chunk;

		fill_pattern(buf, off, j->chunk, j->seed);
		if (pwrite_all(j->fd, buf, j->chunk, (off_t)off) < 0) {
			j->failed = syserr("pwrite", j->path);
			break;
		}
	}
	free(buf);
	return NULL;
}

static int cmd_pwrite_threads(int argc, char **argv)
{
	const char *path;
	long long nthreads;
	long long chunk;
	long long nchunks;
	uint64_t seed = 1;
	struct pw_job *jobs;
	pthread_t *tids;
	int fd;
	int rc = 0;
	long long t;

	if (argc < 4 || argc > 5)
		return 2;
	path = argv[0];
	nthreads = parse_num(argv[1]);
	chunk = parse_num(argv[2]);
	nchunks = parse_num(argv[3]);
	if (argc == 5)
		seed = (uint64_t)parse_num(argv[4]);
	if (usage_error || nthreads < 1 || nthreads > 256 || chunk < 1 ||
	    chunk > (1LL << 30) || nchunks < 1)
		return 2;

	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return syserr("open", path);
	jobs = calloc((size_t)nthreads, sizeof(*jobs));
	tids = calloc((size_t)nthreads, sizeof(*tids));
	if (!jobs || !tids) {
		rc = fail("out of memory");
		goto out;
	}
	for (t = 0; t < nthreads; t++) {
		jobs[t] = (struct pw_job){ fd,
					   path,
					   (unsigned)t,
					   (unsigned)nthreads,
					   (size_t)chunk,
					   (uint64_t)nchunks,
					   seed,
					   0 };
		if (pthread_create(&tids[t], NULL, pw_thread, &jobs[t])) {
			rc = fail("pthread_create failed");
			nthreads = t;
			break;
		}
	}
	for (t = 0; t < nthreads; t++) {
		pthread_join(tids[t], NULL);
		rc |= jobs[t].failed;
	}
	if (rc)
		goto out;
	if (fsync(fd) < 0) {
		rc = syserr("fsync", path);
		goto out;
	}
	rc = verify_file(fd, path, (uint64_t)chunk * (uint64_t)nchunks, seed);
	if (rc)
		goto out;
	/* and through a new open file description */
	if (close(fd) < 0) {
		fd = -1;
		rc = syserr("close", path);
		goto out;
	}
	fd = open(path, O_RDONLY);
	if (fd < 0) {
		rc = syserr("reopen", path);
		goto out;
	}
	rc = verify_file(fd, path, (uint64_t)chunk * (uint64_t)nchunks, seed);
out:
	if (fd >= 0)
		close(fd);
	free(jobs);
	free(tids);
	if (rc == 0)
		puts("OK");
	return rc ? 1 : 0;
}

struct ap_job {
	const char *path;
	unsigned thread;
	size_t recsize;
	long long nrecs;
	int failed;
};

/* record r of thread t: "t=TT r=RRRRRR " then fill byte 'a'+t%26 */
static void make_record(char *buf, size_t recsize, unsigned t, long long r)
{
	char head[32];
	int n = snprintf(head, sizeof(head), "t=%02u r=%06lld ", t, r);

	memset(buf, 'a' + (int)(t % 26), recsize);
	memcpy(buf, head, (size_t)n < recsize ? (size_t)n : recsize);
	buf[recsize - 1] = '\n';
}

static void *ap_thread(void *arg)
{
	struct ap_job *j = arg;
	char *buf = malloc(j->recsize);
	long long r;
	int fd;

	if (!buf) {
		j->failed = fail("out of memory");
		return NULL;
	}
	fd = open(j->path, O_WRONLY | O_APPEND);
	if (fd < 0) {
		j->failed = syserr("open", j->path);
		free(buf);
		return NULL;
	}
	for (r = 0; r < j->nrecs; r++) {
		ssize_t n;

		make_record(buf, j->recsize, j->thread, r);
		n = write(fd, buf, j->recsize);
		if (n < 0) {
			j->failed = syserr("write", j->path);
			break;
		}
		if ((size_t)n != j->recsize) {
			j->failed =
			    fail("short append %zd of %zu", n, j->recsize);
			break;
		}
	}
	if (close(fd) < 0)
		j->failed = syserr("close", j->path);
	free(buf);
	return NULL;
}

/*
 * NTHREADS threads each open FILE with O_APPEND and append NRECS records of
 * RECSIZE bytes with single write() calls.  Every record must land whole,
 * none overwritten, each thread's records in order.
 */
static int cmd_append_threads(int argc, char **argv)
{
	const char *path;
	long long nthreads;
	long long recsize;
	long long nrecs;
	struct ap_job *jobs = NULL;
	pthread_t *tids = NULL;
	long long *next = NULL;
	char *data = NULL;
	char *want = NULL;
	uint64_t total;
	struct stat st;
	ssize_t got;
	int fd = -1;
	int rc = 0;
	long long t;
	uint64_t i;

	if (argc != 4)
		return 2;
	path = argv[0];
	nthreads = parse_num(argv[1]);
	recsize = parse_num(argv[2]);
	nrecs = parse_num(argv[3]);
	if (usage_error || nthreads < 1 || nthreads > 26 || recsize < 16 ||
	    recsize > (1 << 20) || nrecs < 1 || nrecs > 999999)
		return 2;
	total = (uint64_t)nthreads * (uint64_t)recsize * (uint64_t)nrecs;
	if (total > (1ULL << 30))
		return 2;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return syserr("open", path);
	close(fd);
	fd = -1;
	jobs = calloc((size_t)nthreads, sizeof(*jobs));
	tids = calloc((size_t)nthreads, sizeof(*tids));
	next = calloc((size_t)nthreads, sizeof(*next));
	data = malloc(total);
	want = malloc((size_t)recsize);
	if (!jobs || !tids || !next || !data || !want) {
		rc = fail("out of memory");
		goto out;
	}
	for (t = 0; t < nthreads; t++) {
		jobs[t] = (struct ap_job){ path, (unsigned)t, (size_t)recsize,
					   nrecs, 0 };
		if (pthread_create(&tids[t], NULL, ap_thread, &jobs[t])) {
			rc = fail("pthread_create failed");
			nthreads = t;
			break;
		}
	}
	for (t = 0; t < nthreads; t++) {
		pthread_join(tids[t], NULL);
		rc |= jobs[t].failed;
	}
	if (rc)
		goto out;

	fd = open(path, O_RDONLY);
	if (fd < 0) {
		rc = syserr("open", path);
		goto out;
	}
	if (fstat(fd, &st) < 0) {
		rc = syserr("fstat", path);
		goto out;
	}
	if ((uint64_t)st.st_size != total) {
		rc = fail("'%s': st_size %lld after appends, expected %" PRIu64,
			  path, (long long)st.st_size, total);
		goto out;
	}
	got = pread_all(fd, data, total, 0);
	if (got < 0 || (uint64_t)got != total) {
		rc = fail("'%s': read %zd of %" PRIu64, path, got, total);
		goto out;
	}
	for (i = 0; i < total; i += (uint64_t)recsize) {
		unsigned th;
		long long r;

		if (sscanf(data + i, "t=%02u r=%06lld ", &th, &r) != 2 ||
		    th >= nthreads) {
			rc = fail("'%s': no record header at offset %" PRIu64,
				  path, i);
			goto out;
		}
		if (r != next[th]) {
			rc = fail("'%s': offset %" PRIu64 " holds thread %u "
				  "record %lld, expected record %lld",
				  path, i, th, r, next[th]);
			goto out;
		}
		make_record(want, (size_t)recsize, th, r);
		if (memcmp(want, data + i, (size_t)recsize)) {
			rc = fail("'%s': record at offset %" PRIu64
				  " is torn or overwritten",
				  path, i);
			goto out;
		}
		next[th]++;
	}
out:
	if (fd >= 0)
		close(fd);
	free(jobs);
	free(tids);
	free(next);
	free(data);
	free(want);
	if (rc == 0)
		puts("OK");
	return rc ? 1 : 0;
}

/*
 * Write SIZE bytes (a multiple of 4096) with O_DIRECT from aligned buffers,
 * read them back with O_DIRECT and buffered, then check a buffered overwrite
 * is seen by an O_DIRECT read.
 */
static int cmd_odirect_rw(int argc, char **argv)
{
	const char *path;
	long long size;
	unsigned char *buf = NULL;
	unsigned char *pat = NULL;
	long long off;
	int fd = -1;
	int bfd = -1;
	int rc = 0;

	if (argc != 2)
		return 2;
	path = argv[0];
	size = parse_num(argv[1]);
	if (usage_error || size <= 0 || size % ALIGN || size > (1LL << 32))
		return 2;
	if (posix_memalign((void **)&buf, ALIGN, IO_CHUNK) ||
	    posix_memalign((void **)&pat, ALIGN, ALIGN)) {
		rc = fail("out of memory");
		goto out;
	}
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0644);
	if (fd < 0) {
		rc = syserr("open O_DIRECT", path);
		goto out;
	}
	for (off = 0; off < size; off += IO_CHUNK) {
		size_t n =
		    (size_t)(size - off < IO_CHUNK ? size - off : IO_CHUNK);
		ssize_t w;

		fill_pattern(buf, (uint64_t)off, n, 7);
		w = pwrite(fd, buf, n, (off_t)off);
		if (w < 0) {
			rc = syserr("O_DIRECT pwrite", path);
			goto out;
		}
		if ((size_t)w != n) {
			rc = fail("'%s': O_DIRECT pwrite wrote %zd of %zu",
				  path, w, n);
			goto out;
		}
	}
	for (off = 0; off < size; off += IO_CHUNK) {
		size_t n =
		    (size_t)(size - off < IO_CHUNK ? size - off : IO_CHUNK);
		ssize_t r;
		long long bad;

		memset(buf, 0, n);
		r = pread(fd, buf, n, (off_t)off);
		if (r < 0) {
			rc = syserr("O_DIRECT pread", path);
			goto out;
		}
		if ((size_t)r != n) {
			rc = fail("'%s': O_DIRECT pread read %zd of %zu", path,
				  r, n);
			goto out;
		}
		bad = check_pattern(buf, (uint64_t)off, n, 7);
		if (bad >= 0) {
			rc = fail("'%s': O_DIRECT read back wrong data at %lld",
				  path, bad);
			goto out;
		}
	}
	bfd = open(path, O_RDWR);
	if (bfd < 0) {
		rc = syserr("open buffered", path);
		goto out;
	}
	rc = verify_file(bfd, path, (uint64_t)size, 7);
	if (rc)
		goto out;

	/* buffered overwrite of the last block, then O_DIRECT read of it */
	fill_pattern(pat, 0, ALIGN, 99);
	if (pwrite_all(bfd, pat, ALIGN, (off_t)(size - ALIGN)) < 0) {
		rc = syserr("buffered pwrite", path);
		goto out;
	}
	memset(buf, 0, ALIGN);
	if (pread(fd, buf, ALIGN, (off_t)(size - ALIGN)) != ALIGN) {
		rc = syserr("O_DIRECT pread after buffered write", path);
		goto out;
	}
	if (memcmp(buf, pat, ALIGN)) {
		rc = fail("'%s': O_DIRECT read does not see a buffered write "
			  "made just before",
			  path);
		goto out;
	}
out:
	if (fd >= 0 && close(fd) < 0 && !rc)
		rc = syserr("close", path);
	if (bfd >= 0 && close(bfd) < 0 && !rc)
		rc = syserr("close", path);
	free(buf);
	free(pat);
	if (rc == 0)
		puts("OK");
	return rc ? 1 : 0;
}

/*
 * Create FILE, write SIZE pattern bytes, open a second fd, unlink the name.
 * Both fds must still work: fstat says nlink 0, the data reads back, the
 * file grows when written; after the first close the second fd still reads
 * everything, because only the last close may free the file.
 */
static int cmd_unlink_open(int argc, char **argv)
{
	const char *path;
	long long size = (1 << 20) + 123;
	unsigned char *buf = NULL;
	struct stat st;
	int fd = -1;
	int fd2 = -1;
	int rc = 0;

	if (argc < 1 || argc > 2)
		return 2;
	path = argv[0];
	if (argc == 2)
		size = parse_num(argv[1]);
	if (usage_error || size < 1 || size > (1LL << 30))
		return 2;
	buf = malloc((size_t)size + ALIGN);
	if (!buf)
		return fail("out of memory");

	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0644);
	if (fd < 0) {
		rc = syserr("create", path);
		goto out;
	}
	fill_pattern(buf, 0, (size_t)size, 3);
	if (pwrite_all(fd, buf, (size_t)size, 0) < 0) {
		rc = syserr("pwrite", path);
		goto out;
	}
	if (fsync(fd) < 0) {
		rc = syserr("fsync", path);
		goto out;
	}
	fd2 = open(path, O_RDONLY);
	if (fd2 < 0) {
		rc = syserr("open second fd", path);
		goto out;
	}
	if (unlink(path) < 0) {
		rc = syserr("unlink", path);
		goto out;
	}
	if (stat(path, &st) == 0 || errno != ENOENT) {
		rc = fail("'%s': stat after unlink gave %s, expected ENOENT",
			  path, errno_name(errno));
		goto out;
	}
	if (fstat(fd, &st) < 0) {
		rc = syserr("fstat after unlink", path);
		goto out;
	}
	if (st.st_nlink != 0) {
		rc = fail("'%s': st_nlink %ju after unlink, expected 0", path,
			  (uintmax_t)st.st_nlink);
		goto out;
	}
	rc = verify_file(fd, path, (uint64_t)size, 3);
	if (rc)
		goto out;

	/* an unlinked file is still a file: it can grow and be read */
	fill_pattern(buf, (uint64_t)size, ALIGN, 3);
	if (pwrite_all(fd, buf, ALIGN, (off_t)size) < 0) {
		rc = syserr("pwrite after unlink", path);
		goto out;
	}
	size += ALIGN;
	rc = verify_file(fd, path, (uint64_t)size, 3);
	if (rc)
		goto out;
	if (close(fd) < 0) {
		fd = -1;
		rc = syserr("close first fd", path);
		goto out;
	}
	fd = -1;

	/* the release of the first fd must not have freed the file */
	rc = verify_file(fd2, path, (uint64_t)size, 3);
	if (rc)
		goto out;
	if (fstat(fd2, &st) < 0 || st.st_nlink != 0) {
		rc = fail("'%s': second fd fstat failed or nlink != 0", path);
		goto out;
	}
out:
	if (fd >= 0)
		close(fd);
	if (fd2 >= 0 && close(fd2) < 0 && !rc)
		rc = syserr("close second fd", path);
	free(buf);
	if (rc == 0)
		puts("OK");
	return rc ? 1 : 0;
}

/* reads at and beyond EOF of an existing file return short or 0 */
static int cmd_readpast(int argc, char **argv)
{
	const char *path;
	unsigned char *all = NULL;
	unsigned char buf[8192];
	struct stat st;
	off_t size;
	ssize_t n;
	int fd;
	int rc = 0;

	if (argc != 1)
		return 2;
	path = argv[0];
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return syserr("open", path);
	if (fstat(fd, &st) < 0) {
		rc = syserr("fstat", path);
		goto out;
	}
	size = st.st_size;
	if (size < 10 || size > (1 << 26)) {
		rc =
		    fail("'%s': readpast needs a file of 10 B to 64 MiB", path);
		goto out;
	}
	all = malloc((size_t)size + 1);
	if (!all) {
		rc = fail("out of memory");
		goto out;
	}
	/* a read larger than the file returns the whole file, then 0 */
	n = pread_all(fd, all, (size_t)size + 1, 0);
	if (n != size) {
		rc = fail("'%s': reading with a larger buffer gave %zd, "
			  "expected %lld",
			  path, n, (long long)size);
		goto out;
	}
	n = pread(fd, buf, sizeof(buf), size);
	if (n != 0) {
		rc = fail("'%s': pread at EOF returned %zd, expected 0", path,
			  n);
		goto out;
	}
	n = pread(fd, buf, sizeof(buf), size + 12345);
	if (n != 0) {
		rc = fail("'%s': pread past EOF returned %zd, expected 0", path,
			  n);
		goto out;
	}
	n = pread(fd, buf, sizeof(buf), (off_t)1 << 40);
	if (n != 0) {
		rc = fail("'%s': pread at 1 TiB returned %zd, expected 0", path,
			  n);
		goto out;
	}
	n = pread(fd, buf, 100, size - 10);
	if (n != 10 || memcmp(buf, all + size - 10, 10)) {
		rc = fail("'%s': pread of 100 at EOF-10 returned %zd bytes "
			  "(or wrong ones), expected the last 10",
			  path, n);
		goto out;
	}
	if (lseek(fd, 0, SEEK_END) != size) {
		rc = fail("'%s': lseek SEEK_END is not st_size", path);
		goto out;
	}
	n = read(fd, buf, sizeof(buf));
	if (n != 0) {
		rc = fail("'%s': read at SEEK_END returned %zd, expected 0",
			  path, n);
		goto out;
	}
	if (lseek(fd, size - 3, SEEK_SET) != size - 3) {
		rc = syserr("lseek", path);
		goto out;
	}
	n = read(fd, buf, sizeof(buf));
	if (n != 3 || memcmp(buf, all + size - 3, 3)) {
		rc = fail("'%s': read at EOF-3 returned %zd, expected 3", path,
			  n);
		goto out;
	}
	n = read(fd, buf, sizeof(buf));
	if (n != 0) {
		rc = fail("'%s': read after the last byte returned %zd", path,
			  n);
		goto out;
	}
out:
	close(fd);
	free(all);
	if (rc == 0)
		puts("OK");
	return rc ? 1 : 0;
}

/*
 * Create FILE of SIZE with ftruncate, fill it through a shared writable
 * mapping, msync, and check pread sees the bytes; then a pwrite must show
 * through a read-only mapping.
 */
static int cmd_mmap_rw(int argc, char **argv)
{
	const char *path;
	long long size;
	unsigned char *map = MAP_FAILED;
	unsigned char pat[ALIGN];
	long long bad;
	int fd = -1;
	int rc = 0;

	if (argc != 2)
		return 2;
	path = argv[0];
	size = parse_num(argv[1]);
	if (usage_error || size < 1 || size > (1LL << 30))
		return 2;
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return syserr("open", path);
	if (ftruncate(fd, (off_t)size) < 0) {
		rc = syserr("ftruncate", path);
		goto out;
	}
	map =
	    mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		rc = syserr("mmap MAP_SHARED", path);
		goto out;
	}
	fill_pattern(map, 0, (size_t)size, 11);
	if (msync(map, (size_t)size, MS_SYNC) < 0) {
		rc = syserr("msync", path);
		goto out;
	}
	munmap(map, (size_t)size);
	map = MAP_FAILED;
	if (fsync(fd) < 0) {
		rc = syserr("fsync", path);
		goto out;
	}
	rc = verify_file(fd, path, (uint64_t)size, 11);
	if (rc)
		goto out;
	close(fd);

	fd = open(path, O_RDWR);
	if (fd < 0) {
		rc = syserr("reopen", path);
		goto out;
	}
	map = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		rc = syserr("mmap PROT_READ", path);
		goto out;
	}
	bad = check_pattern(map, 0, (size_t)size, 11);
	if (bad >= 0) {
		rc = fail("'%s': read-only mapping differs at %lld", path, bad);
		goto out;
	}
	fill_pattern(pat, 0, sizeof(pat), 12);
	if (pwrite_all(fd, pat, size < ALIGN ? (size_t)size : ALIGN, 0) < 0) {
		rc = syserr("pwrite", path);
		goto out;
	}
	if (memcmp(map, pat, size < ALIGN ? (size_t)size : ALIGN)) {
		rc = fail("'%s': a pwrite does not show through a shared "
			  "mapping",
			  path);
		goto out;
	}
out:
	if (map != MAP_FAILED)
		munmap(map, (size_t)size);
	if (fd >= 0)
		close(fd);
	if (rc == 0)
		puts("OK");
	return rc ? 1 : 0;
}

/* ===== generators ===== */

static int cmd_pattern(int argc, char **argv)
{
	long long size;
	uint64_t seed = 1;
	unsigned char *buf;
	long long off;

	if (argc < 1 || argc > 2)
		return 2;
	size = parse_num(argv[0]);
	if (argc == 2)
		seed = (uint64_t)parse_num(argv[1]);
	if (usage_error || size < 0)
		return 2;
	buf = malloc(IO_CHUNK);
	if (!buf)
		return fail("out of memory");
	for (off = 0; off < size; off += IO_CHUNK) {
		size_t n =
		    (size_t)(size - off < IO_CHUNK ? size - off : IO_CHUNK);

		fill_pattern(buf, (uint64_t)off, n, seed);
		if (fwrite(buf, 1, n, stdout) != n) {
			free(buf);
			return fail("writing the pattern to stdout failed");
		}
	}
	free(buf);
	if (fflush(stdout) != 0)
		return fail("writing the pattern to stdout failed");
	return 0;
}

/* entry names: PREFIX followed by the index in six digits, e.g. e000042 */
static int entry_name(char *buf, size_t len, const char *prefix, long long i)
{
	int n = snprintf(buf, len, "%s%06lld", prefix, i);

	return n < 0 || (size_t)n >= len ? -1 : 0;
}

static int cmd_create_many(int argc, char **argv)
{
	const char *prefix = "e";
	long long count;
	char name[NAME_MAX + 1];
	long long i;
	int dfd;

	if (argc < 2 || argc > 3)
		return 2;
	count = parse_num(argv[1]);
	if (argc == 3)
		prefix = argv[2];
	if (usage_error || count < 0 ||
	    entry_name(name, sizeof(name), prefix, 0))
		return 2;
	dfd = open(argv[0], O_RDONLY | O_DIRECTORY);
	if (dfd < 0)
		return syserr("open directory", argv[0]);
	for (i = 0; i < count; i++) {
		int fd;

		entry_name(name, sizeof(name), prefix, i);
		fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0) {
			close(dfd);
			return syserr("create", name);
		}
		if (close(fd) < 0) {
			close(dfd);
			return syserr("close", name);
		}
	}
	close(dfd);
	puts("OK");
	return 0;
}

static int cmd_unlink_many(int argc, char **argv)
{
	const char *prefix = "e";
	long long count;
	char name[NAME_MAX + 1];
	long long i;
	int dfd;

	if (argc < 2 || argc > 3)
		return 2;
	count = parse_num(argv[1]);
	if (argc == 3)
		prefix = argv[2];
	if (usage_error || count < 0 ||
	    entry_name(name, sizeof(name), prefix, 0))
		return 2;
	dfd = open(argv[0], O_RDONLY | O_DIRECTORY);
	if (dfd < 0)
		return syserr("open directory", argv[0]);
	for (i = 0; i < count; i++) {
		entry_name(name, sizeof(name), prefix, i);
		if (unlinkat(dfd, name, 0) < 0) {
			close(dfd);
			return syserr("unlink", name);
		}
	}
	close(dfd);
	puts("OK");
	return 0;
}

/*
 * Read DIR and unlink every entry as readdir returns it, the way rm -r
 * does.  Removing entries already returned must not make readdir skip any
 * entry not yet returned: afterwards DIR must be empty.  Prints the number
 * of entries removed.
 */
static int cmd_readdir_unlink(int argc, char **argv)
{
	struct dirent *de;
	long long removed = 0;
	long long again = 0;
	DIR *d;
	int rc = 0;

	if (argc != 1)
		return 2;
	d = opendir(argv[0]);
	if (!d)
		return syserr("opendir", argv[0]);
	for (;;) {
		errno = 0;
		de = readdir(d);
		if (!de)
			break;
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (unlinkat(dirfd(d), de->d_name, 0) == 0) {
			removed++;
		} else if (errno == ENOENT) {
			/* POSIX leaves open whether removed names reappear */
			again++;
		} else {
			rc = syserr("unlink", de->d_name);
			break;
		}
	}
	if (!de && errno)
		rc = syserr("readdir", argv[0]);
	closedir(d);
	if (again)
		fprintf(stderr,
			"tfs_sys: readdir returned %lld removed names "
			"again\n",
			again);
	if (rc == 0)
		printf("%lld\n", removed);
	return rc ? 1 : 0;
}

/* ===== dispatch ===== */

static const struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *usage;
} commands[] = {
	{ "open", cmd_open, "PATH FLAG[,FLAG...] [MODE]" },
	{ "mkdir", cmd_mkdir, "PATH [MODE]" },
	{ "rmdir", cmd_rmdir, "PATH" },
	{ "unlink", cmd_unlink, "PATH" },
	{ "rename", cmd_rename, "OLD NEW" },
	{ "rename2", cmd_rename2, "none|noreplace|exchange OLD NEW" },
	{ "link", cmd_link, "OLD NEW" },
	{ "symlink", cmd_symlink, "TARGET LINKPATH" },
	{ "truncate", cmd_truncate, "PATH LENGTH" },
	{ "ftruncate", cmd_ftruncate, "PATH LENGTH" },
	{ "fallocate", cmd_fallocate, "PATH 0|keep,punch,zero OFFSET LENGTH" },
	{ "pwrite", cmd_pwrite, "PATH OFFSET LENGTH [BYTE]" },
	{ "setxattr", cmd_setxattr, "PATH NAME VALUE [create|replace]" },
	{ "getxattr", cmd_getxattr, "PATH NAME [BUFSIZE]" },
	{ "xattr-size", cmd_xattr_size, "PATH NAME" },
	{ "listxattr", cmd_listxattr, "PATH" },
	{ "removexattr", cmd_removexattr, "PATH NAME" },
	{ "utimens", cmd_utimens, "PATH ATIME MTIME (SEC[.NSEC]|now|omit)" },
	{ "chmod", cmd_chmod, "PATH MODE" },
	{ "chown", cmd_chown, "PATH UID GID" },
	{ "pwrite-threads", cmd_pwrite_threads,
	  "FILE NTHREADS CHUNK NCHUNKS [SEED]" },
	{ "append-threads", cmd_append_threads, "FILE NTHREADS RECSIZE NRECS" },
	{ "odirect-rw", cmd_odirect_rw, "FILE SIZE" },
	{ "unlink-open", cmd_unlink_open, "FILE [SIZE]" },
	{ "readpast", cmd_readpast, "FILE" },
	{ "mmap-rw", cmd_mmap_rw, "FILE SIZE" },
	{ "pattern", cmd_pattern, "SIZE [SEED]" },
	{ "create-many", cmd_create_many, "DIR COUNT [PREFIX]" },
	{ "unlink-many", cmd_unlink_many, "DIR COUNT [PREFIX]" },
	{ "readdir-unlink", cmd_readdir_unlink, "DIR" },
};

static void print_usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: tfs_sys COMMAND ARGS...\n");
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %s %s\n", commands[i].name, commands[i].usage);
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		print_usage(stderr);
		return 2;
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(argv[1], commands[i].name) == 0) {
			int rc = commands[i].fn(argc - 2, argv + 2);

			if (rc == 2)
				fprintf(stderr, "usage: tfs_sys %s %s\n",
					commands[i].name, commands[i].usage);
			return rc;
		}
	}
	fprintf(stderr, "tfs_sys: unknown command '%s'\n", argv[1]);
	print_usage(stderr);
	return 2;
}
