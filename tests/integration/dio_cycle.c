/*
 * dio_cycle.c: direct writes against readers of the page cache.  What
 * xfstests' generic/451 (aio-dio-cycle-write) does, in more ways.
 *
 *   dio_cycle FILE BYTES LOOPS MODE [READERS]
 *
 * FILE is filled with pattern 0.  Then LOOPS times: open FILE with
 * O_DIRECT, write all BYTES of it with pattern 1, 2, 1, 2, ... in one
 * request, close, and read it back through the page cache (a new
 * O_RDONLY descriptor, pread), through a descriptor held open since
 * before the first write, and through an O_DIRECT descriptor; each
 * must show the pattern just written.  Meanwhile READERS (default 2)
 * other processes read FILE through the page cache over and over, so
 * that the kernel holds its pages, read before the write landed.
 *
 * MODE is how the write is made:
 *   rdwr-aio     open O_RDWR|O_DIRECT, libaio io_submit (generic/451)
 *   wronly-aio   open O_WRONLY|O_DIRECT, libaio (DeepSpeed's swap writes)
 *   rdwr-sync    open O_RDWR|O_DIRECT, pwrite
 *   wronly-sync  open O_WRONLY|O_DIRECT, pwrite
 *   copy         copy_file_range from FILE.src (the pattern, buffered)
 *   punch        fallocate(PUNCH_HOLE) of the whole file: zeros
 *
 * The readers reopen the file only every 8 reads, so their descriptors
 * too span writes.
 *
 * Exit 0 when every read showed the new bytes; 1 with the loop, the
 * offset and the bytes found when one did not; 2 on a usage or system
 * error.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <libaio.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *path;
static size_t bytes;

static void die(const char *what)
{
	fprintf(stderr, "dio_cycle: %s: %s\n", what, strerror(errno));
	exit(2);
}

static unsigned char pattern(int i)
{
	return i == 0 ? 0x11 : i == 1 ? 0x55 : 0xaa;
}

static void check(const unsigned char *buf, size_t n, unsigned char want,
		  long loop, const char *how)
{
	for (size_t i = 0; i < n; i++) {
		if (buf[i] != want) {
			fprintf(stderr,
				"dio_cycle: loop %ld: %s read of %s found "
				"0x%02x at byte %zu, where the write put "
				"0x%02x: stale data\n",
				loop, how, path, buf[i], i, want);
			exit(1);
		}
	}
	if (n != bytes) {
		fprintf(stderr,
			"dio_cycle: loop %ld: %s read of %s: %zu "
			"bytes, not %zu\n",
			loop, how, path, n, bytes);
		exit(1);
	}
}

static void reader(void)
{
	unsigned char *buf = malloc(bytes);
	int fd = -1;

	if (!buf)
		die("malloc");
	for (long i = 0;; i++) {
		if (i % 8 == 0) {
			if (fd >= 0)
				close(fd);
			fd = open(path, O_RDONLY);
			if (fd < 0)
				die(path);
		}
		if (pread(fd, buf, bytes, 0) < 0)
			die("reader pread");
	}
}

static size_t read_all(int fd, unsigned char *buf)
{
	size_t n = 0;

	while (n < bytes) {
		ssize_t r = pread(fd, buf + n, bytes - n, (off_t)n);

		if (r < 0)
			die("pread");
		if (r == 0)
			break;
		n += (size_t)r;
	}
	return n;
}

static void write_aio(int fd, void *buf)
{
	io_context_t ctx = 0;
	struct iocb cb, *cbs[1] = { &cb };
	struct io_event ev;
	int rc = io_setup(1, &ctx);

	if (rc) {
		errno = -rc;
		die("io_setup");
	}
	io_prep_pwrite(&cb, fd, buf, bytes, 0);
	rc = io_submit(ctx, 1, cbs);
	if (rc != 1) {
		errno = rc < 0 ? -rc : EIO;
		die("io_submit");
	}
	rc = io_getevents(ctx, 1, 1, &ev, NULL);
	if (rc != 1) {
		errno = rc < 0 ? -rc : EIO;
		die("io_getevents");
	}
	if ((long)ev.res != (long)bytes) {
		errno = (long)ev.res < 0 ? (int)-(long)ev.res : EIO;
		die("aio write");
	}
	io_destroy(ctx);
}

int main(int argc, char **argv)
{
	unsigned char *buf[3], *cmp;
	char src[4096];
	const char *mode;
	long loops;
	int readers = 2, fd, held, want = 0;
	pid_t pids[16];

	if (argc < 5 || argc > 6) {
		fprintf(stderr, "usage: dio_cycle FILE BYTES LOOPS MODE "
				"[READERS]\n");
		return 2;
	}
	path = argv[1];
	bytes = strtoul(argv[2], NULL, 0);
	loops = strtol(argv[3], NULL, 0);
	mode = argv[4];
	if (argc == 6)
		readers = atoi(argv[5]);
	if (!bytes || bytes % 4096 || loops < 1 || readers < 0 ||
	    readers > 16) {
		fprintf(stderr, "dio_cycle: bad BYTES, LOOPS or READERS\n");
		return 2;
	}
	snprintf(src, sizeof(src), "%s.src", path);
	for (int i = 0; i < 3; i++) {
		if (posix_memalign((void **)&buf[i], 4096, bytes))
			die("posix_memalign");
		memset(buf[i], pattern(i), bytes);
	}
	if (posix_memalign((void **)&cmp, 4096, bytes))
		die("posix_memalign");

	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		die(path);
	if (pwrite(fd, buf[0], bytes, 0) != (ssize_t)bytes)
		die("pwrite of the first pattern");
	if (fsync(fd))
		die("fsync");
	close(fd);

	for (int r = 0; r < readers; r++) {
		pids[r] = fork();
		if (pids[r] < 0)
			die("fork");
		if (pids[r] == 0) {
			/* no reader outlives a failed run */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() == 1)
				_exit(0);
			reader();
			_exit(0);
		}
	}

	held = open(path, O_RDONLY);
	if (held < 0)
		die(path);
	for (long l = 1; l <= loops; l++) {
		int i = 1 + (int)(l % 2);
		int flags = O_DIRECT;

		if (!strncmp(mode, "rdwr", 4))
			flags |= O_RDWR;
		else if (!strncmp(mode, "wronly", 6))
			flags |= O_WRONLY;
		if (!strcmp(mode, "copy")) {
			int s = open(src, O_RDWR | O_CREAT | O_TRUNC, 0600);
			loff_t so = 0, d = 0;
			ssize_t n;

			if (s < 0)
				die(src);
			if (pwrite(s, buf[i], bytes, 0) != (ssize_t)bytes)
				die("pwrite of the copy's source");
			close(s);
			s = open(src, O_RDONLY);
			fd = open(path, O_WRONLY);
			if (s < 0 || fd < 0)
				die("open for the copy");
			while ((size_t)d < bytes) {
				n = copy_file_range(s, &so, fd, &d,
						    bytes - (size_t)d, 0);
				if (n <= 0)
					die("copy_file_range");
			}
			close(s);
			want = i;
		} else if (!strcmp(mode, "punch")) {
			fd = open(path, O_WRONLY);
			if (fd < 0)
				die(path);
			/* the pattern back first, buffered, then the hole */
			if (pwrite(fd, buf[i], bytes, 0) != (ssize_t)bytes)
				die("pwrite");
			if (fallocate(
				fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				0, (off_t)bytes))
				die("fallocate");
			want = -1;
		} else if (flags & O_ACCMODE) {
			fd = open(path, flags);
			if (fd < 0)
				die(path);
			if (strstr(mode, "aio"))
				write_aio(fd, buf[i]);
			else if (pwrite(fd, buf[i], bytes, 0) != (ssize_t)bytes)
				die("direct pwrite");
			want = i;
		} else {
			fprintf(stderr, "dio_cycle: unknown MODE '%s'\n", mode);
			return 2;
		}
		close(fd);

		/* the held descriptor first: a new open may drop the pages */
		check(cmp, read_all(held, cmp), want < 0 ? 0 : pattern(want), l,
		      "a held-open buffered");
		fd = open(path, O_RDONLY);
		if (fd < 0)
			die(path);
		check(cmp, read_all(fd, cmp), want < 0 ? 0 : pattern(want), l,
		      "a buffered");
		close(fd);
		fd = open(path, O_RDONLY | O_DIRECT);
		if (fd < 0)
			die(path);
		check(cmp, read_all(fd, cmp), want < 0 ? 0 : pattern(want), l,
		      "an O_DIRECT");
		close(fd);
	}
	close(held);
	for (int r = 0; r < readers; r++) {
		kill(pids[r], SIGKILL);
		waitpid(pids[r], NULL, 0);
	}
	for (int i = 0; i < 3; i++)
		free(buf[i]);
	free(cmp);
	return 0;
}
