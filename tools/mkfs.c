/*
 * mkfs.c: mkfs.tensorfs, format a device or an image file.
 *
 * Refuses, unless -f, to overwrite a device that holds a tensorfs or
 * another known file system; always refuses one that is in use (a
 * tensorfs mount holds an exclusive lock on its device; a block device
 * mounted by the kernel cannot be opened O_EXCL).  With -s it creates or
 * extends a sparse image file; formatting writes only the superblocks, a
 * first journal block and a small checkpoint, so any size takes
 * milliseconds.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pwd.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format.h"
#include "io.h"
#include "journal.h"
#include "units.h"

static void usage(FILE *f)
{
	fputs(
"Usage: mkfs.tensorfs [-s SIZE] [-f] [-q] [-u USER[:GROUP]] DEVICE\n"
"\n"
"Format DEVICE, an NVMe block device or an image file, as tensorfs.\n"
"\n"
"Options:\n"
"  -s SIZE   size of the file system: creates the image file DEVICE if it\n"
"            does not exist, or extends it, as a sparse file (it takes disk\n"
"            space only as data is written).  Suffixes K, M, G, T (powers\n"
"            of 1024; also KiB, MiB, GiB, TiB) or KB, MB, GB, TB (powers\n"
"            of 1000).  Default: the whole device or image.\n"
"  -f        overwrite an existing tensorfs or other file system\n"
"  -q        quiet: print nothing on success\n"
"  -u USER[:GROUP]  owner of the root directory (default: the user running\n"
"            mkfs, or the one who ran sudo), so that training jobs can\n"
"            write to the mount without being root\n"
"  -h, --help  print this help and exit\n"
"\n"
"The minimum size is 64 MiB.  1/64 of the device, at least 12 MiB and at\n"
"most 32 GiB, holds the metadata (journal and checkpoints).\n"
"\n"
"Exit status: 0 formatted, 1 refused or failed (the message says why),\n"
"2 usage error.\n"
"\n"
"Examples:\n"
"  mkfs.tensorfs -s 100G /var/lib/tensorfs.img\n"
"  mkfs.tensorfs /dev/nvme0n1\n", f);
}

static int owner(const char *spec, uid_t *uid, gid_t *gid)
{
	char buf[256], *colon, *end;
	struct passwd *pw;
	struct group *gr;

	snprintf(buf, sizeof(buf), "%s", spec);
	colon = strchr(buf, ':');
	if (colon)
		*colon++ = '\0';
	pw = getpwnam(buf);
	if (pw) {
		*uid = pw->pw_uid;
		*gid = pw->pw_gid;
	} else {
		errno = 0;
		*uid = (uid_t)strtoul(buf, &end, 10);
		if (!*buf || *end || errno)
			return -1;
	}
	if (colon && *colon) {
		gr = getgrnam(colon);
		if (gr) {
			*gid = gr->gr_gid;
		} else {
			*gid = (gid_t)strtoul(colon, &end, 10);
			if (*end)
				return -1;
		}
	}
	return 0;
}

/* What file system, if any, the first blocks show. */
static const char *signature(struct tfs_dev *d)
{
	uint8_t *b = tfs_io_alloc(2 * TFS_BLOCK_SIZE);
	const char *what = NULL;

	if (!b)
		return NULL;
	if (tfs_dev_size(d) >= 2 * TFS_BLOCK_SIZE &&
	    !tfs_dev_read(d, b, 2 * TFS_BLOCK_SIZE, 0)) {
		if (!memcmp(b, TFS_MAGIC, 8) ||
		    !memcmp(b + TFS_BLOCK_SIZE, TFS_MAGIC, 8))
			what = "a tensorfs file system";
		else if (b[1080] == 0x53 && b[1081] == 0xef)
			what = "an ext2/3/4 file system";
		else if (!memcmp(b, "XFSB", 4))
			what = "an XFS file system";
	}
	tfs_io_free(b);
	return what;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t size = 0;
	int force = 0, quiet = 0, c, rc, created = 0;
	uid_t uid = getuid();
	gid_t gid = getgid();
	const char *path, *what, *s;
	struct tfs_dev *d = NULL;
	struct tfs_super lay;
	struct stat st;
	char h1[32], h2[32], h3[32];

	if (uid == 0 && (s = getenv("SUDO_UID")) && *s) {
		uid = (uid_t)strtoul(s, NULL, 10);
		if ((s = getenv("SUDO_GID")) && *s)
			gid = (gid_t)strtoul(s, NULL, 10);
	}
	while ((c = getopt_long(argc, argv, "s:fqu:h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			rc = tfs_parse_size(optarg, &size, NULL);
			if (rc || size == 0) {
				fprintf(stderr, "mkfs.tensorfs: invalid size "
					"'%s'; give bytes or a size like "
					"100G\n", optarg);
				return 2;
			}
			break;
		case 'f':
			force = 1;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'u':
			if (owner(optarg, &uid, &gid)) {
				fprintf(stderr, "mkfs.tensorfs: unknown owner "
					"'%s'; give USER[:GROUP] or UID[:GID]"
					"\n", optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fputs("Try 'mkfs.tensorfs --help' for more "
			      "information.\n", stderr);
			return 2;
		}
	}
	if (argc - optind != 1) {
		fprintf(stderr, "mkfs.tensorfs: %s\nUsage: mkfs.tensorfs [-s "
			"SIZE] [-f] [-q] [-u USER[:GROUP]] DEVICE\n"
			"Try 'mkfs.tensorfs --help' for more information.\n",
			argc == optind ? "missing DEVICE" : "too many arguments");
		return 2;
	}
	path = argv[optind];
	size &= ~(uint64_t)(TFS_BLOCK_SIZE - 1);
	if (size && size < TFS_MIN_DEVICE_BYTES) {
		fprintf(stderr, "mkfs.tensorfs: %s: %s is too small; the "
			"minimum is 64 MiB\n", path,
			tfs_format_size(size, h1, sizeof(h1)));
		return 1;
	}
	if (stat(path, &st) < 0) {
		int fd;

		if (errno != ENOENT || !size) {
			fprintf(stderr, "mkfs.tensorfs: %s: %s%s\n", path,
				strerror(errno),
				errno == ENOENT ? "; give -s SIZE to create an "
						  "image file" : "");
			return 1;
		}
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
		if (fd < 0) {
			fprintf(stderr, "mkfs.tensorfs: cannot create '%s': "
				"%s\n", path, strerror(errno));
			return 1;
		}
		close(fd);
		created = 1;
	} else if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
		fprintf(stderr, "mkfs.tensorfs: '%s' is neither a block "
			"device nor a regular file\n", path);
		return 1;
	}
	rc = tfs_dev_open(path, 0, &d);
	if (rc) {
		if (rc == -EBUSY)
			fprintf(stderr, "mkfs.tensorfs: '%s' is in use (mounted"
				" by tensorfs or another file system); "
				"unmount it first\n", path);
		else
			fprintf(stderr, "mkfs.tensorfs: cannot open '%s': %s\n",
				path, strerror(-rc));
		goto fail;
	}
	if (!created && !force && (what = signature(d))) {
		fprintf(stderr, "mkfs.tensorfs: '%s' already contains %s; "
			"use -f to overwrite it (everything on it is lost)\n",
			path, what);
		goto fail;
	}
	if (size) {
		if (tfs_dev_is_blockdev(d)) {
			if (size > tfs_dev_size(d)) {
				fprintf(stderr, "mkfs.tensorfs: -s %s is larger"
					" than the device '%s' (%s)\n",
					tfs_format_size(size, h1, sizeof(h1)),
					path, tfs_format_size(tfs_dev_size(d),
							      h2, sizeof(h2)));
				goto fail;
			}
		} else if (size > tfs_dev_size(d)) {
			rc = tfs_dev_extend(d, size);
			if (rc) {
				fprintf(stderr, "mkfs.tensorfs: cannot extend "
					"'%s' to %s: %s\n", path,
					tfs_format_size(size, h1, sizeof(h1)),
					strerror(-rc));
				goto fail;
			}
		} else if (size < tfs_dev_size(d) && !force) {
			fprintf(stderr, "mkfs.tensorfs: '%s' is %s, larger "
				"than -s %s; use -f to format only the first "
				"%s\n", path,
				tfs_format_size(tfs_dev_size(d), h1, sizeof(h1)),
				tfs_format_size(size, h2, sizeof(h2)),
				tfs_format_size(size, h3, sizeof(h3)));
			goto fail;
		}
	} else {
		size = tfs_dev_size(d);
	}
	if (size < TFS_MIN_DEVICE_BYTES) {
		fprintf(stderr, "mkfs.tensorfs: '%s' is too small (%s); the "
			"minimum is 64 MiB\n", path,
			tfs_format_size(size, h1, sizeof(h1)));
		goto fail;
	}
	/* The file system records its size: with -f and a smaller -s, it
	 * uses only the first 'size' bytes. */
	rc = tfs_journal_format(d, size, uid, gid);
	if (rc) {
		fprintf(stderr, "mkfs.tensorfs: formatting '%s' failed: %s\n",
			path, strerror(-rc));
		goto fail;
	}
	tfs_layout(size / TFS_BLOCK_SIZE, &lay);
	if (!quiet)
		printf("mkfs.tensorfs: formatted %s: %s in all, %s for data, "
		       "%s for metadata\n", path,
		       tfs_format_size(size, h1, sizeof(h1)),
		       tfs_format_size((lay.dev_blocks - lay.data_start) *
					       TFS_BLOCK_SIZE, h2, sizeof(h2)),
		       tfs_format_size(lay.data_start * TFS_BLOCK_SIZE, h3,
				       sizeof(h3)));
	tfs_dev_close(d);
	return 0;
fail:
	tfs_dev_close(d);
	if (created)
		unlink(path);
	return 1;
}
