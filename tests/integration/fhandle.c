/*
 * fhandle.c: file handles, as NFS servers, checkpoint/restore tools and
 * fanotify users take them: name_to_handle_at() of a path, kept in a
 * file, and open_by_handle_at() of it later, maybe after a remount.
 *
 *   fhandle save PATH FILE     write PATH's handle to FILE; prints OK
 *   fhandle open MOUNT FILE    open the handle in FILE through the mount
 *                              MOUNT (O_RDONLY; a directory too); prints
 *                              "OK INO" with the opened inode's number,
 *                              or the errno's name (ESTALE ...)
 *
 * open_by_handle_at() needs CAP_DAC_READ_SEARCH (root).  Exit status 0
 * when the call was made, whatever it returned; 2 on a usage error or
 * when FILE cannot be read or written.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *errname(int e)
{
	const char *n = strerrorname_np(e);

	return n ? n : "EUNKNOWN";
}

static int save(const char *path, const char *file)
{
	struct file_handle *h = malloc(sizeof(*h) + MAX_HANDLE_SZ);
	int mount_id;
	FILE *f;

	if (!h)
		return 2;
	h->handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(AT_FDCWD, path, h, &mount_id, 0) < 0) {
		printf("%s\n", errname(errno));
		free(h);
		return 0;
	}
	f = fopen(file, "wb");
	if (!f || fwrite(h, sizeof(*h) + h->handle_bytes, 1, f) != 1 ||
	    fclose(f)) {
		perror(file);
		free(h);
		return 2;
	}
	free(h);
	printf("OK\n");
	return 0;
}

static int open_handle(const char *mnt, const char *file)
{
	struct file_handle *h = calloc(1, sizeof(*h) + MAX_HANDLE_SZ);
	FILE *f = fopen(file, "rb");
	struct stat st;
	int mfd, fd;

	if (!h || !f || fread(h, sizeof(*h), 1, f) != 1 ||
	    h->handle_bytes > MAX_HANDLE_SZ ||
	    fread(h->f_handle, h->handle_bytes, 1, f) != 1) {
		fprintf(stderr, "fhandle: cannot read a handle from %s\n",
			file);
		return 2;
	}
	fclose(f);
	mfd = open(mnt, O_RDONLY | O_DIRECTORY);
	if (mfd < 0) {
		perror(mnt);
		return 2;
	}
	fd = open_by_handle_at(mfd, h, O_RDONLY);
	if (fd < 0 || fstat(fd, &st) < 0)
		printf("%s\n", errname(errno));
	else
		printf("OK %llu\n", (unsigned long long)st.st_ino);
	if (fd >= 0)
		close(fd);
	close(mfd);
	free(h);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "save"))
		return save(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "open"))
		return open_handle(argv[2], argv[3]);
	fprintf(stderr, "usage: fhandle save PATH FILE | "
			"fhandle open MOUNT FILE\n");
	return 2;
}
