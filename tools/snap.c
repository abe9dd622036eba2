/*
 * snap.c: tensorfs-snap, a snapshot of a tree of a tensorfs mount, as of
 * one moment, that shares every file's blocks (lib/snap.c does it; this
 * asks the daemon through the TFS_IOC_SNAPSHOT ioctl on the mount's
 * /.tensorfs).
 *
 * The tool finds the mount SRC lives on (the highest directory above it
 * on the same device that has a .tensorfs directory), checks that DST's
 * parent is on that mount and DST is free, and sends the inode numbers
 * of SRC and of DST's parent with DST's name.  Everything else (the
 * walk, the lock that makes it one moment, the clones) is the daemon's.
 *
 * Exit status: 0 made, 1 not made (or made in part: the message says
 * so), 2 usage error.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "closeout.h"
#include "mountroot.h"
#include "tfs_ioctl.h"
#include "units.h"

#define EXIT_FAIL  1
#define EXIT_USAGE 2

static const char *prog = "tensorfs-snap";

/* clang-format off: the text as --help prints it */
static void usage(FILE *f)
{
	fprintf(
	    f,
	    "Usage: %s [OPTIONS] SRC DST\n"
	    "\n"
	    "Make DST a snapshot of SRC, a directory (or a file) of a tensorfs\n"
	    "mount: the whole tree again, as it was at one moment, with every\n"
	    "file sharing its blocks with the original (a clone), so it takes no\n"
	    "space and no time beyond its metadata.  A file of either tree that is\n"
	    "written afterwards gets blocks of its own where it is written; the\n"
	    "other tree never sees the change.  Writers of SRC's files wait while\n"
	    "the snapshot is made (a time that grows with the number of files,\n"
	    "not their size).  Directories,\n"
	    "symlinks and special files are made anew with the same mode, owner,\n"
	    "times and extended attributes; hard links inside SRC become files of\n"
	    "their own.\n"
	    "\n"
	    "DST must not exist; its parent directory must be on the same mount,\n"
	    "outside SRC.  Only root or the user who mounted the file system may\n"
	    "make snapshots.  The file system must be of format version 4 (what\n"
	    "mkfs.tensorfs makes since blocks can be shared).\n"
	    "\n"
	    "Options:\n"
	    "  -q, --quiet    print nothing when the snapshot is made\n"
	    "  -h, --help     print this help and exit\n"
	    "  -V, --version  print the version and exit\n"
	    "\n"
	    "To keep the last N checkpoints of DeepSpeed's swap tree:\n"
	    "  tensorfs-snap /local_nvme/zero_stage_3 /local_nvme/ckpt.$STEP\n"
	    "and remove the oldest (rm -r); each costs the blocks written since.\n"
	    "\n"
	    "Exit status: 0 made, 1 not made (or made in part: the message says\n"
	    "which), 2 usage error.\n",
	    prog);
}
/* clang-format on */

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static const char *why(int e)
{
	switch (e) {
	case EOPNOTSUPP:
		return "this file system's format cannot share blocks (a "
		       "format before 4, made by an older mkfs.tensorfs): "
		       "unmount it and upgrade it in place with "
		       "tensorfs-fsck --upgrade DEVICE, or copy the tree "
		       "with cp -r instead";
	case EPERM:
	case EACCES:
		return "only root or the user who mounted it may make "
		       "snapshots";
	case ENOTTY:
		return "its daemon makes no snapshots (an older tensorfs?)";
	case EBUSY:
		return "files kept appearing or going in SRC while it was "
		       "taken; try again";
	case EINVAL:
		return "DST lies inside SRC, or a name is invalid";
	case ENOSPC:
		return "no space left for the new tree's metadata";
	case EROFS:
		return "the file system is read-only or in its error state";
	default:
		return strerror(e);
	}
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	char root[PATH_MAX], state[PATH_MAX + 16], parent[PATH_MAX];
	char name_buf[PATH_MAX], shared[32];
	struct tfs_ioc_snap a;
	struct stat src, dir;
	struct timespec t0, t1;
	const char *name;
	int c, quiet = 0, fd, rc;

	tfs_closeout(prog, EXIT_FAIL);
	while ((c = getopt_long(argc, argv, "qhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'q':
			quiet = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("%s (tensorfs) %s\n", prog, TFS_VERSION_STRING);
			return 0;
		default:
			fprintf(stderr, "Try '%s --help' for more.\n", prog);
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 2) {
		fail("expected SRC and DST, got %d argument%s; see --help",
		     argc - optind, argc - optind == 1 ? "" : "s");
		return EXIT_USAGE;
	}
	if (lstat(argv[optind], &src) < 0) {
		fail("%s: %s", argv[optind], strerror(errno));
		return EXIT_FAIL;
	}
	if (lstat(argv[optind + 1], &dir) == 0) {
		fail("%s: exists; choose a new name", argv[optind + 1]);
		return EXIT_FAIL;
	}
	if (errno != ENOENT) {
		fail("%s: %s", argv[optind + 1], strerror(errno));
		return EXIT_FAIL;
	}
	snprintf(parent, sizeof(parent), "%s", argv[optind + 1]);
	snprintf(name_buf, sizeof(name_buf), "%s", argv[optind + 1]);
	name = basename(name_buf);
	if (!strcmp(name, ".") || !strcmp(name, "..") || !strcmp(name, "/") ||
	    strlen(name) > 255) {
		fail("%s: not a name a snapshot can take", argv[optind + 1]);
		return EXIT_USAGE;
	}
	if (stat(dirname(parent), &dir) < 0 || !S_ISDIR(dir.st_mode)) {
		fail("%s: its parent directory %s", argv[optind + 1],
		     errno ? strerror(errno) : "is not a directory");
		return EXIT_FAIL;
	}
	if (tfs_mount_root(argv[optind], root, sizeof(root))) {
		fail("%s: not on a tensorfs mount (no .tensorfs above it)",
		     argv[optind]);
		return EXIT_FAIL;
	}
	if (dir.st_dev != src.st_dev) {
		fail("%s and %s are not on the same mount: a snapshot stays "
		     "on the mount of its source",
		     argv[optind], argv[optind + 1]);
		return EXIT_FAIL;
	}
	snprintf(state, sizeof(state), "%s/.tensorfs", root);
	fd = open(state, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		fail("%s: %s", state, strerror(errno));
		return EXIT_FAIL;
	}
	memset(&a, 0, sizeof(a));
	a.src = src.st_ino;
	a.dst_parent = dir.st_ino;
	snprintf(a.name, sizeof(a.name), "%s", name);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = ioctl(fd, TFS_IOC_SNAPSHOT, &a);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	close(fd);
	if (rc < 0) {
		int e = errno;

		fail("snapshot of %s as %s: %s", argv[optind], argv[optind + 1],
		     why(e));
		if (lstat(argv[optind + 1], &dir) == 0)
			fprintf(stderr,
				"%s: %s was made in part; remove it (rm -r)\n",
				prog, argv[optind + 1]);
		return EXIT_FAIL;
	}
	if (!quiet)
		printf("%s -> %s: %llu directories, %llu files, %llu others, "
		       "%s shared, in %.3f s\n",
		       argv[optind], argv[optind + 1],
		       (unsigned long long)a.dirs, (unsigned long long)a.files,
		       (unsigned long long)a.others,
		       tfs_format_size(a.bytes, shared, sizeof(shared)),
		       (double)(t1.tv_sec - t0.tv_sec) +
			   (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	return 0;
}
